"""The catalogue's mechanisms with a planted leak: the power check next to every pass.

A pass says only that the audit saw no violation at its budget. To tell a reader whether a leak of
a known size would have been seen, each target here is the library's own mechanism, configured as
its catalogue row, with its **noise scaled by** :data:`NOISE_FACTOR` = 0.7 (the library is given
``epsilon / 0.7``; for the Laplace, Gaussian (classic calibration), geometric, staircase and
exponential-mechanism families the noise scale is proportional to ``1 / epsilon``, so the planted
mechanism is ``epsilon / 0.7 = 1.43``-DP at most and more than ``epsilon``-DP at the row's claim
(OpenDP rows: the calibrated scale times 0.7; Uniform: its window times 0.7, i.e. ``delta / 0.7``).
``benchmarks/library_audit.py`` audits it at the same budget and against the same claim as the
row: a *caught* planted leak shows the budget has power for a leak of that size; a missed one says
the pass is weak evidence.

Targets are named as in their catalogue module (``planted:laplace`` is
``diffprivlib_mechanisms:laplace`` with the planted leak; tools get a ``tools_`` prefix, OpenDP
rows an ``opendp_`` prefix, PipelineDP rows ``pipelinedp_``, PyDP rows ``pydp_``, the record's diffprivlib
models ``record_``, Opacus rows ``opacus_`` (the optimizer's noise multiplier, Opacus's own calibration,
times 0.7)): :data:`TARGETS` maps the
catalogue target string to the planted one.

Two more planting routes keep the library's own calibration and change only its budget:

* OpenDP rows whose scale the catalogue finds with ``dp.binary_search_chain`` (a noise *scale*:
  Laplace, geometric, Gaussian, exponential/Gumbel noisy max, private quantile):
  :func:`planted_opendp_search` runs the catalogue's own builder with that search replaced by
  OpenDP's ``binary_search_param`` and the chain built at ``scale * NOISE_FACTOR``.
* PipelineDP rows: :func:`planted_pipelinedp` runs the row's pipeline with PipelineDP's
  ``NaiveBudgetAccountant`` given ``total_epsilon / NOISE_FACTOR`` (every mechanism's share of
  epsilon grows by 1 / 0.7, so each Laplace scale is times 0.7; the Gaussian's sigma shrinks by
  about as much; the selection thresholds move with epsilon).

Rows left without a twin, and why, are in :data:`NO_TWIN`.
"""

from __future__ import annotations

import contextlib
import copy

from . import diffprivlib_mechanisms as _dpl
from . import diffprivlib_tools as _tools
from . import diffprivlib_record as _record
from . import opendp_measurements as _odp
from . import pipelinedp_metrics as _pdp
from . import pydp_algorithms as _pydp

__all__ = ["NOISE_FACTOR", "TARGETS", "NO_TWIN", "planted_diffprivlib", "planted_opendp", "planted_opendp_search",
           "planted_pipelinedp"]

NOISE_FACTOR = 0.7
"""The planted leak: the noise scale is multiplied by this factor."""

_CATALOGUE = "dpaudit.mechanisms.catalogue"


def planted_diffprivlib(mech, name: str):
    """A copy of a diffprivlib catalogue target whose calls get ``epsilon / NOISE_FACTOR``.

    Parameters
    ----------
    mech : DiffprivlibMechanism
        A target of :mod:`.diffprivlib_mechanisms` or :mod:`.diffprivlib_tools`.
    name : str
        Name of the planted target (reports).

    Returns
    -------
    DiffprivlibMechanism
        Same function, relation and witness pairs; ``kwargs`` with ``epsilon`` (or, for Uniform,
        ``delta``) divided by :data:`NOISE_FACTOR`.
    """
    out = copy.copy(mech)
    if mech.func is _dpl._f_uniform:
        out.kwargs = dict(mech.kwargs, delta=_dpl.UNIFORM_DELTA / NOISE_FACTOR)
    else:
        out.kwargs = dict(mech.kwargs, epsilon=_dpl.EPSILON / NOISE_FACTOR)
    out.name = name
    return out


def planted_opendp(mech, name: str, build_chain, d_out):
    """An OpenDP target built as ``build_chain(scale * NOISE_FACTOR)``, ``scale`` OpenDP's calibration.

    Parameters
    ----------
    mech : OpenDPMechanism
        The catalogue target (its relation, pairs and hooks are kept).
    name : str
        Name of the planted target.
    build_chain : callable
        ``scale -> Measurement``, the chain the catalogue's builder searches over.
    d_out : float or tuple
        The budget the catalogue's scale is calibrated to.

    Returns
    -------
    OpenDPMechanism
        Built lazily on first use (OpenDP is imported then).
    """
    def build():
        dp = _odp._dp()
        scale = dp.binary_search_param(build_chain, d_in=1, d_out=d_out)
        return build_chain(scale * NOISE_FACTOR)

    out = type(mech)(build, name=name, preprocess=mech.preprocess, postprocess=mech.postprocess, d_in=mech.d_in)
    out.neighbouring = mech.neighbouring
    out.witness_pairs = mech.witness_pairs
    return out


def _sum_chain(noise: str):
    def chain(s):
        dp = _odp._dp()
        meas = _odp._floats(dp) >> dp.t.then_clamp((0.0, 1.0)) >> dp.t.then_sum() >> getattr(dp.m, f"then_{noise}")(s)
        return _odp._approx(dp, meas) if noise == "gaussian" else meas
    return chain


def _count_chain(noise: str):
    def chain(s):
        dp = _odp._dp()
        meas = _odp._floats(dp) >> dp.t.then_count() >> getattr(dp.m, f"then_{noise}")(s)
        return _odp._approx(dp, meas) if noise == "gaussian" else meas
    return chain


@contextlib.contextmanager
def _scaled_search(dp):
    """Within the block, ``dp.binary_search_chain(make_chain, d_in, d_out, ...)`` returns
    ``make_chain(param * NOISE_FACTOR)``, ``param`` OpenDP's own ``binary_search_param`` (the
    attribute of ``opendp.prelude`` is restored on exit, also on error)."""
    original = dp.binary_search_chain

    def scaled(make_chain, d_in, d_out, *args, **kwargs):
        return make_chain(dp.binary_search_param(make_chain, d_in, d_out, *args, **kwargs) * NOISE_FACTOR)

    dp.binary_search_chain = scaled
    try:
        yield
    finally:
        dp.binary_search_chain = original


def planted_opendp_search(mech, name: str):
    """An OpenDP catalogue target rebuilt with its searched noise scale times :data:`NOISE_FACTOR`.

    Parameters
    ----------
    mech : OpenDPMechanism
        A target of :mod:`.opendp_measurements` built lazily by a builder that calls
        ``dp.binary_search_chain`` once, over a noise scale (larger = more noise).
    name : str
        Name of the planted target.

    Returns
    -------
    OpenDPMechanism
        Same pre/post-processing, ``d_in``, relation, pairs and accepted inputs.

    Raises
    ------
    ValueError
        If ``mech`` has no builder (it wraps a ready measurement).
    """
    builder = getattr(mech, "_builder", None)
    if builder is None:
        raise ValueError(f"{mech.name!r} has no builder to replant")

    def build():
        dp = _odp._dp()
        with _scaled_search(dp):
            return builder()

    build.__name__ = build.__qualname__ = name
    out = type(mech)(build, name=name, preprocess=mech.preprocess, postprocess=mech.postprocess, d_in=mech.d_in)
    for attr in ("neighbouring", "witness_pairs", "accepts"):
        if hasattr(mech, attr):
            setattr(out, attr, getattr(mech, attr))
    return out


def planted_pipelinedp(mech, name: str):
    """A PipelineDP catalogue target whose pipeline's ``NaiveBudgetAccountant`` gets
    ``total_epsilon / NOISE_FACTOR``.

    Parameters
    ----------
    mech : PipelineDPMechanism
        A target of :mod:`.pipelinedp_metrics` (its pipeline builds ``pipeline_dp.NaiveBudgetAccountant``).
    name : str
        Name of the planted target.

    Returns
    -------
    PipelineDPMechanism
        A copy whose pipeline runs with ``pipeline_dp.NaiveBudgetAccountant`` replaced, for the
        duration of the call, by a subclass that divides ``total_epsilon`` by :data:`NOISE_FACTOR`
        (restored on exit, also on error; one output is one call, so nothing else runs meanwhile
        in the audit's process).
    """
    inner = mech.pipeline

    def pipeline(rows):
        from dpaudit.mechanisms.adapters.pipelinedp import import_pipeline_dp  # noqa: PLC0415

        pdp = import_pipeline_dp()
        original = pdp.NaiveBudgetAccountant

        class _Planted(original):
            def __init__(self, total_epsilon, *args, **kwargs):
                super().__init__(total_epsilon / NOISE_FACTOR, *args, **kwargs)

        pdp.NaiveBudgetAccountant = _Planted
        try:
            return inner(rows)
        finally:
            pdp.NaiveBudgetAccountant = original

    pipeline.__name__ = pipeline.__qualname__ = name
    out = copy.copy(mech)
    out.pipeline = pipeline
    out.name = name
    return out


TARGETS: dict = {}
"""Catalogue target string -> planted target string (this module's attributes)."""

for _name, _mech in _dpl.TARGETS.items():
    globals()[_name] = planted_diffprivlib(_mech, f"planted:{_name}")
    TARGETS[f"{_CATALOGUE}.diffprivlib_mechanisms:{_name}"] = f"{_CATALOGUE}.planted:{_name}"
for _name, _mech in _tools.TARGETS.items():
    globals()[f"tools_{_name}"] = planted_diffprivlib(_mech, f"planted:tools_{_name}")
    TARGETS[f"{_CATALOGUE}.diffprivlib_tools:{_name}"] = f"{_CATALOGUE}.planted:tools_{_name}"
for _name, _mech in _record.TARGETS.items():  # the published record's diffprivlib models (epsilon / 0.7)
    globals()[f"record_{_name}"] = planted_diffprivlib(_mech, f"planted:record_{_name}")
    TARGETS[f"{_CATALOGUE}.diffprivlib_record:{_name}"] = f"{_CATALOGUE}.planted:record_{_name}"
for _name, _chain, _d_out in (
        ("laplace_sum", _sum_chain("laplace"), _odp.EPSILON),
        ("gaussian_sum", _sum_chain("gaussian"), (_odp.EPSILON, _odp.DELTA)),
        ("laplace_count", _count_chain("laplace"), _odp.EPSILON),
        ("geometric", _count_chain("geometric"), _odp.EPSILON),
        ("gaussian_count", _count_chain("gaussian"), (_odp.EPSILON, _odp.DELTA))):
    globals()[f"opendp_{_name}"] = planted_opendp(_odp.TARGETS[_name], f"planted:opendp_{_name}", _chain, _d_out)
    TARGETS[f"{_CATALOGUE}.opendp_measurements:{_name}"] = f"{_CATALOGUE}.planted:opendp_{_name}"
_OPENDP_SEARCHED = ("laplace_mean", "geometric_bounded", "noise_sum", "gaussian_threshold", "noisy_max",
                    "noisy_max_zcdp", "noisy_top_k", "report_noisy_max_gumbel", "private_quantile")
"""OpenDP targets whose builder searches a noise scale with ``binary_search_chain``."""
for _name in _OPENDP_SEARCHED:
    globals()[f"opendp_{_name}"] = planted_opendp_search(_odp.TARGETS[_name], f"planted:opendp_{_name}")
    TARGETS[f"{_CATALOGUE}.opendp_measurements:{_name}"] = f"{_CATALOGUE}.planted:opendp_{_name}"
for _name, _mech in _pdp.TARGETS.items():
    if _name in ("vector_sum_public", "count_bounds_enforced"):
        continue  # not a pass: one raises on every call, the other is a misuse row
    globals()[f"pipelinedp_{_name}"] = planted_pipelinedp(_mech, f"planted:pipelinedp_{_name}")
    TARGETS[f"{_CATALOGUE}.pipelinedp_metrics:{_name}"] = f"{_CATALOGUE}.planted:pipelinedp_{_name}"
for _name, _mech in _pydp.TARGETS.items():  # PyDP: the algorithm built with epsilon / 0.7 (Laplace scale x 0.7)
    _twin = copy.copy(_mech)
    _twin.kwargs = dict(_mech.kwargs, epsilon=_pydp.EPSILON / NOISE_FACTOR)
    _twin.name = f"planted:pydp_{_name}"
    globals()[f"pydp_{_name}"] = _twin
    TARGETS[f"{_CATALOGUE}.pydp_algorithms:{_name}"] = f"{_CATALOGUE}.planted:pydp_{_name}"
del _twin

NO_TWIN = {
    f"{_CATALOGUE}.opendp_measurements:{k}": why for k, why in (
        ("laplace_threshold", "the catalogue searches the threshold at a fixed scale, not a noise scale"),
        ("noise_threshold", "the catalogue searches the threshold at a fixed scale, not a noise scale"),
        ("alp_queryable", "the ALP sketch's scale is set from total_limit and value_limit, not searched"),
        ("canonical_noise", "Tulap noise is built for a target (epsilon, delta), with no noise scale to shrink"),
        ("randomized_response", "the searched parameter is a probability, not a noise scale"),
        ("randomized_response_bool", "the searched parameter is a probability, not a noise scale"),
        ("randomized_response_bitvec", "the searched parameter is a flip rate, not a noise scale"),
    )
}
"""Catalogue targets with no planted twin, and why (shown in the power column)."""

# Opacus rows (opacus_optimizers): the optimizer with Opacus's calibrated noise multiplier x 0.7
from . import opacus_optimizers as _opacus  # noqa: E402

for _name, _mech in _opacus.TARGETS.items():
    globals()[f"opacus_{_name}"] = _opacus.planted(_mech, f"planted:opacus_{_name}", NOISE_FACTOR)
    TARGETS[f"{_CATALOGUE}.opacus_optimizers:{_name}"] = f"{_CATALOGUE}.planted:opacus_{_name}"
del _name, _mech, _chain, _d_out

# diffprivlib models (issue 36 item 6): each fitted with epsilon / 0.7 (every Laplace / geometric scale
# inside the fit times 0.7), named ``models_<name>``.
from . import diffprivlib_models as _models  # noqa: E402

for _name, _mech in _models.TARGETS.items():
    globals()[f"models_{_name}"] = planted_diffprivlib(_mech, f"planted:models_{_name}")
    TARGETS[f"{_CATALOGUE}.diffprivlib_models:{_name}"] = f"{_CATALOGUE}.planted:models_{_name}"
del _name, _mech

# PipelineDP add_dp_noise (its accountant given total_epsilon / 0.7, as planted_pipelinedp) and OpenDP's Polars
# query (privacy_loss epsilon / 0.7): issue 36 item 6.
from . import opendp_polars as _polars  # noqa: E402
from . import pipelinedp_noise as _pdn  # noqa: E402

for _name, _mech in _pdn.TARGETS.items():
    if _name.endswith("_pld"):
        continue  # the PLD accountant is not NaiveBudgetAccountant: no twin written
    globals()[f"pipelinedp_{_name}"] = planted_pipelinedp(_mech, f"planted:pipelinedp_{_name}")
    TARGETS[f"{_CATALOGUE}.pipelinedp_noise:{_name}"] = f"{_CATALOGUE}.planted:pipelinedp_{_name}"
TARGETS[f"{_CATALOGUE}.opendp_polars:sum_len"] = f"{_CATALOGUE}.opendp_polars:planted_sum_len"
del _name, _mech

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
rows an ``opendp_`` prefix): :data:`TARGETS` maps the catalogue target string to the planted one.
"""

from __future__ import annotations

import copy

from . import diffprivlib_mechanisms as _dpl
from . import diffprivlib_tools as _tools
from . import opendp_measurements as _odp

__all__ = ["NOISE_FACTOR", "TARGETS", "planted_diffprivlib", "planted_opendp"]

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


TARGETS: dict = {}
"""Catalogue target string -> planted target string (this module's attributes)."""

for _name, _mech in _dpl.TARGETS.items():
    globals()[_name] = planted_diffprivlib(_mech, f"planted:{_name}")
    TARGETS[f"{_CATALOGUE}.diffprivlib_mechanisms:{_name}"] = f"{_CATALOGUE}.planted:{_name}"
for _name, _mech in _tools.TARGETS.items():
    globals()[f"tools_{_name}"] = planted_diffprivlib(_mech, f"planted:tools_{_name}")
    TARGETS[f"{_CATALOGUE}.diffprivlib_tools:{_name}"] = f"{_CATALOGUE}.planted:tools_{_name}"
for _name, _chain, _d_out in (
        ("laplace_sum", _sum_chain("laplace"), _odp.EPSILON),
        ("gaussian_sum", _sum_chain("gaussian"), (_odp.EPSILON, _odp.DELTA)),
        ("laplace_count", _count_chain("laplace"), _odp.EPSILON),
        ("geometric", _count_chain("geometric"), _odp.EPSILON),
        ("gaussian_count", _count_chain("gaussian"), (_odp.EPSILON, _odp.DELTA))):
    globals()[f"opendp_{_name}"] = planted_opendp(_odp.TARGETS[_name], f"planted:opendp_{_name}", _chain, _d_out)
    TARGETS[f"{_CATALOGUE}.opendp_measurements:{_name}"] = f"{_CATALOGUE}.planted:opendp_{_name}"
del _name, _mech, _chain, _d_out

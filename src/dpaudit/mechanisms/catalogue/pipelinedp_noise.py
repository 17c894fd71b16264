"""PipelineDP's ``DPEngine.add_dp_noise`` (noise on pre-aggregated values) and its PLD accountant's
output, ready to audit: the PipelineDP ``add_dp_noise`` rows of ``benchmarks/library_audit.py``.

``DPEngine.add_dp_noise(col, AddDPNoiseParams(...))`` (PipelineDP 0.3.1, pipeline_dp/dp_engine.py)
adds Laplace or Gaussian noise to a collection of ``(partition_key, value)`` pairs the caller has
already aggregated; its documentation says it "does not enforce the sensitivity by contribution
bounding and relies on the caller to ensure the provided data satisfies the provided bound". So the
target is the caller's pre-aggregation done as documented, then the library call:

* one record = one privacy unit ``(p, v)``: one contribution, partition ``p`` (rounded to 0, 1 or 2)
  and value ``v`` in [0, 1] (the caller clips with ``np.clip(v, 0, 1)``, which keeps NaN);
* the caller's query: the sum of the clipped values per partition, every partition of
  :data:`PARTITIONS` present (public keys), so one unit moves one partition by at most 1:
  ``l0_sensitivity=1``, ``linf_sensitivity=1``;
* ``add_dp_noise`` with a fresh accountant of total ``epsilon = 1`` (``delta = 1e-5`` for the
  Gaussian), ``compute_budgets()``; the release is the three noisy values in partition order.

The relation is documented (``AddDPNoiseParams``, aggregate_params.py): "linf_sensitivity: the
maximum difference of values in one partition which can achieved by adding or removing one privacy
unit from the dataset": add/remove of a privacy unit.

Targets: ``add_dp_noise_laplace``, ``add_dp_noise_gaussian`` (``NaiveBudgetAccountant``) and
``add_dp_noise_gaussian_pld``, ``add_dp_noise_laplace_pld`` (``PLDBudgetAccountant(total_epsilon=1,
total_delta=1e-5)``: the PLD accountant's output is the noise it calibrates, so auditing the release
audits it; its docstring says "This class is experimental. It is not yet compatible with DPEngine",
yet ``add_dp_noise`` runs with it). The PLD targets have no row in the table: each release runs the
PLD search in ``compute_budgets`` (1 s for Laplace, 3.6-4.6 s for Gaussian, measured), too slow for a
black-box budget; the table checks the accountant's noise analytically instead. PipelineDP draws its
noise in PyDP, which cannot be seeded.
"""

from __future__ import annotations

import numpy as np

from ...datasets import AcceptedInputs, AddRemove, Domain
from ..adapters.pipelinedp import PipelineDPMechanism, import_pipeline_dp
from ._hints import with_hints
from .pipelinedp_metrics import PARTITIONS, unit_contributions

__all__ = ["EPSILON", "DELTA", "DOMAIN", "TARGETS", "add_dp_noise", "add_dp_noise_laplace", "add_dp_noise_gaussian",
           "add_dp_noise_laplace_pld", "add_dp_noise_gaussian_pld"]

EPSILON = 1.0
"""Total epsilon of every accountant and the claimed epsilon (nats)."""

DELTA = 1e-5
"""Total delta of the Gaussian targets (and of the PLD accountant of the Laplace one)."""

DOMAIN = Domain((0.0, 0.0), (2.0, 1.0))
"""One record = one unit ``(p, v)``: partition in [0, 2] (rounded), value in [0, 1]."""


def add_dp_noise(rows: list, *, noise: str = "laplace", accountant: str = "naive", epsilon: float = EPSILON,
                 delta: float = 0.0) -> list:
    """The caller's per-partition sum of clipped values, then one ``DPEngine.add_dp_noise``.

    Parameters
    ----------
    rows : list of UnitRow
        One row per unit (``unit_contributions`` of ``(p, v)`` records).
    noise : {"laplace", "gaussian"}
    accountant : {"naive", "pld"}
        ``NaiveBudgetAccountant`` or ``PLDBudgetAccountant`` with total ``(epsilon, delta)``.
    epsilon, delta : float
        The accountant's total budget.

    Returns
    -------
    list of (partition, dict)
        ``(p, {"value": noisy sum})`` for every partition of :data:`PARTITIONS`.

    Raises
    ------
    ValueError
        From PipelineDP (e.g. Gaussian noise with ``delta = 0``), or ``noise``/``accountant`` unknown.

    Source
    ------
    ``pipeline_dp.DPEngine.add_dp_noise``, ``pipeline_dp.aggregate_params.AddDPNoiseParams``,
    ``pipeline_dp.NaiveBudgetAccountant``, ``pipeline_dp.PLDBudgetAccountant`` (PipelineDP 0.3.1).
    """
    if noise not in ("laplace", "gaussian"):
        raise ValueError(f"noise must be 'laplace' or 'gaussian', got {noise!r}")
    if accountant not in ("naive", "pld"):
        raise ValueError(f"accountant must be 'naive' or 'pld', got {accountant!r}")
    pdp = import_pipeline_dp()
    sums = {p: 0.0 for p in PARTITIONS}
    for row in rows:  # the caller bounds each unit's contribution (np.clip keeps NaN)
        sums[row.partition] += float(np.clip(row.value, 0.0, 1.0))
    acc = (pdp.NaiveBudgetAccountant if accountant == "naive" else pdp.PLDBudgetAccountant)(
        total_epsilon=epsilon, total_delta=delta)
    engine = pdp.DPEngine(acc, pdp.LocalBackend())
    params = pdp.aggregate_params.AddDPNoiseParams(noise_kind=getattr(pdp.NoiseKind, noise.upper()),
                                                   l0_sensitivity=1, linf_sensitivity=1.0)
    result = engine.add_dp_noise(list(sums.items()), params)
    acc.compute_budgets()
    return [(key, {"value": float(value)}) for key, value in result]


_PAIRS = (([[0.0, 0.0]], [[0.0, 0.0], [0.0, 1.0]]), ([], [[0.0, 1.0]]), ([[0.0, 1.0]] * 9, [[0.0, 1.0]] * 10))
"""A unit of value 1 added to partition 0 (to one unit of value 0, to nothing, to nine of value 1)."""

ACCEPTS = AcceptedInputs(
    record=lambda v: (0.0, v),
    note="values are Python floats of the caller's pre-aggregation (add_dp_noise checks none: documented); the "
         "adversarial value is one unit's value in partition 0, clipped by the caller with np.clip")
"""The adversarial inputs (:mod:`dpaudit.search.adversarial`)."""


def _target(name: str, noise: str, accountant: str) -> PipelineDPMechanism:
    delta = DELTA if (noise == "gaussian" or accountant == "pld") else 0.0

    def pipeline(rows):
        return add_dp_noise(rows, noise=noise, accountant=accountant, delta=delta)

    pipeline.__name__ = pipeline.__qualname__ = name
    mech = PipelineDPMechanism(pipeline, partitions=PARTITIONS, metrics=("value",), name=f"pipelinedp_noise:{name}",
                               to_rows=unit_contributions)
    return with_hints(mech, AddRemove(DOMAIN, min_size=0, max_size=10), _PAIRS, ACCEPTS)


add_dp_noise_laplace = _target("add_dp_noise_laplace", "laplace", "naive")
"""``add_dp_noise``, Laplace, ``NaiveBudgetAccountant(1, 0)``: claim 1-DP, add/remove of a unit."""
add_dp_noise_gaussian = _target("add_dp_noise_gaussian", "gaussian", "naive")
"""``add_dp_noise``, Gaussian, ``NaiveBudgetAccountant(1, 1e-5)``: claim (1, 1e-5)-DP."""
add_dp_noise_laplace_pld = _target("add_dp_noise_laplace_pld", "laplace", "pld")
"""``add_dp_noise``, Laplace, ``PLDBudgetAccountant(1, 1e-5)``: claim (1, 1e-5)-DP."""
add_dp_noise_gaussian_pld = _target("add_dp_noise_gaussian_pld", "gaussian", "pld")
"""``add_dp_noise``, Gaussian, ``PLDBudgetAccountant(1, 1e-5)``: claim (1, 1e-5)-DP."""

TARGETS = {name: globals()[name] for name in __all__[__all__.index("add_dp_noise_laplace"):]}
"""The targets of this module by name."""

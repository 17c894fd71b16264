"""PipelineDP releases left out of the library table for their cost, ready to audit sequentially (issue 43).

``docs/library_audits.md`` (LEFT_OUT) leaves two PipelineDP 0.3.1 releases out of the table: one
call of each costs far more than the table's budget allows at fixed sample sizes. The sequential
tester (``docs/sequential.md``) stops at the first pair where the evidence suffices, or for
futility, so they are audited here (``benchmarks/library_costly.py``, results in
``benchmarks/results/library_costly.md``):

* :data:`select_partitions_weighted` -- ``DPEngine.select_partitions`` with
  ``PartitionSelectionStrategy.WEIGHTED_GAUSSIAN_THRESHOLDING`` (``DPEngine._select_partitions_weighted_gaussian``:
  each unit's partitions weigh ``1/sqrt(k)``, the weights summed per partition and passed to PyDP's
  Gaussian partition selection), ``max_partitions_contributed = 2``, claim ``(1, 1e-3)``-DP (the
  ``NaiveBudgetAccountant``'s total, all of it to the selection). Output: presence flags of the
  partitions 0, 1, 2. Pairs: ``k`` vs ``k + 1`` units, each with rows in partitions 0 and 1
  (weight ``1/sqrt(2)`` each), ``k`` in 12, 14, 16, where the keep rate leaves 0 (measured in
  LEFT_OUT: 0.1 at 12, 0.21 at 16). 25-170 ms per call.
* :data:`~dpaudit.mechanisms.catalogue.pipelinedp_noise.add_dp_noise_gaussian_pld` -- the PLD
  accountant's output as a black box (``PLDBudgetAccountant(1, 1e-5)`` calibrating
  ``add_dp_noise``'s Gaussian noise; 3.6 s per call, the PLD search in ``compute_budgets``).
  Re-exported here as :data:`add_dp_noise_gaussian_pld`, with :data:`add_dp_noise_gaussian_pld_overspent`,
  its planted twin for power: the same pipeline whose accountant is given ten times the budget
  (total epsilon 10) while the release still claims ``(1, 1e-5)``: a misconfigured budget.
"""

from __future__ import annotations

from ...datasets import AddRemove
from ..adapters.pipelinedp import PipelineDPMechanism
from ._hints import with_hints
from .pipelinedp_metrics import (
    ACCEPTS, CONTRIBUTIONS, DOMAIN, PARTITIONS, SELECTION_DELTA, select_partitions, unit_contributions,
)
from .pipelinedp_noise import ACCEPTS as NOISE_ACCEPTS
from .pipelinedp_noise import DOMAIN as NOISE_DOMAIN
from .pipelinedp_noise import _PAIRS as NOISE_PAIRS
from .pipelinedp_noise import add_dp_noise, add_dp_noise_gaussian_pld

__all__ = ["TARGETS", "add_dp_noise_gaussian_pld", "add_dp_noise_gaussian_pld_overspent", "select_partitions_weighted"]

_IN01 = [0.0, 1.0, 1.0, 1.0] * (CONTRIBUTIONS // 2)
"""One unit: rows of value 1 in partitions 0 and 1 (two each)."""

_WEIGHTED_PAIRS = tuple(([_IN01] * k, [_IN01] * (k + 1)) for k in (12, 14, 16))
"""k vs k + 1 two-partition units, where the weighted selection's keep rate leaves 0."""


def _weighted(rows):
    return select_partitions(rows, strategy="weighted_gaussian_thresholding", max_partitions_contributed=2)


_weighted.__name__ = _weighted.__qualname__ = "select_partitions_weighted"
select_partitions_weighted = with_hints(
    PipelineDPMechanism(_weighted, partitions=PARTITIONS, metrics=(), presence=True,
                        name="pipelinedp_costly:select_partitions_weighted", to_rows=unit_contributions),
    AddRemove(DOMAIN, min_size=1, max_size=20), _WEIGHTED_PAIRS, ACCEPTS)
"""``DPEngine.select_partitions``, weighted Gaussian thresholding, two partitions per unit: presence
flags, claim ``(1, 1e-3)``-DP (the selection's ``SELECTION_DELTA``)."""


def _overspent(rows):
    return add_dp_noise(rows, noise="gaussian", accountant="pld", epsilon=10.0, delta=1e-5)


_overspent.__name__ = _overspent.__qualname__ = "add_dp_noise_gaussian_pld_overspent"
add_dp_noise_gaussian_pld_overspent = with_hints(
    PipelineDPMechanism(_overspent, partitions=PARTITIONS, metrics=("value",),
                        name="pipelinedp_costly:add_dp_noise_gaussian_pld_overspent", to_rows=unit_contributions),
    AddRemove(NOISE_DOMAIN, min_size=0, max_size=10), NOISE_PAIRS, NOISE_ACCEPTS)
"""PLANTED: ``add_dp_noise`` with ``PLDBudgetAccountant(total_epsilon=10, 1e-5)`` released under the
claim ``(1, 1e-5)``-DP (``--epsilon 1 --delta 1e-5``): not (1, 1e-5)-DP."""

TARGETS = {"select_partitions_weighted": select_partitions_weighted,
           "add_dp_noise_gaussian_pld": add_dp_noise_gaussian_pld,
           "add_dp_noise_gaussian_pld_overspent": add_dp_noise_gaussian_pld_overspent}
"""The targets of this module by name, and the claim each is audited against is (epsilon, delta):
``(1, SELECTION_DELTA)`` for the selection, ``(1, 1e-5)`` for the noise."""
CLAIMS = {"select_partitions_weighted": (1.0, SELECTION_DELTA), "add_dp_noise_gaussian_pld": (1.0, 1e-5),
          "add_dp_noise_gaussian_pld_overspent": (1.0, 1e-5)}

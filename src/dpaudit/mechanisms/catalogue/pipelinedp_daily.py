"""PipelineDP daily totals, with the right privacy unit and with a user-day unit: two mechanisms.

Run from the command line (exit code 1 when a violation is found)::

    dpaudit test dpaudit.mechanisms.catalogue.pipelinedp_daily:daily_sum --epsilon 1 --samples 10000      # exit 0
    dpaudit test dpaudit.mechanisms.catalogue.pipelinedp_daily:user_day_sum --epsilon 1 --samples 10000   # exit 1

Both objects carry their neighbouring relation (:class:`~dpaudit.datasets.PrivacyUnitAddRemove`:
one **user** and all their rows added or removed; 1 to 10 users of up to 4 rows each) and
``WITNESS_PAIRS`` as audit hints. Both need PipelineDP (``pip install 'dpaudit[pipelinedp]'``);
importing this module does not import it, the first sample does. PipelineDP's noise cannot be
seeded, so runs differ even with ``--seed``. One pipeline run costs 0.17 ms on an idle 2-core
machine and about 1 ms on a busy one: 10 trials at ``--samples 10000`` (200,000 runs) took 229 s
on the busy machine (``docs/adapters.md``).

The data and the claim
----------------------
Rows are ``(user_id, day, amount)``: user ids 0..99, days 0, 1, 2 (the public partitions),
amounts in [0, 1]. The release is the total amount per day, one PipelineDP ``aggregate`` with
``Metrics.SUM``, Laplace noise, budget ``epsilon = 1`` (``NaiveBudgetAccountant(total_epsilon=1,
total_delta=0)``) and contribution bounds ``max_partitions_contributed=1``,
``max_contributions_per_partition=1``, ``min_value=0``, ``max_value=1``. The claim is
**user-level** 1-DP: the three totals are 1-DP with respect to adding or removing a user with
all their rows. PipelineDP calibrates the noise to the bounds: L1 sensitivity 1, Laplace scale 1
per day.

``daily_sum``: the privacy id is the user id. PipelineDP keeps one day per user (sampled) and one
amount per day, clipped to [0, 1]: the pipeline is 1-DP at the user level, as claimed.

``user_day_sum``: the same pipeline with ``privacy_id_extractor=lambda row: (row.privacy_id,
row.partition)``, a privacy unit of "user-day", as a pipeline first written for one day at a
time would have it. The contribution bounds now apply per user-day: "at most one partition"
holds trivially, and a user active on all three days moves all three totals by up to 1. The L1
sensitivity at the user level is 3 while the noise is calibrated to 1: the release is 3-DP, not
1-DP. The claim and the contribution bounds do not describe the same unit.

At the witness pair (user 1 with one row; plus user 0 with amount 1 on each day) the outputs of
``user_day_sum`` are three independent Laplace(., 1) totals, all shifted by 1:
``H_{e^1} = 0.31`` (Monte Carlo, 2 * 10^6 draws). For ``daily_sum`` the added user contributes to
one sampled day, a mixture of 1-DP shifts: ``H_{e^1} = 0``.
"""

from __future__ import annotations

from typing import Callable

from ...datasets import PrivacyUnitAddRemove, PrivacyUnitDomain
from ..adapters.pipelinedp import PipelineDPMechanism, UnitRow, import_pipeline_dp

__all__ = [
    "DAYS",
    "DOMAIN",
    "EPSILON",
    "NEIGHBOURING",
    "WITNESS_PAIRS",
    "daily_sum",
    "daily_totals",
    "user_day_sum",
]

EPSILON = 1.0
"""Total budget of each pipeline run and the claimed user-level epsilon (pure DP, nats)."""

DAYS = (0, 1, 2)
"""The public partitions (days), in output order."""

DOMAIN = PrivacyUnitDomain((0.0, 0.0, 0.0), (99.0, 2.0, 1.0), integer_columns=(0, 1), max_rows_per_unit=4)
"""Rows (user_id in 0..99, day in 0..2, amount in [0, 1]); a user has at most 4 rows."""

NEIGHBOURING = "privacy-unit"
"""Adjacency of the claim: one user and all of their rows added or removed."""

WITNESS_PAIRS = (
    ([[1.0, 0.0, 1.0]], [[1.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0.0, 1.0, 1.0], [0.0, 2.0, 1.0]]),
    ([[1.0, 0.0, 0.0]], [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0.0, 1.0, 1.0], [0.0, 2.0, 1.0]]),
)
"""User 0 (active on all three days, amount 1) added to a one-row dataset: ``user_day_sum``
shifts all three totals (H = 0.31 at eps = 1); ``daily_sum`` shifts one."""


def daily_totals(rows: list, privacy_id_extractor: Callable[[UnitRow], object]) -> list:
    """The user's PipelineDP pipeline: a DP sum of amounts per public day.

    Parameters
    ----------
    rows : list of UnitRow
        ``(privacy_id, partition = day, value = amount)`` rows.
    privacy_id_extractor : callable
        ``UnitRow -> privacy unit``; the user id for the correct pipeline.

    Returns
    -------
    list of (day, MetricsTuple(sum=...))
        One noisy total per day in :data:`DAYS`.
    """
    pdp = import_pipeline_dp()
    accountant = pdp.NaiveBudgetAccountant(total_epsilon=EPSILON, total_delta=0.0)
    engine = pdp.DPEngine(accountant, pdp.LocalBackend())
    params = pdp.AggregateParams(
        metrics=[pdp.Metrics.SUM],
        noise_kind=pdp.NoiseKind.LAPLACE,
        max_partitions_contributed=1,
        max_contributions_per_partition=1,
        min_value=0.0,
        max_value=1.0,
    )
    extractors = pdp.DataExtractors(
        privacy_id_extractor=privacy_id_extractor,
        partition_extractor=lambda row: row.partition,
        value_extractor=lambda row: row.value,
    )
    result = engine.aggregate(rows, params, extractors, public_partitions=list(DAYS))
    accountant.compute_budgets()
    return list(result)


def user_level_totals(rows: list) -> list:
    """Daily totals with the user as privacy unit (correct)."""
    return daily_totals(rows, lambda row: row.privacy_id)


def user_day_totals(rows: list) -> list:
    """BROKEN on purpose: daily totals with (user, day) as privacy unit, claimed user-level."""
    return daily_totals(rows, lambda row: (row.privacy_id, row.partition))


daily_sum = PipelineDPMechanism(user_level_totals, partitions=DAYS, metrics=("sum",), name="pipelinedp_daily:daily_sum")
"""Per-day DP totals, privacy unit = user: user-level 1-DP; not flagged."""

user_day_sum = PipelineDPMechanism(
    user_day_totals, partitions=DAYS, metrics=("sum",), name="pipelinedp_daily:user_day_sum"
)
"""Per-day DP totals, privacy unit = user-day: claims user-level 1-DP, is 3-DP (H = 0.31 at a witness)."""

for _mechanism in (daily_sum, user_day_sum):
    # min_size 1: PipelineDP refuses an empty collection ("col must be non-empty").
    _mechanism.neighbouring = PrivacyUnitAddRemove(DOMAIN, min_size=1, max_size=10)
    _mechanism.witness_pairs = WITNESS_PAIRS

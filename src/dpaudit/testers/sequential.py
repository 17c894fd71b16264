"""The sequential tester: an anytime-valid test by betting that stops as soon as the evidence allows.

:class:`SequentialTester` draws the outputs of a neighbouring pair in growing batches and bets,
pair by pair, against the claim (:mod:`dpaudit.estimators.betting`; ``docs/sequential.md``). Its
wealth ``K_n`` is a non-negative supermartingale under the claim, so by Ville's inequality a
violation reported at *any* sample size is wrong with probability at most ``beta`` whatever the
stopping rule: the test reports a violation at the first pair where ``K_n >= 1/beta``, and
otherwise runs to its budget. After each batch the regions (and, for continuous vector outputs,
the classifier scores that order them) are refit on every pair drawn so far, and the next batch
is bet on with them: the choice is predictable, which is all validity needs.

Claims: pure and approximate DP through their privacy profile ``delta(eps')``; Rényi DP
through the profile it implies (Canonne, Kamath, Steinke 2020, Prop. 12) *and* a direct Rényi
e-process (:class:`_RenyiBets`, docs/sequential.md §5), mixed half and half.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.special import logsumexp

from .._validate import as_rng, check_int, check_probability, check_real
from ..estimators.betting import (
    CAP_FRACTIONS,
    CHOICE_Z,
    FAMILIES,
    KELLY_WEIGHT,
    MAX_FRACTION,
    BettingMixture,
    EProcessBound,
    OrderedCells,
    Plan,
    choose_plan,
    growth_tables,
    outcome_steps,
)
from ..privacy.claims import ApproxDP, Claim, PureDP, RenyiDP
from .base import Tester, TestOutcome

__all__ = ["SequentialResult", "SequentialTester", "Sizing", "batch_schedule", "draw_chunks"]

DEFAULT_FIRST_BATCH = 32
"""Pairs of the first batch (learning only: nothing is bet before a region exists)."""

DEFAULT_GROWTH = 1.3
"""Growth factor of the batches (refits) of a vectorised mechanism (each batch 30 % of the pairs so far;
was 1.5 before the chunked draws of :data:`DEFAULT_DRAW_FRACTION`: more refits, slightly fewer pairs
to detection on the zoo, benchmarks/results/sequential_detection.md)."""

DEFAULT_PER_CALL_GROWTH = 1.25
"""Growth factor of the batches of a per-call mechanism, whose every call costs far more than
refitting the regions (a batch a quarter of the pairs so far: at most ~25 % overshoot past the
detecting pair)."""

EPS_GRID_POINTS = 6
"""eps' values (from 0 to the claimed eps) a plan may bet at, besides the claimed one."""

DISCRETE_FRACTION = 0.1
"""A vector output whose past pairs hold at most this many distinct rows per row is discrete: its
distinct rows are the cells (no classifier)."""

DISCRETE_MIN_DISTINCT = 16
"""...or at most this many distinct rows (so that a few-valued output is seen as discrete from the
first batch on)."""

MLP_MIN_ROWS = 1000
"""Past rows per distribution (in the scorers' fitting fold) from which the MLP scorer joins the
product-of-marginals scores for continuous vector outputs; it is retrained each time those rows
have grown :data:`MLP_REFIT_FACTOR`-fold (1,000, 2,000, ..., 16,000: five trainings up to 50,000 pairs)."""

MLP_REFIT_FACTOR = 2

FUTILITY_Z = 2.0
"""Standard errors by which futility moves the past frequencies towards a violation."""

FUTILITY_FRACTION = 0.25
"""Futility is judged from this fraction of the budget on (pure and approximate claims only)."""

DEFAULT_DRAW_FRACTION = 0.125
"""Within a batch, pairs are drawn in chunks of at most this fraction of the pairs drawn so far (at
least half the first batch; :func:`draw_chunks`): a run stops at most ~12.5 % past its detecting
pair, against up to 50 % (vectorised) or 25 % (per call) with whole batches, at no extra refit."""

KELLY_MULTIPLIER = 1.0
"""The plug-in strategy bets this multiple of the plan's Kelly fraction (capped at ``MAX_FRACTION``)."""

MARGINAL_BINS = (2, 4, 8, 16)
"""Bins per coordinate of the product-of-marginals scores (:class:`~dpaudit.estimators.hockey_stick.MarginalScore`)."""


def batch_schedule(budget: int, first: int = DEFAULT_FIRST_BATCH, growth: float = DEFAULT_GROWTH) -> tuple:
    """Cumulative pairs after each batch: ``first``, then ``max(n + first, ceil(growth n))``, ...,
    ending exactly at ``budget``.

    Parameters
    ----------
    budget : int
        Pairs at most, ``>= 1``.
    first : int
        Pairs of the first batch, ``>= 1``.
    growth : float
        Factor ``> 1`` by which the pairs drawn grow from batch to batch.

    Returns
    -------
    tuple of int
        Strictly increasing, the last equal to ``budget``.

    Raises
    ------
    ValueError
        For ``budget < 1``, ``first < 1`` or ``growth <= 1``.
    """
    budget = check_int(budget, "budget", 1)
    first = check_int(first, "first_batch", 1)
    growth = check_real(growth, "growth")
    if growth <= 1.0:
        raise ValueError(f"growth must be > 1, got {growth!r}")
    out = [min(first, budget)]
    while out[-1] < budget:
        n = out[-1]
        out.append(min(budget, max(n + first, int(math.ceil(growth * n)))))
    return tuple(out)


def draw_chunks(have: int, end: int, first: int = DEFAULT_FIRST_BATCH, fraction: float = DEFAULT_DRAW_FRACTION):
    """Sizes of the draws that take a run from ``have`` to ``end`` pairs (one batch of the schedule):
    each ``min(end - have, max(ceil(first / 2), ceil(fraction * have)))``, or the whole batch when
    ``have == 0`` (the first batch is learning only: nothing is bet on it).

    Fixed by ``have``, ``end`` and the tester's settings alone (never by the draws), like the batch
    schedule; the betting within a batch uses the plan fixed at its start, so how a batch is cut
    into draws changes where the run may stop, never the wealth at a given pair.

    Parameters
    ----------
    have, end : int
        Pairs drawn so far and at the batch's end (``0 <= have < end``).
    first : int
        The first batch's pairs.
    fraction : float
        In ``(0, 1]``; ``1`` draws every batch whole.

    Returns
    -------
    list of int
        Positive, summing to ``end - have``.
    """
    if have == 0 or fraction >= 1.0:
        return [end - have]
    out = []
    lo = max(1, -(-first // 2))
    while have < end:
        m = min(end - have, max(lo, int(math.ceil(fraction * have))))
        out.append(m)
        have += m
    return out


@dataclass(frozen=True)
class BatchRecord:
    """One batch of a sequential test: pairs so far, ``ln K`` after it, the plan it was bet on."""

    num_samples: int
    log_e_value: float
    plan: str
    sample_seconds: float = 0.0
    test_seconds: float = 0.0


@dataclass(frozen=True)
class SequentialResult:
    """What :meth:`SequentialTester.run` returns.

    Attributes
    ----------
    outcome : TestOutcome
        The verdict with its :class:`~dpaudit.estimators.betting.EProcessBound`.
    samples_used : int
        Pairs after which the test stopped (the detecting pair, or every pair bet on).
    samples_drawn : int
        Pairs drawn (whole batches).
    stop_reason : str
        ``"violation"``, ``"futility"`` or ``"budget"``.
    batches : tuple of BatchRecord
    sample_seconds, test_seconds : float
        Time drawing the pairs and betting / refitting.
    """

    outcome: TestOutcome
    samples_used: int
    samples_drawn: int
    batches: tuple = ()
    sample_seconds: float = 0.0
    test_seconds: float = 0.0
    stop_reason: str = "budget"
    sizing_samples: int = 0
    sizing: "Sizing | None" = None


@dataclass(frozen=True)
class Sizing:
    """The sizing step's lower bound on the leak (:meth:`SequentialTester.run`, docs/sequential.md §10).

    Attributes
    ----------
    epsilon_lower : float
        ``ln((p_lo - delta) / q_hi)`` (nats, ``>= 0``; 0 when ``p_lo <= delta``): with probability at
        least ``1 - beta`` given everything before the fresh pairs, the mechanism does not satisfy
        ``(eps', delta)``-DP for any ``eps' < epsilon_lower`` (``delta`` the claimed one).
    p_lower, q_upper : float
        Clopper-Pearson bounds, each at ``beta / 2``, on ``P(S)`` and ``Q(S)`` (the region's masses
        under the distribution it is large under and the other one).
    hits_p, hits_q, pairs : int
        Fresh pairs in ``S`` under each distribution, and fresh pairs drawn.
    beta : float
    delta : float
        The claimed delta the bound is at.
    predicted : float
        The bound the region was chosen for (a planning figure from the detection's pairs).
    region : str
    """

    epsilon_lower: float
    p_lower: float
    q_upper: float
    hits_p: int
    hits_q: int
    pairs: int
    beta: float
    delta: float
    predicted: float
    region: str

    def describe(self) -> str:
        """The bound in one line (for the trial's note)."""
        return (f"sized on {self.pairs:,} fresh pairs: epsilon >= {self.epsilon_lower:.4g} at delta={self.delta:g} "
                f"(probability >= {1 - self.beta:g}; P(S) >= {self.p_lower:.4g}, Q(S) <= {self.q_upper:.4g}, "
                f"{self.hits_p:,} vs {self.hits_q:,} hits; region {self.region})")


SIZING_MIN_PAIRS = 100
"""Fewest fresh pairs for which the sizing step reports a bound (fewer: no sizing, e.g. a
:meth:`SequentialTester.test` whose samples ran out)."""

DEFAULT_SIZE_FACTOR = 4.0
"""The sizing step draws this many times the detection's pairs (at least :data:`DEFAULT_SIZE_MIN`)."""

DEFAULT_SIZE_MIN = 1000


def _claim_grid(claim: Claim) -> tuple[np.ndarray, np.ndarray]:
    """The eps' a plan may bet at and the delta the claim allows there (``delta < 1`` only)."""
    eps = float(claim.epsilon)
    if isinstance(claim, RenyiDP):
        top = max(2.0 * eps, eps + 2.0)
        grid = np.unique(np.concatenate([[0.0, eps], np.linspace(0.0, top, 2 * EPS_GRID_POINTS + 1)]))
    else:
        grid = np.unique(np.concatenate([[eps], np.linspace(0.0, eps, EPS_GRID_POINTS)]))
    allowed = np.asarray(claim.delta_profile(grid), dtype=float)
    keep = allowed < 1.0
    return grid[keep], allowed[keep]


_KEY_WEIGHTS_SEED = 12345


def _row_keys(x: np.ndarray) -> np.ndarray:
    """One number per row of a discrete vector output: ``x @ w`` with fixed generic weights. Two
    rows that share a key share a cell (a region is a set of keys), which can cost power, never
    validity."""
    w = np.random.default_rng(_KEY_WEIGHTS_SEED).uniform(1.0, 2.0, size=x.shape[1]) * np.sqrt(np.arange(2, x.shape[1] + 2))
    return x @ w


class _Scorer:
    """A 1-D score of vector outputs fitted on past rows (product of marginals or the MLP)."""

    def __init__(self, name: str, fn: Callable[[np.ndarray], np.ndarray]):
        self.name, self.fn = name, fn

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.fn(x), dtype=float)


class SequentialTester(Tester):
    """Anytime-valid sequential test of a DP claim by betting (docs/sequential.md).

    Pairs ``(X_i, Y_i)`` of outputs on the two datasets are drawn in batches (the first of
    ``first_batch`` pairs, then growing by ``growth``); pair by pair the tester bets on a region
    ``S`` chosen from the earlier batches, and reports a violation as soon as its wealth ``K``
    reaches ``1/beta``. By Ville's inequality that happens with probability at most ``beta``
    under the claim, at whatever sample size and whatever the stopping rule
    (:mod:`dpaudit.estimators.betting`).

    Regions: exact regions for 1-D outputs (thresholds, intervals and pairs of tails, level sets,
    atoms, over cells at quantiles of the past draws) and discrete vector outputs (level sets over
    the distinct rows); for continuous vector outputs, thresholds of a score fitted on half of the
    past pairs (product-of-marginals scores and, from :data:`MLP_MIN_ROWS` rows, the hockey-stick
    tester's MLP), chosen on the other half. A Rényi claim adds a direct Rényi e-process
    (docs/sequential.md §5) with half the prior weight.

    Parameters
    ----------
    first_batch : int, default 32
        Pairs of the first batch (nothing is bet on them).
    growth : float, default 1.3
        Batch growth factor for vectorised mechanisms.
    per_call_growth : float, default 1.25
        Batch growth factor for per-call mechanisms (:meth:`run` with ``per_call=True``).
    draw_fraction : float, default 0.125
        Within a batch, pairs are drawn (and bet on) in chunks of at most this fraction of the pairs
        so far (:func:`draw_chunks`; regions are refit only at the batch's end): the run stops
        within one such chunk of its detecting pair. ``1`` draws whole batches.
    size : bool, default True
        After a violation of a pure or approximate claim, size the leak: choose the region with
        the largest predicted epsilon lower bound on every pair drawn so far, draw
        :meth:`sizing_samples` fresh pairs and report ``epsilon >= ln((P(S)_lo - delta) / Q(S)_hi)``
        from Clopper-Pearson bounds on them (:class:`Sizing`, docs/sequential.md §10). It never
        changes the verdict, only adds a bound that holds with probability ``>= 1 - beta`` given the
        detection.
    size_factor : float, default 4.0
    size_min : int, default 1000
        The sizing step's fresh pairs: ``max(size_min, ceil(size_factor * pairs drawn to detect))``,
        at most the budget; for per-call mechanisms ``ceil(min(size_factor, 1) * pairs drawn)``
        (:meth:`sizing_samples`).
    max_edges : int, default 128
        Most quantile edges of the cells of a 1-D view.
    z : float, default 1.0
        Standard errors by which region choice discounts the past frequencies.
    futility : bool, default True
        For pure and approximate claims, stop without a violation once even an optimistic
        prediction cannot reach ``1/beta`` by the budget (from a quarter of it on; docs/sequential.md
        §6): it only removes rejections, so it cannot raise the false-accusation probability.
    device : str, optional
        Torch device of the MLP scorer (default CPU).

    Raises
    ------
    ValueError
        For a ``first_batch < 1``, a growth factor ``<= 1``, ``max_edges < 4``, ``z < 0``, or a
        device torch does not have here (:func:`dpaudit._torch.check_device`).

    References
    ----------
    Shafer & Vovk (2019), *Game-Theoretic Foundations for Probability and Finance* (testing by
    betting); Ville (1939); Waudby-Smith & Ramdas (2024, JRSS-B); González, Dulce-Rubio, Ramdas,
    Ribero (NeurIPS 2025, arXiv 2509.07055): a sequential DP audit with a kernel witness (this
    tester bets on hockey-stick regions instead, docs/sequential.md §7).
    """

    name = "sequential"
    sequential = True

    def __init__(self, *, first_batch: int = DEFAULT_FIRST_BATCH, growth: float = DEFAULT_GROWTH,
                 per_call_growth: float = DEFAULT_PER_CALL_GROWTH, max_edges: int = 128, z: float = CHOICE_Z,
                 futility: bool = True, device: str | None = None, draw_fraction: float = DEFAULT_DRAW_FRACTION,
                 size: bool = True, size_factor: float = DEFAULT_SIZE_FACTOR, size_min: int = DEFAULT_SIZE_MIN):
        self.first_batch = check_int(first_batch, "first_batch", 1)
        for name, value in (("growth", growth), ("per_call_growth", per_call_growth)):
            if check_real(value, name) <= 1.0:
                raise ValueError(f"{name} must be > 1, got {value!r}")
        self.growth, self.per_call_growth = float(growth), float(per_call_growth)
        self.max_edges = check_int(max_edges, "max_edges", 4)
        self.draw_fraction = check_real(draw_fraction, "draw_fraction")
        self.size = bool(size)
        self.size_factor = check_real(size_factor, "size_factor")
        if not self.size_factor > 0.0:
            raise ValueError(f"size_factor must be > 0, got {size_factor!r}")
        self.size_min = check_int(size_min, "size_min", 1)
        if not 0.0 < self.draw_fraction <= 1.0:
            raise ValueError(f"draw_fraction must be in (0, 1], got {draw_fraction!r}")
        self.z = check_real(z, "z")
        self.futility = bool(futility)
        if self.z < 0:
            raise ValueError(f"z must be >= 0, got {z!r}")
        from .._torch import check_device

        self.device = check_device(device or "cpu")

    def supports(self, claim: Claim) -> bool:
        """Pure, approximate and Rényi DP claims."""
        return isinstance(claim, (PureDP, ApproxDP, RenyiDP))

    def config(self) -> dict:
        return {"tester": self.name, "first_batch": self.first_batch, "growth": self.growth,
                "per_call_growth": self.per_call_growth, "max_edges": self.max_edges, "z": self.z,
                "futility": self.futility, "device": str(self.device),
                "draw_fraction": self.draw_fraction, "size": self.size, "size_factor": self.size_factor,
                "size_min": self.size_min}

    def schedule(self, budget: int, per_call: bool = False) -> tuple:
        """The batch schedule (:func:`batch_schedule`) of a run with this budget."""
        return batch_schedule(budget, self.first_batch, self.per_call_growth if per_call else self.growth)

    # ------------------------------------------------------------------ the Tester interface
    def test(self, p_samples, q_samples, claim: Claim, *, beta: float, rng=None) -> TestOutcome:
        """Bet on the pairs ``(p_samples[i], q_samples[i])`` in order, in batches of the vectorised
        schedule, and stop at the first violation (or at the last pair).

        Parameters and shapes as :meth:`Tester.test` (``min(n_p, n_q)`` pairs are used).

        Returns
        -------
        TestOutcome
            With one :class:`~dpaudit.estimators.betting.EProcessBound`.

        Raises
        ------
        InvalidClaimError
            For a claim it cannot test.
        ValueError
            On invalid samples or beta.
        """
        from ..estimators.base import check_sample_pair

        p, q = check_sample_pair(p_samples, q_samples)
        n = min(len(p), len(q))

        def draw(start: int, m: int):
            return p[start:start + m], q[start:start + m]

        return self.run(draw, claim, beta=beta, rng=rng, budget=n).outcome

    # ------------------------------------------------------------------ the sequential run
    def run(self, draw: Callable[[int, int], tuple], claim: Claim, *, beta: float, rng=None, budget: int,
            per_call: bool = False, schedule: tuple | None = None,
            on_batch: Callable[[BatchRecord], None] | None = None) -> SequentialResult:
        """Draw and bet until the wealth reaches ``1/beta`` or ``budget`` pairs are drawn.

        Parameters
        ----------
        draw : callable
            ``draw(start, m) -> (x0, x1)``: the next ``m`` outputs on each dataset (arrays of shape
            ``(m, d)``), pairs ``start .. start + m - 1``.
        claim : PureDP, ApproxDP or RenyiDP
        beta : float
            Failure probability: the test reports a violation wrongly with probability at most this.
        rng : Generator or int, optional
            For the MLP scorer's training (the betting itself uses no randomness).
        budget : int
            Most pairs to draw.
        per_call : bool
            Use the per-call batch growth (:data:`DEFAULT_PER_CALL_GROWTH`).
        schedule : tuple of int, optional
            Cumulative batch sizes (default :meth:`schedule`).
        on_batch : callable, optional
            Called with each :class:`BatchRecord`.

        Returns
        -------
        SequentialResult

        Raises
        ------
        InvalidClaimError
            For a claim it cannot test.
        ValueError
            On invalid beta or budget.
        """
        beta = check_probability(beta, "beta")
        self.require(claim)
        budget = check_int(budget, "budget", 1)
        sched = tuple(schedule) if schedule is not None else self.schedule(budget, per_call)
        state = _Run(self, claim, beta, as_rng(rng), budget=sched[-1])
        have = 0
        records = []
        sample_s = test_s = 0.0
        stopped_at = None
        futile = False
        for k, n_k in enumerate(sched):
            # the batch is drawn in chunks (draw_chunks) and bet on chunk by chunk with the plan fixed
            # at its start: the run stops within a chunk of the detecting pair, the plan is refit
            # only at the batch's end (the schedule), so finer draws cost no extra refits
            t_sample = t_test = 0.0
            for m in draw_chunks(have, n_k, self.first_batch, self.draw_fraction):
                t0 = time.perf_counter()
                x0, x1 = draw(have, m)
                t1 = time.perf_counter()
                x0 = np.asarray(x0, dtype=float).reshape(len(x0), -1)
                x1 = np.asarray(x1, dtype=float).reshape(len(x1), -1)
                hit = state.bet(x0, x1)
                if hit is not None:
                    stopped_at = have + hit + 1
                    state.absorb(x0[:hit + 1], x1[:hit + 1])
                else:
                    state.absorb(x0, x1)
                have += len(x0)
                t_sample += t1 - t0
                t_test += time.perf_counter() - t1
                if stopped_at is not None:
                    break
            t1 = time.perf_counter()
            if stopped_at is None and have < sched[-1]:
                futile = state.refit()
            t2 = time.perf_counter()
            t_test += t2 - t1
            sample_s += t_sample
            test_s += t_test
            rec = BatchRecord(int(have), float(state.log_value), state.plan_text, t_sample, t_test)
            records.append(rec)
            if on_batch is not None:
                on_batch(rec)
            if stopped_at is not None or futile:
                break
        sizing = None
        detected_drawn = have
        if stopped_at is not None and self.size and not state.renyi:
            t0 = time.perf_counter()
            want = self.sizing_samples(have, sched[-1], per_call)
            region = state.sizing_region(want)
            t1 = time.perf_counter()
            test_s += t1 - t0
            if region is not None:
                x0, x1 = draw(have, want)  # fewer (or none) when test()'s samples run out
                t2 = time.perf_counter()
                m = min(len(x0), len(x1))
                have += len(x0)
                if m >= SIZING_MIN_PAIRS:
                    x0 = np.asarray(x0, dtype=float).reshape(len(x0), -1)
                    x1 = np.asarray(x1, dtype=float).reshape(len(x1), -1)
                    sizing = state.size(region, x0[:m], x1[:m])
                sample_s += t2 - t1
                test_s += time.perf_counter() - t2
        t1 = time.perf_counter()
        outcome = state.outcome(stopped_at, detected_drawn, len(records), futile, sizing=sizing)
        test_s += time.perf_counter() - t1
        reason = "violation" if stopped_at is not None else ("futility" if futile else "budget")
        return SequentialResult(outcome, int(stopped_at or state.n_bet_end), int(have), tuple(records), sample_s,
                                test_s, reason, sizing_samples=int(have - detected_drawn), sizing=sizing)

    def sizing_samples(self, drawn: int, budget: int, per_call: bool = False) -> int:
        """Fresh pairs of the sizing step after a detection that drew ``drawn`` pairs:
        ``max(size_min, ceil(size_factor * drawn))``, at most ``budget`` (the trial's pairs). For a
        per-call mechanism, whose calls are the cost, ``ceil(min(size_factor, 1) * drawn)`` (no
        floor): the sizing step at most doubles the calls of a violating trial (fewer than
        :data:`SIZING_MIN_PAIRS` pairs: no sizing)."""
        if per_call:
            return int(min(math.ceil(min(self.size_factor, 1.0) * drawn), max(int(budget), 1)))
        return int(min(max(self.size_min, math.ceil(self.size_factor * drawn)), max(int(budget), 1)))

    def needed_samples(self, claim: Claim, beta: float) -> int:
        """Fewest pairs with which the wealth can reach ``1/beta`` at all (every bet won at the
        largest fraction, after the unbet first batch): below it a run is inconclusive whatever
        the mechanism does."""
        grid, allowed = _claim_grid(claim)
        e = np.exp(grid)
        step = float(np.max(np.log1p(MAX_FRACTION * (1.0 - allowed) / (e + allowed))))
        need = math.log(1.0 / beta) + math.log(1.0 / KELLY_WEIGHT)
        return int(self.first_batch + math.ceil(need / max(step, 1e-300)))


# =========================================================================== one run's state
class _Run:
    """The state of one sequential run: past draws, the current plan, the wealth."""

    def __init__(self, tester: SequentialTester, claim: Claim, beta: float, rng: np.random.Generator, *,
                 budget: int):
        self.tester, self.claim, self.beta, self.rng, self.budget = tester, claim, beta, rng, int(budget)
        self.log_threshold = math.log(1.0 / beta)
        self.grid, self.allowed = _claim_grid(claim)
        self.tables = growth_tables(self.grid, self.allowed)
        self.renyi = isinstance(claim, RenyiDP)
        self.fractions = np.concatenate([[MAX_FRACTION], CAP_FRACTIONS])  # [0]: the Kelly strategy's slot
        w = np.concatenate([[KELLY_WEIGHT], np.full(len(CAP_FRACTIONS), (1.0 - KELLY_WEIGHT) / len(CAP_FRACTIONS))])
        if self.renyi:
            self.renyi_bets = _RenyiBets(claim)
            w = np.concatenate([0.5 * w, 0.5 * self.renyi_bets.weights])
        self.hs_count = len(self.fractions)
        self.mixture = BettingMixture(w)
        # side families for the lower bounds (pure / approximate claims): delta at the claimed eps,
        # eps at the claimed delta, each member betting like the main process on its own claim
        # (step-down rule, docs/sequential.md §4)
        eps, delta = float(claim.epsilon), float(getattr(claim, "delta", 0.0) or 0.0)
        if not self.renyi:
            tiny = 1e-9
            self.delta_grid = np.unique(np.concatenate([[delta * (1 + tiny) + 1e-15],
                                                        delta + (1.0 - delta) * np.geomspace(1e-6, 0.5, 40)]))
            self.eps_grid = np.unique(np.concatenate([[eps * (1 + tiny) + 1e-12], np.linspace(0.0, max(2.0 * eps, eps + 1.0), 41),
                                                      eps + np.geomspace(0.005, 10.0, 24)]))
            self.side_delta = np.tile(np.log(w), (len(self.delta_grid), 1))
            self.side_eps = np.tile(np.log(w), (len(self.eps_grid), 1))
        self.plan: Plan | None = None
        self.view = None  # ("value"|"rows"|"score", scorer)
        self.x0 = self.x1 = None
        self.n = 0
        self.n_bet = 0
        self.n_bet_end = 0
        self.scorer_rows = 0
        self.scorer = None
        self.choice = None  # (folds, families, atoms, cells) the last plan was chosen on
        self.mlp = None
        self.mlp_rows = 0
        self.proj, self.proj_rows = None, 0
        self.estimate = math.nan
        self.plan_text = "learning (no bet)"
        self.witness_eps = float(claim.epsilon)

    # -------------------------------------------------------------- betting
    @property
    def log_value(self) -> float:
        return self.mixture.log_value

    def _kinds(self, v0: np.ndarray, v1: np.ndarray) -> np.ndarray:
        """Outcome kind ``in + 2 out`` of each new pair under the current plan."""
        plan = self.plan
        i0 = plan.mask[plan.cells.assign(v0)]
        i1 = plan.mask[plan.cells.assign(v1)]
        if plan.direction == 1:
            i0, i1 = i1, i0
        return i0.astype(np.int64) + 2 * i1.astype(np.int64)

    def _view_values(self, x: np.ndarray) -> np.ndarray:
        kind, arg = self.view
        if kind == "value":
            return x[:, 0]
        if kind == "rows":
            return _row_keys(x)
        if kind == "column":
            return x[:, arg]
        if kind == "columns":
            return _row_keys(x[:, list(arg)])
        return arg(x)

    def bet(self, x0: np.ndarray, x1: np.ndarray) -> int | None:
        """Bet on the new pairs with the current plan; the index of the first pair at which the
        wealth reaches the threshold, or None."""
        m = len(x0)
        hs_plan = self.plan is not None
        ren = self.renyi and self.renyi_bets.ready
        if not (hs_plan or ren):
            return None
        payoffs = np.zeros((len(self.mixture.log_wealth), m))
        kinds = None
        if hs_plan:
            v0, v1 = self._view_values(x0), self._view_values(x1)
            kinds = self._kinds(v0, v1)
            e = math.exp(self.grid[self.plan.eps_index])
            d = float(self.allowed[self.plan.eps_index])
            fr = self.fractions.copy()
            fr[0] = min(MAX_FRACTION, KELLY_MULTIPLIER * self.plan.kelly)
            steps = outcome_steps(fr, e, d)
            payoffs[: self.hs_count] = steps[:, kinds]
        if ren:
            payoffs[self.hs_count:] = self.renyi_bets.payoffs(x0, x1, self._view_values if self.view else None)
        path = self.mixture.advance_values(payoffs)
        hits = np.flatnonzero(path >= self.log_threshold + 1e-9)
        stop = int(hits[0]) if hits.size else None
        if stop is not None:  # the wealth at the stopping time
            self.mixture.log_wealth = self.mixture.log_wealth - payoffs[:, stop + 1:].sum(axis=1)
        upto = m if stop is None else stop + 1
        if kinds is not None and not self.renyi:
            counts = np.bincount(kinds[:upto], minlength=4)
            self._advance_side(fr, counts)
        self.n_bet_end = self.n + upto
        self.n_bet += upto
        return stop

    def _advance_side(self, fractions: np.ndarray, counts: np.ndarray) -> None:
        """Advance the lower-bound families by a run of pairs (``counts`` per outcome kind) bet with
        the main process's region and ``fractions``: each member tests its own claim, ``(eps, delta_j)``
        at the claimed eps, or ``(eps_j, delta)`` at the plan's eps' (its profile there)."""
        eps, delta = float(self.claim.epsilon), float(getattr(self.claim, "delta", 0.0) or 0.0)
        self.side_delta += _side_steps(fractions, np.full(len(self.delta_grid), math.exp(eps)), self.delta_grid, counts)
        eps_plan = float(self.grid[self.plan.eps_index])
        e_j = np.exp(self.eps_grid)
        d_j = np.where(eps_plan < self.eps_grid, delta + (1.0 - delta) * (e_j - math.exp(eps_plan)) / (1.0 + e_j), delta)
        self.side_eps += _side_steps(fractions, np.full(len(self.eps_grid), math.exp(eps_plan)), d_j, counts)

    # -------------------------------------------------------------- data
    def absorb(self, x0: np.ndarray, x1: np.ndarray) -> None:
        """Add the pairs of a batch to the past draws."""
        if self.x0 is None:
            self.x0, self.x1 = x0.copy(), x1.copy()
        else:
            self.x0 = np.concatenate([self.x0, x0])
            self.x1 = np.concatenate([self.x1, x1])
        self.n = len(self.x0)
        if self.renyi:
            self.renyi_bets.absorb(x0, x1)

    def _choose_view(self) -> None:
        d = self.x0.shape[1]
        if d == 1:
            self.view = ("value", None)
            return
        head0, head1 = self.x0[:4000], self.x1[:4000]
        keys = np.concatenate([_row_keys(head0), _row_keys(head1)])
        distinct = len(np.unique(keys))
        if distinct <= max(DISCRETE_FRACTION * len(keys), DISCRETE_MIN_DISTINCT):
            self.view = ("rows", None)
            return
        self.view = ("score", None)

    def _projection(self):
        """The view on a vector output's informative columns
        (:func:`~dpaudit.estimators._projection.informative_columns` of the past pairs, decided
        again each time they have doubled): ``("column", j)`` for one column, ``("columns", cols)``
        when the projection is discrete with few values, else None."""
        from ..estimators._projection import informative_columns

        if self.proj_rows and self.n < 2 * self.proj_rows:
            return self.proj
        self.proj_rows = self.n
        self.proj = None
        cols = informative_columns(self.x0, self.x1)
        if cols is None:
            return None
        if len(cols) == 1:
            self.proj = ("column", cols[0])
        else:
            keys = np.concatenate([_row_keys(self.x0[:4000, list(cols)]), _row_keys(self.x1[:4000, list(cols)])])
            if len(np.unique(keys)) <= max(DISCRETE_FRACTION * len(keys), DISCRETE_MIN_DISTINCT):
                self.proj = ("columns", tuple(cols))
        return self.proj

    def refit(self) -> bool:
        """Choose the plan for the next batch from every pair drawn so far; True when the run is
        futile (:meth:`_futile`)."""
        self._choose_view()
        kind, _ = self.view
        if kind == "score":
            self._refit_scores()
            proj = self._projection()
            if proj is not None:  # exact regions on the informative columns compete with the scores
                scored = (self.view, self.plan, self.choice)
                self.view = proj
                v0, v1 = self._view_values(self.x0), self._view_values(self.x1)
                plan, choice = self._plan_for(v0, v1, FAMILIES if proj[0] == "column" else ("level",))
                if plan is None or (scored[1] is not None and scored[1].growth >= plan.growth):
                    self.view, self.plan, self.choice = scored
                else:
                    self.plan, self.choice = plan, choice
        else:
            v0, v1 = self._view_values(self.x0), self._view_values(self.x1)
            families = FAMILIES if kind == "value" else ("level",)
            self.plan, self.choice = self._plan_for(v0, v1, families)
        if self.renyi:
            self.renyi_bets.refit(self)
        self.plan_text = self.plan.description if self.plan is not None else "no region predicts a gain (no bet)"
        return self._futile()

    def _futile(self) -> bool:
        """Whether even an optimistic growth cannot reach the threshold by the budget: from
        :data:`FUTILITY_FRACTION` of the budget on, pure and approximate claims only, the largest
        growth of any candidate with its past frequencies moved :data:`FUTILITY_Z` standard errors *towards* a
        violation (``P(S)`` up, ``Q(S)`` down; the choice's selection makes it more optimistic
        still) times the pairs left, added to the current ``ln K``, is below ``ln(1/beta)``.
        Stopping without a violation removes rejections only (docs/sequential.md §6)."""
        if (not self.tester.futility or self.renyi or self.choice is None
                or self.n < FUTILITY_FRACTION * self.budget or self.n >= self.budget):
            return False
        folds, families, atoms, _ = self.choice
        if self.plan is not None:  # the family the cross-validation chose (no second cross-validation)
            families = (self.plan.family,)
        hope = choose_plan(folds, self.tables, families, atoms=atoms, z=-FUTILITY_Z)
        growth = 0.0 if hope is None else max(hope.growth, 0.0)
        return self.log_value + (self.budget - self.n) * growth < self.log_threshold

    # -------------------------------------------------------------- sizing (docs/sequential.md §10)
    def sizing_region(self, m: int):
        """After a detection: refit on every pair drawn so far and choose the region, direction and
        family with the largest *predicted* sizing bound on ``m`` fresh pairs (the Wilson-discounted
        past frequencies, :data:`CHOICE_Z`, put in the Clopper-Pearson bound of :meth:`size`).
        Reads past pairs only. Returns ``(view, cells, mask, direction, predicted, text)`` or None."""
        from ..bounds import clopper_pearson_lower, clopper_pearson_upper
        from ..estimators.betting import candidate_masses, region_mask, wilson_interval

        saved = (self.view, self.plan, self.choice, self.plan_text, self.estimate)
        try:
            self.refit()
            choice, view = self.choice, self.view
        finally:  # the verdict describes the plan that detected
            self.view, self.plan, self.choice, self.plan_text, self.estimate = saved
        if choice is None:
            return None
        folds, families, atoms, cells = choice
        families = [f for f in families if f != "atoms" or atoms.any()]
        delta = float(getattr(self.claim, "delta", 0.0) or 0.0)
        z, half = self.tester.z, self.beta / 2.0

        def predicted(A, B, nA, nB):
            """The sizing bound on m fresh pairs at Wilson-discounted frequencies (arrays)."""
            p_lo = wilson_interval(A, nA, z)[0]
            q_hi = wilson_interval(B, nB, z)[1]
            pl = clopper_pearson_lower(np.floor(p_lo * m).astype(int), m, half)
            qh = clopper_pearson_upper(np.minimum(np.ceil(q_hi * m), m).astype(int), m, half)
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(pl > delta, np.log(np.maximum(pl - delta, 1e-300) / np.maximum(qh, 1e-300)), -np.inf)

        def best_of(fam, a, b, na, nb):
            c = candidate_masses(a, b, fam, atoms=atoms)
            out = (-math.inf, None, 0)
            if len(c.a) == 0:
                return out
            for direction in (0, 1):
                pred = predicted(c.a, c.b, na, nb) if direction == 0 else predicted(c.b, c.a, nb, na)
                i = int(np.argmax(pred))
                if pred[i] > out[0]:
                    out = (float(pred[i]), c.spec[i], direction)
            return out

        if len(families) > 1:  # the family by two-fold cross-validation, as choose_plan does for growth
            scores = []
            for fam in families:
                total = 0.0
                for (ta, tb, tna, tnb), (va, vb, vna, vnb) in ((folds[0], folds[1]), (folds[1], folds[0])):
                    g, spec, direction = best_of(fam, ta, tb, tna, tnb)
                    if spec is None or not math.isfinite(g):
                        total -= 1e9
                        continue
                    mk = region_mask(spec, ta, tb, atoms)
                    A, B = np.array([va[mk].sum()]), np.array([vb[mk].sum()])
                    v = predicted(A, B, vna, vnb)[0] if direction == 0 else predicted(B, A, vnb, vna)[0]
                    total += v if math.isfinite(v) else -1e9
                scores.append(total)
            families = [families[int(np.argmax(scores))]]
        fam = families[0]
        a, b = folds[0][0] + folds[1][0], folds[0][1] + folds[1][1]
        na, nb = folds[0][2] + folds[1][2], folds[0][3] + folds[1][3]
        pred, spec, direction = best_of(fam, a, b, na, nb)
        if spec is None or not math.isfinite(pred):
            return None
        mask = region_mask(spec, a, b, atoms)
        kept, self.view = self.view, view
        text = self._region_text(cells, mask, fam, direction)
        self.view = kept
        return view, cells, mask, direction, max(pred, 0.0), text

    def size(self, region, x0: np.ndarray, x1: np.ndarray) -> Sizing:
        """The sizing bound of ``region`` (:meth:`sizing_region`) on fresh pairs ``x0``, ``x1``
        (shape (m, d) each): Clopper-Pearson ``P(S) >= p_lo``, ``Q(S) <= q_hi`` at ``beta / 2`` each,
        ``epsilon >= ln((p_lo - delta) / q_hi)`` (0 when ``p_lo <= delta``): the certified set bound
        (:func:`dpaudit.bounds.certify_set`; the epsilon :meth:`dpaudit.bounds.LeakSize.epsilon_horizon`,
        i.e. :func:`dpaudit.bounds.set_epsilon_lower`)."""
        from ..bounds import certify_set

        view, cells, mask, direction, pred, text = region
        kept, self.view = self.view, view
        try:
            i0 = mask[cells.assign(self._view_values(x0))]
            i1 = mask[cells.assign(self._view_values(x1))]
        finally:
            self.view = kept
        if direction == 1:
            i0, i1 = i1, i0
        m = len(i0)
        kp, kq = int(i0.sum()), int(i1.sum())
        delta = float(getattr(self.claim, "delta", 0.0) or 0.0)
        cert = certify_set(kp, m, kq, m, beta=self.beta)  # beta split evenly between the two bounds
        eps = cert.epsilon_horizon(delta)
        return Sizing(epsilon_lower=max(float(eps), 0.0), p_lower=cert.p_lower, q_upper=cert.q_upper,
                      hits_p=kp, hits_q=kq, pairs=m,
                      beta=self.beta, delta=delta, predicted=float(pred), region=text)

    def _region_text(self, cells, mask, family: str, direction: int) -> str:
        kind = self.view[0]
        if kind == "rows":
            where = "row key "
        elif kind == "score":
            where = f"{self.view[1].name} "
        elif kind == "column":
            where = f"column {self.view[1]}: "
        elif kind == "columns":
            where = f"columns {tuple(self.view[1])}, row key "
        else:
            where = ""
        region = cells.describe(mask) if kind == "value" else f"{where}{cells.describe(mask)}"
        return f"[{family}] {region}, {'P||Q' if direction == 0 else 'Q||P'}"

    def _plan_for(self, v0: np.ndarray, v1: np.ndarray, families) -> Plan | None:
        cells = OrderedCells.from_sorted(np.sort(np.concatenate([v0, v1])), self.tester.max_edges)
        folds = []
        for par in (0, 1):
            s0, s1 = np.sort(v0[par::2]), np.sort(v1[par::2])
            folds.append((cells.counts(s0).astype(float), cells.counts(s1).astype(float), len(s0), len(s1)))
        atoms = np.zeros(cells.num_cells, dtype=bool)
        atoms[1::2] = cells.atoms
        choice = (folds, families, atoms, cells)
        plan = choose_plan(folds, self.tables, families, atoms=atoms, z=self.tester.z)
        if plan is None:
            return None, choice
        plan.cells = cells
        a = folds[0][0] + folds[1][0]
        b = folds[0][1] + folds[1][1]
        e = math.exp(float(self.claim.epsilon))
        pa, pb = a[plan.mask].sum() / max(len(v0), 1), b[plan.mask].sum() / max(len(v1), 1)
        self.estimate = (pa - e * pb) if plan.direction == 0 else (pb - e * pa)
        plan.description = (f"{self._region_text(cells, plan.mask, plan.family, plan.direction)} at "
                            f"eps'={self.grid[plan.eps_index]:.4g}")
        return plan, choice

    def _scorers(self, f0: np.ndarray, f1: np.ndarray) -> list:
        from ..estimators.hockey_stick import ClassifierHockeyStick, MarginalScore

        out = []
        for bins in MARGINAL_BINS:
            ms = MarginalScore(f0, f1, bins)
            out.append(_Scorer(f"product-of-marginals score ({bins} bins per coordinate)", ms))
        if len(f0) >= MLP_MIN_ROWS:
            if self.mlp is None or len(f0) >= MLP_REFIT_FACTOR * self.mlp_rows:
                est = ClassifierHockeyStick(device=self.tester.device)
                seed = int(self.rng.integers(2**31))
                from .._torch import torch_threads

                with torch_threads(est.num_threads):
                    fn, _, _ = est._train_scorer(f0, f1, seed)

                def scored(x, fn=fn, threads=est.num_threads):
                    with torch_threads(threads):
                        return fn(x)

                self.mlp = _Scorer("classifier score", scored)
                self.mlp_rows = len(f0)
            out.append(self.mlp)
        return out

    def _refit_scores(self) -> None:
        """Continuous vector outputs: scores fitted on the even pairs (refitted each time those have
        doubled, else the last scorer kept), regions chosen on the odd pairs' scores."""
        f0, f1 = self.x0[0::2], self.x1[0::2]
        c0, c1 = self.x0[1::2], self.x1[1::2]
        if self.scorer is None or len(f0) >= 2 * self.scorer_rows:
            candidates = self._scorers(f0, f1)
            self.scorer_rows = len(f0)
        else:
            candidates = [self.scorer]
        best = None
        if len(candidates) > 1:  # the scores compete on their best threshold (one family, no cross-validation)
            for scorer in candidates:
                self.view = ("score", scorer)
                plan, _ = self._plan_for(scorer(c0), scorer(c1), ("threshold",))
                growth = -math.inf if plan is None else plan.growth
                if best is None or growth > best[0]:
                    best = (growth, scorer)
            self.scorer = best[1]
        else:
            self.scorer = candidates[0]
        self.view = ("score", self.scorer)
        self.plan, self.choice = self._plan_for(self.scorer(c0), self.scorer(c1), FAMILIES)

    # -------------------------------------------------------------- the verdict
    def outcome(self, stopped_at: int | None, drawn: int, batches: int, futile: bool = False,
                sizing: Sizing | None = None) -> TestOutcome:
        claim = self.claim
        violation = stopped_at is not None
        log_k = self.log_value
        eps = float(claim.epsilon)
        claimed_delta = float(claim.delta_profile(np.array([eps]))[0])
        lower, eps_lb, delta_lb = -math.inf, None, None
        if not self.renyi:
            delta_lb = _step_down(self.delta_grid, self.side_delta, self.log_threshold)
            eps_lb = _step_down(self.eps_grid, self.side_eps, self.log_threshold)
            lower = -math.inf if delta_lb is None else float(delta_lb)
            eps_lb = 0.0 if eps_lb is None else float(eps_lb)
        plan = self.plan
        ren_share = 0.0
        if self.renyi:
            w = self.mixture.log_wealth
            ren_share = float(np.exp(logsumexp(w[self.hs_count:]) - logsumexp(w)))
        divergence = "renyi" if ren_share > 0.5 else "hockey-stick"
        direction = "P||Q" if plan is None or plan.direction == 0 else "Q||P"
        detect = None
        needed = self.tester.needed_samples(claim, self.beta)
        inconclusive = (not violation) and drawn < needed
        note = self._note(violation, stopped_at, drawn, batches, log_k, needed if inconclusive else None)
        if futile:
            note += (f"; stopped for futility at {drawn:,} of {self.budget:,} pairs: even an optimistic growth "
                     "could not reach 1/beta by the budget")
        if not violation and plan is not None and self.n_bet > 0:
            e = math.exp(eps)
            var = plan.p * (1 - plan.p) + e * e * plan.q * (1 - plan.q)
            detect = math.sqrt(2.0 * max(var, 1e-12) * (self.log_threshold + math.log(1 / KELLY_WEIGHT)) / self.n_bet)
            note += (f"; at this cost a region like the last one (P-mass {plan.p:.3g}) would have been expected to "
                     f"show a violation of H_e^eps - delta >= {detect:.3g}")
        bound = EProcessBound(
            divergence=divergence, direction=direction,
            estimate=float(self.estimate) if math.isfinite(self.estimate) else 0.0, lower=lower, beta=self.beta,
            epsilon=eps, e_value=float(math.exp(min(log_k, 700.0))), log_e_value=float(log_k),
            threshold=1.0 / self.beta, samples_used=int(stopped_at or self.n_bet_end), samples_drawn=int(drawn),
            batches=int(batches), region=plan.description if plan is not None else "",
            detectable_margin=None if detect is None else float(detect),
            sized_epsilon=None if sizing is None else float(sizing.epsilon_lower),
            sizing_samples=0 if sizing is None else int(sizing.pairs),
            sizing_region="" if sizing is None else sizing.region,
        )
        if sizing is not None:
            note += "; " + sizing.describe()
        witness = self.grid[plan.eps_index] if plan is not None else eps
        allowed = float(claim.delta_profile(np.array([witness]))[0])
        return TestOutcome(
            tester="sequential", violation=violation, beta=self.beta, bounds=(bound,), strongest=0,
            margin=float(log_k - self.log_threshold), objective=float(self.estimate - claimed_delta) if math.isfinite(self.estimate) else -1.0,
            threshold=allowed, witness_epsilon=float(witness),
            delta_lower_bound=None if self.renyi else max(0.0, lower if math.isfinite(lower) else 0.0),
            claimed_delta=claimed_delta, epsilon_lower_bound=eps_lb if not self.renyi else None,
            inconclusive=inconclusive, note=note,
        )

    def _note(self, violation: bool, stopped_at, drawn: int, batches: int, log_k: float, needed) -> str:
        k = math.exp(min(log_k, 700.0))
        if violation:
            return (f"e-value {k:.4g} >= 1/beta = {1 / self.beta:.4g} after {stopped_at:,} pairs "
                    f"({drawn:,} drawn in {batches} batches)")
        if needed is not None:
            return f"inconclusive: needs n >= {needed} samples per dataset"
        return (f"e-value {k:.4g} < 1/beta = {1 / self.beta:.4g} after {drawn:,} pairs ({batches} batches)")


def _side_steps(fractions: np.ndarray, e: np.ndarray, d: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Log-wealth increments of a family of claims ``(e_j, d_j)`` (shape (J,)) for strategies betting
    ``fractions`` (shape (S,)) of each member's cap on a run with ``counts`` pairs per outcome kind:
    shape (J, S) (:func:`~dpaudit.estimators.betting.outcome_steps` member by member)."""
    lam = fractions[None, :, None] / (e + d)[:, None, None]
    z = np.stack([np.zeros_like(e), np.ones_like(e), -e, 1.0 - e], axis=1)[:, None, :] - d[:, None, None]
    return np.log1p(lam * z) @ np.asarray(counts, dtype=float)


def _step_down(grid: np.ndarray, log_w: np.ndarray, log_threshold: float):
    """The largest grid value such that every grid value up to it is rejected (``logsumexp`` of
    its strategies' log wealth >= the threshold), or None: an anytime-valid lower bound
    (docs/sequential.md §4)."""
    rejected = logsumexp(log_w, axis=1) >= log_threshold + 1e-9
    if not rejected[0]:
        return None
    stop = np.flatnonzero(~rejected)
    last = (stop[0] - 1) if stop.size else len(grid) - 1
    return float(grid[last])


RENYI_CLIPS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
"""Clipping levels ``C`` of the Rényi bets' test function ``h = clip(log-ratio estimate, -C, C)``."""

RENYI_JUDGE_ROWS = 4096
"""Odd pairs at most on which the Rényi bets' candidates are judged (their predicted growth)."""

RENYI_CELLS = 32
"""Most quantile edges of the cells on which a 1-D view's log-ratio is estimated for the Rényi bets."""


class _RenyiBets:
    """The direct Rényi e-process of an ``(alpha, rho)``-RDP claim (docs/sequential.md §5).

    For a bounded test function ``h`` fixed from past pairs, the variational bound
    ``R_alpha(P||Q) >= alpha/(alpha-1) ln E_P e^{(alpha-1)h} - ln E_Q e^{alpha h}`` (Birrell et al.
    2021; docs/renyi.md §1) and the claim ``R_alpha(P||Q) <= rho`` give
    ``u <= A v^gamma`` with ``u = E_P e^{(alpha-1)h}``, ``v = E_Q e^{alpha h}``,
    ``gamma = (alpha-1)/alpha``, ``A = e^{gamma rho}``; ``v^gamma <= 1 + gamma (v - 1)`` (concavity,
    tangent at 1) makes it linear: ``E[U - gamma A V] <= A / alpha`` with ``U = e^{(alpha-1)h(X)}``,
    ``V = e^{alpha h(Y)}``. So ``Z = U - gamma A V - A/alpha`` has mean ``<= 0`` under the claim and
    ``1 + lambda Z`` with ``lambda = f / R``, ``R = gamma A V_max + A/alpha - U_min``, ``f <= 0.9``,
    is a positive supermartingale factor. ``h`` is shifted by a constant (which leaves the
    variational bound unchanged) so that the past ``E_Q e^{alpha h}`` is 1, the tangent point.
    ``Q||P`` swaps the roles of the datasets.
    """

    def __init__(self, claim: RenyiDP):
        self.alpha, self.rho = float(claim.alpha), float(claim.epsilon)
        self.gamma = (self.alpha - 1.0) / self.alpha
        self.A = math.exp(self.gamma * self.rho)
        self.fractions = np.concatenate([[MAX_FRACTION], CAP_FRACTIONS])
        self.weights = np.concatenate([[KELLY_WEIGHT], np.full(len(CAP_FRACTIONS), (1.0 - KELLY_WEIGHT) / len(CAP_FRACTIONS))])
        self.bet_fn = None  # view values -> h (shifted, clipped)
        self.direction = 0
        self.R = 1.0
        self.kelly = 0.0
        self.growth = 0.0
        self.text = ""

    @property
    def ready(self) -> bool:
        return self.bet_fn is not None

    def absorb(self, x0, x1) -> None:
        """Nothing to keep: the run holds the past pairs."""

    def _base(self, v0: np.ndarray, v1: np.ndarray, score: bool):
        """A log-ratio estimate ``ln p/q`` of the view values fitted on ``v0``, ``v1`` (callable)."""
        if score:
            return lambda v: np.asarray(v, dtype=float)
        cells = OrderedCells.from_sorted(np.sort(np.concatenate([v0, v1])), RENYI_CELLS)
        a = cells.counts(np.sort(v0)).astype(float) + 0.5
        b = cells.counts(np.sort(v1)).astype(float) + 0.5
        lr = np.log(a / a.sum()) - np.log(b / b.sum())
        return lambda v: lr[cells.assign(v)]

    def _terms(self, h_x: np.ndarray, h_y: np.ndarray, C: float, shift: float):
        """``Z`` of pairs with test-function values ``h_x`` (first distribution) and ``h_y``, and ``R``."""
        U = np.exp((self.alpha - 1.0) * (h_x + shift))
        V = np.exp(self.alpha * (h_y + shift))
        z = U - self.gamma * self.A * V - self.A / self.alpha
        R = self.gamma * self.A * math.exp(self.alpha * (C + shift)) + self.A / self.alpha - math.exp((self.alpha - 1.0) * (-C + shift))
        return z, max(R, 1e-300)

    def _shift(self, h_y: np.ndarray) -> float:
        """The constant that makes the mean of ``e^{alpha (h + shift)}`` over ``h_y`` equal to 1."""
        return -float(logsumexp(self.alpha * h_y) - math.log(len(h_y))) / self.alpha

    def refit(self, run) -> None:
        """Choose ``h`` (its clipping, direction, shift) and the Kelly fraction from the past pairs:
        fitted on the even pairs, judged on the odd ones, then refitted on all of them."""
        v0, v1 = run._view_values(run.x0), run._view_values(run.x1)
        score = run.view[0] == "score"
        fA0, fA1, fB0, fB1 = v0[0::2], v1[0::2], v0[1::2][:RENYI_JUDGE_ROWS], v1[1::2][:RENYI_JUDGE_ROWS]
        if len(fB0) < 8:
            self.bet_fn = None
            return
        base_A = self._base(fA0, fA1, score)
        best = (0.0, None)
        hA0, hA1 = base_A(fA0), base_A(fA1)
        hB0, hB1 = base_A(fB0), base_A(fB1)
        for C in RENYI_CLIPS:
            for direction in (0, 1):
                sgn = 1.0 if direction == 0 else -1.0
                ax, ay = (hA0, hA1) if direction == 0 else (hA1, hA0)
                bx, by = (hB0, hB1) if direction == 0 else (hB1, hB0)
                shift = self._shift(np.clip(sgn * ay, -C, C))
                z, R = self._terms(np.clip(sgn * bx, -C, C), np.clip(sgn * by, -C, C), C, shift)
                g = np.log1p(np.outer(FINE_GROWTH, z / R)).mean(axis=1)
                f = int(np.argmax(g))
                if g[f] > best[0]:
                    best = (float(g[f]), (C, direction, float(FINE_GROWTH[f])))
        if best[1] is None:
            self.bet_fn = None
            self.text = "Rényi: no test function predicts a gain (no bet)"
            return
        C, direction, kelly = best[1]
        base = self._base(v0, v1, score)
        sgn = 1.0 if direction == 0 else -1.0
        hy = np.clip(sgn * base(v1 if direction == 0 else v0), -C, C)
        shift = self._shift(hy)
        self.bet_fn = lambda v, base=base, sgn=sgn, C=C: np.clip(sgn * base(v), -C, C)
        self.direction, self.C, self.shift, self.kelly, self.growth = direction, C, shift, kelly, best[0]
        _, self.R = self._terms(np.zeros(1), np.zeros(1), C, shift)
        self.text = (f"Rényi (alpha={self.alpha:g}): h = clip(log-ratio estimate, +-{C:g}), "
                     f"{'P||Q' if direction == 0 else 'Q||P'}, predicted growth {best[0]:.3g}")

    def payoffs(self, x0, x1, view) -> np.ndarray:
        """Log payoffs of the Rényi strategies on new pairs: shape (S, m)."""
        v0, v1 = view(x0), view(x1)
        hx, hy = self.bet_fn(v0), self.bet_fn(v1)
        if self.direction == 1:
            hx, hy = hy, hx
        z, _ = self._terms(hx, hy, self.C, self.shift)
        fr = self.fractions.copy()
        fr[0] = min(MAX_FRACTION, KELLY_MULTIPLIER * self.kelly)
        return np.log1p(np.outer(fr, z / self.R))


FINE_GROWTH = np.geomspace(MAX_FRACTION, MAX_FRACTION * 2.0**-12, 25)

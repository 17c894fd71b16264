"""Sequential sample sizes within one trial: stages, beta spending and futility stopping.

A trial (:func:`dpaudit.audit.executors.run_trial`) may draw its ``num_samples`` outputs per
dataset in stages ``n_1 < n_2 < ... < n_K = num_samples`` (:func:`stage_schedule`). Samples are
nested: stage ``k`` adds ``n_k - n_{k-1}`` new draws per dataset to the earlier ones and the tester
runs on the first ``n_k`` samples of each dataset at failure probability ``beta_k``
(:func:`stage_betas`). The trial stops at the first stage that rejects the claim (a violation), or
earlier without one when the evidence points clearly the other way (:func:`is_futile`).

Error control (``docs/sequential.md``)
--------------------------------------
* **Beta spending.** ``sum_k beta_k <= beta`` (the trial's failure probability, ``beta / T`` of the
  audit). For a mechanism that satisfies its claim, the event "some stage rejects" is the union
  of the events "stage ``k`` rejects", each of probability at most ``beta_k`` whatever the data of
  the other stages, so it has probability at most ``sum_k beta_k <= beta`` -- whatever the
  dependence between the stages (they share samples) and without any assumption on the testers
  beyond their own guarantee. :func:`stage_betas` splits ``beta`` in proportion to the stage
  sizes: ``beta_k = beta n_k / sum_j n_j``, so the last (largest) stage keeps most of it (3/4 or
  more for the default factor-4 schedule) and the power at the full size is close to a
  fixed-size test's.
* **Futility.** Stopping without a violation only removes rejections: the rejection event of the
  trial with futility stopping is a subset of the one without, so its probability under a correct
  mechanism is still at most ``sum_k beta_k``. A futility rule can only cost power; the one of
  :func:`is_futile` stops only when every bound of the outcome, with its estimates moved one
  confidence-interval width towards a violation and certified as on the last stage's sample at
  the last stage's beta, would still show a negative margin at every eps' of the claim's profile.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy.special import ndtr

from ..bounds import clopper_pearson_lower, clopper_pearson_upper
from ..estimators.base import profile_grid
from ..estimators.region import HockeyStickBound

__all__ = [
    "DEFAULT_FIRST_STAGE",
    "DEFAULT_STAGE_FACTOR",
    "MIN_STAGE",
    "STOP_REASONS",
    "is_futile",
    "normalise_stages",
    "parse_stages",
    "stage_betas",
    "stage_schedule",
    "stage_stream",
]

DEFAULT_FIRST_STAGE = 2000
"""Samples per dataset of the first stage of the ``"auto"`` schedule."""

DEFAULT_STAGE_FACTOR = 4
"""Growth factor of the ``"auto"`` schedule (2k, 8k, 32k, 128k, ...)."""

MIN_STAGE = 8
"""Fewest samples per dataset of any stage (as for ``num_samples``)."""

STOP_REASONS = ("violation", "futility", "budget")
"""Why a trial stopped: a stage rejected the claim, futility, or the last stage was run."""


def normalise_stages(stages):
    """The canonical form of a ``stages`` option: ``"auto"``, ``"off"`` or a tuple of ints.

    Parameters
    ----------
    stages : "auto", "off", None, str or sequence of int
        ``"auto"``: the geometric default; ``None`` or ``"off"``: one stage of ``num_samples``;
        a comma-separated string (``"2000,8000"``, as on the command line) or a sequence of
        increasing sample sizes per dataset.

    Returns
    -------
    "auto", "off" or tuple of int

    Raises
    ------
    ValueError
        If ``stages`` is none of these, or a list is empty, not strictly increasing, or has an
        entry that is not an integer >= :data:`MIN_STAGE`.
    """
    if stages is None:
        return "off"
    if isinstance(stages, str):
        text = stages.strip().lower()
        if text in ("auto", "off"):
            return text
        return parse_stages(stages)
    try:
        values = list(stages)
    except TypeError:
        raise ValueError(f"stages must be 'auto', 'off', None or a list of sample sizes, got {stages!r}") from None
    return _check_list(values, repr(stages))


def parse_stages(text: str) -> tuple:
    """Stage sizes from comma-separated text, e.g. ``"2000,8000,32000"`` (``--stages``).

    Returns
    -------
    tuple of int

    Raises
    ------
    ValueError
        Naming the bad entry, if one is not a whole number, or the list is not valid
        (see :func:`normalise_stages`).
    """
    parts = [p.strip().replace("_", "") for p in str(text).split(",")]
    values = []
    for p in parts:
        try:
            values.append(int(p))
        except ValueError:
            raise ValueError(
                f"stages must be 'auto', 'off' or comma-separated sample sizes such as 2000,8000,32000; "
                f"{p!r} in {text!r} is not a whole number"
            ) from None
    return _check_list(values, repr(text))


def _check_list(values: list, shown: str) -> tuple:
    if not values:
        raise ValueError(f"stages must list at least one sample size, got {shown}")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < MIN_STAGE:
            raise ValueError(f"every stage must be an integer >= {MIN_STAGE} samples per dataset; got {v!r} in {shown}")
        out.append(int(v))
    for a, b in zip(out, out[1:]):
        if b <= a:
            raise ValueError(f"stages must be strictly increasing sample sizes; got {a} then {b} in {shown}")
    return tuple(out)


def stage_schedule(num_samples: int, stages="auto") -> tuple:
    """Cumulative samples per dataset after each stage, ending exactly at ``num_samples``.

    Parameters
    ----------
    num_samples : int
        Samples per dataset of the full trial (the last stage).
    stages : "auto", "off", None, str or sequence of int
        ``"auto"``: ``2000, 8000, 32000, ...`` (factor :data:`DEFAULT_STAGE_FACTOR` from
        :data:`DEFAULT_FIRST_STAGE`) while below ``num_samples / 6``, then ``num_samples / 4``
        (rounded down; the first stage at which futility is judged,
        :data:`FUTILITY_MIN_FRACTION`), then ``num_samples``: e.g. 2000, 8000, 12500, 50000;
        a single stage when ``num_samples < 4 * DEFAULT_FIRST_STAGE``. ``"off"``/``None``: ``(num_samples,)``.
        A list: those sizes, with ``num_samples`` appended when the list ends below it.

    Returns
    -------
    tuple of int
        Strictly increasing, the last equal to ``num_samples``.

    Raises
    ------
    ValueError
        If ``stages`` is invalid (:func:`normalise_stages`) or lists a size above ``num_samples``.
    """
    n = int(num_samples)
    spec = normalise_stages(stages)
    if spec == "off":
        return (n,)
    if spec == "auto":
        quarter = n // 4
        if quarter < DEFAULT_FIRST_STAGE:
            return (n,)
        out, s = [], DEFAULT_FIRST_STAGE
        while 1.5 * s < quarter:  # no stage within a factor 1.5 of the quarter stage
            out.append(s)
            s *= DEFAULT_STAGE_FACTOR
        return tuple(out) + (quarter, n)
    if spec[-1] > n:
        raise ValueError(f"stages {list(spec)} go beyond num_samples={n}: every stage must be <= num_samples")
    return spec if spec[-1] == n else spec + (n,)


def stage_betas(schedule: Sequence[int], beta: float) -> tuple:
    """Failure probability of each stage's test: ``beta_k = beta n_k / sum_j n_j``.

    The union bound over stages makes the trial's false-accusation probability at most
    ``sum_k beta_k``, which is ``<= beta`` (checked in floating point). A single stage gets
    exactly ``beta``.

    Parameters
    ----------
    schedule : sequence of int
        Cumulative stage sizes (:func:`stage_schedule`).
    beta : float
        The trial's failure probability.

    Returns
    -------
    tuple of float
    """
    sizes = [int(n) for n in schedule]
    if len(sizes) == 1:
        return (float(beta),)
    total = float(sum(sizes))
    out = [float(beta) * n / total for n in sizes]
    s = math.fsum(out)
    if s > beta:  # rounding: shrink a hair so the sum never exceeds beta
        out = [b * (beta / s) * (1 - 1e-12) for b in out]
    return tuple(out)


def stage_stream(ss: np.random.SeedSequence, stage: int) -> np.random.SeedSequence:
    """Stage ``stage``'s stream derived from a trial's sampling or testing stream:
    spawn key ``ss.spawn_key + (stage,)`` (only used when a trial has several stages)."""
    return np.random.SeedSequence(ss.entropy, spawn_key=tuple(ss.spawn_key) + (int(stage),))


FUTILITY_POWER = 0.02
"""A stage stops for futility when no region's predicted chance of rejecting at the last stage
reaches this (:func:`is_futile`)."""

FUTILITY_MIN_FRACTION = 1.0 / 4.0
"""Futility is judged only at stages holding at least this fraction of the last stage's samples:
earlier stages see too few outputs to rule out a rare violating event."""


def _bound_power(b: HockeyStickBound, grid: np.ndarray, allowed: np.ndarray, scale: float,
                 beta_ratio: float) -> float:
    """Predicted probability that this region rejects at the last stage (plug-in conditional
    power): its held-out frequencies ``p = p_count / n_test_p``, ``q = q_count / n_test_q`` taken
    as the truth, certified as on ``scale`` times as many held-out samples at ``beta_ratio``
    times this bound's per-mass level (:func:`~dpaudit.estimators.region.projected_margins` per
    eps'), with normal fluctuations of the last stage's frequencies around them:
    ``max_eps' Phi(margin(eps') / sd(eps'))``, ``sd^2 = p(1-p)/N_p + e^{2 eps'} q(1-q)/N_q``."""
    if not math.isfinite(b.lower) or b.n_test_p <= 0 or b.n_test_q <= 0:
        return 1.0  # nothing to judge from: do not stop
    side = b.beta / 2
    n_p, n_q = int(b.n_test_p), int(b.n_test_q)
    p_hat, q_hat = b.p_count / n_p, b.q_count / n_q
    full_p, full_q = max(n_p, int(round(n_p * scale))), max(n_q, int(round(n_q * scale)))
    p_lo = float(clopper_pearson_lower(p_hat * full_p, full_p, side * beta_ratio))
    q_hi = float(clopper_pearson_upper(q_hat * full_q, full_q, side * beta_ratio))
    e = np.exp(grid)
    margin = p_lo - e * q_hi - allowed
    sd = np.sqrt(p_hat * (1 - p_hat) / full_p + e**2 * q_hat * (1 - q_hat) / full_q)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, margin / np.where(sd > 0, sd, 1.0), np.where(margin > 0, np.inf, -np.inf))
    return float(np.max(ndtr(z)))


def is_futile(outcome, claim, *, scale: float = 1.0, beta_ratio: float = 1.0) -> bool:
    """Whether a stage's outcome shows that continuing to the full sample is futile.

    True only when the outcome is conclusive and shows no violation, the stage holds at least
    :data:`FUTILITY_MIN_FRACTION` of the last stage's samples (``scale <= 4``), **every** bound
    it rests on is a hockey-stick region bound (:class:`~dpaudit.estimators.HockeyStickBound`:
    the hockey-stick, histogram and float-bits testers, and ``all`` made of them), and for every
    one of them the predicted chance of rejecting at the last stage is below
    :data:`FUTILITY_POWER`: its held-out frequencies taken as the truth, certified on ``scale``
    times as many held-out samples at ``beta_ratio`` times the bound's level, with normal
    fluctuations of the last stage's frequencies (plug-in conditional power, e.g. Jennison &
    Turnbull 2000, §10.2). For other bounds (Rényi, MMD) it is never True.

    Stopping for futility cannot raise the false-accusation probability (it only removes
    rejections). It costs power on mechanisms whose violation the last stage would detect only
    sometimes, or in a region this stage's regions miss (docs/sequential.md gives the
    measured cost).

    Parameters
    ----------
    outcome : TestOutcome
    claim : Claim
        Anything with ``epsilon`` and ``delta_profile(eps_array)``.
    scale : float, default 1
        Samples of the last stage over samples of this one (``n_K / n_k``).
    beta_ratio : float, default 1
        The last stage's beta over this stage's (``beta_K / beta_k``).

    Returns
    -------
    bool
    """
    if scale > 1.0 / FUTILITY_MIN_FRACTION * (1 + 1e-6):
        return False
    if outcome.violation or outcome.inconclusive or not outcome.bounds:
        return False
    if not all(isinstance(b, HockeyStickBound) for b in outcome.bounds):
        return False
    try:
        grid = profile_grid(claim.epsilon)
        allowed = np.atleast_1d(np.asarray(claim.delta_profile(grid), dtype=float))
    except Exception:  # a claim without a profile: do not stop
        return False
    return all(_bound_power(b, grid, allowed, scale, beta_ratio) < FUTILITY_POWER for b in outcome.bounds)

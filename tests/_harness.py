"""The shared statistical harness of the test suite (imported by ``conftest.py`` and by tests).

Statistical tests in this suite count events over seeded repetitions (a bound that fails to
cover, a tester that accuses a mechanism satisfying its claim, an interval that misses the truth)
and compare the count with the rate the code promises, by an exact one-sided binomial test
(``scipy.stats.binomtest``). Three assertions cover every use:

* :func:`assert_rate_at_most` — a failure rate is not above its promised rate;
* :func:`assert_coverage_at_least` — a coverage is not below its promised confidence;
* :func:`assert_rate_above` — a rate IS above the promised rate (shows that a deliberately broken
  variant is caught, i.e. that the first check can fail).

Each rejects at ``level`` (default :data:`LEVEL` = 1e-3) and puts the counts and the p-value in its
assertion message. Seeds: :data:`BASE_SEED` and :func:`node_seed`, behind the ``seed`` and ``rng``
fixtures of ``conftest.py``.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
from scipy import stats

__all__ = [
    "BASE_SEED",
    "LEVEL",
    "assert_coverage_at_least",
    "assert_rate_above",
    "assert_rate_at_most",
    "coverage_pvalue",
    "new_rng",
    "node_seed",
    "rate_pvalue",
]

LEVEL = 1e-3
"""Default level of the harness's binomial tests: a correct component fails one check with
probability at most 1e-3."""

BASE_SEED = 20241123
"""Fixed base seed of the ``seed``/``rng`` fixtures (change it only to re-draw every test)."""


def _check_counts(count, trials, rate) -> tuple[int, int, float]:
    k, n, r = int(count), int(trials), float(rate)
    if k != count or n != trials or not 0 <= k <= n or n < 1:
        raise ValueError(f"need integer counts 0 <= count <= trials, trials >= 1; got {count!r} of {trials!r}")
    if not (math.isfinite(r) and 0.0 < r < 1.0):
        raise ValueError(f"rate must be in (0, 1), got {rate!r}")
    return k, n, r


def rate_pvalue(failures, trials, rate) -> float:
    """p-value of the exact one-sided binomial test of H0 "the event rate is <= ``rate``":
    ``P[Bin(trials, rate) >= failures]`` (``binomtest(..., alternative="greater")``)."""
    k, n, r = _check_counts(failures, trials, rate)
    return float(stats.binomtest(k, n, r, alternative="greater").pvalue)


def coverage_pvalue(hits, trials, confidence) -> float:
    """p-value of the exact one-sided binomial test of H0 "the coverage is >= ``confidence``":
    ``P[Bin(trials, confidence) <= hits]`` (``binomtest(..., alternative="less")``)."""
    k, n, c = _check_counts(hits, trials, confidence)
    return float(stats.binomtest(k, n, c, alternative="less").pvalue)


def assert_rate_at_most(failures, trials, rate, *, level: float = LEVEL, what: str = "failures") -> float:
    """Assert that ``failures`` events in ``trials`` independent repetitions are consistent with an
    event rate of at most ``rate`` (e.g. a bound that promises to fail with probability <= beta).

    Fails iff the one-sided binomial test of H0 "rate <= ``rate``" rejects: ``p <= level`` with
    ``p = P[Bin(trials, rate) >= failures]``. False-failure probability: at most ``level`` (default
    1e-3) when the true rate is <= ``rate`` (the exact test is conservative for a discrete count).
    Returns the p-value.
    """
    p = rate_pvalue(failures, trials, rate)
    assert p > level, (
        f"{failures}/{trials} {what} is too many for a rate <= {rate:g} "
        f"(one-sided binomial p = {p:.3g} <= level {level:g})"
    )
    return p


def assert_coverage_at_least(hits, trials, confidence, *, level: float = LEVEL, what: str = "covered") -> float:
    """Assert that ``hits`` successes in ``trials`` independent repetitions are consistent with a
    coverage of at least ``confidence`` (e.g. a 95% interval containing the truth).

    Fails iff the one-sided binomial test of H0 "coverage >= ``confidence``" rejects: ``p <= level``
    with ``p = P[Bin(trials, confidence) <= hits]``. False-failure probability: at most ``level``
    (default 1e-3) when the true coverage is >= ``confidence``. Returns the p-value.
    """
    p = coverage_pvalue(hits, trials, confidence)
    assert p > level, (
        f"{hits}/{trials} {what} is too few for a coverage >= {confidence:g} "
        f"(one-sided binomial p = {p:.3g} <= level {level:g})"
    )
    return p


def assert_rate_above(failures, trials, rate, *, level: float = LEVEL, what: str = "failures") -> float:
    """Assert that ``failures`` in ``trials`` show an event rate significantly ABOVE ``rate``: used
    to show that a deliberately broken variant fails :func:`assert_rate_at_most` (so that check can
    fail at all).

    Passes iff the one-sided binomial test of H0 "rate <= ``rate``" rejects: ``p < level``. A
    variant whose true rate is <= ``rate`` passes this with probability at most ``level``; the
    probability of a false failure (a broken variant not caught) is one minus the test's power at
    the variant's true rate, which the caller must make small by choosing ``trials`` (e.g. a
    variant failing half the time against ``rate = 0.2`` over 100 trials: about 1e-6).
    Returns the p-value.
    """
    p = rate_pvalue(failures, trials, rate)
    assert p < level, (
        f"{failures}/{trials} {what} is not significantly above a rate of {rate:g} "
        f"(one-sided binomial p = {p:.3g} >= level {level:g}): the broken variant was not caught"
    )
    return p


def node_seed(nodeid: str, base: int = BASE_SEED) -> int:
    """A 63-bit seed from a pytest node id and the base seed, by a stable hash (BLAKE2b; not
    Python's ``hash``, which is salted per process): the same in every run, independent of test
    order, selection and xdist worker."""
    h = hashlib.blake2b(f"{base}:{nodeid}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") >> 1


def new_rng(nodeid: str, base: int = BASE_SEED) -> np.random.Generator:
    """``np.random.default_rng(node_seed(nodeid, base))``."""
    return np.random.default_rng(node_seed(nodeid, base))

"""One-sided upper confidence bounds and trust diagnostics of the Monte Carlo accountant.

Part of :mod:`.monte_carlo`. The importance-sampling terms ``w (1 - e^(eps - L))_+`` are bounded a
priori by the RDP bound at the sampling tilt (:func:`term_log_bound`), so Maurer's (2003)
lower-tail inequality gives a bound on delta(eps) with no normal approximation
(:func:`nonnegative_upper_bound`); both are capped by the deterministic RDP bounds. The effective
sample size and the largest term's share say whether the point estimate can be trusted
(:func:`term_diagnostics`). Derivations in docs/accounting.md §3.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import special

from .._validate import check_probability
from .mc_samples import ConditionalLossSamples
from .prv import Composition, max_supported_tilt

__all__ = ["MAX_TERM_SHARE", "MIN_ESS", "nonnegative_upper_bound", "term_diagnostics", "term_log_bound"]

#: the estimate is "trusted" when the terms that carry it have an effective sample size of at least
#: MIN_ESS and no single term carries more than MAX_TERM_SHARE of their sum (docs/accounting.md §3)
MIN_ESS = 100.0
MAX_TERM_SHARE = 0.1


def _z_one_sided(confidence: float) -> float:
    return float(special.ndtri(confidence))


def term_log_bound(comp: Composition, direction: str, tilts: Sequence[float], epsilon: float) -> float:
    """ln of an a-priori bound B on every importance-sampling term ``w (1 - e^(eps - L))_+``.

    With the balance-heuristic weight ``w = G / sum_g exp(lam_g L - K(lam_g))`` over G tilts,
    ``w <= G exp(K(lam_g) - lam_g L)`` for every g, and ``sup_{x >= 0} (1 - e^-x) e^(-lam x) = c1(lam)``,
    so every term is at most ``B = G min_g c1(lam_g) exp(K(lam_g) - lam_g eps)`` (for lam_g = 0 the
    factor is 1: the term of simple Monte Carlo is at most 1). This is the RDP bound on delta(eps)
    at the sampling tilt (docs/accounting.md §3). No tilts (simple Monte Carlo) gives ln 1 = 0.

    Parameters
    ----------
    comp : Composition
    direction : {'remove', 'add'}
    tilts : sequence of float
        The proposal's tilts (empty or (0,) for simple Monte Carlo).
    epsilon : float
        eps >= 0 (nats).

    Returns
    -------
    float
        ln B (<= ln G).
    """
    from .prv import _c1

    lams = [float(x) for x in tilts] or [0.0]
    best = 0.0
    for lam in lams:
        if lam > 0:
            best = min(best, math.log(_c1(lam)) + comp.log_mgf(lam, direction) - lam * epsilon)
    return math.log(len(lams)) + best


def nonnegative_upper_bound(mean: float, bound: float, num_samples: int, confidence: float) -> float:
    """One-sided upper confidence bound on E[Y] from m independent terms ``0 <= Y_i <= bound``.

    Maurer (2003, Thm. 1): for independent non-negative X_i, ``Pr[E S - S >= t] <= exp(-t^2 / (2 sum E X_i^2))``;
    with ``E X^2 <= bound E X`` this gives ``Pr[mean <= delta - t] <= exp(-m t^2 / (2 bound delta))``.
    Inverting at ``alpha = 1 - confidence`` with ``u = ln(1/alpha)/m``:
    ``delta <= (sqrt(bound u / 2) + sqrt(bound u / 2 + mean))^2``. Only the lower tail of the mean is
    used, so no normal approximation and no variance estimate (which heavy-tailed weights make
    unreliable) enter; it is tight when ``bound u`` is small next to delta.

    Parameters
    ----------
    mean : float
        Sample mean of the terms (>= 0).
    bound : float
        A-priori upper bound on each term.
    num_samples : int
        m.
    confidence : float
        In (0, 1).

    Returns
    -------
    float
        The upper confidence bound.
    """
    u = math.log(1.0 / (1.0 - check_probability(confidence, "confidence"))) / int(num_samples)
    h = 0.5 * float(bound) * u
    return (math.sqrt(h) + math.sqrt(h + max(float(mean), 0.0))) ** 2


def _is_terms(samples, epsilon: float) -> np.ndarray:
    """The plain importance-sampling terms (bounded by :func:`term_log_bound`) of a sample set."""
    if isinstance(samples, ConditionalLossSamples):
        return samples.components(epsilon, (0,))[:, 0]
    return samples.terms(epsilon)


def _bounded(samples) -> bool:
    return samples.estimator in ("is", "simple", "cmc", "is-cmc")


def _delta_upper(samples, comp, direction, epsilon, confidence, rdp):
    """(one-sided upper bound on delta(eps), method) for one direction (see MonteCarloAccountant)."""
    m = samples.num_samples
    if _bounded(samples):
        tilts = samples.tilts if samples.estimator != "simple" else ()
        b = math.exp(term_log_bound(comp, direction, tilts, epsilon))
        v = nonnegative_upper_bound(float(_is_terms(samples, epsilon).mean()), b, m, confidence)
        how = "maurer"
    else:
        mean, se = samples.delta(epsilon)
        v, how = mean + _z_one_sided(confidence) * se, "wald"
    return (v, how) if v < rdp else (rdp, "rdp")


def _epsilon_upper(samples, comp, direction, delta, confidence, rdp):
    """(one-sided upper bound on eps(delta), method) for one direction: the largest eps at which the
    upper bound on delta(eps) still exceeds delta (bisection; the bound decreases in eps), at most
    the RDP bound ``rdp``."""
    if _bounded(samples):
        tilts = samples.tilts if samples.estimator != "simple" else ()
        m = samples.num_samples

        def f(e):
            b = math.exp(term_log_bound(comp, direction, tilts, e))
            return nonnegative_upper_bound(float(_is_terms(samples, e).mean()), b, m, confidence) - delta
        how = "maurer"
    else:
        z1 = _z_one_sided(confidence)

        def f(e):
            mean, se = samples.delta(e)
            return mean + z1 * se - delta
        how = "wald"
    if not math.isfinite(rdp):
        rdp = 1e6
    if f(rdp) > 0:
        return rdp, "rdp"
    if f(0.0) <= 0:
        return 0.0, how
    lo, hi = 0.0, rdp
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-9 * max(1.0, hi):
            break
    return float(hi), how


def term_diagnostics(terms: np.ndarray) -> dict:
    """Effective sample size and concentration of the non-negative terms whose mean is the estimate.

    Returns
    -------
    dict
        ``ess = (sum t)^2 / sum t^2`` (Kong 1992; between 1 and the number of non-zero terms, 0 when
        all are 0), ``max_term_share = max t / sum t`` and ``nonzero`` (count).
    """
    t = np.asarray(terms, dtype=float)
    t = np.where(t > 0, t, 0.0)
    total = float(t.sum())
    if total <= 0:
        return {"ess": 0.0, "max_term_share": 1.0, "nonzero": 0}
    scale = float(t.max())
    r = t / scale
    return {"ess": float(r.sum() ** 2 / np.sum(r * r)), "max_term_share": scale / total,
            "nonzero": int(np.count_nonzero(t))}


def _trusted(diag: dict) -> bool:
    return diag["ess"] >= MIN_ESS and diag["max_term_share"] <= MAX_TERM_SHARE


def _untrusted_message(what: str, diag: dict, num_samples: int) -> str:
    fails = []
    if diag["ess"] < MIN_ESS:
        fails.append(f"effective sample size {diag['ess']:.1f} < {MIN_ESS:g}")
    if diag["max_term_share"] > MAX_TERM_SHARE:
        fails.append(f"largest term {100 * diag['max_term_share']:.1f}% of the sum > {100 * MAX_TERM_SHARE:g}%")
    factor = max(2, int(math.ceil(MIN_ESS / max(diag["ess"], 1.0))))
    return (f"Monte Carlo estimate of {what} cannot be trusted ({'; '.join(fails)}; {num_samples} samples): "
            f"the importance weights are heavy-tailed. Increase num_samples (at least x{factor}; heavy tails "
            f"may need more), or use untrusted='widen' and rely on epsilon_upper/delta_upper, which do not "
            f"depend on these diagnostics")


def _online_rdp_bounds(comp: Composition, deltas, direction: str) -> np.ndarray:
    """RDP upper bounds on eps(delta) of every prefix 1..k (shape (len(deltas), k)), from K on a grid."""
    from .prv import _c1

    lam = np.unique(np.concatenate([np.geomspace(0.01, 0.9, 20), np.arange(1.0, 65.0)]))
    cap = max_supported_tilt(comp, direction)
    lam = lam[lam <= min(cap, 64.0)]
    per_seg = np.array([[st.log_mgf(x, direction) for x in lam] for st, _ in comp.segments])
    counts = [c for _, c in comp.segments]
    k = comp.num_steps
    kk = np.zeros((k, lam.size))
    acc = np.zeros(lam.size)
    i = 0
    for si, c in enumerate(counts):
        for _ in range(c):
            acc = acc + per_seg[si]
            kk[i] = acc
            i += 1
    logc1 = np.array([math.log(_c1(x)) for x in lam])
    out = np.zeros((len(deltas), k))
    for j, d in enumerate(deltas):
        out[j] = np.min((kk + logc1[None, :] - math.log(d)) / lam[None, :], axis=1)
    return np.maximum(out, 0.0)

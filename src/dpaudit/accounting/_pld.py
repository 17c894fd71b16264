"""dp_accounting privacy loss distributions (PLDs) of a composition, read as dense PMFs.

One place builds the PLD of a :class:`~dpaudit.accounting.prv.Composition` (through its
``DpEvent`` and :func:`dpaudit.privacy.events.pld_from_event`) and reads it back as arrays, with
the floating-point control the certified paths need: :mod:`.certified` (grid-refined PLD),
:mod:`.pld_online` (one FFT per step) and :mod:`.reference` use it.

The FFT composition leaves round-off in the probabilities (small negative entries). A PMF is
clipped at 0 and its *noise level* (the largest negative probability) is charged once per bin
above eps, so the reported delta stays an upper bound (``pmf_delta``/``pmf_epsilon``).
"""

from __future__ import annotations

import math

import numpy as np

from ..privacy.events import pld_from_event
from .prv import as_dp_event

__all__ = ["build_pld", "noise_level", "pmf_delta", "pmf_epsilon", "pmf_parts"]


def build_pld(composition, interval: float, pessimistic: bool = True):
    """dp_accounting's PLD of a composition (anything :func:`~.prv.as_composition` accepts) on loss
    grid ``interval`` (nats); pessimistic (an upper estimate of delta) by default. The event comes
    from the one conversion (:func:`~.prv.convert`), built once per composition."""
    return pld_from_event(as_dp_event(composition), interval, pessimistic)


def pmf_parts(pld) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """``[(losses, probs, infinity_mass), ...]`` of a PLD in dense form, one per direction: the
    remove PMF, then the add PMF when the PLD is not symmetric."""
    pmfs = [pld._pmf_remove]  # noqa: SLF001 - dp_accounting keeps these private
    if not pld._symmetric:  # noqa: SLF001
        pmfs.append(pld._pmf_add)  # noqa: SLF001
    out = []
    for pmf in pmfs:
        d = pmf.to_dense_pmf()
        probs = np.asarray(d._probs, dtype=float)  # noqa: SLF001
        losses = (np.arange(probs.size) + d._lower_loss) * d._discretization  # noqa: SLF001
        out.append((losses, probs, float(d._infinity_mass)))  # noqa: SLF001
    return out


def noise_level(probs: np.ndarray) -> float:
    """Floating-point noise of a composed PMF: the largest negative probability (exact: none)."""
    neg = probs[probs < 0]
    return float(-neg.min()) if neg.size else 0.0


def pmf_delta(losses, probs, inf_mass, eps: float) -> tuple[float, float]:
    """(delta(eps) from the clipped PMF, floating-point charge n_tail * noise) for one PMF."""
    noise = noise_level(probs)
    p = np.maximum(probs, 0.0)
    above = losses > eps
    d = inf_mass + float(np.sum(p[above] * -np.expm1(eps - losses[above])))
    return min(1.0, d), noise * int(np.count_nonzero(above))


def pmf_epsilon(losses, probs, inf_mass, delta: float) -> tuple[float, float]:
    """(smallest eps >= 0 with delta(eps) + charge <= delta, the charge at that eps) for one PMF.

    delta(eps) of a discrete PLD is convex and decreasing; between consecutive losses it is
    ``inf + S1 - e^eps S2`` with suffix sums S1 = sum p, S2 = sum p e^-l, so the root is found on
    the breakpoints (vectorised) and then in closed form.
    """
    noise = noise_level(probs)
    p = np.maximum(probs, 0.0)
    keep = (losses >= 0) & (p > 0)
    ls, ps = losses[keep], p[keep]
    if inf_mass >= delta:
        return math.inf, 0.0
    if ls.size == 0:
        return 0.0, 0.0
    # suffix sums over losses strictly above each breakpoint l_j (losses are increasing)
    s1 = np.concatenate([np.cumsum(ps[::-1])[::-1][1:], [0.0]])
    # S2 = sum_{i>j} p_i e^{-l_i}: every term is <= p_i since l_i >= 0, so a plain sum is safe
    # unless the largest losses underflow e^{-l}; then sum in log space
    if ls[-1] < 700.0:
        pe = ps * np.exp(-ls)
        s2 = np.concatenate([np.cumsum(pe[::-1])[::-1][1:], [0.0]])
        with np.errstate(divide="ignore"):
            log_s2 = np.log(s2)
        lp = np.log(ps) - ls
    else:
        lp = np.log(ps) - ls
        rev = np.logaddexp.accumulate(lp[::-1])[::-1]
        log_s2 = np.concatenate([rev[1:], [-np.inf]])
    # bins of the whole grid strictly above breakpoint j: clipped bins count too (their true mass
    # is at most the noise level)
    n_above = losses.size - 1 - np.nonzero(keep)[0]
    charge = noise * n_above
    d_at = inf_mass + s1 - np.exp(ls + log_s2) + charge  # delta at eps = l_j, plus charge
    ok = np.nonzero(d_at <= delta)[0]
    if ok.size == 0:
        return math.inf, 0.0
    j = int(ok[0])
    if j == 0:
        # maybe eps < l_0: delta at 0 uses every kept bin
        s1_all = float(s1[0] + ps[0])
        log_s2_all = float(np.logaddexp(log_s2[0], lp[0]))
        c0 = noise * int(np.count_nonzero(losses >= 0))
        if inf_mass + s1_all - math.exp(log_s2_all) + c0 <= delta:
            return 0.0, c0
        e = math.log((inf_mass + s1_all + c0 - delta)) - log_s2_all
        return max(0.0, min(e, float(ls[0]))), c0
    # root in (l_{j-1}, l_j]: bins j..end above
    s1_j = float(s1[j - 1])
    log_s2_j = float(log_s2[j - 1])
    c = float(charge[j - 1])
    e = math.log(inf_mass + s1_j + c - delta) - log_s2_j
    return float(min(max(e, ls[j - 1]), ls[j])), c

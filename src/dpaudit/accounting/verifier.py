"""Monte Carlo DP verifier (paper 004, §4, Alg. 2; App. D–F).

Given a mechanism's dominating pair (a :class:`~dpaudit.accounting.prv.Composition`) and a
proposed ``(eps, delta)``, the verifier accepts iff a Monte Carlo estimate of delta(eps) is below
``delta / tau - offset``. Its guarantees, with ``0 < tau < rho <= 1`` (paper 004, Def. 8):

* **false positive** (privacy): if the true ``delta(eps) > delta / tau``, it accepts with
  probability at most ``false_positive_rate`` (beta). This is *proved*: the number of samples comes
  from a concentration inequality applied to a bound on the estimator that holds for this
  mechanism (below);
* **false negative** (utility): if ``delta(eps) < delta / rho`` it should rarely reject; the offset
  ``Delta = 0.4 (1/tau - 1/rho) delta`` (paper 004, Thm 12 / App. F) makes the rejection rate about
  the false-positive rate. This is a heuristic; tests measure it.

The estimator is importance sampling with the exponential tilt ``lam`` of the PRV (see
:mod:`.monte_carlo`); ``lam = 0`` is simple Monte Carlo. Each term ``X`` lies in ``[0, B]`` with
``B = c1(lam) exp(K(lam) - lam eps)`` and has second moment at most

    nu(lam) = exp(K(lam) - lam eps) * min_{eta >= 0} c2(lam + eta) exp(K(eta) - eta eps)

(derivation in docs/accounting.md; ``lam = 0`` is paper 004's Cor. 19). Two sample sizes give the
false-positive guarantee, and the verifier uses the smaller (both are rigorous):

* Bennett (paper 004, Lemma 17 with b -> 0+, Thm "smcsamplecomp"): ``m >= 2 nu ln(1/beta) / Delta^2``;
* Chernoff–Hoeffding with the Bernoulli KL for [0, B]-valued terms (the "KL alternative"):
  ``m >= ln(1/beta) / kl((delta/tau - Delta)/B || (delta/tau)/B)``.

The tilt is chosen to minimise the required m. Both directions of a subsampled mechanism are
verified (the proposal is rejected if either estimate is too large); the false-positive bound
holds for the larger profile because the direction that exceeds ``delta / tau`` alone already
rejects with probability >= 1 - beta.

The verifier's randomness is fresh (OS entropy) unless a generator is passed for testing, and it is
never recorded in the result.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import bounds
from . import prv as _prv
from ._backend import check_counter_space, get_ops, key_from_rng, splitmix64
from .._validate import check_delta, check_epsilon, check_probability, check_rate
from .monte_carlo import ProgressFn, _Sampler, _block_rows, _check_samples, _fields_dict, _jsonable
from .prv import Composition, _c1, _c2, as_composition, max_supported_tilt, saddlepoint_tilt

__all__ = ["VerificationPlan", "VerificationResult", "plan_verification", "second_moment_bound", "verify"]

#: default cap on the samples per direction one verification may draw
DEFAULT_MAX_SAMPLES = 200_000_000


def _log_bound_terms(comp: Composition, lam: float, eps: float, direction: str) -> float:
    return comp.log_mgf(lam, direction) - lam * eps


def second_moment_bound(composition, epsilon: float, tilt: float = 0.0, direction: str = "remove") -> float:
    """Upper bound on the second moment of one term of the tilted estimator of delta(eps).

    ``E[X^2] <= exp(K(lam) - lam eps) * min_{eta >= 0} c2(lam + eta) exp(K(eta) - eta eps)`` with
    ``c2(l) = 4 l^l / (l + 2)^(l+2)``; for ``lam = 0`` (simple Monte Carlo) this is paper 004's
    Cor. 19, ``min_eta c2(eta) M_L(eta) e^{-eta eps}``.

    Parameters
    ----------
    composition, epsilon
        As in :func:`~dpaudit.accounting.prv.delta_upper_bound`.
    tilt : float
        lam >= 0 of the proposal.
    direction : {'remove', 'add'}
        Which dominating pair.

    Returns
    -------
    float
        The bound nu (at most ``exp(K(lam) - lam eps)``, and at most 1 for lam = 0).

    References
    ----------
    Paper 004, App. E.2 (Thm "variancebound" with u = 2); Mironov (2017) for K from RDP.
    """
    comp = as_composition(composition)
    eps = check_epsilon(epsilon)
    lam = _prv._check_tilt(tilt)
    direction = _prv._check_direction(direction)
    return math.exp(_log_nu(comp, lam, eps, direction))


def _log_nu(comp: Composition, lam: float, eps: float, direction: str) -> float:
    outer = _log_bound_terms(comp, lam, eps, direction)
    cap = max(1.0, 3.0 * saddlepoint_tilt(comp, eps, direction, max_tilt=64.0))
    etas = np.unique(np.concatenate([[0.0], np.geomspace(1e-3, cap, 60), np.arange(1.0, min(cap, 64.0) + 1)]))
    best = math.log(_c2(lam)) if lam > 0 else 0.0  # eta = 0: E_P[f^2 e^{-lam x}] <= c2(lam)
    for eta in etas[etas > 0]:
        try:
            v = math.log(_c2(lam + eta)) + _log_bound_terms(comp, float(eta), eps, direction)
        except (ValueError, OverflowError):
            continue
        best = min(best, v)
    return outer + min(best, 0.0)


@dataclass(frozen=True)
class VerificationPlan:
    """What a verification of (eps, delta) will do, before any sampling.

    Attributes
    ----------
    epsilon, delta : float
        The proposal.
    tau, rho : float
        Smoothing factors (paper 004, Def. 8): a false positive is acceptance while
        ``delta(eps) > delta / tau``; a false negative is rejection while ``delta(eps) < delta / rho``.
    offset : float
        Delta of Alg. 2.
    threshold : float
        ``delta / tau - offset``: accept iff every direction's estimate is below it.
    false_positive_rate : float
        beta, the proved bound on the false-positive probability.
    num_samples : int
        Samples per direction (0 when an RDP bound already proves ``delta(eps) <= delta / tau``).
    proven_by_rdp : bool
        True when the RDP upper bound alone is at most ``delta / tau`` (accept without sampling).
    per_direction : dict
        For each direction: tilt, term_bound B, second_moment_bound nu, samples_bennett, samples_kl,
        the inequality used, rdp_delta_bound.
    """

    epsilon: float
    delta: float
    tau: float
    rho: float
    offset: float
    threshold: float
    false_positive_rate: float
    num_samples: int
    proven_by_rdp: bool
    per_direction: dict

    def to_dict(self, *, composition=None) -> dict:
        """JSON-serialisable dict of every field. With ``composition`` (a ``Composition`` or its
        ``to_dict()``), the record ``dpaudit verify --plan-only --json`` prints: ``{"command":
        "verify", "composition", "beta", "plan": <the fields>}``."""
        d = _fields_dict(self)
        if composition is None:
            return d
        return {**_verify_head(composition, self.false_positive_rate), "plan": d}


def _verify_head(composition, beta: float) -> dict:
    """The first keys of ``dpaudit verify``'s JSON: the command, the composition and beta."""
    comp = composition if isinstance(composition, dict) else composition.to_dict()
    return {"command": "verify", "composition": comp, "beta": beta}


@dataclass(frozen=True)
class VerificationResult:
    """Outcome of :func:`verify` (the verifier's random seed is deliberately not recorded).

    Attributes
    ----------
    accepted : bool
        True: the proposal passed (EVR may release).
    plan : VerificationPlan
        The numbers that fixed the sample size and threshold.
    delta_hat : float
        Largest of the directions' estimates of delta(eps).
    per_direction : dict
        For each direction: delta_hat and its standard error.
    reason : str
        One sentence saying why it accepted or rejected.
    backend, device : str
        Where the sampling ran.
    wall_seconds : float
        Time spent.
    """

    accepted: bool
    plan: VerificationPlan
    delta_hat: float
    per_direction: dict
    reason: str
    backend: str
    device: str
    wall_seconds: float

    @property
    def epsilon(self) -> float:
        return self.plan.epsilon

    @property
    def delta(self) -> float:
        return self.plan.delta

    def to_dict(self, *, composition=None) -> dict:
        """JSON-serialisable dict (no random seed: the verifier's randomness stays private).

        With ``composition`` (a ``Composition`` or its ``to_dict()``), the record ``dpaudit verify
        --json`` prints: ``command`` (``"verify"``), ``composition`` and ``beta`` (the plan's
        false-positive rate) come first."""
        d = {k: v for k, v in self.__dict__.items() if k != "plan"}
        d["plan"] = self.plan.to_dict()
        d = _jsonable(d)
        return d if composition is None else {**_verify_head(composition, self.plan.false_positive_rate), **d}


def _check_params(delta, tau, rho, false_positive_rate, offset):
    delta = check_delta(delta)
    tau = check_rate(tau, "tau (smoothing factor of the false-positive rate)")
    rho = (1.0 + tau) / 2.0 if rho is None else float(rho)
    if not (tau < rho <= 1.0):
        raise ValueError(f"rho must be in (tau, 1] = ({tau:g}, 1], got {rho!r}")
    beta = (min(delta / tau, 0.5) if false_positive_rate is None
            else check_probability(false_positive_rate, "false_positive_rate"))
    gap = (1.0 / tau - 1.0 / rho) * delta
    off = 0.4 * gap if offset is None else float(offset)
    if not (0.0 < off < delta / tau):
        raise ValueError(f"offset must be in (0, delta/tau) = (0, {delta / tau:.6g}), got {offset!r}")
    return delta, tau, rho, beta, off


def plan_verification(composition, epsilon: float, delta: float, *, false_positive_rate: float | None = None,
                      tau: float = 0.9, rho: float | None = None, offset: float | None = None) -> VerificationPlan:
    """Sample size, tilt and threshold of a verification of (eps, delta) — no sampling.

    Parameters
    ----------
    composition : Composition, Step, list or dp_accounting DpEvent
        The mechanism's dominating pair(s).
    epsilon : float
        Proposed eps >= 0 (nats).
    delta : float
        Proposed delta in (0, 1) (the "delta_est" of paper 004).
    false_positive_rate : float, optional
        beta in (0, 1); default ``delta / tau`` (what paper 004's EVR theorem needs).
    tau : float
        In (0, 1]; default 0.9.
    rho : float, optional
        In (tau, 1]; default ``(1 + tau) / 2`` (paper 004, §6.1).
    offset : float, optional
        Delta of Alg. 2; default ``0.4 (1/tau - 1/rho) delta`` (paper 004, Thm 12).

    Returns
    -------
    VerificationPlan

    Raises
    ------
    ValueError
        For an out-of-range argument (named in the message).
    """
    comp = as_composition(composition)
    eps = check_epsilon(epsilon)
    delta, tau, rho, beta, off = _check_params(delta, tau, rho, false_positive_rate, offset)
    p = delta / tau
    a = p - off
    per: dict[str, Any] = {}
    proven = True
    m_total = 0
    for d in comp.directions:
        cap = max_supported_tilt(comp, d)
        lam_sp = saddlepoint_tilt(comp, eps, d, max_tilt=min(cap, 64.0))
        cands = {0.0, lam_sp}
        for f in (0.25, 0.5, 0.75, 1.25, 1.5, 2.0):
            cands.add(min(cap, f * lam_sp))
        cands |= {float(x) for x in range(1, int(min(cap, 2 * lam_sp + 2)) + 1)}
        best: dict[str, Any] | None = None
        rdp = 1.0
        for lam in sorted(cands):
            try:
                log_b = math.log(_c1(lam)) + _log_bound_terms(comp, lam, eps, d)
            except (ValueError, OverflowError):
                continue
            if log_b > 50.0:  # beyond the blow-up of K: this tilt is useless
                continue
            B = math.exp(min(log_b, 0.0)) if lam == 0 else math.exp(log_b)
            rdp = min(rdp, B)
            nu = min(math.exp(min(_log_nu(comp, lam, eps, d), 100.0)), B * B)
            m_b = bounds.bennett_sample_size(off, nu, beta)
            m_kl = bounds.kl_sample_size(a / B, p / B, beta) if p < B else 0
            m = min(m_b, m_kl) if p < B else 0
            row = {"tilt": lam, "term_bound": B, "second_moment_bound": nu, "samples_bennett": m_b,
                   "samples_kl": m_kl, "inequality": "kl" if (p < B and m_kl <= m_b) else "bennett", "samples": m}
            if best is None or m < best["samples"]:
                best = row
        assert best is not None
        best["rdp_delta_bound"] = rdp
        if rdp <= p:
            best.update(samples=0, inequality="rdp-bound")
        else:
            proven = False
        per[d] = best
        m_total = max(m_total, best["samples"])
    return VerificationPlan(epsilon=eps, delta=delta, tau=tau, rho=rho, offset=off, threshold=a,
                            false_positive_rate=beta, num_samples=m_total, proven_by_rdp=proven, per_direction=per)


def verify(composition, epsilon: float, delta: float, *, false_positive_rate: float | None = None,
           tau: float = 0.9, rho: float | None = None, offset: float | None = None,
           max_samples: int = DEFAULT_MAX_SAMPLES, rng=None, backend: str | None = None,
           device: str | None = None, chunk_elements: int = 1 << 21,
           progress: ProgressFn | None = None, plan: VerificationPlan | None = None) -> VerificationResult:
    """Verify a proposed (eps, delta) for a mechanism with a known dominating pair (paper 004, Alg. 2).

    Parameters
    ----------
    composition, epsilon, delta, false_positive_rate, tau, rho, offset
        As in :func:`plan_verification`.
    max_samples : int
        Refuse (ValueError) a plan needing more samples per direction than this.
    rng : None, numpy Generator or int
        Leave as None in production: fresh OS entropy. Tests pass a seed; it is never recorded.
    backend, device : str, optional
        'numpy' (default) or 'torch' on a device.
    chunk_elements : int
        Array elements per block.
    progress : callable, optional
        ``progress(done, total)`` over all directions' samples.
    plan : VerificationPlan, optional
        A plan from :func:`plan_verification` for the same arguments (saves recomputing it when
        verifying repeatedly); it must match ``epsilon`` and ``delta``.

    Returns
    -------
    VerificationResult

    Raises
    ------
    ValueError
        For bad arguments, or when the plan needs more than ``max_samples`` samples.

    References
    ----------
    Paper 004, Alg. 2, Thm "smcsamplecomp" (App. D), Thm 12 (App. F), Alg. 4 (App. G).
    """
    t0 = time.perf_counter()
    comp = as_composition(composition)
    max_samples = _check_samples(max_samples, "max_samples")
    if plan is None:
        plan = plan_verification(comp, epsilon, delta, false_positive_rate=false_positive_rate, tau=tau, rho=rho,
                                 offset=offset)
    elif plan.epsilon != check_epsilon(epsilon) or plan.delta != float(delta):
        raise ValueError(f"plan is for (eps={plan.epsilon}, delta={plan.delta}), not ({epsilon}, {delta})")
    ops = get_ops(backend, device)
    if plan.proven_by_rdp:
        return VerificationResult(
            accepted=True, plan=plan, delta_hat=0.0, per_direction={},
            reason=f"the RDP upper bound on delta({plan.epsilon:g}) is at most delta/tau = {plan.delta / plan.tau:.4g}; "
                   "no sampling needed", backend=ops.name, device=ops.device, wall_seconds=time.perf_counter() - t0)
    if plan.num_samples > max_samples:
        raise ValueError(
            f"verifying (eps={plan.epsilon:g}, delta={plan.delta:g}) needs {plan.num_samples:,} samples per direction, "
            f"above max_samples={max_samples:,}; raise the false-positive rate, lower tau, or raise max_samples"
        )
    check_counter_space(plan.num_samples, comp.num_steps)
    key = key_from_rng(rng)
    per = {}
    dirs = [d for d in comp.directions if plan.per_direction[d]["samples"] > 0]
    total = sum(plan.per_direction[d]["samples"] for d in dirs)
    done = 0
    accepted = True
    for di, d in enumerate(comp.directions):
        m = plan.per_direction[d]["samples"]
        if m == 0:
            per[d] = {"delta_hat": None, "note": "proved by the RDP bound"}
            continue
        lam = plan.per_direction[d]["tilt"]
        est = "is" if lam > 0 else "simple"
        sampler = _Sampler(comp, d, est, (lam,), None, splitmix64(key ^ (di + 1)), ops, chunk_elements, True,
                           num_samples=m)
        per_block = _block_rows(sampler)
        s1 = s2 = 0.0
        for lo in range(0, m, per_block):
            hi = min(m, lo + per_block)
            L, lw = sampler.draw(lo, hi)
            L, lw = ops.to_numpy(L), ops.to_numpy(lw)
            x = plan.epsilon - L
            pos = x < 0
            t = np.zeros_like(L)
            t[pos] = -np.expm1(x[pos]) * np.exp(lw[pos])
            s1 += float(t.sum())
            s2 += float((t * t).sum())
            done += hi - lo
            if progress is not None:
                progress(done, total)
        mean = s1 / m
        var = max(s2 / m - mean * mean, 0.0) * m / max(m - 1, 1)
        per[d] = {"delta_hat": mean, "std_error": math.sqrt(var / m), "samples": m, "tilt": lam}
        if not mean < plan.threshold:
            accepted = False
    dh = max((v["delta_hat"] for v in per.values() if v.get("delta_hat") is not None), default=0.0)
    if accepted:
        reason = (f"every estimate of delta({plan.epsilon:g}) is below the threshold delta/tau - offset = "
                  f"{plan.threshold:.4g} (largest {dh:.4g})")
    else:
        reason = (f"an estimate of delta({plan.epsilon:g}) = {dh:.4g} is not below the threshold "
                  f"delta/tau - offset = {plan.threshold:.4g}")
    return VerificationResult(accepted=accepted, plan=plan, delta_hat=dh, per_direction=per, reason=reason,
                              backend=ops.name, device=ops.device, wall_seconds=time.perf_counter() - t0)

"""Estimate–Verify–Release (paper 004, §3, Alg. 1; App. B; App. F "fallback" variant).

``release(mechanism, data, estimate)`` verifies the estimated ``(eps, delta)`` with the Monte Carlo
verifier of :mod:`.verifier` (fresh randomness, independent of the data) and runs the mechanism on
the data only if the verifier accepts; otherwise it returns nothing (``⊥``) or, when a fallback
mechanism with a proven guarantee is given, the fallback's output.

Guarantee (derivation in docs/accounting.md, following paper 004's Thm in App. B). Let beta be
the verifier's false-positive bound, ``p`` its acceptance probability (the same for every dataset),
``delta_upp`` a proven upper bound on the mechanism's delta(eps) (RDP; at most 1) and ``delta_fb``
the fallback's proven delta(eps) (0 without a fallback, since ``⊥`` reveals nothing):

* if ``delta(eps) <= delta / tau``: the output is ``M(D)`` w.p. ``p``, else the fallback, so by
  joint convexity of the hockey-stick divergence it is ``(eps, max(delta/tau, delta_fb))``-DP;
* otherwise ``p <= beta`` and it is ``(eps, beta * delta_upp + delta_fb)``-DP.

Hence EVR is ``(eps, max(delta/tau, delta_fb + beta * delta_upp))``-DP (``delta_guarantee_tight``),
which is at most ``max(delta/tau, delta_fb) + beta`` (``delta_guarantee``: the issue's and paper
004's "delta + false-positive rate" form).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from .._validate import as_rng
from .monte_carlo import DeltaEstimate, EpsilonEstimate, _jsonable
from .prv import as_composition, delta_upper_bound
from .verifier import DEFAULT_MAX_SAMPLES, VerificationResult, verify

__all__ = ["ReleaseResult", "VerifiableMechanism", "release"]


@dataclass(frozen=True)
class VerifiableMechanism:
    """A mechanism together with the dominating pair(s) that describe its privacy.

    Parameters
    ----------
    function : callable
        ``function(data, rng) -> output``; ``rng`` is a numpy Generator.
    composition : Composition, Step, list or dp_accounting DpEvent
        Its privacy description (e.g. ``Composition.dpsgd(sigma, q, steps)`` for a DP-SGD run).
    name : str
        For reports.
    """

    function: Callable[..., Any]
    composition: Any
    name: str = "mechanism"

    def __post_init__(self):
        if not callable(self.function):
            raise ValueError(f"function must be callable, got {self.function!r}")
        object.__setattr__(self, "composition", as_composition(self.composition))

    def __call__(self, data, rng: np.random.Generator):
        return self.function(data, rng)


@dataclass(frozen=True)
class ReleaseResult:
    """Outcome of :func:`release`.

    Attributes
    ----------
    released : bool
        True when the verifier accepted and ``output`` is the mechanism's output.
    used_fallback : bool
        True when the verifier rejected and ``output`` is the fallback's output.
    output : Any
        The released output, the fallback's output, or None (``⊥``). Not part of :meth:`to_dict`.
    epsilon, delta : float
        The estimate that was verified.
    delta_guarantee : float
        EVR is (epsilon, delta_guarantee)-DP: ``max(delta/tau, delta_fallback) + false_positive_rate``.
    delta_guarantee_tight : float
        The sharper ``max(delta/tau, delta_fallback + false_positive_rate * delta_upper)``.
    false_positive_rate : float
        The verifier's proved false-positive bound beta.
    delta_upper : float
        Proven (RDP) upper bound on the mechanism's delta(eps), used in the tight form.
    delta_fallback : float
        Proven delta(eps) of the fallback (0 without one).
    verification : VerificationResult
        The verifier's numbers.
    mechanism : str
        Name of the mechanism.
    wall_seconds : float
        Verification plus release time.
    """

    released: bool
    used_fallback: bool
    output: Any
    epsilon: float
    delta: float
    delta_guarantee: float
    delta_guarantee_tight: float
    false_positive_rate: float
    delta_upper: float
    delta_fallback: float
    verification: VerificationResult
    mechanism: str
    wall_seconds: float

    def to_dict(self) -> dict:
        """JSON-serialisable dict without the output (which may be anything)."""
        d = {k: v for k, v in self.__dict__.items() if k not in ("output", "verification")}
        d["verification"] = self.verification.to_dict()
        return _jsonable(d)


def _parse_estimate(estimate) -> tuple[float, float]:
    if isinstance(estimate, (EpsilonEstimate, DeltaEstimate)):
        return float(estimate.epsilon), float(estimate.delta)
    if isinstance(estimate, Mapping):
        try:
            return float(estimate["epsilon"]), float(estimate["delta"])
        except KeyError:
            raise ValueError(f"estimate mapping needs 'epsilon' and 'delta', got keys {sorted(estimate)}") from None
    if isinstance(estimate, (tuple, list)) and len(estimate) == 2:
        return float(estimate[0]), float(estimate[1])
    raise ValueError(f"estimate must be (epsilon, delta), a mapping or an accountant estimate, got {estimate!r}")


def release(mechanism, data, estimate, *, composition=None, tau: float = 0.9, rho: float | None = None,
            false_positive_rate: float | None = None, fallback=None, fallback_delta: float | None = None,
            rng=None, verifier_rng=None, max_samples: int = DEFAULT_MAX_SAMPLES, backend: str | None = None,
            device: str | None = None) -> ReleaseResult:
    """Estimate–Verify–Release: run ``mechanism`` on ``data`` only if the verifier accepts ``estimate``.

    Parameters
    ----------
    mechanism : VerifiableMechanism or callable
        The mechanism; a plain callable ``f(data, rng)`` needs ``composition``.
    data : Any
        Passed to the mechanism (never to the verifier).
    estimate : (epsilon, delta), mapping, EpsilonEstimate or DeltaEstimate
        The estimated guarantee (e.g. from :class:`~dpaudit.accounting.MonteCarloAccountant` or
        dp_accounting's PLD estimate).
    composition : Composition or convertible, optional
        Privacy description of a plain callable mechanism.
    tau, rho, false_positive_rate : float
        Verifier parameters (see :func:`~dpaudit.accounting.verifier.plan_verification`).
    fallback : VerifiableMechanism or callable, optional
        Run on rejection (paper 004, App. F). A plain callable needs ``fallback_delta``.
    fallback_delta : float, optional
        Proven delta(eps) of the fallback; default: the RDP bound of its composition.
    rng : numpy Generator, int or None
        Randomness of the mechanism (and fallback) — the user's.
    verifier_rng : None
        Leave None (fresh OS entropy, never recorded); tests may pass a seed.
    max_samples : int
        Cap on the verifier's samples per direction.
    backend, device : str, optional
        Where the verifier samples.

    Returns
    -------
    ReleaseResult

    Raises
    ------
    ValueError
        For invalid arguments, or a verification needing more than ``max_samples`` samples.

    References
    ----------
    Paper 004, Alg. 1, Thm (App. B), App. F.
    """
    t0 = time.perf_counter()
    if isinstance(mechanism, VerifiableMechanism):
        comp, func, name = mechanism.composition, mechanism.function, mechanism.name
    elif callable(mechanism):
        if composition is None:
            raise ValueError("a plain callable mechanism needs composition= (its dominating pair description)")
        comp, func, name = as_composition(composition), mechanism, getattr(mechanism, "__name__", "mechanism")
    else:
        raise ValueError(f"mechanism must be a VerifiableMechanism or a callable, got {mechanism!r}")
    eps, delta = _parse_estimate(estimate)
    fb_func = None
    fb_delta = 0.0
    if fallback is not None:
        if isinstance(fallback, VerifiableMechanism):
            fb_func = fallback.function
            fb_delta = delta_upper_bound(fallback.composition, eps) if fallback_delta is None else float(fallback_delta)
        elif callable(fallback):
            if fallback_delta is None:
                raise ValueError("a plain callable fallback needs fallback_delta= (its proven delta at epsilon)")
            fb_func, fb_delta = fallback, float(fallback_delta)
        else:
            raise ValueError(f"fallback must be a VerifiableMechanism or a callable, got {fallback!r}")
        if not (0.0 <= fb_delta <= 1.0) or math.isnan(fb_delta):
            raise ValueError(f"fallback_delta must be in [0, 1], got {fallback_delta!r}")
    result = verify(comp, eps, delta, false_positive_rate=false_positive_rate, tau=tau, rho=rho,
                    max_samples=max_samples, rng=verifier_rng, backend=backend, device=device)
    plan = result.plan
    beta = plan.false_positive_rate
    d_upp = delta_upper_bound(comp, eps)
    gen = as_rng(rng)
    output, used_fb = None, False
    if result.accepted:
        output = func(data, gen)
    elif fb_func is not None:
        output, used_fb = fb_func(data, gen), True
    return ReleaseResult(
        released=result.accepted, used_fallback=used_fb, output=output, epsilon=plan.epsilon, delta=plan.delta,
        delta_guarantee=min(1.0, max(plan.delta / plan.tau, fb_delta) + beta),
        delta_guarantee_tight=min(1.0, max(plan.delta / plan.tau, fb_delta + beta * d_upp)),
        false_positive_rate=beta, delta_upper=d_upp, delta_fallback=fb_delta, verification=result,
        mechanism=name, wall_seconds=time.perf_counter() - t0,
    )



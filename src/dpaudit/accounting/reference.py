"""Reference accountants behind one interface: dp_accounting's PLD and RDP, and prv_accountant.

Used by ``dpaudit account --method pld|rdp|prv`` and by the benchmark. Each takes a
:class:`~dpaudit.accounting.prv.Composition` (or anything :func:`as_composition` accepts).
Which way each errs:

* ``pld`` — dp_accounting's PLD accountant with ``pessimistic_estimate=True`` (default): an upper
  estimate of delta(eps) (connect-the-dots discretisation), max over add and remove;
  ``pessimistic=False`` gives its optimistic (lower) counterpart.
* ``rdp`` — dp_accounting's RDP accountant: a rigorous but loose upper bound.
* ``prv`` — prv_accountant (Gopi, Lee & Wutschitz 2021): returns (lower, estimate, upper).
"""

from __future__ import annotations

import math
import time
from typing import Callable, Sequence

from . import prv as _prv
from .prv import Composition, GaussianStep, LaplaceStep, SubsampledGaussianStep, as_composition

__all__ = ["METHODS", "epsilon", "delta", "online_epsilons", "to_dp_event"]

METHODS = ("pld", "rdp", "prv")


def to_dp_event(composition):
    """The dp_accounting ``DpEvent`` of a composition (Composed of SelfComposed runs)."""
    import dp_accounting as dpa

    comp = as_composition(composition)
    events = []
    for step, count in comp.segments:
        if isinstance(step, GaussianStep):
            e = dpa.GaussianDpEvent(step.sigma)
        elif isinstance(step, SubsampledGaussianStep):
            e = dpa.PoissonSampledDpEvent(step.sampling_rate, dpa.GaussianDpEvent(step.sigma))
        elif isinstance(step, LaplaceStep):
            e = dpa.LaplaceDpEvent(step.scale)
        else:  # pragma: no cover - all step types are covered above
            raise ValueError(f"no DpEvent for {step!r}")
        events.append(dpa.SelfComposedDpEvent(e, count) if count > 1 else e)
    return events[0] if len(events) == 1 else dpa.ComposedDpEvent(events)


def _pld(comp: Composition, value_discretization_interval: float, pessimistic: bool):
    from dp_accounting.pld import privacy_loss_distribution as pldm

    out = None
    for step, count in comp.segments:
        if isinstance(step, LaplaceStep):
            p = pldm.from_laplace_mechanism(step.scale, value_discretization_interval=value_discretization_interval,
                                            pessimistic_estimate=pessimistic)
        else:
            q = 1.0 if isinstance(step, GaussianStep) else step.sampling_rate
            p = pldm.from_gaussian_mechanism(step.sigma, sampling_prob=q, pessimistic_estimate=pessimistic,
                                             value_discretization_interval=value_discretization_interval)
        p = p.self_compose(count) if count > 1 else p
        out = p if out is None else out.compose(p)
    return out


def _prv_parts(comp: Composition):
    from prv_accountant import GaussianMechanism, LaplaceMechanism, PoissonSubsampledGaussianMechanism

    prvs, counts = [], []
    for step, count in comp.segments:
        if isinstance(step, GaussianStep):
            prvs.append(GaussianMechanism(noise_multiplier=step.sigma))
        elif isinstance(step, SubsampledGaussianStep):
            prvs.append(PoissonSubsampledGaussianMechanism(sampling_probability=step.sampling_rate,
                                                           noise_multiplier=step.sigma))
        else:
            prvs.append(LaplaceMechanism(mu=1.0 / step.scale))
        counts.append(count)
    return prvs, counts


def _prv_accountant(comp: Composition, max_counts: Sequence[int], eps_error: float, delta_error: float):
    try:
        from prv_accountant import PRVAccountant
    except ImportError as exc:
        raise ValueError(f"method 'prv' needs the prv-accountant package (pip install prv-accountant): {exc}") from None
    prvs, _ = _prv_parts(comp)
    return PRVAccountant(prvs=prvs, max_self_compositions=list(max_counts), eps_error=eps_error,
                         delta_error=delta_error)


def epsilon(method: str, composition, delta: float, *, value_discretization_interval: float = 1e-4,
            pessimistic: bool = True, eps_error: float = 1e-3, delta_error: float | None = None) -> dict:
    """eps(delta) from a reference accountant.

    Returns
    -------
    dict
        ``{"method", "epsilon", "lower", "upper", "seconds"}`` (lower/upper only for 'prv').

    Raises
    ------
    ValueError
        For an unknown method or invalid delta.
    """
    comp = as_composition(composition)
    delta = _prv._check_delta(delta)
    t0 = time.perf_counter()
    out = {"method": method, "lower": None, "upper": None}
    if method == "pld":
        out["epsilon"] = float(_pld(comp, value_discretization_interval, pessimistic).get_epsilon_for_delta(delta))
    elif method == "rdp":
        from dp_accounting.rdp import rdp_privacy_accountant as rdp

        acc = rdp.RdpAccountant()
        acc.compose(to_dp_event(comp))
        out["epsilon"] = float(acc.get_epsilon(delta))
    elif method == "prv":
        de = delta / 1000.0 if delta_error is None else delta_error
        acc = _prv_accountant(comp, [c for _, c in comp.segments], eps_error, de)
        lo, est, hi = acc.compute_epsilon(delta=delta, num_self_compositions=[c for _, c in comp.segments])
        out.update(epsilon=float(est), lower=float(lo), upper=float(hi))
    else:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    out["seconds"] = time.perf_counter() - t0
    return out


def delta(method: str, composition, epsilon_value: float, *, value_discretization_interval: float = 1e-4,
          pessimistic: bool = True, eps_error: float = 1e-3, delta_error: float = 1e-12) -> dict:
    """delta(eps) from a reference accountant (same return shape as :func:`epsilon`)."""
    comp = as_composition(composition)
    e = float(epsilon_value)
    if not (math.isfinite(e) and e >= 0):
        raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon_value!r}")
    t0 = time.perf_counter()
    out = {"method": method, "lower": None, "upper": None}
    if method == "pld":
        out["delta"] = float(_pld(comp, value_discretization_interval, pessimistic).get_delta_for_epsilon(e))
    elif method == "rdp":
        from dp_accounting.rdp import rdp_privacy_accountant as rdp

        acc = rdp.RdpAccountant()
        acc.compose(to_dp_event(comp))
        out["delta"] = float(acc.get_delta(e))
    elif method == "prv":
        acc = _prv_accountant(comp, [c for _, c in comp.segments], eps_error, delta_error)
        lo, est, hi = acc.compute_delta(epsilon=e, num_self_compositions=[c for _, c in comp.segments])
        out.update(delta=float(est), lower=float(lo), upper=float(hi))
    else:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    out["seconds"] = time.perf_counter() - t0
    return out


def online_epsilons(method: str, composition, deltas, *, value_discretization_interval: float = 1e-4,
                    eps_error: float = 1e-2, progress: Callable[[int, int], None] | None = None) -> dict:
    """eps(delta) after every step 1..k of a composition with a reference accountant.

    PLD composes one step at a time (``compose`` with the previous PLD) and queries after each;
    RDP accumulates the RDP vector (dp_accounting's ``compute_epsilon`` on it); prv_accountant
    builds one accountant for k steps and composes each prefix. All deltas are answered from the
    same composition, so the time covers all of them. Homogeneous compositions only.

    Parameters
    ----------
    deltas : float or sequence of float
        Target delta(s) in (0, 1).

    Returns
    -------
    dict
        ``{"method", "deltas": [...], "epsilon": [[k floats] per delta], "cumulative_seconds": [k floats]}``.
    """
    comp = as_composition(composition)
    ds = [_prv._check_delta(d) for d in (deltas if isinstance(deltas, (list, tuple)) else [deltas])]
    if len(comp.segments) != 1:
        raise ValueError("online reference accounting supports one run of identical steps")
    step, k = comp.segments[0]
    one = Composition(((step, 1),))
    eps: list[list[float]] = [[] for _ in ds]
    cum = []
    t0 = time.perf_counter()

    def record(i, values):
        for j, v in enumerate(values):
            eps[j].append(float(v))
        cum.append(time.perf_counter() - t0)
        if progress:
            progress(i, k)

    if method == "pld":
        base = _pld(one, value_discretization_interval, True)
        cur = None
        for i in range(1, k + 1):
            cur = base if cur is None else cur.compose(base)
            record(i, [cur.get_epsilon_for_delta(d) for d in ds])
    elif method == "rdp":
        import numpy as np
        from dp_accounting.rdp import rdp_privacy_accountant as rdp

        acc = rdp.RdpAccountant()
        acc.compose(to_dp_event(one))
        orders, per_step = np.asarray(acc._orders), np.asarray(acc._rdp)
        for i in range(1, k + 1):
            record(i, [rdp.compute_epsilon(orders, i * per_step, d)[0] for d in ds])
    elif method == "prv":
        acc = _prv_accountant(one, [k], eps_error, min(ds) / 1000.0)
        for i in range(1, k + 1):
            f_n = acc.compute_composition([i])
            record(i, [f_n.compute_epsilon(d, acc.delta_error, acc.eps_error)[1] for d in ds])
    else:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    return {"method": method, "deltas": ds, "epsilon": eps, "cumulative_seconds": cum}

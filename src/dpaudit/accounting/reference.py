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

import time
from typing import Callable, Sequence

from .._validate import check_delta, check_epsilon
from ._pld import build_pld
from .prv import Composition, GaussianStep, SubsampledGaussianStep, as_composition, as_dp_event

__all__ = ["METHODS", "epsilon", "delta", "online_epsilons", "to_dp_event"]

METHODS = ("pld", "rdp", "prv")


to_dp_event = as_dp_event
"""The dp_accounting ``DpEvent`` of a composition (kept for existing callers): the one conversion,
:func:`dpaudit.accounting.prv.as_dp_event`."""


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
    de = check_delta(delta) / 1000.0 if delta_error is None else delta_error
    return _query(method, composition, "epsilon", check_delta(delta), value_discretization_interval, pessimistic,
                  eps_error, de)


def delta(method: str, composition, epsilon_value: float, *, value_discretization_interval: float = 1e-4,
          pessimistic: bool = True, eps_error: float = 1e-3, delta_error: float = 1e-12) -> dict:
    """delta(eps) from a reference accountant (same return shape as :func:`epsilon`)."""
    return _query(method, composition, "delta", check_epsilon(epsilon_value), value_discretization_interval,
                  pessimistic, eps_error, delta_error)


def _query(method: str, composition, query: str, target: float, interval: float, pessimistic: bool,
           eps_error: float, delta_error: float) -> dict:
    """``query`` ('epsilon' at delta = target, or 'delta' at epsilon = target) from one accountant."""
    comp = as_composition(composition)
    t0 = time.perf_counter()
    out = {"method": method, "lower": None, "upper": None}
    at_delta = query == "epsilon"
    if method == "pld":
        pld = build_pld(comp, interval, pessimistic)
        out[query] = float(pld.get_epsilon_for_delta(target) if at_delta else pld.get_delta_for_epsilon(target))
    elif method == "rdp":
        from dp_accounting.rdp import rdp_privacy_accountant as rdp

        from ..privacy.quiet import quiet_dp_accounting

        with quiet_dp_accounting():
            acc = rdp.RdpAccountant()
            acc.compose(as_dp_event(comp))
            out[query] = float(acc.get_epsilon(target) if at_delta else acc.get_delta(target))
    elif method == "prv":
        counts = [c for _, c in comp.segments]
        acc = _prv_accountant(comp, counts, eps_error, delta_error)
        lo, est, hi = (acc.compute_epsilon(delta=target, num_self_compositions=counts) if at_delta
                       else acc.compute_delta(epsilon=target, num_self_compositions=counts))
        out.update({query: float(est), "lower": float(lo), "upper": float(hi)})
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

    Raises
    ------
    ValueError
        If the run is not one run of identical steps, or ``method`` is not one of :data:`METHODS`.
    """
    comp = as_composition(composition)
    ds = [check_delta(d) for d in (deltas if isinstance(deltas, (list, tuple)) else [deltas])]
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
        base = build_pld(one, value_discretization_interval)
        cur = None
        for i in range(1, k + 1):
            cur = base if cur is None else cur.compose(base)
            record(i, [cur.get_epsilon_for_delta(d) for d in ds])
    elif method == "rdp":
        import numpy as np
        from dp_accounting.rdp import rdp_privacy_accountant as rdp

        from ..privacy.quiet import quiet_dp_accounting

        with quiet_dp_accounting():
            acc = rdp.RdpAccountant()
            acc.compose(as_dp_event(one))
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

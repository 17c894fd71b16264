"""Cross-check of a Monte Carlo result against dp_accounting's PLD accountant.

Part of :mod:`.monte_carlo`: :func:`cross_check` records the comparison and warns
(:class:`MonteCarloCrossCheckWarning`) when PLD lies above the Monte Carlo upper bound by more than
its half-width.
"""

from __future__ import annotations

import math
import warnings

from .mc_results import DeltaEstimate, EpsilonEstimate
from .prv import as_composition

__all__ = ["MonteCarloCrossCheckWarning", "cross_check"]


class MonteCarloCrossCheckWarning(UserWarning):
    """dp_accounting's PLD value lies above the Monte Carlo upper bound by more than its half-width."""


def cross_check(result, composition, *, value_discretization_interval: float = 1e-4):
    """Compare a Monte Carlo result with dp_accounting's PLD accountant and record the comparison.

    PLD (pessimistic, connect-the-dots) is an upper estimate of delta(eps) and eps(delta) up to its
    discretisation. When its value lies above the Monte Carlo upper bound by more than the bound's
    half-width (``upper - estimate``), the Monte Carlo run may under-report, and a
    :class:`MonteCarloCrossCheckWarning` is issued. Where PLD does not answer (it fails at very
    small delta, or raises) the comparison is recorded as unavailable and nothing is warned.

    Parameters
    ----------
    result : EpsilonEstimate or DeltaEstimate
        A Monte Carlo result.
    composition : Composition or convertible
        The composition the result is for.
    value_discretization_interval : float
        PLD grid (nats; default 1e-4).

    Returns
    -------
    EpsilonEstimate or DeltaEstimate
        A copy of ``result`` whose ``cross_check`` field holds ``{"method": "pld", "available",
        "value", "mc_estimate", "mc_upper", "half_width", "excess", "flagged", "seconds"}``
        (``excess = value - mc_upper``; ``flagged`` when ``excess > half_width``) or, when PLD
        does not answer, ``{"method": "pld", "available": False, "error": ...}``.

    Raises
    ------
    ValueError
        If ``result`` is not an EpsilonEstimate or DeltaEstimate.
    """
    import dataclasses

    from . import reference

    comp = as_composition(composition)
    if isinstance(result, EpsilonEstimate):
        what, est, upper = f"eps(delta={result.delta:g})", result.epsilon, result.epsilon_upper
        call = lambda: reference.epsilon("pld", comp, result.delta,  # noqa: E731
                                         value_discretization_interval=value_discretization_interval)
    elif isinstance(result, DeltaEstimate):
        what, est, upper = f"delta(eps={result.epsilon:g})", result.delta, result.delta_upper
        call = lambda: reference.delta("pld", comp, result.epsilon,  # noqa: E731
                                       value_discretization_interval=value_discretization_interval)
    else:
        raise ValueError(f"result must be an EpsilonEstimate or a DeltaEstimate, got {type(result).__name__}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = call()
        value = float(ref["epsilon"] if isinstance(result, EpsilonEstimate) else ref["delta"])
        if not math.isfinite(value):
            raise ValueError(f"PLD returned {value}")
    except Exception as ex:  # PLD fails at tiny delta / large eps; the comparison is then unavailable
        rec = {"method": "pld", "available": False, "error": f"{type(ex).__name__}: {ex}"}
        return dataclasses.replace(result, cross_check=rec)
    half = upper - est
    excess = value - upper
    flagged = bool(excess > half)
    rec = {"method": "pld", "available": True, "value": value, "mc_estimate": est, "mc_upper": upper,
           "half_width": half, "excess": excess, "flagged": flagged, "seconds": ref.get("seconds")}
    if flagged:
        warnings.warn(f"Monte Carlo may under-report {what}: dp_accounting PLD gives {value:.6g}, above the "
                      f"Monte Carlo upper bound {upper:.6g} by {excess:.3g} (more than its half-width "
                      f"{half:.3g}); increase num_samples or use the PLD value", MonteCarloCrossCheckWarning,
                      stacklevel=2)
    return dataclasses.replace(result, cross_check=rec)

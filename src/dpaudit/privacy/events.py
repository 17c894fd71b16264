"""dp_accounting's ``DpEvent`` as the one description of a mechanism and its compositions.

Every family speaks of the same mechanisms (sensitivity 1, parametrised by a noise multiplier, as
dp_accounting does): the analytic profiles of :mod:`dpaudit.privacy.profiles` convert to and from
these events, and the accountants (:mod:`dpaudit.accounting`) accept them wherever they accept a
``Composition``. This module holds what both need, written once:

* :func:`event_runs` — a supported event flattened into runs ``[(leaf, count), ...]`` in order
  (``GaussianDpEvent``, ``LaplaceDpEvent``, ``PoissonSampledDpEvent(GaussianDpEvent)`` leaves;
  ``SelfComposedDpEvent``, ``ComposedDpEvent`` and ``NoOpDpEvent`` around them);
* :func:`event_from_runs` — the inverse (``SelfComposedDpEvent`` for runs longer than one,
  ``ComposedDpEvent`` for several runs);
* :func:`pld_from_event` — the one builder of dp_accounting privacy loss distributions (PLDs)
  from an event: each run's PLD from dp_accounting's ``from_gaussian_mechanism`` /
  ``from_laplace_mechanism``, self-composed ``count`` times, the runs composed in order
  (Koskela et al. 2021; Doroshenko et al. 2022).

It imports nothing from dpaudit's families (only :mod:`dpaudit._validate`).
"""

from __future__ import annotations

from typing import Any

from .._validate import check_int, check_rate

__all__ = ["UnsupportedEventError", "event_from_runs", "event_runs", "pld_from_event"]

SUPPORTED = ("GaussianDpEvent, LaplaceDpEvent, PoissonSampledDpEvent(GaussianDpEvent), SelfComposedDpEvent, "
             "ComposedDpEvent")


class UnsupportedEventError(ValueError):
    """A dp_accounting ``DpEvent`` that dpaudit cannot describe (no dominating pair here)."""


def _dpa():
    try:
        import dp_accounting
    except ImportError as exc:  # pragma: no cover - core dependency
        raise UnsupportedEventError(f"dp_accounting is needed to read DpEvents: {exc}") from None
    return dp_accounting


def is_event(obj: Any) -> bool:
    """True when ``obj`` is a dp_accounting ``DpEvent`` (duck-typed on its module)."""
    return (type(obj).__module__ or "").startswith("dp_accounting")


def event_runs(event) -> list[tuple[Any, int]]:
    """Flatten a ``DpEvent`` into runs ``[(leaf_event, count), ...]`` in composition order.

    Leaves are ``GaussianDpEvent``, ``LaplaceDpEvent`` or ``PoissonSampledDpEvent`` of a
    ``GaussianDpEvent`` (its sampling probability checked to lie in (0, 1]). A
    ``SelfComposedDpEvent`` multiplies the count of a single run and repeats a sequence of runs;
    ``NoOpDpEvent`` and ``SelfComposedDpEvent(..., 0)`` contribute nothing.

    Returns
    -------
    list of (DpEvent, int)
        Possibly empty (a composition of no mechanism).

    Raises
    ------
    UnsupportedEventError
        For any other event (the message names it).
    ValueError
        For a sampling probability outside (0, 1] or a negative count.
    """
    dpa = _dpa()
    if isinstance(event, (dpa.GaussianDpEvent, dpa.LaplaceDpEvent)):
        return [(event, 1)]
    if isinstance(event, dpa.PoissonSampledDpEvent):
        if not isinstance(event.event, dpa.GaussianDpEvent):
            raise UnsupportedEventError(
                f"PoissonSampledDpEvent of {type(event.event).__name__} is not supported "
                "(only Poisson-subsampled GaussianDpEvent)"
            )
        check_rate(event.sampling_probability, "PoissonSampledDpEvent.sampling_probability")
        return [(event, 1)]
    if isinstance(event, dpa.SelfComposedDpEvent):
        count = check_int(event.count, "SelfComposedDpEvent.count", minimum=0)
        inner = event_runs(event.event)
        if count == 0:
            return []
        if len(inner) == 1:
            return [(inner[0][0], inner[0][1] * count)]
        return inner * count
    if isinstance(event, dpa.ComposedDpEvent):
        return [run for e in event.events for run in event_runs(e)]
    if isinstance(event, dpa.NoOpDpEvent):
        return []
    raise UnsupportedEventError(f"DpEvent {type(event).__name__} is not supported; supported: {SUPPORTED}")


def event_from_runs(runs) -> Any:
    """The ``DpEvent`` of runs ``[(leaf_event, count), ...]`` (inverse of :func:`event_runs`).

    A run of one is the leaf itself, a longer run a ``SelfComposedDpEvent``; several runs are a
    ``ComposedDpEvent``.

    Raises
    ------
    ValueError
        For no runs.
    """
    dpa = _dpa()
    events = [dpa.SelfComposedDpEvent(e, count) if count > 1 else e for e, count in runs]
    if not events:
        raise ValueError("a DpEvent needs at least one run")
    return events[0] if len(events) == 1 else dpa.ComposedDpEvent(events)


def pld_from_event(event, value_discretization_interval: float, pessimistic: bool = True):
    """dp_accounting ``PrivacyLossDistribution`` of a supported ``DpEvent`` (add/remove adjacency).

    Each run of :func:`event_runs` becomes ``from_gaussian_mechanism`` (``sampling_prob`` = the
    Poisson rate, 1 for a plain Gaussian) or ``from_laplace_mechanism``, ``self_compose``-d for
    counts above one; the runs are composed left to right. With ``pessimistic=True`` the result
    dominates the mechanism (connect-the-dots discretisation, Doroshenko et al. 2022), so its
    delta(eps) is an upper estimate; ``False`` gives the optimistic counterpart.

    Parameters
    ----------
    event : DpEvent
        The mechanism.
    value_discretization_interval : float
        Loss grid (nats).
    pessimistic : bool
        Which discretisation.

    Returns
    -------
    dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution

    Raises
    ------
    UnsupportedEventError, ValueError
        As :func:`event_runs`, or for an event composing no mechanism.
    """
    from dp_accounting.pld import privacy_loss_distribution as pldm

    dpa = _dpa()
    out = None
    for leaf, count in event_runs(event):
        if isinstance(leaf, dpa.LaplaceDpEvent):
            p = pldm.from_laplace_mechanism(leaf.noise_multiplier, value_discretization_interval=value_discretization_interval,
                                            pessimistic_estimate=pessimistic)
        else:
            sampled = isinstance(leaf, dpa.PoissonSampledDpEvent)
            sigma = leaf.event.noise_multiplier if sampled else leaf.noise_multiplier
            q = float(leaf.sampling_probability) if sampled else 1.0
            p = pldm.from_gaussian_mechanism(sigma, sampling_prob=q, pessimistic_estimate=pessimistic,
                                             value_discretization_interval=value_discretization_interval)
        p = p.self_compose(count) if count > 1 else p
        out = p if out is None else out.compose(p)
    if out is None:
        raise ValueError(f"the event {event!r} composes no mechanism")
    return out

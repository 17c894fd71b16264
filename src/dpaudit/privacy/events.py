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
* :func:`leaf_event` / :func:`leaf_parameters` — the one place that builds and reads a leaf
  (``GaussianDpEvent``, ``LaplaceDpEvent``, ``PoissonSampledDpEvent(GaussianDpEvent)``) from and
  to its parameters; the profiles' ``to_event`` and the accountants' conversion
  (:func:`dpaudit.accounting.prv.convert`) both use them;
* :func:`pld_from_event` — the one builder of dp_accounting privacy loss distributions (PLDs)
  from an event: each run's PLD from dp_accounting's ``from_gaussian_mechanism`` /
  ``from_laplace_mechanism``, self-composed ``count`` times, the runs composed in order
  (Koskela et al. 2021; Doroshenko et al. 2022).

It imports nothing from dpaudit's families (only :mod:`dpaudit._validate`).
"""

from __future__ import annotations

from typing import Any

from .._validate import check_int, check_rate

__all__ = ["UnsupportedEventError", "event_from_runs", "event_runs", "leaf_event", "leaf_parameters", "pld_from_event"]

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


NOISES = ("gaussian", "laplace")


def leaf_event(noise: str, noise_multiplier: float, sampling_rate: float | None = None):
    """The leaf ``DpEvent`` of one sensitivity-1 mechanism (the inverse of :func:`leaf_parameters`).

    Parameters
    ----------
    noise : {"gaussian", "laplace"}
        ``GaussianDpEvent`` or ``LaplaceDpEvent``.
    noise_multiplier : float
        Noise standard deviation (Gaussian) or scale (Laplace) over the sensitivity; passed to
        dp_accounting as it is (its events check it).
    sampling_rate : float, optional
        Given: the Gaussian leaf inside ``PoissonSampledDpEvent(sampling_rate, ...)`` (kept even
        at rate 1, as dp_accounting keeps it); None: the leaf itself.

    Returns
    -------
    DpEvent

    Raises
    ------
    UnsupportedEventError
        For a noise other than ``NOISES`` or a Poisson-sampled Laplace leaf (no dominating pair
        here).
    """
    dpa = _dpa()
    if noise not in NOISES:
        raise UnsupportedEventError(f"noise must be one of {NOISES}, got {noise!r}")
    leaf = (dpa.GaussianDpEvent if noise == "gaussian" else dpa.LaplaceDpEvent)(noise_multiplier)
    if sampling_rate is None:
        return leaf
    if noise != "gaussian":
        raise UnsupportedEventError("only the Gaussian leaf can be Poisson-sampled here, got a Laplace one")
    return dpa.PoissonSampledDpEvent(sampling_rate, leaf)


def leaf_parameters(leaf) -> tuple[str, float, float | None]:
    """``(noise, noise_multiplier, sampling_rate)`` of a leaf of :func:`event_runs` (the inverse of
    :func:`leaf_event`): ``noise`` is ``"gaussian"`` or ``"laplace"``, ``sampling_rate`` the
    Poisson rate as a float, or None for an unsampled leaf.

    Raises
    ------
    UnsupportedEventError
        For an event that is not such a leaf.
    """
    dpa = _dpa()
    if isinstance(leaf, dpa.GaussianDpEvent):
        return "gaussian", leaf.noise_multiplier, None
    if isinstance(leaf, dpa.LaplaceDpEvent):
        return "laplace", leaf.noise_multiplier, None
    if isinstance(leaf, dpa.PoissonSampledDpEvent) and isinstance(leaf.event, dpa.GaussianDpEvent):
        return "gaussian", leaf.event.noise_multiplier, float(leaf.sampling_probability)
    raise UnsupportedEventError(f"{type(leaf).__name__} is not a leaf event; supported leaves: {SUPPORTED}")


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

    out = None
    for leaf, count in event_runs(event):
        noise, multiplier, rate = leaf_parameters(leaf)
        if noise == "laplace":
            p = pldm.from_laplace_mechanism(multiplier, value_discretization_interval=value_discretization_interval,
                                            pessimistic_estimate=pessimistic)
        else:
            q = 1.0 if rate is None else rate
            p = pldm.from_gaussian_mechanism(multiplier, sampling_prob=q, pessimistic_estimate=pessimistic,
                                             value_discretization_interval=value_discretization_interval)
        p = p.self_compose(count) if count > 1 else p
        out = p if out is None else out.compose(p)
    if out is None:
        raise ValueError(f"the event {event!r} composes no mechanism")
    return out

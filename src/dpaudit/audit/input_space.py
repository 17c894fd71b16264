"""The input-space search with its certification: the entry point of issue 42's search.

:func:`search` runs :func:`dpaudit.search.input_space.explore` (Hypothesis over what the target declares it
accepts: several special values, per-record arguments, bounds at the type limits, dtypes; the search phase,
no beta spent) and certifies every candidate on fresh outputs with
:func:`~dpaudit.audit.adversarial.certify_pair`, the adversarial
screen's checks (:func:`dpaudit.audit.adversarial.screen_pair`: non-finite outputs, exact values, a
half-line chosen on half of the outputs; float grids left to the trials) at ``beta / K``, ``K`` fixed by the
declaration before the search. Why the certified statements hold together at ``1 - beta``:
``docs/search.md``, *The input-space search*.

Use::

    from dpaudit.audit.input_space import search
    result = search(mechanism, relation, accepts, epsilon=1.0, delta=0.0, beta=0.01, budget=60, seed=0)
    for w in result.witnesses:   # certified leaks, each with the minimal pair it was shrunk to
        print(w.input_class, w.describe_pair(), w.screen.detail)
"""

from __future__ import annotations

from ..search.input_space import InputSearchResult, explore
from .adversarial import certify_pair

__all__ = ["certify_pair", "search"]


def search(mechanism, relation=None, accepts=None, *, epsilon: float, delta: float = 0.0, beta: float = 0.01,
           budget: int = 40, seed: int = 0, **options) -> InputSearchResult:
    """Search the input space a target declares and certify what is found (the two phases of ``docs/search.md``).

    Parameters
    ----------
    mechanism : Mechanism
        The target; its ``neighbouring`` and ``accepts`` attributes are used when ``relation`` or
        ``accepts`` are not given.
    relation : AddRemove or Replace (or their labelled forms), optional
    accepts : AcceptedInputs, optional
        Its ``space`` (:class:`~dpaudit.datasets.InputSpace`) says which families run.
    epsilon, delta : float
        The claim (epsilon in nats).
    beta : float
        Probability that any certified statement is wrong (a correct target is accused with probability
        at most beta).
    budget : int
        Pairs Hypothesis generates per hunt.
    seed : int
    **options
        ``samples``, ``certify_samples``, ``max_calls``, ``max_seconds``, ``pair_timeout``, ``given``,
        ``families``, ``fixed``: as :func:`dpaudit.search.input_space.explore`.

    Returns
    -------
    InputSearchResult
        ``witnesses``: the certified leaks; ``certified``: every candidate certified; what the search spent.

    Raises
    ------
    ValueError
        As :func:`~dpaudit.search.input_space.explore`.

    References
    ----------
    Casacuberta, Shoemate, Vadhan, Wagaman (CCS 2022) for the input classes; Hypothesis (MacIver,
    Hatfield-Dodds et al., JOSS 2019); Clopper & Pearson (1934) and Dwork & Roth (2014, Def. 2.4) for the
    certified bound.
    """
    return explore(mechanism, relation, accepts, certify=certify_pair, epsilon=epsilon, delta=delta, beta=beta,
                   budget=budget, seed=seed, **options)

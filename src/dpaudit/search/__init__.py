"""Finders: ask/tell proposals of neighbouring dataset pairs (paper 000, §5).

============================  ==============================================================
finder                        what it proposes
============================  ==============================================================
``GridFinder``                a fixed list of pairs (user-given or zoo witness pairs), in order
``SpaceGridFinder``           a deterministic grid over the dataset space, extremes first
``RandomFinder``              independent random pairs (``relation.random_pair``)
``BayesFinder``               Bayesian optimisation (Optuna GP or TPE) of the objective
``EvolutionFinder``           evolutionary search (Optuna NSGA-II) of the objective
``ChainFinder``               each finder in turn, e.g. witness pairs then Bayesian search
============================  ==============================================================

The input-space search (:func:`dpaudit.audit.input_space.search`, ``--adversarial``) is not a finder:
it explores what a target's API accepts beyond a box of floats (several special values, per-record
arguments, bounds at the type limits, dtypes) with Hypothesis and certifies what it finds itself.

:func:`make_finder` builds them by their CLI names. The Optuna finders import Optuna lazily
(``pip install dpaudit[search]``); the search space is described in :mod:`dpaudit.search.space`
and ``docs/search.md``.
"""

from .finders import (
    ChainFinder,
    Finder,
    FinderBase,
    FinderStateError,
    GridFinder,
    RandomFinder,
    SpaceGridFinder,
    as_finder,
)
from .optuna_finders import BayesFinder, EvolutionFinder, OptunaFinder, optuna_available
from .space import PairSpace

__all__ = [
    "BayesFinder",
    "ChainFinder",
    "EvolutionFinder",
    "Finder",
    "FinderBase",
    "FinderStateError",
    "GridFinder",
    "OptunaFinder",
    "PairSpace",
    "RandomFinder",
    "SEARCH_METHODS",
    "SpaceGridFinder",
    "as_finder",
    "make_finder",
    "optuna_available",
]

SEARCH_METHODS = ("grid", "grid-space", "random", "bayes", "bayes-tpe", "evolution")


def make_finder(method: str, relation, *, seed: int | None = None):
    """Build a finder over ``relation`` by name.

    Parameters
    ----------
    method : {"grid-space", "random", "bayes", "bayes-tpe", "evolution"}
        ``"bayes"`` is the GP sampler, ``"bayes-tpe"`` the TPE sampler. (``"grid"``, a list of
        given pairs, is built with :class:`GridFinder` directly.)
    relation : AddRemove or Replace
    seed : int, optional
        Seed of the finder's own randomness (not of the trials).

    Returns
    -------
    Finder

    Raises
    ------
    ValueError
        For an unknown method.
    """
    if method == "grid-space":
        return SpaceGridFinder(relation)
    if method == "random":
        return RandomFinder(relation, rng=seed)
    if method == "bayes":
        return BayesFinder(relation, method="gp", seed=seed)
    if method == "bayes-tpe":
        return BayesFinder(relation, method="tpe", seed=seed)
    if method == "evolution":
        return EvolutionFinder(relation, seed=seed)
    raise ValueError(f"unknown search method {method!r}; choose from {', '.join(m for m in SEARCH_METHODS if m != 'grid')}")

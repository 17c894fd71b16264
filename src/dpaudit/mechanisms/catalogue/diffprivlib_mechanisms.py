"""Every diffprivlib mechanism that releases a number or a category, configured as its documentation
says, ready to audit: the diffprivlib rows of ``benchmarks/library_audit.py`` (``docs/library_audits.md``).

Run one from the command line (exit code 1 when a violation is found)::

    dpaudit test dpaudit.mechanisms.catalogue.diffprivlib_mechanisms:snapping --epsilon 1 --tester all --samples 20000 --trials 3 --seed 1
    dpaudit test dpaudit.mechanisms.catalogue.diffprivlib_mechanisms:laplace --epsilon 1 --tester all --samples 20000 --trials 3 --seed 1

Each object carries its neighbouring relation and witness pairs as audit hints. All need diffprivlib
(``pip install 'dpaudit[diffprivlib]'``); importing this module does not import it, the first sample
does. Runs are reproducible from ``--seed`` (:class:`~dpaudit.mechanisms.adapters.DiffprivlibMechanism`).

How a mechanism becomes something to audit
-------------------------------------------
A diffprivlib *mechanism* (``diffprivlib.mechanisms``) randomises a value it is given; its guarantee
is relative to a ``sensitivity``: ``M.randomise(q(D))`` is private for neighbours ``D, D'`` with
``|q(D) - q(D')| <= sensitivity``. An audit needs the query ``q`` too, so each target here is
``f(D) = M.randomise(q(D))`` for a query with the stated sensitivity under the stated relation:

* numeric mechanisms (Laplace family, Gaussian family, Staircase, Snapping, Uniform): ``q`` is the sum
  of the records, which lie in [0, 1]; under add/remove (0 to 10 records) its sensitivity is 1 and it
  lies in [0, 10], the ``lower``/``upper`` given to the bounded variants;
* integer mechanisms (Geometric family, GaussianDiscrete): ``q`` is the number of records at least
  1/2, sensitivity 1 under add/remove, in [0, 10];
* Exponential and PermuteAndFlip: three candidates whose utilities are the counts of records in
  [0, 1/3), [1/3, 2/3), [2/3, 1] (sensitivity 1); the release is the index of the chosen candidate;
* local mechanisms (Binary, ExponentialCategorical, ExponentialHierarchical): ``q`` is the category of
  the one record of the dataset (randomised response); the relation is replace-one on datasets of
  exactly one record, i.e. any two inputs;
* Bingham: records are 2-D vectors in the box ``[-1/sqrt(2), 1/sqrt(2)]^2`` (norm at most 1), ``q``
  is ``X^T X``, which one record added or removed changes by ``x x^T`` (sensitivity 1 as diffprivlib's
  PCA uses it, ``data_norm ** 2``); the release is the unit vector, its sign fixed so that its first
  non-zero coordinate is positive (post-processing).

A new mechanism object is built in every call (cheap next to ``randomise``) with the ``random_state``
the adapter passes, so one seeded ``RandomState`` drives a whole sample.

Witness pairs: ``[0]`` vs ``[0, 1]`` (query 0 vs 1) is where Mironov's (2012) floating-point set shows
(outputs near 0 on the grid of 1's binade) and where bounded variants are near their lower bound;
``[1] * 9`` vs ``[1] * 10`` puts them at the upper bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...datasets import AddRemove, Domain, Replace
from ...datasets import ADVERSARIAL_KINDS, AcceptedInputs
from ..adapters.diffprivlib import DiffprivlibMechanism
from ._hints import with_hints

__all__ = [
    "EPSILON", "DELTA", "UNIFORM_DELTA", "TARGETS",
    "laplace", "laplace_truncated", "laplace_folded", "laplace_bounded_domain", "laplace_bounded_noise",
    "gaussian", "gaussian_analytic", "gaussian_discrete", "geometric", "geometric_truncated", "geometric_folded",
    "exponential", "permute_and_flip", "exponential_categorical", "exponential_hierarchical", "binary",
    "snapping", "staircase", "uniform", "bingham",
]

EPSILON = 1.0
"""Epsilon every mechanism is built with and claims (nats)."""

DELTA = 1e-5
"""Delta of the approximate-DP mechanisms (Gaussian family, LaplaceBoundedNoise)."""

UNIFORM_DELTA = 0.1
"""Delta of the Uniform mechanism, which is (0, delta)-DP: its noise is uniform on a window of width
``sensitivity / delta``, so a shift by the sensitivity moves exactly mass delta."""

MAX_RECORDS = 10
"""Largest dataset of the add/remove relations; the bounded variants use [0, MAX_RECORDS]."""

_SUM_PAIRS = (([[0.0]], [[0.0], [1.0]]), ([[1.0]] * 9, [[1.0]] * 10))
_LOCAL_PAIRS = (([[0.0]], [[1.0]]), ([[0.0]], [[0.5]]), ([[0.5]], [[1.0]]))


def _sum(x) -> float:
    return float(np.clip(np.asarray(x, dtype=float), 0.0, 1.0).sum())


def _count(x) -> int:
    return int(np.count_nonzero(np.asarray(x, dtype=float) >= 0.5))


def _thirds(x) -> list:
    cells = np.minimum((np.clip(np.asarray(x, dtype=float), 0.0, 1.0) * 3).astype(int), 2)
    return np.bincount(cells, minlength=3).astype(float).tolist()


def _category(x) -> int:
    return int(min(int(float(np.asarray(x, dtype=float).ravel()[0]) * 3), 2))


def _mechanisms():
    from diffprivlib import mechanisms  # noqa: PLC0415  (optional dependency)

    return mechanisms


_BOUNDS = {"lower": 0, "upper": MAX_RECORDS}
_CATEGORIES = ["A", "B", "C"]


@dataclass(frozen=True)
class _Randomised:
    """``f(x) = diffprivlib.mechanisms.<cls>(epsilon, sensitivity=1, ...).randomise(query(x))``: the
    rows whose mechanism randomises a number (``bounded``: with ``lower=0, upper=MAX_RECORDS``;
    ``approx``: with ``delta=DELTA``). A module-level class, so that targets pickle."""

    cls: str
    query: Callable
    bounded: bool = False
    approx: bool = False

    def __call__(self, x, random_state=None, epsilon=EPSILON):
        extra = dict(_BOUNDS) if self.bounded else {}
        if self.approx:
            extra["delta"] = DELTA
        mech = getattr(_mechanisms(), self.cls)(epsilon=epsilon, sensitivity=1, random_state=random_state, **extra)
        return mech.randomise(self.query(x))


_f_laplace = _Randomised("Laplace", _sum)
_f_laplace_truncated = _Randomised("LaplaceTruncated", _sum, bounded=True)
_f_laplace_folded = _Randomised("LaplaceFolded", _sum, bounded=True)
_f_laplace_bounded_domain = _Randomised("LaplaceBoundedDomain", _sum, bounded=True)
_f_laplace_bounded_noise = _Randomised("LaplaceBoundedNoise", _sum, approx=True)
_f_gaussian = _Randomised("Gaussian", _sum, approx=True)
_f_gaussian_analytic = _Randomised("GaussianAnalytic", _sum, approx=True)
_f_gaussian_discrete = _Randomised("GaussianDiscrete", _count, approx=True)
_f_geometric = _Randomised("Geometric", _count)
_f_geometric_truncated = _Randomised("GeometricTruncated", _count, bounded=True)
_f_geometric_folded = _Randomised("GeometricFolded", _count, bounded=True)


def _f_exponential(x, random_state=None, epsilon=EPSILON):
    # Adding a record raises one count and lowers none: monotonic utilities (diffprivlib's
    # ``monotonic=True`` uses eps / sensitivity instead of eps / (2 sensitivity)).
    mech = _mechanisms().Exponential(epsilon=epsilon, sensitivity=1, utility=_thirds(x), monotonic=True,
                                     random_state=random_state)
    return mech.randomise()


def _f_permute_and_flip(x, random_state=None, epsilon=EPSILON):
    mech = _mechanisms().PermuteAndFlip(epsilon=epsilon, sensitivity=1, utility=_thirds(x), monotonic=True,
                                        random_state=random_state)
    return mech.randomise()


_UTILITY_LIST = [["A", "B", 1.0], ["A", "C", 2.0], ["B", "C", 1.0]]
_HIERARCHY = [["A", "B"], ["C"]]


def _f_exponential_categorical(x, random_state=None, epsilon=EPSILON):
    mech = _mechanisms().ExponentialCategorical(epsilon=epsilon, utility_list=_UTILITY_LIST,
                                                random_state=random_state)
    return _CATEGORIES.index(mech.randomise(_CATEGORIES[_category(x)]))


def _f_exponential_hierarchical(x, random_state=None, epsilon=EPSILON):
    mech = _mechanisms().ExponentialHierarchical(epsilon=epsilon, hierarchy=_HIERARCHY, random_state=random_state)
    return _CATEGORIES.index(mech.randomise(_CATEGORIES[_category(x)]))


def _f_binary(x, random_state=None, epsilon=EPSILON):
    mech = _mechanisms().Binary(epsilon=epsilon, value0="no", value1="yes", random_state=random_state)
    return int(mech.randomise("yes" if float(np.asarray(x, dtype=float).ravel()[0]) >= 0.5 else "no") == "yes")


_f_snapping = _Randomised("Snapping", _sum, bounded=True)
_f_staircase = _Randomised("Staircase", _sum)


def _f_uniform(x, random_state=None, delta=UNIFORM_DELTA):
    return _mechanisms().Uniform(delta=delta, sensitivity=1, random_state=random_state).randomise(_sum(x))


def _f_bingham(x, random_state=None, epsilon=EPSILON):
    arr = np.asarray(x, dtype=float).reshape(-1, 2)
    # the query's contract: records of norm at most 1 (diffprivlib's PCA clips them to data_norm the same
    # way, models/pca.py); a record beyond it would break the sensitivity the mechanism is given
    norms = np.linalg.norm(arr, axis=1, keepdims=True) if arr.size else np.ones((0, 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        arr = np.where(norms > 1.0, arr / norms, arr)
    vec = _mechanisms().Bingham(epsilon=epsilon, sensitivity=1, random_state=random_state).randomise(arr.T @ arr)
    vec = np.asarray(vec, dtype=float).ravel()
    lead = vec[np.flatnonzero(vec)[0]] if np.any(vec) else 1.0
    return vec if lead > 0 else -vec


_SUM_RELATION = AddRemove(Domain((0.0,), (1.0,)), min_size=0, max_size=MAX_RECORDS)
_LOCAL_RELATION = Replace(Domain((0.0,), (1.0,)), min_size=1, max_size=1)
_H = 0.5 ** 0.5
_BINGHAM_RELATION = AddRemove(Domain((-_H, -_H), (_H, _H)), min_size=0, max_size=MAX_RECORDS)
_BINGHAM_PAIRS = (([[_H, _H]], [[_H, _H], [_H, -_H]]), ([[1e-3, 0.0]], [[1e-3, 0.0], [0.0, _H]]))


def _target(func, name: str, relation, pairs) -> DiffprivlibMechanism:
    return with_hints(DiffprivlibMechanism(func, name=f"diffprivlib_mechanisms:{name}"), relation, pairs, ACCEPTS)


ACCEPTS = AcceptedInputs(kinds=tuple(k for k in ADVERSARIAL_KINDS if k != "nan"),
                         note="records pass through the row's query (clipped sum, count, category) before the "
                              "mechanism, so only what survives it reaches diffprivlib; NaN is not tried (the query's "
                              "NaN would break randomise's sensitivity contract: a fault of the query, not of diffprivlib)")
"""The adversarial inputs the mechanisms are tried on (:mod:`dpaudit.search.adversarial`)."""


laplace = _target(_f_laplace, "laplace", _SUM_RELATION, _SUM_PAIRS)
"""``Laplace(epsilon=1, sensitivity=1).randomise(sum)``: eps-DP in exact arithmetic."""
laplace_truncated = _target(_f_laplace_truncated, "laplace_truncated", _SUM_RELATION, _SUM_PAIRS)
"""``LaplaceTruncated(epsilon=1, sensitivity=1, lower=0, upper=10)``: Laplace clamped to the bounds."""
laplace_folded = _target(_f_laplace_folded, "laplace_folded", _SUM_RELATION, _SUM_PAIRS)
"""``LaplaceFolded(epsilon=1, sensitivity=1, lower=0, upper=10)``: Laplace folded back into the bounds."""
laplace_bounded_domain = _target(_f_laplace_bounded_domain, "laplace_bounded_domain", _SUM_RELATION, _SUM_PAIRS)
"""``LaplaceBoundedDomain(epsilon=1, sensitivity=1, lower=0, upper=10)``: Holohan et al.'s bounded Laplace."""
laplace_bounded_noise = _target(_f_laplace_bounded_noise, "laplace_bounded_noise", _SUM_RELATION, _SUM_PAIRS)
"""``LaplaceBoundedNoise(epsilon=1, delta=1e-5, sensitivity=1)``: (eps, delta)-DP with bounded noise."""
gaussian = _target(_f_gaussian, "gaussian", _SUM_RELATION, _SUM_PAIRS)
"""``Gaussian(epsilon=1, delta=1e-5, sensitivity=1)``: the classical Gaussian mechanism (eps <= 1)."""
gaussian_analytic = _target(_f_gaussian_analytic, "gaussian_analytic", _SUM_RELATION, _SUM_PAIRS)
"""``GaussianAnalytic(epsilon=1, delta=1e-5, sensitivity=1)``: Balle and Wang's analytic calibration."""
gaussian_discrete = _target(_f_gaussian_discrete, "gaussian_discrete", _SUM_RELATION, _SUM_PAIRS)
"""``GaussianDiscrete(epsilon=1, delta=1e-5, sensitivity=1)`` on a count: Canonne et al.'s sampler."""
geometric = _target(_f_geometric, "geometric", _SUM_RELATION, _SUM_PAIRS)
"""``Geometric(epsilon=1, sensitivity=1)`` on a count: two-sided geometric noise, exact in integers."""
geometric_truncated = _target(_f_geometric_truncated, "geometric_truncated", _SUM_RELATION, _SUM_PAIRS)
"""``GeometricTruncated(epsilon=1, sensitivity=1, lower=0, upper=10)`` on a count."""
geometric_folded = _target(_f_geometric_folded, "geometric_folded", _SUM_RELATION, _SUM_PAIRS)
"""``GeometricFolded(epsilon=1, sensitivity=1, lower=0, upper=10)`` on a count."""
exponential = _target(_f_exponential, "exponential", _SUM_RELATION, _SUM_PAIRS)
"""``Exponential(epsilon=1, sensitivity=1, utility=counts of thirds, monotonic=True).randomise()``."""
permute_and_flip = _target(_f_permute_and_flip, "permute_and_flip", _SUM_RELATION, _SUM_PAIRS)
"""``PermuteAndFlip(epsilon=1, sensitivity=1, utility=counts of thirds, monotonic=True).randomise()``."""
exponential_categorical = _target(_f_exponential_categorical, "exponential_categorical", _LOCAL_RELATION,
                                  _LOCAL_PAIRS)
"""``ExponentialCategorical(epsilon=1, utility_list=A-B 1, A-C 2, B-C 1)`` on one record's category."""
exponential_hierarchical = _target(_f_exponential_hierarchical, "exponential_hierarchical", _LOCAL_RELATION,
                                   _LOCAL_PAIRS)
"""``ExponentialHierarchical(epsilon=1, hierarchy=[["A", "B"], ["C"]])`` on one record's category."""
binary = _target(_f_binary, "binary", _LOCAL_RELATION, _LOCAL_PAIRS)
"""``Binary(epsilon=1, value0="no", value1="yes")`` on one record (randomised response)."""
snapping = _target(_f_snapping, "snapping", _SUM_RELATION, _SUM_PAIRS)
"""``Snapping(epsilon=1, sensitivity=1, lower=0, upper=10)``: Mironov's snapping mechanism."""
staircase = _target(_f_staircase, "staircase", _SUM_RELATION, _SUM_PAIRS)
"""``Staircase(epsilon=1, sensitivity=1)`` (gamma by default): Geng and Viswanath's staircase noise."""
uniform = _target(_f_uniform, "uniform", _SUM_RELATION, _SUM_PAIRS)
"""``Uniform(delta=0.1, sensitivity=1)``: (0, 0.1)-DP, uniform noise on a window of width 10."""
bingham = _target(_f_bingham, "bingham", _BINGHAM_RELATION, _BINGHAM_PAIRS)
"""``Bingham(epsilon=1, sensitivity=1).randomise(X^T X)`` on 2-D records of norm at most 1; sign fixed."""

TARGETS = {name: globals()[name] for name in __all__[4:]}
"""The mechanisms of this module by name."""

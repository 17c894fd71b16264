"""diffprivlib's models (``diffprivlib.models``), fitted as documented and audited through their fitted
parameters: the diffprivlib model rows of ``benchmarks/library_audit.py`` (``docs/library_audits.md``).

One output is one fit of a fresh model on the dataset, and the release is the fitted parameter
vector (a 1-D float array), so a finding is about what a user publishes when they publish the model:

* ``gaussian_nb``: ``GaussianNB(epsilon=1, bounds=(0, 1)).partial_fit(X, y, classes=[0, 1])`` (the
  classes declared, as a user with a public label set does); records ``(x, label)`` in [0, 1]^2 with
  ``label = 1`` when the second coordinate is >= 1/2; releases ``theta_`` (2), ``var_`` (2) and
  ``class_count_`` (2), in that order.
* ``linear_regression``: ``LinearRegression(epsilon=1, bounds_X=(0, 1), bounds_y=(0, 1),
  fit_intercept=False).fit(X, y)``; records ``(x, y)`` with x in [1/2, 1] (inside the declared
  bounds; a dataset whose x are all 0 makes the objective linear, and SciPy's minimiser then runs
  for about 0.5 s per fit to a coefficient near 1e152) and y in [0, 1]; releases ``coef_`` (1).
* ``standard_scaler``: ``StandardScaler(epsilon=1, bounds=(0, 1)).fit(X)``; records ``x`` in
  [0, 1]; releases ``mean_`` and ``var_``. (``n_samples_seen_``, the exact record count, is not in
  the release: it is public under replace-one and a leak of ``n`` under add/remove by design.)

diffprivlib 0.6.6 names no neighbouring relation (no docstring states one), so each model is audited
under the relation its calibration assumes and under the other one (``*_add_remove`` /
``*_replace`` targets); read from the installed source:

* GaussianNB (models/naive_bayes.py, ``_noisy_class_counts``, ``_update_mean_variance``): the noisy
  class counts are forced to sum to ``n = y.shape[0]`` and every class mean is truncated to
  ``[lower * n_i, upper * n_i]`` of its noisy count: ``n`` is public, **replace-one**.
* LinearRegression with ``fit_intercept=False`` (models/linear_regression.py,
  ``_construct_regression_obj``): Laplace noise on each coefficient of the quadratic objective with
  one record's largest contribution as sensitivity, no ``n``: **add/remove** (the per-record bound
  also covers replacing a record within the bounds).
* StandardScaler (models/standard_scaler.py, ``_incremental_mean_and_var``): ``tools.nanmean`` and
  ``tools.nanvar`` with ``bounds``, whose sensitivities use ``n``: **replace-one**.

Run one from the command line (exit code 1 when a violation is found)::

    dpaudit test dpaudit.mechanisms.catalogue.diffprivlib_models:gaussian_nb --epsilon 1 --tester all --samples 5000 --trials 2 --seed 1

One fit takes about 2-4 ms (measured on the project's loaded 2-core machine), 20 to 40 times a
``diffprivlib.tools`` call, so the rows use smaller budgets.
"""

from __future__ import annotations

import warnings

import numpy as np

from ...datasets import AcceptedInputs, AddRemove, Domain, Replace
from ..adapters.diffprivlib import DiffprivlibMechanism
from ._hints import with_hints

__all__ = ["EPSILON", "BOUNDS", "TARGETS", "gaussian_nb", "gaussian_nb_add_remove", "linear_regression",
           "linear_regression_replace", "standard_scaler", "standard_scaler_add_remove"]

EPSILON = 1.0
"""Epsilon every model is fitted with and claims (nats)."""

BOUNDS = (0.0, 1.0)
"""Public bounds of every feature (and of the regression target)."""

_SQUARE = Domain((0.0, 0.0), (1.0, 1.0))
_LINE = Domain((0.0,), (1.0,))


def _models():
    from diffprivlib import models  # noqa: PLC0415  (optional dependency)

    return models


def _fresh_accountant(accountant):
    if accountant is not None:
        return accountant
    from diffprivlib import BudgetAccountant  # noqa: PLC0415

    return BudgetAccountant()


def _records(x, dim: int) -> np.ndarray:
    """The dataset as an ``(n, dim)`` float array (the adapter passes 1-D data flattened)."""
    return np.asarray(x, dtype=float).reshape(-1, dim)


def _gaussian_nb(x, random_state=None, accountant=None, epsilon=EPSILON):
    """Fit GaussianNB on records ``(feature, label coordinate)``; release theta_, var_, class_count_."""
    data = _records(x, 2)
    labels = (data[:, 1] >= 0.5).astype(int)
    model = _models().GaussianNB(epsilon=epsilon, bounds=BOUNDS, random_state=random_state,
                                 accountant=_fresh_accountant(accountant))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.partial_fit(data[:, :1], labels, classes=[0, 1])
    return np.concatenate([model.theta_.ravel(), model.var_.ravel(), model.class_count_.ravel()])


def _linear_regression(x, random_state=None, accountant=None, epsilon=EPSILON):
    """Fit LinearRegression(fit_intercept=False) on records ``(x, y)``; release coef_."""
    data = _records(x, 2)
    model = _models().LinearRegression(epsilon=epsilon, bounds_X=BOUNDS, bounds_y=BOUNDS, fit_intercept=False,
                                       random_state=random_state, accountant=_fresh_accountant(accountant))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(data[:, :1], data[:, 1])
    return np.asarray(model.coef_, dtype=float).ravel()


def _standard_scaler(x, random_state=None, accountant=None, epsilon=EPSILON):
    """Fit StandardScaler on 1-D records; release mean_ and var_."""
    data = _records(x, 1)
    model = _models().StandardScaler(epsilon=epsilon, bounds=BOUNDS, random_state=random_state,
                                     accountant=_fresh_accountant(accountant))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(data)
    return np.concatenate([np.ravel(model.mean_), np.ravel(model.var_)]).astype(float)


ACCEPTS_2D = AcceptedInputs(
    record=lambda v: (v, 0.0), base=((0.5, 0.0), (0.5, 1.0)),
    note="diffprivlib.models take X array-like of numbers (scikit-learn's validation: NaN and infinities are "
         "rejected by GaussianNB and LinearRegression); the adversarial value is put in the feature of a record "
         "labelled 0 / with target 0, next to one record of each label")
"""Adversarial inputs of the two-column models: the value in the feature, the label / target 0."""

ACCEPTS_1D = AcceptedInputs(
    note="StandardScaler takes X array-like of numbers; its code counts NaN as missing values (np.isnan in "
         "partial_fit), but diffprivlib 0.6.6 rejects NaN and infinities in scikit-learn's validation (measured: "
         "ValueError); every adversarial kind is tried")
"""Adversarial inputs of StandardScaler (one feature)."""


def _target(func, name: str, relation, pairs, accepts) -> DiffprivlibMechanism:
    func.__name__ = func.__qualname__ = name
    return with_hints(DiffprivlibMechanism(func, name=f"diffprivlib_models:{name}"), relation, pairs, accepts)


def _named(func, name: str):
    """A copy of ``func`` under another name (each target reports its own)."""
    def call(x, random_state=None, accountant=None, epsilon=EPSILON):
        return func(x, random_state=random_state, accountant=accountant, epsilon=epsilon)
    call.__name__ = call.__qualname__ = name
    return call


_NB_REPLACE_PAIRS = (([[0.5, 0.0], [0.5, 0.0]], [[0.5, 0.0], [0.5, 1.0]]), ([[0.0, 0.0], [0.0, 1.0]],
                                                                             [[1.0, 0.0], [0.0, 1.0]]))
_NB_ADD_REMOVE_PAIRS = (([[0.5, 0.0]], [[0.5, 0.0], [0.5, 1.0]]),
                        ([[0.5, 0.0], [0.5, 1.0]], [[0.5, 0.0], [0.5, 1.0], [0.5, 1.0]]))
_LR_DOMAIN = Domain((0.5, 0.0), (1.0, 1.0))
_LR_ADD_REMOVE_PAIRS = (([[0.5, 0.0]], [[0.5, 0.0], [1.0, 0.0]]), ([[1.0, 0.0]], [[1.0, 0.0], [1.0, 0.0]]))
_LR_REPLACE_PAIRS = (([[0.5, 0.0], [0.5, 0.0]], [[0.5, 0.0], [1.0, 0.0]]),
                     ([[0.5, 0.0], [1.0, 0.0]], [[1.0, 0.0], [1.0, 0.0]]))
_SS_REPLACE_PAIRS = (([[0.0]], [[1.0]]), ([[0.0], [0.0]], [[0.0], [1.0]]), ([[0.0]] * 5, [[0.0]] * 4 + [[1.0]]))
_SS_ADD_REMOVE_PAIRS = (([[0.0]], [[0.0], [1.0]]), ([[1.0]], [[1.0], [0.0]]))

gaussian_nb = _target(_named(_gaussian_nb, "gaussian_nb"), "gaussian_nb", Replace(_SQUARE, min_size=1, max_size=10),
                      _NB_REPLACE_PAIRS, ACCEPTS_2D)
"""GaussianNB under replace-one (what its calibration assumes): releases theta_, var_, class_count_."""
gaussian_nb_add_remove = _target(_named(_gaussian_nb, "gaussian_nb_add_remove"), "gaussian_nb_add_remove",
                                 AddRemove(_SQUARE, min_size=1, max_size=10), _NB_ADD_REMOVE_PAIRS, ACCEPTS_2D)
"""GaussianNB under add/remove (1 to 10 records): its class counts sum to the private ``n``."""
linear_regression = _target(_named(_linear_regression, "linear_regression"), "linear_regression",
                            AddRemove(_LR_DOMAIN, min_size=1, max_size=10), _LR_ADD_REMOVE_PAIRS, ACCEPTS_2D)
"""LinearRegression(fit_intercept=False) under add/remove (what its calibration assumes): releases coef_."""
linear_regression_replace = _target(_named(_linear_regression, "linear_regression_replace"),
                                    "linear_regression_replace", Replace(_LR_DOMAIN, min_size=1, max_size=10),
                                    _LR_REPLACE_PAIRS, ACCEPTS_2D)
"""LinearRegression(fit_intercept=False) under replace-one."""
standard_scaler = _target(_named(_standard_scaler, "standard_scaler"), "standard_scaler",
                          Replace(_LINE, min_size=1, max_size=10), _SS_REPLACE_PAIRS, ACCEPTS_1D)
"""StandardScaler under replace-one (what its calibration assumes): releases mean_ and var_."""
standard_scaler_add_remove = _target(_named(_standard_scaler, "standard_scaler_add_remove"),
                                     "standard_scaler_add_remove", AddRemove(_LINE, min_size=1, max_size=10),
                                     _SS_ADD_REMOVE_PAIRS, ACCEPTS_1D)
"""StandardScaler under add/remove (1 to 10 records): its mean's and variance's sensitivities use ``n``."""

TARGETS = {name: globals()[name] for name in __all__[3:]}
"""The models of this module by name."""

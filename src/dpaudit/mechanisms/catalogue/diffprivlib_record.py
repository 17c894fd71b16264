"""diffprivlib models at the violations of the published record, ready to audit: the rows of
``benchmarks/library_audit.py`` that check, on the installed diffprivlib (0.6.6), the two diffprivlib
violations reported by Re:cord-play (Cebere, Erb, Desfontaines, Bellet, Fitzsimons, "Privacy in
Theory, Bugs in Practice: Grey-Box Auditing of Differential Privacy Libraries", PoPETs 2026,
arXiv 2602.17454; filed as IBM/differential-privacy-library#105 and #106).

Run one from the command line (exit code 1 when a violation is found)::

    dpaudit test dpaudit.mechanisms.catalogue.diffprivlib_record:linear_regression_diagonal --epsilon 1 --tester all --samples 4000 --trials 2 --seed 1

* ``linear_regression_diagonal``: ``diffprivlib.models.LinearRegression(epsilon=1, bounds_X=(0, 1),
  bounds_y=(0, 1), fit_intercept=False)`` fitted on 2-D records ``(x, y)`` in [0, 1]^2, releasing
  ``coef_`` (one feature, one target). In diffprivlib 0.6.6 (models/linear_regression.py,
  ``_construct_regression_obj``) the noise of the 2nd-degree diagonal coefficient ``sum x_i^2`` is
  calibrated to ``max(|bounds_X[0][i]|, |bounds_X[0][i]|) ** 2``, the lower bound twice: 0 for
  ``bounds_X = (0, 1)``, so that coefficient enters the objective without noise and ``coef_`` is
  ``(sum x y + Laplace) / sum x^2`` exactly. One record moving ``x`` from 0 to 1 rescales the
  released coefficient's noise by the exact ``sum x^2`` (0.01 vs 1.01 on the witness pair): the
  privacy loss grows with ``|coef_|`` without bound. One public record ``(0.1, 0)`` is always in the
  data (so ``sum x^2 >= 0.01`` and the
  objective has a minimum); the relation is replace-one (1 to 4 private records).
* ``logistic_regression_labels``: ``diffprivlib.models.LogisticRegression(epsilon=1, data_norm=1)``
  fitted on records ``(x, c)`` in [0, 1]^2 with label ``min(2, floor(3 c))``, releasing the number
  of coefficient rows and the first coefficient. In diffprivlib 0.6.6
  (models/logistic_regression.py, ``fit``) the label set is ``np.unique(y)`` of the private labels:
  a record with a label no other record has adds a class, and the fitted model has 3 one-vs-rest
  coefficient rows instead of 1 (and splits epsilon three ways): a distinguishing event of
  probability 1. Two public records ``(0, label 0)`` and ``(1, label 1)`` are always in the data
  (LogisticRegression raises on one class); the relation is replace-one (1 to 4 private records:
  ``mechanisms.Vector`` is given ``n``, Chaudhuri et al.'s objective perturbation), under which the
  replaced record's label may be the only one of its class.

Both are audited on their witness pairs first (``witness_pairs``), then by the search.
"""

from __future__ import annotations

import warnings

import numpy as np

from ...datasets import AcceptedInputs, Domain, Replace
from ..adapters.diffprivlib import DiffprivlibMechanism
from ._hints import with_hints

__all__ = ["EPSILON", "TARGETS", "linear_regression_diagonal", "logistic_regression_labels"]

EPSILON = 1.0
"""Epsilon both models are fitted with and claim (nats)."""

LINEAR_PUBLIC = ((0.1, 0.0),)
"""The public ``(x, y)`` record always in the linear regression's data (keeps ``sum x^2 >= 0.01``)."""

LOGISTIC_PUBLIC = ((0.0, 0), (1.0, 1))
"""The public ``(x, label)`` records always in the logistic regression's data (classes 0 and 1)."""


def _models():
    from diffprivlib import models  # noqa: PLC0415  (optional dependency)

    return models


def _linear(x, random_state=None, accountant=None, epsilon=EPSILON):
    """``coef_`` of LinearRegression fitted on the public record and the records ``x`` (shape (n, 2))."""
    data = np.vstack([np.asarray(LINEAR_PUBLIC, dtype=float), np.asarray(x, dtype=float).reshape(-1, 2)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _models().LinearRegression(epsilon=epsilon, bounds_X=(0.0, 1.0), bounds_y=(0.0, 1.0),
                                           fit_intercept=False, random_state=random_state, accountant=accountant)
        model.fit(data[:, :1], data[:, 1])
    return np.asarray(model.coef_, dtype=float).reshape(-1)


def label(c):
    """The class of a record's second coordinate ``c`` in [0, 1]: its third (0, 1 or 2)."""
    return np.minimum(2, np.floor(3 * np.asarray(c, dtype=float))).astype(int)


def _logistic(x, random_state=None, accountant=None, epsilon=EPSILON):
    """(number of coefficient rows, first coefficient) of LogisticRegression fitted on the public
    records and the records ``x`` (shape (n, 2): feature, label coordinate)."""
    x = np.asarray(x, dtype=float).reshape(-1, 2)
    features = np.concatenate([[r[0] for r in LOGISTIC_PUBLIC], x[:, 0]]).reshape(-1, 1)
    labels = np.concatenate([[int(r[1]) for r in LOGISTIC_PUBLIC], label(x[:, 1])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _models().LogisticRegression(epsilon=epsilon, data_norm=1.0, random_state=random_state,
                                             accountant=accountant)
        model.fit(features, labels)
    return np.array([model.coef_.shape[0], model.coef_[0, 0]], dtype=float)


ACCEPTS = AcceptedInputs(note="diffprivlib's models take array_like X and y checked by scikit-learn's validate_data "
                              "(NaN and infinite values raise): every adversarial kind is tried, a raise is a pass")
"""The adversarial inputs the models are tried on (:mod:`dpaudit.search.adversarial`)."""

linear_regression_diagonal = with_hints(
    DiffprivlibMechanism(_linear, name="diffprivlib_record:linear_regression_diagonal"),
    Replace(Domain((0.0, 0.0), (1.0, 1.0)), min_size=1, max_size=4),
    (([[0.0, 0.0]], [[1.0, 0.0]]), ([[0.0, 1.0], [0.0, 0.0]], [[0.0, 1.0], [1.0, 0.0]])), ACCEPTS)
"""LinearRegression's ``coef_`` under replace-one: the ``sum x^2`` coefficient is released without
noise (IBM/differential-privacy-library#105)."""

logistic_regression_labels = with_hints(
    DiffprivlibMechanism(_logistic, name="diffprivlib_record:logistic_regression_labels"),
    Replace(Domain((0.0, 0.0), (1.0, 1.0)), min_size=1, max_size=4),
    (([[0.5, 0.0]], [[0.5, 1.0]]), ([[0.5, 0.0], [0.5, 0.0]], [[0.5, 0.0], [0.5, 1.0]])), ACCEPTS)
"""LogisticRegression's coefficient count and first coefficient under replace-one: the label set is
read from the private labels (IBM/differential-privacy-library#106)."""

TARGETS = {name: globals()[name] for name in __all__[2:]}
"""The targets of this module by name."""

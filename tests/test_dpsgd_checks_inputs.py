"""Bad input to the DP-SGD checks' statistical helpers gets a clear error naming the value."""
import math

import numpy as np
import pytest

from dpaudit.dpsgd.checks import chernoff_p, chi2_lower, cosine_p, dispersion_p


def test_chi2_lower_rejects_negative_dof_and_keeps_valid_values():
    with pytest.raises(ValueError, match="-1"):
        chi2_lower(3.0, -1)
    with pytest.raises(ValueError, match="degrees of freedom"):
        chi2_lower([1.0, 2.0], [2.0, np.inf])
    p = chi2_lower([0.5, 10.0], [4, 4])
    assert 0 < p[0] < p[1] < 1
    assert chi2_lower(5.0, 0) == 1.0


def test_cosine_p_rejects_dimension_below_two():
    with pytest.raises(ValueError, match="dim must be an integer >= 2, got 1"):
        cosine_p(0.3, 1)
    assert cosine_p(0.0, 10) == pytest.approx(1.0)
    assert cosine_p(0.99, 10) < 1e-6


def test_chernoff_p_rejects_non_finite_statistic_and_bad_span():
    logmgf = lambda lam: lam * lam / 2  # noqa: E731 - standard normal
    with pytest.raises(ValueError, match="nan"):
        chernoff_p(logmgf, float("nan"), 0.0, 1.0)
    with pytest.raises(ValueError, match="span"):
        chernoff_p(logmgf, 3.0, 0.0, 0.0)
    # the two-sided Chernoff bound of a standard normal at 3: 2 exp(-4.5)
    assert chernoff_p(logmgf, 3.0, 0.0, 1.0) == pytest.approx(2 * math.exp(-4.5), rel=1e-4)


@pytest.mark.parametrize("steps, rate, counts, word", [
    (0, 0.1, [0, 0], "steps"), (10, 1.0, [10, 10], "rate"), (10, 0.0, [0, 0], "rate"),
    (10, 0.1, [1, 11], "counts"), (10, 0.1, [1.5, 2], "counts"), (10, 0.1, [1, np.nan], "counts"),
])
def test_dispersion_p_rejects_bad_arguments(steps, rate, counts, word):
    with pytest.raises(ValueError, match=word):
        dispersion_p(np.asarray(counts, dtype=float), steps, rate)

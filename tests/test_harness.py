"""The shared statistical harness (tests/_harness.py) and the seed fixtures (tests/conftest.py):
each assertion passes and fails where it should, with the counts in its message; the seeds are
stable and differ between tests."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from _harness import (
    BASE_SEED,
    LEVEL,
    assert_coverage_at_least,
    assert_rate_above,
    assert_rate_at_most,
    coverage_pvalue,
    node_seed,
    rate_pvalue,
)


def test_pvalues_are_the_exact_one_sided_binomial_tails():
    assert rate_pvalue(12, 40, 0.2) == pytest.approx(stats.binom.sf(11, 40, 0.2), rel=1e-12)
    assert coverage_pvalue(31, 40, 0.9) == pytest.approx(stats.binom.cdf(31, 40, 0.9), rel=1e-12)
    assert rate_pvalue(0, 40, 0.2) == 1.0 and coverage_pvalue(40, 40, 0.9) == 1.0
    assert LEVEL == 1e-3


def test_rate_at_most_passes_plausible_counts_and_fails_with_the_counts_in_the_message():
    assert_rate_at_most(8, 40, 0.2)  # exactly the promised rate
    with pytest.raises(AssertionError, match=r"25/40 failures .* rate <= 0\.2"):
        assert_rate_at_most(25, 40, 0.2)
    # the level is respected: p(16 of 40 at 0.2) is about 7e-3
    p = rate_pvalue(16, 40, 0.2)
    assert 1e-3 < p < 1e-2
    assert_rate_at_most(16, 40, 0.2)
    with pytest.raises(AssertionError, match="16/40"):
        assert_rate_at_most(16, 40, 0.2, level=1e-2)


def test_coverage_at_least_is_the_other_direction():
    assert_coverage_at_least(95, 100, 0.95)
    assert_coverage_at_least(100, 100, 0.95)
    with pytest.raises(AssertionError, match=r"80/100 covered .* coverage >= 0\.95"):
        assert_coverage_at_least(80, 100, 0.95)


def test_rate_above_catches_a_broken_variant_and_fails_for_a_correct_one():
    assert_rate_above(50, 100, 0.2)
    with pytest.raises(AssertionError, match=r"20/100 .* not caught"):
        assert_rate_above(20, 100, 0.2)
    with pytest.raises(AssertionError):
        assert_rate_above(30, 100, 0.2, level=1e-6)  # p about 1e-2


@pytest.mark.parametrize("args", [(-1, 10, 0.2), (11, 10, 0.2), (1.5, 10, 0.2), (1, 10, 0.0), (1, 10, math.nan)])
def test_invalid_counts_are_rejected(args):
    with pytest.raises(ValueError):
        rate_pvalue(*args)


def test_false_failure_probability_is_at_most_the_level():
    """Exact check of the documented false-failure probability: at the promised rate, the chance
    that assert_rate_at_most fails is P[p <= level] <= level."""
    n, rate = 150, 0.2
    k = np.arange(n + 1)
    fails = np.array([rate_pvalue(int(i), n, rate) <= LEVEL for i in k])
    assert 0 < stats.binom.pmf(k[fails], n, rate).sum() <= LEVEL


def test_seed_fixtures_are_stable_and_per_test(request, seed, rng, base_seed):
    assert base_seed == BASE_SEED
    assert seed == node_seed(request.node.nodeid)
    assert rng.random() == np.random.default_rng(seed).random()
    assert node_seed(request.node.nodeid) != node_seed(request.node.nodeid + "x")
    assert 0 <= seed < 2**63


def test_node_seed_does_not_depend_on_the_process():
    """Unlike Python's salted ``hash``, the seed is the same in another interpreter (another
    xdist worker, another run)."""
    code = "import sys; sys.path.insert(0, sys.argv[1]); from _harness import node_seed; print(node_seed('t.py::x'))"
    here = os.path.dirname(os.path.abspath(__file__))
    seen = {
        subprocess.run([sys.executable, "-c", code, here], env={**os.environ, "PYTHONHASHSEED": h},
                       capture_output=True, text=True, check=True).stdout.strip()
        for h in ("1", "2")
    }
    assert seen == {str(node_seed("t.py::x"))}


@pytest.mark.parametrize("case", ["a", "b"])
def test_parametrised_cases_get_different_seeds(request, case, seed):
    other = request.node.nodeid.replace(f"[{case}]", "[b]" if case == "a" else "[a]")
    assert seed != node_seed(other)

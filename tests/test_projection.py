"""Informative columns (dpaudit.estimators._projection) and the tester's exact regions on them.

Reference law: a report of ``d`` bits of which the first ``k`` are randomized response on one
secret bit, each reporting it with probability ``a = e^(eps/k) / (1 + e^(eps/k))``, and the others
fair coins independent of everything. The privacy loss is ``(eps/k) * (#agreeing - #disagreeing)``
over the first ``k`` bits, so the mechanism is exactly eps-DP (the all-agreeing pattern has loss
eps) and every optimal region is a cylinder over the first ``k`` columns.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from _harness import assert_rate_at_most
from dpaudit.estimators._projection import informative_columns
from dpaudit.estimators.histogram import HistogramBound, HistogramHockeyStick
from dpaudit.estimators.base import NotApplicable
from dpaudit.privacy.claims import PureDP
from dpaudit.testers import HockeyStickTester


def bit_reports(n, d, k, eps, rng):
    """``n`` reports on the secret 1 (P) and on the secret 0 (Q), shape (n, d) each."""
    a = math.exp(eps / k) / (1.0 + math.exp(eps / k))
    p = (rng.random((n, d)) < 0.5).astype(float)
    q = (rng.random((n, d)) < 0.5).astype(float)
    p[:, :k] = rng.random((n, k)) < a
    q[:, :k] = rng.random((n, k)) >= a
    return p, q


def test_keeps_exactly_the_informative_bits():
    rng = np.random.default_rng(11)
    p, q = bit_reports(20_000, 12, 3, 1.5, rng)
    p[:, [0, 5]] = p[:, [5, 0]]  # informative columns need not come first
    q[:, [0, 5]] = q[:, [5, 0]]
    assert informative_columns(p, q) == (1, 2, 5)


def test_keeps_a_continuous_informative_column():
    rng = np.random.default_rng(12)
    n = 20_000
    p, q = rng.laplace(0.0, 1.0, (n, 5)), rng.laplace(0.0, 1.0, (n, 5))
    p[:, 3] += 1.0
    assert informative_columns(p, q) == (3,)


@pytest.mark.parametrize("case", ["none", "all", "one-column", "too-few-rows"])
def test_refuses_when_no_proper_subset_carries_the_difference(case):
    rng = np.random.default_rng(13)
    n = 20_000
    p, q = rng.laplace(0.0, 1.0, (n, 4)), rng.laplace(0.0, 1.0, (n, 4))
    if case == "all":
        p += 1.0
    elif case == "one-column":
        p, q = p[:, :1] + 1.0, q[:, :1]
    elif case == "too-few-rows":
        p, q = p[:50] + 1.0, q[:50]
    assert informative_columns(p, q) is None


def test_refuses_when_the_difference_lives_in_a_pair_of_dropped_columns():
    """Column 2 = column 1 XOR the secret: both uniform on either dataset, their joint law tells
    the secret. Column 0 is informative on its own. Projecting onto column 0 would hide the
    pair's (infinite) privacy loss, so the rule refuses and the classifier gets the output."""
    rng = np.random.default_rng(14)
    n = 20_000
    p, q = bit_reports(n, 3, 1, 1.0, rng)
    p[:, 2] = 1.0 - p[:, 1]  # secret 1: column 2 = NOT column 1
    q[:, 2] = q[:, 1]        # secret 0: column 2 = column 1
    assert informative_columns(p[:, :2], q[:, :2]) == (0,)  # column 1 alone: uninformative
    assert informative_columns(p, q) is None


def test_refuses_when_the_dropped_columns_together_differ():
    """Eight columns, each a little different (none passes its own corrected test, their sum
    does), next to one clearly informative column."""
    rng = np.random.default_rng(15)
    n = 40_000
    p, q = rng.normal(0.0, 1.0, (n, 9)), rng.normal(0.0, 1.0, (n, 9))
    p[:, 0] += 1.0
    p[:, 1:] += 0.035
    single = [informative_columns(p[:, [0, j]], q[:, [0, j]]) for j in range(1, 9)]
    assert sum(s == (0,) for s in single) >= 5  # most pass one at a time
    assert informative_columns(p, q) is None


@pytest.mark.slow
def test_refuses_an_identically_distributed_remainder_rarely():
    """Under its null (the dropped columns have the same law on both sides) the rule refuses a
    projection it should make in about 2 * alpha of runs: a refusal only costs the classifier's
    path, but it should not be common."""
    runs, refused = 200, 0
    for r in range(runs):
        rng = np.random.default_rng(5000 + r)
        p, q = bit_reports(5_000, 10, 2, 1.5, rng)
        kept = informative_columns(p, q)
        assert kept in (None, (0, 1)), kept  # a dropped informative bit or a kept coin: power/size failure
        refused += kept is None
    assert_rate_at_most(refused, runs, 0.01, what="refused")


def test_tester_takes_exact_regions_on_the_informative_columns():
    rng = np.random.default_rng(16)
    p, q = bit_reports(20_000, 16, 3, 1.0, rng)
    tester = HockeyStickTester()
    assert tester.region_path(p, q) == "classifier"  # 2^16 patterns: not discrete enough as a whole
    out = tester.test(p, q, PureDP(0.5), beta=0.05, rng=3)
    assert isinstance(out.bounds[0], HistogramBound)
    assert out.violation  # eps = 1 against a claim of 0.5
    assert all(b.region.startswith(("[", "columns")) and "columns (0, 1, 2) of 16: output in" in b.region
               for b in out.bounds)
    assert out.epsilon_lower_bound <= 1.0


def test_tester_falls_back_to_the_classifier_unchanged():
    """No proper subset informative: the "auto" path gives the classifier's evidence exactly as
    regions="classifier" does with the same seed (the attempt does not touch its random stream)."""
    rng = np.random.default_rng(17)
    n = 3_000
    p, q = rng.laplace(0.0, 1.0, (n, 3)), rng.laplace(0.0, 1.0, (n, 3))
    p += 0.5
    claim = PureDP(0.1)
    auto = HockeyStickTester().test(p, q, claim, beta=0.1, rng=np.random.default_rng(5))
    forced = HockeyStickTester(regions="classifier").test(p, q, claim, beta=0.1, rng=np.random.default_rng(5))
    assert not isinstance(auto.bounds[0], HistogramBound)
    assert [b.lower for b in auto.bounds] == [b.lower for b in forced.bounds]
    assert [b.region for b in auto.bounds] == [b.region for b in forced.bounds]


def test_estimator_columns_argument():
    rng = np.random.default_rng(18)
    p, q = bit_reports(5_000, 6, 2, 1.0, rng)
    est = HistogramHockeyStick()
    with pytest.raises(ValueError, match="columns must be"):
        est.estimate(p, q, epsilon=0.1, beta=0.1, rng=1, columns="some")
    with pytest.raises(NotApplicable, match="tolerance='split'"):
        HistogramHockeyStick(tolerance="l1").estimate(p, q, epsilon=0.1, beta=0.1, rng=1, columns="informative")
    same = np.random.default_rng(19).laplace(0.0, 1.0, (5_000, 3))
    with pytest.raises(NotApplicable, match="no proper subset"):
        est.estimate(same, same[::-1].copy(), epsilon=0.1, beta=0.1, rng=1, columns="informative")
    ev = est.estimate(p, q, epsilon=0.1, beta=0.1, rng=1, columns="informative")
    assert "columns (0, 1) of 6: " in ev.forward.region


@pytest.mark.slow
def test_projected_regions_do_not_accuse_a_tight_mechanism_beyond_beta():
    """Bit reports at their exact guarantee eps = 1 (three informative bits of eight), tested by
    the default tester against PureDP(1): accused in at most a beta fraction of seeded runs, and
    the projection is taken in (nearly) all of them."""
    runs, beta, accused, projected = 200, 0.2, 0, 0
    for r in range(runs):
        p, q = bit_reports(3_000, 8, 3, 1.0, np.random.default_rng(7000 + r))
        out = HockeyStickTester().test(p, q, PureDP(1.0), beta=beta, rng=r)
        accused += out.violation
        projected += isinstance(out.bounds[0], HistogramBound)
    assert projected >= 0.9 * runs
    assert_rate_at_most(accused, runs, beta, what="accused")


def test_exact_regions_option_uses_informative_columns_or_raises():
    """regions="exact": a vector output whose difference lives in a few columns gets exact
    regions on them; a continuous vector output where every column differs raises NotApplicable
    (it never reaches the classifier)."""
    rng = np.random.default_rng(20)
    p, q = bit_reports(20_000, 16, 3, 1.0, rng)
    out = HockeyStickTester(regions="exact").test(p, q, PureDP(0.5), beta=0.05, rng=3)
    assert isinstance(out.bounds[0], HistogramBound) and "columns (0, 1, 2) of 16" in out.bounds[0].region
    x, y = rng.laplace(0.0, 1.0, (5_000, 3)), rng.laplace(0.5, 1.0, (5_000, 3))
    with pytest.raises(NotApplicable):
        HockeyStickTester(regions="exact").test(x, y, PureDP(0.5), beta=0.05, rng=3)


def test_the_decision_reads_design_rows_only(monkeypatch):
    """The few-values rule may shrink the design part after the columns are chosen; the choice
    must read only rows that stay design rows (else held-out rows would shape the region)."""
    import dpaudit.estimators.histogram as histogram

    seen = []
    real = histogram.informative_columns

    def spy(p, q, **kw):
        seen.append((len(p), len(q)))
        return real(p, q, **kw)

    monkeypatch.setattr(histogram, "informative_columns", spy)
    monkeypatch.setattr(histogram, "FEW_VALUES_DESIGN", 3_000)
    monkeypatch.setattr(histogram, "FEW_VALUES_MIN_COUNT", 100)
    p, q = bit_reports(20_000, 8, 2, 1.0, np.random.default_rng(21))
    ev = HistogramHockeyStick().estimate(p, q, epsilon=0.1, beta=0.1, rng=1, columns="informative")
    assert "columns (0, 1) of 8" in ev.forward.region
    assert ev.forward.n_train == 2 * 3_000  # the few-values rule cut the design part
    assert seen and all(a <= 3_000 and b <= 3_000 for a, b in seen)


def test_bad_arguments_are_named():
    x = np.zeros((200, 3))
    with pytest.raises(ValueError, match="alpha"):
        informative_columns(x, x, alpha=1.5)
    with pytest.raises(ValueError, match=r"\(200, 3\) and \(200, 2\)"):
        informative_columns(x, x[:, :2])

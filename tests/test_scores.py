"""Audits from two samples of scores (dpaudit.scores): fast checks.

Every reference value is an independent closed form (Gaussian / Laplace profiles and trade-off
functions, checked against numerical integration in tests/test_profiles.py) or a property that a
correct implementation must have; the seeded coverage runs over many repetitions are in
tests/test_scores_coverage.py (slow).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.bounds import canonne_tv_upper
from dpaudit.privacy.claims import ApproxDP, PureDP, RenyiDP
from dpaudit.privacy.profiles import gaussian_delta, gaussian_epsilon, gaussian_tradeoff, laplace_delta, tv_from_mu
from dpaudit.scores import (
    cosine_scores,
    estimate_pld,
    gdp_audit,
    histogram_audit,
    histogram_hockey_stick,
    load_scores,
    make_bins,
    null_cosines,
    one_shot_audit,
    random_canaries,
    scott_bin_width,
    simulate_gaussian_canary_run,
    threshold_audit,
)

from _harness import assert_rate_at_most

EPS_GRID = np.linspace(0.0, 8.0, 161)


def gaussian_pair(n, mu, rng):
    return rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n)


# --------------------------------------------------------------------------- Canonne TV radius


def test_canonne_radius_never_exceeds_the_papers_form_and_shrinks():
    for n in [10, 1000, 10**6]:
        for k in [1, 2, 50, 1000]:
            for beta in [1e-3, 0.05, 0.5]:
                ours = canonne_tv_upper(n, k, beta)
                paper = max(math.sqrt(k / n), math.sqrt(2 * math.log(2 / beta) / n))  # paper 001 Lemma 2
                assert ours <= paper + 1e-15
    assert canonne_tv_upper(4000, 20, 0.05) < canonne_tv_upper(1000, 20, 0.05)
    assert canonne_tv_upper(1000, 20, 0.01) > canonne_tv_upper(1000, 20, 0.05)


def test_canonne_radius_coverage_on_a_skewed_multinomial():
    # TV(p_hat, p) <= e fails with probability <= beta; checked at a large beta so a wrong
    # constant would show. 2000 draws of a 12-outcome multinomial with n = 60.
    rng = np.random.default_rng(11)
    p = np.geomspace(1.0, 1e-3, 12)
    p /= p.sum()
    n, beta, reps = 60, 0.3, 2000
    e = canonne_tv_upper(n, p.size, beta)
    counts = rng.multinomial(n, p, size=reps)
    tv = 0.5 * np.abs(counts / n - p).sum(axis=1)
    fails = int((tv > e).sum())
    assert_rate_at_most(fails, reps, beta)


# --------------------------------------------------------------------------- bins


def test_scott_width_and_bins():
    rng = np.random.default_rng(0)
    x, y = rng.normal(0, 2, 8000), rng.normal(1, 2, 8000)
    h = scott_bin_width(x, y)
    assert h == pytest.approx(3.49 * 2 * 8000 ** (-1 / 3), rel=0.05)
    b = make_bins(x, y)
    assert b.k == math.ceil((max(x.max(), y.max()) - min(x.min(), y.min())) / h)
    # Tails are clipped into the end bins; counts add up.
    b2 = make_bins(x, y, 4, (-1.0, 1.0))
    assert b2.counts(np.array([-100.0, -1.0, 0.0, 0.99, 1.0, 100.0])).tolist() == [2, 0, 1, 3]
    assert b.counts(x).sum() == x.size
    # Constant samples give one bin (no division by zero).
    assert make_bins(np.ones(5), np.ones(5)).k == 1


def test_equal_width_binning_is_the_binary_search_exactly():
    # Bins.assign bins large samples on equal-width edges by arithmetic; it must give exactly the
    # binary search's bins, on the edges, one ulp either side of them, beyond the ends, NaN, inf.
    from dpaudit.estimators.histogram import Bins

    rng = np.random.default_rng(1)
    for k, lo, hi in [(1, 0.0, 1.0), (7, -3.0, 2.5), (283, 12.3, 12.31), (10_000, -1e5, 3e5)]:
        b = Bins(np.linspace(lo, hi, k + 1), "count")
        e = b.edges
        v = np.concatenate([rng.uniform(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo), 5000), e,
                            np.nextafter(e, -np.inf), np.nextafter(e, np.inf), [np.nan, np.inf, -np.inf, 1e308]])
        expected = np.clip(np.searchsorted(e, v, side="right") - 1, 0, k - 1)
        assert np.array_equal(b.assign(v), expected)
        assert b.counts(v).tolist() == np.bincount(expected, minlength=k).tolist()
    uneven = Bins(np.array([0.0, 1.0, 10.0, 11.0]))
    v = rng.normal(5.0, 6.0, 1000)
    assert np.array_equal(uneven.assign(v), np.clip(np.searchsorted(uneven.edges, v, side="right") - 1, 0, 2))


def test_estimate_pld_merged_counts_are_the_counts_in_the_merged_bins():
    rng = np.random.default_rng(2)
    x, y = rng.normal(0.5, 1.0, 20_000), rng.normal(0.0, 1.0, 20_000)
    pld = estimate_pld(x, y, min_count=10)
    assert "+merged" in pld.bins.rule
    assert np.array_equal(pld.p_mass, pld.bins.counts(x) / x.size)
    assert np.array_equal(pld.q_mass, pld.bins.counts(y) / y.size)


def test_plugin_estimate_converges_to_tv():
    rng = np.random.default_rng(1)
    x, y = gaussian_pair(200_000, 1.0, rng)
    fwd, rev = histogram_hockey_stick(x, y, [0.0, 1.0])
    assert fwd[0] == pytest.approx(tv_from_mu(1.0), abs=0.01)
    assert fwd[1] == pytest.approx(gaussian_delta(1.0, 1.0), abs=0.01)
    assert rev[0] == pytest.approx(fwd[0], abs=1e-12)  # TV is symmetric


# --------------------------------------------------------------------------- histogram audit


@pytest.mark.parametrize("method", ["auto", "canonne", "split"])
def test_histogram_bounds_lie_below_the_truth_and_are_informative(method):
    rng = np.random.default_rng(2)
    mu = 1.0
    x, y = gaussian_pair(20_000, mu, rng)
    r = histogram_audit(x, y, method=method, rng=3)
    truth = gaussian_delta(EPS_GRID, mu)
    for d in ("both", "P||Q", "Q||P"):
        assert np.all(r.delta_lower_bound(EPS_GRID, direction=d) <= truth + 1e-12)
    assert r.mu_lower_bound <= mu and r.mu_from_tv <= r.mu_lower_bound + 1e-12
    for delta in (1e-5, 1e-3, 0.1):
        assert r.epsilon_lower_bound(delta) <= gaussian_epsilon(delta, mu)
    a = np.linspace(0, 1, 101)
    assert np.all(r.tradeoff_upper_bound(a) >= gaussian_tradeoff(a, mu) - 1e-12)
    # Informative: at 20,000 samples per side the TV bound recovers most of the true TV.
    floor = 0.5 if method == "canonne" else 0.8
    assert r.tv_lower_bound > floor * tv_from_mu(mu)
    assert r.epsilon_lower_bound(1e-3) > 0.5


def test_profile_bound_is_monotone_and_consistent_with_epsilon_bound():
    rng = np.random.default_rng(4)
    x, y = rng.laplace(0, 1, 5000), rng.laplace(1, 1, 5000)
    r = histogram_audit(x, y, rng=5)
    d = r.delta_lower_bound(EPS_GRID)
    assert np.all(np.diff(d) <= 1e-15)
    assert np.all(d <= laplace_delta(EPS_GRID, 1.0) + 1e-12)
    for delta in (1e-3, 0.05):
        e = r.epsilon_lower_bound(delta)
        assert e > 0
        assert r.delta_lower_bound(e) == pytest.approx(delta, rel=1e-6)
        assert r.delta_lower_bound(e + 1e-3) < delta
    t = r.tradeoff_upper_bound(np.linspace(0, 1, 201))
    assert np.all(np.diff(t) <= 1e-12) and np.all(np.diff(t, 2) >= -1e-9)  # non-increasing, convex
    assert np.all(t <= 1 - np.linspace(0, 1, 201) + 1e-12)


def test_the_result_says_which_method_gave_each_bound():
    rng = np.random.default_rng(6)
    x, y = gaussian_pair(4000, 1.5, rng)
    r = histogram_audit(x, y, rng=7)
    assert set(r.sources) <= {"canonne", "split"}
    src = r.epsilon_source(1e-3)
    assert src.split(" ")[0] in ("canonne", "split") and ("P||Q" in src or "Q||P" in src)
    assert r.details["canonne"]["beta"] == pytest.approx(0.025) and r.details["split"]["beta"] == pytest.approx(0.025)
    assert r.details["bins"]["chosen_on"] == "selection split"


def test_fixed_bins_let_canonne_use_every_sample():
    rng = np.random.default_rng(8)
    x, y = gaussian_pair(3000, 1.0, rng)
    fixed = histogram_audit(x, y, bins=20, bin_range=(-4, 5), method="canonne", rng=0)
    chosen = histogram_audit(x, y, bins=20, method="canonne", rng=0)
    assert fixed.details["canonne"]["n_p"] == 3000 and fixed.details["bins"]["chosen_on"] == "given"
    assert chosen.details["canonne"]["n_p"] == 1500 and chosen.details["bins"]["chosen_on"] == "selection split"
    edges = np.linspace(-4, 5, 21)
    explicit = histogram_audit(x, y, bins=edges, method="canonne", rng=0)
    assert explicit.tv_lower_bound == pytest.approx(fixed.tv_lower_bound)


def test_null_samples_give_no_evidence_and_identical_samples_are_handled():
    rng = np.random.default_rng(9)
    x, y = rng.normal(size=3000), rng.normal(size=3000)
    r = histogram_audit(x, y, rng=1)
    assert r.tv_lower_bound == 0.0 and r.mu_lower_bound == 0.0 and r.epsilon_lower_bound(1e-5) == 0.0
    assert r.tv_estimate > 0  # the plug-in estimate is biased upwards; the bound is not fooled
    same = histogram_audit(np.zeros(10), np.zeros(10), rng=1)
    assert same.tv_lower_bound == 0.0 and same.details["bins"]["k"] == 1


def test_disjoint_samples_give_strong_evidence():
    x, y = np.full(500, 3.0), np.full(500, -3.0)
    r = histogram_audit(x, y, rng=0)
    # Exact Clopper–Pearson at beta/(2D): the TV bound is close to 1 and eps is large.
    assert r.tv_lower_bound > 0.95
    assert r.epsilon_lower_bound(1e-3) > 4.0


def test_claim_checks():
    rng = np.random.default_rng(10)
    mu = 2.0
    x, y = gaussian_pair(20_000, mu, rng)
    r = histogram_audit(x, y, rng=1)
    false_claim = r.check_claim(PureDP(0.5))
    assert false_claim.violated and false_claim.margin > 0
    true_eps = gaussian_epsilon(1e-5, mu)
    assert not r.check_claim(ApproxDP(true_eps, 1e-5)).violated
    assert not r.check_claim(RenyiDP(2.0, mu**2)).violated       # mu-GDP is (a, a mu^2/2)-RDP
    assert r.check_claim(RenyiDP(2.0, 0.05)).violated
    assert json.loads(json.dumps(false_claim.to_dict()))["violated"] is True


def test_to_dict_is_json_serialisable():
    rng = np.random.default_rng(12)
    x, y = gaussian_pair(1000, 1.0, rng)
    d = json.loads(json.dumps(histogram_audit(x, y, rng=0).to_dict()))
    assert d["method"] == "auto" and d["n_p"] == 1000
    assert len(d["evidence"]["p_lower"]) == len(d["evidence"]["q_upper"]) == len(d["evidence"]["sources"])
    assert "1e-05" in d["summary"]["epsilon_lower_bounds"]


def test_randomness_is_explicit():
    rng = np.random.default_rng(13)
    x, y = gaussian_pair(2000, 1.0, rng)
    a = histogram_audit(x, y, rng=5)
    b = histogram_audit(x, y, rng=np.random.default_rng(5))
    assert np.array_equal(a.p_lower, b.p_lower) and np.array_equal(a.q_upper, b.q_upper)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(p_scores=[], q_scores=[1.0, 2.0]), "p_scores"),
        (dict(p_scores=[1.0, 2.0], q_scores=[1.0]), "q_scores"),
        (dict(p_scores=[1.0, float("nan"), 2.0], q_scores=[1.0, 2.0]), "non-finite"),
        (dict(p_scores=[1.0, 2.0], q_scores=[1.0, float("inf")]), "q_scores"),
        (dict(p_scores=np.ones((3, 2)), q_scores=[1.0, 2.0]), "shape"),
        (dict(p_scores="abc", q_scores=[1.0, 2.0]), "p_scores"),
        (dict(p_scores=[1.0, 2.0], q_scores=[1.0, 2.0], bins=0), "bins"),
        (dict(p_scores=[1.0, 2.0], q_scores=[1.0, 2.0], bins="sturges"), "bins"),
        (dict(p_scores=[1.0, 2.0], q_scores=[1.0, 2.0], bins=[0.0, 0.0, 1.0]), "edges"),
        (dict(p_scores=[1.0, 2.0], q_scores=[1.0, 2.0], confidence=1.0), "confidence"),
        (dict(p_scores=[1.0, 2.0], q_scores=[1.0, 2.0], confidence=0.0), "confidence"),
        (dict(p_scores=[1.0, 2.0], q_scores=[1.0, 2.0], method="magic"), "method"),
        (dict(p_scores=[1.0, 2.0], q_scores=[1.0, 2.0], selection_fraction=1.0), "selection_fraction"),
        (dict(p_scores=[1.0, 2.0], q_scores=[1.0, 2.0], bin_range=(1.0, 1.0), bins=3), "bin_range"),
        (dict(p_scores=[1.0, 2.0], q_scores=[1.0, 2.0], epsilons=[-1.0]), "epsilons"),
    ],
)
def test_bad_input_raises_value_error_naming_it(kwargs, match):
    with pytest.raises(ValueError, match=match):
        histogram_audit(**kwargs)


def test_bad_delta_and_direction():
    r = histogram_audit([0.0, 1.0, 2.0], [0.5, 1.5, 2.5], rng=0)
    for bad in (0.0, 1.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match="delta"):
            r.epsilon_lower_bound(bad)
    with pytest.raises(ValueError, match="direction"):
        r.delta_lower_bound(0.0, direction="sideways")
    with pytest.raises(ValueError, match="alpha"):
        r.tradeoff_upper_bound([1.5])


# --------------------------------------------------------------------------- baselines


def test_threshold_and_gdp_audit_on_equal_variance_gaussians():
    rng = np.random.default_rng(14)
    mu = 1.0
    x, y = gaussian_pair(200_000, mu, rng)
    g = gdp_audit(x, y, rng=1)
    t = threshold_audit(x, y, rng=1)
    # For equal-variance Gaussian scores the GDP audit is the right model: close to mu, below it.
    assert 0.9 < g.mu_lower_bound <= mu
    assert g.epsilon(1e-5) <= gaussian_epsilon(1e-5, mu)
    assert t.mu_lower_bound == pytest.approx(g.mu_lower_bound, rel=1e-9)  # same tests, same formula
    assert 0 < t.epsilon_lower_bound(1e-5) <= gaussian_epsilon(1e-5, mu)
    # Members with lower scores (a loss) are handled by the orientation choice.
    g2 = gdp_audit(-x, -y, rng=1)
    assert g2.mu_lower_bound == pytest.approx(g.mu_lower_bound, rel=1e-9)
    assert json.loads(json.dumps(g.to_dict()))["mu_lower_bound"] == g.mu_lower_bound


def test_gdp_audit_never_reports_null_scores_as_a_violation():
    # The pitfall of notes §Baseline: abs(mu) on null scores. Here mu is clipped at 0.
    rng = np.random.default_rng(15)
    for seed in range(5):
        x, y = rng.normal(size=2000), rng.normal(size=2000)
        assert gdp_audit(x, y, rng=seed).mu_lower_bound == 0.0


def test_threshold_audit_with_fixed_thresholds_pays_for_both_orientations():
    rng = np.random.default_rng(16)
    x, y = gaussian_pair(5000, 1.0, rng)
    t = threshold_audit(x, y, thresholds=[0.5], rng=0)
    assert t.details["threshold"]["sets"] == 2 and t.details["threshold"]["chosen_on"] == "given"
    assert 0 < t.tv_lower_bound <= tv_from_mu(1.0)
    with pytest.raises(ValueError, match="thresholds"):
        threshold_audit(x, y, thresholds=0)
    with pytest.raises(ValueError, match="thresholds"):
        threshold_audit(x, y, thresholds=[float("nan")])


def test_histogram_beats_threshold_on_a_non_gaussian_pair():
    # Subsampled Gaussian (paper 001 §5.2): the optimal tests are threshold tests (monotone
    # likelihood ratio) but no single threshold captures the curve; the histogram bound is at
    # least as good over the curve as the threshold baseline's.
    rng = np.random.default_rng(17)
    n, q, s = 100_000, 0.2, 0.5
    x = np.where(rng.random(n) < q, rng.normal(1, s, n), rng.normal(0, s, n))
    y = rng.normal(0, s, n)
    h = histogram_audit(x, y, rng=1)
    t = threshold_audit(x, y, rng=1)
    g = gdp_audit(x, y, rng=1)
    a = np.linspace(0.001, 0.999, 200)
    assert np.mean(h.tradeoff_upper_bound(a)) <= np.mean(t.tradeoff_upper_bound(a)) + 0.01
    assert h.epsilon_lower_bound(1e-3) >= 0.8 * t.epsilon_lower_bound(1e-3)
    # The GDP curve at the audited mu is not an upper bound of this pair's curve everywhere.
    from dpaudit.privacy.profiles import SubsampledGaussianProfile

    exact = SubsampledGaussianProfile(s, q).tradeoff(a)
    assert np.all(h.tradeoff_upper_bound(a) >= exact - 1e-9)
    assert np.any(g.tradeoff(a) < exact - 0.005) or g.mu_lower_bound < SubsampledGaussianProfile(s, q).gdp_mu()


# --------------------------------------------------------------------------- canaries


def test_null_cosines_follow_the_uniform_sphere_law():
    d = 50
    rng = np.random.default_rng(18)
    direct = cosine_scores(rng.normal(size=d), random_canaries(4000, d, rng=rng))
    exact = null_cosines(4000, d, rng=rng)
    assert stats.ks_2samp(direct, exact).pvalue > 1e-3
    assert np.var(exact) == pytest.approx(1 / d, rel=0.1)


def test_one_shot_audit_approaches_the_gaussian_mechanism():
    sigma = 1.0
    obs, null = simulate_gaussian_canary_run(10_000, 500, sigma, num_null=10_000, rng=19)
    r = one_shot_audit(obs, null, rng=1)
    # Gaussian fit (Andrew et al.) estimates mu = 1/sigma up to n_canaries/d and sampling error.
    assert r.gaussian_fit_mu == pytest.approx(1 / sigma, abs=0.15)
    assert r.histogram.mu_lower_bound <= 1 / sigma + 0.05
    assert r.histogram.epsilon_lower_bound(1e-5) <= gaussian_epsilon(1e-5, 1 / sigma)
    assert r.histogram.tv_lower_bound > 0.1
    r2 = one_shot_audit(obs, dimension=10_000, rng=2)
    assert r2.null_source.startswith("exact Beta") and r2.n_null == 10_000
    with pytest.raises(ValueError, match="dimension"):
        one_shot_audit(obs)
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        one_shot_audit(obs + 2.0, null)


# --------------------------------------------------------------------------- white-box PLD


def test_pld_composition_matches_the_exact_composed_gaussian():
    rng = np.random.default_rng(20)
    sigma, steps = 2.0, 10
    x, y = rng.normal(1, sigma, 200_000), rng.normal(0, sigma, 200_000)
    pld = estimate_pld(x, y)
    eps = np.array([0.0, 0.5, 1.0, 1.5])
    exact_one = gaussian_delta(eps, 1 / sigma)
    exact_t = gaussian_delta(eps, math.sqrt(steps) / sigma)   # N(0,s^2)^T vs N(1,s^2)^T
    assert np.allclose(pld.delta(eps), exact_one, atol=0.01)
    assert np.allclose(pld.delta(eps, steps), exact_t, atol=0.01)
    assert pld.epsilon(1e-3, steps) == pytest.approx(gaussian_epsilon(1e-3, math.sqrt(steps) / sigma), rel=0.1)
    assert pld.infinity_mass_p == 0.0  # merged sparse bins: no sampling-gap infinities
    raw = estimate_pld(x, y, min_count=0)
    assert raw.bins.k >= pld.bins.k
    json.dumps(pld.to_dict())


# --------------------------------------------------------------------------- files


def test_load_scores_formats_and_errors(tmp_path):
    v = np.array([0.5, -1.25, 3.0])
    np.save(tmp_path / "a.npy", v)
    (tmp_path / "b.csv").write_text("0.5\n-1.25\n3.0\n")
    (tmp_path / "c.txt").write_text("# losses\n0.5 -1.25 3.0\n")
    for name in ("a.npy", "b.csv", "c.txt"):
        assert np.array_equal(load_scores(tmp_path / name), v)
    (tmp_path / "nan.txt").write_text("1.0\nnan\n")
    with pytest.raises(ValueError, match="nan.txt.*non-finite"):
        load_scores(tmp_path / "nan.txt")
    (tmp_path / "two.csv").write_text("1,2\n3,4\n")
    with pytest.raises(ValueError, match="two.csv: 2 columns without a header.*--column"):
        load_scores(tmp_path / "two.csv")
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(ValueError, match="empty.txt"):
        load_scores(tmp_path / "empty.txt")
    (tmp_path / "x.json").write_text("[1, 2.5]")
    assert np.array_equal(load_scores(tmp_path / "x.json"), [1.0, 2.5])
    (tmp_path / "x.parquet").write_text("PAR1")
    with pytest.raises(ValueError, match="unknown file type '.parquet'"):
        load_scores(tmp_path / "x.parquet")
    with pytest.raises(ValueError, match="no such file"):
        load_scores(tmp_path / "missing.npy")


def test_one_tradeoff_drawing(tmp_path, monkeypatch):
    """plot_tradeoff and the reports' tradeoff_png both draw with dpaudit.scores.plot.draw_tradeoff."""
    import numpy as np

    from dpaudit.report import plots as report_plots
    from dpaudit.scores import approx_dp_tradeoff, plot as score_plot, plot_tradeoff

    calls = []
    real = score_plot.draw_tradeoff
    monkeypatch.setattr(score_plot, "draw_tradeoff", lambda ax, curves, **kw: (calls.append(kw.get("log", False)), real(ax, curves, **kw)))
    a = np.linspace(0.0, 1.0, 51)
    b = approx_dp_tradeoff(a, 1.0)
    assert plot_tradeoff(tmp_path / "t.png", [("eps=1", a, b, None)], log=True) == str(tmp_path / "t.png")
    png = report_plots.tradeoff_png(a, b, [("other", approx_dp_tradeoff(a, 2.0))], claim=("claim", b))
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"
    assert calls == [True, False, True]

"""Regions chosen for the certified epsilon lower bound (issue 16) and exact regions for 1-D and
discrete outputs (issue 12): the objective, the threshold family, the design split, the
``--estimate`` entry point. Seeded; the soundness of every certified number is checked against
the true epsilon of mechanisms whose privacy loss is known in closed form."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpaudit.estimators.histogram import HistogramHockeyStick
from dpaudit.estimators.hockey_stick import ClassifierHockeyStick
from dpaudit.estimators.region import RegionTarget, projected_scores
from dpaudit.privacy.claims import ApproxDP, PureDP
from dpaudit.testers import HockeyStickTester


def test_region_target_scores():
    t = RegionTarget.epsilon(0.0)
    assert t.score(np.array([0.5]), np.array([0.25]))[0] == pytest.approx(math.log(2.0))
    # a region that certifies nothing ranks below one that does, and among such by q_hi
    s = t.score(np.array([0.0, 0.0, 0.1]), np.array([0.2, 0.1, 0.09]))
    assert s[2] > s[1] > s[0]
    d = RegionTarget.epsilon(0.05)
    assert d.score(np.array([0.45]), np.array([0.2]))[0] == pytest.approx(math.log(0.4 / 0.2))
    m = RegionTarget.margin(np.array([0.0, 1.0]), np.array([0.0, 0.0]))
    assert m.score(np.array([0.5]), np.array([0.1]))[0] == pytest.approx(0.4)
    with pytest.raises(ValueError, match="delta"):
        RegionTarget.epsilon(1.0)
    # projected: counts rescaled to the certifying size before the bounds (margin) ...
    a = projected_scores(np.array([50]), 100, np.array([25]), 100, 1000, 1000, m, 0.05)
    b = projected_scores(np.array([500]), 1000, np.array([250]), 1000, 1000, 1000, m, 0.05)
    assert a[0] == pytest.approx(b[0])
    # ... and for the epsilon objective first moved toward no effect, the more so the fewer
    # choosing samples back them (selection-bias guard), never above the unshrunk projection
    a = projected_scores(np.array([50]), 100, np.array([25]), 100, 1000, 1000, t, 0.05)
    b = projected_scores(np.array([500]), 1000, np.array([250]), 1000, 1000, 1000, t, 0.05)
    c = projected_scores(np.array([5000]), 10_000, np.array([2500]), 10_000, 1000, 1000, t, 0.05)
    assert a[0] < b[0] < c[0] < t.score(*[np.array([x]) for x in (0.5 - 0.0389, 0.25 + 0.0359)])[0] + 0.05


def test_threshold_regions_find_a_flat_likelihood_ratio():
    """Laplace(0, 1/eps) vs Laplace(1, 1/eps): the ratio is flat (e^eps) on a half-line, where
    noisy per-bin ratios scramble level sets; a threshold region certifies close to eps."""
    eps = 0.5
    rng = np.random.default_rng(3)
    n = 400_000
    p = rng.laplace(0.0, 1 / eps, (n, 1))
    q = rng.laplace(1.0, 1 / eps, (n, 1))
    ev = HistogramHockeyStick(objective="epsilon").estimate(p, q, epsilon=eps, beta=0.1, rng=4)
    best = max(b.epsilon_lower_bound(0.0) for b in ev.bounds)
    assert 0.85 * eps < best <= eps  # sound (at 90 %) and close to the truth
    assert any("(-inf," in b.region or ", inf]" in b.region for b in ev.bounds)


@pytest.mark.parametrize("objective", ["margin", "both", "epsilon"])
def test_objectives_spend_beta_once(objective):
    rng = np.random.default_rng(5)
    p, q = rng.laplace(0.0, 1.0, (20_000, 1)), rng.laplace(0.3, 1.0, (20_000, 1))
    ev = HistogramHockeyStick(objective=objective).estimate(p, q, epsilon=0.1, beta=0.05, rng=6,
                                                          delta_profile=PureDP(0.1).delta_profile)
    assert sum(b.beta for b in ev.bounds) == pytest.approx(0.05)
    assert len(ev.bounds) == 2 if objective != "both" else 2 <= len(ev.bounds) <= 4
    if objective == "epsilon":
        assert all(b.region.startswith("[max epsilon]") for b in ev.bounds)
    with pytest.raises(ValueError, match="objective"):
        HistogramHockeyStick(objective="nope")
    with pytest.raises(ValueError, match="tolerance"):
        HistogramHockeyStick(tolerance="l1", objective="epsilon")


def test_split_design_size_keeps_most_rows_for_the_bound_on_large_samples():
    size = HistogramHockeyStick._design_size
    frac = HistogramHockeyStick()._design_fraction()
    assert size(50_000, frac) == 25_000 and size(400_000, frac) == 200_000
    assert size(1_000_000, frac) == 200_000 and size(10_000_000, frac) == 2_000_000
    assert size(10, frac) == 5


def test_classifier_epsilon_objective_certifies_a_sound_bound():
    """Vector outputs: 2-D Laplace with one coordinate shifted by 1 at scale 1/eps (eps-DP,
    privacy loss at most eps): the classifier's epsilon region certifies > 0 and <= eps."""
    eps = 1.0
    rng = np.random.default_rng(7)
    n = 40_000
    p = rng.laplace(0.0, 1 / eps, (n, 2))
    q = rng.laplace(0.0, 1 / eps, (n, 2)) + np.array([1.0, 0.0])
    est = ClassifierHockeyStick(objective="epsilon", max_steps=200)
    ev = est.estimate(p, q, epsilon=eps, beta=0.1, rng=8)
    lbs = [b.epsilon_lower_bound(0.0) for b in ev.bounds]
    assert all(b.region.startswith("[max epsilon]") for b in ev.bounds)
    assert 0.3 < max(lbs) <= eps
    with pytest.raises(ValueError, match="objective"):
        ClassifierHockeyStick(objective="nope")


def test_classifier_epsilon_objective_gives_the_share_to_the_stronger_direction():
    """objective="epsilon": the two directions' failure probabilities add up to 2 beta (beta per
    direction, as handed) and 0.95 of it goes to the direction whose region predicts the larger
    certified epsilon. P = N(0, 1) vs Q = a mixture that puts 20 % of its mass far out on the
    right: Q||P has a region of huge ratio (the far right), P||Q only a weak one."""
    rng = np.random.default_rng(5)
    n = 20_000
    p = rng.normal(0.0, 1.0, (n, 2))
    q = rng.normal(0.0, 1.0, (n, 2))
    far = rng.random(n) < 0.2
    q[far, 0] += 6.0
    ev = ClassifierHockeyStick(objective="epsilon", max_steps=200).estimate(p, q, epsilon=0.5, beta=0.05, rng=2)
    assert ev.forward.beta + ev.reverse.beta == pytest.approx(0.1)
    assert ev.reverse.beta == pytest.approx(0.095) and ev.forward.beta == pytest.approx(0.005)
    assert ev.reverse.epsilon_lower_bound(0.0) > 2.0
    # The margin objective keeps beta per direction.
    ev = ClassifierHockeyStick(objective="both", max_steps=200).estimate(p, q, epsilon=0.5, beta=0.05, rng=2)
    assert sum(b.beta for b in ev.bounds) == pytest.approx(0.1)


def test_default_tester_paths_and_epsilon_bounds_stay_below_the_truth():
    """The default tester on correct mechanisms at their exact epsilon: exact regions for 1-D and
    discrete outputs, the classifier for continuous vectors; no bound exceeds the true epsilon
    (seeded; each at beta = 0.05)."""
    t = HockeyStickTester()
    rng = np.random.default_rng(9)
    eps = 1.0
    one_d = (rng.laplace(0.0, 1.0, (30_000, 1)), rng.laplace(1.0, 1.0, (30_000, 1)))
    # randomized response on one bit at eps: P(1) = e/(1+e) vs 1/(1+e)
    r = math.e / (1 + math.e)
    disc = ((rng.random((30_000, 1)) < r).astype(float), (rng.random((30_000, 1)) < 1 - r).astype(float))
    vec = (rng.laplace(0.0, 1.0, (30_000, 3)), rng.laplace(0.0, 1.0, (30_000, 3)) + [1.0, 0.0, 0.0])
    assert t.region_path(*one_d) == "exact" and t.region_path(*disc) == "exact"
    assert t.region_path(*vec) == "classifier"
    for p, q in (one_d, disc):
        out = t.test(p, q, PureDP(eps), beta=0.05, rng=10)
        assert not out.violation and 0.0 <= out.epsilon_lower_bound <= eps
    out = t.test(*disc, ApproxDP(0.5, 1e-3), beta=0.05, rng=11)
    assert out.violation and 0.5 < out.epsilon_lower_bound <= eps


def test_cli_estimate_reports_the_certified_epsilon(tmp_path):
    from typer.testing import CliRunner

    from dpaudit.cli.app import app

    runner = CliRunner()
    res = runner.invoke(app, ["test", "zoo:randomized-response", "--epsilon", "0.5", "-n", "20000", "-t", "1",
                              "--seed", "1", "--estimate", "--json"])
    d = json.loads(res.stdout)
    trial = d["trials"][0]
    assert trial["num_samples"] == 20_000  # no early stop
    lb = trial["outcome"]["epsilon_lower_bound"]
    assert 0.0 < lb <= 0.5 + 1e-12  # randomized response is exactly 0.5-DP
    res = runner.invoke(app, ["test", "zoo:randomized-response", "--epsilon", "0.5", "--estimate", "--tester", "renyi"])
    assert res.exit_code != 0 and "--estimate" in res.output
    res = runner.invoke(app, ["test", "zoo:randomized-response", "--epsilon", "0.5", "--estimate", "--stages", "auto"])
    assert res.exit_code != 0 and "--stages" in res.output


def test_cli_estimate_trains_the_larger_classifier():
    """--estimate's classifier gets ESTIMATE_TRAINING (wider, more steps: epsilon regions are
    extreme tails); the test's default classifier keeps the constructor's budget."""
    from dpaudit.cli.app import _estimate_tester
    from dpaudit.estimators.hockey_stick import ESTIMATE_TRAINING
    from dpaudit.privacy.claims import PureDP
    from dpaudit.testers import HockeyStickTester

    est = _estimate_tester(PureDP(0.5), None, "cpu", "off", False).estimator
    assert est.objective == "epsilon"
    assert est.hidden_sizes == ESTIMATE_TRAINING["hidden_sizes"] and est.max_steps == ESTIMATE_TRAINING["max_steps"]
    default = HockeyStickTester().estimator
    assert (default.hidden_sizes, default.max_steps) == ((32, 32), 1500)


def _chosen(k_in, k_out, n_fit=200_000, n_cert=800_000):
    """One direction's ``choose_direction_regions`` tuple: a 2-cell region mask on cell 0."""
    in_tr = np.array([k_in, n_fit - k_in], dtype=float)
    out_tr = np.array([k_out, n_fit - k_out], dtype=float)
    return (0, np.array([True, False]), n_cert, n_cert, in_tr, out_tr)


def test_epsilon_shares_go_to_the_direction_the_selection_half_supports():
    target = RegionTarget.epsilon(0.0)
    grid, allowed = np.array([0.1]), np.array([0.0])
    strong = _chosen(40_000, 36_200)  # ratio about e^0.1 on 200k choosing samples
    null = _chosen(40_000, 40_000)
    shares = HistogramHockeyStick._direction_shares
    assert shares([strong, null], grid, allowed, 0.1, target) == pytest.approx((0.95, 0.05))
    assert shares([null, strong], grid, allowed, 0.1, target) == pytest.approx((0.05, 0.95))
    # a tiny region whose raw ratio is infinite but mostly selection noise does not take the share
    tiny = _chosen(3, 0)
    assert shares([strong, tiny], grid, allowed, 0.1, target) == pytest.approx((0.95, 0.05))
    # the margin target keeps its own rule (chance of a positive margin); here no margin is likely
    assert shares([null, null], grid, allowed, 0.1) == pytest.approx((0.5, 0.5))


def test_close_verdicts_keep_all_of_the_directions_beta():
    """objective="both": the margin region keeps the whole share when its predicted rejection
    chance is between the BORDERLINE limits, and VERDICT_SHARE of it otherwise."""
    from dpaudit.estimators.histogram import BORDERLINE, VERDICT_SHARE, verdict_share
    from dpaudit.estimators.region import predicted_rejection

    grid, allowed, n = np.array([0.0]), np.array([0.0]), 20_000
    mask = np.array([True, False])
    cases = {}
    for gap in (0.0, 0.005, 0.01, 0.015, 0.05):  # P(S) - Q(S) of the region, 0.5 vs 0.5 - gap
        in_tr = np.array([0.5 * n, 0.5 * n])
        out_tr = np.array([(0.5 - gap) * n, (0.5 + gap) * n])
        chance = predicted_rejection(0.5, 0.5 - gap, n, n, grid, allowed, 0.1 * VERDICT_SHARE / 2)
        cases[gap] = (chance, verdict_share(in_tr, out_tr, mask, n, n, grid, allowed, 0.1))
    for chance, share in cases.values():
        assert share == (1.0 if BORDERLINE[0] < chance < BORDERLINE[1] else VERDICT_SHARE)
    # the sweep covers all three regimes: no effect (a correct mechanism at its boundary keeps its
    # epsilon region), close, and clear
    assert cases[0.0][1] == VERDICT_SHARE and cases[0.05][1] == VERDICT_SHARE
    assert any(share == 1.0 for _, share in cases.values())
    assert cases[0.0][0] < BORDERLINE[0] < BORDERLINE[1] < cases[0.05][0]


@pytest.mark.parametrize("ratio", [False, True])
@pytest.mark.parametrize("kind", ["margin", "epsilon", "epsilon-delta"])
def test_pruned_projection_keeps_the_maximum_and_its_argmax(kind, ratio):
    """projected_scores evaluates only candidates whose point-estimate bound reaches the best
    value found: the maximum, its argmax and the values that match them are those of evaluating
    every candidate, and the rest stay below the maximum."""
    from dpaudit.estimators.region import _projected_scores_all

    rng = np.random.default_rng(5)
    grid = np.array([0.0, 0.05, 0.1, 0.5])
    target = {"margin": RegionTarget.margin(grid, np.array([0.05, 0.01, 0.0, 0.0]), ratio=ratio),
              "epsilon": RegionTarget.epsilon(0.0, ratio=ratio),
              "epsilon-delta": RegionTarget.epsilon(1e-3, ratio=ratio)}[kind]
    for trial in range(6):
        n_fit = int(rng.integers(2_000, 200_000))
        k_in = rng.integers(0, n_fit, 3000).astype(float)
        k_out = np.clip(np.round(k_in * np.exp(-rng.uniform(0.0, 0.3, 3000)) + rng.normal(0, 20, 3000)), 0, n_fit)
        exact = _projected_scores_all(k_in, n_fit, k_out, n_fit, 3 * n_fit, 3 * n_fit, target, 0.01)
        pruned, use = projected_scores(k_in, n_fit, k_out, n_fit, 3 * n_fit, 3 * n_fit, target, 0.01, with_choice=True)
        top = int(np.argmax(exact))
        assert int(np.argmax(pruned)) == top and pruned[top] == exact[top]
        ties = exact == exact[top]
        assert np.array_equal(pruned[ties], exact[ties])
        assert np.all(pruned[~ties] < exact[top])
        assert np.count_nonzero(pruned != exact) > 0  # the pruning did leave candidates out
        _, use_all = _projected_scores_all(k_in, n_fit, k_out, n_fit, 3 * n_fit, 3 * n_fit, target, 0.01, True)
        assert use[top] == use_all[top]


@pytest.mark.parametrize("ratio", [False, True])
def test_lockstep_choices_are_the_argmaxes_of_every_candidate(ratio):
    """projected_choices (several candidate sets pruned in lockstep, one vectorised call per
    round; issue 37 item 5) picks, in every set, the argmax of evaluating every candidate of that
    set alone, for both objectives, sets of 1 to 3,000 candidates with their own choosing sizes,
    and tied candidates (the first index wins, as np.argmax); the epsilon objective's floor (a
    candidate whose ceiling after the shrink is below it stops there) keeps the values that reach
    it exact."""
    from dpaudit.estimators.region import _projected_scores_all, projected_choices

    rng = np.random.default_rng(41)
    grid = np.array([0.0, 0.05, 0.1, 0.5])
    targets = (RegionTarget.margin(grid, np.array([0.05, 0.01, 0.0, 0.0]), ratio=ratio),
               RegionTarget.epsilon(1e-3, ratio=ratio))
    problems = []
    for size in (1, 3, 8, 9, 200, 3000, 700, 40):
        n_fit = int(rng.integers(2_000, 100_000))
        k_in = rng.integers(0, n_fit, size).astype(float)
        k_out = np.clip(np.round(k_in * np.exp(-rng.uniform(0.0, 0.3, size)) + rng.normal(0, 20, size)), 0, n_fit)
        if size >= 8:
            k_in[size // 2], k_out[size // 2] = k_in[0], k_out[0]  # a tie with an earlier candidate
        problems.append((k_in, n_fit, k_out, n_fit + int(rng.integers(0, 50))))
    for target in targets:
        picks = projected_choices(problems, 150_000, 140_000, target, 0.01)
        exact = [int(np.argmax(_projected_scores_all(*p, 150_000, 140_000, target, 0.01))) for p in problems]
        assert picks == exact
        assert len(set(picks)) > 3
    with pytest.raises(ValueError, match="at least one"):
        projected_choices([(np.zeros(0), 10, np.zeros(0), 10)], 100, 100, targets[0], 0.01)
    # the epsilon objective's floor: exact values where the shrunk ceiling reaches it, else a
    # number below the floor and at least the exact value
    k_in, n_fit, k_out, _ = problems[5]
    fit = np.full(len(k_in), float(n_fit))
    exact, use = _projected_scores_all(k_in, fit, k_out, fit, 150_000, 140_000, targets[1], 0.01, True)
    floor = np.full(len(k_in), np.quantile(exact, 0.9))
    cut, use_cut = _projected_scores_all(k_in, fit, k_out, fit, 150_000, 140_000, targets[1], 0.01, True, floor)
    kept = cut >= floor
    assert np.array_equal(cut[kept], exact[kept]) and np.array_equal(use_cut[kept], use[kept])
    assert np.all(exact[~kept] <= cut[~kept]) and np.count_nonzero(~kept) > len(k_in) // 2  # most stop early


@pytest.mark.parametrize("kind", ["margin", "epsilon", "epsilon-delta"])
def test_the_fast_selection_paths_give_the_checked_functions_numbers(kind):
    """ratio_certification's unchecked Clopper-Pearson calls and its skip of the ratio bound where
    it cannot win (issue 37 item 5) give, bit for bit, what the public checked bounds give when
    both certifications are computed for every candidate."""
    from dpaudit.bounds import clopper_pearson_lower, poisson_rate, poisson_ratio_lower
    from dpaudit.estimators.region import RATIO_SHARE, projected_mass_bounds, ratio_certification

    grid = np.array([0.0, 0.05, 0.1, 0.5])
    target = {"margin": RegionTarget.margin(grid, np.array([0.05, 0.01, 0.0, 0.0]), ratio=True),
              "epsilon": RegionTarget.epsilon(0.0, ratio=True),
              "epsilon-delta": RegionTarget.epsilon(1e-3, ratio=True)}[kind]
    rng = np.random.default_rng(11)
    n_fit, n = 20_000, 60_000
    k_in = np.concatenate([rng.integers(0, n_fit, 400), rng.integers(0, 40, 200), [0, 0, 5, n_fit]]).astype(float)
    k_out = np.concatenate([np.clip(k_in[:400] * rng.uniform(0.3, 1.0, 400), 0, n_fit),
                            rng.integers(0, 3, 200), [0, 7, 0, n_fit]]).astype(float)
    lam_in, lam_out = poisson_rate(n), poisson_rate(n)
    plain = target.score(*projected_mass_bounds(k_in, n_fit, k_out, n_fit, n, n, 0.01))
    p_lo = clopper_pearson_lower(np.minimum(k_in * (n / n_fit), n), n, (1.0 - RATIO_SHARE) * 0.01)
    r_lo = poisson_ratio_lower(np.minimum(k_in * (lam_in / n_fit), lam_in), lam_in,
                               np.minimum(k_out * (lam_out / n_fit), lam_out), lam_out, RATIO_SHARE * 2.0 * 0.01)
    with_ratio = target.ratio_score(p_lo, r_lo)
    values, use = ratio_certification(k_in, n_fit, k_out, n_fit, n, n, target, 0.01)
    assert np.array_equal(use, with_ratio > plain) and np.array_equal(values, np.where(use, with_ratio, plain))
    assert 0 < np.count_nonzero(use) < len(use)  # both certifications win somewhere
    v1, u1 = ratio_certification(k_in[-3], n_fit, k_out[-3], n_fit, n, n, target, 0.01)  # scalar counts
    assert np.shape(v1) == () and v1 == values[-3] and u1 == use[-3]


def test_presorted_folds_give_the_former_estimates(monkeypatch):
    """The 1-D fast path (each training fold sorted once, the design merged from them, distinct
    values from it; held-out rows counted in the chosen regions only; issue 37 item 5) gives, bit for bit, the
    regions, bounds and verdict inputs of sorting every part from scratch, on continuous and
    discrete 1-D zoo outputs, violating and not, for all three objectives (20,000 per dataset)."""
    import dpaudit.estimators.histogram as histogram
    from dpaudit.mechanisms import zoo

    def estimates(presort):
        monkeypatch.setattr(histogram, "PRESORT", presort)
        out = []
        for name, eps, objective in (("non-dp-laplace-1", 1.0, "margin"), ("dp-laplace", 1.0, "both"),
                                     ("non-dp-gaussian-2", 0.5, "epsilon"), ("dpsniper-trunc-geom", 0.5, "margin")):
            e = zoo.get(name)
            mech, pair = e.mechanism(eps), e.witnesses()[0]
            rng = np.random.default_rng(17)
            x0 = mech.sample(np.asarray(pair.d0), 20_000, rng)
            x1 = mech.sample(np.asarray(pair.d1), 20_000, rng)
            assert x0.shape[1] == 1
            ev = HistogramHockeyStick(objective=objective).estimate(x0, x1, epsilon=eps, beta=0.05, rng=3)
            out.append([(ev.mode, ev.num_cells, ev.needed_samples)] + [repr(b) for b in ev.bounds])
        return out

    fast, former = estimates(True), estimates(False)
    assert fast == former
    assert {row[0][0] for row in fast} == {"binned", "discrete"}  # both modes were exercised


@pytest.mark.parametrize("ratio", [False, True])
def test_batched_cross_validation_gives_the_per_option_numbers(ratio):
    """_cross_validate_all (one vectorised projection of every option's validation counts,
    issue 37 item 5) gives bit for bit the means of _cross_validate option by option, for both
    objectives and directions, with equal and unequal fold sizes."""
    from dpaudit.estimators.histogram_cells import _cross_validate, _cross_validate_all

    rng = np.random.default_rng(23)
    grid = np.array([0.0, 0.1, 0.5])
    targets = (RegionTarget.margin(grid, np.array([0.02, 0.0, 0.0]), ratio=ratio),
               RegionTarget.epsilon(1e-4, ratio=ratio))
    for sizes in ((5_000, 5_000), (5_000, 5_001)):
        options = []
        for m in (8, 32, 128):
            folds = tuple((rng.multinomial(s, rng.dirichlet(np.ones(m))), rng.multinomial(s, rng.dirichlet(np.ones(m))))
                          for s in sizes)
            options += [(folds, m, "level"), (folds, m, "threshold")]
        for target in targets:
            for swap in (False, True):
                batched = _cross_validate_all(options, swap, 20_000, 20_000, target, 0.01)
                one_by_one = [_cross_validate(f, swap, 20_000, 20_000, target, 0.01, o, fam) for f, o, fam in options]
                assert batched == one_by_one and len(set(batched)) > 1


def test_margin_ceiling_bounds_the_margin_from_above_and_closely():
    """RegionTarget.score_ceiling (the lower envelope of the profile's lines, issue 37 item 5) is
    at least the floating-point margin of every candidate, and within twice its slack of it, on
    the claims' profiles and on random grids with repeated slopes and dominated lines."""
    from dpaudit.estimators.base import profile_grid
    from dpaudit.estimators.region import MARGIN_CEILING_SLACK

    rng = np.random.default_rng(29)
    targets = []
    for claim in (PureDP(0.01), PureDP(1.0), ApproxDP(1.0, 1e-5), ApproxDP(0.5, 0.01)):
        grid = profile_grid(claim.epsilon)
        targets.append(RegionTarget.margin(grid, claim.delta_profile(grid)))
    for _ in range(4):
        grid = np.round(rng.uniform(0.0, 3.0, 40), 1)
        targets.append(RegionTarget.margin(grid, rng.uniform(0.0, 0.3, 40)))
    p = rng.uniform(0.0, 1.0, 40_000)
    q = np.concatenate([rng.uniform(0.0, 1.0, 20_000), 10.0 ** rng.uniform(-9, 0, 19_998), [0.0, 1.0]])
    for t in targets:
        gap = t.score_ceiling(p, q) - t.score(p, q)
        assert gap.min() > 0 and gap.max() < 2 * MARGIN_CEILING_SLACK


def test_held_out_region_counts_match_the_cell_counts():
    """_HeldOut.count (comparisons for regions with few boundaries, bisection among them beyond; issue 37
    item 5) gives the cell counts of the sorted held-out rows summed over the region, with the
    ratio test's prefix, for masks with 0 to many boundaries and values on the edges."""
    from dpaudit.estimators.histogram_cells import REGION_COMPARE_MAX, _HeldOut

    rng = np.random.default_rng(31)
    edges = np.unique(np.round(rng.normal(0.0, 1.0, 63), 2))
    x = np.concatenate([np.round(rng.normal(0.0, 1.2, 5_000), 2), edges])  # ties on edges
    rng.shuffle(x)

    def cells(v):
        cum = np.searchsorted(np.sort(v), edges, side="right")
        return np.diff(np.concatenate([[0], cum, [len(v)]]))

    held = _HeldOut(x, 1_234)
    m = len(edges) + 1
    masks = [np.zeros(m, bool), np.ones(m, bool), np.arange(m) < 20, np.arange(m) >= 20,
             (np.arange(m) >= 5) & (np.arange(m) < 40), rng.random(m) < 0.5, rng.random(m) < 0.5]
    assert np.count_nonzero(masks[-1][1:] != masks[-1][:-1]) > REGION_COMPARE_MAX
    for mask in masks:
        assert held.count(edges, mask) == (int(cells(x)[mask].sum()), int(cells(x[:1_234])[mask].sum()))
    assert _HeldOut(x, None).count(edges, masks[4])[1] is None

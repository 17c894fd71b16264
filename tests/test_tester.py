"""HockeyStickTester verdicts and the audit loop.

False-positive control is the tester's promise: a mechanism that satisfies its claim is accused
with probability at most beta. It is checked (slow tests) on mechanisms exactly at their claim,
where the claim's privacy profile touches the mechanism's exact profile:
* Gaussian N(0, s^2) vs N(1, s^2) with ApproxDP(eps, H(eps)), H the exact profile of Balle & Wang
  (2018, Thm 8);
* Laplace Lap(0, 1) vs Lap(1, 1) with PureDP(1.0) (the Laplace mechanism's exact epsilon);
* Gaussian with RenyiDP(alpha, alpha / (2 s^2)) (Mironov 2017, Prop. 7).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpaudit import (
    AddRemove,
    ApproxDP,
    AuditResult,
    ClassifierHockeyStick,
    GridFinder,
    HockeyStickTester,
    Mechanism,
    PureDP,
    RandomFinder,
    RenyiDP,
    TestOutcome,
    audit,
)

from _harness import assert_rate_at_most, rate_pvalue
from exact_divergences import gaussian_mechanism_hockey_stick


SMALL = dict(hidden_sizes=(16,), epochs=10, batch_size=128, max_steps=100)


# --------------------------------------------------------------------------- fast: verdicts
@pytest.mark.parametrize("regions", ["exact", "classifier"])
@pytest.mark.parametrize("eps", [0.01, 1.0])
def test_flags_laplace_scale_mismatch(eps, regions):
    """NonDPLaplace1 of paper 000 on D0 = [1], D1 = [1, 0]: mean + Lap(2 / (n eps)) gives
    Lap(1, 2/eps) vs Lap(0.5, 1/eps), whose privacy loss is unbounded (different scales)."""
    rng = np.random.default_rng(100)
    p = 1.0 + rng.laplace(0.0, 2.0 / eps, (50_000, 1))
    q = 0.5 + rng.laplace(0.0, 1.0 / eps, (50_000, 1))
    beta = 0.01
    tester = HockeyStickTester(regions=regions)
    assert tester.region_path(p, q) == regions
    out = tester.test(p, q, PureDP(eps), beta=beta, rng=101)
    assert out.violation
    assert out.margin > 0.0
    assert out.delta_lower_bound > 0.0
    assert out.claimed_delta == 0.0
    # The evidence rejects the claimed epsilon itself (pure DP: delta = 0).
    assert out.epsilon_lower_bound > eps
    assert math.isfinite(out.witness_epsilon) and out.witness_epsilon >= 0.0
    # Both directions are bounded, their regions' shares add up to beta (the classifier: beta / 2
    # each; exact regions: a share per direction, halved when its epsilon region differs), and
    # the strongest is the one with the witness.
    assert [b.direction for b in out.bounds[:2]] == ["P||Q", "Q||P"]
    assert sum(b.beta for b in out.bounds) == pytest.approx(beta)
    kind = "HockeyStickBound" if regions == "classifier" else "HistogramBound"
    assert 2 <= len(out.bounds) <= 4 and all(type(b).__name__ == kind for b in out.bounds)
    # a direction certifies a second (epsilon) region only at 0.2 of its share (0.8 to the margin)
    for d in ("P||Q", "Q||P"):
        mine = [b for b in out.bounds if b.direction == d]
        assert len(mine) in (1, 2)
        if len(mine) == 2:
            assert mine[0].region.startswith("[margin]") and mine[1].region.startswith("[max epsilon]")
            assert mine[0].beta == pytest.approx(4 * mine[1].beta)
    strongest = out.bounds[out.strongest]
    allowed = PureDP(eps).delta_profile(out.witness_epsilon)
    assert strongest.delta_lower_bound(out.witness_epsilon) - allowed == pytest.approx(out.margin)
    assert out.beta == beta and out.tester == "hockey-stick"


def test_does_not_flag_identical_distributions():
    rng = np.random.default_rng(200)
    p, q = rng.laplace(size=(50_000, 1)), rng.laplace(size=(50_000, 1))
    # Identical distributions satisfy even 0-DP, the strictest claim.
    for claim in (PureDP(0.0), ApproxDP(0.1, 1e-6), RenyiDP(2.0, 0.01)):
        out = HockeyStickTester().test(p, q, claim, beta=0.05, rng=201)
        assert not out.violation
        assert out.margin <= 0.0
        assert out.epsilon_lower_bound == 0.0


def test_outcome_round_trip_through_json():
    rng = np.random.default_rng(300)
    p, q = rng.normal(0.0, 1.0, (4000, 1)), rng.normal(2.0, 1.0, (4000, 1))
    out = HockeyStickTester(ClassifierHockeyStick(**SMALL)).test(p, q, ApproxDP(0.5, 1e-3), beta=0.05, rng=1)
    assert out.violation  # mu = 2 is far from (0.5, 1e-3)-DP
    back = TestOutcome.from_dict(json.loads(json.dumps(out.to_dict())))
    assert back == out
    assert isinstance(back.bounds, tuple)


def test_outcome_of_disjoint_supports_round_trips():
    # Disjoint supports: no Q sample falls in the region (q_count = 0); the Clopper-Pearson upper
    # bound keeps q_mass_upper > 0, so the epsilon lower bound is large but finite.
    rng = np.random.default_rng(301)
    p, q = rng.uniform(0, 1, (2000, 1)), rng.uniform(5, 6, (2000, 1))
    out = HockeyStickTester(ClassifierHockeyStick(**SMALL)).test(p, q, PureDP(1.0), beta=0.05, rng=2)
    assert out.violation and 1.0 < out.epsilon_lower_bound < math.inf
    assert out.bounds[out.strongest].q_count == 0
    assert TestOutcome.from_dict(json.loads(json.dumps(out.to_dict(), allow_nan=True))) == out


def test_tester_validation_and_config():
    with pytest.raises(ValueError, match="beta"):
        HockeyStickTester().test(np.zeros(10), np.zeros(10), PureDP(1.0), beta=0.0)
    with pytest.raises(ValueError, match="beta"):
        HockeyStickTester().test(np.zeros(10), np.zeros(10), PureDP(1.0), beta=1.0)
    with pytest.raises(ValueError, match="either"):
        HockeyStickTester(ClassifierHockeyStick(), device="cpu")
    cfg = HockeyStickTester(ClassifierHockeyStick(**SMALL)).config()
    assert cfg["tester"] == "hockey-stick" and cfg["hidden_sizes"] == [16] and cfg["epochs"] == 10
    json.dumps(cfg)


# --------------------------------------------------------------------------- slow: false positives
FP_REPS = 150
FP_BETA = 0.2
FP_N = 2000


def _false_positive_count(sampler, claim, tag):
    tester = HockeyStickTester(ClassifierHockeyStick(**SMALL))
    rejections = 0
    for rep in range(FP_REPS):
        p, q = sampler(np.random.default_rng([rep, tag]))
        out = tester.test(p, q, claim, beta=FP_BETA, rng=[rep, tag, 1])
        rejections += out.violation
    return rejections


def _assert_rate_at_most_beta(rejections, label):
    print(f"{label}: {rejections}/{FP_REPS} rejections at beta={FP_BETA} (p={rate_pvalue(rejections, FP_REPS, FP_BETA):.3g})")
    assert_rate_at_most(rejections, FP_REPS, FP_BETA, what=f"{label} rejections")


@pytest.mark.slow
@pytest.mark.parametrize("sigma, eps", [(1.0, 1.0), (2.0, 0.25)])
def test_no_false_positives_gaussian_at_tight_approx_dp(sigma, eps):
    delta = float(gaussian_mechanism_hockey_stick(sigma, eps))  # exact: the claim is tight at eps
    claim = ApproxDP(eps, delta)

    def sampler(rng):
        return rng.normal(0.0, sigma, (FP_N, 1)), rng.normal(1.0, sigma, (FP_N, 1))

    _assert_rate_at_most_beta(_false_positive_count(sampler, claim, 11), f"Gaussian s={sigma} {claim.describe()}")


@pytest.mark.slow
def test_no_false_positives_laplace_at_exact_pure_dp():
    def sampler(rng):
        return rng.laplace(0.0, 1.0, (FP_N, 1)), rng.laplace(1.0, 1.0, (FP_N, 1))

    _assert_rate_at_most_beta(_false_positive_count(sampler, PureDP(1.0), 12), "Laplace b=1 1-DP")


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [2.0, 8.0])
def test_no_false_positives_gaussian_at_renyi_claim(alpha):
    sigma = 1.0
    claim = RenyiDP(alpha, alpha / (2.0 * sigma**2))

    def sampler(rng):
        return rng.normal(0.0, sigma, (FP_N, 1)), rng.normal(1.0, sigma, (FP_N, 1))

    _assert_rate_at_most_beta(_false_positive_count(sampler, claim, 13), f"Gaussian s={sigma} {claim.describe()}")


# --------------------------------------------------------------------------- fast: the audit loop
class NoisySum(Mechanism):
    """Sum of records in [0, 1] + Lap(1/eps): eps-DP under add/remove (sensitivity 1)."""

    def __init__(self, eps):
        self.eps = eps
        self.name = f"noisy-sum({eps:g})"

    def sample(self, dataset, num_samples, rng):
        return dataset.sum() + rng.laplace(0.0, 1.0 / self.eps, num_samples)


class BadScaleMean(Mechanism):
    """NonDPLaplace1 (paper 000 §6.1): mean + Lap(2 / (n eps)) with the true count n; not DP."""

    name = "bad-scale-mean"

    def __init__(self, eps):
        self.eps = eps

    def sample(self, dataset, num_samples, rng):
        n = len(dataset)
        return dataset.mean() + rng.laplace(0.0, 2.0 / (n * self.eps), num_samples)


def three_pairs():
    rel = AddRemove(max_size=5)
    return [
        rel.pair([1.0], [1.0, 0.0], description="a"),
        rel.pair([0.0], [0.0, 1.0], description="b"),
        rel.pair([0.5, 0.5], [0.5, 0.5, 1.0], description="c"),
    ]


def small_tester():
    return HockeyStickTester(ClassifierHockeyStick(**SMALL), regions="classifier")


def test_audit_splits_beta_and_records_every_trial():
    starts = []
    finder = GridFinder(three_pairs())
    beta = 0.03
    result = audit(
        NoisySum(1.0), PureDP(1.0), finder, tester=small_tester(), num_samples=2000, trials=10,
        beta=beta, seed=7, on_trial_start=lambda t, pair: starts.append((t, pair.description)),
    )
    assert result.trial_budget == 3  # capped by the finder's capacity
    assert result.beta_per_trial == beta / 3
    assert len(result.trials) == 3 and not result.stopped_early
    assert not result.violation  # a DP mechanism at its exact epsilon (fixed seed)
    assert [t.index for t in result.trials] == [0, 1, 2]
    assert [t.pair.description for t in result.trials] == ["a", "b", "c"]
    assert starts == [(0, "a"), (1, "b"), (2, "c")]
    for t in result.trials:
        assert t.outcome.beta == beta / 3
        assert all(b.beta == beta / 6 for b in t.outcome.bounds)
        assert t.num_samples == 2000 and t.seed_key == (t.index,)
        assert t.outcome.bounds[0].n_test_p == 1000
    assert len(finder.history) == 3
    assert result.strongest_trial == int(np.argmax([t.outcome.margin for t in result.trials]))
    assert result.seed == 7 and result.exit_code == 0
    assert result.mechanism == "noisy-sum(1)" and result.finder == "grid"


def test_audit_budget_below_capacity_and_unbounded_finder():
    r = audit(NoisySum(1.0), PureDP(1.0), GridFinder(three_pairs()), tester=small_tester(),
              num_samples=500, trials=2, beta=0.1, seed=1)
    assert r.trial_budget == 2 and r.beta_per_trial == 0.1 / 2 and len(r.trials) == 2
    finder = RandomFinder(AddRemove(max_size=4), rng=0)
    r = audit(NoisySum(1.0), PureDP(1.0), finder, tester=small_tester(),
              num_samples=500, trials=4, beta=0.1, seed=1)
    assert r.trial_budget == 4 and r.beta_per_trial == 0.1 / 4 and len(r.trials) == 4
    assert all(AddRemove(max_size=4).pair(t.pair.d0, t.pair.d1) for t in r.trials)


def test_audit_stops_at_first_violation_unless_exhaustive():
    mech = BadScaleMean(1.0)
    common = dict(tester=small_tester(), num_samples=20_000, trials=3, beta=0.01, seed=3)
    first = audit(mech, PureDP(1.0), GridFinder(three_pairs()), **common)
    assert first.violation and first.exit_code == 1
    assert len(first.trials) == 1 and first.stopped_early
    assert first.trials[0].outcome.violation
    assert first.beta_per_trial == 0.01 / 3  # the budget, not the trials actually run

    every = audit(mech, PureDP(1.0), GridFinder(three_pairs()), exhaustive=True, **common)
    assert len(every.trials) == 3 and not every.stopped_early and every.violation
    # The same seed gives the same first trial whether or not the audit goes on.
    assert every.trials[0].outcome == first.trials[0].outcome
    assert every.strongest_trial == int(np.argmax([t.outcome.margin for t in every.trials]))


def test_audit_json_round_trip():
    result = audit(BadScaleMean(1.0), PureDP(1.0), GridFinder(three_pairs()), tester=small_tester(),
                   num_samples=4000, trials=3, beta=0.05, exhaustive=True, seed=11,
                   neighbouring=AddRemove(max_size=5).to_dict())
    text = result.to_json()
    back = AuditResult.from_dict(json.loads(text))
    assert back == result
    assert back.to_dict() == result.to_dict()
    d = json.loads(text)
    assert d["schema_version"] == 2 and d["trials_run"] == 3
    assert d["verdict"] == ("violation" if result.violation else "no violation found")
    assert d["neighbouring"]["relation"] == "add-remove"
    with pytest.raises(ValueError, match="schema_version"):
        AuditResult.from_dict({**d, "schema_version": 99})


def test_audit_is_reproducible_from_the_seed():
    def run(seed):
        return audit(NoisySum(0.5), PureDP(0.5), GridFinder(three_pairs()), tester=small_tester(),
                     num_samples=1000, trials=3, beta=0.05, exhaustive=True, seed=seed)

    a, b, c = run(5), run(5), run(6)
    assert [t.outcome for t in a.trials] == [t.outcome for t in b.trials]
    assert [t.seed_key for t in a.trials] == [t.seed_key for t in b.trials]
    assert [t.outcome for t in a.trials] != [t.outcome for t in c.trials]


@pytest.mark.parametrize("kwargs, shown", [
    ({"num_samples": 4}, "num_samples"),
    ({"num_samples": 100.5}, "num_samples"),
    ({"trials": 0}, "trials"),
    ({"beta": 0.0}, "beta"),
    ({"beta": 1.0}, "beta"),
])
def test_audit_validation(kwargs, shown):
    args = dict(num_samples=100, trials=1, beta=0.1, seed=0)
    args.update(kwargs)
    with pytest.raises(ValueError, match=shown):
        audit(NoisySum(1.0), PureDP(1.0), GridFinder(three_pairs()), tester=small_tester(), **args)

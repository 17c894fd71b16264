"""Sequential sample sizes within a trial (dpaudit.audit.sequential, run_trial with stages)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.audit.executors import TrialSpec, run_trial, sample_pair, trial_streams
from dpaudit.audit.result import StageRecord, TrialRecord
from dpaudit.audit.sequential import (
    is_futile, normalise_stages, parse_stages, stage_betas, stage_schedule,
)
from dpaudit.audit.targets import assemble, load_target
from dpaudit.estimators.region import HockeyStickBound
from dpaudit.privacy.claims import PureDP
from dpaudit.testers import TestOutcome, make_tester


def _setup(name: str, epsilon: float):
    obj, kind = load_target(name)
    s = assemble(obj, kind, epsilon=epsilon)
    return s.mechanism, s.claim, s.known[0]


# ------------------------------------------------------------------ schedule
def test_auto_schedule_is_geometric_and_ends_at_num_samples():
    # geometric from 2000 while below n/6, then n/4 (where futility is first judged), then n
    assert stage_schedule(50_000) == (2000, 8000, 12_500, 50_000)
    assert stage_schedule(128_000) == (2000, 8000, 32_000, 128_000)
    assert stage_schedule(500_000) == (2000, 8000, 32_000, 125_000, 500_000)
    assert stage_schedule(10_000) == (2500, 10_000)
    assert stage_schedule(8000) == (2000, 8000)
    assert stage_schedule(7999) == (7999,)  # small: one stage
    assert stage_schedule(8) == (8,)


def test_off_and_explicit_schedules():
    assert stage_schedule(50_000, "off") == stage_schedule(50_000, None) == (50_000,)
    assert stage_schedule(50_000, [50_000]) == (50_000,)
    assert stage_schedule(50_000, "1000, 5000") == (1000, 5000, 50_000)  # num_samples appended
    assert stage_schedule(9000, [1000, 4000, 9000]) == (1000, 4000, 9000)
    assert normalise_stages("AUTO") == "auto"
    assert parse_stages("2_000,8000") == (2000, 8000)


@pytest.mark.parametrize("bad, words", [
    ([], "at least one"),
    ([8000, 2000], "strictly increasing"),
    ([2000, 2000], "strictly increasing"),
    ([4], ">= 8"),
    ([2000.5], ">= 8"),
    ("2000,abc", "'abc'"),
    (3.5, "'auto', 'off'"),
])
def test_bad_stages_are_named(bad, words):
    with pytest.raises(ValueError, match=words if words != ">= 8" else ">= 8"):
        stage_schedule(50_000, bad)


def test_stage_beyond_num_samples_is_an_error():
    with pytest.raises(ValueError, match="num_samples=5000"):
        stage_schedule(5000, [2000, 8000])


@pytest.mark.parametrize("n", [8, 3999, 4000, 50_000, 1_000_000, 12_345_678])
@pytest.mark.parametrize("beta", [1e-6, 0.01 / 7, 0.3])
def test_stage_betas_sum_to_at_most_beta(n, beta):
    sched = stage_schedule(n)
    betas = stage_betas(sched, beta)
    assert len(betas) == len(sched) and all(b > 0 for b in betas)
    assert math.fsum(betas) <= beta
    assert sum(betas) <= beta
    if len(sched) == 1:
        assert betas == (beta,)
    else:  # proportional to the sizes: the last stage keeps most
        assert betas[-1] >= 0.6 * beta


# ------------------------------------------------------------------ trials
def test_single_stage_is_exactly_the_fixed_size_trial():
    mech, claim, pair = _setup("zoo:dp-laplace", 1.0)
    tester = make_tester("histogram")
    spec = TrialSpec(3, pair, "grid", 5000, 0.01, 123, None)
    sample_ss, test_ss = trial_streams(123, 3)
    x0, x1 = sample_pair(mech, pair, 5000, sample_ss, None)
    expected = tester.test(x0, x1, claim, beta=0.01, rng=np.random.default_rng(test_ss))
    for stages in (None, (5000,)):
        rec = run_trial(mech, tester, claim, TrialSpec(3, pair, "grid", 5000, 0.01, 123, None, stages))
        assert rec.outcome == expected
        assert rec.num_samples == rec.full_samples == 5000
        assert rec.stop_reason == "budget" and len(rec.stages) == 1 and rec.stages[0].beta == 0.01
    assert run_trial(mech, tester, claim, spec).outcome == expected


def test_stops_at_first_rejection_on_a_buggy_mechanism():
    mech, claim, pair = _setup("zoo:non-dp-laplace-1", 0.01)
    tester = make_tester("histogram")
    sched = stage_schedule(50_000)
    rec = run_trial(mech, tester, claim, TrialSpec(0, pair, "grid", 50_000, 0.01, 7, None, sched))
    assert rec.outcome.violation and rec.stop_reason == "violation"
    assert rec.num_samples == 2000 < rec.full_samples == 50_000
    assert [s.num_samples for s in rec.stages] == [2000]
    assert rec.stages[0].beta == stage_betas(sched, 0.01)[0]
    # deterministic: the same seed gives the same record
    again = run_trial(mech, tester, claim, TrialSpec(0, pair, "grid", 50_000, 0.01, 7, None, sched))
    assert again.outcome == rec.outcome


def test_correct_mechanism_runs_its_stages_in_order_or_stops_for_futility():
    mech, claim, pair = _setup("zoo:dp-laplace", 1.0)
    sched = (2000, 8000, 20_000)
    rec = run_trial(mech, make_tester("histogram"), claim, TrialSpec(1, pair, "grid", 20_000, 0.01, 5, None, sched))
    assert not rec.outcome.violation
    ran = [s.num_samples for s in rec.stages]
    assert ran == list(sched[: len(ran)]) and rec.num_samples == ran[-1]
    # the 2000-sample stage is below 1/4 of the last: never judged futile
    assert len(ran) >= 2 and not rec.stages[0].futile
    assert rec.stop_reason == ("budget" if len(ran) == 3 else "futility")
    assert math.fsum(s.beta for s in rec.stages) <= 0.01


def _hs_outcome(p_count, q_count, n, beta=1e-3, tester="histogram"):
    bounds = tuple(
        HockeyStickBound.certify(p_count, n, q_count, n, epsilon=1.0, beta=beta / 2, direction=d,
                                 n_train=n, region="S")
        for d in ("P||Q", "Q||P")
    )
    from dpaudit.testers import profile_outcome

    return profile_outcome(tester, bounds, PureDP(1.0), beta)


def test_futility_rule():
    claim = PureDP(1.0)
    # P(S) ~ Q(S) ~ 0.5 on 50k held-out samples: no region could reject eps = 1
    futile = _hs_outcome(25_000, 25_100, 50_000)
    assert not futile.violation and is_futile(futile, claim, scale=4.0, beta_ratio=4.0)
    # few counts: a larger sample could still show a violation
    assert not is_futile(_hs_outcome(3, 1, 1000), claim, scale=25.0, beta_ratio=25.0)
    # a violation is never futile
    assert not is_futile(_hs_outcome(5000, 10, 10_000), claim)
    # a region exactly at the claim's boundary (P(S) = e Q(S)): the last stage would reject it only
    # with its own false-accusation chance -> futile; a region estimated beyond the boundary that
    # this stage could not certify yet (P(S) = e^1.2 Q(S) on 1000 samples) -> not futile
    q0 = 0.1
    at_boundary = _hs_outcome(round(math.e * q0 * 10_000), round(q0 * 10_000), 10_000)
    assert not at_boundary.violation and is_futile(at_boundary, claim, scale=4.0, beta_ratio=4.0)
    beyond = _hs_outcome(round(math.exp(1.2) * q0 * 1000), round(q0 * 1000), 1000)
    assert not beyond.violation and not is_futile(beyond, claim, scale=4.0, beta_ratio=4.0)
    # stages below 1/4 of the last one are never judged futile (a rare event may not show yet)
    assert not is_futile(futile, claim, scale=4.5, beta_ratio=4.0)
    # unknown bound kinds: never futile
    other = TestOutcome(tester="renyi", violation=False, beta=0.01, bounds=(), strongest=0, objective=-1.0,
                        margin=-1.0)
    assert not is_futile(other, claim)


class _FutileTester:
    """A tester that always reports a clearly futile outcome (counts scaled to the sample)."""

    name = "histogram"

    def __init__(self):
        self.calls = []

    def test(self, p, q, claim, *, beta, rng=None):
        n = len(p)
        self.calls.append((n, beta))
        return _hs_outcome(n // 2, n // 2, n, beta=beta)


def test_futility_stops_the_trial():
    mech, claim, pair = _setup("zoo:dp-laplace", 1.0)
    tester = _FutileTester()
    sched = (50_000, 80_000, 200_000)
    rec = run_trial(mech, tester, claim, TrialSpec(0, pair, "grid", 200_000, 0.01, 1, None, sched))
    assert rec.stop_reason == "futility" and rec.num_samples == 50_000 and rec.full_samples == 200_000
    assert len(tester.calls) == 1 and rec.stages[0].futile


# ------------------------------------------------------------------ records
def test_record_json_round_trip_and_old_records():
    mech, claim, pair = _setup("zoo:non-dp-laplace-1", 0.01)
    rec = run_trial(mech, make_tester("histogram"), claim,
                    TrialSpec(0, pair, "grid", 50_000, 0.01, 7, None, stage_schedule(50_000)))
    d = json.loads(json.dumps(rec.to_dict()))
    assert d["num_samples"] == 2000 and d["planned_samples"] == 50_000 and d["stop_reason"] == "violation"
    back = TrialRecord.from_dict(d)
    assert back == rec
    old = {k: v for k, v in d.items() if k not in ("stages", "stop_reason", "planned_samples")}
    legacy = TrialRecord.from_dict(old)
    assert legacy.stages == () and legacy.stopped_by == "violation" and legacy.full_samples == 2000
    assert StageRecord.from_dict(rec.stages[0].to_dict()) == rec.stages[0]


def test_audit_records_stages_and_off_matches_fixed():
    from dpaudit.audit import audit
    from dpaudit.search.finders import GridFinder

    mech, claim, pair = _setup("zoo:non-dp-laplace-1", 0.01)
    res = audit(mech, claim, GridFinder([pair]), tester=make_tester("histogram"), num_samples=20_000,
                trials=1, seed=3)
    t = res.trials[0]
    assert res.violation and t.num_samples == 2000 and t.stop_reason == "violation"
    off = audit(mech, claim, GridFinder([pair]), tester=make_tester("histogram"), num_samples=20_000,
                trials=1, seed=3, stages="off")
    assert off.trials[0].num_samples == 20_000 and len(off.trials[0].stages) == 1
    with pytest.raises(ValueError, match="strictly increasing"):
        audit(mech, claim, GridFinder([pair]), num_samples=20_000, trials=1, seed=3, stages=[5000, 100])


# ------------------------------------------------------------------ error control
@pytest.mark.slow
def test_false_accusation_rate_of_sequential_trials_is_at_most_beta():
    """200 seeded sequential trials (3 stages, histogram tester) of randomized response at its
    exact guarantee, each at beta = 0.3: the number of violations V must pass the one-sided exact
    binomial test of H0 "rate <= 0.3" at level 0.001, i.e. V <= the 0.999 quantile of
    Binomial(200, 0.3). Deterministic (fixed seeds)."""
    mech, claim, pair = _setup("zoo:randomized-response", 1.0)
    tester = make_tester("histogram")
    beta, reps = 0.3, 200
    sched = (500, 2000, 4000)
    violations = sum(
        run_trial(mech, tester, claim, TrialSpec(i, pair, "grid", 4000, beta, 20240, None, sched)).outcome.violation
        for i in range(reps)
    )
    limit = int(stats.binom.ppf(0.999, reps, beta))
    assert violations <= limit, (violations, limit)

"""The sequential tester's chunked draws and its sizing step after a violation (issue 43;
docs/sequential.md §10): the sizing bound never changes the verdict, covers the true epsilon at its
confidence, and the combined verdict accuses an exact mechanism at most beta of the time."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from dpaudit.cli.app import app
from dpaudit.privacy.claims import ApproxDP, PureDP
from dpaudit.testers.sequential import SequentialTester, draw_chunks

from _harness import assert_coverage_at_least, assert_rate_above, assert_rate_at_most


def _rr(rng, n, eps):
    keep = math.exp(eps) / (1.0 + math.exp(eps))
    return (rng.random(n) < keep).astype(float), (rng.random(n) >= keep).astype(float)


def test_draw_chunks_cut_a_batch_into_fixed_pieces():
    assert draw_chunks(0, 32) == [32]  # the first batch (learning only) is drawn whole
    c = draw_chunks(1000, 1300, 32, 0.125)
    assert sum(c) == 300 and c[0] == 125 and all(m >= 16 for m in c[:-1])
    assert draw_chunks(40, 60, 32, 0.125) == [16, 4]  # at least half the first batch, the rest to the end
    assert draw_chunks(1000, 1300, 32, 1.0) == [300]
    with pytest.raises(ValueError, match="draw_fraction"):
        SequentialTester(draw_fraction=0.0)
    with pytest.raises(ValueError, match="size_factor"):
        SequentialTester(size_factor=-1.0)


def test_sizing_leaves_the_verdict_unchanged(rng):
    """The same pairs give the same verdict, stopping pair, e-value and first-evidence bound with and
    without the sizing step; without it no sizing is reported."""
    p, q = _rr(rng, 20_000, 2.0)
    on = SequentialTester().test(p, q, PureDP(1.0), beta=0.01)
    off = SequentialTester(size=False).test(p, q, PureDP(1.0), beta=0.01)
    b_on, b_off = on.bounds[0], off.bounds[0]
    assert on.violation and off.violation
    assert (b_on.samples_used, b_on.samples_drawn, b_on.log_e_value) == (b_off.samples_used, b_off.samples_drawn,
                                                                         b_off.log_e_value)
    assert on.epsilon_lower_bound == off.epsilon_lower_bound
    assert b_off.sized_epsilon is None and b_off.sizing_samples == 0
    assert b_on.sizing_samples == max(1000, 4 * b_on.samples_drawn) and b_on.sized_epsilon > on.epsilon_lower_bound
    assert "sized on" in on.note and "sized on" not in off.note


@pytest.mark.parametrize("claim, truth", [
    (PureDP(1.0), 2.0),  # randomized response at eps 2: P({1}) / Q({1}) = e^2
    (ApproxDP(1.0, 0.05), math.log((math.exp(2) / (1 + math.exp(2)) - 0.05) / (1 / (1 + math.exp(2))))),
])
def test_the_sizing_bound_covers_the_true_epsilon(rng, claim, truth):
    """Randomized response at eps 2 against a claim of 1: the sizing bound (at the claimed delta)
    lies above the mechanism's true epsilon there at most beta of the time (the bound is close to
    the truth here: 1000 fresh pairs on the region {1})."""
    beta, runs, covered, sized = 0.2, 60, 0, []
    tester = SequentialTester()
    for _ in range(runs):
        p, q = _rr(rng, 4000, 2.0)
        o = tester.test(p, q, claim, beta=beta, rng=0)
        s = o.bounds[0].sized_epsilon
        assert o.violation and s is not None
        covered += s <= truth + 1e-12
        sized.append(s)
    assert_coverage_at_least(covered, runs, 1 - beta, what="sizing bounds at or below the true epsilon")
    assert np.median(sized) > 0.8 * truth  # and it is useful: most of the leak is shown


def test_the_coverage_check_can_fail(rng):
    """The same count flags a bound that is not one: the sizing region's plug-in ratio P/Q."""
    runs, above = 30, 0
    for _ in range(runs):
        p, q = _rr(rng, 1000, 2.0)
        above += math.log(p.mean() / q.mean()) > 2.0
    assert_rate_above(above, runs, 0.2, what="plug-in ratios above the truth")


def test_the_combined_verdict_accuses_exact_mechanisms_at_most_beta(rng):
    """Randomized response and Laplace exactly at eps 1 (tight): the verdict with its sizing step
    (a violation, or a sizing bound above the claim) at rate <= beta over seeds."""
    tester, beta, accused, runs = SequentialTester(), 0.2, 0, 0
    for _ in range(30):
        for p, q in (_rr(rng, 3000, 1.0), (rng.laplace(0, 1, 3000), 1 + rng.laplace(0, 1, 3000))):
            o = tester.test(p, q, PureDP(1.0), beta=beta, rng=0)
            s = o.bounds[0].sized_epsilon
            accused += bool(o.violation or (s is not None and s > 1.0))
            runs += 1
    assert_rate_at_most(accused, runs, beta, what="accusations of exact mechanisms (with sizing)")


def test_cli_states_the_size_and_no_size_skips_it():
    args = ["test", "zoo:non-dp-laplace-1", "--epsilon", "1", "--samples", "4000", "--seed", "0", "--trials", "2"]
    res = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert res.exit_code == 1 and "size of the leak" in res.stdout and "fresh pairs" in res.stdout
    res = CliRunner().invoke(app, args + ["--json"])
    bound = json.loads(res.stdout)["trials"][0]["outcome"]["bounds"][0]
    assert res.exit_code == 1 and bound["sized_epsilon"] >= 0 and bound["sizing_samples"] >= 1000
    res = CliRunner().invoke(app, args + ["--no-size"], env={"COLUMNS": "200"})
    assert res.exit_code == 1 and "size of the leak" not in res.stdout


def test_sizing_budget_is_tied_to_the_detection():
    t = SequentialTester()
    assert t.sizing_samples(80, 50_000) == 1000 and t.sizing_samples(2000, 50_000) == 8000
    assert t.sizing_samples(20_000, 50_000) == 50_000  # at most the trial's budget
    assert t.sizing_samples(300, 50_000, per_call=True) == 300  # per call: at most doubles the calls

"""The fixed split of an audit's beta over its trials (dpaudit.audit.beta_split; docs/sequential.md,
"Splitting beta over the trials"): the per-trial betas sum to at most beta, are what the option says,
reach the trials, are recorded in the result and its JSON, and are shown by the CLI."""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from dpaudit import AddRemove, GridFinder, PureDP, audit
from dpaudit.audit.beta_split import resolve_beta_split, trial_betas
from dpaudit.audit.result import AuditResult
from dpaudit.cli.app import app
from dpaudit.testers import make_tester
from dpaudit.mechanisms.zoo import get as zoo_get


@pytest.mark.parametrize("beta", [0.01, 0.1, 0.3, 1e-6])
@pytest.mark.parametrize("trials", [1, 2, 3, 7, 10, 13, 100])
def test_trial_betas_sum_to_at_most_beta_and_follow_the_split(beta, trials):
    even = trial_betas(beta, trials, "even")
    front = trial_betas(beta, trials, "front")
    for b in (even, front):
        assert len(b) == trials and all(x > 0 for x in b)
        assert math.fsum(b) <= beta  # never more than beta, even by a rounding
        assert math.fsum(b) == pytest.approx(beta, rel=1e-12)  # and nothing wasted
    assert all(x == pytest.approx(beta / trials, rel=1e-15) for x in even)
    if trials == 1:
        assert front == even
    else:
        assert front[0] == pytest.approx(beta / 2, rel=1e-15)
        assert all(x == pytest.approx(beta / (2 * (trials - 1)), rel=1e-15) for x in front[1:])


def test_split_names_and_bad_input():
    assert resolve_beta_split("auto", make_tester("sequential")) == "front"
    assert resolve_beta_split(None, make_tester("sequential+float-screen")) == "front"
    assert resolve_beta_split("auto", make_tester("hockey-stick")) == "even"
    assert resolve_beta_split("EVEN", make_tester("sequential")) == "even"
    with pytest.raises(ValueError, match="'halves'"):
        resolve_beta_split("halves")
    with pytest.raises(ValueError, match="'halves'"):
        trial_betas(0.1, 3, "halves")
    with pytest.raises(ValueError, match="1.5"):
        trial_betas(1.5, 3)
    with pytest.raises(ValueError, match="0"):
        trial_betas(0.1, 0)


def _pairs():
    rel = AddRemove(max_size=3)
    return [rel.pair([1.0], [1.0, 0.0]), rel.pair([0.0], [0.0, 1.0]), rel.pair([0.5], [0.5, 1.0])]


@pytest.mark.parametrize("split, expected", [("auto", "front"), ("front", "front"), ("even", "even")])
def test_each_trial_runs_at_its_share_and_the_result_records_it(split, expected):
    """A correct mechanism, every trial run (exhaustive): trial t's outcome is at trial_betas[t]."""
    mech = zoo_get("randomized-response").mechanism(1.0)
    r = audit(mech, PureDP(1.0), GridFinder(_pairs()), tester=make_tester("sequential"), num_samples=400,
              trials=3, beta=0.03, seed=0, exhaustive=True, beta_split=split)
    want = trial_betas(0.03, 3, expected)
    assert r.beta_split == expected and r.trial_betas == want and r.beta_per_trial == want[0]
    assert [t.outcome.beta for t in r.trials] == list(want)
    back = AuditResult.from_dict(r.to_dict())
    assert back.trial_betas == want and back.beta_split == expected
    old = r.to_dict()
    del old["trial_betas"], old["beta_split"]  # a report written before the split existed: even
    assert AuditResult.from_dict(old).betas == (want[0],) * 3


def test_cli_states_the_split():
    runner = CliRunner()
    base = ["test", "zoo:randomized-response", "--epsilon", "1", "--samples", "400", "--trials", "3",
            "--beta", "0.03", "--seed", "0", "--exhaustive"]
    res = runner.invoke(app, base, catch_exceptions=False, env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.stdout
    assert "front-loaded: 0.015 to the first, 0.0075 to each of the other 2" in res.stdout
    res = runner.invoke(app, [*base, "--beta-split", "even", "--json"], catch_exceptions=False)
    import json

    d = json.loads(res.stdout)
    assert d["beta_split"] == "even" and d["trial_betas"] == pytest.approx([0.01] * 3)
    res = runner.invoke(app, [*base, "--beta-split", "halves"])
    assert res.exit_code == 2

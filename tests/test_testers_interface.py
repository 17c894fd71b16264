"""The common tester interface: CombinedTester's beta split and aggregation, NotApplicable,
inconclusive outcomes through the audit loop and the CLI, and JSON round trips of nested
outcomes. Uses small scripted testers so every number is known in advance."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pytest

from dpaudit import (
    ApproxDP,
    AuditResult,
    CombinedTester,
    GridFinder,
    HockeyStickTester,
    InvalidClaimError,
    Mechanism,
    PureDP,
    TestOutcome,
    Tester,
    audit,
    make_tester,
)
from dpaudit.datasets import AddRemove
from dpaudit.estimators.base import DivergenceBound, bound_from_dict, register_bound_type
from dpaudit.testers import NotApplicable


@register_bound_type
@dataclass(frozen=True)
class _ScriptedBound(DivergenceBound):
    tag: str = ""


class Scripted(Tester):
    """Returns a fixed verdict and records the beta and claim it was called with."""

    def __init__(self, name, *, margin=-1.0, inconclusive=False, eps_lb=None, supports=True, raises=None):
        self.name = name
        self._margin, self._inconclusive, self._eps_lb = margin, inconclusive, eps_lb
        self._supports, self._raises = supports, raises
        self.calls = []

    def supports(self, claim):
        return self._supports

    def test(self, p_samples, q_samples, claim, *, beta, rng=None):
        self.calls.append(beta)
        if self._raises:
            raise NotApplicable(self._raises)
        bounds = tuple(
            _ScriptedBound(divergence=self.name, direction=d, estimate=0.0, lower=self._margin, beta=beta / 2, tag=d)
            for d in ("P||Q", "Q||P")
        )
        return TestOutcome(
            tester=self.name, violation=self._margin > 0, beta=beta, bounds=bounds, strongest=1,
            margin=self._margin, objective=self._margin, threshold=0.0, epsilon_lower_bound=self._eps_lb,
            inconclusive=self._inconclusive, note="needs more" if self._inconclusive else "",
        )


X = np.zeros((10, 1))


def test_combined_splits_beta_over_the_applicable_testers():
    a, b, c = Scripted("a"), Scripted("b"), Scripted("c", supports=False)
    out = CombinedTester([a, b, c]).test(X, X, PureDP(1.0), beta=0.1, rng=0)
    assert a.calls == [0.05] and b.calls == [0.05] and c.calls == []
    assert [p.tester for p in out.parts] == ["a", "b"]
    assert len(out.bounds) == 4 and not out.violation and out.status == "pass"


def test_combined_is_a_violation_if_any_part_is_and_points_at_its_bound():
    out = CombinedTester([Scripted("a", margin=-0.5, eps_lb=0.2), Scripted("b", margin=0.3, eps_lb=1.5)]).test(
        X, X, PureDP(1.0), beta=0.2
    )
    assert out.violation and out.status == "violation"
    assert out.margin == 0.3
    assert out.bounds[out.strongest].divergence == "b" and out.bounds[out.strongest].direction == "Q||P"
    assert out.epsilon_lower_bound == 1.5  # the largest any part gives
    assert out.objective == -0.5  # the first tester's objective: one scale across trials


def test_combined_numbers_are_the_strongest_parts_own():
    """Issue 44, item 0: the epsilon and delta lower bounds of a combined outcome are those of the part
    whose bound it shows, never a larger one of another part (a non-violating one here)."""
    out = CombinedTester([Scripted("a", margin=0.3, eps_lb=1.5), Scripted("b", margin=-0.1, eps_lb=2.0)]).test(
        X, X, PureDP(1.0), beta=0.2
    )
    assert out.strongest_part.tester == "a" and out.bounds[out.strongest].divergence == "a"
    assert out.epsilon_lower_bound == 1.5 and out.margin == 0.3


def test_combined_inconclusive_only_if_every_part_is():
    some = CombinedTester([Scripted("a", inconclusive=True), Scripted("b")]).test(X, X, PureDP(1.0), beta=0.1)
    assert some.status == "pass" and "a: needs more" in some.note
    every = CombinedTester([Scripted("a", inconclusive=True), Scripted("b", inconclusive=True)]).test(
        X, X, PureDP(1.0), beta=0.1
    )
    assert every.status == "inconclusive"


def test_combined_skips_not_applicable_testers_but_still_counts_them_in_the_split():
    a, b = Scripted("a", raises="continuous vectors"), Scripted("b")
    out = CombinedTester([a, b]).test(X, X, PureDP(1.0), beta=0.1)
    assert b.calls == [0.05]  # the split does not depend on which testers could run
    assert [p.tester for p in out.parts] == ["b"] and "a: skipped (continuous vectors)" in out.note
    with pytest.raises(NotApplicable):
        CombinedTester([Scripted("a", raises="x")]).test(X, X, PureDP(1.0), beta=0.1)


def test_combined_rejects_claims_no_tester_supports_and_empty_lists():
    with pytest.raises(InvalidClaimError, match="can test"):
        CombinedTester([Scripted("a", supports=False)]).test(X, X, PureDP(1.0), beta=0.1)
    with pytest.raises(ValueError, match="at least one"):
        CombinedTester([])


@pytest.mark.parametrize("beta", [0.0, 1.0, -0.1, float("nan"), True, "0.1"])
def test_combined_rejects_bad_beta(beta):
    with pytest.raises(ValueError, match="beta"):
        CombinedTester([Scripted("a")]).test(X, X, PureDP(1.0), beta=beta)


def test_nested_outcome_json_round_trip():
    out = CombinedTester([Scripted("a", margin=0.25, eps_lb=math.inf), Scripted("b", inconclusive=True)]).test(
        X, X, PureDP(1.0), beta=0.1
    )
    d = json.loads(json.dumps(out.to_dict(), allow_nan=True))
    assert d["status"] == "violation" and d["parts"][1]["status"] == "inconclusive"
    assert d["bounds"][0]["type"] == "_ScriptedBound"
    back = TestOutcome.from_dict(d)
    assert back == out and isinstance(back.parts[0].bounds[0], _ScriptedBound)


def test_bound_from_dict_reads_old_reports_and_rejects_unknown_types():
    old = {  # a schema-1 hockey-stick bound (no "type")
        "divergence": "hockey-stick", "direction": "P||Q", "epsilon": 0.5, "estimate": 0.1, "lower": 0.05,
        "beta": 0.01, "p_mass_lower": 0.3, "q_mass_upper": 0.15, "p_count": 10, "q_count": 3,
        "n_test_p": 20, "n_test_q": 20, "n_train": 40, "region": "score > 0",
    }
    b = bound_from_dict(old)
    assert type(b).__name__ == "HockeyStickBound" and b.delta_lower_bound(0.0) == pytest.approx(0.15)
    with pytest.raises(ValueError, match="unknown bound type"):
        bound_from_dict({**old, "type": "Nope"})


class Constant(Mechanism):
    name = "constant"

    def sample(self, dataset, num_samples, rng):
        return rng.normal(size=(num_samples, 1))


def _pairs():
    rel = AddRemove(max_size=3)
    return [rel.pair([[0.0]], [[0.0], [1.0]]), rel.pair([[1.0]], [[1.0], [0.0]])]


def test_audit_reports_inconclusive_when_every_trial_is():
    r = audit(Constant(), PureDP(1.0), GridFinder(_pairs()), tester=Scripted("a", inconclusive=True),
              num_samples=16, trials=2, beta=0.1, seed=0)
    assert r.inconclusive and r.verdict == "inconclusive" and r.exit_code == 3
    assert json.loads(r.to_json())["verdict"] == "inconclusive"
    assert AuditResult.from_dict(json.loads(r.to_json())) == r
    mixed = audit(Constant(), PureDP(1.0), GridFinder(_pairs()),
                  tester=CombinedTester([Scripted("a", inconclusive=True), Scripted("b")]),
                  num_samples=16, trials=2, beta=0.1, seed=0)
    assert not mixed.inconclusive and mixed.exit_code == 0


def test_audit_refuses_a_claim_the_tester_cannot_test():
    with pytest.raises(InvalidClaimError, match="cannot test"):
        audit(Constant(), PureDP(1.0), GridFinder(_pairs()), tester=Scripted("a", supports=False),
              num_samples=16, trials=1, seed=0)


def test_make_tester_names():
    assert isinstance(make_tester("hockey-stick"), HockeyStickTester)
    with pytest.raises(ValueError, match="unknown tester 'nope'"):
        make_tester("nope")


def test_schema_1_reports_still_load():
    r = audit(Constant(), PureDP(1.0), GridFinder(_pairs()), tester=Scripted("a"), num_samples=16, trials=1,
              beta=0.1, seed=0)
    d = json.loads(r.to_json())
    d["schema_version"] = 1
    for t in d["trials"]:  # schema 1 outcomes had no status/parts/note fields
        for k in ("status", "parts", "note", "inconclusive", "threshold"):
            t["outcome"].pop(k)
    back = AuditResult.from_dict(d)
    assert back.trials[0].outcome.parts == () and back.trials[0].outcome.note == ""


# --------------------------------------------------------------------------------------------
# the hockey-stick tester says "inconclusive" when no data of its size could reject
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("claim", [PureDP(0.01), PureDP(1.0), ApproxDP(1.0, 1e-5)])
def test_hockey_stick_needed_samples_is_where_the_best_case_first_rejects(claim):
    from dpaudit.testers import HockeyStickTester

    t = HockeyStickTester()
    n = t.needed_samples(claim, 0.01)
    assert t.best_case_margin(n, n, claim, 0.01) > 0.0 >= t.best_case_margin(n - 1, n - 1, claim, 0.01)


def test_hockey_stick_exact_regions_vacuous_sample_is_inconclusive_with_the_needed_size():
    from dpaudit.testers import HockeyStickTester

    t = HockeyStickTester()
    claim = PureDP(1.0)
    small = t.test(np.zeros((20, 1)), np.ones((20, 1)), claim, beta=0.01, rng=0)
    assert small.status == "inconclusive" and not small.violation
    needed = int(small.note.split("needs n >= ")[1].split()[0])
    assert needed > 20
    # the most separated data at the needed size does reject; one sample fewer cannot
    at = t.test(np.zeros((needed, 1)), np.ones((needed, 1)), claim, beta=0.01, rng=0)
    assert at.status == "violation"
    below = t.test(np.zeros((needed - 1, 1)), np.ones((needed - 1, 1)), claim, beta=0.01, rng=0)
    assert below.status == "inconclusive" and f"needs n >= {needed}" in below.note


def test_hockey_stick_vacuous_sample_is_inconclusive_with_the_needed_size():
    from dpaudit.testers import HockeyStickTester

    t = HockeyStickTester(regions="classifier")
    claim = PureDP(1.0)
    needed = t.needed_samples(claim, 0.01)
    tiny = np.r_[np.zeros(needed // 2 - 1), np.ones(needed // 2 - 1)][:, None]  # n < needed per dataset
    out = t.test(tiny, -tiny, claim, beta=0.01, rng=0)
    assert out.status == "inconclusive" and f"needs n >= {needed}" in out.note and not out.violation
    # the most separated data at the needed size does reject: the bound is not vacuous there
    big = t.test(np.ones((needed, 1)), -np.ones((needed, 1)), claim, beta=0.01, rng=0)
    assert big.status == "violation"


def test_cli_vacuous_hockey_stick_run_exits_3_with_the_needed_size():
    from typer.testing import CliRunner

    from dpaudit.cli import app

    res = CliRunner().invoke(app, ["test", "zoo:non-dp-laplace-1", "--epsilon", "0.01", "--samples", "10",
                                   "--trials", "2", "--seed", "0"])
    assert res.exit_code == 3, res.output
    assert "needs n >=" in " ".join(res.output.split())

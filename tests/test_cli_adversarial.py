"""`dpaudit test --adversarial` and `dpaudit.audit(..., adversarial=...)`: the adversarial-inputs
stage (dpaudit.audit.adversarial.screen_stage) on a user's own function, at a stated share of beta."""

import json
import textwrap

import pytest
from typer.testing import CliRunner

from dpaudit.cli import app

runner = CliRunner()

ARGS = ["--epsilon", "1", "--samples", "1000", "--trials", "1", "--seed", "0", "--search", "grid",
        "--pairs", "[[[1.0], [1.0, 0.0]]]", "--tester", "hockey-stick"]


@pytest.fixture
def advmech(tmp_path, monkeypatch):
    """A naive noisy sum (NaN in, NaN out) and one that validates its records first."""
    (tmp_path / "advmech.py").write_text(textwrap.dedent(
        """
        import numpy as np

        def naive_sum(dataset, rng):
            return float(np.sum(dataset)) + rng.laplace(0.0, 1.0)

        def checked_sum(dataset, rng):
            d = np.asarray(dataset, dtype=float)
            if d.size and not (np.all(np.isfinite(d)) and d.min() >= 0.0 and d.max() <= 1.0):
                raise ValueError("records must be finite and in [0, 1]")
            return float(np.sum(d)) + rng.laplace(0.0, 1.0)
        """
    ))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_adversarial_stage_in_the_cli(advmech):
    # a NaN record makes the naive sum release NaN, never seen without it: a certified leak, exit 1
    res = runner.invoke(app, ["test", "advmech:naive_sum", *ARGS, "--adversarial", "--json"], catch_exceptions=False)
    assert res.exit_code == 1, res.output
    d = json.loads(res.stdout)
    assert d["violation"] and d["violation_kind"] == "adversarial input"
    assert d["trials"][0]["outcome"]["violation"] is False  # the ordinary trial passes: only the stage found it
    by_kind = {r["kind"]: r for r in d["adversarial"]["results"]}
    assert by_kind["nan"]["status"] == "leak" and by_kind["nan"]["leak"]["hits_q"] == 0
    assert "a NaN" in by_kind["nan"]["leak"]["description"] and "a NaN on D0 = [0], D1 = [0, nan]" in d["advice"]
    # the search went on past the NaN output: the naive sum does not clip, so huge records shift it
    assert d["adversarial"]["search"]["families"] == ["specials"]
    assert [r["evidence"] for r in d["adversarial"]["results"] if r["status"] == "leak"] == ["special-output", "distribution"]
    # beta split: a tenth to the stage, the rest over the trials
    assert d["adversarial"]["beta"] == pytest.approx(0.001) and d["beta_per_trial"] == pytest.approx(0.009)
    assert d["beta"] == pytest.approx(0.01)

    # the validating function raises on every adversarial value: rejected (a pass), exit 0; terminal lines
    res = runner.invoke(app, ["test", "advmech:checked_sum", *ARGS, "--adversarial"], catch_exceptions=False,
                        env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "Adversarial inputs" in res.output and "nan: rejected" not in res.output  # kind in its own column
    assert "rejected: the library raised ValueError: records must be finite" in res.output
    assert "leak" not in res.output.split("Adversarial inputs")[1].split("Strongest evidence")[0]

    # default off: the inputs audited do not change, and the JSON has no stage
    res = runner.invoke(app, ["test", "advmech:naive_sum", *ARGS, "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "adversarial" not in json.loads(res.stdout)


def test_adversarial_report_and_api(advmech, tmp_path):
    import advmech as m  # noqa: PLC0415

    from dpaudit import audit  # noqa: PLC0415
    from dpaudit.audit import AuditResult  # noqa: PLC0415
    from dpaudit.datasets import AddRemove, Domain  # noqa: PLC0415
    from dpaudit.mechanisms.base import CallableMechanism  # noqa: PLC0415
    from dpaudit.privacy import PureDP, RenyiDP  # noqa: PLC0415
    from dpaudit.report import render_result  # noqa: PLC0415
    from dpaudit.search.finders import GridFinder  # noqa: PLC0415

    mech = CallableMechanism(m.naive_sum, pass_rng=True)
    rel = AddRemove(Domain((0.0,), (1.0,)))
    pairs = [rel.pair([[1.0]], [[1.0], [0.0]])]
    r = audit(mech, PureDP(1.0), GridFinder(pairs), num_samples=1000, trials=1, seed=0, adversarial=rel,
              neighbouring=rel.to_dict())
    assert r.violation and r.violation_kind == "adversarial input" and r.exit_code == 1
    back = AuditResult.from_dict(json.loads(r.to_json()))
    assert back.adversarial == json.loads(json.dumps(r.adversarial)) and back.violation_kind == "adversarial input"
    render_result(json.loads(r.to_json()), tmp_path / "r.md")
    md = (tmp_path / "r.md").read_text()
    assert "ADVERSARIAL-INPUT LEAK" in md and "## Adversarial inputs" in md and "| nan |" in md
    with pytest.raises(ValueError, match="Renyi"):
        audit(mech, RenyiDP(2.0, 1.0), GridFinder(pairs), num_samples=1000, trials=1, seed=0, adversarial=rel)
    with pytest.raises(ValueError, match="needs a relation"):
        audit(mech, PureDP(1.0), GridFinder(pairs), num_samples=1000, trials=1, seed=0, adversarial=True)


def test_pairs_accept_nan_infinity_and_negative_zero(advmech):
    # JSON's NaN / Infinity tokens: such a pair is certified in the adversarial stage (no --adversarial
    # needed); -0.0 stays a negative zero in an ordinary trial pair
    pairs = '[[[0.0], [0.0, NaN]], [[0.0], [0.0, -Infinity]], [[-0.0], [-0.0, 1.0]]]'
    res = runner.invoke(app, ["test", "advmech:naive_sum", "--epsilon", "1", "--samples", "1000", "--trials", "1",
                              "--seed", "0", "--search", "grid", "--pairs", pairs, "--tester", "hockey-stick", "--json"],
                        catch_exceptions=False)
    assert res.exit_code == 1, res.output
    d = json.loads(res.stdout)
    given = [r for r in d["adversarial"]["results"] if r["family"] == "given"]
    assert [r["status"] for r in given] == ["leak", "leak"] and d["adversarial"]["search"]["families"] == []
    assert given[0]["d1"][1] == ["nan"] and given[1]["d1"][1] == ["-inf"]
    assert d["adversarial"]["search"]["max_candidates"] == 2  # beta split over the two given pairs only
    trial_pair = d["trials"][0]["pair"]
    assert json.dumps(trial_pair["d0"]) == "[[-0.0]]"  # the sign of zero is kept
    bad = runner.invoke(app, ["test", "advmech:naive_sum", "--epsilon", "1", "--pairs", "[[[[NaN, 1.0]], [[0.0]]]]"])
    assert bad.exit_code == 2 and "dimension" in bad.output

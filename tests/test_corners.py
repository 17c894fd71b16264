"""Corners audited by default (issue 15, item 3): the empty dataset, the size range's options,
Rényi claims tested by the Rényi tester, and vacuous tests reported as inconclusive."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import norm
from typer.testing import CliRunner

from dpaudit.cli import app
from dpaudit.datasets import AddRemove, LabelledAddRemove, PrivacyUnitAddRemove, Replace, make_relation
from dpaudit.errors import NeighbouringError
from dpaudit.mechanisms.zoo import ZooEntry, get
from dpaudit.mechanisms.zoo.corners import NoisySumEmptyShortcut, RDPGaussianSum, conversion_hidden_sigma
from dpaudit.privacy.claims import PureDP, RenyiDP
from dpaudit.privacy.rdp import rdp_delta
from dpaudit.testers import CombinedTester, default_tester_name, make_tester
from dpaudit.testing import DPViolation, assert_dp

runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args), catch_exceptions=False)


def run_json(*args):
    res = run(*args, "--json", "--seed", "0")
    return res.exit_code, json.loads(res.stdout)


# --- sizes ------------------------------------------------------------------------------------


def test_add_remove_relations_include_the_empty_dataset_by_default_replace_does_not():
    assert AddRemove().min_size == 0 and AddRemove().max_size == 10
    assert LabelledAddRemove().min_size == 0 and PrivacyUnitAddRemove().min_size == 0
    assert Replace().min_size == 1
    assert make_relation("add-remove").min_size == 0 and make_relation("replace").min_size == 1
    AddRemove().pair([], [[0.5]])  # accepted
    with pytest.raises(NeighbouringError, match=r"give --min-size 0 \(min_size=0\)"):
        AddRemove(min_size=1).pair([], [[0.5]])
    with pytest.raises(NeighbouringError, match=r"D1 has 3 records.*give --max-size 3 \(max_size=3\)"):
        AddRemove(max_size=2).pair([[0.1], [0.2]], [[0.1], [0.2], [0.3]])


def test_a_given_pair_outside_the_size_range_names_the_option_and_the_value():
    res = run("test", "zoo:dp-laplace", "--epsilon", "1", "--min-size", "1", "--pairs", "[[[], [[0.5]]]]")
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert "given pair 1" in text and "outside the size range [1, 10]" in text and "--min-size 0" in text
    res = run("test", "zoo:dp-laplace", "--epsilon", "1", "--max-size", "2", "--pairs", "[[[[0.1], [0.2]], [[0.1], [0.2], [0.3]]]]")
    assert res.exit_code == 2 and "--max-size 3" in " ".join(res.output.split())


def test_zoo_entries_that_cannot_run_on_the_empty_dataset_say_why():
    with pytest.raises(ValueError, match="min_size_reason"):
        ZooEntry(name="x", factory=NoisySumEmptyShortcut, claim_kind="pure", private=True, summary="s", bug=None,
                 true_guarantee="t", min_size=1)
    assert get("non-dp-laplace-1").min_size == 1 and "true count" in get("non-dp-laplace-1").min_size_reason
    assert get("dp-laplace").min_size == 0 and get("svt1").min_size == 1  # replace


# --- the empty-dataset entry ------------------------------------------------------------------


def test_empty_shortcut_is_the_laplace_sum_except_on_the_empty_dataset():
    mech = NoisySumEmptyShortcut(1.0)
    rng = np.random.default_rng(0)
    assert np.all(mech.sample(np.empty((0, 1)), 100, rng) == 0.0)
    out = mech.sample(np.array([[1.0]]), 20_000, rng).ravel()
    assert abs(out.mean() - 1.0) < 0.05 and abs(np.mean(np.abs(out - 1.0)) - 1.0) < 0.05  # Laplace(1, 1)
    assert not np.any(out == 0.0)


@pytest.mark.parametrize("search", ["auto", "bayes"])
def test_empty_shortcut_is_flagged_by_default_with_no_size_option(search):
    # auto: its witness pair [] vs [[1]] first; bayes (no witness): the search's first proposals
    # are [] vs [x] at the domain's faces. Both flag it at trial 1 (seeds 0-4 measured).
    code, out = run_json("test", "zoo:noisy-sum-empty-shortcut", "--epsilon", "1", "--search", search)
    assert code == 1
    assert len(out["trials"]) == 1 and out["trials"][0]["pair"]["d0"] == []


def test_a_correct_mean_is_not_accused_with_the_empty_dataset_in_the_search():
    # the hockey-stick tester alone: dp-laplace is private in exact arithmetic only (the default's
    # float screen names it a floating-point leak); this test is about the empty dataset
    code, out = run_json("test", "zoo:dp-laplace", "--epsilon", "1", "--trials", "4", "--tester", "hockey-stick")
    assert code == 0, out
    assert any(t["pair"]["d0"] == [] for t in out["trials"])  # the empty dataset was audited


# --- Rényi claims -----------------------------------------------------------------------------


def test_rdp_claims_default_to_hockey_stick_and_renyi_with_beta_split():
    # the default is sequential for every claim (issue 43; its Rényi e-process tests RDP claims);
    # the staged default of before keeps hockey-stick + renyi for them
    assert default_tester_name(RenyiDP(2.0, 1.0)) == default_tester_name(PureDP(1.0)) == "sequential+float-screen"
    assert default_tester_name(RenyiDP(2.0, 1.0), sequential=False) == "hockey-stick+renyi+float-screen"
    assert default_tester_name(PureDP(1.0), sequential=False) == "hockey-stick+float-screen"
    tester = make_tester("hockey-stick+renyi")
    assert isinstance(tester, CombinedTester) and [t.name for t in tester.testers] == ["hockey-stick", "renyi"]
    assert tester.config()["tester"] == "hockey-stick+renyi"
    with pytest.raises(ValueError, match="hockey-stick\\+nope"):
        make_tester("hockey-stick+nope")


@pytest.mark.parametrize("alpha, epsilon", [(2.0, 1.0), (2.0, 0.5), (4.0, 1.0)])
def test_conversion_calibrated_sigma_hides_under_the_converted_profile_but_breaks_the_rdp_claim(alpha, epsilon):
    sigma = conversion_hidden_sigma(alpha, epsilon)
    correct = math.sqrt(alpha / (2 * epsilon))
    assert sigma < 0.9 * correct
    # Every (eps', delta') guarantee the claim converts to holds (so no hockey-stick test can flag it) ...
    grid = np.linspace(0.0, 40.0, 8001)
    gauss = norm.cdf(0.5 / sigma - grid * sigma) - np.exp(grid) * norm.cdf(-0.5 / sigma - grid * sigma)
    assert np.all(gauss <= rdp_delta(alpha, epsilon, grid) + 1e-12)
    # ... while the true Rényi divergence at alpha exceeds the claim by > 20 %.
    mech = RDPGaussianSum(epsilon, alpha, calibration="conversion")
    assert mech.true_rdp_epsilon > 1.2 * epsilon
    assert RDPGaussianSum(epsilon, alpha).true_rdp_epsilon == pytest.approx(epsilon)


def test_rdp_bug_is_flagged_by_default_and_missed_by_hockey_stick_alone():
    args = ("test", "zoo:rdp-gaussian-conversion-calibrated", "--epsilon", "1", "--alpha", "2")
    code, out = run_json(*args)
    assert code == 1 and len(out["trials"]) == 1  # trial 1 (seeds 0-4 measured)
    assert out["tester"]["tester"] == "sequential+float-screen"  # its Rényi e-process holds the evidence
    assert out["evidence"]["divergence"] == "renyi", out["evidence"]
    code, out = run_json(*args, "--tester", "staged")
    assert code == 1 and out["tester"]["tester"] == "hockey-stick+renyi+float-screen"
    code, out = run_json(*args, "--tester", "hockey-stick", "--trials", "3")
    assert code == 0 and len(out["trials"]) == 3


def test_assert_dp_uses_the_renyi_default_too():
    with pytest.raises(DPViolation):
        assert_dp("zoo:rdp-gaussian-conversion-calibrated", epsilon=1.0, alpha=2.0, trials=1)


def test_the_correct_rdp_gaussian_is_not_accused_by_default():
    # private in exact arithmetic: neither distributional tester accuses it (the default's float
    # screen may name its float64 outputs a floating-point leak: docs/floating_point.md §4b)
    for tester in ("sequential", "staged"):  # the default (issue 43), and the staged default of before
        code, out = run_json("test", "zoo:rdp-gaussian", "--epsilon", "1", "--alpha", "2", "--trials", "3",
                             "--tester", tester)
        assert out["violation_kind"] != "distributional", out
        parts = [p for t in out["trials"] for p in (t["outcome"]["parts"] or [t["outcome"]])]
        assert {p["tester"] for p in parts} >= ({"sequential"} if tester == "sequential" else {"hockey-stick", "renyi"})
        assert not any(p["violation"] for p in parts if p["tester"] != "float-bits")


# --- vacuous tests ----------------------------------------------------------------------------


@pytest.mark.parametrize("tester", [None, "hockey-stick", "renyi", "mmd", "histogram", "all"])
def test_vacuous_tests_are_inconclusive_with_the_needed_sample_size(tester):
    args = ["test", "zoo:non-dp-laplace-1", "--epsilon", "0.01", "--samples", "10", "--trials", "2"]
    if tester:
        args += ["--tester", tester]
    code, out = run_json(*args)
    assert code == 3, out
    notes = " ".join(t["outcome"]["note"] for t in out["trials"])
    assert "needs n >= " in notes


def test_a_mechanism_that_raises_on_the_empty_dataset_is_audited_from_one_record_with_a_note(tmp_path, monkeypatch):
    (tmp_path / "cornermean.py").write_text(
        "import numpy as np\n"
        "def mean(dataset, rng):\n"
        "    return float(np.sum(dataset)) / len(dataset) + rng.laplace(0.0, 1.0)\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    res = run("test", "cornermean:mean", "--epsilon", "1", "--samples", "2000", "--trials", "2", "--seed", "0",
              "--tester", "hockey-stick")  # (float64 Laplace: the default's float screen would flag it)
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "the empty dataset is left out" in text and "ZeroDivisionError" in text and "--min-size 0" in text
    # Asked for explicitly, the empty dataset is audited and the mechanism's error is bad input.
    res = run("test", "cornermean:mean", "--epsilon", "1", "--samples", "2000", "--trials", "2", "--seed", "0",
              "--min-size", "0", "--search", "bayes")
    assert res.exit_code == 2 and "on dataset []" in res.output


def test_assert_dp_warns_when_the_empty_dataset_is_left_out():
    def mean(dataset, rng):  # raises ZeroDivisionError on the empty dataset
        return float(np.sum(dataset)) / len(dataset) + rng.laplace(0.0, 1.0)

    with pytest.warns(UserWarning, match="the empty dataset is left out.*--min-size 0"):
        assert_dp(mean, epsilon=1.0, samples=2000, trials=1, seed=0)


@pytest.mark.parametrize("body, said", [
    ("return float('nan') if len(dataset) == 0 else float(np.sum(dataset)) + rng.laplace(0.0, 1.0)",
     "on it the mechanism returned a non-finite value nan"),
    ("return None if len(dataset) == 0 else float(np.sum(dataset)) + rng.laplace(0.0, 1.0)",
     "on it the mechanism returned a non-numeric, complex or ragged value None"),
    ("return float(np.sum(dataset)) / len(dataset) + rng.laplace(0.0, 1.0)",
     "on it the mechanism raised ZeroDivisionError"),
])
def test_the_empty_dataset_note_says_what_the_mechanism_did(tmp_path, monkeypatch, body, said):
    module = f"emptynote_{tmp_path.name}"  # one module per case (sys.modules keeps the first)
    (tmp_path / f"{module}.py").write_text(f"import numpy as np\ndef mech(dataset, rng):\n    {body}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    res = run("test", f"{module}:mech", "--epsilon", "1", "--samples", "500", "--trials", "1", "--seed", "0",
              "--processes", "1")
    text = " ".join(res.output.split())
    assert said in text, text
    assert "give --min-size 0 (min_size=0) explicitly" in text


def test_no_empty_dataset_note_when_the_mechanism_fails_everywhere(tmp_path, monkeypatch):
    (tmp_path / "alwaysnan.py").write_text("def mech(dataset):\n    return float('nan')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    res = run("test", "alwaysnan:mech", "--epsilon", "1", "--samples", "500", "--trials", "1", "--processes", "1")
    assert res.exit_code == 2
    assert "empty dataset is left out" not in res.output and "returned a non-finite value nan" in res.output

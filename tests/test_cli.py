"""End-to-end tests of the command line (exit codes, evidence printed, JSON report, bad input)."""

from __future__ import annotations

import json
import textwrap

import pytest
from typer.testing import CliRunner

from dpaudit.cli import app

runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A user module with per-call mechanisms, importable as `usermech`."""
    (tmp_path / "usermech.py").write_text(textwrap.dedent(
        """
        import numpy as np

        def noisy_sum(dataset, rng):
            return dataset.sum() + rng.laplace(0.0, 1.0)      # sensitivity 1, scale 1: 1-DP

        def leaky_sum(dataset, rng):
            return dataset.sum() + rng.laplace(0.0, 0.1)      # 10-DP, claimed 1-DP

        def returns_nan(dataset):
            return float("nan")

        def raises(dataset):
            raise RuntimeError("database offline")

        NOT_A_MECHANISM = 3
        """
    ))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_buggy_zoo_mechanism_exits_1_and_prints_witness(tmp_path):
    report = tmp_path / "r.json"
    res = run("test", "zoo:non-dp-laplace-1", "--epsilon", "0.01", "--samples", "20000",
              "--seed", "0", "--report", str(report), "--quiet")
    assert res.exit_code == 1, res.output
    assert "VIOLATION" in res.output
    assert "D0" in res.output and "D1" in res.output
    data = json.loads(report.read_text())
    assert data["violation"] is True
    ev = data["evidence"]
    assert ev["divergence_lower_bound"] > 0
    assert ev["epsilon_lower_bound"] > 0.01
    t = data["trials"][0]
    assert t["planned_samples"] == 20000 and t["seed_key"] == [0]
    # the sequential default (issue 43) stops at the batch where its wealth reached 1/beta: before
    # the staged default's first stage of 2,000 per dataset
    assert t["num_samples"] < 2000 and t["stop_reason"] == "violation"
    assert t["stages"][-1]["num_samples"] == t["num_samples"] and t["stages"][-1]["status"] == "violation"
    flat = " ".join(res.output.replace("│", " ").split())  # the table's text, wrapped cells joined
    assert f"from {t['num_samples']:,} of 20,000 samples per dataset" in flat and "--estimate certifies" in flat
    # the region S is shown as the estimator describes it (brackets kept: no Rich markup)
    assert "test region S" in flat and ev["region"] in flat and "output in" in ev["region"]
    # trials are numbered from 1 in tables and JSON alike; index stays the random-stream key
    assert t["trial"] == 1 and t["index"] == 0 and ev["trial"] == 1 and ev["index"] == 0
    assert "(trial 1)" in res.output
    assert set(data["versions"]) >= {"dpaudit", "numpy", "scipy", "torch", "python"}


def test_correct_zoo_mechanism_exits_0():
    res = run("test", "zoo:dp-laplace", "--epsilon", "0.01", "--samples", "20000", "--trials", "2",
              "--seed", "0", "--quiet")
    assert res.exit_code == 0, res.output
    assert "no violation found" in res.output


def test_json_output_parses_and_matches_exit_code():
    res = run("test", "zoo:non-dp-laplace-1", "--epsilon", "1", "--samples", "20000", "--seed", "1", "--json")
    data = json.loads(res.stdout)
    assert data["violation"] is (res.exit_code == 1)
    assert data["claim"] == {"kind": "pure-dp", "epsilon": 1.0}


def test_zoo_lists_mechanisms_with_claims():
    res = run("zoo")
    assert res.exit_code == 0
    for name in ("dp-laplace", "non-dp-laplace-1", "non-dp-laplace-2", "non-dp-gaussian-1", "non-dp-gaussian-2"):
        assert name in res.output
    data = json.loads(run("zoo", "--json").stdout)
    assert {e["name"]: e["private"] for e in data}["dp-laplace"] is True
    assert {e["name"]: e["private"] for e in data}["non-dp-laplace-1"] is False


def test_user_function_targets(user_module):
    leaky = run("test", "usermech:leaky_sum", "--epsilon", "1", "--samples", "3000", "--seed", "0",
                "--pairs", "[[[1.0], [1.0, 1.0]]]", "--search", "grid", "--quiet")
    assert leaky.exit_code == 1, leaky.output
    ok = run("test", "usermech:noisy_sum", "--epsilon", "1", "--samples", "3000", "--seed", "0",
             "--pairs", "[[[1.0], [1.0, 1.0]]]", "--search", "grid", "--quiet", "--tester", "hockey-stick")
    assert ok.exit_code == 0, ok.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["zoo:dp-laplace", "--epsilon", "-1"], "epsilon"),
        (["zoo:dp-laplace", "--epsilon", "nan"], "epsilon"),
        (["zoo:dp-laplace", "--epsilon", "1", "--delta", "1.5"], "delta"),
        (["zoo:dp-laplace", "--epsilon", "1", "--alpha", "0.5"], "alpha"),
        (["zoo:dp-laplace", "--epsilon", "1", "--alpha", "2", "--delta", "0.1"], "not both"),
        (["zoo:no-such-thing", "--epsilon", "1"], "no-such-thing"),
        (["not_a_target", "--epsilon", "1"], "TARGET"),
        (["no_such_module_xyz:f", "--epsilon", "1"], "no_such_module_xyz"),
        (["zoo:dp-laplace", "--epsilon", "1", "--samples", "2"], "samples"),
        (["zoo:dp-laplace", "--epsilon", "1", "--beta", "0"], "beta"),
        (["zoo:dp-laplace", "--epsilon", "1", "--domain", "0-1"], "LOWER:UPPER"),
        (["zoo:dp-laplace", "--epsilon", "1", "--pairs", "[[[0.5], [0.1, 0.2]]]"], "not add/remove neighbours"),
        (["zoo:dp-laplace", "--epsilon", "1", "--pairs", "[[[5.0], [5.0, 0.0]]]"], "outside the domain"),
        (["zoo:dp-laplace", "--epsilon", "1", "--pairs", "{not json"], "JSON"),
        (["zoo:dp-laplace", "--epsilon", "1", "--pairs", "missing.json"], "no such file: missing.json"),
        (["zoo:dp-laplace", "--epsilon", "1", "--pairs", "no/such/pairs"], "no such file: no/such/pairs"),
    ],
)
def test_bad_input_exits_2_with_a_message(args, message):
    res = run("test", *args, "--quiet")
    assert res.exit_code == 2, res.output
    assert message in res.output


def test_grid_search_without_pairs_is_bad_input(user_module):
    res = run("test", "usermech:noisy_sum", "--epsilon", "1", "--search", "grid")
    assert res.exit_code == 2 and "--pairs" in res.output


@pytest.mark.parametrize("target, message", [
    ("usermech:returns_nan", "non-finite value nan"),
    ("usermech:raises", "database offline"),
    ("usermech:NOT_A_MECHANISM", "neither a Mechanism"),
])
def test_broken_mechanisms_exit_2_naming_the_problem(user_module, target, message):
    res = run("test", target, "--epsilon", "1", "--samples", "50", "--quiet")
    assert res.exit_code == 2, res.output
    assert message in res.output.replace("\n", " ")
    if "usermech:r" in target:
        assert "on dataset [" in res.output


def test_help_explains_the_command():
    res = run("test", "--help")
    assert res.exit_code == 0
    for word in ("--epsilon", "--delta", "--alpha", "--neighbouring", "--samples", "--trials", "--report", "--exhaustive"):
        assert word in res.output


@pytest.mark.parametrize("command", [[], ["test"], ["zoo"], ["version"], ["audit-scores"], ["account"], ["verify"]])
@pytest.mark.parametrize("columns", ["80", "400"])
def test_help_has_no_bool_placeholders_or_doubled_brackets(command, columns):
    res = runner.invoke(app, [*command, "--help"], catch_exceptions=False, env={"COLUMNS": columns})
    assert res.exit_code == 0
    assert "<bool>" not in res.output
    text = " ".join(res.output.replace("│", " ").split())  # a wrapped line must not hide ") ("
    assert ") (" not in text
    if command == ["test"]:
        assert "Epsilon, in nats (the claimed epsilon)." in text and "<float>" in text  # values keep their type


def test_vocabulary_texts_take_a_note_without_doubled_brackets():
    from dpaudit.cli.options import VOCABULARY

    for idea, (_, _, text) in VOCABULARY.items():
        assert not text.rstrip().endswith(")"), idea  # option() appends " (note)"


# --------------------------------------------------------------------------------------------
# exit codes CI can trust: an internal error is 4, never 1
# --------------------------------------------------------------------------------------------
def _main(monkeypatch, capsys, *argv):
    import sys

    from dpaudit import cli

    monkeypatch.setattr(sys, "argv", ["dpaudit", *argv])
    with pytest.raises(SystemExit) as exc:
        cli.main()
    out = capsys.readouterr()
    return exc.value.code, out.out + out.err


def test_internal_error_exits_4_with_a_hint_and_debug_shows_the_traceback(monkeypatch, capsys):
    import importlib

    audit_module = importlib.import_module("dpaudit.audit.loop")  # the module the command imports audit from

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug inside dpaudit")

    monkeypatch.setattr(audit_module, "audit", broken)  # the command imports it at call time
    code, text = _main(monkeypatch, capsys, "test", "zoo:dp-laplace", "--epsilon", "1", "--trials", "1",
                       "--samples", "200")
    assert code == 4
    assert "internal error" in text and "ZeroDivisionError" in text and "--debug" in text
    assert "Traceback" not in text
    code, text = _main(monkeypatch, capsys, "--debug", "test", "zoo:dp-laplace", "--epsilon", "1", "--trials", "1",
                       "--samples", "200")
    assert code == 4 and "Traceback" in text and "a bug inside dpaudit" in text


def test_main_keeps_the_command_exit_codes(monkeypatch, capsys):
    code, text = _main(monkeypatch, capsys, "--version")
    assert code == 0 and "dpaudit" in text
    code, _ = _main(monkeypatch, capsys, "test", "zoo:no-such-mechanism", "--epsilon", "1")
    assert code == 2
    code, text = _main(monkeypatch, capsys, "test", "zoo:dp-laplace")  # missing --epsilon: click's usage error
    assert code == 2 and "epsilon" in text
    code, _ = _main(monkeypatch, capsys, "account", "-z", "2", "-k", "3", "--delta", "1e-5", "--quiet")
    assert code == 0


def test_debug_shows_the_mechanisms_own_traceback(user_module, monkeypatch, capsys):
    code, text = _main(monkeypatch, capsys, "--debug", "test", "usermech:raises", "--epsilon", "1",
                       "--trials", "1", "--samples", "50")
    assert code == 2 and "database offline" in text and "Traceback" in text


def test_cuda_on_a_machine_without_it_is_a_one_line_bad_input_error(monkeypatch, capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    code, text = _main(monkeypatch, capsys, "test", "zoo:dp-laplace", "-e", "1", "--device", "cuda")
    assert code == 2 and "CUDA is not available" in text and "Traceback" not in text
    from dpaudit._torch import check_device

    assert check_device("cpu") == "cpu"
    with pytest.raises(ValueError, match="not a torch device"):
        check_device("gpu7")


def test_progress_lines_when_stderr_is_not_a_terminal():
    res = run("test", "zoo:dp-laplace", "--epsilon", "1", "--trials", "2", "--samples", "2000", "--seed", "0",
              "--exhaustive")
    assert res.exit_code == 0, res.output
    assert "[dpaudit] trial 1/2 done" in res.output and "[dpaudit] trial 2/2 done" in res.output
    # the heartbeat (printed by a timer thread while a trial runs), called directly: no timing involved
    import io

    from rich.console import Console

    from dpaudit.cli.app import _PlainProgress

    buf = io.StringIO()
    plain = _PlainProgress(Console(file=buf, width=200), enabled=True, interval=0)
    with plain:
        plain.begin(5, 1, "-0.01")
        plain.trial(2, "witness pair")
        plain.heartbeat()
    assert "[dpaudit] trial 2/5 running (witness pair); 1 done, best margin -0.01" in buf.getvalue()


def test_one_vocabulary_and_exit_table_in_help():
    from dpaudit.cli.options import EXIT_CODES

    top = run("--help")
    assert top.exit_code == 0
    for word in ("--beta, -b", "--samples, -n", "--noise-multiplier, -z", "Exit codes"):
        assert word in top.output
    for code, _ in EXIT_CODES:
        assert f"{code}:" in top.output
    for cmd in ("test", "audit-scores", "account", "verify"):
        out = run(cmd, "--help").output
        assert "Exit codes" in out and "--beta" in out and "-b" in out, cmd
        assert "--confidence" not in out and "--false-positive-rate" not in out and "--claim-epsilon" not in out
    assert "-n" in run("test", "--help").output


def test_deprecated_flags_of_account_and_verify_still_work():
    new = run("account", "-z", "2", "-k", "3", "--delta", "1e-5", "--method", "mc", "--samples", "2000",
              "--seed", "0", "--beta", "0.1", "--json")
    old = run("account", "-z", "2", "-k", "3", "--delta", "1e-5", "--method", "mc", "--samples", "2000",
              "--seed", "0", "--confidence", "0.9", "--json")
    assert new.exit_code == old.exit_code == 0, old.output
    n, o = json.loads(new.stdout), json.loads(old.stdout)
    assert n["epsilon"] == o["epsilon"] and n["beta"] == 0.1 and abs(o["beta"] - 0.1) < 1e-12
    assert "--confidence is deprecated" in old.stderr
    plan = ("verify", "-z", "2", "-k", "10", "--epsilon", "3", "--delta", "1e-3", "--plan-only", "--json")
    a, b = run(*plan, "--beta", "0.01"), run(*plan, "--false-positive-rate", "0.01")
    assert a.exit_code == b.exit_code == 0
    assert json.loads(a.stdout) == json.loads(b.stdout) and json.loads(a.stdout)["beta"] == 0.01
    assert "--false-positive-rate is deprecated" in b.stderr


def test_accounting_results_serialise_what_json_prints():
    """The CLI only renders: the library results' ``to_dict`` is what ``account``/``verify --json`` print."""
    from dpaudit.accounting import certified
    from dpaudit.accounting.prv import Composition
    from dpaudit.accounting.verifier import plan_verification

    comp = Composition.dpsgd(1.1, 0.01, 100)
    printed = json.loads(run("account", "-z", "1.1", "-q", "0.01", "-k", "100", "--delta", "1e-5", "--method", "rdp",
                             "--seed", "3", "--json").stdout)
    res = certified.get_epsilon(comp, 1e-5, method="rdp", rng=3)
    d = res.to_dict(command="account", method_requested="rdp", seed=3, beta=0.05)
    assert {k: v for k, v in d.items() if k != "seconds"} == {k: v for k, v in printed.items() if k != "seconds"}
    assert list(d)[:4] == ["command", "method_requested", "seed", "beta"]
    assert "command" not in res.to_dict()
    printed = json.loads(run("verify", "-z", "1.1", "-q", "0.01", "-k", "10", "--epsilon", "1", "--delta", "1e-3",
                             "--plan-only", "--json").stdout)
    comp = Composition.dpsgd(1.1, 0.01, 10)
    assert plan_verification(comp, 1.0, 1e-3).to_dict(composition=comp) == printed


def test_trials_row_reads_n_of_budget_run(tmp_path):
    report = tmp_path / "r.md"
    res = runner.invoke(app, ["test", "zoo:non-dp-laplace-1", "--epsilon", "0.01", "--samples", "20000", "--seed", "0",
                              "--quiet", "--report", str(report)], catch_exceptions=False, env={"COLUMNS": "200"})
    assert res.exit_code == 1
    assert "1 of 10 run (stopped at the first violation)" in res.stdout and " run of " not in res.stdout
    assert "1 of 10 run (stopped at the first violation)" in report.read_text()
    res = runner.invoke(app, ["test", "zoo:dp-laplace", "--epsilon", "1", "--samples", "2000", "--trials", "2",
                              "--seed", "0", "--quiet"], catch_exceptions=False, env={"COLUMNS": "200"})
    # the trials row says nothing of a stop (a sequential trial's note may name its futility stop)
    assert res.exit_code == 0 and "2 of 2 run" in res.stdout and "stopped at the first" not in res.stdout


def test_the_recorded_seed_of_an_unseeded_audit_replays_its_search(tmp_path):
    """Without --seed the CLI draws the seed before building the finder, so the seed it records
    replays the same pairs (the random finder's proposals included), and a resume would too."""
    import json as _json

    from typer.testing import CliRunner

    from dpaudit.cli import app

    args = ["test", "zoo:dp-laplace", "-e", "1", "--search", "random", "--trials", "3", "--samples", "2000",
            "--exhaustive", "--json", "--quiet", "--processes", "1"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    d1 = _json.loads(first.stdout)
    again = CliRunner().invoke(app, args + ["--seed", str(d1["seed"])])
    d2 = _json.loads(again.stdout)
    pairs = lambda d: [(t["pair"]["d0"], t["pair"]["d1"]) for t in d["trials"]]  # noqa: E731
    assert pairs(d1) == pairs(d2) and len(pairs(d1)) == 3


@pytest.mark.parametrize("search", ["random", "bayes", "evolution"])
def test_a_63_bit_seed_as_reports_record_it_is_accepted_by_every_finder(search):
    """Reports record seeds of up to 63 bits (and their reproduce commands pass them back); the
    finders' samplers take 32-bit seeds, so the finder's seed is reduced, not refused."""
    from typer.testing import CliRunner

    from dpaudit.cli import app

    res = CliRunner().invoke(app, ["test", "zoo:dp-laplace", "-e", "1", "--search", search, "--trials", "2",
                                   "--samples", "2000", "--exhaustive", "--quiet", "--seed", "4463707990823986450"])
    assert res.exit_code == 0, res.output

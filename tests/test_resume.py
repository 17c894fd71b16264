"""Persistent audits: resuming after an interruption loses no finished trial and repeats none, and
a resume with different settings is refused (the trial budget, hence beta per trial, is fixed when
the audit is created)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from dpaudit import PureDP, audit
from dpaudit.datasets import AddRemove
from dpaudit.errors import DPAuditError
from dpaudit.search import BayesFinder, RandomFinder
from dpaudit.audit.ledger import SettingsMismatchError, StudyInUseError, compare_settings

from test_search_support import MeanShiftTester, NoisyMean

optuna = pytest.importorskip("optuna")

REL = AddRemove(min_size=1, max_size=5)  # NoisyMean has no mean on the empty dataset


def run(storage, *, finder=None, trials=6, seed=1, tester=None, claim=None, resume=True, **kw):
    return audit(
        NoisyMean(0.3), claim or PureDP(1.0), finder or RandomFinder(REL, rng=11), tester=tester or MeanShiftTester(5.0),
        num_samples=kw.pop("num_samples", 64), trials=trials, beta=0.1, seed=seed, exhaustive=True,
        storage=storage, study_name="t", resume=resume, **kw,
    )


class Interrupt(BaseException):
    """Stands in for KeyboardInterrupt (which pytest would treat as a request to stop)."""


def test_resume_refuses_different_settings_naming_them():
    storage = optuna.storages.InMemoryStorage()
    first = run(storage, trials=4)
    assert len(first.trials) == 4
    cases = [
        (dict(trials=5), "trial_budget: stored 4, given 5"),
        (dict(seed=2), "seed: stored 1, given 2"),
        (dict(claim=PureDP(2.0)), "claim: epsilon: stored 1.0, given 2.0"),
        (dict(tester=MeanShiftTester(4.0)), "tester: threshold: stored 5.0, given 4.0"),
        (dict(num_samples=65), "num_samples: stored 64, given 65"),
        (dict(finder=BayesFinder(REL, method="tpe")), "finder: stored 'random', given 'bayes'"),
        (dict(beta_split="front"), "beta_split: stored 'even', given 'front'"),
    ]
    for kwargs, message in cases:
        with pytest.raises(SettingsMismatchError, match=message.replace("(", r"\(").replace(")", r"\)")):
            run(storage, **{"trials": 4, **kwargs})
    with pytest.raises(SettingsMismatchError) as info:  # every difference is named at once
        run(storage, trials=7, seed=3)
    assert "trial_budget" in str(info.value) and "seed" in str(info.value)
    # settings left as None come from storage
    again = audit(NoisyMean(0.3), PureDP(1.0), RandomFinder(REL, rng=11), tester=MeanShiftTester(5.0),
                  storage=storage, study_name="t", resume=True, exhaustive=True)
    assert again.trial_budget == 4 and again.seed == 1 and again.beta == 0.1
    assert again.beta_split == "even" and again.trial_betas == first.trial_betas  # the stored split
    assert [t.to_dict() for t in again.trials] == [t.to_dict() for t in first.trials]
    assert len(again.study["runs"]) == 2


def test_compare_settings_ignores_where_the_tester_runs():
    stored = {"tester": {"tester": "hockey-stick", "device": "cpu", "epochs": 8}}
    assert compare_settings(stored, {"tester": {"tester": "hockey-stick", "device": "cuda", "epochs": 8}}) == []
    assert compare_settings(stored, {"tester": {"tester": "hockey-stick", "device": "cpu", "epochs": 9}}) == [
        "tester: epochs: stored 8, given 9"
    ]


def test_an_existing_audit_needs_resume_and_a_live_driver_blocks_it():
    storage = optuna.storages.InMemoryStorage()
    run(storage, trials=2)
    with pytest.raises(DPAuditError, match="already exists.*--resume"):
        run(storage, trials=2, resume=False)
    study = optuna.load_study(study_name="t", storage=storage)
    study.set_user_attr("dpaudit.driver", {"host": socket.gethostname(), "pid": os.getppid(), "run": 7})
    with pytest.raises(StudyInUseError, match=f"process {os.getppid()}"):
        run(storage, trials=2)


@pytest.mark.parametrize("make_finder", [
    lambda: RandomFinder(REL, rng=11),
    lambda: BayesFinder(REL, method="tpe", seed=5),
], ids=["random", "tpe"])
def test_interrupted_audit_resumes_without_losing_or_repeating_trials(make_finder):
    storage = optuna.storages.InMemoryStorage()
    seen = []

    def stop_after_three(record):
        seen.append(record)
        if len(seen) == 3:
            raise Interrupt()

    with pytest.raises(Interrupt):
        run(storage, finder=make_finder(), trials=8, on_trial_end=stop_after_three)
    resumed = run(storage, finder=make_finder(), trials=8)
    assert [t.index for t in resumed.trials] == list(range(8))
    # the three finished before the interruption are kept as they were (run 0), none re-run
    assert [t.to_dict() for t in resumed.trials[:3]] == [t.to_dict() for t in seen]
    assert {t.run for t in resumed.trials[3:]} == {1}
    ledger = optuna.load_study(study_name="t", storage=storage)
    with_record = [t.user_attrs["dpaudit.index"] for t in ledger.get_trials() if "dpaudit.record" in t.user_attrs]
    assert sorted(with_record) == list(range(8))  # one record per index
    # trial t's randomness is spawn key t, whichever run executed it
    assert all(t.seed_key == (t.index,) for t in resumed.trials)


def test_a_trial_left_running_by_a_killed_process_is_rerun_on_the_same_pair():
    from dpaudit.audit import TrialRecord
    from dpaudit.audit.ledger import open_ledger

    storage = optuna.storages.InMemoryStorage()
    # Run 0 finishes trials 0 and 1, then "is killed" while trial 2 runs: the ledger keeps a
    # RUNNING trial and the driver entry (this test's own pid, so it does not block the resume).
    given = {"mechanism": "noisy-mean(0.3)", "claim": PureDP(1.0).to_dict(), "tester": MeanShiftTester(5.0).config(),
             "seed": 1, "trial_budget": 5, "beta": 0.1, "num_samples": 64, "neighbouring": None,
             "finder": RandomFinder(REL, rng=11).config()}
    ledger = open_ledger(storage, "t", given, {}, resume=True, record_from_dict=TrialRecord.from_dict)
    proposer = RandomFinder(REL, rng=11)
    from dpaudit.audit.executors import TrialSpec, run_trial

    for idx in range(3):
        pair = proposer.ask()
        trial = ledger.begin(idx, pair, "random")
        if idx < 2:
            ledger.finish(trial, run_trial(NoisyMean(0.3), MeanShiftTester(5.0), PureDP(1.0),
                                           TrialSpec(idx, pair, "random", 64, 0.1 / 5, 1)))
    running_pair = pair
    resumed = audit(NoisyMean(0.3), PureDP(1.0), RandomFinder(REL, rng=11), tester=MeanShiftTester(5.0),
                    storage=storage, study_name="t", resume=True, exhaustive=True)
    assert [t.index for t in resumed.trials] == [0, 1, 2, 3, 4]
    assert resumed.trials[2].pair == running_pair and resumed.trials[2].run == 1
    states = sorted((t.user_attrs["dpaudit.index"], t.state.name) for t in optuna.load_study(study_name="t", storage=storage).get_trials())
    assert states.count((2, "FAIL")) == 1 and states.count((2, "COMPLETE")) == 1


def test_a_kill_between_two_storage_writes_is_resumed_deterministically():
    """A SIGKILL can land between two storage writes of one trial: (a) a ledger trial holding its
    index but not yet its pair (written by older versions, which stored the index first), and (b) a
    search proposal whose parameters Optuna had only partly stored. Both are half-written trials
    that never ran: the resume marks them failed and runs every index once (this made the kill -9
    test below fail now and then)."""
    from optuna.trial import TrialState

    from dpaudit.audit import TrialRecord
    from dpaudit.audit.executors import TrialSpec, run_trial
    from dpaudit.audit.ledger import open_ledger

    storage = optuna.storages.InMemoryStorage()
    finder = BayesFinder(REL, method="tpe", seed=5)
    given = {"mechanism": "noisy-mean(0.3)", "claim": PureDP(1.0).to_dict(), "tester": MeanShiftTester(5.0).config(),
             "seed": 1, "trial_budget": 4, "beta": 0.1, "num_samples": 64, "neighbouring": None,
             "finder": finder.config()}
    ledger = open_ledger(storage, "t", given, {}, resume=True, record_from_dict=TrialRecord.from_dict)
    finder.attach(storage, ledger.search_study_name(), run=0)
    for idx in range(2):
        pair = finder.ask()
        trial = ledger.begin(idx, pair, "bayes")
        record = run_trial(NoisyMean(0.3), MeanShiftTester(5.0), PureDP(1.0), TrialSpec(idx, pair, "bayes", 64, 0.1 / 4, 1))
        ledger.finish(trial, record)
        finder.tell(pair, record.outcome.objective)
    # (a) the ledger trial of index 2: index stored, pair not
    half = ledger.study.ask()
    half.set_user_attr("dpaudit.index", 2)
    # (b) a search proposal with only its first parameter stored
    search = optuna.load_study(study_name=ledger.search_study_name(), storage=storage)
    first = dict([next(iter(finder.space.optuna_distributions().items()))])
    partial = search.ask(fixed_distributions=first)
    ledger.close(0.0, 2)

    resumed = audit(NoisyMean(0.3), PureDP(1.0), BayesFinder(REL, method="tpe", seed=5), tester=MeanShiftTester(5.0),
                    storage=storage, study_name="t", resume=True, exhaustive=True)
    assert [t.index for t in resumed.trials] == [0, 1, 2, 3]
    assert {t.run for t in resumed.trials[2:]} == {1}
    states = {t.number: t.state for t in optuna.load_study(study_name=ledger.search_study_name(),
                                                           storage=storage).get_trials()}
    assert states[partial.number] == TrialState.FAIL
    ledger_trials = optuna.load_study(study_name="t", storage=storage).get_trials()
    assert next(t for t in ledger_trials if t.number == half.number).state == TrialState.FAIL


# --------------------------------------------------------------------------- slow: kill -9
def _records(url: str) -> dict:
    """index -> record of the finished trials in the ledger (read while the audit runs)."""
    try:
        study = optuna.load_study(study_name="kill-test", storage=url)
    except Exception:  # not created yet
        return {}
    out = {}
    for t in study.get_trials(deepcopy=False):
        rec = t.user_attrs.get("dpaudit.record")
        if rec is not None:
            out.setdefault(t.user_attrs["dpaudit.index"], []).append(rec)
    return out


@pytest.mark.slow
def test_sigkilled_cli_audit_resumes_without_losing_or_repeating_trials(tmp_path):
    db = tmp_path / "x.db"
    url = f"sqlite:///{db}"
    report = tmp_path / "report.json"
    cmd = [
        sys.executable, "-m", "dpaudit.cli", "test", "zoo:dp-laplace", "--epsilon", "1", "--samples", "3000",
        "--trials", "10", "--search", "auto", "--seed", "0", "--exhaustive", "--quiet",
        "--storage", url, "--study-name", "kill-test", "--resume", "--report", str(report),
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        before = {}
        while time.monotonic() < deadline and proc.poll() is None:
            before = _records(url)
            if len(before) >= 3:
                break
            time.sleep(0.2)
        assert proc.poll() is None, f"the audit ended before it could be killed: {proc.stdout.read().decode()}"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()  # reap it, so its pid is not a live zombie
    assert proc.returncode == -signal.SIGKILL
    before = _records(url)  # everything stored before the kill
    assert 3 <= len(before) < 10
    assert not report.exists()

    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    data = json.loads(report.read_text())
    indices = [t["index"] for t in data["trials"]]
    assert indices == list(range(10)), indices  # every trial, each once
    by_index = {t["index"]: t for t in data["trials"]}
    for idx, recs in before.items():  # no finished trial lost or re-run
        assert len(recs) == 1
        assert by_index[idx] == json.loads(json.dumps(recs[0]))
        assert by_index[idx]["run"] == 0
    assert {by_index[i]["run"] for i in range(10) if i not in before} == {1}
    after = _records(url)
    assert sorted(after) == list(range(10)) and all(len(v) == 1 for v in after.values())
    assert [r["run"] for r in data["study"]["runs"]] == [0, 1]
    # the sequential default front-loads beta: half to the first trial, the rest shared by the other 9
    assert data["trial_budget"] == 10 and data["beta_split"] == "front"
    assert data["beta_per_trial"] == pytest.approx(0.01 / 2)
    assert data["trial_betas"] == pytest.approx([0.01 / 2] + [0.01 / 2 / 9] * 9, rel=1e-9)


def test_cli_resume_takes_the_stored_settings_and_refuses_other_ones(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from dpaudit.cli import app

    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    base = ["test", "zoo:dp-laplace", "--epsilon", "1", "--search", "random", "--quiet", "--storage", "sqlite:///a.db"]
    first = runner.invoke(app, [*base, "--samples", "300", "--trials", "3", "--seed", "4", "--report", "r1.json"])
    assert first.exit_code == 0, first.output
    again = runner.invoke(app, [*base, "--samples", "300", "--trials", "3", "--seed", "4"])
    assert again.exit_code == 2 and "already exists" in again.output and "--resume" in again.output
    resumed = runner.invoke(app, [*base, "--resume", "--report", "r2.json"])  # no --samples/--trials/--seed
    assert resumed.exit_code == 0, resumed.output
    r1, r2 = (json.loads((tmp_path / f).read_text()) for f in ("r1.json", "r2.json"))
    assert r2["trials"] == r1["trials"] and r2["seed"] == 4 and len(r2["study"]["runs"]) == 2
    refused = runner.invoke(app, [*base, "--resume", "--trials", "5", "--samples", "301"])
    assert refused.exit_code == 2
    assert "trial_budget: stored 3, given 5" in refused.output and "num_samples: stored 300, given 301" in refused.output


def test_resolve_study_is_the_one_place_storage_names_and_resume_defaults_are_decided(tmp_path):
    from dpaudit.audit.ledger import DEFAULT_STORAGE, resolve_study

    assert resolve_study(None, None, False, "m").storage is None
    with pytest.raises(ValueError, match="resume=True needs a storage"):
        resolve_study(None, None, True, "m")
    with pytest.raises(DPAuditError, match="'x'.*needs a storage"):
        resolve_study(None, "x", False, "m")
    with pytest.raises(DPAuditError, match="'t'.*needs a storage"):  # audit() agrees
        run(None, resume=False, trials=1)
    plan = resolve_study(None, None, True, "m", default_storage=DEFAULT_STORAGE)
    assert (plan.storage, plan.study_name, plan.stored) == (DEFAULT_STORAGE, "dpaudit-m", None)
    url = f"sqlite:///{tmp_path / 'a.db'}"
    run(url, trials=2, seed=7)  # stored under "t"
    plan = resolve_study(url, "t", True, "m", peek=True)
    assert plan.seed == 7 and plan.stored["trial_budget"] == 2
    assert plan.setting("trial_budget", 10, explicit=False) == (None, 2)
    assert plan.setting("trial_budget", 10, explicit=True) == (10, 10)
    assert resolve_study(url, "t", True, "m", seed=3, peek=True).seed == 3
    fresh = resolve_study(url, None, False, "m", peek=True)
    assert fresh.study_name == "dpaudit-m" and fresh.stored is None
    assert fresh.setting("beta", 0.01, explicit=False) == (0.01, 0.01)

"""dpaudit.library.contain: in-process rows run in a worker process, each stage under a hard time limit.

A row whose library call never returns (in C code, where no SIGALRM reaches it: issue 43's PyDP
hang) is reported "timed out (stage S after N s)" and the next row still runs; a row that finishes
has exactly the record it has in-process (same seeds, same verdict and bounds).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpaudit.cli import app
from dpaudit.library import registry
from dpaudit.library.contain import STAGE_SECONDS, TIMED_OUT, RowWorker, stage_limit, without_times
from dpaudit.library.entry import Budget, Entry, Guarantee
from dpaudit.library.findings import finding_ids
from dpaudit.library.runner import audit_entry

TARGETS = '''
import os
import signal
import time

import numpy as np

from dpaudit.mechanisms.base import Mechanism


class Blocking(Mechanism):
    """Blocks every signal it can, then sleeps: a call that no SIGALRM-based limit can cut
    (as a library looping in C code)."""
    name = "blocking"

    def sample(self, dataset, num_samples, rng):
        signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals) - {signal.SIGKILL, signal.SIGSTOP})
        time.sleep(3600)
        return np.zeros(num_samples)


class Crashing(Mechanism):
    """Dies as a library's segmentation fault would."""
    name = "crashing"

    def sample(self, dataset, num_samples, rng):
        os.kill(os.getpid(), signal.SIGSEGV)


class Count(Mechanism):
    """A Laplace count (sensitivity 1, scale 1)."""
    name = "count"

    def sample(self, dataset, num_samples, rng):
        return len(dataset) + rng.laplace(0.0, 1.0, num_samples)


BLOCKING, CRASHING, COUNT = Blocking(), Crashing(), Count()
'''


@pytest.fixture
def rows(tmp_path):
    path = tmp_path / "contain_targets.py"
    path.write_text(textwrap.dedent(TARGETS))

    def row(attr: str, samples: int = 400) -> Entry:
        return Entry("Fake", attr.lower(), f"{path}:{attr}", "a test row", Guarantee(1.0),
                     budget=Budget(samples=samples, trials=1, tester="sequential", seed=3),
                     row_key=f"fake.{attr.lower()}")

    return row


def test_a_blocked_or_crashed_row_is_contained_and_a_finished_row_is_as_in_process(rows):
    """Blocking row: timed out in stage audit after the limit, no verdict, no finding; crashing row:
    an error naming the signal; then a finishing row in a fresh worker: the in-process record."""
    count = rows("COUNT")
    here = audit_entry(count, stages=("audit",))
    trials = []
    with RowWorker() as worker:
        blocked = worker.audit(rows("BLOCKING"), time_limit=1.5, stages=("audit",))
        crashed = worker.audit(rows("CRASHING"), time_limit=30, stages=("audit",))
        there = worker.audit(count, time_limit=60, stages=("audit",), on_trial_end=trials.append)
    assert blocked["verdict"] == TIMED_OUT and blocked["timed_out"]["stage"] == "audit"
    assert blocked["timed_out"]["seconds"] >= 1.5 and blocked["timed_out"]["limit"] == 1.5
    assert blocked["first"]["message"].startswith("timed out (stage audit after ")
    assert blocked["first"]["exit_code"] is None and finding_ids(blocked["key"], blocked) == []
    assert crashed["verdict"] == "error" and crashed["first"]["exit_code"] == 2
    assert "killed by signal 11" in crashed["first"]["message"] and crashed["crashed"]["stage"] == "audit"
    assert worker.starts == 3  # each stopped row's next row got a fresh worker
    assert without_times(there) == without_times(here) and there["verdict"] in ("pass", "floating-point leak")
    assert [t.index for t in trials] == [0]  # progress comes back from the worker


def test_pydps_c_loop_is_cut():
    """The real case: PyDP's GaussianMechanism at sensitivity 8.9e307 (benchmarks/library_contain.py's
    PYDP_HUGE), whose C++ loop no SIGALRM interrupts, is cut at the stage's limit."""
    pytest.importorskip("pydp")
    bench = Path(__file__).resolve().parents[1] / "benchmarks" / "library_contain.py"
    row = Entry("PyDP", "GaussianMechanism", f"{bench}:PYDP_HUGE", "sensitivity 8.9e307", Guarantee(1.0, 1e-5),
                budget=Budget(samples=100, trials=1, tester="sequential"), row_key="pydp.huge_sensitivity")
    with RowWorker() as worker:
        rec = worker.audit(row, time_limit=2, stages=("audit",))
    assert rec["verdict"] == TIMED_OUT and rec["timed_out"]["seconds"] >= 2


def test_cli_reports_the_timed_out_row_and_goes_on(rows, monkeypatch):
    """`dpaudit library audit --time-limit`: the blocked row is 'timed out (stage audit after N s)',
    never a pass or a finding (exit 3, as an inconclusive row), and the next row still runs; the same
    with --reruns. (The limit reaches stage_limit, which cuts the blocked row at it and leaves the
    other row 300 s, so that a slow machine cannot time that one out too.)"""
    from dpaudit.library import contain

    fake = [rows("BLOCKING"), rows("COUNT")]
    monkeypatch.setattr(registry, "select", lambda library, keys=(): fake)
    asked = []

    def limit(entry, samples=None, seconds=None):
        asked.append(seconds)
        return seconds if entry.key == "fake.blocking" else 300.0

    monkeypatch.setattr(contain, "stage_limit", limit)
    res = CliRunner().invoke(app, ["library", "audit", "Fake", "--time-limit", "1.5", "--json"])
    out = json.loads(res.stdout)
    first, second = out["rows"]
    assert first["verdict"] == TIMED_OUT and first["findings"] == [] and first["exit_code"] is None
    assert first["verdict_text"].startswith("timed out (stage audit after ")
    assert second["verdict"] in ("pass", "floating-point leak") and second["record"]["first"]["trials_run"] == 1
    assert res.exit_code == (3 if second["verdict"] == "pass" else 1) and out["exit_code"] == res.exit_code
    # --reruns K: the K audits of a row under K stage limits; a blocked row is timed out, the next one counted
    res = CliRunner().invoke(app, ["library", "audit", "Fake", "--reruns", "2", "--time-limit", "1.5", "--json"])
    blocked, counted = json.loads(res.stdout)["reruns"]
    assert blocked["verdict"] == TIMED_OUT and blocked["message"].startswith("timed out (stage reruns after ")
    assert blocked["timed_out"]["limit"] == 3.0 and blocked["seconds"] >= 3.0
    assert counted["k"] == 2 and len(counted["outcomes"]) == 2 and counted["verdict"] in ("within beta", "beyond beta")
    assert res.exit_code == (1 if counted["verdict"] == "beyond beta" else 3)
    assert asked == [1.5] * 4  # --time-limit is what each row's limit is computed from
    bad = CliRunner().invoke(app, ["library", "audit", "Fake", "--time-limit", "0"])
    assert bad.exit_code == 2 and "--time-limit must be a positive number" in bad.output


def test_stage_limit_follows_the_budget_and_the_override(rows):
    e = rows("COUNT", samples=1000)
    assert stage_limit(e) == STAGE_SECONDS and stage_limit(e, samples=500) == STAGE_SECONDS
    assert stage_limit(e, samples=4000) == 4 * STAGE_SECONDS and stage_limit(e, seconds=12.5) == 12.5
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="time limit"):
            stage_limit(e, seconds=bad)


def test_the_table_shows_a_timed_out_row_apart():
    """A cached timed-out record: its own column in the summary (only when there is one) and the
    stage and time in the verdict cell; never counted as a pass or a finding."""
    from dpaudit.library.table import render

    e = next(e for e in registry.REGISTRY if not e.not_auditable and e.env is None)
    rec = {"key": e.key, "fingerprint": registry.fingerprint(e), "ran_at": "2026-11-29 09:00", "verdict": TIMED_OUT,
           "first": {"outcome": TIMED_OUT, "exit_code": None, "seconds": 61.0, "seed": 1, "samples": 10,
                     "message": "timed out (stage adversarial after 60 s)"},
           "timed_out": {"stage": "adversarial", "seconds": 60.0, "limit": 60.0}}
    page = render([e], {e.key: rec})
    header = next(line for line in page.splitlines() if line.startswith("| library | version"))
    assert "| timed out |" in header and "**timed out (stage adversarial after 60 s)**" in page
    assert "| timed out |" not in next(line for line in render([e], {}).splitlines()
                                       if line.startswith("| library | version"))


def test_jobs_audits_rows_side_by_side_with_the_records_of_one_at_a_time(rows, monkeypatch, tmp_path):
    """`--jobs 2`: two worker processes; a blocked row times out while the other rows go on beside it;
    the results come back in the rows' order with the records `--jobs 1` gives (up to times), and
    every record reaches the cache (written from two threads)."""
    from dpaudit.library import contain

    fake = [rows("BLOCKING"), rows("COUNT"), rows("COUNT", samples=300)]
    fake[2] = Entry("Fake", "count300", fake[2].target, "a test row", Guarantee(1.0),
                    budget=fake[2].budget, row_key="fake.count300")
    monkeypatch.setattr(registry, "select", lambda library, keys=(): fake)
    monkeypatch.setattr(contain, "stage_limit",
                        lambda entry, samples=None, seconds=None: 2.0 if entry.key == "fake.blocking" else 300.0)
    out = {}
    for jobs in ("1", "2"):
        cache = tmp_path / f"cache{jobs}.json"
        res = CliRunner().invoke(app, ["library", "audit", "Fake", "--jobs", jobs, "--write-cache", "--cache",
                                       str(cache), "--json"])
        out[jobs] = json.loads(res.stdout)
        assert [r["key"] for r in out[jobs]["rows"]] == ["fake.blocking", "fake.count", "fake.count300"]
        assert out[jobs]["rows"][0]["verdict"] == TIMED_OUT and res.exit_code in (1, 3)
        assert sorted(json.loads(cache.read_text())) == ["fake.blocking", "fake.count", "fake.count300"]
    for one, two in zip(out["1"]["rows"][1:], out["2"]["rows"][1:]):
        assert without_times(one["record"]) == without_times(two["record"])
    bad = CliRunner().invoke(app, ["library", "audit", "Fake", "--jobs", "2", "--in-process"])
    assert bad.exit_code == 2 and "--jobs" in bad.output

"""``dpaudit library`` as a product (issue 42, items 3 and 4): the commands, the CI gate, the
findings one per cause, the reproducers' install lines, the rows of library environments.

Every test here is deterministic and cheap: one real row runs (diffprivlib's Laplace mechanism,
seeded, 1,000 samples x 1 trial, through the CLI, checked against ``dpaudit test`` run the same way);
the gate's logic runs on canned records.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpaudit.cli import app
from dpaudit.library import baseline as lb
from dpaudit.library import cache as lc
from dpaudit.library import findings, registry, reproducers, runner, table
from dpaudit.library.entry import Entry, Guarantee, register_env_resolver, resolve_mechanism

ROOT = Path(__file__).resolve().parents[1]
cli = CliRunner()


def _fresh():
    records = lc.load(lc.default_cache())
    return table.fresh_records(registry.REGISTRY, records)


# ------------------------------------------------------------------ findings, one per cause

def test_causes_are_consistent_and_every_cached_finding_has_exactly_one():
    assert findings.validate_causes() == []
    fresh = _fresh()
    assert findings.unexplained(fresh) == []
    named = [f for c in findings.CAUSES for f in list(c.rows) + [f"{k}@{kind}" for k, kind in c.adversarial]]
    assert len(named) == len(set(named))
    # a broken cause list is caught: a finding named twice, a row not in the registry
    dup = replace(findings.CAUSES[0], id="diffprivlib.dup")
    saved = findings.CAUSES
    try:
        findings.CAUSES = saved + (dup, replace(saved[0], id="diffprivlib.ghost", rows=("diffprivlib.nope",)))
        problems = findings.validate_causes()
        assert any("is in causes" in p for p in problems) and any("not in the registry" in p for p in problems)
    finally:
        findings.CAUSES = saved


def test_diffprivlib_violation_rows_are_five_causes_two_relation_dependent():
    """Issue 42's count: diffprivlib's 10 violation rows are 5 causes; 4 rows depend on the relation
    the library does not document (2 causes) and 2 rows repeat a bug under the other relation."""
    fresh = _fresh()
    rows = [k for k, rec in fresh.items() if k.startswith("diffprivlib.") and rec["verdict"] == "violation"]
    assert len(rows) == 10
    causes = {findings.cause_of(k) for k in rows}
    assert len(causes) == 5
    relation = [k for k in rows if findings.cause_of(k).relation_dependent]
    assert len(relation) == 4 and len({findings.cause_of(k) for k in relation}) == 2
    nb = findings.cause_of("diffprivlib.gaussian_nb")
    assert nb is findings.cause_of("diffprivlib.gaussian_nb_add_remove") and "other relation" in nb.note


def test_prior_reports_are_cited_where_the_trackers_have_them():
    grid = findings.causes_by_id()["pipelinedp.gaussian-grid"]
    assert "opendp/opendp#414" in grid.prior
    assert "opendp/opendp#414" in registry.RECORD["pipelinedp.count_gaussian"]
    assert not registry.RECORD["pipelinedp.count_gaussian"].startswith("candidate new")
    for c in findings.CAUSES:  # a cause states its prior reports or where they were searched for
        assert c.prior or c.searched, c.id
    doc = (ROOT / "docs" / "library_audits.md").read_text()
    assert "opendp/opendp#414" in doc and "## Findings, one per cause" in doc


def test_finding_ids_of_a_record():
    rec = {"verdict": "violation", "adversarial": {"results": [{"kind": "nan", "status": "leak"},
                                                               {"kind": "+inf", "status": "rejected"}]}}
    assert findings.finding_ids("diffprivlib.sum_add_remove", rec) == ["diffprivlib.sum_add_remove",
                                                                      "diffprivlib.sum_add_remove@nan"]
    assert findings.finding_ids("x.y", {"verdict": "pass"}) == [] and findings.finding_ids("x.y", None) == []
    assert findings.finding_ids("x.y", {"verdict": "unconfirmed"}) == []


# ------------------------------------------------------------------ the baseline

def test_baseline_round_trip_and_triage(tmp_path):
    path = lb.write(tmp_path / "base.txt", ["diffprivlib.laplace", "diffprivlib.mean@nan", "other.row"])
    text = path.read_text()
    assert "# diffprivlib.float-addition:" in text and "# (no cause):" in text
    assert lb.read(path) == {"diffprivlib.laplace", "diffprivlib.mean@nan", "other.row"}
    ran = {"diffprivlib.laplace": {"audit"}, "diffprivlib.gaussian": {"audit"}, "diffprivlib.mean": {"audit"}}
    # a cause id accepts every finding of the cause; a baseline finding not found for a row that ran is gone
    tri = lb.triage(["diffprivlib.gaussian", "diffprivlib.gaussian_nb"], {"diffprivlib.float-addition",
                                                                       "diffprivlib.laplace"}, ran=ran)
    assert tri.known == ("diffprivlib.gaussian",) and tri.new == ("diffprivlib.gaussian_nb",)
    assert tri.gone == ("diffprivlib.laplace",)
    tri = lb.triage([], {"diffprivlib.mean@nan"}, ran=ran)  # the adversarial stage did not run: not gone
    assert tri.gone == ()
    (tmp_path / "bad.txt").write_text("diffprivlib.laplace extra\n")
    with pytest.raises(ValueError, match="line 1"):
        lb.read(tmp_path / "bad.txt")
    with pytest.raises(ValueError, match="cannot read"):
        lb.read(tmp_path / "missing.txt")


# ------------------------------------------------------------------ the commands

def _record(entry, verdict="floating-point leak", adversarial=()):
    return {"key": entry.key, "fingerprint": registry.fingerprint(entry), "verdict": verdict,
            "first": {"outcome": verdict, "exit_code": 1 if verdict != "pass" else 0, "seconds": 1.0, "seed": 1,
                      "samples": 100, "epsilon_lower_bound": 2.0},
            "adversarial": {"samples": 10, "seconds": 0.1, "accepts": "", "results": [
                {"kind": k, "description": k, "status": "leak", "detail": "d", "leak": {}} for k in adversarial]}}


def test_audit_gate_exit_codes_and_baseline(tmp_path, monkeypatch):
    """0 when every finding is known, 1 on a new one, 2 on bad input; --write-baseline then --baseline."""
    calls = []

    def fake(e, **kw):
        calls.append((e.key, kw["stages"]))
        return _record(e, "pass" if e.key.endswith("snapping") else "floating-point leak",
                       adversarial=("nan",) if "adversarial" in kw["stages"] else ())

    monkeypatch.setattr(runner, "audit_entry", fake)  # --in-process: the fake runs in this process, not a worker
    base = tmp_path / "known.txt"
    res = cli.invoke(app, ["library", "audit", "--in-process", "diffprivlib", "laplace", "snapping", "--write-baseline", str(base)])
    assert res.exit_code == 1 and "1 new finding" in res.output and base.exists()
    res = cli.invoke(app, ["library", "audit", "--in-process", "diffprivlib", "laplace", "snapping", "--baseline", str(base),
                           "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["known_findings"] == ["diffprivlib.laplace"] and out["new_findings"] == []
    assert [r["key"] for r in out["rows"]] == ["diffprivlib.laplace", "diffprivlib.snapping"]
    # the adversarial stage adds ROW@INPUT findings: new unless the baseline names them or their cause
    res = cli.invoke(app, ["library", "audit", "--in-process", "diffprivlib", "laplace", "--stages", "adversarial", "--baseline",
                           str(base), "--json"])
    assert res.exit_code == 1 and json.loads(res.stdout)["new_findings"] == ["diffprivlib.laplace@nan"]
    assert calls[-1] == ("diffprivlib.laplace", ("audit", "adversarial"))
    for bad in (["library", "audit", "nolib"], ["library", "audit", "diffprivlib", "no_such_row"],
                ["library", "audit", "diffprivlib", "--stages", "leak"],
                ["library", "audit", "diffprivlib", "--baseline", str(tmp_path / "none.txt")]):
        res = cli.invoke(app, bad)
        assert res.exit_code == 2 and "error:" in res.output, bad


def test_search_budget_reaches_the_adversarial_stage(monkeypatch):
    """--search-budget N is what the row's adversarial stage is run with, and stated in the record;
    without it the stage runs at SEARCH_BUDGET; a budget below 1 is refused (exit 2)."""
    from dpaudit.library import stages as st

    seen = []

    class _Run:
        summary = {"outcome": "pass", "exit_code": 0, "seconds": 0.1, "seed": 1, "samples": 10}
        mechanism = None

    def fake_stage(entry, **kw):
        seen.append(kw["budget"])
        return {"samples": 10, "seconds": 0.0, "accepts": "", "results": []}

    monkeypatch.setattr(runner, "run_row", lambda *a, **k: _Run())
    monkeypatch.setattr(st, "adversarial_stage", fake_stage)
    res = cli.invoke(app, ["library", "audit", "--in-process", "diffprivlib", "laplace", "--stages", "adversarial",
                           "--search-budget", "200", "--json"])
    assert res.exit_code == 0, res.output
    assert seen == [200]
    assert json.loads(res.stdout)["rows"][0]["record"]["adversarial"]["search_budget"] == 200
    res = cli.invoke(app, ["library", "audit", "--in-process", "diffprivlib", "laplace", "--stages", "adversarial", "--json"])
    assert res.exit_code == 0 and seen[-1] == st.SEARCH_BUDGET
    res = cli.invoke(app, ["library", "audit", "--in-process", "diffprivlib", "laplace", "--search-budget", "0"])
    assert res.exit_code == 2


def test_audit_runs_a_row_as_dpaudit_test_does_and_sizes_its_leak_on_that_run(tmp_path):
    """The real path, once: diffprivlib's seeded Laplace at 1,000 x 1 through `dpaudit library audit`,
    and the same audit through `dpaudit test`: the same verdict, witness and epsilon lower bound; the
    leak size comes from that run's outputs (source "run"), structural: no epsilon for delta < X."""
    pytest.importorskip("diffprivlib")
    cache = tmp_path / "cache.json"
    res = cli.invoke(app, ["library", "audit", "diffprivlib", "laplace", "--samples", "1000", "--json",
                           "--write-cache", "--cache", str(cache)])
    assert res.exit_code == 1, res.output
    row = json.loads(res.stdout)["rows"][0]
    rec = row["record"]
    assert row["verdict"] == "floating-point leak" and row["findings"][0]["cause"] == "diffprivlib.float-addition"
    first = rec["first"]  # as Mironov (2012) predicts: the float-bits tester, on the sums 0 and 1
    assert first["tester"] == "float-bits" and first["epsilon_lower_bound"] > 1.0
    assert first["witness"]["d0"] == [[0.0]] and first["witness"]["d1"] == [[0.0], [1.0]]
    leak = rec["leak_size"]
    assert leak["structural"]["source"] == "run" and leak["structural"]["hits_other"] == 0
    assert row["leak_size"].startswith("no epsilon for delta < ")
    assert leak["source"] == "run" and leak["samples"] >= 4
    assert rec["budget"] == {"samples": 1000, "trials": 3}  # a smaller budget is recorded with the row
    assert lc.load(cache)["diffprivlib.laplace"]["verdict"] == "floating-point leak"
    test = subprocess.run([sys.executable, "-m", "dpaudit", *rec["first"]["command"].split()[1:], "--json", "--quiet",
                           "--processes", "1"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert test.returncode == 5, test.stderr[-500:]
    ev = json.loads(test.stdout)["evidence"]
    assert ev["epsilon_lower_bound"] == pytest.approx(rec["first"]["epsilon_lower_bound"], rel=1e-12)
    assert ev["pair"]["d0"] == rec["first"]["witness"]["d0"] and ev["pair"]["d1"] == rec["first"]["witness"]["d1"]


def test_list_table_and_reproducers_commands(tmp_path):
    res = cli.invoke(app, ["library", "list", "PyDP", "--json"])
    assert res.exit_code == 0
    rows = json.loads(res.stdout)["rows"]
    assert [r["key"] for r in rows] == [e.key for e in registry.REGISTRY if e.library == "PyDP"]
    assert all(r["environment"] == "this process" for r in rows)
    doc = tmp_path / "table.md"
    assert cli.invoke(app, ["library", "table", "--doc", str(doc)]).exit_code == 0
    assert cli.invoke(app, ["library", "table", "--doc", str(doc), "--check"]).exit_code == 0
    doc.write_text(doc.read_text() + "edited by hand\n")
    assert cli.invoke(app, ["library", "table", "--doc", str(doc), "--check"]).exit_code == 1
    assert cli.invoke(app, ["library", "table", "--check"]).exit_code == 0  # the committed table is regenerated
    assert cli.invoke(app, ["library", "reproducers", "--check"]).exit_code == 0
    bad = tmp_path / "repro"
    bad.mkdir()
    (bad / "diffprivlib_x.py").write_text('"""Reproducer.\n\n    pip install diffprivlib==0.6.6 numpy\n"""\n')
    (bad / "pipelinedp_y.py").write_text('"""Reproducer without an install line."""\n')
    res = cli.invoke(app, ["library", "reproducers", "--check", "--dir", str(bad)])
    assert res.exit_code == 1 and "scikit-learn<1.6" in res.output and "no `pip install` line" in res.output


@pytest.mark.parametrize("sub", ["list", "audit", "table", "reproducers"])
def test_library_help_reads_at_80_columns(sub):
    res = cli.invoke(app, ["library", sub, "--help"], env={"COLUMNS": "80"})
    assert res.exit_code == 0 and max(len(line) for line in res.output.splitlines()) <= 80
    assert "Exit codes" in res.output


# ------------------------------------------------------------------ reproducers' install lines

def test_every_reproducer_states_the_pinned_install_line_its_library_needs():
    items = reproducers.scripts()
    assert len(items) >= 60 and reproducers.check(items) == []
    by_lib = {s.library for s in items}
    assert {"diffprivlib", "PipelineDP", "Opacus"} <= by_lib
    for s in items:
        assert s.install == registry.LIBRARIES[s.library].install, s.name
    assert "scikit-learn<1.6" in registry.LIBRARIES["diffprivlib"].install
    assert reproducers.install_line('"""Doc.\n\n    pip install a==1 b\n"""\nx = 1\n') == "a==1 b"
    assert reproducers.install_line("x = 1\n") is None


# ------------------------------------------------------------------ rows of library environments

@dataclass(frozen=True)
class _EnvRow:  # the fields of dpaudit.library.envs.rows.EnvRow that the registry reads
    library: str = "SmartNoise SQL"
    key: str = "smartnoise-sql.count"
    name: str = "PrivateReader.execute (COUNT)"
    env: str = "smartnoise-sql"
    catalogue_target: str = "dpaudit.library.envs.catalogue:smartnoise_sql__count"
    configuration: str = "COUNT(*)"
    epsilon: float = 1.0
    delta: float = 1e-3
    neighbouring: str = "add-remove"
    lower: tuple = (0.0,)
    upper: tuple = (1.0,)
    min_size: int = 0
    max_size: int = 12
    documented: str = "get_privacy_cost"
    relation_note: str = "documented: row_privacy"
    samples: int = 2000
    trials: int = 2
    seed: int = 1
    notes: str = "not seedable"


def test_environment_rows_join_the_registry_and_resolve_through_their_environment():
    e = registry.entry_from_env_row(_EnvRow())
    assert (e.key, e.env, e.library) == ("smartnoise-sql.count", "smartnoise-sql", "SmartNoise SQL")
    assert e.guarantee.describe() == "(1, 0.001)-DP, add-remove" and e.guarantee.domain.startswith("records in [0, 1]")
    assert e.command()[2] == "dpaudit.library.envs.catalogue:smartnoise_sql__count"
    assert table.reproducer_path(e).name == "smartnoise_sql_count.py"
    sentinel = object()
    from dpaudit.library import entry as library_entry

    saved = dict(library_entry._ENV_RESOLVERS)
    try:
        register_env_resolver("smartnoise-sql", lambda entry: sentinel)
        assert resolve_mechanism(e) is sentinel
    finally:  # the real resolver (dpaudit.library.envs.resolve_entry) back for the other tests
        library_entry._ENV_RESOLVERS.clear()
        library_entry._ENV_RESOLVERS.update(saved)
    with pytest.raises(TypeError):
        register_env_resolver("x", "not callable")
    with pytest.raises(ValueError, match="not auditable"):
        resolve_mechanism(Entry("diffprivlib", "v", None, "c", None, not_auditable="why"))
    assert all(e.env is None for e in registry.REGISTRY if e.library in ("diffprivlib", "OpenDP", "PipelineDP",
                                                                           "PyDP", "Opacus"))


def test_select_rows_by_library_key_and_prefix():
    assert [e.key for e in registry.select("diffprivlib", ["laplace"])] == ["diffprivlib.laplace"]
    assert [e.key for e in registry.select("DIFFPRIVLIB", ["diffprivlib.laplace"])] == ["diffprivlib.laplace"]
    assert {e.key for e in registry.select("diffprivlib", ["laplace*"])} >= {"diffprivlib.laplace_folded",
                                                                              "diffprivlib.laplace"}
    assert len(registry.select("pipeline-dp")) == sum(e.library == "PipelineDP" for e in registry.REGISTRY)
    with pytest.raises(ValueError, match="did you mean"):
        registry.select("diffprivlib", ["laplase"])
    with pytest.raises(KeyError, match="no row"):
        registry.find("nope.nope")


def test_the_counts_stated_are_the_registry_s():
    n = len(registry.REGISTRY)
    readme = (ROOT / "README.md").read_text()
    assert f"{n} rows in all" in readme
    doc = (ROOT / "docs" / "library_audits.md").read_text()
    assert f"{n} rows in {len({e.library for e in registry.REGISTRY})} libraries" in doc
    assert re.search(r"\*\*\d+ missed it: no power at this budget\*\*", doc)


def test_render_states_no_power_the_structural_size_and_the_cause_of_each_finding():
    nb = registry.find("diffprivlib.gaussian_nb")
    snap = registry.find("diffprivlib.snapping")
    run = {"outcome": "violation", "exit_code": 1, "seed": 1, "samples": 5000, "seconds": 5.0,
           "epsilon_lower_bound": 4.8, "tester": "hockey-stick",
           "witness": {"d0": [[0.5, 0.0], [0.5, 0.0]], "d1": [[0.5, 0.0], [0.5, 1.0]], "direction": "P||Q"}}
    structural = {"hits_reach": 2000, "n_reach": 2000, "hits_other": 0, "n_other": 2000, "x_lower": 1.0, "beta": 0.01,
                  "always": True, "refuted": False, "source": "run", "text": "class_count_[1] ...: true delta is 1"}
    records = {
        nb.key: {"key": nb.key, "fingerprint": registry.fingerprint(nb), "verdict": "violation", "first": run,
                 "leak_size": {"source": "run", "samples": 2000, "structural": structural}},
        snap.key: {"key": snap.key, "fingerprint": registry.fingerprint(snap), "verdict": "pass",
                   "first": dict(run, outcome="pass", exit_code=0, epsilon_lower_bound=0.2),
                   "power": {"outcome": "pass", "caught": False, "epsilon_lower_bound": 0.4,
                             "budget": {"samples": snap.budget.samples, "trials": snap.budget.trials}}},
    }
    text = table.render(registry.REGISTRY, records)
    assert "| pass (no power at this budget) |" in text and "missed (eps >= 0.4): **no power at this budget**" in text
    assert "| true delta = 1 (by construction) |" in text
    assert "### `diffprivlib.gaussiannb-absent-class`" in text and "true delta is 1" in text
    assert "cause `diffprivlib.gaussiannb-absent-class`" in text  # the row's verdict cell names its cause
    assert "**1 missed it: no power at this budget**" in text


def test_search_witnesses_are_findings_the_baseline_can_accept():
    rec = {"verdict": "pass", "search": {"witnesses": [{"input_class": "specials"}, {"input_class": "specials"},
                                                       {"input_class": "limits"}]}}
    ids = findings.finding_ids("diffprivlib.nanmean", rec)
    assert ids == ["diffprivlib.nanmean@search:specials", "diffprivlib.nanmean@search:limits"]
    tri = lb.triage(ids, {"diffprivlib.nanmean@search:limits", "diffprivlib.nanmean@search:dtypes"},
                    ran={"diffprivlib.nanmean": {"audit", "search"}})
    assert tri.new == ("diffprivlib.nanmean@search:specials",) and tri.gone == ("diffprivlib.nanmean@search:dtypes",)


def test_the_staged_screen_s_leaks_are_findings_by_where_they_came_from():
    """A leak of the fixed adversarial list (one value, or a pair the target declares) is ROW@KIND, one the
    search built (a Hypothesis draw or a seed example such as "3 x nan") ROW@search:FAMILY; the families'
    pass lines are not findings; records without ``source`` are read by the kind's form."""
    from dpaudit.library import stages

    results = [
        {"kind": "nan", "status": "leak", "family": "specials", "source": "fixed list"},
        {"kind": "over-contributions", "status": "leak", "family": "specials", "source": "fixed list"},
        {"kind": "3 x nan", "status": "leak", "family": "specials", "source": "search"},
        {"kind": "limits", "status": "leak", "family": "limits", "source": "search"},
        {"kind": "limits", "status": "leak", "family": "limits", "source": "search"},
        {"kind": "specials", "status": "pass", "family": "specials"},
        {"kind": "dtypes", "status": "pass", "family": "dtypes"}]
    rec = {"verdict": "pass", "adversarial": {"search": {"pairs_tried": 96, "families": ["specials", "limits"],
                                                         "rejected": 3}, "results": results}}
    expected = ["diffprivlib.nanmean@nan", "diffprivlib.nanmean@over-contributions",
                "diffprivlib.nanmean@search:specials", "diffprivlib.nanmean@search:limits"]
    assert findings.finding_ids("diffprivlib.nanmean", rec) == expected
    unsourced = [{k: v for k, v in r.items() if k != "source"} for r in results]
    assert findings.finding_ids("diffprivlib.nanmean", {"adversarial": {"results": unsourced}}) == expected
    words = stages.adversarial_words(rec)
    assert words.startswith("96 pairs searched (specials, limits); 3 rejected") and "search:limits" in words
    assert table.summary_verdict(rec) == table.PASS_ADVERSARIAL
    assert stages.adversarial_words({"adversarial": {"results": [], "not_searched": "a labelled relation"}}) == (
        "not searched: a labelled relation")


def test_the_adversarial_stage_is_the_staged_screen_and_finds_the_int64_wraparound_blind():
    """diffprivlib.sum's row, through the stage the table runs (dpaudit.audit.adversarial.screen_stage): the
    search builds bounds near the int64 limit on its own and certifies the wrap-around (seeded: deterministic)."""
    from dpaudit.library import stages

    stage = stages.adversarial_stage(registry.find("diffprivlib.sum"), budget=20)
    assert "search" in stage and stage["beta"] == 0.01
    assert "diffprivlib.sum@search:limits" in findings.finding_ids("diffprivlib.sum", {"adversarial": stage})

"""Tests of ``dpaudit.library`` (the table of audits of real DP libraries) and of the
diffprivlib targets it audits (``dpaudit.mechanisms.catalogue.diffprivlib_mechanisms``).

The outcome classification and the confirmation logic run on canned results; one row runs for
real at a small seeded budget (diffprivlib is seeded, so it is deterministic): Snapping passes.
Laplace, named a floating-point leak as Mironov (2012) predicts, runs through the command in
tests/test_library_product.py.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from dpaudit.library.registry import fingerprint as la_fp
from library_audit_support import load_library_audit

library_audit = load_library_audit()

classify = library_audit.classify
REGISTRY = library_audit.REGISTRY


def _result(violation: bool, kind: str | None = None) -> dict:
    return {"violation": violation, "violation_kind": kind}


# ------------------------------------------------------------------ classification (canned)

@pytest.mark.parametrize(
    ("code", "result", "expected"),
    [
        (0, _result(False), "pass"),
        (1, _result(True, "distributional"), "violation"),
        (1, _result(True, "floating-point"), "floating-point leak"),  # a row cached before issue 44
        (5, _result(True, "floating-point"), "floating-point leak"),  # its own exit code since issue 44
        (3, _result(False), "inconclusive"),
        (2, None, "error"),
        (4, None, "error"),
        (None, None, "error"),
    ],
)
def test_classify_canned_results(code, result, expected):
    assert classify(code, result) == expected


def test_classify_not_auditable_wins():
    assert classify(None, None, not_auditable="releases a function") == "not auditable"


@pytest.mark.parametrize(("code", "result"), [(1, _result(False)), (0, _result(True, "distributional")),
                                              (1, _result(True, "other")), (5, _result(True, "distributional"))])
def test_classify_rejects_inconsistent_results(code, result):
    with pytest.raises(ValueError):
        classify(code, result)


def test_a_violation_counts_only_when_the_second_run_agrees(monkeypatch):
    from dpaudit.library import runner, stages

    entry = next(e for e in REGISTRY if e.target and e.budget.tester == "all")
    runs = []

    def fake(outcomes):
        def run_row(e, *, seed=None, samples=None, processes=1, beta=0.01, on_trial_end=None, tester=None):
            runs.append((seed, samples, tester))
            return runner.RowRun({"outcome": outcomes[len(runs) - 1], "seconds": 0.0, "seed": seed or e.budget.seed})
        return run_row

    second = (entry.budget.seed + 1, 2 * entry.budget.samples)
    monkeypatch.setattr(stages, "leak_from_run", lambda e, run, beta, **_: {"source": "run", "seconds": 0.0})
    # the targeted confirmation (float-bits alone) reproduces: no second full run
    monkeypatch.setattr(runner, "run_row", fake(["floating-point leak", "floating-point leak"]))
    rec = runner.audit_entry(entry, confirm=True)
    assert rec["verdict"] == "floating-point leak" and rec["leak_size"]["source"] == "run"
    assert runs == [(None, None, None), (*second, "float-bits")]
    runs.clear()
    # the targeted run misses, the table's own run (the budget's tester) confirms: still a finding
    monkeypatch.setattr(runner, "run_row", fake(["violation", "pass", "violation"]))
    rec = runner.audit_entry(entry, confirm=True)
    assert rec["verdict"] == "violation" and rec["confirm"]["targeted"]["outcome"] == "pass"
    assert runs == [(None, None, None), (*second, "sequential --no-size"), (*second, None)]
    runs.clear()
    # neither run reproduces: unconfirmed
    monkeypatch.setattr(runner, "run_row", fake(["violation", "pass", "pass"]))
    assert runner.audit_entry(entry, confirm=True)["verdict"] == "unconfirmed" and len(runs) == 3
    runs.clear()
    # a floating-point leak is not confirmed by a distributional violation
    monkeypatch.setattr(runner, "run_row", fake(["floating-point leak", "violation", "violation"]))
    assert runner.audit_entry(entry, confirm=True)["verdict"] == "unconfirmed" and len(runs) == 3
    runs.clear()
    monkeypatch.setattr(runner, "run_row", fake(["violation"]))
    rec = runner.audit_entry(entry)  # without confirm (CI): one run, its verdict
    assert rec["verdict"] == "violation" and "confirm" not in rec and len(runs) == 1
    runs.clear()
    monkeypatch.setattr(runner, "run_row", fake(["pass"]))
    rec = runner.audit_entry(entry, confirm=True)
    assert rec["verdict"] == "pass" and "confirm" not in rec and "leak_size" not in rec and len(runs) == 1


def test_the_confirmation_command_names_its_tester():
    entry = next(e for e in REGISTRY if e.target and e.budget.tester == "all")
    cmd = entry.command(2, 4000, "sequential --no-size")
    assert cmd[cmd.index("--tester"):cmd.index("--tester") + 4] == ["--tester", "sequential", "--no-size", "--samples"]
    assert entry.command(2, 4000)[entry.command(2, 4000).index("--tester") + 1] == "all"
    from dpaudit.library.runner import _make_tester
    from dpaudit.testers.sequential import SequentialTester

    t = _make_tester("sequential --no-size")
    assert isinstance(t, SequentialTester) and t.size is False
    with pytest.raises(ValueError, match="unknown tester words"):
        _make_tester("hockey-stick --no-size")


# ------------------------------------------------------------------ the registry

def test_every_entry_states_a_guarantee_or_why_it_is_not_auditable():
    keys = [e.key for e in REGISTRY]
    assert len(keys) == len(set(keys))
    for e in REGISTRY:
        if e.not_auditable:
            assert e.target is None and len(e.not_auditable) > 20, e.key
            continue
        g = e.guarantee
        assert g is not None and g.neighbouring in ("add-remove", "replace") and g.source and g.domain, e.key
        assert g.epsilon >= 0 and 0 <= g.delta < 1 and (g.epsilon > 0 or g.delta > 0), e.key
        assert e.budget.tester == "all" and e.configuration, e.key


def test_every_diffprivlib_mechanism_class_has_an_entry():
    mechanisms = pytest.importorskip("diffprivlib.mechanisms")
    abstract = {"DPMachine", "DPMechanism", "TruncationAndFoldingMixin"}
    classes = {n for n in dir(mechanisms) if isinstance(getattr(mechanisms, n), type) and n not in abstract}
    named = {e.name.split(".", 1)[1] for e in REGISTRY if e.library == "diffprivlib" and e.name.startswith("mech")}
    assert classes == named


def test_every_diffprivlib_tool_has_an_entry_or_is_listed_as_left_out():
    tools = pytest.importorskip("diffprivlib.tools")
    public = {n for n in dir(tools) if not n.startswith("_") and callable(getattr(tools, n))}
    named = {e.name.split(".", 1)[1] for e in REGISTRY if e.library == "diffprivlib" and e.name.startswith("tools.")}
    left = {part.strip().split(".", 1)[1] for what in library_audit.LEFT_OUT["diffprivlib"] for part in what.split(",")}
    assert public == named | left and not named & left


def test_targets_carry_the_relation_of_their_guarantee():
    from dpaudit.audit.targets import load_target

    for e in REGISTRY:
        if not e.target:
            continue
        mech, kind = load_target(e.target)
        assert kind == "mechanism"
        # labelled examples (Opacus rows: LabelledAddRemove) differ as the plain relation does
        assert mech.neighbouring.name.replace("labelled-", "") == e.guarantee.neighbouring, e.key
        assert mech.witness_pairs, e.key


def test_render_shows_every_entry_and_the_violation_details():
    entry = next(e for e in REGISTRY if e.key == "diffprivlib.laplace")
    run = {"outcome": "floating-point leak", "exit_code": 1, "command": " ".join(entry.command()), "seconds": 5.0,
           "epsilon_lower_bound": 1.5, "tester": "float-bits", "note": "float-bits: granularity",
           "witness": {"d0": [[0.0]], "d1": [[0.0], [1.0]], "direction": "P||Q"}}
    cache = {entry.key: {"key": entry.key, "fingerprint": la_fp(entry), "verdict": "floating-point leak",
                         "first": run, "confirm": dict(run, command=" ".join(entry.command(2, 40000)))}}
    text = library_audit.render(REGISTRY, cache)
    for e in REGISTRY:
        assert f"`{e.name}`" in text
    assert "D0 = [0], D1 = [0, 1]" in text and "--seed 2" in text and "Mironov" in text
    assert "not auditable: randomise() returns a perturbed objective" in text
    stale = {entry.key: dict(cache[entry.key], fingerprint={})}
    assert "floating-point leak** (see below)" not in library_audit.render(REGISTRY, stale)


# ------------------------------------------------------------------ fast real rows (seeded)

def _small(key: str, samples: int):
    entry = next(e for e in REGISTRY if e.key == key)
    return dataclasses.replace(entry, budget=dataclasses.replace(entry.budget, samples=samples, trials=1))


def test_diffprivlib_snapping_passes():
    pytest.importorskip("diffprivlib")
    row = library_audit.run_row(_small("diffprivlib.snapping", 2000)).summary
    assert row["outcome"] == "pass", row


def test_targets_sample_valid_outputs():
    pytest.importorskip("diffprivlib")
    from dpaudit.mechanisms.catalogue import diffprivlib_mechanisms as m

    rng = np.random.default_rng(0)
    for name, mech in m.TARGETS.items():
        d0, d1 = (np.array(d, dtype=float) for d in mech.witness_pairs[0])
        out = mech.sample(d1, 20, rng)
        assert out.shape[0] == 20 and np.all(np.isfinite(out)), name
        assert np.array_equal(mech.sample(d0, 5, np.random.default_rng(3)),
                              mech.sample(d0, 5, np.random.default_rng(3))), name  # seeded


# ------------------------------------------------------------------ relations, power twins, leak sizes

def test_every_row_states_where_its_relation_comes_from():
    for e in REGISTRY:
        if e.not_auditable:
            continue
        note = library_audit.relation_note(e)
        assert note.startswith(("documented: ", "inferred: ")), e.key
        if e.library == "diffprivlib":  # no diffprivlib docstring names a relation
            assert note.startswith("inferred: "), e.key
        if e.library == "OpenDP":  # the chain's input metric
            assert note.startswith("documented: "), e.key
    # the tools whose calibration assumes one relation are audited under the other too
    both = {}
    for e in REGISTRY:
        if e.name in ("tools.sum", "tools.mean", "tools.count_nonzero", "tools.histogram"):
            both.setdefault(e.name, set()).add(e.guarantee.neighbouring)
    assert all(v == {"add-remove", "replace"} for v in both.values()) and len(both) == 4


def test_planted_twins_scale_the_noise_by_0_7():
    pytest.importorskip("diffprivlib")
    from dpaudit.mechanisms.catalogue import diffprivlib_mechanisms as m
    from dpaudit.mechanisms.catalogue import planted

    assert planted.TARGETS  # every diffprivlib mechanism and tool has a twin
    for e in REGISTRY:
        if e.library == "diffprivlib" and e.target:
            assert library_audit.planted_target(e) is not None, e.key
    d0 = np.array([[0.0]])
    base = m.laplace.sample(d0, 1500, np.random.default_rng(1)).std()
    twin = planted.laplace.sample(d0, 1500, np.random.default_rng(1)).std()
    assert 0.6 < twin / base < 0.8  # Laplace scale 1/epsilon: x0.7 (both samples seeded)


def test_render_shows_leak_size_power_adversarial_and_the_float_cause():
    entry = next(e for e in REGISTRY if e.key == "pipelinedp.count_gaussian")
    run = {"outcome": "floating-point leak", "exit_code": 1, "seed": 1, "samples": 20000, "seconds": 5.0,
           "epsilon_lower_bound": 1.3, "tester": "float-bits", "witness": {"d0": [[0.0]], "d1": [[1.0]], "direction": "P||Q"}}
    leak = {"samples": 20000, "leak": {"description": "S"}, "delta_at_claim": 0.07, "text": "S: 806/10000 vs 0/10000"}
    adv = {"samples": 100, "seconds": 1.0, "accepts": "", "results": [
        {"kind": "nan", "description": "add", "status": "rejected", "detail": "the library raised", "leak": None},
        {"kind": "+inf", "description": "add a record holding inf", "status": "leak", "detail": "NaN outputs", "leak": {}}]}
    cache = {entry.key: {"key": entry.key, "fingerprint": la_fp(entry), "verdict": "floating-point leak",
                         "first": run, "leak_size": leak, "adversarial": adv, "ran_at": "2026-11-27 22:00"}}
    text = library_audit.render(REGISTRY, cache)
    assert "delta >= 0.07 at the claimed epsilon" in text and "S: 806/10000 vs 0/10000" in text
    assert "2 tried; rejected: nan; **leak**: +inf" in text and "GetNextPowerOfTwo" in text
    assert "inferred [" in text and "documented [" in text and "(2026-11-27)" in text


def test_a_pass_with_an_adversarial_leak_is_counted_apart():
    entry = next(e for e in REGISTRY if e.key == "diffprivlib.median")
    run = {"outcome": "pass", "exit_code": 0, "seed": 1, "samples": 20000, "seconds": 5.0, "epsilon_lower_bound": 0.1}
    adv = {"samples": 100, "seconds": 1.0, "accepts": "", "results": [
        {"kind": "nan", "description": "add a NaN record", "status": "leak", "detail": "NaN outputs", "leak": {}}]}
    rec = {"key": entry.key, "fingerprint": la_fp(entry), "verdict": "pass", "first": run, "adversarial": adv,
           "ran_at": "2026-11-27 22:00"}
    text = library_audit.render(REGISTRY, {entry.key: rec})
    assert "pass on ordinary inputs; **leak** on NaN input" in text
    header = next(line for line in text.splitlines() if line.startswith("| library |")).split(" | ")
    row = next(line for line in text.splitlines() if line.startswith("| diffprivlib |")).split(" | ")
    assert row[header.index(library_audit.PASS_ADVERSARIAL)] == "1" and row[header.index("pass")] == "0"
    assert library_audit.summary_verdict(dict(rec, adversarial=None)) == "pass"


def test_opendp_pipelinedp_and_pydp_twins_plant_epsilon_over_0_7():
    from dpaudit.mechanisms.catalogue import planted

    odp = pytest.importorskip("opendp")  # noqa: F841
    assert planted.opendp_noisy_max.claim().epsilon == pytest.approx(1 / 0.7, rel=1e-3)
    assert planted.opendp_private_quantile.claim().epsilon == pytest.approx(1 / 0.7, rel=1e-3)
    pdp = pytest.importorskip("pipeline_dp")
    original = pdp.NaiveBudgetAccountant
    probe = planted.planted_pipelinedp(
        planted._pdp.count_laplace.__class__(lambda rows: [(0, {"count": pdp.NaiveBudgetAccountant(
            total_epsilon=1.0, total_delta=0.0)._total_epsilon})], partitions=(0,), metrics=("count",)), "probe")
    assert probe.pipeline([]) == [(0, {"count": pytest.approx(1 / 0.7)})]
    assert pdp.NaiveBudgetAccountant is original  # restored after the call
    pytest.importorskip("pydp")
    assert planted.pydp_bounded_sum.kwargs["epsilon"] == pytest.approx(1 / 0.7)
    for e in REGISTRY:
        if e.library in ("PipelineDP", "PyDP") and e.key not in ("pipelinedp.vector_sum_public",
                                                                  "pipelinedp.count_bounds_enforced"):
            assert library_audit.planted_target(e) is not None, e.key


def test_pydp_targets_release_one_number_each():
    pytest.importorskip("pydp")
    from dpaudit.mechanisms.catalogue import pydp_algorithms as m

    for name, mech in m.TARGETS.items():
        d0, d1 = (np.array(d, dtype=float).reshape(-1, 1) for d in mech.witness_pairs[0])
        out = mech.sample(d1, 20, np.random.default_rng(0))
        assert out.shape == (20, 1) and np.all(np.isfinite(out)), name
    with pytest.raises(ValueError, match="class name"):
        m.PyDPAlgorithm("", "bad")


def test_recorded_seconds_counts_each_run_once():
    """The adversarial stage's search is inside its own seconds; a confirmation's targeted run that did
    not reproduce ran before it and counts on top."""
    from dpaudit.library.table import recorded_seconds

    rec = {"first": {"seconds": 10.0}, "adversarial": {"seconds": 5.0, "search": {"seconds": 4.0}},
           "confirm": {"seconds": 20.0, "targeted": {"seconds": 2.5}}, "power": {"seconds": 7.0},
           "leak_size": {"seconds": 1.0, "source": "run"}, "verdict": "violation"}
    assert recorded_seconds(rec) == 10.0 + 5.0 + 20.0 + 2.5 + 7.0 + 1.0
    assert recorded_seconds({"first": {"seconds": True}}) == 0.0 and recorded_seconds(None) == 0.0

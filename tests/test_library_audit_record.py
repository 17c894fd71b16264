"""Tests of the published record of DP-library bugs (``dpaudit.library.record``) against the
library-audit table (``dpaudit.library``), and of the two rows it added
(``dpaudit.mechanisms.catalogue.diffprivlib_record``).

The record must render (one line per item, in the section "Against the published record"), every
item must either name rows of the registry that find it or give a reason, and a "found" must be
backed by the cache: the named rows' current verdicts are findings (violation or floating-point
leak), and the rows named to show a fixed version (``checked``) pass.
"""

from __future__ import annotations


import numpy as np
import pytest
from dpaudit.library.registry import fingerprint as la_fp
from library_audit_support import ROOT, load_library_audit

library_audit = load_library_audit()
from dpaudit.library import record as library_record  # noqa: E402

KEYS = {e.key for e in library_audit.REGISTRY}
FINDINGS = ("violation", "floating-point leak")


def _fresh():
    cache = library_audit.load_cache()
    return {e.key: cache[e.key] for e in library_audit.REGISTRY
            if e.key in cache and cache[e.key].get("fingerprint") == la_fp(e)}


def test_record_has_13_violations_each_found_by_registry_rows_or_with_a_reason():
    ids = [it["id"] for it in library_record.items()]
    assert len(library_record.PUBLISHED_RECORD) == 13 and len(ids) == len(set(ids))
    assert library_record.validate(KEYS) == []
    for it in library_record.PUBLISHED_RECORD:
        for field in ("library", "version", "function", "kind", "what", "relation", "evidence", "link"):
            assert it[field], (it["id"], field)
    # the validator catches a row key that is not in the registry, and an item with neither field
    assert library_record.validate(KEYS - {"diffprivlib.linear_regression_diagonal"})
    bad = dict(library_record.PUBLISHED_RECORD[0])
    bad.pop("reason")
    saved = library_record.PUBLISHED_RECORD
    try:
        library_record.PUBLISHED_RECORD = (bad,) + saved[1:]
        assert any("exactly one" in p for p in library_record.validate(KEYS))
    finally:
        library_record.PUBLISHED_RECORD = saved


def test_found_items_are_backed_by_the_cached_verdicts_and_checked_rows_pass():
    fresh = _fresh()
    for it in library_record.items():
        for key in it.get("found") or ():
            assert key in fresh and fresh[key]["verdict"] in FINDINGS, (it["id"], key)
        for key in it.get("checked") or ():
            assert key in fresh and fresh[key]["verdict"] == "pass", (it["id"], key)
        kind, rows = it.get("found_adversarial") or ("", ())
        for key in rows:
            leaks = [r["kind"] for r in (fresh[key].get("adversarial") or {}).get("results", ()) if r["status"] == "leak"]
            assert kind in leaks, (it["id"], key)


def test_record_renders_one_line_per_item_in_the_generated_doc():
    fresh = _fresh()
    lines = library_record.render(fresh)
    assert "## Against the published record" in lines
    for it in library_record.PUBLISHED_RECORD + library_record.OLDER_REPORTS:
        line = next(ln for ln in lines if ln.startswith(f"* {it['id']} "))
        found = bool(it.get("found") or it.get("found_adversarial"))
        assert ("**found** by" in line) == found, it["id"]
        assert found or ("not found: " + it["reason"]) in line, it["id"]
    doc = library_audit.render(library_audit.REGISTRY, library_audit.load_cache())
    assert doc.count("## Against the published record") == 1
    assert "was not available to this session" not in doc  # the candidates are now checked against the record
    for line in library_record.candidate_lines():  # the new findings are listed apart, with their reproducer
        assert line in doc.split("## Candidate new findings", 1)[1]
        path = line.rsplit("`python ", 1)[1].split("`", 1)[0]
        assert (ROOT / path).exists()
    committed = (ROOT / "docs" / "library_audits.md").read_text()
    assert "\n".join(lines).strip() in committed  # the committed doc was regenerated with this record


def test_record_rows_reproduce_the_two_diffprivlib_bugs_on_their_witness_pairs():
    pytest.importorskip("diffprivlib")
    from dpaudit.mechanisms.base import draw
    from dpaudit.mechanisms.catalogue import diffprivlib_record as r

    rng = np.random.default_rng(0)
    lin, log = r.linear_regression_diagonal, r.logistic_regression_labels
    (d0, d1), = lin.witness_pairs[:1]
    y0 = draw(lin, np.asarray(d0, dtype=float), 40, rng)[:, 0]
    y1 = draw(lin, np.asarray(d1, dtype=float), 40, rng)[:, 0]
    # sum x^2 is exact (0.01 vs 1.01): coef_ on D0 is ~100 times wider (Laplace scales 300 vs 2.97)
    assert np.median(np.abs(y0)) > 20 * np.median(np.abs(y1))
    (d0, d1), = log.witness_pairs[:1]
    z0 = draw(log, np.asarray(d0, dtype=float), 3, rng)
    z1 = draw(log, np.asarray(d1, dtype=float), 3, rng)
    assert set(z0[:, 0]) == {1.0} and set(z1[:, 0]) == {3.0}  # one model vs three one-vs-rest models

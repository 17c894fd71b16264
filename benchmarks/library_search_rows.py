"""Run the adversarial stage (the staged screen: fixed list, then the input-space search) on table rows
without re-running their audits, and store it with each row's cached record.

``dpaudit library audit LIB ROW --stages adversarial`` does the same after an audit; this script is for
the whole table at once (issue 42, item 1: the search over every row), where the audits are cached.
Each row's stage spends its own beta (:data:`dpaudit.library.runner.BETA`); the stage's time is
recorded with it (``seconds``) and printed with the CPU seconds of the row.

Usage::

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/library_search_rows.py [--library diffprivlib]
        [--keys diffprivlib.mean ...] [--sample K --seed S] [--budget 60] [--no-save] [--cache FILE] [--out FILE]

Prints one line per row (key, seconds, CPU seconds, what the stage found) and writes a JSON summary
(``--out``, default ``benchmarks/results/library_search_rows.json``, merged with what is there).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    """Run the stage on the chosen rows; returns 0 (a row whose stage raised is reported, not fatal)."""
    from dpaudit.library import cache as lc
    from dpaudit.library import stages as st
    from dpaudit.library.findings import finding_ids
    from dpaudit.library.registry import REGISTRY, fingerprint
    from dpaudit.library.runner import BETA

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--library")
    ap.add_argument("--keys", nargs="*")
    ap.add_argument("--sample", type=int, help="a seeded sample of K rows")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget", type=int, default=st.SEARCH_BUDGET)
    ap.add_argument("--no-save", action="store_true", help="do not write the records into the cache")
    ap.add_argument("--cache", type=Path, help="the cache file to write (default: the repository's)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "library_search_rows.json")
    a = ap.parse_args(argv)

    rows = [e for e in REGISTRY if e.target is not None and not e.not_auditable]
    if a.library:
        rows = [e for e in rows if e.library.lower() == a.library.lower()]
    if a.keys:
        unknown = set(a.keys) - {e.key for e in rows}
        if unknown:
            print(f"unknown or unauditable rows: {sorted(unknown)}", file=sys.stderr)
            return 2
        rows = [e for e in rows if e.key in a.keys]
    if a.sample:
        rows = sorted(random.Random(a.seed).sample(rows, min(a.sample, len(rows))), key=lambda e: e.key)
    summary = json.loads(a.out.read_text()) if a.out.exists() else {}
    cache = a.cache or lc.default_cache()
    for e in rows:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            stage = st.adversarial_stage(e, beta=BETA, budget=a.budget)
            err = None
        except Exception as exc:  # noqa: BLE001 - reported per row
            stage, err = None, f"{type(exc).__name__}: {exc}"
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        rec = {"key": e.key, "fingerprint": fingerprint(e), "adversarial": stage, "search": None}
        if stage is not None and not a.no_save:
            lc.save_record(cache, rec)
        found = [f for f in finding_ids(e.key, {"adversarial": stage}) if "@" in f] if stage else []
        words = err or st.adversarial_words({"adversarial": stage})
        summary[e.key] = {"seconds": round(wall, 1), "cpu_seconds": round(cpu, 1), "findings": found,
                          "words": words, "budget": a.budget}
        print(f"{e.key}: {wall:.1f} s ({cpu:.1f} s CPU): {words}", flush=True)
        a.out.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: the library table's findings, re-audited with the sequential default (issue 43).

Reads the cached rows of ``benchmarks/library_audit.py`` (``benchmarks/results/library_audits.json``)
and, for every row whose verdict is a violation or a floating-point leak, runs the row's own
``dpaudit test`` command (same target, claim, ``--samples``, ``--trials`` and ``--seed``) with the
tester replaced by the default ``sequential+float-screen`` (no ``--tester``). It reports, next to the
table's verdict and audit time (``--tester all``, fixed stages), the sequential verdict, the calls
to the first trial holding it, and the audit time; a row the table found that the sequential default
misses is listed.

Run: ``nice python benchmarks/library_sequential.py`` (``--rows key1,key2``; results cached in
``--cache``; the Markdown in ``benchmarks/results/library_sequential.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import subprocess
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import dpaudit

RESULTS = Path(__file__).parent / "results"
DPAUDIT = str(Path(sys.executable).with_name("dpaudit"))


def rows(table: dict, keys=None):
    out = []
    for key, row in table.items():
        if keys and key not in keys:
            continue
        if row.get("verdict") not in ("violation", "floating-point leak"):
            continue
        first = row.get("first") or {}
        if not isinstance(first, dict) or "command" not in first:
            continue
        out.append((key, row["verdict"], first))
    return sorted(out, key=lambda r: r[2].get("audit_seconds") or 0.0)  # cheapest first


def sequential_command(cmd: str, mode: str = "sequential") -> list:
    """The row's command with its tester replaced: none (the sequential default) or ``--tester staged``
    (the default before issue 43)."""
    args = shlex.split(cmd)
    if "--tester" in args:  # the row's tester out: the default decides
        i = args.index("--tester")
        del args[i:i + 2]
    extra = ["--tester", "staged"] if mode == "staged" else []
    return [DPAUDIT] + args[1:] + extra + ["--json", "--processes", "1"]


def run(cmd: list) -> dict:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    out = {"exit_code": res.returncode, "wall_seconds": wall}
    try:
        d = json.loads(res.stdout)
    except json.JSONDecodeError:
        out["error"] = (res.stderr or res.stdout)[-400:]
        return out
    target = d.get("violation_kind")
    calls = 0
    for t in d["trials"]:
        o = t["outcome"]
        hit = o["violation"] and o.get("violation_kind") == target
        found = re.search(r"at the ([\d,]+)-sample stage", o.get("note") or "")
        if hit and target == "floating-point" and found:  # the screen found it there (the trial went on)
            calls += 2 * int(found.group(1).replace(",", ""))
        else:
            calls += 2 * t["num_samples"]
        if hit:
            break
    out.update({"verdict": d["verdict"], "kind": target, "calls": calls, "trials": len(d["trials"]),
                "audit_seconds": d["wall_seconds"], "tester": d["tester"].get("tester")})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", type=Path, default=RESULTS / "library_audits.json")
    ap.add_argument("--rows", type=lambda s: set(s.split(",")), default=None)
    ap.add_argument("--cache", type=Path, default=RESULTS / "library_sequential.json")
    ap.add_argument("--staged-cache", type=Path, default=RESULTS / "library_staged.json")
    ap.add_argument("--modes", type=lambda s: tuple(s.split(",")), default=("sequential",),
                    help="sequential (the default tester) and/or staged (--tester staged)")
    ap.add_argument("--out", type=Path, default=RESULTS / "library_sequential.md")
    args = ap.parse_args(argv)
    table = json.loads(args.table.read_text())
    cache = json.loads(args.cache.read_text()) if args.cache.exists() else {}
    staged = json.loads(args.staged_cache.read_text()) if args.staged_cache.exists() else {}
    load0 = " ".join(f"{x:.2f}" for x in os.getloadavg())
    for key, verdict, first in rows(table, args.rows):
        for mode in args.modes:
            store, path = (cache, args.cache) if mode == "sequential" else (staged, args.staged_cache)
            if key in store:
                continue
            cmd = sequential_command(first["command"], mode)
            rec = run(cmd)
            rec.update({"command": " ".join(["dpaudit"] + cmd[1:]), "table_verdict": verdict,
                        "table_seconds": first.get("audit_seconds"), "table_command": first["command"]})
            store[key] = rec
            path.write_text(json.dumps(store, indent=1, sort_keys=True))
            print(mode, key, json.dumps({k: rec.get(k) for k in ("verdict", "kind", "calls", "audit_seconds", "table_seconds")}),
                  flush=True)
    load1 = " ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = ["# The library table's findings, re-audited with the sequential default", "",
             f"Command: `python benchmarks/library_sequential.py {' '.join(argv or sys.argv[1:])}`", "",
             f"Machine: dpaudit {dpaudit.__version__}, numpy {np.__version__}, Python {platform.python_version()}, "
             f"{os.cpu_count()} CPU cores shared with other jobs; load averages {load0} -> {load1} (the table's times "
             "were measured on the same machine at other loads).", "",
             "Each row: the table's command (`--tester all`, fixed stages as then) and its verdict and audit time, "
             "then the same command without `--tester` (the sequential default, `--processes 1`): verdict, calls to "
             "the first trial holding it (for a floating-point leak, to the checkpoint where the screen found it), audit time.", "",
             "staged: the same command with `--tester staged` (the default before issue 43: hockey-stick + "
             "float-bits screen, stages auto), where run.", "",
             "| row | table verdict | table audit (s) | staged verdict | staged calls | staged audit (s) | "
             "sequential verdict | sequential calls | sequential audit (s) | calls seq/staged |",
             "|---|---|---:|---|---:|---:|---|---:|---:|---:|"]

    def shown(rec):
        if rec is None:
            return "-"
        kind = rec.get("kind")
        return "violation" if kind == "distributional" else ("floating-point leak" if kind == "floating-point"
                                                             else rec.get("verdict", "error"))

    missed, ratios = [], []
    for key in sorted(set(cache) | set(staged)):
        rec, old = cache.get(key), staged.get(key)
        base = rec or old
        ratio = ""
        if rec is not None and old is not None and shown(rec) == shown(old) == base["table_verdict"] and old.get("calls"):
            ratios.append(rec["calls"] / old["calls"])
            ratio = f"{ratios[-1]:.3g}"
        if rec is not None and shown(rec) != base["table_verdict"]:
            missed.append(f"{key} (table: {base['table_verdict']}; sequential: {shown(rec)}"
                          + (f"; staged: {shown(old)})" if old is not None else ")"))
        cells = []
        for r in (old, rec):
            cells += [shown(r), f"{r.get('calls', 0):,}" if r else "-",
                      f"{r.get('audit_seconds', 0):.1f}" if r else "-"]
        lines.append(f"| {key} | {base['table_verdict']} | {base.get('table_seconds') or '-'} | " + " | ".join(cells)
                     + f" | {ratio} |")
    if ratios:
        lines += ["", f"Median ratio of calls to first detection, sequential / staged, over the {len(ratios)} rows both "
                  f"find as the table does: {statistics.median(ratios):.3g}."]
    lines += ["", "Rows whose sequential verdict differs from the table's: " + ("; ".join(missed) if missed else "none") + "."]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

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
import shlex
import subprocess
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
    return out


def sequential_command(cmd: str) -> list:
    args = shlex.split(cmd)
    if "--tester" in args:  # the row's tester out: the default decides
        i = args.index("--tester")
        del args[i:i + 2]
    return [DPAUDIT] + args[1:] + ["--json", "--processes", "1"]


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
        calls += 2 * t["num_samples"]
        if o["violation"] and o.get("violation_kind") == target:
            break
    out.update({"verdict": d["verdict"], "kind": target, "calls": calls, "trials": len(d["trials"]),
                "audit_seconds": d["wall_seconds"], "tester": d["tester"].get("tester")})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", type=Path, default=RESULTS / "library_audits.json")
    ap.add_argument("--rows", type=lambda s: set(s.split(",")), default=None)
    ap.add_argument("--cache", type=Path, default=RESULTS / "library_sequential.json")
    ap.add_argument("--out", type=Path, default=RESULTS / "library_sequential.md")
    args = ap.parse_args(argv)
    table = json.loads(args.table.read_text())
    cache = json.loads(args.cache.read_text()) if args.cache.exists() else {}
    load0 = " ".join(f"{x:.2f}" for x in os.getloadavg())
    for key, verdict, first in rows(table, args.rows):
        if key in cache:
            continue
        cmd = sequential_command(first["command"])
        rec = run(cmd)
        rec.update({"command": " ".join(["dpaudit"] + cmd[1:]), "table_verdict": verdict,
                    "table_seconds": first.get("audit_seconds"), "table_command": first["command"]})
        cache[key] = rec
        args.cache.write_text(json.dumps(cache, indent=1, sort_keys=True))
        print(key, json.dumps({k: rec.get(k) for k in ("verdict", "kind", "calls", "audit_seconds", "table_seconds")}),
              flush=True)
    load1 = " ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = ["# The library table's findings, re-audited with the sequential default", "",
             f"Command: `python benchmarks/library_sequential.py {' '.join(argv or sys.argv[1:])}`", "",
             f"Machine: dpaudit {dpaudit.__version__}, numpy {np.__version__}, Python {platform.python_version()}, "
             f"{os.cpu_count()} CPU cores shared with other jobs; load averages {load0} -> {load1} (the table's times "
             "were measured on the same machine at other loads).", "",
             "Each row: the table's command (`--tester all`, fixed stages as then) and its verdict and audit time, "
             "then the same command without `--tester` (the sequential default, `--processes 1`): verdict, calls to "
             "the first trial holding it, audit time.", "",
             "| row | table verdict | table audit (s) | sequential verdict | calls | sequential audit (s) |",
             "|---|---|---:|---|---:|---:|"]
    missed = []
    for key, rec in sorted(cache.items()):
        v = rec.get("verdict", "error")
        kind = rec.get("kind")
        shown = "violation" if kind == "distributional" else ("floating-point leak" if kind == "floating-point" else v)
        if shown != rec["table_verdict"]:
            missed.append(f"{key} (table: {rec['table_verdict']}; sequential: {shown})")
        lines.append(f"| {key} | {rec['table_verdict']} | {rec.get('table_seconds') or '-'} | {shown} | "
                     f"{rec.get('calls', 0):,} | {rec.get('audit_seconds', 0):.1f} |")
    lines += ["", "Rows whose verdict differs: " + ("; ".join(missed) if missed else "none") + "."]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

"""Benchmark: samples to first detection, the staged default vs the sequential tester vs the published
sequential auditor, on every zoo entry (issue 43).

For every buggy zoo entry (``not entry.private``) at eps = 1, and at eps = 0.01 where the zoo says
it violates its claim there (``entry.violates(0.01)``), and every correct entry at eps = 1, the
script runs, per seed ``s`` and mode::

    dpaudit.audit(entry.mechanism(eps), entry.claim(eps), GridFinder(witness pairs replayed to 10),
                  num_samples=50_000, trials=10, beta=0.01, seed=s, processes=1, tester=T)

with ``T`` by mode:

* ``staged``: the default before issue 43, ``make_tester(default_tester_name(claim, sequential=False))``
  (hockey-stick, with renyi for a Rényi claim, plus the float-bits screen; ``stages="auto"``);
* ``sequential``: the new default, ``make_tester("sequential+float-screen")``;
* ``gonzalez``: :class:`sequential_baselines.KernelBettingAuditor` (González et al. 2025,
  reimplemented; pure and approximate claims only), alone (no float screen).

Per audit: detected, the violation kind (the audit's verdict), the mechanism calls up to and
including the first trial whose violation is of that kind (``2 x sum of
TrialRecord.num_samples``: the calls made; an audit that found a floating-point leak first goes on
to look for a distributional violation, and a distributional verdict is counted to the trial that
found it; for a floating-point verdict the detecting trial counts up to the checkpoint where the
screen found it, since the trial goes on after it), for sequential trials
also the pairs the e-process needed (``samples_used``), the audit's wall time and the CPU time the
tester spent (``test_seconds``) against the sampling time (``sample_seconds``).

Results are cached per audit in ``--cache`` (JSON, keyed by entry, eps, seed, mode and settings),
so interrupted runs add up; the Markdown table is rewritten from the cache at the end.

Run: ``nice python benchmarks/sequential_detection.py --seeds 3`` (``--only-private``,
``--no-private``, ``--modes staged,sequential``, ``--mechanisms a,b``).
"""

from __future__ import annotations

import argparse
import json
import re
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import dpaudit
from dpaudit import GridFinder
from dpaudit.mechanisms import zoo
from dpaudit.privacy.claims import RenyiDP
from dpaudit.testers import default_tester_name, make_tester

from sequential_baselines import KernelBettingAuditor

RESULTS = Path(__file__).parent / "results"
MODES = ("staged", "sequential", "gonzalez")


def replayed(entry, trials: int):
    pairs = entry.witnesses()
    return [pairs[i % len(pairs)] for i in range(trials)]


def tester_for(mode: str, claim):
    if mode == "staged":
        return make_tester(default_tester_name(claim, sequential=False))
    if mode == "sequential":
        return make_tester("sequential+float-screen")
    if mode == "gonzalez":
        return KernelBettingAuditor() if not isinstance(claim, RenyiDP) else None
    raise ValueError(mode)


def run_one(entry, eps, seed, mode, n, trials, beta) -> dict | None:
    mech, claim = entry.mechanism(eps), entry.claim(eps)
    tester = tester_for(mode, claim)
    if tester is None:
        return None
    t0 = time.perf_counter()
    c0 = time.process_time()
    result = dpaudit.audit(mech, claim, GridFinder(replayed(entry, trials)), num_samples=n, trials=trials, beta=beta,
                           seed=seed, processes=1, tester=tester, stages="auto")
    cpu = time.process_time() - c0
    # the detection the audit's verdict rests on: its first distributional violation if it is
    # distributional, else its first floating-point finding
    target = result.violation_kind
    calls, first, used, sized, sizing_pairs = 0, None, None, None, 0
    detail = []
    for rec in sorted(result.trials, key=lambda r: r.index):
        kind = rec.outcome.violation_kind if rec.outcome.violation else None
        found_at = re.search(r"at the ([\d,]+)-sample stage", rec.outcome.note or "")
        found_n = int(found_at.group(1).replace(",", "")) if found_at else None
        detail.append({"index": rec.index, "pairs": rec.num_samples, "kind": kind, "found_at": found_n})
        if kind is not None and kind == target and kind == "floating-point" and found_n:
            calls += 2 * found_n  # the screen found it at that checkpoint (the trial went on)
        else:
            calls += 2 * rec.num_samples
        if kind is not None and kind == target:
            first = rec.index
            o = rec.outcome
            leaves = o.parts or (o,)
            seq = [p for p in leaves if p.bounds and hasattr(p.bounds[0], "samples_used") and p.violation]
            used = seq[0].bounds[0].samples_used if seq else None
            sized = seq[0].bounds[0].sized_epsilon if seq and hasattr(seq[0].bounds[0], "sized_epsilon") else None
            sizing_pairs = seq[0].bounds[0].sizing_samples if seq and hasattr(seq[0].bounds[0], "sizing_samples") else 0
            break
    return {
        "detected": bool(result.violation), "kind": result.violation_kind, "calls": calls, "first_trial": first,
        "trials_run": len(result.trials), "wall_seconds": result.wall_seconds, "outer_seconds": time.perf_counter() - t0,
        "trials": detail,
        "cpu_seconds": cpu, "samples_used": used, "sized_epsilon": sized, "sizing_pairs": sizing_pairs,
        "test_seconds": sum(r.test_seconds for r in result.trials),
        "sample_seconds": sum(r.sample_seconds for r in result.trials),
        "pairs_drawn": sum(r.num_samples for r in result.trials),
        "claim": claim.describe(),
    }


def key_of(name, eps, seed, mode, n, trials, beta):
    return f"{name}|{eps:g}|{seed}|{mode}|{n}|{trials}|{beta:g}"


def plan(args):
    rows = []
    for e in zoo.entries():
        if not e.witness_pairs or (args.mechanisms and e.name not in args.mechanisms):
            continue
        if args.cells is not None:
            rows += [(e, eps) for name, eps in args.cells if name == e.name]
            continue
        if e.private:
            if not args.no_private:
                rows.append((e, 1.0))
            continue
        if args.only_private:
            continue
        rows.append((e, 1.0))
        if e.violates(0.01):
            rows.append((e, 0.01))
    return rows


def _staged_missed(cache, name, eps, args) -> bool:
    """Whether every seed of the staged default is cached and none detected (``--skip-undetected``)."""
    recs = [cache.get(key_of(name, eps, s, "staged", args.num_samples, args.trials, args.beta)) for s in range(args.seeds)]
    return all(r is not None for r in recs) and not any(r["detected"] for r in recs)


def _med(xs):
    return statistics.median(xs) if xs else float("nan")


def _cell_calls(recs):
    det = [r for r in recs if r["detected"]]
    use = det or recs
    c = [r["calls"] for r in use]
    return f"{_med(c):,.0f} [{min(c):,}-{max(c):,}]" if len(c) > 1 else f"{c[0]:,}"


def render(cache, rows, args, meta) -> str:
    modes = args.modes
    out = ["# Samples to first detection: staged default vs sequential tester vs the published sequential auditor", "",
           f"Command: `{meta['command']}`", "",
           f"Machine: {meta['machine']}. Load averages (1/5/15 min) at start {meta['load0']}, at end {meta['load1']}.", "",
           "Per audit: `dpaudit.audit(entry.mechanism(eps), entry.claim(eps), GridFinder(witness pairs replayed to "
           f"{args.trials}), num_samples={args.num_samples:,}, trials={args.trials}, beta={args.beta:g}, seed=s, "
           f"processes=1, tester=T)`, seeds 0..{args.seeds - 1}. staged: the default before issue 43 (hockey-stick "
           "[+renyi] + float-bits screen, stages auto); sequential: the new default (sequential + float-bits screen); "
           "gonzalez: the kernel-witness sequential auditor of González et al. (2025), reimplemented "
           "(`benchmarks/sequential_baselines.py`; pure/approximate claims). calls: mechanism calls up to and "
           "including the first violating trial, median [min-max] over the seeds that detected (else over all); "
           "pairs: the e-process's pairs at detection (median); wall: audit wall time to the end (median, s).", ""]
    buggy = [(e, eps) for e, eps in rows if not e.private]
    private = [(e, eps) for e, eps in rows if e.private]
    ratios, missed, gz_ratios = [], [], []
    if buggy:
        head = "| mechanism | eps | claim | " + " | ".join(f"detected {m}" for m in modes) + " | " + \
               " | ".join(f"calls {m}" for m in modes) + " | pairs seq | ratio seq/staged | " + \
               " | ".join(f"wall {m}" for m in modes) + " |"
        out += ["## Buggy entries", "", head, "|" + "---|" * (4 + 3 * len(modes) + 1)]
        for e, eps in buggy:
            recs = {m: [cache.get(key_of(e.name, eps, s, m, args.num_samples, args.trials, args.beta))
                        for s in range(args.seeds)] for m in modes}
            recs = {m: [r for r in v if r is not None] for m, v in recs.items()}
            if not recs.get("staged") or not recs.get("sequential"):
                continue
            cells = []
            for m in modes:
                v = recs[m]
                cells.append("n/a" if not v else f"{sum(r['detected'] for r in v)}/{len(v)}"
                             + (f" ({','.join(sorted({str(r['kind']) for r in v if r['detected']}))[:5]})" if any(r["detected"] for r in v) else ""))
            calls = [("n/a" if not recs[m] else _cell_calls(recs[m])) for m in modes]
            used = [r["samples_used"] for r in recs["sequential"] if r["detected"] and r["samples_used"]]
            st = [r for r in recs["staged"] if r["detected"]]
            sq = [r for r in recs["sequential"] if r["detected"]]
            ratio = ""
            if st and sq:
                rr = _med([r["calls"] for r in sq]) / _med([r["calls"] for r in st])
                ratios.append(rr)
                ratio = f"{rr:.3g}"
            gz = [r for r in recs.get("gonzalez", []) if r["detected"]]
            if gz and sq:
                gz_ratios.append(_med([r["calls"] for r in sq]) / _med([r["calls"] for r in gz]))
            if len(sq) < len(st):
                missed.append(f"{e.name} at eps {eps:g} ({len(st)}/{len(recs['staged'])} staged, {len(sq)}/{len(recs['sequential'])} sequential)")
            walls = [("n/a" if not recs[m] else f"{_med([r['wall_seconds'] for r in recs[m]]):.2f}") for m in modes]
            out.append(f"| {e.name} | {eps:g} | {recs['staged'][0]['claim']} | " + " | ".join(cells) + " | "
                       + " | ".join(calls) + f" | {_med(used):,.0f} | {ratio} | " + " | ".join(walls) + " |"
                       if used else
                       f"| {e.name} | {eps:g} | {recs['staged'][0]['claim']} | " + " | ".join(cells) + " | "
                       + " | ".join(calls) + f" | - | {ratio} | " + " | ".join(walls) + " |")
        out += ["", f"**Median ratio of calls to first detection, sequential / staged, over the {len(ratios)} buggy "
                f"cells both detect: {_med(ratios):.3g}** (geometric mean {float(np.exp(np.mean(np.log(ratios)))) if ratios else float('nan'):.3g}).",
                "" if not gz_ratios else f"Median ratio of calls to first detection, sequential / gonzalez, over the "
                f"{len(gz_ratios)} buggy cells both detect (gonzalez run on those cells only): {_med(gz_ratios):.3g}.",
                "", "Cells where the sequential default detects in fewer seeds than the staged one: "
                + ("; ".join(missed) if missed else "none") + ".", ""]
    if private:
        out += ["## Correct entries (no detection expected; a floating-point finding is the float64 sampler's)", "",
                "| mechanism | eps | claim | " + " | ".join(f"flagged {m} (kind)" for m in modes) + " | "
                + " | ".join(f"calls {m}" for m in modes) + " | " + " | ".join(f"wall {m}" for m in modes) + " |",
                "|" + "---|" * (3 + 3 * len(modes))]
        for e, eps in private:
            recs = {m: [r for r in (cache.get(key_of(e.name, eps, s, m, args.num_samples, args.trials, args.beta))
                                    for s in range(args.seeds)) if r is not None] for m in modes}
            if not recs.get("staged") or not recs.get("sequential"):
                continue
            flagged = []
            for m in modes:
                v = recs[m]
                if not v:
                    flagged.append("n/a")
                    continue
                kinds = sorted({str(r["kind"]) for r in v if r["detected"]})
                flagged.append(f"{sum(r['detected'] for r in v)}/{len(v)}" + (f" ({', '.join(kinds)})" if kinds else ""))
            calls = [("n/a" if not recs[m] else f"{_med([r['calls'] for r in recs[m]]):,.0f}") for m in modes]
            walls = [("n/a" if not recs[m] else f"{_med([r['wall_seconds'] for r in recs[m]]):.2f}") for m in modes]
            out.append(f"| {e.name} | {eps:g} | {recs['staged'][0]['claim']} | " + " | ".join(flagged) + " | "
                       + " | ".join(calls) + " | " + " | ".join(walls) + " |")
        out.append("")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--num-samples", type=int, default=50_000)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--beta", type=float, default=0.01)
    ap.add_argument("--modes", type=lambda s: tuple(s.split(",")), default=MODES)
    ap.add_argument("--mechanisms", type=lambda s: set(s.split(",")), default=None)
    ap.add_argument("--cells", type=lambda s: [(c.split("@")[0], float(c.split("@")[1])) for c in s.split(",")],
                    default=None, help="only these cells, NAME@EPS,... (with --mechanisms naming them too, or alone)")
    ap.add_argument("--skip-undetected", action="store_true",
                    help="run the other modes only on cells the cached staged default detected in some seed")
    ap.add_argument("--only-private", action="store_true")
    ap.add_argument("--no-private", action="store_true")
    ap.add_argument("--cache", type=Path, default=RESULTS / "sequential_detection.json")
    ap.add_argument("--out", type=Path, default=RESULTS / "sequential_detection.md")
    ap.add_argument("--render-only", action="store_true", help="rewrite the table from the cache, run nothing")
    args = ap.parse_args(argv)
    cache = json.loads(args.cache.read_text()) if args.cache.exists() else {}
    rows = [] if args.render_only else plan(args)
    load0 = " ".join(f"{x:.2f}" for x in os.getloadavg())
    for e, eps in rows:
        for s in range(args.seeds):
            for mode in args.modes:
                k = key_of(e.name, eps, s, mode, args.num_samples, args.trials, args.beta)
                if k in cache:
                    continue
                if args.skip_undetected and mode != "staged" and _staged_missed(cache, e.name, eps, args):
                    continue
                rec = run_one(e, eps, s, mode, args.num_samples, args.trials, args.beta)
                if rec is None:
                    continue
                cache[k] = rec
                args.cache.write_text(json.dumps(cache, indent=1, sort_keys=True))
                print(f"{e.name} eps={eps:g} seed={s} {mode}: detected={rec['detected']} ({rec['kind']}) "
                      f"calls={rec['calls']:,} pairs={rec['samples_used']} wall={rec['wall_seconds']:.2f}s", flush=True)
    meta = {"command": "python benchmarks/sequential_detection.py " + " ".join(argv or sys.argv[1:]),
            "machine": f"dpaudit {dpaudit.__version__}, numpy {np.__version__}, Python {platform.python_version()}, "
                       f"{platform.machine()}, {os.cpu_count()} CPU cores shared with other jobs",
            "load0": load0, "load1": " ".join(f"{x:.2f}" for x in os.getloadavg())}
    args.out.write_text(render(cache, plan(args), args, meta))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

"""Benchmark: mechanism calls and wall time until the first detection, fixed-size trials vs
sequential stages (``audit(..., stages="off")`` vs ``stages="auto"``).

For every buggy zoo entry (``not entry.private``; the ``dpsniper-*`` entries only with
``--dpsniper``) at eps = 1, and at eps = 0.01 where the zoo says it violates its claim there
(``entry.violates(0.01)``), the script runs::

    dpaudit.audit(entry.mechanism(eps), entry.claim(eps), GridFinder(witnesses),
                  num_samples=50_000, trials=10, beta=0.01, seed=s, stages=..., processes=1)

with ``witnesses`` the entry's witness pairs replayed in order until there are ``trials`` of them
(the zoo's grid; a one-pair entry tests its pair ``trials`` times on fresh samples), for
``stages="off"`` and ``"auto"`` (alternated, on the same seeds). Per audit it records whether it
found a violation, the mechanism calls it made up to and including the first violating trial
(``2 x sum of TrialRecord.num_samples``; the audit stops at the first violation, so this is every
call when it detects) and its wall time (``AuditResult.wall_seconds``).

The correct entries (``entry.private``) are run the same way at eps = 1: calls used (the futility
rule's savings) and that none is flagged.

Results are cached per audit in ``--cache`` (JSON) so interrupted runs add up; the Markdown is
rewritten from the cache at the end.

``--compare-testers`` instead runs every audit with ``stages="auto"`` twice, with the hockey-stick
tester alone (``tester=HockeyStickTester()``, the default before issue 37) and with the default
tester (``tester=None``: on non-integer float outputs the float-bits screen takes a tenth of beta,
:class:`dpaudit.testers.FloatScreenTester`), and prints what the split costs: detections, calls
and trials to the first detection, and which tester detected.

Run: ``python benchmarks/first_detection.py`` (defaults: ``--seeds 3 --num-samples 50000
--trials 10 --beta 0.01``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import dpaudit
from dpaudit import GridFinder
from dpaudit.mechanisms import zoo

RESULTS = Path(__file__).parent / "results"
MODES = ("off", "auto")


def replayed_witnesses(entry, trials: int):
    pairs = entry.witnesses()
    return [pairs[i % len(pairs)] for i in range(trials)]


TESTERS = ("hockey-stick", "default", "hockey-stick-0.9")
"""``--compare-testers``: the hockey-stick tester alone at beta (the old default), the default
(float screen), and the hockey-stick tester alone at 0.9 beta (what the split leaves the
distributional tester on float outputs, whichever tester would have fired first)."""


def run_one(entry, eps, seed, stages, num_samples, trials, beta, tester: str = "hockey-stick") -> dict:
    mech, claim = entry.mechanism(eps), entry.claim(eps)
    finder = GridFinder(replayed_witnesses(entry, trials))
    t0 = time.perf_counter()
    if tester == "hockey-stick-0.9":
        beta = beta * (1.0 - dpaudit.testers.FLOAT_SCREEN_SHARE)
    result = dpaudit.audit(mech, claim, finder, num_samples=num_samples, trials=trials, beta=beta,
                           seed=seed, stages=stages, processes=1,
                           tester=None if tester == "default" else dpaudit.HockeyStickTester())
    wall = time.perf_counter() - t0
    calls, first = 0, None
    for rec in sorted(result.trials, key=lambda r: r.index):
        calls += 2 * rec.num_samples
        if rec.outcome.violation:
            first = rec.index
            break
    return {
        "detected": bool(result.violation),
        "calls": calls,
        "first_trial": first,
        "trials_run": len(result.trials),
        "wall_seconds": result.wall_seconds,
        "outer_seconds": wall,
        "stop_reasons": [r.stopped_by for r in sorted(result.trials, key=lambda r: r.index)],
        "claim": claim.describe(),
        "found_by": (None if first is None else result.trials[[r.index for r in result.trials].index(first)]
                     .outcome.strongest_part.tester),
        "float_outputs": result.tester.get("float_outputs"),
    }


def key_of(name, eps, seed, mode, n, trials, beta, tester="hockey-stick"):
    # the hockey-stick tester was the default before issue 37: its keys stay as they were
    return f"{name}|{eps:g}|{seed}|{mode}|{n}|{trials}|{beta:g}" + ("" if tester == "hockey-stick" else f"|{tester}")


def render_testers(cache, rows, args, meta) -> str:
    """The ``--compare-testers`` table: hockey-stick alone vs the default (float screen, beta split)."""
    med = statistics.median
    out = ["# First detection: the hockey-stick tester alone vs the default (float-bits screen at beta/10)", "",
           f"Command: `{meta['command']}`", "",
           f"Machine: {meta['machine']}. Load averages (1/5/15 min) at start {meta['load0']}, at end {meta['load1']}.",
           "", "Per audit as above with `stages=\"auto\"`; medians over the seeds that detected (else over all).", "",
           "hs: hockey-stick alone at beta (the default before); default: float screen at beta/10 on float outputs; "
           "hs 0.9: hockey-stick alone at 0.9 beta (the distributional tester's share under the split).", "",
           "| mechanism | eps | float outputs | detected hs / default / hs 0.9 | calls hs | default | hs 0.9 | ratio default/hs | ratio hs 0.9/hs | first trial hs | default | hs 0.9 | found by (default) |",
           "|---|---:|---|---|---:|---:|---:|---:|---:|---|---|---|---|"]
    tot = {t: 0 for t in TESTERS}
    for e, eps in rows:
        recs = {t: [cache.get(key_of(e.name, eps, s, "auto", args.num_samples, args.trials, args.beta, t))
                    for s in range(args.seeds)] for t in TESTERS}
        recs = {t: [r for r in v if r is not None] for t, v in recs.items()}
        if not all(recs.values()):
            continue
        use = {t: [r for r in v if r["detected"]] or v for t, v in recs.items()}
        calls = {t: med([r["calls"] for r in use[t]]) for t in TESTERS}
        first = {t: ",".join(str(r["first_trial"] + 1) if r["first_trial"] is not None else "-" for r in recs[t])
                 for t in TESTERS}
        for t in TESTERS:
            tot[t] += sum(r["calls"] for r in recs[t])
        found = ",".join(sorted({str(r["found_by"]) for r in recs["default"] if r["detected"]})) or "-"
        det = " / ".join(f"{sum(r['detected'] for r in recs[t])}/{len(recs[t])}" for t in TESTERS)
        h = calls["hockey-stick"]
        out.append(f"| {e.name} | {eps:g} | {recs['default'][0].get('float_outputs')} | {det} | "
                   f"{h:,.0f} | {calls['default']:,.0f} | {calls['hockey-stick-0.9']:,.0f} | {calls['default'] / h:.3g} | "
                   f"{calls['hockey-stick-0.9'] / h:.3g} | {first['hockey-stick']} | {first['default']} | "
                   f"{first['hockey-stick-0.9']} | {found} |")
    out += ["", "All audits together (every seed): calls " + ", ".join(f"{t} {tot[t]:,.0f}" for t in TESTERS) + ".", ""]
    return "\n".join(out)


def plan(args):
    rows = []
    for e in zoo.entries():
        if not e.witness_pairs:
            continue
        if e.name.startswith("dpsniper-") and not args.dpsniper:
            continue
        if args.mechanisms and e.name not in args.mechanisms:
            continue
        if e.private:
            rows.append((e, 1.0))
            continue
        rows.append((e, 1.0))
        if e.violates(0.01):
            rows.append((e, 0.01))
    if args.epsilons:
        rows = [(e, eps) for e, eps in rows if eps in args.epsilons]
    return rows


def fmt_s(x):
    return f"{x:.2f}" if x < 10 else f"{x:.1f}"


def render(cache, rows, args, meta) -> str:
    med = statistics.median
    out = [
        "# First detection: fixed-size trials vs sequential stages",
        "",
        f"Command: `{meta['command']}`",
        "",
        f"Machine: {meta['machine']}. Load averages (1/5/15 min) at start {meta['load0']}, at end {meta['load1']}.",
        "",
        f"Per audit: `dpaudit.audit(entry.mechanism(eps), entry.claim(eps), GridFinder(witness pairs replayed to "
        f"{args.trials}), num_samples={args.num_samples:,}, trials={args.trials}, beta={args.beta:g}, seed=s, "
        f"stages=off|auto, processes=1)`, seeds 0..{args.seeds - 1}, the two modes alternated per seed. "
        "calls: mechanism calls up to and including the first violating trial (2 x the trials' `num_samples`; "
        "every call made when the audit detects); time: `AuditResult.wall_seconds`. Medians over the seeds "
        "that detected (calls, time to first detection); for audits that did not detect, the calls/time of "
        "the whole audit.",
        "",
    ]

    def stats(name, eps, mode):
        recs = [cache.get(key_of(name, eps, s, mode, args.num_samples, args.trials, args.beta)) for s in range(args.seeds)]
        recs = [r for r in recs if r is not None]
        return recs

    def cell(recs):
        if not recs:
            return "not run", "", ""
        det = [r for r in recs if r["detected"]]
        use = det or recs
        calls = med([r["calls"] for r in use])
        wall = med([r["wall_seconds"] for r in use])
        return f"{len(det)}/{len(recs)}", f"{calls:,.0f}", fmt_s(wall)

    buggy = [(e, eps) for e, eps in rows if not e.private]
    private = [(e, eps) for e, eps in rows if e.private]
    if buggy:
        out += ["## Buggy entries", "",
                "| mechanism | eps | claim | violates here | detected off / auto | calls to first detection off | auto | ratio | time to first detection (s) off | auto | ratio |",
                "|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|"]
        tot = {m: [0, 0.0] for m in MODES}
        for e, eps in buggy:
            r_off, r_auto = stats(e.name, eps, "off"), stats(e.name, eps, "auto")
            d0, c0, w0 = cell(r_off)
            d1, c1, w1 = cell(r_auto)
            ratio_c = ratio_w = ""
            if r_off and r_auto:
                a = med([r["calls"] for r in ([r for r in r_auto if r["detected"]] or r_auto)])
                b = med([r["calls"] for r in ([r for r in r_off if r["detected"]] or r_off)])
                ratio_c = f"{a / b:.3g}"
                a = med([r["wall_seconds"] for r in ([r for r in r_auto if r["detected"]] or r_auto)])
                b = med([r["wall_seconds"] for r in ([r for r in r_off if r["detected"]] or r_off)])
                ratio_w = f"{a / b:.3g}"
                for m, rr in (("off", r_off), ("auto", r_auto)):
                    tot[m][0] += sum(r["calls"] for r in rr)
                    tot[m][1] += sum(r["wall_seconds"] for r in rr)
            claim = (r_off or r_auto or [{"claim": ""}])[0]["claim"]
            out.append(f"| {e.name} | {eps:g} | {claim} | {'yes' if e.violates(eps) else 'no'} | {d0} / {d1} "
                       f"| {c0} | {c1} | {ratio_c} | {w0} | {w1} | {ratio_w} |")
        out += ["", f"All buggy audits together (every seed, detected or not): calls off {tot['off'][0]:,.0f}, "
                f"auto {tot['auto'][0]:,.0f}; audit wall time off {tot['off'][1]:.1f} s, auto {tot['auto'][1]:.1f} s.", ""]
    if private:
        out += ["## Correct entries (no detection expected)", "",
                "| mechanism | eps | claim | flagged off / auto | calls used off | auto | ratio | time (s) off | auto | trial stop reasons (auto, first seed) |",
                "|---|---:|---|---|---:|---:|---:|---:|---:|---|"]
        for e, eps in private:
            r_off, r_auto = stats(e.name, eps, "off"), stats(e.name, eps, "auto")
            if not r_off or not r_auto:
                out.append(f"| {e.name} | {eps:g} | | not run | | | | | | |")
                continue
            c0 = med([r["calls"] for r in r_off])
            c1 = med([r["calls"] for r in r_auto])
            w0 = med([r["wall_seconds"] for r in r_off])
            w1 = med([r["wall_seconds"] for r in r_auto])
            f0 = sum(r["detected"] for r in r_off)
            f1 = sum(r["detected"] for r in r_auto)
            reasons = ", ".join(f"{k} x{v}" for k, v in sorted(_count(r_auto[0]["stop_reasons"]).items()))
            out.append(f"| {e.name} | {eps:g} | {r_off[0]['claim']} | {f0}/{len(r_off)} / {f1}/{len(r_auto)} "
                       f"| {c0:,.0f} | {c1:,.0f} | {c1 / c0:.3g} | {fmt_s(w0)} | {fmt_s(w1)} | {reasons} |")
        out.append("")
    return "\n".join(out)


def _count(items):
    c = {}
    for x in items:
        c[x] = c.get(x, 0) + 1
    return c


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--num-samples", type=int, default=50_000)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--beta", type=float, default=0.01)
    ap.add_argument("--mechanisms", nargs="*", default=None, help="zoo names (default: all, see --dpsniper)")
    ap.add_argument("--dpsniper", action="store_true", help="include the dpsniper-* entries")
    ap.add_argument("--no-private", action="store_true", help="leave out the correct entries")
    ap.add_argument("--only-private", action="store_true", help="only the correct entries")
    ap.add_argument("--epsilons", type=float, nargs="*", default=None, help="only these of 1 and 0.01")
    ap.add_argument("--compare-testers", action="store_true",
                    help="stages auto, the hockey-stick tester alone vs the default tester (float screen)")
    ap.add_argument("--cache", type=Path, default=RESULTS / "first_detection.json")
    ap.add_argument("--out", type=Path, default=None, help="Markdown output (default: print)")
    args = ap.parse_args(argv)

    load0 = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rows = plan(args)
    if args.no_private:
        rows = [(e, eps) for e, eps in rows if not e.private]
    if args.only_private:
        rows = [(e, eps) for e, eps in rows if e.private]
    cache = json.loads(args.cache.read_text()) if args.cache.exists() else {}
    runs = ([("auto", t) for t in TESTERS] if args.compare_testers else [(m, "hockey-stick") for m in MODES])
    for e, eps in rows:
        for seed in range(args.seeds):
            for mode, tester in (runs if seed % 2 == 0 else runs[::-1]):
                k = key_of(e.name, eps, seed, mode, args.num_samples, args.trials, args.beta, tester)
                if k in cache:
                    continue
                rec = run_one(e, eps, seed, mode, args.num_samples, args.trials, args.beta, tester)
                rec["load1"] = os.getloadavg()[0]
                cache[k] = rec
                args.cache.write_text(json.dumps(cache, indent=1, sort_keys=True))
                print(f"{e.name:34s} eps={eps:<5g} seed={seed} {mode:4s} {tester:12s} detected={rec['detected']!s:5s} "
                      f"calls={rec['calls']:>9,} wall={rec['wall_seconds']:7.2f}s trials={rec['trials_run']} "
                      f"load={rec['load1']:.2f}", file=sys.stderr, flush=True)
    load1 = " ".join(f"{x:.2f}" for x in os.getloadavg())
    try:
        affinity = sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        affinity = "?"
    meta = {
        "command": "python benchmarks/first_detection.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": f"dpaudit {dpaudit.__version__}, numpy {np.__version__}, Python {platform.python_version()}, "
                   f"{platform.machine()}, {os.cpu_count()} cores, pinned to CPUs {affinity}",
        "load0": load0, "load1": load1,
    }
    text = (render_testers if args.compare_testers else render)(cache, rows, args, meta)
    if args.out:
        args.out.write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

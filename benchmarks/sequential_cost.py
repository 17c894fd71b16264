"""Benchmark: where time goes -- the sequential tester's CPU per output against the mechanism's per call.

For every zoo entry with witness pairs, at eps = 1 on its first witness pair:

* **mechanism, per call**: CPU seconds of ``mechanism.sample(dataset, 1, rng)``, one output per
  call (how a per-call mechanism -- a library function, a training run -- is called), the median of
  ``--calls`` calls on each dataset;
* **tester, per output**: the CPU seconds :meth:`SequentialTester.run` spends betting and refitting
  (``SequentialResult.test_seconds``) over the outputs it drew (two per pair), on ``--budget`` pairs
  per dataset drawn up front (so no sampling is timed), with the batch growth of vectorised
  mechanisms (x1.3 since session 3, x1.5 before) and of per-call ones (x1.25), futility on, at beta = 0.001.

The ratio tester / mechanism must stay below 1 for mechanisms that take milliseconds per call (the
issue's requirement): at 1 ms per call a ratio of 0.1 means the audit spends 9 % of its time in
the tester. ``--per-call-ms X`` adds a synthetic per-call mechanism (a Laplace sum that sleeps X ms
per call) audited end to end with ``dpaudit.audit`` (one trial, ``processes=1``): its sampling and
test seconds as the trial records them.

Run: ``nice python benchmarks/sequential_cost.py --budget 20000`` (CPU seconds are robust to the
load; the load averages are printed).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import dpaudit
from dpaudit.mechanisms import zoo
from dpaudit.mechanisms.base import draw
from dpaudit.testers.sequential import SequentialTester

RESULTS = Path(__file__).parent / "results"


def per_call_cpu(mech, dataset, calls: int, rng) -> float:
    out = []
    for _ in range(calls):
        t0 = time.process_time()
        mech.sample(dataset, 1, rng)
        out.append(time.process_time() - t0)
    return statistics.median(out)


def tester_cpu(tester, p, q, claim, per_call: bool):
    r = tester.run(lambda s, m: (p[s:s + m], q[s:s + m]), claim, beta=0.001, budget=len(p), per_call=per_call, rng=0)
    return r.test_seconds / (2 * max(r.samples_drawn, 1)), r.samples_drawn, r.stop_reason


class SleepyLaplace(dpaudit.Mechanism):
    """A per-call mechanism: the sum of the records plus Laplace(1), after sleeping ``ms`` milliseconds."""

    vectorised = False

    def __init__(self, ms: float):
        self.ms, self.name = ms, f"sleepy-laplace-{ms:g}ms"

    def sample(self, dataset, num_samples, rng):
        out = np.empty(num_samples)
        for i in range(num_samples):
            time.sleep(self.ms / 1000.0)
            out[i] = float(np.sum(dataset)) + rng.laplace(0.0, 1.0)
        return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=int, default=20_000)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--mechanisms", type=lambda s: s.split(","), default=None)
    ap.add_argument("--per-call-ms", type=float, default=1.0)
    ap.add_argument("--out", type=Path, default=RESULTS / "sequential_cost.md")
    args = ap.parse_args(argv)
    load0 = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rows = []
    for e in zoo.entries():
        if not e.witness_pairs or (args.mechanisms and e.name not in args.mechanisms):
            continue
        mech, claim, pair = e.mechanism(1.0), e.claim(1.0), e.witnesses()[0]
        rng = np.random.default_rng(0)
        mc = (per_call_cpu(mech, pair.d0, args.calls // 2, rng) + per_call_cpu(mech, pair.d1, args.calls // 2, rng)) / 2
        p = draw(mech, pair.d0, args.budget, rng)
        q = draw(mech, pair.d1, args.budget, rng, output_dim=p.shape[1])
        t_vec, n_vec, why_vec = tester_cpu(SequentialTester(), p, q, claim, per_call=False)
        t_pc, n_pc, why_pc = tester_cpu(SequentialTester(), p, q, claim, per_call=True)
        kind = "1-D" if p.shape[1] == 1 else f"{p.shape[1]}-D"
        rows.append((e.name, kind, mc, t_vec, n_vec, why_vec, t_pc, n_pc, why_pc))
        print(f"{e.name}: mechanism {mc * 1e6:.1f} us/call, tester {t_vec * 1e6:.1f} us/output (x{SequentialTester().growth:g}, {n_vec} pairs, "
              f"{why_vec}), {t_pc * 1e6:.1f} us/output (x1.25, {n_pc}, {why_pc})", flush=True)
    sleepy = None
    if args.per_call_ms > 0:
        from dpaudit import GridFinder
        from dpaudit.datasets import NeighbouringPair
        from dpaudit.privacy.claims import PureDP

        m = SleepyLaplace(args.per_call_ms)
        pair = NeighbouringPair(np.array([[0.0]]), np.array([[0.0], [1.0]]), relation="add-remove", description="0 vs 0,1")
        c0 = time.process_time()
        res = dpaudit.audit(m, PureDP(1.0), GridFinder([pair]), num_samples=4000, trials=1, beta=0.01, seed=0,
                            processes=1)
        t = res.trials[0]
        sleepy = (m.name, t.num_samples, t.stopped_by, t.sample_seconds, t.test_seconds, time.process_time() - c0)
        print(f"{m.name}: {t.num_samples} pairs ({t.stopped_by}), sampling {t.sample_seconds:.2f} s, "
              f"test {t.test_seconds:.2f} s", flush=True)
    load1 = " ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = ["# Where time goes: the sequential tester's CPU per output vs the mechanism's per call", "",
             f"Command: `python benchmarks/sequential_cost.py {' '.join(argv or sys.argv[1:])}`", "",
             f"Machine: dpaudit {dpaudit.__version__}, numpy {np.__version__}, Python {platform.python_version()}, "
             f"{os.cpu_count()} CPU cores shared with other jobs; load averages {load0} -> {load1}. CPU seconds "
             "(`time.process_time`).", "",
             f"Per entry at eps = 1, first witness pair, {args.budget:,} pairs drawn up front; the tester's CPU "
             "(betting and refitting) per output drawn (2 per pair), futility on, beta = 0.001; the mechanism's "
             f"CPU per call with one output per call (median of {args.calls} calls).", "",
             f"| entry | output | mechanism (us/call) | tester x{SequentialTester().growth:g} (us/output) | pairs, stop | tester x1.25 (us/output) | pairs, stop | tester/mechanism at 1 ms/call (x1.25) |",
             "|---|---|---:|---:|---|---:|---|---:|"]
    for name, kind, mc, tv, nv, wv, tp, npc, wp in rows:
        lines.append(f"| {name} | {kind} | {mc * 1e6:.1f} | {tv * 1e6:.1f} | {nv:,} {wv} | {tp * 1e6:.1f} | {npc:,} {wp} | "
                     f"{tp / 1e-3:.3f} |")
    if rows:
        worst = max(rows, key=lambda r: r[6])
        lines += ["", f"Largest tester cost per output (x1.25 batches): {worst[6] * 1e6:.0f} us ({worst[0]}), "
                  f"{worst[6] / 1e-3:.2f} of a 1 ms call; median over entries "
                  f"{statistics.median(r[6] for r in rows) * 1e6:.1f} us."]
    if sleepy:
        name, n, why, ss, ts, cpu = sleepy
        lines += ["", f"End to end, a per-call mechanism that sleeps {args.per_call_ms:g} ms per call "
                  f"(`SleepyLaplace`, pure 1-DP, 0 vs 0,1: a correct mechanism, so the trial runs to futility or the "
                  f"budget of 4,000 pairs): {n:,} pairs ({why}); sampling {ss:.2f} s wall, the tester {ts:.2f} s wall "
                  f"({ts / max(ss + ts, 1e-12):.1%} of the trial), {ts / (2 * n) * 1e6:.0f} us per output."]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

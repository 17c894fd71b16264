"""Benchmark: what running in-process library rows in a worker process costs (issue 43).

For the chosen rows, runs each one in this process (``dpaudit.library.runner.audit_entry``, as
``dpaudit library audit --in-process``) and then all of them in one
:class:`dpaudit.library.contain.RowWorker` (as ``dpaudit library audit`` does by default), and prints
per row: the wall time of both, the difference, whether the two records are the same but for their
times (same seeds: a seeded library gives the same record; an unseeded one, PyDP or OpenDP, the same
verdict only), and the worker's start time (a fresh interpreter importing dpaudit, once per run).

The in-process pass runs first, so the library's import is paid by the first row of each pass.

Run: ``nice python benchmarks/library_contain.py diffprivlib laplace gaussian ... --stages audit``
(``--json FILE`` keeps the rows).

``--hang SECONDS`` instead: a row over PyDP's ``GaussianMechanism`` at sensitivity 8.9e307 (its
C++ ``CalculateGaussianStddev`` never returns, and no SIGALRM interrupts it) under a SECONDS stage
limit, then the library's rows as above: the first is timed out, the others run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time


try:
    from dpaudit.mechanisms.base import Mechanism

    class PyDPHuge(Mechanism):
        """PyDP's GaussianMechanism at sensitivity 8.9e307 (PyDP 1.1.5: never returns)."""
        name = "pydp-gaussian-huge-sensitivity"

        def sample(self, dataset, num_samples, rng):
            import numpy as np
            from pydp.algorithms.numerical_mechanisms import GaussianMechanism

            mech = GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=8.9e307)
            return np.array([mech.add_noise(float(len(dataset))) for _ in range(num_samples)])

    PYDP_HUGE = PyDPHuge()
except ImportError:  # pragma: no cover
    PYDP_HUGE = None


def _hang(seconds: float, entries, opts) -> None:
    from pathlib import Path

    from dpaudit.library.contain import RowWorker
    from dpaudit.library.entry import Budget, Entry, Guarantee

    hang = Entry("PyDP", "GaussianMechanism", f"{Path(__file__).resolve()}:PYDP_HUGE", "sensitivity 8.9e307",
                 Guarantee(1.0, 1e-5), budget=Budget(samples=100, trials=1), row_key="pydp.huge_sensitivity")
    t0 = time.perf_counter()
    with RowWorker() as worker:
        for e in [hang, *entries]:
            rec = worker.audit(e, time_limit=seconds if e is hang else None, **opts)
            print(f"{e.key}: {(rec.get('first') or {}).get('message') or rec['verdict']} "
                  f"(at {time.perf_counter() - t0:.1f} s; worker starts {worker.starts})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("library")
    ap.add_argument("rows", nargs="*")
    ap.add_argument("--stages", default="audit")
    ap.add_argument("--samples", type=int, default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--hang", type=float, default=None, metavar="SECONDS")
    args = ap.parse_args()

    from dpaudit.library.contain import RowWorker, without_times
    from dpaudit.library.registry import select
    from dpaudit.library.runner import audit_entry

    stages = tuple(s for s in args.stages.split(",") if s)
    entries = [e for e in select(args.library, args.rows) if not e.not_auditable and e.env is None]
    opts = dict(stages=stages, samples=args.samples)
    if args.hang is not None:
        _hang(args.hang, entries, opts)
        return
    here, there = {}, {}
    cpu0 = time.process_time()
    for e in entries:
        t0 = time.perf_counter()
        here[e.key] = (audit_entry(e, **opts), time.perf_counter() - t0)
    cpu_here = time.process_time() - cpu0
    t_run = time.perf_counter()
    with RowWorker() as worker:
        for e in entries:
            t0 = time.perf_counter()
            there[e.key] = (worker.audit(e, **opts), time.perf_counter() - t0)
    whole = time.perf_counter() - t_run
    cpu_there = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at the end; "
          f"worker starts {worker.starts}, {worker.start_seconds_total:.2f} s in all")
    print(f"{'row':45s} {'verdict (in / worker)':40s} {'in s':>7s} {'worker s':>8s} {'diff s':>7s} same record")
    rows = []
    for e in entries:
        (a, ta), (b, tb) = here[e.key], there[e.key]
        same = without_times(a) == without_times(b)
        rows.append({"key": e.key, "verdict_in_process": a["verdict"], "verdict_worker": b["verdict"],
                     "eps_in_process": (a.get("first") or {}).get("epsilon_lower_bound"),
                     "eps_worker": (b.get("first") or {}).get("epsilon_lower_bound"),
                     "seconds_in_process": round(ta, 2), "seconds_worker": round(tb, 2), "same_record": same})
        print(f"{e.key:45s} {a['verdict'] + ' / ' + b['verdict']:40s} {ta:7.2f} {tb:7.2f} {tb - ta:+7.2f} {same}")
    tot_a, tot_b = sum(r["seconds_in_process"] for r in rows), sum(r["seconds_worker"] for r in rows)
    print(f"total: in-process {tot_a:.1f} s (CPU {cpu_here:.1f} s), worker {tot_b:.1f} s (whole run with the "
          f"start {whole:.1f} s; the worker's CPU {cpu_there.ru_utime + cpu_there.ru_stime:.1f} s); "
          f"verdicts equal {sum(r['verdict_in_process'] == r['verdict_worker'] for r in rows)}/{len(rows)}, "
          f"records equal {sum(r['same_record'] for r in rows)}/{len(rows)}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"library": args.library, "stages": stages, "rows": rows, "worker_starts": worker.starts,
                       "worker_start_seconds": worker.start_seconds_total, "whole_worker_run_seconds": whole,
                       "cpu_in_process": cpu_here, "cpu_worker": cpu_there.ru_utime + cpu_there.ru_stime}, fh, indent=1)


if __name__ == "__main__":
    main()

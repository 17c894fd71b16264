"""Dask throughput benchmark: trials per minute of an audit of a per-call (non-vectorised) mechanism.

The same audit (same seed, finder and trials) runs

1. in this process (``dpaudit test``'s default, no Dask);
2. on a ``LocalCluster`` of 1 worker process (1 thread);
3. on a ``LocalCluster`` of 2 worker processes (1 thread each);
4. against a separately started ``dask scheduler`` plus ``dask worker --nworkers 2 --nthreads 1``
   on loopback (the ``--scheduler tcp://...`` path of ``dpaudit test``).

The mechanism is a plain Python function called once per output (``Mechanism.from_callable``):
a noisy clipped mean that also does a fixed amount of pure-Python work per call, so one call costs
about as much as a call into a DP library's Python API (NOTES-testers: OpenDP's Laplace
measurement ~130 us, diffprivlib's ``tools.mean`` ~150 us per call). Its sampling is split into
chunks of ``--chunk`` calls with independent spawned seeds, run as separate Dask tasks; the
hockey-stick test of each trial runs where its chunks are gathered. Cluster start-up is not timed
(the clusters are started and warmed up with a 2-trial audit first); the audit itself is, from the
first ask to the last tell. The configurations are timed in interleaved rounds (the machine may be
shared: drift in its load then hits every configuration alike) and the median is reported. Every configuration must give the same trial outcomes (checked), since trial ``t``'s
randomness is spawn key ``t`` and the chunks do not depend on the worker count.

Writes ``benchmarks/results/dask.md``. A short run (the default)::

    python benchmarks/dask_throughput.py --trials 6 --samples 10000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"
REPORT = RESULTS / "dask.md"
BIN = Path(sys.executable).parent


def clipped_mean_call(dataset, rng):
    """A per-call mechanism: clipped mean + Laplace(2/(n eps)), eps = 1, plus fixed Python work."""
    acc = 0.0
    for i in range(1200):  # stands in for a DP library's per-call overhead (~100 us)
        acc += (i % 7) * 1e-12
    x = [min(max(float(v), 0.0), 1.0) for v in np.asarray(dataset).ravel()]
    n = max(len(x), 1)
    return sum(x) / n + acc + rng.laplace(0.0, 2.0 / n)


def per_call_cost(mechanism, n: int = 2000) -> float:
    rng = np.random.default_rng(0)
    d = np.array([[0.5], [1.0]])
    t0 = time.perf_counter()
    for _ in range(n):
        mechanism.func(d, rng=rng)
    return (time.perf_counter() - t0) / n


def run_audit(mechanism, args, executor=None, *, trials=None):
    from dpaudit import PureDP, audit
    from dpaudit.datasets import AddRemove
    from dpaudit.search import RandomFinder

    t0 = time.perf_counter()
    result = audit(
        mechanism, PureDP(1.0), RandomFinder(AddRemove(max_size=10), rng=1), num_samples=args.samples,
        trials=trials or args.trials, beta=0.05, seed=7, exhaustive=True, executor=executor, chunk_size=args.chunk,
    )
    return result, time.perf_counter() - t0


def busy(_=None) -> float:
    """A fixed amount of pure-Python work; returns its wall time."""
    t0 = time.perf_counter()
    x = 0
    for i in range(5_000_000):
        x += i
    return time.perf_counter() - t0


def parallel_capacity(client) -> float:
    """How many cores' worth of CPU two workers get: 2 x (time of one busy task alone) / (wall time
    of two at once on the two workers). 2.0 on an idle 2-core machine, 1.0 if only one core is free."""
    client.submit(busy, pure=False).result()
    one = min(client.submit(busy, pure=False).result() for _ in range(2))
    t0 = time.perf_counter()
    client.gather(client.map(busy, range(2), pure=False))
    return 2 * one / (time.perf_counter() - t0)


def warm(client, n: int) -> None:
    client.wait_for_workers(n, timeout=120)
    # import dpaudit, torch and the tester on every worker before timing
    client.run(lambda: __import__("dpaudit.testers.hockey_stick") and None)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=6)
    ap.add_argument("--samples", type=int, default=10_000, help="outputs per dataset per trial")
    ap.add_argument("--chunk", type=int, default=2_500, help="calls per sampling chunk (one Dask task)")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved timing rounds (the median is reported)")
    ap.add_argument("--note", default="")
    args = ap.parse_args(argv)

    from distributed import Client, LocalCluster

    from dpaudit import Mechanism
    from dpaudit.audit.executors import DaskExecutor

    mechanism = Mechanism.from_callable(clipped_mean_call, name="clipped-mean (per call)")
    cost = per_call_cost(mechanism)
    print(f"per-call cost {cost * 1e6:.0f} us", flush=True)

    procs, clients, clusters = [], [], []
    tmp = tempfile.TemporaryDirectory()
    try:
        configs = [("in-process (no Dask)", 1, lambda: None)]
        for n in (1, 2):
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None)
            client = Client(cluster)
            clusters.append(cluster)
            clients.append(client)
            warm(client, n)
            if n == 2:
                capacity = [parallel_capacity(client)]
            configs.append((f"LocalCluster, {n} worker process{'es' if n > 1 else ''}", n,
                            lambda client=client: DaskExecutor(client=client)))
        sched_file = os.path.join(tmp.name, "scheduler.json")
        procs.append(subprocess.Popen(
            [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", sched_file],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        ))
        deadline = time.monotonic() + 60
        while not os.path.exists(sched_file) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(0.5)
        address = json.loads(Path(sched_file).read_text())["address"]
        procs.append(subprocess.Popen(
            [str(BIN / "dask"), "worker", address, "--nworkers", "2", "--nthreads", "1", "--no-dashboard"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        ))
        with Client(address) as client:
            warm(client, 2)
        # the audit connects by address, as `dpaudit test --scheduler tcp://...` does
        configs.append((f"`dask scheduler` + `dask worker --nworkers 2 --nthreads 1` on loopback ({address})", 2,
                        lambda: DaskExecutor(address)))

        for _, _, make in configs:  # warm-up: imports and PyTorch's first-call set-up on every worker
            run_audit(mechanism, args, make(), trials=2)
        walls = {name: [] for name, _, _ in configs}
        results = {}
        for r in range(args.repeats):  # rounds over the configurations, so load drift hits all alike
            for name, _, make in configs:
                result, wall = run_audit(mechanism, args, make())
                walls[name].append(wall)
                results[name] = result
                print(f"round {r}: {name}: {wall:.1f}s", flush=True)
            capacity.append(parallel_capacity(clients[1]))
    finally:
        for c in clients:
            c.close()
        for c in clusters:
            c.close()
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        tmp.cleanup()

    reference = [t.outcome for t in results[configs[0][0]].trials]
    same = all([t.outcome for t in res.trials] == reference for res in results.values())
    rows = [(name, n, float(np.median(walls[name])), walls[name]) for name, n, _ in configs]
    base = rows[0][2]
    lines = [
        "# Dask throughput: per-call mechanism",
        "",
        f"Regenerate: `python benchmarks/dask_throughput.py {shlex.join(argv if argv is not None else sys.argv[1:])}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}. "
        + (args.note or ""),
        "",
        f"Audit: {args.trials} trials (exhaustive), {args.samples:,} outputs per dataset per trial, so "
        f"{2 * args.samples:,} calls of a per-call mechanism (measured {cost * 1e6:.0f} us per call) "
        f"plus one hockey-stick test (default classifier) per trial; sampling in chunks of {args.chunk:,} "
        "calls, each a Dask task with its own spawned seed. Cluster start-up and a 2-trial warm-up audit "
        f"per configuration are excluded; the configurations are timed in {args.repeats} interleaved "
        "rounds and the table gives the median wall time (all rounds in the last column).",
        "",
        "| configuration | workers | median wall (s) | trials / minute | speed-up vs in-process | wall per round (s) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, n, wall, all_walls in rows:
        lines.append(
            f"| {name} | {n} | {wall:.1f} | {60 * args.trials / wall:.1f} | {base / wall:.2f}x | "
            + ", ".join(f"{w:.1f}" for w in all_walls) + " |"
        )
    lines += [
        "",
        f"Identical trial outcomes in every configuration: **{'yes' if same else 'NO'}**.",
        "",
        "CPU actually available to two workers during the run (2 x the time of a pure-Python busy task "
        "alone / the wall time of two at once on the 2-worker LocalCluster; 2.0 on an idle 2-core "
        f"machine), before and after each round: {', '.join(f'{c:.2f}' for c in capacity)} cores. "
        "The speed-up of 2 workers over 1 cannot exceed it.",
        "",
    ]
    RESULTS.mkdir(exist_ok=True)
    REPORT.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())

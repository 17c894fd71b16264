"""What running a library in its own environment costs: the pipe's overhead per request and per output.

Three measurements, each the median of ``--repeats`` timings (``time.perf_counter``, wall clock) of
``mechanism.sample(dataset, n, rng)`` at several batch sizes ``n``:

* ``in-process``: dpaudit's own adapter, ``DiffprivlibMechanism(diffprivlib.tools.mean,
  epsilon=1, bounds=(0, 1))`` on 3 records (diffprivlib 0.6.6 in dpaudit's environment);
* ``env``: the same call in the ``diffprivlib`` environment through the worker
  (``get_env("diffprivlib").mechanism("diffprivlib_env:tool", name="mean", ...)``);
* ``pipe only``: a NumPy draw in a worker of the current interpreter (``protocol_check:gaussian_sum``),
  whose library work is negligible: the round trip (JSON header, dataset and outputs as raw
  bytes, the worker's dispatch) at each batch size.

Run: ``PYTHONPATH=src nice python benchmarks/library_envs_overhead.py`` (builds the diffprivlib env
on first use). Prints a table and writes ``benchmarks/results/library_envs_overhead.json``; the
audit runner's page shows it (``docs/library_envs.md``, "The pipe's overhead").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dpaudit.library.envs import LibraryEnv, get_env  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "library_envs_overhead.json"


def timed(mech, data, n, repeats, seed=0) -> float:
    """Median seconds of ``mech.sample(data, n, rng)`` over ``repeats`` runs (after one warm-up)."""
    mech.sample(data, n, np.random.default_rng(seed))
    times = []
    for r in range(repeats):
        t0 = time.perf_counter()
        mech.sample(data, n, np.random.default_rng(seed + r + 1))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sizes", default="1,10,100,1000,10000")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    from dpaudit.mechanisms.adapters.diffprivlib import DiffprivlibMechanism
    import diffprivlib.tools  # noqa: PLC0415

    data = np.array([[0.2], [0.5], [0.9]])
    inproc = DiffprivlibMechanism(diffprivlib.tools.mean, epsilon=1.0, bounds=(0.0, 1.0))
    env = get_env("diffprivlib").mechanism("diffprivlib_env:tool", name="mean", epsilon=1.0, bounds=[0.0, 1.0])
    current = LibraryEnv.current("overhead-current")
    pipe = current.mechanism("protocol_check:gaussian_sum", sigma=1.0)
    rows = []
    for n in sizes:
        reps = args.repeats if n <= 1000 else max(2, args.repeats // 2)
        a, b, c = timed(inproc, data, n, reps), timed(env, data, n, reps), timed(pipe, data, n, reps)
        rows.append({"n": n, "in_process_s": a, "env_s": b, "pipe_only_s": c,
                     "overhead_per_output_us": (b - a) / n * 1e6, "ratio": b / a})
        print(f"n={n:6d}  in-process {a * 1e3:9.2f} ms  env {b * 1e3:9.2f} ms  pipe-only {c * 1e3:7.3f} ms  "
              f"env/in-process {b / a:5.2f}  (env - in-process) per output {(b - a) / n * 1e6:8.1f} us", flush=True)
    current.close()
    record = {"rows": rows, "load": os.getloadavg(), "cores": os.cpu_count(),
              "versions": get_env("diffprivlib").versions(), "ran_at": time.strftime("%Y-%m-%d %H:%M")}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    print(f"load average {record['load'][0]:.1f}; wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

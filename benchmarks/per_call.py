"""Per-call sampling throughput: one process vs the spawn process pool of InProcessExecutor.

Draws one trial's samples (``sample_pair``, ``--samples`` outputs on each dataset of a witness
pair, default chunking) of a per-call mechanism serially and on a :class:`SamplingPool` of
``--processes`` processes (default: one per usable core), and prints calls per second for both.
The pool is started and warmed on one trial first (its start-up is printed separately); the
samples are checked to be identical. The mechanism is diffprivlib's mean
(``dpaudit.mechanisms.catalogue.diffprivlib_mean:dpl_mean``) when diffprivlib is installed, else a pure-Python
Laplace mean doing ~90 us of work per call.

    python benchmarks/per_call.py --samples 20000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpaudit import Mechanism
from dpaudit.audit.executors import DEFAULT_CHUNK_SIZE, SamplingPool, sample_pair, trial_streams, usable_cores
from dpaudit.datasets import Replace


def busy_laplace_mean(dataset, rng):
    """Clipped mean + Laplace(1/n), after ~90 us of pure-Python work (a DP library's call overhead)."""
    acc = 0.0
    for i in range(1100):
        acc += i * 1e-9
    x = np.clip(np.asarray(dataset, dtype=float).ravel(), 0.0, 1.0)
    return float(x.mean()) + rng.laplace(0.0, 1.0 / max(1, x.size)) + acc * 0.0


def _mechanism():
    try:
        import diffprivlib  # noqa: F401

        from dpaudit.mechanisms.catalogue.diffprivlib_mean import dpl_mean

        return dpl_mean, dpl_mean.neighbouring.pair(*dpl_mean.witness_pairs[0])
    except ImportError:
        mech = Mechanism.from_callable(busy_laplace_mean, name="busy-laplace-mean")
        return mech, Replace(domain=[(0.0, 1.0)], min_size=1, max_size=4).pair([[0.0]], [[1.0]])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=20_000, help="outputs per dataset per trial")
    ap.add_argument("--processes", type=int, default=None, help="pool size (default: usable cores)")
    args = ap.parse_args()
    mech, pair = _mechanism()
    n, calls = args.samples, 2 * args.samples
    print(f"mechanism {mech.name}; {n} outputs per dataset ({calls} calls a trial); usable cores {usable_cores()}")

    t = time.perf_counter()
    serial = sample_pair(mech, pair, n, trial_streams(1, 1)[0], DEFAULT_CHUNK_SIZE)
    t_serial = time.perf_counter() - t
    print(f"serial        : {t_serial:6.2f} s  {calls / t_serial:9.0f} calls/s")

    pool = SamplingPool(mech, args.processes, min_calls=0)
    try:
        t = time.perf_counter()
        sample_pair(mech, pair, n, trial_streams(1, 0)[0], DEFAULT_CHUNK_SIZE, pool=pool)  # start + warm
        print(f"pool start-up + 1 trial: {time.perf_counter() - t:6.2f} s")
        t = time.perf_counter()
        pooled = sample_pair(mech, pair, n, trial_streams(1, 1)[0], DEFAULT_CHUNK_SIZE, pool=pool)
        t_pool = time.perf_counter() - t
    finally:
        pool.close()
    same = all(np.array_equal(a, b) for a, b in zip(serial, pooled))
    print(f"pool ({pool.processes} proc): {t_pool:6.2f} s  {calls / t_pool:9.0f} calls/s  "
          f"speed-up {t_serial / t_pool:.2f}x; samples identical: {same}")


if __name__ == "__main__":
    main()

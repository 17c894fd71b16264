"""Benchmark: throughput of the Monte Carlo accountant's sampling loop, before and after.

Measures, in one run and on the same machine:

* the raw rate of NumPy's normal generator, ``np.random.default_rng().standard_normal(...)`` in
  float64 and float32, into a preallocated buffer of 2^20 (the ceiling for anything that needs one
  normal per sample and step);
* the MC engine's throughput in samples x steps per second for

  - ``is``        — ``sample_privacy_loss`` with estimator 'is' on DP-SGD (sigma = 1.1,
    q = 256/60000, k = 1000), remove direction (tilted subsampled-Gaussian mixture), at the
    tilt ``get_epsilon`` uses for delta = 1e-5 (11.25, a few draws rejected) and at 11;
  - ``is add``    — the same in the add direction (tilted by rejection sampling), tilt 4;
  - ``is-cmc``    — estimator 'is-cmc' on the same composition (remove direction, tilts 0 and 11.25);
  - ``laplace``   — estimator 'is' on 200 Laplace steps (b = 20), tilt 1;
  - ``online``    — ``get_epsilon_online`` on DP-SGD with k = 200 (pilots, both directions and
    the eps solves included: samples x steps x directions / wall time); with the new code also
    with ``report_steps`` = the last step only;
  - ``get_epsilon`` — ``MonteCarloAccountant(num_samples=20000, rng=0).get_epsilon(
    Composition.dpsgd(1.1, 256/60000, 1000), 1e-5)`` end to end (pilot and both directions
    included in the sample count).

The engine is timed twice: the working tree's ``src/`` and a baseline revision (default: the
commit before the fast generators, the SplitMix64 + ndtri engine), exported with ``git archive``
into a temporary directory. Each is run in its own subprocess (``--worker``); every case is
repeated ``--repeats`` times (old and new alternating) and the median is reported. Times are the
process's CPU time (``--wall`` for wall-clock time) with one BLAS thread, which is robust to other
jobs sharing the machine; read ratios from the same run only.

Run: ``python benchmarks/mc_throughput.py [--repeats 3] [--baseline REV] [--quick]``; writes
benchmarks/results/mc_throughput.md.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: the last commit with the SplitMix64 + ndtri generator
BASELINE_REV = "f742dde"


def _median_time(fn, repeats: int) -> float:
    """Median over ``repeats`` calls of the process's CPU time (or wall time with ``--wall``)."""
    clock = time.perf_counter if os.environ.get("MC_BENCH_WALL") else time.process_time
    ts = []
    for _ in range(repeats):
        t0 = clock()
        fn()
        ts.append(clock() - t0)
    ts.sort()
    return ts[len(ts) // 2]


def worker(repeats: int, quick: bool) -> dict:
    """Measure every case with the dpaudit importable from PYTHONPATH; returns {case: rate} and,
    under "normal:<case>", the NumPy normal rate measured just before the case (to normalise)."""
    import numpy as np

    class Rates(dict):
        def __setitem__(self, case, rate):
            super().__setitem__(case, rate)
            if not case.startswith(("numpy", "normal:")):
                # the machine's current speed, right after the case
                super().__setitem__("normal:" + case, normal_rate(np.float64, 3))

    from dpaudit.accounting import Composition, LaplaceStep, MonteCarloAccountant
    from dpaudit.accounting.monte_carlo import sample_privacy_loss

    m = 4000 if quick else 20_000
    k = 200 if quick else 1000
    k_on = 50 if quick else 200
    g = np.random.default_rng(0)
    bufs = {np.float64: np.zeros(1 << 20), np.float32: np.zeros(1 << 20, dtype=np.float32)}

    def normal_rate(dtype, reps):
        # into a preallocated, already touched buffer: generation only, no page faults
        b = bufs[dtype]
        return reps * b.size / _median_time(lambda: [g.standard_normal(out=b, dtype=dtype) for _ in range(reps)],
                                            repeats)

    out: dict = Rates()
    normal_rate(np.float64, 1)
    out["numpy normal f64"] = normal_rate(np.float64, 4)
    out["numpy normal f32"] = normal_rate(np.float32, 4)

    comp = Composition.dpsgd(1.1, 256 / 60000, k)
    # tilts: 11.25 is the saddle point get_epsilon places for delta = 1e-5 (non-integer: the
    # remove sampler rejects a few draws), 11 an integer tilt (no rejection), 4 a typical add tilt
    for name, lam, kw in (("is, tilt 11.25", [11.25], dict(estimator="is", direction="remove")),
                          ("is, tilt 11", [11.0], dict(estimator="is", direction="remove")),
                          ("is add, tilt 4", [4.0], dict(estimator="is", direction="add")),
                          ("is-cmc, tilts 0, 11.25", [0.0, 11.25], dict(estimator="is-cmc", direction="remove"))):
        sample_privacy_loss(comp, 256, tilts=lam, rng=0, **kw)
        out[name] = m * k / _median_time(lambda: sample_privacy_loss(comp, m, tilts=lam, rng=1, **kw), repeats)
    lap = Composition.from_steps([(LaplaceStep(20.0), k // 5)])
    sample_privacy_loss(lap, 256, estimator="is", tilts=[1.0], rng=0)
    out["laplace, tilt 1"] = m * (k // 5) / _median_time(
        lambda: sample_privacy_loss(lap, m, estimator="is", tilts=[1.0], rng=1), repeats)

    acc = MonteCarloAccountant(num_samples=m, rng=0)
    on_comp = Composition.dpsgd(1.1, 256 / 60000, k_on)
    out["online"] = 2 * m * k_on / _median_time(lambda: acc.get_epsilon_online(on_comp, 1e-5), repeats)
    if "report_steps" in inspect.signature(acc.get_epsilon_online).parameters:
        out["online, last step only"] = 2 * m * k_on / _median_time(
            lambda: acc.get_epsilon_online(on_comp, 1e-5, report_steps=[k_on]), repeats)
    m_pilot = max(256, int(m / 16))
    res = MonteCarloAccountant(num_samples=m, rng=0).get_epsilon(comp, 1e-5)
    dirs = sum(1 for v in res.per_direction.values() if not v.get("skipped"))  # pilots run per sampled direction
    out["get_epsilon"] = dirs * (m + m_pilot) * k / _median_time(
        lambda: MonteCarloAccountant(num_samples=m, rng=0).get_epsilon(comp, 1e-5), repeats)
    return out


def _run_worker(src: Path, repeats: int, quick: bool, wall: bool) -> dict:
    # one BLAS thread: CPU time then measures single-core work
    env = dict(os.environ, PYTHONPATH=str(src), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if wall:
        env["MC_BENCH_WALL"] = "1"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--repeats", str(repeats)]
    if quick:
        cmd.append("--quick")
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def _export(rev: str, dest: Path) -> Path:
    data = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev, "src"],
                          capture_output=True, check=True).stdout
    tar = dest / "src.tar"
    tar.write_bytes(data)
    with tarfile.open(tar) as tf:
        tf.extractall(dest)
    return dest / "src"


def main(argv=None) -> None:
    """Command-line entry point (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline", default=BASELINE_REV, help="git revision of the old engine ('' to skip)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--wall", action="store_true", help="time wall clock instead of the process's CPU time")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(HERE / "results" / "mc_throughput.md"))
    a = ap.parse_args(argv)
    if a.worker:
        print(json.dumps(worker(a.repeats, a.quick)))
        return
    t0 = time.perf_counter()
    runs: dict = {"new": [], "old": []}
    with tempfile.TemporaryDirectory() as tmp:
        old_src = _export(a.baseline, Path(tmp)) if a.baseline else None
        # old and new alternate, one repeat per worker, so that load drift hits both alike
        for _ in range(a.repeats):
            if old_src is not None:
                runs["old"].append(_run_worker(old_src, 1, a.quick, a.wall))
            runs["new"].append(_run_worker(ROOT / "src", 1, a.quick, a.wall))

    def med(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2]

    new = {c: med(r[c] for r in runs["new"]) for c in runs["new"][0]}
    old = {c: med(r[c] for r in runs["old"]) for c in runs["old"][0]} if runs["old"] else {}
    # ratios of runs adjacent in time, raw and relative to the NumPy normal rate measured with each
    pair = {c: med(b[c] / a[c] for a, b in zip(runs["old"], runs["new"])) for c in old if c in new}
    norm = {c: med((b[c] / b["normal:" + c]) / (a[c] / a["normal:" + c]) for a, b in zip(runs["old"], runs["new"]))
            for c in pair if "normal:" + c in old}
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    lines = [
        "# Monte Carlo accountant throughput",
        "",
        f"`python benchmarks/mc_throughput.py --repeats {a.repeats}{' --quick' if a.quick else ''}` — "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared with other jobs: "
        f"numbers are noisy; medians of {a.repeats} repeats), Python {platform.python_version()}, "
        f"new = working tree at {rev}, old = {a.baseline or 'not run'} (run alternately, one BLAS thread). "
        f"Rates from the {'wall-clock' if a.wall else 'process CPU'} time, in samples x steps per second "
        "(normal rows: normals per second); the online and get_epsilon rows include pilots, both directions "
        "and the eps solves.",
        "",
        "",
        "Columns: medians of the old and new rates; new / old: median of the ratios of adjacent old and new "
        "runs; normalised: the same with each rate divided by the NumPy float64 normal rate measured right "
        "after it in the same process (removes most of the drift of a shared machine); last: the new rate "
        "over the new runs' NumPy normal rate (1.0 = as fast as drawing one normal per sample and step).",
        "",
        "| case | old (M/s) | new (M/s) | new / old | new / old, normalised | new / numpy normal f64 |",
        "|---|---|---|---|---|---|",
    ]
    ref = new["numpy normal f64"]
    for case, v in new.items():
        if case.startswith("normal:"):
            continue
        o = old.get(case)
        cells = [case, f"{o / 1e6:.1f}" if o else "–", f"{v / 1e6:.1f}",
                 f"{pair[case]:.2f}" if case in pair else "–",
                 f"{norm[case]:.2f}" if case in norm else "–", f"{v / ref:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Total benchmark time {time.perf_counter() - t0:.0f} s.", ""]
    text = "\n".join(lines)
    print(text)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(text)


if __name__ == "__main__":
    main()

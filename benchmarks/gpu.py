"""Benchmark: CPU and GPU side by side, in one run, for the three places where dpaudit uses a device.

* **classifier tester** — ``ClassifierHockeyStick(device=...).estimate`` on ``n`` rows per dataset
  of 128-dimensional outputs (P: N(0, I) shifted by 0.05 on the first coordinate, Q: N(0, I);
  epsilon 0, beta 0.05, seed 0). On a GPU the samples move to the device once and the features
  and scores are computed there (``hockey_stick._train_scorer``); on the CPU the NumPy path runs,
  unchanged. The row "device path on the CPU" forces the device code onto the CPU (a check that
  it runs and gives the same bounds; not a speed claim).
* **Monte Carlo accountant** — ``MonteCarloAccountant(num_samples=m, rng=0).get_epsilon(
  Composition.dpsgd(1.1, 256/60000, k), 1e-5)`` (the default estimator, both directions and the
  pilots included), then the PLD cross-check that ``dpaudit account --method mc`` adds (timed
  apart). CPU rows: the NumPy backend (the default) and torch's generator on the CPU
  (``TorchOps('cpu', native_rng=True)``: the generator CUDA uses), which exercises the device
  code: before this change the cell sampler, after it the tiled sampler (accounting/mc_device.py).
* **train_many** — ``dpaudit.dpsgd.many.train_many(DPSGDConfig(3.0, 1.0, 10, learning_rate=5),
  runs=R, chunk=c, device=...)`` at a few chunks (and at its default chunk), seconds per run.

Every case runs in its own subprocess, with the working tree's ``src/`` ("new") and, for the
classifier and the accountant, also with a baseline revision exported by ``git archive``
("old"; default: the commit this work started from). Wall-clock seconds of the call itself
(imports and data generation excluded). GPU columns read "not measured (no CUDA)" when
``torch.cuda.is_available()`` is False. Monte Carlo draws differ between the NumPy generator,
torch's CPU generator and CUDA's, and between the cell and the tiled samplers: those results are
statistically equivalent (compare their intervals), not equal; the NumPy backend's results are
bit-identical old vs new.

Run: ``python benchmarks/gpu.py [--quick] [--baseline REV] [--out PATH]``; writes
benchmarks/results/gpu.md.
"""

from __future__ import annotations

import argparse
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
BASELINE_REV = "d27d6b5"
NOT_MEASURED = "not measured (no CUDA)"


NOTES = """## Where the device time went (from the code and CPU profiles; GPU not measured)

* **Monte Carlo draws.** The cell sampler draws cells of 65,536 samples x 16 steps on CUDA: for
  k = 10^4 and m = 10^6 about 10^4 cells per direction and tilt group, each a few dozen small
  kernels and several host synchronisations (`any()` in the loss and in the mixture sampler,
  `nonzero` and a pending count per rejection round, the `cmc` coordinate picked on the host and
  copied back). New (accounting/mc_device.py): tiles of 2^18 samples x 128 steps, the running sums
  on the device, rejection by prefix-sum compaction into buffers sized in advance, failed tiles
  redrawn; one host synchronisation per run (a test makes every host transfer raise inside a tile).
  float64 throughout (float32 losses would err by ~1e-3 over 10^4 steps: not safe for the bound).
* **Monte Carlo inversion.** The conditional estimator's eps(delta) (three roots by Brent's
  method; each step two `log_ndtr` per draw and column) ran on the host in NumPy whatever the
  device: in a CPU profile of `get_epsilon` at k = 20, m = 2^18 it was 15 of 17 s, and it grows
  with m. New: evaluated on the device for GPU runs; on the host the tails that the 'cmc' and
  'cond' columns share are evaluated once (bit-identical results).
* **Classifier tester.** The zoom features (5 x 128 columns) were built on the host in NumPy for
  training and for every scored row, then copied to the device chunk by chunk, with a copy back
  per 65,536-row chunk; in a CPU profile at 40,000 rows per dataset the features were 17 of 88 s.
  New: the samples move to the device once, features and scores are computed there, one copy back
  per scorer call. Still on the host: the robust standardiser's medians and the
  product-of-marginals competitor (NumPy). Training keeps its batch size (1024) so that the model,
  hence the verdict, does not depend on the device; a small MLP's step is launch-bound on a GPU.
* **On the CPU** the default paths are unchanged (NumPy draws, NumPy features): the same seed gives
  the same numbers, old and new; their times differ here only by the load of the shared machine.
  The tiled sampler forced onto the CPU (torch's generator) is about as fast as the cell sampler
  there (0.8-1.1x in these runs): it is built for the GPU, where it is not measured."""


# --------------------------------------------------------------------------------------------
# workers (run in a subprocess with the dpaudit under test first on sys.path)
# --------------------------------------------------------------------------------------------
def _classifier(device: str, n: int, force_device_path: bool) -> dict:
    import numpy as np

    from dpaudit.estimators.hockey_stick import ClassifierHockeyStick

    rng = np.random.default_rng(0)
    p = rng.normal(size=(n, 128))
    q = rng.normal(size=(n, 128))
    p[:, 0] += 0.05
    est = ClassifierHockeyStick(device=device)
    if force_device_path:
        est._on_device = lambda: True
    _sync(device)
    t0 = time.perf_counter()
    ev = est.estimate(p, q, epsilon=0.0, beta=0.05, rng=0)
    _sync(device)
    sec = time.perf_counter() - t0
    return {"seconds": sec, "train_seconds": ev.train_seconds,
            "result": f"lower {ev.forward.lower:.4f} / {ev.reverse.lower:.4f}"}


def _mc(backend: str, k: int, m: int) -> dict:
    from dpaudit.accounting import Composition, MonteCarloAccountant
    from dpaudit.accounting import monte_carlo as mc

    if backend == "torch-cpu-generator":
        from dpaudit.accounting._backend import TorchOps

        mc.get_ops = lambda b, d: TorchOps("cpu", native_rng=True)
        kw = {}
    elif backend == "cuda":
        kw = {"device": "cuda"}
    else:
        kw = {}
    comp = Composition.dpsgd(1.1, 256 / 60000, k)
    acc = MonteCarloAccountant(num_samples=m, rng=0, **kw)
    t0 = time.perf_counter()
    r = acc.get_epsilon(comp, 1e-5)
    sec = time.perf_counter() - t0
    t1 = time.perf_counter()
    cc = mc.cross_check(r, comp)
    pld_sec = time.perf_counter() - t1
    pld = cc.cross_check.get("value") if cc.cross_check else None
    draws = sum(1 for v in r.per_direction.values() if not v.get("skipped")) * m * k
    return {"seconds": sec, "pld_seconds": pld_sec, "draws_per_s": draws / sec,
            "result": (f"eps {r.epsilon:.4f} [{r.ci_low:.4f}, {r.ci_high:.4f}], upper {r.epsilon_upper:.4f}"
                       + (f" (PLD {pld:.4f})" if pld is not None else ""))}


def _train_many(device: str, runs: int, chunk) -> dict:
    from dpaudit.dpsgd import DPSGDConfig
    from dpaudit.dpsgd.many import train_many

    cfg = DPSGDConfig(noise_multiplier=3.0, sampling_rate=1.0, steps=10, learning_rate=5.0)
    kw = {} if chunk is None else {"chunk": chunk}
    train_many(cfg, runs=8, device=device, **kw)  # warm-up (first-call costs)
    _sync(device)
    t0 = time.perf_counter()
    train_many(cfg, runs=runs, device=device, **kw)
    _sync(device)
    sec = time.perf_counter() - t0
    return {"seconds": sec, "ms_per_run": 1000 * sec / runs, "result": ""}


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def worker(spec: dict) -> dict:
    import logging

    logging.getLogger("absl").setLevel(logging.ERROR)
    case = spec.pop("case")
    return {"classifier": _classifier, "mc": _mc, "train_many": _train_many}[case](**spec)


# --------------------------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------------------------
def _export(rev: str, where: str) -> str:
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True).stdout
    path = os.path.join(where, "old.tar")
    with open(path, "wb") as f:
        f.write(data)
    with tarfile.open(path) as t:
        t.extractall(where)
    return os.path.join(where, "src")


def _run(src: str, spec: dict) -> dict:
    env = dict(os.environ, PYTHONPATH=src, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    proc = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)], env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _cell(r: dict | None, key: str = "seconds", fmt: str = "{:.2f} s") -> str:
    if r is None:
        return NOT_MEASURED
    if "error" in r:
        return f"failed: {r['error'][:80]}"
    return fmt.format(r[key])


def _machine() -> tuple[str, bool]:
    import torch

    cuda = torch.cuda.is_available()
    gpu = torch.cuda.get_device_name(0) if cuda else "no CUDA device"
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return (f"{platform.machine()}, {os.cpu_count()} CPU cores ({cpu}), "
            f"Python {platform.python_version()}, torch {torch.__version__}, GPU: {gpu}"), cuda


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a CPU-only run of a few minutes)")
    ap.add_argument("--baseline", default=BASELINE_REV, help="revision of the 'old' code")
    ap.add_argument("--out", default=str(HERE / "results" / "gpu.md"))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    t_start = time.perf_counter()
    machine, cuda = _machine()
    new_src = str(ROOT / "src")
    n_cls = 5_000 if args.quick else 200_000
    k = 1000 if args.quick else 10_000
    m_gpu, m_cpu = (20_000, 20_000) if args.quick else (1_000_000, 20_000)
    runs = 200 if args.quick else 2000
    chunks = [None, 50, 200] if args.quick else [None, 100, 500, 2000]
    lines = [
        "# CPU and GPU side by side: classifier tester, Monte Carlo accountant, train_many", "",
        f"`python benchmarks/gpu.py{' --quick' if args.quick else ''}` — {machine}. "
        f"Old = `{args.baseline}` (git archive), new = working tree. Wall-clock seconds of the call "
        "alone, one process per case, one BLAS thread"
        + (" (2 cores shared with other jobs: times are inflated by the load; compare within a row)."
           if args.quick else "."), "",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        old_src = _export(args.baseline, tmp)

        # --- classifier ------------------------------------------------------------------------
        lines += [f"## Classifier tester ({n_cls:,} rows per dataset x 128 dimensions)", "",
                  "| code | CPU | GPU | CPU result | GPU result |", "|---|---|---|---|---|"]
        for name, src in (("old", old_src), ("new", new_src)):
            c = _run(src, {"case": "classifier", "device": "cpu", "n": n_cls, "force_device_path": False})
            g = _run(src, {"case": "classifier", "device": "cuda", "n": n_cls, "force_device_path": False}) if cuda else None
            lines.append(f"| {name} | {_cell(c)} | {_cell(g)} | {c.get('result', '')} | "
                         f"{g.get('result', '') if g else NOT_MEASURED} |")
        f = _run(new_src, {"case": "classifier", "device": "cpu", "n": n_cls, "force_device_path": True})
        lines += [f"| new, device path on the CPU | {_cell(f)} | – | {f.get('result', '')} | – |", ""]

        # --- Monte Carlo accountant ------------------------------------------------------------
        lines += [f"## Monte Carlo accountant (DP-SGD sigma 1.1, q 256/60000, k = {k:,} steps, delta 1e-5)", "",
                  f"CPU rows: m = {m_cpu:,} samples per direction"
                  + ("" if m_cpu == m_gpu else f" (10^6 would take too long on this CPU); GPU: m = {m_gpu:,}")
                  + ". The last rows (k = 20) are dominated by the conditional estimator's root finding "
                  "over the m draws, not by the draws. Draws/s = samples x steps x sampled directions / seconds "
                  "(pilots not counted). "
                  "'PLD check' is the cross-check `dpaudit account --method mc` adds.", "",
                  "| backend | code | seconds | draws/s | PLD check | result |", "|---|---|---|---|---|---|"]
        m_post = 100_000 if args.quick else 1_000_000
        for backend, m, kk in (("numpy", m_cpu, k), ("torch-cpu-generator", m_cpu, k), ("cuda", m_gpu, k),
                               ("numpy", m_post, 20), ("cuda", m_post, 20)):
            for name, src in (("old", old_src), ("new", new_src)):
                r = _run(src, {"case": "mc", "backend": backend, "k": kk, "m": m}) if (backend != "cuda" or cuda) else None
                label = {"numpy": "CPU, NumPy (default)", "torch-cpu-generator": "CPU, torch generator",
                         "cuda": "GPU (cuda)"}[backend]
                if kk != k:
                    label += f", k = {kk}, m = {m:,} (root-finding-bound)"
                lines.append(f"| {label} | {name}{' (cells)' if backend != 'numpy' and name == 'old' else ''}"
                             f"{' (tiles)' if backend != 'numpy' and name == 'new' else ''} | {_cell(r)} | "
                             f"{_cell(r, 'draws_per_s', '{:.3g}')} | {_cell(r, 'pld_seconds')} | "
                             f"{r.get('result', '') if r else NOT_MEASURED} |")
        lines.append("")

        # --- train_many -----------------------------------------------------------------------
        lines += [f"## train_many ({runs:,} runs, logistic regression on 200 digits, 10 steps)", "",
                  "| chunk | CPU ms/run | GPU ms/run |", "|---|---|---|"]
        for c in chunks:
            cpu = _run(new_src, {"case": "train_many", "device": "cpu", "runs": runs, "chunk": c})
            gpu = _run(new_src, {"case": "train_many", "device": "cuda", "runs": runs, "chunk": c}) if cuda else None
            lines.append(f"| {'default' if c is None else c} | {_cell(cpu, 'ms_per_run', '{:.2f}')} | "
                         f"{_cell(gpu, 'ms_per_run', '{:.2f}')} |")
    lines += ["", NOTES, "", f"Total benchmark time {time.perf_counter() - t_start:.0f} s."]
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

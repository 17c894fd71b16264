"""Benchmark: Monte Carlo accountant vs dp_accounting (PLD, RDP) and prv_accountant on DP-SGD.

Mechanism: DP-SGD, i.e. k steps of the Poisson-subsampled Gaussian with noise multiplier sigma and
sampling rate q (default sigma = 1.1, q = 256/60000, the worked example of NOTES-accounting.md).
For each delta in {1e-5, 1e-8, 1e-10} the script measures eps(delta):

* offline, k = 1000 and k = 10000: one query per (method, k, delta), wall time of that query;
* online, k = 1..1000: eps after every step; the error is measured at checkpoint steps and the
  time is the cumulative time until eps after step 1000 is known. Each method answers the three
  deltas from one pass (one set of samples / one chain of compositions), so the online time
  covers all three.

Methods:

* ``MC simple`` — dpaudit's Monte Carlo accountant, simple Monte Carlo (paper 004, Def. 11);
* ``MC IS`` — dpaudit's default estimator ``is-cmc`` (exponentially tilted PRV + conditional
  Monte Carlo, combined; see docs/accounting.md);
* ``MC IS (paper)`` — paper 004's Def. 16 estimator (offline only, one tilted coordinate);
* ``PLD`` — dp_accounting's PLD accountant, connect-the-dots, discretisation 1e-4 (1e-3 online);
* ``RDP`` — dp_accounting's RDP accountant (an upper bound, not an estimate);
* ``PRV`` — prv_accountant's estimate (eps_error 0.01 offline, 0.05 online).

Ground truth: dp_accounting's PLD with discretisation 2e-5 (connect-the-dots, pessimistic). It
converges from above as the discretisation shrinks; its distance to the 1e-4 PLD is printed so
that errors smaller than it are read as "at the resolution of the ground truth".

Monte Carlo results carry a 95% confidence interval; "in CI" says whether it contains the truth.

Run: ``python benchmarks/accounting.py`` (writes benchmarks/results/accounting.md and
accounting_online.png). ``--quick`` runs a small version for smoke tests.
"""

from __future__ import annotations

import argparse
import math
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np

import dpaudit
from dpaudit.accounting import Composition, MonteCarloAccountant, reference

DELTAS = (1e-5, 1e-8, 1e-10)
HERE = Path(__file__).resolve().parent


def _pld_truth(comp: Composition, deltas, vdi: float):
    t0 = time.perf_counter()
    pld = reference._pld(comp, vdi, True)
    return [float(pld.get_epsilon_for_delta(d)) for d in deltas], time.perf_counter() - t0


def _fmt_err(est, truth):
    if est is None or not math.isfinite(est):
        return "failed"
    return f"{abs(est - truth) / truth:.2e}"


def offline(sigma: float, q: float, k: int, samples: dict, paper: bool, log) -> list[dict]:
    comp = Composition.dpsgd(sigma, q, k)
    truth, t_truth = _pld_truth(comp, DELTAS, 2e-5)
    coarse, _ = _pld_truth(comp, DELTAS, 1e-4)
    log(f"k={k}: ground truth PLD(2e-5) {['%.6f' % x for x in truth]} in {t_truth:.1f}s; "
        f"|PLD(1e-4) - PLD(2e-5)| / eps = {[f'{abs(a - b) / b:.1e}' for a, b in zip(coarse, truth)]}")
    rows = []
    for j, delta in enumerate(DELTAS):
        row = {"k": k, "delta": delta, "truth": truth[j], "truth_res": abs(coarse[j] - truth[j]) / truth[j]}
        mc = [("MC simple", "simple"), ("MC IS", "auto")] + ([("MC IS (paper)", "is-paper")] if paper else [])
        for name, est in mc:
            acc = MonteCarloAccountant(samples[k], est, rng=1000 + j)
            t0 = time.perf_counter()
            try:
                r = acc.get_epsilon(comp, delta)
                row[name] = {"eps": r.epsilon, "lo": r.ci_low, "hi": r.ci_high, "sec": time.perf_counter() - t0}
            except (ValueError, FloatingPointError, RuntimeError) as exc:
                row[name] = {"eps": None, "sec": time.perf_counter() - t0, "err": str(exc)[:60]}
        for name, method, kw in (("PLD", "pld", {}), ("RDP", "rdp", {}), ("PRV", "prv", {"eps_error": 0.01})):
            try:
                r = reference.epsilon(method, comp, delta, **kw)
                row[name] = {"eps": r["epsilon"], "sec": r["seconds"]}
            except Exception as exc:  # noqa: BLE001 - report any failure of a reference tool
                row[name] = {"eps": None, "sec": float("nan"), "err": str(exc)[:60]}
        rows.append(row)
        log(f"  delta={delta:g}: " + ", ".join(
            f"{n} {_fmt_err(row[n]['eps'], truth[j])} ({row[n]['sec']:.1f}s)" for n in row if isinstance(row[n], dict)))
    return rows


def online(sigma: float, q: float, k: int, m: int, log) -> dict:
    comp = Composition.dpsgd(sigma, q, k)
    checkpoints = sorted({1, 2, 5, 10, 20, 50, 100, 200, 500, k} & set(range(1, k + 1)))
    t0 = time.perf_counter()
    truth = {c: _pld_truth(comp.prefix(c), DELTAS, 2e-5)[0] for c in checkpoints}
    log(f"online ground truth at {len(checkpoints)} checkpoints in {time.perf_counter() - t0:.1f}s")
    res = {}
    for name, est in (("MC IS", "auto"), ("MC simple", "simple")):
        acc = MonteCarloAccountant(m, est, rng=77)
        t1 = time.perf_counter()
        out = acc.get_epsilon_online(comp, list(DELTAS))
        res[name] = {"eps": [o.epsilon for o in out], "lo": [o.ci_low for o in out], "hi": [o.ci_high for o in out],
                     "sec": time.perf_counter() - t1}
        log(f"  online {name}: {res[name]['sec']:.1f}s")
    for name, method, kw in (("PLD", "pld", {"value_discretization_interval": 1e-3}), ("RDP", "rdp", {}),
                             ("PRV", "prv", {"eps_error": 0.05})):
        t1 = time.perf_counter()
        try:
            r = reference.online_epsilons(method, comp, list(DELTAS), **kw)
            res[name] = {"eps": r["epsilon"], "sec": r["cumulative_seconds"][-1]}
        except Exception as exc:  # noqa: BLE001
            res[name] = {"eps": None, "sec": time.perf_counter() - t1, "err": str(exc)[:60]}
        log(f"  online {name}: {res[name]['sec']:.1f}s")
    return {"k": k, "checkpoints": checkpoints, "truth": truth, "results": res, "m": m}


def _offline_table(rows, names) -> list[str]:
    out = ["| k | delta | true eps | " + " | ".join(names) + " |",
           "|---:|---:|---:|" + "---|" * len(names)]
    for r in rows:
        cells = []
        for n in names:
            v = r.get(n)
            if v is None:
                cells.append("–")
            elif v["eps"] is None or not math.isfinite(v["eps"]):
                cells.append(f"fails ({v['sec']:.1f} s)")
            else:
                rel = abs(v["eps"] - r["truth"]) / r["truth"]
                ci = ""
                if "lo" in v:
                    ci = " ✓" if v["lo"] <= r["truth"] <= v["hi"] else " ✗"
                cells.append(f"{rel:.1e}{ci} ({v['sec']:.1f} s)")
        out.append(f"| {r['k']} | {r['delta']:g} | {r['truth']:.5f} | " + " | ".join(cells) + " |")
    return out


def _online_table(on) -> list[str]:
    names = list(on["results"])
    out = ["| delta | " + " | ".join(f"{n}: max / mean rel. error" for n in names) + " |",
           "|---:|" + "---|" * len(names)]
    cps = on["checkpoints"]
    for j, delta in enumerate(DELTAS):
        cells = []
        for n in names:
            r = on["results"][n]
            if r["eps"] is None:
                cells.append("fails")
                continue
            errs = []
            for c in cps:
                e = r["eps"][j][c - 1]
                t = on["truth"][c][j]
                errs.append(abs(e - t) / t if math.isfinite(e) else math.inf)
            cells.append(f"{max(errs):.1e} / {np.mean(errs):.1e}")
        out.append(f"| {delta:g} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("| | " + " | ".join(names) + " |")
    out.append("|---|" + "---|" * len(names))
    out.append("| cumulative time to step " + str(on["k"]) + " (s) | " +
               " | ".join(f"{on['results'][n]['sec']:.1f}" for n in names) + " |")
    if "MC IS" in on["results"]:
        r = on["results"]["MC IS"]
        cover = []
        for j in range(len(DELTAS)):
            hits = sum(r["lo"][j][c - 1] <= on["truth"][c][j] <= r["hi"][j][c - 1] for c in cps)
            cover.append(f"{hits}/{len(cps)}")
        out.append("")
        out.append("MC IS: checkpoints whose 95% interval contains the truth, per delta: " + ", ".join(cover) + ".")
    return out


def _plot_online(on, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cps = on["checkpoints"]
    fig, axes = plt.subplots(1, len(DELTAS), figsize=(13, 3.8), sharey=True)
    for j, (ax, delta) in enumerate(zip(axes, DELTAS)):
        for n, r in on["results"].items():
            if r["eps"] is None:
                continue
            errs = [abs(r["eps"][j][c - 1] - on["truth"][c][j]) / on["truth"][c][j] for c in cps]
            ax.plot(cps, np.maximum(errs, 1e-7), "o-", label=n, ms=3)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"delta = {delta:g}", fontsize=9)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("relative error of eps")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sigma", type=float, default=1.1)
    ap.add_argument("--q", type=float, default=256 / 60000)
    ap.add_argument("--samples-1000", type=int, default=20_000, help="MC samples per direction, k = 1000")
    ap.add_argument("--samples-10000", type=int, default=4_000, help="MC samples per direction, k = 10000")
    ap.add_argument("--online-samples", type=int, default=4_000, help="MC samples per direction, online")
    ap.add_argument("--online-steps", type=int, default=1000)
    ap.add_argument("--no-paper", action="store_true", help="skip paper 004's IS estimator")
    ap.add_argument("--quick", action="store_true", help="tiny run (smoke test): k = 100 / 300, online 50")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "accounting.md")
    ap.add_argument("--note", default="")
    args = ap.parse_args(argv)
    ks = (1000, 10000)
    samples = {1000: args.samples_1000, 10000: args.samples_10000}
    if args.quick:
        ks, samples = (100, 300), {100: 2000, 300: 1000}
        args.online_steps, args.online_samples = 50, 1000
    lines: list[str] = []

    def log(msg):
        print(msg, flush=True)

    t_all = time.perf_counter()
    rows = []
    for k in ks:
        rows += offline(args.sigma, args.q, k, samples, not args.no_paper and k == ks[0], log)
    on = online(args.sigma, args.q, args.online_steps, args.online_samples, log)
    total = time.perf_counter() - t_all

    quote = lambda a: f'"{a}"' if (" " in a and '"' not in a and "$" not in a) else shlex.quote(a)  # noqa: E731
    cmd = " ".join(["python benchmarks/accounting.py"] + [quote(a) for a in sys.argv[1:]])
    names = ["MC simple", "MC IS", "MC IS (paper)", "PLD", "RDP", "PRV"]
    lines += [
        "# Privacy accounting benchmark: Monte Carlo accountant vs PLD, RDP and PRV",
        "",
        f"Regenerate: `{cmd}` (about {total / 60:.0f} minutes here; writes this file and `accounting_online.png`).",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}, "
        f"dpaudit {dpaudit.__version__}, CPU only (NumPy backend). {args.note}",
        "",
        f"DP-SGD: sigma = {args.sigma}, q = {args.q:.6g}; eps(delta) for delta in {list(DELTAS)}. "
        "Ground truth: dp_accounting PLD with discretisation 2e-5 (see the script's docstring). "
        f"MC sample counts per direction: k = {ks[0]}: {samples[ks[0]]:,}; k = {ks[1]}: {samples[ks[1]]:,}; "
        f"online: {args.online_samples:,}. MC IS = dpaudit's default estimator (is-cmc).",
        "",
        "## Offline: relative error of eps (wall time of the query)",
        "",
        "✓ / ✗: the Monte Carlo 95% confidence interval contains / misses the truth. RDP is an upper "
        "bound, so its error is its looseness. `truth res.` is |PLD(1e-4) - PLD(2e-5)| / eps: errors below "
        "it are at the resolution of the ground truth.",
        "",
    ]
    lines += _offline_table(rows, names)
    lines += ["", "| k | delta | truth res. |", "|---:|---:|---:|"]
    lines += [f"| {r['k']} | {r['delta']:g} | {r['truth_res']:.1e} |" for r in rows]
    lines += ["", f"## Online: eps after every step, k = 1..{on['k']}", "",
              f"Errors at steps {on['checkpoints']} against the ground truth; one pass answers all three "
              "deltas, so each time covers all of them. PLD online uses discretisation 1e-3 and PRV "
              "eps_error 0.05 to keep the per-step cost bearable.", ""]
    lines += _online_table(on)
    png = args.out.with_name("accounting_online.png")
    _plot_online(on, png)
    lines += ["", f"![online relative error]({png.name})", ""]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"written {args.out} and {png} in {total:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

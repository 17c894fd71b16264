"""Benchmark: auditing from two samples of scores (paper 001, Figs. 4–6), at 10^6 samples per side.

Reproduces, with dpaudit.scores and exact reference curves from dpaudit.privacy.profiles:

* Fig. 4 — TV between N(1, 1) and N(0, 1) estimated from histograms, against the number of bins
  (fixed range [-5, 6]): plug-in estimate, Canonne TV lower bound, split Clopper–Pearson lower
  bound, true TV; ``results/scores_fig4_tv_vs_bins.png``;
* Fig. 5 — the Poisson-subsampled Gaussian pair ``P = (1 - q) N(0, s^2) + q N(1, s^2)`` vs
  ``Q = N(0, s^2)`` (s = 0.8, q = 0.2; paper 001 §3/§5.2 — the paper's own values were lost in
  conversion): exact trade-off curve, histogram estimate, histogram upper confidence bound, and
  the Gaussian-DP threshold audit of Nasr et al. (2023); ``results/scores_fig5_subsampled_gaussian.png``;
* Fig. 6 — the same for the Laplace mechanism (Lap(0, 1) vs Lap(1, 1), eps0 = 1);
  ``results/scores_fig6_laplace.png``;

and prints, at n samples per side (default 10^6), the epsilon lower bound of every method
against the true epsilon for four pairs (the three above and a scale change N(0, 1) vs N(0, 4),
whose optimal tests are two-sided), plus: null false-positive and coverage rates over seeded
repetitions, one-shot random-canary audits as the dimension grows, and white-box PLD
composition. Everything is written to ``results/scores.md``.

Run: ``python benchmarks/scores.py`` (about 5–10 minutes on 2 CPU cores);
``--quick`` for a smaller smoke run (n = 10^5, fewer repetitions, no file output unless asked).
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np
from scipy import integrate, optimize, stats

import dpaudit
from dpaudit.privacy.profiles import (
    GaussianProfile,
    LaplaceProfile,
    SubsampledGaussianProfile,
    gaussian_epsilon,
    gdp_mu_for_profile,
    tradeoff_from_profile,
)
from dpaudit.scores import (
    ScoreAudit,
    estimate_pld,
    gdp_audit,
    histogram_audit,
    make_bins,
    one_shot_audit,
    plot_tradeoff,
    simulate_gaussian_canary_run,
    threshold_audit,
)

RESULTS = Path(__file__).resolve().parent / "results"
CONFIDENCE = 0.95
SUB_SIGMA, SUB_Q = 0.8, 0.2
SCALE_S = 2.0


# --------------------------------------------------------------------------- exact references
class ScalePair:
    """``P = N(0, 1)`` vs ``Q = N(0, s^2)``: ``p/q = s exp(-x^2 k / 2)``, ``k = 1 - 1/s^2``.

    ``H_a(P||Q)``: the set ``{p > a q}`` is ``|x| < c``, ``c^2 = 2 ln(s/a)/k`` (empty if
    ``a >= s``): ``H = (2 Phi(c) - 1) - a (2 Phi(c/s) - 1)``.
    ``H_a(Q||P)``: the set ``{q > a p}`` is ``|x| > c'``, ``c'^2 = 2 ln(s a)/k`` (all of R if
    ``s a <= 1``): ``H = 2 Phibar(c'/s) - a 2 Phibar(c')``.
    """

    def __init__(self, s):
        self.s = s
        self.k = 1.0 - 1.0 / s**2

    def delta(self, eps):
        eps = np.asarray(eps, dtype=float)
        a = np.exp(eps)
        s, k = self.s, self.k
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.sqrt(np.maximum(2.0 * np.log(s / a) / k, 0.0))
            fwd = np.where(a < s, (2 * stats.norm.cdf(c) - 1) - a * (2 * stats.norm.cdf(c / s) - 1), 0.0)
            cp = np.sqrt(np.maximum(2.0 * np.log(s * a) / k, 0.0))
            rev = np.where(s * a <= 1, 1.0 - a, 2 * stats.norm.sf(cp / s) - a * 2 * stats.norm.sf(cp))
        return np.clip(np.maximum(fwd, rev), 0.0, 1.0)

    def epsilon(self, delta):
        if self.delta(0.0) <= delta:
            return 0.0
        return optimize.brentq(lambda e: float(self.delta(e)) - delta, 0.0, 500.0, xtol=1e-12)

    def tradeoff(self, alpha):
        grid = np.linspace(0.0, self.epsilon(1e-12), 3000)
        return tradeoff_from_profile(alpha, grid, self.delta(grid))

    def gdp_mu(self):
        grid = np.linspace(0.0, self.epsilon(1e-10), 400)
        return gdp_mu_for_profile(grid, self.delta(grid))

    def check(self):
        """Closed form against numerical integration (both directions)."""
        p, q = stats.norm(0, 1).pdf, stats.norm(0, self.s).pdf
        for eps in (0.0, 0.3, 1.0):
            a = math.exp(eps)
            f = integrate.quad(lambda x: max(p(x) - a * q(x), 0), -40, 40, limit=400, points=[-3, 0, 3])[0]
            r = integrate.quad(lambda x: max(q(x) - a * p(x), 0), -40, 40, limit=400, points=[-3, 0, 3])[0]
            assert abs(max(f, r) - float(self.delta(eps))) < 1e-7, (eps, f, r, self.delta(eps))


def scenarios():
    gauss = GaussianProfile(1.0)
    sub = SubsampledGaussianProfile(SUB_SIGMA, SUB_Q)
    lap = LaplaceProfile(1.0)
    scale = ScalePair(SCALE_S)
    scale.check()
    return {
        "Gaussian N(1,1) vs N(0,1)": dict(
            sample=lambda rng, n: (rng.normal(1, 1, n), rng.normal(0, 1, n)), ref=gauss, mu=1.0),
        f"subsampled Gaussian (s={SUB_SIGMA:g}, q={SUB_Q:g})": dict(
            sample=lambda rng, n: (np.where(rng.random(n) < SUB_Q, rng.normal(1, SUB_SIGMA, n), rng.normal(0, SUB_SIGMA, n)),
                                   rng.normal(0, SUB_SIGMA, n)),
            ref=sub, mu=sub.gdp_mu()),
        "Laplace Lap(0,1) vs Lap(1,1)": dict(
            sample=lambda rng, n: (rng.laplace(0, 1, n), rng.laplace(1, 1, n)), ref=lap,
            mu=gdp_mu_for_profile(np.linspace(0, 1, 400), lap.delta(np.linspace(0, 1, 400)))),
        f"scale N(0,1) vs N(0,{SCALE_S**2:g})": dict(
            sample=lambda rng, n: (rng.normal(0, 1, n), rng.normal(0, SCALE_S, n)), ref=scale, mu=scale.gdp_mu()),
    }


def plugin_curve(x, y, bins):
    """Trade-off curve of the binned empirical pair (the histogram *estimate*, no confidence)."""
    b = make_bins(x, y, bins)
    p, q = b.counts(x) / x.size, b.counts(y) / y.size
    with np.errstate(divide="ignore", invalid="ignore"):
        order = np.argsort(-(np.where(q > 0, p / np.where(q > 0, q, 1), np.inf)), kind="stable")
    ps = np.concatenate([[0.0], np.cumsum(p[order])])
    qs = np.concatenate([[0.0], np.cumsum(q[order])])
    return ScoreAudit("plug-in", 0.5, x.size, y.size, ps, qs, ("plug-in",) * ps.size)


# --------------------------------------------------------------------------- parts
def part_epsilons(n, seed, deltas=(1e-5, 1e-3)):
    rows = []
    cache = {}
    for i, (name, sc) in enumerate(scenarios().items()):
        rng = np.random.default_rng([seed, i])
        x, y = sc["sample"](rng, n)
        t0 = time.perf_counter()
        res = {
            "histogram (auto)": histogram_audit(x, y, confidence=CONFIDENCE, rng=[seed, i, 1]),
            "histogram (canonne)": histogram_audit(x, y, method="canonne", confidence=CONFIDENCE, rng=[seed, i, 2]),
            "histogram (split)": histogram_audit(x, y, method="split", confidence=CONFIDENCE, rng=[seed, i, 3]),
            "threshold MIA (CP)": threshold_audit(x, y, confidence=CONFIDENCE, rng=[seed, i, 4]),
        }
        gdp = gdp_audit(x, y, confidence=CONFIDENCE, rng=[seed, i, 5])
        seconds = time.perf_counter() - t0
        cache[name] = (x, y, res, gdp)
        ref = sc["ref"]
        row = {"name": name, "seconds": seconds, "tv_true": float(ref.delta(0.0)), "mu_true": sc["mu"],
               "gdp_mu": gdp.mu_lower_bound, "gdp_threshold": gdp.threshold}
        for d in deltas:
            row[("true", d)] = ref.epsilon(d)
            for m, r in res.items():
                row[(m, d)] = r.epsilon_lower_bound(d)
            row[("source", d)] = res["histogram (auto)"].epsilon_source(d)
            row[("GDP audit (eps of mu)", d)] = gdp.epsilon(d)
        for m, r in res.items():
            row[(m, "tv")] = r.tv_lower_bound
            row[(m, "mu")] = r.mu_lower_bound
        rows.append(row)
    return rows, cache


def part_fig4(n_values, seed, path):
    edges_range = (-5.0, 6.0)
    ks = np.unique(np.round(np.geomspace(2, 3000, 18)).astype(int))
    true_tv = float(GaussianProfile(1.0).delta(0.0))
    out = {}
    for n in n_values:
        rng = np.random.default_rng([seed, n])
        x, y = rng.normal(1, 1, n), rng.normal(0, 1, n)
        est, can, spl = [], [], []
        for k in ks:
            edges = np.linspace(*edges_range, k + 1)
            b = make_bins(x, y, edges)
            est.append(0.5 * np.abs(b.counts(x) / n - b.counts(y) / n).sum())
            can.append(histogram_audit(x, y, bins=edges, method="canonne", confidence=CONFIDENCE, rng=1).tv_lower_bound)
            spl.append(histogram_audit(x, y, bins=edges, method="split", confidence=CONFIDENCE, rng=1).tv_lower_bound)
        out[n] = (np.array(est), np.array(can), np.array(spl))
    if path is not None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=(6.4, 4.4), dpi=120)
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        ax.axhline(true_tv, color="k", lw=1, label=f"true TV = {true_tv:.4f}")
        for j, n in enumerate(n_values):
            est, can, spl = out[n]
            c = f"C{j}"
            ax.plot(ks, est, color=c, lw=1.8, label=f"plug-in estimate, n={n:.0e}")
            ax.plot(ks, can, color=c, lw=1.2, ls="--", label=f"Canonne lower bound ({CONFIDENCE:g})")
            ax.plot(ks, spl, color=c, lw=1.2, ls=":", label=f"split Clopper–Pearson lower bound ({CONFIDENCE:g})")
        ax.set_xscale("log")
        ax.set_xlabel("number of bins k (equal width on [-5, 6])")
        ax.set_ylabel("total variation")
        ax.set_ylim(0.2, 0.45)
        ax.set_title("Fig. 4: TV(N(1,1), N(0,1)) from histograms vs number of bins", fontsize=9)
        ax.legend(fontsize=6.5, loc="lower center", ncol=2)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(path)
    return ks, out, true_tv


def tradeoff_figure(path, title, x, y, res, gdp, ref_curve):
    a = np.concatenate([np.geomspace(1e-6, 1e-2, 200), np.linspace(1e-2, 1.0, 400)])
    plug = plugin_curve(x, y, "scott")
    curves = [
        ("exact", a, ref_curve(a), {"color": "k", "lw": 2.2}),
        ("histogram estimate (plug-in)", a, plug.tradeoff_upper_bound(a), {"color": "C0", "lw": 1.0, "alpha": 0.8}),
        (f"histogram upper bound ({CONFIDENCE:g})", a, res.tradeoff_upper_bound(a), {"color": "C0", "lw": 1.6, "ls": "--"}),
        (f"GDP threshold audit: mu >= {gdp.mu_lower_bound:.3f}", a, gdp.tradeoff(a), {"color": "C3", "lw": 1.4, "ls": "-."}),
    ]
    if path is None:
        return
    stem = Path(path)
    plot_tradeoff(stem, curves, title=title)
    plot_tradeoff(stem.with_name(stem.stem + "_log.png"), curves, title=title + " (ROC, log-log)", log=True)


def part_coverage(reps, seed):
    """Null false-positive and coverage failure rates (confidence 0.95 and 0.8)."""
    nulls = {
        "N(0,1)": lambda rng, n: rng.normal(size=n),
        "Laplace": lambda rng, n: rng.laplace(size=n),
        "Poisson(3) (ties)": lambda rng, n: rng.poisson(3.0, size=n).astype(float),
    }
    methods = ["auto", "canonne", "split", "threshold", "gdp"]
    eps = np.linspace(0, 6, 121)
    alpha = np.linspace(0, 1, 101)

    def run(method, x, y, conf, r):
        if method == "threshold":
            return threshold_audit(x, y, confidence=conf, rng=r, thresholds=16)
        if method == "gdp":
            return gdp_audit(x, y, confidence=conf, rng=r, thresholds=16)
        return histogram_audit(x, y, method=method, confidence=conf, rng=r)

    null_rows = []
    for conf in (0.95, 0.8):
        for nname, draw in nulls.items():
            for m in methods:
                rng = np.random.default_rng([seed, int(conf * 100), len(nname), methods.index(m)])
                pos = 0
                for r in range(reps):
                    res = run(m, draw(rng, 400), draw(rng, 400), conf, r)
                    pos += (res.mu_lower_bound if m == "gdp" else res.tv_lower_bound) > 0
                null_rows.append((conf, nname, m, pos, reps))
    cov_rows = []
    sc = scenarios()
    for conf in (0.95, 0.8):
        for sname in ("Gaussian N(1,1) vs N(0,1)", "Laplace Lap(0,1) vs Lap(1,1)"):
            s = sc[sname]
            ref, mu = s["ref"], s["mu"]
            prof, trade = ref.delta(eps), ref.tradeoff(alpha)
            eps_true = {d: ref.epsilon(d) for d in (1e-5, 1e-3, 0.05)}
            for m in methods:
                rng = np.random.default_rng([seed, int(conf * 100), len(sname), methods.index(m), 7])
                fails = 0
                for r in range(reps):
                    x, y = s["sample"](rng, 1000)
                    res = run(m, x, y, conf, r)
                    if m == "gdp":
                        fails += res.mu_lower_bound > mu + 1e-6
                        continue
                    bad = any(np.any(res.delta_lower_bound(eps, direction=d) > prof + 1e-12) for d in ("P||Q", "Q||P"))
                    bad |= any(res.epsilon_lower_bound(d) > e + 1e-9 for d, e in eps_true.items())
                    bad |= bool(np.any(res.tradeoff_upper_bound(alpha) < trade - 1e-12))
                    bad |= res.mu_lower_bound > mu + 1e-6
                    fails += bad
                cov_rows.append((conf, sname, m, fails, reps))
    return null_rows, cov_rows


def part_canaries(seed, dims=(1_000, 10_000, 100_000), n_canaries=1000, sigma=1.0):
    rows = []
    for d in dims:
        t0 = time.perf_counter()
        obs, nul = simulate_gaussian_canary_run(d, n_canaries, sigma, num_null=20 * n_canaries, rng=[seed, d])
        r = one_shot_audit(obs, nul, confidence=CONFIDENCE, rng=[seed, d, 1])
        rows.append((d, r.gaussian_fit_mu, r.histogram.mu_lower_bound, r.histogram.tv_lower_bound,
                     r.histogram.epsilon_lower_bound(1e-5), r.gaussian_fit_epsilon(1e-5), time.perf_counter() - t0))
    return rows, 1.0 / sigma


def part_pld(n, seed, steps=(1, 10, 100)):
    rows = []
    rng = np.random.default_rng([seed, 99])
    s, q = 1.0, 0.2
    x = np.where(rng.random(n) < q, rng.normal(1, s, n), rng.normal(0, s, n))
    y = rng.normal(0, s, n)
    est = estimate_pld(x, y)
    for t in steps:
        exact = SubsampledGaussianProfile(s, q, t)
        rows.append((t, est.epsilon(1e-5, t), exact.epsilon(1e-5), float(est.delta(1.0, t)), float(exact.delta(1.0))))
    return rows, (s, q, n, est.bins.k)


# --------------------------------------------------------------------------- report
def fmt(v, d=3):
    return "inf" if isinstance(v, float) and math.isinf(v) else f"{v:.{d}f}"


def report(args, eps_rows, fig4, cov, can, pld, seconds):
    lines = []
    w = lines.append
    w(f"dpaudit {dpaudit.__version__}, numpy {np.__version__}, Python {platform.python_version()}, {platform.machine()}; "
      f"n = {args.n:,} samples per side; confidence {CONFIDENCE:g}; seed {args.seed}")
    w("")
    for d in (1e-5, 1e-3):
        w(f"Epsilon lower bounds at delta = {d:g} (n = {args.n:,} per side) vs the true epsilon:")
        w("")
        w("| pair | true eps | histogram (auto) | histogram (canonne) | histogram (split) | threshold MIA (CP) | GDP audit: eps of mu* | auto's source |")
        w("|---|---:|---:|---:|---:|---:|---:|---|")
        for r in eps_rows:
            w(f"| {r['name']} | {fmt(r[('true', d)])} | {fmt(r[('histogram (auto)', d)])} | {fmt(r[('histogram (canonne)', d)])} | "
              f"{fmt(r[('histogram (split)', d)])} | {fmt(r[('threshold MIA (CP)', d)])} | {fmt(r[('GDP audit (eps of mu)', d)])} | {r[('source', d)]} |")
        w("")
    w("\\* the epsilon of the GDP audit's mu lower bound is a lower bound only if the pair's trade-off curve is Gaussian.")
    w("")
    w("TV and Gaussian-DP mu lower bounds (true mu: smallest mu-GDP curve dominating the pair):")
    w("")
    w("| pair | true TV | TV: auto / canonne / split / threshold | true mu | mu: auto / threshold / GDP audit | seconds (5 audits) |")
    w("|---|---:|---|---:|---|---:|")
    for r in eps_rows:
        w(f"| {r['name']} | {fmt(r['tv_true'], 4)} | {fmt(r[('histogram (auto)', 'tv')], 4)} / {fmt(r[('histogram (canonne)', 'tv')], 4)} / "
          f"{fmt(r[('histogram (split)', 'tv')], 4)} / {fmt(r[('threshold MIA (CP)', 'tv')], 4)} | {fmt(r['mu_true'])} | "
          f"{fmt(r[('histogram (auto)', 'mu')])} / {fmt(r[('threshold MIA (CP)', 'mu')])} / {fmt(r['gdp_mu'])} | {r['seconds']:.1f} |")
    w("")
    ks, out, true_tv = fig4
    w(f"Fig. 4 data (true TV {true_tv:.4f}; bins on [-5, 6]): k -> plug-in / Canonne bound / split bound")
    w("")
    w("| k | " + " | ".join(f"n={n:.0e}: estimate / Canonne / split" for n in out) + " |")
    w("|---:|" + "---|" * len(out))
    for i, k in enumerate(ks):
        w(f"| {k} | " + " | ".join(f"{out[n][0][i]:.4f} / {out[n][1][i]:.4f} / {out[n][2][i]:.4f}" for n in out) + " |")
    w("")
    if cov is not None:
        null_rows, cov_rows = cov
        w("Null inputs (two samples of 400 from one distribution): repetitions with a positive lower bound "
          "(TV > 0, or mu > 0 for the GDP audit), vs the allowed rate 1 - confidence:")
        w("")
        w("| confidence | null distribution | auto | canonne | split | threshold | GDP audit |")
        w("|---:|---|---|---|---|---|---|")
        keys = sorted({(c, n) for c, n, *_ in null_rows}, key=lambda t: (-t[0], t[1]))
        for c, nname in keys:
            cells = {m: f"{p}/{r}" for cc, nn, m, p, r in null_rows if cc == c and nn == nname}
            w(f"| {c:g} | {nname} | " + " | ".join(cells[m] for m in ("auto", "canonne", "split", "threshold", "gdp")) + " |")
        w("")
        w("Coverage (1,000 samples per side): repetitions in which any bound is on the wrong side (profile on "
          "121 epsilons in both directions, epsilon at 3 deltas, trade-off curve on 101 alphas, mu):")
        w("")
        w("| confidence | pair | auto | canonne | split | threshold | GDP audit (mu only) |")
        w("|---:|---|---|---|---|---|---|")
        keys = sorted({(c, n) for c, n, *_ in cov_rows}, key=lambda t: (-t[0], t[1]))
        for c, sname in keys:
            cells = {m: f"{p}/{r}" for cc, nn, m, p, r in cov_rows if cc == c and nn == sname}
            w(f"| {c:g} | {sname} | " + " | ".join(cells[m] for m in ("auto", "canonne", "split", "threshold", "gdp")) + " |")
        w("")
    rows, mu_true = can
    w(f"One-shot random canaries (1,000 inserted canaries, 20,000 exact-null canaries, sigma = 1: the Gaussian "
      f"mechanism with mu = {mu_true:g}, eps(1e-5) = {gaussian_epsilon(1e-5, mu_true):.3f}):")
    w("")
    w("| dimension d | Gaussian-fit mu (estimate) | histogram mu lower bound | histogram TV lower bound | histogram eps(1e-5) lower bound | Gaussian-fit eps(1e-5) | seconds |")
    w("|---:|---:|---:|---:|---:|---:|---:|")
    for d, gm, hm, tv, he, ge, s in rows:
        w(f"| {d:,} | {gm:.3f} | {hm:.3f} | {tv:.3f} | {he:.3f} | {ge:.3f} | {s:.1f} |")
    w("")
    prow, (s, q, n, k) = pld
    w(f"White-box PLD estimate (paper 001 §9.2), subsampled Gaussian s = {s:g}, q = {q:g}, {n:,} scores per side, "
      f"{k} merged bins; composed with dp_accounting (an estimate, no confidence):")
    w("")
    w("| steps T | estimated eps(1e-5) | exact eps(1e-5) | estimated delta(1) | exact delta(1) |")
    w("|---:|---:|---:|---:|---:|")
    for t, ee, xe, ed, xd in prow:
        w(f"| {t} | {fmt(ee)} | {fmt(xe)} | {ed:.5f} | {xd:.5f} |")
    w("")
    w(f"Total time {seconds:.0f} s.")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="samples per side (default 10^6)")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--coverage-reps", type=int, default=300, help="repetitions per coverage cell (0 to skip)")
    parser.add_argument("--quick", action="store_true", help="n = 10^5, 60 coverage repetitions, no files")
    parser.add_argument("--no-files", action="store_true", help="print only")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.coverage_reps, args.no_files = 100_000, 60, True
    write = not args.no_files
    if write:
        RESULTS.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    print(f"[1/6] epsilon lower bounds at n = {args.n:,} ...", file=sys.stderr, flush=True)
    eps_rows, cache = part_epsilons(args.n, args.seed)
    print("[2/6] figures 5 and 6 ...", file=sys.stderr, flush=True)
    sc = scenarios()
    for key, fig, title in (
        (f"subsampled Gaussian (s={SUB_SIGMA:g}, q={SUB_Q:g})", "scores_fig5_subsampled_gaussian.png",
         f"Fig. 5: subsampled Gaussian (s={SUB_SIGMA:g}, q={SUB_Q:g}), n={args.n:.0e}"),
        ("Laplace Lap(0,1) vs Lap(1,1)", "scores_fig6_laplace.png", f"Fig. 6: Laplace mechanism (eps0=1), n={args.n:.0e}"),
        (f"scale N(0,1) vs N(0,{SCALE_S**2:g})", "scores_extra_scale.png", f"Scale change N(0,1) vs N(0,{SCALE_S**2:g}), n={args.n:.0e}"),
    ):
        x, y, res, gdp = cache[key]
        tradeoff_figure(RESULTS / fig if write else None, title, x, y, res["histogram (auto)"], gdp, sc[key]["ref"].tradeoff)
    print("[3/6] figure 4 ...", file=sys.stderr, flush=True)
    fig4 = part_fig4((10_000, args.n), args.seed, RESULTS / "scores_fig4_tv_vs_bins.png" if write else None)
    cov = None
    if args.coverage_reps > 0:
        print(f"[4/6] null and coverage rates ({args.coverage_reps} repetitions per cell) ...", file=sys.stderr, flush=True)
        cov = part_coverage(args.coverage_reps, args.seed)
    print("[5/6] one-shot canaries ...", file=sys.stderr, flush=True)
    can = part_canaries(args.seed, dims=(1_000, 10_000) if args.quick else (1_000, 10_000, 100_000))
    print("[6/6] white-box PLD ...", file=sys.stderr, flush=True)
    pld = part_pld(min(args.n, 1_000_000), args.seed)
    text = report(args, eps_rows, fig4, cov, can, pld, time.perf_counter() - t0)
    print(text)
    if write:
        cmd = "python benchmarks/scores.py" + ("" if argv is None else " " + " ".join(argv))
        md = (
            "# Auditing from scores: benchmark (paper 001, Figs. 4–6)\n\n"
            f"Regenerate: `{cmd}` (writes this file and the PNGs next to it).\n\n"
            "Figures: `scores_fig4_tv_vs_bins.png`, `scores_fig5_subsampled_gaussian.png` (+ `_log`), "
            "`scores_fig6_laplace.png` (+ `_log`), `scores_extra_scale.png` (+ `_log`).\n\n"
            + text + "\n"
        )
        (RESULTS / "scores.md").write_text(md)
        print(f"wrote {RESULTS / 'scores.md'}", file=sys.stderr)


if __name__ == "__main__":
    main()

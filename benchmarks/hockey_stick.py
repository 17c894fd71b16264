"""Benchmark: one hockey-stick trial, dpaudit vs DP-Auditorium's estimator, on CPU.

Mechanism (NonDPLaplace1 of paper 000, §6.1, written inline): the mean of the records plus
Laplace noise of scale ``2 / (n eps)`` with the true count ``n``. On ``D0 = [1.0]`` and
``D1 = [1.0, 0.0]`` with ``eps = 0.01`` it outputs ``P = Lap(1, 200)`` and ``Q = Lap(0.5, 100)``:
different scales, so the privacy loss is unbounded and the claim ``PureDP(0.01)`` is false.

For each sample size (outputs per dataset) the script measures, as the median over repeats, with
the methods of a repeat run one after the other on the same samples (order alternated between
repeats, so that the ratios are fair on a busy machine):

* the raw numpy Laplace draw (``rng.laplace`` of 2n values), the reference samples/s;
* sampling both datasets through ``dpaudit.draw``;
* one trial of ``HockeyStickTester.test`` with ``regions="exact"`` (the default for 1-D outputs:
  level sets of a binned likelihood-ratio estimate, no training) and ``regions="classifier"``
  (the old path: one MLP for both directions);
* the same trial done DP-Auditorium's way, implemented here from paper 000 only (Lemma 4.9,
  Alg. 5, Prop. 4.11/4.12): the weighted mixture ``1/(1+e^eps) P x {1} + e^eps/(1+e^eps) Q x {0}``
  is built by keeping the first ``1/(1+e^eps)`` of the P samples and the last
  ``e^eps/(1+e^eps)`` of the Q samples; the first half of each sample array trains and the
  second half tests (no shuffling); an MLP of three Dense(12, relu) layers and a logit is trained
  with the logistic loss, Adam (lr 1e-2), 2 epochs, batch 100 (in PyTorch); the test accuracy
  gets a Hoeffding term ``sqrt(ln(1/beta) / (2 n_test))`` and ``H >= (1+e^eps)(acc - term) - e^eps``.
  It is run twice, once per direction, each at failure probability ``beta`` (as DP-Auditorium
  does; dpaudit's trial spends ``beta`` over both directions);
* on 5-D outputs (``Gaussian5D`` below: a Gaussian mechanism whose noise is too small for its
  (1, 1e-5)-DP claim; the neighbours differ by a unit mean shift), ``regions="auto"`` (which picks
  the classifier: exact regions are for discrete and 1-D outputs) and ``regions="classifier"``.

Then a table of lower bounds (``delta_lower_bound``, ``epsilon_lower_bound``, mean over seeds)
on the zoo's mean mechanisms at their first witness pair, exact regions vs classifier.

Timings depend on the load: run it pinned to one core (``taskset -c 0``) with ``--threads 1``,
and read the load averages it prints.

Run: ``taskset -c 0 python benchmarks/hockey_stick.py`` (defaults: ``--samples 50000 500000
--repeats 3 --threads 1 --bound-samples 500000 --bound-seeds 5``).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time
import zlib

import numpy as np
import torch
from scipy import stats

import dpaudit
from dpaudit import ApproxDP, ClassifierHockeyStick, HockeyStickTester, Mechanism, PureDP
from dpaudit.mechanisms import draw
from dpaudit.testers import NotApplicable

EPS = 0.01
D0 = np.array([[1.0]])
D1 = np.array([[1.0], [0.0]])


class NonDPLaplace1(Mechanism):
    """Mean of the records + Lap(2 / (n eps)) with the true count n (not DP under add/remove)."""

    name = "NonDPLaplace1"

    def __init__(self, eps: float):
        self.eps = eps

    def sample(self, dataset, num_samples, rng):
        n = len(dataset)
        return dataset.mean() + rng.laplace(0.0, 2.0 / (n * self.eps), num_samples)


# --------------------------------------------------------------------------- exact divergence
def exact_hockey_stick(loc_p, scale_p, loc_q, scale_q, eps, num=4_000_001):
    """``H_{e^eps}(Lap(loc_p, scale_p) || Lap(loc_q, scale_q)) = int (p - e^eps q)_+`` by the
    trapezoidal rule over +-60 of the larger scale (mass outside < e^-60)."""
    half = 60.0 * max(scale_p, scale_q)
    x = np.linspace(min(loc_p, loc_q) - half, max(loc_p, loc_q) + half, num)
    p = stats.laplace.pdf(x, loc_p, scale_p)
    q = stats.laplace.pdf(x, loc_q, scale_q)
    return float(np.trapezoid(np.maximum(p - math.exp(eps) * q, 0.0), x))


# --------------------------------------------------------------------------- DP-Auditorium's way
def _mixture(p, q, eps):
    """Labelled sample of the mixture of paper 000, Lemma 4.9: the first 1/(1+e^eps) of the P
    samples (label 1) and the last e^eps/(1+e^eps) of the Q samples (label 0)."""
    m = len(p)
    n_p = int(m / (1.0 + math.exp(eps)))
    n_q = m - n_p
    x = np.concatenate([p[:n_p], q[len(q) - n_q :]]).astype(np.float32)
    y = np.concatenate([np.ones(n_p, np.float32), np.zeros(n_q, np.float32)])
    return x, y


def dp_auditorium_lower_bound(p, q, eps, beta, seed):
    """One direction, ``H_{e^eps}(P || Q) >= (1 + e^eps)(acc - sqrt(ln(1/beta)/(2 m))) - e^eps``."""
    half_p, half_q = len(p) // 2, len(q) // 2
    x_tr, y_tr = _mixture(p[:half_p], q[:half_q], eps)
    x_te, y_te = _mixture(p[half_p:], q[half_q:], eps)
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = torch.nn.Sequential(
            torch.nn.Linear(x_tr.shape[1], 12), torch.nn.ReLU(),
            torch.nn.Linear(12, 12), torch.nn.ReLU(),
            torch.nn.Linear(12, 12), torch.nn.ReLU(),
            torch.nn.Linear(12, 1),
        )
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    xt, yt = torch.from_numpy(x_tr), torch.from_numpy(y_tr)
    batch = 100
    for _ in range(2):  # epochs; Keras' fit shuffles the training set every epoch
        perm = torch.randperm(len(xt), generator=gen)
        for i in range(0, len(xt), batch):
            idx = perm[i : i + batch]
            opt.zero_grad()
            loss_fn(model(xt[idx]).squeeze(1), yt[idx]).backward()
            opt.step()
    with torch.no_grad():
        predicted = (model(torch.from_numpy(x_te)).squeeze(1) > 0.0).numpy()  # h(x) > 1/2
    accuracy = float(np.mean(predicted == (y_te > 0.5)))
    hoeffding = math.sqrt(math.log(1.0 / beta) / (2.0 * len(y_te)))
    return (1.0 + math.exp(eps)) * (accuracy - hoeffding) - math.exp(eps)


# --------------------------------------------------------------------------- 5-D mechanism
DIM = 5
EPS_5D, DELTA_5D = 1.0, 1e-5
SHIFT_5D = np.ones(DIM) / math.sqrt(DIM)  # one record moves the mean by a unit L2 vector


class Gaussian5D(Mechanism):
    """Sum of the records times a unit vector in R^5, plus N(0, I_5): sigma = 1 for an L2
    sensitivity of 1, while (1, 1e-5)-DP needs sigma ~ 4.84 (classic calibration). The privacy
    loss between neighbours is that of a 1-D Gaussian with mu = 1:
    ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``."""

    name = "Gaussian5D"

    def sample(self, dataset, num_samples, rng):
        total = float(np.sum(dataset))
        return total * SHIFT_5D + rng.standard_normal((num_samples, DIM))


def gaussian_delta(mu, eps):
    """Exact hockey-stick divergence ``H_{e^eps}`` of N(mu, 1) vs N(0, 1) (both directions)."""
    return float(stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2))


def _directions(outcome):
    """Largest certified lower bound per direction (the exact path certifies up to two regions
    per direction: the margin one and the epsilon one)."""
    best = {}
    for b in outcome.bounds:
        d = getattr(b, "direction", None) or ("P||Q" if not best else "Q||P")
        best[d] = max(best.get(d, -math.inf), b.lower)
    return best.get("P||Q", math.nan), best.get("Q||P", math.nan)


# --------------------------------------------------------------------------- benchmark
ZOO_MEANS = ("non-dp-laplace-1", "non-dp-laplace-2", "non-dp-gaussian-1", "non-dp-gaussian-2")


def run(sizes, repeats, beta, threads):
    """One row per (outputs, method, n); every method of a repeat runs on the same samples, and
    the methods alternate within each repeat (interleaved timing)."""
    if threads:
        torch.set_num_threads(threads)
    classifier = ClassifierHockeyStick(device="cpu", num_threads=threads or None)
    testers = {
        "exact": HockeyStickTester(classifier, regions="exact"),
        "classifier": HockeyStickTester(classifier, regions="classifier"),
        "auto": HockeyStickTester(classifier, regions="auto"),
    }
    mech1, claim1 = NonDPLaplace1(EPS), PureDP(EPS)
    mech5, claim5 = Gaussian5D(), ApproxDP(EPS_5D, DELTA_5D)
    d5_0, d5_1 = np.array([[1.0]]), np.array([[1.0], [1.0]])

    # Warm-up (torch initialisation) so the first timed trial is not penalised.
    warm = np.random.default_rng(0)
    for t in testers.values():
        t.test(draw(mech1, D0, 2000, warm), draw(mech1, D1, 2000, warm), claim1, beta=beta, rng=0)
    testers["classifier"].test(draw(mech5, d5_0, 2000, warm), draw(mech5, d5_1, 2000, warm), claim5, beta=beta, rng=0)
    dp_auditorium_lower_bound(warm.laplace(size=(2000, 1)), warm.laplace(size=(2000, 1)), EPS, beta, 0)

    timings: dict = {}

    def note(key, seconds, outcome=None, fwd=None, rev=None, violation=None):
        rec = timings.setdefault(key, {"s": [], "fwd": [], "rev": [], "eps": [], "det": 0})
        rec["s"].append(seconds)
        if outcome is not None:
            fwd, rev = _directions(outcome)
            violation = outcome.violation
            rec["eps"].append(outcome.epsilon_lower_bound if outcome.epsilon_lower_bound is not None else math.nan)
        if fwd is not None:
            rec["fwd"].append(fwd)
            rec["rev"].append(rev)
        rec["det"] += int(bool(violation))

    paths5 = set()
    for n in sizes:
        for rep in range(repeats):
            rng = np.random.default_rng([n, rep])
            t0 = time.perf_counter()
            rng.laplace(0.0, 1.0, 2 * n)
            note(("numpy", n), time.perf_counter() - t0)
            t0 = time.perf_counter()
            x0 = draw(mech1, D0, n, rng)
            x1 = draw(mech1, D1, n, rng, output_dim=x0.shape[1])
            note(("sample-1d", n), time.perf_counter() - t0)
            order = ["exact", "classifier"] if rep % 2 == 0 else ["classifier", "exact"]
            for name in order:
                t0 = time.perf_counter()
                out = testers[name].test(x0, x1, claim1, beta=beta, rng=rep)
                note((f"1d-{name}", n), time.perf_counter() - t0, out)
            t0 = time.perf_counter()
            fwd = dp_auditorium_lower_bound(x0, x1, EPS, beta, seed=2 * rep)
            rev = dp_auditorium_lower_bound(x1, x0, EPS, beta, seed=2 * rep + 1)
            note(("1d-dpa", n), time.perf_counter() - t0, fwd=fwd, rev=rev, violation=max(fwd, rev) > claim1.delta)

            t0 = time.perf_counter()
            y0 = draw(mech5, d5_0, n, rng)
            y1 = draw(mech5, d5_1, n, rng, output_dim=y0.shape[1])
            note(("sample-5d", n), time.perf_counter() - t0)
            paths5.add(testers["auto"].region_path(y0, y1))
            order = ["auto", "classifier"] if rep % 2 == 0 else ["classifier", "auto"]
            for name in order:
                t0 = time.perf_counter()
                out = testers[name].test(y0, y1, claim5, beta=beta, rng=rep)
                note((f"5d-{name}", n), time.perf_counter() - t0, out)
    try:
        testers["exact"].test(y0[:4000], y1[:4000], claim5, beta=beta, rng=0)
        exact5 = "ran (unexpected)"
    except NotApplicable as exc:
        exact5 = f"NotApplicable: {exc}"
    return timings, sorted(paths5), exact5


def zoo_bounds(n, seeds, beta, epsilons=(0.01, 1.0)):
    """Mean over seeds of the delta and epsilon lower bounds on the zoo's mean mechanisms at
    their first witness pair, exact regions vs classifier (the same samples for both)."""
    from dpaudit.mechanisms import zoo

    rows = []
    for name in ZOO_MEANS:
        entry = zoo.get(name)
        pair = entry.witnesses()[0]
        for eps in epsilons:
            mech, claim = entry.mechanism(eps), entry.claim(eps)
            acc = {r: {"delta": [], "eps": [], "det": 0, "s": []} for r in ("exact", "classifier")}
            for seed in range(seeds):
                rng = np.random.default_rng([zlib.crc32(name.encode()), int(eps * 1000), seed])
                x0 = draw(mech, pair.d0, n, rng)
                x1 = draw(mech, pair.d1, n, rng, output_dim=x0.shape[1])
                for regions in (("exact", "classifier") if seed % 2 == 0 else ("classifier", "exact")):
                    t0 = time.perf_counter()
                    out = HockeyStickTester(regions=regions).test(x0, x1, claim, beta=beta, rng=seed)
                    a = acc[regions]
                    a["s"].append(time.perf_counter() - t0)
                    a["delta"].append(out.delta_lower_bound if out.delta_lower_bound is not None else math.nan)
                    a["eps"].append(out.epsilon_lower_bound if out.epsilon_lower_bound is not None else math.nan)
                    a["det"] += int(out.violation)
            rows.append((name, eps, claim.describe(), entry.violates(eps), acc))
    return rows


def ratio(n, repeats, beta):
    """Test time / draw time of the default hockey-stick tester on 1-D outputs (issue 37's goal: at
    most 10x at 500,000 per dataset). Cases: NonDPLaplace1 at eps = 0.01 (the timing table's
    violation) and zoo:dp-laplace at eps = 1 on its first witness pair (a pass); draw = numpy
    ``rng.laplace`` of 2n values (the reference above). Medians over ``repeats``, draw and test
    interleaved on the same generator; CPU time of this process (``time.process_time``, one
    thread), which a busy machine inflates far less than wall time."""
    from dpaudit.mechanisms import zoo

    entry = zoo.get("dp-laplace")
    pair = entry.witnesses()[0]
    cases = (("NonDPLaplace1 eps=0.01", NonDPLaplace1(EPS), D0, D1, PureDP(EPS)),
             ("zoo:dp-laplace eps=1", entry.mechanism(1.0), pair.d0, pair.d1, entry.claim(1.0)))
    tester = HockeyStickTester()
    warm = np.random.default_rng(0)
    tester.test(warm.laplace(size=(4000, 1)), warm.laplace(size=(4000, 1)), PureDP(1.0), beta=beta, rng=0)
    rows = []
    for label, mech, d0, d1, claim in cases:
        draw_s, test_s = [], []
        for rep in range(repeats):
            rng = np.random.default_rng([n, rep])
            t0 = time.process_time()
            rng.laplace(0.0, 1.0, 2 * n)
            draw_s.append(time.process_time() - t0)
            x0 = draw(mech, d0, n, rng)
            x1 = draw(mech, d1, n, rng, output_dim=x0.shape[1])
            t0 = time.process_time()
            out = tester.test(x0, x1, claim, beta=beta, rng=rep)
            test_s.append(time.process_time() - t0)
        d, t = statistics.median(draw_s), statistics.median(test_s)
        rows.append(f"| {label} | {n:,} | {d:.4f} | {t:.3f} | {t / d:.1f} | {out.margin:.6g} |")
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, nargs="+", default=[50_000, 500_000],
                        help="outputs per dataset (default: 50000 500000)")
    parser.add_argument("--repeats", type=int, default=3, help="repeats per size; medians are shown (default 3)")
    parser.add_argument("--beta", type=float, default=0.05, help="failure probability of one trial (default 0.05)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads (default 1; 0 leaves torch's default). The MLPs "
                             "are tiny: extra threads do not help, and on a busy machine they slow "
                             "training down by an order of magnitude")
    parser.add_argument("--bound-samples", type=int, default=500_000,
                        help="outputs per dataset for the zoo bounds table (default 500000; 0 skips it)")
    parser.add_argument("--bound-seeds", type=int, default=5, help="seeds averaged in the bounds table (default 5)")
    parser.add_argument("--ratio", action="store_true",
                        help="only the test time / draw time table of the default tester on 1-D outputs "
                             "(at the first --samples size)")
    args = parser.parse_args(argv)

    if args.ratio:
        print(f"dpaudit {dpaudit.__version__} from {os.path.dirname(dpaudit.__file__)}; load {os.getloadavg()[0]:.2f}; "
              f"beta = {args.beta}, median of {args.repeats} repeats")
        print("| case | n per dataset | numpy draw of 2n (CPU s) | test (CPU s) | test / draw | margin (last repeat) |")
        print("|---|---:|---:|---:|---:|---:|")
        print("\n".join(ratio(args.samples[0], args.repeats, args.beta)))
        return 0
    load0 = os.getloadavg()
    timings, paths5, exact5 = run(args.samples, args.repeats, args.beta, args.threads)
    load1 = os.getloadavg()
    med = statistics.median
    try:
        affinity = sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        affinity = "?"
    print(
        f"dpaudit {dpaudit.__version__}, torch {torch.__version__} ({torch.get_num_threads()} threads), "
        f"numpy {np.__version__}, Python {platform.python_version()}, {platform.machine()} CPU, "
        f"{os.cpu_count()} cores, pinned to CPUs {affinity}"
    )
    print(f"load average (1/5/15 min) before: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}; "
          f"after the timing table: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    exact_fwd = exact_hockey_stick(1.0, 2.0 / EPS, 0.5, 1.0 / EPS, EPS)
    exact_rev = exact_hockey_stick(0.5, 1.0 / EPS, 1.0, 2.0 / EPS, EPS)
    exact_5d = gaussian_delta(1.0, EPS_5D)
    print(
        f"1-D: NonDPLaplace1, eps = {EPS}, D0 = [1.0], D1 = [1.0, 0.0]: P = Lap(1, {2 / EPS:g}), "
        f"Q = Lap(0.5, {1 / EPS:g}); claim {PureDP(EPS).describe()}; exact H_e^eps P||Q = {exact_fwd:.4f}, "
        f"Q||P = {exact_rev:.4f}"
    )
    print(
        f"5-D: Gaussian5D (sum of records x unit vector + N(0, I_5)), D0 = [1], D1 = [1, 1]; claim "
        f"{ApproxDP(EPS_5D, DELTA_5D).describe()}; exact H_e^eps = {exact_5d:.4f} both ways; "
        f"regions='auto' picked: {', '.join(paths5)}; regions='exact' on it: {exact5}"
    )
    print(f"beta = {args.beta} per trial; median of {args.repeats} repeats; methods interleaved within each "
          "repeat on the same samples; samples/s = 2n / trial time (both datasets)")
    print()
    print("| outputs | n per dataset | method | trial (s) | samples/s | x numpy Laplace rate | lower P‖Q / Q‖P | eps lower bound | detections |")
    print("|---|---:|---|---:|---:|---:|---|---:|---|")
    for n in args.samples:
        numpy_s = med(timings[("numpy", n)]["s"])
        numpy_rate = 2 * n / numpy_s
        print(f"| — | {n:,} | numpy `rng.laplace` draw of 2n | {numpy_s:.4f} | {numpy_rate:,.0f} | 1 | | | |")
        for key, label in (("sample-1d", "sampling 1-D (`dpaudit.draw`, both datasets)"),
                           ("sample-5d", "sampling 5-D (`dpaudit.draw`, both datasets)")):
            s = med(timings[(key, n)]["s"])
            print(f"| — | {n:,} | {label} | {s:.4f} | {2 * n / s:,.0f} | {2 * n / s / numpy_rate:.3g} | | | |")
        for key, outputs, label in (
            ("1d-exact", "1-D", "hockey-stick `regions=\"exact\"` (new default)"),
            ("1d-classifier", "1-D", "hockey-stick `regions=\"classifier\"` (old path)"),
            ("1d-dpa", "1-D", "DP-Auditorium-style (2 MLPs)"),
            ("5d-auto", "5-D", "hockey-stick `regions=\"auto\"` (→ classifier)"),
            ("5d-classifier", "5-D", "hockey-stick `regions=\"classifier\"`"),
        ):
            r = timings[(key, n)]
            s = med(r["s"])
            eps_lb = f"{med(r['eps']):.3f}" if r["eps"] else ""
            print(f"| {outputs} | {n:,} | {label} | {s:.3f} | {2 * n / s:,.0f} | {2 * n / s / numpy_rate:.3g} "
                  f"| {med(r['fwd']):.4f} / {med(r['rev']):.4f} | {eps_lb} | {r['det']}/{args.repeats} |")
    sys.stdout.flush()
    if args.bound_samples:
        load0 = os.getloadavg()
        rows = zoo_bounds(args.bound_samples, args.bound_seeds, args.beta)
        load1 = os.getloadavg()
        print()
        print(f"Zoo mean mechanisms at their first witness pair, n = {args.bound_samples:,} per dataset, "
              f"beta = {args.beta}, mean over {args.bound_seeds} seeds (same samples for both methods); "
              f"load average before {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, after "
              f"{load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
        print()
        print("| mechanism | eps | claim | violates | delta LB exact | delta LB classifier "
              "| exact - classifier (paired SE) | eps LB exact "
              "| eps LB classifier | detections exact / classifier | median trial s exact / classifier |")
        print("|---|---:|---|---|---:|---:|---:|---:|---:|---|---|")
        for name, eps, claim, violates, acc in rows:
            e, c = acc["exact"], acc["classifier"]
            diff = np.asarray(e["delta"]) - np.asarray(c["delta"])  # same seeds, same samples
            diff = diff[np.isfinite(diff)]
            se = diff.std(ddof=1) / math.sqrt(len(diff)) if len(diff) > 1 else math.nan
            paired = f"{diff.mean():+.2g} ({se:.2g})" if len(diff) else "-"
            print(f"| {name} | {eps:g} | {claim} | {'yes' if violates else 'no'} | {np.nanmean(e['delta']):.4g} "
                  f"| {np.nanmean(c['delta']):.4g} | {paired} | {np.nanmean(e['eps']):.4g} | {np.nanmean(c['eps']):.4g} "
                  f"| {e['det']}/{args.bound_seeds} / {c['det']}/{args.bound_seeds} "
                  f"| {med(e['s']):.2f} / {med(c['s']):.2f} |")


if __name__ == "__main__":
    main()

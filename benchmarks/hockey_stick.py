"""Benchmark: one hockey-stick trial, dpaudit vs DP-Auditorium's estimator, on CPU.

Mechanism (NonDPLaplace1 of paper 000, §6.1, written inline): the mean of the records plus
Laplace noise of scale ``2 / (n eps)`` with the true count ``n``. On ``D0 = [1.0]`` and
``D1 = [1.0, 0.0]`` with ``eps = 0.01`` it outputs ``P = Lap(1, 200)`` and ``Q = Lap(0.5, 100)``:
different scales, so the privacy loss is unbounded and the claim ``PureDP(0.01)`` is false.

For each sample size (outputs per dataset) the script measures, as the median over repeats:

* sampling both datasets through ``dpaudit.draw``;
* one trial of ``HockeyStickTester.test`` (both directions, one classifier);
* the same trial done DP-Auditorium's way, implemented here from paper 000 only (Lemma 4.9,
  Alg. 5, Prop. 4.11/4.12): the weighted mixture ``1/(1+e^eps) P x {1} + e^eps/(1+e^eps) Q x {0}``
  is built by keeping the first ``1/(1+e^eps)`` of the P samples and the last
  ``e^eps/(1+e^eps)`` of the Q samples; the first half of each sample array trains and the
  second half tests (no shuffling); an MLP of three Dense(12, relu) layers and a logit is trained
  with the logistic loss, Adam (lr 1e-2), 2 epochs, batch 100 (in PyTorch); the test accuracy
  gets a Hoeffding term ``sqrt(ln(1/beta) / (2 n_test))`` and ``H >= (1+e^eps)(acc - term) - e^eps``.
  It is run twice, once per direction, each at failure probability ``beta`` (as DP-Auditorium
  does; dpaudit's trial spends ``beta`` over both directions).

and prints both lower bounds next to the exact divergences, computed by numerical integration.

Run: ``python benchmarks/hockey_stick.py`` (defaults: ``--samples 50000 500000 --repeats 3
--threads 1``).
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import time

import numpy as np
import torch
from scipy import stats

import dpaudit
from dpaudit import ClassifierHockeyStick, HockeyStickTester, Mechanism, PureDP
from dpaudit.mechanisms import draw

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


# --------------------------------------------------------------------------- benchmark
def run(sizes, repeats, beta, threads):
    if threads:
        torch.set_num_threads(threads)
    mech = NonDPLaplace1(EPS)
    claim = PureDP(EPS)
    tester = HockeyStickTester(ClassifierHockeyStick(device="cpu"))
    # Exact divergences of P = Lap(1, 2/eps) and Q = Lap(0.5, 1/eps).
    exact_fwd = exact_hockey_stick(1.0, 2.0 / EPS, 0.5, 1.0 / EPS, EPS)
    exact_rev = exact_hockey_stick(0.5, 1.0 / EPS, 1.0, 2.0 / EPS, EPS)

    # Warm-up (torch initialisation) so the first timed trial is not penalised.
    warm = np.random.default_rng(0)
    tester.test(draw(mech, D0, 2000, warm), draw(mech, D1, 2000, warm), claim, beta=beta, rng=0)
    dp_auditorium_lower_bound(warm.laplace(size=(2000, 1)), warm.laplace(size=(2000, 1)), EPS, beta, 0)

    rows = []
    for n in sizes:
        t_sample, t_ours, t_theirs = [], [], []
        ours_fwd, ours_rev, theirs_fwd, theirs_rev, ours_violation, theirs_violation = [], [], [], [], [], []
        for rep in range(repeats):
            rng = np.random.default_rng([n, rep])
            t0 = time.perf_counter()
            x0 = draw(mech, D0, n, rng)
            x1 = draw(mech, D1, n, rng, output_dim=x0.shape[1])
            t1 = time.perf_counter()
            outcome = tester.test(x0, x1, claim, beta=beta, rng=rep)
            t2 = time.perf_counter()
            fwd = dp_auditorium_lower_bound(x0, x1, EPS, beta, seed=2 * rep)
            rev = dp_auditorium_lower_bound(x1, x0, EPS, beta, seed=2 * rep + 1)
            t3 = time.perf_counter()
            t_sample.append(t1 - t0)
            t_ours.append(t2 - t1)
            t_theirs.append(t3 - t2)
            ours_fwd.append(outcome.bounds[0].lower)
            ours_rev.append(outcome.bounds[1].lower)
            theirs_fwd.append(fwd)
            theirs_rev.append(rev)
            ours_violation.append(outcome.violation)
            theirs_violation.append(max(fwd, rev) > claim.delta)
        med = statistics.median
        rows.append(
            {
                "n": n,
                "sample_s": med(t_sample),
                "ours_s": med(t_ours),
                "ours_rate": 2 * n / med(t_ours),
                "ours_fwd": med(ours_fwd),
                "ours_rev": med(ours_rev),
                "ours_detect": sum(ours_violation),
                "theirs_s": med(t_theirs),
                "theirs_rate": 2 * n / med(t_theirs),
                "theirs_fwd": med(theirs_fwd),
                "theirs_rev": med(theirs_rev),
                "theirs_detect": sum(theirs_violation),
            }
        )
    return rows, exact_fwd, exact_rev


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
    args = parser.parse_args(argv)

    rows, exact_fwd, exact_rev = run(args.samples, args.repeats, args.beta, args.threads)
    print(
        f"dpaudit {dpaudit.__version__}, torch {torch.__version__} ({torch.get_num_threads()} threads), "
        f"numpy {np.__version__}, Python {platform.python_version()}, {platform.machine()} CPU"
    )
    print(
        f"NonDPLaplace1, eps = {EPS}, D0 = [1.0], D1 = [1.0, 0.0]: P = Lap(1, {2 / EPS:g}), "
        f"Q = Lap(0.5, {1 / EPS:g}); claim {PureDP(EPS).describe()}; beta = {args.beta} per trial; "
        f"median of {args.repeats} repeats"
    )
    print(f"exact H_e^eps: P||Q = {exact_fwd:.4f}, Q||P = {exact_rev:.4f} (numerical integration)")
    print()
    print(
        "| n per dataset | sampling (s) | dpaudit trial (s) | dpaudit samples/s | dpaudit lower P‖Q / Q‖P "
        "| DP-Auditorium-style trial (s) | its samples/s | its lower P‖Q / Q‖P | exact P‖Q / Q‖P "
        "| detections dpaudit / DPA-style |"
    )
    print("|---:|---:|---:|---:|---|---:|---:|---|---|---|")
    for r in rows:
        print(
            f"| {r['n']:,} | {r['sample_s']:.3f} | {r['ours_s']:.2f} | {r['ours_rate']:,.0f} "
            f"| {r['ours_fwd']:.4f} / {r['ours_rev']:.4f} | {r['theirs_s']:.2f} | {r['theirs_rate']:,.0f} "
            f"| {r['theirs_fwd']:.4f} / {r['theirs_rev']:.4f} | {exact_fwd:.4f} / {exact_rev:.4f} "
            f"| {r['ours_detect']}/{args.repeats} / {r['theirs_detect']}/{args.repeats} |"
        )


if __name__ == "__main__":
    main()

"""Reproducer: Opacus 1.6.0 `PrivacyEngine.make_private` divides by the private dataset size (dpaudit row `opacus.make_private`).

Standalone: needs only opacus (and torch) and NumPy, without dpaudit; in a fresh environment::

    pip install opacus==1.6.0 torch==2.13.0 numpy

Run ``python reproducers/opacus_make_private.py [N]``
(N runs per dataset, default 2000). Written by hand (library_reproducers.py has no template for this row and leaves it alone) in the style of the reproducers that
benchmarks/library_reproducers.py generates (its templates cover adversarial inputs, not this
scale event); see docs/library_audits.md and Re:cord-play's issue meta-pytorch/opacus#571.
"""

import math
import sys
import warnings

import numpy as np
import torch
from opacus import PrivacyEngine
from opacus.accountants.utils import get_noise_multiplier
from torch.utils.data import DataLoader, TensorDataset

warnings.simplefilter("ignore")  # Opacus's notices (secure RNG off, full backward hooks)
torch.set_num_threads(1)
EPSILON, DELTA = 1.0, 1e-05
SIGMA = get_noise_multiplier(target_epsilon=EPSILON, target_delta=DELTA, sample_rate=1.0, steps=1, accountant="rdp")

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
D0 = [[0.0, 0.0, 0.0]]
D1 = [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
THRESHOLD = 18.0 * (SIGMA / 2) ** 2  # about P[chi2_6 > 18] ~ 0.006 at D1's noise scale; P[chi2_6 > 4.5] ~ 0.6 at D0's
SET_IN_WORDS = f"outputs whose squared norm exceeds {THRESHOLD:.4g}"


def trainer(records, seed):
    """make_private on ``records`` (x_1, x_2, label), as a user calls it; returns (step(), expected_batch_size)."""
    arr = np.asarray(records, dtype=float)
    data = TensorDataset(torch.tensor(arr[:, :-1], dtype=torch.float32), torch.tensor(arr[:, -1], dtype=torch.long))
    model = torch.nn.Linear(2, 2)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    module, optimizer, loader = PrivacyEngine().make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=1.0),
        data_loader=DataLoader(data, batch_size=10), noise_multiplier=SIGMA, max_grad_norm=1.0,
        poisson_sampling=True, noise_generator=torch.Generator().manual_seed(seed))
    params = [p for p in module.parameters() if p.requires_grad]

    def step():
        """One DP-SGD step from parameters 0; the 6 trained parameters."""
        with torch.no_grad():
            for p in params:
                p.zero_()
        for x, y in loader:
            optimizer.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(module(x), y).backward()
            optimizer.step()
        return torch.cat([p.detach().reshape(-1) for p in params]).numpy().astype(float)

    return step, optimizer.expected_batch_size


def in_set(y):
    return float(np.sum(y * y)) > THRESHOLD


def kl(a, b):
    a = min(max(a, 0.0), 1.0)
    out = 0.0
    if a > 0:
        out += a * math.log(a / b)
    if a < 1:
        out += (1 - a) * math.log((1 - a) / (1 - b))
    return out


def upper(k, n, beta):
    """Chernoff-KL upper confidence bound on a binomial proportion (holds with prob. >= 1 - beta)."""
    if k == n:
        return 1.0
    lo, hi = k / n, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if n * kl(k / n, mid) <= math.log(1 / beta) else (lo, mid)
    return hi


def lower(k, n, beta):
    """Chernoff-KL lower confidence bound on a binomial proportion."""
    return 1.0 - upper(n - k, n, beta)


def count(data, seed):
    step, divisor = trainer(data, seed)
    return sum(bool(in_set(step())) for _ in range(N)), divisor


def main():
    (h0, b0), (h1, b1) = count(D0, 0), count(D1, 1)
    beta = 0.01
    lo, hi = lower(h0, N, beta / 2), upper(h1, N, beta / 2)
    certified = lo - math.exp(EPSILON) * hi
    print(f"library: Opacus 1.6.0; relation: add/remove of one example (the sampled Gaussian mechanism Opacus "
          f"accounts); claim: ({EPSILON:g}, {DELTA:g})-DP (noise_multiplier {SIGMA:.4g} from get_noise_multiplier, "
          f"sample_rate 1, 1 step)")
    print(f"expected_batch_size chosen by make_private: {b0} on D0, {b1} on D1 (noise std per parameter "
          f"{SIGMA / b0:.4g} vs {SIGMA / b1:.4g})")
    print(f"set S: {SET_IN_WORDS}")
    print(f"D0 = {D0}: {h0}/{N} outputs in S (frequency {h0 / N:.4g})")
    print(f"D1 = {D1}: {h1}/{N} outputs in S (frequency {h1 / N:.4g})")
    print(f"certified (confidence 0.99): P[S | D0] >= {lo:.4g}, P[S | D1] <= {hi:.4g}, "
          f"so delta >= {certified:.4g} at epsilon {EPSILON:g}")
    if certified > DELTA:
        print(f"VERDICT: VIOLATION: P[S | D0] - e^eps P[S | D1] >= {certified:.4g} > delta = {DELTA:g}")
    else:
        print(f"VERDICT: NOT REPRODUCED at N = {N} (certified {certified:.4g} <= delta = {DELTA:g}); try a larger N")
    print()
    print("--- text for the tracker ---")
    print("Opacus 1.6.0, PrivacyEngine.make_private(module=Linear(2, 2) from parameters 0, optimizer=SGD(lr=1), "
          "data_loader=DataLoader(dataset, batch_size=10), noise_multiplier=get_noise_multiplier(1, 1e-5, "
          "sample_rate=1, steps=1), max_grad_norm=1, poisson_sampling=True); one step (cross-entropy, mean); "
          "the 6 trained parameters are released.")
    print(f"Relation: add/remove of one example (the sampled Gaussian mechanism's analysis, which Opacus's "
          f"accountants implement). Claim: ({EPSILON:g}, {DELTA:g})-DP.")
    print(f"Neighbouring pair: D0 = {D0}, D1 = {D1}.")
    print("Expected: for every output set S, P[S | D0] <= e^eps P[S | D1] + delta and vice versa.")
    print(f"Observed: S = {SET_IN_WORDS}: {h0}/{N} on D0, {h1}/{N} on D1 "
          f"(P[S | D0] - e^eps P[S | D1] >= {certified:.4g} with confidence 0.99).")
    print("Cause: known (meta-pytorch/opacus#571, open). opacus/privacy_engine.py, PrivacyEngine.make_private: "
          "sample_rate = 1 / len(data_loader); expected_batch_size = int(len(data_loader.dataset) * sample_rate), "
          "the divisor DPOptimizer.scale_grad applies to the noisy clipped sum: it is the private dataset size, "
          "so neighbours differ in the noise's scale (1/N vs 1/(N+1)). Reproducer: reproducers/opacus_make_private.py")
    print("Reproduce: python " + sys.argv[0] + " " + str(N))


if __name__ == "__main__":
    main()

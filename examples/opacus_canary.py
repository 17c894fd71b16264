"""Black-box audit of DP-SGD (Opacus) on scikit-learn's digits, from canary losses.

Many short DP-SGD training runs of a logistic-regression model (odd vs even digit) on a fixed
subset of the digits data set (8x8 images, shipped with scikit-learn): half of the runs *with*
one canary record added to the training set, half *without*. The canary is an out-of-distribution
record (ink only on pixels that are blank in every digit), so its loss moves when it is trained
on. The only thing the auditor sees is the final model's loss on the canary in each run —
black-box scores — and ``dpaudit.scores`` turns the two samples into lower confidence bounds on
epsilon and on the Gaussian-DP mu, which are set against the accountant's epsilon (an upper bound).

Every run uses the same initial weights (the DP guarantee holds for any fixed initialisation),
Poisson sampling at rate ``q = batch_size / num_train`` with Opacus' ``DPDataLoader`` (``q = 1``
by default: every record in every step), per-example clipping to ``max_grad_norm`` and Gaussian
noise of multiplier ``sigma``. The dataset with the canary has one
record more; the sampling rate is the same in both worlds (add/remove neighbouring).

Run (fuller settings: 2 x 1000 runs of 10 full-batch steps, a few minutes on one CPU core)::

    python examples/opacus_canary.py

and with small settings (a few seconds), as the tests do::

    python examples/opacus_canary.py --runs 20 --num-train 50 --batch-size 50 --epochs 2

With ``--batch-size`` below ``--num-train`` the runs use Poisson subsampling; the final model
then hides in which steps the canary took part and the black-box audit gets much weaker than the
accountant's bound, which assumes an adversary who sees every step.

The audit is a lower bound from the final model only; the accountant's epsilon covers an
adversary who sees every intermediate model, so a large gap is expected (paper 001 §9.1;
Nasr et al. 2023).
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings

import numpy as np


def _load_data(num_train: int, seed: int):
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(y))[:num_train]
    # Binary task: is the digit odd? (One logit, so the canary's effect and the noise act on the
    # same coordinate of the output the loss is computed from.)
    return (x[order] / 16.0).astype(np.float32), (y[order] % 2).astype(np.float32)


DEAD_PIXELS = (0, 32, 39)  # pixels that are 0 in every image of the digits data set


def _canary(value: float = 4.0):
    """An image lit only on the digits' dead pixels, labelled 1 ("odd").

    No real record has ink there, so the other records' gradients never touch the weights of
    these pixels: the canary's loss moves only with its own clipped gradient, the noise, and the
    bias. Black-box all the same — the auditor only reads the model's loss on this input.
    """
    x = np.zeros((1, 64), dtype=np.float32)
    x[0, list(DEAD_PIXELS)] = value
    return x, np.array([1.0], dtype=np.float32)


def train_once(x, y, canary_x, canary_y, *, include_canary: bool, sample_rate: float, epochs: int,
               noise_multiplier: float, max_grad_norm: float, lr: float, init_state, seed: int):
    """One DP-SGD run with Opacus; returns (loss of the final model on the canary, privacy engine)."""
    import torch
    from opacus import PrivacyEngine
    from opacus.data_loader import DPDataLoader

    if include_canary:
        x = np.concatenate([x, canary_x])
        y = np.concatenate([y, canary_y])
    data = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    gen = torch.Generator().manual_seed(seed)
    loader = DPDataLoader(data, sample_rate=sample_rate, generator=gen)
    model = torch.nn.Linear(64, 1)
    model.load_state_dict(init_state)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    engine = PrivacyEngine(accountant="prv")
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=noise_multiplier,
        max_grad_norm=max_grad_norm, poisson_sampling=False,
        noise_generator=torch.Generator().manual_seed(seed + 1),
    )
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for _ in range(epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            if len(xb) == 0:  # an empty Poisson batch: the step still adds noise
                loss = sum((p * 0.0).sum() for p in model.parameters())
            else:
                loss = loss_fn(model(xb)[:, 0], yb)
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        score = loss_fn(model(torch.from_numpy(canary_x))[:, 0], torch.from_numpy(canary_y)).item()
    return score, engine


def run_experiment(*, runs: int = 1000, num_train: int = 200, batch_size: int = 200, epochs: int = 10,
                   noise_multiplier: float = 3.0, max_grad_norm: float = 1.0, lr: float = 5.0,
                   delta: float = 1e-5, confidence: float = 0.95, seed: int = 0, verbose: bool = True) -> dict:
    """Train ``runs`` models with and ``runs`` without the canary, audit the canary losses.

    Returns a JSON-serialisable dictionary: settings, the accountant's epsilon (Opacus PRV and
    dpaudit's dp_accounting-based profile), the audit's epsilon/mu lower bounds (histogram,
    threshold baseline, GDP audit), wall time.
    """
    import torch

    from dpaudit.privacy.profiles import SubsampledGaussianProfile
    from dpaudit.scores import gdp_audit, histogram_audit, threshold_audit

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    x, y = _load_data(num_train, seed)
    cx, cy = _canary()
    q = batch_size / num_train
    torch.manual_seed(seed)
    init_state = {k: v.clone() for k, v in torch.nn.Linear(64, 1).state_dict().items()}
    seeds = np.random.SeedSequence(seed).generate_state(2 * runs, dtype=np.uint32).astype(np.int64)
    scores = {True: [], False: []}
    engine = None
    for r in range(runs):
        for j, include in enumerate((True, False)):
            s, engine = train_once(
                x, y, cx, cy, include_canary=include, sample_rate=q, epochs=epochs,
                noise_multiplier=noise_multiplier, max_grad_norm=max_grad_norm, lr=lr,
                init_state=init_state, seed=int(seeds[2 * r + j]),
            )
            scores[include].append(s)
        if verbose and (r + 1) % max(1, runs // 10) == 0:
            print(f"  trained {2 * (r + 1)} of {2 * runs} models ({time.perf_counter() - t0:.0f} s)", flush=True)
    train_seconds = time.perf_counter() - t0
    # Members have *lower* loss; the audits handle either orientation.
    p = -np.asarray(scores[True])
    qq = -np.asarray(scores[False])
    steps = epochs * round(1.0 / q)
    eps_opacus = float(engine.accountant.get_epsilon(delta))
    profile = SubsampledGaussianProfile(noise_multiplier, q, steps)
    eps_pld = profile.epsilon(delta)
    mu_pld = profile.gdp_mu()
    hist = histogram_audit(p, qq, confidence=confidence, rng=seed)
    thr = threshold_audit(p, qq, confidence=confidence, rng=seed + 1)
    gdp = gdp_audit(p, qq, confidence=confidence, rng=seed + 2)
    return {
        "settings": {
            "runs_per_side": runs, "num_train": num_train, "batch_size": batch_size, "sample_rate": q,
            "epochs": epochs, "steps": steps, "noise_multiplier": noise_multiplier,
            "max_grad_norm": max_grad_norm, "lr": lr, "delta": delta, "confidence": confidence, "seed": seed,
        },
        "accountant": {"opacus_prv_epsilon": eps_opacus, "dp_accounting_pld_epsilon": eps_pld, "gdp_mu": mu_pld},
        "audit": {
            "histogram_epsilon_lower_bound": hist.epsilon_lower_bound(delta),
            "histogram_epsilon_source": hist.epsilon_source(delta),
            "histogram_tv_lower_bound": hist.tv_lower_bound,
            "histogram_mu_lower_bound": hist.mu_lower_bound,
            "threshold_epsilon_lower_bound": thr.epsilon_lower_bound(delta),
            "threshold_mu_lower_bound": thr.mu_lower_bound,
            "gdp_mu_lower_bound": gdp.mu_lower_bound,
            "gdp_epsilon_of_mu": gdp.epsilon(delta),
            "tv_estimate": hist.tv_estimate,
        },
        "scores": {
            "with_canary_mean_loss": float(np.mean(scores[True])), "without_canary_mean_loss": float(np.mean(scores[False])),
        },
        "seconds": {"training": train_seconds, "total": time.perf_counter() - t0},
    }


def _print(result: dict) -> None:
    s, a, au = result["settings"], result["accountant"], result["audit"]
    print(
        f"DP-SGD (Opacus) on digits: {s['num_train']} records, q={s['sample_rate']:.3g}, {s['steps']} steps, "
        f"sigma={s['noise_multiplier']:g}, C={s['max_grad_norm']:g}, lr={s['lr']:g}; "
        f"{s['runs_per_side']} runs with and {s['runs_per_side']} without the canary"
    )
    print(f"mean canary loss: with {result['scores']['with_canary_mean_loss']:.4f}, "
          f"without {result['scores']['without_canary_mean_loss']:.4f}")
    d = s["delta"]
    print(f"accountant epsilon at delta={d:g} (upper bound): Opacus PRV {a['opacus_prv_epsilon']:.3f}, "
          f"dp_accounting PLD {a['dp_accounting_pld_epsilon']:.3f}; smallest GDP mu dominating it {a['gdp_mu']:.3f}")
    print(f"audit lower bounds at confidence {s['confidence']:g}, delta={d:g}:")
    print(f"  histogram (paper 001)      eps >= {au['histogram_epsilon_lower_bound']:.3f}  "
          f"[{au['histogram_epsilon_source']}]  TV >= {au['histogram_tv_lower_bound']:.3f}  mu >= {au['histogram_mu_lower_bound']:.3f}")
    print(f"  threshold MIA (CP)         eps >= {au['threshold_epsilon_lower_bound']:.3f}  mu >= {au['threshold_mu_lower_bound']:.3f}")
    print(f"  GDP audit (Nasr et al.)    mu >= {au['gdp_mu_lower_bound']:.3f}  (eps of that mu: {au['gdp_epsilon_of_mu']:.3f}, "
          "valid only for a Gaussian trade-off curve)")
    print(f"time: {result['seconds']['training']:.1f} s training, {result['seconds']['total']:.1f} s total")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000, help="training runs per side (with / without the canary)")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--num-train", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=200, help="expected Poisson batch size (= num-train: every record in every step)")
    parser.add_argument("--noise", type=float, default=3.0, help="noise multiplier sigma")
    parser.add_argument("--lr", type=float, default=5.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    if args.runs < 2:
        parser.error(f"--runs must be >= 2, got {args.runs}")
    result = run_experiment(
        runs=args.runs, num_train=args.num_train, batch_size=args.batch_size, epochs=args.epochs,
        noise_multiplier=args.noise, lr=args.lr, delta=args.delta, seed=args.seed, verbose=not args.json,
    )
    if args.json:
        print(json.dumps(result, indent=2, default=lambda v: str(v) if isinstance(v, float) and not math.isfinite(v) else v))
    else:
        _print(result)
    return result


if __name__ == "__main__":
    main()

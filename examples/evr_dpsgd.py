"""Estimate–Verify–Release (EVR) end to end for DP-SGD (Opacus) on scikit-learn's digits.

For a target ``(eps_T, delta_T)`` and a fixed training schedule (epochs, expected batch size,
Poisson sampling rate ``q``, hence ``steps``), the noise multiplier sigma of DP-SGD is chosen three
ways and a small Opacus model (multinomial logistic regression, 64 -> 10) is trained with each:

* **certified** — the smallest sigma whose *certified upper bound*
  :func:`dpaudit.accounting.get_epsilon` (refined pessimistic PLD) at ``delta_T`` is at most
  ``eps_T`` (bisection on sigma). Statement: ``(eps_cert, delta_T)``-DP, ``eps_cert <= eps_T``.
* **opacus-rdp** — Opacus' default accountant:
  ``opacus.accountants.utils.get_noise_multiplier(..., accountant="rdp")``.
  Statement: ``(eps_rdp, delta_T)``-DP with Opacus' RDP epsilon ``eps_rdp <= eps_T``.
* **evr** — paper 004's EVR (§3, Alg. 1). With the verifier's smoothing factor ``tau`` and proved
  false-positive rate ``beta``, a release of a verified ``(eps, delta_est)`` is
  ``(eps, delta_est / tau + beta)``-DP (dpaudit's ``ReleaseResult.delta_guarantee``). The rule
  used here makes that statement meet the target exactly::

      delta_est = tau * (delta_T - beta)           (so delta_est / tau + beta = delta_T)
      sigma_evr = smallest sigma with  eps_hat(sigma, delta_est) <= eps_T   (bisection)

  where ``eps_hat`` is a tight but *uncertified* estimate (default: prv_accountant's point
  estimate, paper 004's "FFT estimate"; ``--estimator pld-optimistic`` uses dp_accounting's
  optimistic PLD on a coarse grid, a deliberately poor estimate that the verifier should reject).
  Then each training run is a :func:`dpaudit.accounting.release` of a
  :class:`~dpaudit.accounting.VerifiableMechanism` wrapping the training function with the
  composition ``Composition.dpsgd(sigma_evr, q, steps)`` and the estimate ``(eps_T, delta_est)``:
  the Monte Carlo verifier runs with fresh randomness and the model is trained only if it accepts;
  on rejection nothing is released (``⊥``, no accuracy).

Opacus uses Poisson sampling (``poisson_sampling=True``, the default of ``make_private``) with
``q = 1 / len(data_loader)`` and ``int(1 / q)`` steps per epoch; the script takes ``q`` and the
step count from Opacus' own data loader and checks that training took exactly the accounted
number of steps, so ``Composition.dpsgd(sigma, q, steps)`` describes what ran.

Run (the full setting, a few minutes on 2 CPU cores)::

    python examples/evr_dpsgd.py --json evr.json

and quickly (under a minute)::

    python examples/evr_dpsgd.py --quick

The verifier's randomness is fresh OS entropy unless ``--verifier-seed`` is given; a recorded
verifier seed voids the EVR guarantee (the verifier's coins must stay secret) and exists only
for tests and reproducible debugging.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import time
import warnings

import numpy as np

#: the settings of the full run and of ``--quick``
FULL = dict(epsilon=1.0, delta=1e-5, epochs=20, batch_size=64, lr=0.5, max_grad_norm=1.0, seeds=10,
            tau=0.9, false_positive_rate=1e-7)
QUICK = dict(FULL, epochs=5, seeds=3)
ESTIMATORS = ("prv", "pld-optimistic")


# ----------------------------------------------------------------------------------------------
# data and schedule
# ----------------------------------------------------------------------------------------------
def load_data(seed: int = 0, test_fraction: float = 0.2):
    """scikit-learn's digits (1797 8x8 images, 10 classes), scaled to [0, 1] and split.

    Parameters
    ----------
    seed : int
        Seed of the stratified train/test split.
    test_fraction : float
        Fraction of the records held out for testing.

    Returns
    -------
    tuple of numpy.ndarray
        ``(x_train, y_train, x_test, y_test)``; x float32 of shape (n, 64), y int64 of shape (n,).
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    xtr, xte, ytr, yte = train_test_split((x / 16.0).astype(np.float32), y.astype(np.int64),
                                          test_size=test_fraction, random_state=seed, stratify=y)
    return xtr, ytr, xte, yte


def opacus_schedule(num_train: int, batch_size: int, epochs: int) -> tuple[float, int]:
    """Sampling rate and number of steps of Opacus' Poisson-sampled training.

    Opacus' ``make_private(poisson_sampling=True)`` replaces a data loader of ``L`` batches by a
    ``DPDataLoader`` with ``q = 1 / L`` and ``int(1 / q)`` batches per epoch.

    Parameters
    ----------
    num_train : int
        Training records.
    batch_size : int
        Batch size of the plain data loader (the expected Poisson batch size is about this).
    epochs : int
        Passes over the data loader.

    Returns
    -------
    (float, int)
        ``(q, steps)``.
    """
    num_batches = math.ceil(num_train / batch_size)
    q = 1.0 / num_batches
    return q, epochs * int(1.0 / q)


# ----------------------------------------------------------------------------------------------
# choosing the noise multiplier
# ----------------------------------------------------------------------------------------------
def smallest_sigma(epsilon_of_sigma, target: float, lo: float, hi: float, rtol: float = 1e-4,
                   max_iter: int = 60) -> tuple[float, float, int]:
    """Smallest sigma (to relative tolerance ``rtol``) with ``epsilon_of_sigma(sigma) <= target``.

    Bisection in log sigma for a function decreasing in sigma. The bracket is widened as needed.
    The returned sigma is the upper end of the final bracket, so it satisfies the target.

    Parameters
    ----------
    epsilon_of_sigma : callable
        ``sigma -> eps``, non-increasing.
    target : float
        Target eps.
    lo, hi : float
        Initial bracket, 0 < lo < hi.
    rtol : float
        Stop when ``hi / lo - 1 <= rtol``.
    max_iter : int
        Cap on the number of evaluations in the widening phase.

    Returns
    -------
    (float, float, int)
        ``(sigma, epsilon_of_sigma(sigma), evaluations)``.

    Raises
    ------
    ValueError
        If no bracket is found within ``max_iter`` widenings.
    """
    e_hi = epsilon_of_sigma(hi)
    evals = 1
    while e_hi > target:
        if evals > max_iter:
            raise ValueError(f"no sigma up to {hi:g} meets eps <= {target:g}")
        lo, hi = hi, hi * 1.5
        e_hi = epsilon_of_sigma(hi)
        evals += 1
    e_lo = epsilon_of_sigma(lo)
    evals += 1
    while e_lo <= target:
        if evals > max_iter:
            raise ValueError(f"eps <= {target:g} even at sigma = {lo:g}: no lower bracket")
        hi, e_hi, lo = lo, e_lo, lo / 1.5
        e_lo = epsilon_of_sigma(lo)
        evals += 1
    while hi / lo - 1.0 > rtol:
        mid = math.sqrt(lo * hi)
        e = epsilon_of_sigma(mid)
        evals += 1
        if e <= target:
            hi, e_hi = mid, e
        else:
            lo = mid
    return hi, e_hi, evals


def certified_epsilon(sigma: float, q: float, steps: int, delta: float) -> float:
    """dpaudit's certified upper bound on eps(delta) of ``steps`` DP-SGD steps (nats)."""
    from dpaudit.accounting import Composition, get_epsilon

    res = get_epsilon(Composition.dpsgd(sigma, q, steps), delta)
    if res.kind != "upper_bound":
        raise RuntimeError(f"get_epsilon did not certify sigma={sigma:g}: {res.statement()}")
    return float(res.epsilon)


def estimate_epsilon(sigma: float, q: float, steps: int, delta: float, estimator: str = "prv") -> float:
    """A tight but uncertified estimate of eps(delta) of DP-SGD, the "E" of EVR.

    Parameters
    ----------
    sigma, q : float
        Noise multiplier and Poisson sampling rate.
    steps : int
        Number of steps.
    delta : float
        The delta at which eps is estimated.
    estimator : {'prv', 'pld-optimistic'}
        ``prv``: prv_accountant's point estimate (``eps_error=1e-2``; neither its lower nor its
        upper end). ``pld-optimistic``: dp_accounting's optimistic PLD (privacy buckets) with
        discretisation 1e-3, which for hundreds of steps underestimates eps badly.

    Returns
    -------
    float
        The estimate (nats).
    """
    from dpaudit.accounting import Composition, reference

    comp = Composition.dpsgd(sigma, q, steps)
    if estimator == "prv":
        return float(reference.epsilon("prv", comp, delta, eps_error=1e-2)["epsilon"])
    if estimator == "pld-optimistic":
        return float(reference.epsilon("pld", comp, delta, pessimistic=False,
                                       value_discretization_interval=1e-3)["epsilon"])
    raise ValueError(f"estimator must be one of {', '.join(ESTIMATORS)}, got {estimator!r}")


def evr_delta_estimate(delta_target: float, tau: float, false_positive_rate: float) -> float:
    """The delta to estimate at so that EVR's released statement has delta ``delta_target``.

    ``ReleaseResult.delta_guarantee = delta_est / tau + beta``; solving for equality gives
    ``delta_est = tau * (delta_target - beta)`` (times ``1 - 1e-12`` against rounding).

    Raises
    ------
    ValueError
        If ``beta >= delta_target`` (nothing is left for the mechanism) or ``tau`` not in (0, 1].
    """
    if not 0.0 < tau <= 1.0:
        raise ValueError(f"tau must be in (0, 1], got {tau!r}")
    if not 0.0 < false_positive_rate < delta_target:
        raise ValueError(f"false_positive_rate must be in (0, delta_target={delta_target:g}), "
                         f"got {false_positive_rate!r}")
    # (1 - 1e-12): so that floating-point rounding of delta_est / tau + beta cannot exceed the target
    return tau * (delta_target - false_positive_rate) * (1.0 - 1e-12)


def choose_noise(*, epsilon: float, delta: float, q: float, steps: int, tau: float = 0.9,
                 false_positive_rate: float = 1e-7, estimator: str = "prv", rtol: float = 1e-4) -> dict:
    """The noise multiplier of each method for a target (eps, delta) and a fixed schedule.

    Parameters
    ----------
    epsilon, delta : float
        Target (eps_T in nats, delta_T).
    q : float
        Poisson sampling rate.
    steps : int
        Number of DP-SGD steps.
    tau, false_positive_rate : float
        EVR verifier parameters (smoothing factor, proved false-positive bound beta).
    estimator : {'prv', 'pld-optimistic'}
        EVR's estimate (:func:`estimate_epsilon`).
    rtol : float
        Relative tolerance of every bisection on sigma (Opacus' is on eps: ``rtol * epsilon``).

    Returns
    -------
    dict
        ``{"certified": {...}, "opacus-rdp": {...}, "evr": {...}}``, each with ``sigma``, the
        accountant's eps, the certified eps of that sigma at ``delta``, and ``seconds``.
    """
    from opacus.accountants import RDPAccountant
    from opacus.accountants.utils import get_noise_multiplier

    from dpaudit.accounting import Composition, reference

    out: dict = {}
    # Bracket from dp_accounting's RDP bound (milliseconds); certified eps <= RDP eps.
    t0 = time.perf_counter()
    rdp_eps = lambda s: reference.epsilon("rdp", Composition.dpsgd(s, q, steps), delta)["epsilon"]  # noqa: E731
    s_rdp, _, _ = smallest_sigma(rdp_eps, epsilon, 0.5, 5.0, rtol=1e-2)
    t_bracket = time.perf_counter() - t0

    t0 = time.perf_counter()
    s, e, n = smallest_sigma(lambda s: certified_epsilon(s, q, steps, delta), epsilon, 0.85 * s_rdp, s_rdp, rtol)
    out["certified"] = {"sigma": s, "epsilon": e, "delta": delta, "kind": "certified upper bound (dpaudit get_epsilon)",
                        "evaluations": n, "seconds": time.perf_counter() - t0 + t_bracket}

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "optimal order is the largest alpha" at Opacus' first sigma = 20
        s_op = float(get_noise_multiplier(target_epsilon=epsilon, target_delta=delta, sample_rate=q, steps=steps,
                                          accountant="rdp", epsilon_tolerance=rtol * epsilon))
        acc = RDPAccountant()
        acc.history = [(s_op, q, steps)]
        e_op = float(acc.get_epsilon(delta))
    out["opacus-rdp"] = {"sigma": s_op, "epsilon": e_op, "delta": delta, "kind": "Opacus RDP upper bound",
                         "seconds": time.perf_counter() - t0}

    t0 = time.perf_counter()
    d_est = evr_delta_estimate(delta, tau, false_positive_rate)
    s, e, n = smallest_sigma(lambda s: estimate_epsilon(s, q, steps, d_est, estimator), epsilon,
                             0.85 * s_rdp, 1.05 * s_rdp, rtol)
    out["evr"] = {"sigma": s, "epsilon": epsilon, "estimated_epsilon": e, "delta_estimate": d_est,
                  "kind": f"estimate ({estimator}), verified at release", "estimator": estimator,
                  "evaluations": n, "seconds": time.perf_counter() - t0}
    for row in out.values():
        row["certified_epsilon_at_target_delta"] = certified_epsilon(row["sigma"], q, steps, delta)
    return out


# ----------------------------------------------------------------------------------------------
# training
# ----------------------------------------------------------------------------------------------
def train_dpsgd(data, *, sigma: float, batch_size: int, epochs: int, lr: float, max_grad_norm: float,
                seed: int, expected_q: float | None = None, expected_steps: int | None = None) -> dict:
    """Train multinomial logistic regression with Opacus DP-SGD (Poisson sampling) and test it.

    Parameters
    ----------
    data : tuple
        ``(x_train, y_train, x_test, y_test)`` from :func:`load_data`.
    sigma : float
        Noise multiplier.
    batch_size, epochs : int
        Schedule (see :func:`opacus_schedule`).
    lr, max_grad_norm : float
        SGD learning rate and per-example clipping norm.
    seed : int
        Seeds the initial weights, the Poisson sampling and the noise.
    expected_q, expected_steps : optional
        When given, the run checks that Opacus used exactly this sampling rate and step count.

    Returns
    -------
    dict
        ``{"accuracy", "steps", "sample_rate", "seconds"}``.

    Raises
    ------
    RuntimeError
        If Opacus' sampling rate or step count differs from the expected (accounted) ones.
    """
    import torch
    from opacus import PrivacyEngine

    t0 = time.perf_counter()
    xtr, ytr, xte, yte = data
    torch.manual_seed(seed)
    model = torch.nn.Linear(xtr.shape[1], 10)
    ds = torch.utils.data.TensorDataset(torch.from_numpy(xtr), torch.from_numpy(ytr))
    loader = torch.utils.data.DataLoader(ds, batch_size=batch_size,
                                         generator=torch.Generator().manual_seed(seed + 1))
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus' "secure RNG turned off" and functorch notices
        engine = PrivacyEngine(accountant="rdp")
        model, opt, dp_loader = engine.make_private(
            module=model, optimizer=opt, data_loader=loader, noise_multiplier=sigma, max_grad_norm=max_grad_norm,
            poisson_sampling=True, noise_generator=torch.Generator().manual_seed(seed + 2))
    q = float(dp_loader.sample_rate)
    loss_fn = torch.nn.CrossEntropyLoss()
    steps = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(epochs):
            for xb, yb in dp_loader:
                opt.zero_grad()
                if len(xb) == 0:  # empty Poisson batch: the step still adds noise
                    loss = sum((p * 0.0).sum() for p in model.parameters())
                else:
                    loss = loss_fn(model(xb), yb)
                loss.backward()
                opt.step()
                steps += 1
    if expected_q is not None and not math.isclose(q, expected_q, rel_tol=1e-12):
        raise RuntimeError(f"Opacus sampled at q={q!r}, the accounting assumed {expected_q!r}")
    if expected_steps is not None and steps != expected_steps:
        raise RuntimeError(f"Opacus took {steps} steps, the accounting assumed {expected_steps}")
    with torch.no_grad():
        acc = float((model(torch.from_numpy(xte)).argmax(1).numpy() == yte).mean())
    return {"accuracy": acc, "steps": steps, "sample_rate": q, "seconds": time.perf_counter() - t0}


# ----------------------------------------------------------------------------------------------
# the experiment
# ----------------------------------------------------------------------------------------------
def run(*, epsilon: float = 1.0, delta: float = 1e-5, epochs: int = 20, batch_size: int = 64, lr: float = 0.5,
        max_grad_norm: float = 1.0, seeds: int = 10, seed: int = 0, tau: float = 0.9,
        false_positive_rate: float = 1e-7, estimator: str = "prv", verifier_seed: int | None = None,
        train: bool = True, rtol: float = 1e-4, verbose: bool = False) -> dict:
    """Choose sigma with each method, release/train, and collect the table.

    Parameters
    ----------
    epsilon, delta : float
        Target (eps_T, delta_T).
    epochs, batch_size : int
        Training schedule (fixed across methods).
    lr, max_grad_norm : float
        SGD learning rate and clipping norm.
    seeds : int
        Training runs per method (accuracy is averaged over them); EVR verifies before each.
    seed : int
        Master seed (data split, training seeds).
    tau, false_positive_rate : float
        Verifier parameters (rho and the offset are the paper's defaults).
    estimator : {'prv', 'pld-optimistic'}
        EVR's estimate.
    verifier_seed : int, optional
        Seed of the verifier (tests only; None = fresh OS entropy, as EVR requires).
    train : bool
        False: choose the noise and verify only (no model is trained; accuracy is None).
    rtol : float
        Relative tolerance of the bisections on sigma.
    verbose : bool
        Print progress.

    Returns
    -------
    dict
        JSON-serialisable: ``settings``, ``rows`` (one per method: sigma, accounting, statements,
        accuracies, releases), ``seconds``.
    """
    from dpaudit.accounting import Composition, VerifiableMechanism, release

    logging.getLogger().setLevel(logging.ERROR)  # dp_accounting's privacy-bucket warnings
    t_start = time.perf_counter()
    data = load_data(seed)
    q, steps = opacus_schedule(len(data[1]), batch_size, epochs)
    noise = choose_noise(epsilon=epsilon, delta=delta, q=q, steps=steps, tau=tau,
                         false_positive_rate=false_positive_rate, estimator=estimator, rtol=rtol)
    if verbose:
        for k, v in noise.items():
            print(f"  {k}: sigma={v['sigma']:.4f} ({v['seconds']:.1f} s)", flush=True)
    run_seeds = [int(s) for s in np.random.SeedSequence(seed).generate_state(seeds, dtype=np.uint32)]
    train_kw = dict(batch_size=batch_size, epochs=epochs, lr=lr, max_grad_norm=max_grad_norm,
                    expected_q=q, expected_steps=steps)
    rows = []
    for method in ("opacus-rdp", "certified", "evr"):
        info = noise[method]
        sigma = info["sigma"]
        row = {"method": method, "sigma": sigma, **{k: v for k, v in info.items() if k != "sigma"}}
        accs, releases, verify_s, train_s = [], [], 0.0, 0.0
        for rs in run_seeds:
            if method != "evr":
                if train:
                    r = train_dpsgd(data, sigma=sigma, seed=rs, **train_kw)
                    accs.append(r["accuracy"])
                    train_s += r["seconds"]
                continue
            fn = (lambda d, rng, _s=sigma: train_dpsgd(d, sigma=_s, seed=int(rng.integers(2**31)), **train_kw)) \
                if train else (lambda d, rng: None)
            mech = VerifiableMechanism(fn, Composition.dpsgd(sigma, q, steps), name=f"dpsgd(sigma={sigma:.4f})")
            vs = None if verifier_seed is None else verifier_seed + len(releases)
            rel = release(mech, data, (epsilon, info["delta_estimate"]), tau=tau,
                          false_positive_rate=false_positive_rate, rng=rs, verifier_rng=vs)
            verify_s += rel.verification.wall_seconds
            releases.append(rel.to_dict())
            if rel.released and train:
                accs.append(rel.output["accuracy"])
                train_s += rel.output["seconds"]
        if method == "evr":
            r0 = releases[0]
            row.update(
                released=sum(r["released"] for r in releases), verifications=len(releases),
                delta_guarantee=max(r["delta_guarantee"] for r in releases),
                delta_guarantee_tight=max(r["delta_guarantee_tight"] for r in releases),
                false_positive_rate=r0["false_positive_rate"],
                verifier_samples=r0["verification"]["plan"]["num_samples"],
                verify_seconds=verify_s, releases=releases,
                statement=(f"({epsilon:g}, {max(r['delta_guarantee'] for r in releases):.4g})-DP "
                           f"[= delta_est/tau + beta = {info['delta_estimate']:.4g}/{tau:g} + {false_positive_rate:g}]"
                           if any(r["released"] for r in releases) else "nothing released (verifier rejected)"),
            )
            row["statement_delta"] = row["delta_guarantee"]
            row["statement_epsilon"] = epsilon
        else:
            row["statement"] = f"({info['epsilon']:.4g}, {delta:g})-DP [{info['kind']}]"
            row["statement_epsilon"], row["statement_delta"] = info["epsilon"], delta
        row["accuracies"] = accs
        row["accuracy_mean"] = float(np.mean(accs)) if accs else None
        row["accuracy_std"] = float(np.std(accs, ddof=1)) if len(accs) > 1 else None
        row["train_seconds"] = train_s
        rows.append(row)
        if verbose:
            print(f"  {method}: trained {len(accs)} model(s)", flush=True)
    return {
        "settings": {"epsilon": epsilon, "delta": delta, "epochs": epochs, "batch_size": batch_size,
                     "num_train": len(data[1]), "num_test": len(data[3]), "sample_rate": q, "steps": steps,
                     "lr": lr, "max_grad_norm": max_grad_norm, "seeds": seeds, "seed": seed, "tau": tau,
                     "rho": (1 + tau) / 2, "false_positive_rate": false_positive_rate, "estimator": estimator,
                     "verifier_seed": verifier_seed, "rtol": rtol, "model": "logistic regression 64->10, Opacus, Poisson sampling"},
        "rows": rows,
        "seconds": time.perf_counter() - t_start,
    }


def format_table(result: dict) -> str:
    """Markdown table of :func:`run`'s rows.

    Parameters
    ----------
    result : dict
        The return value of :func:`run`.

    Returns
    -------
    str
        One header, one separator and one line per method.
    """
    s = result["settings"]
    lines = ["| method | sigma | accountant's eps at its delta | certified eps of this sigma at delta_T | "
             "privacy statement | test accuracy (mean ± sd over seeds) | accounting / verification time |",
             "|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        if r["method"] == "evr":
            acct = f"{r['estimated_epsilon']:.4f} (estimate at delta_est={r['delta_estimate']:.4g})"
            t = (f"{r['seconds']:.1f} s + verify {r['verify_seconds'] / max(1, r['verifications']):.1f} s/release "
                 f"({r['verifier_samples']:,} samples), released {r['released']}/{r['verifications']}")
        else:
            acct = f"{r['epsilon']:.4f}"
            t = f"{r['seconds']:.1f} s"
        if r["accuracy_mean"] is None:
            accs = "n/a (nothing released)" if r["method"] == "evr" else "not trained"
        else:
            sd = "" if r["accuracy_std"] is None else f" ± {r['accuracy_std']:.3f}"
            accs = f"{r['accuracy_mean']:.3f}{sd} (n={len(r['accuracies'])})"
        lines.append(f"| {r['method']} | {r['sigma']:.4f} | {acct} | {r['certified_epsilon_at_target_delta']:.4f} | "
                     f"{r['statement']} | {accs} | {t} |")
    head = (f"target (eps, delta) = ({s['epsilon']:g}, {s['delta']:g}); {s['num_train']} training records, "
            f"q = {s['sample_rate']:.5f}, {s['steps']} steps ({s['epochs']} epochs); "
            f"verifier tau = {s['tau']:g}, rho = {s['rho']:g}, beta = {s['false_positive_rate']:g}")
    return head + "\n\n" + "\n".join(lines)


def main(argv=None) -> dict:
    """Command-line entry point (``python examples/evr_dpsgd.py --help``).

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default ``sys.argv[1:]``).

    Returns
    -------
    dict
        The result of :func:`run`.
    """
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fast run: 5 epochs, 3 seeds")
    p.add_argument("--epsilon", type=float, help=f"target eps (default {FULL['epsilon']})")
    p.add_argument("--delta", type=float, help=f"target delta (default {FULL['delta']})")
    p.add_argument("--epochs", type=int)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--lr", type=float)
    p.add_argument("--seeds", type=int, help="training runs per method")
    p.add_argument("--tau", type=float, help="verifier smoothing factor (default 0.9)")
    p.add_argument("--false-positive-rate", type=float, help="verifier's beta (default 1e-7)")
    p.add_argument("--estimator", choices=ESTIMATORS, default="prv", help="EVR's estimate (default prv)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--verifier-seed", type=int, default=None,
                   help="seed the verifier (testing only: voids the EVR guarantee)")
    p.add_argument("--no-train", action="store_true", help="choose noise and verify only")
    p.add_argument("--json", help="write the result to this file")
    a = p.parse_args(argv)
    cfg = dict(QUICK if a.quick else FULL)
    for k in ("epsilon", "delta", "epochs", "batch_size", "lr", "seeds", "tau", "false_positive_rate"):
        if getattr(a, k) is not None:
            cfg[k] = getattr(a, k)
    import torch

    torch.set_num_threads(1)
    result = run(**cfg, seed=a.seed, estimator=a.estimator, verifier_seed=a.verifier_seed,
                 train=not a.no_train, verbose=True)
    print(format_table(result))
    print(f"total {result['seconds']:.1f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)
    return result


if __name__ == "__main__":
    main()

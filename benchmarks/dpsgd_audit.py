"""One-run white-box audits of DP-SGD on digits: the reference implementation at accountant
epsilon 1, 2, 4, 8 (q = 1 and Poisson q = 0.05), next to the same bound on ideal Gaussian scores,
and the bug zoo (``dpaudit.dpsgd.VARIANTS``) at accountant epsilon 2.

For each cell: the accountant's epsilon (certified upper bound, delta = 1e-5), dpaudit's certified
one-run lower bound as a fraction of it, the two labelled estimates (fitted per-step mechanism
composed; histogram PLD composed), the training time with and without the canaries and the
audit's own time.

    python benchmarks/dpsgd_audit.py --canaries 1000,10000 --seeds 3
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np


def ideal_fraction(cfg, m: int, seed: int, delta: float, beta: float) -> float:
    """The one-run bound on ideal white-box observations of the claimed mechanism (every step's
    observation exactly N(participation, sigma^2), no model): what the real run is measured against."""
    from dpaudit.dpsgd import audit_run
    from dpaudit.dpsgd.reference import TrainingRun

    rng = np.random.default_rng([seed, 99])
    mask = rng.random(m) < 0.5
    part = (rng.random((cfg.steps, m)) < cfg.sampling_rate) & mask[None, :]
    obs = part + rng.normal(0.0, cfg.noise_multiplier, (cfg.steps, m))
    run = TrainingRun(observations=obs, mask=mask, sampled=part.sum(0), participation=part, config=cfg,
                      variant="ideal", seconds=0.0, train_accuracy=float("nan"))
    return audit_run(run, delta=delta, beta=beta, seed=seed).epsilon_lower_bound


def opacus_run(sigma: float, q: float, steps: int, m: int, seed: int):
    """One Opacus training (digits, 500 examples, MLP 64-32-10, Poisson sampling at q) with
    ``m`` OpacusCanaries; returns (the hook, seconds of training)."""
    import time
    import warnings

    import torch
    from opacus import PrivacyEngine

    from dpaudit.dpsgd import load_digits_task
    from dpaudit.dpsgd.opacus import OpacusCanaries

    warnings.filterwarnings("ignore")
    x, y = load_digits_task(num_train=500)
    data = torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y))
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.Tanh(), torch.nn.Linear(32, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    loader = torch.utils.data.DataLoader(data, batch_size=max(1, round(q * 500)))
    model, opt, loader = PrivacyEngine().make_private(module=model, optimizer=opt, data_loader=loader,
                                                      noise_multiplier=sigma, max_grad_norm=1.0, poisson_sampling=True)
    hook = OpacusCanaries(opt, canaries=m, sampling_rate=q, seed=seed)
    t = time.perf_counter()
    while len(hook.observations) < steps:
        for xb, yb in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            hook.step()
            if len(hook.observations) >= steps:
                break
    return hook, time.perf_counter() - t


def main(argv=None) -> int:
    logging.getLogger("absl").setLevel(logging.ERROR)
    from dpaudit.dpsgd import VARIANTS, DPSGDConfig, audit_run, noise_for_epsilon, train_with_canaries

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--canaries", default="1000,10000")
    ap.add_argument("--epsilons", default="1,2,4,8")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--beta", type=float, default=0.05)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "dpsgd_audit.md"))
    ap.add_argument("--opacus", action="store_true", help="also audit Opacus itself (OpacusCanaries) in every cell")
    args = ap.parse_args(argv)
    ms = [int(v) for v in args.canaries.split(",")]
    targets = [float(v) for v in args.epsilons.split(",")]
    settings = [(1.0, 10), (0.05, 200)]
    lines = ["# One-run white-box audits of DP-SGD (digits, MLP 64-32-10, 500 training examples)", "",
             f"`python benchmarks/dpsgd_audit.py --canaries {args.canaries} --epsilons {args.epsilons} --seeds {args.seeds}`; "
             f"delta = {args.delta:g}, beta = {args.beta:g}; medians over {args.seeds} seeds. "
             "`lb/acc`: certified one-run lower bound / accountant epsilon; `ideal`: the same bound on ideal observations "
             "of the claimed mechanism; estimates have no confidence statement.", "",
             "## The reference DP-SGD (control)", "",
             "| q, steps | sigma | accountant eps | canaries | lb | lb/acc | ideal lb/acc | real / ideal | estimate (fit) | "
             "estimate (PLD) | violated | train s (no canaries) | train s (canaries) | audit s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = []
    for q, T in settings:
        for target in targets:
            sigma = noise_for_epsilon(target, args.delta, q, T)
            cfg = DPSGDConfig(noise_multiplier=sigma, sampling_rate=q, steps=T)
            for m in ms:
                res = []
                for s in range(args.seeds):
                    base = train_with_canaries(cfg, canaries=2, seed=s).seconds
                    run = train_with_canaries(cfg, canaries=m, seed=s)
                    a = audit_run(run, delta=args.delta, beta=args.beta, seed=s)
                    ideal = ideal_fraction(cfg, m, s, args.delta, args.beta)
                    res.append((a, base, ideal))
                    print(f"q={q} T={T} eps={target} m={m} seed={s}: lb={a.epsilon_lower_bound:.3f} acc={a.accountant_epsilon:.3f} "
                          f"ideal={ideal:.3f} fit={a.epsilon_estimate_fit:.3f} pld={a.epsilon_estimate_pld:.3f} "
                          f"train={a.train_seconds:.1f}s base={base:.1f}s audit={a.audit_seconds:.1f}s", file=sys.stderr, flush=True)
                med = lambda f: float(np.median([f(r) for r in res]))  # noqa: E731
                acc = res[0][0].accountant_epsilon
                lb, ideal = med(lambda r: r[0].epsilon_lower_bound), med(lambda r: r[2])
                rows.append({"q": q, "steps": T, "sigma": sigma, "accountant": acc, "m": m, "lb": lb, "ideal": ideal,
                             "fit": med(lambda r: r[0].epsilon_estimate_fit), "pld": med(lambda r: r[0].epsilon_estimate_pld),
                             "violated": sum(r[0].violated for r in res)})
                lines.append(
                    f"| {q:g}, {T} | {sigma:.3f} | {acc:.3f} | {m:,} | {lb:.3f} | {lb / acc:.2f} | {ideal / acc:.2f} | "
                    f"{lb / ideal if ideal > 0 else float('nan'):.2f} | {med(lambda r: r[0].epsilon_estimate_fit):.3f} | "
                    f"{med(lambda r: r[0].epsilon_estimate_pld):.3f} | {sum(r[0].violated for r in res)}/{len(res)} | "
                    f"{med(lambda r: r[1]):.1f} | {med(lambda r: r[0].train_seconds):.1f} | {med(lambda r: r[0].audit_seconds):.1f} |")
    if args.opacus:
        lines += ["", "## Opacus 1.6 itself (OpacusCanaries in an Opacus loop, same task and settings)", "",
                  "| q, steps | sigma | accountant eps | canaries | lb | lb/acc | ideal lb/acc | estimate (fit) | "
                  "estimate (PLD) | violated | train s | audit s |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for q, T in settings:
            for target in targets:
                sigma = noise_for_epsilon(target, args.delta, q, T)
                for m in ms:
                    res = []
                    for s in range(args.seeds):
                        hook, secs = opacus_run(sigma, q, T, m, s)
                        a = hook.audit(delta=args.delta, beta=args.beta, seed=s)
                        res.append((a, secs, ideal_fraction(a.config, m, s, args.delta, args.beta)))
                        print(f"opacus q={q} eps={target} m={m} seed={s}: lb={a.epsilon_lower_bound:.3f} "
                              f"acc={a.accountant_epsilon:.3f} fit={a.epsilon_estimate_fit:.3f}", file=sys.stderr, flush=True)
                    med = lambda f: float(np.median([f(r) for r in res]))  # noqa: E731
                    acc = res[0][0].accountant_epsilon
                    rows.append({"opacus": True, "q": q, "steps": T, "sigma": sigma, "accountant": acc, "m": m,
                                 "lb": med(lambda r: r[0].epsilon_lower_bound), "ideal": med(lambda r: r[2]),
                                 "fit": med(lambda r: r[0].epsilon_estimate_fit), "violated": sum(r[0].violated for r in res)})
                    lines.append(
                        f"| {q:g}, {T} | {sigma:.3f} | {acc:.3f} | {m:,} | {med(lambda r: r[0].epsilon_lower_bound):.3f} | "
                        f"{med(lambda r: r[0].epsilon_lower_bound) / acc:.2f} | {med(lambda r: r[2]) / acc:.2f} | "
                        f"{med(lambda r: r[0].epsilon_estimate_fit):.3f} | {med(lambda r: r[0].epsilon_estimate_pld):.3f} | "
                        f"{sum(r[0].violated for r in res)}/{len(res)} | {med(lambda r: r[1]):.1f} | "
                        f"{med(lambda r: r[0].audit_seconds):.1f} |")
    lines += ["", "## The bug zoo at accountant epsilon 2 (one run each)", "",
              "| variant | q, steps | C | accountant eps | canaries | certified lb | score | violated | what it is |",
              "|---|---|---|---|---|---|---|---|---|"]
    m = max(ms)
    for q, T in settings:
        sigma = noise_for_epsilon(2.0, args.delta, q, T)
        for v, what in VARIANTS.items():
            cfg = DPSGDConfig(noise_multiplier=sigma, sampling_rate=q, steps=T,
                              max_grad_norm=4.0 if v == "noise-not-scaled" else 1.0)
            run = train_with_canaries(cfg, canaries=m, variant=v, seed=0)
            a = audit_run(run, delta=args.delta, beta=args.beta, seed=0)
            rows.append({"variant": v, "q": q, "steps": T, "lb": a.epsilon_lower_bound, "accountant": a.accountant_epsilon,
                         "violated": a.violated})
            print(f"{v} q={q}: lb={a.epsilon_lower_bound:.3f} acc={a.accountant_epsilon:.3f} violated={a.violated}",
                  file=sys.stderr, flush=True)
            lines.append(f"| {v} | {q:g}, {T} | {cfg.max_grad_norm:g} | {a.accountant_epsilon:.3f} | {m:,} | "
                         f"{a.epsilon_lower_bound:.3f} | {a.best_score} | {'**yes**' if a.violated else 'no'} | {what} |")
    from dpaudit.dpsgd import epsilon_plot

    png = Path(args.out).with_suffix(".png")
    epsilon_plot([r for r in rows if "variant" not in r and not r.get("opacus")], png)
    lines += ["", f"![empirical vs accounted epsilon]({png.name})"]
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    Path(args.out).with_suffix(".json").write_text(json.dumps(rows, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

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


def ideal_fraction(cfg, m: int, seed: int, delta: float, beta: float, pattern=None) -> float:
    """The one-run bound on ideal white-box observations of the claimed mechanism (every step's
    observation exactly N(participation, sigma^2), no model; times ``pattern``, the canaries'
    signs, when given): what the real run is measured against."""
    from dpaudit.dpsgd import audit_run
    from dpaudit.dpsgd.reference import TrainingRun

    rng = np.random.default_rng([seed, 99])
    mask = rng.random(m) < 0.5
    part = (rng.random((cfg.steps, m)) < cfg.sampling_rate) & mask[None, :]
    obs = part * (1.0 if pattern is None else pattern) + rng.normal(0.0, cfg.noise_multiplier, (cfg.steps, m))
    run = TrainingRun(observations=obs, mask=mask, sampled=part.sum(0), participation=part, config=cfg,
                      variant="ideal", seconds=0.0, train_accuracy=float("nan"), pattern=pattern)
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
    hook = OpacusCanaries(opt, canaries=m, sampling_rate=q, seed=seed, canary_kind="signed")  # single-kind hook
    t = time.perf_counter()
    while len(hook.observations) < steps:
        for xb, yb in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            hook.step()
            if len(hook.observations) >= steps:
                break
    return hook, time.perf_counter() - t


def real_vs_ideal(real, ideal) -> tuple:
    """Means over the seeds of the real and ideal bounds, their ratio and the ratio's standard
    error (delta method, the two sets of seeds independent). For Dirac canaries the real
    observations of a correct implementation have the ideal's law, so the ratio's expectation is
    1 and its spread is the one-run bound's own seed-to-seed spread (large at 1,000 canaries)."""
    r, i = np.asarray(real, float), np.asarray(ideal, float)
    mr, mi = r.mean(), i.mean()
    n = len(r)
    if mi <= 0 or n < 2:
        return mr, mi, float("nan"), float("nan")
    ratio = mr / mi
    se = ratio * np.sqrt((r.var(ddof=1) / n) / max(mr, 1e-12) ** 2 + (i.var(ddof=1) / n) / mi ** 2)
    return float(mr), float(mi), float(ratio), float(se)


PROFILE_GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)


def many_run_zoo(delta: float, beta: float, rows: list, seeds: int = 20) -> list:
    """The bugs one run cannot show, audited from many runs (``train_many``) at accountant
    epsilon 2, each next to the correct reference at the same settings over ``seeds`` seeds
    (accusations counted at ``beta``). Returns the markdown lines; appends to ``rows``."""
    from dpaudit.dpsgd import DPSGDConfig, load_digits_task, noise_for_epsilon
    from dpaudit.dpsgd.many import audit_many, train_many

    x, y = load_digits_task(num_train=50)
    fifty, one = (x, (y % 2).astype(np.float32)), (x[:1], (y[:1] % 2).astype(np.float32))
    s1, s5 = noise_for_epsilon(2.0, delta, 1.0, 10), noise_for_epsilon(2.0, delta, 0.05, 100)
    cells = [
        ("batch-clipping", "q = 1, 10 steps, 50 examples, 1 opposing example, canary norm 1e4",
         DPSGDConfig(noise_multiplier=s1, sampling_rate=1.0, steps=10, learning_rate=5.0, canary_norm=1e4),
         dict(runs=1000, data=fifty, opposing=1, null_block=1, canary="gradient"), "white_box"),
        ("batch-clipping", "the same, at delta 1e-5 itself",
         DPSGDConfig(noise_multiplier=s1, sampling_rate=1.0, steps=10, learning_rate=5.0, canary_norm=1e4),
         dict(runs=20000, data=fifty, opposing=1, null_block=1, canary="gradient"), "white_box"),
        ("realised-batch-size", "q = 1, 10 steps, a dataset of 1 example",
         DPSGDConfig(noise_multiplier=s1, sampling_rate=1.0, steps=10, learning_rate=5.0),
         dict(runs=100, data=one, canary="gradient"), "scale"),
        ("realised-batch-size", "q = 0.05, 100 steps, a dataset of 1 example",
         DPSGDConfig(noise_multiplier=s5, sampling_rate=0.05, steps=100, learning_rate=5.0),
         dict(runs=1000, data=one, canary="gradient"), "scale"),
    ]
    lines = ["", "## Many-run audits of the bugs one run cannot show (accountant epsilon 2)", "",
             "Certified at beta (one view each, fixed in advance); `profile`: the certified delta exceeds the accountant's "
             f"certified delta at some eps' of {list(PROFILE_GRID)}. Controls: the correct reference at the same settings, "
             f"{seeds} seeds.", "",
             "| variant | setting | view | runs | eps lb (1e-5) | mu lb | accountant eps (mu at q=1) | violated at 1e-5 | "
             "profile violated (eps', delta lb vs accountant) | control accused (1e-5 / profile) | control largest eps lb |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for variant, what, cfg, kw, view in cells:
        a = audit_many(train_many(cfg, variant=variant, seed=0, chunk=500, **kw), delta=delta, beta=beta,
                       views=(view,), profile=PROFILE_GRID)
        ctrl = [audit_many(train_many(cfg, seed=1000 + s, chunk=500, **kw), delta=delta, beta=beta, views=(view,),
                           profile=PROFILE_GRID) for s in range(seeds)]
        v, p = a[view], a[view]["profile"]
        acc_c, prof_c = sum(c["violated"] for c in ctrl), sum(c["profile_violated"] for c in ctrl)
        worst = max(c[view]["epsilon_lower_bound"] for c in ctrl)
        mu_acc = f" ({np.sqrt(cfg.steps) / cfg.noise_multiplier:.3f})" if cfg.sampling_rate == 1 else ""
        rows.append({"variant": variant, "many_runs": kw["runs"], "view": view, "lb": v["epsilon_lower_bound"],
                     "mu_lb": v["mu_lower_bound"], "accountant": a["accountant_epsilon"], "violated": v["violated"],
                     "profile": p, "control_accused": acc_c, "control_profile_accused": prof_c, "control_max_lb": worst})
        print(f"many-run {variant} ({what}): lb={v['epsilon_lower_bound']:.3f} mu={v['mu_lower_bound']:.3f} "
              f"profile={p['violated']} controls {acc_c}/{prof_c} of {seeds}", file=sys.stderr, flush=True)
        lines.append(f"| {variant} | {what} | {view} | {kw['runs']:,} | {v['epsilon_lower_bound']:.3f} | "
                     f"{v['mu_lower_bound']:.3f} | {a['accountant_epsilon']:.3f}{mu_acc} | "
                     f"{'**yes**' if v['violated'] else 'no'} | {'**yes**' if p['violated'] else 'no'} "
                     f"({p['witness_epsilon']:g}, {p['delta_lower_bound']:.3g} vs {p['accountant_delta']:.3g}) | "
                     f"{acc_c}/{seeds} / {prof_c}/{seeds} | {worst:.3f} |")
    return lines


def shared_state_zoo(delta: float, beta: float, m: int, rows: list, seeds: int = 20) -> list:
    """``noise-reused`` (state shared across steps) from one run with sign-changing gradient
    canaries (``canary_kind="alternating"`` / ``"signed"``) and the default scores (``"lr"``,
    ``"spread"``, ``"whitened"``, each at ``beta / 3``), at accountant epsilon 2 for q = 1 and
    q = 0.05; the correct reference with signed canaries over ``seeds`` seeds as the control.
    Returns the markdown lines; appends to ``rows``."""
    from dpaudit.dpsgd import DPSGDConfig, audit_run, noise_for_epsilon, train_with_canaries

    lines = ["", "## State shared across steps: sign-changing canaries (one run each, accountant epsilon 2)", "",
             f"Default scores (lr, spread, whitened; beta split in three, fixed in advance). Controls: the correct "
             f"reference with the same canaries (`signed`), {seeds} seeds (1000, ...), accused when the certified "
             "bound exceeds the accountant's epsilon.", "",
             "| variant | q, steps | canaries | kind | certified lb | score | accountant eps | violated | "
             "control accused | control largest lb |", "|---|---|---|---|---|---|---|---|---|---|"]
    for q, T in ((1.0, 10), (0.05, 200)):
        cfg = DPSGDConfig(noise_multiplier=noise_for_epsilon(2.0, delta, q, T), sampling_rate=q, steps=T)
        ctrl = [audit_run(train_with_canaries(cfg, canaries=m, canary_kind="signed", seed=1000 + s), delta=delta,
                          beta=beta, seed=s) for s in range(seeds)]
        acc_c, worst = sum(c.violated for c in ctrl), max(c.epsilon_lower_bound for c in ctrl)
        for kind in ("dirac", "alternating", "signed"):
            a = audit_run(train_with_canaries(cfg, canaries=m, variant="noise-reused", canary_kind=kind, seed=0),
                          delta=delta, beta=beta, seed=0)
            rows.append({"variant": "noise-reused", "q": q, "steps": T, "canary_kind": kind, "lb": a.epsilon_lower_bound,
                         "best_score": a.best_score, "accountant": a.accountant_epsilon, "violated": a.violated,
                         "control_accused": acc_c, "control_seeds": seeds, "control_max_lb": worst})
            print(f"noise-reused q={q} {kind}: lb={a.epsilon_lower_bound:.3f} ({a.best_score}) controls {acc_c}/{seeds} "
                  f"max {worst:.3f}", file=sys.stderr, flush=True)
            lines.append(f"| noise-reused | {q:g}, {T} | {m:,} | {kind} | {a.epsilon_lower_bound:.3f} | {a.best_score} | "
                         f"{a.accountant_epsilon:.3f} | {'**yes**' if a.violated else 'no'} | {acc_c}/{seeds} | {worst:.3f} |")
    return lines


def shuffled_zoo(delta: float, beta: float, rows: list, seeds: int = 20) -> list:
    """``shuffled-batches`` from many runs: ``train_many`` with the displacement construction (no
    real examples, 500 crafted examples opposing the one gradient canary, fixed batches of 5,
    the last partial batch dropped), 100 batches per epoch, accounted as Poisson at q = 0.01;
    the epoch-maximum view, certified at ``beta`` (eps at ``delta`` and the profile check). The
    control is the correct Poisson reference at the same settings over ``seeds`` seeds."""
    from dpaudit.dpsgd import DPSGDConfig, shuffled_epsilon_lower_bound
    from dpaudit.dpsgd.many import audit_many, train_many

    kw = dict(data=(np.zeros((0, 64), np.float32), np.zeros(0, np.float32)), opposing=500, null_block=1,
              canary="gradient", chunk=1000)
    lines = ["", "## Shuffled batches against the Poisson accountant (many runs, displacement construction)", "",
             "No real examples; 500 crafted examples whose gradient opposes the one gradient canary's coordinate "
             "(`-C` each); fixed batches of 5 from a shuffle each epoch, last partial batch dropped (100 batches per "
             "epoch with or without the canary); accounted as Poisson at q = 0.01. View `epoch_max` (each epoch's largest "
             "canary observation, summed), certified at beta; `exact-law lb`: `shuffled_epsilon_lower_bound` "
             f"(sensitivity 2, no sampling). Controls: the correct Poisson reference at the same settings, {seeds} seeds.", "",
             "| sigma | epochs | runs | eps lb (1e-5) | accountant eps | exact-law lb | violated at 1e-5 | "
             "profile violated (eps', delta lb vs accountant) | seconds | control accused (1e-5 / profile) | "
             "control largest eps lb |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for sigma, E, R in ((0.8, 2, 300), (0.8, 2, 2000), (1.0, 1, 2000)):
        cfg = DPSGDConfig(noise_multiplier=sigma, sampling_rate=0.01, steps=100 * E, learning_rate=1.0, canary_norm=1e4)
        res = train_many(cfg, runs=R, variant="shuffled-batches", seed=0, **kw)
        a = audit_many(res, delta=delta, beta=beta, views=("epoch_max",), profile=PROFILE_GRID)
        ctrl = [audit_many(train_many(cfg, runs=R, seed=1000 + s, **kw), delta=delta, beta=beta, views=("epoch_max",),
                           profile=PROFILE_GRID) for s in range(seeds)]
        exact = shuffled_epsilon_lower_bound(sigma, 100, E, delta, sensitivity=2.0, with_probability=500 / 501)
        v, p = a["epoch_max"], a["epoch_max"]["profile"]
        acc_c, prof_c = sum(c["violated"] for c in ctrl), sum(c["profile_violated"] for c in ctrl)
        worst = max(c["epoch_max"]["epsilon_lower_bound"] for c in ctrl)
        rows.append({"variant": "shuffled-batches", "sigma": sigma, "epochs": E, "many_runs": R, "view": "epoch_max",
                     "lb": v["epsilon_lower_bound"], "accountant": a["accountant_epsilon"], "exact_law_lb": exact,
                     "violated": v["violated"], "profile": p, "seconds": res.seconds, "control_accused": acc_c,
                     "control_profile_accused": prof_c, "control_max_lb": worst})
        print(f"shuffled sigma={sigma} E={E} runs={R}: lb={v['epsilon_lower_bound']:.3f} acc={a['accountant_epsilon']:.3f} "
              f"profile={p['violated']} controls {acc_c}/{prof_c} of {seeds}", file=sys.stderr, flush=True)
        lines.append(f"| {sigma:g} | {E} | {R:,} | {v['epsilon_lower_bound']:.3f} | {a['accountant_epsilon']:.3f} | "
                     f"{exact:.2f} | {'**yes**' if v['violated'] else 'no'} | {'**yes**' if p['violated'] else 'no'} "
                     f"({p['witness_epsilon']:g}, {p['delta_lower_bound']:.3g} vs {p['accountant_delta']:.3g}) | "
                     f"{res.seconds:.1f} | {acc_c}/{seeds} / {prof_c}/{seeds} | {worst:.3f} |")
    return lines


ZOO_SECTIONS = ("one-run", "many-run", "shared-state", "shuffled")


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
    ap.add_argument("--zoo-only", action="store_true",
                    help="only the bug zoo (one run per variant and the many-run audits of the bugs one run cannot show); "
                         "writes <out>-zoo.md")
    ap.add_argument("--zoo-sections", default=",".join(ZOO_SECTIONS),
                    help=f"which zoo sections of {ZOO_SECTIONS} to run ('' for none); with --zoo-only a subset "
                         "writes <out>-zoo-<sections>.md")
    args = ap.parse_args(argv)
    ms = [int(v) for v in args.canaries.split(",")]
    targets = [float(v) for v in args.epsilons.split(",")]
    settings = [(1.0, 10), (0.05, 200)]
    lines = ["# One-run white-box audits of DP-SGD (digits, MLP 64-32-10, 500 training examples)", "",
             f"`python benchmarks/dpsgd_audit.py --canaries {args.canaries} --epsilons {args.epsilons} --seeds {args.seeds}`; "
             f"delta = {args.delta:g}, beta = {args.beta:g}; over {args.seeds} seeds: `lb` and `ideal` are means, "
             "`real / ideal` the ratio of the means with its standard error (the seeds of the two independent), the "
             "estimates and times medians, `violated` a count. "
             "`lb/acc`: certified one-run lower bound / accountant epsilon; `ideal`: the same bound (same scores, same "
             "beta) on ideal observations of the claimed mechanism, every step's observation exactly "
             "N(participation, sigma^2): for Dirac canaries the law of a correct implementation's, so `real / ideal` "
             "should be 1 up to the seed-to-seed spread; estimates have no confidence statement.", "",
             "## The reference DP-SGD (control)", "",
             "| q, steps | sigma | accountant eps | canaries | lb | lb/acc | ideal lb/acc | real / ideal | estimate (fit) | "
             "estimate (PLD) | violated | train s (no canaries) | train s (canaries) | audit s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = []
    if args.zoo_only:
        lines = ["# The DP-SGD bug zoo (digits, MLP 64-32-10, 500 training examples)", "",
                 f"`python benchmarks/dpsgd_audit.py --zoo-only --canaries {args.canaries}`; delta = {args.delta:g}, "
                 f"beta = {args.beta:g}."]
    for q, T in ([] if args.zoo_only else settings):
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
                lb, ideal, ratio, se = real_vs_ideal([r[0].epsilon_lower_bound for r in res], [r[2] for r in res])
                rows.append({"q": q, "steps": T, "sigma": sigma, "accountant": acc, "m": m, "lb": lb, "ideal": ideal,
                             "ratio": ratio, "ratio_se": se, "seeds": len(res),
                             "fit": med(lambda r: r[0].epsilon_estimate_fit), "pld": med(lambda r: r[0].epsilon_estimate_pld),
                             "violated": sum(r[0].violated for r in res)})
                lines.append(
                    f"| {q:g}, {T} | {sigma:.3f} | {acc:.3f} | {m:,} | {lb:.3f} | {lb / acc:.2f} | {ideal / acc:.2f} | "
                    f"{ratio:.2f} ± {se:.2f} | {med(lambda r: r[0].epsilon_estimate_fit):.3f} | "
                    f"{med(lambda r: r[0].epsilon_estimate_pld):.3f} | {sum(r[0].violated for r in res)}/{len(res)} | "
                    f"{med(lambda r: r[1]):.1f} | {med(lambda r: r[0].train_seconds):.1f} | {med(lambda r: r[0].audit_seconds):.1f} |")
    if args.opacus and not args.zoo_only:
        lines += ["", "## Opacus 1.6 itself (OpacusCanaries in an Opacus loop, same task and settings; signed "
                  "canaries: the single-kind hook, canary_kind=\"signed\")", "",
                  "| q, steps | sigma | accountant eps | canaries | lb | lb/acc | ideal lb/acc | real / ideal | estimate (fit) | "
                  "estimate (PLD) | violated | train s | audit s |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for q, T in settings:
            for target in targets:
                sigma = noise_for_epsilon(target, args.delta, q, T)
                for m in ms:
                    res = []
                    for s in range(args.seeds):
                        hook, secs = opacus_run(sigma, q, T, m, s)
                        a = hook.audit(delta=args.delta, beta=args.beta, seed=s)
                        res.append((a, secs, ideal_fraction(a.config, m, s, args.delta, args.beta,
                                                            np.array(hook.patterns))))
                        print(f"opacus q={q} eps={target} m={m} seed={s}: lb={a.epsilon_lower_bound:.3f} "
                              f"acc={a.accountant_epsilon:.3f} fit={a.epsilon_estimate_fit:.3f}", file=sys.stderr, flush=True)
                    med = lambda f: float(np.median([f(r) for r in res]))  # noqa: E731
                    acc = res[0][0].accountant_epsilon
                    lb, ideal, ratio, se = real_vs_ideal([r[0].epsilon_lower_bound for r in res], [r[2] for r in res])
                    rows.append({"opacus": True, "q": q, "steps": T, "sigma": sigma, "accountant": acc, "m": m,
                                 "lb": lb, "ideal": ideal, "ratio": ratio, "ratio_se": se, "seeds": len(res),
                                 "fit": med(lambda r: r[0].epsilon_estimate_fit), "violated": sum(r[0].violated for r in res)})
                    lines.append(
                        f"| {q:g}, {T} | {sigma:.3f} | {acc:.3f} | {m:,} | {lb:.3f} | {lb / acc:.2f} | {ideal / acc:.2f} | "
                        f"{ratio:.2f} ± {se:.2f} | "
                        f"{med(lambda r: r[0].epsilon_estimate_fit):.3f} | {med(lambda r: r[0].epsilon_estimate_pld):.3f} | "
                        f"{sum(r[0].violated for r in res)}/{len(res)} | {med(lambda r: r[1]):.1f} | "
                        f"{med(lambda r: r[0].audit_seconds):.1f} |")
    sections = [z for z in args.zoo_sections.split(",") if z]
    if any(z not in ZOO_SECTIONS for z in sections):
        ap.error(f"--zoo-sections must be a subset of {ZOO_SECTIONS}")
    m = max(ms)
    if "one-run" in sections:
        lines += ["", "## The bug zoo at accountant epsilon 2 (one run each)", "",
                  "| variant | q, steps | C | accountant eps | canaries | certified lb | score | violated | what it is |",
                  "|---|---|---|---|---|---|---|---|---|"]
    for q, T in (settings if "one-run" in sections else []):
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
    if "many-run" in sections:
        lines += many_run_zoo(args.delta, args.beta, rows)
    if "shared-state" in sections:
        lines += shared_state_zoo(args.delta, args.beta, m, rows)
    if "shuffled" in sections:
        lines += shuffled_zoo(args.delta, args.beta, rows)
    if args.zoo_only:
        tag = "" if set(sections) == set(ZOO_SECTIONS) else "-" + "-".join(sections)
        if tag:
            lines[2] = lines[2].replace("--canaries", f"--zoo-sections {args.zoo_sections} --canaries")
        out = Path(args.out).with_name(Path(args.out).stem + "-zoo" + tag + ".md")
        out.write_text("\n".join(lines) + "\n")
        out.with_suffix(".json").write_text(json.dumps(rows, indent=1))
        print("\n".join(lines))
        return 0
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

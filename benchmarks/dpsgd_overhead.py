"""What a one-run DP-SGD audit costs on top of the training run it rides on.

For the reference DP-SGD (``dpaudit.dpsgd.train_with_canaries``) and for Opacus with
``OpacusCanaries`` (the user's own loop with the hook), on a training run of realistic size for
one CPU thread (all 1,797 digits, an MLP 64-H-10 with H = 1024 by default: 77,834 parameters;
Poisson q = 0.05 for 1,000 steps and q = 1 for 20 steps, noise for accountant epsilon 4 at
delta 1e-5): the training time without canaries, with 1,000 and 10,000 canaries, the audit's
time (``audit_run``: the certified one-run bounds, the accountant for the run's configuration
and both estimates), and the overhead ratio ``(train with canaries + audit) / train without``,
next to the accountant's epsilon and the certified lower bound.

The runs of one setting alternate (without, 1,000, 10,000, without, 1,000, 10,000, ...; each
repetition the same seeded run) after a short warm-up; the table gives medians over the
repetitions. Run it with one thread::

    OMP_NUM_THREADS=1 python benchmarks/dpsgd_overhead.py --reps 2

and it writes ``benchmarks/results/dpsgd_overhead.md`` (and ``.json``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np


def reference_train(cfg, m: int, hidden: int, data, seed: int):
    """The reference DP-SGD with ``m`` Dirac canaries (0: none); returns (seconds, run)."""
    from dpaudit.dpsgd import train_with_canaries

    t = time.perf_counter()
    run = train_with_canaries(cfg, canaries=m, data=data, hidden=hidden, seed=seed)
    return time.perf_counter() - t, run


def opacus_train(cfg, m: int, hidden: int, data, seed: int):
    """An Opacus loop (``PrivacyEngine.make_private``, Poisson sampling at ``cfg.sampling_rate``,
    plain SGD) on the same MLP, with ``OpacusCanaries`` of ``m`` canaries (0: no hook, the
    optimizer's own ``step``); returns (seconds of the loop, the hook or None). The clock starts
    before the hook is attached and stops after the last step."""
    import torch
    from opacus import PrivacyEngine

    from dpaudit.dpsgd.opacus import OpacusCanaries

    x, y = data
    dataset = torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y))
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(x.shape[1], hidden), torch.nn.Tanh(),
                                torch.nn.Linear(hidden, int(y.max()) + 1))
    opt = torch.optim.SGD(model.parameters(), lr=cfg.learning_rate)
    loader = torch.utils.data.DataLoader(dataset, batch_size=max(1, round(cfg.sampling_rate * len(x))))
    model, opt, loader = PrivacyEngine().make_private(module=model, optimizer=opt, data_loader=loader,
                                                      noise_multiplier=cfg.noise_multiplier,
                                                      max_grad_norm=cfg.max_grad_norm, poisson_sampling=True)
    t = time.perf_counter()
    hook = OpacusCanaries(opt, canaries=m, sampling_rate=cfg.sampling_rate, seed=seed) if m else None
    step = hook.step if hook is not None else opt.step
    done = 0
    while done < cfg.steps:
        for xb, yb in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            step()
            done += 1
            if done >= cfg.steps:
                break
    return time.perf_counter() - t, hook


def timed_audit(result, delta: float, beta: float):
    """``audit_run`` on a reference run or ``hook.audit`` on an Opacus hook; (seconds, audit)."""
    from dpaudit.dpsgd import audit_run

    t = time.perf_counter()
    a = result.audit(delta=delta, beta=beta) if hasattr(result, "audit") else audit_run(result, delta=delta, beta=beta)
    return time.perf_counter() - t, a


TRAINERS = {"reference": reference_train, "opacus": opacus_train}


def main(argv=None) -> int:
    logging.getLogger("absl").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    import torch

    from dpaudit.dpsgd import DPSGDConfig, load_digits_task, noise_for_epsilon

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trainers", default="reference,opacus")
    ap.add_argument("--settings", default="0.05:1000,1:20", help="q:steps pairs")
    ap.add_argument("--canaries", default="1000,10000")
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--num-train", type=int, default=1797)
    ap.add_argument("--epsilon", type=float, default=4.0, help="accountant epsilon the noise is set for")
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--beta", type=float, default=0.05)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "dpsgd_overhead.md"))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    trainers = [t for t in args.trainers.split(",") if t]
    if any(t not in TRAINERS for t in trainers):
        ap.error(f"--trainers must be a subset of {sorted(TRAINERS)}")
    settings = [(float(q), int(s)) for q, s in (p.split(":") for p in args.settings.split(","))]
    ms = [int(v) for v in args.canaries.split(",")]
    data = load_digits_task(num_train=args.num_train, seed=0)
    d = (data[0].shape[1] + 1) * args.hidden + (args.hidden + 1) * (int(data[1].max()) + 1)

    # warm-up: first calls (torch.func, Opacus's hooks, the accountant) out of the timings
    warm = DPSGDConfig(noise_multiplier=1.0, sampling_rate=0.05, steps=3)
    for name in trainers:
        for m in (0, min(ms)):
            _, r = TRAINERS[name](warm, m, args.hidden, data, args.seed)
            if m:
                timed_audit(r, args.delta, args.beta)

    rows = []
    for q, steps in settings:
        sigma = noise_for_epsilon(args.epsilon, args.delta, q, steps)
        cfg = DPSGDConfig(noise_multiplier=sigma, sampling_rate=q, steps=steps)
        for name in trainers:
            train = {m: [] for m in [0] + ms}
            audit = {m: [] for m in ms}
            found = {}
            for rep in range(args.reps):
                for m in [0] + ms:  # alternating: without, with each canary count, then again
                    secs, r = TRAINERS[name](cfg, m, args.hidden, data, args.seed)
                    train[m].append(secs)
                    msg = f"{name} q={q:g} steps={steps} m={m} rep={rep}: train {secs:.2f} s"
                    if m:
                        a_secs, a = timed_audit(r, args.delta, args.beta)
                        audit[m].append(a_secs)
                        found.setdefault(m, a)
                        msg += f", audit {a_secs:.2f} s, lb {a.epsilon_lower_bound:.3f} (accountant {a.accountant_epsilon:.3f})"
                    del r
                    print(msg, file=sys.stderr, flush=True)
            base = float(np.median(train[0]))
            for m in ms:
                tw, au, a = float(np.median(train[m])), float(np.median(audit[m])), found[m]
                rows.append({"trainer": name, "q": q, "steps": steps, "sigma": sigma, "canaries": m,
                             "train_without": base, "train_with": tw, "audit": au, "ratio": (tw + au) / base,
                             "train_ratio": tw / base, "accountant_epsilon": a.accountant_epsilon,
                             "epsilon_lower_bound": a.epsilon_lower_bound, "train_seconds_all": train[m],
                             "train_without_all": train[0], "audit_seconds_all": audit[m]})

    import opacus

    cmd = "OMP_NUM_THREADS=1 python benchmarks/dpsgd_overhead.py" + "".join(
        f" --{k.replace('_', '-')} {v}" for k, v in vars(args).items()
        if k != "out" and v != ap.get_default(k))
    lines = [f"# The overhead of a one-run DP-SGD audit (digits, {args.num_train:,} examples, MLP 64-{args.hidden}-10: "
             f"{d:,} parameters)", "",
             f"`{cmd}`; one CPU thread ({platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
             f"torch {torch.__version__}, Opacus {opacus.__version__}); noise for accountant epsilon {args.epsilon:g} at "
             f"delta {args.delta:g}, beta {args.beta:g}; medians over {args.reps} alternating repetitions of the same "
             "seeded run. `train`: wall time of the training loop; `audit`: `audit_run` (certified one-run bounds of three "
             "scores, the accountant for the run's configuration, both estimates); `ratio` = (train with canaries + "
             "audit) / train without.", "",
             "| trainer | q, steps | sigma | canaries | train s (no canaries) | train s (canaries) | audit s | "
             "train with / without | ratio | accountant eps | certified lb |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['trainer']} | {r['q']:g}, {r['steps']} | {r['sigma']:.3f} | {r['canaries']:,} | "
                     f"{r['train_without']:.1f} | {r['train_with']:.1f} | {r['audit']:.2f} | {r['train_ratio']:.2f} | "
                     f"{'**' if r['ratio'] > 1.3 else ''}{r['ratio']:.2f}{'**' if r['ratio'] > 1.3 else ''} | "
                     f"{r['accountant_epsilon']:.3f} | {r['epsilon_lower_bound']:.3f} |")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

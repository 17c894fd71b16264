"""What a one-run DP-SGD audit costs on top of the training run it rides on.

For the reference DP-SGD (``dpaudit.dpsgd.train_with_canaries``) and for Opacus with
``OpacusCanaries`` (the user's own loop with the hook), on an MLP 64-H-10 (H = 1024 by default:
76,810 parameters) with noise for accountant epsilon 4 at delta 1e-5, in two regimes:

* all 1,797 digits, Poisson q = 0.05 for 1,000 steps and q = 1 for 20 steps: with 1,000 or
  10,000 canaries (each included with probability 1/2, then sampled at rate q) the canaries'
  rows are 28 % to 280 % of the real rows of a step;
* N = 20,000 synthetic examples of the digits' shape (the 1,797 digits repeated, shuffled, each
  pixel jittered by a uniform +-0.05 and clipped to [0, 1], labels kept; the timing does not
  depend on the content), q = 0.05 (batches of about 1,000) for 200 steps and q = 0.01 for
  600 steps: 1,000 canaries are 2.5 % of a step's rows, 10,000 are 25 %, the deployments'
  regime (N in the tens of thousands or more, about 1,000 canaries).

Settings are ``N:q:steps`` (``q:steps`` for the default ``--examples``); N up to 1,797 takes
real digits, a larger N the synthetic set. Per setting: the training time without canaries,
with 1,000 and 10,000 canaries, the audit's time (``audit_run``: the certified one-run bounds,
the accountant for the run's configuration and both estimates), the overhead ratio ``(train
with canaries + audit) / train without``, next to the canary rows and real rows of a step
(``q m / 2`` against ``q N``), the accountant's epsilon and the certified lower bound.

The runs of one setting alternate (without, 1,000, 10,000, without, 1,000, 10,000, ...; each
repetition the same seeded run) after a short warm-up; the table gives medians over the
repetitions. Run it with one thread::

    OMP_NUM_THREADS=1 python benchmarks/dpsgd_overhead.py --reps 2

(about 35 minutes) and it writes ``benchmarks/results/dpsgd_overhead.md`` (and ``.json``). With
``--merge`` the rows of the settings measured replace those in the results and the others are kept
(each row records its command; the table marks the rows of other commands).
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


DIGITS = 1797


def training_set(n: int, seed: int = 0):
    """``(x, y, description)``: ``n`` of the real digits for ``n <= 1,797``; otherwise ``n``
    synthetic examples of the same shape: the digits repeated (``ceil(n / 1,797)`` copies,
    shuffled, the first ``n`` kept), every pixel jittered by a uniform ``+-0.05`` and clipped to
    ``[0, 1]``, the labels kept."""
    from dpaudit.dpsgd import load_digits_task

    if n <= DIGITS:
        x, y = load_digits_task(num_train=n, seed=seed)
        return x, y, f"{n:,} digits" if n < DIGITS else "all 1,797 digits"
    x, y = load_digits_task(num_train=DIGITS, seed=seed)
    rng = np.random.default_rng([seed, n])
    idx = rng.permutation(-(-n // DIGITS) * DIGITS)[:n] % DIGITS
    xs = np.clip(x[idx] + rng.uniform(-0.05, 0.05, size=(n, x.shape[1])), 0.0, 1.0).astype(np.float32)
    return xs, y[idx].copy(), f"{n:,} synthetic (digits repeated, +-0.05 pixel jitter)"


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
    hook = OpacusCanaries(opt, canaries=m, sampling_rate=cfg.sampling_rate, seed=seed,
                          canary_kind="signed") if m else None
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

    from dpaudit.dpsgd import DPSGDConfig, noise_for_epsilon

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trainers", default="reference,opacus")
    ap.add_argument("--settings", default="0.05:1000,1:20,20000:0.05:200,20000:0.01:600",
                    help="N:q:steps triples, or q:steps pairs for N = --examples")
    ap.add_argument("--canaries", default="1000,10000")
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--examples", type=int, default=DIGITS,
                    help="training set size of q:steps settings (above 1,797: synthetic digits-shaped examples)")
    ap.add_argument("--epsilon", type=float, default=4.0, help="accountant epsilon the noise is set for")
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--beta", type=float, default=0.05)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "dpsgd_overhead.md"))
    ap.add_argument("--merge", action="store_true",
                    help="keep the rows of --out's .json for settings this run does not measure (re-measure some rows)")
    ap.add_argument("--note", default="", help="a sentence for the table's header (why rows were re-measured)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    trainers = [t for t in args.trainers.split(",") if t]
    if any(t not in TRAINERS for t in trainers):
        ap.error(f"--trainers must be a subset of {sorted(TRAINERS)}")
    settings = []
    for item in args.settings.split(","):
        parts = item.split(":")
        if len(parts) not in (2, 3):
            ap.error(f"--settings: {item!r} is neither N:q:steps nor q:steps")
        n = int(parts[0]) if len(parts) == 3 else args.examples
        settings.append((n, float(parts[-2]), int(parts[-1])))
    ms = [int(v) for v in args.canaries.split(",")]
    sets = {n: training_set(n) for n in dict.fromkeys(n for n, _, _ in settings)}
    x0, y0, _ = next(iter(sets.values()))
    d = (x0.shape[1] + 1) * args.hidden + (args.hidden + 1) * (int(y0.max()) + 1)

    # warm-up: first calls (torch.func, Opacus's hooks, the accountant) out of the timings
    warm = DPSGDConfig(noise_multiplier=1.0, sampling_rate=0.05, steps=3)
    for x, y, _ in sets.values():
        for name in trainers:
            for m in (0, min(ms)):
                _, r = TRAINERS[name](warm, m, args.hidden, (x, y), args.seed)
                if m:
                    timed_audit(r, args.delta, args.beta)

    rows = []
    for n, q, steps in settings:
        x, y, desc = sets[n]
        data = (x, y)
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
                    msg = f"{name} N={n} q={q:g} steps={steps} m={m} rep={rep}: train {secs:.2f} s"
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
                rows.append({"trainer": name, "examples": n, "data": desc, "q": q, "steps": steps, "sigma": sigma,
                             "canaries": m, "real_rows_per_step": q * n, "canary_rows_per_step": q * m / 2,
                             "train_without": base, "train_with": tw, "audit": au, "ratio": (tw + au) / base,
                             "train_ratio": tw / base, "accountant_epsilon": a.accountant_epsilon,
                             "epsilon_lower_bound": a.epsilon_lower_bound, "train_seconds_all": train[m],
                             "train_without_all": train[0], "audit_seconds_all": audit[m]})

    import opacus

    cmd = "OMP_NUM_THREADS=1 python benchmarks/dpsgd_overhead.py" + "".join(
        f" --{k.replace('_', '-')}" + ("" if v is True else f" {v}") for k, v in vars(args).items()
        if k not in ("out", "note") and v != ap.get_default(k))
    for r in rows:
        r["command"] = cmd
    out = Path(args.out)
    if args.merge and out.with_suffix(".json").exists():
        def key(r):
            return r["trainer"], r.get("examples", DIGITS), r["q"], r["steps"]

        fresh = {}
        for r in rows:
            fresh.setdefault(key(r), []).append(r)
        merged = []
        for r in json.loads(out.with_suffix(".json").read_text()):
            if key(r) not in fresh:
                merged.append(r)
            elif fresh[key(r)]:
                merged.extend(fresh[key(r)])
                fresh[key(r)] = []
        rows = merged + [r for rs in fresh.values() for r in rs]
    commands = list(dict.fromkeys(r.get("command") for r in rows))
    commands.sort(key=lambda c: -sum(r.get("command") == c for r in rows))  # the one with the most rows first
    marks = {c: "" if i == 0 else "\u2020" * i for i, c in enumerate(commands)}
    sources = f"`{commands[0]}`" + "".join(
        f"; the rows marked {marks[c]} by `{c}`" for c in commands[1:])
    reps = "/".join(str(v) for v in sorted({len(r["train_without_all"]) for r in rows}))
    data_lines = "; ".join(f"N = {k:,}: {v}" for k, v in
                           sorted({r.get("examples", DIGITS): r.get("data", "all 1,797 digits") for r in rows}.items()))
    lines = [f"# The overhead of a one-run DP-SGD audit (MLP 64-{args.hidden}-10: {d:,} parameters)", "",
             f"{sources}; one CPU thread ({platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
             f"torch {torch.__version__}, Opacus {opacus.__version__}); noise for accountant epsilon {args.epsilon:g} at "
             f"delta {args.delta:g}, beta {args.beta:g}; medians over {reps} alternating repetitions of the same "
             "seeded run. `train`: wall time of the training loop; `audit`: `audit_run` (certified one-run bounds of three "
             "scores, the accountant for the run's configuration, both estimates); `ratio` = (train with canaries + "
             "audit) / train without, in bold above the 1.3x target." + (f" {args.note}" if args.note else ""), "",
             f"Training sets: {data_lines} (the timing does not depend on the content). `canary : real rows` is a "
             "step's expected canary rows against its expected real rows, q m / 2 : q N (each canary included with "
             "probability 1/2, then Poisson-sampled at rate q like the real examples).", "",
             "Opacus clips every row it is given over every parameter of the model: each canary row adds its norm and "
             "its share of the clipped sum over all parameters (less than a real row, which also pays the per-example "
             "backward pass), and the hook copies the step's real per-example rows into rows with room for the "
             "canaries (a fixed share of each step). Opacus's overhead thus grows with the share of canary rows, "
             "q m / 2 : q N, on top of the copy's share; the reference trainer gives each canary one coordinate of its "
             "own, so its cost hardly depends on m.", "",
             "| trainer | N | q, steps | sigma | canaries | canary : real rows per step | train s (no canaries) | "
             "train s (canaries) | audit s | train with / without | ratio | accountant eps | certified lb |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        c, rr = r["canary_rows_per_step"], r["real_rows_per_step"]
        lines.append(f"| {r['trainer']}{marks.get(r.get('command'), '')} | {r['examples']:,} | {r['q']:g}, {r['steps']} | {r['sigma']:.3f} | "
                     f"{r['canaries']:,} | {c:,.0f} : {rr:,.0f} ({100 * c / rr:.1f} %) | "
                     f"{r['train_without']:.1f} | {r['train_with']:.1f} | {r['audit']:.2f} | {r['train_ratio']:.2f} | "
                     f"{'**' if r['ratio'] > 1.3 else ''}{r['ratio']:.2f}{'**' if r['ratio'] > 1.3 else ''} | "
                     f"{r['accountant_epsilon']:.3f} | {r['epsilon_lower_bound']:.3f} |")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The one-run audit's overhead in issue 35's GPU settings (Opacus, a small CNN on CIFAR-sized
inputs), at full size on a GPU and at reduced sizes on a CPU.

Issue 35 measured on an H100: 20,000 examples of 3x32x32, batch 256 (Poisson q = 256 / 20,000),
237 steps, a small CNN; training 2.81 s without canaries, 3.47 s / 3.59 s with 1,000 / 10,000
canaries, audit 0.70-0.76 s. This script trains the same loop (``PrivacyEngine.make_private``,
plain SGD, cross-entropy, random synthetic inputs and labels: the timing does not depend on the
content) without canaries and with ``OpacusCanaries``, then audits: the first audit (the
accountant computed) and a second one (the accountant cached per ``(sigma, q, steps, delta)``).
The ratio is ``(train with canaries + first audit) / train without`` (and with the cached audit).

Full size (GPU)::

    python benchmarks/dpsgd_gpu_settings.py --device cuda

Reduced (CPU, niced, about 3 minutes on the shared 2-core machine)::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/dpsgd_gpu_settings.py --examples 2000 --batch 64 --steps 30

It writes ``benchmarks/results/dpsgd_gpu_settings_<device>.md``.
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings
from pathlib import Path


def cnn(classes: int = 10):
    import torch

    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(32 * 8 * 8, classes))


def train(n, batch, steps, sigma, m, device, seed=0):
    """Seconds of the Opacus loop (hook attached inside the clock) and the hook (None for m = 0)."""
    import torch
    from opacus import PrivacyEngine

    from dpaudit.dpsgd.opacus import OpacusCanaries

    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (n,), generator=g)
    torch.manual_seed(seed)
    model = cnn().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=batch)
    model, opt, loader = PrivacyEngine().make_private(module=model, optimizer=opt, data_loader=loader,
                                                      noise_multiplier=sigma, max_grad_norm=1.0, poisson_sampling=True)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    t = time.perf_counter()
    hook = OpacusCanaries(opt, canaries=m, sampling_rate=batch / n, seed=seed, canary_kind="signed") if m else None
    step = hook.step if hook is not None else opt.step
    done = 0
    while done < steps:
        for xb, yb in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb.to(device)), yb.to(device)).backward()
            step()
            done += 1
            if done >= steps:
                break
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - t, hook


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=237)
    ap.add_argument("--canaries", default="1000,10000")
    ap.add_argument("--epsilon", type=float, default=4.0)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    logging.getLogger("absl").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    from dpaudit.dpsgd import noise_for_epsilon

    q = args.batch / args.examples
    sigma = noise_for_epsilon(args.epsilon, 1e-5, q, args.steps)
    train(args.examples, args.batch, 2, sigma, 2, args.device)  # warm-up
    base, _ = train(args.examples, args.batch, args.steps, sigma, 0, args.device)
    lines = ["# One-run audit overhead in issue 35's GPU settings (Opacus, small CNN, 3x32x32)", "",
             f"`python benchmarks/dpsgd_gpu_settings.py --examples {args.examples} --batch {args.batch} --steps "
             f"{args.steps} --device {args.device}` (q = {q:.4g}, sigma {sigma:.3g} for epsilon {args.epsilon:g}); "
             f"wall seconds on {args.device}{' (2 shared cores, niced: inflated by the load)' if args.device == 'cpu' else ''}. "
             "GPU: " + ("this table" if args.device != "cpu" else "not measured") + ".", "",
             f"Training without canaries: {base:.2f} s.", "",
             "| canaries | train (s) | first audit (s) | cached audit (s) | overhead (first) | overhead (cached) | "
             "certified | accountant |", "|---|---|---|---|---|---|---|---|"]
    for m in (int(v) for v in args.canaries.split(",")):
        secs, hook = train(args.examples, args.batch, args.steps, sigma, m, args.device)
        from dpaudit.dpsgd.audit import _claimed_accountant

        _claimed_accountant.cache_clear()
        t = time.perf_counter()
        a = hook.audit(delta=1e-5)
        first = time.perf_counter() - t
        t = time.perf_counter()
        hook.audit(delta=1e-5)
        cached = time.perf_counter() - t
        lines.append(f"| {m:,} | {secs:.2f} | {first:.2f} | {cached:.2f} | {(secs + first) / base:.2f}x | "
                     f"{(secs + cached) / base:.2f}x | {a.epsilon_lower_bound:.3g} | {a.accountant_epsilon:.3g} |")
        print(lines[-1], flush=True)
    out = Path(__file__).parent / "results" / f"dpsgd_gpu_settings_{args.device.split(':')[0]}.md"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

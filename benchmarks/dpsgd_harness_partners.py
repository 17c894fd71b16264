"""Crowd partners for the many-run harness: the in-minus-out shift that micro-batch clipping gives the
canary's coordinate, noise-free, for crowds of several partner counts and sizes.

For each crowd (partners of ``-p e_d`` a side of the canary, 8 real rows at the ends, the canary
``A = 2 (2 s p) + 4`` as in ``dpaudit.dpsgd.harness.make_tasks``) and each grouping of the sampled
batch — by sampled rank (``r``: consecutive micro-batches), by dataset index (``i``), interleaved by
rank (``s``: ``batch[j::g]``), interleaved by index (``is``) — of sizes 2, 3, 4, 8, the mean over
Poisson samples at ``q`` of the summed group-clipped gradients on ``e_d`` with the canary minus
without, divided by ``q``: the sensitivity the bug shows the audit, in units of ``C`` (1 for
per-example clipping, the claim). Larger is easier to certify.

Run (CPU, about a minute)::

    python benchmarks/dpsgd_harness_partners.py --q 0.5 --partners 0.5,0.75,1.0 --sides 6,16
"""

from __future__ import annotations

import argparse

import numpy as np


def _clip(g):
    return g * np.minimum(1.0, 1.0 / (np.linalg.norm(g, axis=-1, keepdims=True) + 1e-12))


def _total(kind, size, data, take):
    """Summed group-clipped gradients, shape (samples, D), for ``take`` (samples, N) sampled rows."""
    R, N = take.shape
    g = data[None] * take[..., None]
    rank = np.cumsum(take, 1) - 1
    gid = {"r": np.where(take, rank // size, N + 1), "i": np.broadcast_to(np.arange(N) // size, (R, N)),
           "s": np.where(take, rank % size, N + 1), "is": np.broadcast_to(np.arange(N) % size, (R, N))}[kind]
    return sum(_clip((g * (gid == j)[..., None]).sum(1)) for j in range(N + 2))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--q", type=float, default=0.5)
    p.add_argument("--partners", default="0.5,0.75,1.0")
    p.add_argument("--sides", default="6,16")
    p.add_argument("--samples", type=int, default=8000)
    args = p.parse_args()
    q = args.q
    real = np.random.default_rng([0, 45]).normal(0.0, 1 / 4 / np.sqrt(8), (8, 8))
    kinds = [(k, g) for k in ("r", "i", "s", "is") for g in (2, 3, 4, 8)]
    for part in (float(x) for x in args.partners.split(",")):
        for side in (int(x) for x in args.sides.split(",")):
            rows = np.zeros((8 + 2 * side, 9))
            rows[:4, :8], rows[4 + 2 * side:, :8] = real[:4], real[4:]
            rows[4:4 + 2 * side, 8] = -part
            canary = np.zeros((1, 9))
            canary[0, 8] = 2 * (2 * side * part) + 4
            data_in = np.concatenate([rows[:4 + side], canary, rows[4 + side:]])
            rng = np.random.default_rng(1)
            shifts = []
            for kind, size in kinds:
                m = [_total(kind, size, d, rng.random((args.samples, d.shape[0])) < q)[:, 8].mean()
                     for d in (data_in, rows)]
                shifts.append((m[0] - m[1]) / q)
            print(f"partner {part:g} C, {side} a side: min {min(shifts):.2f}  " + " ".join(
                f"{k}{g}:{s:.2f}" for (k, g), s in zip(kinds, shifts)), flush=True)


if __name__ == "__main__":
    main()

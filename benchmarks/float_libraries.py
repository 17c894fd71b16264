"""Bit-level audit of four floating-point Laplace implementations (docs/floating_point.md).

For each implementation, ``n`` outputs on the true value 0 and ``n`` on 1 (sensitivity 1, scale
1/eps) go to the float-bits tester (``dpaudit.testers.FloatBitsTester``) against the claim eps-DP,
at beta = 0.05, for 10 seeds; printed: how many seeds flag it, the median margin and the feature
family of the strongest region. Run::

    PYTHONPATH=src python benchmarks/float_libraries.py [n] [eps]

numpy and diffprivlib are seeded; OpenDP's sampler cannot be seeded (its runs differ).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from dpaudit import PureDP
from dpaudit.mechanisms.zoo.floating import FloatLaplace
from dpaudit.testers.float_bits import FloatBitsTester


def numpy_naive(x, n, eps, seed):
    """``x + np.random.default_rng(seed).laplace(0, 1/eps)``."""
    return x + np.random.default_rng(seed).laplace(0.0, 1.0 / eps, n)


def textbook(x, n, eps, seed):
    """dpaudit's zoo:float-laplace (inverse CDF in float64)."""
    out = FloatLaplace(eps).sample(np.array([[x]]), n, np.random.default_rng(seed))[:, 0]
    return out


def diffprivlib_laplace(x, n, eps, seed):
    """``diffprivlib.mechanisms.Laplace(epsilon=eps, sensitivity=1).randomise(x)``, n calls."""
    from diffprivlib.mechanisms import Laplace

    mech = Laplace(epsilon=eps, sensitivity=1.0, random_state=seed)
    return np.array([mech.randomise(x) for _ in range(n)])


def opendp_laplace(x, n, eps, seed):
    """OpenDP ``make_laplace(atom_domain(T=float), absolute_distance(T=float), scale=1/eps)``."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    meas = dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=1.0 / eps)
    return np.array([meas(x) for _ in range(n)])


IMPLEMENTATIONS = {"numpy": numpy_naive, "textbook (zoo:float-laplace)": textbook,
                   "diffprivlib Laplace": diffprivlib_laplace, "OpenDP make_laplace": opendp_laplace}


def main(n: int = 20000, eps: float = 1.0, x1: float = 1.0) -> None:
    tester = FloatBitsTester()
    for name, draw in IMPLEMENTATIONS.items():
        t0, hits, margins, found = time.perf_counter(), 0, [], set()
        for seed in range(10):
            p = draw(0.0, n, eps, 2 * seed).reshape(-1, 1)
            q = draw(x1, n, eps, 2 * seed + 1).reshape(-1, 1)
            out = tester.test(p, q, PureDP(eps), beta=0.05, rng=seed)
            hits += out.violation
            margins.append(out.margin)
            if out.violation:
                found.add(out.note.split(" features")[0].replace("found by ", ""))
        print(f"| {name} | {n} | {eps:g} | {x1:.4g} | {hits}/10 | {np.median(margins):.4f} | "
              f"{', '.join(sorted(found)) or '-'} | {time.perf_counter() - t0:.0f} s |", flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    n = int(args[0]) if args else 20000
    eps = float(args[1]) if len(args) > 1 else 1.0
    for x1 in (1.0, 1.0 / 3.0):
        main(n, eps, x1)

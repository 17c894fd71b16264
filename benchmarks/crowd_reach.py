"""How large a coupling group the coupling check's crowd still sees (issue 45; docs/dpsgd.md §10).

Runs issue 45's setting (``tests/_dpsgd_user_loops.py``: the correlated linear task, ``Canaries`` with the
default kinds, the user's NumPy step with a grouped-clipping bug) for a few steps **with the user's noise
switched off**, so that the crowd coordinate shows exactly what the bug does to it. From the noiseless
observations ``y_t`` it fits the crowd test's least squares ``y = a m - b P`` (``checks.coupling_crowd``) and
reports

* ``a``: what a crowd canary moves the crowd coordinate by under the bug (a correct step: at most 1);
* ``z``: the test's expected z-score ``(a - 1) / se`` of a full run (``se`` from the noise the accountant
  claims, ``sigma C``, and the run's full number of steps), and the chance it is flagged after training at
  the crowd's level (its share of beta: ``--level``; ``Phi(z - z_level)``);
* the counts behind ``a``: groups per step, crowd partners and canaries per group, the fraction of crowd
  canaries alone in their group among canaries, with at least one partner, and outweighed (10 or more
  partners: ``CROWD_NORM / CROWD_PARTNER_NORM``).

Variants (``--crowd``, ``--divisor``, ``--norm``) change the crowd's share, the partners per crowd canary and
the crowd canary's norm, to size a change that would reach larger groups. Under a correct step none of them
changes the test's null (identical canary rows, ``a <= 1``, whatever the counts and norms).

    OMP_NUM_THREADS=1 nice -n 19 python benchmarks/crowd_reach.py --bugs grouped-8,grouped-16,grouped-32,grouped-64
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
RESULTS = ROOT / "benchmarks" / "results"


def reach(bug, setting, *, seed=0, steps=30, crowd=None, divisor=None, norm=None):
    """One noiseless run of ``steps`` steps; returns a dict (see the module docstring)."""
    from scipy.stats import norm as normal

    import _dpsgd_user_loops as U
    from dpaudit.dpsgd import Canaries
    from dpaudit.dpsgd import canaries as cmod

    saved = cmod.CROWD_CANARY_DIVISOR, cmod.CROWD_NORM
    if divisor is not None:
        cmod.CROWD_CANARY_DIVISOR = divisor
    if norm is not None:
        cmod.CROWD_NORM = norm
    try:
        st = dict(U.SETTINGS[setting])
        q, T_full, sigma = st["q"], st["steps"], st["sigma"]
        n, size = 2000, 16
        x, y, _ = U.correlated_task(n=n, size=size, seed=seed)
        rng = np.random.default_rng([seed, 1000])
        kw = {} if crowd is None else {"crowd": crowd}
        can = Canaries([(size,)] * 4, noise_multiplier=sigma, max_grad_norm=1.0, sampling_rate=q, canaries=3000,
                       kinds=("dirac", "split", "spread", "large", "paired", "data"), dataset_size=n,
                       data_canaries=1000, batch_divisor=q * n, seed=seed, **kw)
        big = cmod.CROWD_NORM
        per = []  # per step: groups, and for each group its crowd canaries and partners
        theta = np.zeros(size * 4)
        batches = U.assumption_batches("poisson", n + can.data_indices.size, q, steps, rng)
        for t in range(steps):
            step = can.begin_step(batch_indices=batches[t])
            real = batches[t][step.real_mask]
            xb = x[real]
            g = ((xb @ theta - y[real])[:, None] * xb).astype(np.float32)
            rows = step.insert([g[:, i * size:(i + 1) * size] for i in range(4)])
            N = rows[0].shape[0]
            lab, k = U.group_labels(bug, N)
            mags = np.zeros(N)
            for r in rows[4:]:
                a = np.abs(r.reshape(N, -1)).max(axis=1)
                mags = np.maximum(mags, a)
            is_c = np.isclose(mags, big, rtol=1e-3)
            is_p = np.isclose(mags, cmod.CROWD_PARTNER_NORM, rtol=1e-3)
            per.append((np.bincount(lab[is_c], minlength=k), np.bincount(lab[is_p], minlength=k)))
            update = U.assumption_step(rows, bug=bug, C=1.0, sigma=0.0, divisor=q * n, rng=rng, t=t, T=steps,
                                       user_tensors=4)
            can.observe(update)
            theta = theta - 0.1 * np.concatenate([u.reshape(-1) for u in update[:4]])
        obs = np.array(can._crowd_obs, dtype=float)
    finally:
        cmod.CROWD_CANARY_DIVISOR, cmod.CROWD_NORM = saved
    yv, m, P = obs[:, 0], obs[:, 1], obs[:, 2]
    X = np.stack([m, -P], axis=1)
    inv = np.linalg.inv(X.T @ X)
    a, b = inv @ (X.T @ yv)
    se_full = sigma * math.sqrt(inv[0, 0] * steps / T_full)  # the noise the accountant claims, T_full steps
    z = (a - 1.0) / se_full
    on = [(c, p) for c, p in per if c.sum()]
    cg = np.concatenate([c[c > 0] for c, _ in on]) if on else np.zeros(0)
    cpart = np.concatenate([p[c > 0] for c, p in on]) if on else np.zeros(0)
    ratio = big / cmod.CROWD_PARTNER_NORM
    return {
        "bug": bug, "setting": setting, "seed": seed, "steps": steps, "crowd": can.crowd,
        "divisor": cmod.CROWD_CANARY_DIVISOR if divisor is None else divisor, "norm": big,
        "a": float(a), "b": float(b), "se_full": se_full, "z": float(z),
        "groups_per_step": float(np.mean([len(c) for c, _ in per])),
        "partners_per_group": float(np.mean([p.mean() for _, p in per])),
        "canaries_per_step_on": float(np.mean([c.sum() for c, _ in on])) if on else 0.0,
        "canary_groups_per_step_on": float(np.mean([(c > 0).sum() for c, _ in on])) if on else 0.0,
        "canaries_alone": float((cg == 1).sum() / max(1, cg.sum())),  # of canaries, alone in their group
        "canary_groups_with_partner": float((cpart > 0).mean()) if cpart.size else 0.0,
        "canary_groups_outweighed": float((cpart >= ratio * cg).mean()) if cpart.size else 0.0,
        "p_after_training": float(normal.sf(z)),
    }


def model_a(g, n, crowd=0.15, divisor=3, ratio=10.0):
    """The crowd estimate ``a`` under group clipping in groups of ``g`` rows, from counts alone: ``n`` other
    rows, ``P = ceil(crowd n)`` partners, ``M = ceil(crowd n / divisor)`` canaries; each group's canaries and
    partners Binomial at the step's rates, its clipped crowd coordinate ``sign(ratio c - p)`` (0 without crowd
    rows; other rows' norms ignored); ``b`` from the steps without canaries, ``a = (y_on + b P) / M``.
    Returns ``(a, M, P, groups)``."""
    from scipy.stats import binom

    P, M = math.ceil(crowd * n), math.ceil(crowd * n / divisor)

    def y(N, m):
        pc, pp = m / N, P / N
        tot = 0.0
        for c in range(g + 1):
            wc = binom.pmf(c, g, pc) if m else float(c == 0)
            if wc < 1e-12:
                continue
            for p in range(g + 1 - c):
                wp = binom.pmf(p, g - c, pp / (1 - pc))
                if wp >= 1e-12 and c + p:
                    tot += wc * wp * float(np.sign(ratio * c - p))
        return N / g * tot

    b = -y(n + P, 0) / P
    return (y(n + P + M, M) + b * P) / M, M, P, (n + P + M) / g


def model_table(level=0.0023):
    """The model's ``a`` and z (noise the accountant claims, issue 45's two settings) for today's crowd and for
    the two-count proposal (docs/dpsgd.md §10, "Reach")."""
    from scipy.stats import norm as normal

    za, zb = normal.isf(level), normal.isf(level / 2)
    print("| q | g | today: a | z | P(flagged) | two counts (n/3, n/12; canary 200,000 C): a_1, a_2 | z_1, z_2 | "
          "P(flagged) |")
    print("|---|---|---|---|---|---|---|---|")
    for st, n, sig, T in (("0.05", 436, 1.6728515625, 200), ("1", 4526, 19.953125, 100)):
        for g in (2, 4, 8, 16, 32, 64, 128):
            a0, M0, _, _ = model_a(g, n)
            z0 = (a0 - 1) / (sig * math.sqrt(4 / T) / M0)  # half the steps with canaries
            lv = []
            for div in (3, 12):
                a, M, _, _ = model_a(g, n, divisor=div, ratio=100.0)
                lv.append((a, (a - 1) / (sig * math.sqrt(1 / (T / 4) + 1 / (T / 2)) / M)))
            pf = max(normal.cdf(z - zb) for _, z in lv)
            print(f"| {st} | {g} | {a0:.3f} | {z0:.1f} | {normal.cdf(z0 - za):.3f} | {lv[0][0]:.3f}, {lv[1][0]:.3f} | "
                  f"{lv[0][1]:.1f}, {lv[1][1]:.1f} | {pf:.3f} |")


def main(argv=None):
    from scipy.stats import norm as normal

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bugs", default="grouped-8,grouped-16,grouped-32,grouped-64,strided-16,hashed-16")
    ap.add_argument("--settings", default="q0.05,q1")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--crowd", default="", help="comma-separated Canaries(crowd=) values (default: the library's)")
    ap.add_argument("--divisor", default="", help="comma-separated partners per crowd canary (default 3)")
    ap.add_argument("--norm", default="", help="comma-separated crowd canary norms in C (default 20,000)")
    ap.add_argument("--level", type=float, default=0.0023,
                    help="the crowd test's level after training (its share of beta 0.05; 0.0023 in issue 45's runs)")
    ap.add_argument("--jsonl", default=str(RESULTS / "crowd_reach.jsonl"))
    ap.add_argument("--model", action="store_true", help="print the counts-only model's table and stop")
    args = ap.parse_args(argv)
    if args.model:
        model_table(args.level)
        return
    zl = normal.isf(args.level)
    lists = [[float(v) for v in s.split(",")] if s else [None] for s in (args.crowd, args.divisor, args.norm)]
    out = Path(args.jsonl)
    print("| bug | q | crowd | divisor | canary norm | groups/step | partners/group | canaries alone | canary group "
          "with partner | outweighed | a (noiseless) | z | P(flagged) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for setting in args.settings.split(","):
        for bug in args.bugs.split(","):
            for crowd in lists[0]:
                for div in lists[1]:
                    for nm in lists[2]:
                        for seed in range(args.seeds):
                            t0 = time.process_time()
                            r = reach(bug, setting, seed=seed, steps=args.steps, crowd=crowd, divisor=div, norm=nm)
                            r["cpu_s"] = time.process_time() - t0
                            r["load"] = os.getloadavg()[0]
                            with out.open("a") as fh:
                                fh.write(json.dumps(r) + "\n")
                            print(f"| `{bug}` | {setting} | {r['crowd']:g} | {r['divisor']:g} | {r['norm']:g} | "
                                  f"{r['groups_per_step']:.1f} | {r['partners_per_group']:.2f} | "
                                  f"{r['canaries_alone']:.2f} | {r['canary_groups_with_partner']:.2f} | "
                                  f"{r['canary_groups_outweighed']:.2f} | {r['a']:.3f} | {r['z']:.1f} | "
                                  f"{normal.cdf(r['z'] - zl):.3f} |", flush=True)


if __name__ == "__main__":
    main()

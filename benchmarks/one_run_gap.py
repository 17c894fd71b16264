"""Where the certified one-run bound on a correct DP-SGD run loses against the accountant:
real runs against ideal scores (route a of issue 45 item 3), and the count statistic against
the limit that binds every sound test at the thresholds 10,000 canaries resolve (route b).

Sections (``--parts``):

* ``real``: the reference trainer (:func:`dpaudit.dpsgd.train_with_canaries`, Dirac canaries on
  dedicated coordinates no real gradient touches) against ideal scores of the claimed law, on
  the *same statistic* (the claim test of the likelihood-ratio score at the full beta, rule
  chosen from the claim) and the same number of seeds; per real run: the fitted noise multiplier
  (excluded canaries' spread over the included canaries' mean shift) against the claimed sigma,
  the excluded observations' Kolmogorov-Smirnov p-value against ``N(0, sigma^2)`` and the
  included-at-a-sampled-step ones' against ``N(1, sigma^2)``, and ``audit_run``'s headline (beta
  shared over the three default scores).
* ``limits``: for the rule the claim test chooses (``(k+, k-)``), the Mahloujifar et al. (2025)
  recursion's bound at the *expected* number of correct guesses of an ideal run (no sampling
  noise left) at level beta and at level 1/2; and the **public-coin limit at that rule's
  false-positive rate** ``a``: a mechanism that with a hidden coin of probability ``tau`` runs the
  true mechanism and otherwise releases nothing is ``f_s``-DP for every ``s`` with
  ``h_s*(tau TPR(b)) <= tau a`` at all ``a``; its runs are, with probability ``tau``, exact runs of
  the true mechanism, so **no sound test at level beta (any statistic of the output and the
  mask, counts or not) can certify, on more than a fraction beta / tau of true runs, a parameter
  that this mixture satisfies**. Read at one ``a`` this bounds tests that only see what happens at
  that false-positive rate; read at every ``a`` it is the previous session's ceiling (0.935-0.94).

* ``kinds`` / ``pool``: a user's NumPy loop with the default canary kinds (each kind's law and
  bound), and what pooling ``"split"`` with the block kinds buys on ideal scores.
* ``perlayer``: a per-tensor-clipping run audited with the old pool and the new one.
* ``rules``: every guessing rule near the chosen one, all of beta on it, on fresh ideal runs.
* ``lp``: the recursion against the LP over every per-set count inequality (:func:`set_lp_p_value`).

    python benchmarks/one_run_gap.py --parts real --seeds 10 --q 1
    python benchmarks/one_run_gap.py --parts limits,lp --seeds 30 --sizes 10000
    python benchmarks/one_run_gap.py --parts pool --seeds 20
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy import optimize, stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from one_run_claim import BETA, DELTA, chosen_only, ideal_scores, ours, sigma_for  # noqa: E402

SETTINGS = ((1.0, 10), (0.05, 200))
QS = {1.0, 0.05}  # the settings --q keeps


def cell(v):
    """median [min-max] mean of a list of bound / accountant ratios, as the tables print them."""
    return f"{np.median(v):.3f} [{min(v):.2f}-{max(v):.2f}] {np.mean(v):.3f}"


def claim_rule(sigma: float, q: float, steps: int, m: int):
    """The claim test's chosen rule and its claim (as :func:`one_run_claim.chosen_only`)."""
    from dpaudit.dpsgd.audit import _claimed_accountant, _run_claim
    from dpaudit.dpsgd.reference import DPSGDConfig
    from dpaudit.scores.one_run import guess_grid

    acc = float(_claimed_accountant(sigma, q, steps, DELTA).epsilon)
    cfg = DPSGDConfig(noise_multiplier=sigma, sampling_rate=q, steps=steps)
    cl = _run_claim("lr", cfg, acc, DELTA, simulate=True)
    return tuple(cl.choose(m, guess_grid(m, ratio=2 ** 0.25), BETA, DELTA)), cl, acc


def real_part(seeds: int, m: int) -> list:
    from dpaudit.dpsgd import audit_run, train_with_canaries
    from dpaudit.dpsgd.audit import _scores
    from dpaudit.dpsgd.reference import DPSGDConfig

    lines = ["### (a) Reference trainer against ideal scores, same statistic, same number of seeds", "",
             f"{m:,} canaries, accountant epsilon 2, beta {BETA}. *claim test*: `one_run_audit(..., claim=)` on the "
             "likelihood-ratio score at the full beta (0.8 on the chosen rule, 0.2 on the grid); *chosen rule*: all of "
             "beta on the rule chosen from the claim; *audit_run*: the headline with beta shared over the three default "
             "scores (lr beta/2, spread and whitened beta/4). Fit: excluded spread / included mean shift, over sigma "
             "(1 = the claimed law). KS: Kolmogorov-Smirnov p-values of the standardised excluded observations against "
             "N(0, 1) and the included-and-sampled ones against N(1/sigma, 1), median [min] over seeds. Entries: median "
             "[min-max] mean of bound / accountant.", "",
             "| q, steps | scores | seeds | claim test | chosen rule | audit_run | fit / sigma | KS out | KS in | CPU s |",
             "|---|---|---|---|---|---|---|---|---|---|"]

    for q, T in SETTINGS:
        if q not in QS:
            continue
        sigma = sigma_for(2.0, q, T)
        cfg = DPSGDConfig(noise_multiplier=sigma, sampling_rate=q, steps=T)
        for kind in ("ideal", "reference"):
            c0 = time.process_time()
            rows = {"claim": [], "w1": [], "audit": [], "fit": [], "ks_out": [], "ks_in": []}
            for s in range(seeds):
                if kind == "ideal":
                    sc, mask = ideal_scores(sigma, q, T, m, 3000 + s)
                else:
                    run = train_with_canaries(cfg, canaries=m, seed=300 + s)
                    o, mask, part = np.asarray(run.observations, float), run.mask, run.participation
                    sc = _scores(o, None, sigma, q, "lr")
                    rows["audit"].append(audit_run(run, seed=s, estimates=False).epsilon_lower_bound)
                    out, ins = o[:, ~mask].ravel(), o[part]
                    rows["fit"].append(out.std() / (ins.mean() - out.mean()) / sigma)
                    rows["ks_out"].append(stats.kstest(out / sigma, "norm").pvalue)
                    rows["ks_in"].append(stats.kstest(ins / sigma - 1 / sigma, "norm").pvalue)
                r = ours(sc, mask, sigma, q, T, s)
                rows["claim"].append(r["new"] / r["acc"])
                rows["w1"].append(chosen_only(sc, mask, sigma, q, T, s) / r["acc"])
                if kind == "reference":
                    rows["audit"][-1] /= r["acc"]
                print(kind, q, s, f"{rows['claim'][-1]:.3f}", file=sys.stderr, flush=True)
            cpu = time.process_time() - c0
            ks = (lambda v: f"{np.median(v):.2f} [{min(v):.2g}]" if v else "-")
            lines.append(f"| {q:g}, {T} | {kind} | {seeds} | {cell(rows['claim'])} | {cell(rows['w1'])} | "
                         f"{cell(rows['audit']) if rows['audit'] else '-'} | "
                         f"{cell(rows['fit']) if rows['fit'] else '-'} | {ks(rows['ks_out'])} | {ks(rows['ks_in'])} | "
                         f"{cpu:.0f} |")
    return lines + [""]


def _synthetic_mask(m: int, rule, v: int) -> np.ndarray:
    """A sorted mask on which ``rule`` makes exactly ``v`` correct guesses (the f-DP recursion
    reads only ``(k, v)``)."""
    kp, km = rule
    a = min(v, kp)
    b = v - a
    ms = np.zeros(m, bool)
    ms[m - a:] = True
    ms[:km] = True
    ms[:b] = False
    return ms


def limits_part(seeds: int, sizes) -> list:
    from dpaudit.dpsgd.bounds import dpsgd_family
    from dpaudit.scores.one_run import _guess_counts
    from dpaudit.scores.one_run_claim import claim_bound

    lines = ["### (b) The count statistic against the public-coin limit at its own false-positive rate", "",
             "Per setting: the rule the claim test chooses; the mean number of correct guesses `v` on ideal runs "
             f"({seeds} seeds, sd next to it; the 10,000-canary runs; at 100,000 a quarter of them) and the rule's false-positive rate `a` (wrong 'in' guesses over "
             "excluded canaries); the recursion's bound (`claim_bound`, one rule) at `v` = that mean, at level "
             "beta and at level 1/2 (what a statistic with no sampling noise but the same worst case would reach); "
             "the public-coin limit at `a` with `tau` = beta (a test that certifies on every true run) and `tau` = "
             "2 beta (on half of them); the same limit at `a` / 10 (what reading ten times further into the tail "
             "would allow). Entries: epsilon / accountant.", "",
             "| q, steps | canaries | rule | v (sd) | a | recursion at mean v, beta | at level 1/2 | coin limit at a, "
             "tau = beta | tau = 2 beta | at a / 10, tau = 2 beta |", "|---|---|---|---|---|---|---|---|---|---|"]
    for q, T in SETTINGS:
        sigma = sigma_for(2.0, q, T)
        fam = dpsgd_family(q, T)
        h0 = fam.inverse_tradeoff(sigma)
        for m in sizes:
            rule, cl, acc = claim_rule(sigma, q, T, m)
            vs, fps = [], []
            for s in range(seeds if m <= 10_000 else max(2, seeds // 4)):
                sc, mask = ideal_scores(sigma, q, T, m, 5000 + s)
                ms = mask[np.lexsort((np.random.default_rng(s).random(m), sc))]
                vs.append(_guess_counts(ms, rule)[1])
                fps.append(int((~ms[m - rule[0]:]).sum()) if rule[0] else 0)
            vbar = int(round(np.mean(vs)))
            ms = _synthetic_mask(m, rule, vbar)
            rec = [claim_bound(ms, [rule], [lvl], cl.family, sigma, delta=DELTA, grid=cl._grid).epsilon_lower_bound
                   / acc for lvl in (BETA, 0.5)]
            a = max(np.mean(fps), 1.0) / (m / 2)

            def coin(a_, tau):
                b = optimize.brentq(lambda r: h0(r) - a_, a_, 1 - 1e-12)
                j = 0
                while fam.inverse_tradeoff(sigma * 1.01 ** (j + 1))(tau * b) <= tau * a_ and j < 400:
                    j += 1
                return fam.epsilon(sigma * 1.01 ** j, DELTA) / acc

            lines.append(f"| {q:g}, {T} | {m:,} | {rule} | {np.mean(vs):.1f} ({np.std(vs):.1f}) of "
                         f"{abs(rule[0]) + abs(rule[1])} | {a:.4f} | {rec[0]:.3f} | {rec[1]:.3f} | "
                         f"{coin(a, BETA):.3f} | {coin(a, 2 * BETA):.3f} | {coin(a / 10, 2 * BETA):.3f} |")
            print(lines[-1], file=sys.stderr, flush=True)
    return lines + [""]


def kinds_part(seeds: int, m: int) -> list:
    """A user's NumPy loop (``tests/_dpsgd_user_loops.py``) watched by :class:`dpaudit.dpsgd.Canaries`
    with the default kinds: each kind's observations against the claimed law, each kind's
    likelihood-ratio scores under the claim test at the full beta (what its canaries alone would
    certify), and the audit's headline with beta shared over kinds and checks."""
    from _dpsgd_user_loops import run_user_loop

    from dpaudit.dpsgd.audit import _scores

    lines = ["### (a2) A user's NumPy loop with the default canary kinds (`Canaries`)", "",
             f"{m:,} canaries split over the default kinds; per kind: fit / sigma (excluded spread over the included "
             "mean shift, in the kind's units), its share of beta in `audit()`, and the claim test of its own "
             "likelihood-ratio scores at the *full* beta (bound / accountant; ideal scores of the same size for "
             "comparison); the headline: `audit()` (pooled block kinds, beta shared over kinds and checks). Entries: "
             "median [min-max] mean over seeds.", "",
             "| q, steps | kind | canaries | share of beta | fit / sigma | claim test, full beta | ideal, same size | "
             "headline |", "|---|---|---|---|---|---|---|---|"]

    for q, T in SETTINGS:
        if q not in QS:
            continue
        sigma = sigma_for(2.0, q, T)
        rows: dict = {}
        head = []
        for s in range(seeds):
            can = run_user_loop("correct", epsilon=2.0, q=q, steps=T, canaries=m, seed=400 + s)
            a = can.audit(seed=s, estimates=False)
            head.append(a.epsilon_lower_bound / a.accountant_epsilon)
            for kind, run in can.runs().items():
                o, mask, part = np.asarray(run.observations, float), run.mask, run.participation
                if run.pattern is not None:
                    o = o * run.pattern
                out, ins = o[:, ~mask].ravel(), o[part]
                r = rows.setdefault(kind, {"fit": [], "lr": [], "ideal": [], "n": mask.size,
                                           "share": a.levels.get(("bound", kind), 0.0) / a.beta})
                r["fit"].append(out.std() / (ins.mean() - out.mean()) / sigma)
                sc = _scores(o, None, sigma, q, "lr")
                res = ours(sc, mask, sigma, q, T, s)
                r["lr"].append(res["new"] / res["acc"])
                isc, imask = ideal_scores(sigma, q, T, mask.size, 6000 + s)
                r["ideal"].append(ours(isc, imask, sigma, q, T, s)["new"] / res["acc"])
                print(q, s, kind, f"{r['fit'][-1]:.3f} {r['lr'][-1]:.3f} {r['ideal'][-1]:.3f}", file=sys.stderr,
                      flush=True)
        for i, (kind, r) in enumerate(rows.items()):
            lines.append(f"| {q:g}, {T} | {kind} | {r['n']:,} | {r['share']:.3f} | {cell(r['fit'])} | {cell(r['lr'])} | "
                         f"{cell(r['ideal'])} | {cell(head) if i == 0 else ''} |")
    return lines + [""]


def pool_part(seeds: int) -> list:
    """What pooling ``"split"`` with the block kinds buys on ideal scores: the default 10,000
    canaries of :class:`dpaudit.dpsgd.Canaries` (``dirac`` 2,500, ``split`` and ``large`` 1,666
    each) audited as the old pool (dirac + large: 4,166 canaries at beta / 4) and the new one
    (5,832 at 3 beta / 8), the claim test of the likelihood-ratio score, same seeds."""
    from dpaudit.dpsgd.audit import _claimed_accountant, _run_claim
    from dpaudit.dpsgd.reference import DPSGDConfig
    from dpaudit.scores import one_run_audit

    lines = ["### (a3) Pooling split canaries with dirac and large (ideal scores of the default split)", "",
             "| q, steps | pool | canaries | beta | seeds | claim test / accountant |", "|---|---|---|---|---|---|"]
    for q, T in SETTINGS:
        if q not in QS:
            continue
        sigma = sigma_for(2.0, q, T)
        acc = float(_claimed_accountant(sigma, q, T, DELTA).epsilon)
        cfg = DPSGDConfig(noise_multiplier=sigma, sampling_rate=q, steps=T)
        for name, m, b in (("dirac + large (before)", 4166, BETA / 4), ("dirac + split + large", 5832, 3 * BETA / 8)):
            r = []
            for s in range(seeds):
                sc, mask = ideal_scores(sigma, q, T, m, 8000 + s)
                a = one_run_audit(sc, mask, delta=DELTA, beta=b, rng=s,
                                  claim=_run_claim("lr", cfg, acc, DELTA, simulate=True))
                r.append(a.claim.epsilon_lower_bound / acc)
            lines.append(f"| {q:g}, {T} | {name} | {m:,} | {b:.4f} | {seeds} | {np.median(r):.3f} "
                         f"[{min(r):.2f}-{max(r):.2f}] mean {np.mean(r):.3f} |")
    return lines + [""]


def rules_part(seeds: int) -> list:
    """Is the chosen rule the loss? Every rule near the one the claim test chooses, all of beta on
    it, on the same fresh ideal runs (10,000 canaries)."""
    from dpaudit.scores.one_run_claim import claim_bound

    m = 10_000
    cands = [(269, 269), (227, 226), (190, 190), (160, 160), (135, 134), (113, 113), (95, 95), (190, 0), (269, 0)]
    lines = ["### (b0) The guessing rule: every rule near the chosen one, all of beta on it", "",
             f"{seeds} fresh ideal runs per setting (seeds 9000+), 10,000 canaries; bound / accountant, mean "
             "(median; sd).", "", "| q, steps | chosen | " + " | ".join(str(c) for c in cands) + " |",
             "|---|---|" + "---|" * len(cands)]
    for q, T in SETTINGS:
        if q not in QS:
            continue
        sigma = sigma_for(2.0, q, T)
        rule, cl, acc = claim_rule(sigma, q, T, m)
        out: dict = {c: [] for c in cands}
        for s in range(seeds):
            sc, mask = ideal_scores(sigma, q, T, m, 9000 + s)
            ms = mask[np.lexsort((np.random.default_rng(s).random(m), sc))]
            for c in cands:
                out[c].append(claim_bound(ms, [c], [BETA], cl.family, sigma, delta=DELTA,
                                          grid=cl._grid).epsilon_lower_bound / acc)
        lines.append(f"| {q:g}, {T} | {rule} | " + " | ".join(
            f"{np.mean(out[c]):.3f} ({np.median(out[c]):.3f}; {np.std(out[c]):.3f})" for c in cands) + " |")
    return lines + [""]


def perlayer_part(seeds: int) -> list:
    """The price of pooling ``"split"`` on a run it should catch: a user's loop with per-tensor
    clipping (q = 1, 10 steps, 10,000 canaries), audited with the old pool (dirac + large) and the
    new one on the same run."""
    from _dpsgd_user_loops import run_user_loop

    import dpaudit.dpsgd.canaries as can_mod

    lines = ["### Per-tensor clipping: old pool against new, same run", "",
             "| seed | old: bound / accountant (kind), violated | new: bound / accountant (kind), violated |",
             "|---|---|---|"]
    keep = can_mod.POOLED_KINDS
    try:
        for s in range(seeds):
            can = run_user_loop("per-layer", epsilon=2.0, q=1.0, steps=10, canaries=10_000, seed=400 + s)
            out = []
            for pool in (("dirac", "large", "data"), keep):
                can_mod.POOLED_KINDS = pool
                a = can.audit(seed=s, estimates=False)
                out.append(f"{a.epsilon_lower_bound / a.accountant_epsilon:.3f} ({a.best_kind}), {a.violated}")
            lines.append(f"| {400 + s} | {out[0]} | {out[1]} |")
    finally:
        can_mod.POOLED_KINDS = keep
    return lines + [""]


# --------------------------------------------------------------------------- (b2) every count test

def claim_lines(q: float, steps: int, s: float):
    """The lines whose maximum is the (lower bound on the) claim's ``h*`` at noise multiplier ``s``:
    ``(r - delta(eps)) e^-eps`` and ``1 - delta(eps) - e^eps (1 - r)`` over the profile's epsilons up
    to 12 nats (dropping lines only weakens the claim: the safe side). ``q = 1``: the exact GDP
    profile; ``q < 1``: :func:`dpaudit.dpsgd.bounds.dpsgd_profile` (pessimistic PLD)."""
    from dpaudit.dpsgd.bounds import PROFILE_EPSILONS, dpsgd_profile

    e = PROFILE_EPSILONS
    if q >= 1:
        mu = math.sqrt(steps) / s
        d = np.clip(stats.norm.cdf(-e / mu + mu / 2) - np.exp(e) * stats.norm.cdf(-e / mu - mu / 2), 0, 1)
    else:
        d = dpsgd_profile(s, q, steps)
    keep = (d < 1) & (e <= 12.0)
    e, d = e[keep], d[keep]
    return np.concatenate([np.exp(-e), np.exp(e)]), np.concatenate([-d * np.exp(-e), 1 - d - np.exp(e)])


def set_lp_p_value(slopes, intercepts, M: float, k: int, v: int, *, any_sets: bool = True, rounds: int = 60) -> float:
    """An upper bound on ``P[V >= v]`` over every distribution of the number of correct guesses
    ``V`` in ``{0..k}`` that satisfies, for every set ``A`` of counts (``any_sets=False``: only the
    upward sets ``{j-1, ..., k}`` of Mahloujifar et al.'s recursion) and every line ``(s, c)``,

        H_A = E[(k - V) 1{V in A}] / M  >=  s R_A + c,   R_A = E[V 1{V - 1 in A}] / M.

    Why each holds under the claim (``h* >= s r + c``): for canary ``i``, "``i`` is guessed and the
    number of correct guesses among the *others* lies in ``A``" is a test of the output and
    ``S_{-i}``; f-DP for canary ``i`` given ``S_{-i}`` bounds its power by ``1 - f`` of its size;
    averaging the ``2m`` in/out tests (``m`` for a one-sided rule: ``M = m / 2``) with the concave
    ``1 - f`` gives ``R_A <= 1 - f(H_A)``, i.e. ``H_A >= h*(R_A)``. Mahloujifar et al. (2025) use
    ``A = {j - 1, ..., k}``. The bound is the LP's maximum over cutting planes (sets and lines
    added where the current optimum breaks them; fewer constraints only raise the maximum) read
    from its dual by weak duality (``y >= 0``: ``sum_{i >= v} p_i <= y.b + sum_i max(0, 1{i >= v}
    - (y A)_i)`` since ``p_i <= 1``): a valid p-value at any stage. Benchmark code: it measures
    what the whole family of count tests at one rule adds to the recursion."""
    from scipy.optimize import linprog

    n = k + 1
    i = np.arange(n, dtype=float)
    rows, rhs = [np.ones(n)], [1.0]
    obj = np.zeros(n)
    obj[v:] = -1.0
    best, seen = 1.0, set()
    p = np.zeros(n)
    p[v] = 1.0
    up = np.triu(np.ones((n, n), bool))  # up[j] = {j, ..., k}
    for _ in range(rounds):
        g_r = (i + 1) * np.append(p, 0.0)[1:] / M  # what a_j adds to R_A
        g_h = (k - i) * p / M  # what a_j adds to H_A
        R, H = up @ g_r, up @ g_h
        viol = slopes[None, :] * R[:, None] + intercepts[None, :] - H[:, None]
        lb = viol.argmax(axis=1)
        vv = viol[np.arange(n), lb]
        cand = [(int(lb[j]), up[j]) for j in range(n) if vv[j] > 1e-10]
        if any_sets:
            for line in np.unique(lb[vv > 1e-10]):
                a = (slopes[line] * g_r - g_h) > 0
                Ra, Ha = g_r[a].sum(), g_h[a].sum()
                l2 = int(np.argmax(slopes * Ra + intercepts))
                if slopes[l2] * Ra + intercepts[l2] - Ha > 1e-10:
                    cand.append((l2, a))
        added = 0
        for line, a in cand:
            key = (line, a.tobytes())
            if key in seen:
                continue
            seen.add(key)
            rows.append((slopes[line] * np.concatenate([[False], a[:-1]]) * i - a * (k - i)) / M)
            rhs.append(-intercepts[line])
            added += 1
        if not added:
            break
        A_ub, b_ub = np.vstack(rows), np.array(rhs)
        res = linprog(obj, A_ub=A_ub, b_ub=b_ub, bounds=(0, None), method="highs")
        if res.status != 0:
            break
        p = res.x
        y = np.clip(-res.ineqlin.marginals, 0, None)
        best = min(best, float(y @ b_ub + np.clip(-obj - y @ A_ub, 0, None).sum()))
    return best


def lp_part(seeds: int) -> list:
    from dpaudit.dpsgd.bounds import dpsgd_family
    from dpaudit.scores.one_run import _guess_counts, fdp_population
    from dpaudit.scores.one_run_claim import PARAMETER_RATIO, claim_bound

    lines = ["### (b2) Every count test at the chosen rule: the recursion against all sets of counts", "",
             "At the expected number of correct guesses of ideal runs (10,000 canaries, the rule the claim test "
             "chooses, all of beta on it): the recursion's bound (`claim_bound`), the same LP with only the "
             "recursion's upward sets (it must equal the recursion: a check of the LP), and the LP over *every* set "
             "of counts (`set_lp_p_value`, cutting planes, weak-duality bound): the 1 % grid point of the noise "
             "multiplier each refutes at level beta, as epsilon / accountant, and the p-values at the recursion's "
             "refuted point.", "",
             "| q, steps | rule | mean v | recursion | LP upward sets: p at its s_ub | recursion p there | LP every set: "
             "p there | LP every set: bound | CPU s |", "|---|---|---|---|---|---|---|---|---|"]
    for q, T in SETTINGS:
        c0 = time.process_time()
        sigma = sigma_for(2.0, q, T)
        m = 10_000
        rule, cl, acc = claim_rule(sigma, q, T, m)
        fam = dpsgd_family(q, T)
        vs = []
        for s in range(seeds):
            sc, mask = ideal_scores(sigma, q, T, m, 5000 + s)
            vs.append(_guess_counts(mask[np.lexsort((np.random.default_rng(s).random(m), sc))], rule)[1])
        v = int(round(np.mean(vs)))
        k = abs(rule[0]) + abs(rule[1])
        M = fdp_population(m, rule)
        cb = claim_bound(_synthetic_mask(m, rule, v), [rule], [BETA], cl.family, sigma, delta=DELTA, grid=cl._grid)
        j = int(round(math.log(cb.parameter_bound / sigma) / math.log(PARAMETER_RATIO)))
        s_ub = sigma * PARAMETER_RATIO ** j
        sl, ic = claim_lines(q, T, s_ub)
        p_up = set_lp_p_value(sl, ic, M, k, v, any_sets=False)
        p_any = set_lp_p_value(sl, ic, M, k, v)
        from dpaudit.scores.one_run import fdp_rejects
        h = cl._grid.inverse(j)
        lo, hi = 1e-6, 1.0
        for _ in range(30):
            mid = math.sqrt(lo * hi)
            lo, hi = (lo, mid) if fdp_rejects(h, M, k, v, mid) else (mid, hi)
        jj = j
        while set_lp_p_value(*claim_lines(q, T, sigma * PARAMETER_RATIO ** (jj - 1)), M, k, v) <= BETA:
            jj -= 1
        lines.append(f"| {q:g}, {T} | {rule} | {v} of {k} | {cb.epsilon_lower_bound / acc:.4f} | {p_up:.4f} | "
                     f"{hi:.4f} | {p_any:.4f} | {fam.epsilon(sigma * PARAMETER_RATIO ** jj, DELTA) / acc:.4f} | "
                     f"{time.process_time() - c0:.0f} |")
        print(lines[-1], file=sys.stderr, flush=True)
    return lines + [""]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="real,limits")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--canaries", type=int, default=10_000)
    ap.add_argument("--sizes", default="10000,100000", help="canaries for --parts limits")
    ap.add_argument("--out", default="", help="append the section to this markdown file")
    ap.add_argument("--q", default="1,0.05", help="settings of --parts real (sampling rates)")
    args = ap.parse_args(argv)
    QS.clear()
    QS.update(float(x) for x in args.q.split(","))
    t0, c0 = time.perf_counter(), time.process_time()
    lines = []
    parts = args.parts.split(",")
    if "real" in parts:
        lines += real_part(args.seeds, args.canaries)
    if "perlayer" in parts:
        lines += perlayer_part(args.seeds)
    if "rules" in parts:
        lines += rules_part(args.seeds)
    if "pool" in parts:
        lines += pool_part(args.seeds)
    if "kinds" in parts:
        lines += kinds_part(args.seeds, args.canaries)
    if "lp" in parts:
        lines += lp_part(args.seeds)
    if "limits" in parts:
        lines += limits_part(args.seeds, [int(s) for s in args.sizes.split(",")])
    head = [f"`python benchmarks/one_run_gap.py --parts {args.parts} --seeds {args.seeds} --q {args.q}"
            + (f" --sizes {args.sizes}" if "limits" in parts else "") + f"`: wall {time.perf_counter() - t0:.0f} s, "
            f"CPU {time.process_time() - c0:.0f} s, load {os.getloadavg()[0]:.1f} at the end.", ""]
    text = "\n".join(head + lines)
    print(text)
    if args.out:
        with open(args.out, "a") as fh:
            fh.write("\n" + text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

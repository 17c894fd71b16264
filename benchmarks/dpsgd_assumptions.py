"""One check per assumption of the DP-SGD accountant, caught in one run of a user's own step (issue 45).

The setting (``tests/_dpsgd_user_loops.py``: :func:`run_assumption_loop`, :func:`run_opacus_assumption_loop`):
a linear model of 4 parameter tensors (16 coordinates each), 2,000 real examples whose per-example
gradients share a common direction, 3,000 canaries (``Canaries``' default kinds: dirac, split, spread,
large, paired) + 1,000 data canaries drawn by the user's own loader (+ non-finite canaries for the
non-finite bugs), accountant epsilon 2.00 at delta 1e-5, q = 0.05 for 200 steps and q = 1 for 100 steps,
beta = 0.05 for the audit after training and another 0.05 for the online audit (``Canaries.monitor``).

For every bug class (``ASSUMPTION_BUGS``) and seed: whether the audit after training flags it (which
checks), the step the online audit first flags it at (``-``: never), the certified bound; then the correct
step over ``--controls`` seeds per setting (accused by anything: bounds, checks, online audit), Opacus's
``DPOptimizer`` subclasses with the same bugs, and the online audit's overhead per step.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/dpsgd_assumptions.py --seeds 3 --controls 20

Rows are appended to ``benchmarks/results/dpsgd_assumptions.jsonl`` as they finish (a rerun skips the
rows already there; ``--fresh`` starts over) and the tables are written to
``benchmarks/results/dpsgd_assumptions.md``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
RESULTS = ROOT / "benchmarks" / "results"
JSONL = RESULTS / "dpsgd_assumptions.jsonl"


def _paired_null(eng):
    """The coupling test's null, seen directly: for a correct step the paired canaries' sign-corrected
    observations are ``y = I - N + e`` (units of C: a clipped canary row, ``N`` clipped partner rows), so
    ``r = (y - I + N) / sigma`` should be i.i.d. N(0, 1) over canaries and steps, and each canary's mean
    over the ``T`` steps times ``sqrt(T)`` N(0, 1) too (a persistent per-coordinate offset, invisible step
    by step, inflates the latter; at q = 1 the test's estimate is a difference of such means). Returns the
    standard deviations, the means, Kolmogorov-Smirnov p-values against N(0, 1), and the z of the
    included-minus-excluded difference of the per-canary means (at q = 1 the coupling statistic with the
    known a = b = 1). ``{}`` without paired canaries or steps."""
    import numpy as np
    from scipy import stats

    T = eng.steps if "paired" in getattr(eng, "kinds", ()) else 0
    if not T:
        return {}
    y, part = eng._signed("paired", T)
    npart = np.array(eng._partner_count[:T], dtype=float)
    r = (y - part + npart) / eng.sigma
    per = r.mean(axis=0) * np.sqrt(T)
    inc = eng.masks["paired"]
    diff = (per[inc].mean() - per[~inc].mean()) / np.sqrt(1 / inc.sum() + 1 / (~inc).sum()) if 0 < inc.sum() < inc.size \
        else float("nan")
    return {"sd": float(r.std()), "mean": float(r.mean()), "ks_p": float(stats.kstest(r.ravel(), "norm").pvalue),
            "canary_sd": float(per.std()), "canary_ks_p": float(stats.kstest(per, "norm").pvalue),
            "inc_minus_exc_z": float(diff), "values": int(r.size), "canaries": int(per.size)}


def _row(kind, bug, setting, seed, can, seconds):
    """One run's record: the audit after training and the online audit's first finding."""
    eng = getattr(can, "engine", None) or can
    t0 = time.process_time()
    a = eng.audit(delta=1e-5, beta=0.05, estimates=False)
    audit_s = time.process_time() - t0
    mon = eng._monitor
    online = sorted(mon.findings, key=lambda f: f.at_step) if mon is not None else []
    return {
        "kind": kind, "bug": bug, "setting": setting, "seed": seed, "paired_null": _paired_null(eng),
        "violated": bool(a.violated), "checks": sorted({f"{f.check}:{f.test}" for f in a.violations}),
        "first_step_offline": min((f.at_step for f in a.violations), default=None),
        "online_violated": bool(online), "online_first_step": online[0].at_step if online else None,
        "online_first_check": f"{online[0].check}:{online[0].test}" if online else None,
        "online_checks": sorted({f"{f.check}:{f.test}" for f in online}),
        "bound": a.epsilon_lower_bound, "accountant": a.accountant_epsilon,
        "steps": eng.steps, "train_cpu_s": seconds, "monitor_s": mon.seconds if mon is not None else None,
        "monitor_cpu_s": getattr(mon, "cpu_seconds", None) if mon is not None else None,
        "audit_cpu_s": audit_s, "message": a.findings[0][:300] if a.findings else "",
        "online_message": online[0].message[:300] if online else "",
        "coupling": {k: v for k, v in a.checks.get("coupling", {}).get("tests", {}).get("paired", {}).items()
                     if k in ("p_value", "a", "se", "b")},
        "crowd": {k: v for k, v in a.checks.get("coupling", {}).get("tests", {}).get("crowd", {}).items()
                  if k in ("p_value", "a", "se", "b")},
        # rows per observed step: the crowd's (canaries and partners) and dpaudit's other rows
        "crowd_rows_per_step": (float(sum(m + p for _, m, p in eng._crowd_obs) / max(1, len(eng._crowd_obs)))
                                if getattr(eng, "_crowd_obs", None) else 0.0),
        "own_rows_per_step": float(sum(eng._own_rows) / max(1, len(eng._own_rows))),
        "clip_norms": _norm_summary(getattr(can, "clip_norms", None) or getattr(eng, "clip_norms", None)),
    }


def _norm_summary(norms):
    """The clipping norm over the run (a changing norm: adaptive clipping): min, median, max, and the
    median of ``|log(C_t / C_(t-1))|`` (the typical change from one step to the next); ``{}`` without."""
    import numpy as np

    if not norms:
        return {}
    c = np.asarray(norms, dtype=float)
    return {"min": float(c.min()), "median": float(np.median(c)), "max": float(c.max()),
            "first": float(c[0]), "last": float(c[-1]),
            "median_abs_log_change": float(np.median(np.abs(np.diff(np.log(c))))) if c.size > 1 else 0.0}


def _done():
    if not JSONL.exists():
        return set()
    out = set()
    for line in JSONL.read_text().splitlines():
        r = json.loads(line)
        out.add((r["kind"], r["bug"], r["setting"], r["seed"]))
    return out


def _append(row):
    with JSONL.open("a") as fh:
        fh.write(json.dumps(row) + "\n")
    print(f"{row['kind']:6s} {row['setting']:5s} {row['bug']:22s} seed {row['seed']:2d}: "
          f"{'VIOLATION' if row['violated'] else 'ok':9s} online {row['online_first_step']} "
          f"{row['online_first_check']} | {','.join(row['checks'])} | bound {row['bound']:.3f} | "
          f"train {row['train_cpu_s']:.1f}s monitor {row['monitor_s'] or 0:.2f}s", flush=True)


#: Keyword arguments for ``Canaries`` in the NumPy / PyTorch runs (``--crowd``).
CANARY_KW: dict = {}


def run_numpy(bugs, settings, seeds, done, framework="numpy"):
    """The user's own step (:func:`assumption_step`, or :func:`assumption_step_torch` for ``framework="torch"``)."""
    from _dpsgd_user_loops import ASSUMPTION_BUGS, run_assumption_loop

    for setting in settings:
        for bug in bugs:
            if bug.partition("+")[0] not in ASSUMPTION_BUGS or (bug == "shuffle" and setting == "q1"):
                continue
            for seed in seeds:
                if (framework, bug, setting, seed) in done:
                    continue
                t0 = time.process_time()
                can = run_assumption_loop(bug, setting, seed=seed, monitor=dict(action="record"), framework=framework,
                                          **CANARY_KW)
                _append(_row(framework, bug, setting, seed, can, time.process_time() - t0))


def run_opacus(bugs, settings, seeds, done, kind="opacus"):
    from _dpsgd_user_loops import OPACUS_BUGS, run_opacus_assumption_loop

    for setting in settings:
        for bug in bugs:
            if bug not in OPACUS_BUGS or (bug == "shuffle" and setting == "q1"):
                continue
            for seed in seeds:
                if (kind, bug, setting, seed) in done:
                    continue
                t0 = time.process_time()
                hook = run_opacus_assumption_loop(bug, setting, seed=seed, monitor=dict(action="record"))
                _append(_row(kind, bug, setting, seed, hook, time.process_time() - t0))


def run_readme(seeds, done):
    """The README's DP-SGD examples (correct steps), seeds substituted into their text, each with the online
    audit attached (``action="record"``) next to the audit after training."""
    import contextlib
    import io
    import re

    from test_readme import readme_blocks

    for line, code in readme_blocks():
        if "canaries.audit" not in code or "DPSGDViolation" in code:
            continue
        for s in seeds:
            key = ("readme", f"README.md:{line}", "readme", s)
            if key in done:
                continue
            c = code.replace("manual_seed(0)", f"manual_seed({s})").replace("default_rng(0)", f"default_rng({s})")
            c = c.replace("PRNGKey(t)", f"PRNGKey({s} * 1000 + t)")
            c = re.sub(r'(kinds="default"|batch_divisor=q \* n)\)', rf"\1, seed={s})", c)
            c = re.sub(r"^(canaries = .*)$", r"\1\ncanaries.monitor(action='record')", c, count=1, flags=re.M)
            ns = {"__name__": "__main__"}
            t0 = time.process_time()
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(c, f"README.md:{line}", "exec"), ns)  # noqa: S102 - our own README
            _append(_row("readme", f"README.md:{line}", "readme", s, ns["canaries"], time.process_time() - t0))


def run_reference(settings, seeds, controls, done):
    """The reference trainer (``train_with_canaries``, digits MLP: real gradients) with 3,000 ``"split"``
    canaries at the issue's settings: ``"per-layer-clipping"`` over ``seeds`` seeds and the correct step over
    ``controls`` seeds; accused = ``run_clipping_check`` (beta 0.05) or the certified bound (another 0.05)."""
    from _dpsgd_user_loops import SETTINGS

    from dpaudit.dpsgd import DPSGDConfig, audit_run, run_clipping_check, train_with_canaries

    for setting in settings:
        st = SETTINGS[setting]
        cfg = DPSGDConfig(noise_multiplier=st["sigma"], sampling_rate=st["q"], steps=st["steps"])
        for variant, ss in (("per-layer-clipping", range(seeds)), ("correct", range(1000, 1000 + controls))):
            bug = "per-layer" if variant != "correct" else "correct"
            for seed in ss:
                if ("reference", bug, setting, seed) in done:
                    continue
                t0 = time.process_time()
                run = train_with_canaries(cfg, canaries=3000, variant=variant, canary_kind="split", seed=seed)
                sec = time.process_time() - t0
                chk = run_clipping_check(run, beta=0.05)
                a = audit_run(run, delta=1e-5, beta=0.05, estimates=False)
                checks = (["clipping:mean"] if chk["violated"] else []) + (["bound:split"] if a.violated else [])
                _append({"kind": "reference", "bug": bug, "setting": setting, "seed": seed, "violated": bool(checks),
                         "checks": checks, "first_step_offline": None, "online_violated": False,
                         "online_first_step": None, "online_first_check": None, "online_checks": [],
                         "bound": a.epsilon_lower_bound, "accountant": a.accountant_epsilon, "steps": st["steps"],
                         "train_cpu_s": sec, "monitor_s": None, "audit_cpu_s": None,
                         "message": f"mean contribution {chk['contribution']:.3f} C (p = {chk['p_value']:.3g})",
                         "online_message": ""})


def opacus_null(seeds=5, steps=60):
    """Is the clipping check's null right for Opacus's float32 path? Opacus's own DPOptimizer (correct),
    q = 0.05: the excluded Dirac canaries' observations and the null coordinates are pure float32 noise
    after Opacus's clip, sum, noise and division; pooled over ``seeds`` runs they are compared with N(0, 1)
    (units of sigma): Kolmogorov-Smirnov, tail frequencies, and each run's largest-excess p-value."""
    import numpy as np
    from scipy import stats

    from _dpsgd_user_loops import run_opacus_assumption_loop

    zs, ps = [], []
    for s in range(seeds):
        hook = run_opacus_assumption_loop("correct", "q0.05", seed=3000 + s, steps=steps)
        eng = hook.engine
        o = np.array(eng._obs["dirac"])[:, ~eng.masks["dirac"]] / eng.sigma
        zs += [o.ravel(), np.array(eng._null).ravel()]
        ps.append(eng.clipping_check()["p_value"])
    z = np.concatenate(zs)
    out = {"values": int(z.size), "ks_p": float(stats.kstest(z, "norm").pvalue), "std": float(z.std()),
           "largest_excess_p": ps}
    for c in (2.0, 3.0, 4.0):
        out[f"beyond_{c:g}"] = float(np.mean(np.abs(z) > c))
        out[f"gauss_beyond_{c:g}"] = float(2 * stats.norm.sf(c))
    print(out, flush=True)
    return out


def overhead(settings, reps=1, kinds=("numpy", "torch", "opacus")):
    """CPU seconds per step of the user's loop without and with the online audit (same seed, same
    canaries), for the NumPy and PyTorch user steps and Opacus: ``with - without`` is the monitor's
    cost, and ``monitor_cpu_s_per_step`` its own CPU time measured inside it."""
    from _dpsgd_user_loops import run_assumption_loop, run_opacus_assumption_loop

    out = []
    for kind in kinds:
        for setting in settings:
            for r in range(reps):
                def go(mon):
                    if kind == "opacus":
                        h = run_opacus_assumption_loop("correct", setting, seed=100 + r, monitor=mon)
                        return h.engine
                    return run_assumption_loop("correct", setting, seed=100 + r, monitor=mon, framework=kind)

                t0 = time.process_time()
                can = go(None)
                t1 = time.process_time()
                can2 = go(dict(action="record"))
                t2 = time.process_time()
                steps = can.steps
                m = can2._monitor
                out.append({"kind": kind, "setting": setting, "steps": steps, "without_s_per_step": (t1 - t0) / steps,
                            "with_s_per_step": (t2 - t1) / steps, "monitor_cpu_s_per_step": m.cpu_seconds / steps,
                            "monitor_wall_s_per_step": m.seconds / steps, "checkpoints": len(m.bound_history),
                            "load": os.getloadavg()[0]})
                print(json.dumps(out[-1]), flush=True)
    with (RESULTS / "dpsgd_online_overhead.jsonl").open("a") as fh:
        for o in out:
            fh.write(json.dumps(o) + "\n")
    return out


def tables(overheads=None, null=None):
    from _dpsgd_user_loops import ASSUMPTION_BUGS

    rows, keys = [], set()
    for x in (JSONL.read_text().splitlines() if JSONL.exists() else []):
        r = json.loads(x)
        if (r["kind"], r["bug"], r["setting"], r["seed"]) not in keys:  # first of a key (runs may overlap)
            keys.add((r["kind"], r["bug"], r["setting"], r["seed"]))
            rows.append(r)
    lines = ["# One check per assumption of the DP-SGD accountant (issue 45)", "",
             "`OMP_NUM_THREADS=1 nice -n 10 python benchmarks/dpsgd_assumptions.py --seeds 3 --controls 20` "
             "(setting in the script's docstring). *Caught*: the audit after training (beta 0.05) flags the run; "
             "*online*: the step at which the online audit (another beta 0.05, anytime-valid) first flags it, per "
             "seed (`-`: never); *checks*: what the audit after training rejected.", ""]
    for kind in ("numpy", "torch", "opacus", "reference"):
        sub = [r for r in rows if r["kind"] == kind and not r["bug"].startswith("correct")]
        if not sub:
            continue
        lines += [f"## {dict(numpy='NumPy user step', torch='PyTorch user step', reference='Reference trainer (split canaries; no online audit)').get(kind, 'Opacus DPOptimizer subclasses')}",
                  "",
                  "| assumption | bug | setting | caught (seeds) | online: first flagged at step | checks (after training) "
                  "| certified bound (max) |", "|---|---|---|---|---|---|---|"]
        keys = []
        for r in sub:
            k = (r["bug"], r["setting"])
            if k not in keys:
                keys.append(k)
        keys.sort(key=lambda k: (list(ASSUMPTION_BUGS).index(k[0]) if k[0] in ASSUMPTION_BUGS else 99, k[1]))
        for bug, setting in keys:
            rs = sorted([r for r in sub if r["bug"] == bug and r["setting"] == setting], key=lambda r: r["seed"])
            checks = sorted({c for r in rs for c in r["checks"]})
            steps = ", ".join("-" if r["online_first_step"] is None else f"{r['online_first_step']} "
                              f"({r['online_first_check']})" for r in rs)
            lines.append(f"| {ASSUMPTION_BUGS.get(bug, ('?',))[0]} | `{bug}` | {setting} | "
                         f"{sum(r['violated'] for r in rs)} of {len(rs)} | {steps} | {', '.join(checks) or '-'} | "
                         f"{max(r['bound'] for r in rs):.2f} vs {rs[0]['accountant']:.2f} |")
        lines.append("")
    ctl = [r for r in rows if r["bug"].startswith("correct") or r["kind"] == "readme"]
    if ctl:
        lines += ["## Correct steps (controls)", "",
                  "| step | setting | runs | accused after training | accused online | accused by either | "
                  "largest bound | accountant | checks that fired |", "|---|---|---|---|---|---|---|---|---|"]
        groups = []
        for r in ctl:
            k = (r["kind"], r["bug"], r["setting"])
            if k not in groups:
                groups.append(k)
        for kind, bug, setting in groups:
            rs = [r for r in ctl if (r["kind"], r["bug"], r["setting"]) == (kind, bug, setting)]
            fired = sorted({c for r in rs for c in r["checks"] + r["online_checks"]})
            lines.append(f"| {kind} `{bug}` | {setting} | {len(rs)} | {sum(r['violated'] for r in rs)} | "
                         f"{sum(r['online_violated'] for r in rs)} | "
                         f"{sum(r['violated'] or r['online_violated'] for r in rs)} | "
                         f"{max(r['bound'] for r in rs):.3f} | {rs[0]['accountant']:.2f} | {', '.join(fired) or '-'} |")
        lines.append("")
    mon = [r for r in rows if r["kind"] == "numpy" and r["bug"] == "correct" and r["monitor_s"]]
    if mon:
        lines += ["## Online audit: time", ""]
        for setting in sorted({r["setting"] for r in mon}):
            rs = [r for r in mon if r["setting"] == setting]
            per = [r["monitor_s"] / r["steps"] for r in rs]
            tr = [r["train_cpu_s"] / r["steps"] for r in rs]
            lines.append(f"- {setting}: monitor {1e3 * sum(per) / len(per):.1f} ms per step (wall, inside the "
                         f"loop; max {1e3 * max(per):.1f}), the whole loop with the monitor "
                         f"{1e3 * sum(tr) / len(tr):.0f} ms CPU per step ({len(rs)} runs)")
        lines.append("")
    if overheads:
        lines += ["| user step | setting | steps | loop without monitor (CPU ms/step) | with monitor (CPU ms/step) | "
                  "monitor alone (CPU ms/step) | monitor alone (wall ms/step) | load |", "|---|---|---|---|---|---|---|---|"]
        for o in overheads:
            lines.append(f"| {o['kind']} | {o['setting']} | {o['steps']} | {1e3 * o['without_s_per_step']:.1f} | "
                         f"{1e3 * o['with_s_per_step']:.1f} | {1e3 * o['monitor_cpu_s_per_step']:.1f} | "
                         f"{1e3 * o['monitor_wall_s_per_step']:.1f} | {o['load']:.1f} |")
        lines.append("")
    if null:
        lines += ["## Opacus's float32 path against the checks' null", "",
                  f"{null['values']:,} values of pure noise (excluded Dirac canaries and null coordinates, Opacus "
                  f"DPOptimizer, q = 0.05, {len(null['largest_excess_p'])} runs): standard deviation "
                  f"{null['std']:.4f} sigma, Kolmogorov-Smirnov p = {null['ks_p']:.3g} against N(0, 1); beyond 2 / 3 / 4 "
                  f"sigma {null['beyond_2']:.4g} / {null['beyond_3']:.4g} / {null['beyond_4']:.3g} (Gaussian "
                  f"{null['gauss_beyond_2']:.4g} / {null['gauss_beyond_3']:.4g} / {null['gauss_beyond_4']:.3g}); the "
                  f"largest-excess clipping test's p per run: "
                  f"{', '.join(f'{p:.3g}' for p in null['largest_excess_p'])}.", ""]
    lines.append(f"Load when written: {os.getloadavg()[0]:.1f} (2-core machine shared with other sessions).")
    md = RESULTS / "dpsgd_assumptions.md" if JSONL == RESULTS / "dpsgd_assumptions.jsonl" else JSONL.with_suffix(".md")
    md.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def _append_section(lines, rows, what: str) -> None:
    """End a section with the runs' CPU time and the load, append it to the results file and print it."""
    cpu = sum(r["train_cpu_s"] + (r["audit_cpu_s"] or 0) for r in rows)
    lines += ["", f"{len(rows)} {what}, {cpu / 60:.0f} CPU-minutes in all (training with the online audit, and the "
              f"audit after training). Load when written: {os.getloadavg()[0]:.1f} (2 cores shared with other "
              "sessions).", ""]
    with (RESULTS / "dpsgd_assumptions.md").open("a") as fh:
        fh.write("\n".join(lines))
    print("\n".join(lines))


def section(title, note=""):
    """Append to ``benchmarks/results/dpsgd_assumptions.md`` a dated section from the rows of the current
    JSONL: bug x setting x framework -> caught / seeds and the step each seed is first flagged at online
    (``-``: never), then the controls (accused by anything / runs, the largest certified bound)."""
    import numpy as np

    from _dpsgd_user_loops import ASSUMPTION_BUGS

    rows, keys = [], set()
    for x in JSONL.read_text().splitlines():
        r = json.loads(x)
        k = (r["kind"], r["bug"], r["setting"], r["seed"])
        if k not in keys:
            keys.add(k)
            rows.append(r)
    kinds = [k for k in ("numpy", "torch", "opacus") if any(r["kind"] == k for r in rows)]
    combos = [(k, st) for k in kinds for st in ("q0.05", "q1")
              if any(r["kind"] == k and r["setting"] == st and not r["bug"].startswith("correct") for r in rows)]
    head = "| assumption | bug | " + " | ".join(f"{k} {st}" for k, st in combos) + " |"
    lines = ["", f"## {title}", "", note, "",
             "Each cell: caught after training or online / seeds; then, per seed, the step the online audit first "
             "flagged it at (`-`: never; `x`: caught after training only).", "", head,
             "|" + "---|" * (2 + len(combos))]
    for bug in ASSUMPTION_BUGS:
        if bug.startswith("correct"):
            continue
        cells = []
        for k, st in combos:
            rs = sorted([r for r in rows if (r["kind"], r["bug"], r["setting"]) == (k, bug, st)], key=lambda r: r["seed"])
            if not rs:
                cells.append("")
                continue
            caught = sum(r["violated"] or r["online_violated"] for r in rs)
            fl = ", ".join(str(r["online_first_step"]) if r["online_first_step"] is not None else
                           ("x" if r["violated"] else "-") for r in rs)
            cells.append(f"{caught}/{len(rs)} ({fl})")
        if any(cells):
            lines.append(f"| {ASSUMPTION_BUGS[bug][0]} | `{bug}` | " + " | ".join(cells) + " |")
    ctl = [r for r in rows if r["bug"].startswith("correct")]
    if ctl:
        lines += ["", "| correct step | setting | runs | accused after training | accused online | accused by either | "
                  "largest bound | checks that fired |", "|---|---|---|---|---|---|---|---|"]
        for k, bug, st in sorted({(r["kind"], r["bug"], r["setting"]) for r in ctl}):
            rs = [r for r in ctl if (r["kind"], r["bug"], r["setting"]) == (k, bug, st)]
            fired = sorted({c for r in rs for c in r["checks"] + r["online_checks"]})
            lines.append(f"| {k} `{bug}` | {st} | {len(rs)} | {sum(r['violated'] for r in rs)} | "
                         f"{sum(r['online_violated'] for r in rs)} | {sum(r['violated'] or r['online_violated'] for r in rs)}"
                         f" | {max(r['bound'] for r in rs):.3f} vs {rs[0]['accountant']:.2f} | {', '.join(fired) or '-'} |")
    moving = [r for r in ctl if r.get("clip_norms") and r["clip_norms"]["max"] > r["clip_norms"]["min"]]
    if moving:  # correct runs whose clipping norm changes (adaptive clipping): the norms and the crowd's null
        from scipy import stats

        lines += ["", "Correct runs with a clipping norm that changes at every step: the norm over the runs (first, "
                  "range of the last, range over all steps), the median step-to-step change |log(C_t / C_(t-1))|, "
                  "and the crowd test's p-values (`coupling:crowd`: smallest, Kolmogorov-Smirnov against uniform).", "",
                  "| correct step | setting | runs | C_1 | C_T (range) | C_t (range) | median change per step | "
                  "crowd a (range) | crowd p (min) | KS p (uniform) |", "|---|---|---|---|---|---|---|---|---|---|"]
        for k, bug, st in sorted({(r["kind"], r["bug"], r["setting"]) for r in moving}):
            rs = [r for r in moving if (r["kind"], r["bug"], r["setting"]) == (k, bug, st)]
            cn = [r["clip_norms"] for r in rs]
            ps = [r["crowd"]["p_value"] for r in rs if r.get("crowd")]
            aa = [r["crowd"]["a"] for r in rs if r.get("crowd")]
            ks = stats.kstest(ps, "uniform").pvalue if len(ps) > 1 else float("nan")
            lines.append(f"| {k} `{bug}` | {st} | {len(rs)} | {cn[0]['first']:.2f} | "
                         f"{min(c['last'] for c in cn):.3f}-{max(c['last'] for c in cn):.3f} | "
                         f"{min(c['min'] for c in cn):.3f}-{max(c['max'] for c in cn):.3f} | "
                         f"{np.median([c['median_abs_log_change'] for c in cn]):.4f} | "
                         f"{min(aa):.3f}-{max(aa):.3f} | {min(ps):.3g} | {ks:.2f} |")
    cost = sorted({(r["kind"], r["setting"]) for r in rows if r.get("own_rows_per_step") is not None})
    if cost:
        lines += ["", "Rows per step (mean over the runs): " + "; ".join(
            f"{k} {st}: dpaudit's canaries and partners "
            f"{np.mean([r['own_rows_per_step'] for r in rows if (r['kind'], r['setting']) == (k, st) and 'own_rows_per_step' in r]):.0f}, "
            f"the crowd {np.mean([r.get('crowd_rows_per_step', 0) for r in rows if (r['kind'], r['setting']) == (k, st) and 'own_rows_per_step' in r]):.0f}"
            for k, st in cost) + " (real rows: q x 2,000; data canaries: q x 500)."]
    _append_section(lines, rows, "runs")


def per_bug_section(title, note="", merge=()):
    """Append to ``benchmarks/results/dpsgd_assumptions.md`` a dated section with one line per bug, user step
    and setting: seeds caught (after training or online) / seeds, the checks that flagged (after training and
    online), the step each seed is first flagged at online (``-``: never; ``x``: after training only), the
    largest certified bound, and the crowd test's estimate ``a`` (range over the seeds). Rows of the current
    JSONL and of the files ``merge`` (earlier seeds; the first row of a key wins)."""
    from _dpsgd_user_loops import ASSUMPTION_BUGS

    rows, keys = [], set()
    for f in [*merge, JSONL]:
        for x in Path(f).read_text().splitlines():
            r = json.loads(x)
            k = (r["kind"], r["bug"], r["setting"], r["seed"])
            if k not in keys:
                keys.add(k)
                rows.append(r)
    lines = ["", f"## {title}", "", note, "",
             "| bug | user step | q | caught / seeds | check(s) that flagged (after training; online) | "
             "first flagged online at step (per seed) | largest certified bound | crowd a (min-max) |",
             "|---|---|---|---|---|---|---|---|"]
    order = {b: i for i, b in enumerate(ASSUMPTION_BUGS)}
    combos = sorted({(r["bug"], r["kind"], r["setting"]) for r in rows if not r["bug"].startswith("correct")},
                    key=lambda c: (order.get(c[0], 99), c[1], c[2]))
    for bug, kind, st in combos:
        rs = sorted([r for r in rows if (r["bug"], r["kind"], r["setting"]) == (bug, kind, st)], key=lambda r: r["seed"])
        caught = sum(r["violated"] or r["online_violated"] for r in rs)
        off = sorted({c for r in rs for c in r["checks"]})
        onl = sorted({c for r in rs for c in r.get("online_checks", [])})
        fl = ", ".join(str(r["online_first_step"]) if r.get("online_first_step") is not None else
                       ("x" if r["violated"] else "-") for r in rs)
        a = [r["crowd"]["a"] for r in rs if r.get("crowd", {}).get("a") is not None]
        lines.append(f"| `{bug}` | {kind} | {st[1:]} | {caught}/{len(rs)} | {', '.join(off) or '-'}; "
                     f"{', '.join(onl) or '-'} | {fl} | {max(r['bound'] for r in rs):.2f} vs {rs[0]['accountant']:.2f} | "
                     + (f"{min(a):.2f}-{max(a):.2f}" if a else "-") + " |")
    _append_section(lines, rows, "runs in the table")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--controls", type=int, default=20)
    ap.add_argument("--settings", default="q0.05,q1")
    ap.add_argument("--bugs", default=None, help="comma-separated subset of ASSUMPTION_BUGS")
    ap.add_argument("--parts", default="numpy,torch,controls,opacus,opacus-controls,reference,readme,opacus-null,overhead")
    ap.add_argument("--first-seed", type=int, default=0, help="bug runs use seeds first-seed .. first-seed + seeds - 1")
    ap.add_argument("--first-control", type=int, default=1000,
                    help="controls (and README runs) use seeds first-control .. first-control + controls - 1 "
                         "(correct+nonfinite: 1000 higher, half as many)")
    ap.add_argument("--jsonl", default=None, help="rows go to (and are skipped from) this file instead")
    ap.add_argument("--fresh", action="store_true")
    ap.add_argument("--tables-only", action="store_true")
    ap.add_argument("--section", default=None, help="append a dated section (this title) from --jsonl's rows and stop")
    ap.add_argument("--section-note", default="")
    ap.add_argument("--per-bug", action="store_true", help="--section: one line per bug, user step and setting")
    ap.add_argument("--merge", default="", help="--per-bug: comma-separated earlier JSONL files whose rows join")
    ap.add_argument("--nonfinite-controls", type=int, default=None,
                    help="correct runs with non-finite canaries per setting (default: controls // 2)")
    ap.add_argument("--crowd", type=float, default=None, help="Canaries(crowd=) for the NumPy / PyTorch runs "
                                                               "(default: the library's)")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.getLogger("absl").setLevel(logging.ERROR)
    from _dpsgd_user_loops import ASSUMPTION_BUGS, OPACUS_BUGS

    if args.tables_only:
        ovf = RESULTS / "dpsgd_online_overhead.jsonl"
        tables([json.loads(x) for x in ovf.read_text().splitlines()] if ovf.exists() else None)
        return
    if args.jsonl:
        global JSONL
        JSONL = Path(args.jsonl).resolve()
    if args.section and args.per_bug:
        per_bug_section(args.section, args.section_note, [m for m in args.merge.split(",") if m])
        return
    if args.section:
        section(args.section, args.section_note)
        return
    if args.crowd is not None:
        CANARY_KW["crowd"] = args.crowd
    if args.fresh and JSONL.exists():
        JSONL.unlink()
    done = _done()
    settings = args.settings.split(",")
    parts = args.parts.split(",")
    bugs = [b for b in (args.bugs.split(",") if args.bugs else ASSUMPTION_BUGS) if not b.startswith("correct")]
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    if "numpy" in parts:
        run_numpy(bugs, settings, seeds, done)
    if "torch" in parts:
        run_numpy(bugs, settings, seeds, done, framework="torch")
    if "controls" in parts:
        fc = args.first_control
        run_numpy(["correct"], settings, range(fc, fc + args.controls), done)
        nf = args.controls // 2 if args.nonfinite_controls is None else args.nonfinite_controls
        run_numpy(["correct+nonfinite"], settings, range(fc + 1000, fc + 1000 + nf), done)
    if "opacus" in parts:
        run_opacus([b for b in OPACUS_BUGS if b in bugs], settings, seeds, done)
    if "opacus-controls" in parts:
        run_opacus(["correct"], settings, range(args.first_control, args.first_control + args.controls), done)
    if "opacus-adaclip" in parts:  # Opacus's AdaClipDPOptimizer, correct, its clipping norm changing every step
        run_opacus(["correct-adaclip"], settings, range(args.first_control, args.first_control + args.controls), done)
    if "opacus-adaclip-first-norm" in parts:  # the same, read as before 2026-11-29g: in units of the first norm
        from dpaudit.dpsgd.canaries import Canaries

        begin = Canaries.begin_step
        Canaries.begin_step = lambda self, *a, max_grad_norm=None, **k: begin(self, *a, **k)
        run_opacus(["correct-adaclip"], settings, range(args.first_control, args.first_control + args.controls), done,
                   kind="opacus-first-norm")
        Canaries.begin_step = begin
    if "reference" in parts:
        run_reference(settings, args.seeds, args.controls, done)
    if "readme" in parts:
        run_readme(range(args.first_control, args.first_control + args.controls), done)
    null = opacus_null() if "opacus-null" in parts else None
    ov = overhead(settings) if "overhead" in parts else None
    tables(ov, null)


if __name__ == "__main__":
    main()

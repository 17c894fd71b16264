"""Benchmark: a regime map of privacy accountants on DP-SGD (issue item 6).

Every number in ``benchmarks/results/accounting.md`` comes from one run of this script; the
methods are measured side by side on the same machine, in the same process, one after another.

What is measured
----------------
1. **Offline regime map.** DP-SGD (Poisson-subsampled Gaussian, add/remove, both directions) with
   delta in {1e-5, 1e-9, 1e-13} x k in {100, 1e4, 1e5} x sigma in {0.5, 1, 3} x q in {1e-3, 1e-2}
   (54 settings). For each: eps(delta) and wall time of

   * ``default`` — ``dpaudit.accounting.get_epsilon`` with ``method="auto"`` (refined PLD, then
     prv_accountant, then Monte Carlo, capped by RDP); which method answered and what kind of
     number it is (upper bound / upper confidence bound) are recorded. Its Monte Carlo fallback gets
     the same sample count as the MC column (the library default of 100 000 would exceed the budget);
   * ``PLD 1e-3``, ``PLD 1e-4`` — plain dp_accounting PLD (pessimistic, connect-the-dots) at value
     discretisation 1e-3 and 1e-4 (``reference.epsilon("pld", ...)``), no floating-point control;
   * ``RDP`` — dp_accounting's RDP accountant (``reference.epsilon("rdp", ...)``);
   * ``PRV`` — prv_accountant with eps_error 1e-2 (what ``auto`` uses): its estimate and its upper end.
     Where prv_accountant would refuse delta ("floating point errors will dominate", which it decides
     only after composing: about 90 s at k = 1e5) the refusal is predicted from its domain size and the
     call is not made (the default's time still includes the real refusal). The call runs in a child
     process cut off after ``--prv-seconds`` (measured: 470 s at k = 1e5, sigma = 0.5, q = 1e-2);
   * ``MC`` — ``get_epsilon(..., method="mc", num_samples=m, rng=seed)``: the 95% upper confidence
     bound and the point estimate, with ``m = min(20000, mc_budget / k)`` samples per direction;
     skipped ("budget") when m would be below 1000. Where the default itself answered with Monte Carlo,
     it made exactly this call (same m and seed), so its numbers are reused rather than recomputed.

2. **Online.** sigma = 1, q = 1e-3, delta = 1e-9, K = 1000 and K = 1e4; eps after every step from
   the default online path (``get_epsilon_online`` auto: PLD with one inverse FFT per step),
   dp_accounting's PLD composed step by step (grid 1e-3; at K = 1e4 only the first 500 steps are run
   and the total is *extrapolated*), the Monte Carlo accountant's online mode (upper confidence
   bounds) and dp_accounting's RDP. Error = largest relative error over the checkpoint steps
   1, 10, 100, 1000, 1e4 against the refined offline PLD of each prefix (reference rule below).

3. **Throughput.** samples x steps per second of the Monte Carlo engine
   (``MonteCarloAccountant(num_samples=m, rng=0).get_epsilon(Composition.dpsgd(1.1, 256/60000, 1000),
   1e-5)``, and ``sample_privacy_loss(..., estimator="is")`` alone) next to the raw rate of
   ``np.random.default_rng(0).standard_normal(10**7)``; the ratio says how far the engine is from
   "one normal draw per sample and step".

Reference rule (the "truth" errors are measured against)
--------------------------------------------------------
1. The **refined PLD**: ``certified._pld_refined`` on grids 4e-3, 1e-3, ..., each 4x finer, until two
   successive grids agree within 1e-4 relative, with dpaudit's FFT round-off control (it fails when
   round-off is comparable to delta or the sequence is not monotone); at most ``--ref-seconds`` per
   setting. Its resolution is the relative gap between its last two grids, at least 1e-5 (it is
   itself an upper bound, so a certified method a few 1e-6 below it is not under-reporting).
2. Else **prv_accountant** with eps_error 1e-3 (else 1e-2) in a child process killed after
   ``--ref-seconds``; its value is the estimate and its resolution (upper - lower) / 2 / estimate. An
   eps_error that prv_accountant would refuse ("floating point errors will dominate") is predicted
   from its domain size and not run.
3. Else **no reference**: eps values are reported, errors are not.

Signed relative error = (eps - reference) / reference: negative = the method reports a smaller eps
than the reference. A value below the reference by more than the reference's resolution is
flagged ⚠ (for the bounds this is an unsound answer; for the estimates, PRV est and MC est, it is
only an error). ``failed: <reason>`` marks an exception; no failure stops the run.

Run
---
``PYTHONPATH=src python benchmarks/accounting.py`` (the full map; about 30–40 minutes on the 2
shared cores of the project machine) writes ``benchmarks/results/accounting.md``,
``accounting.json``, ``accounting_regime.png`` (error vs time) and ``accounting_online.png``.
``--quick`` runs four offline settings, small online and throughput runs (< 2 minutes, a smoke
test); ``--only offline|online|throughput`` runs one part; ``--mc-budget`` sets the samples x steps
budget of each Monte Carlo query (default 2e8); ``--ref-seconds`` caps the reference's time per
setting and ``--prv-seconds`` the PRV column's; ``--out`` sets the Markdown path (the other files go next to it).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import multiprocessing as mp
import os
import platform
import shlex
import sys
import time
import traceback
from importlib import metadata
from pathlib import Path

import numpy as np

import dpaudit
from dpaudit.accounting import Composition, MonteCarloAccountant, certified, reference, sample_privacy_loss
from dpaudit.accounting.certified import get_epsilon, get_epsilon_online

HERE = Path(__file__).resolve().parent
DELTAS = (1e-5, 1e-9, 1e-13)
KS = (100, 10_000, 100_000)
SIGMAS = (0.5, 1.0, 3.0)
QS = (1e-3, 1e-2)
QUICK_SETTINGS = ((1e-5, 100, 1.0, 1e-2), (1e-9, 100, 0.5, 1e-3), (1e-13, 100, 1.0, 1e-2), (1e-5, 10_000, 3.0, 1e-3))
MC_MAX_SAMPLES = 20_000
#: smallest reference resolution (relative): two upper bounds closer than this are taken to agree
RES_FLOOR = 1e-5
MC_MIN_SAMPLES = 1_000
#: offline columns: (key, header, is an estimate rather than a bound)
COLUMNS = (("default", "default (auto)", False), ("pld3", "PLD 1e-3", False), ("pld4", "PLD 1e-4", False),
           ("rdp", "RDP", False), ("prv_est", "PRV est", True), ("prv_up", "PRV upper", False),
           ("mc_ucb", "MC UCB", False), ("mc_est", "MC est", True))


def log(msg: str) -> None:
    """Print a progress line at once (a long run shows that it is alive)."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _short(exc: BaseException, n: int = 70) -> str:
    """A one-line, short description of an exception."""
    s = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return s if len(s) <= n else s[: n - 1] + "…"


def _timed(fn, *args, **kwargs) -> dict:
    """Run ``fn``; return {"value", "seconds"} or {"error", "seconds"} (never raises)."""
    t0 = time.perf_counter()
    try:
        return {"value": fn(*args, **kwargs), "seconds": time.perf_counter() - t0}
    except Exception as exc:  # noqa: BLE001 - every failure is reported, none stops the run
        return {"error": _short(exc), "seconds": time.perf_counter() - t0}


# --------------------------------------------------------------------------------------------
# reference
# --------------------------------------------------------------------------------------------
def _prv_domain_bins(comp: Composition, eps_error: float, delta_error: float) -> int:
    """Number of bins prv_accountant's domain would have (cheap: no composition)."""
    from prv_accountant.accountant import compute_safe_domain_size

    prvs, counts = reference._prv_parts(comp)  # noqa: SLF001 - same PRVs as reference.epsilon
    half = compute_safe_domain_size(prvs, counts, eps_error=eps_error, delta_error=delta_error)
    mesh = eps_error / math.sqrt(sum(counts) / 2 * math.log(12 / delta_error))
    return int(2 * half / mesh) + 1


def _prv_would_refuse(comp: Composition, delta: float, eps_error: float) -> bool:
    """True when prv_accountant would raise "Floating point errors will dominate" (its own test)."""
    de = delta / 1000.0
    return float(np.finfo(np.longdouble).eps) * _prv_domain_bins(comp, eps_error, de) > delta - de


def _child(conn, comp, delta, eps_error):
    """Child-process body of :func:`_prv_capped`: send the prv result or the error text."""
    try:
        conn.send(reference.epsilon("prv", comp, delta, eps_error=eps_error))
    except Exception as exc:  # noqa: BLE001
        conn.send({"error": _short(exc)})
    conn.close()


def _prv_capped(comp: Composition, delta: float, eps_error: float, seconds: float) -> dict:
    """prv_accountant's eps(delta) in a child process that is terminated after ``seconds``."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(child, comp, delta, eps_error), daemon=True)
    p.start()
    child.close()
    try:
        if parent.poll(seconds):
            return parent.recv()
        return {"error": f"over the {seconds:g} s cap"}
    except EOFError:
        return {"error": "child process died"}
    finally:
        if p.is_alive():
            p.terminate()
        p.join(5)
        parent.close()


def find_reference(comp: Composition, delta: float, ref_seconds: float) -> dict:
    """The best available reference eps(delta) (module docstring, "Reference rule")."""
    t0 = time.perf_counter()
    notes = []
    try:
        rec = certified._pld_refined(comp, "epsilon", delta, 1e-4, ref_seconds, None)  # noqa: SLF001
        g = rec["grids"]
        res = abs(g[-2]["value"] - g[-1]["value"]) / g[-1]["value"]
        return {"value": rec["value"], "source": f"PLD refined, grid {rec['interval']:.3g}",
                "resolution": max(res, RES_FLOOR), "seconds": time.perf_counter() - t0}
    except Exception as exc:  # noqa: BLE001 - AccountingFailure or a numerical error
        notes.append(f"PLD: {_short(exc, 90)}")
    for ee in (1e-3, 1e-2):
        left = ref_seconds - (time.perf_counter() - t0)
        try:
            if _prv_would_refuse(comp, delta, ee):
                notes.append(f"PRV {ee:g}: would refuse delta")
                continue
        except Exception as exc:  # noqa: BLE001
            notes.append(f"PRV {ee:g} domain: {_short(exc, 50)}")
        if left < 5:
            notes.append("time cap reached")
            break
        r = _prv_capped(comp, delta, ee, left)
        if "error" in r or not all(math.isfinite(r[x]) for x in ("lower", "epsilon", "upper")):
            notes.append(f"PRV {ee:g}: {r.get('error', 'non-finite')}")
            continue
        res = (r["upper"] - r["lower"]) / 2 / r["epsilon"]
        return {"value": r["epsilon"], "source": f"PRV eps_error {ee:g}", "resolution": res,
                "seconds": time.perf_counter() - t0, "notes": notes}
    return {"value": None, "source": "no reference", "resolution": None, "seconds": time.perf_counter() - t0,
            "notes": notes}


# --------------------------------------------------------------------------------------------
# offline
# --------------------------------------------------------------------------------------------
def mc_samples(k: int, budget: float) -> int | None:
    """Monte Carlo samples per direction for k steps within the samples x steps budget (None: skip)."""
    m = int(min(MC_MAX_SAMPLES, budget // k))
    return m if m >= MC_MIN_SAMPLES else None


def offline_setting(delta: float, k: int, sigma: float, q: float, budget: float, ref_seconds: float,
                    prv_seconds: float, seed: int) -> dict:
    """Measure every method and the reference on one setting; never raises."""
    comp = Composition.dpsgd(sigma, q, k)
    row: dict = {"delta": delta, "k": k, "sigma": sigma, "q": q}
    tag = f"delta={delta:g} k={k} sigma={sigma:g} q={q:g}"
    m = mc_samples(k, budget)
    row["mc_samples"] = m

    r = _timed(get_epsilon, comp, delta, num_samples=m or MC_MIN_SAMPLES, rng=seed)
    r_default = r.get("value")
    if "value" in r:
        a = r["value"]
        row["default"] = {"eps": a.epsilon, "seconds": r["seconds"], "method": a.method, "kind": a.kind,
                          "attempts": [f"{x['method']}: {x['status']}" + (f" ({x['reason'][:80]})" if x["reason"] else "")
                                       for x in a.attempts]}
    else:
        row["default"] = {"error": r["error"], "seconds": r["seconds"]}
    log(f"{tag}: default {_brief(row['default'])}")

    for key, grid in (("pld3", 1e-3), ("pld4", 1e-4)):
        r = _timed(reference.epsilon, "pld", comp, delta, value_discretization_interval=grid)
        row[key] = {"eps": r["value"]["epsilon"], "seconds": r["seconds"]} if "value" in r else r
    r = _timed(reference.epsilon, "rdp", comp, delta)
    row["rdp"] = {"eps": r["value"]["epsilon"], "seconds": r["seconds"]} if "value" in r else r
    try:
        refuse = _prv_would_refuse(comp, delta, 1e-2)
    except Exception:  # noqa: BLE001 - then just run it
        refuse = False
    if refuse:  # it would compose first and refuse after (90 s at k = 1e5): the default pays that already
        r = {"error": "refuses this δ (predicted from its domain size; not run)", "seconds": 0.0}
    else:  # in a child process, cut off after the reference cap (measured: 470 s at k = 1e5, sigma = 0.5)
        got = _prv_capped(comp, delta, 1e-2, prv_seconds)
        if "error" in got:
            r = {"error": got["error"], "seconds": prv_seconds if "cap" in got["error"] else float("nan")}
        else:
            r = {"value": got, "seconds": got["seconds"]}
    if "value" in r:
        row["prv_est"] = {"eps": r["value"]["epsilon"], "seconds": r["seconds"]}
        row["prv_up"] = {"eps": r["value"]["upper"], "seconds": r["seconds"]}
    else:
        row["prv_est"] = row["prv_up"] = r
    log(f"{tag}: PLD 1e-3 {_brief(row['pld3'])}, PLD 1e-4 {_brief(row['pld4'])}, RDP {_brief(row['rdp'])}, "
        f"PRV {_brief(row['prv_up'])}")

    d = row["default"]
    if m is None:
        row["mc_ucb"] = row["mc_est"] = {"skip": "budget"}
    elif d.get("method") == "mc":  # the default already made exactly this call (same m, same seed)
        sec = r_default.attempts[-1]["seconds"]
        row["mc_ucb"] = {"eps": d["eps"], "seconds": sec, "shared": True}
        row["mc_est"] = {"eps": r_default.estimate, "seconds": sec, "shared": True}
    else:
        r = _timed(get_epsilon, comp, delta, method="mc", num_samples=m, rng=seed)
        if "value" in r:
            row["mc_ucb"] = {"eps": r["value"].epsilon, "seconds": r["seconds"]}
            row["mc_est"] = {"eps": r["value"].estimate, "seconds": r["seconds"]}
        else:
            row["mc_ucb"] = row["mc_est"] = r
    log(f"{tag}: MC (m={m}) {_brief(row['mc_ucb'])}")

    row["reference"] = find_reference(comp, delta, ref_seconds)
    ref = row["reference"]
    for key, _, _ in COLUMNS:
        c = row[key]
        if ref["value"] is not None and c.get("eps") is not None and math.isfinite(c["eps"]):
            c["err"] = (c["eps"] - ref["value"]) / ref["value"]
            c["under"] = c["err"] < -ref["resolution"]
    log(f"{tag}: reference {ref['source']} = {ref['value']} ({ref['seconds']:.1f} s)")
    return row


def _brief(c: dict) -> str:
    """A short progress-line rendering of one measurement."""
    if "error" in c:
        return f"failed ({c['error'][:50]})"
    if "skip" in c:
        return c["skip"]
    extra = f" [{c['method']}, {c['kind']}]" if "method" in c else ""
    return f"{c['eps']:.6g}{extra} in {c['seconds']:.2f}s"


def _cell(c: dict, with_time: bool = True) -> str:
    """Table cell: signed relative error with ⚠ for under-reporting, and seconds."""
    if "skip" in c:
        return c["skip"]
    if "error" in c:
        return f"failed: {c['error']}"
    if c.get("eps") is None or not math.isfinite(c["eps"]):
        s = f"eps = {c.get('eps')}"
    elif "err" in c:
        s = f"{'⚠ ' if c['under'] else ''}{c['err']:+.1e}"
    else:
        s = f"eps {c['eps']:.4g}"
    if c.get("shared"):
        s += " = default's fallback"
    return f"{s} ({c['seconds']:.2f} s)" if with_time else s


def offline_tables(rows: list[dict]) -> list[str]:
    """Markdown: the regime-map error table, the raw eps table and a per-method summary."""
    out = ["| δ | k | σ | q | reference | default: method, kind | " + " | ".join(h for _, h, _ in COLUMNS) + " |",
           "|---:|---:|---:|---:|---|---|" + "---|" * len(COLUMNS)]
    for r in rows:
        ref = r["reference"]
        rs = (f"{ref['value']:.6g} ({ref['source']}; res. {ref['resolution']:.0e}; {ref['seconds']:.1f} s)"
              if ref["value"] is not None else f"no reference ({ref['seconds']:.1f} s)")
        d = r["default"]
        who = f"{d['method']}, {'UB' if d['kind'] == 'upper_bound' else 'UCB'}" if "method" in d else "–"
        cells = [_cell(r[key], key not in ("prv_est", "mc_est")) for key, _, _ in COLUMNS]
        out.append(f"| {r['delta']:g} | {r['k']} | {r['sigma']:g} | {r['q']:g} | {rs} | {who} | " + " | ".join(cells) + " |")
    out += ["", "### Raw eps values", "",
            "| δ | k | σ | q | reference | " + " | ".join(h for _, h, _ in COLUMNS) + " | MC m |",
            "|---:|---:|---:|---:|---:|" + "---:|" * len(COLUMNS) + "---:|"]
    for r in rows:
        ref = r["reference"]
        vals = []
        for key, _, _ in COLUMNS:
            c = r[key]
            vals.append(f"{c['eps']:.6g}" if c.get("eps") is not None else ("–" if "skip" in c else "failed"))
        rv = f"{ref['value']:.6g}" if ref["value"] is not None else "–"
        out.append(f"| {r['delta']:g} | {r['k']} | {r['sigma']:g} | {r['q']:g} | {rv} | " + " | ".join(vals)
                   + f" | {r['mc_samples'] or '–'} |")
    # fallbacks and reference notes
    notes = [f"* δ={r['delta']:g} k={r['k']} σ={r['sigma']:g} q={r['q']:g}: default tried "
             + "; ".join(r["default"].get("attempts", [])) for r in rows if len(r["default"].get("attempts", [])) > 1]
    refn = [f"* δ={r['delta']:g} k={r['k']} σ={r['sigma']:g} q={r['q']:g}: " + "; ".join(r["reference"]["notes"])
            for r in rows if r["reference"].get("notes")]
    if notes:
        out += ["", "### Where the default fell back", ""] + notes
    if refn:
        out += ["", "### Why the refined PLD was not the reference", ""] + refn
    # summary
    out += ["", "### Summary per method", "",
            "| method | answered | with reference | median abs. rel. error | max abs. rel. error | ⚠ under-reports | "
            "median s | max s | total s |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for key, head, _ in COLUMNS:
        cs = [r[key] for r in rows]
        ok = [c for c in cs if c.get("eps") is not None and math.isfinite(c["eps"])]
        errs = [abs(c["err"]) for c in ok if "err" in c]
        secs = [c["seconds"] for c in cs if "seconds" in c]
        timed_secs = secs if key not in ("prv_est", "mc_est") else []
        out.append(f"| {head} | {len(ok)}/{len(cs)} | {len(errs)} | "
                   + (f"{np.median(errs):.1e} | {max(errs):.1e}" if errs else "– | –")
                   + f" | {sum(1 for c in ok if c.get('under'))} | "
                   + (f"{np.median(timed_secs):.2f} | {max(timed_secs):.2f} | {sum(timed_secs):.1f}" if timed_secs
                      else "(shared) | | ") + " |")
    by = {}
    for r in rows:
        d = r["default"]
        by.setdefault(r["delta"], []).append(f"{d['method']}" if "method" in d else "failed")
    out += ["", "Which method answered the default, per δ: "
            + "; ".join(f"δ={d:g}: " + ", ".join(f"{m} {v.count(m)}" for m in sorted(set(v))) for d, v in by.items())
            + "."]
    return out


def plot_regime(rows: list[dict], path: Path) -> None:
    """PNG: |relative error| vs seconds per method (hollow markers: under the reference)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5))
    marks = "osD^vP*X"
    for (key, head, _), mk in zip(COLUMNS, marks):
        pts = [(r[key]["seconds"], abs(r[key]["err"]), r[key]["err"] < 0) for r in rows if "err" in r[key]]
        if not pts:
            continue
        t, e, neg = (np.array(x) for x in zip(*pts))
        e = np.maximum(e, 1e-8)
        line = ax.scatter(t[~neg], e[~neg], marker=mk, s=22, label=head, alpha=0.75)
        ax.scatter(t[neg], e[neg], marker=mk, s=22, facecolors="none", edgecolors=line.get_facecolor()[0:1],
                   alpha=0.9)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("wall time of the query (s)")
    ax.set_ylabel("|relative error of eps| vs reference (floor 1e-8)")
    ax.set_title("DP-SGD regime map: error vs time (hollow = below the reference)", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------------------------
# online
# --------------------------------------------------------------------------------------------
def online(K: int, m: int, pld_cap_steps: int, ref_seconds: float, seed: int,
           sigma: float = 1.0, q: float = 1e-3, delta: float = 1e-9) -> dict:
    """Online eps after every step 1..K by four methods; errors at checkpoints vs the refined PLD."""
    comp = Composition.dpsgd(sigma, q, K)
    cps = [c for c in (1, 10, 100, 1000, 10_000) if c <= K]
    tag = f"online K={K}"
    truth = {}
    for c in cps:
        truth[c] = find_reference(comp.prefix(c), delta, ref_seconds)
    log(f"{tag}: references {[(c, round(t['value'], 6) if t['value'] else None) for c, t in truth.items()]}")
    res: dict = {}

    r = _timed(get_epsilon_online, comp, delta)
    if "value" in r:
        a = r["value"]
        res["default"] = {"eps": {c: a.epsilon[c - 1] for c in cps}, "seconds": r["seconds"],
                          "label": f"{a.method}, {a.kind}" + (f", grid {a.details['interval']:.3g}"
                                                               if "interval" in a.details else "")}
    else:
        res["default"] = r
    log(f"{tag}: default {res['default'].get('label', res['default'].get('error'))} in {r['seconds']:.1f}s")

    n = min(K, pld_cap_steps)
    r = _timed(reference.online_epsilons, "pld", comp.prefix(n), delta, value_discretization_interval=1e-3)
    if "value" in r:
        cum = r["value"]["cumulative_seconds"]
        e = r["value"]["epsilon"][0]
        entry = {"eps": {c: e[c - 1] for c in cps if c <= n}, "seconds": cum[-1], "label": "dp_accounting, grid 1e-3"}
        if n < K:
            tail = max(1, n // 5)
            rate = (cum[-1] - cum[-1 - tail]) / tail
            entry["extrapolated"] = {"steps_run": n, "seconds_run": cum[-1], "per_step_first": cum[-1] / n,
                                     "per_step_last": rate, "total": cum[-1] + rate * (K - n)}
            entry["seconds"] = entry["extrapolated"]["total"]
        res["pld_compose"] = entry
    else:
        res["pld_compose"] = r
    log(f"{tag}: PLD compose ({n} steps) {r['seconds']:.1f}s")

    r = _timed(get_epsilon_online, comp, delta, method="mc", num_samples=m, rng=seed)
    if "value" in r:
        a = r["value"]
        res["mc"] = {"eps": {c: a.epsilon[c - 1] for c in cps}, "seconds": r["seconds"],
                     "label": f"upper confidence bound, m={m}",
                     "est": {c: a.details["estimate"][c - 1] for c in cps}}
    else:
        res["mc"] = r
    log(f"{tag}: MC online (m={m}) {r['seconds']:.1f}s")

    r = _timed(reference.online_epsilons, "rdp", comp, delta)
    if "value" in r:
        e = r["value"]["epsilon"][0]
        res["rdp"] = {"eps": {c: e[c - 1] for c in cps}, "seconds": r["seconds"], "label": "dp_accounting"}
    else:
        res["rdp"] = r
    log(f"{tag}: RDP {r['seconds']:.1f}s")

    for v in res.values():
        if "eps" not in v:
            continue
        errs = {}
        for c, e in v["eps"].items():
            t = truth[c]
            if t["value"] is not None and e is not None and math.isfinite(e):
                errs[c] = ((e - t["value"]) / t["value"], e - t["value"] < -t["resolution"] * t["value"])
        v["errs"] = errs
    return {"K": K, "sigma": sigma, "q": q, "delta": delta, "checkpoints": cps, "m": m,
            "truth": {c: {k: t[k] for k in ("value", "source", "resolution", "seconds")} for c, t in truth.items()},
            "results": res}


ONLINE_NAMES = {"default": "default (get_epsilon_online auto)", "pld_compose": "dp_accounting PLD, step by step",
                "mc": "MC online", "rdp": "RDP"}


def online_tables(ons: list[dict]) -> list[str]:
    """Markdown table of the online runs."""
    out = ["| K | method | what | max abs. rel. error over checkpoints | smallest signed error | total time (s) |",
           "|---:|---|---|---:|---:|---|"]
    for on in ons:
        for key, name in ONLINE_NAMES.items():
            v = on["results"][key]
            if "error" in v:
                out.append(f"| {on['K']} | {name} | failed: {v['error']} | | | {v['seconds']:.1f} |")
                continue
            errs = v.get("errs", {})
            mx = max((abs(e) for e, _ in errs.values()), default=math.nan)
            mn = min((e for e, _ in errs.values()), default=math.nan)
            flag = "⚠ " if any(u for _, u in errs.values()) else ""
            cps = sorted(errs)
            scope = f" (steps {', '.join(map(str, cps))})" if cps != on["checkpoints"] else ""
            if "extrapolated" in v:
                x = v["extrapolated"]
                t = (f"**≈ {x['total']:.3g} extrapolated** ({x['steps_run']} steps run in {x['seconds_run']:.1f} s; "
                     f"{x['per_step_first'] * 1e3:.1f} ms/step on average, {x['per_step_last'] * 1e3:.1f} ms/step over the "
                     f"last {max(1, x['steps_run'] // 5)}, used for the rest; later steps cost more, so a lower estimate)")
            else:
                t = f"{v['seconds']:.1f}"
            out.append(f"| {on['K']} | {name} | {v['label']} | {mx:.1e}{scope} | {flag}{mn:+.1e} | {t} |")
    out.append("")
    for on in ons:
        out.append(f"References, K = {on['K']}: " + "; ".join(
            f"step {c}: {t['value']:.6g} ({t['source']})" if t["value"] is not None else f"step {c}: none"
            for c, t in on["truth"].items()) + ".")
    return out


def plot_online(ons: list[dict], path: Path) -> None:
    """PNG: eps relative error at each checkpoint, per method, one panel per K."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(ons), figsize=(5.5 * len(ons), 3.8), squeeze=False)
    for ax, on in zip(axes[0], ons):
        for key, name in ONLINE_NAMES.items():
            errs = on["results"][key].get("errs")
            if not errs:
                continue
            cps = sorted(errs)
            ax.plot(cps, [max(abs(errs[c][0]), 1e-8) for c in cps], "o-", ms=4, label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.set_title(f"online, K = {on['K']}, σ={on['sigma']:g}, q={on['q']:g}, δ={on['delta']:g}", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("|relative error of eps| (floor 1e-8)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------------------------
# throughput
# --------------------------------------------------------------------------------------------
def throughput(m: int) -> dict:
    """samples x steps per second of the Monte Carlo engine vs numpy's normal-draw rate."""
    k = 1000
    comp = Composition.dpsgd(1.1, 256 / 60000, k)
    ndirs = len(comp.directions)
    t0 = time.perf_counter()
    MonteCarloAccountant(num_samples=m, rng=0).get_epsilon(comp, 1e-5)
    t_acc = time.perf_counter() - t0
    t0 = time.perf_counter()
    sample_privacy_loss(comp, m, estimator="is", rng=0)
    t_is = time.perf_counter() - t0
    gen = np.random.default_rng(0)
    gen.standard_normal(10**6)  # warm-up
    reps = []
    for _ in range(3):
        t0 = time.perf_counter()
        gen.standard_normal(10**7)
        reps.append(time.perf_counter() - t0)
    normal = 1e7 / min(reps)
    out = {"m": m, "k": k, "directions": ndirs, "acc_seconds": t_acc, "acc_rate": m * k * ndirs / t_acc,
           "is_seconds": t_is, "is_rate": m * k / t_is, "normal_rate": normal}
    log(f"throughput: accountant {out['acc_rate']:.3g} sample-steps/s, IS sampling {out['is_rate']:.3g}, "
        f"numpy normals {normal:.3g}/s")
    return out


def throughput_table(t: dict) -> list[str]:
    """Markdown table of the throughput measurement."""
    return [
        "| what | time (s) | samples·steps per second | ratio to numpy normal draws/s |",
        "|---|---:|---:|---:|",
        f"| `MonteCarloAccountant(num_samples={t['m']}, rng=0).get_epsilon(dpsgd(1.1, 256/60000, {t['k']}), 1e-5)` "
        f"(default estimator, {t['directions']} directions: {t['m']}·{t['k']}·{t['directions']} sample-steps) | "
        f"{t['acc_seconds']:.2f} | {t['acc_rate']:.3g} | {t['acc_rate'] / t['normal_rate']:.3f} |",
        f"| `sample_privacy_loss(…, {t['m']}, estimator='is', rng=0)` (remove direction) | {t['is_seconds']:.2f} | "
        f"{t['is_rate']:.3g} | {t['is_rate'] / t['normal_rate']:.3f} |",
        f"| `np.random.default_rng(0).standard_normal(10**7)` (best of 3) | {1e7 / t['normal_rate']:.3f} | "
        f"{t['normal_rate']:.3g} draws/s | 1 |",
    ]


# --------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------
def machine_info() -> str:
    """One paragraph: platform, CPU count, library versions, date."""
    def ver(p):
        """Installed version of distribution p."""
        try:
            return metadata.version(p)
        except metadata.PackageNotFoundError:
            return "not installed"
    return (f"{_dt.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}; {platform.platform()}, "
            f"{platform.machine()}, Python {platform.python_version()}, os.cpu_count() = {os.cpu_count()} "
            f"(**2 cores shared with other engineers' runs**: timings are noisy and load-dependent); numpy "
            f"{np.__version__}, scipy {ver('scipy')}, dp_accounting {ver('dp-accounting')}, prv_accountant "
            f"{ver('prv-accountant')}, dpaudit {dpaudit.__version__}; CPU only (NumPy backend).")


def main(argv=None) -> int:
    """Command line entry point (module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a handful of settings, < 2 minutes (smoke test)")
    ap.add_argument("--only", choices=("offline", "online", "throughput"), help="run one part only")
    ap.add_argument("--mc-budget", type=float, default=None,
                    help="samples x steps per Monte Carlo query (default 2e8; quick 2e7)")
    ap.add_argument("--ref-seconds", type=float, default=None, help="time cap of the reference per setting "
                    "(default 60; quick 20)")
    ap.add_argument("--prv-seconds", type=float, default=None, help="time cap of the PRV column per setting "
                    "(default 60; quick 20)")
    ap.add_argument("--settings", default=None,
                    help="offline subset: ';'-separated 'delta,k,sigma,q' (for partial runs)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "accounting.md")
    args = ap.parse_args(argv)
    budget = args.mc_budget or (2e7 if args.quick else 2e8)
    ref_s = args.ref_seconds or (20.0 if args.quick else 60.0)
    prv_s = args.prv_seconds or (20.0 if args.quick else 60.0)
    parts = (args.only,) if args.only else ("offline", "online", "throughput")
    if args.settings:
        settings = [tuple(float(x) for x in s.split(",")) for s in args.settings.split(";")]
        settings = [(d, int(k), s, q) for d, k, s, q in settings]
    elif args.quick:
        settings = list(QUICK_SETTINGS)
    else:
        settings = [(d, k, s, q) for d in DELTAS for k in KS for s in SIGMAS for q in QS]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    t_all = time.perf_counter()
    info = machine_info()
    log(info)
    rows, ons, thr = [], [], None
    if "offline" in parts:
        log(f"offline: {len(settings)} settings, MC budget {budget:g} sample-steps, reference cap {ref_s:g} s")
        for i, (d, k, s, q) in enumerate(settings, 1):
            try:
                rows.append(offline_setting(d, k, s, q, budget, ref_s, prv_s, args.seed + i))
            except Exception:  # noqa: BLE001 - a bug in the table code must not lose the other rows
                log(f"setting {i} crashed:\n{traceback.format_exc()}")
            log(f"offline {i}/{len(settings)} done, {time.perf_counter() - t_all:.0f} s elapsed")
    if "online" in parts:
        plan = ((100, 500, 200), (1000, 1000, 200)) if args.quick else ((1000, 2000, 1000), (10_000, 2000, 500))
        for K, m, cap in plan:
            mm = int(min(m, budget // K))
            ons.append(online(K, mm, cap, ref_s, args.seed + 1000 + K))
    if "throughput" in parts:
        thr = throughput(5000 if args.quick else 20_000)
    total = time.perf_counter() - t_all

    quote = lambda a: shlex.quote(a)  # noqa: E731
    cmd = " ".join(["PYTHONPATH=src python benchmarks/accounting.py"] + [quote(a) for a in sys.argv[1:]])
    lines = ["# Privacy accounting benchmark: a regime map on DP-SGD", "",
             f"Regenerate: `{cmd}` ({total / 60:.1f} minutes for this run). Generated by the script; do not edit."
             + (" **Quick run (smoke test): a few settings only.**" if args.quick else "")
             + (f" Offline settings restricted to `{args.settings}`." if args.settings else ""), "",
             f"Machine: {info}", "",
             "Methods, the reference rule and the error convention are described in the module docstring of "
             "`benchmarks/accounting.py`; in short: signed relative error (eps − ref) / ref against the refined PLD "
             "(successive grids 4× apart agreeing within 1e-4, FFT round-off controlled), else prv_accountant with "
             "eps_error 1e-3 / 1e-2, else no reference. **⚠ = below the reference by more than its resolution** "
             "(for a bound: it under-reports eps). Times are wall seconds of one query.", ""]
    out_json = {"machine": info, "command": cmd, "seconds": total, "mc_budget": budget, "ref_seconds": ref_s,
                "prv_seconds": prv_s}
    if rows:
        png = args.out.with_name("accounting_regime.png")
        lines += ["## 1. Offline regime map", "",
                  f"DP-SGD, add/remove. Monte Carlo: m = min({MC_MAX_SAMPLES}, {budget:g} / k) samples per direction "
                  f"(skipped below {MC_MIN_SAMPLES}); the default's Monte Carlo fallback gets the same m. PLD columns "
                  "are plain dp_accounting (pessimistic, no round-off control); PRV uses eps_error 1e-2. Cells: signed "
                  "relative error (seconds); PRV est and MC est share the time of PRV upper and MC UCB; PRV is cut off after "
                  f"{prv_s:g} s and the reference after {ref_s:g} s. UB = certified "
                  "upper bound, UCB = 95% upper confidence bound.", ""]
        lines += offline_tables(rows)
        try:
            plot_regime(rows, png)
            lines += ["", f"![error vs time]({png.name})", ""]
        except Exception as exc:  # noqa: BLE001
            lines += ["", f"(plot failed: {_short(exc)})", ""]
        out_json["offline"] = rows
    if ons:
        png = args.out.with_name("accounting_online.png")
        lines += ["", "## 2. Online: eps after every step", "",
                  f"σ = {ons[0]['sigma']:g}, q = {ons[0]['q']:g}, δ = {ons[0]['delta']:g}. Error at checkpoints "
                  f"{ons[-1]['checkpoints']} (those ≤ K) against the reference of each prefix. The default reports "
                  "every step; dp_accounting's PLD composes one step at a time (grid 1e-3); MC online gives upper "
                  "confidence bounds from one set of running sums.", ""]
        lines += online_tables(ons)
        try:
            plot_online(ons, png)
            lines += ["", f"![online error]({png.name})", ""]
        except Exception as exc:  # noqa: BLE001
            lines += ["", f"(plot failed: {_short(exc)})", ""]
        out_json["online"] = ons
    if thr:
        lines += ["", "## 3. Monte Carlo engine throughput", ""] + throughput_table(thr) + [
            "", f"Engine / raw normal draws: {thr['acc_rate'] / thr['normal_rate']:.3f} (accountant, all directions), "
            f"{thr['is_rate'] / thr['normal_rate']:.3f} (IS sampling alone)."]
        out_json["throughput"] = thr
    args.out.write_text("\n".join(lines) + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(out_json, indent=1, default=str) + "\n")
    print("\n".join(lines), flush=True)
    log(f"written {args.out} (+ .json, PNGs) in {total:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

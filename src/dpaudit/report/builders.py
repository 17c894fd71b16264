"""Build a :class:`~dpaudit.report.document.Document` from a command's JSON result.

One builder per command: :func:`audit_document` (``dpaudit test``), :func:`scores_document`
(``dpaudit audit-scores``) and :func:`account_document` (``dpaudit account``). Each reads only the
JSON-able dict the command prints with ``--json`` (plus what the CLI adds for the report: the
command that reproduces it, library versions, curves), so a report is a deterministic function of
that dict.
"""

from __future__ import annotations

import json
import math

import numpy as np

from . import plots
from .document import Code, Document, Plot, Section, Table, Text

__all__ = ["account_document", "one_run_document", "scores_document", "audit_document"]


def _g(x, digits: int = 6) -> str:
    """A number for a table: ``-`` for None, ``inf``, else ``digits`` significant digits."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return f"{int(x):,}"
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:.{digits}g}"


def _dataset(d, max_items: int = 12) -> str:
    """A dataset (list of records) in one line, long ones shortened."""
    rows = list(d)
    def rec(r):
        r = list(r) if isinstance(r, (list, tuple)) else [r]
        return _g(r[0], 6) if len(r) == 1 else "(" + ", ".join(_g(v, 6) for v in r) + ")"
    shown = ", ".join(rec(r) for r in rows[:max_items])
    more = f", ... ({len(rows)} records)" if len(rows) > max_items else ""
    return f"[{shown}{more}]"


def _flatten(prefix: str, value, out: list) -> None:
    if isinstance(value, dict):
        for k in sorted(value):
            _flatten(f"{prefix}.{k}" if prefix else str(k), value[k], out)
    elif isinstance(value, (list, tuple)) and len(value) > 8:
        out.append((prefix, f"[{len(value)} values]"))
    else:
        out.append((prefix, json.dumps(value, default=str) if not isinstance(value, str) else value))


def _settings_table(items: dict, caption: str = "") -> Table:
    rows: list = []
    for k, v in items.items():
        _flatten(k, v, rows)
    return Table(header=(), rows=tuple(rows), caption=caption)


def _provenance(data: dict, command: str | None, versions: dict | None, seed) -> Section:
    blocks = []
    blocks.append(Text(f"Seed: {seed if seed is not None else 'none recorded (the run is not reproducible bit for bit)'}."))
    if command:
        blocks.append(Text("Command that reproduces this report:"))
        blocks.append(Code(command, language="sh"))
    if versions:
        blocks.append(Table(header=("library", "version"), rows=tuple((k, str(v)) for k, v in versions.items()),
                            caption="Library versions"))
    blocks.append(Code(json.dumps(data, indent=2, sort_keys=True, default=str), language="json", collapsed=True,
                       summary="The full JSON result"))
    return Section("Reproduce", tuple(blocks), anchor="reproduce")


def _claim_text(claim: dict) -> str:
    from ..privacy.claims import claim_from_dict

    try:
        return claim_from_dict(claim).describe()
    except Exception:  # noqa: BLE001 - a report still renders an unknown claim
        return json.dumps(claim)


# --------------------------------------------------------------------------------------- test --


def audit_document(data: dict, *, command: str | None = None, samples=None, samples_note: str = "") -> Document:
    """The report of ``dpaudit test`` from its JSON result (``AuditResult.to_dict()``).

    Parameters
    ----------
    data : dict
        The JSON result of ``dpaudit test``.
    command : str, optional
        The command line that reproduces the run.
    samples : tuple (x0, x1) of arrays, optional
        Outputs of the mechanism on D0 and D1 of the strongest pair, plotted as histogram and ECDF
        (1-D outputs) or a 2-D projection. The JSON holds no outputs; the CLI re-draws a few.
    samples_note : str
        How ``samples`` were obtained (shown under the plot), or why there are none.

    Returns
    -------
    Document
    """
    from ..audit.result import AuditResult
    from ..estimators.base import profile_grid
    from ..testers.base import VIOLATION_KINDS

    result = AuditResult.from_dict(data)
    claim = result.claim
    claim_txt = claim.describe()
    s = result.strongest
    mech = result.mechanism
    if result.violation:
        status = "violation"
        eps_lb = s.outcome.epsilon_lower_bound
        kind = VIOLATION_KINDS[result.violation_kind]
        verdict = (f"{kind.headline}: {mech} does not satisfy {claim_txt}; {kind.meaning} "
                   f"(a false accusation has probability at most {result.beta:g})"
                   + (f", and the mechanism's epsilon is at least {eps_lb:.4g}. " if eps_lb else ". ")
                   + kind.advice)
    elif result.inconclusive:
        status = "inconclusive"
        verdict = f"INCONCLUSIVE: too few samples for the tester's bound to say anything about {claim_txt} for {mech}."
    else:
        status = "pass"
        verdict = (f"No violation found: {len(result.trials)} trial(s) found no evidence against {claim_txt} "
                   f"for {mech} (this does not prove the claim).")

    sections = []
    summary = [
        ("mechanism", mech),
        ("claim", claim_txt),
        ("verdict", result.verdict),
        *((("violation kind", f"{result.violation_kind} ({VIOLATION_KINDS[result.violation_kind].headline})"),
           ("what to do", result.advice)) if result.violation else ()),
        ("tester", str(result.tester.get("tester", "?"))),
        ("confidence", f"a violation is reported wrongly with probability <= {result.beta:g} "
                       f"(split over {result.trial_budget} trial(s): {result.beta_per_trial:g} each)"),
        ("trials", result.trials_summary),
        ("neighbouring", str(result.neighbouring.get("relation", "?"))),
        ("seed", str(result.seed)),
        ("started", result.started_at or "-"),
        ("wall time", f"{result.wall_seconds:.1f} s"),
    ]
    sections.append(Section("Summary", (Table(header=(), rows=tuple(summary)),), anchor="summary"))

    if s is not None:
        o = s.outcome
        b = o.bounds[o.strongest]
        rows = [
            ("trial", str(s.index + 1)),
            ("pair", f"{s.pair.relation}: {s.pair.description}"),
            ("D0", _dataset(s.pair.d0.tolist())),
            ("D1", _dataset(s.pair.d1.tolist())),
            ("direction", f"{b.direction} (P = M(D0), Q = M(D1))"),
            ("samples", f"{s.num_samples:,} per dataset"
             + (f" (of {s.full_samples:,}: the trial stopped at the violation)"
                if s.stopped_early_at_violation else "")),
            (f"{b.divergence} estimate", _g(b.estimate)),
            (f"{b.divergence} lower bound", _g(b.lower)),
        ]
        if o.delta_lower_bound is not None:
            rows.append(("delta lower bound at the claimed epsilon", f"{_g(o.delta_lower_bound)} (claim allows {_g(o.claimed_delta)})"))
        if o.witness_epsilon is not None:
            rows.append(("largest excess at eps'", f"{_g(o.witness_epsilon, 4)} (margin {_g(o.margin, 4)})"))
        else:
            rows.append(("margin", _g(o.margin, 4)))
        if o.epsilon_lower_bound is not None:
            rows.append(("empirical epsilon lower bound", _g(o.epsilon_lower_bound, 4) if o.epsilon_lower_bound > 0 else "none"))
        if getattr(b, "region", ""):
            rows.append(("test region", b.region))
        if o.note:
            rows.append(("note", o.note))
        blocks = [Table(header=(), rows=tuple(rows))]
        if samples is not None:
            x0, x1 = samples
            dim = int(np.asarray(x0).reshape(len(x0), -1).shape[1])
            distinct = len(np.unique(np.vstack([np.asarray(x0, dtype=float).reshape(len(x0), -1),
                                                np.asarray(x1, dtype=float).reshape(len(x1), -1)]), axis=0))
            if distinct <= plots.MAX_DISCRETE:
                what = f"frequency of each of the {distinct} distinct output values"
            elif dim == 1:
                what = "histogram and empirical CDF"
            elif dim == 2:
                what = "scatter of the two coordinates"
            else:
                what = f"scatter on the first two principal axes of the pooled {dim}-dimensional outputs"
            blocks.append(Plot("outputs", plots.output_distributions_png(x0, x1, title=f"outputs of {mech} at the pair of trial {s.index + 1}"),
                               alt="output distributions of M(D0) and M(D1)",
                               caption=f"Output distributions at this pair: {what} of {len(x0):,} outputs per dataset. {samples_note}".strip()))
        else:
            blocks.append(Text(f"No output plot: {samples_note or 'the JSON result holds no outputs and the mechanism was not available to re-draw them.'}"))
        sections.append(Section("Witness pair" if result.violation else "Strongest pair", tuple(blocks), anchor="pair"))

        hs = [bb for bb in (o.bounds if not o.parts else o.bounds) if hasattr(bb, "delta_lower_bound")]
        if hs:
            grid = profile_grid(claim.epsilon)
            allowed = claim.delta_profile(grid)
            curves = [(f"{bb.divergence} {bb.direction}" if len({x.divergence for x in hs}) > 1 else bb.direction, np.asarray(bb.delta_lower_bound(grid), dtype=float)) for bb in hs]
            png = plots.privacy_profile_png(grid, curves, allowed, claimed_epsilon=claim.epsilon,
                                            witness_epsilon=o.witness_epsilon if o.violation else None,
                                            title=f"privacy profile at the pair of trial {s.index + 1}")
            sections.append(Section("Privacy profile", (
                Plot("privacy-profile", png, alt="certified hockey-stick lower bound against the claim's privacy profile",
                     caption=("Certified lower bounds delta_lower_bound(eps') on the hockey-stick divergence H_{e^eps'} "
                              "(each direction; valid for all eps' at once, at the trial's confidence) against what the "
                              "claim allows, delta(eps'). Where a lower bound is above the claim's curve (red), the "
                              "claim is contradicted.")),
            ), anchor="profile"))
        else:
            sections.append(Section("Privacy profile", (Text(
                f"The {result.tester.get('tester')} tester's bound is not a bound on the privacy profile; its lower bound "
                "and what the claim allows are in the pair table above."),), anchor="profile"))

    header = ("#", "finder", "pair", "D0", "D1", "estimate", "lower bound", "margin", "verdict", "seconds")
    rows = []
    highlight = None
    for i, r in enumerate(result.trials):
        o = r.outcome
        b = o.bounds[o.strongest]
        rows.append((str(r.index + 1), r.finder, r.pair.description or "-", _dataset(r.pair.d0.tolist(), 4),
                     _dataset(r.pair.d1.tolist(), 4), _g(b.estimate, 4), _g(b.lower, 4), _g(o.margin, 4), o.status,
                     f"{r.sample_seconds + r.test_seconds:.2f}"))
        if result.strongest_trial is not None and r.index == result.strongest_trial:
            highlight = i
    trial_blocks = [Table(header=header, rows=tuple(rows), highlight=highlight,
                          caption="Every finished trial (margin = lower bound minus what the claim allows; > 0 is a violation).")]
    if len(result.trials) > 1:
        trial_blocks.append(Plot("trials", plots.trials_png([r.index + 1 for r in result.trials],
                                                             [r.outcome.margin for r in result.trials],
                                                             [r.outcome.violation for r in result.trials]),
                                 alt="margin per trial", caption="Margin of each trial."))
    sections.append(Section("Trials", tuple(trial_blocks), anchor="trials"))

    settings = {
        "claim": data.get("claim"), "beta": result.beta, "beta_per_trial": result.beta_per_trial,
        "trial_budget": result.trial_budget, "stopped_early": result.stopped_early, "seed": result.seed,
        "finder": result.finder, "neighbouring": result.neighbouring, "tester": result.tester,
        "execution": result.execution,
    }
    if result.study:
        settings["study"] = result.study
    sections.append(Section("Settings", (_settings_table(settings),), anchor="settings"))
    sections.append(_provenance(data, command, result.versions, result.seed))
    return Document(title=f"dpaudit test: {mech}", verdict=verdict, status=status, sections=tuple(sections),
                    footer=f"dpaudit {result.versions.get('dpaudit', '')} report; schema {data.get('schema_version')}")


# ------------------------------------------------------------------------------- audit-scores --


def scores_document(data: dict, *, command: str | None = None, versions: dict | None = None) -> Document:
    """The report of ``dpaudit audit-scores`` from its JSON result.

    Parameters
    ----------
    data : dict
        The JSON result of ``dpaudit audit-scores``; a ``curves`` entry (``alpha``,
        ``upper``, ``others`` as ``[[label, values], ...]``, ``claim`` as ``[label, values]``)
        adds the trade-off plot.
    command : str, optional
    versions : dict, optional
        Library versions.

    Returns
    -------
    Document
    """
    inp = data.get("inputs", {})
    claim = data.get("claim")
    delta = data.get("delta")
    eps_lb = data.get("epsilon_lower_bound")
    if claim is not None and claim.get("violated"):
        status = "violation"
        verdict = (f"VIOLATION: the scores contradict the claim (epsilon lower bound {_g(eps_lb, 4)} at delta={_g(delta)}, "
                   f"confidence {_g(data.get('confidence'))}).")
    elif claim is not None:
        status = "pass"
        verdict = f"The scores do not contradict the claim; they prove epsilon >= {_g(eps_lb, 4)} at delta={_g(delta)}."
    else:
        status = "info"
        verdict = (f"The scores prove epsilon >= {_g(eps_lb, 4)} at delta={_g(delta)} "
                   f"(confidence {_g(data.get('confidence'))}).")
    summary = [
        ("IN (with canary)", f"{inp.get('in')}: {_g(inp.get('n_in'))} scores"),
        ("OUT (without)", f"{inp.get('out')}: {_g(inp.get('n_out'))} scores"),
        (f"epsilon lower bound (delta={_g(delta)})", f"{_g(eps_lb)} from {data.get('epsilon_source')}"),
        ("TV lower bound", f"{_g(data.get('tv_lower_bound'))} (estimate {_g(data.get('tv_estimate'))})"),
        ("mu (GDP) lower bound", f"{_g(data.get('mu_lower_bound'))} (from TV alone {_g(data.get('mu_from_tv'))})"),
        ("beta", f"{_g(data.get('beta'))} (confidence {_g(data.get('confidence'))})" if "beta" in data
         else f"confidence {_g(data.get('confidence'))}"),
        ("seed", str(inp.get("seed"))),
    ]
    if claim is not None:
        summary.append(("claim", json.dumps({k: v for k, v in claim.items() if not isinstance(v, (list, dict))}, default=str)))
    sections = [Section("Summary", (Table(header=(), rows=tuple(summary)),), anchor="summary")]
    curves = data.get("curves")
    if curves:
        png = plots.tradeoff_png(curves["alpha"], curves["upper"], [tuple(c) for c in curves.get("others", [])],
                                 claim=tuple(curves["claim"]) if curves.get("claim") else None)
        sections.append(Section("Trade-off curve", (Plot(
            "tradeoff", png, alt="trade-off curve with the certified region",
            caption=("Left: type II error against type I error. The certified upper bound (blue) holds at the stated "
                     "confidence: the mechanism's trade-off curve lies below it, so the shaded region between it and "
                     "perfect privacy is ruled out. Right: the same curves as TPR against FPR on log-log axes, where "
                     "the low-FPR region that decides large epsilons is readable.")),), anchor="tradeoff"))
    base = data.get("baselines", {})
    thr, gdp = base.get("threshold", {}), base.get("gdp", {})
    cp = base.get("clopper_pearson") or {}
    cp_rows = (("whole-sample Clopper-Pearson (order statistics)", _g(cp.get("epsilon_lower_bound"), 4),
                _g(cp.get("tv_lower_bound"), 4), _g(cp.get("mu_lower_bound"), 4)),) if cp else ()
    sections.append(Section("Side by side", (Table(
        header=("method", f"eps lower bound (delta={_g(delta)})", "TV lower bound", "mu lower bound"),
        rows=(("histogram (paper 001)", _g(eps_lb, 4), _g(data.get("tv_lower_bound"), 4), _g(data.get("mu_lower_bound"), 4)),
              ("threshold MIA + Clopper-Pearson (split)", _g(thr.get("epsilon_lower_bound"), 4), _g(thr.get("tv_lower_bound"), 4), _g(thr.get("mu_lower_bound"), 4)),
              *cp_rows,
              ("GDP audit (Nasr et al. 2023)", _g(gdp.get("epsilon_of_mu_estimate", gdp.get("epsilon_of_mu")), 4) + "* (estimate)", "-", _g(gdp.get("mu_lower_bound"), 4))),
        caption="* epsilon of the mu bound: a lower bound only if the mechanism's trade-off curve is Gaussian."),), anchor="baselines"))
    attack = data.get("attack")
    if attack:
        auc = attack.get("auc", {})
        arows = [("AUC", _g(auc.get("estimate"), 4), f"[{_g(auc.get('lower'), 4)}, {_g(auc.get('upper'), 4)}]")]
        arows += [(f"TPR at FPR {f}", _g(r.get("estimate"), 4), f"[{_g(r.get('lower'), 4)}, {_g(r.get('upper'), 4)}]")
                  for f, r in attack.get("tpr_at_fpr", {}).items()]
        sections.append(Section("The attack", (Table(
            header=("measure", "estimate", "confidence interval"), rows=tuple(arows),
            caption=("The threshold attack on the score: its AUC (Hoeffding interval for U-statistics) and its true "
                     "positive rate at fixed false positive rates (order statistics and Clopper-Pearson), each interval "
                     "certified at the report's confidence.")),), anchor="attack"))
    settings = {"delta": delta, **{k: data[k] for k in ("beta",) if k in data}, "confidence": data.get("confidence"), "inputs": inp,
                "histogram": {k: v for k, v in data.get("histogram", {}).items() if k in ("method", "confidence", "n_p", "n_q", "details")}}
    sections.append(Section("Settings", (_settings_table(settings),), anchor="settings"))
    shown = {k: v for k, v in data.items() if k != "curves"}
    sections.append(_provenance(shown, command, versions, inp.get("seed")))
    return Document(title="dpaudit audit-scores", verdict=verdict, status=status, sections=tuple(sections),
                    footer=f"dpaudit {(versions or {}).get('dpaudit', '')} report")


# ------------------------------------------------------------------------------------ one run --


def one_run_document(data: dict, *, command: str | None = None, versions: dict | None = None) -> Document:
    """The report of ``dpaudit audit-scores SCORES --mask MASK`` (a one-run audit) from its JSON
    result (:meth:`dpaudit.scores.OneRunAudit.to_dict`): the verdict, the guesses, correct
    guesses, each bound and its p-value.

    Parameters
    ----------
    data : dict
        The JSON result (``method == "one-run"``), optionally with ``inputs`` and ``claim``.
    command : str, optional
    versions : dict, optional

    Returns
    -------
    Document
    """
    delta, beta = data.get("delta"), data.get("beta")
    eps = data.get("epsilon_lower_bound")
    claim = data.get("claim")
    if claim is not None and claim.get("violated"):
        status = "violation"
        verdict = (f"VIOLATION: one run refutes the claim: epsilon >= {_g(eps, 4)} at delta={_g(delta)} "
                   f"(confidence {_g(1 - beta)}).")
    else:
        status = "pass" if claim is not None else "info"
        verdict = (f"One run with {data.get('m')} canaries proves epsilon >= {_g(eps, 4)} at delta={_g(delta)} "
                   f"(confidence {_g(1 - beta)}).")
    g, gs, gm = data.get("guess", {}), data.get("guess_steinke", {}), data.get("guess_mu", {})

    def guesses(x):
        return f"{x.get('guesses')} ({x.get('k_plus')} in, {x.get('k_minus')} out)", str(x.get("correct"))

    rows = (
        ("f-DP test, f = f_(eps,delta) (certified; headline)", _g(eps, 4), *guesses(g)),
        ("Steinke et al. 2023 (certified)", _g(data.get("epsilon_lower_bound_steinke"), 4), *guesses(gs)),
        (f"f-DP test, Gaussian DP: mu >= {_g(data.get('mu_lower_bound'), 4)} (certified)",
         _g(data.get("epsilon_of_mu_estimate"), 4) + "* (estimate)", *guesses(gm)),
    )
    lv = (data.get("details") or {}).get("levels") or [data.get("level"), data.get("level")]
    summary = [("canaries", f"{data.get('m')} ({data.get('n_included')} included)"),
               ("guess rules", f"{data.get('rules')} ({data.get('selection')}), levels {_g(lv[0])} to {_g(lv[1])} "
                               f"(a Bonferroni split of beta = {_g(beta)})"),
               ("p-value (Steinke et al., at the claim's epsilon or 0)", _g(data.get("p_value"), 4))]
    if claim is not None:
        summary.append(("claim", json.dumps({k: v for k, v in claim.items() if not isinstance(v, (list, dict))}, default=str)))
    sections = [
        Section("Summary", (Table(header=(), rows=tuple(summary)),), anchor="summary"),
        Section("One-run audit", (Table(
            header=("test", f"epsilon lower bound (delta={_g(delta)})", "guesses", "correct"), rows=rows,
            caption=("* epsilon of the mu bound at delta: a lower bound only if the mechanism's trade-off curve is "
                     "Gaussian (an estimate otherwise). Each bound holds with probability at least 1 - beta.")),),
            anchor="one-run"),
    ]
    sections.append(_provenance(data, command, versions, (data.get("inputs") or {}).get("seed")))
    return Document(title="dpaudit audit-scores (one run)", verdict=verdict, status=status, sections=tuple(sections),
                    footer=f"dpaudit {(versions or {}).get('dpaudit', '')} report")


# ------------------------------------------------------------------------------------ account --


def account_document(data: dict, *, command: str | None = None, versions: dict | None = None) -> Document:
    """The report of ``dpaudit account`` from its JSON result (``AccountingResult.to_dict()`` or
    ``OnlineAccountingResult.to_dict()`` with ``command``, ``method_requested`` and ``seed``).

    Parameters
    ----------
    data : dict
        The JSON result; for an offline query a ``profile`` entry (``epsilon``, ``curves`` as
        ``[[label, values], ...]``) adds the privacy-profile plot.
    command : str, optional
    versions : dict, optional

    Returns
    -------
    Document
    """
    online = isinstance(data.get("epsilon"), list)
    comp = data.get("composition", {})
    segs = comp.get("segments", [])
    mech = "; ".join(f"{s.get('count')} x {s.get('kind')} (sigma={_g(s.get('sigma'))}, q={_g(s.get('sampling_rate'))})" for s in segs) or "?"
    kind = str(data.get("kind", "")).replace("_", " ")
    if online:
        eps = data["epsilon"]
        verdict = (f"After {len(eps):,} steps of {mech}, epsilon is at most {_g(eps[-1], 6)} at delta={_g(data.get('delta'))} "
                   f"({kind}, method {data.get('method')}).")
    else:
        verdict = data.get("statement") or f"epsilon={_g(data.get('epsilon'))}, delta={_g(data.get('delta'))} ({kind})."
    summary = [("mechanism", mech), ("kind", kind), ("method", f"{data.get('method')} (requested {data.get('method_requested')})")]
    if online:
        summary += [("delta", _g(data.get("delta"))), ("epsilon after last step", _g(data["epsilon"][-1]))]
    else:
        summary += [("query", str(data.get("query"))), ("epsilon", _g(data.get("epsilon"))), ("delta", _g(data.get("delta"))),
                    ("estimate", _g(data.get("estimate"))), ("RDP bound", _g(data.get("rdp_bound")))]
    summary += [("seed", str(data.get("seed"))), ("time", f"{_g(data.get('seconds'), 3)} s")]
    sections = [Section("Summary", (Table(header=(), rows=tuple(summary)),), anchor="summary")]
    if online:
        steps = data.get("steps") or list(range(1, len(data["epsilon"]) + 1))
        rdp = data.get("rdp_bound") if isinstance(data.get("rdp_bound"), list) else None
        png = plots.accounting_online_png(steps, data["epsilon"], rdp, title=f"delta={_g(data.get('delta'))}")
        k = len(steps)
        idx = sorted({0, k // 10, k // 4, k // 2, 3 * k // 4, k - 1})
        sections.append(Section("Epsilon over steps", (
            Plot("epsilon-steps", png, alt="epsilon against steps", caption="epsilon(delta) after each step (and the looser RDP bound)."),
            Table(header=("step", "epsilon", "RDP bound"),
                  rows=tuple((_g(steps[i]), _g(data["epsilon"][i]), _g(rdp[i]) if rdp else "-") for i in idx),
                  caption="Selected steps (all are in the JSON)."),
        ), anchor="steps"))
    elif data.get("profile"):
        prof = data["profile"]
        png = plots.accounting_profile_png(prof["epsilon"], [tuple(c) for c in prof["curves"]],
                                           mark=(data.get("epsilon"), data.get("delta")))
        sections.append(Section("Privacy profile", (Plot(
            "privacy-profile", png, alt="privacy profile delta(epsilon)",
            caption="Upper bounds on delta(epsilon) around the reported point: one pessimistic PLD grid (gaps: round-off "
                    "exceeds delta) and the RDP bound."),), anchor="profile"))
    attempts = data.get("attempts") or []
    if attempts:
        sections.append(Section("Attempts", (Table(
            header=("method", "status", "value", "seconds", "reason"),
            rows=tuple((str(a.get("method")), str(a.get("status")), _g(a.get("value")), _g(a.get("seconds"), 3), str(a.get("reason", ""))) for a in attempts)),), anchor="attempts"))
    settings = {k: data.get(k) for k in ("composition", "method_requested", "method", "beta", "confidence", "seed", "details") if k in data}
    sections.append(Section("Settings", (_settings_table(settings),), anchor="settings"))
    shown = {k: v for k, v in data.items() if k != "profile"}
    sections.append(_provenance(shown, command, versions, data.get("seed")))
    return Document(title="dpaudit account" + (" --online" if online else ""), verdict=verdict, status="info",
                    sections=tuple(sections), footer=f"dpaudit {(versions or {}).get('dpaudit', '')} report")

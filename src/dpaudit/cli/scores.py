"""``dpaudit audit-scores IN OUT``: the privacy loss two samples of scores prove (paper 001).

Exit codes (:data:`dpaudit.cli.options.EXIT_CODES`): 0 bounds computed (no claim given, or the
claim survives), 1 the claim given by ``--epsilon``/``--delta`` is refuted by the histogram audit
(with failure probability ``--beta``), 2 bad input.
"""

from __future__ import annotations

import dataclasses
import json
import math
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from .options import (
    EXIT_HELP, EXIT_OK, EXIT_VIOLATION, alias, check_plot_suffix, check_report_suffix, console, deprecated, emit, fail,
    option, out,
    print_table, write_report,
)

DEFAULT_DELTA = 1e-5  # = dpaudit.scores.audit.DEFAULT_DELTA (not imported: the CLI loads numpy lazily)


class Method(str, Enum):
    """``--method``: how ``audit-scores`` turns scores into a bound (``auto`` chooses)."""

    auto = "auto"
    canonne = "canonne"
    split = "split"


def _parse_bins(spec: str):
    """--bins: 'scott' or a positive integer."""
    from .options import int_or_word

    return int_or_word(spec, "scott", "--bins")


def _fmt(x: float, digits: int = 4) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return f"{x:.{digits}g}"


def _plot(path: Path, curves: dict) -> str:
    """--plot: the report's trade-off plot, in the format named by the suffix; returns the path."""
    from ..report.plots import tradeoff_png

    path.write_bytes(tradeoff_png(curves["alpha"], curves["upper"], [tuple(c) for c in curves["others"]],
                                  claim=tuple(curves["claim"]) if curves.get("claim") else None,
                                  format=path.suffix.lower().lstrip(".")))
    return str(path)


def register(app: typer.Typer) -> None:
    """Add this module's command (``audit-scores``) to app."""

    @app.command("audit-scores", epilog=EXIT_HELP)
    def audit_scores_cmd(
        ctx: typer.Context,
        in_path: Path = typer.Argument(..., metavar="IN", help="Scores WITH the canary (dataset D): .npy, .npz, .csv, .txt or .json (a header row and an index column are recognised; --column picks one of several). With --mask: one score per canary of a one-run audit."),
        out_path: Optional[Path] = typer.Argument(None, metavar="[OUT]", help="Scores WITHOUT the canary (neighbouring dataset D'). Not given with --mask."),
        mask: Optional[Path] = typer.Option(None, "--mask", help="One-run audit: which canaries were included (0/1 per canary, same order as IN; each included independently with probability 1/2)."),
        alternative: str = typer.Option("two-sided", "--alternative", help="Which way scores of included canaries lean: greater (a logit, an inner product), less (a loss) or two-sided (pays for both). One-run default: greater."),
        column: Optional[str] = typer.Option(None, "--column", metavar="NAME", help="The column of IN and OUT to read where a file holds several: a header name, an .npz or JSON key, or a number from 1."),
        quiet: bool = typer.Option(False, "--quiet", help="Do not say what was read from each file."),
        epsilon: Optional[float] = option("epsilon", None, "the claimed epsilon: checked against the evidence and drawn on the plot"),
        delta: Optional[float] = option("delta", None, f"the claimed delta with --epsilon, and the delta at which the epsilon lower bound is reported; default {DEFAULT_DELTA:g} for the bound, 0 (pure DP) for the claim"),
        beta: float = option("beta", 0.05, "of overstating the privacy loss, per method (confidence 1 - beta)"),
        bins: str = option("bins", "scott", "chosen on held-apart samples"),
        method: Method = option("method", Method.auto, "of the confidence bound: canonne (TV bounds), split (sample splitting + Clopper–Pearson), auto (both, the tighter at each point)"),
        thresholds: int = typer.Option(64, "--thresholds", help="Candidate thresholds of the threshold-MIA and GDP baselines."),
        plot: Optional[Path] = option("plot", None, "the trade-off curves"),
        seed: Optional[int] = option("seed", None, "of the sample splits"),
        json_out: bool = option("json", False),
        report: Optional[Path] = option("report", None, "the HTML page shows the trade-off curve with its certified region, log axes for the low-FPR region"),
        confidence: Optional[float] = alias("--confidence", "--beta (= 1 - confidence)"),
        claim_epsilon: Optional[float] = alias("--claim-epsilon", "--epsilon"),
        claim_delta: Optional[float] = alias("--claim-delta", "--delta"),
    ) -> None:
        """Bound the privacy loss that two samples of scores prove (paper 001).

        IN holds a score (e.g. a canary's loss) from each run WITH the canary, OUT from each run
        WITHOUT it. Prints lower confidence bounds on epsilon (at --delta), total variation and
        the Gaussian-DP mu, next to the threshold membership-inference and GDP baselines; with
        --epsilon, checks that claim against them.

        With --mask, a one-run audit instead (Steinke et al. 2023; Mahloujifar et al. 2025): IN
        holds one score per canary of a single training run and MASK which canaries were
        included; certified epsilon and GDP mu lower bounds from the guesses on the highest and
        lowest scores (docs/scores.md §9).

        Examples:

          dpaudit audit-scores with.npy without.npy --delta 1e-5 --plot tradeoff.png
          dpaudit audit-scores scores.npy --mask included.npy --delta 1e-5
        """
        from .._validate import check_delta, check_int, check_probability
        from ..privacy.claims import make_claim
        from ..scores.audit import audit_scores
        from ..scores.io import read_scores

        def load(path, role):
            values, what = read_scores(path, name=f"{role} ({path})", column=column)
            if not quiet:
                console.print(escape(f"read {role}: {what}"), highlight=False, soft_wrap=True)
            return values

        try:
            if deprecated(confidence, "--confidence", "--beta (= 1 - confidence)") is not None:
                check_probability(confidence, "--confidence")
                beta = 1.0 - confidence
            else:
                check_probability(beta, "--beta")
                confidence = 1.0 - beta
            if deprecated(claim_epsilon, "--claim-epsilon", "--epsilon") is not None:
                epsilon = claim_epsilon
            if deprecated(claim_delta, "--claim-delta", "--delta") is None:
                claim_delta = delta  # --delta is the claim's delta too
            elif epsilon is None:
                raise ValueError("--claim-delta needs --epsilon")
            delta = DEFAULT_DELTA if delta is None else check_delta(delta, "--delta")
            check_int(thresholds, "--thresholds")
            k = _parse_bins(bins)
            claim = None if epsilon is None else make_claim(epsilon, claim_delta)
            check_plot_suffix(plot)
            check_report_suffix(report)
            if alternative not in ("two-sided", "greater", "less"):
                raise ValueError(f"--alternative must be greater, less or two-sided, got {alternative!r}")
            if mask is not None:
                if out_path is not None:
                    raise ValueError("--mask runs a one-run audit of IN alone: give no OUT file with it")
                return _one_run(ctx, load(in_path, "IN"), in_path, mask, delta=delta, claim_delta=claim_delta, epsilon=epsilon, beta=beta,
                                alternative=alternative if "--alternative" in _given(ctx) else "greater",
                                seed=seed, json_out=json_out, report=report, claim=claim)
            if out_path is None:
                raise ValueError("give OUT (the scores without the canary), or --mask for a one-run audit")
            x = load(in_path, "IN")
            y = load(out_path, "OUT")
            if x.size < 2 or y.size < 2:
                raise ValueError(f"need at least 2 scores in each file, got {x.size} in IN and {y.size} in OUT")
            res = audit_scores(x, y, delta=delta, beta=beta, confidence=confidence, bins=k, method=method.value,
                               thresholds=thresholds, claim=claim, seed=seed, in_path=in_path, out_path=out_path,
                               alternative=alternative)
        except ValueError as exc:
            raise fail(str(exc))

        curves = res.curves() if (plot is not None or report is not None) else None
        if plot is not None:
            try:
                res = dataclasses.replace(res, plot=_plot(plot, curves))
            except (OSError, ValueError) as exc:
                raise fail(f"--plot: cannot write {str(plot)!r}: {exc}")
        result = res.to_dict()
        code = EXIT_VIOLATION if res.violated else EXIT_OK
        if report is not None:
            write_report(ctx, report, result, seed=res.seed, extra={"curves": curves})
        if json_out:
            emit(json.dumps(result, indent=2))
        else:
            _render(result, in_path, out_path, res, code)
        raise typer.Exit(code)


def _given(ctx: typer.Context) -> set:
    """Options the user gave on the command line (not defaults)."""
    import click

    return {f"--{k}" for k, v in ctx.params.items()
            if ctx.get_parameter_source(k) == click.core.ParameterSource.COMMANDLINE}


def _one_run(ctx, x, in_path, mask_path, *, delta, claim_delta, epsilon, beta, alternative, seed, json_out, report, claim):
    """``audit-scores IN --mask MASK``: the one-run audit, its table, JSON and report."""
    import numpy as np

    from ..scores.io import load_scores
    from ..scores.one_run import one_run_audit

    s = load_scores(mask_path, name=f"MASK ({mask_path})")
    if s.size != x.size:
        raise ValueError(f"MASK ({mask_path}) has {s.size} entries, IN ({in_path}) {x.size}: one 0/1 per canary")
    if not np.all(np.isin(s, (0.0, 1.0))):
        raise ValueError(f"MASK ({mask_path}) must hold 0/1 per canary, got values {np.unique(s)[:5].tolist()}")
    at = delta if claim is None else float(claim.delta)
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (2**31))
    res = one_run_audit(x, s.astype(bool), delta=at, beta=beta, alternative=alternative,
                        epsilon_claim=None if claim is None else claim.epsilon, rng=seed)
    result = res.to_dict()
    result["inputs"] = {"scores": str(in_path), "mask": str(mask_path), "m": int(x.size), "seed": seed}
    violated = claim is not None and res.epsilon_lower_bound > float(claim.epsilon)
    if claim is not None:
        result["claim"] = {"epsilon": float(claim.epsilon), "delta": float(claim.delta), "violated": bool(violated),
                           "description": claim.describe()}
    code = EXIT_VIOLATION if violated else EXIT_OK
    if report is not None:
        write_report(ctx, report, result, seed=seed)
    if json_out:
        emit(json.dumps(result, indent=2))
    else:
        head = Table(show_header=False, box=None)
        head.add_column(style="bold")
        head.add_column(overflow="fold")
        head.add_row("canaries", f"{escape(str(in_path))}: {res.m:,} scores, {res.n_included:,} included ({escape(str(mask_path))})")
        lo, hi = res.details.get("levels", [res.level, res.level])
        head.add_row("guess rules", f"{res.rules} ({res.selection}, {alternative}), levels {lo:.3g} to {hi:.3g} "
                     f"(sum {res.beta:g}); seed {seed}")
        g = res.guess
        head.add_row(f"epsilon lower bound (delta={res.delta:g})",
                     f"[bold]{_fmt(res.epsilon_lower_bound)}[/]  (f-DP test; {g.correct} of {g.guesses} guesses correct)")
        gs = res.guess_steinke
        head.add_row("Steinke et al. (2023)", f"{_fmt(res.epsilon_lower_bound_steinke)}  ({gs.correct} of {gs.guesses} correct; "
                     f"p-value {res.p_value:.3g} at epsilon {0 if claim is None else claim.epsilon:g})")
        head.add_row("mu (GDP) lower bound", f"{_fmt(res.mu_lower_bound)}  (its epsilon at delta, an estimate unless the "
                     f"trade-off curve is Gaussian: {_fmt(res.epsilon_of_mu_estimate)})")
        if claim is not None:
            verdict = "[red]VIOLATED[/]" if violated else "[green]not contradicted[/]"
            head.add_row("claim", f"{escape(claim.describe())}: {verdict}")
        out().print(Panel(head, title="dpaudit audit-scores (one run)",
                          border_style="red" if code == EXIT_VIOLATION else "blue"))
    raise typer.Exit(code)


def _render(result: dict, in_path, out_path, res, code: int) -> None:
    """The tables of ``audit-scores`` (stdout)."""
    hist, thr, gdp, claim, check = res.histogram, res.threshold, res.gdp, res.claim, res.check
    delta, seed = result["delta"], result["inputs"]["seed"]
    eps_lb = result["epsilon_lower_bound"]
    b = hist.details["bins"]
    head = Table(show_header=False, box=None)
    head.add_column(style="bold")
    head.add_column(overflow="fold")
    head.add_row("IN (with canary)", f"{escape(str(in_path))}: {result['inputs']['n_in']:,} scores")
    head.add_row("OUT (without)", f"{escape(str(out_path))}: {result['inputs']['n_out']:,} scores")
    head.add_row("bins", f"{b['k']} ({b['rule']}, chosen on {b['chosen_on']}), range [{b['range'][0]:.4g}, {b['range'][1]:.4g}]")
    head.add_row("beta", f"{result['beta']:g} per method (all of a method's bounds hold together); seed {seed}")
    head.add_row(f"epsilon lower bound (delta={delta:g})", f"[bold]{_fmt(eps_lb)}[/]  from the histogram audit (paper 001), "
                 f"{escape(hist.epsilon_source(delta))}")
    if result.get("epsilon_note"):  # a certified row below is higher: why it is not the headline
        head.add_row("", escape(result["epsilon_note"]))
    head.add_row("mu (GDP) lower bound", f"{_fmt(hist.mu_lower_bound)}  (from TV alone: {_fmt(hist.mu_from_tv)})")
    head.add_row("TV lower bound", f"{_fmt(hist.tv_lower_bound)}  (plug-in estimate {_fmt(hist.tv_estimate)})")
    if check is not None:
        verdict = "[red]VIOLATED[/]" if check.violated else "[green]not contradicted[/]"
        head.add_row("claim", f"{escape(claim.describe())}: {verdict} (margin {check.margin:+.4g} at eps={check.witness_epsilon:.4g})")
    if result["plot"]:
        head.add_row("plot", escape(result["plot"]))
    console = out()
    console.print(Panel(head, title=f"dpaudit audit-scores ({hist.method})", border_style="red" if code == EXIT_VIOLATION else "blue"))

    t = Table(title="Side by side (each row with the same beta)")
    t.add_column("method")
    t.add_column(f"eps lower bound (delta={delta:g})", justify="right", no_wrap=True)
    t.add_column("TV lower bound", justify="right", no_wrap=True)
    t.add_column("mu lower bound", justify="right", no_wrap=True)
    t.add_column("note")
    t.add_row("histogram (paper 001)", _fmt(eps_lb), _fmt(hist.tv_lower_bound), _fmt(hist.mu_lower_bound), escape(hist.epsilon_source(delta)))
    t.add_row("threshold MIA + Clopper–Pearson", _fmt(thr.epsilon_lower_bound(delta)), _fmt(thr.tv_lower_bound), _fmt(thr.mu_lower_bound), f"{thr.details['threshold']['sets']} thresholds, Bonferroni")
    cp = res.clopper_pearson
    if cp is not None:
        cpd = cp.details["clopper-pearson"]
        t.add_row("Clopper–Pearson, whole sample", _fmt(cp.epsilon_lower_bound(delta)), _fmt(cp.tv_lower_bound),
                  _fmt(cp.mu_lower_bound), f"{cpd['rows']} ranks, {cpd['alternative']}")
    t.add_row("GDP audit (Nasr et al. 2023)", f"{_fmt(gdp.epsilon_estimate(delta))}* estimate", "-", _fmt(gdp.mu_lower_bound), escape(f"best test {gdp.threshold}"))
    t.caption = "* epsilon of the mu bound: an estimate; a lower bound only if the mechanism's trade-off curve is Gaussian"
    print_table(console, t)
    if res.attack is not None:
        a = Table(title=f"The attack (threshold on the score), {res.confidence:g} confidence intervals")
        a.add_column("measure")
        a.add_column("estimate", justify="right", no_wrap=True)
        a.add_column("interval", justify="right", no_wrap=True)
        auc = res.attack["auc"]
        a.add_row("AUC", f"{auc.estimate:.4f}", f"[{auc.lower:.4f}, {auc.upper:.4f}]")
        for f, r in res.attack["tpr_at_fpr"].items():
            a.add_row(f"TPR at FPR {f:g}", f"{r.estimate:.4f}", f"[{r.lower:.4f}, {r.upper:.4f}]")
        print_table(console, a)

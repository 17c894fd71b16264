"""CLI commands of dpaudit.scores, added to the main Typer app by :func:`register`.

``dpaudit audit-scores IN OUT``: exit 0 (bounds computed; no claim given or the claim survives),
1 (the claim given by ``--claim-epsilon``/``--claim-delta`` is contradicted by the histogram audit
at the stated confidence), 2 (bad input).
"""

from __future__ import annotations

import json
import math
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT = 0, 1, 2


class Method(str, Enum):
    auto = "auto"
    canonne = "canonne"
    split = "split"


def _fail(message: str) -> typer.Exit:
    Console(stderr=True).print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True, highlight=False)
    return typer.Exit(EXIT_BAD_INPUT)


def _parse_bins(spec: str):
    text = spec.strip().lower()
    if text == "scott":
        return "scott"
    try:
        k = int(text)
    except ValueError:
        raise ValueError(f"--bins must be 'scott' or a positive integer, got {spec!r}") from None
    if k < 1:
        raise ValueError(f"--bins must be >= 1, got {spec!r}")
    return k


def _fmt(x: float, digits: int = 4) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return f"{x:.{digits}g}"


def _plot(path, hist, thr, gdp, claim, audit_delta):
    import numpy as np

    from ..privacy.profiles import tradeoff_from_profile
    from ..scores.plot import approx_dp_tradeoff, plot_tradeoff

    a = np.linspace(0.0, 1.0, 501)
    curves = [
        ("histogram audit: upper bound (conf. %g)" % hist.confidence, a, hist.tradeoff_upper_bound(a), {"color": "C0", "lw": 2}),
        ("threshold MIA: upper bound", a, thr.tradeoff_upper_bound(a), {"color": "C1", "lw": 1.5, "ls": "--"}),
        (f"GDP audit (Nasr et al.): mu={gdp.mu_lower_bound:.3g}", a, gdp.tradeoff(a), {"color": "C2", "lw": 1.2, "ls": "-."}),
    ]
    if hist.estimate_epsilons.size:
        est = tradeoff_from_profile(a, hist.estimate_epsilons, np.clip(hist.estimate_deltas, 0, 1))
        curves.append(("histogram plug-in estimate", a, est, {"color": "C0", "lw": 0.8, "alpha": 0.6}))
    if claim is not None:
        curves.append((f"claim: {claim.describe()}", a, approx_dp_tradeoff(a, claim.epsilon, claim.delta), {"color": "k", "lw": 1.2}))
    return plot_tradeoff(path, curves, title=f"Trade-off curves (eps lower bound at delta={audit_delta:g}: {hist.epsilon_lower_bound(audit_delta):.3g})")


def _curves(hist, thr, gdp, claim) -> dict:
    """Trade-off curves for the report, on an FPR grid dense near 0 (for the log-log view)."""
    import numpy as np

    from ..scores.plot import approx_dp_tradeoff

    a = np.unique(np.concatenate([[0.0], np.geomspace(1e-6, 1.0, 241), np.linspace(0.0, 1.0, 201)]))
    out = {
        "alpha": a.tolist(),
        "upper": np.asarray(hist.tradeoff_upper_bound(a), dtype=float).tolist(),
        "others": [["threshold MIA: upper bound", np.asarray(thr.tradeoff_upper_bound(a), dtype=float).tolist()],
                   [f"GDP audit: mu={gdp.mu_lower_bound:.3g}", np.asarray(gdp.tradeoff(a), dtype=float).tolist()]],
    }
    if claim is not None:
        out["claim"] = [f"claim: {claim.describe()}", approx_dp_tradeoff(a, claim.epsilon, claim.delta).tolist()]
    return out


def _write_report(ctx, path: Path, result: dict, hist, thr, gdp, claim, seed) -> None:
    """--report: the JSON result, or an HTML/Markdown report rendered from it plus the curves."""
    from ..audit.loop import library_versions
    from ..report import render_result, report_format, reproduce_command
    from ..estimators.region import jsonable as _jsonable

    data = json.loads(json.dumps(_jsonable(result)))
    try:
        if report_format(path) == "json":
            path.write_text(json.dumps(data, indent=2))
            return
        render_result({**data, "curves": _curves(hist, thr, gdp, claim)}, path,
                      command=reproduce_command(ctx, {"seed": seed}), versions=library_versions())
    except OSError as exc:
        raise _fail(f"--report: cannot write {str(path)!r}: {exc}")


def register(app: typer.Typer) -> None:
    """Add this package's commands to app."""

    @app.command("audit-scores")
    def audit_scores_cmd(
        ctx: typer.Context,
        in_path: Path = typer.Argument(..., metavar="IN", help="Scores WITH the canary (dataset D): .npy, .csv or .txt, one number per entry."),
        out_path: Path = typer.Argument(..., metavar="OUT", help="Scores WITHOUT the canary (neighbouring dataset D')."),
        delta: float = typer.Option(1e-5, "--delta", "-d", help="Delta at which the epsilon lower bound is reported."),
        bins: str = typer.Option("scott", "--bins", "-k", help="Number of histogram bins, or 'scott' for Scott's rule (chosen on held-apart samples)."),
        confidence: float = typer.Option(0.95, "--confidence", "-c", help="Confidence of the bounds (1 - probability of overstating the privacy loss)."),
        method: Method = typer.Option(Method.auto, "--method", help="Confidence bound: canonne (TV bounds), split (sample splitting + Clopper–Pearson), auto (both, the tighter at each point)."),
        thresholds: int = typer.Option(64, "--thresholds", help="Candidate thresholds of the threshold-MIA and GDP baselines."),
        plot: Optional[Path] = typer.Option(None, "--plot", help="Write the trade-off plot (PNG) to this file."),
        claim_epsilon: Optional[float] = typer.Option(None, "--claim-epsilon", help="Claimed epsilon (nats): checked against the evidence and drawn on the plot."),
        claim_delta: Optional[float] = typer.Option(None, "--claim-delta", help="Claimed delta (default 0: pure DP); needs --claim-epsilon."),
        seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the sample splits (recorded in the output)."),
        json_out: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout instead of tables."),
        report: Optional[Path] = typer.Option(None, "--report", "-r", help="Write a report: .json (the JSON result), .html (self-contained page with the trade-off curve and its certified region, log axes for the low-FPR region) or .md (Markdown, plots in <name>_files/). See docs/reports.md."),
    ) -> None:
        """Bound the privacy loss that two samples of scores prove (paper 001).

        IN holds a score (e.g. a canary's loss) from each run WITH the canary, OUT from each run
        WITHOUT it. Prints lower confidence bounds on epsilon (at --delta), total variation and
        the Gaussian-DP mu, next to the threshold membership-inference and GDP baselines.

        Example: dpaudit audit-scores with.npy without.npy --delta 1e-5 --plot tradeoff.png
        """
        import numpy as np

        from ..privacy.claims import make_claim
        from ..scores.baselines import gdp_audit, threshold_audit
        from ..scores import histogram_audit
        from ..scores.io import load_scores

        try:
            if not (0.0 < delta < 1.0):
                raise ValueError(f"--delta must be in (0, 1), got {delta!r}")
            if not (0.0 < confidence < 1.0):
                raise ValueError(f"--confidence must be in (0, 1), got {confidence!r}")
            if thresholds < 1:
                raise ValueError(f"--thresholds must be >= 1, got {thresholds!r}")
            k = _parse_bins(bins)
            claim = None
            if claim_delta is not None and claim_epsilon is None:
                raise ValueError("--claim-delta needs --claim-epsilon")
            if claim_epsilon is not None:
                claim = make_claim(claim_epsilon, claim_delta)
            if plot is not None and plot.suffix.lower() not in (".png", ".pdf", ".svg"):
                raise ValueError(f"--plot must name a .png, .pdf or .svg file, got {str(plot)!r}")
            if report is not None:
                from ..report import report_format

                report_format(report)
            x = load_scores(in_path, name=f"IN ({in_path})")
            y = load_scores(out_path, name=f"OUT ({out_path})")
            if x.size < 2 or y.size < 2:
                raise ValueError(f"need at least 2 scores in each file, got {x.size} in IN and {y.size} in OUT")
            if seed is None:
                seed = int(np.random.SeedSequence().entropy % (2**31))
            ss = np.random.SeedSequence(seed).spawn(3)
            hist = histogram_audit(x, y, bins=k, method=method.value, confidence=confidence, rng=np.random.default_rng(ss[0]))
            thr = threshold_audit(x, y, thresholds=thresholds, confidence=confidence, rng=np.random.default_rng(ss[1]))
            gdp = gdp_audit(x, y, thresholds=thresholds, confidence=confidence, rng=np.random.default_rng(ss[2]))
        except ValueError as exc:
            raise _fail(str(exc))

        eps_lb = hist.epsilon_lower_bound(delta)
        check = hist.check_claim(claim) if claim is not None else None
        plot_written = None
        if plot is not None:
            try:
                plot_written = _plot(plot, hist, thr, gdp, claim, delta)
            except (OSError, ValueError) as exc:
                raise _fail(f"--plot: cannot write {str(plot)!r}: {exc}")

        result = {
            "inputs": {"in": str(in_path), "out": str(out_path), "n_in": int(x.size), "n_out": int(y.size), "seed": seed},
            "delta": delta,
            "confidence": confidence,
            "epsilon_lower_bound": eps_lb,
            "epsilon_source": hist.epsilon_source(delta),
            "tv_lower_bound": hist.tv_lower_bound,
            "tv_estimate": hist.tv_estimate,
            "mu_lower_bound": hist.mu_lower_bound,
            "mu_from_tv": hist.mu_from_tv,
            "baselines": {
                "threshold": {
                    "epsilon_lower_bound": thr.epsilon_lower_bound(delta), "tv_lower_bound": thr.tv_lower_bound,
                    "mu_lower_bound": thr.mu_lower_bound,
                },
                "gdp": {**gdp.to_dict(), "epsilon_of_mu": gdp.epsilon(delta)},
            },
            "histogram": hist.to_dict(),
            "claim": None if check is None else check.to_dict(),
            "plot": plot_written,
        }
        code = EXIT_VIOLATION if (check is not None and check.violated) else EXIT_OK
        if report is not None:
            _write_report(ctx, report, result, hist, thr, gdp, claim, seed)
        if json_out:
            from ..estimators.region import jsonable as _jsonable

            typer.echo(json.dumps(_jsonable(result), indent=2))
            raise typer.Exit(code)

        out = Console()
        b = hist.details["bins"]
        head = Table(show_header=False, box=None)
        head.add_column(style="bold")
        head.add_column()
        head.add_row("IN (with canary)", f"{escape(str(in_path))}: {x.size:,} scores")
        head.add_row("OUT (without)", f"{escape(str(out_path))}: {y.size:,} scores")
        head.add_row("bins", f"{b['k']} ({b['rule']}, chosen on {b['chosen_on']}), range [{b['range'][0]:.4g}, {b['range'][1]:.4g}]")
        head.add_row("confidence", f"{confidence:g} per method (all of a method's bounds hold together); seed {seed}")
        head.add_row(f"epsilon lower bound (delta={delta:g})", f"[bold]{_fmt(eps_lb)}[/]  from {escape(hist.epsilon_source(delta))}")
        head.add_row("mu (GDP) lower bound", f"{_fmt(hist.mu_lower_bound)}  (from TV alone: {_fmt(hist.mu_from_tv)})")
        head.add_row("TV lower bound", f"{_fmt(hist.tv_lower_bound)}  (plug-in estimate {_fmt(hist.tv_estimate)})")
        if check is not None:
            verdict = "[red]VIOLATED[/]" if check.violated else "[green]not contradicted[/]"
            head.add_row("claim", f"{escape(claim.describe())}: {verdict} (margin {check.margin:+.4g} at eps={check.witness_epsilon:.4g})")
        if plot_written:
            head.add_row("plot", escape(plot_written))
        out.print(Panel(head, title=f"dpaudit audit-scores ({hist.method})", border_style="red" if code == EXIT_VIOLATION else "blue"))

        t = Table(title="Side by side (each row at the same confidence)")
        t.add_column("method")
        t.add_column(f"eps lower bound (delta={delta:g})", justify="right")
        t.add_column("TV lower bound", justify="right")
        t.add_column("mu lower bound", justify="right")
        t.add_column("note")
        t.add_row("histogram (paper 001)", _fmt(eps_lb), _fmt(hist.tv_lower_bound), _fmt(hist.mu_lower_bound), escape(hist.epsilon_source(delta)))
        t.add_row("threshold MIA + Clopper–Pearson", _fmt(thr.epsilon_lower_bound(delta)), _fmt(thr.tv_lower_bound), _fmt(thr.mu_lower_bound), f"{thr.details['threshold']['sets']} thresholds, Bonferroni")
        t.add_row("GDP audit (Nasr et al. 2023)", f"{_fmt(gdp.epsilon(delta))}*", "-", _fmt(gdp.mu_lower_bound), escape(f"best test {gdp.threshold}"))
        t.caption = "* epsilon of the mu bound: a lower bound only if the mechanism's trade-off curve is Gaussian"
        out.print(t)
        raise typer.Exit(code)

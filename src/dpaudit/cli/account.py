"""CLI commands of dpaudit.accounting, added to the main Typer app by :func:`register`.

``dpaudit account`` estimates eps(delta) or delta(eps) of DP-SGD (Poisson-subsampled Gaussian,
composed over steps) with the Monte Carlo accountant or a reference accountant; ``dpaudit verify``
runs the Monte Carlo DP verifier on a proposed (eps, delta). Exit codes: ``account`` 0 on success;
``verify`` 0 accepted, 1 rejected; both 2 on bad input.
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

console = Console(stderr=True)
EXIT_OK, EXIT_REJECTED, EXIT_BAD_INPUT = 0, 1, 2


class Method(str, Enum):
    auto = "auto"
    mc = "mc"
    pld = "pld"
    rdp = "rdp"
    prv = "prv"


class Estimator(str, Enum):
    auto = "auto"
    cmc = "cmc"
    is_ = "is"
    simple = "simple"
    is_paper = "is-paper"


class Backend(str, Enum):
    numpy = "numpy"
    torch = "torch"


def _fail(message: str) -> typer.Exit:
    console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True, highlight=False)
    return typer.Exit(EXIT_BAD_INPUT)


def _progress(disable: bool, label: str):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    return Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                    console=console, disable=disable, transient=True)


def _composition(noise_multiplier: float, sampling_rate: float, steps: int):
    from ..accounting.prv import Composition

    return Composition.dpsgd(noise_multiplier, sampling_rate, steps)


def _check_inputs(noise_multiplier, sampling_rate, steps, delta, epsilon, need_one: bool = True):
    if not (math.isfinite(noise_multiplier) and noise_multiplier > 0):
        raise ValueError(f"--noise-multiplier must be > 0, got {noise_multiplier!r}")
    if not (0 < sampling_rate <= 1):
        raise ValueError(f"--sampling-rate must be in (0, 1], got {sampling_rate!r}")
    if steps < 1:
        raise ValueError(f"--steps must be >= 1, got {steps!r}")
    if need_one and (delta is None) == (epsilon is None):
        raise ValueError("give exactly one of --delta (to get epsilon) or --epsilon (to get delta)")
    if delta is not None and not (0 < delta < 1):
        raise ValueError(f"--delta must be in (0, 1), got {delta!r}")
    if epsilon is not None and not (math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"--epsilon must be a finite number >= 0, got {epsilon!r}")


def _plot_profile(path: Path, ref_curves, title: str, mark=None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    tops = []
    for name, (eps, d) in ref_curves.items():
        ax.plot(eps, d, "--", label=name)
        tops.append(np.asarray(d))
    if tops:
        top = np.nanmax(np.vstack(tops), axis=0)
        pos = top[np.isfinite(top) & (top > 0)]
        if pos.size:
            ax.set_ylim(max(pos.min() / 30.0, 1e-300), min(1.5, pos.max() * 3.0))
    if mark is not None:
        ax.plot([mark[0]], [mark[1]], "ko", label=f"eps={mark[0]:.4g}, delta={mark[1]:.3g}")
    ax.set_yscale("log")
    ax.set_xlabel("epsilon (nats)")
    ax.set_ylabel("delta(epsilon)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _plot_online(path: Path, steps, eps, lo, hi, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(steps, eps, label="epsilon estimate")
    if lo is not None:
        ax.fill_between(steps, lo, hi, alpha=0.25, label="confidence interval")
    ax.set_xlabel("step")
    ax.set_ylabel("epsilon(delta) (nats)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def register(app: typer.Typer) -> None:
    """Add this package's commands (``account``, ``verify``) to app."""

    @app.command("account")
    def account_cmd(
        ctx: typer.Context,
        noise_multiplier: float = typer.Option(..., "--noise-multiplier", "-s", help="Noise multiplier sigma (noise std / clipping norm)."),
        sampling_rate: float = typer.Option(1.0, "--sampling-rate", "-q", help="Poisson sampling rate q in (0, 1]; 1 = full batch (plain Gaussian)."),
        steps: int = typer.Option(..., "--steps", "-k", help="Number of steps k."),
        delta: Optional[float] = typer.Option(None, "--delta", "-d", help="Target delta: report epsilon(delta)."),
        epsilon: Optional[float] = typer.Option(None, "--epsilon", "-e", help="Target epsilon (nats): report delta(epsilon)."),
        method: Method = typer.Option(Method.auto, "--method", "-m", help="auto (default): a certified upper bound from dp_accounting's PLD refined until two grids agree, falling back to prv_accountant, then to a Monte Carlo upper confidence bound, never above the RDP bound; pld / prv / rdp: that method alone (an upper bound); mc: dpaudit's Monte Carlo accountant (upper confidence bound, estimate and interval)."),
        tolerance: float = typer.Option(1e-3, "--tolerance", help="Relative agreement of two successive PLD grids at which the refinement stops."),
        online: bool = typer.Option(False, "--online", help="Report epsilon(delta) after every step 1..k (needs --delta)."),
        samples: int = typer.Option(100_000, "--samples", "-n", help="Monte Carlo samples per direction."),
        estimator: Estimator = typer.Option(Estimator.auto, "--estimator", help="Monte Carlo estimator: auto (cmc for subsampled, is otherwise), cmc (conditional MC + tilt), is (tilted importance sampling), simple, is-paper (paper 004 Def. 16)."),
        confidence: float = typer.Option(0.95, "--confidence", help="Confidence of a Monte Carlo upper bound (one-sided)."),
        seed: Optional[int] = typer.Option(None, "--seed", help="Seed for a reproducible Monte Carlo run (recorded in the JSON)."),
        backend: Optional[Backend] = typer.Option(None, "--backend", help="numpy (default) or torch."),
        device: Optional[str] = typer.Option(None, "--device", help="torch device: cpu, cuda, cuda:1 (implies --backend torch)."),
        plot: Optional[Path] = typer.Option(None, "--plot", help="Write a PNG: delta(epsilon) (offline) or epsilon over steps (--online)."),
        json_out: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout."),
        quiet: bool = typer.Option(False, "--quiet", help="No progress output."),
        report: Optional[Path] = typer.Option(None, "--report", "-r", help="Write a report: .json (the JSON result), .html (self-contained page: epsilon against steps for --online, the privacy profile otherwise) or .md (Markdown, plots in <name>_files/). See docs/reports.md."),
    ) -> None:
        """Privacy accounting for DP-SGD: epsilon(delta) or delta(epsilon) after k steps.

        By default the answer is a certified upper bound, and the output says which method gave
        it and what kind of number it is.

        Examples:

          dpaudit account -s 1.1 -q 0.0042667 -k 14100 --delta 1e-5

          dpaudit account -s 1.1 -q 0.0042667 -k 14100 --delta 1e-5 --method mc --samples 20000

          dpaudit account -s 1.0 -q 0.001 -k 10000 --delta 1e-9 --online --plot eps.png
        """
        from ..accounting import certified

        try:
            _check_inputs(noise_multiplier, sampling_rate, steps, delta, epsilon)
            if online and delta is None:
                raise ValueError("--online reports epsilon after each step: give --delta")
            if online and method is Method.prv:
                raise ValueError("--online supports --method auto, pld, mc or rdp (not prv)")
            if samples < 2:
                raise ValueError(f"--samples must be >= 2, got {samples!r}")
            if not (0.5 < confidence < 1):
                raise ValueError(f"--confidence must be in (0.5, 1), got {confidence!r}")
            if not (0 < tolerance < 1):
                raise ValueError(f"--tolerance must be in (0, 1), got {tolerance!r}")
            if plot is not None and plot.suffix.lower() not in (".png", ".pdf", ".svg"):
                raise ValueError(f"--plot must end in .png, .pdf or .svg, got {str(plot)!r}")
            if report is not None:
                from ..report import report_format

                report_format(report)
            comp = _composition(noise_multiplier, sampling_rate, steps)
            if method is Method.mc or (device is not None) or (backend is not None):
                from ..accounting._backend import get_ops

                get_ops(None if backend is None else backend.value, device)  # fail early on a bad device
        except ValueError as exc:
            raise _fail(str(exc))

        show = not (quiet or json_out)
        mc_kw = dict(confidence=confidence, num_samples=samples, rng=seed,
                     backend=None if backend is None else backend.value, device=device)
        try:
            with _status(show, f"accounting ({method.value})") as say:
                if online:
                    res = certified.get_epsilon_online(comp, delta, method=method.value, progress=say.steps,
                                                       estimator=estimator.value, **mc_kw)
                elif delta is not None:
                    res = certified.get_epsilon(comp, delta, method=method.value, tolerance=tolerance,
                                                progress=say.message, estimator=estimator.value, **mc_kw)
                else:
                    res = certified.get_delta(comp, epsilon, method=method.value, tolerance=tolerance,
                                              progress=say.message, estimator=estimator.value, **mc_kw)
        except ValueError as exc:
            raise _fail(str(exc))
        result = {"command": "account", "method_requested": method.value, "seed": seed, **res.to_dict()}

        if plot is not None:
            _make_plot(plot, comp, res, online)
        if report is not None:
            _write_report(ctx, report, result, comp, res, online)
        if json_out:
            typer.echo(json.dumps(result, indent=2, default=str))
        else:
            _render_result(res, comp, online)
            if plot is not None:
                console.print(f"Plot written to {plot}")

    @app.command("verify")
    def verify_cmd(
        noise_multiplier: float = typer.Option(..., "--noise-multiplier", "-s", help="Noise multiplier sigma."),
        sampling_rate: float = typer.Option(1.0, "--sampling-rate", "-q", help="Poisson sampling rate q in (0, 1]."),
        steps: int = typer.Option(..., "--steps", "-k", help="Number of steps k."),
        epsilon: float = typer.Option(..., "--epsilon", "-e", help="Proposed epsilon (nats)."),
        delta: float = typer.Option(..., "--delta", "-d", help="Proposed delta (the estimate to verify)."),
        false_positive_rate: Optional[float] = typer.Option(None, "--false-positive-rate", "-p", help="Bound beta on accepting while delta(epsilon) > delta/tau. Default delta/tau (paper 004's EVR)."),
        tau: float = typer.Option(0.9, "--tau", help="Smoothing factor tau in (0, 1]: the guarantee after acceptance is delta/tau."),
        rho: Optional[float] = typer.Option(None, "--rho", help="Utility factor rho in (tau, 1]; default (1 + tau)/2."),
        max_samples: int = typer.Option(200_000_000, "--max-samples", help="Refuse plans that need more samples per direction."),
        plan_only: bool = typer.Option(False, "--plan-only", help="Print the sample size and threshold without sampling."),
        backend: Optional[Backend] = typer.Option(None, "--backend", help="numpy (default) or torch."),
        device: Optional[str] = typer.Option(None, "--device", help="torch device (implies --backend torch)."),
        json_out: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout."),
        quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
    ) -> None:
        """Verify a proposed (epsilon, delta) for DP-SGD with the Monte Carlo DP verifier.

        Accepts iff a Monte Carlo estimate of delta(epsilon) is below delta/tau - offset, with a sample
        size that proves: accepting while delta(epsilon) > delta/tau happens with probability at most
        the false-positive rate. Exit code 0: accepted; 1: rejected; 2: bad input. The verifier's
        randomness is fresh and is not printed.

        Example:

          dpaudit verify -s 1.1 -q 0.0042667 -k 1000 --epsilon 0.6 --delta 1e-5 --false-positive-rate 1e-3
        """
        from ..accounting.verifier import plan_verification, verify

        try:
            _check_inputs(noise_multiplier, sampling_rate, steps, delta, epsilon, need_one=False)
            if max_samples < 2:
                raise ValueError(f"--max-samples must be >= 2, got {max_samples!r}")
            comp = _composition(noise_multiplier, sampling_rate, steps)
            plan = plan_verification(comp, epsilon, delta, false_positive_rate=false_positive_rate, tau=tau, rho=rho)
        except ValueError as exc:
            raise _fail(str(exc))
        if plan_only:
            d = {"command": "verify", "composition": comp.to_dict(), "plan": plan.to_dict()}
            if json_out:
                typer.echo(json.dumps(d, indent=2))
            else:
                _render_plan(plan, comp)
            raise typer.Exit(EXIT_OK)
        try:
            with _progress(quiet or json_out, "verifying") as prog:
                task = prog.add_task("verify", total=None)
                res = verify(comp, epsilon, delta, false_positive_rate=false_positive_rate, tau=tau, rho=rho,
                             max_samples=max_samples, backend=None if backend is None else backend.value,
                             device=device, progress=lambda a, b: prog.update(task, completed=a, total=b))
        except ValueError as exc:
            raise _fail(str(exc))
        if json_out:
            typer.echo(json.dumps({"command": "verify", "composition": comp.to_dict(), **res.to_dict()}, indent=2))
        else:
            _render_plan(res.plan, comp)
            verdict = "[bold green]ACCEPTED[/]" if res.accepted else "[bold red]REJECTED[/]"
            body = Table.grid(padding=(0, 2))
            body.add_column(style="bold")
            body.add_column()
            body.add_row("verdict", verdict)
            body.add_row("why", escape(res.reason))
            for d, v in res.per_direction.items():
                if v.get("delta_hat") is not None:
                    body.add_row(f"estimate ({d})", f"{v['delta_hat']:.6g} ± {v['std_error']:.2g} (1 s.e.)")
            p = res.plan
            d_upp = max(v["rdp_delta_bound"] for v in p.per_direction.values())
            body.add_row("EVR guarantee",
                         f"(epsilon={p.epsilon:g}, delta={p.delta / p.tau + p.false_positive_rate:.4g}) = "
                         f"(eps, delta/tau + beta); sharper: delta={max(p.delta / p.tau, p.false_positive_rate * d_upp):.4g} "
                         f"= max(delta/tau, beta * RDP bound) (docs/accounting.md §5)")
            body.add_row("time", f"{res.wall_seconds:.1f} s on {res.backend} ({res.device})")
            Console().print(Panel(body, title="dpaudit verify", border_style="green" if res.accepted else "red"))
        raise typer.Exit(EXIT_OK if res.accepted else EXIT_REJECTED)


def _render_plan(plan, comp) -> None:
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column()
    t.add_row("mechanism", escape(comp.describe()))
    t.add_row("proposal", f"epsilon={plan.epsilon:g}, delta={plan.delta:g}")
    t.add_row("tau, rho", f"{plan.tau:g}, {plan.rho:g} (false positive: delta(eps) > {plan.delta / plan.tau:.4g})")
    t.add_row("false-positive rate", f"<= {plan.false_positive_rate:.3g} (proved)")
    t.add_row("threshold", f"accept iff estimate < delta/tau - offset = {plan.threshold:.6g} (offset {plan.offset:.3g})")
    for d, v in plan.per_direction.items():
        t.add_row(f"plan ({d})", f"{v['samples']:,} samples, tilt {v['tilt']:.3g}, bound: {v['inequality']} "
                                 f"(Bennett {v['samples_bennett']:,}, KL {v['samples_kl']:,}); RDP delta bound "
                                 f"{v['rdp_delta_bound']:.3g}")
    Console().print(Panel(t, title="verification plan"))


class _Status:
    """Progress for long accounting runs: a transient Rich line on a terminal; otherwise a plain
    line on stderr at most every ``every`` seconds (so CI logs show the run is alive)."""

    def __init__(self, show: bool, label: str, every: float = 10.0):
        import time as _time

        self.show, self.label, self.every = show, label, every
        self._time = _time
        self.t0 = self.last = _time.perf_counter()
        self.live = None
        self.task = None

    def __enter__(self):
        if self.show and console.is_terminal:
            self.live = _progress(False, self.label)
            self.live.__enter__()
            self.task = self.live.add_task(self.label, total=None)
        return self

    def __exit__(self, *exc):
        if self.live is not None:
            self.live.__exit__(*exc)
        return False

    def _plain(self, text: str, force: bool = False) -> None:
        now = self._time.perf_counter()
        if self.show and self.live is None and (force or now - self.last >= self.every):
            self.last = now
            console.print(escape(f"[dpaudit] {self.label}: {text} ({now - self.t0:.0f} s)"), highlight=False,
                          soft_wrap=True)

    def message(self, text: str) -> None:
        """A method or grid is starting."""
        if self.live is not None:
            self.live.update(self.task, description=f"{self.label}: {text}")
        self._plain(text)

    def steps(self, done: int, total: int) -> None:
        """Online progress: step ``done`` of ``total``."""
        if self.live is not None:
            self.live.update(self.task, completed=done, total=total)
        self._plain(f"step {done:,}/{total:,}")


def _status(show: bool, label: str) -> _Status:
    return _Status(show, label)


_KIND_TEXT = {
    "upper_bound": "certified upper bound",
    "upper_confidence_bound": "upper confidence bound (Monte Carlo; holds with the stated confidence, not certified)",
    "estimate": "estimate (not a bound)",
}


def _render_result(res, comp, online: bool) -> None:
    from ..accounting.certified import _METHOD_NAMES

    out = Console()
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("mechanism", escape(comp.describe()))
    if online:
        head.add_row("delta", f"{res.delta:g}")
        head.add_row("epsilon after last step", f"[bold]{res.epsilon[-1]:.6g}[/]")
    elif res.query == "epsilon":
        head.add_row("delta", f"{res.delta:g}")
        head.add_row("epsilon", f"[bold]{res.epsilon:.6g}[/]")
    else:
        head.add_row("epsilon", f"{res.epsilon:g}")
        head.add_row("delta", f"[bold]{res.delta:.6g}[/]")
    kind = _KIND_TEXT[res.kind]
    if res.kind == "upper_confidence_bound":
        kind = f"upper confidence bound at {res.confidence:.0%} (Monte Carlo; not certified)"
    head.add_row("kind", kind)
    head.add_row("method", escape(_METHOD_NAMES[res.method]))
    det = res.details
    if res.method == "pld" and "interval" in det:
        if online:
            head.add_row("grid", f"{det['interval']:.3g} (last step within {det['online_tolerance']:.1%} of the "
                                 f"converged grid: {det['last_step_value_at_grid']:.6g} vs {det['last_step_converged']:.6g})")
        else:
            g = det["grids"]
            head.add_row("grid", f"{det['interval']:.3g}; successive grids agree to {det['tolerance']:g}: "
                                 + ", ".join(f"{x['value']:.6g}" for x in g[-2:]))
    if not online and res.estimate is not None:
        head.add_row("estimate", f"{res.estimate:.6g}")
    mc = det.get("monte_carlo")
    if mc:
        head.add_row("Monte Carlo", f"{mc.get('estimator')}, {mc.get('num_samples', 0):,} samples per direction; "
                                    f"bound: {mc.get('upper_method')}; two-sided {mc['confidence']:.0%} normal "
                                    f"interval of the estimate [{mc['ci_low']:.6g}, {mc['ci_high']:.6g}]")
        trusted = mc.get("trusted")
        head.add_row("diagnostics", f"effective sample size {mc.get('ess', float('nan')):.4g}, largest term "
                                    f"{mc.get('max_term_share', float('nan')):.2%} of the sum: "
                                    + ("trusted" if trusted else "[bold yellow]not trusted[/] (the bound holds but "
                                       "is wide; more --samples tighten it)"))
        cc = mc.get("cross_check") or {}
        if cc.get("available"):
            line = f"dp_accounting PLD gives {cc['value']:.6g}"
            if cc.get("flagged"):
                line = f"[bold red]{line}: above the Monte Carlo bound by more than its half-width[/]"
            head.add_row("cross-check", line)
    if "replaced_by_rdp" in det:
        head.add_row("note", f"the method's value {det['replaced_by_rdp']['value']:.6g} was above the RDP bound; "
                             f"the RDP bound is reported")
    rdp = res.rdp_bound[-1] if online else res.rdp_bound
    if rdp is not None and res.method != "rdp":
        head.add_row("RDP bound", f"{rdp:.6g} (certified, looser)")
    for a in res.attempts:
        if a["status"] == "failed":
            head.add_row(f"{a['method']} failed", escape(a["reason"]))
    head.add_row("time", f"{res.seconds:.2f} s")
    out.print(Panel(head, title="dpaudit account" + (" --online" if online else "")))
    if online:
        k = len(res.steps)
        t = Table(title="epsilon after selected steps (all steps are in --json)")
        t.add_column("step", justify="right")
        t.add_column("epsilon", justify="right")
        t.add_column("RDP bound", justify="right")
        for i in sorted({0, k // 10, k // 4, k // 2, 3 * k // 4, k - 1}):
            t.add_row(f"{res.steps[i]:,}", f"{res.epsilon[i]:.6g}", f"{res.rdp_bound[i]:.6g}")
        out.print(t)


def _profile_curves(comp, res) -> dict | None:
    """delta(eps) upper bounds around the reported point, for the report (None if they cannot be had)."""
    import numpy as np

    from ..accounting.certified import profile_curve
    from ..accounting.prv import delta_upper_bound

    try:
        center = float(res.epsilon)
        grid = np.linspace(max(0.0, 0.5 * center), 1.6 * center + 0.5, 40)
        pld = profile_curve(comp, grid, interval=res.details.get("interval", 1e-3))
        rdp = np.array([delta_upper_bound(comp, float(x)) for x in grid])
    except (ValueError, ArithmeticError, MemoryError):
        return None
    return {"epsilon": grid.tolist(),
            "curves": [["PLD, pessimistic (upper bound)", [None if not np.isfinite(v) else float(v) for v in pld]],
                       ["RDP bound", [float(v) for v in rdp]]]}


def _write_report(ctx, path: Path, result: dict, comp, res, online: bool) -> None:
    """--report: the JSON result, or an HTML/Markdown report rendered from it."""
    from .._version import library_versions
    from ..report import render_result, report_format, reproduce_command

    data = json.loads(json.dumps(result, default=str))
    try:
        if report_format(path) == "json":
            path.write_text(json.dumps(data, indent=2))
            return
        if not online:
            prof = _profile_curves(comp, res)
            if prof is not None:
                data["profile"] = prof
        render_result(data, path, command=reproduce_command(ctx, {"seed": result.get("seed")}), versions=library_versions())
    except OSError as exc:
        raise _fail(f"--report: cannot write {str(path)!r}: {exc}")


def _make_plot(path: Path, comp, res, online: bool) -> None:
    import numpy as np

    title = comp.describe()
    if online:
        _plot_online(path, list(res.steps), list(res.epsilon), None, None,
                     f"{title}, delta={res.delta:g} ({res.kind.replace('_', ' ')}, {res.method})")
        return
    from ..accounting.certified import profile_curve

    center = res.epsilon
    grid = np.linspace(max(0.0, 0.5 * center), 1.6 * center + 0.5, 40)
    from ..accounting.prv import delta_upper_bound

    curves = {"PLD, pessimistic (upper bound; gaps: round-off exceeds delta)":
              (grid, profile_curve(comp, grid, interval=res.details.get("interval", 1e-3))),
              "RDP bound": (grid, np.array([delta_upper_bound(comp, float(x)) for x in grid]))}
    _plot_profile(path, curves, f"privacy profile: {title}", mark=(res.epsilon, res.delta))

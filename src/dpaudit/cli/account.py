"""``dpaudit account`` (eps(delta) or delta(eps) of DP-SGD: Poisson-subsampled Gaussian composed
over steps, with a certified accountant or the Monte Carlo one) and ``dpaudit verify`` (the Monte
Carlo DP verifier on a proposed (eps, delta)), added to the app by :func:`register`.

Exit codes (:data:`dpaudit.cli.options.EXIT_CODES`): ``account`` 0 on success; ``verify`` 0
accepted, 1 rejected; both 2 on bad input.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from .options import (
    EXIT_HELP, EXIT_OK, EXIT_REJECTED, alias, check_plot_suffix, check_report_suffix, console, deprecated, emit, fail, option,
    out, write_report,
)


class Method(str, Enum):
    """``--method``: the accountant (``auto`` picks the certified PLD where it applies)."""

    auto = "auto"
    mc = "mc"
    pld = "pld"
    rdp = "rdp"
    prv = "prv"


class Estimator(str, Enum):
    """``--estimator``: the Monte Carlo accountant's estimator of delta (paper 004)."""

    auto = "auto"
    cmc = "cmc"
    is_ = "is"
    simple = "simple"
    is_paper = "is-paper"


class Backend(str, Enum):
    """``--backend``: where the Monte Carlo accountant draws its samples."""

    numpy = "numpy"
    torch = "torch"


def _progress(disable: bool, label: str):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    return Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                    console=console, disable=disable, transient=True)


def _composition(noise_multiplier: float, sampling_rate: float, steps: int):
    from ..accounting.prv import Composition

    return Composition.dpsgd(noise_multiplier, sampling_rate, steps)


def _check_inputs(noise_multiplier, sampling_rate, steps, delta, epsilon, need_one: bool = True):
    from .._validate import check_delta, check_epsilon, check_int, check_positive, check_rate

    check_positive(noise_multiplier, "--noise-multiplier")
    check_rate(sampling_rate, "--sampling-rate")
    check_int(steps, "--steps")
    if need_one and (delta is None) == (epsilon is None):
        raise ValueError("give exactly one of --delta (to get epsilon) or --epsilon (to get delta)")
    if delta is not None:
        check_delta(delta, "--delta")
    if epsilon is not None:
        check_epsilon(epsilon, "--epsilon")


def _backend_option():
    return typer.Option(None, "--backend", help="numpy (default) or torch.")


def register(app: typer.Typer) -> None:
    """Add this package's commands (``account``, ``verify``) to app."""

    @app.command("account", epilog=EXIT_HELP)
    def account_cmd(
        ctx: typer.Context,
        noise_multiplier: float = option("noise_multiplier", ...),
        sampling_rate: float = option("sampling_rate", 1.0),
        steps: int = option("steps", ...),
        delta: Optional[float] = option("delta", None, "target: report epsilon(delta)"),
        epsilon: Optional[float] = option("epsilon", None, "target: report delta(epsilon)"),
        method: Method = option("method", Method.auto, "auto (default): a certified upper bound from dp_accounting's PLD refined until two grids agree, falling back to prv_accountant, then to a Monte Carlo upper confidence bound, never above the RDP bound; pld / prv / rdp: that method alone (an upper bound); mc: dpaudit's Monte Carlo accountant (upper confidence bound, estimate and interval)"),
        tolerance: float = typer.Option(1e-3, "--tolerance", help="Relative agreement of two successive PLD grids at which the refinement stops."),
        online: bool = typer.Option(False, "--online", help="Report epsilon(delta) after every step 1..k (needs --delta)."),
        samples: int = option("samples", 100_000, "Monte Carlo samples per direction"),
        estimator: Estimator = typer.Option(Estimator.auto, "--estimator", help="Monte Carlo estimator: auto (cmc for subsampled, is otherwise), cmc (conditional MC + tilt), is (tilted importance sampling), simple, is-paper (paper 004 Def. 16)."),
        beta: float = option("beta", 0.05, "of a Monte Carlo upper confidence bound (one-sided; confidence 1 - beta)"),
        seed: Optional[int] = option("seed", None, "of the Monte Carlo run"),
        backend: Optional[Backend] = _backend_option(),
        device: Optional[str] = option("device", None, "implies --backend torch"),
        plot: Optional[Path] = option("plot", None, "delta(epsilon) offline, or epsilon over steps with --online"),
        json_out: bool = option("json", False),
        quiet: bool = option("quiet", False),
        report: Optional[Path] = option("report", None, "the HTML page shows epsilon against steps for --online, the privacy profile otherwise"),
        confidence: Optional[float] = alias("--confidence", "--beta (= 1 - confidence)"),
    ) -> None:
        """Privacy accounting for DP-SGD: epsilon(delta) or delta(epsilon) after k steps.

        By default the answer is a certified upper bound, and the output says which method gave
        it and what kind of number it is.

        Examples:

          dpaudit account -z 1.1 -q 0.0042667 -k 14100 --delta 1e-5
          dpaudit account -z 1.1 -q 0.0042667 -k 14100 -d 1e-5 -m mc -n 20000
          dpaudit account -z 1.0 -q 0.001 -k 10000 -d 1e-9 --online --plot eps.png
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
            if confidence is None:
                if not (0 < beta < 0.5):
                    raise ValueError(f"--beta must be in (0, 0.5), got {beta!r}")
                confidence = 1.0 - beta
            elif not (0.5 < deprecated(confidence, "--confidence", "--beta (= 1 - confidence)") < 1):
                raise ValueError(f"--confidence must be in (0.5, 1), got {confidence!r}")
            else:
                beta = 1.0 - confidence
            if not (0 < tolerance < 1):
                raise ValueError(f"--tolerance must be in (0, 1), got {tolerance!r}")
            check_plot_suffix(plot)
            check_report_suffix(report)
            comp = _composition(noise_multiplier, sampling_rate, steps)
            if method is Method.mc or (device is not None) or (backend is not None):
                from ..accounting._backend import get_ops

                get_ops(None if backend is None else backend.value, device)  # fail early on a bad device
        except ValueError as exc:
            raise fail(str(exc))

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
            raise fail(str(exc))
        result = res.to_dict(command="account", method_requested=method.value, seed=seed, beta=beta)
        profile = None if online or (plot is None and report is None) else _profile_curves(comp, res)
        if plot is not None:
            _make_plot(plot, comp, res, profile, online)
        if report is not None:
            write_report(ctx, report, result, seed=seed, extra=None if profile is None else {"profile": profile})
        if json_out:
            emit(json.dumps(result, indent=2))
        else:
            _render_result(res, comp, online)
            if plot is not None:
                console.print(f"Plot written to {plot}")

    @app.command("verify", epilog=EXIT_HELP)
    def verify_cmd(
        noise_multiplier: float = option("noise_multiplier", ...),
        sampling_rate: float = option("sampling_rate", 1.0),
        steps: int = option("steps", ...),
        epsilon: float = option("epsilon", ..., "proposed"),
        delta: float = option("delta", ..., "proposed: the estimate to verify"),
        beta: Optional[float] = option("beta", None, "of accepting while delta(epsilon) > delta/tau; default delta/tau (paper 004's EVR)"),
        tau: float = typer.Option(0.9, "--tau", help="Smoothing factor tau in (0, 1]: the guarantee after acceptance is delta/tau."),
        rho: Optional[float] = typer.Option(None, "--rho", help="Utility factor rho in (tau, 1]; default (1 + tau)/2."),
        max_samples: int = typer.Option(200_000_000, "--max-samples", help="Refuse plans that need more samples per direction."),
        plan_only: bool = typer.Option(False, "--plan-only", help="Print the sample size and threshold without sampling."),
        backend: Optional[Backend] = _backend_option(),
        device: Optional[str] = option("device", None, "implies --backend torch"),
        json_out: bool = option("json", False),
        quiet: bool = option("quiet", False),
        false_positive_rate: Optional[float] = alias("--false-positive-rate", "--beta"),
    ) -> None:
        """Verify a proposed (epsilon, delta) for DP-SGD with the Monte Carlo DP verifier.

        Accepts iff a Monte Carlo estimate of delta(epsilon) is below delta/tau - offset, with a sample
        size that proves: accepting while delta(epsilon) > delta/tau happens with probability at most
        --beta (the false-positive rate). Exit code 0: accepted; 1: rejected; 2: bad input. The
        verifier's randomness is fresh and is not printed.

        Example:

          dpaudit verify -z 1.1 -q 0.0042667 -k 1000 -e 0.6 -d 1e-5 -b 1e-3
        """
        from ..accounting.verifier import plan_verification, verify

        try:
            if deprecated(false_positive_rate, "--false-positive-rate", "--beta") is not None:
                beta = false_positive_rate
            _check_inputs(noise_multiplier, sampling_rate, steps, delta, epsilon, need_one=False)
            if max_samples < 2:
                raise ValueError(f"--max-samples must be >= 2, got {max_samples!r}")
            comp = _composition(noise_multiplier, sampling_rate, steps)
            plan = plan_verification(comp, epsilon, delta, false_positive_rate=beta, tau=tau, rho=rho)
        except ValueError as exc:
            raise fail(str(exc))
        if plan_only:
            if json_out:
                emit(json.dumps(plan.to_dict(composition=comp), indent=2))
            else:
                _render_plan(plan, comp)
            raise typer.Exit(EXIT_OK)
        try:
            with _progress(quiet or json_out, "verifying") as prog:
                task = prog.add_task("verify", total=None)
                res = verify(comp, epsilon, delta, false_positive_rate=beta, tau=tau, rho=rho,
                             max_samples=max_samples, backend=None if backend is None else backend.value,
                             device=device, progress=lambda a, b: prog.update(task, completed=a, total=b))
        except ValueError as exc:
            raise fail(str(exc))
        if json_out:
            emit(json.dumps(res.to_dict(composition=comp), indent=2))
        else:
            _render_plan(res.plan, comp)
            verdict = "[bold green]ACCEPTED[/]" if res.accepted else "[bold red]REJECTED[/]"
            body = Table.grid(padding=(0, 2))
            body.add_column(style="bold")
            body.add_column(overflow="fold")
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
            out().print(Panel(body, title="dpaudit verify", border_style="green" if res.accepted else "red"))
        raise typer.Exit(EXIT_OK if res.accepted else EXIT_REJECTED)


def _render_plan(plan, comp) -> None:
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column(overflow="fold")
    t.add_row("mechanism", escape(comp.describe()))
    t.add_row("proposal", f"epsilon={plan.epsilon:g}, delta={plan.delta:g}")
    t.add_row("tau, rho", f"{plan.tau:g}, {plan.rho:g} (false positive: delta(eps) > {plan.delta / plan.tau:.4g})")
    t.add_row("beta (false-positive rate)", f"<= {plan.false_positive_rate:.3g} (proved)")
    t.add_row("threshold", f"accept iff estimate < delta/tau - offset = {plan.threshold:.6g} (offset {plan.offset:.3g})")
    for d, v in plan.per_direction.items():
        t.add_row(f"plan ({d})", f"{v['samples']:,} samples, tilt {v['tilt']:.3g}, bound: {v['inequality']} "
                                 f"(Bennett {v['samples_bennett']:,}, KL {v['samples_kl']:,}); RDP delta bound "
                                 f"{v['rdp_delta_bound']:.3g}")
    out().print(Panel(t, title="verification plan"))


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

    console_out = out()
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column(overflow="fold")
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
    console_out.print(Panel(head, title="dpaudit account" + (" --online" if online else "")))
    if online:
        k = len(res.steps)
        t = Table(title="epsilon after selected steps (all steps are in --json)")
        t.add_column("step", justify="right")
        t.add_column("epsilon", justify="right")
        t.add_column("RDP bound", justify="right")
        for i in sorted({0, k // 10, k // 4, k // 2, 3 * k // 4, k - 1}):
            t.add_row(f"{res.steps[i]:,}", f"{res.epsilon[i]:.6g}", f"{res.rdp_bound[i]:.6g}")
        console_out.print(t)


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
            "curves": [["PLD, pessimistic (upper bound; gaps: round-off exceeds delta)", [None if not np.isfinite(v) else float(v) for v in pld]],
                       ["RDP bound", [float(v) for v in rdp]]]}


def _make_plot(path: Path, comp, res, profile: dict | None, online: bool) -> None:
    """--plot: the report's plot (:mod:`dpaudit.report.plots`), in the format named by the suffix:
    epsilon over steps (--online; ``profile`` None) or the privacy profile."""
    from ..report.plots import accounting_online_png, accounting_profile_png

    fmt = path.suffix.lower().lstrip(".")
    title = comp.describe()
    if online:
        png = accounting_online_png(list(res.steps), list(res.epsilon), list(res.rdp_bound) or None,
                                    title=f"{title}, delta={res.delta:g} ({res.kind.replace('_', ' ')}, {res.method})",
                                    format=fmt)
    elif profile is None:
        raise fail("--plot: the privacy profile around the reported point cannot be computed")
    else:
        png = accounting_profile_png(profile["epsilon"], [tuple(c) for c in profile["curves"]],
                                     mark=(res.epsilon, res.delta), title=f"privacy profile: {title}", format=fmt)
    try:
        path.write_bytes(png)
    except OSError as exc:
        raise fail(f"--plot: cannot write {str(path)!r}: {exc}")

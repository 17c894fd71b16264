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
    from .prv import Composition

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


def _plot_profile(path: Path, comp, samples_by_dir, ref_curves, title: str, mark=None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    tops = []
    for name, (eps, d, lo, hi) in samples_by_dir.items():
        ax.plot(eps, d, label=name)
        tops.append(np.asarray(d))
        if lo is not None:
            ax.fill_between(eps, np.where(lo > 0, lo, np.nan), hi, alpha=0.25)
    for name, (eps, d) in ref_curves.items():
        ax.plot(eps, d, "--", label=name)
        tops.append(np.asarray(d))
    if tops:
        top = np.max(np.vstack(tops), axis=0)
        pos = top[top > 0]
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
        noise_multiplier: float = typer.Option(..., "--noise-multiplier", "-s", help="Noise multiplier sigma (noise std / clipping norm)."),
        sampling_rate: float = typer.Option(1.0, "--sampling-rate", "-q", help="Poisson sampling rate q in (0, 1]; 1 = full batch (plain Gaussian)."),
        steps: int = typer.Option(..., "--steps", "-k", help="Number of steps k."),
        delta: Optional[float] = typer.Option(None, "--delta", "-d", help="Target delta: report epsilon(delta)."),
        epsilon: Optional[float] = typer.Option(None, "--epsilon", "-e", help="Target epsilon (nats): report delta(epsilon)."),
        method: Method = typer.Option(Method.mc, "--method", "-m", help="mc: Monte Carlo accountant (estimate with a confidence interval); pld / rdp: dp_accounting's PLD (pessimistic estimate) / RDP (upper bound); prv: prv_accountant."),
        online: bool = typer.Option(False, "--online", help="Report epsilon(delta) after every step 1..k (needs --delta)."),
        samples: int = typer.Option(100_000, "--samples", "-n", help="Monte Carlo samples per direction."),
        estimator: Estimator = typer.Option(Estimator.auto, "--estimator", help="Monte Carlo estimator: auto (cmc for subsampled, is otherwise), cmc (conditional MC + tilt), is (tilted importance sampling), simple, is-paper (paper 004 Def. 16)."),
        confidence: float = typer.Option(0.95, "--confidence", help="Level of the Monte Carlo confidence interval."),
        seed: Optional[int] = typer.Option(None, "--seed", help="Seed for a reproducible Monte Carlo run (recorded in the JSON)."),
        backend: Optional[Backend] = typer.Option(None, "--backend", help="numpy (default) or torch."),
        device: Optional[str] = typer.Option(None, "--device", help="torch device: cpu, cuda, cuda:1 (implies --backend torch)."),
        plot: Optional[Path] = typer.Option(None, "--plot", help="Write a PNG: delta(epsilon) (offline) or epsilon over steps (--online)."),
        json_out: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout."),
        quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
    ) -> None:
        """Privacy accounting for DP-SGD: epsilon(delta) or delta(epsilon) after k steps.

        Examples:

          dpaudit account -s 1.1 -q 0.0042667 -k 14100 --delta 1e-5

          dpaudit account -s 1.1 -q 0.0042667 -k 14100 --delta 1e-5 --method pld

          dpaudit account -s 1.0 -q 0.001 -k 1000 --delta 1e-9 --online --plot eps.png
        """
        from . import reference
        from .monte_carlo import MonteCarloAccountant

        try:
            _check_inputs(noise_multiplier, sampling_rate, steps, delta, epsilon)
            if online and delta is None:
                raise ValueError("--online reports epsilon after each step: give --delta")
            if samples < 2:
                raise ValueError(f"--samples must be >= 2, got {samples!r}")
            if not (0 < confidence < 1):
                raise ValueError(f"--confidence must be in (0, 1), got {confidence!r}")
            if plot is not None and plot.suffix.lower() not in (".png", ".pdf", ".svg"):
                raise ValueError(f"--plot must end in .png, .pdf or .svg, got {str(plot)!r}")
            comp = _composition(noise_multiplier, sampling_rate, steps)
            acc = None
            if method is Method.mc:
                acc = MonteCarloAccountant(samples, estimator.value, confidence, seed,
                                           None if backend is None else backend.value, device)
        except ValueError as exc:
            raise _fail(str(exc))

        disable = quiet or json_out
        label = f"{method.value}{' online' if online else ''}"
        result: dict
        try:
            with _progress(disable, label) as prog:
                task = prog.add_task(label, total=None)

                def tick(done, total):
                    prog.update(task, completed=done, total=total)

                if method is Method.mc:
                    if online:
                        r = acc.get_epsilon_online(comp, delta, progress=tick)
                    elif delta is not None:
                        r = acc.get_epsilon(comp, delta, progress=tick)
                    else:
                        r = acc.get_delta(comp, epsilon, progress=tick)
                    result = r.to_dict()
                elif online:
                    result = reference.online_epsilons(method.value, comp, delta, progress=tick)
                    result.update(delta=delta, epsilon=result["epsilon"][0], steps=list(range(1, steps + 1)))
                    del result["deltas"]
                elif delta is not None:
                    result = reference.epsilon(method.value, comp, delta)
                    result["delta"] = delta
                else:
                    result = reference.delta(method.value, comp, epsilon)
                    result["epsilon"] = epsilon
        except ValueError as exc:
            raise _fail(str(exc))
        result = {"command": "account", "method": method.value, "composition": comp.to_dict(), **result}
        result["method"] = method.value

        if plot is not None:
            _make_plot(plot, comp, method, result, online, delta, epsilon, acc)
        if json_out:
            typer.echo(json.dumps(result, indent=2, default=str))
        else:
            _render_account(result, comp, method, online)
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
        from .verifier import plan_verification, verify

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


def _render_account(result: dict, comp, method, online: bool) -> None:
    out = Console()
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("mechanism", escape(comp.describe()))
    head.add_row("method", method.value + ("" if method is not Method.mc else f" ({result.get('estimator')}, "
                                           f"{result.get('num_samples', 0):,} samples per direction)"))
    if online:
        eps = result["epsilon"]
        k = len(eps)
        head.add_row("delta", f"{result['delta']:g}")
        head.add_row("epsilon after last step", f"{eps[-1]:.6g}")
        secs = result.get("cumulative_seconds")
        if secs:
            head.add_row("cumulative time", f"{secs[-1]:.2f} s")
        out.print(Panel(head, title="dpaudit account --online"))
        t = Table(title="epsilon after selected steps (all steps are in --json)")
        t.add_column("step", justify="right")
        t.add_column("epsilon", justify="right")
        has_ci = "ci_low" in result
        if has_ci:
            t.add_column("CI", justify="right")
        for i in sorted({1, max(1, k // 10), max(1, k // 4), max(1, k // 2), max(1, 3 * k // 4), k}):
            row = [str(i), f"{eps[i - 1]:.5g}"]
            if has_ci:
                row.append(f"[{result['ci_low'][i - 1]:.5g}, {result['ci_high'][i - 1]:.5g}]")
            t.add_row(*row)
        out.print(t)
        return
    if method is Method.mc:
        eps_query = "pilot_epsilon" in result["per_direction"].get("remove", {})
        if eps_query:
            head.add_row("delta", f"{result['delta']:g}")
            head.add_row("epsilon (estimate)", f"[bold]{result['epsilon']:.6g}[/]")
        else:
            head.add_row("epsilon", f"{result['epsilon']:g}")
            head.add_row("delta (estimate)", f"[bold]{result['delta']:.6g}[/]  "
                                             f"(relative s.e. {result.get('relative_std_error', float('nan')):.2g})")
        head.add_row(f"{result['confidence']:.0%} confidence interval", f"[{result['ci_low']:.6g}, {result['ci_high']:.6g}]")
        head.add_row("larger direction", result["direction"])
        for d, v in result["per_direction"].items():
            if v.get("skipped"):
                head.add_row(f"  {d}", f"not sampled: its RDP bound {v['rdp_upper_bound']:.4g} is below the other direction's interval")
                continue
            val = v["epsilon"] if eps_query else v["delta"]
            head.add_row(f"  {d}", f"{val:.6g}  [{v['ci_low']:.6g}, {v['ci_high']:.6g}]  "
                                   f"estimator {v['estimator']}, tilt {', '.join(f'{x:.3g}' for x in v['tilts']) or '-'}")
        head.add_row("note", "an estimate, not an upper bound: `dpaudit verify` turns it into a guarantee (EVR)")
        head.add_row("time", f"{result['wall_seconds']:.2f} s on {result['backend']} ({result['device']})")
    else:
        kind = {"pld": "pessimistic estimate (upper)", "rdp": "upper bound", "prv": "estimate"}[method.value]
        for key in ("delta", "epsilon"):
            head.add_row(key, f"{result[key]:.6g}")
        if result.get("lower") is not None:
            head.add_row("prv bounds", f"[{result['lower']:.6g}, {result['upper']:.6g}]")
        head.add_row("kind", kind)
        head.add_row("time", f"{result['seconds']:.2f} s")
    out.print(Panel(head, title="dpaudit account"))


def _make_plot(path: Path, comp, method, result, online, delta, epsilon, acc) -> None:
    import numpy as np

    from . import reference

    title = comp.describe()
    if online:
        _plot_online(path, result.get("steps", list(range(1, len(result["epsilon"]) + 1))), result["epsilon"],
                     result.get("ci_low"), result.get("ci_high"), f"{title}, delta={delta:g} ({method.value})")
        return
    center = result["epsilon"] if delta is not None else epsilon
    grid = np.linspace(max(0.0, 0.5 * center), 1.6 * center + 0.5, 40)
    curves, refs = {}, {}
    if method is Method.mc:
        from .monte_carlo import resolve_estimator, sample_privacy_loss

        est = resolve_estimator(acc.estimator, comp)
        if est == "is-paper":
            est = "cmc"
        for d in comp.directions:
            s = sample_privacy_loss(comp, min(acc.num_samples, 50_000), direction=d, estimator=est,
                                    target_epsilon=list(grid[::8]), rng=acc.rng)
            m, se = s.delta_curve(grid)
            z = 1.959963984540054
            curves[f"MC {est} ({d})"] = (grid, m, np.maximum(m - z * se, 0), m + z * se)
    else:
        vals = [reference.delta(method.value, comp, float(e))["delta"] for e in grid]
        refs[method.value] = (grid, np.asarray(vals))
    mark = (result["epsilon"], result["delta"]) if "epsilon" in result and "delta" in result else None
    _plot_profile(path, comp, curves, refs, f"privacy profile: {title}", mark=mark)

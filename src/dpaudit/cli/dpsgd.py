"""``dpaudit dpsgd``: audit a DP-SGD training run from its gradient canaries, next to its
accountant (:mod:`dpaudit.dpsgd`, ``docs/dpsgd.md``), added to the app by :func:`register`.

Two ways in: train the built-in reference DP-SGD (digits) or one of its buggy variants with
canaries here, or audit a run saved elsewhere (``--run FILE.npz``, written by
:meth:`dpaudit.dpsgd.TrainingRun.save` or ``OpacusCanaries.save`` at the end of a user's job).

Exit codes (:data:`dpaudit.cli.options.EXIT_CODES`): 0 no violation found, 1 violation (the
certified one-run lower bound exceeds the accountant's epsilon), 2 bad input.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from .options import EXIT_HELP, EXIT_OK, EXIT_VIOLATION, check_plot_suffix, console, emit, fail, option, out, print_table

DEFAULT_EPSILON = 2.0
DEFAULT_DELTA = 1e-5
# --help's text: one line per paragraph (Rich wraps it to the terminal; a docstring's line breaks
# would be kept and break lines short at 80 columns).
HELP = "\n\n".join([
    "Audit DP-SGD training from gradient canaries: does it leak more than its accountant says?",
    "Trains the built-in reference DP-SGD (a small MLP on scikit-learn's digits) or one of its buggy variants "
    "with gradient canaries, each included with probability 1/2 and observed at every step; or, with --run, "
    "reads a run saved where it trained. Prints a certified one-run lower bound on epsilon (and on the "
    "Gaussian-DP mu) next to the accountant's epsilon for the claimed (noise multiplier, q, steps) at --delta, "
    "and two labelled estimates (no confidence statement). A violation (exit 1) is reported wrongly with "
    "probability at most --beta. See docs/dpsgd.md.",
    "Examples:",
    "  dpaudit dpsgd --epsilon 2 -q 0.05 --steps 200 --canaries 10000",
    "  dpaudit dpsgd --variant no-clipping --seed 0 --plot audit.png",
    "  dpaudit dpsgd --run run.npz      # OpacusCanaries.save('run.npz') in the job",
])
# Options that describe the training: with --run the file says what they were.
_TRAINING_OPTIONS = {"variant": "--variant", "epsilon": "--epsilon", "sampling_rate": "--sampling-rate",
                     "steps": "--steps", "canaries": "--canaries", "canary_kind": "--canary-kind", "clip": "--clip",
                     "device": "--device"}


def short_description(text: str) -> str:
    """The first clause of a variant's description: one line for ``--help``.

    Parameters
    ----------
    text : str
        A value of :data:`dpaudit.dpsgd.VARIANTS`.

    Returns
    -------
    str
        ``text`` up to its first ``:`` or `` (`` (all of it when it has neither), stripped.
    """
    cut = min((i for i in (text.find(":"), text.find(" (")) if i > 0), default=len(text))
    return text[:cut].strip()


def _given(ctx: typer.Context) -> set:
    """Parameter names the user gave on the command line (not left at their defaults)."""
    given = set()
    for name in ctx.params:
        source = ctx.get_parameter_source(name)
        # compared by name: typer may ship its own copy of click's ParameterSource enum
        if source is not None and getattr(source, "name", "") not in ("DEFAULT", "DEFAULT_MAP"):
            given.add(name)
    return given


def _unknown(value: str, known, flag: str) -> str:
    import difflib

    close = difflib.get_close_matches(value, list(known), n=2, cutoff=0.5)
    return (f"unknown {flag} {value!r}" + (f"; did you mean {' or '.join(close)}?" if close else "")
            + f" (choose from {', '.join(known)})")


def _list_variants(json_out: bool) -> None:
    """``--list-variants``: every variant with its description from :data:`dpaudit.dpsgd.VARIANTS`."""
    from ..dpsgd.reference import VARIANTS

    if json_out:
        emit(json.dumps(VARIANTS, indent=2))
        return
    t = Table(title="DP-SGD variants (dpaudit dpsgd --variant NAME)", show_lines=True)
    t.add_column("variant", no_wrap=True, style="bold")
    t.add_column("the bug (correct: none, the control)")
    for name, text in VARIANTS.items():
        t.add_row(name, escape(text))
    print_table(out(), t)


def _variant_texts() -> dict:
    """:data:`dpaudit.dpsgd.VARIANTS` for ``--help``, read from the literal in the source of
    :mod:`dpaudit.dpsgd.reference` so that registering the command imports neither numpy nor the
    DP-SGD package (``dpaudit --help`` starts at once); imported the usual way where the source
    is not at hand or the value is not a literal."""
    import ast
    import importlib.util

    try:
        spec = importlib.util.find_spec("dpaudit.dpsgd")
        source = Path(spec.submodule_search_locations[0], "reference.py").read_text(encoding="utf-8")
        for node in ast.parse(source).body:
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["VARIANTS"]:
                return ast.literal_eval(node.value)
    except (AttributeError, IndexError, OSError, TypeError, ValueError, SyntaxError):
        pass
    from ..dpsgd.reference import VARIANTS

    return VARIANTS


def register(app: typer.Typer) -> None:
    """Add this module's command (``dpsgd``) to app."""

    variants_help = "; ".join(f"{n} ({short_description(text)})" for n, text in _variant_texts().items())

    @app.command("dpsgd", help=HELP, epilog=EXIT_HELP)
    def dpsgd_cmd(
        ctx: typer.Context,
        variant: str = typer.Option("correct", "--variant", metavar="NAME",
                                    help=escape(f"The DP-SGD to train: {variants_help}. --list-variants describes "
                                                "each bug and its true privacy loss.")),
        run_path: Optional[Path] = typer.Option(None, "--run", metavar="FILE.npz",
                                                help="Audit this saved run instead of training one (written by "
                                                     "TrainingRun.save or OpacusCanaries.save where the job ran). "
                                                     "Its config is the claim; --noise-multiplier overrides it."),
        epsilon: Optional[float] = option("epsilon", None, f"the accountant's epsilon the noise multiplier is chosen "
                                          f"for; default {DEFAULT_EPSILON:g}; not with --noise-multiplier or --run"),
        delta: float = option("delta", DEFAULT_DELTA, "of every epsilon: the accountant's, the certified bounds, the "
                              "estimates"),
        beta: float = option("beta", 0.05, "of the certified bounds, split over the score functions"),
        noise_multiplier: Optional[float] = option("noise_multiplier", None, "claimed; default: the smallest whose "
                                                   "accountant epsilon is at most --epsilon; with --run it replaces "
                                                   "the file's claim"),
        sampling_rate: float = option("sampling_rate", 0.05),
        steps: int = option("steps", 200),
        canaries: int = typer.Option(10_000, "--canaries", help="Gradient canaries, each included in the training set "
                                                                "with probability 1/2 (at least 2)."),
        canary_kind: str = typer.Option("dirac", "--canary-kind", metavar="KIND",
                                        help="dirac (a coordinate of its own), alternating or signed (its sign "
                                             "changes between steps: sees noise shared across steps), random (a "
                                             "random direction of the model's parameters) or input (a crafted "
                                             "example). docs/dpsgd.md section 1."),
        clip: float = typer.Option(1.0, "--clip", help="Clipping norm C (max_grad_norm); canaries have norm 4C."),
        seed: Optional[int] = option("seed", None, "of the training run (mask, sampling, noise, model) and the "
                                     "audit's tie-breaking; default: drawn and printed"),
        device: str = option("device", "cpu", "of the training"),
        plot: Optional[Path] = option("plot", None, "the best score's histograms, included vs excluded canaries, "
                                      "next to the accountant's epsilon, the certified bound and the estimates"),
        json_out: bool = option("json", False),
        quiet: bool = option("quiet", False),
        list_variants: bool = typer.Option(False, "--list-variants", help="Describe the variants and exit."),
    ) -> None:
        """``dpaudit dpsgd``: train with canaries (or load ``--run``), audit, render (help: :data:`HELP`)."""
        if list_variants:
            _list_variants(json_out)
            raise typer.Exit(EXIT_OK)
        from .._validate import check_delta, check_epsilon, check_int, check_positive, check_probability, check_rate

        given = _given(ctx)
        try:
            check_delta(delta, "--delta")
            check_probability(beta, "--beta")
            if noise_multiplier is not None:
                check_positive(noise_multiplier, "--noise-multiplier")
            check_plot_suffix(plot)
            if plot is not None and not plot.resolve().parent.is_dir():
                raise ValueError(f"--plot: no such directory for {str(plot)!r}")
            if run_path is not None:
                clash = [flag for name, flag in _TRAINING_OPTIONS.items() if name in given]
                if clash:
                    raise ValueError(f"--run audits the saved run as it is: {', '.join(clash)} "
                                     f"{'comes' if len(clash) == 1 else 'come'} from {str(run_path)!r} (leave "
                                     f"{'it' if len(clash) == 1 else 'them'} out; --noise-multiplier overrides the "
                                     "claimed noise multiplier)")
            else:
                from ..dpsgd.reference import CANARY_KINDS, VARIANTS

                if variant not in VARIANTS:
                    raise ValueError(_unknown(variant, list(VARIANTS), "--variant"))
                if canary_kind not in CANARY_KINDS:
                    raise ValueError(_unknown(canary_kind, CANARY_KINDS, "--canary-kind"))
                if epsilon is not None:
                    check_epsilon(epsilon, "--epsilon", positive=True)
                    if noise_multiplier is not None:
                        raise ValueError("give --epsilon (the noise multiplier is chosen for it) or "
                                         "--noise-multiplier, not both")
                check_rate(sampling_rate, "--sampling-rate")
                check_int(steps, "--steps")
                check_int(canaries, "--canaries", 2)
                check_positive(clip, "--clip")
                from .._torch import check_device

                check_device(device)
        except ValueError as exc:
            raise fail(str(exc))
        if seed is None:
            import numpy as np

            seed = int(np.random.SeedSequence().entropy % (2**31))
        if run_path is not None:
            run, inputs = _load_run(run_path, noise_multiplier)
        else:
            run, inputs = _train(variant, epsilon, delta, noise_multiplier, sampling_rate, steps, canaries,
                                 canary_kind, clip, seed, device, show=not (quiet or json_out))
        inputs["seed"] = seed
        from ..dpsgd.audit import audit_run

        try:
            audit = audit_run(run, delta=delta, beta=beta, seed=seed)
        except ValueError as exc:
            raise fail(str(exc))
        if plot is not None:
            from ..dpsgd.plot import audit_plot

            try:
                audit_plot(run, audit, plot)
            except (OSError, ValueError) as exc:
                raise fail(f"--plot: cannot write {str(plot)!r}: {exc}")
        code = EXIT_VIOLATION if audit.violated else EXIT_OK
        if json_out:
            from ..estimators.region import jsonable

            result = audit.to_dict()
            result["inputs"] = jsonable(inputs)
            result["plot"] = None if plot is None else str(plot)
            emit(json.dumps(result, indent=2))
        else:
            _render(audit, inputs, plot)
            if plot is not None and not quiet:
                console.print(f"Plot written to {escape(str(plot))}", highlight=False)
        raise typer.Exit(code)


def _train(variant, epsilon, delta, noise_multiplier, sampling_rate, steps, canaries, canary_kind, clip, seed, device,
           *, show: bool):
    """Train the reference DP-SGD (or a variant) with canaries; returns ``(run, inputs)``."""
    import logging

    from ..dpsgd.reference import DPSGDConfig, noise_for_epsilon, train_with_canaries

    logging.getLogger("absl").setLevel(logging.ERROR)  # dp_accounting's warnings on stderr
    try:
        if noise_multiplier is None:
            target = DEFAULT_EPSILON if epsilon is None else epsilon
            sigma, source = noise_for_epsilon(target, delta, sampling_rate, steps), "epsilon"
        else:
            target, sigma, source = None, noise_multiplier, "option"
        cfg = DPSGDConfig(noise_multiplier=sigma, max_grad_norm=clip, sampling_rate=sampling_rate, steps=steps)
        if show:
            console.print(f"Training the reference DP-SGD ([bold]{escape(variant)}[/]) on digits: sigma={sigma:.4g}, "
                          f"q={sampling_rate:g}, {steps:,} steps, C={clip:g}, {canaries:,} {canary_kind} canaries, "
                          f"seed {seed}", highlight=False)
        run = train_with_canaries(cfg, canaries=canaries, variant=variant, canary_kind=canary_kind, seed=seed,
                                  device=device)
    except (ValueError, ImportError) as exc:
        raise fail(str(exc))
    inputs = {"run": None, "variant": variant, "canary_kind": canary_kind, "target_epsilon": target,
              "noise_multiplier_from": source, "train_accuracy": run.train_accuracy,
              "num_train": run.details.get("num_train"), "model_parameters": run.details.get("model_parameters"),
              "device": device}
    return run, inputs


def _load_run(path: Path, noise_multiplier: Optional[float]):
    """``--run FILE``: the saved run, its claim overridden by ``--noise-multiplier``; returns
    ``(run, inputs)``."""
    import dataclasses

    from ..dpsgd.reference import TrainingRun

    try:
        run = TrainingRun.load(path)
    except (OSError, ValueError) as exc:
        raise fail(f"--run: {exc}")
    saved = run.config.noise_multiplier
    if noise_multiplier is not None:
        run = dataclasses.replace(run, config=dataclasses.replace(run.config, noise_multiplier=noise_multiplier))
    inputs = {"run": str(path), "variant": run.variant, "canary_kind": run.details.get("canary_kind"),
              "target_epsilon": None, "noise_multiplier_from": "run" if noise_multiplier is None else "option",
              "saved_noise_multiplier": saved, "train_accuracy": run.train_accuracy}
    return run, inputs


def _fmt(x: float, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "not available"
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return f"{x:.{digits}g}"


_KIND_TEXT = {"upper_bound": "certified upper bound", "upper_confidence_bound": "upper confidence bound",
              "estimate": "estimate"}


def _render(a, inputs: dict, plot: Optional[Path]) -> None:
    """The verdict panel and the per-score table of ``dpaudit dpsgd`` (stdout)."""
    cfg = a.config
    best = a.one_run[a.best_score]
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold", no_wrap=True)
    head.add_column(overflow="fold")
    if inputs["run"] is None:
        acc = inputs.get("train_accuracy")
        head.add_row("run", escape(f"reference DP-SGD, variant {a.variant}: MLP of {inputs['model_parameters']:,} "
                                   f"parameters on {inputs['num_train']:,} digits")
                     + (f" (train accuracy {acc:.2f})" if acc is not None and math.isfinite(acc) else ""))
    else:
        head.add_row("run", escape(f"{inputs['run']} (variant {a.variant})"))
    kind = inputs.get("canary_kind")
    head.add_row("canaries", f"{a.canaries:,}" + (f" {escape(str(kind))}" if kind else "")
                 + f", {int(best.n_included):,} included (each with probability 1/2)")
    source = inputs["noise_multiplier_from"]
    if source == "epsilon":
        why = f" (for epsilon {inputs['target_epsilon']:g})"
    elif source == "run":
        why = " (from the run)"
    elif inputs.get("saved_noise_multiplier") is not None:
        why = f" (--noise-multiplier; the run says {inputs['saved_noise_multiplier']:.4g})"
    else:
        why = " (--noise-multiplier)"
    head.add_row("claimed", f"sigma={cfg.noise_multiplier:.4g}{why}, q={cfg.sampling_rate:g}, steps={cfg.steps:,}, "
                            f"C={cfg.max_grad_norm:g}")
    if a.violated:
        verdict = "[bold red]VIOLATION[/]: the run leaks more than its accountant says"
    elif a.is_suspect:
        verdict = "[bold yellow]SUSPECT[/] (not a violation): " + escape(a.suspect_text())
    else:
        verdict = "[bold green]no violation found[/] (a lower bound cannot prove privacy)"
    head.add_row("verdict", verdict)
    head.add_row("accountant epsilon", f"[bold]{_fmt(a.accountant_epsilon)}[/] at delta={a.delta:g} "
                                       f"({_KIND_TEXT.get(a.accountant_kind, escape(a.accountant_kind))})")
    correct, guesses, _ = a.headline_guess
    against = "against the claimed DP-SGD family; " if a.details.get("claim") else ""
    head.add_row("certified epsilon", f"[bold]>= {_fmt(a.epsilon_lower_bound)}[/] ({a.fraction_of_accountant:.2f} x "
                                      f"the accountant; {against}score {a.best_score}, {correct:,} of "
                                      f"{guesses:,} guesses correct)")
    if a.details.get("claim"):
        head.add_row("for any mechanism", f">= {_fmt(a.epsilon_lower_bound_any)} (the f-DP test of (eps, delta)-DP)")
    head.add_row("certified GDP mu", f">= {_fmt(a.mu_lower_bound)}")
    betas = a.details.get("score_betas", {})
    split = ", ".join(f"{k} {v:.3g}" for k, v in betas.items()) if betas else f"{len(a.one_run)} scores"
    head.add_row("confidence", f"each bound is wrong with probability <= {a.beta:g} (split over the scores: "
                               f"{split})")
    fit_sigma = a.fit.get("noise_multiplier")
    # estimate_text: labelled, "not computed: <reason>" when absent, flagged when below the bound
    head.add_row("estimate (fit)", "fitted per-step mechanism composed"
                                   + (f" (sigma {fit_sigma:.3g})" if fit_sigma and math.isfinite(fit_sigma) else "")
                                   + f": {escape(a.estimate_text('fit'))}")
    head.add_row("estimate (PLD)", f"histogram PLD composed: {escape(a.estimate_text('pld'))}")
    saved = " (as saved)" if inputs["run"] else ""
    head.add_row("time", f"training {a.train_seconds:.2f} s{saved}, audit {a.audit_seconds:.2f} s; "
                         f"seed {inputs['seed']}")
    if plot is not None:
        head.add_row("plot", escape(str(plot)))
    console_out = out()
    console_out.print(Panel(head, title="dpaudit dpsgd", border_style="red" if a.violated else "green"))
    t = Table(title="Certified one-run bounds per score (any mechanism; each at its share of beta)")
    t.add_column("score")
    t.add_column("epsilon >=", justify="right", no_wrap=True)
    t.add_column("mu >=", justify="right", no_wrap=True)
    t.add_column("guesses correct", justify="right", no_wrap=True)
    for name, r in a.one_run.items():
        t.add_row(name + (" (best)" if name == a.best_score else ""), _fmt(r.epsilon_lower_bound),
                  _fmt(r.mu_lower_bound), f"{r.guess.correct:,} of {r.guess.guesses:,}")
    print_table(console_out, t)

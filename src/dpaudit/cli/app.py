"""The ``dpaudit`` app: ``dpaudit test``, ``dpaudit zoo``, ``dpaudit version``, and ``main()``,
the console-script entry point that maps exceptions to exit codes once.

The exit codes, console, error path and shared options of every command are in
:mod:`dpaudit.cli.options`; ``audit-scores`` is in :mod:`dpaudit.cli.scores`, ``account`` and
``verify`` in :mod:`dpaudit.cli.account`, ``dpsgd`` in :mod:`dpaudit.cli.dpsgd`.
"""

from __future__ import annotations

import json
import os
import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from ..errors import DPAuditError, MechanismError
from .progress import _ECHO_ROOM, _erased_on_interrupt, _PlainProgress, _progress, progress_line  # noqa: F401
from .options import (  # noqa: F401  (EXIT_* importable from here as before)
    EXIT_BAD_INPUT, EXIT_HELP, EXIT_INCONCLUSIVE, EXIT_INTERNAL_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_VIOLATION,
    EXIT_TABLE_HELP, VOCABULARY_HELP, check_report_suffix, console, debug, emit, fail, fit_table, int_or_word, option, out, set_debug,
    tidy_help,
    write_report,
)

# Nothing heavy (numpy, scipy, torch, the testers) is imported at module level: `dpaudit --help`
# and `dpaudit zoo` start at once, and each command imports what it needs when it runs.


def __getattr__(name):  # PEP 562: names importable from here as before, loaded on first use
    if name == "AUTO_BAYES_METHOD":  # the sampler of --search auto
        from ..audit.targets import AUTO_BAYES_METHOD

        return AUTO_BAYES_METHOD
    if name == "VIOLATION_KINDS":
        from ..testers.base import VIOLATION_KINDS

        return VIOLATION_KINDS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode="rich",
    help=(
        "dpaudit tells whether a differentially private mechanism keeps its promise.\n\n"
        "It runs the mechanism many times on pairs of neighbouring datasets (datasets that differ "
        "in one record), bounds how distinguishable the outputs are with a finite-sample "
        "confidence bound, and reports a violation when the bound exceeds what the claimed "
        "guarantee allows. A reported violation is wrong with probability at most --beta."
    ),
    epilog=VOCABULARY_HELP + "\n\n" + EXIT_TABLE_HELP,
)


def _version_callback(value: bool) -> None:
    if value:
        from .._version import __version__

        emit(f"dpaudit {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _global_options(
    debug: bool = typer.Option(False, "--debug", help="On an error, print the full traceback (the mechanism's own "
                                                      "traceback too when it raised)."),
    version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True,
                                 help="Print dpaudit's version and exit."),
) -> None:
    """dpaudit tells whether a differentially private mechanism keeps its promise (exit codes:
    :data:`dpaudit.cli.options.EXIT_CODES`)."""
    set_debug(debug)


class Neighbouring(str, Enum):
    """``--neighbouring``: add/remove or replace-one adjacency of the claim."""

    add_remove = "add-remove"
    replace = "replace"


class TesterName(str, Enum):
    """``--tester``: the anytime-valid betting tester (default), the staged region tester, one
    divergence tester alone, the floating-point bit tester, or all of them (beta split)."""

    sequential = "sequential"
    staged = "staged"
    hockey_stick = "hockey-stick"
    renyi = "renyi"
    mmd = "mmd"
    histogram = "histogram"
    float_bits = "float-bits"
    all = "all"


class BetaSplit(str, Enum):
    """``--beta-split``: how beta is split over the trials, fixed before the run (``auto``: front-loaded
    for the sequential tester, even for the others; :mod:`dpaudit.audit.beta_split`)."""

    auto = "auto"
    even = "even"
    front = "front"


class Search(str, Enum):
    """``--search``: how neighbouring datasets are proposed: ``auto`` (given or witness pairs, then
    random and TPE proposals), ``grid`` (given or witness pairs), ``random``, ``bayes`` (Gaussian
    process) or ``evolution`` (NSGA-II); the last two need Optuna."""

    auto = "auto"
    grid = "grid"
    random = "random"
    bayes = "bayes"
    evolution = "evolution"


def _parse_domain(specs: list[str] | None):
    """--domain LOWER:UPPER (one per coordinate) as a Domain, or None."""
    from ..audit.targets import as_domain

    return as_domain(specs)


def _parse_pairs(spec: str, relation) -> tuple:
    """--pairs: a JSON file or JSON text ``[[D0, D1], ...]`` as pairs of ``relation``, and the pairs
    whose records hold NaN or an infinity (JSON's extension tokens ``NaN``, ``Infinity``,
    ``-Infinity``; ``-0.0`` stays a negative zero), which no domain holds: those are certified in the
    adversarial stage (:func:`dpaudit.audit.adversarial.screen_stage`) instead of the trials.

    Returns
    -------
    (list of NeighbouringPair, list of (ndarray, ndarray))

    Raises
    ------
    DPAuditError
        For a value that looks like a path (ends in .json or holds a path separator, and is not
        JSON text) naming no file ("no such file"), for text that is not JSON, or for JSON that
        is not a list of pairs.
    """
    text = spec
    if os.path.exists(spec):
        text = Path(spec).read_text()
    elif not spec.lstrip().startswith(("[", "{")) and (
            spec.lower().endswith(".json") or any(sep and sep in spec for sep in (os.sep, os.altsep, "/"))):
        raise DPAuditError(f"--pairs: no such file: {spec}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DPAuditError(f"--pairs must be a JSON file or JSON text [[D0, D1], ...]: {exc}") from None
    if not isinstance(data, list) or not all(isinstance(p, (list, dict)) for p in data):
        raise DPAuditError(f"--pairs must be a list of [D0, D1] pairs, got {text[:80]!r}")
    import numpy as np

    from ..audit.targets import user_pairs

    ordinary, special = [], []
    for i, p in enumerate(data):
        d0, d1 = (p.get("d0"), p.get("d1")) if isinstance(p, dict) else (tuple(p) + (None, None))[:2]
        try:
            a0, a1 = np.asarray(d0 if d0 is not None else [], dtype=float), np.asarray(d1 if d1 is not None else [], dtype=float)
        except (TypeError, ValueError):
            ordinary.append(p)  # user_pairs names what is wrong with it
            continue
        if np.all(np.isfinite(a0)) and np.all(np.isfinite(a1)):
            ordinary.append(p)
            continue
        dim = relation.domain.record_dim
        try:
            special.append(tuple(a.reshape(len(a), -1) if a.size else np.zeros((0, dim)) for a in (a0, a1)))
        except ValueError:
            raise DPAuditError(f"--pairs: given pair {i + 1} is not a list of records") from None
        if any(a.size and a.reshape(len(a), -1).shape[1] != dim for a in (a0, a1)):
            raise DPAuditError(f"--pairs: given pair {i + 1} has records of another dimension than the domain's {dim}")
    return user_pairs(ordinary, relation), special


def _load_target(target: str):
    """Resolve TARGET to (mechanism-or-zoo-entry, kind) (see :func:`dpaudit.audit.targets.load_target`).

    Raises
    ------
    DPAuditError
        For a ``zoo:NAME`` that names no zoo entry: "did you mean ...?" with the closest names
        (:func:`_unknown_zoo_name`), as ``dpaudit zoo NAME`` answers; other bad targets as
        :func:`~dpaudit.audit.targets.load_target` says.
    """
    from ..audit.targets import load_target

    if target.startswith("zoo:"):
        from ..mechanisms import zoo

        if target[4:] not in {e.name for e in zoo.entries()}:
            raise DPAuditError(_unknown_zoo_name(target, [e.name for e in zoo.entries()]))
    return load_target(target)


def _unknown_zoo_name(name: str, known: list[str]) -> str:
    """The one-line error for a zoo name that is not one: the closest names, never the whole list."""
    import difflib

    key = name.removeprefix("zoo:")
    close = difflib.get_close_matches(key, known, n=3, cutoff=0.5)
    if not close:  # a prefix or part of a name ("laplace") still finds its entries
        close = [k for k in known if key and key.lower() in k.lower()][:3]
    return (f"no zoo mechanism called {key!r}" + (f"; did you mean {', '.join(close)}?" if close else "")
            + " (dpaudit zoo lists them all)")


def _fmt_dataset(d) -> str:
    from ..mechanisms.base import describe_dataset

    return describe_dataset(d, max_items=10)


_DIVERGENCE_LABEL = {
    "hockey-stick": "hockey-stick H_e^eps",
    "renyi": "Rényi D_alpha",
    "mmd": "MMD",
}


def _evidence_rows(ev: Table, s, claim) -> None:
    """Rows describing the strongest evidence of one trial, whatever the tester."""
    o = s.outcome
    b = o.bounds[o.strongest]
    part = o.strongest_part
    if o.parts:  # combined tester: show which tester holds the strongest bound
        ev.add_row("tester", f"{part.tester} (of: {', '.join(p.tester for p in o.parts)})")
    ev.add_row("direction", f"{b.direction} (P = M(D0), Q = M(D1))")
    held_out = getattr(b, "n_test_p", None)
    split = held_out and getattr(b, "n_train", 0)  # only sample-split bounds hold samples out
    ev.add_row("samples", f"{s.num_samples:,} per dataset" + (f" ({held_out:,} held out for the bound)" if split else ""))
    label = _DIVERGENCE_LABEL.get(b.divergence, b.divergence)
    order = getattr(b, "epsilon", None) if b.divergence == "hockey-stick" else getattr(b, "alpha", None)
    order_txt = "" if order is None else (f" (eps={order:g})" if b.divergence == "hockey-stick" else f" (alpha={order:g})")
    ev.add_row(f"{label} estimate{order_txt}", f"{b.estimate:.6g}")
    ev.add_row(f"{label} lower bound", f"{b.lower:.6g}")
    if getattr(b, "ratio_lower", None) is not None:  # certified by the ratio test (docs/hockey_stick.md §1b)
        ev.add_row("certified by", f"ratio test: P(S)/Q(S) >= {b.ratio_lower:.6g} ({b.poisson_p_count} vs "
                                   f"{b.poisson_q_count} of Poisson({b.poisson_rate_p:,.0f}) / Poisson({b.poisson_rate_q:,.0f}) rows)"
                   if b.poisson_p_count is not None else "ratio test (no Poisson rows: bound 0)")
    elif getattr(b, "p_mass_lower", None) is not None:
        ev.add_row("certified by", f"mass bounds: P(S) >= {b.p_mass_lower:.6g}, Q(S) <= {b.q_mass_upper:.6g}")
    if getattr(b, "region", ""):  # the set S (exact cells, informative columns, or a classifier threshold)
        ev.add_row("test region S", escape(b.region))
    if part.threshold is not None and b.divergence != "hockey-stick":
        ev.add_row("claim allows", f"{part.threshold:.6g}")
    if o.delta_lower_bound is not None and o.claimed_delta is not None:
        ev.add_row("delta lower bound at claimed eps", f"{o.delta_lower_bound:.6g}  (claim allows {o.claimed_delta:.6g})")
    if s.outcome.violation:
        if part.witness_epsilon is not None:
            ev.add_row("violation shown at eps'", f"{part.witness_epsilon:.4g} (margin {part.margin:.4g})")
        else:
            ev.add_row("margin", f"{part.margin:.4g}")
    eps_lb = o.epsilon_lower_bound  # the strongest part's own (CombinedTester): never another tester's number
    if eps_lb is not None:
        delta_note = "0" if claim.__class__.__name__ != "ApproxDP" else f"{claim.delta:g}"
        ev.add_row(f"empirical epsilon lower bound (delta={delta_note})",
                   (f"{eps_lb:.4g}" if eps_lb > 0 else "none") + f"  ({_evidence_source(o)})")
        if s.stopped_early_at_violation:
            # the verdict stops at the first rejecting stage; its epsilon rests on those samples only
            ev.add_row("", f"from {s.num_samples:,} of {s.full_samples:,} samples per dataset (the trial stopped at "
                           "the violation); --estimate certifies the largest epsilon all of them support")
    sized = getattr(b, "sized_epsilon", None)
    if sized is not None:  # the sequential tester's sizing step (docs/sequential.md §10)
        ev.add_row("size of the leak", f"epsilon >= {sized:.4g} on {b.sizing_samples:,} fresh pairs after the detection "
                                       f"(probability >= {1 - o.beta:g}; --no-size skips it)")
    if o.note:
        from ..report.builders import note_without_region

        ev.add_row("note", escape(note_without_region(o.note, getattr(b, "region", ""))))


def _evidence_source(o) -> str:
    """Which tester and kind of evidence an outcome's numbers come from: ``"hockey-stick tester,
    distributional"`` or ``"float-bits tester, floating-point: the float64 bit patterns"``."""
    kind = o.evidence_kind
    return f"{o.strongest_part.tester} tester, " + ("floating-point: the float64 bit patterns" if kind == "floating-point"
                                                     else "the output distribution")


def _render(result, out: Console) -> None:

    claim = result.claim
    s = result.strongest
    kind = result.kind
    if kind is not None:
        headline = kind.headline + (" FOUND" if kind.name == "distributional" else "")
        verdict = f"[bold red]{headline}[/]: {kind.meaning}"
    elif result.inconclusive:
        verdict = "[bold yellow]INCONCLUSIVE[/]: too few samples for the tester's bound to say anything"
    else:
        verdict = "[bold green]no violation found[/] (this does not prove the claim)"
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column(overflow="fold")
    head.add_row("mechanism", escape(result.mechanism))
    head.add_row("claim", claim.describe())
    head.add_row("tester", escape(str(result.tester.get("tester", "?"))))
    head.add_row("verdict", verdict)
    if kind is not None:
        head.add_row("what to do", kind.advice)
    if result.also_found:  # a distributional verdict that came with a floating-point finding
        head.add_row("also found", escape(result.also_found))
    head.add_row(
        "confidence",
        f"a violation is reported wrongly with probability <= {result.beta:g} ("
        + (f"{result.adversarial['beta']:g} to the adversarial inputs, the rest " if result.adversarial else "beta ")
        + f"split over {result.trial_budget} trial(s), {result.split_summary}"
        + (f" x {len(result.tester.get('parts', []))} testers" if result.tester.get("parts") else "")
        + ", then within each test over the bounds it makes)",
    )
    head.add_row("trials", result.trials_summary)
    head.add_row("time", f"{result.wall_seconds:.1f} s, seed {result.seed}")
    if result.study:
        runs = result.study.get("runs", [])
        head.add_row(
            "stored", escape(f"{result.study.get('study_name')} in {result.study.get('storage')}")
            + (f" ({len(runs)} runs: resumed)" if len(runs) > 1 else ""),
        )
    if result.execution.get("executor") == "dask":
        ex = result.execution
        head.add_row("ran on", escape(f"Dask {ex.get('scheduler')} ({ex.get('workers')} workers, {ex.get('threads')} threads)"))
    elif result.execution.get("processes_choice"):  # --processes auto: what the measurement chose
        ex = result.execution
        head.add_row("processes", escape(f"{ex.get('processes', 1)} ({ex['processes_choice']})"))
    style = "red" if result.violation else ("yellow" if result.inconclusive else "green")
    out.print(Panel(head, title="dpaudit test", border_style=style))
    if result.adversarial:
        from ..audit.adversarial import stage_lines

        adv = Table(title=f"Adversarial inputs ({result.adversarial['samples']:,} outputs per dataset each)",
                    show_header=False)
        adv.add_column(style="bold", no_wrap=True)
        adv.add_column(overflow="fold")
        for r, line in zip(result.adversarial["results"], stage_lines(result.adversarial)):
            colour = {"leak": "red", "pass": "green"}.get(r["status"], "yellow")
            adv.add_row(escape(r["kind"]), f"[{colour}]{escape(line[len(r['kind']) + 2:])}[/]")
        out.print(adv)

    if s is not None:
        ev = Table(title=("Witness" if result.violation else "Strongest evidence") + f" (trial {s.index + 1})", show_header=False)
        ev.add_column(style="bold")
        ev.add_column(overflow="fold")
        ev.add_row("neighbouring pair", escape(f"{s.pair.relation}: {s.pair.description}"))
        ev.add_row("D0", escape(_fmt_dataset(s.pair.d0)))
        ev.add_row("D1", escape(_fmt_dataset(s.pair.d1)))
        _evidence_rows(ev, s, claim)
        leak = result.leak_size_dict()  # the region held no output of one dataset: sized to the end
        if leak is not None:
            ev.add_row("leak size", escape(leak["text"]))
        out.print(ev)

    if len(result.trials) > 1:
        tt = _trials_table(result, pairs=True)
        if not fit_table(tt, out.width, out) or (tt.columns[1].width or _PAIR_WIDTH) < _PAIR_WIDTH:
            # narrow: the pairs listed under the numbers, not squeezed into a column
            tt = _trials_table(result, pairs=False)
            fit_table(tt, out.width, out)
            out.print(tt)
            pairs = Table.grid(padding=(0, 2))
            pairs.add_column(justify="right", no_wrap=True)
            pairs.add_column(overflow="fold")
            pairs.add_row("#", "pair", style="bold")
            for r in result.trials[:50]:
                pairs.add_row(str(r.index + 1), escape(r.pair.description or "-"))
            out.print(pairs)
        else:
            out.print(tt)


_PAIR_WIDTH = 24  # narrower than this, the trials table lists the pairs under the numbers


def _trials_table(result, *, pairs: bool) -> Table:
    """The trials table of ``dpaudit test`` (the first 50 trials), with or without the pair
    column; numbers are never wrapped (:func:`dpaudit.cli.options.fit_table` sizes the rest)."""
    tt = Table(title="Trials", expand=False)
    tt.add_column("#", justify="right", no_wrap=True)
    if pairs:
        tt.add_column("pair")
    for col in ("estimate", "lower", "margin", "verdict", "samples", "s"):
        tt.add_column(col, justify="right", no_wrap=True)
    for r in result.trials[:50]:
        o = r.outcome
        b = o.bounds[o.strongest]
        status = {"violation": "[red]violation[/]", "inconclusive": "[yellow]inconcl.[/]"}.get(o.status, "pass")
        if o.violation_kind == "floating-point":  # only the float64 bit patterns rejected the claim
            status = "[yellow]fp leak[/]"
        tt.add_row(
            str(r.index + 1), *([escape(r.pair.description or "-")] if pairs else []), f"{b.estimate:+.4f}",
            f"{b.lower:+.4f}", f"{o.margin:+.4f}", status, _samples_used(r), f"{r.sample_seconds + r.test_seconds:.1f}",
        )
    if len(result.trials) > 50:
        tt.caption = f"first 50 of {len(result.trials)} trials; all are in the JSON report"
    if any(r.stopped_by == "futility" for r in result.trials):
        tt.caption = ((tt.caption + "; ") if tt.caption else "") + "fut.: stopped early, a larger sample could not reject"
    if any(r.outcome.violation_kind == "floating-point" for r in result.trials[:50]):
        tt.caption = ((tt.caption + "; ") if tt.caption else "") + ("fp leak: a FLOATING-POINT LEAK (only the float64 "
                                                                    "bit patterns reject the claim)")
    return tt


def _stages_text(samples: int, stages) -> str:
    """`` in stages 2,000/8,000/50,000`` for a sequential schedule, else empty."""
    from ..audit.sequential import stage_schedule

    sched = stage_schedule(samples, stages)
    return "" if len(sched) == 1 else " in stages " + "/".join(f"{n:,}" for n in sched)


def _batches_text(tester) -> str:
    """`` at most, drawn in batches from 32 pairs (x1.3) until the evidence suffices`` for a sequential tester."""
    seq = getattr(tester, "primary", tester)
    return (f" at most, in batches from {seq.first_batch:,} pairs (x{seq.growth:g}; x{seq.per_call_growth:g} per call) "
            "until the evidence suffices")


def _samples_used(r) -> str:
    """Samples per dataset a trial used (``"8,000 fut."`` when it stopped for futility)."""
    return f"{r.num_samples:,}" + (" fut." if r.stopped_by == "futility" else "")


def _explicit(ctx: "typer.Context", name: str) -> bool:
    """Whether option ``name`` was given on the command line (not left at its default)."""
    try:
        source = ctx.get_parameter_source(name)
    except Exception:  # pragma: no cover - old click
        return True
    # compared by name: typer may ship its own copy of click's ParameterSource enum
    return source is not None and getattr(source, "name", "") not in ("DEFAULT", "DEFAULT_MAP")


def _make_finder(search: "Search", known: list, relation, seed: Optional[int]):
    """The finder for --search (see the option's help and :func:`dpaudit.audit.targets.make_finder`)."""
    from ..audit.targets import make_finder

    return make_finder(search.value, known, relation, seed)


def _make_executor(scheduler: Optional[str], workers: Optional[str], processes: Optional[str] = None):
    """The executor of ``dpaudit test``: a DaskExecutor for --scheduler / --workers, else an
    InProcessExecutor whose per-call sampling runs on --processes processes (default: auto).

    Raises
    ------
    DPAuditError
        If --scheduler and --workers are both given, --processes is given with either, or the
        scheduler address is malformed.
    ValueError
        If --workers or --processes is not a positive integer or 'auto' (naming the flag and value).
    """
    from ..audit.executors import DaskExecutor, InProcessExecutor

    if scheduler is None and workers is None:
        n_proc = "auto" if processes is None else int_or_word(processes, "auto", "--processes")
        return InProcessExecutor(processes=n_proc)
    if scheduler is not None and workers is not None:
        raise DPAuditError("give either --scheduler (an existing Dask cluster) or --workers (a local one), not both")
    if processes is not None:
        raise DPAuditError("--processes is for sampling in this process; with --scheduler/--workers the Dask "
                           "workers sample: leave --processes out")
    if scheduler is not None:
        if "://" not in scheduler and ":" not in scheduler:
            raise DPAuditError(f"--scheduler must be a Dask scheduler address like tcp://127.0.0.1:8786, got {scheduler!r}")
        return DaskExecutor(scheduler)
    n = int_or_word(workers, "auto", "--workers")
    if n == "auto":
        return DaskExecutor()
    return DaskExecutor(n_workers=n)


def _ship_by_value(target: str) -> None:
    """Let cloudpickle ship a user's mechanism module by value, so Dask workers that cannot
    import it (another machine, another working directory) still can run it."""
    if target.startswith("zoo:") or ":" not in target:
        return
    name = target.rsplit(":", 1)[0]
    module = sys.modules.get(name)
    if module is None and (name.endswith(".py") or "/" in name or os.sep in name):  # a file target
        file = os.path.abspath(name if name.endswith(".py") else name + ".py")
        module = next((m for m in list(sys.modules.values())
                       if os.path.abspath(getattr(m, "__file__", None) or "") == file), None)
    path = getattr(module, "__file__", None) or ""
    if module is None or "site-packages" in path or "dist-packages" in path:
        return
    try:
        import cloudpickle

        cloudpickle.register_pickle_by_value(module)
    except (ImportError, ValueError):  # pragma: no cover
        pass


REPORT_SAMPLES = 5_000


def _write_test_report(ctx: "typer.Context", path: Path, result, mechanism) -> None:
    """Write ``dpaudit test``'s --report: the JSON result, or an HTML/Markdown report rendered
    from it (:mod:`dpaudit.report`) with outputs re-drawn at the strongest pair for the plot."""
    from ..report import report_format

    samples, note = None, ""
    s = result.strongest
    if s is not None and report_format(path) != "json":
        from ..audit.executors import sample_pair, trial_streams

        n = min(REPORT_SAMPLES, s.num_samples)
        try:
            sample_ss, _ = trial_streams(result.seed, s.index)
            samples = sample_pair(mechanism, s.pair, n, sample_ss, None)
            note = (f"The JSON result holds no outputs: these {n:,} per dataset were re-drawn for the plot from "
                    f"trial {s.index + 1}'s recorded random stream (seed {result.seed}, spawn key {s.index}).")
        except Exception as exc:  # noqa: BLE001 - a report without the plot is still a report
            note = f"re-drawing outputs of the mechanism for the plot failed: {type(exc).__name__}: {exc}"
    write_report(ctx, path, json.loads(result.to_json()), seed=result.seed, versions={}, samples=samples, samples_note=note)


@app.command("test", epilog=EXIT_HELP)
def test_cmd(
    ctx: typer.Context,
    target: str = typer.Argument(
        ..., help="What to audit: [bold]zoo:NAME[/] (`dpaudit zoo`), [bold]path/to/file.py:function[/] or "
        "[bold]package.module:attribute[/]: a Mechanism or a function f(dataset) -> output."
    ),
    epsilon: float = option("epsilon", ..., "the claimed epsilon"),
    delta: Optional[float] = option("delta", None, "claimed; omit it for pure DP"),
    alpha: Optional[float] = option("alpha", None, "claimed: (alpha, epsilon)-Rényi DP"),
    neighbouring: Optional[Neighbouring] = option("neighbouring", None, "default: the mechanism's own, else add-remove"),
    samples: int = option("samples", 50_000, "per dataset and trial"),
    stages: str = option("stages", "auto"),
    trials: int = option("trials", 10),
    beta: float = option("beta", 0.01, "of a false accusation"),
    beta_split: BetaSplit = typer.Option(BetaSplit.auto, "--beta-split", help="How beta is split over the trials, fixed before the run: even (beta/T each), front (beta/2 to the first trial, the rest shared by the others) or auto (front for the sequential tester, even for the staged ones)."),
    seed: Optional[int] = option("seed"),
    report: Optional[Path] = option("report"),
    exhaustive: bool = typer.Option(False, "--exhaustive", help="Run every trial instead of stopping at the first violation."),
    estimate: bool = typer.Option(False, "--estimate", help="Report the largest certified epsilon (probability >= 1 - beta) instead of a verdict, every trial at full --samples."),
    search: Search = typer.Option(Search.auto, "--search", help="How pairs are chosen: auto (given/witness pairs, then random and TPE proposals), grid (given/witness pairs), random, bayes (Gaussian process) or evolution (NSGA-II); bayes and evolution need Optuna."),
    pairs: Optional[str] = typer.Option(None, "--pairs", help='Pairs to test: a JSON file or text [[D0, D1], ...], e.g. "[[[1.0], [1.0, NaN]]]".'),
    domain: Optional[List[str]] = typer.Option(None, "--domain", help="Record domain: LOWER:UPPER per coordinate. Default: the mechanism's, else 0:1."),
    min_size: Optional[int] = typer.Option(None, "--min-size", help="Smallest dataset (records) of every pair. Default: the mechanism's, else 0 (add-remove) or 1 (replace)."),
    max_size: Optional[int] = typer.Option(None, "--max-size", help="Largest dataset (records) of every pair. Default: the mechanism's, else 10."),
    tester_name: Optional[TesterName] = typer.Option(None, "--tester", help="Which test decides: sequential (betting; stops once the evidence suffices; docs/sequential.md), staged (the old default, in --stages), hockey-stick, renyi, mmd, histogram, float-bits or all. Default: sequential, plus float-bits at beta/10 on non-integer float outputs; a named tester runs alone."),
    first_batch: Optional[int] = typer.Option(None, "--first-batch", help="Sequential tester: pairs in the first (unbet) batch; default 32."),
    batch_growth: Optional[float] = typer.Option(None, "--batch-growth", help="Sequential tester: batch growth; default 1.3 (1.25 per call)."),
    no_size: bool = typer.Option(False, "--no-size", help="Sequential tester: skip the sizing step after a violation (fresh pairs, 4x the detection's, that bound the leak's epsilon)."),
    device: str = option("device", "cpu", "of trained testers"),
    json_out: bool = option("json", False),
    quiet: bool = option("quiet", False),
    storage: Optional[str] = typer.Option(None, "--storage", help="Keep the audit in this Optuna storage (e.g. sqlite:///audit.db, the default with --resume)."),
    resume: bool = typer.Option(False, "--resume", help="Continue (or start) the stored audit: finished trials are kept; options not given are the stored ones."),
    study_name: Optional[str] = typer.Option(None, "--study-name", help="Name of the audit in --storage. Default: dpaudit-<mechanism>."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Run trials on this Dask scheduler (tcp://HOST:PORT); the mechanism must be picklable."),
    workers: Optional[str] = typer.Option(None, "--workers", help="Run trials on a local Dask cluster of N workers, or 'auto' (one per core)."),
    processes: Optional[str] = option("processes", None, "default: auto; not with --scheduler/--workers"),
    adversarial: bool = typer.Option(False, "--adversarial", help="First search the inputs the target accepts (NaN, weights, int limits...) at beta/10."),
) -> None:
    """Test whether a mechanism satisfies the DP guarantee it claims.

    Examples:

      dpaudit test zoo:non-dp-laplace-1 --epsilon 0.01    # exits 1: violation
      dpaudit test zoo:snapping-laplace --epsilon 0.01    # exits 0
      dpaudit test zoo:float-laplace --epsilon 1          # exits 5: FP leak
      dpaudit test mymech.py:noisy_sum -e 1 --tester hockey-stick
    """
    from ..audit.targets import assemble
    from .._validate import check_int, check_probability

    try:
        # bad input is reported before the heavy imports (scipy, the testers, Optuna: about a second)
        check_report_suffix(report)  # an unknown suffix is bad input before any work
        check_int(samples, "--samples", 8, error=DPAuditError)
        check_int(trials, "--trials", 1, error=DPAuditError)
        check_probability(beta, "--beta", error=DPAuditError)
        obj, kind = _load_target(target)
        setup = assemble(
            obj, kind, epsilon=epsilon, delta=delta, alpha=alpha,
            neighbouring=neighbouring.value if neighbouring else None, domain=domain,
            min_size=min_size, max_size=max_size,
        )
        mechanism, claim, relation, known = setup.mechanism, setup.claim, setup.relation, setup.known
        special_pairs = []
        if pairs is not None:
            known, special_pairs = _parse_pairs(pairs, relation)
            known = known or setup.known
    except (DPAuditError, ValueError) as exc:
        raise fail(str(exc))

    from ..audit.ledger import DEFAULT_STORAGE, resolve_study
    from ..audit.loop import audit
    from ..audit.sequential import normalise_stages, stage_schedule
    from ..testers import default_tester_name, make_tester

    try:
        plan = resolve_study(storage, study_name, resume, getattr(mechanism, "name", type(mechanism).__name__),
                             seed=seed, default_storage=DEFAULT_STORAGE, peek=True)
        storage, seed = plan.storage, plan.seed  # a resumed audit's finder needs the stored seed
        if seed is None:  # draw it here, so the finder is seeded too and the recorded seed replays the search
            import numpy as np

            seed = int(np.random.SeedSequence().entropy % (2**63))
        finder = _make_finder(search, known, relation, seed)
        if estimate:
            tester = _estimate_tester(claim, tester_name, device, stages, _explicit(ctx, "stages"))
            stages, exhaustive = "off", True
        else:
            stored_name = (plan.stored or {}).get("tester", {}).get("tester") if resume else None
            if tester_name is None and stored_name:  # a resumed audit keeps the tester it was started with
                name = stored_name
            elif tester_name is None or tester_name.value == "staged":
                # --stages asks for the staged tester: without --tester it selects the staged default
                name = default_tester_name(claim, sequential=tester_name is None and not _explicit(ctx, "stages"))
            else:
                name = tester_name.value
            tester = _with_batches(make_tester(name, device=device), first_batch, batch_growth, device, size=not no_size)
            if _is_sequential(tester) and _explicit(ctx, "stages"):
                raise DPAuditError(f"--stages {stages} sets the stages of the staged testers (--tester staged, hockey-stick, ...); "
                                   "the sequential tester draws in batches (--first-batch, --batch-growth)")
        tester.require(claim)
        executor = _make_executor(scheduler, workers, processes)
        if executor.kind == "dask":
            _ship_by_value(target)
        # On resume, options left at their defaults are taken from the stored audit (the header shows them).
        run_samples, samples = plan.setting("num_samples", samples, _explicit(ctx, "samples"))
        run_trials, trials = plan.setting("trial_budget", trials, _explicit(ctx, "trials"))
        run_beta, beta = plan.setting("beta", beta, _explicit(ctx, "beta"))
        run_stages, stages = plan.setting("stages", normalise_stages(stages), _explicit(ctx, "stages"))
        stage_schedule(samples, stages)  # explicit sizes beyond --samples are bad input now
    except (DPAuditError, ValueError) as exc:
        raise fail(str(exc))

    if not (json_out or quiet):
        console.print(
            f"Auditing [bold]{escape(str(getattr(mechanism, 'name', target)))}[/] against {claim.describe()} "
            f"({relation.name} neighbours, {samples:,} samples per dataset"
            f"{_batches_text(tester) if _is_sequential(tester) else _stages_text(samples, stages)}, "
            f"up to {trials} trial(s), beta={beta:g})"
            + (f"; audit kept in {escape(storage)}" if storage else "")
        )
    if not quiet:
        for note in setup.notes:  # e.g. the empty dataset left out (stderr, so --json stays clean)
            console.print(f"[yellow]note[/]: {escape(note)}")
    progress = _progress(console, disable=quiet or json_out or not console.is_terminal)
    plain = _PlainProgress(console, enabled=not (quiet or json_out) and not console.is_terminal)
    best = {"m": None, "kinds": set()}
    task_box = {}

    def show_best(outcome):
        m = outcome.margin
        best["m"] = m if best["m"] is None else max(best["m"], m)
        if outcome.violation:
            best["kinds"].add(outcome.violation_kind)
        label = (" VIOLATION" if "distributional" in best["kinds"]
                 else " FLOATING-POINT LEAK" if best["kinds"] else "")
        return f"{best['m']:+.3g}" + label

    def on_start(budget, finished):
        shown = "-"
        for rec in finished:
            shown = show_best(rec.outcome)
        label = f"resuming: {len(finished)} trial(s) done" if finished else "starting"
        task_box["task"] = progress.add_task(label, total=budget, completed=len(finished), best=shown, trial=0)
        plain.begin(budget, len(finished), shown)

    def start(i, pair):
        progress.update(task_box["task"], description=pair.description or "pair", trial=i + 1)
        plain.trial(i + 1, pair.description or "pair")

    def end(rec):
        shown = show_best(rec.outcome)
        progress.update(task_box["task"], advance=1, best=shown)
        plain.done(shown)

    try:
        with progress, plain, _erased_on_interrupt(progress):
            result = audit(
                mechanism, claim, finder, tester=tester, num_samples=run_samples, trials=run_trials, beta=run_beta,
                exhaustive=exhaustive, seed=seed, neighbouring=relation.to_dict(),
                stages="auto" if run_stages is None else run_stages, beta_split=beta_split.value,
                on_trial_start=start, on_trial_end=end, on_start=on_start,
                storage=storage, study_name=plan.study_name, resume=resume, executor=executor,
                adversarial=relation if adversarial else False, adversarial_pairs=special_pairs,
            )
    except KeyboardInterrupt:
        st = plain.state
        console.print(
            "[bold yellow]interrupted[/]" + (f" after {st['done']} of {st['budget']} trial(s)" if st["budget"] else "")
            + (f": finished trials are kept in {escape(storage)}; run the same command with --resume to continue"
               if storage else " (use --storage/--resume to make an audit resumable)")
        )
        raise typer.Exit(EXIT_INTERRUPTED)
    except MechanismError as exc:
        raise fail(str(exc))
    except (DPAuditError, ValueError) as exc:
        raise fail(str(exc))

    if report is not None:
        _write_test_report(ctx, report, result, mechanism)
    if json_out:
        emit(result.to_json())
    else:
        _render(result, out())
        if estimate:
            _render_estimate(result, claim)
    raise typer.Exit(result.exit_code)


def _is_sequential(tester) -> bool:
    return bool(getattr(tester, "sequential", False))


def _with_batches(tester, first_batch, batch_growth, device: str, size: bool = True):
    """``tester`` with the sequential tester's batch options and sizing step applied (a new
    :class:`~dpaudit.testers.sequential.SequentialTester` inside the float screen, if any)."""
    if first_batch is None and batch_growth is None and size:
        return tester
    if first_batch is None and batch_growth is None and not _is_sequential(tester):
        return tester  # --no-size concerns the sequential tester only
    if not _is_sequential(tester):
        raise DPAuditError("--first-batch and --batch-growth set the sequential tester's batches: "
                           f"drop them or use --tester sequential (got the {tester.name} tester)")
    from ..testers.screened import FloatScreenTester
    from ..testers.sequential import SequentialTester

    kw = {"device": device, "size": size}
    if first_batch is not None:
        kw["first_batch"] = first_batch
    if batch_growth is not None:
        kw["growth"] = kw["per_call_growth"] = batch_growth
    seq = SequentialTester(**kw)
    if isinstance(tester, FloatScreenTester):
        return FloatScreenTester(seq, tester.screen, share=tester.share, name=tester.name)
    return seq


def _estimate_tester(claim, tester_name, device: str, stages: str, stages_given: bool):
    """The hockey-stick tester of ``dpaudit test --estimate``: every region maximises the certified
    epsilon (``objective="epsilon"`` for both the exact regions and the classifier)."""
    from ..estimators.histogram import HistogramHockeyStick
    from ..estimators.hockey_stick import ESTIMATE_TRAINING, ClassifierHockeyStick
    from ..privacy.claims import RenyiDP
    from ..testers import HockeyStickTester

    if tester_name is not None and tester_name.value != "hockey-stick":
        raise DPAuditError(f"--estimate uses the hockey-stick tester; it cannot be combined with --tester {tester_name.value}")
    if isinstance(claim, RenyiDP):
        raise DPAuditError("--estimate certifies an (epsilon, delta) lower bound: give a pure or --delta claim, not --alpha")
    if stages_given and stages not in ("off", "none"):
        raise DPAuditError(f"--estimate runs every trial at its full --samples: it cannot be combined with --stages {stages}")
    return HockeyStickTester(
        ClassifierHockeyStick(device=device, objective="epsilon", **ESTIMATE_TRAINING),
        region_estimator=HistogramHockeyStick(objective="epsilon"),
    )


def _render_estimate(result, claim) -> None:
    """The ``--estimate`` summary: the largest certified epsilon over the trials."""
    best = max(result.trials, key=lambda t: t.outcome.epsilon_lower_bound or 0.0, default=None)
    if best is None:
        return
    eps_lb = best.outcome.epsilon_lower_bound or 0.0
    at = f"delta = {claim.delta:g}" if claim.delta else "delta = 0"
    console.print(
        f"[bold]certified empirical epsilon[/] >= {eps_lb:.4g} at {at} (trial {best.index + 1}, "
        f"{best.num_samples:,} samples per dataset), with probability >= {1 - result.beta:g}: "
        f"the largest over {len(result.trials)} trial(s), beta per trial {result.split_summary}"
    )


@app.command("zoo", epilog=EXIT_HELP)
def zoo_cmd(
    name: Optional[str] = typer.Argument(None, metavar="NAME", help="Describe this entry in full (its bug, true "
                                         "guarantee, witness pairs and source) instead of listing them all."),
    json_out: bool = option("json", False),
) -> None:
    """List the built-in reference mechanisms, their claims and their bugs, family by family.

    Examples:

      dpaudit zoo                    # one line per mechanism, grouped by family

      dpaudit zoo non-dp-laplace-1   # one mechanism in full

      dpaudit zoo --json             # every field of every entry
    """
    from ..mechanisms import zoo

    items = zoo.entries()
    if name is not None:
        key = name.removeprefix("zoo:")
        known = [e.name for e in items]
        if key not in known:
            raise fail(_unknown_zoo_name(name, known))
        items = [zoo.get(key)]
    if json_out:
        data = [_zoo_json(e) for e in items]
        emit(json.dumps(data[0] if name is not None else data, indent=2))
        return
    if name is not None:
        _zoo_entry(items[0], out())
    else:
        _zoo_listing(zoo.families(), out())


def _zoo_json(e) -> dict:
    """An entry of ``dpaudit zoo --json``."""
    return {
        "name": e.name, "claim": e.claim_kind, "private": e.private,
        "exact_arithmetic_only": e.exact_arithmetic_only, "summary": e.summary,
        "bug": e.bug, "true_guarantee": e.true_guarantee, "neighbouring": e.relation,
        "witness_pairs": [list(p) for p in e.witness_pairs], "default_delta": e.default_delta,
        "default_alpha": e.default_alpha, "violates_for": None if e.violates_for is None else list(e.violates_for),
        "domain": e.domain.to_dict(), "min_size": e.min_size, "max_size": e.max_size,
        "source": e.source,
    }


_ZOO_CLAIM = {"pure": "eps-DP", "approx": "(eps, delta)-DP", "renyi": "(alpha, eps)-RDP"}
_ZOO_GAP = "  "
_ZOO_SUMMARY_WIDTH = 24  # narrower than this, a family's summaries go on a line of their own


def _zoo_private(e) -> list[str]:
    """The "private?" cell of a zoo entry, one markup string per line."""
    if e.exact_arithmetic_only:  # a textbook float64 sampler: the bit patterns leak (Mironov 2012)
        return (["[green]yes[/] in exact arithmetic", "[yellow]no[/] in float64"] if e.private
                else ["[red]no[/] in float64", "[green]yes[/] in exact arithmetic"])
    if e.private:
        return ["[green]yes[/]"]
    if e.violates_for is None:
        return ["[red]no[/]"]
    lo, hi = e.violates_for  # private outside this interval (dpaudit zoo NAME says so)
    return [f"[red]no[/] for eps < {hi:g}" if lo == 0 else f"[red]no[/] for eps in ({lo:g}, {hi:g})"]


def _clip_words(text: str, width: int, lines: int) -> list[str]:
    """``text`` wrapped at ``width`` between words, at most ``lines`` lines; a cut text ends in
    " …" after a whole word (no word or number is ever split)."""
    import textwrap

    rows = textwrap.wrap(text, max(width, 1), break_long_words=False, break_on_hyphens=False)
    if len(rows) <= lines:
        return rows
    rows = rows[:lines]
    while len(rows[-1]) + 2 > width and " " in rows[-1]:
        rows[-1] = rows[-1].rsplit(" ", 1)[0]
    rows[-1] += " …"
    return rows


def _zoo_listing(families: dict, out: Console) -> None:
    """``dpaudit zoo``: per family a heading and one line per entry (name, claim, private?, the
    start of its summary); two lines where the "private?" cell has two. A family whose columns
    leave the summary fewer than ``_ZOO_SUMMARY_WIDTH`` cells puts it on a line of its own."""
    from rich.text import Text

    total = sum(len(items) for items in families.values())
    out.print(Text.assemble(("dpaudit zoo", "bold"), f": {total} mechanisms in {len(families)} families; "
                            "dpaudit zoo NAME describes one"))
    for title, items in families.items():
        cells = [(e.name, _ZOO_CLAIM[e.claim_kind], [Text.from_markup(p) for p in _zoo_private(e)], e.summary)
                 for e in items]
        w_name = max(len("name"), *(len(c[0]) for c in cells))
        w_claim = max(len("claims"), *(len(c[1]) for c in cells))
        w_priv = max(len("private?"), *(p.cell_len for c in cells for p in c[2]))
        w_sum = out.width - w_name - w_claim - w_priv - 3 * len(_ZOO_GAP)
        beside = w_sum >= _ZOO_SUMMARY_WIDTH

        def line(name, claim, priv, summary=""):
            t = Text.assemble((name.ljust(w_name), "bold"), _ZOO_GAP, claim.ljust(w_claim), _ZOO_GAP)
            priv = priv.copy()
            priv.align("left", w_priv)
            t.append_text(priv)
            if summary:
                t.append(_ZOO_GAP + summary)
            t.rstrip()
            return t

        out.print()
        out.print(Text(title, style="bold underline"))
        head = line("name", "claims", Text("private?"), "what it does" if beside else "")
        head.stylize("dim")
        out.print(head)
        for name, claim, priv, summary in cells:
            texts = _clip_words(summary, w_sum, len(priv)) if beside else []
            for i in range(max(len(priv), len(texts))):
                out.print(line(name if i == 0 else "", claim if i == 0 else "",
                               priv[i] if i < len(priv) else Text(""), texts[i] if i < len(texts) else ""))
            if not beside:
                out.print("    " + _clip_words(summary, out.width - 4, 1)[0], highlight=False)


def _zoo_entry(e, out: Console) -> None:
    """``dpaudit zoo NAME``: every field of one entry, as key–value rows."""
    import numpy as np

    body = Table.grid(padding=(0, 2))
    body.add_column(style="bold", no_wrap=True)
    body.add_column(overflow="fold")
    claim = _ZOO_CLAIM[e.claim_kind]
    if e.default_delta is not None:
        claim += f", delta = {e.default_delta:g} unless --delta is given"
    if e.default_alpha is not None:
        claim += f", alpha = {e.default_alpha:g} unless --alpha is given"
    lo, hi = e.domain.lower, e.domain.upper
    if len(set(lo)) == 1 and len(set(hi)) == 1:
        domain = f"[{lo[0]:g}, {hi[0]:g}]" + (f"^{len(lo)}" if len(lo) > 1 else "")
    else:
        domain = " x ".join(f"[{a:g}, {b:g}]" for a, b in zip(lo, hi))
    body.add_row("family", escape(e.family or "-"))
    body.add_row("claims", claim)
    body.add_row("private?", "; ".join(_zoo_private(e)) + ("; [green]yes[/] beyond" if e.violates_for else ""))
    body.add_row("what it does", escape(e.summary))
    if e.bug is not None:
        body.add_row("[red]bug[/]", escape(e.bug))
    body.add_row("true guarantee", escape(e.true_guarantee))
    body.add_row("neighbours", escape(f"{e.relation}, records in {domain}, datasets of {e.min_size} to {e.max_size} "
                                      "records" + (f" ({e.min_size_reason})" if e.min_size_reason else "")))
    for i, (d0, d1) in enumerate(e.witness_pairs):
        body.add_row("" if i else "witness pair" + "s" * (len(e.witness_pairs) > 1), escape(f"{_fmt_dataset(np.asarray(d0, dtype=float))} vs "
                                                              f"{_fmt_dataset(np.asarray(d1, dtype=float))}"))
    body.add_row("source", escape(e.source or "-"))
    eps = next((x for x in (1.0, 0.1, 0.01) if e.private or e.violates(x)), 0.01)  # where a bug shows
    body.add_row("audit it", f"dpaudit test zoo:{e.name} --epsilon {eps:g}")
    out.print(Panel(body, title=f"zoo:{e.name}", title_align="left",
                    border_style="green" if e.private and not e.exact_arithmetic_only else "yellow" if e.private else "red"))


@app.command("version", epilog=EXIT_HELP)
def version_cmd() -> None:
    """Print the versions of dpaudit and the libraries it uses."""
    from .._version import library_versions

    for k, v in library_versions().items():
        emit(f"{k} {v}")


def _register_subcommands() -> None:
    from .account import register as register_accounting
    from .dpsgd import register as register_dpsgd
    from .library import register as register_library
    from .scores import register as register_scores

    register_scores(app)
    register_accounting(app)
    register_dpsgd(app)
    register_library(app)


_register_subcommands()

# `dpaudit test --help`: the options most audits need first, the rest under these headings
_HELP_PANELS = {
    "test": {
        "Choosing the pairs": ["search", "pairs", "domain", "min_size", "max_size"],
        "Sampling and statistics": ["first_batch", "batch_growth", "stages", "exhaustive", "estimate", "device",
                                    "adversarial"],
        "Resuming, and where it runs": ["storage", "resume", "study_name", "scheduler", "workers", "processes"],
    },
}
tidy_help(app, _HELP_PANELS)


def main() -> None:
    """Console-script entry point.

    An exception that escapes a command is a bug in dpaudit (bad input and failing mechanisms
    are reported with exit code 2 by the commands themselves): it exits with code 4, never with
    1 (which means "violation found"), with a one-line message, or the full traceback under
    ``--debug``.
    """
    if sys.argv[1:] == ["zoo"]:  # the bare listing takes no option: skip typer's parameter machinery (it
        from ..mechanisms import zoo  # imports pydantic, a third of the command's start time)

        _zoo_listing(zoo.families(), out())
        sys.exit(EXIT_OK)
    try:
        rc = app(standalone_mode=False)  # returns the exit code of typer.Exit
    except typer.Exit as exc:  # pragma: no cover - click turns Exit into a return value
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        console.print("[bold yellow]interrupted[/]")
        sys.exit(EXIT_INTERRUPTED)
    except (typer.Abort,):
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:  # the reader went away before a result was written (| head): no verdict, not 1
        from .options import _discard

        _discard(sys.stdout)
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:  # noqa: BLE001 - the last line of defence
        # usage errors (typer vendors click, so match its ClickException by name): click's message, exit 2
        if any(c.__name__ == "ClickException" for c in type(exc).__mro__):
            exc.show()
            sys.exit(getattr(exc, "exit_code", EXIT_BAD_INPUT))
        if debug():
            import traceback

            traceback.print_exc()
        console.print(f"[bold red]internal error:[/] {escape(type(exc).__name__ + ': ' + str(exc))}\n"
                      "This is a bug in dpaudit, not a finding about the mechanism (exit code 4). "
                      "Run again with --debug for the traceback and report it.", soft_wrap=not console.is_terminal,
                      highlight=False)
        sys.exit(EXIT_INTERNAL_ERROR)
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    main()

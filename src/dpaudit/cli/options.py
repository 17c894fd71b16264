"""What every ``dpaudit`` command shares: the exit codes, the console, the error path, tables that
fit the terminal (:func:`fit_table`, :func:`print_table`) and the command-line vocabulary (each
shared option defined once, with the same long name, short flag and help text in every command).

Exit codes (one table for every command; :data:`EXIT_CODES`):

====  ===========================================================================================
0     no violation found (``test``, ``audit-scores``, ``dpsgd``), accepted (``verify``), success
      (others)
1     violation found (``test``, ``dpsgd``; ``audit-scores`` when ``--epsilon`` is given and refuted);
      rejected (``verify``)
5     floating-point leak only (``test``): the float64 outputs' bit patterns reject the claim, the
      output distribution did not (a CI job that gates on distributional violations fails on 1 alone)
2     bad input (invalid options, unknown target, unreadable files, a failing mechanism)
3     inconclusive (``test``: every trial had too few samples for the tester's bound)
4     internal error of dpaudit (never 1, so a crash never reads as a finding; ``--debug``
      prints the traceback)
130   interrupted (Ctrl-C), or the output's reader went away before the result was written (a reader
      that goes away after it, ``| head -1``, leaves the command's own code)
====  ===========================================================================================
"""

from __future__ import annotations

import sys
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

__all__ = [
    "EXIT_BAD_INPUT", "EXIT_CODES", "EXIT_FLOAT_LEAK", "EXIT_HELP", "EXIT_INCONCLUSIVE", "EXIT_INTERNAL_ERROR", "EXIT_INTERRUPTED",
    "EXIT_OK", "EXIT_VIOLATION", "VOCABULARY", "VOCABULARY_HELP", "console", "deprecated", "emit", "fail", "fit_table",
    "out", "print_table",
]

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT, EXIT_INCONCLUSIVE, EXIT_INTERNAL_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130
EXIT_FLOAT_LEAK = 5  # = dpaudit.audit.result.EXIT_FLOAT_LEAK (not imported: the CLI starts without numpy)
EXIT_REJECTED = EXIT_VIOLATION  # verify: the estimate is rejected

EXIT_CODES = (
    (EXIT_OK, "no violation found (test, audit-scores, dpsgd), accepted (verify), success (account, zoo, version)"),
    (EXIT_VIOLATION, "violation found (test, dpsgd; audit-scores when --epsilon is given and refuted), rejected "
                     "(verify)"),
    (EXIT_BAD_INPUT, "bad input: invalid options, unknown target, unreadable file, a mechanism that fails"),
    (EXIT_INCONCLUSIVE, "inconclusive (test: every trial had too few samples for the tester's bound)"),
    (EXIT_INTERNAL_ERROR, "internal error of dpaudit, never a finding (run with --debug for the traceback)"),
    (EXIT_FLOAT_LEAK, "FLOATING-POINT LEAK only (test): the float64 bit patterns reject the claim, the output "
                      "distribution did not; a CI job gating on distributional violations fails on 1 alone"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C); a closed output pipe (| head) leaves the command's own code"),
)
EXIT_TABLE_HELP = "[bold]Exit codes[/]:\n\n" + "\n\n".join(f"{code}: {text}" for code, text in EXIT_CODES)
# each command's epilog: the codes in one paragraph (`dpaudit --help` holds the table, EXIT_TABLE_HELP)
EXIT_HELP = ("[bold]Exit codes[/]: 0 no violation found, accepted or done; 1 violation found or rejected; "
             "2 bad input; 3 inconclusive; 4 internal error (never a finding); 5 floating-point leak only; "
             "130 interrupted. "
             "dpaudit --help explains each.")

console = Console(stderr=True)  # messages, progress and errors; results go to stdout (:func:`out`)
_DEBUG = {"on": False}


def out() -> Console:
    """The console results are rendered on (stdout)."""
    return Console()


def _discard(stream) -> None:
    """Point the file descriptor under ``stream`` (default: stdout) at the null device, so that
    what is still written there, and the flush at exit, go nowhere instead of failing."""
    import os

    try:
        fd = (stream or sys.stdout).fileno()
    except (AttributeError, OSError, ValueError):
        try:
            fd = sys.stdout.fileno()
        except (AttributeError, OSError, ValueError):  # pragma: no cover - no real stdout
            return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def emit(text: str) -> None:
    """Write ``text`` and a newline on stdout (a command's JSON result, a version line).

    A reader that closed the pipe early (``dpaudit zoo --json | head -1``) is not an error: the
    rest of the output is dropped and the command goes on to exit with its own code (a verdict's
    code, 0 for listings), never 1 ("violation found") as a plain ``BrokenPipeError`` would give."""
    try:
        typer.echo(text)
    except BrokenPipeError:
        _discard(sys.stdout)


def _closed_pipe_is_not_a_finding() -> None:
    """Make every rich console (ours and the one typer prints ``--help`` with) drop its output
    when the reader of its stream has gone away (``| head -1``), instead of rich's default of
    raising ``SystemExit(1)``, which is this command line's "violation found" code. The command
    then exits with its own code. Installed once, for the command line only."""
    from rich.console import Console as _Console

    if getattr(_Console.on_broken_pipe, "_dpaudit", False):
        return

    def on_broken_pipe(self) -> None:
        self.quiet = True
        _discard(getattr(self, "file", None))

    on_broken_pipe._dpaudit = True
    _Console.on_broken_pipe = on_broken_pipe


_closed_pipe_is_not_a_finding()


def fit_table(table: Table, width: int, console: Optional[Console] = None) -> bool:
    """Size the columns of ``table`` so that it fits in ``width`` cells without cutting a cell.

    Rich shrinks a table wider than the terminal by cutting cells short ("Clopper–Pear…",
    "-0.0…"). Here a column made with ``no_wrap=True`` (numbers) keeps each of its cells whole on
    one line, the other columns wrap between words, never inside one, headers included, and the
    width left over goes to the wrapping columns in proportion to what they lack for one line per
    cell. A table that fits as it is is left alone.

    Parameters
    ----------
    table : rich.table.Table
        The table; its columns' ``width`` (and ``no_wrap``) are set when it has to wrap.
    width : int
        Cells available (the console's width).
    console : rich.console.Console, optional
        Console the cells are measured on (markup, emoji). Default: a new one of ``width``.

    Returns
    -------
    bool
        True when the table fits in ``width``; False when even its longest words and numbers do
        not fit side by side: print another layout then (:func:`print_table` prints one
        key–value block per row).
    """
    from rich.measure import Measurement

    console = Console(width=max(int(width), 1)) if console is None else console
    options = console.options.update_width(10_000)
    n = len(table.columns)
    _, pad_right, _, pad_left = table.padding
    pads, need, full = [], [], []
    for i, col in enumerate(table.columns):
        pads.append((pad_left if table.pad_edge or i > 0 else 0) + (pad_right if table.pad_edge or i < n - 1 else 0))
        head = Measurement.get(console, options, col.header) if table.show_header else Measurement(0, 0)
        body = [Measurement.get(console, options, cell) for cell in col.cells]
        whole = max([m.maximum for m in body], default=0)
        need.append(max(whole if col.no_wrap else max([m.minimum for m in body], default=0), head.minimum))
        most = max(whole, head.maximum)
        full.append(max(need[-1], most if col.max_width is None else min(most, col.max_width)))
    room = int(width) - sum(pads) - ((2 if table.show_edge else 0) + n - 1 if table.box else 0)
    if sum(full) <= room:
        return True
    if sum(need) > room:
        return False
    spare, lack = room - sum(need), [f - m for f, m in zip(full, need)]
    widths = [m + spare * gap // sum(lack) for m, gap in zip(need, lack)]
    for i in sorted(range(n), key=lambda j: widths[j] - full[j]):  # the remainder, to the columns lacking most
        if sum(widths) < room and widths[i] < full[i]:
            widths[i] += 1
    for col, w in zip(table.columns, widths):
        col.width, col.no_wrap = w, False  # each no_wrap cell fits its width; the header may wrap
    return True


def print_table(console: Console, table: Table) -> None:
    """Print ``table`` on ``console`` fitted to its width (:func:`fit_table`); where it cannot
    fit, as one key–value block per row instead: the row's first cell as a heading, then each
    other column's header and cell, so that no number is ever cut."""
    if fit_table(table, console.width, console):
        console.print(table)
        return
    if table.title:
        console.print(table.title, style="bold", highlight=False)
    head, *rest = table.columns
    for r, first in enumerate(head.cells):
        console.print(first, style="bold")
        block = Table.grid(padding=(0, 2), pad_edge=True)
        block.add_column()
        block.add_column(overflow="fold")
        for col in rest:
            cells = list(col.cells)
            block.add_row(col.header, cells[r] if r < len(cells) else "")
        console.print(block)
    if table.caption:
        console.print(table.caption, style="dim", highlight=False)


def set_debug(on: bool) -> None:
    """``--debug``: print tracebacks with errors."""
    _DEBUG["on"] = bool(on)


def debug() -> bool:
    """Whether ``--debug`` was given."""
    return _DEBUG["on"]


def fail(message: str, code: int = EXIT_BAD_INPUT) -> typer.Exit:
    """The one error path of the commands: print ``error: message`` on stderr (and, under
    ``--debug``, the traceback of the exception being handled) and return the ``typer.Exit`` to
    raise, with exit code ``code`` (default 2, bad input)."""
    # a terminal gets the line wrapped between words (a terminal's own wrap cuts "non-dp-lapl|ace-2");
    # a log or a pipe gets it whole, one line to grep
    console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=not console.is_terminal, highlight=False)
    if _DEBUG["on"]:
        import traceback

        exc = sys.exc_info()[1]
        if exc is not None:
            console.print("".join(traceback.format_exception(exc)), highlight=False, markup=False, soft_wrap=True)
    return typer.Exit(code)


def deprecated(value: Any, old: str, new: str) -> Any:
    """Print a one-line deprecation note on stderr when a deprecated option ``old`` was given
    (``value`` is not None); returns ``value``."""
    if value is not None:
        console.print(f"[yellow]note:[/] {old} is deprecated; use {new}", highlight=False, soft_wrap=True)
    return value


# ---------------------------------------------------------------------------------- vocabulary --
# (long name, short flag or "", help): the same idea has the same name, flag and help everywhere.
VOCABULARY = {
    "epsilon": ("--epsilon", "-e", "Epsilon, in nats"),
    "delta": ("--delta", "-d", "Delta"),
    "alpha": ("--alpha", "-a", "Rényi order alpha > 1"),
    "beta": ("--beta", "-b", "Failure probability: the chance that the bound or verdict is wrong"),
    "samples": ("--samples", "-n", "Number of samples"),
    "stages": ("--stages", "", "Staged testers' sample sizes per dataset: auto, off, or e.g. "
                               "2000,8000,32000; a trial stops at the first that finds a violation"),
    "trials": ("--trials", "-t", "Trial budget: at most this many neighbouring pairs are tested"),
    "neighbouring": ("--neighbouring", "", "Neighbouring relation: add-remove, one record more or less, or "
                                           "replace, one record changed"),
    "seed": ("--seed", "", "Seed for a reproducible run, recorded in the output"),
    "json": ("--json", "", "Print the result as JSON on stdout instead of tables"),
    "quiet": ("--quiet", "", "No progress output"),
    "report": ("--report", "-r", "Write a report: .json, .html (with plots) or .md; docs/reports.md"),
    "plot": ("--plot", "", "Write the plot to this file: .png, .pdf or .svg"),
    "device": ("--device", "", "Where torch computations run: cpu, cuda, cuda:1, mps"),
    "method": ("--method", "-m", "Method"),
    "noise_multiplier": ("--noise-multiplier", "-z", "Noise multiplier sigma: noise std / clipping norm"),
    "sampling_rate": ("--sampling-rate", "-q", "Poisson sampling rate q in (0, 1]; 1 = full batch"),
    "steps": ("--steps", "-k", "Number of steps k"),
    "bins": ("--bins", "", "Number of histogram bins, or 'scott' for Scott's rule"),
    "processes": ("--processes", "", "Processes that draw a per-call mechanism's outputs: N, 'auto' (one per core "
                                     "where a timing shows it pays) or 1; results are the same for any value"),
}
VOCABULARY_HELP = "[bold]Options shared by the commands[/] (same meaning everywhere):\n\n" + "\n\n".join(
    f"{long}{', ' + short if short else ''}: {escape(text)}" for long, short, text in VOCABULARY.values()
)


def option(idea: str, default: Any = None, note: str = "", **kw: Any) -> Any:
    """The ``typer.Option`` of a shared idea (a key of :data:`VOCABULARY`): its long name, short
    flag and help text, followed by ``note`` in parentheses (what it means in this command, e.g.
    its default).

    Raises
    ------
    KeyError
        For an idea that is not in :data:`VOCABULARY`.
    """
    long, short, text = VOCABULARY[idea]
    return _option(default, long, short, text + (f" ({note})" if note else "") + ".", **kw)


def _flags_without_placeholder() -> None:
    """Show no ``<bool>`` placeholder after flags (``--json``, ``--help``) in ``--help``.

    typer's rich help (0.2x) prints each option's type after its name, a flag's as ``<bool>``,
    which reads as if the flag took a value; an option with a ``metavar`` shows that instead, but
    ``--help`` itself has none. Wrapped once; typer versions without the method are left alone.
    """
    try:
        from typer.core import TyperOption
    except ImportError:  # pragma: no cover
        return
    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "_dpaudit_flags", False):
        return

    def display_type_rich(self, ctx):
        if getattr(self, "is_flag", False) and not getattr(self, "count", False) and self.metavar is None:
            return None
        return shown(self, ctx)

    display_type_rich._dpaudit_flags = True
    TyperOption.display_type_rich = display_type_rich


_flags_without_placeholder()


def reflow(text: str) -> str:
    """A help text as typer's rich help should get it: each prose paragraph on one line (the
    terminal wraps it at its width, with no orphan fragments where the source broke its lines);
    a paragraph holding a command line (a line that starts with ``dpaudit`` or ``#``) keeps its
    lines, one example per line."""
    paragraphs = []
    for para in text.strip().split("\n\n"):
        lines = [line.strip() for line in para.strip().splitlines()]
        if any(line.startswith(("dpaudit ", "# ")) for line in lines):
            paragraphs.append("\n".join(lines))
        else:
            paragraphs.append(" ".join(lines))
    return "\n\n".join(paragraphs)


CHOICES_SHOWN = 14  # a choice list longer than this shows as the option's name in --help (its help lists them)


def tidy_help(app: typer.Typer, panels: Optional[dict] = None) -> None:
    """Lay out the ``--help`` of every command of ``app`` for an 80-column terminal.

    * each command's description is reflowed (:func:`reflow`);
    * an option whose choices (an ``Enum``) would show as a long ``<a|b|c|...>`` shows as its
      name in capitals instead (``--tester TESTER``), so that no choice list is split across
      lines and the help column keeps its width; its help text names the choices;
    * ``panels`` maps a command name to ``{panel title: [parameter names]}``: those options are
      listed under that title (typer's ``rich_help_panel``), the rarely used ones after the rest.

    Changes the commands' ``OptionInfo`` objects in place; call once, after every command is
    registered."""
    import enum
    import inspect
    import typing

    for info in app.registered_commands:
        callback = info.callback
        doc = info.help or inspect.getdoc(callback)
        if doc:
            info.help = reflow(doc)
        name = info.name or callback.__name__
        panel_of = {param: title for title, params in (panels or {}).get(name, {}).items() for param in params}
        try:
            hints = typing.get_type_hints(callback)
        except Exception:  # noqa: BLE001 - an unresolvable hint: leave that command's metavars alone
            hints = {}
        for pname, param in inspect.signature(callback).parameters.items():
            default = param.default
            if not hasattr(default, "rich_help_panel"):
                continue
            if pname in panel_of:
                default.rich_help_panel = panel_of[pname]
            kinds = [hints.get(pname)] + list(typing.get_args(hints.get(pname)))
            choices = next((k for k in kinds if isinstance(k, type) and issubclass(k, enum.Enum)), None)
            if choices is not None and default.metavar is None and getattr(default, "param_decls", None):
                if len("|".join(str(m.value) for m in choices)) > CHOICES_SHOWN:
                    long = max(default.param_decls, key=len).lstrip("-").replace("-", "_").upper()
                    default.metavar = long if len(long) <= 8 else "NAME"


def alias(old: str, new: str, short: Optional[str] = None) -> Any:
    """A hidden ``typer.Option`` keeping a deprecated flag ``old`` working (see :func:`deprecated`)."""
    return _option(None, old, short, f"Deprecated: use {new}.", hidden=True)


def _option(default: Any, long: str, short: Optional[str], help: str, **kw: Any) -> Any:
    return typer.Option(default, *((long, short) if short else (long,)), help=help, **kw)


def check_plot_suffix(path) -> None:
    """``--plot`` must name a .png, .pdf or .svg file (``ValueError`` naming it otherwise).

    Raises
    ------
    ValueError
        If the path does not end in .png, .pdf or .svg.
    """
    if path is not None and path.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise ValueError(f"--plot must name a .png, .pdf or .svg file, got {str(path)!r}")


def check_report_suffix(path) -> None:
    """``--report`` must end in .json, .html/.htm or .md (``ValueError`` naming it otherwise)."""
    if path is not None:
        from ..report import report_format

        report_format(path)


def write_report(ctx, path, data: dict, *, seed=None, versions: Optional[dict] = None, extra: Optional[dict] = None,
                 **render_kw: Any) -> None:
    """``--report``: write ``data`` (a command's JSON result) as JSON, or render it as an HTML or
    Markdown report (:func:`dpaudit.report.render_result`) with ``extra`` entries (plot data) added,
    then say ``report written: PATH`` on stderr.

    Raises ``typer.Exit`` (bad input) when the file cannot be written."""
    import json

    from ..report import render_result, report_format, reproduce_command

    try:
        if report_format(path) == "json":
            path.write_text(json.dumps(data, indent=2))
        else:
            if versions is None:
                from .._version import library_versions

                versions = library_versions()
            render_result({**data, **(extra() if callable(extra) else (extra or {}))}, path,
                          command=reproduce_command(ctx, {"seed": seed}), versions=versions, **render_kw)
    except OSError as exc:
        raise fail(f"--report: cannot write {str(path)!r}: {exc}")
    console.print(f"report written: {escape(str(path))}", highlight=False, soft_wrap=True)


def int_or_word(spec: str, word: str, flag: str) -> Any:
    """Parse an option that takes a positive integer or one keyword (``--bins scott``,
    ``--workers auto``, ``--processes auto``): returns ``word`` or the integer; ``ValueError`` naming ``flag`` and the
    bad value otherwise.

    Raises
    ------
    ValueError
        If ``spec`` is neither a positive integer nor the word.
    """
    text = str(spec).strip().lower()
    if text == word:
        return word
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"{flag} must be a positive integer or '{word}', got {spec!r}") from None
    if n < 1:
        raise ValueError(f"{flag} must be a positive integer or '{word}', got {spec!r}")
    return n

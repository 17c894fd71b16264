"""Reports a reviewer reads: ``--report out.html`` / ``out.md`` of ``dpaudit test``,
``dpaudit audit-scores`` and ``dpaudit account`` (``out.json`` stays the machine format).

A report is rendered from the command's JSON result: :mod:`.builders` turns the result into a
format-free :class:`~.document.Document` (verdict, claim, pair, plots, tables, settings, seed,
versions, the command that reproduces it), which :mod:`.html` renders as one self-contained page
and :mod:`.markdown` as Markdown with PNG files next to it. See docs/reports.md.

``python -m dpaudit.report RESULT.json OUT.html`` renders a saved JSON result again.
"""

from __future__ import annotations

import json
import shlex
from enum import Enum
from pathlib import Path

from .document import Document

__all__ = ["FORMATS", "Document", "render_result", "report_format", "reproduce_command", "write_document"]

FORMATS = {".json": "json", ".html": "html", ".htm": "html", ".md": "markdown"}


def report_format(path) -> str:
    """The report format named by a file's suffix.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    str
        ``"json"``, ``"html"`` or ``"markdown"``.

    Raises
    ------
    ValueError
        For any other suffix, naming it and the known ones.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(
            f"--report {str(path)!r}: unknown report suffix {suffix or '(none)'!r}; use .json (machine-readable), "
            ".html (self-contained page) or .md (Markdown with PNG plots next to it)"
        )
    return FORMATS[suffix]


def write_document(doc: Document, path) -> list:
    """Write ``doc`` (a :class:`Document`) to ``path`` (str or Path) in the format its suffix
    names: ``.html``/``.htm`` (:func:`.html.write_html`) or ``.md`` (:func:`.markdown.write_markdown`).

    Returns the files written (list of Path); raises ``ValueError`` for any other suffix.
    """
    fmt = report_format(path)
    if fmt == "html":
        from .html import write_html

        return write_html(doc, path)
    if fmt == "markdown":
        from .markdown import write_markdown

        return write_markdown(doc, path)
    raise ValueError(f"{str(path)!r}: a rendered report must end in .html or .md, got {Path(path).suffix!r}")


def _kind_of(data: dict) -> str:
    if data.get("command") == "account":
        return "account"
    if "histogram" in data and "baselines" in data:
        return "audit-scores"
    if data.get("method") == "one-run":
        return "one-run"
    if "trials" in data and "claim" in data:
        return "test"
    raise ValueError("not a dpaudit JSON result of test, audit-scores or account (no 'trials', 'histogram' or 'command' entry)")


def render_result(data: dict, path, *, command: str | None = None, samples=None, samples_note: str = "",
                  versions: dict | None = None) -> list:
    """Render a command's JSON result as the report at ``path`` (format from the suffix).

    Parameters
    ----------
    data : dict
        The JSON result of ``dpaudit test``, ``audit-scores`` or ``account`` (which one is read
        from its keys).
    path : str or Path
        ``.html``/``.htm`` or ``.md``.
    command : str, optional
        The command line that reproduces the result.
    samples : tuple (x0, x1), optional
        ``dpaudit test`` only: outputs at the strongest pair to plot.
    samples_note : str
        How ``samples`` were drawn, or why there are none.
    versions : dict, optional
        Library versions (``dpaudit test`` results carry their own).

    Returns the files written (list of Path), as :func:`write_document`; raises ``ValueError``
    for an unknown suffix or a dict that is no dpaudit result.
    """
    from . import builders

    report_format(path)
    kind = _kind_of(data)
    if kind == "test":
        doc = builders.audit_document(data, command=command, samples=samples, samples_note=samples_note)
    elif kind == "audit-scores":
        doc = builders.scores_document(data, command=command, versions=versions)
    elif kind == "one-run":
        doc = builders.one_run_document(data, command=command, versions=versions)
    else:
        doc = builders.account_document(data, command=command, versions=versions)
    return write_document(doc, path)


def reproduce_command(ctx, extra: dict | None = None) -> str:
    """The shell command that re-runs a Click/Typer command with the same parameters.

    Arguments are given as typed (an optional one left out is omitted); options only when given on the command line (or named in
    ``extra``, e.g. the seed that was drawn), with their first long name.

    Parameters
    ----------
    ctx : click.Context
        The command's context.
    extra : dict, optional
        Parameter name to value, overriding or adding to what was given (e.g. ``{"seed": 7}``).

    Returns
    -------
    str
        ``dpaudit <command> ...``, quoted for a POSIX shell.
    """
    extra = dict(extra or {})
    words = ["dpaudit", ctx.info_name or ctx.command.name]
    params = ctx.params
    opts = []
    for p in ctx.command.params:
        name = p.name
        if getattr(p, "param_type_name", "") == "argument":
            value = params.get(name)
            words.extend(str(v) for v in (value if isinstance(value, (list, tuple)) else [value]) if v is not None)
            continue
        if name in extra:
            value = extra.pop(name)
        else:
            try:
                source = ctx.get_parameter_source(name)
            except Exception:  # pragma: no cover - old click
                source = None
            if source is None or getattr(source, "name", "") in ("DEFAULT", "DEFAULT_MAP"):
                continue
            value = params.get(name)
        if value is None:
            continue
        longs = [o for o in p.opts if o.startswith("--")] or list(p.opts)
        flag = longs[0]
        if getattr(p, "is_flag", False):
            if value:
                opts.append(flag)
            elif p.secondary_opts:
                opts.append(p.secondary_opts[0])
            continue
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            opts.extend([flag, str(v.value if isinstance(v, Enum) else v)])
    return shlex.join(words + opts)


def _main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m dpaudit.report", description="Render a saved dpaudit JSON result as a report.")
    parser.add_argument("result", help="JSON result of dpaudit test, audit-scores or account")
    parser.add_argument("out", help="report file: .html or .md")
    args = parser.parse_args(argv)
    try:
        data = json.loads(Path(args.result).read_text())
        render_result(data, args.out, samples_note="rendered from the saved JSON, which holds no outputs")
    except (OSError, ValueError) as exc:
        print(f"error: {exc}")
        return 2
    print(f"report written to {args.out}")
    return 0

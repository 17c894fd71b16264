"""The HTML report: one self-contained file (inline CSS, plots as base64 PNG data URIs, no scripts,
nothing fetched from the network)."""

from __future__ import annotations

import base64
from pathlib import Path

from .document import Document

__all__ = ["render_html", "write_html"]


def _environment():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("dpaudit.report", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["b64"] = lambda data: base64.b64encode(data).decode("ascii")
    return env


def render_html(doc: Document) -> str:
    """Render a report as one HTML page.

    Parameters
    ----------
    doc : Document

    Returns
    -------
    str
        The page; every string of the document is HTML-escaped.
    """
    return _environment().get_template("report.html.j2").render(doc=doc)


def write_html(doc: Document, path) -> list:
    """Write the HTML report to ``path``.

    Parameters
    ----------
    doc : Document
    path : str or Path

    Returns
    -------
    list of Path
        The files written (just ``path``).
    """
    path = Path(path)
    path.write_text(render_html(doc), encoding="utf-8")
    return [path]

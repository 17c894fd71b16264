"""The HTML report: one self-contained file (inline CSS, plots as base64 PNG data URIs, no scripts,
nothing fetched from the network)."""

from __future__ import annotations

import base64
from pathlib import Path

from .document import Document, template_environment

__all__ = ["render_html", "write_html"]


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
    env = template_environment(autoescape=True, b64=lambda data: base64.b64encode(data).decode("ascii"))
    return env.get_template("report.html.j2").render(doc=doc)


def write_html(doc: Document, path) -> list:
    """Write the HTML report of ``doc`` to ``path`` (str or Path); returns ``[path]``, the one
    file written."""
    path = Path(path)
    path.write_text(render_html(doc), encoding="utf-8")
    return [path]

"""The HTML report: one self-contained file (inline CSS, plots as base64 PNG data URIs, no scripts,
nothing fetched from the network)."""

from __future__ import annotations

import base64
import re
from pathlib import Path

from .document import Document, template_environment

__all__ = ["render_html", "tokens", "write_html"]

_SPACE = re.compile(r"(\s+)")
# a browser may break a token after a hyphen, a dash, a slash or a bar (UAX #14 break opportunities;
# digits, '.', ',', ':', '_' and 'e-05' hold together on their own)
_BREAKABLE = re.compile(r"[-\u2010-\u2015/|\\?!}>]\S")


def tokens(text) -> "markupsafe.Markup":  # noqa: F821 - jinja2's dependency
    """``text`` HTML-escaped, with every token a browser could break inside (one holding a hyphen, a
    dash, a slash or a bar before more characters: ``non-dp-laplace-1``, ``zoo:dp-laplace``,
    ``P||Q``, ``-[2^0, 2^1)``) in a ``<span class="t">`` that the page keeps on one line
    (``white-space: nowrap``). Numbers (``2.38516``, ``1e-05``) and identifiers without such a
    character (``composition.num_steps``) never break once the page drops ``overflow-wrap:
    anywhere``, which broke them anywhere (issue 44: "mecha/nism", "2.3851/6" at 390 px). Text then
    wraps between words only; a token wider than its box makes the box scroll (tables, code)
    instead of breaking.

    Parameters
    ----------
    text : str
        Any text of the report (a cell, a paragraph, a title).

    Returns
    -------
    markupsafe.Markup
        Safe HTML.
    """
    from markupsafe import Markup, escape

    out = []
    for piece in _SPACE.split(str(text)):
        if piece and not piece.isspace() and _BREAKABLE.search(piece):
            out.append(f'<span class="t">{escape(piece)}</span>')
        else:
            out.append(str(escape(piece)))
    return Markup("".join(out))


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
    env = template_environment(autoescape=True, b64=lambda data: base64.b64encode(data).decode("ascii"), t=tokens)
    return env.get_template("report.html.j2").render(doc=doc)


def write_html(doc: Document, path) -> list:
    """Write the HTML report of ``doc`` to ``path`` (str or Path); returns ``[path]``, the one
    file written."""
    path = Path(path)
    path.write_text(render_html(doc), encoding="utf-8")
    return [path]

"""The format-free content of a report: a title, a one-sentence verdict and sections of blocks.

Every renderer (:mod:`dpaudit.report.html`, :mod:`dpaudit.report.markdown`) walks the same
:class:`Document`, so the HTML and the Markdown report say the same things. A document holds only
plain values (strings, numbers, PNG bytes), built from a command's JSON result by
:mod:`dpaudit.report.builders`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Code", "Document", "Plot", "Section", "Table", "Text", "template_environment"]


def template_environment(*, autoescape: bool, **filters):
    """The Jinja environment of the renderers: templates from ``dpaudit/report/templates``,
    HTML-escaping when ``autoescape``, an error on any undefined name, and ``filters`` (name to
    function) added."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("dpaudit.report", "templates"),
        autoescape=autoescape,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(filters)
    return env


class _Block:
    """A block of a section; ``kind`` (the lower-case class name) tells renderers which it is."""

    @property
    def kind(self) -> str:
        """``"text"``, ``"code"``, ``"table"`` or ``"plot"``."""
        return type(self).__name__.lower()


@dataclass(frozen=True)
class Text(_Block):
    """A paragraph of plain ``text`` (renderers escape it)."""

    text: str


@dataclass(frozen=True)
class Code(_Block):
    """A preformatted block (a command, a JSON document): its ``text``, the ``language`` of a
    Markdown fence (``"sh"``, ``"json"``), and whether HTML shows it ``collapsed`` inside a
    closed ``<details>`` element labelled ``summary``."""

    text: str
    language: str = ""
    collapsed: bool = False
    summary: str = ""


@dataclass(frozen=True)
class Table(_Block):
    """A table of strings: ``header`` (column names; empty for a two-column key/value table
    without a header row), ``rows`` (tuples of str), a ``caption``, the index of a row to
    ``highlight`` (e.g. the violating trial) or None, and whether it is shown ``collapsed``
    inside a closed ``<details>`` element labelled ``summary`` (HTML and Markdown alike)."""

    header: tuple
    rows: tuple
    caption: str = ""
    highlight: int | None = None
    collapsed: bool = False
    summary: str = ""


@dataclass(frozen=True)
class Plot(_Block):
    """A figure: ``png`` bytes, a ``name`` (file-name stem of letters, digits and dashes:
    Markdown writes ``<name>.png``), ``alt`` text and a ``caption`` saying what is plotted."""

    name: str
    png: bytes
    alt: str
    caption: str = ""


@dataclass(frozen=True)
class Section:
    """A ``heading`` over ``blocks`` (a tuple of Text, Code, Table or Plot); ``anchor`` is the
    section's identifier (HTML ``id``)."""

    heading: str
    blocks: tuple
    anchor: str = ""


@dataclass(frozen=True)
class Document:
    """A whole report: ``title``, the ``verdict`` in one sentence, its ``status``
    (``"violation"``, ``"pass"``, ``"inconclusive"`` or ``"info"``: colours the verdict), the
    ``sections`` (tuple of Section) and a ``footer``."""

    title: str
    verdict: str
    status: str
    sections: tuple = field(default_factory=tuple)
    footer: str = ""

    def plots(self) -> list:
        """Every :class:`Plot` of the document, in order (list of Plot)."""
        return [b for s in self.sections for b in s.blocks if isinstance(b, Plot)]

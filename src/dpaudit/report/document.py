"""The format-free content of a report: a title, a one-sentence verdict and sections of blocks.

Every renderer (:mod:`dpaudit.report.html`, :mod:`dpaudit.report.markdown`) walks the same
:class:`Document`, so the HTML and the Markdown report say the same things. A document holds only
plain values (strings, numbers, PNG bytes), built from a command's JSON result by
:mod:`dpaudit.report.builders`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Code", "Document", "Plot", "Section", "Table", "Text"]


@dataclass(frozen=True)
class Text:
    """A paragraph of plain text (renderers escape it).

    Attributes
    ----------
    text : str
    """

    text: str
    kind: str = "text"


@dataclass(frozen=True)
class Code:
    """A preformatted block (a command, a JSON document).

    Attributes
    ----------
    text : str
    language : str
        Syntax name for Markdown fences (``"sh"``, ``"json"``).
    collapsed : bool
        HTML: shown inside a closed ``<details>`` element.
    summary : str
        Label of the collapsed block.
    """

    text: str
    language: str = ""
    collapsed: bool = False
    summary: str = ""
    kind: str = "code"


@dataclass(frozen=True)
class Table:
    """A table of strings.

    Attributes
    ----------
    header : tuple of str
        Column names; empty for a two-column key/value table without a header row.
    rows : tuple of tuple of str
    caption : str
    highlight : int or None
        Index of a row to emphasise (e.g. the violating trial).
    """

    header: tuple
    rows: tuple
    caption: str = ""
    highlight: int | None = None
    kind: str = "table"


@dataclass(frozen=True)
class Plot:
    """A figure as PNG bytes.

    Attributes
    ----------
    name : str
        File-name stem (Markdown writes ``<name>.png``); letters, digits and dashes.
    png : bytes
    alt : str
        Alternative text.
    caption : str
        What is plotted, in words.
    """

    name: str
    png: bytes
    alt: str
    caption: str = ""
    kind: str = "plot"


@dataclass(frozen=True)
class Section:
    """A headed list of blocks.

    Attributes
    ----------
    heading : str
    blocks : tuple of Text, Code, Table or Plot
    anchor : str
        Identifier of the section (HTML ``id``).
    """

    heading: str
    blocks: tuple
    anchor: str = ""


@dataclass(frozen=True)
class Document:
    """A whole report.

    Attributes
    ----------
    title : str
    verdict : str
        The verdict in one sentence.
    status : str
        ``"violation"``, ``"pass"``, ``"inconclusive"`` or ``"info"`` (colours the verdict).
    sections : tuple of Section
    footer : str
    """

    title: str
    verdict: str
    status: str
    sections: tuple = field(default_factory=tuple)
    footer: str = ""

    def plots(self) -> list:
        """Every :class:`Plot` of the document, in order.

        Returns
        -------
        list of Plot
        """
        return [b for s in self.sections for b in s.blocks if isinstance(b, Plot)]

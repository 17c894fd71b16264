"""The Markdown report, readable on GitHub.

Plots are written as PNG files in a folder next to the ``.md`` file, ``<stem>_files/<plot>.png``,
and referenced by relative links: GitHub does not show ``data:`` image URIs in Markdown, and
relative links keep working when the two are committed or copied together.
"""

from __future__ import annotations

from pathlib import Path

from .document import Document, Table, template_environment

__all__ = ["render_markdown", "write_markdown"]

_EMOJI = {"violation": "\u274c", "pass": "\u2705", "inconclusive": "\u26a0\ufe0f", "info": "\u2139\ufe0f"}


def _md(text) -> str:
    """Escape the characters that Markdown would read as markup in running text."""
    out = str(text)
    for ch in ("\\", "*", "_", "`", "[", "]", "<", ">", "|", "#"):
        out = out.replace(ch, "\\" + ch)
    return out.replace("\n", " ")


def _cell(text) -> str:
    return _md(text).strip() or " "


def _md_table(t: Table) -> str:
    lines = []
    if t.header:
        lines.append("| " + " | ".join(_cell(h) for h in t.header) + " |")
        lines.append("|" + " --- |" * len(t.header))
    else:
        lines.append("| | |")
        lines.append("| --- | --- |")
    for i, row in enumerate(t.rows):
        cells = [_cell(c) for c in row]
        if not t.header:
            cells[0] = f"**{cells[0]}**"
        if t.highlight == i:
            cells = [f"**{c}**" if not c.startswith("**") else c for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    if t.caption:
        lines.append("")
        lines.append(f"*{_md(t.caption)}*")
    return "\n".join(lines)


def _md_block(b, plot_paths: dict) -> str:
    if b.kind == "text":
        return _md(b.text)
    if b.kind == "table":
        if b.collapsed:
            return f"<details><summary>{_md(b.summary)}</summary>\n\n{_md_table(b)}\n\n</details>"
        return _md_table(b)
    if b.kind == "plot":
        return f"![{_md(b.alt)}]({plot_paths[b.name]})\n\n*{_md(b.caption)}*" if b.caption else f"![{_md(b.alt)}]({plot_paths[b.name]})"
    fence = "````" if "```" in b.text else "```"
    block = f"{fence}{b.language}\n{b.text}\n{fence}"
    if b.collapsed:
        return f"<details><summary>{_md(b.summary)}</summary>\n\n{block}\n\n</details>"
    return block


def plot_folder(path) -> Path:
    """The folder (Path) holding the plots of the Markdown report at ``path`` (str or Path):
    ``<stem>_files``."""
    path = Path(path)
    return path.with_name(path.stem + "_files")


def render_markdown(doc: Document, plot_dir: str = "report_files") -> str:
    """Render a report as Markdown.

    Parameters
    ----------
    doc : Document
    plot_dir : str
        Relative folder the plots are linked from (``<plot_dir>/<name>.png``).

    Returns
    -------
    str
    """
    paths = {p.name: f"{plot_dir}/{p.name}.png" for p in doc.plots()}
    text = template_environment(autoescape=False, md=_md, cell=_cell).get_template("report.md.j2").render(
        doc=doc, emoji=_EMOJI.get(doc.status, ""), md_block=lambda b: _md_block(b, paths))
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text


def write_markdown(doc: Document, path) -> list:
    """Write the Markdown report of ``doc`` to ``path`` (str or Path) and its plots to
    ``<stem>_files/``; returns every file written (list of Path), the ``.md`` first."""
    path = Path(path)
    folder = plot_folder(path)
    written = [path]
    plots = doc.plots()
    if plots:
        folder.mkdir(parents=True, exist_ok=True)
        for p in plots:
            f = folder / f"{p.name}.png"
            f.write_bytes(p.png)
            written.append(f)
    path.write_text(render_markdown(doc, plot_dir=folder.name), encoding="utf-8")
    return written

"""``--help`` of every command at 80 columns (issue 38, item 2): no orphan fragments where the source
broke a paragraph's lines, no example command split across lines (a copy-paste would lose its
end), no ``<a|b|...>`` choice list split, and ``dpaudit test --help`` under 120 lines with the
rarely used options grouped under their own headings."""

from __future__ import annotations

import inspect
import re

import pytest
from typer.testing import CliRunner

from dpaudit.cli import app

runner = CliRunner()
COMMANDS = [[]] + [[c.name] for c in app.registered_commands if not c.hidden]
PROSE = 60  # at 80 columns a wrapped prose line is at least this long, unless it ends its paragraph


def _help(args):
    res = runner.invoke(app, [*args, "--help"], catch_exceptions=False, env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    return res.output


def _prose_outside_panels(text: str) -> list[list[str]]:
    """Paragraphs (runs of non-empty lines) of the description and epilog, outside the boxes."""
    paras, cur, boxed = [], [], False
    for line in text.splitlines():
        if line.startswith("╭"):
            boxed = True
        if boxed or not line.strip():
            if cur:
                paras.append(cur)
            cur = []
        else:
            cur.append(line.rstrip())
        if line.startswith("╰"):
            boxed = False
    return paras + ([cur] if cur else [])


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a) or "dpaudit")
def test_help_reads_at_80_columns(args):
    text = _help(args)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    # a choice list is whole on its line: no "<...|..." left open at a line's end
    for line in lines:
        assert not re.search(r"<[\w|-]*\|[\w|-]*\s*│?\s*$", line), line
        assert not re.match(r"^[│\s]*[\w-]*\|?[\w-]*>", line.strip(" │")), line
    # prose paragraphs wrap at the width: only a paragraph's last line may be short
    for para in _prose_outside_panels(text):
        if any(ln.strip().startswith(("dpaudit ", "# ", "Usage:")) for ln in para):
            continue  # examples and the usage line keep their own lines
        for line in para[:-1]:
            assert len(line) >= PROSE, f"orphan fragment after {line!r} in:\n" + "\n".join(para)
    # every example of the command's docstring is printed whole, on one line
    info = next((c for c in app.registered_commands if [c.name] == args), None)
    doc = (info.help or inspect.getdoc(info.callback) or "") if info else ""
    shown = {line.strip() for line in lines}
    examples = [m.group(1).strip() for m in re.finditer(r"^\s*(?:Examples?:\s*)?(dpaudit .*)$", doc, re.M)]
    for example in examples:
        assert example in shown, f"example split across lines: {example!r}"


def test_test_help_is_short_with_rare_options_grouped():
    text = _help(["test"])
    assert len(text.splitlines()) < 120, len(text.splitlines())
    headings = re.findall(r"╭─ (.+?) ─", text)
    assert headings[:2] == ["Arguments", "Options"] and len(headings) >= 4, headings
    main = text.split("╭─ Options")[1].split("╰")[0]
    for rare in ("--storage", "--scheduler", "--min-size", "--processes"):
        assert rare not in main and rare in text, rare
    assert "--tester" in main and "TESTER" in main  # the choices are named in its help, not split in a list

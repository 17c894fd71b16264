"""The live progress line of ``dpaudit test`` (issue 38, item 3): at any width its numbers are
whole (fields are left out by priority, never cut), with a long pair label the trial count and
the times remain, and Ctrl-C erases the live line instead of leaving it printed twice."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from dpaudit.cli.app import _ECHO_ROOM, _erased_on_interrupt, _progress, progress_line

NUMBER = r"[-+]?\d+(?:[.:/]\d+)*"
LABELS = ["", "pair", "witness pair 1 of dp-laplace: [0.25, 1.0, 0.5] vs [0.25, 1.0]",
          "x" * 200, "random pair: " + " ".join(f"{i / 7:.5f}" for i in range(30))]


def _task(label: str):
    p = _progress(Console(file=io.StringIO(), width=80), disable=True)
    p.add_task(label, total=12, completed=3, best="-0.00259", trial=4)
    return p.tasks[0]


@pytest.mark.parametrize("width", [30, 50, 60, 77, 80, 100, 120])
def test_progress_line_never_cuts_a_number(width):
    for label in LABELS:
        text = progress_line(_task(label), width).plain
        assert len(text) <= width, (width, text)
        assert text.startswith("trial 4/12"), text  # the trial count always
        numbers = re.findall(NUMBER, text.replace("━", " "))
        whole = {"4/12", "-0.00259", "0:00:00"} | set(re.findall(NUMBER, label))
        assert set(numbers) <= whole, (width, text)  # every number shown is one of the whole numbers
        if width >= 60:  # the count, the best margin and both times fit at 60 columns, label or not
            assert "best margin -0.00259" in text and text.count("0:00:00") == 1 and "ETA -:--:--" in text, text


def test_ctrl_c_erases_the_live_line_and_leaves_room_for_the_echo():
    buf = io.StringIO()
    console = Console(file=buf, width=80, force_terminal=True)
    progress = _progress(console, disable=False)
    with pytest.raises(KeyboardInterrupt):
        with progress, _erased_on_interrupt(progress):
            progress.add_task("witness pair 1 of dp-laplace", total=3, best="-", trial=1)
            progress.refresh()
            raise KeyboardInterrupt
    out = buf.getvalue()
    assert out.rstrip().endswith("\x1b[2K"), repr(out[-40:])  # the last thing done: the line erased
    lines = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out).splitlines()
    assert max(len(line) for line in lines) <= 80 - _ECHO_ROOM  # a "^C" echo does not wrap the line

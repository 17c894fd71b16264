"""The command line whose reader goes away early (``dpaudit zoo | head -3``): the exit status is
the command's own (the verdict's, 0 for listings and help), never 1 ("violation found"), and no
traceback is printed (issue 38, item 1)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _run_into_closed_pipe(args: list[str], *, close_stderr: bool = False) -> tuple[int, str]:
    """Run ``python -m dpaudit ARGS`` with stdout (and stderr, if asked) a pipe whose read end is
    closed before the command starts, so its first write fails with EPIPE, as behind ``| head``
    once head has exited. Returns the exit status and what it wrote on stderr."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {**os.environ, "COLUMNS": "80"}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "dpaudit", *args], stdout=write_end,
            stderr=write_end if close_stderr else subprocess.PIPE, env=env, timeout=120,
        )
    finally:
        os.close(write_end)
    return proc.returncode, (proc.stderr or b"").decode(errors="replace")


@pytest.mark.parametrize("args", [["zoo"], ["zoo", "--json"], ["test", "--help"]])
def test_closed_pipe_keeps_the_commands_exit_code(args):
    rc, err = _run_into_closed_pipe(args)
    assert rc == 0, (args, rc, err)
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_closed_pipe_after_a_verdict_keeps_the_verdicts_code():
    """``dpaudit test zoo:dp-laplace ... 2>&1 | head -1``: progress and verdict both unread; the
    correct mechanism still exits 0 (1 would read as a violation)."""
    args = ["test", "zoo:dp-laplace", "--epsilon", "1", "--samples", "2000", "--stages", "off", "--seed", "1",
            "--trials", "2"]
    rc, _ = _run_into_closed_pipe(args, close_stderr=True)
    assert rc == 0

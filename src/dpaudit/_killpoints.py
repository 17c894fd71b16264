"""Named points where a test can kill the audit's process with SIGKILL (resume tests only).

``DPAUDIT_KILL_AT="<point>:<n>"`` in the environment makes the process send itself SIGKILL the
``n``-th time (counted from 1, in this process) it reaches :func:`kill_point` ``(<point>)``. Unset
(always, outside tests), :func:`kill_point` returns at once. The points mark the windows a real
``kill -9`` can land in, deterministically: between two storage writes of one trial, inside a
trial, between trials (see ``tests/test_resume_kill.py`` for the list).

This module imports nothing from dpaudit.
"""

from __future__ import annotations

import os
import signal

__all__ = ["ENV", "kill_point"]

ENV = "DPAUDIT_KILL_AT"

_hits: dict[str, int] = {}


def kill_point(name: str) -> None:
    """Send this process SIGKILL if ``DPAUDIT_KILL_AT`` names ``name`` and this is its ``n``-th hit.

    Parameters
    ----------
    name : str
        The point, e.g. ``"ledger.begin"``.
    """
    spec = os.environ.get(ENV)
    if not spec:
        return
    point, _, count = spec.rpartition(":")
    if point != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] == int(count):
        os.kill(os.getpid(), signal.SIGKILL)

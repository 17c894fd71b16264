"""Per-call mechanisms (plain Python functions ``f(dataset, rng) -> output``) for trying
``dpaudit test --processes``: one cheap, one costly per call, one that raises.

Run, e.g.::

    dpaudit test dpaudit.examples.per_call:noisy_sum --epsilon 1
    dpaudit test dpaudit.examples.per_call:slow_noisy_sum --epsilon 1 --samples 20000 --trials 2

``--processes auto`` (the default) times a few calls of the function in this process first and
starts a pool of worker processes only when the measured cost per call says they pay off
(``docs/search.md``): the noisy sum (a few microseconds per call) is sampled in this process,
the slow one (about 150 microseconds per call) on one process per core.
"""

from __future__ import annotations

import time


def noisy_sum(dataset, rng):
    """The sum of the records plus Laplace noise of scale 1 (1-DP for records in [0, 1] under
    add/remove): a few microseconds per call, pure Python around one numpy draw."""
    return float(dataset.sum()) + rng.laplace(0.0, 1.0)


def slow_noisy_sum(dataset, rng, cost_seconds: float = 150e-6):
    """:func:`noisy_sum` after busy-waiting ``cost_seconds`` (150 microseconds): a stand-in for
    a mechanism whose calls do real work, which a pool of processes speeds up."""
    end = time.perf_counter() + cost_seconds
    while time.perf_counter() < end:
        pass
    return noisy_sum(dataset, rng)


def broken_sum(dataset, rng):
    """Raises on every call: dpaudit reports it (exit code 2) before any pool starts."""
    raise RuntimeError("database offline")

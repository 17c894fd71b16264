"""dp_accounting's harmless log lines, dropped while dpaudit calls it (issue 44, item 6).

dp_accounting's RDP accountant logs (through absl) a ``WARNING`` for every Rényi order at which its
series for the subsampled Gaussian does not converge, e.g. five lines ``_compute_log_a_frac failed
to converge after 1000 iterations with q=0.100000, sigma=1.000000, alpha=1.100000. Excluding this
order from the epsilon computation.`` for every DP-SGD audit of the README, and hundreds in a
many-run profile check at q = 0.5, sigma = 8. Nothing is for the user to do: the order is left out
of the minimum over orders, so the RDP epsilon (or delta) is taken over fewer orders, which can
only make that upper bound larger, never unsound; and dpaudit's certified accountant
(:func:`dpaudit.accounting.get_epsilon`) reports the smaller of it and its own bounds.

:func:`quiet_dp_accounting` drops exactly those records, only while dpaudit's own calls into
dp_accounting run (a filter on the ``absl`` logger, added and removed around each call; absl's
configuration and every other record, e.g. dp_accounting's "negative Rényi divergence" warning,
are left alone). The records dropped are counted in :data:`DROPPED`.
"""

from __future__ import annotations

import contextlib
import logging
import threading

__all__ = ["DROPPED", "HARMLESS", "quiet_dp_accounting"]

HARMLESS = ("_compute_log_a_frac failed to converge",)
"""Starts of the dp_accounting log messages that :func:`quiet_dp_accounting` drops (see above)."""

DROPPED = {"count": 0}
"""How many records :func:`quiet_dp_accounting` has dropped in this process."""

_lock = threading.Lock()
_depth = {"n": 0}


class _DropHarmless(logging.Filter):
    """Drops the records of :data:`HARMLESS` (and counts them); passes every other record."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a record we cannot format is not ours to drop
            return True
        if message.startswith(HARMLESS):
            DROPPED["count"] += 1
            return False
        return True


_FILTER = _DropHarmless()


@contextlib.contextmanager
def quiet_dp_accounting():
    """Context manager: while it is open, the ``absl`` logger (dp_accounting's) drops the records
    of :data:`HARMLESS`; re-entrant and thread-safe (the filter is on while any caller is inside).

    Yields
    ------
    None
    """
    logger = logging.getLogger("absl")
    with _lock:
        if _depth["n"] == 0:
            logger.addFilter(_FILTER)
        _depth["n"] += 1
    try:
        yield
    finally:
        with _lock:
            _depth["n"] -= 1
            if _depth["n"] == 0:
                logger.removeFilter(_FILTER)

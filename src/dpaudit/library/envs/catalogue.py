"""The rows of :mod:`dpaudit.library.envs.rows` as module-level mechanisms, for ``dpaudit test``.

``dpaudit test dpaudit.library.envs.catalogue:smartnoise_sql__count --epsilon 1 --delta 0.0015``
audits the SmartNoise SQL COUNT row in its own environment (built on first use under
``~/.cache/dpaudit/envs``). Each attribute is :meth:`EnvRow.mechanism` of the row whose
:attr:`~dpaudit.library.envs.rows.EnvRow.attr` it is; nothing starts until the first sample.
"""

from __future__ import annotations

from .rows import ROWS

__all__ = [r.attr for r in ROWS]


def __getattr__(name):
    """The mechanism of the row whose ``attr`` is ``name`` (built on first access, then kept)."""
    for r in ROWS:
        if r.attr == name:
            mech = r.mechanism()
            globals()[name] = mech
            return mech
    raise AttributeError(f"module {__name__!r} has no row {name!r}; rows: {', '.join(r.attr for r in ROWS)}")


def __dir__():
    return sorted(set(globals()) | {r.attr for r in ROWS})

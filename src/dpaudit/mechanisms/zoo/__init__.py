"""The zoo: reference mechanisms, correct and buggy, each with its claim, its bug and a witness pair.

Entries are registered by name (the CLI's ``zoo:NAME``); :mod:`.catalogue` holds them all and
:mod:`.entry` the :class:`ZooEntry` record. This package only re-exports them.
"""

from __future__ import annotations

from .catalogue import entries, families, get, register
from .entry import ZooEntry, variant

__all__ = ["ZooEntry", "entries", "families", "get", "register", "variant"]

"""Adapters that turn mechanisms of real DP libraries into dpaudit mechanisms.

Each adapter imports its library only when a mechanism is used, so these imports work without the
optional dependencies installed.
"""

from .diffprivlib import DiffprivlibMechanism

__all__ = ["DiffprivlibMechanism"]

"""Moved to :mod:`dpaudit.mechanisms.catalogue.diffprivlib_mechanisms` (the library-audit catalogue); this old path
is the same module object, so ``dpaudit.examples.diffprivlib_mechanisms:NAME`` targets keep working."""

import sys

from ..mechanisms.catalogue import diffprivlib_mechanisms as _module

sys.modules[__name__] = _module

"""Moved to :mod:`dpaudit.mechanisms.catalogue.diffprivlib_mean` (the library-audit catalogue); this old path
is the same module object, so ``dpaudit.examples.diffprivlib_mean:NAME`` targets keep working for a release."""

import sys

from ..mechanisms.catalogue import diffprivlib_mean as _module

sys.modules[__name__] = _module

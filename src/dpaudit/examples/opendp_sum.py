"""Moved to :mod:`dpaudit.mechanisms.catalogue.opendp_sum` (the library-audit catalogue); this old path
is the same module object, so ``dpaudit.examples.opendp_sum:NAME`` targets keep working for a release."""

import sys

from ..mechanisms.catalogue import opendp_sum as _module

sys.modules[__name__] = _module

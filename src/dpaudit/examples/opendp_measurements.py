"""Moved to :mod:`dpaudit.mechanisms.catalogue.opendp_measurements` (the library-audit catalogue); this old path
is the same module object, so ``dpaudit.examples.opendp_measurements:NAME`` targets keep working."""

import sys

from ..mechanisms.catalogue import opendp_measurements as _module

sys.modules[__name__] = _module

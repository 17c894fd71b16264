"""Moved to :mod:`dpaudit.mechanisms.catalogue.opacus_sgd` (the library-audit catalogue); this old path
is the same module object, so ``dpaudit.examples.opacus_sgd:NAME`` targets keep working for a release."""

import sys

from ..mechanisms.catalogue import opacus_sgd as _module

sys.modules[__name__] = _module

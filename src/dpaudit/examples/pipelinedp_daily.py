"""Moved to :mod:`dpaudit.mechanisms.catalogue.pipelinedp_daily` (the library-audit catalogue); this old path
is the same module object, so ``dpaudit.examples.pipelinedp_daily:NAME`` targets keep working for a release."""

import sys

from ..mechanisms.catalogue import pipelinedp_daily as _module

sys.modules[__name__] = _module

"""Moved to :mod:`dpaudit.mechanisms.catalogue.pipelinedp_metrics` (the library-audit catalogue); this old path
is the same module object, so ``dpaudit.examples.pipelinedp_metrics:NAME`` targets keep working."""

import sys

from ..mechanisms.catalogue import pipelinedp_metrics as _module

sys.modules[__name__] = _module

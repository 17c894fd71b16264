"""Adapters that turn mechanisms of real DP libraries into dpaudit mechanisms.

Each adapter imports its library only when a mechanism is used, so these imports work without the
optional dependencies installed.

======================  ==========================  =========================================
adapter                 library (extra)             what one output is
======================  ==========================  =========================================
DiffprivlibMechanism    diffprivlib                 one call of a diffprivlib tool
OpenDPMechanism         opendp                      one invocation of an OpenDP Measurement
PipelineDPMechanism     pipelinedp (pipeline-dp)    one run of a PipelineDP pipeline, as a
                                                    fixed-length vector over known partitions
OpacusMechanism         opacus                      model parameters (or a canary's loss)
                                                    after a short DP-SGD run
======================  ==========================  =========================================
"""

from ...errors import DPAuditError


class MissingDependencyError(DPAuditError, ImportError):
    """An optional library an adapter needs is not installed; the message names the extra.

    Subclasses both :class:`~dpaudit.errors.DPAuditError` and :class:`ImportError`, so
    ``except ImportError`` keeps working.
    """


from .diffprivlib import DiffprivlibMechanism  # noqa: E402  (after MissingDependencyError)
from .opacus import OpacusMechanism, canary_loss  # noqa: E402
from .opendp import OpenDPMechanism  # noqa: E402
from .pipelinedp import PipelineDPMechanism, UnitRow  # noqa: E402

__all__ = [
    "DiffprivlibMechanism",
    "MissingDependencyError",
    "OpacusMechanism",
    "OpenDPMechanism",
    "PipelineDPMechanism",
    "UnitRow",
    "canary_loss",
]

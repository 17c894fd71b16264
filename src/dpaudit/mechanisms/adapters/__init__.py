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

from ._common import MissingDependencyError
from .diffprivlib import DiffprivlibMechanism
from .opacus import OpacusMechanism, canary_loss
from .opendp import OpenDPMechanism
from .pipelinedp import PipelineDPMechanism, UnitRow

__all__ = [
    "DiffprivlibMechanism",
    "MissingDependencyError",
    "OpacusMechanism",
    "OpenDPMechanism",
    "PipelineDPMechanism",
    "UnitRow",
    "canary_loss",
]

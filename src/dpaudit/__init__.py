"""dpaudit: tells whether a differentially private system keeps its promise.

Three families in one library:

* black-box testing of a mechanism's claimed guarantee (pure, approximate and Rényi DP), with
  finite-sample confidence bounds whose failure probability is the one reported
  (:func:`audit`, the testers in :mod:`dpaudit.testers`, the finders in :mod:`dpaudit.search`);
* auditing from two samples of scores (:mod:`dpaudit.scores`, :mod:`dpaudit.privacy.profiles`);
* accounting and verification (:mod:`dpaudit.accounting`).
"""

import sys as _sys
from types import ModuleType as _ModuleType

from ._version import __version__

# Every public name is loaded on first use (PEP 562), so that `import dpaudit` and the command line
# (`dpaudit --help`) start without numpy, scipy or torch; `from dpaudit import X` works as before.
_LAZY = {
    "AuditResult": "dpaudit.audit",
    "TrialRecord": "dpaudit.audit",
    "audit": "dpaudit.audit",
    "ApproxDP": "dpaudit.privacy",
    "PureDP": "dpaudit.privacy",
    "RenyiDP": "dpaudit.privacy",
    "make_claim": "dpaudit.privacy",
    "AddRemove": "dpaudit.datasets",
    "Domain": "dpaudit.datasets",
    "NeighbouringPair": "dpaudit.datasets",
    "Replace": "dpaudit.datasets",
    "DPAuditError": "dpaudit.errors",
    "InvalidClaimError": "dpaudit.errors",
    "MechanismError": "dpaudit.errors",
    "NeighbouringError": "dpaudit.errors",
    "ClassifierHockeyStick": "dpaudit.estimators",
    "DivergenceBound": "dpaudit.estimators",
    "HockeyStickBound": "dpaudit.estimators",
    "hockey_stick_lower_bound": "dpaudit.estimators",
    "CallableMechanism": "dpaudit.mechanisms",
    "Mechanism": "dpaudit.mechanisms",
    "draw": "dpaudit.mechanisms",
    "BayesFinder": "dpaudit.search",
    "ChainFinder": "dpaudit.search",
    "EvolutionFinder": "dpaudit.search",
    "GridFinder": "dpaudit.search",
    "RandomFinder": "dpaudit.search",
    "SpaceGridFinder": "dpaudit.search",
    "CombinedTester": "dpaudit.testers",
    "HockeyStickTester": "dpaudit.testers",
    "Tester": "dpaudit.testers",
    "TestOutcome": "dpaudit.testers",
    "make_tester": "dpaudit.testers",
    "RenyiTester": "dpaudit.testers.renyi",
    "MMDTester": "dpaudit.testers.mmd",
    "HistogramTester": "dpaudit.testers.histogram",
}


def __getattr__(name):
    """Import the module of a public name on first use and return the name (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dpaudit' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


class _Package(_ModuleType):
    """``dpaudit.audit`` is the function :func:`dpaudit.audit.loop.audit`, as it was when this
    package imported it eagerly: importing the subpackage ``dpaudit.audit`` later binds the name
    on the package, and that binding is ignored here (``import dpaudit.audit.loop`` and
    ``from dpaudit.audit import ...`` work as ever, through ``sys.modules``)."""

    @property
    def audit(self):
        from .audit.loop import audit

        return audit

    @audit.setter
    def audit(self, value):
        pass


_sys.modules[__name__].__class__ = _Package


__all__ = [
    "AddRemove",
    "ApproxDP",
    "AuditResult",
    "BayesFinder",
    "CallableMechanism",
    "ChainFinder",
    "ClassifierHockeyStick",
    "CombinedTester",
    "DPAuditError",
    "DivergenceBound",
    "Domain",
    "EvolutionFinder",
    "GridFinder",
    "HistogramTester",
    "HockeyStickBound",
    "HockeyStickTester",
    "InvalidClaimError",
    "MMDTester",
    "Mechanism",
    "MechanismError",
    "NeighbouringError",
    "NeighbouringPair",
    "PureDP",
    "RandomFinder",
    "RenyiDP",
    "RenyiTester",
    "Replace",
    "SpaceGridFinder",
    "TestOutcome",
    "Tester",
    "TrialRecord",
    "audit",
    "draw",
    "hockey_stick_lower_bound",
    "make_claim",
    "make_tester",
]

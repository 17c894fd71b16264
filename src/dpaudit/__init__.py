"""dpaudit: tells whether a differentially private system keeps its promise.

Three families in one library:

* black-box testing of a mechanism's claimed guarantee (pure, approximate and Rényi DP), with
  finite-sample confidence bounds whose failure probability is the one reported
  (:func:`audit`, the testers in :mod:`dpaudit.testers`, the finders in :mod:`dpaudit.search`);
* auditing from two samples of scores (:mod:`dpaudit.scores`, :mod:`dpaudit.privacy.profiles`);
* accounting and verification (:mod:`dpaudit.accounting`).
"""

from ._version import __version__

from .audit import AuditResult, TrialRecord, audit
from .privacy import ApproxDP, PureDP, RenyiDP, make_claim
from .datasets import AddRemove, Domain, NeighbouringPair, Replace
from .errors import DPAuditError, InvalidClaimError, MechanismError, NeighbouringError
from .estimators import ClassifierHockeyStick, DivergenceBound, HockeyStickBound, hockey_stick_lower_bound
from .mechanisms import CallableMechanism, Mechanism, draw
from .search import BayesFinder, ChainFinder, EvolutionFinder, GridFinder, RandomFinder, SpaceGridFinder
from .testers import CombinedTester, HockeyStickTester, Tester, TestOutcome, make_tester

_LAZY = {  # imported on first use: dpaudit.RenyiTester etc.
    "RenyiTester": "dpaudit.testers.renyi",
    "MMDTester": "dpaudit.testers.mmd",
    "HistogramTester": "dpaudit.testers.histogram",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'dpaudit' has no attribute {name!r}")


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

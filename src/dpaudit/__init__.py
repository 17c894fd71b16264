"""dpaudit: tells whether a differentially private system keeps its promise.

Black-box testing of a mechanism's claimed guarantee (pure, approximate and Rényi DP), with
finite-sample confidence bounds whose failure probability is the one reported.
"""

__version__ = "0.1.0"

from .audit import AuditResult, TrialRecord, audit
from .claims import ApproxDP, PureDP, RenyiDP, make_claim
from .datasets import AddRemove, Domain, NeighbouringPair, Replace
from .errors import DPAuditError, InvalidClaimError, MechanismError, NeighbouringError
from .estimators import ClassifierHockeyStick, DivergenceBound, HockeyStickBound, hockey_stick_lower_bound
from .mechanisms import CallableMechanism, Mechanism, draw
from .search import ChainFinder, GridFinder, RandomFinder
from .testers import CombinedTester, HockeyStickTester, Tester, TestOutcome, make_tester

__all__ = [
    "AddRemove",
    "ApproxDP",
    "AuditResult",
    "CallableMechanism",
    "ChainFinder",
    "ClassifierHockeyStick",
    "CombinedTester",
    "DPAuditError",
    "DivergenceBound",
    "Domain",
    "GridFinder",
    "HockeyStickBound",
    "HockeyStickTester",
    "InvalidClaimError",
    "Mechanism",
    "MechanismError",
    "NeighbouringError",
    "NeighbouringPair",
    "PureDP",
    "RandomFinder",
    "RenyiDP",
    "Replace",
    "TestOutcome",
    "Tester",
    "TrialRecord",
    "audit",
    "draw",
    "hockey_stick_lower_bound",
    "make_claim",
    "make_tester",
]

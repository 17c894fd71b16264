"""Exceptions raised by dpaudit.

Every error names the offending value so a user can act on it without reading dpaudit's code.
Input-validation errors subclass :class:`ValueError` so that ``except ValueError`` keeps working.
"""

from __future__ import annotations

__all__ = ["DPAuditError", "InvalidClaimError", "MechanismError", "NeighbouringError"]


class DPAuditError(Exception):
    """Base class of all dpaudit errors."""


class InvalidClaimError(DPAuditError, ValueError):
    """A privacy claim has an invalid parameter (epsilon < 0, delta outside [0, 1), alpha <= 1...)."""


class NeighbouringError(DPAuditError, ValueError):
    """Two datasets are not neighbours under the chosen relation, or a record is out of the domain."""


class MechanismError(DPAuditError):
    """A mechanism raised, or returned an output dpaudit cannot use (NaN, inf, wrong shape or count).

    Attributes
    ----------
    mechanism : str
        Name of the mechanism.
    dataset : str
        Short description of the dataset it was called on.
    problem : str
        What the mechanism did, without the mechanism and dataset: ``"raised ZeroDivisionError:
        ..."``, ``"returned a non-finite value nan at call 1"``...
    """

    def __init__(self, message: str, *, mechanism: str = "?", dataset: str = "?"):
        self.mechanism = mechanism
        self.dataset = dataset
        self.problem = message
        super().__init__(f"mechanism {mechanism!r} on dataset {dataset}: {message}")

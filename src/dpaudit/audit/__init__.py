"""Running an audit (paper 000, Algorithm 1): the loop, its result, where trials run and where an
audit is kept so that it can resume.

* :mod:`dpaudit.audit.result` — the immutable, JSON-serialisable :class:`AuditResult` and
  :class:`TrialRecord`;
* :mod:`dpaudit.audit.loop` — :func:`audit`, the loop that asks a finder, runs trials on an
  executor and keeps them in the ledger;
* :mod:`dpaudit.audit.executors` — where trials run: in process or on a Dask cluster, with
  per-trial random streams that do not depend on the worker;
* :mod:`dpaudit.audit.ledger` — the persistent record of an audit (an Optuna storage) from which
  an interrupted audit resumes;
* :mod:`dpaudit.audit.targets` — turning a target (``zoo:NAME``, ``module:attr``) and options into
  a mechanism, claim, relation and finder (shared by the CLI and :func:`dpaudit.testing.assert_dp`).
"""

from .loop import audit
from .result import AuditResult, TrialRecord, library_versions

__all__ = ["AuditResult", "TrialRecord", "audit", "library_versions"]

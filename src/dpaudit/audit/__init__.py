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


# The names are loaded on first use (PEP 562): `dpaudit.audit.targets` (a target that does not load
# is reported at once, issue 44) and the other light modules import without the loop, the testers
# and scipy.
_LAZY = {"audit": ".loop", "AuditResult": ".result", "TrialRecord": ".result", "library_versions": ".result"}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["AuditResult", "TrialRecord", "audit", "library_versions"]

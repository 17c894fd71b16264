"""pytest plugin: DP audits in a test suite (``docs/pytest.md``).

Installed with dpaudit as the ``pytest11`` entry point ``dpaudit``; without the installed entry
point, load it with ``pytest -p dpaudit.pytest_plugin``. It provides

* the ``dp_audit`` fixture: a callable with the signature of :func:`dpaudit.testing.assert_dp`
  whose defaults come from the command line and whose seed is derived from the test's node id;
* the ``@pytest.mark.dp_audit(mechanism, claim=None, **options)`` marker: the same audit, run
  before the test's body (which then may inspect ``dp_audit.results``);
* the options ``--dpaudit-samples``, ``--dpaudit-trials``, ``--dpaudit-seed``, ``--dpaudit-beta``
  and ``--dpaudit-report-dir`` (one JSON report per audit, for CI artifacts);
* a ``dpaudit`` section in the terminal summary: audits run, passed, violations, inconclusive,
  errors, and the time spent auditing; findings of tests that pass anyway (``pytest.raises``,
  ``xfail``) are counted apart as intended.

Options given to an audit in the test (fixture call or marker) win over the command line, which
wins over :mod:`dpaudit.testing`'s defaults. Seeds: unless the test gives ``seed=``, the audit's
seed is :func:`derive_seed` of ``--dpaudit-seed`` (default 0) and the test's node id, so a
verdict does not depend on test order or on which pytest-xdist worker runs the test.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path

import pytest

from ._validate import check_int, check_probability

__all__ = ["DPAudit", "derive_seed", "report_file_name"]

_MARKER = "dp_audit"
_PROPERTY = "dpaudit"


def derive_seed(base_seed: int, nodeid: str, index: int = 0) -> int:
    """The seed of a test's audit: a stable hash of the base seed, the node id and the audit's index.

    Parameters
    ----------
    base_seed : int
        ``--dpaudit-seed`` (default 0).
    nodeid : str
        The test's pytest node id, e.g. ``"tests/test_mech.py::test_sum[2]"`` (relative to the
        rootdir, hence the same on every machine and xdist worker).
    index : int, default 0
        0 for the test's first audit, 1 for its second...

    Returns
    -------
    int
        In ``[0, 2**31)`` (Optuna's samplers need seeds below ``2**32``): the first 4 bytes of
        ``sha256(f"{base_seed}:{nodeid}:{index}")``, big-endian, top bit cleared.
    """
    digest = hashlib.sha256(f"{int(base_seed)}:{nodeid}:{int(index)}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def report_file_name(nodeid: str, index: int = 0) -> str:
    """File name of a test's JSON report: the node id made file-safe, and a hash of it.

    Characters other than letters, digits, ``.``, ``_`` and ``-`` become ``_`` (runs of them
    one ``_``), the result is cut to 120 characters, and the first 8 hex digits of
    ``sha256(nodeid)`` are appended so that two node ids never share a file; a test's second and
    later audits get ``-2``, ``-3``... E.g. ``tests/test_m.py::test_a[x]`` becomes
    ``tests_test_m.py_test_a_x-<8 hex>.json``.
    """
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", nodeid).strip("_")[:120]
    tag = hashlib.sha256(nodeid.encode()).hexdigest()[:8]
    return f"{safe}-{tag}" + (f"-{index + 1}" if index else "") + ".json"


class _Settings:
    """The session's dpaudit options (from the command line)."""

    def __init__(self, config: pytest.Config):
        self.samples = config.getoption("dpaudit_samples")
        self.trials = config.getoption("dpaudit_trials")
        self.beta = config.getoption("dpaudit_beta")
        self.seed = config.getoption("dpaudit_seed")
        report_dir = config.getoption("dpaudit_report_dir")
        self.report_dir = None if report_dir is None else (Path(config.invocation_params.dir) / report_dir).resolve()
        for name, value, minimum in (("--dpaudit-samples", self.samples, 8), ("--dpaudit-trials", self.trials, 1),
                                     ("--dpaudit-seed", self.seed, 0)):
            if value is not None:
                check_int(value, name, minimum, error=pytest.UsageError)
        if self.beta is not None:
            check_probability(self.beta, "--dpaudit-beta", error=pytest.UsageError)
        # summary counters (on the xdist controller: filled from the workers' reports)
        self.audits: list[dict] = []

    def defaults(self) -> dict:
        """Options the command line sets (the others stay at :mod:`dpaudit.testing`'s defaults)."""
        out = {}
        for key in ("samples", "trials", "beta"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


_SETTINGS = pytest.StashKey[_Settings]()
_AUDITOR = pytest.StashKey["DPAudit"]()


class DPAudit:
    """The ``dp_audit`` fixture: :func:`dpaudit.testing.assert_dp` bound to the test and session.

    Calling it runs :func:`~dpaudit.testing.assert_dp` with ``samples``, ``trials`` and ``beta``
    from ``--dpaudit-samples`` / ``--dpaudit-trials`` / ``--dpaudit-beta`` unless the call gives
    them, and ``seed=derive_seed(--dpaudit-seed, node id, k)`` for the test's ``k``-th audit
    unless the call gives ``seed``. It writes the JSON report (with ``--dpaudit-report-dir``) and
    records the verdict for the terminal summary, then raises as ``assert_dp`` does.

    Attributes
    ----------
    nodeid : str
    results : list of AuditResult
        The results of the test's finished audits (a violation's too), in order.
    """

    def __init__(self, item: pytest.Item, settings: _Settings):
        self.nodeid = item.nodeid
        self._item = item
        self._settings = settings
        self._count = 0
        self.results: list = []

    def seed(self, index: int | None = None) -> int:
        """The derived seed of this test's ``index``-th audit (default: the next one)."""
        return derive_seed(self._settings.seed, self.nodeid, self._count if index is None else index)

    def __call__(self, mechanism, claim=None, **options):
        """Audit ``mechanism`` against ``claim`` (see :func:`dpaudit.testing.assert_dp`).

        Parameters
        ----------
        mechanism, claim, **options
            As for :func:`~dpaudit.testing.assert_dp`.

        Returns
        -------
        AuditResult
            When no violation was found.

        Raises
        ------
        DPViolation
            (an ``AssertionError``) with the evidence and the reproducing command.
        InconclusiveAudit
            When every trial had too few samples to say anything.
        DPAuditError
            For bad input.
        """
        __tracebackhide__ = True  # a failure shows the test's line and the evidence, not this frame
        from .testing import _judge, _run

        kwargs = {**self._settings.defaults(), **options}
        kwargs.setdefault("seed", derive_seed(self._settings.seed, self.nodeid, self._count))
        start = time.perf_counter()
        try:
            run = _run(mechanism, claim, **kwargs)
        except Exception as exc:
            self.observe(None, exc, time.perf_counter() - start)
            raise
        self.observe(run, None, run.seconds)
        _judge(run)
        return run.result

    def observe(self, run, error, seconds: float) -> None:
        """Record one finished audit of the test (a fixture or marker call, or an
        :func:`~dpaudit.testing.assert_dp` call in the test: :data:`dpaudit.testing.OBSERVERS`):
        its result, its JSON report (with ``--dpaudit-report-dir``) and its summary entry.

        Parameters
        ----------
        run : dpaudit.testing._Audit or None
            The finished audit, None when it raised ``error``.
        error : Exception or None
        seconds : float
            Time the audit took.
        """
        index = self._count
        self._count += 1
        if run is None:
            self._record({"verdict": "error", "seconds": seconds, "error": f"{type(error).__name__}: {error}"[:500]})
            return
        self.results.append(run.result)
        report = None
        if self._settings.report_dir is not None:
            report = self._settings.report_dir / report_file_name(self.nodeid, index)
            report.parent.mkdir(parents=True, exist_ok=True)
            data = run.result.to_dict()
            data["pytest"] = {"nodeid": self.nodeid, "audit_index": index, "base_seed": self._settings.seed,
                              "reproduce": run.command}
            report.write_text(json.dumps(data, indent=2, allow_nan=True))
        self._record({
            "verdict": run.result.verdict, "violation_kind": run.result.violation_kind,
            "also_found": [f["kind"] for f in run.result.additional_findings], "seconds": seconds, "mechanism": run.result.mechanism,
            "claim": run.result.claim.describe(), "seed": run.result.seed, "command": run.command,
            "report": None if report is None else str(report),
        })

    def _record(self, entry: dict) -> None:
        # user_properties travel with the test's reports (to the xdist controller, into JUnit XML)
        self._item.user_properties.append((_PROPERTY, json.dumps(entry)))


def _auditor(item: pytest.Item) -> DPAudit:
    auditor = item.stash.get(_AUDITOR, None)
    if auditor is None:
        auditor = DPAudit(item, item.config.stash[_SETTINGS])
        item.stash[_AUDITOR] = auditor
    return auditor


@pytest.fixture
def dp_audit(request) -> DPAudit:
    """A callable that audits a mechanism's DP claim in this test (:class:`DPAudit`).

    ``dp_audit(mechanism, claim=None, **options)`` takes the arguments of
    :func:`dpaudit.testing.assert_dp`; defaults come from the ``--dpaudit-*`` options and the
    seed from the test's node id. It returns the result or raises ``AssertionError``
    (:class:`~dpaudit.testing.DPViolation`) with the evidence.
    """
    return _auditor(request.node)


def pytest_addoption(parser: pytest.Parser) -> None:
    """pytest hook: the ``--dpaudit-*`` command-line options (samples, trials, seed, beta, report directory)."""
    group = parser.getgroup("dpaudit", "differential privacy audits (dpaudit)")
    group.addoption("--dpaudit-samples", type=int, default=None, metavar="N",
                    help="Mechanism outputs per dataset per trial for audits that do not set samples= "
                         "(default: dpaudit.testing.DEFAULT_SAMPLES, 50000).")
    group.addoption("--dpaudit-trials", type=int, default=None, metavar="T",
                    help="Trial budget for audits that do not set trials= (default 5).")
    group.addoption("--dpaudit-seed", type=int, default=0, metavar="SEED",
                    help="Base seed; each audit's seed is a stable hash of it and the test's node id "
                         "unless the test sets seed= (default 0).")
    group.addoption("--dpaudit-beta", type=float, default=None, metavar="BETA",
                    help="Probability of failing a mechanism that keeps its claim, per audit that does "
                         "not set beta= (default 0.01).")
    group.addoption("--dpaudit-report-dir", default=None, metavar="DIR",
                    help="Write one JSON report per audit to DIR (file name from the test's node id).")


def pytest_configure(config: pytest.Config) -> None:
    """pytest hook: register the ``dp_audit`` marker and the session's audit settings and observer."""
    config.addinivalue_line(
        "markers",
        f"{_MARKER}(mechanism, claim=None, **options): audit the mechanism's DP claim before the test's "
        "body (options as dpaudit.testing.assert_dp; the dp_audit fixture holds the result).",
    )
    settings = _Settings(config)
    config.stash[_SETTINGS] = settings
    config.pluginmanager.register(_Summary(settings), "dpaudit-summary")
    from .testing import OBSERVERS

    observer = _AssertDPObserver(config)
    config.stash[_OBSERVER] = observer
    OBSERVERS.append(observer)


_RUNNING: list = []  # the tests whose setup, call or teardown is running (nested: pytester sessions)


class _AssertDPObserver:
    """:data:`dpaudit.testing.OBSERVERS` entry of one pytest session: an ``assert_dp`` call inside
    one of its tests counts as one of the test's audits (summary, report)."""

    def __init__(self, config: pytest.Config):
        self.config = config

    def __call__(self, run, error, seconds: float) -> None:
        item = _RUNNING[-1] if _RUNNING else None
        if item is not None and item.config is self.config:
            _auditor(item).observe(run, error, seconds)


_OBSERVER = pytest.StashKey[_AssertDPObserver]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem):
    """Remember the running test, so that ``assert_dp`` calls in it are recorded as its audits."""
    _RUNNING.append(item)
    try:
        yield
    finally:
        _RUNNING.pop()


def pytest_report_header(config: pytest.Config) -> str:
    """pytest hook: one header line with the base seed and the settings given on the command line."""
    s = config.stash[_SETTINGS]
    from_cli = ", ".join(f"{k}={v}" for k, v in s.defaults().items())
    return (f"dpaudit: base seed {s.seed} (per-test seeds from node ids)"
            + (f", {from_cli}" if from_cli else "") + (f", reports in {s.report_dir}" if s.report_dir else ""))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """Run the audits of ``@pytest.mark.dp_audit`` markers before the test's body; an exception
    here is the test's call-phase failure (so ``xfail(raises=AssertionError)`` sees it)."""
    __tracebackhide__ = True
    markers = list(item.iter_markers(_MARKER))
    for marker in reversed(markers):  # outermost (module, class) first, then the function's own
        _auditor(item)(*marker.args, **marker.kwargs)


class _Summary:
    """Collects the audits' verdicts from the test reports (on the xdist controller: from the
    workers' reports) and writes the ``dpaudit`` section of the terminal summary."""

    def __init__(self, settings: _Settings):
        self.settings = settings
        self._failed: set = set()  # node ids with a failed phase (an xfail's expected failure is not one)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed and not hasattr(report, "wasxfail"):
            self._failed.add(report.nodeid)
        if report.when != "teardown":  # the teardown report carries every audit of the test
            return
        # a finding in a test that passes (pytest.raises, an xfail) is one the test asked for
        intended = report.nodeid not in self._failed
        self._failed.discard(report.nodeid)
        for key, value in report.user_properties:
            if key == _PROPERTY:
                entry = json.loads(value)
                entry["nodeid"] = report.nodeid
                entry["intended"] = intended and entry["verdict"] in _FINDINGS
                self.settings.audits.append(entry)

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config: pytest.Config) -> None:
        _write_summary(terminalreporter, self.settings)


def pytest_unconfigure(config: pytest.Config) -> None:
    """pytest hook: detach the session's audit observer and its summary plugin."""
    from .testing import OBSERVERS

    observer = config.stash.get(_OBSERVER, None)
    if observer in OBSERVERS:
        OBSERVERS.remove(observer)
    summary = config.pluginmanager.get_plugin("dpaudit-summary")
    if summary is not None:
        config.pluginmanager.unregister(summary)


_FINDINGS = ("violation", "inconclusive", "error")


def _counted(audits: list, verdicts=_FINDINGS) -> str:
    """``"3 violation(s), 1 inconclusive"``: each verdict of ``verdicts`` with its count (errors
    only when there are some)."""
    n = {v: sum(1 for a in audits if a["verdict"] == v) for v in verdicts}
    words = {"violation": "violation(s)", "inconclusive": "inconclusive", "error": "error(s)"}
    return ", ".join(f"{n[v]} {words[v]}" for v in verdicts if n[v] or v != "error")


def _write_summary(tr, settings: _Settings) -> None:
    """The ``dpaudit`` section: the audits' verdicts. A finding (violation, inconclusive, error)
    of a test that passed anyway (``pytest.raises``, ``xfail``) was asked for: it is counted
    apart, as intended, and listed only with ``-v``; the others are listed with their reproduce
    commands."""
    if not settings.audits:
        return
    audits = settings.audits
    intended = [a for a in audits if a.get("intended")]
    found = [a for a in audits if not a.get("intended")]
    tests = len({a["nodeid"] for a in audits})
    seconds = sum(a.get("seconds", 0.0) for a in audits)
    passed = sum(1 for a in audits if a["verdict"] == "no violation found")
    tr.write_sep("=", "dpaudit")
    tr.write_line(
        f"{len(audits)} audit(s) in {tests} test(s): {passed} passed, {_counted(found)}"
        + (f"; {len(intended)} intended finding(s) in tests that expect them "
           f"({_counted(intended, [v for v in _FINDINGS if any(a['verdict'] == v for a in intended)])})"
           if intended else "")
        + f"; {seconds:.1f} s auditing"
    )
    verbose = getattr(tr, "verbosity", 0) > 0
    for a in audits:
        if a["verdict"] in _FINDINGS and (verbose or not a.get("intended")):
            what = a.get("error") or f"{a.get('mechanism')} vs {a.get('claim')}, seed {a.get('seed')}"
            label = "FLOATING-POINT LEAK" if a.get("violation_kind") == "floating-point" else a["verdict"].upper()
            if "floating-point" in a.get("also_found", ()):
                label += " (and a FLOATING-POINT LEAK)"
            tr.write_line(f"  {'intended ' if a.get('intended') else ''}{label} {a['nodeid']}: {what}")
            if a.get("command"):
                tr.write_line(f"    reproduce: {a['command']}")
    if settings.report_dir is not None:
        tr.write_line(f"JSON reports in {settings.report_dir}")

"""Assertions for test suites: audit a mechanism's DP claim inside a unit test.

:func:`assert_dp` runs the audit of ``dpaudit test`` (same mechanism, relation, pairs, finder and
tester for a given seed) and raises :class:`DPViolation`, an ``AssertionError``, whose message is
the evidence and the exact ``dpaudit test ...`` command that reproduces it. The pytest plugin
(:mod:`dpaudit.pytest_plugin`, see ``docs/pytest.md``) builds on it.

Defaults are chosen for test suites: a fixed seed (0), so a CI run is reproducible, and a budget
of ``DEFAULT_SAMPLES`` (50,000) outputs per dataset and ``DEFAULT_TRIALS`` (5) trials, which costs
a second or two on a vectorised mechanism (measured on 2 shared CPU cores, after the first audit
of the process, which also pays about 4 s of imports: ``zoo:dp-laplace``, ``zoo:dp-gaussian``,
``zoo:dp-median`` at eps = 1, no violation, 1.3 to 1.5 s each; ``zoo:non-dp-laplace-1``,
violation at the first trial, 0.2 s). The CLI searches harder by default (10 trials); raise
``samples`` and ``trials`` for a nightly job.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
import warnings
from dataclasses import dataclass

import numpy as np

from ._validate import check_int, check_probability
from .audit.targets import SEARCH_NAMES, as_domain, assemble, load_target, make_finder, user_pairs
from .errors import DPAuditError, MechanismError

__all__ = [
    "DEFAULT_BETA",
    "DEFAULT_SAMPLES",
    "DEFAULT_SEED",
    "DEFAULT_TRIALS",
    "DPViolation",
    "InconclusiveAudit",
    "OBSERVERS",
    "assert_dp",
]

DEFAULT_SAMPLES = 50_000
"""Mechanism outputs drawn on each dataset per trial by :func:`assert_dp`."""

DEFAULT_TRIALS = 5
"""Trial budget of :func:`assert_dp` (neighbouring pairs tested at most)."""

DEFAULT_BETA = 0.01
"""Probability that :func:`assert_dp` fails a mechanism that keeps its claim."""

DEFAULT_SEED = 0
"""Root seed of :func:`assert_dp`: fixed, so that a test gives the same verdict on every run."""

OBSERVERS: list = []
"""Callables ``observer(run, error, seconds)`` told of every :func:`assert_dp` audit when it ends:
``run`` the finished audit (``run.result`` its :class:`~dpaudit.audit.result.AuditResult`, judged
after the observers return) or None, ``error`` the exception the audit raised or None. The pytest
plugin registers one to count ``assert_dp`` calls in its summary and write their reports."""

_TESTERS = ("sequential", "staged", "hockey-stick", "renyi", "mmd", "histogram", "float-bits", "all")
_RELATIONS = ("add-remove", "replace")


class DPViolation(AssertionError):
    """The audit rejected the claim: raised by :func:`assert_dp`.

    An ``AssertionError``, so pytest reports it as a test failure and
    ``pytest.mark.xfail(raises=AssertionError)`` accepts it.

    Attributes
    ----------
    result : AuditResult
        The full audit result (``result.to_json()`` is the report ``dpaudit test --report`` writes).
    command : str or None
        The ``dpaudit test ...`` command that reproduces the audit, None when the mechanism cannot
        be imported as ``module:attribute``.
    """

    def __init__(self, message: str, result, command: str | None):
        super().__init__(message)
        self.result = result
        self.command = command


class InconclusiveAudit(DPAuditError):
    """Every trial had too few samples for the tester's bound to say anything (the CLI's exit
    code 3): raised by :func:`assert_dp`, so that an audit that could not test anything never
    passes silently. Not an ``AssertionError``: ``xfail(raises=AssertionError)`` does not accept it.

    Attributes
    ----------
    result : AuditResult
    command : str or None
        As for :class:`DPViolation`.
    """

    def __init__(self, message: str, result, command: str | None):
        super().__init__(message)
        self.result = result
        self.command = command


@dataclass(frozen=True)
class _Audit:
    """One finished audit with what is needed to report it (used by the pytest plugin)."""

    result: object
    command: str | None
    target: str | None
    seconds: float


# ----------------------------------------------------------------------------------- targets
def _resolve(module_name: str, attr: str):
    module = sys.modules.get(module_name)
    obj = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _is_test_module(name: str) -> bool:
    leaf = name.rsplit(".", 1)[-1]
    return leaf.startswith("test_") or leaf.endswith("_test") or leaf == "conftest"


def import_path(obj) -> str | None:
    """``"module:attribute"`` under which ``obj`` can be imported, or None.

    Functions and classes are found by ``__module__`` and ``__qualname__``; other objects (a
    Mechanism instance) by looking for a module-level name bound to ``obj`` in the modules
    already imported, preferring modules that are not test modules, then the shortest name.

    Parameters
    ----------
    obj : object

    Returns
    -------
    str or None
    """
    mod, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if isinstance(mod, str) and isinstance(qual, str) and "<" not in qual and mod != "__main__":
        if _resolve(mod, qual) is obj:
            return f"{mod}:{qual}"
    found = []
    for name, module in list(sys.modules.items()):
        if module is None or name == "__main__" or name.startswith("_"):
            continue
        try:
            items = list(vars(module).items())
        except TypeError:
            continue
        found.extend((name, attr) for attr, value in items if value is obj and not attr.startswith("_"))
    if not found:
        return None
    name, attr = min(found, key=lambda c: (_is_test_module(c[0]), len(c[0]), c[0], c[1]))
    return f"{name}:{attr}"


def _pythonpath_for(target: str) -> str | None:
    """The ``sys.path`` entry a fresh ``dpaudit test`` needs to import ``target``'s module, when it
    is neither installed nor the working directory (e.g. a test directory)."""
    if target.startswith("zoo:"):
        return None
    module = sys.modules.get(target.split(":", 1)[0])
    path = getattr(module, "__file__", None)
    if not path:
        return None
    root = os.path.dirname(os.path.abspath(path))
    if os.path.basename(path) == "__init__.py":
        root = os.path.dirname(root)
    for _ in range(module.__name__.count(".")):
        root = os.path.dirname(root)
    if "site-packages" in root or "dist-packages" in root or root == os.getcwd():
        return None
    return root


def _mechanism_target(mechanism):
    """``(obj, kind, target string or None)`` for what :func:`assert_dp` accepts as a mechanism."""
    from .mechanisms.base import Mechanism

    if isinstance(mechanism, str):
        obj, kind = load_target(mechanism)
        return obj, kind, mechanism
    if hasattr(mechanism, "sample") and callable(mechanism.sample):
        return mechanism, "mechanism", import_path(mechanism)
    if isinstance(mechanism, type):
        raise DPAuditError(f"mechanism {mechanism!r} is a class; pass an instance (a Mechanism object) or a function")
    if callable(mechanism):
        target = import_path(mechanism)
        name = target or getattr(mechanism, "__qualname__", None) or repr(mechanism)
        return Mechanism.from_callable(mechanism, name=name), "mechanism", target
    raise DPAuditError(
        f"mechanism must be a Mechanism, a 'zoo:NAME' or 'package.module:attribute' string, or a "
        f"function f(dataset) -> output; got {mechanism!r}"
    )


# ------------------------------------------------------------------------------------ claims
def _claim_parameters(claim, epsilon, delta, alpha, obj, kind):
    """``(epsilon, delta, alpha)`` as ``dpaudit test`` options, from a claim object or shortcuts."""
    from .privacy.claims import ApproxDP, PureDP, RenyiDP

    if claim is not None:
        if epsilon is not None or delta is not None or alpha is not None:
            raise DPAuditError(
                f"give the claim either as a claim object or as epsilon=/delta=/alpha=, not both "
                f"(got claim={claim!r}, epsilon={epsilon!r}, delta={delta!r}, alpha={alpha!r})"
            )
        if isinstance(claim, RenyiDP):
            return claim.epsilon, None, claim.alpha
        if isinstance(claim, ApproxDP):
            return claim.epsilon, claim.delta, None
        if isinstance(claim, PureDP):
            # A zoo entry with a default delta would otherwise claim (eps, default delta)-DP.
            zoo_delta = getattr(obj, "default_delta", None) if kind == "zoo" else None
            return claim.epsilon, (0.0 if zoo_delta is not None else None), None
        raise DPAuditError(f"claim must be PureDP, ApproxDP or RenyiDP (from dpaudit), got {claim!r}")
    if epsilon is None:
        raise DPAuditError("no claim: pass a claim object (PureDP(1.0), ApproxDP(1.0, 1e-5), RenyiDP(alpha, eps)) or epsilon=")
    return epsilon, delta, alpha


# -------------------------------------------------------------------------------- reporting
def _fmt(x) -> str:
    return "none" if x is None else f"{x:.6g}"


def _num(x) -> str:
    """A float written so that ``float()`` reads back the same value."""
    return repr(float(x))


def _command(target, eps, delta, alpha, *, neighbouring, domain, min_size, max_size, pairs_json,
             samples, trials, beta, seed, tester, search, exhaustive, device) -> str | None:
    if target is None:
        return None
    ranges = [f"{_num(lo)}:{_num(hi)}" for lo, hi in zip(domain.lower, domain.upper)] if domain is not None else []
    options = [  # (flag, its value, True for a bare flag, None to leave it out: the CLI's defaults)
        ("--epsilon", _num(eps)),
        ("--delta", None if delta is None else _num(delta)),
        ("--alpha", None if alpha is None else _num(alpha)),
        ("--neighbouring", neighbouring),
        *(("--domain", r) for r in ranges),
        ("--min-size", None if min_size is None else str(min_size)),
        ("--max-size", None if max_size is None else str(max_size)),
        ("--pairs", pairs_json),
        ("--samples", str(samples)), ("--trials", str(trials)), ("--beta", _num(beta)), ("--seed", str(seed)),
        ("--tester", None if tester is None else tester),  # (the default is not hockey-stick alone)
        ("--search", None if search == "auto" else search),
        ("--exhaustive", True if exhaustive else None),
        ("--device", None if device == "cpu" else device),
    ]
    words = ["dpaudit", "test", target]
    for flag, value in options:
        if value is not None:
            words += [flag] if value is True else [flag, value]
    text = " ".join(shlex.quote(w) for w in words)
    root = _pythonpath_for(target)
    return text if root is None else f"PYTHONPATH={shlex.quote(root)} {text}"


def _evidence(result) -> list[str]:
    """Lines describing the strongest trial's evidence, whatever the tester."""
    from .mechanisms.base import describe_dataset

    s = result.strongest
    if s is None:
        return ["  no trial ran"]
    o = s.outcome
    b = o.bounds[o.strongest]
    part = o.strongest_part
    lines = [
        f"  neighbouring pair ({s.pair.relation}: {s.pair.description or 'pair'}), trial {s.index + 1}:",
        f"    D0 = {describe_dataset(s.pair.d0, max_items=10)}",
        f"    D1 = {describe_dataset(s.pair.d1, max_items=10)}",
    ]
    order = ""
    if b.divergence == "hockey-stick" and getattr(b, "epsilon", None) is not None:
        order = f" at eps'={b.epsilon:.4g}"
    elif getattr(b, "alpha", None) is not None:
        order = f" at alpha={b.alpha:g}"
    allows = "" if part.threshold is None else f"; the claim allows <= {_fmt(part.threshold)}"
    lines.append(
        f"  {part.tester} tester, {b.divergence} divergence{order} ({b.direction}, P = M(D0), Q = M(D1)): "
        f"lower bound {_fmt(b.lower)} (estimate {_fmt(b.estimate)}){allows}; margin {o.margin:+.4g}"
    )
    if o.delta_lower_bound is not None and o.claimed_delta is not None:
        lines.append(f"  delta lower bound at the claimed epsilon: {_fmt(o.delta_lower_bound)} (the claim allows {_fmt(o.claimed_delta)})")
    if o.epsilon_lower_bound is not None:
        eps_lb = o.epsilon_lower_bound
        lines.append(
            f"  empirical epsilon lower bound: {eps_lb:.4g}" if eps_lb > 0 else "  empirical epsilon lower bound: none"
        )
        lines[-1] += f" (the {part.tester} tester's; claimed epsilon {result.claim.epsilon:g})"
    if o.note:
        lines.append(f"  note: {o.note}")
    return lines


def _message(headline: str, result, command: str | None, target: str | None, python_call: str) -> str:
    lines = [headline, *_evidence(result)]
    lines.append(
        f"  confidence: a violation is reported wrongly with probability <= beta={result.beta:g} "
        f"({len(result.trials)} of {result.trial_budget} trial(s) run, "
        f"{result.strongest.num_samples if result.strongest else 0:,} samples per dataset)"
    )
    lines.append(f"  seed: {result.seed}")
    if command is not None:
        lines.append(f"  reproduce: {command}")
    else:
        lines.append(
            "  reproduce: the mechanism cannot be imported as module:attribute (define it at the top "
            "level of a module to get a `dpaudit test` command); from Python: " + python_call
        )
    return "\n".join(lines)


# ------------------------------------------------------------------------------------- check
def _check_options(samples, trials, beta, seed, tester, search, neighbouring):
    check_int(samples, "samples", 8, error=DPAuditError)
    check_int(trials, "trials", 1, error=DPAuditError)
    check_probability(beta, "beta", error=DPAuditError)
    check_int(seed, "seed", 0, error=DPAuditError)
    if tester is not None and tester not in _TESTERS:
        raise DPAuditError(f"tester must be one of {', '.join(_TESTERS)}, got {tester!r}")
    if search not in SEARCH_NAMES:
        raise DPAuditError(f"search must be one of {', '.join(SEARCH_NAMES)}, got {search!r}")
    if neighbouring is not None and neighbouring not in _RELATIONS:
        raise DPAuditError(f"neighbouring must be one of {', '.join(_RELATIONS)}, got {neighbouring!r}")


def _run(mechanism, claim=None, *, epsilon=None, delta=None, alpha=None, neighbouring=None, domain=None,
         min_size=None, max_size=None, pairs=None, samples=DEFAULT_SAMPLES, trials=DEFAULT_TRIALS,
         beta=DEFAULT_BETA, seed=DEFAULT_SEED, tester=None, search="auto", exhaustive=False,
         device="cpu") -> _Audit:
    """Run the audit :func:`assert_dp` describes and return it without judging it.

    Bad input (:class:`DPAuditError`: a target that does not load, a bad option) is raised from
    here with dpaudit's own frames cut, so that pytest shows the test's line and the one-line
    message, not dpaudit's source (issue 44); a mechanism that raises keeps its traceback (the
    user's frames are in it)."""
    __tracebackhide__ = True
    try:
        return _run_audit(mechanism, claim, epsilon=epsilon, delta=delta, alpha=alpha, neighbouring=neighbouring,
                          domain=domain, min_size=min_size, max_size=max_size, pairs=pairs, samples=samples,
                          trials=trials, beta=beta, seed=seed, tester=tester, search=search, exhaustive=exhaustive,
                          device=device)
    except MechanismError:
        raise
    except DPAuditError as exc:
        raise exc.with_traceback(None) from None


def _run_audit(mechanism, claim, *, epsilon, delta, alpha, neighbouring, domain, min_size, max_size, pairs, samples,
               trials, beta, seed, tester, search, exhaustive, device) -> _Audit:
    from .audit.loop import audit
    from .testers import default_tester_name, make_tester

    _check_options(samples, trials, beta, seed, tester, search, neighbouring)
    samples, trials, seed, beta = int(samples), int(trials), int(seed), float(beta)
    obj, kind, target = _mechanism_target(mechanism)
    eps, dlt, alp = _claim_parameters(claim, epsilon, delta, alpha, obj, kind)
    dom = as_domain(domain, name="domain")
    setup = assemble(obj, kind, epsilon=eps, delta=dlt, alpha=alp, neighbouring=neighbouring, domain=dom,
                     min_size=min_size, max_size=max_size)
    for note in setup.notes:  # what the CLI prints on stderr (e.g. the empty dataset left out)
        warnings.warn(f"dpaudit: {note}", UserWarning, stacklevel=3)
    known, pairs_json = setup.known, None
    if pairs is not None:
        try:
            raw = [[np.asarray(d0, dtype=float).tolist(), np.asarray(d1, dtype=float).tolist()] for d0, d1 in pairs]
        except (TypeError, ValueError):
            raise DPAuditError(f"pairs must be a list of (D0, D1) pairs of datasets, got {pairs!r}") from None
        known = user_pairs(raw, setup.relation)
        pairs_json = json.dumps(raw, separators=(",", ":"))
    finder = make_finder(search, known, setup.relation, seed)
    tst = make_tester(default_tester_name(setup.claim, sequential=tester != "staged") if tester in (None, "staged") else tester,
                      device=device)
    tst.require(setup.claim)
    command = _command(
        target, eps, dlt, alp, neighbouring=neighbouring, domain=dom, min_size=min_size, max_size=max_size,
        pairs_json=pairs_json, samples=samples, trials=trials, beta=beta, seed=seed, tester=tester,
        search=search, exhaustive=exhaustive, device=device,
    )
    start = time.perf_counter()
    result = audit(setup.mechanism, setup.claim, finder, tester=tst, num_samples=samples, trials=trials, beta=beta,
                   exhaustive=exhaustive, seed=seed, neighbouring=setup.relation.to_dict())
    return _Audit(result, command, target, time.perf_counter() - start)


def _judge(run: _Audit) -> None:
    """Raise :class:`DPViolation` or :class:`InconclusiveAudit` for a run that is not a pass."""
    __tracebackhide__ = True  # pytest shows the test's line and the message, not dpaudit's frames
    result = run.result
    s = result.strongest
    python_call = (
        f"assert_dp(<the same mechanism>, {result.claim!r}, seed={result.seed}, "
        f"samples={s.num_samples if s else '...'}, trials={result.trial_budget}, beta={result.beta:g}, "
        "with the same other arguments)"
    )
    if result.violation:
        kind = result.violation_kind
        found = "a DP violation" if kind == "distributional" else "a FLOATING-POINT LEAK"
        head = (f"dpaudit found {found} (violation kind: {kind}): {result.mechanism} does not satisfy "
                f"{result.claim.describe()} (wrong with probability <= {result.beta:g})\n  what to do: {result.advice}"
                + (f"\n  also found: {result.also_found}" if result.also_found else ""))
        raise DPViolation(_message(head, result, run.command, run.target, python_call), result, run.command)
    if result.inconclusive:
        needed = result.strongest.outcome.note if result.strongest else ""
        head = (f"dpaudit audit of {result.mechanism} against {result.claim.describe()} is INCONCLUSIVE: "
                f"every trial had too few samples for the tester's bound to say anything; raise samples= "
                f"(or --dpaudit-samples)" + (f" [{needed}]" if needed else ""))
        raise InconclusiveAudit(_message(head, result, run.command, run.target, python_call), result, run.command)


def assert_dp(mechanism, claim=None, *, epsilon=None, delta=None, alpha=None, neighbouring=None, domain=None,
              min_size=None, max_size=None, pairs=None, samples=DEFAULT_SAMPLES, trials=DEFAULT_TRIALS,
              beta=DEFAULT_BETA, seed=DEFAULT_SEED, tester=None, search="auto", exhaustive=False,
              device="cpu"):
    """Audit ``mechanism`` against a DP claim; raise ``AssertionError`` with the evidence if it fails.

    Runs the audit ``dpaudit test`` runs (the same mechanism, neighbouring relation, known pairs,
    finder and tester for a given seed): trials sample the mechanism on neighbouring datasets
    (D0, D1) and lower-bound a divergence of its outputs with a confidence bound; a violation is
    reported when the bound exceeds what the claim allows. A mechanism that keeps its claim fails
    with probability at most ``beta``.

    Parameters
    ----------
    mechanism : Mechanism, str or callable
        A :class:`~dpaudit.Mechanism` (anything with ``sample(dataset, num_samples, rng)``); a
        target string as ``dpaudit test`` takes it, ``"zoo:NAME"`` or
        ``"package.module:attribute"``; or a function ``f(dataset) -> output`` called once per
        output (``dataset``: float array of shape ``(n_records, record_dim)``; it gets
        ``rng=numpy.random.Generator`` if it has a parameter named ``rng``).
    claim : PureDP, ApproxDP or RenyiDP, optional
        The guarantee claimed, as a claim object; it is audited exactly as given (for a zoo
        entry, ``PureDP`` means ``--delta 0``).
    epsilon, delta, alpha : float, optional
        The claim as ``dpaudit test``'s ``--epsilon`` (nats), ``--delta`` and ``--alpha``, instead
        of ``claim`` (give one or the other): epsilon alone is pure DP (for a zoo entry with a
        default delta: approximate DP at that delta, as on the command line), with delta
        approximate DP, with alpha Rényi DP.
    neighbouring : {"add-remove", "replace"}, optional
        Neighbouring relation; default the mechanism's own (its ``neighbouring`` attribute or zoo
        entry), else add-remove.
    domain : Domain or sequence, optional
        Record domain: a :class:`~dpaudit.Domain`, ``(lower, upper)`` for scalar records, or one
        ``(lower, upper)`` pair per coordinate. Default the mechanism's own, else ``[0, 1]``.
    min_size, max_size : int, optional
        Dataset sizes the search may propose; default the mechanism's own, else 1 and 10.
    pairs : sequence of (D0, D1), optional
        Neighbouring pairs to test first (each dataset array-like of shape
        ``(n_records, record_dim)``), instead of the mechanism's witness pairs.
    samples : int, default DEFAULT_SAMPLES (50,000)
        Mechanism outputs drawn on **each** dataset per trial (>= 8).
    trials : int, default DEFAULT_TRIALS (5)
        Trial budget: at most this many pairs are tested; the audit stops at the first
        violation unless ``exhaustive``.
    beta : float, default 0.01
        Probability of failing a mechanism that keeps its claim (whole audit), in (0, 1).
    seed : int, default DEFAULT_SEED (0)
        Root seed (>= 0). Fixed by default so that a test's verdict is the same on every run; a
        mechanism that draws its own noise outside the given ``rng`` (e.g. OpenDP) still varies.
    tester : {"hockey-stick", "renyi", "mmd", "histogram", "float-bits", "all"}, optional
        Which divergence bound decides (``--tester``). Default: hockey-stick, and for a Rényi-DP
        claim hockey-stick and Rényi together, beta split, plus the float-bits screen at a tenth of
        beta on non-integer float outputs (:func:`dpaudit.testers.default_tester_name`).
    search : {"auto", "grid", "random", "bayes", "evolution"}, default "auto"
        How pairs are chosen (``--search``): auto tests the known pairs first, then searches.
    exhaustive : bool, default False
        Run every trial instead of stopping at the first violation.
    device : str, default "cpu"
        Where trained testers run (``"cpu"``, ``"cuda"``...).

    Returns
    -------
    AuditResult
        The audit's result when no violation was found (``result.to_json()`` is the report).

    Raises
    ------
    DPViolation
        (an ``AssertionError``) when the audit rejects the claim. Its message gives the
        violating pair (D0, D1), the divergence lower bound against what the claim allows, the
        empirical epsilon lower bound, beta, the seed and the ``dpaudit test ...`` command that
        reproduces the audit (or, for a mechanism that is not importable as
        ``module:attribute``, how to reproduce it from Python); ``.result`` holds the result.
    InconclusiveAudit
        (a :class:`~dpaudit.DPAuditError`, not an ``AssertionError``) when every trial had too
        few samples for the tester to say anything: an audit that tested nothing never passes.
    DPAuditError
        For bad input (an unknown target, invalid options or claim, a tester that cannot test
        the claim, both a claim object and epsilon=); the message names the value.
        :class:`~dpaudit.InvalidClaimError` and :class:`~dpaudit.NeighbouringError` are also
        ``ValueError`` s.
    MechanismError
        When the mechanism fails or returns outputs that cannot be audited.

    See Also
    --------
    dpaudit.audit : the audit loop, with every option.
    dpaudit.pytest_plugin : the ``dp_audit`` fixture and marker, with per-test seeds and reports.

    Notes
    -----
    Cost: ``2 * samples * trials`` mechanism outputs plus one classifier fit per trial. Measured
    on 2 shared CPU cores with the defaults: ``assert_dp("zoo:dp-laplace", epsilon=1.0)`` 1.3 s
    (5 trials, no violation; 0.34 s with ``samples=20_000, trials=3``);
    ``assert_dp("zoo:non-dp-laplace-1", epsilon=1.0)`` raises after 0.2 s (first trial). The
    first audit in a process adds about 4 s of imports (PyTorch, Optuna). A function called once per output costs its own time on top
    (diffprivlib's mean: about 90 µs per call, so use ``samples`` of a few thousand).

    Examples
    --------
    >>> from dpaudit import PureDP
    >>> from dpaudit.testing import assert_dp
    >>> result = assert_dp("zoo:dp-laplace", PureDP(1.0))   # passes: returns the result
    >>> result.verdict
    'no violation found'
    >>> assert_dp("zoo:non-dp-laplace-1", epsilon=1.0)     # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dpaudit.testing.DPViolation: dpaudit found a DP violation (violation kind: distributional): ...

    With a function of the dataset, a relation and a domain::

        def noisy_sum(d, rng):
            return d.sum() + rng.laplace(scale=1.0)

        assert_dp(noisy_sum, epsilon=1.0, neighbouring="add-remove", domain=(0, 1))
    """
    __tracebackhide__ = True
    start = time.perf_counter()
    try:
        run = _run(mechanism, claim, epsilon=epsilon, delta=delta, alpha=alpha, neighbouring=neighbouring,
                   domain=domain, min_size=min_size, max_size=max_size, pairs=pairs, samples=samples,
                   trials=trials, beta=beta, seed=seed, tester=tester, search=search, exhaustive=exhaustive,
                   device=device)
    except Exception as exc:
        for observer in tuple(OBSERVERS):
            observer(None, exc, time.perf_counter() - start)
        raise
    for observer in tuple(OBSERVERS):
        observer(run, None, run.seconds)
    _judge(run)
    return run.result

"""Run one row of the library-audit table: the audit ``dpaudit test`` runs, in this process.

:func:`run_row` loads the row's target (:func:`~dpaudit.library.entry.resolve_mechanism`), builds
the claim, relation and finder as ``dpaudit test`` does (:func:`dpaudit.audit.targets.assemble`,
:func:`~dpaudit.audit.targets.make_finder` with ``--search auto``) and calls the public audit loop
:func:`dpaudit.audit.loop.audit` with the row's budget, leaving every other setting (stages,
tester internals, futility) at the loop's defaults, so a row costs what ``dpaudit test`` with the
same options costs and inherits whatever ``dpaudit test`` does by default. The mechanism is
wrapped (:class:`RecordingMechanism`) so the outputs the audit draws are kept: the leak size of a
finding is computed from *that* run's outputs (:mod:`dpaudit.library.stages`), never from a cache.

:func:`audit_entry` runs a row and its stages and returns the record the cache stores and the
table renders; a violation may be run a second time (``confirm``: the next seed, twice the
samples) before the table counts it. :func:`classify` maps an audit to an outcome; the reruns
(:func:`rerun_entry`, :func:`summarise_reruns`) count accusations of exact rows against beta.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from ..mechanisms.base import Mechanism
from .entry import Entry, resolve_mechanism
from .registry import fingerprint

__all__ = ["BETA", "CONFIRM_TESTERS", "OUTCOMES", "STAGE_NAMES", "RecordingMechanism", "RowRun", "audit_entry",
           "classify", "confirm_run", "rerun_entry", "run_row", "summarise_reruns"]

OUTCOMES = ("pass", "violation", "floating-point leak", "inconclusive", "not auditable", "error")
"""What an audited entry can come out as (:func:`classify`); ``unconfirmed`` is added when a
violation's second run disagrees, ``timed out`` when a contained row's stage ran past its time limit
(:data:`dpaudit.library.contain.TIMED_OUT`)."""

STAGE_NAMES = ("audit", "leak size", "confirmation", "adversarial", "power")
"""The stages :func:`audit_entry` runs, in order, as its ``on_stage`` hook names them."""

BETA = 0.01
"""False-positive rate of one audit (``dpaudit test``'s default ``--beta``): a correct mechanism is
accused by one run with probability at most BETA."""


def classify(exit_code: int | None, result: dict | None, not_auditable: str | None = None) -> str:
    """The outcome of one audit, one of :data:`OUTCOMES`.

    Parameters
    ----------
    exit_code : int or None
        Exit code of the audit as ``dpaudit test`` gives it (0 pass, 1 violation, 2 bad input or
        failing mechanism, 3 inconclusive, 4 internal error, 5 floating-point leak alone; records
        written before issue 44 have 1 for it); None when the entry was not run.
    result : dict or None
        Its JSON result; the ``violation_kind`` field (``"floating-point"`` or
        ``"distributional"``) tells the two kinds of violation apart.
    not_auditable : str or None
        The entry's reason for not being auditable; when given the outcome is ``"not auditable"``.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If the exit code and the result disagree (exit 1 without a violation, or a violation with
        another exit code) or the exit code is unknown.
    """
    if not_auditable:
        return "not auditable"
    if exit_code in (2, 4) or exit_code is None:
        return "error"
    violation = bool(result and result.get("violation"))
    if exit_code in (1, 5) or violation:  # 5: a floating-point leak alone (issue 44); 1 before that too
        if not (exit_code in (1, 5) and violation):
            raise ValueError(f"exit code {exit_code!r} and result violation={violation!r} disagree")
        kind = result.get("violation_kind")
        if kind == "floating-point":
            return "floating-point leak"
        if kind == "distributional" and exit_code == 1:
            return "violation"
        raise ValueError(f"violation_kind {kind!r} with exit code {exit_code!r}")
    if exit_code == 3:
        return "inconclusive"
    if exit_code == 0:
        return "pass"
    raise ValueError(f"unknown exit code {exit_code!r}")


def _dataset_key(dataset) -> tuple:
    arr = np.asarray(dataset, dtype=float)
    if arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    return arr.shape, arr.tobytes()


class RecordingMechanism(Mechanism):
    """A mechanism that keeps every output it draws, by dataset (the row's run, to size its leak).

    Parameters
    ----------
    inner : Mechanism
        The row's mechanism; every attribute it has (audit hints, ``claim``, ``accepts``,
        ``sample_raw``) is read through to it.

    Attributes
    ----------
    vectorised : bool
        The inner mechanism's (a per-call library is still sampled in chunks).

    Notes
    -----
    Outputs drawn in other processes (a sampling pool, Dask workers) are not seen: the runner then
    draws the witness pair's outputs again (:func:`dpaudit.library.stages.pair_outputs`). Every
    kept output is an independent draw of the mechanism on its dataset (each chunk and trial has
    its own random stream, :mod:`dpaudit.audit.executors`), so they may be pooled per dataset.
    """

    def __init__(self, inner):
        from ..audit.executors import is_per_call

        self.inner = inner
        self.name = getattr(inner, "name", type(inner).__name__)
        self.neighbouring = getattr(inner, "neighbouring", None)
        self.witness_pairs = getattr(inner, "witness_pairs", ())
        self.vectorised = not is_per_call(inner)
        self.outputs: dict = {}

    def __getattr__(self, name):
        if name in ("inner", "outputs") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __getstate__(self):  # a pool process gets the mechanism without the kept outputs
        return {k: v for k, v in self.__dict__.items() if k != "outputs"} | {"outputs": {}}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def sample(self, dataset, num_samples, rng):
        """The inner mechanism's ``sample``, kept under the dataset."""
        out = self.inner.sample(dataset, num_samples, rng)
        arr = np.asarray(out, dtype=float)
        self.outputs.setdefault(_dataset_key(dataset), []).append(arr.reshape(len(arr), -1))
        return out

    def drawn(self, dataset) -> np.ndarray | None:
        """Every output kept for ``dataset`` (shape (n, d)), or None when none was drawn here."""
        parts = self.outputs.get(_dataset_key(dataset))
        return np.concatenate(parts) if parts else None


@dataclass
class RowRun:
    """One run of a row: the summary the cache keeps, and what the stages need from the run.

    Attributes
    ----------
    summary : dict
        ``outcome`` (:func:`classify`), ``exit_code``, ``command`` (the ``dpaudit test`` command that
        reproduces it), ``seed``, ``samples``, ``seconds`` (wall time, loading included), and from
        the result ``epsilon_lower_bound``, ``witness`` (the strongest trial's pair and direction),
        ``tester``, ``note``, ``trials_run``, ``audit_seconds``, ``result_leak`` (the audit's own
        leak size when its region held no output of one dataset); ``message`` on an error.
    result : AuditResult or None
    mechanism : RecordingMechanism or None
    """

    summary: dict
    result: object = None
    mechanism: RecordingMechanism | None = None
    extra: dict = field(default_factory=dict)


def run_row(entry: Entry, *, seed: int | None = None, samples: int | None = None, processes: int | str = 1,
            beta: float = BETA, on_trial_end=None, tester: str | None = None) -> RowRun:
    """Audit ``entry`` once, in this process, as ``dpaudit test TARGET --epsilon E [--delta D]
    --tester T --samples N --trials K --seed S --processes P`` would.

    Parameters
    ----------
    entry : Entry
        An auditable entry.
    seed, samples : int, optional
        Override the budget's seed and samples (the confirmation run, a smaller CI budget).
    processes : int or "auto"
        Processes sampling a per-call library (``--processes``); 1 keeps every output in this
        process, so the leak size needs no second draw.
    beta : float
        The audit's false-accusation probability.
    on_trial_end : callable, optional
        Called with each finished :class:`~dpaudit.audit.result.TrialRecord` (progress).
    tester : str, optional
        Another tester than the budget's, as its ``--tester`` words: a tester name, or
        ``"sequential --no-size"`` (the sequential tester without its sizing step); stated in the
        summary as ``tester_option`` (the confirmation run, :data:`CONFIRM_TESTERS`).

    Returns
    -------
    RowRun
        An ``error`` outcome (with ``message``) when the target cannot be loaded or the mechanism
        fails, as ``dpaudit test`` exits 2; exit code 4 for an exception that is dpaudit's own bug.

    Raises
    ------
    ValueError
        If the entry is not auditable.
    """
    from ..audit.executors import InProcessExecutor
    from ..audit.loop import audit
    from ..audit.targets import assemble, make_finder
    from ..errors import DPAuditError, MechanismError

    if entry.not_auditable or entry.target is None:
        raise ValueError(f"{entry.key} is not auditable: {entry.not_auditable}")
    g, b = entry.guarantee, entry.budget
    seed = b.seed if seed is None else int(seed)
    samples = b.samples if samples is None else int(samples)
    cmd = entry.command(seed, samples, tester)
    summary = {"command": " ".join(cmd), "seed": seed, "samples": samples}
    if tester:
        summary["tester_option"] = tester
    t0 = time.perf_counter()
    mech = None
    try:
        mech = RecordingMechanism(resolve_mechanism(entry))
        setup = assemble(mech, "mechanism", epsilon=g.epsilon, delta=g.delta or None)
        finder = make_finder("auto", setup.known, setup.relation, seed)
        chosen = _make_tester(tester or b.tester) if (tester or b.tester) else None
        result = audit(setup.mechanism, setup.claim, finder, tester=chosen, num_samples=samples, trials=b.trials,
                       beta=beta, seed=seed, neighbouring=setup.relation.to_dict(),
                       executor=InProcessExecutor(processes=processes), on_trial_end=on_trial_end)
    except (DPAuditError, MechanismError, ValueError) as exc:
        summary.update(outcome="error", exit_code=2, seconds=round(time.perf_counter() - t0, 1),
                       message=(str(exc).strip().splitlines() or [type(exc).__name__])[-1][:300])
        return RowRun(summary, None, mech)
    except Exception as exc:  # noqa: BLE001 - dpaudit's own failure: exit 4, reported on the row, never a finding
        summary.update(outcome="error", exit_code=4, seconds=round(time.perf_counter() - t0, 1),
                       message=f"internal error: {type(exc).__name__}: {exc}"[:300])
        return RowRun(summary, None, mech)
    seconds = time.perf_counter() - t0
    data = json.loads(result.to_json())
    summary.update(outcome=classify(result.exit_code, data), exit_code=result.exit_code, seconds=round(seconds, 1))
    ev = data.get("evidence") or {}
    pair = ev.get("pair") or {}
    summary.update({
        "epsilon_lower_bound": ev.get("epsilon_lower_bound"),
        "witness": {"d0": pair.get("d0"), "d1": pair.get("d1"), "direction": ev.get("direction")} if pair else None,
        "tester": ev.get("tester"), "note": ev.get("note"), "trials_run": data.get("trials_run"),
        "audit_seconds": round(float(data.get("wall_seconds") or 0.0), 1),
    })
    own = result.leak_size_dict()
    if own is not None:
        summary["result_leak"] = own
    return RowRun(summary, result, mech)


def _make_tester(words: str):
    """The tester of ``--tester`` words (:func:`dpaudit.testers.make_tester`; ``"NAME --no-size"``: the
    sequential tester without its sizing step)."""
    from ..testers import make_tester
    from ..testers.sequential import SequentialTester

    name, *flags = words.split()
    if flags not in ([], ["--no-size"]) or (flags and name != "sequential"):
        raise ValueError(f"unknown tester words {words!r}")
    return SequentialTester(size=False) if flags else make_tester(name)


CONFIRM_TESTERS = {"violation": "sequential --no-size", "floating-point leak": "float-bits"}
"""The tester a confirmation run tries first, by the first run's outcome: the sequential tester (no
sizing step), which stops at the first sufficient evidence, for a distributional violation; the
float-bits tester alone (all of beta, no classifier to train) for a floating-point leak. When it does
not find the same outcome, the confirmation run is the table's own (the budget's tester, ``all``)
at the same seed and samples, as before (:func:`confirm_run`)."""


def confirm_run(entry: Entry, first: dict, *, samples: int | None = None, processes: int | str = 1,
                beta: float = BETA, log=None) -> dict:
    """The confirmation run of a finding: the next seed, twice the samples, the same kind of outcome?

    A targeted run first (:data:`CONFIRM_TESTERS`: the tester that stops early or needs no training,
    with all of beta); when it does not report the first run's outcome, the budget's own tester at the
    same seed and samples (the run the table made before issue 43's change, so a finding it confirmed
    is still confirmed). Each run reports a violation of a mechanism that keeps its claim with
    probability at most beta, so the pair does with at most 2 beta; a *finding* needs the first run
    too, whose own false accusation probability (beta) bounds the finding's, confirmation or not.

    Parameters
    ----------
    entry : Entry
    first : dict
        The first run's summary (:func:`run_row`): ``outcome``, ``seed``.
    samples : int, optional
        The first run's samples when not the budget's; the confirmation draws twice as many.
    processes, beta
        As :func:`run_row`.
    log : callable, optional
        A line of text when the targeted run does not reproduce and the full run follows.

    Returns
    -------
    dict
        The deciding run's summary: the targeted run's when it reproduced ``first["outcome"]``,
        else the budget tester's, with the targeted run's summary under ``targeted``.
    """
    seed, n = first["seed"] + 1, 2 * (samples or entry.budget.samples)
    quick = None
    words = CONFIRM_TESTERS.get(first.get("outcome"))
    if words and words.split()[0] != entry.budget.tester:
        quick = run_row(entry, seed=seed, samples=n, processes=processes, beta=beta, tester=words).summary
        if quick["outcome"] == first["outcome"]:
            return quick
        if log:
            log(f"confirmation with --tester {words}: {quick['outcome']} ({quick['seconds']:.0f} s); "
                f"the table's run follows (--tester {entry.budget.tester})")
    full = run_row(entry, seed=seed, samples=n, processes=processes, beta=beta).summary
    if quick is not None:
        full["targeted"] = quick
    return full


def audit_entry(entry: Entry, *, stages=("audit",), confirm: bool = False, processes: int | str = 1,
                samples: int | None = None, beta: float = BETA, leak_samples: int = 0, on_trial_end=None,
                log=None, search_budget: int | None = None, on_stage=None) -> dict:
    """Audit ``entry`` at its budget and run the chosen stages on that run: the record the cache keeps.

    Parameters
    ----------
    entry : Entry
    stages : sequence of str
        Of :data:`dpaudit.library.stages.STAGES`: ``"audit"`` (always, with the leak size of a
        finding from the run's own outputs), ``"adversarial"``, ``"search"``, ``"power"``.
    confirm : bool
        Run a violation a second time (the next seed, twice the samples) and call it
        ``unconfirmed`` when that run does not find the same kind (the table's rule;
        :func:`confirm_run`: a targeted tester first, the budget's when it does not reproduce).
    processes : int or "auto"
        Sampling processes of each run.
    samples : int, optional
        A smaller budget than the row's (a quick CI check); stated in the record.
    beta : float
    leak_samples : int
        Size a finding on at least this many outputs per dataset, topping up the run's own with fresh
        draws (:func:`dpaudit.library.stages.leak_from_run`); 0: the run's outputs only.
    on_trial_end, log : callable, optional
        Progress: each finished trial; a line of text per stage.
    search_budget : int, optional
        Pairs Hypothesis generates per hunt of the input-space search (default
        :data:`dpaudit.library.stages.SEARCH_BUDGET`); stated in the record when given.
    on_stage : callable, optional
        Called as ``on_stage(name, record)`` as each stage starts (``name`` one of :data:`STAGE_NAMES`,
        ``record`` the record so far): how :class:`dpaudit.library.contain.RowWorker` knows which stage
        a row's time limit cut, and what the finished stages said.

    Returns
    -------
    dict
        ``key``, ``fingerprint``, ``ran_at``, ``verdict`` (the outcome, or ``"unconfirmed"``),
        ``first`` (the run's summary), ``confirm`` (the second run's, if any), ``leak_size`` (for a
        finding: sized on the run's outputs), and one field per further stage (``adversarial``,
        ``search``, ``power``).
    """
    from . import stages as st

    log = log or (lambda _text: None)
    on_stage = on_stage or (lambda _name, _record: None)
    record = {"key": entry.key, "fingerprint": fingerprint(entry), "ran_at": time.strftime("%Y-%m-%d %H:%M")}
    if samples is not None and samples != entry.budget.samples:
        record["budget"] = {"samples": int(samples), "trials": entry.budget.trials}
    if entry.not_auditable:
        record["verdict"] = "not auditable"
        return record
    on_stage("audit", record)
    run = run_row(entry, samples=samples, processes=processes, beta=beta, on_trial_end=on_trial_end)
    first = run.summary
    record["first"], record["verdict"] = first, first["outcome"]
    log(f"audit: {first['outcome']} (eps >= {first.get('epsilon_lower_bound')}, {first['seconds']:.0f} s)"
        + (f": {first['message']}" if first.get("outcome") == "error" and first.get("message") else ""))
    if first["outcome"] in ("violation", "floating-point leak"):
        on_stage("leak size", record)
        record["leak_size"] = st.leak_from_run(entry, run, beta=beta, at_least=leak_samples)
        log(f"leak size: {st.leak_words(record['leak_size'])}")
        if confirm:
            on_stage("confirmation", record)
            second = confirm_run(entry, run.summary, samples=samples, processes=processes, beta=beta, log=log)
            record["confirm"] = second
            if second["outcome"] != first["outcome"]:
                record["verdict"] = "unconfirmed"
            log(f"confirmation run: {second['outcome']} ({second['seconds']:.0f} s)")
    if "adversarial" in stages or "search" in stages:  # one stage: the fixed list, then the search
        budget = st.SEARCH_BUDGET if search_budget is None else int(search_budget)
        on_stage("adversarial", record)
        record["adversarial"] = st.adversarial_stage(entry, beta=beta, budget=budget,
                                                     mechanism=run.mechanism.inner if run.mechanism else None)
        if search_budget is not None:
            record["adversarial"]["search_budget"] = budget
        log(f"adversarial inputs and input-space search: {st.adversarial_words(record)}")
    if "power" in stages and record["verdict"] == "pass":
        on_stage("power", record)
        power = st.power_stage(entry, run_row=run_row, processes=processes, beta=beta)
        if power is not None:
            record["power"] = power
            log(f"power: {'caught' if power['caught'] else 'missed'} (eps >= {power.get('epsilon_lower_bound')})")
    return record


def summarise_reruns(outcomes, beta: float = BETA) -> dict:
    """Whether K audits of one entry accuse it more often than their false-positive rate allows.

    Each run of a correct mechanism reports a violation (or floating-point leak) with probability
    at most ``beta``, independently (fresh seeds; OpenDP's noise is fresh anyway), so the number
    of accusations is at most Binomial(K, beta) in distribution. The p-value is
    ``P(Binomial(K, beta) >= accusations)``; the entry is accused *beyond beta* when it is below
    0.01 (e.g. 2 accusations in 10 runs at beta 0.01).

    Parameters
    ----------
    outcomes : sequence of str
        The outcomes of the K runs (:func:`classify`).
    beta : float
        The false-positive rate of one run.

    Returns
    -------
    dict
        ``k``, ``accusations`` (violations and floating-point leaks), ``errors`` (errors and
        inconclusive runs), ``beta``, ``p_value`` and ``verdict``: ``"within beta"``,
        ``"beyond beta"``, or ``"errors"`` when a run could not be classified as pass or accusation.

    Raises
    ------
    ValueError
        If there are no outcomes, an outcome is unknown or beta is not in (0, 1).
    """
    outcomes = list(outcomes)
    if not outcomes:
        raise ValueError("no reruns to summarise")
    if not 0.0 < beta < 1.0:
        raise ValueError(f"beta must be in (0, 1), got {beta!r}")
    unknown = set(outcomes) - set(OUTCOMES)
    if unknown:
        raise ValueError(f"unknown outcomes {sorted(unknown)}")
    k = len(outcomes)
    accused = sum(o in ("violation", "floating-point leak") for o in outcomes)
    errors = sum(o in ("error", "inconclusive", "not auditable") for o in outcomes)
    p_value = sum(math.comb(k, i) * beta ** i * (1 - beta) ** (k - i) for i in range(accused, k + 1))
    verdict = "errors" if errors else ("beyond beta" if p_value < 0.01 else "within beta")
    return {"k": k, "accusations": accused, "errors": errors, "beta": beta, "p_value": min(1.0, p_value),
            "verdict": verdict}


def rerun_entry(entry: Entry, k: int, *, samples: int | None = None, trials: int | None = None,
                processes: int | str = 1) -> dict:
    """Audit ``entry`` ``k`` times with seeds ``seed, ..., seed + k - 1`` and count the accusations.

    Parameters
    ----------
    entry : Entry
        An auditable entry (meant for one whose guarantee holds exactly).
    k : int
        Number of runs, >= 1.
    samples, trials : int, optional
        The budget of every run (default: the entry's).
    processes : int or "auto"

    Returns
    -------
    dict
        The :func:`summarise_reruns` fields, plus ``key``, ``fingerprint`` (the entry's, with the
        rerun budget), ``samples``, ``trials``, ``seeds``, ``outcomes``, ``epsilon_lower_bounds``,
        ``seconds`` (total wall time), ``ran_at``.

    Raises
    ------
    ValueError
        If ``k < 1`` or the entry is not auditable.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k!r}")
    if entry.not_auditable:
        raise ValueError(f"{entry.key} is not auditable")
    budget = replace(entry.budget, samples=samples or entry.budget.samples, trials=trials or entry.budget.trials)
    small = replace(entry, budget=budget)
    runs = [run_row(small, seed=budget.seed + i, processes=processes).summary for i in range(k)]
    record = {"key": entry.key, "fingerprint": fingerprint(small), "samples": budget.samples,
              "trials": budget.trials, "seeds": [r["seed"] for r in runs], "outcomes": [r["outcome"] for r in runs],
              "epsilon_lower_bounds": [r.get("epsilon_lower_bound") for r in runs],
              "seconds": round(sum(r["seconds"] for r in runs), 1), "ran_at": time.strftime("%Y-%m-%d %H:%M")}
    record.update(summarise_reruns(record["outcomes"]))
    return record

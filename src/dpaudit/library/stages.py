"""The stages a row runs besides its audit: leak size, adversarial inputs, input-space search, power.

Leak size (from the run)
------------------------
A finding is sized on the outputs the audit itself drew on the witness pair
(:class:`~dpaudit.library.runner.RecordingMechanism`), not on a cache or a second run:

* statistically (:func:`leak_from_run`): the largest float grid set
  (:func:`dpaudit.audit.leak_size.size_float_leak`) or range
  (:func:`~dpaudit.audit.leak_size.size_range_leak`) one side reaches and the other does not, chosen
  on half of the outputs and counted on the other half (each at ``beta / 2``), or the audit's own
  region when it held no output of one dataset (:attr:`dpaudit.audit.result.AuditResult.leak_size`),
  whichever certifies the larger delta at the claimed epsilon: ``delta >= P[S | D] - e^eps P[S | D']``
  with confidence ``1 - beta``;
* structurally (:mod:`dpaudit.library.structural`), where the row declares a set one dataset never
  reaches by construction: "no epsilon holds for delta < X", ``X`` a Clopper-Pearson lower bound at
  ``beta`` on ``P[S | reaching]``, counted on the run's outputs of the declared pair (drawn here,
  :data:`STRUCTURAL_SAMPLES` per dataset, when the audit did not draw that pair).

The audit's verdict and each leak statement hold at their own confidence (the audit at ``1 -
beta``, each size at ``1 - beta``; all together at ``1 - 3 beta`` by the union bound): the sizes
reuse the audit's outputs, which changes nothing in either statement's validity, since each is a
bound on a fixed set's probabilities from independent draws (the grid set is chosen on one half
and counted on the other).

Adversarial inputs and the input-space search
---------------------------------------------
:func:`adversarial_stage` runs :func:`dpaudit.audit.adversarial.screen` (the inputs the target
declares, one special value at a time). :func:`input_space_stage` is the call site of the
Hypothesis search of the input space (``dpaudit.search.input_space.search``: several special
values together, per-record argument columns, integer limits, dtypes), run when that module is
installed; its certified witnesses are stored with the row. Each stage spends its own beta.

Power
-----
:func:`power_stage` audits the row's planted-leak twin (:mod:`dpaudit.mechanisms.catalogue.planted`,
noise x0.7) at the row's budget: a pass whose twin is missed has *no power at this budget*.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from .entry import Entry, resolve_mechanism

__all__ = ["ADVERSARIAL_SAMPLES", "LEAK_SAMPLES", "STAGES", "STRUCTURAL_SAMPLES", "adversarial_leaks",
           "adversarial_stage", "adversarial_words", "input_space_stage", "leak_from_run", "leak_words",
           "pair_outputs", "planted_target", "power_budget_note", "power_stage"]

STAGES = ("audit", "adversarial", "search", "power", "accountants")
"""The stages ``dpaudit library audit --stages`` takes (``audit`` always runs; ``accountants`` is
Opacus's accountant check, :mod:`dpaudit.library.accountants`)."""

LEAK_SAMPLES = 20000
"""Outputs per dataset drawn to size a leak when the run's own outputs of the witness pair are not
at hand (they were drawn in other processes)."""

STRUCTURAL_SAMPLES = 2000
"""Outputs per dataset drawn for a structural set's pair when the audit did not draw it."""

ADVERSARIAL_SAMPLES = 1000
"""Outputs per dataset per adversarial input (:func:`dpaudit.audit.adversarial.screen`)."""

SEARCH_BUDGET = 40
"""Pairs the input-space search generates per hunt (its ``budget``)."""


def _dataset(records, dim: int) -> np.ndarray:
    arr = np.asarray(records if records is not None else [], dtype=float)
    return arr.reshape(-1, dim)


def _dim(*datasets) -> int:
    for d in datasets:
        arr = np.asarray(d if d is not None else [], dtype=float)
        if arr.size:
            return arr.reshape(len(arr), -1).shape[1]
    return 1


def pair_outputs(mechanism, d0, d1, *, samples: int, seed: int):
    """Draw ``samples`` outputs of ``mechanism`` on each dataset of a pair (seeded).

    Returns
    -------
    y0, y1 : ndarray, shape (samples, output_dim)

    Raises
    ------
    dpaudit.errors.MechanismError
        If the mechanism fails.
    """
    from ..mechanisms.base import draw

    dim = _dim(d0, d1)
    rng = np.random.default_rng(seed)
    y0 = draw(mechanism, _dataset(d0, dim), samples, rng)
    y1 = draw(mechanism, _dataset(d1, dim), samples, rng, output_dim=y0.shape[1])
    return y0, y1


def _run_outputs(run, d0, d1, *, samples: int, seed: int, at_least: int = 0):
    """The run's outputs on a pair, or fresh draws when the run did not keep them; and where from.

    With ``at_least``, a pair the run drew fewer outputs of is topped up with fresh draws (independent
    outputs of the same mechanism on the same datasets, so the pooled sample is still i.i.d.)."""
    mech = run.mechanism
    dim = _dim(d0, d1)
    inner = mech.inner if mech is not None else None
    memo = run.extra.setdefault("pairs", {})
    key = (_dataset(d0, dim).tobytes(), _dataset(d1, dim).tobytes(), dim)
    if key in memo and len(memo[key][0]) >= at_least:  # the same pair for the grid and the structural set
        return memo[key]
    out = _run_or_drawn(mech, inner, d0, d1, dim, samples=samples, seed=seed, at_least=at_least)
    memo[key] = out
    return out


def _run_or_drawn(mech, inner, d0, d1, dim, *, samples, seed, at_least):
    if mech is not None:
        y0, y1 = mech.drawn(_dataset(d0, dim)), mech.drawn(_dataset(d1, dim))
        if y0 is not None and y1 is not None and len(y0) >= 4 and len(y1) >= 4:
            n = min(len(y0), len(y1))
            y0, y1 = y0[:n], y1[:n]
            if n >= at_least:
                return y0, y1, "run"
            z0, z1 = pair_outputs(inner, d0, d1, samples=at_least - n, seed=seed)
            return np.concatenate([y0, z0]), np.concatenate([y1, z1]), f"run ({n:,}) + drawn ({at_least - n:,})"
    y0, y1 = pair_outputs(inner, d0, d1, samples=max(samples, at_least), seed=seed)
    return y0, y1, "drawn"


def leak_from_run(entry: Entry, run, *, beta: float = 0.01, at_least: int = 0) -> dict:
    """Size the finding of ``run`` (a :class:`~dpaudit.library.runner.RowRun`) on its own outputs.

    Parameters
    ----------
    at_least : int
        Outputs per dataset to size on: when the run drew fewer of the pair (an audit stopped at an
        early stage), fresh draws top them up (``--leak-samples``; 0: the run's outputs only, what
        ``dpaudit test`` costs).

    Returns
    -------
    dict
        ``source`` (``"run"``: the audit's outputs; ``"drawn"``: drawn again because the run's were
        sampled in other processes; ``"run (n) + drawn (m)"``: topped up), ``samples`` (outputs per dataset), ``seconds``, and, when a set
        was certified, ``leak`` (the :class:`~dpaudit.audit.leak_size.LeakSize` fields),
        ``delta_at_claim``, ``epsilon_horizon`` and ``text``; ``structural`` (the
        :class:`~dpaudit.library.structural.StructuralSize` fields and ``text``) for a row that
        declares a structural set.
    """
    from ..audit.leak_size import LeakSize, size_float_leak, size_range_leak
    from .structural import size_structural

    t0 = time.perf_counter()
    g = entry.guarantee
    seed = int(run.summary.get("seed", entry.budget.seed))
    out: dict = {"seed": seed}
    w = run.summary.get("witness") or {}
    if w.get("d0") is not None and w.get("d1") is not None:
        y0, y1, source = _run_outputs(run, w["d0"], w["d1"], samples=LEAK_SAMPLES, seed=seed, at_least=at_least)
        out.update(source=source, samples=int(min(len(y0), len(y1))))
        found = []
        if np.all(np.isfinite(y0)) and np.all(np.isfinite(y1)):
            found = [lk for lk in (size_float_leak(y0, y1, beta=beta / 2, epsilon=g.epsilon),
                                   size_range_leak(y0, y1, beta=beta / 2, epsilon=g.epsilon)) if lk is not None]
            found = [dataclasses.replace(lk, beta=beta) for lk in found]
        own = run.summary.get("result_leak")
        if own:
            found.append(LeakSize.from_dict({k: own[k] for k in (
                "description", "hits_p", "n_p", "hits_q", "n_q", "p_lower", "q_upper", "beta", "column",
                "direction", "grid") if k in own}))
        leak = max(found, key=lambda lk: lk.delta_lower(g.epsilon), default=None)
        if leak is not None:
            out.update(leak=leak.to_dict(), delta_at_claim=leak.delta_lower(g.epsilon),
                       epsilon_horizon=leak.epsilon_horizon(g.delta), text=leak.describe(g.epsilon, g.delta))
    s = entry.structural
    if s is not None:
        d0 = [list(r) for r in s.d0] if s.d0 is not None else w.get("d0")
        d1 = [list(r) for r in s.d1] if s.d1 is not None else w.get("d1")
        if d0 is not None and d1 is not None:
            y0, y1, source = _run_outputs(run, d0, d1, samples=STRUCTURAL_SAMPLES, seed=seed + 7, at_least=at_least)
            size = size_structural(s, y0, y1, beta=beta)
            out["structural"] = {**size.to_dict(), "source": source, "d0": d0, "d1": d1,
                                 "text": size.text(s, g.delta)}
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def leak_words(leak: dict | None) -> str:
    """The leak-size cell of the table (and the CLI's line): the structural statement when there
    is one, else the statistical one."""
    if not leak:
        return "not sized"
    s = leak.get("structural")
    if s and not s.get("refuted"):
        if s.get("always"):
            return "true delta = 1 (by construction)"
        return f"no epsilon for delta < {s['x_lower']:.3g} (by construction)"
    if not leak.get("leak"):
        return "no disjoint grid or range"
    if leak["delta_at_claim"] <= 0.0:
        return "none certified (a finite epsilon)"
    return f"delta >= {leak['delta_at_claim']:.3g} at the claimed epsilon"


def adversarial_stage(entry: Entry, *, samples: int = ADVERSARIAL_SAMPLES, beta: float = 0.01,
                      float_grids: bool = True, mechanism=None) -> dict:
    """Run the adversarial-values screen on ``entry``'s target (:func:`dpaudit.audit.adversarial.screen`).

    Returns
    -------
    dict
        ``samples``, ``seconds``, ``accepts`` (the target's declared note) and ``results`` (one
        :class:`dpaudit.audit.adversarial.ScreenResult` dict per input tried).
    """
    from ..audit.adversarial import screen

    mech = mechanism if mechanism is not None else resolve_mechanism(entry)
    g = entry.guarantee
    t0 = time.perf_counter()
    results = screen(mech, epsilon=g.epsilon, delta=g.delta, samples=samples, beta=beta, seed=entry.budget.seed,
                     float_grids=float_grids)
    accepts = getattr(mech, "accepts", None)
    return {"samples": samples, "seconds": round(time.perf_counter() - t0, 1),
            "accepts": getattr(accepts, "note", "") or "every kind (no declaration)",
            "results": [r.to_dict() for r in results]}


def adversarial_leaks(rec: dict | None) -> list[str]:
    """The adversarial input kinds (``"nan"``, ...) on which ``rec``'s screen certified a leak."""
    adv = (rec or {}).get("adversarial") or {}
    return [r["kind"] for r in adv.get("results", ()) if r["status"] == "leak"]


def adversarial_words(rec: dict) -> str:
    """The adversarial-inputs cell: how many inputs were tried, rejected, leaked."""
    adv = rec.get("adversarial")
    if not adv:
        return "not run"
    res = adv["results"]
    ours = [r["kind"] for r in res if r["status"] == "not reached" or (
        r["status"] == "rejected" and r["detail"].startswith("dpaudit's adapter"))]
    rejected = [r["kind"] for r in res if r["status"] == "rejected" and r["kind"] not in ours]
    leaks = [r["kind"] for r in res if r["status"] == "leak"]
    parts = [f"{len(res) - len(ours)} tried"]
    if ours:
        parts.append(f"not reached (the row's query raised): {', '.join(ours)}")
    if rejected:
        parts.append(f"rejected: {', '.join(rejected)}")
    parts.append(f"**leak**: {', '.join(leaks)}" if leaks else "no leak")
    return "; ".join(parts)


def input_space_stage(entry: Entry, *, beta: float = 0.01, mechanism=None, budget: int = SEARCH_BUDGET,
                      seed: int | None = None) -> dict | None:
    """The call site of the input-space search (``dpaudit.search.input_space.search``) for a row.

    The search generates datasets the target declares it accepts (several special values with
    ordinary ones, per-record argument columns, bounds at the type limits, dtypes) with Hypothesis,
    shrinks each failing pair and certifies it on fresh outputs at ``beta`` over all candidates.

    Returns
    -------
    dict or None
        ``seconds``, ``summary`` (one line), ``witnesses`` (each certified witness as a dict) and
        ``result`` (the search's JSON form); None when the search module is not installed.
    """
    try:
        from ..search import input_space
    except ImportError:
        return None
    mech = mechanism if mechanism is not None else resolve_mechanism(entry)
    g = entry.guarantee
    t0 = time.perf_counter()
    res = input_space.search(mech, epsilon=g.epsilon, delta=g.delta, beta=beta, budget=budget,
                             seed=entry.budget.seed if seed is None else seed)
    witnesses = [w.to_dict() if hasattr(w, "to_dict") else {"text": str(w)} for w in getattr(res, "witnesses", ())]
    return {"seconds": round(time.perf_counter() - t0, 1), "witnesses": witnesses,
            "summary": f"{len(witnesses)} certified witness(es)",
            "result": res.to_dict() if hasattr(res, "to_dict") else None}


def planted_target(entry: Entry) -> str | None:
    """The planted-leak twin of ``entry``'s target (:mod:`dpaudit.mechanisms.catalogue.planted`), or None."""
    from ..mechanisms.catalogue import planted

    return planted.TARGETS.get(entry.target or "")


def power_stage(entry: Entry, *, run_row, processes: int | str = 1, samples: int | None = None,
                trials: int | None = None, beta: float = 0.01) -> dict | None:
    """Audit the planted-leak twin of ``entry`` at ``entry``'s budget and claim: caught or not.

    Parameters
    ----------
    run_row : callable
        :func:`dpaudit.library.runner.run_row` (passed in: the runner calls the stages).
    samples, trials : int, optional
        A smaller twin budget than the row's (stated with the record as ``budget``: a catch at a
        smaller budget is a catch, a miss there is not comparable to the row's budget).

    Returns
    -------
    dict or None
        The twin run's summary plus ``target``, ``caught`` (a violation or floating-point leak was
        reported) and ``budget``; None when the entry has no twin.
    """
    twin = planted_target(entry)
    if twin is None:
        return None
    budget = dataclasses.replace(entry.budget, samples=samples or entry.budget.samples,
                                 trials=trials or entry.budget.trials)
    row = run_row(dataclasses.replace(entry, target=twin, budget=budget, env=None, structural=None),
                  processes=processes, beta=beta).summary
    row["target"] = twin
    row["caught"] = row["outcome"] in ("violation", "floating-point leak")
    row["budget"] = {"samples": budget.samples, "trials": budget.trials}
    return row


def power_budget_note(entry: Entry, power: dict) -> str:
    """The words a power result carries when its twin ran at a smaller budget than the row's ("" otherwise)."""
    b = power.get("budget") or {}
    samples, trials = b.get("samples", entry.budget.samples), b.get("trials", entry.budget.trials)
    if (samples, trials) == (entry.budget.samples, entry.budget.trials):
        return ""
    return f"at {samples:,} x {trials}, a smaller budget than the row's {entry.budget.samples:,} x {entry.budget.trials}"

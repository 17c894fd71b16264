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
:func:`adversarial_stage` runs :func:`dpaudit.audit.adversarial.screen_stage`, the adversarial stage
of ``dpaudit test --adversarial``: the fixed adversarial list (one special value at a time) first, then
the Hypothesis search of the input space the target declares (several special values together,
per-record argument columns, bounds at the type limits, dtypes), every candidate certified on fresh
outputs, all statements together at the stage's beta. A leak of the fixed list is the finding
``ROW@KIND`` (``diffprivlib.mean@nan``); one the search itself built is ``ROW@search:FAMILY``.

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
           "adversarial_stage", "adversarial_words", "input_space_stage", "search_leaks", "leak_from_run", "leak_words",
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
"""Pairs the input-space search generates per hunt (its ``budget``; ``dpaudit test --adversarial`` uses
:data:`dpaudit.audit.adversarial.SEARCH_BUDGET`)."""


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
                      float_grids: bool = True, mechanism=None, budget: int = SEARCH_BUDGET) -> dict:
    """The adversarial stage of a row: :func:`dpaudit.audit.adversarial.screen_stage`, as ``dpaudit test
    --adversarial`` runs it (the fixed adversarial list first, then the Hypothesis search of the input
    space the target declares: several special values together, per-record argument columns, bounds at
    the type limits, dtypes), every certified statement at ``beta`` together.

    Parameters
    ----------
    entry : Entry
    samples : int
        Fresh outputs per dataset for each certification.
    beta : float
        The stage's failure probability.
    float_grids : bool
        Ignored (kept for callers of the one-value-at-a-time screen): the staged screen leaves float
        grids to the trials.
    mechanism : Mechanism, optional
        The row's resolved target (default: :func:`~dpaudit.library.entry.resolve_mechanism`).
    budget : int
        Pairs Hypothesis generates per hunt.

    Returns
    -------
    dict
        :func:`~dpaudit.audit.adversarial.screen_stage`'s dict (``beta``, ``samples``, ``accepts``,
        ``seconds``, ``results``: one per certified candidate, then one ``pass`` line per family,
        ``search``), or, when the target cannot be searched (e.g. a structured relation), ``results``
        empty and ``not_searched`` with the reason.
    """
    from ..audit.adversarial import screen_stage

    del float_grids
    mech = mechanism if mechanism is not None else resolve_mechanism(entry)
    g = entry.guarantee
    relation = getattr(mech, "neighbouring", None)
    t0 = time.perf_counter()
    _warm_up(mech)
    try:
        stage = screen_stage(mech, relation, epsilon=g.epsilon, delta=g.delta, beta=beta, seed=entry.budget.seed,
                             samples=samples, budget=budget, search_options=getattr(mech, "search_options", None))
    except ValueError as exc:  # a relation or declaration the search does not handle: said, not hidden
        accepts = getattr(mech, "accepts", None)
        return {"beta": float(beta), "samples": int(samples), "seconds": round(time.perf_counter() - t0, 1),
                "accepts": getattr(accepts, "note", "") or "every kind (no declaration)", "results": [],
                "not_searched": str(exc)}
    fixed = _fixed_kinds(mech, relation)
    for r in stage["results"]:
        if r.get("family"):
            r["source"] = "fixed list" if r["kind"] in fixed else "search"
    return stage


def _fixed_kinds(mech, relation) -> set:
    """The kinds of the fixed adversarial list for ``mech`` (:func:`dpaudit.search.adversarial.adversarial_pairs`:
    the adversarial values it accepts and the pairs it declares); a certified candidate of another kind was
    built by the search (a Hypothesis draw or one of its seed examples such as ``"3 x nan"``)."""
    from ..search.adversarial import AcceptedInputs, adversarial_pairs

    try:
        accepts = getattr(mech, "accepts", None) or AcceptedInputs()
        return {p.kind for p in adversarial_pairs(relation, accepts)}
    except (ValueError, TypeError):
        return set()


def _warm_up(mech) -> None:
    """Call ``mech`` once on its first witness pair's D0, outside the search's per-pair time limit: a
    target whose first call imports a framework (Opacus: torch) would otherwise have that import cut
    by the limit's SIGALRM, leaving the framework half-registered and every later pair rejected."""
    pairs = getattr(mech, "witness_pairs", ()) or ()
    if not pairs:
        return
    try:
        d0 = pairs[0][0]
        mech.sample(d0, 1, np.random.default_rng(0))
    except Exception:  # noqa: BLE001 - the search reports what the target does on its own inputs
        pass


def _search_family(r: dict) -> str | None:
    """The search family of a leak found by the search itself (``None`` for a pair of the fixed list,
    whose ``kind`` is one adversarial value such as ``"nan"`` or a pair the target declares). Records
    written by :func:`adversarial_stage` say which (``source``); for others, a kind that names a family or
    holds a space (the search's seed examples, ``"3 x nan"``) is the search's."""
    from ..search.input_space import FAMILIES

    if not r.get("family"):
        return None
    if "source" in r:
        return r["family"] if r["source"] == "search" else None
    return r["family"] if (r["kind"] in FAMILIES or " " in r["kind"]) else None


def adversarial_leaks(rec: dict | None) -> list[str]:
    """The fixed-list adversarial kinds (``"nan"``, ...) on which ``rec``'s adversarial stage certified a
    leak (one special value replacing an ordinary one); the search's own finds are :func:`search_leaks`."""
    adv = (rec or {}).get("adversarial") or {}
    return list(dict.fromkeys(r["kind"] for r in adv.get("results", ())
                              if r["status"] == "leak" and _search_family(r) is None))


def search_leaks(rec: dict | None) -> list[dict]:
    """The leaks the input-space search itself certified in ``rec`` (dicts with ``family``,
    ``input_class``, ``description``, ``detail``, ``d0``, ``d1``), from the adversarial stage, or from
    the ``search`` field of records written before the staged screen."""
    rec = rec or {}
    out = [r for r in (rec.get("adversarial") or {}).get("results", ())
           if r["status"] == "leak" and _search_family(r) is not None]
    out += [dict(w, family=w.get("family") or w.get("input_class") or "input")
            for w in (rec.get("search") or {}).get("witnesses", ())]
    return out


def adversarial_words(rec: dict) -> str:
    """The adversarial-inputs cell: what was tried (pairs searched, families), rejected, leaked."""
    adv = rec.get("adversarial")
    if not adv:
        return "not run"
    if adv.get("not_searched"):
        return f"not searched: {adv['not_searched']}"
    res = adv["results"]
    summary = adv.get("search")
    if summary is None:  # a record of the one-value-at-a-time screen
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
    parts = [f"{summary.get('pairs_tried', 0)} pairs searched ({', '.join(summary.get('families', ())) or 'no family'})"]
    if summary.get("rejected"):
        parts.append(f"{summary['rejected']} rejected by the library")
    leaks = list(dict.fromkeys(adversarial_leaks(rec) + [f"search:{r['family']}" for r in search_leaks(rec)]))
    parts.append(f"**leak**: {', '.join(leaks)}" if leaks else "no leak")
    return "; ".join(parts)


def input_space_stage(entry: Entry, *, beta: float = 0.01, mechanism=None, budget: int = SEARCH_BUDGET,
                      seed: int | None = None) -> dict | None:
    """The input-space search alone (:func:`dpaudit.audit.input_space.search`) for a row, without the
    fixed adversarial list; :func:`adversarial_stage` runs both and is what ``--stages search`` runs.

    Returns
    -------
    dict
        ``seconds``, ``summary`` (one line), ``witnesses`` (each certified leak as a dict) and
        ``result`` (the search's JSON form).
    """
    from ..audit.input_space import search

    mech = mechanism if mechanism is not None else resolve_mechanism(entry)
    g = entry.guarantee
    t0 = time.perf_counter()
    res = search(mech, epsilon=g.epsilon, delta=g.delta, beta=beta, budget=budget, fixed=False,
                 seed=entry.budget.seed if seed is None else seed)
    witnesses = [w.to_dict() for w in res.witnesses]
    return {"seconds": round(time.perf_counter() - t0, 1), "witnesses": witnesses,
            "summary": f"{len(witnesses)} certified witness(es)", "result": res.to_dict()}


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

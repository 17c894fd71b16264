"""The adversarial-values stage: run a target on the edges of what its API accepts.

For every adversarial pair of :func:`dpaudit.search.adversarial.adversarial_pairs` (NaN, +-inf,
-0.0, subnormals, the largest doubles, values outside the declared bounds, integer dtypes, the
empty dataset; those the target declares in its ``accepts``), :func:`screen` draws outputs on both
datasets and reports one of

* ``rejected``: the library raised on an input (a pass for that input, not an error of the audit;
  the message is kept);
* ``not reached``: dpaudit's own adapter or the target's query raised before the library saw the
  input (e.g. an infinite category index): the input was not tried on the library;
* ``leak``: an output set that one dataset reaches and the other, on held-out outputs, does not
  (a non-finite output, an exact output value, or a float grid:
  :func:`dpaudit.audit.leak_size.size_float_leak`) certifies a delta above the claim at the
  claimed epsilon (:class:`~dpaudit.audit.leak_size.LeakSize`, confidence ``1 - beta``);
* ``pass``: nothing certified (not a proof: the full distributional testers are not run here).

A target may also declare structural pairs of its privacy-unit relation
(:attr:`~dpaudit.datasets.AcceptedInputs.unit_pairs`: a unit contributing more than the declared
contribution bounds, a unit alone in an otherwise empty partition, the empty dataset against one
unit); on those the screen adds a distributional check (:func:`_threshold_leak`: one half-line
chosen on half of the outputs, counted on the other half), since a unit the library fails to bound
moves the outputs rather than giving values the other side never gives.

The screen is cheap next to an audit (a few thousand outputs per input) and sound: each ``leak`` is a
certified lower bound on delta, Bonferroni-corrected over the checks of its input.

Any target can be screened: ``dpaudit test TARGET --adversarial`` and ``dpaudit.audit(...,
adversarial=True)`` run :func:`screen_stage` before the trials at :data:`ADVERSARIAL_BETA_SHARE` of
beta (the trials get the rest), and a certified leak makes the audit's verdict a violation of kind
``"adversarial input"``; or call :func:`screen` on a user's mechanism directly::

    from dpaudit.audit.adversarial import screen
    from dpaudit.datasets import AddRemove, Domain
    from dpaudit.mechanisms.base import CallableMechanism

    mech = CallableMechanism(my_function, pass_rng=True)  # my_function(dataset, rng) -> output
    for r in screen(mech, AddRemove(Domain((0.0,), (1.0,))), epsilon=1.0, beta=0.01):
        print(r.kind, r.status, r.detail)
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass

import numpy as np

from ..bounds import clopper_pearson_lower, clopper_pearson_upper
from ..errors import MechanismError
from ..search.adversarial import AcceptedInputs, adversarial_pairs
from .leak_size import LeakSize, certify_set, size_float_leak

__all__ = ["ADVERSARIAL_BETA_SHARE", "ADVERSARIAL_SAMPLES", "ScreenResult", "certify_pair", "screen", "screen_pair",
           "screen_stage",
           "stage_advice", "stage_lines"]


@dataclass(frozen=True)
class ScreenResult:
    """The outcome of one adversarial input.

    Attributes
    ----------
    kind : str
        The adversarial kind (:data:`dpaudit.search.adversarial.KINDS`).
    description : str
        How the pair differs.
    status : str
        ``"rejected"``, ``"not reached"``, ``"leak"`` or ``"pass"``.
    detail : str
        The exception (who raised and its message) or the leak's sentence, or what was seen.
    leak : LeakSize or None
        The certified set of a ``leak``.
    """

    kind: str
    description: str
    status: str
    detail: str
    leak: LeakSize | None = None

    def to_dict(self) -> dict:
        """Plain-JSON form."""
        return {"kind": self.kind, "description": self.description, "status": self.status, "detail": self.detail,
                "leak": self.leak.to_dict() if self.leak else None}


def _who_raised(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    last = frames[-1].filename if frames else ""
    return "dpaudit's adapter" if "/dpaudit/" in last and "site-packages" not in last else "the library"


def _draw(mechanism, dataset: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    # NaN/inf outputs are the evidence here: library adapters and per-call functions
    # (CallableMechanism) return them from sample_raw instead of refusing them.
    sample = getattr(mechanism, "sample_raw", None) or mechanism.sample
    return np.asarray(sample(dataset, n, rng), dtype=float).reshape(n, -1)


def _nonfinite_leak(y0, y1, beta, epsilon) -> LeakSize | None:
    best = None
    for label, test in (("a NaN", np.isnan), ("+inf", lambda a: a == np.inf), ("-inf", lambda a: a == -np.inf)):
        h0, h1 = int(test(y0).any(axis=1).sum()), int(test(y1).any(axis=1).sum())
        for direction, (hp, np_, hq, nq) in (("P||Q", (h0, len(y0), h1, len(y1))), ("Q||P", (h1, len(y1), h0, len(y0)))):
            if hp and not hq:
                leak = certify_set(hp, np_, hq, nq, beta=beta / 6, description=f"outputs holding {label}",
                                   direction=direction)
                if best is None or leak.delta_lower(epsilon) > best.delta_lower(epsilon):
                    best = leak
    return best


def _atom_leak(y0, y1, beta, epsilon) -> LeakSize | None:
    """Exact output values seen twice on one side's first half and never on the other's first half,
    counted on the second halves."""
    h0, h1 = len(y0) // 2, len(y1) // 2
    key0 = [r.tobytes() for r in np.ascontiguousarray(y0)]
    key1 = [r.tobytes() for r in np.ascontiguousarray(y1)]
    best = None
    for direction, (kp, kq, sp, sq) in (("P||Q", (key0, key1, h0, h1)), ("Q||P", (key1, key0, h1, h0))):
        seen_q = set(kq[:sq])
        counts: dict = {}
        for k in kp[:sp]:
            counts[k] = counts.get(k, 0) + 1
        atoms = {k for k, c in counts.items() if c >= 2 and k not in seen_q}
        if not atoms:
            continue
        hp = sum(k in atoms for k in kp[sp:])
        hq = sum(k in atoms for k in kq[sq:])
        values = sorted(np.frombuffer(k, dtype=float).tolist() for k in atoms)[:3]
        more = f" and {len(atoms) - 3} more" if len(atoms) > 3 else ""
        leak = certify_set(hp, len(kp) - sp, hq, len(kq) - sq, beta=beta / 2,
                           description=f"the output values {values}{more}", direction=direction)
        if best is None or leak.delta_lower(epsilon) > best.delta_lower(epsilon):
            best = leak
    return best


THRESHOLD_GRID = 64
"""Candidate thresholds per output coordinate of :func:`_threshold_leak` (quantiles of the pooled
selection halves)."""
SELECTION_BETA = 0.1
"""Level of the Clopper-Pearson bounds that rank :func:`_threshold_leak`'s candidate sets on the
selection halves (only the ranking: the chosen set is certified on the other halves at the caller's beta)."""


def _threshold_leak(y0, y1, beta, epsilon) -> LeakSize | None:
    """The best half-line ``{y_j > t}`` or ``{y_j < t}`` (finite outputs only) chosen on the first
    halves of both samples by its pessimistic ``P - e^epsilon Q`` (:data:`SELECTION_BETA`), then
    counted on the second halves (one set certified, so no correction for the choice): a
    distributional check for the declared privacy-unit pairs, whose leak (a unit the library fails to bound) moves the outputs rather than
    giving values the other side never gives."""
    h0, h1 = len(y0) // 2, len(y1) // 2
    a0, a1 = y0[:h0], y1[:h1]
    scale = float(np.exp(epsilon))
    best = None
    for j in range(y0.shape[1]):
        pooled = np.concatenate([a0[:, j], a1[:, j]])
        pooled = pooled[np.isfinite(pooled)]
        if pooled.size == 0:
            continue
        ts = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, THRESHOLD_GRID + 1)))
        for tail, op in ((">", np.greater), ("<", np.less)):
            k0 = op(a0[:, j][:, None], ts[None, :]).sum(axis=0)
            k1 = op(a1[:, j][:, None], ts[None, :]).sum(axis=0)
            for direction, (kp, n_p, kq, n_q) in (("P||Q", (k0, h0, k1, h1)), ("Q||P", (k1, h1, k0, h0))):
                # choose by a pessimistic score on the selection halves (Clopper-Pearson at 0.1), which
                # prefers sets the other side misses over noisy differences
                score = clopper_pearson_lower(kp, n_p, SELECTION_BETA) - scale * clopper_pearson_upper(kq, n_q, SELECTION_BETA)
                k = int(np.argmax(score))
                if best is None or score[k] > best[0]:
                    best = (float(score[k]), j, tail, op, float(ts[k]), direction)
    if best is None or best[0] <= 0.0:
        return None
    _, j, tail, op, t, direction = best
    s0, s1 = int(op(y0[h0:, j], t).sum()), int(op(y1[h1:, j], t).sum())
    n0, n1 = len(y0) - h0, len(y1) - h1
    hp, np_, hq, nq = (s0, n0, s1, n1) if direction == "P||Q" else (s1, n1, s0, n0)
    return certify_set(hp, np_, hq, nq, beta=beta, description=f"outputs with coordinate {j} {tail} {t:.6g}",
                       column=j, direction=direction)


def screen_pair(mechanism, pair, *, samples: int, rng: np.random.Generator, epsilon: float, delta: float = 0.0,
                beta: float = 0.01, float_grids: bool = True) -> ScreenResult:
    """Run one adversarial pair and classify it (see the module docstring).

    Parameters
    ----------
    mechanism : Mechanism
        Anything with ``sample(dataset, n, rng)``.
    pair : AdversarialPair
    samples : int
        Outputs per dataset (>= 8).
    rng : numpy.random.Generator
    epsilon, delta : float
        The claimed guarantee.
    beta : float
        Failure probability of the certified bound (split over the three checks; four on a
        structural pair, which adds :func:`_threshold_leak`).
    float_grids : bool
        Also look for float grids one side misses (off for a target already known to leak
        through its float grid on ordinary inputs: the screen would find that leak again).

    Returns
    -------
    ScreenResult

    Raises
    ------
    ValueError
        If samples < 8 or beta is not in (0, 1).
    """
    if samples < 8:
        raise ValueError(f"samples must be at least 8, got {samples!r}")
    if not 0.0 < beta < 1.0:
        raise ValueError(f"beta must be in (0, 1), got {beta!r}")
    try:
        y0 = _draw(mechanism, pair.d0, samples, rng)
        y1 = _draw(mechanism, pair.d1, samples, rng)
    except Exception as exc:  # a rejected input: a pass for that input
        if isinstance(exc, MechanismError) and exc.__cause__ is not None:
            exc = exc.__cause__  # a per-call function raised: report its own exception
        msg = str(exc).splitlines()[0][:160] if str(exc) else ""
        who = _who_raised(exc)
        status = "not reached" if who == "dpaudit's adapter" else "rejected"
        return ScreenResult(pair.kind, pair.description, status, f"{who} raised {type(exc).__name__}: {msg}")
    if y0.shape[1] != y1.shape[1]:
        return ScreenResult(pair.kind, pair.description, "leak",
                            f"outputs of dimension {y0.shape[1]} on D0 and {y1.shape[1]} on D1: the shape tells them apart")
    structural = getattr(pair, "structural", False)
    checks = 4 if structural else 3  # a declared unit pair adds the distributional check
    leaks = [_nonfinite_leak(y0, y1, beta / checks, epsilon), _atom_leak(y0, y1, beta / checks, epsilon)]
    finite0, finite1 = np.isfinite(y0).all(axis=1), np.isfinite(y1).all(axis=1)
    if float_grids and finite0.sum() >= 8 and finite1.sum() >= 8:
        leaks.append(size_float_leak(y0[finite0], y1[finite1], beta=beta / checks, epsilon=epsilon))
    if structural:
        leaks.append(_threshold_leak(y0, y1, beta / checks, epsilon))
    leaks = [lk for lk in leaks if lk is not None]
    best = max(leaks, key=lambda lk: lk.delta_lower(epsilon), default=None)
    if best is not None and best.delta_lower(epsilon) > delta:
        from dataclasses import replace

        best = replace(best, beta=beta)  # the checks share beta (Bonferroni)
        return ScreenResult(pair.kind, pair.description, "leak", best.describe(epsilon, delta), best)
    nonfinite = int((~finite0).sum() + (~finite1).sum())
    seen = f"{nonfinite} non-finite outputs of {2 * samples}" if nonfinite else "finite outputs"
    return ScreenResult(pair.kind, pair.description, "pass", f"nothing certified ({seen})")


def screen(mechanism, relation=None, accepts: AcceptedInputs | None = None, *, epsilon: float, delta: float = 0.0,
           samples: int = 2000, beta: float = 0.01, seed: int = 0, float_grids: bool = True) -> list:
    """Screen ``mechanism`` on every adversarial input it accepts.

    Parameters
    ----------
    mechanism : Mechanism
        The target; its ``neighbouring`` and ``accepts`` attributes are used when ``relation`` or
        ``accepts`` are not given.
    relation : AddRemove or Replace, optional
    accepts : AcceptedInputs, optional
        The declared accepted set (default: the target's ``accepts``, else every kind).
    epsilon, delta : float
        The claimed guarantee.
    samples : int
        Outputs per dataset per input.
    beta : float
        Failure probability of the whole screen (split evenly over the inputs).
    seed : int
        Seed of the generator passed to the mechanism.
    float_grids : bool
        Passed to :func:`screen_pair`.

    Returns
    -------
    list of ScreenResult
        One per adversarial input, in :data:`~dpaudit.search.adversarial.KINDS` order.

    Raises
    ------
    ValueError
        If no relation is given and the mechanism carries none.
    """
    relation = relation if relation is not None else getattr(mechanism, "neighbouring", None)
    if relation is None:
        raise ValueError("screen needs a relation: pass relation= or set the mechanism's neighbouring hint")
    accepts = accepts if accepts is not None else getattr(mechanism, "accepts", None)
    pairs = adversarial_pairs(relation, accepts)
    rng = np.random.default_rng(seed)
    level = beta / max(1, len(pairs))
    out = []
    for p in pairs:
        r = screen_pair(mechanism, p, samples=samples, rng=rng, epsilon=epsilon, delta=delta, beta=level,
                        float_grids=float_grids)
        if r.leak is not None:  # each input's bound at beta / inputs: all hold together at beta
            from dataclasses import replace

            leak = replace(r.leak, beta=beta)
            r = replace(r, leak=leak, detail=leak.describe(epsilon, delta))
        out.append(r)
    return out


ADVERSARIAL_SAMPLES = 1000
"""Outputs per dataset per adversarial input of :func:`screen_stage` (as the library table's stage)."""

ADVERSARIAL_BETA_SHARE = 0.1
"""The share of an audit's beta spent on the adversarial stage (``dpaudit test --adversarial``); the
trials are tested at the rest, so a correct mechanism is accused with probability at most beta in
all (union bound)."""

ADVERSARIAL_SPAWN_KEY = 2**32 + 1
"""Spawn key of the adversarial stage's random stream under the audit's root seed (trials use keys
below 2**32, the tester's peek 2**32)."""


def certify_pair(mechanism, pair, *, samples: int, rng, epsilon: float, delta: float, beta: float) -> ScreenResult:
    """Certify one candidate pair of the input-space search on ``samples`` fresh outputs per dataset:
    :func:`screen_pair` with its distributional check (a ``structural=True`` pair) and without float grids
    (the certification of :func:`dpaudit.audit.input_space.search` and :func:`screen_stage`).

    Parameters
    ----------
    mechanism : Mechanism
    pair : AdversarialPair
    samples : int
        Outputs per dataset (>= 8).
    rng : numpy.random.Generator
        A stream the search never drew from.
    epsilon, delta : float
        The claim.
    beta : float
        Failure probability of the certified bound (split over the screen's checks).

    Returns
    -------
    ScreenResult
    """
    return screen_pair(mechanism, pair, samples=samples, rng=rng, epsilon=epsilon, delta=delta, beta=beta,
                       float_grids=False)


SEARCH_BUDGET = 60
"""Pairs Hypothesis generates per hunt in :func:`screen_stage` (:func:`dpaudit.audit.input_space.search`)."""


def screen_stage(mechanism, relation, *, epsilon: float, delta: float = 0.0, beta: float, seed: int,
                 samples: int = ADVERSARIAL_SAMPLES, accepts: AcceptedInputs | None = None, given=(),
                 search: bool = True, budget: int = SEARCH_BUDGET, search_options: dict | None = None) -> dict:
    """The adversarial stage of an audit: the input-space search (:func:`dpaudit.audit.input_space.search`)
    on stream :data:`ADVERSARIAL_SPAWN_KEY` of ``seed``, the fixed adversarial list first.

    The search looks for several special values together with ordinary records, per-record argument
    columns, bounds at the type limits and dtypes, as the target's ``accepts.space`` declares, and
    certifies what it finds on fresh outputs (non-finite outputs, exact values, half-lines; float grids
    are left to the trials, so that the float leak of a textbook Laplace on ordinary records is not
    reported as an adversarial-input one).

    Parameters
    ----------
    mechanism : Mechanism
    relation : AddRemove or Replace
        The audit's relation (its domain gives the default record layout and bounds).
    epsilon, delta : float
        The claimed guarantee.
    beta : float
        The stage's failure probability (every certified leak holds together at ``1 - beta``).
    seed : int
        The audit's root seed.
    samples : int
        Fresh outputs per dataset for each certification.
    accepts : AcceptedInputs, optional
        Default: the mechanism's ``accepts``, else every kind.
    given : sequence of (d0, d1)
        Pairs the user stated (e.g. ``--pairs`` holding NaN), certified first.
    search : bool
        Run the search (False: only the given pairs are certified).
    budget : int
        Pairs generated per hunt.
    search_options : dict, optional
        Further settings of :func:`~dpaudit.search.input_space.explore` (``samples``,
        ``certify_samples`` (overrides ``samples``), ``pair_timeout``, ``max_seconds``) for a target
        whose calls are slow; stated in the result's ``search`` dict as ``options``.

    Returns
    -------
    dict
        ``beta``, ``samples``, ``accepts`` (the declaration's note), ``seconds``, ``results`` (one
        dict per certified candidate, :meth:`~dpaudit.search.input_space.CertifiedCandidate.to_dict`,
        then one ``pass`` line per family that certified nothing) and ``search`` (what the search
        did: families, ``max_candidates``, pairs, calls, rejections, hunts), plain JSON (the
        ``adversarial`` field of :class:`~dpaudit.audit.result.AuditResult`). When no neighbouring
        pair fits the relation's sizes (:func:`dpaudit.search.adversarial.pair_sizes`, e.g.
        add/remove at a fixed size), nothing is run: ``results`` holds one ``"not searched"`` line,
        ``search`` is None and ``not_searched`` says why (never reported as a pass).

    Raises
    ------
    ValueError
        As :func:`~dpaudit.audit.input_space.search` (e.g. a structured relation).
    """
    from ..search.adversarial import pair_sizes
    from ..search.input_space import FAMILIES, explore

    stream = np.random.SeedSequence(int(seed), spawn_key=(ADVERSARIAL_SPAWN_KEY,))
    run_seed = int(stream.generate_state(1, np.uint32)[0])
    declared = accepts if accepts is not None else getattr(mechanism, "accepts", None)
    note = getattr(declared, "note", "") or "every kind (no declaration)"
    if getattr(relation, "name", "") in ("add-remove", "replace", "labelled-add-remove", "labelled-replace"):
        try:  # sizes no neighbouring pair fits (add/remove at a fixed size): said, never a silent pass
            pair_sizes(relation)
        except ValueError as exc:
            line = {"kind": "search", "description": "the input-space search", "status": "not searched",
                    "leak": None, "detail": str(exc)}
            return {"beta": float(beta), "samples": int(samples), "accepts": note, "seconds": 0.0, "results": [line],
                    "search": None, "not_searched": str(exc)}
    options = {"certify_samples": samples, **(search_options or {})}
    result = explore(mechanism, relation, declared, certify=certify_pair, epsilon=epsilon, delta=delta, beta=beta,
                     budget=budget, seed=run_seed, given=given, families=None if search else (), **options)
    results = [c.to_dict() for c in result.certified]
    leaked = {c.candidate.family for c in result.witnesses}
    rejected_note = ""
    if result.rejected:
        rejected_note = f"; {result.rejected} rejected: {'; '.join(result.rejections[:2])}, a pass for those inputs"
    for fam in result.families:
        if fam in leaked:
            continue
        tried = sum(h.get("pairs", 0) for h in result.hunts if h["family"] == fam)
        results.append({"kind": fam, "description": FAMILIES[fam], "status": "pass", "leak": None,
                        "family": fam, "input_class": FAMILIES[fam],
                        "detail": f"nothing certified ({tried} pairs searched{rejected_note})"})
    summary = result.to_dict()
    summary.pop("certified")
    space = getattr(declared, "space", None)
    if space is not None and space.note:
        note = f"{note}; input space: {space.note}"
    if search_options:
        summary["options"] = dict(search_options)
    return {"beta": float(beta), "samples": int(options["certify_samples"]), "accepts": note,
            "seconds": round(result.seconds, 2), "results": results, "search": summary}


def stage_lines(stage: dict) -> list:
    """One line per adversarial input of a :func:`screen_stage` dict: ``"nan: leak: <sentence>"``,
    ``"+inf: rejected: the library raised ValueError: ..."``, ``"-0.0: pass: nothing certified ..."``."""
    return [f"{r['kind']}: {r['status']}: " + (f"{r['description']}: " if r["status"] == "leak" else "") + r["detail"]
            for r in stage.get("results", ())]


def stage_advice(stage: dict) -> str:
    """One sentence on the certified adversarial leaks of a :func:`screen_stage` dict (what to do)."""
    leaks = [r for r in stage.get("results", ()) if r["status"] == "leak"]
    if not leaks:
        return ""
    what = []
    for r in leaks[:3]:
        seen = (r.get("leak") or {}).get("description") or "outputs of another shape"
        seen = seen if len(seen) <= 40 else "a set of outputs"
        what.append(f"{seen} on {r['description']}" if r.get("family") else f"{seen} when a record is {r['kind']}")
    more = f" (and {len(leaks) - 3} more inputs)" if len(leaks) > 3 else ""
    return (f"The mechanism releases {'; '.join(what)}{more}, which the neighbouring dataset never gives: "
            "validate and clip inputs before the noise (reject NaN and infinities, clip every record to the "
            "declared bounds, cast to float), or raise on them.")

"""Search the input space a target accepts for a neighbouring pair whose outputs tell the datasets apart.

The adversarial list of :mod:`dpaudit.search.adversarial` tries one special value at a time. Real
bugs of DP libraries need more: several special values in one dataset together with ordinary
records (a NaN-ignoring mean calibrated to the count *with* the NaNs), an argument that carries
per-record data besides the values (weights, labels, partition keys), public bounds near the limits
of the integer and float types with many records at them (sums that wrap around or overflow), the
dtypes an API documents (Casacuberta et al. 2022, "Widespread underestimation of sensitivity in
differentially private libraries and how to fix it"; Mironov 2012). This module searches that space
with Hypothesis (MacIver et al., property-based testing with shrinking) and certifies what it finds.

Two phases, so that every certified statement keeps its confidence:

1. **Search** (no confidence statement, no beta spent). Hypothesis draws pairs from strategies
   built from what the target declares it accepts (:class:`~dpaudit.datasets.InputSpace`: the
   record's columns and their roles, the dtypes, the public bounds and other parameters), in
   *families* (:data:`FAMILIES`): several special values with ordinary ones, per-record argument
   columns, bounds at the type limits, dtypes. Each pair is scored by a cheap statistic on a small
   sample (:func:`quick_evidence`: the plug-in ``P0(S) - e^eps P1(S) - delta`` of sets chosen on
   one half of the outputs and counted on the other half: non-finite outputs, exact values,
   half-lines), Hypothesis' targeted search (``hypothesis.target``) climbs it, and a pair whose
   score passes a threshold on two independent small samples is *failing*: Hypothesis shrinks it to
   a minimal failing pair (fewer records, simpler values). The statistic is memoised per pair, so
   the shrinker sees a deterministic property.
2. **Certification** on **fresh** outputs (a random stream never used by the search): each shrunk
   candidate is run through :func:`dpaudit.audit.adversarial.screen_pair` (non-finite outputs,
   exact values, a half-line chosen on half of the fresh outputs and counted on the other half;
   Clopper-Pearson bounds, :func:`dpaudit.audit.leak_size.certify_set`) at ``beta / K``, where
   ``K`` (:attr:`InputSearchResult.max_candidates`) is the largest number of candidates the search
   can certify, fixed before it starts from the declaration alone: the pairs given by the user,
   plus :data:`HUNTS_PER_FAMILY` hunts per family (after a certified leak the family's next hunt looks
   for the other kind of evidence: outputs the neighbour never gives, or a shifted distribution). The candidate depends only on outputs
   independent of its certification outputs, so each certified bound holds with probability
   ``1 - beta / K`` given the candidate, and all of them together with probability ``1 - beta``
   (union bound), however the search chose them and however many it tried.

A correct mechanism is therefore accused with probability at most ``beta`` whatever the search
does; a rejected input (the library raises) is a pass for that input, as in the screen.

This module is the search (the ``search`` layer: strategies, the statistic, the hunts); the certification
is passed in by the audit layer. Use :func:`dpaudit.audit.input_space.search`::

    from dpaudit.audit.input_space import search
    result = search(mechanism, relation, accepts, epsilon=1.0, delta=0.0, beta=0.01, budget=40, seed=0)
    for w in result.witnesses:          # certified leaks, each with its minimal pair
        print(w.input_class, w.describe_pair(), w.screen.detail)
"""

from __future__ import annotations

import math
import time
import zlib
from dataclasses import dataclass

import numpy as np

from ..datasets import AcceptedInputs
from .input_strategies import Candidate, _pair_strategy, family_names, layout_of, seed_candidates, special_kind

__all__ = ["EVIDENCE", "FAMILIES", "HUNTS_PER_FAMILY", "Candidate", "CertifiedCandidate", "InputSearchResult",
           "PairTimeout", "explore", "family_names", "layout_of", "quick_evidence", "seed_candidates", "special_kind"]

FAMILIES = {
    "specials": "several special values together with ordinary records",
    "columns": "an argument that carries per-record data besides the values",
    "limits": "public bounds near the integer or float type's limit, records at them",
    "dtypes": "a dataset of another dtype the API documents",
}
"""The search's families, in the order run, and the input class each explores."""

EVIDENCE = ("special-output", "distribution")
HUNTS_PER_FAMILY = 3
"""Hunts per family: each ends at its first failing pair (shrunk and certified); a certified kind of
evidence is left out of the family's later hunts, so that a second cause can show."""
"""The two kinds of evidence a hunt looks for: outputs one side never gives (NaN, infinities, another
output shape) and a distribution the claim does not allow (exact values, half-lines)."""

SCORE_THRESHOLD = 0.3
"""A pair fails in the search phase when its plug-in score passes this on the search sample and its
pessimistic score (:data:`CONFIRM_LEVEL`) is positive on :data:`CONFIRM_FACTOR` times as many fresh
outputs (a filter against chance finds, still without any confidence statement)."""

CONFIRM_FACTOR = 8
"""Outputs per dataset of the confirmation, in multiples of the search sample."""

CONFIRM_LEVEL = 0.001
"""Level of the Clopper-Pearson bounds of the confirmation's pessimistic score."""


# ----------------------------------------------------------------------------- the cheap statistic


def quick_evidence(y0: np.ndarray, y1: np.ndarray, epsilon: float, delta: float, level: float | None = None) -> dict:
    """Plug-in scores of the search phase (no confidence statement): for each kind of
    :data:`EVIDENCE`, the largest ``P_hat(S | one) - e^epsilon P_hat(S | other) - delta`` over its sets.

    Sets that need choosing (exact values, half-lines) are chosen on the first half of each sample and
    counted on the second half; the fixed sets (NaN, +inf, -inf outputs) are counted on all of it. A
    difference in output dimension scores 1.

    Parameters
    ----------
    y0, y1 : ndarray, shape (m0, k) and (m1, k')
        Outputs on the two datasets (float, may be non-finite); ``m0, m1 >= 4``.
    epsilon, delta : float
        The claim.
    level : float, optional
        Score each set pessimistically instead: the Clopper-Pearson lower bound on one side's share
        minus ``e^epsilon`` times the upper bound on the other's, each at ``level`` (the search's
        confirmation filter; still no confidence statement, since the sets and pairs are chosen
        many times over).

    Returns
    -------
    dict
        ``kind -> (score, words)`` for ``"special-output"`` and ``"distribution"`` (score -1 when the
        kind has no set).
    """
    out = {"special-output": (-1.0, ""), "distribution": (-1.0, "")}
    if y0.shape[1] != y1.shape[1]:
        out["special-output"] = (1.0, f"outputs of dimension {y0.shape[1]} vs {y1.shape[1]}")
        return out
    scale = math.exp(min(epsilon, 700.0))

    from ..bounds import clopper_pearson_lower, clopper_pearson_upper

    def share(hits, n):
        return hits / n if n else 0.0

    def value(hp, n_p, hq, n_q):
        if not n_p or not n_q:
            return -1.0
        if level is None:
            return share(hp, n_p) - scale * share(hq, n_q) - delta
        return float(clopper_pearson_lower(int(hp), int(n_p), level) - scale * clopper_pearson_upper(int(hq), int(n_q), level)
                     - delta)

    def better(kind, score, words):
        if score > out[kind][0]:
            out[kind] = (float(score), words)

    for words, test in (("NaN outputs", np.isnan), ("+inf outputs", lambda a: a == np.inf),
                        ("-inf outputs", lambda a: a == -np.inf)):
        c0, c1 = int(test(y0).any(axis=1).sum()), int(test(y1).any(axis=1).sum())
        better("special-output", max(value(c0, len(y0), c1, len(y1)), value(c1, len(y1), c0, len(y0))), words)
    h0, h1 = len(y0) // 2, len(y1) // 2
    f0, f1 = np.isfinite(y0).all(axis=1), np.isfinite(y1).all(axis=1)
    if f0.mean() < 0.5 or f1.mean() < 0.5:  # mostly non-finite: that is the other kind of evidence
        return out
    # exact values among finite outputs only (a NaN output is the other kind of evidence)
    k0 = [r.tobytes() if ok else None for r, ok in zip(np.ascontiguousarray(y0), f0)]
    k1 = [r.tobytes() if ok else None for r, ok in zip(np.ascontiguousarray(y1), f1)]
    for kp, kq, sp, sq in ((k0, k1, h0, h1), (k1, k0, h1, h0)):
        counts: dict = {}
        for k in kp[:sp]:
            counts[k] = counts.get(k, 0) + 1
        seen = set(kq[:sq])
        atoms = {k for k, c in counts.items() if c >= 2 and k is not None and k not in seen}
        if atoms:
            hp = sum(k in atoms for k in kp[sp:])
            hq = sum(k in atoms for k in kq[sq:])
            better("distribution", value(hp, len(kp) - sp, hq, len(kq) - sq), "exact output values")
    a0, a1 = y0[:h0][f0[:h0]], y1[:h1][f1[:h1]]
    b0, b1 = y0[h0:], y1[h1:]
    for j in range(y0.shape[1]):
        pooled = np.concatenate([a0[:, j], a1[:, j]])
        if pooled.size < 4:
            continue
        ts = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, 17)))
        for op in (np.greater, np.less):
            s0 = op(a0[:, j][:, None], ts[None, :]).mean(axis=0) if len(a0) else np.zeros(len(ts))
            s1 = op(a1[:, j][:, None], ts[None, :]).mean(axis=0) if len(a1) else np.zeros(len(ts))
            for sp_, sq_, ep, eq in ((s0, s1, b0, b1), (s1, s0, b1, b0)):
                i = int(np.argmax(sp_ - scale * sq_))
                with np.errstate(invalid="ignore"):
                    hp = int((op(ep[:, j], ts[i]) & np.isfinite(ep).all(axis=1)).sum())
                    hq = int((op(eq[:, j], ts[i]) & np.isfinite(eq).all(axis=1)).sum())
                better("distribution", value(hp, len(ep), hq, len(eq)),
                       f"outputs of coordinate {j} {'>' if op is np.greater else '<'} {ts[i]:.4g}")
    return out


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True)
class CertifiedCandidate:
    """One candidate and its certification (:func:`dpaudit.audit.adversarial.screen_pair` on fresh outputs).

    Attributes
    ----------
    candidate : Candidate
    screen : ScreenResult
        ``status`` is ``"leak"`` (a certified bound above the claim at the candidate's share of beta),
        ``"pass"``, ``"rejected"`` or ``"not reached"``.
    search_score : float
        The search-phase plug-in score that made it a candidate (not a confidence statement).
    evidence : str
        The evidence kind the hunt looked for (:data:`EVIDENCE`).
    """

    candidate: Candidate
    screen: object
    search_score: float
    evidence: str

    @property
    def input_class(self) -> str:
        """The family's input class in words (:data:`FAMILIES`), or "a pair given by the user"."""
        return FAMILIES.get(self.candidate.family, "a pair given by the user")

    def describe_pair(self) -> str:
        """The pair as :meth:`Candidate.describe_pair` writes it."""
        return self.candidate.describe_pair()

    def to_dict(self) -> dict:
        """Plain JSON: the screen result's fields plus ``family``, ``input_class``, ``config``,
        ``d0``, ``d1`` (lists; NaN and infinities as strings), ``dtype``, ``search_score``."""
        c = self.candidate
        d = self.screen.to_dict()
        d.update(family=c.family, input_class=self.input_class, evidence=self.evidence,
                 config={k: _jsonable(v) for k, v in c.config}, dtype=str(c.d0.dtype),
                 d0=_jsonable(c.d0.tolist()), d1=_jsonable(c.d1.tolist()), search_score=self.search_score)
        return d


def _jsonable(v):
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)
    if isinstance(v, float) and v == 0.0 and math.copysign(1.0, v) < 0:
        return "-0.0"
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    return repr(v)


@dataclass(frozen=True)
class InputSearchResult:
    """What :func:`search` did and certified.

    Attributes
    ----------
    certified : tuple of CertifiedCandidate
        Every candidate certified, in order (at most :attr:`max_candidates`).
    families : tuple of str
        The families searched.
    max_candidates : int
        ``K``, fixed before the search: the given pairs plus :data:`HUNTS_PER_FAMILY` hunts per family. Each candidate is
        certified at ``beta / K``.
    beta : float
        The failure probability of all certified statements together.
    pairs_tried : int
        Distinct pairs the search phase ran (each on ``samples`` outputs per dataset, confirmations
        on four times as many).
    calls : int
        Calls of the mechanism (outputs drawn) in both phases.
    rejected : int
        Pairs on which the target raised (a pass for those inputs).
    rejections : tuple of str
        The first distinct messages of those exceptions.
    seconds : float
        Wall time of the whole search.
    samples, certify_samples : int
        Outputs per dataset in the search phase and in the certification.
    """

    certified: tuple
    families: tuple
    max_candidates: int
    beta: float
    pairs_tried: int
    calls: int
    rejected: int
    rejections: tuple
    seconds: float
    samples: int
    certify_samples: int
    hunts: tuple = ()

    @property
    def witnesses(self) -> tuple:
        """The certified leaks (candidates whose screen status is ``"leak"``)."""
        return tuple(c for c in self.certified if c.screen.status == "leak")

    def to_dict(self) -> dict:
        """Plain JSON of the whole search."""
        return {"families": list(self.families), "max_candidates": self.max_candidates, "beta": self.beta,
                "pairs_tried": self.pairs_tried, "calls": self.calls, "rejected": self.rejected,
                "rejections": list(self.rejections), "seconds": round(self.seconds, 2), "samples": self.samples,
                "certify_samples": self.certify_samples, "hunts": list(self.hunts),
                "certified": [c.to_dict() for c in self.certified]}


# ----------------------------------------------------------------------------- the search


def _draw(mechanism, dataset: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` outputs on ``dataset``, NaN and infinities kept (``sample_raw`` where the mechanism has it)."""
    sample = getattr(mechanism, "sample_raw", None) or mechanism.sample
    return np.asarray(sample(dataset, n, rng), dtype=float).reshape(n, -1)


def _who_raised(exc: BaseException) -> str:
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    last = frames[-1].filename if frames else ""
    return "dpaudit's adapter" if "/dpaudit/" in last and "site-packages" not in last else "the library"


@dataclass(frozen=True)
class _Rejected:
    """A certification that raised (the target could not be built or run on the pair): a pass."""

    kind: str
    description: str
    detail: str
    status: str = "rejected"
    leak: object = None

    def to_dict(self) -> dict:
        return {"kind": self.kind, "description": self.description, "status": self.status, "detail": self.detail,
                "leak": None}


class PairTimeout(Exception):
    """A pair's outputs took longer than the search's ``pair_timeout`` (the library may loop forever on
    it, e.g. a rejection sampler fed an infinite matrix): counted as a rejected input."""


class _time_limit:
    """Raise :class:`PairTimeout` in the block after ``seconds`` (SIGALRM; only in the main thread of a
    POSIX process, elsewhere no limit). Python code is interrupted; a call stuck in C code is interrupted
    when it returns to Python."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.armed = False

    def __enter__(self):
        import signal
        import threading

        if not self.seconds or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
            return self

        def _raise(signum, frame):
            raise PairTimeout(f"no outputs within {self.seconds:g} s")

        self.previous = signal.signal(signal.SIGALRM, _raise)
        signal.setitimer(signal.ITIMER_REAL, float(self.seconds))
        self.armed = True
        return self

    def __exit__(self, *exc):
        if self.armed:
            import signal

            signal.setitimer(signal.ITIMER_REAL, 0.0)
            signal.signal(signal.SIGALRM, self.previous)
        return False


class _Found(Exception):
    def __init__(self, cand, score, evidence):
        super().__init__("found")
        self.cand, self.score, self.evidence = cand, score, evidence


def _relation_name(relation) -> str:
    name = getattr(relation, "name", "")
    name = {"labelled-add-remove": "add-remove", "labelled-replace": "replace"}.get(name, name)
    if name not in ("add-remove", "replace"):
        raise ValueError(f"the input-space search needs an add-remove or replace relation, got {name!r}")
    return name


def explore(mechanism, relation=None, accepts: AcceptedInputs | None = None, *, certify, epsilon: float,
            delta: float = 0.0, beta: float = 0.01, budget: int = 40, seed: int = 0, samples: int = 40,
            certify_samples: int = 1000, max_calls: int = 20_000, given=(), families=None, fixed: bool = True,
            pair_timeout: float | None = 30.0, max_seconds: float | None = 120.0) -> InputSearchResult:
    """Search the input space ``accepts`` declares for pairs that break the claim, and have ``certify``
    certify each candidate on fresh outputs. Call :func:`dpaudit.audit.input_space.search`, which passes
    the audit layer's certification (:func:`dpaudit.audit.adversarial.screen_pair`); this layer only
    searches.

    Parameters
    ----------
    mechanism : Mechanism
        The target (anything with ``sample`` or ``sample_raw``); its ``neighbouring`` and ``accepts``
        attributes are used when ``relation`` or ``accepts`` are not given.
    relation : AddRemove or Replace (or their labelled forms), optional
        How the pairs differ; its domain gives the default record layout and bounds, its sizes the
        dataset sizes (:func:`~dpaudit.search.adversarial.pair_sizes`: every pair valid at the
        relation's ``min_size``/``max_size``, at most 12 records or ``accepts.space.max_size`` unless
        the relation's smallest size is larger).
    accepts : AcceptedInputs, optional
        The declaration: ``space`` (:class:`~dpaudit.datasets.InputSpace`) says which families run;
        its ``kinds`` and ``unit_pairs`` (the fixed adversarial list) are the ``specials`` family's
        first candidates.
    epsilon, delta : float
        The claim (epsilon in nats).
    beta : float
        Probability, in (0, 1), that any certified statement is wrong (a correct mechanism is
        accused with probability at most beta).
    budget : int
        Pairs Hypothesis generates per hunt (besides shrinking), >= 1.
    seed : int
        Seeds Hypothesis and the random streams of both phases.
    samples : int
        Outputs per dataset for the search statistic (>= 8; a confirmation draws four times as many).
    certify_samples : int
        Fresh outputs per dataset for each certification (>= 8).
    max_calls : int
        Mechanism calls one hunt may spend on the search statistic before its first failing pair, and
        again on shrinking it; past either, the hunt sees every new pair as passing and stops.
    given : sequence of (d0, d1)
        Pairs stated by the user (may hold NaN, infinities, -0.0), certified first.
    families : sequence of str, optional
        Restrict the families (default: every family the declaration makes searchable).
    fixed : bool
        Try the fixed adversarial list (:func:`dpaudit.search.adversarial.adversarial_pairs`) first.
    max_seconds : float or None
        Wall seconds one hunt may spend before its first failing pair, and again on shrinking it (as
        ``max_calls``; for targets whose calls are slow on some inputs). None: no limit.
    pair_timeout : float or None
        Seconds a pair's search outputs may take (SIGALRM, main thread only); past it the pair counts
        as rejected (:class:`PairTimeout`). None: no limit.

    certify : callable
        ``certify(mechanism, pair, *, samples, rng, epsilon, delta, beta) -> result``: the certification
        of one :class:`~dpaudit.search.adversarial.AdversarialPair` on ``samples`` fresh outputs per
        dataset drawn with ``rng``, each statement at ``beta``; ``result`` has ``status`` (``"leak"``,
        ``"pass"``, ``"rejected"``...), ``leak``, ``detail`` and ``to_dict()``
        (:class:`dpaudit.audit.adversarial.ScreenResult`).

    Returns
    -------
    InputSearchResult

    Raises
    ------
    ValueError
        For a bad beta, budget, samples or relation (the search handles add-remove and replace pairs),
        relation sizes no neighbouring pair fits (e.g. add/remove at a fixed size), a declaration the
        fixed list cannot build (:func:`~dpaudit.search.adversarial.adversarial_pairs`), or an
        unknown family. :func:`dpaudit.audit.adversarial.screen_stage` reports the first two as
        "not searched: <reason>".

    References
    ----------
    Casacuberta, Shoemate, Vadhan, Wagaman (CCS 2022) for the input classes; Hypothesis (MacIver,
    Hatfield-Dodds et al., JOSS 2019) for generation, targeted search and shrinking; Clopper &
    Pearson (1934) and Dwork & Roth (2014, Def. 2.4) for the certified bound.
    """
    if not 0.0 < beta < 1.0:
        raise ValueError(f"beta must be in (0, 1), got {beta!r}")
    with _hypothesis_storage():
        return _search(mechanism, relation, accepts, certifier=certify, epsilon=epsilon, delta=delta, beta=beta,
                       budget=budget, seed=seed, samples=samples, certify_samples=certify_samples, max_calls=max_calls,
                       given=given, families=families, fixed=fixed, pair_timeout=pair_timeout, max_seconds=max_seconds)


class _hypothesis_storage:
    """Keep Hypothesis' cache (it stores constants it reads from source files) out of the user's working
    directory: unless ``HYPOTHESIS_STORAGE_DIRECTORY`` is set or ``./.hypothesis`` already exists, point it
    at a directory under the system's temporary directory for the search, then back to the default."""

    def __enter__(self):
        import os
        import tempfile
        from pathlib import Path

        from hypothesis.configuration import set_hypothesis_home_dir

        self.changed = not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY") and not (Path.cwd() / ".hypothesis").exists()
        if self.changed:
            set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "dpaudit-hypothesis")
        return self

    def __exit__(self, *exc):
        if self.changed:
            from hypothesis.configuration import set_hypothesis_home_dir

            set_hypothesis_home_dir(None)
        return False


def _search(mechanism, relation, accepts, *, certifier, epsilon, delta, beta, budget, seed, samples, certify_samples,
            max_calls, given, families, fixed, pair_timeout, max_seconds) -> InputSearchResult:
    """:func:`explore` after its check of beta (same parameters)."""
    from hypothesis import HealthCheck, Phase, Verbosity, example, given as h_given, settings, strategies as st
    from hypothesis import seed as h_seed, target
    from hypothesis.errors import HypothesisException

    from .adversarial import AdversarialPair, adversarial_pairs, pair_sizes

    if not callable(certifier):
        raise TypeError(f"certify must be callable, got {certifier!r}")

    for name, v, least in (("budget", budget, 1), ("samples", samples, 8), ("certify_samples", certify_samples, 8),
                           ("max_calls", max_calls, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < least:
            raise ValueError(f"{name} must be an integer >= {least}, got {v!r}")
    relation = relation if relation is not None else getattr(mechanism, "neighbouring", None)
    if relation is None or isinstance(relation, str):
        raise ValueError("the input-space search needs a relation: pass relation= or set the mechanism's neighbouring hint")
    accepts = accepts if accepts is not None else (getattr(mechanism, "accepts", None) or AcceptedInputs())
    rel_name = _relation_name(relation)
    space = accepts.space
    layout = layout_of(relation, space)
    names = family_names(space, layout)
    if families is not None:
        unknown = [f for f in families if f not in FAMILIES]
        if unknown:
            raise ValueError(f"unknown families {unknown}; families: {', '.join(FAMILIES)}")
        names = tuple(f for f in names if f in families)
    given = [(np.asarray(a, dtype=float).reshape(len(a), -1) if np.size(a) else np.zeros((0, len(layout))),
              np.asarray(b, dtype=float).reshape(len(b), -1) if np.size(b) else np.zeros((0, len(layout))))
             for a, b in given]
    k_max = len(given) + HUNTS_PER_FAMILY * len(names)
    beta_each = beta / max(1, k_max)
    # every pair at sizes the target accepts (a fixed public n gets pairs of n records); raises
    # ValueError (the caller's "not searched: <reason>") when no neighbouring pair fits them
    sizes = pair_sizes(relation, space.max_size if space is not None and space.max_size else 12)
    default_config = space.default_config() if space is not None else {}
    t0 = time.perf_counter()
    stats = {"calls": 0, "rejected": 0, "pairs": 0}
    rejections: list = []
    mechs: dict = {}

    def mech_for(config: tuple):
        if config not in mechs:
            mechs[config] = space.build(**dict(config)) if (space is not None and space.build is not None and (
                config or space.columns)) else mechanism
        return mechs[config]

    def draw_outputs(cand, n, rng):
        m = mech_for(cand.config)
        with _time_limit(pair_timeout):
            y0 = _draw(m, cand.d0, n, rng)
            y1 = _draw(m, cand.d1, n, rng)
        stats["calls"] += 2 * n
        return y0, y1

    memo: dict = {}

    def evaluate(cand: Candidate):
        key = cand.key()
        if key in memo:
            return memo[key]
        stats["pairs"] += 1
        ss = np.random.SeedSequence([int(seed) % 2**32, 1, zlib.crc32(key)])
        rng = np.random.default_rng(ss)
        try:
            with np.errstate(all="ignore"):
                y0, y1 = draw_outputs(cand, samples, rng)
                ev = quick_evidence(y0, y1, epsilon, delta)
        except Exception as exc:  # noqa: BLE001 - a rejected input is a pass for that input
            stats["rejected"] += 1
            cause = exc.__cause__ if exc.__cause__ is not None else exc
            msg = (f"{_who_raised(cause)} raised {type(cause).__name__}: "
                   f"{str(cause).splitlines()[0][:120] if str(cause) else ''}")
            if msg not in rejections and len(rejections) < 5:
                rejections.append(msg)
            ev = None
        memo[key] = {"ev": ev, "rng": rng, "confirmed": {}}
        return memo[key]

    def confirmed(cand: Candidate, entry: dict, kind: str) -> float:
        if kind not in entry["confirmed"]:
            try:
                with np.errstate(all="ignore"):
                    y0, y1 = draw_outputs(cand, CONFIRM_FACTOR * samples, entry["rng"])
                    entry["confirmed"][kind] = quick_evidence(y0, y1, epsilon, delta, level=CONFIRM_LEVEL)[kind][0]
            except Exception:  # noqa: BLE001
                entry["confirmed"][kind] = -1.0
        return entry["confirmed"][kind]

    fixed_candidates = []
    if fixed and "specials" in names:
        # a declaration the fixed list cannot build (a unit pair outside the sizes, a record of the
        # wrong dimension) is an error of the target's declaration: raised, not skipped in silence
        for p in adversarial_pairs(relation, accepts):
            if p.d0.shape[1:] == (len(layout),) and p.d1.shape[1:] == (len(layout),):
                fixed_candidates.append(Candidate("specials", (), p.d0, p.d1, p.kind))

    certified: list = []
    hunts: list = []
    cert_index = [0]

    def certify(cand: Candidate, score: float, evidence: str, description: str):
        ss = np.random.SeedSequence([int(seed) % 2**32, 2, cert_index[0]])
        cert_index[0] += 1
        pair = AdversarialPair(cand.label or cand.family, cand.d0, cand.d1,
                               description or cand.describe_pair(), structural=True)
        limit = None if pair_timeout is None else pair_timeout * max(1.0, certify_samples / samples)
        try:
            with _time_limit(limit):
                r = certifier(mech_for(cand.config), pair, samples=certify_samples, rng=np.random.default_rng(ss),
                              epsilon=epsilon, delta=delta, beta=beta_each)
        except Exception as exc:  # noqa: BLE001 - building the target under this configuration failed
            r = _Rejected(pair.kind, pair.description, f"{_who_raised(exc)} raised {type(exc).__name__}: {exc}")
        stats["calls"] += 2 * certify_samples
        certified.append(CertifiedCandidate(cand, r, float(score), evidence))
        return r

    for a, b in given:
        certify(Candidate("given", (), a, b, "given"), float("nan"), "any", "")

    kinds = tuple(accepts.kinds)
    seeds = {fam: seed_candidates(fam, layout, space, rel_name, sizes, default_config, kinds) for fam in names}
    for fam in names:
        strategy = _pair_strategy(st, fam, layout, space, rel_name, sizes, default_config, kinds)
        allowed = list(EVIDENCE)
        for hunt in range(HUNTS_PER_FAMILY):
            start_calls, start_pairs, start_time = stats["calls"], stats["pairs"], time.perf_counter()
            found_at, found_time = [None], [None]
            kinds = tuple(allowed)

            def make_probe(kinds=kinds, start_calls=start_calls):
                def probe(cand):
                    return _probe(cand, kinds, start_calls)
                return probe

            def _probe(cand, kinds, start_calls):
                spent = stats["calls"] - (found_at[0] if found_at[0] is not None else start_calls)
                elapsed = time.perf_counter() - (found_time[0] if found_time[0] is not None else start_time)
                if cand.key() not in memo and (spent > max_calls or (max_seconds is not None and elapsed > max_seconds)):
                    return  # out of budget: new pairs pass (a memoised pair keeps its outcome for the replay)
                entry = evaluate(cand)
                if entry["ev"] is None:
                    return
                kind = max(kinds, key=lambda k: entry["ev"][k][0])
                score = entry["ev"][kind][0]
                target(float(max(-1.0, min(1.0, score))))
                if score > SCORE_THRESHOLD and confirmed(cand, entry, kind) > 0.0:
                    if found_at[0] is None:  # shrinking gets a budget of its own
                        found_at[0], found_time[0] = stats["calls"], time.perf_counter()
                    raise _Found(cand, score, kind)

            test = h_given(strategy)(make_probe())
            # the first candidates, in every hunt of the family (memoised, so a repeat costs nothing):
            # the fixed adversarial list, then the family's seed pairs
            firsts = (fixed_candidates if fam == "specials" else []) + seeds[fam]
            for c in reversed(firsts):
                test = example(c)(test)
            test = settings(max_examples=int(budget), database=None, deadline=None, derandomize=False,
                            phases=(Phase.explicit, Phase.generate, Phase.target, Phase.shrink),
                            suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet,
                            report_multiple_bugs=False, print_blob=False)(test)
            test = h_seed(int(seed) * 7919 + 17 * len(hunts) + 1)(test)
            found = None
            try:
                test()
            except _Found as f:
                found = f
            except HypothesisException as exc:  # a flaky replay carries the find; Unsatisfiable: nothing
                found = next((e for e in getattr(exc, "exceptions", ()) if isinstance(e, _Found)), None)
            except BaseException as exc:  # an explicit example raised _Found inside Hypothesis' wrapper
                inner = getattr(exc, "exceptions", ())
                found = next((e for e in inner if isinstance(e, _Found)), None)
                if found is None:
                    raise
            hunts.append({"family": fam, "evidence": list(kinds), "calls": stats["calls"] - start_calls,
                          "pairs": stats["pairs"] - start_pairs, "found": found is not None})
            if found is None:
                break
            entry = memo.get(found.cand.key())
            words = entry["ev"][found.evidence][1] if entry and entry["ev"] else ""
            r = certify(found.cand, found.score, found.evidence, "")
            hunts[-1]["certified"] = r.status
            hunts[-1]["pair"] = found.cand.describe_pair()
            hunts[-1]["search_set"] = words
            if r.status == "leak" and found.evidence in allowed:
                allowed.remove(found.evidence)
            if not allowed:
                break

    return InputSearchResult(tuple(certified), tuple(names), k_max, float(beta), stats["pairs"], stats["calls"],
                             stats["rejected"], tuple(rejections), time.perf_counter() - t0, int(samples),
                             int(certify_samples), tuple(hunts))

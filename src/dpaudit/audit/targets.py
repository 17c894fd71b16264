"""How an audit is assembled from a target, a claim and the audit options.

Shared by ``dpaudit test`` (:mod:`dpaudit.cli`) and :func:`dpaudit.testing.assert_dp`, so that the
Python API audits exactly what the command line would: the same mechanism (zoo entries built at
the claimed epsilon and delta), the same neighbouring relation, the same known pairs and the same
finder for a given seed.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass

from ..errors import DPAuditError

__all__ = ["AUTO_BAYES_METHOD", "AUTO_RANDOM_FRACTION", "SEARCH_NAMES", "TARGET_FORMS", "AuditSetup", "as_domain", "assemble", "load_target", "make_finder", "user_pairs"]

# The Optuna sampler of --search auto after the known pairs: TPE proposes in milliseconds and
# handles pending trials (parallel asks); the GP sampler of --search bayes (paper 000's GP bandit)
# costs about a second per proposal and several seconds for its first.
AUTO_BAYES_METHOD = "tpe"

AUTO_RANDOM_FRACTION = 0.5
"""Fraction of ``--search auto``'s proposals that are uniformly random
(:func:`dpaudit.search.optuna_finders.proposal_source`: random, grid, random, grid, then random
and TPE in turn; every other proposal, the first included, is random): TPE fitted on clean early
trials alone kept proposing near them and missed bugs that random search found
(``benchmarks/results/search.md``, harder bugs)."""

SEARCH_NAMES = ("auto", "grid", "random", "bayes", "evolution")
"""Names of the pair searches (``--search``)."""


TARGET_FORMS = "zoo:NAME, path/to/file.py:function or package.module:attribute"
"""The forms of a target, as the error messages name them."""


def load_target(target: str):
    """Resolve a target string to ``(zoo entry or mechanism, kind)``.

    Parameters
    ----------
    target : str
        ``"zoo:NAME"``, ``"path/to/file.py:attribute"`` (a Python file, as pytest and uvicorn accept
        it: a path that ends in ``.py`` or holds a path separator, relative to the working
        directory) or ``"package.module:attribute"``, naming a Mechanism object (anything with a
        ``sample`` method) or a function ``f(dataset) -> output``; ``attribute`` may be dotted
        (``module:obj.method``). The current working directory is put on ``sys.path`` first, as
        ``dpaudit test`` does, and a file's own folder too (so that it imports its neighbours).

    Returns
    -------
    tuple
        ``(ZooEntry, "zoo")`` or ``(Mechanism, "mechanism")``; a function is wrapped with
        :meth:`Mechanism.from_callable` under the name ``target``.

    Raises
    ------
    DPAuditError
        One line saying what to write instead: for a target without ``:``, a file that does not
        exist, a module that cannot be imported or raises while it is imported (its exception and
        the line of the user's file), a missing attribute (with the names the module defines), a
        class, or an object that is neither a mechanism nor callable.
    """
    if target.startswith("zoo:"):
        from ..mechanisms import zoo

        return zoo.get(target[4:]), "zoo"
    if ":" not in target:
        hint = (f"; did you mean {target}:FUNCTION?" if target.endswith(".py") or "." in target else "")
        raise DPAuditError(f"TARGET must be {TARGET_FORMS}, got {target!r}{hint} (`dpaudit zoo` lists the "
                           "built-in mechanisms)")
    module_name, attr = target.rsplit(":", 1)
    if not module_name or not attr:
        raise DPAuditError(f"TARGET must be {TARGET_FORMS}, got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    if _is_path(module_name):
        module, shown = _import_file(module_name, target), module_name
    else:
        module, shown = _import_module(module_name), f"module {module_name!r}"
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise DPAuditError(f"{shown} has no attribute {attr!r}" + _defined_names(module))
        obj = getattr(obj, part)
    from ..mechanisms.base import Mechanism

    if hasattr(obj, "sample") and callable(obj.sample):
        return obj, "mechanism"
    if isinstance(obj, type):
        raise DPAuditError(f"{target} is a class; point TARGET at an instance (a Mechanism object) or a function")
    if callable(obj):
        return Mechanism.from_callable(obj, name=target), "mechanism"
    raise DPAuditError(f"{target} is neither a Mechanism (with .sample) nor a callable")


def _is_path(module_name: str) -> bool:
    """Whether the module part of a target is a file path (``mymech.py``, ``./mymech``, ``src/m.py``)."""
    return module_name.endswith(".py") or any(sep and sep in module_name for sep in (os.sep, os.altsep, "/"))


def _user_frame(exc: BaseException, path: str | None = None) -> str:
    """`` (file.py, line N)`` of the innermost traceback frame in ``path`` (or outside dpaudit and
    importlib), or empty: where in the user's code an import failed."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    if isinstance(exc, SyntaxError) and exc.filename:
        return f" ({os.path.basename(exc.filename)}, line {exc.lineno})"
    for fr in reversed(frames):
        if (path and os.path.abspath(fr.filename) == os.path.abspath(path)) or (
                not path and "importlib" not in fr.filename and f"{os.sep}dpaudit{os.sep}" not in fr.filename):
            return f" ({os.path.basename(fr.filename)}, line {fr.lineno})"
    return ""


def _import_failed(what: str, exc: BaseException, path: str | None = None) -> DPAuditError:
    """The one-line error of an import that raised: the exception and the user's line."""
    msg = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    return DPAuditError(f"cannot import {what}: {type(exc).__name__}: {msg}{_user_frame(exc, path)}")


def _import_module(module_name: str):
    """``importlib.import_module`` with every failure as a one-line :class:`DPAuditError` and a hint."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.split(".")[0] == exc.name.split(".")[0] and module_name.startswith(exc.name):
            hint = f"; run from the folder that holds it, or give its file: {module_name.replace('.', '/')}.py:FUNCTION"
            raise DPAuditError(f"no module named {module_name!r} here ({os.getcwd()}){hint}") from None
        raise _import_failed(f"module {module_name!r}", exc) from None
    except Exception as exc:  # noqa: BLE001 - the user's module raised while it was imported
        raise _import_failed(f"module {module_name!r}", exc) from None


def _import_file(path: str, target: str):
    """Import the Python file ``path`` (relative to the working directory) as a module.

    Its folder goes on ``sys.path`` (its own imports of neighbouring files work) and the module is
    registered under the file's stem, so that pickled functions (the sampling processes, Dask)
    find it again; when that name is taken by another module, under a private name, and cloudpickle
    ships its functions by value.
    """
    import importlib.util

    file = path if path.endswith(".py") else path + ".py"
    if not os.path.isfile(file):
        where = f"{os.path.abspath(file)}" if os.path.isabs(file) else f"{file} in {os.getcwd()}"
        raise DPAuditError(f"no such file: {where} (TARGET {target!r}); give an existing path/to/file.py:function, "
                           "package.module:attribute or zoo:NAME")
    file = os.path.abspath(file)
    folder, stem = os.path.split(file)
    stem = stem[:-3]
    if folder not in sys.path:
        sys.path.insert(0, folder)
    known = sys.modules.get(stem)
    if known is not None and os.path.abspath(getattr(known, "__file__", "") or "") == file:
        return known
    name = stem if stem.isidentifier() and known is None else f"_dpaudit_target_{abs(hash(file))}"
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - the user's file raised while it was imported
        sys.modules.pop(name, None)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise _import_failed(os.path.relpath(file), exc, file) from None
    if name != stem:
        try:
            import cloudpickle

            cloudpickle.register_pickle_by_value(module)
        except (ImportError, ValueError):  # pragma: no cover
            pass
    return module


def _defined_names(module) -> str:
    """``"; it defines: f, g, h"`` (the module's own public functions and objects, a few), or empty."""
    own = [k for k, v in vars(module).items() if not k.startswith("_") and callable(v)
           and getattr(v, "__module__", None) == module.__name__]
    if not own:
        return ""
    return "; it defines: " + ", ".join(sorted(own)[:6]) + (", ..." if len(own) > 6 else "")


@dataclass(frozen=True)
class AuditSetup:
    """What an audit runs: the mechanism, the claim, the relation and the pairs known up front.

    Attributes
    ----------
    mechanism : Mechanism
    claim : PureDP, ApproxDP or RenyiDP
    relation : AddRemove, Replace or a structured relation
    known : list of NeighbouringPair
        The zoo entry's witness pairs (when auditing under its own relation) or the mechanism's
        ``witness_pairs`` hint; replaced by user pairs when those are given.
    zoo_entry : ZooEntry or None
    notes : tuple of str
        What the assembly decided that the user should know (e.g. that the empty dataset was left
        out because the mechanism raised or returned NaN/None on it).
    """

    mechanism: object
    claim: object
    relation: object
    known: list
    zoo_entry: object = None
    notes: tuple = ()


def as_domain(domain, name: str = "--domain"):
    """A record domain from what a user gives.

    Parameters
    ----------
    domain : Domain, sequence, or None
        A :class:`~dpaudit.datasets.Domain`; a sequence of ``"LOWER:UPPER"`` strings (the CLI's
        ``--domain``) or of ``(lower, upper)`` pairs, one per record coordinate; or one
        ``(lower, upper)`` pair of numbers for scalar records. None or empty: None.
    name : str
        How the value is called in error messages.

    Returns
    -------
    Domain or None

    Raises
    ------
    DPAuditError
        For a malformed specification (the message names the value).
    """
    from ..datasets import Domain

    if domain is None or isinstance(domain, Domain):
        return domain
    if isinstance(domain, (str, bytes)) or not hasattr(domain, "__len__"):
        raise DPAuditError(f"{name} expects a Domain or a list of (lower, upper) bounds, got {domain!r}")
    if len(domain) == 0:
        return None
    if len(domain) == 2 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in domain):
        domain = [tuple(domain)]  # (lower, upper) of scalar records
    lo, hi = [], []
    for spec in domain:
        if isinstance(spec, str):
            parts = spec.split(":")
            if len(parts) != 2:
                raise DPAuditError(f"{name} expects LOWER:UPPER for one coordinate, got {spec!r}")
        else:
            parts = list(spec) if hasattr(spec, "__len__") else [spec]
            if len(parts) != 2:
                raise DPAuditError(f"{name} expects (lower, upper) for one coordinate, got {spec!r}")
        try:
            lo.append(float(parts[0]))
            hi.append(float(parts[1]))
        except (TypeError, ValueError):
            raise DPAuditError(f"{name} bounds must be numbers, got {spec!r}") from None
    return Domain(tuple(lo), tuple(hi))


def assemble(obj, kind: str, *, epsilon, delta=None, alpha=None, neighbouring: str | None = None,
             domain=None, min_size: int | None = None, max_size: int | None = None) -> AuditSetup:
    """Build the claim, mechanism, relation and known pairs as ``dpaudit test`` does.

    Parameters
    ----------
    obj, kind
        What :func:`load_target` returned.
    epsilon, delta, alpha : float
        The claim's parameters, as ``--epsilon``, ``--delta``, ``--alpha`` (epsilon in nats). For
        a zoo entry, an omitted delta is the entry's default delta (unless alpha is given).
    neighbouring : str, optional
        ``"add-remove"`` or ``"replace"``; default the mechanism's own, else add-remove.
    domain : Domain or sequence, optional
        Record domain, anything :func:`as_domain` reads; default the mechanism's own.
    min_size, max_size : int, optional
        Dataset size range of the relation (``--min-size``/``--max-size``), used by every finder
        and checked for given pairs; default the mechanism's own, else the relation's (0 for
        add/remove relations, so the empty dataset is audited, unless a mechanism that declares
        no relation raises on it: then 1, with a note; 1 for replace) and 10.

    Returns
    -------
    AuditSetup

    Raises
    ------
    InvalidClaimError, NeighbouringError, DPAuditError
        For invalid claim parameters, relation or domain.
    """
    from ..mechanisms.zoo.entry import witness_label
    from ..privacy.claims import make_claim
    from ..datasets import make_relation

    if kind == "zoo":
        entry = obj
        if entry.claim_kind == "renyi":  # built at the claimed (alpha, epsilon); alpha defaults to the entry's
            a = entry.default_alpha if alpha is None else alpha
            claim = make_claim(epsilon, delta, a)
            mechanism = entry.mechanism(epsilon, alpha=claim.alpha)
        else:
            d = delta if delta is not None else (entry.default_delta if alpha is None else None)
            claim = make_claim(epsilon, d, alpha)
            mechanism = entry.mechanism(epsilon, d)
        rel_name = neighbouring if neighbouring else entry.relation
        dom = as_domain(domain) or entry.domain
        lo = entry.min_size if min_size is None else min_size
        hi = entry.max_size if max_size is None else max_size
        relation = make_relation(rel_name, dom, lo, hi)
        known = [] if rel_name != entry.relation else [relation.pair(a, b, witness_label(entry.name, k, len(entry.witness_pairs)))
                                                   for k, (a, b) in enumerate(entry.witness_pairs)]
        return AuditSetup(mechanism, claim, relation, known, entry)
    mechanism = obj
    claim = make_claim(epsilon, delta, alpha)
    hint = getattr(mechanism, "neighbouring", None)
    rel_name = neighbouring if neighbouring else (hint.name if hint is not None else "add-remove")
    dom = as_domain(domain) or (hint.domain if hint is not None else None)
    lo = min_size if min_size is not None else (hint.min_size if hint is not None else None)
    hi = max_size if max_size is not None else (hint.max_size if hint is not None else None)
    relation = make_relation(rel_name, dom, lo, hi)
    notes = ()
    if lo is None and relation.min_size == 0:
        # The empty dataset is in the default range but the mechanism declared nothing: a
        # mechanism that cannot run on it (a mean, a library that refuses an empty input) is
        # audited from one record rather than failing with exit 2 by default.
        problem = _fails_on(mechanism, relation, 0)
        if problem:
            relation = make_relation(rel_name, dom, 1, hi)
            if not _fails_on(mechanism, relation, 1):  # failing everywhere is reported by the audit itself
                notes = (f"the empty dataset is left out (sizes from 1): on it the mechanism {problem}; "
                         "give --min-size 0 (min_size=0) explicitly to audit it anyway, or --min-size 1 "
                         "to say that it does not apply",)
    known = [relation.pair(a, b, "pair suggested by the mechanism") for a, b in getattr(mechanism, "witness_pairs", ())]
    return AuditSetup(mechanism, claim, relation, known, None, notes)


def _fails_on(mechanism, relation, size: int) -> str:
    """What goes wrong when ``mechanism`` runs on a dataset of ``size`` (0 or 1) records of
    ``relation``'s domain ('' if nothing does): ``"raised ZeroDivisionError: ..."``, ``"returned a
    non-finite value nan ..."``. One output is drawn with a fixed seed, apart from the audit's
    random streams; a one-record dataset holds a record of the domain drawn with a fixed seed."""
    import numpy as np

    from ..errors import MechanismError
    from ..mechanisms.base import draw

    dom = relation.domain
    dataset = np.empty((0, dom.record_dim)) if size == 0 else dom.random_records(size, np.random.default_rng(0))
    try:
        draw(mechanism, dataset, 1, np.random.default_rng(0))
    except MechanismError as exc:
        return exc.problem
    except ValueError as exc:
        return f"raised ValueError: {exc}"
    return ""


def user_pairs(pairs, relation) -> list:
    """Pairs given by the user, ``[[D0, D1], ...]`` or ``[{"d0": D0, "d1": D1}, ...]``, as
    :class:`NeighbouringPair` objects checked against ``relation`` (named ``user pair i``).

    Raises
    ------
    NeighbouringError
        Naming the pair (``given pair i: ...``) that is not a pair of the relation; for a dataset
        outside the size range the message names ``--min-size``/``--max-size`` and the value to use.
    """
    from ..errors import NeighbouringError

    out = []
    for i, p in enumerate(pairs):
        d0, d1 = (p["d0"], p["d1"]) if isinstance(p, dict) else p
        try:
            out.append(relation.pair(d0, d1, description=f"user pair {i + 1}"))
        except NeighbouringError as exc:
            raise NeighbouringError(f"given pair {i + 1}: {exc}") from None
    return out


def make_finder(search: str, known: list, relation, seed: int | None):
    """The finder for a pair search named as ``--search`` (see :data:`SEARCH_NAMES`).

    Parameters
    ----------
    search : str
        ``"grid"`` (the known pairs), ``"random"``, ``"bayes"`` (Gaussian-process), ``"evolution"``
        (NSGA-II) or ``"auto"`` (the known pairs, then Optuna's TPE, or random search without
        Optuna).
    known : list of NeighbouringPair
    relation
        The neighbouring relation searched.
    seed : int, optional
        The audit's seed; the finder uses ``(seed + 1) mod 2**32`` (its samplers take 32-bit seeds).

    Returns
    -------
    Finder

    Raises
    ------
    DPAuditError
        For an unknown search, or ``"grid"`` without pairs.
    """
    from ..search import BayesFinder, ChainFinder, GridFinder, RandomFinder, optuna_available
    from ..search import make_finder as make_search_finder

    search = getattr(search, "value", search)
    if search not in SEARCH_NAMES:
        raise DPAuditError(f"search must be one of {', '.join(SEARCH_NAMES)}, got {search!r}")
    # Optuna's and numpy's legacy samplers take 32-bit seeds; recorded seeds are up to 63 bits.
    finder_seed = None if seed is None else (int(seed) + 1) % 2**32
    if search not in ("grid", "random") and optuna_available():
        import optuna

        # Optuna's per-trial INFO lines and its warnings about its own internals (e.g. "greenlet
        # unavailable") would interleave with the progress bar.
        optuna.logging.set_verbosity(optuna.logging.ERROR)
    if search == "grid":
        if not known:
            raise DPAuditError("--search grid needs pairs: give --pairs (or use a zoo mechanism with witness pairs)")
        return GridFinder(known)
    if search in ("random", "bayes", "evolution"):
        return make_search_finder(search, relation, seed=finder_seed)
    # auto: the known pairs first, then Bayesian search (random search without Optuna)
    try:
        model = (BayesFinder(relation, method=AUTO_BAYES_METHOD, random_fraction=AUTO_RANDOM_FRACTION,
                             seed=finder_seed) if optuna_available() else None)
    except DPAuditError:  # a relation the search space does not cover
        model = None
    follow = model if model is not None else RandomFinder(relation, rng=finder_seed)
    return ChainFinder([GridFinder(known), follow]) if known else follow

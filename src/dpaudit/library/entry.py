"""The rows of the library-audit table as values: a guarantee, a budget, an entry, a library.

An :class:`Entry` is one public function of a DP library in one configuration, the guarantee the
library documents for it and the budget of its audit. Entries are frozen data; running them is
:mod:`dpaudit.library.runner`'s job, rendering them :mod:`dpaudit.library.table`'s.

Where an entry's target runs
----------------------------
``Entry.env`` names the environment whose process draws the outputs: ``None`` for dpaudit's own
process (the library is installed next to dpaudit: diffprivlib, OpenDP, PipelineDP, PyDP, Opacus),
or the name of a library environment (a virtual environment of its own driven over a pipe, for
libraries whose pins clash with dpaudit's: :mod:`dpaudit.library.envs`). :func:`resolve_mechanism`
turns an entry into the :class:`~dpaudit.mechanisms.base.Mechanism` the audit samples; an
environment's resolver can be registered with :func:`register_env_resolver` (the default loads
``Entry.target`` with :func:`dpaudit.audit.targets.load_target`, which for an environment row is a
proxy module attribute such as ``dpaudit.library.envs.catalogue:<row>``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable

__all__ = ["CAUSE_KINDS", "Budget", "Cause", "Entry", "Guarantee", "LibraryInfo", "StructuralSet",
           "register_env_resolver", "resolve_mechanism"]


@dataclass(frozen=True)
class Guarantee:
    """The privacy guarantee a library's documentation states for one configured mechanism.

    Attributes
    ----------
    epsilon : float
        Claimed epsilon, in nats.
    delta : float
        Claimed delta (0 for pure DP).
    neighbouring : str
        The relation under which the documentation's sensitivity holds: ``"add-remove"``,
        ``"replace"`` (the targets carry it as their ``neighbouring`` hint).
    domain : str
        The records and dataset sizes the guarantee is stated for, in words.
    source : str
        Where the documentation states it (class or function, parameter).
    """

    epsilon: float
    delta: float = 0.0
    neighbouring: str = "add-remove"
    domain: str = "records in [0, 1], 0 to 10 records"
    source: str = ""

    def describe(self) -> str:
        """The claim as the table prints it, e.g. ``"1-DP, add-remove"``."""
        claim = f"({self.epsilon:g}, {self.delta:g})-DP" if self.delta else f"{self.epsilon:g}-DP"
        return f"{claim}, {self.neighbouring}"


@dataclass(frozen=True)
class Budget:
    """The audit budget of an entry: the options of ``dpaudit test`` that set its size.

    Attributes
    ----------
    samples : int
        ``--samples``: outputs per dataset per trial (the last stage).
    trials : int
        ``--trials``: neighbouring pairs tested at most (witness pairs first, then search).
    tester : str
        ``--tester``; ``"all"`` runs every tester that supports the claim, beta split among them.
    seed : int
        ``--seed`` of the first run; a violation's confirmation run uses ``seed + 1``.
    """

    samples: int = 20000
    trials: int = 3
    tester: str = "all"
    seed: int = 1

    def describe(self) -> str:
        """E.g. ``"20,000 x 3, all"``."""
        return f"{self.samples:,} x {self.trials}, {self.tester}"


@dataclass(frozen=True)
class StructuralSet:
    """An output set one dataset of a pair never reaches, by construction (read in the library's code).

    Where ``P[S | other] = 0`` holds by construction, every ``(epsilon, delta)`` guarantee needs
    ``delta >= P[S | reaching] - e^epsilon * 0 = P[S | reaching]`` for every epsilon: no epsilon
    holds for ``delta`` below a certified lower bound on ``P[S | reaching]``. The statement rests
    on :attr:`why` (a proof from the source, not a statistic); the run still counts the other
    dataset's outputs in ``S``, and one hit there refutes the declaration (the runner reports it
    instead of the structural size).

    Attributes
    ----------
    predicate : str
        A Python expression in ``y`` (one output, a 1-D float array) and ``math`` that is true
        exactly on ``S``; e.g. ``"y[5] == 0"``. Grid sets use the helper ``off_grid(v, k, lo, hi)``
        (``v`` non-zero, ``lo <= |v| < hi``, ``v`` not a multiple of ``2^k``).
    words : str
        ``S`` in words, for the table and the tracker text.
    reaches : str
        ``"D0"`` or ``"D1"``: the dataset of the pair that reaches ``S``.
    why : str
        Why the other dataset never reaches ``S`` (file, function, the arithmetic).
    always : bool
        Whether the reaching dataset reaches ``S`` with probability 1 by construction too: then the
        true delta at every epsilon is exactly 1.
    d0, d1 : tuple or None
        The pair the statement is about (nested lists of records); None: the row's first witness
        pair.
    """

    predicate: str
    words: str
    reaches: str
    why: str
    always: bool = False
    d0: tuple | None = None
    d1: tuple | None = None

    def __post_init__(self):
        if self.reaches not in ("D0", "D1"):
            raise ValueError(f"reaches must be 'D0' or 'D1', got {self.reaches!r}")
        compile(self.predicate, "<structural set>", "eval")  # a SyntaxError names the bad predicate now


CAUSE_KINDS = ("library bug", "relation-dependent", "floating-point", "documented misuse", "crash")
"""What a cause is: a bug of the library; a leak that exists only under the relation the library does
not document (``"relation-dependent"``: it depends on the relation, which the library does not
document); a floating-point leak (the claim may hold in exact arithmetic); a misuse the
documentation warns about (a row kept on purpose); a call that raises on every input."""


@dataclass(frozen=True)
class Cause:
    """One cause of findings, as a maintainer would file it: one issue, however many rows show it.

    Attributes
    ----------
    id : str
        Stable identifier, ``library.short-name`` (``"diffprivlib.gaussiannb-absent-class"``); a
        baseline file may name it to accept every finding of the cause.
    library : str
    title : str
        The issue's title, one line.
    kind : str
        One of :data:`CAUSE_KINDS`.
    rows : tuple of str
        Keys of the rows whose audit finding (violation, floating-point leak or error) is this cause.
    adversarial : tuple of (str, str)
        ``(row key, input kind)`` of the adversarial-input leaks that are this cause.
    prior : str
        Prior public reports, each with where it is and its status; ``""`` when none was found.
    searched : str
        Where prior reports were searched (trackers and queries) when none was found, or besides
        those cited.
    reproducer : str
        The standalone script (``reproducers/NAME.py``) to attach to the issue.
    note : str
        How the rows relate (e.g. one row repeats the bug under the other relation).
    """

    id: str
    library: str
    title: str
    kind: str
    rows: tuple = ()
    adversarial: tuple = ()
    prior: str = ""
    searched: str = ""
    reproducer: str = ""
    note: str = ""

    def __post_init__(self):
        if self.kind not in CAUSE_KINDS:
            raise ValueError(f"cause {self.id!r}: kind must be one of {CAUSE_KINDS}, got {self.kind!r}")
        if not (self.rows or self.adversarial):
            raise ValueError(f"cause {self.id!r} names no row and no adversarial leak")

    @property
    def relation_dependent(self) -> bool:
        """Whether the finding exists only under the relation the library does not document."""
        return self.kind == "relation-dependent"


@dataclass(frozen=True)
class LibraryInfo:
    """A library of the table.

    Attributes
    ----------
    name : str
        As the table names it (``"diffprivlib"``, ``"SmartNoise SQL"``).
    distribution : str
        Its distribution on PyPI (for the version and the reproducers' install lines).
    env : str or None
        The environment its rows run in (None: dpaudit's process).
    install : str
        The ``pip install`` arguments with the pins the library needs in a fresh environment
        (e.g. ``"diffprivlib==0.6.6 'scikit-learn<1.6' numpy"``); the reproducers state it.
    """

    name: str
    distribution: str
    env: str | None = None
    install: str = ""


@dataclass(frozen=True)
class Entry:
    """One row of the table: a library's mechanism in one configuration.

    Attributes
    ----------
    library : str
        ``"diffprivlib"``, ``"OpenDP"``, ... (a :class:`LibraryInfo` name).
    name : str
        The library's name for it (class or function).
    target : str or None
        What ``dpaudit test`` loads, ``package.module:attribute``; None when not auditable.
    configuration : str
        How it is configured, in words (the query, sensitivity, bounds).
    guarantee : Guarantee or None
        The documented guarantee; None only when not auditable.
    budget : Budget
    not_auditable : str or None
        Why the entry cannot be audited as a black box; None when it can.
    documented : str
        A caveat the library's documentation states about this entry (reported with any finding).
    cause : str
        The cause of a violation or floating-point leak, read from the library's source (library
        bug, documented limitation or misuse), shown only while the entry is not a pass.
    relation_note : str
        Where the row's neighbouring relation comes from: ``"documented: ..."`` with the library's
        words and their source, or ``"inferred: ..."`` with the calibration it is read from (then
        the other relation is audited too where the calibration assumes one). Filled in by
        :func:`dpaudit.library.findings.relation_note` when empty.
    env : str or None
        The environment the target runs in (None: this process); see the module docstring.
    row_key : str or None
        The row's key when it is not derived from the target (environment rows name their own).
    structural : StructuralSet or None
        A set the row's finding reaches on one side only by construction (the leak is then sized
        as "no epsilon holds for delta < X").
    """

    library: str
    name: str
    target: str | None
    configuration: str
    guarantee: Guarantee | None
    budget: Budget = field(default_factory=Budget)
    not_auditable: str | None = None
    documented: str = ""
    cause: str = ""
    relation_note: str = ""
    env: str | None = None
    row_key: str | None = None
    structural: StructuralSet | None = None

    @property
    def key(self) -> str:
        """``library.short_name``, the name ``dpaudit library audit`` takes (e.g. ``diffprivlib.laplace``)."""
        if self.row_key:
            return self.row_key
        short = self.target.rsplit(":", 1)[1] if self.target else self.name.lower()
        return f"{self.library.lower()}.{short}"

    def command(self, seed: int | None = None, samples: int | None = None, tester: str | None = None) -> list[str]:
        """The ``dpaudit test`` arguments of this entry's audit (without ``--json``); ``tester``: the
        ``--tester`` words of a run with another tester than the budget's (a confirmation run's, e.g.
        ``"sequential --no-size"``).

        Raises
        ------
        ValueError
            If the entry is not auditable.
        """
        if self.target is None or self.guarantee is None:
            raise ValueError(f"{self.key} is not auditable: {self.not_auditable}")
        g, b = self.guarantee, self.budget
        cmd = ["dpaudit", "test", self.target, "--epsilon", f"{g.epsilon:g}"]
        if g.delta:
            cmd += ["--delta", f"{g.delta:g}"]
        cmd += ["--tester", *(tester.split() if tester else [b.tester]), "--samples", str(samples or b.samples),
                "--trials", str(b.trials),
                "--seed", str(b.seed if seed is None else seed)]
        return cmd

    def fingerprint(self, version: str) -> dict:
        """What a cached row must match to be reused: the configuration and the library's ``version``
        (:func:`dpaudit.library.registry.fingerprint` supplies the audited one)."""
        return {"target": _cache_name(self.target), "guarantee": asdict(self.guarantee) if self.guarantee else None,
                "budget": asdict(self.budget), "not_auditable": self.not_auditable, "version": version}


def _cache_name(target: str | None) -> str | None:
    """The name a target's cached rows were keyed under: the catalogue modules lived in
    ``dpaudit.examples`` until they moved (same code; the old paths are the same module objects),
    so rows audited before the move stay valid."""
    return target.replace("dpaudit.mechanisms.catalogue.", "dpaudit.examples.") if target else target


_ENV_RESOLVERS: dict[str, Callable] = {}


def register_env_resolver(env: str, resolver: Callable) -> None:
    """Resolve the targets of environment ``env`` with ``resolver(entry) -> Mechanism``.

    Parameters
    ----------
    env : str
        An environment name (``Entry.env``).
    resolver : callable
        Called with the :class:`Entry`; returns the mechanism the audit samples (with its audit
        hints: ``neighbouring``, ``witness_pairs``, ``accepts``).

    Raises
    ------
    TypeError
        If ``resolver`` is not callable or ``env`` not a non-empty string.
    """
    if not isinstance(env, str) or not env:
        raise TypeError(f"env must be a non-empty string, got {env!r}")
    if not callable(resolver):
        raise TypeError(f"resolver must be callable, got {resolver!r}")
    _ENV_RESOLVERS[env] = resolver


def resolve_mechanism(entry: Entry):
    """The mechanism ``entry``'s audit samples: its target loaded in this process, or, for an
    environment row, what the environment's resolver returns (:func:`register_env_resolver`;
    default: the target loaded in this process, a proxy that starts the environment's worker on
    first use).

    Raises
    ------
    ValueError
        If the entry is not auditable.
    dpaudit.errors.DPAuditError
        If the target cannot be loaded (:func:`dpaudit.audit.targets.load_target`).
    """
    if entry.target is None:
        raise ValueError(f"{entry.key} is not auditable: {entry.not_auditable}")
    if entry.env is not None and entry.env in _ENV_RESOLVERS:
        return _ENV_RESOLVERS[entry.env](entry)
    from ..audit.targets import load_target

    mech, _ = load_target(entry.target)
    return mech

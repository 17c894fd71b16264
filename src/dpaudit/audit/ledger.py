"""Persistent audits: the trial ledger of an audit in Optuna storage, and resumption.

An audit run with a ``storage`` (any Optuna storage URL, e.g. ``sqlite:///audit.db``) keeps one
Optuna study per audit, the *ledger*. It holds

* in the study's user attributes, the settings that fix the audit's statistics: the mechanism's
  name, the claim, the tester's configuration, the root seed, the trial budget ``T`` and the beta split (hence the
  failure probability of every trial, :mod:`dpaudit.audit.beta_split`), ``beta``, the samples per dataset, the
  neighbouring relation and the finder's configuration; and the list of runs (first run and
  resumes);
* one Optuna trial per trial attempt, with user attributes ``dpaudit.index`` (the audit's trial
  number ``t``, whose random stream is ``SeedSequence(seed).spawn`` key ``t`` whichever process
  runs it), ``dpaudit.pair`` (the neighbouring pair, stored before the trial runs) and, once it
  has finished, ``dpaudit.record`` (the full :class:`~dpaudit.audit.TrialRecord`). The record is
  written before the trial is told ``COMPLETE``.

A trial index counts as finished as soon as a record exists for it; an index that was assigned but
has no record (the process was killed, interrupted or a trial was cancelled) is *pending*, and a
resumed audit re-runs it first with the same pair and the same random stream. No finished trial
is lost (its record is in storage before anything depends on it) and none is repeated (an index
with a record is never run again), however the previous run ended.

A resumed audit must use the settings it was created with: :func:`open_ledger` raises
:class:`SettingsMismatchError` naming every difference. Settings the caller leaves as ``None``
are taken from storage.

Optuna's heartbeat (``RDBStorage(heartbeat_interval=...)``) only covers trials run through
``Study.optimize``, not ask/tell; the ledger instead records the driver process (host, pid) and
refuses to open a study that a live process on the same host is still running.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import socket
from dataclasses import dataclass, field

from .._killpoints import kill_point
from ..datasets import NeighbouringPair
from ..errors import DPAuditError

__all__ = [
    "AuditStudy",
    "DEFAULT_STORAGE",
    "LOCKED_SETTINGS",
    "SettingsMismatchError",
    "StudyInUseError",
    "StudyPlan",
    "compare_settings",
    "default_study_name",
    "open_ledger",
    "peek_settings",
    "redact_storage",
    "resolve_study",
]

PREFIX = "dpaudit."
LOCKED_SETTINGS = (
    "mechanism",
    "claim",
    "tester",
    "seed",
    "trial_budget",
    "beta",
    "num_samples",
    "neighbouring",
    "finder",
    "stages",
    "beta_split",
)
"""Settings a resumed audit must share with the stored one (see :func:`compare_settings`)."""

SETTINGS_ADDED_LATER = {"stages": "off", "beta_split": "even"}
"""Settings that audits stored by earlier versions lack, with the value those audits ran with
(trials of one fixed size before sequential stages existed; beta split evenly over the trials
before :mod:`dpaudit.audit.beta_split` existed)."""


def stored_setting(stored: dict, key: str):
    """A stored audit's setting ``key``, or for an audit stored before the setting existed the
    value it ran with (:data:`SETTINGS_ADDED_LATER`)."""
    return stored[key] if key in stored else SETTINGS_ADDED_LATER.get(key)

# Keys of a tester's or finder's configuration that say where it runs, not what it computes.
_EXECUTION_KEYS = {"device", "num_threads"}


class SettingsMismatchError(DPAuditError, ValueError):
    """A resumed audit was given settings different from the stored audit's."""


class StudyInUseError(DPAuditError):
    """The stored audit is being run by another live process."""


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def redact_storage(url) -> str:
    """The storage URL with any password replaced by ``***`` (for reports and messages)."""
    text = str(url) if not hasattr(url, "url") else str(url.url)
    if "://" in text and "@" in text:
        scheme, rest = text.split("://", 1)
        cred, host = rest.rsplit("@", 1)
        if ":" in cred:
            cred = cred.split(":", 1)[0] + ":***"
        return f"{scheme}://{cred}@{host}"
    return text


def _strip_execution(value):
    if isinstance(value, dict):
        return {k: _strip_execution(v) for k, v in value.items() if k not in _EXECUTION_KEYS}
    if isinstance(value, list):
        return [_strip_execution(v) for v in value]
    return value


def _canonical(value):
    """JSON round trip (tuples -> lists, floats as stored) so stored and given compare alike."""
    return json.loads(json.dumps(value, sort_keys=True, allow_nan=True))


def _short(value, limit: int = 160) -> str:
    text = json.dumps(value, sort_keys=True, allow_nan=True) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def compare_settings(stored: dict, given: dict) -> list[str]:
    """Differences between a stored audit's settings and the ones given for a resume.

    Only the keys of :data:`LOCKED_SETTINGS` are compared; a given value of ``None`` means "take
    the stored one" and never differs. The tester's and finder's ``device``/``num_threads``
    entries are ignored (where an audit runs does not change what it tests).

    Returns
    -------
    list of str
        One line per differing setting, e.g. ``"trial_budget: stored 50, given 10"``; empty if
        the settings agree.
    """
    lines = []
    for key in LOCKED_SETTINGS:
        if given.get(key) is None:
            continue
        a = _canonical(_strip_execution(stored_setting(stored, key)))
        b = _canonical(_strip_execution(given[key]))
        if a != b:
            named = next((k for k in ("finder", "tester", "kind", "relation") if isinstance(a, dict)
                          and isinstance(b, dict) and a.get(k) != b.get(k)), None)
            if named is not None:
                lines.append(f"{key}: stored {_short(a.get(named))}, given {_short(b.get(named))}")
            elif isinstance(a, dict) and isinstance(b, dict):
                keys = sorted(set(a) | set(b))
                diff = [k for k in keys if a.get(k) != b.get(k)]
                detail = "; ".join(f"{k}: stored {_short(a.get(k))}, given {_short(b.get(k))}" for k in diff[:4])
                lines.append(f"{key}: {detail}")
            else:
                lines.append(f"{key}: stored {_short(a)}, given {_short(b)}")
    return lines


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except (OSError, ValueError):
        return False
    return True


@dataclass
class PendingTrial:
    """A trial index that was assigned but has no record: re-run first on resume."""

    index: int
    pair: NeighbouringPair
    finder: str


@dataclass
class AuditStudy:
    """The ledger of one audit in Optuna storage (see the module docstring).

    Build it with :func:`open_ledger`; the audit loop calls :meth:`begin`, :meth:`finish`,
    :meth:`fail` and :meth:`close`.

    Attributes
    ----------
    study : optuna.Study
        The ledger study.
    storage : optuna.storages.BaseStorage
        Its storage (shared with the search study of an Optuna finder).
    name : str
        The study name.
    settings : dict
        The audit's settings (see :data:`LOCKED_SETTINGS`), as stored.
    run : int
        Number of this run: 0 for the first, one more for each resume.
    finished : dict
        ``{index: TrialRecord}`` for every finished trial of every earlier run.
    pending : list of PendingTrial
        Assigned indices without a record, by index.
    assigned : list of (int, NeighbouringPair, float or None)
        Every assigned index, its pair and its objective (None if pending), by index: the
        history a finder is restored from.
    runs : list of dict
        One entry per run (this one included).
    """

    study: object
    storage: object
    name: str
    settings: dict
    run: int
    finished: dict = field(default_factory=dict)
    pending: list = field(default_factory=list)
    assigned: list = field(default_factory=list)
    runs: list = field(default_factory=list)
    _closed: bool = False

    @property
    def next_index(self) -> int:
        """The first index never assigned."""
        return 1 + max((i for i, _, _ in self.assigned), default=-1)

    def search_study_name(self) -> str:
        """Name of the study an Optuna finder keeps its proposals in (same storage)."""
        return f"{self.name}:search"

    # ------------------------------------------------------------------ trials
    def begin(self, index: int, pair: NeighbouringPair, finder: str):
        """Record that trial ``index`` starts on ``pair``.

        Returns
        -------
        optuna.trial.Trial
            The ledger trial, to pass to :meth:`finish` or :meth:`fail`.
        """
        trial = self.study.ask()
        # Each attribute is its own storage write, and a kill can land between two of them: the
        # index goes last, so a stored index always comes with its pair (see _load_trials).
        trial.set_user_attr(PREFIX + "pair", pair.to_dict())
        trial.set_user_attr(PREFIX + "finder", finder)
        trial.set_user_attr(PREFIX + "run", self.run)
        kill_point("ledger.begin")
        trial.set_user_attr(PREFIX + "index", int(index))
        return trial

    def finish(self, trial, record) -> None:
        """Store the trial's record, then mark the Optuna trial complete with its objective."""
        from optuna.trial import TrialState

        trial.set_user_attr(PREFIX + "record", record.to_dict())
        value = float(record.outcome.objective)
        if math.isfinite(value):
            self.study.tell(trial, value)
        else:  # Optuna refuses non-finite values; the record holds the real one.
            self.study.tell(trial, state=TrialState.FAIL)

    def fail(self, trial, reason: str) -> None:
        """Mark an unfinished trial failed (it stays pending and is re-run on resume)."""
        from optuna.trial import TrialState

        trial.set_user_attr(PREFIX + "failed", str(reason)[:2000])
        self.study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)

    def close(self, wall_seconds: float, trials_finished: int) -> None:
        """Record this run's totals and release the study (another process may resume it)."""
        if self._closed:
            return
        self._closed = True
        runs = list(self.study.user_attrs.get(PREFIX + "runs", []))
        for r in runs:
            if r.get("run") == self.run:
                r["wall_seconds"] = float(wall_seconds)
                r["trials_finished"] = int(trials_finished)
                r["ended_at"] = _now()
        self.study.set_user_attr(PREFIX + "runs", runs)
        self.study.set_user_attr(PREFIX + "driver", None)
        self.runs = runs

    def describe(self) -> dict:
        """JSON summary for the audit report: storage (password redacted), name, runs."""
        return {
            "storage": redact_storage(self.storage),
            "study_name": self.name,
            "run": self.run,
            "runs": list(self.runs),
        }


def _load_trials(study, record_from_dict):
    """Finished records, pending indices and the assigned history from the ledger's trials."""
    from optuna.trial import TrialState

    finished: dict = {}
    pairs: dict = {}
    for t in study.get_trials(deepcopy=False):
        attrs = t.user_attrs
        if PREFIX + "index" not in attrs:
            continue
        idx = int(attrs[PREFIX + "index"])
        rec = attrs.get(PREFIX + "record")
        if rec is not None:
            finished.setdefault(idx, record_from_dict(rec))
            if t.state == TrialState.RUNNING:  # killed between the record and the tell
                value = finished[idx].outcome.objective
                if math.isfinite(value):
                    study.tell(t.number, float(value))
                else:
                    study.tell(t.number, state=TrialState.FAIL)
        else:
            if t.state == TrialState.RUNNING:  # orphan of a dead process
                study.tell(t.number, state=TrialState.FAIL)
            if PREFIX + "pair" not in attrs:
                # killed between the index and the pair by a version that wrote the index first:
                # the trial never started, and its index is assigned again
                continue
            pairs.setdefault(idx, (NeighbouringPair.from_dict(attrs[PREFIX + "pair"]), attrs.get(PREFIX + "finder", "")))
    assigned = []
    pending = []
    for idx in sorted(set(finished) | set(pairs)):
        if idx in finished:
            rec = finished[idx]
            assigned.append((idx, rec.pair, float(rec.outcome.objective)))
        else:
            pair, finder = pairs[idx]
            assigned.append((idx, pair, None))
            pending.append(PendingTrial(idx, pair, finder))
    return finished, pending, assigned


def open_ledger(storage, study_name: str, given: dict, defaults: dict, *, resume: bool, record_from_dict) -> AuditStudy:
    """Create the ledger of a new audit, or load a stored one to resume it.

    Parameters
    ----------
    storage : str or optuna.storages.BaseStorage
        Optuna storage, e.g. ``"sqlite:///audit.db"``.
    study_name : str
    given : dict
        The settings of :data:`LOCKED_SETTINGS` given by the caller; ``None`` for "not given".
    defaults : dict
        Values for the settings left ``None`` when the audit is new (``seed`` is drawn at random
        if it has no default either).
    resume : bool
        Continue the stored audit if there is one (and create it if not). If False and the
        study exists, :class:`DPAuditError` is raised.
    record_from_dict : callable
        ``TrialRecord.from_dict`` (passed in to keep this module free of the audit loop).

    Returns
    -------
    AuditStudy

    Raises
    ------
    SettingsMismatchError
        If resuming with settings that differ from the stored ones (every difference is named).
    StudyInUseError
        If a live process on this host is running the stored audit.
    DPAuditError
        If the study exists but ``resume`` is False, or it is not a dpaudit ledger.
    """
    import numpy as np

    from ..search.optuna_finders import _import_optuna

    optuna = _import_optuna()
    optuna.logging.set_verbosity(max(optuna.logging.get_verbosity(), optuna.logging.WARNING))
    if isinstance(storage, str):
        try:
            storage_obj = optuna.storages.RDBStorage(storage) if "://" in storage else None
        except Exception as exc:  # sqlalchemy errors: bad URL, unreachable server
            raise DPAuditError(f"cannot open storage {redact_storage(storage)!r}: {exc}") from None
        if storage_obj is None:
            raise DPAuditError(f"storage must be a database URL such as sqlite:///audit.db, got {storage!r}")
    else:
        storage_obj = storage
    existing = set(optuna.study.get_all_study_names(storage_obj))
    if study_name in existing and not resume:
        raise DPAuditError(
            f"an audit named {study_name!r} already exists in {redact_storage(storage)}; pass --resume "
            "(resume=True) to continue it, or choose another --study-name"
        )
    study = optuna.create_study(
        storage=storage_obj, study_name=study_name, direction="maximize",
        sampler=optuna.samplers.RandomSampler(seed=0), load_if_exists=True,
    )
    attrs = study.user_attrs
    if study_name in existing:
        stored = attrs.get(PREFIX + "settings")
        if stored is None:
            raise DPAuditError(f"study {study_name!r} in {redact_storage(storage)} is not a dpaudit audit")
        diff = compare_settings(stored, given)
        if diff:
            raise SettingsMismatchError(
                f"cannot resume audit {study_name!r}: its settings differ from the stored ones (the trial "
                "budget and so beta per trial were fixed when it was created):\n  " + "\n  ".join(diff)
                + "\nUse the stored settings (or omit them), or start a new audit with another --study-name."
            )
        settings = stored
        driver = attrs.get(PREFIX + "driver")
        if driver and driver.get("host") == socket.gethostname() and int(driver.get("pid", -1)) != os.getpid() \
                and _pid_alive(driver.get("pid", -1)):
            raise StudyInUseError(
                f"audit {study_name!r} is being run by process {driver['pid']} on this host (run "
                f"{driver.get('run')}); wait for it to finish or stop it before resuming"
            )
    else:
        settings = {}
        for key in LOCKED_SETTINGS:
            settings[key] = given.get(key) if given.get(key) is not None else defaults.get(key)
        if settings.get("seed") is None:
            settings["seed"] = int(np.random.SeedSequence().entropy % (2**63))
        settings = _canonical(settings)
        study.set_user_attr(PREFIX + "settings", settings)
        study.set_user_attr(PREFIX + "schema", 1)
    runs = list(attrs.get(PREFIX + "runs", []))
    run = 1 + max((r.get("run", -1) for r in runs), default=-1)
    runs.append({"run": run, "started_at": _now(), "host": socket.gethostname(), "pid": os.getpid()})
    study.set_user_attr(PREFIX + "runs", runs)
    study.set_user_attr(PREFIX + "driver", {"host": socket.gethostname(), "pid": os.getpid(), "run": run})
    finished, pending, assigned = _load_trials(study, record_from_dict)
    return AuditStudy(
        study=study, storage=storage_obj, name=study_name, settings=settings, run=run,
        finished=finished, pending=pending, assigned=assigned, runs=runs,
    )


def peek_settings(storage, study_name: str) -> dict | None:
    """The stored settings of audit ``study_name`` in ``storage``, or None if there is none.

    Lets a front end build the finder with the stored seed before resuming. Reads only.

    Raises
    ------
    DPAuditError
        If the storage cannot be opened.
    """
    from ..search.optuna_finders import _import_optuna

    optuna = _import_optuna()
    try:
        if isinstance(storage, str) and storage.startswith("sqlite:///"):
            path = storage[len("sqlite:///"):]
            if path and not os.path.exists(path):
                return None
        names = optuna.study.get_all_study_names(storage)
        if study_name not in names:
            return None
        study = optuna.load_study(study_name=study_name, storage=storage)
    except Exception as exc:
        raise DPAuditError(f"cannot open storage {redact_storage(storage)!r}: {exc}") from None
    return study.user_attrs.get(PREFIX + "settings")


# ----------------------------------------------------------------------------- one entry point
DEFAULT_STORAGE = "sqlite:///audit.db"
"""Storage of ``dpaudit test --resume`` when no ``--storage`` is given."""


def default_study_name(mechanism_name: str) -> str:
    """Name of an audit in storage when none is given: ``"dpaudit-<mechanism name>"``."""
    return f"dpaudit-{mechanism_name}"


@dataclass(frozen=True)
class StudyPlan:
    """Where a persistent audit is kept and what is stored there already (see :func:`resolve_study`).

    Attributes
    ----------
    storage : str, optuna.storages.BaseStorage or None
        None: the audit is not kept (not resumable).
    study_name : str or None
        The audit's name in ``storage`` (None when not kept).
    resume : bool
    stored : dict or None
        The stored settings (:data:`LOCKED_SETTINGS`) when resuming an audit that exists and they
        were asked for (``peek=True``); None otherwise.
    seed : int or None
        The seed given, else the stored one (a finder must be built with the stored seed to replay
        its proposals), else None.
    """

    storage: object
    study_name: str | None
    resume: bool
    stored: dict | None = None
    seed: int | None = None

    def setting(self, key: str, value, explicit: bool):
        """A setting as the front end passes it to :func:`dpaudit.audit.loop.audit`, and the value
        that will run.

        On resume a setting the user did not give explicitly is passed as None (take the stored
        one); the value that will run is then the stored one, if any.

        Parameters
        ----------
        key : str
            Its name in :data:`LOCKED_SETTINGS` (``"num_samples"``, ``"trial_budget"``, ``"beta"``,
            ``"stages"``).
        value
            The front end's value (its default when not given).
        explicit : bool
            Whether the user gave it.

        Returns
        -------
        (passed, shown)
        """
        passed = None if (self.resume and not explicit) else value
        shown = stored_setting(self.stored, key) if (passed is None and self.stored is not None) else value
        return passed, shown

    def open(self, given: dict, defaults: dict, *, record_from_dict) -> AuditStudy:
        """Open the ledger (:func:`open_ledger`) of this plan's audit."""
        return open_ledger(self.storage, self.study_name, given, defaults, resume=self.resume,
                           record_from_dict=record_from_dict)


def resolve_study(storage, study_name: str | None, resume: bool, mechanism_name: str, *,
                  seed: int | None = None, default_storage: str | None = None, peek: bool = False) -> StudyPlan:
    """Decide where an audit is kept, under which name, and read what is stored: the one place the
    CLI (``--storage/--resume/--study-name``) and :func:`dpaudit.audit.loop.audit` resolve them.

    Parameters
    ----------
    storage : str, optuna.storages.BaseStorage or None
    study_name : str or None
        Default :func:`default_study_name` of ``mechanism_name``.
    resume : bool
    mechanism_name : str
    seed : int, optional
        The seed given by the caller; with ``peek``, a resumed audit's stored seed fills it in.
    default_storage : str, optional
        Storage used when ``resume`` is set without one (the CLI: :data:`DEFAULT_STORAGE`); without
        it, that is an error.
    peek : bool, default False
        Read the stored settings of an audit to resume (:func:`peek_settings`).

    Returns
    -------
    StudyPlan

    Raises
    ------
    ValueError
        If ``resume`` is set without a storage and no ``default_storage``.
    DPAuditError
        If ``study_name`` is given without a storage, or the storage cannot be opened (``peek``).
    """
    if resume and storage is None:
        if default_storage is None:
            raise ValueError("resume=True needs a storage (e.g. storage='sqlite:///audit.db')")
        storage = default_storage
    if storage is None:
        if study_name is not None:
            raise DPAuditError(f"study name {study_name!r} (--study-name) needs a storage (--storage, or --resume)")
        return StudyPlan(None, None, False, None, seed)
    name = study_name or default_study_name(mechanism_name)
    stored = peek_settings(storage, name) if (resume and peek) else None
    if stored is not None and seed is None:
        seed = int(stored["seed"])  # the finder's stream too must be the stored one
    return StudyPlan(storage, name, bool(resume), stored, seed)

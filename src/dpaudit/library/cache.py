"""Where the library-audit table keeps its records, and how a record is written.

The table (``docs/library_audits.md``) is rendered from a JSON cache of one record per row
(:func:`dpaudit.library.runner.audit_entry`), keyed by the row's key and valid while its
fingerprint (configuration, budget, library version) matches the registry's. The cache exists to
regenerate the table without re-running 7 hours of audits; ``dpaudit library audit`` never reads a
row's columns from it (every column of a run comes from that run), it only writes the run's record
there when asked (``--write-cache``).

Paths: in a dpaudit checkout (the package's source tree next to ``benchmarks/`` and ``docs/``) the
defaults are the repository's ``benchmarks/results/library_audits.json`` and
``docs/library_audits.md``; elsewhere (an installed dpaudit) ``.dpaudit/library_audits.json`` and
``library_audits.md`` under the working directory. Every command takes ``--cache`` and ``--doc``.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

__all__ = ["default_cache", "default_doc", "default_reruns", "load", "repository_root", "save_record"]


def repository_root() -> Path | None:
    """The dpaudit checkout this package runs from (the directory holding ``benchmarks/`` and
    ``docs/library_audits.md``), or None for an installed package."""
    root = Path(__file__).resolve().parents[3]
    return root if (root / "benchmarks").is_dir() and (root / "docs").is_dir() else None


def default_cache() -> Path:
    """The cache file the commands use when ``--cache`` is not given."""
    root = repository_root()
    return root / "benchmarks" / "results" / "library_audits.json" if root else Path(".dpaudit") / "library_audits.json"


def default_reruns() -> Path:
    """The reruns file (``--reruns`` records) next to the cache."""
    return default_cache().with_name("library_reruns.json")


def default_doc() -> Path:
    """The table file ``dpaudit library table`` writes when ``--doc`` is not given."""
    root = repository_root()
    return root / "docs" / "library_audits.md" if root else Path("library_audits.md")


def load(path: Path | str) -> dict:
    """The records of the cache at ``path`` (``key -> record``; empty when the file does not exist).

    Raises
    ------
    ValueError
        If the file is not a JSON object (names the path).
    """
    path = Path(path)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"the cache {path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"the cache {path} must hold a JSON object of records, got {type(data).__name__}")
    return data


def save_record(path: Path | str, record: dict, key: str | None = None) -> dict:
    """Write one record into the cache at ``path`` and return the record as stored.

    The file is re-read first, so runs writing different rows side by side keep each other's rows;
    a stored record with the same fingerprint is merged with the new one (the new fields win, the
    stages the new run did not run are kept, so a row keeps its last value of every stage; a new
    audit run drops the old run's confirmation and leak size, which belonged to that run).

    Parameters
    ----------
    path : Path or str
    record : dict
        Has ``key`` and ``fingerprint`` (or give ``key``).
    key : str, optional
        Defaults to ``record["key"]``.
    """
    with _SAVE_LOCK:  # rows audited side by side (``--jobs``) write from threads of one process
        return _save_record(Path(path), record, key or record["key"])


_SAVE_LOCK = threading.Lock()


def _save_record(path: Path, record: dict, key: str) -> dict:
    disk = load(path)
    old = dict(disk.get(key) or {})
    if old.get("fingerprint") == record.get("fingerprint"):
        if "first" in record:  # a new audit run: what came from the old run goes with it
            for stale in ("confirm", "leak_size", "budget"):
                old.pop(stale, None)
        record = {**old, **record}
    disk[key] = record
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + f".{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(disk, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
    return record

"""The registry of the library-audit table: every row of every library, in table order.

The rows live in one module per library (:mod:`dpaudit.library.rows`); this module assembles them
into :data:`REGISTRY` and the per-library data the table states with them (notes, what is left out,
prior reports, causes), resolves a library's installed version, and selects rows for
``dpaudit library audit LIB [ROW ...]`` (:func:`select`).

Rows from library environments
------------------------------
Libraries whose pins clash with dpaudit's run in environments of their own
(:mod:`dpaudit.library.envs`, when present): their rows are declared there as ``EnvRow`` data
(``dpaudit.library.envs.rows.ROWS``) and join the registry through :func:`entry_from_env_row`, with
``Entry.env`` set, so the runner, the stages and the table treat them like any other row. Their
version comes from the environment (:func:`library_version`).
"""

from __future__ import annotations

import importlib
import importlib.metadata

from .entry import Budget, Entry, Guarantee, LibraryInfo

__all__ = ["ADVERSARIAL_RECORD", "CAUSES", "ADVERSARIAL_SAME_CAUSE", "FLOAT_CAUSES", "LEFT_OUT", "LIBRARIES", "NOTES",
           "PACKAGES", "POWER_NOTES", "POWER_SKIPPED", "RECORD", "REGISTRY", "entry_from_env_row", "find", "fingerprint",
           "library_version", "row_module", "select"]

ROW_MODULES = ("diffprivlib", "opendp", "pipelinedp", "pydp", "opacus")
"""The in-process libraries' row modules (:mod:`dpaudit.library.rows`), in table order."""

_MODULES = {name: importlib.import_module(f"{__package__}.rows.{name}") for name in ROW_MODULES}


def entry_from_env_row(row) -> Entry:
    """An :class:`Entry` from a library environment's row (``dpaudit.library.envs.rows.EnvRow``).

    Parameters
    ----------
    row
        Anything with the fields of ``EnvRow``: ``library``, ``key``, ``name``, ``env``,
        ``catalogue_target`` (what ``dpaudit test`` loads), ``configuration``, ``epsilon``,
        ``delta``, ``neighbouring``, ``lower``, ``upper``, ``min_size``, ``max_size``,
        ``documented``, ``relation_note``, ``samples``, ``trials``, ``seed``, ``notes``.

    Returns
    -------
    Entry
        With ``env`` and ``row_key`` set; its budget runs ``--tester all`` as the other rows.
    """
    lower, upper = tuple(row.lower), tuple(row.upper)
    box = (f"records in [{lower[0]:g}, {upper[0]:g}]" if len(lower) == 1 else
           "records in " + " x ".join(f"[{lo:g}, {hi:g}]" for lo, hi in zip(lower, upper)))
    g = Guarantee(float(row.epsilon), float(row.delta), row.neighbouring,
                  f"{box}, {row.min_size} to {row.max_size} records", row.documented or row.name)
    return Entry(row.library, row.name, row.catalogue_target, row.configuration, g,
                 budget=Budget(samples=int(row.samples), trials=int(row.trials), seed=int(row.seed)),
                 documented=getattr(row, "notes", "") or "", relation_note=getattr(row, "relation_note", "") or "",
                 env=row.env, row_key=row.key)


def _env_entries() -> tuple[Entry, ...]:
    """The rows declared by the library environments (none when :mod:`dpaudit.library.envs` is absent)."""
    try:
        rows = importlib.import_module(f"{__package__}.envs.rows")
    except ImportError:
        return ()
    return tuple(entry_from_env_row(r) for r in getattr(rows, "ROWS", ()))


_ENV_ENTRIES = _env_entries()

LIBRARIES: dict[str, LibraryInfo] = {m.LIBRARY.name: m.LIBRARY for m in _MODULES.values()}
"""Every library of the table by name (environment libraries added from their rows)."""

def _env_library(entry: Entry) -> LibraryInfo:
    """A library environment's :class:`LibraryInfo`: its distribution is the environment's first
    declared one (``tmlt.analytics``, ``jax-privacy``), its install line the environment's pins."""
    try:
        env = importlib.import_module(f"{__package__}.envs").get_env(entry.env)
        dist, install = (env.distributions[0] if env.distributions else entry.env), " ".join(env.requirements)
    except (ImportError, KeyError):
        dist, install = entry.library.lower().replace(" ", "-"), ""
    return LibraryInfo(entry.library, dist, env=entry.env, install=install)


for _e in _ENV_ENTRIES:
    LIBRARIES.setdefault(_e.library, _env_library(_e))

REGISTRY: tuple[Entry, ...] = tuple(e for m in _MODULES.values() for e in m.ENTRIES) + _ENV_ENTRIES
"""Every entry of the table, in the order it is printed (library by library)."""

PACKAGES = {name: info.distribution for name, info in LIBRARIES.items()}
"""Library name in the table -> its distribution name (for the version)."""


def row_module(library: str):
    """The row module of ``library`` (None for an environment library)."""
    return next((m for m in _MODULES.values() if m.LIBRARY.name == library), None)


def _merged(attr: str) -> dict:
    out = {}
    for m in _MODULES.values():
        out.update(getattr(m, attr, None) or {})
    return out


NOTES = {m.LIBRARY.name: m.NOTE for m in _MODULES.values() if getattr(m, "NOTE", "")}
"""A note printed under a library's heading (how its rows are built and read)."""

LEFT_OUT = {m.LIBRARY.name: dict(getattr(m, "LEFT_OUT", {}) or {}) for m in _MODULES.values()}
LEFT_OUT["Not yet audited"] = {
    "diffprivlib.models LogisticRegression, PCA, KMeans, RandomForestClassifier, DecisionTreeClassifier": "not in "
    "the registry yet: GaussianNB, LinearRegression and StandardScaler have rows (audited through their fitted "
    "parameters), LogisticRegression one only at the published record's bug (IBM#106); one fit of these took 5 ms "
    "(PCA), 5-8 ms (the trees), 13 ms (KMeans) and 125 ms "
    "(LogisticRegression, objective perturbation then L-BFGS) on this loaded machine, 2 to 40 times a "
    "GaussianNB fit, so a row needs 10 minutes to hours of CPU. IBM/differential-privacy-library#104 (open) also "
    "reports k-means and vector-mechanism (LogisticRegression) calibration issues: not checked here",
    "PyDP's other modules (pydp.algorithms.numerical_mechanisms, partition_selection, quantile_tree)": "not in "
    "the registry yet: the Laplace and Gaussian mechanisms and partition selection are audited through "
    "PipelineDP's rows, which call them",
}
_NOT_INSTALLED = {
    "SmartNoise SQL": ("SmartNoise SQL (smartnoise-sql 1.0.10)", "`pip install --dry-run smartnoise-sql` would install "
                       "opendp 0.14.2, a downgrade of the opendp 0.16.0 the OpenDP rows audit (smartnoise-sql pins "
                       "opendp<0.15), and pandas"),
    "SmartNoise Synth": ("SmartNoise Synth (smartnoise-synth 1.0.8)", "`pip install --dry-run smartnoise-synth` would "
                         "downgrade opendp 0.16.0 to 0.14.2 (through smartnoise-sql) and opacus 1.6.0 to 0.14.0"),
    "Tumult Analytics": ("Tumult Analytics (tmlt.analytics 0.21.0)", "`pip install --dry-run tmlt.analytics` would "
                         "downgrade numpy 2.4.6 to 1.26.4 and sympy 1.14.0 to 1.12.1 (and would install pandas 1.5.3 "
                         "and pyspark 3.5.9, which also needs a Java runtime)"),
}
_missing = {what: why for lib, (what, why) in _NOT_INSTALLED.items() if lib not in LIBRARIES}
if _missing:
    LEFT_OUT["Left out (does not install here)"] = _missing
"""Parts of the scope with no entry yet, and why; printed under the tables."""

RECORD = _merged("RECORD")
"""Each finding against the record: known (with the reference), relation-dependent, or a candidate new
finding (searched for in the library's tracker and checked against the published record,
:mod:`dpaudit.library.record`)."""

ADVERSARIAL_RECORD = {m.LIBRARY.name: m.ADVERSARIAL_RECORD for m in _MODULES.values()
                      if getattr(m, "ADVERSARIAL_RECORD", "")}
"""The record of the adversarial-input findings, per library."""

ADVERSARIAL_SAME_CAUSE: dict[str, tuple[str, str]] = {
    **_merged("ADVERSARIAL_SAME_CAUSE"),
    **(getattr(importlib.import_module(f"{__package__}.envs.rows"), "ADVERSARIAL_SAME_CAUSE", {}) if _ENV_ENTRIES else {})}
"""Rows whose adversarial leaks share one cause and one reproducer: ``key -> (kind, why)``, where
``kind`` names the adversarial input whose reproducer shows them all, ``"row"`` for the row's
own reproducer, or a script of ``reproducers/`` (a name ending in ``.py``) that shows the same
code path on another row."""

POWER_NOTES = _merged("POWER_NOTES")
"""Rows whose power was computed beside the run: key -> what budget would catch the planted leak."""

POWER_SKIPPED: dict = {}
"""Rows with a planted twin whose power stage was left out on purpose: key -> why."""

CAUSES = tuple(c for m in _MODULES.values() for c in getattr(m, "CAUSES", ())) + (
    tuple(getattr(importlib.import_module(f"{__package__}.envs.rows"), "CAUSES", ())) if _ENV_ENTRIES else ())
"""Every cause of the table, library by library (:mod:`dpaudit.library.findings`)."""

FLOAT_CAUSES = _merged("FLOAT_CAUSES")
"""The library code each floating-point leak comes from, by target attribute."""


def library_version(library: str) -> str:
    """The version of ``library`` (a name of :data:`LIBRARIES`, or a distribution name) the rows audit.

    In-process libraries: the installed distribution's version, ``"not installed"`` when absent.
    Environment libraries: the version recorded in the environment (``"not built"`` before it is).
    """
    info = LIBRARIES.get(library)
    if info is not None and info.env is not None:
        try:
            envs = importlib.import_module(f"{__package__}.envs")
            env = envs.get_env(info.env)
            versions = env.versions() if env.exists() else {}
        except Exception:  # noqa: BLE001 - an environment that cannot say is "not built"
            versions = {}
        norm = info.distribution.lower().replace("_", "-")
        found = next((v for k, v in versions.items() if v and k.lower() != "python"
                      and k.lower().replace("_", "-") == norm), None)
        return found or "not built"
    try:
        return importlib.metadata.version(PACKAGES.get(library, library))
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def fingerprint(entry: Entry) -> dict:
    """``entry``'s fingerprint at the version of its library the rows audit (:func:`library_version`):
    what a cached record must match to be current."""
    return entry.fingerprint(library_version(entry.library))


def find(key: str) -> Entry:
    """The entry whose key is ``key``.

    Raises
    ------
    KeyError
        If no entry has that key (the message names the closest keys).
    """
    for e in REGISTRY:
        if e.key == key:
            return e
    import difflib

    close = difflib.get_close_matches(key, [e.key for e in REGISTRY], n=3)
    raise KeyError(f"no row {key!r}" + (f"; did you mean {', '.join(close)}?" if close else
                                         "; `dpaudit library list` shows them"))


def _library_name(name: str) -> str | None:
    low = name.lower()
    return next((lib for lib, info in LIBRARIES.items()
                 if low in (lib.lower(), info.distribution.lower(), lib.lower().replace(" ", "-"))), None)


def select(library: str, rows=()) -> list[Entry]:
    """The entries ``dpaudit library audit LIBRARY [ROW ...]`` runs.

    Parameters
    ----------
    library : str
        A library's name (``"diffprivlib"``, ``"OpenDP"``; case-insensitive, the distribution name
        works too) or ``"all"``.
    rows : sequence of str
        Row keys (``diffprivlib.laplace``) or their short part after the library (``laplace``); a
        trailing ``*`` matches a prefix (``tools.*`` is not a key, ``mean*`` is). Empty: every row
        of the library.

    Returns
    -------
    list of Entry
        In table order.

    Raises
    ------
    ValueError
        If the library is unknown or a row matches nothing (the message lists what is known).
    """
    if library.lower() == "all":
        mine = list(REGISTRY)
    else:
        lib = _library_name(library)
        if lib is None:
            raise ValueError(f"unknown library {library!r}; known: {', '.join(LIBRARIES)} (or 'all')")
        mine = [e for e in REGISTRY if e.library == lib]
    if not rows:
        return mine
    chosen = []
    for spec in rows:
        short = spec.split(".", 1)[1] if any(spec.lower().startswith(e.key.split(".", 1)[0] + ".") for e in mine) \
            else spec
        if short.endswith("*"):
            hits = [e for e in mine if e.key.split(".", 1)[1].startswith(short[:-1])]
        else:
            hits = [e for e in mine if e.key.split(".", 1)[1] == short or e.key == spec]
        if not hits:
            import difflib

            close = difflib.get_close_matches(short, [e.key.split(".", 1)[1] for e in mine], n=3)
            raise ValueError(f"no row {spec!r} in {library}" + (f"; did you mean {', '.join(close)}?" if close else ""))
        chosen += [e for e in hits if e not in chosen]
    return [e for e in mine if e in chosen]

"""The names of :mod:`dpaudit.library` the tests of the library-audit table use, in one namespace.

The table's logic is a package (registry, findings, runner, stages, table, accountants, one row
module per library); :func:`load_library_audit` gathers their names so each test reads
``la.NAME`` whichever module defines it. Monkeypatch the defining module (``runner.run_row``),
not the namespace.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]


def load_library_audit() -> SimpleNamespace:
    """Every public and private name of the package's modules (later modules win on a clash), plus
    ``load_cache()`` (the repository's cache), ``ROOT`` and the row modules as ``rows_<name>``."""
    from dpaudit.library import accountants, cache, findings, registry, runner, stages, table
    from dpaudit.library.rows import diffprivlib, opacus, opendp, pipelinedp, pydp

    ns = SimpleNamespace()
    for module in (registry, findings, runner, stages, accountants, table):
        for name in dir(module):
            if not name.startswith("__"):
                setattr(ns, name, getattr(module, name))
    ns.load_cache = lambda: cache.load(cache.default_cache())
    ns.ROOT = ROOT
    for name, module in (("diffprivlib", diffprivlib), ("opendp", opendp), ("pipelinedp", pipelinedp),
                         ("pydp", pydp), ("opacus", opacus)):
        setattr(ns, f"rows_{name}", module)
    return ns

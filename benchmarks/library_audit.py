"""A thin wrapper kept for old commands: the library-audit table is ``dpaudit library`` now.

The registry, runner, cache, stages and table live in :mod:`dpaudit.library`; the commands are::

    dpaudit library list [LIBRARY]                          # the rows
    dpaudit library audit LIBRARY [ROW ...] --write-cache   # run rows (as dpaudit test), keep their records
    dpaudit library table                                   # docs/library_audits.md from the records

This script maps its old options onto them (``--list``, ``--write-only``, ``--entries KEY ... [--force]
[--stages S] [--reruns K]``) and re-exports the names the reproducer generators
(``benchmarks/library_reproducers*.py``) import.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dpaudit.library.cache import default_cache, load
from dpaudit.library.findings import float_cause, relation_note  # noqa: F401  (re-exported)
from dpaudit.library.registry import (ADVERSARIAL_RECORD, LEFT_OUT, LIBRARIES, PACKAGES, RECORD, REGISTRY,  # noqa: F401
                                      fingerprint, library_version)
from dpaudit.library.rows.pipelinedp import _PDP_VECTOR_PUBLIC_CAUSE  # noqa: F401
from dpaudit.library.stages import adversarial_leaks  # noqa: F401
from dpaudit.library.table import (adversarial_reproducer_for, adversarial_reproducer_path,  # noqa: F401
                                   reproducer_path)

ROOT = Path(__file__).resolve().parents[1]


def load_cache(path: Path | None = None) -> dict:
    """The cached records (``key -> record``)."""
    return load(path or default_cache())


def main(argv=None) -> int:
    """Run the ``dpaudit library`` command the old options mean; returns its exit code."""

    from dpaudit.cli import app

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", nargs="*")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--write-only", action="store_true")
    ap.add_argument("--stages", default="audit")
    ap.add_argument("--reruns", type=int)
    args = ap.parse_args(argv)
    if args.list:
        calls = [["library", "list"]]
    elif args.write_only or not args.entries:
        calls = [["library", "table"]]
    else:
        stages = "all" if args.stages == "all" else ",".join(s for s in args.stages.split(",") if s != "leak")
        by_lib: dict = {}
        for key in args.entries:
            by_lib.setdefault(key.split(".", 1)[0], []).append(key)
        calls = [["library", "audit", lib, *keys, "--write-cache", "--confirm", "--stages", stages]
                 + (["--reruns", str(args.reruns)] if args.reruns else []) for lib, keys in by_lib.items()]
        calls.append(["library", "table"])
    code = 0
    for call in calls:
        print("dpaudit " + " ".join(call), flush=True)
        rc = app(call, standalone_mode=False)
        code = max(code, rc if isinstance(rc, int) else 0)
    return code


if __name__ == "__main__":
    sys.exit(main())

"""``benchmarks/library_audit.py`` loaded once as the module ``library_audit`` for the tests of
the library-audit table (it is a script, not part of the package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_library_audit():
    """The module, loaded on the first call and registered in ``sys.modules`` (its dataclasses
    look their module up there); later calls return the same module."""
    if "library_audit" not in sys.modules:
        spec = importlib.util.spec_from_file_location("library_audit", ROOT / "benchmarks" / "library_audit.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["library_audit"] = module
        spec.loader.exec_module(module)
    return sys.modules["library_audit"]

"""The command line starts without the heavy libraries (issue 37, item 3): ``import dpaudit``,
``dpaudit --help`` and ``dpaudit zoo`` import none of torch, optuna, matplotlib, dask, scipy or
dp_accounting (``--help`` not even numpy); each command imports what it needs when it runs. A check
of ``sys.modules`` in a fresh interpreter, not a timing."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("torch", "optuna", "matplotlib", "dask", "scipy", "dp_accounting", "sklearn", "pandas")

_PROBE = r"""
import contextlib, io, json, sys
HEAVY = %r
def loaded():
    return sorted(m for m in HEAVY + ("numpy",) if m in sys.modules)
seen = {}
import dpaudit
seen["import dpaudit"] = loaded()
from dpaudit.cli.app import main
seen["import dpaudit.cli.app"] = loaded()
for argv in (["--help"], ["test", "--help"], ["zoo"]):
    sys.argv = ["dpaudit", *argv]
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            main()
        except SystemExit:
            pass
    seen["dpaudit " + " ".join(argv)] = loaded()
print(json.dumps(seen))
"""


def test_cli_start_imports_nothing_heavy():
    res = subprocess.run([sys.executable, "-c", _PROBE % (HEAVY,)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    seen = json.loads(res.stdout.strip().splitlines()[-1])
    assert seen["import dpaudit"] == [], seen
    assert seen["import dpaudit.cli.app"] == [], seen
    assert seen["dpaudit --help"] == [] and seen["dpaudit test --help"] == [], seen
    assert seen["dpaudit zoo"] == ["numpy"], seen  # the zoo's mechanisms are numpy code; nothing more


def test_every_public_name_still_imports():
    """``from dpaudit import X`` for every X of ``__all__`` (names are loaded lazily, PEP 562)."""
    import dpaudit

    for name in dpaudit.__all__:
        assert getattr(dpaudit, name) is not None, name
    assert set(dpaudit.__all__) <= set(dir(dpaudit))
    exec("from dpaudit import *", {})  # noqa: S102
    import dpaudit.audit.loop  # the subpackage, imported: the name stays the function, as before

    assert dpaudit.audit is dpaudit.audit.__globals__["audit"] and callable(dpaudit.audit)
    from dpaudit import audit

    assert audit.__module__ == "dpaudit.audit.loop"

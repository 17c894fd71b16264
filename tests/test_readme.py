"""Every ```python block of README.md runs as it stands, in a namespace of its own in an empty folder.

A block is skipped only when its first line is the marker ``# readme-test: skip -- <reason>``
(none is today). The DP-SGD blocks need their optional dependencies (Opacus, JAX/Optax): without
them the block is skipped with the missing module named, as a fresh ``make test`` installs them.
"""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP_MARKER = "# readme-test: skip"
_NEEDS = {"opacus": "opacus", "jax": "jax", "optax": "optax", "torch": "torch", "sklearn": "sklearn",
          "dpaudit.dpsgd": "sklearn"}


def readme_blocks() -> list[tuple[int, str]]:
    """``(line number, code)`` of every ```python block of README.md."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [(text[:m.start()].count("\n") + 1, m.group(1))
            for m in re.finditer(r"^```python\n(.*?)^```", text, flags=re.S | re.M)]


BLOCKS = readme_blocks()


def test_the_readme_has_its_examples():
    codes = "\n".join(code for _, code in BLOCKS)
    assert len(BLOCKS) >= 4 and "OpacusCanaries" in codes and "import jax" in codes and "torch.func" in codes


@pytest.mark.parametrize("line, code", BLOCKS, ids=[f"README.md:{line}" for line, _ in BLOCKS])
def test_readme_block_runs_as_it_stands(line, code, tmp_path, monkeypatch):
    first = code.lstrip().splitlines()[0] if code.strip() else ""
    if first.startswith(SKIP_MARKER):
        reason = first[len(SKIP_MARKER):].strip(" -:")
        assert reason, f"README.md:{line}: a skipped block must give its reason after the marker"
        pytest.skip(f"README.md:{line}: {reason}")
    for name, module in _NEEDS.items():
        if re.search(rf"^\s*(import|from) {re.escape(name)}\b", code, flags=re.M):
            pytest.importorskip(module)
    monkeypatch.chdir(tmp_path)  # an empty folder: nothing but the installed package to lean on
    out = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(out):
        warnings.simplefilter("ignore")
        exec(compile(code, f"README.md:{line}", "exec"), {"__name__": "__main__"})  # noqa: S102 - our own README
    if "canaries.audit" in code:
        assert "accountant epsilon" in out.getvalue(), out.getvalue()

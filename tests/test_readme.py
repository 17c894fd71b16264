"""Every ```python block and every command of README.md runs as the README documents it.

Python blocks run as they stand, each in a namespace of its own in an empty folder. A block is
skipped only when its first line is the marker ``# readme-test: skip -- <reason>`` (none is today).
The DP-SGD blocks need their optional dependencies (Opacus, JAX/Optax): without them the block is
skipped with the missing module named, as a fresh ``make test`` installs them.

Commands (issue 44): every line of a ```bash block and every ``dpaudit ...`` span of the prose that
its clause says ``exits N`` for is run and must return the exit code the README documents (0 when
it documents none). What the README says is read from README.md itself, by
``benchmarks/readme_commands.py`` (its docstring is the convention): a command's comment gives its
exit code (``exit N``), its time, and where the full command is too long for the suite the smaller
budget it is tested with (``[test: --trials 2]``, stated in the README beside the command), or
``[test: skip -- REASON]``. Commands that draw random numbers (``test``, ``audit-scores``,
``dpsgd``) get ``--seed 0`` unless they give a seed, so the check is deterministic. They run in one
temporary folder in README order, with the README's ``# file: NAME`` blocks written there first;
``dpaudit`` runs in this process through the console script's ``main()`` (the start-up of a new
interpreter, about 0.5 s each, is not what is checked). ``make demo``'s audits are the Makefile's.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
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


# --------------------------------------------------------------------------------------- commands --
sys.path.insert(0, str(ROOT / "benchmarks"))
import readme_commands  # noqa: E402  (benchmarks/readme_commands.py: the README's commands)

COMMANDS = readme_commands.readme_commands()
RUN = [c for c in COMMANDS if not c.skip]
RUN = [c for i, c in enumerate(RUN)  # a command shown twice with the same code and budget is run once
       if not any((d.text, d.exit, d.test_options) == (c.text, c.exit, c.test_options) for d in RUN[:i])]
KNOWN_CODES = {0, 1, 2, 3, 5}  # the exit-code table's verdicts (4 is a bug, 130 an interruption)


def test_every_readme_command_states_its_time_and_exit_code():
    assert len(COMMANDS) >= 25 and any(c.source == "prose" for c in COMMANDS)
    for c in COMMANDS:
        where = f"README.md:{c.line}: {c.text}"
        assert c.time is not None, f"{where}: give its measured time in its comment (issue 44)"
        assert c.exit in KNOWN_CODES, where
        if c.skip is not None:
            assert len(c.skip) > 10, f"{where}: a skipped command gives its reason"
    # the README states the convention where a reader meets it
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "[test: " in text and "tests/test_readme.py" in text


def test_the_readme_examples_of_ones_own_mechanism_are_its_files():
    files = readme_commands.readme_files()
    assert "mymech.py" in files and any(n.startswith("tests/") for n in files), files
    own = [c for c in COMMANDS if "mymech.py:" in c.text]
    assert {c.exit for c in own} >= {0, 5}, own  # the leak, and the distribution alone with --tester hockey-stick


@pytest.fixture(scope="module")
def commands_folder(tmp_path_factory):
    """The one folder the README's commands run in, with its files written first."""
    folder = tmp_path_factory.mktemp("readme-commands")
    readme_commands.prepare(folder)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("cmd", RUN, ids=[f"README.md:{c.line}" for c in RUN])
def test_readme_command_exits_as_documented(cmd, commands_folder):
    for o in readme_commands.run_command(cmd, commands_folder, budget="test", timeout=300):
        shown = " ".join(map(str, o.argv))
        assert o.code == o.expected, (f"README.md:{cmd.line}: `{shown}` exited {o.code}, the README documents "
                                      f"{o.expected}\n--- stdout\n{o.stdout[-3000:]}\n--- stderr\n{o.stderr[-3000:]}")


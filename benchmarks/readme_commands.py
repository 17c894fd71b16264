"""Every command README.md shows, run as the README documents it: its exit code and its time.

The README is the specification: this module reads the commands, their documented exit codes and
the smaller budgets the test suite runs them with from README.md itself, so that a later edit of the
README is checked as it stands (``tests/test_readme.py`` runs every command at its test budget;
``python benchmarks/readme_commands.py`` runs them as written and records the times the README
gives, ``benchmarks/results/readme_commands.md``).

What counts as a command, and what the README says about it (issue 44):

* every line of a ```` ```bash ```` block that is not a comment (a line ending in ``\\`` continues on
  the next). Its note is its trailing ``# ...`` comment together with the comment lines right above
  it. In the note:

  - ``exit N`` (or ``exits N``): the exit code the command must return; none given means 0;
  - a time (``3 s``, ``~45 s``, ``2 min``, ``7 h``): how long it takes; every command states one;
  - ``[test: OPTIONS]``: the test runs it with these options instead (each ``--flag value`` replaces
    the command's own value of that flag, or is added), a smaller budget said where it is used;
  - ``[test: skip -- REASON]``: the test does not run it, for the reason given (e.g. ``make test``,
    which runs the test suite itself);

* every ``dpaudit ...`` command in an inline code span of the prose that the same clause (up to
  the next ``;`` or sentence end) says ``exits N`` for; it is run as it stands;
* a ```` ```python ```` block whose first line is ``# file: NAME`` is a file the commands use: it is
  written to ``NAME`` in the folder where the commands run, before any of them.

``make demo`` runs the ``dpaudit`` lines of the Makefile's ``demo`` recipe (each with the exit code
its ``test $$? -eq N`` checks, else 0) after its install step; everything else runs in one
temporary folder, in README order (a command may read what an earlier one wrote), with
``dpaudit`` and ``.venv/bin/dpaudit`` the installed command line, ``python`` and ``.venv/bin/python``
this interpreter, ``pytest`` ``python -m pytest``, a relative path that names a file of the
repository (``examples/x.py``) that file, and ``PYTHONPATH=src`` the repository's ``src``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import resource
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

_EXIT = re.compile(r"\bexits? (?:code )?(\d+)\b")
_TIME = re.compile(r"(?<![\w.])~?\d+(?:[.,]\d+)?(?:[-–]\d+(?:[.,]\d+)?)? ?(?:s|min|h|ms)\b")
_TEST = re.compile(r"\[test: ([^\]]*)\]")


@dataclass(frozen=True)
class Command:
    """One command of the README.

    Attributes
    ----------
    line : int
        Its line in README.md (1-based).
    text : str
        The command as shown (continuation lines joined).
    note : str
        What the README says about it (the comments, or the prose clause).
    exit : int
        The documented exit code (0 when none is given).
    test_options : tuple of str
        ``[test: ...]`` options the test runs it with (empty: as it stands).
    skip : str or None
        ``[test: skip -- REASON]``'s reason.
    time : str or None
        The time the README gives.
    source : str
        ``"block"`` (a bash block) or ``"prose"``.
    """

    line: int
    text: str
    note: str
    exit: int
    test_options: tuple = ()
    skip: str | None = None
    time: str | None = None
    source: str = "block"

    @property
    def words(self) -> list[str]:
        return shlex.split(self.text)


def _note_fields(note: str) -> dict:
    m = _EXIT.search(note)
    out = {"exit": int(m.group(1)) if m else 0, "time": None, "test_options": (), "skip": None}
    t = _TIME.search(_TEST.sub("", note))
    out["time"] = t.group(0) if t else None
    tm = _TEST.search(note)
    if tm:
        spec = tm.group(1).strip()
        if spec.startswith("skip"):
            out["skip"] = spec[4:].strip(" -–:") or "no reason given"
        else:
            out["test_options"] = tuple(shlex.split(spec))
    return out


def readme_commands(text: str | None = None) -> list[Command]:
    """The commands of README.md (``text``: its contents; default: read the file), in order."""
    text = README.read_text(encoding="utf-8") if text is None else text
    lines = text.splitlines()
    out: list[Command] = []
    in_bash, comments, i = False, [], 0
    while i < len(lines):
        raw = lines[i]
        if raw.startswith("```"):
            in_bash = raw.strip() == "```bash" and not in_bash
            comments = []
            i += 1
            continue
        if not in_bash:
            i += 1
            continue
        stripped = raw.strip()
        if not stripped:
            comments = []
            i += 1
            continue
        if stripped.startswith("#"):
            comments.append(stripped.lstrip("# "))
            i += 1
            continue
        start, parts = i, []
        while True:  # join continuation lines
            body = lines[i]
            code, _, note = _split_comment(body)
            if code.rstrip().endswith("\\"):
                parts.append(code.rstrip()[:-1])
                comments.append(note) if note else None
                i += 1
                continue
            parts.append(code)
            if note:
                comments.append(note)
            break
        note = " ".join(comments)
        out.append(Command(line=start + 1, text=" ".join(" ".join(parts).split()), note=note, source="block",
                           **_note_fields(note)))
        comments = []
        i += 1
    out.extend(_prose_commands(text))
    return sorted(out, key=lambda c: c.line)


def _split_comment(line: str) -> tuple[str, str, str]:
    """``(code, "#", comment)`` of a shell line (a ``#`` outside quotes starting a word)."""
    quote = None
    for j, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (j == 0 or line[j - 1].isspace()):
            return line[:j], "#", line[j + 1:].strip()
    return line, "", ""


_SPAN = re.compile(r"`((?:\.venv/bin/)?dpaudit [^`]+)`")


def _prose_commands(text: str) -> list[Command]:
    out = []
    fenced = False
    offset = 0
    prose = []
    for line in text.splitlines(keepends=True):  # blank out the code blocks, keep the offsets
        if line.startswith("```"):
            fenced = not fenced
            prose.append(" " * (len(line) - 1) + "\n")
        else:
            prose.append(" " * (len(line) - 1) + "\n" if fenced else line)
        offset += len(line)
    flat = "".join(prose)
    for m in _SPAN.finditer(flat):
        span = m.group(1).replace("\\|", "|")
        if "..." in span or "|" in span or " " not in span.split("dpaudit ", 1)[1].strip():
            continue  # a placeholder or a bare subcommand name, not a command to run
        rest = flat[m.end():]
        clause = re.split(r";|\.\s|\n\s*\n|`(?:\.venv/bin/)?dpaudit ", rest, maxsplit=1)[0]
        clause = " ".join(clause.split())
        if not _EXIT.search(clause):
            continue
        line = flat[:m.start()].count("\n") + 1
        out.append(Command(line=line, text=" ".join(span.split()), note=clause, source="prose", **_note_fields(clause)))
    return out


def readme_files(text: str | None = None) -> dict[str, str]:
    """The files of the README: ``{name: code}`` of every ```python block whose first line is
    ``# file: NAME``."""
    text = README.read_text(encoding="utf-8") if text is None else text
    out = {}
    for m in re.finditer(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
        code = m.group(1)
        first = code.splitlines()[0] if code.strip() else ""
        f = re.match(r"#\s*file:\s*(\S+)", first)
        if f:
            out[f.group(1)] = code
    return out


def demo_commands(makefile: Path = ROOT / "Makefile") -> list[tuple[list[str], int]]:
    """The ``dpaudit`` lines of the Makefile's ``demo`` recipe: ``(argv after "dpaudit", exit code)``."""
    recipe, inside = [], False
    for line in makefile.read_text().splitlines():
        if line.startswith("demo:"):
            inside = True
            continue
        if inside:
            if not line.startswith("\t"):
                break
            recipe.append(line.strip())
    out = []
    for line in recipe:
        if "/dpaudit " not in line or line.startswith("@"):
            continue
        cmd, _, check = line.partition(";")
        words = shlex.split(cmd)
        i = next(j for j, w in enumerate(words) if w.endswith("/dpaudit"))
        m = re.search(r"test \$\$\? -eq (\d+)", check)
        out.append((words[i + 1:], int(m.group(1)) if m else 0))
    return out


def with_options(words: list[str], options) -> list[str]:
    """``words`` with each ``--flag value`` of ``options`` replacing that flag's value (or added);
    a flag alone (followed by another flag or nothing) is added when missing."""
    words, opts = list(words), list(options)
    j = 0
    while j < len(opts):
        flag = opts[j]
        value = opts[j + 1] if j + 1 < len(opts) and not _is_flag(opts[j + 1]) else None
        j += 2 if value is not None else 1
        if flag in words:
            k = words.index(flag)
            if value is not None and k + 1 < len(words):
                words[k + 1] = value
        else:
            words += [flag] + ([value] if value is not None else [])
    return words


def _is_flag(word: str) -> bool:
    return word.startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?(e-?\d+)?", word)


SEEDED = ("test", "audit-scores", "dpsgd")
"""Subcommands that draw random numbers: the test gives them ``--seed 0`` when the README does not."""


@dataclass
class Outcome:
    """What one command did: exit code, wall and CPU seconds, output."""

    command: Command
    argv: list
    code: int
    seconds: float
    cpu_seconds: float
    stdout: str = ""
    stderr: str = ""
    skipped: str | None = None
    expected: int = 0
    extra: dict = field(default_factory=dict)


def _resolve(words: list[str], folder: Path) -> tuple[list[str], dict, str]:
    """``(argv, extra environment, kind)`` of a README command's words; kind ``"dpaudit"`` (argv
    after the program name), ``"process"`` or ``"make-demo"`` / ``"make"``."""
    env = {}
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
        k, v = words.pop(0).split("=", 1)
        env[k] = str(ROOT / v) if k == "PYTHONPATH" and not os.path.isabs(v) else v
    prog, args = words[0], words[1:]
    args = [str(ROOT / a) if not a.startswith("-") and "/" in a and (ROOT / a).is_file() else a for a in args]
    if prog in ("dpaudit", ".venv/bin/dpaudit"):
        return args, env, "dpaudit"
    if prog in ("python", "python3", ".venv/bin/python"):
        return [sys.executable, *args], env, "process"
    if prog == "pytest":
        return [sys.executable, "-m", "pytest", *args], env, "process"
    if prog == "make":
        return args, env, "make-demo" if args == ["demo"] else "make"
    raise ValueError(f"README.md: no way to run {prog!r} (a command must start with dpaudit, python, pytest or make)")


def run_dpaudit(argv: list[str], *, in_process: bool, env: dict | None = None, cwd: Path,
                timeout: float = 600) -> tuple[int, str, str]:
    """Run ``dpaudit ARGV`` in ``cwd``: in this process through the console script's ``main()``
    (exit code from its ``SystemExit``), or as a process of the installed script."""
    if not in_process:
        exe = Path(sys.executable).with_name("dpaudit")
        cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "dpaudit.cli"]
        res = subprocess.run([*cmd, *argv], capture_output=True, text=True, cwd=cwd, timeout=timeout,
                             env={**os.environ, **(env or {}), "COLUMNS": "100"})
        return res.returncode, res.stdout, res.stderr
    from dpaudit.cli.app import main

    old_argv, old_cwd, old_path, old_modules = sys.argv, os.getcwd(), list(sys.path), set(sys.modules)
    out, err = io.StringIO(), io.StringIO()
    code = 0
    try:
        os.chdir(cwd)
        sys.argv = ["dpaudit", *argv]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = old_argv
        os.chdir(old_cwd)
        sys.path[:] = old_path
        for name in set(sys.modules) - old_modules:  # the README's own files (mymech.py), not kept loaded
            if str(getattr(sys.modules[name], "__file__", None) or "").startswith(str(cwd)):
                del sys.modules[name]
    return code, out.getvalue(), err.getvalue()


def _cpu() -> float:
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def run_command(cmd: Command, folder: Path, *, budget: str = "test", in_process: bool = True,
                timeout: float = 600) -> list[Outcome]:
    """Run ``cmd`` in ``folder`` at ``budget`` (``"test"``: its ``[test: ...]`` options and a
    fixed ``--seed 0``; ``"full"``: as written). ``make demo`` gives one outcome per demo command."""
    words = cmd.words
    if budget == "test" and cmd.test_options:
        words = with_options(words, cmd.test_options)
    argv, env, kind = _resolve(list(words), folder)
    if kind == "make":
        raise ValueError(f"README.md:{cmd.line}: only `make demo` can be run by the test; mark `{cmd.text}` "
                         "[test: skip -- REASON]")
    runs = []
    if kind == "make-demo":
        if budget == "full":
            runs = [("process", ["make", "-C", str(ROOT), "demo"], cmd.exit)]
        else:
            runs = [("dpaudit", a if (a[:1] and a[0] not in SEEDED) or "--seed" in a else [*a, "--seed", "0"], code)
                    for a, code in demo_commands()]  # a fixed seed, as every other command the test runs
    else:
        if kind == "dpaudit" and budget == "test" and argv and argv[0] in SEEDED and "--seed" not in argv:
            argv = [*argv, "--seed", "0"]
        runs = [(kind, argv, cmd.exit)]
    outcomes = []
    for how, a, expected in runs:
        t0, c0 = time.perf_counter(), _cpu()
        if how == "dpaudit":
            code, out, err = run_dpaudit(a, in_process=in_process, env=env, cwd=folder, timeout=timeout)
        else:
            clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
            res = subprocess.run(a, capture_output=True, text=True, cwd=folder, timeout=timeout,
                                 env={**clean, **env, "COLUMNS": "100"})
            code, out, err = res.returncode, res.stdout, res.stderr
        outcomes.append(Outcome(cmd, a, code, time.perf_counter() - t0, _cpu() - c0, out, err, expected=expected))
    return outcomes


def prepare(folder: Path, text: str | None = None) -> None:
    """Write the README's files (``# file: NAME`` python blocks) into ``folder``."""
    for name, code in readme_files(text).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code)


def budget_is_test(args) -> bool:
    return args.budget == "test"


def main() -> None:  # pragma: no cover - a benchmark
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", choices=("full", "test"), default="full")
    ap.add_argument("--only", default="", help="run only the commands whose text holds this")
    ap.add_argument("--folder", default="", help="where to run (default: a new temporary folder)")
    ap.add_argument("--out", default="", help="write a Markdown table here")
    args = ap.parse_args()
    import tempfile

    folder = Path(args.folder or tempfile.mkdtemp(prefix="dpaudit-readme-"))
    folder.mkdir(parents=True, exist_ok=True)
    prepare(folder)
    load = os.getloadavg()
    rows = []
    for cmd in readme_commands():
        if args.only and args.only not in cmd.text:
            continue
        if cmd.skip:  # a usage line, the test suite itself, a command that writes into the checkout
            print(f"README.md:{cmd.line}: not run ({cmd.skip}): {cmd.text}", flush=True)
            rows.append((cmd, None, "not run"))
            continue
        for o in run_command(cmd, folder, budget=args.budget, in_process=False, timeout=7200):
            ok = "ok" if o.code == o.expected else "WRONG"
            shown = " ".join(map(str, o.argv)) if cmd.text == "make demo" and budget_is_test(args) else cmd.text
            print(f"README.md:{cmd.line}: exit {o.code} (documented {o.expected}, {ok}) in {o.seconds:.1f} s "
                  f"(CPU {o.cpu_seconds:.1f} s; README says {cmd.time}): {shown}", flush=True)
            rows.append((cmd, o, ok))
    after = os.getloadavg()
    print(f"load average before {load[0]:.1f}, after {after[0]:.1f} (1 min)")
    if args.out:
        lines = [f"# README commands ({args.budget} budget)", "",
                 f"`python benchmarks/readme_commands.py --budget {args.budget}`; load average {load[0]:.1f} before, "
                 f"{after[0]:.1f} after (1 min), {os.cpu_count()} cores.", "",
                 "| README line | command | exit (documented) | wall s | CPU s | README says |", "|---|---|---|---:|---:|---|"]
        for cmd, o, ok in rows:
            if o is None:
                lines.append(f"| {cmd.line} | `{cmd.text}` | not run: {cmd.skip} | - | - | {cmd.time or '-'} |")
                continue
            lines.append(f"| {cmd.line} | `{cmd.text}` | {o.code} ({o.expected}){'' if ok == 'ok' else ' WRONG'} | "
                         f"{o.seconds:.1f} | {o.cpu_seconds:.1f} | {cmd.time or '-'} |")
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":  # pragma: no cover
    main()

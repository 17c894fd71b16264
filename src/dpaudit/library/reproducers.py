"""The standalone reproducers (``reproducers/*.py``): their install lines, checked and run fresh.

Every non-pass row of the table has a script that needs only the library and NumPy: it runs the
row's witness pair, counts how often the output falls in the witness set, prints both frequencies
with certified bounds, a one-line verdict and the text to paste into the library's tracker. Its
module docstring states the ``pip install`` line that makes it run in a fresh environment (the pins
it needs: diffprivlib 0.6.6 fails at import with scikit-learn >= 1.6, so its line pins
``scikit-learn<1.6``); the line is the library's :attr:`~dpaudit.library.entry.LibraryInfo.install`.

* :func:`scripts` reads the scripts and their install lines;
* :func:`check` (cheap, for CI) says which scripts state no install line, or one without the pins
  the library needs;
* :func:`run_fresh` creates one virtual environment per install line *without dpaudit*, installs the
  line, checks that ``import dpaudit`` fails there, runs every script in it with ``python -I`` and
  records the install and run times and the verdict each prints.

The scripts are generated from the cache by ``benchmarks/library_reproducers.py`` and
``benchmarks/library_reproducers_models.py``.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["FreshRun", "Script", "check", "install_line", "pins_needed", "run_fresh", "scripts"]

_INSTALL = re.compile(r"(?:^\s*|``)pip install (?P<args>[^`\n]*[^`\s])", re.M)
"""An install line: on a line of its own, or inline as ````pip install ...```` (the input-space search's
reproducers)."""


def install_line(text: str) -> str | None:
    """The arguments of the first ``pip install`` line of a script's module docstring, or None."""
    m = re.match(r'\s*(?:#[^\n]*\n\s*)*(?P<q>"""|\'\'\')(?P<doc>.*?)(?P=q)', text, re.S)
    if not m:
        return None
    found = _INSTALL.search(m.group("doc"))
    return found.group("args").strip() if found else None


@dataclass(frozen=True)
class Script:
    """A reproducer: ``name`` (file name), ``path``, ``library`` (a table library's name or None when
    the file's prefix names none) and ``install`` (its install line's arguments, or None)."""

    name: str
    path: Path
    library: str | None
    install: str | None

    def to_dict(self) -> dict:
        """Plain JSON."""
        return {"name": self.name, "path": str(self.path), "library": self.library, "install": self.install}


def _prefixes() -> dict:
    from .registry import LIBRARIES

    return {name.lower().replace(" ", "_").replace("-", "_"): name for name in LIBRARIES}


def _library_of(name: str) -> str | None:
    prefixes = _prefixes()
    best = max((p for p in prefixes if name.startswith(p + "_")), key=len, default=None)
    return prefixes[best] if best else None


def scripts(directory: Path | str | None = None, library: str | None = None) -> list[Script]:
    """The reproducers in ``directory`` (default: the repository's ``reproducers/``), optionally one library's.

    Raises
    ------
    ValueError
        If the directory does not exist or the library is unknown.
    """
    from .cache import repository_root
    from .registry import LIBRARIES, _library_name

    directory = Path(directory) if directory is not None else (repository_root() or Path(".")) / "reproducers"
    if not directory.is_dir():
        raise ValueError(f"no reproducers directory at {directory}")
    lib = None
    if library is not None and library.lower() != "all":
        lib = _library_name(library)
        if lib is None:
            raise ValueError(f"unknown library {library!r}; known: {', '.join(LIBRARIES)}")
    out = []
    for path in sorted(directory.glob("*.py")):
        owner = _library_of(path.name)
        if lib is not None and owner != lib:
            continue
        out.append(Script(path.name, path, owner, install_line(path.read_text())))
    return out


def _requirement_name(req: str) -> str:
    return re.split(r"[<>=!~\[; ]", req.strip("'\""), maxsplit=1)[0].lower().replace("_", "-")


def pins_needed(library: str) -> dict:
    """``requirement name -> the requirement`` a script of ``library`` must state: every requirement of
    the library's install line (:attr:`~dpaudit.library.entry.LibraryInfo.install`) that carries a
    version constraint."""
    from .registry import LIBRARIES

    info = LIBRARIES.get(library)
    reqs = shlex.split(info.install) if info and info.install else []
    return {_requirement_name(r): r for r in reqs if re.search(r"[<>=~!]", r)}


def check(items) -> list[str]:
    """Problems of the scripts' install lines: none stated, the library's own distribution not pinned
    with ``==``, or a constraint the library needs (:func:`pins_needed`) missing.

    Returns
    -------
    list of str
        One sentence per problem, naming the script; empty when every script is fine.
    """
    from .registry import LIBRARIES

    problems = []
    for s in items:
        if s.library is None:
            problems.append(f"{s.name}: its name does not start with a library of the table")
            continue
        if not s.install:
            problems.append(f"{s.name}: no `pip install` line in its docstring")
            continue
        stated = {_requirement_name(r): r for r in shlex.split(s.install) if not r.startswith("-")}
        dist = LIBRARIES[s.library].distribution.lower()
        if not re.search(r"==\s*[\w.]+", stated.get(dist, "")):
            problems.append(f"{s.name}: the install line does not pin {dist} with == ({s.install!r})")
        for name, req in pins_needed(s.library).items():
            if stated.get(name, "").replace(" ", "") != req.replace(" ", ""):
                problems.append(f"{s.name}: the install line lacks {req!r} ({s.install!r})")
    return problems


@dataclass(frozen=True)
class FreshRun:
    """One script run in a fresh environment.

    Attributes
    ----------
    script : str
    install : str
        The install line the environment was made from.
    install_seconds : float
        Creating the environment and installing the line (shared by the scripts of one line).
    run_seconds : float
        The script's wall time.
    verdict : str
        The script's ``VERDICT:`` line (``"no verdict"`` when it printed none; the last stderr line
        when it failed).
    reproduced : bool
        The verdict is a violation or a reproduced error.
    dpaudit_importable : bool
        Whether ``import dpaudit`` worked in the environment (it must not).
    returncode : int
    """

    script: str
    install: str
    install_seconds: float
    run_seconds: float
    verdict: str
    reproduced: bool
    dpaudit_importable: bool
    returncode: int

    def to_dict(self) -> dict:
        """Plain JSON."""
        return asdict(self)


def _venv(root: Path, line: str, log) -> tuple[Path, float, bool]:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, capture_output=True)
    python = root / "bin" / "python"
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *shlex.split(line)], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"pip install {line} failed in a fresh environment:\n{done.stderr[-2000:]}")
    seconds = time.perf_counter() - t0
    probe = subprocess.run([str(python), "-I", "-c", "import dpaudit"], capture_output=True, text=True, check=False)
    if log:
        log(f"pip install {line}: {seconds:.0f} s (dpaudit importable: {probe.returncode == 0})")
    return python, seconds, probe.returncode == 0


def run_fresh(items, *, venvs: Path | str | None = None, runs: int | None = None, timeout: float = 1800,
              log=None) -> list[FreshRun]:
    """Run each script in a fresh virtual environment made from its own install line.

    One environment per distinct install line (``python -m venv``, then ``pip install LINE``), in
    ``venvs`` (kept) or a temporary directory (removed after). Each script runs as ``python -I
    SCRIPT [runs]`` from a directory outside the repository, so nothing but the environment is
    importable.

    Parameters
    ----------
    items : sequence of Script
    venvs : Path, optional
    runs : int, optional
        Runs per dataset passed to each script (default: the script's own).
    timeout : float
        Seconds before one script is stopped.
    log : callable, optional
        Called with a line of text per environment and script.

    Returns
    -------
    list of FreshRun

    Raises
    ------
    RuntimeError
        If an install line does not install in a fresh environment (pip's error tail).
    """
    groups: dict = {}
    for s in items:
        if s.install:
            groups.setdefault(s.install, []).append(s)
    results = []
    with tempfile.TemporaryDirectory(prefix="dpaudit-reproducers-") as tmp:
        base = Path(venvs).resolve() if venvs is not None else Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        for n, (line, group) in enumerate(groups.items()):
            python, install_s, importable = _venv(base / f"env{n}", line, log)
            for s in group:
                t0 = time.perf_counter()
                try:
                    done = subprocess.run([str(python), "-I", str(s.path.resolve()), *([str(runs)] if runs else [])],
                                          capture_output=True, text=True, cwd=tmp, timeout=timeout, check=False)
                    code, stdout, stderr = done.returncode, done.stdout, done.stderr
                except subprocess.TimeoutExpired:
                    code, stdout, stderr = -9, "", f"stopped after {timeout:.0f} s"
                seconds = time.perf_counter() - t0
                verdict = next((ln.strip() for ln in stdout.splitlines() if ln.startswith("VERDICT:")), None)
                if verdict is None:
                    verdict = (stderr.strip().splitlines() or ["no verdict"])[-1][:200]
                reproduced = verdict.startswith(("VERDICT: VIOLATION", "VERDICT: ERROR REPRODUCED"))
                results.append(FreshRun(s.name, line, round(install_s, 1), round(seconds, 2), verdict, reproduced,
                                        importable, code))
                if log:
                    log(f"{s.name}: {verdict} ({seconds:.1f} s)")
    return results

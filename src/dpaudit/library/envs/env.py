"""A library's own virtual environment: its specification, its creation and its workers.

A :class:`LibraryEnv` names a Python and the pinned requirements of one library. It lives under
:func:`envs_dir` (``$DPAUDIT_ENVS_DIR``, else ``~/.cache/dpaudit/envs``) as ``NAME/``, created on
demand by :meth:`LibraryEnv.ensure` (``python -m venv`` then ``pip install`` of the lock file, or
of the requirements where no lock is recorded); a marker file ``dpaudit-env.json`` in it records
the specification it was built from and ``pip freeze`` after the install, so a changed pin rebuilds
it and a report can state exactly what ran. dpaudit's own environment is never touched.

:meth:`LibraryEnv.mechanism` returns an :class:`~dpaudit.library.envs.mechanism.EnvMechanism`, a
:class:`~dpaudit.mechanisms.base.Mechanism` whose samples are drawn by a worker process in the
environment, so every tester, finder and ``dpaudit test`` works on it unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import DPAuditError
from .client import WorkerClient

__all__ = ["EnvCreationError", "LibraryEnv", "envs_dir", "TARGETS_DIR", "LOCKS_DIR"]

TARGETS_DIR = Path(__file__).resolve().parents[1] / "targets"
"""The worker-side target modules (``dpaudit/library/targets``), first on every worker's path."""

LOCKS_DIR = Path(__file__).resolve().parent / "locks"
"""Recorded ``pip freeze`` of each environment as built here (``NAME.txt``)."""

MARKER = "dpaudit-env.json"

PIP_TAIL_LINES = 25


class EnvCreationError(DPAuditError):
    """A library's environment could not be created; the message ends with pip's output."""


def envs_dir() -> Path:
    """Where environments live: ``$DPAUDIT_ENVS_DIR``, else ``~/.cache/dpaudit/envs``."""
    root = os.environ.get("DPAUDIT_ENVS_DIR")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "dpaudit" / "envs"


def _tail(text: str, lines: int = PIP_TAIL_LINES) -> str:
    kept = [ln for ln in text.splitlines() if ln.strip()][-lines:]
    return "\n".join(kept) if kept else "(no output)"


@dataclass
class LibraryEnv:
    """One library's virtual environment.

    Parameters
    ----------
    name : str
        Directory name and key (``"smartnoise-sql"``).
    python : str
        ``"3.11"`` (found as ``python3.11`` on PATH or under pyenv), or a path to an interpreter.
    requirements : tuple of str
        pip requirement strings, pinned (``"smartnoise-sql==1.0.10"``); what the lock refines.
    distributions : tuple of str
        Distributions whose versions each loaded target reports (the library and its key deps).
    lock : bool
        Install from ``locks/NAME.txt`` when it exists (every package pinned, as built here).
    system_site_packages : bool
        ``--system-site-packages`` (for tests: an environment that sees the interpreter's NumPy).
    env : dict
        Environment variables for the worker (e.g. ``{"JAVA_HOME": ...}``).
    setup_timeout, call_timeout : float
        Seconds allowed to load a target (imports, a Spark session...) and for one sample request.
    note : str
        Why this environment is separate, pins explained (for the table).
    path : Path, optional
        Where it lives; default ``envs_dir() / name``. ``LibraryEnv.current()`` uses the running
        interpreter itself and never creates anything.

    Notes
    -----
    Workers are shared: one per environment and process, started on first use and stopped at exit
    (or by :meth:`close`). A process forked from another (a sampling pool) starts its own.
    """

    name: str
    python: str = "3.11"
    requirements: tuple = ()
    distributions: tuple = ()
    lock: bool = True
    system_site_packages: bool = False
    env: dict = field(default_factory=dict)
    setup_timeout: float = 600.0
    call_timeout: float = 1800.0
    note: str = ""
    path: Path | None = None
    _interpreter: str | None = field(default=None, repr=False)

    def __post_init__(self):
        if not self.name or "/" in self.name or self.name.startswith("."):
            raise ValueError(f"environment name must be a plain directory name, got {self.name!r}")
        self.requirements = tuple(self.requirements)
        self.distributions = tuple(self.distributions)

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def current(cls, name: str = "current", **kwargs) -> "LibraryEnv":
        """The running interpreter as an environment (nothing is created): for tests and for
        libraries that are installed next to dpaudit."""
        return cls(name=name, python=sys.executable, lock=False, _interpreter=sys.executable, **kwargs)

    @property
    def root(self) -> Path:
        """The environment's directory."""
        return Path(self.path) if self.path is not None else envs_dir() / self.name

    @property
    def interpreter(self) -> Path:
        """The environment's Python (``ROOT/bin/python``; the running one for ``current()``)."""
        return Path(self._interpreter) if self._interpreter else self.root / "bin" / "python"

    @property
    def lock_file(self) -> Path:
        """``locks/NAME.txt``: the environment's ``pip freeze`` as recorded in this repository."""
        return LOCKS_DIR / f"{self.name}.txt"

    def spec(self) -> dict:
        """What the environment is built from (the marker's ``spec``; a change rebuilds it)."""
        lock = self.lock_file.read_text() if self.lock and self.lock_file.exists() else ""
        return {"python": self.python, "requirements": list(self.requirements),
                "system_site_packages": self.system_site_packages,
                "lock_sha256": hashlib.sha256(lock.encode()).hexdigest() if lock else None}

    def marker(self) -> dict | None:
        """The marker of the built environment (spec, freeze, python, build seconds), or None."""
        try:
            return json.loads((self.root / MARKER).read_text())
        except (OSError, ValueError):
            return None

    def exists(self) -> bool:
        """Whether the environment is built for this spec (``current()`` always is)."""
        if self._interpreter:
            return True
        m = self.marker()
        return bool(m) and m.get("spec") == self.spec() and self.interpreter.exists()

    def base_python(self) -> str:
        """The interpreter that creates the venv, from :attr:`python`.

        Raises
        ------
        EnvCreationError
            If no such interpreter is found (the message says where it looked).
        """
        if os.sep in self.python:
            if not Path(self.python).exists():
                raise EnvCreationError(f"environment {self.name!r}: no Python at {self.python!r}")
            return self.python
        found = shutil.which(f"python{self.python}")
        if found:
            return found
        pyenv = Path.home() / ".pyenv" / "versions"
        for cand in sorted(pyenv.glob(f"{self.python}.*"), reverse=True) if pyenv.exists() else ():
            if (cand / "bin" / "python").exists():
                return str(cand / "bin" / "python")
        raise EnvCreationError(f"environment {self.name!r}: no python{self.python} on PATH or under {pyenv}")

    def ensure(self, *, quiet: bool = True, rebuild: bool = False) -> "LibraryEnv":
        """Create the environment if it is missing or was built from another spec.

        Parameters
        ----------
        quiet : bool
            Print nothing (else one line per step on stderr).
        rebuild : bool
            Remove and rebuild it even if it matches.

        Returns
        -------
        LibraryEnv
            ``self``.

        Raises
        ------
        EnvCreationError
            If ``venv`` or ``pip install`` fails: the message ends with the last lines of pip's
            output (a resolver conflict, a missing wheel, a Python the package does not support).
        """
        if self._interpreter or (self.exists() and not rebuild):
            return self
        root = self.root
        base = self.base_python()
        if root.exists():
            shutil.rmtree(root)
        root.parent.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        say = (lambda msg: None) if quiet else (lambda msg: print(f"[dpaudit env {self.name}] {msg}", file=sys.stderr))
        say(f"creating {root} with {base}")
        cmd = [base, "-m", "venv", str(root)]
        if self.system_site_packages:
            cmd.insert(3, "--system-site-packages")
        if not self.requirements and not (self.lock and self.lock_file.exists()):
            cmd.insert(3, "--without-pip")
        self._run(cmd, "creating the virtual environment")
        if self.lock and self.lock_file.exists():
            install = ["-r", str(self.lock_file)]
            say(f"pip install -r {self.lock_file.name} (recorded lock)")
        else:
            install = list(self.requirements)
            say("pip install " + " ".join(install))
        if install:
            self._run([str(self.interpreter), "-m", "pip", "install", "--disable-pip-version-check", *install],
                      "installing its requirements")
        freeze = ""
        if install:
            freeze = self._run([str(self.interpreter), "-m", "pip", "freeze", "--all"], "recording pip freeze")
        python_version = self._run([str(self.interpreter), "-c", "import sys; print(sys.version.split()[0])"],
                                   "reading its Python version").strip()
        marker = {"spec": self.spec(), "freeze": freeze.splitlines(), "python_version": python_version,
                  "build_seconds": round(time.monotonic() - start, 1), "built": time.strftime("%Y-%m-%d")}
        (root / MARKER).write_text(json.dumps(marker, indent=1))
        say(f"ready in {marker['build_seconds']} s")
        return self

    def _run(self, cmd: list, what: str) -> str:
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise EnvCreationError(f"environment {self.name!r}: {what} failed: {exc}") from None
        if done.returncode != 0:
            raise EnvCreationError(
                f"environment {self.name!r}: {what} failed (exit code {done.returncode}): {' '.join(cmd[:6])}"
                f"{' ...' if len(cmd) > 6 else ''}\n{_tail(done.stdout + done.stderr)}")
        return done.stdout

    def record_lock(self) -> Path:
        """Write the built environment's ``pip freeze`` to :attr:`lock_file` (what later builds
        install) and return its path. pip, setuptools and wheel are left out (the venv's own)."""
        m = self.marker()
        if not m:
            raise EnvCreationError(f"environment {self.name!r} is not built; call ensure() first")
        keep = [ln for ln in m["freeze"] if ln and not ln.split("==")[0].lower() in ("pip", "setuptools", "wheel")
                and not ln.startswith("-e ")]
        LOCKS_DIR.mkdir(parents=True, exist_ok=True)
        header = (f"# {self.name}: pip freeze of the environment built on {m.get('built')} with Python "
                  f"{m.get('python_version')} from: {' '.join(self.requirements)}\n")
        self.lock_file.write_text(header + "\n".join(keep) + "\n")
        # the built environment is exactly what the lock pins: it stays valid for the new spec
        m["spec"] = self.spec()
        (self.root / MARKER).write_text(json.dumps(m, indent=1))
        return self.lock_file

    def versions(self) -> dict:
        """``{distribution: version}`` of :attr:`distributions` in the built environment (from the
        marker's freeze), plus ``"python"``; empty values when unknown."""
        m = self.marker() or {}
        frozen = {}
        for ln in m.get("freeze", []):
            if "==" in ln:
                k, v = ln.split("==", 1)
                frozen[k.lower().replace("_", "-")] = v
        out = {"python": m.get("python_version") or (sys.version.split()[0] if self._interpreter else None)}
        for dist in self.distributions:
            out[dist] = frozen.get(dist.lower().replace("_", "-"))
        return out

    # -- workers -----------------------------------------------------------------------------
    def client(self) -> WorkerClient:
        """This process's worker in the environment (started, and the environment built, on
        first use; restarted if it died)."""
        key = (self.name, str(self.interpreter))
        with _CLIENTS_LOCK:
            c = _CLIENTS.get(key)
            if c is not None and c.pid_owner == os.getpid() and c.alive:
                return c
            self.ensure()
            c = WorkerClient(self.interpreter, self.name, targets_dirs=[str(TARGETS_DIR)], env=self.env,
                             start_timeout=min(self.setup_timeout, 120.0))
            _CLIENTS[key] = c
            c.handles = {}
            return c

    def call(self, target: str, *, timeout: float | None = None, **kwargs):
        """Call ``target(**kwargs)`` once in the environment and return its (JSON) result: a
        library's accountant or the claim it states for a configuration.

        Parameters
        ----------
        target : str
            ``"module:function"`` importable in the environment.
        timeout : float, optional
            Seconds to wait (default :attr:`setup_timeout`).
        **kwargs
            JSON values.

        Returns
        -------
        object
            The function's result (numbers, strings, lists, dicts; NumPy values as numbers).

        Raises
        ------
        LibraryCallError
            If the function raised (its type, message and traceback attached).
        WorkerError, EnvCreationError
            If the worker or the environment failed.
        """
        from .client import LibraryCallError, describe_remote_error, json_kwargs

        json_kwargs(kwargs)
        reply, _ = self.client().request({"op": "call", "target": target, "kwargs": kwargs},
                                         timeout=timeout or self.setup_timeout, what=f"calling {target}")
        if not reply.get("ok"):
            raise LibraryCallError(f"{target} raised {describe_remote_error(reply)} (in environment {self.name!r})",
                                   remote=reply.get("error") or {}, mechanism=target, dataset="(none)")
        return reply.get("value")

    def close(self) -> None:
        """Stop this process's worker in the environment, if any."""
        with _CLIENTS_LOCK:
            c = _CLIENTS.pop((self.name, str(self.interpreter)), None)
        if c is not None and c.pid_owner == os.getpid():
            c.close()

    def mechanism(self, target: str, *, name: str | None = None, **kwargs):
        """A :class:`~dpaudit.mechanisms.base.Mechanism` drawing from ``target`` in this environment.

        Parameters
        ----------
        target : str
            ``"module:factory"`` importable in the environment (the worker-side modules of
            ``dpaudit/library/targets`` first): ``factory(**kwargs)`` returns a batch sampler
            (``.sample(dataset, num_samples, rng)``) or a per-call ``f(dataset, rng)``.
        name : str, optional
            Name in reports; default ``"NAME:target(kwargs)"``.
        **kwargs
            JSON values passed to the factory.

        Returns
        -------
        EnvMechanism

        Raises
        ------
        TypeError
            If a keyword argument is not a JSON value.
        ValueError
            If ``target`` is not ``"module:factory"``.
        """
        from .mechanism import EnvMechanism

        return EnvMechanism(self, target, name=name, **kwargs)


_CLIENTS: dict = {}
_CLIENTS_LOCK = threading.RLock()


def _close_all() -> None:
    for key, c in list(_CLIENTS.items()):
        if c.pid_owner == os.getpid():
            try:
                c.close(timeout=2.0)
            except Exception:  # noqa: BLE001 - exiting anyway
                pass
    _CLIENTS.clear()


import atexit  # noqa: E402

atexit.register(_close_all)

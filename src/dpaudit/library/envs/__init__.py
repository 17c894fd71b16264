"""Every library in its own virtual environment, driven over a pipe.

Some DP libraries cannot be installed next to dpaudit's own dependencies (SmartNoise pins an old
OpenDP and Opacus, Tumult Analytics an old NumPy and pandas, TensorFlow Privacy brings
TensorFlow). Each gets an environment of its own (:class:`LibraryEnv`, built on demand under
``~/.cache/dpaudit/envs/NAME`` from pinned requirements recorded in ``locks/NAME.txt``) and a
worker process in it (``_worker.py``: standard library and NumPy only, no dpaudit) that loads the
worker-side target code of ``dpaudit/library/targets`` and draws outputs in batches. In dpaudit's
process the target is a :class:`~dpaudit.mechanisms.base.Mechanism` (:class:`EnvMechanism`), so
every tester works on it unchanged::

    from dpaudit.library.envs import get_env
    mech = get_env("smartnoise-sql").mechanism("smartnoise_sql:count", epsilon=1.0)
    mech.sample([[0.2], [0.9]], 1000, np.random.default_rng(1))      # (1000, 1), drawn in the env

The pipe carries JSON headers and raw array bytes (dtype and shape in the header): nothing is
pickled. Errors: :class:`EnvCreationError` (pip's output tail), :class:`WorkerCrashedError` (the
worker's stderr tail), :class:`WorkerTimeoutError`, :class:`LibraryCallError` (the library's
exception type, message and traceback; a :class:`~dpaudit.errors.MechanismError`).

:data:`ENVS` is the registry of environments; :mod:`dpaudit.library.envs.rows` the table rows
audited through them (data), :mod:`dpaudit.library.envs.catalogue` their targets as module-level
mechanisms for ``dpaudit test``.
"""

from __future__ import annotations

from .client import (LibraryCallError, WorkerClient, WorkerCrashedError, WorkerError, WorkerProtocolError,
                     WorkerTimeoutError)
from .env import EnvCreationError, LibraryEnv, envs_dir
from .mechanism import EnvMechanism

__all__ = [
    "ENVS", "EnvCreationError", "EnvMechanism", "LibraryCallError", "LibraryEnv", "WorkerClient",
    "WorkerCrashedError", "WorkerError", "WorkerProtocolError", "WorkerTimeoutError", "EnvNotBuiltError",
    "build_command", "envs_dir", "get_env", "resolve_entry",
]

_JAVA_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"

ENVS: dict[str, LibraryEnv] = {
    env.name: env
    for env in (
        LibraryEnv(
            "diffprivlib", requirements=("diffprivlib==0.6.6", "scikit-learn>=1.3,<1.6"),
            distributions=("diffprivlib", "scikit-learn", "numpy"),
            note="the same diffprivlib as dpaudit's own environment: used to measure the pipe's overhead "
                 "against in-process calls; diffprivlib 0.6.6 does not import with scikit-learn >= 1.6"),
        LibraryEnv(
            "smartnoise-sql", requirements=("smartnoise-sql==1.0.10",),
            distributions=("smartnoise-sql", "opendp", "pandas", "numpy"),
            note="smartnoise-sql 1.0.10 pins opendp < 0.15 (installs 0.14.2), a downgrade of the opendp "
                 "0.16 dpaudit's OpenDP rows audit"),
        LibraryEnv(
            "smartnoise-synth", requirements=("smartnoise-synth==1.0.8", "torch==2.13.0", "scikit-learn"),
            distributions=("smartnoise-synth", "smartnoise-sql", "opendp", "opacus", "torch", "numpy"),
            note="smartnoise-synth 1.0.8 pins opacus < 0.15 (installs 0.14.0) and, through smartnoise-sql, "
                 "opendp 0.14.2; torch pinned to the CPU build 2.13.0 (any other torch pulls CUDA wheels); "
                 "scikit-learn added: snsynth.models imports sklearn, which smartnoise-synth 1.0.8 does not "
                 "declare (ModuleNotFoundError without it)"),
        LibraryEnv(
            "tmlt-analytics", requirements=("tmlt.analytics==0.21.0",),
            distributions=("tmlt.analytics", "tmlt.core", "pyspark", "pandas", "numpy"),
            env={"JAVA_HOME": _JAVA_HOME, "SPARK_LOCAL_IP": "127.0.0.1"},
            note="tmlt.analytics 0.21.0 pins numpy < 2 (1.26.4) and pandas < 2 (1.5.3) and runs on pyspark "
                 "3.5 with a Java runtime (OpenJDK 17 here)"),
        LibraryEnv(
            "tensorflow-privacy", requirements=("tensorflow-privacy==0.9.0", "tensorflow==2.15.1"),
            distributions=("tensorflow-privacy", "tensorflow", "keras", "dp-accounting", "numpy"),
            env={"TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""},
            note="tensorflow-privacy 0.9.0 asks for tensorflow~=2.4 but imports tensorflow_estimator and Keras 2, "
                 "which TensorFlow 2.16+ dropped (with TensorFlow 2.21, `import tensorflow_privacy` fails: "
                 "ImportError: cannot import name 'estimator_training'); pinned to TensorFlow 2.15.1, "
                 "its last release with both (CPU wheel, about 1 GB installed)"),
        LibraryEnv(
            "jax-privacy", requirements=("jax-privacy==2.0.0",),
            distributions=("jax-privacy", "jax", "jaxlib", "dp-accounting", "numpy"),
            env={"JAX_PLATFORMS": "cpu"},
            note="jax_privacy pins its own JAX and dp-accounting; kept apart from dpaudit's JAX"),
    )
}
"""The environments of the libraries audited over a pipe, by name."""


def get_env(name: str) -> LibraryEnv:
    """The registered environment ``name`` (not built until a worker needs it).

    Raises
    ------
    KeyError
        If no environment has that name (the message lists them).
    """
    try:
        return ENVS[name]
    except KeyError:
        raise KeyError(f"no library environment {name!r}; known: {', '.join(sorted(ENVS))}") from None


class EnvNotBuiltError(EnvCreationError):
    """A row's environment is not built and building it was refused (``DPAUDIT_BUILD_ENVS=0``);
    the message names the exact command that builds it."""


def build_command(name: str) -> str:
    """The command that builds environment ``name`` (and prints one line per step)."""
    return f"python -m dpaudit.library.envs build {name}"


def resolve_entry(entry):
    """The mechanism of a table row whose ``Entry.env`` is a library environment: the row's
    :class:`EnvMechanism` (``Entry.target``, a ``dpaudit.library.envs.catalogue`` attribute), with
    its environment built first when missing.

    This is the resolver :func:`dpaudit.library.entry.register_env_resolver` holds for every
    environment of :data:`ENVS`, so ``dpaudit library audit "SmartNoise SQL"`` runs the rows in
    their own environment. A missing environment is built on first use with one progress line per
    step on stderr (``[dpaudit env NAME] ...``: a few minutes, what pip downloads); with
    ``DPAUDIT_BUILD_ENVS=0`` it is not built and :class:`EnvNotBuiltError` names the command that
    builds it (:func:`build_command`).

    Parameters
    ----------
    entry : dpaudit.library.entry.Entry
        With ``env`` a key of :data:`ENVS` and ``target`` ``"module:attribute"``.

    Returns
    -------
    Mechanism
        The proxy; its worker starts at the first sample.

    Raises
    ------
    KeyError
        If ``entry.env`` is not a known environment.
    EnvNotBuiltError, EnvCreationError
        If the environment is missing and may not be built, or its build fails (pip's output tail).
    dpaudit.errors.DPAuditError
        If the target cannot be loaded.
    """
    import os
    import sys

    env = get_env(entry.env)
    if not env.exists():
        if os.environ.get("DPAUDIT_BUILD_ENVS", "1").strip().lower() in ("0", "no", "false"):
            raise EnvNotBuiltError(
                f"environment {env.name!r} is not built (DPAUDIT_BUILD_ENVS=0); build it with: "
                f"{build_command(env.name)}")
        source = (f"pip install -r {env.lock_file.name} (the recorded lock)" if env.lock and env.lock_file.exists()
                  else "pip install " + " ".join(env.requirements))
        print(f"[dpaudit env {env.name}] row {entry.key} runs in its own environment, not built yet: building "
              f"{env.root} now with Python {env.python} and {source} (a few minutes, once; "
              f"the same as `{build_command(env.name)}`)", file=sys.stderr, flush=True)
        env.ensure(quiet=False)
    from ...audit.targets import load_target

    mech, _ = load_target(entry.target)
    return mech


def _register_resolvers() -> None:
    from ..entry import register_env_resolver

    for _name in ENVS:
        register_env_resolver(_name, resolve_entry)


_register_resolvers()

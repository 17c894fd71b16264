"""Build or list the library environments: ``python -m dpaudit.library.envs build NAME [NAME ...]``.

``build`` creates each named environment (all of :data:`dpaudit.library.envs.ENVS` when none is
named) under :func:`dpaudit.library.envs.envs_dir`, from its recorded lock, printing one line per
step; ``list`` prints each environment, whether it is built, and what it installs. Exit codes: 0
done, 2 an unknown name or a failed build (one line naming it, then pip's output tail).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    from . import ENVS, EnvCreationError, get_env

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in ("build", "list"):
        print("usage: python -m dpaudit.library.envs build [NAME ...] | list; environments: "
              + ", ".join(ENVS), file=sys.stderr)
        return 2
    if args[0] == "list":
        for name, env in ENVS.items():
            state = "built" if env.exists() else "not built"
            print(f"{name}\t{state}\t{env.root}\t{' '.join(env.requirements)}")
        return 0
    names = args[1:] or list(ENVS)
    for name in names:
        try:
            env = get_env(name)
        except KeyError as exc:
            print(f"error: {exc.args[0]}", file=sys.stderr)
            return 2
        try:
            env.ensure(quiet=False)
        except EnvCreationError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"{name}: built at {env.root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

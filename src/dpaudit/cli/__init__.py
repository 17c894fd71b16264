"""The ``dpaudit`` command line: one Typer app (:mod:`dpaudit.cli.app`) with a module per
command group (:mod:`dpaudit.cli.scores` for ``audit-scores``, :mod:`dpaudit.cli.account` for
``account`` and ``verify``, :mod:`dpaudit.cli.dpsgd` for ``dpsgd``)."""

from .app import app, main

__all__ = ["app", "main"]

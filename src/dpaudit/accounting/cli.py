"""CLI commands of dpaudit.accounting, added to the main Typer app by :func:`register`."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this package's commands to app."""

"""``python -m dpaudit.cli`` runs the command line."""

from .app import main

main()

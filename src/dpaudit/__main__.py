"""``python -m dpaudit`` runs the command line, as the ``dpaudit`` console script does."""

from .cli.app import main

main()

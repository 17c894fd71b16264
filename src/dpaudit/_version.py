"""The version of dpaudit (one place; ``dpaudit.__version__`` re-exports it)."""

__version__ = "0.1.0"

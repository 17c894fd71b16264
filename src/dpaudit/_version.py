"""The version of dpaudit (one place; ``dpaudit.__version__`` re-exports it)."""

__version__ = "0.1.0"


def _installed_version(package: str) -> str:
    """The installed version of ``package`` from its metadata (nothing is imported), or
    ``"not installed"``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def library_versions() -> dict:
    """Versions of Python and of the libraries a result depends on, for reports.

    Read from the installed packages' metadata (``importlib.metadata``), so asking for them never
    imports a library -- torch in particular, which a histogram audit does not otherwise load.

    Returns
    -------
    dict
        ``{"dpaudit", "python", "numpy", "scipy", "torch"}`` -> version string (``"not installed"``
        for a library that is not).
    """
    import platform

    return {
        "dpaudit": __version__,
        "python": platform.python_version(),
        "numpy": _installed_version("numpy"),
        "scipy": _installed_version("scipy"),
        "torch": _installed_version("torch"),
    }

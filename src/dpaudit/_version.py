"""The version of dpaudit (one place; ``dpaudit.__version__`` re-exports it)."""

__version__ = "0.1.0"


def library_versions() -> dict:
    """Versions of Python and of the libraries a result depends on, for reports.

    Returns
    -------
    dict
        ``{"dpaudit", "python", "numpy", "scipy", "torch"}`` -> version string.
    """
    import platform

    import numpy as np
    import scipy
    import torch

    return {
        "dpaudit": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "torch": torch.__version__,
    }

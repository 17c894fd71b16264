"""The one check of a torch device name (trained estimators and the Monte Carlo torch backend)."""

from __future__ import annotations

__all__ = ["check_device"]


def check_device(device) -> str:
    """Validate a torch device and return its canonical name, importing torch only when needed.

    Parameters
    ----------
    device : str or torch.device
        'cpu' (no torch import), 'cuda', 'cuda:N', 'mps', or a ``torch.device``.

    Returns
    -------
    str
        The device's name, e.g. ``'cuda:0'``.

    Raises
    ------
    ValueError
        For a name torch does not know, CUDA requested where this PyTorch build or machine has
        none (the message names the torch version), a CUDA index beyond the visible devices, or
        MPS where it is unavailable.
    """
    if isinstance(device, str) and device == "cpu":
        return "cpu"
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device={device!r} is not a torch device ({exc})") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"device={str(device)!r} was requested but CUDA is not available "
                f"(torch {torch.__version__}{', a CPU-only build' if torch.version.cuda is None else ''}); "
                "use --device cpu"
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device={str(device)!r}: only {torch.cuda.device_count()} CUDA device(s) visible")
    if dev.type == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise ValueError(f"device={str(device)!r} was requested but MPS is not available")
    return str(dev)

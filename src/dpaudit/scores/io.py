"""Reading score files (.npy, .csv, .txt) for the CLI and notebooks."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..estimators.base import check_scores

__all__ = ["load_scores"]

SUFFIXES = (".npy", ".csv", ".txt")


def load_scores(path, *, name: str | None = None) -> np.ndarray:
    """Load a 1-D sample of scores.

    ``.npy``: a NumPy array (no pickles); ``.csv``: comma-separated numbers; ``.txt``: numbers
    separated by whitespace (or commas). Lines starting with ``#`` are comments. A single
    column (shape ``(n, 1)``) or a single row is accepted.

    Parameters
    ----------
    path : str or Path
        File to read.
    name : str, optional
        Name used in error messages (default: the path).

    Returns
    -------
    ndarray, shape (n,)
        Finite scores, ``n >= 1``.

    Raises
    ------
    ValueError
        If the file is missing, has an unknown suffix, cannot be parsed, is empty, is not
        one-dimensional, or contains NaN/inf; the message names the file.
    """
    p = Path(path)
    label = name or str(p)
    if not p.is_file():
        raise ValueError(f"{label}: no such file")
    suffix = p.suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(f"{label}: unknown file type {suffix or '(none)'!r}; use .npy, .csv or .txt")
    try:
        if suffix == ".npy":
            arr = np.load(p, allow_pickle=False)
        else:
            text = p.read_text()
            if suffix == ".csv" or "," in text:
                text = text.replace(",", " ")
            rows = [ln.split() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
            if not rows:
                raise ValueError("no numbers found")
            widths = {len(r) for r in rows}
            if len(widths) != 1:
                raise ValueError("rows have different numbers of values")
            arr = np.array([[float(v) for v in r] for r in rows], dtype=float)
            if arr.shape[0] == 1:
                arr = arr[0]
    except ValueError as exc:
        raise ValueError(f"{label}: cannot read scores ({exc})") from None
    except OSError as exc:
        raise ValueError(f"{label}: cannot read file ({exc})") from None
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{label}: expected numbers, got an array of dtype {arr.dtype}")
    try:
        return check_scores(arr, label)
    except ValueError as exc:
        raise ValueError(str(exc)) from None

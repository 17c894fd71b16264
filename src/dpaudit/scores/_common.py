"""Input validation shared by the score audits (one error-message pattern: name and value)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["as_rng", "check_confidence", "check_delta", "check_scores"]


def check_scores(values, name: str, *, min_size: int = 1) -> np.ndarray:
    """A 1-D float array of finite scores.

    Accepts shape ``(n,)`` or ``(n, 1)``; raises ValueError naming ``name`` for other shapes,
    fewer than ``min_size`` values, NaN or infinite entries, or non-numeric input.
    """
    if isinstance(values, (str, bytes)):
        raise ValueError(f"{name} must be an array of numbers, got {values!r}")
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers, got {type(values).__name__}") from None
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional (shape (n,) or (n, 1)), got shape {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name} must contain at least {min_size} score(s), got {arr.size}")
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(
            f"{name} contains {int(bad.sum())} non-finite value(s) (NaN or inf); first at index {i}: {arr[i]!r}"
        )
    return arr


def check_confidence(confidence) -> float:
    """Confidence level in (0, 1) as float; ValueError naming the value otherwise."""
    if isinstance(confidence, (bool, np.bool_, str, bytes)):
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")
    try:
        c = float(confidence)
    except (TypeError, ValueError):
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}") from None
    if not (0.0 < c < 1.0):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return c


def check_delta(delta, name: str = "delta") -> float:
    """delta in (0, 1) as float; ValueError naming the value otherwise."""
    if isinstance(delta, (bool, np.bool_, str, bytes)):
        raise ValueError(f"{name} must be a number in (0, 1), got {delta!r}")
    try:
        d = float(delta)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in (0, 1), got {delta!r}") from None
    if not (0.0 < d < 1.0) or math.isnan(d):
        raise ValueError(f"{name} must be in (0, 1), got {delta!r}")
    return d


def as_rng(rng) -> np.random.Generator:
    """``numpy.random.Generator`` from a Generator, an int seed, a SeedSequence or None."""
    if isinstance(rng, (bool, np.bool_)):
        raise ValueError(f"rng must be a numpy Generator or an int seed, got {rng!r}")
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError):
        raise ValueError(f"rng must be a numpy Generator or an int seed, got {rng!r}") from None

"""Pieces the estimators share, written once: the robust standardiser of outputs, the zoomed
features the trained estimators feed their models, and the integer search for sample sizes.

Imports only numpy (torch stays out: :mod:`dpaudit._torch` has the training loop).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["SCORE_CHUNK", "ZOOM", "robust_standardiser", "smallest_int", "zoom_features"]

ZOOM = (1.0, 10.0, 100.0, 1000.0)
"""Zoom levels ``c`` of the ``asinh(c z)`` features (:func:`zoom_features`)."""


SCORE_CHUNK = 1 << 18
"""Rows whose features are built and scored at a time by the trained estimators (bounds memory)."""


def robust_standardiser(pooled: np.ndarray, *, center: bool = True) -> tuple[np.ndarray | None, np.ndarray]:
    """Per-coordinate centre and robust scale of ``pooled`` outputs.

    The scale is ``IQR / 1.349`` (the standard deviation for a Gaussian); where the IQR is 0
    (many ties) the standard deviation, and where that is 0 too, 1 -- so dividing by it is
    always safe.

    Parameters
    ----------
    pooled : ndarray, shape (n, output_dim)
    center : bool, default True
        Also compute the per-coordinate median (else None is returned for it).

    Returns
    -------
    (center, scale) : (ndarray of shape (output_dim,) or None, ndarray of shape (output_dim,))
    """
    med = np.median(pooled, axis=0) if center else None
    q75, q25 = np.percentile(pooled, [75, 25], axis=0)
    scale = (q75 - q25) / 1.349
    std = pooled.std(axis=0)
    return med, np.where(scale > 0, scale, np.where(std > 0, std, 1.0))


def zoom_features(z: np.ndarray) -> np.ndarray:
    """Features of standardised outputs: ``clip(z, -10, 10)`` and ``asinh(c z) / ln(1 + 2c)`` for
    each zoom level ``c`` in :data:`ZOOM`.

    ``asinh(c z)`` is about linear within ``|z| < 1/c`` and logarithmic beyond, so both a small
    shift hidden under heavy-tailed noise and the tails themselves stay visible without
    dominating training.

    Parameters
    ----------
    z : ndarray, shape (n, output_dim)

    Returns
    -------
    ndarray, shape (n, 5 * output_dim), float32
    """
    feats = [np.clip(z, -10.0, 10.0)]
    feats += [np.arcsinh(c * z) / np.log1p(2.0 * c) for c in ZOOM]
    return np.concatenate(feats, axis=1).astype(np.float32)


def smallest_int(ok: Callable[[int], bool], lo: int, hi: int, *, limit: int | None = None) -> int | None:
    """Smallest integer ``n > lo`` with ``ok(n)``, for ``ok`` False up to some size and True after.

    ``hi`` is doubled (``lo`` following it) until ``ok(hi)``, then ``(lo, hi]`` is bisected.

    Parameters
    ----------
    ok : callable
        ``int -> bool``, monotone (False, ..., False, True, ...).
    lo : int
        A size known (or taken) to fail; the answer is above it.
    hi : int
        First size tried (``> lo``).
    limit : int, optional
        Give up (return None) once the doubled ``hi`` exceeds it.

    Returns
    -------
    int or None
    """
    while not ok(hi):
        lo, hi = hi, 2 * hi
        if limit is not None and hi > limit:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi

"""Result objects and input checks shared by the divergence estimators.

The region bound every hockey-stick estimator returns lives in :mod:`dpaudit.estimators.region`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import numpy as np

__all__ = [
    "DivergenceBound",
    "NotApplicable",
    "bound_from_dict",
    "check_sample_pair",
    "check_samples",
    "check_scores",
    "profile_grid",
    "profile_targets",
    "register_bound_type",
]


class NotApplicable(ValueError):
    """Raised by an estimator or tester for samples it cannot handle (e.g. continuous
    multi-dimensional outputs given to the histogram estimator). :class:`CombinedTester` skips
    such a tester with a note instead of failing."""


def check_samples(name: str, x, min_samples: int = 1) -> np.ndarray:
    """Validate one sample array and return it as float64 of shape (n_samples, output_dim).

    Parameters
    ----------
    name : str
        Argument name used in error messages.
    x : array_like, shape (n_samples,) or (n_samples, output_dim)
        1-D input is read as ``output_dim = 1``.
    min_samples : int, default 1

    Raises
    ------
    ValueError
        On other shapes, fewer than ``min_samples`` rows, or NaN/infinite values.
    """
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (n_samples, output_dim), got shape {arr.shape}")
    if arr.shape[0] < min_samples:
        raise ValueError(f"{name} needs at least {min_samples} samples, got {arr.shape[0]}")
    if arr.shape[1] < 1:
        raise ValueError(f"{name} has output dimension 0")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def check_sample_pair(p_samples, q_samples, min_samples: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Validate two sample arrays (see :func:`check_samples`) with the same output dimension.

    Raises
    ------
    ValueError
        If either sample is invalid (see :func:`check_samples`) or their output dimensions differ.
    """
    p = check_samples("p_samples", p_samples, min_samples)
    q = check_samples("q_samples", q_samples, min_samples)
    if p.shape[1] != q.shape[1]:
        raise ValueError(
            f"p_samples and q_samples have different output dimensions: {p.shape[1]} vs {q.shape[1]}"
        )
    return p, q


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


def profile_grid(epsilon: float, num: int = 256) -> np.ndarray:
    """Grid of eps' (nats) on which a claim's privacy profile is compared with the evidence:
    0, the claimed epsilon, and a geometric grid up to ``max(20, 4 epsilon)``."""
    top = max(20.0, 4.0 * epsilon)
    return np.unique(np.concatenate([[0.0, epsilon], np.geomspace(1e-4, top, num)]))


def profile_targets(epsilon: float, delta_profile=None) -> tuple[np.ndarray, np.ndarray]:
    """The eps' grid and the delta each eps' allows, for an estimator that chooses its region
    against a claim.

    Parameters
    ----------
    epsilon : float
        The claimed epsilon (nats).
    delta_profile : callable or None
        The claim's privacy profile ``eps' -> delta(eps')`` (vectorised); None: pure DP at
        ``epsilon`` only.

    Returns
    -------
    eps_grid, allowed : ndarray of float, same shape
        ``[epsilon], [0]`` without a profile; else :func:`profile_grid` and the profile on it.
    """
    if delta_profile is None:
        return np.array([epsilon]), np.zeros(1)
    eps_grid = profile_grid(epsilon)
    return eps_grid, np.asarray(delta_profile(eps_grid), dtype=float)


_BOUND_TYPES: dict[str, type] = {}


def _register(cls):
    _BOUND_TYPES[cls.__name__] = cls
    return cls


@_register
@dataclass(frozen=True)
class DivergenceBound:
    """A one-sided lower confidence bound on a divergence between two output distributions.

    The common part of every estimator's result (like a ``scipy.stats`` result object); each
    estimator returns a subclass that adds the numbers behind its bound.

    Attributes
    ----------
    divergence : str
        ``"hockey-stick"``, ``"renyi"``, ``"mmd"``...
    direction : str
        ``"P||Q"`` (first dataset's outputs first) or ``"Q||P"``.
    estimate : float
        Point estimate of the divergence.
    lower : float
        Lower confidence bound: ``divergence >= lower`` with probability ``>= 1 - beta``.
    beta : float
        Failure probability of the bound.
    """

    divergence: str
    direction: str
    estimate: float
    lower: float
    beta: float

    def to_dict(self) -> dict:
        """Plain-JSON form; ``type`` names the class so :func:`bound_from_dict` can rebuild it."""
        d = asdict(self)
        d["type"] = type(self).__name__
        return d


def bound_from_dict(d: dict) -> DivergenceBound:
    """Rebuild a bound from :meth:`DivergenceBound.to_dict` output.

    Reports written before bounds carried a ``type`` hold hockey-stick bounds.

    Raises
    ------
    ValueError
        For an unknown ``type``.
    """
    d = dict(d)
    kind = d.pop("type", "HockeyStickBound")
    if kind not in _BOUND_TYPES:  # bound types register on import: load the built-in estimators
        import importlib

        for module in ("region", "renyi", "mmd", "histogram", "betting"):
            try:
                importlib.import_module(f"dpaudit.estimators.{module}")
            except ImportError:  # pragma: no cover - an estimator module missing from the install
                pass
    if kind not in _BOUND_TYPES:
        raise ValueError(f"unknown bound type {kind!r}; known: {sorted(_BOUND_TYPES)}")
    cls = _BOUND_TYPES[kind]
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in d.items() if k in names})


def register_bound_type(cls):
    """Class decorator: make a :class:`DivergenceBound` subclass rebuildable from JSON.

    Raises
    ------
    TypeError
        If ``cls`` is not a :class:`DivergenceBound` subclass.
    """
    if not (isinstance(cls, type) and issubclass(cls, DivergenceBound)):
        raise TypeError(f"{cls!r} is not a DivergenceBound subclass")
    return _register(cls)

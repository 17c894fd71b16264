"""Result objects and input checks shared by the divergence estimators."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import numpy as np

__all__ = ["DivergenceBound", "HockeyStickBound", "bound_from_dict", "check_samples", "check_sample_pair", "profile_grid"]


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
    """Validate two sample arrays (see :func:`check_samples`) with the same output dimension."""
    p = check_samples("p_samples", p_samples, min_samples)
    q = check_samples("q_samples", q_samples, min_samples)
    if p.shape[1] != q.shape[1]:
        raise ValueError(
            f"p_samples and q_samples have different output dimensions: {p.shape[1]} vs {q.shape[1]}"
        )
    return p, q


def profile_grid(epsilon: float, num: int = 256) -> np.ndarray:
    """Grid of eps' (nats) on which a claim's privacy profile is compared with the evidence:
    0, the claimed epsilon, and a geometric grid up to ``max(20, 4 epsilon)``."""
    top = max(20.0, 4.0 * epsilon)
    return np.unique(np.concatenate([[0.0, epsilon], np.geomspace(1e-4, top, num)]))


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

        for module in ("hockey_stick", "renyi", "mmd", "histogram"):
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
    """Class decorator: make a :class:`DivergenceBound` subclass rebuildable from JSON."""
    if not (isinstance(cls, type) and issubclass(cls, DivergenceBound)):
        raise TypeError(f"{cls!r} is not a DivergenceBound subclass")
    return _register(cls)


@_register
@dataclass(frozen=True)
class HockeyStickBound(DivergenceBound):
    """Lower confidence bound on the hockey-stick divergence from a test region ``S``.

    The region is chosen on training samples; with probability at least ``1 - beta`` over the
    held-out samples, ``P(S) >= p_mass_lower`` and ``Q(S) <= q_mass_upper`` simultaneously, hence
    for **every** eps: ``H_{e^eps}(P || Q) >= p_mass_lower - e^eps q_mass_upper``
    (``H_{e^eps}(P || Q) = sup_S P(S) - e^eps Q(S)``, paper 000 eq. (11)).

    Attributes
    ----------
    divergence, direction, estimate, lower, beta
        See :class:`DivergenceBound`; ``estimate`` and ``lower`` are at order ``epsilon``.
    epsilon : float
        Order of the hockey-stick divergence reported in ``estimate``/``lower`` (nats).
    p_mass_lower, q_mass_upper : float
        Clopper–Pearson bounds on ``P(S)`` (lower) and ``Q(S)`` (upper), each at ``beta / 2``.
    p_count, q_count : int
        Held-out samples of P and Q that fell in ``S``.
    n_test_p, n_test_q : int
        Held-out sample sizes.
    n_train : int
        Samples (both distributions together) used to choose ``S``.
    region : str
        Description of ``S`` (e.g. ``score > 1.23``).
    """

    epsilon: float
    p_mass_lower: float
    q_mass_upper: float
    p_count: int
    q_count: int
    n_test_p: int
    n_test_q: int
    n_train: int
    region: str = ""

    def delta_lower_bound(self, epsilon) -> np.ndarray | float:
        """Lower bound on ``H_{e^epsilon}(P||Q)`` at any epsilon (nats), same confidence.

        Valid simultaneously for all epsilon; returns ``p_mass_lower - e^epsilon q_mass_upper``.
        """
        eps = np.asarray(epsilon, dtype=float)
        out = self.p_mass_lower - np.exp(eps) * self.q_mass_upper
        return float(out) if out.ndim == 0 else out

    def epsilon_lower_bound(self, delta: float) -> float:
        """Largest epsilon at which the evidence still rejects ``(epsilon, delta)``-DP.

        Solves ``p_mass_lower - e^eps q_mass_upper = delta``:
        ``eps = ln((p_mass_lower - delta) / q_mass_upper)``. Returns 0.0 when the evidence
        rejects no epsilon >= 0 at this delta, and ``inf`` if ``q_mass_upper == 0``.
        """
        if self.p_mass_lower <= delta:
            return 0.0
        if self.q_mass_upper <= 0.0:
            return math.inf
        return max(0.0, math.log((self.p_mass_lower - delta) / self.q_mass_upper))

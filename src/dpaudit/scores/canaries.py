"""One-shot auditing with random canaries (Andrew et al. 2024; paper 001 §8).

Canaries are independent uniformly random unit vectors in ``R^d``. Some are inserted into the
training run (each contributes like one clipped example), the rest are held out. After training,
the score of a canary is the cosine between it and the final model update ``Delta``. Because a
held-out canary is uniform on the sphere and independent of ``Delta``, its cosine has a known
exact null distribution: ``(1 + cos)/2 ~ Beta((d - 1)/2, (d - 1)/2)`` (approximately
``N(0, 1/d)``), whatever ``Delta`` is.

Paper 001 applies the histogram audit to the observed vs null cosines instead of fitting a
Gaussian to them; its Thm 1 / Cor. 2 show that the resulting hockey-stick divergences converge,
as ``d`` grows, to those of the Gaussian mechanism with the run's noise multiplier. The
Gaussian-fit estimate of Andrew et al. is reported alongside, as an estimate.

Independence caveat: the observed cosines of one run share the same ``Delta``; the confidence
statement of :func:`one_shot_audit` treats them as independent draws, which holds only
asymptotically (paper 001 §10 leaves one-shot confidence intervals open). Treat the bound as an
estimate unless the scores come from independent runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..privacy.profiles import gaussian_epsilon
from .._validate import as_rng, check_delta, check_int, check_probability
from ..estimators.base import check_scores
from ..estimators.histogram import histogram_audit
from ..estimators.region import ScoreAudit

__all__ = [
    "OneShotAudit",
    "cosine_scores",
    "null_cosines",
    "one_shot_audit",
    "random_canaries",
    "simulate_gaussian_canary_run",
]


def random_canaries(num_canaries: int, dimension: int, *, rng=None) -> np.ndarray:
    """Independent uniformly random unit vectors (normalised standard Gaussians).

    Parameters
    ----------
    num_canaries : int
        Number of canaries ``>= 1``.
    dimension : int
        Dimension ``d >= 2``.
    rng : numpy Generator or int, optional

    Returns
    -------
    ndarray, shape (num_canaries, dimension)
        Rows of unit Euclidean norm.

    References
    ----------
    Andrew et al. (2024), §3 (random canary gradients); paper 001 §8.
    """
    n = check_int(num_canaries, "num_canaries", 1)
    d = check_int(dimension, "dimension", 2)
    g = as_rng(rng).standard_normal((n, d))
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def cosine_scores(update, canaries) -> np.ndarray:
    """Cosines between a model update and each canary.

    Parameters
    ----------
    update : array, shape (d,)
        Final model update (flattened parameters difference), non-zero and finite.
    canaries : array, shape (n, d)
        Canary vectors (need not be normalised).

    Returns
    -------
    ndarray, shape (n,)

    References
    ----------
    Andrew et al. (2024), §3 (the canary score is its cosine with the final update).

    Raises
    ------
    ValueError
        If ``canaries`` is not of shape ``(n, d)`` with ``d`` the update's size, if a value is not
        finite, or if the update or a canary is the zero vector.
    """
    u = np.asarray(update, dtype=float).ravel()
    c = np.asarray(canaries, dtype=float)
    if c.ndim != 2 or c.shape[1] != u.size:
        raise ValueError(f"canaries must have shape (n, {u.size}), got {c.shape}")
    if not np.all(np.isfinite(u)) or not np.all(np.isfinite(c)):
        raise ValueError("update and canaries must be finite")
    nu = np.linalg.norm(u)
    nc = np.linalg.norm(c, axis=1)
    if nu == 0 or np.any(nc == 0):
        raise ValueError("update and canaries must be non-zero vectors")
    return (c @ u) / (nc * nu)


def null_cosines(num: int, dimension: int, *, rng=None) -> np.ndarray:
    """Exact draws of the cosine between a uniform unit vector in ``R^d`` and any fixed vector.

    ``(1 + cos)/2 ~ Beta((d - 1)/2, (d - 1)/2)`` (the density of ``cos`` is proportional to
    ``(1 - t^2)^{(d - 3)/2}``); mean 0, variance ``1/d``.

    Parameters
    ----------
    num : int
        Number of draws ``>= 1``.
    dimension : int
        ``d >= 2``.
    rng : numpy Generator or int, optional

    Returns
    -------
    ndarray, shape (num,)

    References
    ----------
    The uniform measure on the sphere projected on one axis (e.g. Cai, Fan, Jiang 2013, used in
    paper 001 App. G); Andrew et al. (2024) use its N(0, 1/d) approximation.
    """
    n = check_int(num, "num", 1)
    d = check_int(dimension, "dimension", 2)
    a = (d - 1) / 2.0
    return 2.0 * as_rng(rng).beta(a, a, size=n) - 1.0


def simulate_gaussian_canary_run(
    dimension: int,
    num_canaries: int,
    noise_multiplier: float,
    *,
    num_null: int | None = None,
    rng=None,
    chunk: int = 256,
):
    """Simulate one run of the Gaussian mechanism on canaries and return the cosine scores.

    ``Delta = sum_i c_i + sigma Z`` with ``num_canaries`` inserted unit canaries ``c_i`` and
    ``Z ~ N(0, I_d)`` (Andrew et al. 2024, §3; paper 001 §8, Thm 1 setting). In the limit
    ``d -> inf`` (with ``num_canaries / d -> 0``) observed vs null cosines behave like
    ``N(1/sigma, 1)`` vs ``N(0, 1)`` after scaling by ``sigma sqrt(d)``: the Gaussian mechanism
    with ``mu = 1/sigma``. Canaries are generated in chunks and regenerated from their seeds, so
    memory stays ``O(chunk * d)``.

    Parameters
    ----------
    dimension : int
        ``d >= 2``.
    num_canaries : int
        Inserted canaries ``>= 1``.
    noise_multiplier : float
        ``sigma > 0`` (noise std relative to the canary norm 1).
    num_null : int, optional
        Held-out canaries (default: ``num_canaries``); their cosines are drawn from the exact null.
    rng : numpy Generator or int, optional
    chunk : int
        Canaries generated at a time.

    Returns
    -------
    (ndarray, ndarray)
        Observed cosines, shape (num_canaries,), and null cosines, shape (num_null,).

    Raises
    ------
    ValueError
        If ``noise_multiplier`` is not a finite positive number.
    """
    d = check_int(dimension, "dimension", 2)
    n = check_int(num_canaries, "num_canaries", 1)
    sigma = float(noise_multiplier)
    if not (sigma > 0) or not math.isfinite(sigma):
        raise ValueError(f"noise_multiplier must be finite and > 0, got {noise_multiplier!r}")
    m = n if num_null is None else check_int(num_null, "num_null", 1)
    gen = as_rng(rng)
    seeds = np.random.SeedSequence(int(gen.integers(2**63 - 1))).spawn(math.ceil(n / chunk) + 1)
    sizes = [min(chunk, n - i * chunk) for i in range(math.ceil(n / chunk))]
    delta = sigma * np.random.default_rng(seeds[-1]).standard_normal(d)
    for s, size in zip(seeds, sizes):
        delta += random_canaries(size, d, rng=np.random.default_rng(s)).sum(axis=0)
    observed = np.concatenate([
        cosine_scores(delta, random_canaries(size, d, rng=np.random.default_rng(s))) for s, size in zip(seeds, sizes)
    ])
    return observed, null_cosines(m, d, rng=gen)


@dataclass(frozen=True)
class OneShotAudit:
    """Result of :func:`one_shot_audit`.

    Attributes
    ----------
    histogram : ScoreAudit
        Histogram audit of observed (P) vs null (Q) cosines (paper 001 §8).
    gaussian_fit_mu : float
        ``(mean(observed) - mean(null)) / sd`` with ``sd`` the pooled standard deviation: the
        Gaussian-mechanism parameter of a Gaussian fit (in the spirit of Andrew et al. 2024); an
        estimate, not a bound.
    dimension : int or None
        Model dimension when given.
    n_observed, n_null : int
        Sample sizes.
    null_source : str
        ``"given"`` or ``"exact Beta null, d=<d>"``.
    """

    histogram: ScoreAudit
    gaussian_fit_mu: float
    dimension: int | None
    n_observed: int
    n_null: int
    null_source: str

    def gaussian_fit_epsilon(self, delta: float) -> float:
        """Epsilon at ``delta`` of the Gaussian fit (an estimate, Balle & Wang 2018, Thm 8)."""
        return gaussian_epsilon(check_delta(delta), max(0.0, self.gaussian_fit_mu))

    def to_dict(self) -> dict:
        return {
            "histogram": self.histogram.to_dict(),
            "gaussian_fit_mu": float(self.gaussian_fit_mu),
            "dimension": self.dimension,
            "n_observed": self.n_observed,
            "n_null": self.n_null,
            "null_source": self.null_source,
        }


def one_shot_audit(
    observed,
    null=None,
    *,
    dimension: int | None = None,
    num_null: int | None = None,
    confidence: float = 0.95,
    rng=None,
    **histogram_kwargs,
) -> OneShotAudit:
    """Audit from the cosines of inserted vs held-out random canaries (paper 001 §8).

    Parameters
    ----------
    observed : array, shape (n,)
        Cosines of the inserted canaries with the final model update (in [-1, 1]).
    null : array, shape (m,), optional
        Cosines of held-out canaries. If omitted, ``num_null`` (default ``max(10 n, 10000)``)
        draws from the exact null for ``dimension`` are used.
    dimension : int, optional
        Model dimension ``d``; required when ``null`` is omitted.
    num_null : int, optional
        Size of the simulated null sample.
    confidence : float
        In (0, 1), passed to :func:`histogram_audit`.
    rng : numpy Generator or int, optional
    **histogram_kwargs
        Passed to :func:`histogram_audit` (``bins``, ``method``, ...).

    Returns
    -------
    OneShotAudit

    Raises
    ------
    ValueError
        On bad scores (NaN/inf, wrong shape, outside [-1, 1]), missing dimension, bad confidence.

    References
    ----------
    Andrew, Kairouz, Oh, Oprea, McMahan, Suriyakumar (2024), One-shot empirical privacy
    estimation for federated learning, ICLR; paper 001 §8 (Thm 1, Cor. 2).
    """
    obs = check_scores(observed, "observed", min_size=2)
    if np.any(np.abs(obs) > 1.0 + 1e-9):
        raise ValueError(f"observed cosines must lie in [-1, 1], got max |cos| = {np.max(np.abs(obs))!r}")
    check_probability(confidence, "confidence")
    gen = as_rng(rng)
    if null is None:
        if dimension is None:
            raise ValueError("give either null cosines or the model dimension (dimension=None)")
        d = check_int(dimension, "dimension", 2)
        m = max(10 * obs.size, 10_000) if num_null is None else check_int(num_null, "num_null", 2)
        nul = null_cosines(m, d, rng=gen)
        source = f"exact Beta null, d={d}"
    else:
        nul = check_scores(null, "null", min_size=2)
        if np.any(np.abs(nul) > 1.0 + 1e-9):
            raise ValueError(f"null cosines must lie in [-1, 1], got max |cos| = {np.max(np.abs(nul))!r}")
        d = None if dimension is None else check_int(dimension, "dimension", 2)
        source = "given"
    hist = histogram_audit(obs, nul, confidence=confidence, rng=gen, **histogram_kwargs)
    sd = math.sqrt(0.5 * (np.var(obs, ddof=1) + np.var(nul, ddof=1)))
    mu = float((obs.mean() - nul.mean()) / sd) if sd > 0 else 0.0
    return OneShotAudit(hist, mu, d, int(obs.size), int(nul.size), source)

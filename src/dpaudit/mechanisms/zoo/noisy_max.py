"""Report noisy max: two correct versions and two classic bugs.

The mechanism selects the index of the largest of ``k`` queries after adding independent noise to
each (Dwork & Roth 2014, §3.3). Encoding, as for the SVT entries:

* Dataset: ``n`` records in ``[0, 1]^k`` (shape ``(n, k)``, sizes 1..10), clipped to the box.
* Query ``i``: the sum of column ``i``; sensitivity ``Delta = 1`` under **replace-one** adjacency,
  where one record's change moves queries in opposite directions (not monotone).
* Defaults: ``k = 4`` queries.
* Output: the selected index as a float in ``{0, ..., k-1}``, shape ``(num_samples, 1)``; the
  buggy value-releasing variant returns the noisy maximum value (or index and value).

Entries
-------
* ``noisy-max-laplace``: ``argmax_i (q_i + Lap(2/eps))``; eps-DP for queries of sensitivity 1,
  monotone or not (Dwork & Roth 2014, Claim 3.9's argument with the gap bound ``2 Delta``).
* ``noisy-max-gumbel``: ``argmax_i (q_i + Gumbel(2/eps))``; equal in law to the exponential
  mechanism ``P(i) ∝ exp(eps q_i / 2)`` (Gumbel-max), eps-DP (McSherry & Talwar 2007; Dwork &
  Roth 2014, Thm 3.10).
* ``noisy-max-half-noise``: ``argmax_i (q_i + Lap(1/eps))``: the scale that suffices for monotone
  (counting) queries (Dwork & Roth 2014, Claim 3.9), used for non-monotone ones. True guarantee
  2 eps-DP (the correct scale for 2 eps); not eps-DP.
* ``noisy-max-value``: releases the noisy maximum value ``max_i (q_i + Lap(2/eps))`` instead of the
  index. Post-processing of ``k`` Laplace(2/eps) counts, so ``(k eps / 2)``-DP; not eps-DP for
  ``k >= 3`` (in the left tail the density of the maximum of ``k`` shifted Laplace variables
  changes like ``e^{k eps/2}``).

Exact laws (:meth:`NoisyMax.index_probabilities`): for Gumbel noise the softmax above; for
Laplace noise ``P(i) = int f(x - q_i) prod_{j != i} F(x - q_j) dx`` by piecewise Gauss-Legendre
quadrature.

References
----------
Dwork & Roth (2014), "The Algorithmic Foundations of Differential Privacy", §3.3 (Report Noisy
Max, Claim 3.9) and §3.4 (exponential mechanism, Thm 3.10). McSherry & Talwar (2007). Ding,
Wang, Wang, Zhang, Kifer (2018), "Detecting Violations of Differential Privacy", CCS (noisy-max
variants that return the value). Paper 000 (DP-Auditorium), §6.1 "NoisyMax".
"""

from __future__ import annotations

import numpy as np

from ._common import ColumnSumQueries, laplace_cdf, piecewise_quadrature

__all__ = ["NoisyMax", "noisy_max_index_probabilities"]

DEFAULT_NUM_QUERIES = 4
RELEASES = ("index", "value", "index-and-value")
NOISES = ("laplace", "gumbel")

# Witness pairs (replace-one, records in [0, 1]^4, queries = column sums).
# One query rises while the three others fall: q = (0, 1, 1, 1) vs (1, 0, 0, 0). Index 0 goes from
# last to first; with Lap(1/eps) noise its probability ratio is e^{1.64 eps} at eps = 1 (k = 4),
# with Lap(2/eps) e^{0.86 eps}.
WITNESS_ONE_RISES = ([[0.0, 1.0, 1.0, 1.0]], [[1.0, 0.0, 0.0, 0.0]])
# All queries rise by 1: q = (0, 0, 0, 0) vs (1, 1, 1, 1). The index law is unchanged (so this
# pair is no test of the index-releasing versions), the maximum value shifts by 1.
WITNESS_ALL_RISE = ([[0.0, 0.0, 0.0, 0.0]], [[1.0, 1.0, 1.0, 1.0]])


def noisy_max_index_probabilities(queries, noise: str, scale: float) -> np.ndarray:
    """Exact law of ``argmax_i (q_i + noise_i)`` for i.i.d. Laplace or Gumbel noise.

    Parameters
    ----------
    queries : array of float, shape (k,)
        The query values.
    noise : {"laplace", "gumbel"}
    scale : float
        Noise scale, ``> 0``.

    Returns
    -------
    ndarray of float, shape (k,)
        ``P(argmax = i)``; sums to 1. Gumbel: ``softmax(q / scale)`` (Gumbel-max). Laplace:
        piecewise Gauss-Legendre quadrature of ``f(x - q_i) prod_{j != i} F(x - q_j)``
        (absolute error about 1e-12).

    Raises
    ------
    ValueError
        For an unknown noise or a scale that is not > 0.
    """
    q = np.asarray(queries, dtype=float).reshape(-1)
    if noise not in NOISES:
        raise ValueError(f"noise must be one of {NOISES}, got {noise!r}")
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be finite and > 0, got {scale!r}")
    if noise == "gumbel":
        z = q / scale
        z = np.exp(z - z.max())
        return z / z.sum()
    x, w = piecewise_quadrature(q, [scale])
    cdf = np.stack([laplace_cdf(x - qi, scale) for qi in q])  # (k, nodes)
    pdf = np.exp(-np.abs(x[None, :] - q[:, None]) / scale) / (2.0 * scale)
    probs = np.empty(len(q))
    for i in range(len(q)):
        others = np.prod(np.delete(cdf, i, axis=0), axis=0) if len(q) > 1 else 1.0
        probs[i] = float(np.sum(w * pdf[i] * others))
    return probs


class NoisyMax(ColumnSumQueries):
    """Report noisy max over the ``k`` column sums of a dataset in ``[0, 1]^k``.

    Releases ``argmax_i (q_i + Z_i)`` (and/or ``max_i (q_i + Z_i)``), ``Z_i`` i.i.d. Laplace or
    Gumbel of scale ``scale_factor / eps`` (``Delta = 1``).

    Claim: eps-DP under replace-one adjacency (records in [0, 1]^k).
    Whether the claim holds depends on the configuration; the zoo entries are:

    ==================== ======= ============ ======= ==============================================
    entry                noise   scale        release true guarantee
    ==================== ======= ============ ======= ==============================================
    noisy-max-laplace    Laplace 2/eps        index   eps-DP (Dwork & Roth 2014, Claim 3.9 argument)
    noisy-max-gumbel     Gumbel  2/eps        index   eps-DP (exponential mechanism, DR14 Thm 3.10)
    noisy-max-half-noise Laplace 1/eps        index   2 eps-DP, not eps-DP (non-monotone queries)
    noisy-max-value      Laplace 2/eps        value   (k eps/2)-DP, not eps-DP for k >= 3
    ==================== ======= ============ ======= ==============================================

    Parameters
    ----------
    epsilon, delta : float
        As :class:`~dpaudit.mechanisms.zoo._common.ZooMechanism` (pure DP: delta is ignored).
    noise : {"laplace", "gumbel"}, default "laplace"
    scale_factor : float, default 2.0
        Noise scale is ``scale_factor * Delta / epsilon``; 2 is correct for non-monotone queries,
        1 (the monotone-query scale) is the bug of ``noisy-max-half-noise``.
    release : {"index", "value", "index-and-value"}, default "index"
        What is released: output columns ``[index]``, ``[value]`` or ``[index, value]``.
    num_queries : int, default 4
        Number ``k`` of queries (the record dimension).
    name : str, optional
        Name used in reports (the zoo entry name).

    Raises
    ------
    ValueError
        If epsilon is not finite and > 0, delta is outside [0, 1), noise or release is unknown,
        scale_factor is not finite and > 0, or num_queries is not an integer >= 1.

    References
    ----------
    Dwork & Roth (2014), §3.3 and Thm 3.10; McSherry & Talwar (2007); Ding et al. (2018).
    """

    name = "noisy-max"
    queries_role = "takes the max of {k} column sums"

    def __init__(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        noise: str = "laplace",
        scale_factor: float = 2.0,
        release: str = "index",
        num_queries: int = DEFAULT_NUM_QUERIES,
        name: str | None = None,
    ):
        super().__init__(epsilon, delta, name=name)
        if noise not in NOISES:
            raise ValueError(f"{self.name}: noise must be one of {NOISES}, got {noise!r}")
        if release not in RELEASES:
            raise ValueError(f"{self.name}: release must be one of {RELEASES}, got {release!r}")
        self.noise, self.release = noise, release
        self.scale_factor = self._positive(scale_factor, "scale_factor")
        self.num_queries = self._int(num_queries, "num_queries")

    @property
    def scale(self) -> float:
        """Noise scale ``scale_factor * Delta / epsilon`` (query units)."""
        return self.scale_factor * self.sensitivity / self.epsilon

    def sample(self, dataset: np.ndarray, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``num_samples`` independent releases (vectorised).

        Returns
        -------
        ndarray of float, shape (num_samples, 1) or (num_samples, 2)
            The index (0-based, as float), the noisy maximum value, or both (index first).
        """
        q = self.query_values(dataset)
        shape = (int(num_samples), self.num_queries)
        if self.noise == "laplace":
            noisy = q[None, :] + rng.laplace(0.0, self.scale, size=shape)
        else:
            noisy = q[None, :] + rng.gumbel(0.0, self.scale, size=shape)
        idx = np.argmax(noisy, axis=1)
        value = noisy[np.arange(shape[0]), idx]
        if self.release == "index":
            return idx.astype(float).reshape(-1, 1)
        if self.release == "value":
            return value.reshape(-1, 1)
        return np.column_stack([idx.astype(float), value])

    def index_probabilities(self, dataset: np.ndarray) -> np.ndarray:
        """Exact law of the selected index on ``dataset``, shape (k,); see
        :func:`noisy_max_index_probabilities`."""
        return noisy_max_index_probabilities(self.query_values(dataset), self.noise, self.scale)

    def __repr__(self) -> str:
        return (
            f"NoisyMax({self.name!r}, epsilon={self.epsilon:g}, noise={self.noise!r}, "
            f"scale_factor={self.scale_factor:g}, release={self.release!r}, num_queries={self.num_queries})"
        )

"""Kernel maximum mean discrepancy (MMD) with a finite-sample lower confidence bound.

Paper 000, §4.2.3: for a kernel ``k`` with ``0 <= k <= 1``,
``MMD^2(P, Q) = E[h]`` for an unbiased kernel statistic ``h`` of two independent draws from each
distribution (Theorem 4.14, Gretton et al. 2012), and ``h`` lies in ``[-2, 2]``. dpaudit follows
Alg. 7 and tightens it:

1. a part of each sample (``select_fraction``) chooses the kernel (RBF or Laplacian), its
   length scale (median heuristic times a geometric grid of factors) and a block size, on
   standardised outputs, by the bound each choice is expected to give on the rest -- the choice
   never sees the samples that are bounded, so the bound needs no union over candidates;
2. the rest is cut into independent blocks of ``B`` samples of each distribution (``B = 2``:
   the quadruples ``(x_i, x'_i, y_i, y'_i)`` of Alg. 7) and the unbiased statistic of every
   block is computed at once (vectorised, chunked to bound memory);
3. Maurer & Pontil's empirical-Bernstein bound (Thm 4) for variables in a range of width 4
   gives ``MMD^2 >= mean - sqrt(2 var ln(2/beta) / n) - 28 ln(2/beta) / (3 (n - 1))`` with
   probability ``>= 1 - beta`` (``var`` unbiased; DP-Auditorium divides by ``n``).

MMD is symmetric in P and Q, so **one** bound serves both directions. How an MMD lower bound
becomes a total-variation lower bound and then a hockey-stick (delta) or epsilon lower bound is
derived in ``docs/mmd.md``; :class:`MMDBound` carries those conversions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validate import check_int, check_positive, check_probability
from ..bounds import empirical_bernstein_lower
from ..privacy.conversions import delta_from_tv, epsilon_from_tv
from ._common import robust_standardiser, smallest_int
from .base import DivergenceBound, check_sample_pair, register_bound_type

__all__ = ["KERNELS", "STATISTICS", "KernelMMD", "MMDBound", "mmd_lower_bound", "pairwise_kernel"]

KERNELS = ("rbf", "laplacian")
"""``rbf``: ``exp(-b ||x - y||_2^2)``; ``laplacian``: ``exp(-b ||x - y||_1)``. Both in ``(0, 1]``."""

STATISTICS = ("symmetric", "paper")
"""``symmetric``: ``h = k(x,x') + k(y,y') - k(x,y') - k(x',y)`` (Gretton et al. 2012, Lemma 14);
``paper``: ``h = k(x,x') - 2 k(x,y) + k(y,y')`` (paper 000, Alg. 7). Both are unbiased for
``MMD^2`` and lie in ``[-2, 2]`` for ``0 <= k <= 1``; the symmetric one has the smaller variance
(its two cross terms are independent)."""

H_RANGE = 4.0  # width of [-2, 2], the range of h when 0 <= k <= 1


def _check_kernel(kernel: str) -> str:
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    return kernel


def _row_distances(a: np.ndarray, b: np.ndarray, metric: str, chunk_size: int) -> np.ndarray:
    """Row-wise ``||a_i - b_i||_2^2`` (metric "sq") or ``||a_i - b_i||_1`` ("l1"), shape (m,).

    Loops over chunks of ``chunk_size`` rows (not over samples) so that the temporary
    ``(chunk, output_dim)`` difference array stays small.
    """
    out = np.empty(len(a))
    for s in range(0, len(a), chunk_size):
        diff = a[s : s + chunk_size] - b[s : s + chunk_size]
        if metric == "sq":
            out[s : s + chunk_size] = np.einsum("ij,ij->i", diff, diff)
        else:
            out[s : s + chunk_size] = np.abs(diff).sum(axis=1)
    return out


def pairwise_kernel(a, b, kernel: str, bandwidth: float, scale=None, *, chunk_size: int = 65536) -> np.ndarray:
    """Row-wise kernel values ``k(a_i, b_i)`` (not a Gram matrix).

    Parameters
    ----------
    a, b : array, shape (m, output_dim)
        Rows to compare (a 1-D array is read as ``output_dim = 1``).
    kernel : {"rbf", "laplacian"}
        ``exp(-bandwidth * ||(a - b)/scale||_2^2)`` or ``exp(-bandwidth * ||(a - b)/scale||_1)``.
    bandwidth : float
        ``b > 0``, in units of 1/(squared) standardised output.
    scale : array, shape (output_dim,), optional
        Per-coordinate scale the differences are divided by (default 1).
    chunk_size : int, default 65536

    Returns
    -------
    ndarray, shape (m,), values in (0, 1].

    Raises
    ------
    ValueError
        On an unknown kernel, a bandwidth that is not finite and > 0, or mismatched shapes.
    """
    _check_kernel(kernel)
    bandwidth = check_positive(bandwidth, "bandwidth")
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    a = a.reshape(-1, 1) if a.ndim == 1 else a
    b = b.reshape(-1, 1) if b.ndim == 1 else b
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape, got {a.shape} and {b.shape}")
    if scale is not None:
        scale = np.asarray(scale, dtype=float).reshape(1, -1)
        a, b = a / scale, b / scale
    d = _row_distances(a, b, "sq" if kernel == "rbf" else "l1", chunk_size)
    return np.exp(-bandwidth * d)


@register_bound_type
@dataclass(frozen=True)
class MMDBound(DivergenceBound):
    """Lower confidence bound on the maximum mean discrepancy between P and Q (both orders).

    With probability at least ``1 - beta`` over the samples that were bounded,
    ``MMD_k^2(P, Q) >= mmd2_lower`` for the kernel ``k`` described by ``kernel``, ``bandwidth``
    and ``feature_scale`` (chosen on other samples). MMD is symmetric, so the bound covers
    ``P||Q`` and ``Q||P`` at once (``direction = "both"``).

    Attributes
    ----------
    divergence, direction, estimate, lower, beta
        See :class:`DivergenceBound`. ``divergence = "mmd"``; ``estimate`` and ``lower`` are in
        MMD units (not squared): ``estimate = sign(m) sqrt(|m|)`` for the mean statistic ``m``,
        ``lower = sqrt(max(mmd2_lower, 0))`` (``-inf`` when a tester found the sample size
        too small for the bound to reach its threshold).
    mmd2_estimate : float
        Unbiased estimate of ``MMD^2``: the mean of the block statistics.
    mmd2_lower : float
        Empirical-Bernstein lower bound on ``MMD^2`` (may be negative: then it says nothing).
    variance : float
        Unbiased sample variance of the block statistics.
    n_blocks : int
        Independent blocks the bound averages over (each uses ``block_size`` samples of P and
        ``block_size`` of Q).
    block_size : int
        Samples of each distribution per block: 2 is the linear-time statistic on quadruples
        ``(x, x', y, y')`` of paper 000, Alg. 7; larger blocks average the U-statistic inside the
        block (smaller variance, fewer blocks).
    variance_penalty, range_penalty : float
        The two terms subtracted: ``sqrt(2 variance ln(2/beta) / n_blocks)`` and
        ``28 ln(2/beta) / (3 (n_blocks - 1))``.
    kernel : {"rbf", "laplacian"}
    bandwidth : float
        ``b`` of the kernel, applied to ``(x - y) / feature_scale``.
    feature_scale : tuple of float
        Per-coordinate scale the outputs were divided by (empty: none).
    statistic : {"symmetric", "paper"}
        Which unbiased statistic (see :data:`STATISTICS`).
    n_select : int
        Samples per dataset spent choosing the kernel (0 for a fixed kernel).
    """

    mmd2_estimate: float
    mmd2_lower: float
    variance: float
    n_blocks: int
    block_size: int
    variance_penalty: float
    range_penalty: float
    kernel: str
    bandwidth: float
    feature_scale: tuple = ()
    statistic: str = "symmetric"
    n_select: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "feature_scale", tuple(float(s) for s in self.feature_scale))

    def kernel_values(self, a, b) -> np.ndarray:
        """The bounded kernel, row-wise on raw outputs: ``k(a_i, b_i)``, shape (m,)."""
        scale = self.feature_scale if self.feature_scale else None
        return pairwise_kernel(a, b, self.kernel, self.bandwidth, scale)

    def tv_lower_bound(self) -> float:
        """Lower bound on the total variation ``TV(P, Q) = sup_S |P(S) - Q(S)|``, same confidence.

        For a kernel with ``0 <= k <= 1``, ``MMD^2 <= 2 TV^2`` (``docs/mmd.md`` §2), so
        ``TV >= sqrt(max(mmd2_lower, 0) / 2)``; at most 1.
        """
        return min(1.0, math.sqrt(max(self.mmd2_lower, 0.0) / 2.0))

    def delta_lower_bound(self, epsilon):
        """Lower bound on ``max(H_{e^eps}(P||Q), H_{e^eps}(Q||P))`` for any eps >= 0 (nats).

        If both directions had ``H_{e^eps} <= d`` then ``TV <= (e^eps - 1 + 2 d)/(e^eps + 1)``
        (``docs/mmd.md`` §3), so ``d >= (t (e^eps + 1) - (e^eps - 1)) / 2`` with ``t`` =
        :meth:`tv_lower_bound`; clipped at 0. Valid for every eps at once (same confidence).
        """
        return delta_from_tv(self.tv_lower_bound(), epsilon)

    def epsilon_lower_bound(self, delta: float) -> float:
        """Largest epsilon at which the evidence still rejects ``(epsilon, delta)``-DP (nats).

        ``(eps, delta)``-DP allows ``TV <= (e^eps - 1 + 2 delta)/(e^eps + 1)``; solving for the
        eps where this equals :meth:`tv_lower_bound` ``t`` gives
        ``eps = ln((1 + t - 2 delta) / (1 - t))``. Returns 0.0 when ``t <= delta`` (nothing
        rejected) and ``inf`` when ``t >= 1``.
        """
        return epsilon_from_tv(self.tv_lower_bound(), delta)


class KernelMMD:
    """Lower confidence bounds on the MMD between two output distributions (paper 000, Alg. 7).

    Parameters
    ----------
    kernels : tuple of {"rbf", "laplacian"}, default ("rbf", "laplacian")
        Kernel families the selection step may choose from.
    bandwidth : float, optional
        Fix the kernel's ``b`` (on raw outputs) instead of choosing it; ``kernels`` and
        ``block_sizes`` must then name one value each, and every sample goes to the bound
        (``select_fraction`` is ignored).
    length_factors : tuple of float, default ``2**-7 ... 2**3`` (11 values)
        Candidate length scales as multiples of the median heuristic (median pairwise distance
        of the standardised selection samples: Euclidean for RBF, ``b = 1/l^2``; L1 for the
        Laplacian, ``b = 1/l``).
    block_sizes : tuple of int, default (2, 4, 8)
        Candidate block sizes ``B >= 2`` (see :class:`MMDBound`); ``B = 2`` alone is the
        linear-time statistic of paper 000, Alg. 7.
    select_fraction : float, default 0.2
        Fraction of each sample used to standardise the outputs (per-coordinate IQR) and to
        choose kernel, length scale and block size; the bound uses the rest. In (0, 1).
    max_select : int, default 50000
        Cap on the selection samples per dataset (more only slows the choice down and takes
        samples from the bound).
    statistic : {"symmetric", "paper"}, default "symmetric"
        The unbiased statistic (see :data:`STATISTICS`); "paper" needs ``block_sizes=(2,)``.
    chunk_size : int, default 65536
        Kernel evaluations per vectorised step (bounds the temporary memory to about
        ``chunk_size * output_dim`` floats).
    median_pairs : int, default 20000
        Random pairs used for the median heuristic.

    Raises
    ------
    ValueError
        On invalid hyper-parameters (the message names the value).

    Notes
    -----
    The choice of kernel, length scale and block size uses only the selection samples, so
    conditionally on it the bounded blocks are i.i.d. and the empirical-Bernstein bound holds at
    the full ``beta``: no union over the candidates is needed. The criterion is the bound the
    remaining samples are expected to give, ``mean - sqrt(2 var ln(2/beta) / nb) - 28 ln(2/beta)
    / (3 (nb - 1))`` with the selection blocks' mean and variance and the test block count
    ``nb``.
    """

    def __init__(
        self,
        kernels: tuple[str, ...] = KERNELS,
        bandwidth: float | None = None,
        length_factors: tuple[float, ...] = tuple(float(f) for f in 2.0 ** np.arange(-7, 4)),
        block_sizes: tuple[int, ...] = (2, 4, 8),
        select_fraction: float = 0.2,
        max_select: int = 50000,
        statistic: str = "symmetric",
        chunk_size: int = 65536,
        median_pairs: int = 20000,
    ):
        if isinstance(kernels, str):
            kernels = (kernels,)
        self.kernels = tuple(_check_kernel(k) for k in kernels)
        if not self.kernels:
            raise ValueError("kernels must name at least one kernel")
        if isinstance(block_sizes, (int, np.integer)):
            block_sizes = (block_sizes,)
        blocks = tuple(block_sizes)
        if not blocks or not all(isinstance(b, (int, np.integer)) and not isinstance(b, bool) and b >= 2 for b in blocks):
            raise ValueError(f"block_sizes must be integers >= 2, got {block_sizes!r}")
        self.block_sizes = tuple(sorted(set(int(b) for b in blocks)))
        if statistic not in STATISTICS:
            raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
        if statistic == "paper" and self.block_sizes != (2,):
            raise ValueError(f"the paper's statistic needs block_sizes=(2,), got {block_sizes!r}")
        self.statistic = statistic
        if bandwidth is not None:
            bandwidth = check_positive(bandwidth, "bandwidth")
            if len(self.kernels) != 1 or len(self.block_sizes) != 1:
                raise ValueError(
                    f"a fixed bandwidth needs exactly one kernel and one block size, got "
                    f"kernels={self.kernels!r}, block_sizes={self.block_sizes!r}"
                )
            bandwidth = float(bandwidth)
        self.bandwidth = bandwidth
        factors = tuple(float(f) for f in length_factors)
        if not factors or not all(math.isfinite(f) and f > 0 for f in factors):
            raise ValueError(f"length_factors must be positive finite numbers, got {length_factors!r}")
        self.length_factors = factors
        self.select_fraction = check_probability(select_fraction, "select_fraction")
        self.max_select = check_int(max_select, "max_select", 4 * max(self.block_sizes))
        self.chunk_size = check_int(chunk_size, "chunk_size")
        self.median_pairs = check_int(median_pairs, "median_pairs")

    # ------------------------------------------------------------------ sample accounting
    def _n_select(self, n: int) -> int:
        if self.bandwidth is not None:
            return 0
        want = min(self.max_select, int(round(self.select_fraction * n)))
        return min(n, max(2 * max(self.block_sizes), want))

    def n_blocks(self, n_p: int, n_q: int, block_size: int | None = None) -> int:
        """Blocks the bound averages over for sample sizes ``n_p``, ``n_q`` (default: the
        smallest candidate block size, which gives the most blocks)."""
        b = min(self.block_sizes) if block_size is None else int(block_size)
        return max(0, min(n_p - self._n_select(n_p), n_q - self._n_select(n_q)) // b)

    def samples_needed(self, n_blocks: int) -> int:
        """Smallest sample size per dataset that yields at least ``n_blocks`` blocks (of the
        smallest candidate size)."""
        n_blocks = max(2, int(n_blocks))
        return smallest_int(lambda n: self.n_blocks(n, n) >= n_blocks, 0, 4 * n_blocks * max(self.block_sizes) + 64)

    @staticmethod
    def range_penalty(n_blocks, beta: float):
        """``28 ln(2/beta) / (3 (n_blocks - 1))``: the part of the bound no data can remove."""
        return H_RANGE * 7.0 * math.log(2.0 / beta) / (3.0 * (np.asarray(n_blocks, dtype=float) - 1.0))

    @staticmethod
    def blocks_to_exceed(mmd2_threshold: float, beta: float) -> int:
        """Fewest blocks for which the bound can exceed ``mmd2_threshold`` at all.

        A block statistic is at most 2, and when all equal 2 the variance term vanishes, so the
        bound can exceed ``tau`` only if the range penalty is below ``2 - tau``:
        ``n_blocks > 1 + 28 ln(2/beta) / (3 (2 - tau))``. Returns ``2**62`` if ``tau >= 2``.
        """
        gap = 2.0 - mmd2_threshold
        if gap <= 0:
            return 2**62
        return max(2, int(math.floor(H_RANGE * 7.0 * math.log(2.0 / beta) / (3.0 * gap))) + 2)

    # ------------------------------------------------------------------ statistic
    def _block_distances(self, zp: np.ndarray, zq: np.ndarray, block: int, metric: str) -> dict:
        """Distances inside blocks of ``block`` samples of each distribution.

        ``zp[:nb*block]`` and ``zq[:nb*block]`` are cut into ``nb`` blocks. Returns arrays of
        shape (nb, npairs): ``"xx"`` and ``"yy"`` over the pairs ``i < j`` of a block, ``"xy"``
        over the ordered pairs ``i != j`` (``x_i`` against ``y_j``); for the paper's statistic
        (block 2) ``"xy"`` holds ``(x_1, y_1)`` only. Vectorised over blocks, chunked.
        """
        nb = min(len(zp), len(zq)) // block
        d = zp.shape[1]
        X = zp[: nb * block].reshape(nb, block, d)
        Y = zq[: nb * block].reshape(nb, block, d)
        iu, ju = np.triu_indices(block, 1)
        if self.statistic == "paper":
            ix, jy = np.array([0]), np.array([0])
        else:
            ix, jy = np.nonzero(~np.eye(block, dtype=bool))
        step = max(1, self.chunk_size // (block * block))
        out = {key: np.empty((nb, len(a))) for key, a in (("xx", iu), ("yy", iu), ("xy", ix))}
        for s in range(0, nb, step):  # loop over chunks of blocks, not over samples
            xs, ys = X[s : s + step], Y[s : s + step]
            for key, a, ia, b, ib in (("xx", xs, iu, xs, ju), ("yy", ys, iu, ys, ju), ("xy", xs, ix, ys, jy)):
                diff = a[:, ia, :] - b[:, ib, :]
                if metric == "sq":
                    out[key][s : s + step] = np.einsum("bpd,bpd->bp", diff, diff)
                else:
                    out[key][s : s + step] = np.abs(diff).sum(axis=2)
        return out

    def _block_statistic(self, dist: dict, block: int, bandwidth: float) -> np.ndarray:
        """Unbiased ``MMD^2`` estimate of each block, shape (nb,), values in [-2, 2].

        Symmetric statistic: the U-statistic of the block,
        ``2 [sum_{i<j} (k(x_i,x_j) + k(y_i,y_j)) - sum_{i!=j} k(x_i,y_j)] / (B (B - 1))``
        (for ``B = 2``: ``k(x,x') + k(y,y') - k(x,y') - k(x',y)``). Paper statistic (B = 2):
        ``k(x,x') + k(y,y') - 2 k(x,y)``.
        """
        kxx = np.exp(-bandwidth * dist["xx"]).sum(axis=1)
        kyy = np.exp(-bandwidth * dist["yy"]).sum(axis=1)
        kxy = np.exp(-bandwidth * dist["xy"]).sum(axis=1)
        if self.statistic == "paper":
            return kxx + kyy - 2.0 * kxy
        return 2.0 * (kxx + kyy - kxy) / (block * (block - 1))

    def _median_distances(self, pooled: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
        """Median Euclidean and L1 distance between random pairs of distinct ``pooled`` rows."""
        m = len(pooled)
        k = min(self.median_pairs, m * (m - 1) // 2)
        i = rng.integers(0, m, size=k)
        j = (i + rng.integers(1, m, size=k)) % m  # j != i
        sq = _row_distances(pooled[i], pooled[j], "sq", self.chunk_size)
        l1 = _row_distances(pooled[i], pooled[j], "l1", self.chunk_size)
        out = []
        for d in (np.sqrt(sq), l1):
            med = float(np.median(d))
            if not med > 0:  # many ties (discrete outputs): use the typical non-zero distance
                nz = d[d > 0]
                med = float(np.median(nz)) if len(nz) else 1.0
            out.append(med)
        return out[0], out[1]

    def _select(self, p_sel, q_sel, n_test: int, beta: float, rng) -> tuple[str, float, int, np.ndarray]:
        """Choose (kernel, bandwidth, block size, feature scale) on the selection samples.

        ``n_test`` is the number of samples per distribution left for the bound.
        """
        # The robust scale of 20000 rows of each sample is plenty (and sorting more is slow).
        _, scale = robust_standardiser(np.vstack([p_sel[:20000], q_sel[:20000]]), center=False)
        zp, zq = p_sel / scale, q_sel / scale
        med_l2, med_l1 = self._median_distances(np.vstack([zp, zq]), rng)
        log_term = math.log(2.0 / beta)
        factors = np.asarray(self.length_factors)
        best = (-math.inf, self.kernels[0], 1.0 / med_l2**2, self.block_sizes[0])
        for block in self.block_sizes:
            nb_test = n_test // block
            nb_sel = min(len(zp), len(zq)) // block
            if nb_test < 2 or nb_sel < 2:
                continue
            for kernel in self.kernels:
                dist = self._block_distances(zp, zq, block, "sq" if kernel == "rbf" else "l1")
                bws = 1.0 / (factors * med_l2) ** 2 if kernel == "rbf" else 1.0 / (factors * med_l1)
                for bw in bws:
                    u = self._block_statistic(dist, block, float(bw))
                    crit = (
                        u.mean()
                        - math.sqrt(2.0 * u.var(ddof=1) * log_term / nb_test)
                        - float(self.range_penalty(nb_test, beta))
                    )
                    if crit > best[0]:
                        best = (float(crit), kernel, float(bw), block)
        return best[1], best[2], best[3], scale

    # ------------------------------------------------------------------ public
    def estimate(self, p_samples, q_samples, *, beta: float, rng=None) -> MMDBound:
        """Lower confidence bound on ``MMD^2(P, Q)`` (and MMD) from two samples.

        Parameters
        ----------
        p_samples : array, shape (n_p, output_dim)
            Outputs on the first dataset (distribution P).
        q_samples : array, shape (n_q, output_dim)
            Outputs on the neighbouring dataset (distribution Q).
        beta : float
            Failure probability of the bound, in (0, 1).
        rng : Generator or int, optional
            Seeds the shuffle, the split and the median heuristic.

        Returns
        -------
        MMDBound
            ``mmd2_lower <= MMD_k^2(P, Q)`` with probability ``>= 1 - beta`` for the kernel it
            names.

        Raises
        ------
        ValueError
            On invalid samples (NaN/inf, mismatched dimensions), beta outside (0, 1), or fewer
            samples than two blocks need after the selection split (:meth:`samples_needed`).
        """
        p, q = check_sample_pair(p_samples, q_samples)
        beta = check_probability(beta, "beta")
        if self.n_blocks(len(p), len(q)) < 2:
            raise ValueError(
                f"the MMD bound needs at least {self.samples_needed(2)} samples per dataset, "
                f"got {len(p)} and {len(q)}"
            )
        rng = np.random.default_rng(rng)
        # Outputs may come ordered from a mechanism: a random permutation decides which rows
        # choose the kernel and how the rest is cut into blocks (rows are gathered once).
        perm_p, perm_q = rng.permutation(len(p)), rng.permutation(len(q))
        n_sel_p, n_sel_q = self._n_select(len(p)), self._n_select(len(q))
        n_test = min(len(p) - n_sel_p, len(q) - n_sel_q)
        if self.bandwidth is None:
            kernel, bandwidth, block, scale = self._select(
                p[perm_p[:n_sel_p]], q[perm_q[:n_sel_q]], n_test, beta, rng
            )
            feature_scale = tuple(float(s) for s in scale)
        else:
            kernel, bandwidth, block = self.kernels[0], self.bandwidth, self.block_sizes[0]
            scale, feature_scale = None, ()
        used = (n_test // block) * block
        zp = p[perm_p[n_sel_p : n_sel_p + used]]
        zq = q[perm_q[n_sel_q : n_sel_q + used]]
        if scale is not None:
            zp /= scale
            zq /= scale
        dist = self._block_distances(zp, zq, block, "sq" if kernel == "rbf" else "l1")
        u = self._block_statistic(dist, block, bandwidth)
        nb = len(u)
        mean = float(u.mean())
        var = float(u.var(ddof=1))
        log_term = math.log(2.0 / beta)
        lower = float(empirical_bernstein_lower(mean, var, nb, beta, value_range=H_RANGE))
        return MMDBound(
            divergence="mmd",
            direction="both",
            estimate=math.copysign(math.sqrt(abs(mean)), mean),
            lower=math.sqrt(max(lower, 0.0)),
            beta=beta,
            mmd2_estimate=mean,
            mmd2_lower=lower,
            variance=var,
            n_blocks=nb,
            block_size=int(block),
            variance_penalty=math.sqrt(2.0 * var * log_term / nb),
            range_penalty=float(self.range_penalty(nb, beta)),
            kernel=kernel,
            bandwidth=float(bandwidth),
            feature_scale=feature_scale,
            statistic=self.statistic,
            n_select=int(min(n_sel_p, n_sel_q)),
        )

    def config(self) -> dict:
        """Hyper-parameters, for reports."""
        return {
            "kernels": list(self.kernels),
            "bandwidth": self.bandwidth,
            "length_factors": list(self.length_factors),
            "block_sizes": list(self.block_sizes),
            "select_fraction": self.select_fraction,
            "max_select": self.max_select,
            "statistic": self.statistic,
            "chunk_size": self.chunk_size,
        }

def mmd_lower_bound(p_samples, q_samples, *, beta: float = 0.05, rng=None, **estimator_kwargs) -> MMDBound:
    """Lower confidence bound on the MMD between the distributions of two samples.

    Convenience wrapper around :class:`KernelMMD` for notebooks.

    Parameters
    ----------
    p_samples, q_samples : array, shape (n, output_dim)
    beta : float, default 0.05
        Failure probability of the returned bound.
    rng : Generator or int, optional
    **estimator_kwargs
        Passed to :class:`KernelMMD` (``kernels``, ``bandwidth``, ``select_fraction``...).

    Returns
    -------
    MMDBound
        ``mmd2_lower <= MMD_k^2(P, Q)`` with probability ``>= 1 - beta``; its
        ``tv_lower_bound``, ``delta_lower_bound`` and ``epsilon_lower_bound`` convert it.

    References
    ----------
    Paper 000, Thm 4.14 and Alg. 7; Maurer & Pontil (2009), Thm 4.
    """
    return KernelMMD(**estimator_kwargs).estimate(p_samples, q_samples, beta=beta, rng=rng)

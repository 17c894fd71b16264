"""The sparse vector technique (SVT): Algorithms 1-6 of Lyu, Su, Li (2017), two private, four not.

SVT answers a stream of ``k`` numerical queries ``q_1, ..., q_k`` (each of sensitivity ``Delta``)
with "above" or "below" a threshold ``T``, and pays only for the "above" answers: a noisy
threshold ``T + rho`` is compared with each noisy query ``q_i + nu_i``; after ``c`` "above"
answers (the cut-off) the algorithm stops. The six variants differ in the noise scales, in whether
the threshold noise is redrawn after each "above" answer, in whether the noisy query value is
released, and in whether there is a cut-off (Lyu, Su, Li 2017, Figure 1):

=====  =========  ===================  =======  =================  =======  =======  ==========================
alg.   eps1       threshold noise rho  redrawn  query noise nu_i   output   cut-off  privacy (their Thms)
=====  =========  ===================  =======  =================  =======  =======  ==========================
SVT1   eps/2      Lap(Delta/eps1)      no       Lap(2c Delta/eps2) 1/0      yes      eps-DP
SVT2   eps/2      Lap(c Delta/eps1)    yes      Lap(2c Delta/eps1) 1/0      yes      eps-DP
SVT3   eps/2      Lap(Delta/eps1)      no       Lap(c Delta/eps2)  q_i+nu_i yes      not eps'-DP for any eps'
SVT4   eps/4      Lap(Delta/eps1)      no       Lap(Delta/eps2)    1/0      yes      ((1 + 6c)/4) eps-DP
SVT5   eps/2      Lap(Delta/eps1)      no       none               1/0      no       not eps'-DP for any eps'
SVT6   eps/2      Lap(Delta/eps1)      no       Lap(Delta/eps2)    1/0      no       not eps'-DP for any eps'
=====  =========  ===================  =======  =================  =======  =======  ==========================

with ``eps2 = eps - eps1``. As attributed by Lyu et al.: Algorithm 1 is their own, 2 is Dwork &
Roth (2014, "Sparse"), 3 is Roth's 2011 lecture notes, 4 Lee & Clifton (2014), 5 Stoddard,
Chen, Machanavajjhala (2014), 6 Chen, Xu, Zhang, Xiao (2015). "Not eps'-DP for any eps'"
is over query streams of unbounded length; for a fixed number ``k`` of queries SVT3 and SVT6
have a finite but larger epsilon (see their classes). SVT5 has none even for ``k = 2``.

Encoding used here
------------------
* Dataset: ``n`` records in ``[0, 1]^k`` (shape ``(n, k)``, sizes 1..10); records are clipped to
  the box first (a fixed per-record map, so the sensitivity below holds for any input).
* Query ``i``: the sum of column ``i``. Under **replace-one** adjacency (the relation of these zoo
  entries) one record ``x`` becomes ``y`` and ``q_i`` moves by ``y_i - x_i`` in ``[-1, 1]``: each
  query has sensitivity ``Delta = 1`` and queries may move in **opposite directions** (they are
  not monotone). The privacy theorems of Lyu et al. are for exactly this case (any neighbouring
  relation under which each query moves by at most Delta); the classic counterexamples (Lyu et
  al.'s proofs; the "one above, rest below" and "X-shape" query patterns of Ding, Wang, Wang,
  Zhang, Kifer 2018) move queries in opposite directions. Under add/remove adjacency the column
  sums are monotone (adding a record never decreases a sum); SVT4 with ``c = 1`` is then eps-DP
  (it coincides with the monotone-query variant of Algorithm 1), which is why replace is used.
* Defaults: ``k = 4`` queries, threshold ``T = 1``, cut-off ``c = 1``.
* Output: one row per run, ``k`` answer codes ``1.0`` (above), ``0.0`` (below), ``-1.0``
  (not answered: the cut-off was reached earlier). SVT3 appends ``k`` columns with the released
  noisy values ``q_i + nu_i`` (``0.0`` where the answer is not "above"): shape ``(n, 2k)``.

Ties ``q_i + nu_i = T + rho`` count as "above" (probability 0 whenever there is query or
threshold noise).

References
----------
Lyu, Su, Li (2017), "Understanding the Sparse Vector Technique for Differential Privacy",
PVLDB 10(6), Algorithms 1-6 and Figure 1. Dwork & Roth (2014), "The Algorithmic Foundations of
Differential Privacy", §3.6. Ding, Wang, Wang, Zhang, Kifer (2018), "Detecting Violations of
Differential Privacy", CCS. Paper 000 (DP-Auditorium), §6.1 and Table 1.
"""

from __future__ import annotations

import numpy as np

from ..._validate import check_real
from ._common import ColumnSumQueries, laplace_cdf, piecewise_quadrature

__all__ = [
    "ABOVE",
    "BELOW",
    "NOT_ANSWERED",
    "SVT1",
    "SVT2",
    "SVT3",
    "SVT4",
    "SVT5",
    "SVT6",
    "SparseVector",
]

ABOVE, BELOW, NOT_ANSWERED = 1.0, 0.0, -1.0
DEFAULT_NUM_QUERIES = 4
DEFAULT_THRESHOLD = 1.0
DEFAULT_CUTOFF = 1

# Witness pairs (replace-one, records in [0, 1]^4; query values q = column sums, T = 1).
# q = (0, 0, 0, 2) vs (1, 1, 1, 1): three queries rise, the fourth falls (read from D1 to D0, the
# "one above, rest below" query pattern of Ding et al. 2018). The largest exact SVT4 divergence
# among the pairs searched (all 0/1 moves of 4 queries from half-integer offsets around T).
WITNESS_ONE_FALLS = (
    [[0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0]],
    [[0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 0.0]],
)
# Same shape one unit higher (q = (1, 1, 1, 2) vs (2, 2, 2, 1)): the largest SVT3 divergence
# (releasing the noisy value of the "above" answer) among the pairs searched.
WITNESS_ONE_FALLS_HIGH = (
    [[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0]],
    [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0]],
)
# Two queries rise, two fall (like the "X shape" pattern of Ding et al. 2018),
# q = (0, 0.5, 2, 2) vs (1, 1.5, 1, 1): the largest SVT6 divergence among the pairs searched.
WITNESS_X_SHAPE = (
    [[0.0, 0.5, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0]],
    [[0.0, 0.5, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]],
)
# A staircase that swaps the order of two pairs of queries, q = (0, 2, 2, 4) vs (1, 1, 3, 3):
# without query noise (SVT5) the answer patterns (0, 1, 1, 1) and (0, 0, 0, 1) have positive
# probability on the first dataset and probability 0 on the second.
WITNESS_STAIRCASE = (
    [[0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 1.0]],
    [[0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0]],
)


class SparseVector(ColumnSumQueries):
    """Common parts of SVT1-SVT6: parameters, query values, vectorised sampling, exact answer law.

    Subclasses fix the algorithm through the class attributes ``algorithm``, ``has_cutoff``,
    ``redraws_threshold``, ``releases_values`` and the noise scales ``threshold_noise`` and
    ``query_noise`` (read by :attr:`threshold_scale`, :attr:`query_scale`).

    Parameters
    ----------
    epsilon, delta : float
        As :class:`~dpaudit.mechanisms.zoo._common.ZooMechanism` (pure DP: delta is ignored).
    num_queries : int, default 4
        Number ``k`` of queries; datasets have shape ``(n, k)``.
    threshold : float, default 1.0
        The public threshold ``T`` (a finite number, in units of the query values).
    cutoff : int, optional
        Largest number ``c`` of "above" answers (default 1) for SVT1-SVT4. SVT5 and SVT6 have no
        cut-off and refuse the argument.

    Raises
    ------
    ValueError
        If epsilon is not finite and > 0, delta is outside [0, 1), num_queries or cutoff is not an
        integer >= 1, threshold is not finite, or a cut-off is given to SVT5/SVT6.
    """

    name = "svt"
    algorithm = 0
    has_cutoff = True
    redraws_threshold = False
    releases_values = False
    # Laplace scales as (factor, times the cut-off c?, divisor): scale = factor [* c] * Delta / (divisor * eps)
    threshold_noise: tuple[float, bool, float] = (2.0, False, 1.0)
    query_noise: tuple[float, bool, float] = (0.0, False, 1.0)

    def __init__(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        num_queries: int = DEFAULT_NUM_QUERIES,
        threshold: float = DEFAULT_THRESHOLD,
        cutoff: int | None = None,
    ):
        super().__init__(epsilon, delta)
        self.num_queries = self._int(num_queries, "num_queries")
        self.threshold = check_real(threshold, f"{self.name}: threshold")
        if not self.has_cutoff:
            if cutoff is not None:
                raise ValueError(f"{self.name} (Lyu et al. Alg. {self.algorithm}) has no cut-off; got cutoff={cutoff!r}")
            self.cutoff = None
        else:
            self.cutoff = self._int(DEFAULT_CUTOFF if cutoff is None else cutoff, "cutoff")

    # ---------------------------------------------------------------- algorithm parameters
    def _scale(self, noise: tuple[float, bool, float]) -> float:
        factor, per_cutoff, divisor = noise
        return factor * (self.cutoff if per_cutoff else 1) * self.sensitivity / (divisor * self.epsilon)

    @property
    def threshold_scale(self) -> float:
        """Scale of the Laplace threshold noise ``rho`` (query units), from ``threshold_noise``."""
        return self._scale(self.threshold_noise)

    @property
    def query_scale(self) -> float:
        """Scale of the Laplace noise ``nu_i`` added to each query (0: none), from ``query_noise``."""
        return self._scale(self.query_noise)

    @property
    def output_dim(self) -> int:
        """Length of one output row: ``k`` answer codes (``2k`` with released values)."""
        return 2 * self.num_queries if self.releases_values else self.num_queries

    # ---------------------------------------------------------------- sampling
    def sample(self, dataset: np.ndarray, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        """Run the algorithm ``num_samples`` times on ``dataset`` (vectorised over the runs).

        Returns
        -------
        ndarray of float, shape (num_samples, output_dim)
            Answer codes (``1`` above, ``0`` below, ``-1`` not answered), then for SVT3 the
            released noisy values.
        """
        q = self.query_values(dataset)
        n, k = int(num_samples), self.num_queries
        t_scale, q_scale = self.threshold_scale, self.query_scale
        noisy_t = self.threshold + rng.laplace(0.0, t_scale, size=n)
        answers = np.empty((n, k))
        values = np.zeros((n, k)) if self.releases_values else None
        count = np.zeros(n, dtype=np.int64)
        for i in range(k):  # a handful of queries; every step is vectorised over the runs
            active = count < self.cutoff if self.has_cutoff else np.ones(n, dtype=bool)
            noisy_q = q[i] + rng.laplace(0.0, q_scale, size=n) if q_scale > 0 else np.full(n, q[i])
            above = noisy_q >= noisy_t
            hit = active & above
            answers[:, i] = np.where(active, np.where(above, ABOVE, BELOW), NOT_ANSWERED)
            if values is not None:
                values[:, i] = np.where(hit, noisy_q, 0.0)
            count += hit
            if self.redraws_threshold:
                fresh = self.threshold + rng.laplace(0.0, t_scale, size=n)
                noisy_t = np.where(hit, fresh, noisy_t)
        return answers if values is None else np.hstack([answers, values])

    # ---------------------------------------------------------------- exact law of the answers
    def answer_probabilities(self, dataset: np.ndarray) -> dict[tuple[int, ...], float]:
        """Exact probability of every answer-code pattern on ``dataset``, by quadrature.

        Given the threshold noise ``rho`` the answers are independent (a Laplace CDF each), so
        ``P(a) = E_rho[prod_i P(a_i | rho)]``, integrated by piecewise Gauss-Legendre quadrature
        with pieces cut where the integrand has kinks (absolute error about 1e-12). With a
        redrawn threshold (SVT2) the pattern factorises over the runs of answers between two
        "above" answers, each with a fresh threshold. For SVT3 these are the probabilities of the
        answer codes (its first ``k`` output columns).

        Parameters
        ----------
        dataset : array, shape (n_records, k)

        Returns
        -------
        dict
            ``{pattern: probability}`` over the possible patterns, each a tuple of ``k`` codes in
            ``{1, 0, -1}``; probabilities sum to 1.

        Raises
        ------
        ValueError
            As :meth:`query_values`, or if ``k > 14`` (too many patterns to enumerate).
        """
        q = self.query_values(dataset)
        k = self.num_queries
        if k > 14:
            raise ValueError(f"{self.name}: answer_probabilities enumerates up to 2^k patterns; k = {k} > 14")
        t_scale, q_scale = self.threshold_scale, self.query_scale
        rho, w = piecewise_quadrature(np.append(q - self.threshold, 0.0), [t_scale, q_scale])
        weight = w * np.exp(-np.abs(rho) / t_scale) / (2.0 * t_scale)
        below = np.stack([laplace_cdf(self.threshold + rho - qi, q_scale) for qi in q])  # (k, nodes)
        above = 1.0 - below
        cutoff = self.cutoff if self.has_cutoff else k + 1
        out: dict[tuple[int, ...], float] = {}

        if not self.redraws_threshold:
            stack = [((), 0, weight)]
            while stack:
                pattern, count, arr = stack.pop()
                i = len(pattern)
                if i == k or count >= cutoff:
                    out[pattern + (-1,) * (k - i)] = float(arr.sum())
                    continue
                stack.append((pattern + (1,), count + 1, arr * above[i]))
                stack.append((pattern + (0,), count, arr * below[i]))
            return out

        def run(start: int, stop: int, ends_above: bool) -> float:
            """P(below at start..stop-1, then above at stop if ends_above) under a fresh threshold."""
            arr = weight.copy()
            for j in range(start, stop):
                arr = arr * below[j]
            if ends_above:
                arr = arr * above[stop]
            return float(arr.sum())

        stack2 = [((), 0, 1.0, 0)]
        while stack2:
            pattern, count, prob, start = stack2.pop()
            i = len(pattern)
            if count >= cutoff:
                out[pattern + (-1,) * (k - i)] = prob
                continue
            if i == k:
                out[pattern] = prob * run(start, k, False)
                continue
            stack2.append((pattern + (1,), count + 1, prob * run(start, i, True), i + 1))
            stack2.append((pattern + (0,), count, prob, start))
        return out

    def __repr__(self) -> str:
        c = f", cutoff={self.cutoff}" if self.has_cutoff else ""
        return (
            f"{type(self).__name__}(epsilon={self.epsilon:g}, num_queries={self.num_queries}, "
            f"threshold={self.threshold:g}{c})"
        )


class SVT1(SparseVector):
    """SVT, Lyu, Su, Li (2017) Algorithm 1: answers 1/0, threshold ``Lap(2/eps)``, query ``Lap(4c/eps)``.

    ``eps1 = eps2 = eps/2``; ``rho ~ Lap(Delta/eps1)`` drawn once; ``nu_i ~ Lap(2c Delta/eps2)``;
    stops after ``c`` "above" answers (``Delta = 1``).

    Claim: eps-DP under replace-one adjacency (records in [0, 1]^k, column-sum queries).
    Bug: none.
    True guarantee: eps-DP for queries of sensitivity Delta, monotone or not (Lyu, Su, Li 2017,
    §3, the privacy theorem of Algorithm 1).
    Witness pairs: those of :class:`SVT4` and :class:`SVT6`, where the buggy variants fail; the
    exact ``H_{e^eps}`` is 0 there (:meth:`answer_probabilities`).

    Parameters, Raises: see :class:`SparseVector`.
    """

    name = "svt1"
    algorithm = 1
    threshold_noise, query_noise = (2.0, False, 1.0), (4.0, True, 1.0)


class SVT2(SparseVector):
    """SVT, Algorithm 2 (Dwork & Roth 2014, "Sparse"): threshold ``Lap(2c/eps)`` redrawn after each "above".

    ``eps1 = eps2 = eps/2``; ``rho ~ Lap(c Delta/eps1)``, redrawn as ``Lap(c Delta/eps2)`` (the
    same scale) after each "above" answer; ``nu_i ~ Lap(2c Delta/eps1)``; cut-off ``c``.

    Claim: eps-DP under replace-one adjacency.
    Bug: none.
    True guarantee: eps-DP: ``c`` runs of AboveThreshold at ``eps/c`` each (threshold
    ``Lap(2c/eps)``, queries ``Lap(4c/eps)``), each ``(eps/c)``-DP, composed (Dwork & Roth 2014,
    §3.6, privacy of AboveThreshold and Sparse; Lyu, Su, Li 2017, Figure 1).
    Witness pairs: as :class:`SVT1`.

    Parameters, Raises: see :class:`SparseVector`.
    """

    name = "svt2"
    algorithm = 2
    redraws_threshold = True
    threshold_noise, query_noise = (2.0, True, 1.0), (4.0, True, 1.0)


class SVT3(SparseVector):
    """SVT, Algorithm 3 (Roth 2011): releases the noisy value ``q_i + nu_i`` of each "above" answer.

    ``eps1 = eps2 = eps/2``; ``rho ~ Lap(Delta/eps1)`` drawn once; ``nu_i ~ Lap(c Delta/eps2)``;
    cut-off ``c``. Output: ``k`` answer codes, then ``k`` released values (``q_i + nu_i`` where the
    answer is "above", else 0): shape ``(num_samples, 2k)``.

    Claim: eps-DP under replace-one adjacency.
    Bug: the released value ``q_i + nu_i`` is correlated with the threshold noise (it is at least
    ``T + rho``), so the "below" answers before it are no longer paid for by the threshold noise
    alone; and ``nu_i`` has half the scale Algorithm 1 needs for non-monotone queries.
    True guarantee: not eps'-DP for any finite eps' over unbounded query streams (Lyu, Su, Li
    2017, §3 and Figure 1). For ``k`` queries it is ``(k eps / (2c))``-DP, i.e. ``2 eps`` at the
    defaults: every factor of the output density (a Laplace CDF or density of scale
    ``2c/eps`` at a point that moves by at most 1) changes by at most ``e^{eps/(2c)}`` (derived
    here; an upper bound).
    Witness pair: ``WITNESS_ONE_FALLS_HIGH``: ``q = (1, 1, 1, 2)`` vs ``(2, 2, 2, 1)`` (``T = 1``):
    ``H_{e^eps} = 0.022`` at eps = 1 (numerical integration over the released value).

    Parameters, Raises: see :class:`SparseVector`.
    """

    releases_values = True  # the bug: each "above" answer's noisy value is released
    name = "svt3"
    algorithm = 3
    threshold_noise, query_noise = (2.0, False, 1.0), (2.0, True, 1.0)


class SVT4(SparseVector):
    """SVT, Algorithm 4 (Lee & Clifton 2014): threshold ``Lap(4/eps)``, query noise ``Lap(4/(3 eps))`` not scaled by c.

    ``eps1 = eps/4``, ``eps2 = 3 eps/4``; ``rho ~ Lap(Delta/eps1)`` drawn once;
    ``nu_i ~ Lap(Delta/eps2)``; cut-off ``c``.

    Claim: eps-DP under replace-one adjacency.
    Bug: each "above" answer costs ``2 Delta/scale(nu) = 1.5 eps`` (the query noise is not scaled
    with the cut-off, and a non-monotone query may move by Delta against the threshold).
    True guarantee: ``((1 + 6c)/4) eps``-DP (Lyu, Su, Li 2017, §4 and Figure 1; paper 000 §6.1,
    §6.7), i.e. ``1.75 eps`` at ``c = 1``; the exact divergence vanishes at ``1.75 eps`` on every
    pair checked in ``tests/test_zoo_svt.py``. (Under add/remove with the monotone column sums
    and ``c = 1`` it would be eps-DP.)
    Witness pair: ``WITNESS_ONE_FALLS``: ``q = (0, 0, 0, 2)`` vs ``(1, 1, 1, 1)`` (``T = 1``):
    three queries rise, the last falls; exact ``H_{e^eps} = 0.033`` at eps = 1.

    Parameters, Raises: see :class:`SparseVector`.
    """

    name = "svt4"
    algorithm = 4
    threshold_noise, query_noise = (4.0, False, 1.0), (4.0, False, 3.0)


class SVT5(SparseVector):
    """SVT, Algorithm 5 (Stoddard, Chen, Machanavajjhala 2014): no query noise, no cut-off.

    ``eps1 = eps/2``; ``rho ~ Lap(Delta/eps1)`` drawn once; answers ``1[q_i >= T + rho]`` for all
    ``k`` queries.

    Claim: eps-DP under replace-one adjacency.
    Bug: without query noise the answers are a deterministic function of ``T + rho``; when two
    queries swap order between neighbours, some answer patterns are possible on one dataset and
    impossible on the other.
    True guarantee: none (not eps'-DP for any finite eps'; Lyu, Su, Li 2017, Figure 1).
    Witness pair: ``WITNESS_STAIRCASE``: ``q = (0, 2, 2, 4)`` vs ``(1, 1, 3, 3)`` (``T = 1``):
    patterns ``(0, 1, 1, 1)`` and ``(0, 0, 0, 1)`` have probability ``P(rho in (-1, 3])`` on the
    first dataset and 0 on the second: ``H_{e^eps} = 0.585`` at eps = 1, ``0.00995`` at
    eps = 0.01 (exact).

    Parameters, Raises: see :class:`SparseVector` (no ``cutoff``).
    """

    name = "svt5"
    algorithm = 5
    has_cutoff = False
    threshold_noise, query_noise = (2.0, False, 1.0), (0.0, False, 1.0)


class SVT6(SparseVector):
    """SVT, Algorithm 6 (Chen, Xu, Zhang, Xiao 2015): query noise ``Lap(2/eps)``, no cut-off.

    ``eps1 = eps2 = eps/2``; ``rho ~ Lap(Delta/eps1)`` drawn once; ``nu_i ~ Lap(Delta/eps2)``;
    answers all ``k`` queries.

    Claim: eps-DP under replace-one adjacency.
    Bug: no cut-off: every "above" answer (and, for non-monotone queries, every "below" one) costs
    privacy that the threshold noise does not cover.
    True guarantee: not eps'-DP for any finite eps' over unbounded streams (Lyu, Su, Li 2017,
    Figure 1); for ``k`` queries it is ``(k eps/2)``-DP (each answer's probability given ``rho``
    changes by at most ``e^{eps/2}``; derived here), ``2 eps`` at ``k = 4``.
    Witness pair: ``WITNESS_X_SHAPE``: ``q = (0, 0.5, 2, 2)`` vs ``(1, 1.5, 1, 1)`` (``T = 1``):
    exact ``H_{e^eps} = 0.032`` at eps = 1.

    Parameters, Raises: see :class:`SparseVector` (no ``cutoff``).
    """

    name = "svt6"
    algorithm = 6
    has_cutoff = False
    threshold_noise, query_noise = (2.0, False, 1.0), (2.0, False, 1.0)

"""Randomized response: a correct version and one with the wrong flip probability.

Each of the ``n`` records (scalars in [0, 1], dataset shape ``(n, 1)``, sizes 1..10) holds a bit
``b = 1[x >= 1/2]``. Every bit is reported truthfully with probability ``1 - f`` and flipped with
probability ``f``, independently; the mechanism releases the number of reported ones (a
post-processing of the reported bits that does not depend on the order of the records), as a
float in ``{0, ..., n}``, shape ``(num_samples, 1)``. Adjacency is **replace-one** (``n`` is
public), under which one record's report changes.

* ``randomized-response``: ``f = 1/(1 + e^eps)``: the truthful/flipped odds are ``e^eps``, so each
  report is eps-DP in the record and the count is eps-DP (Warner 1965; Dwork & Roth 2014, §3.2;
  post-processing, Prop. 2.1). The ratio ``e^eps`` is attained, so the claim is tight.
* ``randomized-response-wrong-flip``: "randomises" a bit with probability ``1/(1 + e^eps)`` by
  replacing it with a fair coin, so it is flipped only with probability
  ``f = 1/(2 (1 + e^eps))``: the odds are ``(1 - f)/f = 1 + 2 e^eps``, a true guarantee of
  ``ln(1 + 2 e^eps)``-DP (1.86 at eps = 1, 1.10 at eps = 0.01).

Exact law: the count is Poisson-binomial (:meth:`RandomizedResponse.count_probabilities`).

References
----------
Warner (1965), "Randomized response", JASA. Dwork & Roth (2014), "The Algorithmic Foundations of
Differential Privacy", §3.2 (randomized response) and Prop. 2.1 (post-processing).
"""

from __future__ import annotations

import math

import numpy as np

from ._common import ZooMechanism, records

__all__ = ["RandomizedResponse"]

# One record whose bit flips: the reported count is one Bernoulli, where the odds e^eps (or
# 1 + 2 e^eps) are attained. More records add the same independent reports on both datasets,
# which only dilutes the divergence (post-processing).
WITNESS_ONE = ([[0.0]], [[1.0]])
FLIP_RULES = ("correct", "coin")


class RandomizedResponse(ZooMechanism):
    """Randomized response on the bits ``1[x >= 1/2]`` of the records; releases the count of reported ones.

    Claim: eps-DP under replace-one adjacency (records in [0, 1], sizes 1..10).

    Parameters
    ----------
    epsilon, delta : float
        As :class:`~dpaudit.mechanisms.zoo._common.ZooMechanism` (pure DP: delta is ignored).
    flip_rule : {"correct", "coin"}, default "correct"
        ``"correct"``: flip with probability ``1/(1 + e^eps)`` (eps-DP, tight). ``"coin"`` (the
        bug): replace the bit by a fair coin with that probability, i.e. flip with probability
        ``1/(2 (1 + e^eps))``: true guarantee ``ln(1 + 2 e^eps)``-DP.
    name : str, optional
        Name used in reports.

    Raises
    ------
    ValueError
        If epsilon is not finite and > 0, delta is outside [0, 1), or flip_rule is unknown.

    References
    ----------
    Warner (1965); Dwork & Roth (2014), §3.2.
    """

    name = "randomized-response"

    def __init__(self, epsilon: float, delta: float = 0.0, *, flip_rule: str = "correct", name: str | None = None):
        super().__init__(epsilon, delta, name=name)
        if flip_rule not in FLIP_RULES:
            raise ValueError(f"{self.name}: flip_rule must be one of {FLIP_RULES}, got {flip_rule!r}")
        self.flip_rule = flip_rule

    @property
    def flip_probability(self) -> float:
        """Probability that a bit is reported flipped: ``1/(1+e^eps)``, or half that for ``"coin"``."""
        f = 1.0 / (1.0 + math.exp(self.epsilon))
        return f if self.flip_rule == "correct" else 0.5 * f

    @property
    def true_epsilon(self) -> float:
        """``ln((1 - f)/f)``: the exact pure-DP epsilon of one report (and of the count)."""
        f = self.flip_probability
        return math.log1p(-f) - math.log(f)

    def bits(self, dataset: np.ndarray) -> np.ndarray:
        """The records' bits ``1[x >= 1/2]``, shape (n,), dtype bool.

        Raises
        ------
        ValueError
            If the records are not scalars or contain NaN/inf.
        """
        return records(dataset, 1, self.name, "reports the bits of scalar records")[:, 0] >= 0.5

    def sample(self, dataset: np.ndarray, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``num_samples`` reported counts (vectorised).

        Returns
        -------
        ndarray of float, shape (num_samples, 1)
            Number of reported ones, in ``{0, ..., n}``.
        """
        b = self.bits(dataset)
        ones, zeros = int(b.sum()), int((~b).sum())
        f = self.flip_probability
        # Truthful ones stay 1 with probability 1 - f; zeros are reported 1 with probability f.
        count = rng.binomial(ones, 1.0 - f, size=int(num_samples)) + rng.binomial(zeros, f, size=int(num_samples))
        return count.astype(float).reshape(-1, 1)

    def count_probabilities(self, dataset: np.ndarray) -> np.ndarray:
        """Exact law of the reported count: ``P(count = j)``, ``j = 0..n``, shape (n + 1,)."""
        b = self.bits(dataset)
        f = self.flip_probability
        law = np.array([1.0])
        for bit in b:  # at most a few records
            p1 = 1.0 - f if bit else f
            law = np.convolve(law, [1.0 - p1, p1])
        return law

    def __repr__(self) -> str:
        return f"RandomizedResponse({self.name!r}, epsilon={self.epsilon:g}, flip_rule={self.flip_rule!r})"

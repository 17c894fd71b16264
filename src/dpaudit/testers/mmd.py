"""The MMD tester (paper 000, §4.2.3, Alg. 8, with a tighter MMD -> (eps, delta) relation).

A claim bounds the total variation between outputs on neighbouring datasets; a bounded kernel's
MMD is at most ``sqrt(2)`` times the total variation; so a lower confidence bound on the MMD that
exceeds ``sqrt(2) * (largest TV the claim allows)`` rejects the claim. Derivations in
``docs/mmd.md``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..privacy.claims import ApproxDP, Claim, PureDP, RenyiDP
from ..privacy.conversions import renyi_epsilon_from_tv, tv_cap
from ..estimators.mmd import KernelMMD, MMDBound
from .._validate import check_probability
from ._common import EstimatorTester
from .base import TestOutcome

__all__ = ["MMDTester", "mmd_threshold", "tv_cap", "renyi_epsilon_from_tv"]


def mmd_threshold(claim: Claim) -> float:
    """Largest MMD (kernel ``0 <= k <= 1``) the claim allows: ``sqrt(2) * tv_cap(claim)``.

    ``MMD^2 <= 2 TV^2`` for such kernels (``docs/mmd.md`` §2); tighter than paper 000,
    Thm 4.13 (``MMD <= e^eps - 1 + (1 + e^-eps) delta``) for every (eps, delta).
    """
    return math.sqrt(2.0) * tv_cap(claim)


class MMDTester(EstimatorTester):
    """Tests a claim by a lower confidence bound on the kernel MMD (paper 000, Alg. 8, tightened).

    With probability ``>= 1 - beta`` the bound ``MMD_k(P, Q) >= lower`` holds
    (:class:`~dpaudit.estimators.mmd.KernelMMD`, empirical Bernstein at the full ``beta``). A
    claim allows at most ``mmd_threshold(claim) = sqrt(2) * tv_cap(claim)``; the test reports a
    violation iff ``lower > mmd_threshold(claim)``.

    **Beta split.** MMD and total variation are symmetric in P and Q, so one bound covers both
    directions, and the (eps, delta) relation already uses both of the claim's inequalities
    (``P(S) <= e^eps Q(S) + delta`` and the swapped one): the whole ``beta`` goes to the single
    bound; the kernel and its length scale are chosen on held-out samples, so they cost nothing
    either. A mechanism satisfying the claim is accused with probability ``<= beta``.

    **Claims.** ``PureDP``, ``ApproxDP`` and ``RenyiDP`` (through :func:`tv_cap`); claims that
    allow a total variation of 1 cannot be tested (:meth:`supports` is False).

    Parameters
    ----------
    estimator : KernelMMD, optional
        The estimator and its hyper-parameters (default ``KernelMMD()``).
    **estimator_kwargs
        Shortcut for ``KernelMMD(**estimator_kwargs)``.
    """

    name = "mmd"
    estimator_class = KernelMMD

    def supports(self, claim: Claim) -> bool:
        """True for PureDP, ApproxDP and RenyiDP claims that allow a total variation below 1."""
        if not isinstance(claim, (PureDP, ApproxDP, RenyiDP)):
            return False
        return tv_cap(claim) < 1.0

    def test(self, p_samples, q_samples, claim: Claim, *, beta: float, rng=None) -> TestOutcome:
        """One MMD lower bound on ``p_samples`` (D0) vs ``q_samples`` (D1), compared with ``claim``.

        Parameters and shapes as in :meth:`Tester.test`; all of ``beta`` goes to the one MMD
        bound (see the class notes).

        Returns
        -------
        TestOutcome
            ``bounds`` holds one :class:`MMDBound` (direction ``"both"``); ``margin`` and
            ``threshold`` are in MMD units; ``delta_lower_bound`` is at the claimed epsilon.
            Inconclusive (``lower = margin = -inf``) when even a perfect sample could not push
            the bound over the threshold at this sample size.

        Raises
        ------
        InvalidClaimError
            If the claim is not supported.
        ValueError
            On invalid samples or beta.
        """
        from ..estimators.base import check_sample_pair

        beta = check_probability(beta, "beta")
        self.require(claim)
        p, q = check_sample_pair(p_samples, q_samples)
        cap = tv_cap(claim)
        threshold = math.sqrt(2.0) * cap
        mmd2_threshold = 2.0 * cap * cap
        est = self.estimator
        n_blocks = est.n_blocks(len(p), len(q))
        needed_blocks = est.blocks_to_exceed(mmd2_threshold, beta)
        claimed_delta = float(claim.delta_profile(np.array([claim.epsilon]))[0])
        if n_blocks < needed_blocks:
            note = f"inconclusive: needs n >= {est.samples_needed(needed_blocks)} samples per dataset"
            if n_blocks < 2:
                bound = MMDBound(
                    divergence="mmd", direction="both", estimate=0.0, lower=-math.inf, beta=beta,
                    mmd2_estimate=0.0, mmd2_lower=-math.inf, variance=0.0, n_blocks=n_blocks,
                    block_size=min(est.block_sizes), variance_penalty=0.0, range_penalty=math.inf,
                    kernel=est.kernels[0], bandwidth=est.bandwidth or 1.0,
                )
            else:
                bound = dataclasses.replace(est.estimate(p, q, beta=beta, rng=rng), lower=-math.inf)
            return TestOutcome(
                tester=self.name, violation=False, beta=beta, bounds=(bound,), strongest=0,
                margin=-math.inf, objective=float(bound.estimate - threshold), threshold=threshold,
                delta_lower_bound=0.0, claimed_delta=claimed_delta, epsilon_lower_bound=0.0,
                inconclusive=True, note=note,
            )
        bound = est.estimate(p, q, beta=beta, rng=rng)
        margin = bound.lower - threshold
        violation = bool(bound.mmd2_lower > mmd2_threshold)
        tv = bound.tv_lower_bound()
        if isinstance(claim, RenyiDP):
            eps_lb = renyi_epsilon_from_tv(tv, claim.alpha)
        else:
            eps_lb = bound.epsilon_lower_bound(claim.delta)
        return TestOutcome(
            tester=self.name,
            violation=violation,
            beta=beta,
            bounds=(bound,),
            strongest=0,
            margin=float(margin),
            objective=float(bound.estimate - threshold),
            threshold=threshold,
            delta_lower_bound=float(bound.delta_lower_bound(claim.epsilon)),
            claimed_delta=claimed_delta,
            epsilon_lower_bound=float(eps_lb),
        )

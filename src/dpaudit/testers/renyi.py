"""The Rényi tester (paper 000 §4.1, Alg. 2; paper 002 Alg. 1), sound and tightened.

A claim enters through the largest Rényi divergence it allows between the outputs on
neighbouring datasets:

* ``RenyiDP(alpha, epsilon)``: ``tau = epsilon`` at that alpha (its definition);
* ``PureDP(epsilon)``: at any order alpha > 1,
  ``tau(alpha) = R_alpha(RR_eps) = [ln cosh((alpha - 1/2) eps) - ln cosh(eps/2)] / (alpha - 1)``,
  the Rényi divergence of randomized response, which is the largest any eps-DP pair can have
  (derivation in ``docs/renyi.md`` §4). It is below both ``eps`` and ``alpha eps^2 / 2`` (Bun &
  Steinke 2016, Prop. 3.3), and below Mironov's ``min(eps, 2 alpha eps^2)`` used by the papers.

Approximate-DP claims are not supported: ``(eps, delta)``-DP with ``delta > 0`` bounds no Rényi
divergence.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..privacy.claims import Claim, PureDP, RenyiDP
from ..privacy.conversions import pure_dp_epsilon_from_renyi, pure_dp_renyi_bound, renyi_threshold
from ..estimators.renyi import VariationalRenyi
from .._validate import check_probability
from ._common import EstimatorTester
from .base import NotApplicable, TestOutcome

__all__ = ["RenyiTester", "pure_dp_renyi_bound", "pure_dp_epsilon_from_renyi", "renyi_threshold"]

DEFAULT_PURE_ALPHAS = (1.5, 2.0, 3.0, 5.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0)


class RenyiTester(EstimatorTester):
    """Tests a Rényi-DP or pure-DP claim with variational lower bounds on ``R_alpha`` in both directions.

    Paper 000 Alg. 2 / paper 002 Alg. 1 with the estimator
    :class:`~dpaudit.estimators.renyi.VariationalRenyi`: one bounded function is fitted on the training
    part of both samples, and each direction's bound is computed on the held-out part.

    Beta accounting: each direction (``P||Q``, ``Q||P``) gets ``beta / 2``; within a direction
    the two means get ``beta / 4`` each. Each direction tests **one** order, chosen on the
    training samples (largest expected margin), so the choice costs no confidence: for a
    pure-DP claim among ``pure_alphas`` (threshold :func:`pure_dp_renyi_bound`), for an
    ``(alpha, eps)``-RDP claim among alpha and the ``pure_alphas`` below it (threshold eps at
    each, since ``R_a <= R_alpha`` for ``a <= alpha``). A claim satisfied by the mechanism is
    therefore accused with probability at most ``beta``.

    Parameters
    ----------
    estimator : VariationalRenyi, optional
        The estimator and its function class / training hyper-parameters.
    device : str, optional
        Shortcut for ``VariationalRenyi(device=device)``.
    pure_alphas : sequence of float, default (1.5, 2, 3, 5, 8, 16, 32, ..., 1024)
        Orders a pure-DP claim may be tested at.

    Raises
    ------
    ValueError
        If both ``estimator`` and ``device`` are given, or for invalid ``pure_alphas``.

    References
    ----------
    Paper 000 (DP-Auditorium) §4.1, Alg. 2, Thm 4.3; paper 002 (RényiTester) Alg. 1, Thm 4.3,
    Cor. 4.5. Derivations: ``docs/renyi.md``.
    """

    name = "renyi"
    estimator_class = VariationalRenyi

    def __init__(
        self,
        estimator: VariationalRenyi | None = None,
        *,
        device: str | None = None,
        pure_alphas: Sequence[float] = DEFAULT_PURE_ALPHAS,
    ):
        super().__init__(estimator, **({} if device is None else {"device": device}))
        alphas = tuple(float(a) for a in pure_alphas)
        if not alphas or not all(math.isfinite(a) and a > 1 for a in alphas):
            raise ValueError(f"pure_alphas must be a non-empty sequence of finite orders > 1, got {pure_alphas!r}")
        self.pure_alphas = alphas

    def supports(self, claim: Claim) -> bool:
        """Rényi-DP and pure-DP claims (approximate DP bounds no Rényi divergence)."""
        return isinstance(claim, (RenyiDP, PureDP))

    def config(self) -> dict:
        return {"tester": self.name, "pure_alphas": list(self.pure_alphas), **self.estimator.config()}

    def test(self, p_samples, q_samples, claim: Claim, *, beta: float, rng=None) -> TestOutcome:
        """Variational Rényi lower bounds in both directions of ``p_samples`` (D0) vs
        ``q_samples`` (D1, at least 8 rows each), compared with a ``RenyiDP`` or ``PureDP`` claim.

        Parameters and shapes as in :meth:`Tester.test`; each direction gets ``beta / 2``.

        Returns
        -------
        TestOutcome
            ``bounds`` = (bound on ``R(P||Q)``, bound on ``R(Q||P)``); ``threshold`` = tau at the
            strongest bound's order; ``epsilon_lower_bound`` = the largest RDP epsilon at the
            claim's alpha (RenyiDP; a bound at a lower order also bounds ``R_alpha``) or pure
            epsilon (PureDP) the evidence rejects; ``objective`` = the largest held-out
            ``estimate - tau``. When the sample size makes both bounds vacuous: ``inconclusive``,
            ``margin = -inf`` and ``note = "inconclusive: needs n >= N samples per dataset"``.

        Raises
        ------
        InvalidClaimError
            For an approximate-DP claim.
        NotApplicable
            For multi-dimensional outputs with the Chebyshev function class.
        ValueError
            On invalid samples or beta.
        """
        self.require(claim)
        beta = check_probability(beta, "beta")
        if self.estimator.function_class == "chebyshev" and np.ndim(p_samples) == 2 and np.shape(p_samples)[1] != 1:
            raise NotApplicable(
                f"the Chebyshev function class needs 1-D outputs, got output_dim {np.shape(p_samples)[1]}"
            )
        if isinstance(claim, RenyiDP):  # R_a <= R_alpha <= eps for a <= alpha: lower orders test it too
            alphas = [claim.alpha] + [a for a in self.pure_alphas if a < claim.alpha]
        else:
            alphas = list(self.pure_alphas)
        thresholds = [renyi_threshold(claim, a) for a in alphas]
        evidence = self.estimator.estimate(
            p_samples, q_samples, alphas=alphas, beta=beta / 2, thresholds=thresholds, rng=rng
        )
        bounds = evidence.bounds
        taus = [renyi_threshold(claim, b.alpha) for b in bounds]
        margins = [b.lower - t for b, t in zip(bounds, taus)]
        strongest = int(np.argmax(margins))
        margin = float(margins[strongest])
        violation = bool(margin > 0.0)
        objective = float(max(b.estimate - t for b, t in zip(bounds, taus)))
        if isinstance(claim, RenyiDP):
            eps_lb = max(0.0, max(b.lower for b in bounds))
        else:
            eps_lb = max(pure_dp_epsilon_from_renyi(b.alpha, b.lower) for b in bounds)
        inconclusive = (not violation) and all(b.vacuous for b in bounds)
        note = ""
        if inconclusive:
            needed = [b.needed_samples for b in bounds if b.needed_samples is not None]
            if needed:
                n_total = self.estimator.samples_for_test_size(min(needed))
                note = f"inconclusive: needs n >= {n_total} samples per dataset"
            else:
                note = (
                    "inconclusive: no sample size lets functions bounded by "
                    f"train_bound={self.estimator.train_bound:g} show R_alpha above the threshold"
                )
            margin = -math.inf
        return TestOutcome(
            tester=self.name,
            violation=violation,
            beta=beta,
            bounds=tuple(bounds),
            strongest=strongest,
            margin=margin,
            objective=objective,
            threshold=float(taus[strongest]),
            epsilon_lower_bound=float(eps_lb),
            inconclusive=inconclusive,
            note=note,
        )

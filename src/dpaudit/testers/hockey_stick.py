"""The classifier hockey-stick tester (paper 000, Alg. 6, tightened)."""

from __future__ import annotations

import math

import numpy as np

from ..estimators.base import profile_grid
from ..estimators.hockey_stick import ClassifierHockeyStick
from ..estimators.region import best_case_margin, smallest_sufficient_size
from ..privacy.claims import Claim
from .base import ProfileTester

__all__ = ["HockeyStickTester"]


class HockeyStickTester(ProfileTester):
    """Tests a claim by lower-bounding the hockey-stick divergence in both directions.

    Paper 000, Alg. 6 (HockeyStickTester), with the estimator of
    :class:`~dpaudit.estimators.ClassifierHockeyStick`. The claim enters through its privacy
    profile ``delta(eps')`` (:meth:`PureDP.delta_profile` etc.): since the evidence bounds
    ``H_{e^eps'}`` for every ``eps'`` at once, the verdict compares against the whole profile at no
    cost in confidence. For an :class:`ApproxDP` claim this includes ``eps' = eps`` (Alg. 6's
    ``tau = delta``) and also smaller ``eps'`` where (eps, delta)-DP still constrains the
    divergence; for :class:`RenyiDP` it uses the RDP-to-DP conversion (Canonne, Kamath, Steinke
    2020, Prop. 12). Each direction gets ``beta / 2``.

    Parameters
    ----------
    estimator : ClassifierHockeyStick, optional
        The estimator (and its classifier hyper-parameters / device).
    device : str, optional
        Shortcut for ``ClassifierHockeyStick(device=device)``.
    """

    name = "hockey-stick"

    def __init__(self, estimator: ClassifierHockeyStick | None = None, *, device: str | None = None):
        if estimator is None:
            estimator = ClassifierHockeyStick(device=device or "cpu")
        elif device is not None:
            raise ValueError("give either estimator or device, not both")
        self.estimator = estimator

    def config(self) -> dict:
        e = self.estimator
        return {
            "tester": self.name,
            "hidden_sizes": list(e.hidden_sizes),
            "epochs": e.epochs,
            "batch_size": e.batch_size,
            "learning_rate": e.learning_rate,
            "max_steps": e.max_steps,
            "train_fraction": e.train_fraction,
            "device": str(e.device),
            "num_threads": e.num_threads,
        }

    estimator_share = 0.5  # beta / 2 per direction

    def _needed_samples(self, evidence, outcome, n_p, n_q, claim, beta):
        if outcome.violation or self.best_case_margin(n_p, n_q, claim, beta) > 0.0:
            return None
        return self.needed_samples(claim, beta)

    def _held_out(self, n: int) -> int:
        """Held-out rows of a sample of n rows (the estimator's split)."""
        n_train = min(n - 2, max(2, int(round(self.estimator.train_fraction * n))))
        return n - n_train

    def best_case_margin(self, n_p: int, n_q: int, claim: Claim, beta: float) -> float:
        """The largest margin over the claim's profile that *any* data of these sizes could give.

        The region bound is ``P_lo(S) - e^eps' Q_hi(S)`` with one-sided Clopper–Pearson bounds at
        ``beta/4`` each (``beta/2`` per direction); it is largest when every held-out P sample
        and no held-out Q sample falls in S. When this best case does not exceed the claim's
        ``delta(eps')`` for any eps', no outcome of the test can reject: the test is vacuous.

        Returns
        -------
        float
            ``max_eps' [P_lo - e^eps' Q_hi - delta_claim(eps')]`` over both directions.
        """
        grid = profile_grid(claim.epsilon)
        allowed = np.asarray(claim.delta_profile(grid), dtype=float)
        best = -math.inf
        for m_in, m_out in ((self._held_out(n_p), self._held_out(n_q)), (self._held_out(n_q), self._held_out(n_p))):
            best = max(best, best_case_margin(m_in, m_out, grid, allowed, beta / 4))
        return best

    def needed_samples(self, claim: Claim, beta: float) -> int:
        """Smallest n (per dataset) at which :meth:`best_case_margin` is positive: below it the
        test cannot reject whatever the mechanism does."""
        needed = smallest_sufficient_size(lambda n: self.best_case_margin(n, n, claim, beta) > 0.0, 4, 1 << 40)
        # no size up to 2^40 helps (only for claims no finite sample can refute): report 2^41
        return 1 << 41 if needed is None else needed

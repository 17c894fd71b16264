"""The classifier hockey-stick tester (paper 000, Alg. 6, tightened)."""

from __future__ import annotations

from ..claims import Claim
from ..estimators.hockey_stick import ClassifierHockeyStick
from .base import Tester, TestOutcome, check_beta, profile_outcome

__all__ = ["HockeyStickTester"]


class HockeyStickTester(Tester):
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

    def test(self, p_samples, q_samples, claim: Claim, *, beta: float, rng=None) -> TestOutcome:
        """Test ``claim`` on samples of the outputs on two neighbouring datasets.

        Parameters
        ----------
        p_samples, q_samples : array, shape (n, output_dim)
            Outputs on D0 and on D1 (at least 4 rows each).
        claim : PureDP, ApproxDP or RenyiDP
        beta : float
            Failure probability of this test, in (0, 1); each direction gets ``beta / 2``.
        rng : Generator or int, optional

        Returns
        -------
        TestOutcome

        Raises
        ------
        ValueError
            On invalid samples or beta.
        """
        beta = check_beta(beta)
        evidence = self.estimator.estimate(
            p_samples, q_samples, epsilon=claim.epsilon, beta=beta / 2,
            delta_profile=claim.delta_profile, rng=rng,
        )
        return profile_outcome(self.name, (evidence.forward, evidence.reverse), claim, beta)

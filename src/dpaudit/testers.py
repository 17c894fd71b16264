"""Testers: a claim, two samples and a failure probability in; a verdict with its evidence out.

A tester knows which divergence to bound and how to compare the bound with a claim; it knows
nothing of datasets or search (``docs/architecture.md``). Both directions ``P||Q`` and ``Q||P``
are tested and the failure probability is split between them, so a correct mechanism is
accused with probability at most ``beta``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .claims import Claim, RenyiDP
from .estimators.base import DivergenceBound
from .estimators.hockey_stick import ClassifierHockeyStick, profile_grid

__all__ = ["HockeyStickTester", "TestOutcome"]


@dataclass(frozen=True)
class TestOutcome:
    """What one test of two samples showed.

    Attributes
    ----------
    tester : str
    violation : bool
        True when some direction's lower bound exceeds what the claim allows at some epsilon.
    beta : float
        Probability that a mechanism satisfying the claim gets ``violation=True`` (at most).
    bounds : tuple of DivergenceBound
        One per direction (``P||Q`` then ``Q||P``), each at failure probability ``beta/2``.
    strongest : int
        Index in ``bounds`` of the direction with the largest margin.
    margin : float
        ``max over directions and eps' of [lower bound on H_{e^eps'} - allowed(eps')]``:
        positive iff violation.
    witness_epsilon : float
        The eps' (nats) where that margin is attained.
    delta_lower_bound : float
        Lower bound on ``max(H_{e^eps}(P||Q), H_{e^eps}(Q||P))`` at the claimed epsilon (>= 0).
    claimed_delta : float
        What the claim allows at its epsilon.
    epsilon_lower_bound : float
        Largest epsilon for which the evidence rejects ``(epsilon, claimed_delta)``-DP
        (an empirical epsilon lower bound at confidence ``1 - beta``; 0.0 if none).
    objective : float
        Point estimate of the divergence margin used by finders to rank pairs.
    """

    __test__ = False  # not a pytest class

    tester: str
    violation: bool
    beta: float
    bounds: tuple
    strongest: int
    margin: float
    witness_epsilon: float
    delta_lower_bound: float
    claimed_delta: float
    epsilon_lower_bound: float
    objective: float

    def to_dict(self) -> dict:
        return {
            "tester": self.tester,
            "violation": self.violation,
            "beta": self.beta,
            "bounds": [b.to_dict() for b in self.bounds],
            "strongest": self.strongest,
            "margin": self.margin,
            "witness_epsilon": self.witness_epsilon,
            "delta_lower_bound": self.delta_lower_bound,
            "claimed_delta": self.claimed_delta,
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "objective": self.objective,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "TestOutcome":
        d = dict(d)
        d["bounds"] = tuple(DivergenceBound(**b) for b in d["bounds"])
        return cls(**d)


class HockeyStickTester:
    """Tests a claim by lower-bounding the hockey-stick divergence in both directions.

    Paper 000, Alg. 6 (HockeyStickTester), with the estimator of
    :class:`~dpaudit.estimators.ClassifierHockeyStick`. The claim enters through its privacy
    profile ``delta(eps')`` (:meth:`PureDP.delta_profile` etc.): since the evidence bounds
    ``H_{e^eps'}`` for every ``eps'`` at once, the verdict compares against the whole profile at no
    cost in confidence. For an :class:`ApproxDP` claim this includes ``eps' = eps`` (Alg. 6's
    ``tau = delta``) and also smaller ``eps'`` where (eps, delta)-DP still constrains the
    divergence; for :class:`RenyiDP` it uses the RDP-to-DP conversion (Canonne, Kamath, Steinke
    2020, Prop. 12).

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
            Outputs on D0 and on D1.
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
        if not (0.0 < beta < 1.0):
            raise ValueError(f"beta must be in (0, 1), got {beta!r}")
        eps = claim.epsilon
        evidence = self.estimator.estimate(
            p_samples, q_samples, epsilon=eps, beta=beta / 2, delta_profile=claim.delta_profile, rng=rng
        )
        bounds = (evidence.forward, evidence.reverse)
        grid = profile_grid(eps)
        allowed = claim.delta_profile(grid)
        margins = [b.delta_lower_bound(grid) - allowed for b in bounds]
        best_per_dir = [float(np.max(m)) for m in margins]
        strongest = int(np.argmax(best_per_dir))
        margin = best_per_dir[strongest]
        witness_eps = float(grid[int(np.argmax(margins[strongest]))])
        claimed_delta = float(claim.delta_profile(np.array([eps]))[0])
        report_delta = 0.0 if isinstance(claim, RenyiDP) else claim.delta
        delta_lb = max(0.0, max(b.delta_lower_bound(eps) for b in bounds))
        eps_lb = max(b.epsilon_lower_bound(report_delta) for b in bounds)
        objective = max(b.estimate - claimed_delta for b in bounds)
        return TestOutcome(
            tester=self.name,
            violation=bool(margin > 0.0),
            beta=beta,
            bounds=bounds,
            strongest=strongest,
            margin=margin,
            witness_epsilon=witness_eps,
            delta_lower_bound=delta_lb,
            claimed_delta=claimed_delta,
            epsilon_lower_bound=eps_lb,
            objective=float(objective),
        )

"""The float-bits tester: hockey-stick bounds from regions that are sets of doubles."""

from __future__ import annotations

import dataclasses

from ..estimators.float_bits import FloatBitsHockeyStick
from ._common import EstimatorTester
from .base import ProfileTester

__all__ = ["FloatBitsTester"]


class FloatBitsTester(EstimatorTester, ProfileTester):
    """Tests a claim with region bounds whose regions are sets of doubles (bit-level features).

    The estimator :class:`~dpaudit.estimators.float_bits.FloatBitsHockeyStick` maps each output
    to a cell of its float64 representation (granularity, low bits, atoms), chooses one region per
    direction on the selection half and certifies it with Clopper–Pearson bounds on the held-out
    half; the verdict compares the bounds with the claim's whole privacy profile
    (:func:`profile_outcome`). A mechanism satisfying the claim gets ``violation=True`` with
    probability at most ``beta`` (both directions together; shares chosen on the selection half).
    Finds floating-point leaks (Mironov 2012) and point masses; ``note`` names the feature family
    of the strongest bound when it finds a violation.

    Parameters, Raises: as :class:`~dpaudit.testers._common.EstimatorTester`, with
    ``estimator_class = FloatBitsHockeyStick`` (keyword arguments: ``families``,
    ``train_fraction``).
    """

    name = "float-bits"

    floating_point_screen = True

    estimator_class = FloatBitsHockeyStick

    def test(self, p_samples, q_samples, claim, *, beta: float, rng=None):
        """:meth:`ProfileTester.test`; a violation's ``note`` says which features found it."""
        out = super().test(p_samples, q_samples, claim, beta=beta, rng=rng)
        if out.violation:
            b = out.bounds[out.strongest]
            out = dataclasses.replace(out, note=f"found by {b.binning}: {b.region}")
        return out

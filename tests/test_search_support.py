"""Shared helpers for the search, resume and Dask tests: a fast deterministic tester and small
mechanisms (module level, so they can be pickled). Holds no tests."""

from __future__ import annotations

import math

import numpy as np

from dpaudit import Mechanism
from dpaudit.estimators.base import DivergenceBound
from dpaudit.testers import Tester, TestOutcome


class MeanShiftTester(Tester):
    """Flags a violation when the two samples' means differ by more than ``threshold`` plus a
    4-sigma margin. Not a DP tester: a fast, deterministic stand-in for the audit machinery."""

    name = "mean-shift"

    def __init__(self, threshold: float = 0.5):
        self.threshold = float(threshold)

    def config(self) -> dict:
        return {"tester": self.name, "threshold": self.threshold}

    def test(self, p_samples, q_samples, claim, *, beta, rng=None):
        p, q = np.asarray(p_samples, float), np.asarray(q_samples, float)
        est = float(abs(p.mean() - q.mean()))
        width = 4.0 * math.sqrt((p.var() + q.var()) / len(p))
        lower = est - width
        bounds = (
            DivergenceBound("mean-shift", "P||Q", est, lower, beta / 2),
            DivergenceBound("mean-shift", "Q||P", est, lower, beta / 2),
        )
        margin = lower - self.threshold
        return TestOutcome(
            tester=self.name, violation=margin > 0, beta=beta, bounds=bounds, strongest=0,
            margin=margin, objective=est - self.threshold, threshold=self.threshold,
        )


class NoisyMean(Mechanism):
    """Mean of the records + N(0, scale^2), vectorised; the mean shift is the signal."""

    def __init__(self, scale: float = 0.1):
        self.scale = scale
        self.name = f"noisy-mean({scale:g})"

    def sample(self, dataset, num_samples, rng):
        return float(np.mean(dataset)) + rng.normal(0.0, self.scale, size=num_samples)


def noisy_sum_call(dataset, rng):
    """A per-call mechanism: sum + Laplace(1)."""
    return float(np.sum(dataset)) + rng.laplace(0.0, 1.0)

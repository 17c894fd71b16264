"""Estimators: two samples in, a one-sided confidence bound on a divergence out."""

from .base import DivergenceBound
from .hockey_stick import ClassifierHockeyStick, HockeyStickEvidence, hockey_stick_lower_bound

__all__ = ["ClassifierHockeyStick", "DivergenceBound", "HockeyStickEvidence", "hockey_stick_lower_bound"]

"""Estimators: two samples in, a one-sided confidence bound on a divergence out."""

from .base import DivergenceBound, HockeyStickBound, bound_from_dict, check_sample_pair, check_samples
from .hockey_stick import ClassifierHockeyStick, HockeyStickEvidence, hockey_stick_lower_bound

__all__ = [
    "ClassifierHockeyStick",
    "DivergenceBound",
    "HockeyStickBound",
    "HockeyStickEvidence",
    "bound_from_dict",
    "check_sample_pair",
    "check_samples",
    "hockey_stick_lower_bound",
]

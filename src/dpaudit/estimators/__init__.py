"""Estimators: two samples in, a one-sided confidence bound on a divergence out.

============================ ============================================ =======================
estimator                    bound                                        source
============================ ============================================ =======================
``ClassifierHockeyStick``    hockey-stick, trained-classifier region      paper 000 Alg. 5
``VariationalRenyi``         Rényi, variational (bounded test function)   paper 002 Alg. 1, Thm 4.3
``KernelMMD``                MMD^2, empirical Bernstein                   paper 000 Alg. 7-8
``HistogramHockeyStick``     hockey-stick over discrete / binned outputs  paper 000 Alg. 3-4
============================ ============================================ =======================

The hockey-stick estimators and the score audits (:func:`histogram_audit`) all produce region
bounds (:mod:`dpaudit.estimators.region`): a region chosen on one part of the samples, certified
with Clopper–Pearson bounds on the other; :meth:`~dpaudit.estimators.region.ProfileEvidence.against`
compares any of them with a claim.

The Rényi, MMD and histogram estimators are imported on first use
(``dpaudit.estimators.KernelMMD`` works; the modules load torch/scipy pieces lazily).
"""

from __future__ import annotations

import importlib

from .base import (
    DivergenceBound,
    NotApplicable,
    bound_from_dict,
    check_sample_pair,
    check_samples,
    profile_grid,
    register_bound_type,
)
from .hockey_stick import ClassifierHockeyStick, HockeyStickEvidence, hockey_stick_lower_bound
from .region import ClaimCheck, HockeyStickBound, ProfileEvidence, ScoreAudit, certify_regions

_LAZY = {
    "VariationalRenyi": "renyi", "RenyiBound": "renyi", "RenyiEvidence": "renyi", "renyi_lower_bound": "renyi",
    "KernelMMD": "mmd", "MMDBound": "mmd", "mmd_lower_bound": "mmd",
    "HistogramHockeyStick": "histogram", "HistogramBound": "histogram", "HistogramEvidence": "histogram",
    "histogram_lower_bound": "histogram", "histogram_audit": "histogram", "make_bins": "histogram",
    "Bins": "histogram",
}

__all__ = [
    "ClaimCheck",
    "ClassifierHockeyStick",
    "DivergenceBound",
    "HockeyStickBound",
    "HockeyStickEvidence",
    "NotApplicable",
    "ProfileEvidence",
    "ScoreAudit",
    "bound_from_dict",
    "certify_regions",
    "check_sample_pair",
    "check_samples",
    "hockey_stick_lower_bound",
    "profile_grid",
    "register_bound_type",
    *_LAZY,
]


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

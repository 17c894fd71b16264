"""dpaudit.accounting: privacy accounting as mean estimation (paper 004).

* :mod:`.certified` — the entry point: :func:`get_epsilon` / :func:`get_delta` give a certified
  upper bound (refined pessimistic PLD, then prv_accountant) and fall back to a Monte Carlo upper
  confidence bound, saying which kind of number they return (:class:`AccountingResult`).
* :mod:`.prv` — dominating pairs and privacy loss random variables (Gaussian, Laplace,
  Poisson-subsampled Gaussian in both directions, heterogeneous compositions, dp_accounting
  ``DpEvent`` conversion), RDP-based upper bounds. The exact Gaussian profile
  (``gaussian_delta``/``gaussian_epsilon``) is :mod:`dpaudit.privacy.profiles`'s, re-exported here;
  the Laplace one is ``dpaudit.privacy.profiles.laplace_delta(epsilon, scale=b)``.
* :mod:`.monte_carlo` — the Monte Carlo accountant: delta(eps) and eps(delta) with confidence
  intervals, one-sided upper confidence bounds (``epsilon_upper``/``delta_upper``) with
  diagnostics, online accounting, NumPy or torch backends.
* :mod:`.verifier` — the Monte Carlo DP verifier with a proved false-positive rate.
* :mod:`.evr` — Estimate–Verify–Release.
* :mod:`.reference` — dp_accounting PLD/RDP and prv_accountant behind one interface.
"""

from .certified import AccountingResult, get_delta, get_epsilon
from .evr import ReleaseResult, VerifiableMechanism, release
from .monte_carlo import (
    ESTIMATORS,
    ConditionalLossSamples,
    DeltaEstimate,
    EpsilonEstimate,
    MonteCarloAccountant,
    MonteCarloCrossCheckWarning,
    OnlineEpsilonEstimate,
    PrivacyLossSamples,
    cross_check,
    estimate_delta,
    estimate_epsilon,
    estimate_epsilon_online,
    sample_privacy_loss,
)
from .prv import (
    ADD,
    REMOVE,
    Composition,
    GaussianStep,
    LaplaceStep,
    Step,
    SubsampledGaussianStep,
    UnsupportedEventError,
    as_composition,
    as_dp_event,
    convert,
    delta_upper_bound,
    epsilon_upper_bound,
    gaussian_delta,
    gaussian_epsilon,
)
from .verifier import VerificationPlan, VerificationResult, plan_verification, second_moment_bound, verify

__all__ = [
    "ADD",
    "AccountingResult",
    "ESTIMATORS",
    "REMOVE",
    "Composition",
    "ConditionalLossSamples",
    "DeltaEstimate",
    "EpsilonEstimate",
    "GaussianStep",
    "LaplaceStep",
    "MonteCarloAccountant",
    "MonteCarloCrossCheckWarning",
    "OnlineEpsilonEstimate",
    "PrivacyLossSamples",
    "ReleaseResult",
    "Step",
    "SubsampledGaussianStep",
    "UnsupportedEventError",
    "VerifiableMechanism",
    "VerificationPlan",
    "VerificationResult",
    "as_composition",
    "as_dp_event",
    "convert",
    "cross_check",
    "delta_upper_bound",
    "epsilon_upper_bound",
    "estimate_delta",
    "estimate_epsilon",
    "estimate_epsilon_online",
    "gaussian_delta",
    "get_delta",
    "get_epsilon",
    "gaussian_epsilon",
    "plan_verification",
    "release",
    "sample_privacy_loss",
    "second_moment_bound",
    "verify",
]


def __getattr__(name: str):
    # accounting.laplace_delta(epsilon, scale) was a second copy of the Laplace profile; calling the
    # one copy positionally with a scale would silently mean epsilon0, so the old name says where to go.
    if name == "laplace_delta":
        raise ImportError("dpaudit.accounting.laplace_delta(epsilon, scale) moved: use "
                          "dpaudit.privacy.profiles.laplace_delta(epsilon, scale=scale)")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

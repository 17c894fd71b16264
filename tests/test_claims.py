"""Privacy claims: validation, routing, serialisation, and privacy profiles checked against the
exact profiles of the Laplace and Gaussian mechanisms (a profile must upper-bound the divergence of
every mechanism that satisfies the claim)."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.privacy.claims import ApproxDP, PureDP, RenyiDP, claim_from_dict, make_claim
from dpaudit.errors import DPAuditError, InvalidClaimError

from exact_divergences import (
    gaussian_mechanism_hockey_stick,
    hockey_stick_numeric,
    laplace_hockey_stick,
)

NAN, INF = float("nan"), float("inf")


# --------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "build, shown",
    [
        (lambda: PureDP(-0.5), "-0.5"),
        (lambda: PureDP(NAN), "nan"),
        (lambda: PureDP(INF), "inf"),
        (lambda: PureDP(-INF), "-inf"),
        (lambda: PureDP("abc"), "'abc'"),
        (lambda: PureDP(None), "None"),
        (lambda: ApproxDP(-1.0, 1e-5), "-1.0"),
        (lambda: ApproxDP(1.0, -1e-6), "-1e-06"),
        (lambda: ApproxDP(1.0, 1.0), "1.0"),
        (lambda: ApproxDP(1.0, 2.5), "2.5"),
        (lambda: ApproxDP(1.0, NAN), "nan"),
        (lambda: ApproxDP(1.0, INF), "inf"),
        (lambda: ApproxDP(1.0, "tiny"), "'tiny'"),
        (lambda: ApproxDP(NAN, 1e-5), "nan"),
        (lambda: RenyiDP(1.0, 1.0), "1.0"),
        (lambda: RenyiDP(0.5, 1.0), "0.5"),
        (lambda: RenyiDP(INF, 1.0), "inf"),
        (lambda: RenyiDP(NAN, 1.0), "nan"),
        (lambda: RenyiDP("two", 1.0), "'two'"),
        (lambda: RenyiDP(2.0, -3.0), "-3.0"),
        (lambda: RenyiDP(2.0, INF), "inf"),
    ],
)
def test_invalid_parameters_raise_naming_the_value(build, shown):
    with pytest.raises(InvalidClaimError) as info:
        build()
    assert shown in str(info.value)
    # Part of the ValueError family so that ``except ValueError`` keeps working.
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, DPAuditError)


@pytest.mark.parametrize(
    "build, name",
    [
        (lambda: PureDP(-1), "epsilon"),
        (lambda: ApproxDP(1.0, 1.0), "delta"),
        (lambda: RenyiDP(1.0, 1.0), "alpha"),
        (lambda: RenyiDP(2.0, -1.0), "epsilon"),
    ],
)
def test_error_names_the_parameter(build, name):
    with pytest.raises(InvalidClaimError, match=name):
        build()


def test_valid_edges_are_accepted_and_coerced_to_float():
    assert PureDP(0).epsilon == 0.0 and isinstance(PureDP(0).epsilon, float)
    assert ApproxDP(0.0, 0.0).delta == 0.0
    assert ApproxDP(1, np.float32(0.5)).delta == 0.5
    assert RenyiDP(1.0000001, 0.0).alpha > 1.0
    assert PureDP(np.float64(2.0)).epsilon == 2.0


def test_claims_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        PureDP(1.0).epsilon = 2.0  # type: ignore[misc]


# --------------------------------------------------------------------------- make_claim
def test_make_claim_routing():
    assert make_claim(1.0) == PureDP(1.0)
    assert make_claim(1.0, delta=None) == PureDP(1.0)
    assert make_claim(1.0, delta=0.0) == PureDP(1.0)
    assert make_claim(1.0, delta=1e-5) == ApproxDP(1.0, 1e-5)
    assert make_claim(0.5, alpha=3.0) == RenyiDP(3.0, 0.5)
    assert make_claim(0.5, delta=0.0, alpha=3.0) == RenyiDP(3.0, 0.5)
    with pytest.raises(InvalidClaimError, match="not both") as info:
        make_claim(1.0, delta=1e-5, alpha=2.0)
    assert "1e-05" in str(info.value) and "2.0" in str(info.value)
    # Invalid values are still caught after routing.
    with pytest.raises(InvalidClaimError, match="delta"):
        make_claim(1.0, delta=1.5)
    with pytest.raises(InvalidClaimError, match="alpha"):
        make_claim(1.0, alpha=1.0)


# --------------------------------------------------------------------------- serialisation
@pytest.mark.parametrize("claim", [PureDP(0.7), ApproxDP(1.25, 1e-6), RenyiDP(4.0, 0.3), PureDP(0.0)])
def test_to_dict_round_trip(claim):
    assert claim_from_dict(claim.to_dict()) == claim
    assert claim_from_dict(json.loads(json.dumps(claim.to_dict()))) == claim
    assert isinstance(claim.describe(), str) and claim.describe()


def test_claim_from_dict_rejects_unknown_kind():
    with pytest.raises(InvalidClaimError, match="zcdp"):
        claim_from_dict({"kind": "zcdp", "rho": 0.5})
    with pytest.raises(InvalidClaimError):
        claim_from_dict({"epsilon": 1.0})


# --------------------------------------------------------------------------- profile properties
EPS_GRID = np.linspace(0.0, 6.0, 601)


@pytest.mark.parametrize("epsilon, delta", [(0.0, 0.0), (0.1, 0.0), (1.0, 1e-5), (3.0, 0.2), (0.5, 0.9)])
def test_approx_dp_profile_shape(epsilon, delta):
    claim = ApproxDP(epsilon, delta)
    prof = claim.delta_profile(EPS_GRID)
    assert prof.shape == EPS_GRID.shape
    # Equals delta at and beyond the claimed epsilon.
    assert np.all(prof[EPS_GRID >= epsilon] == pytest.approx(delta, abs=1e-15))
    # At eps' = 0 it is the total-variation bound of (eps, delta)-DP
    # (Kairouz, Oh, Viswanath 2015, Thm 2.1): (e^eps - 1)/(e^eps + 1) (1 - delta) + delta.
    tv = (math.exp(epsilon) - 1.0) / (math.exp(epsilon) + 1.0) * (1.0 - delta) + delta
    assert claim.delta_profile(0.0) == pytest.approx(tv, rel=1e-12, abs=1e-15)
    # Non-increasing, continuous at eps, within [delta, 1].
    assert np.all(np.diff(prof) <= 1e-15)
    assert claim.delta_profile(epsilon * (1 - 1e-9)) == pytest.approx(delta, abs=1e-8)
    assert np.all((prof >= delta - 1e-15) & (prof <= 1.0))


def test_pure_dp_profile_is_approx_dp_with_zero_delta():
    for eps in (0.0, 0.3, 2.0):
        np.testing.assert_array_equal(PureDP(eps).delta_profile(EPS_GRID), ApproxDP(eps, 0.0).delta_profile(EPS_GRID))
        assert PureDP(eps).delta == 0.0


def test_profiles_keep_the_input_shape():
    grid = np.linspace(0, 2, 12).reshape(3, 4)
    for claim in (PureDP(1.0), ApproxDP(1.0, 1e-3), RenyiDP(2.0, 0.5)):
        assert claim.delta_profile(grid).shape == (3, 4)


# --------------------------------------------------------------------------- profiles vs exact mechanisms
@pytest.mark.parametrize("epsilon", [0.05, 0.5, 1.0, 2.0, 5.0])
def test_laplace_mechanism_lies_below_the_pure_dp_profile(epsilon):
    """Laplace mechanism, sensitivity 1, scale b = 1/eps: its exact profile
    ``H_{e^eps'}(Lap(0, b) || Lap(1, b))`` must lie below ``PureDP(eps).delta_profile(eps')``."""
    b = 1.0 / epsilon
    eps_prime = np.linspace(0.0, 2.0 * epsilon, 41)
    # H by numerical integration of (p - e^eps' q)_+ on a fine grid covering +-40 scales
    # (mass outside: e^-40).
    numeric = hockey_stick_numeric(
        lambda x: stats.laplace.logpdf(x, 0.0, b),
        lambda x: stats.laplace.logpdf(x, 1.0, b),
        eps_prime,
        lo=-40.0 * b,
        hi=1.0 + 40.0 * b,
        num=2_000_001,
    )
    # The closed form (derived in exact_divergences.laplace_hockey_stick) agrees.
    np.testing.assert_allclose(numeric, laplace_hockey_stick(b, eps_prime), atol=1e-6)
    allowed = PureDP(epsilon).delta_profile(eps_prime)
    assert np.all(numeric <= allowed + 1e-6)
    assert np.all(laplace_hockey_stick(b, eps_prime) <= allowed + 1e-12)
    # The claim is tight at eps' = eps for the Laplace mechanism (both are 0), and informative
    # below it: the profile is not the trivial bound 1.
    assert laplace_hockey_stick(b, epsilon) == 0.0
    assert np.all(allowed[eps_prime < epsilon] < 1.0)


def test_gaussian_closed_form_matches_numerical_integration():
    for sigma in (0.5, 1.0, 3.0):
        eps_prime = np.linspace(0.0, 4.0, 17)
        numeric = hockey_stick_numeric(
            lambda x: stats.norm.logpdf(x, 0.0, sigma),
            lambda x: stats.norm.logpdf(x, 1.0, sigma),
            eps_prime,
            lo=-40.0 * sigma,
            hi=1.0 + 40.0 * sigma,
        )
        np.testing.assert_allclose(gaussian_mechanism_hockey_stick(sigma, eps_prime), numeric, atol=1e-7)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0, 5.0])
@pytest.mark.parametrize("alpha", [1.5, 2.0, 5.0, 32.0])
def test_gaussian_mechanism_lies_below_the_renyi_profile(sigma, alpha):
    """The Gaussian mechanism N(0, s^2) vs N(1, s^2) is (alpha, alpha / (2 s^2))-RDP (Mironov 2017,
    Prop. 7); its exact profile (Balle & Wang 2018, Thm 8) must lie below the RDP claim's profile,
    and the RDP profile must be no larger than Mironov's conversion exp((alpha - 1)(rho - eps'))."""
    rho = alpha / (2.0 * sigma**2)
    claim = RenyiDP(alpha, rho)
    eps_prime = np.linspace(0.0, 12.0, 481)
    exact = gaussian_mechanism_hockey_stick(sigma, eps_prime)
    allowed = claim.delta_profile(eps_prime)
    assert np.all(exact <= allowed + 1e-12)
    mironov = np.exp(np.minimum((alpha - 1.0) * (rho - eps_prime), 0.0))  # min(1, exp(...))
    assert np.all(allowed <= mironov + 1e-15)
    # Strictly tighter than Mironov wherever Mironov's bound is below 1 (factor
    # (1 - 1/alpha)^(alpha - 1) / alpha < 1, Canonne, Kamath, Steinke 2020, Prop. 12).
    informative = mironov < 1.0
    assert np.all(allowed[informative] < mironov[informative])
    assert np.all((allowed >= 0.0) & (allowed <= 1.0))
    assert np.all(np.diff(allowed) <= 1e-15)


def test_renyi_profile_reference_value():
    # alpha = 2, rho = 1, eps' = 1: exp(0) * (1/2)^1 / 2 = 1/4 (Canonne, Kamath, Steinke 2020, Prop. 12).
    assert RenyiDP(2.0, 1.0).delta_profile(1.0) == pytest.approx(0.25, rel=1e-12)
    # And the cap at 1 for very small eps'.
    assert RenyiDP(2.0, 5.0).delta_profile(0.0) == 1.0


@pytest.mark.parametrize("sigma, epsilon", [(0.5, 0.5), (1.0, 1.0), (2.0, 0.2), (1.0, 3.0)])
def test_gaussian_mechanism_lies_below_its_tight_approx_dp_profile(sigma, epsilon):
    """The Gaussian mechanism is (eps, H(eps))-DP with H its exact profile; by Kairouz–Oh–Viswanath
    the (eps, delta)-DP profile bounds its divergence at every other eps' too."""
    delta = float(gaussian_mechanism_hockey_stick(sigma, epsilon))
    claim = ApproxDP(epsilon, delta)
    eps_prime = np.linspace(0.0, 3.0 * epsilon, 301)
    exact = gaussian_mechanism_hockey_stick(sigma, eps_prime)
    assert np.all(exact <= claim.delta_profile(eps_prime) + 1e-12)
    assert claim.delta_profile(epsilon) == pytest.approx(exact[np.argmin(np.abs(eps_prime - epsilon))], abs=1e-9)


@pytest.mark.parametrize("bad", [True, False, "0.5", b"1"])
def test_bools_and_strings_are_not_privacy_parameters(bad):
    with pytest.raises(InvalidClaimError, match="real number"):
        PureDP(bad)
    with pytest.raises(InvalidClaimError, match="real number"):
        ApproxDP(1.0, bad)
    with pytest.raises(InvalidClaimError, match="real number"):
        RenyiDP(bad, 1.0)

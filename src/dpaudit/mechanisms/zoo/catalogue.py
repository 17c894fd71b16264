"""The catalogue of the zoo: every entry (name, claim, bug, true guarantee, witness pairs) in one table.

Entries are registered by name (the CLI's ``zoo:NAME``). An entry builds its mechanism for the
privacy parameters under test, so ``dpaudit test zoo:dp-laplace --epsilon 0.01`` audits the
mechanism instantiated at epsilon = 0.01 against the claim it makes at that epsilon.

The mechanisms live in their modules (:mod:`.mean`, :mod:`.svt`, :mod:`.noisy_max`,
:mod:`.median`, :mod:`.dpgd`, :mod:`.randomized_response`, :mod:`.floating`, :mod:`.harder`, :mod:`.corners`), whose docstrings derive the numbers
quoted here; each family below lists the fields its entries share once, then one ``dict`` per
entry. An entry's name is its factory's ``name`` (the class attribute, or the one :func:`variant`
sets).
"""

from __future__ import annotations

from ...datasets import Domain
from ...errors import DPAuditError
from .dpgd import (
    DPGD,
    RECORD_BOUND,
    WITNESS_EXTREMAL,
    WITNESS_OPPOSITE,
    ScaledGD,
    WrongSensitivitySGD,
)
from .corners import WITNESS_EMPTY, WITNESS_SUM_ONE, NoisySumEmptyShortcut, RDPGaussianSum
from . import dpsniper as _dps
from .entry import ZooEntry, variant
from .floating import WITNESS_FLOAT, FloatGaussian, FloatLaplace, SnappingLaplace
from .harder import (
    CLIP_FIRST,
    EXACT_PROBABILITY,
    FAST_PATH_FROM,
    WITNESS_CLIP,
    WITNESS_EXACT,
    WITNESS_FAST,
    WITNESS_FAST_BOTH,
    WITNESS_OFF_GRID,
    WITNESS_OFF_GRID_EMPTY,
    ExponentialQuantileCandidates,
    LaplaceSum,
)
from .mean import WITNESS, WITNESS_SUM, DPGaussian, DPLaplace, NonDPGaussian1, NonDPGaussian2, NonDPLaplace1, NonDPLaplace2
from .median import ExponentialQuantile
from .noisy_max import DEFAULT_NUM_QUERIES, WITNESS_ALL_RISE, WITNESS_ONE_RISES, NoisyMax
from .randomized_response import WITNESS_ONE, RandomizedResponse
from .svt import (
    SVT1,
    SVT2,
    SVT3,
    SVT4,
    SVT5,
    SVT6,
    WITNESS_ONE_FALLS,
    WITNESS_ONE_FALLS_HIGH,
    WITNESS_STAIRCASE,
    WITNESS_X_SHAPE,
)

__all__ = ["entries", "families", "get", "register"]

_REGISTRY: dict[str, ZooEntry] = {}


def register(entry: ZooEntry) -> ZooEntry:
    """Add an entry to the zoo (names must be unique).

    Raises
    ------
    ValueError
        If an entry of that name is already registered.
    """
    if entry.name in _REGISTRY:
        raise ValueError(f"zoo entry {entry.name!r} registered twice")
    _REGISTRY[entry.name] = entry
    return entry


def entries() -> list[ZooEntry]:
    """All zoo entries, sorted by name."""
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def get(name: str) -> ZooEntry:
    """The entry called ``name``; raises :class:`DPAuditError` listing the valid names otherwise."""
    if name not in _REGISTRY:
        raise DPAuditError(f"no zoo mechanism called {name!r}; available: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def families() -> dict[str, list[ZooEntry]]:
    """The entries grouped by family (``ZooEntry.family``).

    Returns
    -------
    dict of str to list of ZooEntry
        Family title to its entries, both in catalogue order (a family's correct mechanism
        usually first, then its buggy variants).
    """
    grouped: dict[str, list[ZooEntry]] = {}
    for entry in _REGISTRY.values():
        grouped.setdefault(entry.family, []).append(entry)
    return grouped


def _register_family(family: str, common: dict, *specs: dict) -> None:
    """Register one ``ZooEntry`` per spec of the family titled ``family``: the spec's fields over
    the family's ``common`` ones; the name is the factory's ``name``."""
    for spec in specs:
        fields = {"family": family, **common, **spec}
        register(ZooEntry(name=fields["factory"].name, **fields))


# ---------------------------------------------------------------- mean (paper 000 §6.1)
_MEAN_SOURCE = "paper 000 (DP-Auditorium), §6.1 'Evaluated mechanisms'"
_TRUE_COUNT = "divides by the true count, undefined on the empty dataset (paper 000 audits sizes 1..10)"
_CLAMP_NOTE = (
    " n_tilde = max(1, n + Laplace(2/eps)); paper 000 clamps at 1e-12, the clamp at 1 is "
    "post-processing of the noisy count and changes no guarantee."
)

_register_family(
    "mean (paper 000 §6.1)",
    {},
    dict(
        factory=DPLaplace,
        claim_kind="pure",
        private=True,
        exact_arithmetic_only=True,
        summary="mean of records in [0, 1]: S/n_tilde + Laplace(2/(n_tilde eps)), noisy count n_tilde (half the budget)",
        bug=None,
        true_guarantee=(
            "eps-DP: noisy count (eps/2)-DP (Laplace mechanism, Dwork & Roth 2014 Thm 3.6; clamp is "
            "post-processing); given n_tilde, S/n_tilde has sensitivity 1/n_tilde and "
            "Laplace(2/(n_tilde eps)) makes it (eps/2)-DP; adaptive basic composition (Dwork & Roth "
            "2014 Thm 3.16, §3.5)." + _CLAMP_NOTE
        ),
        witness_pairs=(WITNESS, WITNESS_SUM),
        source=_MEAN_SOURCE + ", DPLaplace",
    ),
    dict(
        factory=NonDPLaplace1,
        claim_kind="pure",
        private=False,
        summary="mean of records in [0, 1]: S/n + Laplace(2/(n eps)) with the true count n",
        bug=(
            "the noise scale 2/(n eps) uses the true count: on D and D+{x} the Laplace scales "
            "differ, so the privacy loss grows without bound in the tails"
        ),
        true_guarantee=(
            "no finite pure-DP guarantee under add/remove (unbounded privacy loss). At the witness "
            "pair Lap(1, 2/eps) vs Lap(1/2, 1/eps): H_{e^eps} = 0.2475 at eps = 0.01, 0.1037 at "
            "eps = 1 (numerical integration). (eps/2)-DP only under replace-one with a public n."
        ),
        witness_pairs=(WITNESS,),
        source=_MEAN_SOURCE + ", NonDPLaplace1",
        min_size=1,
        min_size_reason=_TRUE_COUNT,
    ),
    dict(
        factory=NonDPLaplace2,
        claim_kind="pure",
        private=False,
        summary="mean of records in [0, 1]: S/n + Laplace(2/(n_tilde eps)), true count in the mean, noisy count in the scale",
        bug=(
            "the mean divides by the true count n (sensitivity up to 1/2 at n = 1 -> 2) while the "
            "noise is calibrated to the noisy count n_tilde, often far larger than n at small eps: "
            "too little noise"
        ),
        true_guarantee=(
            "not eps-DP for small eps: at the witness pair H_{e^eps} = 0.0995 at eps = 0.01 (privacy "
            "loss about 0.81 nats). The violation vanishes near eps = 0.95; at eps = 1 the privacy "
            "loss stays below 0.97 nats at sizes 1..10, so the 1-DP claim holds there (paper 000 "
            "Table 1: undetected at eps = 1). Numerical integration." + _CLAMP_NOTE
        ),
        witness_pairs=(WITNESS,),
        source=_MEAN_SOURCE + ", NonDPLaplace2",
        min_size=1,
        min_size_reason=_TRUE_COUNT,
        # H_{e^eps} = 1.9e-7 at eps = 0.95 and 0 from eps = 0.97 on (sizes 1..10): the boundary lies
        # between the two; 0.96 splits the difference.
        violates_for=(0.0, 0.96),
    ),
    dict(
        factory=DPGaussian,
        claim_kind="approx",
        private=True,
        exact_arithmetic_only=True,
        summary=(
            "mean of records in [0, 1]: S/n_tilde + N(0, sigma^2), sigma = sqrt(2 ln(1.25/delta)) "
            "2/(n_tilde eps); valid for eps <= 2"
        ),
        bug=None,
        true_guarantee=(
            "(eps, delta)-DP for 0 < eps <= 2: noisy count (eps/2, 0)-DP; the Gaussian step is the "
            "classic Gaussian mechanism at (eps/2, delta), valid for eps/2 <= 1 (Dwork & Roth 2014 "
            "Thm A.1, eps/2 = 1 by continuity); basic composition. The factory refuses eps > 2."
            + _CLAMP_NOTE
        ),
        witness_pairs=(WITNESS, WITNESS_SUM),
        default_delta=1e-5,
        source="Gaussian counterpart of DPLaplace, " + _MEAN_SOURCE,
    ),
    dict(
        factory=NonDPGaussian1,
        claim_kind="approx",
        private=False,
        summary="mean of records in [0, 1]: S/n + N(0, sigma^2), sigma = sqrt(2 ln(1.25/delta)) 2/(n eps), true count",
        bug=(
            "sigma uses the true count: on D and D+{x} the Gaussian variances differ, so the "
            "privacy loss is unbounded (quadratic) in the tails"
        ),
        true_guarantee=(
            "no (eps, delta)-DP guarantee for small delta: at the witness pair N(1, (2c/eps)^2) vs "
            "N(1/2, (c/eps)^2), c = sqrt(2 ln(1.25e5)) = 4.84: H_{e^eps} = 0.3209 at eps = 0.01, "
            "0.1976 at eps = 1 (delta = 1e-5; numerical integration)"
        ),
        witness_pairs=(WITNESS,),
        default_delta=1e-5,
        source=_MEAN_SOURCE + ", NonDPGaussian1",
        min_size=1,
        min_size_reason=_TRUE_COUNT,
    ),
    dict(
        factory=NonDPGaussian2,
        claim_kind="approx",
        private=False,
        summary=(
            "mean of records in [0, 1]: S/n + N(0, sigma^2), sigma = sqrt(2 ln(1.25/delta)) "
            "2/(n_tilde eps): true count in the mean, noisy count in sigma"
        ),
        bug=(
            "the mean divides by the true count n while sigma is calibrated to the noisy count "
            "n_tilde, often far larger than n at small eps: too little noise"
        ),
        true_guarantee=(
            "not (eps, delta)-DP for small eps: at the witness pair H_{e^eps} = 0.0193 at eps = 0.01 "
            "(delta = 1e-5). The violation vanishes near eps = 0.2; at eps = 1 H_{e^eps} <= 6e-25 at "
            "sizes 1..10, so the (1, 1e-5) claim holds there (paper 000 Table 1: undetected at "
            "eps = 1). Numerical integration." + _CLAMP_NOTE
        ),
        witness_pairs=(WITNESS,),
        default_delta=1e-5,
        source=_MEAN_SOURCE + ", NonDPGaussian2",
        min_size=1,
        min_size_reason=_TRUE_COUNT,
        # At delta = 1e-5: H_{e^eps} = 5.7e-5 > delta at eps = 0.19, about 1e-25 at eps = 0.2.
        violates_for=(0.0, 0.2),
    ),
)

# ---------------------------------------------------------------- SVT1-SVT6 (Lyu, Su, Li 2017)
_SVT_SOURCE = "Lyu, Su, Li (2017), PVLDB 10(6)"
_SVT_ENCODING = "4 column-sum queries over records in [0, 1]^4, T = 1"

_register_family(
    "sparse vector technique (Lyu, Su, Li 2017)",
    dict(claim_kind="pure", relation="replace", domain=Domain.unit(DEFAULT_NUM_QUERIES)),
    dict(
        factory=SVT1,
        private=True,
        summary="SVT (Lyu et al. Alg. 1): answers 1/0, threshold Lap(2/eps), queries Lap(4c/eps), cut-off c = 1; " + _SVT_ENCODING,
        bug=None,
        true_guarantee="eps-DP for queries of sensitivity 1, monotone or not (Lyu, Su, Li 2017, §3, privacy of Algorithm 1)",
        witness_pairs=(WITNESS_ONE_FALLS, WITNESS_X_SHAPE),
        source=_SVT_SOURCE + ", Algorithm 1",
    ),
    dict(
        factory=SVT2,
        private=True,
        summary=(
            "SVT (Lyu et al. Alg. 2, Dwork & Roth's Sparse): answers 1/0, threshold Lap(2c/eps) redrawn after "
            "each 'above', queries Lap(4c/eps), c = 1; " + _SVT_ENCODING
        ),
        bug=None,
        true_guarantee="eps-DP: c AboveThreshold runs at eps/c each, composed (Dwork & Roth 2014 §3.6; Lyu, Su, Li 2017, Fig. 1)",
        witness_pairs=(WITNESS_ONE_FALLS, WITNESS_X_SHAPE),
        source=_SVT_SOURCE + ", Algorithm 2; Dwork & Roth (2014) Alg. 2",
    ),
    dict(
        factory=SVT3,
        private=False,
        summary=(
            "SVT (Lyu et al. Alg. 3): also releases the noisy value of the 'above' answer; threshold Lap(2/eps), "
            "queries Lap(2c/eps), c = 1; output 4 codes + 4 values; " + _SVT_ENCODING
        ),
        bug=(
            "the released value q_i + nu_i >= T + rho carries information on the threshold noise, so the 'below' "
            "answers are no longer covered by it (and nu_i has half the scale non-monotone queries need)"
        ),
        true_guarantee=(
            "not eps'-DP for any finite eps' over unbounded query streams (Lyu, Su, Li 2017, Fig. 1); with k = 4 "
            "queries and c = 1 at most 2 eps-DP (each density factor moves by <= e^{eps/2}; derived). At the witness "
            "pair H_{e^eps} = 0.022 at eps = 1, 1.5e-4 at eps = 0.01 (numerical integration)"
        ),
        witness_pairs=(WITNESS_ONE_FALLS_HIGH,),
        source=_SVT_SOURCE + ", Algorithm 3; paper 000 §6.1",
    ),
    dict(
        factory=SVT4,
        private=False,
        summary=(
            "SVT (Lyu et al. Alg. 4): answers 1/0, threshold Lap(4/eps), queries Lap(4/(3 eps)) not scaled by "
            "the cut-off c = 1; " + _SVT_ENCODING
        ),
        bug="the query noise is too small: each 'above' answer costs 1.5 eps, not the eps/2 the analysis assumed",
        true_guarantee=(
            "((1 + 6c)/4) eps-DP = 1.75 eps at c = 1 (Lyu, Su, Li 2017, §4 and Fig. 1; paper 000 §6.7). "
            "At the witness pair H_{e^eps} = 0.033 at eps = 1, 1.8e-4 at eps = 0.01 (exact quadrature)"
        ),
        witness_pairs=(WITNESS_ONE_FALLS,),
        source=_SVT_SOURCE + ", Algorithm 4; paper 000 §6.1, §6.7",
    ),
    dict(
        factory=SVT5,
        private=False,
        summary="SVT (Lyu et al. Alg. 5): answers 1/0, threshold Lap(2/eps), no query noise, no cut-off; " + _SVT_ENCODING,
        bug=(
            "no query noise: the answers are a deterministic function of the noisy threshold, so answer patterns "
            "possible on one dataset are impossible on a neighbour where two queries swap order"
        ),
        true_guarantee=(
            "none: not eps'-DP for any finite eps' (Lyu, Su, Li 2017, Fig. 1). At the witness pair two answer "
            "patterns have probability P(rho in (-1, 3]) on D0 and 0 on D1: H_{e^eps} = 0.585 at eps = 1, "
            "0.0099 at eps = 0.01 (exact)"
        ),
        witness_pairs=(WITNESS_STAIRCASE,),
        source=_SVT_SOURCE + ", Algorithm 5; paper 000 §6.1",
    ),
    dict(
        factory=SVT6,
        private=False,
        summary="SVT (Lyu et al. Alg. 6): answers 1/0, threshold Lap(2/eps), queries Lap(2/eps), no cut-off; " + _SVT_ENCODING,
        bug="no cut-off: every answer costs privacy the threshold noise does not cover when queries move in opposite directions",
        true_guarantee=(
            "not eps'-DP for any finite eps' over unbounded streams (Lyu, Su, Li 2017, Fig. 1); with k = 4 queries at "
            "most 2 eps-DP (derived: each answer's conditional probability moves by <= e^{eps/2}). At the witness "
            "pair H_{e^eps} = 0.032 at eps = 1, 1.9e-4 at eps = 0.01 (exact quadrature)"
        ),
        witness_pairs=(WITNESS_X_SHAPE,),
        source=_SVT_SOURCE + ", Algorithm 6; paper 000 §6.1",
    ),
)

# ---------------------------------------------------------------- report noisy max
_NOISY_MAX_SOURCE = "Dwork & Roth (2014) §3.3; paper 000 (DP-Auditorium) §6.1 'NoisyMax'"
_NOISY_MAX_ENCODING = "4 column-sum queries over records in [0, 1]^4 (not monotone under replace)"

_register_family(
    "report noisy max",
    dict(claim_kind="pure", relation="replace", domain=Domain.unit(DEFAULT_NUM_QUERIES)),
    dict(
        factory=variant(NoisyMax, "noisy-max-laplace", noise="laplace", scale_factor=2.0),
        private=True,
        summary="report noisy max: index of max_i q_i + Lap(2/eps); " + _NOISY_MAX_ENCODING,
        bug=None,
        true_guarantee=(
            "eps-DP for queries of sensitivity 1, monotone or not: fixing the other noises, index i wins iff its "
            "noise exceeds a cut that moves by at most 2 between neighbours (Dwork & Roth 2014, proof of Claim 3.9 "
            "with the gap bound 2 Delta)"
        ),
        witness_pairs=(WITNESS_ONE_RISES,),
        source=_NOISY_MAX_SOURCE,
    ),
    dict(
        factory=variant(NoisyMax, "noisy-max-gumbel", noise="gumbel", scale_factor=2.0),
        private=True,
        summary="report noisy max with Gumbel(2/eps) noise = exponential mechanism P(i) ∝ exp(eps q_i / 2); " + _NOISY_MAX_ENCODING,
        bug=None,
        true_guarantee="eps-DP: the exponential mechanism with utility sensitivity 1 (McSherry & Talwar 2007; Dwork & Roth 2014 Thm 3.10)",
        witness_pairs=(WITNESS_ONE_RISES,),
        source="McSherry & Talwar (2007); Dwork & Roth (2014) §3.4",
    ),
    dict(
        factory=variant(NoisyMax, "noisy-max-half-noise", noise="laplace", scale_factor=1.0),
        private=False,
        summary="report noisy max with Lap(1/eps), the scale for monotone queries, on non-monotone ones; " + _NOISY_MAX_ENCODING,
        bug=(
            "noise scale 1/eps misses the factor 2 that non-monotone queries need: one query can rise while the "
            "others fall, moving the winning cut by 2"
        ),
        true_guarantee=(
            "2 eps-DP (the correct scale for 2 eps), not eps-DP. At the witness pair (index 0 goes from last to first) "
            "exact H_{e^eps} = 0.238 at eps = 1, 0.0019 at eps = 0.01 (quadrature); the privacy loss of index 0 is "
            "1.64 eps at eps = 1"
        ),
        witness_pairs=(WITNESS_ONE_RISES,),
        source=_NOISY_MAX_SOURCE + "; Dwork & Roth (2014) Claim 3.9 (monotone case)",
    ),
    dict(
        factory=variant(NoisyMax, "noisy-max-value", noise="laplace", scale_factor=2.0, release="value"),
        private=False,
        summary="report noisy max that releases the noisy maximum value max_i q_i + Lap(2/eps) instead of the index; " + _NOISY_MAX_ENCODING,
        bug="releases the noisy maximum value: only the index is covered by the noisy-max analysis",
        true_guarantee=(
            "(k eps/2)-DP = 2 eps-DP at k = 4 (post-processing of k Laplace(2/eps) counts), not eps-DP for k >= 3: when "
            "all queries rise by 1 the density of the maximum shifts by 1 and changes like e^{k eps/2} in its left tail. "
            "At the witness pair H_{e^eps} = 0.083 at eps = 1, 6.3e-4 at eps = 0.01 (numerical integration)"
        ),
        witness_pairs=(WITNESS_ALL_RISE,),
        source="Ding et al. (2018), noisy-max variants; " + _NOISY_MAX_SOURCE,
    ),
)

# ---------------------------------------------------------------- exponential-mechanism median
_MEDIAN_SOURCE = "McSherry & Talwar (2007); Dwork & Roth (2014) §3.4; paper 000 §6.1 (a private median)"

_register_family(
    "exponential-mechanism median",
    {},
    dict(
        factory=ExponentialQuantile,
        claim_kind="pure",
        private=True,
        summary=(
            "median of records in [0, 1] by the exponential mechanism over 21 grid points: "
            "P(y) ∝ exp(-eps |#{x < y} - #{x > y}| / 2)"
        ),
        bug=None,
        true_guarantee=(
            "eps-DP: the rank-distance utility has sensitivity 1 under add/remove (McSherry & Talwar 2007 Thm 6; "
            "Dwork & Roth 2014 Thm 3.10); clipping records to [0, 1] is a per-record map"
        ),
        witness_pairs=(([[0.0]], [[0.0], [1.0]]), ([[0.0], [0.0], [1.0]], [[0.0], [0.0], [1.0], [1.0]])),
        source=_MEDIAN_SOURCE,
    ),
)

# ---------------------------------------------------------------- randomized response
_register_family(
    "randomized response",
    dict(claim_kind="pure", relation="replace"),
    dict(
        factory=variant(RandomizedResponse, "randomized-response"),
        private=True,
        summary="randomized response on the bits 1[x >= 1/2], flip probability 1/(1 + e^eps); releases the count of reported ones",
        bug=None,
        true_guarantee=(
            "eps-DP, tight: truthful/flipped odds e^eps (Warner 1965; Dwork & Roth 2014 §3.2); the count is "
            "post-processing (Prop. 2.1)"
        ),
        witness_pairs=(WITNESS_ONE,),
        source="Warner (1965); Dwork & Roth (2014) §3.2",
    ),
    dict(
        factory=variant(RandomizedResponse, "randomized-response-wrong-flip", flip_rule="coin"),
        private=False,
        summary=(
            "randomized response that replaces the bit by a fair coin with probability 1/(1 + e^eps), i.e. flips it "
            "with probability 1/(2 (1 + e^eps)); releases the count of reported ones"
        ),
        bug="'randomise with probability 1/(1+e^eps)' implemented as a fair coin: the flip probability is halved",
        true_guarantee=(
            "ln(1 + 2 e^eps)-DP (odds (1 - f)/f with f = 1/(2(1 + e^eps))): 1.86 at eps = 1, 1.10 at eps = 0.01. At the "
            "witness pair H_{e^eps} = 0.500 at eps = 1 and 0.500 at eps = 0.01 (exact)"
        ),
        witness_pairs=(WITNESS_ONE,),
        source="Warner (1965); Dwork & Roth (2014) §3.2",
    ),
)

# ---------------------------------------------------------------- DP-GD (paper 000 §6.5, paper 002 §5)
_DPGD_SOURCE_000 = "paper 000 (DP-Auditorium) §6.5 'ScaleGD'"
_DPGD_SOURCE_002 = "paper 002 (RényiTester) §5 'DP-SGD mechanisms'"
_DPGD_MODEL = "one DP-GD step on (theta - x)^2/2 from theta_0 = 0, records x in [-2, 2], clip G = 1; outputs theta_1"
_DPGD_ACCOUNTING = (
    " Accounting: sigma = 1/mu with delta_mu(eps) = delta (analytic Gaussian mechanism, Balle & Wang 2018 Thm 8, "
    "solved with scipy); the (eps, delta) claim is exact, not rounded up."
)

_register_family(
    "DP-GD (paper 000 §6.5, paper 002 §5)",
    dict(claim_kind="approx", domain=Domain((-RECORD_BOUND,), (RECORD_BOUND,)), default_delta=1e-5),
    dict(
        factory=DPGD,
        private=True,
        exact_arithmetic_only=True,
        summary=_DPGD_MODEL + "; per-example clipping, noise N(0, (sigma G)^2), sigma from the analytic Gaussian mechanism",
        bug=None,
        true_guarantee=(
            "mu-GDP with mu = sqrt(T)/sigma (Dong, Roth, Su 2022 Cor. 3.3), i.e. exactly (eps, delta)-DP (Balle & Wang "
            "2018 Thm 8); tight: H_{e^eps} = delta at the witness pairs." + _DPGD_ACCOUNTING
        ),
        witness_pairs=(WITNESS_OPPOSITE, WITNESS_EXTREMAL),
        source="Abadi et al. (2016); " + _DPGD_SOURCE_000 + "; " + _DPGD_SOURCE_002,
    ),
    dict(
        factory=ScaledGD,
        private=False,
        summary=_DPGD_MODEL + "; noise N(0, (sigma G / 2)^2) while the accounting assumes sigma",
        bug="the noise multiplier used is s sigma = sigma/2, the accounting assumes sigma",
        true_guarantee=(
            "(mu/s) = 2 mu-GDP (Dong, Roth, Su 2022 Cor. 2.13): at the witness pairs H_{e^eps} = delta_{2mu}(eps) = 0.0104 "
            "at eps = 1, 4.4e-4 at eps = 0.01 (delta = 1e-5; exact)." + _DPGD_ACCOUNTING
        ),
        witness_pairs=(WITNESS_OPPOSITE, WITNESS_EXTREMAL),
        source=_DPGD_SOURCE_000 + "; " + _DPGD_SOURCE_002 + " 'ScaledSGD'",
    ),
    dict(
        factory=WrongSensitivitySGD,
        private=False,
        summary=_DPGD_MODEL + "; microbatches of 2 records clipped as a whole, noise N(0, (sigma G)^2) accounted as per-example",
        bug="microbatch clipping has sensitivity 2G (one record flips its microbatch's clipped gradient from -G to +G), accounted as G",
        true_guarantee=(
            "2 mu-GDP: at the witness pair (gradients {-1} vs {-1, +2}) H_{e^eps} = 0.0104 at eps = 1, 4.4e-4 at "
            "eps = 0.01 (delta = 1e-5; exact); at the extremal pair [[2]] vs [[2], [-2]] only G, H = delta." + _DPGD_ACCOUNTING
        ),
        witness_pairs=(WITNESS_OPPOSITE,),
        source=_DPGD_SOURCE_002 + " 'WrongSensitivitySGD'; " + _DPGD_SOURCE_000,
    ),
)


# ---------------------------------------------------------------- floating point (Mironov 2012)
_FLOAT_SOURCE = "Mironov (2012), 'On significance of the least significant bits for differential privacy', CCS"
_register_family(
    "floating point (Mironov 2012)",
    {"witness_pairs": WITNESS_FLOAT},
    dict(
        factory=FloatLaplace,
        claim_kind="pure",
        private=False,
        exact_arithmetic_only=True,
        summary="sum of records in [0, 1] + textbook inverse-CDF Laplace(1/eps) computed in float64",
        bug=(
            "the set of doubles S + noise can take depends on S: near 0 the outputs of S = 1 (or 1/3) lie on "
            "the grid of S's binade, those of S = 0 have full precision (floating-point attack)"
        ),
        true_guarantee=(
            "no eps-DP guarantee for any eps (Mironov 2012, §3): at the witness pair the set 'small output, "
            "fine lowest bit' has probability about 1 - e^{-eps} under S = 0 and 0 under S = 1."
        ),
        source=_FLOAT_SOURCE + ", §3",
    ),
    dict(
        factory=FloatGaussian,
        claim_kind="approx",
        private=False,
        exact_arithmetic_only=True,
        summary="sum of records in [0, 1] + textbook Box-Muller N(0, sigma^2) in float64, sigma = sqrt(2 ln(1.25/delta))/eps",
        bug="as float-laplace: the reachable doubles of S + noise depend on S (floating-point attack)",
        true_guarantee=(
            "no (eps, delta)-DP guarantee for small delta: the set 'small output, fine lowest bit' has "
            "probability about 2/(sqrt(2 pi) sigma) under S = 0 and 0 under S = 1 (Mironov 2012, §3 argument)."
        ),
        default_delta=1e-5,
        source=_FLOAT_SOURCE + ", §3 (the Gaussian analogue)",
    ),
    dict(
        factory=SnappingLaplace,
        claim_kind="pure",
        private=True,
        summary="sum of records in [0, 1], Mironov's snapping mechanism: clamp, + Laplace via ln(U*), round to a power-of-two grid, clamp",
        bug=None,
        true_guarantee=(
            "eps-DP: Mironov 2012 Thm 1 gives (1/lambda + 2^-49 B/lambda)-DP for lambda < B < 2^46 lambda; "
            "the factory takes B = max(10, 2/eps) and lambda = (1 + 2^-49 B)/eps."
        ),
        source=_FLOAT_SOURCE + ", §5.2",
    ),
)

# ---------------------------------------------------------------- harder bugs (issue 15, item 4): not on the first pairs searched
_HARDER_SOURCE = "issue 15, item 4 ('bugs the first trials of a search do not reveal'); module harder.py"
_SUM_02 = "sum of records in [0, 2] clipped to [0, 1]: S + Laplace(1/eps)"

_register_family(
    "harder bugs: not on the first pairs searched",
    dict(claim_kind="pure", domain=Domain((0.0,), (2.0,))),
    dict(
        factory=LaplaceSum,
        private=True,
        exact_arithmetic_only=True,
        summary=_SUM_02 + " (correct counterpart of the laplace-sum-* entries)",
        bug=None,
        true_guarantee="eps-DP: clipped sum of sensitivity 1, Laplace mechanism (Dwork & Roth 2014 Thm 3.6)",
        witness_pairs=(WITNESS_FAST, WITNESS_FAST_BOTH, WITNESS_EXACT, WITNESS_CLIP),
        source=_HARDER_SOURCE + "; Dwork & Roth (2014) Thm 3.6",
    ),
    dict(
        factory=variant(LaplaceSum, "laplace-sum-fast-path", fast_path_from=FAST_PATH_FROM),
        private=False,
        summary=_SUM_02 + f"; from n = {FAST_PATH_FROM} records a 'fast path' adds Laplace(1/(n eps))",
        bug=(
            f"for n >= {FAST_PATH_FROM} the fast path reuses the mean's sensitivity 1/n for the sum: the noise is n "
            f"times too small; correct below {FAST_PATH_FROM} records, so small-dataset pairs show nothing"
        ),
        true_guarantee=(
            f"no finite pure-DP guarantee: on every pair whose larger dataset has >= {FAST_PATH_FROM} records the Laplace "
            "scales differ and the privacy loss is unbounded in the tails. H_{e^eps} at the witness pair (7 vs 8 records, "
            "Lap(0, 1/eps) vs Lap(1, 1/(8 eps))) = 0.764 at eps = 1, 0.649 at eps = 0.01; at 8 vs 9 records 0.977 at "
            "eps = 1, 0.0508 at eps = 0.01 (quadrature, harder.laplace_hockey_stick)"
        ),
        witness_pairs=(WITNESS_FAST, WITNESS_FAST_BOTH),
        source=_HARDER_SOURCE,
    ),
    dict(
        factory=variant(LaplaceSum, "laplace-sum-rare-exact", exact_probability=EXACT_PROBABILITY),
        private=False,
        summary=_SUM_02 + f"; with probability {EXACT_PROBABILITY:g} releases S exactly (no noise)",
        bug=(
            f"a fallback that skips the noise with probability {EXACT_PROBABILITY:g}: a point mass at the exact sum, "
            "which a neighbour with a different sum never produces"
        ),
        true_guarantee=(
            f"(eps, delta)-DP iff delta >= {EXACT_PROBABILITY:g}; no finite eps for smaller delta: H_{{e^eps}} = "
            f"{EXACT_PROBABILITY:g} exactly, at every eps, on every pair whose sums differ (the point mass; the continuous "
            "parts obey the Laplace bound), 0 on pairs with equal sums"
        ),
        witness_pairs=(WITNESS_EXACT,),
        source=_HARDER_SOURCE,
    ),
    dict(
        factory=variant(LaplaceSum, "laplace-sum-partial-clip", clip_first=CLIP_FIRST),
        private=False,
        summary=f"sum of records in [0, 2] + Laplace(1/eps), only the first {CLIP_FIRST} records clipped to [0, 1]",
        bug=(
            f"records at positions >= {CLIP_FIRST} enter the sum unclipped (up to 2): adding a record moves the sum by "
            f"up to 2, not 1; datasets of <= {CLIP_FIRST} records or with records in [0, 1] show nothing"
        ),
        true_guarantee=(
            "2 eps-DP, tight (Laplace mechanism at sensitivity 2: Delta in [0, 2] for every add/remove pair). At the "
            "witness pair (sum moves by 2) H_{e^eps} = 1 - e^{-eps/2} = 0.393 at eps = 1, 0.0050 at eps = 0.01 (exact)"
        ),
        witness_pairs=(WITNESS_CLIP,),
        source=_HARDER_SOURCE,
    ),
    dict(
        factory=ExponentialQuantileCandidates,
        domain=Domain.unit(1),
        private=False,
        summary=(
            "median of records in [0, 1] by the exponential mechanism, P(y) ∝ exp(-eps |#{x < y} - #{x > y}| / 2), "
            "over 21 grid points and the records' own values"
        ),
        bug=(
            "the candidate set includes the data values: a record off the grid is a possible output only of the "
            "datasets holding it (datasets of grid points, e.g. 0s and 1s, give exactly dp-median's law)"
        ),
        true_guarantee=(
            "no finite pure-DP guarantee (and none with delta below that output's probability): H_{e^eps}(D1 || D0) >= "
            "P_D1(x) for a record x off the grid and absent from D0. Exact (discrete) H_{e^eps} at the witness pair "
            "[0.35, 0.4] vs [0.35, 0.37, 0.4]: 0.167 at eps = 1, 0.0461 at eps = 0.01; at [] vs [0.37]: 0.0728 and 0.0457. "
            "Correct counterpart: dp-median"
        ),
        witness_pairs=(WITNESS_OFF_GRID, WITNESS_OFF_GRID_EMPTY),
        source=_HARDER_SOURCE + "; McSherry & Talwar (2007) (the range must not depend on the data)",
    ),
)

# ---------------------------------------------------------------- corners (issue 15): the empty dataset, Rényi claims
_register_family(
    "corners: the empty dataset, Rényi claims",
    {},
    dict(
        factory=NoisySumEmptyShortcut,
        claim_kind="pure",
        private=False,
        summary="sum of records in [0, 1]: S + Laplace(1/eps), but exactly 0 (no noise) on the empty dataset",
        bug="an early return for the empty dataset releases 0 without noise: a point mass no neighbour [x] can produce",
        true_guarantee=(
            "none: H_{e^eps}([] || [x]) = 1 at every eps (point mass at 0 vs a continuous law); eps-DP on every "
            "pair of non-empty neighbours (Laplace mechanism, Dwork & Roth 2014 Thm 3.6). Invisible to an audit "
            "whose datasets start at one record"
        ),
        witness_pairs=(WITNESS_EMPTY,),
        source="issue 15 ('the empty dataset'); a common shortcut in hand-written DP code",
    ),
    dict(
        factory=variant(RDPGaussianSum, "rdp-gaussian", calibration="rdp"),
        claim_kind="renyi",
        default_alpha=2.0,
        private=True,
        exact_arithmetic_only=True,
        summary="sum of records in [0, 1]: S + N(0, sigma^2), sigma^2 = alpha/(2 eps); claims (alpha, eps)-RDP",
        bug=None,
        true_guarantee="(alpha, eps)-RDP, tight: the Gaussian mechanism has R_alpha = alpha Delta^2/(2 sigma^2) (Mironov 2017, Prop. 7)",
        witness_pairs=(WITNESS_SUM_ONE,),
        source="Mironov (2017), 'Rényi Differential Privacy', Prop. 7",
    ),
    dict(
        factory=variant(RDPGaussianSum, "rdp-gaussian-conversion-calibrated", calibration="conversion"),
        claim_kind="renyi",
        default_alpha=2.0,
        private=False,
        summary=(
            "sum of records in [0, 1]: S + N(0, sigma^2), sigma the smallest noise whose (eps', delta') profile stays "
            "below the RDP claim's conversion (x1.01); claims (alpha, eps)-RDP"
        ),
        bug=(
            "sigma calibrated against the (eps', delta') curve the RDP claim converts to, not against the RDP claim: "
            "sigma = 0.771 instead of 1 at (alpha, eps) = (2, 1)"
        ),
        true_guarantee=(
            "(alpha, alpha/(2 sigma^2))-RDP (Mironov 2017, Prop. 7): 1.68 eps at (2, 1), 2.07 eps at (2, 0.5), 1.33 eps "
            "at (4, 1); every (eps', delta') guarantee the claim implies (Canonne, Kamath, Steinke 2020, Prop. 12) holds, "
            "so only a Rényi test can flag it"
        ),
        witness_pairs=(WITNESS_SUM_ONE,),
        source="issue 15 ('Rényi claims'); Mironov (2017) Prop. 7",
    ),
)


# ---------------------------------------------------------------- DP-Sniper's suite (Bichsel et al., S&P 2021)
# DP-Sniper's twenty mechanisms with its parameters and input pairs (module :mod:`.dpsniper`, which
# derives the numbers quoted here and holds DP-Sniper's published lower bounds, DPSNIPER_REFERENCE).
# DP-Sniper claims eps = 0.1 for all; query-answer vectors are column sums of records in [0, 1]^k
# under replace-one (each answer moves by <= 1, either way).
_DPS = "Bichsel, Steffen, Bogunovic, Vechev (2021), DP-Sniper, S&P, §VI; eth-sri/dp-sniper "
_DPS_PAIRS = "; witness pairs: DP-Sniper's selected input pairs (reference runs, logistic regression then MLP)"
_DPS_FAMILY = "DP-Sniper's suite (Bichsel et al., S&P 2021)"
_DPS_SVT = "10 column-sum queries over records in [0, 1]^10, cut-off c = 1"
_register_family(
    _DPS_FAMILY,
    dict(claim_kind="pure", relation="replace", domain=Domain.unit(1)),
    dict(
        factory=variant(_dps.LaplaceVector, "dpsniper-laplace"),
        private=True,
        exact_arithmetic_only=True,
        summary="DP-Sniper's LaplaceMechanism: a + Lap(1/eps), a = sum of records in [0, 1]",
        bug=None,
        true_guarantee="eps-DP, tight (Laplace mechanism, Dwork & Roth 2014 Thm 3.6)",
        witness_pairs=_dps.WITNESS_LAPLACE,
        source=_DPS + "dpsniper/mechanisms/laplace.py" + _DPS_PAIRS + " (a = 1 vs 2, 0 vs 1)",
    ),
    dict(
        factory=variant(_dps.LaplaceVector, "dpsniper-laplace-parallel", copies=_dps.PARALLEL_COPIES),
        private=True,
        exact_arithmetic_only=True,
        summary="DP-Sniper's LaplaceParallel: 20 independent releases a + Lap(20/eps) (each at eps/20), a = sum of records in [0, 1]",
        bug=None,
        true_guarantee="eps-DP, tight: 20 Laplace releases at eps/20, basic composition (Dwork & Roth 2014 Thm 3.16)",
        witness_pairs=_dps.WITNESS_LAPLACE_PARALLEL,
        source=_DPS + "dpsniper/mechanisms/parallel.py (run with eps = 0.005, 20 copies)" + _DPS_PAIRS + " (a = 1 vs 0)",
    ),
    dict(
        factory=_dps.GeoSample,
        private=False,
        summary=(
            "DP-Sniper's TruncatedGeometricMechanism: GeoSample (Balcer & Vadhan 2018 Alg. 4.8), count c of records >= 1/2 "
            "(at most n = 5) + two-sided geometric noise clamped to [0, 5], K = ceil(ln(2/eps))"
        ),
        bug="K = ceil(ln(2/eps)) uses the natural log: the noise parameter 2^-K can exceed what eps allows",
        true_guarantee=(
            "ln(1 + 2^-K)-DP, tight (Balcer & Vadhan 2018 Thm 4.7): 0.1178 at eps = 0.1 (K = 3), 0.405 at eps = 1. It "
            "violates eps-DP exactly for eps in (0, 0.0308) U [0.0366, 0.0606) U [0.0996, 0.1178); violates_for is the hull"
        ),
        witness_pairs=_dps.WITNESS_TRUNC_GEOM,
        max_size=_dps.TRUNC_GEOM_N,
        source=_DPS + "dpsniper/mechanisms/geometric.py" + _DPS_PAIRS + " (c = 2 vs 1)",
        # The violation set is three intervals below 0.1178 (see true_guarantee); ZooEntry holds one.
        violates_for=(0.0, 0.1178),
    ),
    dict(
        factory=variant(_dps.Rappor, "dpsniper-rappor"),
        private=False,
        domain=Domain((float(_dps.RAPPOR_DOMAIN[0]),), (float(_dps.RAPPOR_DOMAIN[1]),)),
        max_size=1,
        summary=(
            "DP-Sniper's Rappor (Erlingsson et al. 2014 steps 1-3) of one client value in [-10, 10]: Bloom filter "
            "m = 20, h = 4 (MurmurHash3), f = 0.75, p = 0.45, q = 0.55; parameters fixed, eps only sets the claim"
        ),
        bug="the parameters do not depend on eps: the report is 0.4001-DP whatever eps is claimed",
        true_guarantee=(
            "8 ln(0.5125/0.4875) = 0.4001-DP over values in [-10, 10] (filters differing in 8 bits; Erlingsson et al. "
            "2014 Thm 2); 0.3001 at the witness pair (6 differing bits)"
        ),
        witness_pairs=_dps.WITNESS_RAPPOR,
        source=_DPS + "dpsniper/mechanisms/rappor.py" + _DPS_PAIRS + " (value 1 vs 0)",
        violates_for=(0.0, 0.4001),
    ),
    dict(
        factory=variant(_dps.Rappor, "dpsniper-one-time-rappor", f=_dps.ONE_TIME_RAPPOR_F, p=None, q=None),
        private=False,
        domain=Domain((float(_dps.RAPPOR_DOMAIN[0]),), (float(_dps.RAPPOR_DOMAIN[1]),)),
        max_size=1,
        summary=(
            "DP-Sniper's OneTimeRappor (Erlingsson et al. 2014 steps 1-2) of one client value in [-10, 10]: Bloom filter "
            "m = 20, h = 4, permanent randomized response f = 0.95; parameters fixed, eps only sets the claim"
        ),
        bug="the parameters do not depend on eps: the report is 0.8007-DP whatever eps is claimed",
        true_guarantee=(
            "8 ln(0.525/0.475) = 0.8007-DP over values in [-10, 10] (Erlingsson et al. 2014 §3, eps_inf = 2h ln((1 - f/2)/(f/2))); "
            "0.6005 at the witness pair (6 differing bits)"
        ),
        witness_pairs=_dps.WITNESS_RAPPOR,
        source=_DPS + "dpsniper/mechanisms/rappor.py" + _DPS_PAIRS + " (value 1 vs 0)",
        violates_for=(0.0, 0.8007),
    ),
)
_register_family(
    _DPS_FAMILY,
    dict(claim_kind="pure", relation="add-remove", domain=Domain((0.0,), (float(_dps.HIST_BINS - 1),))),
    dict(
        factory=_dps.NoisyHistogram,
        private=True,
        exact_arithmetic_only=True,
        summary="DP-Sniper's NoisyHist1 (Ding et al. 2018 Alg. 9): histogram of 5 bins (record x in bin round(x)) + Lap(1/eps) per bin",
        bug=None,
        true_guarantee="eps-DP, tight: one record moves one bin by 1 (Laplace mechanism, Dwork & Roth 2014 Thm 3.6)",
        witness_pairs=_dps.WITNESS_HIST1,
        source=_DPS + "dpsniper/mechanisms/noisy_hist.py" + _DPS_PAIRS + " (histograms (0,1,1,1,1) vs (1,1,1,1,1))",
    ),
    dict(
        factory=variant(_dps.NoisyHistogram, "dpsniper-noisy-hist2", scale="eps"),
        private=False,
        summary="DP-Sniper's NoisyHist2 (Ding et al. 2018 Alg. 10): histogram of 5 bins + Lap(eps) per bin (scale eps, not 1/eps)",
        bug="the noise scale is eps instead of 1/eps",
        true_guarantee="(1/eps)-DP, tight: 10 at eps = 0.1; meets an eps claim only for eps >= 1",
        witness_pairs=_dps.WITNESS_HIST2,
        source=_DPS + "dpsniper/mechanisms/noisy_hist.py" + _DPS_PAIRS + " ((0,1,1,1,1) vs (1,1,1,1,1), (1,1,1,1,1) vs (2,1,1,1,1))",
        violates_for=(0.0, 1.0),
    ),
)
_register_family(
    _DPS_FAMILY,
    dict(claim_kind="pure", relation="replace", domain=Domain.unit(_dps.RNM_QUERIES)),
    dict(
        factory=variant(_dps.DPSniperNoisyMax, "dpsniper-rnm1"),
        private=True,
        summary="DP-Sniper's ReportNoisyMax1 (Ding et al. 2018 Alg. 5): argmax a_i + Lap(2/eps), 5 column sums over [0, 1]^5",
        bug=None,
        true_guarantee="eps-DP for queries of sensitivity 1, monotone or not (Dwork & Roth 2014, Claim 3.9's argument with gap 2)",
        witness_pairs=_dps.WITNESS_RNM12,
        source=_DPS + "dpsniper/mechanisms/report_noisy_max.py" + _DPS_PAIRS + " (a = (1,1,1,1,1) vs (0,2,2,2,2))",
    ),
    dict(
        factory=variant(_dps.DPSniperNoisyMax, "dpsniper-rnm2", noise="exponential"),
        private=True,
        summary="DP-Sniper's ReportNoisyMax2 (Ding et al. 2018 Alg. 6): argmax a_i + Exp(2/eps), 5 column sums over [0, 1]^5",
        bug=None,
        true_guarantee=(
            "eps-DP: report noisy max with exponential noise is the permute-and-flip mechanism (Ding, Kifer, Saghafi, Steinke, "
            "Zhang 2021, Thm 1; McKenna & Sheldon 2020)"
        ),
        witness_pairs=_dps.WITNESS_RNM12,
        source=_DPS + "dpsniper/mechanisms/report_noisy_max.py" + _DPS_PAIRS + " (a = (1,1,1,1,1) vs (0,2,2,2,2))",
    ),
    dict(
        factory=variant(_dps.DPSniperNoisyMax, "dpsniper-rnm3", release="value"),
        private=False,
        summary="DP-Sniper's ReportNoisyMax3 (Ding et al. 2018 Alg. 7): releases the value max_i a_i + Lap(2/eps), 5 column sums",
        bug="releases the noisy maximum value, not its index",
        true_guarantee=(
            "(k eps/2) = 2.5 eps-DP, tight: each of the k = 5 Laplace CDF/density factors of the max's density moves by "
            "<= e^{eps/2}, and in the left tail all k do (derived)"
        ),
        witness_pairs=_dps.WITNESS_RNM3,
        source=_DPS + "dpsniper/mechanisms/report_noisy_max.py" + _DPS_PAIRS + " (a = 0s vs 1s, 1s vs 2s)",
    ),
    dict(
        factory=variant(_dps.DPSniperNoisyMax, "dpsniper-rnm4", noise="exponential", release="value"),
        private=False,
        summary="DP-Sniper's ReportNoisyMax4 (Ding et al. 2018 Alg. 8): releases the value max_i a_i + Exp(2/eps), 5 column sums",
        bug="releases the noisy maximum value; exponential noise is one-sided, so the value is >= max_i a_i",
        true_guarantee=(
            "none: at the witness pair values in [1, 2) have probability (1 - e^{-eps/2})^5 > 0 on a = 1s and 0 on a = 2s "
            "(2.8e-7 at eps = 0.1, far below what a sample of millions sees)"
        ),
        witness_pairs=_dps.WITNESS_RNM4,
        source=_DPS + "dpsniper/mechanisms/report_noisy_max.py" + _DPS_PAIRS + " (a = 1s vs 2s)",
    ),
)
_register_family(
    _DPS_FAMILY,
    dict(claim_kind="pure", relation="replace", domain=Domain.unit(_dps.SVT_QUERIES)),
    dict(
        factory=_dps.DPSniperSVT1,
        private=True,
        summary="DP-Sniper's SVT1 (Lyu et al. Alg. 1): answers 1/0, threshold Lap(2/eps), queries Lap(4c/eps), T = 0.5; " + _DPS_SVT,
        bug=None,
        true_guarantee="eps-DP for queries of sensitivity 1, monotone or not (Lyu, Su, Li 2017, §3)",
        witness_pairs=_dps.WITNESS_SVT1,
        source=_DPS + "sparse_vector_technique.py" + _DPS_PAIRS + " (X shape; 1s vs (2,2,2,2,2,0,0,0,0,0))",
    ),
    dict(
        factory=_dps.DPSniperSVT2,
        private=True,
        summary="DP-Sniper's SVT2 (Lyu et al. Alg. 2): threshold Lap(2c/eps) redrawn after each 'above', queries Lap(4c/eps), T = 1; " + _DPS_SVT,
        bug=None,
        true_guarantee="eps-DP: c AboveThreshold runs at eps/c, composed (Dwork & Roth 2014 §3.6)",
        witness_pairs=_dps.WITNESS_SVT2,
        source=_DPS + "sparse_vector_technique.py" + _DPS_PAIRS + " (X shape)",
    ),
    dict(
        factory=_dps.DPSniperSVT3,
        private=False,
        summary="DP-Sniper's SVT3 (Lyu et al. Alg. 3): releases q_i + nu_i when above, threshold Lap(2/eps), queries Lap(2c/eps), T = 1; " + _DPS_SVT,
        bug="the released noisy value reveals the threshold noise, so the 'below' answers are not paid for",
        true_guarantee=(
            "unknown in closed form; at most (k/2) eps = 5 eps for k = 10 (derived: given the threshold noise each answered "
            "query's factor moves by <= e^{eps/2}); DP-Sniper's 0.172 at eps = 0.1 is a lower bound"
        ),
        witness_pairs=_dps.WITNESS_SVT3,
        source=_DPS + "sparse_vector_technique.py" + _DPS_PAIRS + " (1s vs (2,2,2,2,2,0,0,0,0,0); X shape)",
    ),
    dict(
        factory=_dps.DPSniperSVT4,
        private=False,
        summary="DP-Sniper's SVT4 (Lyu et al. Alg. 4): threshold Lap(4/eps), queries Lap(4/(3 eps)), T = 1; " + _DPS_SVT,
        bug="the query noise is not scaled by the cut-off and is too small for non-monotone queries",
        true_guarantee="((1 + 6c)/4) eps = 1.75 eps-DP at c = 1 (Lyu, Su, Li 2017, §4 and Fig. 1)",
        witness_pairs=_dps.WITNESS_SVT4,
        source=_DPS + "sparse_vector_technique.py" + _DPS_PAIRS + " (1s vs (2,2,2,2,2,0,0,0,0,0))",
    ),
    dict(
        factory=_dps.DPSniperSVT5,
        private=False,
        summary="DP-Sniper's SVT5 (Lyu et al. Alg. 5): answers 1/0, threshold Lap(2/eps), no query noise, no cut-off, T = 1; 10 column sums",
        bug="no query noise: the answers are a deterministic function of the noisy threshold",
        true_guarantee=(
            "none: at the witness pair the pattern (1,1,1,1,1,0,0,0,0,0) has probability P(-1 < rho <= 1) = "
            "1 - e^{-eps/2} on the first dataset and 0 on the second (Lyu, Su, Li 2017, Fig. 1)"
        ),
        witness_pairs=_dps.WITNESS_SVT5,
        source=_DPS + "sparse_vector_technique.py" + _DPS_PAIRS + " ((2,2,2,2,2,0,0,0,0,0) vs 1s; (0,2,...,2) vs 1s)",
    ),
    dict(
        factory=_dps.DPSniperSVT6,
        private=False,
        summary="DP-Sniper's SVT6 (Lyu et al. Alg. 6): answers 1/0, threshold Lap(2/eps), queries Lap(2/eps), no cut-off, T = 1; 10 column sums",
        bug="no cut-off: the threshold noise does not cover answers to queries moving in opposite directions",
        true_guarantee=(
            "unknown in closed form; at most (k/2) eps = 5 eps for k = 10 (derived as for dpsniper-svt3); not eps'-DP for "
            "any eps' over unbounded streams (Lyu, Su, Li 2017, Fig. 1)"
        ),
        witness_pairs=_dps.WITNESS_SVT6,
        source=_DPS + "sparse_vector_technique.py" + _DPS_PAIRS + " (X shape)",
    ),
    dict(
        factory=_dps.SVT34Parallel,
        private=False,
        summary=(
            "DP-Sniper's SVT34Parallel: SVT3 and SVT4 (c = 2, T = 1), each at eps, on the same 10 column sums; outputs "
            "side by side (30 columns)"
        ),
        bug="two mechanisms each spending eps on the same input, claimed eps together (and each is buggy)",
        true_guarantee=(
            "unknown in closed form; at most 5.75 eps (derived: SVT4 with c = 2 is 3.25 eps-DP, Lyu et al. 2017 §4; SVT3 "
            "with c = 2 at most (k/4) eps = 2.5 eps; basic composition)"
        ),
        witness_pairs=_dps.WITNESS_SVT34,
        source=_DPS + "dpsniper/mechanisms/parallel.py" + _DPS_PAIRS + " (1s vs (2,2,2,2,2,0,0,0,0,0))",
    ),
    dict(
        factory=variant(_dps.LaplaceVector, "dpsniper-prefix-sum", num_queries=_dps.SVT_QUERIES, prefix_sums=True),
        private=False,
        summary="DP-Sniper's PrefixSum (Wang et al. 2019): prefix sums of a_i + Lap(1/eps), 10 column sums over [0, 1]^10",
        bug="each query gets Lap(1/eps) although all 10 may move together: the vector has L1 sensitivity 10",
        true_guarantee="k eps = 10 eps-DP, tight (Laplace mechanism with L1 sensitivity 10; prefix sums are an invertible post-processing)",
        witness_pairs=_dps.WITNESS_PREFIX_SUM,
        source=_DPS + "dpsniper/mechanisms/prefix_sum.py" + _DPS_PAIRS + " (1s vs 0s)",
    ),
    dict(
        factory=_dps.NumericalSVT,
        private=True,
        exact_arithmetic_only=True,
        summary=(
            "DP-Sniper's NumericalSVT (Wang et al. 2019): threshold Lap(3/eps), comparisons Lap(6c/eps), released answers "
            "Lap(3c/eps), c = 2, T = 1; 10 codes + 10 values"
        ),
        bug=None,
        true_guarantee="eps-DP: eps/3 each for the threshold, the comparisons and the c released answers (Wang et al. 2019; Dwork & Roth 2014 §3.6)",
        witness_pairs=_dps.WITNESS_NUMERICAL_SVT,
        source=_DPS + "sparse_vector_technique.py" + _DPS_PAIRS + " (2s vs 1s; X shape)",
    ),
)

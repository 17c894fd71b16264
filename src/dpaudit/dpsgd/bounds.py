"""The DP-SGD accountant's claim as a trade-off function, for one-run audits against it.

An accountant for DP-SGD (noise multiplier ``sigma``, Poisson rate ``q``, ``T`` steps) certifies
more than one ``(eps, delta)``: the whole trade-off function ``f_sigma`` of the
Poisson-subsampled Gaussian composed ``T`` times, for an adversary who sees every step. This
module gives the family ``{f_s : s > 0}`` of such claims (the accountant at noise multiplier
``s``, the same ``q`` and ``T``) in the form :mod:`dpaudit.scores.one_run_claim` tests:

* ``q = 1``: exactly ``sqrt(T) / s``-Gaussian DP (the composition of ``T`` Gaussian mechanisms of
  sensitivity 1 and noise ``s``), :class:`~dpaudit.scores.one_run_claim.GaussianDPFamily`;
* ``q < 1``: the trade-off function of the privacy profile ``delta_s(eps)`` of dp_accounting's
  *pessimistic* PLD (an upper bound on the profile in both neighbouring directions, round-off
  charged), read at ``eps = 0, 0.01, ..., 30`` (:func:`dpsgd_profile`), through
  :func:`~dpaudit.scores.one_run_claim.profile_inverse_tradeoff`: a pointwise lower bound on
  ``f_s``, the safe side. The epsilon reported for ``s`` is the *optimistic* PLD's (a lower
  estimate), the safe side for a lower bound.

It also predicts how many runs the many-run harness needs to certify a leak the one-run
estimates only suspect (:func:`many_run_size`).

References: Abadi et al. (2016) (DP-SGD); Dong, Roth, Su (2022) (f-DP, Gaussian DP, Prop. 2.12);
Koskela, Jälkö, Honkela (2020) and dp_accounting (PLD accounting); Mahloujifar, Melis, Chaudhuri
(2025) (the one-run f-DP test); ``docs/scores.md`` §6d.
"""

from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["PROFILE_EPSILONS", "SUSPECT_Z", "dpsgd_family", "dpsgd_profile", "fit_p_value", "many_run_size",
           "suspect_assessment"]

#: The epsilons (nats) at which the claimed profile is read (0 to 30 in steps of 0.01).
PROFILE_EPSILONS = np.linspace(0.0, 30.0, 3001)
#: PLD loss grid (nats) of the claimed profile; coarsened (pessimistically) when the composed PLD
#: would pass :data:`PROFILE_MAX_POINTS` points.
PROFILE_INTERVAL = 3e-3
PROFILE_MAX_POINTS = 2 ** 21
#: dp_accounting truncates each Gaussian at tail mass 1e-15: about 8 standard deviations each
#: side; the prediction of the loss range uses 8.5.
_TAIL_SD = 8.5


def _gaussian_loss_range(sigma: float, q: float) -> float:
    """Width (nats) of the per-step privacy-loss support of the Poisson-subsampled Gaussian with
    noise multiplier ``sigma`` and rate ``q`` as dp_accounting discretises it (observations within
    :data:`_TAIL_SD` standard deviations of either mean): for ``q = 1`` ``(1 + 2 k sigma) /
    sigma^2``, for ``q < 1`` ``log(1 - q + q e^{a}) - log(1 - q + q e^{-a})`` with ``a = (1/2 +
    k sigma) / sigma^2`` (the larger of the two directions, which mirror each other)."""
    a = (0.5 + _TAIL_SD * sigma) / sigma ** 2
    if q >= 1.0:
        return 2.0 * a
    lq, l1q = math.log(q), math.log1p(-q)
    return float(np.logaddexp(l1q, lq + a) - np.logaddexp(l1q, lq - a))


def _interval(sigma: float, q: float, steps: int) -> float:
    """:data:`PROFILE_INTERVAL`, coarsened so that the composed PLD spans at most
    :data:`PROFILE_MAX_POINTS` points (and one step at most 2**14)."""
    width = _gaussian_loss_range(sigma, q)
    return max(PROFILE_INTERVAL, steps * width / PROFILE_MAX_POINTS, width / 2 ** 14)


@functools.lru_cache(maxsize=512)
def _profile_cached(sigma: float, q: float, steps: int) -> np.ndarray:
    from ..accounting import Composition
    from ..accounting._pld import build_pld, pmf_parts

    eps = PROFILE_EPSILONS
    out = np.zeros(eps.size)
    pld = build_pld(Composition.dpsgd(sigma, q, steps), _interval(sigma, q, steps), pessimistic=True)
    for losses, probs, inf_mass in pmf_parts(pld):
        neg = probs[probs < 0]
        noise = float(-neg.min()) if neg.size else 0.0  # FFT round-off, charged once per bin above eps
        p = np.maximum(probs, 0.0)
        s1 = np.concatenate([np.cumsum(p[::-1])[::-1], [0.0]])  # sum of p over losses > eps
        # sum of p e^{-l} over losses > eps >= 0 (losses <= 0 never enter a used suffix: clipped)
        with np.errstate(under="ignore"):
            s2 = np.concatenate([np.cumsum((p * np.exp(-np.maximum(losses, 0.0)))[::-1])[::-1], [0.0]])
        idx = np.searchsorted(losses, eps, side="right")
        d = inf_mass + s1[idx] - np.exp(eps) * s2[idx] + noise * (losses.size - idx)
        out = np.maximum(out, np.clip(d, 0.0, 1.0))
    out.setflags(write=False)
    return out


def dpsgd_profile(sigma: float, q: float, steps: int, epsilons=None) -> np.ndarray:
    """Upper bounds on the privacy profile ``delta(eps)`` of DP-SGD (both neighbouring
    directions, the larger), from dp_accounting's pessimistic PLD.

    Parameters
    ----------
    sigma : float
        Noise multiplier ``> 0``.
    q : float
        Poisson rate in (0, 1].
    steps : int
        ``T >= 1``.
    epsilons : array, optional
        Where to read the profile; default :data:`PROFILE_EPSILONS` (then cached per
        ``(sigma, q, steps)``). Other grids are read off the same PLD at the nearest grid point
        below (the profile decreases, so that is an upper bound too).

    Returns
    -------
    ndarray
        ``delta(eps)`` upper bounds in ``[0, 1]``.

    Raises
    ------
    ValueError
        On a non-positive sigma, a rate outside (0, 1] or steps < 1.
    """
    from .._validate import check_int, check_positive, check_rate

    sigma = check_positive(sigma, "sigma")
    q = check_rate(q, "q")
    steps = check_int(steps, "steps", 1)
    prof = _profile_cached(float(sigma), float(q), int(steps))
    if epsilons is None:
        return prof
    e = np.asarray(epsilons, dtype=float)
    idx = np.clip(np.searchsorted(PROFILE_EPSILONS, e, side="right") - 1, 0, PROFILE_EPSILONS.size - 1)
    return np.where(e < 0, 1.0, prof[idx])


#: Relative accuracy of the lower estimate of a claim's epsilon (:func:`_optimistic_epsilon`).
EPSILON_RELATIVE_ERROR = 0.02


@functools.lru_cache(maxsize=1024)
def _optimistic_epsilon(sigma: float, q: float, steps: int, delta: float) -> float:
    """A lower estimate of DP-SGD's epsilon at ``delta``: dp_accounting's optimistic PLD (privacy
    buckets, every loss rounded down to the grid), on a grid of ``EPSILON_RELATIVE_ERROR x eps /
    steps`` nats (``eps`` the pessimistic profile's crossing), so that its rounding, at most one
    grid step per step, costs at most about 2 % of epsilon; at most :data:`PROFILE_MAX_POINTS`
    points in the composition (coarser, and lower, beyond)."""
    from dp_accounting.pld import privacy_loss_distribution as pldm

    prof = _profile_cached(sigma, q, steps)
    above = np.flatnonzero(prof > delta)
    eps_hi = float(PROFILE_EPSILONS[min(above[-1] + 1, PROFILE_EPSILONS.size - 1)]) if above.size else 0.0
    if eps_hi <= 0.0:
        return 0.0
    width = _gaussian_loss_range(sigma, q)
    interval = max(EPSILON_RELATIVE_ERROR * eps_hi / steps, 1e-6, steps * width / PROFILE_MAX_POINTS, width / 2 ** 14)
    pld = pldm.from_gaussian_mechanism(sigma, sampling_prob=q, pessimistic_estimate=False,
                                       value_discretization_interval=interval, use_connect_dots=False)
    pld = pld.self_compose(steps) if steps > 1 else pld
    return max(0.0, min(float(pld.get_epsilon_for_delta(delta)), eps_hi))


@functools.lru_cache(maxsize=64)
def dpsgd_family(q: float, steps: int):
    """The accountant's claims at every noise multiplier ``s`` (``q`` and ``steps`` fixed).

    Parameters
    ----------
    q : float
        Poisson rate in (0, 1].
    steps : int
        ``T >= 1``.

    Returns
    -------
    TradeoffFamily
        ``q = 1``: ``GaussianDPFamily(sqrt(T))`` (exact). ``q < 1``: a
        :class:`~dpaudit.scores.one_run_claim.ProfileFamily` of :func:`dpsgd_profile` (the
        trade-off function a lower bound, the epsilon the optimistic PLD's: both on the safe
        side). Cached per ``(q, steps)``, with the PLDs of the parameters it visits.

    Raises
    ------
    ValueError
        On a rate outside (0, 1] or steps < 1.
    """
    from .._validate import check_int, check_rate
    from ..scores.one_run_claim import GaussianDPFamily, ProfileFamily

    q = float(check_rate(q, "q"))
    steps = int(check_int(steps, "steps", 1))
    if q >= 1.0:
        return GaussianDPFamily(math.sqrt(steps))
    return ProfileFamily(lambda s, eps: dpsgd_profile(s, q, steps, eps if eps is not PROFILE_EPSILONS else None),
                         lambda s, delta: _optimistic_epsilon(float(s), q, steps, float(delta)),
                         epsilons=PROFILE_EPSILONS, parameter="noise multiplier")


def many_run_size(sigma_fit: float, config, *, accountant_epsilon: float, delta: float, beta: float, score,
                  sizes=None, replicates: int = 3, seed: int = 0, max_draws: float = 4e7) -> dict:
    """How many runs the many-run harness needs to certify that a fitted mechanism breaks the claim.

    The harness's white-box view (:func:`dpaudit.dpsgd.audit_user_code`, ``beta`` split over its
    two default views) observes the canary's coordinate at every step in units where a correct
    step's noise has standard deviation ``sigma`` (the claimed one), scores each run with the
    claimed mechanism's likelihood ratio and certifies from ``R/2`` runs with and ``R/2`` without
    the canary by the whole-sample Clopper–Pearson audit; it flags the code when the epsilon
    bound at ``delta`` passes the accountant's or its privacy-profile check (``eps' = 0, eps/4,
    eps/2``) passes the accountant's ``delta(eps')``. Here the runs are *simulated* from the
    fitted per-step mechanism (signal ``sigma / sigma_fit`` per participating step, noise
    ``N(0, sigma^2)``, participation Poisson at the claimed ``q``), the same decision is taken,
    and the smallest ``R`` of ``sizes`` at which the median of ``replicates`` simulations is
    flagged is returned. An estimate (the fit has no confidence statement), labelled so.

    Parameters
    ----------
    sigma_fit : float
        The fitted noise multiplier (``> 0``), smaller than the claimed one for a leak.
    config : DPSGDConfig
        The claim (noise multiplier, ``q``, steps).
    accountant_epsilon : float
        The accountant's epsilon at ``delta`` for the claim.
    delta, beta : float
        As the harness's audit (``beta`` overall, halved for the white-box view).
    score : callable
        ``(observations (T, n), sigma, q) -> scores (n,)``, the harness's white-box score
        (:func:`dpaudit.dpsgd.canary_scores` with ``kind="lr"``).
    sizes : sequence of int, optional
        Candidate run counts (default 200, 500, 1,000, 2,000, 5,000, ..., 10^6).
    replicates : int
        Simulations per size (the median decides).
    seed : int
    max_draws : float
        Largest ``R x T`` simulated; larger sizes are not tried (``runs`` is then ``None``).

    Returns
    -------
    dict
        ``runs`` (int, or ``None`` when no tried size suffices), ``tried`` (the largest size
        tried), ``view`` (``"white_box"``), ``method`` (text).

    Raises
    ------
    ValueError
        On a non-positive ``sigma_fit``.
    """
    from ..accounting import Composition, get_delta
    from ..scores import clopper_pearson_audit

    sigma_fit = float(sigma_fit)
    if not (sigma_fit > 0 and math.isfinite(sigma_fit)):
        raise ValueError(f"sigma_fit must be a positive number, got {sigma_fit!r}")
    if sizes is None:
        sizes = [200, 500] + [int(b * 10 ** e) for e in range(3, 6) for b in (1, 2, 5)] + [1_000_000]
    sigma, q, T = float(config.noise_multiplier), float(config.sampling_rate), int(config.steps)
    acc = float(accountant_epsilon)
    grid = np.array([0.0, acc / 4, acc / 2])
    comp = Composition.dpsgd(sigma, q, T)
    acc_delta = np.array([float(get_delta(comp, float(e)).delta) for e in grid])
    level = beta / 2.0
    signal = sigma / sigma_fit
    tried = 0
    method = f"median of {int(replicates)} simulations of the fitted per-step mechanism at each size"
    for R in sizes:
        if R * T > max_draws:
            break
        tried = n = int(R) // 2
        tried = int(R)
        flagged = 0
        for r in range(int(replicates)):
            rng = np.random.default_rng([int(seed), int(R), r])
            out = []
            for included in (True, False):
                part = (rng.random((T, n)) < q) if included else np.zeros((T, n), dtype=bool)
                out.append(score(signal * part + sigma * rng.standard_normal((T, n)), sigma, q))
            au = clopper_pearson_audit(out[0], out[1], confidence=1 - level, alternative="greater")
            hit = au.epsilon_lower_bound(delta) > acc or bool(np.any(au.delta_lower_bound(grid) > acc_delta))
            flagged += bool(hit)
        if 2 * flagged > int(replicates):
            return {"runs": int(R), "tried": int(R), "view": "white_box", "method": method}
    return {"runs": None, "tried": int(tried), "view": "white_box", "method": method}


#: The "suspect" outcome's stated false-flag rate is ``Phi(-SUSPECT_Z)`` (about 0.13 %): a correct
#: run (the claimed Gaussian law, or more noise) is flagged at most that often
#: (:func:`fit_p_value`, :func:`suspect_assessment`).
SUSPECT_Z = 3.0

#: Truncation of the chi-square integral in :func:`fit_p_value` (each tail); the truncated mass is
#: added to the p-value (the safe side).
_FIT_TAIL = 1e-13


def _fit_relative_se(fit: dict, n_signal: int, n_noise: int) -> float:
    """Relative standard error of the fitted noise multiplier ``noise / signal`` (delta method):
    ``signal`` is a difference of two means (``n_signal`` and ``n_noise`` observations of standard
    deviation ``noise``), ``noise`` a standard deviation of ``n_noise`` observations, so
    ``se^2 ~ (noise / signal)^2 (1 / n_signal + 1 / n_noise) + 1 / (2 n_noise)``. Reported for
    orientation only: the decision uses the exact :func:`fit_p_value` (this normal approximation
    under-states the lower tail: at ``q = 1``, 10 steps, 10,000 canaries its "3 standard errors"
    are passed by 0.25 % of correct runs, not 0.13 %)."""
    ratio = float(fit.get("noise_multiplier", math.nan))
    if not (math.isfinite(ratio) and n_signal > 0 and n_noise > 1):
        return math.nan
    return math.sqrt(ratio ** 2 * (1.0 / n_signal + 1.0 / n_noise) + 1.0 / (2.0 * n_noise))


def fit_p_value(ratio: float, sigma: float, n_signal: int, n_noise: int) -> float:
    """P-value of a fitted noise multiplier as small as ``ratio`` under the claim: exact for the
    claimed Gaussian law, conservative for more noise (the "suspect" outcome's test).

    :func:`audit_run`'s fit is ``ratio = S / D`` with ``S`` the (ddof 0) standard deviation of the
    ``n_noise`` excluded-canary observations and ``D`` the mean of the ``n_signal`` included
    observations at sampled steps minus the excluded mean. Under the claim, in units of the
    clipping norm, excluded observations are i.i.d. ``N(0, sigma^2)`` and included sampled ones
    ``N(1, sigma^2)``, so (Cochran's theorem: a Gaussian sample's mean and spread are independent)
    ``n_noise S^2 / sigma^2 ~ chi^2(n_noise - 1)`` independent of
    ``D ~ N(1, sigma^2 (1/n_signal + 1/n_noise))``, and (conditionally on which steps sampled whom,
    independent of the noise)

        P[S / D <= r, D > 0] = E_S[ Phi_bar((S / r - 1) / (sigma c)) ],  c^2 = 1/n_signal + 1/n_noise,

    a one-dimensional integral over the chi-square law, computed by adaptive quadrature between its
    ``1e-13`` quantiles (the truncated mass ``2e-13`` is added: the safe side). Nothing asymptotic.
    *More noise* (real gradients adding variance ``v``) makes a small ratio rarer: the event needs
    ``D >= S / r``, i.e. (for each value ``x`` of the chi-square variable) a standard normal above
    ``sqrt(x / n_noise) / (r c') - 1 / (A c')`` with ``A = sqrt(sigma^2 + v)`` and ``c'^2 = 1 /
    n_signal + 1 / n_noise``, a threshold that increases with ``A``; a smaller canary signal
    (clipping below the norm) makes ``D`` smaller too. So the p-value is valid (never too small)
    for every run whose canary observations are independent Gaussians of variance at least the
    claimed and whose canary signal is at most 1 (the audit's own checks test those assumptions).

    Parameters
    ----------
    ratio : float
        The fitted noise multiplier (``> 0``).
    sigma : float
        The claimed noise multiplier (``> 0``).
    n_signal, n_noise : int
        Observations behind the signal (``>= 1``) and the noise (``>= 2``).

    Returns
    -------
    float
        ``P[fit <= ratio]`` under the claim, in ``[0, 1]``.

    Raises
    ------
    ValueError
        On a non-positive or non-finite ratio or sigma, ``n_signal < 1`` or ``n_noise < 2``.
    """
    from scipy import integrate, stats

    ratio, sigma = float(ratio), float(sigma)
    if not (ratio > 0 and math.isfinite(ratio)):
        raise ValueError(f"ratio must be a positive number, got {ratio!r}")
    if not (sigma > 0 and math.isfinite(sigma)):
        raise ValueError(f"sigma must be a positive number, got {sigma!r}")
    if int(n_signal) < 1 or int(n_noise) < 2:
        raise ValueError(f"need n_signal >= 1 and n_noise >= 2, got {n_signal!r} and {n_noise!r}")
    ns, nn = int(n_signal), int(n_noise)
    c = sigma * math.sqrt(1.0 / ns + 1.0 / nn)
    law = stats.chi2(nn - 1)
    lo, hi = float(law.ppf(_FIT_TAIL)), float(law.isf(_FIT_TAIL))

    def integrand(x: float) -> float:
        s = sigma * math.sqrt(x / nn)
        return float(law.pdf(x) * stats.norm.sf((s / ratio - 1.0) / c))

    # the integrand is concentrated where the chi-square mass is: split at its quantiles
    cuts = [lo] + [float(law.ppf(u)) for u in (1e-6, 1e-3, 0.1, 0.5, 0.9, 1 - 1e-3, 1 - 1e-6)] + [hi]
    total = 0.0
    for a, b in zip(cuts[:-1], cuts[1:]):
        if b > a:
            total += integrate.quad(integrand, a, b, epsabs=1e-15, epsrel=1e-10, limit=200)[0]
    return float(min(1.0, max(0.0, total) + 2.0 * _FIT_TAIL))


def suspect_assessment(fit: dict, epsilon_fit: float, epsilon_pld: float, accountant_epsilon: float, config, *,
                       n_signal: int, n_noise: int, delta: float, beta: float, runs_needed: bool = True,
                       z: float = SUSPECT_Z, score=None) -> dict:
    """The labelled "suspect" outcome: the (uncertified) estimates say the run leaks more than its
    accountant, by more than their sampling noise, although no certified bound shows it.

    *Rule.* Suspect when the fitted per-step noise multiplier ``sigma_fit`` (excluded canaries'
    spread over included canaries' mean signal, :func:`audit_run`'s estimate) is so far below the
    claimed one that a correct run gives a fit that small with probability at most
    ``Phi(-z)`` (``z = 3``: 0.13 %), by the *exact* p-value :func:`fit_p_value` (the fit's law
    under the claimed Gaussian mechanism; more noise only makes it rarer), and its composed epsilon
    ``epsilon_fit`` exceeds the accountant's. So a correct run is flagged with probability at most
    ``Phi(-z)``, the rate the output states (``false_flag_rate``). (Until 2026-11 the rule was
    ``z`` delta-method standard errors, :func:`_fit_relative_se`; its normal approximation
    under-states the lower tail of ``noise / signal`` about two-fold at ``q = 1``: 0.25 % instead of
    0.13 % at 10,000 canaries, 10 steps; 2 of 200 correct runs measured.)
    The histogram-PLD estimate errs high by construction (sparse bins, composition amplifies
    them: +3 % to +220 % on correct runs, ``docs/dpsgd.md`` §4) and is reported next to it, not
    used to decide. *Which audit would certify it*: the many-run harness (:func:`dpaudit.dpsgd.
    run_step_many` and :func:`~dpaudit.dpsgd.audit_user_code` for a user's step, or
    :func:`~dpaudit.dpsgd.train_many` for the reference), with the number of runs
    :func:`~dpaudit.dpsgd.bounds.many_run_size` finds for the fitted mechanism.

    Parameters
    ----------
    fit : dict
        ``{"signal", "noise", "noise_multiplier"}`` of the fitted per-step mechanism.
    epsilon_fit, epsilon_pld : float
        The two estimates (``nan`` when not computed).
    accountant_epsilon : float
    config : DPSGDConfig
        The claim.
    n_signal, n_noise : int
        Observations behind the signal (included canaries at their sampled steps) and the noise
        (excluded canaries' observations).
    delta, beta : float
        Of the many-run audit the text recommends.
    runs_needed : bool
        Compute the run count (a simulation: up to a few seconds) when suspect.
    score : callable
        The harness's white-box score ``(observations, sigma, q) -> scores`` for
        :func:`many_run_size` (:func:`dpaudit.dpsgd.canary_scores` with ``kind="lr"``); required
        when ``runs_needed``.
    z : float
        The threshold in standard errors (``> 0``).

    Returns
    -------
    dict
        ``suspect`` (bool), ``estimate`` (``epsilon_fit``), ``estimate_pld``, ``accountant``,
        ``excess`` (``epsilon_fit / accountant - 1``), ``sigma_fit``, ``sigma_claimed``,
        ``p_value`` (:func:`fit_p_value`), ``false_flag_rate`` (``Phi(-z)``: the most a correct run
        is flagged), ``standard_errors`` (``Phi^{-1}(1 - p_value)``: how far ``sigma_fit`` is below
        the claim, in standard-normal units), ``z``, ``runs`` (the
        harness's run count or ``None``), ``text`` (one line). Never a violation.

    Raises
    ------
    ValueError
        On ``z`` not positive, or ``runs_needed`` without ``score``.
    """
    if not (z > 0 and math.isfinite(z)):
        raise ValueError(f"z must be a positive number of standard errors, got {z!r}")
    if runs_needed and score is None:
        raise ValueError("runs_needed=True needs the harness's score function (score=...)")
    from scipy import stats

    ratio = float(fit.get("noise_multiplier", math.nan)) if fit else math.nan
    sigma = float(config.noise_multiplier)
    se = _fit_relative_se(fit or {}, int(n_signal), int(n_noise))
    out = {"suspect": False, "estimate": float(epsilon_fit), "estimate_pld": float(epsilon_pld),
           "accountant": float(accountant_epsilon), "sigma_fit": ratio, "sigma_claimed": sigma, "z": float(z),
           "standard_errors": math.nan, "excess": math.nan, "runs": None, "text": "", "p_value": math.nan,
           "false_flag_rate": float(stats.norm.sf(z)), "relative_se": se}
    rate = out["false_flag_rate"]
    if not (math.isfinite(ratio) and math.isfinite(epsilon_fit)):
        return out
    try:
        p = fit_p_value(ratio, sigma, int(n_signal), int(n_noise))
    except ValueError:
        return out
    out["p_value"] = p
    # how far below the claim, as the standard normal quantile of the exact p-value
    out["standard_errors"] = float(stats.norm.isf(p)) if p > 0 else math.inf
    out["excess"] = float(epsilon_fit / accountant_epsilon - 1.0) if accountant_epsilon > 0 else math.inf
    if not (p <= rate and epsilon_fit > accountant_epsilon):
        return out
    out["suspect"] = True
    pld = (f"; histogram PLD {epsilon_pld:.4g}" if math.isfinite(epsilon_pld) else "")
    text = (f"the fitted per-step mechanism (noise multiplier {ratio:.4g} against the claimed {sigma:.4g}, "
            f"p = {p:.2g} under the claim, exact) composes to epsilon {epsilon_fit:.4g}, "
            f"{100 * out['excess']:.0f} % above the accountant's {accountant_epsilon:.4g}{pld}; estimates, not "
            f"certified (a correct run is flagged suspect at most {100 * rate:.2g} % of the time)")
    if runs_needed:
        try:
            need = many_run_size(ratio, config, accountant_epsilon=accountant_epsilon, delta=delta, beta=beta,
                                 score=score)
        except (ValueError, ArithmeticError, MemoryError) as exc:  # the text says why, the audit goes on
            need = {"runs": None, "tried": 0, "method": f"not computed: {type(exc).__name__}: {exc}"}
        out["runs"] = need.get("runs")
        out["runs_method"] = need.get("method", "")
        if need.get("runs"):
            text += (f". The many-run harness (run_step_many + audit_user_code, or train_many) would certify it "
                     f"with about {need['runs']:,} runs (half with the canary; {need['method']})")
        else:
            text += (f". The many-run harness would need more than {need.get('tried', 0):,} runs "
                     f"({need.get('method', '')})")
    out["text"] = text
    return out

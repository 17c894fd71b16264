"""Monte Carlo accountant: privacy accounting as mean estimation of the privacy loss random variable.

For a composition with dominating pair (P, Q) and PRV ``L = sum_t l_t(T_t)``, ``T ~ P``,

    delta(eps) = E_P[(1 - exp(eps - L))_+]            (paper 004, Lemma 2 and §2)

is estimated from ``m`` independent draws (paper 004, §4.2 and §5, Alg. 3). Estimators
(derivations in docs/accounting.md):

* ``'simple'`` — simple Monte Carlo (paper 004, Def. 11): draw T ~ P.
* ``'is'`` — importance sampling with the exponential tilt of the whole PRV: every coordinate from
  ``P_lam,t ∝ P_t^(1+lam) Q_t^(-lam)``, weight ``dP/dP_lam = exp(K(lam) - lam L)`` with ``K`` the PRV's
  cumulant generating function (what RDP accountants compute). The tilt is the saddle point
  ``K'(lam) = eps`` (Siegmund 1976); several tilts are mixed with the balance heuristic
  ``1 / mean_g exp(lam_g L - K(lam_g))`` (Veach & Guibas 1995). Each term is at most
  ``c1(lam) exp(K(lam) - lam eps)``, the RDP bound on delta: the verifier relies on it.
* ``'cmc'`` — conditional Monte Carlo (Asmussen & Kroese 2006): one uniformly chosen coordinate is
  integrated out in closed form and the excess loss is attributed to it when it is the largest;
  the other coordinates are tilted. Bounded relative error when one large step drives delta.
* ``'is-cmc'`` — ``is``, ``cmc`` and plain conditional Monte Carlo computed from the same draws and
  combined with variance-minimising convex weights.
* ``'is-paper'`` — paper 004's estimator (App. C, Def. 16): tilt one uniformly chosen coordinate's
  output with ``theta = t*/sigma^2``, ``t* = 1/2 + sigma^2 ln((e^eps - 1 + q)/q)`` (App. C.2, eq. 8),
  weight ``(mean_i P_theta(t_i)/P(t_i))^-1``.
* ``'auto'`` (default) — ``is-cmc`` for compositions with a subsampled step, ``is`` otherwise.

``eps(delta)`` is found on the same samples (paper 004, Alg. 3): exactly for ``simple``/``is`` (the
estimate is ``(W - e^eps V)/m`` between consecutive sorted losses), by Brent's method otherwise.
Confidence intervals (``ci_low``/``ci_high``) are normal-approximation (Wald) intervals from the
empirical variance of the terms; the eps interval inverts the pointwise delta interval. They
undercover when the weights are heavy-tailed, so every result also carries a one-sided upper
confidence bound (``delta_upper``/``epsilon_upper``) that needs no normal approximation: Maurer's
(2003) lower-tail inequality applied to the importance-sampling terms, which are bounded a priori
by the RDP bound at the sampling tilt, capped by the RDP bound itself. It comes with diagnostics
(effective sample size, largest term's share, ``trusted``), see :class:`MonteCarloAccountant` and
docs/accounting.md §3. Both directions of a subsampled step
are estimated and the larger profile is reported (as dp_accounting does).

Randomness comes from the tile-based PCG64 streams of :mod:`._backend` keyed by ``rng``: a seed
gives the same result whatever the chunking; the NumPy and torch-CPU backends give the same draws,
torch on CUDA draws with its own generator (reproducible per seed, other draws).

Layout (one module per concept; every name stays importable from here): :mod:`.mc_samples` (the
weighted samples and the estimates from them), :mod:`.mc_tilts` (the proposals' tilts),
:mod:`.mc_sampler` (drawing the samples), :mod:`.mc_bounds` (upper confidence bounds and
diagnostics), :mod:`.mc_results` (result objects), :mod:`.mc_crosscheck` (the PLD cross-check);
this module holds the accountant.
"""

from __future__ import annotations

import contextlib
import math
import time
from typing import Sequence

import numpy as np
from scipy import special

from .._validate import as_rng, check_delta, check_epsilon, check_probability
from . import prv as _prv
from ._backend import check_counter_space, get_ops, key_from_rng, splitmix64
from .mc_bounds import (  # noqa: F401  (re-exported)
    MAX_TERM_SHARE,
    MIN_ESS,
    _bounded,
    _delta_upper,
    _epsilon_upper,
    _is_terms,
    _online_rdp_bounds,
    _trusted,
    _untrusted_message,
    _z_one_sided,
    nonnegative_upper_bound,
    term_diagnostics,
    term_log_bound,
)
from .mc_crosscheck import MonteCarloCrossCheckWarning, cross_check
from .mc_results import DeltaEstimate, EpsilonEstimate, OnlineEpsilonEstimate, _fields_dict, _jsonable  # noqa: F401
from .mc_sampler import (  # noqa: F401  (re-exported)
    DEFAULT_CHUNK,
    ESTIMATORS,
    ProgressFn,
    _block_rows,
    _check_chunk,
    _check_estimator,
    _check_estimator_name,
    _check_report_steps,
    _check_samples,
    _num_threads,
    _run_offline,
    _Sampler,
    _samples_from,
    resolve_estimator,
    sample_privacy_loss,
    set_num_threads,
)
from .mc_samples import ConditionalLossSamples, PrivacyLossSamples, _convex_min_variance, _fit_weights  # noqa: F401
from .mc_tilts import (  # noqa: F401  (re-exported)
    _balance_log_weights,
    _choose_tilts,
    _merge_tilts,
    _paper_theta,
    _sampling_tilt,
    _tilts_for,
)
from .prv import (
    ADD,
    REMOVE,
    Composition,  # noqa: F401  (re-exported)
    GaussianStep,
    SubsampledGaussianStep,
    as_composition,
    epsilon_upper_bound,
    max_supported_tilt,
)

__all__ = [
    "ConditionalLossSamples",
    "DeltaEstimate",
    "EpsilonEstimate",
    "ESTIMATORS",
    "MonteCarloAccountant",
    "MonteCarloCrossCheckWarning",
    "OnlineEpsilonEstimate",
    "PrivacyLossSamples",
    "cross_check",
    "estimate_delta",
    "estimate_epsilon",
    "estimate_epsilon_online",
    "nonnegative_upper_bound",
    "sample_privacy_loss",
    "set_num_threads",
    "term_diagnostics",
    "term_log_bound",
]


# --------------------------------------------------------------------------------------------
# the accountant
# --------------------------------------------------------------------------------------------
def _widen_untrusted(bound: float, how: str, diag: dict, rdp: float) -> tuple[float, str, bool]:
    """``(bound, how, trusted)``: a normal-approximation ('wald') upper bound on terms whose
    diagnostics fail (:func:`_trusted`) is widened to the RDP bound ``rdp`` (safe side: never lower)."""
    trusted = _trusted(diag)
    if not trusted and how == "wald":
        return rdp, "rdp", trusted
    return bound, how, trusted


def _z(confidence: float) -> float:
    return float(special.ndtri(1.0 - (1.0 - confidence) / 2.0))


def _seed_of(rng) -> int | None:
    return int(rng) if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) else None


#: pilot iterations: at most this many runs, stopping when the tilt moves by less than PILOT_RTOL
PILOT_MAX_ITER = 4
PILOT_RTOL = 0.02
#: online accounting: number of steps (geometric in k, plus k) at which the bound is computed
ONLINE_UPPER_POINTS = 24
UNTRUSTED_POLICIES = ("widen", "raise")


def _pilot_epsilon(comp, direction, delta, m, key, ops, chunk) -> tuple[float, list]:
    """Place the tilt by iterated pilot runs: start at the RDP eps, run a small 'is' pilot tilted at
    the current eps, move eps to the pilot's estimate, and repeat until the tilt moves by less than
    PILOT_RTOL (relative) or PILOT_MAX_ITER pilots ran. Each pilot has its own key (independent of
    the main run, so the main run's samples stay i.i.d. given the tilt).

    Returns the final eps and the history ``[(eps_used, tilts, pilot_eps), ...]``.
    """
    e = epsilon_upper_bound(comp, direction=direction, delta=delta)
    history = []
    for it in range(PILOT_MAX_ITER):
        lam = _choose_tilts(comp, direction, [e])
        sampler = _Sampler(comp, direction, "is", lam, None, splitmix64(key ^ (0x5EED + it)), ops, chunk, True)
        L, lw = _run_offline(sampler, m, None)
        e_new = PrivacyLossSamples(L, lw, direction, "is", lam).epsilon(delta)
        history.append((e, list(lam), e_new))
        if not (math.isfinite(e_new) and e_new > 0):
            break
        lam_new = _choose_tilts(comp, direction, [e_new])
        e = e_new
        if abs(lam_new[-1] - lam[-1]) <= PILOT_RTOL * max(abs(lam[-1]), 1e-12):
            break
    return e, history


def _online_point(samples, delta: float, guess: float | None, z: float) -> tuple[float, float, float]:
    """eps(delta) with a confidence interval from one step's samples, warm-started at ``guess``.

    :class:`PrivacyLossSamples` are inverted exactly. For the conditional estimators the point is
    found by the secant method on ``ln delta_hat(eps) - ln delta`` from the previous step's eps
    (falling back to Brent's method), and the interval by the delta method:
    ``eps -/+ z se(eps) / |d delta_hat / d eps|``.
    """
    if isinstance(samples, PrivacyLossSamples):
        return samples.epsilon(delta), samples.epsilon(delta, -z), samples.epsilon(delta, z)
    cache: dict = {}

    def stats(e):
        if e not in cache:
            cache[e] = samples.delta(e)
        return cache[e]

    e = None
    slope_log = None
    if guess is not None and math.isfinite(guess) and guess > 0:
        samples.fix_coefficients(guess)
        f = lambda e: math.log(max(stats(e)[0], 1e-300)) - math.log(delta)  # noqa: E731
        e0, e1 = guess, guess * 1.01 + 1e-3
        f0, f1 = f(e0), f(e1)
        for _ in range(12):
            if f1 == f0:
                break
            e2 = max(e1 - f1 * (e1 - e0) / (f1 - f0), 0.0)
            e0, f0, e1, f1 = e1, f1, e2, f(e2)
            if abs(e1 - e0) <= 1e-9 * max(1.0, e1):
                if abs(f1) <= 1e-6 and f1 != f0:
                    e, slope_log = e1, (f1 - f0) / (e1 - e0) if e1 != e0 else None
                break
    if e is None:
        e = samples.epsilon(delta)
    if e <= 0 or not math.isfinite(e):
        return e, e, e
    d0, se = stats(e)
    if slope_log is None or not slope_log < 0:
        h = 1e-4 * max(1.0, e)
        slope = (stats(e + h)[0] - stats(max(e - h, 0.0))[0]) / (e + h - max(e - h, 0.0))
    else:
        slope = slope_log * d0  # d delta_hat / d eps = delta_hat * d ln(delta_hat) / d eps
    if not slope < 0:
        return e, samples.epsilon(delta, -z), samples.epsilon(delta, z)
    half = z * se / -slope
    return e, max(e - half, 0.0), e + half


@contextlib.contextmanager
def _sampler_errors():
    """Turn a rejection sampler that did not finish (prv._reject's RuntimeError) into a ValueError.

    Tilts are chosen by :func:`~dpaudit.accounting.prv.feasible_tilt` so that every sampler accepts
    at least 10% of its proposals, which makes this practically unreachable."""
    try:
        yield
    except RuntimeError as ex:
        if "rejection sampler" not in str(ex):
            raise
        raise ValueError(f"the tilted sampler could not draw for this composition ({ex}); use estimator="
                         f"'simple' or a smaller tilt") from ex


class MonteCarloAccountant:
    """Monte Carlo accountant (paper 004, §5, Alg. 3): estimates with one-sided upper confidence bounds.

    Hyper-parameters only are stored; each ``get_*`` call draws fresh samples (consuming ``rng``).

    **Upper confidence bounds** (``DeltaEstimate.delta_upper``, ``EpsilonEstimate.epsilon_upper``;
    one-sided at ``confidence``; derivation in docs/accounting.md §3). For 'is', 'cmc', 'is-cmc' and
    'simple' the plain importance-sampling terms ``Y_i = w_i (1 - e^(eps - L_i))_+`` of the same draws
    are non-negative and at most ``B(eps) = G min_g c1(lam_g) e^(K(lam_g) - lam_g eps)``
    (:func:`term_log_bound`); Maurer's (2003) lower-tail inequality for non-negative variables then
    gives ``delta(eps) <= (sqrt(B u/2) + sqrt(B u/2 + mean))^2``, ``u = ln(1/(1-confidence))/m``
    (:func:`nonnegative_upper_bound`) with no normal approximation (``upper_method='maurer'``). The
    eps bound is the largest eps at which that bound still exceeds delta. Both are capped by the
    deterministic RDP bounds (``upper_method='rdp'`` when the cap is active). For 'is-paper' (terms
    not bounded a priori) the bound is the one-sided Wald bound ``mean + z_conf se`` ('wald'),
    replaced by the RDP bound when the diagnostics fail. The maximum over directions is reported
    (a direction not sampled contributes its RDP bound), so it covers the larger direction's truth
    with probability at least ``confidence``.

    **Diagnostics** (``ess``, ``max_term_share``, ``trusted``): at the estimate, the effective sample
    size ``(sum t)^2 / sum t^2`` of the estimator's terms and the largest term's share of their sum.
    The point estimate and the two-sided Wald interval ``ci_low``/``ci_high`` are trusted when
    ``ess >= MIN_ESS`` (100) and ``max_term_share <= MAX_TERM_SHARE`` (0.1). ``untrusted='widen'``
    (default) reports them anyway with ``trusted=False`` (the upper bound does not rely on them);
    ``untrusted='raise'`` refuses with a ``ValueError``.

    Parameters
    ----------
    num_samples : int
        Samples per direction (default 100 000).
    estimator : {'is', 'simple', 'is-paper'}
        Proposal (module docstring).
    confidence : float
        Level of the reported confidence intervals (default 0.95).
    rng : numpy Generator, int or None
        Randomness (an int makes runs reproducible and is recorded in the results).
    backend, device : str, optional
        'numpy' (default) or 'torch' on a device.
    chunk_elements : int
        Array elements per block.
    pilot_fraction : float
        For eps(delta) with a tilted estimator: fraction of ``num_samples`` spent (extra) on each
        pilot run that places the tilt (default 1/16; at most PILOT_MAX_ITER = 4 pilots).
    untrusted : {'widen', 'raise'}
        What to do when the diagnostics fail (see above).

    Raises
    ------
    ValueError
        For an invalid argument (named in the message).

    Examples
    --------
    >>> acc = MonteCarloAccountant(num_samples=20_000, rng=0)
    >>> est = acc.get_epsilon(Composition.dpsgd(1.1, 256 / 60000, 1000), delta=1e-5)  # doctest: +SKIP
    """

    def __init__(self, num_samples: int = 100_000, estimator: str = "auto", confidence: float = 0.95, rng=None,
                 backend: str | None = None, device: str | None = None, chunk_elements: int = DEFAULT_CHUNK,
                 pilot_fraction: float = 1.0 / 16.0, untrusted: str = "widen"):
        self.num_samples = _check_samples(num_samples)
        if untrusted not in UNTRUSTED_POLICIES:
            raise ValueError(f"untrusted must be one of {', '.join(UNTRUSTED_POLICIES)}, got {untrusted!r}")
        self.untrusted = untrusted
        self.estimator = _check_estimator_name(estimator)
        self.confidence = check_probability(confidence, "confidence")
        self.rng = rng
        self.backend, self.device = backend, device
        get_ops(backend, device)  # validate early (CUDA availability, backend name)
        self.chunk_elements = _check_chunk(chunk_elements)
        self.pilot_fraction = check_probability(pilot_fraction, "pilot_fraction")
        self._gen = as_rng(rng)

    def _setup(self, composition):
        comp = as_composition(composition)
        est = _check_estimator(self.estimator, comp)
        check_counter_space(self.num_samples, comp.num_steps)
        return comp, est, get_ops(self.backend, self.device), key_from_rng(self._gen)

    def _summarise(self, per: dict, quantity: str, what: str) -> tuple[str, dict]:
        """The direction reported (largest estimate of ``quantity``) and the fields shared by
        :class:`DeltaEstimate` and :class:`EpsilonEstimate`, maximised (or, for the diagnostics,
        worst-cased) over the sampled directions; raises with ``untrusted='raise'``."""
        done = {d: v for d, v in per.items() if not v.get("skipped")}
        best = max(done, key=lambda d: done[d][quantity])
        upper = f"{quantity}_upper"
        upper_dir = max(per, key=lambda d: per[d][upper])
        trusted = all(v["trusted"] for v in done.values())
        if not trusted and self.untrusted == "raise":
            bad = min((v for v in done.values() if not v["trusted"]), key=lambda v: v["ess"])
            raise ValueError(_untrusted_message(what, bad, self.num_samples))
        return best, {
            "ci_low": max(p["ci_low"] for p in done.values()),
            "ci_high": max(p["ci_high"] for p in done.values()),
            upper: max(p[upper] for p in per.values()),
            "upper_method": per[upper_dir].get("upper_method", "rdp"),
            "ess": min(v["ess"] for v in done.values()),
            "max_term_share": max(v["max_term_share"] for v in done.values()),
            "trusted": trusted,
        }

    def _dirs(self, comp):
        return comp.directions

    def _over_directions(self, comp, estimator: str, key: int, progress, upper: str, rdp_bound, one) -> dict:
        """The per-direction records of :meth:`get_delta` / :meth:`get_epsilon`: for each direction d
        (remove first), ``rdp = rdp_bound(d)``, the RDP upper bound on the quantity; the add
        direction is skipped (its record is the RDP bound, which is safe: an upper bound) when that
        bound is below the remove direction's lower confidence limit, since the maximum over
        directions is then the remove one; otherwise the record is
        ``one(d, est, rdp, dkey, prog)``, with ``est`` the estimator of d ('is-paper' runs as
        'is-cmc' on the add direction, paper 004 §5), ``dkey`` d's counter key and ``prog`` the
        progress callback scaled to all directions' samples."""
        per = {}
        dirs = self._dirs(comp)
        for di, d in enumerate(dirs):
            rdp = rdp_bound(d)
            if d == ADD and REMOVE in per and rdp <= per[REMOVE]["ci_low"]:
                per[d] = {"skipped": True, "rdp_upper_bound": rdp, upper: rdp,
                          "note": "the RDP bound on this direction is below the other's confidence interval"}
                continue
            est = estimator if (estimator != "is-paper" or d == REMOVE) else "is-cmc"
            prog = None if progress is None else (lambda a, b, di=di: progress(di * b + a, len(dirs) * b))
            per[d] = one(d, est, rdp, splitmix64(key ^ di), prog)
        return per

    def _draw(self, comp, d, est, lam, target, dkey, ops, prog):
        """``self.num_samples`` offline draws of direction d with tilts ``lam`` placed for ``target``."""
        sampler = _Sampler(comp, d, est, lam, target, dkey, ops, self.chunk_elements, True)
        return _samples_from(sampler, _run_offline(sampler, self.num_samples, prog), lam)

    @_sampler_errors()
    def get_delta(self, composition, epsilon: float, progress: ProgressFn | None = None, *,
                  cross_check: bool = False) -> DeltaEstimate:
        """Estimate delta(eps) of the composition (max over directions).

        Parameters
        ----------
        composition : Composition, Step, list or DpEvent
            The mechanism.
        epsilon : float
            eps >= 0 (nats).
        progress : callable, optional
            ``progress(done, total)`` over all directions' samples.
        cross_check : bool
            Also compare with dp_accounting's PLD accountant (:func:`cross_check`).

        Returns
        -------
        DeltaEstimate
            With ``delta_upper``, the one-sided upper confidence bound at ``confidence``.

        Raises
        ------
        ValueError
            For a negative or NaN epsilon, an unsupported composition, a sampler that cannot run,
            or (with ``untrusted='raise'``) an estimate whose diagnostics fail.
        """
        t0 = time.perf_counter()
        eps = check_epsilon(epsilon)
        comp, estimator, ops, key = self._setup(composition)
        z = _z(self.confidence)

        def one(d, est, rdp, dkey, prog):
            lam = _tilts_for(est, comp, d, [eps])
            s = self._draw(comp, d, est, lam, eps, dkey, ops, prog)
            mean, se = s.delta(eps)
            diag = term_diagnostics(s.terms(eps))
            du, how, trusted = _widen_untrusted(*_delta_upper(s, comp, d, eps, self.confidence, rdp), diag, rdp)
            return {"delta": mean, "std_error": se, "ci_low": max(0.0, mean - z * se), "ci_high": mean + z * se,
                    "delta_upper": du, "upper_method": how, "rdp_upper_bound": rdp,
                    "estimator": est, "tilts": list(s.tilts), "trusted": trusted, **diag}

        per = self._over_directions(comp, estimator, key, progress, "delta_upper",
                                    lambda d: _prv.delta_upper_bound(comp, eps, d), one)
        best, summary = self._summarise(per, "delta", f"delta(eps={eps:g})")
        out = DeltaEstimate(
            epsilon=eps, delta=per[best]["delta"], confidence=self.confidence,
            std_error=per[best]["std_error"], num_samples=self.num_samples, estimator=estimator,
            direction=best, per_direction=per, composition=comp.to_dict(), backend=ops.name, device=ops.device,
            seed=_seed_of(self.rng), wall_seconds=time.perf_counter() - t0, **summary,
        )
        return _cross_check(out, comp) if cross_check else out

    @_sampler_errors()
    def get_epsilon(self, composition, delta: float, progress: ProgressFn | None = None, *,
                    cross_check: bool = False) -> EpsilonEstimate:
        """Estimate eps(delta) of the composition (max over directions) by inverting the delta
        estimate on one set of samples (paper 004, Alg. 3), with a one-sided upper confidence bound.

        The tilt is placed by iterated pilot runs (see :func:`_pilot_epsilon`). ``epsilon_upper`` is
        the one-sided upper confidence bound at ``confidence`` (rule in the class docstring);
        ``ess``/``max_term_share`` diagnose the estimate.

        Parameters
        ----------
        composition : Composition, Step, list or DpEvent
            The mechanism.
        delta : float
            In (0, 1).
        progress : callable, optional
            ``progress(done, total)`` over all directions' samples.
        cross_check : bool
            Also run dp_accounting's PLD accountant and compare (:func:`cross_check`); warns when
            PLD's eps lies above ``epsilon_upper`` by more than its half-width.

        Returns
        -------
        EpsilonEstimate

        Raises
        ------
        ValueError
            For delta outside (0, 1), an unsupported composition, a sampler that cannot run, or
            (with ``untrusted='raise'``) an estimate whose diagnostics fail.
        """
        t0 = time.perf_counter()
        delta = check_delta(delta)
        comp, estimator, ops, key = self._setup(composition)
        z = _z(self.confidence)
        m_pilot = max(256, int(self.num_samples * self.pilot_fraction))

        def one(d, est, rdp, dkey, prog):
            lam, target, history = (0.0,), None, []
            if est != "simple":
                target, history = _pilot_epsilon(comp, d, delta, m_pilot, dkey, ops, self.chunk_elements)
                lam = _tilts_for(est, comp, d, [target])
            s = self._draw(comp, d, est, lam, target, dkey, ops, prog)
            e = s.epsilon(delta)
            diag = term_diagnostics(s.terms(e if math.isfinite(e) else rdp))
            eu, how, trusted = _widen_untrusted(*_epsilon_upper(s, comp, d, delta, self.confidence, rdp), diag, rdp)
            return {"epsilon": e, "ci_low": s.epsilon(delta, -z), "ci_high": s.epsilon(delta, z),
                    "epsilon_upper": eu, "upper_method": how, "rdp_upper_bound": rdp,
                    "delta_at_epsilon": s.delta(e)[0], "estimator": est,
                    "tilts": list(s.tilts), "pilot_epsilon": target,
                    "pilot_history": [{"epsilon": h[0], "tilts": h[1], "pilot_epsilon": h[2]} for h in history],
                    "trusted": trusted, **diag}

        per = self._over_directions(comp, estimator, key, progress, "epsilon_upper",
                                    lambda d: epsilon_upper_bound(comp, delta, d), one)
        best, summary = self._summarise(per, "epsilon", f"eps(delta={delta:g})")
        out = EpsilonEstimate(
            delta=delta, epsilon=per[best]["epsilon"], confidence=self.confidence,
            num_samples=self.num_samples, estimator=estimator, direction=best, per_direction=per,
            composition=comp.to_dict(), backend=ops.name, device=ops.device, seed=_seed_of(self.rng),
            wall_seconds=time.perf_counter() - t0, **summary,
        )
        return _cross_check(out, comp) if cross_check else out

    @_sampler_errors()
    def get_epsilon_online(self, composition, delta, progress: ProgressFn | None = None,
                           report_steps: Sequence[int] | None = None):
        """eps(delta) after each step 1..k from running sums (paper 004, §5 "online accounting").

        One set of m samples per direction is advanced one step at a time, O(m) work per step plus
        the inversion. Tilts are the saddle points at pilot estimates of eps for a few prefixes
        (geometric in k; the pilots cost about ``pilot_fraction * m`` samples of each prefix) and are
        mixed by the balance heuristic. 'is-cmc'/'cmc' keep the integrated coordinate uniform over
        the steps so far by reservoir sampling; 'is-paper' has no online form and runs as 'is-cmc'.
        A direction whose RDP eps bound lies below the other direction's interval is not inverted
        at that step (it cannot be the maximum).

        Parameters
        ----------
        composition : Composition or convertible
            The mechanism.
        delta : float or sequence of float
            Target delta(s); several are answered from the same samples.
        progress : callable, optional
            ``progress(step, k)``, after each reported step.
        report_steps : sequence of int, optional
            The steps (1..k) after which eps(delta) is solved and reported (default: every step).
            The samples are advanced through all k steps either way; the solves, which dominate
            the cost for large m, happen only at these steps. The estimates at a reported step
            do not depend on which other steps are reported (for 'is'/'simple' exactly; for the
            conditional estimators up to the root-finding tolerance, as the solve is warm-started
            at the previous reported step).

        Returns
        -------
        OnlineEpsilonEstimate, or a list of them (one per delta) when ``delta`` is a sequence.
        Its ``steps`` are the reported steps.

        Raises
        ------
        ValueError
            For a delta outside (0, 1), an unsupported composition, or a report step outside 1..k.
        """
        t0 = time.perf_counter()
        many = isinstance(delta, (list, tuple, np.ndarray))
        deltas = [check_delta(d) for d in (delta if many else [delta])]
        comp, estimator, ops, key = self._setup(composition)
        est = {"simple": "simple", "is": "is", "cmc": "cmc"}.get(estimator, "is-cmc")
        if est == "is-cmc" and not all(isinstance(s_, (GaussianStep, SubsampledGaussianStep)) for s_, _ in comp.segments):
            est = "is"
        z = _z(self.confidence)
        k = comp.num_steps
        rsteps = _check_report_steps(report_steps, k)
        dirs = self._dirs(comp)
        nd = len(deltas)
        eps = np.zeros((nd, len(dirs), len(rsteps)))
        lo = np.zeros((nd, len(dirs), len(rsteps)))
        hi = np.zeros((nd, len(dirs), len(rsteps)))
        tilts = {}
        checkpoints = sorted({int(round(x)) for x in np.geomspace(1, k, min(k, 6))})
        m_pilot = max(256, min(2000, int(self.num_samples * self.pilot_fraction)))
        gens = []
        for di, d in enumerate(dirs):
            if est != "simple":
                cap = max_supported_tilt(comp, d)
                lams = set()
                for ci, c in enumerate(checkpoints):
                    # pilot on the prefix: tilts at the RDP eps (and 0), then the saddle points of its estimates
                    pre = comp.prefix(c)
                    rough = {_sampling_tilt(pre, d, epsilon_upper_bound(pre, dd, d), cap)
                             for dd in deltas} | ({0.0} if est != "is" else set())
                    pil = _Sampler(pre, d, est, _merge_tilts(sorted(rough)), None,
                                   splitmix64(key ^ (0x9111 + 7 * ci + di)), ops, self.chunk_elements, True)
                    smp = _samples_from(pil, _run_offline(pil, m_pilot, None), pil.tilts)
                    for dd in deltas:
                        e = smp.epsilon(dd)
                        if math.isfinite(e):
                            lams.add(_sampling_tilt(pre, d, e, cap))
                if est in ("cmc", "is-cmc"):
                    lams.add(0.0)
                lam = _merge_tilts(sorted(lams))
            else:
                lam = (0.0,)
            tilts[d] = list(lam)
            sampler = _Sampler(comp, d, est, lam, None, splitmix64(key ^ di), ops, self.chunk_elements, False)
            if est in ("cmc", "is-cmc"):
                gens.append((di, d, lam, sampler.online_cmc(self.num_samples, rsteps)))
            else:
                gens.append((di, d, lam, ((i, PrivacyLossSamples(ops.to_numpy(L).copy(), ops.to_numpy(lw).copy(), d,
                                                                  est, lam))
                                          for i, L, lw in sampler.online(self.num_samples, rsteps))))
        add_bound = _online_rdp_bounds(comp, deltas, ADD) if len(dirs) > 1 else None
        rdp_all = {d: (add_bound if d == ADD and add_bound is not None else _online_rdp_bounds(comp, deltas, d))
                   for d in dirs}
        # rigorous upper bounds at some reported steps; eps(delta) grows with the number of steps,
        # so a bound at a reported step c also bounds every reported step before c
        nr = len(rsteps)
        upper_idx = sorted({int(round(x)) - 1 for x in np.geomspace(1, nr, min(nr, ONLINE_UPPER_POINTS))} | {nr - 1})
        upper_at = tuple(rsteps[r] for r in upper_idx)
        up = np.full((nd, len(dirs), nr), -math.inf)
        diag_last: dict = {}
        cum = np.zeros(nr)
        skipped = np.zeros((nd, nr), dtype=bool)
        for r, i in enumerate(rsteps):
            check = r in upper_idx
            pre = comp.prefix(i) if check else None
            for di, d, lam, gen in gens:
                _, smp = next(gen)
                for j, dd in enumerate(deltas):
                    if d == ADD and add_bound is not None and add_bound[j, i - 1] <= lo[j, 0, r]:
                        eps[j, di, r] = lo[j, di, r] = hi[j, di, r] = -math.inf
                        up[j, di, r] = add_bound[j, i - 1]
                        skipped[j, r] = True
                        continue
                    guess = eps[j, di, r - 1] if r > 0 else None
                    eps[j, di, r], lo[j, di, r], hi[j, di, r] = _online_point(smp, dd, guess, z)
                    if check:
                        up[j, di, r] = _epsilon_upper(smp, pre, d, dd, self.confidence,
                                                      float(rdp_all[d][j, i - 1]))[0]
                    if r == nr - 1:
                        e = eps[j, di, r]
                        diag_last[(j, di)] = term_diagnostics(smp.terms(e if math.isfinite(e) else 0.0))
            cum[r] = time.perf_counter() - t0
            if progress is not None:
                progress(i, k)
        out = []
        idx = np.asarray(rsteps) - 1
        for j, dd in enumerate(deltas):
            rdp_max = np.max([rdp_all[d][j] for d in dirs], axis=0)[idx]
            upper = np.minimum(up[j].max(axis=0), rdp_max)
            # between checkpoints: the bound at the next checkpoint (and the RDP bound of the step)
            nxt = math.inf
            for r in range(nr - 1, -1, -1):
                if r in upper_idx:
                    nxt = upper[r]
                upper[r] = min(nxt, rdp_max[r])
            dg = [diag_last[(j, di)] for di in range(len(dirs)) if (j, di) in diag_last]
            ess = min((g["ess"] for g in dg), default=math.nan)
            share = max((g["max_term_share"] for g in dg), default=math.nan)
            trusted = bool(dg) and all(_trusted(g) for g in dg)
            if not trusted and self.untrusted == "raise":
                bad = min(dg, key=lambda g: g["ess"]) if dg else {"ess": 0.0, "max_term_share": 1.0}
                raise ValueError(_untrusted_message(f"eps(delta={dd:g}) after {k} steps", bad, self.num_samples))
            out.append(OnlineEpsilonEstimate(
                delta=dd, steps=tuple(rsteps), epsilon=tuple(eps[j].max(axis=0)),
                ci_low=tuple(lo[j].max(axis=0)), ci_high=tuple(hi[j].max(axis=0)), cumulative_seconds=tuple(cum),
                confidence=self.confidence, num_samples=self.num_samples, estimator=est, tilts=tilts,
                composition=comp.to_dict(), backend=ops.name, device=ops.device, seed=_seed_of(self.rng),
                epsilon_upper=tuple(float(x) for x in upper), upper_checkpoints=upper_at,
                ess=ess, max_term_share=share, trusted=trusted,
            ))
        return out if many else out[0]


_cross_check = cross_check


def estimate_delta(composition, epsilon: float, *, num_samples: int = 100_000, estimator: str = "auto",
                   confidence: float = 0.95, rng=None, backend: str | None = None, device: str | None = None,
                   progress: ProgressFn | None = None) -> DeltaEstimate:
    """Estimate delta(eps) (functional form of :meth:`MonteCarloAccountant.get_delta`)."""
    return MonteCarloAccountant(num_samples, estimator, confidence, rng, backend, device).get_delta(
        composition, epsilon, progress)


def estimate_epsilon(composition, delta: float, *, num_samples: int = 100_000, estimator: str = "auto",
                     confidence: float = 0.95, rng=None, backend: str | None = None, device: str | None = None,
                     progress: ProgressFn | None = None) -> EpsilonEstimate:
    """Estimate eps(delta) (functional form of :meth:`MonteCarloAccountant.get_epsilon`)."""
    return MonteCarloAccountant(num_samples, estimator, confidence, rng, backend, device).get_epsilon(
        composition, delta, progress)


def estimate_epsilon_online(composition, delta, *, num_samples: int = 100_000, estimator: str = "auto",
                            confidence: float = 0.95, rng=None, backend: str | None = None,
                            device: str | None = None, progress: ProgressFn | None = None,
                            report_steps: Sequence[int] | None = None):
    """eps(delta) after every step, or after each of ``report_steps`` (functional form of
    :meth:`MonteCarloAccountant.get_epsilon_online`)."""
    return MonteCarloAccountant(num_samples, estimator, confidence, rng, backend, device).get_epsilon_online(
        composition, delta, progress, report_steps=report_steps)

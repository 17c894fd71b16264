"""One check per assumption of the DP-SGD accountant, from one run of gradient canaries.

The accountant (``Composition.dpsgd(sigma, q, T)``) is right for an implementation only if

1. **clipping**: each example's contribution to a step is its own gradient clipped to ``C``;
2. **noise**: every step and every parameter tensor gets fresh Gaussian noise of standard
   deviation at least ``sigma C`` (in the units of the update handed back, after the public
   divisor), independent across steps;
3. **sampling**: each example is in each step independently with probability ``q`` (Poisson; at
   ``q = 1``: exactly once in every step);
4. **no coupling**: the update depends on an example only through its own clipped gradient: no
   grouping of examples before clipping, no data-dependent scale of the update, no special path
   for a record whose gradient is not finite.

:class:`dpaudit.dpsgd.Canaries` records what the checks need (``docs/dpsgd.md`` §10); the
functions here turn those records into p-values. **Each p-value is valid under the exact law of a
correct implementation** (the auditor knows the canaries' mask, signs and participation, so the
checks may read them): ``P(p <= a) <= a`` for every ``a`` when the step is correct. A correct
implementation that is *more* private (more noise, a smaller clipping norm, rows with non-finite
gradients dropped or zeroed) is inside every null: the tests are one-sided where it matters.

Units: observations are in units of ``C`` after multiplying the update by the public divisor
(``o = divisor * u / C``), so a correct step's noise on every coordinate is ``N(0, sigma^2)``
and a clipped canary moves its own coordinate by at most 1.

References: Nasr et al. (2023) (gradient canaries observed at every step); Steinke, Nasr,
Jagielski (2023); Bonferroni; Fisher (1922) (exact test of a 2 x 2 table); Chernoff (1952)
(exponential tail bounds from an exact moment generating function); Ville (1939) / Robbins
(1970) (anytime-valid tests; here by alpha spending over a fixed schedule).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import DPAuditError

__all__ = ["CHECKS", "DPSGDViolation", "Finding", "TAIL_Z", "chi2_lower", "clipping_step", "contribution_mean",
           "cosine_p", "coupling_crowd", "coupling_ols", "noise_cells", "noise_independence", "noise_pooled", "nonfinite_association", "nonfinite_contrast",
           "chernoff_p", "dispersion_p", "noise_upper", "run_clipping_check", "scale_dependence"]

#: The checks, in the order of the verdict. ``bound`` is the certified one-run epsilon bound.
CHECKS = ("bound", "clipping", "noise", "sampler", "coupling", "nonfinite", "scale")
#: The light-tail sub-test counts null-coordinate values beyond this many ``sigma``.
TAIL_Z = 3.0


@dataclass(frozen=True)
class Finding:
    """One rejected test: a named assumption of the accountant that the run broke.

    Attributes
    ----------
    check : str
        One of :data:`CHECKS`.
    test : str
        The sub-test (``"step x tensor"``, ``"pooled"``, ``"mean"``, ...).
    p_value : float
        Its p-value (valid under the exact law of a correct step).
    level : float
        The part of ``beta`` it was tested at (fixed before the run).
    steps : tuple of int
        The step(s) (1-based, counting every ``begin_step``) where it broke; empty when the test
        pools all steps so far.
    tensors : tuple of str
        The parameter tensor(s) concerned (names of :attr:`Canaries.names`); may be empty.
    message : str
        One line for a person.
    at_step : int
        The step after which it was found (the last observed step of the evidence).
    """

    check: str
    test: str
    p_value: float
    level: float
    steps: tuple = ()
    tensors: tuple = ()
    message: str = ""
    at_step: int = 0

    def __str__(self) -> str:
        return self.message


class DPSGDViolation(DPAuditError):
    """Raised by the online audit (:meth:`dpaudit.dpsgd.Canaries.monitor`) as soon as a check
    rejects: the run is not the mechanism its accountant describes.

    Attributes
    ----------
    finding : Finding
        The check, the step(s) and tensor(s), the p-value and the level it was tested at.
    check, step : str, int
        ``finding.check`` and ``finding.at_step``.
    """

    def __init__(self, finding: Finding):
        self.finding = finding
        self.check = finding.check
        self.step = finding.at_step
        super().__init__(f"DP-SGD check '{finding.check}' failed at step {finding.at_step}: {finding.message}")


def chi2_lower(ss, dof) -> np.ndarray:
    """Lower-tail p-value ``P(chi2(dof) <= ss)`` (elementwise; 1 where ``dof == 0``): the
    regularised incomplete gamma function ``P(dof / 2, ss / 2)``.

    Parameters
    ----------
    ss : float or array
        Observed sums of squares (units of ``sigma^2``); negative values count as 0, ``nan`` gives
        ``nan`` (callers mask what was not handed back).
    dof : int or array, broadcastable with ``ss``
        Degrees of freedom, ``>= 0``.

    Returns
    -------
    ndarray of p-values in ``[0, 1]``, the broadcast shape of ``ss`` and ``dof``.

    Raises
    ------
    ValueError
        If a degree of freedom is negative or not finite.
    """
    from scipy.special import gammainc

    ss = np.maximum(np.asarray(ss, dtype=float), 0.0)
    dof = np.asarray(dof, dtype=float)
    if not np.all(np.isfinite(dof)) or np.any(dof < 0):
        raise ValueError(f"chi2_lower: degrees of freedom must be finite and >= 0, got {dof!r}")
    return np.where(dof > 0, gammainc(np.maximum(dof, 1e-300) / 2, ss / 2), 1.0)


def cosine_p(cos, dim: int) -> np.ndarray:
    """``P(|cos| >= |c|)`` for the cosine between two independent isotropic random vectors in
    ``dim`` dimensions (``(1 + cos) / 2 ~ Beta((dim - 1) / 2, (dim - 1) / 2)``; whatever their
    lengths): the regularised incomplete beta ``I_{1 - c^2}((dim - 1) / 2, 1 / 2)``.

    Parameters
    ----------
    cos : float or array
        Observed cosines (values outside ``[-1, 1]`` from rounding are clipped).
    dim : int
        Dimension of the two vectors, ``>= 2``.

    Returns
    -------
    ndarray of two-sided p-values, the shape of ``cos``.

    Raises
    ------
    ValueError
        If ``dim < 2`` (the cosine of two vectors in one dimension is always +-1).
    """
    from scipy.special import betainc

    if int(dim) != dim or dim < 2:
        raise ValueError(f"cosine_p: dim must be an integer >= 2, got {dim!r}")
    c2 = np.clip(np.square(np.asarray(cos, dtype=float)), 0.0, 1.0)
    return betainc((dim - 1) / 2.0, 0.5, 1.0 - c2)


def noise_upper(sum_sq: np.ndarray, dof: np.ndarray, level: float) -> float:
    """An upper confidence bound, in units of ``sigma``, on the noise scale of every dedicated
    tensor at once: tensor ``k``'s null coordinates are i.i.d. ``N(0, s_k^2)``, so ``sum z^2 / (s_k /
    sigma)^2 ~ chi2(dof_k)`` and ``s_k / sigma <= sqrt(sum z^2 / chi2_ppf(level / K, dof_k))`` but
    with probability ``level / K`` (Bonferroni over the ``K`` tensors). Returns the largest bound,
    and at least 1 (the claimed scale): the tests of contributions (clipping, coupling,
    non-finite contrast) use it as their noise scale, so that a correct step with *more* noise
    than claimed is not accused (their union with this bound's failure is at most ``level`` more).
    """
    from scipy.special import gammaincinv

    ss = np.asarray(sum_sq, dtype=float)
    dof = np.asarray(dof, dtype=float)
    ok = dof > 0
    if not ok.any():
        return 1.0
    q = 2 * gammaincinv(dof[ok] / 2, level / int(ok.sum()))
    return float(max(1.0, np.sqrt(np.max(ss[ok] / q))))


def noise_independence(null_z: np.ndarray, earlier: np.ndarray) -> tuple:
    """Is step ``t``'s noise independent of the earlier steps'? For each dedicated tensor ``k``
    and each earlier step ``s``, the cosine between the null coordinates ``z_t[k]`` and
    ``z_s[k]``. For a correct step ``z_t[k]`` is fresh i.i.d. Gaussian noise (of any scale, even
    one that changes from step to step), so its direction is uniform on the sphere and
    independent of ``z_s[k]``: each cosine has the exact law of :func:`cosine_p`, whatever the
    earlier steps were; Bonferroni over the ``K (t - 1)`` pairs. Noise reused at any lag (a
    generator re-seeded every step, noise reused every epoch) gives a cosine near 1.

    Parameters
    ----------
    null_z : array, shape (K, n0)
    earlier : array, shape (t - 1, K, n0)

    Returns
    -------
    (p, (lag, tensor) of the largest cosine, that cosine)
    """
    if earlier is None or len(earlier) == 0 or null_z.shape[1] < 2:
        return 1.0, None, float("nan")
    a = null_z / np.maximum(np.linalg.norm(null_z, axis=1, keepdims=True), 1e-300)
    b = earlier / np.maximum(np.linalg.norm(earlier, axis=2, keepdims=True), 1e-300)
    cos = np.einsum("kn,skn->sk", a, b)
    s, k = np.unravel_index(int(np.argmax(np.abs(cos))), cos.shape)
    p = float(cosine_p(cos[s, k], null_z.shape[1])) * cos.size
    return float(min(1.0, p)), (int(len(earlier) - s), int(k)), float(cos[s, k])


def noise_cells(null_z: np.ndarray, user_ss: np.ndarray, user_dof: np.ndarray) -> dict:
    """One step's noise tests (lower tails: too little noise only).

    **Null coordinates** (``null_z``, shape ``(K, n0)``): coordinates of the dedicated block
    tensors that no canary and no real gradient ever touches, in units of ``sigma`` (``o /
    sigma``). For a correct step they are i.i.d. ``N(0, s^2 / sigma^2)`` with ``s >= sigma``, so
    ``sum z^2`` over a tensor is at least ``chi2(n0)`` in law (scaled up by ``s^2 / sigma^2 >=
    1``): the lower-tail p-value ``P(chi2(n0) <= sum z^2)`` is valid per tensor (``"cell"``, the
    smallest of the ``K`` times ``K``) and pooled over the step's tensors (``"step"``,
    ``chi2(K n0)``).

    **User tensors** (``user_ss``, shape ``(L,)``): ``||x_t - v_t||^2 / sigma^2`` for the user's
    tensor ``l`` in the same units, ``v_t`` any vector fixed before the step's noise is drawn (the
    caller uses a moving average of the earlier updates). For a correct step ``x_t = s_t + n_t``
    with ``s_t`` the clipped sum (it depends on the data, the parameters and the earlier noise,
    never on this step's noise ``n_t ~ N(0, s^2 I)``), so ``||x_t - v_t||^2 / s^2`` is a
    noncentral ``chi2(d_l, ||s_t - v_t||^2 / s^2)``, which stochastically dominates the central
    ``chi2(d_l)``: the lower-tail p-value is valid whatever the real gradients are. It has power
    only when ``||s_t - v_t||^2`` is small against ``d_l sigma^2`` (real gradients that change
    little from step to step, or a tensor of many coordinates); otherwise it is silent, never
    wrong.

    Returns
    -------
    dict
        ``cell`` (p, block index), ``step`` (p), ``user`` (p, user index); p-values already
        corrected for the ``K`` (``L``) tensors of the step (Bonferroni).
    """
    out = {"cell": (1.0, None), "step": 1.0, "user": (1.0, None)}
    if null_z is not None and null_z.size:
        ss = np.square(null_z).sum(axis=1)
        p = chi2_lower(ss, null_z.shape[1])
        k = int(np.argmin(p))
        out["cell"] = (float(min(1.0, p[k] * len(p))), k)
        out["step"] = float(chi2_lower(ss.sum(), null_z.size))
    if user_ss is not None and np.size(user_ss):
        ok = np.isfinite(user_ss) & (user_dof > 0)
        if ok.any():
            p = np.where(ok, chi2_lower(np.where(ok, user_ss, 0.0), user_dof), 1.0)
            k = int(np.argmin(p))
            out["user"] = (float(min(1.0, p[k] * int(ok.sum()))), k)
    return out


def noise_pooled(null_z: np.ndarray, user_ss: np.ndarray, user_dof: np.ndarray) -> dict:
    """The noise tests pooled over the steps so far (lower tails; each valid as in
    :func:`noise_cells`: conditionally on the past every step's term dominates a fresh central
    chi-square, so their sum dominates the chi-square of the summed degrees of freedom).

    Parameters
    ----------
    null_z : array, shape (T, K, n0)
        Null coordinates in units of ``sigma``.
    user_ss : array, shape (T, L)
        Centred user-tensor sums of squares in units of ``sigma^2`` (``nan`` where not handed back).
    user_dof : array, shape (L,)
        Coordinates of each user tensor.

    Returns
    -------
    dict
        ``tensor`` (p, block index): each block tensor over the steps, Bonferroni over ``K``;
        ``all``: every null coordinate; ``tails`` (p, count, expected): the number of null values
        beyond :data:`TAIL_Z` against Binomial(n, 2 Phi(-TAIL_Z)), lower tail (noise with lighter
        tails than Gaussian, e.g. bounded noise of the right variance; more noise of any Gaussian
        scale ``>= sigma`` only adds such values); ``user_tensor`` (p, user index): each user
        tensor over the steps, Bonferroni over ``L``.
    """
    from scipy.stats import binom, norm

    out = {"tensor": (1.0, None), "all": 1.0, "tails": (1.0, 0, 0.0), "user_tensor": (1.0, None)}
    if null_z is not None and null_z.size:
        z2 = np.square(null_z)
        per = z2.sum(axis=(0, 2))
        p = chi2_lower(per, null_z.shape[0] * null_z.shape[2])
        k = int(np.argmin(p))
        out["tensor"] = (float(min(1.0, p[k] * len(p))), k)
        out["all"] = float(chi2_lower(per.sum(), null_z.size))
        n = int(null_z.size)
        p0 = float(2 * norm.sf(TAIL_Z))
        c = int((np.abs(null_z) > TAIL_Z).sum())
        out["tails"] = (float(binom.cdf(c, n, p0)), c, n * p0)
    if user_ss is not None and np.size(user_ss):
        us = np.asarray(user_ss, dtype=float)
        ok = np.isfinite(us)
        cnt = ok.sum(axis=0)
        tot = np.where(ok, us, 0.0).sum(axis=0)
        use = (cnt > 0) & (user_dof > 0)
        if use.any():
            p = np.where(use, chi2_lower(tot, cnt * user_dof), 1.0)
            k = int(np.argmin(p))
            out["user_tensor"] = (float(min(1.0, p[k] * int(use.sum()))), k)
    return out


def clipping_step(excess: np.ndarray, sigma: float) -> tuple:
    """One step's largest-excess test: every block observation of a correct step is at most its
    bound (1 for a canary row, ``1 + r`` for a coordinate shared with ``r`` present partner rows,
    each clipped to at most 1) plus ``N(0, sigma^2)`` noise, so with ``z = (|o| - bound) /
    sigma`` the p-value ``min(1, 2 n Phi(-max z))`` (Gaussian tail, Bonferroni over the ``n``
    observations of the step) is valid whatever their dependence.

    Returns
    -------
    (p, index of the largest excess, largest excess in sigma)
    """
    from scipy.special import ndtr

    if excess.size == 0:
        return 1.0, None, float("nan")
    i = int(np.argmax(excess))
    z = float(excess[i]) / sigma
    return float(min(1.0, 2 * excess.size * ndtr(-z))), i, z


def contribution_mean(y: np.ndarray, sigma: float) -> tuple:
    """Test "a canary's clipped contribution along its own direction is at most 1 (in units of
    ``C``)" from the sign-corrected observations ``y`` of the canary kind at the steps each
    canary was in the batch: for a correct step ``y = a + e`` with one ``a <= 1`` for every
    canary of the kind (its rows all have the same norm, and the clipping of every
    implementation we know scales a row by a function of its norm) and ``e`` i.i.d.
    ``N(0, sigma^2)`` (distinct coordinates, fresh noise per step), so ``z = (mean y - 1)
    sqrt(n) / sigma`` is at most standard normal: ``p = Phi(-z)`` (one-sided).

    Returns
    -------
    (p, estimate of a, its standard error, n)
    """
    from scipy.stats import norm

    n = int(y.size)
    if n == 0:
        return 1.0, float("nan"), float("nan"), 0
    a = float(y.mean())
    se = sigma / math.sqrt(n)
    return float(norm.sf((a - 1.0) / se)), a, se, n


def run_clipping_check(run, beta: float = 0.05) -> dict:
    """The mean-contribution clipping check on a :class:`~dpaudit.dpsgd.TrainingRun` of the
    reference trainer (:func:`~dpaudit.dpsgd.train_with_canaries`) with a Dirac-like canary kind
    (``"dirac"``, ``"alternating"``, ``"signed"``, ``"split"``): what :class:`~dpaudit.dpsgd.Canaries`
    runs as ``clipping:mean``, for the reference trainer's entry point.

    Validity: a Dirac-like canary has coordinates of its own that no real gradient touches, so its
    sign-corrected observation ``pattern[t, i] * o[t, i]`` at a step it was in is ``a + e`` with
    one clipped contribution ``a <= 1`` (units of ``C``; every canary has the same norm) and ``e``
    i.i.d. ``N(0, s^2)``; :func:`contribution_mean` tests ``a <= 1`` with the noise scale
    ``max(sigma, U)``, ``U`` the upper confidence bound of :func:`noise_upper` from the excluded
    canaries' observations (pure noise on distinct coordinates, so independent of the tested
    ones) at ``beta / 10``; the mean test gets the other ``0.9 beta``. A correct step with more
    noise than claimed, or a smaller clipping norm, is inside the null. Per-tensor clipping of a
    ``"split"`` canary (4 dedicated tensors: variant ``"per-layer-clipping"``) gives ``a = 2``,
    no clipping ``a = canary_norm / C``.

    Parameters
    ----------
    run : TrainingRun
        With ``observations`` (steps, m), ``mask`` (m,), ``participation`` (steps, m) and a
        ``pattern`` (Dirac-like kinds only).
    beta : float
        Probability that a correct run is accused.

    Returns
    -------
    dict
        ``p_value`` (of the mean test), ``level`` (``0.9 beta``), ``violated`` (``p_value <=
        level``), ``contribution`` (the estimate of ``a``, units of ``C``), ``standard_error``,
        ``observations`` (how many), ``noise_ratio_upper`` (``U / sigma``, at least 1).

    Raises
    ------
    ValueError
        On a run without a sign pattern (kinds ``"random"``, ``"spread"``, ``"input"``: real
        gradients interfere, the law above does not hold), no excluded canary, or a bad ``beta``.

    References
    ----------
    Nasr et al. (2023) (Dirac gradient canaries observed at every step); ``docs/dpsgd.md`` §10.
    """
    from .._validate import check_probability

    beta = check_probability(beta, "beta")
    if getattr(run, "pattern", None) is None:
        raise ValueError("run_clipping_check needs a run of a Dirac-like canary kind ('dirac', 'alternating', "
                         f"'signed', 'split'), got canary kind {run.details.get('canary_kind')!r}")
    o = np.asarray(run.observations, dtype=float)
    mask = np.asarray(run.mask, dtype=bool)
    part = np.asarray(run.participation, dtype=bool)
    if mask.all():
        raise ValueError("run_clipping_check needs at least one excluded canary (mask 0) to bound the noise")
    sigma = float(run.config.noise_multiplier)
    z = o[:, ~mask] / sigma
    u = noise_upper(np.array([float(np.square(z).sum())]), np.array([z.size]), beta / 10)
    y = (np.asarray(run.pattern, dtype=float) * o)[part]
    p, a, se, n = contribution_mean(y, u * sigma)
    level = 0.9 * beta
    return {"p_value": p, "level": level, "violated": bool(p <= level), "contribution": a, "standard_error": se,
            "observations": n, "noise_ratio_upper": u}


def coupling_ols(y: np.ndarray, included: np.ndarray, partners: np.ndarray, sigma: float) -> tuple:
    """The paired canaries' test: "a canary's presence moves its coordinate by at most 1, whatever
    its partners do".

    A paired canary has partner records, dataset rows with gradient ``-partner_norm`` times the
    canary's sign on the canary's own coordinate, always in the dataset and Poisson-sampled at
    rate ``q`` independently of everything (never of the canary's coin: sampling tied to the
    coin would reveal it). They are placed next to the canary when both are in a batch, so that
    clipping of small groups of rows, or any coupling of neighbouring rows, puts them together.
    For a correct step the sign-corrected observation of canary ``i`` at step ``t`` is

        y = a I - b N + e,   e ~ N(0, sigma^2) i.i.d.,

    with ``I`` the canary's participation, ``N`` the number of its partners in the batch (both
    known to the auditor, independent of the noise) and ``a, b`` the clipped contributions of a
    canary row and of a partner row (the same for all of them: equal norms). Least squares with
    the known ``sigma`` gives ``a_hat ~ N(a, sigma^2 [(X'X)^-1]_11)`` exactly; ``p =
    Phi(-(a_hat - 1) / se)`` tests ``a <= 1``. With rows clipped in groups a canary's presence
    flips its group's clipped sum from ``-C`` (partners alone) to ``+C``: ``a`` near 2.

    Returns
    -------
    (p, a_hat, se, b_hat)
    """
    from scipy.stats import norm

    X = np.stack([included.astype(float).ravel(), -partners.astype(float).ravel()], axis=1)
    y = y.ravel()
    xtx = X.T @ X
    if X.shape[0] < 3 or abs(np.linalg.det(xtx)) < 1e-9 * max(1.0, float(np.trace(xtx))) ** 2:
        return 1.0, float("nan"), float("nan"), float("nan")
    inv = np.linalg.inv(xtx)
    coef = inv @ (X.T @ y)
    se = sigma * math.sqrt(inv[0, 0])
    return float(norm.sf((coef[0] - 1.0) / se)), float(coef[0]), float(se), float(coef[1])


def coupling_crowd(y: np.ndarray, canaries: np.ndarray, partners: np.ndarray, sigma: float) -> tuple:
    """The crowd test: "a crowd canary's presence moves the crowd coordinate by at most 1, whatever
    the partners do and wherever the rows sit", for coupling whose group structure the auditor does
    not know (groups of consecutive rows of any size, rows ``k`` apart, rows picked by a hash).

    At every step :class:`~dpaudit.dpsgd.Canaries` puts a *crowd* into the batch: ``P_t`` partner
    rows (gradient ``-2,000 C`` times the step's crowd sign on one shared coordinate of a dedicated
    tensor, the *crowd coordinate*) and, at the steps of a fair coin of its own, ``M_t`` crowd
    canaries (``+20,000 C`` times the sign on the same coordinate), all at random positions among the
    batch's rows. ``M_t`` and ``P_t`` are fixed fractions of the step's other rows, known to the
    auditor. For a correct step every row's contribution is its own clipped gradient: the crowd
    canaries are identical rows, so each contributes the same ``a`` (at most 1 in units of ``C``),
    the partners the same ``b``; no other row touches the coordinate. The sign-corrected
    observation is

        y_t = a m_t - b P_t + e_t,   m_t = M_t (coin on) or 0,  e_t ~ N(0, s^2) i.i.d.,

    with ``s`` at most the noise scale, whatever the real gradients, the positions and ``b`` are
    (partners clipped to less than ``C`` or dropped included). Least squares on ``(m, -P)`` (no
    intercept) gives ``a_hat ~ N(a, s^2 [(X'X)^-1]_11)`` exactly; ``p = Phi(-(a_hat - 1) / se)``
    tests ``a <= 1``. The scale used is ``max(sigma, s_off)``: ``sigma`` (the caller's upper bound
    on the noise scale) alone makes the test exact. A clipping norm that changes from step to step
    (a schedule, adaptive clipping) is exact too when ``y`` is read in units of each step's norm
    (``Canaries.begin_step(max_grad_norm=)``: ``a_t = b_t = 1``); ``s_off``, the residual standard
    deviation of the steps without crowd canaries, is a safeguard for a norm that changes without
    the caller being told, independently of the coin (``a_t = b_t`` then vary and ``b_t P_t``
    inflates the residuals, at least as much at those steps, where ``P_t`` is not offset by
    ``m_t``): approximately valid only. The steps *with* crowd canaries are left out of ``s_off``
    because under group clipping their residuals also carry the random number of groups a
    canary flips (power, not validity).

    Why it sees unknown groups: the norms dwarf every other row, so under group clipping a group
    that holds a crowd canary contributes ``+1`` and one that holds partners only ``-1``. A canary
    that shares its group with partners flips that group from ``-1`` to ``+1`` (2 where a correct
    step gives ``a - k b``, that is ``1 - k``); with the partners a fraction ``f`` of the batch that
    happens with probability about ``1 - (1 - f)^(g - 1)`` for groups of ``g`` rows *whatever rows
    form a group*. Two crowd canaries in one group count once (a loss of 1), so the canaries are
    kept fewer than the partners. All crowd canaries come and go together, so the design's spread
    of ``m_t`` is ``M / 2`` (not ``sqrt(M) / 2``): one noisy coordinate carries the evidence of
    every canary of the step.

    Parameters
    ----------
    y : array (T,)
        Sign-corrected observations of the crowd coordinate, units of ``C``.
    canaries, partners : array (T,)
        Crowd canaries (``m_t``) and partner rows (``P_t``) in each step.
    sigma : float
        Upper bound on the noise scale (units of ``C``).

    Returns
    -------
    (p, a_hat, se, b_hat)
        ``p`` 1 (and nan estimates) with fewer than 3 steps or a singular design (the coin never
        changed, or no partners).

    Raises
    ------
    ValueError
        On arrays of different lengths, non-finite values or negative counts, or ``sigma <= 0``.

    References
    ----------
    ``docs/dpsgd.md`` §10 ("Coupling").
    """
    from scipy.stats import norm

    y = np.asarray(y, dtype=float).ravel()
    m = np.asarray(canaries, dtype=float).ravel()
    P = np.asarray(partners, dtype=float).ravel()
    if not (y.size == m.size == P.size):
        raise ValueError(f"y, canaries and partners must have one entry per step, got {y.size}, {m.size}, {P.size}")
    if not (np.isfinite(y).all() and np.isfinite(m).all() and np.isfinite(P).all()):
        raise ValueError("y, canaries and partners must be finite")
    if (m < 0).any() or (P < 0).any():
        raise ValueError(f"counts must be >= 0, got min canaries {m.min()}, min partners {P.min()}")
    if not (isinstance(sigma, (int, float, np.floating)) and sigma > 0 and math.isfinite(sigma)):
        raise ValueError(f"sigma must be a positive number, got {sigma!r}")
    X = np.stack([m, -P], axis=1)
    xtx = X.T @ X
    if X.shape[0] < 3 or abs(np.linalg.det(xtx)) < 1e-9 * max(1.0, float(np.trace(xtx))) ** 2:
        return 1.0, float("nan"), float("nan"), float("nan")
    inv = np.linalg.inv(xtx)
    coef = inv @ (X.T @ y)
    off = m == 0  # the steps without crowd canaries: their residuals hold the noise and any drift of b P_t
    res = (y - X @ coef)[off]
    s = max(float(sigma), math.sqrt(float(res @ res) / (res.size - 1)) if res.size > 1 else 0.0)
    se = s * math.sqrt(inv[0, 0])
    return float(norm.sf((coef[0] - 1.0) / se)), float(coef[0]), float(se), float(coef[1])


def nonfinite_association(cancelled: np.ndarray, nonfinite_rows: np.ndarray) -> tuple:
    """Fisher's exact test (one-sided): are steps the user cancelled (released nothing) more
    frequent when dpaudit put rows with a non-finite gradient in them? For a correct step a
    cancellation never depends on the data (a skipped accumulation step, an empty Poisson batch),
    while which steps hold non-finite rows is dpaudit's own coin and sampling, independent of
    everything: conditionally on the margins the table is hypergeometric, so the p-value is
    exact.

    Returns
    -------
    (p, table)
    """
    from scipy.stats import fisher_exact

    c = np.asarray(cancelled, dtype=bool)
    h = np.asarray(nonfinite_rows, dtype=bool)
    table = np.array([[int((c & h).sum()), int((c & ~h).sum())], [int((~c & h).sum()), int((~c & ~h).sum())]])
    if not c.any() or not h.any() or h.all():
        return 1.0, table
    return float(fisher_exact(table, alternative="greater")[1]), table


def nonfinite_contrast(groups, sigma: float) -> tuple:
    """Do other canaries' contributions depend on whether rows with a non-finite gradient were in
    the step? ``groups`` is a list of ``(y_heads, y_tails)`` (sign-corrected observations of
    participating canaries of one kind at steps with and without non-finite rows). For a correct
    step each has mean ``a`` (its own clipped row) on both sides and i.i.d. ``N(0, sigma^2)``
    noise, so every ``z = (mean_h - mean_t) / (sigma sqrt(1/n_h + 1/n_t))`` is standard normal
    and independent; Stouffer's sum weighted by ``sqrt(n)``, two-sided. A step that drops the
    whole batch (or rescales it) when it meets a NaN row moves every ``mean_h``.

    Returns
    -------
    (p, z)
    """
    from scipy.stats import norm

    num, den = 0.0, 0.0
    for yh, yt in groups:
        if yh.size == 0 or yt.size == 0:
            continue
        z = (yh.mean() - yt.mean()) / (sigma * math.sqrt(1 / yh.size + 1 / yt.size))
        w = math.sqrt(yh.size + yt.size)
        num += w * z
        den += w * w
    if den == 0:
        return 1.0, float("nan")
    z = num / math.sqrt(den)
    return float(min(1.0, 2 * norm.sf(abs(z)))), float(z)


def chernoff_p(logmgf, s: float, mean: float, span: float) -> float:
    """Two-sided Chernoff p-value of an observed ``s`` of a statistic ``S`` whose log moment
    generating function ``logmgf(l) = log E exp(l S)`` is known exactly: ``P(S >= s) <= exp(inf_{l
    > 0} logmgf(l) - l s)`` (Markov's inequality on ``exp(l S)``), likewise below, and ``p = min(1,
    2 min(upper, lower))``. Valid (conservative) at every level, deterministic; ``span`` is the
    scale of ``S``'s increments, which bounds the search over ``l``.

    Parameters
    ----------
    logmgf : callable float -> float
        ``l -> log E exp(l S)`` under the null, exact (or an upper bound: still valid).
    s : float
        The observed value of ``S``.
    mean : float
        ``E S`` under the null: the side of ``s`` decides which tail is bounded.
    span : float
        Largest absolute increment of ``S`` (same units as ``s``), ``> 0``.

    Returns
    -------
    float in ``[0, 1]``.

    Raises
    ------
    ValueError
        If ``s`` or ``mean`` is not finite, or ``span`` is not a finite positive number.
    """
    from scipy.optimize import minimize_scalar

    if not (math.isfinite(s) and math.isfinite(mean)):
        raise ValueError(f"chernoff_p: the statistic and its mean must be finite, got s={s!r}, mean={mean!r}")
    if not (math.isfinite(span) and span > 0):
        raise ValueError(f"chernoff_p: span must be a finite positive number, got {span!r}")
    out = []
    for sign in (1.0, -1.0):
        if sign * (s - mean) <= 0:
            out.append(1.0)
            continue
        f = lambda lam: logmgf(sign * lam) - sign * lam * s  # noqa: E731 - convex in lam
        hi = 200.0 / max(span, 1e-300)
        r = minimize_scalar(f, bounds=(0.0, hi), method="bounded", options={"xatol": hi * 1e-9})
        out.append(float(min(1.0, math.exp(min(0.0, min(float(r.fun), f(hi)))))))
    return float(min(1.0, 2 * min(out)))


def scale_dependence(log_scale: np.ndarray, covariate: np.ndarray, trials: int, rate: float) -> tuple:
    """Does the step's noise scale move with which canaries were in it? ``log_scale[t]``: the log
    root-mean-square of the step's null coordinates (units of ``sigma``); ``covariate[t]``: a
    count of dpaudit's own sampling, i.i.d. ``Binomial(trials, rate)`` across steps by construction
    and independent of everything else (the canary and partner rows dpaudit put in the step:
    ``trials`` Bernoulli(``q``) draws; its non-finite coin: ``Binomial(1, 1/2)``). Under a correct
    step the noise (whatever its scale, even one that changes from step to step on a public
    schedule) does not depend on that sampling, so conditionally on ``log_scale`` the statistic
    ``S = sum_t w_t c_t`` with ``w_t = log_scale[t] - mean`` is a weighted sum of independent
    binomials whose moment generating function is exact: :func:`chernoff_p` gives a valid
    two-sided p-value. A step scaled by a data-dependent number (the realised batch size, a norm
    of the batch) shows here; at ``q = 1`` the sampling never varies and the test has no power
    (``docs/dpsgd.md`` §10: the many-run harness).

    Returns
    -------
    (p, correlation between log_scale and covariate)
    """
    x = np.asarray(log_scale, dtype=float)
    c = np.asarray(covariate, dtype=float)
    ok = np.isfinite(x)
    x, c = x[ok], c[ok]
    if x.size < 3 or np.ptp(c) == 0 or np.ptp(x) == 0 or not 0 < rate < 1:
        return 1.0, float("nan")
    w = x - x.mean()
    r = float(np.corrcoef(x, c)[0, 1])
    lq, l1q = math.log(rate), math.log1p(-rate)
    logmgf = lambda lam: trials * float(np.logaddexp(l1q, lq + lam * w).sum())  # noqa: E731
    return chernoff_p(logmgf, float(w @ c), 0.0, float(np.abs(w).max() * trials)), r


def dispersion_p(counts_per_example: np.ndarray, steps: int, rate: float) -> float:
    """Two-sided test of "the per-example counts over ``steps`` steps are i.i.d.
    Binomial(``steps``, ``rate``)" by their spread: ``S = sum_j (c_j - steps rate)^2``, whose
    moment generating function is exact (a sum of ``m`` i.i.d. terms of a known finite law), so
    :func:`chernoff_p` gives a valid p-value. Shuffled batches (every example once per epoch: ``S``
    near 0) and non-uniform samplers (``S`` too large) show.

    Parameters
    ----------
    counts_per_example : array, shape (m,)
        How many of the ``steps`` batches each of ``m`` examples was in (integers in ``[0, steps]``).
    steps : int
        Number of batches, ``>= 1``.
    rate : float
        The claimed Poisson sampling rate ``q``, in ``(0, 1)``.

    Returns
    -------
    float: the two-sided p-value (1 when ``m < 2``: nothing to compare).

    Raises
    ------
    ValueError
        If ``steps < 1``, ``rate`` is outside ``(0, 1)``, or a count is not an integer in
        ``[0, steps]``.
    """
    from scipy.special import logsumexp
    from scipy.stats import binom

    if int(steps) != steps or steps < 1:
        raise ValueError(f"dispersion_p: steps must be an integer >= 1, got {steps!r}")
    if not 0 < rate < 1:
        raise ValueError(f"dispersion_p: rate must be in (0, 1), got {rate!r}")
    c = np.asarray(counts_per_example, dtype=float)
    if c.size and (not np.all(np.isfinite(c)) or np.any(c < 0) or np.any(c > steps) or np.any(c != np.round(c))):
        raise ValueError(f"dispersion_p: counts must be integers in [0, {steps}], got min {np.nanmin(c)!r}, max {np.nanmax(c)!r}")
    m = c.size
    if m < 2:
        return 1.0
    k = np.arange(steps + 1)
    lp = binom.logpmf(k, steps, rate)
    d2 = np.square(k - steps * rate)
    s = float(np.square(c - steps * rate).sum())
    logmgf = lambda lam: m * float(logsumexp(lp + lam * d2))  # noqa: E731
    return chernoff_p(logmgf, s, m * steps * rate * (1 - rate), float(d2.max()))


@dataclass
class Schedule:
    """How ``beta`` is spent over the steps of an online audit (fixed before the run).

    Per-step tests (a step's noise, its largest clipping excess, a non-finite update): step ``t``
    gets ``level * w_t`` with ``sum_t w_t <= 1``: ``w_t = 1 / steps`` when the number of steps is
    declared (the same Bonferroni correction as the audit after training), else ``1 / (t (t +
    1))``. Tests pooled over the steps so far (and the certified bound) are evaluated at
    checkpoints ``1, 2, 4, ...`` (and at ``steps``), checkpoint ``j`` at ``level * omega_j``,
    ``sum_j omega_j <= 1``. Whatever step the user stops at, the probability that a correct run
    was ever accused is at most ``beta`` (union bound over the steps and checkpoints): the audit
    is anytime-valid.
    """

    steps: int = 0  # 0: not declared
    checkpoints: list = field(default_factory=list)

    def __post_init__(self):
        if self.steps:
            cps, c = [], 1
            while c < self.steps:
                cps.append(c)
                c *= 2
            cps.append(self.steps)
            self.checkpoints = cps

    def step_weight(self, t: int) -> float:
        if self.steps:
            return 1.0 / self.steps if t <= self.steps else 0.0
        return 1.0 / (t * (t + 1))

    def checkpoint_weight(self, t: int) -> float:
        """``omega`` of step ``t`` if it is a checkpoint, else 0."""
        if self.steps:
            return 1.0 / len(self.checkpoints) if t in self.checkpoints else 0.0
        j = int(round(math.log2(t))) if t >= 1 else -1
        if t < 1 or 2 ** j != t:
            return 0.0
        return 1.0 / ((j + 1) * (j + 2))

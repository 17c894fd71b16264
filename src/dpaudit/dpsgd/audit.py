"""Audit one DP-SGD run from its canaries' white-box observations, next to the accountant.

:func:`audit_run` turns a :class:`~dpaudit.dpsgd.reference.TrainingRun` (every step's noisy
gradient sum on each gradient canary, and which canaries were included) into:

* **certified**: the one-run audit of :func:`dpaudit.scores.one_run_audit` on per-canary scores
  (several score functions, ``beta`` split among them, chosen before looking):

  - ``"lr"``: ``sum_t log(1 - q + q exp((o_t - 1/2) / sigma^2))``, the likelihood ratio of the
    claimed Poisson-subsampled Gaussian (for ``q = 1`` the sum of the observations);
  - ``"spread"``: the standard deviation of a canary's observations over the steps, which grows
    for included canaries; it sees noise shared across steps, which the ``"lr"`` score (built on
    independent steps) does not;
  - ``"whitened"``: the canary's sign pattern against its observations after whitening them
    by the steps' covariance, estimated across *all* canaries (the mask is not read), i.e. a
    generalised least-squares score ``p_i' (S + lambda I)^-1 o_i``. For independent steps it is
    the plain (sign-corrected) sum; for noise correlated across steps (state shared across
    steps: a re-seeded generator, noise reused every epoch, correlated noise of any structure)
    it projects the shared noise out: with noise reused at every step and canaries whose sign
    changes between steps (``canary_kind="alternating"`` or ``"signed"``) it separates included
    from excluded canaries exactly, at any ``q``;
  - ``"sum"``: the plain sum (a score that assumes nothing about ``q``);
  - ``"final"``: input canaries only, minus each canary's loss under the final model (the
    black-box view: no step is observed).

  The verdict compares the largest certified epsilon lower bound with the accountant's epsilon
  (an upper bound, :func:`dpaudit.accounting.get_epsilon`) at the same ``(sigma, q, steps,
  delta)``: a violation when the bound exceeds it.
* **estimates** (labelled so, no confidence statement): the per-step mechanism fitted from the
  sign-corrected observations ``pattern * o`` (noise from excluded canaries, signal from included ones at the steps they were
  sampled) composed by a PLD like the accountant's, without its certification (Nasr et al.
  2023), and paper 001's histogram PLD of the per-step observations composed ``steps`` times
  (:func:`dpaudit.scores.estimate_pld`).

References: Nasr et al. (2023) §4–§5; Steinke, Nasr, Jagielski (2023); Mahloujifar, Melis,
Chaudhuri (2025); paper 001 §9.2; ``docs/dpsgd.md``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from .._validate import check_delta, check_probability
from .bounds import SUSPECT_Z, _TAIL_SD, _gaussian_loss_range, suspect_assessment  # noqa: F401

__all__ = ["DEFAULT_SCORES", "DPSGDAudit", "SCORE_FUNCTIONS", "audit_run", "canary_scores", "pooled_audit",
           "suspect_assessment", "whitened_scores"]

SCORE_FUNCTIONS = ("lr", "spread", "whitened", "sum", "final")
DEFAULT_SCORES = ("lr", "spread", "whitened")
#: Weights of the score functions in the split of ``beta`` (fixed before looking; a score not
#: listed weighs 1): the claimed mechanism's likelihood ratio, the most powerful score for a correct
#: run and for wrong sensitivity or noise scale, gets half of ``beta`` with the default three.
SCORE_WEIGHTS = {"lr": 2.0}


def whitened_scores(observations, pattern=None, *, ridge: float = 1e-6) -> np.ndarray:
    """Generalised least-squares canary scores: each canary's sign pattern against its
    observations, whitened by the steps' covariance estimated across all canaries.

    ``S`` is the ``(steps, steps)`` covariance of the columns ``o[:, i]`` over the canaries
    (centred; the inclusion mask is never read, so the scores are a function of the released
    observations and the public patterns only, and the one-run audit's bound stays valid
    whatever the implementation does). The score of canary ``i`` is
    ``p_i' (S + lambda I)^-1 o_i`` with ``lambda = ridge * trace(S) / steps``.

    * Independent steps (the accountant's model): ``S`` is ``sigma^2 I`` plus the canaries'
      own rank-one-ish signal, and the score is the sign-corrected sum ``sum_t p[t, i] o[t, i]``
      up to a common factor (Sherman–Morrison), the likelihood-ratio score at ``q = 1``.
    * Noise correlated across steps (a generator re-seeded every step, noise reused every
      epoch, any correlation that is the same for every canary coordinate): the shared noise
      spans few directions of ``S`` with large variance, which the inverse projects out; a
      canary whose pattern is not in their span (``(-1)^t`` or random signs against noise
      reused at every step, which spans ``1``) is then seen without noise.

    The full ``S`` needs many more canaries than steps to be estimated, and ``O(steps^2)``
    memory and ``O(steps^3)`` time: it is used for at most :data:`WHITEN_FULL_MAX_STEPS` steps
    and at least ``WHITEN_FULL_MIN_RATIO`` canaries per step. Otherwise (long training runs)
    ``S`` is modelled as spiked, the noise bulk plus the few directions whose variance exceeds
    its Marchenko–Pastur edge by half (at most :data:`WHITEN_MAX_RANK`, found by a seeded
    randomised SVD in ``O(steps m)`` time per direction): shared noise of low rank (reused every
    step, every epoch of up to 64 steps, a common part) is projected out the same way, and with
    no such direction the score is the plain sign-corrected sum. Correlations spread over many
    directions (a slowly varying AR process over thousands of steps) are only partly whitened.

    Parameters
    ----------
    observations : array, shape (steps, m)
        ``o[t, i]`` (:class:`~dpaudit.dpsgd.reference.TrainingRun`), ``m >= 2``.
    pattern : array, shape (steps, m) or (steps,), optional
        Each canary's sign at each step (default all ``+1``).
    ridge : float
        Relative ridge ``> 0`` (keeps ``S`` invertible when the noise is exactly shared).

    Returns
    -------
    ndarray, shape (m,)

    Raises
    ------
    ValueError
        On observations that are not a finite 2-D array, a pattern of another shape, or a
        ridge that is not positive.

    References
    ----------
    Aitken (1936) (generalised least squares); Steinke, Nasr, Jagielski (2023) (any function of
    the released output is a valid one-run score); Johnstone (2001) (spiked covariance model);
    Halko, Martinsson, Tropp (2011) (randomised SVD); ``docs/dpsgd.md`` §3 (``noise-reused``).
    """
    o = _observations(observations)
    p = None if pattern is None else _pattern(pattern, o.shape)
    if not (ridge > 0 and math.isfinite(ridge)):
        raise ValueError(f"ridge must be a positive number, got {ridge!r}")
    return _whitened(o, p, ridge)


#: The full ``(steps, steps)`` covariance is used when ``steps <= WHITEN_FULL_MAX_STEPS`` and
#: there are at least ``WHITEN_FULL_MIN_RATIO * steps`` canaries (an accurate estimate, an
#: affordable solve); otherwise the spiked model of :func:`_whitened_spiked`.
WHITEN_FULL_MAX_STEPS = 512
WHITEN_FULL_MIN_RATIO = 10
#: Most shared-noise directions the spiked model projects out.
WHITEN_MAX_RANK = 64


def _whitened(o: np.ndarray, p, ridge: float) -> np.ndarray:
    """:func:`whitened_scores` on checked arguments (``p`` None: all ``+1``)."""
    T, m = o.shape
    if T > WHITEN_FULL_MAX_STEPS or m < WHITEN_FULL_MIN_RATIO * T:
        return _whitened_spiked(o, p, ridge)
    c = o - o.mean(axis=1, keepdims=True)
    S = c @ c.T / max(1, m - 1)
    lam = ridge * max(float(np.trace(S)) / T, 1e-300)
    w = np.linalg.solve(S + lam * np.eye(T), o)
    return (w if p is None else p * w).sum(axis=0)


def _top_left_singular(c: np.ndarray, k: int, power: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` leading left singular vectors ``(T, k)`` and singular values of ``c`` (``T x m``)
    by a randomised range finder with ``power`` power iterations (Halko, Martinsson, Tropp 2011,
    Algorithms 4.4 and 5.1), from a fixed seed: the same input gives the same output. Cost
    ``O(T m k)``, memory ``O((T + m) k)`` beyond ``c``."""
    T, m = c.shape
    rng = np.random.default_rng(0)
    Y = c @ rng.standard_normal((m, k))
    for _ in range(power):
        Q, _ = np.linalg.qr(Y)
        Q, _ = np.linalg.qr(c.T @ Q)
        Y = c @ Q
    Q, _ = np.linalg.qr(Y)
    U, sv, _ = np.linalg.svd(Q.T @ c, full_matrices=False)
    return Q @ U, sv


def _whitened_spiked(o: np.ndarray, p, ridge: float) -> np.ndarray:
    """Generalised least squares under a spiked covariance model, for many steps or few
    canaries: ``S = U diag(lambda) U' + s2 (I - U U')`` with ``U`` the directions whose sample
    variance exceeds the noise bulk's Marchenko–Pastur edge ``s2 (1 + sqrt(T / m))^2`` by half
    (at most :data:`WHITEN_MAX_RANK` of them). The score is ``s2 p' S^-1 o``, computed as
    ``p' (I - U U') o + p' U diag(s2 / lambda) U' o`` (no cancellation in the second part). With
    no direction above the edge it is the plain sign-corrected sum, the likelihood-ratio score at
    ``q = 1``; noise shared across steps (a reused vector, a period, a common part) spans a few
    directions of large variance, which it projects out like the full covariance does."""
    T, m = o.shape
    if T == 1:
        return (o if p is None else p * o)[0]
    c = o - o.mean(axis=1, keepdims=True)
    total = float(np.einsum("ij,ij->", c, c)) / max(1, m - 1)
    k = min(T - 1, max(1, m - 1), WHITEN_MAX_RANK + 8)
    U, sv = _top_left_singular(c, k)
    lam = sv**2 / max(1, m - 1)
    edge = 1.5 * (1.0 + math.sqrt(T / m)) ** 2
    floor = max(ridge * total / T, 1e-300)
    # The bulk level: the mean variance of the directions not kept, kept = above the edge at that
    # level (iterated from the mean of all; it only grows the kept set, so it stops).
    keep = np.zeros(lam.size, dtype=bool)
    while True:
        s2 = max((total - float(lam[keep].sum())) / (T - int(keep.sum())), floor)
        new = lam > edge * s2
        new[WHITEN_MAX_RANK:] = False
        if np.array_equal(new, keep):
            break
        keep = new
    U, lam = U[:, keep], lam[keep]
    proj = U.T @ o
    w = o - U @ proj
    w += U @ ((s2 / lam)[:, None] * proj)
    return (w if p is None else p * w).sum(axis=0)


def _observations(observations) -> np.ndarray:
    o = np.asarray(observations, dtype=float)
    if o.ndim != 2 or not np.all(np.isfinite(o)):
        raise ValueError(f"observations must be a finite array of shape (steps, m), got shape {o.shape}")
    return o


def _pattern(pattern, shape) -> np.ndarray:
    if pattern is None:
        return np.ones(shape)
    p = np.asarray(pattern, dtype=float)
    if p.ndim == 1:
        p = p[:, None]
    if p.shape[0] != shape[0] or p.shape[1] not in (1, shape[1]) or not np.all(np.isfinite(p)):
        raise ValueError(f"pattern must have shape (steps,) or (steps, m) = {shape}, got {np.shape(pattern)}")
    return np.broadcast_to(p, shape)


def canary_scores(observations, noise_multiplier: float, sampling_rate: float, kind: str = "lr",
                  pattern=None) -> np.ndarray:
    """Per-canary scores from white-box observations (higher: more likely included).

    Parameters
    ----------
    observations : array, shape (steps, m)
        ``o[t, i]``, in units of the clipping norm (:class:`~dpaudit.dpsgd.reference.TrainingRun`).
    noise_multiplier, sampling_rate : float
        The claimed ``sigma`` and ``q`` (the ``"lr"`` score's model).
    kind : {"lr", "spread", "whitened", "sum"}
        See the module docstring (``"final"`` is not a function of the observations).
    pattern : array, shape (steps, m) or (steps,), optional
        The canaries' signs at each step (``TrainingRun.pattern``; default all ``+1``):
        ``"lr"`` and ``"sum"`` read the sign-corrected ``pattern * o`` (for the correct
        implementation the same law as a Dirac canary's), ``"whitened"`` weighs by it,
        ``"spread"`` reads the raw observations.

    Returns
    -------
    ndarray, shape (m,)

    Raises
    ------
    ValueError
        On an unknown kind, observations that are not a finite 2-D array or a pattern of
        another shape.
    """
    if kind not in SCORE_FUNCTIONS or kind == "final":
        raise ValueError(f"unknown score kind {kind!r}; choose from {SCORE_FUNCTIONS}")
    o = _observations(observations)
    p = None if pattern is None or kind == "spread" else _pattern(pattern, o.shape)  # "spread" reads no pattern
    return _scores(o, p, noise_multiplier, sampling_rate, kind)


def _scores(o: np.ndarray, p, noise_multiplier: float, sampling_rate: float, kind: str) -> np.ndarray:
    """:func:`canary_scores` on checked observations ``o`` and a checked pattern ``p`` of the same
    shape, or ``None`` for all ``+1`` (then nothing is multiplied by it: the same numbers, since
    ``x * 1.0 == x``)."""
    if kind == "spread":
        return o.std(axis=0) if o.shape[0] > 1 else np.abs(o[0])
    if kind == "whitened":
        return _whitened(o, p, 1e-6)
    signed = o if p is None else o * p
    if kind == "sum":
        return signed.sum(axis=0)
    # "lr": sum_t log(1 - q + q exp((o_t - 1/2) / sigma^2)), the same operations in place
    s2, q = float(noise_multiplier) ** 2, float(sampling_rate)
    z = np.subtract(signed, 0.5)
    z /= s2
    if q >= 1.0:
        return z.sum(axis=0)
    z += math.log(q)
    return np.logaddexp(math.log1p(-q), z, out=z).sum(axis=0)


@dataclass(frozen=True)
class DPSGDAudit:
    """What one DP-SGD run with gradient canaries proves, next to what its accountant claims.

    Attributes
    ----------
    accountant_epsilon : float
        The accountant's epsilon at ``delta`` for the claimed ``(sigma, q, steps)``: an upper
        bound if the implementation is what the accountant assumes.
    accountant_kind : str
        Which way the accountant's number errs (``AccountingResult.kind``).
    epsilon_lower_bound : float
        Certified (probability ``>= 1 - beta``), the headline: the largest one-run bound over the
        score functions (``beta`` split over them by :data:`SCORE_WEIGHTS`). With ``claim=True`` (the default) it is
        the bound **against the claimed DP-SGD family** (``docs/scores.md`` §6d): every claim
        "DP-SGD at noise multiplier ``s``, the claimed ``q`` and steps" with ``s >=``
        :attr:`claim_parameter_bound` is refuted, so any such accountant must report at least
        this epsilon. With ``claim=False`` it is :attr:`epsilon_lower_bound_any`.
    epsilon_lower_bound_any : float
        Certified for *any* mechanism (the one-run f-DP test of ``(eps, delta)``-DP, same split
        and the same guessing rules): a lower bound on the implementation's own epsilon at
        ``delta``.
    claim_parameter_bound : float
        ``s_ub`` of the headline (``inf`` when nothing is refuted; ``nan`` with ``claim=False``).
    mu_lower_bound : float
        Certified lower bound on the parameter of any Gaussian-DP guarantee, same split.
    violated : bool
        The claimed mechanism is refuted (``claim=True``: the claim ``s = sigma``, with the
        accountant's certified ``(eps, delta)`` added to it, for some score; ``claim=False``:
        ``epsilon_lower_bound > accountant_epsilon``): the implementation leaks more than
        accounted. Wrong with probability ``<= beta`` for a correct implementation.
    best_score : str
        The score function that gave ``epsilon_lower_bound``.
    one_run : dict
        Score function -> :class:`~dpaudit.scores.OneRunAudit`.
    epsilon_estimate_fit, epsilon_estimate_pld : float
        Estimates (no confidence statement): the fitted per-step mechanism composed by the
        accountant, and the histogram PLD composed ``steps`` times. ``nan`` when not computed
        (never a silent ``inf``): ``estimate_notes`` says why. Read them through
        :meth:`estimate_text`, which never gives a bare number.
    fit : dict
        The fitted per-step signal, noise and noise multiplier.
    delta, beta : float
    config : DPSGDConfig
    variant : str
    canaries : int
    train_seconds, audit_seconds : float
        Wall time of the training run and of this audit.
    suspect : dict
        The labelled "suspect" outcome (:func:`suspect_assessment`): ``suspect`` (bool) when the
        fitted estimate exceeds the accountant by more than its sampling noise (the fit's exact
        p-value under the claim at most ``false_flag_rate``, 0.135 %: the most a correct run is
        flagged), with by how much and how many runs of the many-run harness would certify it.
        Never a violation.
    """

    accountant_epsilon: float
    accountant_kind: str
    epsilon_lower_bound: float
    mu_lower_bound: float
    violated: bool
    best_score: str
    one_run: dict
    epsilon_estimate_fit: float
    epsilon_estimate_pld: float
    fit: dict
    delta: float
    beta: float
    config: object
    variant: str
    canaries: int
    train_seconds: float
    audit_seconds: float
    details: dict = field(default_factory=dict)
    estimate_notes: dict = field(default_factory=dict)
    """``{"fit": str, "pld": str}``: for each estimate, why it is absent (``nan``), how it was
    coarsened, and whether it lies below the certified lower bound (then it understates the leak:
    the certified bound holds with probability ``>= 1 - beta``, the estimate has no confidence
    statement). An empty string: computed as documented, nothing to flag."""
    epsilon_lower_bound_any: float = math.nan
    claim_parameter_bound: float = math.nan
    suspect: dict = field(default_factory=dict)

    @property
    def headline_guess(self) -> tuple:
        """``(correct, guesses, (k_plus, k_minus))`` of the rule behind :attr:`epsilon_lower_bound`."""
        one = self.one_run[self.best_score]
        c = getattr(one, "claim", None)
        if self.details.get("claim") and c is not None and c.cell is not None:
            return c.correct, c.guesses, tuple(c.cell)
        g = one.guess
        return g.correct, g.guesses, (g.k_plus, g.k_minus)

    @property
    def is_suspect(self) -> bool:
        """The labelled "suspect" outcome (:attr:`suspect`); never a violation."""
        return bool(self.suspect.get("suspect", False))

    def suspect_text(self) -> str:
        """One line on the "suspect" outcome (empty when not suspect)."""
        return str(self.suspect.get("text", "")) if self.is_suspect else ""

    def estimate_text(self, which: str) -> str:
        """One estimate as text with its label and notes, never a bare number.

        Parameters
        ----------
        which : {"fit", "pld"}
            The fitted per-step mechanism composed, or the histogram PLD composed.

        Returns
        -------
        str
            ``"<value> (estimate, no confidence statement[; note])"``, or ``"not computed:
            <reason>"``.

        Raises
        ------
        ValueError
            On another name.
        """
        if which not in ("fit", "pld"):
            raise ValueError(f"which must be 'fit' or 'pld', got {which!r}")
        value = self.epsilon_estimate_fit if which == "fit" else self.epsilon_estimate_pld
        note = self.estimate_notes.get(which, "")
        if not math.isfinite(value):
            return note if note.startswith("not ") else f"not computed: {note or 'no reason recorded'}"
        return f"{value:.4g} (estimate, no confidence statement{'; ' + note if note else ''})"

    @property
    def fraction_of_accountant(self) -> float:
        """``epsilon_lower_bound / accountant_epsilon``."""
        return self.epsilon_lower_bound / self.accountant_epsilon if self.accountant_epsilon > 0 else math.inf

    def summary(self) -> str:
        """A few lines for a terminal or a notebook: the verdict, the certified bound next to the
        accountant's epsilon, the estimates (labelled), the guesses and the times."""
        cfg = self.config
        a = self.one_run[self.best_score]
        verdict = ("VIOLATION: the run leaks more than its accountant says" if self.violated
                   else "SUSPECT (not a violation): " + self.suspect_text() if self.is_suspect
                   else "no violation found (a lower bound cannot prove privacy)")
        correct, guesses, _ = self.headline_guess
        against = ("against the claimed DP-SGD family: no noise multiplier >= "
                   f"{self.claim_parameter_bound:.4g} at this q and steps covers the run; "
                   if self.details.get("claim") and math.isfinite(self.claim_parameter_bound) else
                   "against the claimed DP-SGD family (nothing refuted); " if self.details.get("claim") else "")
        lines = [
            f"dpaudit DP-SGD audit ({self.variant}): {verdict}",
            f"  claimed: sigma={cfg.noise_multiplier:.4g}, q={cfg.sampling_rate:g}, steps={cfg.steps}, C={cfg.max_grad_norm:g}; "
            f"{self.canaries} canaries",
            f"  accountant epsilon at delta={self.delta:g}: {self.accountant_epsilon:.4g} ({self.accountant_kind})",
            f"  certified one-run lower bound:         {self.epsilon_lower_bound:.4g} "
            f"({self.fraction_of_accountant:.2f} x the accountant; {against}score {self.best_score!r}, "
            f"{correct} of {guesses} guesses correct, beta={self.beta:g})",
        ]
        if self.details.get("claim"):
            lines.append(f"  certified for any mechanism:           {self.epsilon_lower_bound_any:.4g} "
                         f"(the one-run f-DP test of (eps, delta)-DP, same rules; score {a.guess.correct} of "
                         f"{a.guess.guesses} correct)")
        lines += [
            f"  certified GDP mu lower bound:          {self.mu_lower_bound:.4g}",
            f"  estimate, fitted per-step mechanism:   {self.estimate_text('fit')}",
            f"  estimate, histogram PLD composed:      {self.estimate_text('pld')}",
        ]
        if self.is_suspect:
            lines.append(f"  suspect (estimates, not certified):    {self.suspect_text()}")
        lines.append(f"  time: training {self.train_seconds:.2f} s, audit {self.audit_seconds:.2f} s")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """JSON-ready dict."""
        from ..estimators.region import jsonable

        return jsonable({
            "variant": self.variant, "canaries": self.canaries, "config": self.config.to_dict(),
            "delta": self.delta, "beta": self.beta,
            "accountant_epsilon": self.accountant_epsilon, "accountant_kind": self.accountant_kind,
            "epsilon_lower_bound": self.epsilon_lower_bound, "epsilon_lower_bound_any": self.epsilon_lower_bound_any,
            "claim_parameter_bound": self.claim_parameter_bound,
            "bound_against": "claimed DP-SGD family" if self.details.get("claim") else "any mechanism",
            "suspect": dict(self.suspect), "mu_lower_bound": self.mu_lower_bound,
            "fraction_of_accountant": self.fraction_of_accountant, "violated": self.violated,
            "best_score": self.best_score, "one_run": {k: v.to_dict() for k, v in self.one_run.items()},
            "epsilon_estimate_fit": self.epsilon_estimate_fit, "epsilon_estimate_pld": self.epsilon_estimate_pld,
            "estimate_notes": dict(self.estimate_notes),
            "fit": self.fit, "train_seconds": self.train_seconds, "audit_seconds": self.audit_seconds,
            "details": self.details,
        })


#: PLD loss grids (nats) of the fitted estimate, coarse to fine: the certified accountant's
#: grids (``4e-3 / 4^i``) with one coarser grid in front.
_ESTIMATE_GRIDS = tuple(1.6e-2 / 4 ** i for i in range(5))
#: Relative agreement of two successive grids at which the fitted estimate stops.
_ESTIMATE_TOLERANCE = 1e-2
#: Most loss-grid points an estimate's composed PLD may span (``steps x`` the per-step loss range
#: over the grid): 2**21 points, a few tens of MB per array of the FFT composition. Past it the
#: grid is coarsened to fit (the estimate then errs high by at most ``steps x`` the grid, said so).
ESTIMATE_MAX_POINTS = 2 ** 21
#: Most points of one step's PLD: dp_accounting builds it point by point in Python (~30 us each, ~0.5 s).
ESTIMATE_MAX_STEP_POINTS = 2 ** 14
def _composed_epsilon_estimate(composition, delta: float, *, sigma: float = None, q: float = None,
                               steps: int = None) -> tuple[float, str]:
    """eps(delta) of a composition, as an estimate: dp_accounting's pessimistic PLD on the grids
    :data:`_ESTIMATE_GRIDS`, coarse to fine, until two successive grids agree to
    :data:`_ESTIMATE_TOLERANCE` (relative); the finer one's value.

    What :func:`dpaudit.accounting.get_epsilon` certifies, without the certification: no RDP
    cross-check, grids agreeing to 1 % instead of 0.1 %, starting one grid coarser. For the
    fitted per-step mechanism of :func:`audit_run` (itself an estimate, with no confidence
    statement) that is enough: within 0.1 % of ``get_epsilon`` on the benchmark's DP-SGD
    configurations (q = 1 with 10 steps and q = 0.05 with 200 steps, accountant epsilon 1-8,
    noise multiplier +-10 %) and within 0.6 % at noise multipliers 0.1-200; 2-5x faster at
    q = 0.05 (most of the certified call is its RDP cross-check), 1.2-2x at q = 1.

    **Bounded cost.** With ``sigma``, ``q`` and ``steps`` given (a DP-SGD composition), the
    composed PLD's length is predicted before it is built (``steps x`` the per-step loss range,
    :func:`_gaussian_loss_range`, over the grid); grids past :data:`ESTIMATE_MAX_POINTS` (or
    whose single step passes :data:`ESTIMATE_MAX_STEP_POINTS`, built point by point) are
    skipped, and when even the coarsest is past it the grid is coarsened to fit: the value then
    errs high by at most ``steps x`` the grid (pessimistic rounding of each step's loss), and the
    note says so. A fitted noise multiplier 350x below the claimed one (a blatant bug) needs
    ~10^8 points on the coarsest grid (5-21 GB); coarsened, a few seconds and ~0.2 GB.
    Where the PLD cannot answer (an infinite epsilon, round-off comparable to ``delta``) it falls
    back on ``get_epsilon`` when the grids were not coarsened (its first grid, 4x finer than ours,
    then spans at most ``4 x`` :data:`ESTIMATE_MAX_POINTS` points); on a coarsened grid there is no
    value and the note says why.

    Parameters
    ----------
    composition : Composition
        E.g. ``Composition.dpsgd(sigma, q, steps)``.
    delta : float
        In (0, 1).
    sigma, q, steps : float, float, int, optional
        The composition's DP-SGD parameters, for the cost prediction (none: no prediction).

    Returns
    -------
    (float, str)
        An estimate of epsilon at ``delta`` (it errs high, by the grid's pessimism), or ``nan``;
        and a note (empty when computed as above on an uncoarsened grid).

    Raises
    ------
    MemoryError
        Only if the PLD outgrows memory despite the prediction (the caller reports it).
    """
    from ..accounting import get_epsilon
    from ..accounting._pld import build_pld, pmf_epsilon, pmf_parts

    grids, note = _ESTIMATE_GRIDS, ""
    if sigma is not None:
        width = _gaussian_loss_range(sigma, q)
        span = steps * width
        floor = max(span / ESTIMATE_MAX_POINTS, width / ESTIMATE_MAX_STEP_POINTS)
        grids = tuple(g for g in _ESTIMATE_GRIDS if g >= floor)
        if not grids:
            grids = (floor,)
            note = (f"coarsened: loss grid {floor:.3g} nats instead of <= {_ESTIMATE_GRIDS[0]:g} (the fitted "
                    f"mechanism's losses span {width:.3g} nats per step, {span:.3g} composed), so it errs high by at "
                    f"most {steps * floor:.3g}")
    previous = None
    for interval in grids:
        value = -math.inf
        for losses, probs, inf_mass in pmf_parts(build_pld(composition, interval)):
            eps, charge = pmf_epsilon(losses, probs, inf_mass, delta)
            if not math.isfinite(eps) or charge > 0.5 * delta:
                if note:
                    return math.nan, ("not resolved: the PLD on the grid that fits in memory puts more than delta at "
                                      "infinity or in round-off")
                return float(get_epsilon(composition, delta).epsilon), ""
            value = max(value, eps)
        if previous is not None and abs(previous - value) <= _ESTIMATE_TOLERANCE * max(value, 1e-3):
            break
        previous = value
    else:
        if not note and len(grids) < len(_ESTIMATE_GRIDS):
            note = (f"refinement stopped at loss grid {grids[-1]:.3g} nats by the cost cap before two grids agreed "
                    f"to {_ESTIMATE_TOLERANCE:g}; it errs high")
    return float(value), note


def _sign_corrected(run) -> np.ndarray:
    """``pattern * observations`` (the observations themselves for Dirac canaries): for a correct
    implementation every canary kind's sign-corrected observations have the Dirac canaries' law,
    which is what the estimates model."""
    pattern = getattr(run, "pattern", None)
    o = np.asarray(run.observations, dtype=float)
    return o if pattern is None else o * _pattern(pattern, o.shape)


def _not_computed(exc: BaseException) -> str:
    """The note of an estimate whose computation raised ``exc``."""
    if isinstance(exc, MemoryError):
        return "not computed: out of memory (MemoryError); the certified bounds are unaffected"
    return f"not computed: {type(exc).__name__}: {exc}"


def _fit_estimate(run, delta: float, observations=None, excluded=None) -> tuple[dict, float, str]:
    """Per-step signal (included canaries at their sampled steps) and noise (excluded canaries),
    the fitted noise multiplier and its composed epsilon (an estimate,
    :func:`_composed_epsilon_estimate`), and a note. ``observations``: the sign-corrected
    observations (:func:`_sign_corrected`) and ``excluded`` their columns ``[:, ~mask]``, if at
    hand. No value (``nan``, never ``inf``) when there is no signal, no noise, or the estimate
    fails (a ``MemoryError`` included): the note says which."""
    from ..accounting import Composition

    o = _sign_corrected(run) if observations is None else observations
    mask, part = run.mask, run.participation
    out = o[:, ~mask] if excluded is None else excluded
    noise = float(out.std()) if out.size > 1 else float("nan")
    base = float(out.mean()) if out.size else 0.0
    signal = float(o[part].mean()) - base if part.any() else float("nan")
    ratio = noise / signal if signal > 0 and noise > 0 else math.nan
    fit = {"signal": signal, "noise": noise, "noise_multiplier": ratio}
    if not part.any():
        return fit, math.nan, "not computed: no included canary was sampled in any step (no signal to fit)"
    if not (signal > 0):
        return fit, math.nan, (f"not computed: the included canaries' mean observation is not above the excluded "
                               f"ones' (signal {signal:.3g}): no per-step mechanism to fit")
    if not (noise > 0):
        return fit, math.nan, "not computed: the excluded canaries' observations have no spread (no noise to fit)"
    cfg = run.config
    try:
        eps, note = _composed_epsilon_estimate(Composition.dpsgd(ratio, cfg.sampling_rate, cfg.steps), delta,
                                               sigma=ratio, q=float(cfg.sampling_rate), steps=int(cfg.steps))
    except (MemoryError, ValueError, ArithmeticError, RuntimeError) as exc:
        return fit, math.nan, _not_computed(exc)
    return fit, eps, note


def _pld_estimate(run, delta: float, observations=None, excluded=None) -> tuple[float, str]:
    """Paper 001's histogram PLD of the per-step sign-corrected observations (included vs excluded
    canaries), composed over the steps (an estimate), and a note. ``observations`` and
    ``excluded`` as for :func:`_fit_estimate`. The composed PLD is kept within
    :data:`ESTIMATE_MAX_POINTS` grid points by coarsening the loss grid (said so in the note);
    ``nan`` with a reason when it cannot be computed or is not finite."""
    from ..scores import estimate_pld

    o = _sign_corrected(run) if observations is None else observations
    p, q_ = o[:, run.mask].ravel(), (o[:, ~run.mask] if excluded is None else excluded).ravel()
    if p.size < 10 or q_.size < 10:
        return math.nan, f"not computed: too few observations ({p.size} included, {q_.size} excluded; 10 each needed)"
    steps, note = int(run.config.steps), ""
    try:
        pld = estimate_pld(p, q_)
        with np.errstate(divide="ignore"):
            lp, lq = np.log(pld.p_mass), np.log(pld.q_mass)
        both = (pld.p_mass > 0) & (pld.q_mass > 0)
        span = float(np.ptp(lp[both] - lq[both])) * 2.0 if both.sum() > 1 else 0.0  # both directions
        interval = pld.value_discretization_interval
        if steps * span / interval > ESTIMATE_MAX_POINTS:
            coarse = steps * span / ESTIMATE_MAX_POINTS
            note = (f"coarsened: loss grid {coarse:.3g} nats instead of {interval:g} (the composed histogram PLD "
                    f"spans about {steps * span:.3g} nats), so it errs high by at most {steps * coarse:.3g}")
            pld = estimate_pld(p, q_, value_discretization_interval=coarse)
        value = float(pld.epsilon(delta, steps=steps))
    except (MemoryError, ValueError, ArithmeticError, RuntimeError) as exc:
        return math.nan, _not_computed(exc)
    if not math.isfinite(value):
        share = pld.infinity_mass_p
        return math.nan, (f"not finite: {share:.3g} of the included canaries' per-step observations fall in bins no "
                          f"excluded canary reaches (loss infinity), more than delta after {steps} steps")
    return value, note


def _flag_below(value: float, note: str, certified: float) -> str:
    """Add to an estimate's note that it lies below the certified lower bound (it then
    understates the leak), with how far."""
    if math.isfinite(value) and value < certified:
        far = "far " if value < 0.5 * certified else ""
        flag = (f"{far}below the certified lower bound {certified:.4g}: it understates the leak (the bound holds "
                f"with probability >= 1 - beta; the estimate has no confidence statement)")
        return f"{note}; {flag}" if note else flag
    return note


@functools.lru_cache(maxsize=256)
def _claimed_accountant(sigma: float, q: float, steps: int, delta: float):
    """The accountant's answer for the claimed DP-SGD at ``delta`` (``get_epsilon`` of
    ``Composition.dpsgd(sigma, q, steps)``), cached per ``(sigma, q, steps, delta)``: an audit
    of many runs of one configuration (seeds, canary kinds, a benchmark) computes it once."""
    from ..accounting import Composition, get_epsilon

    return get_epsilon(Composition.dpsgd(sigma, q, steps), delta)


#: Simulated runs of the claim behind the choice of a guessing rule, and the most normal draws
#: (``replicates x steps x m``) spent on them (fewer runs beyond, at least
#: :data:`SIMULATION_MIN_RUNS`); drawn in chunks of :data:`SIMULATION_CHUNK` canaries.
SIMULATION_RUNS = 24
SIMULATION_MIN_RUNS = 3
SIMULATION_DRAWS = 1.2e8
SIMULATION_CHUNK = 8192


@functools.lru_cache(maxsize=32)
def _simulated_masks(sigma: float, q: float, steps: int, m: int) -> dict:
    """Simulated ideal runs of the claim, each score kind's inclusion mask sorted by its scores:
    Dirac canaries, each included with probability 1/2 and then in each step with probability
    ``q``, observations ``N(1{in the step}, sigma^2)`` (the accountant's mechanism exactly). The
    ``"whitened"`` kind is scored by the sign-corrected sum here, which it equals on independent
    steps up to a common factor (``whitened_scores``; correlation 0.998 measured): the simulation
    only *chooses* a guessing rule, so any score is valid, and this one is computed per canary
    (in chunks, a bounded memory). A function of the claim, ``m`` and a fixed seed; cached."""
    reps = int(max(SIMULATION_MIN_RUNS, min(SIMULATION_RUNS, SIMULATION_DRAWS // max(1, steps * m))))
    kinds = ("lr", "spread", "whitened", "sum")
    out: dict = {k: [] for k in kinds}
    for r in range(reps):
        rng = np.random.default_rng([20240531, r])
        mask = rng.random(m) < 0.5
        tie = rng.random(m)
        scores = {k: np.empty(m) for k in kinds}
        for lo in range(0, m, SIMULATION_CHUNK):
            hi = min(m, lo + SIMULATION_CHUNK)
            mk = mask[lo:hi]
            part = (rng.random((steps, hi - lo)) < q) & mk if q < 1 else np.broadcast_to(mk, (steps, hi - lo))
            o = part + sigma * rng.standard_normal((steps, hi - lo))
            for kind in kinds:
                scores[kind][lo:hi] = _scores(o, None, sigma, q, "sum" if kind == "whitened" else kind)
        for kind in kinds:
            out[kind].append(mask[np.lexsort((tie, scores[kind]))])
    return out


def _claim_chooser(kind: str, sigma: float, q: float, steps: int):
    """A cached chooser of the guessing rule for ``kind`` scores of the claimed mechanism
    (:meth:`~dpaudit.scores.one_run_claim.OneRunClaim.choose`)."""
    return lambda m, candidates, level, delta: _chosen_rule(kind, sigma, q, steps, int(m),
                                                            tuple(map(tuple, candidates)), float(level), float(delta))


@functools.lru_cache(maxsize=256)
def _chosen_rule(kind: str, sigma: float, q: float, steps: int, m: int, candidates: tuple, level: float,
                 delta: float):
    """The rule :func:`~dpaudit.scores.one_run_claim.choose_cell` picks on :func:`_simulated_masks`
    for ``kind`` scores: a function of the claim, ``m`` and a fixed seed, cached."""
    from ..scores.one_run_claim import choose_cell
    from .bounds import dpsgd_family

    sims = _simulated_masks(sigma, q, steps, m)[kind]
    return choose_cell(sims, list(candidates), dpsgd_family(q, steps), sigma, level=level, delta=delta)


def _run_claim(kind: str, config, accountant_epsilon: float, delta: float, simulate: bool):
    """The :class:`~dpaudit.scores.one_run_claim.OneRunClaim` of a run's accountant: the DP-SGD
    family at the claimed ``q`` and steps, the claim ``s = sigma`` strengthened by the accountant's
    certified ``(eps, delta)`` (both hold for a correct run), and the cached rule chooser."""
    from ..scores.one_run import approx_dp_inverse_tradeoff
    from ..scores.one_run_claim import OneRunClaim, max_inverse_tradeoff
    from .bounds import dpsgd_family

    sigma, q, T = float(config.noise_multiplier), float(config.sampling_rate), int(config.steps)
    fam = dpsgd_family(q, T)
    inv = fam.inverse_tradeoff(sigma)
    if math.isfinite(accountant_epsilon):
        inv = max_inverse_tradeoff(inv, approx_dp_inverse_tradeoff(accountant_epsilon, delta))
    return OneRunClaim(fam, sigma, claim_inverse=inv, chooser=_claim_chooser(kind, sigma, q, T) if simulate else None)


def pooled_audit(runs, *, delta: float = 1e-5, beta: float = 0.05, **kwargs) -> DPSGDAudit:
    """One one-run audit of the canaries of several runs of *one* training run, pooled.

    Canary kinds whose observations have the same law under a correct step and see no
    interference (the dedicated block's ``"dirac"``, ``"split"`` (its ``K`` coordinates summed
    over ``sqrt(K)``), ``"large"`` after clipping, and ``"data"`` canaries,
    :class:`~dpaudit.dpsgd.Canaries`) are one population of canaries, each included
    independently with probability 1/2 (each kind's mask is drawn so, independently of the
    others) and each covered by the same per-example claim. The one-run theorems need nothing
    more (Steinke, Nasr, Jagielski 2023; Mahloujifar et al. 2025: any set of canaries with
    independent fair inclusion, any scores), so the pooled audit is valid as is; pooling buys
    power: ``m`` grows to the sum of the kinds' canaries and ``beta`` is split once instead of
    once per kind. A bug that only one kind sees (a skipped clipping makes ``"large"`` canaries'
    observations near ``1000``) still fills the top of the pooled scores.

    Parameters
    ----------
    runs : sequence of TrainingRun
        Views of the same training run (same claimed ``sigma``, ``q``, steps), e.g.
        :meth:`Canaries.runs` of the block kinds.
    delta, beta : float
        As :func:`audit_run` (``beta`` for the pooled audit as a whole).
    **kwargs
        Passed to :func:`audit_run` (``scores``, ``accountant``, ``seed``, ``estimates``, ``claim``).

    Returns
    -------
    DPSGDAudit
        Of the pooled run (variant ``"pooled:<kinds>"``; ``details["pooled"]`` lists each part's
        variant and canary count).

    Raises
    ------
    ValueError
        On no run, or runs whose claimed noise multiplier, rate or number of steps differ.
    """
    from .reference import TrainingRun

    runs = list(runs)
    if not runs:
        raise ValueError("pooled_audit needs at least one run")
    c0 = runs[0].config
    for r in runs[1:]:
        c = r.config
        if (float(c.noise_multiplier), float(c.sampling_rate), int(c.steps)) != \
                (float(c0.noise_multiplier), float(c0.sampling_rate), int(c0.steps)):
            raise ValueError(f"pooled runs must share the claim (sigma, q, steps): {r.variant!r} has "
                             f"({c.noise_multiplier}, {c.sampling_rate}, {c.steps}), {runs[0].variant!r} has "
                             f"({c0.noise_multiplier}, {c0.sampling_rate}, {c0.steps})")
    if len(runs) == 1:
        return audit_run(runs[0], delta=delta, beta=beta, **kwargs)
    obs = np.hstack([np.asarray(r.observations, dtype=float) for r in runs])
    pats = [getattr(r, "pattern", None) for r in runs]
    pattern = None if all(p is None for p in pats) else np.hstack(
        [np.ones(np.shape(r.observations)) if p is None else np.asarray(p, dtype=float) for r, p in zip(runs, pats)])
    names = [r.variant for r in runs]
    pooled = TrainingRun(observations=obs, mask=np.concatenate([r.mask for r in runs]),
                         sampled=np.concatenate([r.sampled for r in runs]),
                         participation=np.hstack([r.participation for r in runs]), config=c0,
                         variant="pooled:" + "+".join(n.split(":")[-1] for n in names),
                         seconds=max(r.seconds for r in runs), train_accuracy=float(runs[0].train_accuracy),
                         pattern=pattern,
                         details={"pooled": [{"variant": r.variant, "canaries": int(r.mask.size)} for r in runs]})
    out = audit_run(pooled, delta=delta, beta=beta, **kwargs)
    out.details["pooled"] = pooled.details["pooled"]
    return out


def audit_run(run, *, delta: float = 1e-5, beta: float = 0.05, scores=DEFAULT_SCORES, accountant=None,
              seed: int = 0, estimates: bool = True, claim: bool = True) -> DPSGDAudit:
    """Certified one-run audit and labelled estimates of a DP-SGD run with gradient canaries.

    Parameters
    ----------
    run : TrainingRun
        From :func:`dpaudit.dpsgd.train_with_canaries` (or any run with the same fields).
    delta : float
        Delta of every epsilon, in (0, 1).
    beta : float
        Failure probability of the certified bounds, split over ``scores``.
    scores : sequence of str
        Score functions (:data:`SCORE_FUNCTIONS`), fixed before looking; default
        ``("lr", "spread", "whitened")``; ``beta`` is split over them in proportion to
        :data:`SCORE_WEIGHTS` (default: ``"lr"`` at ``beta / 2``, the others at ``beta / 4``).
    accountant : AccountingResult, optional
        The accountant's answer for the run's config at ``delta`` (computed when not given).
    seed : int
        Tie-breaking of the one-run audits.
    estimates : bool
        Compute the two estimates (default). ``False`` skips them (``nan``, the note says so):
        the audit's fixed cost is then the certified bounds and the accountant, which is cached
        per ``(sigma, q, steps, delta)`` — about a third of the default audit's time on a
        typical run (``benchmarks/results/dpsgd_audit_cost.md``).
    claim : bool
        Test the accountant's own claim (default): each score's one-run audit also certifies the
        bound against the claimed DP-SGD family (:mod:`dpaudit.scores.one_run_claim`, its
        trade-off function from :func:`dpaudit.dpsgd.bounds.dpsgd_family`), on a guessing rule
        chosen on simulations of the claim (most of each score's ``beta``) and the usual grid;
        that bound is the headline and decides the verdict. ``False``: the any-mechanism bound
        on the grid alone, as before.

    Returns
    -------
    DPSGDAudit

    Raises
    ------
    ValueError
        On bad delta/beta, an empty or unknown score list.

    References
    ----------
    Nasr et al. (2023); Steinke, Nasr, Jagielski (2023); Mahloujifar, Melis, Chaudhuri (2025).
    """
    import time

    from ..scores import one_run_audit

    delta = check_delta(delta)
    beta = check_probability(beta, "beta")
    scores = tuple(scores)
    if not scores or any(s not in SCORE_FUNCTIONS for s in scores):
        raise ValueError(f"scores must be a non-empty subset of {SCORE_FUNCTIONS}, got {scores!r}")
    t0 = time.perf_counter()
    cfg = run.config
    acc = accountant if accountant is not None else _claimed_accountant(
        float(cfg.noise_multiplier), float(cfg.sampling_rate), int(cfg.steps), float(delta))
    audits = {}
    if "final" in scores and getattr(run, "final_scores", None) is None:
        raise ValueError("the 'final' score needs input canaries (train_with_canaries(..., canary_kind='input'))")
    o = pattern = None
    if any(kind != "final" for kind in scores):  # checked once for all the score functions
        o = _observations(run.observations)
        if o.shape[1] < 2:
            raise ValueError(f"the one-run audit needs at least 2 canaries, the run has {o.shape[1]}")
        pattern = getattr(run, "pattern", None)
        pattern = None if pattern is None else _pattern(pattern, o.shape)
    acc_eps = float(acc.epsilon)
    w = {k: float(SCORE_WEIGHTS.get(k, 1.0)) for k in scores}
    weights = {k: w[k] / sum(w.values()) for k in scores}
    for kind in scores:
        sc = run.final_scores if kind == "final" else _scores(o, None if kind == "spread" else pattern,
                                                              cfg.noise_multiplier, cfg.sampling_rate, kind)
        cl = _run_claim(kind, cfg, acc_eps, delta, simulate=kind != "final") if claim else None
        audits[kind] = one_run_audit(sc, run.mask, delta=delta, beta=beta * weights[kind], rng=seed, claim=cl)
    mu = max(a.mu_lower_bound for a in audits.values())
    lb_any = max(a.epsilon_lower_bound for a in audits.values())
    if claim:
        best = max(audits, key=lambda k: audits[k].claim.epsilon_lower_bound)
        lb = audits[best].claim.epsilon_lower_bound
        s_ub = audits[best].claim.parameter_bound
        # the claim (with the accountant's certified (eps, delta) in it) refuted by some score; the
        # any-mechanism bound above the accountant implies it on the same rules and levels
        violated = any(a.claim.claim_refuted for a in audits.values()) or lb_any > acc_eps
    else:
        best = max(audits, key=lambda k: audits[k].epsilon_lower_bound)
        lb, s_ub, violated = lb_any, math.nan, lb_any > acc_eps
    notes = {}
    if o is None or not estimates:  # 'final' only (no white-box observations to fit), or skipped
        fit, eps_fit, eps_pld = {}, math.nan, math.nan
        why = "not computed: white-box observations not scored" if estimates else "not computed: estimates=False"
        notes = {"fit": why, "pld": why}
    else:
        signed = o if pattern is None else o * pattern
        excluded = signed[:, ~run.mask]
        fit, eps_fit, notes["fit"] = _fit_estimate(run, delta, signed, excluded)
        eps_pld, notes["pld"] = _pld_estimate(run, delta, signed, excluded)
        notes = {k: _flag_below(v, notes[k], lb) for k, v in (("fit", eps_fit), ("pld", eps_pld))}
    suspect = {}
    if fit and not violated:
        suspect = suspect_assessment(fit, eps_fit, eps_pld, acc_eps, cfg, n_signal=int(run.participation.sum()),
                                     n_noise=int(excluded.size), delta=delta, beta=beta,
                                     score=lambda obs, sg, qq: _scores(obs, None, sg, qq, "lr"))
    return DPSGDAudit(
        accountant_epsilon=acc_eps, accountant_kind=str(getattr(acc, "kind", "")), epsilon_lower_bound=lb,
        mu_lower_bound=mu, violated=bool(violated), best_score=best, one_run=audits,
        epsilon_estimate_fit=eps_fit, epsilon_estimate_pld=eps_pld, fit=fit, delta=delta, beta=beta, config=cfg,
        variant=run.variant, canaries=int(run.mask.size), train_seconds=run.seconds, estimate_notes=notes,
        audit_seconds=time.perf_counter() - t0, details={"scores": scores, "accountant_method": getattr(acc, "method", ""),
                                                         "claim": bool(claim),
                                                         "score_betas": {k: beta * weights[k] for k in scores}},
        epsilon_lower_bound_any=lb_any, claim_parameter_bound=s_ub, suspect=suspect)

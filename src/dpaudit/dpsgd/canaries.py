"""Gradient canaries for any DP-SGD step: plain PyTorch, JAX/Optax, NumPy, or Opacus.

A user who wrote their own DP-SGD step asks :class:`Canaries`, at every step, for the canaries'
per-example gradient rows over *their* parameter shapes and for where to put them among the real
rows; they clip, sum and noise the batch as usual and hand back the noisy gradient; dpaudit keeps
the inclusion mask, the sign patterns and the participation, turns each update into one
observation per canary, and audits the run (:meth:`Canaries.audit`, which calls
:func:`dpaudit.dpsgd.audit_run` once per canary kind)::

    canaries = Canaries([w.shape, b.shape], noise_multiplier=sigma, max_grad_norm=C,
                        sampling_rate=q, batch_divisor=q * N)
    for t in range(steps):
        step = canaries.begin_step(batch_size=len(xb))  # how many real rows this step has
        rows = step.insert(per_example_grads(xb, yb))   # list of (rows, *shape) arrays
        update = clip_sum_noise(rows) / (q * N)          # the user's own code
        canaries.observe(update)                        # before the learning rate
    print(canaries.audit(delta=1e-5).summary())

Nothing here imports torch or jax: rows are NumPy arrays, converted to the type of the arrays
given to :meth:`CanaryStep.insert` (torch tensors keep their device and dtype; JAX arrays go
through ``jax.numpy.asarray``), and updates may be of any of the three.

**Canary kinds** (:data:`CANARY_KINDS`; several at once, the canaries and ``beta`` split among
them, fixed before the run):

* ``"dirac"``: norm ``canary_norm`` (default ``4 C``) on a coordinate of its own in a dedicated
  zero-initialised parameter block of ``block_size`` coordinates that the model never reads
  (the last entry of :attr:`Canaries.shapes`): no interference from real gradients.
* ``"spread"``: norm ``sqrt(L) canary_norm`` along a random unit direction that touches every one of the
  user's parameter tensors (``1/sqrt(L)`` of the norm in each of the ``L`` tensors, a few random
  coordinates each, random signs), so anything done per tensor or per parameter group
  (clipping, noise, scaling) changes its observation.
* ``"large"``: as ``"dirac"`` with norm ``large_norm`` (default ``1000 C``): a skipped clipping
  (everywhere or at one batch position) shows as an observation far above 1.
* ``"data"``: ``data_canaries`` examples added to the user's *dataset* (indices
  :attr:`Canaries.data_indices`, after the ``dataset_size`` real ones), so the user's own
  sampler decides when they are in a batch; their gradient is crafted (a Dirac row in the block),
  their realised participation is read from the batch indices the user reports, and a sampler
  check compares it with the Poisson sampling at rate ``q`` the accountant assumes.

The canaries of the first three kinds are Poisson-sampled by dpaudit at rate ``q`` and placed at
random positions among the real rows (never appended); all kinds carry a random sign per canary
and step (independent of the mask), which costs nothing for a correct step and sees noise
shared across steps (``docs/dpsgd.md`` §1).

**Interference.** A ``"spread"`` canary's observation is the noisy update's component along its
direction, which real gradients (and other canaries) add to. The one-run audit stays sound: each
canary is included independently with probability 1/2, drawn by dpaudit, so whatever the real
gradients add to the observations is, conditionally on everything but the mask, the same for an
included canary and an excluded one, and the guess "included" is right with probability at most
``e^eps / (1 + e^eps)`` whatever the scores are (Steinke, Nasr, Jagielski 2023, Thm. 3.1: any
function of the released output is a valid score). Interference costs power, not validity; the
block kinds avoid it (a zero-initialised block that no real gradient touches).

References: Nasr et al. (2023) §4 (gradient canaries observed at every step); Steinke, Nasr,
Jagielski (2023) (inclusion with probability 1/2); Andrew et al. (2024) (random directions);
``docs/dpsgd.md`` §7 (bug class x canary kind).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .._validate import check_int, check_positive, check_probability, check_rate

__all__ = ["CANARY_KINDS", "DEFAULT_KINDS", "CanaryAudit", "CanaryStep", "Canaries", "sampler_check"]

CANARY_KINDS = ("dirac", "spread", "large", "data")
#: Kinds used when ``kinds`` is not given: these, and ``"data"`` when ``dataset_size`` is given.
DEFAULT_KINDS = ("dirac", "spread", "large")
#: Coordinates a ``"spread"`` canary touches in each parameter tensor (at most the tensor's size).
SPREAD_COORDINATES = 16
#: A ``"spread"`` canary is observed on the tensors of at least this many coordinates only.
SPREAD_OBSERVED_MIN_SIZE = 32


def _shape_of(p) -> tuple:
    if isinstance(p, (tuple, list)) and all(isinstance(s, (int, np.integer)) for s in p):
        return tuple(int(s) for s in p)
    shape = getattr(p, "shape", None)
    if shape is None:
        raise TypeError(f"each parameter must be an array or a shape tuple, got {type(p).__name__}")
    return tuple(int(s) for s in shape)


def _to_numpy(x) -> np.ndarray:
    """An array of any of the supported frameworks as a float64 NumPy array (torch: detached,
    moved to the CPU)."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=float)


def _like(a: np.ndarray, ref):
    """``a`` as an array of ``ref``'s framework, dtype and device."""
    mod = type(ref).__module__
    if mod.startswith("torch"):
        import torch

        return torch.as_tensor(a, dtype=ref.dtype, device=ref.device)
    if mod.startswith("jax"):
        import jax.numpy as jnp

        return jnp.asarray(a, dtype=ref.dtype)
    return a.astype(getattr(ref, "dtype", float), copy=False)


def _scatter(real, canary, real_pos, canary_pos, n: int):
    """An ``(n, ...)`` array of ``real``'s framework with ``real`` at rows ``real_pos`` and
    ``canary`` (already of that framework) at rows ``canary_pos``."""
    mod = type(real).__module__
    if mod.startswith("torch"):
        import torch

        out = real.new_empty((n, *real.shape[1:]))
        out[torch.as_tensor(real_pos, device=out.device)] = real
        out[torch.as_tensor(canary_pos, device=out.device)] = canary.to(real.dtype)
        return out
    if mod.startswith("jax"):  # scattered on the host, moved once (no compilation per batch size)
        import jax.numpy as jnp

        return jnp.asarray(_scatter(np.asarray(real), np.asarray(canary), real_pos, canary_pos, n))
    real = np.asarray(real)
    out = np.empty((n, *real.shape[1:]), dtype=real.dtype)
    out[real_pos] = real
    out[canary_pos] = canary
    return out


@dataclass
class CanaryStep:
    """One step's canaries (:meth:`Canaries.begin_step`).

    Attributes
    ----------
    rows : list of ndarray, shape (k, *shape) each
        The ``k`` canary gradient rows of this step, one array per entry of
        :attr:`Canaries.shapes` (the dedicated block last when there is one), in units of the
        user's gradients (norm ``canary_norm`` or ``large_norm`` before clipping).
    positions : ndarray of int, shape (k,)
        Where each canary row goes in the step's batch of ``size`` rows (random for the kinds
        dpaudit samples; the batch position of the index for ``"data"`` canaries).
    real_mask : ndarray of bool, shape (len(batch_indices),) or (batch_size,)
        Which entries of the user's batch are real examples (compute their per-example gradients;
        the other entries are data canaries, whose rows dpaudit supplies).
    size : int
        Rows in the step's batch: real rows plus ``k``.
    """

    rows: list
    positions: np.ndarray
    real_mask: np.ndarray
    size: int
    _real_pos: np.ndarray = field(repr=False, default=None)
    _keys: Optional[list] = field(repr=False, default=None)

    def insert(self, real_rows):
        """The step's per-example gradient rows: the user's real rows with the canary rows put at
        :attr:`positions`.

        Parameters
        ----------
        real_rows : list (or dict) of arrays, shape (B, *shape) each
            Per-example gradients of the ``B = real_mask.sum()`` real examples, in batch order,
            one array per user parameter (plus, when the canaries have a dedicated block, either
            an array of zeros for it or nothing: a missing last entry is taken as zeros).
            NumPy, torch or JAX arrays; the result has the same type, dtype and device.

        Returns
        -------
        list (or dict) of arrays, shape (size, *shape) each

        Raises
        ------
        ValueError
            When the number of arrays or their leading size does not match.
        """
        keys = None
        if isinstance(real_rows, dict):
            keys, real_rows = list(real_rows), list(real_rows.values())
        real_rows = list(real_rows)
        b = int(self.real_mask.sum())
        if len(real_rows) == len(self.rows) - 1 and self._block:
            ref = real_rows[0]
            real_rows.append(_like(np.zeros((b, *self.rows[-1].shape[1:])), ref))
            if keys is not None:
                keys.append("dpaudit_canary_block")
        if len(real_rows) != len(self.rows):
            raise ValueError(f"real_rows must hold {len(self.rows)} arrays (one per parameter), got {len(real_rows)}")
        out = []
        for r, c in zip(real_rows, self.rows):
            if tuple(r.shape) != (b, *c.shape[1:]):
                raise ValueError(f"a real row array has shape {tuple(r.shape)}, expected {(b, *c.shape[1:])} "
                                 f"({b} real examples in this step)")
            c = c if type(r).__module__.startswith("jax") else _like(c, r)
            out.append(_scatter(r, c.astype(np.asarray(r).dtype) if isinstance(c, np.ndarray) else c,
                                self._real_pos, self.positions, self.size))
        return out if keys is None else dict(zip(keys, out))

    _block: bool = field(repr=False, default=True)


def sampler_check(counts, sampling_rate: float, *, draws: int = 999, seed: int = 0) -> dict:
    """Test that examples were Poisson-sampled at rate ``q`` (what the DP-SGD accountant assumes)
    from how often each of ``m`` data canaries was in each step's batch.

    Under Poisson sampling every entry ``counts[t, j]`` is an independent Bernoulli(``q``). Three
    tests, fixed in advance, combined by Bonferroni (the p-value is ``3 x`` the smallest):

    * **repeats**: an example twice in one batch (sampling with replacement, a weighted sampler)
      is impossible (p = 0 if seen, else 1);
    * **rate**: the total count against Binomial(``T m``, ``q``) (exact two-sided binomial test):
      a sampler whose rate is not ``q`` (a weighted sampler, a ``q`` computed from the wrong size);
    * **dispersion**: the variance of the per-canary counts over the steps against that of
      Binomial(``T``, ``q``), two-sided, by an exact Monte Carlo test (``draws`` null samples from
      a fixed seed, p-value ``(1 + #{null at least as far}) / (draws + 1)``): shuffled batches
      (every example once per epoch: variance near 0), a dropped last batch, a non-uniform sampler
      (variance too large).

    Parameters
    ----------
    counts : array of int, shape (steps, m)
        Times data canary ``j`` was in step ``t``'s batch (included or not).
    sampling_rate : float
        The accounted Poisson rate ``q`` in (0, 1).
    draws : int
        Monte Carlo null samples of the dispersion test.
    seed : int
        Seed of those samples.

    Returns
    -------
    dict
        ``p_value`` (valid: at most ``beta`` with probability ``<= beta`` under Poisson sampling),
        ``repeats``, ``rate`` (realised, against ``q``), ``p_rate``, ``variance`` (realised and
        Poisson), ``p_dispersion``, ``p_repeats``.

    Raises
    ------
    ValueError
        On counts that are not a non-negative integer array of shape (steps, m), or q outside (0, 1).

    References
    ----------
    Chua et al. (2024) (shuffled batches are not Poisson); Opacus issue #813 (a weighted sampler
    accounted as uniform); Bonferroni; Barnard (1963) (Monte Carlo tests).
    """
    from scipy.stats import binomtest

    c = np.asarray(counts)
    if c.ndim != 2 or c.size == 0 or c.dtype.kind not in "iu" or (c < 0).any():
        raise ValueError(f"counts must be a non-negative integer array of shape (steps, m), got {c.dtype} {c.shape}")
    q = float(sampling_rate)
    if not 0 < q < 1:
        raise ValueError(f"the sampler check needs a sampling rate in (0, 1), got {sampling_rate!r}")
    T, m = c.shape
    repeats = int((c > 1).sum())
    p_rep = 0.0 if repeats else 1.0
    total = int(c.sum())
    p_rate = float(binomtest(min(total, T * m), T * m, q).pvalue)  # (with repeats p_repeats is 0 anyway)
    per = c.sum(axis=0).astype(float)
    var0 = T * q * (1 - q)
    stat = abs(per.var() - var0)
    null = np.random.default_rng(seed).binomial(T, q, size=(int(draws), m)).astype(float)
    p_disp = float((1 + np.sum(np.abs(null.var(axis=1) - var0) >= stat)) / (draws + 1)) if m > 1 else 1.0
    return {"p_value": min(1.0, 3 * min(p_rep, p_rate, p_disp)), "repeats": repeats, "rate": total / (T * m),
            "accounted_rate": q, "p_rate": p_rate, "variance": float(per.var()), "poisson_variance": var0,
            "p_dispersion": p_disp, "p_repeats": p_rep}


@dataclass(frozen=True)
class CanaryAudit:
    """What :meth:`Canaries.audit` found: one :class:`~dpaudit.dpsgd.audit.DPSGDAudit` per canary
    kind and the two checks of the claimed mechanism.

    Attributes
    ----------
    audits : dict
        Canary kind -> ``DPSGDAudit`` (each at ``beta / parts``).
    epsilon_lower_bound : float
        Largest certified epsilon lower bound over the kinds (probability ``>= 1 - beta`` for the
        whole object, all parts together).
    accountant_epsilon : float
        The accountant's epsilon (an upper bound for the claimed mechanism).
    clipping : dict
        The block canaries' clipping check: ``p_value`` of "every block observation is at most one
        clipped canary plus N(0, sigma^2) noise" (Gaussian tail, Bonferroni over the
        observations), ``max_excess`` (largest ``(|o| - 1) / sigma``).
    sampler : dict or None
        :func:`sampler_check` of the data canaries (``None`` without them).
    violated : bool
        A certified bound above the accountant's epsilon, or a check rejected at its share of
        ``beta``: the run is not the mechanism its accountant describes.
    findings : list of str
        One line per reason for ``violated``.
    beta, delta : float
    """

    audits: dict
    epsilon_lower_bound: float
    accountant_epsilon: float
    clipping: dict
    sampler: Optional[dict]
    violated: bool
    findings: list
    beta: float
    delta: float
    pooled: tuple = ()
    """The block kinds audited together as one population (``audits["pooled"]``,
    :func:`dpaudit.dpsgd.audit.pooled_audit`); empty when each kind is audited alone."""

    @property
    def best_kind(self) -> str:
        """The canary kind that gave :attr:`epsilon_lower_bound`."""
        return max(self.audits, key=lambda k: self.audits[k].epsilon_lower_bound)

    def summary(self) -> str:
        """A few lines: the verdict, the accountant's epsilon, each kind's certified bound, the checks."""
        head = ("VIOLATION: " + "; ".join(self.findings)) if self.violated else \
            "no violation found (a lower bound cannot prove privacy)"
        lines = [f"dpaudit DP-SGD canary audit: {head}",
                 f"  accountant epsilon at delta={self.delta:g}: {self.accountant_epsilon:.4g}",
                 f"  certified one-run lower bound: {self.epsilon_lower_bound:.4g} (kind {self.best_kind!r}, "
                 f"beta={self.beta:g} split over the kinds and checks)"]
        for k, a in self.audits.items():
            lines.append(f"    {k:7s} {a.canaries:6d} canaries: epsilon >= {a.epsilon_lower_bound:.4g} "
                         f"(score {a.best_score!r}{', kinds ' + '+'.join(self.pooled) if k == 'pooled' else ''})")
            if a.is_suspect:
                lines.append(f"    {'':7s} SUSPECT (not a violation): {a.suspect_text()}")
        lines.append(f"  clipping check: p = {self.clipping['p_value']:.3g} (largest excess "
                     f"{self.clipping['max_excess']:.3g} sigma)")
        if self.sampler is not None:
            s = self.sampler
            lines.append(f"  sampler check: p = {s['p_value']:.3g} (rate {s['rate']:.4g} vs {s['accounted_rate']:.4g}, "
                         f"count variance {s['variance']:.4g} vs Poisson {s['poisson_variance']:.4g}, "
                         f"{s['repeats']} repeats)")
        return "\n".join(lines)


class Canaries:
    """Gradient canaries for a user's own DP-SGD step (see the module docstring).

    Parameters
    ----------
    params : sequence or dict of arrays or shape tuples
        The user's parameters (or their shapes), in the order their per-example gradients and
        updates will be given (a JAX pytree: ``jax.tree_util.tree_leaves(params)``).
    noise_multiplier : float
        The claimed ``sigma`` (noise standard deviation over ``C``).
    max_grad_norm : float
        The clipping norm ``C``.
    sampling_rate : float
        The accounted Poisson rate ``q`` in (0, 1].
    canaries : int
        Canaries of the kinds dpaudit samples (``"dirac"``, ``"spread"``, ``"large"``), split
        equally among those in ``kinds`` (at least 2 each).
    kinds : sequence of str, optional
        Subset of :data:`CANARY_KINDS`; default :data:`DEFAULT_KINDS`, plus ``"data"`` when
        ``dataset_size`` is given.
    dataset_size : int, optional
        ``N``, the user's real examples; with ``"data"`` canaries the user's dataset gets
        ``data_canaries`` more entries, indices ``N .. N + data_canaries - 1``.
    data_canaries : int, optional
        Number of ``"data"`` canaries (default ``canaries // len(dpaudit-sampled kinds)``).
    canary_norm : float, optional
        Norm of ``"dirac"`` and ``"data"`` canary rows (default ``4 C``); a ``"spread"`` row has
        this norm in each of the ``L`` user tensors (``sqrt(L)`` times it in all), so that
        clipping any one tensor alone to ``C`` cuts it.
    large_norm : float, optional
        Norm of ``"large"`` canary rows (default ``1000 C``).
    block : bool
        Give the block kinds a dedicated parameter block (the last entry of :attr:`shapes`, shape
        ``(block_size,)``); needed by ``"dirac"``, ``"large"`` and ``"data"``. The user adds a
        zero-initialised parameter of that shape that the model never reads.
    batch_divisor : float
        The public number the user's step divides the noisy sum by (the expected batch size
        ``q N`` for a mean, 1 for a sum): observations are ``batch_divisor * update / C``.
    seed : int
        Seeds the mask, the sampling, the positions, the signs and the directions.

    Attributes
    ----------
    shapes : list of tuple
        Parameter shapes the rows and updates are over (the user's, then the block).
    block_size : int
        Coordinates of the dedicated block (0 without it).
    data_indices : ndarray of int
        The dataset indices of the ``"data"`` canaries.
    masks : dict
        Kind -> which of its canaries are included (bool array).

    Raises
    ------
    ValueError
        On invalid rates, norms or counts, an unknown kind, a block kind without a block, or
        ``"data"`` without ``dataset_size``.
    TypeError
        On a parameter that is neither an array nor a shape.

    References
    ----------
    Nasr et al. (2023); Steinke, Nasr, Jagielski (2023); Andrew et al. (2024).
    """

    def __init__(self, params, *, noise_multiplier: float, max_grad_norm: float, sampling_rate: float,
                 canaries: int = 1500, kinds=None, dataset_size: Optional[int] = None,
                 data_canaries: Optional[int] = None, canary_norm: Optional[float] = None,
                 large_norm: Optional[float] = None, block: bool = True, batch_divisor: float = 1.0, seed: int = 0):
        self._keys = list(params) if isinstance(params, dict) else None
        plist = list(params.values()) if isinstance(params, dict) else list(params)
        if not plist:
            raise ValueError("params must name at least one parameter")
        self.user_shapes = [_shape_of(p) for p in plist]
        self.sigma = check_positive(noise_multiplier, "noise_multiplier")
        self.C = check_positive(max_grad_norm, "max_grad_norm")
        self.q = check_rate(sampling_rate, "sampling_rate")
        self.batch_divisor = check_positive(batch_divisor, "batch_divisor")
        if kinds is None:
            kinds = DEFAULT_KINDS + (("data",) if dataset_size is not None else ())
            if not block:
                kinds = ("spread",)
        kinds = tuple(kinds)
        bad = [k for k in kinds if k not in CANARY_KINDS]
        if not kinds or bad or len(set(kinds)) != len(kinds):
            raise ValueError(f"kinds must be distinct kinds from {CANARY_KINDS}, got {kinds!r}")
        if not block and any(k != "spread" for k in kinds):
            raise ValueError(f"kinds {[k for k in kinds if k != 'spread']} need the dedicated block (block=True)")
        if "data" in kinds and dataset_size is None:
            raise ValueError("'data' canaries need dataset_size (the number of real examples)")
        self.kinds = kinds
        own = [k for k in kinds if k != "data"]
        total = check_int(canaries, "canaries", 2 * max(1, len(own)))
        self.counts = {k: total // len(own) for k in own}
        if "data" in kinds:
            self.dataset_size = check_int(dataset_size, "dataset_size", 1)
            self.counts["data"] = check_int(total // max(1, len(own)) if data_canaries is None else data_canaries,
                                            "data_canaries", 2)
            self.data_indices = np.arange(self.dataset_size, self.dataset_size + self.counts["data"])
        else:
            self.dataset_size = None if dataset_size is None else check_int(dataset_size, "dataset_size", 1)
            self.data_indices = np.zeros(0, dtype=int)
        self.norms = {"dirac": 4.0 * self.C if canary_norm is None else check_positive(canary_norm, "canary_norm"),
                      "large": 1000.0 * self.C if large_norm is None else check_positive(large_norm, "large_norm")}
        self.norms["data"] = self.norms["dirac"]
        # a spread canary has norm canary_norm in each of the L tensors: any per-tensor clipping cuts it
        self.norms["spread"] = self.norms["dirac"] * math.sqrt(len(self.user_shapes))
        rng = np.random.default_rng(seed)
        self._rng = np.random.default_rng([seed, 1])  # sampling and positions
        self._sign_rng = np.random.default_rng([seed, 7])
        self.masks = {k: rng.random(self.counts[k]) < 0.5 for k in kinds}
        # Block coordinates: one per block-kind canary, in kind order.
        self._offset, off = {}, 0
        for k in kinds:
            if k != "spread":
                self._offset[k] = off
                off += self.counts[k]
        self.block_size = off if block else 0  # 0 also when no kind uses the block
        self.shapes = self.user_shapes + ([(self.block_size,)] if self.block_size else [])
        if "spread" in kinds:
            self._spread = self._directions(self.counts["spread"], rng)
            sizes = np.array([int(np.prod(sh)) if sh else 1 for sh in self.user_shapes])
            big = sizes >= SPREAD_OBSERVED_MIN_SIZE
            if not big.any():
                big = sizes == sizes.max()
            # The observation direction w: the canary's own direction on the large tensors only,
            # renormalised (tiny tensors, a bias of 10, are shared by every canary and carry
            # large real gradients: most of the interference, little of the signal).
            self._observed = big
            # <clipped canary, u restricted to them> = C * (share of the norm there): divided out,
            # so that a correct step's signal is 1 (in units of C) as for the block kinds.
            self.spread_signal = float(big.sum() / big.size)
        self._obs = {k: [] for k in kinds}
        self._part = {k: [] for k in kinds}
        self._pattern = {k: [] for k in kinds}
        self._data_counts: list = []
        self._step = None
        self._start = time.perf_counter()
        self.seconds = 0.0  # wall time from construction to the last observed step

    # -- construction -------------------------------------------------------------------------------
    def _directions(self, m: int, rng) -> list:
        """Per user tensor: ``(idx (m, s), val (m, s))``, a sparse random direction of norm
        ``1/sqrt(L)`` in each of the ``L`` tensors (distinct coordinates within a canary)."""
        L = len(self.user_shapes)
        out = []
        for shape in self.user_shapes:
            d = int(np.prod(shape)) if shape else 1
            s = min(d, SPREAD_COORDINATES)
            if d <= 4 * s:
                idx = np.argsort(rng.random((m, d)), axis=1)[:, :s]
            else:
                idx = rng.integers(0, d, size=(m, s))
                while True:
                    srt = np.sort(idx, axis=1)
                    dup = (np.diff(srt, axis=1) == 0).any(axis=1)
                    if not dup.any():
                        break
                    idx[dup] = rng.integers(0, d, size=(int(dup.sum()), s))
            val = rng.standard_normal((m, s))
            val /= np.linalg.norm(val, axis=1, keepdims=True) * math.sqrt(L)
            out.append((idx, val))
        return out

    def block_init(self):
        """A zero NumPy array of shape ``(block_size,)``: the dedicated block's initial value."""
        return np.zeros(self.block_size)

    # -- the step protocol --------------------------------------------------------------------------
    def begin_step(self, batch_size: Optional[int] = None, batch_indices=None) -> CanaryStep:
        """This step's canaries and their rows.

        Parameters
        ----------
        batch_size : int, optional
            Real examples in the step's batch (without ``"data"`` canaries).
        batch_indices : array of int, optional
            The dataset indices the user's sampler put in this batch, in order (required with
            ``"data"`` canaries; indices ``>= dataset_size`` are canaries).

        Returns
        -------
        CanaryStep

        Raises
        ------
        ValueError
            When a step is already open (call :meth:`observe` first), or on a missing or invalid
            batch description.
        """
        if self._step is not None:
            raise ValueError("begin_step called twice: hand back the previous step's update with observe() first")
        rng = self._rng
        if batch_indices is not None:
            bi = np.asarray(batch_indices)
            if bi.ndim != 1 or (bi.size and bi.dtype.kind not in "iu"):
                raise ValueError(f"batch_indices must be a 1-D integer array, got {bi.dtype} of shape {bi.shape}")
            top = (self.dataset_size or 0) + self.data_indices.size
            if bi.size and (bi.min() < 0 or (self.dataset_size is not None and bi.max() >= top)):
                raise ValueError(f"batch_indices must lie in [0, {top}), got values in [{bi.min()}, {bi.max()}]")
        elif "data" in self.kinds:
            raise ValueError("'data' canaries need batch_indices (the dataset indices of this step's batch)")
        else:
            bi = None
            b = check_int(batch_size, "batch_size", 0)
        if bi is not None:
            is_canary = bi >= self.dataset_size if "data" in self.kinds else np.zeros(bi.size, dtype=bool)
            real_mask = ~is_canary
        else:
            real_mask = np.ones(b, dtype=bool)
        # The user's batch, in order: real rows, and included data canaries (excluded ones removed:
        # add/remove adjacency).
        user_src = []  # ('r', i) or ('c', j)
        canary_rows: list = []  # (kind, index within kind)
        r = 0
        counts = None
        if "data" in self.kinds:
            counts = np.bincount(bi[~real_mask] - self.dataset_size, minlength=self.counts["data"])
            self._data_counts.append(counts)
        for pos in range(real_mask.size):
            if real_mask[pos]:
                user_src.append(r)
                r += 1
            else:
                j = int(bi[pos] - self.dataset_size)
                if self.masks["data"][j]:
                    user_src.append(-1 - len(canary_rows))
                    canary_rows.append(("data", j))
        own = []
        for k in self.kinds:
            if k == "data":
                continue
            inc = np.flatnonzero(self.masks[k])
            chosen = inc[rng.random(inc.size) < self.q] if self.q < 1 else inc
            own.extend((k, int(j)) for j in chosen)
        n_total = len(user_src) + len(own)
        own_pos = np.sort(rng.choice(n_total, size=len(own), replace=False)) if own else np.zeros(0, dtype=int)
        perm = rng.permutation(len(own))
        own = [own[i] for i in perm]
        src = np.empty(n_total, dtype=np.int64)
        is_own = np.zeros(n_total, dtype=bool)
        is_own[own_pos] = True
        src[~is_own] = user_src
        src[is_own] = [-1 - (len(canary_rows) + i) for i in range(len(own))]
        canary_rows.extend(own)
        real_pos = np.empty(r, dtype=np.int64)
        rpos = np.flatnonzero(src >= 0)
        real_pos[src[rpos]] = rpos
        positions = np.empty(len(canary_rows), dtype=np.int64)
        cpos = np.flatnonzero(src < 0)
        positions[(-1 - src[cpos])] = cpos
        # signs, participation
        signs = {k: np.where(self._sign_rng.random(self.counts[k]) < 0.5, -1.0, 1.0) for k in self.kinds}
        part = {k: np.zeros(self.counts[k], dtype=bool) for k in self.kinds}
        for k, j in canary_rows:
            part[k][j] = True
        rows = self._rows(canary_rows, signs)
        self._step = (signs, part)
        step = CanaryStep(rows=rows, positions=positions, real_mask=real_mask, size=n_total, _real_pos=real_pos,
                          _keys=self._keys)
        step._block = self.block_size > 0
        return step

    def _rows(self, canary_rows, signs) -> list:
        """The ``k`` canary rows, one ``(k, *shape)`` array per entry of :attr:`shapes`."""
        k = len(canary_rows)
        rows = [np.zeros((k, *s)) for s in self.shapes]
        if not k:
            return rows
        kinds = np.array([kind for kind, _ in canary_rows])
        js = np.array([j for _, j in canary_rows])
        for kind in self.kinds:
            sel = np.flatnonzero(kinds == kind)
            if not sel.size:
                continue
            j = js[sel]
            v = self.norms[kind] * signs[kind][j]
            if kind == "spread":
                for t, (idx, val) in enumerate(self._spread):
                    rows[t].reshape(k, -1)[sel[:, None], idx[j]] = v[:, None] * val[j]
            else:
                rows[-1][sel, self._offset[kind] + j] = v
        return rows

    def observe(self, update) -> dict:
        """Hand back the step's noisy gradient and record each canary's observation.

        Parameters
        ----------
        update : list (or dict) of arrays, or array of shape (block_size,)
            The step's noisy gradient (clipped sum plus noise, divided by ``batch_divisor``; before
            the learning rate or any optimizer state), one array per entry of :attr:`shapes`, or
            the dedicated block's entry alone when no ``"spread"`` canary is used. NumPy, torch
            or JAX.

        Returns
        -------
        dict
            Kind -> this step's observations (shape ``(m_kind,)``, units of ``C``).

        Raises
        ------
        ValueError
            Without an open step (:meth:`begin_step`), or on an update of the wrong shapes.
        """
        if self._step is None:
            raise ValueError("observe called without begin_step: ask for the step's canaries first")
        if isinstance(update, dict):
            update = list(update.values())
        if isinstance(update, (list, tuple)):
            arrs = [_to_numpy(u) for u in update]
            if len(arrs) != len(self.shapes) or any(a.shape != s for a, s in zip(arrs, self.shapes)):
                raise ValueError(f"update must hold arrays of shapes {self.shapes}, got {[a.shape for a in arrs]}")
        else:
            b = _to_numpy(update)
            if "spread" in self.kinds or b.shape != (self.block_size,):
                raise ValueError(f"a bare array update must be the block's, shape ({self.block_size},), and needs "
                                 f"no 'spread' canaries; got shape {b.shape}")
            arrs = [None] * len(self.user_shapes) + [b]
        signs, part = self._step
        scale = self.batch_divisor / self.C
        out = {}
        for k in self.kinds:
            if k == "spread":
                o = np.zeros(self.counts[k])
                for a, (idx, val), use in zip(arrs, self._spread, self._observed):
                    if use:
                        o += (a.reshape(-1)[idx] * val).sum(axis=1)
                o /= self.spread_signal
            else:
                off = self._offset[k]
                o = arrs[-1][off:off + self.counts[k]].copy()
            o *= scale
            if not np.all(np.isfinite(o)):  # nothing recorded; the step stays open
                raise ValueError(f"the update holds non-finite values on the {k!r} canaries")
            out[k] = o
        for k, o in out.items():
            self._obs[k].append(o)
            self._part[k].append(part[k])
            self._pattern[k].append(signs[k])
        self._step = None
        self.seconds = time.perf_counter() - self._start
        return out

    def cancel_step(self) -> None:
        """Forget the open step (a step that released nothing, e.g. a skipped accumulation step):
        nothing is recorded for it. A no-op without an open step."""
        if self._step is not None and "data" in self.kinds:
            self._data_counts.pop()
        self._step = None

    # -- results ------------------------------------------------------------------------------------
    @property
    def steps(self) -> int:
        """Steps observed so far."""
        return len(self._obs[self.kinds[0]])

    def runs(self) -> dict:
        """Kind -> :class:`~dpaudit.dpsgd.reference.TrainingRun` of the steps observed so far (its
        config: the claimed ``sigma``, ``C``, ``q`` and the number of steps).

        Raises
        ------
        ValueError
            Before the first observed step.
        """
        from .reference import DPSGDConfig, TrainingRun

        if not self.steps:
            raise ValueError("no step observed yet: call begin_step() and observe() in the training loop")
        out = {}
        for k in self.kinds:
            cfg = DPSGDConfig(noise_multiplier=self.sigma, max_grad_norm=self.C, sampling_rate=self.q,
                              steps=self.steps, canary_norm=self.norms[k])
            part = np.array(self._part[k])
            out[k] = TrainingRun(observations=np.array(self._obs[k]), mask=self.masks[k], sampled=part.sum(axis=0),
                                 participation=part, config=cfg, variant=f"canaries:{k}", seconds=self.seconds,
                                 train_accuracy=float("nan"), pattern=np.array(self._pattern[k]),
                                 details={"canary_kind": k, "canary_norm": self.norms[k],
                                          "api": "dpaudit.dpsgd.canaries"})
        return out

    def clipping_check(self) -> dict:
        """Test "each block observation is at most one clipped canary (1 in units of ``C``) plus
        N(0, sigma^2) noise", the claimed mechanism on the dedicated block, which no real gradient
        touches: ``p = min(1, 2 n Phi(-z))`` for the largest excess ``z = (|o| - 1) / sigma`` over
        the ``n`` block observations (Gaussian tail, Bonferroni; valid whatever the dependence).
        A skipped clipping of a ``"large"`` canary gives ``z`` near ``1000 / sigma``.

        Returns
        -------
        dict
            ``p_value``, ``max_excess``, ``observations`` (``n``). ``p_value`` 1 without block kinds.
        """
        from scipy.stats import norm

        block = [np.abs(np.array(self._obs[k])) for k in self.kinds if k != "spread" and self._obs[k]]
        if not block:
            return {"p_value": 1.0, "max_excess": float("nan"), "observations": 0}
        n = sum(b.size for b in block)
        z = max(float(b.max()) for b in block) - 1.0
        z /= self.sigma
        return {"p_value": float(min(1.0, 2 * n * norm.sf(z))), "max_excess": z, "observations": int(n)}

    def audit(self, *, delta: float = 1e-5, beta: float = 0.05, pooled: bool = True, **kwargs) -> CanaryAudit:
        """The one-run audit of every canary kind (:func:`dpaudit.dpsgd.audit_run`), the clipping
        check and, with ``"data"`` canaries, the sampler check, ``beta`` split equally over all
        parts (fixed before looking).

        Parameters
        ----------
        delta : float
            In (0, 1).
        beta : float
            Probability that anything reported is wrong (a bound above the truth or a check
            rejecting a correct run).
        pooled : bool
            Audit the block kinds (``"dirac"``, ``"large"``, ``"data"``: the same law under a correct
            step, no interference) as one population with the shares of ``beta`` of the kinds it
            replaces (:func:`dpaudit.dpsgd.audit.pooled_audit`, ``audits["pooled"]``; default), or
            each kind alone.
        **kwargs
            Passed to ``audit_run`` (``scores``, ``seed``, ``claim``).

        Returns
        -------
        CanaryAudit

        Raises
        ------
        ValueError
            Before the first step, or on invalid delta or beta.
        """
        from .._validate import check_delta
        from .audit import _claimed_accountant, audit_run, pooled_audit

        beta = check_probability(beta, "beta")
        runs = self.runs()
        sampler = None
        if "data" in self.kinds and self.q < 1:
            sampler = sampler_check(np.array(self._data_counts), self.q)
        has_block = any(k != "spread" for k in self.kinds)
        parts = len(runs) + has_block + (sampler is not None)
        share = beta / parts
        delta = check_delta(delta)
        acc = _claimed_accountant(self.sigma, self.q, self.steps, delta)
        block = tuple(k for k in runs if k != "spread") if pooled else ()
        block = block if len(block) > 1 else ()
        audits = {k: audit_run(r, delta=delta, beta=share, accountant=acc, **kwargs) for k, r in runs.items()
                  if k not in block}
        if block:  # one audit of the block kinds together, with their shares of beta
            audits["pooled"] = pooled_audit([runs[k] for k in block], delta=delta, beta=share * len(block),
                                            accountant=acc, **kwargs)
        clip = self.clipping_check()
        eps = float(acc.epsilon)
        lb = max(a.epsilon_lower_bound for a in audits.values())
        findings = [f"{k} canaries certify epsilon >= {a.epsilon_lower_bound:.4g} > the accountant's {eps:.4g}"
                    for k, a in audits.items() if a.violated]
        if has_block and clip["p_value"] <= share:
            findings.append(f"a canary's contribution exceeds the clipping norm ({clip['max_excess']:.3g} sigma "
                            f"above it, p = {clip['p_value']:.2g})")
        if sampler is not None and sampler["p_value"] <= share:
            findings.append(f"the sampler is not Poisson at rate {self.q:g} (p = {sampler['p_value']:.2g}; "
                            f"realised rate {sampler['rate']:.4g}, {sampler['repeats']} repeats)")
        return CanaryAudit(audits=audits, epsilon_lower_bound=lb, accountant_epsilon=eps, clipping=clip,
                           sampler=sampler, violated=bool(findings), findings=findings, beta=beta, delta=delta,
                           pooled=block)

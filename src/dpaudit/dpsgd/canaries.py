"""Gradient canaries for any DP-SGD step: plain PyTorch, JAX/Optax, NumPy, or Opacus.

A user who wrote their own DP-SGD step asks :class:`Canaries`, at every step, for the canaries'
per-example gradient rows over *their* parameter shapes and for where to put them among the real
rows; they clip, sum and noise the batch as usual and hand back the noisy gradient; dpaudit keeps
the inclusion mask, the sign patterns and the participation, turns each update into one
observation per canary, and audits the run (:meth:`Canaries.audit`: a certified one-run epsilon
bound per canary kind and one check per assumption of the accountant)::

    canaries = Canaries([w.shape, b.shape], noise_multiplier=sigma, max_grad_norm=C,
                        sampling_rate=q, batch_divisor=q * N)
    params += canaries.block_init()                     # the dedicated zero tensors (never read)
    canaries.monitor(steps=T)                           # optional: raise as soon as a check fails
    for t in range(T):
        step = canaries.begin_step(batch_size=len(xb))  # how many real rows this step has
        rows = step.insert(per_example_grads(xb, yb))   # list of (rows, *shape) arrays
        update = clip_sum_noise(rows) / (q * N)          # the user's own code, on every tensor
        canaries.observe(update)                        # before the learning rate
    print(canaries.audit(delta=1e-5).summary())

Nothing here imports torch or jax: rows are NumPy arrays, converted to the type of the arrays
given to :meth:`CanaryStep.insert` (torch tensors keep their device and dtype; JAX arrays go
through ``jax.numpy.asarray``), and updates may be of any of the three.

**The dedicated tensors.** ``blocks`` (default 4) zero-initialised parameter tensors that the
model never reads are appended after the user's (:attr:`Canaries.shapes`, :attr:`Canaries.names`,
:meth:`Canaries.layout`): no real gradient touches them, so clipping, noise and scaling act on them
exactly as on the model's own tensors, without interference. Each holds ``null_coordinates``
coordinates that no canary touches either (the noise check reads them) and the coordinates of the
block canary kinds. They must be clipped, summed and noised *with* the model's tensors (they are
model parameters as far as the step is concerned); code that flattens the parameters into one
vector must place them where :meth:`Canaries.layout` says.

**Canary kinds** (:data:`CANARY_KINDS`; several at once, the canaries and ``beta`` split among
them, fixed before the run):

* ``"dirac"``: norm ``canary_norm`` (default ``4 C``) on a coordinate of its own in one of the
  dedicated tensors: no interference from real gradients.
* ``"split"``: norm ``canary_norm`` on a coordinate of its own in *each* of the ``K`` dedicated
  tensors (``sqrt(K) canary_norm`` in all), observed along its unit direction: correct (flat)
  clipping gives 1 in units of ``C``, per-tensor clipping ``sqrt(K)``; per-tensor noise or
  scaling changes it too. No interference.
* ``"spread"``: norm ``canary_norm`` in *each* of the user's ``L`` tensors (a random direction,
  a few coordinates per tensor): operations applied to the user's own tensors only; its
  observation carries the real gradients' component along it (interference: power, not validity).
* ``"large"``: as ``"dirac"`` with norm ``large_norm`` (default ``1000 C``): a clipping skipped
  anywhere (in every row or at one batch position) shows as an observation far above 1.
* ``"paired"``: as ``"dirac"`` with norm ``200 C``, plus partner records (gradient ``-50 C`` times
  the canary's sign on the canary's coordinate), always in the dataset, Poisson-sampled at rate
  ``q`` independently of everything, placed on both sides of the canary (of one of the user's
  rows when the canary is not in the batch: the same geometry without it), with up to
  :data:`PAIRED_GUARD` of the user's rows on each side: rows clipped in groups of consecutive rows
  (any size from 2, any offset), or coupled to their neighbours, let a canary move its coordinate
  by up to ``2 C``. The norms dwarf real gradients, so that a group's clipped sum is the cluster's.
  With them comes the *crowd* (``crowd=``, default :data:`CROWD_FRACTION`): at every step partner
  rows (``-2,000 C``, a fraction of the step's other rows) and, at the steps of a fair coin, crowd
  canaries (``+20,000 C``, a third as many), all on one shared coordinate, at random positions:
  rows grouped by a structure dpaudit does not know (groups of any size up to about 10, rows
  ``k`` apart, rows picked by a hash) put crowd canaries with partners at a known rate, and the
  crowd coordinate moves by more than 1 per canary (:func:`~dpaudit.dpsgd.checks.coupling_crowd`).
* ``"nonfinite"`` (not in the defaults): as ``"dirac"``, but at the steps of a coin drawn by
  dpaudit (probability 1/2 per step) its row is non-finite (``nan`` for half of these canaries,
  ``+-inf`` for the others): a correct step drops or clips such a row; one that lets it reach the
  update, skips the step or drops the batch is caught. **Most hand-written clipping code
  (``C / (norm + 1e-6)``) and Opacus propagate a NaN row to every parameter**: use this kind in a
  test run, not in a training run whose model you keep.
* ``"data"``: ``data_canaries`` examples added to the user's *dataset* (indices
  :attr:`Canaries.data_indices`, after the ``dataset_size`` real ones), so the user's own
  sampler decides when they are in a batch; their gradient is crafted (a Dirac row), their
  realised participation is read from the batch indices the user reports, and the sampler
  check compares it with the Poisson sampling the accountant assumes (at ``q = 1``: every data
  canary exactly once in every step).

The canaries of the kinds dpaudit samples are Poisson-sampled at rate ``q`` and placed at random
positions among the real rows (never appended); all carry a random sign per canary and step
(independent of the mask), which costs nothing for a correct step and sees noise shared across
steps (``docs/dpsgd.md`` §1).

**Checks** (:mod:`dpaudit.dpsgd.checks`, ``docs/dpsgd.md`` §10): clipping (largest excess per
step; each kind's mean contribution at most ``C``), noise (the null coordinates per step and
tensor, pooled, their tails; the user's tensors through a noncentral chi-square bound), sampling
(data canaries), coupling (paired canaries), non-finite gradients, data-dependent scale. Each
is valid under the exact law of a correct implementation, and more privacy (more noise, a
smaller clipping norm, dropped non-finite rows) is never accused. :meth:`Canaries.monitor` runs
them while training runs, anytime-valid.

**Interference.** A ``"spread"`` canary's observation is the noisy update's component along its
direction, which real gradients (and other canaries) add to. The one-run audit stays sound: each
canary is included independently with probability 1/2, drawn by dpaudit, so whatever the real
gradients add to the observations is, conditionally on everything but the mask, the same for an
included canary and an excluded one (Steinke, Nasr, Jagielski 2023, Thm. 3.1: any function of the
released output is a valid score). Interference costs power, not validity.

References: Nasr et al. (2023) §4 (gradient canaries observed at every step); Steinke, Nasr,
Jagielski (2023) (inclusion with probability 1/2); Andrew et al. (2024) (random directions);
``docs/dpsgd.md`` §7 and §10.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .._validate import check_int, check_positive, check_probability, check_rate
from .checks import (Finding, clipping_step, contribution_mean, coupling_crowd, coupling_ols, dispersion_p, noise_cells,
                     noise_independence, noise_pooled, noise_upper, nonfinite_association, nonfinite_contrast,
                     scale_dependence)

__all__ = ["CANARY_KINDS", "DEFAULT_KINDS", "POOLED_KINDS", "CanaryAudit", "CanaryStep", "Canaries", "sampler_check"]

CANARY_KINDS = ("dirac", "split", "spread", "large", "paired", "nonfinite", "data")
#: Kinds used when ``kinds`` is not given: these, and ``"data"`` when ``dataset_size`` is given.
DEFAULT_KINDS = ("dirac", "split", "spread", "large", "paired")
#: How ``canaries`` is split among the kinds dpaudit samples (relative weights; ``"paired"``'s is
#: multiplied by ``min(1, 10 q)``: its partners cost about one row per step each at ``q < 1``).
KIND_WEIGHTS = {"dirac": 3, "split": 2, "spread": 3, "large": 2, "paired": 2, "nonfinite": 1}
#: Kinds whose observations give a certified one-run epsilon bound (the others feed checks only).
BOUND_KINDS = ("dirac", "split", "spread", "large", "data")
#: Bound kinds audited as one population by :meth:`Canaries.audit` (``pooled=True``): under a
#: correct step each observation is ``N(1{sampled}, sigma^2)`` in units of ``C`` with no
#: interference (``"split"``: its ``K`` coordinates summed over ``sqrt(K)``, the same law), so one
#: likelihood-ratio score serves them all. Pooling is valid for any kinds (the one-run theorems ask
#: only for independent fair inclusion); the common law makes it lose nothing. ``"spread"`` stays
#: alone: its observations carry the real gradients' component (interference).
POOLED_KINDS = ("dirac", "split", "large", "data")
#: Kinds with a coordinate of their own in one of the dedicated tensors.
_SINGLE = ("dirac", "large", "paired", "nonfinite", "data")
#: Coordinates a ``"spread"`` canary touches in each parameter tensor (at most the tensor's size).
SPREAD_COORDINATES = 16
#: A ``"spread"`` canary is observed on the tensors of at least this many coordinates only.
SPREAD_OBSERVED_MIN_SIZE = 32
#: Weight of the newest update in the moving average that centres the user-tensor noise test.
EMA_WEIGHT = 0.25
#: Norms (in units of C) of a paired canary and of each of its partners.
PAIRED_NORM, PARTNER_NORM = 200.0, 50.0
#: In a unit of dpaudit's rows: "the user's next row here" (a paired cluster without its canary).
_FILL = -1
#: User rows put on each side of a paired canary's cluster when the batch has enough of them.
PAIRED_GUARD = 3
#: Norms (in units of C) of a crowd canary and of a crowd partner (``Canaries(crowd=)``): far above
#: every other row, so that under group clipping a group's clipped sum follows its crowd rows; the
#: canary above 9 partners, so that a group of up to 10 rows with a canary still points its way.
CROWD_NORM, CROWD_PARTNER_NORM = 20000.0, 2000.0
#: Default crowd: partner rows per step as a fraction of the step's other rows (crowd canaries: a
#: third of that, at the steps of a fair coin). Used with the ``"paired"`` kind (the coupling check).
CROWD_FRACTION = 0.15
#: Crowd partners per crowd canary (at the steps of the coin): fewer canaries than partners, since two
#: canaries in one group count once (``docs/dpsgd.md`` §10, "Coupling, the crowd").
CROWD_CANARY_DIVISOR = 3


def _shape_of(p) -> tuple:
    if isinstance(p, (tuple, list)) and all(isinstance(s, (int, np.integer)) for s in p):
        return tuple(int(s) for s in p)
    shape = getattr(p, "shape", None)
    if shape is None:
        raise TypeError(f"each parameter must be an array or a shape tuple, got {type(p).__name__}")
    return tuple(int(s) for s in shape)


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def _to_numpy(x) -> np.ndarray:
    """An array of any of the supported frameworks as a float64 NumPy array (torch: detached,
    moved to the CPU)."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=float)


def _all_finite(x) -> bool:
    if _is_torch(x):
        import torch

        return bool(torch.isfinite(x.detach()).all())
    return bool(np.isfinite(np.asarray(x)).all())


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
    out = np.empty((n, *real.shape[1:]), dtype=np.result_type(real.dtype, np.float32))
    out[real_pos] = real
    out[canary_pos] = canary
    return out


def _place(canary: np.ndarray, ref, positions, n: int):
    """An ``(n, ...)`` array of ``ref``'s framework, dtype and device, zero but for ``canary`` at rows
    ``positions`` (a dedicated tensor's rows: the real examples' are zeros there)."""
    mod = type(ref).__module__
    if mod.startswith("torch"):
        import torch

        out = ref.new_zeros((n, *canary.shape[1:]))
        out[torch.as_tensor(positions, device=out.device)] = torch.as_tensor(canary, dtype=out.dtype,
                                                                             device=out.device)
        return out
    dtype = np.result_type(np.asarray(ref).dtype if not mod.startswith("jax") else ref.dtype, np.float32)
    out = np.zeros((n, *canary.shape[1:]), dtype=dtype)
    out[positions] = canary
    if mod.startswith("jax"):
        import jax.numpy as jnp

        return jnp.asarray(out)
    return out


@dataclass
class CanaryStep:
    """One step's canaries (:meth:`Canaries.begin_step`).

    Attributes
    ----------
    rows : list of ndarray, shape (k, *shape) each
        The ``k`` rows dpaudit adds to this step (canaries and partner records), one array per
        entry of :attr:`Canaries.shapes` (the dedicated tensors last), in units of the user's
        gradients (norm ``canary_norm``, ``large_norm``, ... before clipping; ``nan``/``inf``
        entries for ``"nonfinite"`` canaries at the steps of their coin).
    positions : ndarray of int, shape (k,)
        Where each row goes in the step's batch of ``size`` rows (random for the kinds dpaudit
        samples, partners next to their canary; the batch position of the index for ``"data"``
        canaries).
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
    _blocks: int = field(repr=False, default=0)
    _block_keys: Optional[list] = field(repr=False, default=None)

    def insert(self, real_rows):
        """The step's per-example gradient rows: the user's real rows with dpaudit's rows put at
        :attr:`positions`.

        Parameters
        ----------
        real_rows : list (or dict) of arrays, shape (B, *shape) each
            Per-example gradients of the ``B = real_mask.sum()`` real examples, in batch order,
            one array per user parameter, followed by one per dedicated tensor (zeros) or by
            nothing: missing dedicated tensors are taken as zeros (a dict gets them under
            :attr:`Canaries.names`). NumPy, torch or JAX arrays; the result has the same type,
            dtype and device.

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
        omitted = bool(self._blocks and len(real_rows) == len(self.rows) - self._blocks and real_rows)
        if omitted and keys is not None:
            keys += list(self._block_keys)
        if len(real_rows) != len(self.rows) and not omitted:
            raise ValueError(f"real_rows must hold {len(self.rows)} arrays (one per parameter, the dedicated tensors "
                             f"optional), got {len(real_rows)}")
        out = []
        for c in self.rows[len(real_rows):] if omitted else []:  # the real rows are zeros there
            out.append(_place(c, real_rows[0], self.positions, self.size))
        tail, out = out, []
        for r, c in zip(real_rows, self.rows):
            if tuple(r.shape) != (b, *c.shape[1:]):
                raise ValueError(f"a real row array has shape {tuple(r.shape)}, expected {(b, *c.shape[1:])} "
                                 f"({b} real examples in this step)")
            c = c if type(r).__module__.startswith("jax") else _like(c, r)
            out.append(_scatter(r, c.astype(np.asarray(r).dtype) if isinstance(c, np.ndarray) else c,
                                self._real_pos, self.positions, self.size))
        out += tail
        return out if keys is None else dict(zip(keys, out))


def sampler_check(counts, sampling_rate: float, *, draws: int = 0, seed: int = 0) -> dict:
    """Test that examples were Poisson-sampled at rate ``q`` (what the DP-SGD accountant assumes)
    from how often each of ``m`` data canaries was in each step's batch.

    Under Poisson sampling every entry ``counts[t, j]`` is an independent Bernoulli(``q``). Three
    tests, fixed in advance, combined by Bonferroni (the p-value is ``3 x`` the smallest):

    * **repeats**: an example twice in one batch (sampling with replacement, a weighted sampler)
      is impossible (p = 0 if seen, else 1);
    * **rate**: the total count against Binomial(``T m``, ``q``) (exact two-sided binomial test):
      a sampler whose rate is not ``q`` (a weighted sampler, a ``q`` computed from the wrong size);
    * **dispersion**: the spread of the per-canary counts over the steps against that of
      Binomial(``T``, ``q``), two-sided: by default the Chernoff bound of
      :func:`dpaudit.dpsgd.checks.dispersion_p` (``sum_j (c_j - T q)^2`` against its exact moment
      generating function: valid at every level, deterministic, fast); with ``draws > 0`` the
      earlier exact Monte Carlo test of the counts' variance (``draws`` null samples from
      ``seed``, p-value ``(1 + #{null at least as far}) / (draws + 1)``, so never below
      ``1 / (draws + 1)``). Shuffled batches (every example once per epoch: spread near 0), a
      dropped last batch, a non-uniform sampler (spread too large).

    At ``q = 1`` the accountant's sampling is deterministic: every example exactly once in every
    step, so any count other than 1 (an example left out, drawn twice: sampling with
    replacement) gives ``p = 0``, else ``p = 1``.

    Parameters
    ----------
    counts : array of int, shape (steps, m)
        Times data canary ``j`` was in step ``t``'s batch (included or not).
    sampling_rate : float
        The accounted Poisson rate ``q`` in (0, 1].
    draws : int
        0 (default): the Chernoff dispersion test; else the Monte Carlo test with this many null
        samples.
    seed : int
        Seed of those samples.

    Returns
    -------
    dict
        ``p_value`` (valid: at most ``a`` with probability ``<= a`` under Poisson sampling),
        ``repeats``, ``rate`` (realised, against ``q``), ``p_rate``, ``variance`` (realised and
        Poisson), ``p_dispersion``, ``p_repeats``; at ``q = 1`` also ``missing`` (counts of 0).

    Raises
    ------
    ValueError
        On counts that are not a non-negative integer array of shape (steps, m), or q outside (0, 1].

    References
    ----------
    Chua et al. (2024) (shuffled batches are not Poisson); Opacus issue #813 (a weighted sampler
    accounted as uniform); Bonferroni; Chernoff (1952); Barnard (1963) (Monte Carlo tests).
    """
    from scipy.stats import binomtest

    c = np.asarray(counts)
    if c.ndim != 2 or c.size == 0 or c.dtype.kind not in "iu" or (c < 0).any():
        raise ValueError(f"counts must be a non-negative integer array of shape (steps, m), got {c.dtype} {c.shape}")
    q = float(sampling_rate)
    if not 0 < q <= 1:
        raise ValueError(f"the sampler check needs a sampling rate in (0, 1], got {sampling_rate!r}")
    T, m = c.shape
    repeats = int((c > 1).sum())
    per = c.sum(axis=0).astype(float)
    if q == 1:
        missing = int((c == 0).sum())
        p = 0.0 if (repeats or missing) else 1.0
        return {"p_value": p, "repeats": repeats, "missing": missing, "rate": float(c.sum()) / (T * m),
                "accounted_rate": 1.0, "p_rate": p, "variance": float(per.var()), "poisson_variance": 0.0,
                "p_dispersion": 1.0, "p_repeats": 0.0 if repeats else 1.0}
    p_rep = 0.0 if repeats else 1.0
    total = int(c.sum())
    p_rate = float(binomtest(min(total, T * m), T * m, q).pvalue)  # (with repeats p_repeats is 0 anyway)
    var0 = T * q * (1 - q)
    stat = abs(per.var() - var0)
    if not draws:
        p_disp = dispersion_p(np.minimum(per, T), T, q) if not repeats else 1.0
    else:
        gen, hits, left = np.random.default_rng(seed), 0, int(draws)
        while left and m > 1:  # in chunks of about 2 million draws
            k = min(left, max(1, 2_000_000 // m))
            null = gen.binomial(T, q, size=(k, m)).astype(float)
            hits += int(np.sum(np.abs(null.var(axis=1) - var0) >= stat))
            left -= k
        p_disp = float((1 + hits) / (draws + 1)) if m > 1 else 1.0
    return {"p_value": min(1.0, 3 * min(p_rep, p_rate, p_disp)), "repeats": repeats, "rate": total / (T * m),
            "accounted_rate": q, "p_rate": p_rate, "variance": float(per.var()), "poisson_variance": var0,
            "p_dispersion": p_disp, "p_repeats": p_rep}


@dataclass(frozen=True)
class CanaryAudit:
    """What :meth:`Canaries.audit` found: one :class:`~dpaudit.dpsgd.audit.DPSGDAudit` per canary
    kind with a bound, and one check per assumption of the accountant.

    Attributes
    ----------
    audits : dict
        Canary kind -> ``DPSGDAudit`` (each at its level, :attr:`levels`).
    epsilon_lower_bound : float
        Largest certified epsilon lower bound over the kinds (probability ``>= 1 - beta`` for the
        whole object, all parts together).
    accountant_epsilon : float
        The accountant's epsilon (an upper bound for the claimed mechanism).
    clipping : dict
        ``p_value`` (Bonferroni over its two sub-tests, ``largest excess`` per step and each
        kind's ``mean`` contribution), ``max_excess`` (largest ``(|o| - bound) / sigma``),
        ``observations``, ``means`` (kind -> estimated contribution in units of ``C``).
    sampler : dict or None
        :func:`sampler_check` of the data canaries (``None`` without them).
    violated : bool
        A certified bound above the accountant's epsilon, or a check rejected at its level: the
        run is not the mechanism its accountant describes.
    findings : list of str
        One line per reason for ``violated`` (the messages of :attr:`violations`).
    beta, delta : float
    checks : dict
        Check name -> its sub-tests' results (p-values, statistics, locations).
    violations : list of Finding
        The rejected tests with their check, steps, tensors, p-value and level.
    levels : dict
        ``(check, test)`` -> the part of ``beta`` it was tested at (fixed before the run).
    notes : list of str
        Diagnostics that are not violations (units that look wrong, a signal that does not reach
        the update, more noise than claimed).
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
    checks: dict = field(default_factory=dict)
    violations: list = field(default_factory=list)
    levels: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    pooled: tuple = ()
    """The block kinds audited together as one population (``audits["pooled"]``,
    :func:`dpaudit.dpsgd.audit.pooled_audit`); empty when each kind is audited alone."""

    @property
    def best_kind(self) -> Optional[str]:
        """The canary kind that gave :attr:`epsilon_lower_bound` (``None`` when no kind gives a
        bound: only check kinds, or no finite update observed)."""
        if not self.audits:
            return None
        return max(self.audits, key=lambda k: self.audits[k].epsilon_lower_bound)

    def summary(self) -> str:
        """A few lines: the verdict, the accountant's epsilon, each kind's certified bound, the checks."""
        head = ("VIOLATION: " + "; ".join(self.findings)) if self.violated else \
            "no violation found (a lower bound cannot prove privacy)"
        lines = [f"dpaudit DP-SGD canary audit: {head}",
                 f"  accountant epsilon at delta={self.delta:g}: {self.accountant_epsilon:.4g}",
                 (f"  certified one-run lower bound: {self.epsilon_lower_bound:.4g} (kind {self.best_kind!r}, "
                  f"beta={self.beta:g} split over the kinds and checks)" if self.audits else
                  "  certified one-run lower bound: none (no canary kind with a bound was audited: "
                  f"{'no finite update observed' if not self.checks or set(self.checks) == {'nonfinite'} else 'check kinds only'})")]
        for k, a in self.audits.items():
            lines.append(f"    {k:7s} {a.canaries:6d} canaries: epsilon >= {a.epsilon_lower_bound:.4g} "
                         f"(score {a.best_score!r}{', kinds ' + '+'.join(self.pooled) if k == 'pooled' else ''})")
            if a.is_suspect:
                lines.append(f"    {'':7s} SUSPECT (not a violation): {a.suspect_text()}")
        for name, res in self.checks.items():
            lines.append(f"  {name} check: p = {res['p_value']:.3g}" + (f" ({res['text']})" if res.get("text") else ""))
        for n in self.notes:
            lines.append(f"  note: {n}")
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
    canaries : int or dict
        Canaries of the kinds dpaudit samples, split among those in ``kinds`` by
        :data:`KIND_WEIGHTS` (at least 2 each); or a dict kind -> count.
    kinds : sequence of str, optional
        Subset of :data:`CANARY_KINDS`; default :data:`DEFAULT_KINDS`, plus ``"data"`` when
        ``dataset_size`` is given.
    dataset_size : int, optional
        ``N``, the user's real examples; with ``"data"`` canaries the user's dataset gets
        ``data_canaries`` more entries, indices ``N .. N + data_canaries - 1``
        (:attr:`dataset_size_with_canaries` in all).
    data_canaries : int, optional
        Number of ``"data"`` canaries (default: the ``"dirac"`` count, or ``canaries // 3``).
    canary_norm : float, optional
        Norm of ``"dirac"``, ``"nonfinite"`` and ``"data"`` canary rows (default ``4 C``); a
        ``"split"`` or ``"spread"`` row has this norm in each tensor it touches.
    large_norm : float, optional
        Norm of ``"large"`` canary rows (default ``1000 C``).
    block : bool
        ``False``: no dedicated tensors (``blocks=0``; only ``"spread"`` canaries).
    blocks : int
        Number ``K`` of dedicated zero tensors (default 4; at least 2 for ``"split"``).
    null_coordinates : int
        Coordinates per dedicated tensor that nothing touches (the noise check's), default 64.
    partners : int, optional
        Partner records per ``"paired"`` canary (default 2 at ``q = 1``, ``ceil(1 / q)`` below:
        one in the batch on average).
    crowd : float, optional
        The coupling check's crowd (with ``"paired"`` canaries; default :data:`CROWD_FRACTION`,
        ``0`` for none): at every step ``ceil(crowd * n)`` partner rows (``-2,000 C`` on one shared
        coordinate of a dedicated tensor) and, at the steps of a fair coin, ``ceil(crowd * n / 3)``
        crowd canaries (``+20,000 C`` there), ``n`` the step's other rows, all at random positions:
        coupling of rows in groups the auditor does not know (consecutive rows, rows ``k`` apart,
        rows picked by a hash; :func:`~dpaudit.dpsgd.checks.coupling_crowd`). It adds about
        ``7 crowd / 6`` of the step's rows (17 % at the default).
    batch_divisor : float or "expected"
        The public number the user's step divides the noisy sum by (the expected batch size for a
        mean, 1 for a sum): observations are ``batch_divisor * update / C``. ``"expected"``: ``q``
        times :attr:`dataset_size_with_canaries` (needs ``dataset_size``). It may be set later
        (``canaries.batch_divisor = ...``) but must be the number the step divides by.
    seed : int
        Seeds the mask, the sampling, the positions, the signs and the directions.

    Attributes
    ----------
    shapes : list of tuple
        Parameter shapes the rows and updates are over (the user's, then the dedicated tensors).
    names : list of str
        A name per entry of :attr:`shapes` (the user's keys, or ``param[i]``; then
        ``dpaudit_canary_block_0`` ...).
    block_shapes : list of tuple
        Shapes of the dedicated tensors.
    block_size : int
        Coordinates of all dedicated tensors together (0 without them).
    data_indices : ndarray of int
        The dataset indices of the ``"data"`` canaries.
    masks : dict
        Kind -> which of its canaries are included (bool array).

    Raises
    ------
    ValueError
        On invalid rates, norms or counts, an unknown kind, a block kind without dedicated
        tensors, ``"split"`` with fewer than 2 of them, ``"data"`` without ``dataset_size``, or
        ``crowd`` outside ``[0, 10]`` or given without ``"paired"``.
    TypeError
        On a parameter that is neither an array nor a shape.

    References
    ----------
    Nasr et al. (2023); Steinke, Nasr, Jagielski (2023); Andrew et al. (2024).
    """

    def __init__(self, params, *, noise_multiplier: float, max_grad_norm: float, sampling_rate: float,
                 canaries=1500, kinds=None, dataset_size: Optional[int] = None,
                 data_canaries: Optional[int] = None, canary_norm: Optional[float] = None,
                 large_norm: Optional[float] = None, block: bool = True, blocks: int = 4,
                 null_coordinates: int = 64, partners: Optional[int] = None, crowd: Optional[float] = None,
                 batch_divisor=1.0, seed: int = 0):
        self._keys = list(params) if isinstance(params, dict) else None
        plist = list(params.values()) if isinstance(params, dict) else list(params)
        if not plist:
            raise ValueError("params must name at least one parameter")
        self.user_shapes = [_shape_of(p) for p in plist]
        self.sigma = check_positive(noise_multiplier, "noise_multiplier")
        self.C = check_positive(max_grad_norm, "max_grad_norm")
        self.q = check_rate(sampling_rate, "sampling_rate")
        K = check_int(blocks, "blocks", 1) if block else 0
        if kinds is None:
            kinds = DEFAULT_KINDS + (("data",) if dataset_size is not None else ())
            if not K:
                kinds = ("spread",)
            elif K < 2:
                kinds = tuple(k for k in kinds if k != "split")
        kinds = tuple(kinds)
        bad = [k for k in kinds if k not in CANARY_KINDS]
        if not kinds or bad or len(set(kinds)) != len(kinds):
            raise ValueError(f"kinds must be distinct kinds from {CANARY_KINDS}, got {kinds!r}")
        if not K and any(k != "spread" for k in kinds):
            raise ValueError(f"kinds {[k for k in kinds if k != 'spread']} need the dedicated tensors (block=True)")
        if "split" in kinds and K < 2:
            raise ValueError(f"'split' canaries need at least 2 dedicated tensors, got blocks={blocks!r}")
        if "data" in kinds and dataset_size is None:
            raise ValueError("'data' canaries need dataset_size (the number of real examples)")
        self.kinds = kinds
        own = [k for k in kinds if k != "data"]
        if isinstance(canaries, dict):
            if set(canaries) != set(own):
                raise ValueError(f"canaries as a dict must give a count for each of {own}, got {sorted(canaries)}")
            self.counts = {k: check_int(canaries[k], f"canaries[{k!r}]", 2) for k in own}
        else:
            total = check_int(canaries, "canaries", 2 * max(1, len(own)))
            # A paired canary brings about one partner row to every step at q < 1 (ceil(1/q)
            # partners at rate q), 2 / q times the rows of another canary: its weight shrinks with q.
            weights = {k: KIND_WEIGHTS[k] * (min(1.0, 10 * self.q) if k == "paired" else 1.0) for k in own}
            w = sum(weights.values())
            self.counts = {k: max(2, int(total * weights[k] // w)) for k in own}
        if "data" in kinds:
            self.dataset_size = check_int(dataset_size, "dataset_size", 1)
            default = self.counts.get("dirac", max(2, (sum(self.counts.values()) or 6) // 3))
            self.counts["data"] = check_int(default if data_canaries is None else data_canaries, "data_canaries", 2)
            self.data_indices = np.arange(self.dataset_size, self.dataset_size + self.counts["data"])
        else:
            self.dataset_size = None if dataset_size is None else check_int(dataset_size, "dataset_size", 1)
            self.data_indices = np.zeros(0, dtype=int)
        cn = 4.0 * self.C if canary_norm is None else check_positive(canary_norm, "canary_norm")
        self.norms = {"dirac": cn, "nonfinite": cn, "data": cn, "split": cn * math.sqrt(max(K, 1)),
                      "large": 1000.0 * self.C if large_norm is None else check_positive(large_norm, "large_norm"),
                      "paired": PAIRED_NORM * self.C}
        # a spread canary has norm canary_norm in each of the L tensors: any per-tensor clipping cuts it
        self.norms["spread"] = cn * math.sqrt(len(self.user_shapes))
        self.partner_norm = PARTNER_NORM * self.C
        if "paired" in kinds:
            default_p = 2 if self.q == 1 else min(64, max(1, math.ceil(1.0 / self.q)))
            self.partners = check_int(default_p if partners is None else partners, "partners", 1)
        else:
            self.partners = 0
        if crowd is not None and not (isinstance(crowd, (int, float, np.integer, np.floating))
                                      and not isinstance(crowd, bool) and 0 <= crowd <= 10):
            raise ValueError(f"crowd must be a number in [0, 10] (partner rows per row of the step), got {crowd!r}")
        if crowd and "paired" not in kinds:
            raise ValueError(f"crowd={crowd!r} needs the 'paired' kind (the crowd is the coupling check's)")
        #: partner rows per other row of a step (0: no crowd); crowd canaries are a third of that
        self.crowd = float(CROWD_FRACTION if crowd is None else crowd) if "paired" in kinds else 0.0
        rng = np.random.default_rng(seed)
        self._rng = np.random.default_rng([seed, 1])  # sampling and positions
        self._sign_rng = np.random.default_rng([seed, 7])
        self._coin_rng = np.random.default_rng([seed, 11])
        self._crowd_rng = np.random.default_rng([seed, 13])
        self.masks = {k: rng.random(self.counts[k]) < 0.5 for k in kinds}
        self._layout_blocks(K, check_int(null_coordinates, "null_coordinates", 0) if K else 0)
        self.user_names = list(self._keys) if self._keys is not None else [f"param[{i}]" for i in
                                                                         range(len(self.user_shapes))]
        self.names = self.user_names + self.block_names
        self.shapes = self.user_shapes + self.block_shapes
        self._user_dof = np.array([int(np.prod(s)) if s else 1 for s in self.user_shapes])
        if "spread" in kinds:
            self._spread = self._directions(self.counts["spread"], rng)
            sizes = self._user_dof
            big = sizes >= SPREAD_OBSERVED_MIN_SIZE
            if not big.any():
                big = sizes == sizes.max()
            # The observation direction: the canary's own direction on the large tensors only,
            # renormalised (tiny tensors, a bias of 10, are shared by every canary and carry
            # large real gradients: most of the interference, little of the signal).
            self._observed = big
            # <clipped canary, u restricted to them> = C * (share of the norm there): divided out,
            # so that a correct step's signal is 1 (in units of C) as for the block kinds.
            self.spread_signal = float(big.sum() / big.size)
            self._spread_idx_cache: dict = {}
        if "nonfinite" in kinds:  # nan for even-numbered canaries, +-inf for odd ones
            self._nonfinite_nan = (np.arange(self.counts["nonfinite"]) % 2) == 0
        # the rows dpaudit adds to a step are Binomial(_own_trials, q): one draw per included canary
        # of its own kinds and one per partner record
        self._own_trials = int(sum(int(self.masks[k].sum()) for k in kinds if k != "data")
                               + self.partners * self.counts.get("paired", 0))
        self._divisor = None
        self.batch_divisor = batch_divisor
        self._obs = {k: [] for k in kinds}
        self._part = {k: [] for k in kinds}
        self._pattern = {k: [] for k in kinds}
        self._partner_count: list = []  # (m_paired,) partners in the batch, per observed step
        self._crowd_obs: list = []  # per observed step: (sign-corrected crowd coordinate, canaries, partners)
        self._null: list = []  # (K, n0) null coordinates in units of sigma, per observed step
        self._user_ss: list = []  # (L,) centred sums of squares in units of sigma^2
        self._own_rows: list = []  # rows dpaudit added (canaries and partners), per observed step
        #: the clipping norm of every observed step (``begin_step(max_grad_norm=)``, else ``max_grad_norm``)
        self.clip_norms: list = []
        self._coin: list = []  # the non-finite coin of each observed step
        self._nf_present: list = []  # non-finite rows were in the observed step
        self._step_no: list = []  # the begun-step number of each observed step
        self._step_tests: list = []  # per observed step: the per-step tests' p-values
        self._begun = 0
        self._log: list = []  # per begun step: (step number, outcome, non-finite rows present)
        self._nonfinite_updates: list = []  # (step, tensor names, non-finite rows present)
        self._ema: list = [None] * len(self.user_shapes)
        self._null_unit = None  # the null coordinates of each observed step, unit norm per tensor
        self._null_ss: list = []  # per observed step: the null coordinates' sum of squares per tensor
        self._data_counts: list = []
        self._step = None
        self._monitor = None
        self._start = time.perf_counter()
        self.seconds = 0.0  # wall time from construction to the last observed step

    # -- construction -------------------------------------------------------------------------------
    def _layout_blocks(self, K: int, n0: int) -> None:
        """Where each block canary's coordinate lives: ``K`` tensors, each ``[null | split | the
        single-coordinate kinds, canary j of a kind in tensor j mod K]``."""
        self.blocks = K
        self.null_coordinates = n0
        self._coords: dict = {}  # kind -> (tensor (m,), coordinate (m,))
        self._crowd_at = None  # (tensor, coordinate) of the crowd's shared coordinate
        if not K:
            self.block_shapes, self.block_names, self.block_size = [], [], 0
            self._split_offset = 0
            return
        m_split = self.counts.get("split", 0)
        self._split_offset = n0
        fill = np.full(K, n0 + m_split)
        for k in self.kinds:
            if k in _SINGLE:
                m = self.counts[k]
                t = np.arange(m) % K
                c = np.empty(m, dtype=np.int64)
                for b in range(K):
                    sel = t == b
                    c[sel] = fill[b] + np.arange(int(sel.sum()))
                    fill[b] += int(sel.sum())
                self._coords[k] = (t, c)
        if self.crowd:  # one shared coordinate, after the others of tensor 0
            self._crowd_at = (0, int(fill[0]))
            fill[0] += 1
        self.block_shapes = [(int(s),) for s in fill]
        self.block_names = [f"dpaudit_canary_block_{b}" for b in range(K)]
        self.block_size = int(fill.sum())

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

    @property
    def batch_divisor(self) -> float:
        """The public number the step divides the noisy sum by (see the class docstring)."""
        return self._divisor

    @batch_divisor.setter
    def batch_divisor(self, value) -> None:
        if isinstance(value, str):
            if value != "expected":
                raise ValueError(f"batch_divisor must be a positive number or 'expected', got {value!r}")
            if self.dataset_size is None:
                raise ValueError("batch_divisor='expected' needs dataset_size (q times the dataset with its canaries)")
            value = self.q * self.dataset_size_with_canaries
        self._divisor = check_positive(value, "batch_divisor")

    @property
    def dataset_size_with_canaries(self) -> Optional[int]:
        """The user's dataset with the ``"data"`` canaries: ``dataset_size + data_canaries``
        (what the user's loader iterates over; its expected batch is ``q`` times this)."""
        return None if self.dataset_size is None else int(self.dataset_size + self.data_indices.size)

    def block_init(self) -> list:
        """Zero NumPy arrays, one per dedicated tensor (:attr:`block_shapes`): their initial (and,
        at learning rate 0, constant) values. The model never reads them."""
        return [np.zeros(s) for s in self.block_shapes]

    def layout(self) -> list:
        """Where every tensor sits in a flat parameter vector that concatenates :attr:`shapes` in
        order: a list of ``(name, shape, start, stop)``. The dedicated tensors come *after* the
        user's: code that splits a flat vector into layers must use these boundaries (the user's
        own layer boundaries are unchanged; the dedicated tensors are the last
        ``block_size`` entries)."""
        out, start = [], 0
        for n, s in zip(self.names, self.shapes):
            size = int(np.prod(s)) if s else 1
            out.append((n, s, start, start + size))
            start += size
        return out

    # -- the step protocol --------------------------------------------------------------------------
    def begin_step(self, batch_size: Optional[int] = None, batch_indices=None, *,
                   max_grad_norm: Optional[float] = None) -> CanaryStep:
        """This step's canaries and their rows.

        Parameters
        ----------
        batch_size : int, optional
            Real examples in the step's batch (without ``"data"`` canaries).
        batch_indices : array of int, optional
            The dataset indices the user's sampler put in this batch, in order (required with
            ``"data"`` canaries; indices ``>= dataset_size`` are canaries).
        max_grad_norm : float, optional
            The clipping norm ``C_t`` this step clips at and scales its noise by (``sigma C_t``),
            when it changes over the run (adaptive clipping, e.g. Opacus's ``AdaClipDPOptimizer``
            or a quantile tracker of Andrew et al. 2021; a schedule); default the constructor's
            ``max_grad_norm``. dpaudit's rows get norms in units of ``C_t`` and the step's
            observations are read in units of ``C_t`` (``batch_divisor * update / C_t``), so every
            check's null holds exactly for a correct step whatever the norms are (docs/dpsgd.md
            §10, "A clipping norm that changes"). The norm must be the one the step uses; how it
            was chosen (privately, from noisy counts) is not checked.

        Returns
        -------
        CanaryStep

        Raises
        ------
        ValueError
            When a step is already open (call :meth:`observe` or :meth:`cancel_step` first), or on
            a missing or invalid batch description.
        """
        if self._step is not None:
            raise ValueError("begin_step called twice: hand back the previous step's update with observe() "
                             "(or cancel_step() for a step that released nothing) first")
        C_t = self.C if max_grad_norm is None else check_positive(max_grad_norm, "max_grad_norm")
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
        self._begun += 1
        coin = bool(self._coin_rng.random() < 0.5) if "nonfinite" in self.kinds else False
        # The user's batch, in order: real rows, and included data canaries (excluded ones removed:
        # add/remove adjacency). Descriptors of dpaudit's rows: (kind, index, role 0 canary / 1 partner).
        kinds_l, js_l, roles_l = [], [], []
        user_src = np.empty(real_mask.size, dtype=np.int64)
        r = 0
        if "data" in self.kinds:
            self._data_counts.append(np.bincount(bi[~real_mask] - self.dataset_size, minlength=self.counts["data"]))
        n_user = 0
        for pos in range(real_mask.size):
            if real_mask[pos]:
                user_src[n_user] = r
                n_user += 1
                r += 1
            else:
                j = int(bi[pos] - self.dataset_size)
                if self.masks["data"][j]:
                    user_src[n_user] = -1 - len(kinds_l)
                    n_user += 1
                    kinds_l.append("data")
                    js_l.append(j)
                    roles_l.append(0)
        user_src = user_src[:n_user]
        units = []  # dpaudit's own units: lists of descriptor indices (a canary with its partners next to it)
        # A paired canary that is not in the batch keeps its partners in the same cluster, with one of the
        # user's rows (_FILL) where the canary would be, while the user has rows to spare: the cluster's
        # geometry is then the same with and without the canary, whatever groups of positions a buggy step
        # clips together (see _merge).
        fill_left = n_user
        paired_units = []

        def add(kind, j, role):
            kinds_l.append(kind)
            js_l.append(int(j))
            roles_l.append(role)
            return len(kinds_l) - 1

        part = {k: np.zeros(self.counts[k], dtype=bool) for k in self.kinds}
        npart = None
        for k in self.kinds:
            if k == "data":
                continue
            inc = np.flatnonzero(self.masks[k])
            chosen = inc[rng.random(inc.size) < self.q] if self.q < 1 else inc
            part[k][chosen] = True
            if k != "paired":
                units.extend([add(k, j, 0)] for j in chosen)
                continue
            m = self.counts[k]
            present = rng.random((m, self.partners)) < self.q if self.q < 1 else np.ones((m, self.partners), bool)
            npart = present.sum(axis=1)
            for j in range(m):
                pj = int(npart[j])
                if not part[k][j] and not pj:
                    continue
                # the canary (or, when it is not in the batch, a user's row) with its partners on both sides
                before = [add(k, j, 1) for _ in range(pj // 2)]
                if part[k][j]:
                    middle = [add(k, j, 0)]
                elif fill_left:
                    middle = [_FILL]
                    fill_left -= 1
                else:
                    middle = []
                units.append(before + middle + [add(k, j, 1) for _ in range((pj + 1) // 2)])
                paired_units.append(len(units) - 1)
        if paired_units:  # user rows on both sides of every paired cluster while there are enough of them:
            # no other unit of dpaudit's (a "large" canary would swallow a group) shares its small groups
            w = min(PAIRED_GUARD, fill_left // (2 * len(paired_units)))
            for i in paired_units:
                units[i] = [_FILL] * w + units[i] + [_FILL] * w
            fill_left -= 2 * w * len(paired_units)
        crowd = None
        if self.crowd:  # the crowd (checks.coupling_crowd): single rows at random slots, like every unit
            n0 = n_user + sum(1 for u in units for d in u if d != _FILL)
            n_p, n_c = max(1, math.ceil(self.crowd * n0)), max(1, math.ceil(self.crowd * n0 / CROWD_CANARY_DIVISOR))
            on = bool(self._crowd_rng.random() < 0.5)
            sign = 1.0 if self._crowd_rng.random() < 0.5 else -1.0
            units.extend([add("crowd", 0, 1)] for _ in range(n_p))
            if on:
                units.extend([add("crowd", 0, 0)] for _ in range(n_c))
            crowd = (sign, n_c if on else 0, n_p)
        n_units = len(units)
        lens = np.array([sum(d != _FILL for d in u) for u in units], dtype=np.int64)
        n_fill = n_user - fill_left
        perm = rng.permutation(n_units)
        # "large" canaries (when there are any) take the batch's first and last rows, where
        # off-by-one bugs live; every other unit goes to a random slot among the user's rows.
        big = [i for i in range(n_units) if kinds_l[next(d for d in units[perm[i]] if d != _FILL)] == "large"]
        ends = big[:2] if n_units >= 2 else []
        if ends:
            rest = [i for i in range(n_units) if i not in ends]
            perm = perm[[ends[0]] + rest + ends[1:]]
        units = [units[i] for i in perm]
        lens = lens[perm]
        n_slots = n_user - n_fill + n_units
        if not n_units:
            slots = np.zeros(0, dtype=np.int64)
        elif len(ends) == 2:
            inner = rng.choice(np.arange(1, n_slots - 1), size=n_units - 2, replace=False)
            slots = np.concatenate([[0], np.sort(inner), [n_slots - 1]])
        elif len(ends) == 1:
            slots = np.concatenate([[0], np.sort(rng.choice(np.arange(1, n_slots), size=n_units - 1, replace=False))])
        else:
            slots = np.sort(rng.choice(n_slots, size=n_units, replace=False))
        n_total = n_user + int(lens.sum())
        src = self._merge(units, slots, user_src, n_total)
        real_pos = np.empty(r, dtype=np.int64)
        rpos = np.flatnonzero(src >= 0)
        real_pos[src[rpos]] = rpos
        positions = np.empty(len(kinds_l), dtype=np.int64)
        cpos = np.flatnonzero(src < 0)
        positions[(-1 - src[cpos])] = cpos
        if "data" in self.kinds:
            part["data"][[j for k, j in zip(kinds_l, js_l) if k == "data"]] = True
        signs = {k: np.where(self._sign_rng.random(self.counts[k]) < 0.5, -1.0, 1.0) for k in self.kinds}
        desc = (np.array(kinds_l, dtype=object), np.array(js_l, dtype=np.int64), np.array(roles_l, dtype=np.int8))
        rows = self._rows(desc, signs, coin, crowd[0] if crowd else 1.0, C_t / self.C)
        nf = bool(coin and "nonfinite" in self.kinds and part["nonfinite"].any())
        # own_rows: the Binomial(_own_trials, q) rows the scale check reads (the crowd's are not random in q)
        own = int(lens.sum()) - (crowd[1] + crowd[2] if crowd else 0)
        self._step = {"signs": signs, "part": part, "npart": npart, "own_rows": own, "coin": coin,
                      "nf": nf, "no": self._begun, "crowd": crowd, "C": C_t}
        return CanaryStep(rows=rows, positions=positions, real_mask=real_mask, size=n_total, _real_pos=real_pos,
                          _keys=self._keys, _blocks=self.blocks, _block_keys=self.block_names)

    @staticmethod
    def _merge(units, slots, user_src, n_total: int) -> np.ndarray:
        """The batch, row by row: ``src[row]`` is the user's row index (``>= 0``) or ``-1 -``
        descriptor. dpaudit's units go to ``slots`` among the user's rows (kept in their order); a
        unit's :data:`_FILL` entries take the user's next row. A paired canary's unit is
        ``[partners, canary, partners]`` (``[partners, user row, partners]`` when the canary is not
        in the batch): any rule that clips groups of two or more *consecutive* rows together puts the
        canary with at least one of its partners, and the same positions hold the same rows but the
        canary without it. Positions are the auditor's choice: a correct step ignores them."""
        src = np.empty(n_total, dtype=np.int64)
        n_free = len(user_src) - sum(1 for u in units for d in u if d == _FILL)
        is_own = np.zeros(n_free + len(units), dtype=bool)
        is_own[slots] = True
        pos, ui, oi = 0, 0, 0
        for own in is_own:
            if own:
                for d in units[oi]:
                    if d == _FILL:
                        src[pos] = user_src[ui]
                        ui += 1
                    else:
                        src[pos] = -1 - d
                    pos += 1
                oi += 1
            else:
                src[pos] = user_src[ui]
                ui += 1
                pos += 1
        return src

    def _rows(self, desc, signs, coin: bool, crowd_sign: float = 1.0, factor: float = 1.0) -> list:
        """dpaudit's ``k`` rows of the step, one ``(k, *shape)`` array per entry of :attr:`shapes`
        (norms in units of the step's clipping norm: ``factor`` is ``C_t / C``)."""
        kinds, js, roles = desc
        k = len(js)
        rows = [np.zeros((k, *s)) for s in self.shapes]
        if not k:
            return rows
        L = len(self.user_shapes)
        sel = np.flatnonzero(kinds == "crowd")
        if sel.size:
            b, c = self._crowd_at
            rows[L + b][sel, c] = np.where(roles[sel] == 0, CROWD_NORM, -CROWD_PARTNER_NORM) * self.C * crowd_sign
        for kind in self.kinds:
            sel = np.flatnonzero((kinds == kind) & (roles == 0))
            if kind == "paired":
                psel = np.flatnonzero((kinds == kind) & (roles == 1))
                if psel.size:
                    t, c = self._coords[kind]
                    j = js[psel]
                    for b in range(self.blocks):
                        s2 = t[j] == b
                        rows[L + b][psel[s2], c[j[s2]]] = -self.partner_norm * signs[kind][j[s2]]
            if not sel.size:
                continue
            j = js[sel]
            v = signs[kind][j] * (self.norms[kind] if kind != "split" else self.norms["dirac"])
            if kind == "nonfinite" and coin:
                v = np.where(self._nonfinite_nan[j], np.nan, signs[kind][j] * np.inf)
            if kind == "spread":
                for t, (idx, val) in enumerate(self._spread):
                    rows[t].reshape(k, -1)[sel[:, None], idx[j]] = v[:, None] * val[j]
            elif kind == "split":
                for b in range(self.blocks):
                    rows[L + b][sel, self._split_offset + j] = v
            else:
                t, c = self._coords[kind]
                for b in range(self.blocks):
                    s2 = t[j] == b
                    rows[L + b][sel[s2], c[j[s2]]] = v[s2]
        if factor != 1.0:
            for r in rows:
                r *= factor
        return rows

    def _spread_index(self, t: int, u):
        """The spread canaries' flat indices into user tensor ``t`` as a torch tensor on ``u``'s
        device (cached)."""
        import torch

        key = (t, str(u.device))
        if key not in self._spread_idx_cache:
            self._spread_idx_cache[key] = torch.as_tensor(self._spread[t][0], device=u.device)
        return self._spread_idx_cache[key]

    def _parse_update(self, update) -> tuple:
        """``(user arrays or None, block NumPy arrays)`` of an update in any accepted form."""
        K, L = self.blocks, len(self.user_shapes)
        if isinstance(update, dict):
            update = list(update.values())
        if isinstance(update, (list, tuple)):
            arrs = list(update)
            shapes = [tuple(a.shape) for a in arrs]
            if len(arrs) == len(self.shapes) and shapes == [tuple(s) for s in self.shapes]:
                return arrs[:L], arrs[L:]
            if K and "spread" not in self.kinds and len(arrs) == K and shapes == [tuple(s) for s in self.block_shapes]:
                return None, arrs
            raise ValueError(f"update must hold arrays of shapes {self.shapes} (or, without 'spread' canaries, the "
                             f"dedicated tensors' alone, {self.block_shapes}); got {shapes}")
        b = update
        if K == 1 and "spread" not in self.kinds and tuple(b.shape) == self.block_shapes[0]:
            return None, [b]
        raise ValueError(f"a bare array update must be the single dedicated tensor's, shape "
                         f"{self.block_shapes[0] if K == 1 else '(blocks=1 only)'}, and needs no 'spread' canaries; "
                         f"got shape {tuple(getattr(b, 'shape', ()))}")

    def observe(self, update) -> dict:
        """Hand back the step's noisy gradient and record each canary's observation and what the
        checks read (the null coordinates, the user tensors' noise statistic).

        Parameters
        ----------
        update : list (or dict) of arrays, or array
            The step's noisy gradient (clipped sum plus noise, divided by ``batch_divisor``; before
            the learning rate or any optimizer state), one array per entry of :attr:`shapes`; or,
            without ``"spread"`` canaries, the dedicated tensors' alone (then the user tensors'
            noise is not checked); or, with a single dedicated tensor, that array. NumPy, torch or
            JAX.

        Returns
        -------
        dict
            Kind -> this step's observations (shape ``(m_kind,)``, units of ``C``); empty when the
            update was not finite (recorded as a finding of the ``nonfinite`` check).

        Raises
        ------
        ValueError
            Without an open step (:meth:`begin_step`), or on an update of the wrong shapes.
        DPSGDViolation
            With a monitor attached (:meth:`monitor`, ``action="raise"``), as soon as a check
            fails; the step is recorded first.
        """
        if self._step is None:
            raise ValueError("observe called without begin_step: ask for the step's canaries first")
        user, blocks = self._parse_update(update)
        st = self._step
        bad = [n for n, a in zip(self.user_names, user or []) if not _all_finite(a)]
        bad += [n for n, a in zip(self.block_names, blocks) if not _all_finite(a)]
        if bad:
            self._nonfinite_updates.append((st["no"], tuple(bad), st["nf"]))
            self._log.append((st["no"], "nonfinite", st["nf"]))
            self._step = None
            if self._monitor is not None:
                self._monitor._after_nonfinite(st["no"], tuple(bad), st["nf"])
            return {}
        scale = self.batch_divisor / st["C"]  # units of the step's clipping norm
        bl = [_to_numpy(a) * scale for a in blocks]
        L = len(self.user_shapes)
        out = {}
        for k in self.kinds:
            if k == "spread":
                o = np.zeros(self.counts[k])
                for t, (a, (idx, val), use) in enumerate(zip(user, self._spread, self._observed)):
                    if use:
                        if _is_torch(a):
                            g = a.detach().reshape(-1)[self._spread_index(t, a)].double().cpu().numpy()
                        else:
                            g = np.asarray(a, dtype=float).reshape(-1)[idx]
                        o += (g * val).sum(axis=1)
                o *= scale / self.spread_signal
            elif k == "split":
                j = self._split_offset + np.arange(self.counts[k])
                o = sum(b[j] for b in bl) / math.sqrt(self.blocks)
            else:
                t, c = self._coords[k]
                o = np.empty(self.counts[k])
                for b in range(self.blocks):
                    s2 = t == b
                    o[s2] = bl[b][c[s2]]
            out[k] = o
        null = np.stack([b[:self.null_coordinates] for b in bl]) / self.sigma if self.blocks else np.zeros((0, 0))
        user_ss = self._user_stats(user, scale) if user is not None else np.full(L, np.nan)
        for k, o in out.items():
            self._obs[k].append(o)
            self._part[k].append(st["part"][k])
            self._pattern[k].append(st["signs"][k])
        if "paired" in self.kinds:
            self._partner_count.append(st["npart"].astype(np.int16))
        if st["crowd"] is not None:
            sign, m_c, n_p = st["crowd"]
            b, c = self._crowd_at
            self._crowd_obs.append((float(bl[b][c]) * sign, m_c, n_p))
        self._null.append(null)
        self._user_ss.append(user_ss)
        self._own_rows.append(st["own_rows"])
        self.clip_norms.append(st["C"])
        self._coin.append(st["coin"])
        self._nf_present.append(st["nf"])
        self._step_no.append(st["no"])
        self._log.append((st["no"], "observed", st["nf"]))
        self._step_tests.append(self._per_step_tests(len(self._null) - 1))
        self._step = None
        self.seconds = time.perf_counter() - self._start
        if self._monitor is not None:
            self._monitor._after_step()
        return out

    def _user_stats(self, user, scale: float) -> np.ndarray:
        """``||x_t - v_t||^2 / sigma^2`` per user tensor, ``x_t`` the update in units of ``C``
        after the divisor and ``v_t`` the moving average of the earlier ``x`` (fixed before this
        step's noise is drawn; zero at the first step). Computed in the update's framework (a
        torch tensor stays on its device)."""
        out = np.empty(len(user))
        for i, a in enumerate(user):
            if _is_torch(a):
                x = a.detach().double() * scale
            else:
                x = np.asarray(a, dtype=float) * scale
            v = self._ema[i]
            d = x if v is None else x - v
            out[i] = float((d * d).sum()) / self.sigma ** 2
            self._ema[i] = x if v is None else v + EMA_WEIGHT * (x - v)
        return out

    def cancel_step(self) -> None:
        """Forget the open step (a step that released nothing, e.g. a skipped accumulation step):
        nothing is observed for it. The ``nonfinite`` check tests that cancellations do not go
        with dpaudit's non-finite rows. A no-op without an open step."""
        if self._step is not None:
            if "data" in self.kinds:
                self._data_counts.pop()
            self._log.append((self._step["no"], "cancelled", self._step["nf"]))
            self._step = None

    # -- results ------------------------------------------------------------------------------------
    @property
    def steps(self) -> int:
        """Steps observed so far (finite updates handed back)."""
        return len(self._null)

    def runs(self, upto: Optional[int] = None) -> dict:
        """Kind -> :class:`~dpaudit.dpsgd.reference.TrainingRun` of the steps observed so far (the
        first ``upto`` of them; its config: the claimed ``sigma``, ``C``, ``q`` and the number of
        steps). ``"paired"`` and ``"nonfinite"`` canaries are included too, though their
        observations carry partners and non-finite rows (the audit reads them in checks only).

        Raises
        ------
        ValueError
            Before the first observed step.
        """
        from .reference import DPSGDConfig, TrainingRun

        T = self.steps if upto is None else int(upto)
        if not T:
            raise ValueError("no step observed yet: call begin_step() and observe() in the training loop")
        out = {}
        for k in self.kinds:
            cfg = DPSGDConfig(noise_multiplier=self.sigma, max_grad_norm=self.C, sampling_rate=self.q,
                              steps=T, canary_norm=self.norms[k])
            part = np.array(self._part[k][:T])
            out[k] = TrainingRun(observations=np.array(self._obs[k][:T]), mask=self.masks[k], sampled=part.sum(axis=0),
                                 participation=part, config=cfg, variant=f"canaries:{k}", seconds=self.seconds,
                                 train_accuracy=float("nan"), pattern=np.array(self._pattern[k][:T]),
                                 details={"canary_kind": k, "canary_norm": self.norms[k],
                                          "api": "dpaudit.dpsgd.canaries"})
        return out

    # -- the checks ---------------------------------------------------------------------------------
    def _block_kinds(self) -> list:
        return [k for k in self.kinds if k not in ("spread",)]

    def _per_step_tests(self, i: int) -> dict:
        """The tests of observed step ``i`` alone: noise per tensor and pooled over the step (null
        coordinates, user tensors), the largest clipping excess."""
        res = noise_cells(self._null[i], self._user_ss[i], self._user_dof)
        z = self._null[i]
        unit = z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-300) if z.size else z
        buf = self._null_unit
        if buf is None or buf.shape[0] <= i:
            new = np.empty((max(16, 2 * (i + 1)), *z.shape))
            if buf is not None:
                new[:i] = buf[:i]
            buf = self._null_unit = new
        buf[i] = unit
        res["independence"] = noise_independence(z, buf[:i] if i else None)
        exc, kinds = [], []
        for k in self._block_kinds():
            o = np.abs(self._obs[k][i])
            e = o - (1.0 + self._partner_count[i]) if k == "paired" else o - 1.0
            exc.append(e)
            kinds.append(k)
        sizes = np.cumsum([e.size for e in exc])
        exc = np.concatenate(exc) if exc else np.zeros(0)
        p, idx, z = clipping_step(exc, self.sigma)
        where = None
        if idx is not None:
            b = int(np.searchsorted(sizes, idx, side="right"))
            where = (kinds[b], int(idx - (sizes[b - 1] if b else 0)))
        res["clip"] = (p, where, z, exc.size)  # p at the claimed sigma; _clip_p rescales by the noise bound
        self._null_ss.append(np.square(self._null[i]).sum(axis=1))
        return res

    def _levels(self, beta: float) -> dict:
        """``(check, test)`` -> level: half of ``beta`` for the certified bounds (equal over the
        kinds with one), half for the checks (equal over the checks this configuration has, equal
        over each check's sub-tests). Fixed by the configuration, before the run."""
        bound = [k for k in self.kinds if k in BOUND_KINDS]
        checks = ["clipping", "noise"]
        if "data" in self.kinds:
            checks.append("sampler")
        if "paired" in self.kinds:
            checks.append("coupling")
        if "nonfinite" in self.kinds:
            checks.append("nonfinite")
        scale_tests = (["rows"] if self.q < 1 else []) + (["coin"] if "nonfinite" in self.kinds else [])
        if scale_tests:
            checks.append("scale")
        if not self.blocks:
            checks = []
        out = {}
        half = beta / 2 if checks else beta
        for k in bound:
            out[("bound", k)] = half / len(bound)
        if checks:  # the noise-scale upper bound the contribution tests use (checks.noise_upper)
            out[("units", "noise_upper")] = beta / 2 / 10
        sub = {"clipping": ["excess", "mean"], "noise": ["cell", "step", "user", "independence", "tensor", "all", "tails",
                                                     "user_tensor"],
               "sampler": ["poisson"], "coupling": ["paired"] + (["crowd"] if self.crowd else []),
               "nonfinite": ["association", "contrast"],
               "scale": scale_tests}
        for c in checks:
            for t in sub[c]:
                out[(c, t)] = beta / 2 * 0.9 / len(checks) / len(sub[c])
        return out

    def _noise_bound(self, T: int, level: float) -> float:
        """:func:`~dpaudit.dpsgd.checks.noise_upper` of the first ``T`` observed steps: the noise
        scale (units of sigma, at least 1) the contribution tests use."""
        if not T or not self.blocks or not self.null_coordinates:
            return 1.0
        ss = np.sum(self._null_ss[:T], axis=0)
        return noise_upper(ss, np.full(self.blocks, T * self.null_coordinates), level)

    def _clip_p(self, res: dict, scale: float) -> float:
        """The largest-excess p-value of one step with the noise scale ``scale * sigma``."""
        from scipy.special import ndtr

        _, _, z, n = res["clip"]
        return float(min(1.0, 2 * n * ndtr(-z / scale))) if n else 1.0

    def _signed(self, k: str, T: int) -> tuple:
        """Sign-corrected observations ``(T, m)`` and participation of kind ``k``, first ``T`` steps."""
        o = np.array(self._obs[k][:T])
        return o * np.array(self._pattern[k][:T]), np.array(self._part[k][:T])

    def _pooled_tests(self, T: int, scale: float = 1.0) -> dict:
        """Every test pooled over the first ``T`` observed steps: ``(check, test)`` ->
        ``(p, details dict)`` (deterministic: no Monte Carlo, so any level can be resolved).
        ``scale``: the noise bound (:meth:`_noise_bound`) the contribution tests use."""
        sig = self.sigma * scale
        out = {}
        if not self.blocks:
            return out
        null = np.array(self._null[:T])
        uss = np.array(self._user_ss[:T])
        npool = noise_pooled(null, uss, self._user_dof)
        out[("noise", "tensor")] = (npool["tensor"][0], {"tensor": npool["tensor"][1]})
        out[("noise", "all")] = (npool["all"], {})
        out[("noise", "tails")] = (npool["tails"][0], {"count": npool["tails"][1], "expected": npool["tails"][2]})
        out[("noise", "user_tensor")] = (npool["user_tensor"][0], {"user": npool["user_tensor"][1]})
        means = {}
        coin = np.array(self._coin[:T], dtype=bool)
        mk = [k for k in self._block_kinds() if k != "paired"]
        ps = []
        for k in mk:
            y, part = self._signed(k, T)
            if k == "nonfinite":  # rows are non-finite at the coin's steps: the Dirac steps only
                part = part & ~coin[:, None]
            p, a, se, n = contribution_mean(y[part], sig)
            means[k] = (a, se, n)
            ps.append((p, k))
        if ps:
            p, k = min(ps)
            out[("clipping", "mean")] = (min(1.0, p * len(ps)), {"kind": k, "means": means})
        if "paired" in self.kinds:
            y, part = self._signed("paired", T)
            npart = np.array(self._partner_count[:T])
            p, a, se, b = coupling_ols(y, part, npart, sig)
            out[("coupling", "paired")] = (p, {"a": a, "se": se, "b": b})
            if self.crowd:
                obs = np.array(self._crowd_obs[:T], dtype=float).reshape(-1, 3)
                p, a, se, b = coupling_crowd(obs[:, 0], obs[:, 1], obs[:, 2], sig)
                out[("coupling", "crowd")] = (p, {"a": a, "se": se, "b": b})
        if "nonfinite" in self.kinds:
            cancelled, nf = [], []
            for no, what, h in self._log:
                if no > (self._step_no[T - 1] if T else 0):
                    break
                if what != "nonfinite":
                    cancelled.append(what == "cancelled")
                    nf.append(h)
            p, table = nonfinite_association(np.array(cancelled, bool), np.array(nf, bool))
            out[("nonfinite", "association")] = (p, {"table": table.tolist()})
            groups = []
            for k in mk:
                if k in ("nonfinite", "large"):
                    continue
                y, part = self._signed(k, T)
                groups.append((y[part & coin[:, None]], y[part & ~coin[:, None]]))
            p, z = nonfinite_contrast(groups, sig)
            out[("nonfinite", "contrast")] = (p, {"z": z})
        if self.q < 1 or "nonfinite" in self.kinds:
            ls = 0.5 * np.log(np.maximum(np.square(null).mean(axis=(1, 2)), 1e-300)) if null.size else np.zeros(T)
            if self.q < 1:
                p, r = scale_dependence(ls, np.array(self._own_rows[:T]), self._own_trials, self.q)
                out[("scale", "rows")] = (p, {"correlation": r})
            if "nonfinite" in self.kinds:
                p, r = scale_dependence(ls, coin.astype(float), 1, 0.5)
                out[("scale", "coin")] = (p, {"correlation": r})
        if "data" in self.kinds:
            counts = np.array(self._data_counts[:self._data_index(T)])
            if counts.size:
                s = sampler_check(counts, self.q)
                out[("sampler", "poisson")] = (s["p_value"], s)
        return out

    def _data_index(self, T: int) -> int:
        """Rows of ``_data_counts`` (one per begun, not cancelled step) up to observed step ``T``."""
        if not T:
            return 0
        last = self._step_no[T - 1]
        return sum(1 for no, what, _ in self._log if no <= last and what != "cancelled")

    def clipping_check(self, noise_level: float = 0.001) -> dict:
        """The largest-excess clipping test over all observed steps (Bonferroni over the steps of
        :func:`dpaudit.dpsgd.checks.clipping_step`): every block observation of a correct step is
        at most one clipped canary (1 in units of ``C``; ``1 + r`` on a paired canary's
        coordinate with ``r`` partners in the batch) plus noise of scale at most the null
        coordinates' upper confidence bound at ``noise_level`` (:func:`~dpaudit.dpsgd.checks.noise_upper`,
        at least the claimed ``sigma``: more noise than claimed is never accused). A skipped
        clipping of a ``"large"`` canary gives an excess near ``1000 / sigma``.

        Returns
        -------
        dict
            ``p_value``, ``max_excess`` (in units of the noise scale), ``noise_scale`` (the bound, in
            units of sigma), ``observations``, ``step`` (1-based) and ``kind`` of the largest excess.
            ``p_value`` 1 without block kinds.
        """
        if not self._step_tests or not self.blocks:
            return {"p_value": 1.0, "max_excess": float("nan"), "observations": 0}
        T = len(self._step_tests)
        scale = self._noise_bound(T, noise_level)
        i = max(range(T), key=lambda s: self._step_tests[s]["clip"][2])
        _, where, z, n = self._step_tests[i]["clip"]
        pmin = min(self._clip_p(s, scale) for s in self._step_tests)
        return {"p_value": float(min(1.0, T * pmin)), "max_excess": z / scale, "noise_scale": scale,
                "step": self._step_no[i], "kind": None if where is None else where[0],
                "observations": int(sum(s["clip"][3] for s in self._step_tests))}

    def _finding(self, check: str, test: str, p: float, level: float, info: dict, steps=(), at_step: int = 0) -> Finding:
        """A :class:`Finding` with its message."""
        tensors = ()
        sig = self.sigma
        if check == "noise":
            if test == "independence":
                tensors = (self.block_names[info["tensor"]],)
                msg = (f"the noise is not fresh: the null coordinates repeat those of {info['lag']} step(s) earlier "
                       f"(cosine {info['cosine']:.3g}; a noise generator re-seeded or noise reused across steps)")
            elif test in ("cell", "tensor") and info.get("tensor") is not None:
                tensors = (self.block_names[info["tensor"]],)
            elif test in ("user", "user_tensor") and info.get("user") is not None:
                tensors = (self.user_names[info["user"]],)
            elif test in ("step", "all", "tails"):
                tensors = tuple(self.block_names)
            where = {"cell": "in one step and tensor", "step": "in one step (all dedicated tensors)",
                     "user": "in one step of a model tensor (a lower bound: real gradients only add to it)",
                     "tensor": "in one tensor over the steps", "all": "over all steps and dedicated tensors",
                     "user_tensor": "in a model tensor over the steps",
                     "tails": f"noise with lighter tails than Gaussian ({info.get('count')} values beyond "
                              f"{3:g} sigma, {info.get('expected', 0):.1f} expected)"}.get(test, "")
            if test != "independence":
                varies = len(set(self.clip_norms)) > 1
                msg = (f"less noise than sigma*C_t (sigma {sig:g} times each step's clipping norm) {where}" if varies
                       else f"less noise than sigma*C={sig * self.C:g} {where}")
                if info.get("ratio") is not None:
                    msg += f" (measured {info['ratio']:.3g} x the claimed noise)"
                msg += f" (or the update is divided by more than batch_divisor={self.batch_divisor:g}"
                msg += ")" if test in ("user", "user_tensor") else ", or the dedicated tensors are left out of the noise)"
        elif check == "clipping":
            if test == "excess":
                msg = (f"a canary's contribution exceeds the clipping norm ({info.get('z', float('nan')):.3g} sigma above "
                       f"it, kind {info.get('kind')!r})")
            else:
                a, se, _ = info["means"][info["kind"]]
                msg = (f"'{info['kind']}' canaries contribute {a:.3g} C on average (at most 1 for a correct step; "
                       f"standard error {se:.2g})")
                if info["kind"] == "split":
                    msg += f": clipping per tensor gives sqrt({self.blocks}) = {math.sqrt(self.blocks):.3g}"
        elif check == "coupling" and test == "crowd":
            msg = (f"a crowd canary moves the crowd coordinate by {info['a']:.3g} C (at most 1 if each row's "
                   f"contribution is its own clipped gradient): rows clipped or normalised in groups (of any "
                   f"structure: consecutive, strided, hashed) or otherwise coupled")
        elif check == "coupling":
            msg = (f"a paired canary moves its coordinate by {info['a']:.3g} C (at most 1 if each row's contribution "
                   f"is its own clipped gradient): rows clipped in groups or coupled to their neighbours")
        elif check == "nonfinite":
            if test == "update":
                msg = (f"the update is not finite in {', '.join(info['tensors'])}"
                       + (" (a canary row with a non-finite gradient was in this step)" if info.get("nf") else ""))
                tensors = tuple(info["tensors"])
            elif test == "association":
                msg = f"steps with non-finite canary rows were skipped (cancelled) more often: table {info['table']}"
            else:
                msg = (f"other canaries' contributions change when a non-finite row is in the step (z = "
                       f"{info['z']:.3g})")
        elif check == "scale":
            msg = (f"the update's scale moves with the canaries in the step ({test}: correlation "
                   f"{info['correlation']:.3g}): a data-dependent normalisation")
        elif check == "sampler":
            s = info
            msg = (f"the sampler is not Poisson at rate {self.q:g} (p = {p:.2g}; realised rate {s['rate']:.4g}, "
                   f"{s['repeats']} repeats" + (f", {s.get('missing', 0)} missing" if self.q == 1 else "") + ")")
        else:  # bound
            msg = info["message"]
        if tensors and check in ("noise",) and test not in ("step", "all", "tails"):
            msg += f" (tensor {', '.join(tensors)})"
        more = f" and {len(steps) - 5} more" if len(steps) > 5 else ""
        msg += f" [p = {p:.2g} <= {level:.2g}" + (f", step {', '.join(map(str, steps[:5]))}{more}" if steps else "") + "]"
        return Finding(check=check, test=test, p_value=float(p), level=float(level), steps=tuple(steps),
                       tensors=tensors, message=msg, at_step=at_step)

    def _step_finding_info(self, res: dict, test: str, i: int, scale: float = 1.0) -> tuple:
        """``(p, info)`` of per-step test ``test`` at observed step ``i``."""
        if test == "cell":
            p, k = res["cell"]
            ratio = None if k is None else float(np.sqrt(np.mean(np.square(self._null[i][k]))))
            return p, {"tensor": k, "ratio": ratio}
        if test == "step":
            return res["step"], {"ratio": float(np.sqrt(np.mean(np.square(self._null[i]))))}
        if test == "independence":
            p, where, cos = res["independence"]
            return p, {"lag": None if where is None else where[0], "tensor": None if where is None else where[1],
                       "cosine": cos}
        if test == "user":
            p, k = res["user"]
            ratio = None if k is None else float(np.sqrt(self._user_ss[i][k] / self._user_dof[k]))
            return p, {"user": k, "ratio": ratio}
        _, where, z, _ = res["clip"]
        return self._clip_p(res, scale), {"z": z / scale, "kind": None if where is None else where[0]}

    _STEP_TESTS = (("noise", "cell"), ("noise", "step"), ("noise", "user"), ("noise", "independence"),
                   ("clipping", "excess"))

    def audit(self, *, delta: float = 1e-5, beta: float = 0.05, pooled: bool = True, **kwargs) -> CanaryAudit:
        """The one-run audit of every canary kind with a bound (:func:`dpaudit.dpsgd.audit_run`)
        and every check, ``beta`` split over them as :meth:`_levels` fixes (before the run).

        Parameters
        ----------
        delta : float
            In (0, 1).
        beta : float
            Probability that anything reported is wrong (a bound above the truth or a check
            rejecting a correct run).
        pooled : bool
            Audit the block kinds (:data:`POOLED_KINDS`: ``"dirac"``, ``"split"``, ``"large"``,
            ``"data"``; the same law under a correct step, no interference) as one population with
            the shares of ``beta`` of the kinds it replaces (:func:`dpaudit.dpsgd.audit.pooled_audit`,
            ``audits["pooled"]``; default), or each kind alone.
        **kwargs
            Passed to ``audit_run`` (``scores``, ``seed``, ``estimates``, ``claim``).

        Returns
        -------
        CanaryAudit

        Raises
        ------
        ValueError
            Before the first step (a run whose every update was non-finite is audited: a violation), or
            on invalid delta or beta.
        """
        from .._validate import check_delta
        from .audit import _claimed_accountant, audit_run, pooled_audit

        beta = check_probability(beta, "beta")
        delta = check_delta(delta)
        T = self.steps
        if not T and self._nonfinite_updates:
            return self._nonfinite_only_audit(delta, beta)
        runs = self.runs()
        levels = self._levels(beta)
        acc = _claimed_accountant(self.sigma, self.q, T, delta)
        eps = float(acc.epsilon)
        # Block kinds with the same law under a correct step and no interference, audited as one
        # population with the sum of their shares of beta (dpaudit.dpsgd.audit.pooled_audit).
        block = tuple(k for k in POOLED_KINDS if ("bound", k) in levels) if pooled else ()
        block = block if len(block) > 1 else ()
        audits = {k: audit_run(runs[k], delta=delta, beta=levels[("bound", k)], accountant=acc, **kwargs)
                  for k in self.kinds if ("bound", k) in levels and k not in block}
        if block:
            audits["pooled"] = pooled_audit([runs[k] for k in block], delta=delta,
                                            beta=sum(levels[("bound", k)] for k in block), accountant=acc, **kwargs)
        # no kind with a bound (only check kinds): the trivial lower bound 0, the safe side
        lb = max((a.epsilon_lower_bound for a in audits.values()), default=0.0)
        violations = [self._finding("bound", k, 0.0, levels[("bound", k)] if k != "pooled" else
                                    sum(levels[("bound", b)] for b in block),
                                    {"message": f"{k} canaries certify epsilon >= {a.epsilon_lower_bound:.4g} > the "
                                                f"accountant's {eps:.4g}"}, at_step=T)
                      for k, a in audits.items() if a.violated]
        if self._nonfinite_updates:
            violations.append(self._nonfinite_update_finding())
        checks: dict = {}
        scale = self._noise_bound(T, levels[("units", "noise_upper")]) if ("units", "noise_upper") in levels else 1.0
        for (c, t) in self._STEP_TESTS:
            if (c, t) not in levels:
                continue
            ps = [self._step_finding_info(r, t, i, scale) for i, r in enumerate(self._step_tests)]
            pmin = min(p for p, _ in ps) if ps else 1.0
            p_all = min(1.0, T * pmin)
            lv = levels[(c, t)]
            bad = [i for i, (p, _) in enumerate(ps) if T * p <= lv]
            checks.setdefault(c, {})[t] = {"p_value": p_all, "steps": [self._step_no[i] for i in bad]}
            if bad:
                i0 = min(bad, key=lambda i: ps[i][0])
                violations.append(self._finding(c, t, p_all, lv, ps[i0][1], steps=[self._step_no[i] for i in bad],
                                                at_step=self._step_no[bad[0]]))
        for (c, t), (p, info) in self._pooled_tests(T, scale).items():
            checks.setdefault(c, {})[t] = {"p_value": p, **{k: v for k, v in info.items() if k != "means"}}
            if c == "clipping" and t == "mean":
                checks[c]["means"] = {k: v[0] for k, v in info["means"].items()}
            if p <= levels[(c, t)]:
                violations.append(self._finding(c, t, p, levels[(c, t)], info, at_step=self._step_no[-1]))
        summary = {}
        for c, tests in checks.items():
            ps = [v["p_value"] for k, v in tests.items() if isinstance(v, dict) and "p_value" in v]
            n_sub = sum(1 for (cc, _) in levels if cc == c)
            summary[c] = {"p_value": float(min(1.0, n_sub * min(ps))) if ps else 1.0, "tests": tests,
                          "text": self._check_text(c, tests)}
        if self._nonfinite_updates:
            summary.setdefault("nonfinite", {"p_value": 0.0, "tests": {}, "text": ""})
            summary["nonfinite"]["p_value"] = 0.0
            summary["nonfinite"]["text"] = self._nonfinite_update_text()
        clip = self.clipping_check(levels.get(("units", "noise_upper"), 0.001))
        clip["means"] = checks.get("clipping", {}).get("means", {})
        if "clipping" in summary:
            clip["p_value_all"] = summary["clipping"]["p_value"]
        sampler = checks.get("sampler", {}).get("poisson")
        if sampler is not None:
            sampler = {k: v for k, v in sampler.items()}
        violations.sort(key=lambda f: (f.at_step, f.check))
        return CanaryAudit(audits=audits, epsilon_lower_bound=lb, accountant_epsilon=eps, clipping=clip,
                           sampler=sampler, violated=bool(violations), findings=[f.message for f in violations],
                           beta=beta, delta=delta, checks=summary, violations=violations, levels=levels,
                           notes=self._notes(), pooled=block)

    def _nonfinite_update_finding(self) -> Finding:
        """One finding for every non-finite update handed back (p = 0: a correct step's update is
        finite), at the first such step, naming the steps and the tensors."""
        no, _, nf = self._nonfinite_updates[0]
        steps = [u[0] for u in self._nonfinite_updates]
        tensors = sorted({n for u in self._nonfinite_updates for n in u[1]}, key=self.names.index)
        return self._finding("nonfinite", "update", 0.0, 0.0, {"tensors": tensors, "nf": nf}, steps=steps, at_step=no)

    def _nonfinite_update_text(self) -> str:
        return (f"{len(self._nonfinite_updates)} non-finite update(s), first at step "
                f"{self._nonfinite_updates[0][0]}")

    def _nonfinite_only_audit(self, delta: float, beta: float) -> "CanaryAudit":
        """:meth:`audit` when every update handed back was non-finite: nothing to estimate from,
        but a release with a NaN or infinite coordinate is a violation whatever the claim (a
        correct step's update is finite: clipped rows plus Gaussian noise), so the audit says so
        (``p = 0``) instead of failing. The accountant is told the steps that were attempted."""
        from .audit import _claimed_accountant

        finding = self._nonfinite_update_finding()
        eps = float(_claimed_accountant(self.sigma, self.q, len(self._nonfinite_updates), delta).epsilon)
        summary = {"nonfinite": {"p_value": 0.0, "tests": {},
                                 "text": self._nonfinite_update_text() + "; no finite update observed"}}
        return CanaryAudit(audits={}, epsilon_lower_bound=0.0, accountant_epsilon=eps,
                           clipping={"p_value": 1.0, "max_excess": float("nan"), "observations": 0}, sampler=None,
                           violated=True, findings=[finding.message], beta=beta, delta=delta, checks=summary,
                           violations=[finding], levels=self._levels(beta), notes=[])

    def _check_text(self, c: str, tests: dict) -> str:
        """A short description of a check's result for :meth:`CanaryAudit.summary`."""
        if c == "clipping":
            m = ", ".join(f"{k} {v:.3g}" for k, v in tests.get("means", {}).items() if np.isfinite(v))
            return f"mean contribution in units of C: {m}" if m else ""
        if c == "noise":
            if not self._null:
                return ""
            r = float(np.sqrt(np.mean(np.square(np.array(self._null)))))
            return f"null coordinates' noise {r:.4g} x the claimed sigma*C"
        if c == "coupling":
            parts = []
            for t, what in (("paired", "a paired canary moves its coordinate"), ("crowd", "a crowd canary its")):
                a = tests.get(t, {}).get("a")
                if a is not None and np.isfinite(a):
                    parts.append(f"{what} by {a:.3g} C")
            return "; ".join(parts)
        if c == "sampler":
            s = tests.get("poisson", {})
            return (f"rate {s.get('rate', float('nan')):.4g} vs {self.q:g}, {s.get('repeats', 0)} repeats"
                    if s else "")
        return ""

    def _notes(self) -> list:
        """Diagnostics that are not violations: units that look off (the divisor), canary signal
        that does not reach the update, more noise than claimed."""
        notes = []
        if not self._null or not self.blocks:
            return notes
        z = np.array(self._null)
        r = float(np.sqrt(np.mean(np.square(z))))
        se = r / math.sqrt(2 * z.size)
        if r - 4 * se > 1.02:
            notes.append(f"the dedicated tensors carry {r:.3g} x the claimed noise: more noise than claimed (fine), a "
                         f"batch_divisor larger than the step's, or real gradients reaching them (the model must "
                         f"never read them)")
        if "dirac" in self.kinds:
            y, part = self._signed("dirac", self.steps)
            if part.sum() >= 10:
                a = float(y[part].mean())
                se = self.sigma / math.sqrt(part.sum())
                if a + 4 * se < 0.5:
                    notes.append(f"the Dirac canaries' signal is {a:.3g} C, not about 1: their rows do not reach the "
                                 f"update handed back where dpaudit reads it (dedicated tensors misplaced, e.g. a flat "
                                 f"vector split at other boundaries than Canaries.layout()?) or the step clips far "
                                 f"below C")
                elif r > 1.05 and abs(a - r) < 4 * se + 0.05 and abs(a - 1) > 4 * se:
                    notes.append(f"signal ({a:.3g} C) and noise ({r:.3g} x) are off by the same factor: batch_divisor "
                                 f"({self.batch_divisor:g}) is probably not what the step divides by (about "
                                 f"{self.batch_divisor / r:.4g})")
        return notes

    def monitor(self, steps: Optional[int] = None, *, beta: float = 0.05, delta: float = 1e-5, action="raise",
                bounds: bool = True):
        """Run the checks (and the certified bounds at checkpoints) while training runs: after every
        :meth:`observe`, anytime-valid (:class:`dpaudit.dpsgd.online.OnlineAudit`).

        Parameters
        ----------
        steps : int, optional
            The number of steps the accountant is told (per-step tests at ``level / steps`` each,
            pooled tests at checkpoints ``1, 2, 4, ..., steps``); without it the levels decrease
            as ``1 / (t (t + 1))``.
        beta : float
            Probability that the monitor ever accuses a correct run, whatever step it stops at
            (a budget of its own: with :meth:`audit` after training as well, at most the sum).
        delta : float
            Of the certified bounds.
        action : "raise", "warn", "record" or callable
            What a failed check does: raise :class:`~dpaudit.dpsgd.checks.DPSGDViolation` (from
            :meth:`observe`), warn, only record it, or call ``action(finding)``.
        bounds : bool
            Also compute the certified one-run bound at the checkpoints (``audit_run`` without
            estimates).

        Returns
        -------
        OnlineAudit
        """
        from .online import OnlineAudit

        self._monitor = OnlineAudit(self, steps=steps, beta=beta, delta=delta, action=action, bounds=bounds)
        return self._monitor

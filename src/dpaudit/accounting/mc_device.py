"""The Monte Carlo accountant's sampler on a torch device: draws and reductions in large tiles.

Part of :mod:`.monte_carlo`. The cell sampler of :mod:`.mc_sampler` draws cells of
``TILE_ROWS_DEVICE x TILE_STEPS`` (64 Ki x 16) and, on the device, stops the host at every cell:
rejection rounds count their pending entries (``nonzero``), the mixture sampler and ``_log_mix``
ask ``any()``, the conditional estimators pick their coordinate on the host and copy it back, and
every cell re-seeds a generator. With 10^4 steps and 10^6 samples that is ~10^4 cells per
direction, each a few dozen small kernels and several host round trips. This module draws the
same estimators ('simple', 'is', 'cmc', 'is-cmc') in tiles of :data:`DEVICE_ROWS` samples x
:data:`DEVICE_STEPS` steps, keeps the running sums (L, and S, M for the conditional estimators) on
the device, and never waits for the device inside a run: the only host synchronisation is one
copy of a per-tile failure flag after all tiles are queued, and the final copy of the results.

**Rejection sampling without host synchronisation.** A subsampled Gaussian step's tilted law is
drawn by rejection (:func:`~dpaudit.accounting.prv.sampler_acceptance` gives the rate ``a``).
Round 0 proposes every entry; the pending entries are then compacted into a buffer whose size is
fixed in advance (``B = n (1-a) + 8 sqrt(n (1-a)) + 32``, from the count it replaces) by a prefix
sum and a scatter, and each stage proposes once per buffer slot. The number of stages is fixed
on the host so that the expected number of entries still pending is below 10^-6. An entry that
overflows a buffer or is still pending after the last stage marks its tile as failed; failed
tiles are redrawn from independent streams (attempt 1, 2, ...). This is exact: in rejection
sampling the accepted value is independent of the number of proposals it took, so conditioning a
tile on "every entry accepted in time" leaves its values i.i.d. from the tilted law, and a
redrawn tile is a fresh independent draw.

**Precision.** Everything is float64, as on the CPU: the bound's soundness argument (Maurer's
inequality on the terms ``w (1 - e^(eps - L))_+``, :mod:`.mc_bounds`) assumes the losses exact up
to rounding far below the Monte Carlo error (``_log_mix`` documents 1e-11 absolute over 10^4
steps in float64); float32 losses would carry ~1e-7 relative error per step (1e-3 absolute over
10^4 steps), which is not negligible next to a bound's width, so no float32 is used.

**Randomness.** Each (direction key, tile, attempt, segment chunk, tilt group) seeds torch's
generator on the device with 63 bits of the BLAKE2b hash of its name and draws in a fixed order,
so a seed gives the same draws for any number of samples up to the last partial tile (on the
same device type; CUDA and CPU generators differ). These are other draws than the cell sampler's
(:mod:`._backend`): results are statistically equivalent, not equal.
"""

from __future__ import annotations

import math

import numpy as np

from ._backend import MASK64, stream_state
from .prv import REMOVE, GaussianStep, LaplaceStep, SubsampledGaussianStep, sampler_acceptance

__all__ = ["DEVICE_ROWS", "DEVICE_STEPS", "run_tiled", "supports_tiled"]

#: samples per tile on the device (part of the definition of the draws)
DEVICE_ROWS = 1 << 18
#: steps per chunk (columns drawn at once; part of the definition of the draws)
DEVICE_STEPS = 128
#: stream kind of the device tiles (distinct from the cell streams' kinds 0-3)
KIND_DEVICE = 16
#: attempts per tile before giving up (each fails with probability ~1e-6 or less)
MAX_ATTEMPTS = 16
#: expected number of entries still pending after the last rejection stage
PENDING_TARGET = 1e-6
#: above this exponent ``ln(1 - q + q e^x)`` is ``x + ln q`` to double precision
_EXP_MAX = 700.0
#: switch for benchmarks and tests: False sends every sampler to the cell sampler of mc_sampler
ENABLED = True


def supports_tiled(sampler) -> bool:
    """Whether :func:`run_tiled` can draw for ``sampler``: torch's own generator ('cuda' by
    default, or ``TorchOps(native_rng=True)``), an estimator among 'simple', 'is', 'cmc', 'is-cmc',
    and Gaussian, subsampled Gaussian or Laplace steps."""
    ops = sampler.ops
    return (ENABLED and ops.name == "torch" and getattr(ops, "native_rng", False)
            and sampler.estimator in ("simple", "is", "cmc", "is-cmc")
            and all(isinstance(s, (GaussianStep, SubsampledGaussianStep, LaplaceStep)) for s, _ in sampler.comp.segments))


class _Source:
    """Sequential draws from torch's generator on the device, seeded from the name's hash."""

    def __init__(self, ops, gen, name: tuple):
        self.ops, self.t = ops, ops.torch
        self.gen = gen
        gen.manual_seed(stream_state(tuple(int(x) & MASK64 for x in name))[0] & ((1 << 63) - 1))

    def normal(self, shape):
        return self.t.randn(shape, generator=self.gen, dtype=self.t.float64, device=self.ops.dev)

    def uniform(self, shape):
        u = self.t.rand(shape, generator=self.gen, dtype=self.t.float64, device=self.ops.dev)
        return self.t.sub(1.0, u, out=u)  # [0, 1) -> (0, 1]: logs stay finite


class _DevicePlan:
    """One step's tilted sampler on the device: ``propose(src, n)`` gives n flat proposal losses;
    with ``rejection``, a proposal with loss l is kept with probability ``exp(log_accept(l))``."""

    def __init__(self, ops, step, lam: float, direction: str):
        t = ops.torch
        self.ops, self.t, self.step, self.lam = ops, t, step, float(lam)
        self.direction = direction
        self.acceptance = sampler_acceptance(step, lam, direction)
        self.rejection = self.acceptance < 1.0
        self.kind = "cpu-plan"
        if isinstance(step, SubsampledGaussianStep) and step.sampling_rate < 1.0:
            self.kind = "subsampled"
            self.sigma, self.q = step.sigma, step.sampling_rate
            self.log1mq, self.logq = math.log1p(-self.q), math.log(self.q)
            if direction == REMOVE:
                plan = step.plan(lam, REMOVE)  # its mixture of N(j, s^2) and acceptance exponent
                self.edges = t.as_tensor(np.asarray(plan.edges, dtype=np.float64), device=ops.dev)
                self.means = t.as_tensor(np.asarray(plan.means, dtype=np.float64), device=ops.dev)
                self.frac = plan.frac
        else:
            self.plan = step.plan(lam, direction)  # Gaussian / Laplace: no rejection, no host sync

    def _log_mix(self, x):
        """``ln(1 - q + q e^x)`` in place in x, without host synchronisation (see prv._log_mix)."""
        t = self.t
        big = x > _EXP_MAX
        xb = x + self.logq
        t.clamp_(x, max=_EXP_MAX)
        t.exp(x, out=x)
        x *= self.q
        x += 1.0 - self.q
        t.log(x, out=x)
        return t.where(big, xb, x)

    def propose(self, src, n: int):
        """n proposal losses (flat)."""
        if self.kind != "subsampled":
            return self.plan.draw_loss(self.ops, _Slots(src, (n,)))
        s2 = self.sigma ** 2
        if self.direction == REMOVE:
            comp = self.t.searchsorted(self.edges, src.uniform((n,)), right=True)
            x = src.normal((n,)) * self.sigma
            x += self.means[comp]
        else:
            x = src.normal((n,)) * self.sigma
        x *= 1.0 / s2
        x -= 0.5 / s2  # x(t) = (2t - 1)/(2 s^2)
        out = self._log_mix(x)
        return out if self.direction == REMOVE else out.neg_()

    def log_accept(self, loss):
        if self.direction == REMOVE:
            return self.frac * (loss - self.log1mq)
        return self.lam * (self.log1mq + loss)

    def stages(self, n: int) -> list:
        """Buffer sizes of the rejection stages for n entries (deterministic, host-side)."""
        a = self.acceptance
        out, size = [], n
        while n * (1.0 - a) ** (len(out) + 1) > PENDING_TARGET and len(out) < 4096:
            b = min(size, int(math.ceil(size * (1.0 - a) + 8.0 * math.sqrt(size * (1.0 - a)) + 32)))
            out.append(b)
            size = b
        return out

    def draw(self, src, n: int, fail):
        """n losses of the tilted law (flat); adds to the device scalar ``fail`` the entries not
        accepted in time (buffer overflow or pending after the last stage)."""
        t = self.t
        out = self.propose(src, n)
        if not self.rejection:
            return out
        dev = self.ops.dev
        pend = t.log(src.uniform((n,))) >= self.log_accept(out)
        out = t.cat([out, out.new_zeros(1)])          # slot n: where writes of empty slots go
        gpos = None                                    # global position of each tracked entry
        for b in self.stages(n):
            size = pend.shape[0]
            rank = t.cumsum(pend, 0) - 1
            carried = pend & (rank < b)
            fail += (pend & ~carried).sum()
            slot = t.where(carried, rank, t.full_like(rank, b))
            here = t.arange(size, device=dev) if gpos is None else gpos
            pos = t.full((b + 1,), n, dtype=t.int64, device=dev)
            pos.scatter_(0, slot, here)                 # duplicates only into the dummy slot b
            gpos = pos[:b]
            cand = self.propose(src, b)
            ok = t.log(src.uniform((b,))) < self.log_accept(cand)
            valid = gpos < n
            acc = valid & ok
            out.scatter_(0, t.where(acc, gpos, t.full_like(gpos, n)), cand)
            pend = valid & ~ok
        fail += pend.sum()
        return out[:n]


class _Slots:
    """The ``rs`` interface of prv's plans (``normal(slot)``, ``uniform(slot)``) over a source."""

    def __init__(self, src, shape):
        self.src, self.shape = src, shape

    def normal(self, slot):
        return self.src.normal(self.shape)

    def uniform(self, slot):
        return self.src.uniform(self.shape)


def _tile(sampler, plans, ti: int, n: int, attempt: int, cond: bool):
    """Draws of tile ``ti`` (n samples; tilt group g holds the contiguous rows ``bounds[g]``) as
    device tensors: ``(L, S, M, pick)`` (S, M, pick None unless ``cond``) and the device scalar
    counting entries not accepted in time."""
    ops = sampler.ops
    t = ops.torch
    dev = ops.dev
    G = len(sampler.tilts)
    k = sampler.n_total
    fail = t.zeros((), dtype=t.int64, device=dev)
    bounds = [(n * g // G, n * (g + 1) // G) for g in range(G)]
    L = t.zeros(n, dtype=t.float64, device=dev)
    S = M = pick = None
    gen = sampler._device_gen
    if cond:
        S = t.zeros(n, dtype=t.float64, device=dev)
        M = t.full((n,), -math.inf, dtype=t.float64, device=dev)
        src = _Source(ops, gen, (sampler.key, KIND_DEVICE, ti, attempt, 1 << 40))
        pick = t.clamp((src.uniform((n,)) * k).to(t.int64), max=k - 1)
    for si, ((step, count), j0) in enumerate(zip(sampler.comp.segments, sampler.starts)):
        if not cond and sampler.collapse and isinstance(step, GaussianStep):
            # sum of `count` Gaussian losses under tilt lam: N(count (1/2 + lam)/s^2, count/s^2)
            for g, (a, b) in enumerate(bounds):
                if b > a:
                    z = _Source(ops, gen, (sampler.key, KIND_DEVICE, ti, attempt, int(j0), g)).normal((b - a,))
                    L[a:b] += count * (0.5 + sampler.tilts[g]) / step.sigma ** 2 + math.sqrt(count) / step.sigma * z
            continue
        for c0 in range(int(j0), int(j0) + count, DEVICE_STEPS):
            w = min(DEVICE_STEPS, int(j0) + count - c0)
            for g, (a, b) in enumerate(bounds):
                if b == a:
                    continue
                src = _Source(ops, gen, (sampler.key, KIND_DEVICE, ti, attempt, c0, g))
                loss = plans[si][g].draw(src, (b - a) * w, fail).view(b - a, w)
                s = loss.sum(dim=1)
                L[a:b] += s
                if cond:
                    sel = t.arange(c0, c0 + w, device=dev)[None, :] == pick[a:b, None]
                    S[a:b] += s - t.where(sel, loss, 0.0).sum(dim=1)
                    M[a:b] = t.maximum(M[a:b], t.where(sel, -math.inf, loss).amax(dim=1))
    return (L, S, M, pick), fail


def _weights(sampler, L, S, pick):
    """Balance-heuristic log-weights of all k coordinates and (``S`` given) of the k - 1 others."""
    ops = sampler.ops
    t = ops.torch
    G = len(sampler.tilts)
    lam = t.as_tensor(sampler.tilts, dtype=t.float64, device=ops.dev)
    K = t.as_tensor(np.asarray(sampler.K, dtype=np.float64), device=ops.dev)
    logw = math.log(G) - t.logsumexp(lam[None, :] * L[:, None] - K[None, :], dim=1)
    if S is None:
        return logw, None, None
    starts = t.as_tensor(np.asarray(sampler.starts, dtype=np.int64), device=ops.dev)
    seg = t.searchsorted(starts, pick, right=True) - 1
    kseg = t.as_tensor(np.array([[st.log_mgf(x, sampler.direction) for x in sampler.tilts]
                                 for st, _ in sampler.comp.segments], dtype=np.float64), device=ops.dev)
    logw_o = math.log(G) - t.logsumexp(lam[None, :] * S[:, None] - (K[None, :] - kseg[seg]), dim=1)
    return logw, logw_o, seg


def run_tiled(sampler, num_samples: int, progress=None):
    """Draw ``num_samples`` samples of ``sampler``'s direction on its torch device, in tiles.

    Parameters
    ----------
    sampler : mc_sampler._Sampler
        With :func:`supports_tiled` true.
    num_samples : int
        m >= 2.
    progress : callable, optional
        ``progress(done, m)`` after each tile is queued (the device may still be working).

    Returns
    -------
    tuple of ndarray
        As :func:`~dpaudit.accounting.mc_sampler._run_offline`: ``(L, log_w)``, or for 'cmc' and
        'is-cmc' ``(L, S, M, log_w, log_w_others, segment)``, each of shape (m,).

    Raises
    ------
    RuntimeError
        "rejection sampler did not finish" when a tile failed :data:`MAX_ATTEMPTS` times (each
        attempt fails with probability about 1e-6).
    """
    ops = sampler.ops
    t = ops.torch
    sampler.num_samples = num_samples
    if getattr(sampler, "_device_gen", None) is None:
        sampler._device_gen = t.Generator(device=ops.dev)
    cond = sampler.estimator in ("cmc", "is-cmc")
    plans = [[_DevicePlan(ops, step, lam, sampler.direction) for lam in sampler.tilts]
             for step, _ in sampler.comp.segments]
    tiles = [(lo, min(num_samples, lo + DEVICE_ROWS)) for lo in range(0, num_samples, DEVICE_ROWS)]
    results, fails = [], []
    for ti, (lo, hi) in enumerate(tiles):
        out, fail = _tile(sampler, plans, ti, hi - lo, 0, cond)
        results.append(out)
        fails.append(fail)
        if progress is not None:
            progress(hi, num_samples)
    # the one host synchronisation of the run: which tiles must be redrawn
    failed = t.stack(fails).cpu().numpy()
    for ti in np.nonzero(failed)[0]:
        lo, hi = tiles[ti]
        for attempt in range(1, MAX_ATTEMPTS + 1):
            out, fail = _tile(sampler, plans, int(ti), hi - lo, attempt, cond)
            if int(fail.item()) == 0:
                results[ti] = out
                break
        else:
            raise RuntimeError("rejection sampler did not finish; the tilt is too large for this step")
    L = t.cat([r[0] for r in results])
    if sampler.estimator == "simple":
        return ops.to_numpy(L), np.zeros(num_samples)
    if not cond:
        logw, _, _ = _weights(sampler, L, None, None)
        return ops.to_numpy(L), ops.to_numpy(logw)
    S = t.cat([r[1] for r in results])
    M = t.cat([r[2] for r in results])
    pick = t.cat([r[3] for r in results])
    logw, logw_o, seg = _weights(sampler, L, S, pick)
    return tuple(ops.to_numpy(x) for x in (L, S, M, logw, logw_o)) + (ops.to_numpy(seg).astype(np.int64),)

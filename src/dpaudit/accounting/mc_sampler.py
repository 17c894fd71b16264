"""The Monte Carlo accountant's sampler: weighted draws of the privacy loss random variable.

Part of :mod:`.monte_carlo` (estimators described there). :class:`_Sampler` draws one direction's
samples tile by tile from the counter-based streams of :mod:`._backend` (so a seed gives the same
draws whatever the chunking or the thread count); :func:`_run_offline` runs it over all samples
(threads on the NumPy backend); :func:`sample_privacy_loss` is the public entry point.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
from scipy import special

from .._validate import check_epsilon, check_int
from . import prv as _prv
from ._backend import (
    SLOT_COLLAPSED,
    TILE_STEPS,
    Cell,
    check_counter_space,
    get_ops,
    key_from_rng,
    sample_uniforms,
)
from .mc_device import run_tiled, supports_tiled
from .mc_samples import ConditionalLossSamples, PrivacyLossSamples
from .mc_tilts import _balance_log_weights, _paper_theta, _tilts_for
from .prv import (
    REMOVE,
    Composition,
    GaussianStep,
    SubsampledGaussianStep,
    as_composition,
    epsilon_upper_bound,
)

__all__ = ["DEFAULT_CHUNK", "ESTIMATORS", "sample_privacy_loss", "set_num_threads"]

ESTIMATORS = ("auto", "is-cmc", "cmc", "is", "simple", "is-paper")
#: default number of array elements per block (about 16 MB per float64 array)
DEFAULT_CHUNK = 1 << 21

ProgressFn = Callable[[int, int], None]


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------
def _check_samples(num_samples, name: str = "num_samples") -> int:
    return check_int(num_samples, name, minimum=2)


def resolve_estimator(estimator: str, comp: Composition) -> str:
    """'auto' -> 'cmc' when the composition has a subsampled step, else 'is' (see the module docstring)."""
    if estimator != "auto":
        return estimator
    tails = all(isinstance(s, (GaussianStep, SubsampledGaussianStep)) for s, _ in comp.segments)
    return "is-cmc" if (tails and not comp.symmetric) else "is"


def _check_estimator_name(estimator: str) -> str:
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {', '.join(ESTIMATORS)}, got {estimator!r}")
    return estimator


def _check_estimator(estimator: str, comp: Composition) -> str:
    estimator = resolve_estimator(_check_estimator_name(estimator), comp)
    if estimator in ("is-paper", "cmc", "is-cmc"):
        for s, _ in comp.segments:
            if not isinstance(s, (GaussianStep, SubsampledGaussianStep)):
                raise ValueError(f"estimator {estimator!r} needs (subsampled) Gaussian steps, got a {s.kind} step")
    return estimator


def _check_chunk(chunk_elements) -> int:
    return check_int(chunk_elements, "chunk_elements", minimum=1024)


# --------------------------------------------------------------------------------------------
# the sampler
# --------------------------------------------------------------------------------------------
class _Sampler:
    """Draws weighted PRV samples of one direction, tile by tile (see :mod:`._backend`).

    Sample i uses tilt ``tilts[i % G]``; a tile holds ``G * ops.tile_rows`` samples, and within a
    tile each tilt group draws from its own block of rows (see :meth:`_groups`). The draws of a
    tile come from the cells of that tile (``TILE_STEPS`` steps of one segment each); ``num_samples`` (set
    by :func:`_run_offline` and :meth:`online`) ends the last tile, so that the draws do not
    depend on how the samples are split into blocks.
    """

    def __init__(self, comp: Composition, direction: str, estimator: str, tilts: Sequence[float],
                 epsilon_paper: float | None, key: int, ops, chunk_elements: int, collapse_gaussian: bool,
                 num_samples: int | None = None):
        self.comp, self.direction, self.estimator = comp, direction, estimator
        self.tilts = tuple(float(x) for x in tilts) if estimator in ("is", "cmc", "is-cmc") else (0.0,)
        self.key, self.ops, self.chunk = key, ops, chunk_elements
        self.collapse = collapse_gaussian and estimator not in ("is-paper", "cmc", "is-cmc")
        self.n_total = comp.num_steps
        self.num_samples = num_samples
        # one tile holds ops.tile_rows samples per tilt group
        self.tile_rows = int(ops.tile_rows) * len(self.tilts)
        self.starts = np.cumsum([0] + [c for _, c in comp.segments])[:-1]
        self.K = [comp.log_mgf(lam, direction) for lam in self.tilts]
        if estimator == "is-paper":
            if direction != REMOVE and not comp.symmetric:
                raise ValueError("estimator 'is-paper' is defined for the 'remove' direction only")
            self.paper = [_paper_theta(s, float(epsilon_paper)) for s, _ in comp.segments]

    # --- layout -------------------------------------------------------------------------------
    @staticmethod
    def _cells(j0: int, count: int) -> list:
        """``(first step, width)`` of the cells of the segment with steps ``j0 .. j0 + count - 1``."""
        out, c, end = [], int(j0), int(j0) + int(count)
        while c < end:
            nxt = min(end, (c // TILE_STEPS + 1) * TILE_STEPS)
            out.append((c, nxt - c))
            c = nxt
        return out

    def _rows(self, tile: int) -> int:
        """Number of samples in sample tile ``tile``."""
        r0 = tile * self.tile_rows
        end = r0 + self.tile_rows
        return end - r0 if self.num_samples is None else min(end, self.num_samples) - r0

    def _groups(self, tile: int, n: int) -> list:
        """``(offset, start, count)`` of each tilt group g of a tile of n samples: sample i uses tilt
        i % G, so the group's samples are the tile's rows ``offset::G``; its random numbers are the
        cell rows ``start .. start + count - 1`` (groups in order, contiguous)."""
        G = len(self.tilts)
        out, start = [], 0
        for g in range(G):
            off = (g - tile * self.tile_rows) % G
            count = len(range(off, n, G))
            out.append((off, start, count))
            start += count
        return out

    # --- offline ------------------------------------------------------------------------------
    def draw(self, lo: int, hi: int):
        """Draws of the samples with global indices lo..hi-1, as NumPy arrays: ``(L, log_w)``, or for
        'cmc'/'is-cmc' ``(L, S, M, log_w, log_w_others, segment)``."""
        TS = self.tile_rows
        parts = []
        for ti in range(lo // TS, (hi - 1) // TS + 1):
            r0 = ti * TS
            if self.estimator == "is-paper":
                out = self._draw_paper(ti)
            elif self.estimator in ("cmc", "is-cmc"):
                out = self._draw_cmc(ti)
            else:
                out = self._draw_is(ti)
            a, b = max(lo - r0, 0), min(hi - r0, out[0].shape[0])
            parts.append(tuple(x[a:b] for x in out))
        if len(parts) == 1:
            return parts[0]
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(len(parts[0])))

    def _draw_is(self, ti: int):
        ops = self.ops
        n = self._rows(ti)
        G = len(self.tilts)
        groups = self._groups(ti, n)
        L = ops.full((n,), 0.0)
        for (step, count), j0 in zip(self.comp.segments, self.starts):
            if self.collapse and isinstance(step, GaussianStep):
                # sum of `count` Gaussian losses under the tilt: N(count (1/2 + lam)/s^2, count/s^2)
                z = Cell(ops, self.key, ti, n, int(j0), 1).normal(SLOT_COLLAPSED)[:, 0]
                for g, (off, a, c) in enumerate(groups):
                    mean = count * (0.5 + self.tilts[g]) / step.sigma ** 2
                    L[off::G] += mean + math.sqrt(count) / step.sigma * z[a:a + c]
                continue
            plans = [step.plan(lam, self.direction) for lam in self.tilts]
            for c0, w in self._cells(j0, count):
                cell = Cell(ops, self.key, ti, n, c0, w)
                for g, (off, a, c) in enumerate(groups):
                    if c:
                        L[off::G] += ops.rowsum(plans[g].draw_loss(ops, cell.group(a, c)))
        if self.estimator == "simple":
            return ops.to_numpy(L), np.zeros(n)
        return ops.to_numpy(L), ops.to_numpy(_balance_log_weights(self.K, self.tilts, L, ops))

    def _pick(self, ti: int, n: int) -> np.ndarray:
        """The coordinate each sample of the tile integrates out (or tilts, for 'is-paper'), uniform."""
        k = self.n_total
        u = self.ops.to_numpy(sample_uniforms(self.ops, self.key, ti, n, 7))
        return np.minimum((u * k).astype(np.int64), k - 1)

    def _draw_cmc(self, ti: int):
        """(L, S, M, log_w, log_w_others, segment of I) with I uniform over the steps, excluded from S and M."""
        ops = self.ops
        n, G = self._rows(ti), len(self.tilts)
        groups = self._groups(ti, n)
        pick = self._pick(ti, n)
        seg = np.searchsorted(self.starts, pick, side="right") - 1
        picks = [pick[off::G] for off, _, _ in groups]
        acc = [[ops.full((len(p),), 0.0), ops.full((len(p),), 0.0), ops.full((len(p),), -math.inf)] for p in picks]
        for (step, count), j0 in zip(self.comp.segments, self.starts):
            plans = [step.plan(lam, self.direction) for lam in self.tilts]
            for c0, w in self._cells(j0, count):
                cell = Cell(ops, self.key, ti, n, c0, w)
                for g, (off, a, c) in enumerate(groups):
                    if not c:
                        continue
                    Sg, Lg, Mg = acc[g]
                    loss = plans[g].draw_loss(ops, cell.group(a, c))
                    s = ops.rowsum(loss)
                    Sg = Sg + s
                    Lg = Lg + s
                    # exclude the integrated coordinate: subtract it from S and hide it from M
                    rows_in = np.nonzero((picks[g] >= c0) & (picks[g] < c0 + w))[0]
                    if rows_in.size:
                        cols_in = picks[g][rows_in] - c0
                        if ops.name != "numpy":
                            rows_in = ops.torch.as_tensor(rows_in, device=ops.dev)
                            cols_in = ops.torch.as_tensor(cols_in, device=ops.dev)
                        Sg[rows_in] = Sg[rows_in] - loss[rows_in, cols_in]
                        loss[rows_in, cols_in] = -math.inf
                    acc[g] = [Sg, Lg, ops.maximum(Mg, ops.rowmax(loss))]
        S = np.zeros(n)
        L = np.zeros(n)
        M = np.full(n, -np.inf)
        for g, (off, _, _) in enumerate(groups):
            S[off::G], L[off::G], M[off::G] = (ops.to_numpy(x) for x in acc[g])
        lam = np.asarray(self.tilts)
        kseg = np.array([[st.log_mgf(x, self.direction) for x in self.tilts] for st, _ in self.comp.segments])
        kminus = np.asarray(self.K)[None, :] - kseg[seg]          # (n, G): K of the other k-1 steps
        logw_o = math.log(G) - special.logsumexp(lam[None, :] * S[:, None] - kminus, axis=1)
        logw = math.log(G) - special.logsumexp(lam[None, :] * L[:, None] - np.asarray(self.K)[None, :], axis=1)
        return L, S, M, logw, logw_o, seg

    def _draw_paper(self, ti: int):
        ops = self.ops
        n = self._rows(ti)
        k = self.n_total
        L = ops.full((n,), 0.0)
        log_s = ops.full((n,), -math.inf)
        pick = self._pick(ti, n)
        for (step, count), j0, (theta, log_m, (comp_logp, means)) in zip(self.comp.segments, self.starts, self.paper):
            plan = step.plan(0.0, REMOVE)
            edges = np.cumsum(np.exp(comp_logp))[:-1]
            for c0, w in self._cells(j0, count):
                cell = Cell(ops, self.key, ti, n, c0, w)
                steps = np.arange(c0, c0 + w)
                t = plan.draw(ops, cell.group(0, n))
                mask_np = pick[:, None] == steps[None, :]
                if mask_np.any():
                    mask = mask_np if ops.name == "numpy" else ops.torch.as_tensor(mask_np, device=ops.dev)
                    comp_i = ops.searchsorted(edges, cell.uniform(3)[mask])
                    tt = ops.take(means, comp_i) + step.sigma * cell.normal(4)[mask]
                    t[mask] = tt
                L = L + ops.sum(plan.loss(ops, t), axis=1)
                log_s = ops.logaddexp(log_s, ops.logsumexp(theta * t - log_m, 1))
        return ops.to_numpy(L), ops.to_numpy(math.log(k) - log_s)

    # --- online -------------------------------------------------------------------------------
    def _cell_losses(self, plans, c0: int, w: int, with_reservoir: bool = False):
        """Losses of every sample at steps c0..c0+w-1, shape (m, w) (backend array), and for
        ``with_reservoir`` also the cells' slot-6 uniforms as a NumPy (m, w) array."""
        ops = self.ops
        m, TS, G = self.num_samples, self.tile_rows, len(self.tilts)
        out = ops.full((m, w), 0.0)
        res = np.empty((m, w)) if with_reservoir else None
        for ti in range(-(-m // TS)):
            r0, n = ti * TS, self._rows(ti)
            cell = Cell(ops, self.key, ti, n, c0, w)
            for g, (off, a, c) in enumerate(self._groups(ti, n)):
                if c:
                    out[r0 + off:r0 + n:G] = plans[g].draw_loss(ops, cell.group(a, c))
            if with_reservoir:
                res[r0:r0 + n] = ops.to_numpy(cell.uniform(6))
        return out, res

    def online(self, num_samples: int, report: Sequence[int] | None = None):
        """Generator: advance all samples one step at a time, yielding ``(i, L, log_w)`` after step i
        (1-based) for each i in ``report`` (default: every step). ``L`` holds the running sums of
        the losses (a backend array, updated in place).
        The draws are those of the offline path with the same ``num_samples`` (cells of
        ``TILE_STEPS`` steps are drawn at once, then consumed column by column)."""
        ops = self.ops
        self.num_samples = num_samples
        report = None if report is None else frozenset(report)
        G = len(self.tilts)
        L = ops.full((num_samples,), 0.0)
        K = np.zeros(G)
        step_no = 0
        for (step, count), j0 in zip(self.comp.segments, self.starts):
            plans = [step.plan(lam, self.direction) for lam in self.tilts]
            kstep = np.array([step.log_mgf(lam, self.direction) for lam in self.tilts])
            for c0, w in self._cells(j0, count):
                losses, _ = self._cell_losses(plans, c0, w)
                for a in range(w):
                    L += losses[:, a]
                    K = K + kstep
                    step_no += 1
                    if report is not None and step_no not in report:
                        continue
                    if self.estimator == "simple":
                        logw = ops.full((num_samples,), 0.0)
                    else:
                        logw = _balance_log_weights(list(K), self.tilts, L, ops)
                    yield step_no, L, logw

    def online_cmc(self, num_samples: int, report: Sequence[int] | None = None):
        """Generator for the conditional estimators: after each step i in ``report`` (default:
        every step) yields ``(i, samples)``, a :class:`ConditionalLossSamples` for the first i steps.
        The integrated coordinate I is kept uniform over the steps so far by reservoir sampling
        (step j replaces it with probability 1/(j+1), uniform of slot 6), so the running sums S and
        M are updated in O(m) per step."""
        self.num_samples = num_samples
        report = None if report is None else frozenset(report)
        m, G = num_samples, len(self.tilts)
        lam = np.asarray(self.tilts)
        L = np.zeros(m)
        l_i = np.zeros(m)
        M = np.full(m, -np.inf)
        seg = np.zeros(m, dtype=np.int64)
        K = np.zeros(G)
        kseg = np.array([[st.log_mgf(x, self.direction) for x in self.tilts] for st, _ in self.comp.segments])
        steps = tuple(st for st, _ in self.comp.segments)
        for si, ((step, count), j0) in enumerate(zip(self.comp.segments, self.starts)):
            plans = [step.plan(x, self.direction) for x in self.tilts]
            for c0, w in self._cells(j0, count):
                losses, res = self._cell_losses(plans, c0, w, with_reservoir=True)
                losses = self.ops.to_numpy(losses)
                for a in range(w):
                    j = c0 + a
                    new = losses[:, a]
                    if j == 0:
                        l_i[:] = new
                        seg[:] = si
                    else:
                        rep = res[:, a] < 1.0 / (j + 1)
                        M = np.where(rep, np.maximum(M, l_i), np.maximum(M, new))
                        l_i = np.where(rep, new, l_i)
                        seg = np.where(rep, si, seg)
                    L += new
                    K = K + kseg[si]
                    if report is not None and j + 1 not in report:
                        continue
                    S = L - l_i
                    logw = math.log(G) - special.logsumexp(lam[None, :] * L[:, None] - K[None, :], axis=1)
                    logw_o = math.log(G) - special.logsumexp(lam[None, :] * S[:, None] - (K[None, :] - kseg[seg]),
                                                             axis=1)
                    yield j + 1, ConditionalLossSamples(L.copy(), S, M.copy(), logw, logw_o, seg.copy(), steps, j + 1,
                                                        self.direction, self.estimator, tuple(self.tilts))


def _check_report_steps(report_steps, k: int) -> tuple:
    """The sorted distinct report steps (default 1..k), each in 1..k."""
    if report_steps is None:
        return tuple(range(1, k + 1))
    try:
        steps = sorted({int(s) for s in report_steps})
    except (TypeError, ValueError):
        raise ValueError(f"report_steps must be a sequence of integers in 1..{k}, got {report_steps!r}") from None
    if not steps or steps[0] < 1 or steps[-1] > k:
        raise ValueError(f"report_steps must be non-empty integers in 1..{k}, got {report_steps!r}")
    return tuple(steps)


def _block_rows(sampler: _Sampler) -> int:
    """Samples per block of :func:`_run_offline`: whole tiles, about ``chunk / steps`` samples."""
    TS = sampler.tile_rows
    return TS * max(1, sampler.chunk // max(1, sampler.n_total) // TS)


_THREADS = {"n": None}


def set_num_threads(n: int | None) -> None:
    """Threads that draw the Monte Carlo blocks of one run in parallel (NumPy backend).

    ``None`` (default): one per CPU core (``os.cpu_count()``). Blocks are keyed by their position
    (:mod:`._backend`), every thread has its own generator, and the blocks are concatenated in
    order, so the result is the same for every thread count; NumPy releases the GIL while it fills
    arrays and evaluates ufuncs, so the threads run on separate cores.

    Raises
    ------
    ValueError
        If ``n`` is not None or a positive integer.
    """
    if n is not None and (isinstance(n, bool) or int(n) != n or n < 1):
        raise ValueError(f"the number of threads must be a positive integer or None, got {n!r}")
    _THREADS["n"] = None if n is None else int(n)


def _num_threads() -> int:
    import os

    return _THREADS["n"] or max(1, os.cpu_count() or 1)


def _run_offline(sampler: _Sampler, num_samples: int, progress: ProgressFn | None):
    if supports_tiled(sampler):  # torch's generator on a device: large tiles, no host sync
        return run_tiled(sampler, num_samples, progress)
    sampler.num_samples = num_samples
    per = _block_rows(sampler)
    bounds = [(lo, min(num_samples, lo + per)) for lo in range(0, num_samples, per)]
    threads = min(_num_threads(), len(bounds)) if sampler.ops.name == "numpy" else 1
    parts = []
    if threads > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=threads) as pool:
            for (_, hi), part in zip(bounds, pool.map(lambda b: sampler.draw(*b), bounds)):
                parts.append(part)
                if progress is not None:
                    progress(hi, num_samples)
    else:
        for lo, hi in bounds:
            parts.append(sampler.draw(lo, hi))
            if progress is not None:
                progress(hi, num_samples)
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(len(parts[0])))


def _samples_from(sampler: "_Sampler", out, lam: tuple):
    if sampler.estimator in ("cmc", "is-cmc"):
        L, S, M, lw, lwo, seg = out
        s = ConditionalLossSamples(L, S, M, lw, lwo, seg, tuple(st for st, _ in sampler.comp.segments),
                                   sampler.n_total, sampler.direction, sampler.estimator, tuple(lam))
        # on a GPU, the estimates' O(m) work per root-finding step runs there too
        return s.use_device(sampler.ops) if sampler.ops.name == "torch" and sampler.ops.device != "cpu" else s
    L, lw = out
    return PrivacyLossSamples(L, lw, sampler.direction, sampler.estimator,
                              tuple(lam) if sampler.estimator == "is" else ())


def sample_privacy_loss(composition, num_samples: int, *, direction: str = REMOVE, estimator: str = "auto",
                        target_epsilon: float | Sequence[float] | None = None, tilts: Sequence[float] | None = None,
                        rng=None, backend: str | None = None, device: str | None = None,
                        chunk_elements: int = DEFAULT_CHUNK, progress: ProgressFn | None = None,
                        _key: int | None = None) -> PrivacyLossSamples:
    """Draw ``num_samples`` weighted samples of the composition's privacy loss random variable.

    Parameters
    ----------
    composition : Composition, Step, list or dp_accounting DpEvent
        The mechanism (see :func:`dpaudit.accounting.prv.as_composition`).
    num_samples : int
        m >= 2.
    direction : {'remove', 'add'}
        Which dominating pair.
    estimator : {'is', 'simple', 'is-paper'}
        Proposal (see the module docstring).
    target_epsilon : float or sequence of float, optional
        eps value(s) the estimates are for: sets the saddle-point tilts of 'is' and the theta of
        'is-paper' (required by 'is-paper'; default for 'is': the RDP eps at delta = 1e-5).
    tilts : sequence of float, optional
        Explicit tilts for 'is' (override ``target_epsilon``).
    rng : numpy Generator, int or None
        Source of the 64-bit key of the counter-based generator (None: fresh OS entropy).
    backend, device : str, optional
        'numpy' (default) or 'torch' on ``device`` ('cpu', 'cuda', 'cuda:1', ...).
    chunk_elements : int
        About how many samples x steps make one block of ``progress`` reports (whole tiles of
        samples; memory is bounded by the tile size whatever this is; draws do not depend on it).
    progress : callable, optional
        ``progress(done, total)`` after each block of samples.

    Returns
    -------
    PrivacyLossSamples or ConditionalLossSamples
        Losses and log-weights, shape (m,) each, as NumPy arrays (for 'cmc': the sums, maxima and
        log-weights of the other coordinates).

    Raises
    ------
    ValueError
        For invalid arguments (named in the message).

    References
    ----------
    Paper 004, §4.2 (Def. 11), App. C (Def. 16); Siegmund (1976) for the saddle-point tilt.
    """
    comp = as_composition(composition)
    m = _check_samples(num_samples)
    direction = _prv._check_direction(direction)
    estimator = _check_estimator(estimator, comp)
    chunk = _check_chunk(chunk_elements)
    check_counter_space(m, comp.num_steps)
    ops = get_ops(backend, device)
    key = key_from_rng(rng) if _key is None else _key
    targets = None if target_epsilon is None else [check_epsilon(e) for e in np.atleast_1d(target_epsilon)]
    if estimator in ("is", "cmc", "is-cmc"):
        if tilts is not None:
            lam = tuple(_prv._check_tilt(x) for x in tilts)
            if not lam:
                raise ValueError("tilts must not be empty")
        else:
            if targets is None:
                targets = [epsilon_upper_bound(comp, 1e-5, direction)]
            lam = _tilts_for(estimator, comp, direction, targets)
    else:
        lam = (0.0,)
    if estimator == "is-paper" and targets is None:
        raise ValueError("estimator 'is-paper' needs target_epsilon (its tilt depends on eps)")
    sampler = _Sampler(comp, direction, estimator, lam, targets[0] if targets else None, key, ops, chunk,
                       collapse_gaussian=True)
    return _samples_from(sampler, _run_offline(sampler, m, progress), lam)

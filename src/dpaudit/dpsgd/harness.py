"""Many-run audits of the user's own DP-SGD code: run it many times with and without a canary.

The one-run audit (:func:`dpaudit.dpsgd.audit_run`) sees each canary through its own coordinate;
bugs that *couple* examples — the batch's summed gradient clipped as a whole, small groups of
examples clipped together, one clip factor for the batch, an update divided by the realised
batch size or by a norm of the data, noise scaled by the data, a special path for some records —
act on all examples of a batch at once, so one run of many canaries barely sees them (issues 35,
45). Two samples of whole runs do: this module runs the user's training step (or whole training
function) many times on pairs of datasets that differ in exactly one example (the canary), and
audits the two samples with the statistics of :mod:`dpaudit.dpsgd.many` (nothing is re-derived
here), either at a fixed number of runs (:func:`run_step_many` then :func:`audit_user_code`) or
in batches that stop at the first certified violation (:func:`audit_user_step`,
:func:`audit_user_train`).

**The contract** (plain PyTorch; the model is the harness's, the DP-SGD code the user's).
Parameters are a flat float tensor of shape ``(D,)``; an example is a row ``x`` of shape ``(D,)``
and its loss is the linear :func:`linear_loss` ``<params, x>``, so its gradient *is* ``x``: the
harness crafts every example's gradient exactly (Nasr et al. 2023's gradient canaries) while the
user's code computes it however it likes (``torch.func.grad(linear_loss)``, autograd, or reading
the rows). Coordinates: ``[0, d)`` real examples, ``d`` the canary's, ``d + 1 ..`` a *null block*
that no example touches (noise only).

* ``step(params, data, generator) -> params``: one DP-SGD step of the user's code on the whole
  dataset ``data`` of shape ``(N, D)`` (the step samples its batch itself, e.g. Poisson at the
  claimed ``q``, clips, sums, adds noise, divides by a *public constant* — its expected batch
  size, never ``len(data)`` — and updates). ``generator`` is a seeded ``torch.Generator`` in a
  loop or a process pool, and ``None`` under ``torch.func.vmap`` (then ``torch.rand``/``torch.
  randn(..., generator=None)`` draw from torch's global generator, which vmap makes independent
  per run with ``randomness="different"``). A step that vmap cannot trace (data-dependent shapes
  such as ``data[mask]``, ``.item()``, Python control flow on tensor values) runs in a loop or a
  process pool.
* **Per-run state** (momentum buffers, a step counter, a per-run key, a sampler's permutation):
  pass ``init_state(params, generator) -> state`` (a tensor, or a tuple/dict of tensors, for
  one run); the step is then ``step(params, data, generator, state) -> (params, state)``. Each
  run starts from its own ``init_state`` (vmapped over the runs like the step, so ``generator``
  is ``None`` there too) and carries its state from step to step; nothing is shared between
  runs (each run must be an independent draw of the mechanism).
* ``train(data, seed) -> params``: the user's whole training function; only its final
  parameters are seen (black box for the steps), in a loop or a process pool.

**The datasets** (:func:`make_tasks`; public, fixed from the claim before any run; in each task
the two datasets differ in exactly one row, the canary, and every other row is part of both and
sampled by the user's step like any other row):

* ``"crowd"``: the canary ``A e_d`` among ``2 s`` *partner* rows ``-(C/2) e_d``, ``s = max(3,
  ceil(8 / q))`` on each side of it (so that at the claimed ``q`` each side has 8 partners in the
  batch on average: a micro-batch of up to 8 consecutive sampled rows, or one of up to 8
  interleaved micro-batches ``batch[i::8]``, or a group of up to 8 rows of the dataset, that holds
  the canary holds partners with it), 8 real rows of norm about ``C / 4`` at the two ends, ``A = 2
  (s C) + 4 C`` (the canary outweighs every partner together). Without the canary a batch that
  samples two partners sums to ``-C`` or below on ``e_d``, with it to the positive side: a batch
  clipped as a whole moves by ``2 C`` (Nasr et al. 2023's worst case); a group that holds the
  canary holds partners too, and moves by ``1.25-2 C`` (a group of two consecutive dataset rows
  holds a sampled partner only half the time at ``q = 1/2``: ``1.25 C``; two consecutive
  sampled rows ``1.5 C``; 3-8 rows or the whole batch up to ``2 C``); a clip factor shared by
  the batch shrinks the partners when the canary is in. Partners of ``C / 2`` (not ``C``): a pair
  of them is exactly ``C``, so a group of two partners is not clipped and the canary's group
  moves by ``1.5 C`` whatever the parity of the partners sampled, and under per-example clipping
  their Poisson count adds a variance of only ``q (1 - q) 2 s / 4`` (in ``C^2``) to the canary's
  coordinate (2 at ``q = 1/2``, against ``sigma^2 = 64``). The crowd gets two thirds of each
  batch of runs (``share=2``): its leaks are the smallest (1.25-2x the claimed sensitivity),
  the pair's are large and certified within a few hundred runs. At ``q = 1`` (every row
  sampled) the crowd is 8 real rows, 11 partners and the canary *last*, the 20th row: a group of
  2-12 consecutive rows counted from the start, or of every ``g``-th row (``g <= 11``, strided
  micro-batches), that holds it holds partners with it, and it is the batch's last row; there the
  partners are ``-C e_d`` (no Poisson count to pay for, and a partner alone fills a clipped
  group, so the canary's group moves by ``2 C``).
* ``"pair"``: the canary ``1000 C e_d`` (:data:`PAIR_CANARY_NORM`; far above any norm a step
  could reasonably treat as ordinary, so that a special path for large or "outlying" gradients
  below that norm — rescaled to a larger bound, left unclipped — moves it; per-example clipping
  makes it ``C`` like any row) first, then one real row of norm ``C / 4``: the smallest
  batches, where a realised count (``|B|`` 2 against 1), a norm of the batch or a noise scale
  taken from the data moves most, and where the canary is the first (and, alone, the last)
  sampled row. Its null block is larger (4,096 coordinates), so that its scale is read to 1%.

**Statistics** per run (each a function of the released parameters and public constants only,
so each two-sample bound is certified whatever the code does; :func:`~dpaudit.dpsgd.many.
audit_many`), per task:

* ``white_box`` (step API): per step, ``o_t = -Delta_t[d] sigma / rms(Delta_t[null])``, the
  update on the canary's coordinate in units of the noise the null block shows (``C``-units for
  a correct step), centred by the partners' expected clipped contribution under the claim and
  scored by the claimed mechanism's likelihood ratio (:func:`~dpaudit.dpsgd.canary_scores`,
  ``"lr"``) at ``sigma_eff = sqrt(sigma^2 + var)``, ``var`` the partners' Poisson variance under
  the claim: sees wrong sensitivity, coupled clipping, shared clip factors, special paths;
* ``scale``: ``-sum_t log rms(Delta_t[null])`` (two-sided): the update's level; identical in law
  in both halves whenever the code scales by a public constant, so it sees data-dependent
  normalisation and noise scales;
* ``spread``: ``max_t |log rms_t - median_s log rms_s|`` (two-sided): the largest jump of the
  scale away from its usual level, which the sum dilutes at small ``q`` (a count or a norm that
  changes only in the few steps that sample the canary);
* ``rank_test`` (the crowd's, next to ``white_box``): the ``white_box`` score above one
  threshold, the median of the runs without the canary, compared with the accountant's
  ``delta(0)`` (the total-variation distance) by the exact joint law of the two counts
  (:func:`~dpaudit.dpsgd.many.rank_threshold_profile`): one set, so no multiplicity over
  thresholds, and no split of the level between a bound on each count, which is what the small
  coupled leaks (1.25-2x the sensitivity at ``sigma`` 8) need; a threshold that moves with the
  runs without the canary, so a bug that also shifts them (groups of partners clipped) does not
  pull it off the crossing of the two laws;
* ``black_box`` (``-params_T[d]``) and ``epoch_max`` on request.

References: Nasr, Hayes, Steinke, Balle, Tramèr, Jagielski, Carlini, Terzis (2023) §5 (many-run
white-box audits, crafted gradients, the worst-case dataset of batch clipping); Abadi et al.
(2016) (DP-SGD); ``docs/dpsgd.md`` §8 ("Many-run audits of your own code").
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from .._validate import check_int
from .audit import canary_scores
from .many import (
    ManyRuns,
    SequentialAudit,
    _auto_grid,
    audit_many,
    detectable_leak,
    epoch_max_scores,
    look_schedule,
    rank_threshold_profile,
    sequential_audit,
)
from .reference import DPSGDConfig

__all__ = ["HARNESS_VIEWS", "THRESHOLD_VIEW", "TRAIN_VIEWS", "HarnessRuns", "HarnessTask", "audit_user_code",
           "audit_user_step",
           "audit_user_train", "linear_loss", "make_task", "make_tasks", "run_step_many", "run_train_many"]

#: The views of :func:`audit_user_code` for a step (``beta`` split over tasks and views): the
#: white-box canary coordinate (sensitivity, coupled clipping, shared factors, special paths),
#: the update's scale and its step-to-step spread (data-dependent normalisation and noise).
HARNESS_VIEWS = ("white_box", "scale", "spread")
#: The views for a whole training function (final parameters only).
TRAIN_VIEWS = ("black_box", "scale")
#: The direction of each view's audit here (fixed before looking): the canary's coordinate can
#: only lean up with the canary; the update's scale and its spread are audited on both sides (a
#: data-dependent normaliser shrinks the update with the canary, a data-dependent noise scale
#: grows it).
ALTERNATIVES = {"white_box": "greater", "black_box": "greater", "epoch_max": "greater", "scale": "two-sided",
                "spread": "two-sided", "rank_test": "greater"}
#: The view that reads the white-box score above one threshold at a fixed rank of the runs
#: without the canary (:func:`~dpaudit.dpsgd.many.rank_threshold_profile`): one set, no grid of
#: thresholds to pay for, and the exact joint law of the two counts instead of two separate
#: bounds. The crowd's default, next to ``white_box``.
THRESHOLD_VIEW = "rank_test"
#: Its grid of ``eps'``: 0 only, the total-variation distance ``delta(0)``, where a leak of 1.5-2x the
#: claimed sensitivity at the documented settings (sigma 4-8) stands out most against the sampling
#: error of the two counts (``benchmarks/results/dpsgd_harness.md``); larger leaks are certified by
#: the ``white_box`` view's epsilon bound and profile check on the same runs.
THRESHOLD_GRID = (0.0,)
#: Its threshold: the out-runs' median (for a small shift of the score the two laws cross near
#: it, where the total-variation set lies).
THRESHOLD_FRACTIONS = (0.5,)
EXECUTORS = ("auto", "vmap", "serial", "process")
#: The pair task's canary norm in units of ``C`` (at least the claim's ``canary_gradient_norm``).
PAIR_CANARY_NORM = 1000.0
#: Bytes of per-example rows a vectorised chunk may hold (``runs x N x D`` float32 times a factor
#: of 8 for the step's intermediate copies): the default chunk, from the task's size alone.
CHUNK_BYTES = 256 * 2**20


def linear_loss(params, x):
    """The harness's per-example loss ``<params, x>`` (shapes ``(D,)`` and ``(D,)``; a scalar):
    the gradient of example ``x`` is ``x`` itself, so every gradient is crafted exactly."""
    return (params * x).sum()


class HarnessTask:
    """One pair of public datasets of a many-run audit (see the module docstring).

    Attributes
    ----------
    name : str
    data_in, data_out : ndarray, shape (N + 1, D) and (N, D)
        The rows with and without the canary (``float32``); ``data_in`` is ``data_out`` with the
        canary row inserted at ``position``.
    dim : int
        ``D = d + 1 + null_block``.
    canary_coordinate : int
        ``d``: the canary's coordinate.
    null : slice
        The null block's coordinates.
    position : int
        Where the canary row sits in ``data_in``.
    offset, variance : float
        Under the claim (per-example clipping to ``C``, Poisson sampling at ``q``): the mean and
        variance of the other rows' summed clipped gradients on the canary's coordinate, in
        ``C``-units (``q sum_j c_j`` and ``q (1 - q) sum_j c_j^2``, ``c_j`` row ``j``'s clipped
        component there). Public: the white-box view centres and scales by them.
    views : tuple of str or None
        The views :func:`audit_user_code` reads on this task by default (None: all of
        :data:`HARNESS_VIEWS`): the crowd is read through ``white_box`` and
        :data:`THRESHOLD_VIEW` (what its partners move), the pair through :data:`HARNESS_VIEWS`.
    share : float
        ``> 0``: the task's part of each batch of runs, relative to the other tasks'
        (:func:`run_step_many` splits the runs in proportion, fixed before any run).
    """

    def __init__(self, data_in, data_out, canary_coordinate, null_block, position, *, name="task", config=None,
                 views=None, share=1.0):
        self.name = str(name)
        if not (isinstance(share, (int, float)) and math.isfinite(share) and share > 0):
            raise ValueError(f"share must be a finite number > 0, got {share!r}")
        self.share = float(share)
        self.views = None if views is None else tuple(views)
        self.data_in, self.data_out = data_in, data_out
        self.dim = int(data_out.shape[1])
        self.canary_coordinate = int(canary_coordinate)
        self.null = slice(canary_coordinate + 1, canary_coordinate + 1 + null_block)
        self.position = int(position)
        self.offset, self.variance = 0.0, 0.0
        if config is not None and data_out.shape[0]:
            C, q = float(config.max_grad_norm), float(config.sampling_rate)
            rows = np.asarray(data_out, dtype=float)
            norms = np.linalg.norm(rows, axis=1)
            c = rows[:, self.canary_coordinate] * np.minimum(1.0, C / np.maximum(norms, 1e-300)) / C
            self.offset, self.variance = float(q * c.sum()), float(q * (1 - q) * np.sum(c**2))

    def __repr__(self) -> str:
        return (f"HarnessTask({self.name!r}, rows {self.data_out.shape[0]} + canary at {self.position}, "
                f"D={self.dim})")


def _null_block(null_block):
    return check_int(null_block, "null_block", 8)


def make_task(config: DPSGDConfig, *, data=None, opposing: int = 1, null_block: int = 256,
              seed: int = 0) -> HarnessTask:
    """One custom pair of datasets: real rows, ``opposing`` crafted rows, the canary, a null block.

    The default suite is :func:`make_tasks`; this builds a single task from the user's own rows
    (e.g. a worst case of their own), named ``"custom"``.

    Parameters
    ----------
    config : DPSGDConfig
        The claim; ``max_grad_norm`` ``C`` and ``canary_gradient_norm`` (``4 C`` by default) set
        the crafted gradients.
    data : array, shape (N, d), optional
        Real examples' gradients (rows; the linear loss makes them the gradients). Default: 8
        rows in 8 coordinates, Gaussian of norm about ``C / 4`` (seeded).
    opposing : int
        Crafted rows ``-canary_norm / (2 opposing) e_d`` (``>= 0``). Part of the public dataset,
        in both halves.
    null_block : int
        Coordinates no row touches (``>= 8``): the update's noise, for the scale statistics and
        the white-box units.
    seed : int
        Seeds the default rows and the canary's position (uniform among the rows).

    Returns
    -------
    HarnessTask

    Raises
    ------
    ValueError
        On data that is not a finite 2-D array, or counts out of range.
    """
    opposing = check_int(opposing, "opposing", 0)
    null_block = _null_block(null_block)
    rng = np.random.default_rng([seed, 35])
    C, a = float(config.max_grad_norm), float(config.canary_gradient_norm)
    if data is None:
        real = rng.normal(0.0, C / 4 / math.sqrt(8), (8, 8))
    else:
        real = np.asarray(data, dtype=float)
        if real.ndim != 2 or not np.all(np.isfinite(real)):
            raise ValueError(f"data must be a finite array of shape (N, d), got shape {real.shape}")
    n, d = real.shape
    rows = np.zeros((n + opposing, d + 1 + null_block))
    rows[:n, :d] = real
    rows[n:, d] = -a / (2.0 * opposing) if opposing else 0.0
    position = int(rng.integers(0, n + opposing + 1))
    return _task("custom", rows, d, a, position, null_block, config)


def _task(name, rows, d, canary_norm, position, null_block, config, views=None, share=1.0) -> HarnessTask:
    canary = np.zeros((1, rows.shape[1]))
    canary[0, d] = canary_norm
    data_in = np.concatenate([rows[:position], canary, rows[position:]])
    return HarnessTask(data_in.astype(np.float32), rows.astype(np.float32), d, null_block, position, name=name,
                       config=config, views=views, share=share)


def make_tasks(config: DPSGDConfig, *, null_block: int = 256, pair_null_block: int = 4096, seed: int = 0,
               reach: float = 8.0, crowd_share: float = 2.0) -> tuple:
    """The default datasets of a many-run audit: ``("crowd", "pair")`` (module docstring).

    Both are built from the claim alone (``q``, ``C``) before any run; in each the two datasets
    differ in the canary row only.

    Parameters
    ----------
    config : DPSGDConfig
        The claim.
    null_block, pair_null_block : int
        Coordinates no row touches (``>= 8``) in the crowd and in the pair: the null block's RMS
        is read to a relative error of about ``1 / sqrt(2 null_block)`` per step, which the
        pair's scale views need small (4,096: 1.1%) and the crowd's white-box units less so (its
        rows are many, so its coordinates cost more).
    seed : int
        Seeds the real rows.
    reach : float
        Partners per side of the crowd's canary expected in a batch at the claimed ``q``
        (``> 0``): ``s = max(3, ceil(reach / q))`` partners on each side, so no partner on a
        side has probability ``(1 - q)^s <= exp(-reach)``. Default 8: micro-batches of up to 8
        rows, consecutive or interleaved, hold partners with the canary.
    crowd_share : float
        ``> 0``: the crowd's part of each batch of runs against the pair's 1 (default 2: two
        thirds; the crowd's leaks are the smallest).

    Returns
    -------
    tuple of HarnessTask
        ``(crowd, pair)``.

    Raises
    ------
    ValueError
        On ``null_block < 8``, ``reach <= 0`` or ``crowd_share <= 0``.
    """
    null_block, pair_null_block = _null_block(null_block), _null_block(pair_null_block)
    if not (reach > 0 and math.isfinite(reach)):
        raise ValueError(f"reach must be a finite number > 0, got {reach!r}")
    C, q = float(config.max_grad_norm), float(config.sampling_rate)
    rng = np.random.default_rng([seed, 45])
    real = rng.normal(0.0, C / 4 / math.sqrt(8), (8, 8))
    d, D = 8, 8 + 1 + null_block
    partner = 0.5 * C if q < 1 else C  # q = 1: a partner alone fills a clipped group (below)
    if q < 1:
        side = max(3, math.ceil(reach / q))
        crowd = np.zeros((8 + 2 * side, D))
        crowd[:4, :d] = real[:4]
        crowd[4:4 + 2 * side, d] = -partner
        crowd[4 + 2 * side:, :d] = real[4:]
        position, partners = 4 + side, 2 * side
    else:  # every row is sampled: 8 real rows, 11 partners, the canary last (the 20th row): a group of
        crowd = np.zeros((19, D))  # 2-12 consecutive rows counted from the start, or of every g-th row
        crowd[:8, :d] = real  # (g <= 11), that holds the canary holds partners with it; it is the batch's last row
        crowd[8:, d] = -partner
        position, partners = 19, 11
    canary = 2.0 * (partners * partner) + 4.0 * C  # outweighs every partner together
    pair = np.zeros((1, d + 1 + pair_null_block))
    pair[0, :d] = real[0]
    return (_task("crowd", crowd, d, canary, position, null_block, config, views=("white_box", THRESHOLD_VIEW),
                  share=crowd_share),
            _task("pair", pair, d, max(float(config.canary_gradient_norm), PAIR_CANARY_NORM * C), 0, pair_null_block,
                  config,
                  views=HARNESS_VIEWS))


# --------------------------------------------------------------------------------- running
def _split_state(out, has_state, shape):
    """The step's return value: ``params`` or ``(params, state)``."""
    if has_state:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise ValueError("with init_state the step must return (params, state), got "
                             f"{type(out).__name__}")
        params, state = out
    else:
        params, state = out, None
    if tuple(getattr(params, "shape", ())) != tuple(shape):
        raise ValueError(f"the user's step must return finite parameters of shape {tuple(shape)}, got "
                         f"{getattr(params, 'shape', type(params).__name__)}")
    return params, state


def _summarise(prev, new, c, null):
    """Per run and step: the update on the canary's coordinate and the null block's log RMS
    (float64). Works on ``(D,)`` and ``(runs, D)`` parameters."""
    import torch

    delta = (new - prev).double()
    rms = delta[..., null].square().mean(dim=-1).sqrt()
    return delta[..., c], torch.log(torch.clamp(rms, min=1e-300))


def _one_run(kind, fn, init_state, data, D, T, seed, c, null):
    """One run in this process: ``(delta_d (T,), log_rms (T,), final_d)`` for a step,
    ``(final_d, log_rms_final)`` for ``train``."""
    import torch

    x = torch.as_tensor(data)
    with torch.no_grad():
        if kind == "train":
            p = torch.as_tensor(fn(x, int(seed))).detach().cpu().double().reshape(-1)
            if p.shape[0] != D:
                raise ValueError(f"the user's train must return finite parameters of shape ({D},), got {tuple(p.shape)}")
            rms = p[null].square().mean().sqrt()
            return float(p[c]), float(torch.log(torch.clamp(rms, min=1e-300)))
        gen = torch.Generator().manual_seed(int(seed))
        params = torch.zeros(D)
        state = init_state(params, gen) if init_state is not None else None
        dd, lr = np.zeros(T), np.zeros(T)
        for t in range(T):
            out = fn(params, x, gen, state) if init_state is not None else fn(params, x, gen)
            new, state = _split_state(out, init_state is not None, (D,))
            a, b = _summarise(params, torch.as_tensor(new), c, null)
            dd[t], lr[t] = float(a), float(b)
            params = torch.as_tensor(new)
        return dd, lr, float(params[c])


_WORKER = {}


def _init_worker(payload):
    """A pool worker's start: the user's function, its state initialiser and the datasets, sent
    once (inherited through ``fork``; unpickled here, by value, under ``spawn``)."""
    if isinstance(payload, bytes):
        try:
            import cloudpickle as pickler
        except ImportError:  # pragma: no cover - the parent pickled with the standard pickler then
            import pickle as pickler
        payload = pickler.loads(payload)
    _WORKER["payload"] = payload


def _worker_run(job):
    kind, fn, init_state, datasets, D, T = _WORKER["payload"]
    key, seed, c, null = job
    return _one_run(kind, fn, init_state, datasets[key], D, T, seed, c, null)


def _by_value_modules(obj, seen=None, depth=0):
    """Modules of ``obj`` (a function, a callable object, its closure, attributes and their
    types, two levels deep) that a fresh interpreter cannot import by name: loaded from a file
    path, or made at run time. cloudpickle must send them by value."""
    import sys
    import types

    seen = set() if seen is None else seen
    found = []
    if depth > 2 or id(obj) in seen:
        return found
    seen.add(id(obj))
    for o in (obj, type(obj)):
        name = getattr(o, "__module__", None)
        if not name or name in ("__main__", "builtins") or name in found or name not in sys.modules:
            continue
        if not _importable_by_name(name):
            found.append(name)
    inner = []
    if isinstance(obj, types.FunctionType):
        inner += [cell.cell_contents for cell in (obj.__closure__ or ()) if _cell_full(cell)]
    inner += list(getattr(obj, "__dict__", {}).values()) if not isinstance(obj, types.ModuleType) else []
    for o in inner:
        for name in _by_value_modules(o, seen, depth + 1):
            if name not in found:
                found.append(name)
    return found


def _importable_by_name(name: str) -> bool:
    """Whether a fresh interpreter finds module ``name`` by name: its top-level package is a
    built-in, or some finder on ``sys.meta_path`` finds it *without* ``sys.modules`` (a module
    loaded from a file path and registered in ``sys.modules`` by hand is found there only)."""
    import sys

    top = name.partition(".")[0]
    if top in sys.builtin_module_names:
        return True
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            if find(top, None) is not None:
                return True
        except (ImportError, ValueError, TypeError):  # a finder that cannot answer for this name
            continue
    return False


def _cell_full(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _spawn_payload(payload):
    """``payload`` as bytes a spawned worker can load: cloudpickle, with the modules a fresh
    interpreter cannot import sent by value; the standard pickler when cloudpickle is absent.
    Raises whatever pickling raises."""
    import sys

    try:
        import cloudpickle
    except ImportError:
        import pickle

        return pickle.dumps(payload)
    _, fn, init_state, *_ = payload
    names = [n for o in (fn, init_state) if o is not None for n in _by_value_modules(o)]
    for n in names:
        cloudpickle.register_pickle_by_value(sys.modules[n])
    try:
        return cloudpickle.dumps(payload)
    finally:
        for n in names:
            cloudpickle.unregister_pickle_by_value(sys.modules[n])


def _start_method(fn) -> str:
    """The process pool's start method: ``fork`` where the platform has it (the workers inherit
    the user's function, the datasets and the imported modules: nothing is pickled, so lambdas,
    closures and classes loaded from a file all work), except when JAX is imported and ``fn``
    can be sent by value: JAX's runtime threads do not survive ``fork`` (JAX warns of a deadlock),
    so then ``spawn``. ``spawn`` where there is no ``fork``."""
    import multiprocessing
    import sys

    if "fork" not in multiprocessing.get_all_start_methods():
        return "spawn"
    if "jax" in sys.modules:
        try:
            _spawn_payload(("step", fn, None, {}, 0, 0))
        except Exception:  # noqa: BLE001 - any pickling failure: fork is the only way
            return "fork"
        return "spawn"
    return "fork"


def _pool_runs(kind, fn, init_state, datasets, D, T, jobs, workers):
    """The jobs in a process pool of ``workers`` (``concurrent.futures``, start method
    :func:`_start_method`), or ``None`` with a warning when the function cannot reach spawned
    workers (then the caller runs them in this process)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    method = _start_method(fn)
    payload = (kind, fn, init_state, datasets, D, T)
    if method == "spawn":
        try:
            payload = _spawn_payload(payload)
        except Exception as exc:  # noqa: BLE001 - any pickling failure: run here instead
            warnings.warn(f"the user's {kind} cannot be sent to spawned worker processes ({type(exc).__name__}: "
                          f"{exc}); running the {len(jobs)} runs in this process instead (install cloudpickle, or "
                          "define the function at the top level of an importable module)", stacklevel=4)
            return None
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method),
                                 initializer=_init_worker, initargs=(payload,)) as pool:
            return list(pool.map(_worker_run, jobs, chunksize=max(1, len(jobs) // (4 * workers))))
    except BrokenProcessPool as exc:
        warnings.warn(f"the process pool ({method}) could not start the user's {kind} ({exc}); running the "
                      f"{len(jobs)} runs in this process instead", stacklevel=4)
        return None


def _vmap_runs(step, init_state, data, task, T, runs, seed, chunk):
    """``runs`` runs of ``step`` vectorised by ``torch.func.vmap`` (``randomness="different"``,
    the global generator seeded from ``seed`` inside ``torch.random.fork_rng``, so the caller's
    state is untouched). Returns ``(delta_d (runs, T), log_rms (runs, T), final_d (runs,))``."""
    import torch
    from torch.func import vmap

    x = torch.as_tensor(data)
    c, null = task.canary_coordinate, task.null
    if init_state is None:
        one = vmap(lambda p: step(p, x, None), randomness="different")
    else:
        one = vmap(lambda p, s: step(p, x, None, s), randomness="different")
        init = vmap(lambda p: init_state(p, None), randomness="different")
    dd, lr, fin = [], [], []
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(int(seed))
        for start in range(0, runs, chunk):
            p = torch.zeros(min(chunk, runs - start), task.dim)
            state = init(p) if init_state is not None else None
            a_t, b_t = [], []
            for _ in range(T):
                new, state = _split_state(one(p) if init_state is None else one(p, state), init_state is not None,
                                          p.shape)
                a, b = _summarise(p, new, c, null)
                a_t.append(a)
                b_t.append(b)
                p = new
            dd.append(torch.stack(a_t, dim=1).numpy())
            lr.append(torch.stack(b_t, dim=1).numpy())
            fin.append(p[:, c].double().numpy())
    return np.concatenate(dd), np.concatenate(lr), np.concatenate(fin)


def _statistics(raw, task: HarnessTask, config: DPSGDConfig, kind: str) -> dict:
    """The per-run statistics of the module docstring from the raw per-run arrays."""
    if kind == "train":
        final_d, log_rms = raw
        return {"black_box": -final_d, "scale": -log_rms}
    dd, lr, final_d = raw  # (runs, T), (runs, T), (runs,)
    sigma, q = float(config.noise_multiplier), float(config.sampling_rate)
    rms = np.exp(lr)
    o = np.clip(-dd * sigma / rms, -1e6, 1e6)  # C-units for a correct step
    o = (o - task.offset).T  # (T, runs), centred by the other rows' expected clipped contribution
    sigma_eff = math.sqrt(sigma**2 + task.variance)
    return {"black_box": -final_d, "scale": -lr.sum(axis=1),
            "spread": np.abs(lr - np.median(lr, axis=1, keepdims=True)).max(axis=1),
            "white_box": canary_scores(o, sigma_eff, q, "lr"), "epoch_max": epoch_max_scores(o, q)}


def _default_chunk(task: HarnessTask) -> int:
    n = max(1, task.data_in.shape[0])
    return max(16, int(CHUNK_BYTES // (4 * 8 * n * task.dim)))


@dataclass(frozen=True)
class HarnessRuns:
    """The runs of a many-run audit, per task.

    Attributes
    ----------
    tasks : dict
        Task name -> :class:`~dpaudit.dpsgd.many.ManyRuns` (the first ``runs_in`` with the
        canary), views ``white_box``, ``scale``, ``spread``, ``black_box``, ``epoch_max`` for a
        step; ``black_box`` and ``scale`` for a training function.
    config : DPSGDConfig
    seconds : float
    details : dict
        ``runs`` (all tasks), ``executor``, ``entry`` (``"step"`` or ``"train"``), ``seed``.
    """

    tasks: dict
    config: DPSGDConfig
    seconds: float
    details: dict = field(default_factory=dict)

    def concatenate(self, other: "HarnessRuns") -> "HarnessRuns":
        """These runs followed by ``other``'s, task by task (a sequential audit's next batch)."""
        if set(other.tasks) != set(self.tasks):
            raise ValueError(f"the runs are of different tasks: {sorted(self.tasks)} and {sorted(other.tasks)}")
        return HarnessRuns({k: v.concatenate(other.tasks[k]) for k, v in self.tasks.items()}, self.config,
                           self.seconds + other.seconds,
                           {**self.details, "runs": self.details["runs"] + other.details["runs"]})

    def __getitem__(self, name: str) -> ManyRuns:
        return self.tasks[name]


def _resolve_tasks(config, task, tasks):
    if task is not None and tasks is not None:
        raise ValueError("pass task or tasks, not both")
    if task is not None:
        tasks = (task,)
    tasks = make_tasks(config) if tasks is None else tuple(tasks)
    if not tasks or not all(isinstance(t, HarnessTask) for t in tasks):
        raise ValueError(f"tasks must be a non-empty sequence of HarnessTask, got {tasks!r}")
    names = [t.name for t in tasks]
    if len(set(names)) != len(names):
        raise ValueError(f"task names must differ, got {names}")
    return tasks


def _task_runs(runs: int, tasks) -> list:
    """Runs per task: ``runs`` split in proportion to the tasks' ``share`` (rounded down; the
    remainder to the first task), at least 4 each. A function of the count and the tasks only,
    so fixed before any run."""
    shares = np.array([t.share for t in tasks], dtype=float)
    counts = [max(4, int(runs * w / shares.sum())) for w in shares]
    counts[0] += max(0, runs - sum(counts))
    return counts


def _run_many(kind, fn, config, runs, tasks, executor, workers, chunk, seed, init_state, batch=0) -> HarnessRuns:
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}, got {executor!r}")
    if init_state is not None and not callable(init_state):
        raise ValueError(f"init_state must be a callable init_state(params, generator) -> state, got {init_state!r}")
    runs = check_int(runs, "runs", 4 * len(tasks))
    counts = _task_runs(runs, tasks)
    T = int(config.steps)
    t0 = time.perf_counter()
    used = set()
    out = {}
    vmappable = kind == "step" and executor in ("auto", "vmap")
    for i, task in enumerate(tasks):
        per_task = counts[i]
        halves = (per_task // 2, per_task - per_task // 2)
        stats = []
        raws = {}
        for h, (data, n_runs) in enumerate(((task.data_in, halves[0]), (task.data_out, halves[1]))):
            ss = np.random.SeedSequence([int(seed), 35, int(batch), i, h])
            if vmappable:
                try:
                    raws[h] = _vmap_runs(fn, init_state, data, task, T, n_runs, int(ss.generate_state(1)[0]),
                                         _default_chunk(task) if chunk is None else chunk)
                    used.add("vmap")
                except Exception as exc:  # noqa: BLE001 - any trace failure: the step is not vmappable
                    if executor == "vmap":
                        raise ValueError(f"the step cannot be vectorised with torch.func.vmap: {type(exc).__name__}: "
                                         f"{exc}") from exc
                    vmappable = False
        todo = [h for h in (0, 1) if h not in raws]
        if todo:
            seeds = {h: np.random.SeedSequence([int(seed), 35, int(batch), i, h]).generate_state(
                halves[h], dtype=np.uint64) % (2**62) for h in todo}
            datasets = {h: (task.data_in, task.data_out)[h] for h in todo}
            jobs = [(h, int(s), task.canary_coordinate, task.null) for h in todo for s in seeds[h]]
            w = workers if executor in ("auto", "process") else 0
            results = _pool_runs(kind, fn, init_state, datasets, task.dim, T, jobs, w) if w else None
            if results is None:
                results = [_one_run(kind, fn, init_state, datasets[h], task.dim, T, s, c, n) for h, s, c, n in jobs]
                used.add("serial")
            else:
                used.add("process")
            for h in todo:
                mine = [r for (hh, *_), r in zip(jobs, results) if hh == h]
                raws[h] = tuple(np.array([r[j] for r in mine]) for j in range(len(mine[0])))
        for h in (0, 1):
            if not all(np.all(np.isfinite(a)) for a in raws[h]):
                raise ValueError(f"the user's {kind} must return finite parameters of shape ({task.dim},)")
            stats.append(_statistics(raws[h], task, config, kind))
        s_in, s_out = stats
        empty = np.zeros(0)
        out[task.name] = ManyRuns(
            black_box_in=s_in["black_box"], black_box_out=s_out["black_box"],
            white_box_in=s_in.get("white_box", empty), white_box_out=s_out.get("white_box", empty),
            config=config, variant=f"user {kind}", seconds=0.0, scale_in=s_in["scale"], scale_out=s_out["scale"],
            epoch_max_in=s_in.get("epoch_max", empty), epoch_max_out=s_out.get("epoch_max", empty),
            spread_in=s_in.get("spread", empty), spread_out=s_out.get("spread", empty),
            details={"runs": per_task, "runs_in": halves[0], "canary": "gradient", "task": task.name,
                     "dimension": task.dim, "rows_out": int(task.data_out.shape[0]),
                     "canary_position": task.position, "seed": seed, "batch": batch, "entry": kind,
                     "views": task.views})
    executor_used = "+".join(sorted(used))
    return HarnessRuns(out, config, time.perf_counter() - t0,
                       {"runs": int(sum(counts)), "executor": executor_used, "entry": kind, "seed": seed,
                        "tasks": tuple(t.name for t in tasks)})


def run_step_many(step, config: DPSGDConfig, *, runs: int = 2000, task: HarnessTask = None, tasks=None,
                  executor: str = "auto", workers: int = 2, chunk: int = None, seed: int = 0,
                  init_state=None, batch: int = 0) -> HarnessRuns:
    """Run the user's DP-SGD step ``config.steps`` times per run, ``runs`` runs over the tasks.

    Parameters
    ----------
    step : callable
        ``step(params (D,), data (N, D), generator or None) -> params (D,)`` (module docstring);
        with ``init_state``, ``step(params, data, generator, state) -> (params, state)``. The
        user's DP-SGD step with the claimed ``q``, ``sigma``, ``C`` and the harness's
        :func:`linear_loss`; parameters start at zero.
    config : DPSGDConfig
        The claim (``noise_multiplier``, ``sampling_rate``, ``steps``, ``max_grad_norm``).
    runs : int
        Runs in all, ``>= 4`` per task: ``runs // len(tasks)`` per task, the first half of them
        on the task's ``data_in`` (with the canary).
    task : HarnessTask, optional
        A single task (e.g. :func:`make_task`); or
    tasks : sequence of HarnessTask, optional
        Default :func:`make_tasks` ``(config)``.
    executor : {"auto", "vmap", "serial", "process"}
        ``"auto"``: ``torch.func.vmap`` if the step traces, else a process pool of ``workers``
        (a loop when ``workers`` is 0). ``"vmap"`` raises if the step does not trace.
    workers : int
        Process-pool size. ``fork`` where the platform has it (nothing is pickled: closures,
        lambdas and classes loaded from a file work); else ``spawn`` with the step sent by value
        (cloudpickle, when installed); a step that cannot be sent runs in this process, with a
        warning.
    chunk : int, optional
        Runs vectorised together; default from the task's size (:data:`CHUNK_BYTES`). The
        results depend on it (one random stream per chunk), not on the machine.
    seed : int
        Seeds every run (vmap: torch's global generator inside ``fork_rng``; loop and pool: one
        ``torch.Generator`` per run, the same for both).
    init_state : callable, optional
        ``init_state(params (D,), generator or None) -> state``: each run's own state (module
        docstring), vmapped over the runs like the step.
    batch : int
        ``>= 0``: which independent batch of runs ``seed`` gives (a sequential audit's batches).

    Returns
    -------
    HarnessRuns
        Per task a :class:`~dpaudit.dpsgd.many.ManyRuns` (views ``white_box``, ``scale``,
        ``spread``, ``black_box``, ``epoch_max``); ``details["executor"]`` says which executor
        ran.

    Raises
    ------
    ValueError
        On bad counts, an unknown executor, a step that does not return finite ``(D,)``
        parameters (or ``(params, state)`` with ``init_state``), or (``executor="vmap"``) a step
        vmap cannot trace.

    References
    ----------
    Nasr et al. (2023) §5; module docstring.
    """
    tasks = _resolve_tasks(config, task, tasks)
    return _run_many("step", step, config, runs, tasks, executor, check_int(workers, "workers", 0),
                     None if chunk is None else check_int(chunk, "chunk"), seed, init_state,
                     check_int(batch, "batch", 0))


def run_train_many(train, config: DPSGDConfig, *, runs: int = 400, task: HarnessTask = None, tasks=None,
                   workers: int = 2, seed: int = 0, batch: int = 0) -> HarnessRuns:
    """Run the user's whole training function ``runs`` times over the tasks, half with the canary.

    Parameters
    ----------
    train : callable
        ``train(data (N, D) float32 tensor, seed int) -> params (D,)``: the user's DP-SGD
        training from parameters zero with the harness's :func:`linear_loss` (module
        docstring); only the final parameters are seen.
    config : DPSGDConfig
        The claim.
    runs : int
        Runs in all, ``>= 4`` per task.
    task, tasks :
        As in :func:`run_step_many`.
    workers : int
        Process-pool size (0: a loop); as in :func:`run_step_many`.
    seed : int
        Run ``i`` gets a seed drawn from ``seed``.
    batch : int
        As in :func:`run_step_many`.

    Returns
    -------
    HarnessRuns
        Views ``black_box`` and ``scale`` only.

    Raises
    ------
    ValueError
        As :func:`run_step_many`.
    """
    tasks = _resolve_tasks(config, task, tasks)
    workers = check_int(workers, "workers", 0)
    return _run_many("train", train, config, runs, tasks, "process" if workers else "serial", workers, 1, seed,
                     None, check_int(batch, "batch", 0))


def _as_runs(result) -> HarnessRuns:
    if isinstance(result, HarnessRuns):
        return result
    if isinstance(result, ManyRuns):
        return HarnessRuns({"task": result}, result.config, result.seconds, {"runs": result.details.get("runs", 0)})
    raise ValueError(f"result must be HarnessRuns or ManyRuns, got {type(result).__name__}")


def _views_plan(runs: HarnessRuns, views) -> dict:
    """Task name -> the views read on it: ``views`` for every task when given, else each task's
    own (``HarnessTask.views``, recorded in the runs' details) for a step and :data:`TRAIN_VIEWS`
    for a training function."""
    plan = {}
    for name, r in runs.tasks.items():
        if views is not None:
            plan[name] = tuple(views)
        elif r.white_box_in.size:
            plan[name] = tuple(r.details.get("views") or HARNESS_VIEWS)
        else:
            plan[name] = TRAIN_VIEWS
    if not all(plan.values()):
        raise ValueError(f"views must be non-empty, got {views!r}")
    return plan


def _grid(profile, config, delta):
    if isinstance(profile, str):
        if profile != "auto":
            raise ValueError(f"profile must be 'auto', a grid of epsilons or None, got {profile!r}")
        return _auto_grid(config, delta)
    return profile


def _threshold_view(r: ManyRuns, config: DPSGDConfig, beta: float) -> dict:
    """The :data:`THRESHOLD_VIEW` entry of :func:`audit_user_code` for one task, in the shape of a
    view of :func:`~dpaudit.dpsgd.many.audit_many` (``epsilon_lower_bound`` 0: this view certifies
    deltas on its grid, not an epsilon at ``delta``)."""
    if r.white_box_in.size < 2 or r.white_box_out.size < 2:
        raise ValueError(f"the {THRESHOLD_VIEW!r} view needs the white-box scores of a step (run_step_many)")
    p = rank_threshold_profile(r.white_box_in, r.white_box_out, config.composition(), beta=beta,
                               epsilons=THRESHOLD_GRID, fractions=THRESHOLD_FRACTIONS)
    return {"epsilon_lower_bound": 0.0, "mu_lower_bound": 0.0, "violated": False, "alternative": "greater",
            "profile": p, "profile_violated": p["violated"]}


def audit_user_code(result, *, delta: float = 1e-5, beta: float = 0.05, views=None, profile="auto") -> dict:
    """Certified two-sample audit of a harness result, ``beta`` split over the tasks and views.

    :func:`~dpaudit.dpsgd.many.audit_many` on each task at ``beta / (tasks x views)`` per view,
    with the privacy-profile check (:func:`~dpaudit.dpsgd.many.profile_check`) on ``profile``
    (a grid of epsilons fixed before looking): at ``eps' = 0`` it compares the certified
    total-variation distance with the accountant's ``delta(0)``, which catches a leak with far
    fewer runs than the epsilon bound at ``delta = 1e-5``. Valid because each task's two halves
    are i.i.d. runs on two datasets that differ in one example, each view is a function of the
    released parameters, and a union bound covers the views and tasks.

    Parameters
    ----------
    result : HarnessRuns or ManyRuns
        From :func:`run_step_many` or :func:`run_train_many`.
    delta, beta : float
        Delta of the epsilon bounds; overall failure probability of the verdict.
    views : sequence of str, optional
        Default: each task's own (``HarnessTask.views``: the crowd ``white_box`` and
        :data:`THRESHOLD_VIEW`, the pair :data:`HARNESS_VIEWS`) for a step, :data:`TRAIN_VIEWS`
        for ``train``. :data:`THRESHOLD_VIEW` needs a step's white-box scores; it certifies a
        delta at ``eps' = 0`` (its ``epsilon_lower_bound`` is 0) through its ``profile`` entry.
    profile : "auto", sequence of float or None
        The grid (None: no profile check). ``"auto"``: ``(0, eps/4, eps/2)`` with ``eps`` the
        accountant's epsilon at ``delta`` (a function of the claim only).

    Returns
    -------
    dict
        ``accountant_epsilon``, ``runs``; per ``"task/view"`` key the view's
        ``epsilon_lower_bound``, ``mu_lower_bound``, ``violated``, ``profile`` and
        ``profile_violated``; ``"caught"`` (any view violated, or its profile), ``"violated"``,
        ``views`` (the keys), ``beta_per_view``.

    Raises
    ------
    ValueError
        As :func:`~dpaudit.dpsgd.many.audit_many`, or on a bad ``profile``.
    """
    runs = _as_runs(result)
    plan = _views_plan(runs, views)
    grid = _grid(profile, runs.config, delta)
    share = beta / max(1, sum(len(v) for v in plan.values()))
    out = {"runs": int(runs.details.get("runs", 0)), "beta_per_view": share}
    keys = []
    for name, r in runs.tasks.items():
        cp_views = tuple(v for v in plan[name] if v != THRESHOLD_VIEW)
        a = audit_many(r, delta=delta, beta=share, views=cp_views or ("black_box",), profile=grid,
                       alternatives=ALTERNATIVES)
        out["accountant_epsilon"] = a["accountant_epsilon"]
        if THRESHOLD_VIEW in plan[name]:
            a[THRESHOLD_VIEW] = _threshold_view(r, runs.config, share)
        for v in plan[name]:
            out[f"{name}/{v}"] = a[v]
            keys.append(f"{name}/{v}")
    out["views"] = tuple(keys)
    out["violated"] = any(out[k]["violated"] for k in keys)
    out["profile_violated"] = grid is not None and any(out[k].get("profile_violated", False) for k in keys)
    out["caught"] = bool(out["violated"] or out["profile_violated"])
    return out


def _sequential(kind, fn, config, *, max_runs, first_runs, tasks, delta, beta, views, profile, init_state, executor,
                workers, chunk, seed) -> SequentialAudit:
    tasks = _resolve_tasks(config, None, tasks)
    grid = _grid(profile, config, delta)
    workers = check_int(workers, "workers", 0)
    views = tuple(views) if views is not None else None
    schedule = look_schedule(first_runs, max_runs)
    if schedule[0] < 4 * len(tasks):
        raise ValueError(f"first_runs must be >= 4 per task ({4 * len(tasks)}), got {first_runs}")

    def run_batch(k, runs):
        if kind == "step":
            return _run_many("step", fn, config, runs, tasks, executor, workers, chunk, seed, init_state, k)
        return _run_many("train", fn, config, runs, tasks, "process" if workers else "serial", workers, 1, seed,
                         None, k)

    def audit(result, beta_look):
        return audit_user_code(result, delta=delta, beta=beta_look, views=views, profile=grid)

    def detectable(result, beta_look):
        plan = _views_plan(result, views)
        r = next(iter(result.tasks.values()))
        every = [v for vs in plan.values() for v in vs]
        one_sided = [v for v in every if ALTERNATIVES[v] == "greater"]
        d = detectable_leak(r.black_box_in.size, r.black_box_out.size, beta_view=beta_look / len(every),
                            alternative="greater" if one_sided else "two-sided", config=config, delta=delta,
                            profile=grid)
        d["alternative"] = "greater" if one_sided else "two-sided"
        return d

    return sequential_audit(run_batch, audit, schedule, beta=beta, detectable=detectable)


def audit_user_step(step, config: DPSGDConfig, *, max_runs: int = 16000, first_runs: int = 500, tasks=None,
                    delta: float = 1e-5, beta: float = 0.05, views=None, profile="auto", init_state=None,
                    executor: str = "auto", workers: int = 2, chunk: int = None, seed: int = 0) -> SequentialAudit:
    """Audit the user's DP-SGD step in batches of runs, stopping at the first certified violation.

    Batch ``k`` is :func:`run_step_many` ``(..., batch=k)`` (new independent runs on the same
    tasks); the looks are :func:`~dpaudit.dpsgd.many.look_schedule` ``(first_runs, max_runs)``
    (``first_runs``, doubling, ``max_runs``); at each look the pooled runs are audited by
    :func:`audit_user_code` at ``beta / len(schedule)``. A violation reported at any look is
    wrong with probability at most ``beta`` whatever look it stopped at
    (:func:`~dpaudit.dpsgd.many.sequential_audit`: the looks are fixed in advance and ``beta``
    is split over them). When the budget is spent without a violation,
    ``SequentialAudit.detectable`` says what the audit catches about half the time at that cost.

    Parameters
    ----------
    step, config, tasks, init_state, executor, workers, chunk, seed :
        As :func:`run_step_many`.
    max_runs, first_runs : int
        The run budget (all tasks) and the first look (``>= 4`` per task).
    delta, beta, views, profile :
        As :func:`audit_user_code`; ``beta`` covers every look, task and view.

    Returns
    -------
    SequentialAudit
        ``caught``, ``runs`` (used), ``looks``, ``audit`` (the last look's), ``detectable``,
        ``summary()``.

    Raises
    ------
    ValueError
        As :func:`run_step_many` and :func:`audit_user_code`.

    References
    ----------
    Nasr et al. (2023) §5; issue 43 (stop as soon as the views certify); module docstring.
    """
    return _sequential("step", step, config, max_runs=max_runs, first_runs=first_runs, tasks=tasks, delta=delta,
                       beta=beta, views=views, profile=profile, init_state=init_state, executor=executor,
                       workers=workers, chunk=None if chunk is None else check_int(chunk, "chunk"), seed=seed)


def audit_user_train(train, config: DPSGDConfig, *, max_runs: int = 4000, first_runs: int = 200, tasks=None,
                     delta: float = 1e-5, beta: float = 0.05, views=None, profile="auto", workers: int = 2,
                     seed: int = 0) -> SequentialAudit:
    """:func:`audit_user_step` for a whole training function (:func:`run_train_many`'s batches;
    views :data:`TRAIN_VIEWS`).

    Parameters
    ----------
    train, config, tasks, workers, seed :
        As :func:`run_train_many`.
    max_runs, first_runs, delta, beta, views, profile :
        As :func:`audit_user_step`.

    Returns
    -------
    SequentialAudit

    Raises
    ------
    ValueError
        As :func:`run_train_many` and :func:`audit_user_code`.
    """
    return _sequential("train", train, config, max_runs=max_runs, first_runs=first_runs, tasks=tasks, delta=delta,
                       beta=beta, views=views, profile=profile, init_state=None, executor="process",
                       workers=workers, chunk=1, seed=seed)

"""Many-run audits of the user's own DP-SGD code: run it many times with and without a canary.

The one-run audit (:func:`dpaudit.dpsgd.audit_run`) sees each canary through its own coordinate;
bugs that *couple* examples — the batch's summed gradient clipped as a whole, an update divided by
the realised batch size — act on all examples of a batch at once, so one run of many canaries
barely sees them (issue 35). Two samples of whole runs do: this module runs the user's training
step (or whole training function) ``runs`` times, the first half on a dataset with one canary
example, the second half without it, and audits the two samples with the statistics of
:mod:`dpaudit.dpsgd.many` (:func:`~dpaudit.dpsgd.many.audit_many`; nothing is re-derived here).

**The contract** (plain PyTorch; the model is the harness's, the DP-SGD code the user's).
Parameters are a flat float tensor of shape ``(D,)``; an example is a row ``x`` of shape ``(D,)``
and its loss is the linear :func:`linear_loss` ``<params, x>``, so its gradient *is* ``x``: the
harness crafts every example's gradient exactly (Nasr et al. 2023's gradient canaries) while the
user's code computes it however it likes (``torch.func.grad(linear_loss)``, autograd, or reading
the rows). Coordinates: ``[0, d)`` real examples, ``d`` the canary's, ``d + 1 ..`` a *null block*
that no example touches (noise only).

* ``step(params, data, generator) -> params``: one DP-SGD step of the user's code on the whole
  dataset ``data`` of shape ``(N, D)`` (the step samples its batch itself, e.g. Poisson at the
  claimed ``q``, clips, sums, adds noise, normalises, updates). ``generator`` is a seeded
  ``torch.Generator`` in a loop or a process pool, and ``None`` under ``torch.func.vmap`` (then the
  step's ``torch.rand``/``torch.randn(..., generator=None)`` draw from torch's global generator,
  which vmap makes independent per run with ``randomness="different"``). A step that vmap cannot
  trace (data-dependent shapes such as ``data[mask]``, ``.item()``, Python control flow on
  tensor values) falls back to a loop or a process pool.
* ``train(data, seed) -> params``: the user's whole training function; only its final
  parameters are seen (black box for the steps), in a loop or a process pool.

**Examples** (all public, fixed before any run): ``N`` real rows (``data``; default 8 Gaussian
rows of norm about ``C/4`` in 8 coordinates), ``opposing`` crafted rows whose gradient is
``-canary_norm / (2 opposing)`` on the canary's coordinate (Nasr et al. 2023's worst-case
neighbours of batch-level clipping: without the canary the batch sum there is negative whenever
one of them is in the batch, with it at least ``+canary_norm / 2``, so a clipped batch sum moves
by up to ``2C``), and, in the first half, the canary row ``canary_norm e_d`` (``4 C``) at a fixed
random position among the rows.

**Statistics** per run (each a function of the released parameters only, so each two-sample
bound is certified whatever the code does; :func:`~dpaudit.dpsgd.many.audit_many`):

* ``white_box`` (step API): per step, ``o_t = -Delta_t[d] * sigma / rms(Delta_t[null])``, the
  update on the canary's coordinate in units of the noise the null block shows (``C``-units for
  a correct step), scored by the claimed mechanism's likelihood ratio
  (:func:`~dpaudit.dpsgd.canary_scores`, ``"lr"``): sees wrong sensitivity, batch clipping;
* ``scale``: ``-sum_t log rms(Delta_t[null])`` (step API; final parameters for ``train``): the
  update's scale; identical in law in both halves whenever the code scales by a public constant,
  so it sees data-dependent normalisation (dividing by the realised batch size);
* ``black_box``: ``-params_T[d]`` (minus the final parameter on the canary's coordinate);
* ``epoch_max`` (step API): :func:`~dpaudit.dpsgd.many.epoch_max_scores` of ``o``.

References: Nasr, Hayes, Steinke, Balle, Tramèr, Jagielski, Carlini, Terzis (2023) §5 (many-run
white-box audits, crafted gradients, the worst-case dataset of batch clipping); Abadi et al.
(2016) (DP-SGD); ``docs/dpsgd.md`` ("Many-run audits of your own code").
"""

from __future__ import annotations

import math
import time

import numpy as np

from .._validate import check_int
from .audit import canary_scores
from .many import ManyRuns, audit_many, epoch_max_scores
from .reference import DPSGDConfig

__all__ = ["HARNESS_VIEWS", "HarnessTask", "audit_user_code", "linear_loss", "make_task", "run_step_many",
           "run_train_many"]

#: The views of :func:`audit_user_code` by default (``beta`` split over them): the white-box
#: canary coordinate (sensitivity, batch clipping) and the update's scale (data-dependent
#: normalisation).
HARNESS_VIEWS = ("white_box", "scale")
EXECUTORS = ("auto", "vmap", "serial", "process")


def linear_loss(params, x):
    """The harness's per-example loss ``<params, x>`` (shapes ``(D,)`` and ``(D,)``; a scalar):
    the gradient of example ``x`` is ``x`` itself, so every gradient is crafted exactly."""
    return (params * x).sum()


class HarnessTask:
    """The public datasets of a many-run audit (see the module docstring).

    Attributes
    ----------
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
    """

    def __init__(self, data_in, data_out, canary_coordinate, null_block, position):
        self.data_in, self.data_out = data_in, data_out
        self.dim = int(data_out.shape[1])
        self.canary_coordinate = int(canary_coordinate)
        self.null = slice(canary_coordinate + 1, canary_coordinate + 1 + null_block)
        self.position = int(position)


def make_task(config: DPSGDConfig, *, data=None, opposing: int = 1, null_block: int = 256,
              seed: int = 0) -> HarnessTask:
    """The rows of a many-run audit: real rows, ``opposing`` crafted rows, the canary, a null block.

    Parameters
    ----------
    config : DPSGDConfig
        The claim; ``max_grad_norm`` ``C`` and ``canary_gradient_norm`` (``4 C`` by default) set
        the crafted gradients.
    data : array, shape (N, d), optional
        Real examples' gradients (rows; the linear loss makes them the gradients). Default: 8
        rows in 8 coordinates, Gaussian of norm about ``C / 4`` (seeded).
    opposing : int
        Crafted rows ``-canary_norm / (2 opposing) e_d`` (``>= 0``): they make batch-level
        clipping visible (module docstring). Part of the public dataset, in both halves.
    null_block : int
        Coordinates no row touches (``>= 8``): the update's noise, for the scale statistic and
        the white-box units.
    seed : int
        Seeds the default rows and the canary's position.

    Returns
    -------
    HarnessTask

    Raises
    ------
    ValueError
        On data that is not a finite 2-D array, or counts out of range.
    """
    opposing = check_int(opposing, "opposing", 0)
    null_block = check_int(null_block, "null_block", 8)
    rng = np.random.default_rng([seed, 35])
    C, a = float(config.max_grad_norm), float(config.canary_gradient_norm)
    if data is None:
        real = rng.normal(0.0, C / 4 / math.sqrt(8), (8, 8))
    else:
        real = np.asarray(data, dtype=float)
        if real.ndim != 2 or not np.all(np.isfinite(real)):
            raise ValueError(f"data must be a finite array of shape (N, d), got shape {real.shape}")
    n, d = real.shape
    D = d + 1 + null_block
    rows = np.zeros((n + opposing, D))
    rows[:n, :d] = real
    rows[n:, d] = -a / (2.0 * opposing) if opposing else 0.0
    canary = np.zeros((1, D))
    canary[0, d] = a
    position = int(rng.integers(0, n + opposing + 1))
    data_in = np.concatenate([rows[:position], canary, rows[position:]])
    return HarnessTask(data_in.astype(np.float32), rows.astype(np.float32), d, null_block, position)


def _run_steps(step, params, data, T, generator):
    """``T`` steps of ``step`` from ``params``; the parameters after each step, ``(T + 1, D)``."""
    out = [params]
    for _ in range(T):
        params = step(params, data, generator)
        if tuple(getattr(params, "shape", ())) != tuple(out[0].shape):
            raise ValueError(f"the user's step must return finite parameters of shape {tuple(out[0].shape)}, got "
                             f"{getattr(params, 'shape', type(params).__name__)}")
        out.append(params)
    return out


def _serial_one(args):
    """One run in a loop or a worker process: ``(kind, fn, data, D, T, seed)`` -> ndarray."""
    import torch

    kind, fn, data, D, T, seed = args
    x = torch.as_tensor(data)
    gen = torch.Generator().manual_seed(int(seed))
    with torch.no_grad():
        if kind == "train":
            return np.asarray(torch.as_tensor(fn(x, int(seed))).detach().cpu(), dtype=float).reshape(1, D)
        traj = _run_steps(fn, torch.zeros(D), x, T, gen)
        return torch.stack([torch.as_tensor(p) for p in traj]).detach().cpu().numpy().astype(float)


def _start_method(fn) -> str:
    """The process pool's start method: ``fork`` where the platform has it, except when JAX is
    imported and ``fn`` pickles: JAX's runtime threads do not survive ``fork`` (JAX warns of a
    deadlock), so then ``spawn``. A ``fn`` that does not pickle (a lambda, a closure) keeps
    ``fork``, the only way to hand it to a worker."""
    import multiprocessing
    import pickle
    import sys

    if "fork" not in multiprocessing.get_all_start_methods():
        return "spawn"
    if "jax" in sys.modules:
        try:
            pickle.dumps(fn)
        except Exception:  # noqa: BLE001 - any pickling failure: fork is the only way
            return "fork"
        return "spawn"
    return "fork"


def _many_serial(kind, fn, data, D, T, seeds, workers):
    """Runs one after another (``workers`` 0) or in a process pool of ``workers`` processes
    (``concurrent.futures``; start method ``fork`` where the platform has it, so the workers
    inherit the imported modules and the user's function instead of importing torch again —
    seconds per worker — else ``spawn``, where ``fn`` must be picklable: defined at a module's top
    level; ``spawn`` also when JAX is imported, see :func:`_start_method`). Output ``(runs, T + 1, D)``
    (``(runs, 1, D)`` for ``train``)."""
    jobs = [(kind, fn, data, D, T, int(s)) for s in seeds]
    if not workers:
        return np.stack([_serial_one(j) for j in jobs])
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(_start_method(fn))) as pool:
        return np.stack(list(pool.map(_serial_one, jobs, chunksize=max(1, len(jobs) // (4 * workers)))))


def _many_vmap(step, data, D, T, runs, seed, chunk):
    """``runs`` trajectories of ``step`` vectorised by ``torch.func.vmap`` (``randomness=
    "different"``, the global generator seeded from ``seed`` inside ``torch.random.fork_rng`` so the
    caller's state is untouched). Output ``(runs, T + 1, D)``."""
    import torch
    from torch.func import vmap

    x = torch.as_tensor(data)
    one = vmap(lambda p: step(p, x, None), randomness="different")
    out = []
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(int(seed))
        for start in range(0, runs, chunk):
            p = torch.zeros(min(chunk, runs - start), D)
            traj = [p]
            for _ in range(T):
                p = one(p)
                traj.append(p)
            out.append(torch.stack(traj, dim=1).numpy().astype(float))
    return np.concatenate(out)


def _statistics(traj: np.ndarray, task: HarnessTask, config: DPSGDConfig, kind: str) -> dict:
    """The per-run statistics of the module docstring from trajectories ``(runs, T + 1, D)``."""
    c, null = task.canary_coordinate, task.null
    final = traj[:, -1]
    out = {"black_box": -final[:, c]}
    if kind == "train":
        rms = np.sqrt(np.mean(final[:, null] ** 2, axis=1))
        out["scale"] = -np.log(np.maximum(rms, 1e-300))
        return out
    delta = np.diff(traj, axis=1)  # (runs, T, D): each step's update
    rms = np.sqrt(np.mean(delta[:, :, null] ** 2, axis=2))  # (runs, T)
    rms = np.maximum(rms, 1e-300)
    out["scale"] = -np.log(rms).sum(axis=1)
    o = (-delta[:, :, c] * float(config.noise_multiplier) / rms).T  # (T, runs), C-units for a correct step
    out["white_box"] = canary_scores(o, config.noise_multiplier, config.sampling_rate, "lr")
    out["epoch_max"] = epoch_max_scores(o, config.sampling_rate)
    return out


def _run_many(kind, fn, config, runs, task, executor, workers, chunk, seed, device_note) -> ManyRuns:
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}, got {executor!r}")
    runs = check_int(runs, "runs", 4)
    runs_in = runs // 2
    T = int(config.steps)
    seeds = np.random.SeedSequence([seed, 35]).generate_state(runs, dtype=np.uint64) % (2**62)
    t0 = time.perf_counter()
    used = executor
    halves = []
    for half, (data, n_runs, sub) in enumerate(((task.data_in, runs_in, seeds[:runs_in]),
                                               (task.data_out, runs - runs_in, seeds[runs_in:]))):
        traj = None
        if kind == "step" and executor in ("auto", "vmap"):
            try:
                traj = _many_vmap(fn, data, task.dim, T, n_runs, int(sub[0]), chunk)
                used = "vmap"
            except Exception as exc:  # noqa: BLE001 - any trace failure: the step is not vmappable
                if executor == "vmap":
                    raise ValueError(f"the step cannot be vectorised with torch.func.vmap: {type(exc).__name__}: "
                                     f"{exc}") from exc
                traj = None
        if traj is None:
            w = workers if executor in ("auto", "process") else 0
            traj = _many_serial(kind, fn, data, task.dim, T, sub, w)
            used = "process" if w else "serial"
        if traj.shape[-1] != task.dim or not np.all(np.isfinite(traj)):
            raise ValueError(f"the user's {kind} must return finite parameters of shape ({task.dim},)")
        halves.append(_statistics(traj, task, config, kind))
    s_in, s_out = halves
    empty = np.zeros(0)
    return ManyRuns(black_box_in=s_in["black_box"], black_box_out=s_out["black_box"],
                    white_box_in=s_in.get("white_box", empty), white_box_out=s_out.get("white_box", empty),
                    config=config, variant=f"user {kind}", seconds=time.perf_counter() - t0,
                    scale_in=s_in["scale"], scale_out=s_out["scale"],
                    epoch_max_in=s_in.get("epoch_max", empty), epoch_max_out=s_out.get("epoch_max", empty),
                    details={"runs": runs, "runs_in": runs_in, "canary": "gradient", "executor": used,
                             "dimension": task.dim, "rows_out": int(task.data_out.shape[0]),
                             "canary_position": task.position, "seed": seed, "entry": kind, **device_note})


def run_step_many(step, config: DPSGDConfig, *, runs: int = 1000, task: HarnessTask = None, executor: str = "auto",
                  workers: int = 2, chunk: int = 4096, seed: int = 0) -> ManyRuns:
    """Run the user's DP-SGD step ``config.steps`` times per run, ``runs`` runs, half with the canary.

    Parameters
    ----------
    step : callable
        ``step(params (D,), data (N, D), generator or None) -> params (D,)`` (module docstring):
        the user's DP-SGD step with the claimed ``q``, ``sigma``, ``C`` and the harness's
        :func:`linear_loss`. Parameters start at zero.
    config : DPSGDConfig
        The claim (``noise_multiplier``, ``sampling_rate``, ``steps``, ``max_grad_norm``).
    runs : int
        ``>= 4``; the first ``runs // 2`` on ``task.data_in`` (with the canary).
    task : HarnessTask, optional
        The rows (:func:`make_task`; default ``make_task(config, seed=seed)``).
    executor : {"auto", "vmap", "serial", "process"}
        ``"auto"``: ``torch.func.vmap`` if the step traces, else a process pool of ``workers``
        (a loop when ``workers`` is 0). ``"vmap"`` raises if the step does not trace.
    workers : int
        Process-pool size (``fork`` where available; else ``spawn``, and the step must be a
        top-level, picklable function).
    chunk : int
        Runs vectorised together (memory ``chunk x (steps + 1) x D`` floats).
    seed : int
        Seeds every run (vmap: torch's global generator inside ``fork_rng``; loop and pool: one
        ``torch.Generator`` per run, the same for both executors).

    Returns
    -------
    ManyRuns
        For :func:`~dpaudit.dpsgd.many.audit_many` (views ``white_box``, ``scale``,
        ``black_box``, ``epoch_max``); ``details["executor"]`` says which executor ran.

    Raises
    ------
    ValueError
        On bad counts, an unknown executor, a step that does not return finite ``(D,)``
        parameters, or (``executor="vmap"``) a step vmap cannot trace.

    References
    ----------
    Nasr et al. (2023) §5; module docstring.
    """
    task = make_task(config, seed=seed) if task is None else task
    return _run_many("step", step, config, runs, task, executor, check_int(workers, "workers", 0),
                     check_int(chunk, "chunk"), seed, {})


def run_train_many(train, config: DPSGDConfig, *, runs: int = 200, task: HarnessTask = None, workers: int = 2,
                   seed: int = 0) -> ManyRuns:
    """Run the user's whole training function ``runs`` times, half on the rows with the canary.

    Parameters
    ----------
    train : callable
        ``train(data (N, D) float32 tensor, seed int) -> params (D,)``: the user's DP-SGD
        training from parameters zero with the harness's :func:`linear_loss` (module
        docstring); only the final parameters are seen.
    config : DPSGDConfig
        The claim.
    runs : int
        ``>= 4``.
    task : HarnessTask, optional
        As in :func:`run_step_many`.
    workers : int
        Process-pool size (0: a loop); ``train`` must be picklable for a pool.
    seed : int
        Run ``i`` gets a seed drawn from ``seed``.

    Returns
    -------
    ManyRuns
        Views ``black_box`` and ``scale`` only.

    Raises
    ------
    ValueError
        As :func:`run_step_many`.
    """
    task = make_task(config, seed=seed) if task is None else task
    return _run_many("train", train, config, runs, task, "process" if workers else "serial",
                     check_int(workers, "workers", 0), 1, seed, {})


def audit_user_code(result: ManyRuns, *, delta: float = 1e-5, beta: float = 0.05, views=None,
                    profile="auto") -> dict:
    """Certified two-sample audit of a harness result, ``beta`` split over the views.

    :func:`~dpaudit.dpsgd.many.audit_many` at ``beta / len(views)`` per view, with the privacy
    profile check (:func:`~dpaudit.dpsgd.many.profile_check`) on ``profile`` (a grid of epsilons
    fixed before looking): at ``eps' = 0`` it compares the certified total-variation distance with
    the accountant's ``delta(0)``, which catches a doubled sensitivity with far fewer runs than
    the epsilon bound at ``delta = 1e-5``.

    Parameters
    ----------
    result : ManyRuns
        From :func:`run_step_many` or :func:`run_train_many`.
    delta, beta : float
        Delta of the epsilon bounds; overall failure probability of the verdict.
    views : sequence of str, optional
        Default :data:`HARNESS_VIEWS` for a step, ``("black_box", "scale")`` for ``train``.
    profile : "auto", sequence of float or None
        The grid (None: no profile check). ``"auto"``: ``(0, eps/4, eps/2)`` with ``eps`` the
        accountant's epsilon at ``delta`` (a function of the claim only, so fixed before looking;
        near ``eps`` the accountant's delta is near ``delta``, which the epsilon bound already
        tests; each grid point costs one accountant call, ~0.2-0.5 s for ``q < 1``).

    Returns
    -------
    dict
        :func:`~dpaudit.dpsgd.many.audit_many`'s dict (per view ``epsilon_lower_bound``,
        ``mu_lower_bound``, ``violated``, ``profile``), plus ``"caught"``: ``violated`` or
        ``profile_violated``, ``beta_per_view`` and ``views``.

    Raises
    ------
    ValueError
        As :func:`~dpaudit.dpsgd.many.audit_many`.
    """
    if views is None:
        views = HARNESS_VIEWS if result.white_box_in.size else ("black_box", "scale")
    views = tuple(views)
    if isinstance(profile, str):
        if profile != "auto":
            raise ValueError(f"profile must be 'auto', a grid of epsilons or None, got {profile!r}")
        from .audit import _claimed_accountant

        cfg = result.config
        eps = float(_claimed_accountant(float(cfg.noise_multiplier), float(cfg.sampling_rate), int(cfg.steps),
                                        float(delta)).epsilon)
        profile = (0.0, eps / 4, eps / 2)
    out = audit_many(result, delta=delta, beta=beta / max(1, len(views)), views=views, profile=profile)
    out["caught"] = bool(out["violated"] or out.get("profile_violated", False))
    out["beta_per_view"] = beta / max(1, len(views))
    out["views"] = views
    return out

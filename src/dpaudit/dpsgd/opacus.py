"""Gradient canaries inside a user's own Opacus training loop (``opacus.optimizers.DPOptimizer``).

:class:`OpacusCanaries` adds ``m`` Dirac gradient canaries to an Opacus DP-SGD run with a few
lines::

    model, optimizer, loader = privacy_engine.make_private(...)      # as usual
    canaries = OpacusCanaries(optimizer, canaries=1500, sampling_rate=q, seed=0)
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        canaries.step()                                                # instead of optimizer.step()
    print(canaries.audit(delta=1e-5).summary())

or, where the job runs on another machine (a GPU box), ``canaries.save("run.npz")`` at the end of
training and ``dpaudit dpsgd --run run.npz`` wherever the file is copied to
(:meth:`OpacusCanaries.save`, :meth:`dpaudit.dpsgd.TrainingRun.load`).

By default (``kinds=None``: the ``"default"`` kinds) the hook runs on
:class:`dpaudit.dpsgd.Canaries`: several canary kinds at once (``dirac``, ``split``, ``spread``,
``large``, ``paired``, and ``data`` with ``dataset_size``), ``beta`` split over the kinds and one
check per assumption of the accountant, all fixed before the run, rows at random positions among
the batch's (``docs/dpsgd.md`` §7, §10); :meth:`OpacusCanaries.monitor` checks while training
runs and stops a broken run (``DPSGDViolation`` from :meth:`OpacusCanaries.step`). Opacus's
``DPOptimizer`` lets a NaN gradient row poison every parameter (its clip factor is NaN): the
``"nonfinite"`` kind (not a default) finds that, and ruins the model it runs on. A clipping norm
that changes over the run (``make_private(clipping="adaptive")``: ``AdaClipDPOptimizer``, the
quantile tracking of Andrew et al. 2021) is read from the optimizer before every step
(``optimizer.max_grad_norm``) and every observation is taken in units of that step's norm
(:meth:`Canaries.begin_step <dpaudit.dpsgd.canaries.Canaries.begin_step>`'s ``max_grad_norm``).

``canary_kind=`` alone selects the single-kind hook of earlier versions (the measurements of
``docs/dpsgd.md`` §1-§4). How it works: the canaries live in an extra parameter block of ``m``
coordinates that the optimizer holds (learning rate 0, so it never moves) and the model never
reads. Before each step the hook appends one per-example gradient row for every canary sampled in
this step (included with probability 1/2 once, then Poisson-sampled at rate ``q`` like the real
examples): ``canary_norm`` on its own coordinate, with a random sign per step for ``"signed"``
(``canary_kind``), zeros elsewhere; real examples get zeros on the block. Opacus then does what it
always does, unchanged: per-example clipping over all parameters, the sum, Gaussian noise of
standard deviation ``noise_multiplier * max_grad_norm`` on every parameter, division by the
expected batch size. After the step the block's gradient is the white-box observation (scaled
back to units of ``max_grad_norm``). Every real-data line of the user's loop is Opacus's own
code, so a bug in its clipping, noise or scaling shows in the canaries.

Opacus is an optional dependency (``pip install 'dpaudit[opacus]'``), imported lazily.
"""

from __future__ import annotations

import time
from typing import Optional

import numpy as np

from .._validate import check_int, check_positive, check_rate

__all__ = ["OPACUS_CANARY_KINDS", "OpacusCanaries"]

OPACUS_CANARY_KINDS = ("dirac", "alternating", "signed")


class OpacusCanaries:
    """Gradient canaries riding on an Opacus ``DPOptimizer`` (see the module docstring): the
    multi-kind canaries by default, the single-kind hook with ``canary_kind=``.

    Parameters
    ----------
    optimizer : opacus.optimizers.DPOptimizer
        The optimizer ``PrivacyEngine.make_private`` returned (or any ``DPOptimizer``).
    canaries : int
        Number ``m >= 2`` of canaries, each included independently with probability 1/2.
    sampling_rate : float
        Poisson rate ``q`` in (0, 1] at which included canaries join a step (the real examples'
        rate: ``batch_size / len(dataset)`` for Opacus's ``DPDataLoader``).
    canary_norm : float, optional
        Norm of a canary gradient before clipping (default ``4 * max_grad_norm``).
    seed : int
        Seeds the inclusion mask and the canaries' sampling (and, on a stream of its own, the
        signs of ``"signed"`` canaries).
    canary_kind : {"signed", "alternating", "dirac"}, optional
        Given (and ``kinds`` not): the single-kind hook, rows appended at the end of the batch,
        one kind. ``"signed"``: ``+-canary_norm`` on the canary's coordinate, an independent
        random sign per canary and step drawn from its own stream (independent of the mask and
        of the run); ``"alternating"``: ``(-1)^t canary_norm`` at step ``t``; ``"dirac"``:
        ``+canary_norm`` at every step (Nasr et al.'s canary). For a correct optimizer the
        sign-corrected observations have the Dirac canaries' law, so the sign costs nothing;
        against noise shared across steps (a noise generator re-seeded in the loop, noise reused
        every epoch) the ``"whitened"`` score sees signed canaries exactly, where Dirac canaries,
        constant like the shared noise, cancel with it (``docs/dpsgd.md`` §3).
    kinds : "default" or sequence of str, optional
        Use the multi-kind canaries of :class:`dpaudit.dpsgd.Canaries` instead (``"default"``:
        ``dirac``, ``spread``, ``large``, and ``data`` with ``dataset_size``): rows at random
        positions among the batch's, canaries spread over every parameter tensor (per-layer
        clipping shows), canaries of norm ``1000 C`` (a skipped clipping shows), and data
        canaries the user's loader draws (``step(batch_indices=...)``; the sampler shows).
        :meth:`audit` then returns a :class:`~dpaudit.dpsgd.canaries.CanaryAudit`, :meth:`run`
        and :meth:`save` the ``"dirac"`` canaries' run. ``None`` (default): ``"default"`` unless
        ``canary_kind`` is given.
    dataset_size, data_canaries : int, optional
        With ``kinds``: the real examples ``N`` and the number of data canaries, dataset indices
        ``N ..`` (:class:`~dpaudit.dpsgd.Canaries`).
    **canary_kw
        With the multi-kind canaries: ``blocks``, ``null_coordinates``, ``partners``,
        ``large_norm`` of :class:`~dpaudit.dpsgd.Canaries`. Its dedicated tensors become
        parameters the optimizer holds at learning rate 0 (:attr:`blocks`); Opacus clips, noises
        and scales them with the model's.

    Attributes
    ----------
    mask : ndarray of bool, shape (m,)
        Which canaries were included.
    observations : list of ndarray, shape (m,) each
        Single-kind hook: one row per completed step (empty with the multi-kind canaries, whose
        observations are ``engine.runs()``).
    patterns : list of ndarray, shape (m,) each
        Single-kind hook: the canaries' signs at each completed step (all ``+1`` for ``"dirac"``).
    engine : Canaries or None
        The multi-kind canaries (``None`` for the single-kind hook).
    blocks : list of torch.nn.Parameter
        Multi-kind canaries: the dedicated zero tensors (``engine.block_shapes``), never moved.

    Raises
    ------
    TypeError
        If ``optimizer`` is not an Opacus ``DPOptimizer``.
    ValueError
        On invalid counts or rates, an unknown canary kind (or ``kinds``), or both ``kinds``
        and ``canary_kind``.

    References
    ----------
    Nasr et al. (2023), §4 (Dirac gradient canaries observed at every step); Steinke, Nasr,
    Jagielski (2023) (inclusion with probability 1/2); Opacus ``DPOptimizer``.
    """

    def __init__(self, optimizer, canaries: int = 1000, *, sampling_rate: float = 1.0,
                 canary_norm: Optional[float] = None, seed: int = 0, canary_kind: Optional[str] = None,
                 kinds=None, dataset_size: Optional[int] = None, data_canaries: Optional[int] = None, **canary_kw):
        import torch

        try:
            from opacus.optimizers import DPOptimizer
        except ImportError as exc:  # pragma: no cover - opacus is in the dev extras
            raise ImportError("OpacusCanaries needs Opacus: pip install 'dpaudit[opacus]'") from exc
        if not isinstance(optimizer, DPOptimizer):
            raise TypeError(f"optimizer must be an opacus DPOptimizer, got {type(optimizer).__name__}")
        if kinds is not None and canary_kind is not None:
            raise ValueError(f"give kinds (multi-kind canaries) or canary_kind (the single-kind hook), not both; "
                             f"got kinds={kinds!r}, canary_kind={canary_kind!r}")
        if canary_kind is not None and canary_kind not in OPACUS_CANARY_KINDS:
            raise ValueError(f"canary_kind must be one of {OPACUS_CANARY_KINDS}, got {canary_kind!r}")
        self.canary_kind = canary_kind
        self.optimizer = optimizer
        self.engine = None
        if canary_kind is None:
            self._init_engine(canaries, sampling_rate, canary_norm, seed, "default" if kinds is None else kinds,
                              dataset_size, data_canaries, canary_kw)
            return
        if canary_kw:
            raise ValueError(f"{sorted(canary_kw)} need the multi-kind canaries (OpacusCanaries without canary_kind)")
        self.m = check_int(canaries, "canaries", 2)
        self.sampling_rate = check_rate(sampling_rate, "sampling_rate")
        self.max_grad_norm = float(optimizer.max_grad_norm)
        self.canary_norm = 4.0 * self.max_grad_norm if canary_norm is None else check_positive(canary_norm, "canary_norm")
        self._rng = np.random.default_rng(seed)
        self.mask = self._rng.random(self.m) < 0.5
        self._included = np.flatnonzero(self.mask)
        self._sign_rng = np.random.default_rng([seed, 7])
        self._sign = np.ones(self.m)
        device = next(iter(p.device for p in optimizer.params), torch.device("cpu"))
        self.block = torch.nn.Parameter(torch.zeros(self.m, device=device))
        optimizer.original_optimizer.add_param_group({"params": [self.block], "lr": 0.0, "weight_decay": 0.0,
                                                      "momentum": 0.0})
        self.observations: list = []
        self.participation: list = []
        self.patterns: list = []
        self.seconds = 0.0
        self._start = time.perf_counter()
        # Per-sample gradient rows kept across steps (_with_zero_rows, _block_rows): the buffer and
        # how many of its leading rows may hold something other than zeros.
        self._buffers: dict = {}
        self._block_buffer = None
        self._block_marks = None

    def _append_canaries(self) -> None:
        opt = self.optimizer
        self._step_norm = float(opt.max_grad_norm)  # this step's clipping norm (AdaClip changes it)
        chosen = self._included[self._rng.random(self._included.size) < self.sampling_rate] \
            if self.sampling_rate < 1 else self._included
        part = np.zeros(self.m, dtype=bool)
        part[chosen] = True
        self.participation.append(part)
        t = len(self.observations)
        if self.canary_kind == "alternating":
            self._sign = np.full(self.m, 1.0 if t % 2 == 0 else -1.0)
        elif self.canary_kind == "signed":
            self._sign = np.where(self._sign_rng.random(self.m) < 0.5, -1.0, 1.0)
        k = chosen.size
        real = [p for p in opt.params if p is not self.block]
        if not real:
            raise RuntimeError("the optimizer holds no model parameters")
        first = opt._get_flat_grad_sample(real[0])
        batch = first.shape[0]
        for p in real:
            p.grad_sample = self._with_zero_rows(p, opt._get_flat_grad_sample(p), k)
        self.block.grad_sample = self._block_rows(first, batch, chosen)

    def _with_zero_rows(self, p, gs, k: int):
        """``torch.cat([gs, zeros(k, ...)])``: a real parameter's per-sample gradients followed by
        a zero row for each of the ``k`` canaries of the step.

        The rows live in a buffer kept across steps, so that the zero rows are neither allocated
        nor written each step (at 10,000 canaries and ``q = 0.05`` that was most of the hook's
        time): only the real rows are copied in, and rows that held real gradients at an earlier
        step are zeroed again. Opacus reads the rows and never writes them (its accumulation
        over several backward passes makes new tensors), so the buffer stays as written.
        """
        batch, n = gs.shape[0], gs.shape[0] + k
        buf, dirty = self._buffers.get(id(p), (None, 0))
        if buf is None or buf.shape[0] < n or buf.shape[1:] != gs.shape[1:] or buf.dtype != gs.dtype \
                or buf.device != gs.device:
            buf, dirty = gs.new_zeros((n + n // 4, *gs.shape[1:])), 0
        if dirty > batch:
            buf[batch:dirty].zero_()
        buf[:batch].copy_(gs)
        self._buffers[id(p)] = (buf, batch)
        return buf[:n]

    def _block_rows(self, like, batch: int, chosen):
        """The canary block's per-sample gradients, shape ``(batch + k, m)``: zero rows for the
        real examples, then ``canary_norm`` times the step's sign on canary ``chosen[j]``'s own
        coordinate in row ``batch + j``. Kept across steps like :meth:`_with_zero_rows`: the
        entries set at the step before are reset to zero, the new ones set."""
        import torch

        k = chosen.size
        n = batch + k
        buf = self._block_buffer
        if buf is None or buf.shape[0] < n or buf.dtype != like.dtype or buf.device != like.device:
            buf = self._block_buffer = like.new_zeros((n + n // 4, self.m))
        elif self._block_marks is not None:
            buf[self._block_marks] = 0.0
        self._block_marks = None
        if k:
            marks = (torch.arange(batch, n, device=buf.device), torch.as_tensor(chosen, device=buf.device))
            buf[marks] = torch.as_tensor(self.canary_norm * self._sign[chosen], dtype=buf.dtype, device=buf.device)
            self._block_marks = marks
        return buf[:n]

    def _init_engine(self, canaries, sampling_rate, canary_norm, seed, kinds, dataset_size, data_canaries, canary_kw):
        """The multi-kind path (``kinds`` given): a :class:`~dpaudit.dpsgd.canaries.Canaries` over
        the optimizer's parameters, its dedicated tensors held by the optimizer at learning rate 0."""
        import torch

        from .canaries import DEFAULT_KINDS, Canaries

        opt = self.optimizer
        if isinstance(kinds, str):
            if kinds != "default":
                raise ValueError(f"kinds must be 'default' or a sequence of canary kinds, got {kinds!r}")
            kinds = DEFAULT_KINDS + (("data",) if dataset_size is not None else ())
        self._real = [p for p in opt.params]
        if not self._real:
            raise RuntimeError("the optimizer holds no model parameters")
        self.max_grad_norm = float(opt.max_grad_norm)
        self.sampling_rate = check_rate(sampling_rate, "sampling_rate")
        self.engine = Canaries([tuple(p.shape) for p in self._real], noise_multiplier=float(opt.noise_multiplier),
                               max_grad_norm=self.max_grad_norm, sampling_rate=self.sampling_rate, canaries=canaries,
                               kinds=kinds, dataset_size=dataset_size, data_canaries=data_canaries,
                               canary_norm=canary_norm, seed=seed, **canary_kw)  # batch_divisor: set at each step
        self.blocks = [torch.nn.Parameter(torch.zeros(s, device=self._real[0].device))
                       for s in self.engine.block_shapes]
        if self.blocks:
            opt.original_optimizer.add_param_group({"params": self.blocks, "lr": 0.0, "weight_decay": 0.0,
                                                    "momentum": 0.0})
        self.block = self.blocks[0] if self.blocks else None
        self.m = sum(self.engine.counts.values())
        self.mask = np.concatenate([self.engine.masks[k] for k in self.engine.kinds])
        self.observations, self.participation, self.patterns = [], [], []
        self.seconds = 0.0
        self._start = time.perf_counter()

    def _engine_step(self, closure, batch_indices):
        opt, eng = self.optimizer, self.engine
        gs = [opt._get_flat_grad_sample(p) for p in self._real]
        batch = gs[0].shape[0]
        # the norm this step clips at (Opacus's AdaClipDPOptimizer changes it after each step's noise)
        C_t = float(opt.max_grad_norm)
        if batch_indices is None and "data" not in eng.kinds:
            step = eng.begin_step(batch_size=batch, max_grad_norm=C_t)
        else:
            import torch

            bi = batch_indices.detach().cpu().numpy() if isinstance(batch_indices, torch.Tensor) else batch_indices
            step = eng.begin_step(batch_indices=np.asarray(bi), max_grad_norm=C_t)
            if step.real_mask.size != batch:
                eng.cancel_step()
                raise ValueError(f"batch_indices has {step.real_mask.size} entries, the batch {batch} rows")
            keep = torch.as_tensor(step.real_mask, device=gs[0].device)
            gs = [g[keep] for g in gs]
        rows = step.insert(gs)
        for p, r in zip(self._real + self.blocks, rows):
            p.grad_sample = r
        if opt.loss_reduction == "mean":  # Opacus divides by the expected batch size (times accumulation)
            eng.batch_divisor = float(opt.expected_batch_size * opt.accumulated_iterations)
        out = opt.step(closure)
        skipped = getattr(opt, "_is_last_step_skipped", False) or (self.blocks and self.blocks[0].grad is None)
        if skipped:  # a skipped step (gradient accumulation, Poisson's skip): nothing was released
            eng.cancel_step()
            return out
        update = [p.grad for p in self._real] + [b.grad for b in self.blocks]
        eng.observe(update)  # raises DPSGDViolation here when a monitor is attached and a check fails
        self.seconds = time.perf_counter() - self._start
        return out

    def monitor(self, steps: Optional[int] = None, **kwargs):
        """The online audit (multi-kind canaries only): :meth:`Canaries.monitor
        <dpaudit.dpsgd.canaries.Canaries.monitor>` on the engine; :meth:`step` then raises
        :class:`~dpaudit.dpsgd.checks.DPSGDViolation` (by default) as soon as a check fails.

        Returns
        -------
        OnlineAudit

        Raises
        ------
        ValueError
            With the single-kind hook (``canary_kind=``).
        """
        if self.engine is None:
            raise ValueError("the online audit needs the multi-kind canaries (OpacusCanaries without canary_kind)")
        return self.engine.monitor(steps, **kwargs)

    def step(self, closure=None, batch_indices=None):
        """``optimizer.step()`` with the canaries: add their gradient rows, step, observe.

        Parameters
        ----------
        closure : callable, optional
            Passed to ``optimizer.step``.
        batch_indices : array or tensor of int, optional
            Multi-kind path with ``"data"`` canaries only: the dataset indices of this step's
            batch, in the order of its rows (the user's dataset returns them with each example).

        Returns
        -------
        Whatever ``optimizer.step`` returns.
        """
        if self.engine is not None:
            return self._engine_step(closure, batch_indices)
        if batch_indices is not None:
            raise ValueError("batch_indices needs the multi-kind canaries (OpacusCanaries without canary_kind)")
        self._append_canaries()
        out = self.optimizer.step(closure)
        g = self.block.grad
        if g is None:  # a skipped step (gradient accumulation): nothing was released
            self.participation.pop()
            return out
        self.patterns.append(self._sign.copy())
        scale = self.optimizer.expected_batch_size * self.optimizer.accumulated_iterations \
            if self.optimizer.loss_reduction == "mean" else 1.0
        self.observations.append(g.detach().cpu().numpy().astype(float) * scale / self._step_norm)
        self.seconds = time.perf_counter() - self._start
        return out

    def run(self, noise_multiplier: Optional[float] = None):
        """The observations so far as a :class:`~dpaudit.dpsgd.reference.TrainingRun` (config from
        the optimizer: its noise multiplier and clipping norm, this hook's rate, the steps taken).
        Multi-kind canaries (the default): the ``"dirac"`` canaries' run (the first kind's without
        them); all of them: ``self.engine.runs()``; ``noise_multiplier`` cannot be overridden.

        Raises
        ------
        ValueError
            Before the first observed step, or on ``noise_multiplier`` with the multi-kind
            canaries."""
        from .reference import DPSGDConfig, TrainingRun

        if self.engine is not None:
            if noise_multiplier is not None:
                raise ValueError("noise_multiplier cannot be overridden with the multi-kind canaries; the claim is "
                                 "the optimizer's (canary_kind=... selects the single-kind hook)")
            runs = self.engine.runs()
            return runs["dirac"] if "dirac" in runs else next(iter(runs.values()))
        if not self.observations:
            raise ValueError("no step observed yet: call canaries.step() in the training loop")
        sigma = float(self.optimizer.noise_multiplier if noise_multiplier is None else noise_multiplier)
        cfg = DPSGDConfig(noise_multiplier=sigma, max_grad_norm=self.max_grad_norm, sampling_rate=self.sampling_rate,
                          steps=len(self.observations), canary_norm=self.canary_norm)
        part = np.array(self.participation)
        return TrainingRun(observations=np.array(self.observations), mask=self.mask, sampled=part.sum(axis=0),
                           participation=part, config=cfg, variant="opacus", seconds=self.seconds,
                           train_accuracy=float("nan"), details={"canary_block": self.m, "canary_kind": self.canary_kind},
                           pattern=np.array(self.patterns))

    def save(self, path, noise_multiplier: Optional[float] = None):
        """Write the observations so far to ``path`` (``.npz``): ``self.run(noise_multiplier).save(path)``.

        Call it at the end of training where the job runs (a GPU box), then audit the file
        anywhere: ``dpaudit dpsgd --run run.npz`` or
        ``audit_run(TrainingRun.load("run.npz"))`` (:meth:`TrainingRun.save
        <dpaudit.dpsgd.reference.TrainingRun.save>` describes the archive).

        Parameters
        ----------
        path : str or os.PathLike
            The file to write, used as given.
        noise_multiplier : float, optional
            The claimed noise multiplier to record (default: the optimizer's).

        Returns
        -------
        pathlib.Path
            ``path``.

        Raises
        ------
        ValueError
            When no step has been observed yet.
        OSError
            When the file cannot be written.
        """
        return self.run(noise_multiplier).save(path)

    def audit(self, *, delta: float = 1e-5, beta: float = 0.05, noise_multiplier: Optional[float] = None, **kwargs):
        """The one-run audit against the accountant's epsilon for the optimizer's
        ``(noise_multiplier, q, steps)``: multi-kind canaries (the default),
        :meth:`Canaries.audit <dpaudit.dpsgd.canaries.Canaries.audit>` (every kind and the checks,
        ``beta`` split over them); the single-kind hook, :func:`dpaudit.dpsgd.audit_run`.

        Returns
        -------
        CanaryAudit or DPSGDAudit
            ``CanaryAudit`` for the multi-kind canaries, ``DPSGDAudit`` for the single-kind hook.

        Raises
        ------
        ValueError
            Before the first observed step, or on ``noise_multiplier`` with the multi-kind
            canaries.
        """
        from .audit import audit_run

        if self.engine is not None:
            if noise_multiplier is not None:
                raise ValueError("noise_multiplier cannot be overridden with the multi-kind canaries; the claim is the "
                                 "optimizer's (canary_kind=... selects the single-kind hook)")
            return self.engine.audit(delta=delta, beta=beta, **kwargs)
        return audit_run(self.run(noise_multiplier), delta=delta, beta=beta, **kwargs)

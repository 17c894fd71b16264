"""Many-run audits: many small DP-SGD models trained at once, half of them with the canary.

:func:`train_many` trains ``runs`` copies of a small model (logistic regression or an MLP) with
DP-SGD, all at once: the parameters of every run are stacked, per-example gradients come from
``torch.func`` (``vmap`` over runs of ``vmap`` over examples of ``grad``), and each run draws its
own Poisson sampling and noise. The first half of the runs train *with* the canary, the second
half *without*; the runs are independent, so the two halves are i.i.d. samples of the two output
distributions and :func:`dpaudit.scores.clopper_pearson_audit` (or any two-sample audit) certifies
from them. Two canaries at once, in every run:

* an **input canary** (black box, final model only): an out-of-distribution record (ink on the
  pixels that are blank in every training image) with a fixed label; the score is minus the final
  model's loss on it;
* a **gradient canary** (white box, every step): a Dirac gradient on a coordinate no example
  touches, observed at every step as in :mod:`dpaudit.dpsgd.reference`; the score is the
  likelihood-ratio statistic of :func:`dpaudit.dpsgd.canary_scores`.

Both canaries are sampled at the real examples' Poisson rate when included (``canary=`` keeps
only one of them, so that the two halves differ in one example). ``variant="shuffled-batches"``
replaces Poisson sampling by fixed-size batches from a shuffle each epoch (last partial batch
dropped), and the ``epoch_max`` view (each epoch's largest canary observation) sees it. ``benchmarks/
dpsgd_many.py`` sets this against a Python loop over Opacus runs on the same task.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field

import numpy as np

from .._validate import check_int
from .reference import VARIANTS, DPSGDConfig, _task_tensors, load_digits_task

__all__ = ["CANARY_SETS", "COUPLING_VARIANTS", "ManyRuns", "RNG_BLOCK", "SequentialAudit", "VIEWS", "VIEW_ALTERNATIVES",
           "audit_many", "audit_train_many", "choose_chunk", "detectable_leak", "look_schedule",
           "rank_p_value", "rank_threshold_profile", "sequential_audit",
           "epoch_max_scores", "profile_check", "train_many"]


@dataclass(frozen=True)
class ManyRuns:
    """Scores of ``runs`` independent DP-SGD runs, the first ``runs_in`` with the canaries.

    Attributes
    ----------
    black_box_in, black_box_out : ndarray
        Minus the final model's loss on the input canary, runs with / without it.
    white_box_in, white_box_out : ndarray
        The gradient canary's likelihood-ratio score over the steps, runs with / without it.
    config : DPSGDConfig
    variant : str
    seconds : float
        Wall time of the training (all runs).
    details : dict
    scale_in, scale_out : ndarray
        The update's scale statistic (white box, every step): minus the sum over the steps of
        the log root mean square of a block of coordinates nothing touches, in units of the
        claimed noise ``sigma C`` after the public normaliser. Identical in law in both halves
        whenever the update is scaled by a public constant; it sees data-dependent scaling.
    epoch_max_in, epoch_max_out : ndarray
        The epoch-maximum statistic (white box): the gradient canary's observations cut into
        blocks of ``round(1 / q)`` consecutive steps (an "epoch" of the claimed sampling rate;
        the last block may be shorter), the largest observation of each block, summed over the
        blocks (Chua et al. 2024's test). It sees sampling that concentrates an example in one
        step of each epoch (shuffled batches) where the accountant spreads it over the steps.
    spread_in, spread_out : ndarray
        The update's scale from step to step (white box; :mod:`dpaudit.dpsgd.harness`): the
        largest ``|log rms_t - median_s log rms_s|`` over the steps, ``rms_t`` the root mean square
        of step ``t``'s update on the block nothing touches. Near zero for code whose update is
        scaled by a public constant; it sees a scale that jumps in the few steps where an example
        is sampled (a realised count or a norm at small ``q``, noise scaled by the batch), which the
        summed ``scale`` dilutes over the steps.
    """

    black_box_in: np.ndarray
    black_box_out: np.ndarray
    white_box_in: np.ndarray
    white_box_out: np.ndarray
    config: DPSGDConfig
    variant: str
    seconds: float
    details: dict = field(default_factory=dict)
    scale_in: np.ndarray = field(default_factory=lambda: np.zeros(0))
    scale_out: np.ndarray = field(default_factory=lambda: np.zeros(0))
    epoch_max_in: np.ndarray = field(default_factory=lambda: np.zeros(0))
    epoch_max_out: np.ndarray = field(default_factory=lambda: np.zeros(0))
    spread_in: np.ndarray = field(default_factory=lambda: np.zeros(0))
    spread_out: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def pair(self, view: str):
        """The scores ``(in, out)`` of ``view`` (a key of :data:`VIEWS`)."""
        if view not in VIEWS:
            raise ValueError(f"view must be one of {VIEWS}, got {view!r}")
        return getattr(self, f"{view}_in"), getattr(self, f"{view}_out")

    def concatenate(self, other: "ManyRuns") -> "ManyRuns":
        """These runs followed by ``other``'s (independent runs of the same mechanism and
        canaries, e.g. the next batch of a sequential audit): every score array joined, the
        seconds added, ``details["runs"]`` and ``["runs_in"]`` summed."""
        arrays = {f"{v}_{h}": np.concatenate([getattr(self, f"{v}_{h}"), getattr(other, f"{v}_{h}")])
                  for v in VIEWS for h in ("in", "out")}
        details = {**self.details, "runs": int(self.details.get("runs", 0)) + int(other.details.get("runs", 0)),
                   "runs_in": int(self.details.get("runs_in", 0)) + int(other.details.get("runs_in", 0))}
        return ManyRuns(config=self.config, variant=self.variant, seconds=self.seconds + other.seconds,
                        details=details, **arrays)


def _odd_digits():
    """The default task: 200 digits, label 1 for an odd digit."""
    x, y = load_digits_task(num_train=200)
    return x, y % 2


def _canary_input(x: np.ndarray) -> np.ndarray:
    """Ink (the data's maximum) on every pixel that is blank in all training images (every
    pixel, with ink 1, when there is no training image)."""
    if x.shape[0] == 0:
        return np.ones(x.shape[1], dtype=np.float32)
    blank = x.max(axis=0) <= 0
    c = np.zeros(x.shape[1], dtype=np.float32)
    c[blank] = float(x.max()) if blank.any() else 0.0
    if not blank.any():  # no blank pixel: the negated mean image
        c = (-x.mean(axis=0)).astype(np.float32)
    return c


def epoch_max_scores(observations, sampling_rate: float) -> np.ndarray:
    """The epoch-maximum statistic of :class:`ManyRuns` from per-step observations.

    Parameters
    ----------
    observations : array, shape (steps, runs)
        One gradient canary's observation per step and run.
    sampling_rate : float
        The claimed ``q``; blocks of ``b = max(1, round(1 / q))`` consecutive steps.

    Returns
    -------
    ndarray, shape (runs,)
        Sum over the blocks of each block's largest observation.

    Raises
    ------
    ValueError
        On observations that are not a finite 2-D array.

    References
    ----------
    Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha, Zhang (2024) (the maximum test for shuffled
    batches); :func:`dpaudit.dpsgd.shuffled_epsilon_lower_bound`.
    """
    o = np.asarray(observations, dtype=float)
    if o.ndim != 2 or not np.all(np.isfinite(o)):
        raise ValueError(f"observations must be a finite array of shape (steps, runs), got shape {o.shape}")
    b = max(1, int(round(1.0 / float(sampling_rate))))
    return sum(o[s:s + b].max(axis=0) for s in range(0, o.shape[0], b))


CANARY_SETS = ("both", "gradient", "input")

#: Runs that share one random generator in :func:`train_many` (a chunk is a whole number of
#: them, so results do not depend on the chunk).
RNG_BLOCK = 250
#: Share of the free device memory (CUDA) or available RAM (CPU) a chunk may use.
CHUNK_MEMORY_SHARE = 0.5
#: CPU: the working set of a chunk is kept near this size (bytes), the order of a last-level
#: cache, beyond which a larger chunk only adds memory traffic; at least one block.
CPU_CHUNK_BYTES = 64 * 2**20


def _per_model_bytes(n: int, d_model: int, null_block: int, steps: int, opposing: int) -> int:
    """Bytes one run of :func:`train_many` holds at a step (float32): the per-example gradients
    and their clipped, masked and flattened copies (``~5 x (n + 1) x d_model``), the noise and the
    null block (``~3 x (d_model + 1 + null_block)``), the sampling masks and the observations."""
    return 4 * (5 * (n + 1) * d_model + 3 * (d_model + 1 + null_block) + 3 * (n + 2 + opposing) + steps + 8)


def choose_chunk(runs: int, per_model_bytes: int, device="cpu") -> int:
    """How many runs :func:`train_many` vectorises at once on ``device``.

    * CUDA: ``CHUNK_MEMORY_SHARE`` of the free memory (``torch.cuda.mem_get_info``) over the
      per-model footprint: a GPU is fastest with the largest batch that fits (issue 35 measured
      58.6 s at 250 models per chunk and 3.3 s at 5,000 for 200,000 models on an H100).
    * CPU: the smaller of ``CHUNK_MEMORY_SHARE`` of the available RAM
      (``os.sysconf("SC_AVPHYS_PAGES")``; 1 GiB when unknown) and :data:`CPU_CHUNK_BYTES` of
      working set, over the footprint.

    Never more than ``runs``; at least :data:`RNG_BLOCK` (the caller rounds to whole blocks).

    Parameters
    ----------
    runs : int
        Runs in all.
    per_model_bytes : int
        One run's footprint (:func:`_per_model_bytes`).
    device : str or torch.device

    Returns
    -------
    int
    """
    import os

    per = max(1, int(per_model_bytes))
    dev = str(device)
    if dev.startswith("cuda"):
        import torch

        free, _ = torch.cuda.mem_get_info(torch.device(dev))
        n = int(CHUNK_MEMORY_SHARE * free // per)
    else:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            avail = 2**30
        n = int(min(CHUNK_MEMORY_SHARE * avail, CPU_CHUNK_BYTES) // per)
    return max(RNG_BLOCK, min(int(runs), n))


def train_many(config: DPSGDConfig, *, runs: int = 1000, variant: str = "correct", data=None, hidden: int = 0,
               chunk: int = None, opposing: int = 0, null_block: int = 1024, canary: str = "both", seed: int = 0,
               device: str = "cpu", stream: int = 0) -> ManyRuns:
    """Train ``runs`` DP-SGD models at once (half with the canaries) and score the canaries.

    Parameters
    ----------
    config : DPSGDConfig
        Claimed parameters and training settings (the same for every run).
    runs : int
        Number of runs ``>= 4``; the first ``runs // 2`` include the canaries.
    variant : str
        A key of :data:`~dpaudit.dpsgd.reference.VARIANTS`. ``"shuffled-batches"``: every epoch
        each run shuffles its whole dataset (real examples, the canaries it includes, the
        opposing examples) and cuts it into ``floor(size / B)`` batches of the fixed size
        ``B = max(1, round(q * N))`` (``N``: the public dataset without canaries, real and
        opposing examples), the last partial batch dropped (PyTorch's ``drop_last=True``);
        accounted, wrongly, as Poisson sampling at ``q``. Steps per epoch come from each run's
        own dataset size, as an implementation computes them.
    data : (x, y), optional
        Real examples; default :func:`~dpaudit.dpsgd.reference.load_digits_task` with 200
        examples and a binary label (odd digit). Zero examples (``x`` of shape ``(0, features)``)
        are allowed: a dataset of crafted examples only (``opposing``).
    hidden : int
        0: logistic regression; else an MLP with one hidden layer of this width.
    chunk : int, optional
        Runs vectorised together (memory about ``chunk x`` :func:`_per_model_bytes`), rounded
        down to a multiple of :data:`RNG_BLOCK` (at least one block). Default: chosen from the
        device and its free memory (:func:`choose_chunk`). The outputs do not depend on it: each
        block of :data:`RNG_BLOCK` consecutive runs draws from its own generator, seeded from
        ``(seed, block)``.
    opposing : int
        Number ``k >= 0`` of auditor-crafted examples added to every run (both halves: they are
        part of the public dataset), each Poisson-sampled like the others, each with gradient
        ``-canary_norm / (2k)`` on the gradient canary's coordinate: the worst-case neighbours
        of a batch-level clipping bug. Without the canary the batch sum on that coordinate is
        negative whenever one of them is sampled, with it at least ``+canary_norm / 2``:
        clipped as a whole (and ``canary_norm`` far above the real gradients' sum), ``-C``
        against ``+C``. ``k`` of a few ``1/q`` makes "one of them sampled" almost sure under
        Poisson sampling; ``k = 1`` suffices at ``q = 1``. Under per-example clipping each only
        shifts the observation by ``-min(1, canary_norm / (2kC))`` when sampled.
    null_block : int
        Extra coordinates that nothing touches (``>= 1``): only noise, observed every step, in
        units of the claimed ``sigma C`` and the public normaliser; their root mean square is the
        update's scale (the ``scale`` score).
    canary : {"both", "gradient", "input"}
        Which canaries the first half of the runs includes: both (default), or only one, so that
        the two halves differ in exactly one example (what a single example's ``(eps, delta)``
        claim is about when the canaries can interact: shared clipping, a shared batch size,
        shared batch slots).
    seed : int
        Seeds the public initial model and every run's randomness.
    device : str
    stream : int
        ``>= 0``: which independent stream of runs (sampling and noise) ``seed`` gives; the
        public initial model is the same for every stream. A sequential audit
        (:func:`audit_train_many`) trains its batches as streams ``0, 1, 2, ...`` of one seed, so
        that its batches are independent runs of one mechanism. ``0`` is the stream of earlier
        versions.

    Returns
    -------
    ManyRuns
        ``scale_in`` / ``scale_out``: minus the sum over the steps of the log of the null block's
        root mean square (1 in every step for an implementation that scales its update by a
        public constant; larger when the update shrinks with a larger batch).

    Raises
    ------
    ValueError
        On fewer than 4 runs, an unknown variant or canary set, bad data, or (shuffled batches)
        a batch larger than a run's dataset.

    References
    ----------
    Abadi et al. (2016) (DP-SGD); Nasr et al. (2023) (gradient canaries, many-run audits);
    Jagielski et al. (2020) (input canaries and final-model scores).
    """
    import torch
    from torch.func import functional_call, grad, vmap

    runs = check_int(runs, "runs", 4)
    null_block = check_int(null_block, "null_block", 1)
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
    if canary not in CANARY_SETS:
        raise ValueError(f"canary must be one of {CANARY_SETS}, got {canary!r}")
    shuffled = variant == "shuffled-batches"
    x_np, y_np, x, y, t0 = _task_tensors(data, _odd_digits, np.float32, device)
    runs_total = runs
    n, feats = x_np.shape
    cx = torch.as_tensor(_canary_input(x_np), device=device)
    cy = torch.tensor(1.0, device=device)
    with torch.random.fork_rng(devices=[]):  # the public initial parameters, seeded (the caller's RNG untouched)
        torch.manual_seed(int(np.random.SeedSequence([int(seed), 5]).generate_state(1)[0]))
        if hidden:
            model = torch.nn.Sequential(torch.nn.Linear(feats, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1))
        else:
            model = torch.nn.Linear(feats, 1)
    model = model.to(device)
    init = {k: v.detach().clone() for k, v in model.named_parameters()}  # the same public start for every run
    names = list(init)
    d_model = sum(v.numel() for v in init.values())

    def loss_one(p, xi, yi):
        out = functional_call(model, p, (xi.unsqueeze(0),)).reshape(())
        return torch.nn.functional.binary_cross_entropy_with_logits(out, yi)

    per_example = vmap(grad(loss_one), in_dims=(None, 0, 0))
    per_run = vmap(per_example, in_dims=(0, None, None))
    C, sigma, q, T = config.max_grad_norm, config.noise_multiplier, config.sampling_rate, config.steps
    cnorm = config.canary_gradient_norm
    noise_sd = sigma if variant == "noise-not-scaled" else sigma * C
    per_example_clip = variant not in ("no-clipping", "batch-clipping")
    runs_in = runs // 2
    xs = torch.cat([x, cx.unsqueeze(0)])  # the input canary is example n
    ys = torch.cat([y, cy.unsqueeze(0)])
    # Public normaliser: the expected batch size of the dataset with both canaries (and the
    # crafted opposing example), the same in both halves (a normaliser that depended on whether
    # the canary is in would leak it: the "realised-batch-size" class).
    opposing = check_int(opposing, "opposing", 0)
    expected = q * (n + 2 + opposing)
    batch = max(1, int(round(q * (n + opposing))))  # shuffled batches: the fixed public batch size
    in_input, in_grad = canary in ("both", "input"), canary in ("both", "gradient")
    bb, wb, sc, em = [], [], [], []
    # Randomness per block of RNG_BLOCK consecutive runs (its own generator, seeded from (seed,
    # block)), whatever the chunk: a chunk is a whole number of blocks, so the outputs do not
    # depend on the chunk (nor on the device's choice of it).
    chunk = choose_chunk(runs_total, _per_model_bytes(n, d_model, null_block, T, opposing), device) if chunk is None \
        else check_int(chunk, "chunk")
    chunk = max(RNG_BLOCK, chunk // RNG_BLOCK * RNG_BLOCK)
    stream = check_int(stream, "stream", 0)
    block_seeds = np.random.SeedSequence([int(seed), 7] + ([stream] if stream else [])).spawn(-(-runs_total // RNG_BLOCK))
    for start in range(0, runs, chunk):
        r = min(chunk, runs - start)
        blocks = []  # (generator, size, reused-noise seed) of each block in this chunk
        for b in range(start // RNG_BLOCK, -(-(start + r) // RNG_BLOCK)):
            s0, s1 = (int(v) for v in block_seeds[b].generate_state(2, dtype=np.uint64) % (2**62))
            size = min(RNG_BLOCK, runs_total - b * RNG_BLOCK)
            blocks.append((torch.Generator(device=device).manual_seed(s0), size, s1))

        def rand(*tail, normal=False, reseed=False):
            """One draw per block, concatenated: shape (r, *tail)."""
            f = torch.randn if normal else torch.rand
            parts = [f(size, *tail, generator=torch.Generator(device=device).manual_seed(fs) if reseed else g,
                       device=device) for g, size, fs in blocks]
            return parts[0] if len(parts) == 1 else torch.cat(parts)

        with_canary = torch.as_tensor(np.arange(start, start + r) < runs_in, device=device)
        params = {k: v.unsqueeze(0).repeat(r, *([1] * v.dim())) for k, v in init.items()}
        obs = torch.zeros(T, r, device=device)
        log_scale = torch.zeros(r, device=device)
        if shuffled:
            # Items: real 0..n-1, input canary n, gradient canary n+1, opposing n+2..n+1+k.
            present = torch.ones(r, n + 2 + opposing, dtype=torch.bool, device=device)
            present[:, n] = with_canary & in_input
            present[:, n + 1] = with_canary & in_grad
            per_epoch = torch.div(present.sum(dim=1), batch, rounding_mode="floor")  # drop the last partial batch
            if int(per_epoch.min()) < 1:
                raise ValueError(f"batch size {batch} is larger than a run's dataset ({int(present.sum(dim=1).min())})")
            pos = torch.zeros(r, n + 2 + opposing, dtype=torch.long, device=device)
        for t in range(T):
            g = per_run(params, xs, ys)
            flat = torch.cat([g[k].reshape(r, n + 1, -1) for k in names], dim=2)  # (r, n+1, d_model)
            if shuffled:
                j = t % per_epoch  # (r,) batch index within each run's epoch
                fresh = j == 0
                off_b = 0
                for g_b, size_b, _ in blocks:  # a block draws new keys only when one of its runs starts an epoch
                    sl = slice(off_b, off_b + size_b)
                    off_b += size_b
                    if bool(fresh[sl].any()):
                        keys = torch.rand(size_b, n + 2 + opposing, generator=g_b, device=device)
                        keys = torch.where(present[sl], keys, torch.full_like(keys, 2.0))  # absent items last
                        new_pos = torch.argsort(torch.argsort(keys, dim=1), dim=1)
                        pos[sl] = torch.where(fresh[sl].unsqueeze(1), new_pos, pos[sl])
                member = (pos >= (j * batch).unsqueeze(1)) & (pos < ((j + 1) * batch).unsqueeze(1)) & present
                take = member[:, :n + 1].clone()
                gc_take = member[:, n + 1].clone()
            else:
                take = (rand(n + 1) < q) if q < 1 else torch.ones(r, n + 1, device=device, dtype=torch.bool)
                take[:, n] &= with_canary & in_input
                gc_take = ((rand() < q) if q < 1 else torch.ones(r, dtype=torch.bool, device=device)) & with_canary & in_grad
            if per_example_clip:
                norms = flat.norm(dim=2, keepdim=True)
                flat = flat * torch.clamp(C / (norms + 1e-12), max=1.0)
            summed = (flat * take.unsqueeze(2).float()).sum(dim=1)  # (r, d_model)
            gsum = gc_take.float() * (min(C, cnorm) if per_example_clip else cnorm)
            batch_size = take.float().sum(dim=1) + gc_take.float()
            if opposing:
                a_opp = cnorm / (2.0 * opposing)
                if shuffled:
                    opp_take = member[:, n + 2:].float().sum(dim=1)
                else:
                    opp_take = ((rand(opposing) < q) if q < 1 else
                                torch.ones(r, opposing, dtype=torch.bool, device=device)).float().sum(dim=1)
                gsum = gsum - opp_take * (min(C, a_opp) if per_example_clip else a_opp)
                batch_size = batch_size + opp_take
            if variant == "batch-clipping":  # the batch's whole gradient (model and canary coordinate) clipped to C
                total = torch.sqrt(summed.square().sum(dim=1) + gsum.square())
                factor = torch.clamp(C / (total + 1e-12), max=1.0)
                summed, gsum = summed * factor.unsqueeze(1), gsum * factor
            noise = rand(d_model + 1 + null_block, normal=True, reseed=variant == "noise-reused") * noise_sd
            noisy = summed + noise[:, :d_model]
            o_t = (gsum + noise[:, d_model]) / C
            null = noise[:, d_model + 1:] / (sigma * C)
            if variant == "realised-batch-size":  # divided by the realised |B| (at least 1), not the public size
                release = expected / torch.clamp(batch_size, min=1.0)
                noisy, o_t, null = noisy * release.unsqueeze(1), o_t * release, null * release.unsqueeze(1)
            obs[t] = o_t
            log_scale += 0.5 * torch.log(null.square().mean(dim=1))
            off = 0
            new = {}
            for k in names:
                sz = init[k].numel()
                new[k] = params[k] - config.learning_rate * (noisy[:, off:off + sz] / expected).reshape(params[k].shape)
                off += sz
            params = new
        with torch.no_grad():
            logit = vmap(lambda p: functional_call(model, p, (cx.unsqueeze(0),)).reshape(()))(params)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logit, cy.expand(r), reduction="none")
        bb.append(-loss.cpu().numpy())
        from .audit import canary_scores

        wb.append(canary_scores(obs.cpu().numpy(), sigma, q, "lr"))
        em.append(epoch_max_scores(obs.cpu().numpy(), q))
        sc.append(-log_scale.cpu().numpy().astype(float))
    bb_all, wb_all, sc_all, em_all = np.concatenate(bb), np.concatenate(wb), np.concatenate(sc), np.concatenate(em)
    return ManyRuns(black_box_in=bb_all[:runs_in], black_box_out=bb_all[runs_in:], white_box_in=wb_all[:runs_in],
                    white_box_out=wb_all[runs_in:], config=config, variant=variant, seconds=time.perf_counter() - t0,
                    scale_in=sc_all[:runs_in], scale_out=sc_all[runs_in:],
                    epoch_max_in=em_all[:runs_in], epoch_max_out=em_all[runs_in:],
                    details={"runs": runs, "runs_in": runs_in, "model_parameters": int(d_model), "num_train": int(n),
                             "hidden": hidden, "seed": seed, "device": device, "opposing": int(opposing),
                             "null_block": int(null_block), "expected_batch": float(expected), "canary": canary,
                             "shuffled_batch": int(batch) if shuffled else None, "chunk": int(chunk),
                             "stream": stream})


COUPLING_VARIANTS = frozenset({"batch-clipping", "realised-batch-size", "shuffled-batches"})
"""Variants in which one example's presence changes how another is processed (the whole batch
clipped together, an update divided by the realised batch size, fixed-size batch slots): their
many-run audits need runs that differ in exactly one example (``train_many(canary=...)``)."""

VIEWS = ("black_box", "white_box", "scale", "epoch_max", "spread")

#: The direction each view's two-sample audit takes by default (fixed before looking):
#: ``"greater"`` where an included canary can only push the score up under every bug the view is
#: for (the canary's own coordinate, its loss; in :func:`train_many` the scale, which only its
#: realised-batch-size variant moves, and only up); ``"two-sided"`` for the scale's spread. The
#: many-run harness of user code (:mod:`dpaudit.dpsgd.harness`) audits ``scale`` two-sided too:
#: a data-dependent normaliser moves it up with the canary, a data-dependent noise scale down.
VIEW_ALTERNATIVES = {"black_box": "greater", "white_box": "greater", "scale": "greater", "epoch_max": "greater",
                     "spread": "two-sided"}


def audit_many(result: ManyRuns, *, delta: float = 1e-5, beta: float = 0.05,
               views=("black_box", "white_box"), profile=None, alternatives=None) -> dict:
    """Certified two-sample bounds (:func:`dpaudit.scores.clopper_pearson_audit`, scores of
    included-canary runs leaning high) from each view's scores, each at ``beta``, next to the
    accountant's epsilon.

    Views: ``"black_box"`` (minus the final model's loss on the input canary), ``"white_box"``
    (the gradient canary's likelihood-ratio score over the steps), ``"scale"`` (the update's
    scale statistic, :attr:`ManyRuns.scale_in`), ``"epoch_max"`` (the gradient canary's
    largest observation per block of ``round(1/q)`` steps, summed: :attr:`ManyRuns.epoch_max_in`)
    and ``"spread"`` (the scale's variation from step to step, :attr:`ManyRuns.spread_in`; the
    harness's runs). Each is a function of the released outputs and public information only, so
    each bound is certified whatever the implementation does; the runs are independent, so the
    two halves are i.i.d. samples of the two output laws. Each view's direction is
    :data:`VIEW_ALTERNATIVES` unless ``alternatives`` says otherwise.

    Parameters
    ----------
    result : ManyRuns
        From :func:`train_many`.
    delta : float
        Delta of the epsilon bounds, in (0, 1).
    beta : float
        Failure probability of *each* view's bounds. A verdict over several views together
        (``"violated"``) holds at ``beta * len(views)``: pass ``beta / len(views)`` for an overall
        ``beta``.
    views : sequence of str
        A non-empty subset of :data:`VIEWS`, fixed before looking.
    profile : sequence of float, optional
        A grid of epsilons (fixed before looking): also compare each view's evidence with the
        accountant's whole privacy profile (:func:`profile_check`; same confidence, no extra
        cost). ``profile_violated``: the certified delta exceeds the accountant's at a grid point.
    alternatives : dict, optional
        View -> ``"greater"`` or ``"two-sided"`` (fixed before looking), over
        :data:`VIEW_ALTERNATIVES`.

    Returns
    -------
    dict
        ``accountant_epsilon``, ``runs``, ``seconds``; per view: ``epsilon_lower_bound`` and
        ``mu_lower_bound`` (certified), ``violated``; ``"violated"``: any view violated.

    Raises
    ------
    ValueError
        On an unknown view, ``"scale"`` on a result without scale scores, or a variant that
        couples examples (:data:`COUPLING_VARIANTS`) trained with both canaries: its two halves
        differ in two examples whose effects interact, so no view's bound is about one example
        (train with ``canary="gradient"`` or ``"input"``).

    References
    ----------
    Nasr et al. (2023) §5 (many-run white-box audits); Jagielski et al. (2020); Clopper & Pearson
    (1934); ``docs/dpsgd.md`` §3 (the scale statistic).
    """
    from ..scores import clopper_pearson_audit

    views = tuple(views)
    if not views or any(v not in VIEWS for v in views):
        raise ValueError(f"views must be a non-empty subset of {VIEWS}, got {views!r}")
    if result.variant in COUPLING_VARIANTS and result.details.get("canary", "both") == "both":
        # With both canaries the halves differ in two examples. Each view is still a one-example
        # comparison when the other canary cannot reach its statistic (per-example clipping and a
        # public normaliser keep them apart); these variants couple them.
        raise ValueError(
            f"variant {result.variant!r} couples examples (a shared clipping norm, batch size or batch slots), and "
            "these runs include both canaries, so their halves differ in two examples: a bound from them is not "
            "about one example; train with canary='gradient' or canary='input'")
    if "scale" in views and result.scale_in.size < 2:
        raise ValueError("the 'scale' view needs the scale scores of train_many")
    if "epoch_max" in views and result.epoch_max_in.size < 2:
        raise ValueError("the 'epoch_max' view needs the epoch-maximum scores of train_many")
    if "spread" in views and result.spread_in.size < 2:
        raise ValueError("the 'spread' view needs the per-step scale of the many-run harness (dpaudit.dpsgd.harness)")
    acc = _claimed_epsilon(result.config, delta)
    out = {"accountant_epsilon": acc, "runs": int(result.details["runs"]), "seconds": result.seconds}
    sides = {**VIEW_ALTERNATIVES, **(alternatives or {})}
    if any(sides[v] not in ("greater", "two-sided") for v in views):
        raise ValueError(f"alternatives must map views to 'greater' or 'two-sided', got {alternatives!r}")
    for view in views:
        a, b = result.pair(view)
        au = clopper_pearson_audit(a, b, confidence=1 - beta, alternative=sides[view])
        e = au.epsilon_lower_bound(delta)
        out[view] = {"epsilon_lower_bound": e, "mu_lower_bound": au.mu_lower_bound, "violated": bool(e > acc),
                     "alternative": sides[view]}
        if profile is not None:
            out[view]["profile"] = profile_check(au, result.config.composition(), profile)
            out[view]["profile_violated"] = out[view]["profile"]["violated"]
    out["violated"] = any(out[v]["violated"] for v in views)
    if profile is not None:
        out["profile_violated"] = any(out[v]["profile_violated"] for v in views)
    return out


def _claimed_epsilon(config: DPSGDConfig, delta: float) -> float:
    """The accountant's epsilon at ``delta`` for the claim (cached in :mod:`.audit`; dp_accounting's
    harmless RDP convergence warnings are dropped by :mod:`dpaudit.privacy.quiet`)."""
    from .audit import _claimed_accountant

    return float(_claimed_accountant(float(config.noise_multiplier), float(config.sampling_rate),
                                     int(config.steps), float(delta)).epsilon)


@functools.lru_cache(maxsize=1024)
def _accountant_delta(composition, epsilon: float) -> float:
    """``get_delta(composition, epsilon).delta``, cached (a composition is hashable): audits of
    several views, halves or repetitions of one claim compute each grid point once."""
    from ..accounting import get_delta

    return float(get_delta(composition, epsilon).delta)


def profile_check(evidence, composition, epsilons) -> dict:
    """Compare certified evidence with the accountant's whole privacy profile.

    The accountant states ``(eps', delta_acc(eps'))`` for every ``eps'``; the evidence (a
    :class:`~dpaudit.estimators.region.ScoreAudit`) lower-bounds the mechanism's hockey-stick
    divergence at every ``eps'`` at once, on one event of its confidence. The implementation
    leaks more than accounted when, at some ``eps'`` of a grid fixed in advance, the certified
    ``delta`` lower bound exceeds the accountant's certified *upper* bound
    (:func:`dpaudit.accounting.get_delta`): no further confidence is spent on the grid.

    Parameters
    ----------
    evidence : ScoreAudit
        Anything with ``delta_lower_bound(eps_array)``.
    composition : Composition
        The claimed mechanism (``DPSGDConfig.composition()``).
    epsilons : sequence of float
        The grid of ``eps'`` (nats), fixed before looking.

    Returns
    -------
    dict
        ``violated``; ``witness_epsilon``, ``delta_lower_bound`` and ``accountant_delta`` at the
        grid point of largest margin; ``margin`` (certified minus accounted delta there).

    Raises
    ------
    ValueError
        On an empty grid or negative epsilons.

    References
    ----------
    Kairouz, Oh, Viswanath (2015) (a privacy profile as a family of (eps, delta) statements);
    Balle et al. (2018) (the hockey-stick divergence); paper 000 Alg. 6 (profile comparison).
    """
    grid = np.asarray(list(epsilons), dtype=float)
    if grid.size == 0 or np.any(~np.isfinite(grid)) or np.any(grid < 0):
        raise ValueError(f"epsilons must be a non-empty grid of finite values >= 0, got {epsilons!r}")
    lb = np.atleast_1d(np.asarray(evidence.delta_lower_bound(grid), dtype=float))
    acc = np.array([_accountant_delta(composition, float(e)) for e in grid])
    diff = lb - acc
    j = int(np.argmax(diff))
    return {"violated": bool(diff[j] > 0), "witness_epsilon": float(grid[j]), "delta_lower_bound": float(lb[j]),
            "accountant_delta": float(acc[j]), "margin": float(diff[j]), "grid": grid.tolist()}


# ------------------------------------------------------------ one threshold at a fixed rank of the out-runs
#: Quadrature points of :func:`rank_p_value` (its p-value errs high by at most their inverse).
RANK_QUADRATURE = 2**14


def rank_p_value(x: int, n: int, k: int, m: int, *, weight: float = 1.0, delta0: float = 0.0) -> float:
    """Exact-law p-value for ``H0: P(S) <= weight Q(S) + delta0`` on the set ``S = {score > t}``, ``t``
    the ``(k+1)``-th largest of ``m`` i.i.d. scores under ``Q``, ``x`` of ``n`` i.i.d. scores under
    ``P`` above ``t``.

    Whatever the laws, ``Q(S)`` is stochastically at most ``B ~ Beta(k + 1, m - k)`` (the law of the
    ``(k+1)``-th largest of ``m`` uniforms; conservative with ties), and given ``t`` the count ``x``
    is ``Bin(n, P(S))``, independent of the out-scores. Under ``H0`` it is therefore stochastically
    at most ``Bin(n, min(1, weight B + delta0))`` mixed over ``B``, and the p-value is
    ``E_B[P(Bin(n, min(1, weight B + delta0)) >= x)]``: no nuisance parameter, no normal
    approximation. The integrand grows with ``B``; it is summed at the upper ends of
    :data:`RANK_QUADRATURE` equal-probability cells of ``B``, which overstates the integral by at
    most ``1 / RANK_QUADRATURE`` (an upper Riemann sum): the p-value errs on the safe side. Against
    the two separate bounds of :func:`dpaudit.scores.clopper_pearson_audit` (one on each count, at
    half the level each) it needs about half the runs for the same margin near ``P(S) = Q(S) = 1/2``.

    Parameters
    ----------
    x, n : int
        In-scores above the threshold, and in-scores (``0 <= x <= n``, ``n >= 1``).
    k, m : int
        The threshold's rank among the out-scores (``k`` of them above it, ``0 <= k < m``).
    weight : float
        ``w >= 1`` (``e^eps'`` for the hockey-stick divergence at ``eps' >= 0``).
    delta0 : float
        The bound under test, in ``[0, 1)``.

    Returns
    -------
    float
        In ``(0, 1]``.

    Raises
    ------
    ValueError
        On counts out of range, ``weight < 1`` or ``delta0`` outside ``[0, 1)``.

    References
    ----------
    David & Nagaraja (2003) §2.1 (uniform order statistics); Clopper & Pearson (1934); the
    order-statistic thresholds of :func:`dpaudit.scores.clopper_pearson_audit`.
    """
    from scipy.stats import binom

    n, m = check_int(n, "n", 1), check_int(m, "m", 1)
    x, k = check_int(x, "x", 0), check_int(k, "k", 0)
    if x > n or k >= m:
        raise ValueError(f"need 0 <= x <= n and 0 <= k < m, got x={x}, n={n}, k={k}, m={m}")
    if not (weight >= 1.0 and np.isfinite(weight)):
        raise ValueError(f"weight must be a finite number >= 1, got {weight!r}")
    if not (0.0 <= delta0 < 1.0):
        raise ValueError(f"delta0 must be in [0, 1), got {delta0!r}")
    if x == 0:
        return 1.0
    tail = binom.sf(x - 1, n, np.minimum(1.0, weight * _beta_cells(k, m) + delta0))
    return float(min(1.0, tail.mean()))


@functools.lru_cache(maxsize=64)
def _beta_cells(k: int, m: int) -> np.ndarray:
    """The upper ends of :data:`RANK_QUADRATURE` equal-probability cells of ``Beta(k + 1, m - k)``."""
    from scipy.stats import beta as beta_law

    b = beta_law.ppf(np.arange(1, RANK_QUADRATURE + 1) / RANK_QUADRATURE, k + 1, m - k)
    b[-1] = 1.0
    b.setflags(write=False)
    return b


def rank_threshold_profile(scores_in, scores_out, composition, *, beta: float, epsilons=(0.0,),
                           fractions=(0.5,)) -> dict:
    """Compare two samples of scores with the claim's privacy profile at thresholds set at fixed
    ranks of the out-scores (fixed before looking), each by the exact test :func:`rank_p_value`.

    For each pair ``(eps', f)`` of the grid ``epsilons x fractions`` the threshold is the
    ``(k+1)``-th largest out-score, ``k = floor(f m)``: the set ``S = {score > t}`` holds a share
    ``f`` of the out-runs, wherever the code puts them (a bug that shifts the runs without the
    canary too, e.g. clipping that also binds on groups of other rows, moves the threshold with
    them). The claim implies ``P(S) - e^eps' Q(S) <= delta_acc(eps')`` for every set (the
    accountant's certified upper bound, :func:`dpaudit.accounting.get_delta`); each pair is tested
    at ``beta / pairs`` (a union bound). Valid whatever the code does: the runs are i.i.d. on two
    neighbouring datasets and the score is a function of the release.

    Parameters
    ----------
    scores_in, scores_out : array, shape (n,), (m,)
        Scores of runs with and without the canary (finite, at least 2 each; higher: in).
    composition : Composition
        The claim (``DPSGDConfig.composition()``).
    beta : float
        Failure probability of the whole grid, in (0, 1).
    epsilons : sequence of float
        ``eps' >= 0`` (nats), fixed before looking. Default ``(0,)``: the total-variation distance.
    fractions : sequence of float
        Shares of the out-runs above the threshold, in (0, 1), fixed before looking.

    Returns
    -------
    dict
        ``violated``; at the pair of largest margin ``witness_epsilon``, ``fraction``,
        ``delta_lower_bound`` (certified at ``1 - beta / pairs``: the largest ``delta0`` the test
        rejects, to 2e-3), ``accountant_delta``, ``margin`` (their difference), ``p_value``;
        ``grid`` and ``p_values`` (one per pair).

    Raises
    ------
    ValueError
        On scores that are not finite 1-D arrays of at least 2 values, a bad grid, fractions or
        ``beta``.

    References
    ----------
    Kairouz, Oh, Viswanath (2015), Balle et al. (2018) (the hockey-stick divergence and the
    privacy profile); Nasr et al. (2023) §5 (many-run audits); :func:`rank_p_value`.
    """
    a = np.asarray(scores_in, dtype=float)
    b = np.asarray(scores_out, dtype=float)
    for name, s in (("scores_in", a), ("scores_out", b)):
        if s.ndim != 1 or s.size < 2 or not np.all(np.isfinite(s)):
            raise ValueError(f"{name} must be a finite 1-D array of at least 2 scores, got shape {s.shape}")
    grid = np.asarray(list(epsilons), dtype=float)
    if grid.size == 0 or np.any(~np.isfinite(grid)) or np.any(grid < 0):
        raise ValueError(f"epsilons must be a non-empty grid of finite values >= 0, got {epsilons!r}")
    fr = np.asarray(list(fractions), dtype=float)
    if fr.size == 0 or np.any(~(fr > 0)) or np.any(~(fr < 1)):
        raise ValueError(f"fractions must be a non-empty sequence of values in (0, 1), got {fractions!r}")
    if not (0.0 < beta < 1.0):
        raise ValueError(f"beta must be in (0, 1), got {beta!r}")
    level = beta / (grid.size * fr.size)
    out_sorted = np.sort(b)[::-1]
    rows = []
    for e in grid:
        w = float(np.exp(e))
        acc = _accountant_delta(composition, float(e))
        for f in fr:
            k = min(b.size - 1, int(np.floor(f * b.size)))
            x = int(np.sum(a > out_sorted[k]))
            test = functools.partial(rank_p_value, x, a.size, k, b.size, weight=w)
            pv = test(delta0=min(acc, 1 - 1e-12))
            lo, hi = 0.0, 1.0 - 1e-12  # the largest delta0 rejected: bisection (the p-value grows with it)
            if test(delta0=0.0) > level:
                hi = 0.0
            while hi - lo > 2e-3:
                mid = 0.5 * (lo + hi)
                lo, hi = (mid, hi) if test(delta0=mid) <= level else (lo, mid)
            rows.append((lo - acc, float(e), float(f), lo, acc, pv))
    j = int(np.argmax([r[0] for r in rows]))
    margin, e, f, lb, acc, pv = rows[j]
    return {"violated": bool(min(r[5] for r in rows) <= level), "witness_epsilon": e, "fraction": f,
            "delta_lower_bound": lb, "accountant_delta": acc, "margin": margin, "p_value": pv,
            "grid": [(r[1], r[2]) for r in rows], "p_values": [r[5] for r in rows]}

# --------------------------------------------------------------------------- sequential audits
def look_schedule(first_runs: int, max_runs: int) -> tuple:
    """The cumulative run counts at which a sequential many-run audit looks at its evidence.

    ``first_runs, 2 first_runs, 4 first_runs, ...`` while below ``max_runs``, then ``max_runs``
    (a geometric schedule: the runs spent past the first look that would have sufficed are at
    most about twice the runs needed). Fixed from the two arguments alone, before any run.

    Parameters
    ----------
    first_runs : int
        Runs at the first look, ``>= 4``.
    max_runs : int
        The run budget, ``>= first_runs``.

    Returns
    -------
    tuple of int
        Strictly increasing; the last is ``max_runs``.

    Raises
    ------
    ValueError
        On counts out of range.
    """
    first_runs = check_int(first_runs, "first_runs", 4)
    max_runs = check_int(max_runs, "max_runs", 4)
    if max_runs < first_runs:
        raise ValueError(f"max_runs ({max_runs}) must be >= first_runs ({first_runs})")
    looks, r = [], first_runs
    while r < max_runs:
        looks.append(r)
        r *= 2
    return tuple(looks) + (max_runs,)


@dataclass(frozen=True)
class SequentialAudit:
    """The verdict of a many-run audit that looked at its evidence after each batch of runs.

    Attributes
    ----------
    caught : bool
        A violation was certified at some look (wrong with probability at most ``beta``,
        whatever look it stopped at).
    runs : int
        Runs used: the cumulative count at the look that stopped (the budget when none did).
    stopped : str
        ``"violation"`` or ``"budget"``.
    schedule : tuple of int
        The looks (:func:`look_schedule`), fixed before the first run.
    looks : tuple of dict
        One per look taken: ``runs``, ``caught``, ``best_epsilon`` (the largest certified
        epsilon over the views), ``best_margin`` (the largest certified-minus-accounted delta
        over the views and the profile grid) and ``view`` (the view that caught, or None).
    audit : dict
        The audit at the last look taken (``audit_many`` / ``audit_user_code``'s dict).
    beta, beta_per_look : float
        The overall failure probability and its share at each look (``beta / len(schedule)``).
    detectable : dict or None
        When it stopped at the budget without a violation: what the same audit at that run
        count would have caught about half the time (:func:`detectable_leak`).
    result : object
        The pooled runs (``ManyRuns`` or ``HarnessRuns``).
    """

    caught: bool
    runs: int
    stopped: str
    schedule: tuple
    looks: tuple
    audit: dict
    beta: float
    beta_per_look: float
    detectable: dict = None
    result: object = None

    def summary(self) -> str:
        """One paragraph: the verdict, the runs it took, and (at the budget) what it could have caught."""
        if self.caught:
            return (f"violation certified after {self.runs:,} runs (look {len(self.looks)} of {len(self.schedule)}; "
                    f"view {self.looks[-1]['view']}; beta {self.beta:g} over every look)")
        text = f"no violation certified in {self.runs:,} runs ({len(self.looks)} looks, beta {self.beta:g})"
        d = self.detectable
        if d:
            text += (f"; at this cost the audit catches, about half the time, a view whose two halves separate like "
                     f"a Gaussian shift of mu >= {d['mu']:.3g} (epsilon >= {d['epsilon']:.3g} at delta {d['delta']:g}), "
                     f"where the claim's own worst case is mu {d['claim_mu']:.3g} (epsilon {d['accountant_epsilon']:.3g})")
        return text


def _best(audit: dict, views) -> tuple:
    """(largest certified epsilon, largest profile margin, the first view that caught or None)."""
    eps = max((audit[v]["epsilon_lower_bound"] for v in views), default=0.0)
    margins = [audit[v]["profile"]["margin"] for v in views if "profile" in audit[v]]
    caught = [v for v in views if audit[v]["violated"] or audit[v].get("profile_violated", False)]
    return float(eps), float(max(margins)) if margins else float("nan"), caught[0] if caught else None


def sequential_audit(run_batch, audit, schedule, *, beta: float = 0.05, views_of=None,
                     detectable=None) -> SequentialAudit:
    """Run batches of runs until a look certifies a violation or the budget is spent.

    At look ``k`` (cumulative ``schedule[k]`` runs) the pooled runs are audited at
    ``beta / len(schedule)``; the first look that catches stops. **Validity whatever the
    stopping time**: the looks are fixed in advance and each look's audit is wrong with
    probability at most ``beta / len(schedule)`` when the code keeps its claim, so the chance that
    *any* look accuses a correct implementation is at most ``beta`` (a union bound over the fixed
    looks; nested samples, any dependence between looks). Stopping early only skips looks.

    Parameters
    ----------
    run_batch : callable
        ``run_batch(k, runs) -> result``: the ``k``-th batch of ``runs`` new independent runs
        (``ManyRuns`` or ``HarnessRuns``, with ``concatenate``).
    audit : callable
        ``audit(result, beta_look) -> dict`` with ``"caught"`` and ``"views"``.
    schedule : sequence of int
        Cumulative run counts (:func:`look_schedule`).
    beta : float
        Overall failure probability, in (0, 1).
    views_of : callable, optional
        ``views_of(audit_dict) -> keys`` of the per-view entries (default ``audit["views"]``).
    detectable : callable, optional
        ``detectable(result, beta_look) -> dict``, called when the budget is spent without a
        violation.

    Returns
    -------
    SequentialAudit

    Raises
    ------
    ValueError
        On a schedule that is not strictly increasing, or a bad ``beta``.

    References
    ----------
    Group-sequential testing with a fixed number of looks and a split error (Bonferroni over the
    looks; Jennison & Turnbull 2000 ch. 2); issue 43 (stop the many-run audits early).
    """
    schedule = tuple(int(s) for s in schedule)
    if not schedule or any(b <= a for a, b in zip(schedule, schedule[1:])) or schedule[0] < 4:
        raise ValueError(f"schedule must be strictly increasing counts >= 4, got {schedule!r}")
    if not (0.0 < beta < 1.0):
        raise ValueError(f"beta must be in (0, 1), got {beta!r}")
    beta_look = beta / len(schedule)
    views_of = views_of or (lambda a: a["views"])
    pooled, done, looks, a = None, 0, [], None
    for k, total in enumerate(schedule):
        batch = run_batch(k, total - done)
        pooled = batch if pooled is None else pooled.concatenate(batch)
        done = total
        a = audit(pooled, beta_look)
        eps, margin, view = _best(a, views_of(a))
        looks.append({"runs": total, "caught": bool(a["caught"]), "best_epsilon": eps, "best_margin": margin,
                      "view": view})
        if a["caught"]:
            return SequentialAudit(True, total, "violation", schedule, tuple(looks), a, beta, beta_look, None, pooled)
    det = detectable(pooled, beta_look) if detectable is not None else None
    return SequentialAudit(False, done, "budget", schedule, tuple(looks), a, beta, beta_look, det, pooled)


def _gaussian_claim_mu(epsilon: float, delta: float) -> float:
    """The GDP ``mu`` whose epsilon at ``delta`` is ``epsilon`` (bisection)."""
    from ..privacy.profiles import gaussian_epsilon

    lo, hi = 0.0, 1.0
    while gaussian_epsilon(delta, hi) < epsilon and hi < 1e3:
        hi *= 2
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if gaussian_epsilon(delta, mid) < epsilon else (lo, mid)
    return hi


def detectable_leak(n_in: int, n_out: int, *, beta_view: float, alternative: str, config: DPSGDConfig,
                    delta: float = 1e-5, profile=None) -> dict:
    """What a two-sample audit of ``n_in`` + ``n_out`` runs catches about half the time.

    The scores of a typical sample of a Gaussian shift (the in-scores at the quantiles
    ``Phi^-1((i + 1/2) / n_in) + mu``, the out-scores at ``Phi^-1((j + 1/2) / n_out)``: a median
    sample, deterministic) are audited exactly as a view is (:func:`~dpaudit.scores.
    clopper_pearson_audit` at ``beta_view``, the epsilon bound at ``delta`` against the
    accountant's, and the privacy-profile check on ``profile``); the smallest ``mu`` that is
    caught is returned (bisection to 1%). A leak is "detectable at this cost" when some view's
    halves separate at least like that shift.

    Parameters
    ----------
    n_in, n_out : int
        Runs with and without the canary (``>= 2`` each).
    beta_view : float
        The level one view is audited at.
    alternative : {"greater", "two-sided"}
    config : DPSGDConfig
        The claim.
    delta : float
    profile : sequence of float, optional
        The profile grid (as the audit's).

    Returns
    -------
    dict
        ``mu`` (the smallest caught shift), ``epsilon`` (its GDP epsilon at ``delta``),
        ``claim_mu`` (the GDP ``mu`` with the accountant's epsilon at ``delta``: the claim's own
        Gaussian equivalent), ``accountant_epsilon``, ``delta``, ``runs``.

    Raises
    ------
    ValueError
        On counts below 2.
    """
    from ..privacy.profiles import gaussian_epsilon
    from ..scores import clopper_pearson_audit
    from scipy.special import ndtri

    n_in, n_out = check_int(n_in, "n_in", 2), check_int(n_out, "n_out", 2)
    acc = _claimed_epsilon(config, delta)
    base_in = ndtri((np.arange(n_in) + 0.5) / n_in)
    base_out = ndtri((np.arange(n_out) + 0.5) / n_out)
    comp = config.composition()

    def caught(mu):
        au = clopper_pearson_audit(base_in + mu, base_out, confidence=1 - beta_view, alternative=alternative)
        if au.epsilon_lower_bound(delta) > acc:
            return True
        return bool(profile is not None and profile_check(au, comp, profile)["violated"])

    lo, hi = 0.0, 1.0
    while not caught(hi) and hi < 64:
        lo, hi = hi, 2 * hi
    while hi - lo > 0.01 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if caught(mid) else (mid, hi)
    return {"mu": hi, "epsilon": float(gaussian_epsilon(delta, hi)), "claim_mu": _gaussian_claim_mu(acc, delta),
            "accountant_epsilon": acc, "delta": float(delta), "runs": n_in + n_out}


def audit_train_many(config: DPSGDConfig, *, max_runs: int = 20000, first_runs: int = 500, delta: float = 1e-5,
                     beta: float = 0.05, views=("black_box", "white_box"), profile="auto", seed: int = 0,
                     **train_kwargs) -> SequentialAudit:
    """:func:`train_many` in batches, audited after each (:func:`sequential_audit`), stopping at
    the first certified violation.

    Batch ``k`` is :func:`train_many` ``(config, runs=..., seed=seed, stream=k, **train_kwargs)``:
    the same public model and canaries, new independent runs; the looks are
    :func:`look_schedule` ``(first_runs, max_runs)``; each look audits the pooled runs with
    :func:`audit_many` at ``beta / (len(schedule) len(views))`` per view, with the privacy-profile
    check on ``profile``.

    Parameters
    ----------
    config : DPSGDConfig
    max_runs, first_runs : int
        The budget and the first look.
    delta, beta : float
        Delta of the epsilon bounds; overall failure probability (all looks and views).
    views : sequence of str
        Views of :func:`audit_many` (fixed before the first run).
    profile : "auto", sequence of float or None
        ``"auto"``: ``(0, eps/4, eps/2)`` with ``eps`` the accountant's epsilon at ``delta``.
    seed : int
    **train_kwargs
        Passed to :func:`train_many` (``variant``, ``data``, ``opposing``, ``canary``, ...).

    Returns
    -------
    SequentialAudit

    Raises
    ------
    ValueError
        As :func:`train_many` and :func:`audit_many`.
    """
    views = tuple(views)
    grid = _auto_grid(config, delta) if isinstance(profile, str) and profile == "auto" else profile
    if isinstance(grid, str):
        raise ValueError(f"profile must be 'auto', a grid of epsilons or None, got {profile!r}")

    def run_batch(k, runs):
        return train_many(config, runs=runs, seed=seed, stream=k, **train_kwargs)

    def audit(result, beta_look):
        a = audit_many(result, delta=delta, beta=beta_look / len(views), views=views, profile=grid)
        a["caught"] = bool(a["violated"] or a.get("profile_violated", False))
        a["views"] = views
        return a

    def detectable(result, beta_look):
        alt = "greater" if any(VIEW_ALTERNATIVES[v] == "greater" for v in views) else "two-sided"
        return detectable_leak(result.black_box_in.size, result.black_box_out.size, beta_view=beta_look / len(views),
                               alternative=alt, config=config, delta=delta, profile=grid)

    return sequential_audit(run_batch, audit, look_schedule(first_runs, max_runs), beta=beta, detectable=detectable)


def _auto_grid(config: DPSGDConfig, delta: float) -> tuple:
    """The profile grid ``(0, eps/4, eps/2)``, ``eps`` the accountant's at ``delta``: a function of
    the claim only, so fixed before looking (near ``eps`` the accountant's delta is near
    ``delta``, which the epsilon bound already tests)."""
    eps = _claimed_epsilon(config, delta)
    return (0.0, eps / 4, eps / 2)

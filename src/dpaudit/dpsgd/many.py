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

Both canaries are sampled at the real examples' Poisson rate when included. ``benchmarks/
dpsgd_many.py`` sets this against a Python loop over Opacus runs on the same task.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .._validate import check_int
from .reference import VARIANTS, DPSGDConfig, _task_tensors, load_digits_task

__all__ = ["ManyRuns", "audit_many", "train_many"]


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
    """

    black_box_in: np.ndarray
    black_box_out: np.ndarray
    white_box_in: np.ndarray
    white_box_out: np.ndarray
    config: DPSGDConfig
    variant: str
    seconds: float
    details: dict = field(default_factory=dict)


def _odd_digits():
    """The default task: 200 digits, label 1 for an odd digit."""
    x, y = load_digits_task(num_train=200)
    return x, y % 2


def _canary_input(x: np.ndarray) -> np.ndarray:
    """Ink (the data's maximum) on every pixel that is blank in all training images."""
    blank = x.max(axis=0) <= 0
    c = np.zeros(x.shape[1], dtype=np.float32)
    c[blank] = float(x.max()) if blank.any() else 0.0
    if not blank.any():  # no blank pixel: the negated mean image
        c = (-x.mean(axis=0)).astype(np.float32)
    return c


def train_many(config: DPSGDConfig, *, runs: int = 1000, variant: str = "correct", data=None, hidden: int = 0,
               chunk: int = 250, seed: int = 0, device: str = "cpu") -> ManyRuns:
    """Train ``runs`` DP-SGD models at once (half with the canaries) and score the canaries.

    Parameters
    ----------
    config : DPSGDConfig
        Claimed parameters and training settings (the same for every run).
    runs : int
        Number of runs ``>= 4``; the first ``runs // 2`` include the canaries.
    variant : str
        A key of :data:`~dpaudit.dpsgd.reference.VARIANTS` except ``"shuffled-batches"``.
    data : (x, y), optional
        Real examples; default :func:`~dpaudit.dpsgd.reference.load_digits_task` with 200
        examples and a binary label (odd digit).
    hidden : int
        0: logistic regression; else an MLP with one hidden layer of this width.
    chunk : int
        Runs vectorised together (memory: ``chunk x examples x parameters`` floats).
    seed : int
    device : str

    Returns
    -------
    ManyRuns

    Raises
    ------
    ValueError
        On fewer than 4 runs, an unsupported variant or bad data.

    References
    ----------
    Abadi et al. (2016) (DP-SGD); Nasr et al. (2023) (gradient canaries, many-run audits);
    Jagielski et al. (2020) (input canaries and final-model scores).
    """
    import torch
    from torch.func import functional_call, grad, vmap

    runs = check_int(runs, "runs", 4)
    if variant not in VARIANTS or variant == "shuffled-batches":
        raise ValueError(f"variant must be one of {sorted(set(VARIANTS) - {'shuffled-batches'})}, got {variant!r}")
    x_np, y_np, x, y, t0 = _task_tensors(data, _odd_digits, np.float32, device)
    rng = np.random.default_rng(seed)
    gen = torch.Generator(device=device).manual_seed(int(rng.integers(2**62)))
    n, feats = x_np.shape
    cx = torch.as_tensor(_canary_input(x_np), device=device)
    cy = torch.tensor(1.0, device=device)
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
    runs_in = runs // 2
    xs = torch.cat([x, cx.unsqueeze(0)])  # the input canary is example n
    ys = torch.cat([y, cy.unsqueeze(0)])
    bb, wb = [], []
    for start in range(0, runs, chunk):
        r = min(chunk, runs - start)
        with_canary = torch.as_tensor(np.arange(start, start + r) < runs_in, device=device)
        params = {k: v.unsqueeze(0).repeat(r, *([1] * v.dim())) for k, v in init.items()}
        expected = q * (n + with_canary.float())  # per run: real examples and the input canary
        obs = torch.zeros(T, r, device=device)
        fixed_seed = int(rng.integers(2**62))
        for t in range(T):
            g = per_run(params, xs, ys)
            flat = torch.cat([g[k].reshape(r, n + 1, -1) for k in names], dim=2)  # (r, n+1, d_model)
            take = (torch.rand(r, n + 1, generator=gen, device=device) < q) if q < 1 else torch.ones(r, n + 1, device=device, dtype=torch.bool)
            take[:, n] &= with_canary
            gc_take = ((torch.rand(r, generator=gen, device=device) < q) if q < 1 else torch.ones(r, dtype=torch.bool, device=device)) & with_canary
            if variant != "no-clipping":
                norms = flat.norm(dim=2, keepdim=True)
                flat = flat * torch.clamp(C / (norms + 1e-12), max=1.0)
            summed = (flat * take.unsqueeze(2).float()).sum(dim=1)  # (r, d_model)
            gsum = gc_take.float() * (cnorm if variant == "no-clipping" else min(C, cnorm))
            ng = torch.Generator(device=device).manual_seed(fixed_seed) if variant == "noise-reused" else gen
            noise = torch.randn(r, d_model + 1, generator=ng, device=device) * noise_sd
            noisy = summed + noise[:, :d_model]
            obs[t] = (gsum + noise[:, d_model]) / C
            off = 0
            new = {}
            for k in names:
                sz = init[k].numel()
                new[k] = params[k] - config.learning_rate * (noisy[:, off:off + sz] / expected.unsqueeze(1)).reshape(params[k].shape)
                off += sz
            params = new
        with torch.no_grad():
            logit = vmap(lambda p: functional_call(model, p, (cx.unsqueeze(0),)).reshape(()))(params)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logit, cy.expand(r), reduction="none")
        bb.append(-loss.cpu().numpy())
        from .audit import canary_scores

        wb.append(canary_scores(obs.cpu().numpy(), sigma, q, "lr"))
    bb_all, wb_all = np.concatenate(bb), np.concatenate(wb)
    return ManyRuns(black_box_in=bb_all[:runs_in], black_box_out=bb_all[runs_in:], white_box_in=wb_all[:runs_in],
                    white_box_out=wb_all[runs_in:], config=config, variant=variant, seconds=time.perf_counter() - t0,
                    details={"runs": runs, "runs_in": runs_in, "model_parameters": int(d_model), "num_train": int(n),
                             "hidden": hidden, "seed": seed, "device": device})


def audit_many(result: ManyRuns, *, delta: float = 1e-5, beta: float = 0.05) -> dict:
    """Certified two-sample bounds (:func:`dpaudit.scores.clopper_pearson_audit`, scores of
    included-canary runs leaning high) from the black-box and the white-box scores, each at
    ``beta``, next to the accountant's epsilon.

    Returns
    -------
    dict
        ``accountant_epsilon``; per view (``"black_box"``, ``"white_box"``): ``epsilon_lower_bound``
        and ``mu_lower_bound`` (certified), ``violated``.
    """
    from ..accounting import get_epsilon
    from ..scores import clopper_pearson_audit

    acc = float(get_epsilon(result.config.composition(), delta).epsilon)
    out = {"accountant_epsilon": acc, "runs": int(result.details["runs"]), "seconds": result.seconds}
    for view, (a, b) in {"black_box": (result.black_box_in, result.black_box_out),
                         "white_box": (result.white_box_in, result.white_box_out)}.items():
        au = clopper_pearson_audit(a, b, confidence=1 - beta, alternative="greater")
        e = au.epsilon_lower_bound(delta)
        out[view] = {"epsilon_lower_bound": e, "mu_lower_bound": au.mu_lower_bound, "violated": bool(e > acc)}
    return out

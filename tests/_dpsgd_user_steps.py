"""DP-SGD steps as a user writes them in plain PyTorch for the many-run harness
(:mod:`dpaudit.dpsgd.harness`): a correct step and bugs that couple examples through the batch,
shared by ``tests/test_dpsgd_harness.py`` and ``benchmarks/dpsgd_harness.py``.

Every step has the harness's contract ``step(params (D,), data (N, D), generator) -> params``:
Poisson sampling at ``q`` (``torch.rand(N, generator=generator) < q``), the harness's linear loss
(each row *is* its example's gradient), clipping to ``C``, Gaussian noise, division by a public
constant ``batch_size`` (the user's expected batch size, a hyperparameter: never computed from
the data), a learning rate. Each is stateless (nothing survives between steps) and, except the
ones marked ``loop``, traces under ``torch.func.vmap`` (masks, cumulative sums and one-hot
matrices instead of data-dependent shapes).

The bugs are written for their *class* (:data:`CLASSES`), several per class, none for a given
dataset: each reads the rows it is given and samples them like any other row.
"""

from __future__ import annotations

import torch

C = 1.0
LR = 0.1
BATCH_SIZE = 8.0

#: bug -> (class, what the user's code does)
USER_STEPS = {
    "correct": ("control", "per-example clipping to C, noise sigma C, divided by the public batch size"),
    # examples coupled through the batch's clipping
    "batch-clip": ("coupled clipping", "the sampled batch's summed gradient clipped to C as a whole"),
    "group-clip-2": ("coupled clipping", "consecutive pairs of sampled rows, each pair's sum clipped to C"),
    "group-clip-4-index": ("coupled clipping", "groups of 4 consecutive rows of the dataset (by index), "
                           "each group's sampled sum clipped to C"),
    "group-clip-3": ("coupled clipping", "consecutive triples of sampled rows, each triple's sum clipped to C"),
    "group-clip-8-index": ("coupled clipping", "groups of 8 consecutive rows of the dataset (by index), each "
                           "group's sampled sum clipped to C"),
    "strided-clip-4": ("coupled clipping", "4 interleaved micro-batches (sampled rows i, i + 4, i + 8, ...: "
                       "batch[i::4]), each micro-batch's sum clipped to C"),
    "microbatch-3": ("coupled clipping", "data[mask].split(3): micro-batches of 3 sampled rows, each "
                     "micro-batch's sum clipped to C (loop: not vmappable)"),
    # a clip factor or clip norm shared by the batch
    "shared-factor-max": ("shared clip factor", "one factor min(1, C / largest sampled norm) for every row"),
    "shared-factor-mean": ("shared clip factor", "one factor min(1, C / mean sampled norm) for every row"),
    "adaptive-clip": ("shared clip factor", "each row clipped to the batch's mean norm (non-private "
                      "adaptive clipping); noise sigma C"),
    # normalisation by a realised count or a data-dependent norm
    "realised-batch": ("data-dependent normalisation", "divided by the realised batch size max(|B|, 1)"),
    "dataset-size": ("data-dependent normalisation", "divided by q * len(data) (the dataset's realised size)"),
    "norm-normalised": ("data-dependent normalisation", "divided by max(1, sum of the sampled clipped norms / C)"),
    # noise whose scale or support depends on the data
    "noise-max-norm": ("noise scaled by data", "noise sigma * (largest sampled clipped norm) instead of sigma C"),
    "noise-per-example": ("noise scaled by data", "each sampled row gets noise sigma C / sqrt(batch_size): "
                          "variance grows with |B|"),
    "noise-touched": ("noise scaled by data", "noise only on coordinates some sampled row touches"),
    # special paths for some records
    "first-unclipped": ("special path", "the first sampled row left unclipped (a loop from index 1)"),
    "last-unclipped": ("special path", "the last sampled row left unclipped (a remainder not clipped)"),
    "outlier-path": ("special path", "rows of norm above 10 C rescaled to 10 C (an 'outlier' branch), the "
                     "others clipped to C"),
}
CLASSES = tuple(dict.fromkeys(c for c, _ in USER_STEPS.values()))
#: Steps that do not trace under vmap (data-dependent shapes): the harness runs them in a loop.
LOOP_STEPS = frozenset({"microbatch-3"})


def _grads(params, data):
    """Per-example gradients of the linear loss <params, x>: the rows (what
    ``torch.func.vmap(torch.func.grad(linear_loss), in_dims=(None, 0))`` returns, without its
    one-time start-up cost)."""
    return data + 0.0 * params


def _clip(g, c=C):
    return g * torch.clamp(c / (g.norm(dim=-1, keepdim=True) + 1e-12), max=1.0)


def make_user_step(bug: str, *, q: float, sigma: float):
    """The user's step for ``bug`` (a key of :data:`USER_STEPS`) at the claimed ``q`` and ``sigma``."""
    if bug not in USER_STEPS:
        raise ValueError(f"unknown bug {bug!r}")

    def step(params, data, generator):
        n = data.shape[0]
        take = (torch.rand(n, generator=generator) < q).to(params.dtype)  # Poisson sampling
        g = _grads(params, data)
        noise = torch.randn(params.shape, generator=generator)
        sd = sigma * C
        divisor = BATCH_SIZE
        norms = g.norm(dim=1)
        if bug == "batch-clip":
            total = _clip((take[:, None] * g).sum(0))
        elif bug in ("group-clip-2", "group-clip-3", "strided-clip-4"):
            rank = torch.cumsum(take, 0) - 1  # position in the sampled batch
            gid = torch.remainder(rank, 4) if bug == "strided-clip-4" else torch.div(
                rank, int(bug[-1]), rounding_mode="floor")
            onehot = (gid[:, None] == torch.arange(n, dtype=params.dtype)[None, :]).to(params.dtype) * take[:, None]
            total = _clip(onehot.T @ g).sum(0)
        elif bug in ("group-clip-4-index", "group-clip-8-index"):
            k = int(bug.split("-")[2])
            pad = (-n) % k
            rows = torch.cat([take[:, None] * g, torch.zeros(pad, g.shape[1], dtype=g.dtype) + 0.0 * params])
            total = _clip(rows.reshape(-1, k, g.shape[1]).sum(1)).sum(0)
        elif bug == "microbatch-3":
            batch = g[take.bool()]
            total = sum((_clip(mb.sum(0)) for mb in batch.split(3)), torch.zeros_like(params))
        elif bug in ("shared-factor-max", "shared-factor-mean"):
            big = (norms * take).max() if bug == "shared-factor-max" else (norms * take).sum() / torch.clamp(
                take.sum(), min=1.0)
            total = (take[:, None] * g).sum(0) * torch.clamp(C / (big + 1e-12), max=1.0)
        elif bug == "adaptive-clip":
            c_t = (norms * take).sum() / torch.clamp(take.sum(), min=1.0)
            total = (take[:, None] * _clip(g, c_t)).sum(0)
        elif bug == "first-unclipped" or bug == "last-unclipped":
            cs = torch.cumsum(take, 0)
            special = take * ((cs == 1) if bug == "first-unclipped" else (cs == take.sum())).to(params.dtype)
            total = ((take - special)[:, None] * _clip(g) + special[:, None] * g).sum(0)
        elif bug == "outlier-path":
            factor = torch.where(norms > 10 * C, 10 * C / (norms + 1e-12), torch.clamp(C / (norms + 1e-12), max=1.0))
            total = (take[:, None] * g * factor[:, None]).sum(0)
        else:
            total = (take[:, None] * _clip(g)).sum(0)
        if bug == "realised-batch":
            divisor = torch.clamp(take.sum(), min=1.0)
        elif bug == "dataset-size":
            divisor = q * n
        elif bug == "norm-normalised":
            divisor = torch.clamp((take * _clip(g).norm(dim=1)).sum() / C, min=1.0)
        if bug == "noise-max-norm":
            noise = noise * sigma * (take * _clip(g).norm(dim=1)).max()
        elif bug == "noise-per-example":
            noise = noise * sd * torch.sqrt(take.sum() / BATCH_SIZE)
        elif bug == "noise-touched":
            noise = noise * sd * ((take[:, None] * g).abs().sum(0) > 0).to(params.dtype)
        else:
            noise = noise * sd
        return params - LR * (total + noise) / divisor

    step.__name__ = f"user_step_{bug.replace('-', '_')}"
    return step

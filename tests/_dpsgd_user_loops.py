"""DP-SGD steps as a user writes them (NumPy, no Opacus), correct and with the bugs of
``docs/dpsgd.md`` §7, audited through :class:`dpaudit.dpsgd.Canaries` (shared by the tests and
``benchmarks/dpsgd_canary_kinds.py``)."""

from __future__ import annotations

import numpy as np

from dpaudit.dpsgd import Canaries, load_digits_task, noise_for_epsilon

#: Bug classes of a user's step: how it clips, what it divides by, how it samples.
USER_BUGS = {
    "correct": "per-example clipping of the whole gradient to C, noise sigma C, divided by q N",
    "per-layer": "each parameter tensor clipped to C on its own, noise sigma C for one overall norm",
    "unclipped-last": "the last row of every batch left unclipped (an off-by-one in a micro-batch loop)",
    "fast-clip": "a fast clipping path that clips to 1 whatever max_grad_norm says (Opacus #664)",
    "realised-batch": "the noisy sum divided by the realised number of rows instead of q N (Opacus #819)",
    "noise-reused": "a noise generator re-seeded before every step: the same noise vector at every step",
}
#: How the user's loader draws a step's batch (the accountant assumes "poisson").
USER_SAMPLERS = ("poisson", "shuffle", "shuffle-drop-last", "weighted")


def mlp_init(widths, rng):
    """Parameters ``[W1, b1, W2, b2, ...]`` of a tanh MLP with the given layer widths."""
    out = []
    for a, b in zip(widths[:-1], widths[1:]):
        out += [rng.normal(0.0, 1.0 / np.sqrt(a), (b, a)), np.zeros(b)]
    return out


def mlp_per_example_grads(params, x, y):
    """Per-example gradients of the cross-entropy of a tanh MLP, one ``(B, *shape)`` array per parameter."""
    hs = [x]
    for i in range(0, len(params) - 2, 2):
        hs.append(np.tanh(hs[-1] @ params[i].T + params[i + 1]))
    z = hs[-1] @ params[-2].T + params[-1]
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(y)), y] -= 1.0
    grads = []
    d = p
    for i in range(len(params) - 2, -1, -2):
        h = hs[i // 2]
        grads = [d[:, :, None] * h[:, None, :], d] + grads
        if i:
            d = (d @ params[i]) * (1.0 - h * h)
    return grads


def user_step(rows, *, bug, C, sigma, divisor, rng):
    """Clip, sum, noise, divide: the user's own DP-SGD step on ``rows`` (list of ``(n, *shape)``)."""
    n = rows[0].shape[0]
    if bug == "per-layer":
        rows = [r * np.minimum(1.0, C / (np.linalg.norm(r.reshape(n, -1), axis=1) + 1e-12)).reshape(-1, *[1] * (r.ndim - 1))
                for r in rows]
    else:
        norms = np.sqrt(sum(np.square(r.reshape(n, -1)).sum(axis=1) for r in rows))
        f = np.minimum(1.0, (1.0 if bug == "fast-clip" else C) / (norms + 1e-12))
        if bug == "unclipped-last" and n:
            f[-1] = 1.0
        rows = [r * f.reshape(-1, *[1] * (r.ndim - 1)) for r in rows]
    d = max(1, n) if bug == "realised-batch" else divisor
    if bug == "noise-reused":
        rng = np.random.default_rng(1234)
    return [(r.sum(axis=0) + rng.normal(0.0, sigma * C, r.shape[1:])) / d for r in rows]


def user_batches(sampler, N, q, steps, rng):
    """The dataset indices of each step's batch from the user's loader over ``N`` examples."""
    B = max(1, int(round(q * N)))
    if sampler == "poisson":
        return [np.flatnonzero(rng.random(N) < q) for _ in range(steps)]
    if sampler == "weighted":  # torch's WeightedRandomSampler: with replacement, weights of the loader
        w = rng.uniform(0.2, 1.8, N)
        return [rng.choice(N, size=B, p=w / w.sum()) for _ in range(steps)]
    out, drop = [], sampler == "shuffle-drop-last"
    while len(out) < steps:
        order = rng.permutation(N)
        cuts = range(0, N - B + 1 if drop else N, B)
        out += [order[c:c + B] for c in cuts]
    return out[:steps]


def run_user_loop(bug="correct", *, sigma=None, epsilon=2.0, q=1.0, steps=10, n=100, canaries=1500, kinds=None,
                  widths=(64, 16, 10), C=1.0, sampler="poisson", data_canaries=None, seed=0, lr=0.5):
    """Train an MLP on digits with the user's step; return the :class:`Canaries` that watched it.

    ``sigma`` (default: the noise for ``epsilon`` at ``delta = 1e-5``) is claimed under the accountant's Poisson
    sampling at rate ``q`` for ``steps`` steps; with ``"data"`` among ``kinds`` the canaries are
    extra dataset entries drawn by the user's ``sampler`` like the real ones."""
    rng = np.random.default_rng(seed + 1000)
    x, y = load_digits_task(num_train=n, seed=seed)
    params = mlp_init(list(widths), rng)
    sigma = noise_for_epsilon(epsilon, 1e-5, q, steps) if sigma is None else sigma
    data = kinds is not None and "data" in kinds
    can = Canaries(params, noise_multiplier=sigma, max_grad_norm=C, sampling_rate=q, canaries=canaries, kinds=kinds,
                   dataset_size=n if data else None, data_canaries=data_canaries, batch_divisor=q * n, seed=seed)
    N = n + can.data_indices.size
    batches = user_batches(sampler, N, q, steps, rng) if data else None
    for t in range(steps):
        if data:
            step = can.begin_step(batch_indices=batches[t])
            real = batches[t][step.real_mask]
        else:
            real = np.flatnonzero(rng.random(n) < q) if q < 1 else np.arange(n)
            step = can.begin_step(batch_size=real.size)
        rows = step.insert(mlp_per_example_grads(params, x[real], y[real]))
        update = user_step(rows, bug=bug, C=C, sigma=sigma, divisor=q * n, rng=rng)
        can.observe(update)
        params = [p - lr * u for p, u in zip(params, update)]
    return can

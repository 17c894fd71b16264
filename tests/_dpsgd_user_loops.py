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


# --- The accountant's assumptions, one bug class each (issue 45; docs/dpsgd.md §10) -------------------------------
#
# The setting: a linear model whose 4 parameter tensors (``size`` coordinates each) are read as one vector;
# ``n`` real examples whose per-example gradients share a common direction (x_i = mu + 0.5 xi_i, so every
# gradient (x_i . theta - y_i) x_i leans along mu, as real gradients do); the user's own NumPy DP-SGD step
# written outside dpaudit, handed the rows by ``Canaries`` and handing back the noisy gradient.

#: Bug classes of a user's step, by the assumption of the accountant they break.
ASSUMPTION_BUGS = {
    "correct": ("none", "flat clipping to C (rows with a non-finite norm dropped), noise sigma C, divided by q N"),
    "no-clipping": ("clipping", "per-example gradients not clipped"),
    "per-layer": ("clipping", "each tensor clipped to C on its own, noise sigma C for one overall norm"),
    "unclipped-last": ("clipping", "the last row of every batch left unclipped (off by one)"),
    "fast-clip": ("clipping", "a clipping path that clips to 1 whatever max_grad_norm says (run with C = 0.25)"),
    "no-noise-step": ("noise", "no noise at one step (the middle one)"),
    "reduced-noise-step": ("noise", "half the noise at one step (the middle one)"),
    "no-noise-first-tensor": ("noise", "no noise on the model's first tensor, at every step"),
    "no-noise-last-tensor": ("noise", "no noise on the last tensor handed to the step (a dedicated one here)"),
    "noise-per-tensor": ("noise", "noise sigma C / sqrt(#tensors) on each tensor (calibrated as if split)"),
    "uniform-noise": ("noise", "bounded noise: uniform of standard deviation sigma C (lighter tails)"),
    "noise-reused": ("noise", "a noise generator re-seeded before every step: the same noise at every step"),
    "replacement": ("sampling", "batches drawn with replacement (q N draws; at q = 1, N draws)"),
    "shuffle": ("sampling", "shuffled fixed-size batches accounted as Poisson (q < 1 only)"),
    "grouped-2": ("coupling", "rows summed in consecutive groups of 2 before clipping (micro-batches)"),
    "grouped-4": ("coupling", "rows summed in consecutive groups of 4 before clipping"),
    "grouped-3": ("coupling", "rows summed in consecutive groups of 3 before clipping"),
    "grouped-8": ("coupling", "rows summed in consecutive groups of 8 before clipping"),
    "strided-4": ("coupling", "rows summed in strided groups of 4 (rows j, j + k, j + 2k, j + 3k; k = ceil(n / 4))"),
    "hashed-4": ("coupling", "rows summed in groups of 4 picked by a hash of the row's position (a fixed permutation)"),
    "grouped-16": ("coupling", "rows summed in consecutive groups of 16 before clipping"),
    "grouped-32": ("coupling", "rows summed in consecutive groups of 32 before clipping"),
    "grouped-64": ("coupling", "rows summed in consecutive groups of 64 before clipping"),
    "strided-16": ("coupling", "rows summed in strided groups of 16 (rows j, j + k, ..., j + 15k; k = ceil(n / 16))"),
    "hashed-16": ("coupling", "rows summed in groups of 16 picked by a hash of the row's position"),
    "realised-batch": ("scale", "the noisy sum divided by the realised number of rows, not q N"),
    "nan-propagated": ("nonfinite", "standard clipping code: a NaN row's factor is NaN and poisons every tensor"),
    "nonfinite-unclipped": ("nonfinite", "a non-finite norm treated as 0: the row is added unclipped"),
    "nonfinite-skip": ("nonfinite", "a step holding a non-finite gradient is skipped (cancel_step)"),
    "nonfinite-zero": ("nonfinite", "a step holding a non-finite gradient releases a zero update"),
    "nonfinite-drop-batch": ("nonfinite", "a step holding a non-finite gradient drops the batch, keeps the noise"),
}

#: The two settings of issue 45 (accountant epsilon 2.00 at delta 1e-5).
SETTINGS = {
    "q0.05": dict(q=0.05, steps=200, sigma=1.6728515625),  # noise_for_epsilon(2, 1e-5, 0.05, 200)
    "q1": dict(q=1.0, steps=100, sigma=19.953125),  # noise_for_epsilon(2, 1e-5, 1.0, 100)
}


def correlated_task(n=2000, size=16, tensors=4, seed=0):
    """``(x, y, theta_star)``: ``n`` examples of a linear regression over ``tensors * size`` features whose
    per-example gradients share the common direction ``mu`` (unit norm)."""
    rng = np.random.default_rng([seed, 45])
    d = size * tensors
    mu = rng.standard_normal(d)
    mu /= np.linalg.norm(mu)
    x = mu + 0.5 * rng.standard_normal((n, d)) / np.sqrt(d)
    theta = 3.0 * rng.standard_normal(d) / np.sqrt(d)
    y = x @ theta + 0.1 * rng.standard_normal(n)
    return x, y, theta


#: The grouped-clipping bugs: how a step forms its groups of ``g`` rows.
GROUP_BUGS = ("grouped", "strided", "hashed")


def group_labels(bug, n):
    """``(labels (n,), groups)``: the group of each of the ``n`` rows for a grouped-clipping bug
    ``"<how>-<g>"`` (:data:`GROUP_BUGS`): consecutive rows, rows ``k`` apart (``k = ceil(n / g)``, what
    ``reshape(g, k).sum(0)`` does), or consecutive in a permutation fixed by ``n`` (a hash of the position)."""
    how, _, g = bug.partition("-")
    g = int(g)
    k = -(-n // g)
    pos = np.arange(n)
    if how == "grouped":
        return pos // g, k
    if how == "strided":
        return pos % k, k
    perm = np.random.default_rng([n, 99]).permutation(n)
    lab = np.empty(n, dtype=np.int64)
    lab[perm] = pos // g
    return lab, k


def _norms(rows, n):
    return np.sqrt(sum(np.square(r.reshape(n, -1)).sum(axis=1) for r in rows))


def _expand(f, r):
    return f.reshape(-1, *[1] * (r.ndim - 1))


def assumption_step(rows, *, bug, C, sigma, divisor, rng, t, T, user_tensors):
    """The user's DP-SGD step on ``rows`` (list of ``(n, *shape)``: the model's tensors, then the dedicated
    ones), with the bug ``bug`` (:data:`ASSUMPTION_BUGS`). Returns the noisy gradient (a list of arrays) or
    ``None`` for a skipped step."""
    n = rows[0].shape[0]
    finite = np.ones(n, dtype=bool)
    for r in rows:
        finite &= np.isfinite(r.reshape(n, -1)).all(axis=1)
    has_nonfinite = not finite.all()
    if bug == "nonfinite-skip" and has_nonfinite:
        return None
    if bug == "per-layer":
        rows = [r * _expand(np.minimum(1.0, C / (np.linalg.norm(r.reshape(n, -1), axis=1) + 1e-12)), r) for r in rows]
    elif bug.startswith(GROUP_BUGS):
        lab, k = group_labels(bug, n)
        summed = []
        for r in rows:
            s = np.zeros((k, *r.shape[1:]), dtype=r.dtype)
            np.add.at(s, lab, np.where(_expand(finite, r), r, 0.0))
            summed.append(s)
        nm = _norms(summed, k)
        rows = [s * _expand(np.minimum(1.0, C / (nm + 1e-12)), s) for s in summed]
    elif bug != "no-clipping":
        with np.errstate(invalid="ignore", over="ignore"):
            norms = _norms(rows, n)
        if bug == "nonfinite-unclipped":
            norms = np.where(np.isfinite(norms), norms, 0.0)
        f = np.minimum(1.0, (1.0 if bug == "fast-clip" else C) / (norms + 1e-12))
        if bug == "unclipped-last" and n:
            f[-1] = 1.0
        if bug not in ("nan-propagated", "nonfinite-unclipped") and has_nonfinite:
            f = np.where(finite, f, 0.0)  # a careful step drops a row it cannot clip
            rows = [np.where(_expand(finite, r), r, 0.0) for r in rows]
        with np.errstate(invalid="ignore"):
            rows = [r * _expand(f, r) for r in rows]
    with np.errstate(invalid="ignore"):
        sums = [r.sum(axis=0) for r in rows]
    if bug == "nonfinite-drop-batch" and has_nonfinite:
        sums = [np.zeros_like(s) for s in sums]
    if bug == "noise-reused":
        rng = np.random.default_rng(1234)
    scale = np.full(len(sums), sigma * C)
    if bug == "no-noise-step" and t == T // 2:
        scale[:] = 0.0
    if bug == "reduced-noise-step" and t == T // 2:
        scale *= 0.5
    if bug == "no-noise-first-tensor":
        scale[0] = 0.0
    if bug == "no-noise-last-tensor":
        scale[-1] = 0.0
    if bug == "noise-per-tensor":
        scale /= np.sqrt(len(sums))
    if bug == "nonfinite-zero" and has_nonfinite:
        return [np.zeros_like(s) for s in sums]
    if bug == "uniform-noise":
        noise = [rng.uniform(-np.sqrt(3.0), np.sqrt(3.0), s.shape) * sc for s, sc in zip(sums, scale)]
    else:
        noise = [rng.normal(0.0, 1.0, s.shape) * sc for s, sc in zip(sums, scale)]
    d = max(1, n) if bug == "realised-batch" else divisor
    return [(s + z) / d for s, z in zip(sums, noise)]


def assumption_step_torch(rows, *, bug, C, sigma, divisor, gen, t, T, user_tensors):
    """:func:`assumption_step` written in PyTorch (the same bugs, torch ops only, noise from the
    ``torch.Generator`` ``gen``): ``rows`` a list of ``(n, *shape)`` torch tensors, as
    :meth:`~dpaudit.dpsgd.CanaryStep.insert` hands them back for torch input. Returns a list of
    tensors, or ``None`` for a skipped step."""
    import torch

    def norms_of(rs, k):
        return torch.sqrt(sum(r.reshape(k, -1).square().sum(dim=1) for r in rs))

    def expand(f, r):
        return f.reshape(-1, *[1] * (r.dim() - 1))

    n = rows[0].shape[0]
    finite = torch.ones(n, dtype=torch.bool)
    for r in rows:
        finite &= torch.isfinite(r.reshape(n, -1)).all(dim=1)
    has_nonfinite = not bool(finite.all())
    if bug == "nonfinite-skip" and has_nonfinite:
        return None
    if bug == "per-layer":
        rows = [r * expand((C / (r.reshape(n, -1).norm(dim=1) + 1e-12)).clamp(max=1.0), r) for r in rows]
    elif bug.startswith(GROUP_BUGS):
        lab, k = group_labels(bug, n)
        lab = torch.as_tensor(lab)
        summed = [r.new_zeros((k, *r.shape[1:])).index_add_(0, lab, torch.where(expand(finite, r), r,
                                                                                 torch.zeros_like(r)))
                  for r in rows]
        nm = norms_of(summed, k)
        rows = [s * expand((C / (nm + 1e-12)).clamp(max=1.0), s) for s in summed]
    elif bug != "no-clipping":
        norms = norms_of(rows, n)
        if bug == "nonfinite-unclipped":
            norms = torch.where(torch.isfinite(norms), norms, torch.zeros_like(norms))
        f = ((1.0 if bug == "fast-clip" else C) / (norms + 1e-12)).clamp(max=1.0)
        if bug == "unclipped-last" and n:
            f[-1] = 1.0
        if bug not in ("nan-propagated", "nonfinite-unclipped") and has_nonfinite:
            f = torch.where(finite, f, torch.zeros_like(f))  # a careful step drops a row it cannot clip
            rows = [torch.where(expand(finite, r), r, torch.zeros_like(r)) for r in rows]
        rows = [r * expand(f, r) for r in rows]
    sums = [r.sum(dim=0) for r in rows]
    if bug == "nonfinite-drop-batch" and has_nonfinite:
        sums = [torch.zeros_like(s) for s in sums]
    if bug == "noise-reused":
        gen = torch.Generator().manual_seed(1234)
    scale = [sigma * C] * len(sums)
    if bug == "no-noise-step" and t == T // 2:
        scale = [0.0] * len(sums)
    if bug == "reduced-noise-step" and t == T // 2:
        scale = [0.5 * s for s in scale]
    if bug == "no-noise-first-tensor":
        scale[0] = 0.0
    if bug == "no-noise-last-tensor":
        scale[-1] = 0.0
    if bug == "noise-per-tensor":
        scale = [s / len(sums) ** 0.5 for s in scale]
    if bug == "nonfinite-zero" and has_nonfinite:
        return [torch.zeros_like(s) for s in sums]
    if bug == "uniform-noise":
        noise = [(torch.rand(s.shape, generator=gen, dtype=s.dtype) * 2 - 1) * 3.0 ** 0.5 * sc
                 for s, sc in zip(sums, scale)]
    else:
        noise = [torch.randn(s.shape, generator=gen, dtype=s.dtype) * sc for s, sc in zip(sums, scale)]
    d = max(1, n) if bug == "realised-batch" else divisor
    return [(s + z) / d for s, z in zip(sums, noise)]


def assumption_batches(sampler, N, q, steps, rng):
    """Dataset indices of each step's batch over ``N`` entries: Poisson (``"poisson"``; every entry at
    ``q = 1``), with replacement (``"replacement"``: ``round(q N)`` uniform draws), or shuffled fixed-size
    batches (``"shuffle"``)."""
    if sampler == "poisson":
        return [np.flatnonzero(rng.random(N) < q) if q < 1 else np.arange(N) for _ in range(steps)]
    B = max(1, int(round(q * N)))
    if sampler == "replacement":
        return [rng.choice(N, size=B, replace=True) for _ in range(steps)]
    return user_batches(sampler, N, q, steps, rng)


def run_assumption_loop(bug="correct", setting="q0.05", *, seed=0, n=2000, size=16, canaries=3000,
                        data_canaries=1000, kinds=None, monitor=None, lr=0.1, steps=None, sigma=None, dtype=np.float32,
                        framework="numpy", **canary_kw):
    """Train the linear model of :func:`correlated_task` with the user's step (:func:`assumption_step`) for
    the bug ``bug`` in ``setting`` (:data:`SETTINGS`), every gradient row from ``Canaries`` (public API only;
    data canaries in the user's own loader); return the ``Canaries``. ``monitor``: keyword arguments of
    ``Canaries.monitor`` (the online audit; ``action="record"`` to run to the end). A ``bug`` ending in
    ``+nonfinite`` adds the ``"nonfinite"`` canaries (they are added anyway for the non-finite bugs).
    ``framework="torch"``: the user's step is :func:`assumption_step_torch` on torch tensors (float32)."""
    bug, _, extra = bug.partition("+")
    st = dict(SETTINGS[setting])
    q, T = st["q"], st["steps"] if steps is None else steps
    sigma = st["sigma"] if sigma is None else sigma
    C = 0.25 if bug == "fast-clip" else 1.0
    x, y, _ = correlated_task(n=n, size=size, seed=seed)
    rng = np.random.default_rng([seed, 1000])
    shapes = [(size,)] * 4
    if kinds is None:
        kinds = ("dirac", "split", "spread", "large", "paired", "data")
        if bug.startswith(("nan", "nonfinite")) or extra == "nonfinite":
            kinds = kinds + ("nonfinite",)
    can = Canaries(shapes, noise_multiplier=sigma, max_grad_norm=C, sampling_rate=q, canaries=canaries, kinds=kinds,
                   dataset_size=n if "data" in kinds else None,
                   data_canaries=data_canaries if "data" in kinds else None, batch_divisor=q * n, seed=seed,
                   **canary_kw)
    if monitor is not None:
        can.monitor(**{"steps": T, **monitor})
    if framework == "torch":
        import torch

        gen = torch.Generator().manual_seed(seed)
    elif framework != "numpy":
        raise ValueError(f"framework must be 'numpy' or 'torch', got {framework!r}")
    theta = np.zeros(size * 4)
    sampler = {"replacement": "replacement", "shuffle": "shuffle"}.get(bug, "poisson")
    N = n + can.data_indices.size
    batches = assumption_batches(sampler, N, q, T, rng) if "data" in kinds else None
    for t in range(T):
        if batches is not None:
            step = can.begin_step(batch_indices=batches[t])
            real = batches[t][step.real_mask]
        else:
            if sampler == "replacement":
                real = rng.choice(n, size=max(1, int(round(q * n))), replace=True)
            else:
                real = np.flatnonzero(rng.random(n) < q) if q < 1 else np.arange(n)
            step = can.begin_step(batch_size=real.size)
        xb = x[real]
        g = ((xb @ theta - y[real])[:, None] * xb).astype(dtype)
        if framework == "torch":
            gt = torch.as_tensor(g)
            rows = step.insert([gt[:, i * size:(i + 1) * size] for i in range(4)])
            update = assumption_step_torch(rows, bug=bug, C=C, sigma=sigma, divisor=q * n, gen=gen, t=t, T=T,
                                           user_tensors=4)
        else:
            rows = step.insert([g[:, i * size:(i + 1) * size] for i in range(4)])
            update = assumption_step(rows, bug=bug, C=C, sigma=sigma, divisor=q * n, rng=rng, t=t, T=T,
                                     user_tensors=4)
        if update is None:
            can.cancel_step()
            continue
        can.observe(update)
        theta = theta - lr * np.concatenate([(u.detach().numpy() if framework == "torch" else u).reshape(-1)
                                             for u in update[:4]])
    return can


#: Opacus ``DPOptimizer`` subclasses with a bug, by the names of :data:`ASSUMPTION_BUGS` (``"correct"`` is
#: Opacus's own optimizer; ``"nan-propagated"`` is Opacus's own too: its clipping lets a NaN row through),
#: and bugs of the user's loop around Opacus's own optimizer (:data:`OPACUS_LOOP_BUGS`).
OPACUS_BUGS = ("correct", "per-layer", "unclipped-last", "grouped-2", "no-noise-step", "no-noise-first-tensor",
               "noise-reused", "replacement", "shuffle", "realised-batch", "nan-propagated", "correct-adaclip")
#: Bugs of the loop, not of the optimizer: a noise generator re-created before every step
#: (``optimizer.generator = torch.Generator().manual_seed(...)``), a loader drawing with replacement
#: (``RandomSampler(replacement=True)``, ``poisson_sampling=False``), shuffled fixed-size batches
#: (``make_private(poisson_sampling=False)`` with ``shuffle=True``; ``q < 1`` only), all accounted as Poisson.
OPACUS_LOOP_BUGS = ("noise-reused", "replacement", "shuffle")
#: ``"correct-adaclip"``: Opacus's ``AdaClipDPOptimizer`` (``make_private(clipping="adaptive")``, the
#: quantile-tracking clipping norm of Andrew et al. 2021), a correct step whose clipping norm changes at
#: every step: learning rate 0.2 (geometric update, the paper's), the noisy unclipped count's standard
#: deviation a twentieth of the expected batch (the paper's advice), the norm kept in [0.1, 10] (C starts
#: at 1). The target: a tenth of the batch's rows unclipped (dpaudit's rows, clipped whatever the norm, are
#: most of the batch; the norm follows the real rows' gradients).
ADACLIP = dict(target_unclipped_quantile=0.1, clipbound_learning_rate=0.2, max_clipbound=10.0, min_clipbound=0.1,
               unclipped_num_std=1 / 20)


def opacus_bug_class(bug, steps):
    """A ``DPOptimizer`` subclass with ``bug`` (``None`` for Opacus's own)."""
    import torch
    from opacus.optimizers import DPOptimizer

    if bug in ("correct", "nan-propagated", "correct-adaclip") + OPACUS_LOOP_BUGS:
        return None

    class Buggy(DPOptimizer):
        _t = 0

        def clip_and_accumulate(self):
            gs = [self._get_flat_grad_sample(p) for p in self.params]
            n = len(gs[0])
            if bug == "grouped-2":
                k = -(-n // 2)
                gs = [torch.cat([g, g.new_zeros((2 * k - n, *g.shape[1:]))]).reshape(k, 2, *g.shape[1:]).sum(1)
                      for g in gs]
            norms = torch.stack([g.reshape(len(g), -1).norm(dim=1) for g in gs], dim=1)
            if bug == "per-layer":
                factors = [(self.max_grad_norm / (norms[:, i] + 1e-6)).clamp(max=1.0) for i in range(len(gs))]
            else:
                f = (self.max_grad_norm / (norms.norm(dim=1) + 1e-6)).clamp(max=1.0)
                if bug == "unclipped-last" and len(f):
                    f[-1] = 1.0
                factors = [f] * len(gs)
            for p, g, f in zip(self.params, gs, factors):
                grad = torch.einsum("i,i...", f.to(p.dtype), g.to(p.dtype))
                p.summed_grad = grad if p.summed_grad is None else p.summed_grad + grad

        def add_noise(self):
            Buggy._t += 1
            for i, p in enumerate(self.params):
                std = self.noise_multiplier * self.max_grad_norm
                if (bug == "no-noise-step" and Buggy._t == steps // 2) or (bug == "no-noise-first-tensor" and i == 0):
                    std = 0.0
                noise = torch.normal(0.0, std, p.summed_grad.shape, generator=self.generator) if std else 0.0
                p.grad = (p.summed_grad + noise).view_as(p)

        def scale_grad(self):
            if bug == "realised-batch":
                for p in self.params:
                    p.grad /= max(1, len(self._get_flat_grad_sample(p)))
            else:
                super().scale_grad()

    return Buggy


def run_opacus_assumption_loop(bug="correct", setting="q0.05", *, seed=0, n=2000, size=16, canaries=3000,
                               data_canaries=1000, monitor=None, lr=0.1, steps=None, kinds=None):
    """The setting of :func:`run_assumption_loop` in an Opacus loop: the same linear model as a ``torch.nn``
    module of 4 tensors, Opacus's ``PrivacyEngine`` (Poisson ``DPDataLoader`` at ``q < 1``, the whole
    dataset at ``q = 1``), the bug as a ``DPOptimizer`` subclass (:func:`opacus_bug_class`), and
    ``OpacusCanaries`` with data canaries drawn by Opacus's loader. Returns the ``OpacusCanaries``."""
    import warnings

    import torch
    from opacus import PrivacyEngine

    from dpaudit.dpsgd.opacus import OpacusCanaries

    warnings.filterwarnings("ignore")
    st = dict(SETTINGS[setting])
    q, T, sigma = st["q"], st["steps"] if steps is None else steps, st["sigma"]
    x, y, _ = correlated_task(n=n, size=size, seed=seed)
    m_data = data_canaries
    xs = torch.cat([torch.tensor(x, dtype=torch.float32), torch.zeros(m_data, x.shape[1])])
    ys = torch.cat([torch.tensor(y, dtype=torch.float32), torch.zeros(m_data)])
    data = torch.utils.data.TensorDataset(xs, ys, torch.arange(n + m_data))
    torch.manual_seed(seed)

    class Linear4(torch.nn.Module):  # four (1, size) weight tensors read as one linear model
        def __init__(self):
            super().__init__()
            self.parts = torch.nn.ModuleList([torch.nn.Linear(size, 1, bias=False) for _ in range(4)])
            for p in self.parts:
                torch.nn.init.zeros_(p.weight)

        def forward(self, xb):
            return sum(m(xb[:, i * size:(i + 1) * size])[:, 0] for i, m in enumerate(self.parts))

    model = Linear4()
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    N = n + m_data
    B = max(1, int(round(q * N)))
    if bug == "replacement":  # N draws with replacement per epoch, batches of B (Opacus: sample rate B / N)
        loader = torch.utils.data.DataLoader(data, batch_size=B, sampler=torch.utils.data.RandomSampler(
            data, replacement=True, num_samples=N, generator=torch.Generator().manual_seed(seed)))
    else:
        loader = torch.utils.data.DataLoader(data, batch_size=B, shuffle=bug == "shuffle",
                                             generator=torch.Generator().manual_seed(seed) if bug == "shuffle" else None)
    ada = {}
    if bug == "correct-adaclip":  # Opacus's AdaClipDPOptimizer (Andrew et al. 2021), a correct step (ADACLIP)
        ada = dict(ADACLIP, clipping="adaptive", unclipped_num_std=ADACLIP["unclipped_num_std"] * q * N)
    model, opt, loader = PrivacyEngine().make_private(module=model, optimizer=opt, data_loader=loader,
                                                      noise_multiplier=sigma, max_grad_norm=1.0,
                                                      poisson_sampling=q < 1 and bug not in OPACUS_LOOP_BUGS[1:], **ada)
    cls = opacus_bug_class(bug, T)
    if cls is not None:
        opt.__class__ = cls
    opt.generator = torch.Generator().manual_seed(seed)
    if kinds is None:
        kinds = ("dirac", "split", "spread", "large", "paired", "data") + (("nonfinite",) if bug == "nan-propagated"
                                                                          else ())
    hook = OpacusCanaries(opt, canaries=canaries, sampling_rate=q, seed=seed, kinds=kinds, dataset_size=n,
                          data_canaries=m_data)
    if monitor is not None:
        hook.monitor(**{"steps": T, **monitor})
    t, norms = 0, []
    while t < T:
        for xb, yb, ib in loader:
            if t >= T:
                break
            opt.zero_grad()
            (0.5 * (model(xb) - yb).square()).mean().backward()
            if bug == "noise-reused":  # the slip: a generator re-created in the loop, the same noise every step
                opt.generator = torch.Generator().manual_seed(seed)
            norms.append(float(opt.max_grad_norm))
            hook.step(batch_indices=ib)
            t += 1
    hook.clip_norms = norms  # the clipping norm of every step (changes with "correct-adaclip")
    return hook

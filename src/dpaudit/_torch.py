"""Torch pieces written once: the check of a device name (trained estimators and the Monte Carlo
torch backend), the thread setting, the MLP, the one training loop and batched evaluation of the
trained estimators (:class:`~dpaudit.estimators.ClassifierHockeyStick`,
:class:`~dpaudit.estimators.VariationalRenyi`).

torch is imported inside the functions, so importing this module stays cheap.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterable, Iterator

import numpy as np

from ._validate import check_int, check_positive, check_probability

__all__ = ["check_device", "check_training", "epoch_batches", "mlp", "predict", "torch_threads", "train"]


def check_device(device) -> str:
    """Validate a torch device and return its canonical name, importing torch only when needed.

    Parameters
    ----------
    device : str or torch.device
        'cpu' (no torch import), 'cuda', 'cuda:N', 'mps', or a ``torch.device``.

    Returns
    -------
    str
        The device's name, e.g. ``'cuda:0'``.

    Raises
    ------
    ValueError
        For a name torch does not know, CUDA requested where this PyTorch build or machine has
        none (the message names the torch version), a CUDA index beyond the visible devices, or
        MPS where it is unavailable.
    """
    if isinstance(device, str) and device == "cpu":
        return "cpu"
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device={device!r} is not a torch device ({exc})") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"device={str(device)!r} was requested but CUDA is not available "
                f"(torch {torch.__version__}{', a CPU-only build' if torch.version.cuda is None else ''}); "
                "use --device cpu"
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device={str(device)!r}: only {torch.cuda.device_count()} CUDA device(s) visible")
    if dev.type == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise ValueError(f"device={str(device)!r} was requested but MPS is not available")
    return str(dev)


@contextmanager
def torch_threads(num_threads: int | None):
    """Temporarily set torch's intra-op CPU threads to ``num_threads`` (no-op for None); the
    previous setting is restored on exit."""
    import torch

    if num_threads is None:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def mlp(in_features: int, hidden_sizes, activation):
    """``Linear -> activation -> ... -> Linear(., 1)``: an MLP with one output.

    Parameters
    ----------
    in_features : int
    hidden_sizes : sequence of int
        Widths of the hidden layers.
    activation : type
        A ``torch.nn`` module class, e.g. ``torch.nn.ReLU``.

    Returns
    -------
    torch.nn.Sequential
        Its layers are initialised from torch's global random stream, in order.
    """
    import torch

    layers: list = []
    width = in_features
    for h in hidden_sizes:
        layers += [torch.nn.Linear(width, h), activation()]
        width = h
    layers.append(torch.nn.Linear(width, 1))
    return torch.nn.Sequential(*layers)


def epoch_batches(n: int, batch_size: int, generator, device) -> Iterator:
    """Index batches of shuffled epochs over ``n`` rows, without end.

    Each epoch draws one ``torch.randperm(n, generator=generator)`` (lazily, when its first batch
    is asked for) and yields its consecutive slices of ``batch_size`` indices (the last may be
    shorter), moved to ``device``.
    """
    import torch

    steps_per_epoch = max(1, -(-n // batch_size))
    while True:
        perm = torch.randperm(n, generator=generator).to(device)
        for i in range(steps_per_epoch):
            yield perm[i * batch_size : (i + 1) * batch_size]


def train(
    build: Callable[[], "object"],
    loss: Callable[..., "object"],
    batches: Callable[["object"], Iterable],
    *,
    seed: int,
    steps: int,
    learning_rate: float,
    device,
):
    """The one training loop of the trained estimators: Adam, cosine-decayed to 0 over ``steps``.

    Inside ``torch.random.fork_rng`` (torch's global random state is left as it was), after
    ``torch.manual_seed(seed)``: ``build()`` makes the model (initialised from that seed), a CPU
    ``torch.Generator`` seeded with ``seed`` is handed to ``batches``, and each of ``steps``
    steps takes the next item of ``batches(generator)`` and minimises ``loss(model, *item)``.
    The draws happen in this order, so the same seed gives the same weights.

    Parameters
    ----------
    build : callable
        ``() -> torch.nn.Module``.
    loss : callable
        ``(model, *batch) -> scalar tensor``.
    batches : callable
        ``generator -> iterable of tuples`` (at least ``steps`` of them; only ``steps`` are drawn).
    seed : int
    steps : int
        Optimiser steps (>= 1).
    learning_rate : float
        Adam's initial learning rate.
    device : str or torch.device
        Where the model lives.

    Returns
    -------
    torch.nn.Module
        The trained model, in eval mode, on ``device``.
    """
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = build().to(device)
        opt = torch.optim.Adam(model.parameters(), lr=learning_rate)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
        gen = torch.Generator(device="cpu").manual_seed(seed)
        model.train()
        # zip stops on range first, so no batch beyond the last step is drawn
        for _, batch in zip(range(steps), batches(gen)):
            opt.zero_grad(set_to_none=True)
            loss(model, *batch).backward()
            opt.step()
            sched.step()
        model.eval()
    return model


def predict(fn: Callable, features, device, chunk: int = 65536, *, to_numpy: bool = True):
    """``fn`` of a trained model evaluated on ``features`` in chunks, without gradients.

    The chunks' outputs stay on ``device`` and are concatenated there; the result is copied to
    the host once (no host synchronisation per chunk).

    Parameters
    ----------
    fn : callable
        ``tensor (m, d) -> tensor (m,)``.
    features : ndarray or torch.Tensor, shape (n, d), float32
        A tensor already on ``device`` is used as it is (no copy).
    device : str or torch.device
    chunk : int, default 65536
        Rows per evaluation (bounds memory).
    to_numpy : bool, default True
        Return a float64 ndarray; False returns the float32 tensor on ``device``.

    Returns
    -------
    ndarray, shape (n,), float64 (or a tensor on ``device`` with ``to_numpy=False``)
    """
    import torch

    feats = features if torch.is_tensor(features) else torch.from_numpy(features)
    feats = feats.to(device)
    with torch.no_grad():
        out = [fn(feats[i : i + chunk]) for i in range(0, len(feats), chunk)]
        res = torch.cat(out) if out else torch.zeros(0, device=feats.device)
    if not to_numpy:
        return res
    return res.cpu().numpy().astype(np.float64)


def check_training(
    *, epochs, batch_size, max_steps, learning_rate, train_fraction, device, num_threads
) -> dict:
    """The checked training hyper-parameters of a trained estimator, as attributes to set.

    Parameters
    ----------
    epochs, batch_size, max_steps : int
        Each ``>= 1``.
    learning_rate : float
        ``> 0``.
    train_fraction : float
        In ``(0, 1)``.
    device : str or torch.device
        See :func:`check_device`.
    num_threads : int or None
        ``>= 1``, or None (keep torch's setting).

    Returns
    -------
    dict
        ``{"epochs": int, "batch_size": int, "learning_rate": float, "max_steps": int,
        "train_fraction": float, "device": str, "num_threads": int or None}``.

    Raises
    ------
    ValueError
        Naming the first invalid argument and its value.
    """
    return {
        "epochs": check_int(epochs, "epochs"),
        "batch_size": check_int(batch_size, "batch_size"),
        "learning_rate": check_positive(learning_rate, "learning_rate"),
        "max_steps": check_int(max_steps, "max_steps"),
        "train_fraction": check_probability(train_fraction, "train_fraction"),
        "device": check_device(device),
        "num_threads": None if num_threads is None else check_int(num_threads, "num_threads"),
    }

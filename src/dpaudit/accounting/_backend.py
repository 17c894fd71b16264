"""Array backends (NumPy, PyTorch) and the portable counter-based random numbers they share.

Every random number the Monte Carlo accountant uses is a pure function of a 64-bit key and a
64-bit counter: ``u = finalize(counter * GAMMA XOR key)``, where ``finalize`` is the SplitMix64
output function (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
OOPSLA 2014) and ``GAMMA`` its odd increment. The counter names one coordinate of one sample,
one "slot" (which uniform of that coordinate) and one "round" (rejection-sampling retry), so

* the NumPy and the torch backends (CPU or CUDA) draw bit-identical uniforms for the same key,
  and their results agree up to floating-point tolerance (only the transcendental functions
  differ in their last bits);
* results do not depend on chunk sizes or on the order in which blocks are processed.

Uniforms are ``((z >> 11) + 0.5) * 2**-53`` (53 random bits, never 0 or 1); normals are
``ndtri(u)`` (inverse normal CDF), so standard normals are truncated at about +-8.3.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

MASK64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
_C1 = 0xBF58476D1CE4E5B9
_C2 = 0x94D049BB133111EB
#: uniforms per coordinate (slots) and rejection rounds per coordinate the counter layout allows
SLOTS = 8
ROUNDS = 1024


def _signed(x: int) -> int:
    x &= MASK64
    return x - (1 << 64) if x >= (1 << 63) else x


def splitmix64(x: int) -> int:
    """SplitMix64 output function on a Python int (used to derive keys)."""
    z = (x + GAMMA) & MASK64
    z = ((z ^ (z >> 30)) * _C1) & MASK64
    z = ((z ^ (z >> 27)) * _C2) & MASK64
    return z ^ (z >> 31)


def key_from_rng(rng) -> int:
    """A 64-bit key drawn from ``rng`` (a Generator, an int seed, or None for OS entropy)."""
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    hi = int(gen.integers(0, 1 << 32, dtype=np.int64))
    lo = int(gen.integers(0, 1 << 32, dtype=np.int64))
    return splitmix64((hi << 32) | lo)


class NumpyOps:
    """NumPy implementation of the few array operations the sampler needs (float64 throughout)."""

    name = "numpy"
    device = "cpu"
    xp = np

    def __init__(self) -> None:
        self._gamma = np.uint64(GAMMA)
        self._c1 = np.uint64(_C1)
        self._c2 = np.uint64(_C2)

    # --- counters and uniforms ---------------------------------------------------------------
    def counters(self, samples, steps, n_steps_total: int):
        """Base counters ``samples[:, None] * n_steps_total + steps[None, :]`` as uint64."""
        s = np.asarray(samples, dtype=np.uint64)
        j = np.asarray(steps, dtype=np.uint64)
        return s[:, None] * np.uint64(n_steps_total) + j[None, :]

    def uniform(self, base, key: int, slot: int, rnd: int = 0):
        """Uniforms in (0, 1) for the counters ``base * SLOTS * ROUNDS + rnd * SLOTS + slot``."""
        z = base * np.uint64(SLOTS * ROUNDS)
        z += np.uint64(rnd * SLOTS + slot)
        z *= self._gamma
        z ^= np.uint64(key & MASK64)
        z ^= z >> np.uint64(30)
        z *= self._c1
        z ^= z >> np.uint64(27)
        z *= self._c2
        z ^= z >> np.uint64(31)
        z >>= np.uint64(11)
        u = z.astype(np.float64)
        u += 0.5
        u *= 2.0 ** -53
        return u

    # --- arithmetic ---------------------------------------------------------------------------
    def asarray(self, x):
        return np.asarray(x, dtype=np.float64)

    def to_numpy(self, x) -> np.ndarray:
        return np.asarray(x)

    def full(self, shape, value: float):
        return np.full(shape, value, dtype=np.float64)

    def ndtri(self, u):
        return special.ndtri(u)

    def log_ndtr(self, x):
        return special.log_ndtr(x)

    @staticmethod
    def maximum(a, b):
        return np.maximum(a, b)

    @staticmethod
    def max(x, axis):
        return np.max(x, axis=axis)

    exp = staticmethod(np.exp)
    log = staticmethod(np.log)
    log1p = staticmethod(np.log1p)
    expm1 = staticmethod(np.expm1)
    logaddexp = staticmethod(np.logaddexp)
    abs = staticmethod(np.abs)
    sqrt = staticmethod(np.sqrt)

    @staticmethod
    def where(c, a, b):
        return np.where(c, a, b)

    @staticmethod
    def clip(x, lo, hi):
        return np.clip(x, lo, hi)

    @staticmethod
    def sum(x, axis=None):
        return np.sum(x, axis=axis)

    @staticmethod
    def logsumexp(x, axis):
        return special.logsumexp(x, axis=axis)

    @staticmethod
    def searchsorted(edges, u):
        return np.searchsorted(edges, u, side="right")

    @staticmethod
    def take(values, idx):
        return np.asarray(values)[idx]

    @staticmethod
    def any(x) -> bool:
        return bool(np.any(x))


class TorchOps:
    """PyTorch implementation on ``device`` (float64; counters as int64 with wrapping products)."""

    name = "torch"

    def __init__(self, device: str = "cpu") -> None:
        import torch

        self.torch = torch
        dev = torch.device(device)
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(
                f"device={device!r} was requested but CUDA is not available in this PyTorch build "
                f"(torch {torch.__version__}); use device='cpu' or the default NumPy backend"
            )
        if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device={device!r}: only {torch.cuda.device_count()} CUDA device(s) visible")
        self.dev = dev
        self.device = str(dev)
        self._gamma = _signed(GAMMA)
        self._c1 = _signed(_C1)
        self._c2 = _signed(_C2)

    def _srl(self, z, s: int):
        """Logical right shift of int64 ``z`` by ``s`` bits."""
        return (z >> s) & ((1 << (64 - s)) - 1)

    def counters(self, samples, steps, n_steps_total: int):
        t = self.torch
        s = t.as_tensor(np.asarray(samples, dtype=np.int64), device=self.dev)
        j = t.as_tensor(np.asarray(steps, dtype=np.int64), device=self.dev)
        return s[:, None] * int(n_steps_total) + j[None, :]

    def uniform(self, base, key: int, slot: int, rnd: int = 0):
        z = base * (SLOTS * ROUNDS) + (rnd * SLOTS + slot)
        z = z * self._gamma
        z = z ^ _signed(key)
        z = z ^ self._srl(z, 30)
        z = z * self._c1
        z = z ^ self._srl(z, 27)
        z = z * self._c2
        z = z ^ self._srl(z, 31)
        z = self._srl(z, 11)
        return (z.to(self.torch.float64) + 0.5) * (2.0 ** -53)

    def asarray(self, x):
        return self.torch.as_tensor(np.asarray(x, dtype=np.float64), device=self.dev)

    def to_numpy(self, x) -> np.ndarray:
        return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)

    def full(self, shape, value: float):
        return self.torch.full(tuple(shape), float(value), dtype=self.torch.float64, device=self.dev)

    def ndtri(self, u):
        return self.torch.special.ndtri(u)

    def log_ndtr(self, x):
        return self.torch.special.log_ndtr(x)

    def maximum(self, a, b):
        t = self.torch
        if not t.is_tensor(b):
            b = t.full_like(a, float(b))
        if not t.is_tensor(a):
            a = t.full_like(b, float(a))
        return t.maximum(a, b)

    def max(self, x, axis):
        return self.torch.amax(x, dim=axis)

    def exp(self, x):
        return self.torch.exp(x)

    def log(self, x):
        return self.torch.log(x)

    def log1p(self, x):
        return self.torch.log1p(x)

    def expm1(self, x):
        return self.torch.expm1(x)

    def logaddexp(self, a, b):
        t = self.torch
        if not t.is_tensor(a):
            a = t.full_like(b, float(a))
        if not t.is_tensor(b):
            b = t.full_like(a, float(b))
        return t.logaddexp(a, b)

    def abs(self, x):
        return self.torch.abs(x)

    def sqrt(self, x):
        return self.torch.sqrt(x)

    def where(self, c, a, b):
        t = self.torch
        if not t.is_tensor(a):
            a = t.as_tensor(a, dtype=t.float64, device=self.dev)
        if not t.is_tensor(b):
            b = t.as_tensor(b, dtype=t.float64, device=self.dev)
        return t.where(c, a, b)

    def clip(self, x, lo, hi):
        return self.torch.clamp(x, lo, hi)

    def sum(self, x, axis=None):
        return self.torch.sum(x) if axis is None else self.torch.sum(x, dim=axis)

    def logsumexp(self, x, axis):
        return self.torch.logsumexp(x, dim=axis)

    def searchsorted(self, edges, u):
        t = self.torch
        e = t.as_tensor(np.asarray(edges, dtype=np.float64), device=self.dev)
        return t.searchsorted(e, u.contiguous(), right=True)

    def take(self, values, idx):
        t = self.torch
        v = t.as_tensor(np.asarray(values, dtype=np.float64), device=self.dev)
        return v[idx]

    def any(self, x) -> bool:
        return bool(self.torch.any(x).item())


def get_ops(backend: str | None = None, device: str | None = None) -> Any:
    """Return the array backend: NumPy by default, torch when ``backend='torch'`` or a device is named.

    Raises
    ------
    ValueError
        For an unknown backend, ``backend='numpy'`` with a non-CPU device, or a CUDA device that is
        not available.
    """
    if backend is None:
        backend = "numpy" if device in (None, "cpu") else "torch"
    if backend == "numpy":
        if device not in (None, "cpu"):
            raise ValueError(f"backend='numpy' runs on the CPU only, got device={device!r}; use backend='torch'")
        return NumpyOps()
    if backend == "torch":
        try:
            import torch  # noqa: F401
        except ImportError as exc:  # pragma: no cover - torch is a core dependency
            raise ValueError(f"backend='torch' needs PyTorch: {exc}") from None
        return TorchOps(device or "cpu")
    raise ValueError(f"backend must be 'numpy' or 'torch', got {backend!r}")


def check_counter_space(num_samples: int, n_steps_total: int) -> None:
    """Raise if sample and step indices would overflow the 63-bit counter space."""
    if num_samples * max(n_steps_total, 1) * SLOTS * ROUNDS >= (1 << 63):
        raise ValueError(
            f"num_samples * steps = {num_samples} * {n_steps_total} is too large for the counter-based "
            f"random numbers (limit {(1 << 63) // (SLOTS * ROUNDS):.3g})"
        )

"""Array backends (NumPy, PyTorch) and the tile-based random numbers of the Monte Carlo accountant.

Randomness is generated per *cell*: the draws of ``num_samples x num_steps`` are cut into tiles of
``G * tile_rows`` samples (G tilts) x :data:`TILE_STEPS` steps (aligned at sample 0 and step 0), and
a tile is cut further where a segment of the composition starts, so that one cell holds steps of
one segment only. Each tilt group draws from its own block of rows of the cell, with streams of its
own when G > 1 (so no array is larger than ``tile_rows x TILE_STEPS``: 256 KB). Every array of
random numbers is a pure function of its *name* and shape: the name
``(key, kind, tile, first step, slot[, group start][, round])`` is hashed with BLAKE2b into the 128-bit
state and the odd 128-bit increment of NumPy's PCG64, which then fills the array row-major
(normals by the ziggurat ``standard_normal``, uniforms by ``random``, mapped to (0, 1]). PCG64
streams with different increments are distinct sequences of period 2^128, and a cell uses at most
a few million values of its streams, so overlaps are out of reach; re-keying one generator costs
~2 us, against ~60 us for a fresh ``SeedSequence``-seeded one (which would cost ~2 ns per value at
this cell size). Hence

* a result depends on the key (from ``rng``), the composition, the tilts, the sample count and the
  backend's generator, never on the chunk size or on the order in which blocks are processed;
* the generator of a cell fills rows in order, so the draws of sample i do not depend on the
  number of samples either — except in the last partial tile when there are several tilts (each
  tilt group draws from a contiguous block of rows whose start depends on the tile's size) or
  rejection-sampled steps (retries are drawn in order of the pending entries);
* offline and online runs over the same composition and sample count use the same cells, hence
  the same draws (except where the offline path collapses a run of Gaussian steps into one draw).

The torch backend on the CPU uses the same NumPy generators, so NumPy and torch-CPU draws are
identical. On CUDA it draws with torch's own generator on the device (``torch.randn`` /
``torch.rand`` in float64, seeded per array from the same hash, larger tiles of
:data:`TILE_ROWS_DEVICE` samples): reproducible per seed, statistically equivalent, but other
draws than NumPy. ``TorchOps(device, native_rng=True)`` selects that path on the CPU (tests).
"""

from __future__ import annotations

import hashlib
import struct
import threading
from typing import Any

import numpy as np
from scipy import special

from .._validate import as_rng

MASK64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
_C1 = 0xBF58476D1CE4E5B9
_C2 = 0x94D049BB133111EB
#: rejection rounds allowed per cell before the sampler gives up
ROUNDS = 1024
#: steps per tile (columns of a cell); part of the definition of the draws
TILE_STEPS = 16
#: samples per tile (rows of a cell) of the NumPy generators; part of the definition of the draws
TILE_ROWS = 2048
#: samples per tile of torch's own generator (CUDA): larger cells keep the device busy
TILE_ROWS_DEVICE = 1 << 16
#: kinds of streams (first entry of the spawn key)
KIND_CELL, KIND_SAMPLE, KIND_RETRY, KIND_GROUP = 0, 1, 2, 3
#: slot of the one normal per sample that stands for a run of Gaussian steps (offline 'is'/'simple')
SLOT_COLLAPSED = 8


def splitmix64(x: int) -> int:
    """SplitMix64 output function on a Python int (used to derive keys)."""
    z = (x + GAMMA) & MASK64
    z = ((z ^ (z >> 30)) * _C1) & MASK64
    z = ((z ^ (z >> 27)) * _C2) & MASK64
    return z ^ (z >> 31)


def key_from_rng(rng) -> int:
    """A 64-bit key drawn from ``rng`` (a Generator, an int seed, or None for OS entropy)."""
    gen = as_rng(rng)
    hi = int(gen.integers(0, 1 << 32, dtype=np.int64))
    lo = int(gen.integers(0, 1 << 32, dtype=np.int64))
    return splitmix64((hi << 32) | lo)


def stream_state(name: tuple) -> tuple[int, int]:
    """128-bit PCG64 state and odd increment of the stream ``name`` (a tuple of integers in
    [0, 2^64)): the two halves of its 256-bit BLAKE2b hash."""
    d = hashlib.blake2b(struct.pack(f"<{len(name)}Q", *name), digest_size=32).digest()
    return int.from_bytes(d[:16], "little"), int.from_bytes(d[16:], "little") | 1


class _NumpyStreams(threading.local):
    """One PCG64 generator per thread, re-keyed for every array (setting the state costs ~2 us,
    against ~60 us for a fresh ``SeedSequence``-seeded generator)."""

    def __init__(self) -> None:
        self.bg = np.random.PCG64(0)
        self.gen = np.random.Generator(self.bg)

    def at(self, name: tuple) -> np.random.Generator:
        state, inc = stream_state(name)
        self.bg.state = {"bit_generator": "PCG64", "state": {"state": state, "inc": inc},
                         "has_uint32": 0, "uinteger": 0}
        return self.gen


_NP = _NumpyStreams()


def _np_normal(name: tuple, shape):
    return _NP.at(name).standard_normal(shape)


def _np_uniform(name: tuple, shape):
    u = _NP.at(name).random(shape)
    np.subtract(1.0, u, out=u)  # [0, 1) -> (0, 1]: logs stay finite
    return u


# --------------------------------------------------------------------------------------------
# cells and streams
# --------------------------------------------------------------------------------------------
def _draw_once(cache: dict, draw, name: tuple, shape):
    """``draw(name, shape)``, generated on first use and kept in ``cache`` (one array per stream)."""
    key = (draw.__name__, name)
    a = cache.get(key)
    if a is None:
        a = cache[key] = draw(name, shape)
    return a


class Cell:
    """Random streams of one cell: ``nrows`` samples of sample tile ``tile`` x ``ncols`` steps from
    step ``col0`` (see the module docstring). Each slot's array is generated once, on first use."""

    def __init__(self, ops, key: int, tile: int, nrows: int, col0: int, ncols: int):
        self.ops, self.key, self.tile = ops, key, tile
        self.nrows, self.col0, self.ncols = nrows, col0, ncols
        self._cache: dict = {}

    def name(self, kind: int, *rest: int) -> tuple:
        """The name of one of this cell's streams."""
        return (self.key & MASK64, kind, self.tile, self.col0) + rest

    def normal(self, slot: int):
        """Standard normals of ``slot``, shape (nrows, ncols)."""
        return _draw_once(self._cache, self.ops.normal, self.name(KIND_CELL, slot), (self.nrows, self.ncols))

    def uniform(self, slot: int):
        """Uniforms in (0, 1] of ``slot``, shape (nrows, ncols)."""
        return _draw_once(self._cache, self.ops.uniform, self.name(KIND_CELL, slot), (self.nrows, self.ncols))

    def group(self, start: int, count: int) -> "CellGroup":
        """The rows ``start .. start + count - 1`` (one tilt group)."""
        return CellGroup(self, start, count)


class CellGroup:
    """Rows ``start .. start + count - 1`` of a :class:`Cell`: what a step's sampler draws from
    (one tilt group). A group spanning the whole cell uses the cell's streams; a part of a cell has
    streams of its own (named with ``start``), so that no array larger than the group's is drawn.

    ``normal(slot)`` and ``uniform(slot)`` are shared arrays (never modify them); ``retry(n)``
    gives the next rejection round's stream for ``n`` pending entries.
    """

    def __init__(self, cell: Cell, start: int, count: int):
        self.cell, self.start, self.count = cell, start, count
        self.shape = (count, cell.ncols)
        self._whole = start == 0 and count == cell.nrows
        self._cache: dict = {}
        self._round = 0

    def normal(self, slot: int):
        """Standard normals of ``slot`` for this group's rows."""
        if self._whole:
            return self.cell.normal(slot)
        return _draw_once(self._cache, self.cell.ops.normal, self.cell.name(KIND_GROUP, slot, self.start), self.shape)

    def uniform(self, slot: int):
        """Uniforms in (0, 1] of ``slot`` for this group's rows."""
        if self._whole:
            return self.cell.uniform(slot)
        return _draw_once(self._cache, self.cell.ops.uniform, self.cell.name(KIND_GROUP, slot, self.start), self.shape)

    def retry(self, n: int) -> "Stream":
        """The stream of the next rejection round (1, 2, ...) of this group, ``n`` values per slot."""
        self._round += 1
        return Stream(self.cell.ops, self.cell.name(KIND_RETRY, self.start, self.count, self._round), n)


class Stream:
    """``n`` values per slot: ``normal(slot)``/``uniform(slot)`` draw from the stream ``name + (slot,)``."""

    def __init__(self, ops, name: tuple, n: int):
        self.ops, self.name, self.shape = ops, name, (int(n),)

    def normal(self, slot: int):
        """``n`` standard normals."""
        return self.ops.normal(self.name + (slot,), self.shape)

    def uniform(self, slot: int):
        """``n`` uniforms in (0, 1]."""
        return self.ops.uniform(self.name + (slot,), self.shape)


def sample_uniforms(ops, key: int, tile: int, nrows: int, slot: int):
    """One uniform in (0, 1] per sample of a tile (e.g. which coordinate 'cmc' integrates out)."""
    return ops.uniform((key & MASK64, KIND_SAMPLE, tile, slot), (nrows,))


class NumpyOps:
    """NumPy implementation of the few array operations the sampler needs (float64 throughout)."""

    name = "numpy"
    device = "cpu"
    xp = np

    #: samples per tile (see the module docstring)
    tile_rows = TILE_ROWS

    # --- random numbers -------------------------------------------------------------------------
    @staticmethod
    def normal(name: tuple, shape):
        """Standard normals (NumPy's ziggurat, PCG64 keyed by ``name``), float64."""
        return _np_normal(name, shape)

    @staticmethod
    def uniform(name: tuple, shape):
        """Uniforms in (0, 1] (53 random bits, PCG64 keyed by ``name``), float64."""
        return _np_uniform(name, shape)

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
    def rowsum(x):
        """Sums of the rows of a 2-D array (a matrix-vector product: ~10x faster than ``sum(axis=1)``
        over short rows)."""
        return x @ np.ones(x.shape[1])

    @staticmethod
    def rowmax(x):
        """Maxima of the rows of a 2-D array (reduced over the transpose: ~3x faster than
        ``max(axis=1)`` over short rows)."""
        return np.ascontiguousarray(x.T).max(axis=0)

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
        return bool(x.any())


class TorchOps:
    """PyTorch implementation on ``device`` (float64).

    Parameters
    ----------
    device : str
        'cpu', 'cuda', 'cuda:1', ...
    native_rng : bool, optional
        Draw with torch's generator on the device (default: on CUDA only; on the CPU the NumPy
        generators are used, so that torch-CPU and NumPy draws are identical).
    """

    name = "torch"

    def __init__(self, device: str = "cpu", native_rng: bool | None = None) -> None:
        import torch

        from .._torch import check_device

        self.torch = torch
        dev = torch.device(check_device(device))
        self.dev = dev
        self.device = str(dev)
        #: torch's own generator on the device (default on CUDA) or NumPy's PCG64 (default on the CPU)
        self.native_rng = (dev.type != "cpu") if native_rng is None else bool(native_rng)
        self.tile_rows = TILE_ROWS_DEVICE if self.native_rng else TILE_ROWS
        self._torch_gen = None

    # --- random numbers -------------------------------------------------------------------------
    def _gen(self, name: tuple):
        """torch's generator on the device, seeded with 63 bits of the hash of ``name``."""
        if self._torch_gen is None:
            self._torch_gen = self.torch.Generator(device=self.dev)
        self._torch_gen.manual_seed(stream_state(name)[0] & ((1 << 63) - 1))
        return self._torch_gen

    def normal(self, name: tuple, shape):
        """Standard normals, float64, on the device."""
        if not self.native_rng:
            return self.torch.from_numpy(_np_normal(name, shape)).to(self.dev)
        return self.torch.randn(tuple(shape), generator=self._gen(name), dtype=self.torch.float64, device=self.dev)

    def uniform(self, name: tuple, shape):
        """Uniforms in (0, 1], float64, on the device."""
        if not self.native_rng:
            return self.torch.from_numpy(_np_uniform(name, shape)).to(self.dev)
        u = self.torch.rand(tuple(shape), generator=self._gen(name), dtype=self.torch.float64, device=self.dev)
        return self.torch.sub(1.0, u, out=u)

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

    def _tensors(self, a, b):
        """``a`` and ``b`` as tensors (a number becomes a tensor shaped like the other)."""
        t = self.torch
        if not t.is_tensor(a):
            a = t.full_like(b, float(a))
        if not t.is_tensor(b):
            b = t.full_like(a, float(b))
        return a, b

    def maximum(self, a, b):
        return self.torch.maximum(*self._tensors(a, b))

    def max(self, x, axis):
        return self.torch.amax(x, dim=axis)

    def exp(self, x, out=None):
        return self.torch.exp(x, out=out) if out is not None else self.torch.exp(x)

    def log(self, x, out=None):
        return self.torch.log(x, out=out) if out is not None else self.torch.log(x)

    def log1p(self, x):
        return self.torch.log1p(x)

    def expm1(self, x):
        return self.torch.expm1(x)

    def logaddexp(self, a, b):
        return self.torch.logaddexp(*self._tensors(a, b))

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

    def rowsum(self, x):
        """Sums of the rows of a 2-D tensor."""
        return self.torch.sum(x, dim=1)

    def rowmax(self, x):
        """Maxima of the rows of a 2-D tensor."""
        return self.torch.amax(x, dim=1)

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
    """Raise if ``num_samples * steps`` would overflow the 63-bit sample and step indices."""
    if num_samples * max(n_steps_total, 1) >= (1 << 63):
        raise ValueError(f"num_samples * steps = {num_samples} * {n_steps_total} is too large (limit 2**63)")

"""Targets that exercise the worker protocol (NumPy only): the tests of dpaudit.library.envs run them
with the current interpreter as the environment."""

import os
import sys
import time

import numpy as np


class _Gaussian:
    describe = "sum of the records plus N(0, sigma^2)"

    def __init__(self, sigma):
        self.sigma = float(sigma)

    def sample(self, dataset, num_samples, rng):
        total = float(np.clip(np.asarray(dataset, dtype=float), 0, 1).sum())
        return total + self.sigma * rng.standard_normal((num_samples, 1))


def gaussian_sum(sigma=1.0):
    """Batch sampler: clipped sum of the records plus Gaussian noise."""
    return _Gaussian(sigma)


def laplace_count(scale=1.0):
    """Per-call function: number of records plus Laplace noise."""
    def one(dataset, rng):
        return [len(dataset) + rng.laplace(0.0, scale)]
    return one


def echo(dim=1):
    """Per-call function returning the dataset's first values (or NaN for an empty dataset)."""
    def one(dataset, rng):
        flat = np.asarray(dataset, dtype=float).reshape(-1)
        return flat[:dim] if flat.size >= dim else np.full(dim, np.nan)
    return one


def dtype_of():
    """Per-call function: the dataset's dtype kind as a number (b=0, i=1, u=2, f=3) and its shape."""
    def one(dataset, rng):
        return ["biuf".index(dataset.dtype.kind), dataset.shape[0], dataset.shape[1] if dataset.ndim > 1 else -1]
    return one


def noisy_printer():
    """Prints to stdout (Python and C level) on every call: must not break the protocol."""
    def one(dataset, rng):
        print("library chatter on stdout")
        os.write(1, b"raw chatter on fd 1\n")
        return [1.0]
    return one


def raises(message="bad input"):
    """Per-call function that raises ``ValueError(message)``: the worker must report it, not die."""
    def one(dataset, rng):
        raise ValueError(message)
    return one


def crash(code=3):
    """Per-call function that kills its process with exit ``code``: the driver must say so."""
    def one(dataset, rng):
        sys.stderr.write("about to crash\n")
        sys.stderr.flush()
        os._exit(code)
    return one


def sleeper(seconds=10.0):
    """Per-call function that sleeps ``seconds``: the driver's per-call timeout must fire."""
    def one(dataset, rng):
        time.sleep(seconds)
        return [0.0]
    return one


def bad_factory():
    """A factory that raises ``RuntimeError``: building the target must fail with its message.

    Raises
    ------
    RuntimeError
        Always.
    """
    raise RuntimeError("factory failed")


def version():
    """Per-call function returning the worker's Python major and minor version."""
    def one(dataset, rng):
        return [sys.version_info[0], sys.version_info[1]]
    return one


def add(a, b):
    """Not a target: a plain function for the ``call`` request."""
    return {"sum": np.float64(a) + b, "pair": (a, b), "array": np.arange(3)}


def write_cwd():
    """Per-call function that writes a file to the working directory (as Spark's warehouse does)."""
    def one(dataset, rng):
        with open("written-by-the-library", "w") as f:
            f.write("x")
        return [1.0]
    return one

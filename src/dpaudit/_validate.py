"""Input checks shared by every family: one definition of a valid epsilon, delta, Rényi order,
failure probability, count and random generator.

Each check returns the value converted (``float``, ``int`` or ``numpy.random.Generator``) or raises
an error that names the argument and repeats the bad value, so a user never gets a silent wrong
answer from a NaN, a bool or a string passed where a number was meant. Checks take the error class
to raise (``ValueError`` by default; claims raise :class:`~dpaudit.errors.InvalidClaimError`, a
``ValueError`` subclass).

This module sits at the bottom of the package: it imports nothing from dpaudit.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "as_rng",
    "check_alpha",
    "check_array",
    "check_delta",
    "check_epsilon",
    "check_int",
    "check_positive",
    "check_probability",
    "check_rate",
    "check_real",
]

_NOT_NUMBERS = (bool, np.bool_, str, bytes)


def check_real(value, name: str, *, error: type[Exception] = ValueError, finite: bool = True) -> float:
    """``value`` as a float.

    Parameters
    ----------
    value : real number
    name : str
        Argument name used in the error message.
    error : exception class, default ValueError
    finite : bool, default True
        Refuse ``inf`` too (NaN is always refused).

    Raises
    ------
    error
        For bools, strings, non-numbers, NaN, and (``finite=True``) infinities.
    """
    if isinstance(value, _NOT_NUMBERS):
        raise error(f"{name} must be a real number, got {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise error(f"{name} must be a real number, got {value!r}") from None
    if math.isnan(out) or (finite and math.isinf(out)):
        raise error(f"{name} must be a finite number, got {value!r}")
    return out


def check_epsilon(epsilon, name: str = "epsilon", *, positive: bool = False,
                  error: type[Exception] = ValueError) -> float:
    """Epsilon in nats: finite and ``>= 0`` (``> 0`` with ``positive=True``).

    Raises
    ------
    error
        For a non-number, NaN, infinity or a value out of range; the message names ``name``.
    """
    value = check_real(epsilon, name, error=error, finite=False)
    if not math.isfinite(value) or value < 0.0 or (positive and value == 0.0):
        raise error(f"{name} must be finite and {'> 0' if positive else '>= 0'}, got {epsilon!r}")
    return value


def check_delta(delta, name: str = "delta", *, allow_zero: bool = False,
                error: type[Exception] = ValueError) -> float:
    """Delta of an (epsilon, delta) statement: ``0 < delta < 1`` (``0 <= delta < 1`` with
    ``allow_zero=True``).

    Raises
    ------
    error
        For a non-number, NaN or a value out of range; the message names ``name``.
    """
    value = check_real(delta, name, error=error, finite=False)
    if not ((0.0 <= value if allow_zero else 0.0 < value) and value < 1.0):
        raise error(f"{name} must be in {'[0, 1)' if allow_zero else '(0, 1)'}, got {delta!r}")
    return value


def check_alpha(alpha, name: str = "alpha", *, error: type[Exception] = ValueError) -> float:
    """Rényi order: finite and ``> 1``.

    Raises
    ------
    error
        For a non-number, NaN, infinity or ``alpha <= 1``.
    """
    value = check_real(alpha, name, error=error, finite=False)
    if not (math.isfinite(value) and value > 1.0):
        raise error(f"{name} (Rényi order) must be finite and > 1, got {alpha!r}")
    return value


def check_probability(value, name: str = "beta", *, above: float = 0.0,
                      error: type[Exception] = ValueError) -> float:
    """A probability strictly between ``above`` (default 0) and 1: a failure probability
    ``beta``, a confidence level (``above=0.5`` where a level below one half is meaningless) or a
    false-positive rate.

    Raises
    ------
    error
        For a non-number, NaN or a value outside ``(above, 1)``.
    """
    out = check_real(value, name, error=error, finite=False)
    if not (above < out < 1.0):
        raise error(f"{name} must be a number in ({above:g}, 1), got {value!r}")
    return out


def check_rate(value, name: str, *, error: type[Exception] = ValueError) -> float:
    """A rate in ``(0, 1]`` (e.g. a Poisson sampling rate ``q``).

    Raises
    ------
    error
        For a non-number, NaN or a value outside ``(0, 1]``.
    """
    out = check_real(value, name, error=error, finite=False)
    if not (0.0 < out <= 1.0):
        raise error(f"{name} must be in (0, 1], got {value!r}")
    return out


def check_positive(value, name: str, *, allow_inf: bool = False,
                   error: type[Exception] = ValueError) -> float:
    """A number ``> 0`` (finite unless ``allow_inf``), e.g. a noise scale or multiplier.

    Raises
    ------
    error
        For a non-number, NaN, ``value <= 0`` or (without ``allow_inf``) infinity.
    """
    out = check_real(value, name, error=error, finite=False)
    if not (out > 0.0) or (math.isinf(out) and not allow_inf):
        raise error(f"{name} must be {'> 0' if allow_inf else 'finite and > 0'}, got {value!r}")
    return out


def check_int(value, name: str, minimum: int = 1, *, error: type[Exception] = ValueError) -> int:
    """An integer ``>= minimum`` (bools and non-integral numbers such as ``2.0`` are refused).

    Raises
    ------
    error
        For anything else; the message names ``name`` and ``minimum``.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise error(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def as_rng(rng, name: str = "rng") -> np.random.Generator:
    """A ``numpy.random.Generator`` from a Generator, an int seed, a ``SeedSequence`` or None
    (fresh OS entropy).

    Raises
    ------
    ValueError
        For anything else (bools included).
    """
    if isinstance(rng, (bool, np.bool_)):
        raise ValueError(f"{name} must be a numpy Generator or an int seed, got {rng!r}")
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a numpy Generator or an int seed, got {rng!r}") from None


def check_array(values, name: str, *, low: float = -math.inf, high: float = math.inf,
                error: type[Exception] = ValueError) -> np.ndarray:
    """``values`` as a float array (any shape) whose entries are not NaN and lie in
    ``[low, high]`` (infinite entries pass when the range allows them), e.g. a grid of epsilons
    or of type I errors.

    Raises
    ------
    error
        For non-numeric input, NaN entries or entries outside ``[low, high]``.
    """
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise error(f"{name} must be an array of numbers, got {values!r}") from None
    if np.any(np.isnan(arr)):
        raise error(f"{name} must not contain NaN, got {values!r}")
    if np.any(arr < low) or np.any(arr > high):
        raise error(f"{name} must lie in [{low:g}, {high:g}], got {values!r}")
    return arr

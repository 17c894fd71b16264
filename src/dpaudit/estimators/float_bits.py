"""Bit-level evidence for floating-point outputs: regions that are sets of doubles.

Textbook Laplace or Gaussian noise computed in float64 (``x + b * log(U)``) is not DP: the set of
doubles an output can take depends on the private value (Mironov 2012, "On significance of the
least significant bits for differential privacy", CCS). No density-based region (a threshold, an
interval, a classifier's level set) can see this, because the two output distributions have almost
the same density everywhere; they differ in *which* doubles carry the mass. This module maps each
output to a discrete feature of its float64 representation and chooses regions that are unions of
feature cells, i.e. sets of doubles:

``"granularity"``
    ``(sign, exponent, trailing zero bits of the 52-bit mantissa)``: together the binade of the
    value and its lowest set bit ``2^(exponent - 52 + trailing zeros)``. An output ``c + n`` with
    ``|c + n| << |c|`` is computed exactly (Sterbenz) on the grid of ``c``, so its lowest set bit
    sits far above the ulp of its binade, while pure noise near 0 has full precision: on
    ``D0 = [0]`` vs ``D1 = [1/3]`` the cells "small value, coarse lowest bit" hold mass under
    ``D1`` and almost none under ``D0``.
``"low-bits"``
    ``(sign, exponent, lowest 4 mantissa bits)``: patterns of the last bits (grids that are not
    powers of two, biased rounding).
``"atoms"``
    Every value that occurs at least twice in the selection half (a point mass: a code path that
    sometimes releases the exact value, an output clamped to a bound) is a cell of its own; the
    other values are grouped by ``(sign, exponent)``. A 1 % point mass cannot be smoothed into its
    surroundings as a classifier would.

Soundness is that of every region bound (:mod:`dpaudit.estimators.region`): the feature family,
the column (for outputs of several coordinates), the atoms, the cells and the region are all chosen
on the selection half (the family by two-fold cross-validation inside it, as the histogram
estimator picks its bin count); the region's masses get exact Clopper–Pearson bounds on the
held-out half, ``beta`` split between the two directions (shares chosen on the selection half) and
each share equally between its two bounds. Any number of candidate families costs nothing in the
bound, because only the one region per direction is certified. Derivation: ``docs/floating_point.md``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .._validate import as_rng, check_epsilon, check_probability
from .base import check_sample_pair, profile_targets
from .histogram import HistogramBound, HistogramEvidence, HistogramHockeyStick, choose_direction_regions

__all__ = ["BIT_LEVEL_FAMILIES", "FAMILIES", "FloatBits", "FloatBitsHockeyStick", "atom_values", "bound_family",
           "feature_codes", "float_bits"]

FAMILIES = ("granularity", "low-bits", "atoms")

BIT_LEVEL_FAMILIES = ("granularity", "low-bits")
"""The families whose regions are sets of doubles chosen by their bit patterns: a violation they
show is a floating-point leak (Mironov 2012), invisible to any region of output *values*. The
``"atoms"`` family finds point masses, which are a property of the output distribution itself."""

_MANTISSA = np.uint64((1 << 52) - 1)
_OTHER_ATOM = 1 << 40  # atoms family: codes of non-atom values start here


@dataclass(frozen=True)
class FloatBits:
    """The float64 representation of ``n`` values, field by field.

    Attributes
    ----------
    sign : ndarray of int64, shape (n,)
        1 for negative values (and -0.0), else 0.
    exponent : ndarray of int64, shape (n,)
        Biased exponent field, 0..2047 (0: zero or subnormal; 2047: inf).
    trailing_zeros : ndarray of int64, shape (n,)
        Trailing zero bits of the 52-bit mantissa field, 0..52 (52 when the field is 0, e.g. for
        powers of two and 0.0).
    low_bits : ndarray of int64, shape (n,)
        The mantissa field's lowest 4 bits, 0..15.
    lowest_bit : ndarray of int64, shape (n,)
        ``k`` with ``2^k`` the value's lowest set bit (``exponent - 1075 + trailing_zeros`` for
        normal values, ``-1074 + trailing_zeros`` for subnormals); -1075 for zero.
    """

    sign: np.ndarray
    exponent: np.ndarray
    trailing_zeros: np.ndarray
    low_bits: np.ndarray
    lowest_bit: np.ndarray


def float_bits(values) -> FloatBits:
    """Split float64 values into their representation's fields (IEEE 754 binary64).

    Parameters
    ----------
    values : array of float, any shape (flattened)
        Finite or infinite; NaN is rejected.

    Returns
    -------
    FloatBits

    Raises
    ------
    ValueError
        If ``values`` is not numeric or contains NaN.

    Examples
    --------
    ``float_bits([1.0]).trailing_zeros == [52]``; ``float_bits([0.75]).lowest_bit == [-2]``.
    """
    try:
        x = np.ascontiguousarray(np.asarray(values, dtype=np.float64).reshape(-1))
    except (TypeError, ValueError):
        raise ValueError(f"values must be an array of numbers, got {type(values).__name__}") from None
    if np.isnan(x).any():
        raise ValueError("values must not contain NaN")
    b = x.view(np.uint64)
    sign = (b >> np.uint64(63)).astype(np.int64)
    exponent = ((b >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    m = b & _MANTISSA
    tz = np.full(x.shape, 52, dtype=np.int64)
    nz = m != 0
    low = m[nz] & (~m[nz] + np.uint64(1))  # the lowest set bit, a power of two < 2^52: exact in float64
    tz[nz] = np.round(np.log2(low.astype(np.float64))).astype(np.int64)
    lowest = np.where(exponent == 0, -1074, exponent - 1075) + tz
    lowest = np.where((exponent == 0) & ~nz, -1075, lowest)
    return FloatBits(sign, exponent, tz, (m & np.uint64(15)).astype(np.int64), lowest)


def atom_values(values, min_count: int = 2) -> np.ndarray:
    """Values that occur at least ``min_count`` times (point masses seen in a sample).

    Parameters
    ----------
    values : array of float, shape (n,)
    min_count : int, default 2

    Returns
    -------
    ndarray of float, sorted, distinct (``-0.0`` counted as ``0.0``).
    """
    x = np.asarray(values, dtype=np.float64).reshape(-1) + 0.0
    u, c = np.unique(x, return_counts=True)
    return u[c >= int(min_count)]


def bound_family(bound) -> str | None:
    """The feature family of a bound made by :class:`FloatBitsHockeyStick`, else None.

    Parameters
    ----------
    bound : DivergenceBound
        Any bound (e.g. one read back from a JSON report); float-bits bounds have
        ``mode="float-bits"`` and a ``binning`` that starts with the family's name.

    Returns
    -------
    str or None
        One of :data:`FAMILIES`, or None for a bound of another estimator.
    """
    if getattr(bound, "mode", None) != "float-bits":
        return None
    family = str(getattr(bound, "binning", "")).split(" ", 1)[0]
    return family if family in FAMILIES else None


def feature_codes(values, family: str, atoms=None) -> np.ndarray:
    """One integer cell code per value for a feature family (module docstring).

    Parameters
    ----------
    values : array of float, shape (n,)
    family : {"granularity", "low-bits", "atoms"}
    atoms : array of float, optional
        ``"atoms"`` only: the point masses (from the selection half, :func:`atom_values`);
        default none.

    Returns
    -------
    ndarray of int64, shape (n,)
        ``"granularity"``: ``sign << 17 | exponent << 6 | trailing_zeros``; ``"low-bits"``:
        ``sign << 15 | exponent << 4 | low_bits``; ``"atoms"``: the index of the value in
        ``atoms``, or ``2^40 + (sign << 11 | exponent)`` for other values.

    Raises
    ------
    ValueError
        For an unknown family or NaN values.
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    x = np.asarray(values, dtype=np.float64).reshape(-1) + 0.0
    f = float_bits(x)
    if family == "granularity":
        return (f.sign << 17) | (f.exponent << 6) | f.trailing_zeros
    if family == "low-bits":
        return (f.sign << 15) | (f.exponent << 4) | f.low_bits
    atoms = np.zeros(0) if atoms is None else np.asarray(atoms, dtype=np.float64).reshape(-1)
    idx = np.searchsorted(atoms, x)
    hit = (idx < len(atoms)) & (atoms[np.minimum(idx, max(len(atoms) - 1, 0))] == x) if len(atoms) else np.zeros(len(x), bool)
    return np.where(hit, idx, _OTHER_ATOM + ((f.sign << 11) | f.exponent)).astype(np.int64)


def _describe_code(code: int, family: str, atoms: np.ndarray) -> str:
    if family == "atoms":
        if code < _OTHER_ATOM:
            return f"={float(atoms[code])!r}"
        c = code - _OTHER_ATOM
        return f"{'-' if c >> 11 else '+'}[2^{(c & 0x7FF) - 1023}, 2^{(c & 0x7FF) - 1022}) not an atom"
    shift = 6 if family == "granularity" else 4
    sign, exp, last = code >> (shift + 11), (code >> shift) & 0x7FF, code & ((1 << shift) - 1)
    binade = f"{'-' if sign else '+'}[2^{exp - 1023}, 2^{exp - 1022})"
    if family == "granularity":
        return f"{binade} lowest bit 2^{(exp - 1075 if exp else -1074) + last}"
    return f"{binade} low bits {last:04b}"


class FloatBitsHockeyStick:
    """Hockey-stick lower bounds from regions that are sets of doubles (bit-level features, atoms).

    For each output column and feature family (:data:`FAMILIES`), each output gets a cell code
    (:func:`feature_codes`); the cells seen in the selection half (plus one cell for unseen codes)
    form a discrete universe. Per direction, the (column, family) pair is picked by two-fold
    cross-validation on the selection half, the region (a union of cells, an upper level set of the
    estimated likelihood ratio) is chosen on the whole selection half, and it is certified on the
    held-out half (:meth:`HockeyStickBound.certify` through :class:`HistogramBound`), exactly as
    the histogram estimator's ``"split"`` tolerance: the bound holds for every eps at once with
    failure probability ``beta`` for both directions together. The region text names the feature
    family and column that found the evidence.

    Parameters
    ----------
    families : sequence of str, default all of :data:`FAMILIES`
    train_fraction : float, default 0.5
        Fraction of each sample used for the selection half.

    Raises
    ------
    ValueError
        For an unknown or empty family list or an invalid fraction.

    References
    ----------
    Mironov (2012), CCS, §3–§5 (the attack and the snapping mechanism); the region bound:
    :mod:`dpaudit.estimators.region`, paper 000 §4.2.
    """

    def __init__(self, families=FAMILIES, train_fraction: float = 0.5):
        fams = tuple(families)
        if not fams or any(f not in FAMILIES for f in fams) or len(set(fams)) != len(fams):
            raise ValueError(f"families must be distinct names from {FAMILIES}, got {families!r}")
        frac = check_probability(train_fraction, "train_fraction")
        self.families = fams
        self.train_fraction = float(frac)
        self._split = HistogramHockeyStick(tolerance="split", mode="discrete", train_fraction=self.train_fraction)

    def config(self) -> dict:
        """Hyper-parameters (JSON-friendly)."""
        return {"families": list(self.families), "train_fraction": self.train_fraction}

    def estimate(self, p_samples, q_samples, *, epsilon: float, beta: float, delta_profile=None,
                 rng=None) -> HistogramEvidence:
        """Lower confidence bounds on ``H_{e^eps}(P||Q)`` and ``H_{e^eps}(Q||P)``, for every eps.

        Parameters
        ----------
        p_samples, q_samples : array, shape (n, output_dim)
            Outputs on D0 and D1 (at least 4 rows each; NaN rejected).
        epsilon : float
            Order (nats) of the bounds' ``estimate``/``lower`` fields.
        beta : float
            Failure probability of both bounds together.
        delta_profile : callable, optional
            The claim's privacy profile; regions are chosen to beat it. Default: 0 at ``epsilon``.
        rng : Generator or int, optional
            Shuffles the samples before the split.

        Returns
        -------
        HistogramEvidence
            ``mode="float-bits"``; each bound's ``binning`` names the feature family and column,
            its ``region`` the cells.

        Raises
        ------
        ValueError
            On invalid samples (NaN included), epsilon or beta.
        """
        t0 = time.perf_counter()
        p, q = check_sample_pair(p_samples, q_samples, min_samples=4)
        if np.isnan(p).any() or np.isnan(q).any():
            raise ValueError("float-bits features need outputs without NaN")
        epsilon, beta = check_epsilon(epsilon), check_probability(beta, "beta")
        rng = as_rng(rng)
        eps_grid, allowed = profile_targets(epsilon, delta_profile)
        p = p[rng.permutation(len(p))]
        q = q[rng.permutation(len(q))]
        n_d_p = self._split._design_size(len(p), self.train_fraction)
        n_d_q = self._split._design_size(len(q), self.train_fraction)
        p_tr, p_ev, q_tr, q_ev = p[:n_d_p], p[n_d_p:], q[:n_d_q], q[n_d_q:]
        n_ev_p, n_ev_q = len(p_ev), len(q_ev)
        needed = self._split._needed_samples(len(p), len(q), None, None, 0, beta, eps_grid, allowed)
        hp, hq = n_d_p // 2, n_d_q // 2

        candidates = []  # (column, family, atoms, categories, counts)
        for j in range(p.shape[1]):
            atoms = atom_values(np.concatenate([p_tr[:, j], q_tr[:, j]]))
            for fam in self.families:
                codes = {k: feature_codes(v[:, j], fam, atoms) for k, v in
                         (("p_tr", p_tr), ("q_tr", q_tr), ("p_ev", p_ev), ("q_ev", q_ev))}
                cats = np.unique(np.concatenate([codes["p_tr"], codes["q_tr"]]))
                m = len(cats) + 1

                def count(c, cats=cats, m=m):
                    idx = np.searchsorted(cats, c)
                    hit = (idx < len(cats)) & (cats[np.minimum(idx, len(cats) - 1)] == c)
                    return np.bincount(np.where(hit, idx, len(cats)), minlength=m)

                counts = {{"p_tr": "a_tr", "q_tr": "b_tr", "p_ev": "a_ev", "q_ev": "b_ev"}[k]: count(v)
                          for k, v in codes.items()}
                counts["folds"] = ((count(codes["p_tr"][:hp]), count(codes["q_tr"][:hq])),
                                   (count(codes["p_tr"][hp:]), count(codes["q_tr"][hq:])))
                candidates.append((j, fam, atoms, cats, counts))

        chosen, shares = choose_direction_regions([c[4] for c in candidates], n_ev_p, n_ev_q, eps_grid, allowed, beta)
        bounds = []
        for (direction, swap), (pick, mask, n_in, n_out, in_tr, _), share in zip(
            (("P||Q", False), ("Q||P", True)), chosen, shares
        ):
            j, fam, atoms, cats, c = candidates[pick]
            in_ev, out_ev = (c["b_ev"], c["a_ev"]) if swap else (c["a_ev"], c["b_ev"])
            bounds.append(HistogramBound.certify(
                int(in_ev[mask].sum()), n_in, int(out_ev[mask].sum()), n_out,
                epsilon=epsilon, beta=share * beta, direction=direction, n_train=n_d_p + n_d_q,
                region=self._describe(mask, in_tr, cats, fam, atoms, j), tolerance="split", mode="float-bits",
                num_cells=len(cats) + 1, binning=f"{fam} features of column {j} ({len(cats)} cells seen in the selection half)",
                vacuous=needed is not None,
            ))
        return HistogramEvidence(bounds[0], bounds[1], "float-bits", "split", bounds[0].num_cells, needed,
                                 time.perf_counter() - t0)

    @staticmethod
    def _describe(mask: np.ndarray, weight: np.ndarray, cats: np.ndarray, family: str, atoms: np.ndarray,
                  column: int, limit: int = 4) -> str:
        """The region's cells, heaviest (in the selection half) first."""
        idx = np.flatnonzero(mask)
        idx = idx[np.argsort(-weight[idx], kind="stable")]
        names = ["unseen" if i >= len(cats) else _describe_code(int(cats[i]), family, atoms) for i in idx[:limit]]
        more = f", ... ({len(idx)} cells)" if len(idx) > limit else ""
        return f"[{family}, column {column}] output in {{" + "; ".join(names) + more + "}"

"""Leaks sized to the end: a set of outputs one dataset reaches and its neighbour does not.

A floating-point leak (Mironov 2012) is often not a finite privacy loss at all: the outputs of the
mechanism on ``D0`` take doubles that its outputs on ``D1`` never take (a grid ``D1`` cannot
reach). Then no epsilon holds below a certain delta, and reporting "epsilon >= 1.5" under-states
it. This module certifies such a leak from samples:

For any output set ``S`` fixed in advance and any epsilon, an (epsilon, delta)-DP mechanism has
``P_D0(S) <= e^epsilon P_D1(S) + delta``, so ``delta >= P_D0(S) - e^epsilon P_D1(S)`` (the
hockey-stick divergence of the two output distributions is at least the difference on ``S``;
Dwork & Roth 2014, Def. 2.4). With a Clopper-Pearson lower bound ``p_lo`` on ``P_D0(S)`` and
upper bound ``q_hi`` on ``P_D1(S)`` (Clopper & Pearson 1934; ``q_hi = 1 - (beta/2)^(1/n)`` when
``S`` is never hit under ``D1``), with probability at least ``1 - beta`` every
``(epsilon, delta)`` guarantee of the mechanism has ``delta >= p_lo - e^epsilon q_hi`` at the same
time (:class:`LeakSize`). The bound is on the safe side: it never exceeds the true
``P_D0(S) - e^epsilon P_D1(S)`` except with probability ``beta``.

The set is chosen on one half of each sample and counted on the other (:func:`size_float_leak`),
so the choice does not bias the counts; the candidate sets are the float *grids* of each sign and
binade ("outputs in +[2^-2, 2^-1) that are not multiples of 2^-53"), so each is a set a reader can
state and check in a line of code (:func:`describe_cells`).

Functions
---------
* :func:`certify_set` — the certified bound from the four counts of one set (and :class:`LeakSize`,
  its result): both live in :mod:`dpaudit.bounds` since the sequential tester's sizing step uses
  them too; imported here under their old names.
* :func:`float_cells` — each double's sign, binade and lowest set bit.
* :func:`size_float_leak` — choose a grid set on a selection half, certify it on the other half.
* :func:`size_range_leak` — the same for outputs beyond the other side's range (a truncation).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..bounds import LeakSize, certify_set  # moved down (one piece for the testers and the audit); kept here
from ..estimators.float_bits import float_bits

__all__ = ["LeakSize", "certify_set", "describe_cells", "float_cells", "size_float_leak", "size_range_leak"]


def float_cells(values) -> np.ndarray:
    """Each double's sign, binade and lowest set bit, as integer columns.

    Parameters
    ----------
    values : array_like of float, shape (n,)
        Finite doubles (zero allowed).

    Returns
    -------
    ndarray of int64, shape (n, 3)
        ``(sign, binade, lowest)``: sign ``+1``, ``-1`` or 0 for a zero; binade ``e`` with
        ``|y|`` in ``[2^e, 2^(e+1))`` (for subnormals the binade of the value itself); lowest
        ``k`` with the lowest set bit of ``|y|`` equal to ``2^k`` (``y`` a multiple of ``2^k``
        but not of ``2^(k+1)``). Zeros are ``(0, 0, 0)``.

    Raises
    ------
    ValueError
        If a value is NaN or infinite.
    """
    y = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(y)):
        bad = y[~np.isfinite(y)][0]
        raise ValueError(f"float_cells needs finite values, got {bad!r}")
    nz = y != 0
    binade = (np.frexp(np.abs(y))[1] - 1).astype(np.int64)  # frexp normalises subnormals too
    lowest = float_bits(y).lowest_bit  # the one place that reads a double's lowest set bit
    sign = np.sign(y).astype(np.int64)
    binade[~nz] = 0
    lowest = np.where(nz, lowest, 0)
    return np.stack([sign, binade, lowest], axis=1)


def _fmt_pow2(k: int) -> str:
    return f"2^{k}"


def describe_cells(groups: dict) -> str:
    """A grid set in words.

    Parameters
    ----------
    groups : dict
        ``(sign, binade) -> k``: the set holds the outputs of that sign in ``[2^binade,
        2^(binade+1))`` whose lowest set bit is at most ``2^k`` (not multiples of ``2^(k+1)``).

    Returns
    -------
    str
        E.g. ``"outputs in +[2^-4, 2^-1) not a multiple of 2^-53"``: consecutive binades of one
        sign with the same ``k`` are merged into one range, ranges joined by ``" or "`` (the first
        four, then how many more).
    """
    runs = []  # consecutive binades of one sign with the same k merge into one range
    for (sign, binade), k in sorted(groups.items()):
        if runs and runs[-1][0] == sign and runs[-1][2] == binade and runs[-1][3] == k:
            runs[-1][2] = binade + 1
        else:
            runs.append([sign, binade, binade + 1, k])
    parts = []
    for sign, lo, hi, k in runs:
        s = "+" if sign > 0 else "-"
        parts.append(f"{s}[{_fmt_pow2(lo)}, {_fmt_pow2(hi)}) not a multiple of {_fmt_pow2(k + 1)}")
    if not parts:
        return "the empty set"
    if len(parts) > 4:
        return "outputs in " + " or ".join(parts[:4]) + f" or {len(parts) - 4} more such ranges"
    return "outputs in " + " or ".join(parts)


_MIN_OTHER = 16
"""Outputs of the other side a binade needs before its grid is read from them: ``m`` outputs on a
grid of spacing ``s`` all look coarser (lowest bit ``>= 2s``) with probability about ``2^-m``."""


def _grid_set(cells_p: np.ndarray, cells_q: np.ndarray) -> dict:
    """``(sign, binade) -> k``: per sign and binade where ``cells_q`` has at least
    ``_MIN_OTHER`` values, the largest ``k``
    such that ``cells_q`` has no value there with lowest bit ``<= 2^k`` while ``cells_p`` has one
    (a finer grid than the other side reaches in that binade)."""
    groups = {}
    keys_p = {(int(s), int(b)) for s, b, _ in cells_p if s != 0}
    for key in keys_p:
        mine = cells_p[(cells_p[:, 0] == key[0]) & (cells_p[:, 1] == key[1]), 2]
        theirs = cells_q[(cells_q[:, 0] == key[0]) & (cells_q[:, 1] == key[1]), 2]
        if theirs.size < _MIN_OTHER:  # too few of the other side's outputs here to see its grid
            continue
        cut = int(theirs.min()) - 1
        if (mine <= cut).any():
            groups[key] = min(cut, int(mine.max()))
    return groups


def _in_grid_set(cells: np.ndarray, groups: dict) -> np.ndarray:
    hit = np.zeros(len(cells), dtype=bool)
    for (sign, binade), k in groups.items():
        hit |= (cells[:, 0] == sign) & (cells[:, 1] == binade) & (cells[:, 2] <= k)
    return hit


def _selection_split(samples_0, samples_1, beta: float, selection_fraction: float, finite: str | None = None):
    """The checked inputs of the ``size_*_leak`` functions: ``(x0, x1, s0, s1)``, the samples as
    float64 arrays of shape (n, d) and the number of rows of each used for selection; raises the
    ValueErrors those functions document (``finite``: the caller's name, when it needs finite outputs)."""
    if not 0.0 < beta < 1.0:
        raise ValueError(f"beta must be in (0, 1), got {beta!r}")
    if not 0.0 < selection_fraction < 1.0:
        raise ValueError(f"selection_fraction must be in (0, 1), got {selection_fraction!r}")
    x0 = np.asarray(samples_0, dtype=np.float64)
    x1 = np.asarray(samples_1, dtype=np.float64)
    x0, x1 = x0.reshape(len(x0), -1), x1.reshape(len(x1), -1)
    if x0.shape[1] != x1.shape[1]:
        raise ValueError(f"samples of dimension {x0.shape[1]} and {x1.shape[1]}: the outputs must match")
    if len(x0) < 4 or len(x1) < 4:
        raise ValueError(f"need at least 4 outputs per dataset, got {len(x0)} and {len(x1)}")
    if finite is not None and not (np.all(np.isfinite(x0)) and np.all(np.isfinite(x1))):
        raise ValueError(f"{finite} needs finite outputs")
    return x0, x1, int(len(x0) * selection_fraction), int(len(x1) * selection_fraction)


def _strongest(leaks, epsilon: float | None, beta: float) -> LeakSize:
    """The candidate with the largest certified delta at ``epsilon`` (or the largest ``p_lower``),
    the first on ties, carrying the overall ``beta``: each was certified at ``beta / (number of
    candidates)``, so by Bonferroni the returned one holds at ``beta`` whichever it is."""
    best, best_score = None, -1.0
    for leak in leaks:
        score = leak.delta_lower(epsilon) if epsilon is not None else leak.p_lower
        if score > best_score:
            best, best_score = leak, score
    return replace(best, beta=float(beta))


def size_float_leak(samples_0, samples_1, *, beta: float, epsilon: float | None = None,
                    selection_fraction: float = 0.5) -> LeakSize | None:
    """Certify the largest grid set one dataset's outputs reach and the other's do not.

    On the first ``selection_fraction`` of each sample (assumed i.i.d. rows, in the order drawn),
    for every output coordinate and both directions, the candidate set is the union, over the signs
    and binades the other side visits at least 16 times, of "not a multiple of ``2^(k+1)``", with ``k`` as large as the
    other side's selection outputs allow (none of them in the set). Each candidate is then counted on the remaining
    outputs and certified by :func:`certify_set` at ``beta / (number of candidates)`` (Bonferroni),
    so the returned bound holds with probability at least ``1 - beta`` whichever candidate is
    returned.

    Parameters
    ----------
    samples_0, samples_1 : array_like of float, shape (n0,) or (n0, d) and (n1,) or (n1, d)
        Outputs on ``D0`` and ``D1`` (same ``d``), finite.
    beta : float
        Failure probability in (0, 1).
    epsilon : float, optional
        The claimed epsilon: the candidate with the largest certified delta there is returned
        (by default the one with the largest ``p_lower``).
    selection_fraction : float
        Share of each sample used to choose the sets, in (0, 1).

    Returns
    -------
    LeakSize or None
        The strongest certified set, or None when no coordinate has a grid set one side reaches
        on the selection half and the other does not.

    Raises
    ------
    ValueError
        For samples of different dimension, too few rows (< 4 each), non-finite values, beta or
        selection_fraction out of range.
    """
    x0, x1, s0, s1 = _selection_split(samples_0, samples_1, beta, selection_fraction)
    candidates = []
    for col in range(x0.shape[1]):
        c0, c1 = float_cells(x0[:, col]), float_cells(x1[:, col])
        for direction, (cp, cq, n_sel_p, n_sel_q) in (("P||Q", (c0, c1, s0, s1)), ("Q||P", (c1, c0, s1, s0))):
            groups = _grid_set(cp[:n_sel_p], cq[:n_sel_q])
            if groups:
                candidates.append((col, direction, groups, cp[n_sel_p:], cq[n_sel_q:]))
    if not candidates:
        return None
    level = beta / len(candidates)
    return _strongest((replace(certify_set(int(_in_grid_set(vp, groups).sum()), len(vp),
                                           int(_in_grid_set(vq, groups).sum()), len(vq), beta=level,
                                           description=describe_cells(groups), column=col, direction=direction),
                               grid=tuple((s, b, k) for (s, b), k in sorted(groups.items())))
                       for col, direction, groups, vp, vq in candidates), epsilon, beta)


def size_range_leak(samples_0, samples_1, *, beta: float, epsilon: float | None = None,
                    selection_fraction: float = 0.5) -> LeakSize | None:
    """Certify outputs beyond the other dataset's range (a truncation or support the other side misses).

    On the selection part of each sample, for every output coordinate and both directions, the
    candidate set is "coordinate above the other side's largest selection output" (and "below its
    smallest"), kept when the reaching side's selection outputs fall in it; each candidate is counted
    on the remaining outputs and certified by :func:`certify_set` at ``beta / (number of
    candidates)``, so the returned bound holds with probability at least ``1 - beta``.

    Parameters and errors are those of :func:`size_float_leak` (finite samples, same dimension).

    Returns
    -------
    LeakSize or None
        The strongest certified set ("outputs of coordinate j above t"), or None when no side's
        selection outputs leave the other's range.
    """
    x0, x1, s0, s1 = _selection_split(samples_0, samples_1, beta, selection_fraction, finite="size_range_leak")
    candidates = []
    for col in range(x0.shape[1]):
        for direction, (p, q, sp, sq) in (("P||Q", (x0, x1, s0, s1)), ("Q||P", (x1, x0, s1, s0))):
            top, bottom = q[:sq, col].max(), q[:sq, col].min()
            if (p[:sp, col] > top).any():
                candidates.append((col, direction, f"outputs above {top:.6g}", p[sp:, col] > top, q[sq:, col] > top))
            if (p[:sp, col] < bottom).any():
                candidates.append((col, direction, f"outputs below {bottom:.6g}", p[sp:, col] < bottom,
                                   q[sq:, col] < bottom))
    if not candidates:
        return None
    level = beta / len(candidates)
    return _strongest((certify_set(int(hp.sum()), len(hp), int(hq.sum()), len(hq), beta=level, description=words,
                                   column=col, direction=direction)
                       for col, direction, words, hp, hq in candidates), epsilon, beta)

"""How an audit's failure probability beta is split over its trials (a Bonferroni split).

An audit of ``T`` trials reports a violation when any trial does. Trial ``t`` is run at its own
failure probability ``beta_t``, fixed before the audit starts (it depends only on ``T``, beta and the
split's name, never on any sample), with ``sum_t beta_t <= beta``. Under a correct mechanism each
trial accuses wrongly with probability at most ``beta_t`` whatever pair it is given and whenever the
audit stops (the sequential tester's e-processes are valid at every stopping time, the staged ones
by their own stage split), so by the union bound the audit accuses wrongly with probability at most
``sum_t beta_t <= beta`` (Bonferroni; the weights are any fixed non-negative numbers summing to at
most one, e.g. Wasserman, "All of Statistics", 2004, §10.7). Stopping after the first trial that
finds a violation only removes terms from the union. See docs/sequential.md, "Splitting beta over
the trials".

Splits
------
``"even"``
    ``beta / T`` for each trial (the staged testers' default).
``"front"``
    ``beta / 2`` for the first trial and ``beta / (2 (T - 1))`` for each of the others (``T = 1``:
    all of beta). Most bugs the search can reach are found at its first pair, and a betting
    tester's threshold is ``1 / beta_t``: halving ``T`` there saves ``log(T / 2)`` nats of evidence
    on the first trial, at ``log(2 (T - 1) / T)`` (about 0.6 nats for ``T = 10``) on the others
    (the sequential tester's default; benchmarks/results/sequential_detection.md).
``"auto"``
    ``"front"`` for a sequential (betting) tester, ``"even"`` for any other.
"""

from __future__ import annotations

import math

__all__ = ["BETA_SPLITS", "resolve_beta_split", "trial_betas"]

BETA_SPLITS = ("even", "front")
"""The fixed splits :func:`trial_betas` knows (``"auto"`` resolves to one of them)."""


def resolve_beta_split(split: str | None, tester=None) -> str:
    """The split an audit runs with.

    Parameters
    ----------
    split : {"auto", "even", "front"} or None
        None is ``"auto"``: ``"front"`` when ``tester`` is a sequential (betting) tester (its
        ``name`` starts with ``"sequential"``), else ``"even"``.
    tester : Tester, optional
        The audit's tester (only its ``name`` is read).

    Returns
    -------
    str
        ``"even"`` or ``"front"``.

    Raises
    ------
    ValueError
        If ``split`` is not one of the names above.
    """
    s = "auto" if split is None else split
    if not isinstance(s, str) or s.strip().lower() not in (*BETA_SPLITS, "auto"):
        raise ValueError(f"beta_split must be 'auto', 'even' or 'front', got {split!r}")
    s = s.strip().lower()
    if s == "auto":
        name = str(getattr(tester, "name", "") or "")
        return "front" if name.startswith("sequential") else "even"
    return s


def trial_betas(beta: float, trials: int, split: str = "even") -> tuple[float, ...]:
    """The failure probability of each trial of an audit.

    Parameters
    ----------
    beta : float
        The trials' total failure probability, in (0, 1).
    trials : int
        The trial budget ``T`` >= 1.
    split : {"even", "front"}
        See the module docstring.

    Returns
    -------
    tuple of float
        ``T`` positive numbers, fixed by the arguments alone, whose floating-point sum is at most
        ``beta`` (rounded down where needed: errs on the side of a smaller total).

    Raises
    ------
    ValueError
        If ``beta`` is not in (0, 1), ``trials`` < 1, or ``split`` is unknown.
    """
    beta = float(beta)
    if not (0.0 < beta < 1.0):
        raise ValueError(f"beta must be in (0, 1), got {beta!r}")
    if isinstance(trials, bool) or int(trials) != trials or int(trials) < 1:
        raise ValueError(f"trials must be a positive integer, got {trials!r}")
    t = int(trials)
    if split == "even" or t == 1:
        if split not in BETA_SPLITS:
            raise ValueError(f"split must be 'even' or 'front', got {split!r}")
        betas = [beta / t] * t
    elif split == "front":
        first = beta / 2
        betas = [first] + [(beta - first) / (t - 1)] * (t - 1)
    else:
        raise ValueError(f"split must be 'even' or 'front', got {split!r}")
    while math.fsum(betas) > beta:  # never more than beta in all, even by a rounding
        betas = [math.nextafter(b, 0.0) for b in betas]
    return tuple(betas)

"""Trade-off plots (matplotlib's Agg canvas; pyplot's global state is left alone)."""

from __future__ import annotations

import numpy as np

__all__ = ["approx_dp_tradeoff", "draw_tradeoff", "plot_tradeoff"]


def approx_dp_tradeoff(alpha, epsilon: float, delta: float = 0.0):
    """Trade-off function of (epsilon, delta)-DP: ``max(0, 1 - delta - e^eps a, e^{-eps}(1 - delta - a))``.

    Kairouz, Oh, Viswanath (2015); Dong, Roth, Su (2022), Prop. 2.5.

    Parameters
    ----------
    alpha : array
        Type I errors in [0, 1].
    epsilon : float
        Epsilon in nats, ``>= 0``.
    delta : float
        Delta in [0, 1).

    Returns
    -------
    ndarray
        Type II errors, same shape as ``alpha``.

    Raises
    ------
    ValueError
        If ``epsilon < 0`` or ``delta`` is outside ``[0, 1)``.
    """
    a = np.asarray(alpha, dtype=float)
    if not (epsilon >= 0) or not (0 <= delta < 1):
        raise ValueError(f"need epsilon >= 0 and 0 <= delta < 1, got epsilon={epsilon!r}, delta={delta!r}")
    e = np.exp(epsilon)
    return np.maximum(0.0, np.maximum(1.0 - delta - e * a, (1.0 - delta - a) / e))


#: smallest type I error shown on log axes, and the floor of powers drawn there
_LOG_FLOOR = 1e-6
_TINY = 1e-12


def draw_tradeoff(ax, curves, *, log: bool = False, certified=None) -> None:
    """Draw trade-off curves on a matplotlib ``Axes`` (the one drawing of trade-off curves:
    :func:`plot_tradeoff` and the reports' :func:`dpaudit.report.plots.tradeoff_png` use it).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    curves : list of (label, alpha array, beta array, style dict)
        Type II errors ``beta`` at type I errors ``alpha``; style is passed to ``Axes.plot``.
    log : bool
        Draw the ROC form instead (power ``1 - beta`` against ``alpha`` on log-log axes), which
        shows the small-error region that decides large epsilons (Carlini et al. 2022's convention).
    certified : (alpha array, beta array), optional
        A certified upper bound on the trade-off function: the region between it and perfect
        privacy is shaded (ruled out).

    Sets the axes' scales, limits, labels and grid, with the perfect-privacy line; titles and
    legends are left to the caller.
    """
    if log:
        positive = [np.asarray(a, dtype=float) for _, a, _, _ in curves]
        positive = [a[a > 0] for a in positive if np.any(a > 0)]
        lo = max(_LOG_FLOOR, min(float(a.min()) for a in positive)) if positive else _LOG_FLOOR
        if certified is not None:
            a, b = (np.asarray(v, dtype=float) for v in certified)
            keep = a > 0
            ak = a[keep]
            ax.fill_between(ak, np.maximum(ak, _TINY), np.maximum(1.0 - b[keep], ak), color="C0", alpha=0.15, lw=0)
        ax.plot([lo, 1.0], [lo, 1.0], color="0.7", ls=":", lw=1, label="perfect privacy")
        for label, a, b, style in curves:
            a = np.asarray(a, dtype=float)
            keep = a > 0
            ax.plot(a[keep], np.maximum(1.0 - np.asarray(b, dtype=float)[keep], _TINY), label=label, **(style or {}))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, 1)
        ax.set_ylim(lo, 1)
        ax.set_xlabel("FPR (log)")
        ax.set_ylabel("TPR = 1 - FNR (log)")
        ax.grid(alpha=0.3, which="both")
        return
    if certified is not None:
        a, b = (np.asarray(v, dtype=float) for v in certified)
        ax.fill_between(a, b, np.maximum(b, 1.0 - a), color="C0", alpha=0.15, lw=0, label="ruled out (certified)")
    ax.plot([0.0, 1.0], [1.0, 0.0], color="0.7", ls=":", lw=1, label="perfect privacy")
    for label, a, b, style in curves:
        ax.plot(a, b, label=label, **(style or {}))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("type I error (FPR)")
    ax.set_ylabel("type II error (FNR)")
    ax.grid(alpha=0.3)


def plot_tradeoff(path, curves, *, title: str = "Trade-off curves", log: bool = False):
    """Write a trade-off plot to ``path`` (PNG).

    Parameters
    ----------
    path : str or Path
        Output file.
    curves : list of (label, alpha array, beta array, style dict)
        Curves to draw; style is passed to ``Axes.plot``.
    title : str
    log : bool
        Draw the ROC form instead (power ``1 - beta`` against ``alpha`` on log-log axes), which
        shows the small-error region that decides large epsilons.

    Returns
    -------
    str
        The path written.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.2, 5.0), dpi=120)
    FigureCanvasAgg(fig)  # Agg canvas: no GUI, no change to pyplot's global backend
    ax = fig.add_subplot()
    draw_tradeoff(ax, curves, log=log)
    if not log:
        ax.set_aspect("equal")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="lower right" if log else "upper right")
    fig.tight_layout()
    fig.savefig(path)
    return str(path)

"""Trade-off plots (matplotlib's Agg canvas; pyplot's global state is left alone)."""

from __future__ import annotations

import numpy as np

__all__ = ["approx_dp_tradeoff", "plot_tradeoff"]


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
    """
    a = np.asarray(alpha, dtype=float)
    if not (epsilon >= 0) or not (0 <= delta < 1):
        raise ValueError(f"need epsilon >= 0 and 0 <= delta < 1, got epsilon={epsilon!r}, delta={delta!r}")
    e = np.exp(epsilon)
    return np.maximum(0.0, np.maximum(1.0 - delta - e * a, (1.0 - delta - a) / e))


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
    if log:
        # ROC form on log-log axes (power 1 - FNR against FPR): the small-FPR corner, where large
        # epsilons show, becomes visible (Carlini et al. 2022's convention).
        grid = np.geomspace(1e-6, 1, 200)
        ax.plot(grid, grid, color="0.8", lw=0.8, ls=":", label="perfect privacy")
        for label, a, b, style in curves:
            a = np.asarray(a, dtype=float)
            keep = a > 0
            ax.plot(a[keep], 1.0 - np.asarray(b, dtype=float)[keep], label=label, **(style or {}))
        ax.set_xscale("log")
        ax.set_yscale("log")
        lo = max(1e-6, min(float(np.min(np.asarray(c[1])[np.asarray(c[1]) > 0])) for c in curves)) if curves else 1e-6
        ax.set_xlim(lo, 1)
        ax.set_ylim(lo, 1)
        ax.set_xlabel("type I error (FPR)")
        ax.set_ylabel("power, 1 - type II error (TPR)")
    else:
        ax.plot([0, 1], [1, 0], color="0.8", lw=0.8, ls=":", label="perfect privacy: 1 - a")
        for label, a, b, style in curves:
            ax.plot(a, b, label=label, **(style or {}))
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_aspect("equal")
        ax.set_xlabel("type I error (FPR)")
        ax.set_ylabel("type II error (FNR)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="lower right" if log else "upper right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    return str(path)

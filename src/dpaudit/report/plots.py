"""Plot helpers shared by the report formats: each returns PNG bytes.

Figures are drawn on matplotlib's Agg canvas without touching pyplot's global state, and saved
without metadata that changes between runs (no software or date stamp), so the same data give the
same bytes on the same matplotlib.
"""

from __future__ import annotations

import io

import numpy as np

__all__ = [
    "accounting_online_png",
    "accounting_profile_png",
    "output_distributions_png",
    "privacy_profile_png",
    "tradeoff_png",
    "trials_png",
]

_DPI = 110
MAX_DISCRETE = 30  # outputs with at most this many distinct values are drawn as frequency bars


def _g4(v) -> str:
    return f"{float(v):.4g}"


def _figure(width: float = 6.4, height: float = 4.0, ncols: int = 1):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=_DPI)
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


_NO_STAMP = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None},
             "pdf": {"CreationDate": None, "Creator": None, "Producer": None}}


def _png(fig, format: str = "png") -> bytes:
    """The figure's bytes in ``format`` (png, svg or pdf), without run-dependent metadata."""
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format=format, dpi=_DPI, metadata=_NO_STAMP.get(format, {}))
    return buf.getvalue()


def _finish(fig, ax, xlabel: str, ylabel: str, title: str, format: str) -> bytes:
    """Label, grid, legend and title a one-axes figure; its bytes in ``format``."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=9)
    return _png(fig, format)


def _projection(x0: np.ndarray, x1: np.ndarray):
    """First two principal axes of the pooled outputs (signs fixed), or the raw coordinates."""
    pooled = np.vstack([x0, x1])
    if pooled.shape[1] <= 2:
        return x0, x1, ("output[0]", "output[1]")
    mean = pooled.mean(axis=0)
    _, _, vt = np.linalg.svd(pooled - mean, full_matrices=False)
    axes = vt[:2]
    signs = np.where(axes[np.arange(2), np.argmax(np.abs(axes), axis=1)] < 0, -1.0, 1.0)
    axes = axes * signs[:, None]
    return (x0 - mean) @ axes.T, (x1 - mean) @ axes.T, ("principal axis 1", "principal axis 2")


def output_distributions_png(x0, x1, *, labels=("M(D0)", "M(D1)"), title: str = "") -> bytes:
    """Histograms (1-D outputs) or a 2-D scatter (vector outputs) of two output samples.

    Parameters
    ----------
    x0, x1 : array, shape (n,) or (n, d)
        Outputs of the mechanism on D0 and on D1.
    labels : tuple of str
    title : str

    Returns
    -------
    bytes
        PNG image. Outputs taking at most ``MAX_DISCRETE`` distinct values are drawn as the
        frequency of each value; vector outputs of more than two coordinates are projected on the
        first two principal axes of the pooled outputs.
    """
    x0 = np.asarray(x0, dtype=float)
    x1 = np.asarray(x1, dtype=float)
    x0 = x0.reshape(len(x0), -1)
    x1 = x1.reshape(len(x1), -1)
    values = np.unique(np.vstack([x0, x1]), axis=0)
    if len(values) <= MAX_DISCRETE:
        fig, (ax,) = _figure(max(5.6, 0.35 * len(values) + 2.5), 3.8)
        f0 = (x0[:, None, :] == values[None]).all(axis=2).mean(axis=0)
        f1 = (x1[:, None, :] == values[None]).all(axis=2).mean(axis=0)
        pos = np.arange(len(values))
        ax.bar(pos - 0.2, f0, width=0.4, color="C0", label=labels[0])
        ax.bar(pos + 0.2, f1, width=0.4, color="C3", label=labels[1])
        names = [_g4(v[0]) if len(v) == 1 else "(" + ", ".join(_g4(t) for t in v) + ")" for v in values]
        ax.set_xticks(pos)
        ax.set_xticklabels(names, rotation=45 if len(values) > 6 or max(map(len, names)) > 8 else 0, ha="right", fontsize=7)
        ax.set_ylabel("frequency")
        ax.set_xlabel("output (each distinct value)")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3, axis="y")
        if title:
            fig.suptitle(title, fontsize=10)
        return _png(fig)
    if x0.shape[1] == 1:
        fig, (ax, ax2) = _figure(9.0, 3.6, ncols=2)
        a, b = x0[:, 0], x1[:, 0]
        pooled = np.concatenate([a, b])
        lo, hi = np.quantile(pooled, [0.001, 0.999]) if pooled.size > 20 else (pooled.min(), pooled.max())
        if not hi > lo:
            lo, hi = lo - 0.5, hi + 0.5
        bins = np.linspace(lo, hi, 61)
        ax.hist(np.clip(a, lo, hi), bins=bins, density=True, histtype="stepfilled", alpha=0.45, color="C0", label=labels[0])
        ax.hist(np.clip(b, lo, hi), bins=bins, density=True, histtype="stepfilled", alpha=0.45, color="C3", label=labels[1])
        ax.set_xlabel("output")
        ax.set_ylabel("density")
        ax.set_title("histogram (0.1%-99.9% range)", fontsize=9)
        ax.legend(fontsize=8)
        for s, c, lab in ((a, "C0", labels[0]), (b, "C3", labels[1])):
            xs = np.sort(s)
            ax2.step(xs, np.arange(1, xs.size + 1) / xs.size, where="post", color=c, label=lab)
        ax2.set_xlim(lo, hi)
        ax2.set_xlabel("output")
        ax2.set_ylabel("empirical CDF")
        ax2.set_title("ECDF", fontsize=9)
        ax2.grid(alpha=0.3)
        ax2.legend(fontsize=8)
    else:
        fig, (ax,) = _figure(5.6, 4.6)
        p0, p1, names = _projection(x0, x1)
        if p0.shape[1] == 1:
            p0 = np.hstack([p0, np.zeros_like(p0)])
            p1 = np.hstack([p1, np.zeros_like(p1)])
        ax.scatter(p0[:, 0], p0[:, 1], s=4, alpha=0.35, color="C0", label=labels[0], rasterized=True)
        ax.scatter(p1[:, 0], p1[:, 1], s=4, alpha=0.35, color="C3", label=labels[1], rasterized=True)
        ax.set_xlabel(names[0])
        ax.set_ylabel(names[1])
        ax.legend(fontsize=8, markerscale=3)
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=10)
    return _png(fig)


def privacy_profile_png(eps_grid, curves, allowed, *, claimed_epsilon: float, witness_epsilon=None, title: str = "") -> bytes:
    """Certified hockey-stick lower bounds against the claim's privacy profile, over eps'.

    Parameters
    ----------
    eps_grid : array, shape (n,)
        eps' values (nats); values <= 0 are dropped (the x axis is logarithmic).
    curves : list of (label, array of shape (n,))
        Lower bounds ``delta_lower_bound(eps')`` of the evidence (negative values are drawn at 0).
    allowed : array, shape (n,)
        The claim's ``delta_profile(eps')``.
    claimed_epsilon : float
        Marked with a vertical line.
    witness_epsilon : float, optional
        Where the violation is shown (marked), if any.
    title : str

    Returns
    -------
    bytes
        PNG image. Where a lower bound lies above the claim's curve the claim is contradicted
        (shaded red).
    """
    e = np.asarray(eps_grid, dtype=float)
    keep = e > 0
    e = e[keep]
    allowed = np.asarray(allowed, dtype=float)[keep]
    fig, (ax,) = _figure(6.8, 4.2)
    ax.plot(e, allowed, color="k", lw=1.6, label="claim allows: delta(eps')")
    for i, (label, y) in enumerate(curves):
        y = np.asarray(y, dtype=float)[keep]
        shown = np.maximum(y, 0.0)
        ax.plot(e, shown, color=f"C{i}", lw=1.4, label=f"certified lower bound, {label}")
        over = y > allowed
        if np.any(over):
            ax.fill_between(e, allowed, shown, where=over, color="red", alpha=0.25, lw=0)
    ax.axvline(claimed_epsilon, color="0.5", ls=":", lw=1, label=f"claimed eps = {claimed_epsilon:g}")
    if witness_epsilon is not None and witness_epsilon > 0:
        ax.axvline(witness_epsilon, color="red", ls="--", lw=1, label=f"violation shown at eps' = {witness_epsilon:.4g}")
    ax.set_xscale("log")
    ax.set_xlabel("eps' (nats, log scale)")
    ax.set_ylabel("hockey-stick divergence H_{e^eps'}")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7.5, loc="upper right")
    if title:
        ax.set_title(title, fontsize=9)
    return _png(fig)


def trials_png(indices, margins, violations) -> bytes:
    """Margin (lower bound minus what the claim allows) of each trial; above 0 is a violation.

    Parameters
    ----------
    indices : sequence of int
        1-based trial numbers.
    margins : sequence of float
    violations : sequence of bool

    Returns
    -------
    bytes
        PNG image.
    """
    fig, (ax,) = _figure(6.4, 2.8)
    m = np.asarray(margins, dtype=float)
    colors = ["C3" if v else "C0" for v in violations]
    ax.bar(np.asarray(indices), np.where(np.isfinite(m), m, 0.0), color=colors)
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xlabel("trial")
    ax.set_ylabel("margin")
    ax.set_title("margin per trial (red: violation)", fontsize=9)
    ax.grid(alpha=0.3, axis="y")
    return _png(fig)


def tradeoff_png(alpha, upper, others, claim=None, *, format: str = "png") -> bytes:
    """Trade-off curves: linear axes, and the ROC form on log-log axes (the low-FPR region).

    Parameters
    ----------
    alpha : array, shape (n,)
        Type I errors (FPR) in [0, 1], increasing.
    upper : array, shape (n,)
        Certified upper bound on the trade-off function (type II error); the region between it
        and perfect privacy ``1 - alpha`` is shaded: the mechanism's curve lies below the bound.
    others : list of (label, array of shape (n,))
        Other curves (baselines, estimates).
    claim : tuple (label, array of shape (n,)), optional
        The claim's trade-off function.
    format : str
        ``"png"`` (default), ``"svg"`` or ``"pdf"``.

    Returns
    -------
    bytes
        The image (PNG unless ``format`` says otherwise).
    """
    from ..scores.plot import draw_tradeoff

    a = np.asarray(alpha, dtype=float)
    curves = [("certified upper bound", a, upper, {"color": "C0", "lw": 2})]
    curves += [(label, a, y, {"color": f"C{i + 1}", "lw": 1.1, "ls": "--"}) for i, (label, y) in enumerate(others)]
    if claim is not None:
        curves.append((claim[0], a, claim[1], {"color": "k", "lw": 1.3}))
    fig, (ax, ax2) = _figure(10.0, 4.6, ncols=2)
    draw_tradeoff(ax, curves, certified=(a, upper))
    ax.set_title("trade-off curve", fontsize=9)
    ax.legend(fontsize=7)
    draw_tradeoff(ax2, curves, log=True, certified=(a, upper))
    ax2.set_title("ROC form, log-log (low-FPR region)", fontsize=9)
    return _png(fig, format)


def accounting_online_png(steps, epsilon, rdp=None, *, title: str = "", format: str = "png") -> bytes:
    """epsilon(delta) after each step: ``epsilon`` (floats, nats) against ``steps`` (ints), with
    the looser ``rdp`` bound after each step if given, under ``title``.

    Returns the image as bytes in ``format`` (``"png"``, default, ``"svg"`` or ``"pdf"``).
    """
    fig, (ax,) = _figure(6.4, 4.0)
    ax.plot(steps, epsilon, color="C0", lw=1.6, label="epsilon (reported)")
    if rdp is not None:
        ax.plot(steps, rdp, color="C1", ls="--", lw=1.1, label="RDP bound")
    return _finish(fig, ax, "step", "epsilon (nats)", title, format)


def accounting_profile_png(eps, curves, mark=None, *, title: str = "", format: str = "png") -> bytes:
    """Privacy profile delta(eps) on a log delta axis: ``curves`` (list of (label, array of
    shape (n,)): upper bounds on delta at ``eps``, nan where unknown) and, if given, the
    reported point ``mark`` = (eps, delta), under ``title``.

    Returns the image as bytes in ``format`` (``"png"``, default, ``"svg"`` or ``"pdf"``).
    """
    fig, (ax,) = _figure(6.4, 4.0)
    tops = []
    for i, (label, y) in enumerate(curves):
        y = np.asarray(y, dtype=float)
        ax.plot(eps, y, color=f"C{i}", ls="-" if i == 0 else "--", label=label)
        tops.append(y)
    if tops:
        v = np.concatenate(tops)
        v = v[np.isfinite(v) & (v > 0)]
        if v.size:
            ax.set_ylim(max(v.min() / 30.0, 1e-300), min(1.5, v.max() * 3.0))
    if mark is not None:
        ax.plot([mark[0]], [mark[1]], "ko", label=f"reported: eps={mark[0]:.4g}, delta={mark[1]:.3g}")
    ax.set_yscale("log")
    return _finish(fig, ax, "epsilon (nats)", "delta(epsilon)", title, format)

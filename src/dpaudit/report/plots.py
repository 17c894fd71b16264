"""Plot helpers shared by the report formats: each returns PNG bytes.

Figures are drawn on matplotlib's Agg canvas without touching pyplot's global state, and saved
without metadata that changes between runs (no software or date stamp), so the same data give the
same bytes on the same matplotlib.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

__all__ = [
    "accounting_online_png",
    "accounting_profile_png",
    "output_distributions_png",
    "ProfileScale",
    "privacy_profile_figure",
    "privacy_profile_png",
    "profile_scale",
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


def _legend(ax, **kw) -> None:
    """Draw ``ax``'s legend with each label once (the first artist of a repeated label)."""
    handles, labels = ax.get_legend_handles_labels()
    seen: dict = {}
    for h, lab in zip(handles, labels):
        seen.setdefault(lab, h)
    ax.legend(list(seen.values()), list(seen.keys()), **kw)


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


@dataclass(frozen=True)
class ProfileScale:
    """Axis limits of a privacy-profile plot, chosen from the data (:func:`profile_scale`).

    Attributes
    ----------
    xlim : (float, float)
        eps' range (nats; the x axis is logarithmic).
    ylim : (float, float)
        delta range.
    yscale : {"linear", "log"}
        ``"log"`` when the values that matter span more than ``LOG_SPAN`` (two decades).
    """

    xlim: tuple
    ylim: tuple
    yscale: str


LOG_SPAN = 100.0  # the y axis of a privacy profile is logarithmic when its key values span more than this


def _merge_curves(curves) -> list:
    """``curves`` (list of (label, array)) with repeated labels merged into their pointwise
    maximum, in order of first appearance (the maximum of lower bounds is a lower bound)."""
    merged: dict = {}
    for label, y in curves:
        y = np.asarray(y, dtype=float)
        merged[label] = np.fmax(merged[label], y) if label in merged else y
    return list(merged.items())


def profile_scale(eps_grid, curves, allowed, *, claimed_epsilon: float, witness_epsilon=None) -> ProfileScale:
    """Axis limits for :func:`privacy_profile_figure` that follow the data.

    The x axis runs from the smallest positive eps' of the grid to three times the largest of
    the claimed epsilon, the witness and the last eps' where some lower bound is positive (at
    most the grid's end). The y axis is scaled to the *key values*: each curve's peak, the
    claim's delta at the claimed epsilon and the evidence at the witness, when positive. It is
    logarithmic when they span more than ``LOG_SPAN`` (e.g. a claimed delta of 1e-5 against a
    lower bound of 0.1), from a tenth of the smallest to three times the largest (at most 1.5);
    linear otherwise, from slightly below 0 to 1.55 times the largest (room for the legend).
    With no positive key value (nothing found, pure-DP claim) it is linear on [0, 1].

    Parameters
    ----------
    eps_grid : array, shape (n,)
        eps' values (nats).
    curves : list of (label, array of shape (n,))
        Lower bounds on delta(eps') (may be negative).
    allowed : array, shape (n,)
        The claim's delta(eps').
    claimed_epsilon : float
    witness_epsilon : float, optional

    Returns
    -------
    ProfileScale
    """
    e = np.asarray(eps_grid, dtype=float)
    keep = e > 0
    e = e[keep]
    allowed = np.asarray(allowed, dtype=float)[keep]
    ys = [np.asarray(y, dtype=float)[keep] for _, y in curves]
    right = [float(claimed_epsilon)]
    if witness_epsilon is not None and witness_epsilon > 0:
        right.append(float(witness_epsilon))
    for y in ys:
        pos = np.flatnonzero(np.isfinite(y) & (y > 0))
        if pos.size:
            right.append(float(e[pos[-1]]))
    x_lo, x_hi = float(e.min()), float(min(e.max(), 3.0 * max(right)))
    if not x_hi > x_lo:
        x_hi = float(e.max())
    key = [float(np.nanmax(y)) for y in ys if y.size and np.any(np.isfinite(y))]
    key.append(float(np.interp(np.log(claimed_epsilon), np.log(e), allowed)) if claimed_epsilon > 0 else 0.0)
    if witness_epsilon is not None and ys:
        wx = witness_epsilon if witness_epsilon > 0 else e.min()
        key.append(max(float(np.interp(np.log(wx), np.log(e), y)) for y in ys))
    key = [v for v in key if np.isfinite(v) and v > 0]
    if not key:
        return ProfileScale((x_lo, x_hi), (-0.02, 1.02), "linear")
    top, low = max(key), min(key)
    if top / low > LOG_SPAN:
        return ProfileScale((x_lo, x_hi), (low / 10.0, min(1.5, top * 3.0)), "log")
    return ProfileScale((x_lo, x_hi), (-0.04 * top, 1.55 * top), "linear")


def privacy_profile_figure(eps_grid, curves, allowed, *, claimed_epsilon: float, witness_epsilon=None, title: str = ""):
    """The privacy-profile figure of :func:`privacy_profile_png` (a matplotlib ``Figure``, not
    attached to pyplot), for tests and other formats.

    Parameters and drawing as :func:`privacy_profile_png`.

    Returns
    -------
    matplotlib.figure.Figure
        One axes, limits from :func:`profile_scale`, a legend without repeated labels.
    """
    scale = profile_scale(eps_grid, curves, allowed, claimed_epsilon=claimed_epsilon, witness_epsilon=witness_epsilon)
    e = np.asarray(eps_grid, dtype=float)
    keep = e > 0
    e = e[keep]
    allowed = np.asarray(allowed, dtype=float)[keep]
    fig, (ax,) = _figure(6.8, 4.2)
    log = scale.yscale == "log"
    floor = scale.ylim[0] if log else 0.0
    ax.plot(e, np.maximum(allowed, floor), color="k", lw=1.8, zorder=3, label="what the claim allows")
    merged = _merge_curves(curves)
    best = None
    for i, (label, y) in enumerate(merged):
        y = np.asarray(y, dtype=float)[keep]
        shown = np.maximum(y, floor)
        ax.plot(e, shown, color=f"C{i}", lw=1.5, zorder=4, label=f"evidence: certified lower bound, {label}")
        over = y > allowed
        if np.any(over):
            ax.fill_between(e, np.maximum(allowed, floor), shown, where=over, color="red", alpha=0.2, lw=0, zorder=2)
        best = y if best is None else np.fmax(best, y)
    ax.axvline(claimed_epsilon, color="k", ls="--", lw=1.2, zorder=5, label=f"claimed \u03b5 = {claimed_epsilon:g}")
    if witness_epsilon is not None and best is not None:
        wx = witness_epsilon if witness_epsilon > 0 else e.min()  # eps' = 0 is drawn at the left edge
        wy = float(np.interp(np.log(wx), np.log(e), best))
        wa = float(np.interp(np.log(wx), np.log(e), allowed))
        ax.plot([wx], [max(wy, floor)], "o", color="red", mec="k", ms=7, zorder=6,
                label=f"violation: \u03b4 \u2265 {wy:.3g} at \u03b5\u2032 = {witness_epsilon:.3g} (claim allows {wa:.2g})")
    ax.set_xscale("log")
    ax.set_yscale(scale.yscale)
    ax.set_xlim(*scale.xlim)
    ax.set_ylim(*scale.ylim)
    ax.set_xlabel("\u03b5\u2032, privacy loss level (nats, log scale)")
    ax.set_ylabel("privacy loss bound \u03b4(\u03b5\u2032)" + (" (log scale)" if log else ""))
    ax.grid(alpha=0.3)
    if best is None or not np.any(best > 0):
        ax.text(0.02, 0.5, "every certified lower bound is 0 or less:\nno evidence against the claim",
                transform=ax.transAxes, fontsize=8, color="0.3")
    _legend(ax, fontsize=7.5, loc="best")
    if title:
        ax.set_title(title, fontsize=9)
    return fig


def privacy_profile_png(eps_grid, curves, allowed, *, claimed_epsilon: float, witness_epsilon=None, title: str = "") -> bytes:
    """Certified hockey-stick lower bounds against the claim's privacy profile, over eps'.

    Parameters
    ----------
    eps_grid : array, shape (n,)
        eps' values (nats); values <= 0 are dropped (the x axis is logarithmic).
    curves : list of (label, array of shape (n,))
        Lower bounds ``delta_lower_bound(eps')`` of the evidence (negative values are drawn at the
        axis' floor). Curves sharing a label are drawn once, as their pointwise maximum.
    allowed : array, shape (n,)
        The claim's ``delta_profile(eps')``.
    claimed_epsilon : float
        Marked with a dashed vertical line, drawn over the curves.
    witness_epsilon : float, optional
        Where the violation is shown (a red dot on the largest lower bound; eps' = 0 at the left
        edge), if any.
    title : str

    Returns
    -------
    bytes
        PNG image, axes scaled to the data (:func:`profile_scale`). Where a lower bound lies
        above the claim's curve the claim is contradicted (shaded red).
    """
    return _png(privacy_profile_figure(eps_grid, curves, allowed, claimed_epsilon=claimed_epsilon,
                                       witness_epsilon=witness_epsilon, title=title))


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

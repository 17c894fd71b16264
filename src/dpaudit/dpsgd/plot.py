"""Empirical vs accounted epsilon: the picture of a set of DP-SGD audits."""

from __future__ import annotations

import io

__all__ = ["epsilon_plot"]


def epsilon_plot(rows, path=None, *, title: str = "DP-SGD: what one run proves vs what the accountant says"):
    """Scatter of certified lower bounds and labelled estimates against the accountant's epsilon.

    Parameters
    ----------
    rows : sequence of dict or DPSGDAudit
        Each with ``accountant`` (or ``accountant_epsilon``), ``lb`` (or ``epsilon_lower_bound``),
        optionally ``fit``/``pld`` (or ``epsilon_estimate_fit``/``epsilon_estimate_pld``), ``q``
        and ``m`` (canaries) for the marker and colour; a row with ``violated`` true is ringed.
    path : str or Path, optional
        Where to write the figure (format from the suffix); else PNG bytes are returned.
    title : str

    Returns
    -------
    bytes or None
        PNG bytes when ``path`` is None.

    Raises
    ------
    ValueError
        When no row has a positive accountant epsilon.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def get(r, *names):
        for n in names:
            v = r.get(n) if isinstance(r, dict) else getattr(r, n, None)
            if v is not None:
                return v
        return None

    pts = [r for r in rows if (get(r, "accountant", "accountant_epsilon") or 0) > 0]
    if not pts:
        raise ValueError("no row with a positive accountant epsilon to plot")
    fig, ax = plt.subplots(figsize=(6.4, 5.0))
    acc = [float(get(r, "accountant", "accountant_epsilon")) for r in pts]
    lo, hi = min(acc) / 1.5, max(acc) * 4
    ax.plot([lo, hi], [lo, hi], color="0.3", lw=1, ls="--", label="accountant's epsilon (y = x)")
    seen = set()
    for r, a in zip(pts, acc):
        q, m = get(r, "q"), get(r, "m", "canaries")
        key = f"q={q:g}" if q is not None else ""
        style = {"marker": "o" if (m or 0) >= 5000 else "s", "color": "C0" if q in (None, 1.0) else "C1"}
        lab = f"certified lower bound ({key}, {m:,} canaries)" if m else f"certified lower bound {key}"
        lb = float(get(r, "lb", "epsilon_lower_bound"))
        if lb > 0:
            ax.scatter([a], [lb], s=36, label=None if lab in seen else lab, zorder=3, **style)
            seen.add(lab)
            if get(r, "violated"):
                ax.scatter([a], [lb], s=140, facecolors="none", edgecolors="red", zorder=4,
                           label=None if "violation" in seen else "violation")
                seen.add("violation")
        fit = get(r, "fit", "epsilon_estimate_fit")
        if fit is not None and 0 < float(fit) < hi:
            lab2 = "estimate: fitted per-step mechanism, composed"
            ax.scatter([a], [float(fit)], marker="x", color="0.2", s=30, label=None if lab2 in seen else lab2, zorder=2)
            seen.add(lab2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo / 20, hi)
    ax.set_xlabel("accountant's epsilon (upper bound)")
    ax.set_ylabel("epsilon from the run (lower bound, or estimate)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
        return None
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    plt.close(fig)
    return buf.getvalue()

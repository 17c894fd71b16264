"""Pictures of DP-SGD audits: empirical vs accounted epsilon for a set of audits
(:func:`epsilon_plot`), and the evidence of one run (:func:`audit_plot`)."""

from __future__ import annotations

import io

__all__ = ["audit_plot", "epsilon_plot"]


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

    def as_row(r):
        if isinstance(r, dict):
            return r
        cfg = getattr(r, "config", None)  # a DPSGDAudit: its own field names
        return {"accountant": r.accountant_epsilon, "lb": r.epsilon_lower_bound, "fit": r.epsilon_estimate_fit,
                "pld": r.epsilon_estimate_pld, "q": getattr(cfg, "sampling_rate", None), "m": r.canaries,
                "violated": r.violated}

    rows = [as_row(r) for r in rows]
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
    return _write(fig, path)


def audit_plot(run, audit, path=None, *, score=None, title=None):
    """The evidence of one DP-SGD audit: the canaries' scores, included vs excluded, next to the
    epsilons (the accountant's, the certified lower bound, the two estimates).

    Left panel: histograms (densities on common bins) of one score function's per-canary scores
    (default: the audit's best, ``audit.best_score``) for the included and the excluded canaries;
    where that score's one-run audit guessed on all canaries (``selection="grid"``), dashed lines
    mark its guessing thresholds (the highest ``k_plus`` scores guessed included, the lowest
    ``k_minus`` excluded). Separated histograms are what a leak looks like; for a correct
    implementation they overlap as much as the accountant allows. Right panel: horizontal bars
    of the accountant's epsilon (upper bound), the certified one-run lower bound (red when it
    exceeds the accountant: a violation) and the two labelled estimates, all at ``audit.delta``;
    an infinite or unavailable estimate is written, not drawn.

    Parameters
    ----------
    run : TrainingRun
        The run that was audited (its observations, mask, pattern and config).
    audit : DPSGDAudit
        ``audit_run(run, ...)``.
    path : str or Path, optional
        Where to write the figure (format from the suffix: .png, .pdf, .svg); else PNG bytes are
        returned.
    score : str, optional
        A key of ``audit.one_run`` (default ``audit.best_score``).
    title : str, optional
        Default: the variant, the claimed ``(sigma, q, steps)`` and the verdict.

    Returns
    -------
    bytes or None
        PNG bytes when ``path`` is None.

    Raises
    ------
    ValueError
        When ``score`` is not one of the audit's score functions, or ``run`` has not the
        audit's number of canaries.

    References
    ----------
    Steinke, Nasr, Jagielski (2023) (one-run guesses on the highest and lowest scores);
    ``docs/dpsgd.md`` §2.
    """
    import math

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from .audit import canary_scores

    kind = audit.best_score if score is None else score
    if kind not in audit.one_run:
        raise ValueError(f"score must be one of the audit's score functions {sorted(audit.one_run)}, got {kind!r}")
    mask = np.asarray(run.mask, dtype=bool)
    if mask.size != audit.canaries:
        raise ValueError(f"the run has {mask.size} canaries, the audit {audit.canaries}: not the audited run")
    cfg = run.config
    if kind == "final":
        sc = np.asarray(run.final_scores, dtype=float)
    else:
        sc = canary_scores(run.observations, cfg.noise_multiplier, cfg.sampling_rate, kind,
                           None if kind == "spread" else getattr(run, "pattern", None))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10.5, 4.2), gridspec_kw={"width_ratios": [1.35, 1.0]})
    finite = sc[np.isfinite(sc)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    bins = np.linspace(lo, hi if hi > lo else lo + 1.0, 50)
    ax.hist(sc[mask], bins=bins, density=True, alpha=0.55, color="C3", label=f"included ({int(mask.sum()):,})")
    ax.hist(sc[~mask], bins=bins, density=True, alpha=0.55, color="C0", label=f"excluded ({int((~mask).sum()):,})")
    one = audit.one_run[kind]
    g = one.guess
    if one.selection == "grid" and one.m == sc.size and g.k_plus >= 0 and g.k_minus >= 0 and g.guesses:
        order = np.sort(sc)
        if g.k_plus:
            ax.axvline(order[-g.k_plus], color="C3", ls="--", lw=1,
                       label=f"top {g.k_plus:,} guessed included")
        if g.k_minus:
            ax.axvline(order[g.k_minus - 1], color="C0", ls="--", lw=1,
                       label=f"bottom {g.k_minus:,} guessed excluded")
    ax.set_xlabel(f"score {kind!r} per canary")
    ax.set_ylabel("density")
    ax.set_title(f"canary scores: {g.correct:,} of {g.guesses:,} guesses correct", fontsize=10)
    ax.legend(fontsize=7, loc="best")

    rows = [("accountant (upper bound)", audit.accountant_epsilon, "0.55", None),
            ("certified lower bound", audit.epsilon_lower_bound, "C3" if audit.violated else "C2", None),
            ("estimate: fitted mechanism", audit.epsilon_estimate_fit, "0.8", "//"),
            ("estimate: histogram PLD", audit.epsilon_estimate_pld, "0.8", "//")]
    # The scale follows the accountant and the certified bound; an estimate far above both (a
    # nearly noiseless fitted mechanism: 10^5) is drawn to the edge with its value written.
    anchor = max(audit.accountant_epsilon, audit.epsilon_lower_bound)
    shown = [v for _, v, _, _ in rows if math.isfinite(v) and 0 < v <= 5 * anchor]
    top = 1.15 * max(shown) if shown else 1.0
    notes = getattr(audit, "estimate_notes", {}) or {}
    for i, (label, v, colour, hatch) in enumerate(rows):
        y = len(rows) - 1 - i
        note = notes.get(("fit", "pld")[i - 2], "") if i >= 2 else ""
        if math.isfinite(v):
            bx.barh(y, min(v, top * 1.1), color=colour, hatch=hatch, edgecolor="0.3")
            text = f"{v:.3g}" + (" (off scale)" if v > top * 1.1 else "") + (" (below certified)" if "below the certified" in note else "")
            bx.text(min(v, top) + 0.01 * top, y, text, va="center", fontsize=8)
        else:
            bx.text(0.01 * top, y, "not computed (see the audit's estimate_notes)", va="center", fontsize=8)
    bx.axvline(audit.accountant_epsilon, color="0.3", ls="--", lw=1)
    bx.set_yticks(range(len(rows)))
    bx.set_yticklabels([r[0] for r in reversed(rows)], fontsize=8)
    bx.set_xlim(0, top * 1.12)
    bx.set_xlabel(f"epsilon at delta = {audit.delta:g}")
    bx.set_title(f"certified {audit.epsilon_lower_bound:.3g} vs accountant {audit.accountant_epsilon:.3g} "
                 f"(beta = {audit.beta:g})", fontsize=10)
    verdict = "VIOLATION" if audit.violated else "no violation found"
    fig.suptitle(title or f"DP-SGD audit ({audit.variant}): sigma = {cfg.noise_multiplier:.4g}, "
                          f"q = {cfg.sampling_rate:g}, {cfg.steps} steps, {audit.canaries:,} canaries: {verdict}",
                 fontsize=10)
    return _write(fig, path)


def _write(fig, path):
    """Lay out and close a pyplot figure: written to ``path`` (format from the suffix) and None,
    or its PNG bytes when ``path`` is None."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    try:
        if path is not None:
            fig.savefig(path, dpi=120)
            return None
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=120)
        return buf.getvalue()
    finally:
        plt.close(fig)

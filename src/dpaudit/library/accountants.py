"""Opacus's accountants against a certified lower bound on the true epsilon.

Opacus's accountants are releases too: each ``get_epsilon(delta)`` states an epsilon at which
DP-SGD (the Poisson-subsampled Gaussian mechanism) is claimed to be (epsilon, delta)-DP. This
module checks them on a grid against a lower bound on the true delta at that epsilon
(:func:`opacus_true_delta_lower`), the ``accountants`` stage of ``dpaudit library audit Opacus``,
and renders the table's section on them.
"""

from __future__ import annotations

import math
import time

from .registry import library_version

OPACUS_ACCOUNTANTS_KEY = "opacus.accountants"
"""Cache key of the Opacus accountant check (:func:`opacus_accountant_check`)."""

OPACUS_ACCOUNTANT_GRID = tuple((sigma, q, steps, 1e-5) for sigma in (0.6, 1.0, 2.0) for q in (0.01, 0.1, 1.0)
                               for steps in (1, 10, 100, 1000))
"""(noise multiplier sigma, sample rate q, steps, delta) at which Opacus's accountants are checked."""

OPACUS_ACCOUNTANTS = ("rdp", "prv", "gdp")
"""Opacus's accountants (``opacus.accountants.create_accountant``): RDPAccountant, PRVAccountant,
GaussianAccountant."""

OPACUS_PLD_INTERVAL = 1e-3
"""Loss grid (nats) of the optimistic PLD that lower-bounds the true delta(epsilon), up to 10 steps;
10 times coarser beyond (a coarser optimistic grid is still a lower bound, only looser; the fine
grid of 1,000 steps at sigma 0.6 took gigabytes)."""


def opacus_true_delta_lower(sigma: float, q: float, steps: int, *, interval: float = OPACUS_PLD_INTERVAL):
    """A function ``eps -> lower bound on the true delta(eps)`` of DP-SGD (Poisson-subsampled Gaussian).

    ``steps`` compositions of the Poisson-subsampled Gaussian mechanism with noise multiplier
    ``sigma`` and sample rate ``q`` under add/remove of one example (the mechanism Opacus
    accounts). For ``q = 1`` the composition is the Gaussian mechanism with ``mu = sqrt(steps) /
    sigma`` and the profile is exact (:func:`dpaudit.privacy.profiles.gaussian_delta`, Balle & Wang
    2018, Thm 8). Otherwise: dp_accounting's *optimistic* PLD on loss grid ``interval`` (losses
    rounded down, truncated tails dropped: its hockey-stick divergence is at most the true one),
    both directions, minus the FFT's floating-point charge (:func:`dpaudit.accounting._pld.pmf_delta`).

    Returns
    -------
    callable
        ``f(eps) -> float``: a lower bound on the true delta at ``eps`` (errs low).
    """
    import warnings  # noqa: PLC0415

    from dpaudit.accounting._pld import build_pld, pmf_delta, pmf_parts  # noqa: PLC0415
    from dpaudit.accounting.prv import Composition, SubsampledGaussianStep  # noqa: PLC0415
    from dpaudit.privacy.profiles import gaussian_delta  # noqa: PLC0415

    if q == 1.0:
        mu = math.sqrt(steps) / sigma
        return lambda eps: max(0.0, float(gaussian_delta(eps, mu)) - 1e-12)  # 1e-12: the normal cdf's rounding
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import logging  # noqa: PLC0415

        logging.disable(logging.WARNING)  # dp_accounting: 'Using Privacy Buckets algorithm instead'
        try:
            parts = pmf_parts(build_pld(Composition(((SubsampledGaussianStep(sigma, q), steps),)), interval,
                                        pessimistic=False))
        finally:
            logging.disable(logging.NOTSET)

    def lower(eps: float) -> float:
        return max([0.0] + [d - charge for d, charge in (pmf_delta(ls, ps, inf, eps) for ls, ps, inf in parts)])

    return lower


def opacus_accountant_check(grid=OPACUS_ACCOUNTANT_GRID) -> dict:
    """Check Opacus's accountants against a certified lower bound on the true epsilon.

    For each ``(sigma, q, steps, delta)``: Opacus's ``get_epsilon(delta)`` of each accountant of
    :data:`OPACUS_ACCOUNTANTS` after ``steps`` calls of ``step(noise_multiplier=sigma,
    sample_rate=q)`` (one history entry), and :func:`opacus_true_delta_lower` at that epsilon. An
    accountant whose reported epsilon has a lower-bounded true delta above ``delta`` under-states
    the privacy loss: the mechanism is *not* (epsilon, delta)-DP at the epsilon it reports (a
    violation, certified up to the PLD's floating-point control). ``eps_lower`` is the largest
    epsilon on a 1e-4 bisection whose lower-bounded delta still exceeds ``delta``: the true epsilon is
    above it.

    Returns
    -------
    dict
        ``version`` (Opacus), ``grid``, ``fingerprint`` (what a cached record must match), ``seconds``
        and ``rows``: one dict per grid point with ``sigma``,
        ``q``, ``steps``, ``delta``, ``eps_lower`` and per accountant ``{name: {"epsilon",
        "true_delta_lower", "under"}}`` (``under``: the certified violation).
    """
    import warnings  # noqa: PLC0415

    from opacus.accountants import create_accountant  # noqa: PLC0415

    t0 = time.perf_counter()
    rows = []
    for sigma, q, steps, delta in grid:
        interval = OPACUS_PLD_INTERVAL * (1 if steps <= 10 else 10)
        lower = opacus_true_delta_lower(sigma, q, steps, interval=interval)
        row = {"sigma": sigma, "q": q, "steps": steps, "delta": delta, "interval": interval}
        for name in OPACUS_ACCOUNTANTS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # GaussianAccountant's 'experimental' warning (quoted in the doc)
                acc = create_accountant(name)
                acc.history = [(sigma, q, steps)]
                try:
                    eps = float(acc.get_epsilon(delta=delta))
                except Exception as exc:  # an accountant that cannot answer: recorded, not a violation
                    row[name] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
                    continue
            d_low = lower(eps) if math.isfinite(eps) else 0.0
            row[name] = {"epsilon": eps, "true_delta_lower": d_low, "under": d_low > delta}
        lo, hi = 0.0, max([row[n]["epsilon"] for n in OPACUS_ACCOUNTANTS if "epsilon" in row[n]
                           and math.isfinite(row[n]["epsilon"])] + [1.0]) * 2 + 1.0
        if lower(lo) <= delta:
            row["eps_lower"] = 0.0
        else:
            while hi - lo > 1e-4:
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if lower(mid) > delta else (lo, mid)
            row["eps_lower"] = lo
        rows.append(row)
    version, grid = library_version("Opacus"), [list(g) for g in grid]
    return {"version": version, "grid": grid, "rows": rows, "seconds": round(time.perf_counter() - t0, 1),
            "fingerprint": {"version": version, "grid": grid, "interval": OPACUS_PLD_INTERVAL}}


def render_opacus_accountants(rec: dict | None) -> list[str]:
    """The doc's section on Opacus's accountants from the cached :func:`opacus_accountant_check` record."""
    if not rec or rec.get("version") != library_version("Opacus") or \
            rec.get("grid") != [list(g) for g in OPACUS_ACCOUNTANT_GRID]:
        return []
    under = {n: [r for r in rec["rows"] if (r.get(n) or {}).get("under")] for n in OPACUS_ACCOUNTANTS}
    lines = ["", f"## Opacus {rec['version']} accountants against a certified lower bound", "",
             "Opacus's accountants are releases too: each `get_epsilon(delta)` states an epsilon at which DP-SGD "
             "(the Poisson-subsampled Gaussian mechanism, noise multiplier sigma, sample rate q, `steps` steps, "
             "add/remove of one example) is claimed to be (epsilon, delta)-DP. Each epsilon is checked against a "
             "lower bound on the true delta at that epsilon: exact for q = 1 (a Gaussian mechanism with mu = "
             "sqrt(steps) / sigma), else dp_accounting's optimistic PLD (grid 1e-3 nats up to 10 steps, both directions, FFT "
             "round-off charged downwards; grid 1e-2 beyond 10 steps; `dpaudit.library.accountants.opacus_true_delta_lower`). An epsilon "
             "whose lower-bounded true delta exceeds delta is **under**: the mechanism is not (epsilon, delta)-DP "
             "at the epsilon Opacus reports. `eps_lower`: the true epsilon at delta is above it. Regenerate with "
             "`dpaudit library audit Opacus --stages accountants` "
             f"({len(rec['rows'])} grid points, {rec['seconds']:.0f} s). The lower bound is sound but loose where the "
             "optimistic PLD's truncation and coarse grid lose mass (at 1,000 steps and small q it can fall to 0): a "
             "row that is not under is not certified exact. `error`: Opacus's get_epsilon raised (the message is in "
             "the cache; GaussianAccountant's eps_from_mu root search fails at large mu).", ""]
    for n, cls in (("rdp", "RDPAccountant"), ("prv", "PRVAccountant"), ("gdp", "GaussianAccountant")):
        lines.append(f"* {cls} (`{n}`): {len(under[n])} of {len(rec['rows'])} grid points under the true epsilon"
                     + (f"; worst: sigma {max(under[n], key=lambda r: r[n]['true_delta_lower'])['sigma']:g}, "
                        f"q {max(under[n], key=lambda r: r[n]['true_delta_lower'])['q']:g}, "
                        f"{max(under[n], key=lambda r: r[n]['true_delta_lower'])['steps']} steps "
                        f"(true delta >= {max(r[n]['true_delta_lower'] for r in under[n]):.3g} at its epsilon)."
                        if under[n] else "."))
    lines += ["", OPACUS_ACCOUNTANT_CAUSE, "",
              "| sigma | q | steps | delta | eps_lower (certified) | RDP eps | PRV eps | GDP eps | true delta >= at GDP eps |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def cell(r, n):
        a = r.get(n) or {}
        if "error" in a:
            return "error"
        return f"**{a['epsilon']:.4g}** (under)" if a["under"] else f"{a['epsilon']:.4g}"

    for r in rec["rows"]:
        lines.append(f"| {r['sigma']:g} | {r['q']:g} | {r['steps']} | {r['delta']:g} | {r['eps_lower']:.4g} "
                     f"| {cell(r, 'rdp')} | {cell(r, 'prv')} | {cell(r, 'gdp')} "
                     f"| {(r.get('gdp') or {}).get('true_delta_lower', 0.0):.3g} |")
    return lines


OPACUS_ACCOUNTANT_CAUSE = (
    "Cause of the GDP rows, read in Opacus 1.6.0: opacus/accountants/analysis/gdp.py, compute_mu_poisson returns "
    "`sqrt(exp(sigma^-2) - 1) * sqrt(steps) * sample_rate`, the central-limit approximation of Bu, Dong, Long, "
    "Su (2020): mu-GDP of the subsampled composition holds only as steps grows with q sqrt(steps) fixed, "
    "and for few steps or small q it is below the true privacy loss; eps_from_mu then converts mu exactly. "
    "Documented: GaussianAccountant.__init__ warns 'GDP accounting is experimental and can underestimate privacy "
    "expenditure. Proceed with caution.' (opacus/accountants/gdp.py). A user who calls "
    "`PrivacyEngine(accountant='gdp')` and `make_private_with_epsilon` gets a noise multiplier calibrated by this "
    "approximation (opacus/accountants/utils.py, get_noise_multiplier)")
"""Why GaussianAccountant under-states epsilon (read from Opacus's source)."""

"""Build a :class:`~dpaudit.report.document.Document` from a command's JSON result.

One builder per command: :func:`audit_document` (``dpaudit test``), :func:`scores_document`
(``dpaudit audit-scores``) and :func:`account_document` (``dpaudit account``). Each reads only the
JSON-able dict the command prints with ``--json`` (plus what the CLI adds for the report: the
command that reproduces it, library versions, curves), so a report is a deterministic function of
that dict.
"""

from __future__ import annotations

import json
import math
import shlex

import numpy as np

from . import plots
from .document import Code, Document, Plot, Section, Table, Text

__all__ = ["GLOSSARY", "MODEL_SETTINGS", "account_document", "one_run_document", "scores_document", "audit_document"]


def _g(x, digits: int = 6) -> str:
    """A number for a table: ``-`` for None, ``inf``, else ``digits`` significant digits."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return f"{int(x):,}"
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:.{digits}g}"


def _dataset(d, max_items: int = 12) -> str:
    """A dataset (list of records) in one line, long ones shortened."""
    rows = list(d)
    def rec(r):
        r = list(r) if isinstance(r, (list, tuple)) else [r]
        return _g(r[0], 6) if len(r) == 1 else "(" + ", ".join(_g(v, 6) for v in r) + ")"
    shown = ", ".join(rec(r) for r in rows[:max_items])
    more = f", ... ({len(rows)} records)" if len(rows) > max_items else ""
    return f"[{shown}{more}]"


def _setting(value) -> str:
    """A setting's value as a reader wants it: numbers by :func:`_g` (``-`` for none), a record
    as ``name value, name value``, a list of records one after the other (``; ``), never JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return ", ".join(f"{str(k).replace('_', ' ')} {_setting(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        if any(isinstance(v, dict) for v in value):
            return "; ".join(_setting(v) for v in value)
        return ", ".join(_setting(v) for v in value) if value else "-"
    return _g(value)


def _flatten(prefix: str, value, out: list) -> None:
    if isinstance(value, dict):
        for k in sorted(value):
            _flatten(f"{prefix}.{k}" if prefix else str(k), value[k], out)
    elif isinstance(value, (list, tuple)) and len(value) > 8:
        out.append((prefix, f"[{len(value)} values]"))
    else:
        out.append((prefix, _setting(value)))


def _settings_table(items: dict, caption: str = "") -> Table:
    rows: list = []
    for k, v in items.items():
        _flatten(k, v, rows)
    return Table(header=(), rows=tuple(rows), caption=caption)


def _provenance(data: dict, command: str | None, versions: dict | None, seed, *, random: bool = True) -> Section:
    """The Reproduce section: the seed (``random=False``: none needed, the computation draws no
    random numbers), the command, library versions and the full JSON result."""
    blocks = []
    if not random:
        blocks.append(Text("Seed: none needed: the computation is deterministic (the same command gives the same "
                           "numbers)."))
    else:
        blocks.append(Text(f"Seed: {seed if seed is not None else 'none recorded (the run is not reproducible bit for bit)'}."))
    if command:
        blocks.append(Text("Command that reproduces this report:"))
        blocks.append(Code(command, language="sh"))
    if versions:
        blocks.append(Table(header=("library", "version"), rows=tuple((k, str(v)) for k, v in versions.items()),
                            caption="Library versions"))
    blocks.append(Code(json.dumps(data, indent=2, sort_keys=True, default=str), language="json", collapsed=True,
                       summary="The full JSON result"))
    return Section("Reproduce", tuple(blocks), anchor="reproduce")


def _scores_claim_text(claim: dict) -> str:
    """The ``claim`` entry of an audit-scores result in words: the claim (when named), whether the
    scores contradict it, and by how much."""
    head = claim.get("description") or (f"epsilon {_g(claim['epsilon'])}, delta {_g(claim.get('delta'))}"
                                         if "epsilon" in claim else "the claim")
    words = f"{head}: {'contradicted by the scores' if claim.get('violated') else 'not contradicted'}"
    if claim.get("delta_lower_bound") is not None:
        words += (f" (certified delta lower bound {_g(claim['delta_lower_bound'], 4)} where the claim allows "
                  f"{_g(claim.get('claimed_delta'), 4)}; largest margin {_g(claim.get('margin'), 4)} at eps' = "
                  f"{_g(claim.get('witness_epsilon'), 4)})")
    return words


def _claim_text(claim: dict) -> str:
    from ..privacy.claims import claim_from_dict

    try:
        return claim_from_dict(claim).describe()
    except Exception:  # noqa: BLE001 - a report still renders an unknown claim
        return json.dumps(claim)


GLOSSARY = {
    "claim": "The privacy guarantee the mechanism is said to have, e.g. 0.5-DP (pure) or (1, 1e-5)-DP. "
             "Epsilon is in nats.",
    "neighbouring datasets": "Two datasets that differ in one person's record (one added or removed, or one "
                             "replaced). Differential privacy promises that the outputs on them are hard to tell apart.",
    "witness pair": "The pair of neighbouring datasets D0, D1 where the evidence is strongest; for a violation, the "
                    "pair on which it shows. P = M(D0) and Q = M(D1) are the mechanism's output distributions on them.",
    "hockey-stick divergence": "H_{e^eps}(P||Q) = sup over sets S of outputs of P(S) - e^eps Q(S): how much more "
                               "likely some set of outputs is under P than e^eps times its likelihood under Q. A "
                               "mechanism is (eps, delta)-DP exactly when it is at most delta for every neighbouring "
                               "pair, in both directions.",
    "privacy profile": "delta(eps'), the hockey-stick divergence at order e^eps' as eps' varies: the smallest delta "
                       "for which the pair satisfies (eps', delta)-DP. A claim allows a whole curve of them; "
                       "evidence above that curve at any eps' contradicts the claim.",
    "P||Q / Q||P": "The direction of a comparison. P||Q asks whether some outputs are much more likely on D0 than "
                   "on D1; Q||P the reverse. Differential privacy must hold both ways.",
    "certified lower bound": "A number the true value exceeds with probability at least 1 - beta over the audit's "
                             "random draws. It is computed on held-out samples, not on those that chose the region, "
                             "so it is not an optimistic estimate.",
    "margin": "The certified lower bound minus what the claim allows, at the eps' where that difference is "
              "largest. Above 0 is a violation. In a region's description, [margin] means the region was chosen "
              "to make this difference large, and [max epsilon] to make the certified epsilon large.",
    "ratio test": "A second certificate for a region S: a lower bound on P(S)/Q(S) from the counts of two "
                  "Poisson-sized subsamples. It certifies a large epsilon when S is rare under both "
                  "distributions, where the bounds on P(S) and Q(S) alone are loose.",
    "beta": "The largest probability that the audit reports a violation for a mechanism that keeps its claim "
            "(a false accusation), split over the trials.",
    "empirical epsilon lower bound": "The largest epsilon for which the evidence rejects (epsilon, delta)-DP, at "
                                     "the same confidence: the mechanism's true epsilon is at least this.",
    "trial": "One neighbouring pair, chosen by the finder, sampled and tested.",
    "IN / OUT scores": "An attack's score for a canary (e.g. its loss) in runs that trained with it (IN) and "
                       "without it (OUT). The more the two differ, the more a run reveals about the canary.",
    "trade-off curve": "For every attack on the scores: its type II error (missing an IN) against its type I error "
                       "(flagging an OUT). Perfect privacy is the diagonal 1 - alpha; (epsilon, delta)-DP keeps the "
                       "curve above a known line, so a curve certified below it contradicts the claim.",
    "TV and mu (GDP)": "Two summaries of how distinguishable IN and OUT are: the total variation distance (0 = "
                       "identical, 1 = disjoint), and the mu of the Gaussian-DP curve that fits (0 = private).",
    "canary": "A record planted to test privacy. In a one-run audit each canary is included or left out at random "
              "in one training run, and the attack guesses which.",
    "guess": "The attack's call for one canary: included (its score is high) or left out (low); canaries it is "
             "unsure about get no guess. Many correct guesses contradict a small epsilon.",
    "p-value": "How likely at least this many correct guesses are if the claim held (Steinke et al. 2023); below beta "
               "the claim is refuted.",
}
"""Plain-words definitions of the terms the reports use (term to sentence), for the Glossary section."""


def _glossary(terms) -> Section:
    """The Glossary section: ``terms`` (keys of :data:`GLOSSARY`) in the order given."""
    return Section("Glossary", (Table(header=("term", "meaning"), rows=tuple((t, GLOSSARY[t]) for t in terms)),),
                   anchor="glossary")


def _zoo_entry(name: str):
    """The zoo entry called ``name`` (:mod:`dpaudit.mechanisms.zoo`), or None when there is none."""
    try:
        from ..mechanisms.zoo import catalogue
    except Exception:  # noqa: BLE001 - a report renders without the zoo
        return None
    try:
        return catalogue.get(name)
    except Exception:  # noqa: BLE001 - not a zoo mechanism
        return None


def sizing_text(o, claim) -> str | None:
    """The sequential tester's sizing bound of outcome ``o`` in words, or None when it has none.

    After a violation the sequential tester certifies the leak's size on fresh pairs drawn after the
    detection (:meth:`dpaudit.testers.sequential.SequentialTester.run`, docs/sequential.md §10): a
    region chosen on the detection's pairs, its masses bounded by Clopper-Pearson at ``beta / 2``
    each (:func:`dpaudit.bounds.certify_set`), so with probability at least ``1 - beta`` the
    mechanism satisfies no ``(eps', delta)`` guarantee with ``eps'`` below the stated epsilon
    (``delta`` the claimed one). A lower bound: the safe side.

    Parameters
    ----------
    o : TestOutcome
        A trial's outcome; its bounds are searched for one with ``sized_epsilon`` (a
        :class:`~dpaudit.estimators.betting.EProcessBound`), the strongest part's first.
    claim : Claim
        The audited claim (its delta is the one the bound is at).

    Returns
    -------
    str or None
        E.g. ``"epsilon >= 0.878 at delta = 0 on 3,256 fresh pairs (region ...; probability >=
        0.9955; --no-size skips this step)"``; None when no bound carries a sizing (another tester,
        no violation, ``--no-size``, a Renyi claim).
    """
    bounds = list(o.bounds)
    if 0 <= getattr(o, "strongest", -1) < len(bounds):
        bounds.insert(0, bounds.pop(o.strongest))
    b = next((bb for bb in bounds if getattr(bb, "sized_epsilon", None) is not None), None)
    if b is None:
        return None
    delta = float(getattr(claim, "delta", 0.0) or 0.0)
    region = f"region {b.sizing_region}; " if getattr(b, "sizing_region", "") else ""
    return (f"epsilon >= {b.sized_epsilon:.4g} at delta = {delta:g} on {b.sizing_samples:,} fresh pairs drawn after "
            f"the detection ({region}probability >= {1 - b.beta:g}; a lower bound; --no-size skips this step)")


def note_without_region(note: str, region: str) -> str:
    """A tester's ``note`` with the test region it repeats replaced by a reference to the
    "test region S" row shown beside it (the float-bits tester's note ends with the region)."""
    if region and len(region) > 20 and region in note:
        return note.replace(region, "the test region S (above)")
    return note


def _mechanism_section(entry) -> Section:
    """What the zoo catalogue says about ``entry`` (a ZooEntry): what it computes, its bug, its true
    guarantee, whether it is private, and the source."""
    private = ("yes, in exact arithmetic (its float64 outputs leak through their bit patterns)"
               if entry.private and entry.exact_arithmetic_only else "yes" if entry.private else "no")
    rows = [("what it computes", entry.summary),
            ("the bug", entry.bug or ("none in exact arithmetic: the mechanism is correct as mathematics, but its "
                                      "floating-point implementation leaks through which doubles its outputs can "
                                      "take (Mironov 2012)" if entry.exact_arithmetic_only
                                      else "none: a correct mechanism")),
            ("private?", private),
            ("true guarantee", entry.true_guarantee)]
    if entry.source:
        rows.append(("source", entry.source))
    return Section("The mechanism", (Table(
        header=(), rows=tuple(rows),
        caption=f"From the dpaudit zoo catalogue (dpaudit zoo {entry.name}), looked up by the mechanism's name "
                "when this report was rendered."),), anchor="mechanism")


def _with_options(command: str, options: dict) -> str:
    """``command`` (a shell command line) with each long option of ``options`` (``"--flag"`` to
    value) set: its value replaced where the command gives it, appended otherwise."""
    words = shlex.split(command)
    for flag, value in options.items():
        if flag in words:
            i = words.index(flag)
            if i + 1 < len(words):
                words[i + 1] = str(value)
        else:
            words.extend([flag, str(value)])
    return shlex.join(words)


def _bound_types(value, out: set) -> set:
    """Every ``type`` entry of the bounds found anywhere in ``value`` (a JSON result's part)."""
    if isinstance(value, dict):
        if isinstance(value.get("type"), str):
            out.add(value["type"])
        for v in value.values():
            _bound_types(v, out)
    elif isinstance(value, list):
        for v in value:
            _bound_types(v, out)
    return out


MODEL_SETTINGS = ("hidden_sizes", "epochs", "batch_size", "learning_rate", "max_steps", "train_fraction", "device",
                  "num_threads", "function_class", "degree", "train_bound", "train_alpha", "concentration")
"""Tester settings that only concern a trained model (the classifier's or the Rényi estimator's)."""

_TRAINED_BY = {"hockey-stick": "HockeyStickBound", "renyi": "RenyiBound"}  # tester to the bound type a model gives


def _untrained_settings_removed(tester: dict, bound_types: set) -> tuple[dict, list]:
    """The tester's settings without those of a model it did not train (no bound of the type its
    model gives), and the names removed."""
    removed: list = []

    def strip(cfg: dict) -> dict:
        name = cfg.get("tester")
        cfg = dict(cfg)
        if "parts" in cfg:
            cfg["parts"] = [strip(c) if isinstance(c, dict) else c for c in cfg["parts"]]
        if isinstance(cfg.get("primary"), dict):  # the default tester's (FloatScreenTester) primary
            cfg["primary"] = strip(cfg["primary"])
        if name in _TRAINED_BY and _TRAINED_BY[name] not in bound_types:
            for k in MODEL_SETTINGS:
                if k in cfg:
                    removed.append(f"{name}.{k}")
                    del cfg[k]
        return cfg

    return strip(tester), removed


# --------------------------------------------------------------------------------------- test --


def _source(o) -> str:
    """Which tester and kind of evidence the numbers of outcome ``o`` come from (its strongest part's)."""
    what = ("floating-point evidence: the float64 bit patterns" if o.evidence_kind == "floating-point"
            else "distributional evidence")
    return f"the {o.strongest_part.tester} tester's bound, {what}"


def audit_document(data: dict, *, command: str | None = None, samples=None, samples_note: str = "") -> Document:
    """The report of ``dpaudit test`` from its JSON result (``AuditResult.to_dict()``).

    Parameters
    ----------
    data : dict
        The JSON result of ``dpaudit test``.
    command : str, optional
        The command line that reproduces the run.
    samples : tuple (x0, x1) of arrays, optional
        Outputs of the mechanism on D0 and D1 of the strongest pair, plotted as histogram and ECDF
        (1-D outputs) or a 2-D projection. The JSON holds no outputs; the CLI re-draws a few.
    samples_note : str
        How ``samples`` were obtained (shown under the plot), or why there are none.

    Returns
    -------
    Document
    """
    from ..audit.result import AuditResult
    from ..estimators.base import profile_grid

    result = AuditResult.from_dict(data)
    claim = result.claim
    claim_txt = claim.describe()
    s = result.strongest
    mech = result.mechanism
    entry = _zoo_entry(mech)
    if result.violation_kind == "adversarial input":
        status = "violation"
        kinds = ", ".join(r["kind"] for r in result.adversarial_leaks)
        verdict = (f"{result.kind.headline}: {mech} does not satisfy {claim_txt}. Run on records holding adversarial "
                   f"values ({kinds}), its outputs reach a set of outputs the neighbouring dataset never reaches "
                   f"(see Adversarial inputs). A mechanism that keeps its claim is accused like this with probability "
                   f"at most {result.beta:g}. What to do is below.")
    elif result.violation:
        status = "violation"
        o = s.outcome
        b = o.bounds[o.strongest]
        eps_lb = o.epsilon_lower_bound
        kind = result.kind
        if o.delta_lower_bound is not None and o.witness_epsilon is not None:
            found = (f"a set of outputs whose probabilities on the two differ more than the claim permits: at "
                     f"eps' = {o.witness_epsilon:.4g} the privacy loss bound delta is at least "
                     f"{o.threshold + o.margin:.3g}, where the claim allows {o.threshold:.3g}")
        else:
            found = (f"a {b.divergence} divergence between their outputs of at least {_g(b.lower, 4)}, "
                     f"more than the claim allows ({_g(o.threshold, 4)})")
        verdict = (f"{kind.headline}: {mech} does not satisfy {claim_txt}. The audit ran it on two neighbouring "
                   f"datasets, D0 = {_dataset(s.pair.d0.tolist(), 4)} and D1 = {_dataset(s.pair.d1.tolist(), 4)}, "
                   f"and found {found}. A {result.violation_kind} violation: {kind.meaning}. A mechanism that "
                   f"keeps its claim is accused like this with probability at most {result.beta:g}"
                   + (f"; this one's epsilon is at least {eps_lb:.4g} ({_source(o)})" if eps_lb else "")
                   + (f"; sized after the detection: {sized}." if (sized := sizing_text(o, claim)) else ".")
                   + (f" Also found: {result.also_found}" if result.also_found else "")
                   + " What to do is below.")
    elif result.inconclusive:
        status = "inconclusive"
        verdict = (f"INCONCLUSIVE: too few samples for the tester's bound to say anything about {claim_txt} for "
                   f"{mech}. Neither a violation nor a pass: raise --samples (see What to do next).")
    else:
        status = "pass"
        verdict = (f"No violation found: {len(result.trials)} trial(s) found no evidence against {claim_txt} "
                   f"for {mech}. This does not prove the claim: it rules out only violations large enough to show "
                   f"in the samples drawn, on the pairs tried (see What to do next).")

    sections = []
    summary = [
        ("mechanism", mech),
        ("claim", claim_txt),
        ("verdict", result.verdict),
        *((("violation kind", f"{result.violation_kind} ({result.kind.headline})"),)
          if result.violation else ()),
        *((("also found", result.also_found),) if result.also_found else ()),
        ("tester", str(result.tester.get("tester", "?"))),
        ("confidence", f"a violation is reported wrongly with probability <= {result.beta:g} ("
                       + (f"{result.adversarial['beta']:g} to the adversarial inputs, the rest " if result.adversarial else "")
                       + f"split over {result.trial_budget} trial(s), {result.split_summary})"),
        ("trials", result.trials_summary),
        ("neighbouring", str(result.neighbouring.get("relation", "?"))),
        ("seed", str(result.seed)),
        ("started", result.started_at or "-"),
        ("wall time", f"{result.wall_seconds:.1f} s"),
    ]
    sections.append(Section("Summary", (Table(header=(), rows=tuple(summary)),), anchor="summary"))
    if entry is not None:
        sections.append(_mechanism_section(entry))
    sections.append(_next_steps(result, data, command, entry))
    if result.adversarial:  # the adversarial-inputs stage run before the trials
        adv = result.adversarial
        sections.append(Section("Adversarial inputs", (Table(
            header=("input", "pair", "result", "detail"),
            rows=tuple((r["kind"], r["description"], r["status"], r["detail"]) for r in adv["results"]),
            caption=(f"{adv['samples']:,} outputs per dataset per input, at beta {adv['beta']:g} (a share of the audit's "
                     f"beta); accepted inputs: {adv.get('accepts', '')}. A rejected input (the code raised) is a pass "
                     "for that input; a leak is a set of outputs one dataset reaches and the other, on held-out "
                     "outputs, does not.")),), anchor="adversarial"))

    if s is not None:
        o = s.outcome
        b = o.bounds[o.strongest]
        rows = [
            ("trial", str(s.index + 1)),
            ("pair", f"{s.pair.relation}: {s.pair.description}"),
            ("D0", _dataset(s.pair.d0.tolist())),
            ("D1", _dataset(s.pair.d1.tolist())),
            ("direction", f"{b.direction} (P = M(D0), Q = M(D1))"),
            ("samples", f"{s.num_samples:,} per dataset"
             + (f" (of {s.full_samples:,}: the trial stopped at the violation)"
                if s.stopped_early_at_violation else "")),
            (f"{b.divergence} divergence, estimate", _g(b.estimate)),
            (f"{b.divergence} divergence, certified lower bound", _g(b.lower)),
        ]
        if o.delta_lower_bound is not None:
            rows.append(("delta lower bound at the claimed epsilon", f"{_g(o.delta_lower_bound)} (claim allows {_g(o.claimed_delta)})"))
        if o.witness_epsilon is not None:
            rows.append(("margin (largest excess over the claim)", f"{_g(o.margin, 4)} at eps' = {_g(o.witness_epsilon, 4)}"))
        else:
            rows.append(("margin", _g(o.margin, 4)))
        if o.parts:
            rows.insert(4, ("tester", f"{o.strongest_part.tester} (of: {', '.join(p.tester for p in o.parts)}); "
                                      "every number below is its own"))
        if o.epsilon_lower_bound is not None:
            rows.append(("empirical epsilon lower bound", (_g(o.epsilon_lower_bound, 4) if o.epsilon_lower_bound > 0
                                                           else "none") + f" ({_source(o)})"))
        if getattr(b, "region", ""):
            rows.append(("test region S (a set of outputs)", b.region))
        if getattr(b, "ratio_lower", None):
            rows.append(("ratio test", f"P(S)/Q(S) >= {_g(b.ratio_lower, 4)}"))
        if (leak := result.leak_size_dict()) is not None:  # S held no output of one dataset
            rows.append(("leak size", leak["text"]))
        if (sized := sizing_text(o, claim)) is not None:
            rows.append(("size of the leak (sizing step)", sized))
        if o.note:
            rows.append(("note", note_without_region(o.note, getattr(b, "region", ""))))
        blocks = [Table(header=(), rows=tuple(rows))]
        if samples is not None:
            x0, x1 = samples
            dim = int(np.asarray(x0).reshape(len(x0), -1).shape[1])
            distinct = len(np.unique(np.vstack([np.asarray(x0, dtype=float).reshape(len(x0), -1),
                                                np.asarray(x1, dtype=float).reshape(len(x1), -1)]), axis=0))
            if distinct <= plots.MAX_DISCRETE:
                what = f"frequency of each of the {distinct} distinct output values"
            elif dim == 1:
                what = "histogram and empirical CDF"
            elif dim == 2:
                what = "scatter of the two coordinates"
            else:
                what = f"scatter on the first two principal axes of the pooled {dim}-dimensional outputs"
            blocks.append(Plot("outputs", plots.output_distributions_png(x0, x1, title=f"outputs of {mech} at the pair of trial {s.index + 1}"),
                               alt="output distributions of M(D0) and M(D1)",
                               caption=f"Output distributions at this pair: {what} of {len(x0):,} outputs per dataset. {samples_note}".strip()))
        else:
            blocks.append(Text(f"No output plot: {samples_note or 'the JSON result holds no outputs and the mechanism was not available to re-draw them.'}"))
        sections.append(Section("Witness pair" if result.violation else "Strongest pair", tuple(blocks), anchor="pair"))

        hs = [bb for bb in (o.bounds if not o.parts else o.bounds) if hasattr(bb, "delta_lower_bound")]
        if hs:
            grid = profile_grid(claim.epsilon)
            allowed = claim.delta_profile(grid)
            curves = [(f"{bb.divergence} {bb.direction}" if len({x.divergence for x in hs}) > 1 else bb.direction, np.asarray(bb.delta_lower_bound(grid), dtype=float)) for bb in hs]
            witness = o.witness_epsilon if o.violation else None
            scale = plots.profile_scale(grid, curves, allowed, claimed_epsilon=claim.epsilon, witness_epsilon=witness)
            png = plots.privacy_profile_png(grid, curves, allowed, claimed_epsilon=claim.epsilon, witness_epsilon=witness,
                                            title=f"privacy profile at the pair of trial {s.index + 1}")
            n_dirs = len({label for label, _ in curves})
            merged = (" Each direction's curve is the pointwise maximum of that direction's certified bounds (one per "
                      "test region; they hold together)." if len(hs) > n_dirs else "")
            sections.append(Section("Privacy profile", (
                Text("How far apart are the outputs on D0 and D1? For each privacy loss level eps', the curves give a "
                     "certified lower bound on delta(eps'), the smallest delta with which the pair could satisfy "
                     "(eps', delta)-DP; the black curve is the most the claim allows. Evidence above the black curve "
                     "(shaded red) contradicts the claim."),
                Plot("privacy-profile", png, alt="certified lower bounds on the privacy profile against what the claim allows",
                     caption=("In symbols: the curves are lower bounds on the hockey-stick divergence "
                              "delta(eps') = H_{e^eps'}(P||Q) = sup_S P(S) - e^eps' Q(S), with P = M(D0) and Q = M(D1) "
                              "(and the reverse direction Q||P), valid for all eps' at once at the trial's confidence; "
                              "the black curve is the claim's privacy profile. The dashed line marks the claimed "
                              f"epsilon{' and the red dot the violation' if witness is not None else ''}. "
                              f"The y axis is {scale.yscale}"
                              + (" (the values span decades)." if scale.yscale == "log" else ", scaled to the data.")
                              + merged)),
            ), anchor="profile"))
        else:
            sections.append(Section("Privacy profile", (Text(
                f"The {result.tester.get('tester')} tester's bound is not a bound on the privacy profile; its lower bound "
                "and what the claim allows are in the pair table above."),), anchor="profile"))

    header = ("#", "finder", "pair", "D0", "D1", "estimate", "lower bound", "margin", "verdict", "seconds")
    rows = []
    highlight = None
    for i, r in enumerate(result.trials):
        o = r.outcome
        b = o.bounds[o.strongest]
        rows.append((str(r.index + 1), r.finder, r.pair.description or "-", _dataset(r.pair.d0.tolist(), 4),
                     _dataset(r.pair.d1.tolist(), 4), _g(b.estimate, 4), _g(b.lower, 4), _g(o.margin, 4),
                     "floating-point leak" if o.violation_kind == "floating-point" else o.status,
                     f"{r.sample_seconds + r.test_seconds:.2f}"))
        if result.strongest_trial is not None and r.index == result.strongest_trial:
            highlight = i
    trial_blocks = [Table(header=header, rows=tuple(rows), highlight=highlight,
                          caption="Every finished trial (margin = lower bound minus what the claim allows; > 0 is a violation).")]
    if len(result.trials) > 1:
        trial_blocks.append(Plot("trials", plots.trials_png([r.index + 1 for r in result.trials],
                                                             [r.outcome.margin for r in result.trials],
                                                             [r.outcome.violation for r in result.trials]),
                                 alt="margin per trial", caption="Margin of each trial."))
    sections.append(Section("Trials", tuple(trial_blocks), anchor="trials"))

    sections.append(_audit_settings(result, data))
    sections.append(_glossary(("claim", "neighbouring datasets", "witness pair", "hockey-stick divergence",
                               "privacy profile", "P||Q / Q||P", "certified lower bound", "margin", "ratio test",
                               "beta", "empirical epsilon lower bound", "trial")))
    sections.append(_provenance(data, command, result.versions, result.seed))
    return Document(title=f"dpaudit test: {mech}", verdict=verdict, status=status, sections=tuple(sections),
                    footer=f"dpaudit {result.versions.get('dpaudit', '')} report; schema {data.get('schema_version')}")


def _planned_samples(result) -> int | None:
    """Samples per dataset each trial planned (the largest over the trials), or None."""
    planned = [r.full_samples for r in result.trials if getattr(r, "full_samples", None)]
    return max(planned) if planned else None


def _audit_settings(result, data: dict) -> Section:
    """The Settings section of ``dpaudit test``: the settings that decide the verdict first, every
    other one folded away; a model's settings are left out when no model was trained."""
    tester = dict(result.tester)
    tester, removed = _untrained_settings_removed(tester, _bound_types(data.get("trials", []), set()))
    planned = _planned_samples(result)
    s = result.strongest
    samples = "-" if planned is None else f"{planned:,} per dataset per trial (at most)"
    if s is not None and planned is not None and s.num_samples < planned:
        samples += f"; the strongest trial used {s.num_samples:,}"
    name = str(tester.get("tester", "?"))
    extra = f", regions {tester['regions']}" if "regions" in tester else ""
    if removed:
        extra += "; no model was trained (exact regions)"
    key = (
        ("claim", result.claim.describe()),
        ("samples", samples),
        ("trials", result.trials_summary),
        ("beta", f"{result.beta:g} for the whole audit (per trial: {result.split_summary})"),
        ("seed", str(result.seed)),
        ("tester", name + extra),
        ("finder", str(result.finder)),
        ("neighbouring", str(result.neighbouring.get("relation", "?"))),
    )
    rest = {"neighbouring": result.neighbouring, "tester": tester, "execution": result.execution,
            "stopped_early": result.stopped_early}
    if result.study:
        rest["study"] = result.study
    folded = _settings_table(rest)
    caption = ("Every other setting, as the JSON result records it."
               + (f" Left out because no model was trained: {', '.join(removed)}." if removed else ""))
    return Section("Settings", (
        Table(header=(), rows=key, caption="The settings that decide the verdict."),
        Table(header=(), rows=folded.rows, caption=caption, collapsed=True,
              summary=f"All other settings ({len(folded.rows)})"),
    ), anchor="settings")


def _fallback_command(result, entry) -> str | None:
    """A ``dpaudit test`` command for a zoo mechanism when the report was rendered without the
    command that ran it (pure and approximate DP claims), or None."""
    if entry is None:
        return None
    c = result.claim.to_dict()
    if c.get("kind") not in ("pure-dp", "approx-dp"):
        return None
    words = ["dpaudit", "test", f"zoo:{entry.name}", "--epsilon", f"{c['epsilon']:g}"]
    if c.get("kind") == "approx-dp":
        words += ["--delta", f"{c['delta']:g}"]
    words += ["--seed", str(result.seed)] + (["--adversarial"] if result.adversarial else [])
    return shlex.join(words)


def _next_steps(result, data: dict, command: str | None, entry) -> Section:
    """The "What to do next" section of ``dpaudit test``: for a violation its advice, the command
    that reproduces it and the witness pair as a regression test; for a pass or an inconclusive
    audit, what the result does not show and the command with a larger budget."""
    from ..testers import default_tester_name

    cmd = command or _fallback_command(result, entry)
    blocks = []
    s = result.strongest
    if result.violation:
        kind = result.kind
        blocks.append(Text(f"1. Fix the mechanism. {result.advice or kind.advice}"
                           + (" The zoo's description of the bug is under The mechanism above." if entry is not None and entry.bug else "")))
        if cmd:
            blocks.append(Text("2. Reproduce the finding: the same seed gives the same trials, pairs and verdict."))
            blocks.append(Code(cmd, language="sh"))
        else:
            blocks.append(Text(f"2. Reproduce the finding: re-run the audit with --seed {result.seed}."))
        if result.violation_kind == "floating-point" and cmd:
            blocks.append(Text("To test the output distribution alone (the claim in exact arithmetic, without the "
                               "floating-point screen):"))
            blocks.append(Code(_with_options(cmd, {"--tester": "hockey-stick"}), language="sh"))
        if s is not None and s.outcome.violation:  # an adversarial-input leak has no witness trial
            d0 = json.dumps(s.pair.d0.tolist())
            d1 = json.dumps(s.pair.d1.tolist())
            blocks.append(Text("3. Keep the witness pair as a regression test, so the bug cannot come back unnoticed "
                               "(after the fix this must pass):"))
            claim = result.claim.to_dict()
            args = f"epsilon={claim.get('epsilon')!r}" + (f", delta={claim['delta']!r}" if "delta" in claim else "")
            words = shlex.split(cmd) if cmd else []
            target = (repr(words[2]) if len(words) > 2 and words[1] == "test" and ":" in words[2]
                      else "mechanism  # your Mechanism object or function")
            tester = str(result.tester.get("tester", ""))
            if tester and tester != default_tester_name(result.claim):
                args += f", tester={tester!r}"
            blocks.append(Code(f"from dpaudit.testing import assert_dp\n\nassert_dp({target}, {args}, "
                               f"pairs=[({d0}, {d1})], seed={result.seed})", language="python"))
    else:
        planned = _planned_samples(result) or 0
        if result.inconclusive:
            blocks.append(Text("The tester needs more samples before its bound can say anything: raise --samples."))
        else:
            blocks.append(Text(f"No violation found is not a proof of privacy. This audit rules out only violations "
                               f"large enough to show with {planned:,} samples per dataset, on the "
                               f"{len(result.trials)} neighbouring pair(s) it tried, at confidence {1 - result.beta:g}. "
                               "A proof needs an analysis of the mechanism (or an accountant, dpaudit account)."))
        more = {"--samples": max(10 * planned, 1000), "--trials": max(5 * result.trial_budget, 20)}
        blocks.append(Text("To search harder, raise the budget: more samples per dataset find smaller violations, more "
                           "trials try more pairs (each trial gets a smaller share of beta)."))
        if cmd:
            blocks.append(Code(_with_options(cmd, more), language="sh"))
        if str(result.tester.get("tester")) not in ("all",):
            blocks.append(Text("--tester all also runs the other testers, including the float-bits test that finds "
                               "floating-point leaks."))
    return Section("What to do next", tuple(blocks), anchor="next")


# ------------------------------------------------------------------------------- audit-scores --


def _claim_status(claim: dict | None) -> str:
    """A score audit's report status: "violation" when its claim is refuted, "pass" when a claim
    holds up, "info" without a claim."""
    if claim is None:
        return "info"
    return "violation" if claim.get("violated") else "pass"


def scores_document(data: dict, *, command: str | None = None, versions: dict | None = None) -> Document:
    """The report of ``dpaudit audit-scores`` from its JSON result.

    Parameters
    ----------
    data : dict
        The JSON result of ``dpaudit audit-scores``; a ``curves`` entry (``alpha``,
        ``upper``, ``others`` as ``[[label, values], ...]``, ``claim`` as ``[label, values]``)
        adds the trade-off plot.
    command : str, optional
    versions : dict, optional
        Library versions.

    Returns
    -------
    Document
    """
    inp = data.get("inputs", {})
    claim = data.get("claim")
    delta = data.get("delta")
    eps_lb = data.get("epsilon_lower_bound")
    status = _claim_status(claim)
    verdict = {
        "violation": f"VIOLATION: the scores contradict the claim (epsilon lower bound {_g(eps_lb, 4)} at "
                     f"delta={_g(delta)}, confidence {_g(data.get('confidence'))}).",
        "pass": f"The scores do not contradict the claim; they prove epsilon >= {_g(eps_lb, 4)} at delta={_g(delta)}.",
        "info": f"The scores prove epsilon >= {_g(eps_lb, 4)} at delta={_g(delta)} "
                f"(confidence {_g(data.get('confidence'))}).",
    }[status]
    summary = [
        ("IN (with canary)", f"{inp.get('in')}: {_g(inp.get('n_in'))} scores"),
        ("OUT (without)", f"{inp.get('out')}: {_g(inp.get('n_out'))} scores"),
        (f"epsilon lower bound (delta={_g(delta)})", f"{_g(eps_lb)} from the histogram audit (paper 001), "
                                                     f"{data.get('epsilon_source')}"
         + (f". {data['epsilon_note']}" if data.get("epsilon_note") else "")),
        ("TV lower bound", f"{_g(data.get('tv_lower_bound'))} (estimate {_g(data.get('tv_estimate'))})"),
        ("mu (GDP) lower bound", f"{_g(data.get('mu_lower_bound'))} (from TV alone {_g(data.get('mu_from_tv'))})"),
        ("beta", f"{_g(data.get('beta'))} (confidence {_g(data.get('confidence'))})" if "beta" in data
         else f"confidence {_g(data.get('confidence'))}"),
        ("seed", str(inp.get("seed"))),
    ]
    curves = data.get("curves")
    if claim is not None:
        named = str(curves["claim"][0]).removeprefix("claim: ") if curves and curves.get("claim") else None
        summary.append(("claim", _scores_claim_text({"description": named, **claim} if named else claim)))
    sections = [Section("Summary", (Table(header=(), rows=tuple(summary)),), anchor="summary")]
    if curves:
        png = plots.tradeoff_png(curves["alpha"], curves["upper"], [tuple(c) for c in curves.get("others", [])],
                                 claim=tuple(curves["claim"]) if curves.get("claim") else None)
        sections.append(Section("Trade-off curve", (Plot(
            "tradeoff", png, alt="trade-off curve with the certified region",
            caption=("Left: type II error against type I error. The certified upper bound (blue) holds at the stated "
                     "confidence: the mechanism's trade-off curve lies below it, so the shaded region between it and "
                     "perfect privacy is ruled out. Right: the same curves as TPR against FPR on log-log axes, where "
                     "the low-FPR region that decides large epsilons is readable.")),), anchor="tradeoff"))
    base = data.get("baselines", {})
    thr, gdp = base.get("threshold", {}), base.get("gdp", {})
    cp = base.get("clopper_pearson") or {}
    cp_rows = (("whole-sample Clopper-Pearson (order statistics)", _g(cp.get("epsilon_lower_bound"), 4),
                _g(cp.get("tv_lower_bound"), 4), _g(cp.get("mu_lower_bound"), 4)),) if cp else ()
    sections.append(Section("Side by side", (Table(
        header=("method", f"eps lower bound (delta={_g(delta)})", "TV lower bound", "mu lower bound"),
        rows=(("histogram (paper 001)", _g(eps_lb, 4), _g(data.get("tv_lower_bound"), 4), _g(data.get("mu_lower_bound"), 4)),
              ("threshold MIA + Clopper-Pearson (split)", _g(thr.get("epsilon_lower_bound"), 4), _g(thr.get("tv_lower_bound"), 4), _g(thr.get("mu_lower_bound"), 4)),
              *cp_rows,
              ("GDP audit (Nasr et al. 2023)", _g(gdp.get("epsilon_of_mu_estimate", gdp.get("epsilon_of_mu")), 4) + "* (estimate)", "-", _g(gdp.get("mu_lower_bound"), 4))),
        caption="* epsilon of the mu bound: a lower bound only if the mechanism's trade-off curve is Gaussian."),), anchor="baselines"))
    attack = data.get("attack")
    if attack:
        auc = attack.get("auc", {})
        arows = [("AUC", _g(auc.get("estimate"), 4), f"[{_g(auc.get('lower'), 4)}, {_g(auc.get('upper'), 4)}]")]
        arows += [(f"TPR at FPR {f}", _g(r.get("estimate"), 4), f"[{_g(r.get('lower'), 4)}, {_g(r.get('upper'), 4)}]")
                  for f, r in attack.get("tpr_at_fpr", {}).items()]
        sections.append(Section("The attack", (Table(
            header=("measure", "estimate", "confidence interval"), rows=tuple(arows),
            caption=("The threshold attack on the score: its AUC (Hoeffding interval for U-statistics) and its true "
                     "positive rate at fixed false positive rates (order statistics and Clopper-Pearson), each interval "
                     "certified at the report's confidence.")),), anchor="attack"))
    key = {"delta": delta, **{k: data[k] for k in ("beta",) if k in data}, "confidence": data.get("confidence"),
           "seed": inp.get("seed")}
    rest = _settings_table({"inputs": inp, "histogram": {k: v for k, v in data.get("histogram", {}).items()
                                                         if k in ("method", "confidence", "n_p", "n_q", "details")}})
    sections.append(Section("Settings", (
        Table(header=(), rows=_settings_table(key).rows, caption="The settings that decide the verdict."),
        Table(header=(), rows=rest.rows, caption="Every other setting, as the JSON result records it.", collapsed=True,
              summary=f"All other settings ({len(rest.rows)})"),
    ), anchor="settings"))
    sections.append(_glossary(("IN / OUT scores", "trade-off curve", "TV and mu (GDP)", "certified lower bound",
                               "beta", "claim")))
    shown = {k: v for k, v in data.items() if k != "curves"}
    sections.append(_provenance(shown, command, versions, inp.get("seed")))
    return Document(title="dpaudit audit-scores", verdict=verdict, status=status, sections=tuple(sections),
                    footer=f"dpaudit {(versions or {}).get('dpaudit', '')} report")


# ------------------------------------------------------------------------------------ one run --


def one_run_document(data: dict, *, command: str | None = None, versions: dict | None = None) -> Document:
    """The report of ``dpaudit audit-scores SCORES --mask MASK`` (a one-run audit) from its JSON
    result (:meth:`dpaudit.scores.OneRunAudit.to_dict`): the verdict, the guesses, correct
    guesses, each bound and its p-value.

    Parameters
    ----------
    data : dict
        The JSON result (``method == "one-run"``), optionally with ``inputs`` and ``claim``.
    command : str, optional
    versions : dict, optional

    Returns
    -------
    Document
    """
    delta, beta = data.get("delta"), data.get("beta")
    eps = data.get("epsilon_lower_bound")
    claim = data.get("claim")
    status = _claim_status(claim)
    if status == "violation":
        verdict = (f"VIOLATION: one run refutes the claim: epsilon >= {_g(eps, 4)} at delta={_g(delta)} "
                   f"(confidence {_g(1 - beta)}).")
    else:
        verdict = (f"One run with {data.get('m')} canaries proves epsilon >= {_g(eps, 4)} at delta={_g(delta)} "
                   f"(confidence {_g(1 - beta)}).")
    g0 = data.get("guess", {})
    if g0.get("guesses"):
        verdict += (f" Of {data.get('m')} canaries, each included in the run or not at random, the attack guessed "
                    f"{g0.get('guesses')} and {g0.get('correct')} were right: a mechanism with a smaller epsilon "
                    f"gives that many correct guesses with probability at most {_g(beta)}.")
    g, gs, gm = data.get("guess", {}), data.get("guess_steinke", {}), data.get("guess_mu", {})

    def guesses(x):
        return f"{x.get('guesses')} ({x.get('k_plus')} in, {x.get('k_minus')} out)", str(x.get("correct"))

    rows = (
        ("f-DP test, f = f_(eps,delta) (certified; headline)", _g(eps, 4), *guesses(g)),
        ("Steinke et al. 2023 (certified)", _g(data.get("epsilon_lower_bound_steinke"), 4), *guesses(gs)),
        (f"f-DP test, Gaussian DP: mu >= {_g(data.get('mu_lower_bound'), 4)} (certified)",
         _g(data.get("epsilon_of_mu_estimate"), 4) + "* (estimate)", *guesses(gm)),
    )
    lv = (data.get("details") or {}).get("levels") or [data.get("level"), data.get("level")]
    summary = [("canaries", f"{data.get('m')} ({data.get('n_included')} included)"),
               ("guess rules", f"{data.get('rules')} ({data.get('selection')}), levels {_g(lv[0])} to {_g(lv[1])} "
                               f"(a Bonferroni split of beta = {_g(beta)})"),
               ("p-value (Steinke et al., at the claim's epsilon or 0)", _g(data.get("p_value"), 4))]
    if claim is not None:
        summary.append(("claim", _scores_claim_text(claim)))
    sections = [
        Section("Summary", (Table(header=(), rows=tuple(summary)),), anchor="summary"),
        Section("One-run audit", (Table(
            header=("test", f"epsilon lower bound (delta={_g(delta)})", "guesses", "correct"), rows=rows,
            caption=("* epsilon of the mu bound at delta: a lower bound only if the mechanism's trade-off curve is "
                     "Gaussian (an estimate otherwise). Each bound holds with probability at least 1 - beta.")),),
            anchor="one-run"),
    ]
    sections.append(_glossary(("canary", "guess", "certified lower bound", "p-value", "beta", "claim")))
    sections.append(_provenance(data, command, versions, (data.get("inputs") or {}).get("seed")))
    return Document(title="dpaudit audit-scores (one run)", verdict=verdict, status=status, sections=tuple(sections),
                    footer=f"dpaudit {(versions or {}).get('dpaudit', '')} report")


# ------------------------------------------------------------------------------------ account --


def account_document(data: dict, *, command: str | None = None, versions: dict | None = None) -> Document:
    """The report of ``dpaudit account`` from its JSON result (``AccountingResult.to_dict()`` or
    ``OnlineAccountingResult.to_dict()`` with ``command``, ``method_requested`` and ``seed``).

    Parameters
    ----------
    data : dict
        The JSON result; for an offline query a ``profile`` entry (``epsilon``, ``curves`` as
        ``[[label, values], ...]``) adds the privacy-profile plot.
    command : str, optional
    versions : dict, optional

    Returns
    -------
    Document
    """
    online = isinstance(data.get("epsilon"), list)
    comp = data.get("composition", {})
    segs = comp.get("segments", [])
    mech = "; ".join(f"{s.get('count')} x {s.get('kind')} (sigma={_g(s.get('sigma'))}, q={_g(s.get('sampling_rate'))})" for s in segs) or "?"
    kind = str(data.get("kind", "")).replace("_", " ")
    if online:
        eps = data["epsilon"]
        verdict = (f"After {len(eps):,} steps of {mech}, epsilon is at most {_g(eps[-1], 6)} at delta={_g(data.get('delta'))} "
                   f"({kind}, method {data.get('method')}).")
    else:
        verdict = data.get("statement") or f"epsilon={_g(data.get('epsilon'))}, delta={_g(data.get('delta'))} ({kind})."
    summary = [("mechanism", mech), ("kind", kind), ("method", f"{data.get('method')} (requested {data.get('method_requested')})")]
    if online:
        summary += [("delta", _g(data.get("delta"))), ("epsilon after last step", _g(data["epsilon"][-1]))]
    else:
        summary += [("query", str(data.get("query"))), ("epsilon", _g(data.get("epsilon"))), ("delta", _g(data.get("delta"))),
                    ("estimate", _g(data.get("estimate"))), ("RDP bound", _g(data.get("rdp_bound")))]
    random = data.get("method") == "mc"  # the Monte Carlo accountant draws; the others compute
    summary += [("seed", _g(data.get("seed")) if random else "- (deterministic: no random numbers drawn)"),
                ("time", f"{_g(data.get('seconds'), 3)} s")]
    sections = [Section("Summary", (Table(header=(), rows=tuple(summary)),), anchor="summary")]
    if online:
        steps = data.get("steps") or list(range(1, len(data["epsilon"]) + 1))
        rdp = data.get("rdp_bound") if isinstance(data.get("rdp_bound"), list) else None
        png = plots.accounting_online_png(steps, data["epsilon"], rdp, title=f"delta={_g(data.get('delta'))}")
        k = len(steps)
        idx = sorted({0, k // 10, k // 4, k // 2, 3 * k // 4, k - 1})
        sections.append(Section("Epsilon over steps", (
            Plot("epsilon-steps", png, alt="epsilon against steps", caption="epsilon(delta) after each step (and the looser RDP bound)."),
            Table(header=("step", "epsilon", "RDP bound"),
                  rows=tuple((_g(steps[i]), _g(data["epsilon"][i]), _g(rdp[i]) if rdp else "-") for i in idx),
                  caption="Selected steps (all are in the JSON)."),
        ), anchor="steps"))
    elif data.get("profile"):
        prof = data["profile"]
        png = plots.accounting_profile_png(prof["epsilon"], [tuple(c) for c in prof["curves"]],
                                           mark=(data.get("epsilon"), data.get("delta")))
        sections.append(Section("Privacy profile", (Plot(
            "privacy-profile", png, alt="privacy profile delta(epsilon)",
            caption="Upper bounds on delta(epsilon) around the reported point: one pessimistic PLD grid (gaps: round-off "
                    "exceeds delta) and the RDP bound."),), anchor="profile"))
    attempts = data.get("attempts") or []
    if attempts:
        sections.append(Section("Attempts", (Table(
            header=("method", "status", "value", "seconds", "reason"),
            rows=tuple((str(a.get("method")), str(a.get("status")), _g(a.get("value")), _g(a.get("seconds"), 3), str(a.get("reason", ""))) for a in attempts)),), anchor="attempts"))
    keys = ("composition", "method_requested", "method") + (("beta", "confidence", "seed") if random else ()) + ("details",)
    settings = {k: data.get(k) for k in keys if k in data}
    sections.append(Section("Settings", (_settings_table(settings),), anchor="settings"))
    shown = {k: v for k, v in data.items() if k != "profile"}
    sections.append(_provenance(shown, command, versions, data.get("seed"), random=random))
    return Document(title="dpaudit account" + (" --online" if online else ""), verdict=verdict, status="info",
                    sections=tuple(sections), footer=f"dpaudit {(versions or {}).get('dpaudit', '')} report")

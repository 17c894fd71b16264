"""Findings as a maintainer would file them: one per cause, with a stable id.

A *finding* is one thing a row's run shows: the audit's own verdict (a violation, a floating-point
leak, an error), a leak the adversarial stage certified on one input kind, or a witness the
input-space search certified. Its id is ``ROW`` for the audit's finding (``diffprivlib.laplace``),
``ROW@KIND`` for an adversarial leak (``diffprivlib.mean@nan``) and ``ROW@search:FAMILY`` for a
search witness. Rows that show one bug (the same code path under two relations, every
mechanism that adds float noise the same way) share one :class:`~dpaudit.library.entry.Cause`
(:data:`CAUSES`, declared with each library's rows), which is what a maintainer files; a baseline
(:mod:`dpaudit.library.baseline`) may accept a finding by its id or a whole cause by the cause's id.

Also here: where a row's relation comes from (:func:`relation_note`) and the cause of a
floating-point leak (:func:`float_cause`), both read from the library's source.
"""

from __future__ import annotations

from .entry import Cause, Entry
from .registry import CAUSES, FLOAT_CAUSES, REGISTRY, row_module

__all__ = ["CAUSES", "FINDING_VERDICTS", "cause_of", "causes_by_id", "finding_ids", "float_cause", "relation_note",
           "unexplained", "validate_causes"]

FINDING_VERDICTS = ("violation", "floating-point leak", "error")
"""Audit verdicts that are findings (``unconfirmed`` is not: its second run disagreed)."""


def causes_by_id() -> dict[str, Cause]:
    """``cause id -> Cause``."""
    return {c.id: c for c in CAUSES}


def relation_note(entry: Entry) -> str:
    """Where ``entry``'s relation comes from: ``"documented: <the library's words> (<source>)"`` or
    ``"inferred: <what it is read from>"`` (:attr:`Entry.relation_note` when set; else the
    library's row module decides; ``""`` for a not-auditable entry)."""
    if entry.relation_note or entry.guarantee is None:
        return entry.relation_note
    module = row_module(entry.library)
    fn = getattr(module, "relation_note", None)
    return fn(entry) if fn is not None else ""


_MIRONOV = ("the set of doubles the outputs take depends on the input (Mironov 2012): {how}, so the output's low "
            "bits carry the true value (outputs near 0 are on the noise's fine grid for a true value 0, on the "
            "coarser grid of the noise near -1 for a true value 1). The claim may hold in exact arithmetic")


def float_cause(entry: Entry) -> str:
    """The cause of ``entry``'s floating-point leak, read from the library's source."""
    module = row_module(entry.library)
    special = getattr(module, "float_cause", None)
    if special is not None and (text := special(entry)):
        return text
    attr = entry.target.rsplit(":", 1)[1] if entry.target else ""
    if attr in FLOAT_CAUSES:
        return _MIRONOV.format(how=FLOAT_CAUSES[attr]) + "; a snapping mechanism or an exact sampler removes the leak"
    return _MIRONOV.format(how="the release is the true value plus noise rounded to float64")


def finding_ids(key: str, record: dict | None) -> list[str]:
    """The findings of one row's record: ``[key]`` when the audit's verdict is a finding, plus
    ``key@kind`` for every adversarial input kind whose leak was certified, and
    ``key@search:FAMILY`` for every search family (specials, columns, limits, dtypes) in which the input-space search itself certified a leak.

    Parameters
    ----------
    key : str
        The row's key.
    record : dict or None
        Its record (:func:`dpaudit.library.runner.audit_entry`); None: no findings.

    Returns
    -------
    list of str
    """
    if not record:
        return []
    out = [key] if record.get("verdict") in FINDING_VERDICTS else []
    from .stages import adversarial_leaks, search_leaks

    out += [f"{key}@{kind.replace(' ', '_')}" for kind in adversarial_leaks(record)]
    out += list(dict.fromkeys(f"{key}@search:{r['family']}" for r in search_leaks(record)))
    return out


def _index() -> dict[str, Cause]:
    out = {}
    for c in CAUSES:
        for key in c.rows:
            out[key] = c
        for key, kind in c.adversarial:
            out[f"{key}@{kind}"] = c
    return out


_INDEX = _index()


def cause_of(finding: str) -> Cause | None:
    """The cause a finding id belongs to (None when no cause names it)."""
    return _INDEX.get(finding)


def unexplained(records: dict) -> list[str]:
    """Finding ids of ``records`` (``key -> record``) that no cause names: each needs a cause
    before the table can be filed as findings."""
    return [f for key, rec in records.items() for f in finding_ids(key, rec) if cause_of(f) is None]


def validate_causes(keys=None) -> list[str]:
    """Problems of :data:`CAUSES`: a duplicate id, a finding named by two causes, a row key not in
    the registry (``keys``, default every registry key), a reproducer path that does not start with
    ``reproducers/``.

    Returns
    -------
    list of str
        Empty when the causes are consistent.
    """
    keys = set(keys if keys is not None else (e.key for e in REGISTRY))
    out, seen, ids = [], {}, set()
    for c in CAUSES:
        if c.id in ids:
            out.append(f"cause id {c.id!r} is used twice")
        ids.add(c.id)
        if not c.id.startswith(c.library.lower().replace(" ", "-") + "."):
            out.append(f"cause id {c.id!r} does not start with its library's name")
        findings = list(c.rows) + [f"{k}@{kind}" for k, kind in c.adversarial]
        for f in findings:
            if f in seen:
                out.append(f"finding {f!r} is in causes {seen[f]!r} and {c.id!r}")
            seen[f] = c.id
            if f.split("@", 1)[0] not in keys:
                out.append(f"cause {c.id!r} names the row {f.split('@', 1)[0]!r}, which is not in the registry")
        if c.reproducer and not c.reproducer.startswith("reproducers/"):
            out.append(f"cause {c.id!r}: reproducer {c.reproducer!r} is not under reproducers/")
    return out

"""``docs/library_audits.md``: the library-audit table rendered from the cached records.

:func:`render` turns the registry and the cache (``key -> record``, :mod:`dpaudit.library.cache`)
into Markdown: the counts per library and verdict, one table per library, the findings grouped one
per cause (:mod:`dpaudit.library.findings`), the reruns of exact rows, what is left out, the
published record, the candidate new findings, the adversarial inputs and Opacus's accountants.
A record whose fingerprint does not match its entry's is shown as ``not run``.
"""

from __future__ import annotations

import os
import platform
from dataclasses import replace
from pathlib import Path

from . import record as published
from .accountants import OPACUS_ACCOUNTANTS_KEY, render_opacus_accountants
from .contain import TIMED_OUT
from .entry import Entry
from .findings import CAUSES, FINDING_VERDICTS, cause_of, finding_ids, float_cause, relation_note
from .registry import (ADVERSARIAL_RECORD, LEFT_OUT, LIBRARIES, NOTES, PACKAGES, POWER_NOTES, POWER_SKIPPED, RECORD,
                       fingerprint, library_version)
from .runner import BETA, OUTCOMES
from .stages import _search_family, adversarial_leaks, adversarial_words, search_leaks, leak_words, planted_target, power_budget_note

__all__ = ["NO_POWER", "PASS_ADVERSARIAL", "fresh_records", "recorded_seconds", "render", "summary_verdict"]

PASS_ADVERSARIAL = "pass, leak on adversarial input"
"""The summary's column for a row that passed its audit on ordinary records but whose adversarial
screen certified a leak (it is not counted as a pass)."""

NO_POWER = "no power at this budget"
"""What a pass says when its planted twin (noise x0.7) was missed at the row's budget: the pass
shows nothing about a leak of that size."""

_KIND_WORDS = {"nan": "NaN", "inf": "+inf", "-inf": "-inf"}


def fresh_records(entries, cache: dict) -> dict:
    """``key -> record`` of the entries whose cached record is current (its fingerprint matches)."""
    return {e.key: cache.get(e.key) for e in entries
            if cache.get(e.key) and cache[e.key].get("fingerprint") == fingerprint(e)}


def summary_verdict(rec: dict | None) -> str:
    """The verdict a row is counted under in the summary: its audit's, except a pass whose
    adversarial screen found a leak, which is :data:`PASS_ADVERSARIAL`."""
    if rec is None:
        return "not run"
    if rec["verdict"] == "pass" and (adversarial_leaks(rec) or search_leaks(rec)):
        return PASS_ADVERSARIAL
    return rec["verdict"]


def _fmt_eps(value) -> str:
    if value is None:
        return "-"
    value = float(value)
    return "inf" if value == float("inf") else f"{value:.3g}"


def _fmt_data(data) -> str:
    if data is None:
        return "?"
    return "[" + ", ".join(
        "(" + ", ".join(f"{v:.4g}" for v in r) + ")" if isinstance(r, list) and len(r) > 1
        else f"{(r[0] if isinstance(r, list) else r):.4g}" for r in data) + "]"


def _command(entry: Entry, run: dict) -> str:
    """The run's ``dpaudit test`` command with the entry's current target path (the cached one may
    name the module's old place)."""
    if "seed" in run and "samples" in run:
        return " ".join(entry.command(run["seed"], run["samples"], run.get("tester_option")))
    return str(run.get("command"))


def _fmt_leak(rec: dict) -> str:
    leak = rec.get("leak_size")
    if not leak:
        return "not sized" if rec.get("verdict") in ("floating-point leak", "violation") else "-"
    return leak_words(leak)


def _power_missed(rec: dict) -> bool:
    power = rec.get("power") or {}
    return rec.get("verdict") == "pass" and bool(power) and power.get("outcome") != "error" and not power.get("caught")


def _fmt_power(entry: Entry, rec: dict) -> str:
    if rec.get("verdict") != "pass":
        return "-"
    power = rec.get("power")
    if not power:
        if planted_target(entry):
            secs = (rec.get("first") or {}).get("seconds", 0)
            return (f"not run: {POWER_SKIPPED[entry.key]}" if entry.key in POWER_SKIPPED else
                    f"not run (CPU time: the row's audit took {secs:.0f} s, a twin 1.5 to 5 times that)")
        from ..mechanisms.catalogue import planted

        return f"no planted twin: {planted.NO_TWIN.get(entry.target or '', 'none written yet')}"
    if power.get("outcome") == "error":
        return "error"
    word = "caught" if power.get("caught") else "missed"
    eps = _fmt_eps(power.get("epsilon_lower_bound"))
    text = f"{word} (eps >= {eps})" + ("" if power.get("caught") else f": **{NO_POWER}**")
    if (smaller := power_budget_note(entry, power)):
        text = (f"{word} {smaller} (eps >= {eps})" if power.get("caught")
                else f"missed {smaller} (eps >= {eps}): not comparable to the row's budget")
    if not power.get("caught") and entry.key in POWER_NOTES:
        text += "; budget to catch it: see the note above the table"
    return text


def _reproducers_dir() -> Path:
    from .cache import repository_root

    root = repository_root()
    return (root or Path(".")) / "reproducers"


def _entry_reproducers_dir(entry: Entry) -> Path:
    """``reproducers/``, or ``reproducers/envs/`` for a row of a library environment (its scripts
    need the library's own environment, not dpaudit's)."""
    return _reproducers_dir() / "envs" if entry.env else _reproducers_dir()


def reproducer_path(entry: Entry) -> Path:
    """Where ``entry``'s reproducer lives (it may not exist)."""
    return _entry_reproducers_dir(entry) / (entry.key.replace(".", "_").replace("-", "_") + ".py")


def adversarial_reproducer_path(entry: Entry, kind: str) -> Path:
    """Where the reproducer of ``entry``'s leak on the adversarial input ``kind`` lives (it may not exist)."""
    word = {"-": "minus_", "+": "plus_"}.get(kind[:1], "") + kind.lstrip("+-")
    key = entry.key.replace("-", "_") if entry.env else entry.key
    return _entry_reproducers_dir(entry) / (key.replace(".", "_") + f"_{word.replace('-', '_').replace('^', '')}.py")


def _repro_arg(path: Path) -> str:
    """``reproducers/NAME.py`` or ``reproducers/envs/NAME.py``: the script as a command names it."""
    try:
        return "reproducers/" + path.relative_to(_reproducers_dir()).as_posix()
    except ValueError:
        return f"reproducers/{path.name}"


def _link(path: Path) -> str:
    try:
        rel = path.relative_to(_reproducers_dir()).as_posix()
    except ValueError:
        rel = path.name
    return f"[{path.name}](../reproducers/{rel})"


def adversarial_reproducer_for(entry: Entry, kind: str) -> Path:
    """The reproducer that shows ``entry``'s leak on the adversarial input ``kind``: its own script
    when there is one, else the script of the input (or the row) named in
    :data:`~dpaudit.library.registry.ADVERSARIAL_SAME_CAUSE` (the path may not exist)."""
    from .registry import ADVERSARIAL_SAME_CAUSE

    own = adversarial_reproducer_path(entry, kind)
    if own.exists() or entry.key not in ADVERSARIAL_SAME_CAUSE:
        return own
    shared = ADVERSARIAL_SAME_CAUSE[entry.key][0]
    if shared.endswith(".py"):
        return _reproducers_dir() / shared
    return reproducer_path(entry) if shared == "row" else adversarial_reproducer_path(entry, shared)


def _fmt_reproducer(entry: Entry, rec: dict) -> str:
    path = reproducer_path(entry)
    links = [_link(path)] if path.exists() else []
    for kind in adversarial_leaks(rec):
        extra = adversarial_reproducer_for(entry, kind)
        link = _link(extra)
        if extra.exists() and link not in links:
            links.append(link)
    if links:
        return ", ".join(links)
    return "missing" if rec.get("verdict") not in ("pass", "not auditable", "unconfirmed", TIMED_OUT) else "-"


def recorded_seconds(record) -> float:
    """The wall time a cached record took, summed over its stages (audit, confirmation, leak, power,
    adversarial and accountant stages), in seconds.

    A dict's own ``seconds`` covers what is nested in it (the adversarial stage's ``search``), except
    a run it holds apart: ``targeted``, the confirmation's targeted run that did not reproduce
    (:func:`dpaudit.library.runner.confirm_run`), which ran before the confirmation run it is kept in.
    """
    if isinstance(record, dict):
        own = record.get("seconds")
        if isinstance(own, (int, float)) and not isinstance(own, bool):
            return own + recorded_seconds(record.get("targeted"))
        return sum(recorded_seconds(v) for v in record.values())
    if isinstance(record, list):
        return sum(recorded_seconds(v) for v in record)
    return 0.0


def _time_budget(fresh: dict) -> str:
    """The table's time budget, summed from the cached rows' recorded wall times."""
    rows = [r for r in fresh.values() if r]
    audits = sum((r.get("first") or {}).get("seconds", 0) + (r.get("confirm") or {}).get("seconds", 0) for r in rows)
    total = sum(recorded_seconds(r) for r in rows)
    return (f"Time budget: regenerating every stage of these {len(rows)} rows took {total / 3600:.1f} h of recorded "
            f"wall time ({audits / 3600:.1f} h for the audits and their confirmation runs), measured on the shared "
            "2-core machine, so an upper figure (`--jobs 2` runs two rows side by side: "
            "benchmarks/results/library_table_time.md has the end-to-end times); `dpaudit library table` rebuilds "
            "this page from the cache "
            "in seconds, and CI runs none of the audits, only the deterministic checks of tests/test_library*.py and "
            "the reproducers.")


def _power_summary(entries, fresh: dict) -> str:
    """One sentence on the passes' power (their planted twins)."""
    passes = [e for e in entries if (fresh.get(e.key) or {}).get("verdict") == "pass"]
    caught = [e for e in passes if (fresh[e.key].get("power") or {}).get("caught")]
    missed = [e for e in passes if _power_missed(fresh[e.key])]
    twin_not_run = [e for e in passes if not fresh[e.key].get("power") and planted_target(e)]
    no_twin = [e for e in passes if not planted_target(e)]
    return (f"Power of the {len(passes)} passes (each row's planted twin, noise x0.7, audited at the row's budget): "
            f"{len(caught)} caught their twin; **{len(missed)} missed it: {NO_POWER}** (such a pass shows nothing "
            f"about a leak of the planted size; the verdict cell says so); {len(twin_not_run)} twins not run "
            f"(CPU time); {len(no_twin)} rows have no twin.")


def _cause_lines(entries, fresh: dict) -> list[str]:
    """The summary of findings by cause: one line per cause with a current finding."""
    keys = {e.key for e in entries}
    current = {f for k, rec in fresh.items() if k in keys for f in finding_ids(k, rec)}
    shown = [c for c in CAUSES if any(f in current for f in list(c.rows) + [f"{k}@{kind}" for k, kind in c.adversarial])]
    if not shown:
        return []
    lines = ["", "Findings by cause (one issue each, as a maintainer would file it; `dpaudit library audit` reports the "
                 "same ids, and a baseline file may accept a finding or a whole cause by its id):", "",
             "| cause | library | kind | rows | adversarial leaks | prior report | reproducer |",
             "|---|---|---|---:|---:|---|---|"]
    for c in shown:
        rows = sum(k in current for k in c.rows)
        adv = sum(f"{k}@{kind}" in current for k, kind in c.adversarial)
        kind = ("relation-dependent: depends on the relation, which the library does not document"
                if c.relation_dependent else c.kind)
        prior = c.prior or ("none found" + (f" (searched: {c.searched})" if c.searched else ""))
        repro = f"[{Path(c.reproducer).name}](../{c.reproducer})" if c.reproducer else "-"
        lines.append(f"| `{c.id}`: {c.title} | {c.library} | {kind} | {rows} | {adv} | {prior} | {repro} |")
    by_lib = {}
    for c in shown:
        by_lib.setdefault(c.library, []).append(c)
    lines += [""] + [
        f"* {lib}: {sum(sum(k in current for k in c.rows) for c in cs)} non-pass rows and "
        f"{sum(sum(f'{k}@{kind}' in current for k, kind in c.adversarial) for c in cs)} adversarial leaks are "
        f"{len(cs)} causes: " + ", ".join(f"{sum(c.kind == k for c in cs)} {k}" for k in
                                           dict.fromkeys(c.kind for c in cs)) + "."
        for lib, cs in by_lib.items()]
    return lines


def _row_details(e: Entry, rec: dict) -> list[str]:
    first, confirm = rec["first"], rec.get("confirm") or {}
    w = first.get("witness") or {}
    lines = [f"#### {e.library} `{e.name}` ({e.key}): {rec['verdict']}", ""]
    if w:
        lines.append(f"* witness: D0 = {_fmt_data(w.get('d0'))}, D1 = {_fmt_data(w.get('d1'))}, direction "
                     f"{w.get('direction')}; found by the {first.get('tester')} tester"
                     f" (epsilon lower bound {_fmt_eps(first.get('epsilon_lower_bound'))}).")
    if rec["verdict"] == "error":
        lines.append(f"* message: {first.get('message', '')}")
    lines.append(f"* reproduce: `{_command(e, first)}` (exit {first['exit_code']}, {first['seconds']:.0f} s); "
                 f"`dpaudit library audit {e.library} {e.key.split('.', 1)[1]}` runs the same audit and sizes the "
                 "leak on its outputs")
    if confirm:
        lines.append(f"* second run: `{_command(e, confirm)}`: {confirm.get('outcome')}, epsilon lower bound "
                     f"{_fmt_eps(confirm.get('epsilon_lower_bound'))} (exit {confirm.get('exit_code')}, "
                     f"{confirm.get('seconds', 0):.0f} s)")
    if first.get("note"):
        lines.append(f"* note of the audit: {first['note'][:400]}")
    lines.append(f"* relation: {relation_note(e) or e.guarantee.neighbouring}")
    leak = rec.get("leak_size") or {}
    s = leak.get("structural")
    if s and s.get("text"):
        lines.append(f"* leak size (structural: a set one dataset never reaches by construction; "
                     f"{s['n_reach']:,} outputs per dataset): {s['text']}. Why: {e.structural.why if e.structural else '-'}")
    if leak.get("text"):
        src = leak.get("source")
        where = ("the run's own outputs" if src == "run" else "outputs drawn for the leak size" if src == "drawn" else
                 f"the run's outputs topped up with fresh ones: {src}" if src else
                 "outputs drawn for the leak size, an earlier stage")
        lines.append(f"* leak size (statistical, witness pair, {leak.get('samples', 0):,} outputs per dataset from "
                     f"{where}, half to choose the set, half to count it): {leak['text']}")
    if rec["verdict"] == "floating-point leak":
        lines.append(f"* cause: {e.cause or float_cause(e)}.")
    elif e.cause:
        lines.append(f"* cause: {e.cause}")
    else:
        lines.append("* cause: not analysed yet.")
    if e.key in RECORD:
        lines.append(f"* against the record: {RECORD[e.key]}.")
    path = reproducer_path(e)
    if path.exists():
        lines.append(f"* reproducer: `python {_repro_arg(path)}` (the library and NumPy only, installed by the "
                     "line in its docstring; prints both frequencies and the text to paste into the library's tracker)")
    if e.documented:
        lines.append(f"* documented: {e.documented}.")
    lines.append("")
    return lines


def _findings_section(entries, fresh: dict) -> list[str]:
    """Findings one per cause, each row's details under its cause; unconfirmed rows apart."""
    mine = [(e, fresh[e.key]) for e in entries if fresh.get(e.key) and fresh[e.key]["verdict"] in FINDING_VERDICTS]
    if not mine:
        return []
    lines = ["", "## Findings, one per cause", "",
             "Each cause is one issue to file; the rows under it show the same bug (under both relations, or in "
             "every function that shares the code path). A *relation-dependent* cause depends on the relation, "
             "which the library does not document: correct under the relation the calibration assumes, not DP "
             "under the other.", ""]
    placed = set()
    for c in CAUSES:
        rows = [(e, rec) for e, rec in mine if cause_of(e.key) is c]
        adv = [f"{k}@{kind}" for k, kind in c.adversarial
               if f"{k}@{kind}" in {f for e in entries for f in finding_ids(e.key, fresh.get(e.key))}]
        if not rows and not adv:
            continue
        kind = ("relation-dependent (depends on the relation, which the library does not document)"
                if c.relation_dependent else c.kind)
        lines += [f"### `{c.id}`: {c.title}", "",
                  f"* kind: {kind}; library: {c.library} {library_version(c.library)}",
                  f"* rows: " + (", ".join(f"`{e.key}` ({rec['verdict']})" for e, rec in rows) or "none (adversarial "
                                 "inputs only)")]
        if adv:
            lines.append(f"* adversarial-input leaks: {len(adv)} (" + ", ".join(f"`{f}`" for f in adv[:12])
                         + (f", and {len(adv) - 12} more" if len(adv) > 12 else "") + ")")
        lines.append(f"* prior reports: {c.prior or 'none found'}"
                     + (f"; searched: {c.searched}" if c.searched else ""))
        if c.note:
            lines.append(f"* {c.note}")
        if c.reproducer:
            lines.append(f"* reproducer to attach: `python {c.reproducer}`")
        lines.append("")
        for e, rec in rows:
            lines += _row_details(e, rec)
            placed.add(e.key)
    rest = [(e, rec) for e, rec in mine if e.key not in placed]
    if rest:
        lines += ["### Not yet assigned to a cause", ""]
        for e, rec in rest:
            lines += _row_details(e, rec)
    return lines


def render(entries, cache: dict, reruns: dict | None = None) -> str:
    """``docs/library_audits.md`` from the cached records of ``entries``.

    Parameters
    ----------
    entries : sequence of Entry
    cache : dict
        ``key -> record`` (:func:`dpaudit.library.runner.audit_entry`); a missing or stale record
        (its fingerprint does not match the entry's) is shown as ``not run``.
    reruns : dict, optional
        ``key -> record`` (:func:`dpaudit.library.runner.rerun_entry`): shown in a section "Reruns of
        exact mechanisms" (records of entries not in ``entries`` are left out).

    Returns
    -------
    str
        Markdown: versions, the counts per library and verdict, one table per library, the findings
        one per cause with every row's witness pair, commands and cause, and the sections after.
    """
    entries = list(entries)
    libraries = list(dict.fromkeys(e.library for e in entries))
    fresh = fresh_records(entries, cache)
    timed_out = (TIMED_OUT,) if any((r or {}).get("verdict") == TIMED_OUT for r in fresh.values()) else ()
    columns = (OUTCOMES[0], PASS_ADVERSARIAL, *OUTCOMES[1:], "unconfirmed", *timed_out, "not run")
    lines = [
        "# Audits of real DP libraries",
        "",
        "Generated by `dpaudit library table` from the records `dpaudit library audit LIBRARY [ROW ...] "
        "--write-cache` keeps ([library_ci.md](library_ci.md): running a library's rows in CI; do not edit by hand). Each row is "
        "`dpaudit test TARGET --epsilon E [--delta D] --tester all --samples N --trials T --seed S` on the "
        "configuration stated, against the guarantee the library documents for it. Verdicts: **pass** (no "
        f"violation at that budget: not a proof; a pass whose planted twin was missed says **{NO_POWER}**), "
        "**pass on ordinary inputs; leak on an adversarial input** (the audit passed on records from the "
        "domain, but the adversarial screen certified a leak on an input the API accepts, e.g. a NaN record; "
        "counted apart from the passes in the summary), **violation** (distributional), **floating-point leak** "
        "(only the set of doubles the outputs take rejects the claim, which may hold in exact arithmetic; "
        "`docs/floating_point.md`), **inconclusive** (exit code 3), **not auditable** (with the reason). A "
        "violation counts only when a second run (the next seed, twice the samples) finds the same kind: first "
        "with a targeted tester (the sequential tester, which stops at the first sufficient evidence, for a "
        "distributional violation; the float-bits tester alone for a floating-point leak), then, when that does "
        "not, with the row's own tester; otherwise it is **unconfirmed**. beta = 0.01 per audit (the CLI default).",
        "",
        "Further columns (each stage writes into the cache, so a row keeps its last values and the date it was "
        "audited): **relation**: *documented* (the library's own words, quoted under each table) or *inferred* "
        "(from the calibration; diffprivlib and PipelineDP name no relation, so the tools whose calibration "
        "assumes one are audited under both). **leak size**: for a finding, sized on the outputs of the audit run "
        "itself. Where one dataset of the pair never reaches a set by construction (read in the library's code, "
        "the proof stated with the finding), no epsilon holds for delta below P[S | D], and the cell says "
        "**no epsilon for delta < X**, X a Clopper-Pearson lower bound on P[S | D] at confidence 0.99 (**true "
        "delta = 1** where P[S | D] = 1 by construction too; `dpaudit.library.structural`); otherwise an output set "
        "one dataset reaches and the other does not, chosen on half of the outputs and counted on the other half: "
        "with confidence 0.99, delta >= P[S | D] - e^epsilon P[S | D'] for every epsilon "
        "(`dpaudit.audit.leak_size`). **power**: the same mechanism with its noise scaled by 0.7 "
        "(`dpaudit.mechanisms.catalogue.planted`: diffprivlib and PyDP called with epsilon / 0.7, OpenDP's own "
        "searched scale times 0.7, PipelineDP's accountant given total_epsilon / 0.7; the twin's own guarantee is "
        "epsilon / 0.7, and where the library's calibration is loose (exponential mechanisms, order statistics, "
        "ratios of noisy counts) the twin may still meet the row's claim, so a miss there says as much about the "
        "twin as about the budget), audited at the row's budget and claim (where the CPU did not allow it, at a "
        "smaller budget stated in the cell: a catch there is a catch, a miss is not comparable to the row's "
        "budget): caught or missed, with its epsilon lower bound. **adversarial inputs**: the adversarial stage of "
        "`dpaudit test --adversarial` (the edges the target's API accepts, one at a time, then the input-space "
        "search: pairs searched, families, rejections and leaks, `ROW@search:FAMILY` for one the search built; "
        "`dpaudit.audit.adversarial`; a rejected input is a pass); PipelineDP's rows also try their "
        "declared privacy-unit pairs (`AcceptedInputs.unit_pairs`: a unit over max_partitions_contributed or "
        "max_contributions_per_partition, a unit alone in an otherwise empty partition, the empty dataset vs one "
        "unit) with a distributional check besides (one half-line of an output coordinate, chosen on half of the "
        "outputs and certified on the other half); OpenDP's add/remove rows already try the empty dataset vs one "
        "record, and its only row at d_in > 1 (laplace_mean, d_in 2) is a replace-one pair of sized data, where a "
        "unit over d_in is not a neighbour. **reproducer**: a standalone script (the library and NumPy only, with "
        "the pinned `pip install` line that works in a fresh environment in its docstring) in `reproducers/`.",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}. "
        "Times are the wall time of the first run (the confirmation run's in the findings list). "
        + _time_budget(fresh),
        "",
        "| library | version | environment | rows | " + " | ".join(columns) + " |",
        "|---|---|---|---:|" + "---:|" * len(columns),
    ]
    for lib in libraries:
        mine = [e for e in entries if e.library == lib]
        verdicts = [summary_verdict(fresh.get(e.key)) for e in mine]
        counts = [verdicts.count(v) for v in columns]
        env = LIBRARIES[lib].env if lib in LIBRARIES and LIBRARIES[lib].env else "dpaudit's own"
        lines.append(f"| {lib} | {library_version(lib)} | {env} | {len(mine)} | " + " | ".join(map(str, counts)) + " |")
    for lib in LEFT_OUT:
        if lib not in libraries and lib in PACKAGES:
            lines.append(f"| {lib} | {library_version(lib)} | - | 0 | " + " | ".join("0" * len(columns)) + " |")
    lines += ["", f"{len(entries)} rows in {len(libraries)} libraries. " + _power_summary(entries, fresh)]
    lines += _cause_lines(entries, fresh)
    for lib in libraries:
        power_notes = sorted({POWER_NOTES[e.key] for e in entries if e.library == lib and e.key in POWER_NOTES})
        power_text = [f"Power of the missed Gaussian rows ({', '.join(e.key for e in entries if e.key in POWER_NOTES and e.library == lib)}): {t}.\n"
                      for t in power_notes]
        info = LIBRARIES.get(lib)
        where = (f"Environment: `{info.env}` (its own virtual environment, driven over a pipe)" if info and info.env
                 else "Environment: dpaudit's own process")
        install = f"; reproducers install `pip install {info.install}`" if info and info.install else ""
        lines += ["", f"## {lib} {library_version(lib)}", "", where + install + ".", ""] + \
                 ([NOTES[lib], ""] if lib in NOTES else []) + power_text + [
                  "| entry | configuration | documented guarantee | relation | budget | verdict | epsilon lower bound "
                  "| leak size | power (noise x0.7) | adversarial inputs | reproducer | time (audited) |",
                  "|---|---|---|---|---|---|---:|---|---|---|---|---:|"]
        notes = {}
        for e in (e for e in entries if e.library == lib):
            rec = fresh.get(e.key)
            if e.not_auditable:
                lines.append(f"| `{e.name}` | {e.configuration} | - | - | - | not auditable: {e.not_auditable} "
                             "| - | - | - | - | - | - |")
                continue
            note = relation_note(e)
            mark = notes.setdefault(note, len(notes) + 1)
            relation = f"{note.split(':', 1)[0]} [{mark}]" if note else "-"
            if rec is None:
                lines.append(f"| `{e.name}` | {e.configuration} | {e.guarantee.describe()} | {relation} "
                             f"| {e.budget.describe()} | not run | - | - | - | - | - | - |")
                continue
            first = rec["first"]
            verdict = rec["verdict"]
            cause = cause_of(e.key)
            if verdict in ("violation", "floating-point leak", "unconfirmed", "error"):
                tail = f"; cause `{cause.id}`" if cause and verdict != "unconfirmed" else ""
                verdict = (f"**{verdict}** (see below{tail})" if verdict != "error" else
                           f"error: {first.get('message', '')}{tail}")
            elif verdict == "pass" and (adversarial_leaks(rec) or search_leaks(rec)):
                kinds = ", ".join([_KIND_WORDS.get(k, k) for k in adversarial_leaks(rec)] + list(dict.fromkeys(
                    f"a searched ({r['family']})" for r in search_leaks(rec))))
                verdict = f"pass on ordinary inputs; **leak** on {kinds} input (see adversarial inputs)"
            elif verdict == "pass" and _power_missed(rec):
                verdict = f"pass ({NO_POWER})"
            elif verdict == TIMED_OUT:  # dpaudit.library.contain: neither a pass nor a finding
                verdict = f"**{first.get('message') or TIMED_OUT}**"
            lines.append(f"| `{e.name}` | {e.configuration} | {e.guarantee.describe()} | {relation} "
                         f"| {e.budget.describe()} | {verdict} | {_fmt_eps(first.get('epsilon_lower_bound'))} "
                         f"| {_fmt_leak(rec)} | {_fmt_power(e, rec)} | {adversarial_words(rec)} "
                         f"| {_fmt_reproducer(e, rec)} | {first['seconds']:.0f} s ({rec.get('ran_at', '?')[:10]}) |")
        if notes:
            lines += ["", "Relations:", ""] + [f"{i}. {n}" for n, i in notes.items()]
    shown = [(e, r) for e in entries if (r := (reruns or {}).get(e.key)) and r.get("fingerprint") == fingerprint(
        replace(e, budget=replace(e.budget, samples=r["samples"], trials=r["trials"])))]
    if shown:
        lines += ["", "## Reruns of exact mechanisms", "",
                  "Entries whose guarantee holds exactly, audited K times with seeds seed, ..., seed + K - 1 "
                  "(`dpaudit library audit LIB ROW --reruns K`): each run accuses a correct mechanism with probability "
                  "at most beta, so the accusations are at most Binomial(K, beta); an entry is accused *beyond beta* "
                  "when P(Binomial(K, beta) >= accusations) < 0.01. OpenDP is not seeded: its reruns are independent "
                  "runs, not replayable ones.", "",
                  "| entry | budget | K | seeds | accusations | errors | beta | P(Bin(K, beta) >= accusations) "
                  "| verdict | max epsilon lower bound | time |",
                  "|---|---|---:|---|---:|---:|---:|---:|---|---:|---:|"]
        for e, r in shown:
            lbs = [v for v in r["epsilon_lower_bounds"] if v is not None]
            lines.append(f"| {e.library} `{e.name}` | {r['samples']:,} x {r['trials']}, {e.budget.tester} "
                         f"| {r['k']} | {r['seeds'][0]}..{r['seeds'][-1]} | {r['accusations']} | {r['errors']} "
                         f"| {r['beta']:g} | {r['p_value']:.3g} | {r['verdict']} | {_fmt_eps(max(lbs) if lbs else None)} "
                         f"| {r['seconds']:.0f} s |")
    lines += ["", "## Left out of the registry so far", ""]
    lines += [f"* {lib}: {what}: {why}." for lib, parts in LEFT_OUT.items() for what, why in parts.items()]
    lines += _findings_section(entries, fresh)
    unconfirmed = [(e, fresh[e.key]) for e in entries if (fresh.get(e.key) or {}).get("verdict") == "unconfirmed"]
    if unconfirmed:
        lines += ["", "## Unconfirmed (not counted as findings)", ""]
        for e, rec in unconfirmed:
            lines += _row_details(e, rec)
    lines += published.render(fresh)
    new = [e for e in entries if RECORD.get(e.key, "").startswith("candidate new") and fresh.get(e.key)
           and fresh[e.key]["verdict"] not in ("pass", "not auditable")]
    if new:
        lines += ["", "## Candidate new findings", "",
                  "Findings not found in the library's tracker (searched by issue text) nor in the older reports "
                  "(Mironov 2012, Jin et al. 2022, Haney et al. 2022, Casacuberta et al. 2022; the issues cited "
                  "above, among them opendp/opendp#414 for the Gaussian grid and meta-pytorch/opacus#616 for "
                  "float32 noise), and checked against the published record of Re:cord-play (PoPETs 2026, section "
                  "above): none of its 13 violations concerns PipelineDP or PyDP; its diffprivlib ones are R5 and R6 "
                  "(LinearRegression's diagonal sensitivity, LogisticRegression's label set: GaussianNB's below is "
                  "R6's kind in another model, where declaring the classes does not help), its Opacus one is R7 "
                  "(make_private's divisor); its NaN-injection example (the dp-recorder artifact's "
                  "tests/test_nan_injection.py) maps to SmartNoise Synth, dpmm, Synthcity, Opacus and diffprivlib, "
                  "so the NaN findings of those libraries are known as a class and only PipelineDP's stays new.", ""]
        for e in new:
            rec = fresh[e.key]
            path = reproducer_path(e)
            repro = f"`python {_repro_arg(path)}`" if path.exists() else "no reproducer"
            leak = leak_words(rec.get("leak_size")) if rec.get("leak_size") else ""
            lines.append(f"* {e.library} {library_version(e.library)} `{e.name}` ({e.key}): {rec['verdict']}"
                         + (f"; {leak}" if leak else "") + f". Reproducer: {repro}.")
        for lib, text in ADVERSARIAL_RECORD.items():
            if text.startswith("candidate new"):
                lines.append(f"* {lib} {library_version(lib)}, adversarial input: {text}.")
        lines += published.candidate_lines()
    adversarial = [(e, r) for e in entries if (rec := fresh.get(e.key)) and rec.get("adversarial")
                   for r in rec["adversarial"]["results"] if r["status"] == "leak"]
    tried = [e for e in entries if (rec := fresh.get(e.key)) and rec.get("adversarial")]
    if tried:
        staged = [e for e in tried if (fresh[e.key]["adversarial"].get("search") is not None
                                       or fresh[e.key]["adversarial"].get("not_searched"))]
        lines += ["", "## Adversarial inputs and the input-space search", "",
                  f"{len(tried)} rows were run on the adversarial inputs their target declares; {len(staged)} of them "
                  "through the adversarial stage of `dpaudit test --adversarial` "
                  "(`dpaudit.audit.adversarial.screen_stage`): the fixed adversarial list first (NaN, +-inf, -0.0, "
                  "the smallest subnormal, +-the largest double, the bounds plus/minus their width, int64 records "
                  "and 2^53 + 1, the empty dataset, and the pairs a target declares), then the Hypothesis search of "
                  "the input space the target declares (several special values together with ordinary records, "
                  "per-record argument columns such as weights, labels and partition keys, public bounds at the "
                  "integer and float limits, dtypes; `docs/search.md`), each candidate certified on fresh outputs, "
                  f"all of a row's statements together at beta {BETA:g}; the others by the one-value-at-a-time "
                  "screen of the earlier table (`dpaudit.audit.adversarial.screen`). A rejected input (the library "
                  "raises) is a pass for that input. A leak is an output set one dataset reaches and the other "
                  "does not, certified on held-out outputs; float grids are left to the audit. A leak of the fixed "
                  "list is the finding `ROW@INPUT`, one the search built `ROW@search:FAMILY`. Each leak's cause is "
                  "in the findings above.", ""]
        for lib, known in ADVERSARIAL_RECORD.items():
            if any(e.library == lib for e, _ in adversarial):
                lines.append(f"{lib}: {known}.")
        lines.append("")
        for e, r in adversarial:
            n = fresh[e.key]["adversarial"]["samples"]
            fam = _search_family(r)
            fid = f"{e.key}@search:{fam}" if fam else f"{e.key}@{r['kind'].replace(' ', '_')}"
            c = cause_of(fid)
            lines.append(f"* {e.library} `{e.name}` (`{fid}`; {r['description']}; {n:,} outputs per "
                         f"dataset): {r['detail']}" + (f" Cause: `{c.id}`." if c else " Cause: not yet assigned."))
        if not adversarial:
            lines.append("* no adversarial input certified a leak.")
    if any(e.library == "Opacus" for e in entries):
        lines += render_opacus_accountants(cache.get(OPACUS_ACCOUNTANTS_KEY))
    return "\n".join(lines).rstrip() + "\n"

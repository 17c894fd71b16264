"""``dpaudit library``: the library-audit table as commands a library's maintainers run.

* ``dpaudit library list [LIBRARY]``: the rows (key, claim, budget, environment);
* ``dpaudit library audit LIBRARY [ROW ...]``: run rows as ``dpaudit test`` does, size each finding
  on that run's outputs, sort the findings by a baseline, exit 1 on a new one (a CI gate);
* ``dpaudit library table``: write ``docs/library_audits.md`` from the cached records (``--check``:
  exit 1 when the file is not what the cache gives);
* ``dpaudit library reproducers``: the standalone scripts and their install lines (``--check``: each
  states a pinned ``pip install`` line; ``--run-fresh``: run each in a fresh environment without
  dpaudit).

The logic is in :mod:`dpaudit.library`; this module parses options and renders (Rich tables, a
progress line, ``--json``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.markup import escape
from rich.table import Table

from .options import (EXIT_BAD_INPUT, EXIT_INCONCLUSIVE, EXIT_INTERNAL_ERROR, EXIT_OK, EXIT_VIOLATION, console, emit,
                      fail, option, out, print_table, tidy_help)

HELP = ("Audit the public functions of real DP libraries (diffprivlib, OpenDP, PipelineDP, PyDP, Opacus, and "
        "those with an environment of their own) against the guarantees their documentation states: the table of "
        "docs/library_audits.md, as commands a library's maintainers run in their CI.")

LIBRARY_EXIT_HELP = ("[bold]Exit codes[/] (audit): 0 no new finding (every finding is in --baseline); 1 a new "
                     "finding; 2 bad input; 3 no new finding, a row inconclusive or timed out; 4 internal error "
                     "(never a finding). "
                     "table --check and reproducers --check: 0 up to date, 1 not.")

library_app = typer.Typer(help=HELP, no_args_is_help=True, rich_markup_mode="rich", add_completion=False)


def _stages(spec: str) -> tuple:
    from ..library.stages import STAGES

    chosen = set(STAGES) if spec == "all" else {s.strip() for s in spec.split(",") if s.strip()}
    unknown = chosen - set(STAGES)
    if unknown:
        raise ValueError(f"--stages: unknown stage(s) {', '.join(sorted(unknown))}; known: {', '.join(STAGES)} or all")
    return tuple(s for s in STAGES if s in chosen | {"audit"})


@library_app.command("list", epilog=LIBRARY_EXIT_HELP)
def list_cmd(
    library: Optional[str] = typer.Argument(None, metavar="[LIBRARY]", help="Only this library's rows (or 'all')."),
    cache: Optional[Path] = typer.Option(None, "--cache", help="Show each row's cached verdict from this file "
                                         "(default: the repository's cache, when present)."),
    json_out: bool = option("json", False),
) -> None:
    """List the rows: key, documented claim, budget, environment and the cached verdict.

    Examples:

      dpaudit library list diffprivlib
      dpaudit library list --json
    """
    from ..library import cache as lc
    from ..library.registry import fingerprint, select

    try:
        entries = select(library or "all")
        records = lc.load(cache or lc.default_cache())
    except ValueError as exc:
        raise fail(str(exc))
    rows = []
    for e in entries:
        rec = records.get(e.key) or {}
        current = rec.get("fingerprint") == fingerprint(e)
        rows.append({"key": e.key, "library": e.library, "name": e.name, "target": e.target,
                     "claim": e.guarantee.describe() if e.guarantee else None,
                     "budget": e.budget.describe() if e.guarantee else None, "environment": e.env or "this process",
                     "not_auditable": e.not_auditable,
                     "cached_verdict": rec.get("verdict") if current else None})
    if json_out:
        emit(json.dumps({"rows": rows}, indent=2))
        raise typer.Exit(EXIT_OK)
    envs = any(e.env for e in entries)
    table = Table(title=f"{len(rows)} rows", header_style="bold")
    for col in ("row", "claim", "budget", *(("env",) if envs else ()), "cached"):
        table.add_column(col)
    for r, e in zip(rows, entries):
        budget = f"{e.budget.samples:,}x{e.budget.trials}" if e.guarantee else "-"
        cells = [r["key"], r["claim"] or "not auditable", budget, *((r["environment"],) if envs else ()),
                 r["cached_verdict"] or "-"]
        table.add_row(*cells)
    print_table(out(), table)


@library_app.command("audit", epilog=LIBRARY_EXIT_HELP)
def audit_cmd(
    library: str = typer.Argument(..., metavar="LIBRARY", help="A library of the table (see `dpaudit library "
                                  "list`), or 'all'."),
    rows: Optional[List[str]] = typer.Argument(None, metavar="[ROW ...]", help="Row keys (laplace or "
                                               "diffprivlib.laplace; mean* matches a prefix). Default: every row of "
                                               "the library."),
    stages: str = typer.Option("audit", "--stages", help="Comma-separated: audit (always; each finding's leak size "
                               "comes from the run's own outputs), adversarial or search (one stage, as dpaudit test "
                               "--adversarial: the fixed adversarial list, then the input-space search), power (the "
                               "planted twin of a pass), "
                               "accountants (Opacus's accountants); or all."),
    confirm: bool = typer.Option(False, "--confirm", help="Run each violation again (next seed, twice the samples) and "
                                 "call it unconfirmed when that run disagrees (the table's rule)."),
    samples: Optional[int] = option("samples", None, "per dataset and trial; default: each row's budget (a smaller "
                                    "one is recorded with the row)"),
    processes: Optional[str] = option("processes", None, "default 1: the run's outputs stay in this process for the "
                                      "leak size"),
    beta: float = option("beta", 0.01, "of each audit and each stage"),
    leak_samples: int = typer.Option(0, "--leak-samples", metavar="N", help="Size a finding on at least N outputs "
                                     "per dataset, topping up the run's own with fresh draws (the table uses 20000); "
                                     "default 0: the run's outputs only."),
    search_budget: Optional[int] = typer.Option(None, "--search-budget", metavar="N", min=1, help="Pairs the "
                                                "input-space search generates per hunt (adversarial stage); "
                                                "default 40."),
    time_limit: Optional[float] = typer.Option(None, "--time-limit", metavar="SECONDS", help="Wall-clock limit of "
                                               "each stage of a row that calls its library in this process (the "
                                               "confirmation run three times it): past it the row's worker process is "
                                               "killed and the row is reported 'timed out (stage S after N s)', "
                                               "never a pass or a finding; the next row goes on. Default 1800 per "
                                               "stage at the row's budget, scaled up with --samples; with --reruns "
                                               "K, K of them for the K audits)."),
    jobs: int = typer.Option(1, "--jobs", "-j", metavar="N", min=1, help="Rows audited side by side (N worker "
                             "processes; the longest rows by their cached times first, at most one row with an "
                             "environment of its own at a time); results are the same as one at a time. The table "
                             "regenerates with 2 on this 2-core machine (docs/library_ci.md)."),
    in_process: bool = typer.Option(False, "--in-process", help="Run the rows in this process, without the worker "
                                    "process and its time limit (a library call that never returns then stops the "
                                    "run)."),
    reruns: Optional[int] = typer.Option(None, "--reruns", metavar="K", help="Instead: audit each row K times "
                                         "(seeds seed..seed+K-1) and count accusations against beta."),
    baseline: Optional[Path] = typer.Option(None, "--baseline", help="Known findings: finding or cause ids, one per "
                                            "line; only findings not in it fail the run (exit 1)."),
    write_baseline: Optional[Path] = typer.Option(None, "--write-baseline", help="Write this run's findings as a "
                                                  "baseline file."),
    write_cache: bool = typer.Option(False, "--write-cache", help="Store each row's record in the cache (what "
                                     "`dpaudit library table` renders)."),
    cache: Optional[Path] = typer.Option(None, "--cache", help="The cache file (default: the repository's "
                                         "benchmarks/results/library_audits.json in a checkout)."),
    json_out: bool = option("json", False),
    quiet: bool = option("quiet", False),
) -> None:
    """Audit a library's rows as `dpaudit test` does, and sort the findings. A row that calls its library
    in this process runs in a worker process, each stage under --time-limit (a call that never returns
    makes the row 'timed out', and the run goes on).

    Every column of a row comes from this run: the verdict, the epsilon lower bound and the leak size
    of a finding (sized on the run's own outputs). Findings are named by id (ROW; ROW@INPUT for a leak
    on an input of the fixed adversarial list; ROW@search:FAMILY for one the input-space search built) and grouped by cause; with --baseline only new ones fail the run.

    Examples:

      dpaudit library audit diffprivlib laplace gaussian_nb
      dpaudit library audit diffprivlib --baseline .dpaudit-baseline.txt
      dpaudit library audit PipelineDP count_gaussian --write-cache --confirm
      dpaudit library audit all --stages all --confirm --leak-samples 20000 --write-cache --jobs 2
    """
    from ..library import baseline as lb
    from ..library import cache as lc
    from ..library.registry import select
    from .options import int_or_word

    try:
        chosen_stages = _stages(stages)
        entries = select(library, rows or ())
        known = lb.read(baseline) if baseline is not None else set()
        n_proc = 1 if processes is None else int_or_word(processes, "auto", "--processes")
        if samples is not None and samples < 8:
            raise ValueError(f"--samples must be at least 8, got {samples}")
        if leak_samples < 0:
            raise ValueError(f"--leak-samples must be at least 0, got {leak_samples}")
        if reruns is not None and reruns < 1:
            raise ValueError(f"--reruns must be at least 1, got {reruns}")
        if not 0.0 < beta < 1.0:
            raise ValueError(f"--beta must be in (0, 1), got {beta!r}")
        if time_limit is not None and not 0.0 < time_limit < float("inf"):
            raise ValueError(f"--time-limit must be a positive number of seconds, got {time_limit!r}")
        if jobs > 1 and in_process:
            raise ValueError("--jobs runs rows in worker processes side by side; it cannot be combined with "
                             "--in-process")
    except ValueError as exc:
        raise fail(str(exc))
    cache_path = cache or lc.default_cache()
    if reruns is not None:
        _reruns(entries, reruns, samples, n_proc, write_cache, cache_path, json_out, quiet,
                time_limit, in_process)
        return
    auditable = [e for e in entries if not e.not_auditable]
    show = not (quiet or json_out)
    results, ran = [], {}
    from ..library.contain import RowWorker

    accountants = "accountants" in chosen_stages and any(e.library == "Opacus" for e in entries)
    options = (chosen_stages, confirm, n_proc, samples, beta, leak_samples, search_budget, time_limit, write_cache,
               cache_path, show)
    if jobs > 1:
        _audit_rows_side_by_side(entries, jobs, accountants, results, ran, *options)
    else:
        worker = None if in_process else RowWorker()
        try:
            _audit_rows(entries, worker, results, ran, *options)
        finally:
            if worker is not None:
                worker.close()
        if accountants:
            results.append(_accountants_result(write_cache, cache_path))
    all_findings = [f["id"] for r in results for f in r["findings"]]
    tri = lb.triage(all_findings, known, ran=ran)
    if write_baseline is not None:
        lb.write(write_baseline, all_findings)
    internal = any(r.get("exit_code") == 4 for r in results)
    inconclusive = any(r["verdict"] in ("inconclusive", "timed out") for r in results)
    code = (EXIT_INTERNAL_ERROR if internal else EXIT_VIOLATION if tri.new else
            EXIT_INCONCLUSIVE if inconclusive else EXIT_OK)
    if json_out:
        emit(json.dumps({"library": library, "rows": results, "new_findings": list(tri.new),
                         "known_findings": list(tri.known), "gone_from_baseline": list(tri.gone),
                         "exit_code": code}, indent=2, default=str))
        raise typer.Exit(code)
    table = Table(title=f"{len(auditable)} row(s) audited", header_style="bold")
    for col in ("row", "verdict", "eps >=", "leak size", "findings", "time"):
        table.add_column(col, no_wrap=col in ("eps >=", "time"))
    for r in results:
        marks = []
        for f in r["findings"]:
            marks.append(f"{f['id']} ({'known' if f['id'] in tri.known else 'NEW'})")
        eps = r.get("epsilon_lower_bound")
        table.add_row(r["key"], r.get("verdict_text") or r["verdict"], "-" if eps is None else f"{eps:.3g}",
                      r.get("leak_size") or "-",
                      "\n".join(marks) or "-", "-" if r.get("seconds") is None else f"{r['seconds']:.0f} s")
    print_table(out(), table)
    causes: dict = {}
    for r in results:
        for f in r["findings"]:
            causes.setdefault(f["cause"] or "(no cause assigned)", []).append(f["id"])
    for cid, ids in causes.items():
        console.print(f"cause {escape(cid)}: {len(ids)} finding(s)", highlight=False)
    if tri.gone:
        console.print(f"[yellow]in the baseline but not found now[/] (fixed, or not reached at this budget): "
                      f"{escape(', '.join(tri.gone))}", highlight=False)
    word = {EXIT_OK: "no new finding", EXIT_VIOLATION: f"{len(tri.new)} new finding(s): {', '.join(tri.new)}",
            EXIT_INCONCLUSIVE: "no new finding; a row was inconclusive or timed out",
            EXIT_INTERNAL_ERROR: "an internal error of dpaudit (never a finding)"}[code]
    console.print(f"{escape(word)}" + (f"; {len(tri.known)} known" if tri.known else "") +
                  (f"; records written to {escape(str(cache_path))}" if write_cache else ""), highlight=False)
    raise typer.Exit(code)


def _accountants_result(write_cache, cache_path) -> dict:
    """Check Opacus's accountants (the ``accountants`` stage) and the result line it makes."""
    from ..library import cache as lc
    from ..library.accountants import OPACUS_ACCOUNTANTS_KEY, opacus_accountant_check

    acc = opacus_accountant_check()
    if write_cache:
        lc.save_record(cache_path, acc, key=OPACUS_ACCOUNTANTS_KEY)
    return {"key": OPACUS_ACCOUNTANTS_KEY, "verdict": "checked", "findings": [], "seconds": acc["seconds"],
            "record": acc}


def _audit_one(e, i, n, worker, ran, chosen_stages, confirm, n_proc, samples, beta, leak_samples, search_budget,
               time_limit, write_cache, cache_path, show, prefix: str = "") -> dict:
    """Audit one row (in ``worker`` when given and the row calls its library in this process), store its
    record when asked, note the stages run in ``ran`` and return its result line."""
    from ..library import cache as lc
    from ..library.contain import TIMED_OUT
    from ..library.findings import cause_of, finding_ids
    from ..library.runner import audit_entry
    from ..library.stages import leak_words
    from ..library.table import summary_verdict

    if e.not_auditable:
        return {"key": e.key, "verdict": "not auditable", "reason": e.not_auditable, "findings": []}
    if show:
        console.print(f"[bold]{escape(e.key)}[/] ({i}/{n}): {escape(e.guarantee.describe())}, "
                      f"{e.budget.trials} trial(s) of {samples or e.budget.samples:,} samples", highlight=False)
    lead = f"  {escape(prefix)}"
    log = (lambda text: console.print(f"{lead}{escape(text)}", highlight=False)) if show else None
    trial_log = ((lambda rec: console.print(f"{lead}trial {rec.index + 1}: {escape(rec.outcome.status)}",
                                            highlight=False)) if show else None)
    options = dict(stages=chosen_stages, confirm=confirm, processes=n_proc, samples=samples, beta=beta,
                   leak_samples=leak_samples, on_trial_end=trial_log, log=log, search_budget=search_budget)
    if worker is not None and e.env is None:  # environment rows already call their library in a worker
        rec = worker.audit(e, time_limit=time_limit, **options)
    else:
        rec = audit_entry(e, **options)
    first = rec.get("first") or {}
    if rec.get("verdict") in (TIMED_OUT, "error") and (rec.get("timed_out") or rec.get("crashed")) and log:
        log(f"{first.get('message')}: the row's worker process was killed; the next row goes on")
    if write_cache:
        rec = lc.save_record(cache_path, rec)
    ran[e.key] = {"audit"} | ({"adversarial", "search"} if {"adversarial", "search"} & set(chosen_stages) else set())
    findings = finding_ids(e.key, rec)
    verdict = first["message"] if rec.get("timed_out") else summary_verdict(rec)
    return {"key": e.key, "verdict": TIMED_OUT if rec.get("timed_out") else verdict,
            "verdict_text": verdict, "exit_code": first.get("exit_code"),
            "epsilon_lower_bound": first.get("epsilon_lower_bound"),
            "leak_size": leak_words(rec.get("leak_size")) if rec.get("leak_size") else None,
            "findings": [{"id": f, "cause": (c.id if (c := cause_of(f)) else None)} for f in findings],
            "seconds": first.get("seconds"), "record": rec}


def _audit_rows(entries, worker, results, ran, *options) -> None:
    """Audit each row one after the other (:func:`_audit_one`) and append its result to ``results``."""
    for i, e in enumerate(entries, 1):
        results.append(_audit_one(e, i, len(entries), worker, ran, *options))


def _audit_rows_side_by_side(entries, jobs, accountants, results, ran, *options) -> None:
    """Audit the rows ``jobs`` at a time, each thread with a worker process of its own
    (:class:`~dpaudit.library.contain.RowWorker`), and append the results to ``results`` in the
    rows' order.

    The rows start longest first, by the seconds their cached records took
    (:func:`dpaudit.library.table.recorded_seconds`; a row without a record first of all), the
    longest-processing-time rule, so that the last rows to finish are short ones. A row with an
    environment of its own runs its testers in this process (its library in the environment's
    worker), so at most one such row runs at a time; the in-process rows run wholly in their
    threads' worker processes. Each row gets the same seeds and calls as one at a time, so its
    record is the same (up to times); Opacus's accountants check runs as one more job.
    """
    import threading

    from ..library import cache as lc
    from ..library.contain import RowWorker
    from ..library.table import recorded_seconds

    write_cache, cache_path, show = options[-3], options[-2], options[-1]
    try:
        cached = lc.load(cache_path)
    except ValueError:
        cached = {}
    order = {e.key: i for i, e in enumerate(entries)}
    jobs_left = [e for e in entries]
    if accountants:
        from ..library.accountants import OPACUS_ACCOUNTANTS_KEY

        jobs_left.append(OPACUS_ACCOUNTANTS_KEY)
        order[OPACUS_ACCOUNTANTS_KEY] = len(entries)

    def cost(job) -> float:
        key = job if isinstance(job, str) else job.key
        if not isinstance(job, str) and job.not_auditable:
            return -1.0
        rec = cached.get(key)
        return recorded_seconds(rec) if rec else float("inf")

    jobs_left.sort(key=lambda j: -cost(j))
    done: dict = {}
    state = {"env_busy": False, "error": None}
    cond = threading.Condition()
    counter = iter(range(1, len(jobs_left) + 1))

    def take():
        with cond:
            while True:
                if state["error"] is not None or not jobs_left:
                    return None
                for j, job in enumerate(jobs_left):
                    env = not isinstance(job, str) and job.env is not None and not job.not_auditable
                    if not (env and state["env_busy"]):
                        jobs_left.pop(j)
                        if env:
                            state["env_busy"] = True
                        return job, env, next(counter)
                cond.wait()

    def loop():
        worker = RowWorker()
        try:
            while (got := take()) is not None:
                job, env, i = got
                try:
                    if isinstance(job, str):
                        res = _accountants_result(write_cache, cache_path)
                    else:
                        res = _audit_one(job, i, len(order), worker, ran, *options, prefix=f"{job.key}: ")
                    with cond:
                        done[res["key"]] = res
                except BaseException as exc:  # noqa: BLE001 - stop the other threads, re-raised below
                    with cond:
                        state["error"] = state["error"] or exc
                    raise
                finally:
                    with cond:
                        if env:
                            state["env_busy"] = False
                        cond.notify_all()
        finally:
            worker.close()

    threads = [threading.Thread(target=loop, name=f"dpaudit-row-{k}", daemon=True) for k in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if state["error"] is not None:
        raise state["error"]
    results.extend(done[k] for k in sorted(done, key=order.get))


def _reruns(entries, k, samples, processes, write_cache, cache_path, json_out, quiet, time_limit=None,
            in_process=False) -> None:
    from ..library import cache as lc
    from ..library.contain import TIMED_OUT, RowWorker
    from ..library.runner import rerun_entry

    path = cache_path.with_name("library_reruns.json")
    out_rows = []
    worker = None if in_process else RowWorker()
    try:
        for e in entries:
            if e.not_auditable:
                continue
            if worker is not None and e.env is None:  # all K audits under K stage limits
                rec = worker.rerun(e, k, time_limit=time_limit, samples=samples, processes=processes)
            else:
                rec = rerun_entry(e, k, samples=samples, processes=processes)
            out_rows.append(rec)
            if "message" in rec:  # timed out or crashed: no counts to keep
                if not (quiet or json_out):
                    console.print(f"{escape(e.key)}: {escape(rec['message'])}", highlight=False)
                continue
            if write_cache:
                lc.save_record(path, rec)
            if not (quiet or json_out):
                console.print(f"{escape(e.key)}: {rec['accusations']}/{rec['k']} accused, {rec['errors']} errors: "
                              f"{rec['verdict']} ({rec['seconds']:.0f} s)", highlight=False)
    finally:
        if worker is not None:
            worker.close()
    beyond = any(r["verdict"] == "beyond beta" for r in out_rows)
    stopped = any(r["verdict"] in (TIMED_OUT, "error") for r in out_rows)
    if json_out:
        emit(json.dumps({"reruns": out_rows}, indent=2))
    raise typer.Exit(EXIT_VIOLATION if beyond else EXIT_INCONCLUSIVE if stopped else EXIT_OK)


@library_app.command("table", epilog=LIBRARY_EXIT_HELP)
def table_cmd(
    cache: Optional[Path] = typer.Option(None, "--cache", help="The cache file (default: the repository's)."),
    doc: Optional[Path] = typer.Option(None, "--doc", help="The Markdown file to write (default: the repository's "
                                       "docs/library_audits.md)."),
    check: bool = typer.Option(False, "--check", help="Write nothing; exit 1 when the file differs from what the "
                               "cache gives (a CI check that the table was regenerated)."),
) -> None:
    """Write the table (docs/library_audits.md) from the cached records.

    Examples:

      dpaudit library table
      dpaudit library table --check
    """
    from ..library import cache as lc
    from ..library.registry import REGISTRY
    from ..library.table import render

    try:
        records = lc.load(cache or lc.default_cache())
        reruns = lc.load((cache or lc.default_cache()).with_name("library_reruns.json"))
    except ValueError as exc:
        raise fail(str(exc))
    text = render(REGISTRY, records, reruns)
    path = doc or lc.default_doc()
    if check:
        same = path.exists() and path.read_text() == text
        console.print(f"{escape(str(path))}: " + ("up to date" if same else "differs from the cache's table; run "
                                                   "`dpaudit library table`"), highlight=False)
        raise typer.Exit(EXIT_OK if same else EXIT_VIOLATION)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    console.print(f"wrote {escape(str(path))} ({len(REGISTRY)} rows)", highlight=False)


@library_app.command("reproducers", epilog=LIBRARY_EXIT_HELP)
def reproducers_cmd(
    library: Optional[str] = typer.Argument(None, metavar="[LIBRARY]", help="Only this library's scripts."),
    check: bool = typer.Option(False, "--check", help="Exit 1 unless every script states a pinned `pip install` "
                               "line in its docstring (cheap: nothing is installed or run)."),
    run_fresh: bool = typer.Option(False, "--run-fresh", help="Create a fresh virtual environment per install line "
                                   "(without dpaudit), install the line, run each script there; report times."),
    venvs: Optional[Path] = typer.Option(None, "--venvs", help="Where --run-fresh creates its environments (default: "
                                         "a temporary directory, removed after)."),
    runs: Optional[int] = typer.Option(None, "--runs", metavar="N", help="Runs per dataset passed to each script "
                                       "(default: the script's own)."),
    directory: Optional[Path] = typer.Option(None, "--dir", help="The reproducers directory (default: the "
                                             "repository's reproducers/)."),
    json_out: bool = option("json", False),
) -> None:
    """List the standalone reproducers with their install lines; check or run them.

    Examples:

      dpaudit library reproducers --check
      dpaudit library reproducers diffprivlib --run-fresh --runs 2000
    """
    from ..library import reproducers as lr

    try:
        scripts = lr.scripts(directory, library)
    except ValueError as exc:
        raise fail(str(exc))
    problems = lr.check(scripts)
    if run_fresh:
        results = lr.run_fresh(scripts, venvs=venvs, runs=runs, log=None if json_out else
                               (lambda text: console.print(escape(text), highlight=False)))
        if json_out:
            emit(json.dumps({"runs": [r.to_dict() for r in results], "problems": problems}, indent=2))
        else:
            table = Table(title="reproducers run in fresh environments (no dpaudit)", header_style="bold")
            for col in ("script", "install (s)", "run (s)", "verdict"):
                table.add_column(col, no_wrap=col != "script")
            for r in results:
                table.add_row(r.script, f"{r.install_seconds:.0f}", f"{r.run_seconds:.1f}", r.verdict)
            print_table(out(), table)
        bad = problems or any(not r.reproduced for r in results)
        raise typer.Exit(EXIT_VIOLATION if bad else EXIT_OK)
    if json_out:
        emit(json.dumps({"scripts": [s.to_dict() for s in scripts], "problems": problems}, indent=2))
    elif not check:
        table = Table(title=f"{len(scripts)} reproducers", header_style="bold")
        for col in ("script", "install line"):
            table.add_column(col)
        for s in scripts:
            table.add_row(s.name, s.install or "[red]none[/]")
        print_table(out(), table)
    for p in problems:
        console.print(f"[red]{escape(p)}[/]", highlight=False)
    if check and not json_out:
        console.print(f"{len(scripts)} reproducers: " + ("every one states a pinned install line" if not problems
                                                          else f"{len(problems)} problem(s)"), highlight=False)
    raise typer.Exit(EXIT_VIOLATION if (check and problems) else EXIT_OK)


tidy_help(library_app)


def register(app: typer.Typer) -> None:
    """Add ``dpaudit library`` (its subcommands) to ``app``."""
    app.add_typer(library_app, name="library", help=HELP)


__all__ = ["EXIT_BAD_INPUT", "library_app", "register"]

"""Audit the rows of libraries that run in their own environments (``dpaudit.library.envs.rows``).

Each row is audited as ``dpaudit test dpaudit.library.envs.catalogue:<row> --epsilon E [--delta D]
[--alpha A] --tester all --samples N --trials T --seed S --adversarial --json`` in its own process,
its mechanism drawn by a worker in the library's environment (built on first use under
``~/.cache/dpaudit/envs``, from the lock recorded in ``src/dpaudit/library/envs/locks``). A
violation counts only when a second run (seed + 1, twice the samples) finds the same kind. Results
are cached in ``benchmarks/results/library_envs_audits.json`` and the table is written to
``docs/library_envs.md``::

    PYTHONPATH=src python benchmarks/library_envs_audit.py --build            # build every env, record locks
    PYTHONPATH=src python benchmarks/library_envs_audit.py                    # audit rows not cached
    PYTHONPATH=src python benchmarks/library_envs_audit.py --entries smartnoise-sql.count --force
    PYTHONPATH=src python benchmarks/library_envs_audit.py --stages accountants   # TF Privacy / jax_privacy
    PYTHONPATH=src python benchmarks/library_envs_audit.py --write-only       # the page from the cache
    PYTHONPATH=src python benchmarks/library_envs_audit.py --export           # records into dpaudit library's cache

These rows are meant to join ``benchmarks/library_audit.py``'s registry (its ``Entry`` list, or the
``dpaudit library`` package that replaces it): every field is in :class:`dpaudit.library.envs.rows.EnvRow`.
Until then this script is their runner; it reuses that script's :func:`classify` and
:func:`opacus_true_delta_lower` (the certified lower bound on DP-SGD's true delta).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from dpaudit.library.accountants import opacus_true_delta_lower  # noqa: E402
from dpaudit.library.runner import classify  # noqa: E402

from dpaudit.library.envs import ENVS, get_env  # noqa: E402
from dpaudit.library.envs.rows import ROWS  # noqa: E402

CACHE = ROOT / "benchmarks" / "results" / "library_envs_audits.json"
DOC = ROOT / "docs" / "library_envs.md"

ACCOUNTANT_GRID = [(sigma, q, steps) for sigma in (0.6, 1.0, 2.0) for q in (0.01, 0.1, 1.0) for steps in (1, 10)]
"""(noise multiplier, sampling rate, steps) checked for each library accountant, delta 1e-5."""
ACCOUNTANT_DELTA = 1e-5

ACCOUNTANTS = {
    "jax_privacy PLD": ("jax-privacy", "jax_privacy_targets:accountant_epsilon", {"accountant": "pld"}),
    "jax_privacy RDP": ("jax-privacy", "jax_privacy_targets:accountant_epsilon", {"accountant": "rdp"}),
    "TF Privacy compute_dp_sgd_privacy_statement (RDP)": (
        "tensorflow-privacy", "tensorflow_privacy_targets:accountant_epsilon", {"accountant": "rdp"}),
    "TF Privacy compute_dp_sgd_privacy_statement (PLD)": (
        "tensorflow-privacy", "tensorflow_privacy_targets:accountant_epsilon", {"accountant": "pld"}),
}
"""Library accountants: name -> (env, worker-side function(noise_multiplier, sample_rate, steps, delta), kwargs)."""


RECORD_TEXT = (
    "Re:cord-play (Cebere et al., PoPETs 2026, arXiv 2602.17454; artifact ObliviousAI/dp-recorder) lists 12 "
    "libraries. Its artifact names, among the libraries of this page, SmartNoise: "
    "`tests/test_sensitivity_miscalibration.py` maps its reduced example (the sum computed on the raw data while "
    "the sensitivity assumes the clipped data) to 'the SmartNoise, dpmm, and first Diffprivlib issues', "
    "`tests/test_nan_injection.py` (NaN passing `np.clip`) to 'the SmartNoise Synth, dpmm, Synthcity, Opacus, and "
    "Diffprivlib issues', and its appendix cites opendp/smartnoise-sdk#621 and #622 as patched. Its appendix also "
    "names JAX-privacy and 'Spark-based systems' among the 12 without an issue or a reduced example for them.\n\n"
    "* R1, opendp/smartnoise-sdk#622 (SmartNoise Synth `DPcovariance.release`: the issue quotes `true_val = "
    "covar(data.values.T, ...)`, the raw data, after censoring into `new_data`): the released wheels "
    "smartnoise-synth 1.0.6 and 1.0.8 (read here) both compute `covar(new_data.values.T, ...)`, the censored data; "
    "the code the issue quotes is not in a release. The row `smartnoise-synth.dp_covariance` audits the released "
    "1.0.8 (one record replaced among n = 5, bounds [0, 1]^2).\n"
    "* R2, opendp/smartnoise-sdk#621 (the advanced-composition term of the odometer without its log): in "
    "smartnoise-sql 1.0.10 (read here) both `Odometer` and `OdometerHeterogeneous` compute "
    "`sqrt(2 k log(1/tol))`-type terms with the log; the heterogeneous one, which `PrivateReader` uses, is checked "
    "against the exact composition below. The homogeneous `Odometer` (unused by PrivateReader in 1.0.10) computes "
    "Kairouz et al.'s first bound with `log(epsilon + sqrt(k) epsilon / tol)` where Theorem 3.4 has `log(e + ...)`, "
    "and its delta as `d (1 - d) + tol` with `d = 1 - (1 - delta)^k` where the theorem has `1 - (1 - delta)^k "
    "(1 - tol)`; both understate only slightly at the deltas users pass (the second by d^2 - d tol, about 1e-8 "
    "at delta 1e-5, k = 10): noted, not audited.\n"
    "* NaN (the artifact's `test_nan_injection.py`, mapped to SmartNoise Synth among others): every row here runs "
    "dpaudit's adversarial screen (`--adversarial`: NaN, infinities, -0.0, subnormals, the largest doubles, "
    "out-of-bounds and integer records; column 'adversarial inputs'). SmartNoise Synth's `MinMaxTransformer` and "
    "snsql's `approx_bounds` drop NaN and infinite values before the histogram (snsynth/transform/minmax.py, "
    "snsql/sql/_mechanisms/approx_bounds.py).\n"
    "* jax_privacy, Spark-based systems: the record's items for them are not public (no issue, no reduced example "
    "in the artifact); the jax_privacy rows and accountant check and the Tumult Analytics (Spark) rows here are "
    "audits of the installed versions, not rebuilt record items.")


def load_cache() -> dict:
    return json.loads(CACHE.read_text()) if CACHE.exists() else {}


_MINE: dict = {}


def save(cache: dict) -> None:
    """Write the cache, merged into what the file holds now: every entry this process wrote wins,
    the file's other entries stay (two runners may work on different rows at once)."""
    for section in ("rows", "accountants"):
        _MINE.setdefault(section, {}).update(cache.get(section, {}) if section in cache else {})
    for key in ("odometer", "overhead"):
        if key in cache:
            _MINE[key] = cache[key]
    merged = load_cache()
    for section in ("rows", "accountants"):
        merged.setdefault(section, {}).update(_MINE.get(section, {}))
    for key in ("odometer", "overhead"):
        if key in _MINE:
            merged[key] = _MINE[key]
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    tmp = CACHE.with_suffix(".tmp")
    tmp.write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n")
    tmp.replace(CACHE)


def env_record(name: str) -> dict:
    """The environment's versions as built: python and the declared distributions."""
    env = get_env(name)
    return {"env": name, "versions": env.versions(), "requirements": list(env.requirements), "note": env.note}


def run_audit(row, *, seed: int | None = None, samples: int | None = None, adversarial: bool = True,
              timeout: float = 5400) -> dict:
    """One ``dpaudit test`` of ``row`` in a fresh process; a summary dict (outcome, epsilon lower
    bound, witness, seconds, the adversarial stage's leaks)."""
    cmd = row.command(samples=samples, seed=seed)
    argv = [sys.executable, "-m", "dpaudit", *cmd[1:], "--json", "--quiet", "--processes", "1"]
    if adversarial:
        argv.append("--adversarial")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p))
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout, check=False)
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired:
        code, out, err = None, "", f"killed after {timeout} s"
    seconds = time.perf_counter() - t0
    try:
        result = json.loads(out) if out.strip() else None
    except json.JSONDecodeError:
        result = None
    rec = {"outcome": classify(code, result), "exit_code": code, "seed": int(cmd[cmd.index("--seed") + 1]),
           "samples": int(cmd[cmd.index("--samples") + 1]), "seconds": round(seconds, 1),
           "command": " ".join(cmd) + (" --adversarial" if adversarial else "")}
    if rec["outcome"] == "error":
        rec["message"] = "\n".join((err.strip().splitlines() or ["no output"])[-6:])[-1500:]
        return rec
    ev = result.get("evidence") or {}
    pair = ev.get("pair") or {}
    rec.update({"epsilon_lower_bound": ev.get("epsilon_lower_bound"), "tester": ev.get("tester"),
                "witness": {"d0": pair.get("d0"), "d1": pair.get("d1"), "direction": ev.get("direction")} if pair else None,
                "trials_run": result.get("trials_run"), "note": ev.get("note")})
    adv = result.get("adversarial")
    if adv:
        rec["adversarial"] = {"tried": len(adv.get("results", [])),
                              "leaks": [r["kind"] for r in adv.get("results", []) if r.get("status") == "leak"],
                              "rejected": [r["kind"] for r in adv.get("results", []) if r.get("status") == "rejected"],
                              "details": {r["kind"]: r.get("detail", "")[:300] for r in adv.get("results", [])
                                          if r.get("status") == "leak"}}
    return rec


def audit_row(row, *, timeout: float = 5400) -> dict:
    """Audit ``row`` (and confirm a violation with seed + 1 and twice the samples)."""
    record = {"key": row.key, "ran_at": time.strftime("%Y-%m-%d %H:%M"), "claim": row.claim_text(),
              "env": env_record(row.env), "load": os.getloadavg()[0]}
    first = run_audit(row, adversarial=row.key != "tmlt-analytics.session_count", timeout=timeout)
    record["first"], record["verdict"] = first, first["outcome"]
    if first["outcome"] in ("violation", "floating-point leak"):
        confirm = run_audit(row, seed=row.seed + 1, samples=2 * row.samples, adversarial=False, timeout=timeout)
        record["confirm"] = confirm
        if confirm["outcome"] != first["outcome"]:
            record["verdict"] = "unconfirmed"
    return record


ODOMETER_GRID = [(eps, k) for eps in (0.1, 0.5, 1.0) for k in (1, 2, 10, 100)]
"""(epsilon per mechanism, number of mechanisms k) for SmartNoise SQL's odometer, privacy delta 1e-5."""


def composition_delta(eps0: float, k: int, eps: float) -> float:
    """The exact delta at ``eps`` of the k-fold composition of eps0-DP mechanisms (Kairouz, Oh,
    Viswanath 2015, Theorem 3.3: the k-fold randomised response is the worst case):
    ``sum_l C(k, l) max(0, e^{(k-l) eps0} - e^{eps + l eps0}) / (1 + e^{eps0})^k``, in logs."""
    total = 0.0
    for l in range(k + 1):
        a, b = (k - l) * eps0, eps + l * eps0
        if a <= b:
            continue
        log_term = (math.lgamma(k + 1) - math.lgamma(l + 1) - math.lgamma(k - l + 1) + a
                    + math.log1p(-math.exp(b - a)) - k * math.log1p(math.exp(eps0)))
        total += math.exp(log_term)
    return total


def odometer_check() -> dict:
    """SmartNoise SQL's OdometerHeterogeneous (what PrivateReader.get_privacy_cost reports) for k
    pure eps0-DP mechanisms, against the exact composition delta at the epsilon it reports: **under**
    when the exact delta exceeds the delta it reports (Re:cord-play's R2, opendp/smartnoise-sdk#621,
    is about this accountant)."""
    env = get_env("smartnoise-sql")
    rows = []
    t0 = time.perf_counter()
    for eps0, k in ODOMETER_GRID:
        eps, delta = env.call("smartnoise_sql:odometer_spent", epsilon=eps0, k=k, delta=ACCOUNTANT_DELTA)
        exact = composition_delta(eps0, k, eps)
        rows.append({"eps0": eps0, "k": k, "epsilon": eps, "delta": delta, "exact_delta": exact,
                     "basic": eps0 * k, "under": bool(exact > delta * (1 + 1e-9))})
    return {"name": "SmartNoise SQL OdometerHeterogeneous", "env": env_record("smartnoise-sql"), "grid": rows,
            "seconds": round(time.perf_counter() - t0, 1), "ran_at": time.strftime("%Y-%m-%d %H:%M")}


def accountant_check(name: str) -> dict:
    """A library accountant's epsilon on :data:`ACCOUNTANT_GRID` against a certified lower bound
    on the true delta at that epsilon (``opacus_true_delta_lower``: exact at q = 1, dp_accounting's
    optimistic PLD otherwise); ``under`` when the true delta exceeds the claimed delta."""
    env_name, target, kw = ACCOUNTANTS[name]
    env = get_env(env_name)
    rows = []
    t0 = time.perf_counter()
    for sigma, q, steps in ACCOUNTANT_GRID:
        try:
            eps = float(env.call(target, noise_multiplier=sigma, sample_rate=q, steps=steps, delta=ACCOUNTANT_DELTA,
                                 timeout=600, **kw))
        except Exception as exc:  # noqa: BLE001 - recorded, the grid goes on
            rows.append({"sigma": sigma, "q": q, "steps": steps, "error": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        true_delta = opacus_true_delta_lower(sigma, q, steps)(eps) if math.isfinite(eps) else 0.0
        rows.append({"sigma": sigma, "q": q, "steps": steps, "epsilon": eps, "true_delta_lower": true_delta,
                     "under": bool(true_delta > ACCOUNTANT_DELTA)})
    return {"name": name, "env": env_record(env_name), "delta": ACCOUNTANT_DELTA, "grid": rows,
            "seconds": round(time.perf_counter() - t0, 1), "ran_at": time.strftime("%Y-%m-%d %H:%M")}


# ---------------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------------
def _eps(v) -> str:
    return "-" if v is None else f"{v:.3g}"


def _versions(rec: dict) -> str:
    v = rec["env"]["versions"]
    return ", ".join(f"{k} {val}" for k, val in v.items() if val)


def _verdict(rec: dict) -> str:
    verdict = rec["verdict"]
    if verdict == "error":
        return f"error: {rec['first'].get('message', '').splitlines()[-1][:200]}"
    leaks = (rec["first"].get("adversarial") or {}).get("leaks") or []
    if verdict == "pass" and leaks:
        return "pass on ordinary inputs; **leak** on an adversarial input"
    return verdict if verdict == "pass" else f"**{verdict}**"


def _adv(rec: dict) -> str:
    a = rec["first"].get("adversarial")
    if not a:
        return "not run"
    parts = [f"{a['tried']} tried"]
    if a["rejected"]:
        parts.append("rejected: " + ", ".join(a["rejected"]))
    parts.append(("**leak**: " + ", ".join(a["leaks"])) if a["leaks"] else "no leak")
    return "; ".join(parts)


def count_section() -> list[str]:
    """The count of every library audited, in dpaudit's process and in environments: rows, verdicts
    and findings by cause, from ``dpaudit library``'s registry and cache (``docs/library_audits.md``)."""
    from dpaudit.library import cache as lc
    from dpaudit.library import findings, registry
    from dpaudit.library.table import fresh_records, summary_verdict

    fresh = fresh_records(registry.REGISTRY, lc.load(lc.default_cache()))
    libs = list(dict.fromkeys(e.library for e in registry.REGISTRY))
    env_libs = [lib for lib in libs if registry.LIBRARIES[lib].env]
    kinds = ("pass", "pass, leak on adversarial input", "violation", "floating-point leak", "unconfirmed",
             "inconclusive", "error", "not auditable", "not run")
    total = {k: 0 for k in kinds}
    lines = ["## The count", "",
             f"`dpaudit library` audits {len(libs)} libraries, {len(registry.REGISTRY)} rows: {len(libs) - len(env_libs)} "
             f"in dpaudit's own environment ({', '.join(lib for lib in libs if lib not in env_libs)}) and "
             f"{len(env_libs)} each in an environment of its own ({', '.join(env_libs)}). Verdicts from the "
             "cached records (`benchmarks/results/library_audits.json`; a record of another budget or version "
             "counts as not run). Findings are named as `dpaudit library audit` names them (ROW for the audit's own, "
             "ROW@INPUT for a leak on an adversarial input, ROW@search:FAMILY for the input-space search's) and grouped "
             "by cause, one cause per issue a maintainer would file; one library's rows are rerun with the command in "
             "the last column.", "",
             "| library | environment | rows | " + " | ".join(kinds) + " | findings | their causes | command |",
             "|---|---|---:|" + "---:|" * len(kinds) + "---:|---:|---|"]
    n_findings, all_causes = 0, set()
    for lib in libs:
        entries = [e for e in registry.REGISTRY if e.library == lib]
        verdicts = [summary_verdict(fresh.get(e.key)) for e in entries]
        counts = {k: verdicts.count(k) for k in kinds}
        for k in kinds:
            total[k] += counts[k]
        ids = [f for e in entries for f in findings.finding_ids(e.key, fresh.get(e.key))]
        causes = {c.id for f in ids if (c := findings.cause_of(f))}
        n_findings += len(ids)
        all_causes |= causes
        env = registry.LIBRARIES[lib].env or "dpaudit's"
        lines.append(f"| {lib} | {env} | {len(entries)} | " + " | ".join(str(counts[k]) for k in kinds)
                     + f" | {len(ids)} | {len(causes)} | `dpaudit library audit {registry.LIBRARIES[lib].distribution}` |")
    lines.append(f"| all | | {len(registry.REGISTRY)} | " + " | ".join(str(total[k]) for k in kinds)
                 + f" | {n_findings} | {len(all_causes)} | `dpaudit library audit all` |")
    lines += ["", "The rows of the environments, each verdict with the `dpaudit test` command of its audit (this "
              "page's runner adds `--adversarial`; `dpaudit library audit LIB ROW --stages audit,adversarial "
              "--confirm` runs the same audit, screen and confirmation, and is how the TensorFlow Privacy and "
              "DPcovariance records were last written, with `--write-cache`):", ""]
    for e in registry.REGISTRY:
        if e.env:
            lines.append(f"* `{e.key}` ({e.env}): {summary_verdict(fresh.get(e.key))}: `{' '.join(e.command())}`")
    return lines


def render(cache: dict) -> str:
    libs = []
    for r in ROWS:
        if r.library not in libs:
            libs.append(r.library)
    lines = [
        "# Audits of DP libraries in their own environments",
        "",
        "Generated by `PYTHONPATH=src python benchmarks/library_envs_audit.py` (one row: `--entries KEY --force`; "
        "the page alone: `--write-only`); do not edit by hand. These libraries cannot be installed next to dpaudit's "
        "own dependencies (each pins an older OpenDP, Opacus, NumPy or pandas, or brings TensorFlow), so each runs in "
        "its own virtual environment (`dpaudit.library.envs`: built on demand under `~/.cache/dpaudit/envs/NAME` "
        "from the pins recorded in `src/dpaudit/library/envs/locks/NAME.txt`), driven by a NumPy-only worker over a "
        "pipe; in dpaudit's process each row is an ordinary `Mechanism`, audited by "
        "`dpaudit test dpaudit.library.envs.catalogue:<row> ... --adversarial` exactly as the rows of "
        "`docs/library_audits.md` (same testers, beta = 0.01 per audit, a violation confirmed by a second run with "
        "the next seed and twice the samples). Verdicts as there: **pass** (no violation at that budget: not a "
        "proof), **violation**, **floating-point leak**, **unconfirmed**, **error**.",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, shared with other jobs (load average in each "
        "record); times are the wall time of the audit's process, the worker's start and the library's imports "
        "included.",
        "",
        "How a row runs. `dpaudit.library.envs.get_env(NAME)` is the environment; `.mechanism('module:factory', "
        "**json_kwargs)` a `Mechanism` whose `sample(dataset, n, rng)` sends one request to a worker process in the "
        "environment (`_worker.py`, standard library and NumPy only: the environment does not have dpaudit) and "
        "gets the n outputs back in one answer. The request is a JSON header (the target, n, four integers drawn "
        "from `rng` that seed the worker's generator) followed by the dataset's raw bytes (dtype and shape in the "
        "header); the answer the same with the outputs as raw float64 bytes, so NaN, infinities, -0.0 and "
        "subnormals cross bit for bit and nothing is ever unpickled. The worker-side target "
        "(`src/dpaudit/library/targets/<library>.py`) calls the library as its documentation shows; what it "
        "adds (a seeded generator, a memoised deterministic search) is stated with the row. The worker writes its "
        "protocol to a private copy of stdout and points file descriptor 1 at stderr, so a library's prints cannot "
        "corrupt it. Errors name their cause: `EnvCreationError` (with pip's output tail), `WorkerCrashedError` "
        "(exit code and the worker's stderr tail), `WorkerTimeoutError`, `LibraryCallError` (the library's "
        "exception type, message and traceback; a `MechanismError`, so the adversarial screen counts it as a "
        "rejected input). A library's own accountant or claim is read with `get_env(NAME).call('module:function', "
        "**kwargs)`.",
        "",
        "With `dpaudit library`. Every row here is also an entry of `dpaudit.library.registry` (`Entry.env` set to "
        "its environment; `dpaudit.library.envs.resolve_entry` is the resolver registered for every environment), "
        "so `dpaudit library list`, `dpaudit library audit LIB [ROW ...]` and `dpaudit library table` "
        "(`docs/library_audits.md`) treat them as the in-process rows: `dpaudit library audit smartnoise-sql count` "
        "runs the COUNT row in the `smartnoise-sql` environment. An environment that is not built is built on first "
        "use, with one line per step on stderr (`[dpaudit env NAME] ... not built yet: building ...`, then `ready in "
        "N s`; 142 s for smartnoise-sql from its lock here, at load average 20); with `DPAUDIT_BUILD_ENVS=0` it is "
        "not, and the row's error names the command that builds it: `python -m dpaudit.library.envs build NAME` "
        "(`python -m dpaudit.library.envs list` shows which are built). The records of this runner join that "
        "table's cache with `--export`. Measured here (2026-11-29, 2 cores, load average about 20): "
        "`dpaudit library audit smartnoise-sql --samples 500` ran the 4 rows in 117 s wall (all pass, exit 0); "
        "`dpaudit library audit smartnoise-sql count --samples 500` with `DPAUDIT_ENVS_DIR` empty built the "
        "environment (142 s) and audited the row, 195 s in all; the same row from a dpaudit wheel installed in a "
        "fresh venv, run outside the repository with `DPAUDIT_BUILD_ENVS=0` on that environment, 31 s (the lock "
        "ships with the package, so the wheel's environment is the same build).",
        "",
        *count_section(),
        "",
        "Adding a library: an entry in `dpaudit.library.envs.ENVS` (pinned requirements, the distributions to "
        "report), a worker-side module in `src/dpaudit/library/targets/`, rows in `dpaudit.library.envs.rows`; "
        "`--build NAME` builds the environment and records its `pip freeze` as the lock later builds install. "
        "CI builds none of these environments: `tests/test_library_envs.py` runs the worker protocol with the "
        "current interpreter as the environment (a few seconds) and checks the rows as data.",
        "",
        "| library | entries | pass | pass, leak on adversarial input | violation | floating-point leak | unconfirmed | error | not run |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for lib in libs:
        rows = [r for r in ROWS if r.library == lib]
        recs = [cache.get("rows", {}).get(r.key) for r in rows]
        count = lambda pred: sum(1 for c in recs if c and pred(c))  # noqa: E731
        adv_leak = lambda c: c["verdict"] == "pass" and (c["first"].get("adversarial") or {}).get("leaks")  # noqa: E731
        lines.append(f"| {lib} | {len(rows)} | {count(lambda c: c['verdict'] == 'pass' and not adv_leak(c))} | "
                     f"{count(adv_leak)} | {count(lambda c: c['verdict'] == 'violation')} | "
                     f"{count(lambda c: c['verdict'] == 'floating-point leak')} | "
                     f"{count(lambda c: c['verdict'] == 'unconfirmed')} | {count(lambda c: c['verdict'] == 'error')} | "
                     f"{sum(1 for c in recs if not c)} |")
    for lib in libs:
        rows = [r for r in ROWS if r.library == lib]
        envs = sorted({r.env for r in rows})
        lines += ["", f"## {lib}", ""]
        for e in envs:
            env = ENVS[e]
            built = env.versions() if env.marker() else {}
            lines.append(f"Environment `{e}`: `pip install {' '.join(env.requirements)}` (Python {env.python}); "
                         f"{env.note}." + (f" Built here: {', '.join(f'{k} {v}' for k, v in built.items() if v)}."
                                           if built else " Not built on this machine."))
        lines += ["", "| entry | configuration | documented guarantee | relation | budget | verdict | epsilon lower bound "
                      "| adversarial inputs | environment | time (audited) |",
                  "|---|---|---|---|---|---|---:|---|---|---:|"]
        notes = []
        for r in rows:
            rec = cache.get("rows", {}).get(r.key)
            rel = f"{r.relation_note.split(':')[0]} [{len(notes) + 1}]"
            notes.append(f"{r.key}: {r.relation_note}. Documented: {r.documented}." + (f" Notes: {r.notes}." if r.notes else ""))
            budget = f"{r.samples:,} x {r.trials}, all"
            if not rec:
                lines.append(f"| `{r.name}` | {r.configuration} | {r.claim_text()} | {rel} | {budget} | not run | - | - "
                             f"| - | - |")
                continue
            first = rec["first"]
            lines.append(f"| `{r.name}` | {r.configuration} | {r.claim_text()} | {rel} | {budget} | {_verdict(rec)} | "
                         f"{_eps(first.get('epsilon_lower_bound'))} | {_adv(rec)} | {_versions(rec)} | "
                         f"{first['seconds']:.0f} s ({rec['ran_at'][:10]}, load {rec.get('load', 0):.1f}) |")
        lines += ["", "Notes:", ""] + [f"{i + 1}. {n}" for i, n in enumerate(notes)]
        for r in rows:
            rec = cache.get("rows", {}).get(r.key)
            if rec and rec["verdict"] not in ("pass",):
                first = rec["first"]
                lines += ["", f"### {lib} `{r.name}`: {rec['verdict']}", "",
                          f"* reproduce: `{first['command']}`",
                          f"* witness: {json.dumps(first.get('witness'))}",
                          f"* tester: {first.get('tester')}; {first.get('note') or ''}"]
                if "confirm" in rec:
                    c = rec["confirm"]
                    lines.append(f"* confirmation (seed {c['seed']}, {c['samples']:,} samples): {c['outcome']}, "
                                 f"epsilon >= {_eps(c.get('epsilon_lower_bound'))}, {c['seconds']:.0f} s")
                if rec["verdict"] == "error":
                    lines.append(f"* message: {first.get('message')}")
                for kind, det in ((first.get("adversarial") or {}).get("details") or {}).items():
                    lines.append(f"* adversarial {kind}: {det}")
    acc = cache.get("accountants", {})
    if acc:
        lines += ["", "## Accountants against a certified lower bound", "",
                  "Each library's epsilon for DP-SGD (Poisson-subsampled Gaussian, noise multiplier sigma, sampling "
                  "rate q, `steps` steps, add/remove of one example) at delta 1e-5, checked as Opacus's accountants "
                  "are in `docs/library_audits.md`: the true delta at that epsilon is bounded below (exact at q = 1; "
                  "dp_accounting's optimistic PLD otherwise, FFT round-off charged downwards); **under** when it "
                  "exceeds 1e-5 (the mechanism is not (epsilon, 1e-5)-DP at the epsilon the library reports).", ""]
        for name, rec in acc.items():
            under = [g for g in rec["grid"] if g.get("under")]
            errors = [g for g in rec["grid"] if "error" in g]
            lines.append(f"* {name} ({_versions(rec)}): {len(under)} of {len(rec['grid'])} grid points under"
                         + (f", {len(errors)} errors ({errors[0]['error'][:150]})" if errors else "")
                         + f"; {rec['seconds']:.0f} s.")
        names = list(acc)
        lines += ["", "| sigma | q | steps | " + " | ".join(names) + " |",
                  "|---:|---:|---:|" + "---:|" * len(names)]
        for i, (sigma, q, steps) in enumerate(ACCOUNTANT_GRID):
            cells = []
            for n in names:
                g = acc[n]["grid"][i] if i < len(acc[n]["grid"]) else {}
                if "epsilon" in g:
                    cells.append((f"**{g['epsilon']:.4g}** (under: delta >= {g['true_delta_lower']:.3g})"
                                  if g["under"] else f"{g['epsilon']:.4g}"))
                else:
                    cells.append("error" if g else "-")
            lines.append(f"| {sigma:g} | {q:g} | {steps} | " + " | ".join(cells) + " |")
    lines += ["", "## Against the published record", "", RECORD_TEXT]
    odo = cache.get("odometer")
    if odo:
        under = [g for g in odo["grid"] if g["under"]]
        lines += ["", "## SmartNoise SQL's odometer against the exact composition", "",
                  "`PrivateReader.get_privacy_cost` reports what `OdometerHeterogeneous` (snsql/sql/odometer.py) "
                  "computes for the mechanisms of a query: the minimum of basic composition and the two bounds of "
                  "Kairouz, Oh and Viswanath's Theorem 3.5 (tolerance delta/2). For k pure eps0-DP mechanisms at "
                  "privacy delta 1e-5, the reported (epsilon, delta) is checked against the exact delta of the k-fold "
                  "composition at that epsilon (their Theorem 3.3, computed in logs): **under** when it exceeds "
                  "the reported delta. Re:cord-play's R2 (opendp/smartnoise-sdk#621: the advanced-composition term "
                  "without its log) is about this accountant; in the installed version (" + _versions(odo) + ") the "
                  f"term has its log. {len(under)} of {len(odo['grid'])} grid points under.", "",
                  "| eps0 | k | reported epsilon | reported delta | basic k eps0 | exact delta at the reported epsilon |",
                  "|---:|---:|---:|---:|---:|---:|"]
        for g in odo["grid"]:
            lines.append(f"| {g['eps0']:g} | {g['k']} | {g['epsilon']:.4g} | {g['delta']:.3g} | {g['basic']:.4g} | "
                         f"{'**' if g['under'] else ''}{g['exact_delta']:.3g}{'**' if g['under'] else ''} |")
    path = ROOT / "benchmarks" / "results" / "library_envs_overhead.json"
    if path.exists():
        ov = json.loads(path.read_text())
        lines += ["", "## The pipe's overhead", "",
                  "`PYTHONPATH=src python benchmarks/library_envs_overhead.py` (" + ov["ran_at"] + f", {ov['cores']} "
                  f"cores, load average {ov['load'][0]:.1f}: wall times on a shared, loaded machine, medians of 5 "
                  "runs): `sample(dataset, n, rng)` of diffprivlib 0.6.6's `tools.mean` (epsilon 1, bounds (0, 1), 3 "
                  "records) through dpaudit's in-process adapter and through a worker in the `diffprivlib` "
                  "environment, and a NumPy-only draw through a worker of the current interpreter (the round trip "
                  "alone). One request carries a whole batch, so the pipe itself costs about 0.3 ms per request up "
                  "to 1,000 outputs (4 ms at 10,000); the larger gap at 1 and 10 outputs per request is the worker-side "
                  "target's own per-request cost (its seeded RandomState and non-recording accountant; 1.3 ms for one "
                  "output measured inside the environment without the pipe), and from 100 outputs per request the two "
                  "paths are within the machine's noise (ratios 0.9 to 1.15 at load 11). dpaudit's audits draw in "
                  "chunks of hundreds to thousands of outputs per request.", "",
                  "| outputs per request | in-process | in the env | env / in-process | pipe only (round trip) |",
                  "|---:|---:|---:|---:|---:|"]
        for r in ov["rows"]:
            lines.append(f"| {r['n']:,} | {r['in_process_s'] * 1e3:.2f} ms | {r['env_s'] * 1e3:.2f} ms | "
                         f"{r['ratio']:.2f} | {r['pipe_only_s'] * 1e3:.3f} ms |")
    return "\n".join(lines) + "\n"


def export_records(cache: dict, target: Path | None = None) -> list[str]:
    """Write this runner's row records into ``dpaudit library``'s cache (``benchmarks/results/
    library_audits.json``), fingerprinted against the registry's entries, so ``dpaudit library
    table`` shows them; a record whose budget or claim no longer matches its entry is left out
    (the table shows ``not run`` until ``dpaudit library audit`` runs it), and so is one that ``dpaudit library
    audit --write-cache`` already wrote for the current entry. The adversarial screen's
    result keeps what this runner recorded: the kinds that leaked or were rejected by name, the
    others counted. Returns the keys written."""
    from dpaudit.library import cache as lc
    from dpaudit.library import registry

    path = target or lc.default_cache()
    stored = lc.load(path)
    written = []
    for key, rec in sorted(cache.get("rows", {}).items()):
        try:
            entry = registry.find(key)
        except KeyError:
            continue
        mine = stored.get(key) or {}
        if mine.get("fingerprint") == registry.fingerprint(entry) and str(mine.get("ran_at", "")) > str(rec.get("ran_at", "")):
            continue  # a later record (`dpaudit library audit --write-cache`) for this entry wins
        first = dict(rec.get("first") or {})
        if rec.get("verdict") == "error" or first.get("samples") != entry.budget.samples:
            continue
        out = {"key": key, "fingerprint": registry.fingerprint(entry), "ran_at": rec.get("ran_at"),
               "verdict": rec["verdict"], "env": rec.get("env"), "load": rec.get("load"),
               "source": "benchmarks/library_envs_audit.py (one dpaudit test process per run, --adversarial)"}
        adv = first.pop("adversarial", None)
        out["first"] = first
        if rec.get("confirm"):
            out["confirm"] = {k: v for k, v in rec["confirm"].items() if k != "adversarial"}
        if adv:
            results = ([{"kind": k, "status": "leak", "detail": adv.get("details", {}).get(k, ""), "leak": None,
                         "description": f"{k} in one record"} for k in adv.get("leaks", [])]
                       + [{"kind": k, "status": "rejected", "detail": "the library raised", "leak": None,
                           "description": f"{k} in one record"} for k in adv.get("rejected", [])])
            others = int(adv.get("tried", 0)) - len(results)
            results += [{"kind": f"other input {i + 1}", "status": "pass", "detail": "nothing certified", "leak": None,
                         "description": "one of the screen's other inputs (recorded as a count)"} for i in range(others)]
            from dpaudit.audit.adversarial import ADVERSARIAL_SAMPLES  # what `dpaudit test --adversarial` draws

            out["adversarial"] = {"accepts": "the row's declared inputs (dpaudit test --adversarial)", "results": results,
                                  "samples": ADVERSARIAL_SAMPLES}
        lc.save_record(path, out)
        written.append(key)
    return written


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the rows and exit")
    parser.add_argument("--build", nargs="*", metavar="ENV", help="build these environments (all: none given) and record their locks")
    parser.add_argument("--entries", nargs="*", help="row keys (default: every row not cached)")
    parser.add_argument("--force", action="store_true", help="re-audit cached rows")
    parser.add_argument("--stages", default="audit", help="audit, accountants, or both (comma-separated)")
    parser.add_argument("--write-only", action="store_true", help="rebuild the page from the cache")
    parser.add_argument("--timeout", type=float, default=5400)
    parser.add_argument("--export", action="store_true", help="write the row records into dpaudit library's cache")
    args = parser.parse_args(argv)
    if args.export:
        keys = export_records(load_cache())
        print(f"exported {len(keys)} records: {', '.join(keys)}")
        return
    if args.list:
        for r in ROWS:
            print(f"{r.key:45s} {r.env:20s} {r.claim_text():35s} {r.samples:,} x {r.trials}")
        return
    cache = load_cache()
    if args.build is not None:
        for name in args.build or list(ENVS):
            env = get_env(name)
            t0 = time.perf_counter()
            env.ensure(quiet=False)
            path = env.record_lock()
            print(f"{name}: ready ({time.perf_counter() - t0:.0f} s), lock {path.relative_to(ROOT)}", flush=True)
        return
    if not args.write_only:
        stages = {s.strip() for s in args.stages.split(",")}
        if "audit" in stages:
            rows = ([r for k in args.entries for r in ROWS if r.key == k] if args.entries else list(ROWS))
            for r in rows:
                if r.key in cache.get("rows", {}) and not args.force:
                    continue
                print(f"auditing {r.key} ...", flush=True)
                rec = audit_row(r, timeout=args.timeout)
                cache.setdefault("rows", {})[r.key] = rec
                save({"rows": {r.key: rec}})
                print(f"  {rec['verdict']} (eps >= {_eps(rec['first'].get('epsilon_lower_bound'))}, "
                      f"{rec['first']['seconds']:.0f} s)", flush=True)
        if "odometer" in stages:
            cache["odometer"] = odometer_check()
            save({"odometer": cache["odometer"]})
        if "accountants" in stages:
            for name in ACCOUNTANTS:
                if args.entries and name not in args.entries:
                    continue
                print(f"accountant {name} ...", flush=True)
                cache.setdefault("accountants", {})[name] = accountant_check(name)
                save({"accountants": {name: cache["accountants"][name]}})
    DOC.write_text(render(load_cache()))
    print(f"wrote {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

"""Detection benchmark: paper 000 Table 1 reproduced on dpaudit's zoo, for every tester.

For each zoo mechanism (with a witness pair), tester, claimed epsilon and sample size ``n``
(outputs per dataset), the mechanism is sampled ``n`` times on each dataset of its first witness
pair and the tester is run once; this is repeated ``--runs`` times (paper 000 §6.2: "we fixed a
pair of neighboring datasets where a violation is known to occur. We ran each tester 10 times").
A cell reports detections out of runs and the wall time of the whole cell (sampling included).

Settings as in paper 000 §6 ("Hyperparameters"): failure probability ``beta = 1/3`` per test
(dpaudit spends it over both directions, and over the testers for ``all``); pure-DP mechanisms
are tested against ``PureDP(eps)``, approximate-DP ones against ``ApproxDP(eps, 0.01)`` (the
mechanism is built for that delta). A tester that cannot test the claim (the Rényi tester and an
(eps, delta) claim, which bounds no Rényi divergence) shows ``n/a``; one that cannot handle the
outputs (the histogram tester and continuous vector outputs) shows ``-``.

Private mechanisms are run the same way and form the false-positive table. With beta = 1/3 per
test a correct tester may accuse a private mechanism in up to a third of its runs when the claim is
tight at the tested pair, so a detection there is not by itself a bug; repeated detections are.

Results are cached per cell in ``benchmarks/results/detection.json`` so the table can be
extended as the zoo and the testers grow (``--force`` recomputes); the Markdown table is
rewritten from the cache at the end of every run.

Run everything (several hours on 2 CPU cores)::

    python benchmarks/detection_table.py

or a part, e.g.::

    python benchmarks/detection_table.py --mechanisms non-dp-laplace-1 dp-laplace --testers hockey-stick --sizes 50000
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import zlib
from pathlib import Path

import numpy as np

import dpaudit
from dpaudit.errors import InvalidClaimError
from dpaudit.mechanisms import draw
from dpaudit.mechanisms import zoo
from dpaudit.testers import NotApplicable, make_tester

RESULTS = Path(__file__).parent / "results"

# Paper 000, Table 1: detections out of 10 by DP-Auditorium's testers at n = 50k, 100k, 500k
# (None: not applicable). Keys are dpaudit zoo names. Used for the side-by-side column only.
PAPER_TABLE1 = {
    ("non-dp-laplace-1", 0.01): {"histogram": (0, 0, 0), "hockey-stick": (9, 8, 9), "renyi": (10, 10, 10), "mmd": (10, 9, 10)},
    ("non-dp-laplace-1", 1.0): {"histogram": (0, 0, 0), "hockey-stick": (10, 10, 10), "renyi": (0, 0, 0), "mmd": (0, 0, 0)},
    ("non-dp-laplace-2", 0.01): {"histogram": (10, 10, 10), "hockey-stick": (10, 10, 10), "renyi": (10, 7, 5), "mmd": (0, 1, 0)},
    ("non-dp-laplace-2", 1.0): {"histogram": (0, 0, 0), "hockey-stick": (0, 0, 0), "renyi": (0, 0, 0), "mmd": (0, 0, 0)},
    ("non-dp-gaussian-1", 0.01): {"histogram": (0, 0, 0), "hockey-stick": (0, 0, 0), "renyi": (10, 10, 10), "mmd": (10, 4, 10)},
    ("non-dp-gaussian-1", 1.0): {"histogram": (0, 0, 0), "hockey-stick": (10, 10, 10), "renyi": (0, 0, 0), "mmd": (0, 0, 0)},
    ("non-dp-gaussian-2", 0.01): {"histogram": (0, 0, 0), "hockey-stick": (6, 5, 5), "renyi": (10, 10, 10), "mmd": (0, 0, 0)},
    ("non-dp-gaussian-2", 1.0): {"histogram": (0, 0, 0), "hockey-stick": (0, 0, 0), "renyi": (0, 0, 0), "mmd": (0, 0, 0)},
    ("svt3", 0.01): {"hockey-stick": (0, 0, 0), "renyi": (0, 0, 0), "mmd": (0, 0, 0)},
    ("svt3", 1.0): {"hockey-stick": (0, 0, 0), "renyi": (0, 0, 0), "mmd": (0, 0, 0)},
    ("svt4", 0.01): {"hockey-stick": (0, 0, 0), "renyi": (0, 0, 0), "mmd": (1, 2, 0)},
    ("svt4", 1.0): {"hockey-stick": (10, 10, 10), "renyi": (0, 0, 0), "mmd": (0, 0, 0)},
    ("svt5", 0.01): {"hockey-stick": (0, 0, 0), "renyi": (0, 0, 0), "mmd": (0, 0, 0)},
    ("svt5", 1.0): {"hockey-stick": (10, 10, 10), "renyi": (0, 0, 0), "mmd": (0, 0, 0)},
    ("svt6", 0.01): {"hockey-stick": (0, 0, 0), "renyi": (0, 0, 0), "mmd": (0, 0, 0)},
    ("svt6", 1.0): {"hockey-stick": (10, 10, 10), "renyi": (0, 0, 0), "mmd": (0, 0, 0)},
}
PAPER_SIZES = (50_000, 100_000, 500_000)


def paper_best(mech: str, eps: float) -> str:
    """Paper 000's best result for a row: smallest n with 10/10, else the most detections."""
    row = PAPER_TABLE1.get((mech, eps))
    if row is None:
        return "not in the paper"
    for i, n in enumerate(PAPER_SIZES):
        hits = [t for t, v in row.items() if v[i] == 10]
        if hits:
            return f"{n // 1000}k ({', '.join(hits)})"
    most = max(max(v) for v in row.values())
    return "never detected" if most == 0 else f"never 10/10 (best {most}/10)"
TESTERS = ("histogram", "hockey-stick", "renyi", "mmd", "all")


def cell_key(mech: str, tester: str, eps: float, n: int) -> str:
    return f"{mech}|{tester}|{eps:g}|{n}"


def run_cell(entry, tester_name: str, eps: float, n: int, runs: int, beta: float, delta: float) -> dict:
    """Run one cell; return its record for the cache."""
    claim_delta = delta if entry.claim_kind == "approx" else None
    claim = entry.claim(eps, claim_delta)
    mechanism = entry.mechanism(eps, claim_delta)
    tester = make_tester(tester_name)
    if not tester.supports(claim):
        return {"status": "n/a", "reason": f"{tester_name} cannot test {claim.describe()}"}
    pair = entry.witnesses()[0]
    key = cell_key(entry.name, tester_name, eps, n)
    detections, eps_lbs, statuses = 0, [], []
    t0 = time.perf_counter()
    for r in range(runs):
        ss = np.random.SeedSequence([zlib.crc32(key.encode()), r])
        sample_rng, test_rng = (np.random.default_rng(s) for s in ss.spawn(2))
        x0 = draw(mechanism, pair.d0, n, sample_rng)
        x1 = draw(mechanism, pair.d1, n, sample_rng, output_dim=x0.shape[1])
        try:
            out = tester.test(x0, x1, claim, beta=beta, rng=test_rng)
        except NotApplicable as exc:
            return {"status": "-", "reason": str(exc)}
        detections += int(out.violation)
        statuses.append(out.status)
        if out.epsilon_lower_bound is not None:
            eps_lbs.append(out.epsilon_lower_bound)
    return {
        "status": "ok",
        "detections": detections,
        "runs": runs,
        "inconclusive": statuses.count("inconclusive"),
        "seconds": time.perf_counter() - t0,
        "median_epsilon_lower_bound": float(np.median(eps_lbs)) if eps_lbs else None,
        "claim": claim.describe(),
        "pair": pair.description,
    }


def fmt_cell(rec: dict | None) -> str:
    if rec is None:
        return " "
    if rec["status"] == "skip":
        return "(all at smaller n)"
    if rec["status"] != "ok":
        return rec["status"]
    s = f"{rec['detections']}/{rec['runs']}"
    if rec.get("inconclusive"):
        s += f" ({rec['inconclusive']} inc.)"
    return s + f" · {rec['seconds']:.0f}s"


def violates_at(entry, eps: float) -> bool:
    """Whether the entry is known to violate its claim at this eps (``violates_for`` if given)."""
    if entry.private:
        return False
    rng = getattr(entry, "violates_for", None)
    if rng is None:
        return True
    lo, hi = rng
    return (lo is None or eps >= lo) and (hi is None or eps <= hi)


def render(cache: dict, mechanisms, testers, sizes, epsilons, meta: dict) -> str:
    entries = [zoo.get(m) for m in mechanisms]
    lines = [
        "# Detection benchmark (paper 000, Table 1, on dpaudit's zoo)",
        "",
        "Detections out of runs at each mechanism's first witness pair, one test per run, "
        f"beta = {meta['beta']:.4g} per test (as in paper 000 §6), delta = {meta['delta']:g} for "
        "approximate-DP mechanisms; each cell also gives the wall time of all its runs "
        "(sampling + testing). `n/a`: the tester cannot test that kind of claim; `-`: the tester "
        "cannot handle the outputs; `inc.`: runs whose bound was inconclusive at that n; "
        "`(all at smaller n)`: not run because a smaller n already detected in every run; blank: not run.",
        "",
        f"Regenerate: `{meta['command']}`",
        "",
        f"Machine: {meta['machine']}; dpaudit {dpaudit.__version__}.",
        "",
    ]

    def table(rows, title):
        out = [f"## {title}", ""]
        head = ["mechanism", "eps"] + [f"{t} n={n // 1000}k" for t in testers for n in sizes]
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for e in rows:
            for eps in epsilons:
                tag = "" if e.private or violates_at(e, eps) else " (meets its claim here)"
                cells = [fmt_cell(cache.get(cell_key(e.name, t, eps, n))) for t in testers for n in sizes]
                out.append(f"| {e.name}{tag} | {eps:g} | " + " | ".join(cells) + " |")
        return out + [""]

    buggy = [e for e in entries if not e.private]
    private = [e for e in entries if e.private]
    if buggy:
        lines += table(buggy, "Non-private mechanisms (detections are true positives)")
        lines += ["### Smallest n at which the best tester detects 10/10", ""]
        lines += ["| mechanism | eps | dpaudit: smallest n (tester) | paper 000 Table 1: smallest n (tester) |", "|---|---|---|---|"]
        for e in buggy:
            for eps in epsilons:
                best = None
                for n in sizes:
                    for t in testers:
                        rec = cache.get(cell_key(e.name, t, eps, n))
                        if rec and rec["status"] == "ok" and rec["detections"] == rec["runs"]:
                            best = (n, t)
                            break
                    if best:
                        break
                if not violates_at(e, eps):
                    txt = "meets its claim at this eps"
                elif best:
                    txt = f"{best[0] // 1000}k ({best[1]})"
                else:
                    txt = "not detected 10/10 at the sizes run"
                lines.append(f"| {e.name} | {eps:g} | {txt} | {paper_best(e.name, eps)} |")
        lines.append("")
    if private:
        lines += table(private, "Private mechanisms (detections are false positives)")
        lines += [
            "A false positive has probability at most beta = "
            f"{meta['beta']:.3g} per test, reached only where the claim is exactly tight at the tested "
            "pair (dp-gd and randomized-response are built to be exactly (eps, delta)- or eps-DP there); "
            "a rate clearly above beta would be a tester bug.",
            "",
        ]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mechanisms", nargs="*", default=None, help="zoo names (default: every entry with a witness pair)")
    ap.add_argument("--testers", nargs="*", default=list(TESTERS), choices=TESTERS)
    ap.add_argument("--sizes", nargs="*", type=int, default=[50_000, 100_000, 500_000])
    ap.add_argument("--epsilons", nargs="*", type=float, default=[0.01, 1.0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--beta", type=float, default=1 / 3)
    ap.add_argument("--delta", type=float, default=0.01)
    ap.add_argument("--cache", type=Path, default=RESULTS / "detection.json")
    ap.add_argument("--out", type=Path, default=RESULTS / "detection.md")
    ap.add_argument("--force", action="store_true", help="recompute cells already in the cache")
    ap.add_argument(
        "--no-skip", action="store_true",
        help="run every size even when a smaller one already detected in every run (by default such "
        "larger cells of a non-private mechanism are skipped and shown as '= at smaller n')",
    )
    args = ap.parse_args(argv)

    all_names = [e.name for e in zoo.entries() if e.witness_pairs]
    mechanisms = args.mechanisms or all_names
    for m in mechanisms:
        zoo.get(m)  # fails early with the list of valid names
    cache = json.loads(args.cache.read_text()) if args.cache.exists() else {}
    todo = [
        (m, t, eps, n)
        for m in mechanisms for eps in args.epsilons for n in args.sizes for t in args.testers
        if args.force or cell_key(m, t, eps, n) not in cache
    ]
    print(f"{len(todo)} cells to run", file=sys.stderr)
    for i, (m, t, eps, n) in enumerate(todo, 1):
        entry = zoo.get(m)
        smaller = [cache.get(cell_key(m, t, eps, k)) for k in args.sizes if k < n]
        if not args.no_skip and not entry.private and any(
            r and r.get("status") == "ok" and r["detections"] == r["runs"] for r in smaller
        ):
            cache[cell_key(m, t, eps, n)] = {"status": "skip", "reason": "every run detected at a smaller n"}
            continue
        try:
            rec = run_cell(entry, t, eps, n, args.runs, args.beta, args.delta)
        except InvalidClaimError as exc:
            rec = {"status": "n/a", "reason": str(exc)}
        cache[cell_key(m, t, eps, n)] = rec
        args.cache.parent.mkdir(parents=True, exist_ok=True)
        args.cache.write_text(json.dumps(cache, indent=1, sort_keys=True))
        print(f"[{i}/{len(todo)}] {m:24s} {t:13s} eps={eps:<5g} n={n:<7d} {fmt_cell(rec)}", file=sys.stderr, flush=True)

    # Skipped cells are recorded too (a run whose last cells were all skips wrote none of them).
    args.cache.parent.mkdir(parents=True, exist_ok=True)
    args.cache.write_text(json.dumps(cache, indent=1, sort_keys=True))
    # The table covers everything in the cache (so partial runs add up).
    mech_in_cache = [m for m in all_names if any(k.startswith(m + "|") for k in cache)]
    meta = {
        "beta": args.beta,
        "delta": args.delta,
        # The default cache accumulates partial runs: the full default command regenerates it.
        "command": "python benchmarks/detection_table.py"
        + ("" if args.cache == RESULTS / "detection.json" else " " + " ".join(sys.argv[1:] if argv is None else argv)),
        "machine": f"{platform.processor() or platform.machine()}, {platform.system()}, CPU only",
    }
    sizes = sorted({int(k.split("|")[3]) for k in cache})
    epsilons = sorted({float(k.split("|")[2]) for k in cache})
    testers = [t for t in TESTERS if any(k.split("|")[1] == t for k in cache)]
    args.out.write_text(render(cache, mech_in_cache, testers, sizes, epsilons, meta))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

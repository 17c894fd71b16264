"""The input-space search (:func:`dpaudit.search.input_space.search`) on every row of the library table
and on the zoo's correct mechanisms: what it finds blind, and how often it accuses a correct target.

For each row of ``benchmarks/library_audit.py``'s registry with a target, the search runs with the row's
documented guarantee (epsilon, delta) at beta = 0.01, under the target's declared relation and input
space, and the result is recorded: the families searched, the certified witnesses (family, minimal pair,
evidence, certified leak), pairs and calls spent, wall time. The row's table verdict (from the cache of
``library_audit.py``) is recorded beside it, so pass rows with a certified witness stand out. For the
zoo, every correct entry (``private=True``, pure or approximate DP) is searched at epsilon 1 under its
own relation and domain: a certified witness there is a false accusation, unless the input is outside
the domain the entry is correct on (a NaN record given to a reference mechanism that does not validate
its input), which the record says.

    PYTHONPATH=src nice -n 10 python benchmarks/input_space_search.py                 # every row, then the zoo
    PYTHONPATH=src python benchmarks/input_space_search.py --entries diffprivlib.nanmean --force
    PYTHONPATH=src python benchmarks/input_space_search.py --zoo-only --zoo-seeds 10   # + seeds 1..10 in the domain
    PYTHONPATH=src python benchmarks/input_space_search.py --write-only               # the markdown from the JSON

Results: ``benchmarks/results/input_space_search.json`` (one record per row, kept between runs) and
``benchmarks/results/input_space_search.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "input_space_search.json"
REPORT = ROOT / "benchmarks" / "results" / "input_space_search.md"
BETA = 0.01
BUDGET = 60
SEED = 0


def _registry():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import library_audit  # noqa: PLC0415

    return library_audit


def run_one(mech, epsilon: float, delta: float, *, budget: int, seed: int, accepts=None) -> dict:
    """Search one target and return its plain-JSON record."""
    from dpaudit.audit.input_space import search  # noqa: PLC0415

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = search(mech, accepts=accepts, epsilon=epsilon, delta=delta, beta=BETA, budget=budget, seed=seed)
    cpu = time.process_time()
    return {"families": list(r.families), "max_candidates": r.max_candidates, "pairs": r.pairs_tried,
            "calls": r.calls, "rejected": r.rejected, "rejections": list(r.rejections), "seconds": round(r.seconds, 1),
            "cpu_seconds_total": round(cpu, 1), "hunts": list(r.hunts),
            "witnesses": [{"family": w.candidate.family, "label": w.candidate.label, "input_class": w.input_class,
                           "evidence": w.evidence, "pair": w.describe_pair(), "detail": w.screen.detail,
                           "leak": w.screen.leak.to_dict() if w.screen.leak else None,
                           "delta_lower": (w.screen.leak.delta_lower(epsilon) if w.screen.leak else None)}
                          for w in r.witnesses],
            "certified_candidates": len(r.certified)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", nargs="*", help="row keys (default: every row with a target)")
    ap.add_argument("--libraries", nargs="*", help="only these libraries (diffprivlib, OpenDP, PipelineDP, PyDP, Opacus)")
    ap.add_argument("--force", action="store_true", help="re-run rows already in the results")
    ap.add_argument("--zoo-only", action="store_true")
    ap.add_argument("--no-zoo", action="store_true")
    ap.add_argument("--write-only", action="store_true")
    ap.add_argument("--budget", type=int, default=BUDGET)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--zoo-seeds", type=int, default=0,
                    help="also search each correct zoo entry in its domain with seeds 1..N (false-accusation count)")
    args = ap.parse_args(argv)
    store = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"rows": {}, "zoo": {}}
    if not args.write_only and not args.zoo_only:
        la = _registry()
        cache = json.loads(la.CACHE.read_text()) if la.CACHE.exists() else {}
        from dpaudit.audit.targets import load_target  # noqa: PLC0415

        for e in la.REGISTRY:
            if e.target is None or e.guarantee is None:
                continue
            if args.entries and e.key not in args.entries:
                continue
            if args.libraries and e.library not in args.libraries:
                continue
            if e.key in store["rows"] and not args.force:
                continue
            rec = {"library": e.library, "name": e.name, "target": e.target,
                   "verdict": (cache.get(e.key) or {}).get("verdict"),
                   "epsilon": e.guarantee.epsilon, "delta": e.guarantee.delta}
            t0 = time.perf_counter()
            try:
                mech, _ = load_target(e.target)
                rec.update(run_one(mech, e.guarantee.epsilon, e.guarantee.delta, budget=args.budget, seed=args.seed))
            except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
                rec["error"] = f"{type(exc).__name__}: {exc}"[:300]
            rec["wall"] = round(time.perf_counter() - t0, 1)
            store["rows"][e.key] = rec
            RESULTS.write_text(json.dumps(store, indent=1, default=str))
            found = [f"{w['family']}/{w['evidence']}: {w['pair'][:90]}" for w in rec.get("witnesses", [])]
            print(f"{e.key}: {rec.get('verdict')} -> {len(found)} certified {found} ({rec['wall']} s)"
                  + (f" ERROR {rec['error']}" if "error" in rec else ""), flush=True)
    if not args.write_only and not args.no_zoo:
        from dpaudit.mechanisms.zoo.catalogue import entries  # noqa: PLC0415
        from dpaudit.datasets import make_relation  # noqa: PLC0415

        for z in entries():
            if not z.private or z.claim_kind == "renyi":
                continue
            if z.name in store["zoo"] and not args.force:
                continue
            claim = z.claim(1.0)
            mech = z.mechanism(1.0)
            relation = make_relation(z.relation, z.domain, z.min_size, z.max_size)
            mech.neighbouring = relation
            from dpaudit.datasets import AcceptedInputs  # noqa: PLC0415

            both = {}
            # in the domain the entry is correct on (kinds=(): only values within the bounds), where a certified
            # witness is a false accusation; then with every kind, where records outside the domain are tried
            for mode, accepts in (("in_domain", AcceptedInputs(kinds=())), ("all_kinds", None)):
                t0 = time.perf_counter()
                rec = {"relation": z.relation, "epsilon": 1.0, "delta": float(getattr(claim, "delta", 0.0) or 0.0)}
                try:
                    rec.update(run_one(mech, 1.0, rec["delta"], budget=args.budget, seed=args.seed, accepts=accepts))
                except Exception as exc:  # noqa: BLE001
                    rec["error"] = f"{type(exc).__name__}: {exc}"[:300]
                rec["wall"] = round(time.perf_counter() - t0, 1)
                both[mode] = rec
                found = [f"{w['family']}/{w['evidence']}: {w['pair'][:90]}" for w in rec.get("witnesses", [])]
                print(f"zoo:{z.name} ({mode}) -> {len(found)} certified {found} ({rec['wall']} s)", flush=True)
            store["zoo"][z.name] = both
            RESULTS.write_text(json.dumps(store, indent=1, default=str))
    if args.zoo_seeds and not args.write_only:
        store["zoo_seeds"] = zoo_false_accusations(range(1, args.zoo_seeds + 1), budget=args.budget)
        RESULTS.write_text(json.dumps(store, indent=1, default=str))
        print(f"zoo in its domain, seeds 1..{args.zoo_seeds}: {store['zoo_seeds']}", flush=True)
    REPORT.write_text(render(store))
    return 0


def zoo_false_accusations(seeds, *, budget: int) -> dict:
    """Search every correct pure/approximate-DP zoo entry in its domain (``AcceptedInputs(kinds=())``)
    once per seed; every certified witness is a false accusation. Returns the counts."""
    from dpaudit.datasets import AcceptedInputs, make_relation  # noqa: PLC0415
    from dpaudit.mechanisms.zoo.catalogue import entries  # noqa: PLC0415
    from dpaudit.audit.input_space import search  # noqa: PLC0415

    runs = accused = pairs = 0
    names = []
    t0 = time.process_time()
    for z in entries():
        if not z.private or z.claim_kind == "renyi":
            continue
        claim = z.claim(1.0)
        rel = make_relation(z.relation, z.domain, z.min_size, z.max_size)
        for seed in seeds:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = search(z.mechanism(1.0), rel, AcceptedInputs(kinds=()), epsilon=1.0,
                           delta=float(getattr(claim, "delta", 0.0) or 0.0), beta=BETA, budget=budget, seed=seed)
            runs, pairs = runs + 1, pairs + r.pairs_tried
            if r.witnesses:
                accused += 1
                names.append(f"{z.name} (seed {seed})")
    return {"runs": runs, "accused": accused, "accused_entries": names, "pairs": pairs, "beta": BETA,
            "cpu_seconds": round(time.process_time() - t0, 1), "seeds": [min(seeds), max(seeds)]}


def render(store: dict) -> str:
    """The markdown summary of the results."""
    lines = ["# Input-space search on the library table and the zoo", "",
             "Generated by `PYTHONPATH=src python benchmarks/input_space_search.py` "
             f"(budget {BUDGET} pairs per hunt, beta {BETA} per target, seed {SEED}); "
             "see `docs/search.md`, section *The input-space search*.", "",
             "| row | table verdict | families | certified witnesses (family / evidence: minimal pair) | pairs | calls | wall s |",
             "|---|---|---|---|---:|---:|---:|"]
    for key, r in sorted(store.get("rows", {}).items()):
        wit = "; ".join(f"{w['family']}/{w['evidence']}: `{w['pair']}`" for w in r.get("witnesses", [])) or "-"
        if "error" in r:
            wit = f"error: {r['error'][:120]}"
        lines.append(f"| {key} | {r.get('verdict')} | {', '.join(r.get('families', []))} | {wit} | "
                     f"{r.get('pairs', '-')} | {r.get('calls', '-')} | {r.get('wall', '-')} |")
    lines += ["", "## Zoo (correct mechanisms, epsilon 1)", "",
              "In the domain each entry is correct on (`AcceptedInputs(kinds=())`: only values within its bounds) a "
              "certified witness is a false accusation; with every kind, records outside the domain are tried too "
              "(the reference mechanisms do not validate their input).", "",
              "| entry | relation | in the domain: certified | pairs | with every kind: certified | pairs | wall s |",
              "|---|---|---|---:|---|---:|---:|"]
    for key, both in sorted(store.get("zoo", {}).items()):
        cells = []
        for mode in ("in_domain", "all_kinds"):
            r = both.get(mode, {}) if "in_domain" in both else (both if mode == "all_kinds" else {})
            wit = "; ".join(f"{w['family']}/{w['evidence']}: `{w['pair']}`" for w in r.get("witnesses", [])) or "-"
            if "error" in r:
                wit = f"error: {r['error'][:120]}"
            cells += [wit, str(r.get("pairs", "-"))]
        wall = sum(both.get(m, {}).get("wall", 0) for m in ("in_domain", "all_kinds"))
        lines.append(f"| {key} | {both.get('in_domain', both).get('relation')} | {' | '.join(cells)} | {wall:.1f} |")
    zs = store.get("zoo_seeds")
    if zs:
        lines += ["", f"In the domain, seeds {zs['seeds'][0]} to {zs['seeds'][1]} (`--zoo-seeds`): {zs['runs']} searches "
                      f"of the correct entries, {zs['accused']} accused ({', '.join(zs['accused_entries']) or 'none'}), "
                      f"{zs['pairs']} pairs, {zs['cpu_seconds']} s of CPU; at beta {zs['beta']} each, "
                      f"{zs['beta'] * zs['runs']:.1f} accusations are allowed on average."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    raise SystemExit(main())

"""The input-space search on layouts with a privacy-unit id column (``Column(role="unit")``): a correct
unit count (NaN ids grouped as one key) is not accused beyond beta, and the PipelineDP pattern (each
NaN row its own key: a unit whose id is NaN counted once per row) is found blind.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/input_space_unit_ids.py [--runs 30]
    PYTHONPATH=src .venv/bin/python benchmarks/input_space_unit_ids.py --same   # one seeded search on a
        value/weight layout (no unit column), printed as a hash: equal before and after a generator change

Prints the counts and CPU seconds (results in ``benchmarks/results/library_search_rows.md``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def _same() -> str:
    from dpaudit.audit.input_space import search
    from dpaudit.datasets import AcceptedInputs, AddRemove, Column, Domain, InputSpace
    from dpaudit.mechanisms.base import Mechanism

    class WeightedSum(Mechanism):
        name = "weighted-sum"

        def sample(self, d, n, rng):
            d = np.asarray(d, dtype=float)
            v = float(np.sum(np.clip(np.nan_to_num(d[:, 0]), 0, 1) * np.clip(np.nan_to_num(d[:, 1]), 0, 1))) if len(d) else 0.0
            return (v + rng.laplace(size=n)).reshape(-1, 1)

    space = InputSpace(columns=(Column("value", 0, 1), Column("weight", 0, 1)))
    r = search(WeightedSum(), AddRemove(Domain((0, 0), (1, 1)), min_size=0, max_size=6), AcceptedInputs(space=space),
               epsilon=1.0, beta=0.05, budget=20, seed=5)
    text = json.dumps([(h.get("pair"), h["pairs"], h["calls"]) for h in r.hunts]) + f"{r.pairs_tried} {r.calls}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def main(argv=None) -> int:
    """Run the measurement; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--same", action="store_true")
    a = ap.parse_args(argv)
    if a.same:
        print("search hash:", _same())
        return 0
    from test_input_space import _UNIT_LAYOUT, _UnitCount

    from dpaudit.audit.input_space import search
    from dpaudit.datasets import AcceptedInputs, AddRemove, Domain, InputSpace

    rel = AddRemove(Domain((0.0,) * 4, (1e6, 2.0, 2.0, 2.0)), min_size=1, max_size=6)
    accepts = AcceptedInputs(space=InputSpace(columns=_UNIT_LAYOUT))
    t, accused, found, pairs = time.process_time(), 0, 0, 0
    for seed in range(a.runs):
        r = search(_UnitCount(True), rel, accepts, epsilon=1.0, beta=0.05, budget=40, seed=seed)
        accused += bool(r.witnesses)
        pairs += r.pairs_tried
        b = search(_UnitCount(False), rel, accepts, epsilon=1.0, beta=0.05, budget=40, seed=seed)
        found += any(w.candidate.family == "columns" for w in b.witnesses)
    print(f"correct (NaN ids one key): accused {accused}/{a.runs} at beta 0.05 ({pairs} pairs in all); "
          f"buggy (each NaN row its own key): found {found}/{a.runs}; {time.process_time() - t:.0f} CPU s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The reproducers (``reproducers/*.py``, one per non-pass row of ``docs/library_audits.md``) run
without dpaudit and print what they claim.

All scripts run in one subprocess (``python -I``, ``dpaudit`` made unimportable), each at a small
``N``; for each the test parses the two counts and checks that the certified delta and the verdict
it prints follow from them (recomputed here with the same Chernoff-KL bounds), that it prints the
tracker text (library version, relation, pair, expected vs observed), and that the set it names is
never reached by the other dataset where the set is a float grid or a truncation the other side
cannot reach. diffprivlib is seeded (``random_state``), so its reproducers' verdicts are
deterministic and must be VIOLATION, as Opacus's (a seeded ``torch.Generator``); PipelineDP's noise
cannot be seeded, so its scripts are checked for consistency only.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "reproducers").glob("*.py"))

_N = {"diffprivlib": 400, "pipelinedp": 40, "opacus": 60}
_N_SCRIPT = {"diffprivlib_linear_regression_diagonal.py": 100, "diffprivlib_linear_regression_unclipped.py": 100,
             "diffprivlib_logistic_regression_labels.py": 60,
             "opacus_make_private.py": 200}
"""Scripts that fit a model per run (5 to 15 ms a fit): a smaller N, still enough for their near-disjoint sets."""
_N_MODELS = 100  # diffprivlib model fits (2-5 ms each, 20-40 times a tools call): fewer runs, same checks

_RUNNER = """
import runpy, sys
sys.modules["dpaudit"] = None  # any import of dpaudit fails
for path, n in zip(sys.argv[1::2], sys.argv[2::2]):
    print("=== " + path, flush=True)
    sys.argv = [path, n]
    runpy.run_path(path, run_name="__main__")
"""


def _kl(a, b):
    out = 0.0
    if a > 0:
        out += a * math.log(a / b)
    if a < 1:
        out += (1 - a) * math.log((1 - a) / (1 - b))
    return out


def _upper(k, n, beta):
    if k == n:
        return 1.0
    lo, hi = k / n, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if n * _kl(k / n, mid) <= math.log(1 / beta) else (lo, mid)
    return hi


@pytest.fixture(scope="module")
def outputs():
    pytest.importorskip("diffprivlib")
    pytest.importorskip("pipeline_dp")
    pytest.importorskip("opacus")
    if not SCRIPTS:
        pytest.skip("no reproducers generated")
    args = []
    for path in SCRIPTS:
        n = _N_SCRIPT.get(path.name) or _N.get(path.name.split("_")[0], _N["pipelinedp"])
        if path.name.startswith(("diffprivlib_gaussian_nb", "diffprivlib_linear_regression",
                                 "diffprivlib_standard_scaler")) and path.name not in _N_SCRIPT:
            n = _N_MODELS
        args += [str(path), str(n)]
    proc = subprocess.run([sys.executable, "-I", "-c", _RUNNER, *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    chunks = proc.stdout.split("=== ")[1:]
    return {Path(c.splitlines()[0]).name: c for c in chunks}


def test_every_reproducer_runs_without_dpaudit_and_prints_what_it_claims(outputs):
    assert set(outputs) == {p.name for p in SCRIPTS}
    for name, text in outputs.items():
        if "VERDICT: ERROR" in text:  # a row whose every call raises: the script shows the exception
            assert "VERDICT: ERROR REPRODUCED: " in text and "--- text for the tracker ---" in text, name
            continue
        m0 = re.search(r"^D0 = .*: (\d+)/(\d+) outputs in S", text, re.M)
        m1 = re.search(r"^D1 = .*: (\d+)/(\d+) outputs in S", text, re.M)
        reach = re.search(r"P\[S \| (D[01])\] >= ([-\d.e]+), P\[S \| D[01]\] <= ([-\d.e]+), so delta >= ([-\d.e]+) "
                          r"at epsilon ([\d.e]+)", text)
        claim = re.search(r"claim: \(([\d.e+-]+), ([\d.e+-]+)\)-DP", text)
        assert m0 and m1 and reach and claim, name
        h = {"D0": int(m0.group(1)), "D1": int(m1.group(1))}
        n = int(m0.group(2))
        side = reach.group(1)
        other = "D1" if side == "D0" else "D0"
        lo = 1.0 - _upper(n - h[side], n, 0.005)
        hi = _upper(h[other], n, 0.005)
        certified = lo - math.exp(float(claim.group(1))) * hi
        assert float(reach.group(4)) == pytest.approx(certified, abs=2e-4), name
        violation = certified > float(claim.group(2))
        assert ("VERDICT: VIOLATION" in text) == violation and ("NOT REPRODUCED" in text) == (not violation), name
        for needed in ("--- text for the tracker ---", "Relation: ", "Neighbouring pair: ", "Expected: ",
                       "Observed: ", "Cause: "):
            assert needed in text, (name, needed)
        assert re.search(r"^library: \S+ \d+\.\d+", text, re.M), name
        if "not a multiple of" in text or "truncates" in text:  # a set the other side cannot reach
            assert h[other] == 0, name
        seeded = name.startswith(("diffprivlib", "opacus"))  # Opacus: a seeded torch.Generator
        if seeded and h[other] == 0 and h[side] >= 0.08 * n:  # N is enough
            assert violation, name

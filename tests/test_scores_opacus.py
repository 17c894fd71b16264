"""The Opacus example (examples/opacus_canary.py) with tiny settings (slow: trains 40 models)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "opacus_canary.py"


def load_example():
    pytest.importorskip("opacus")
    pytest.importorskip("sklearn")
    spec = importlib.util.spec_from_file_location("opacus_canary", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_opacus_example_runs_and_its_audit_stays_below_the_accountant(capsys):
    ex = load_example()
    result = ex.main(["--runs", "20", "--num-train", "50", "--batch-size", "50", "--epochs", "2", "--seed", "1"])
    out = capsys.readouterr().out
    assert "accountant epsilon" in out and "histogram (paper 001)" in out
    s, acc, audit = result["settings"], result["accountant"], result["audit"]
    assert s["steps"] == 2 and s["sample_rate"] == 1.0
    # Two independent accountants agree (Opacus PRV vs dp_accounting PLD) ...
    assert acc["opacus_prv_epsilon"] == pytest.approx(acc["dp_accounting_pld_epsilon"], rel=0.05)
    # ... and q = 1 composition of 2 Gaussian steps is sqrt(2)/sigma-GDP.
    assert acc["gdp_mu"] == pytest.approx(math.sqrt(2) / 3.0, abs=1e-3)
    # A lower bound (95% confidence) never exceeds the accountant's upper bound here.
    assert 0.0 <= audit["histogram_epsilon_lower_bound"] <= acc["opacus_prv_epsilon"]
    assert 0.0 <= audit["threshold_epsilon_lower_bound"] <= acc["opacus_prv_epsilon"]
    assert 0.0 <= audit["histogram_mu_lower_bound"] <= acc["gdp_mu"] + 1e-6
    assert math.isfinite(result["scores"]["with_canary_mean_loss"])
    json.dumps(result)

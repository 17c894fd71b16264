"""Live checks of the library environments: opt-in (``DPAUDIT_LIVE_ENVS=1``) and only where an
environment is already built.

CI builds none (minutes and GBs each: ``benchmarks/library_envs_audit.py --build`` does) and does
not set the variable, so every test here skips in CI, even on a machine whose cache holds the
environments (about 75 s for all rows there). With it, the worker starts in each real environment,
the row's target draws finite outputs, and SmartNoise SQL's own cost equals the row's claim::

    DPAUDIT_LIVE_ENVS=1 .venv/bin/python -m pytest tests/test_library_envs_live.py -m ""
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from dpaudit.library.envs import get_env
from dpaudit.library.envs.rows import ROWS


def _built(name):
    if os.environ.get("DPAUDIT_LIVE_ENVS") != "1":
        pytest.skip("live environment checks are opt-in: DPAUDIT_LIVE_ENVS=1")
    env = get_env(name)
    if not env.exists():
        pytest.skip(f"environment {name!r} is not built here (benchmarks/library_envs_audit.py --build {name})")
    return env


@pytest.mark.slow
@pytest.mark.parametrize("row", [r for r in ROWS if r.key != "tmlt-analytics.session_count"], ids=lambda r: r.key)
def test_a_built_environment_draws_the_rows_outputs(row):
    _built(row.env)
    mech = row.mechanism()
    d0 = row.witness_pairs[0][0] if row.witness_pairs else [list(row.lower)] * max(1, row.min_size)
    out = mech.sample(np.asarray(d0, dtype=float).reshape(-1, len(row.lower)), 5, np.random.default_rng(0))
    assert out.shape[0] == 5 and np.all(np.isfinite(out))
    assert any(v for v in mech.versions.values()), mech.versions


@pytest.mark.slow
def test_smartnoise_sqls_own_cost_is_the_rows_claim():
    env = _built("smartnoise-sql")
    for r in (r for r in ROWS if r.env == "smartnoise-sql"):
        query = r.target.split(":")[1]
        eps, delta = env.call("smartnoise_sql:privacy_cost", query=query, **dict(r.kwargs))
        assert (eps, delta) == (r.epsilon, r.delta), r.key


@pytest.mark.slow
def test_dpaudit_library_audit_runs_an_environment_row_in_its_environment():
    """``dpaudit library audit smartnoise-sql count`` at a small budget, through the registry's
    resolver and the worker (about 30 s with the environment built)."""
    import json

    from typer.testing import CliRunner

    from dpaudit.cli.app import app

    env = _built("smartnoise-sql")
    res = CliRunner().invoke(app, ["library", "audit", "smartnoise-sql", "count", "--samples", "300", "--json"])
    row = json.loads(res.output)["rows"][0]
    # SmartNoise SQL samples through OpenDP's system randomness (not seedable): the verdict is not
    # asserted, only that the row ran to a verdict, at this budget, in its environment's interpreter
    assert row["key"] == "smartnoise-sql.count" and row["verdict"] not in ("error", "not run"), res.output
    assert row["record"]["first"]["samples"] == 300 and row["exit_code"] in (0, 1, 3, 5)
    assert env.client().hello["executable"].startswith(str(env.root))

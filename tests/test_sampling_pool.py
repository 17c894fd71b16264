"""Per-call mechanisms sampled on a pool of spawned processes (dpaudit.audit.executors.SamplingPool):
the same chunks and streams as the serial path, so the same samples and the same audit; the
fallbacks (unpicklable mechanism), describe(), the --processes flag, and no torch import on a
histogram audit."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dpaudit import Mechanism, PureDP, audit
from dpaudit.audit.executors import (
    InProcessExecutor, SamplingPool, chunk_sizes, sample_pair, trial_streams, usable_cores,
)
from dpaudit.cli import app
from dpaudit.datasets import AddRemove
from dpaudit.errors import MechanismError
from dpaudit.search import RandomFinder
from dpaudit.testers import make_tester

from test_search_support import NoisyMean, noisy_sum_call

REL = AddRemove(min_size=1, max_size=4)
SRC = Path(__file__).resolve().parents[1] / "src"


def vector_call(dataset, rng):
    """A per-call mechanism with 2-D outputs."""
    return [float(np.sum(dataset)) + rng.laplace(), rng.normal()]


def failing_call(dataset, rng):
    """Fails on the larger dataset of a pair, after some calls."""
    if len(dataset) > 1 and rng.random() < 0.01:
        raise RuntimeError("database offline")
    return float(np.sum(dataset)) + rng.laplace()


class LockedMechanism(Mechanism):
    """A per-call mechanism that cannot be pickled (it holds a lock)."""

    vectorised = False
    name = "holds-a-lock"

    def __init__(self):
        self.lock = threading.Lock()

    def sample(self, dataset, num_samples, rng):
        return np.sum(dataset) + rng.laplace(size=num_samples)


def test_chunks_depend_on_the_sample_size_and_chunk_size_only():
    assert chunk_sizes(300, 70) == [70, 70, 70, 70, 20]
    assert chunk_sizes(50_000, 5000) == [5000] * 10
    assert chunk_sizes(10_000, 5000) == [1250] * 8  # small samples: up to 8 chunks per dataset
    assert chunk_sizes(2000, 5000) == [500] * 4  # ... of at least 500 calls
    assert chunk_sizes(700, 5000) == [500, 200] and chunk_sizes(400, 5000) == [400]
    with pytest.raises(ValueError, match="chunk_size >= 1"):
        chunk_sizes(10, 0)


def test_the_pool_draws_exactly_the_serial_samples():
    pair = REL.pair([1.0], [1.0, 0.0])
    pool = SamplingPool(Mechanism.from_callable(vector_call, name="vec"), 2, min_calls=0)
    try:
        for n, index in ((1200, 3), (2000, 4)):
            ss = trial_streams(11, index)[0]
            x0, x1 = sample_pair(pool.mechanism, pair, n, ss, 500, pool=pool)
            y0, y1 = sample_pair(pool.mechanism, pair, n, trial_streams(11, index)[0], 500)
            assert x0.shape == (n, 2) and np.array_equal(x0, y0) and np.array_equal(x1, y1)
        assert pool._executor is not None  # it did run on the pool
        other = Mechanism.from_callable(noisy_sum_call)  # a pool serves its own mechanism only
        assert not pool.serves(other)
    finally:
        pool.close()


def test_pool_errors_are_the_serial_errors():
    mech = Mechanism.from_callable(failing_call, name="flaky")
    pair = REL.pair([1.0], [1.0, 0.0])
    with pytest.raises(MechanismError) as serial:
        sample_pair(mech, pair, 1500, trial_streams(1, 0)[0], 500)
    pool = SamplingPool(mech, 2, min_calls=0)
    try:
        with pytest.raises(MechanismError) as pooled:
            sample_pair(mech, pair, 1500, trial_streams(1, 0)[0], 500, pool=pool)
    finally:
        pool.close()
    assert "database offline" in str(pooled.value) and str(pooled.value) == str(serial.value)
    assert pooled.value.mechanism == "flaky" and pooled.value.dataset == serial.value.dataset


def _audit(mechanism, **kw):
    return audit(
        mechanism, PureDP(1.0), RandomFinder(REL, rng=3), tester=make_tester("histogram"), num_samples=2000,
        trials=3, beta=0.1, seed=9, exhaustive=True, **kw,
    )


def test_an_audit_is_the_same_on_one_or_two_processes():
    mech = Mechanism.from_callable(noisy_sum_call, name="noisy-sum")
    one = _audit(mech, processes=1)
    assert _audit(mech, processes=2).execution["processes"] == 1  # 4000 calls a trial: not worth a pool
    two = _audit(mech, executor=InProcessExecutor(processes=2, min_pool_calls=0))
    assert [t.outcome for t in two.trials] == [t.outcome for t in one.trials]
    assert [t.pair for t in two.trials] == [t.pair for t in one.trials]
    assert two.violation == one.violation
    assert one.execution == {"executor": "in-process", "workers": 1, "processes": 1}
    assert two.execution == {"executor": "in-process", "workers": 1, "processes": 2}


def test_every_stage_of_a_large_trial_is_drawn_on_the_pool(monkeypatch):
    # Each stage draws fewer than MIN_POOL_CALLS calls, but the trial plans 2 x 12,000 >= 20,000:
    # the pool is started (not waited for) at the first stage, which is drawn here meanwhile, and
    # draws every later stage; the samples are the serial ones.
    mech = Mechanism.from_callable(noisy_sum_call, name="noisy-sum")
    drawn = []
    real = SamplingPool.draw_pair

    def counting(self, pair, sizes, sample_ss):
        drawn.append(sum(sizes))
        return real(self, pair, sizes, sample_ss)

    kw = dict(num_samples=12_000, stages=(2000, 8000), trials=1, exhaustive=False)
    monkeypatch.setattr(SamplingPool, "draw_pair", counting)
    pooled = audit(mech, PureDP(1.0), RandomFinder(REL, rng=3), tester=make_tester("histogram"), beta=0.1, seed=9,
                   executor=InProcessExecutor(processes=2), **kw)
    monkeypatch.setattr(SamplingPool, "draw_pair", real)
    serial = audit(mech, PureDP(1.0), RandomFinder(REL, rng=3), tester=make_tester("histogram"), beta=0.1, seed=9,
                   processes=1, **kw)
    stages = [s.num_samples for s in pooled.trials[0].stages]
    assert len(stages) >= 2 and drawn == list(np.diff([0] + stages))[1:]
    assert max(drawn) < 20_000 // 2  # every stage alone is below MIN_POOL_CALLS (per dataset)
    assert pooled.execution["processes"] == 2 and serial.execution["processes"] == 1
    assert [t.outcome for t in pooled.trials] == [t.outcome for t in serial.trials]
    assert [t.stages for t in pooled.trials] == [t.stages for t in serial.trials]


def test_an_unpicklable_mechanism_is_sampled_here_with_one_warning():
    with pytest.warns(RuntimeWarning, match="holds-a-lock.*cannot be pickled") as caught:
        res = _audit(LockedMechanism(), executor=InProcessExecutor(processes=2, min_pool_calls=0))
    assert len([w for w in caught if issubclass(w.category, RuntimeWarning)]) == 1
    assert res.execution["processes"] == 1 and len(res.trials) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = _audit(LockedMechanism(), processes=1)  # processes=1: no pool, no warning
    assert [t.outcome for t in again.trials] == [t.outcome for t in res.trials]


def test_describe_reports_the_processes_and_pools_start_only_when_useful():
    per_call = Mechanism.from_callable(noisy_sum_call)
    ex = InProcessExecutor(processes=2)
    ex.start(NoisyMean(), None, None, num_samples=50_000, chunk_size=5000)  # vectorised: never a pool
    assert ex.describe() == {"executor": "in-process", "workers": 1, "processes": 1}
    ex.start(per_call, None, None, num_samples=400, chunk_size=5000)  # one chunk per dataset
    assert ex.describe()["processes"] == 1
    ex.start(per_call, None, None, num_samples=2000, chunk_size=0)  # no chunks
    assert ex.describe()["processes"] == 1
    ex.start(per_call, None, None, num_samples=9000, chunk_size=5000)  # 18_000 calls: below MIN_POOL_CALLS
    assert ex.describe()["processes"] == 1
    ex.start(per_call, None, None, num_samples=10_000, chunk_size=5000)
    assert ex.describe()["processes"] == 2 and ex._pool._executor is None  # processes start lazily
    ex.close()
    assert ex._pool is None and ex.describe()["processes"] == 1
    assert InProcessExecutor().pool_size() == usable_cores() >= 1
    assert InProcessExecutor(processes="auto").processes == "auto"
    for bad in (0, -2, 1.5, "two", True):
        with pytest.raises(ValueError, match="processes must be a positive integer or 'auto'"):
            InProcessExecutor(processes=bad)
    with pytest.raises(ValueError, match="min_pool_calls must be an integer >= 0, got -1"):
        InProcessExecutor(min_pool_calls=-1)
    with pytest.raises(ValueError, match="processes=2 is for the default in-process executor"):
        _audit(per_call, processes=2, executor=InProcessExecutor())


@pytest.mark.parametrize("args, message", [
    (["--processes", "0"], "--processes must be a positive integer or 'auto', got '0'"),
    (["--processes", "many"], "--processes must be a positive integer or 'auto', got 'many'"),
    (["--processes", "2", "--workers", "2"], "--processes is for sampling in this process"),
])
def test_cli_rejects_bad_processes(args, message):
    res = CliRunner().invoke(app, ["test", "zoo:dp-laplace", "--epsilon", "1", "--quiet", *args])
    assert res.exit_code == 2, res.output
    assert message in " ".join(res.output.split())


def test_cli_processes_flag(tmp_path, monkeypatch):
    (tmp_path / "poolmech.py").write_text(
        "import numpy as np\n\ndef noisy_sum(dataset, rng):\n    return float(np.sum(dataset)) + rng.laplace()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    out = {}
    for p in ("1", "2"):
        res = CliRunner().invoke(app, [
            "test", "poolmech:noisy_sum", "--epsilon", "1", "--tester", "histogram", "-n", "10000", "-t", "2",
            "--seed", "5", "--json", "--processes", p, "--pairs", "[[[1.0], [1.0, 1.0]], [[0.0], [0.0, 1.0]]]",
            "--search", "grid",
        ])
        assert res.exit_code == 0, res.output
        out[p] = json.loads(res.stdout)
    assert out["1"]["execution"]["processes"] == 1 and out["2"]["execution"]["processes"] == 2
    assert [t["outcome"] for t in out["1"]["trials"]] == [t["outcome"] for t in out["2"]["trials"]]


def test_a_histogram_audit_does_not_import_torch():
    code = (
        "import sys, json\n"
        "from dpaudit.cli import main\n"
        "sys.argv = ['dpaudit', 'test', 'zoo:dp-laplace', '--epsilon', '1', '--tester', 'histogram',\n"
        "            '-n', '2000', '-t', '1', '--seed', '0', '--json']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as e:\n"
        "    assert e.code == 0, e.code\n"
        "import dpaudit\n"
        "from dpaudit.audit.executors import sample_pair\n"
        "from dpaudit.testers import make_tester\n"
        "r = dpaudit.audit(dpaudit.Mechanism.from_callable(lambda d, rng: float(d.sum()) + rng.laplace()),\n"
        "                  dpaudit.PureDP(1.0), dpaudit.search.RandomFinder(dpaudit.datasets.AddRemove(max_size=3), rng=1),\n"
        "                  tester=make_tester('histogram'), num_samples=300, trials=1, seed=1)\n"
        "json.loads(r.to_json())\n"
        "print('torch' in sys.modules, file=sys.stderr)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip().splitlines()[-1] == "False", res.stderr
    assert json.loads(res.stdout)["versions"]["torch"]

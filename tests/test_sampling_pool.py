"""Per-call mechanisms sampled on a pool of spawned processes (dpaudit.audit.executors.SamplingPool):
the same chunks and streams as the serial path, so the same samples and the same audit; the
fallbacks (unpicklable mechanism), describe(), the --processes flag, and no torch import on a
histogram audit."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dpaudit import Mechanism, PureDP, audit
from dpaudit.audit import executors
from dpaudit.audit.executors import (
    InProcessExecutor, SamplingPool, TrialSpec, choose_processes, chunk_sizes, sample_pair, time_per_call,
    trial_streams, usable_cores,
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


# --------------------------------------------------------------------------- processes="auto"
def test_choose_processes_from_injected_timings():
    # a pure-Python noisy sum (a few us per call): the pool's start-up is never repaid
    n, reason = choose_processes(4e-6, 100_000, 56, 2)
    assert n == 1 and reason.startswith("measured 4 µs per call: workers would not pay off")
    assert "100,000 calls" in reason
    # a mechanism doing real work per call: all cores, at a default trial's 2 x 50,000 calls
    for cost in (100e-6, 150e-6, 5e-3):
        assert choose_processes(cost, 100_000, 56, 2)[0] == 2
        assert choose_processes(cost, 100_000, 56, 8)[0] == 8
    n, reason = choose_processes(150e-6, 100_000, 56, 2)
    assert reason.startswith("measured 150 µs per call: 2 processes pay off")
    # ... but not for a trial too small to repay the start-up, nor on one core
    assert choose_processes(150e-6, 4000, 16, 2)[0] == 1
    assert choose_processes(1.0, 100_000, 56, 1) == (1, "measured 1 s per call: one usable core")
    # the model: start-up + calls spread over the cores + per-task overhead, against the serial time
    assert choose_processes(1e-4, 1000, 10, 2, startup_seconds=0.0, task_seconds=0.0)[0] == 2
    assert choose_processes(1e-4, 1000, 10, 2, startup_seconds=0.03, task_seconds=0.001)[0] == 2  # 0.09 s < 0.1 s
    assert choose_processes(1e-4, 1000, 10, 2, startup_seconds=0.05, task_seconds=0.001)[0] == 1  # 0.11 s
    for bad, name in (((-1e-6, 10, 1, 2), "per_call_seconds"), ((float("nan"), 10, 1, 2), "per_call_seconds"),
                      ((1e-6, -1, 1, 2), "calls"), ((1e-6, 10, 1.5, 2), "chunks"), ((1e-6, 10, 1, 0), "cores")):
        with pytest.raises(ValueError, match=f"{name} must be .*got {re.escape(repr(bad[['per_call_seconds', 'calls', 'chunks', 'cores'].index(name)]))}"):
            choose_processes(*bad)


def test_time_per_call_times_the_mechanism_without_touching_the_samples():
    calls = []

    def counted(dataset, rng):
        calls.append(len(dataset))
        return float(np.sum(dataset)) + rng.laplace()

    pair = REL.pair([1.0], [1.0, 0.0])
    per_call = time_per_call(Mechanism.from_callable(counted), pair, max_calls=64)
    # warm-up, doubling batches of at most 64 calls, the last size twice more; both datasets
    assert per_call > 0.0 and 4 <= len(calls) <= 2 + 2 * 64 + 3 * 64 and set(calls) == {1, 2}
    with pytest.raises(MechanismError, match="database offline"):
        time_per_call(Mechanism.from_callable(broken_call, name="broken"), pair)
    # the timed calls draw from a stream of their own: the audit's samples are those of processes=1
    mech = Mechanism.from_callable(noisy_sum_call, name="noisy-sum")
    timed = _big_audit(mech)
    assert "seconds_per_call" in timed.execution
    assert [t.outcome for t in timed.trials] == [t.outcome for t in _big_audit(mech, processes=1).trials]


def broken_call(dataset, rng):
    raise RuntimeError("database offline")


@pytest.fixture
def two_cores(monkeypatch):
    """A machine with two usable cores, whatever runs the tests."""
    monkeypatch.setattr(executors, "usable_cores", lambda: 2)


def _no_pool(monkeypatch):
    def refuse(self):
        raise AssertionError("a sampling pool was started")

    monkeypatch.setattr(SamplingPool, "_start", refuse)


def _big_audit(mechanism, **kw):  # 2 x 10,000 calls a trial: enough for a pool (MIN_POOL_CALLS)
    return audit(mechanism, PureDP(1.0), RandomFinder(REL, rng=3), tester=make_tester("histogram"),
                 num_samples=10_000, trials=2, beta=0.1, seed=9, exhaustive=True, stages="off", **kw)


def test_auto_samples_a_cheap_mechanism_here_and_says_why(two_cores, monkeypatch):
    monkeypatch.setattr(executors, "time_per_call", lambda mechanism, pair: 4e-6)
    _no_pool(monkeypatch)
    mech = Mechanism.from_callable(noisy_sum_call, name="noisy-sum")
    res = _big_audit(mech)  # processes="auto", the default
    assert res.execution["processes"] == 1 and res.execution["seconds_per_call"] == 4e-6
    assert res.execution["processes_choice"].startswith("measured 4 µs per call: workers would not pay off")
    assert json.loads(res.to_json())["execution"]["processes_choice"] == res.execution["processes_choice"]
    # an explicit --processes is obeyed, with no measurement and nothing more to say
    assert "processes_choice" not in _big_audit(mech, processes=1).execution


def test_auto_gives_a_costly_mechanism_all_cores_with_the_same_results(two_cores, monkeypatch):
    # 1 ms per call (injected): the trial's 20,000 calls take 20 s here, about 12 s on 2 processes
    monkeypatch.setattr(executors, "time_per_call", lambda mechanism, pair: 1e-3)
    mech = Mechanism.from_callable(noisy_sum_call, name="noisy-sum")
    pooled = _big_audit(mech)
    assert pooled.execution["processes"] == 2
    assert pooled.execution["processes_choice"].startswith("measured 1 ms per call: 2 processes pay off")
    serial = _big_audit(mech, processes=1)
    assert [t.outcome for t in pooled.trials] == [t.outcome for t in serial.trials]
    assert [t.pair for t in pooled.trials] == [t.pair for t in serial.trials]


def test_a_raising_mechanism_is_reported_before_any_pool_starts(two_cores, monkeypatch):
    _no_pool(monkeypatch)
    broken = Mechanism.from_callable(broken_call, name="broken")
    with pytest.raises(MechanismError, match="database offline"):
        _big_audit(broken)
    # the executor's own account: timed, raised, sampled here, the trial's error handed back
    ex = InProcessExecutor()
    ex.start(broken, make_tester("histogram"), PureDP(1.0), num_samples=10_000, chunk_size=5000)
    ex.submit(TrialSpec(0, REL.pair([1.0], [1.0, 0.0]), "test", 10_000, 0.1, 9, 5000))
    _, error = ex.wait_any()
    assert isinstance(error, MechanismError) and "(call 1 of 1250)" in str(error)  # the trial's first chunk
    assert ex.describe() == {"executor": "in-process", "workers": 1, "processes": 1, "processes_choice":
                             "the mechanism raised when timed (MechanismError): sampled in this process"}
    ex.close()


def test_cli_states_the_processes_it_chose(tmp_path, monkeypatch, two_cores):
    (tmp_path / "poolmech_auto.py").write_text(
        "import numpy as np\n\ndef noisy_sum(dataset, rng):\n    return float(np.sum(dataset)) + rng.laplace()\n\n"
        "def broken(dataset, rng):\n    raise RuntimeError('database offline')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(executors, "time_per_call", lambda mechanism, pair: 4e-6)
    _no_pool(monkeypatch)
    args = ["--epsilon", "1", "--tester", "histogram", "-n", "10000", "-t", "1", "--seed", "5",
            "--pairs", "[[[1.0], [1.0, 1.0]]]", "--search", "grid"]
    res = CliRunner().invoke(app, ["test", "poolmech_auto:noisy_sum", *args, "--json"])
    assert res.exit_code == 0, res.output
    execution = json.loads(res.stdout)["execution"]
    assert execution["processes"] == 1 and "workers would not pay off" in execution["processes_choice"]
    res = CliRunner().invoke(app, ["test", "poolmech_auto:noisy_sum", *args], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "processes   1 (measured 4 µs per call: workers would not pay off" in res.output
    monkeypatch.setattr(executors, "time_per_call", time_per_call)  # the real one: the mechanism raises there
    res = CliRunner().invoke(app, ["test", "poolmech_auto:broken", *args])
    assert res.exit_code == 2 and "database offline" in " ".join(res.output.split())

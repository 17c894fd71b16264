"""Trials on Dask: the same records as in this process (randomness is per trial, not per worker),
per-call sampling split into chunks, clear errors for mechanisms that cannot be shipped."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from typer.testing import CliRunner

from dpaudit import Mechanism, PureDP, audit
from dpaudit.cli import app
from dpaudit.datasets import AddRemove
from dpaudit.audit.executors import DaskExecutor, NotShippableError, chunk_sizes, is_per_call, sample_pair, trial_streams
from dpaudit.search import RandomFinder

from test_search_support import MeanShiftTester, NoisyMean, noisy_sum_call

distributed = pytest.importorskip("distributed")

REL = AddRemove(min_size=1, max_size=4)  # NoisyMean has no mean on the empty dataset


class Unpicklable(Mechanism):
    name = "holds-a-lock"

    def __init__(self):
        self.lock = threading.Lock()

    def sample(self, dataset, num_samples, rng):
        return rng.normal(size=num_samples)


def _audit(mechanism, executor=None, **kw):
    return audit(
        mechanism, PureDP(1.0), RandomFinder(REL, rng=3), tester=MeanShiftTester(50.0), num_samples=300,
        trials=4, beta=0.1, seed=9, exhaustive=True, executor=executor, chunk_size=70, **kw,
    )


def test_chunked_sampling_is_the_same_in_any_order():
    mech = Mechanism.from_callable(noisy_sum_call, name="noisy-sum")
    assert is_per_call(mech) and not is_per_call(NoisyMean())
    assert chunk_sizes(300, 70) == [70, 70, 70, 70, 20]
    pair = REL.pair([1.0], [1.0, 0.0])
    s, _ = trial_streams(9, 2)
    x0, x1 = sample_pair(mech, pair, 300, s, 70)
    y0, y1 = sample_pair(mech, pair, 300, trial_streams(9, 2)[0], 70)
    assert x0.shape == (300, 1) and np.array_equal(x0, y0) and np.array_equal(x1, y1)
    assert not np.array_equal(x0[:70], x0[70:140])  # chunks have their own streams


def test_local_cluster_gives_the_same_records_as_in_process():
    vectorised = NoisyMean(0.3)
    per_call = Mechanism.from_callable(noisy_sum_call, name="noisy-sum")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        for mech in (vectorised, per_call):
            local = _audit(mech)
            remote = _audit(mech, executor=DaskExecutor(client=client))
            assert [t.outcome for t in remote.trials] == [t.outcome for t in local.trials]
            assert [t.pair for t in remote.trials] == [t.pair for t in local.trials]
            assert remote.execution["executor"] == "dask" and remote.execution["threads"] == 2
            assert local.execution["executor"] == "in-process"
        assert client.status == "running"  # a given client is not closed by the audit
        with pytest.raises(NotShippableError, match="holds-a-lock.*cannot be pickled"):
            _audit(Unpicklable(), executor=DaskExecutor(client=client))


def test_mechanism_errors_on_workers_keep_their_message():
    def broken(dataset):
        raise RuntimeError("database offline")

    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as client:
        from dpaudit.errors import MechanismError

        with pytest.raises(MechanismError, match="database offline") as info:
            _audit(Mechanism.from_callable(broken, name="broken"), executor=DaskExecutor(client=client))
        assert info.value.mechanism == "broken" and info.value.dataset.startswith("[")


@pytest.mark.parametrize("args, message", [
    (["--workers", "zero"], "--workers must be a positive integer or 'auto'"),
    (["--workers", "0"], "--workers must be a positive integer or 'auto'"),
    (["--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], "not both"),
    (["--scheduler", "nonsense"], "--scheduler must be a Dask scheduler address"),
])
def test_cli_rejects_bad_dask_options(args, message):
    res = CliRunner().invoke(app, ["test", "zoo:dp-laplace", "--epsilon", "1", "--quiet", *args])
    assert res.exit_code == 2, res.output
    assert message in res.output


def test_executors_satisfy_the_executor_protocol():
    from dpaudit.audit.executors import Executor, InProcessExecutor

    assert isinstance(InProcessExecutor(), Executor)
    assert isinstance(DaskExecutor(n_workers=1, processes=False), Executor)

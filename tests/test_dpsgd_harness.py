"""Many-run audits of a user's own DP-SGD code (dpaudit.dpsgd.harness): two buggy steps written as
plain PyTorch functions — the batch's summed gradient clipped as a whole, the update divided by the
realised batch size — are caught, the correct step (the control) is not accused, and the executors
(vmap, loop, process pool) agree on the contract."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dpaudit.accounting import Composition, get_delta, get_epsilon  # noqa: E402
from dpaudit.dpsgd import DPSGDConfig  # noqa: E402
from dpaudit.dpsgd.harness import (  # noqa: E402
    audit_user_code,
    linear_loss,
    make_task,
    run_step_many,
    run_train_many,
)

DELTA = 1e-5
C, LR = 1.0, 0.1


def _grads(params, data):
    """Per-example gradients of the harness's linear loss <params, x>: the rows themselves (what
    torch.func.vmap(torch.func.grad(linear_loss), in_dims=(None, 0)) returns, without its one-time
    start-up cost of seconds)."""
    return data + 0.0 * params


def make_step(q, sigma, n_public, bug=None):
    """A user's DP-SGD step (Poisson sampling at q, clipping to C, noise sigma C, division by the
    public expected batch q n_public), or one of two bugs: "batch-clipping" (the summed gradient
    clipped as a whole) and "realised-batch" (divided by the realised batch size)."""

    def step(params, data, generator):
        take = (torch.rand(data.shape[0], generator=generator) < q).to(params.dtype)
        g = _grads(params, data)
        if bug == "batch-clipping":
            total = (take[:, None] * g).sum(0)
            total = total * torch.clamp(C / (total.norm() + 1e-12), max=1.0)
        else:
            clipped = g * torch.clamp(C / (g.norm(dim=1, keepdim=True) + 1e-12), max=1.0)
            total = (take[:, None] * clipped).sum(0)
        noisy = total + torch.randn(params.shape, generator=generator) * sigma * C
        divisor = torch.clamp(take.sum(), min=1.0) if bug == "realised-batch" else q * n_public
        return params - LR * noisy / divisor

    return step


@pytest.mark.parametrize("case", ["batch-clipping", "realised-batch"])
def test_user_bugs_are_caught_and_the_correct_step_is_not_accused(case):
    # batch clipping: q = 1, 4 steps, sigma 4 (accountant epsilon 2.0, mu 0.5); one crafted opposing
    # row makes the clipped batch sum move by 1.89 C (true mu 0.94, epsilon = the accountant's at
    # sigma / 1.89). Realised batch: Poisson q = 0.5, 16 steps, sigma 8 (accountant epsilon 0.96),
    # on the worst-case dataset of one other example: without the canary |B| is 1 (at least 1), with
    # it 2 in a quarter of the steps, and the scale view sees the update halve.
    if case == "batch-clipping":
        q, sigma, steps, runs = 1.0, 4.0, 4, 2000
        task_args = {}
    else:
        q, sigma, steps, runs = 0.5, 8.0, 16, 100
        task_args = {"data": np.full((1, 4), 0.1), "opposing": 0}
    config = DPSGDConfig(noise_multiplier=sigma, sampling_rate=q, steps=steps)
    task = make_task(config, seed=0, **task_args)
    n_public = task.data_out.shape[0] + 1
    buggy = audit_user_code(run_step_many(make_step(q, sigma, n_public, case), config, runs=runs, task=task),
                            delta=DELTA)
    accountant = buggy["accountant_epsilon"]
    correct_runs = run_step_many(make_step(q, sigma, n_public), config, runs=runs, task=task, seed=1)
    correct = audit_user_code(correct_runs, delta=DELTA)
    assert correct_runs.details["executor"] == "vmap"
    assert buggy["caught"], buggy
    view = "white_box" if case == "batch-clipping" else "scale"
    assert buggy[view]["profile_violated"], buggy[view]
    # The control: no view's certified bound reaches the claim, at any grid point, with margin.
    assert not correct["caught"], correct
    for v in correct["views"]:
        assert correct[v]["epsilon_lower_bound"] < 0.8 * accountant, (v, correct[v])
    if case == "batch-clipping":
        # The truth on this dataset: sensitivity 1.89 C, i.e. the accountant's epsilon at sigma / 1.89.
        true_eps = get_epsilon(Composition.dpsgd(sigma / 1.886, 1.0, steps), DELTA).epsilon
        assert buggy[view]["epsilon_lower_bound"] <= true_eps
    witness = buggy[view]["profile"]
    assert witness["delta_lower_bound"] > float(get_delta(config.composition(), witness["witness_epsilon"]).delta)


def _masked_step(params, data, generator):
    """Not vmappable (a data-dependent batch shape): the correct step at q = 0.5, sigma 2."""
    take = torch.rand(data.shape[0], generator=generator) < 0.5
    g = data[take]
    g = g * torch.clamp(C / (g.norm(dim=1, keepdim=True) + 1e-12), max=1.0)
    return params - LR * (g.sum(0) + torch.randn(params.shape, generator=generator) * 2.0 * C) / 5.0


def _train(data, seed):
    """A whole training function: 3 steps of _masked_step from zero."""
    gen = torch.Generator().manual_seed(seed)
    p = torch.zeros(data.shape[1])
    for _ in range(3):
        p = _masked_step(p, data, gen)
    return p


def test_steps_that_cannot_be_vmapped_run_in_a_loop_or_a_pool_with_the_same_results():
    config = DPSGDConfig(noise_multiplier=2.0, sampling_rate=0.5, steps=3)
    loop = run_step_many(_masked_step, config, runs=8, workers=0)
    assert loop.details["executor"] == "serial"
    with pytest.raises(ValueError, match="cannot be vectorised"):
        run_step_many(_masked_step, config, runs=8, executor="vmap")
    trained = run_train_many(_train, config, runs=8, workers=0)
    # The same seeds: the step run three times equals the training function's final parameters.
    assert np.allclose(trained.black_box_in, loop.black_box_in) and np.allclose(trained.scale_out, -np.log(
        np.sqrt(np.mean(_final_nulls(config), axis=1))))
    a = audit_user_code(trained, delta=DELTA, profile=None)
    assert a["views"] == ("black_box", "scale") and not a["caught"]
    with pytest.raises(ValueError, match="executor"):
        run_step_many(_masked_step, config, runs=8, executor="dask")
    with pytest.raises(ValueError, match="finite parameters"):
        run_step_many(lambda p, d, g: p[:3], config, runs=4, workers=0)


def _final_nulls(config):
    """The null block of _train's final parameters for the out-half seeds, squared (recomputed)."""
    task = make_task(config, seed=0)
    seeds = np.random.SeedSequence([0, 35]).generate_state(8, dtype=np.uint64) % (2**62)
    x = torch.as_tensor(task.data_out)
    return np.stack([_train(x, int(s))[task.null].numpy() ** 2 for s in seeds[4:]])


def test_the_pool_does_not_fork_a_process_that_imported_jax(monkeypatch):
    import multiprocessing
    import sys

    from dpaudit.dpsgd.harness import _start_method

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    monkeypatch.delitem(sys.modules, "jax", raising=False)
    assert _start_method(_train) == "fork" and _start_method(lambda x, s: x) == "fork"
    monkeypatch.setitem(sys.modules, "jax", object())
    assert _start_method(_train) == "spawn"  # picklable: JAX's threads do not survive fork
    assert _start_method(lambda x, s: x) == "fork"  # a lambda cannot reach a spawned worker


def test_a_process_pool_gives_the_loop_results():
    config = DPSGDConfig(noise_multiplier=2.0, sampling_rate=0.5, steps=2)
    loop = run_train_many(_train, config, runs=4, workers=0)
    pool = run_train_many(_train, config, runs=4, workers=2)
    assert pool.details["executor"] == "process"
    assert np.array_equal(loop.black_box_in, pool.black_box_in) and np.array_equal(loop.scale_out, pool.scale_out)

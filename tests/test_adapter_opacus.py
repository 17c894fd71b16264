"""Tests of the Opacus adapter and the Opacus example module (dpaudit.examples.opacus_sgd).

One DP-SGD run costs about 0.5-1 ms, so fast tests use a few hundred runs. The expected
moments come from the algebra of one full-batch step from zero parameters (see each test).
"""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("opacus")
import torch  # noqa: E402

from dpaudit import GridFinder, audit  # noqa: E402
from dpaudit.testers import HockeyStickTester  # noqa: E402
from dpaudit.privacy.claims import ApproxDP  # noqa: E402
from dpaudit.datasets import LabelledAddRemove  # noqa: E402
from dpaudit.errors import DPAuditError, MechanismError  # noqa: E402
from dpaudit.mechanisms import Mechanism, draw  # noqa: E402
from dpaudit.mechanisms.adapters import MissingDependencyError, OpacusMechanism, canary_loss  # noqa: E402
from dpaudit.mechanisms.adapters.opacus import import_opacus  # noqa: E402

# Example A = (0, 0; label 0), example B = (1, 1; label 1).
DATA = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])


def zero_linear(d_in=2, d_out=2):
    model = torch.nn.Linear(d_in, d_out)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    return model


def step(**kwargs):
    args = dict(max_grad_norm=1.0, expected_batch_size=4, noise_multiplier=0.5, lr=1.0)
    args.update(kwargs)
    return OpacusMechanism(zero_linear, **args)


def test_one_step_moves_the_parameters_by_the_clipped_gradient_sum():
    # At zero parameters softmax gives p = (1/2, 1/2). Cross-entropy gradients: A: weight 0,
    # bias (-1/2, 1/2), norm 0.71 < C = 1 (kept); B: weight [[1/2, 1/2], [-1/2, -1/2]], bias
    # (1/2, -1/2), norm sqrt(1.5) = 1.22 > 1, scaled by 1/1.22. One step with lr = 1 and
    # expected_batch_size = 4 gives -(sum of clipped gradients + N(0, (sigma C)^2)) / 4.
    b = 1 / math.sqrt(1.5)
    clipped_sum = np.array([b / 2, b / 2, -b / 2, -b / 2, -0.5 + b / 2, 0.5 - b / 2])
    n = 600
    out = draw(step(), DATA, n, np.random.default_rng(0))
    assert out.shape == (n, 6)  # weight (2 x 2, row-major) then bias
    sd = 0.5 * 1.0 / 4
    np.testing.assert_array_less(np.abs(out.mean(axis=0) + clipped_sum / 4), 5 * sd / math.sqrt(n))
    np.testing.assert_allclose(out.std(axis=0) / sd, 1, atol=0.15)
    corr = np.corrcoef(out.T)[np.triu_indices(6, 1)]
    assert np.abs(corr).max() < 0.2  # independent noise per coordinate


def test_runs_are_reproducible_from_the_seed():
    mech = step()
    a = draw(mech, DATA, 20, np.random.default_rng(7))
    b = draw(mech, DATA, 20, np.random.default_rng(7))
    c = draw(mech, DATA, 20, np.random.default_rng(8))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert len(np.unique(a[:, 0])) == 20  # fresh noise for every run


def test_every_run_restarts_from_the_same_parameters():
    # A module instance (not a builder) with nonzero parameters: it is copied, never trained in place.
    model = torch.nn.Linear(2, 2)
    start = [p.detach().clone() for p in model.parameters()]
    mech = OpacusMechanism(model, max_grad_norm=1.0, expected_batch_size=1, noise_multiplier=1e-6, lr=1.0)
    out = draw(mech, DATA, 5, np.random.default_rng(0))
    np.testing.assert_allclose(out, np.repeat(out[:1], 5, axis=0), atol=1e-5)  # no noise, no drift
    for p, p0 in zip(model.parameters(), start):
        assert torch.equal(p, p0)
    # A builder returning random parameters: the first model built is the public start.
    builder_mech = OpacusMechanism(lambda: torch.nn.Linear(2, 2), max_grad_norm=1.0, expected_batch_size=1,
                                   noise_multiplier=1e-6)
    first = draw(builder_mech, DATA, 2, np.random.default_rng(0))
    second = draw(builder_mech, DATA, 2, np.random.default_rng(0))
    np.testing.assert_allclose(first, second, atol=1e-5)


def test_several_steps_and_custom_loss_and_output():
    def mse(outputs, targets):
        return torch.nn.functional.mse_loss(outputs[:, 0], targets)

    mech = OpacusMechanism(lambda: zero_linear(2, 1), max_grad_norm=10.0, expected_batch_size=2,
                           noise_multiplier=1e-6, steps=60, lr=0.2, loss=mse)
    data = np.array([[1.0, 0.0, 3.0], [0.0, 1.0, -1.0]])
    out = draw(mech, data, 3, np.random.default_rng(0))
    assert out.shape == (3, 3)  # two weights and a bias
    # No clipping (gradient norms <= 2 * 3 * sqrt(2) < C = 10) and negligible noise: 60 steps of
    # gradient descent on the mean squared error fit both examples: w1 + b = 3 and w2 + b = -1.
    predictions = out[:, :2] + out[:, 2:]
    np.testing.assert_allclose(predictions, [[3.0, -1.0]] * 3, atol=0.05)
    one_step = OpacusMechanism(lambda: zero_linear(2, 1), max_grad_norm=10.0, expected_batch_size=2,
                               noise_multiplier=1e-6, steps=1, lr=0.2, loss=mse)
    assert np.abs(draw(one_step, data, 1, np.random.default_rng(0)) - out[:1]).max() > 0.5


def test_canary_loss_output():
    mech = step(output=canary_loss([1.0, 1.0], 1), noise_multiplier=1e-6)
    out = draw(mech, DATA, 4, np.random.default_rng(0))
    assert out.shape == (4, 1) and "canary_loss" in mech.name
    # After the step the canary's logit margin is 3 b / 2 / 4 (b = 1/1.22) in favour of class 1:
    # from the weight rows (b/4 * (1, 1) each way) and the bias (b/2 - 1/2 each way, over 4).
    b = 1 / math.sqrt(1.5)
    margin = (4 * b / 2 / 4) + 2 * (b / 2 - 0.5) / 4
    np.testing.assert_allclose(out[:, 0], math.log1p(math.exp(-margin)), rtol=1e-4)
    with pytest.raises(ValueError, match="class index"):
        canary_loss([1.0, 1.0], 0.5)
    with pytest.raises(ValueError, match="1-D"):
        canary_loss([[1.0]], 1)
    with pytest.raises(ValueError, match="callable"):
        canary_loss([1.0], 1, loss="hinge")


def test_calibration_and_accounting_use_opacus():
    from opacus.accountants.utils import get_noise_multiplier

    mech = OpacusMechanism(zero_linear, max_grad_norm=1.0, expected_batch_size=1, target_epsilon=2.0, target_delta=1e-5)
    assert mech.noise_multiplier_ is None  # calibrated on first use
    sigma = mech.calibrated_noise_multiplier()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus: "Optimal order is the largest alpha"
        assert sigma == get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=1.0, steps=1)
    eps = mech.accounted_epsilon(1e-5)
    assert 1.9 < eps <= 2.0
    three = OpacusMechanism(zero_linear, max_grad_norm=1.0, expected_batch_size=1, noise_multiplier=sigma, steps=3)
    assert 1.5 * eps < three.accounted_epsilon(1e-5) < 3 * eps  # RDP composition: about sqrt(3) times
    with pytest.raises(ValueError, match="delta"):
        mech.accounted_epsilon(0.0)


@pytest.mark.parametrize(
    "kwargs, error, shown",
    [
        (dict(noise_multiplier=1.0, target_epsilon=1.0, target_delta=1e-5), ValueError, "exactly one"),
        (dict(), ValueError, "exactly one"),
        (dict(target_epsilon=1.0), ValueError, "target_delta"),
        (dict(noise_multiplier=-1.0), ValueError, "noise_multiplier"),
        (dict(noise_multiplier=1.0, max_grad_norm=0.0), ValueError, "max_grad_norm"),
        (dict(noise_multiplier=1.0, expected_batch_size=2.5), ValueError, "expected_batch_size"),
        (dict(noise_multiplier=1.0, steps=0), ValueError, "steps"),
        (dict(noise_multiplier=1.0, lr=float("nan")), ValueError, "lr"),
        (dict(noise_multiplier=1.0, accountant="moments"), ValueError, "accountant"),
        (dict(noise_multiplier=1.0, loss="hinge"), ValueError, "loss"),
        (dict(noise_multiplier=1.0, output="gradients"), TypeError, "output"),
        (dict(noise_multiplier=1.0, num_threads=0), ValueError, "num_threads"),
        (dict(noise_multiplier=1.0, expected_batch_size="ten"), ValueError, "expected_batch_size"),
        (dict(target_epsilon=1.0, target_delta="1e-5"), ValueError, "target_delta"),
    ],
)
def test_constructor_validation(kwargs, error, shown):
    args = dict(max_grad_norm=1.0, expected_batch_size=1)
    args.update(kwargs)
    with pytest.raises(error, match=shown):
        OpacusMechanism(zero_linear, **args)


def test_bad_datasets_and_models_are_mechanism_errors():
    mech = step()
    with pytest.raises(MechanismError, match="not a class index"):
        draw(mech, np.array([[0.0, 0.0, 0.5]]), 2, np.random.default_rng(0))
    with pytest.raises(MechanismError, match="at least one example"):
        draw(mech, np.empty((0, 3)), 2, np.random.default_rng(0))
    with pytest.raises(MechanismError, match="not a torch.nn.Module"):
        draw(OpacusMechanism(lambda: 3, max_grad_norm=1.0, expected_batch_size=1, noise_multiplier=1.0), DATA, 2,
             np.random.default_rng(0))
    with pytest.raises(TypeError, match="model"):
        OpacusMechanism(3, max_grad_norm=1.0, expected_batch_size=1, noise_multiplier=1.0)


def test_torch_threads_are_restored():
    before = torch.get_num_threads()
    draw(step(num_threads=1), DATA, 2, np.random.default_rng(0))
    assert torch.get_num_threads() == before


def test_missing_opacus_gives_an_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "opacus", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'dpaudit\[opacus\]'") as info:
        import_opacus()
    assert isinstance(info.value, DPAuditError) and isinstance(info.value, ImportError)
    with pytest.raises(MechanismError, match=r"pip install 'dpaudit\[opacus\]'"):
        draw(step(), DATA, 2, np.random.default_rng(0))


# --- the example module -----------------------------------------------------------------------


def test_example_objects_and_hints():
    from dpaudit.examples import opacus_sgd as ex

    mechs = (ex.dp_sgd_step, ex.stale_noise_step, ex.dp_sgd_canary_loss, ex.stale_noise_canary_loss)
    for mech in mechs:
        assert isinstance(mech, Mechanism) and isinstance(mech.neighbouring, LabelledAddRemove)
        for d0, d1 in ex.WITNESS_PAIRS:
            mech.neighbouring.pair(d0, d1)
    # sigma from Opacus's RDP accountant: 4.06 for (1, 1e-5), 0.638 for the stale epsilon 8
    assert ex.dp_sgd_step.calibrated_noise_multiplier() == pytest.approx(4.0625, rel=0.02)
    assert ex.stale_noise_step.calibrated_noise_multiplier() == pytest.approx(0.638, rel=0.02)
    assert ex.dp_sgd_step.accounted_epsilon(ex.DELTA) <= ex.EPSILON
    assert ex.stale_noise_step.accounted_epsilon(ex.DELTA) > 7.5


def test_example_witness_shift_is_the_full_clip_bound():
    # With negligible noise the two datasets' outputs differ by lr * C / expected_batch_size.
    from dpaudit.examples import opacus_sgd as ex

    quiet = OpacusMechanism(ex.linear_model, max_grad_norm=ex.MAX_GRAD_NORM, expected_batch_size=ex.EXPECTED_BATCH_SIZE,
                            noise_multiplier=1e-7)
    d0, d1 = (np.array(d) for d in ex.WITNESS_PAIRS[0])
    shift = draw(quiet, d1, 1, np.random.default_rng(0)) - draw(quiet, d0, 1, np.random.default_rng(0))
    assert np.linalg.norm(shift) == pytest.approx(ex.MAX_GRAD_NORM / ex.EXPECTED_BATCH_SIZE, rel=1e-4)
    out = draw(ex.stale_noise_step, d0, 400, np.random.default_rng(0))
    sd = 0.6378 * ex.MAX_GRAD_NORM / ex.EXPECTED_BATCH_SIZE
    np.testing.assert_allclose(out.std(axis=0) / sd, 1, atol=0.2)


def _witness_audit(mech, samples, seed):
    pairs = [mech.neighbouring.pair(d0, d1) for d0, d1 in mech.witness_pairs]
    return audit(mech, ApproxDP(1.0, 1e-5), GridFinder(pairs), num_samples=samples, trials=len(pairs), beta=0.01,
                 seed=seed, tester=HockeyStickTester())  # (its detection; the default also screens float bits)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["stale_noise_step", "stale_noise_canary_loss"])
def test_stale_noise_is_flagged_at_the_witness_pair(name):
    from dpaudit.examples import opacus_sgd as ex

    result = _witness_audit(getattr(ex, name), 3000, seed=0)
    assert result.violation, result.to_dict()["evidence"]
    # exact delta at epsilon 1 of the Gaussian mechanism with mu = 1 / 0.638: 0.347
    assert 0.1 < result.strongest.outcome.delta_lower_bound < 0.36


@pytest.mark.slow
def test_dp_sgd_step_is_not_flagged_at_the_witness_pair():
    from dpaudit.examples import opacus_sgd as ex

    result = _witness_audit(ex.dp_sgd_step, 5000, seed=1)
    assert not result.violation, result.to_dict()["evidence"]

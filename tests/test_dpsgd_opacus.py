"""OpacusCanaries: gradient canaries riding on a real Opacus DPOptimizer."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")
pytest.importorskip("sklearn")

from dpaudit.dpsgd import load_digits_task  # noqa: E402
from dpaudit.dpsgd.opacus import OpacusCanaries  # noqa: E402

logging.getLogger("absl").setLevel(logging.ERROR)


def _opacus_loop(noise=2.0, clip=1.0, batch=20, n=200, epochs=2, canaries=1500, seed=0, canary_kind="dirac",
                 reseed_noise=False, hook_class=OpacusCanaries):
    from opacus import PrivacyEngine

    warnings.filterwarnings("ignore")
    x, y = load_digits_task(num_train=n, seed=seed)
    data = torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y))
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(64, 16), torch.nn.Tanh(), torch.nn.Linear(16, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    loader = torch.utils.data.DataLoader(data, batch_size=batch)
    engine = PrivacyEngine()
    model, opt, loader = engine.make_private(module=model, optimizer=opt, data_loader=loader, noise_multiplier=noise,
                                             max_grad_norm=clip, poisson_sampling=True)
    hook = hook_class(opt, canaries=canaries, sampling_rate=batch / n, seed=seed, canary_kind=canary_kind)
    for _ in range(epochs):
        for xb, yb in loader:
            if reseed_noise:  # the bug: a noise generator re-created in the loop (state shared across steps)
                opt.generator = torch.Generator().manual_seed(1234)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            hook.step()
    return hook, engine


def test_opacus_canaries_see_what_the_accountant_assumes():
    hook, engine = _opacus_loop(clip=2.0)
    o, part = np.array(hook.observations), np.array(hook.participation)
    assert o.shape == (20, 1500) and not part[:, ~hook.mask].any()
    assert abs(o[part].mean() - 1.0) < 0.1  # clipped canary = C, in units of C
    assert abs(o[:, ~hook.mask].std() - 2.0) < 0.05  # Opacus's noise multiplier
    assert float(hook.block.detach().abs().sum()) == 0.0  # the block never moves (learning rate 0)
    a = hook.audit(delta=1e-5)
    assert a.variant == "opacus" and not a.violated
    assert abs(a.accountant_epsilon - engine.get_epsilon(1e-5)) / a.accountant_epsilon < 0.05
    assert "accountant epsilon" in a.summary() and "estimate" in a.summary()


class _FreshRowsCanaries(OpacusCanaries):
    """The hook's rows built afresh at every step (the definition its kept buffers must match)."""

    def _with_zero_rows(self, p, gs, k):
        return torch.cat([gs, gs.new_zeros((k, *gs.shape[1:]))], dim=0)

    def _block_rows(self, like, batch, chosen):
        rows = like.new_zeros((batch + chosen.size, self.m))
        rows[torch.arange(batch, batch + chosen.size), torch.as_tensor(chosen)] = torch.as_tensor(
            self.canary_norm * self._sign[chosen], dtype=rows.dtype)
        return rows


def test_kept_row_buffers_observe_exactly_what_fresh_rows_do():
    # Poisson batches of varying size (rows of real gradients left over from a larger batch must
    # be zeroed again), q = 0.1: the same seeds give the same observations bit for bit.
    kept, _ = _opacus_loop(canaries=300, epochs=2, canary_kind="signed")
    fresh, _ = _opacus_loop(canaries=300, epochs=2, canary_kind="signed", hook_class=_FreshRowsCanaries)
    assert len({int(p.sum()) for p in kept.participation}) > 1
    assert np.array_equal(np.array(kept.observations), np.array(fresh.observations))
    assert np.array_equal(np.array(kept.participation), np.array(fresh.participation))


def test_opacus_canaries_refuse_a_plain_optimizer_and_an_empty_run():
    model = torch.nn.Linear(3, 2)
    with pytest.raises(TypeError, match="DPOptimizer"):
        OpacusCanaries(torch.optim.SGD(model.parameters(), lr=0.1))
    from opacus.optimizers import DPOptimizer

    opt = DPOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), noise_multiplier=1.0, max_grad_norm=1.0,
                      expected_batch_size=4)
    hook = OpacusCanaries(opt, canaries=10)
    with pytest.raises(ValueError, match="no step"):
        hook.audit()
    with pytest.raises(ValueError):
        OpacusCanaries(opt, canaries=1)


def test_signed_canaries_in_opacus_catch_a_noise_generator_reseeded_every_step():
    """q = 1, 10 steps, accountant epsilon 2: a user loop that re-creates Opacus's noise
    generator with a fixed seed before every step adds the same noise at every step. Dirac
    canaries are constant too and cancel with it; canaries with a random sign per step are seen
    exactly by the whitened score from one run. The correct loop with the same canaries is not
    accused, and its sign-corrected observations are the Dirac canaries' (mean C, noise sigma)."""
    from dpaudit.dpsgd import noise_for_epsilon

    sigma = noise_for_epsilon(2.0, 1e-5, 1.0, 10)
    kw = dict(noise=sigma, batch=100, n=100, epochs=10, canaries=2000)
    bug, _ = _opacus_loop(canary_kind="signed", reseed_noise=True, **kw)
    a = bug.audit(delta=1e-5)
    assert a.violated and a.epsilon_lower_bound > a.accountant_epsilon + 1.0, a.summary()
    ok, _ = _opacus_loop(canary_kind="signed", **kw)
    run = ok.run()
    assert run.pattern.shape == (10, 2000) and set(np.unique(run.pattern)) == {-1.0, 1.0}
    o = run.observations * run.pattern
    assert abs(o[run.participation].mean() - 1.0) < 0.2 and abs(o[:, ~run.mask].std() / sigma - 1.0) < 0.05
    fine = ok.audit(delta=1e-5)
    assert not fine.violated
    # the estimates read the sign-corrected observations (raw ones average to 0 on included canaries)
    assert 0.5 < fine.epsilon_estimate_fit / fine.accountant_epsilon < 1.5, fine.summary()
    with pytest.raises(ValueError, match="canary_kind"):
        OpacusCanaries(ok.optimizer, canaries=10, canary_kind="input")

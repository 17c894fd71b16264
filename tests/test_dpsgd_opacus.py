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
    for kw in ({}, {"canary_kind": "signed"}):  # the multi-kind default, the single-kind hook
        hook = OpacusCanaries(opt, canaries=10, **kw)
        assert (hook.engine is None) == bool(kw)
        with pytest.raises(ValueError, match="no step"):
            hook.audit()
        with pytest.raises(ValueError):
            OpacusCanaries(opt, canaries=1, **kw)
    with pytest.raises(ValueError, match="not both"):
        OpacusCanaries(opt, canaries=10, kinds="default", canary_kind="signed")


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


def _clip_factors(opt, per_layer: bool, skip_last: bool):
    """Per-sample clip factors as a buggy DPOptimizer computes them: one per tensor (per-layer
    clipping to C each) or one overall; with the batch's last row left unclipped (off by one)."""
    gs = opt.grad_samples
    if per_layer:
        return [(opt.max_grad_norm / (g.reshape(len(g), -1).norm(dim=1) + 1e-6)).clamp(max=1.0) for g in gs]
    norms = torch.stack([g.reshape(len(g), -1).norm(dim=1) for g in gs], dim=1).norm(dim=1)
    f = (opt.max_grad_norm / (norms + 1e-6)).clamp(max=1.0)
    if skip_last and len(f):
        f[-1] = 1.0
    return [f] * len(gs)


def _buggy_optimizer(per_layer=False, skip_last=False):
    from opacus.optimizers import DPOptimizer

    class Buggy(DPOptimizer):
        def clip_and_accumulate(self):
            for p, f in zip(self.params, _clip_factors(self, per_layer, skip_last)):
                grad = torch.einsum("i,i...", f.to(p.dtype), self._get_flat_grad_sample(p).to(p.dtype))
                p.summed_grad = grad if p.summed_grad is None else p.summed_grad + grad

    return Buggy


def _opacus_kinds_loop(kinds, *, bug=None, widths=(64, 32, 32, 32, 32, 32, 32, 10), noise=6.30859375 * 0.5 ** 0.5, n=50,
                       steps=5, canaries=2000, seed=0, monitor=False, **canary_kw):
    """An Opacus loop at q = 1 (every example in every step; epsilon 2 at delta 1e-5 for 5 steps at
    this noise), with the multi-kind canaries; ``bug``: a DPOptimizer subclass swapped in."""
    from opacus import PrivacyEngine

    warnings.filterwarnings("ignore")
    x, y = load_digits_task(num_train=n, seed=seed)
    data = torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y))
    torch.manual_seed(seed)
    layers = []
    for a, b in zip(widths[:-1], widths[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.Tanh()]
    model = torch.nn.Sequential(*layers[:-1])
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    loader = torch.utils.data.DataLoader(data, batch_size=n)
    model, opt, loader = PrivacyEngine().make_private(module=model, optimizer=opt, data_loader=loader,
                                                      noise_multiplier=noise, max_grad_norm=1.0, poisson_sampling=False)
    if bug is not None:
        opt.__class__ = bug
    hook = OpacusCanaries(opt, canaries=canaries, sampling_rate=1.0, seed=seed, kinds=kinds, **canary_kw)
    if monitor:
        hook.monitor(steps=steps)
    for _ in range(steps):
        for xb, yb in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            hook.step()
    return hook


def test_multi_kind_canaries_in_opacus_see_per_layer_and_position_dependent_clipping():
    """Opacus's own DPOptimizer with the default kinds is not accused; a subclass clipping each of
    the 14 tensors on its own (noise for one overall norm; true epsilon 9.2 vs 2.0) is caught by
    spread canaries, one leaving the batch's last row unclipped by the large canaries placed at
    random positions (the clipping check: an observation near 1000 C / sigma)."""
    ok = _opacus_kinds_loop("default", canaries=1500).audit()
    assert not ok.violated and set(ok.audits) == {"pooled", "spread"} and ok.pooled == ("dirac", "split", "large"), \
        ok.summary()
    per_layer = _opacus_kinds_loop(("spread",), bug=_buggy_optimizer(per_layer=True)).audit()
    assert per_layer.violated and per_layer.epsilon_lower_bound > per_layer.accountant_epsilon, per_layer.summary()
    last = _opacus_kinds_loop(("dirac", "large"), bug=_buggy_optimizer(skip_last=True), canaries=300).audit()
    assert last.violated and last.clipping["max_excess"] > 100, last.summary()


@pytest.mark.parametrize("sampler", ["poisson", "shuffle", "whole-q1", "replacement-q1"])
def test_data_canaries_in_opacus_go_through_its_loader(sampler):
    """Data canaries are entries of the user's dataset; Opacus's loader draws them. Its Poisson
    DPDataLoader passes the sampler check; a plain shuffled DataLoader (fixed-size batches, every
    example once per epoch) accounted as Poisson at rate batch / N does not. At q = 1 the whole
    dataset in every step (a plain DataLoader with ``batch_size=N``, ``poisson_sampling=False``)
    passes, and a loader drawing N examples with replacement (``RandomSampler(replacement=True)``)
    is caught at q = 1 too (some data canary missing or twice in a step; twice also doubles its
    contribution, which the clipping check sees)."""
    from opacus import PrivacyEngine

    warnings.filterwarnings("ignore")
    n, extra = 100, 300
    q1 = sampler.endswith("q1")
    batch = n + extra if q1 else 40
    x, y = load_digits_task(num_train=n, seed=0)
    xs = torch.cat([torch.tensor(x), torch.zeros(extra, 64)])  # placeholders: dpaudit supplies their rows
    ys = torch.cat([torch.tensor(y), torch.zeros(extra, dtype=torch.long)])
    data = torch.utils.data.TensorDataset(xs, ys, torch.arange(n + extra))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 16), torch.nn.Tanh(), torch.nn.Linear(16, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    if sampler == "replacement-q1":
        draw = torch.utils.data.RandomSampler(data, replacement=True, num_samples=n + extra,
                                              generator=torch.Generator().manual_seed(0))
        loader = torch.utils.data.DataLoader(data, batch_size=batch, sampler=draw)
    else:
        loader = torch.utils.data.DataLoader(data, batch_size=batch, shuffle=sampler == "shuffle")
    model, opt, loader = PrivacyEngine().make_private(module=model, optimizer=opt, data_loader=loader,
                                                      noise_multiplier=1.5, max_grad_norm=1.0,
                                                      poisson_sampling=sampler == "poisson")
    hook = OpacusCanaries(opt, canaries=400, sampling_rate=batch / (n + extra), seed=0, kinds=("dirac", "data"),
                          dataset_size=n, data_canaries=extra)
    for _ in range(3):
        for xb, yb, ib in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            hook.step(batch_indices=ib)
    a = hook.audit()
    assert a.sampler is not None and a.violated == (sampler in ("shuffle", "replacement-q1")), a.summary()
    if a.violated:  # with replacement a data canary drawn twice also contributes 2 C (the clipping mean)
        assert "sampler" in {f.check for f in a.violations}, a.summary()
    run = hook.engine.runs()["data"]
    assert run.participation.sum() > 0 and not run.participation[:, ~run.mask].any()


def test_opacus_monitor_stops_per_layer_clipping_early_and_keeps_the_dedicated_tensors_still():
    """OpacusCanaries with the default kinds on a 4-tensor model: the dedicated tensors are
    parameters Opacus clips, noises and scales with the model's (learning rate 0: they never move);
    the online audit stops a DPOptimizer subclass that clips each tensor on its own at its first
    checkpoint with enough evidence (split canaries: sqrt(4) C instead of C), and lets Opacus's own
    optimizer run to the end."""
    from dpaudit.dpsgd import DPSGDViolation

    ok = _opacus_kinds_loop("default", canaries=600, widths=(64, 16, 10), steps=8, monitor=True)
    assert len(ok.blocks) == 4 and all(float(b.detach().abs().sum()) == 0.0 for b in ok.blocks)
    assert ok.engine._monitor.steps_checked == 8 and not ok.engine._monitor.violated
    with pytest.raises(DPSGDViolation) as err:  # split canaries see it; the coupling check's crowd plays no part
        _opacus_kinds_loop("default", bug=_buggy_optimizer(per_layer=True), canaries=600, widths=(64, 16, 10),
                           steps=8, monitor=True, crowd=0)
    assert err.value.check == "clipping" and "split" in str(err.value) and err.value.step < 8
    with pytest.raises(ValueError, match="multi-kind"):
        OpacusCanaries(ok.optimizer, canaries=10, canary_kind="signed").monitor()


def test_opacus_adaptive_clipping_is_read_at_every_step():
    """Opacus's ``AdaClipDPOptimizer`` (``make_private(clipping="adaptive")``, Andrew et al. 2021)
    changes its clipping norm after every step's noise; ``OpacusCanaries`` reads the norm before each
    step and observes in units of it (``Canaries.begin_step(max_grad_norm=)``), so the correct run is
    not accused (with the first step's norm throughout, its noise would look too small once the norm
    fell: ``test_dpsgd_canaries.py::test_a_clipping_norm_that_changes_every_step``)."""
    from opacus import PrivacyEngine

    warnings.filterwarnings("ignore")
    n, steps, noise = 50, 10, 6.30859375  # epsilon 2 at delta 1e-5, q = 1, 10 steps
    x, y = load_digits_task(num_train=n, seed=1)
    data = torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y))
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 16), torch.nn.Tanh(), torch.nn.Linear(16, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    loader = torch.utils.data.DataLoader(data, batch_size=n)
    model, opt, loader = PrivacyEngine().make_private(
        module=model, optimizer=opt, data_loader=loader, noise_multiplier=noise, max_grad_norm=1.0,
        poisson_sampling=False, clipping="adaptive", target_unclipped_quantile=0.1, clipbound_learning_rate=0.2,
        max_clipbound=10.0, min_clipbound=0.1, unclipped_num_std=5.0)  # Opacus needs noise < 2 * unclipped_num_std
    opt.generator = torch.Generator().manual_seed(1)
    hook = OpacusCanaries(opt, canaries=600, sampling_rate=1.0, seed=1)
    norms = []
    for _ in range(steps):
        for xb, yb in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            norms.append(float(opt.max_grad_norm))
            hook.step()
    assert hook.engine.clip_norms == norms and len(set(norms)) == steps  # a new norm at every step
    a = hook.audit()
    assert not a.violated, a.summary()

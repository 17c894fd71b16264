"""DP-SGD with gradient canaries (dpaudit.dpsgd): the reference is never accused beyond beta, each
bug of the zoo that one run can show is shown, the estimates track the accountant, bad input."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")

from dpaudit.accounting import Composition, get_epsilon  # noqa: E402
from dpaudit.dpsgd import (  # noqa: E402
    VARIANTS,
    DPSGDConfig,
    audit_run,
    canary_scores,
    noise_for_epsilon,
    train_with_canaries,
)

logging.getLogger("absl").setLevel(logging.ERROR)

DELTA = 1e-5


@pytest.fixture(scope="module")
def data():
    from dpaudit.dpsgd import load_digits_task

    return load_digits_task(num_train=200, seed=0)


def test_noise_for_epsilon_is_the_smallest_noise_within_the_target():
    sigma = noise_for_epsilon(2.0, DELTA, 1.0, 10)
    assert get_epsilon(Composition.dpsgd(sigma, 1.0, 10), DELTA).epsilon <= 2.0
    assert get_epsilon(Composition.dpsgd(0.99 * sigma, 1.0, 10), DELTA).epsilon > 2.0


def test_reference_run_observes_the_canaries_as_the_accountant_assumes(data):
    cfg = DPSGDConfig(noise_multiplier=2.0, sampling_rate=0.2, steps=30)
    run = train_with_canaries(cfg, canaries=3000, data=data, seed=3)
    o, part, mask = run.observations, run.participation, run.mask
    assert o.shape == (30, 3000) and not part[:, ~mask].any()
    assert abs(part[:, mask].mean() - 0.2) < 0.01  # Poisson rate q for included canaries
    assert abs(o[part].mean() - 1.0) < 0.05 and abs(o[~part].mean()) < 0.02  # signal C/C = 1 where sampled
    assert abs(o[:, ~mask].std() - 2.0) < 0.03  # noise sigma (in units of C)
    assert 0.3 < mask.mean() < 0.7


@pytest.mark.parametrize("q,steps", [(1.0, 10), (0.2, 50)])
def test_estimates_track_the_accountant_on_the_reference(data, q, steps):
    sigma = noise_for_epsilon(2.0, DELTA, q, steps)
    run = train_with_canaries(DPSGDConfig(noise_multiplier=sigma, sampling_rate=q, steps=steps), canaries=5000,
                              data=data, seed=1)
    a = audit_run(run, delta=DELTA)
    assert abs(a.epsilon_estimate_fit / a.accountant_epsilon - 1.0) < 0.1, a.epsilon_estimate_fit
    # The histogram PLD estimate errs high on a few thousand observations per step (sparse bins
    # give large empirical losses; docs/dpsgd.md): within [0.8, 1.6] x.
    assert 0.8 < a.epsilon_estimate_pld / a.accountant_epsilon < 1.6, a.epsilon_estimate_pld
    assert not a.violated and 0 < a.epsilon_lower_bound < a.accountant_epsilon
    d = a.to_dict()
    assert d["variant"] == "correct" and set(d["one_run"]) == {"lr", "spread", "whitened"}


@pytest.mark.parametrize("variant,q,steps,clip", [
    ("no-clipping", 1.0, 10, 1.0),
    ("noise-not-scaled", 1.0, 10, 4.0),
    ("no-clipping", 0.2, 50, 1.0),
    ("noise-not-scaled", 0.2, 50, 4.0),
    ("noise-reused", 0.2, 50, 1.0),
])
def test_one_run_shows_each_bug(data, variant, q, steps, clip):
    """One run with 5,000 canaries certifies more than the accountant's epsilon 1 for each bug
    whose true loss is far above it."""
    sigma = noise_for_epsilon(1.0, DELTA, q, steps)
    cfg = DPSGDConfig(noise_multiplier=sigma, sampling_rate=q, steps=steps, max_grad_norm=clip)
    a = audit_run(train_with_canaries(cfg, canaries=5000, variant=variant, data=data, seed=0), delta=DELTA)
    assert a.violated, (a.epsilon_lower_bound, a.accountant_epsilon)


@pytest.mark.slow
@pytest.mark.parametrize("q,steps", [(1.0, 5), (0.2, 20)])
def test_the_reference_is_not_accused_beyond_beta(data, q, steps):
    """60 seeded runs of the reference at accountant epsilon 1 and beta = 0.2 (2,000 canaries):
    the certified bound exceeds the accountant's epsilon in at most a beta fraction of them."""
    sigma = noise_for_epsilon(1.0, DELTA, q, steps)
    cfg = DPSGDConfig(noise_multiplier=sigma, sampling_rate=q, steps=steps)
    acc = get_epsilon(cfg.composition(), DELTA)
    accused = 0
    runs = 60
    for seed in range(runs):
        run = train_with_canaries(cfg, canaries=2000, data=data, seed=100 + seed)
        accused += audit_run(run, delta=DELTA, beta=0.2, accountant=acc, seed=seed).violated
    assert accused <= 0.2 * runs


def test_variants_and_scores_reject_bad_input(data):
    cfg = DPSGDConfig(noise_multiplier=1.0)
    with pytest.raises(ValueError, match="variant"):
        train_with_canaries(cfg, variant="buggy", data=data)
    with pytest.raises(ValueError, match="canaries"):
        train_with_canaries(cfg, canaries=1, data=data)
    with pytest.raises(ValueError, match="shape"):
        train_with_canaries(cfg, data=(np.zeros((5, 3)), np.zeros(4)))
    with pytest.raises(ValueError, match="score kind"):
        canary_scores(np.zeros((2, 3)), 1.0, 1.0, "max")
    with pytest.raises(ValueError, match="finite"):
        canary_scores(np.full((2, 3), np.nan), 1.0, 1.0)
    with pytest.raises(ValueError):
        DPSGDConfig(noise_multiplier=-1.0)
    with pytest.raises(ValueError):
        DPSGDConfig(noise_multiplier=1.0, sampling_rate=1.5)
    run = train_with_canaries(cfg, canaries=10, data=data)
    with pytest.raises(ValueError, match="scores"):
        audit_run(run, scores=("lr", "best"))
    assert set(VARIANTS) >= {"correct", "no-clipping", "noise-not-scaled", "noise-reused", "shuffled-batches"}


def test_reference_without_canaries_is_the_baseline_of_their_cost(data):
    cfg = DPSGDConfig(noise_multiplier=1.0, sampling_rate=0.2, steps=20)
    run = train_with_canaries(cfg, canaries=0, data=data)
    assert run.observations.shape == (20, 0) and run.mask.size == 0 and run.details["canary_block"] == 0
    assert run.train_accuracy > 0.5  # it trains like the run with canaries
    with pytest.raises(ValueError, match="canaries"):
        train_with_canaries(cfg, canaries=0, canary_kind="random", data=data)


def test_lr_score_is_the_sum_at_full_participation():
    o = np.random.default_rng(0).normal(size=(7, 50))
    lr = canary_scores(o, 2.0, 1.0, "lr")
    assert np.allclose(lr, (o - 0.5).sum(axis=0) / 4.0)
    assert np.array_equal(np.argsort(lr), np.argsort(canary_scores(o, 2.0, 1.0, "sum")))
    assert math.isfinite(canary_scores(o * 100, 0.1, 0.01, "lr").max())  # no overflow


def test_fitted_estimate_composes_like_the_accountant_within_one_percent():
    # The fitted per-step mechanism is composed by a cheaper, uncertified PLD (an estimate): it
    # stays within 1 % of the certified accountant (and errs high, like a pessimistic PLD).
    from dpaudit.dpsgd.audit import _composed_epsilon_estimate

    for sigma, q, steps in [(3.42, 1.0, 10), (11.8, 1.0, 10), (1.1, 0.05, 200), (50.0, 0.2, 30)]:
        comp = Composition.dpsgd(sigma, q, steps)
        (est, note), acc = _composed_epsilon_estimate(comp, DELTA, sigma=sigma, q=q, steps=steps), get_epsilon(comp, DELTA).epsilon
        assert note == "", note
        assert acc <= est <= 1.01 * acc, (sigma, q, steps, est, acc)


def test_scores_with_an_all_plus_pattern_are_the_scores_without_one():
    rng = np.random.default_rng(3)
    o = rng.normal(size=(9, 300))
    for kind in ("lr", "sum", "whitened", "spread"):
        plain = canary_scores(o, 1.5, 0.3, kind)
        assert np.array_equal(plain, canary_scores(o, 1.5, 0.3, kind, np.ones((9, 300))))
        assert np.array_equal(plain, canary_scores(o, 1.5, 0.3, kind, np.ones(9)))


def test_epsilon_plot_draws_bounds_against_the_accountant(tmp_path):
    from dpaudit.dpsgd import epsilon_plot

    rows = [{"accountant": 2.0, "lb": 0.8, "fit": 1.9, "q": 1.0, "m": 10000},
            {"accountant": 2.0, "lb": 3.9, "q": 0.05, "m": 10000, "violated": True}]
    png = epsilon_plot(rows)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    epsilon_plot(rows, tmp_path / "e.svg")
    assert (tmp_path / "e.svg").read_text().lstrip().startswith("<?xml")
    with pytest.raises(ValueError, match="positive accountant"):
        epsilon_plot([{"accountant": 0.0, "lb": 1.0}])
    # DPSGDAudit objects too (their fit is a dict; the estimate is epsilon_estimate_fit)
    from dpaudit.dpsgd import DPSGDConfig, audit_run, train_with_canaries

    a = audit_run(train_with_canaries(DPSGDConfig(noise_multiplier=3.0, steps=5), canaries=200, seed=0))
    assert epsilon_plot([a, rows[0]])[:8] == b"\x89PNG\r\n\x1a\n"


def test_train_many_vectorised_runs_and_their_audit():
    from dpaudit.dpsgd.many import audit_many, train_many

    cfg = DPSGDConfig(noise_multiplier=2.0, sampling_rate=1.0, steps=4, learning_rate=5.0)
    r = train_many(cfg, runs=600, seed=1, chunk=200)
    assert r.black_box_in.shape == (300,) and r.white_box_out.shape == (300,)
    assert r.white_box_in.mean() > r.white_box_out.mean() and r.black_box_in.mean() > r.black_box_out.mean()
    a = audit_many(r)
    assert not a["white_box"]["violated"] and not a["black_box"]["violated"]
    assert 0 < a["white_box"]["epsilon_lower_bound"] < a["accountant_epsilon"]
    # Unclipped canary of norm 4C: true mu 4 x the accounted sqrt(4)/6 (epsilon ~1.3 -> ~8).
    bug = audit_many(train_many(DPSGDConfig(noise_multiplier=6.0, sampling_rate=1.0, steps=4, learning_rate=5.0),
                                runs=2000, variant="no-clipping", seed=1, chunk=500))
    assert bug["white_box"]["violated"], bug
    with pytest.raises(ValueError, match="variant"):
        train_many(cfg, runs=10, variant="buggy")
    with pytest.raises(ValueError, match="runs"):
        train_many(cfg, runs=2)


@pytest.mark.parametrize("kind", ["random", "input"])
def test_random_direction_and_input_canaries(data, kind):
    cfg = DPSGDConfig(noise_multiplier=2.0, sampling_rate=0.5, steps=6)
    run = train_with_canaries(cfg, canaries=300, canary_kind=kind, data=data, seed=2)
    assert run.observations.shape == (6, 300) and np.all(np.isfinite(run.observations))
    assert run.details["canary_block"] == 0 and run.details["canary_kind"] == kind
    if kind == "input":
        assert run.final_scores.shape == (300,) and np.all(run.final_scores <= 0)
        a = audit_run(run, scores=("lr", "final"))
        assert set(a.one_run) == {"lr", "final"} and not a.violated
    else:
        assert run.final_scores is None
        with pytest.raises(ValueError, match="input canaries"):
            audit_run(run, scores=("final",))
    with pytest.raises(ValueError, match="canary_kind"):
        train_with_canaries(cfg, canaries=10, canary_kind="pixel", data=data)


def _constructed_run(T, m, q, sigma_claimed, sigma_true, seed=0, **cfg):
    """A TrainingRun built from observations directly: included canaries sampled at rate q add 1
    (one clipping norm), noise sigma_true (a run whose noise is sigma_claimed / sigma_true too small)."""
    from dpaudit.dpsgd import TrainingRun

    rng = np.random.default_rng(seed)
    mask = rng.random(m) < 0.5
    part = (rng.random((T, m)) < q) & mask
    o = part + rng.normal(0.0, sigma_true, (T, m))
    config = DPSGDConfig(noise_multiplier=sigma_claimed, sampling_rate=q, steps=T, **cfg)
    return TrainingRun(observations=o, mask=mask, sampled=part.sum(axis=0), participation=part, config=config,
                       variant="constructed", seconds=0.0, train_accuracy=math.nan)


def test_blatant_bug_audit_is_bounded_and_its_estimates_are_never_bare():
    # Issue 35 item 5 at a smaller size: noise 350x too small, q = 0.05. Each estimate is finite and
    # labelled, or absent (nan, never inf) with a reason; below the certified bound it is flagged.
    sigma = 1.2
    a = audit_run(_constructed_run(100, 600, 0.05, sigma, sigma / 350), delta=DELTA)
    assert a.violated and a.epsilon_lower_bound > a.accountant_epsilon
    for which, v in (("fit", a.epsilon_estimate_fit), ("pld", a.epsilon_estimate_pld)):
        assert v != math.inf and v != 0.0, (which, v)
        text, note = a.estimate_text(which), a.estimate_notes[which]
        assert text.startswith("not computed: ") if math.isnan(v) else "estimate, no confidence statement" in text
        assert (v < a.epsilon_lower_bound) == ("below the certified lower bound" in note), (which, v, note)
    assert "coarsened" in a.estimate_notes["fit"]  # the fitted mechanism is nearly noiseless: 1e5 nats
    assert a.epsilon_estimate_fit > a.epsilon_lower_bound
    assert " inf" not in a.summary() and "estimate, no confidence statement" in a.summary()
    assert a.to_dict()["estimate_notes"] == a.estimate_notes
    # A flag in words, and how far below.
    from dpaudit.dpsgd.audit import _flag_below

    assert _flag_below(1.0, "", 6.6).startswith("far below the certified lower bound 6.6")
    assert _flag_below(5.0, "coarsened", 6.6).startswith("coarsened; below the certified")
    assert _flag_below(7.0, "", 6.6) == "" and _flag_below(math.nan, "x", 6.6) == "x"


def test_fitted_estimate_of_a_nearly_noiseless_mechanism_stays_within_memory(monkeypatch):
    # The path that blew up (5-21 GB at noise multiplier 0.005, q = 0.05, 200 steps): the composed PLD
    # of the fitted mechanism. Its peak traced allocation stays far below the uncapped FFT's size
    # (2.7e8 points on the coarsest grid, 4 GB per complex array).
    import tracemalloc

    from dpaudit.dpsgd import audit as audit_module

    sigma, q, steps = 0.005, 0.05, 200
    assert steps * audit_module._gaussian_loss_range(sigma, q) / audit_module._ESTIMATE_GRIDS[0] > 2e8
    tracemalloc.start()
    try:
        value, note = audit_module._composed_epsilon_estimate(Composition.dpsgd(sigma, q, steps), DELTA,
                                                              sigma=sigma, q=q, steps=steps)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 300 * 2**20, peak
    assert math.isfinite(value) and value > 1e4 and note.startswith("coarsened"), (value, note)
    # An estimate that runs out of memory says so: nan and a reason, never a silent inf.

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr("dpaudit.accounting._pld.build_pld", no_memory)
    a = audit_run(_constructed_run(5, 200, 1.0, 1.0, 1.0), delta=DELTA, scores=("lr",))
    assert math.isnan(a.epsilon_estimate_fit) and "out of memory" in a.estimate_notes["fit"]
    assert a.estimate_text("fit").startswith("not computed: out of memory")


def test_training_run_checks_its_fields_when_built():
    import dataclasses

    import torch

    from dpaudit.dpsgd import TrainingRun

    run = _constructed_run(6, 20, 0.5, 1.0, 1.0)
    o = run.observations.copy()
    o[3, 7] = np.nan
    with pytest.raises(ValueError, match=r"observations\[3, 7\] = nan .*step 3, canary 7"):
        dataclasses.replace(run, observations=o)
    with pytest.raises(ValueError, match="'mask' must hold 0/1"):
        dataclasses.replace(run, mask=np.full(20, 2))
    with pytest.raises(ValueError, match=r"'mask' must have shape \(20,\)"):
        dataclasses.replace(run, mask=run.mask[:19])
    with pytest.raises(ValueError, match="6 steps .* steps=7"):
        dataclasses.replace(run, config=dataclasses.replace(run.config, steps=7))
    with pytest.raises(ValueError, match="marks an excluded canary"):
        dataclasses.replace(run, participation=np.ones((6, 20), dtype=bool), sampled=np.full(20, 6))
    with pytest.raises(ValueError, match="'sampled' must be"):
        dataclasses.replace(run, sampled=run.sampled + 1)
    with pytest.raises(ValueError, match="'pattern' must hold"):
        dataclasses.replace(run, pattern=np.zeros((6, 20)))
    with pytest.raises(ValueError, match="real array"):
        dataclasses.replace(run, observations=np.array([["a"] * 20] * 6))
    with pytest.raises(ValueError, match="sampling_rate must be in"):
        forged = dataclasses.replace(run.config)
        object.__setattr__(forged, "sampling_rate", 1.5)
        dataclasses.replace(run, config=forged)
    with pytest.raises(TypeError, match="DPSGDConfig"):
        dataclasses.replace(run, config={"noise_multiplier": 1.0})
    # Torch tensors (any device) are converted once; 0/1 masks become bool.
    back = dataclasses.replace(run, observations=torch.as_tensor(run.observations), mask=run.mask.astype(int))
    assert isinstance(back.observations, np.ndarray) and np.array_equal(back.observations, run.observations)
    assert back.mask.dtype == bool


def test_train_many_outputs_do_not_depend_on_the_chunk():
    # Randomness is drawn per block of RNG_BLOCK runs, the initial model is seeded: the same seed gives
    # the same scores at any chunk (the default one is chosen from the device's memory).
    from dpaudit.dpsgd import load_digits_task
    from dpaudit.dpsgd.many import RNG_BLOCK, choose_chunk, train_many

    cfg = DPSGDConfig(noise_multiplier=1.0, sampling_rate=0.5, steps=2)
    runs = RNG_BLOCK + 10
    fields = ("black_box_in", "black_box_out", "white_box_in", "white_box_out", "scale_in", "epoch_max_out")
    x, y = load_digits_task(num_train=40, seed=0)
    kw = {"data": (x, (y % 2).astype(np.float32)), "opposing": 1, "null_block": 8, "hidden": 2}
    results = [train_many(cfg, runs=runs, chunk=c, seed=4, **kw) for c in (RNG_BLOCK, 2 * RNG_BLOCK, None)]
    assert [r.details["chunk"] for r in results[:2]] == [RNG_BLOCK, 2 * RNG_BLOCK]
    for r in results[1:]:
        assert all(np.array_equal(getattr(results[0], f), getattr(r, f)) for f in fields)
    other = train_many(cfg, runs=runs, chunk=RNG_BLOCK, seed=5, **kw)
    assert not np.array_equal(other.white_box_in, results[0].white_box_in)
    assert RNG_BLOCK <= choose_chunk(10**6, 10**4, "cpu") <= 10**6 and choose_chunk(10, 1, "cpu") == RNG_BLOCK

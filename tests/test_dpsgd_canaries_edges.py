"""Canaries.audit at the edges: every update non-finite, and only check kinds (no bound)."""
import numpy as np
import pytest

from dpaudit.dpsgd import Canaries


def _nan_update(can):
    return [np.full(s, np.nan) for s in can.shapes]


def test_a_run_whose_every_update_is_non_finite_is_a_violation_not_an_error():
    can = Canaries([(3, 2), (4,)], noise_multiplier=2.0, max_grad_norm=1.0, sampling_rate=1.0, canaries=60, seed=1)
    for _ in range(3):
        can.begin_step(batch_size=10)
        can.observe(_nan_update(can))
    assert can.steps == 0
    a = can.audit(delta=1e-5, beta=0.05, estimates=False)
    assert a.violated and [f"{f.check}:{f.test}" for f in a.violations] == ["nonfinite:update"]
    assert tuple(a.violations[0].steps) == (1, 2, 3) and a.epsilon_lower_bound == 0.0 and a.best_kind is None
    assert np.isfinite(a.accountant_epsilon) and a.accountant_epsilon > 0
    text = a.summary()
    assert "VIOLATION" in text and "no finite update observed" in text and "3 non-finite update(s)" in text


def test_no_step_at_all_still_raises():
    can = Canaries([(3,)], noise_multiplier=2.0, max_grad_norm=1.0, sampling_rate=1.0, canaries=20, seed=0)
    with pytest.raises(ValueError, match="no step observed yet"):
        can.audit()


def _correct_step(can, step, rng, B):
    """A correct DP-SGD step: zero real gradients, every row clipped to C, summed, plus N(0, (sigma C)^2)."""
    rows = step.insert([np.zeros((B, *s)) for s in can.shapes])
    flat = np.concatenate([r.reshape(r.shape[0], -1) for r in rows], axis=1)
    scale = np.minimum(1.0, can.C / np.maximum(np.linalg.norm(flat, axis=1), 1e-300))
    return [(r * scale.reshape(-1, *([1] * (r.ndim - 1)))).sum(axis=0) + rng.normal(0.0, can.sigma * can.C, r.shape[1:])
            for r in rows]


def test_check_kinds_alone_audit_without_a_bound(rng):
    """``kinds=("paired",)`` has no certified bound: the audit runs its checks and reports the
    trivial lower bound 0 (the safe side) instead of failing on an empty maximum."""
    can = Canaries([(3, 2)], noise_multiplier=2.0, max_grad_norm=1.0, sampling_rate=1.0, canaries=40,
                   kinds=("paired",), seed=2)
    for _ in range(5):
        step = can.begin_step(batch_size=4)
        can.observe(_correct_step(can, step, rng, 4))
    a = can.audit(delta=1e-5, beta=0.05, estimates=False)
    assert a.audits == {} and a.epsilon_lower_bound == 0.0 and a.best_kind is None
    assert "coupling" in a.checks and not a.violated, a.summary()
    assert "none (no canary kind with a bound was audited: check kinds only)" in a.summary()

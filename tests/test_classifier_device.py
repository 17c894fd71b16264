"""The classifier hockey-stick tester's device path (ClassifierHockeyStick on an accelerator),
exercised on the CPU by forcing it (no GPU is needed to test it).

On a GPU the samples are moved to the device once, the zoom features are built there, and each
call of the scorer copies only its scores back. Checked here: the torch features equal NumPy's
bit for bit, the device path gives the same bounds as the NumPy path for the same seed, and it
copies to the host once per scorer call whatever the number of chunks.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dpaudit._torch import predict  # noqa: E402
from dpaudit.estimators import hockey_stick as hs  # noqa: E402
from dpaudit.estimators._common import zoom_features  # noqa: E402


def test_torch_zoom_features_equal_numpy_bit_for_bit():
    rng = np.random.default_rng(0)
    z = np.concatenate([rng.standard_t(1.5, size=(3000, 6)) * 50, rng.normal(size=(3000, 6)) * 1e-4])
    np.testing.assert_array_equal(hs._zoom_features_torch(torch.from_numpy(z)).numpy(), zoom_features(z))


def test_device_path_gives_the_numpy_bounds_and_copies_once_per_scorer_call(monkeypatch):
    rng = np.random.default_rng(1)
    p = rng.standard_t(3, size=(1600, 6))
    q = rng.standard_t(3, size=(1600, 6))
    p[:, 0] += 0.3
    monkeypatch.setattr(hs, "SCORE_CHUNK", 500)  # several chunks per scorer call
    copies = []
    real_cpu = torch.Tensor.cpu

    def counting_cpu(self, *args, **kwargs):
        copies.append(len(self))
        return real_cpu(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "cpu", counting_cpu)
    out = {}
    # (device path, samples kept on the device): NumPy; device-resident samples; samples too
    # large for the device, moved chunk by chunk
    for case in ((False, True), (True, True), (True, False)):
        est = hs.ClassifierHockeyStick(max_steps=30, marginal_bins=None)
        monkeypatch.setattr(est, "_on_device", lambda case=case: case[0])
        monkeypatch.setattr(est, "_fits_on_device", lambda nbytes, case=case: case[1])
        copies.clear()
        ev = est.estimate(p, q, epsilon=0.2, beta=0.05, rng=4)
        out[case] = (ev, list(copies))
    ev_np, copies_np = out[(False, True)]
    for case in ((True, True), (True, False)):
        ev_dev, copies_dev = out[case]
        for a, b in ((ev_np.forward, ev_dev.forward), (ev_np.reverse, ev_dev.reverse)):
            assert (a.lower, a.estimate, a.region, a.p_count, a.q_count) == (b.lower, b.estimate, b.region, b.p_count,
                                                                             b.q_count)
        assert copies_dev == [800, 800, 800, 800]  # train P, train Q, test P, test Q: one copy each
    assert len(copies_np) > 4  # the NumPy path copies per chunk


def test_predict_keeps_the_result_on_the_device_when_asked():
    feats = np.random.default_rng(2).normal(size=(1000, 3)).astype(np.float32)
    fn = lambda f: f.sum(dim=1)  # noqa: E731
    host = predict(fn, feats, "cpu", chunk=300)
    dev = predict(fn, torch.from_numpy(feats), "cpu", chunk=300, to_numpy=False)
    assert host.dtype == np.float64 and torch.is_tensor(dev) and dev.dtype == torch.float32
    np.testing.assert_array_equal(host, dev.numpy().astype(np.float64))

"""Reproducer: TensorFlow Privacy 0.9.0 `DPKerasSGDOptimizer` -- one example holding NaN or an infinity makes the released model NaN (dpaudit row `tensorflow-privacy.dpsgd_step`, adversarial screen).

Standalone: needs only tensorflow-privacy (with TensorFlow) and NumPy. Install and run in a fresh environment::

    python3.11 -m venv /tmp/tfp && /tmp/tfp/bin/pip install tensorflow-privacy==0.9.0 tensorflow==2.15.1
    /tmp/tfp/bin/python reproducers/envs/tensorflow_privacy_dpsgd_step_nan.py [N]

The configuration of tensorflow_privacy_dpsgd_step.py (one full-batch step of DPKerasSGDOptimizer,
l2_norm_clip 1, one microbatch per example, the noise multiplier at which
compute_dp_sgd_privacy_statement states epsilon 1 at delta 1e-5). D1 adds one example whose
features are NaN (also +-inf, or +-1.8e308, which float32 turns into infinities). Cause, read in
tensorflow_privacy 0.9.0: privacy/dp_query/gaussian_query.py, GaussianSumQuery.preprocess_record_impl
clips each microbatch's gradient with tf.clip_by_global_norm, which sets every entry to NaN when the
global norm is not finite; nothing checks the records or the gradients for finiteness, so the noisy
sum and the model after the step are NaN, every time. The set S = {outputs holding a NaN} is fixed
before any run.
"""

import math
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow_privacy import compute_dp_sgd_privacy_statement  # noqa: E402
from tensorflow_privacy.privacy.analysis import compute_dp_sgd_privacy_lib as lib  # noqa: E402
from tensorflow_privacy.privacy.optimizers.dp_optimizer_keras import DPKerasSGDOptimizer  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200
EPSILON, DELTA, CLIP = 1.0, 1e-5, 1.0
D0 = [[-1.0, -1.0]]
D1 = [[-1.0, -1.0], [float("nan"), float("nan")]]


def statement_epsilon(sigma):
    """The epsilon compute_dp_sgd_privacy_statement prints for one full-batch epoch (RDP)."""
    return lib._compute_dp_sgd_example_privacy(num_epochs=1, noise_multiplier=sigma, example_delta=DELTA,
                                               used_microbatching=False)


lo_s, hi_s = 0.1, 100.0
while hi_s - lo_s > 1e-6:
    mid = (lo_s + hi_s) / 2
    lo_s, hi_s = (mid, hi_s) if statement_epsilon(mid) > EPSILON else (lo_s, mid)
SIGMA = hi_s


def releases(records, seed):
    """N one-step releases of the model on ``records`` (one optimizer, the model reset before each step)."""
    tf.random.set_seed(seed)
    x = tf.constant(np.asarray(records, dtype=np.float32))
    w = tf.Variable(tf.zeros(2))
    opt = DPKerasSGDOptimizer(l2_norm_clip=CLIP, noise_multiplier=SIGMA, num_microbatches=None, learning_rate=1.0)

    @tf.function
    def step():
        w.assign(tf.zeros(2))
        opt.minimize(lambda: 0.5 * tf.reduce_sum((x - w) ** 2, axis=1), [w])
        return w.read_value()

    return np.array([step().numpy() for _ in range(N)], dtype=float)


def kl(a, b):
    out = 0.0
    if a > 0:
        out += a * math.log(a / b)
    if a < 1:
        out += (1 - a) * math.log((1 - a) / (1 - b))
    return out


def upper(k, n, beta):
    """Chernoff-KL upper confidence bound on a binomial proportion (holds with prob. >= 1 - beta)."""
    if k == n:
        return 1.0
    lo, hi = k / n, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if n * kl(k / n, mid) <= math.log(1 / beta) else (lo, mid)
    return hi


def lower(k, n, beta):
    return 1.0 - upper(n - k, n, beta)


def main():
    y0, y1 = releases(D0, 1), releases(D1, 2)
    h0, h1 = int(np.sum(~np.all(np.isfinite(y0), axis=1))), int(np.sum(~np.all(np.isfinite(y1), axis=1)))
    beta = 0.01
    lo, hi = lower(h1, N, beta / 2), upper(h0, N, beta / 2)
    certified = lo - math.exp(EPSILON) * hi
    print(f"library: TensorFlow Privacy 0.9.0 (TensorFlow {tf.__version__}); noise multiplier {SIGMA:.6g}; "
          f"claim: ({EPSILON:g}, {DELTA:g})-DP under add-or-remove-one (compute_dp_sgd_privacy_statement)")
    print("set S: outputs holding a NaN")
    print(f"D0 = {D0}: {h0}/{N} outputs in S; D1 = {D1}: {h1}/{N} outputs in S")
    print(f"certified (confidence 0.99): P[S | D1] >= {lo:.4g}, P[S | D0] <= {hi:.4g}, "
          f"so delta >= {certified:.4g} at epsilon {EPSILON:g}")
    if certified > DELTA:
        print(f"VERDICT: VIOLATION of ({EPSILON:g}, {DELTA:g})-DP under add-or-remove-one: "
              f"P[S | D1] - e^eps P[S | D0] >= {certified:.4g} > delta")
    else:
        print(f"VERDICT: NOT REPRODUCED at N = {N}; try a larger N")


if __name__ == "__main__":
    main()

"""Reproducer: TensorFlow Privacy 0.9.0 `DPKerasSGDOptimizer` -- the released model depends on the batch size (dpaudit row `tensorflow-privacy.dpsgd_step`).

Standalone: needs only tensorflow-privacy (with TensorFlow) and NumPy. Install and run in a fresh environment::

    python3.11 -m venv /tmp/tfp && /tmp/tfp/bin/pip install tensorflow-privacy==0.9.0 tensorflow==2.15.1
    /tmp/tfp/bin/python reproducers/envs/tensorflow_privacy_dpsgd_step.py [N]

(tensorflow-privacy 0.9.0 does not import with TensorFlow >= 2.16, which dropped tensorflow_estimator
and Keras 2; pip's default resolution picks TensorFlow 2.21.) N runs per dataset, default 4000.

One full-batch step of DPKerasSGDOptimizer (l2_norm_clip 1, num_microbatches None: one microbatch per
example, learning rate 1) on the loss 0.5 ||x - w||^2 per example from w = 0, with the noise
multiplier at which TF Privacy's own compute_dp_sgd_privacy_statement (batch = all examples, one
epoch, used_microbatching=False) states epsilon = 1 at delta = 1e-5 under add-or-remove-one
adjacency, "protect[ing] the release of all model checkpoints". The optimizer divides the noisy
gradient sum by the number of microbatches, which with num_microbatches=None is the batch's size
(dp_optimizer_keras.py, _compute_gradients: num_microbatches = tf.shape(loss)[0]): the noise in the
released model has standard deviation sigma * C / n, so adding one example (n = 1 -> 2) halves it.
The set S = {outputs with |w_1| > 2 sigma} is fixed before any run.
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

N = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
EPSILON, DELTA, CLIP = 1.0, 1e-5, 1.0
D0 = [[0.0, 0.0]]
D1 = [[0.0, 0.0], [0.0, 0.0]]


def statement_epsilon(sigma):
    """The epsilon compute_dp_sgd_privacy_statement prints for one full-batch epoch (RDP)."""
    return lib._compute_dp_sgd_example_privacy(num_epochs=1, noise_multiplier=sigma, example_delta=DELTA,
                                               used_microbatching=False)


lo_s, hi_s = 0.1, 100.0
while hi_s - lo_s > 1e-6:
    mid = (lo_s + hi_s) / 2
    lo_s, hi_s = (mid, hi_s) if statement_epsilon(mid) > EPSILON else (lo_s, mid)
SIGMA = hi_s
THRESHOLD = 2 * SIGMA * CLIP


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
    print(compute_dp_sgd_privacy_statement(number_of_examples=len(D1), batch_size=len(D1), num_epochs=1,
                                           noise_multiplier=SIGMA, delta=DELTA, used_microbatching=False))
    y0, y1 = releases(D0, 1), releases(D1, 2)
    print(f"library: TensorFlow Privacy 0.9.0 (TensorFlow {tf.__version__}); "
          f"claim: ({EPSILON:g}, {DELTA:g})-DP under add-or-remove-one (compute_dp_sgd_privacy_statement)")
    print(f"noise multiplier {SIGMA:.6g}; std of w_1: {y0[:, 0].std():.3f} on D0 (1 example), "
          f"{y1[:, 0].std():.3f} on D1 (2 examples)")
    h0, h1 = int(np.sum(np.abs(y0[:, 0]) > THRESHOLD)), int(np.sum(np.abs(y1[:, 0]) > THRESHOLD))
    beta = 0.01
    lo, hi = lower(h0, N, beta / 2), upper(h1, N, beta / 2)
    certified = lo - math.exp(EPSILON) * hi
    print(f"set S: |w_1| > {THRESHOLD:.4g}")
    print(f"D0 = {D0}: {h0}/{N} outputs in S; D1 = {D1}: {h1}/{N} outputs in S")
    print(f"certified (confidence 0.99): P[S | D0] >= {lo:.4g}, P[S | D1] <= {hi:.4g}, "
          f"so delta >= {certified:.4g} at epsilon {EPSILON:g}")
    if certified > DELTA:
        print(f"VERDICT: VIOLATION of ({EPSILON:g}, {DELTA:g})-DP under add-or-remove-one: "
              f"P[S | D0] - e^eps P[S | D1] >= {certified:.4g} > delta")
    else:
        print(f"VERDICT: NOT REPRODUCED at N = {N}; try a larger N")


if __name__ == "__main__":
    main()

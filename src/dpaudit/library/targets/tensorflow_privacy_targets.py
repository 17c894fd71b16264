"""TensorFlow Privacy targets, run in the ``tensorflow-privacy`` environment (TensorFlow 2.15 on the CPU).

``dpsgd_step``: one step of ``DPKerasSGDOptimizer(l2_norm_clip=C, noise_multiplier=sigma,
num_microbatches=None, learning_rate=1)`` on the whole dataset as one batch (one microbatch per
example, TF Privacy's default), minimising ``0.5 * ||x - w||^2`` per example from ``w = 0``; the
release is the model after the step, ``w1`` (a checkpoint: the statement below "protects the
release of all model checkpoints"). ``sigma`` is chosen so that TF Privacy's own
``compute_dp_sgd_privacy_statement`` (RDP accounting, batch size = number of examples, one epoch,
``used_microbatching=False``: microbatches of one example) states the row's epsilon at its delta:
the library's own ``_compute_dp_sgd_example_privacy``, the function the statement prints, is
inverted by bisection here.

``accountant_epsilon``: not a target; TF Privacy's example-level epsilon under Poisson sampling at
rate q (``_compute_dp_sgd_example_privacy`` with ``poisson_subsampling_probability=q``, the
"Epsilon assuming Poisson sampling" line of the statement) for ``steps * q`` epochs.

Randomness: TensorFlow's global seed is set from the worker's ``rng`` once per batch (reproducible).
"""

import os

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _example_epsilon(noise_multiplier, delta, epochs=1.0, q=None, accountant="rdp"):
    from tensorflow_privacy.privacy.analysis import compute_dp_sgd_privacy_lib as lib

    kind = lib.AccountantType.PLD if accountant == "pld" else lib.AccountantType.RDP
    return float(lib._compute_dp_sgd_example_privacy(  # noqa: SLF001 - the function the statement prints
        num_epochs=epochs, noise_multiplier=noise_multiplier, example_delta=delta, used_microbatching=False,
        poisson_subsampling_probability=q, accountant_type=kind))


def statement(number_of_examples, noise_multiplier, delta):
    """Not a target: TF Privacy's ``compute_dp_sgd_privacy_statement`` for one full-batch epoch."""
    from tensorflow_privacy import compute_dp_sgd_privacy_statement

    return compute_dp_sgd_privacy_statement(number_of_examples=number_of_examples, batch_size=number_of_examples,
                                            num_epochs=1, noise_multiplier=noise_multiplier, delta=delta,
                                            used_microbatching=False)


def calibrated_noise_multiplier(epsilon, delta):
    """The smallest sigma (to 1e-6) whose statement epsilon (q = 1, one epoch, RDP) is at most ``epsilon``."""
    lo, hi = 0.1, 100.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if _example_epsilon(mid, delta) > epsilon:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-6:
            break
    return hi


def accountant_epsilon(noise_multiplier, sample_rate, steps, delta, accountant="rdp"):
    """TF Privacy's epsilon under Poisson sampling at ``sample_rate`` for ``steps`` steps."""
    q = None if sample_rate >= 1 else sample_rate
    return _example_epsilon(noise_multiplier, delta, epochs=steps * sample_rate, q=q, accountant=accountant)


class _Step:
    def __init__(self, epsilon, delta, clip_norm):
        self.clip_norm = float(clip_norm)
        self.sigma = calibrated_noise_multiplier(epsilon, delta)
        self.describe = (f"DPKerasSGDOptimizer(l2_norm_clip={clip_norm}, noise_multiplier={self.sigma:.6g}, "
                         "num_microbatches=None, learning_rate=1), one full-batch step from w = 0; releases w")

    def sample(self, dataset, num_samples, rng):
        import tensorflow as tf
        from tensorflow_privacy.privacy.optimizers.dp_optimizer_keras import DPKerasSGDOptimizer

        tf.random.set_seed(int(rng.integers(0, 2**31 - 1)))
        x = tf.constant(np.asarray(dataset, dtype=np.float32).reshape(-1, 2))
        # one optimizer and one model for the batch, reset to w = 0 before every step: each output is
        # one step from the same start, with the optimizer's fresh noise (its Gaussian query's global
        # state, the noise stddev, does not change between steps)
        w = tf.Variable(tf.zeros(2))
        opt = DPKerasSGDOptimizer(l2_norm_clip=self.clip_norm, noise_multiplier=self.sigma,
                                  num_microbatches=None, learning_rate=1.0)

        @tf.function
        def step():
            w.assign(tf.zeros(2))
            opt.minimize(lambda: 0.5 * tf.reduce_sum((x - w) ** 2, axis=1), [w])  # a vector loss, one per example
            return w.read_value()

        out = np.empty((num_samples, 2))
        for i in range(num_samples):
            out[i] = step().numpy()
        return out


def dpsgd_step(epsilon=1.0, delta=1e-5, clip_norm=1.0):
    """One full-batch DPKerasSGDOptimizer step (see the module docstring)."""
    return _Step(epsilon, delta, clip_norm)

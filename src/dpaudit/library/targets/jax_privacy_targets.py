"""jax_privacy targets, run in the ``jax-privacy`` environment (JAX on the CPU).

``dpsgd_step``: one DP-SGD release as jax_privacy's documentation composes it: the sum of
per-example clipped gradients (``jax_privacy.clipping.clipped_grad``, L2 clip norm C) and isotropic
Gaussian noise from ``jax_privacy.noise_addition.gaussian_privatizer`` with standard deviation
``noise_multiplier * C``, the noise multiplier calibrated by ``jax_privacy.accounting.
calibrate_noise_multiplier`` for the target (epsilon, delta) with the row's accountant, batch size
= dataset size (sampling rate 1) and one update. The loss is ``0.5 * ||data - params||^2`` at
``params = 0`` (jax_privacy's own docstring example), so an example's gradient is minus the record
and clipping bites on records of norm above C. The release is the noisy gradient sum.

``accountant_epsilon``: not a target; jax_privacy's epsilon for (sigma, q, steps, delta).

Randomness: the privatizer's PRNG key comes from the worker's ``rng`` (reproducible); each output
is one ``privatizer.update``, whose key advances as in training.
"""

import numpy as np


def _accountant(kind):
    from jax_privacy.accounting import accountants, analysis

    config = accountants.PldAccountantConfig() if kind == "pld" else accountants.RdpAccountantConfig()
    return analysis.DpsgdTrainingAccountant(config)


def calibrated_noise_multiplier(epsilon, delta, num_samples, accountant="pld", batch_size=None, num_updates=1):
    """``calibrate_noise_multiplier`` for ``num_updates`` updates at batch size ``batch_size``
    (default ``num_samples``: sampling rate 1)."""
    from jax_privacy.accounting import calibrate

    return float(calibrate.calibrate_noise_multiplier(
        target_epsilon=epsilon, accountant=_accountant(accountant), batch_sizes=batch_size or num_samples,
        num_updates=num_updates, num_samples=num_samples, target_delta=delta))


def accountant_epsilon(noise_multiplier, sample_rate, steps, delta, accountant="pld", num_samples=100000):
    """jax_privacy's ``compute_epsilon`` for DP-SGD with Poisson sampling at ``sample_rate``."""
    from jax_privacy.accounting import analysis

    params = analysis.DpParams(noise_multipliers=noise_multiplier, num_samples=num_samples, delta=delta,
                               batch_size=max(1, int(round(sample_rate * num_samples))))
    return float(_accountant(accountant).compute_epsilon(steps, params))


class _Step:
    def __init__(self, epsilon, delta, clip_norm, num_samples, accountant):
        self.clip_norm = float(clip_norm)
        self.sigma = calibrated_noise_multiplier(epsilon, delta, num_samples, accountant)
        self.describe = (f"jax_privacy DP-SGD step: clipped_grad(l2_clip_norm={clip_norm}) + gaussian_privatizer"
                         f"(stddev={self.sigma:.6g} x {clip_norm}), noise multiplier calibrated by the {accountant} "
                         f"accountant for ({epsilon}, {delta}) at sampling rate 1, one update")
        self._grad = None

    def _make(self):
        import jax
        import jax.numpy as jnp
        from jax_privacy.clipping import clipped_grad

        loss = lambda params, data: 0.5 * jnp.sum((data - params) ** 2)  # noqa: E731
        self._grad = jax.jit(clipped_grad(loss, l2_clip_norm=self.clip_norm))

    def sample(self, dataset, num_samples, rng):
        import jax
        import jax.numpy as jnp
        from jax_privacy.noise_addition import gaussian_privatizer

        if self._grad is None:
            self._make()
        data = np.asarray(dataset, dtype=np.float32).reshape(-1, 2)
        params = jnp.zeros(2, dtype=jnp.float32)
        privatizer = gaussian_privatizer(stddev=self.sigma * self.clip_norm,
                                         prng_key=jax.random.key(int(rng.integers(0, 2**31 - 1))))
        state = privatizer.init(params)
        update = jax.jit(lambda g, s: privatizer.update(g, s))
        out = np.empty((num_samples, 2))
        for i in range(num_samples):
            # an empty batch: the clipped sum of no example is 0 (jax_privacy's clipped_grad wants one)
            g = self._grad(params, jnp.asarray(data)) if data.shape[0] else jnp.zeros(2, jnp.float32)
            noisy, state = update(g, state)
            out[i] = np.asarray(noisy, dtype=np.float64)
        return out


def dpsgd_step(epsilon=1.0, delta=1e-5, clip_norm=1.0, num_samples=10, accountant="pld"):
    """One full-batch DP-SGD release (see the module docstring)."""
    return _Step(epsilon, delta, clip_norm, num_samples, accountant)

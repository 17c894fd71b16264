"""SmartNoise Synth (``snsynth``) targets, run in the ``smartnoise-synth`` environment.

* ``minmax_bounds``: ``snsynth.transform.MinMaxTransformer(epsilon=...)`` fitted on one column with
  no bounds given, so it infers them privately (``snsql``'s ``approx_bounds``: a 128-bin
  logarithmic histogram with Laplace noise, the outermost bins above a threshold); the release is
  ``(found, fit_lower, fit_upper)``, where ``found`` is 0 (and the bounds 0) when the transformer
  raises ``ValueError('MinMaxTransformer could not find bounds.')`` (an observable outcome of the
  fit; any other exception propagates).
* ``dp_covariance``: ``snsynth.models.dp_covariance.DPcovariance(n, cols, rng=bounds, global_eps)
  .release(df)`` on two columns with bounds [0, 1]: the lower triangle of the covariance matrix
  (3 numbers) with Laplace noise, the model opendp/smartnoise-sdk#622 (Re:cord-play's R1) is
  about.

Randomness: approx_bounds samples through OpenDP (not seedable); DPcovariance draws from NumPy's
global generator, seeded here from ``rng`` once per batch (reproducible).
"""

import numpy as np


def minmax_bounds(epsilon=1.0):
    """``MinMaxTransformer(epsilon=epsilon).fit(column)`` -> (found, lower, upper).

    Raises
    ------
    ValueError
        From the returned mechanism, when ``MinMaxTransformer.fit`` raises one other than its
        documented refusal ("could not find bounds", released as ``found = 0``): re-raised unchanged.
    """
    def one(dataset, rng):
        from snsynth.transform import MinMaxTransformer

        values = [float(v) for v in np.asarray(dataset, dtype=float).reshape(-1)]
        t = MinMaxTransformer(epsilon=epsilon)
        try:
            t.fit(values)
        except ValueError as exc:
            if "could not find bounds" not in str(exc):
                raise
            return [0.0, 0.0, 0.0]
        return [1.0, float(t.fit_lower), float(t.fit_upper)]
    return one


class _Covariance:
    def __init__(self, epsilon, n, bounds=(0.0, 1.0)):
        self.epsilon = float(epsilon)
        self.n = int(n)
        self.bounds = tuple(bounds)  # ints stay ints: an int64 bounds frame, as a user's integer bounds

    def sample(self, dataset, num_samples, rng):
        import pandas as pd
        from snsynth.models.dp_covariance import DPcovariance

        np.random.seed(int(rng.integers(0, 2**32 - 1)))
        arr = np.asarray(dataset)
        arr = (arr if arr.dtype.kind in "iu" else arr.astype(float)).reshape(-1, 2)
        lo, hi = self.bounds
        out = np.empty((num_samples, 3))
        for i in range(num_samples):
            df = pd.DataFrame(arr, columns=["a", "b"])
            bounds = pd.DataFrame([[lo, lo], [hi, hi]])
            cov = DPcovariance(self.n, ["a", "b"], bounds, self.epsilon)
            out[i] = cov.release(df)
        return out


def dp_covariance(epsilon=1.0, n=5, bounds=(0.0, 1.0)):
    """``DPcovariance(n, ['a', 'b'], rng = bounds (lower, upper) for each column, global_eps=epsilon)
    .release(df)``; integer bounds (and int64 records) as a user's integer columns pass them."""
    return _Covariance(epsilon, n, bounds)

"""diffprivlib in its own environment: the same call as dpaudit's in-process adapter
(``DiffprivlibMechanism(diffprivlib.tools.mean, epsilon=..., bounds=...)``), for measuring what the
pipe costs (``benchmarks/library_envs_overhead.py``)."""

import numpy as np


class _Tool:
    def __init__(self, name, kwargs):
        self.name = name
        self.kwargs = kwargs

    def sample(self, dataset, num_samples, rng):
        import warnings

        from diffprivlib import tools
        from diffprivlib.accountant import BudgetAccountant

        class _NoRecord(BudgetAccountant):
            def spend(self, epsilon, delta):
                self.check(epsilon, delta)
                return self

        func = getattr(tools, self.name)
        state = np.random.RandomState(int(rng.integers(0, 2**32 - 1)))
        acc = _NoRecord()
        arr = np.asarray(dataset, dtype=float).reshape(-1)
        out = np.empty((num_samples, 1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(num_samples):
                out[i, 0] = func(arr, random_state=state, accountant=acc, **self.kwargs)
        return out


def tool(name="mean", epsilon=1.0, bounds=(0.0, 1.0)):
    """``diffprivlib.tools.<name>(array, epsilon, bounds, random_state, accountant)`` per output."""
    return _Tool(name, {"epsilon": epsilon, "bounds": tuple(bounds)})

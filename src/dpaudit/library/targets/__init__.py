"""Worker-side target modules: each runs inside its library's own environment.

A module here is imported by the worker (``dpaudit/library/envs/_worker.py``) as a top-level module
(this directory first on ``sys.path``), never by dpaudit: it imports its library and NumPy only,
and never dpaudit, which the environment does not have. Each public factory takes JSON arguments
and returns a batch sampler (``.sample(dataset, num_samples, rng)``) or a per-call function
``f(dataset, rng)``; the rows that use them are in :mod:`dpaudit.library.envs.rows`.
"""

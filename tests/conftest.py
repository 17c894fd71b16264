"""Shared fixtures of the test suite.

The statistical assertions live in ``tests/_harness.py`` and are imported from there::

    from _harness import assert_coverage_at_least, assert_rate_above, assert_rate_at_most

(one-sided exact binomial tests at level 1e-3 by default; see that module). This file gives the
seed fixtures:

* ``base_seed`` — the suite's fixed base seed (:data:`_harness.BASE_SEED`);
* ``seed`` — an int derived from the base seed and the test's node id by a stable hash, so a test
  draws the same numbers whatever the order, selection or worker it runs in;
* ``rng`` — ``np.random.default_rng(seed)``, a fresh generator per test.
"""

from __future__ import annotations

import numpy as np
import pytest

from _harness import BASE_SEED, node_seed


@pytest.fixture(scope="session")
def base_seed() -> int:
    """The suite's fixed base seed."""
    return BASE_SEED


@pytest.fixture
def seed(request, base_seed) -> int:
    """A per-test seed: a stable hash of the base seed and the test's node id."""
    return node_seed(request.node.nodeid, base_seed)


@pytest.fixture
def rng(seed) -> np.random.Generator:
    """A fresh ``np.random.default_rng(seed)`` for this test (see ``seed``)."""
    return np.random.default_rng(seed)

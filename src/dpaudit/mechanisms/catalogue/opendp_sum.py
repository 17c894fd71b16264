"""An OpenDP sum, built correctly and with a sensitivity mistake: two mechanisms to audit.

Run from the command line (exit code 1 when a violation is found)::

    dpaudit test dpaudit.mechanisms.catalogue.opendp_sum:dp_sum --epsilon 1                       # exit 0
    dpaudit test dpaudit.mechanisms.catalogue.opendp_sum:wrong_d_in_sum --epsilon 1 --samples 5000  # exit 1

Both objects carry their neighbouring relation (add/remove one record, records in [0, 10],
1 to 10 records) and ``WITNESS_PAIRS`` as audit hints. Both need OpenDP
(``pip install 'dpaudit[opendp]'``); importing this module does not import it, the first
sample does. OpenDP's noise cannot be seeded, so runs differ even with ``--seed``.

The correct pipeline
--------------------
Records are scores in ``[0, 10]``; the release is their sum under add/remove adjacency
(OpenDP's ``symmetric_distance``, ``d_in = 1``). ``dp_sum`` is the OpenDP chain::

    (vector_domain(atom_domain(T=float, nan=False)), symmetric_distance())
        >> then_clamp((0.0, 10.0)) >> then_sum() >> then_laplace(scale)

with ``scale`` found by ``dp.binary_search_param`` so that the chain's privacy map gives
``map(1) <= 1``. OpenDP's float sum accounts for rounding, so the scale is slightly above
10 (10.0000001 with OpenDP 0.16.0); OpenDP's map states epsilon = 1 for d_in = 1.

The mistake: ``d_in`` is a sensitivity, not "one record"
--------------------------------------------------------
``wrong_d_in_sum`` computes the clipped sum itself in NumPy (``preprocess``) and hands the
number to OpenDP's scalar Laplace measurement on ``(atom_domain(T=float), absolute_distance)``,
calibrated with ``binary_search_param(..., d_in=1, d_out=1.0)`` "because neighbours differ in one
record". Under ``absolute_distance`` the input distance is the change of the *statistic*, whose
sensitivity is 10 here; OpenDP's map at ``d_in=1`` says epsilon = 1, at ``d_in=10`` it says 10.
The noise scale is 1 instead of 10: a 10-DP mechanism claimed as 1-DP.

At the witness pair ``[[0]]`` vs ``[[0], [10]]`` the outputs are Laplace(0, 1) and
Laplace(10, 1). The privacy loss ``|x - 10| - |x|`` exceeds 1 exactly when ``x < 4.5``, so
``H_{e^1} = P(x < 4.5) - e Q(x < 4.5) = (1 - e^{-4.5}/2) - e e^{-5.5}/2 = 1 - e^{-4.5} = 0.989``
(and the same in the other direction, by symmetry). For ``dp_sum`` the same pair has privacy
loss at most ``10 / scale < 1`` and ``H_{e^1} = 0``: tight, not violating.
``wrong_d_in_sum.claim()`` reads OpenDP's map at the true sensitivity (``d_in=10``) and gives
``PureDP(10)``; ``dp_sum.claim()`` gives ``PureDP(1.0)``.
"""

from __future__ import annotations

import numpy as np

from ...datasets import AddRemove, Domain
from ..adapters.opendp import OpenDPMechanism, import_opendp

__all__ = ["BOUNDS", "EPSILON", "NEIGHBOURING", "WITNESS_PAIRS", "dp_sum", "wrong_d_in_sum"]

EPSILON = 1.0
"""Privacy parameter both mechanisms are calibrated to and claim (pure DP, nats)."""

BOUNDS = (0.0, 10.0)
"""Record domain: scalar scores in [0, 10]."""

NEIGHBOURING = "add-remove"
"""Adjacency of OpenDP's ``symmetric_distance`` at ``d_in = 1``: one record added or removed."""

WITNESS_PAIRS = (
    ([[0.0]], [[0.0], [10.0]]),
    ([[10.0]], [[10.0], [10.0]]),
)
"""Add/remove pairs that move the sum by the full sensitivity 10."""


def build_dp_sum():
    """Build the correct chain: clamp to [0, 10], sum, Laplace calibrated so that map(1) <= 1.

    Returns
    -------
    opendp.mod.Measurement
        ``Vec<f64>`` under ``SymmetricDistance`` -> ``f64``, ``MaxDivergence``.
    """
    dp = import_opendp()
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()

    def chain(scale):
        return space >> dp.t.then_clamp(BOUNDS) >> dp.t.then_sum() >> dp.m.then_laplace(scale)

    return dp.binary_search_chain(chain, d_in=1, d_out=EPSILON)


def build_scalar_laplace():
    """BROKEN on purpose: scalar Laplace calibrated at ``d_in=1`` instead of the sensitivity 10.

    Returns
    -------
    opendp.mod.Measurement
        ``f64`` under ``AbsoluteDistance`` -> ``f64``, ``MaxDivergence``; ``map(1) = 1`` but
        ``map(10) = 10``.
    """
    dp = import_opendp()
    dp.enable_features("contrib")
    space = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
    return dp.binary_search_chain(lambda scale: space >> dp.m.then_laplace(scale), d_in=1, d_out=EPSILON)


def clipped_sum(dataset: np.ndarray) -> float:
    """The user's pre-processing outside OpenDP: clip scores to [0, 10] and sum them.

    Parameters
    ----------
    dataset : ndarray, shape (n_records, 1)

    Returns
    -------
    float
        The exact clipped sum (sensitivity 10 under add/remove).
    """
    return float(np.clip(np.asarray(dataset, dtype=float), *BOUNDS).sum())


dp_sum = OpenDPMechanism(build_dp_sum, name="opendp_sum:dp_sum")
"""OpenDP clamp -> sum -> Laplace, calibrated to epsilon = 1 for d_in = 1; not flagged."""

wrong_d_in_sum = OpenDPMechanism(
    build_scalar_laplace, name="opendp_sum:wrong_d_in_sum", preprocess=clipped_sum, d_in=10.0
)
"""NumPy clipped sum + OpenDP scalar Laplace calibrated at d_in = 1: claims 1-DP, is 10-DP."""

for _mechanism in (dp_sum, wrong_d_in_sum):
    # Sizes 0..10: OpenDP's sum runs on the empty dataset, so audits include it.
    _mechanism.neighbouring = AddRemove(Domain((BOUNDS[0],), (BOUNDS[1],)), min_size=0, max_size=10)
    _mechanism.witness_pairs = WITNESS_PAIRS

"""The audit hints every catalogue target carries (shared by the catalogue modules)."""

from __future__ import annotations


def with_hints(mech, relation, pairs, accepts):
    """Attach a catalogue target's audit hints to its adapter and return it.

    Parameters
    ----------
    mech : Mechanism
        The adapter (``DiffprivlibMechanism``, ``OpenDPMechanism``, ``PipelineDPMechanism``...).
    relation : NeighbouringRelation
        The relation the library's guarantee is stated for (``mech.neighbouring``).
    pairs : tuple of (dataset, dataset)
        Witness pairs to try first (``mech.witness_pairs``).
    accepts : AcceptedInputs
        The adversarial inputs the target is tried on (``mech.accepts``,
        :mod:`dpaudit.search.adversarial`).

    Returns
    -------
    Mechanism
        ``mech`` itself, with the three attributes set.
    """
    mech.neighbouring = relation
    mech.witness_pairs = pairs
    mech.accepts = accepts
    return mech

"""The catalogue of the zoo: every entry (name, claim, bug, true guarantee, witness pairs) in one table.

Entries are registered by name (the CLI's ``zoo:NAME``). An entry builds its mechanism for the
privacy parameters under test, so ``dpaudit test zoo:dp-laplace --epsilon 0.01`` audits the
mechanism instantiated at epsilon = 0.01 against the claim it makes at that epsilon.

The table is data, in ``catalogue.toml`` next to this module (read once, at import): each family
lists the fields its entries share once, then one table per entry, with the mechanisms, witness
pairs and domain constants named by the modules that define them (:mod:`.mean`, :mod:`.svt`,
:mod:`.noisy_max`, :mod:`.median`, :mod:`.dpgd`, :mod:`.randomized_response`, :mod:`.floating`,
:mod:`.harder`, :mod:`.corners`, :mod:`.dpsniper`), whose docstrings derive the numbers quoted
there. An entry's name is its factory's ``name`` (the class attribute, or the one
:func:`~.entry.variant` sets).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from ...datasets import Domain
from ...errors import DPAuditError
from .entry import ZooEntry, variant

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # pragma: no cover - Python 3.10
    import tomli as _toml

_MODULES = ("corners", "dpgd", "dpsniper", "floating", "harder", "mean", "median", "noisy_max",
            "randomized_response", "svt")

__all__ = ["entries", "families", "get", "register"]

_REGISTRY: dict[str, ZooEntry] = {}


def register(entry: ZooEntry) -> ZooEntry:
    """Add an entry to the zoo (names must be unique).

    Raises
    ------
    ValueError
        If an entry of that name is already registered.
    """
    if entry.name in _REGISTRY:
        raise ValueError(f"zoo entry {entry.name!r} registered twice")
    _REGISTRY[entry.name] = entry
    return entry


def entries() -> list[ZooEntry]:
    """All zoo entries, sorted by name."""
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def get(name: str) -> ZooEntry:
    """The entry called ``name``; raises :class:`DPAuditError` listing the valid names otherwise."""
    if name not in _REGISTRY:
        raise DPAuditError(f"no zoo mechanism called {name!r}; available: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def families() -> dict[str, list[ZooEntry]]:
    """The entries grouped by family (``ZooEntry.family``).

    Returns
    -------
    dict of str to list of ZooEntry
        Family title to its entries, both in catalogue order (a family's correct mechanism
        usually first, then its buggy variants).
    """
    grouped: dict[str, list[ZooEntry]] = {}
    for entry in _REGISTRY.values():
        grouped.setdefault(entry.family, []).append(entry)
    return grouped


CATALOGUE = Path(__file__).with_name("catalogue.toml")
"""The catalogue's file: one ``[[family]]`` table per family, one ``[[family.entry]]`` per entry
(its header says how objects of the zoo's modules are named)."""


def _zoo_object(reference: str):
    """The object ``NAME`` of the zoo module ``MODULE`` that ``"MODULE.NAME"`` names."""
    module, _, attr = str(reference).partition(".")
    if module not in _MODULES or not attr:
        raise DPAuditError(f"{CATALOGUE.name}: {reference!r} does not name an object of a zoo module {_MODULES}")
    try:
        return getattr(importlib.import_module(f".{module}", __package__), attr)
    except AttributeError:
        raise DPAuditError(f"{CATALOGUE.name}: the zoo module {module!r} has no {attr!r}") from None


def _config_value(value):
    if isinstance(value, dict):
        if value == {"none": True}:
            return None
        if set(value) == {"ref"}:
            return _zoo_object(value["ref"])
        raise DPAuditError(f"{CATALOGUE.name}: a config value table is {{ref = ...}} or {{none = true}}, got {value!r}")
    return value


def _factory(spec):
    if isinstance(spec, str):
        return _zoo_object(spec)
    config = {k: _config_value(v) for k, v in spec.get("config", {}).items()}
    return variant(_zoo_object(spec["variant"]), spec["name"], **config)


def _witness_pairs(spec):
    if isinstance(spec, str):
        return _zoo_object(spec)
    if all(isinstance(p, str) for p in spec):
        return tuple(_zoo_object(p) for p in spec)
    return tuple(tuple(pair) for pair in spec)  # pairs written out: (records of D, records of D')


def _domain(spec) -> Domain:
    if "unit" in spec:
        k = spec["unit"]
        return Domain.unit(_zoo_object(k) if isinstance(k, str) else k)
    return Domain(tuple(spec["lower"]), tuple(spec["upper"]))


_READERS = {"factory": _factory, "witness_pairs": _witness_pairs, "domain": _domain, "violates_for": tuple}


def _entry(family: str, fields: dict) -> ZooEntry:
    """The ``ZooEntry`` of one ``[[family.entry]]`` (its fields over the family's common ones)."""
    fields = {k: _READERS.get(k, lambda v: v)(v) for k, v in fields.items()}
    fields.setdefault("bug", None)  # private entries: no bug (ZooEntry checks the others have one)
    return ZooEntry(name=fields["factory"].name, family=family, **fields)


def _load(path: Path = CATALOGUE) -> None:
    """Register every entry of the catalogue file, in its order.

    Raises
    ------
    DPAuditError
        For a name that is not an object of a zoo module, or a malformed value table.
    ValueError, TypeError
        From :class:`ZooEntry` for an entry whose fields are wrong, or for a name registered twice.
    """
    with open(path, "rb") as fh:
        catalogue = _toml.load(fh)
    for family in catalogue["family"]:
        for spec in family["entry"]:
            register(_entry(family["title"], {**family.get("common", {}), **spec}))


_load()



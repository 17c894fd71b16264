"""Testers: a claim, two samples and a failure probability in; a verdict with its evidence out.

============== ===================================================== =========================
name           divergence bounded                                    source
============== ===================================================== =========================
sequential     hockey-stick (and Rényi) e-processes, testing by betting Ville 1939; docs/sequential.md
hockey-stick   hockey-stick, exact regions (1-D, discrete) or an MLP  paper 000 Alg. 5-6
renyi          Rényi, variational lower bound                        paper 000 Alg. 2, 002 Alg. 1
mmd            maximum mean discrepancy -> (eps, delta)              paper 000 Alg. 7-8
histogram      hockey-stick over a finite (or binned) output space   paper 000 Alg. 3-4
float-bits     hockey-stick over sets of doubles (bit features, atoms) Mironov 2012
all            every tester that supports the claim, beta split      union bound
============== ===================================================== =========================

The default (:func:`default_tester_name`) is ``sequential+float-screen``
(:class:`~dpaudit.testers.screened.FloatScreenTester` around
:class:`~dpaudit.testers.sequential.SequentialTester`): the sequential test by betting, plus the
float-bits tester at a tenth of beta when the mechanism's outputs are non-integer floats.
``default_tester_name(claim, sequential=False)`` names the staged default of before.
"""

from __future__ import annotations

import importlib

from .base import VIOLATION_KINDS, NotApplicable, Tester, TestOutcome, ViolationKind, profile_outcome
from .combined import CombinedTester
from .hockey_stick import HockeyStickTester
from .screened import FLOAT_SCREEN_SHARE, FloatScreenTester

__all__ = [
    "CombinedTester",
    "FLOAT_SCREEN_SHARE",
    "FloatScreenTester",
    "HockeyStickTester",
    "NotApplicable",
    "TESTER_NAMES",
    "TestOutcome",
    "Tester",
    "VIOLATION_KINDS",
    "ViolationKind",
    "default_tester_name",
    "make_tester",
    "profile_outcome",
]

# name -> "module:Class" (imported on first use)
_TESTERS = {
    "hockey-stick": "dpaudit.testers.hockey_stick:HockeyStickTester",
    "renyi": "dpaudit.testers.renyi:RenyiTester",
    "mmd": "dpaudit.testers.mmd:MMDTester",
    "histogram": "dpaudit.testers.histogram:HistogramTester",
    "float-bits": "dpaudit.testers.float_bits:FloatBitsTester",
    "sequential": "dpaudit.testers.sequential:SequentialTester",
}
TESTER_NAMES = (*_TESTERS, "all")
"""Every tester :func:`make_tester` builds by one name."""

RENYI_DEFAULT = ("hockey-stick", "renyi")
"""The testers run together (beta split) when a Rényi-DP claim is tested and none is chosen."""

SCREEN = "float-screen"
"""The last part of a tester name that adds the floating-point screen (:class:`FloatScreenTester`)."""


def default_tester_name(claim, *, sequential: bool = True) -> str:
    """The tester ``dpaudit test``, ``assert_dp`` and :func:`dpaudit.audit` use when none is chosen:
    ``"sequential+float-screen"`` (:class:`~dpaudit.testers.sequential.SequentialTester`, docs/sequential.md),
    or with ``sequential=False`` the staged default of before (``dpaudit test --tester staged``):
    ``"hockey-stick+float-screen"``, for a Rényi-DP claim ``"hockey-stick+renyi+float-screen"``.

    ``sequential``: the anytime-valid test by betting, which stops at the first pair where the
    evidence suffices and tests Rényi claims with a Rényi e-process besides their profile.
    ``hockey-stick+renyi``: both, beta split (the hockey-stick tester checks the (eps', delta')
    guarantees the claim converts to, which hide noise too small for the Rényi claim itself; the
    Rényi tester tests the claim at its order; see docs/testers.md). ``+float-screen``: when the
    outputs are non-integer floats, the float-bits tester also runs, at
    :data:`FLOAT_SCREEN_SHARE` of beta (:class:`FloatScreenTester`; docs/floating_point.md §4);
    integer outputs are tested without it, at the whole beta."""
    if sequential:
        return "+".join(("sequential", SCREEN))
    from ..privacy.claims import RenyiDP

    return "+".join((*RENYI_DEFAULT, SCREEN) if isinstance(claim, RenyiDP) else ("hockey-stick", SCREEN))


STAGED = "staged"
"""``dpaudit test --tester staged``: the staged default of before the sequential tester
(:func:`default_tester_name` with ``sequential=False``)."""


def _tester_class(name: str):
    module, cls = _TESTERS[name].split(":")
    return getattr(importlib.import_module(module), cls)


def make_tester(name: str = "hockey-stick", *, device: str | None = None) -> Tester:
    """Build a tester by its CLI name with default hyper-parameters.

    Parameters
    ----------
    name : {"sequential", "hockey-stick", "renyi", "mmd", "histogram", "float-bits", "all"} or "A+B"
        A tester, ``"all"`` (every batch tester: all but ``sequential``, beta split), or several
        names joined by ``+`` (a :class:`CombinedTester` of those, beta split, e.g.
        ``"hockey-stick+renyi"``); ending in ``"+float-screen"``, the :class:`FloatScreenTester`
        of the rest (:func:`default_tester_name`; ``"sequential+float-screen"``, the default, runs
        the screen at checkpoints of the sequential trial, docs/sequential.md §3).
    device : str, optional
        Torch device for the trained testers (hockey-stick, renyi); default CPU.

    Returns
    -------
    Tester

    Raises
    ------
    ValueError
        For an unknown name.
    """
    if name == "all":
        return CombinedTester([make_tester(n, device=device) for n in _TESTERS if n != "sequential"])
    if isinstance(name, str) and name.endswith("+" + SCREEN) and name != "+" + SCREEN:
        return FloatScreenTester(make_tester(name[: -len(SCREEN) - 1], device=device))
    if isinstance(name, str) and "+" in name:
        parts = name.split("+")
        if len(set(parts)) != len(parts) or not all(p in _TESTERS for p in parts):
            raise ValueError(f"unknown tester {name!r}; choose from {', '.join(TESTER_NAMES)} or join them with '+'")
        return CombinedTester([make_tester(p, device=device) for p in parts], name=name)
    if name not in _TESTERS:
        raise ValueError(f"unknown tester {name!r}; choose from {', '.join(TESTER_NAMES)}")
    cls = _tester_class(name)
    if name in ("hockey-stick", "renyi", "sequential") and device is not None:
        return cls(device=device)
    return cls()


def __getattr__(name):  # lazy access to the other testers: dpaudit.testers.RenyiTester etc.
    for key, target in _TESTERS.items():
        if target.endswith(":" + name):
            return _tester_class(key)
    raise AttributeError(f"module 'dpaudit.testers' has no attribute {name!r}")

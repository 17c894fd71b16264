"""The PyDP rows of the library-audit table (python-dp 1.1.5, OpenMined; Google's C++ algorithms).

Every class of ``pydp.algorithms.laplacian`` (``dpaudit.mechanisms.catalogue.pydp_algorithms``).
"""

from __future__ import annotations

from ..entry import Entry, Guarantee, LibraryInfo

LIBRARY = LibraryInfo("PyDP", "python-dp", install="python-dp==1.1.5 numpy")

_PYDP = "dpaudit.mechanisms.catalogue.pydp_algorithms"
_PYDP_DOC = ("PyDP 1.1.5 states no floating-point caveat; its noise is Google's LaplaceMechanism (the value rounded "
             "to a power-of-two granularity, a multiple of it added: Google's secure-noise design). PyDP's noise "
             "cannot be seeded: these rows are not reproducible from --seed")


def _pydp_entry(attr: str, cls: str, how: str, extra: str = "") -> Entry:
    """A PyDP row: ``pydp.algorithms.laplacian.cls`` as ``pydp_algorithms:attr``, claim 1-DP, add/remove."""
    args = "epsilon=1, dtype='float'" if cls == "Count" else \
        f"epsilon=1{extra}, lower_bound=0, upper_bound=1, dtype='float'"
    g = Guarantee(1.0, 0.0, "add-remove", "records in [0, 1], 0 to 10 records",
                  f"pydp.algorithms.laplacian.{cls}({args}).quick_result(x)")
    return Entry("PyDP", f"laplacian.{cls}", f"{_PYDP}:{attr}", f"{args}; {how}", g, documented=_PYDP_DOC)


_PYDP_ROWS: tuple[Entry, ...] = (
    _pydp_entry("count", "Count", "the number of records"),
    _pydp_entry("bounded_sum", "BoundedSum", "sum of the records clamped to [0, 1]"),
    _pydp_entry("bounded_mean", "BoundedMean", "noisy count and noisy sum of the records' offsets from the "
                "midpoint, clamped to [0, 1]"),
    _pydp_entry("bounded_variance", "BoundedVariance", "noisy count, sum and sum of squares; output clamped to [0, (upper - lower)^2]"),
    _pydp_entry("bounded_standard_deviation", "BoundedStandardDeviation", "square root of BoundedVariance"),
    _pydp_entry("max", "Max", "order statistic (Google's binary search over noisy counts)"),
    _pydp_entry("min", "Min", "order statistic"),
    _pydp_entry("median", "Median", "order statistic"),
    _pydp_entry("percentile", "Percentile", "order statistic", extra=", percentile=0.75"),
)
"""The PyDP rows (``dpaudit.mechanisms.catalogue.pydp_algorithms``): every algorithm of
``pydp.algorithms.laplacian``."""

ENTRIES: tuple[Entry, ...] = _PYDP_ROWS
"""The PyDP rows, in table order."""

NOTE = ("python-dp 1.1.5 wraps Google's C++ algorithms (compiled into `pydp/_pydp.so`; the C++ source is not "
            "in the wheel, so what is said here about them is measured, the Python wrappers are read): every class of "
            "`pydp.algorithms.laplacian` has a row (`dpaudit.mechanisms.catalogue.pydp_algorithms`), built as "
            "`Class(epsilon=1, lower_bound=0, upper_bound=1, dtype='float')` with PyDP's defaults (delta 0, "
            "l0_sensitivity 1, linf_sensitivity 1), one output = one `quick_result(records)` of a fresh object "
            "(`MetaAlgorithm.quick_result`, pydp/algorithms/_algorithm.py: it resets the budget first). The wrapper "
            "rejects NaN or infinite bounds (`__check_input` raises ValueError), not NaN records: measured on 3,000 "
            "runs each, the bounded algorithms ignore NaN records (BoundedSum, BoundedMean and Median on five NaN "
            "records give the outputs of the empty dataset: means 0.000, 0.504, 0.498 vs 0.007, 0.498, 0.494), clamp "
            "+inf to the upper bound, and Count counts a NaN record as a record; so no adversarial input leaked. "
            "PyDP's noise cannot be seeded: the rows are not reproducible from --seed.")
"""Printed under the library's heading."""

LEFT_OUT: dict = {}


def relation_note(entry: Entry) -> str:
    """Where a PyDP row's relation comes from (inferred from the sensitivities it takes)."""
    return ("inferred: no PyDP 1.1.5 docstring names a neighbouring relation; the algorithms take "
            "l0_sensitivity and linf_sensitivity (default 1), bounds on one privacy unit's contributions, and "
            "count the records with noise (no public n): the add/remove calibration, one record = one unit")


RECORD: dict = {}
ADVERSARIAL_RECORD = ""
ADVERSARIAL_SAME_CAUSE: dict = {}
POWER_NOTES: dict = {}
FLOAT_CAUSES: dict = {}

CAUSES: tuple = ()
"""No finding."""

"""The strategies of the input-space search (:mod:`dpaudit.search.input_space`): the candidates, the
record layout a declaration gives, the special values of each column role, the Hypothesis strategy of
each family and the families' seed pairs. Split from that module only to keep each file readable; see its
docstring and ``docs/search.md``, *The input-space search*."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

import numpy as np

from ..datasets import Column, InputSpace

__all__ = ["FLOAT_LIMITS", "INT_LIMITS", "ROLE_VALUES", "SEED_FLOAT_BOUNDS", "SEED_INT_BOUNDS", "SEED_SPECIALS",
           "SPECIAL_VALUES", "Candidate", "distinct_units", "family_names", "layout_of", "seed_candidates", "special_kind"]

_MAX = sys.float_info.max
SPECIAL_VALUES = (float("nan"), float("inf"), float("-inf"), -0.0, 5e-324, 2.2250738585072014e-308, _MAX, -_MAX,
                  1e300, -1e300, 1e16, -1e16, 2.0**53 + 2.0)
"""Special doubles the ``specials`` family mixes into datasets (IEEE specials, the smallest subnormal and
normal, the largest doubles, magnitudes where float sums lose integers)."""

INT_LIMITS = (2**31 - 1, 2**31, 2**32, 2**53, 2**53 + 1, 2**60, 2**61, 2**62, 2**63 - 1)
"""Upper bounds the ``limits`` family tries for integer bounds (int32, 2^53, int64 limits: a few records at
2^60 to 2^62 reach 2^63 when a record contributes several values)."""

FLOAT_LIMITS = (1e16, 2.0**53, 1e154, 1e300, _MAX / 2, _MAX)
"""Upper bounds the ``limits`` family tries for float bounds (lost integers, squares or sums that overflow)."""

ROLE_VALUES = {
    "weight": (0.0, -1.0, 0.5, 2.0, 10.0, 1e6, float("nan"), float("inf"), 1e300),
    "label": (-1.0, 0.5, 2.0**31, -(2.0**31), float("nan")),
    "partition": (-1.0, 0.5, 2.0**31, -(2.0**31), float("nan")),
    "unit": (-1.0, 0.5, 2.0**63, float("nan")),
}
"""Adversarial values of the per-record columns by role (labels and keys also get the declared
range's neighbours, ``lower - 1`` and ``upper + 1``)."""

# ----------------------------------------------------------------------------- candidates


@dataclass(frozen=True)
class Candidate:
    """A neighbouring pair under a configuration of the target.

    Attributes
    ----------
    family : str
        The family that drew it (:data:`FAMILIES`), or ``"given"`` for a user's pair.
    config : tuple of (str, object)
        The public parameters (sorted ``(keyword, value)`` items; empty for the target as declared).
    d0, d1 : ndarray, shape (n0, d) and (n1, d)
        The datasets, of the dtype they are passed as (may hold NaN or infinities).
    label : str
        The adversarial kind of a fixed candidate (``"nan"``, ...) or ``""``.
    """

    family: str
    config: tuple
    d0: np.ndarray = field(repr=False)
    d1: np.ndarray = field(repr=False)
    label: str = ""

    def key(self) -> bytes:
        """A byte string that identifies the pair and its configuration (the memo key)."""
        parts = [repr(self.config).encode(), str(self.d0.dtype).encode(), repr(self.d0.shape).encode(),
                 np.ascontiguousarray(self.d0).tobytes(), repr(self.d1.shape).encode(),
                 np.ascontiguousarray(self.d1).tobytes()]
        return b"|".join(parts)

    def describe_pair(self) -> str:
        """``"D0 = [nan, 0], D1 = [nan, 1] (bounds=(0, 1))"``: the pair as a reader writes it."""
        conf = ", ".join(f"{k}={v!r}" for k, v in self.config)
        dtype = f", records as {self.d0.dtype}" if self.d0.dtype != np.float64 else ""
        extra = f" ({conf}{dtype})" if conf or dtype else ""
        return f"D0 = {_fmt(self.d0)}, D1 = {_fmt(self.d1)}{extra}"


def _fmt(d: np.ndarray) -> str:
    def one(v):
        if isinstance(v, (int, np.integer)):
            return str(int(v))
        v = float(v)
        if math.isnan(v):
            return "nan"
        if v == 0.0:
            return "-0.0" if math.copysign(1.0, v) < 0 else "0"
        return f"{v:.6g}" if (abs(v) >= 1e6 or abs(v) < 1e-4 or math.isinf(v)) else f"{v:g}"

    rows = [one(r[0]) if len(r) == 1 else "(" + ", ".join(one(v) for v in r) + ")" for r in d.tolist()]
    if len(rows) > 12:
        rows = rows[:10] + [f"... {len(rows) - 10} more"]
    return "[" + ", ".join(rows) + "]"


def layout_of(relation, space: InputSpace | None) -> tuple:
    """The record columns searched: the space's declared columns, or one value column per coordinate
    of the relation's domain (the last one a label for labelled relations).

    Returns
    -------
    tuple of Column
    """
    if space is not None and space.columns:
        return tuple(space.columns)
    lo, hi = relation.domain.lower, relation.domain.upper
    cols = [Column("value", float(a), float(b)) for a, b in zip(lo, hi)]
    if getattr(relation, "name", "").startswith("labelled"):
        cols[-1] = Column("label", float(lo[-1]), float(hi[-1]), integer=True, name="label")
    return tuple(cols)


def family_names(space: InputSpace | None, layout: tuple) -> tuple:
    """The families a declaration makes searchable, in :data:`FAMILIES` order: ``specials`` always,
    ``columns`` when a column carries per-record data, ``limits`` when the bounds or another public
    parameter may be set, ``dtypes`` when the API documents dtypes besides float64."""
    names = ["specials"]
    if any(c.role != "value" for c in layout):
        names.append("columns")
    if space is not None and space.build is not None and (space.bounds is not None or space.choices):
        names.append("limits")
    if space is not None and len(space.dtypes) > 1:
        names.append("dtypes")
    return tuple(names)


# ----------------------------------------------------------------------------- strategies


def _ordinary(st, col: Column, lo: float, hi: float):
    if col.integer or isinstance(lo, int) and isinstance(hi, int):
        lo_i, hi_i = int(math.ceil(lo)), int(math.floor(hi))
        return st.one_of(st.sampled_from([lo_i, hi_i]), st.integers(lo_i, hi_i))
    lo, hi = float(lo), float(hi)
    mid = lo / 2 + hi / 2
    return st.one_of(st.sampled_from([lo, hi, mid]), st.floats(lo, hi, allow_nan=False, allow_infinity=False))


def special_kind(value, lo: float, hi: float) -> str | None:
    """The adversarial kind (:data:`~dpaudit.datasets.ADVERSARIAL_KINDS`) a value column's special value
    falls under, so that a declaration's ``kinds`` also restricts the search: NaN, the infinities,
    negative zero, subnormals (and the smallest normal), the largest doubles, and any other value
    beyond the bounds (``above-bounds``/``below-bounds``); None for a value within the bounds."""
    v = float(value)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "+inf" if v > 0 else "-inf"
    if v == 0.0 and math.copysign(1.0, v) < 0:
        return "-0.0"
    if abs(v) == _MAX:
        return "max-double" if v > 0 else "-max-double"
    if v != 0.0 and abs(v) <= 2.2250738585072014e-308:
        return "subnormal"
    if v > hi:
        return "above-bounds"
    if v < lo:
        return "below-bounds"
    return None


def _specials_for(col: Column, lo: float, hi: float, kinds=None) -> tuple:
    width = (hi - lo) if hi > lo else 1.0
    if col.role == "value":
        values = SPECIAL_VALUES + (float(hi) + float(width), float(lo) - float(width))
        if kinds is not None:
            values = tuple(v for v in values if special_kind(v, float(lo), float(hi)) in (None, *kinds))
        return values
    return ROLE_VALUES.get(col.role, ()) + ((float(lo) - 1.0, float(hi) + 1.0) if col.integer else ())


def distinct_units(layout: tuple, common: list, x: list, replaced: int | None) -> tuple:
    """Keep a pair with privacy-unit id columns (role ``"unit"``) a neighbouring pair of its relation.

    A ``"unit"`` column names the privacy unit a record belongs to, and the relation of such a layout is
    *one record = one unit, records whose ids compare equal (``==``) being one unit*. Ordinary ids (finite,
    within the column's range) are therefore made distinct: record ``i`` of ``common`` gets
    ``lower + i``. The record that differs, ``x``, must not join a unit of the other records (an added
    record that shares an id with one of them would add rows to an existing unit, a pair of units
    changed, not one): its id, when ordinary or equal to another record's, becomes a fresh one
    (``lower + len(common)`` under add/remove, ``lower + replaced`` under replace). Special ids that
    compare unequal to every other id (NaN, and values no other record holds) are kept as drawn: several
    records with NaN ids are several units, each with all its contributions.

    Parameters
    ----------
    layout : tuple of Column
    common : list of list
        The records both datasets hold (under replace: the records of ``D0``, ``common[replaced]``
        being the one replaced).
    x : list
        The added (add/remove) or replacing (replace) record.
    replaced : int or None
        The index replaced (replace), None for add/remove.

    Returns
    -------
    (list, list)
        ``common`` and ``x`` with their unit ids fixed (new lists; unchanged when no column is a unit).
    """
    cols = [j for j, c in enumerate(layout) if c.role == "unit"]
    if not cols:
        return common, x
    common = [list(r) for r in common]
    x = list(x)
    for j in cols:
        lo, hi = layout[j].lower, layout[j].upper

        def ordinary(v):
            v = float(v)
            return math.isfinite(v) and lo <= v <= hi

        for i, r in enumerate(common):
            if ordinary(r[j]):
                r[j] = type(r[j])(lo + i) if isinstance(r[j], int) else float(lo + i)
        others = [r[j] for i, r in enumerate(common) if i != replaced]
        if ordinary(x[j]) or any(float(x[j]) == float(v) for v in others):
            fresh = lo + (len(common) if replaced is None else replaced)
            x[j] = int(fresh) if isinstance(x[j], int) else float(fresh)
    return common, x


def _pair_strategy(st, family: str, layout: tuple, space: InputSpace | None, relation_name: str, sizes: tuple,
                   default_config: dict, kinds=None):
    """The Hypothesis strategy of one family: draws a :class:`Candidate`."""
    n_lo, n_hi = sizes

    @st.composite
    def draw_pair(draw):
        config = dict(default_config)
        if family == "limits":
            if space.bounds is not None:
                kind = draw(st.sampled_from(space.bound_kinds))
                cap = space.max_bound if space.max_bound is not None else math.inf
                if kind == "int":
                    hi = draw(st.sampled_from([v for v in INT_LIMITS if v <= cap] or [1]))
                    lo = draw(st.sampled_from([0, -hi, -1, hi - 1] + ([-hi - 1] if hi >= 2**31 - 1 else [])))
                    lo = max(lo, -(2**63))
                else:
                    hi = draw(st.sampled_from([v for v in FLOAT_LIMITS if v <= cap] or [1.0]))
                    lo = draw(st.sampled_from([0.0, -hi, hi / 2]))
                config[space.bounds] = (lo, hi)
            for key, values in space.choices:
                config[key] = draw(st.sampled_from(values))
        vlo_vhi = config.get(space.bounds) if space is not None and space.bounds else None

        def col_range(c: Column):
            if c.role == "value" and vlo_vhi is not None:
                return vlo_vhi
            return (c.lower, c.upper)

        int_records = vlo_vhi is not None and all(isinstance(v, int) for v in vlo_vhi)
        palette = ()
        if family in ("specials", "columns"):
            palette_col = [c for c in layout if (c.role == "value") == (family == "specials")]
            pool = []  # in the declared order (NaN first: Hypothesis favours, and shrinks to, the first)
            for c in palette_col:
                for v in _specials_for(c, *col_range(c), kinds=kinds):
                    if not any(repr(v) == repr(u) for u in pool):
                        pool.append(v)
            if pool:
                palette = tuple(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2, unique_by=repr)))

        def record(special: bool):
            rec = []
            for c in layout:
                lo, hi = col_range(c)
                target_col = (c.role == "value") == (family == "specials")
                if special and target_col and palette and (len(layout) == 1 or draw(st.booleans())):
                    rec.append(draw(st.sampled_from(palette)))
                elif family == "limits" and c.role == "value":
                    rec.append(draw(st.one_of(st.sampled_from([lo, hi]), _ordinary(st, c, lo, hi))))
                else:
                    rec.append(draw(_ordinary(st, c, lo, hi)))
            return rec

        n = draw(st.integers(n_lo, n_hi))
        # several special records (the first n_special) with ordinary ones; the record that differs is
        # special or ordinary on its own coin, so a block of specials next to an ordinary change is likely
        n_special = draw(st.integers(0, n)) if palette else 0
        d0 = [record(i < n_special) for i in range(n)]
        x = record(bool(palette) and draw(st.booleans()))
        if relation_name == "add-remove":
            pos = draw(st.integers(0, n))
            d0, x = distinct_units(layout, d0, x, None)
            d1 = d0[:pos] + [x] + d0[pos:]
        else:
            # the replaced record: an ordinary one by default (the simplest draw), so that a change
            # among ordinary records next to a block of specials comes first
            if n_special < n and not draw(st.booleans()):
                i = draw(st.integers(n_special, n - 1))
            else:
                i = draw(st.integers(0, n - 1))
            d0, x = distinct_units(layout, d0, x, i)
            d1 = [list(r) for r in d0]
            d1[i] = x
        dtype = np.float64
        if family == "dtypes":
            dtype = np.dtype(draw(st.sampled_from(space.dtypes[1:])))
        elif int_records:
            dtype = np.int64
        a0, a1 = _as_array(d0, len(layout), dtype), _as_array(d1, len(layout), dtype)
        return Candidate(family, tuple(sorted(config.items())) if config != default_config else (), a0, a1)

    return draw_pair()


SEED_SPECIALS = (float("nan"), float("inf"), float("-inf"), _MAX, -0.0)
"""Special values of the ``specials`` family's seed pairs (:func:`seed_candidates`)."""

SEED_INT_BOUNDS = ((0, 2**31 - 1), (0, 2**60), (0, 2**62), (-(2**62), 2**62))
SEED_FLOAT_BOUNDS = ((0.0, 1e308),)


def seed_candidates(family: str, layout: tuple, space: InputSpace | None, relation_name: str, sizes: tuple,
                    default_config: dict, kinds=None) -> list:
    """The first candidates of a family, the same for every target of a layout (no pair written for a
    target): the family's class at its simplest, tried before Hypothesis generates.

    * ``specials``: ``k`` records holding one special value (:data:`SEED_SPECIALS` of the declared
      ``kinds``; in every value column, other columns at their lower bound) next to a record at the
      lower bound that becomes the upper bound (replace) or next to which a record at the upper bound
      is added (add/remove), ``k = 1, 3``, and ``k = 8`` with one more record at the upper bound (a
      spread, for variances);
    * ``limits``: the public bounds at a type limit (:data:`SEED_INT_BOUNDS` for integer bounds,
      :data:`SEED_FLOAT_BOUNDS` for float ones), under each value of each choice:
      a record at the lower bound that becomes the upper (replace), or one at the lower
      bound and one at the upper bound added (add/remove), next to ``k = 1, 3`` records at the upper bound;
    * ``columns``: for each per-record column and each adversarial value of its role, a record at the
      lower bounds next to (add/remove) or replaced by (replace) the same record holding that value in
      that column;
    * no seeds for the ``dtypes`` family.

    Returns
    -------
    list of Candidate
        Only pairs whose sizes lie in ``sizes`` (the smaller dataset's range,
        :func:`dpaudit.search.adversarial.pair_sizes`): a seed smaller than ``sizes[0]`` is padded
        with records at the lower bounds, one larger than ``sizes[1]`` left out.
    """
    out = []
    n_lo, n_hi = sizes

    def rec(value_for):
        return [value_for(c) for c in layout]

    def pair(core: list, low: list, high: list, dtype, config: tuple, label: str):
        # padded with ordinary records (the lower corner) up to the smallest size the target accepts,
        # so that a target of a fixed size (a public n) gets the seed at that size
        core = list(core) + [low] * max(0, n_lo - len(core) - 1)
        if relation_name == "replace":
            common, high = distinct_units(layout, core + [low], high, len(core))
            d0, d1 = common, common[:-1] + [high]
            n = len(d0)
        else:
            common, high = distinct_units(layout, core + [low], high, None)
            d0, d1 = common, common + [high]
            n = len(d0)
        if n_lo <= n <= n_hi or (relation_name == "replace" and n_lo <= n <= n_hi + 0):
            out.append(Candidate(family, config, _as_array(d0, len(layout), dtype), _as_array(d1, len(layout), dtype),
                                 label))

    if family == "specials":
        for v in SEED_SPECIALS:
            if kinds is not None and special_kind(v, 0.0, 0.0) not in kinds:
                continue  # the declaration leaves this kind out
            low = rec(lambda c: c.lower)
            high = rec(lambda c: c.upper if c.role == "value" else c.lower)
            for k, ordinary in ((1, 0), (3, 0), (8, 1)):
                core = [rec(lambda c, v=v: v if c.role == "value" else c.lower)] * k + [high] * ordinary
                pair(core, low, high, np.float64, (), f"{k} x {v!r}")
    elif family == "columns":
        low = rec(lambda c: c.lower)
        for j, col in enumerate(layout):
            if col.role == "value":
                continue
            for v in _specials_for(col, col.lower, col.upper):
                odd = list(low)
                odd[j] = v
                pair([], low, odd, np.float64, (), f"{col.name or col.role} {v!r}")
    elif family == "limits" and space is not None:
        from itertools import product

        bound_sets = []
        if space.bounds is not None:
            if "int" in space.bound_kinds:
                bound_sets += list(SEED_INT_BOUNDS)
            if "float" in space.bound_kinds:
                bound_sets += list(SEED_FLOAT_BOUNDS)
            cap = space.max_bound if space.max_bound is not None else math.inf
            bound_sets = [b for b in bound_sets if max(abs(b[0]), abs(b[1])) <= cap]
        else:
            bound_sets = [None]
        keys = [k for k, _ in space.choices]
        for bounds in bound_sets:
            for values in product(*[v for _, v in space.choices]):
                config = dict(default_config)
                config.update(zip(keys, values))
                if bounds is not None:
                    config[space.bounds] = bounds
                if config == default_config:
                    continue
                lo, hi = bounds if bounds is not None else (None, None)

                def val(c, which):
                    if c.role == "value" and bounds is not None:
                        return hi if which else lo
                    return c.upper if (which and c.role == "value") else c.lower

                dtype = np.int64 if bounds is not None and isinstance(hi, int) else np.float64
                for k in (1, 3):
                    core = [rec(lambda c: val(c, True))] * k
                    pair(core, rec(lambda c: val(c, False)), rec(lambda c: val(c, True)), dtype,
                         tuple(sorted(config.items())), "limits")
    return out


def _as_array(rows, dim: int, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if not rows:
        return np.zeros((0, dim), dtype=dtype)
    if dtype.kind in "iub":
        arr = np.array([[int(round(float(v))) if not isinstance(v, int) else v for v in r] for r in rows], dtype=object)
        if dtype.kind == "b":
            return (arr != 0).astype(bool)
        info = np.iinfo(dtype)
        return np.clip(arr, info.min, info.max).astype(dtype)
    return np.array(rows, dtype=dtype).reshape(len(rows), dim)

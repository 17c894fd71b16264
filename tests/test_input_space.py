"""The input-space search (dpaudit.search.input_space): it finds, blind, bugs of the three input classes
of issue 42 on small NumPy mechanisms that carry them (several special values with ordinary records, a
per-record argument, integer bounds at the int64 limit), shrinks them to minimal pairs, certifies them on
fresh outputs at beta / K, and does not accuse correct mechanisms more often than beta."""

from __future__ import annotations

import math

import numpy as np
import pytest

from _harness import assert_rate_at_most
from dpaudit.datasets import AcceptedInputs, AddRemove, Column, Domain, InputSpace, Replace
from dpaudit.mechanisms.base import Mechanism
from dpaudit.audit.input_space import search
from dpaudit.search.input_space import HUNTS_PER_FAMILY, family_names, layout_of, quick_evidence

pytest.importorskip("hypothesis")


class _Vectorised(Mechanism):
    """``f(dataset) + Laplace(scale(dataset))``, vectorised over the outputs (cheap for the tests)."""

    def __init__(self, value, scale, name):
        self.value, self.scale, self.name = value, scale, name

    def sample(self, dataset, num_samples, rng):
        d = np.asarray(dataset)
        with np.errstate(all="ignore"):
            v, b = self.value(d), self.scale(d)
        return (v + rng.laplace(0.0, 1.0, size=num_samples) * b).reshape(-1, 1)


def _nanmean_buggy():
    # ignores NaN records but calibrates to the count *with* them (diffprivlib's nanmean pattern)
    def value(d):
        x = np.clip(d[:, 0], 0.0, 1.0)
        return float(np.nanmean(x)) if np.any(~np.isnan(x)) else 0.0

    return _Vectorised(value, lambda d: 1.0 / max(1, len(d)), "nanmean-buggy")


def _nanmean_correct():
    def value(d):
        x = np.clip(d[:, 0], 0.0, 1.0)
        return float(np.nanmean(x)) if np.any(~np.isnan(x)) else 0.0

    return _Vectorised(value, lambda d: 1.0 / max(1, int(np.sum(~np.isnan(d[:, 0])))), "nanmean-correct")


def _weighted_count():
    # a histogram bin with per-record weights, calibrated as if each record counted once
    return _Vectorised(lambda d: float(np.sum(np.where(np.isfinite(d[:, 1]), d[:, 1], 0.0))), lambda d: 1.0,
                       "weighted-count")


def _int_sum(bounds=(0.0, 1.0)):
    lo, hi = bounds

    def value(d):
        x = np.clip(d[:, 0], lo, hi)
        return float(np.sum(x.astype(np.int64))) if np.issubdtype(d.dtype, np.integer) else float(np.sum(x))

    return _Vectorised(value, lambda d: float(hi - lo), f"int-sum{bounds}")


def test_finds_several_special_values_blind_and_shrinks():
    rel = Replace(Domain((0.0,), (1.0,)), min_size=1, max_size=8)
    r = search(_nanmean_buggy(), rel, AcceptedInputs(), epsilon=1.0, beta=0.05, budget=60, seed=3)
    shifts = [w for w in r.witnesses if w.evidence == "distribution"]
    assert shifts, [h for h in r.hunts]
    c = shifts[0].candidate
    # a minimal pair: NaN records next to an ordinary record that changes; both sides release finite values
    assert c.family == "specials" and np.isnan(c.d0).any() and np.isnan(c.d1).any()
    assert len(c.d0) <= 4 and np.array_equal(np.isnan(c.d0), np.isnan(c.d1))
    assert shifts[0].screen.leak.delta_lower(1.0) > 0
    # every certified statement is at beta / K, K fixed by the declaration before the search
    assert r.max_candidates == HUNTS_PER_FAMILY * len(r.families) and r.families == ("specials",)
    assert all(w.screen.leak.beta == pytest.approx(0.05 / r.max_candidates) for w in r.witnesses)


def test_finds_a_per_record_argument_blind():
    space = InputSpace(columns=(Column("value", 0.0, 1.0), Column("weight", 1.0, 1.0, name="weights")),
                       build=_weighted_count)
    rel = AddRemove(Domain((0.0, 1.0), (1.0, 1.0)), min_size=0, max_size=6)
    r = search(_weighted_count(), rel, AcceptedInputs(space=space), epsilon=1.0, beta=0.05, budget=40, seed=1)
    assert r.families == ("specials", "columns")
    w = [w for w in r.witnesses if w.candidate.family == "columns"]
    assert w, r.hunts
    c = w[0].candidate
    added = c.d1 if len(c.d1) > len(c.d0) else c.d0
    assert np.any(np.abs(added[:, 1]) > 1.0)  # the weight of the differing record is beyond 1


class _UnitCount(Mechanism):
    """A count of privacy units, one row each (contribution bounding to one row per unit), Laplace(1):
    the records are units ``(id, p_1, p_2, p_3)`` of three rows each, grouped by id in a Python dict of the
    rows' own id objects (a table read cell by cell). ``merge_nan``: NaN ids are one key (correct);
    otherwise each NaN row is a unit of its own (the PipelineDP LocalBackend pattern)."""

    def __init__(self, merge_nan: bool):
        self.merge_nan, self.name = merge_nan, f"unit-count(merge_nan={merge_nan})"

    def sample(self, dataset, num_samples, rng):
        d = np.asarray(dataset, dtype=float).reshape(len(dataset), -1)
        rows = np.array([(r[0], p) for r in d for p in r[1:]]).reshape(-1, 2).tolist()
        keys = {("nan" if self.merge_nan and math.isnan(i) else i) for i, _ in rows}
        return (len(keys) + rng.laplace(0.0, 1.0, size=num_samples)).reshape(-1, 1)


_UNIT_LAYOUT = (Column("unit", 0.0, 1e6, integer=True, name="id"),) + (Column("partition", 0.0, 2.0, integer=True),) * 3


def test_finds_a_unit_whose_id_splits_it_blind_and_spares_the_correct_grouping():
    rel = AddRemove(Domain((0.0,) * 4, (1e6, 2.0, 2.0, 2.0)), min_size=1, max_size=6)
    space = InputSpace(columns=_UNIT_LAYOUT)
    r = search(_UnitCount(False), rel, AcceptedInputs(kinds=(), space=space), epsilon=1.0, beta=0.05, budget=20,
               seed=0, families=("columns",))
    assert r.witnesses, r.hunts
    c = r.witnesses[0].candidate
    added = c.d1 if len(c.d1) > len(c.d0) else c.d0
    assert np.isnan(added[:, 0]).any()  # a unit with a NaN id
    beta, runs, accused = 0.2, 6, 0
    for seed in range(runs):
        r = search(_UnitCount(True), rel, AcceptedInputs(kinds=(), space=space), epsilon=1.0, beta=beta, budget=12,
                   seed=seed, samples=24, certify_samples=200, families=("columns",))
        accused += bool(r.witnesses)
    assert_rate_at_most(accused, runs, beta)


def test_unit_ids_keep_pairs_neighbouring():
    from dpaudit.search.input_strategies import distinct_units, seed_candidates

    layout = (Column("unit", 0.0, 100.0, integer=True), Column("value", 0.0, 1.0))
    # ordinary ids become distinct; an added record sharing an id gets a fresh one; NaN ids stay
    common, x = distinct_units(layout, [[3, 0.5], [3, 0.2], [float("nan"), 0.1]], [0, 0.9], None)
    assert [r[0] for r in common[:2]] == [0, 1] and math.isnan(common[2][0]) and x[0] == 3
    common, x = distinct_units(layout, [[-1.0, 0.5], [5, 0.2]], [-1.0, 0.9], None)
    assert x[0] not in (common[0][0], common[1][0])
    common, x = distinct_units(layout, [[-1.0, 0.5], [5, 0.2]], [float("nan"), 0.9], 1)
    assert math.isnan(x[0]) and common[1][0] == 1
    assert distinct_units((Column("value"),), [[0.5]], [0.7], None) == ([[0.5]], [0.7])
    # every seed pair of the columns family: the differing record's id equals no other record's
    for cand in seed_candidates("columns", layout, None, "add-remove", (1, 5), {}):
        ids0 = cand.d0[:, 0].tolist()
        assert not any(v == cand.d1[-1, 0] for v in ids0), cand.describe_pair()


def test_finds_integer_bounds_at_the_type_limit_blind():
    space = InputSpace(build=_int_sum, bounds="bounds", default_bounds=(0.0, 1.0), bound_kinds=("int",))
    rel = Replace(Domain((0.0,), (1.0,)), min_size=1, max_size=6)
    r = search(_int_sum(), rel, AcceptedInputs(space=space), epsilon=1.0, beta=0.05, budget=30, seed=0,
               families=("limits",))
    assert r.witnesses, r.hunts
    c = r.witnesses[0].candidate
    bounds = dict(c.config)["bounds"]
    assert isinstance(bounds[1], int) and bounds[1] >= 2**60 and c.d0.dtype == np.int64


def test_no_false_accusation_of_correct_mechanisms_beyond_beta():
    # the certification phase's guarantee, end to end: correct targets (a NaN-ignoring mean calibrated to the
    # records it uses; an integer sum computed in float) are accused at most beta of the time
    rel = Replace(Domain((0.0,), (1.0,)), min_size=1, max_size=6)
    space = InputSpace(build=lambda bounds=(0.0, 1.0): _Vectorised(
        lambda d: float(np.sum(np.clip(d[:, 0].astype(float), *bounds))), lambda d: float(bounds[1] - bounds[0]),
        "float-sum"), bounds="bounds", default_bounds=(0.0, 1.0))
    beta, runs, accused = 0.2, 12, 0
    for seed in range(runs):
        for mech, accepts in ((_nanmean_correct(), AcceptedInputs(kinds=("nan", "-0.0", "subnormal"))),
                              (space.build(), AcceptedInputs(kinds=(), space=space))):
            r = search(mech, rel, accepts, epsilon=1.0, beta=beta, budget=15, seed=seed, samples=24,
                       certify_samples=200)
            accused += bool(r.witnesses)
    assert_rate_at_most(accused, 2 * runs, beta)


def test_same_seed_same_search():
    rel = Replace(Domain((0.0,), (1.0,)), min_size=1, max_size=6)
    a = search(_nanmean_buggy(), rel, epsilon=1.0, beta=0.05, budget=20, seed=7)
    b = search(_nanmean_buggy(), rel, epsilon=1.0, beta=0.05, budget=20, seed=7)
    assert [h.get("pair") for h in a.hunts] == [h.get("pair") for h in b.hunts]
    assert a.pairs_tried == b.pairs_tried and a.calls == b.calls


def test_layout_families_and_declaration_errors():
    rel = AddRemove(Domain((0.0, 0.0), (1.0, 3.0)))
    assert [c.role for c in layout_of(rel, None)] == ["value", "value"]
    assert family_names(None, layout_of(rel, None)) == ("specials",)
    space = InputSpace(columns=(Column("value"), Column("label", 0, 3, integer=True)), build=lambda: None,
                       dtypes=("float64", "int32"))
    assert family_names(space, space.columns) == ("specials", "columns", "dtypes")
    with pytest.raises(ValueError, match="role"):
        Column("weights")
    with pytest.raises(ValueError, match="build"):
        InputSpace(bounds="bounds")
    with pytest.raises(ValueError, match="dtypes"):
        InputSpace(dtypes=("float16",))
    with pytest.raises(ValueError, match="beta"):
        search(_nanmean_buggy(), rel, epsilon=1.0, beta=1.5)
    from dpaudit.datasets import PrivacyUnitAddRemove

    with pytest.raises(ValueError, match="add-remove or replace"):
        search(_nanmean_buggy(), PrivacyUnitAddRemove(), epsilon=1.0)


def test_quick_evidence_kinds():
    rng = np.random.default_rng(0)
    y = rng.laplace(size=(200, 1))
    nan = np.full((200, 1), math.nan)
    ev = quick_evidence(y, nan, 1.0, 0.0)
    assert ev["special-output"][0] == pytest.approx(1.0) and ev["distribution"][0] == -1.0
    shifted = quick_evidence(y, y + 8.0, 1.0, 0.0)
    assert shifted["distribution"][0] > 0.5 and shifted["special-output"][0] <= 0.0
    assert quick_evidence(y, rng.laplace(size=(200, 2)), 1.0, 0.0)["special-output"][0] == 1.0  # another shape


def test_certification_accuses_a_tight_correct_mechanism_at_most_beta():
    # the certification phase alone: a Laplace sum whose privacy loss is exactly epsilon on the tails, given a
    # pair where that loss is reached; beta large so that a wrong constant would show in 60 runs
    rel = AddRemove(Domain((0.0,), (1.0,)), min_size=0, max_size=4)
    mech = _Vectorised(lambda d: float(np.sum(np.clip(d[:, 0], 0.0, 1.0))), lambda d: 1.0, "laplace-sum")
    pairs = [([[0.0]], [[0.0], [1.0]]), ([], [[1.0]])]
    beta, runs = 0.3, 60
    accused = caught = 0
    for seed in range(runs):
        r = search(mech, rel, epsilon=1.0, beta=beta, seed=seed, families=(), given=pairs, certify_samples=300)
        assert r.max_candidates == 2 and len(r.certified) == 2
        accused += bool(r.witnesses)
        # the same pairs against a claim the mechanism breaks (epsilon 0.25): the bound has power
        caught += bool(search(mech, rel, epsilon=0.25, beta=beta, seed=seed, families=(), given=pairs,
                              certify_samples=300).witnesses)
    assert_rate_at_most(accused, runs, beta)
    assert caught >= runs // 2


def test_a_targets_search_options_reach_the_search_and_the_record():
    from dpaudit.audit.adversarial import screen_stage

    rel = Replace(Domain((0.0,), (1.0,)), min_size=1, max_size=4)
    mech = _nanmean_correct()
    stage = screen_stage(mech, rel, epsilon=1.0, beta=0.05, seed=0, samples=300, budget=3,
                         accepts=AcceptedInputs(kinds=("nan",)),
                         search_options={"samples": 8, "certify_samples": 40, "max_seconds": 60.0})
    s = stage["search"]
    assert s["samples"] == 8 and s["certify_samples"] == 40 and stage["samples"] == 40
    assert s["options"] == {"samples": 8, "certify_samples": 40, "max_seconds": 60.0}
    plain = screen_stage(mech, rel, epsilon=1.0, beta=0.05, seed=0, samples=300, budget=3,
                         accepts=AcceptedInputs(kinds=("nan",)))
    assert plain["search"]["certify_samples"] == 300 and "options" not in plain["search"]

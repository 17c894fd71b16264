"""Record domains and neighbouring relations (dpaudit.datasets)."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.datasets import AddRemove, Domain, NeighbouringPair, Replace, as_dataset, make_relation
from dpaudit.errors import NeighbouringError

NAN = float("nan")


# --------------------------------------------------------------------------- Domain
def test_domain_normalises_and_contains():
    d = Domain([0, -1], [1, 2])
    assert d.lower == (0.0, -1.0) and d.upper == (1.0, 2.0)
    assert d.record_dim == 2
    assert d.contains(np.array([[0.0, -1.0], [1.0, 2.0], [0.5, 0.0]]))
    assert not d.contains(np.array([[0.5, 2.5]]))
    assert not d.contains(np.array([[-0.01, 0.0]]))
    assert Domain.unit(3).record_dim == 3 and Domain.unit(3).upper == (1.0, 1.0, 1.0)
    assert Domain(5.0, 5.0).record_dim == 1  # a degenerate box is allowed
    assert Domain.unit(2).to_dict() == {"lower": [0.0, 0.0], "upper": [1.0, 1.0]}


@pytest.mark.parametrize(
    "lower, upper, shown",
    [
        ([1.0], [0.0], "lower"),
        ([0.0, 2.0], [1.0, 1.0], "exceeds"),
        ([0.0], [float("inf")], "finite"),
        ([NAN], [1.0], "finite"),
        ([0.0, 0.0], [1.0], "equal length"),
        ([], [], "equal length"),
    ],
)
def test_domain_validation(lower, upper, shown):
    with pytest.raises(NeighbouringError, match=shown):
        Domain(lower, upper)


def test_random_records_stay_in_the_box_and_hit_corners():
    d = Domain([-2.0, 0.0], [3.0, 0.5])
    recs = d.random_records(2000, np.random.default_rng(0))
    assert recs.shape == (2000, 2)
    assert d.contains(recs)
    # Corners are drawn on purpose (extreme_probability=0.5 by default): both ends appear.
    for j in range(2):
        assert np.any(recs[:, j] == d.lower[j]) and np.any(recs[:, j] == d.upper[j])
    none_extreme = d.random_records(500, np.random.default_rng(1), extreme_probability=0.0)
    assert not np.any(np.isin(none_extreme, [-2.0, 3.0]))


# --------------------------------------------------------------------------- as_dataset
def test_as_dataset_shapes_and_errors():
    assert as_dataset([1.0, 2.0]).shape == (2, 1)
    assert as_dataset([]).shape == (0, 1)
    assert as_dataset([[1.0, 2.0]], record_dim=2).shape == (1, 2)
    with pytest.raises(NeighbouringError, match="dimension"):
        as_dataset([[1.0, 2.0]], record_dim=3)
    with pytest.raises(NeighbouringError, match="scalar records"):
        as_dataset([1.0, 2.0], record_dim=2)
    with pytest.raises(NeighbouringError, match="NaN"):
        as_dataset([0.1, NAN])
    with pytest.raises(NeighbouringError, match="numeric"):
        as_dataset(["a", "b"])
    with pytest.raises(NeighbouringError, match="numeric"):
        as_dataset([[0.1], [0.2, 0.3]])
    with pytest.raises(NeighbouringError, match="shape"):
        as_dataset(np.zeros((2, 2, 2)))


# --------------------------------------------------------------------------- AddRemove
@pytest.mark.parametrize(
    "d0, d1",
    [
        ([0.2, 0.7], [0.2, 0.7, 0.5]),
        ([0.2, 0.7], [0.5, 0.7, 0.2]),  # rows in any order
        ([0.7, 0.2, 0.5], [0.2, 0.7]),  # the larger dataset first
        ([0.3], [0.3, 0.3]),  # repeated records are a multiset
        ([1.0], [1.0, 0.0]),
    ],
)
def test_add_remove_accepts_neighbours(d0, d1):
    rel = AddRemove(min_size=1, max_size=5)
    pair = rel.pair(d0, d1, description="why")
    assert isinstance(pair, NeighbouringPair)
    assert pair.relation == "add-remove" and pair.description == "why"
    np.testing.assert_array_equal(pair.d0.ravel(), d0)
    np.testing.assert_array_equal(pair.d1.ravel(), d1)


@pytest.mark.parametrize(
    "d0, d1, shown",
    [
        ([0.2, 0.7], [0.2, 0.8], "not add/remove neighbours"),  # same size
        ([0.2, 0.7], [0.2, 0.9, 0.5], "not add/remove neighbours"),  # one added, one changed
        ([0.3], [0.3, 0.3, 0.3], "not add/remove neighbours"),  # two added
        ([0.3, 0.3], [0.3, 0.4, 0.5], "not add/remove neighbours"),  # multiset, not set, inclusion
        ([0.2], [0.2, 1.5], "outside the domain"),
        ([-0.1], [-0.1, 0.5], "outside the domain"),
        ([0.1, 0.2, 0.3, 0.4, 0.5], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], "size range"),
        ([], [0.5], "size range"),
        ([0.2, NAN], [0.2, NAN, 0.3], "NaN"),
    ],
)
def test_add_remove_rejects(d0, d1, shown):
    rel = AddRemove(min_size=1, max_size=5)
    with pytest.raises(NeighbouringError, match=shown):
        rel.pair(d0, d1)


def test_add_remove_error_quotes_the_datasets():
    with pytest.raises(NeighbouringError) as info:
        AddRemove().pair([0.25, 0.75], [0.25, 0.5])
    assert "0.25" in str(info.value) and "0.75" in str(info.value) and "0.5" in str(info.value)


def test_add_remove_multidimensional_records():
    rel = AddRemove(domain=Domain([0, 0], [1, 10]), max_size=4)
    rel.pair([[0.5, 3.0]], [[0.5, 3.0], [1.0, 10.0]])
    with pytest.raises(NeighbouringError, match="not add/remove"):
        rel.pair([[0.5, 3.0]], [[0.5, 4.0], [1.0, 10.0]])
    with pytest.raises(NeighbouringError, match="outside the domain"):
        rel.pair([[0.5, 3.0]], [[0.5, 3.0], [1.0, 11.0]])
    with pytest.raises(NeighbouringError):
        rel.pair([0.5], [0.5, 0.2])  # scalar records in a 2-D domain


# --------------------------------------------------------------------------- Replace
@pytest.mark.parametrize(
    "d0, d1",
    [
        ([0.1, 0.2, 0.3], [0.1, 0.9, 0.3]),
        ([0.1, 0.2, 0.3], [0.3, 0.9, 0.1]),  # any order
        ([0.1, 0.2], [0.2, 0.1]),  # a permutation differs in no record
        ([0.0], [1.0]),
    ],
)
def test_replace_accepts_neighbours(d0, d1):
    pair = Replace(max_size=5).pair(d0, d1)
    assert pair.relation == "replace"


@pytest.mark.parametrize(
    "d0, d1, shown",
    [
        ([0.1, 0.2, 0.3], [0.1, 0.8, 0.9], "more than one record"),
        ([0.1, 0.1], [0.1, 0.2, 0.2], "sizes"),
        ([0.1, 0.2], [0.1], "sizes"),
        ([], [], "size"),
        ([0.1, 2.0], [0.1, 0.5], "outside the domain"),
        ([0.1, NAN], [0.1, 0.5], "NaN"),
        ([0.1] * 6, [0.1] * 5 + [0.2], "size range"),
    ],
)
def test_replace_rejects(d0, d1, shown):
    with pytest.raises(NeighbouringError, match=shown):
        Replace(min_size=0, max_size=5).pair(d0, d1)


# --------------------------------------------------------------------------- random pairs
RELATIONS = [
    ("add-remove", Domain.unit(1), 1, 10),
    ("add-remove", Domain([-1.0, 0.0, 5.0], [1.0, 0.0, 6.0]), 0, 4),
    ("replace", Domain.unit(1), 1, 10),
    ("replace", Domain([-3.0, 2.0], [3.0, 4.0]), 2, 3),
]


@pytest.mark.parametrize("name, domain, lo, hi", RELATIONS)
def test_random_pairs_are_valid_neighbours(name, domain, lo, hi):
    rel = make_relation(name, domain=domain, min_size=lo, max_size=hi)
    sizes = set()
    for seed in range(300):
        pair = rel.random_pair(np.random.default_rng(seed))
        assert pair.relation == name
        assert pair.d0.shape[1] == domain.record_dim and pair.d1.shape[1] == domain.record_dim
        assert domain.contains(pair.d0) and domain.contains(pair.d1)
        assert lo <= len(pair.d0) <= hi and lo <= len(pair.d1) <= hi
        # The relation's own validator accepts what it generates, in both orders.
        rel.pair(pair.d0, pair.d1)
        rel.pair(pair.d1, pair.d0)
        sizes.add(len(pair.d0))
    # Every allowed size of D0 occurs: add-remove draws |D0| in [lo, hi - 1], replace in [max(lo, 1), hi].
    expected = set(range(lo, hi)) if name == "add-remove" else set(range(max(lo, 1), hi + 1))
    assert sizes == expected


@pytest.mark.parametrize("name, domain, lo, hi", RELATIONS)
def test_random_pairs_are_reproducible_from_a_seed(name, domain, lo, hi):
    rel = make_relation(name, domain=domain, min_size=lo, max_size=hi)
    a = [rel.random_pair(np.random.default_rng(123)) for _ in range(2)]
    np.testing.assert_array_equal(a[0].d0, a[1].d0)
    np.testing.assert_array_equal(a[0].d1, a[1].d1)
    assert a[0].description == a[1].description
    # And a sequence drawn from one generator is reproducible too.
    g1, g2 = np.random.default_rng(7), np.random.default_rng(7)
    for _ in range(5):
        p1, p2 = rel.random_pair(g1), rel.random_pair(g2)
        np.testing.assert_array_equal(p1.d1, p2.d1)
    different = [rel.random_pair(np.random.default_rng(s)).d1 for s in range(10)]
    assert any(d.shape != different[0].shape or not np.array_equal(d, different[0]) for d in different[1:])


def test_add_remove_random_pair_needs_room_for_one_more_record():
    with pytest.raises(NeighbouringError, match="max_size"):
        AddRemove(min_size=3, max_size=3).random_pair(np.random.default_rng(0))
    # Replace needs one record to replace: a NeighbouringError, not numpy's "low >= high".
    with pytest.raises(NeighbouringError, match="max_size"):
        Replace(min_size=0, max_size=0).random_pair(np.random.default_rng(0))


@pytest.mark.parametrize(
    "kwargs, shown",
    [
        ({"min_size": -1}, "min_size"),
        ({"min_size": 1.5}, "min_size"),
        ({"min_size": 4, "max_size": 3}, "max_size"),
        ({"max_size": 2.5}, "max_size"),
    ],
)
def test_relation_size_validation(kwargs, shown):
    for cls in (AddRemove, Replace):
        with pytest.raises(NeighbouringError, match=shown):
            cls(**kwargs)


# --------------------------------------------------------------------------- make_relation / serialisation
def test_make_relation():
    rel = make_relation("add-remove", min_size=2, max_size=7)
    assert isinstance(rel, AddRemove) and (rel.min_size, rel.max_size) == (2, 7)
    assert rel.domain == Domain.unit(1)
    rel = make_relation("replace", domain=Domain.unit(2))
    assert isinstance(rel, Replace) and rel.domain.record_dim == 2
    assert rel.to_dict() == {
        "relation": "replace",
        "domain": {"lower": [0.0, 0.0], "upper": [1.0, 1.0]},
        "min_size": 1,
        "max_size": 10,
    }
    with pytest.raises(NeighbouringError, match="'swap'") as info:
        make_relation("swap")
    assert "add-remove" in str(info.value) and "replace" in str(info.value)


def test_neighbouring_pair_round_trip():
    pair = AddRemove().pair([0.25, 1.0], [0.25, 1.0, 0.0], description="corner")
    back = NeighbouringPair.from_dict(pair.to_dict())
    np.testing.assert_array_equal(back.d0, pair.d0)
    np.testing.assert_array_equal(back.d1, pair.d1)
    assert (back.relation, back.description) == ("add-remove", "corner")
    # Value equality works for multi-record datasets (compares the arrays, never raises).
    assert back == pair
    assert pair != AddRemove().pair([0.25, 1.0], [0.25, 1.0, 0.5], description="corner")
    assert pair != AddRemove().pair([0.25, 1.0], [0.25, 1.0, 0.0], description="other")
    assert pair != Replace().pair([0.25, 1.0], [0.25, 0.0])

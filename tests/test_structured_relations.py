"""Neighbouring relations for structured data: privacy-unit rows and labelled examples.

No optional library is needed here; the CLI test audits small NumPy mechanisms that carry a
structured relation as their ``neighbouring`` hint.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from typer.testing import CliRunner

from dpaudit.cli import app
from dpaudit.datasets import (
    AddRemove,
    Domain,
    LabelledAddRemove,
    LabelledReplace,
    PrivacyUnitAddRemove,
    PrivacyUnitDomain,
    Replace,
    make_relation,
)
from dpaudit.errors import NeighbouringError

ROWS = PrivacyUnitDomain((0, 0, 0.0), (9, 2, 1.0), integer_columns=(1,), max_rows_per_unit=3)


# --------------------------------------------------------------------------- PrivacyUnitDomain
def test_privacy_unit_domain_normalises_and_contains():
    assert ROWS.integer_columns == (0, 1)  # the id column is always an integer column
    assert ROWS.max_rows_per_unit == 3 and ROWS.num_ids == 10 and ROWS.record_dim == 3
    assert isinstance(ROWS, Domain)
    assert ROWS.contains(np.array([[0, 2, 0.5], [9, 0, 1.0]]))
    assert not ROWS.contains(np.array([[0.5, 2, 0.5]]))  # a fractional id
    assert not ROWS.contains(np.array([[0, 1.5, 0.5]]))  # a fractional partition
    assert not ROWS.contains(np.array([[0, 3, 0.5]]))  # outside the box
    assert ROWS.to_dict() == {
        "lower": [0.0, 0.0, 0.0],
        "upper": [9.0, 2.0, 1.0],
        "integer_columns": [0, 1],
        "max_rows_per_unit": 3,
    }
    assert PrivacyUnitDomain.from_domain(ROWS) is ROWS
    plain = PrivacyUnitDomain.from_domain(Domain((0, 0), (4, 1)))
    assert plain.integer_columns == (0,) and plain.max_rows_per_unit == 3


@pytest.mark.parametrize(
    "kwargs, shown",
    [
        (dict(integer_columns=(3,)), "not a column index"),
        (dict(integer_columns=(1.5,)), "1.5"),
        (dict(integer_columns=("a",)), "column indices"),
        (dict(max_rows_per_unit=0), "max_rows_per_unit"),
        (dict(max_rows_per_unit=2.5), "max_rows_per_unit"),
        (dict(max_rows_per_unit=True), "max_rows_per_unit"),
    ],
)
def test_privacy_unit_domain_validation(kwargs, shown):
    with pytest.raises(NeighbouringError, match=shown):
        PrivacyUnitDomain((0, 0, 0.0), (9, 2, 1.0), **kwargs)


def test_privacy_unit_domain_integer_column_without_integers():
    with pytest.raises(NeighbouringError, match=r"column 0 has bounds \[0.2, 0.8\]"):
        PrivacyUnitDomain((0.2, 0.0), (0.8, 1.0))


def test_random_rows_have_integer_keys_within_bounds():
    rows = ROWS.random_records(2000, np.random.default_rng(0))
    assert rows.shape == (2000, 3)
    assert ROWS.contains(rows)
    assert set(np.unique(rows[:, 1])) == {0.0, 1.0, 2.0}
    assert np.mean(rows[:, 2] == 1.0) > 0.15  # the value column still favours its extremes


# --------------------------------------------------------------------------- PrivacyUnitAddRemove
def test_privacy_unit_pair_adds_all_rows_of_one_unit():
    rel = PrivacyUnitAddRemove(ROWS, min_size=1, max_size=5)
    d0 = [[1, 0, 0.5], [2, 1, 0.25], [2, 2, 1.0]]
    d1 = d0 + [[7, 0, 1.0], [7, 1, 1.0], [7, 1, 0.0]]
    pair = rel.pair(d0, d1)
    assert pair.relation == "privacy-unit"
    assert pair.description == "privacy unit 7 (3 rows) added"
    assert pair.d0.shape == (3, 3) and pair.d1.shape == (6, 3)
    assert rel.pair(d1, d0).description == "privacy unit 7 (3 rows) removed"
    # Row order does not matter: datasets are multisets of rows.
    assert rel.pair(d0[::-1], d1[::-1], description="mine").description == "mine"
    # With min_size 0 the empty dataset neighbours any one-unit dataset.
    rel0 = PrivacyUnitAddRemove(ROWS, min_size=0, max_size=5)
    assert rel0.pair([], [[3, 2, 0.5], [3, 2, 0.5]]).d0.shape == (0, 3)


@pytest.mark.parametrize(
    "d0, d1, shown",
    [
        ([[1, 0, 0.5]], [[1, 0, 0.5], [7, 0, 1.0], [8, 0, 1.0]], "rows of 2 privacy units"),
        ([[1, 0, 0.5]], [[1, 0, 0.5], [1, 1, 1.0]], "also has rows"),  # one row of an existing unit
        ([[1, 0, 0.5]], [[2, 0, 0.5]], "not privacy-unit neighbours"),  # a replacement
        ([[1, 0, 0.5]], [[1, 0, 0.25], [7, 0, 1.0]], "not privacy-unit neighbours"),  # a row changed too
        ([[1, 0, 0.5]], [[1, 0, 0.5], [7, 0, 1.0], [7, 1, 1.0], [7, 2, 1.0], [7, 2, 0.0]], "4 rows"),
        ([[1, 0, 0.5]], [[1, 0, 0.5], [7, 0, 2.0]], "outside the domain"),
        ([[1, 0, 0.5]], [[1, 0, 0.5], [7.5, 0, 1.0]], "non-integer"),
        ([[1, 0, 0.5]], [[1, 0, 0.5, 0.0]], "dimension"),
        ([], [[7, 0, 1.0]], "0 privacy units"),
    ],
)
def test_privacy_unit_pair_rejects_non_neighbours(d0, d1, shown):
    rel = PrivacyUnitAddRemove(ROWS, min_size=1, max_size=5)
    with pytest.raises(NeighbouringError, match=shown):
        rel.pair(d0, d1)


def test_privacy_unit_size_range_counts_units_not_rows():
    rel = PrivacyUnitAddRemove(ROWS, min_size=1, max_size=2)
    rel.pair([[1, 0, 0.5], [1, 1, 0.5], [1, 2, 0.5]], [[1, 0, 0.5], [1, 1, 0.5], [1, 2, 0.5], [2, 0, 1.0]])
    with pytest.raises(NeighbouringError, match="3 privacy units"):
        rel.pair([[1, 0, 0.5], [2, 0, 0.5]], [[1, 0, 0.5], [2, 0, 0.5], [3, 0, 0.5]])


def test_privacy_unit_random_pairs_are_valid_neighbours():
    rel = PrivacyUnitAddRemove(ROWS, min_size=1, max_size=6)
    rng = np.random.default_rng(3)
    added_rows, units = [], []
    for _ in range(200):
        pair = rel.random_pair(rng)
        checked = rel.pair(pair.d0, pair.d1)  # raises if not neighbours
        assert checked.description.endswith("added")
        extra = len(pair.d1) - len(pair.d0)
        assert 1 <= extra <= ROWS.max_rows_per_unit
        added_rows.append(extra)
        units.append(len(np.unique(pair.d0[:, 0])))
    assert set(added_rows) == {1, 2, 3}
    assert min(units) == 1 and max(units) == 5  # uniform in [min_size, max_size - 1]
    a, b = rel.random_pair(np.random.default_rng(9)), rel.random_pair(np.random.default_rng(9))
    assert a == b


def test_privacy_unit_relation_construction():
    rel = PrivacyUnitAddRemove()  # default: (id 0..99, partition 0..2, value [0, 1]) rows
    assert rel.domain.integer_columns == (0, 1) and rel.domain.num_ids == 100
    rel.pair([[5, 2, 0.5]], [[5, 2, 0.5], [6, 0, 1.0]])
    plain = PrivacyUnitAddRemove(Domain((0, 0.0), (20, 1.0)), 1, 4)
    assert isinstance(plain.domain, PrivacyUnitDomain) and plain.domain.integer_columns == (0,)
    with pytest.raises(NeighbouringError, match="hold 10"):
        PrivacyUnitAddRemove(ROWS, min_size=1, max_size=11)
    with pytest.raises(NeighbouringError, match="max_size >= min_size"):
        PrivacyUnitAddRemove(ROWS, min_size=3, max_size=3).random_pair(np.random.default_rng(0))


# --------------------------------------------------------------------------- labelled examples
EXAMPLES = Domain((-1.0, -1.0, 0.0), (1.0, 1.0, 2.0))  # two features, classes 0, 1, 2


@pytest.mark.parametrize("cls, name", [(LabelledAddRemove, "labelled-add-remove"), (LabelledReplace, "labelled-replace")])
def test_labelled_relations_validate_labels(cls, name):
    rel = cls(EXAMPLES, 1, 5)
    assert rel.name == name
    d0 = [[0.5, -1.0, 2], [0.0, 0.0, 0]]
    d1 = d0 + [[1.0, 1.0, 1]] if cls is LabelledAddRemove else [[0.5, -1.0, 2], [1.0, 1.0, 1]]
    assert rel.pair(d0, d1).relation == name
    bad = [row[:] for row in d1]
    bad[-1][-1] = 0.5
    with pytest.raises(NeighbouringError, match="non-integer label 0.5"):
        rel.pair(d0, bad)
    with pytest.raises(NeighbouringError, match="outside the domain"):
        rel.pair(d0, [row[:-1] + [3] for row in d1])
    # The base relation's neighbour check still applies.
    with pytest.raises(NeighbouringError, match="not"):
        rel.pair(d0, [[0.9, 0.9, 0], [0.8, 0.8, 0], [0.7, 0.7, 0]])


@pytest.mark.parametrize("cls", [LabelledAddRemove, LabelledReplace])
def test_labelled_random_pairs_have_integer_labels(cls):
    rel = cls(EXAMPLES, 1, 6)
    rng = np.random.default_rng(5)
    labels = []
    for _ in range(100):
        pair = rel.random_pair(rng)
        rel.pair(pair.d0, pair.d1)  # raises if invalid
        labels.extend(pair.d1[:, -1].tolist())
    assert set(labels) == {0.0, 1.0, 2.0}
    feats = pair.d1[:, :-1]
    assert np.all((feats >= -1) & (feats <= 1)) and np.any(feats != np.round(feats))
    assert cls(EXAMPLES, 1, 6).random_pair(np.random.default_rng(1)) == rel.random_pair(np.random.default_rng(1))


def test_labelled_relations_are_add_remove_and_replace():
    assert isinstance(LabelledAddRemove(), AddRemove) and isinstance(LabelledReplace(), Replace)
    assert LabelledAddRemove().domain == Domain((0.0, 0.0), (1.0, 1.0))


@pytest.mark.parametrize(
    "domain, shown",
    [(Domain.unit(1), "record_dim >= 2"), (Domain((0.0, 0.0), (1.0, 1.5)), "label bounds must be integers")],
)
def test_labelled_domain_validation(domain, shown):
    for cls in (LabelledAddRemove, LabelledReplace):
        with pytest.raises(NeighbouringError, match=shown):
            cls(domain)


# --------------------------------------------------------------------------- by name / CLI
@pytest.mark.parametrize(
    "name, cls, domain",
    [
        ("privacy-unit", PrivacyUnitAddRemove, ROWS),
        ("labelled-add-remove", LabelledAddRemove, EXAMPLES),
        ("labelled-replace", LabelledReplace, EXAMPLES),
    ],
)
def test_make_relation_builds_structured_relations(name, cls, domain):
    rel = make_relation(name, domain, 1, 4)
    assert type(rel) is cls and rel.domain == domain and (rel.min_size, rel.max_size) == (1, 4)
    assert rel.to_dict()["relation"] == name
    again = make_relation(rel.name, rel.domain, rel.min_size, rel.max_size)  # what the CLI does with a hint
    assert again.to_dict() == rel.to_dict()
    with pytest.raises(NeighbouringError, match="privacy-unit"):
        make_relation("user-level")


@pytest.fixture
def unit_module(tmp_path, monkeypatch):
    """Vectorised mechanisms on (unit, partition, value) rows with a privacy-unit hint."""
    (tmp_path / "unitmech.py").write_text(textwrap.dedent(
        """
        import numpy as np
        from dpaudit.datasets import PrivacyUnitAddRemove, PrivacyUnitDomain
        from dpaudit.mechanisms import Mechanism

        class Count(Mechanism):
            def __init__(self, per_row):
                self.per_row = per_row
                self.name = "row count" if per_row else "unit count"
                self.neighbouring = PrivacyUnitAddRemove(
                    PrivacyUnitDomain((0, 0, 0.0), (9, 1, 1.0), integer_columns=(1,)), 1, 4)
                self.witness_pairs = (([[1, 0, 0.5]], [[1, 0, 0.5], [2, 0, 1.0], [2, 1, 1.0], [2, 1, 0.0]]),)

            def sample(self, dataset, num_samples, rng):
                n = len(dataset) if self.per_row else len(np.unique(dataset[:, 0]))
                return n + rng.laplace(0.0, 1.0, size=num_samples)   # scale 1: 1-DP per unit

        unit_count = Count(per_row=False)   # user-level 1-DP
        row_count = Count(per_row=True)     # a unit with 3 rows moves it by 3: 3-DP per unit
        """
    ))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_cli_audits_under_a_privacy_unit_hint(unit_module):
    runner = CliRunner()
    res = runner.invoke(
        app, ["test", "unitmech:row_count", "--epsilon", "1", "--samples", "2000", "--seed", "0", "--json"],
        catch_exceptions=False,
    )
    assert res.exit_code == 1, res.output
    report = json.loads(res.stdout)
    assert report["neighbouring"]["relation"] == "privacy-unit"
    assert report["neighbouring"]["domain"]["integer_columns"] == [0, 1]
    assert report["evidence"]["pair"]["relation"] == "privacy-unit"
    # the sequential default stops at the first pair where the evidence suffices: its bound is valid
    # but need not be large (a claim of delta 0 is rejected by any positive delta)
    assert report["evidence"]["delta_lower_bound_at_claimed_epsilon"] > 0.0
    assert report["evidence"]["epsilon_lower_bound"] > 1.0
    # the staged hockey-stick tester, at its full stage, sizes the leak: exact H_{e^1} of
    # Laplace(1, 1) vs Laplace(4, 1) (shift 3) is 1 - e^{-1} = 0.632
    res = runner.invoke(
        app, ["test", "unitmech:row_count", "--epsilon", "1", "--samples", "2000", "--seed", "0", "--json",
              "--tester", "hockey-stick"],
        catch_exceptions=False,
    )
    assert res.exit_code == 1, res.output
    report = json.loads(res.stdout)
    assert report["evidence"]["pair"]["relation"] == "privacy-unit"
    assert report["evidence"]["delta_lower_bound_at_claimed_epsilon"] > 0.4

    res = runner.invoke(
        app, ["test", "unitmech:unit_count", "--epsilon", "1", "--samples", "2000", "--trials", "2",
              "--seed", "0", "--exhaustive", "--json", "--tester", "hockey-stick"],  # (float64 Laplace: see the float screen)
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["trials_run"] == 2
    rel = PrivacyUnitAddRemove(PrivacyUnitDomain((0, 0, 0.0), (9, 1, 1.0), integer_columns=(1,)), 1, 4)
    for trial in report["trials"]:  # random pairs drawn by the hint's relation, all valid
        assert trial["pair"]["relation"] == "privacy-unit"
        rel.pair(trial["pair"]["d0"], trial["pair"]["d1"])


def test_importing_adapters_and_examples_imports_no_optional_library():
    code = (
        "import sys, dpaudit.mechanisms.adapters; "
        "import dpaudit.examples.opendp_sum, dpaudit.examples.pipelinedp_daily, dpaudit.examples.opacus_sgd; "
        "bad = [m for m in ('opendp', 'pipeline_dp', 'pydp', 'opacus', 'diffprivlib') if m in sys.modules]; "
        "assert not bad, bad; print('ok')"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"

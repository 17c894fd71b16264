"""Tests of the PipelineDP rows of ``dpaudit.library`` (targets in
``dpaudit.mechanisms.catalogue.pipelinedp_metrics``) and of diffprivlib's ``tools.histogram2d``/``histogramdd`` rows.

PipelineDP's noise cannot be seeded, so the PipelineDP checks here only assert what holds on every
run (shapes, partitions that can never be released, the misuse row flagged with overwhelming
probability: one real audit at 500 samples); the diffprivlib 2-D histograms are seeded and checked
exactly.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from library_audit_support import load_library_audit

library_audit = load_library_audit()

REGISTRY = library_audit.REGISTRY
_NOISE = {e.key for e in library_audit.rows_pipelinedp._PIPELINEDP_NOISE}
_IDS = {e.key for e in library_audit.rows_pipelinedp._PIPELINEDP_IDS}
PIPELINEDP = [e for e in REGISTRY if e.library == "PipelineDP" and e.key not in _NOISE | _IDS]  # the aggregate rows


def _entry(key: str):
    return next(e for e in REGISTRY if e.key == key)


def _small(key: str, samples: int):
    entry = _entry(key)
    return dataclasses.replace(entry, budget=dataclasses.replace(entry.budget, samples=samples, trials=1))


# ------------------------------------------------------------------ the registry block

def test_each_library_is_one_block_and_pydp_follows_pipelinedp():
    libraries = [e.library for e in REGISTRY]
    order = list(dict.fromkeys(libraries))
    assert order[:5] == ["diffprivlib", "OpenDP", "PipelineDP", "PyDP", "Opacus"]  # environment libraries after
    for lib in order:  # contiguous
        first = libraries.index(lib)
        assert libraries[first:first + libraries.count(lib)] == [lib] * libraries.count(lib), lib
    assert [e.key for e in PIPELINEDP] == [e.key for e in library_audit.rows_pipelinedp._PIPELINEDP]
    assert [e.key for e in REGISTRY if e.library == "PyDP"] == [e.key for e in library_audit.rows_pydp._PYDP_ROWS]


def test_every_pipelinedp_metric_has_laplace_and_gaussian_rows():
    named = {}
    for e in PIPELINEDP:
        named.setdefault(e.name, set()).add("gaussian" if "Gaussian noise" in e.configuration else "laplace")
    for metric in ("COUNT", "PRIVACY_ID_COUNT", "SUM", "MEAN", "VARIANCE", "PERCENTILE", "VECTOR_SUM"):
        assert named[f"Metrics.{metric}"] == {"laplace", "gaussian"}, metric
    assert "DPEngine.select_partitions" in named
    assert set(library_audit.LEFT_OUT["PipelineDP"]) and library_audit.LEFT_OUT["diffprivlib"] == {}


def test_pipelinedp_claims_are_the_accountants_budget():
    from dpaudit.mechanisms.catalogue import pipelinedp_metrics as m

    for e in PIPELINEDP:
        g = e.guarantee
        assert g.epsilon == m.EPSILON and g.neighbouring == "add-remove", e.key
        assert "NaiveBudgetAccountant(total_epsilon=1" in g.source, e.key
        attr = e.target.rsplit(":", 1)[1]
        if attr.startswith(("vector_sum", "count_private", "select_partitions")):
            assert g.delta == m.SELECTION_DELTA, e.key
        elif e.key.endswith("_gaussian"):
            assert g.delta == m.DELTA, e.key
        else:
            assert g.delta == 0.0, e.key
        assert f"total_delta={g.delta:g}" in g.source, e.key


def test_histogram2d_and_histogramdd_rows_cover_the_last_diffprivlib_tools():
    for name in ("histogram2d", "histogramdd"):
        e = _entry(f"diffprivlib.{name}")
        assert e.name == f"tools.{name}" and e.guarantee.neighbouring == "add-remove"
        assert "2-D records" in e.guarantee.domain


# ------------------------------------------------------------------ the targets

def test_unit_contributions_maps_a_record_to_one_privacy_unit():
    from dpaudit.mechanisms.catalogue.pipelinedp_metrics import unit_contributions, unit_vector_contributions

    rows = unit_contributions([[0.2, 1.0, 1.6, 2.0, 5.0, -1.0, 0.0, 0.5], [1.0, 0.0] * 4])
    assert [(r.privacy_id, r.partition, r.value) for r in rows[:4]] == [(0, 0, 1.0), (0, 2, 2.0), (0, 2, -1.0),
                                                                        (0, 0, 0.5)]
    assert {r.privacy_id for r in rows[4:]} == {1} and len(rows) == 8
    vec = unit_vector_contributions([[1.0, 0.5, -0.5, 2.0, 1.0, 1.0]])
    assert [(r.privacy_id, r.partition, r.value) for r in vec] == [(0, 1, (0.5, -0.5)), (0, 2, (1.0, 1.0))]
    with pytest.raises(ValueError):
        unit_contributions([[0.0, 1.0, 2.0]])


def test_id_rows_read_a_table_cell_by_cell_and_the_search_seeds_a_nan_id_unit():
    import math

    from dpaudit.mechanisms.catalogue.pipelinedp_metrics import count_ids_laplace, id_rows
    from dpaudit.search.input_space import family_names, layout_of, seed_candidates

    rows = id_rows([[7.0] + [0.0, 1.0, 1.0, 2.0, 2.0, 0.5, 0.0, 0.0], [float("nan")] + [0.0, 0.0] * 4])
    assert len(rows) == 8 and {r.privacy_id for r in rows[:4]} == {7.0}
    assert [(r.partition, r.value) for r in rows[:4]] == [(0.0, 1.0), (1.0, 2.0), (2.0, 0.5), (0.0, 0.0)]
    nan_ids = [r.privacy_id for r in rows[4:]]
    assert all(math.isnan(v) for v in nan_ids) and len({id(v) for v in nan_ids}) == 4  # each row its own object
    with pytest.raises(ValueError):
        id_rows([[0.0, 1.0]])
    space = count_ids_laplace.accepts.space
    layout = layout_of(count_ids_laplace.neighbouring, space)
    assert layout[0].role == "unit" and family_names(space, layout) == ("specials", "columns")
    seeds = seed_candidates("columns", layout, space, "add-remove", (1, 7), {})
    assert any(math.isnan(c.d1[-1, 0]) and len(c.d1) == len(c.d0) + 1 for c in seeds)


def test_pipelinedp_targets_give_outputs_of_their_shape_under_their_relation():
    pytest.importorskip("pipeline_dp")
    from dpaudit.errors import MechanismError
    from dpaudit.mechanisms.catalogue import pipelinedp_metrics as m

    rng = np.random.default_rng(0)
    for name, mech in m.TARGETS.items():
        assert mech.neighbouring.name == "add-remove" and mech.neighbouring.min_size == 1, name
        assert mech.reproducible is False
        for d0, d1 in mech.witness_pairs:
            mech.neighbouring.pair(d0, d1)  # raises if they are not neighbours of the relation
        d0 = np.array(mech.witness_pairs[0][0], dtype=float)
        if name == "vector_sum_public":
            with pytest.raises(MechanismError):
                mech.sample(d0, 2, rng)
            continue
        out = mech.sample(d0, 4, rng)
        assert out.shape == (4, mech.output_dim) and np.all(np.isfinite(out)), name
        if mech.presence:
            flags = out.reshape(4, len(m.PARTITIONS), -1)[:, :, 0]
            assert set(np.unique(flags)) <= {0.0, 1.0}, name
            # Partitions 1 and 2 hold no unit in these witness datasets: never released.
            assert np.all(flags[:, 1:] == 0.0) and np.all(out.reshape(4, 3, -1)[:, 1:] == 0.0), name


def test_partition_selection_releases_a_crowded_partition_and_never_an_empty_one():
    pytest.importorskip("pipeline_dp")
    from dpaudit.mechanisms.catalogue import pipelinedp_metrics as m

    crowded = np.array([[0.0, 1.0] * m.CONTRIBUTIONS] * 16)
    out = m.select_partitions_geometric.sample(crowded, 50, np.random.default_rng(0))
    # 16 units: the truncated geometric keeps the partition with probability 1 - O(1e-4).
    assert out[:, 0].mean() > 0.8 and np.all(out[:, 1:] == 0.0)


def test_count_targets_follow_the_added_unit():
    pytest.importorskip("pipeline_dp")
    from dpaudit.mechanisms.catalogue import pipelinedp_metrics as m

    d0, d1 = (np.array(d, dtype=float) for d in m.count_bounds_enforced.witness_pairs[0])
    rng = np.random.default_rng(0)
    shift = m.count_bounds_enforced.sample(d1, 300, rng).mean(0) - m.count_bounds_enforced.sample(d0, 300, rng).mean(0)
    assert abs(shift[0] - 4.0) < 1.0  # no bounding: 4 rows count 4 (Laplace scale 1, 300 draws)
    d0, d1 = (np.array(d, dtype=float) for d in m.count_laplace.witness_pairs[0])
    shift = m.count_laplace.sample(d1, 300, rng).mean(0) - m.count_laplace.sample(d0, 300, rng).mean(0)
    assert abs(shift[0] - 2.0) < 1.5 and abs(shift[2]) < 1.5  # bounded to 2 rows per partition (scale 4)


# ------------------------------------------------------------------ diffprivlib 2-D histograms (seeded)

def test_histogram2d_and_histogramdd_agree_and_are_seeded():
    pytest.importorskip("diffprivlib")
    from dpaudit.mechanisms.catalogue import diffprivlib_tools as t

    d = np.array([[0.0, 0.0], [1.0, 1.0], [0.2, 0.9]])
    a = t.histogram2d.sample(d, 30, np.random.default_rng(4))
    b = t.histogramdd.sample(d, 30, np.random.default_rng(4))
    assert a.shape == (30, 4) and np.all(a >= 0) and np.all(a == np.round(a))
    assert np.array_equal(a, t.histogram2d.sample(d, 30, np.random.default_rng(4)))
    assert np.array_equal(a, b)  # the same cells, the same GeometricTruncated draws


# ------------------------------------------------------------------ real audits at a tiny budget

def test_pipelinedp_misuse_row_is_flagged():
    pytest.importorskip("pipeline_dp")
    # Privacy loss 4 against a claim of 1: flagged on every run (PipelineDP is not seeded).
    row = library_audit.run_row(_small("pipelinedp.count_bounds_enforced", 500)).summary
    assert row["outcome"] == "violation", row
    assert row["epsilon_lower_bound"] > 1.0


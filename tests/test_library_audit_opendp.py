"""Tests of the OpenDP rows of ``dpaudit.library`` (``dpaudit.mechanisms.catalogue.opendp_measurements``),
of its seeded reruns (``--reruns K``) and of what the OpenDP adapter gained for them (``postprocess``,
tuple ``d_in``).

OpenDP's noise cannot be seeded, so no test here depends on its outputs beyond their shape and
support, and the one real audit is against a claim twice OpenDP's (see its note).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from library_audit_support import load_library_audit

library_audit = load_library_audit()

REGISTRY = library_audit.REGISTRY
OPENDP = [e for e in REGISTRY if e.library == "OpenDP" and e.key != "opendp.sum_len"]  # not the Polars row

# output dimension of each target (a number unless stated)
_DIMS = {"laplace_threshold": 3, "noise_threshold": 3, "gaussian_threshold": 3, "alp_queryable": 3,
         "randomized_response_bitvec": 8, "noisy_top_k": 2}


def _targets():
    pytest.importorskip("opendp")
    from dpaudit.mechanisms.catalogue import opendp_measurements as m

    return m


def test_opendp_block_is_contiguous_and_every_row_is_in_the_registry():
    keys = [e.key for e in REGISTRY]
    first = keys.index(OPENDP[0].key)
    assert keys[first:first + len(OPENDP)] == [e.key for e in library_audit.rows_opendp._OPENDP]
    assert all(e.target and e.target.startswith("dpaudit.mechanisms.catalogue.opendp_measurements:") for e in OPENDP)


def test_every_measurement_constructor_has_a_row_or_is_left_out_with_why():
    dp = pytest.importorskip("opendp.prelude")
    constructors = {n for n in dir(dp.m) if n.startswith("make_")}
    named = {e.name.split(".", 1)[1].split(" ")[0] for e in OPENDP}  # "measurements.make_laplace (laplace_sum)"
    left = {part.strip().split(".")[-1] for what in library_audit.LEFT_OUT["OpenDP"] for part in what.split(",")}
    assert constructors == named | left and not named & left
    assert all(len(why) > 30 for why in library_audit.LEFT_OUT["OpenDP"].values())


def test_targets_build_and_give_outputs_of_the_right_shape():
    m = _targets()
    assert set(m.TARGETS) == {e.target.rsplit(":", 1)[1] for e in OPENDP}
    rng = np.random.default_rng(0)
    for name, mech in m.TARGETS.items():
        d0, d1 = (np.array(d, dtype=float) for d in mech.witness_pairs[0])
        out = mech.sample(d1, 20, rng)
        assert out.shape == (20, _DIMS.get(name, 1)) and np.all(np.isfinite(out)), name
        assert not mech.reproducible, name
    rr = m.randomized_response.sample(np.array([[0.9]]), 50, rng)
    assert set(np.unique(rr)) <= {0.0, 1.0, 2.0}
    bits = m.randomized_response_bitvec.sample(np.array([[0.9]]), 50, rng)
    assert set(np.unique(bits)) <= {0.0, 1.0}
    top = m.noisy_top_k.sample(np.array([[0.1], [0.6]]), 50, rng)
    assert np.all(top[:, 0] != top[:, 1]) and set(np.unique(top)) <= set(range(len(m.CANDIDATES)))
    quantiles = m.private_quantile.sample(np.array([[0.1], [0.6]]), 50, rng)
    assert set(np.unique(quantiles)) <= set(m.CANDIDATES)
    counts = m.laplace_threshold.sample(np.array([[0.0]] * 20), 50, rng)
    assert np.all((counts[:, 0] == 0) | (counts[:, 0] >= 12)) and np.all(counts[:, 1:] == 0)


def test_claims_are_read_from_opendps_maps():
    """The registry's guarantee is an upper bound on OpenDP's map, within 1e-6 of it in epsilon
    (the scales are calibrated to it); delta likewise, rounded up."""
    m = _targets()
    for e in OPENDP:
        mech = getattr(m, e.target.rsplit(":", 1)[1])
        claim = mech.claim()  # OpenDP's map at the target's d_in
        g = e.guarantee
        assert g.epsilon - 1e-6 <= claim.epsilon <= g.epsilon, e.key
        assert claim.delta <= g.delta and (claim.delta > 0) == (g.delta > 0), e.key
        if g.delta:
            assert claim.delta >= g.delta / 1.2, e.key
    # the zCDP rows: OpenDP states rho; the converted measurement states (epsilon, delta)
    assert str(m.gaussian_sum.measurement.output_measure) == "Approximate(MaxDivergence)"
    # a sized domain: replacing one record is symmetric distance 2 (two, distance 4)
    assert m.laplace_mean.d_in == 2 and m.laplace_mean.claim(4).epsilon == pytest.approx(2.0, rel=1e-6)
    assert m.gaussian_threshold.d_in == (1, 1, 1)


def test_exact_targets_are_registered():
    m = _targets()
    keys = {e.key for e in OPENDP}
    assert {f"opendp.{name}" for name in m.EXACT} <= keys


# ------------------------------------------------------------------ adapter additions

def test_postprocess_and_tuple_d_in():
    dp = pytest.importorskip("opendp.prelude")
    from dpaudit.mechanisms.adapters.opendp import OpenDPMechanism

    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance()
    build = lambda: space >> dp.t.then_count_by(TV=int) >> dp.m.then_laplace_threshold(1.0, 12)  # noqa: E731
    mech = OpenDPMechanism(build, preprocess=lambda a: [int(v) for v in a[:, 0]],
                           postprocess=lambda r: [float(r.get(0, 0)), float(r.get(1, 0))])
    out = mech.sample(np.array([[0.0]] * 30), 10, np.random.default_rng(0))
    assert out.shape == (10, 2) and np.all(out[:, 0] > 0) and np.all(out[:, 1] == 0)
    with pytest.raises(TypeError, match="postprocess"):
        OpenDPMechanism(build, postprocess=3)
    with pytest.raises(ValueError, match="d_in"):
        OpenDPMechanism(build, d_in=(1, -1))
    assert OpenDPMechanism(build, d_in=(1, 1, 1)).d_in == (1, 1, 1)


# ------------------------------------------------------------------ reruns

def test_summarise_reruns_classifies_accusations_against_beta():
    s = library_audit.summarise_reruns
    r = s(["pass"] * 10)
    assert (r["k"], r["accusations"], r["errors"], r["verdict"]) == (10, 0, 0, "within beta") and r["p_value"] == 1.0
    r = s(["pass"] * 9 + ["violation"])
    assert r["verdict"] == "within beta" and r["p_value"] == pytest.approx(1 - 0.99 ** 10)
    r = s(["pass"] * 8 + ["violation", "floating-point leak"])
    assert r["accusations"] == 2 and r["verdict"] == "beyond beta" and r["p_value"] < 0.01
    assert s(["pass", "error"])["verdict"] == "errors"
    assert s(["pass", "inconclusive"])["errors"] == 1
    with pytest.raises(ValueError):
        s([])
    with pytest.raises(ValueError):
        s(["maybe"])
    with pytest.raises(ValueError):
        s(["pass"], beta=0.0)


def test_rerun_entry_runs_k_seeds_at_the_small_budget(monkeypatch):
    entry = next(e for e in OPENDP if e.key == "opendp.geometric")
    calls = []

    from dpaudit.library import runner

    def fake(e, *, seed=None, samples=None, processes=1, beta=0.01, on_trial_end=None):
        calls.append((seed, e.budget.samples, e.budget.trials))
        return runner.RowRun({"outcome": "violation" if seed == 3 else "pass", "seed": seed, "seconds": 1.0,
                              "epsilon_lower_bound": 0.5})

    monkeypatch.setattr(runner, "run_row", fake)
    rec = library_audit.rerun_entry(entry, 4, samples=5000, trials=2)
    assert calls == [(1, 5000, 2), (2, 5000, 2), (3, 5000, 2), (4, 5000, 2)]
    assert rec["seeds"] == [1, 2, 3, 4] and rec["accusations"] == 1 and rec["verdict"] == "within beta"
    assert rec["seconds"] == 4.0 and rec["samples"] == 5000 and rec["trials"] == 2
    with pytest.raises(ValueError):
        library_audit.rerun_entry(entry, 0)

    text = library_audit.render(REGISTRY, {}, {entry.key: rec})
    assert "## Reruns of exact mechanisms" in text and "| 4 | 1..4 | 1 | 0 | 0.01 |" in text
    stale = dict(rec, samples=6000)  # its fingerprint no longer matches the stated budget
    assert "## Reruns of exact mechanisms" not in library_audit.render(REGISTRY, {}, {entry.key: stale})


# ------------------------------------------------------------------ one real audit (unseeded)

def test_opendp_randomized_response_bool_passes_a_loose_claim():
    """A real ``dpaudit test`` of OpenDP's exact randomized response at 2,000 samples x 1 trial
    with the hockey-stick tester (exact regions for discrete outputs; ``--tester all`` adds the
    Rényi tester's 10 s).

    OpenDP is unseeded, so the outputs differ from run to run; the audit is against epsilon = 2,
    twice OpenDP's map (1): the true privacy loss is at most 1, so a false accusation needs the
    audit's lower bound to exceed the truth by 1 nat at 2,000 samples, far rarer than beta."""
    pytest.importorskip("opendp")
    entry = next(e for e in OPENDP if e.key == "opendp.randomized_response_bool")
    loose = dataclasses.replace(entry, guarantee=dataclasses.replace(entry.guarantee, epsilon=2.0),
                                budget=dataclasses.replace(entry.budget, samples=2000, trials=1, tester="hockey-stick"))
    row = library_audit.run_row(loose).summary
    assert row["outcome"] == "pass", row
    assert row["epsilon_lower_bound"] is not None and row["epsilon_lower_bound"] <= 1.0 + 1e-9

"""Tests of the Opacus rows of ``dpaudit.library`` (targets in
``dpaudit.mechanisms.catalogue.opacus_optimizers``), of the Opacus accountant check and of the
Opacus reproducers' presence.

Everything here is deterministic: Opacus's noise comes from a seeded ``torch.Generator`` and the
accountant check is arithmetic. The relation and cause texts quote Opacus's source: the quotes are
checked against the installed package, so a new Opacus version that changes them fails here.
"""

from __future__ import annotations

import ast
import importlib.metadata
import math
import re
from pathlib import Path

import numpy as np
import pytest
from dpaudit.library.registry import fingerprint as la_fp
from library_audit_support import load_library_audit

opacus = pytest.importorskip("opacus")

library_audit = load_library_audit()
ROOT = Path(__file__).resolve().parents[1]
OPACUS_DIR = Path(opacus.__file__).parent
OPACUS = [e for e in library_audit.REGISTRY if e.library == "Opacus"]


def test_opacus_rows_are_registered_and_well_formed():
    assert library_audit.PACKAGES["Opacus"] == "opacus"
    assert library_audit.library_version("Opacus") == importlib.metadata.version("opacus")
    assert [e.key for e in OPACUS] == ["opacus.dp_optimizer", "opacus.dp_optimizer_secure", "opacus.per_layer",
                                       "opacus.make_private"]
    assert list(library_audit.rows_opacus.ENTRIES) == OPACUS
    from dpaudit.audit.targets import load_target
    from dpaudit.mechanisms.catalogue import opacus_optimizers, planted

    for e in OPACUS:
        g = e.guarantee
        assert (g.epsilon, g.delta, g.neighbouring) == (1.0, 1e-5, "add-remove")
        assert e.not_auditable is None and e.budget.trials >= 1 and e.budget.samples >= 1000
        mech, _ = load_target(e.target)
        assert mech is opacus_optimizers.TARGETS[e.target.rsplit(":", 1)[1]]
        assert mech.neighbouring.name == "labelled-add-remove" and mech.witness_pairs and mech.accepts
        assert library_audit.planted_target(e) == planted.TARGETS[e.target]
        assert library_audit.relation_note(e).startswith("inferred: ")
    assert library_audit.OPACUS_ACCOUNTANTS_KEY not in {e.key for e in library_audit.REGISTRY}


def _quotes(text: str):
    """(quoted words, file) pairs of a text written as ``'words' (opacus/path.py, ...)`` or
    ``('words', opacus/path.py, ...)``."""
    return re.findall(r"'([^']{20,})'(?:, | \()(opacus/[\w/]+\.py)", text)


def _plain(source: str) -> str:
    """Source text as a reader quotes it: reST backticks dropped, adjacent string literals joined,
    whitespace collapsed."""
    return " ".join(re.sub(r'"\s*\n\s*"', "", source).replace("``", "").split())


def test_relation_and_causes_quote_the_installed_opacus_source():
    texts = [library_audit.rows_opacus._OPC_RELATION, library_audit.OPACUS_ACCOUNTANT_CAUSE]
    pairs = [q for t in texts for q in _quotes(t)]
    assert len(pairs) >= 3
    for words, path in pairs:
        source = _plain((OPACUS_DIR.parent / path).read_text())
        assert " ".join(words.split()).replace(". Proceed", ".Proceed") in source, (words, path)
    optimizer = "".join((OPACUS_DIR / "optimizers" / "optimizer.py").read_text().split())
    assert "(self.max_grad_norm/(per_sample_norms+1e-6)).clamp(max=1.0)" in optimizer  # the NaN finding's cause
    gdp = (OPACUS_DIR / "accountants" / "analysis" / "gdp.py").read_text()
    assert "np.sqrt(np.exp(noise_multiplier ** (-2)) - 1) * np.sqrt(steps) * sample_rate" in gdp


def test_per_layer_clipping_and_planted_twin_are_opacus_own():
    """With noise ~0, one step's update on the witness' added example is its clipped gradient / 10:
    per layer, the weight gradient (norm 1) and the bias gradient (norm 0.71) clipped to 1 and 0.5."""
    import torch

    from dpaudit.mechanisms.adapters.opacus import OpacusMechanism
    from dpaudit.mechanisms.catalogue import opacus_optimizers as oo
    from dpaudit.mechanisms.catalogue import planted
    from dpaudit.mechanisms.catalogue.opacus_sgd import linear_model

    mech = OpacusMechanism(linear_model, max_grad_norm=oo.PER_LAYER_NORMS, clipping="per_layer",
                           expected_batch_size=10, noise_multiplier=1e-9)
    added = mech.sample(np.array([[1.0, 1.0, 1.0]]), 1, np.random.default_rng(0))[0]
    w, b = added[:4], added[4:]
    assert np.linalg.norm(w) == pytest.approx(0.1, rel=1e-4) and np.linalg.norm(b) == pytest.approx(0.05, rel=1e-4)
    flat = OpacusMechanism(linear_model, max_grad_norm=1.0, expected_batch_size=10, noise_multiplier=1e-9)
    y = flat.sample(np.array([[1.0, 1.0, 1.0]]), 1, np.random.default_rng(0))[0]
    assert np.linalg.norm(y) == pytest.approx(0.1, rel=1e-4)
    with pytest.raises(ValueError, match="per_layer"):
        OpacusMechanism(linear_model, max_grad_norm=1.0, clipping="per_layer", expected_batch_size=10,
                        noise_multiplier=1.0)
    with pytest.raises(ValueError, match="per_layer"):
        OpacusMechanism(linear_model, max_grad_norm=[1.0, 0.5], expected_batch_size=10, noise_multiplier=1.0)
    with pytest.raises(ValueError, match="clipping"):
        OpacusMechanism(linear_model, max_grad_norm=1.0, clipping="ghost", expected_batch_size=10,
                        noise_multiplier=1.0)
    sigma = oo.dp_optimizer.calibrated_noise_multiplier()
    assert sigma == pytest.approx(4.06, abs=0.01)
    for name in oo.TARGETS:
        twin = getattr(planted, f"opacus_{name}")
        assert twin.calibrated_noise_multiplier() == pytest.approx(0.7 * sigma)
        assert type(twin).__mro__[1] is type(oo.TARGETS[name]) and twin.clipping == oo.TARGETS[name].clipping
    assert oo.dp_optimizer.calibrated_noise_multiplier() == sigma  # the row itself is untouched
    assert torch.get_num_threads() >= 1


def test_adversarial_pairs_of_labelled_examples_carry_the_value_in_the_features():
    from dpaudit.mechanisms.catalogue import opacus_optimizers as oo
    from dpaudit.search.adversarial import adversarial_pairs

    pairs = adversarial_pairs(oo.dp_optimizer.neighbouring, oo.ACCEPTS)
    kinds = [p.kind for p in pairs]
    assert "empty" not in kinds and "nan" in kinds and len(kinds) == 11
    nan = next(p for p in pairs if p.kind == "nan")
    assert nan.d0.shape == (1, 3) and nan.d1.shape == (2, 3)
    assert np.isnan(nan.d1[1, :2]).all() and nan.d1[1, 2] == 1.0
    # the finding itself: one NaN example makes every parameter NaN (3 runs, seeded)
    y = oo.dp_optimizer.sample_raw(nan.d1, 3, np.random.default_rng(0))
    assert np.isnan(y).all()
    assert np.isfinite(oo.dp_optimizer.sample_raw(nan.d0, 3, np.random.default_rng(0))).all()


def test_accountant_check_certifies_gdp_under_and_rdp_not():
    """At sigma 1, q 0.01, 10 steps Opacus's GDP accountant reports epsilon 0.13 where the true delta
    is at least 4.9e-4 (optimistic PLD); the RDP accountant's epsilon is above the certified lower
    bound. For q = 1 the lower bound is the exact Gaussian profile."""
    rec = library_audit.opacus_accountant_check(grid=((1.0, 0.01, 10, 1e-5), (4.0625, 1.0, 1, 1e-5)))
    sub, full = rec["rows"]
    assert sub["gdp"]["under"] and sub["gdp"]["true_delta_lower"] > 1e-4
    assert not sub["rdp"]["under"] and not sub["prv"]["under"]
    assert sub["eps_lower"] <= sub["rdp"]["epsilon"] and sub["eps_lower"] > sub["gdp"]["epsilon"]
    assert not any(full[n]["under"] for n in library_audit.OPACUS_ACCOUNTANTS)
    from dpaudit.privacy.profiles import gaussian_epsilon

    assert full["eps_lower"] == pytest.approx(gaussian_epsilon(1e-5, 1 / 4.0625), abs=2e-4)
    # the PLD lower bound never exceeds dpaudit's certified (pessimistic) upper bound
    from dpaudit.accounting.certified import profile_curve
    from dpaudit.accounting.prv import Composition, SubsampledGaussianStep

    lower = library_audit.opacus_true_delta_lower(1.0, 0.1, 1)
    eps = [0.2, 0.6, 1.2]
    upper = profile_curve(Composition(((SubsampledGaussianStep(1.0, 0.1), 1),)), eps)
    assert all(0 < lower(e) <= u for e, u in zip(eps, upper))


def test_reproducers_listed_for_every_non_pass_opacus_row():
    cache = library_audit.load_cache()
    fresh = {e.key: cache[e.key] for e in OPACUS if (cache.get(e.key) or {}).get("fingerprint") == la_fp(e)}
    assert fresh, "the Opacus rows have not been audited (run dpaudit library audit Opacus --write-cache)"
    for e in OPACUS:
        rec = fresh.get(e.key)
        if rec is None:
            continue
        paths = []
        sized = (rec.get("leak_size") or {}).get("delta_at_claim", 0.0) > e.guarantee.delta
        if rec["verdict"] in ("violation", "floating-point leak") or (rec["verdict"] == "unconfirmed" and sized):
            paths.append(library_audit.reproducer_path(e))  # an unconfirmed row whose set was not certified has none
        paths += [library_audit.adversarial_reproducer_for(e, k) for k in library_audit.adversarial_leaks(rec)
                  if k == "nan"]  # one reproducer per row for the non-finite inputs (they share the cause)
        for path in paths:
            assert path.exists(), path
            tree = ast.parse(path.read_text())
            mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
            mods |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
            assert mods <= {"math", "sys", "warnings", "numpy", "torch", "opacus"}, (path, mods)
    doc = (ROOT / "docs" / "library_audits.md").read_text()
    assert f"## Opacus {library_audit.library_version('Opacus')}" in doc
    if (cache.get(library_audit.OPACUS_ACCOUNTANTS_KEY) or {}).get("version"):
        assert "accountants against a certified lower bound" in doc
    assert not math.isnan(len(doc))


def test_make_private_row_divides_by_the_private_dataset_size_and_is_seeded():
    """R7 (meta-pytorch/opacus#571): through PrivacyEngine.make_private the divisor is len(dataset):
    with noise ~0 one example clipped to C = 1 moves the parameters by 1 (not 1/10 as the fixed
    expected_batch_size rows); the row's outputs are reproducible from the seed."""
    from dpaudit.mechanisms.adapters.opacus import OpacusPrivacyEngineMechanism
    from dpaudit.mechanisms.catalogue import opacus_optimizers as oo
    from dpaudit.mechanisms.catalogue.opacus_sgd import linear_model

    quiet = OpacusPrivacyEngineMechanism(linear_model, max_grad_norm=1.0, batch_size=10, noise_multiplier=1e-9)
    for n in (1, 3):
        y = quiet.sample(np.array([[1.0, 1.0, 1.0]] * n), 1, np.random.default_rng(0))[0]
        assert quiet.expected_batch_size_ == n and np.linalg.norm(y) == pytest.approx(1.0, rel=1e-4)
    with pytest.raises(ValueError, match="expected_batch_size"):
        OpacusPrivacyEngineMechanism(linear_model, max_grad_norm=1.0, batch_size=10, noise_multiplier=1.0,
                                     expected_batch_size=10)
    d = np.array([[0.0, 0.0, 0.0]])
    a, b = (oo.make_private.sample(d, 3, np.random.default_rng(5)) for _ in range(2))
    assert np.array_equal(a, b) and a.shape == (3, 6) and not np.array_equal(a[0], a[1])

"""Write the reproducers of the diffprivlib model rows (issue 36 item 6): ``reproducers/diffprivlib_<row>.py``.

Same script template as ``benchmarks/library_reproducers.py`` (library and NumPy only; both frequencies
with their counts, certified bounds, a one-line verdict, the tracker text); the release code of each
model row and its witness set are written out here (:data:`MODELS`), equal to the catalogue targets of
``dpaudit.mechanisms.catalogue.diffprivlib_models``; also PipelineDP's ``add_dp_noise`` Gaussian row
(:func:`write_grid`, its float-grid set from the cache). The pair is the target's first witness pair (the one
the audit tries first), and the set a predicate read from the library's code::

    PYTHONPATH=src python benchmarks/library_reproducers_models.py
    python reproducers/diffprivlib_gaussian_nb.py 2000
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import library_audit as la  # noqa: E402
import library_reproducers as lr  # noqa: E402

_NB = '''    data = np.asarray(records, dtype=float).reshape(-1, 2)
    model = models.GaussianNB(epsilon=1.0, bounds=(0.0, 1.0), random_state=seed, accountant=BudgetAccountant())
    model.partial_fit(data[:, :1], (data[:, 1] >= 0.5).astype(int), classes=[0, 1])  # classes declared
    return np.concatenate([model.theta_.ravel(), model.var_.ravel(), model.class_count_.ravel()])'''
_LR = '''    data = np.asarray(records, dtype=float).reshape(-1, 2)
    model = models.LinearRegression(epsilon=1.0, bounds_X=(0.0, 1.0), bounds_y=(0.0, 1.0), fit_intercept=False,
                                    random_state=seed, accountant=BudgetAccountant())
    return model.fit(data[:, :1], data[:, 1]).coef_'''
_SS = '''    data = np.asarray(records, dtype=float).reshape(-1, 1)
    model = models.StandardScaler(epsilon=1.0, bounds=(0.0, 1.0), random_state=seed, accountant=BudgetAccountant())
    model.fit(data)
    return np.concatenate([np.ravel(model.mean_), np.ravel(model.var_)])'''
_NB_SET = ("class_count_[1] released as exactly 0 (models/naive_bayes.py updates only the labels present in y: "
           "a declared class with no record keeps count 0; a present class gets a noisy count >= 1)")
_LR_SET = "|coef_| > 8 (coef_ = (sum x y + Laplace(3)) / sum x^2, and sum x^2 gets no noise)"
MODELS = {
    "diffprivlib.gaussian_nb": (_NB, "y[5] == 0.0", _NB_SET),
    "diffprivlib.gaussian_nb_add_remove": (_NB, "y[5] == 0.0", _NB_SET),
    "diffprivlib.linear_regression": (_LR, "abs(y[0]) > 8.0", _LR_SET),
    "diffprivlib.linear_regression_replace": (_LR, "abs(y[0]) > 8.0", _LR_SET),
    "diffprivlib.standard_scaler_add_remove": (
        _SS, "y[1] == 0.0", "var_ released as exactly 0 (tools/utils.py, _var: the sensitivity "
                            "((upper - lower) / n) ** 2 * (n - 1) is 0 for one record)"),
}
"""Row key -> (release body, predicate on one output ``y``, the set in words)."""


def _reaches(key: str, d0, d1) -> str:
    """The dataset the row's set is reached by: for GaussianNB the one with no record labelled 1, for
    LinearRegression the one with the smaller sum of x^2 (the wider noise)."""
    if "gaussian_nb" in key:
        return "D0" if all(r[1] < 0.5 for r in d0) else "D1"
    if "standard_scaler" in key:
        return "D0" if len(d0) == 1 else "D1"
    return "D0" if sum(r[0] ** 2 for r in d0) < sum(r[0] ** 2 for r in d1) else "D1"


_ADD_DP_NOISE = '''    # one record = one privacy unit (p, v); the caller's pre-aggregation:
    # the sum of np.clip(v, 0, 1) per partition
    sums = {p: 0.0 for p in (0, 1, 2)}
    for r in records:
        sums[int(np.clip(round(r[0]), 0, 2))] += float(np.clip(r[1], 0.0, 1.0))
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=1.0, total_delta=1e-5)
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
    params = pipeline_dp.aggregate_params.AddDPNoiseParams(noise_kind=pipeline_dp.NoiseKind.GAUSSIAN,
                                                           l0_sensitivity=1, linf_sensitivity=1.0)
    result = engine.add_dp_noise(list(sums.items()), params)
    accountant.compute_budgets()
    released = dict(result)
    return [released[p] for p in (0, 1, 2)]  # PyDP's noise cannot be seeded'''


GRID_ROWS = {
    "pipelinedp.add_dp_noise_gaussian": (_ADD_DP_NOISE, "import pipeline_dp", "pipeline-dp"),
    "diffprivlib.standard_scaler": (_SS, "from diffprivlib import BudgetAccountant, models", "diffprivlib"),
}
"""Float-grid leaks: row key -> (release body, imports, pip name)."""


def write_grid(entry, rec: dict, default_n: int = 20000) -> Path | None:
    """The reproducer of a float-grid leak of :data:`GRID_ROWS`: its witness pair and the grid set of its
    leak-size stage (cache), as ``library_reproducers.write`` does for the metric rows."""
    body, imports, pip = GRID_ROWS[entry.key]
    leak = ((rec.get("leak_size") or {}).get("leak")) or {}
    w = (rec.get("first") or {}).get("witness")
    if not leak.get("grid") or not w or rec["leak_size"].get("delta_at_claim", 0.0) <= entry.guarantee.delta:
        return None
    g = entry.guarantee
    path = la.reproducer_path(entry)
    text = lr._TEMPLATE.format(
        library=entry.library, version=la.library_version(entry.library), name=entry.name, verdict=rec["verdict"],
        key=entry.key, pip=pip, install=la.LIBRARIES[entry.library].install, path=f"reproducers/{path.name}", default_n=default_n,
        imports=imports, epsilon=g.epsilon, delta=g.delta, d0=lr._literal(w["d0"]),
        d1=lr._literal(w["d1"]), reaches="D0" if leak.get("direction", "P||Q") == "P||Q" else "D1",
        set_words=leak["description"], grid_def=lr._GRID_FN.format(grid=[tuple(c) for c in leak["grid"]],
                                                                   column=leak.get("column") or 0),
        release_body=body, set_body="    return in_grid(float(y[COLUMN]))",
        relation=lr._clean(la.relation_note(entry)), configuration=lr._clean(entry.configuration),
        cause=lr._clean(la.float_cause(entry)))
    if pip == "diffprivlib":
        text = _quiet(text)
    path.write_text(text)
    return path


def _quiet(text: str) -> str:
    """Silence diffprivlib's PrivacyLeakWarning and scikit-learn's notices in a generated script."""
    quiet = '\nwarnings.simplefilter("ignore")  # diffprivlib\'s PrivacyLeakWarning / scikit-learn notices\nN = int('
    return text.replace("import numpy as np\n", "import warnings\n\nimport numpy as np\n", 1).replace("\nN = int(", quiet, 1)


_PDN_NAN_CAUSE = (
    "DPEngine.add_dp_noise (pipeline_dp/dp_engine.py, _add_dp_noise) adds the mechanism's noise to whatever value "
    "it is given (create_additive_mechanism(...).add_noise(value)), so a NaN value is released as NaN, every time. "
    "Its docstring leaves bounding to the caller ('does not enforce the sensitivity by contribution bounding and "
    "relies on the caller'); a caller bounding with np.clip, as PipelineDP's own combiners do (combiners.py), "
    "keeps NaN: a gap between the documented contract and the usual way to meet it, not a calibration bug")


def write_nan(entry, rec: dict, default_n: int = 2000) -> Path | None:
    """The NaN reproducer of an add_dp_noise row whose adversarial screen certified a NaN leak."""
    from dpaudit.audit.targets import load_target  # noqa: PLC0415
    from dpaudit.search.adversarial import adversarial_pairs  # noqa: PLC0415

    if "nan" not in la.adversarial_leaks(rec):
        return None
    mech, _ = load_target(entry.target)
    pair = next(p for p in adversarial_pairs(mech.neighbouring, mech.accepts) if p.kind == "nan")
    noise = "GAUSSIAN" if "gaussian" in entry.key else "LAPLACE"
    body = _ADD_DP_NOISE.replace("NoiseKind.GAUSSIAN", f"NoiseKind.{noise}").replace(
        "total_delta=1e-5", f"total_delta={entry.guarantee.delta!r}")
    g = entry.guarantee
    path = la.adversarial_reproducer_path(entry, "nan")
    text = lr._TEMPLATE.format(
        library=entry.library, version=la.library_version(entry.library), name=entry.name,
        verdict="leak on the adversarial input nan", key=entry.key, pip="pipeline-dp", install=la.LIBRARIES[entry.library].install, path=f"reproducers/{path.name}",
        default_n=default_n, imports="import pipeline_dp", epsilon=g.epsilon, delta=g.delta,
        d0=lr._literal(pair.d0.tolist()), d1=lr._literal(pair.d1.tolist()), reaches="D1",
        set_words="outputs holding a NaN or an infinity", grid_def="", release_body=body,
        set_body="    return not bool(np.all(np.isfinite(y)))", relation=lr._clean(la.relation_note(entry)),
        configuration=lr._clean(entry.configuration + f"; {pair.description}"), cause=lr._clean(_PDN_NAN_CAUSE))
    path.write_text(text)
    return path


def write(entry, default_n: int = 20000) -> Path:
    """Write ``entry``'s reproducer (its first witness pair, its set from :data:`MODELS`)."""
    from dpaudit.audit.targets import load_target  # noqa: PLC0415

    body, pred, words = MODELS[entry.key]
    mech, _ = load_target(entry.target)
    d0, d1 = (lr._fmt_records(d) for d in mech.witness_pairs[0])
    g = entry.guarantee
    path = la.reproducer_path(entry)
    text = lr._TEMPLATE.format(
        library=entry.library, version=la.library_version(entry.library), name=entry.name, verdict="violation",
        key=entry.key, pip="diffprivlib", install=la.LIBRARIES[entry.library].install, path=f"reproducers/{path.name}", default_n=default_n,
        imports="from diffprivlib import BudgetAccountant, models", epsilon=g.epsilon, delta=g.delta,
        d0=lr._literal(d0), d1=lr._literal(d1), reaches=_reaches(entry.key, d0, d1), set_words=words, grid_def="",
        release_body=body, set_body=f"    return bool({pred})", relation=lr._clean(la.relation_note(entry)),
        configuration=lr._clean(entry.configuration), cause=lr._clean(entry.cause))
    text = _quiet(text)
    lr.OUT.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def main() -> None:
    cache = la.load_cache()
    for e in la.REGISTRY:
        if e.key in MODELS:
            print(f"wrote {write(e).relative_to(ROOT)}")
        elif e.key in GRID_ROWS and (rec := cache.get(e.key)) \
                and rec.get("fingerprint") == la.fingerprint(e) and (path := write_grid(e, rec)) is not None:
            print(f"wrote {path.relative_to(ROOT)}")
        if e.key.startswith("pipelinedp.add_dp_noise") and (rec := cache.get(e.key)) \
                and rec.get("fingerprint") == la.fingerprint(e) and (path := write_nan(e, rec)) is not None:
            print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

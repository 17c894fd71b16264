"""The library-environment worker and its Mechanism proxy (dpaudit.library.envs).

Nothing here builds a library's environment (minutes, GBs): the worker protocol runs with the
current interpreter as the "environment" (``LibraryEnv.current()``) on the NumPy-only targets of
``dpaudit/library/targets/protocol_check.py``, and environment creation with a venv that has no
pip and no requirements (``--without-pip``, about a second). The rows are checked as data.
"""

from __future__ import annotations

import ast
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

from dpaudit.errors import MechanismError
from dpaudit.library.envs import (ENVS, EnvCreationError, EnvMechanism, LibraryCallError, LibraryEnv,
                                  WorkerCrashedError, WorkerTimeoutError, get_env)
from dpaudit.library.envs import _worker
from dpaudit.library.envs.env import TARGETS_DIR
from dpaudit.library.envs.rows import ROWS


@pytest.fixture(scope="module")
def env():
    e = LibraryEnv.current("test-current")
    yield e
    e.close()


def test_a_batch_target_returns_its_outputs_reproducibly_from_rng(env):
    mech = env.mechanism("protocol_check:gaussian_sum", sigma=0.5)
    data = np.array([[0.5], [1.0], [2.0]])  # clipped sum 2.5
    a = mech.sample(data, 4000, np.random.default_rng(7))
    b = mech.sample(data, 4000, np.random.default_rng(7))
    c = mech.sample(data, 4000, np.random.default_rng(8))
    assert a.shape == (4000, 1) and a.dtype == np.float64
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # mean 2.5, sd 0.5/sqrt(4000) = 0.0079: 6 sd
    assert abs(a.mean() - 2.5) < 0.05 and abs(a.std() - 0.5) < 0.05


def test_a_per_call_target_is_looped_in_the_worker(env):
    mech = env.mechanism("protocol_check:laplace_count", scale=1e-9)
    out = mech.sample(np.zeros((3, 2)), 5, np.random.default_rng(0))
    np.testing.assert_allclose(out, 3.0, atol=1e-6)
    assert out.shape == (5, 1)


@pytest.mark.parametrize("data, kind", [(np.array([[1], [2]], dtype=np.int64), 1),
                                        (np.array([[True], [False]]), 0),
                                        (np.array([[0.5, 1.5]]), 3),
                                        (np.zeros((0, 1)), 3)])
def test_the_dataset_arrives_with_its_dtype_and_shape(env, data, kind):
    out = env.mechanism("protocol_check:dtype_of").sample(data, 2, np.random.default_rng(0))
    shape = data.shape
    np.testing.assert_array_equal(out[0], [kind, shape[0], shape[1]])


def test_nan_and_extreme_values_cross_the_pipe_bit_for_bit(env):
    values = np.array([[np.nan], [np.inf], [-np.inf], [-0.0], [5e-324], [np.finfo(float).max]])
    mech = env.mechanism("protocol_check:echo", dim=6)
    out = mech.sample_raw(values, 1, np.random.default_rng(0))
    assert out.tobytes() == values.reshape(1, 6).tobytes()
    with pytest.raises(MechanismError, match="non-finite"):
        mech.sample(values, 1, np.random.default_rng(0))


def test_the_worker_runs_in_a_scratch_directory_removed_on_close():
    import os

    env = LibraryEnv.current("test-scratch")
    out = env.mechanism("protocol_check:write_cwd").sample([[1.0]], 1, np.random.default_rng(0))
    scratch = env.client().scratch
    assert out[0, 0] == 1.0 and os.path.exists(os.path.join(scratch, "written-by-the-library"))
    env.close()
    assert not os.path.exists(scratch)


def test_what_the_library_prints_on_stdout_does_not_break_the_protocol(env):
    out = env.mechanism("protocol_check:noisy_printer").sample([[1.0]], 3, np.random.default_rng(0))
    np.testing.assert_array_equal(out, np.ones((3, 1)))


def test_a_library_exception_comes_back_with_its_type_and_the_worker_keeps_serving(env):
    mech = env.mechanism("protocol_check:raises", message="bounds must be finite")
    with pytest.raises(LibraryCallError, match="ValueError: bounds must be finite") as info:
        mech.sample([[1.0]], 2, np.random.default_rng(0))
    assert info.value.remote_type == "ValueError" and "protocol_check.py" in info.value.remote_traceback
    assert isinstance(info.value, MechanismError)
    ok = env.mechanism("protocol_check:laplace_count", scale=1.0).sample([[1.0]], 2, np.random.default_rng(0))
    assert ok.shape == (2, 1)


def test_a_plain_call_returns_json_and_reports_exceptions(env):
    assert env.call("protocol_check:add", a=1, b=2.5) == {"sum": 3.5, "pair": [1, 2.5], "array": [0, 1, 2]}
    with pytest.raises(LibraryCallError, match="TypeError"):
        env.call("protocol_check:add", a=1)


def test_a_failing_factory_and_an_unknown_target_are_reported_on_load(env):
    with pytest.raises(LibraryCallError, match="RuntimeError: factory failed"):
        env.mechanism("protocol_check:bad_factory").load()
    with pytest.raises(LibraryCallError, match="ModuleNotFoundError"):
        env.mechanism("no_such_module_here:f").load()
    with pytest.raises(ValueError, match="module:factory"):
        env.mechanism("no_colon")
    with pytest.raises(TypeError, match="JSON"):
        env.mechanism("protocol_check:echo", dim=object())


def test_a_worker_crash_reports_its_exit_code_and_stderr_and_the_next_call_restarts_it(env):
    with pytest.raises(MechanismError, match="exited with code 3") as info:
        env.mechanism("protocol_check:crash", code=3).sample([[1.0]], 1, np.random.default_rng(0))
    assert isinstance(info.value.__cause__, WorkerCrashedError)
    assert "about to crash" in str(info.value)
    out = env.mechanism("protocol_check:gaussian_sum").sample([[1.0]], 3, np.random.default_rng(0))
    assert out.shape == (3, 1)


def test_a_call_past_its_deadline_is_killed_with_a_timeout_error():
    env = LibraryEnv.current("test-timeout", call_timeout=1.0)
    try:
        with pytest.raises(MechanismError, match="no answer") as info:
            env.mechanism("protocol_check:sleeper", seconds=30).sample([[1.0]], 1, np.random.default_rng(0))
        assert isinstance(info.value.__cause__, WorkerTimeoutError)
    finally:
        env.close()


def test_the_proxy_pickles_as_its_spec_and_samples_after_unpickling(env):
    mech = env.mechanism("protocol_check:gaussian_sum", sigma=1.0)
    mech.sample([[1.0]], 2, np.random.default_rng(0))  # started
    copy = pickle.loads(pickle.dumps(mech))
    assert isinstance(copy, EnvMechanism) and copy.target == mech.target and copy.kwargs == mech.kwargs
    np.testing.assert_array_equal(copy.sample([[1.0]], 5, np.random.default_rng(3)),
                                  mech.sample([[1.0]], 5, np.random.default_rng(3)))


def test_dpaudits_audit_runs_unchanged_on_a_proxy_and_catches_a_leak(env):
    """A Gaussian sum with sigma 0.05 claimed 0.1-DP: far from it (eps >= 5 at one sigma), so the
    hockey-stick tester certifies a violation on the suggested pair at this seed."""
    from dpaudit import PureDP, audit
    from dpaudit.datasets import AddRemove, Domain
    from dpaudit.search import GridFinder

    mech = env.mechanism("protocol_check:gaussian_sum", sigma=0.05)
    finder = GridFinder([AddRemove(Domain((0.0,), (1.0,)), max_size=2).pair([[0.0]], [[0.0], [1.0]])])
    result = audit(mech, PureDP(0.1), finder, num_samples=2000, trials=1, seed=5, processes=1)
    assert result.violation


def test_the_protocol_refuses_arrays_that_would_need_pickle():
    with pytest.raises(_worker.ProtocolError, match="object"):
        _worker.encode({}, [np.array([{"a": 1}], dtype=object)])
    header, specs = _worker.parse_header(_worker.encode({"op": "x"}, [np.zeros((2, 3), np.int32)]).split(b"\n")[0])
    assert header["op"] == "x" and specs[0][1] == (2, 3) and specs[0][2] == 24
    with pytest.raises(_worker.ProtocolError):
        _worker.parse_header(b'{"arrays": [{"dtype": "|O", "shape": [1]}]}\n')


def test_an_environment_is_created_on_demand_and_runs_a_worker(tmp_path):
    """A venv with the base interpreter's site-packages (NumPy) and no requirements: built in
    about a second; the worker runs in it, under its own interpreter."""
    probe = LibraryEnv("probe", python=sys.executable, system_site_packages=True, lock=False, path=tmp_path / "probe")
    try:
        import subprocess

        has_numpy = subprocess.run([getattr(sys, "_base_executable", sys.executable), "-c", "import numpy"],
                                   capture_output=True).returncode == 0
    except OSError:
        has_numpy = False
    if not has_numpy:
        pytest.skip("the base interpreter has no NumPy for a --system-site-packages venv")
    try:
        probe.ensure()
        assert probe.exists() and (tmp_path / "probe" / "dpaudit-env.json").exists()
        out = probe.mechanism("protocol_check:version").sample([[0.0]], 1, np.random.default_rng(0))
        assert tuple(out[0].astype(int)) == sys.version_info[:2]
        assert probe.client().hello["executable"].startswith(str(tmp_path / "probe"))
    finally:
        probe.close()


def test_environment_creation_failures_name_the_environment_and_the_cause(tmp_path):
    with pytest.raises(EnvCreationError, match="no Python at"):
        LibraryEnv("nope", python="/no/such/python", path=tmp_path / "nope").ensure()
    with pytest.raises(EnvCreationError, match="no python9.99"):
        LibraryEnv("nope", python="9.99", path=tmp_path / "nope").ensure()
    with pytest.raises(KeyError, match="smartnoise-sql"):
        get_env("no-such-env")


# -- the rows, as data (no environment is built) ------------------------------------------------

def _factories(module: str) -> set[str]:
    tree = ast.parse((TARGETS_DIR / f"{module}.py").read_text())
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}


def test_every_row_names_a_registered_env_and_an_existing_worker_side_factory():
    keys = [r.key for r in ROWS]
    assert len(keys) == len(set(keys))
    for r in ROWS:
        assert r.env in ENVS, r.key
        module, factory = r.target.split(":")
        assert factory in _factories(module), r.key
        assert r.documented and r.relation_note.split(":")[0] in ("documented", "inferred"), r.key
        assert r.epsilon > 0 and 0 <= r.delta < 1, r.key
        for d0, d1 in r.witness_pairs:  # the declared pairs are neighbours of the declared relation
            r.relation().pair(np.asarray(d0, float).reshape(-1, len(r.lower)),
                              np.asarray(d1, float).reshape(-1, len(r.lower)))


def test_worker_side_modules_never_import_dpaudit():
    for path in Path(TARGETS_DIR).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == "dpaudit" for n in names), path.name
    tree = ast.parse(Path(_worker.__file__).read_text())
    mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert mods <= {"importlib", "json", "os", "sys", "traceback", "numpy", "__future__"}


def test_the_catalogue_builds_every_rows_mechanism_without_starting_a_worker():
    from dpaudit.library.envs import catalogue
    from dpaudit.library.envs.env import _CLIENTS

    before = set(_CLIENTS)
    for r in ROWS:
        mech = getattr(catalogue, r.attr)
        assert isinstance(mech, EnvMechanism) and mech.env is ENVS[r.env] and mech.row is r
        assert mech.neighbouring.name in ("add-remove", "replace")
    assert set(_CLIENTS) == before


# -- the runner (benchmarks/library_envs_audit.py): its arithmetic and its page, no environment --

def _runner():
    import importlib.util

    from library_audit_support import load_library_audit

    load_library_audit()  # the runner imports it as `library_audit`
    if "library_envs_audit" not in sys.modules:
        root = Path(__file__).resolve().parents[1]
        spec = importlib.util.spec_from_file_location("library_envs_audit", root / "benchmarks" / "library_envs_audit.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["library_envs_audit"] = module
        spec.loader.exec_module(module)
    return sys.modules["library_envs_audit"]


def test_the_exact_composition_delta_matches_randomised_response_and_its_limits():
    """k-fold composition of eps0-DP (Kairouz et al. 2015, Thm 3.3): at k = 1 the delta at
    epsilon 0 is the total variation of eps0-randomised response, (e^eps0 - 1) / (e^eps0 + 1), and
    0 at epsilon >= eps0; at epsilon = k eps0 (basic composition) it is 0; it decreases in epsilon."""
    r = _runner()
    for eps0 in (0.1, 1.0, 2.0):
        assert r.composition_delta(eps0, 1, 0.0) == pytest.approx((np.exp(eps0) - 1) / (np.exp(eps0) + 1), rel=1e-12)
        assert r.composition_delta(eps0, 1, eps0) == 0.0
        assert r.composition_delta(eps0, 7, 7 * eps0) == 0.0
        grid = [r.composition_delta(eps0, 10, e) for e in np.linspace(0, 10 * eps0, 25)]
        assert all(a >= b for a, b in zip(grid, grid[1:]))
    # two 1-DP steps at epsilon 1: delta = C(2,0)(e^2 - e^1) / (1 + e)^2 (the only positive term)
    assert r.composition_delta(1.0, 2, 1.0) == pytest.approx((np.e**2 - np.e) / (1 + np.e) ** 2, rel=1e-12)


def test_the_page_lists_every_row_with_its_environment_and_verdict():
    r = _runner()
    key = ROWS[0].key
    cache = {"rows": {key: {"verdict": "violation", "ran_at": "2026-11-29 01:00", "load": 3.0, "claim": "x",
                            "env": {"env": ROWS[0].env, "versions": {"python": "3.11.7", "lib": "1.0"}},
                            "first": {"outcome": "violation", "seconds": 12.0, "epsilon_lower_bound": 2.5,
                                      "command": "dpaudit test ...", "witness": None, "tester": "hockey-stick",
                                      "adversarial": {"tried": 3, "leaks": ["nan"], "rejected": [], "details": {}}},
                            "confirm": {"outcome": "violation", "seed": 2, "samples": 4000, "seconds": 20.0,
                                        "epsilon_lower_bound": 2.4}}}}
    page = r.render(cache)
    for row_ in ROWS:
        assert f"`{row_.name}`" in page
    assert "**violation**" in page and "python 3.11.7, lib 1.0" in page and "**leak**: nan" in page
    assert f"| {ROWS[0].library} | " in page


def test_the_committed_page_is_what_the_caches_give():
    """docs/library_envs.md is rebuilt from the committed caches (``--write-only``), as
    ``dpaudit library table --check`` keeps docs/library_audits.md: a page that drifted from its
    cache (found once: counts of four libraries stale) fails here."""
    r = _runner()

    def settled(text):  # the page states the machine it is rendered on: not part of the comparison
        return [line for line in text.splitlines() if not line.startswith("Machine: ")]

    page = r.render(r.load_cache())
    assert settled(r.DOC.read_text()) == settled(page), ("docs/library_envs.md differs from its caches: run "
                                       "`PYTHONPATH=src python benchmarks/library_envs_audit.py --write-only`")


def test_the_zcdp_conversion_is_above_the_exact_gaussian_epsilon_and_below_bun_steinke():
    """rho-zCDP -> (epsilon, delta) (Canonne et al. 2020, Prop. 12) for the Gaussian mechanism of
    sigma (rho = 1 / 2 sigma^2): never below the Gaussian's exact epsilon at delta (Balle and Wang
    2018; a conversion from rho alone cannot beat it), never above Bun and Steinke's simpler bound."""
    import math

    from scipy.optimize import brentq

    from dpaudit.library.envs.rows import zcdp_epsilon
    from dpaudit.privacy.profiles import gaussian_delta

    for sigma in (0.7, 1.0, 2.0, 5.0):
        rho, delta = 1 / (2 * sigma**2), 1e-5
        exact = brentq(lambda e: gaussian_delta(e, 1 / sigma) - delta, 1e-6, 100)
        eps = zcdp_epsilon(rho, delta)
        assert exact < eps < rho + 2 * math.sqrt(rho * math.log(1 / delta))
    with pytest.raises(ValueError, match="rho"):
        zcdp_epsilon(0.0, 1e-5)


# -- the rows as entries of dpaudit library's registry (no library environment is built) ---------

def test_every_env_row_is_a_registry_entry_resolved_through_its_environment():
    from dpaudit.library import entry as library_entry
    from dpaudit.library import registry
    from dpaudit.library.envs import resolve_entry

    for r in ROWS:
        e = registry.find(r.key)
        assert (e.env, e.target, e.library) == (r.env, r.catalogue_target, r.library), r.key
        assert e.guarantee.epsilon == r.epsilon and e.guarantee.delta == r.delta, r.key
        assert (e.budget.samples, e.budget.trials, e.budget.seed) == (r.samples, r.trials, r.seed), r.key
        info = registry.LIBRARIES[r.library]
        assert info.env == r.env and info.distribution == ENVS[r.env].distributions[0], r.library
        assert info.install == " ".join(ENVS[r.env].requirements), r.library
        assert library_entry._ENV_RESOLVERS[r.env] is resolve_entry
    assert len({r.library for r in ROWS}) >= 5 and len({e.library for e in registry.REGISTRY}) >= 8


def test_an_unbuilt_environment_is_not_built_when_forbidden_and_the_error_names_the_command(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from dpaudit.cli.app import app
    from dpaudit.library import registry
    from dpaudit.library.entry import resolve_mechanism
    from dpaudit.library.envs import EnvNotBuiltError

    monkeypatch.setenv("DPAUDIT_ENVS_DIR", str(tmp_path))
    monkeypatch.setenv("DPAUDIT_BUILD_ENVS", "0")
    with pytest.raises(EnvNotBuiltError, match="python -m dpaudit.library.envs build smartnoise-sql"):
        resolve_mechanism(registry.find("smartnoise-sql.count"))
    res = CliRunner().invoke(app, ["library", "audit", "smartnoise-sql", "count", "--samples", "200", "--json"])
    import json

    row = json.loads(res.output)["rows"][0]
    assert row["verdict"] == "error" and row["exit_code"] == 2, res.output
    assert "python -m dpaudit.library.envs build smartnoise-sql" in row["record"]["first"]["message"]
    assert list(tmp_path.iterdir()) == []  # nothing was built


def test_a_missing_environment_is_built_on_first_use_with_a_progress_line(tmp_path, monkeypatch, capsys):
    """An environment row whose environment does not exist yet: the resolver builds it (here a
    venv with the base interpreter's NumPy and no requirements, about a second), saying so on
    stderr, then the row's mechanism draws in it."""
    import subprocess

    from dpaudit.library import entry as library_entry
    from dpaudit.library.entry import Budget, Entry, Guarantee, resolve_mechanism
    from dpaudit.library.envs import resolve_entry

    if subprocess.run([getattr(sys, "_base_executable", sys.executable), "-c", "import numpy"],
                      capture_output=True).returncode != 0:
        pytest.skip("the base interpreter has no NumPy for a --system-site-packages venv")
    probe = LibraryEnv("probe-entry", python=sys.executable, system_site_packages=True, lock=False,
                       path=tmp_path / "probe-entry")
    monkeypatch.setitem(ENVS, "probe-entry", probe)
    monkeypatch.setitem(library_entry._ENV_RESOLVERS, "probe-entry", resolve_entry)
    target = tmp_path / "probe_target.py"
    target.write_text("from dpaudit.library.envs import get_env\n"
                      "MECH = get_env('probe-entry').mechanism('protocol_check:laplace_count', scale=1.0)\n")
    e = Entry("Probe", "probe", f"{target}:MECH", "a Laplace count in a probe environment",
              Guarantee(1.0, 0.0, "add-remove", "records in [0, 1]", "test"), budget=Budget(samples=10, trials=1, seed=1),
              env="probe-entry", row_key="probe.laplace_count")
    try:
        mech = resolve_mechanism(e)
        err = capsys.readouterr().err
        assert "[dpaudit env probe-entry]" in err and "not built yet: building" in err and "ready in" in err
        assert probe.exists()
        out = mech.sample([[0.0], [1.0]], 4, np.random.default_rng(0))
        assert out.shape == (4, 1) and probe.client().hello["executable"].startswith(str(tmp_path / "probe-entry"))
        resolve_mechanism(e)  # built: no second build, no progress line
        assert "building" not in capsys.readouterr().err
    finally:
        probe.close()


def test_the_page_counts_every_library_of_the_registry():
    """docs/library_envs.md's count is the registry's (regenerate with ``--write-only`` when rows change)."""
    from dpaudit.library import registry

    page = (Path(__file__).resolve().parents[1] / "docs" / "library_envs.md").read_text()
    libs = {e.library for e in registry.REGISTRY}
    assert len(libs) >= 8
    assert f"`dpaudit library` audits {len(libs)} libraries, {len(registry.REGISTRY)} rows" in page
    for r in ROWS:
        assert f"* `{r.key}` ({r.env}): " in page, r.key


def test_a_call_interrupted_by_the_callers_time_limit_does_not_desynchronise_the_next_call():
    # the search's per-pair limit (SIGALRM) interrupts a call mid-answer: the worker is stopped, and the
    # next call gets a fresh one and its own answer (before: the late answer was read as the next
    # request's, and every later pair was "rejected" with KeyError 'handle')
    import signal

    from dpaudit.search.input_space import PairTimeout, _time_limit

    env = LibraryEnv.current("test-interrupt")
    try:
        with pytest.raises(PairTimeout):
            with _time_limit(1.0):
                env.mechanism("protocol_check:sleeper", seconds=3).sample([[1.0]], 1, np.random.default_rng(0))
        assert signal.getitimer(signal.ITIMER_REAL)[0] == 0.0
        out = env.mechanism("protocol_check:gaussian_sum").sample([[1.0]], 3, np.random.default_rng(0))
        assert out.shape == (3, 1)
    finally:
        env.close()

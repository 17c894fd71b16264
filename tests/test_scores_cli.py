"""`dpaudit audit-scores` end to end (typer CliRunner on dpaudit.cli.app)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from dpaudit.cli import app
from dpaudit.privacy.profiles import gaussian_epsilon

runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def gaussian_files(tmp_path):
    rng = np.random.default_rng(0)
    mu = 1.5
    np.save(tmp_path / "in.npy", rng.normal(mu, 1.0, 5000))
    np.savetxt(tmp_path / "out.csv", rng.normal(0.0, 1.0, 5000), delimiter=",")
    return tmp_path / "in.npy", tmp_path / "out.csv", mu


def test_prints_bounds_and_baselines(gaussian_files):
    a, b, _ = gaussian_files
    res = run("audit-scores", a, b, "--seed", 1)
    assert res.exit_code == 0, res.output
    for text in ("epsilon lower bound", "mu (GDP) lower bound", "threshold MIA", "GDP audit", "scott"):
        assert text in res.output


def test_json_output_is_sound_and_reproducible(gaussian_files):
    a, b, mu = gaussian_files
    res = run("audit-scores", a, b, "--json", "--seed", 3, "--delta", "1e-3", "--bins", "40", "--beta", "0.1")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["delta"] == 1e-3 and data["beta"] == 0.1 and data["confidence"] == 0.9 and data["inputs"]["seed"] == 3
    assert 0 < data["epsilon_lower_bound"] <= gaussian_epsilon(1e-3, mu)
    assert 0 < data["mu_lower_bound"] <= mu
    assert data["histogram"]["details"]["bins"]["k"] == 40
    assert data["baselines"]["gdp"]["mu_lower_bound"] <= mu
    again = json.loads(run("audit-scores", a, b, "--json", "--seed", 3, "--delta", "1e-3", "--bins", "40", "--beta", "0.1").stdout)
    assert again["epsilon_lower_bound"] == data["epsilon_lower_bound"]


def test_claim_violation_exits_1_and_plot_is_written(gaussian_files, tmp_path):
    a, b, _ = gaussian_files
    png = tmp_path / "t.png"
    res = run("audit-scores", a, b, "--epsilon", "0.2", "--delta", "1e-5", "--plot", png, "--seed", 0)
    assert res.exit_code == 1, res.output
    assert "VIOLATED" in res.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ok = run("audit-scores", a, b, "--epsilon", "20", "--json", "--seed", 0)
    assert ok.exit_code == 0 and json.loads(ok.stdout)["claim"]["violated"] is False


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--delta", "0"], "--delta"),
        (["--delta", "1.5"], "--delta"),
        (["--beta", "1"], "--beta"),
        (["--confidence", "1"], "--confidence"),
        (["--bins", "0"], "--bins"),
        (["--bins", "many"], "--bins"),
        (["--claim-delta", "1e-5"], "--epsilon"),
        (["--claim-epsilon", "-1"], "epsilon"),
        (["--epsilon", "-1"], "epsilon"),
        (["--plot", "out.gif"], "--plot"),
    ],
)
def test_bad_options_exit_2_naming_the_value(gaussian_files, extra, message):
    a, b, _ = gaussian_files
    res = run("audit-scores", a, b, *extra)
    assert res.exit_code == 2
    assert "error" in res.output and message in res.output


def test_bad_files_exit_2(tmp_path, gaussian_files):
    a, _, _ = gaussian_files
    (tmp_path / "nan.txt").write_text("1.0\n2.0\nnan\n")
    res = run("audit-scores", a, tmp_path / "nan.txt")
    assert res.exit_code == 2 and "non-finite" in res.output and "nan.txt" in res.output
    res = run("audit-scores", a, tmp_path / "missing.npy")
    assert res.exit_code == 2 and "no such file" in res.output
    (tmp_path / "one.txt").write_text("1.0\n")
    res = run("audit-scores", a, tmp_path / "one.txt")
    assert res.exit_code == 2 and "at least 2" in res.output


def test_deprecated_flags_still_work_with_a_note(gaussian_files):
    a, b, _ = gaussian_files
    new = run("audit-scores", a, b, "--json", "--seed", 3, "--beta", "0.1", "--epsilon", "0.2", "--delta", "1e-5")
    old = run("audit-scores", a, b, "--json", "--seed", 3, "--confidence", "0.9", "--claim-epsilon", "0.2",
              "--claim-delta", "1e-5")
    assert new.exit_code == old.exit_code == 1
    assert "--confidence is deprecated" in old.stderr and "--claim-epsilon is deprecated" in old.stderr
    n, o = json.loads(new.stdout), json.loads(old.stdout)
    assert n["epsilon_lower_bound"] == o["epsilon_lower_bound"] and n["claim"] == o["claim"]


def test_library_result_to_dict_is_what_json_prints(gaussian_files):
    """The CLI only renders: ``audit_scores(...).to_dict()`` is exactly what ``--json`` prints."""
    from dpaudit.privacy.claims import make_claim
    from dpaudit.scores.audit import audit_scores
    from dpaudit.scores.io import load_scores

    a, b, _ = gaussian_files
    res = run("audit-scores", a, b, "--json", "--seed", 4, "--delta", "1e-4", "--epsilon", "1", "--bins", "30")
    printed = json.loads(res.stdout)
    lib = audit_scores(load_scores(a), load_scores(b), delta=1e-4, bins=30, seed=4, claim=make_claim(1.0, 1e-4),
                       in_path=a, out_path=b)
    assert lib.to_dict() == printed
    assert lib.violated == (res.exit_code == 1)
    curves = lib.curves()
    assert len(curves["alpha"]) == len(curves["upper"]) and curves["claim"][0].startswith("claim: ")


@pytest.fixture
def one_run_files(tmp_path):
    rng = np.random.default_rng(7)
    mask = rng.random(4000) < 0.5
    np.save(tmp_path / "scores.npy", rng.normal(0.0, 1.0, 4000) + 2.0 * mask)
    np.savetxt(tmp_path / "mask.txt", mask.astype(int), fmt="%d")
    return tmp_path / "scores.npy", tmp_path / "mask.txt"


def test_one_run_mode_prints_guesses_and_bounds(one_run_files):
    s, m = one_run_files
    res = run("audit-scores", s, "--mask", m, "--seed", 1, "--delta", "1e-5")
    assert res.exit_code == 0, res.output
    for text in ("one run", "guesses", "Steinke", "mu (GDP) lower bound", "estimate"):
        assert text in res.output


def test_one_run_mode_json_claim_and_report(one_run_files, tmp_path):
    s, m = one_run_files
    res = run("audit-scores", s, "--mask", m, "--seed", 1, "--json", "--quiet", "--epsilon", "0.5", "--delta", "1e-5",
              "--report", tmp_path / "r.html")
    assert res.exit_code == 1, res.output  # the run proves more than epsilon 0.5
    data = json.loads(res.stdout)
    assert data["method"] == "one-run" and data["claim"]["violated"] is True
    assert 0.5 < data["epsilon_lower_bound"] <= gaussian_epsilon(1e-5, 2.0)
    assert data["guess"]["correct"] <= data["guess"]["guesses"] and data["inputs"]["m"] == 4000
    html = (tmp_path / "r.html").read_text()
    assert "One-run audit" in html and "guesses" in html and "p-value" in html
    ok = run("audit-scores", s, "--mask", m, "--seed", 1, "--epsilon", "20", "--delta", "1e-5")
    assert ok.exit_code == 0, ok.output


def test_one_run_mode_bad_input(one_run_files, tmp_path):
    s, m = one_run_files
    np.save(tmp_path / "short.npy", np.ones(10))
    res = run("audit-scores", s, "--mask", tmp_path / "short.npy")
    assert res.exit_code == 2 and "10 entries" in res.output
    np.save(tmp_path / "bad.npy", np.full(4000, 2.0))
    res = run("audit-scores", s, "--mask", tmp_path / "bad.npy")
    assert res.exit_code == 2 and "0/1" in res.output
    res = run("audit-scores", s, s, "--mask", m)
    assert res.exit_code == 2 and "no OUT" in res.output
    res = run("audit-scores", s)
    assert res.exit_code == 2 and "--mask" in res.output
    res = run("audit-scores", s, "--mask", m, "--alternative", "up")
    assert res.exit_code == 2 and "--alternative" in res.output


def test_two_sample_mode_reports_whole_sample_bound_and_attack(gaussian_files):
    a, b, mu = gaussian_files
    res = run("audit-scores", a, b, "--json", "--seed", 2, "--quiet", "--alternative", "greater")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    cp = data["baselines"]["clopper_pearson"]
    assert 0 < cp["epsilon_lower_bound"] <= gaussian_epsilon(1e-5, mu)
    assert cp["details"]["clopper-pearson"]["alternative"] == "greater"
    assert "epsilon_of_mu_estimate" in data["baselines"]["gdp"]
    auc = data["attack"]["auc"]
    assert auc["lower"] <= auc["estimate"] <= auc["upper"]
    assert set(data["attack"]["tpr_at_fpr"]) == {"0.001", "0.01", "0.1"}


def test_score_files_people_have(tmp_path, gaussian_files):
    """A header row, pandas' default ``to_csv`` (index column + header), .npz, JSON (list, records,
    pandas' ``to_json``): read, with one line saying what was read; several columns need
    --column, and the error names them (issue 38, item 4)."""
    from dpaudit.scores.io import read_scores

    a, _, _ = gaussian_files
    x = np.load(a)[:400]  # a small sample: repr(float) round-trips exactly
    files = {
        "header.csv": "score\n" + "\n".join(map(repr, x.tolist())),
        "pandas.csv": ",score,loss\n" + "\n".join(f"{i},{v!r},{-v!r}" for i, v in enumerate(x.tolist())),
        "list.json": json.dumps(x.tolist()),
        "records.json": json.dumps([{"id": i, "score": v} for i, v in enumerate(x.tolist())]),
        "pandas.json": json.dumps({"score": {str(i): v for i, v in enumerate(x.tolist())}}),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    np.savez(tmp_path / "two.npz", score=x, other=-x)
    for name, column, told in [("header.csv", None, "column 'score' of header.csv (header row)"),
                               ("pandas.csv", "score", "(header row, index column skipped)"),
                               ("pandas.csv", "1", "column 'score'"), ("list.json", None, "from list.json"),
                               ("records.json", "score", "key 'score'"), ("pandas.json", None, "key 'score'"),
                               ("two.npz", "score", "array 'score'")]:
        got, what = read_scores(tmp_path / name, column=column)
        np.testing.assert_array_equal(got, x)
        assert what.startswith(f"{x.size:,} scores") and told in what, (name, what)
    assert np.array_equal(read_scores(tmp_path / "pandas.csv", column="loss")[0], -x)
    for name, names in [("pandas.csv", "score, loss"), ("two.npz", "score, other"), ("records.json", "id, score")]:
        with pytest.raises(ValueError, match=f"{name}: 2 .*\\({names}\\).*--column"):
            read_scores(tmp_path / name)
    with pytest.raises(ValueError, match="no column 'nope'; it has score, loss"):
        read_scores(tmp_path / "pandas.csv", column="nope")
    (tmp_path / "ragged.csv").write_text("1,2\n3\n")
    with pytest.raises(ValueError, match="row 2 has 1 values, the first row 2"):
        read_scores(tmp_path / "ragged.csv")
    # the command line: --column, and one line per file saying what was read (not with --quiet)
    res = run("audit-scores", tmp_path / "pandas.csv", a, "--column", "score", "--seed", 1)
    assert res.exit_code == 0, res.output
    assert f"read IN: {x.size:,} scores from column 'score' of pandas.csv" in res.stderr
    assert "read OUT" in res.stderr
    quiet = run("audit-scores", tmp_path / "header.csv", a, "--seed", 1, "--quiet")
    assert quiet.exit_code == 0 and "read IN" not in quiet.stderr
    bad = run("audit-scores", tmp_path / "pandas.csv", a)
    assert bad.exit_code == 2 and "--column" in bad.stderr and "score, loss" in bad.stderr

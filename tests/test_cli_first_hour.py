"""A new user's first hour with ``dpaudit test`` (issue 38): a typo'd ``zoo:`` target answers "did
you mean ...?" in one line (item 6 of the issue), and ``--quiet`` prints no "Auditing ..." header
(item 9)."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from dpaudit.cli import app
from dpaudit.mechanisms import zoo

runner = CliRunner()
FAST = ["--samples", "2000", "--stages", "off", "--trials", "1", "--seed", "0"]



def _unspan(html: str) -> str:
    """The page without the ``<span class="t">`` that keep breakable tokens whole (issue 44)."""
    return re.sub(r'<span class="t">(.*?)</span>', r"\1", html)

def run(*args):
    return runner.invoke(app, list(args), catch_exceptions=False, env={"COLUMNS": "80"})


def test_typo_in_zoo_target_suggests_names_instead_of_listing_all():
    res = run("test", "zoo:dp-laplce", "--epsilon", "1")
    assert res.exit_code == 2
    err = res.stderr.strip()
    assert "did you mean dp-laplace" in err and "dpaudit zoo lists them all" in err, err
    shown = [e.name for e in zoo.entries() if e.name in err]
    assert len(shown) <= 4, shown  # a few close names, not all 53
    assert len(err.splitlines()) <= 3, err
    part = run("test", "zoo:laplace", "--epsilon", "1")  # a part of a name still finds its entries
    assert part.exit_code == 2 and "did you mean" in part.stderr


def test_quiet_prints_no_header():
    loud = run("test", "zoo:dp-laplace", "--epsilon", "1", *FAST)
    quiet = run("test", "zoo:dp-laplace", "--epsilon", "1", *FAST, "--quiet")
    assert loud.exit_code == quiet.exit_code == 0
    assert "Auditing" in loud.stderr
    assert "Auditing" not in quiet.stderr and quiet.stderr.strip() == "", quiet.stderr
    assert "no violation found" in quiet.stdout


def test_witness_pairs_have_their_own_labels():
    """Trials 1 and 2 of a zoo entry with two witness pairs are told apart (issue 38, item 8)."""
    from dpaudit.audit.targets import assemble, load_target

    for entry in zoo.entries():
        if len(entry.witness_pairs) > 1:
            setup = assemble(*load_target(f"zoo:{entry.name}"), epsilon=1.0)
            labels = [p.description for p in setup.known]
            assert len(set(labels)) == len(labels) and f"witness pair 2 of {entry.name}" in labels, labels
            assert [p.description for p in entry.witnesses()] == labels


def test_floating_point_finding_reads_right(tmp_path):
    """dp-laplace is correct in exact arithmetic: its float64 leak is said so, not "the bug: none: a
    correct mechanism" under the FLOATING-POINT LEAK banner, and the note does not repeat the test
    region (issue 38, item 8)."""
    import json
    import re

    from dpaudit.report import render_result

    args = ["zoo:dp-laplace", "--epsilon", "1", "--tester", "float-bits", "--samples", "20000", "--trials", "2",
            "--seed", "1", "--quiet"]
    res = run("test", *args)
    assert res.exit_code == 5 and "FLOATING-POINT LEAK" in res.stdout, res.stdout
    terminal = " ".join(res.stdout.replace("│", " ").split())
    assert "the test region S (above)" in terminal
    data = json.loads(run("test", *args, "--json").stdout)
    render_result(data, tmp_path / "r.html", versions={})  # the report without the outputs' plot
    html = _unspan((tmp_path / "r.html").read_text())
    assert "FLOATING-POINT LEAK" in html and "none: a correct mechanism" not in html
    assert "correct as mathematics, but its floating-point implementation leaks" in html
    region = re.search(r"test region S \(a set of outputs\)</td><td>(.*?)</td>", html).group(1)
    note = re.search(r">note</td><td>(.*?)</td>", html).group(1)
    assert region not in note and "the test region S (above)" in note


# ---------------------------------------------------------------------------------------------------
# issue 44: file targets, one-line errors, advice for a floating-point leak, messages that read right

MYMECH = "import numpy as np\n\n\ndef noisy_sum(d, rng):\n    return float(np.sum(d)) + rng.laplace(0.0, 1.0)\n"


def _in(folder, *args):
    """``dpaudit ARGS`` run in ``folder`` (the target's files there), at 80 columns."""
    import os
    import sys

    cwd, path = os.getcwd(), list(sys.path)
    os.chdir(folder)
    try:
        return run(*args)
    finally:
        os.chdir(cwd)
        sys.path[:] = path
        for name in ("mymech", "bad_import", "syntax_error"):
            sys.modules.pop(name, None)


def test_a_file_path_target_works_as_pytest_and_uvicorn_accept_it(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "mymech.py").write_text(MYMECH)
    args = ["--tester", "hockey-stick", *FAST, "--quiet", "--json"]
    for target in ("sub/mymech.py:noisy_sum", "./sub/mymech.py:noisy_sum", str(tmp_path / "sub" / "mymech.py") + ":noisy_sum"):
        res = _in(tmp_path, "test", target, "-e", "1", *args)
        assert res.exit_code == 0, (target, res.output)
    (tmp_path / "mymech.py").write_text(MYMECH)
    assert _in(tmp_path, "test", "mymech:noisy_sum", "-e", "1", *args).exit_code == 0  # the module form too


def _one_error_line(res, *words):
    err = " ".join(res.stderr.split())  # rich wraps the one logical line at the 80 columns of the test
    assert res.stderr.startswith("error: ") and res.stderr.count("error: ") == 1, res.stderr
    assert res.exit_code == 2, (res.exit_code, res.output)
    for w in words:
        assert w in err, (w, err)
    return err


def test_every_bad_target_is_one_line_with_what_to_write(tmp_path):
    (tmp_path / "mymech.py").write_text(MYMECH)
    (tmp_path / "bad_import.py").write_text("import numpy\nx = 1 / 0\n")
    (tmp_path / "syntax_error.py").write_text("def f(d)\n    return 1\n")

    def bad(target, *words):
        res = _in(tmp_path, "test", target, "-e", "1")
        return _one_error_line(res, *words)

    # was exit 4, "internal error: TypeError: the 'package' argument is required ..."
    bad("./nosuch.py:f", "no such file: ./nosuch.py", "path/to/file.py:function")
    bad("mymech.py:nosuch", "has no attribute 'nosuch'", "it defines: noisy_sum")
    bad("mymech:nosuch", "module 'mymech' has no attribute 'nosuch'", "noisy_sum")
    bad("bad_import.py:f", "cannot import bad_import.py: ZeroDivisionError: division by zero", "line 2")
    bad("syntax_error.py:f", "SyntaxError", "syntax_error.py, line 1")
    bad("nosuchmod:f", "no module named 'nosuchmod' here", "give its file: nosuchmod.py:FUNCTION")
    bad("mymech.py", "did you mean mymech.py:FUNCTION?")


_ERROR_PATH = r"""
import contextlib, io, json, sys
from dpaudit.cli.app import main
codes = []
for argv in (["test", "./nosuch.py:f", "-e", "1"], ["test", "zoo:dp-laplce", "-e", "1"],
             ["test", "zoo:dp-laplace", "-e", "1", "--beta", "2"], ["test", "zoo:dp-laplace", "-e", "1", "-r", "x.pdf"],
             ["test", "nosuchmod:f", "-e", "1"], ["test", "zoo:dp-laplace", "-e", "1", "--samples", "0"]):
    sys.argv = ["dpaudit", *argv]
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            main()
        except SystemExit as exc:
            codes.append(exc.code)
heavy = sorted(m for m in ("scipy", "torch", "optuna", "sklearn", "matplotlib", "dask") if m in sys.modules)
print(json.dumps({"codes": codes, "heavy": heavy}))
"""


def test_bad_input_is_reported_before_the_heavy_imports(tmp_path):
    """Bad-input errors took 1.1-1.2 s where start-up takes 0.2 s: the testers, scipy and Optuna were
    imported before the target and the options were checked. A check of ``sys.modules``, not a timing."""
    import json
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-c", _ERROR_PATH], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    seen = json.loads(res.stdout.strip().splitlines()[-1])
    assert seen == {"codes": [2] * 6, "heavy": []}, (seen, res.stderr)


def test_the_advice_for_a_floating_point_leak_names_the_hockey_stick_tester(tmp_path):
    """The textbook float64 Laplace sum a user writes first: FLOATING-POINT LEAK, and "what to do" says
    how to test its distribution alone; that command then passes (exit 0)."""
    (tmp_path / "mymech.py").write_text(MYMECH)
    pair = ["--pairs", "[[[0.0], [0.0, 1.0]]]"]
    res = _in(tmp_path, "test", "mymech.py:noisy_sum", "-e", "1", "--samples", "4000", "--trials", "1",
              "--stages", "off", "--seed", "0", "--quiet", *pair)
    assert res.exit_code == 5 and "FLOATING-POINT LEAK" in res.stdout, res.stdout
    flat = " ".join(res.stdout.replace("│", " ").split())
    assert "run again with --tester hockey-stick" in flat and "snapping mechanism" in flat, flat
    alone = _in(tmp_path, "test", "mymech.py:noisy_sum", "-e", "1", "--samples", "4000", "--trials", "1",
                "--stages", "off", "--seed", "0", "--quiet", "--tester", "hockey-stick", *pair)
    assert alone.exit_code == 0, alone.stdout


def test_a_non_finite_output_is_shown_as_a_number_and_one_record_is_singular():
    import numpy as np

    from dpaudit.datasets import Replace, Domain
    from dpaudit.errors import MechanismError
    from dpaudit.mechanisms.base import Mechanism

    mech = Mechanism.from_callable(lambda d: np.float64("nan"), name="nan-mech")
    try:
        mech.sample(np.zeros((2, 1)), 3, np.random.default_rng(0))
    except MechanismError as exc:
        msg = str(exc)
    else:  # pragma: no cover
        raise AssertionError("no MechanismError")
    assert "non-finite value nan" in msg and "np.float64" not in msg, msg
    pair = Replace(Domain([0.0], [1.0]), min_size=1, max_size=1).random_pair(np.random.default_rng(0))
    assert "1 record," in pair.description and "1 records" not in pair.description, pair.description


def test_an_error_wraps_between_words_on_an_80_column_terminal(monkeypatch):
    """The typo hint wrapped mid-word at 80 columns ("non-dp-lapl" / "ace-2"): printed as one soft line,
    the terminal cut it anywhere. On a terminal it now wraps between words; in a log it stays one line."""
    import io

    from rich.console import Console

    from dpaudit.cli import options

    message = ("no zoo mechanism called 'non-dp-laplce-2'; did you mean non-dp-laplace-2, non-dp-laplace-1, "
               "dp-laplace? (dpaudit zoo lists them all)")
    for terminal in (True, False):
        buf = io.StringIO()
        monkeypatch.setattr(options, "console", Console(file=buf, force_terminal=terminal, width=80, color_system=None))
        assert options.fail(message).exit_code == 2
        lines = buf.getvalue().rstrip("\n").splitlines()
        if terminal:
            assert len(lines) > 1 and all(len(line) <= 80 for line in lines), lines
            words = " ".join(lines).split()
            for name in ("'non-dp-laplce-2';", "non-dp-laplace-2,", "non-dp-laplace-1,", "dp-laplace?"):
                assert name in words, (name, lines)  # each name whole on one line
        else:
            assert lines == [f"error: {message}"], lines


def test_the_trials_table_calls_a_floating_point_leak_so():
    res = run("test", "zoo:dp-laplace", "--epsilon", "1", "--tester", "float-bits", "--samples", "20000", "--trials",
              "2", "--seed", "1", "--quiet")
    assert res.exit_code == 5, res.stdout
    table = res.stdout.split("Trials")[1]
    rows = [line for line in table.splitlines() if line.strip().startswith("│ 2") or line.strip().startswith("│ 1")]
    assert any("fp leak" in r for r in rows) and not any("violation" in r for r in rows), table
    assert "fp leak: a FLOATING-POINT LEAK" in " ".join(table.split())


def test_audit_scores_says_why_a_higher_row_is_not_the_headline(tmp_path):
    """Issue 44, item 7: the headline epsilon (the histogram audit's) was below the whole-sample
    Clopper-Pearson row with no word on why; each row holds at 1 - beta on its own, the largest of k
    rows only at 1 - k beta, and the output now says so."""
    import json

    import numpy as np

    rng = np.random.default_rng(0)
    np.save(tmp_path / "in.npy", rng.normal(1.5, 1.0, 2000))
    np.save(tmp_path / "out.npy", rng.normal(0.0, 1.0, 2000))
    args = ["audit-scores", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--seed", "0", "--quiet"]
    d = json.loads(run(*args, "--json").stdout)
    cp = d["baselines"]["clopper_pearson"]["epsilon_lower_bound"]
    assert cp > d["epsilon_lower_bound"]  # the case of the issue
    assert f"whole-sample Clopper-Pearson audit gives more ({cp:.4g})" in d["epsilon_note"]
    assert "confidence 0.85 (union bound)" in d["epsilon_note"]
    text = " ".join(run(*args).stdout.replace("│", " ").split())
    assert "from the histogram audit (paper 001)" in text and f"gives more ({cp:.4g})" in text, text

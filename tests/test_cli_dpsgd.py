"""``dpaudit dpsgd``: the verdict and exit code on the reference and on a bug, its JSON, auditing a
saved run (``--run``, ``TrainingRun.save``/``load``, ``OpacusCanaries.save``), the plot, and bad
input (exit 2 with a message naming the bad value). Small seeded configurations: q = 1, 10 steps,
500 canaries."""

from __future__ import annotations

import dataclasses
import json
import logging
import math

import numpy as np
import pytest
from typer.testing import CliRunner

pytest.importorskip("torch")
pytest.importorskip("sklearn")

from dpaudit.cli import app  # noqa: E402
from dpaudit.dpsgd import (  # noqa: E402
    VARIANTS,
    DPSGDConfig,
    TrainingRun,
    audit_plot,
    audit_run,
    noise_for_epsilon,
    train_with_canaries,
)

logging.getLogger("absl").setLevel(logging.ERROR)

runner = CliRunner()
SMALL = ("--epsilon", "2", "--delta", "1e-5", "--sampling-rate", "1", "--steps", "10", "--canaries", "500",
         "--seed", "0")
TIMES = ("train_seconds", "audit_seconds")  # wall times: the only fields two identical audits differ in


def run(*args):
    return runner.invoke(app, ["dpsgd", *args], catch_exceptions=False, env={"COLUMNS": "80"})


def _same_audit(cli: dict, lib: dict) -> None:
    """The CLI's JSON is the library's ``to_dict`` (plus ``inputs`` and ``plot``), up to wall times."""
    assert {k: v for k, v in cli.items() if k not in TIMES + ("inputs", "plot")} == \
        {k: v for k, v in lib.items() if k not in TIMES}


@pytest.fixture(scope="module")
def sigma():
    return noise_for_epsilon(2.0, 1e-5, 1.0, 10)


@pytest.fixture(scope="module")
def saved(tmp_path_factory, sigma):
    """A small signed-canary run of the reference, saved: ``(run, path)``."""
    cfg = DPSGDConfig(noise_multiplier=sigma, sampling_rate=1.0, steps=10)
    r = train_with_canaries(cfg, canaries=500, canary_kind="signed", seed=3)
    path = tmp_path_factory.mktemp("runs") / "run.npz"
    assert r.save(path) == path
    return r, path


def test_correct_reference_exits_0_with_the_verdict_and_a_plot(tmp_path, sigma):
    png = tmp_path / "audit.png"
    res = run(*SMALL, "--plot", str(png))
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "no violation found" in out and "VIOLATION" not in out
    for row in ("accountant epsilon", "certified epsilon", "certified GDP mu", "estimate (fit)", "estimate (PLD)",
                "no confidence statement", f"sigma={sigma:.4g} (for epsilon 2)", "seed 0"):
        assert row in out, row
    # one of the default scores is marked best (which one is the run's luck, not a property)
    assert sum(f"{k} (best)" in out for k in ("lr", "spread", "whitened")) == 1, out
    assert max(len(line) for line in out.splitlines()) <= 80
    # DPSGDAudit.estimate_text: each estimate labelled, or "not computed: <reason>"
    flat = " ".join(out.replace("\u2502", " ").split())  # the panel's wrapped lines joined
    assert flat.count("(estimate, no confidence") + flat.count("not computed:") == 2, out
    assert "Training the reference DP-SGD" in res.stderr and "Plot written to" in res.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_clipping_exits_1_and_json_is_the_library_audit(sigma):
    res = run(*SMALL, "--variant", "no-clipping", "--json")
    assert res.exit_code == 1, res.output
    data = json.loads(res.stdout)
    for key in ("accountant_epsilon", "epsilon_lower_bound", "mu_lower_bound", "violated", "best_score", "one_run",
                "epsilon_estimate_fit", "epsilon_estimate_pld", "config", "delta", "beta", "canaries", "inputs"):
        assert key in data, key
    assert data["violated"] is True and data["epsilon_lower_bound"] > data["accountant_epsilon"]
    assert data["variant"] == "no-clipping" and data["canaries"] == 500 and data["plot"] is None
    assert data["inputs"]["seed"] == 0 and data["inputs"]["noise_multiplier_from"] == "epsilon"
    assert set(data["one_run"]) == {"lr", "spread", "whitened"}
    cfg = DPSGDConfig(noise_multiplier=sigma, sampling_rate=1.0, steps=10)
    lib = audit_run(train_with_canaries(cfg, canaries=500, variant="no-clipping", seed=0), delta=1e-5, seed=0)
    _same_audit(data, lib.to_dict())
    text = run(*SMALL, "--variant", "no-clipping", "--noise-multiplier", f"{sigma!r}", "--epsilon", "2")
    assert text.exit_code == 2 and "not both" in text.stderr  # --epsilon picks the noise multiplier


def test_save_and_load_round_trip_bit_for_bit(saved, tmp_path):
    r, path = saved
    back = TrainingRun.load(path)
    for name in ("observations", "mask", "sampled", "participation", "pattern"):
        a, b = getattr(r, name), getattr(back, name)
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), name
    assert back.config == r.config and back.variant == r.variant and back.details == r.details
    assert back.seconds == r.seconds and back.train_accuracy == r.train_accuracy and back.final_scores is None
    # no pattern (None stays None), input canaries' final scores, NaN accuracy (Opacus runs), a path without .npz
    other = dataclasses.replace(r, pattern=None, final_scores=np.linspace(-1, 1, 500), train_accuracy=math.nan,
                                config=dataclasses.replace(r.config, canary_norm=3.0, max_grad_norm=0.5))
    back = TrainingRun.load(other.save(tmp_path / "other"))
    assert back.pattern is None and np.array_equal(back.final_scores, other.final_scores)
    assert math.isnan(back.train_accuracy) and back.config == other.config


def test_run_audits_a_saved_run_like_audit_run(saved, tmp_path):
    r, path = saved
    res = run("--run", str(path), "--seed", "0", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    _same_audit(data, audit_run(TrainingRun.load(path), delta=1e-5, seed=0).to_dict())
    assert data["inputs"]["run"] == str(path) and data["inputs"]["canary_kind"] == "signed"
    # --noise-multiplier replaces the saved claim: audited against the accountant at that sigma
    res = run("--run", str(path), "--seed", "0", "--json", "--noise-multiplier", "20")
    data = json.loads(res.stdout)
    claimed = dataclasses.replace(r, config=dataclasses.replace(r.config, noise_multiplier=20.0))
    _same_audit(data, audit_run(claimed, delta=1e-5, seed=0).to_dict())
    assert data["config"]["noise_multiplier"] == 20.0
    assert data["inputs"]["saved_noise_multiplier"] == r.config.noise_multiplier
    assert res.exit_code == (1 if data["violated"] else 0)
    text = run("--run", str(path), "--seed", "0", "--noise-multiplier", "20")
    assert "--noise-multiplier; the run says" in text.stdout and str(path) in text.stdout
    assert max(len(line) for line in text.stdout.splitlines()) <= 80
    # options that describe the training come from the file
    bad = run("--run", str(path), "--steps", "5", "--variant", "correct")
    assert bad.exit_code == 2 and "--variant, --steps come from" in bad.stderr


def test_opacus_canaries_save_is_what_the_cli_audits(tmp_path):
    """Both Opacus hooks: the single-kind one (``canary_kind="signed"``) saves its run; the
    multi-kind default saves its Dirac canaries' run. The CLI audits exactly what was saved."""
    pytest.importorskip("opacus")
    import warnings

    import torch
    from opacus import PrivacyEngine

    from dpaudit.dpsgd import load_digits_task
    from dpaudit.dpsgd.opacus import OpacusCanaries

    warnings.filterwarnings("ignore")
    x, y = load_digits_task(num_train=100, seed=0)
    for kw, kind in ((dict(canary_kind="signed"), "signed"), ({}, "dirac")):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(64, 10))
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)),
                                             batch_size=20)
        sgd = torch.optim.SGD(model.parameters(), lr=0.5)
        model, opt, loader = PrivacyEngine().make_private(module=model, optimizer=sgd, data_loader=loader,
                                                          noise_multiplier=1.0, max_grad_norm=1.0,
                                                          poisson_sampling=True)
        canaries = OpacusCanaries(opt, canaries=300, sampling_rate=0.2, seed=0, **kw)
        for xb, yb in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            canaries.step()
        path = canaries.save(tmp_path / f"run-{kind}.npz")
        res = run("--run", str(path), "--seed", "1", "--json")
        assert res.exit_code == 0, res.output
        data = json.loads(res.stdout)
        _same_audit(data, audit_run(canaries.run(), delta=1e-5, seed=1).to_dict())
        assert data["inputs"]["canary_kind"] == kind
        if kw:
            assert data["variant"] == "opacus" and data["canaries"] == 300
            _same_audit(data, canaries.audit(delta=1e-5, seed=1).to_dict())
        else:  # the default: several kinds, the canaries split among them; save() keeps the Dirac ones
            from dpaudit.dpsgd.canaries import DEFAULT_KINDS

            assert canaries.engine.kinds == DEFAULT_KINDS and data["canaries"] == canaries.engine.counts["dirac"]
            with pytest.raises(ValueError, match="noise_multiplier"):
                canaries.save(tmp_path / "other.npz", noise_multiplier=2.0)


def _npz(path, **arrays):
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return path


@pytest.mark.parametrize("case", ["text", "npy", "missing", "meta", "steps", "mask", "participation", "config"])
def test_malformed_run_files_are_bad_input_naming_the_problem(saved, tmp_path, case):
    r, path = saved
    with np.load(path) as z:
        good = {k: z[k] for k in z.files}
    meta = json.loads(str(good["meta"]))
    bad = tmp_path / f"{case}.npz"
    if case == "text":
        bad.write_text("observations,mask\n1,0\n")
        expect = "cannot read it as a .npz archive"
    elif case == "npy":
        np.save(open(bad, "wb"), good["observations"])
        expect = "a single array"
    elif case == "missing":
        _npz(bad, **{k: v for k, v in good.items() if k != "mask"})
        expect = "missing array(s) mask"
    elif case == "meta":
        _npz(bad, **{**good, "meta": np.array("{not json")})
        expect = "'meta' is not a JSON string"
    elif case == "steps":
        _npz(bad, **{**good, "meta": np.array(json.dumps({**meta, "config": {**meta["config"], "steps": 11}}))})
        expect = "'observations' has 10 steps (rows), the config says steps=11"
    elif case == "mask":
        _npz(bad, **{**good, "mask": good["mask"][:-1]})
        expect = "'mask' must have shape (500,), got (499,)"
    elif case == "participation":
        part = good["participation"].copy()
        part[0, np.flatnonzero(~good["mask"])[0]] = True
        _npz(bad, **{**good, "participation": part})
        expect = "'participation' marks an excluded canary"
    else:
        config = {**meta["config"], "noise_multiplier": -1}
        _npz(bad, **{**good, "meta": np.array(json.dumps({**meta, "config": config}))})
        expect = "invalid config: noise_multiplier must be"
    with pytest.raises(ValueError, match="is not a valid saved DP-SGD run"):
        TrainingRun.load(bad)
    res = run("--run", str(bad))
    assert res.exit_code == 2, res.output
    message = " ".join(res.stderr.split())  # Rich wraps the message at 80 columns
    assert message.startswith("error: --run:") and str(bad) in message and expect in message, message


@pytest.mark.parametrize("args,expect", [
    (("--variant", "buggy"), "unknown --variant 'buggy'"),
    (("--variant", "no-clip"), "did you mean no-clipping?"),
    (("--canary-kind", "pixel"), "unknown --canary-kind 'pixel'"),
    (("--epsilon", "0"), "--epsilon must be finite and > 0, got 0.0"),
    (("--epsilon", "-1"), "--epsilon must be finite and > 0, got -1.0"),
    (("--delta", "2"), "--delta must be in (0, 1), got 2.0"),
    (("--beta", "0"), "--beta must be a number in (0, 1), got 0.0"),
    (("--canaries", "1"), "--canaries must be an integer >= 2, got 1"),
    (("--sampling-rate", "1.5"), "--sampling-rate must be in (0, 1], got 1.5"),
    (("--plot", "audit.gif"), "--plot must name a .png, .pdf or .svg file, got 'audit.gif'"),
    (("--run", "no/such/run.npz"), "no such run file: 'no/such/run.npz'"),
])
def test_bad_input_exits_2_naming_the_value(args, expect):
    res = run(*args)
    assert res.exit_code == 2, res.output
    assert expect in " ".join(res.stderr.split()) and not res.stdout


def test_variants_are_listed_with_their_descriptions():
    res = run("--list-variants", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout) == VARIANTS
    table = " ".join(run("--list-variants").stdout.replace("│", " ").split())
    helptext = " ".join(run("--help").stdout.replace("│", " ").split())
    from dpaudit.cli.dpsgd import short_description

    for name, text in VARIANTS.items():
        assert name in table and " ".join(text.split()[:6]) in table
        assert f"{name} ({short_description(text)})" in helptext
    assert short_description(VARIANTS["no-clipping"]) == "per-example gradients are not clipped"


def test_audit_plot_draws_the_scores_and_rejects_another_run(saved, tmp_path):
    r, _ = saved
    a = audit_run(r, delta=1e-5, seed=0)
    assert audit_plot(r, a, score="whitened")[:8] == b"\x89PNG\r\n\x1a\n"
    audit_plot(r, a, tmp_path / "a.svg")
    assert (tmp_path / "a.svg").read_text().lstrip().startswith("<?xml")
    with pytest.raises(ValueError, match="score must be one of"):
        audit_plot(r, a, score="final")
    fewer = dataclasses.replace(r, observations=r.observations[:, :400], mask=r.mask[:400], sampled=r.sampled[:400],
                                participation=r.participation[:, :400],
                                pattern=None if r.pattern is None else r.pattern[:, :400])
    with pytest.raises(ValueError, match="not the audited run"):
        audit_plot(fewer, a)

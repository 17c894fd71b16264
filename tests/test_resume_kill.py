"""A resumed audit is the audit it resumes: with a seed, an audit SIGKILLed at any point and resumed
gives the trials, pairs, outcomes and verdict of the audit that was never interrupted, for every
finder (issue 29, item 6).

The kills are deterministic: the child process runs the audit with ``DPAUDIT_KILL_AT=<point>:<n>``
(:mod:`dpaudit._killpoints`) and sends itself SIGKILL the n-th time it reaches the named point:

==================  ==========================================================================
point               where
==================  ==========================================================================
``search.sample``   an Optuna finder draws (part of) a proposal: the search trial exists, its
                    parameters are not (all) stored yet ("inside a storage write")
``search.asked``    a pair was proposed, the ledger has not recorded it
``ledger.begin``    the ledger trial holds the pair, not yet its index ("inside a storage write")
``trial.sampled``   inside a trial: the mechanism was sampled, the tester has not run
``trial.recorded``  the record is stored, the finder has not been told
``trial.told``      between trials
==================  ==========================================================================

Each case kills a chain of runs of one audit (run 0 killed, its resume killed again, ...), then
resumes it to the end in this process and compares it, trial by trial, with the uninterrupted
audit run in memory without storage.

Run as a script (``python test_resume_kill.py FINDER URL``) it is the child: one run of the audit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dpaudit import PureDP, audit
from dpaudit.audit.targets import make_finder
from dpaudit.datasets import AddRemove

from test_search_support import MeanShiftTester, NoisyMean

REL = AddRemove(min_size=1, max_size=5)
SEED = 5
TRIALS = {"grid": 4, "random": 6, "bayes": 10, "evolution": 10, "auto": 10}


def _known():
    return [REL.pair([[0.0]], [[0.0], [1.0]]), REL.pair([[1.0], [0.5]], [[1.0], [0.5], [0.0]]),
            REL.pair([[0.2]], [[0.2], [0.9]]), REL.pair([[0.5], [0.5]], [[0.5], [0.5], [1.0]])]


def run_audit(search: str, storage=None, *, mechanism=None, trials=None, **kw):
    """One run of the audit of ``search`` (resumed if ``storage`` holds it)."""
    known = _known() if search == "grid" else _known()[:2] if search == "auto" else []
    return audit(
        mechanism or NoisyMean(0.3), PureDP(1.0), make_finder(search, known, REL, SEED), tester=MeanShiftTester(0.2),
        num_samples=64, trials=trials or TRIALS[search], beta=0.1, seed=SEED, exhaustive=True,
        storage=storage, study_name=None if storage is None else "kill", resume=storage is not None, **kw,
    )


def comparable(result) -> dict:
    """The result without what may differ between runs: timings, run numbers, storage."""
    trials = []
    for t in result.trials:
        d = t.to_dict()
        for key in ("sample_seconds", "test_seconds", "run"):
            d.pop(key)
        trials.append(d)
    return {"trials": trials, "violation": result.violation, "strongest_trial": result.strongest_trial,
            "trial_budget": result.trial_budget, "seed": result.seed}


def _child(search: str, url: str, point: str, count: int) -> int:
    src = str(Path(__import__("dpaudit").__file__).resolve().parents[1])
    env = {**os.environ, "DPAUDIT_KILL_AT": f"{point}:{count}",
           "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, __file__, search, url], env=env, capture_output=True, text=True,
                          timeout=300, cwd=Path(__file__).parent)
    assert done.returncode in (0, -signal.SIGKILL), done.stdout + done.stderr
    return done.returncode


COMMON = [("trial.told", 2), ("search.asked", 1), ("ledger.begin", 1), ("trial.sampled", 2), ("trial.recorded", 1)]
OPTUNA = [("trial.told", 2), ("search.sample", 2), ("search.asked", 1), ("ledger.begin", 1), ("trial.sampled", 2),
          ("trial.recorded", 1), ("trial.told", 3), ("search.sample", 1), ("trial.sampled", 1)]
CHAINS = {"grid": [("trial.told", 1), ("ledger.begin", 1), ("trial.sampled", 1), ("trial.recorded", 1)],
          "random": COMMON, "bayes": OPTUNA, "evolution": OPTUNA, "auto": OPTUNA}


def _kill_chain_and_resume(tmp_path, search: str, chain) -> None:
    optuna = pytest.importorskip("optuna")
    url = f"sqlite:///{tmp_path / 'kill.db'}"
    for point, count in chain:  # every kill lands: each run is killed before the audit ends
        assert _child(search, url, point, count) == -signal.SIGKILL, (point, count)
    resumed = run_audit(search, url)
    runs = [r["run"] for r in resumed.study["runs"]]
    assert runs == list(range(len(chain) + 1))
    assert comparable(resumed) == comparable(run_audit(search))
    # no proposal of the search study is left running; the ledger has one record per index
    ledger = optuna.load_study(study_name="kill", storage=url)
    indices = sorted(t.user_attrs["dpaudit.index"] for t in ledger.get_trials() if "dpaudit.record" in t.user_attrs)
    assert indices == list(range(TRIALS[search]))


def test_an_audit_killed_in_the_model_phase_resumes_to_the_uninterrupted_audit(tmp_path):
    """The default search (witness pairs, then TPE) killed four times once TPE's model proposes: between
    trials, inside a proposal, inside a trial, inside the ledger's write of the next trial."""
    _kill_chain_and_resume(tmp_path, "auto", [("trial.told", 7), ("search.sample", 1), ("trial.sampled", 1),
                                              ("ledger.begin", 2)])


@pytest.mark.slow
@pytest.mark.parametrize("search", ["grid", "random", "bayes", "evolution", "auto"])
def test_an_audit_killed_at_every_point_resumes_to_the_uninterrupted_audit(tmp_path, search):
    if search in ("bayes", "evolution"):
        pytest.importorskip("optuna")
    _kill_chain_and_resume(tmp_path, search, CHAINS[search])


class Interrupt(BaseException):
    """Stands in for KeyboardInterrupt (which pytest would treat as a request to stop)."""


class InterruptedMean(NoisyMean):
    """NoisyMean that raises :class:`Interrupt` at its ``at``-th call (inside a trial)."""

    def __init__(self, scale, at):
        super().__init__(scale)
        self.at, self.calls = at, 0

    def sample(self, dataset, num_samples, rng):
        self.calls += 1
        if self.calls == self.at:
            raise Interrupt()
        return super().sample(dataset, num_samples, rng)


@pytest.mark.parametrize("search, trials, k", [("auto", 10, 7), ("evolution", 20, 9), ("random", 6, 3)])
def test_an_audit_interrupted_inside_a_trial_resumes_to_the_uninterrupted_audit(search, trials, k):
    """Ctrl-C inside trial ``k`` fails its proposal in the search study; the resume proposes the same
    parameters again, and NSGA-II counts it in the same generation (20 trials: generation 1 of 8
    holds trial 9, and generation 2 is chosen from it)."""
    optuna = pytest.importorskip("optuna")
    storage = optuna.storages.InMemoryStorage()
    with pytest.raises(Interrupt):
        run_audit(search, storage, mechanism=InterruptedMean(0.3, at=2 * k + 1), trials=trials)
    resumed = run_audit(search, storage, trials=trials)
    assert [t.run for t in resumed.trials] == [0] * k + [1] * (trials - k)
    assert comparable(resumed) == comparable(run_audit(search, trials=trials))


if __name__ == "__main__":  # the child of _child: one run, killed by DPAUDIT_KILL_AT
    run_audit(sys.argv[1], sys.argv[2])

"""Model-based finders on Optuna: Bayesian optimisation (GP or TPE) and evolutionary search (NSGA-II).

Each finder owns an Optuna study whose trials are its proposals: ``ask`` draws a point of the
:class:`~dpaudit.search.space.PairSpace` box from the sampler and decodes it into a neighbouring
pair, ``tell`` reports the objective. Because an Optuna sampler proposes from the study's trial
history and never owns the loop, the same finder serves a sequential audit, batches of parallel
asks (several trials pending at once) and a resumed audit whose history sits in Optuna storage
(:meth:`OptunaFinder.attach`).

Optuna is an optional dependency (``pip install dpaudit[search]``); it is imported when a finder
is first asked.

References
----------
Paper 000 §5 (Gaussian-process bandit over datasets, via Vizier); paper 002 §4.4 and §5 (Vizier
with NSGA-II). Optuna samplers: ``GPSampler`` (GP with log-EI), ``TPESampler`` (Bergstra et al.
2011), ``NSGAIISampler`` (Deb et al. 2002).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..datasets import NeighbouringPair
from .finders import FinderBase
from .space import PairSpace

__all__ = ["BayesFinder", "EvolutionFinder", "OptunaFinder", "optuna_available", "run_seed"]


def optuna_available() -> bool:
    """Whether Optuna can be imported."""
    try:
        import optuna  # noqa: F401
    except ImportError:
        return False
    return True


def _import_optuna():
    try:
        import optuna
    except ImportError:  # pragma: no cover - depends on the environment
        from ..errors import DPAuditError

        raise DPAuditError(
            "the bayes and evolution finders, --storage and --resume need Optuna: pip install 'dpaudit[search]'"
        ) from None
    return optuna


def run_seed(seed: int | None, run: int) -> int | None:
    """A 32-bit sampler seed for run ``run`` of an audit with root seed ``seed`` (None: unseeded).

    Each run (the first and every resume) gets its own stream, so a resumed search does not
    repeat the random proposals of the first run."""
    if seed is None:
        return None
    return int(np.random.SeedSequence([int(seed) % 2**63, 0x5EA2C4, int(run)]).generate_state(1)[0])


class OptunaFinder(FinderBase):
    """Base of the Optuna finders: ask/tell over a :class:`PairSpace` with an Optuna sampler.

    Parameters
    ----------
    relation : AddRemove or Replace
        The neighbouring relation; its domain and size range define the search space.
    seed : int, optional
        Seed of the sampler (combined with the run number, see :func:`run_seed`).
    boundary : float, default 0.25
        Probability mass a uniform draw puts on each face of the domain (see :class:`PairSpace`).
    initial_grid : int, default 2
        The first proposals of a new study are the first ``initial_grid`` points of the
        deterministic grid (:meth:`PairSpace.grid`: the smallest datasets with the largest
        change), enqueued before the sampler's own (random) start-up proposals, so the model
        starts from the extreme datasets where most bugs show (paper 000 §5, "exploitation")
        and explores from there.

    Attributes
    ----------
    space : PairSpace
    history : list of (NeighbouringPair, float)
        Pairs told in this process, with their objective.
    study : optuna.Study
        The study holding the proposals (created in memory on the first ask unless
        :meth:`attach` gave a storage).
    """

    name = "optuna"
    capacity = None
    uses_storage = True

    def __init__(self, relation, *, seed: int | None = None, boundary: float = 0.25, initial_grid: int = 2):
        if int(initial_grid) != initial_grid or initial_grid < 0:
            raise ValueError(f"initial_grid must be a non-negative integer, got {initial_grid!r}")
        self.space = PairSpace(relation, boundary=boundary)
        self.initial_grid = int(initial_grid)
        self.seed = None if seed is None else int(seed)
        self.history: list[tuple[NeighbouringPair, float]] = []
        self._study = None
        self._dists = None
        self._live: dict[int, tuple[NeighbouringPair, object]] = {}
        self._seen: list[float] = []
        self.last_finder = self.name

    # ------------------------------------------------------------------ to override
    def _sampler(self, seed: int | None):
        raise NotImplementedError

    def config(self) -> dict:
        """Hyper-parameters (recorded in reports and compared on resume)."""
        return {
            "finder": self.name,
            "boundary": self.space.boundary,
            "initial_grid": self.initial_grid,
            "relation": self.space.relation.to_dict(),
        }

    # ------------------------------------------------------------------ study
    def attach(self, storage=None, study_name: str | None = None, *, run: int = 0) -> None:
        """Create, or load, the study that holds this finder's proposals.

        Parameters
        ----------
        storage : str or optuna.storages.BaseStorage, optional
            E.g. ``"sqlite:///audit.db"``; None keeps the study in memory.
        study_name : str, optional
            Name of the study in ``storage`` (loaded if it exists).
        run : int, default 0
            Number of this run of the audit (0 for the first, then one more per resume); seeds
            the sampler with :func:`run_seed`.
        """
        optuna = _import_optuna()
        optuna.logging.set_verbosity(max(optuna.logging.get_verbosity(), optuna.logging.WARNING))
        self._study = optuna.create_study(
            storage=storage,
            study_name=study_name,
            sampler=self._sampler(run_seed(self.seed, run)),
            direction="maximize",
            load_if_exists=True,
        )
        self._dists = self.space.optuna_distributions()
        if self.initial_grid and not self._study.get_trials(deepcopy=False):
            import itertools

            for params in itertools.islice(self.space.grid_params(), self.initial_grid):
                self._study.enqueue_trial(params, skip_if_exists=False)

    @property
    def study(self):
        if self._study is None:
            self.attach()
        return self._study

    # ------------------------------------------------------------------ ask / tell
    def ask(self) -> NeighbouringPair:
        """Draw the next point from the sampler and decode it (never exhausted).

        Returns
        -------
        NeighbouringPair
            Valid under the relation by construction (:meth:`PairSpace.decode`).
        """
        study = self.study
        trial = study.ask(fixed_distributions=self._dists)
        pair = self.space.decode(trial.params, description=f"{self.name} #{trial.number}")
        self._live[id(pair)] = (pair, trial.number)
        return pair

    def _finite(self, objective: float) -> float:
        """Optuna fails a trial told NaN or inf; replace them by the worst (or best) value seen."""
        x = float(objective)
        if math.isfinite(x):
            self._seen.append(x)
            return x
        if x == math.inf:
            return (max(self._seen) + 1.0) if self._seen else 1.0
        return (min(self._seen) - 1.0) if self._seen else -1.0

    def tell(self, pair: NeighbouringPair, objective: float) -> None:
        """Report the objective of a pair returned by :meth:`ask` (or :meth:`restore`); other
        pairs are ignored."""
        entry = self._live.pop(id(pair), None)
        if entry is None:
            return
        value = self._finite(objective)
        self.study.tell(entry[1], value)
        self.history.append((pair, float(objective)))

    def abandon(self, pair: NeighbouringPair) -> None:
        """Mark the proposal of ``pair`` as failed (its trial was cancelled and will not be told)."""
        entry = self._live.pop(id(pair), None)
        if entry is not None:
            from optuna.trial import TrialState

            self.study.tell(entry[1], state=TrialState.FAIL)

    def restore(self, history: Sequence[tuple[NeighbouringPair, float | None]]) -> list[NeighbouringPair]:
        """Reconcile the study in storage with the audit's trials after an interruption.

        The study already holds every proposal told before the interruption. Proposals still
        marked running are matched with ``history`` (pairs in the order asked, objective or None):
        a finished trial's objective is told now (the process died between recording the trial
        and telling the sampler); an unfinished one stays open and its pair is returned so the
        re-run can tell it; a proposal the audit never recorded is marked failed.

        Returns
        -------
        list of NeighbouringPair
            Aligned with ``history``.
        """
        from optuna.trial import TrialState

        study = self.study
        running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        # a proposal killed while Optuna was still storing its parameters (one write each) is
        # incomplete: it was never handed to the audit, so it is marked failed
        complete = [t for t in running if set(self._dists) <= set(t.params)]
        for t in running:
            if not set(self._dists) <= set(t.params):
                study.tell(t.number, state=TrialState.FAIL)
        orphans = [(self.space.decode(t.params, description=f"{self.name} #{t.number}"), t.number) for t in complete]
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
            if t.value is not None and math.isfinite(t.value):
                self._seen.append(float(t.value))
        out = []
        for stored, objective in history:
            # A pair this finder proposed is matched by its trial number (in its description) too:
            # small search spaces (the empty dataset, a clipped record) can propose the same
            # datasets twice.
            numbered = stored.description.startswith(f"{self.name} #")
            match = next(
                (k for k, (p, _) in enumerate(orphans)
                 if _same_datasets(p, stored) and (not numbered or p.description == stored.description)),
                None,
            )
            if match is None:
                out.append(stored)
                continue
            pair, number = orphans.pop(match)
            if objective is None:
                self._live[id(stored)] = (stored, number)
            else:
                study.tell(number, self._finite(objective))
            out.append(stored)
        for _, number in orphans:
            study.tell(number, state=TrialState.FAIL)
        return out


def _same_datasets(a: NeighbouringPair, b: NeighbouringPair) -> bool:
    return a.relation == b.relation and np.array_equal(a.d0, b.d0) and np.array_equal(a.d1, b.d1)


class BayesFinder(OptunaFinder):
    """Bayesian optimisation of the objective over datasets (paper 000 §5, GP bandit).

    Parameters
    ----------
    relation : AddRemove or Replace
    method : {"gp", "tpe"}, default "gp"
        ``"gp"``: Optuna's ``GPSampler`` (Gaussian process, Matérn-5/2 kernel, log expected
        improvement; the objective is treated as noisy). ``"tpe"``: ``TPESampler``
        (multivariate, constant liar for pending trials).
    n_startup_trials : int, default 6
        Finished trials before the model is used: the ``initial_grid`` grid points, then random
        proposals (uniform over the encoded box, so about half the coordinates on a face).
        Optuna's default of 10 would spend a fifth of a 50-trial budget on random points.
    seed, boundary, initial_grid
        As :class:`OptunaFinder`.
    """

    name = "bayes"

    def __init__(self, relation, *, method: str = "gp", n_startup_trials: int = 6, seed: int | None = None,
                 boundary: float = 0.25, initial_grid: int = 2):
        if method not in ("gp", "tpe"):
            raise ValueError(f"method must be 'gp' or 'tpe', got {method!r}")
        if int(n_startup_trials) != n_startup_trials or n_startup_trials < 1:
            raise ValueError(f"n_startup_trials must be a positive integer, got {n_startup_trials!r}")
        super().__init__(relation, seed=seed, boundary=boundary, initial_grid=initial_grid)
        self.method = method
        self.n_startup_trials = int(n_startup_trials)

    def _sampler(self, seed):
        optuna = _import_optuna()
        if self.method == "gp":
            return optuna.samplers.GPSampler(
                seed=seed, n_startup_trials=self.n_startup_trials, deterministic_objective=False,
                warn_independent_sampling=False,
            )
        return optuna.samplers.TPESampler(
            seed=seed, n_startup_trials=self.n_startup_trials, multivariate=True, constant_liar=True,
        )

    def config(self) -> dict:
        return {**super().config(), "method": self.method, "n_startup_trials": self.n_startup_trials}


class EvolutionFinder(OptunaFinder):
    """Evolutionary search over datasets with Optuna's NSGA-II (paper 002 §5 used NSGA-II via Vizier).

    Parameters
    ----------
    relation : AddRemove or Replace
    population_size : int, default 8
        Individuals per generation; the first generation is the ``initial_grid`` grid points and
        random ones. Optuna's default of 50 would spend a whole 50-trial budget on the first
        generation.
    seed, boundary, initial_grid
        As :class:`OptunaFinder`.
    """

    name = "evolution"

    def __init__(self, relation, *, population_size: int = 8, seed: int | None = None, boundary: float = 0.25,
                 initial_grid: int = 2):
        if int(population_size) != population_size or population_size < 2:
            raise ValueError(f"population_size must be an integer >= 2, got {population_size!r}")
        super().__init__(relation, seed=seed, boundary=boundary, initial_grid=initial_grid)
        self.population_size = int(population_size)

    def _sampler(self, seed):
        optuna = _import_optuna()
        return optuna.samplers.NSGAIISampler(population_size=self.population_size, seed=seed)

    def config(self) -> dict:
        return {**super().config(), "population_size": self.population_size}

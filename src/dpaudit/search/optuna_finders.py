"""Model-based finders on Optuna: Bayesian optimisation (GP or TPE) and evolutionary search (NSGA-II).

Each finder owns an Optuna study whose trials are its proposals: ``ask`` draws a point of the
:class:`~dpaudit.search.space.PairSpace` box from the sampler and decodes it into a neighbouring
pair, ``tell`` reports the objective. Because an Optuna sampler proposes from the study's trial
history and never owns the loop, the same finder serves a sequential audit, batches of parallel
asks (several trials pending at once) and a resumed audit whose history sits in Optuna storage
(:meth:`OptunaFinder.attach`).

Reproducible resumption: with a seed, the sampler's random state is set afresh before each draw
from ``(seed, proposal number, parameter)`` (:func:`proposal_seed`), where the proposal number
counts the proposals that stand (failed ones, e.g. of a killed process, do not count). A proposal
is then a function of the seed, its number and the finished history only, never of how many draws
this process made before, so an audit killed at any point and resumed proposes what the
uninterrupted audit proposes.

Optuna is an optional dependency (``pip install dpaudit[search]``); it is imported when a finder
is first asked.

References
----------
Paper 000 §5 (Gaussian-process bandit over datasets, via Vizier); paper 002 §4.4 and §5 (Vizier
with NSGA-II). Optuna samplers: ``GPSampler`` (GP with log-EI), ``TPESampler`` (Bergstra et al.
2011), ``NSGAIISampler`` (Deb et al. 2002).
"""

from __future__ import annotations

import itertools
import math
import zlib
from typing import Sequence

import numpy as np

from .._killpoints import kill_point
from ..datasets import NeighbouringPair
from .finders import FinderBase
from .space import PairSpace

__all__ = ["BayesFinder", "EvolutionFinder", "OptunaFinder", "proposal_source", "optuna_available", "proposal_seed"]


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


def proposal_seed(seed: int, position: int, name: str, stream: int = 0) -> int:
    """The 32-bit seed of one random draw of an Optuna finder's proposal.

    Parameters
    ----------
    seed : int
        The finder's seed.
    position : int
        Number of the proposal (0 for the first), counting only proposals that stand
        (:func:`_position`).
    name : str
        What is drawn: ``"relative"`` (the sampler's joint draw) or a parameter's name.
    stream : int, default 0
        Which of the sampler's random states (a sampler may hold several).

    Returns
    -------
    int
        In ``[0, 2**32)``; the same in every process and every run of the audit.
    """
    key = [int(seed) % 2**63, 0x5EA2C4, int(position), zlib.crc32(name.encode()), int(stream)]
    return int(np.random.SeedSequence(key).generate_state(1)[0])


def _standing_states():
    from optuna.trial import TrialState

    return (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)


def _position(study, number: int | None = None) -> int:
    """Number of standing proposals (complete, pruned or running, not failed or waiting) before
    trial ``number`` of ``study`` (all of them if None): the proposal number of that trial."""
    trials = study.get_trials(deepcopy=False, states=_standing_states())
    return sum(1 for t in trials if number is None or t.number < number)


_WRAPPER_BASE = None


def _wrapper_base():
    """The base class of this module's samplers that wrap other Optuna samplers (built on first use:
    Optuna is optional). ``self._wrapped`` holds the wrapped samplers, the one that learns from
    trials first: the trial hooks go to that one, ``reseed_rng`` to each."""
    global _WRAPPER_BASE
    if _WRAPPER_BASE is None:
        optuna = _import_optuna()

        class WrappingSampler(optuna.samplers.BaseSampler):
            _wrapped: tuple = ()

            def before_trial(self, study, trial):
                self._wrapped[0].before_trial(study, trial)

            def after_trial(self, study, trial, state, values):
                self._wrapped[0].after_trial(study, trial, state, values)

            def reseed_rng(self):
                for sampler in self._wrapped:
                    sampler.reseed_rng()

        _WRAPPER_BASE = WrappingSampler
    return _WRAPPER_BASE


_PER_PROPOSAL_SAMPLER = None


def _per_proposal_sampler(inner, seed: int):
    """``inner`` (an Optuna sampler) with its random states seeded by :func:`proposal_seed`
    before every draw, and without the in-process caches that would make a draw depend on the
    draws before it (the GP sampler's warm start of its kernel fit)."""
    global _PER_PROPOSAL_SAMPLER
    if _PER_PROPOSAL_SAMPLER is None:
        optuna = _import_optuna()
        from optuna.samplers._lazy_random_state import LazyRandomState

        class PerProposalSeeded(_wrapper_base()):
            def __init__(self, inner, seed):
                self._inner = inner
                self._wrapped = (inner,)
                self._seed = int(seed)
                self._positions: dict[int, int] = {}
                self._states = []
                self._samplers = [inner]  # inner and the samplers it holds (a mixed sampler's two)
                self._collect(inner, set())
                if not self._states:  # pragma: no cover - an Optuna whose samplers hold no random state
                    raise RuntimeError(f"found no random state in {type(inner).__name__}")

            def _collect(self, obj, seen):
                for key in sorted(vars(obj)):
                    value = vars(obj)[key]
                    if isinstance(value, LazyRandomState) and id(value) not in seen:
                        seen.add(id(value))
                        self._states.append(value)
                    elif isinstance(value, optuna.samplers.BaseSampler):
                        self._samplers.append(value)
                        self._collect(value, seen)

            def _reseed(self, study, trial, name):
                kill_point("search.sample")
                if trial.number not in self._positions:
                    self._positions[trial.number] = _position(study, trial.number)
                position = self._positions[trial.number]
                for j, state in enumerate(self._states):
                    state.rng.seed(proposal_seed(self._seed, position, name, j))
                for sampler in self._samplers:
                    for cache in ("_gprs_cache_list", "_constraints_gprs_cache_list"):
                        if getattr(sampler, cache, None) is not None:
                            setattr(sampler, cache, None)

            def infer_relative_search_space(self, study, trial):
                return self._inner.infer_relative_search_space(study, trial)

            def sample_relative(self, study, trial, search_space):
                self._reseed(study, trial, "relative")
                return self._inner.sample_relative(study, trial, search_space)

            def sample_independent(self, study, trial, param_name, param_distribution):
                self._reseed(study, trial, param_name)
                return self._inner.sample_independent(study, trial, param_name, param_distribution)

        _PER_PROPOSAL_SAMPLER = PerProposalSeeded
    return _PER_PROPOSAL_SAMPLER(inner, seed)


def proposal_source(position: int, initial_grid: int, random_fraction: float) -> str:
    """Where proposal ``position`` of an Optuna finder comes from: ``"grid"`` (a point of the
    deterministic grid, :meth:`PairSpace.grid_params`), ``"random"`` (uniform over the box) or
    ``"model"`` (the sampler).

    The schedule is fixed in advance, so it is the same in every process and after a resume.
    Without random proposals (``random_fraction == 0``) the ``initial_grid`` grid points come first,
    then the model. With ``random_fraction = f > 0`` (:class:`BayesFinder`) the grid points
    alternate with random proposals, random first (random, grid, random, grid, ...), and after
    them proposal ``2 initial_grid + j`` is random when ``ceil((j + 1) f) > ceil(j f)``, i.e.
    exactly ``ceil(k f)`` of the next ``k`` proposals are random, the first of them among them
    (with ``f = 1/2``: random, model, random, model, ...). So the first proposal is drawn as random
    search draws it, and every other one after it at ``f = 1/2``.

    Parameters
    ----------
    position : int
        Number of the proposal (0 for the first), as :func:`proposal_seed` counts it.
    initial_grid : int
        Grid points proposed.
    random_fraction : float
        In ``[0, 1]``.

    Returns
    -------
    {"grid", "random", "model"}
    """
    position, g = int(position), int(initial_grid)
    if random_fraction <= 0:
        return "grid" if position < g else "model"
    if position < 2 * g:
        return "grid" if position % 2 else "random"
    j = position - 2 * g
    random = math.ceil((j + 1) * random_fraction - 1e-12) > math.ceil(j * random_fraction - 1e-12)
    return "random" if random else "model"


def _grid_index(position: int, initial_grid: int, random_fraction: float) -> int | None:
    """Index in the grid of proposal ``position`` when :func:`proposal_source` says ``"grid"``."""
    if proposal_source(position, initial_grid, random_fraction) != "grid":
        return None
    return int(position) // 2 if random_fraction > 0 else int(position)


_MIXED_SAMPLER = None


def _mixed_sampler(model, random, initial_grid: int, random_fraction: float):
    """An Optuna sampler that draws the proposals :func:`proposal_source` marks random from ``random``
    (a ``RandomSampler``: uniform over the box) and the others from ``model``. Every finished trial,
    random or not, is in the study, so the model is fitted on all of them."""
    global _MIXED_SAMPLER
    if _MIXED_SAMPLER is None:
        class MixedSampler(_wrapper_base()):
            def __init__(self, model, random, initial_grid, random_fraction):
                self._model = model
                self._random = random
                self._wrapped = (model, random)
                self._initial_grid = int(initial_grid)
                self._fraction = float(random_fraction)
                self._random_trials: dict[int, bool] = {}

            def _is_random(self, study, trial) -> bool:
                if trial.number not in self._random_trials:
                    self._random_trials[trial.number] = proposal_source(
                        _position(study, trial.number), self._initial_grid, self._fraction) == "random"
                return self._random_trials[trial.number]

            def infer_relative_search_space(self, study, trial):
                if self._is_random(study, trial):
                    return {}
                return self._model.infer_relative_search_space(study, trial)

            def sample_relative(self, study, trial, search_space):
                if self._is_random(study, trial) or not search_space:
                    return {}
                return self._model.sample_relative(study, trial, search_space)

            def sample_independent(self, study, trial, param_name, param_distribution):
                inner = self._random if self._is_random(study, trial) else self._model
                return inner.sample_independent(study, trial, param_name, param_distribution)

        _MIXED_SAMPLER = MixedSampler
    return _MIXED_SAMPLER(model, random, initial_grid, random_fraction)


class OptunaFinder(FinderBase):
    """Base of the Optuna finders: ask/tell over a :class:`PairSpace` with an Optuna sampler.

    Parameters
    ----------
    relation : AddRemove or Replace
        The neighbouring relation; its domain and size range define the search space.
    seed : int, optional
        Seed of the proposals: each draw is seeded from the seed, the proposal's number and the
        parameter (:func:`proposal_seed`), so the same seed gives the same proposals whether or
        not the audit was interrupted and resumed. None: unseeded (not reproducible).
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

    def _random_fraction(self) -> float:
        """Fraction of uniformly random proposals mixed in (:func:`proposal_source`); 0 here."""
        return 0.0

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
            Number of this run of the audit (0 for the first, then one more per resume). The
            proposals do not depend on it: a resumed audit proposes what the uninterrupted one
            would have.
        """
        optuna = _import_optuna()
        optuna.logging.set_verbosity(max(optuna.logging.get_verbosity(), optuna.logging.WARNING))
        sampler = self._sampler(self.seed)
        self._study = optuna.create_study(
            storage=storage,
            study_name=study_name,
            sampler=sampler if self.seed is None else _per_proposal_sampler(sampler, self.seed),
            direction="maximize",
            load_if_exists=True,
        )
        self._dists = self.space.optuna_distributions()

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
        from optuna.trial import TrialState

        study = self.study
        index = _grid_index(_position(study), self.initial_grid, self._random_fraction())
        if index is not None and not study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
            # grid points (the first proposals, or every other one of them with random proposals
            # mixed in) are enqueued one at a time just before they are asked (a grid point
            # enqueued by a killed process is still waiting, and asked now)
            params = next(itertools.islice(self.space.grid_params(), index, None), None)
            if params is not None:
                study.enqueue_trial(params, skip_if_exists=False)
        trial = study.ask(fixed_distributions=self._dists)
        pair = self.space.decode(trial.params, description=f"{self.name} #{_position(study, trial.number)}")
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
        re-run can tell it; a proposal the audit never recorded, or whose parameters were only
        partly stored, is marked failed (its number is then proposed again, and with a seed gives
        the same pair). An unfinished trial whose proposal was marked failed when the audit
        stopped (Ctrl-C, a failing trial) is proposed again with the same parameters.

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
        for t in running:
            if not set(self._dists) <= set(t.params):
                study.tell(t.number, state=TrialState.FAIL)
        trials = study.get_trials(deepcopy=False)
        standing = [t.number for t in trials if t.state in _standing_states()]

        def decoded(t):
            position = sum(1 for n in standing if n < t.number)
            return self.space.decode(t.params, description=f"{self.name} #{position}")

        complete = [t for t in trials if set(self._dists) <= set(t.params)]
        orphans = [(decoded(t), t.number) for t in complete if t.state == TrialState.RUNNING]
        failed = [(decoded(t), t) for t in complete if t.state == TrialState.FAIL]
        for t in trials:
            if t.state == TrialState.COMPLETE and t.value is not None and math.isfinite(t.value):
                self._seen.append(float(t.value))
        out, again = [], []
        for stored, objective in history:
            match = _match(orphans, stored, self.name)
            if match is None:
                if objective is None:
                    again.append(stored)
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
        for stored in again:
            match = _match(failed, stored, self.name)
            if match is not None:
                _, old = failed.pop(match)
                study.enqueue_trial(dict(old.params), skip_if_exists=False)
                trial = study.ask(fixed_distributions=self._dists)
                trial.relative_params  # noqa: B018 - the sampler's bookkeeping (NSGA-II's generation) as at the first ask
                self._live[id(stored)] = (stored, trial.number)
        return out


def _match(candidates, stored: NeighbouringPair, name: str) -> int | None:
    """Index in ``candidates`` (pairs first) of the proposal of ``stored``, or None.

    A pair this finder proposed is matched by its proposal number (in its description) too: small
    search spaces (the empty dataset, a clipped record) can propose the same datasets twice."""
    numbered = stored.description.startswith(f"{name} #")
    return next(
        (k for k, (p, _) in enumerate(candidates)
         if _same_datasets(p, stored) and (not numbered or p.description == stored.description)),
        None,
    )


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
    random_fraction : float, default 0
        Fraction of the proposals after the grid points that are drawn uniformly at random instead
        of from the model, on a schedule fixed in advance (:func:`proposal_source`): when it is
        positive the grid points alternate with random proposals, random first, and after them
        ``ceil(k f)`` of every first ``k`` proposals are random (with 1/2: random, model, random,
        ...). The model is fitted on every finished trial, random ones included. A model fitted
        on clean early trials can keep proposing near them and miss a bug that only some region
        of the space shows (the harder-bugs table of ``benchmarks/results/search.md``); with
        ``f = 1/2`` every other proposal, the first included, is random, so the search finds what
        random search finds in ``r`` proposals within ``2r - 1`` trials. In ``[0, 1]``.
    seed, boundary, initial_grid
        As :class:`OptunaFinder`.

    Raises
    ------
    ValueError
        For an unknown ``method``, a ``n_startup_trials`` below 1 or a ``random_fraction`` outside
        ``[0, 1]``.
    """

    name = "bayes"

    def __init__(self, relation, *, method: str = "gp", n_startup_trials: int = 6, random_fraction: float = 0.0,
                 seed: int | None = None, boundary: float = 0.25, initial_grid: int = 2):
        if method not in ("gp", "tpe"):
            raise ValueError(f"method must be 'gp' or 'tpe', got {method!r}")
        if int(n_startup_trials) != n_startup_trials or n_startup_trials < 1:
            raise ValueError(f"n_startup_trials must be a positive integer, got {n_startup_trials!r}")
        if not (0.0 <= float(random_fraction) <= 1.0):
            raise ValueError(f"random_fraction must be in [0, 1], got {random_fraction!r}")
        super().__init__(relation, seed=seed, boundary=boundary, initial_grid=initial_grid)
        self.method = method
        self.n_startup_trials = int(n_startup_trials)
        self.random_fraction = float(random_fraction)

    def _sampler(self, seed):
        optuna = _import_optuna()
        if self.method == "gp":
            model = optuna.samplers.GPSampler(
                seed=seed, n_startup_trials=self.n_startup_trials, deterministic_objective=False,
                warn_independent_sampling=False,
            )
        else:
            model = optuna.samplers.TPESampler(
                seed=seed, n_startup_trials=self.n_startup_trials, multivariate=True, constant_liar=True,
            )
        if self.random_fraction <= 0:
            return model
        return _mixed_sampler(model, optuna.samplers.RandomSampler(seed=seed), self.initial_grid,
                              self.random_fraction)

    def _random_fraction(self) -> float:
        return self.random_fraction

    def config(self) -> dict:
        cfg = {**super().config(), "method": self.method, "n_startup_trials": self.n_startup_trials}
        if self.random_fraction > 0:  # absent when 0, so audits stored before the option resume
            cfg["random_fraction"] = self.random_fraction
        return cfg


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

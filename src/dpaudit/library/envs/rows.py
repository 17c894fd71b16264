"""The table rows audited through library environments, as data.

Each :class:`EnvRow` is one public function of a library in one configuration, the guarantee the
library documents for it (epsilon, delta, neighbouring relation, domain, with the documentation's
words), the environment that runs it (:data:`dpaudit.library.envs.ENVS`), the worker-side target
(``dpaudit/library/targets/<module>.py``) and its arguments, and an audit budget. The registry of
``benchmarks/library_audit.py`` (or its successor, ``dpaudit library``) can register them: every
field it needs is here, and :meth:`EnvRow.mechanism` gives the audited mechanism with its hints.
``dpaudit test dpaudit.library.envs.catalogue:<attr>`` audits a row from the command line
(:mod:`dpaudit.library.envs.catalogue`, one attribute per row, :attr:`EnvRow.attr`).

Claims: where the library has an accountant of its own, the claim is what that accountant says
for the configuration (SmartNoise SQL's ``PrivateReader.get_privacy_cost``, TensorFlow Privacy's
``compute_dp_sgd_privacy_statement``, jax_privacy's accountant); otherwise the parameters the
function is called with, under the relation its documentation names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...datasets import Column

__all__ = ["ADVERSARIAL_SAME_CAUSE", "CAUSES", "EnvRow", "ROWS", "row"]


@dataclass(frozen=True)
class EnvRow:
    """One row: a library function in one configuration, audited in the library's environment.

    Attributes
    ----------
    library : str
        The library as the table names it (``"SmartNoise SQL"``).
    key : str
        ``library.short``, unique (``"smartnoise-sql.count"``): the name a runner's ``--entries`` takes.
    name : str
        The library's name for what is audited (``"PrivateReader.execute (COUNT(*))"``).
    env : str
        Key of :data:`dpaudit.library.envs.ENVS`.
    target : str
        Worker-side ``module:factory`` (a module of ``dpaudit/library/targets``).
    kwargs : tuple of (str, value)
        JSON arguments of the factory (a tuple of pairs, so the row stays hashable).
    configuration : str
        What is run, in words.
    epsilon, delta : float
        The claim (nats; delta 0 for pure DP).
    alpha : float or None
        For a Rényi claim: (alpha, epsilon)-RDP (``dpaudit test --alpha``); delta is then 0.
    neighbouring : str
        ``"add-remove"`` or ``"replace"``.
    lower, upper : tuple of float
        The record domain's corners (one entry per record coordinate).
    min_size, max_size : int
        Dataset sizes of the relation.
    witness_pairs : tuple
        Pairs ``(D0, D1)`` (nested lists of records) tried first.
    documented : str
        The guarantee in the library's own words, with where they are.
    relation_note : str
        ``"documented: ..."`` or ``"inferred: ..."``: where the relation comes from.
    samples, trials, seed : int
        The audit budget (``dpaudit test --samples --trials --seed``).
    notes : str
        What the target does beyond calling the library (a cached deterministic parameter search,
        an RNG that cannot be seeded), stated with the row.
    accepts_kinds : tuple of str or None
        Adversarial kinds the API accepts (:data:`dpaudit.datasets.ADVERSARIAL_KINDS`); None: all.
    space : tuple of (str, value), optional
        The input space the search explores besides the values (issue 42): keyword arguments of
        :class:`~dpaudit.datasets.InputSpace` other than ``build`` (e.g. ``("bounds", "bounds")``,
        ``("default_bounds", (0.0, 1.0))``, ``("bound_kinds", ("float", "int"))``, ``("note", ...)``),
        its ``build(**config)`` being the row's target with ``config`` merged into ``kwargs`` (JSON
        values: the factory must take them). Default: the values only (the ``specials`` family).
    search : tuple of (str, value), optional
        Settings of the input-space search for a row whose calls are slow (keyword arguments of
        :func:`dpaudit.search.input_space.explore`: ``samples``, ``certify_samples``, ``pair_timeout``,
        ``max_seconds``), set on the mechanism as ``search_options``; stated with the row's record.
        Default: the search's own.
    """

    library: str
    key: str
    name: str
    env: str
    target: str
    configuration: str
    epsilon: float
    delta: float = 0.0
    alpha: float | None = None
    kwargs: tuple = ()
    neighbouring: str = "add-remove"
    lower: tuple = (0.0,)
    upper: tuple = (1.0,)
    min_size: int = 0
    max_size: int = 10
    witness_pairs: tuple = ()
    documented: str = ""
    relation_note: str = ""
    samples: int = 2000
    trials: int = 2
    seed: int = 1
    notes: str = ""
    accepts_kinds: tuple | None = None
    space: tuple = ()
    search: tuple = ()

    @property
    def attr(self) -> str:
        """The attribute of :mod:`dpaudit.library.envs.catalogue` holding this row's mechanism."""
        return self.key.replace("-", "_").replace(".", "__")

    @property
    def catalogue_target(self) -> str:
        """What ``dpaudit test`` loads: ``dpaudit.library.envs.catalogue:<attr>``."""
        return f"dpaudit.library.envs.catalogue:{self.attr}"

    def relation(self):
        """The neighbouring relation object (``AddRemove`` or ``Replace``) with the row's domain and sizes."""
        from ...datasets import AddRemove, Domain, Replace

        cls = AddRemove if self.neighbouring == "add-remove" else Replace
        return cls(Domain(tuple(self.lower), tuple(self.upper)), min_size=self.min_size, max_size=self.max_size)

    def claim_text(self) -> str:
        """E.g. ``"(1, 1.5e-05)-DP, add-remove"``."""
        if self.alpha:
            return f"({self.alpha:g}, {self.epsilon:g})-RDP, {self.neighbouring}"
        claim = f"({self.epsilon:g}, {self.delta:g})-DP" if self.delta else f"{self.epsilon:g}-DP"
        return f"{claim}, {self.neighbouring}"

    def command(self, samples: int | None = None, seed: int | None = None) -> list[str]:
        """The ``dpaudit test`` arguments that audit this row."""
        cmd = ["dpaudit", "test", self.catalogue_target, "--epsilon", f"{self.epsilon:.17g}"]
        if self.delta:
            cmd += ["--delta", f"{self.delta:.17g}"]
        if self.alpha:
            cmd += ["--alpha", f"{self.alpha:g}"]
        return cmd + ["--tester", "all", "--samples", str(samples or self.samples), "--trials", str(self.trials),
                      "--seed", str(self.seed if seed is None else seed)]

    def mechanism(self):
        """The row's :class:`~dpaudit.library.envs.EnvMechanism` with its audit hints
        (``neighbouring``, ``witness_pairs``, ``accepts``)."""
        from ...datasets import ADVERSARIAL_KINDS, AcceptedInputs
        from . import get_env

        mech = get_env(self.env).mechanism(self.target, name=self.key, **dict(self.kwargs))
        mech.neighbouring = self.relation()
        mech.witness_pairs = tuple(self.witness_pairs)
        kinds = ADVERSARIAL_KINDS if self.accepts_kinds is None else tuple(self.accepts_kinds)
        space = None
        if self.space:
            from ...datasets import InputSpace

            def build(**config):  # the row's target under a configuration of its public parameters
                return get_env(self.env).mechanism(self.target, name=self.key, **{**dict(self.kwargs), **config})

            space = InputSpace(build=build, **dict(self.space))
        mech.accepts = AcceptedInputs(kinds=kinds, note=f"{self.library} {self.name}: {self.configuration}",
                                      space=space)
        if self.search:
            mech.search_options = dict(self.search)
        mech.row = self
        return mech


def zcdp_epsilon(rho: float, delta: float) -> float:
    """The epsilon at which rho-zCDP implies (epsilon, delta)-DP, rounded up to 4 decimals.

    Canonne, Kamath, Steinke (2020), "The Discrete Gaussian for Differential Privacy", Prop. 12:
    rho-zCDP implies (epsilon, delta)-DP for
    ``delta = inf_{alpha > 1} exp((alpha - 1)(alpha rho - epsilon)) / (alpha - 1) * (1 - 1/alpha)^alpha``.
    The infimum is taken over 20,000 log-spaced alphas in (1.0001, 1000) (a larger value than the
    infimum, so the epsilon found errs high: the claim is never stricter than the library's), and
    epsilon is the smallest value on a bisection of 60 steps whose delta is at most ``delta``.

    Parameters
    ----------
    rho : float
        ``> 0``.
    delta : float
        In (0, 1).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``rho <= 0`` or ``delta`` is not in (0, 1).
    """
    import math

    import numpy as np

    if not rho > 0 or not 0 < delta < 1:
        raise ValueError(f"need rho > 0 and 0 < delta < 1, got rho={rho!r}, delta={delta!r}")
    alphas = np.exp(np.linspace(math.log(1.0001), math.log(1000.0), 20000))

    def log_delta(eps):
        return float(np.min((alphas - 1) * (alphas * rho - eps) - np.log(alphas - 1) + alphas * np.log1p(-1 / alphas)))

    lo, hi = 0.0, rho + 2 * math.sqrt(rho * math.log(1 / delta)) + 1  # Bun-Steinke's epsilon is above the answer
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if log_delta(mid) > math.log(delta) else (lo, mid)
    return math.ceil(hi * 1e4) / 1e4


def row(**kw) -> EnvRow:
    """An :class:`EnvRow` from keyword arguments, ``kwargs`` given as a dict."""
    kwargs = kw.pop("kwargs", {})
    return EnvRow(kwargs=tuple(sorted(kwargs.items())), **kw)


# ---------------------------------------------------------------------------------------------
# SmartNoise SQL 1.0.10
# ---------------------------------------------------------------------------------------------
_SNSQL_PRIVACY = ("snsql/sql/privacy.py, Privacy: 'epsilon: The epsilon value for each statistic returned by the "
                  "private SQL connection. delta: The delta value for each query processed by the private SQL "
                  "connection.'; PrivateReader.get_privacy_cost: 'Estimates the epsilon and delta cost for running "
                  "the given query' (the claim is its answer for the row's query)")
_SNSQL_RELATION = ("documented: metadata row_privacy: True ('each row is a single individual'); snsql calibrates each "
                   "mechanism with OpenDP's symmetric_distance at d_in = max_ids = 1 (snsql/sql/_mechanisms/laplace.py), "
                   "i.e. add/remove of one row")
_SNSQL_NOTES = ("snsql's noise comes from OpenDP 0.14's samplers (operating-system randomness, not seedable); the Laplace "
                "scale's binary search (a deterministic function of epsilon, bounds and max_ids, 80% of a call's time) "
                "is memoised per configuration in the worker: the rewriting, the exact aggregate, the noise and the "
                "censoring run on every call as in PrivateReader.execute")

_SNSQL_SIZES = dict(min_size=0, max_size=12)
_SNSQL_PAIRS = (([[0.5]] * 8, [[0.5]] * 9), ([[0.0]] * 11, [[0.0]] * 12), ([], [[1.0]]))

ROWS: list[EnvRow] = [
    row(library="SmartNoise SQL", key="smartnoise-sql.count", name="PrivateReader.execute (SELECT COUNT(*))",
        env="smartnoise-sql", target="smartnoise_sql:count", kwargs={"epsilon": 1.0, "delta": 1e-3},
        configuration="snsql.from_df(df, Privacy(epsilon=1, delta=1e-3), metadata row_privacy, x float in [0, 1]); "
                      "execute('SELECT COUNT(*) AS n FROM t.t'); releases (present, n): censor_dims (snsql's "
                      "default) drops the row when the noisy count is below its threshold",
        epsilon=1.0, delta=0.001499499999999987, documented=_SNSQL_PRIVACY + "; get_privacy_cost = (1, 0.001499499999999987)",
        relation_note=_SNSQL_RELATION, witness_pairs=_SNSQL_PAIRS, notes=_SNSQL_NOTES, **_SNSQL_SIZES),
    row(library="SmartNoise SQL", key="smartnoise-sql.sum", name="PrivateReader.execute (SELECT SUM(x))",
        env="smartnoise-sql", target="smartnoise_sql:sum_x", kwargs={"epsilon": 1.0, "delta": 1e-3},
        configuration="as the COUNT row, execute('SELECT SUM(x) AS s FROM t.t') with x in [0, 1] (metadata lower 0, "
                      "upper 1); snsql adds a noisy key count for censoring; releases (present, s)",
        epsilon=2.0, delta=0.001499499999999987, documented=_SNSQL_PRIVACY + "; get_privacy_cost = (2, 0.001499499999999987): the SUM and "
                                                                   "its key count",
        relation_note=_SNSQL_RELATION, witness_pairs=_SNSQL_PAIRS, notes=_SNSQL_NOTES, **_SNSQL_SIZES),
    row(library="SmartNoise SQL", key="smartnoise-sql.avg", name="PrivateReader.execute (SELECT AVG(x))",
        env="smartnoise-sql", target="smartnoise_sql:avg_x", kwargs={"epsilon": 1.0, "delta": 1e-3},
        configuration="as the COUNT row, execute('SELECT AVG(x) AS a FROM t.t'): a noisy SUM over a noisy COUNT, "
                      "and the key count; releases (present, a)",
        epsilon=3.0, delta=0.001499499999999987, documented=_SNSQL_PRIVACY + "; get_privacy_cost = (3, 0.001499499999999987)",
        relation_note=_SNSQL_RELATION, witness_pairs=_SNSQL_PAIRS, notes=_SNSQL_NOTES, **_SNSQL_SIZES),
    row(library="SmartNoise SQL", key="smartnoise-sql.count_group", name="PrivateReader.execute (GROUP BY, censor_dims)",
        env="smartnoise-sql", target="smartnoise_sql:count_group", kwargs={"epsilon": 1.0, "delta": 1e-3},
        configuration="execute('SELECT g, COUNT(*) AS n FROM t.t GROUP BY g'), g the record's third of [0, 1] "
                      "(int column, bounds 0..2), censor_dims on (private group selection by threshold); releases "
                      "(present, n) for g = 0, 1, 2",
        epsilon=1.0, delta=0.001499499999999987, documented=_SNSQL_PRIVACY + "; get_privacy_cost = (1, 0.001499499999999987)",
        relation_note=_SNSQL_RELATION, notes=_SNSQL_NOTES,
        witness_pairs=(([[0.5]] * 7, [[0.5]] * 8), ([], [[0.9]]), ([[0.1]] * 10, [[0.1]] * 10 + [[0.9]])),
        **_SNSQL_SIZES),
    row(library="SmartNoise SQL", key="smartnoise-sql.count_persons",
        name="PrivateReader.execute (SELECT COUNT(*), private_id)", env="smartnoise-sql",
        target="smartnoise_sql:count_persons", kwargs={"epsilon": 1.0, "delta": 1e-3},
        configuration="person-level data: metadata row_privacy False, pid a float column with private_id True, "
                      "max_ids 1, censor_dims False; each record is a person (pid, x_1, x_2, x_3) whose 3 rows carry "
                      "its pid (a missing pid is NaN, NULL in SQLite); execute('SELECT COUNT(*) AS n FROM t.t'); "
                      "releases (present, n)",
        epsilon=1.0, delta=0.0004999999999999449,
        documented=_SNSQL_PRIVACY + "; get_privacy_cost = (1, 0.0004999999999999449)",
        relation_note=("documented: metadata private_id marks the column that identifies an individual and max_ids "
                       "bounds the rows one individual contributes (snsql reservoir-samples max_ids rows per id); "
                       "add/remove of one person with all their rows. A person whose pid is missing: their rows as "
                       "one unit (SQL groups NULL keys together)"),
        lower=(0.0, 0.0, 0.0, 0.0), upper=(1e6, 1.0, 1.0, 1.0), min_size=1, max_size=8,
        witness_pairs=(([[0.0, 0.5, 0.5, 0.5]], [[0.0, 0.5, 0.5, 0.5], [1.0, 0.5, 0.5, 0.5]]),
                       ([[float(i), 0.5, 0.5, 0.5] for i in range(5)],
                        [[float(i), 0.5, 0.5, 0.5] for i in range(6)])),
        space=(("columns", (Column("unit", 0.0, 1e6, integer=True, name="pid"),) + (Column("value", 0.0, 1.0),) * 3),
               ("max_size", 7),
               ("note", "the person's id is per-record data (the private_id column): NaN ids reach SQLite as NULL")),
        samples=1000, trials=1,
        notes=_SNSQL_NOTES + "; the rows of the pid column are built from the record (one person = one record)"),
]
"""Every row audited through a library environment, in table order."""

# ---------------------------------------------------------------------------------------------
# SmartNoise Synth 1.0.8
# ---------------------------------------------------------------------------------------------
_SNSYNTH_MINMAX = ("snsynth/transform/minmax.py, MinMaxTransformer: 'epsilon: The privacy budget to use to infer "
                   "bounds, if none provided.'; the fit spends Privacy(epsilon=epsilon, delta=0.0) on its odometer "
                   "and calls snsql's approx_bounds(vals, epsilon) ('The privacy budget to spend estimating the bounds')")
_SNSYNTH_COV = ("snsynth/models/dp_covariance.py, DPcovariance(n, cols, rng, global_eps): global_eps is split evenly "
                "over the lower-triangle covariances ('Distribute epsilon across all covariances'), each released with "
                "Laplace noise of scale sensitivity / epsilon_i, sensitivity 2 / n * range_i * range_j "
                "(covariance_sensitivity); no docstring states the relation")

ROWS += [
    row(library="SmartNoise Synth", key="smartnoise-synth.minmax_bounds",
        name="transform.MinMaxTransformer (epsilon: private bounds)", env="smartnoise-synth",
        target="smartnoise_synth:minmax_bounds", kwargs={"epsilon": 1.0},
        configuration="MinMaxTransformer(epsilon=1).fit(values) with no lower/upper: snsql's approx_bounds "
                      "(128 logarithmic bins, Laplace(1/epsilon) per bin, the outermost bins above a threshold); "
                      "releases (found, fit_lower, fit_upper), found 0 when it raises 'could not find bounds'",
        epsilon=1.0, documented=_SNSYNTH_MINMAX,
        relation_note="inferred: no snsynth docstring names a relation; approx_bounds's histogram changes by one in "
                      "one bin when a record is added or removed (the calibration assumes add/remove; replace moves "
                      "two bins)",
        lower=(0.0,), upper=(4.0,), min_size=0, max_size=30,
        witness_pairs=(([[0.5]] * 12, [[0.5]] * 12 + [[3.0]]), ([[0.5]] * 10, [[0.5]] * 11),
                       ([[3.0]] * 20, [[3.0]] * 20 + [[0.5]])),
        samples=2000, trials=2,
        notes="approx_bounds samples through OpenDP 0.14 (not seedable)"),
    row(library="SmartNoise Synth", key="smartnoise-synth.dp_covariance",
        name="models.dp_covariance.DPcovariance.release (opendp/smartnoise-sdk#622)", env="smartnoise-synth",
        target="smartnoise_synth:dp_covariance", kwargs={"epsilon": 1.0, "n": 5},
        configuration="DPcovariance(n=5, ['a', 'b'], bounds [0, 1] x [0, 1], global_eps=1).release(df) on 5 records "
                      "(n public): censor to the bounds, impute missing values, np.cov, Laplace noise on the 3 "
                      "lower-triangle entries; releases them",
        epsilon=1.0, neighbouring="replace", documented=_SNSYNTH_COV,
        relation_note="inferred: n is a public argument and the sensitivity 2 / n * range_i * range_j is that of one "
                      "record replaced among n",
        lower=(0.0, 0.0), upper=(1.0, 1.0), min_size=5, max_size=5,
        space=(("bounds", "bounds"), ("default_bounds", (0.0, 1.0)), ("bound_kinds", ("float", "int")),
               ("note", "DPcovariance's rng argument: the public bounds of both columns (a DataFrame of two rows; "
                        "integer bounds make an int64 frame), n fixed at 5")),
        witness_pairs=(([[0.0, 0.0]] * 4 + [[0.0, 0.0]], [[0.0, 0.0]] * 4 + [[1.0, 1.0]]),
                       ([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0], [0.5, 0.5]],
                        [[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])),
        samples=5000, trials=1,
        notes="DPcovariance draws from NumPy's global generator, seeded from the audit's rng once per batch; "
              "budget 5,000 x 1 for CPU time (a release builds two DataFrames and a DPcovariance, about 10 to 20 ms "
              "each on the loaded 2-core machine); the set of the reproducer holds about 1.3% of D0's outputs. The "
              "adversarial stage builds its pairs at the relation's fixed size (5 records; "
              "dpaudit.search.adversarial.pair_sizes), and its limits family sets the public bounds (rng)"),
]

# ---------------------------------------------------------------------------------------------
# Tumult Analytics 0.21.0 / Tumult Core 0.19.1
# ---------------------------------------------------------------------------------------------
_TMLT_ADD_ONE_ROW = ("documented: tmlt.analytics AddOneRow: 'A ProtectedChange that protects the addition or removal of "
                     "any single row'")
_TMLT_CORE_REL = ("documented: the measurement's input metric AbsoluteDifference at d_in 1 (the count or clipped sum "
                  "moves by at most 1 when a record is added or removed)")

ROWS += [
    row(library="Tumult Analytics", key="tmlt-analytics.session_count",
        name="Session.evaluate (QueryBuilder.count)", env="tmlt-analytics", target="tumult_analytics:session_count",
        kwargs={"epsilon": 1.0},
        configuration="Session.from_dataframe(PureDPBudget(1), 't', Spark DataFrame of the records, "
                      "protected_change=AddOneRow()); evaluate(QueryBuilder('t').count(), PureDPBudget(1)): "
                      "the whole Tumult Analytics path on pyspark 3.5 (local[1]); releases the noisy count",
        epsilon=1.0,
        documented="tmlt.analytics Session.evaluate: 'Answers a query within the given privacy budget and returns "
                   "a Spark dataframe'; PureDPBudget(1): 1-DP for the protected change",
        relation_note=_TMLT_ADD_ONE_ROW, min_size=0, max_size=10,
        witness_pairs=(([], [[0.5]]), ([[0.5]] * 4, [[0.5]] * 5)),
        samples=100, trials=1,
        search=(("samples", 8), ("certify_samples", 100), ("pair_timeout", 600.0), ("max_seconds", 720.0)),
        notes="about 2 to 7 s per evaluate on the loaded 2-core machine (a Spark job per query), so this row is "
              "audited at 100 outputs per dataset: a smoke test of the whole path, with little power; the noise it "
              "adds is the core_geometric_count row's, audited at full budget. Its input-space search runs at 8 "
              "outputs per dataset per pair (the search's default 40 took over its 30 s limit on every pair), "
              "certifies at the audit's 100, and stops drawing new pairs after 720 s per hunt"),
    row(library="Tumult Analytics", key="tmlt-core.geometric_count",
        name="tmlt.core AddGeometricNoise (integer aggregates under PureDP)", env="tmlt-analytics",
        target="tumult_analytics:core_geometric_count", kwargs={"epsilon": 1.0},
        configuration="AddGeometricNoise(alpha=1) on the number of records: the measurement Session.evaluate adds "
                      "to a count under PureDP (tmlt.analytics._noise_info)",
        epsilon=1.0, documented="tmlt.core AddGeometricNoise.privacy_function(d_in) = d_in / alpha = 1 at d_in 1 "
                                "(PureDP)", relation_note=_TMLT_CORE_REL,
        witness_pairs=(([[0.5]] * 3, [[0.5]] * 4), ([], [[0.5]])), samples=20000, trials=3,
        notes="Tumult Core samples from RDRAND or os.urandom (not seedable)"),
    row(library="Tumult Analytics", key="tmlt-core.laplace_sum",
        name="tmlt.core AddLaplaceNoise (floating-point aggregates under PureDP)", env="tmlt-analytics",
        target="tumult_analytics:core_laplace_sum", kwargs={"scale": 1},
        configuration="AddLaplaceNoise(NumpyFloatDomain(), scale=1) on the sum of the records clipped to [0, 1]: "
                      "Tumult Core's arbitrary-precision inverse-CDF Laplace sampler (tmlt.core.random.laplace), "
                      "which rounds the exact sample once",
        epsilon=1.0, documented="tmlt.core AddLaplaceNoise.privacy_function(d_in) = d_in / b = 1 at d_in 1 (PureDP)",
        relation_note=_TMLT_CORE_REL,
        witness_pairs=(([[0.0]], [[0.0], [1.0]]), ([[1.0]] * 9, [[1.0]] * 10)), samples=20000, trials=3,
        notes="Tumult Core samples from RDRAND or os.urandom (not seedable)"),
    row(library="Tumult Analytics", key="tmlt-core.discrete_gaussian_count",
        name="tmlt.core AddDiscreteGaussianNoise (integer aggregates under rho-zCDP)", env="tmlt-analytics",
        target="tumult_analytics:core_discrete_gaussian_count", kwargs={"sigma_squared": 1},
        configuration="AddDiscreteGaussianNoise(sigma_squared=1) on the number of records: rho = 1/2 zCDP, "
                      "audited as the (epsilon, 1e-5)-DP it implies (Canonne, Kamath, Steinke 2020, Prop. 12: "
                      "epsilon 4.7284 at delta 1e-5, from rho alone)",
        epsilon=zcdp_epsilon(0.5, 1e-5), delta=1e-5,
        documented="tmlt.core AddDiscreteGaussianNoise.privacy_function(d_in) = d_in^2 / (2 sigma^2) = 1/2 "
                   "(RhoZCDP); rho-zCDP implies (epsilon, delta)-DP with delta = inf over alpha > 1 of "
                   "exp((alpha - 1)(alpha rho - epsilon)) / (alpha - 1) (1 - 1/alpha)^alpha (Canonne, Kamath, "
                   "Steinke 2020, Prop. 12)",
        relation_note=_TMLT_CORE_REL,
        witness_pairs=(([[0.5]] * 3, [[0.5]] * 4), ([], [[0.5]])), samples=20000, trials=3,
        notes="Tumult Core samples from RDRAND or os.urandom (not seedable); the claim's epsilon is computed on a "
              "grid of alpha (a minimum over fewer alphas overstates delta, so the epsilon errs high) and "
              "rounded up to 4 decimals"),
]

# ---------------------------------------------------------------------------------------------
# jax_privacy 2.0.0
# ---------------------------------------------------------------------------------------------
_JAXP_DOC = ("jax_privacy/clipping.py, clipped_grad: 'The L2 sensitivity of the returned function with respect to the "
             "batch arguments ... under add/remove or zero-out differential privacy definitions is guaranteed to be "
             "... l2_clip_norm'; accounting/calibrate.py, calibrate_noise_multiplier: 'Computes the noise multiplier "
             "to achieve target_epsilon' (DpsgdTrainingAccountant, NeighboringRelation.ADD_OR_REMOVE_ONE)")
_JAXP_REL = "documented: dp_accounting NeighboringRelation.ADD_OR_REMOVE_ONE (jax_privacy/accounting/accountants.py)"

ROWS += [
    row(library="jax_privacy", key="jax-privacy.dpsgd_step_pld",
        name="clipping.clipped_grad + noise_addition.gaussian_privatizer (PLD-calibrated)", env="jax-privacy",
        target="jax_privacy_targets:dpsgd_step",
        kwargs={"epsilon": 1.0, "delta": 1e-5, "clip_norm": 1.0, "num_samples": 10, "accountant": "pld"},
        configuration="one full-batch DP-SGD release: clipped_grad(0.5 * sum((data - params)^2), l2_clip_norm=1) at "
                      "params 0 (per-example gradient = minus the record) summed, plus gaussian_privatizer noise of "
                      "stddev sigma x 1, sigma from calibrate_noise_multiplier(target (1, 1e-5), PLD accountant, "
                      "batch = num_samples = 10, one update) = 3.7308; float32, as jax_privacy computes",
        epsilon=1.0, delta=1e-5, documented=_JAXP_DOC, relation_note=_JAXP_REL,
        lower=(-1.0, -1.0), upper=(1.0, 1.0), min_size=1, max_size=10,
        witness_pairs=(([[-1.0, -1.0]], [[-1.0, -1.0], [1.0, 1.0]]), ([[0.0, 0.0]], [[0.0, 0.0], [1.0, 0.0]])),
        samples=20000, trials=2,
        notes="the PRNG key of the privatizer is drawn from the audit's rng (reproducible); min 1 record (the "
              "empty batch is left out: jax_privacy's clipped_grad needs a batch)"),
    row(library="jax_privacy", key="jax-privacy.dpsgd_step_rdp",
        name="clipping.clipped_grad + noise_addition.gaussian_privatizer (RDP-calibrated)", env="jax-privacy",
        target="jax_privacy_targets:dpsgd_step",
        kwargs={"epsilon": 1.0, "delta": 1e-5, "clip_norm": 1.0, "num_samples": 10, "accountant": "rdp"},
        configuration="as the PLD row, the noise multiplier calibrated by the RDP accountant (RdpAccountantConfig)",
        epsilon=1.0, delta=1e-5, documented=_JAXP_DOC, relation_note=_JAXP_REL,
        lower=(-1.0, -1.0), upper=(1.0, 1.0), min_size=1, max_size=10,
        witness_pairs=(([[-1.0, -1.0]], [[-1.0, -1.0], [1.0, 1.0]]),), samples=20000, trials=2,
        notes="as the PLD row"),
]

# ---------------------------------------------------------------------------------------------
# TensorFlow Privacy 0.9.0
# ---------------------------------------------------------------------------------------------
ROWS += [
    row(library="TensorFlow Privacy", key="tensorflow-privacy.dpsgd_step",
        name="DPKerasSGDOptimizer (claim: compute_dp_sgd_privacy_statement)", env="tensorflow-privacy",
        target="tensorflow_privacy_targets:dpsgd_step", kwargs={"epsilon": 1.0, "delta": 1e-5, "clip_norm": 1.0},
        configuration="one step of DPKerasSGDOptimizer(l2_norm_clip=1, noise_multiplier=4.0454, num_microbatches=None "
                      "(one microbatch per example), learning_rate=1) on the whole dataset as the batch, loss "
                      "0.5 * sum((x - w)^2) per example from w = 0; releases the model w after the step. sigma = 4.0454 is "
                      "where TF Privacy's compute_dp_sgd_privacy_statement (batch = examples, one epoch, "
                      "used_microbatching=False, RDP) states epsilon 1.000 at delta 1e-5",
        epsilon=1.0, delta=1e-5,
        documented="tensorflow_privacy compute_dp_sgd_privacy_statement: 'This privacy guarantee protects the release "
                   "of all model checkpoints in addition to the final model. Example-level DP with add-or-remove-one "
                   "adjacency at delta = 1e-05 computed with RDP accounting: Epsilon with each example occurring once "
                   "per epoch: 1.000'",
        relation_note="documented: 'Example-level DP with add-or-remove-one adjacency' (the statement)",
        lower=(-1.0, -1.0), upper=(1.0, 1.0), min_size=1, max_size=10,
        witness_pairs=(([[1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]]), ([[0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]),
                       ([[-1.0, -1.0]] * 9, [[-1.0, -1.0]] * 10)),
        samples=20000, trials=2,
        notes="TensorFlow's global seed is set from the audit's rng once per batch (reproducible); one optimizer per "
              "batch, the model reset to w = 0 before each step"),
]


def _causes() -> tuple:
    """The causes of these rows' findings (:class:`dpaudit.library.entry.Cause`), one per issue a
    maintainer would file; the registry adds them to the table's causes."""
    from ..entry import Cause

    return (
        Cause("smartnoise-synth.dpcovariance-float-laplace", "SmartNoise Synth",
              "DPcovariance.release adds Laplace noise drawn by inversion in float64 (q_lap) to each covariance and "
              "returns the rounded sum: the low bits of a release tell which covariance it came from (Mironov 2012)",
              "floating-point", rows=("smartnoise-synth.dp_covariance",),
              prior="opendp/smartnoise-sdk#622 (Re:cord-play R1, patched) is another bug of the same function (the "
                    "covariance of the uncensored data); this floating-point leak is the textbook attack on "
                    "floating-point Laplace (Mironov, CCS 2012)",
              searched="not searched in opendp/smartnoise-sdk's tracker from this machine: to do before filing",
              reproducer="reproducers/envs/smartnoise_synth_dp_covariance.py",
              note="D1's var(a) is 0.2 + noise, always a multiple of 2^-55 near 0; D0's is the noise itself: "
                   "no epsilon holds for delta below P[S | D0] (0.00899 certified by the reproducer)"),
        Cause("smartnoise-synth.dpcovariance-bounds-overflow", "SmartNoise Synth",
              "DPcovariance's covariance_sensitivity computes each column's range as rng[i][1] - rng[i][0] on the "
              "bounds frame: with integer bounds spanning more than 2^63 - 1 (e.g. the whole int64 range) the "
              "int64 difference wraps around (2^64 - 2 becomes -2), the sensitivity is 2 / n * 4 and the exact "
              "covariance is released with noise of scale about 5; with float bounds near 1e154 the range squared "
              "reaches inf, the noise is +-inf and a covariance that overflowed to inf gives NaN (inf - inf)",
              "library bug", adversarial=(("smartnoise-synth.dp_covariance", "search:limits"),),
              prior="the class is known (Casacuberta et al., CCS 2022; opendp/opendp#178 'Overflow handling in "
                    "Sum'); opendp/smartnoise-sdk#622 (Re:cord-play R1) is another bug of DPcovariance",
              searched="not searched in opendp/smartnoise-sdk's tracker from this machine (no network beyond "
                       "package registries): to do before filing",
              reproducer="reproducers/envs/smartnoise_synth_dp_covariance_int64_bounds.py",
              note="found blind by the input-space search (limits family, budget 200 pairs per hunt: at the "
                   "default 60 the Hypothesis draws did not reach the bounds); no hand-written pair; the search's "
                   "witnesses are bounds (-(2^63 - 1), 2^63 - 1) with int64 records and bounds (-1e154, 1e154)"),
        Cause("tensorflow-privacy.batch-size-divisor", "TensorFlow Privacy",
              "DPKerasSGDOptimizer divides the noisy gradient sum by the batch's size (num_microbatches=None), so "
              "the noise of the released model shrinks when an example is added; the epsilon "
              "compute_dp_sgd_privacy_statement states for the configuration does not hold",
              "library bug", rows=("tensorflow-privacy.dpsgd_step",),
              prior="the same divisor in Opacus is meta-pytorch/opacus#571 (Re:cord-play R7); no TF Privacy report "
                    "was found",
              searched="not searched in tensorflow/privacy's tracker from this machine (no network beyond package "
                       "registries): to do before filing",
              reproducer="reproducers/envs/tensorflow_privacy_dpsgd_step.py",
              note="with the batch fixed and public (the statement's batch_size) the claim is about another "
                   "mechanism; under add-or-remove-one adjacency, which the statement names, the batch of the whole "
                   "dataset changes size"),
        Cause("tensorflow-privacy.float32-grid", "TensorFlow Privacy",
              "The step computes in float32: adding one example (here one above the bounds, or the batch as "
              "int64 records) moves the released model onto float32 grids the other batch never reaches",
              "floating-point",
              adversarial=(("tensorflow-privacy.dpsgd_step", "above-bounds"),
                           ("tensorflow-privacy.dpsgd_step", "integer-dtype")),
              prior="none found; the floating-point attacks of Mironov (CCS 2012) and of Haney et al. (2022) are on "
                    "float64 noise, this is float32 training arithmetic",
              searched="not searched in tensorflow/privacy's tracker from this machine: to do before filing",
              reproducer="reproducers/envs/tensorflow_privacy_dpsgd_step_above_bounds.py",
              note="found by the adversarial screen of `dpaudit library audit tensorflow-privacy --stages "
                   "audit,adversarial` (500 held-out outputs per dataset, 57/500 and 48/500 against 0/500); the "
                   "reproducers give 116/1000 and 104/1000 against 0/1000. The int64 records are the same computation "
                   "as float (1, 1) (the step casts to float32): in both, D1's two clipped gradients cancel and its "
                   "release is the noise over a batch of two, D0's the clipped gradient plus the noise over a batch "
                   "of one; so this is likely the batch-size divisor seen on float32 grids (not traced to the line)"),
        Cause("tensorflow-privacy.nonfinite-features", "TensorFlow Privacy",
              "One example with a NaN, infinite or float32-overflowing feature makes the released model NaN "
              "(tf.clip_by_global_norm sets every entry to NaN on a non-finite norm)",
              "library bug",
              adversarial=tuple(("tensorflow-privacy.dpsgd_step", kind)
                                for kind in ("nan", "+inf", "-inf", "max-double", "-max-double")),
              prior="Re:cord-play (PoPETs 2026) maps its NaN example (the dp-recorder artifact's "
                    "tests/test_nan_injection.py) to Opacus, diffprivlib, SmartNoise Synth and others, not to TF Privacy",
              searched="not searched in tensorflow/privacy's tracker from this machine: to do before filing",
              reproducer="reproducers/envs/tensorflow_privacy_dpsgd_step_nan.py"),
    )


CAUSES = _causes()
"""The causes of the findings of these rows (see :func:`_causes`)."""

ADVERSARIAL_SAME_CAUSE = {
    "tensorflow-privacy.dpsgd_step": ("nan", "+inf, -inf and +-the largest double make the example's gradient norm "
                                             "non-finite as NaN does (float32 overflow), and tf.clip_by_global_norm "
                                             "then sets every entry to NaN: reproducers/envs/"
                                             "tensorflow_privacy_dpsgd_step_nan.py shows the code path"),
}
"""Rows whose adversarial leaks share one reproducer (see :data:`dpaudit.library.registry.ADVERSARIAL_SAME_CAUSE`);
an input with a script of its own (``above-bounds``, ``integer-dtype``) uses that."""

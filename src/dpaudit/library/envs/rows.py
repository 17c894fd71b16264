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

__all__ = ["EnvRow", "ROWS", "row"]


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
    """

    library: str
    key: str
    name: str
    env: str
    target: str
    configuration: str
    epsilon: float
    delta: float = 0.0
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
        claim = f"({self.epsilon:g}, {self.delta:g})-DP" if self.delta else f"{self.epsilon:g}-DP"
        return f"{claim}, {self.neighbouring}"

    def command(self, samples: int | None = None, seed: int | None = None) -> list[str]:
        """The ``dpaudit test`` arguments that audit this row."""
        cmd = ["dpaudit", "test", self.catalogue_target, "--epsilon", f"{self.epsilon:.17g}"]
        if self.delta:
            cmd += ["--delta", f"{self.delta:.17g}"]
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
        mech.accepts = AcceptedInputs(kinds=kinds, note=f"{self.library} {self.name}: {self.configuration}")
        mech.row = self
        return mech


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
]
"""Every row audited through a library environment, in table order."""

"""SmartNoise SQL (``snsql``) targets, run in the ``smartnoise-sql`` environment.

Each target is ``snsql.from_df(df, privacy=Privacy(epsilon, delta), metadata=...)`` followed by
``reader.execute(query)``, as snsql's documentation shows (``snsql.connect.from_df``): the dataset's
records become the rows of a one-table DataFrame ``t.t`` whose metadata declares ``row_privacy:
True`` (one row is one individual) and the columns' bounds. The release is the query's result
row(s), flattened to a fixed-length vector: ``(present, value, ...)`` per expected row, where
``present`` is 0 (and the values 0) when snsql left the row out (``censor_dims``, snsql's default,
drops a row whose noisy count is below a threshold computed from delta).

Randomness: snsql draws its noise through OpenDP's samplers, which read the operating system's
randomness and cannot be seeded, so these targets are not reproducible from ``rng`` (like
dpaudit's OpenDP rows); the audit's guarantee does not depend on it.
"""

import numpy as np

TABLE = "t.t"

_SCALES = {}


def memoise_scale_search():
    """Memoise snsql's Laplace scale search per (lower, upper, max_contrib, epsilon).

    ``Laplace._compute_noise_scale`` runs OpenDP's ``binary_search_param`` on every mechanism
    snsql builds, i.e. on every ``execute`` (80% of a call's time). The search is deterministic in
    those four values, so its result is reused: the released distribution is unchanged.
    """
    from snsql.sql._mechanisms import laplace

    cls = laplace.Laplace
    if getattr(cls, "_dpaudit_memo", False):
        return
    original = cls._compute_noise_scale

    def cached(self):
        key = (float(self.lower), float(self.upper), int(self.max_contrib), float(self.epsilon))
        if key not in _SCALES:
            original(self)
            _SCALES[key] = self.scale
        self.scale = _SCALES[key]

    cls._compute_noise_scale = cached
    cls._dpaudit_memo = True


def _metadata(columns, row_privacy=True, censor_dims=True, clamp_counts=False, max_ids=1):
    cols = {"row_privacy": row_privacy, "censor_dims": censor_dims, "clamp_counts": clamp_counts,
            "max_ids": max_ids, "rows": 10}
    for name, spec in columns.items():
        cols[name] = dict(spec)
    return {"t": {"t": {"t": cols}}}


class _Query:
    """Build the reader once per dataset and run ``query`` once per output."""

    def __init__(self, query, columns, epsilon, delta, groups=None, memo=True, **options):
        self.memo = memo
        self.query = query
        self.columns = columns
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self.groups = groups  # categories of a GROUP BY: output (present, value) per category
        self.options = options
        self.describe = f"snsql {query!r} at Privacy(epsilon={epsilon}, delta={delta})"

    def reader(self, dataset):
        import pandas as pd
        import snsql

        if self.memo:
            memoise_scale_search()
        arr = np.asarray(dataset)
        data = {}
        for j, (name, spec) in enumerate(self.columns.items()):
            col = arr[:, j] if arr.ndim == 2 and arr.shape[0] else np.empty(0)
            if spec["type"] == "int":
                col = np.floor(np.asarray(col, dtype=float) * spec.get("scale", 1)).astype(np.int64)
            data[name] = col
        df = pd.DataFrame(data, columns=list(self.columns))
        meta = _metadata({k: {kk: vv for kk, vv in v.items() if kk != "scale"} for k, v in self.columns.items()},
                         **self.options)
        privacy = snsql.Privacy(epsilon=self.epsilon, delta=self.delta)
        return snsql.from_df(df, privacy=privacy, metadata=meta)

    def cost(self):
        """``reader.get_privacy_cost(query)``: the library's own (epsilon, delta) for the query."""
        return self.reader(np.zeros((1, len(self.columns)))).get_privacy_cost(self.query)

    def _flatten(self, rows):
        header, body = rows[0], rows[1:]
        if self.groups is None:  # one row, or none when snsql censored it: (present, values)
            if len(body) > 1:
                raise ValueError(f"expected at most one result row, got {len(body)}")
            return [1.0] + [float(v) for v in body[0]] if body else [0.0] * len(header) + [0.0]
        out = []
        found = {int(r[0]): r[1:] for r in body}
        for g in self.groups:
            if g in found:
                out += [1.0] + [float(v) for v in found[g]]
            else:
                out += [0.0] + [0.0] * (len(header) - 1)
        return out

    def sample(self, dataset, num_samples, rng):
        reader = self.reader(dataset)
        return np.array([self._flatten(reader.execute(self.query)) for _ in range(num_samples)], dtype=float)


_X = {"x": {"type": "float", "lower": 0.0, "upper": 1.0}}


def count(epsilon=1.0, delta=1e-5, memo=True):
    """``SELECT COUNT(*) AS n FROM t.t``."""
    return _Query(f"SELECT COUNT(*) AS n FROM {TABLE}", _X, epsilon, delta, memo=memo)


def sum_x(epsilon=1.0, delta=1e-5, memo=True):
    """``SELECT SUM(x) AS s FROM t.t``, x a float column with bounds [0, 1]."""
    return _Query(f"SELECT SUM(x) AS s FROM {TABLE}", _X, epsilon, delta, memo=memo)


def avg_x(epsilon=1.0, delta=1e-5, memo=True):
    """``SELECT AVG(x) AS a FROM t.t``: snsql computes it from a noisy SUM and a noisy COUNT."""
    return _Query(f"SELECT AVG(x) AS a FROM {TABLE}", _X, epsilon, delta, memo=memo)


def count_group(epsilon=1.0, delta=1e-3, memo=True):
    """``SELECT g, COUNT(*) AS n FROM t.t GROUP BY g`` with censor_dims (snsql's default): groups
    0, 1, 2 (the record's third of [0, 1]); the release is (present, count) per group."""
    cols = {"g": {"type": "int", "lower": 0, "upper": 2, "scale": 3}}
    q = _Query(f"SELECT g, COUNT(*) AS n FROM {TABLE} GROUP BY g", cols, epsilon, delta, groups=[0, 1, 2], memo=memo)
    return q


def privacy_cost(query="count", epsilon=1.0, delta=1e-5):
    """Not a target: the library's own cost of a named query (for the row's claim)."""
    return globals()[query](epsilon=epsilon, delta=delta).cost()


def odometer_spent(epsilon=1.0, k=10, delta=1e-5, step_delta=0.0):
    """Not a target: ``OdometerHeterogeneous(Privacy(epsilon, delta)).spent`` after ``k`` spends of
    ``Privacy(epsilon, step_delta)`` (what ``PrivateReader.get_privacy_cost`` reports for ``k``
    mechanisms of one query); returns ``[epsilon, delta]``."""
    from snsql.sql.odometer import OdometerHeterogeneous
    from snsql.sql.privacy import Privacy

    odo = OdometerHeterogeneous(Privacy(epsilon=epsilon, delta=delta))
    for _ in range(int(k)):
        odo.spend(Privacy(epsilon=epsilon, delta=step_delta))
    return [float(v) for v in odo.spent]


class _PersonQuery(_Query):
    """A query on person-level data: each record is one person ``(pid, x_1, ..., x_k)`` whose ``k``
    rows all carry the person's id ``pid`` (a float column declared ``private_id``; a missing id is NaN,
    which pandas hands to SQLite as NULL), so that ``max_ids`` bounds a person's rows."""

    def __init__(self, query, k, epsilon, delta, **options):
        cols = {"pid": {"type": "float", "private_id": True}, "x": {"type": "float", "lower": 0.0, "upper": 1.0}}
        super().__init__(query, cols, epsilon, delta, row_privacy=False, **options)
        self.k = int(k)

    def reader(self, dataset):
        arr = np.asarray(dataset, dtype=float)
        arr = arr.reshape(len(arr), -1) if arr.size else arr.reshape(0, 1 + self.k)
        rows = np.array([(r[0], v) for r in arr for v in r[1:]], dtype=float).reshape(-1, 2)
        return super().reader(rows)


def count_persons(epsilon=1.0, delta=1e-3, k=3, censor_dims=False, memo=True):
    """``SELECT COUNT(*) AS n FROM t.t`` on person-level data (``row_privacy: False``, ``pid`` the
    private id, ``max_ids = 1``): each record is a person with ``k`` rows (see :class:`_PersonQuery`);
    ``censor_dims`` off by default (at 1 to 8 persons snsql's threshold censors every release)."""
    return _PersonQuery(f"SELECT COUNT(*) AS n FROM {TABLE}", k, epsilon, delta, censor_dims=censor_dims, memo=memo)

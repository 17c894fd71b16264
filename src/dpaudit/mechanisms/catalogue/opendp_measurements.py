"""Every OpenDP measurement constructor that can be invoked on a dataset, composed with the
transformations a user would put in front of it and calibrated with OpenDP's own privacy maps:
the OpenDP rows of ``benchmarks/library_audit.py`` (``docs/library_audits.md``).

Run one from the command line (exit code 1 when a violation is found)::

    dpaudit test dpaudit.mechanisms.catalogue.opendp_measurements:laplace_count --epsilon 1 --tester all --samples 20000 --trials 3
    dpaudit test dpaudit.mechanisms.catalogue.opendp_measurements:gaussian_sum --epsilon 1 --delta 1e-5 --tester all

Each object is an :class:`~dpaudit.mechanisms.adapters.OpenDPMechanism` carrying its neighbouring
relation and witness pairs as audit hints; ``target.claim()`` reads the guarantee from OpenDP's
privacy map (``measurement.map(d_in)``), so the claim audited is the library's, not ours. All need
OpenDP (``pip install 'dpaudit[opendp]'``); importing this module does not import it, the first
sample (or ``claim()``) builds the measurement. OpenDP's noise cannot be seeded: audits of these
targets are **not** reproducible from ``--seed`` (the pairs are, the outputs are not), so a verdict
near the threshold can change from run to run.

How the measurements are configured
-----------------------------------
Records are scalars in [0, 1]; datasets have 0 to 10 records under add/remove (OpenDP's
``symmetric_distance`` at ``d_in = 1``) unless stated. Every noise scale (or probability) is found
with ``dp.binary_search_param`` / ``dp.binary_search_chain`` so that OpenDP's map gives
``epsilon <= 1`` (and ``delta <= 1e-5`` for approximate DP): the claimed epsilon is 1 up to
OpenDP's own rounding (``map(d_in)`` is at most 1 and within 1e-6 of it). Three are set directly:
the Laplace threshold's scale 1 and ALP's scale 1 (their maps give epsilon 1; the threshold is then
searched for delta) and the canonical noise, which takes ``d_out = (1, 1e-5)`` itself.

* Laplace: ``clamp((0, 1)) >> sum >> laplace`` on floats (``laplace_sum``), ``clamp >> mean >>
  laplace`` on 5 records (``laplace_mean``: OpenDP's mean needs a known size, so neighbours replace
  one record, ``d_in = 2`` under ``symmetric_distance``), and ``count >> laplace`` on integers
  (``laplace_count``: OpenDP's integer Laplace is the discrete Laplace, exact);
* geometric: ``count >> geometric`` without and with ``bounds=(0, 10)`` (constant time);
* Gaussian: ``clamp >> sum >> gaussian`` (floats) and ``count >> gaussian`` (discrete Gaussian).
  OpenDP states their guarantee as rho-zCDP; it is converted to (epsilon, delta) with OpenDP's own
  ``make_zCDP_to_approxDP`` (Canonne, Kamath, Steinke 2020, the conversion of its proof) and
  ``make_fix_delta(delta=1e-5)``, so the audited claim is the map of the converted measurement.
  dpaudit has no zCDP claim; a rho-zCDP claim would be a family of (alpha, alpha rho)-RDP claims;
* thresholds (``laplace_threshold``, ``gaussian_threshold``): a hashmap of counts per category
  (records in thirds of [0, 1] are the categories 0, 1, 2; up to 24 records), released only where
  the noisy count passes the threshold. The Laplace form follows ``count_by`` (``L01InfDistance``);
  OpenDP's Gaussian form needs ``L02InfDistance``, which no transformation outside Polars produces,
  so its counts are computed in ``preprocess`` and its map read at ``d_in = (1, 1, 1)`` (one
  record changes one count by one: the distance ``count_by``'s own map states). The release is
  post-processed into the counts of keys 0, 1, 2, with 0 for a key not released (released counts
  pass a threshold above 0);
* the generic constructors ``make_noise`` (``noise_sum``: as ``laplace_sum``, measure
  ``max_divergence()``) and ``make_noise_threshold`` (``noise_threshold``: as ``laplace_threshold``);
* ``alp_queryable``: ``count_by >> alp_queryable(scale=1, total_limit=10, value_limit=10)`` (a
  sparse-vector sketch of the categories' counts, Aumüller, Lebeda, Pagh 2021); the release, a
  queryable, is post-processed into its answers for keys 0, 1, 2;
* ``canonical_noise``: ``clamp >> sum >> canonical_noise(d_in=sum.map(1), d_out=(1, 1e-5))``
  (Tulap noise; the sensitivity is OpenDP's map of the sum);
* randomized response on one record's category (replace-one on datasets of exactly one record):
  ``randomized_response`` (categories 0, 1, 2), ``randomized_response_bool`` (record >= 1/2) and
  ``randomized_response_bitvec`` (the category one-hot in 8 bits, ``max_weight=1``; the release is
  the 8 bits);
* selection on ``quantile_score_candidates`` (the median's scores of candidates 0, 1/4, ..., 1,
  ``LInfDistance``): ``noisy_max`` (pure DP: exponential noise), ``noisy_max_zcdp`` (zCDP: Gumbel
  noise, converted as the Gaussian), ``noisy_top_k`` (k = 2; the release is the two indices in
  order), ``report_noisy_max_gumbel`` (deprecated since 0.14 for ``make_noisy_max``);
* ``private_quantile``: the median over the same candidates (pure DP).
"""

from __future__ import annotations

import numpy as np

from ...datasets import AddRemove, Domain, Replace
from ...datasets import ADVERSARIAL_KINDS as KINDS
from ...datasets import AcceptedInputs
from ..adapters.opendp import OpenDPMechanism, import_opendp
from ._hints import with_hints

__all__ = [
    "EPSILON", "DELTA", "CANDIDATES", "EXACT", "TARGETS",
    "laplace_sum", "laplace_mean", "laplace_count", "geometric", "geometric_bounded", "gaussian_sum",
    "gaussian_count", "laplace_threshold", "gaussian_threshold", "noise_sum", "noise_threshold", "alp_queryable",
    "canonical_noise", "randomized_response",
    "randomized_response_bool", "randomized_response_bitvec", "noisy_max", "noisy_max_zcdp", "noisy_top_k",
    "report_noisy_max_gumbel", "private_quantile",
]

EPSILON = 1.0
"""Epsilon every measurement is calibrated to (OpenDP's map gives at most this, nats)."""

DELTA = 1e-5
"""Delta of the approximate-DP measurements (Gaussian, zCDP selection, thresholds, canonical noise)."""

CANDIDATES = [0.0, 0.25, 0.5, 0.75, 1.0]
"""Candidates of the median (``private_quantile``, and the scores the selection measurements take)."""

MAX_RECORDS = 10
"""Largest dataset of the add/remove relations (thresholds: :data:`THRESHOLD_MAX_RECORDS`)."""

THRESHOLD_MAX_RECORDS = 24
"""Largest dataset of the threshold measurements, so that counts reach their thresholds."""

MEAN_SIZE = 5
"""The known dataset size of ``laplace_mean`` (OpenDP's mean needs it)."""

EXACT = ("laplace_count", "geometric", "geometric_bounded", "gaussian_count", "randomized_response",
         "randomized_response_bool")
"""Targets whose noise OpenDP samples exactly on integers, so their guarantee holds exactly (the
claim is OpenDP's map, read with its own conservative rounding)."""


def _dp():
    dp = import_opendp()
    dp.enable_features("contrib")
    return dp


def _floats(dp, size=None):
    return dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size), dp.symmetric_distance()


def _approx(dp, meas):
    """OpenDP's zCDP -> (epsilon, delta) conversion at :data:`DELTA`."""
    return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(meas), DELTA)


def _category(x) -> int:
    """The category (0, 1, 2) of a record in [0, 1]: its third of the interval."""
    return min(int(float(x) * 3), 2)


def _categories(dataset) -> list:
    return [_category(v) for v in np.asarray(dataset, dtype=float).ravel()]


def _counts(dataset) -> dict:
    cats = _categories(dataset)
    return {k: cats.count(k) for k in sorted(set(cats))}


def _first_category(dataset) -> int:
    return _category(np.asarray(dataset, dtype=float).ravel()[0])


def _first_bool(dataset) -> bool:
    return bool(float(np.asarray(dataset, dtype=float).ravel()[0]) >= 0.5)


def _one_hot_bytes(dataset) -> bytes:
    bits = np.zeros(8, dtype=np.uint8)
    bits[_first_category(dataset)] = 1
    return np.packbits(bits).tobytes()


def _unpack_bits(release) -> list:
    return np.unpackbits(np.frombuffer(release, dtype=np.uint8)).astype(float).tolist()


def _key_counts(release) -> list:
    return [float(release.get(k, 0)) for k in (0, 1, 2)]


# ------------------------------------------------------------------------------ builders

def build_laplace_sum():
    """``clamp((0, 1)) >> sum >> laplace(scale)`` on floats, scale so that ``map(1) <= 1``.

    Returns
    -------
    opendp.mod.Measurement
        ``Vec<f64>`` under ``SymmetricDistance`` -> ``f64``, ``MaxDivergence``.

    Raises
    ------
    MissingDependencyError
        If OpenDP is not installed (as every builder here).
    """
    dp = _dp()
    return dp.binary_search_chain(
        lambda s: _floats(dp) >> dp.t.then_clamp((0.0, 1.0)) >> dp.t.then_sum() >> dp.m.then_laplace(s),
        d_in=1, d_out=EPSILON)


def build_laplace_mean():
    """``clamp((0, 1)) >> mean >> laplace(scale)`` on exactly 5 floats, so that ``map(2) <= 1``
    (replacing one record is distance 2 under ``symmetric_distance``).

    Returns
    -------
    opendp.mod.Measurement
    """
    dp = _dp()
    return dp.binary_search_chain(
        lambda s: _floats(dp, MEAN_SIZE) >> dp.t.then_clamp((0.0, 1.0)) >> dp.t.then_mean() >> dp.m.then_laplace(s),
        d_in=2, d_out=EPSILON)


def build_laplace_count():
    """``count >> laplace(scale)``: an integer count with discrete Laplace noise, ``map(1) <= 1``.

    Returns
    -------
    opendp.mod.Measurement
    """
    dp = _dp()
    return dp.binary_search_chain(lambda s: _floats(dp) >> dp.t.then_count() >> dp.m.then_laplace(s),
                                  d_in=1, d_out=EPSILON)


def build_geometric(bounds=None):
    """``count >> geometric(scale, bounds)``, ``map(1) <= 1``.

    Parameters
    ----------
    bounds : tuple of int, optional
        OpenDP's ``bounds`` on the count (the constant-time sampler); None for the plain form.

    Returns
    -------
    opendp.mod.Measurement
    """
    dp = _dp()
    return dp.binary_search_chain(
        lambda s: _floats(dp) >> dp.t.then_count() >> dp.m.then_geometric(s, bounds=bounds), d_in=1, d_out=EPSILON)


def build_geometric_bounded():
    """``count >> geometric(scale, bounds=(0, 10))``, ``map(1) <= 1``.

    Returns
    -------
    opendp.mod.Measurement
    """
    return build_geometric((0, MAX_RECORDS))


def build_gaussian_sum():
    """``clamp((0, 1)) >> sum >> gaussian(scale)`` on floats, converted with OpenDP's
    ``make_zCDP_to_approxDP`` and ``make_fix_delta(1e-5)``; scale so that ``map(1) <= (1, 1e-5)``.

    Returns
    -------
    opendp.mod.Measurement
        Output measure ``Approximate(MaxDivergence)``.
    """
    dp = _dp()
    return dp.binary_search_chain(
        lambda s: _approx(dp, _floats(dp) >> dp.t.then_clamp((0.0, 1.0)) >> dp.t.then_sum() >> dp.m.then_gaussian(s)),
        d_in=1, d_out=(EPSILON, DELTA))


def build_gaussian_count():
    """``count >> gaussian(scale)`` (the discrete Gaussian), converted as :func:`build_gaussian_sum`.

    Returns
    -------
    opendp.mod.Measurement
    """
    dp = _dp()
    return dp.binary_search_chain(
        lambda s: _approx(dp, _floats(dp) >> dp.t.then_count() >> dp.m.then_gaussian(s)),
        d_in=1, d_out=(EPSILON, DELTA))


LAPLACE_THRESHOLD_SCALE = 1.0
"""Scale of ``laplace_threshold``: OpenDP's map gives epsilon = 1 at ``count_by``'s distance."""


def build_laplace_threshold():
    """``count_by >> laplace_threshold(scale=1, threshold)`` on the records' categories, the
    smallest integer threshold with ``map(1) <= (1, 1e-5)``.

    Returns
    -------
    opendp.mod.Measurement
        ``Vec<i32>`` -> ``HashMap<i32, i32>``, ``Approximate(MaxDivergence)``.
    """
    dp = _dp()
    space = dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance()

    def chain(t):
        return space >> dp.t.then_count_by(TV=int) >> dp.m.then_laplace_threshold(LAPLACE_THRESHOLD_SCALE, t)

    return chain(dp.binary_search_param(chain, d_in=1, d_out=(EPSILON, DELTA), bounds=(1, 100), T=int))


GAUSSIAN_THRESHOLD = 20
"""Threshold of ``gaussian_threshold`` (its share of delta is about 1e-6 at the calibrated scale)."""


def build_gaussian_threshold():
    """``gaussian_threshold(scale, threshold=20)`` on a hashmap of counts under
    ``L02InfDistance``, converted as :func:`build_gaussian_sum`; scale so that
    ``map((1, 1, 1)) <= (1, 1e-5)``.

    Returns
    -------
    opendp.mod.Measurement
        ``HashMap<i32, i32>`` -> ``HashMap<i32, i32>``, ``Approximate(MaxDivergence)``.
    """
    dp = _dp()
    space = (dp.map_domain(dp.atom_domain(T=int), dp.atom_domain(T=int)),
             dp.l02inf_distance(dp.absolute_distance(T=int)))
    return dp.binary_search_chain(
        lambda s: _approx(dp, space >> dp.m.then_gaussian_threshold(s, GAUSSIAN_THRESHOLD)),
        d_in=(1, 1, 1), d_out=(EPSILON, DELTA), bounds=(3.5, 4.4))


def build_noise_sum():
    """``clamp((0, 1)) >> sum >> noise(max_divergence(), scale)``: OpenDP's generic noise
    constructor (``make_laplace`` fixes its measure), scale so that ``map(1) <= 1``.

    Returns
    -------
    opendp.mod.Measurement
    """
    dp = _dp()
    return dp.binary_search_chain(
        lambda s: _floats(dp) >> dp.t.then_clamp((0.0, 1.0)) >> dp.t.then_sum()
        >> dp.m.then_noise(dp.max_divergence(), s), d_in=1, d_out=EPSILON)


def build_noise_threshold():
    """``count_by >> noise_threshold(approximate(max_divergence()), scale=1, threshold)``: the
    generic form of :func:`build_laplace_threshold`, calibrated the same way.

    Returns
    -------
    opendp.mod.Measurement
    """
    dp = _dp()
    space = dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance()

    def chain(t):
        return space >> dp.t.then_count_by(TV=int) >> dp.m.then_noise_threshold(
            dp.approximate(dp.max_divergence()), LAPLACE_THRESHOLD_SCALE, t)

    return chain(dp.binary_search_param(chain, d_in=1, d_out=(EPSILON, DELTA), bounds=(1, 100), T=int))


ALP_SCALE = 1.0
"""``scale`` of ``alp_queryable``: OpenDP documents it as "equal to epsilon/sensitivity", and its map
gives epsilon = 1 at ``count_by``'s distance (a binary search would build dozens of sketches)."""


def build_alp_queryable():
    """``count_by >> alp_queryable(scale=1, total_limit=10, value_limit=10)``: Aumüller, Lebeda,
    Pagh's sparse-vector projection of the categories' counts; ``map(1) = 1``.

    Returns
    -------
    opendp.mod.Measurement
        ``Vec<i32>`` -> a ``Queryable`` answering a count for a key, ``MaxDivergence``.
    """
    dp = _dp()
    space = dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance()
    return space >> dp.t.then_count_by(TV=int) >> dp.m.then_alp_queryable(
        ALP_SCALE, total_limit=MAX_RECORDS, value_limit=MAX_RECORDS)


def _query_keys(queryable) -> list:
    return [float(queryable(k)) for k in (0, 1, 2)]


def build_canonical_noise():
    """``clamp((0, 1)) >> sum >> canonical_noise(d_in=sum.map(1), d_out=(1, 1e-5))``.

    Returns
    -------
    opendp.mod.Measurement
        Output measure ``Approximate(MaxDivergence)``.
    """
    dp = _dp()
    total = _floats(dp) >> dp.t.then_clamp((0.0, 1.0)) >> dp.t.then_sum()
    return total >> dp.m.then_canonical_noise(d_in=total.map(1), d_out=(EPSILON, DELTA))


def build_randomized_response():
    """``make_randomized_response([0, 1, 2], prob)``, prob so that ``map(1) <= 1``.

    Returns
    -------
    opendp.mod.Measurement
        ``i32`` under ``DiscreteDistance`` -> ``i32``, ``MaxDivergence``.
    """
    dp = _dp()
    return dp.binary_search_chain(lambda p: dp.m.make_randomized_response([0, 1, 2], prob=p, T=int),
                                  d_in=1, d_out=EPSILON, bounds=(0.34, 1.0))


def build_randomized_response_bool():
    """``make_randomized_response_bool(prob)``, prob so that ``map(1) <= 1``.

    Returns
    -------
    opendp.mod.Measurement
    """
    dp = _dp()
    return dp.binary_search_chain(lambda p: dp.m.make_randomized_response_bool(prob=p),
                                  d_in=1, d_out=EPSILON, bounds=(0.5, 1.0))


def build_randomized_response_bitvec():
    """``make_randomized_response_bitvec(bitvector_domain(max_weight=1), discrete_distance(), f)``,
    the flip probability ``f`` so that ``map(1) <= 1``.

    Returns
    -------
    opendp.mod.Measurement
        Bytes (8 bits) -> bytes, ``MaxDivergence``.
    """
    dp = _dp()
    space = dp.bitvector_domain(max_weight=1), dp.discrete_distance()
    return dp.binary_search_chain(lambda f: dp.m.make_randomized_response_bitvec(*space, f=f),
                                  d_in=1, d_out=EPSILON, bounds=(0.01, 1.0))


def _scores(dp):
    return _floats(dp) >> dp.t.then_quantile_score_candidates(CANDIDATES, alpha=0.5)


def build_noisy_max():
    """``quantile_score_candidates >> noisy_max(max_divergence(), scale)``, ``map(1) <= 1``.

    Returns
    -------
    opendp.mod.Measurement
        ``Vec<f64>`` -> the index of the selected candidate, ``MaxDivergence``.
    """
    dp = _dp()
    return dp.binary_search_chain(lambda s: _scores(dp) >> dp.m.then_noisy_max(dp.max_divergence(), s),
                                  d_in=1, d_out=EPSILON)


def build_noisy_max_zcdp():
    """``quantile_score_candidates >> noisy_max(zero_concentrated_divergence(), scale)``
    (Gumbel noise), converted as :func:`build_gaussian_sum`, ``map(1) <= (1, 1e-5)``.

    Returns
    -------
    opendp.mod.Measurement
    """
    dp = _dp()
    return dp.binary_search_chain(
        lambda s: _approx(dp, _scores(dp) >> dp.m.then_noisy_max(dp.zero_concentrated_divergence(), s)),
        d_in=1, d_out=(EPSILON, DELTA))


def build_noisy_top_k():
    """``quantile_score_candidates >> noisy_top_k(max_divergence(), k=2, scale)``, ``map(1) <= 1``.

    Returns
    -------
    opendp.mod.Measurement
        The indices of the two selected candidates, in order.
    """
    dp = _dp()
    return dp.binary_search_chain(
        lambda s: _scores(dp) >> dp.m.then_noisy_top_k(dp.max_divergence(), k=2, scale=s), d_in=1, d_out=EPSILON)


def build_report_noisy_max_gumbel():
    """``quantile_score_candidates >> report_noisy_max_gumbel(scale)`` (deprecated since OpenDP
    0.14), ``map(1) <= 1``.

    Returns
    -------
    opendp.mod.Measurement
    """
    import warnings  # noqa: PLC0415

    dp = _dp()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return dp.binary_search_chain(lambda s: _scores(dp) >> dp.m.then_report_noisy_max_gumbel(s),
                                      d_in=1, d_out=EPSILON)


def build_private_quantile():
    """``private_quantile(max_divergence(), CANDIDATES, alpha=0.5, scale)``: the median,
    ``map(1) <= 1``.

    Returns
    -------
    opendp.mod.Measurement
        ``Vec<f64>`` -> the selected candidate (a float), ``MaxDivergence``.
    """
    dp = _dp()
    return dp.binary_search_chain(
        lambda s: _floats(dp) >> dp.m.then_private_quantile(dp.max_divergence(), CANDIDATES, 0.5, s),
        d_in=1, d_out=EPSILON)


# ------------------------------------------------------------------------------ targets

_UNIT = Domain((0.0,), (1.0,))
_ADD_REMOVE = AddRemove(_UNIT, min_size=0, max_size=MAX_RECORDS)
_THRESHOLD_RELATION = AddRemove(_UNIT, min_size=0, max_size=THRESHOLD_MAX_RECORDS)
_MEAN_RELATION = Replace(_UNIT, min_size=MEAN_SIZE, max_size=MEAN_SIZE)
_LOCAL_RELATION = Replace(_UNIT, min_size=1, max_size=1)

_SUM_PAIRS = (([[0.0]], [[0.0], [1.0]]), ([[1.0]] * 9, [[1.0]] * 10))
_MEAN_PAIRS = (([[0.0]] * MEAN_SIZE, [[0.0]] * (MEAN_SIZE - 1) + [[1.0]]),
               ([[1.0]] * MEAN_SIZE, [[1.0]] * (MEAN_SIZE - 1) + [[0.0]]))
_LOCAL_PAIRS = (([[0.0]], [[1.0]]), ([[0.0]], [[0.5]]), ([[0.5]], [[1.0]]))
# the median's scores move most when a record lands on one side of every candidate
_SELECT_PAIRS = (([[0.0]], [[0.0], [1.0]]), ([[0.0], [0.0], [1.0]], [[0.0], [0.0], [1.0], [1.0]]))


def _threshold_pairs(threshold: int):
    # counts just below / at the threshold, and a key that appears from nothing
    return (([[0.0]] * (threshold - 1), [[0.0]] * threshold), ([[0.5]], [[0.5], [0.0]]))


def _target(builder, name, relation, pairs, **kw) -> OpenDPMechanism:
    return with_hints(OpenDPMechanism(builder, name=f"opendp_measurements:{name}", **kw), relation, pairs, ACCEPTS)


ACCEPTS = AcceptedInputs(kinds=tuple(k for k in KINDS if k != "nan"),
                         note="OpenDP's input domain is vector_domain(atom_domain(T=float, nan=False)): NaN is declared "
                              "outside it and not tried; the rest is")
"""The adversarial inputs the measurements are tried on (:mod:`dpaudit.search.adversarial`)."""


def _sum_space():
    """The input space of ``laplace_sum``: the public clamp bounds may be set, as floats or as integers
    (then the records are ``i64`` and the chain is ``clamp >> sum >> laplace`` on integers, OpenDP's
    integer sum and discrete Laplace), near the type limits; OpenDP's binary search sets the scale."""
    from ...datasets import InputSpace

    def build(bounds=(0.0, 1.0)):
        lo, hi = bounds
        integer = isinstance(lo, int) and isinstance(hi, int)

        def builder():
            dp = _dp()
            atom = dp.atom_domain(T="i64") if integer else dp.atom_domain(T=float, nan=False)
            dom = dp.vector_domain(atom), dp.symmetric_distance()
            return dp.binary_search_chain(
                lambda s: dom >> dp.t.then_clamp((lo, hi)) >> dp.t.then_sum() >> dp.m.then_laplace(s),
                d_in=1, d_out=EPSILON)

        def pre(d):
            col = np.asarray(d).reshape(len(d), -1)[:, 0] if len(d) else []
            return [int(v) for v in col] if integer else [float(v) for v in col]

        return OpenDPMechanism(builder, name=f"opendp_measurements:laplace_sum(bounds={bounds!r})", preprocess=pre)

    return InputSpace(build=build, bounds="bounds", default_bounds=(0.0, 1.0), dtypes=("float64", "int64"),
                      note="clamp bounds of T=float or T=int (i64) records, OpenDP's sum and Laplace")


laplace_sum = _target(build_laplace_sum, "laplace_sum", _ADD_REMOVE, _SUM_PAIRS)
from dataclasses import replace as _replace  # noqa: E402

laplace_sum.accepts = _replace(ACCEPTS, space=_sum_space())
"""``clamp >> sum >> laplace`` on floats in [0, 1]: 1-DP by OpenDP's map (``d_in = 1``)."""
laplace_mean = _target(build_laplace_mean, "laplace_mean", _MEAN_RELATION, _MEAN_PAIRS, d_in=2)
"""``clamp >> mean >> laplace`` on 5 floats in [0, 1]: 1-DP for a replaced record (``d_in = 2``)."""
laplace_count = _target(build_laplace_count, "laplace_count", _ADD_REMOVE, _SUM_PAIRS)
"""``count >> laplace``: the discrete Laplace on an integer count, 1-DP."""
geometric = _target(build_geometric, "geometric", _ADD_REMOVE, _SUM_PAIRS)
"""``count >> geometric``: 1-DP."""
geometric_bounded = _target(build_geometric_bounded, "geometric_bounded", _ADD_REMOVE, _SUM_PAIRS)
"""``count >> geometric(bounds=(0, 10))``: the constant-time form, 1-DP."""
gaussian_sum = _target(build_gaussian_sum, "gaussian_sum", _ADD_REMOVE, _SUM_PAIRS)
"""``clamp >> sum >> gaussian`` on floats: rho-zCDP converted by OpenDP to (1, 1e-5)-DP."""
gaussian_count = _target(build_gaussian_count, "gaussian_count", _ADD_REMOVE, _SUM_PAIRS)
"""``count >> gaussian`` (discrete Gaussian): rho-zCDP converted by OpenDP to (1, 1e-5)-DP."""
laplace_threshold = _target(
    build_laplace_threshold, "laplace_threshold", _THRESHOLD_RELATION, _threshold_pairs(12),
    preprocess=_categories, postprocess=_key_counts)
"""``count_by >> laplace_threshold`` on the records' categories; counts of keys 0, 1, 2 (0: not released)."""
gaussian_threshold = _target(
    build_gaussian_threshold, "gaussian_threshold", _THRESHOLD_RELATION, _threshold_pairs(GAUSSIAN_THRESHOLD),
    preprocess=_counts, postprocess=_key_counts, d_in=(1, 1, 1))
"""``gaussian_threshold`` on the categories' counts: converted by OpenDP to (about 1, 1e-5)-DP."""
noise_sum = _target(build_noise_sum, "noise_sum", _ADD_REMOVE, _SUM_PAIRS)
"""``clamp >> sum >> noise(max_divergence())`` on floats: 1-DP (the generic form of ``laplace_sum``)."""
noise_threshold = _target(
    build_noise_threshold, "noise_threshold", _THRESHOLD_RELATION, _threshold_pairs(12),
    preprocess=_categories, postprocess=_key_counts)
"""``count_by >> noise_threshold(approximate(max_divergence()))``: the generic form of ``laplace_threshold``."""
alp_queryable = _target(build_alp_queryable, "alp_queryable", _ADD_REMOVE,
                        (([[0.0]] * 9, [[0.0]] * 10), ([[0.5]], [[0.5], [0.0]])),
                        preprocess=_categories, postprocess=_query_keys)
"""``count_by >> alp_queryable``: 1-DP; releases the queryable's answers for keys 0, 1, 2."""
canonical_noise = _target(build_canonical_noise, "canonical_noise", _ADD_REMOVE, _SUM_PAIRS)
"""``clamp >> sum >> canonical_noise``: (1, 1e-5)-DP by construction (Tulap noise)."""
randomized_response = _target(build_randomized_response, "randomized_response", _LOCAL_RELATION, _LOCAL_PAIRS,
                              preprocess=_first_category)
"""``make_randomized_response([0, 1, 2], prob)`` on one record's category: 1-DP."""
randomized_response_bool = _target(build_randomized_response_bool, "randomized_response_bool", _LOCAL_RELATION,
                                   _LOCAL_PAIRS, preprocess=_first_bool)
"""``make_randomized_response_bool(prob)`` on ``record >= 1/2``: 1-DP."""
randomized_response_bitvec = _target(build_randomized_response_bitvec, "randomized_response_bitvec",
                                     _LOCAL_RELATION, _LOCAL_PAIRS, preprocess=_one_hot_bytes,
                                     postprocess=_unpack_bits)
"""``make_randomized_response_bitvec`` on one record's category one-hot in 8 bits: 1-DP; releases 8 bits."""
noisy_max = _target(build_noisy_max, "noisy_max", _ADD_REMOVE, _SELECT_PAIRS)
"""``quantile_score_candidates >> noisy_max(max_divergence())``: 1-DP; releases an index."""
noisy_max_zcdp = _target(build_noisy_max_zcdp, "noisy_max_zcdp", _ADD_REMOVE, _SELECT_PAIRS)
"""``... >> noisy_max(zero_concentrated_divergence())`` (Gumbel): converted by OpenDP to (1, 1e-5)-DP."""
noisy_top_k = _target(build_noisy_top_k, "noisy_top_k", _ADD_REMOVE, _SELECT_PAIRS)
"""``... >> noisy_top_k(max_divergence(), k=2)``: 1-DP; releases two indices in order."""
report_noisy_max_gumbel = _target(build_report_noisy_max_gumbel, "report_noisy_max_gumbel", _ADD_REMOVE,
                                  _SELECT_PAIRS)
"""``... >> report_noisy_max_gumbel`` (deprecated): 1-DP; releases an index."""
private_quantile = _target(build_private_quantile, "private_quantile", _ADD_REMOVE, _SELECT_PAIRS)
"""``private_quantile(max_divergence(), candidates, alpha=0.5)``: the median, 1-DP."""

TARGETS = {name: globals()[name] for name in __all__[5:]}
"""The targets of this module by name."""

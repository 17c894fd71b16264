"""Tests of the zoo of mean mechanisms (paper 000 §6.1): registry, validation, output distributions.

Moment checks compare sample moments with closed forms (expectations over the noisy count by
numerical integration) within 5 standard errors; all seeds are fixed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

from dpaudit.privacy.claims import ApproxDP, PureDP
from dpaudit.datasets import AddRemove, Domain
from dpaudit.errors import DPAuditError, MechanismError
from dpaudit.mechanisms import Mechanism, draw
from dpaudit.mechanisms.zoo import ZooEntry, entries, families, get
from dpaudit.mechanisms.zoo.mean import (
    DPGaussian,
    DPLaplace,
    NonDPGaussian1,
    NonDPGaussian2,
    NonDPLaplace1,
    NonDPLaplace2,
    gaussian_sigma_factor,
    noisy_count,
)

NAMES = {
    "dp-laplace": (DPLaplace, "pure", True),
    "non-dp-laplace-1": (NonDPLaplace1, "pure", False),
    "non-dp-laplace-2": (NonDPLaplace2, "pure", False),
    "dp-gaussian": (DPGaussian, "approx", True),
    "non-dp-gaussian-1": (NonDPGaussian1, "approx", False),
    "non-dp-gaussian-2": (NonDPGaussian2, "approx", False),
}
GAUSSIAN = ["dp-gaussian", "non-dp-gaussian-1", "non-dp-gaussian-2"]
WITNESS = ([[1.0]], [[1.0], [0.0]])
N = 200_000  # vectorised draws: a few milliseconds each


def count_expectation(g, n: int, eps: float) -> float:
    """E[g(n_tilde)] for n_tilde = max(1, n + Laplace(0, 2/eps)), by numerical integration."""
    b = 2.0 / eps
    atom = 0.5 * math.exp(-(n - 1) / b)  # P(n + tau <= 1)
    tail, _ = integrate.quad(lambda t: g(n + t) * math.exp(-abs(t) / b) / (2 * b), 1 - n, np.inf, limit=200)
    return atom * g(1.0) + tail


def assert_close(sample_mean: float, expected: float, se: float, label: str) -> None:
    assert abs(sample_mean - expected) <= 5 * se, (
        f"{label}: sample {sample_mean:.6g}, expected {expected:.6g} (5 SE = {5 * se:.3g})"
    )


# --- registry ---------------------------------------------------------------------------------


def test_entries_lists_the_six_mean_mechanisms():
    listed = {e.name: e for e in entries()}
    assert set(NAMES) <= set(listed)
    names = [e.name for e in entries()]
    assert names == sorted(names)
    for name, (cls, kind, private) in NAMES.items():
        entry = listed[name]
        assert isinstance(entry, ZooEntry)
        assert entry.factory is cls
        assert entry.claim_kind == kind
        assert entry.private is private
        assert entry.relation == "add-remove"
        # The correct means run on the empty dataset (audited by default); the buggy ones divide
        # by the true count and say so.
        assert (entry.min_size, entry.max_size) == ((0, 10) if private else (1, 10))
        assert private or "true count" in entry.min_size_reason
        assert entry.domain == Domain.unit(1)
        assert entry.summary and entry.true_guarantee and entry.source
        assert (entry.bug is None) == private
        assert get(name) is entry


def test_get_unknown_name_lists_the_valid_ones():
    with pytest.raises(DPAuditError, match="non-dp-laplace-1"):
        get("no-such-mechanism")


@pytest.mark.parametrize("name", sorted(NAMES))
def test_witness_pairs_are_valid_neighbours_and_the_documented_pair_comes_first(name):
    entry = get(name)
    pairs = entry.witnesses()
    assert pairs, "every zoo entry needs a witness pair"
    assert entry.witness_pairs[0] == WITNESS
    for pair in pairs:
        assert pair.relation == "add-remove"
        assert abs(len(pair.d0) - len(pair.d1)) == 1
    # The same pairs must also be accepted by a freshly built relation.
    rel = AddRemove(Domain.unit(1), 1, 10)
    for d0, d1 in entry.witness_pairs:
        rel.pair(d0, d1)


@pytest.mark.parametrize("name", sorted(NAMES))
def test_entry_builds_a_named_mechanism_and_its_claim(name):
    entry = get(name)
    mech = entry.mechanism(0.5)
    assert isinstance(mech, Mechanism)
    assert mech.name == name
    assert mech.epsilon == 0.5
    claim = entry.claim(0.5)
    if entry.claim_kind == "pure":
        assert claim == PureDP(0.5)
    else:
        assert entry.default_delta == 1e-5
        assert claim == ApproxDP(0.5, 1e-5)
        assert mech.delta == 1e-5
        assert entry.mechanism(0.5, 1e-3).delta == 1e-3


# --- parameter validation ---------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(NAMES))
@pytest.mark.parametrize("eps", [0.0, -1.0, float("nan"), float("inf"), "one", None])
def test_factories_reject_invalid_epsilon(name, eps):
    cls = NAMES[name][0]
    with pytest.raises(ValueError, match="epsilon"):
        cls(eps, 1e-5)


@pytest.mark.parametrize("name", GAUSSIAN)
@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-5, 1.5, float("nan"), "small"])
def test_gaussian_factories_reject_invalid_delta(name, delta):
    with pytest.raises(ValueError, match="delta"):
        NAMES[name][0](0.5, delta)


@pytest.mark.parametrize("name", ["dp-laplace", "non-dp-laplace-1", "non-dp-laplace-2"])
def test_laplace_factories_accept_delta_zero_and_reject_delta_out_of_range(name):
    cls = NAMES[name][0]
    assert cls(1.0, 0.0).delta == 0.0
    with pytest.raises(ValueError, match="delta"):
        cls(1.0, 1.0)


def test_dp_gaussian_refuses_epsilon_above_two():
    assert DPGaussian(2.0, 1e-5).epsilon == 2.0
    with pytest.raises(ValueError, match=r"epsilon must be <= 2.*2\.5"):
        DPGaussian(2.5, 1e-5)
    with pytest.raises(ValueError, match="<= 2"):
        get("dp-gaussian").mechanism(3.0)


# --- sampling -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(NAMES))
@pytest.mark.parametrize("data", [WITNESS[0], WITNESS[1], [[0.3]] * 10])
def test_output_shape_and_finiteness(name, data):
    mech = get(name).mechanism(0.01)
    out = draw(mech, np.array(data), 5000, np.random.default_rng(0))
    assert out.shape == (5000, 1)
    assert np.all(np.isfinite(out))
    assert mech.sample(np.array(data), 3, np.random.default_rng(0)).shape == (3, 1)


@pytest.mark.parametrize("name", sorted(NAMES))
def test_sampling_is_reproducible_from_rng_alone(name):
    mech = get(name).mechanism(1.0)
    data = np.array(WITNESS[1])
    np.random.seed(1)
    a = draw(mech, data, 1000, np.random.default_rng(42))
    np.random.seed(2)  # the global numpy state must not matter
    b = draw(mech, data, 1000, np.random.default_rng(42))
    c = draw(mech, data, 1000, np.random.default_rng(43))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("name", ["non-dp-laplace-1", "non-dp-laplace-2", "non-dp-gaussian-1", "non-dp-gaussian-2"])
def test_true_count_mechanisms_report_an_empty_dataset(name):
    with pytest.raises(MechanismError, match="at least one record"):
        draw(get(name).mechanism(1.0), np.empty((0, 1)), 10, np.random.default_rng(0))


@pytest.mark.parametrize("name", sorted(NAMES))
def test_vector_records_are_refused(name):
    with pytest.raises(MechanismError, match=r"shape \(n, 1\)"):
        draw(get(name).mechanism(1.0), np.zeros((3, 2)), 10, np.random.default_rng(0))


def test_noisy_count_atom_at_one():
    # P(n_tilde = 1) = P(tau <= 1 - n) = exp(-(n - 1) eps / 2) / 2; n = 2, eps = 1 -> 0.3033.
    nt = noisy_count(2, 1.0, N, np.random.default_rng(3))
    assert nt.shape == (N,) and nt.min() == 1.0
    p = 0.5 * math.exp(-0.5)
    assert_close(np.mean(nt == 1.0), p, math.sqrt(p * (1 - p) / N), "P(n_tilde = 1)")


def test_gaussian_sigma_factor():
    # sqrt(2 ln(1.25e5)) = 4.8448; Dwork & Roth (2014), Thm A.1.
    assert gaussian_sigma_factor(1e-5) == pytest.approx(4.844805, rel=1e-6)


def test_non_dp_laplace_1_moments():
    # [[1.0], [0.0]] at eps = 1: Laplace(0.5, b) with b = 2 / (n eps) = 1.
    out = draw(NonDPLaplace1(1.0), np.array(WITNESS[1]), N, np.random.default_rng(10))[:, 0]
    b = 1.0
    assert_close(out.mean(), 0.5, math.sqrt(2) * b / math.sqrt(N), "mean")
    assert_close(np.abs(out - 0.5).mean(), b, b / math.sqrt(N), "mean absolute deviation")
    # On [[1.0]] at eps = 0.01: Laplace(1, 200).
    out = draw(NonDPLaplace1(0.01), np.array(WITNESS[0]), N, np.random.default_rng(11))[:, 0]
    assert_close(np.abs(out - 1.0).mean(), 200.0, 200.0 / math.sqrt(N), "mean absolute deviation")


def test_non_dp_gaussian_1_moments():
    # [[1.0], [0.0]] at eps = 1, delta = 1e-5: N(0.5, sigma^2), sigma = c * 2 / (2 * 1) = c.
    sigma = gaussian_sigma_factor(1e-5)
    out = draw(NonDPGaussian1(1.0, 1e-5), np.array(WITNESS[1]), N, np.random.default_rng(12))[:, 0]
    assert_close(out.mean(), 0.5, sigma / math.sqrt(N), "mean")
    assert_close(out.std(), sigma, sigma / math.sqrt(2 * N), "standard deviation")


@pytest.mark.parametrize("eps", [0.01, 1.0])
def test_non_dp_laplace_2_moments(eps):
    # S/n + Laplace(2/(n_tilde eps)) on [[1.0], [0.0]]: centre 0.5 exactly (the true count),
    # E|X - 0.5| = E[s], E|X - 0.5|^2 = E[2 s^2], s = 2 / (n_tilde eps).
    n = 2
    es = count_expectation(lambda m: 2.0 / (m * eps), n, eps)
    es2 = count_expectation(lambda m: 2.0 * (2.0 / (m * eps)) ** 2, n, eps)
    out = draw(NonDPLaplace2(eps), np.array(WITNESS[1]), N, np.random.default_rng(13))[:, 0]
    dev = np.abs(out - 0.5)
    assert_close(dev.mean(), es, math.sqrt((es2 - es**2) / N), "mean absolute deviation")
    assert_close(out.mean(), 0.5, math.sqrt(es2 / N), "mean")


@pytest.mark.parametrize("eps", [0.01, 1.0])
def test_non_dp_gaussian_2_moments(eps):
    # S/n + N(0, sigma(n_tilde)^2): E|X - 0.5| = sqrt(2/pi) E[sigma], E (X - 0.5)^2 = E[sigma^2].
    n, c = 2, gaussian_sigma_factor(1e-5)
    esig = count_expectation(lambda m: c * 2.0 / (m * eps), n, eps)
    esig2 = count_expectation(lambda m: (c * 2.0 / (m * eps)) ** 2, n, eps)
    out = draw(NonDPGaussian2(eps, 1e-5), np.array(WITNESS[1]), N, np.random.default_rng(14))[:, 0]
    dev = np.abs(out - 0.5)
    expected = math.sqrt(2 / math.pi) * esig
    assert_close(dev.mean(), expected, math.sqrt((esig2 - expected**2) / N), "mean absolute deviation")


@pytest.mark.parametrize("eps", [0.01, 1.0])
def test_dp_laplace_moments(eps):
    # S/n_tilde + Laplace(2/(n_tilde eps)) on [[0.0], [1.0]] (S = 1, n = 2):
    # E[X] = E[1/n_tilde], Var[X] = Var[1/n_tilde] + E[2 (2/(n_tilde eps))^2].
    n = 2
    m1 = count_expectation(lambda m: 1.0 / m, n, eps)
    m2 = count_expectation(lambda m: 1.0 / m**2, n, eps)
    noise = count_expectation(lambda m: 2.0 * (2.0 / (m * eps)) ** 2, n, eps)
    out = draw(DPLaplace(eps), np.array([[0.0], [1.0]]), N, np.random.default_rng(15))[:, 0]
    assert_close(out.mean(), m1, math.sqrt((m2 - m1**2 + noise) / N), "mean")
    # The sum enters: on [[0.0], [0.0]] the output is pure noise centred at 0.
    zero = draw(DPLaplace(eps), np.array([[0.0], [0.0]]), N, np.random.default_rng(16))[:, 0]
    assert_close(zero.mean(), 0.0, math.sqrt(noise / N), "mean at S = 0")


@pytest.mark.parametrize("eps", [0.01, 1.0, 2.0])
def test_dp_gaussian_moments(eps):
    # S/n_tilde + N(0, sigma^2), sigma = c 2/(n_tilde eps): E[X] = E[1/n_tilde] (S = 1),
    # E[(X - 1/n_tilde)^2] = E[sigma^2]; check the mean and the second moment about 0.
    n, c = 2, gaussian_sigma_factor(1e-5)
    m1 = count_expectation(lambda m: 1.0 / m, n, eps)
    m2 = count_expectation(lambda m: 1.0 / m**2, n, eps)
    s2 = count_expectation(lambda m: (c * 2.0 / (m * eps)) ** 2, n, eps)
    s4 = count_expectation(lambda m: 3 * (c * 2.0 / (m * eps)) ** 4, n, eps)
    out = draw(DPGaussian(eps, 1e-5), np.array([[0.0], [1.0]]), N, np.random.default_rng(17))[:, 0]
    assert_close(out.mean(), m1, math.sqrt((m2 - m1**2 + s2) / N), "mean")
    # E[X^2] = E[1/n_tilde^2] + E[sigma^2]. Var[X^2] <= E[X^4] - E[X^2]^2 with
    # E[X^4] = E[a^4 + 6 a^2 sigma^2 + 3 sigma^4] <= 1 + 6 E[sigma^2] + E[3 sigma^4] (a = 1/n_tilde <= 1):
    # a conservative standard error.
    ex2 = m2 + s2
    assert_close(np.mean(out**2), ex2, math.sqrt((s4 + 6 * s2 + 1 - ex2**2) / N), "second moment")



# --- the whole zoo: SVT, noisy max, median, DP-GD, randomized response; violates_for ----------

NEW_ENTRIES = {
    "svt1": True, "svt2": True, "svt3": False, "svt4": False, "svt5": False, "svt6": False,
    "noisy-max-laplace": True, "noisy-max-gumbel": True, "noisy-max-half-noise": False, "noisy-max-value": False,
    "dp-median": True,
    "dp-gd": True, "scaled-gd": False, "wrong-sensitivity-sgd": False,
    "randomized-response": True, "randomized-response-wrong-flip": False,
}


def test_new_entries_are_registered_with_their_privacy():
    listed = {e.name: e for e in entries()}
    assert set(NEW_ENTRIES) <= set(listed)
    for name, private in NEW_ENTRIES.items():
        assert listed[name].private is private, name


@pytest.mark.parametrize("name", sorted(e.name for e in entries()))
def test_every_entry_is_well_formed_and_samples_its_witnesses(name):
    entry = get(name)
    assert entry.name == name and name == name.lower() and " " not in name
    assert entry.claim_kind in ("pure", "approx", "renyi")
    assert entry.relation in ("add-remove", "replace")
    # Add/remove entries audit the empty dataset unless they say why they cannot.
    assert entry.min_size == (0 if entry.relation == "add-remove" and not entry.min_size_reason else 1)
    assert entry.summary and entry.true_guarantee and entry.source
    assert (entry.bug is None) == entry.private
    assert entry.witness_pairs, "every zoo entry needs a witness pair"
    if entry.claim_kind == "approx":
        assert entry.default_delta is not None
    if entry.claim_kind == "renyi":
        assert entry.default_alpha is not None and entry.claim(0.5).alpha == entry.default_alpha
    mech = entry.mechanism(0.5)
    assert mech.name == name
    claim = entry.claim(0.5)
    assert claim.epsilon == 0.5
    rng = np.random.default_rng(0)
    for pair in entry.witnesses():
        x0 = draw(mech, pair.d0, 64, rng)
        x1 = draw(mech, pair.d1, 64, rng, output_dim=x0.shape[1])
        assert x0.shape == x1.shape and np.all(np.isfinite(x0)) and np.all(np.isfinite(x1))
    assert entry.violates(0.5) is (not entry.private and (entry.violates_for is None or entry.violates_for[0] < 0.5 < entry.violates_for[1]))


def test_violates_for_marks_where_the_count_bugs_violate():
    lap2, gau2 = get("non-dp-laplace-2"), get("non-dp-gaussian-2")
    assert lap2.violates_for == (0.0, 0.96)
    assert [lap2.violates(e) for e in (0.01, 0.5, 0.95, 0.97, 1.0)] == [True, True, True, False, False]
    assert gau2.violates_for == (0.0, 0.2)
    assert [gau2.violates(e) for e in (0.01, 0.19, 0.2, 1.0)] == [True, True, False, False]
    for name in ("non-dp-laplace-1", "non-dp-gaussian-1", "svt4"):
        assert get(name).violates_for is None and get(name).violates(1.0) and get(name).violates(0.01)
    for name in ("dp-laplace", "svt1", "dp-gd"):
        assert get(name).violates_for is None and not get(name).violates(0.01)


@pytest.mark.parametrize("kwargs, match", [
    ({"private": True, "bug": None, "violates_for": (0.0, 1.0)}, "only for non-private"),
    ({"private": False, "bug": "x", "violates_for": (1.0, 0.5)}, "eps_low < eps_high"),
    ({"private": False, "bug": "x", "violates_for": (-1.0, 0.5)}, "eps_low < eps_high"),
    ({"private": False, "bug": "x", "violates_for": ("a", "b")}, "pair"),
    ({"private": False, "bug": "x", "violates_for": (0.1,)}, "pair"),
])
def test_violates_for_is_validated(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ZooEntry(name="x", factory=DPLaplace, claim_kind="pure", summary="s", true_guarantee="t", **kwargs)


def test_the_readme_counts_the_zoo_right():
    import re
    from pathlib import Path

    readme = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text().split())
    names = [e.name for e in entries()]
    dpsniper = [n for n in names if n.startswith("dpsniper-")]
    total = re.search(r"`dpaudit zoo` lists (\d+) reference mechanisms", readme)
    own = re.search(r"(\d+) are dpaudit's own", readme)
    others = re.search(r"The other (\d+) are DP-Sniper's suite", readme)
    assert total and own and others, "the README's zoo paragraph changed: keep its counts testable"
    assert int(total.group(1)) == len(names)
    assert int(own.group(1)) == len(names) - len(dpsniper)
    assert int(others.group(1)) == len(dpsniper)


def test_families_group_every_entry_once():
    grouped = families()
    assert all(grouped) and "" not in grouped  # every entry is in a titled family
    listed = [e.name for items in grouped.values() for e in items]
    assert sorted(listed) == [e.name for e in entries()]
    assert [e.name for e in grouped["report noisy max"]][0] == "noisy-max-laplace"  # catalogue order: the correct one first


def test_the_catalogue_is_read_from_its_data_file_and_names_are_checked(tmp_path):
    # issue 38: the catalogue's table lives in catalogue.toml; every entry there is registered, in
    # order, and a name that is not an object of a zoo module is refused with the name
    from dpaudit.mechanisms.zoo import catalogue

    with open(catalogue.CATALOGUE, "rb") as fh:
        table = catalogue._toml.load(fh)
    specs = [(f["title"], e) for f in table["family"] for e in f["entry"]]
    assert len(specs) == len(catalogue.entries()) == 53
    registered = [e for group in catalogue.families().values() for e in group]
    assert [e.family for e in registered] == [title for title, _ in specs]
    assert catalogue._zoo_object("mean.DPLaplace").name == "dp-laplace"
    with pytest.raises(DPAuditError, match="'mean.NoSuchMechanism'|has no 'NoSuchMechanism'"):
        catalogue._zoo_object("mean.NoSuchMechanism")
    with pytest.raises(DPAuditError, match="'os.system'"):
        catalogue._zoo_object("os.system")
    bad = tmp_path / "bad.toml"
    bad.write_text('[[family]]\ntitle = "t"\n[[family.entry]]\nfactory = "mean.DPLaplace"\nclaim_kind = "pure"\n'
                   'private = true\nsummary = "s"\ntrue_guarantee = "g"\n')
    with pytest.raises(ValueError, match="registered twice"):
        catalogue._load(bad)

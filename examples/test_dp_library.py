"""What a DP library's own test suite can look like with dpaudit's pytest plugin.

Run it (from the repository root)::

    pytest examples/test_dp_library.py -p dpaudit.pytest_plugin --dpaudit-report-dir dpaudit-reports

(``-p dpaudit.pytest_plugin`` is not needed once dpaudit is installed: its ``pytest11`` entry
point loads the plugin.) It audits IBM diffprivlib's mean used correctly and used wrongly
(``dpaudit.examples.diffprivlib_mean``: ``broken_mean`` takes its bounds from the private data),
and an OpenDP sum calibrated correctly and with a sensitivity mistake
(``dpaudit.examples.opendp_sum``). The broken ones are ``xfail(strict=True,
raises=AssertionError)``: the test suite stays green while dpaudit finds them, and turns red if
it ever stops finding them.

diffprivlib is called once per output (about 90 µs a call), so the audits here use a few
thousand samples: enough for these mechanisms, whose flaws show at their witness pairs (the
broken mean's hockey-stick divergence is 1 at ``[[0.0]]`` vs ``[[1.0]]``). The whole file takes
about 15 s on 2 CPU cores.
"""

import importlib.util

import pytest

from dpaudit import PureDP

diffprivlib = pytest.importorskip("diffprivlib")

from dpaudit.examples.diffprivlib_mean import broken_mean, dpl_mean  # noqa: E402

DIFFPRIVLIB = dict(samples=4_000, trials=2)  # ~90 µs per diffprivlib call: 16,000 calls per audit


def test_diffprivlib_mean_is_1_dp(dp_audit):
    """diffprivlib.tools.mean(x, epsilon=1, bounds=(0, 1)) under replace-one adjacency (its own)."""
    # the hockey-stick tester alone: diffprivlib's float64 outputs leak through their bit patterns
    # (docs/floating_point.md), which the default's float screen would report
    result = dp_audit(dpl_mean, PureDP(1.0), tester="hockey-stick", **DIFFPRIVLIB)
    assert result.verdict == "no violation found"


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="bounds taken from the private data")
def test_diffprivlib_mean_without_bounds_is_not_1_dp(dp_audit):
    dp_audit(broken_mean, PureDP(1.0), **DIFFPRIVLIB)


# The same audit declared with the marker: it runs before the test's body.
@pytest.mark.xfail(strict=True, raises=AssertionError, reason="bounds taken from the private data")
@pytest.mark.dp_audit("dpaudit.examples.diffprivlib_mean:broken_mean", epsilon=1.0, **DIFFPRIVLIB)
def test_broken_mean_by_marker():
    pass


needs_opendp = pytest.mark.skipif(importlib.util.find_spec("opendp") is None, reason="needs OpenDP")


@needs_opendp
@pytest.mark.dp_audit("dpaudit.examples.opendp_sum:dp_sum", epsilon=1.0, samples=5_000, trials=2)
def test_opendp_sum_is_1_dp(dp_audit):
    # The marker's audit ran first; its result is here (OpenDP's noise cannot be seeded).
    assert dp_audit.results[0].claim == PureDP(1.0)


@needs_opendp
@pytest.mark.xfail(strict=True, raises=AssertionError, reason="d_in=1 given where the sensitivity is 10")
def test_opendp_scalar_laplace_with_wrong_d_in(dp_audit):
    dp_audit("dpaudit.examples.opendp_sum:wrong_d_in_sum", epsilon=1.0, samples=5_000, trials=2)

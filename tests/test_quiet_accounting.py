"""dp_accounting's "_compute_log_a_frac failed to converge" lines stay off the user's terminal (issue 44,
item 6), only while dpaudit calls dp_accounting.

The DP-SGD examples of the README (q = 0.1, sigma = 1) printed five of them each, and a many-run profile
check at q = 0.5, sigma = 8 hundreds: each is an RDP order left out of a minimum over orders, so the
upper bound is taken over fewer orders and stays sound; nothing for the user to do. The filter is
scoped: a direct call of dp_accounting outside dpaudit still logs as dp_accounting does.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import sys

from dpaudit.privacy.quiet import DROPPED, quiet_dp_accounting

NOISE = "_compute_log_a_frac failed to converge"


def _rdp_epsilon_directly(q: float, sigma: float, steps: int) -> float:
    import dp_accounting
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    acc = rdp.RdpAccountant()
    event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))
    acc.compose(dp_accounting.SelfComposedDpEvent(event, steps))
    return acc.get_epsilon(1e-5)


@contextlib.contextmanager
def absl_records():
    """The messages the ``absl`` logger (dp_accounting's) hands to its handlers, whatever other tests
    did to logging (a handler of our own on that logger, its level at WARNING, not disabled)."""
    log = logging.getLogger("absl")
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    handler = Keep(level=logging.DEBUG)
    old = (log.level, log.disabled)
    log.setLevel(logging.WARNING)
    log.disabled = False
    log.addHandler(handler)
    try:
        yield seen
    finally:
        log.removeHandler(handler)
        log.level, log.disabled = old


def test_dpaudits_accountant_logs_nothing_and_dp_accounting_alone_still_does():
    from dpaudit.accounting import Composition, get_delta, get_epsilon

    before = DROPPED["count"]
    with absl_records() as seen:
        res = get_epsilon(Composition.dpsgd(1.0, 0.1, 40), 1e-5)  # the README's DP-SGD examples
        get_delta(Composition.dpsgd(8.0, 0.5, 20), 1.0)  # the many-run harness's profile check
    assert res.epsilon > 0 and not [m for m in seen if NOISE in m], seen
    assert DROPPED["count"] > before  # dropped, not absent: dp_accounting did log them
    with absl_records() as seen:
        _rdp_epsilon_directly(0.1, 1.0, 40)  # outside dpaudit: dp_accounting's own logging, untouched
    assert [m for m in seen if NOISE in m]


def test_the_filter_passes_other_records_and_nests():
    log = logging.getLogger("absl")
    with absl_records() as seen:
        with quiet_dp_accounting():
            with quiet_dp_accounting():
                log.warning("%s after 1000 iterations", NOISE)
                log.warning("Negative Renyi divergence of -1e-9")  # may matter: passed on
            log.warning("%s inside the outer one", NOISE)
        log.warning("%s after it", NOISE)
    text = "\n".join(seen)
    assert "after 1000 iterations" not in text and "inside the outer one" not in text
    assert "Negative Renyi divergence" in text and "after it" in text
    from dpaudit.privacy import quiet

    assert quiet._FILTER not in log.filters  # removed when the last caller left


def test_a_dpsgd_audit_prints_no_absl_line_on_stderr(tmp_path):
    """The README's torch.func example's accountant (its audit's summary), in a fresh interpreter."""
    code = ("from dpaudit.accounting import Composition, get_epsilon\n"
            "print(get_epsilon(Composition.dpsgd(1.0, 0.1, 20), 1e-5).epsilon)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert NOISE not in res.stderr and "WARNING" not in res.stderr, res.stderr

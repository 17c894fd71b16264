"""The online audit: the checks of :mod:`dpaudit.dpsgd.checks` (and the certified one-run bound
at checkpoints) evaluated while training runs, anytime-valid.

``canaries.monitor(steps=T)`` attaches an :class:`OnlineAudit` to a
:class:`~dpaudit.dpsgd.Canaries` (``OpacusCanaries.monitor`` likewise); every
:meth:`~dpaudit.dpsgd.Canaries.observe` then runs

* the **per-step tests** of the step just observed (its noise per tensor and pooled, its largest
  clipping excess, a non-finite update) at ``level / T`` each (``level`` the test's part of
  ``beta``, the same split as the audit after training);
* at **checkpoints** ``1, 2, 4, ..., T`` (fixed before the run), the tests pooled over the steps
  so far (noise per tensor and overall, tails, each kind's mean contribution, the paired
  canaries, non-finite association and contrast, the scale tests, the sampler) and the certified
  one-run bounds against the accountant's epsilon *for the steps so far*, each at ``level / J``
  (``J`` checkpoints).

Union bound over all the tests it will ever run: a correct run is accused, at whatever step the
user stops (or is stopped), with probability at most ``beta`` — the guarantee of a sequential test
(Ville 1939), here by alpha spending over a fixed schedule rather than e-values: the per-step tests
pay nothing for it (they are the audit's own Bonferroni over the steps), the pooled ones a factor
``J ~ log2 T`` of their level. Without a declared ``T`` the levels decrease as ``1 / (t (t + 1))``
per step and ``1 / ((j + 1)(j + 2))`` per checkpoint ``2^j``.

References: Ville (1939); Robbins (1970); Bonferroni; ``docs/dpsgd.md`` §10.
"""

from __future__ import annotations

import time
import warnings
from typing import Optional

from .._validate import check_delta, check_int, check_probability
from .checks import DPSGDViolation, Finding, Schedule

__all__ = ["OnlineAudit"]


class OnlineAudit:
    """Anytime-valid checks of a :class:`~dpaudit.dpsgd.Canaries` run while it trains (module
    docstring). Made by :meth:`Canaries.monitor <dpaudit.dpsgd.Canaries.monitor>`.

    Parameters
    ----------
    canaries : Canaries
    steps : int, optional
        Steps the accountant is told (``T``).
    beta : float
        Probability that a correct run is ever accused by this monitor.
    delta : float
        Of the certified bounds.
    action : "raise", "warn", "record" or callable
        On a new finding: raise :class:`~dpaudit.dpsgd.checks.DPSGDViolation`, warn
        (``RuntimeWarning``), only record, or call ``action(finding)``.
    bounds : bool
        Compute the certified bounds at the checkpoints.
    scores : sequence of str
        Score functions of those bounds (default ``("lr",)``: the cheapest; the audit after
        training uses all three).

    Attributes
    ----------
    findings : list of Finding
        The first rejection of each test, in the order found (``at_step``: the step it was found
        after).
    bound_history : list of (int, dict)
        ``(steps so far, {kind: certified epsilon bound}, accountant epsilon)`` at each checkpoint.
    seconds : float
        Wall time spent in the monitor (the per-step overhead is ``seconds / steps``).
    cpu_seconds : float
        CPU time of this process spent in the monitor (``time.process_time``; on a loaded machine
        the fairer measure of its cost).

    Raises
    ------
    ValueError
        On bad ``steps``, ``beta``, ``delta`` or ``action``.
    """

    def __init__(self, canaries, *, steps: Optional[int] = None, beta: float = 0.05, delta: float = 1e-5,
                 action="raise", bounds: bool = True, scores=("lr",)):
        self.canaries = canaries
        self.schedule = Schedule(0 if steps is None else check_int(steps, "steps", 1))
        self.beta = check_probability(beta, "beta")
        self.delta = check_delta(delta)
        if not (callable(action) or action in ("raise", "warn", "record")):
            raise ValueError(f"action must be 'raise', 'warn', 'record' or a callable, got {action!r}")
        self.action = action
        self.bounds = bool(bounds)
        self.scores = tuple(scores)
        self.levels = canaries._levels(self.beta)
        self.findings: list = []
        self.bound_history: list = []
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self._seen: set = set()
        self._warned_past = False

    @property
    def steps_checked(self) -> int:
        """Observed steps the monitor has seen."""
        return self.canaries.steps

    @property
    def violated(self) -> bool:
        """Whether any check has failed so far."""
        return bool(self.findings)

    @property
    def first_step(self) -> Optional[int]:
        """The step after which the first violation was found (``None`` if none)."""
        return min((f.at_step for f in self.findings), default=None)

    def _report(self, f: Finding) -> None:
        key = (f.check, f.test)
        if key in self._seen:
            return
        self._seen.add(key)
        self.findings.append(f)
        if self.action == "raise":
            raise DPSGDViolation(f)
        if self.action == "warn":
            warnings.warn(f"dpaudit: DP-SGD check '{f.check}' failed at step {f.at_step}: {f.message}",
                          RuntimeWarning, stacklevel=4)
        elif callable(self.action):
            self.action(f)

    def _after_nonfinite(self, step_no: int, tensors: tuple, nf: bool) -> None:
        c = self.canaries
        self._report(c._finding("nonfinite", "update", 0.0, 0.0, {"tensors": tensors, "nf": nf}, steps=(step_no,),
                                at_step=step_no))

    def _after_step(self) -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            self._check()
        finally:
            self.seconds += time.perf_counter() - t0
            self.cpu_seconds += time.process_time() - c0

    def _check(self) -> None:
        c = self.canaries
        n = c.steps
        i = n - 1
        no = c._step_no[i]
        w = self.schedule.step_weight(n)
        if w == 0 and not self._warned_past:
            self._warned_past = True
            warnings.warn(f"dpaudit: step {n} is past the {self.schedule.steps} steps the monitor was told; the "
                          f"accountant's claim is for {self.schedule.steps} steps and the per-step tests stop here",
                          RuntimeWarning, stacklevel=4)
        omega = self.schedule.checkpoint_weight(n)
        scale = 1.0
        if ("units", "noise_upper") in self.levels and (w > 0 or omega > 0):
            # the noise bound at step n holds but with probability level * w_n (checkpoints use it too)
            scale = c._noise_bound(n, self.levels[("units", "noise_upper")] * max(w, 1e-300))
        if w > 0:
            res = c._step_tests[i]
            for (chk, test) in c._STEP_TESTS:
                if (chk, test) not in self.levels:
                    continue
                p, info = c._step_finding_info(res, test, i, scale)
                lv = self.levels[(chk, test)] * w
                if p <= lv:
                    self._report(c._finding(chk, test, p, lv, info, steps=(no,), at_step=no))
        if omega <= 0:
            return
        for (chk, test), (p, info) in c._pooled_tests(n, scale).items():
            lv = self.levels[(chk, test)] * omega
            if p <= lv:
                self._report(c._finding(chk, test, p, lv, info, at_step=no))
        if self.bounds:
            self._bounds(n, omega, no)

    def _bounds(self, n: int, omega: float, no: int) -> None:
        from .audit import _claimed_accountant, audit_run

        c = self.canaries
        kinds = [k for (chk, k) in self.levels if chk == "bound"]
        if not kinds:
            return
        acc = _claimed_accountant(c.sigma, c.q, n, self.delta)
        eps = float(acc.epsilon)
        runs = c.runs(upto=n)
        got = {}
        for k in kinds:
            lv = self.levels[("bound", k)] * omega
            a = audit_run(runs[k], delta=self.delta, beta=lv, accountant=acc, estimates=False, scores=self.scores)
            got[k] = a.epsilon_lower_bound
            if a.violated:
                self._report(c._finding("bound", k, 0.0, lv, {"message": f"after {n} steps {k} canaries certify epsilon "
                                                                         f">= {a.epsilon_lower_bound:.4g} > the "
                                                                         f"accountant's {eps:.4g} for {n} steps"},
                                        at_step=no))
        self.bound_history.append((n, got, eps))

    def summary(self) -> str:
        """The monitor's verdict so far, one line per finding."""
        c = self.canaries
        head = (f"dpaudit online DP-SGD audit after {c.steps} steps: "
                + (f"VIOLATION first found after step {self.first_step}" if self.findings else "no violation so far"))
        lines = [head, f"  beta={self.beta:g} over every step and checkpoint (anytime-valid); monitor time "
                       f"{self.seconds:.3g} s ({1e3 * self.seconds / max(1, c.steps):.3g} ms per step)"]
        if self.bound_history:
            n, got, eps = self.bound_history[-1]
            lines.append(f"  last checkpoint (step {n}): certified epsilon >= {max(got.values()):.4g} vs the "
                         f"accountant's {eps:.4g}")
        for f in self.findings:
            lines.append(f"  [{f.check}] after step {f.at_step}: {f.message}")
        return "\n".join(lines)

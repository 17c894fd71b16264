"""The hockey-stick tester (paper 000, Alg. 6, tightened): exact regions for discrete and 1-D
outputs, a trained classifier's regions for vector outputs."""

from __future__ import annotations

import copy
import math

import numpy as np

from ..estimators.base import profile_grid
from ..estimators.histogram import HistogramEvidence, HistogramHockeyStick
from ..estimators.hockey_stick import REGIONS, ClassifierHockeyStick, auto_region_path, region_evidence
from ..estimators.region import best_case_margin, smallest_sufficient_size
from ..privacy.claims import Claim, RenyiDP
from .base import ProfileTester

__all__ = ["REGIONS", "HockeyStickTester"]



class HockeyStickTester(ProfileTester):
    """Tests a claim by lower-bounding the hockey-stick divergence in both directions.

    Paper 000, Alg. 6 (HockeyStickTester). A region ``S`` of the output space is chosen on a
    selection half of the samples and ``P(S)``, ``Q(S)`` are certified with exact Clopper–Pearson
    bounds on the other half (:mod:`dpaudit.estimators.region`), with one of two ways of choosing
    it (``regions``):

    * **exact regions** for discrete outputs (any dimension: each distinct output is a cell) and
      1-D outputs (quantile bins, tails refined, and atoms): the upper level sets of the
      likelihood ratio estimated on the selection half, no training
      (:class:`~dpaudit.estimators.HistogramHockeyStick`, ``tolerance="split"``; docs/testers.md
      derives why the selection keeps the bound valid);
    * **exact regions on the informative columns** of the other vector outputs (``regions="auto"``):
      when the selection rows show that a proper subset of the columns carries the difference
      and the projection onto it is 1-D or discrete with few values (RAPPOR's bits, the bins a
      record touches), the exact regions are chosen on those columns
      (:func:`~dpaudit.estimators._projection.informative_columns`; the region labels name them);
    * **a classifier's regions** for the remaining continuous vector outputs: a PyTorch MLP trained on the
      selection half, thresholded (:class:`~dpaudit.estimators.ClassifierHockeyStick`, paper 000
      Alg. 5 improved); it runs on an untouched copy of the random stream when the informative
      columns were tried and refused, so its results are those of ``regions="classifier"``.

    The claim enters through its privacy profile ``delta(eps')`` (:meth:`PureDP.delta_profile`
    etc.): since the evidence bounds ``H_{e^eps'}`` for every ``eps'`` at once, the verdict
    compares against the whole profile at no cost in confidence. For an :class:`ApproxDP` claim
    this includes ``eps' = eps`` (Alg. 6's ``tau = delta``); for :class:`RenyiDP` it uses the
    RDP-to-DP conversion (Canonne, Kamath, Steinke 2020, Prop. 12).

    **Epsilon lower bound.** With a pure or (eps, delta) claim, each direction also gets a region
    (exact regions, or a classifier threshold) chosen to maximise the certified ``ln((P_lo(S) - delta) / Q_hi(S))``
    (DP-Sniper's objective, Bichsel et al. 2021, with exact bounds); when the selection half picks
    the same cells for both objectives one bound is certified, else the direction's share of
    ``beta`` is split 0.8 (the margin region, which the verdict mostly rests on) / 0.2 (the
    epsilon region). A violation shown by either region counts (union
    bound: the test's failure probability stays ``beta``), and the outcome's
    ``epsilon_lower_bound`` is the largest any region certifies.

    Failure probability: each direction gets ``beta / 2`` with the classifier; with exact regions
    the selection half splits ``beta`` between the directions (0.5/0.5, 0.8/0.2 or 0.95/0.05).

    Parameters
    ----------
    estimator : ClassifierHockeyStick, optional
        The classifier estimator (its hyper-parameters / device); default
        ``ClassifierHockeyStick(objective="both")``.
    device : str, optional
        Shortcut for ``ClassifierHockeyStick(device=device)``.
    regions : {"auto", "exact", "classifier"}, default "auto"
        ``"auto"``: exact regions for discrete or 1-D outputs, or on a vector output's
        informative columns, the classifier otherwise;
        ``"exact"`` raises :class:`NotApplicable` on continuous vector outputs whose informative
        columns are refused.
    region_estimator : HistogramHockeyStick, optional
        The exact-region estimator; default ``HistogramHockeyStick(objective="both")``.

    Raises
    ------
    ValueError
        If both ``estimator`` and ``device`` are given, on an unknown ``regions``, or a
        ``region_estimator`` whose tolerance is not ``"split"``.
    """

    name = "hockey-stick"

    def __init__(self, estimator: ClassifierHockeyStick | None = None, *, device: str | None = None,
                 regions: str = "auto", region_estimator: HistogramHockeyStick | None = None):
        if estimator is None:
            estimator = ClassifierHockeyStick(device=device or "cpu", objective="both")
        elif device is not None:
            raise ValueError("give either estimator or device, not both")
        if regions not in REGIONS:
            raise ValueError(f"regions must be one of {REGIONS}, got {regions!r}")
        if region_estimator is None:
            region_estimator = HistogramHockeyStick(objective="both")
        elif region_estimator.tolerance != "split":
            raise ValueError(f"region_estimator needs tolerance='split', got {region_estimator.tolerance!r}")
        self.estimator = estimator
        self.region_estimator = region_estimator
        self.regions = regions

    def config(self) -> dict:
        e = self.estimator
        return {
            "tester": self.name,
            "regions": self.regions,
            "region_estimator": self.region_estimator.config(),
            "hidden_sizes": list(e.hidden_sizes),
            "epochs": e.epochs,
            "batch_size": e.batch_size,
            "learning_rate": e.learning_rate,
            "max_steps": e.max_steps,
            "train_fraction": e.train_fraction,
            "device": str(e.device),
            "num_threads": e.num_threads,
            "objective": getattr(e, "objective", "margin"),
        }

    def region_path(self, p_samples, q_samples) -> str:
        """``"exact"`` or ``"classifier"``: the path :meth:`test` takes for these samples
        (``regions="auto"``: exact for 1-D outputs, and for vector outputs whose first rows show
        at most 1 distinct value in 10). On ``"classifier"`` with ``regions="auto"``, :meth:`test`
        first tries exact regions on the informative columns (decided on its selection rows, so
        not known here)."""
        if self.regions != "auto":
            return self.regions
        return self._auto_path(p_samples, q_samples)

    def _auto_path(self, p_samples, q_samples) -> str:
        """The ``regions="auto"`` rule of :meth:`region_path`, whatever ``regions`` is."""
        return auto_region_path(p_samples, q_samples, self.region_estimator)

    @staticmethod
    def _margin_only(estimator, claim: Claim):
        """``estimator``, or a copy with ``objective="margin"`` for a Rényi claim (its epsilon
        lower bound is a Rényi epsilon, which epsilon regions do not target)."""
        if isinstance(claim, RenyiDP) and getattr(estimator, "objective", "margin") != "margin":
            estimator = copy.copy(estimator)
            estimator.objective = "margin"
        return estimator

    def _estimate(self, p_samples, q_samples, claim: Claim, beta: float, rng):
        # exact regions share beta between the directions; the classifier's estimator gives each
        # direction the beta it is handed: beta / 2 each
        return region_evidence(
            p_samples, q_samples, regions=self.regions, region_estimator=self._margin_only(self.region_estimator, claim),
            estimator=self._margin_only(self.estimator, claim), epsilon=claim.epsilon, beta=beta,
            classifier_beta=beta / 2, delta_profile=claim.delta_profile,
            delta=0.0 if isinstance(claim, RenyiDP) else float(claim.delta), rng=rng,
        )

    def _needed_samples(self, evidence, outcome, n_p, n_q, claim, beta):
        if isinstance(evidence, HistogramEvidence):
            return super()._needed_samples(evidence, outcome, n_p, n_q, claim, beta)
        if outcome.violation or self.best_case_margin(n_p, n_q, claim, beta) > 0.0:
            return None
        return self.needed_samples(claim, beta)

    def _held_out(self, n: int) -> int:
        """Held-out rows of a sample of n rows (the estimator's split)."""
        n_train = min(n - 2, max(2, int(round(self.estimator.train_fraction * n))))
        return n - n_train

    def best_case_margin(self, n_p: int, n_q: int, claim: Claim, beta: float) -> float:
        """The largest margin over the claim's profile that *any* data of these sizes could give
        to the classifier path.

        The region bound is ``P_lo(S) - e^eps' Q_hi(S)`` with one-sided Clopper–Pearson bounds at
        ``beta/4`` each (``beta/2`` per direction); it is largest when every held-out P sample
        and no held-out Q sample falls in S. When this best case does not exceed the claim's
        ``delta(eps')`` for any eps', no outcome of the test can reject: the test is vacuous.

        Returns
        -------
        float
            ``max_eps' [P_lo - e^eps' Q_hi - delta_claim(eps')]`` over both directions.
        """
        grid = profile_grid(claim.epsilon)
        allowed = np.asarray(claim.delta_profile(grid), dtype=float)
        best = -math.inf
        for m_in, m_out in ((self._held_out(n_p), self._held_out(n_q)), (self._held_out(n_q), self._held_out(n_p))):
            best = max(best, best_case_margin(m_in, m_out, grid, allowed, beta / 4))
        return best

    def needed_samples(self, claim: Claim, beta: float) -> int:
        """Smallest n (per dataset) at which :meth:`best_case_margin` is positive: below it the
        test cannot reject whatever the mechanism does."""
        needed = smallest_sufficient_size(lambda n: self.best_case_margin(n, n, claim, beta) > 0.0, 4, 1 << 40)
        # no size up to 2^40 helps (only for claims no finite sample can refute): report 2^41
        return 1 << 41 if needed is None else needed

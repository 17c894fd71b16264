"""The Opacus rows of the library-audit table (Opacus 1.6.0, PyTorch DP-SGD).

One full-batch step of Opacus's DP-SGD optimizers (flat, secure_mode, per-layer clipping) and of
``PrivacyEngine.make_private`` on a Linear(2, 2) model (``dpaudit.mechanisms.catalogue.opacus_optimizers``);
Opacus's accountants are checked apart (:mod:`dpaudit.library.accountants`).
"""

from __future__ import annotations

from ..entry import Budget, Cause, Entry, Guarantee, LibraryInfo

LIBRARY = LibraryInfo("Opacus", "opacus", install="opacus==1.6.0 torch==2.13.0 numpy")
"""torch pinned to the version dpaudit is tested with (on a machine without a GPU, pip's
``--index-url https://download.pytorch.org/whl/cpu`` for torch avoids gigabytes of CUDA wheels)."""

# --- Opacus (issue 36: the fifth library) ------------------------------------------------------
_OPC = "dpaudit.mechanisms.catalogue.opacus_optimizers"
_OPC_MODEL = ("one full-batch step of a Linear(2, 2) model from parameters 0 (cross-entropy, loss_reduction='mean', "
              "expected_batch_size=10, SGD lr 1), noise_multiplier 4.06 = get_noise_multiplier(target_epsilon=1, "
              "target_delta=1e-5, sample_rate=1.0, steps=1) (RDP accountant); releases the 6 trained parameters")
_OPC_DOMAIN = "labelled examples (x_1, x_2 in [-1, 1], label 0 or 1), 1 to 10 examples"
_OPC_RELATION = (
    "inferred: no Opacus 1.6.0 docstring names a neighbouring relation; its accountants analyse the sampled "
    "Gaussian mechanism ('Functionality for computing Renyi Differential Privacy (RDP) of an additive Sampled "
    "Gaussian Mechanism (SGM)', opacus/accountants/analysis/rdp.py, module docstring) under Poisson sampling "
    "('poisson_sampling: True if you want to use standard sampling required for DP guarantees', "
    "opacus/privacy_engine.py, PrivacyEngine.make_private), whose analysis (Mironov, Talwar, Zhang 2019) is for "
    "adding or removing one example; these rows take one full-batch step (sample_rate 1), a Gaussian mechanism "
    "on the clipped gradient sum under add/remove of one labelled example")
_OPC_FLOAT_DOC = (
    "_generate_noise's docstring (opacus/optimizers/optimizer.py): 'If `secure_mode` is enabled, the generated "
    "noise is also secure against the floating point representation attacks' (2107.10138, 2112.05307); the "
    "default (secure_mode=False) draws torch.normal in the gradient's dtype (float32 here)")


_OPC_FLOAT_CAUSE = (
    "a float32 granularity signal, not confirmed: the first run's float-bits tester certified epsilon >= 1.55 from "
    "the lowest set bits of a bias coordinate on a searched pair (5 vs 6 examples), the confirmation run (next seed, "
    "twice the samples) certified 0.93 and passed. Read in Opacus 1.6.0, the release is float32 "
    "arithmetic on the clipped sum: opacus/optimizers/optimizer.py, _generate_noise draws torch.normal(..., "
    "dtype=reference.dtype) (float32 for a float32 model; secure_mode sums four draws and halves them, same dtype), "
    "DPOptimizer.add_noise sets p.grad = p.summed_grad + noise and scale_grad divides by expected_batch_size, each "
    "rounded to float32 (24-bit significand), so the set of float32 values an output takes depends on the clipped "
    "sum (Mironov 2012, in single precision); secure_mode's docstring addresses the sampler's attacks "
    "(2107.10138, 2112.05307), not this final rounding. The leak-size stage on the same pair (20,000 outputs per "
    "dataset, half to choose a set, half to count it) certified no float grid or range above the claim, and "
    "neither did 10,000 per dataset of the flat and secure_mode rows on that pair: no reproducer, the signal is not "
    "claimed as a leak")


def _opacus_entry(attr: str, name: str, how: str, samples: int = 10000, cause: str = "") -> Entry:
    """An Opacus row: ``opacus_optimizers:attr``, claim (1, 1e-5)-DP from Opacus's own calibration."""
    g = Guarantee(1.0, 1e-5, "add-remove", _OPC_DOMAIN,
                  "get_noise_multiplier(target_epsilon=1, target_delta=1e-5, sample_rate=1.0, steps=1, "
                  "accountant='rdp'), as PrivacyEngine.make_private_with_epsilon calibrates")
    return Entry("Opacus", name, f"{_OPC}:{attr}", f"{how}; {_OPC_MODEL}", g, budget=Budget(samples=samples, trials=2),
                 documented=_OPC_FLOAT_DOC, relation_note=_OPC_RELATION, cause=cause)


# --- Opacus make_private (issue 36, record R7: meta-pytorch/opacus#571) -------------------------
_OPC_MP_GUARANTEE = Guarantee(
    1.0, 1e-5, "add-remove", "labelled examples (x_1, x_2 in [-1, 1], label 0 or 1), 1 to 6 examples",
    "get_noise_multiplier(target_epsilon=1, target_delta=1e-5, sample_rate=1.0, steps=1, accountant='rdp') = 4.06; "
    "make_private's own accountant hook records sample_rate = 1 / len(data_loader) = 1 for these datasets")
_OPC_MP_CAUSE = (
    "known (Re:cord-play, meta-pytorch/opacus#571, open): opacus/privacy_engine.py, PrivacyEngine.make_private sets "
    "'sample_rate = 1 / len(data_loader)' and 'expected_batch_size = int(len(data_loader.dataset) * sample_rate)', "
    "the divisor DPOptimizer.scale_grad applies to the noisy clipped sum; with the whole dataset in one batch it "
    "is len(dataset), so under add/remove the update and its noise are scaled by 1/N vs 1/(N+1) (noise std 4.06 "
    "vs 2.03 per parameter on 1 vs 2 examples): two Gaussians of different scales, whose privacy loss is "
    "unbounded. The leak-size stage's set (float32 lattice of a bias coordinate) is the same divisor seen in "
    "float32 (dividing by 2 halves the lattice spacing); the scale itself: reproducers/"
    "opacus_make_private.py (set: squared norm of the 6 parameters > 74.3; 1250/2000 on 1 example, "
    "13/2000 on 2, delta >= 0.551 at epsilon 1, confidence 0.99)")
_OPACUS_MAKE_PRIVATE_ROWS: tuple[Entry, ...] = (
    Entry("Opacus", "PrivacyEngine.make_private", f"{_OPC}:make_private",
          "PrivacyEngine().make_private(module, SGD(lr=1), DataLoader(dataset, batch_size=10), noise_multiplier=4.06, "
          "max_grad_norm=1, poisson_sampling=True (Opacus's default; sample rate 1 at these sizes), seeded "
          "noise_generator), one step of a Linear(2, 2) model from parameters 0 (cross-entropy, mean); releases the 6 "
          "trained parameters; Opacus sets expected_batch_size = len(dataset)",
          _OPC_MP_GUARANTEE, budget=Budget(samples=4000, trials=2), documented=_OPC_FLOAT_DOC,
          relation_note=_OPC_RELATION, cause=_OPC_MP_CAUSE),
)
"""R7 of the published record: ``make_private`` divides by ``int(len(dataset) * sample_rate)``."""


_OPACUS_ROWS: tuple[Entry, ...] = (
    _opacus_entry("dp_optimizer", "optimizers.DPOptimizer", "flat clipping, max_grad_norm=1, secure_mode=False"),
    _opacus_entry("dp_optimizer_secure", "optimizers.DPOptimizer (secure_mode)",
                  "flat clipping, max_grad_norm=1, secure_mode=True (noise: four torch.normal draws summed, halved)"),
    _opacus_entry("per_layer", "optimizers.DPPerLayerOptimizer",
                  "clipping='per_layer', max_grad_norm=[1.0, 0.5] (weight, bias; noise scale sigma * sqrt(1.25))",
                  cause=_OPC_FLOAT_CAUSE),
    *_OPACUS_MAKE_PRIVATE_ROWS,
)
"""The Opacus rows (``dpaudit.mechanisms.catalogue.opacus_optimizers``): Opacus's DP-SGD optimizers,
one step each."""

ENTRIES: tuple[Entry, ...] = _OPACUS_ROWS
"""The Opacus rows, in table order."""

NOTE = (
    "opacus 1.6.0 (PyTorch DP-SGD). Each row is one full-batch step of Opacus's own optimizer on a Linear(2, 2) "
    "model through `opacus.GradSampleModule` (`dpaudit.mechanisms.adapters.opacus.OpacusMechanism`, targets in "
    "`dpaudit.mechanisms.catalogue.opacus_optimizers`), with the noise multiplier Opacus calibrates for the claim "
    "(`get_noise_multiplier`, RDP accountant, sample_rate 1, one step): a Gaussian mechanism with mu = 1 / sigma "
    "whose exact delta at epsilon 1 is 2.2e-6, so the claim (1, 1e-5) holds in exact arithmetic. The RDP calibration "
    "is what `PrivacyEngine(accountant='rdp').make_private_with_epsilon` uses; PrivacyEngine's default accountant "
    "is 'prv' (opacus/privacy_engine.py, PrivacyEngine.__init__), whose tighter epsilon at q = 1 is checked against "
    "the exact Gaussian profile in the accountant section (not under at any grid point). The noise comes "
    "from a seeded `torch.Generator` (reproducible from --seed). Poisson sampling (the accountants' assumption) "
    "is not run here: at sample_rate 1 it is the full batch; Opacus's accounting of the subsampled mechanism is "
    "checked in the accountant section below instead. Re:cord-play (Cebere et al., PoPETs 2026) reports violations "
    "in Opacus; the excerpts of its paper available to this session do not name them, so these rows are not matched "
    "against it.")
"""Printed under the library's heading."""

LEFT_OUT = {
    "ghost clipping (make_private(grad_sample_mode='ghost'): GradSampleModuleFastGradientClipping, "
    "DPOptimizerFastGradientClipping, DPLossFastGradientClipping)": "not in the registry yet: it needs Opacus's "
    "DPLoss wrapper around the loss (a different call sequence than the adapter's), left for a later session",
    "adaptive clipping (clipping='adaptive', AdaClipDPOptimizer)": "not in the registry yet: its clipping bound is "
    "itself released with noise across steps, so one step audits only part of it",
    "PrivacyEngine.make_private with Poisson sampling (DPDataLoader)": "the rows drive the optimizer directly at "
    "sample_rate 1 (full batch); the subsampled mechanism's accounting is checked in the accountant section",
}
"""Opacus APIs with no row, and why."""

ADVERSARIAL_RECORD = (
    "known as a class (Re:cord-play's NaN injection), not filed as a report (the behaviour is plain IEEE "
    "arithmetic): one example whose features are NaN, "
    "+-inf or beyond float32's range (the largest doubles, cast to inf) makes every released parameter NaN, every "
    "time, so a NaN output tells whether that example was in the batch. Cause, read in Opacus 1.6.0: "
    "opacus/optimizers/optimizer.py, DPOptimizer.clip_and_accumulate computes per_sample_clip_factor = "
    "(max_grad_norm / (per_sample_norms + 1e-6)).clamp(max=1.0): a NaN norm gives a NaN factor (clamp keeps "
    "NaN) and an infinite norm a factor 0, and torch.einsum('i,i...', factor, grad_sample) then gives NaN "
    "(NaN * g, 0 * inf), so the clipped sum is NaN before the noise is added (DPPerLayerOptimizer."
    "clip_and_accumulate, opacus/optimizers/perlayeroptimizer.py, the same per layer). Nothing in "
    "GradSampleModule or DPOptimizer checks for non-finite per-sample gradients; not found in the Opacus tracker "
    "searched (meta-pytorch/opacus, three searches of NaN and clipping issues); Re:cord-play discusses NaN injection "
    "in Opacus (the dp-recorder artifact's tests/test_nan_injection.py maps its NaN example to Opacus among "
    "others), so the class is in the published record; whether its Opacus item is this code path was not checked. "
    "Reproducers: reproducers/opacus_dp_optimizer_nan.py, opacus_dp_optimizer_secure_nan.py, opacus_per_layer_nan.py")
"""The record of Opacus's adversarial-input findings."""

RECORD = {"opacus.per_layer": (
    "unconfirmed, so not claimed. Floating-point attacks on Opacus's noise are known: arXiv 2112.05307 (cited in "
    "_generate_noise's docstring, addressed for the sampler by secure_mode) and meta-pytorch/opacus#616 'Opacus uses "
    "unsafe floating-point noise generation, even with secure_mode=True' (closed, 2024), which names the addition "
    "step's precision-based attacks, the class of this signal")}
"""Each Opacus finding against the record and the tracker."""

_OPC_POWER = (
    "each twin is Opacus's optimizer with noise multiplier 2.84 = 0.7 x 4.06, a Gaussian mechanism with mu = 0.352: "
    "exactly (1.35, 1e-5)-DP, delta 3.8e-4 at epsilon 1 (dpaudit.privacy.profiles.gaussian_delta). At the claim's "
    "delta 1e-5 the certifying output set must be rare, so 10,000 outputs per dataset per trial certify epsilon "
    "about 0.9 and miss it, as OpenDP's Gaussian twins (computed in OpenDP's note: 2 x 10^6 to 6 x 10^6 outputs per "
    "dataset, 100 to 300 times the budget, for a (1.48, 1e-5)-DP twin); at 1 to 2 ms per Opacus step that budget "
    "is hours of CPU, not run. The secure_mode row's twin was reported caught (epsilon >= 1.12) by the float-bits "
    "tester on a searched pair, not by the planted Gaussian shift: a float32 granularity signal like the "
    "per-layer row's (see its entry below), so it says nothing of the budget's power for the planted leak")
POWER_NOTES = {"opacus.dp_optimizer": _OPC_POWER}
"""Rows whose power was computed beside the run: key -> what budget would catch the planted leak."""

_OPC_NONFINITE = ("nan", "every non-finite or float32-overflowing feature takes the same path as NaN "
                  "(DPOptimizer.clip_and_accumulate: an infinite norm gives factor 0 and 0 * inf = NaN)")
ADVERSARIAL_SAME_CAUSE = {
    "opacus.dp_optimizer": _OPC_NONFINITE,
    "opacus.dp_optimizer_secure": _OPC_NONFINITE,
    "opacus.per_layer": _OPC_NONFINITE,
    "opacus.make_private": ("opacus_dp_optimizer_nan.py", "make_private wraps the optimizer in the same DPOptimizer, "
                            "whose clip_and_accumulate turns a non-finite feature into NaN parameters"),
}
"""Rows whose adversarial leaks share one cause and one reproducer."""

FLOAT_CAUSES: dict = {}


# ---------------------------------------------------------------------------------------------
# Causes: one per issue a maintainer would file (dpaudit.library.findings)
# ---------------------------------------------------------------------------------------------
CAUSES = (
    Cause("opacus.make-private-divisor", "Opacus",
          "make_private divides the noisy sum by a batch size computed from the private dataset size",
          "library bug", rows=("opacus.make_private",),
          prior="meta-pytorch/opacus#571 (open, 2023; see also #819), Re:cord-play R7",
          reproducer="reproducers/opacus_make_private.py"),
    Cause("opacus.nonfinite-features", "Opacus",
          "One example with NaN, infinite or float32-overflowing features makes every released parameter NaN",
          "library bug",
          adversarial=tuple((f"opacus.{k}", kind) for k in ("dp_optimizer", "dp_optimizer_secure", "per_layer",
                                                            "make_private")
                            for kind in ("nan", "+inf", "-inf", "max-double", "-max-double")),
          prior="Re:cord-play (PoPETs 2026) discusses NaN injection in Opacus (the dp-recorder artifact's "
                "tests/test_nan_injection.py maps its NaN example to Opacus among others); whether its item is "
                "this code path was not checked",
          searched="meta-pytorch/opacus issues (NaN and clipping; NaN input features DPOptimizer): none filed",
          reproducer="reproducers/opacus_dp_optimizer_nan.py",
          note="plain IEEE arithmetic in DPOptimizer.clip_and_accumulate (NaN * g, 0 * inf): one cause for every "
               "non-finite input and every optimizer"),
)
"""Opacus's findings, one per cause."""

"""Opacus's DP-SGD optimizers, one full-batch step each, as rows of the library-audit table.

Each target is one step of Opacus 1.6's own optimizer on the tiny model of
:mod:`.opacus_sgd` (``torch.nn.Linear(2, 2)`` from parameters 0, cross-entropy, learning rate 1,
``expected_batch_size = 10``, noise from a seeded ``torch.Generator``), releasing the six trained
parameters, with sigma calibrated by Opacus's own ``get_noise_multiplier`` (RDP accountant) for
the claim (1, 1e-5) at ``sample_rate = 1``, ``steps = 1``: sigma = 4.06.

* :data:`dp_optimizer`: ``opacus.optimizers.DPOptimizer`` (flat clipping, ``max_grad_norm = 1``);
* :data:`dp_optimizer_secure`: the same with ``secure_mode=True`` (Opacus's noise is then the sum
  of four Gaussian draws halved, opacus/optimizers/optimizer.py ``_generate_noise``);
* :data:`per_layer`: ``opacus.optimizers.DPPerLayerOptimizer`` (``clipping="per_layer"``) with
  ``max_grad_norm = [1.0, 0.5]`` (weight, bias); its noise scale is sigma times the overall norm
  ``sqrt(1 + 0.25)``;
* :data:`make_private`: the same step set up by ``PrivacyEngine().make_private`` (flat clipping,
  ``max_grad_norm = 1``, ``DataLoader(dataset, batch_size=10)``, ``poisson_sampling=True`` at
  sample rate 1), where Opacus sets ``expected_batch_size = len(dataset)`` (issue
  meta-pytorch/opacus#571); audited on 1 to 6 examples.

The step is a Gaussian mechanism with ``mu = 1 / sigma`` under add/remove of one example
(:class:`~dpaudit.mechanisms.adapters.opacus.OpacusMechanism`, Notes), so the claim holds in exact
arithmetic (exact delta at epsilon 1 is 2.2e-6). Witness pair: ``[(0, 0, label 0)]`` vs the same
plus ``(1, 1, label 1)``, whose gradient is clipped to the full bound (per layer too: its weight
gradient has norm 1 and its bias gradient 0.71, clipped to 1 and 0.5).

Adversarial inputs (:data:`ACCEPTS`): Opacus takes any float tensor of features, so the features of
the added example carry the adversarial value (its label stays 1, a class index); the empty
dataset is left out (a full-batch step needs an example; dpaudit's adapter refuses it).

:func:`planted` builds the power twin (noise multiplier times 0.7) of each target. Importing this
module imports neither Opacus nor torch.
"""

from __future__ import annotations

import copy

from ...datasets import ADVERSARIAL_KINDS, AcceptedInputs, LabelledAddRemove
from ..adapters.opacus import OpacusMechanism, OpacusPrivacyEngineMechanism
from .opacus_sgd import DELTA, DOMAIN, EPSILON, EXPECTED_BATCH_SIZE, WITNESS_PAIRS, linear_model

__all__ = ["ACCEPTS", "MAKE_PRIVATE_BATCH_SIZE", "MAKE_PRIVATE_MAX_SIZE", "PER_LAYER_NORMS", "TARGETS", "dp_optimizer",
           "dp_optimizer_secure", "make_private", "per_layer", "planted"]

PER_LAYER_NORMS = (1.0, 0.5)
"""``max_grad_norm`` of :data:`per_layer`: weight (2 x 2), then bias (2)."""

ACCEPTS = AcceptedInputs(
    kinds=tuple(k for k in ADVERSARIAL_KINDS if k != "empty"),
    record=lambda v: [v, v, 1],
    note="Opacus takes any float feature tensor (GradSampleModule and DPOptimizer check no values): the added "
         "example's two features hold the value, its label is 1; float64 features are cast to float32 "
         "(the adapter), so the largest doubles become inf; the empty dataset is left out (a full-batch step "
         "needs an example)",
)
"""The adversarial inputs the rows are tried on (:mod:`dpaudit.search.adversarial`)."""


def _target(name: str, **kw) -> OpacusMechanism:
    mech = OpacusMechanism(linear_model, expected_batch_size=EXPECTED_BATCH_SIZE, target_epsilon=EPSILON,
                           target_delta=DELTA, steps=1, lr=1.0, name=f"opacus_optimizers:{name}", **kw)
    mech.neighbouring = LabelledAddRemove(DOMAIN, min_size=1, max_size=10)
    mech.witness_pairs = WITNESS_PAIRS
    mech.accepts = ACCEPTS
    return mech


dp_optimizer = _target("dp_optimizer", max_grad_norm=1.0)
"""``DPOptimizer`` (flat clipping, C = 1), sigma from ``get_noise_multiplier(1, 1e-5, 1.0, steps=1)``."""

dp_optimizer_secure = _target("dp_optimizer_secure", max_grad_norm=1.0, secure_mode=True)
"""As :data:`dp_optimizer` with ``secure_mode=True``."""

per_layer = _target("per_layer", max_grad_norm=PER_LAYER_NORMS, clipping="per_layer")
"""``DPPerLayerOptimizer`` with ``max_grad_norm = [1.0, 0.5]``, same sigma."""

MAKE_PRIVATE_BATCH_SIZE = 10
"""The ``DataLoader``'s batch size in :data:`make_private` (at least every dataset's size: sample rate 1)."""

MAKE_PRIVATE_MAX_SIZE = 6
"""Largest dataset :data:`make_private` is audited on (small sizes make ``(N + 1) / N`` large)."""

make_private = OpacusPrivacyEngineMechanism(
    linear_model, max_grad_norm=1.0, batch_size=MAKE_PRIVATE_BATCH_SIZE, poisson_sampling=True,
    target_epsilon=EPSILON, target_delta=DELTA, steps=1, lr=1.0, name="opacus_optimizers:make_private")
"""``PrivacyEngine().make_private(..., data_loader=DataLoader(dataset, batch_size=10), poisson_sampling=True)``,
one step, same sigma: Opacus sets ``expected_batch_size = int(len(dataset) * 1)``, the private size."""
make_private.neighbouring = LabelledAddRemove(DOMAIN, min_size=1, max_size=MAKE_PRIVATE_MAX_SIZE)
make_private.witness_pairs = WITNESS_PAIRS
make_private.accepts = ACCEPTS

TARGETS = {"dp_optimizer": dp_optimizer, "dp_optimizer_secure": dp_optimizer_secure, "per_layer": per_layer,
           "make_private": make_private}
"""Name -> target."""


class _Planted(OpacusMechanism):
    """An Opacus target whose noise multiplier is its own calibration times ``factor``."""

    factor = 1.0

    def calibrated_noise_multiplier(self) -> float:
        if self.noise_multiplier_ is None:
            self.noise_multiplier_ = OpacusMechanism.calibrated_noise_multiplier(self) * self.factor
        return self.noise_multiplier_


class _PlantedEngine(OpacusPrivacyEngineMechanism):
    """:data:`make_private` with its noise multiplier times ``factor`` (as :class:`_Planted`)."""

    factor = 1.0
    calibrated_noise_multiplier = _Planted.calibrated_noise_multiplier


def planted(mech: OpacusMechanism, name: str, factor: float) -> OpacusMechanism:
    """The power twin of an Opacus target: same optimizer, model, relation and hints, noise
    multiplier ``factor`` times Opacus's calibration (sigma ``4.06 * 0.7 = 2.84`` for ``factor``
    0.7: a Gaussian mechanism with ``mu = 0.35``, exact delta 3.8e-4 at epsilon 1 (epsilon 1.35 at delta 1e-5), above the claim's
    1e-5).

    Parameters
    ----------
    mech : OpacusMechanism
        A target of :data:`TARGETS` (not yet calibrated, or calibrated: either works).
    name : str
        Name of the twin (reports).
    factor : float
        Noise multiplier factor in (0, 1].

    Returns
    -------
    OpacusMechanism

    Raises
    ------
    ValueError
        If ``factor`` is outside ``(0, 1]``.
    """
    if not 0.0 < factor <= 1.0:
        raise ValueError(f"factor must be in (0, 1], got {factor!r}")
    out = copy.copy(mech)
    out.__class__ = _PlantedEngine if isinstance(mech, OpacusPrivacyEngineMechanism) else _Planted
    out.factor = float(factor)
    out.noise_multiplier_ = None
    out._initial_state = None
    out.name = name
    return out

"""One Opacus DP-SGD step, with the noise multiplier for the claim and with a stale one.

Run from the command line (exit code 1 when a violation is found)::

    dpaudit test dpaudit.mechanisms.catalogue.opacus_sgd:dp_sgd_step --epsilon 1 --delta 1e-5 --samples 10000 --trials 3   # exit 0
    dpaudit test dpaudit.mechanisms.catalogue.opacus_sgd:stale_noise_step --epsilon 1 --delta 1e-5 --samples 5000       # exit 1

(``dp_sgd_canary_loss`` and ``stale_noise_canary_loss`` release a canary's loss instead of the
parameters.) All objects carry their neighbouring relation
(:class:`~dpaudit.datasets.LabelledAddRemove`: one labelled example added or removed; two
features in [-1, 1], labels {0, 1}, 1 to 10 examples) and ``WITNESS_PAIRS`` as audit hints.
They need Opacus (``pip install 'dpaudit[opacus]'``); importing this module imports neither
Opacus nor torch. Runs are reproducible from ``--seed`` (the noise comes from a seeded
``torch.Generator``). One run costs about 0.5-1 ms, so keep ``--samples`` to a few thousand.

The mechanism and the claim
---------------------------
A two-class linear model (``torch.nn.Linear(2, 2)``, parameters starting at 0, cross-entropy
loss) takes one full-batch step of Opacus's DP-SGD: per-example gradients clipped to
``max_grad_norm = 1``, Gaussian noise ``N(0, sigma^2 I)`` added to their sum, division by the
public ``expected_batch_size = 10``, learning rate 1. The release is the six trained parameters.
The claim is (1, 1e-5)-DP under add/remove of one example, with sigma chosen as Opacus does for
that target: ``get_noise_multiplier(target_epsilon=1, target_delta=1e-5, sample_rate=1.0,
steps=1)`` (RDP accountant) gives sigma = 4.06.

``dp_sgd_step`` uses that sigma. The step is a Gaussian mechanism with ``mu = 1 / sigma = 0.246``
(Dong, Roth, Su 2022, Thm 2.7), whose exact delta at epsilon 1 is 2.2e-6 (the RDP accountant
is conservative): not flagged.

``stale_noise_step`` is the same code with the noise multiplier of a stale configuration, the one
computed for the development budget epsilon = 8 (sigma = 0.638), while the model card still
claims epsilon = 1. Now ``mu = 1.57`` and the exact delta at epsilon = 1 is
``Phi(-1/mu + mu/2) - e Phi(-1/mu - mu/2) = 0.35``, far above 1e-5.

Witness pair: ``[(0, 0, label 0)]`` vs the same plus ``(1, 1, label 1)``. At parameters 0 the
added example's gradient has norm ``sqrt(1/2) * sqrt(3) = 1.22 > 1``, so it is clipped to the
full bound: its removal moves the parameters by exactly ``lr * C / 10`` against noise of standard
deviation ``lr * sigma * C / 10`` per coordinate, the worst case of the Gaussian mechanism. The
canary of the canary-loss variants is that added example; its loss after the step is a
monotone function of the logit difference along the shift, so it loses nothing.
"""

from __future__ import annotations

from ...datasets import Domain, LabelledAddRemove
from ..adapters.opacus import OpacusMechanism, canary_loss

__all__ = [
    "CANARY",
    "DELTA",
    "DOMAIN",
    "EPSILON",
    "EXPECTED_BATCH_SIZE",
    "MAX_GRAD_NORM",
    "NEIGHBOURING",
    "STALE_EPSILON",
    "WITNESS_PAIRS",
    "dp_sgd_canary_loss",
    "dp_sgd_step",
    "linear_model",
    "stale_noise_canary_loss",
    "stale_noise_step",
]

EPSILON, DELTA = 1.0, 1e-5
"""The claimed guarantee, (epsilon in nats, delta), under add/remove of one example."""

STALE_EPSILON = 8.0
"""The epsilon the stale noise multiplier was calibrated for."""

MAX_GRAD_NORM = 1.0
"""Per-example clipping norm C."""

EXPECTED_BATCH_SIZE = 10
"""Public divisor of the noisy gradient sum (the largest dataset size)."""

DOMAIN = Domain((-1.0, -1.0, 0.0), (1.0, 1.0, 1.0))
"""Labelled examples (x_1, x_2, label): features in [-1, 1], label 0 or 1."""

NEIGHBOURING = "labelled-add-remove"
"""Adjacency of Opacus's accounting: one example added or removed."""

CANARY = ((1.0, 1.0), 1)
"""The example added in the witness pair, whose loss the canary-loss variants release."""

WITNESS_PAIRS = (([[0.0, 0.0, 0.0]], [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]),)
"""One example plus the canary, whose gradient is clipped to the full bound."""


def linear_model():
    """A two-class linear model on two features, parameters 0 (the public starting point).

    Returns
    -------
    torch.nn.Linear
        ``Linear(2, 2)``: 4 weights and 2 biases, all 0.
    """
    import torch  # noqa: PLC0415

    model = torch.nn.Linear(2, 2)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    return model


def _step(target_epsilon: float, output="parameters", name: str = "") -> OpacusMechanism:
    mech = OpacusMechanism(
        linear_model,
        max_grad_norm=MAX_GRAD_NORM,
        expected_batch_size=EXPECTED_BATCH_SIZE,
        target_epsilon=target_epsilon,
        target_delta=DELTA,
        steps=1,
        lr=1.0,
        output=output,
        name=name,
    )
    # min_size 1: a DP-SGD step needs at least one example (the Opacus adapter refuses an empty
    # dataset: Opacus's data loader has nothing to batch).
    mech.neighbouring = LabelledAddRemove(DOMAIN, min_size=1, max_size=10)
    mech.witness_pairs = WITNESS_PAIRS
    return mech


dp_sgd_step = _step(EPSILON, name="opacus_sgd:dp_sgd_step")
"""One DP-SGD step with sigma for (1, 1e-5): releases the 6 parameters; not flagged."""

stale_noise_step = _step(STALE_EPSILON, name="opacus_sgd:stale_noise_step")
"""One DP-SGD step with sigma for epsilon = 8, claimed (1, 1e-5)-DP: delta(1) = 0.35 at the witness."""

dp_sgd_canary_loss = _step(EPSILON, canary_loss(*CANARY), name="opacus_sgd:dp_sgd_canary_loss")
"""As ``dp_sgd_step`` but releases the canary's loss (1 value); not flagged."""

stale_noise_canary_loss = _step(STALE_EPSILON, canary_loss(*CANARY), name="opacus_sgd:stale_noise_canary_loss")
"""As ``stale_noise_step`` but releases the canary's loss (1 value)."""

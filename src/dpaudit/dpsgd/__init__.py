"""Auditing DP-SGD training: a reference DP-SGD with gradient canaries observed at every step,
its common bugs as variants, and the one-run audit of a run next to its accountant.

* :func:`train_with_canaries` — the reference DP-SGD (``torch.func`` per-example gradients,
  Poisson sampling, clipping, Gaussian noise) or one of :data:`VARIANTS`, with ``m`` Dirac
  gradient canaries each included with probability 1/2; returns every step's observations;
* :func:`audit_run` — certified one-run epsilon and GDP ``mu`` lower bounds from those
  observations, the accountant's epsilon for the same ``(sigma, q, steps, delta)``, a verdict,
  and two labelled estimates (fitted per-step mechanism composed; histogram PLD composed);
* :func:`epsilon_plot` — empirical vs accounted epsilon for a set of audits; :func:`audit_plot` —
  one run's canary scores (included vs excluded) next to its epsilons;
* :meth:`TrainingRun.save` / :meth:`TrainingRun.load` — a run as a ``.npz`` file, audited where
  it is loaded (``dpaudit dpsgd --run FILE.npz``);
* :mod:`dpaudit.dpsgd.many` — many small models trained at once (``train_many``, ``torch.func``),
  half with an input and a gradient canary, audited from two samples (``audit_many``);
* :func:`shuffled_epsilon_lower_bound` — a certified lower bound on the epsilon of shuffled
  fixed-size batches (Chua et al. 2024's pair), to set against the Poisson accountant;
* :mod:`dpaudit.dpsgd.opacus` — ``OpacusCanaries``, the canaries in a user's own Opacus loop;
* :class:`Canaries` — the canaries in any DP-SGD step (plain PyTorch, JAX/Optax, NumPy): each
  step's canary gradient rows over the user's parameter shapes and where to insert them, the
  noisy update handed back, several canary kinds at once (:data:`CANARY_KINDS`) audited together
  (:class:`CanaryAudit`), with one check per assumption of the accountant
  (:mod:`dpaudit.dpsgd.checks`: clipping, noise, sampling, coupling, non-finite gradients,
  data-dependent scale; :func:`sampler_check`) and an online, anytime-valid audit while
  training runs (:meth:`Canaries.monitor`, :class:`OnlineAudit`, :class:`DPSGDViolation`).
* :mod:`dpaudit.dpsgd.harness` — many-run audits of the user's own DP-SGD step or training
  function (``run_step_many``/``run_train_many``, ``audit_user_code``; in batches that stop at the
  first certified violation: ``audit_user_step``/``audit_user_train``): examples coupled through
  the batch (clipping of a batch or of small groups, shared clip factors, data-dependent
  normalisation and noise, special paths for some records).

Derivations and measurements: ``docs/dpsgd.md``.
"""

from .canaries import CANARY_KINDS, CanaryAudit, Canaries, CanaryStep, sampler_check
from .checks import DPSGDViolation, Finding, run_clipping_check
from .online import OnlineAudit
from .audit import DEFAULT_SCORES, SCORE_FUNCTIONS, DPSGDAudit, audit_run, canary_scores, whitened_scores
from .plot import audit_plot, epsilon_plot
from .shuffle import shuffled_epsilon_lower_bound
from .reference import VARIANTS, DPSGDConfig, TrainingRun, load_digits_task, noise_for_epsilon, train_with_canaries
from .harness import audit_user_code, audit_user_step, audit_user_train, make_task, make_tasks, run_step_many, run_train_many

__all__ = [
    "CANARY_KINDS",
    "CanaryAudit",
    "CanaryStep",
    "Canaries",
    "DPSGDViolation",
    "Finding",
    "OnlineAudit",
    "sampler_check",
    "DEFAULT_SCORES",
    "DPSGDAudit",
    "DPSGDConfig",
    "SCORE_FUNCTIONS",
    "TrainingRun",
    "VARIANTS",
    "audit_plot",
    "audit_run",
    "audit_user_code",
    "audit_user_step",
    "audit_user_train",
    "canary_scores",
    "epsilon_plot",
    "load_digits_task",
    "make_task",
    "make_tasks",
    "noise_for_epsilon",
    "run_step_many",
    "run_clipping_check",
    "run_train_many",
    "shuffled_epsilon_lower_bound",
    "train_with_canaries",
    "whitened_scores",
]

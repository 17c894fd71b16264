"""A reference DP-SGD in plain PyTorch with gradient canaries seen at every step, and the bugs seen
in practice as variants of it.

The reference (``variant="correct"``): per-example gradients with ``torch.func`` (``vmap`` of
``grad``), Poisson sampling of every example at rate ``q`` in every step, per-example clipping to
``C = max_grad_norm``, Gaussian noise of standard deviation ``sigma C`` added to the sum, division
by the expected batch size, plain SGD. It is what the accountant's Poisson-subsampled Gaussian
(``dpaudit.accounting.Composition.dpsgd(sigma, q, steps)``) describes.

**Gradient canaries** (Nasr et al. 2023, "Dirac canaries"). Canary ``i`` is an example whose
gradient is ``canary_norm`` times the ``i``-th unit vector of a block of ``m`` extra coordinates
that the model never reads: real gradients are zero there, so nothing interferes with the
canaries, and the noise and the clipping act on the block as on every other coordinate. Each
canary is *included* in the training set independently with probability 1/2 (the one-run audit's
mask, Steinke et al. 2023) and, once included, is Poisson-sampled at rate ``q`` like every real
example. The white-box observation is the noisy gradient sum on the block, divided by ``C``:

    o[t, i] = (sum of clipped gradients + noise)[block i] / C
            ~ N(1{canary i included and sampled at step t} * min(C, canary_norm) / C, sigma^2)

for the correct implementation: exactly the accountant's worst case.

**Variants** (:data:`VARIANTS`): each is a bug class seen in public reports and the auditing
literature, with the true privacy loss where it can be computed; ``"correct"`` is the control.
The audit (:mod:`dpaudit.dpsgd.audit`) reads only the observations and the claimed
``(sigma, q, steps)``: it is built for the class of bug (wrong sensitivity, wrong noise scale,
state shared across steps, sampling that differs from what is accounted), not for these examples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from .._validate import check_int, check_positive, check_rate

__all__ = ["DPSGDConfig", "TrainingRun", "VARIANTS", "noise_for_epsilon", "train_with_canaries", "load_digits_task"]


def noise_for_epsilon(epsilon: float, delta: float, sampling_rate: float, steps: int, *, tol: float = 1e-3) -> float:
    """The smallest noise multiplier whose DP-SGD accountant epsilon at ``delta`` is at most
    ``epsilon`` (bisection on :func:`dpaudit.accounting.get_epsilon`, certified upper bounds, to
    relative tolerance ``tol``; rounded up, so the accounted epsilon stays at or below the target).

    Raises
    ------
    ValueError
        On epsilon <= 0 or invalid delta, rate or steps.
    """
    from ..accounting import Composition, get_epsilon

    check_positive(epsilon, "epsilon")

    def eps_of(sig):
        return float(get_epsilon(Composition.dpsgd(sig, sampling_rate, steps), delta).epsilon)

    lo, hi = 0.05, 1.0
    while eps_of(hi) > epsilon:
        lo, hi = hi, 2.0 * hi
        if hi > 1e4:
            raise ValueError(f"no noise multiplier below 1e4 reaches epsilon {epsilon} at delta {delta}")
    while (hi - lo) / hi > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if eps_of(mid) <= epsilon else (mid, hi)
    return hi


VARIANTS = {
    "correct": "reference DP-SGD: Poisson sampling at rate q, per-example clipping to C, noise sigma*C on the sum",
    "no-clipping": "per-example gradients are not clipped (a canary of norm 4C moves the sum by 4C): "
                   "true mu = 4x the claimed per-step 1/sigma",
    "noise-not-scaled": "noise standard deviation sigma instead of sigma*C (the clipping norm left out; "
                        "matters when C != 1): true noise multiplier sigma / C",
    "noise-reused": "the same noise vector at every step (a generator re-seeded each step: state shared "
                    "across steps): differences of steps cancel the noise, infinite privacy loss when q < 1; "
                    "at q = 1 a Dirac canary's contribution is the same at every step and cancels with the noise "
                    "(it sees less than accounted), while any gradient that changes between steps is revealed "
                    "exactly by the differences: sign-changing canaries (canary_kind 'alternating' or 'signed') "
                    "and the 'whitened' score show it from one run",
    "shuffled-batches": "fixed-size batches from a shuffle each epoch (every example in exactly one step per "
                        "epoch), accounted as Poisson sampling at q = batch/N (Chua et al. 2024)",
    "batch-clipping": "the batch's summed gradient clipped to C as a whole instead of each example's: one "
                      "example moves the clipped sum by up to 2C (worst case: the others' sum opposes it), "
                      "true loss at most the accountant's at sigma/2, exactly mu = 2 sqrt(T)/sigma at q = 1 "
                      "on the worst-case dataset; many canaries in one batch share the one clipping norm",
    "realised-batch-size": "under Poisson sampling the noisy sum divided by the realised batch size |B| instead "
                           "of the expected q*N: the update's scale reveals |B|, i.e. membership; infinite "
                           "epsilon at q = 1 (|B| = N) and, over all datasets, at delta < 1 - (1 - q^2)^T "
                           "(a dataset of one other example: |B| = 2 only with the canary)",
    "per-layer-clipping": "each parameter tensor of an example clipped to C on its own (the model's tensors, and "
                          "each dedicated canary tensor) with noise sigma*C calibrated for one overall norm: an "
                          "example moves the sum by up to sqrt(L) C over L tensors; 'split' canaries (4 dedicated "
                          "tensors, no real gradient on them) show 2 C instead of C, 'spread' ones sqrt(L) C",
}


@dataclass(frozen=True)
class DPSGDConfig:
    """The claimed DP-SGD parameters (what the accountant is told) and the training settings.

    Attributes
    ----------
    noise_multiplier : float
        ``sigma > 0``: noise standard deviation in units of the clipping norm.
    max_grad_norm : float
        Clipping norm ``C > 0``.
    sampling_rate : float
        Poisson rate ``q`` in (0, 1] (1: every example in every step).
    steps : int
        Number of steps ``T >= 1``.
    learning_rate : float
        SGD step size (> 0).
    canary_norm : float
        Norm of each gradient canary before clipping (default ``4 C``: clipping cuts it to ``C``).
    """

    noise_multiplier: float
    max_grad_norm: float = 1.0
    sampling_rate: float = 1.0
    steps: int = 10
    learning_rate: float = 0.5
    canary_norm: Optional[float] = None

    def __post_init__(self):
        check_positive(self.noise_multiplier, "noise_multiplier")
        check_positive(self.max_grad_norm, "max_grad_norm")
        check_rate(self.sampling_rate, "sampling_rate")
        check_int(self.steps, "steps")
        check_positive(self.learning_rate, "learning_rate")
        if self.canary_norm is not None:
            check_positive(self.canary_norm, "canary_norm")

    @property
    def canary_gradient_norm(self) -> float:
        """Norm of a canary's gradient before clipping (``4 C`` unless given)."""
        return 4.0 * self.max_grad_norm if self.canary_norm is None else float(self.canary_norm)

    def composition(self):
        """The accountant's mechanism: :meth:`dpaudit.accounting.Composition.dpsgd`."""
        from ..accounting import Composition

        return Composition.dpsgd(self.noise_multiplier, self.sampling_rate, self.steps)

    def to_dict(self) -> dict:
        return {"noise_multiplier": self.noise_multiplier, "max_grad_norm": self.max_grad_norm,
                "sampling_rate": self.sampling_rate, "steps": self.steps, "learning_rate": self.learning_rate,
                "canary_norm": self.canary_gradient_norm}


@dataclass(frozen=True)
class TrainingRun:
    """One DP-SGD run with ``m`` gradient canaries.

    Attributes
    ----------
    observations : ndarray, shape (steps, m)
        ``o[t, i]``: the noisy gradient sum on canary ``i``'s coordinate at step ``t``, over ``C``.
    mask : ndarray of bool, shape (m,)
        Which canaries were included (each independently with probability 1/2).
    sampled : ndarray of int, shape (m,)
        In how many steps each included canary was sampled (0 for excluded ones).
    participation : ndarray of bool, shape (steps, m)
        Whether canary ``i`` was in step ``t``'s batch (known to an auditor who inserts the
        canary gradients itself; used by the fitted estimate only, never by the certified audit).
    config : DPSGDConfig
    variant : str
    seconds : float
        Wall time of the run (training and observation).
    train_accuracy : float
        The final model's accuracy on its real training examples (a sanity check that it trains).
    final_scores : ndarray, shape (m,), or None
        Input canaries only: minus each canary's loss under the final model (the black-box view).
    details : dict
    pattern : ndarray, shape (steps, m), or None
        The sign the auditor gave each gradient canary at each step (``+1`` or ``-1``; public,
        chosen before the run, independent of the mask): all ``+1`` for ``"dirac"`` canaries,
        ``(-1)^t`` for ``"alternating"`` ones, random for ``"signed"`` ones. ``None`` means
        all ``+1``. The scores read it (:func:`dpaudit.dpsgd.canary_scores`).

    Every field is checked when the run is built (:func:`validate_run_fields`, shared with
    :meth:`load`); arrays may be given as NumPy arrays, array-likes or torch tensors (on any
    device: converted to NumPy once, here, so a training loop can keep its observations on the
    device and hand them over at the end). 0/1 ``mask`` and ``participation`` become bool.

    Raises
    ------
    TypeError
        When ``config`` is not a :class:`DPSGDConfig` or ``details`` not a dict.
    ValueError
        Naming the field and what is wrong: ``observations`` not a real ``(steps, m)`` array with
        ``steps == config.steps``, or holding a NaN/inf (the message names the step and the
        canary); ``mask`` not 0/1 of shape ``(m,)``; ``participation`` not 0/1 of shape
        ``(steps, m)`` or marking an excluded canary; ``sampled`` not its column sums; ``pattern``
        not ``+-1`` of shape ``(steps, m)``; ``final_scores`` not finite of shape ``(m,)``; a
        config whose noise multiplier is not ``> 0``, sampling rate not in ``(0, 1]`` or steps
        not an integer ``>= 1``.
    """

    observations: np.ndarray
    mask: np.ndarray
    sampled: np.ndarray
    participation: np.ndarray
    config: DPSGDConfig
    variant: str
    seconds: float
    train_accuracy: float
    final_scores: Optional[np.ndarray] = None
    details: dict = field(default_factory=dict)
    pattern: Optional[np.ndarray] = None

    def __post_init__(self):
        if not isinstance(self.config, DPSGDConfig):
            raise TypeError(f"config must be a DPSGDConfig, got {type(self.config).__name__}")
        if not isinstance(self.details, dict):
            raise TypeError(f"details must be a dict, got {type(self.details).__name__}")
        fields = validate_run_fields(self.config, self.observations, self.mask, self.participation,
                                     sampled=self.sampled, pattern=self.pattern, final_scores=self.final_scores)
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def save(self, path) -> Path:
        """Write the run to ``path`` as a ``.npz`` archive that :meth:`load` reads back exactly.

        This is how a run is audited away from where it trained: a training job on a GPU box
        attaches :class:`~dpaudit.dpsgd.opacus.OpacusCanaries`, calls ``canaries.save("run.npz")``,
        and ``dpaudit dpsgd --run run.npz`` (or ``audit_run(TrainingRun.load("run.npz"))``)
        audits it anywhere.

        The archive holds the arrays ``observations`` (float, shape ``(steps, m)``), ``mask``
        (bool, ``(m,)``), ``sampled`` (int, ``(m,)``), ``participation`` (bool, ``(steps, m)``),
        ``pattern`` (float, ``(steps, m)``; only when the run has one) and ``final_scores``
        (float, ``(m,)``; input canaries only), and ``meta``: a JSON string with the format name
        and version, the config (:class:`DPSGDConfig`'s fields), the variant, the wall time,
        the training accuracy and ``details``. Nothing is pickled: :meth:`load` reads the file
        with ``allow_pickle=False``, so a run file from elsewhere cannot execute code.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write, used as given (no suffix is added; ``.npz`` is the convention).

        Returns
        -------
        pathlib.Path
            ``path``.

        Raises
        ------
        OSError
            When the file cannot be written.
        TypeError
            When ``details`` holds something JSON cannot represent.
        """
        import dataclasses
        import json

        path = Path(path)
        meta = {"format": RUN_FORMAT, "version": RUN_FORMAT_VERSION, "config": dataclasses.asdict(self.config),
                "variant": str(self.variant), "seconds": float(self.seconds),
                "train_accuracy": float(self.train_accuracy), "details": self.details}
        arrays = {"observations": np.asarray(self.observations), "mask": np.asarray(self.mask),
                  "sampled": np.asarray(self.sampled), "participation": np.asarray(self.participation),
                  "meta": np.array(json.dumps(meta))}
        if self.pattern is not None:
            arrays["pattern"] = np.asarray(self.pattern)
        if self.final_scores is not None:
            arrays["final_scores"] = np.asarray(self.final_scores)
        with open(path, "wb") as fh:
            np.savez_compressed(fh, **arrays)
        return path

    @classmethod
    def load(cls, path) -> "TrainingRun":
        """Read a run written by :meth:`save`, checking every field.

        Parameters
        ----------
        path : str or os.PathLike
            A ``.npz`` archive from :meth:`save` (or one with the same arrays and ``meta``).

        Returns
        -------
        TrainingRun
            Arrays bit-identical to the saved ones; the same config, variant, times and details.

        Raises
        ------
        FileNotFoundError
            When ``path`` does not exist.
        ValueError
            Naming the file and what is wrong: not a ``.npz`` archive (or one holding pickled
            objects), a missing array, unreadable or foreign ``meta``, an invalid config, arrays
            of the wrong shape or type (``observations`` a finite ``(steps, m)`` array with
            ``m >= 2`` and ``steps`` equal to the config's; ``mask`` 0/1 of shape ``(m,)``;
            ``participation`` 0/1 of shape ``(steps, m)``, never for an excluded canary;
            ``sampled`` its column sums; ``pattern`` of ``+-1``; ``final_scores`` finite, ``(m,)``).
        """
        import json
        import zipfile

        path = Path(path)
        name = str(path)
        if not path.exists():
            raise FileNotFoundError(f"no such run file: {name!r}")
        if path.is_dir():
            raise ValueError(f"{name!r} is a directory, not a saved run (.npz)")

        def bad(what: str) -> ValueError:
            return ValueError(f"{name!r} is not a valid saved DP-SGD run: {what}")

        try:
            archive = np.load(path, allow_pickle=False)
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
            raise bad(f"cannot read it as a .npz archive ({exc})") from None
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise bad("it holds a single array, not a .npz archive (TrainingRun.save writes one)")
        with archive:
            missing = [k for k in ("observations", "mask", "participation", "meta") if k not in archive.files]
            if missing:
                raise bad(f"missing array(s) {', '.join(missing)} (it holds {', '.join(archive.files) or 'none'})")
            try:
                arrays = {k: archive[k] for k in archive.files}
            except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
                raise bad(f"an array cannot be read ({exc})") from None
        try:
            meta = json.loads(str(arrays["meta"][()]))
        except (ValueError, TypeError, IndexError) as exc:
            raise bad(f"'meta' is not a JSON string ({exc})") from None
        if not isinstance(meta, dict) or meta.get("format") != RUN_FORMAT:
            raise bad(f"'meta' does not name the format {RUN_FORMAT!r}")
        if meta.get("version") != RUN_FORMAT_VERSION:
            raise bad(f"format version {meta.get('version')!r}; this dpaudit reads version {RUN_FORMAT_VERSION}")
        cfg = meta.get("config")
        if not isinstance(cfg, dict):
            raise bad("'meta' has no config")
        unknown = sorted(set(cfg) - set(DPSGDConfig.__dataclass_fields__))
        if unknown:
            raise bad(f"unknown config field(s) {', '.join(unknown)}")
        try:
            config = DPSGDConfig(**cfg)
        except (TypeError, ValueError) as exc:
            raise bad(f"invalid config: {exc}") from None

        o = arrays["observations"]
        if o.ndim == 2 and o.shape[1] < 2:
            raise bad(f"'observations' must have at least 2 canaries (columns), got {o.shape[1]}")
        try:
            fields = validate_run_fields(config, o, arrays["mask"], arrays["participation"],
                                         sampled=arrays.get("sampled"), pattern=arrays.get("pattern"),
                                         final_scores=arrays.get("final_scores"))
        except ValueError as exc:
            raise bad(str(exc)) from None
        details = meta.get("details", {})
        if not isinstance(details, dict):
            raise bad("'meta' details must be a JSON object")
        try:
            seconds, accuracy = float(meta.get("seconds", math.nan)), float(meta.get("train_accuracy", math.nan))
        except (TypeError, ValueError):
            raise bad("'meta' seconds and train_accuracy must be numbers") from None
        return cls(config=config, variant=str(meta.get("variant", "unknown")), seconds=seconds,
                   train_accuracy=accuracy, details=details, **fields)


def _host_array(value) -> np.ndarray:
    """``value`` as a NumPy array: a torch tensor (any device) is detached and copied to the host
    once; anything else goes through ``np.asarray`` (no copy when it already is an array)."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def validate_run_fields(config, observations, mask, participation, *, sampled=None, pattern=None,
                        final_scores=None) -> dict:
    """Check a DP-SGD run's arrays against each other and the claimed config; return them converted.

    The one check behind :class:`TrainingRun` (when built) and :meth:`TrainingRun.load`.

    Parameters
    ----------
    config : DPSGDConfig
        The claim; its noise multiplier (``> 0``), sampling rate (``(0, 1]``) and steps
        (integer ``>= 1``) are checked again (a frozen config can still be forged).
    observations : array or torch tensor, shape (steps, m)
        Real numbers (bool/int are converted to float64; float32 is kept), all finite, ``steps
        == config.steps``, ``m >= 0``.
    mask : array, shape (m,)
        0/1 or bool.
    participation : array, shape (steps, m)
        0/1 or bool; never 1 for a canary whose mask is 0.
    sampled : array of int, shape (m,), optional
        Must equal ``participation.sum(axis=0)`` (computed when not given).
    pattern : array, shape (steps, m), optional
        ``+1``/``-1``.
    final_scores : array, shape (m,), optional
        Finite.

    Returns
    -------
    dict
        ``observations``, ``mask`` (bool), ``participation`` (bool), ``sampled``, ``pattern`` and
        ``final_scores`` (``None`` where not given), ready for ``TrainingRun(**fields, ...)``.

    Raises
    ------
    ValueError
        Naming the array and what is wrong; a NaN or infinite observation names its step and
        canary (the first one in step order).
    """
    try:
        DPSGDConfig.__post_init__(config)
    except (TypeError, AttributeError) as exc:
        raise ValueError(f"invalid config: {exc}") from None
    o = _host_array(observations)
    if o.ndim != 2 or o.dtype.kind not in "biuf":
        raise ValueError(f"'observations' must be a real array of shape (steps, m), got {o.dtype} of shape {o.shape}")
    if o.dtype.kind != "f":
        o = o.astype(float)
    bad_obs = ~np.isfinite(o)
    if bad_obs.any():
        t, i = (int(v) for v in np.argwhere(bad_obs)[0])
        raise ValueError(f"'observations' must be finite: observations[{t}, {i}] = {float(o[t, i])!r} (step {t}, canary {i}; "
                         f"{int(bad_obs.sum())} non-finite value(s) in all)")
    steps, m = o.shape
    if steps != config.steps:
        raise ValueError(f"'observations' has {steps} steps (rows), the config says steps={config.steps}")

    def zero_one(key: str, value, shape: tuple) -> np.ndarray:
        a = _host_array(value)
        if a.shape != shape:
            raise ValueError(f"{key!r} must have shape {shape}, got {a.shape}")
        if a.dtype != bool:
            if a.dtype.kind not in "iuf" or not np.all((a == 0) | (a == 1)):
                raise ValueError(f"{key!r} must hold 0/1 (bool), got {a.dtype}")
            a = a.astype(bool)
        return a

    mask = zero_one("mask", mask, (m,))
    part = zero_one("participation", participation, (steps, m))
    if part[:, ~mask].any():
        raise ValueError("'participation' marks an excluded canary (mask 0) in a step's batch")
    counts = part.sum(axis=0)
    if sampled is None:
        sampled = counts
    else:
        sampled = _host_array(sampled)
        if sampled.shape != (m,) or sampled.dtype.kind not in "iu" or not np.array_equal(sampled, counts):
            raise ValueError("'sampled' must be the per-canary count of steps in 'participation'")
    if pattern is not None:
        pattern = _host_array(pattern)
        if pattern.shape != (steps, m) or pattern.dtype.kind not in "iuf" or not np.all(np.abs(pattern) == 1):
            raise ValueError(f"'pattern' must hold +1/-1 in shape {(steps, m)}, got {pattern.dtype} of shape "
                             f"{pattern.shape}")
    if final_scores is not None:
        final_scores = _host_array(final_scores)
        if final_scores.shape != (m,) or final_scores.dtype.kind != "f" or not np.all(np.isfinite(final_scores)):
            raise ValueError(f"'final_scores' must be a finite float array of shape ({m},), got shape "
                             f"{final_scores.shape}")
    return {"observations": o, "mask": mask, "participation": part, "sampled": sampled, "pattern": pattern,
            "final_scores": final_scores}


#: The ``meta["format"]`` and ``meta["version"]`` of :meth:`TrainingRun.save`'s archives.
RUN_FORMAT = "dpaudit.dpsgd.TrainingRun"
RUN_FORMAT_VERSION = 1


def load_digits_task(num_train: int = 500, seed: int = 0):
    """scikit-learn's digits (8x8 images, 10 classes; shipped with the package): ``num_train``
    examples chosen by ``seed``, pixels scaled to [0, 1]. Returns ``(x, y)`` as float32 / int64
    arrays. Raises ImportError naming the extra (``dpaudit[opacus]``) without scikit-learn."""
    try:
        from sklearn.datasets import load_digits
    except ImportError as exc:  # pragma: no cover - the dev extras include scikit-learn
        raise ImportError("the digits task needs scikit-learn: pip install 'dpaudit[opacus]'") from exc
    x, y = load_digits(return_X_y=True)
    idx = np.random.default_rng(seed).permutation(len(y))[: check_int(num_train, "num_train")]
    return (x[idx] / 16.0).astype(np.float32), y[idx].astype(np.int64)


def _task_tensors(data, default, label_dtype, device):
    """Validated real examples as numpy arrays and torch tensors, and the start time:
    ``(x_np, y_np, x, y, t0)`` (shared by the one-run and many-run trainers)."""
    import time

    import torch

    x_np, y_np = default() if data is None else data
    x_np, y_np = np.asarray(x_np, dtype=np.float32), np.asarray(y_np, dtype=label_dtype)
    if x_np.ndim != 2 or y_np.shape != (x_np.shape[0],):
        raise ValueError(f"data must be (x of shape (N, features), y of shape (N,)), got {x_np.shape}, {y_np.shape}")
    return x_np, y_np, torch.as_tensor(x_np, device=device), torch.as_tensor(y_np, device=device), time.perf_counter()


CANARY_KINDS = ("dirac", "alternating", "signed", "random", "spread", "input", "split")
#: Dedicated tensors a ``"split"`` canary is spread over.
SPLIT_TENSORS = 4


def train_with_canaries(config: DPSGDConfig, *, canaries: int = 1000, variant: str = "correct", data=None,
                        hidden: int = 32, canary_kind: str = "dirac", seed: int = 0, device: str = "cpu") -> TrainingRun:
    """Train a small MLP with DP-SGD (or one of its buggy :data:`VARIANTS`) and ``canaries``
    canaries, each included with probability 1/2; return every step's observations.

    Canary kinds (``canary_kind``):

    * ``"dirac"`` (default): a gradient of norm ``canary_norm`` on a coordinate of its own in a
      block the model never reads (no interference); observation: the noisy sum there, over ``C``.
    * ``"alternating"``: a Dirac canary whose gradient changes sign every step (``+canary_norm
      e_i`` at even steps, ``-canary_norm e_i`` at odd ones; ``TrainingRun.pattern``). For the
      correct implementation the sign-corrected observation ``pattern[t, i] * o[t, i]`` has
      exactly the Dirac canary's law, so nothing is lost; but a canary whose gradient changes
      between steps is not cancelled with noise that is shared across steps (differences of
      steps cancel the noise and keep the canary: the ``"whitened"`` score of
      :func:`dpaudit.dpsgd.canary_scores` sees it). This is the white-box auditor's canary for
      the class "state shared across steps".
    * ``"signed"``: as ``"alternating"`` with an independent random sign per canary and step
      (drawn by the auditor before the run, independently of the mask): no fixed structure of
      shared noise (a period, an epoch) can hide it.
    * ``"random"``: a gradient of norm ``canary_norm`` along a random unit direction of the model's
      own parameter space (Andrew et al. 2024): it trains the model like any example, and real
      gradients and the other canaries interfere; observation: the noisy sum's component along
      the direction, over ``C``.
    * ``"spread"``: as ``"random"`` with the direction's norm split equally over the model's ``L``
      parameter tensors and ``canary_norm`` in each (``sqrt(L) canary_norm`` in all), so that
      anything done per tensor (clipping, noise, scaling) changes the observation (the kind
      :class:`dpaudit.dpsgd.Canaries` calls ``"spread"``). A canary of norm far above ``C``
      (``DPSGDConfig(canary_norm=1000 * C)``) is the ``"large"`` kind: a skipped clipping shows
      as an observation near ``canary_norm / C``.
    * ``"split"``: a Dirac canary split over :data:`SPLIT_TENSORS` (4) dedicated tensors that the
      model never reads (the block is 4 tensors of ``m`` coordinates; canary ``i`` has
      ``canary_norm / 2`` on coordinate ``i`` of each); observation: the noisy block projected on
      the canary's unit direction, over ``C``. For a correct step (clipping the whole row) it has
      exactly the Dirac canary's law (the projection of ``N(0, sigma^2 C^2 I)`` on a unit vector is
      ``N(0, sigma^2 C^2)``); anything done per tensor shows without interference from real
      gradients: per-tensor clipping (``"per-layer-clipping"``) clips each quarter to ``C``, so the
      canary contributes ``2 C`` (``sqrt(4)``) instead of ``C`` (the kind
      :class:`dpaudit.dpsgd.Canaries` calls ``"split"``).
    * ``"input"``: a crafted example (uniform random pixels, a random label) whose gradient the
      model computes like any other; observation: the inner product of its clipped gradient at
      the step's parameters with the noisy sum, over ``C^2``. Its final-model score (minus its
      loss) is kept too (``TrainingRun.final_scores``: the black-box view).

    Parameters
    ----------
    config : DPSGDConfig
        The claimed parameters and training settings.
    canaries : int
        Number ``m >= 2`` of gradient canaries (one coordinate each in the canary block); ``0``
        trains the same DP-SGD without any canary (Dirac-like kinds only: no canary block, empty
        observations; the baseline against which the canaries' cost is measured).
    variant : str
        A key of :data:`VARIANTS`.
    data : (x, y), optional
        Real training examples, shapes ``(N, features)`` float and ``(N,)`` class indices; default
        :func:`load_digits_task`.
    hidden : int
        Width of the MLP's hidden layer.
    canary_kind : {"dirac", "alternating", "signed", "random", "spread", "input", "split"}
        See above.
    seed : int
        Seeds the mask, the sampling, the noise and the initial parameters.
    device : str
        Torch device ('cpu', 'cuda').

    Returns
    -------
    TrainingRun

    Raises
    ------
    ValueError
        On an unknown variant or canary kind, 1 canary (or 0 of a kind other than the Dirac-like
        ones), or data of mismatched shapes.

    References
    ----------
    Abadi et al. (2016), Algorithm 1 (DP-SGD); Nasr et al. (2023), §4 (Dirac gradient canaries,
    observation at every step); Steinke, Nasr, Jagielski (2023) (inclusion with probability 1/2);
    Andrew et al. (2024) (random-direction canaries); Jagielski et al. (2020) (input canaries).
    """
    import time

    import torch
    from torch.func import functional_call, grad, vmap

    if variant not in VARIANTS:
        raise ValueError(f"unknown DP-SGD variant {variant!r}; choose one of {sorted(VARIANTS)}")
    m = check_int(canaries, "canaries", 0)
    if canary_kind not in CANARY_KINDS:
        raise ValueError(f"canary_kind must be one of {CANARY_KINDS}, got {canary_kind!r}")
    if m == 1 or (m == 0 and canary_kind not in ("dirac", "alternating", "signed", "split")):
        raise ValueError(f"canaries must be 0 (no canaries; Dirac-like kinds only) or at least 2, got {canaries!r} "
                         f"with canary_kind={canary_kind!r}")
    x_np, y_np, x, y, t0 = _task_tensors(data, load_digits_task, np.int64, device)
    rng = np.random.default_rng(seed)
    gen = torch.Generator(device=device).manual_seed(int(rng.integers(2**62)))
    n, feats = x_np.shape
    classes = int(y_np.max()) + 1
    model = torch.nn.Sequential(torch.nn.Linear(feats, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, classes)).to(device)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, device=device) * 0.1)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss_one(p, xi, yi):
        out = functional_call(model, p, (xi.unsqueeze(0),))
        return torch.nn.functional.cross_entropy(out, yi.unsqueeze(0))

    per_example = vmap(grad(loss_one), in_dims=(None, 0, 0))
    C, sigma, q, T = config.max_grad_norm, config.noise_multiplier, config.sampling_rate, config.steps
    cnorm = config.canary_gradient_norm
    mask = rng.random(m) < 0.5
    included = np.flatnonzero(mask)
    d_model = sum(v.numel() for v in params.values())
    if canary_kind in ("random", "spread"):
        dirs = torch.randn(m, d_model, generator=gen, device=device)
        if canary_kind == "spread":  # norm 1/sqrt(L) in each of the L parameter tensors
            offset = 0
            for v in params.values():
                sl = slice(offset, offset + v.numel())
                dirs[:, sl] /= dirs[:, sl].norm(dim=1, keepdim=True) * math.sqrt(len(params))
                offset += v.numel()
        else:
            dirs = dirs / dirs.norm(dim=1, keepdim=True)
        if canary_kind == "spread":  # canary_norm in each tensor: clipping any one tensor alone cuts it
            cnorm = cnorm * math.sqrt(len(params))
    elif canary_kind == "input":
        cx = torch.rand(m, feats, generator=gen, device=device) * float(x.max())
        cy = torch.randint(0, int(y_np.max()) + 1, (m,), generator=gen, device=device)
    dirac_like = canary_kind in ("dirac", "alternating", "signed", "split")
    parts = SPLIT_TENSORS if canary_kind == "split" else 1  # dedicated tensors of the canary block
    if canary_kind == "alternating":
        pattern = np.where(np.arange(T) % 2 == 0, 1.0, -1.0)[:, None] * np.ones((1, m))
    elif canary_kind == "signed":
        pattern = np.where(np.random.default_rng([seed, 7]).random((T, m)) < 0.5, -1.0, 1.0)
    else:
        pattern = np.ones((T, m))
    block_size = m * parts if dirac_like else 0
    sizes = [v.numel() for v in params.values()]  # the model's tensors, for per-tensor clipping

    def clip_rows(flat, rows):
        """``flat`` (rows, d_model): every row clipped to C as a whole, or each tensor's slice on its
        own for the per-layer-clipping variant."""
        if variant != "per-layer-clipping":
            return flat * torch.clamp(C / (flat.norm(dim=1, keepdim=True) + 1e-12), max=1.0)
        out, o = [], 0
        for sz in sizes:
            sl = flat[:, o:o + sz]
            out.append(sl * torch.clamp(C / (sl.norm(dim=1, keepdim=True) + 1e-12), max=1.0))
            o += sz
        return torch.cat(out, dim=1).reshape(rows, -1)
    noise_sd = sigma if variant == "noise-not-scaled" else sigma * C
    # The normaliser is public: the expected batch size of the canary design (each canary included
    # with probability 1/2), not of the realised mask (that would scale the update by a function of
    # the mask: the data-dependent normalisation the "realised-batch-size" variant is about).
    expected_batch = q * (n + m / 2.0)
    per_example_clip = variant not in ("no-clipping", "batch-clipping")
    obs = np.empty((T, m))
    part = np.zeros((T, m), dtype=bool)
    fixed_noise_seed = int(rng.integers(2**62))
    batch = max(1, int(round(q * (n + included.size))))
    order = None
    for t in range(T):
        if variant == "shuffled-batches":
            # Every example (real or included canary) in exactly one batch per epoch.
            pool = n + included.size
            per_epoch = max(1, int(math.ceil(pool / batch)))
            if t % per_epoch == 0:
                order = rng.permutation(pool)
            k = t % per_epoch
            chosen = order[k * batch:(k + 1) * batch]
            real_idx = chosen[chosen < n]
            can_idx = included[chosen[chosen >= n] - n]
        else:
            real_idx = np.flatnonzero(rng.random(n) < q) if q < 1 else np.arange(n)
            can_idx = included[rng.random(included.size) < q] if q < 1 else included
        part[t, can_idx] = True
        # Real examples: per-example gradients, clipped.
        g_sum = torch.zeros(d_model, device=device)
        if real_idx.size:
            ri = torch.as_tensor(real_idx, device=device)
            grads = per_example(params, x[ri], y[ri])
            flat = torch.cat([g.reshape(ri.numel(), -1) for g in grads.values()], dim=1)
            if per_example_clip:
                flat = clip_rows(flat, ri.numel())
            g_sum = flat.sum(dim=0)
        if variant == "noise-reused":
            g_noise = torch.Generator(device=device).manual_seed(fixed_noise_seed)
        else:
            g_noise = gen
        noise = torch.randn(d_model + block_size, generator=g_noise, device=device) * noise_sd
        if dirac_like:
            # Canaries: gradient pattern[t, i] * cnorm * e_i on the block, clipped like any example
            # (split: cnorm / sqrt(parts) on coordinate i of each of the block's `parts` tensors, every
            # tensor clipped on its own by the per-layer-clipping variant).
            block = np.zeros(m * parts)
            if not per_example_clip:
                piece = cnorm / math.sqrt(parts)
            elif variant == "per-layer-clipping":
                piece = min(C, cnorm / math.sqrt(parts))
            else:
                piece = min(C, cnorm) / math.sqrt(parts)
            for k_ in range(parts):
                block[k_ * m + can_idx] = pattern[t, can_idx] * piece
            if variant == "batch-clipping":  # the whole batch's gradient (model and block) clipped to C
                scale = min(1.0, C / (math.sqrt(float(g_sum.square().sum()) + float(np.square(block).sum())) + 1e-12))
                g_sum, block = g_sum * scale, block * scale
            noisy_model = g_sum + noise[:d_model]
            obs[t] = (block + noise[d_model:].cpu().numpy()).reshape(parts, m).sum(axis=0) / math.sqrt(parts) / C
        else:
            if canary_kind in ("random", "spread"):
                if variant == "per-layer-clipping":
                    cg = clip_rows(dirs * cnorm, m)
                else:
                    cg = dirs * (min(C, cnorm) if per_example_clip else cnorm)
            else:
                cgr = per_example(params, cx, cy)
                cg = torch.cat([g.reshape(m, -1) for g in cgr.values()], dim=1)
                if per_example_clip:
                    cg = clip_rows(cg, m)
            ci = torch.as_tensor(can_idx, device=device, dtype=torch.long)
            total = g_sum + cg[ci].sum(dim=0)
            if variant == "batch-clipping":
                total = total * torch.clamp(C / (total.norm() + 1e-12), max=1.0)
            noisy_model = total + noise
            direction = cg if canary_kind == "input" else dirs
            obs[t] = (direction @ noisy_model).cpu().numpy() / (C * C if canary_kind == "input" else C)
        if variant == "realised-batch-size":
            # The update divides by the realised |B| (at least 1) instead of the public expected size;
            # the observation is the update times the public normaliser, so it carries the same factor.
            factor = expected_batch / max(1, int(real_idx.size + can_idx.size))
            noisy_model = noisy_model * factor
            obs[t] *= factor
        # SGD step on the model's parameters (the canary block is observed, not trained).
        offset = 0
        with torch.no_grad():
            new = {}
            for k_, v in params.items():
                sz = v.numel()
                new[k_] = v - config.learning_rate * noisy_model[offset:offset + sz].reshape(v.shape) / expected_batch
                offset += sz
            params = new
    with torch.no_grad():
        acc = float((functional_call(model, params, (x,)).argmax(dim=1) == y).float().mean())
        final = None
        if canary_kind == "input":
            out = functional_call(model, params, (cx,))
            final = -torch.nn.functional.cross_entropy(out, cy, reduction="none").cpu().numpy().astype(float)
    return TrainingRun(observations=obs, mask=mask, sampled=part.sum(axis=0), participation=part, config=config, variant=variant,
                       seconds=time.perf_counter() - t0, train_accuracy=acc, final_scores=final,
                       pattern=pattern if dirac_like else None,
                       details={"num_train": int(n), "model_parameters": int(d_model), "canary_block": int(block_size),
                                "canary_kind": canary_kind, "seed": seed, "device": device})

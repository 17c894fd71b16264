"""Adapter for Opacus DP-SGD: a short full-batch training run as a mechanism.

Opacus is an optional dependency (``pip install 'dpaudit[opacus]'``); this module does not import
it (nor torch) until a mechanism is used.

The mechanism
-------------
:class:`OpacusMechanism` trains a small PyTorch model on the dataset with Opacus's own DP-SGD
machinery, ``opacus.GradSampleModule`` (per-example gradients) and ``opacus.optimizers.DPOptimizer``
(per-example clipping to ``max_grad_norm``, Gaussian noise of standard deviation
``noise_multiplier * max_grad_norm`` added to the sum, division by ``expected_batch_size``), for
``steps`` full-batch steps of SGD from fixed public initial parameters. Its output is the trained
parameters (flattened) or any function of the trained model, e.g. a canary's loss
(:func:`canary_loss`).

Records are labelled examples ``(x_1, ..., x_d, label)`` (the last column is the class index), so
the relation to audit under is :class:`~dpaudit.datasets.LabelledAddRemove`: Opacus's accounting
is for adding or removing one example. Every step uses all examples (no subsampling, sample rate
1), so the guarantee to claim is the one Opacus's accountant gives for ``steps`` steps at
``sample_rate=1.0`` (:meth:`OpacusMechanism.accounted_epsilon`), and ``expected_batch_size`` must be a
public constant: Opacus's ``make_private`` sets it from ``len(dataset)``, which under add/remove
would make the step size depend on the private dataset.

Randomness: the noise is drawn from a ``torch.Generator`` seeded from the ``rng`` given to
:meth:`~OpacusMechanism.sample`, so an audit is reproducible from its seed (``secure_mode`` off).

Cost: one output is ``steps`` forward/backward passes with per-example gradients, about 0.5 ms per
step for a linear model on a few examples (measured on this project's 2-core machine, Opacus 1.6.0,
torch 2.13 CPU; about 1 ms with other jobs running): use ``--samples`` of 5,000-10,000 and few
trials (``10,000 x 2`` outputs take 10-20 s).
"""

from __future__ import annotations

import copy
import warnings
from contextlib import contextmanager
from typing import Any, Callable

import numpy as np

from ..._torch import torch_threads
from ..._validate import check_delta, check_int, check_positive
from ._common import LibraryMechanism, import_optional

__all__ = ["OpacusMechanism", "OpacusPrivacyEngineMechanism", "canary_loss", "import_opacus"]

def import_opacus():
    """Import and return the ``opacus`` module (and ``opacus.optimizers``), or raise an error that
    says how to install it.

    Raises
    ------
    MissingDependencyError
        (a :class:`~dpaudit.errors.DPAuditError` and an :class:`ImportError`) if Opacus is not
        installed or does not import.
    """
    return import_optional("opacus", "Opacus", "opacus", also=("opacus.optimizers",))


def _split_examples(dataset: np.ndarray, integer_labels: bool):
    """(features float32 tensor (n, d), labels tensor (n,)) from rows ``(x_1..x_d, label)``."""
    import torch  # noqa: PLC0415

    arr = np.asarray(dataset, dtype=float)
    if arr.ndim != 2 or arr.shape[1] < 2:
        raise ValueError(
            f"labelled examples must be an array of shape (n_examples, d + 1) with the label last, got shape {arr.shape}"
        )
    if arr.shape[0] == 0:
        raise ValueError("DP-SGD needs at least one example (got an empty dataset)")
    features = torch.tensor(arr[:, :-1], dtype=torch.float32)
    labels = arr[:, -1]
    if integer_labels:
        if np.any(labels != np.round(labels)) or np.any(labels < 0):
            bad = labels[(labels != np.round(labels)) | (labels < 0)][0]
            raise ValueError(f"label {bad!r} is not a class index (a non-negative integer)")
        return features, torch.tensor(labels, dtype=torch.long)
    return features, torch.tensor(labels, dtype=torch.float32)


def canary_loss(features, label: int, loss: str | Callable = "cross_entropy") -> Callable:
    """An output function for :class:`OpacusMechanism`: the loss of one canary example.

    Parameters
    ----------
    features : sequence of float, length d
        The canary's features.
    label : int
        Its class index (or target value for a custom ``loss``).
    loss : "cross_entropy" or callable, default "cross_entropy"
        ``loss(outputs (1, k), target (1,)) -> scalar tensor``.

    Returns
    -------
    callable
        ``f(model) -> float``: the loss of the canary under the trained model (no gradients).

    Raises
    ------
    ValueError
        If ``features`` is not a non-empty 1-D sequence of finite numbers or ``label`` is not an
        integer with the cross-entropy loss.
    """
    x = np.asarray(features, dtype=float)
    if x.ndim != 1 or x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError(f"canary features must be a non-empty 1-D sequence of finite numbers, got {features!r}")
    if loss == "cross_entropy":
        if isinstance(label, bool) or int(label) != label or label < 0:
            raise ValueError(f"canary label must be a class index (non-negative integer), got {label!r}")
    elif not callable(loss):
        raise ValueError(f"loss must be 'cross_entropy' or a callable, got {loss!r}")

    def loss_of_canary(model) -> float:
        import torch  # noqa: PLC0415

        fn = torch.nn.functional.cross_entropy if loss == "cross_entropy" else loss
        dtype = torch.long if loss == "cross_entropy" else torch.float32
        with torch.no_grad():
            out = model(torch.as_tensor(x, dtype=torch.float32).reshape(1, -1))
            return float(fn(out, torch.as_tensor([label], dtype=dtype)))

    loss_of_canary.__qualname__ = f"canary_loss({x.tolist()}, {label!r})"
    return loss_of_canary


def _release(output, model, params):
    """One run's release: the trained parameters flattened to float64 (``output == "parameters"``),
    or ``output(model)`` as a NumPy value (a tensor is moved to the host)."""
    import torch  # noqa: PLC0415

    if output == "parameters":
        return torch.cat([p.detach().reshape(-1) for p in params]).numpy().astype(float)
    value = output(model)
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    return value


class OpacusMechanism(LibraryMechanism):
    """Full-batch DP-SGD with Opacus's per-example clipping and noise, as a mechanism.

    Parameters
    ----------
    model : torch.nn.Module or callable
        The model, or a function of no arguments returning one. Its parameters when first used
        are the public starting point of every run (a module is deep-copied; a builder is
        called once per :meth:`sample` and loaded with those parameters). Layers must be
        supported by Opacus's ``GradSampleModule`` (``Linear``, ``Conv``, ...).
    max_grad_norm : float or sequence of float
        Per-example clipping norm C (``DPOptimizer(max_grad_norm=...)``); with
        ``clipping="per_layer"`` one norm per parameter tensor, in ``model.parameters()`` order
        (``DPPerLayerOptimizer(max_grad_norm=[C_1, ..., C_k])``, whose overall norm, the noise's
        scale, is ``sqrt(sum C_i^2)``).
    expected_batch_size : int
        Public constant the noisy gradient sum is divided by (Opacus's ``expected_batch_size``
        with ``loss_reduction="mean"``). It must not depend on the dataset.
    noise_multiplier : float, optional
        sigma: the noise standard deviation is ``sigma * C``. Give it, or ``target_epsilon``.
    target_epsilon, target_delta : float, optional
        Calibrate sigma with ``opacus.accountants.utils.get_noise_multiplier(target_epsilon,
        target_delta, sample_rate=1.0, steps=steps, accountant=accountant)`` on first use, as
        ``PrivacyEngine.make_private_with_epsilon`` does.
    accountant : {"rdp", "prv", "gdp"}, default "rdp"
        Opacus accountant for the calibration and :meth:`accounted_epsilon`.
    steps : int, default 1
        Number of full-batch steps (all examples in every step).
    lr : float, default 1.0
        SGD learning rate.
    loss : "cross_entropy" or callable, default "cross_entropy"
        ``loss(outputs, labels) -> scalar`` with **mean** reduction over the batch (Opacus's
        ``loss_reduction="mean"``). With "cross_entropy" labels are class indices (long);
        a callable gets float labels of shape (n,).
    output : "parameters" or callable, default "parameters"
        What one run releases: all trained parameters flattened in ``model.parameters()``
        order, or ``output(model) -> scalar or 1-D`` (e.g. :func:`canary_loss`).
    name : str, optional
        Name used in reports.
    num_threads : int or None, default 1
        torch intra-op CPU threads during :meth:`sample` (restored afterwards); None leaves
        torch's setting alone. One thread is fastest for small models: on a busy 2-core machine
        two threads made a run of a 6-parameter model 10 times slower.
    clipping : {"flat", "per_layer"}, default "flat"
        Opacus's clipping: ``DPOptimizer`` (one norm over all parameters) or
        ``DPPerLayerOptimizer`` (each parameter tensor clipped to its own norm), as
        ``PrivacyEngine.make_private(clipping=...)`` picks them.
    secure_mode : bool, default False
        Passed to the optimizer: Opacus's ``_generate_noise`` then sums four Gaussian draws and
        halves the sum (opacus/optimizers/optimizer.py), still from the seeded generator here.

    Attributes
    ----------
    noise_multiplier_ : float or None
        sigma in use (set on first use when calibrated from ``target_epsilon``).

    Raises
    ------
    TypeError
        If ``model`` is neither a module nor callable, or ``output`` is not "parameters" or
        callable.
    ValueError
        If a number is out of range, both or neither of ``noise_multiplier`` and
        ``target_epsilon`` are given, ``target_delta`` is missing or not in (0, 1), the
        accountant or clipping is unknown, or ``max_grad_norm`` is a sequence without
        ``clipping="per_layer"`` (or a number with it).

    Notes
    -----
    One run: parameters reset to the starting point; ``steps`` times: ``zero_grad``, forward
    on all examples, mean loss, backward (per-example gradients), ``DPOptimizer.step()``
    (clip, sum, add ``N(0, (sigma C)^2 I)``, divide by ``expected_batch_size``, SGD update).
    Outputs are validated per run as in :class:`~dpaudit.mechanisms.base.CallableMechanism`.
    For one step with the loss averaged, adding an example whose gradient norm is at least C
    moves the parameters by ``lr * C / expected_batch_size`` along its clipped gradient, and the
    noise has standard deviation ``lr * sigma * C / expected_batch_size`` per coordinate: a
    Gaussian mechanism with ``mu = 1 / sigma`` (Dong, Roth, Su 2022, Thm 2.7).
    """

    def __init__(
        self,
        model: Any,
        *,
        max_grad_norm: float,
        expected_batch_size: int,
        noise_multiplier: float | None = None,
        target_epsilon: float | None = None,
        target_delta: float | None = None,
        accountant: str = "rdp",
        steps: int = 1,
        lr: float = 1.0,
        loss: str | Callable = "cross_entropy",
        output: str | Callable = "parameters",
        name: str | None = None,
        num_threads: int | None = 1,
        clipping: str = "flat",
        secure_mode: bool = False,
    ):
        if not callable(model):  # torch.nn.Module instances are callable too
            raise TypeError(f"model must be a torch.nn.Module or a function that builds one, got {model!r}")
        if clipping not in ("flat", "per_layer"):
            raise ValueError(f"clipping must be 'flat' or 'per_layer', got {clipping!r}")
        self.clipping, self.secure_mode = clipping, bool(secure_mode)
        if clipping == "per_layer":
            if isinstance(max_grad_norm, (int, float)) or not len(max_grad_norm):
                raise ValueError(f"clipping='per_layer' needs one max_grad_norm per parameter tensor, got {max_grad_norm!r}")
            self.max_grad_norm = tuple(check_positive(c, "max_grad_norm") for c in max_grad_norm)
        elif not isinstance(max_grad_norm, (int, float)):
            raise ValueError(f"a list of max_grad_norm needs clipping='per_layer', got {max_grad_norm!r}")
        else:
            self.max_grad_norm = check_positive(max_grad_norm, "max_grad_norm")
        self.expected_batch_size = check_int(expected_batch_size, "expected_batch_size")
        if (noise_multiplier is None) == (target_epsilon is None):
            raise ValueError(
                "give exactly one of noise_multiplier and target_epsilon, got "
                f"noise_multiplier={noise_multiplier!r}, target_epsilon={target_epsilon!r}"
            )
        if noise_multiplier is not None:
            self.noise_multiplier_ = check_positive(noise_multiplier, "noise_multiplier")
        else:
            check_positive(target_epsilon, "target_epsilon")
            check_delta(target_delta, "target_delta (with target_epsilon)")
            self.noise_multiplier_ = None
        self.target_epsilon, self.target_delta = target_epsilon, target_delta
        if accountant not in ("rdp", "prv", "gdp"):
            raise ValueError(f"accountant must be 'rdp', 'prv' or 'gdp', got {accountant!r}")
        self.accountant = accountant
        self.steps = check_int(steps, "steps")
        self.lr = check_positive(lr, "lr")
        if not (loss == "cross_entropy" or callable(loss)):
            raise ValueError(f"loss must be 'cross_entropy' or a callable, got {loss!r}")
        self.loss = loss
        if not (output == "parameters" or callable(output)):
            raise TypeError(f"output must be 'parameters' or a callable output(model), got {output!r}")
        self.output = output
        self.num_threads = None if num_threads is None else check_int(num_threads, "num_threads")
        self.model = model
        self._initial_state = None
        if name is None:
            noise = (
                f"sigma={self.noise_multiplier_:g}"
                if self.noise_multiplier_ is not None
                else f"sigma for eps={target_epsilon:g}, delta={target_delta:g}"
            )
            what = "parameters" if output == "parameters" else getattr(output, "__qualname__", "output")
            c = ",".join(f"{v:g}" for v in self.max_grad_norm) if clipping == "per_layer" else f"{self.max_grad_norm:g}"
            name = f"opacus:dp-sgd({noise}, C={c}, steps={self.steps}) -> {what}"
        self.name = name

    # -- privacy bookkeeping (Opacus's accountants) -------------------------------------------
    def calibrated_noise_multiplier(self) -> float:
        """sigma in use: ``noise_multiplier``, or calibrated from ``target_epsilon`` on first call.

        Raises
        ------
        MissingDependencyError
            If Opacus is not installed.
        """
        if self.noise_multiplier_ is None:
            import_opacus()
            from opacus.accountants.utils import get_noise_multiplier  # noqa: PLC0415

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.noise_multiplier_ = float(
                    get_noise_multiplier(
                        target_epsilon=self.target_epsilon,
                        target_delta=self.target_delta,
                        sample_rate=1.0,
                        steps=self.steps,
                        accountant=self.accountant,
                    )
                )
        return self.noise_multiplier_

    def accounted_epsilon(self, delta: float) -> float:
        """Epsilon (nats) that Opacus's accountant states for this run at ``delta``.

        ``steps`` steps at ``sample_rate=1.0`` and the sigma in use, with the accountant given at
        construction. This is the epsilon a user of Opacus would claim.

        Raises
        ------
        ValueError
            If ``delta`` is not in (0, 1).
        MissingDependencyError
            If Opacus is not installed.
        """
        check_delta(delta)
        sigma = self.calibrated_noise_multiplier()
        from opacus.accountants import create_accountant  # noqa: PLC0415

        acc = create_accountant(self.accountant)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(self.steps):
                acc.step(noise_multiplier=sigma, sample_rate=1.0)
            return float(acc.get_epsilon(delta=delta))

    # -- sampling ------------------------------------------------------------------------------
    def _setup(self, arr: np.ndarray):
        """What every run on ``arr`` shares: ``(sigma, features, labels, loss_fn, model)``, the
        calibrated noise multiplier, the examples split into features and labels, the loss and the
        model reset to its start, in training mode."""
        import torch  # noqa: PLC0415

        sigma = self.calibrated_noise_multiplier()
        features, labels = _split_examples(arr, integer_labels=self.loss == "cross_entropy")
        loss_fn = torch.nn.functional.cross_entropy if self.loss == "cross_entropy" else self.loss
        model = self._fresh_model()
        model.train()
        return sigma, features, labels, loss_fn, model

    def _fresh_model(self):
        import torch  # noqa: PLC0415

        if isinstance(self.model, torch.nn.Module):
            model = copy.deepcopy(self.model)
        else:
            model = self.model()
            if not isinstance(model, torch.nn.Module):
                raise TypeError(
                    f"the model builder {getattr(self.model, '__qualname__', self.model)!r} returned {model!r}, "
                    "not a torch.nn.Module"
                )
        if self._initial_state is None:
            self._initial_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            model.load_state_dict(self._initial_state)
        return model

    @contextmanager
    def _calls(self, arr: np.ndarray, rng: np.random.Generator):
        """One call trains once from the same start on ``arr`` (labelled examples, shape
        ``(n_examples, d + 1)``, features then the label, at least one example); ``rng`` seeds the
        ``torch.Generator`` of the noise. A bad label or an unsupported layer makes a call raise
        (a :class:`~dpaudit.errors.MechanismError` from :meth:`sample`)."""
        import_opacus()
        import torch  # noqa: PLC0415
        from opacus import GradSampleModule  # noqa: PLC0415
        from opacus.optimizers import DPOptimizer, DPPerLayerOptimizer  # noqa: PLC0415

        sigma, features, labels, loss_fn, model = self._setup(arr)
        module = GradSampleModule(model, batch_first=True, loss_reduction="mean")
        params = [p for p in module.parameters() if p.requires_grad]
        start = [p.detach().clone() for p in params]
        generator = torch.Generator().manual_seed(int(rng.integers(0, 2**63 - 1)))
        if self.clipping == "per_layer" and len(self.max_grad_norm) != len(params):
            raise ValueError(f"clipping='per_layer' needs {len(params)} max_grad_norm values (one per parameter "
                             f"tensor), got {len(self.max_grad_norm)}")
        optimizer = (DPPerLayerOptimizer if self.clipping == "per_layer" else DPOptimizer)(
            torch.optim.SGD(params, lr=self.lr),
            noise_multiplier=sigma,
            max_grad_norm=list(self.max_grad_norm) if self.clipping == "per_layer" else self.max_grad_norm,
            expected_batch_size=self.expected_batch_size,
            loss_reduction="mean",
            generator=generator,
            secure_mode=self.secure_mode,
        )
        steps, output = self.steps, self.output

        def one_run(_dataset):
            with torch.no_grad():
                for p, p0 in zip(params, start):
                    p.copy_(p0)
            for _ in range(steps):
                optimizer.zero_grad(set_to_none=True)
                loss_fn(module(features), labels).backward()
                optimizer.step()
            return _release(output, model, params)

        try:
            with torch_threads(self.num_threads):
                yield one_run  # torch's full-backward-hook notice, once per run, is silenced (quiet)
        finally:
            module._close()



class OpacusPrivacyEngineMechanism(OpacusMechanism):
    """One or more DP-SGD steps set up by Opacus's own ``PrivacyEngine.make_private``, as a mechanism.

    As :class:`OpacusMechanism`, but the module, optimizer and data loader come from
    ``opacus.PrivacyEngine().make_private(module=model, optimizer=SGD(lr), data_loader=
    DataLoader(dataset, batch_size=batch_size), noise_multiplier=sigma, max_grad_norm=C,
    poisson_sampling=poisson_sampling, noise_generator=<seeded torch.Generator>)``, so Opacus picks
    ``sample_rate = 1 / len(data_loader)`` and ``expected_batch_size = int(len(dataset) *
    sample_rate)`` itself (opacus/privacy_engine.py, ``make_private``). Each step takes the next
    batch of the returned data loader (one batch per epoch when ``batch_size`` is at least the
    dataset size). ``make_private`` runs once per dataset (per :meth:`sample` call) and its
    module/optimizer are reused for every output, parameters reset to the public start each run.

    Parameters
    ----------
    model : torch.nn.Module or callable
        As :class:`OpacusMechanism`.
    max_grad_norm : float
        Flat clipping norm C.
    batch_size : int
        The ``DataLoader``'s batch size (a public constant).
    poisson_sampling : bool, default True
        Passed to ``make_private`` (Opacus's default; at ``batch_size >= len(dataset)`` its sample
        rate is 1 and every example is in every batch).
    **kwargs
        ``noise_multiplier`` or ``target_epsilon``/``target_delta``, ``accountant``, ``steps``,
        ``lr``, ``loss``, ``output``, ``name``, ``num_threads`` as :class:`OpacusMechanism`
        (``clipping`` and ``secure_mode`` are not offered: ``make_private`` refuses a seeded
        noise generator in secure mode).

    Raises
    ------
    ValueError
        As :class:`OpacusMechanism`, or if ``batch_size`` is not a positive integer.

    Notes
    -----
    The calibration (:meth:`~OpacusMechanism.calibrated_noise_multiplier`) and
    :meth:`~OpacusMechanism.accounted_epsilon` assume sample rate 1 (``batch_size`` at least every
    dataset's size). The divisor is then ``len(dataset)``: data-dependent, unlike
    :class:`OpacusMechanism`'s public ``expected_batch_size``.
    """

    def __init__(self, model: Any, *, max_grad_norm: float, batch_size: int, poisson_sampling: bool = True, **kwargs):
        for bad in ("clipping", "secure_mode", "expected_batch_size"):
            if bad in kwargs:
                raise ValueError(f"OpacusPrivacyEngineMechanism does not take {bad!r} (make_private sets it)")
        self.batch_size = check_int(batch_size, "batch_size")
        self.poisson_sampling = bool(poisson_sampling)
        super().__init__(model, max_grad_norm=max_grad_norm, expected_batch_size=self.batch_size, **kwargs)
        self.expected_batch_size = None  # chosen by make_private from len(dataset)
        self.expected_batch_size_ = None  # the last value make_private chose (for reports)

    @contextmanager
    def _calls(self, arr: np.ndarray, rng: np.random.Generator):
        """One ``make_private`` per dataset ``arr`` (labelled examples, shape ``(n_examples, d + 1)``),
        then one training run per call from the same start; ``rng`` seeds the noise generator."""
        import_opacus()
        import torch  # noqa: PLC0415
        from opacus import PrivacyEngine  # noqa: PLC0415
        from torch.utils.data import DataLoader, TensorDataset  # noqa: PLC0415

        sigma, features, labels, loss_fn, model = self._setup(arr)
        generator = torch.Generator().manual_seed(int(rng.integers(0, 2**63 - 1)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # 'Secure RNG turned off', full-backward-hook notices
            module, optimizer, loader = PrivacyEngine().make_private(
                module=model,
                optimizer=torch.optim.SGD(model.parameters(), lr=self.lr),
                data_loader=DataLoader(TensorDataset(features, labels), batch_size=self.batch_size),
                noise_multiplier=sigma,
                max_grad_norm=self.max_grad_norm,
                poisson_sampling=self.poisson_sampling,
                noise_generator=generator,
            )
        self.expected_batch_size_ = optimizer.expected_batch_size
        params = [p for p in module.parameters() if p.requires_grad]
        start = [p.detach().clone() for p in params]
        steps, output = self.steps, self.output

        def one_run(_dataset):
            with torch.no_grad():
                for p, p0 in zip(params, start):
                    p.copy_(p0)
            done = 0
            while done < steps:
                for x, y in loader:
                    if done == steps:
                        break
                    optimizer.zero_grad(set_to_none=True)
                    loss_fn(module(x), y).backward()
                    optimizer.step()
                    done += 1
            return _release(output, model, params)

        try:
            with torch_threads(self.num_threads), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                yield one_run
        finally:
            module._close()

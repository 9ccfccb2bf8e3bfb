"""One training loop, :func:`fit`, driven by a plain-data :class:`TrainConfig`.

``fit`` is the loop of the published set-ups (docs/reference.md 3 and 6) and nothing more: SGD with
momentum and weight decay; a learning rate computed per epoch by the pure function
:func:`learning_rate` (linear warm-up, then multi-step, cosine or constant); deferred
re-weighting (DRW: class-balanced weights from ``drw_epoch`` on); optional gradient-norm
clipping; a chosen precision (float32 by default, as both reference codes train; bfloat16 or
float16 autocast on request); channels-last memory for images; evaluation on the test split; a
checkpoint after every epoch, from which ``resume=True`` continues.

The two published schedules, as configs::

    # LDAM-DRW / ELM on CIFAR-LT (ResNet-32): warm-up 5, lr x0.01 at 160 and x0.0001 at 180
    TrainConfig(epochs=200, lr=0.1, weight_decay=2e-4, warmup_epochs=5,
                schedule="multistep", milestones=(160, 180), lr_factors=(0.01, 1e-4),
                drw_epoch=160, augment=True, mean=CIFAR_MEAN, std=CIFAR_STD)
    # APL on noisy MNIST: cosine annealing to 1e-3, Nesterov, gradient norm clipped at 5
    TrainConfig(epochs=50, lr=0.01, weight_decay=1e-2, nesterov=True, schedule="cosine",
                eta_min=1e-3, grad_clip=5.0)

Resuming is exact: every random choice of epoch ``e`` (batch order, crops, flips, and any
randomness inside the model) is a function of ``(seed, e)`` only, and the learning rate and
class weights are functions of ``e``, so a run stopped after epoch ``e`` and resumed from its
checkpoint ends with the same parameters, bit for bit on CPU, as a run that never stopped.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from palviz.checks import (
    check_bool,
    check_choice,
    check_int,
    check_non_negative,
    check_positive,
    check_range,
    check_real,
    invalid,
)
from palviz.data import BatchIterator
from palviz.evaluation import (
    PRECISIONS,
    autocast,
    check_precision,
    collapse_readings,
    eval_batch_size,
    evaluate,
    evaluate_batches,
    grad_scaler,
    resolve_device,
)
from palviz.files import save_torch
from palviz.losses import class_balanced_weights
from palviz.losses.mixup import mixup_batch, mixup_loss
from palviz.metrics import min_prototype_angle, nan_to_none

# evaluate and the device and precision helpers are palviz.evaluation's; the callers of the
# training loop find them here too
__all__ = [
    "PRECISIONS",
    "FitRecord",
    "TrainConfig",
    "autocast",
    "evaluate",
    "fit",
    "grad_scaler",
    "learning_rate",
    "resolve_device",
]

SCHEDULES = ("multistep", "cosine", "constant")
CHECKPOINT_FORMAT = 1
# Config fields that may change between a checkpoint and its resumption: they change how a
# run is shown or how fast it goes, not which parameters it ends with (on the same device).
_RESUMABLE_CHANGES = ("progress", "eval_every", "device", "channels_last")


# --------------------------------------------------------------------------- config


def _tuple_of(field: str, value: Any, check: Any, rule: str, *, empty: bool = True) -> tuple:
    """``value`` (a list from JSON, an array: any sequence) as a tuple whose every item passes
    ``check(name, item)``, else an error naming ``TrainConfig.<field>`` and ``rule``."""
    name = f"TrainConfig.{field}"
    value = tuple(value) if isinstance(value, (list, tuple, np.ndarray)) else value
    if not isinstance(value, tuple) or (not value and not empty):
        raise invalid(name, value, rule)
    try:
        return tuple(check(name, v) for v in value)
    except ValueError:
        raise invalid(name, value, rule) from None


def _is_device(name: Any) -> bool:
    """Whether ``name`` is ``"auto"`` or the name of a torch device."""
    try:
        return isinstance(name, str) and (name == "auto" or torch.device(name) is not None)
    except RuntimeError:
        return False


@dataclass
class TrainConfig:
    """Everything :func:`fit` needs besides the model, loss and data; plain data that
    round-trips through JSON (:meth:`to_dict`, :meth:`from_dict`), every field checked once,
    when the config is made (an error names the field, the value and what is allowed).

    Optimiser: SGD with ``momentum`` (``nesterov`` optional) and ``weight_decay`` on every
    parameter, ``batch_size`` samples per step, ``epochs`` passes over the training split.

    Learning rate of epoch ``e`` (0-based; see :func:`learning_rate`):

    - ``warmup_epochs = W > 0``: ``lr * (e + 1) / W`` for ``e < W`` (LDAM-DRW: ``W = 5``);
    - ``schedule="multistep"``: ``lr`` times ``gamma ** (milestones passed)``, or, when
      ``lr_factors`` is given, times ``lr_factors[i]`` once the ``i``-th milestone has passed
      (LDAM-DRW's "x0.01 at 160, x0.0001 at 180" is ``milestones=(160, 180),
      lr_factors=(0.01, 1e-4)``); a milestone ``m`` takes effect at epoch ``m``;
    - ``schedule="cosine"``: ``eta_min + (lr - eta_min) * (1 + cos(pi * t)) / 2`` with
      ``t = (e - W) / (epochs - W)``, which is ``CosineAnnealingLR(T_max=epochs)`` stepped per
      epoch when ``W = 0`` (the APL set-ups);
    - ``schedule="constant"``: ``lr``.

    Milestones and ``drw_epoch`` at or past ``epochs`` are allowed and never reached (a short
    run of a long recipe).

    DRW: from epoch ``drw_epoch`` on (0-based, LDAM-DRW: 160), the loss's ``weight`` is set to
    ``class_balanced_weights(cls_num_list, cb_beta)``, before it to ``None`` (all ones).

    Data: ``augment`` (random crop with padding 4 + horizontal flip, images only),
    ``rotation`` (a random rotation by an angle drawn uniformly from ``[-rotation, rotation]``
    degrees, after the crop and flip, images only; APL's CIFAR-100 recipe is 20, its
    ``RandomRotation(20)``; 0 for none), ``mean`` / ``std`` (per-channel normalisation, or
    ``None``). ``grad_clip``: maximum gradient L2 norm (APL: 5.0), ``None`` for no clipping.
    ``mixup_alpha``: mixup (:mod:`palviz.losses.mixup`), lam ~ Beta(alpha, alpha) per batch
    from a generator of ``(seed, epoch)``; 0 (the default) changes nothing and draws nothing.

    Precision (one of :data:`PRECISIONS`, on CPU and CUDA alike): ``"fp32"`` (the default, and
    what both reference codes train in), ``"bf16"`` (``torch.autocast`` to bfloat16) or
    ``"fp16"`` (autocast to float16 with a gradient scaler). Autocast computes convolutions and
    matrix products, cosine logits included, in the low precision, so ``bf16`` and ``fp16``
    change the results, not only the speed; a device that cannot autocast to the dtype is
    refused when :func:`fit` starts.

    Speed: ``channels_last`` stores image batches and conv weights as NHWC (on CUDA and
    on CPU, where oneDNN convolutions are as fast or faster that way); it has no effect on
    ``[N, D]`` inputs. ``device``: ``"auto"`` (CUDA if available), ``"cpu"``,
    ``"cuda"``, ``"cuda:1"``, ... ``eval_every``: evaluate the test split every that many
    epochs (and always after the last); 0 evaluates after the last epoch only. ``progress``:
    a progress bar over epochs.
    """

    epochs: int = 200
    batch_size: int = 128
    lr: float = 0.1
    momentum: float = 0.9
    nesterov: bool = False
    weight_decay: float = 2e-4
    schedule: str = "multistep"
    milestones: tuple[int, ...] = (160, 180)
    gamma: float = 0.1
    lr_factors: tuple[float, ...] | None = None
    warmup_epochs: int = 0
    eta_min: float = 0.0
    drw_epoch: int | None = None
    cb_beta: float = 0.9999
    grad_clip: float | None = None
    augment: bool = False
    rotation: float = 0.0
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None
    precision: str = "fp32"
    channels_last: bool = True
    seed: int = 0
    device: str = "auto"
    eval_every: int = 1
    progress: bool = True
    mixup_alpha: float = 0.0

    def __post_init__(self) -> None:
        # Every value is checked and stored as plain Python data (tuples, ints, floats), so
        # equal configs compare equal and the config is JSON-ready.
        f = "TrainConfig.{}".format
        self.epochs = check_int(f("epochs"), self.epochs, 1)
        self.batch_size = check_int(f("batch_size"), self.batch_size, 1)
        self.lr = check_positive(f("lr"), self.lr)
        self.momentum = check_range(f("momentum"), self.momentum, 0.0, 1.0, high_open=True)
        self.nesterov = check_bool(f("nesterov"), self.nesterov)
        if self.nesterov and self.momentum == 0:
            raise invalid(f("momentum"), self.momentum, "> 0 when nesterov=True")
        self.weight_decay = check_non_negative(f("weight_decay"), self.weight_decay)
        self.schedule = check_choice(f("schedule"), self.schedule, SCHEDULES)
        rule = "a tuple of integers >= 1"
        ms = _tuple_of("milestones", self.milestones, lambda n, v: check_int(n, v, 1), rule)
        if any(a >= b for a, b in zip(ms[:-1], ms[1:], strict=True)):
            raise invalid(f("milestones"), ms, "strictly increasing")
        self.milestones = ms
        self.gamma = check_positive(f("gamma"), self.gamma)
        if self.lr_factors is not None:
            rule = "None or a tuple of numbers > 0"
            self.lr_factors = _tuple_of("lr_factors", self.lr_factors, check_positive, rule)
            if len(self.lr_factors) != len(ms):
                rule = f"one factor per milestone ({len(ms)}: {ms})"
                raise invalid(f("lr_factors"), self.lr_factors, rule)
        self.warmup_epochs = check_int(f("warmup_epochs"), self.warmup_epochs, 0)
        self.eta_min = check_non_negative(f("eta_min"), self.eta_min)
        if self.eta_min > self.lr:
            raise invalid(f("eta_min"), self.eta_min, f"<= lr ({self.lr})")
        if self.drw_epoch is not None:
            self.drw_epoch = check_int(f("drw_epoch"), self.drw_epoch, 0)
        self.cb_beta = check_range(f("cb_beta"), self.cb_beta, 0.0, 1.0, high_open=True)
        if self.grad_clip is not None:
            self.grad_clip = check_positive(f("grad_clip"), self.grad_clip)
        self.augment = check_bool(f("augment"), self.augment)
        self.rotation = check_range(f("rotation"), self.rotation, 0.0, 180.0)
        rule = "None or a non-empty tuple of numbers (one per channel)"
        for name in ("mean", "std"):
            if getattr(self, name) is not None:
                value = _tuple_of(name, getattr(self, name), check_real, rule, empty=False)
                setattr(self, name, value)
        if (self.mean is None) != (self.std is None):
            raise invalid(f("std"), self.std, f"given together with mean (mean={self.mean!r})")
        if self.mean is not None and len(self.mean) != len(self.std):
            raise invalid(f("std"), self.std, f"as long as mean ({len(self.mean)} values)")
        if self.std is not None and min(self.std) <= 0:
            raise invalid(f("std"), self.std, "all > 0")
        self.precision = check_choice(f("precision"), self.precision, PRECISIONS)
        self.channels_last = check_bool(f("channels_last"), self.channels_last)
        self.seed = check_int(f("seed"), self.seed, 0)
        if not _is_device(self.device):
            rule = "'auto' or a torch device name ('cpu', 'cuda', 'cuda:1', ...)"
            raise invalid(f("device"), self.device, rule)
        self.eval_every = check_int(f("eval_every"), self.eval_every, 0)
        self.progress = check_bool(f("progress"), self.progress)
        self.mixup_alpha = check_non_negative(f("mixup_alpha"), self.mixup_alpha)

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON-ready plain data (tuples become lists)."""
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainConfig:
        """The inverse of :meth:`to_dict`; unknown keys are an error."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown TrainConfig fields {unknown}; allowed: {sorted(names)}")
        return cls(**d)


def learning_rate(config: TrainConfig, epoch: int) -> float:
    """The learning rate of (0-based) ``epoch``: warm-up, then the schedule of ``config``
    (see :class:`TrainConfig`). A pure function, so a resumed run needs no scheduler state."""
    if epoch < config.warmup_epochs:
        return config.lr * (epoch + 1) / config.warmup_epochs  # LDAM-DRW: lr * (e + 1) / 5
    if config.schedule == "constant":
        return config.lr
    if config.schedule == "multistep":
        passed = sum(epoch >= m for m in config.milestones)
        if passed == 0:
            return config.lr
        if config.lr_factors is not None:
            return config.lr * config.lr_factors[passed - 1]
        return config.lr * config.gamma**passed
    # cosine annealing from lr (end of warm-up) towards eta_min (epoch == epochs)
    t = (epoch - config.warmup_epochs) / max(1, config.epochs - config.warmup_epochs)
    c = (1 + math.cos(math.pi * t)) / 2
    # = eta_min + (lr - eta_min) * c, written so that c = 1 and c = 0 give lr and eta_min exactly
    return config.lr * c + config.eta_min * (1 - c)


# --------------------------------------------------------------------------- records


@dataclass
class FitRecord:
    """What :func:`fit` returns: one training run's history (not the run cache's
    :class:`palviz.experiments.RunResult`: a finished run's spec, metrics and folder).

    Attributes:
        config: the :class:`TrainConfig` as a dict.
        history: one dict per epoch: ``epoch``, ``lr``, ``train_loss``, ``train_acc``,
            ``seconds`` (the training pass), and on evaluated epochs ``test_acc``,
            ``per_class_acc`` (a list; ``None`` for a class absent from the test split) and
            ``min_prototype_angle`` (degrees, of the head's prototypes; PAL Fig. 5) and the
            neural-collapse and calibration readings of the test split
            (:func:`palviz.evaluation.collapse_readings`: NC1-NC4, ECE; logits scaled by the
            loss's ``s`` where it has one, as LDAM, ELM and PAL's margin loss scale cosines).
            ``train_loss`` and ``train_acc`` are running means over the epoch: each batch's
            loss and correct predictions (on the training labels, noisy ones included, in
            training mode and with any augmentation) are counted as the batch is trained on,
            while the weights change from batch to batch, and divided by the number of
            training samples. They are not the loss or accuracy of the end-of-epoch model on
            the training set (no evaluation pass is spent on that), so the last epoch's
            ``train_acc`` is not the fit at the end of training; while the fit improves, it
            trails it. Plots label it "training accuracy (running mean over each epoch)".
        final: the last epoch's row (``test_acc``, ``per_class_acc``, ``train_loss``, ...).
        last_acc: test accuracy after the last epoch (``None`` without a test split).
        best_acc, best_epoch: the best test accuracy over the evaluated epochs and its epoch.
            Selecting on the test split is what the reference code reports; it is labelled
            as "best" wherever shown and never replaces ``last_acc``.
        seconds: wall time of training and evaluation, summed over resumptions.
        resumed_from: for each time the run was resumed from its checkpoint, how many epochs
            were done then (``[]``: trained in one go). An attempt killed before its first
            checkpoint leaves no trace here.
    """

    config: dict[str, Any]
    history: list[dict[str, Any]]
    final: dict[str, Any]
    last_acc: float | None
    best_acc: float | None
    best_epoch: int | None
    seconds: float
    resumed_from: list[int] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready plain data."""
        return dataclasses.asdict(self)


# --------------------------------------------------------------------------- helpers


def _epoch_seed(seed: int, epoch: int) -> int:
    """A torch seed that is a pure function of ``(seed, epoch)``, distinct across both."""
    return int(np.random.SeedSequence([seed, epoch, 1]).generate_state(1, dtype=np.uint64)[0] >> 1)


def _split(name: str, data: Any) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise ValueError(f"{name} must be a pair (x, y) of tensors, got {type(data).__name__}")
    x, y = (torch.as_tensor(v) for v in data)
    if len(x) != len(y) or len(x) == 0:
        raise ValueError(
            f"{name}: x and y must hold the same number (> 0) of samples, got {len(x)} and {len(y)}"
        )
    return x, y


def _check_resumable(saved: dict[str, Any], config: TrainConfig, path: Path) -> None:
    """``saved`` (a checkpoint) is of :data:`CHECKPOINT_FORMAT` and was written with
    ``config``, up to the fields of ``_RESUMABLE_CHANGES``."""
    if saved.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(
            f"cannot resume from {path}: it is a checkpoint of format {saved.get('format')!r}, "
            f"this version of palviz reads format {CHECKPOINT_FORMAT!r}; delete it or train "
            "without resume"
        )
    old, new = saved["config"], config.to_dict()
    keys = sorted((set(old) | set(new)) - set(_RESUMABLE_CHANGES))
    changed = [k for k in keys if old.get(k) != new.get(k)]
    if changed:
        detail = ", ".join(f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in changed)
        raise ValueError(
            f"cannot resume from {path}: it was written by a run with another config ({detail}); "
            f"only {', '.join(_RESUMABLE_CHANGES)} may change"
        )


def _drw_weights(
    model: nn.Module, loss_fn: nn.Module, config: TrainConfig, cls_num_list: list[int] | None
) -> torch.Tensor | None:
    """The class-balanced weights DRW switches to (``None`` without DRW), checked up front."""
    if config.drw_epoch is None:
        return None
    if cls_num_list is None:
        raise ValueError(
            f"TrainConfig.drw_epoch={config.drw_epoch} needs cls_num_list (the training "
            "count of each class) for the class-balanced weights; got cls_num_list=None"
        )
    if not hasattr(loss_fn, "weight"):
        raise ValueError(
            f"DRW sets loss_fn.weight, but {type(loss_fn).__name__} has no weight attribute"
        )
    cb_weights = class_balanced_weights(cls_num_list, config.cb_beta)
    prototypes = getattr(getattr(model, "head", None), "prototypes", None)
    if prototypes is not None and len(cb_weights) != len(prototypes):
        raise ValueError(
            f"cls_num_list has {len(cb_weights)} classes, the model's head {len(prototypes)}"
        )
    return cb_weights


# --------------------------------------------------------------------------- fit


def fit(
    model: nn.Module,
    loss_fn: nn.Module,
    train: tuple[torch.Tensor, torch.Tensor],
    test: tuple[torch.Tensor, torch.Tensor] | None = None,
    config: TrainConfig | None = None,
    *,
    cls_num_list: list[int] | None = None,
    checkpoint_path: str | os.PathLike | None = None,
    resume: bool = False,
    name: str | None = None,
) -> FitRecord:
    """Train ``model`` in place with ``loss_fn`` on ``train`` and return the run's record.

    Args:
        model: a :class:`palviz.models.Classifier` (``forward`` -> logits,
            ``forward_features`` -> ``(logits, features)``).
        loss_fn: ``(logits, targets) -> mean loss``; with DRW it must have a settable
            ``weight`` attribute (every class-imbalance loss of :mod:`palviz.losses` has). A
            loss with ``needs_features = True`` is called as ``loss_fn(logits, targets,
            features=h)`` with the penultimate features ``h``; a loss with a method
            ``set_epoch(epoch, epochs)`` has it called at the start of every epoch (both:
            :class:`palviz.losses.IBFocalLoss`).
        train, test: ``(x, y)``: ``[N, C, H, W]`` images (``uint8``, normalised per batch) or
            ``[N, D]`` float vectors, and ``[N]`` integer labels. ``test`` is optional.
        config: a :class:`TrainConfig` (default: ``TrainConfig()``).
        cls_num_list: training count of each class; required when ``config.drw_epoch`` is set.
        checkpoint_path: where to write a checkpoint after every epoch (atomically; load
            with ``torch.load(path, weights_only=True)``): ``model``, ``optimizer`` and
            ``scaler`` state dicts, ``epoch``, ``history``, ``config``, ``seconds``.
        resume: continue from ``checkpoint_path`` if it exists (from the epoch after the one
            it holds; the config must match, see ``_RESUMABLE_CHANGES``); start afresh if it
            does not. A resumption prints ``resuming NAME from epoch N of M (attempt A)`` to
            stderr (N epochs done; the log of a Slurm task) and is recorded in the record's
            ``resumed_from``.
        name: the run's name in that line (default: ``checkpoint_path``).

    Returns:
        A :class:`FitRecord`.
    """
    # -- every check before any work
    config = TrainConfig() if config is None else config
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    x, y = _split("train", train)
    test = None if test is None else _split("test", test)
    if resume and checkpoint_path is None:
        raise ValueError("resume=True needs a checkpoint_path")
    cb_weights = _drw_weights(model, loss_fn, config, cls_num_list)
    if config.rotation > 0 and x.dim() != 4:
        raise invalid(
            "TrainConfig.rotation",
            config.rotation,
            f"0 for inputs that are not N x C x H x W images (got shape {tuple(x.shape)})",
        )
    device = resolve_device(config.device)
    check_precision(device, config.precision, "TrainConfig.precision")

    # -- device, data, optimiser (SGD; a gradient scaler that is active with float16 only)
    channels_last = config.channels_last and x.dim() == 4
    model.to(device)
    if channels_last:
        model.to(memory_format=torch.channels_last)
    if isinstance(loss_fn, nn.Module):
        loss_fn.to(device)
    stats = {"mean": config.mean, "std": config.std, "device": device}
    train_batches = BatchIterator(
        x, y, config.batch_size, shuffle=True, augment=config.augment,
        rotation=config.rotation, seed=config.seed, **stats,
    )  # fmt: skip
    test_batches = None
    if test is not None:
        test_batches = BatchIterator(*test, eval_batch_size(device), shuffle=False, **stats)
    optimizer = torch.optim.SGD(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay,
        momentum=config.momentum, nesterov=config.nesterov,
    )  # fmt: skip
    scaler = grad_scaler(device, config.precision)
    if cb_weights is not None:
        cb_weights = cb_weights.to(device)

    # -- resume: the model, optimiser and scaler of the last finished epoch
    start, history, seconds, resumed_from = 0, [], 0.0, []
    if resume and Path(checkpoint_path).exists():
        state = torch.load(checkpoint_path, map_location=device, weights_only=True)
        _check_resumable(state, config, Path(checkpoint_path))
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scaler.load_state_dict(state["scaler"])
        start, history, seconds = state["epoch"] + 1, state["history"], state["seconds"]
        resumed_from = [*map(int, state["resumed_from"]), start]
        print(
            f"resuming {name or checkpoint_path} from epoch {start} of {config.epochs} "
            f"(attempt {len(resumed_from) + 1})",
            file=sys.stderr,
            flush=True,
        )

    # -- train
    bar = tqdm(
        range(start, config.epochs), initial=start, total=config.epochs, desc="fit",
        unit="epoch", disable=not config.progress,
    )  # fmt: skip
    for epoch in bar:
        t0 = time.perf_counter()
        # the seed, the learning rate and the class weights of an epoch are functions of it
        torch.manual_seed(_epoch_seed(config.seed, epoch))  # model-side randomness, if any
        lr = learning_rate(config, epoch)
        for group in optimizer.param_groups:
            group["lr"] = lr
        if cb_weights is not None:  # DRW: all ones (None) before drw_epoch, then class-balanced
            loss_fn.weight = cb_weights if epoch >= config.drw_epoch else None
        if hasattr(loss_fn, "set_epoch"):  # a loss with stages of its own (IB)
            loss_fn.set_epoch(epoch, config.epochs)
        model.train()
        # running means over the epoch, each batch counted before its step, summed on the
        # device (no host sync per batch)
        loss_sum = torch.zeros((), device=device)
        correct = torch.zeros((), dtype=torch.long, device=device)
        mix_rng = np.random.default_rng([config.seed, epoch, 2]) if config.mixup_alpha > 0 else None
        for xb, yb in train_batches.epoch(epoch):
            xb, mix = mixup_batch(xb, mix_rng, config.mixup_alpha)  # lam x + (1 - lam) x[perm]
            if channels_last:
                xb = xb.contiguous(memory_format=torch.channels_last)
            with autocast(device, config.precision):
                if getattr(loss_fn, "needs_features", False):  # IB: the penultimate features
                    logits, features = model.forward_features(xb)
                    kw = {"features": features}
                else:
                    logits, kw = model(xb), {}
                loss = mixup_loss(loss_fn, logits, yb, mix, **kw)  # L(z, y) without mixup
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            if config.grad_clip is not None:
                scaler.unscale_(optimizer)  # clip the true gradients, not the scaled ones
                nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            scaler.step(optimizer)
            scaler.update()
            loss_sum += loss.detach().float() * len(yb)
            correct += (logits.detach().argmax(1) == yb).sum()
        n = train_batches.num_samples
        row: dict[str, Any] = {
            "epoch": epoch,
            "lr": lr,
            "train_loss": loss_sum.item() / n,
            "train_acc": correct.item() / n,
            "seconds": time.perf_counter() - t0,
        }
        # evaluate every eval_every epochs, and always after the last
        due = config.eval_every and (epoch + 1) % config.eval_every == 0
        if test_batches is not None and (due or epoch == config.epochs - 1):
            result = evaluate_batches(
                model, test_batches, precision=config.precision, keep_outputs=True
            )
            row["test_acc"] = result["acc"]
            row["per_class_acc"] = nan_to_none(result["per_class_acc"])
            head = getattr(model, "head", None)
            if getattr(head, "prototypes", None) is not None:
                # PAL Fig. 5: how far apart the class vectors are; neural collapse, calibration
                row["min_prototype_angle"] = min_prototype_angle(head.prototypes.float().cpu())
                row.update(collapse_readings(result, head, getattr(loss_fn, "s", 1.0)))
        history.append(row)
        seconds += time.perf_counter() - t0
        if checkpoint_path is not None:
            save_torch(
                checkpoint_path,
                {
                    "format": CHECKPOINT_FORMAT,
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "scaler": scaler.state_dict(),
                    "epoch": epoch,
                    "history": history,
                    "config": config.to_dict(),
                    "seconds": seconds,
                    "resumed_from": resumed_from,
                },
            )
        shown = {"loss": f"{row['train_loss']:.3f}", "acc": f"{row['train_acc']:.3f}"}
        if "test_acc" in row:
            shown["test"] = f"{row['test_acc']:.3f}"
        bar.set_postfix(shown)
    bar.close()

    # -- the record
    if not history:
        raise ValueError(f"nothing to train: epochs={config.epochs}, start={start}")
    evaluated = [r for r in history if "test_acc" in r]
    best = max(evaluated, key=lambda r: r["test_acc"], default=None)
    return FitRecord(
        config=config.to_dict(),
        history=history,
        final=dict(history[-1]),
        last_acc=history[-1].get("test_acc"),
        best_acc=None if best is None else best["test_acc"],
        best_epoch=None if best is None else best["epoch"],
        seconds=seconds,
        resumed_from=list(resumed_from),
    )

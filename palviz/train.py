"""One training loop, :func:`fit`, driven by a plain-data :class:`TrainConfig`.

``fit`` is the loop of the published set-ups (docs/reference.md 3 and 6) and nothing more: SGD with
momentum and weight decay; a learning rate computed per epoch by the pure function
:func:`learning_rate` (linear warm-up, then multi-step, cosine or constant); deferred
re-weighting (DRW: class-balanced weights from ``drw_epoch`` on); optional gradient-norm
clipping; float32 throughout, as both reference codes train; channels-last memory for image
batches; evaluation on the test split, with neural-collapse and calibration readings at a few
of the evaluated epochs (:func:`reading_epochs`); a checkpoint after every epoch, from which
``resume=True`` continues.

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
Evaluation draws no random numbers, so what is evaluated and read never changes the training.
"""

from __future__ import annotations

import dataclasses
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

from palviz.checks import invalid
from palviz.data import BatchIterator
from palviz.evaluation import (
    collapse_readings,
    eval_batch_size,
    evaluate,
    evaluate_batches,
    resolve_device,
)
from palviz.files import save_torch
from palviz.losses import class_balanced_weights
from palviz.losses.mixup import mixup_batch, mixup_loss
from palviz.metrics import min_prototype_angle, nan_to_none
from palviz.train_config import TrainConfig, evaluated_epochs, learning_rate, reading_epochs

# the config and the schedules are palviz.train_config's, evaluate and the device helper
# palviz.evaluation's; the callers of the training loop find them here too
__all__ = [
    "FitRecord",
    "TrainConfig",
    "evaluate",
    "evaluated_epochs",
    "fit",
    "learning_rate",
    "reading_epochs",
    "resolve_device",
]

CHECKPOINT_FORMAT = 2
# Config fields that may change between a checkpoint and its resumption: they change how a
# run is shown or what it records, not which parameters it ends with (on the same device).
_RESUMABLE_CHANGES = ("progress", "eval_every", "readings", "device")


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
            ``min_prototype_angle`` (degrees, of the head's prototypes; PAL Fig. 5), and on
            the epochs of :func:`reading_epochs` the neural-collapse and calibration readings
            of the test split (:func:`palviz.evaluation.collapse_readings`: NC1-NC4, ECE;
            logits scaled by the loss's ``s`` where it has one, as LDAM, ELM and PAL's margin
            loss scale cosines).
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


@dataclass
class _Loop:
    """What the epochs of :func:`fit` share: the device, the batches, the optimiser, the DRW
    weights, whether batches go channels-last, and the epochs evaluated and read."""

    device: torch.device
    train_batches: BatchIterator
    test_batches: BatchIterator | None
    optimizer: torch.optim.Optimizer
    cb_weights: torch.Tensor | None
    channels_last: bool
    evaluated: frozenset[int]
    readings: frozenset[int]


def _prepare(
    model: nn.Module,
    loss_fn: nn.Module,
    train: Any,
    test: Any,
    config: TrainConfig,
    cls_num_list: list[int] | None,
) -> _Loop:
    """Every check of :func:`fit`'s inputs, then the model and loss on the device, the batches
    and SGD."""
    x, y = _split("train", train)
    test = None if test is None else _split("test", test)
    cb_weights = _drw_weights(model, loss_fn, config, cls_num_list)
    if config.rotation > 0 and x.dim() != 4:
        raise invalid(
            "TrainConfig.rotation",
            config.rotation,
            f"0 for inputs that are not N x C x H x W images (got shape {tuple(x.shape)})",
        )
    device = resolve_device(config.device)
    channels_last = x.dim() == 4  # image batches and conv weights as NHWC
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
    if cb_weights is not None:
        cb_weights = cb_weights.to(device)
    evaluated, readings = (frozenset(f(config)) for f in (evaluated_epochs, reading_epochs))
    return _Loop(
        device, train_batches, test_batches, optimizer, cb_weights, channels_last, evaluated,
        readings,
    )  # fmt: skip


def _resume(
    path: str | os.PathLike, model: nn.Module, loop: _Loop, config: TrainConfig, name: str
) -> tuple[int, list, float, list[int]]:
    """Load the model and optimiser of the checkpoint's last epoch; return the first epoch to
    train, the history, the seconds so far and the epochs done at each resumption."""
    state = torch.load(path, map_location=loop.device, weights_only=True)
    _check_resumable(state, config, Path(path))
    model.load_state_dict(state["model"])
    loop.optimizer.load_state_dict(state["optimizer"])
    start = state["epoch"] + 1
    resumed_from = [*map(int, state["resumed_from"]), start]
    print(
        f"resuming {name} from epoch {start} of {config.epochs} (attempt {len(resumed_from) + 1})",
        file=sys.stderr,
        flush=True,
    )
    return start, state["history"], state["seconds"], resumed_from


def _train_pass(
    model: nn.Module, loss_fn: nn.Module, loop: _Loop, config: TrainConfig, epoch: int
) -> tuple[float, float]:
    """The SGD steps of ``epoch``; the training loss and accuracy as running means over it,
    each batch counted before its step, summed on the device (no host sync per batch)."""
    model.train()
    loss_sum = torch.zeros((), device=loop.device)
    correct = torch.zeros((), dtype=torch.long, device=loop.device)
    mix_rng = np.random.default_rng([config.seed, epoch, 2]) if config.mixup_alpha > 0 else None
    for xb, yb in loop.train_batches.epoch(epoch):
        xb, mix = mixup_batch(xb, mix_rng, config.mixup_alpha)  # lam x + (1 - lam) x[perm]
        if loop.channels_last:
            xb = xb.contiguous(memory_format=torch.channels_last)
        if getattr(loss_fn, "needs_features", False):  # IB: the penultimate features
            logits, features = model.forward_features(xb)
            kw = {"features": features}
        else:
            logits, kw = model(xb), {}
        loss = mixup_loss(loss_fn, logits, yb, mix, **kw)  # L(z, y) without mixup
        loop.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config.grad_clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        loop.optimizer.step()
        loss_sum += loss.detach() * len(yb)
        correct += (logits.detach().argmax(1) == yb).sum()
    n = loop.train_batches.num_samples
    return loss_sum.item() / n, correct.item() / n


def _test_row(model: nn.Module, loss_fn: nn.Module, loop: _Loop, read: bool) -> dict[str, Any]:
    """The test split's accuracy and per-class accuracy and the head's minimum prototype
    angle (PAL Fig. 5: how far apart the class vectors are); with ``read``, the neural-collapse
    and calibration readings too."""
    result = evaluate_batches(model, loop.test_batches, keep_outputs=read)
    row = {"test_acc": result["acc"], "per_class_acc": nan_to_none(result["per_class_acc"])}
    head = getattr(model, "head", None)
    if getattr(head, "prototypes", None) is not None:
        row["min_prototype_angle"] = min_prototype_angle(head.prototypes.float().cpu())
        if read:
            row.update(collapse_readings(result, head, getattr(loss_fn, "s", 1.0)))
    return row


def _record(
    config: TrainConfig, history: list[dict], seconds: float, resumed_from: list[int]
) -> FitRecord:
    """The run's record: the last and the best of the evaluated epochs' test accuracies."""
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
            with ``torch.load(path, weights_only=True)``): ``model`` and ``optimizer`` state
            dicts, ``epoch``, ``history``, ``config``, ``seconds``, ``resumed_from``.
        resume: continue from ``checkpoint_path`` if it exists (from the epoch after the one
            it holds; the config must match, see ``_RESUMABLE_CHANGES``); start afresh if it
            does not. A resumption prints ``resuming NAME from epoch N of M (attempt A)`` to
            stderr (N epochs done; the log of a Slurm task) and is recorded in the record's
            ``resumed_from``.
        name: the run's name in that line (default: ``checkpoint_path``).

    Returns:
        A :class:`FitRecord`.
    """
    config = TrainConfig() if config is None else config
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    if resume and checkpoint_path is None:
        raise ValueError("resume=True needs a checkpoint_path")
    loop = _prepare(model, loss_fn, train, test, config, cls_num_list)
    start, history, seconds, resumed_from = 0, [], 0.0, []
    if resume and Path(checkpoint_path).exists():
        start, history, seconds, resumed_from = _resume(
            checkpoint_path, model, loop, config, name or str(checkpoint_path)
        )

    bar = tqdm(
        range(start, config.epochs), initial=start, total=config.epochs, desc="fit",
        unit="epoch", disable=not config.progress,
    )  # fmt: skip
    for epoch in bar:
        t0 = time.perf_counter()
        # the seed, the learning rate and the class weights of an epoch are functions of it
        torch.manual_seed(_epoch_seed(config.seed, epoch))  # model-side randomness, if any
        lr = learning_rate(config, epoch)
        for group in loop.optimizer.param_groups:
            group["lr"] = lr
        if loop.cb_weights is not None:  # DRW: all ones (None) before drw_epoch, then balanced
            loss_fn.weight = loop.cb_weights if epoch >= config.drw_epoch else None
        if hasattr(loss_fn, "set_epoch"):  # a loss with stages of its own (IB)
            loss_fn.set_epoch(epoch, config.epochs)
        train_loss, train_acc = _train_pass(model, loss_fn, loop, config, epoch)
        row: dict[str, Any] = {
            "epoch": epoch,
            "lr": lr,
            "train_loss": train_loss,
            "train_acc": train_acc,
            "seconds": time.perf_counter() - t0,  # the training pass
        }
        if loop.test_batches is not None and epoch in loop.evaluated:
            row.update(_test_row(model, loss_fn, loop, read=epoch in loop.readings))
        history.append(row)
        seconds += time.perf_counter() - t0
        if checkpoint_path is not None:
            state = {"format": CHECKPOINT_FORMAT, "model": model.state_dict(),
                     "optimizer": loop.optimizer.state_dict(), "epoch": epoch,
                     "history": history, "config": config.to_dict(), "seconds": seconds,
                     "resumed_from": resumed_from}  # fmt: skip
            save_torch(checkpoint_path, state)
        shown = {"loss": f"{train_loss:.3f}", "acc": f"{train_acc:.3f}"}
        if "test_acc" in row:
            shown["test"] = f"{row['test_acc']:.3f}"
        bar.set_postfix(shown)
    bar.close()
    if not history:
        raise ValueError(f"nothing to train: epochs={config.epochs}, start={start}")
    return _record(config, history, seconds, resumed_from)

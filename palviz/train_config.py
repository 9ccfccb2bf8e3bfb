"""What :func:`palviz.train.fit` trains and records, as plain data: :class:`TrainConfig`
(every field checked once, from the table :data:`FIELD_CHECKS` and the rules between fields
:data:`JOINT_CHECKS`), the learning rate of an epoch (:func:`learning_rate`) and the epochs
that are evaluated (:func:`evaluated_epochs`) and read (:func:`reading_epochs`)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

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

__all__ = [
    "FIELD_CHECKS",
    "JOINT_CHECKS",
    "SCHEDULES",
    "TrainConfig",
    "evaluated_epochs",
    "learning_rate",
    "reading_epochs",
]

SCHEDULES = ("multistep", "cosine", "constant")

Check = Callable[[str, Any], Any]  # (name, value) -> the value as plain data, or ValueError


def _at_least(low: int) -> Check:
    return lambda name, v: check_int(name, v, low)


def _within(low: float, high: float, *, high_open: bool = False) -> Check:
    return lambda name, v: check_range(name, v, low, high, high_open=high_open)


def _one_of(allowed: tuple) -> Check:
    return lambda name, v: check_choice(name, v, allowed)


def _or_none(check: Check) -> Check:
    return lambda name, v: None if v is None else check(name, v)


def _tuple_of(check: Check, rule: str, *, empty: bool = True, increasing: bool = False) -> Check:
    """A check of a sequence (a list from JSON, an array, a tuple) whose every item passes
    ``check``, made a tuple; anything else is an error naming ``rule``."""

    def check_tuple(name: str, value: Any) -> tuple:
        value = tuple(value) if isinstance(value, (list, tuple, np.ndarray)) else value
        if not isinstance(value, tuple) or (not value and not empty):
            raise invalid(name, value, rule)
        try:
            value = tuple(check(name, v) for v in value)
        except ValueError:
            raise invalid(name, value, rule) from None
        if increasing and any(a >= b for a, b in zip(value[:-1], value[1:], strict=True)):
            raise invalid(name, value, "strictly increasing")
        return value

    return check_tuple


def _device(name: str, value: Any) -> str:
    """``value`` if it is ``"auto"`` or the name of a torch device."""
    try:
        if isinstance(value, str) and (value == "auto" or torch.device(value) is not None):
            return value
    except RuntimeError:
        pass
    raise invalid(name, value, "'auto' or a torch device name ('cpu', 'cuda', 'cuda:1', ...)")


_CHANNELS = "a non-empty tuple of numbers (one per channel)"

#: One row per field of :class:`TrainConfig`: the check that turns its value into plain data
#: or raises naming the field, the value and what is allowed (the rule is in the check).
FIELD_CHECKS: dict[str, Check] = {
    "epochs": _at_least(1),
    "batch_size": _at_least(1),
    "lr": check_positive,
    "momentum": _within(0.0, 1.0, high_open=True),
    "nesterov": check_bool,
    "weight_decay": check_non_negative,
    "schedule": _one_of(SCHEDULES),
    "milestones": _tuple_of(_at_least(1), "a tuple of integers >= 1", increasing=True),
    "gamma": check_positive,
    "lr_factors": _or_none(_tuple_of(check_positive, "None or a tuple of numbers > 0")),
    "warmup_epochs": _at_least(0),
    "eta_min": check_non_negative,
    "drw_epoch": _or_none(_at_least(0)),
    "cb_beta": _within(0.0, 1.0, high_open=True),
    "grad_clip": _or_none(check_positive),
    "augment": check_bool,
    "rotation": _within(0.0, 180.0),
    "mean": _or_none(_tuple_of(check_real, f"None or {_CHANNELS}", empty=False)),
    "std": _or_none(_tuple_of(check_positive, f"None or {_CHANNELS}, all > 0", empty=False)),
    "seed": _at_least(0),
    "device": _device,
    "eval_every": _at_least(0),
    "readings": _at_least(0),
    "progress": check_bool,
    "mixup_alpha": check_non_negative,
}

#: The rules between fields, checked after every field's own: (field named, holds(config),
#: what is allowed).
JOINT_CHECKS: tuple[tuple[str, Callable[[Any], bool], Callable[[Any], str]], ...] = (
    ("momentum", lambda c: c.momentum > 0 or not c.nesterov, lambda c: "> 0 when nesterov=True"),
    (
        "lr_factors",
        lambda c: c.lr_factors is None or len(c.lr_factors) == len(c.milestones),
        lambda c: f"one factor per milestone ({len(c.milestones)}: {c.milestones})",
    ),
    ("eta_min", lambda c: c.eta_min <= c.lr, lambda c: f"<= lr ({c.lr})"),
    (
        "std",
        lambda c: (c.mean is None) == (c.std is None),
        lambda c: f"given together with mean (mean={c.mean!r})",
    ),
    (
        "std",
        lambda c: c.mean is None or len(c.mean) == len(c.std),
        lambda c: f"as long as mean ({len(c.mean)} values)",
    ),
)


@dataclass
class TrainConfig:
    """Everything :func:`palviz.train.fit` needs besides the model, loss and data; plain data that
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

    Training runs in float32, as both reference codes do; ``[N, C, H, W]`` image batches and
    the conv weights are stored channels-last (NHWC: on CUDA and on CPU, where oneDNN
    convolutions are as fast or faster that way). ``device``: ``"auto"`` (CUDA if available),
    ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...

    Records: ``eval_every``: evaluate the test split every that many epochs (and always after
    the last); 0 evaluates after the last epoch only. ``readings``: at how many of the
    evaluated epochs the neural-collapse and calibration readings are taken
    (:func:`reading_epochs`: the first and the last evaluated epoch and ones evenly spaced
    between; 0 for none). ``progress``: a progress bar over epochs.
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
    seed: int = 0
    device: str = "auto"
    eval_every: int = 1
    readings: int = 10
    progress: bool = True
    mixup_alpha: float = 0.0

    def __post_init__(self) -> None:
        # Every value is checked and stored as plain Python data (tuples, ints, floats), so
        # equal configs compare equal and the config is JSON-ready.
        for field, check in FIELD_CHECKS.items():
            setattr(self, field, check(f"TrainConfig.{field}", getattr(self, field)))
        for field, holds, rule in JOINT_CHECKS:
            if not holds(self):
                raise invalid(f"TrainConfig.{field}", getattr(self, field), rule(self))

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


def evaluated_epochs(config: TrainConfig) -> tuple[int, ...]:
    """The (0-based) epochs after which :func:`~palviz.train.fit` evaluates the test split:
    every ``eval_every``-th, and always the last."""
    every = config.eval_every
    return tuple(
        e
        for e in range(config.epochs)
        if (every and (e + 1) % every == 0) or e == config.epochs - 1
    )


def reading_epochs(config: TrainConfig) -> tuple[int, ...]:
    """The (0-based) epochs whose history rows hold the neural-collapse and calibration
    readings: ``config.readings`` of the evaluated epochs, the first and the last among them
    and the others evenly spaced between (all of them when there are no more than that)."""
    evaluated = evaluated_epochs(config)
    n, r = len(evaluated), config.readings
    if r >= n:
        return tuple(evaluated)
    if r <= 1:
        return tuple(evaluated[n - r :])  # the last, or none
    # the i-th of r readings at evaluated epoch number round(i * (n - 1) / (r - 1))
    return tuple(evaluated[round(i * (n - 1) / (r - 1))] for i in range(r))

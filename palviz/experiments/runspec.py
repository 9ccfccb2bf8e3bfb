"""A training run as plain data: :class:`RunSpec`, every field checked when a spec is made
(which builds nothing), and its key (:meth:`RunSpec.key`), which names the run's folder in
the run cache (:mod:`palviz.experiments.runcache`); the toy sizes a spec may carry
(:data:`TOY`)."""

from __future__ import annotations

import dataclasses
import inspect
import numbers
import os
from dataclasses import dataclass, field
from typing import Any

import palviz
from palviz import data as pdata
from palviz.checks import ArgumentTypeError, check_choice, check_probability, check_real, invalid
from palviz.cpu import pin_label
from palviz.files import setting_key
from palviz.heads import HEAD_KINDS, HEADS
from palviz.losses import registry
from palviz.models import check_arch
from palviz.train import TrainConfig

#: Bump when the meaning or layout of cached results changes.
CACHE_SCHEMA = 5  # 5: the key holds the CPU pin and the data's fingerprint; held_out

#: The toy sizes (``RunSpec.toy``): 1 epoch on about 100 training samples, tested on about
#: 100 test samples (each class present keeps at least one).
TOY = {"epochs": 1, "train": 100, "test": 100}


def toy_sizes() -> dict | None:
    """``RunSpec.toy`` of a spec made now without one: :data:`TOY` when ``$PALVIZ_TOY`` is set
    (to anything but ``""``/``"0"``), else ``None``. The way a test or a command asks for the
    ``paper`` profile's code path end to end on a CPU: the variable is read only when a spec
    is made, and the spec then says it is a toy run (its ``spec.json`` and its key)."""
    return None if os.environ.get("PALVIZ_TOY", "") in ("", "0") else dict(TOY)


@dataclass(frozen=True)
class RunSpec:
    """One training run, as plain data. Everything here enters the cache key except
    ``label`` (a display name).

    - ``imbalance_ratio``: 1 keeps the balanced training split; rho > 1 keeps a seeded
      long-tailed subset (``lt_shape`` "exp" or "step", docs/reference.md 1).
    - ``noise_rate``/``noise_kind``: synthetic label noise on the training labels only
      (docs/reference.md 4), drawn with ``seed``.
    - ``train_size``: keep a stratified subset of this many training samples first (used by
      the ``smoke`` profile to stay within seconds); ``None`` keeps all.
    - ``held_out``: set aside this many training samples of every class (seeded), before the
      long-tailed cut, so that the cut is made from the rest: a balanced split, the head class
      included, that the run never trains on (:func:`palviz.experiments.posthoc.held_out_split`
      chooses post-hoc parameters there). 0 sets none aside.
    - ``toy``: ``None``, or the toy sizes ``{"epochs", "train", "test"}``: the run keeps its
      recipe but trains ``epochs`` epochs on a stratified subset of at most ``train`` samples
      (cut after the long tail, before the noise), tested on at most ``test``. Default:
      :func:`toy_sizes` (``$PALVIZ_TOY``), read as the spec is made.
    - ``head``/``head_kw``: ``"linear"``, ``"cosine"`` (learnable, normalised) or
      ``"anchored"`` (PAL; ``normalize=True, scale=s`` is FNPAL).

    Every field is checked when the spec is made (a ``ValueError``, or a ``TypeError`` for a
    value of the wrong type, naming ``RunSpec.<field>``, the value and what is allowed): the
    dataset, network, loss and head are ones palviz knows, the network reads the dataset's
    samples; ``loss_kw`` and ``head_kw`` hold arguments of the loss's and the head's
    constructors (whose values those constructors check when the run builds them), ``train``
    may be a dict. Making a spec builds nothing.
    """

    dataset: str
    arch: str
    loss: str
    loss_kw: dict = field(default_factory=dict)
    head: str = "linear"
    head_kw: dict = field(default_factory=dict)
    imbalance_ratio: float = 1.0
    lt_shape: str = "exp"
    noise_rate: float = 0.0
    noise_kind: str = "symmetric"
    train_size: int | None = None
    held_out: int = 0
    toy: dict | None = field(default_factory=toy_sizes)
    seed: int = 0
    train: TrainConfig = field(default_factory=TrainConfig)
    label: str = ""

    def __post_init__(self):
        # Every field is checked before a key or a folder exists; a ``train`` dict becomes its
        # TrainConfig, nothing else is converted: the key is a hash of the fields as given.
        check_choice("RunSpec.dataset", self.dataset, pdata.DATASETS)
        check_arch("RunSpec.arch", self.arch, reads=pdata.dataset_info(self.dataset))
        check_choice("RunSpec.loss", self.loss, tuple(registry.LOSSES))
        if not isinstance(self.loss_kw, dict):
            rule = f"a dict of arguments of loss {self.loss!r}"
            raise _wrong_type("RunSpec.loss_kw", self.loss_kw, rule)
        registry.check_loss_kw(self.loss, self.loss_kw, field_name="RunSpec.loss_kw")
        _check_head(self.head, self.head_kw)
        check_choice("RunSpec.lt_shape", self.lt_shape, pdata.LONG_TAIL_SHAPES)
        if check_real("RunSpec.imbalance_ratio", self.imbalance_ratio) < 1:
            raise invalid("RunSpec.imbalance_ratio", self.imbalance_ratio, ">= 1")
        check_probability("RunSpec.noise_rate", self.noise_rate)
        check_choice("RunSpec.noise_kind", self.noise_kind, ("symmetric", "asymmetric"))
        if self.train_size is not None:
            _check_integer("RunSpec.train_size", self.train_size, 2, "None or an integer >= 2")
        toy_rule = 'None or a dict {"epochs", "train", "test"} of integers >= 1'
        if self.toy is not None and (not isinstance(self.toy, dict) or set(self.toy) != set(TOY)):
            raise _wrong_type("RunSpec.toy", self.toy, toy_rule)
        for value in (self.toy or {}).values():
            _check_integer("RunSpec.toy", value, 1, toy_rule)
        _check_integer("RunSpec.held_out", self.held_out, 0, "an integer >= 0")
        _check_integer("RunSpec.seed", self.seed, 0, "an integer >= 0")
        if isinstance(self.train, dict):
            object.__setattr__(self, "train", _train_config(self.train))
        if not isinstance(self.train, TrainConfig):
            raise _wrong_type("RunSpec.train", self.train, "a TrainConfig (or its dict)")
        if not isinstance(self.label, str):
            raise _wrong_type("RunSpec.label", self.label, "a string")

    def to_dict(self) -> dict:
        """The spec as JSON-ready data (``train`` as a dict)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> RunSpec:
        """The inverse of :meth:`to_dict` (e.g. of a line of ``palviz plan --jsonl``); unknown
        or missing fields are an error naming them, and every field is checked as in
        :class:`RunSpec`."""
        if not isinstance(d, dict):
            raise _wrong_type("RunSpec.from_dict's argument", d, "a dict of RunSpec fields")
        fields = dataclasses.fields(cls)
        names = [f.name for f in fields]
        unknown = sorted(set(d) - set(names))
        if unknown:
            raise ValueError(f"unknown RunSpec fields {unknown}; allowed: {sorted(names)}")
        required = [f.name for f in fields if f.default is f.default_factory is dataclasses.MISSING]
        missing = [name for name in required if name not in d]
        if missing:
            raise ValueError(f"missing RunSpec fields {missing}; required: {required}")
        return cls(**d)

    def key(self) -> str:
        """16 hex digits identifying the result: a hash of the spec (without ``label`` and
        ``train.progress``, which only change how it is shown), palviz's version, the
        :data:`CACHE_SCHEMA`, the dataset's content (:func:`palviz.data.dataset_fingerprint`:
        a changed loader trains again), this process's CPU pin (:func:`palviz.cpu.pin_label`:
        a run unpinned never stands in for a pinned one) and, for a noisy spec,
        :data:`palviz.data.NOISE_REVISION`."""
        payload = self.to_dict()
        payload.pop("label")
        payload["train"].pop("progress")
        payload["_version"] = palviz.__version__
        payload["_schema"] = CACHE_SCHEMA
        payload["_data"] = pdata.dataset_fingerprint(self.dataset)
        payload["_cpu"] = pin_label()
        if self.noise_rate > 0:
            payload["_noise_revision"] = pdata.NOISE_REVISION
        return setting_key(payload)

    def replace(self, **changes: Any) -> RunSpec:
        """A copy with some fields changed (``train=dict(...)`` updates the TrainConfig)."""
        if isinstance(changes.get("train"), dict):
            changes["train"] = dataclasses.replace(self.train, **changes["train"])
        return dataclasses.replace(self, **changes)


def _wrong_type(name: str, value: Any, rule: str) -> ArgumentTypeError:
    return ArgumentTypeError(str(invalid(name, value, rule)))


def _check_integer(name: str, value: Any, minimum: int, rule: str) -> None:
    """``value`` is an int (not a bool) >= ``minimum``, else an error naming ``rule``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _wrong_type(name, value, rule)
    if value < minimum:
        raise invalid(name, value, rule)


def _train_config(d: dict) -> TrainConfig:
    """``RunSpec.train`` given as a dict: its TrainConfig, an error naming the field."""
    try:
        return TrainConfig.from_dict(d)
    except TypeError as err:
        raise ArgumentTypeError(f"RunSpec.train: {err}") from None
    except ValueError as err:
        raise ValueError(f"RunSpec.train: {err}") from None


def _check_head(head: Any, head_kw: Any) -> None:
    """``RunSpec.head`` is a head palviz knows, ``RunSpec.head_kw`` holds arguments its
    constructor takes (but ``in_features`` and ``num_classes``, which the model supplies)."""
    check_choice("RunSpec.head", head, HEAD_KINDS)
    params = inspect.signature(HEADS[head]).parameters
    allowed = tuple(name for name in params if name not in ("in_features", "num_classes"))
    rule = f"a dict of arguments of the {head!r} head"
    if not isinstance(head_kw, dict):
        raise _wrong_type("RunSpec.head_kw", head_kw, f"{rule} {allowed}")
    for key in head_kw:
        if key not in allowed:
            why = f"keys from {list(allowed)} ({key!r} is not one of them)"
            raise invalid("RunSpec.head_kw", head_kw, f"{rule}, {why}")

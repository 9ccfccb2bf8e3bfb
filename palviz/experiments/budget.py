"""Training budgets counted in SGD steps, and the curves of the "budget lesson" figure.

A profile that trains for 30 epochs on a few thousand samples takes a few hundred to a few
thousand optimiser steps; the papers' set-ups take tens of thousands. Epochs hide that
difference (an epoch of 12,406 images is not an epoch of 4,000), steps do not, so every
comparison of a profile with a paper here is in steps: :func:`steps_per_epoch`,
:func:`steps_per_run`, :data:`PAPER_STEPS` (derived from each paper's epochs, training-set
size and batch size in :data:`PAPER_BUDGETS`, not typed in), and :func:`budget_frame`, the
test and training accuracy of runs against the step count, which
:func:`palviz.plots.plot_budget` draws with the profile's stop and the paper's budget marked.

:func:`weight_decay_integral` is the other budget that changes with the schedule:
``sum_t lr_t * wd``, the exponent of the shrinkage weight decay alone would apply to the
weights over a run (``prod_t (1 - lr_t wd) ~ exp(-sum_t lr_t wd)``; SGD's momentum ``mu``
scales the effective decay by about ``1 / (1 - mu)`` on top, which is left out here). A
shorter run at the same learning rate decays the weights less, which matters for the norm-
and margin-based arguments of both papers.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from palviz import data as pdata
from palviz.checks import check_bool, check_int, check_non_negative, invalid
from palviz.experiments.runcache import RunResult
from palviz.experiments.runspec import RunSpec


def steps_per_epoch(train_size: int, batch_size: int, drop_last: bool = False) -> int:
    """Optimiser steps in one pass over ``train_size`` samples in batches of ``batch_size``:
    ``ceil(train_size / batch_size)``, the last batch possibly smaller, or
    ``floor(train_size / batch_size)`` when ``drop_last`` (the final incomplete batch is
    dropped). The same count as :class:`palviz.data.BatchIterator`'s ``len`` and as
    PyTorch's ``DataLoader``."""
    train_size = check_int("train_size", train_size, 1)
    batch_size = check_int("batch_size", batch_size, 1)
    drop_last = check_bool("drop_last", drop_last)
    if drop_last:
        if train_size < batch_size:
            raise invalid("train_size", train_size, f">= batch_size ({batch_size}) with drop_last")
        return train_size // batch_size
    return math.ceil(train_size / batch_size)


# ------------------------------------------------------------------------- the papers' budgets


@dataclass(frozen=True)
class PaperBudget:
    """A published set-up's training budget: ``epochs`` passes over ``train_size`` samples
    in batches of ``batch_size`` (the last batch kept, as PyTorch's ``DataLoader`` does by
    default and the reference code of each set-up does), as said in ``source``."""

    epochs: int
    train_size: int
    batch_size: int
    source: str

    @property
    def steps_per_epoch(self) -> int:
        return steps_per_epoch(self.train_size, self.batch_size)

    @property
    def steps(self) -> int:
        """``epochs * ceil(train_size / batch_size)``."""
        return self.epochs * self.steps_per_epoch


#: The published set-ups' budgets (docs/reference.md, section 6 for the long-tailed and the noise
#: tables). The noise tables train on the whole MNIST (60,000), CIFAR-10 and CIFAR-100 (50,000)
#: training splits with the APL configs; CIFAR-10-LT and CIFAR-100-LT at rho = 100, 50 and 10
#: keep ``long_tail_counts`` of them (12,406, 13,996 and 20,431; 10,847, 12,608 and 19,573
#: images).
PAPER_BUDGETS: dict[str, PaperBudget] = {
    "mnist_noisy": PaperBudget(
        epochs=50,
        train_size=60_000,
        batch_size=128,
        source="APL MNIST config (PAL and ELM noise tables): 4-layer CNN, 50 epochs, "
        "batch 128 over the 60,000 MNIST training images",
    ),
    "cifar10_noisy": PaperBudget(
        epochs=120,
        train_size=50_000,
        batch_size=128,
        source="APL CIFAR-10 config (PAL and ELM noise tables): 8-layer CNN, 120 epochs, "
        "batch 128 over the 50,000 CIFAR-10 training images",
    ),
    "cifar100_noisy": PaperBudget(
        epochs=200,
        train_size=50_000,
        batch_size=128,
        source="APL CIFAR-100 config (PAL noise table): ResNet-34, 200 epochs, "
        "batch 128 over the 50,000 CIFAR-100 training images",
    ),
}


def _lt_budget(name: str, per_class: int, k: int, rho: int) -> PaperBudget:
    n = sum(pdata.long_tail_counts(per_class, k, rho))
    where = f"PAL and ELM {name} tables" if rho != 50 else f"{name} at the third ratio"
    return PaperBudget(
        epochs=200,
        train_size=n,
        batch_size=128,
        source=f"LDAM-DRW set-up ({where}): ResNet-32, 200 epochs, "
        f"batch 128 over the {n:,} images of {name}, rho = {rho}",
    )


for _rho in (100, 50, 10):
    PAPER_BUDGETS[f"cifar10_lt_rho{_rho}"] = _lt_budget("CIFAR-10-LT", 5000, 10, _rho)
    PAPER_BUDGETS[f"cifar100_lt_rho{_rho}"] = _lt_budget("CIFAR-100-LT", 500, 100, _rho)

#: The papers' budgets in SGD steps, ``{setting: epochs * ceil(train_size / batch_size)}``:
#: 19,400 (200 x 97) for CIFAR-10-LT at rho = 100, 23,450 (50 x 469) for noisy MNIST and
#: 46,920 (120 x 391) for noisy CIFAR-10 (often quoted rounded, as 23,400 and 46,900).
PAPER_STEPS: dict[str, int] = {name: budget.steps for name, budget in PAPER_BUDGETS.items()}


def _paper_lr_wd_integral() -> float:
    # the paper profile's long-tailed schedule (LDAM-DRW's) over CIFAR-10-LT at rho = 100
    from palviz.experiments.recipes import long_tailed_setup
    from palviz.train import TrainConfig, learning_rate

    config = TrainConfig(**long_tailed_setup("paper")["train"])
    paper = PAPER_BUDGETS["cifar10_lt_rho100"]
    rates = [{"lr": learning_rate(config, e)} for e in range(config.epochs)]
    return weight_decay_integral(rates, paper.steps // paper.epochs, config.weight_decay)


#: The published dataset an embedded one stands in for: MNIST-1D plays CIFAR-10 in the
#: long-tailed notebook and MNIST in the noisy-label one (as the notebooks say).
_STANDS_IN = {"lt": {"mnist1d": "cifar10"}, "noisy": {"mnist1d": "mnist"}}


def paper_steps_for(where: Mapping[str, Any]) -> int | None:
    """The paper's budget in SGD steps for a claim's setting
    (:attr:`palviz.experiments.claims.Claim.where`): a long-tailed setting (it has
    ``imbalance_ratio``) by the CIFAR-LT set-up of the same dataset and ratio, a noisy one (it has
    ``noise_kind``) by APL's set-up of the dataset; MNIST-1D stands in for CIFAR-10 and MNIST
    respectively. ``None`` where no paper trains
    such a setting (e.g. a ratio the papers do not use)."""
    if not isinstance(where, Mapping) or "dataset" not in where:
        raise invalid("where", where, "a mapping with a 'dataset' entry (a claim's setting)")
    if "imbalance_ratio" in where:
        dataset = _STANDS_IN["lt"].get(where["dataset"], where["dataset"])
        rho = where["imbalance_ratio"]
        name = f"{dataset}_lt_rho{int(rho)}" if float(rho).is_integer() else None
    elif "noise_kind" in where:
        name = f"{_STANDS_IN['noisy'].get(where['dataset'], where['dataset'])}_noisy"
    else:
        raise invalid("where", dict(where), "a setting with 'imbalance_ratio' or 'noise_kind'")
    return PAPER_STEPS.get(name)


# ------------------------------------------------------------------------------- our runs


def training_size(spec: RunSpec) -> int:
    """The number of training samples ``spec`` trains on, computed the way
    :func:`palviz.experiments.runcache.prepare_data` subsets the split (stratified ``train_size``
    subset, ``held_out`` samples of every class set aside, then the long-tailed counts):
    loads the training labels of ``spec.dataset``."""
    if not isinstance(spec, RunSpec):
        raise invalid("spec", spec, "a RunSpec")
    _, y = pdata.load_dataset(spec.dataset, "train")
    y = np.asarray(y)
    if spec.train_size is not None:
        y = y[pdata.stratified_subset(y, spec.train_size, spec.seed)]
    per_class = np.bincount(y) - spec.held_out
    if spec.imbalance_ratio > 1:
        counts = pdata.long_tail_counts(
            int(per_class.min()), len(per_class), spec.imbalance_ratio, spec.lt_shape
        )
        return int(sum(counts))
    return int(per_class.sum())


def _result_train_size(result: Any) -> int | None:
    sizes = (getattr(result, "metrics", None) or {}).get("profile_sizes") or {}
    return sizes.get("train")


def steps_per_run(spec_or_result: RunSpec | RunResult, *, train_size: int | None = None) -> int:
    """The SGD steps of a run: ``epochs * ceil(train_size / batch_size)``.

    palviz's trainer (:func:`palviz.train.fit`) draws its batches from a
    :class:`~palviz.data.BatchIterator` with ``drop_last=False``, so the last, smaller batch
    of an epoch is a step too (the same count as the ``steps`` column of
    :func:`palviz.experiments.tables.results_frame`).

    The training size is ``train_size`` if given, else the one a finished run recorded
    (``metrics["profile_sizes"]["train"]``), else computed from the spec by
    :func:`training_size` (which loads the dataset's labels)."""
    spec = getattr(spec_or_result, "spec", spec_or_result)
    if not isinstance(spec, RunSpec):
        raise invalid("spec_or_result", spec_or_result, "a RunSpec or a RunResult")
    if train_size is None:
        train_size = _result_train_size(spec_or_result)
    if train_size is None:
        train_size = training_size(spec)
    return spec.train.epochs * steps_per_epoch(train_size, spec.train.batch_size)


def _history(result_or_history: Any, name: str) -> list[dict]:
    metrics = getattr(result_or_history, "metrics", None)
    history = metrics.get("history") if isinstance(metrics, Mapping) else result_or_history
    if (
        isinstance(history, str | bytes | Mapping)
        or not isinstance(history, Sequence)
        or not all(isinstance(row, Mapping) for row in history)
    ):
        raise invalid(name, result_or_history, "a RunResult or a list of per-epoch dicts")
    return list(history)


def weight_decay_integral(
    result_or_history: RunResult | Sequence[Mapping[str, Any]],
    steps_per_epoch: int,
    weight_decay: float,
) -> float:
    """``sum over SGD steps t of lr_t * weight_decay``, from the per-epoch learning rates of a
    run's history (``metrics["history"]``, one dict per epoch with ``lr``):
    ``weight_decay * steps_per_epoch * sum_e lr_e``.

    palviz sets the learning rate once per epoch (:func:`palviz.train.learning_rate`,
    warm-up included), so for its runs this is exact. For a trainer that changes the rate
    within an epoch (a per-step warm-up or cosine), the recorded ``lr`` of an epoch stands for
    all of its steps and the sum is a per-epoch (left Riemann) approximation of the per-step
    one."""
    history = _history(result_or_history, "result_or_history")
    steps_per_epoch = check_int("steps_per_epoch", steps_per_epoch, 1)
    weight_decay = check_non_negative("weight_decay", weight_decay)
    rates = []
    for row in history:
        lr = row.get("lr")
        if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not math.isfinite(lr):
            raise invalid("result_or_history", row, "per-epoch rows with a finite 'lr'")
        rates.append(float(lr))
    return weight_decay * steps_per_epoch * math.fsum(rates)


# -------------------------------------------------------------------------------- the figure


#: The accuracies of a run's history that :func:`budget_frame` reads.
ACCURACIES = ("test_acc", "train_acc")


def budget_frame(results_by_label: Mapping[str, Sequence[RunResult]]) -> pd.DataFrame:
    """The curves :func:`palviz.plots.plot_budget` draws from ``results_by_label`` (label ->
    its runs, one per seed): one row per label, run and evaluated epoch, with ``label``,
    ``run`` (its place among the label's runs), ``step`` (the end of the epoch,
    ``(epoch + 1) * steps_per_epoch``), the history's ``test_acc`` and ``train_acc`` (NaN where
    the epoch has none) and ``noisy`` (whether a run of the label trained on noisy labels)."""
    if not isinstance(results_by_label, Mapping) or not results_by_label:
        raise invalid("results_by_label", results_by_label, "a non-empty dict label -> runs")
    rows = []
    for label, runs in results_by_label.items():
        runs = list(runs)
        if not runs:
            raise invalid("results_by_label", {label: runs}, "at least one run per label")
        noisy = any(getattr(r.spec, "noise_rate", 0) > 0 for r in runs)
        for i, result in enumerate(runs):
            size = _result_train_size(result)
            if size is None:
                raise invalid(
                    "results_by_label",
                    f"{label!r}: run {i} without metrics['profile_sizes']['train']",
                    "finished runs (their metrics record the training size)",
                )
            per_epoch = steps_per_epoch(size, result.spec.train.batch_size)
            for r in result.metrics.get("history", []):
                accs = [np.nan if r.get(key) is None else r[key] for key in ACCURACIES]
                if not np.isnan(accs).all():  # the step ends the epoch
                    rows.append((label, i, (r["epoch"] + 1) * per_epoch, *accs, noisy))
    return pd.DataFrame(rows, columns=["label", "run", "step", *ACCURACIES, "noisy"])


#: The sum over SGD steps of lr x weight decay in LDAM-DRW's CIFAR-10-LT run (ResNet-32, 200
#: epochs of 97 steps, lr 0.1 with a 5-epoch warm-up, x0.01 at epoch 160 and x0.0001 at 180,
#: wd 2e-4), computed from the paper profile's schedule: how far weight decay alone has pulled
#: the weights in the published regime (about 0.307).
PAPER_LR_WD_INTEGRAL: float = _paper_lr_wd_integral()

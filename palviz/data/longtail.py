"""Long-tailed subsets (docs/reference.md 1) and stratified subsets of a training split."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from palviz.checks import as_labels, check_choice, check_int, check_num_classes, check_real, invalid

__all__ = [
    "LONG_TAIL_SHAPES",
    "covering_subset",
    "held_out_indices",
    "long_tail_counts",
    "long_tail_indices",
    "make_long_tailed",
    "stratified_subset",
]


LONG_TAIL_SHAPES = ("exp", "step")


def long_tail_counts(
    n_max: int,
    num_classes: int,
    imbalance_ratio: float,
    shape: str = "exp",
) -> list[int]:
    """Per-class sample counts of a long-tailed set (LDAM-DRW convention).

    * ``"exp"``: ``n_i = int(n_max * (1 / rho) ** (i / (C - 1)))`` for ``i = 0..C-1``
      (truncation, not rounding); class 0 is the head, class ``C - 1`` the tail.
    * ``"step"``: the first ``C // 2`` classes keep ``n_max``, the rest get ``int(n_max / rho)``.

    Example: ``long_tail_counts(5000, 10, 100)`` is
    ``[5000, 2997, 1796, 1077, 645, 387, 232, 139, 83, 50]`` (CIFAR-10-LT, 12,406 images).

    Args:
        n_max: samples of the largest class, ``>= 1``.
        num_classes: ``C >= 2``.
        imbalance_ratio: ``rho = n_max / n_min >= 1`` (1 gives a balanced set).
        shape: ``"exp"`` or ``"step"``.

    Raises:
        ValueError: an argument out of range, or a ratio that would leave a class empty.
    """
    n_max = check_int("n_max", n_max, 1)
    num_classes = check_num_classes(num_classes)
    if check_real("imbalance_ratio", imbalance_ratio) < 1:
        raise invalid("imbalance_ratio", imbalance_ratio, ">= 1")
    if check_choice("shape", shape, LONG_TAIL_SHAPES) == "exp":
        counts = [
            int(n_max * (1.0 / imbalance_ratio) ** (i / (num_classes - 1)))
            for i in range(num_classes)
        ]
    else:
        half = num_classes // 2
        counts = [n_max] * half + [int(n_max / imbalance_ratio)] * (num_classes - half)
    if min(counts) < 1:
        raise ValueError(
            f"imbalance_ratio={imbalance_ratio!r} with n_max={n_max} rounds the tail class "
            f"count to 0 (counts {counts}); lower imbalance_ratio or raise n_max"
        )
    return counts


def long_tail_indices(
    targets: torch.Tensor | np.ndarray | Sequence[int],
    counts: Sequence[int],
    seed: int = 0,
) -> np.ndarray:
    """Indices of a long-tailed subset: ``counts[c]`` samples drawn at random from class ``c``.

    Each class is shuffled by its own generator, seeded from ``(seed, c)``, and the first
    ``counts[c]`` samples are kept; so the subsets are nested (a rarer subset with the same
    seed is contained in a less rare one) and one class's draw does not depend on the others.

    Args:
        targets: ``[N]`` integer labels in ``[0, len(counts))``.
        counts: samples to keep per class (e.g. from :func:`long_tail_counts`).
        seed: the seed of the draw.

    Returns:
        Sorted int64 indices into ``targets``, ``sum(counts)`` of them.

    Raises:
        ValueError: a class has fewer samples than asked, or a label is out of range.
    """
    t = as_labels("targets", targets)
    counts = [int(c) for c in counts]
    if not counts or min(counts) < 0:
        raise ValueError(f"counts must be a non-empty list of integers >= 0, got {counts}")
    num_classes = len(counts)
    if t.size and (t.min() < 0 or t.max() >= num_classes):
        raise ValueError(
            f"targets must lie in [0, {num_classes}) (len(counts)), "
            f"got values in [{t.min()}, {t.max()}]"
        )
    available = np.bincount(t, minlength=num_classes)
    short = [c for c in range(num_classes) if available[c] < counts[c]]
    if short:
        c = short[0]
        raise ValueError(
            f"counts asks for {counts[c]} samples of class {c}, but targets has only "
            f"{available[c]} (classes short of samples: {short})"
        )
    chosen = []
    for c in range(num_classes):
        members = np.flatnonzero(t == c)
        rng = np.random.default_rng([int(seed), c])
        chosen.append(members[rng.permutation(len(members))[: counts[c]]])
    return np.sort(np.concatenate(chosen)).astype(np.int64)


def make_long_tailed(
    x: torch.Tensor | np.ndarray,
    y: torch.Tensor | np.ndarray,
    imbalance_ratio: float,
    shape: str = "exp",
    seed: int = 0,
    n_max: int | None = None,
) -> tuple[torch.Tensor | np.ndarray, torch.Tensor | np.ndarray, list[int]]:
    """A long-tailed subset of a balanced training split.

    Args:
        x: ``[N, ...]`` samples.
        y: ``[N]`` labels in ``[0, C)``, ``C = max(y) + 1``.
        imbalance_ratio: ``rho = n_max / n_min``.
        shape: ``"exp"`` or ``"step"`` (see :func:`long_tail_counts`).
        seed: the seed of the per-class draw (see :func:`long_tail_indices`).
        n_max: samples of the head class; default the smallest per-class count of ``y``, so
            every class can supply its share (docs/reference.md 1, embedded data).

    Returns:
        ``(x_lt, y_lt, counts)``: the subset (same type as the inputs, in the original order)
        and the per-class counts, class 0 the head.
    """
    y_np = as_labels("y", y)
    if len(x) != len(y_np):
        raise ValueError(f"len(x) must equal len(y), got len(x)={len(x)}, len(y)={len(y_np)}")
    if y_np.size == 0:
        raise ValueError("y must be non-empty, got no labels")
    per_class = np.bincount(y_np)
    if n_max is None:
        n_max = int(per_class.min())
    counts = long_tail_counts(n_max, len(per_class), imbalance_ratio, shape)
    idx = long_tail_indices(y_np, counts, seed)

    def take(a):  # the rows idx of a tensor (on its device) or an array
        return a[torch.from_numpy(idx).to(a.device)] if isinstance(a, torch.Tensor) else a[idx]

    return take(x), take(y if isinstance(y, torch.Tensor) else np.asarray(y)), counts


def stratified_subset(targets: np.ndarray, size: int | None, seed: int) -> np.ndarray:
    """Sorted indices of a seeded subset of ``size`` samples of ``targets`` with the class
    proportions kept (largest remainders: exactly ``size``); all of them when ``size`` is
    ``None`` or not smaller than ``len(targets)``."""
    targets = np.asarray(targets)
    if size is None or size >= len(targets):
        return np.arange(len(targets))
    rng = np.random.default_rng(seed)
    classes, sizes = np.unique(targets, return_counts=True)
    # largest-remainder apportionment: exactly `size` samples, class proportions kept
    quota = size * sizes / len(targets)
    take = np.floor(quota).astype(int)
    take[np.argsort(take - quota, kind="stable")[: size - take.sum()]] += 1
    return _draw(targets, zip(classes, take, strict=True), rng)


def covering_subset(targets: np.ndarray, size: int, seed: int) -> np.ndarray:
    """Sorted indices of a seeded subset of about ``size`` samples, class proportions kept,
    at least one sample of every class present (a long tail's last class survives)."""
    targets = np.asarray(targets)
    if size >= len(targets):
        return np.arange(len(targets))
    rng = np.random.default_rng([seed, 7])
    classes, sizes = np.unique(targets, return_counts=True)
    take = np.minimum(sizes, np.maximum(1, np.floor(size * sizes / len(targets)).astype(int)))
    return _draw(targets, zip(classes, take, strict=True), rng)


def held_out_indices(
    labels: np.ndarray, per_class: int, num_classes: int, seed: int, name: str = "per_class"
) -> np.ndarray:
    """Sorted indices of ``per_class`` samples of every one of ``num_classes`` classes, drawn
    with ``seed``: a balanced split set aside before a long-tailed cut. Every class must keep
    a sample, else a ``ValueError`` naming ``name`` (e.g. ``"RunSpec.held_out"``)."""
    if per_class == 0:
        return np.zeros(0, dtype=np.int64)
    sizes = np.bincount(labels, minlength=num_classes)
    if sizes.min() <= per_class:
        raise invalid(
            name,
            per_class,
            f"fewer than the {sizes.min()} samples of class {int(sizes.argmin())} (the smallest "
            "class of the training split: it must keep one to train on)",
        )
    rng = np.random.default_rng([seed, 11])
    return _draw(labels, ((c, per_class) for c in range(num_classes)), rng)


def _draw(labels: np.ndarray, take, rng: np.random.Generator) -> np.ndarray:
    """Sorted indices of ``n`` samples of class ``c`` for each ``(c, n)`` of ``take``, in
    order, each class's drawn by ``rng`` without replacement."""
    drawn = [rng.choice(np.flatnonzero(labels == c), size=n, replace=False) for c, n in take]
    return np.sort(np.concatenate(drawn))

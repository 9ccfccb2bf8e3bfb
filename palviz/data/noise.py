"""Synthetic label noise (docs/reference.md 4): exactly :func:`flip_count` ``(rate, n_class)``
flipped labels per class, the nearest integer to ``rate * n_class``, so the realised rate is the
nominal one up to rounding. The class map of asymmetric noise is part of each dataset's
declaration (:func:`palviz.data.register_dataset`'s ``asymmetric_map``)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from fractions import Fraction

import numpy as np
import torch

from palviz.checks import as_labels, check_choice, check_int, check_num_classes, check_probability
from palviz.data.registry import DATASETS, check_dataset, dataset_info

__all__ = ["ASYMMETRIC_MAPS", "NOISE_REVISION", "add_label_noise", "asymmetric_map", "flip_count"]

#: The revision of the labels :func:`add_label_noise` draws, part of a noisy run's cache key
#: (:meth:`palviz.experiments.runspec.RunSpec.key`): bump it whenever the same arguments could
#: give other labels. 1: ``int(rate * n)`` flips per class; 2: :func:`flip_count`, the nearest
#: integer.
NOISE_REVISION = 2


class _Maps(Mapping):
    """Registered dataset -> its asymmetric-noise map, for the datasets that declare one (a
    live view of the registry)."""

    def __getitem__(self, name: str) -> dict[int, int]:
        if name not in DATASETS or not dataset_info(name).asymmetric_flips:
            raise KeyError(name)
        return dict(dataset_info(name).asymmetric_flips)

    def __iter__(self) -> Iterator[str]:
        return (name for name in DATASETS if dataset_info(name).asymmetric_flips)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return repr(dict(self))


#: Class-conditional flips of asymmetric noise, source class -> noisy class, by dataset (each
#: dataset's ``asymmetric_map`` declaration, a live view).
ASYMMETRIC_MAPS: Mapping[str, dict[int, int]] = _Maps()


def asymmetric_map(dataset: str, num_classes: int | None = None) -> dict[int, int]:
    """The asymmetric-noise map of ``dataset`` (a copy of ``ASYMMETRIC_MAPS[dataset]``),
    source class -> noisy class. ``num_classes``, if given, must cover every id in the map.
    A dataset that declares no map raises ``ValueError``."""
    check_dataset("dataset", dataset)
    if dataset not in ASYMMETRIC_MAPS:
        raise ValueError(
            f"dataset {dataset!r} declares no asymmetric-noise map (register_dataset's "
            f"asymmetric_map); the datasets with one: {tuple(ASYMMETRIC_MAPS)}"
        )
    mapping = ASYMMETRIC_MAPS[dataset]
    if num_classes is not None:
        needed = max(max(mapping), max(mapping.values())) + 1
        check_int(f"num_classes (for the {dataset} map)", num_classes, needed)
    return mapping


def flip_count(rate: float, n: int) -> int:
    """How many of ``n`` labels noise at ``rate`` flips: the nearest integer to ``rate * n``,
    halves rounded up, ``floor(rate * n + 1/2)``.

    ``rate`` is read as the decimal it prints as (``Fraction(repr(rate))``: 0.7 is 7/10), so the
    product is exact: 0.7 * 90 is 63, where the floating-point product is 62.999... and
    ``int(rate * n)`` (APL's count, docs/reference.md 4) gives 62."""
    rate = check_probability("rate", rate)
    n = check_int("n", n, 0)
    exact = Fraction(repr(float(rate))) * n  # rate * n, in rationals
    return math.floor(exact + Fraction(1, 2))  # round(rate * n), halves up


def add_label_noise(
    targets: torch.Tensor | np.ndarray | Sequence[int],
    rate: float,
    kind: str = "symmetric",
    dataset: str | None = None,
    seed: int = 0,
    num_classes: int | None = None,
) -> np.ndarray:
    """Noisy copy of ``targets``; the input is never modified.

    * ``"symmetric"``: in each class ``c``, exactly ``flip_count(rate, n_c)`` labels (the
      nearest integer to ``rate * n_c``), drawn at random, move to a uniformly random *other*
      class.
    * ``"asymmetric"``: for each source class ``s`` of the dataset's map
      (:data:`ASYMMETRIC_MAPS`), exactly ``flip_count(rate, n_s)`` samples, chosen among those
      whose *clean* label is ``s``, get the label ``map[s]``. Other classes are untouched. The
      realised rate is thus the nominal rate (up to rounding).

    Args:
        targets: ``[N]`` clean integer labels in ``[0, C)`` (NumPy, torch or a list).
        rate: noise rate ``eta`` in ``[0, 1]``.
        kind: ``"symmetric"`` or ``"asymmetric"``.
        dataset: one of :data:`DATASETS`; required for ``"asymmetric"`` (it picks the map) and
            sets ``C`` when ``num_classes`` is not given.
        seed: the seed of the draw.
        num_classes: ``C``; default the dataset's, else ``max(targets) + 1``.

    Returns:
        ``[N]`` int64 NumPy array of noisy labels.
    """
    check_probability("rate", rate)
    check_choice("kind", kind, ("symmetric", "asymmetric"))
    if dataset is not None:
        check_dataset("dataset", dataset)
    elif kind == "asymmetric":
        raise ValueError(
            f"dataset must be given for kind='asymmetric' (it picks the class map), one of "
            f"{tuple(ASYMMETRIC_MAPS)}; got dataset=None"
        )
    clean = as_labels("targets", targets)
    if num_classes is None:
        if dataset is not None:
            num_classes = dataset_info(dataset).num_classes
        else:
            num_classes = int(clean.max()) + 1 if clean.size else 1
    num_classes = check_num_classes(num_classes)
    as_labels("targets", clean, num_classes)  # in [0, num_classes)
    mapping = asymmetric_map(dataset, num_classes) if kind == "asymmetric" else None

    rng = np.random.default_rng(seed)
    noisy = clean.copy()
    # every class flips some labels, or (asymmetric) the map's source classes, in order
    for c in range(num_classes) if mapping is None else sorted(mapping):
        members = np.flatnonzero(clean == c)
        k = flip_count(rate, len(members))
        if k == 0:
            continue
        flipped = rng.choice(members, size=k, replace=False)
        if mapping is not None:
            noisy[flipped] = mapping[c]
        else:
            # c + U{1, ..., C-1} (mod C) is uniform over the classes other than c.
            noisy[flipped] = (c + rng.integers(1, num_classes, size=k)) % num_classes
    return noisy

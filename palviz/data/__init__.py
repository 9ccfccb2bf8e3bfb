"""Datasets, long-tailed subsets, synthetic label noise and a device-resident batch iterator.

Data policy
-----------
Two kinds of data, kept apart on purpose:

* **Offline, embedded** (``"mnist1d"``, ``"digits"``): produced by an installed package, so
  tests and the ``quick`` profile never touch the network. MNIST-1D is generated
  procedurally by ``mnist1d.data.make_dataset`` and cached as ``.npz`` under ``data/``;
  scikit-learn's digits ship with scikit-learn and are split here.
* **Real, downloaded** (``"mnist"``, ``"cifar10"``, ``"cifar100"``): fetched by torchvision
  into ``data/`` only when asked (``download=True`` or ``palviz download NAME``). torchvision
  downloads and verifies the MD5 checksums; palviz then reads the files in their on-disk
  format itself (CIFAR pickles, MNIST idx files), so tests can write small stand-in files in
  the same format. Missing files without permission to download are a
  :class:`FileNotFoundError` that names the command to fetch them; a file that is there but
  damaged (truncated, of the wrong format, or a CIFAR pickle holding anything but a CIFAR
  batch, which is refused unrun) is a :class:`DatasetFileError` that names the file, what is
  wrong and how to fetch it again. A damaged MNIST-1D cache is generated again, with a warning.

Loading and reading the files lives in :mod:`palviz.data.datasets` (``load_dataset``,
``dataset_info``, the CIFAR and MNIST readers); its public names are re-exported here, so
``from palviz.data import load_dataset`` keeps working.

Images are returned as ``uint8`` tensors ``N x C x H x W``; normalisation and augmentation
belong to the batch pipeline (:class:`BatchIterator`, :func:`normalize_images`). Vectors are
``float32`` ``N x D``; labels are ``int64``.

Long-tailed subsets follow the LDAM-DRW convention (docs/reference.md 1) and label noise follows
docs/reference.md 4: exactly ``int(rate * n_class)`` flipped labels per class, so the realised
rate is the nominal one.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from palviz.checks import (
    DATASETS,
    check_choice,
    check_dataset,
    check_int,
    check_num_classes,
    check_probability,
    check_range,
    check_real,
    invalid,
)
from palviz.data.datasets import (  # noqa: F401 (the MNIST-1D constants are re-exported too)
    MNIST1D_NUM_SAMPLES,
    MNIST1D_SEED,
    DatasetFileError,
    DatasetInfo,
    dataset_info,
    load_dataset,
)

__all__ = [
    "ASYMMETRIC_MAPS",
    "DATASETS",
    "BatchIterator",
    "DatasetFileError",
    "DatasetInfo",
    "add_label_noise",
    "asymmetric_map",
    "dataset_info",
    "load_dataset",
    "long_tail_counts",
    "long_tail_indices",
    "make_long_tailed",
    "normalize_images",
    "rotate_images",
    "stratified_subset",
]


# ---------------------------------------------------------------------------------------------
# Batches
# ---------------------------------------------------------------------------------------------


def _stats_tensor(
    values: float | Sequence[float] | torch.Tensor | np.ndarray | None,
    name: str,
    ndim: int,
    device: torch.device,
) -> torch.Tensor | None:
    """``mean`` / ``std`` as a float32 tensor that broadcasts over a batch: shape ``(1, C, 1, 1)``
    for images (``ndim == 4``), ``(D,)`` or ``()`` for everything else."""
    if values is None:
        return None
    if isinstance(values, torch.Tensor):
        t = values.detach().to(device=device, dtype=torch.float32)
    else:
        t = torch.as_tensor(np.asarray(values, dtype=np.float32), device=device)
    if name == "std" and bool((t <= 0).any()):
        raise ValueError(f"std must be > 0, got {t.tolist()}")
    if ndim == 4:
        t = t.reshape(1, -1, 1, 1)
    return t


def normalize_images(
    x_uint8: torch.Tensor,
    mean: float | Sequence[float] | torch.Tensor | None = None,
    std: float | Sequence[float] | torch.Tensor | None = None,
) -> torch.Tensor:
    """Convert images to float32 in ``[0, 1]`` and normalise each channel:
    ``(x / 255 - mean[c]) / std[c]``.

    Args:
        x_uint8: ``[batch_size, channels, height, width]`` images; ``uint8`` (0..255) are
            divided by 255, floating-point images are taken as already in ``[0, 1]``.
        mean, std: per-channel statistics (length ``channels``, or a scalar), or ``None``
            to skip that step.

    Returns:
        ``[batch_size, channels, height, width]`` float32 tensor on ``x_uint8``'s device.
    """
    if x_uint8.dim() != 4:
        raise ValueError(
            f"x_uint8 must have 4 dimensions (N x C x H x W), got shape {tuple(x_uint8.shape)}"
        )
    x = x_uint8.float()
    if x_uint8.dtype == torch.uint8:
        x = x / 255.0
    m = _stats_tensor(mean, "mean", 4, x.device)
    s = _stats_tensor(std, "std", 4, x.device)
    if m is not None:
        x = x - m
    if s is not None:
        x = x / s
    return x


def rotate_images(x: torch.Tensor, angles: torch.Tensor | Sequence[float]) -> torch.Tensor:
    """Rotate each image of a batch about its centre by its own angle, in one batched pass on
    ``x``'s device: ``torchvision.transforms.functional.rotate(x[i], angles[i])`` with its
    defaults (counter-clockwise in degrees, nearest-neighbour interpolation, the output the
    input's size, pixels from outside the image filled with 0), which is what
    ``RandomRotation(degrees)`` applies.

    Output pixel ``(u, v)`` (coordinates of pixel centres relative to the image centre, in
    pixels, ``v`` pointing down) reads the input at ``(u cos a - v sin a, u sin a + v cos a)``,
    the nearest pixel of it (``F.grid_sample(mode="nearest", padding_mode="zeros")``). The
    sampling grid is computed in the order torchvision computes it (sines and cosines in
    float64, then pixel coordinates times the float32 matrix scaled to grid units), so that
    even the rounding at ties agrees.

    Args:
        x: ``[N, C, H, W]`` images, ``uint8`` or floating point.
        angles: ``[N]`` angles in degrees.

    Returns:
        ``[N, C, H, W]``, ``x``'s dtype and device.
    """
    if x.dim() != 4:
        raise ValueError(f"x must be N x C x H x W images, got shape {tuple(x.shape)}")
    angles = torch.as_tensor(angles, device=x.device)
    if angles.shape != (len(x),):
        raise ValueError(
            f"angles must hold one angle per image ({len(x)}), got shape {tuple(angles.shape)}"
        )
    n, _, h, w = x.shape
    rad = torch.deg2rad(angles.double())
    cos, sin = torch.cos(rad).float(), torch.sin(rad).float()
    zero = torch.zeros_like(cos)
    # [N, 3, 2]: (u, v, 1) -> input (u cos a - v sin a, u sin a + v cos a), in units of half
    # the width and height (grid_sample's -1..1)
    matrix = torch.stack([torch.stack([cos, sin], 1), torch.stack([-sin, cos], 1)], 1)
    matrix = torch.cat([matrix, torch.stack([zero, zero], 1)[:, None]], 1)
    matrix = matrix / torch.tensor([0.5 * w, 0.5 * h], device=x.device)
    u = torch.linspace(-0.5 * w + 0.5, 0.5 * w - 0.5, w, device=x.device)
    v = torch.linspace(-0.5 * h + 0.5, 0.5 * h - 0.5, h, device=x.device)
    base = torch.stack(
        [u.expand(h, w), v[:, None].expand(h, w), torch.ones(h, w, device=x.device)], -1
    )  # [H, W, 3]
    grid = (base.reshape(1, h * w, 3).expand(n, -1, -1) @ matrix).reshape(n, h, w, 2)
    out = F.grid_sample(x.float(), grid, mode="nearest", padding_mode="zeros", align_corners=False)
    return out.to(x.dtype)  # nearest copies pixels: uint8 values come back exactly


def _epoch_generator(seed: int, epoch: int) -> torch.Generator:
    """A CPU generator whose state is a pure function of ``(seed, epoch)``."""
    state = np.random.SeedSequence([int(seed), int(epoch)]).generate_state(2, dtype=np.uint32)
    g = torch.Generator(device="cpu")
    g.manual_seed((int(state[0]) << 32 | int(state[1])) & ((1 << 63) - 1))
    return g


def _default_device(device: str | torch.device | None) -> torch.device:
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


class _EpochBatches:
    """An iterator over one epoch's batches that knows how many there are (for progress bars)."""

    def __init__(self, batches: Iterator[tuple[torch.Tensor, torch.Tensor]], length: int):
        self._batches = batches
        self._length = length

    def __iter__(self) -> _EpochBatches:
        return self

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor]:
        return next(self._batches)

    def __len__(self) -> int:
        return self._length


class BatchIterator:
    """Mini-batches drawn from tensors that live on the device for the whole run.

    The data are moved to ``device`` once (``uint8`` images stay ``uint8`` there, four times
    smaller than float32) and each batch is converted on the fly: images to float32 ``/ 255``,
    then normalised per channel by ``mean`` / ``std`` when given; vectors (float32) are
    normalised by ``mean`` / ``std`` (scalars or length-``D``) when given.

    Augmentation (images only, ``augment=True``) is the CIFAR recipe of the published set-ups:
    random crop with zero padding ``pad`` (the raw 0..255 pixels are padded with 0 *before*
    normalisation, as ``torchvision.transforms.RandomCrop(32, padding=4)`` does on the PIL
    image) and a horizontal flip with probability 0.5. It runs batched on the device: the
    batch is padded once and each sample's crop is gathered from its own offsets. With
    ``rotation > 0`` (APL's CIFAR-100 recipe: ``RandomRotation(20)`` after the crop and flip),
    each image is then rotated by an angle drawn uniformly from ``[-rotation, rotation]``
    degrees, also on the raw pixels and batched (:func:`rotate_images`).

    Every random choice of epoch ``e`` (the shuffle order, the crop offsets, the flips, the
    angles) comes
    from a CPU ``torch.Generator`` seeded from ``(seed, e)`` alone, so a run resumed at epoch
    ``e`` sees exactly the batches it would have seen.

    Args:
        x: ``[N, C, H, W]`` images (``uint8`` or float in ``[0, 1]``) or ``[N, D]`` vectors.
        y: ``[N]`` integer labels.
        batch_size: samples per batch (the last batch may be smaller unless ``drop_last``).
        shuffle: draw a fresh permutation each epoch; otherwise the stored order.
        augment: random crop + horizontal flip (4-D inputs only).
        rotation: largest angle of the random rotation, in degrees (0: none; 4-D inputs
            only); applied after the crop and flip.
        mean, std: normalisation statistics (per channel for images), or ``None``.
        device: where data and batches live; ``None`` means CUDA if available, else CPU.
        seed: base seed of every epoch's randomness.
        drop_last: drop the final incomplete batch.
        pad: zero padding of the random crop, in pixels.

    Yields (from :meth:`epoch`):
        ``(xb, yb)``: ``xb`` float32 ``[B, C, H, W]`` or ``[B, D]``, ``yb`` int64 ``[B]``,
        both on ``device``.
    """

    def __init__(
        self,
        x: torch.Tensor | np.ndarray,
        y: torch.Tensor | np.ndarray,
        batch_size: int,
        *,
        shuffle: bool = True,
        augment: bool = False,
        rotation: float = 0.0,
        mean: float | Sequence[float] | torch.Tensor | None = None,
        std: float | Sequence[float] | torch.Tensor | None = None,
        device: str | torch.device | None = None,
        seed: int = 0,
        drop_last: bool = False,
        pad: int = 4,
    ) -> None:
        x = torch.as_tensor(x)
        y = torch.as_tensor(y)
        batch_size = check_int("batch_size", batch_size, 1)
        pad = check_int("pad", pad, 0)
        rotation = check_range("rotation", rotation, 0.0, 180.0)
        if x.dim() < 2:
            raise ValueError(f"x must have shape N x ... (at least 2-D), got {tuple(x.shape)}")
        if y.dim() != 1:
            raise ValueError(f"y must be 1-D (N labels), got shape {tuple(y.shape)}")
        if len(x) != len(y):
            raise ValueError(f"len(x) must equal len(y), got len(x)={len(x)}, len(y)={len(y)}")
        if augment and x.dim() != 4:
            raise ValueError(
                f"augment=True needs N x C x H x W images, got x of shape {tuple(x.shape)}"
            )
        if rotation > 0 and x.dim() != 4:
            raise ValueError(
                f"rotation={rotation:g} needs N x C x H x W images, got x of shape {tuple(x.shape)}"
            )
        self.device = _default_device(device)
        if x.dtype != torch.uint8:
            x = x.float()
        self.x = x.to(self.device)
        self.y = y.long().to(self.device)
        self.batch_size = batch_size
        self.shuffle = bool(shuffle)
        self.augment = bool(augment)
        self.rotation = rotation
        self.seed = int(seed)
        self.drop_last = bool(drop_last)
        self.pad = pad
        self.mean = _stats_tensor(mean, "mean", x.dim(), self.device)
        self.std = _stats_tensor(std, "std", x.dim(), self.device)

    def __len__(self) -> int:
        """Number of batches per epoch."""
        n = len(self.y)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    @property
    def num_samples(self) -> int:
        """``N``, the number of stored samples."""
        return len(self.y)

    def __iter__(self) -> _EpochBatches:
        """The batches of epoch 0."""
        return self.epoch(0)

    def epoch(self, e: int) -> _EpochBatches:
        """The batches of epoch ``e``, a pure function of ``(seed, e)``: an iterator of
        ``(xb, yb)`` that also knows its length (``len(it.epoch(e)) == len(it)``)."""
        n = len(self.y)
        g = _epoch_generator(self.seed, e)
        # All of the epoch's random numbers are drawn up front, in a fixed order.
        order = torch.randperm(n, generator=g) if self.shuffle else torch.arange(n)
        if self.augment:
            offsets = torch.randint(0, 2 * self.pad + 1, (n, 2), generator=g)
            flips = torch.rand(n, generator=g) < 0.5
        else:
            offsets = flips = None
        # drawn last, and only when asked for: the other draws stay as they were without it
        angles = None
        if self.rotation > 0:
            angles = (torch.rand(n, generator=g) * 2 - 1) * self.rotation
        return _EpochBatches(self._batches(order, offsets, flips, angles), len(self))

    def _batches(
        self,
        order: torch.Tensor,
        offsets: torch.Tensor | None,
        flips: torch.Tensor | None,
        angles: torch.Tensor | None,
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for b in range(len(self)):
            sl = slice(b * self.batch_size, (b + 1) * self.batch_size)
            idx = order[sl].to(self.device)
            xb = self.x[idx]
            if offsets is not None and flips is not None:
                xb = self._crop_flip(xb, offsets[sl].to(self.device), flips[sl].to(self.device))
            if angles is not None:
                xb = rotate_images(xb, angles[sl])
            yield self._convert(xb), self.y[idx]

    def _crop_flip(
        self, xb: torch.Tensor, offsets: torch.Tensor, flips: torch.Tensor
    ) -> torch.Tensor:
        """Random crop of the zero-padded batch at per-sample ``offsets`` ``[B, 2]`` (row,
        column), then mirror the samples where ``flips`` ``[B]`` is true."""
        bsz, _, h, w = xb.shape
        p = self.pad
        padded = F.pad(xb, (p, p, p, p), value=0) if p > 0 else xb
        padded = padded.permute(0, 2, 3, 1)  # [B, H+2p, W+2p, C]
        ar_h = torch.arange(h, device=xb.device)
        ar_w = torch.arange(w, device=xb.device)
        rows = offsets[:, 0:1] + ar_h  # [B, H]
        # A flipped crop reads its columns right to left.
        cols_fwd = ar_w.expand(bsz, w)
        cols = torch.where(flips[:, None], (w - 1) - cols_fwd, cols_fwd) + offsets[:, 1:2]
        bi = torch.arange(bsz, device=xb.device)[:, None, None]
        out = padded[bi, rows[:, :, None], cols[:, None, :]]  # [B, H, W, C]
        return out.permute(0, 3, 1, 2).contiguous()

    def _convert(self, xb: torch.Tensor) -> torch.Tensor:
        xb = xb.float() / 255.0 if xb.dtype == torch.uint8 else xb.float()
        if self.mean is not None:
            xb = xb - self.mean
        if self.std is not None:
            xb = xb / self.std
        return xb


# ---------------------------------------------------------------------------------------------
# Long-tailed subsets (docs/reference.md 1)
# ---------------------------------------------------------------------------------------------


LONG_TAIL_SHAPES = ("exp", "step")


def _long_tail_shape(shape: str, profile: str | None, stacklevel: int = 3) -> str:
    """``shape``, or the deprecated ``profile=`` keyword that named it before."""
    if profile is None:
        return check_choice("shape", shape, LONG_TAIL_SHAPES)
    warnings.warn(
        "the profile= argument of the long-tail helpers is now shape= ('exp' or 'step'); "
        "'profile' names the run size (smoke, quick, paper) everywhere else",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
    if shape != "exp" and shape != profile:
        raise invalid("profile", profile, f"left out when shape is given (shape={shape!r})")
    return check_choice("profile", profile, LONG_TAIL_SHAPES)


def long_tail_counts(
    n_max: int,
    num_classes: int,
    imbalance_ratio: float,
    shape: str = "exp",
    *,
    profile: str | None = None,
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
        profile: the old name of ``shape``, deprecated (a ``DeprecationWarning``).

    Raises:
        ValueError: an argument out of range, or a ratio that would leave a class empty.
    """
    n_max = check_int("n_max", n_max, 1)
    num_classes = check_num_classes(num_classes)
    if check_real("imbalance_ratio", imbalance_ratio) < 1:
        raise invalid("imbalance_ratio", imbalance_ratio, ">= 1")
    shape = _long_tail_shape(shape, profile)
    if shape == "exp":
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


def _as_label_array(targets: torch.Tensor | np.ndarray | Sequence[int], name: str) -> np.ndarray:
    """A fresh 1-D int64 NumPy copy of ``targets``."""
    if isinstance(targets, torch.Tensor):
        arr = targets.detach().cpu().numpy()
    else:
        arr = np.asarray(targets)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size and not (np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{name} must hold integer class ids, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=True)


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
    t = _as_label_array(targets, "targets")
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
    *,
    profile: str | None = None,
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
        profile: the old name of ``shape``, deprecated (a ``DeprecationWarning``).

    Returns:
        ``(x_lt, y_lt, counts)``: the subset (same type as the inputs, in the original order)
        and the per-class counts, class 0 the head.
    """
    shape = _long_tail_shape(shape, profile)
    y_np = _as_label_array(y, "y")
    if len(x) != len(y_np):
        raise ValueError(f"len(x) must equal len(y), got len(x)={len(x)}, len(y)={len(y_np)}")
    if y_np.size == 0 or y_np.min() < 0:
        raise ValueError("y must be non-empty with labels >= 0")
    per_class = np.bincount(y_np)
    if n_max is None:
        n_max = int(per_class.min())
    counts = long_tail_counts(n_max, len(per_class), imbalance_ratio, shape)
    idx = long_tail_indices(y_np, counts, seed)
    if isinstance(x, torch.Tensor):
        x_lt = x[torch.from_numpy(idx).to(x.device)]
    else:
        x_lt = x[idx]
    if isinstance(y, torch.Tensor):
        y_lt = y[torch.from_numpy(idx).to(y.device)]
    else:
        y_lt = np.asarray(y)[idx]
    return x_lt, y_lt, counts


# ---------------------------------------------------------------------------------------------
# Synthetic label noise (docs/reference.md 4)
# ---------------------------------------------------------------------------------------------

_MNIST_MAP = {7: 1, 2: 7, 5: 6, 6: 5, 3: 8}

#: Class-conditional flips of asymmetric noise, source class -> noisy class.
ASYMMETRIC_MAPS: dict[str, dict[int, int]] = {
    "mnist": dict(_MNIST_MAP),
    "mnist1d": dict(_MNIST_MAP),
    "digits": dict(_MNIST_MAP),
    # truck -> automobile, bird -> airplane, cat <-> dog, deer -> horse
    "cifar10": {9: 1, 2: 0, 3: 5, 5: 3, 4: 7},
    # Within each block of 5 consecutive ids, i -> the next id of its block, cyclically
    # (the convention of the published tables; not CIFAR-100's semantic superclasses).
    "cifar100": {i: 5 * (i // 5) + (i + 1) % 5 for i in range(100)},
}


def asymmetric_map(dataset: str, num_classes: int | None = None) -> dict[int, int]:
    """The asymmetric-noise map of ``dataset`` (a copy of ``ASYMMETRIC_MAPS[dataset]``),
    source class -> noisy class. ``num_classes``, if given, must cover every id in the map."""
    check_dataset("dataset", dataset)
    mapping = dict(ASYMMETRIC_MAPS[dataset])
    if num_classes is not None:
        needed = max(max(mapping), max(mapping.values())) + 1
        check_int(f"num_classes (for the {dataset} map)", num_classes, needed)
    return mapping


def add_label_noise(
    targets: torch.Tensor | np.ndarray | Sequence[int],
    rate: float,
    kind: str = "symmetric",
    dataset: str | None = None,
    seed: int = 0,
    num_classes: int | None = None,
) -> np.ndarray:
    """Noisy copy of ``targets``; the input is never modified.

    * ``"symmetric"``: in each class ``c``, exactly ``int(rate * n_c)`` labels, drawn at
      random, move to a uniformly random *other* class.
    * ``"asymmetric"``: for each source class ``s`` of the dataset's map
      (:data:`ASYMMETRIC_MAPS`), exactly ``int(rate * n_s)`` samples, chosen among those whose
      *clean* label is ``s``, get the label ``map[s]``. Other classes are untouched. The realised
      rate is thus the nominal rate (up to truncation).

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
    clean = _as_label_array(targets, "targets")
    if num_classes is None:
        if dataset is not None:
            num_classes = dataset_info(dataset).num_classes
        else:
            num_classes = int(clean.max()) + 1 if clean.size else 1
    num_classes = check_num_classes(num_classes)
    if clean.size and (clean.min() < 0 or clean.max() >= num_classes):
        raise ValueError(
            f"targets must lie in [0, {num_classes}) (num_classes), "
            f"got values in [{clean.min()}, {clean.max()}]"
        )
    mapping = asymmetric_map(dataset, num_classes) if kind == "asymmetric" else None

    rng = np.random.default_rng(seed)
    noisy = clean.copy()
    for c in range(num_classes):
        if mapping is not None and c not in mapping:
            continue
        members = np.flatnonzero(clean == c)
        k = int(rate * len(members))
        if k == 0:
            continue
        flipped = rng.choice(members, size=k, replace=False)
        if mapping is not None:
            noisy[flipped] = mapping[c]
        else:
            # c + U{1, ..., C-1} (mod C) is uniform over the classes other than c.
            noisy[flipped] = (c + rng.integers(1, num_classes, size=k)) % num_classes
    return noisy


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
    keep = [
        rng.choice(np.flatnonzero(targets == c), size=n, replace=False)
        for c, n in zip(classes, take, strict=True)
    ]
    return np.sort(np.concatenate(keep))

"""Batches on the device: normalisation, rotation and :class:`BatchIterator`.

Images arrive as ``uint8`` tensors ``N x C x H x W`` (:func:`palviz.data.load_dataset`);
normalisation and augmentation (random crop, flip and rotation, drawn by palviz's own seeded
generators) happen here, batched on the device. Vectors are ``float32`` ``N x D``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from palviz.checks import check_int, check_range

__all__ = ["BatchIterator", "normalize_images", "rotate_images"]


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
    t = torch.as_tensor(values, dtype=torch.float32, device=device).detach()
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
    m = _stats_tensor(mean, "mean", 4, x_uint8.device)
    return _standardise(x_uint8, m, _stats_tensor(std, "std", 4, x_uint8.device))


def _standardise(x: torch.Tensor, mean: torch.Tensor | None, std: torch.Tensor | None):
    """``(x / 255 - mean) / std`` in float32 (``x / 255`` for ``uint8`` only), skipping a
    ``None`` statistic."""
    x = x.float() / 255.0 if x.dtype == torch.uint8 else x.float()
    if mean is not None:
        x = x - mean
    if std is not None:
        x = x / std
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


@dataclass
class _EpochBatches:
    """An iterator over one epoch's batches that knows how many there are (for progress bars)."""

    batches: Iterator[tuple[torch.Tensor, torch.Tensor]]
    length: int

    def __iter__(self) -> _EpochBatches:
        return self

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor]:
        return next(self.batches)

    def __len__(self) -> int:
        return self.length


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
        for asked, what in ((augment, "augment=True"), (rotation > 0, f"rotation={rotation:g}")):
            if asked and x.dim() != 4:
                raise ValueError(
                    f"{what} needs N x C x H x W images, got x of shape {tuple(x.shape)}"
                )
        auto = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device if device is not None else auto)
        self.x = (x if x.dtype == torch.uint8 else x.float()).to(self.device)
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
        rotate = self.rotation > 0
        angles = (torch.rand(n, generator=g) * 2 - 1) * self.rotation if rotate else None
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
            if offsets is not None:
                xb = self._crop_flip(xb, offsets[sl].to(self.device), flips[sl].to(self.device))
            if angles is not None:
                xb = rotate_images(xb, angles[sl])
            yield _standardise(xb, self.mean, self.std), self.y[idx]

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

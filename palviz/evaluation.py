"""A model run over data in eval mode (:func:`evaluate`), and what training shares with it:
the device (:func:`resolve_device`) and the readings of an evaluation pass
(:func:`collapse_readings`). :mod:`palviz.train` trains with these; both run in float32."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from palviz import calibration, collapse
from palviz.data import BatchIterator
from palviz.threads import single_thread

__all__ = [
    "collapse_readings",
    "eval_batch_size",
    "evaluate",
    "evaluate_batches",
    "resolve_device",
]


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` -> CUDA if available, else CPU; anything else -> ``torch.device(device)``."""
    if isinstance(device, torch.device):
        return device
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def eval_batch_size(device: torch.device) -> int:
    """Samples per forward pass of an evaluation: 1024 on CUDA, 256 on CPU (oneDNN's
    convolutions run faster on smaller batches)."""
    return 1024 if device.type == "cuda" else 256


@torch.no_grad()
def evaluate_batches(
    model: nn.Module, batches: BatchIterator, *, keep_outputs: bool
) -> dict[str, Any]:
    """Accuracy (and, with ``keep_outputs``, logits and features) over ``batches`` (a
    :class:`~palviz.data.BatchIterator`) in eval mode, counted on the device."""
    was_training = model.training
    model.eval()
    correct = total = None
    logits_all, features_all = [], []
    for xb, yb in batches.epoch(0):
        logits, features = model.forward_features(xb)
        k = logits.shape[1]
        hits = yb[logits.argmax(1) == yb]
        if correct is None:
            correct = torch.zeros(k, dtype=torch.long, device=yb.device)
            total = torch.zeros(k, dtype=torch.long, device=yb.device)
        correct += torch.bincount(hits, minlength=k)
        total += torch.bincount(yb, minlength=k)
        if keep_outputs:
            logits_all.append(logits.float().cpu())
            features_all.append(features.float().cpu())
    model.train(was_training)
    correct, total = correct.cpu().numpy(), total.cpu().numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        per_class = np.where(total > 0, correct / np.maximum(total, 1), np.nan)
    out: dict[str, Any] = {"acc": float(correct.sum() / total.sum()), "per_class_acc": per_class}
    if keep_outputs:
        out["logits"] = torch.cat(logits_all)
        out["features"] = torch.cat(features_all)
        out["targets"] = batches.y.cpu()
    return out


def evaluate(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    batch_size: int | None = None,
    mean: Any = None,
    std: Any = None,
    device: str | torch.device | None = None,
) -> dict[str, Any]:
    """Run ``model`` (a :class:`palviz.models.Classifier`) over ``(x, y)`` in eval mode.

    Args:
        model: has ``forward_features(x) -> (logits, features)``.
        x: ``[N, C, H, W]`` images (``uint8`` or float) or ``[N, D]`` vectors.
        y: ``[N]`` labels.
        batch_size: samples per forward pass; ``None``: 1024 on CUDA, 256 on CPU (oneDNN's
            convolutions run faster on smaller batches: a ResNet-32 pass over 1,024 images
            took half the CPU time with batches of 128-256 as with one batch of 1,024).
        mean, std: normalisation, as in training (``TrainConfig.mean`` / ``.std``).
        device: where to run; ``None`` = where the model's parameters are (the model is moved
            otherwise).

    Returns:
        ``logits`` ``[N, num_classes]`` and ``features`` ``[N, feat_dim]`` (float32, CPU),
        ``targets`` ``[N]`` (CPU), ``acc`` (float), ``per_class_acc`` (``np.ndarray``
        ``[num_classes]``, NaN for a class absent from ``y``).
    """
    if device is None:
        first = next(model.parameters(), None)
        dev = first.device if first is not None else torch.device("cpu")
    else:
        dev = resolve_device(device)
    model.to(dev)
    batch_size = eval_batch_size(dev) if batch_size is None else batch_size
    batches = BatchIterator(x, y, batch_size, shuffle=False, mean=mean, std=std, device=dev)
    return evaluate_batches(model, batches, keep_outputs=True)


#: What :func:`collapse_readings` returns, in this order (the keys of a training history row).
COLLAPSE_KEYS = (
    "nc1",
    "nc2_norms_means",
    "nc2_norms_classifier",
    "nc2_angles_means",
    "nc2_angles_classifier",
    "nc3",
    "nc4",
    "ece",
)


def collapse_readings(outputs: dict[str, Any], head: nn.Module, logit_scale: float = 1.0) -> dict:
    """Neural collapse and calibration of one evaluation pass (:func:`evaluate_batches` with
    ``keep_outputs``), on the split it ran over, as :data:`COLLAPSE_KEYS` -> float:

    - ``nc1``: :func:`palviz.collapse.nc1`, Tr(Sigma_W Sigma_B^+)/K, from the class
      statistics :func:`palviz.diagnose` reads (:class:`palviz.collapse.ClassStats`);
    - ``nc2_norms_*`` / ``nc2_angles_*``: :func:`palviz.collapse.equinorm` and
      :func:`palviz.collapse.equiangularity` of the centred class means and of the head's
      class vectors (``head.prototypes``);
    - ``nc3``: :func:`palviz.collapse.nc3`; ``nc4``: :func:`palviz.collapse.nc4` on the head's
      own predictions (a cosine or anchored head's logits are not ``W h + b``);
    - ``ece``: :func:`palviz.calibration.expected_calibration_error` (15 bins) of the logits
      times ``logit_scale`` (the scale s a loss such as LDAM applies to cosine logits).

    The global mean is the mean of the class means (``center="class_means"``). ``{}`` when a
    class has no sample in the split (its mean is undefined)."""
    with single_thread():  # small products: more threads only add waiting on a busy machine
        return _collapse_readings(outputs, head, logit_scale)


def _collapse_readings(outputs: dict[str, Any], head: nn.Module, logit_scale: float) -> dict:
    h = outputs["features"].double().numpy()
    z = outputs["logits"].double().numpy()
    y = outputs["targets"].numpy()
    k = z.shape[1]
    if np.bincount(y, minlength=k).min() == 0:
        return {}
    W = head.prototypes.detach().double().cpu().numpy()
    stats = collapse.ClassStats.of(h, y, k)  # the statistics diagnose reads
    M = stats.centred  # mu_c - mu_G, mu_G the mean of the class means
    values = (
        stats.nc1(np.arange(k)),
        collapse.equinorm(M),
        collapse.equinorm(W),
        collapse.equiangularity(M),
        collapse.equiangularity(W),
        collapse.nc3(W, M),
        collapse.nc4(h, None, None, stats.means, preds=z.argmax(1)),
        calibration.expected_calibration_error(logit_scale * z, y, 15, kind="logits"),
    )
    return {
        key: float(v) if np.isfinite(v) else None  # NaN: too few pairs (JSON has no NaN)
        for key, v in zip(COLLAPSE_KEYS, values, strict=True)
    }

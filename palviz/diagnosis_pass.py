"""The forward pass of :func:`palviz.diagnose` and :func:`palviz.diagnosis.post_hoc`: which
layer is read (:func:`find_classifier`), the checked arguments (:func:`prepare`) and one pass
per split under ``torch.no_grad()`` in eval mode (:func:`forward`), the features caught by a
hook on the classifier layer's input and the logits taken to the CPU in float64.
:mod:`palviz.diagnosis_inputs` has every check of what the pass is given
(:mod:`palviz.diagnosis_layer` that of ``layer=``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from palviz import diagnosis_inputs as inputs
from palviz import diagnosis_layer
from palviz.checks import as_labels, check_int, check_positive, invalid

if TYPE_CHECKING:
    from torch import nn

__all__ = ["Pass", "find_classifier", "forward", "prepare"]


def find_classifier(model: nn.Module) -> nn.Module | None:
    """The classifier layer whose input :func:`diagnose` takes as the features: the head of a
    :class:`~palviz.models.Classifier`, else the last palviz head or ``nn.Linear`` (one inside
    a palviz head counts as that head) in module order; ``None`` if there is none."""
    import torch

    from palviz.models import Classifier

    if not isinstance(model, torch.nn.Module):
        raise invalid("model", type(model).__name__, "a torch.nn.Module")
    if isinstance(model, Classifier):
        return model.head
    inside: set[int] = set()
    found = None
    for module in model.modules():  # a parent comes before its children
        if isinstance(module, diagnosis_layer.head_types()):
            found = module
            inside.update(id(m) for m in module.modules())
        elif isinstance(module, torch.nn.Linear) and id(module) not in inside:
            found = module
    return found


def _rows_module(layer: nn.Module | None) -> nn.Module | None:
    """The module holding the class vectors: the layer itself, or for a Classifier's head of
    another type the last palviz head / Linear inside it."""
    import torch

    if layer is None or isinstance(layer, (*diagnosis_layer.head_types(), torch.nn.Linear)):
        return layer
    return find_classifier(layer)


@dataclass
class Pass:
    features: np.ndarray  # [N, d] float64
    logits: np.ndarray  # [N, K] float64, times logit_scale
    targets: np.ndarray  # [N] int64
    read: bool = True  # the class vectors read (False: features= and another layer's output)


def _run(model, data, split, name, *, layer, features, device, batch_size, scale, first) -> Pass:
    """One split's pass; ``first``: the checks of the first batch, or ``None``."""
    import torch

    tap = inputs.Tap(layer.module, layer.rows)
    hs, zs, ys, read, start = [], [], [], True, 0
    try:
        for x, y in inputs.batches(data, batch_size, name):
            x = x.to(device)
            tap.clear()
            out = model(x)
            if not isinstance(out, torch.Tensor) or out.ndim != 2:
                raise invalid("model", "an output that is not a (batch, K) tensor", "logits")
            inputs.check_finite("logits", split, name, out, start)
            if first is not None:
                read, first = first(out, tap, name), None
            if features is not None:
                h = features(x)
            elif len(calls := tap.of(layer.module)) != 1:
                raise invalid(
                    "model",
                    f"a classifier layer {type(layer.module).__name__} called {len(calls)} times "
                    "in one forward pass",
                    "called once; pass features=lambda x: ... to give the features",
                )
            else:
                h = calls[0][0]
            if not isinstance(h, torch.Tensor) or h.ndim != 2 or h.shape[0] != out.shape[0]:
                raise invalid(
                    "features",
                    f"a {getattr(h, 'shape', type(h).__name__)} input of the classifier layer",
                    "(batch, d) features; pass features=lambda x: ... returning them",
                )
            inputs.check_finite("features", split, name, h, start)
            start += out.shape[0]  # the first sample of the next batch
            hs.append(h.detach().double().cpu())
            zs.append(out.detach().double().cpu())
            ys.append(y.detach().cpu().long())  # integer labels (checked): no rounding
    finally:
        tap.remove()
    if not ys:
        raise invalid(name, "no batch", "at least one sample")
    return Pass(
        features=torch.cat(hs).numpy(),
        logits=torch.cat(zs).numpy() * scale,  # the model's output times logit_scale
        targets=as_labels(f"{name} labels", torch.cat(ys).numpy()),
        read=read,
    )


def forward(model, splits, layer, features, dev, batch_size, scale, counts, hint):
    """One pass over each split ``{key: (argument name, data)}``, no grad, in ``model.eval()``
    on ``dev`` = (device, move the model there), its first batch checked; the mode restored."""
    import torch

    def first(out, tap, name):
        return inputs.check_first_batch(
            out, tap, layer, name, features_given=features is not None, counts=counts, hint=hint
        )

    device, move = dev
    if move:
        model.to(device)
    was_training = model.training
    model.eval()
    passes = {}
    try:
        with torch.no_grad():
            for key, (name, data) in splits.items():
                passes[key] = _run(
                    model,
                    data,
                    key,
                    name,
                    layer=layer,
                    features=features,
                    device=device,
                    batch_size=batch_size,
                    scale=scale,
                    first=None if passes else first,
                )
    finally:
        model.train(was_training)
    return passes


def prepare(model, device, logit_scale, features, batch_size, layer):
    """The checked arguments: the classifier layer read, the scale, ``(device, move)``."""
    import torch

    chosen = diagnosis_layer.choose_layer(model, layer, find_classifier(model))
    if chosen is None and features is None:
        raise invalid(
            "model",
            f"a {type(model).__name__} with no nn.Linear layer or palviz head",
            "a model ending in one, or pass features=lambda x: ... giving the features h",
        )
    if features is not None and not callable(features):
        raise invalid("features", features, "None or a function x -> features (batch, d)")
    scale = 1.0 if logit_scale is None else check_positive("logit_scale", logit_scale)
    check_int("batch_size", batch_size, 1)
    dev = inputs.check_device(device)
    if dev is None:
        first = next(model.parameters(), None)
        dev = first.device if first is not None else torch.device("cpu")
    read = diagnosis_layer.Layer.of(model, chosen, _rows_module(chosen), layer is not None)
    return read, scale, (dev, device is not None)

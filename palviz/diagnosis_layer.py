"""The classifier layer a diagnosis reads (:func:`palviz.diagnose`'s ``layer=``, checked where
it enters, else the one :func:`~palviz.diagnosis.find_classifier` finds): its input, the
features; the module holding its class vectors, an ``nn.Linear`` or a palviz head; and the
line of the notes that names what was read. Messages take the form of
:func:`palviz.checks.invalid`, values described as :mod:`palviz.diagnosis_inputs` describes
them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from palviz.checks import ArgumentTypeError, invalid
from palviz.diagnosis_inputs import Described, described

if TYPE_CHECKING:
    import torch
    from torch import nn

__all__ = ["Layer", "choose_layer", "head_types", "layer_note"]


def head_types() -> tuple[type, ...]:
    """The palviz heads, which :func:`~palviz.diagnosis.find_classifier` takes as a layer."""
    from palviz.heads import AnchoredHead, CosineHead, LinearHead

    return LinearHead, CosineHead, AnchoredHead


def _linear_names(model: nn.Module) -> str:
    import torch

    names = [n for n, m in model.named_modules() if isinstance(m, (torch.nn.Linear, *head_types()))]
    if not names:
        return "the model has no nn.Linear or palviz head"
    shown = ", ".join(repr(n) for n in names[-5:])
    return f"its linear layers and heads: {'..., ' if len(names) > 5 else ''}{shown}"


def choose_layer(model: nn.Module, layer: Any, found: nn.Module | None) -> nn.Module | None:
    """The module given as ``layer=`` (a name of ``model.named_modules()`` or a module of the
    model), else ``found``."""
    import torch

    if layer is None:
        return found
    if isinstance(layer, str):
        modules = dict(model.named_modules())
        if layer not in modules:
            rule = "the name of a module of the model, as model.named_modules() gives it"
            raise invalid("layer", layer, f"{rule} ({_linear_names(model)})")
        return modules[layer]
    if isinstance(layer, torch.nn.Module):
        if not any(m is layer for m in model.modules()):
            raise invalid(
                "layer",
                Described(f"a {type(layer).__name__} that is not in the model"),
                "a module of the model",
            )
        return layer
    rule = "None, a module name (str) or a module of the model"
    raise ArgumentTypeError(str(invalid("layer", described(layer), rule)))


@dataclass
class Layer:
    """The classifier layer read: ``module`` (its input: the features, unless ``features=``
    gives them), ``rows`` (the module holding the class vectors: ``module`` itself or the last
    ``nn.Linear`` / palviz head inside it; ``None`` when there is none), their paths in the
    model (``""``: the model itself), whether ``layer=`` chose it and the model's last modules,
    which a message lists."""

    module: nn.Module | None
    rows: nn.Module | None
    path: str | None
    rows_path: str | None
    chosen: bool
    names: str

    @classmethod
    def of(
        cls, model: nn.Module, module: nn.Module | None, rows: nn.Module | None, chosen: bool
    ) -> Layer:
        paths = {id(m): n for n, m in reversed(list(model.named_modules(remove_duplicate=False)))}
        found = paths.get(id(module)), paths.get(id(rows))
        names = [repr(n) for n, _ in model.named_modules() if n]
        last = f"its last modules: {'..., ' if len(names) > 6 else ''}{', '.join(names[-6:])}"
        return cls(module, rows, *found, chosen, last)

    def describe(self) -> str:
        """``'fc' (Linear, weight (10, 512))``; the rows' module too when it is another."""

        def one(path: str | None, module: nn.Module) -> str:
            where = "the model itself" if path == "" else repr(path)
            return f"{where} ({type(module).__name__}"

        text = one(self.path, self.module)
        if self.rows is None:
            return text + ")"
        shape = f"weight {tuple(self._weight().shape)})"
        if self.rows is self.module:
            return f"{text}, {shape}"
        return f"{text}) with its class vectors in {one(self.rows_path, self.rows)}, {shape}"

    def _weight(self) -> torch.Tensor:
        return self.rows.prototypes if isinstance(self.rows, head_types()) else self.rows.weight

    def class_vectors(self) -> np.ndarray | None:
        """The class vectors ``W`` `[K, d]` (float64, CPU): the rows' module's ``.prototypes``
        (a palviz head) or ``.weight`` (``nn.Linear``); ``None`` when there is no such module."""
        return None if self.rows is None else self._weight().detach().double().cpu().numpy()


def layer_note(layer: Layer, read: bool, features_given: bool) -> str:
    """The line of :attr:`Diagnosis.notes` that names the layer read."""
    lost = "NC3 and the classifier's geometry are left out"
    if layer.module is None:
        return f"no classifier layer read: features from features=, no class vectors W, {lost}"
    if not read:
        return (
            f"classifier layer {layer.describe()} found, but its output is not the model's logits "
            f"(first batch): its class vectors are not read, {lost}; features from features="
        )
    h = "features from features=" if features_given else "features h = its input"
    if layer.rows is None:
        return (
            f"classifier layer {layer.describe()}: {h}; no nn.Linear or palviz head in it, {lost}"
        )
    return f"classifier layer {layer.describe()}: {h}, class vectors W = its rows"

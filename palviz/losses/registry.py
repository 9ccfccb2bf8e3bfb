"""The loss registry: every loss declared once, next to its class.

A loss module declares a loss with :func:`register_loss` on its class (or factory)::

    @register_loss("my_loss", source="Someone et al., 2024, Eq. 1")
    class MyLoss(nn.Module):
        def __init__(self, num_classes: int, t: float = 1.0): ...

and everything else derives from that one declaration: :func:`make_loss`, :data:`LOSSES` and
the facts a run hands to the constructor (:func:`build_loss`). What a loss needs of a run is
read from its constructor's parameters, as timm's ``register_model`` reads a model from its
function: a constructor that takes ``cls_num_list`` receives the class counts, one that takes
``num_classes`` the number of classes. Which experiments train a loss, and how (its table
methods), is the experiment layer's to say (:mod:`palviz.experiments.methods`).

====================  ==================  ==========================================
fact                  argument            value
====================  ==================  ==========================================
``"class_counts"``    ``cls_num_list``    training samples per class (after the cut)
``"num_classes"``     ``num_classes``     the dataset's number of classes
====================  ==================  ==========================================

The names are checked where they enter (a spec, :func:`make_loss`); :func:`build_loss`, which
the training run calls with a checked spec, trusts them. This module imports no other palviz
module.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FACTS",
    "HEAD_FAMILIES",
    "LOSSES",
    "LossEntry",
    "build_loss",
    "check_loss_kw",
    "make_loss",
    "register_loss",
]

#: fact of a run -> the constructor argument it is passed as.
FACTS: dict[str, str] = {"class_counts": "cls_num_list", "num_classes": "num_classes"}

#: The head a loss goes with: ``"linear"`` (plain logits; with PAL,
#: ``AnchoredHead(normalize=False)``) or ``"cosine"`` (cosine logits the loss scales by its own
#: s; with PAL, ``AnchoredHead(normalize=True, scale=1)``).
HEAD_FAMILIES = ("linear", "cosine")


@dataclass(frozen=True)
class LossEntry:
    """One registered loss: ``name``, the ``factory`` (class or function) that builds it, the
    ``head`` family it goes with, its ``source`` (paper and equation); ``arguments``,
    ``defaults`` and ``needs`` (the facts of a run, :data:`FACTS`, whose arguments it takes)
    are read from the factory's signature, ``summary`` is the first line of its docstring."""

    name: str
    factory: Callable[..., Any]
    needs: tuple[str, ...]
    head: str
    source: str
    arguments: tuple[str, ...]
    defaults: Mapping[str, Any]
    summary: str

    @property
    def class_name(self) -> str:
        return self.factory.__name__


#: Every registered loss, in registration order.
LOSSES: dict[str, LossEntry] = {}


def _summary(factory: Callable[..., Any]) -> str:
    doc = inspect.getdoc(factory) or ""
    return doc.strip().split("\n\n")[0].replace("\n", " ")


def register_loss(
    name: str, *, source: str, head: str = "linear"
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare the decorated class (or factory function) as loss ``name``, from ``source``,
    taking ``head``'s logits (:data:`HEAD_FAMILIES`); see the module docstring. Checked at
    import: a new name, a known head family."""

    def register(factory: Callable[..., Any]) -> Callable[..., Any]:
        where = f"register_loss({name!r}) on {factory.__name__}"
        if not isinstance(name, str) or not name or name != name.strip():
            raise ValueError(f"{where}: name must be a non-empty string, got {name!r}")
        if name in LOSSES:
            raise ValueError(f"{where}: the name is taken by {LOSSES[name].class_name}")
        if head not in HEAD_FAMILIES:
            raise ValueError(f"{where}: head must be one of {HEAD_FAMILIES}, got {head!r}")
        params = inspect.signature(factory).parameters
        arguments = tuple(p for p in params if params[p].kind is not inspect.Parameter.VAR_KEYWORD)
        defaults = {
            p: params[p].default
            for p in arguments
            if params[p].default is not inspect.Parameter.empty
        }
        LOSSES[name] = LossEntry(
            name=name,
            factory=factory,
            needs=tuple(fact for fact, arg in FACTS.items() if arg in arguments),
            head=head,
            source=source,
            arguments=arguments,
            defaults=defaults,
            summary=_summary(factory),
        )
        return factory

    return register


def _entry(name: Any) -> LossEntry:
    if name not in LOSSES:
        raise ValueError(f"loss must be one of {', '.join(LOSSES)}; got {name!r}")
    return LOSSES[name]


def check_loss_kw(name: str, loss_kw: Mapping[str, Any], *, field_name: str = "loss_kw") -> None:
    """Raise ``ValueError`` if ``loss_kw`` (a mapping) passes an argument the registered loss
    ``name`` does not take, or a fact of the run (:data:`FACTS`) that the run itself
    supplies."""
    entry = LOSSES[name]
    supplied = [FACTS[f] for f in entry.needs]
    allowed = [a for a in entry.arguments if a not in supplied]
    for key in loss_kw:
        if key in supplied:
            raise ValueError(
                f"{field_name} of loss {name!r} must not set {key!r}: the run supplies it "
                f"(allowed: {allowed})"
            )
        if key not in entry.arguments:
            raise ValueError(
                f"{field_name} of loss {name!r} has no argument {key!r}; allowed: {allowed}"
            )


def make_loss(name: str, **kw: Any) -> Any:
    """Build the registered loss ``name`` with the constructor arguments ``kw``; e.g.
    ``make_loss("ldam", cls_num_list=counts, max_m=0.5, s=30)``.

    Raises:
        ValueError: for a name that is not registered (the message lists the names), or an
            argument the loss does not take.
    """
    entry = _entry(name)
    extra = sorted(set(kw) - set(entry.arguments))
    if extra:
        raise ValueError(f"loss {name!r} has no argument(s) {extra}; allowed: {entry.arguments}")
    return entry.factory(**kw)


def build_loss(
    name: str, loss_kw: Mapping[str, Any], *, class_counts: Sequence[int], num_classes: int
) -> Any:
    """Loss ``name`` with ``loss_kw`` plus the facts of the run it needs (:data:`FACTS`), for
    a spec checked when it was made (the name and arguments are trusted here)."""
    entry = LOSSES[name]
    facts = {"class_counts": list(class_counts), "num_classes": int(num_classes)}
    kw = {**loss_kw, **{FACTS[fact]: facts[fact] for fact in entry.needs}}
    return entry.factory(**kw)

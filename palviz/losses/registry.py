"""The loss registry: every loss declared once, next to its class, with what it needs.

A loss module declares a loss with :func:`register_loss` on its class (or factory)::

    @register_loss("my_loss", needs=("num_classes",), source="Someone et al., 2024, Eq. 1")
    class MyLoss(nn.Module):
        def __init__(self, num_classes: int, t: float = 1.0): ...

and everything else derives from that one declaration: :func:`make_loss` and
:data:`LOSSES` (here), the spec check of :class:`palviz.experiments.runcache.RunSpec` and the
facts a run hands to the constructor (:func:`build_loss`). Which experiments train a loss, and
how (its table methods), is the experiment layer's to say (:mod:`palviz.experiments.methods`).

The facts of a run a loss may need (``needs``), and the constructor argument each arrives in:

====================  ==================  ==========================================
fact                  argument            value
====================  ==================  ==========================================
``"class_counts"``    ``cls_num_list``    training samples per class (after the cut)
``"num_classes"``     ``num_classes``     the dataset's number of classes
====================  ==================  ==========================================

This module imports no other palviz module.
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
    facts of a run it needs (:data:`FACTS`), the ``head`` family it goes with, its ``source``
    (paper and equation); ``defaults`` and ``arguments`` are read from the factory's
    signature, ``summary`` is the first line of its docstring."""

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
    name: str,
    *,
    needs: Sequence[str] = (),
    head: str = "linear",
    source: str,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare the decorated class (or factory function) as loss ``name``; see the module
    docstring. Checked at import: a new name, known facts whose arguments the constructor
    takes, a known head family."""

    def register(factory: Callable[..., Any]) -> Callable[..., Any]:
        where = f"register_loss({name!r}) on {factory.__name__}"
        if not isinstance(name, str) or not name or name != name.strip():
            raise ValueError(f"{where}: name must be a non-empty string, got {name!r}")
        if name in LOSSES:
            raise ValueError(f"{where}: the name is taken by {LOSSES[name].class_name}")
        unknown = [f for f in needs if f not in FACTS]
        if unknown:
            raise ValueError(f"{where}: needs {unknown} not among the facts {tuple(FACTS)}")
        if head not in HEAD_FAMILIES:
            raise ValueError(f"{where}: head must be one of {HEAD_FAMILIES}, got {head!r}")
        params = inspect.signature(factory).parameters
        arguments = tuple(p for p in params if params[p].kind is not inspect.Parameter.VAR_KEYWORD)
        for fact in needs:
            if FACTS[fact] not in params:
                raise ValueError(
                    f"{where}: needs {fact!r}, so the constructor must take {FACTS[fact]!r}"
                )
        defaults = {
            p: params[p].default
            for p in arguments
            if params[p].default is not inspect.Parameter.empty
        }
        LOSSES[name] = LossEntry(
            name=name,
            factory=factory,
            needs=tuple(needs),
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
    """Raise ``ValueError`` if ``loss_kw`` passes an argument loss ``name`` does not take, or
    a fact of the run (:data:`FACTS`) that the run itself supplies."""
    entry = _entry(name)
    if not isinstance(loss_kw, Mapping):
        raise TypeError(f"{field_name} must be a dict of {name!r}'s arguments, got {loss_kw!r}")
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
    """Loss ``name`` with ``loss_kw`` plus the facts of the run it needs (:data:`FACTS`)."""
    entry = _entry(name)
    facts = {"class_counts": list(class_counts), "num_classes": int(num_classes)}
    kw = dict(loss_kw)
    for fact in entry.needs:
        kw.setdefault(FACTS[fact], facts[fact])
    return make_loss(name, **kw)

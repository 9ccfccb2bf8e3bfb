"""The loss registry: every loss declared once, next to its class, with what it needs.

A loss module declares a loss with :func:`register_loss` on its class (or factory)::

    @register_loss(
        "ldam",
        needs=("class_counts",),
        head="cosine",
        source="Cao et al., NeurIPS 2019, Eq. 13",
        methods=[long_tailed("LDAM-DRW", drw=True)],
    )
    class LDAMLoss(nn.Module): ...

and everything else derives from that one declaration: :func:`make_loss` and
:data:`LOSSES` (here), the spec check of :class:`palviz.experiments.runcache.RunSpec`, the facts a
run hands to the constructor (:func:`build_loss`), the table methods of the experiments
(:mod:`palviz.experiments.methods`: ``"LDAM-DRW"`` and its ``"LDAM-DRW+PAL"``), the method tables of
notebooks 06 and 07 and of ``docs/reference.md``. Registering a loss never changes what a
profile trains: profiles name their methods (:mod:`palviz.experiments.recipes`).

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
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FACTS",
    "HEAD_FAMILIES",
    "LOSSES",
    "LossEntry",
    "TableMethod",
    "build_loss",
    "check_loss_kw",
    "long_tailed",
    "make_loss",
    "noisy",
    "register_loss",
]

#: fact of a run -> the constructor argument it is passed as.
FACTS: dict[str, str] = {"class_counts": "cls_num_list", "num_classes": "num_classes"}

#: The head a loss goes with: ``"linear"`` (plain logits; with PAL,
#: ``AnchoredHead(normalize=False)``) or ``"cosine"`` (cosine logits the loss scales by its own
#: s; with PAL, ``AnchoredHead(normalize=True, scale=1)``).
HEAD_FAMILIES = ("linear", "cosine")

#: What a noisy-label method's FNPAL / FNPN scale s is when not given: ``"noise_aware"``
#: (PAL's ``s = 0.25 / (0.05 + eta)``) or a number.
FnpalScale = str | float


@dataclass(frozen=True)
class TableMethod:
    """A method of an experiment's tables, made from one registered loss.

    - ``label``: how tables name it (``"LDAM-DRW"``); a method with PAL adds ``"+PAL"``
      (long-tailed) or ``"+FNPAL"`` / ``"+FNPN"`` (noisy labels).
    - ``task``: ``"long_tailed"`` or ``"noisy"``.
    - ``loss_kw``: the loss's arguments in this method; ``kw_by_family`` adds arguments per
      dataset family (``"mnist"``, ``"cifar10"``, ``"cifar100"``: the APL loss weights).
    - ``drw``: deferred re-weighting from the schedule's DRW epoch (long-tailed only).
    - ``pal``: whether the method is also trained with PAL's anchored prototypes
      (long-tailed: ``+PAL``; noisy: ``+FNPAL``); ``fnpn``: the learnable-normalised
      comparison ``+FNPN`` (noisy only); ``fnpal_scale``: s of ``+FNPAL`` / ``+FNPN``.
    - ``loss``: the registry name, filled in by :func:`register_loss`.
    """

    label: str
    task: str
    loss_kw: Mapping[str, Any] = field(default_factory=dict)
    kw_by_family: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    drw: bool = False
    pal: bool = True
    fnpn: bool = False
    fnpal_scale: FnpalScale = "noise_aware"
    loss: str = ""

    def kwargs(self, family: str | None = None) -> dict:
        """The loss's arguments for a dataset ``family`` (``None``: the family-free ones)."""
        if self.kw_by_family and family is not None:
            if family not in self.kw_by_family:
                raise ValueError(
                    f"method {self.label!r} has arguments for the dataset families "
                    f"{tuple(self.kw_by_family)}, not {family!r}"
                )
            return {**self.loss_kw, **self.kw_by_family[family]}
        return dict(self.loss_kw)


def long_tailed(label: str, *, drw: bool = False, pal: bool = True, **loss_kw: Any) -> TableMethod:
    """A long-tailed table method: ``long_tailed("CE-DRW", drw=True)``; ``pal=False`` if it
    has no ``+PAL`` variant."""
    return TableMethod(label, "long_tailed", dict(loss_kw), drw=drw, pal=pal)


def noisy(
    label: str,
    *,
    fnpal: bool = False,
    fnpn: bool = False,
    fnpal_scale: FnpalScale = "noise_aware",
    by_family: Mapping[str, Mapping[str, Any]] | None = None,
    **loss_kw: Any,
) -> TableMethod:
    """A noisy-label table method: ``noisy("GCE", q=0.7)``; ``fnpal=True`` adds
    ``"<label>+FNPAL"``, ``fnpn=True`` ``"<label>+FNPN"``; ``by_family`` holds arguments per
    dataset family."""
    return TableMethod(
        label,
        "noisy",
        dict(loss_kw),
        kw_by_family={k: dict(v) for k, v in (by_family or {}).items()},
        pal=fnpal,
        fnpn=fnpn,
        fnpal_scale=fnpal_scale,
    )


@dataclass(frozen=True)
class LossEntry:
    """One registered loss: ``name``, the ``factory`` (class or function) that builds it, the
    facts of a run it needs (:data:`FACTS`), the ``head`` family it goes with, its ``source``
    (paper and equation), its table ``methods``; ``defaults`` and ``arguments`` are read from
    the factory's signature, ``summary`` is the first line of its docstring."""

    name: str
    factory: Callable[..., Any]
    needs: tuple[str, ...]
    head: str
    source: str
    methods: tuple[TableMethod, ...]
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
    methods: Sequence[TableMethod] = (),
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare the decorated class (or factory function) as loss ``name``; see the module
    docstring. Checked at import: a new name, known facts whose arguments the constructor
    takes, a known head family, method arguments the constructor accepts."""

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
        taken = {(m.task, m.label) for e in LOSSES.values() for m in e.methods}
        bound = []
        for method in methods:
            if (method.task, method.label) in taken:
                raise ValueError(f"{where}: {method.task} method {method.label!r} is taken")
            for kw in [method.loss_kw, *method.kw_by_family.values()]:
                extra = sorted(set(kw) - set(arguments))
                if extra:
                    raise ValueError(
                        f"{where}: method {method.label!r} passes {extra}, which "
                        f"{factory.__name__} does not take"
                    )
            taken.add((method.task, method.label))
            bound.append(_with_loss(method, name))
        LOSSES[name] = LossEntry(
            name=name,
            factory=factory,
            needs=tuple(needs),
            head=head,
            source=source,
            methods=tuple(bound),
            arguments=arguments,
            defaults=defaults,
            summary=_summary(factory),
        )
        return factory

    return register


def _with_loss(method: TableMethod, loss: str) -> TableMethod:
    from dataclasses import replace

    return replace(method, loss=loss)


def loss_names() -> tuple[str, ...]:
    """The registered names, in registration order."""
    return tuple(LOSSES)


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

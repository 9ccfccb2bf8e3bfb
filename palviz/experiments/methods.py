"""The methods of the experiment tables, declared here as data: :data:`TABLE_METHODS`.

Each row names a registered loss (:mod:`palviz.losses.registry`), its arguments and what the
tables do with it; this module adds the prototype-anchored variants and tells, for a method's
label, which loss, arguments and head it trains:

- long-tailed (notebooks 00, 02, 03, 06, 08): every method ``M`` and, where it allows PAL,
  ``M+PAL``: the loss's head family with fixed simplex prototypes
  (``AnchoredHead(normalize=False)`` for plain logits, ``normalize=True, scale=1`` for cosine
  logits, whose loss scales them by its own s); a method declared with ``etf=True`` (the
  fixed-ETF classifier of Yang et al., NeurIPS 2022, PAL's closest rival) trains on
  ``AnchoredHead(normalize=True, scale=1)`` itself and has no ``+PAL`` variant;
- noisy labels (notebook 07): every method ``M``, ``M+FNPAL`` (``AnchoredHead(normalize=True,
  scale=s)``) and ``M+FNPN`` (``CosineHead(scale=s)``, learnable normalised prototypes) where
  the row asks for them.

A new loss is one module of :mod:`palviz.losses`, its test and one row here. Adding a row never
changes what a profile trains: profiles name their methods (:mod:`palviz.experiments.recipes`).
:func:`method_table` renders either list as the markdown table notebooks 06 and 07 show and
``palviz methods`` prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from palviz.checks import check_choice
from palviz.heads import PROTOTYPE_ORIENTATIONS
from palviz.losses import LOSSES

TASKS = ("long_tailed", "noisy")

#: Orientations of PAL's simplex in feature space (``palviz.heads.simplex_prototypes``): the
#: papers' random rotation is the default and is not named in a spec or a label.
ORIENTATIONS = PROTOTYPE_ORIENTATIONS

#: The variant suffixes of each task, in the order tables list them.
_VARIANTS = {"long_tailed": ("", "+PAL"), "noisy": ("", "+FNPAL", "+FNPN")}

#: What a noisy-label method's FNPAL / FNPN scale s is when not given: ``"noise_aware"``
#: (PAL's ``s = 0.25 / (0.05 + eta)``) or a number.
FnpalScale = str | float


@dataclass(frozen=True)
class TableMethod:
    """A method of an experiment's tables, made from one registered loss.

    - ``label``: how tables name it (``"LDAM-DRW"``); a method with PAL adds ``"+PAL"``
      (long-tailed) or ``"+FNPAL"`` / ``"+FNPN"`` (noisy labels).
    - ``task``: ``"long_tailed"`` or ``"noisy"``; ``loss``: the registry name.
    - ``loss_kw``: the loss's arguments in this method; ``kw_by_family`` adds arguments per
      dataset family (``"mnist"``, ``"cifar10"``, ``"cifar100"``: the APL loss weights).
    - ``drw``: deferred re-weighting from the schedule's DRW epoch (long-tailed only).
    - ``pal``: whether the method is also trained with PAL's anchored prototypes
      (long-tailed: ``+PAL``; noisy: ``+FNPAL``); ``fnpn``: the learnable-normalised
      comparison ``+FNPN`` (noisy only); ``fnpal_scale``: s of ``+FNPAL`` / ``+FNPN``.
    - ``etf``: the method's own head is the fixed simplex ETF on normalised features,
      ``AnchoredHead(normalize=True, scale=1)`` (long-tailed only; then ``pal`` is False).
    - ``mixup_alpha``: the method trains with mixup, ``TrainConfig(mixup_alpha=...)``
      (long-tailed; 0: without).
    """

    label: str
    task: str
    loss: str
    loss_kw: Mapping[str, Any] = field(default_factory=dict)
    kw_by_family: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    drw: bool = False
    pal: bool = True
    fnpn: bool = False
    fnpal_scale: FnpalScale = "noise_aware"
    etf: bool = False
    mixup_alpha: float = 0.0

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


def long_tailed(
    label: str,
    loss: str,
    *,
    drw: bool = False,
    pal: bool = True,
    etf: bool = False,
    mixup_alpha: float = 0.0,
    **loss_kw: Any,
) -> TableMethod:
    """A long-tailed table method: ``long_tailed("CE-DRW", "ce", drw=True)``; ``pal=False``
    if it has no ``+PAL`` variant; ``etf=True`` trains it on the fixed ETF classifier
    (normalised features, ``AnchoredHead(normalize=True, scale=1)``), without ``+PAL``;
    ``mixup_alpha > 0`` trains it with mixup."""
    return TableMethod(
        label,
        "long_tailed",
        loss,
        dict(loss_kw),
        drw=drw,
        pal=pal and not etf,
        etf=etf,
        mixup_alpha=mixup_alpha,
    )


def noisy(
    label: str,
    loss: str,
    *,
    fnpal: bool = False,
    fnpn: bool = False,
    fnpal_scale: FnpalScale = "noise_aware",
    by_family: Mapping[str, Mapping[str, Any]] | None = None,
    **loss_kw: Any,
) -> TableMethod:
    """A noisy-label table method: ``noisy("GCE", "gce", q=0.7)``; ``fnpal=True`` adds
    ``"<label>+FNPAL"``, ``fnpn=True`` ``"<label>+FNPN"``; ``by_family`` holds arguments per
    dataset family."""
    by_family = {k: dict(v) for k, v in (by_family or {}).items()}
    return TableMethod(
        label,
        "noisy",
        loss,
        dict(loss_kw),
        kw_by_family=by_family,
        pal=fnpal,
        fnpn=fnpn,
        fnpal_scale=fnpal_scale,
    )


def _apl(mnist: tuple, cifar10: tuple, cifar100: tuple, **common: Any) -> dict:
    """APL's loss weights ``(alpha, beta)`` per dataset family (its configs), plus ``common``."""
    rows = {"mnist": mnist, "cifar10": cifar10, "cifar100": cifar100}
    return {f: {"alpha": a, "beta": b, **common} for f, (a, b) in rows.items()}


#: Every method of the experiment tables, in table order within each task (each method's
#: variants follow all the methods of its task).
TABLE_METHODS: tuple[TableMethod, ...] = (
    long_tailed("CE", "ce"),
    long_tailed("CE-DRW", "ce", drw=True),
    long_tailed("Focal", "focal", gamma=1.0),
    long_tailed("LDAM-DRW", "ldam", drw=True),
    long_tailed("ELM", "elm"),
    long_tailed("ELM-DRW", "elm", drw=True),
    long_tailed("LMSCE", "lmsce"),
    long_tailed("IB-Focal", "ib_focal", alpha=1000.0, gamma=1.0, start_fraction=0.8),
    long_tailed("LA-CE", "la_ce", tau=1.0),
    long_tailed("EQLv2", "eqlv2", pal=False, gamma=12.0, mu=0.8, alpha=4.0),
    # the official README's CIFAR setting (HMM-LDAM, DRW)
    long_tailed("MM-LDAM-DRW", "mm_ldam", pal=False, drw=True, max_m=1.29, s=26.0, gamma=1.528),
    long_tailed("ETF+DR", "dot_regression", etf=True, batch_balanced=True),
    # the reference's CIFAR recipe: mixup with alpha = 1 (its *_ETF_DR.yaml configs)
    long_tailed("ETF+DR+mixup", "dot_regression", etf=True, mixup_alpha=1.0, batch_balanced=True),
    noisy("CE", "ce", fnpal=True, fnpn=True),
    noisy("Focal", "focal", gamma=0.5, detach_modulating=True),
    noisy("GCE", "gce", q=0.7),
    noisy("SCE", "sce", fnpal=True, by_family=_apl((0.01, 1.0), (0.1, 1.0), (6.0, 0.1))),
    noisy(
        "NCE+RCE",
        "nce+rce",
        fnpal=True,
        fnpal_scale=10.0,
        by_family=_apl((1.0, 10.0), (1.0, 1.0), (10.0, 0.1)),
    ),
    noisy(
        "NFL+RCE",
        "nfl+rce",
        fnpal=True,
        fnpal_scale=10.0,
        by_family=_apl((1.0, 10.0), (1.0, 1.0), (10.0, 0.1), gamma=0.5),
    ),
    noisy("NCE+MAE", "nce+mae", by_family=_apl((1.0, 10.0), (1.0, 1.0), (10.0, 1.0))),
)


def check_table(table: Iterable[TableMethod]) -> None:
    """Raise ``ValueError`` naming the method for a task that is not one of :data:`TASKS`, a
    label taken twice in a task, a loss that is not registered or arguments it does not
    take."""
    taken = set()
    for m in table:
        where = f"{m.task} method {m.label!r}"
        if m.task not in TASKS:
            raise ValueError(f"{where}: task must be one of {TASKS}")
        if (m.task, m.label) in taken:
            raise ValueError(f"{where} is declared twice")
        if not (m.mixup_alpha == 0 or (m.task == "long_tailed" and m.mixup_alpha > 0)):
            raise ValueError(f"{where}: mixup_alpha must be >= 0 (long-tailed methods only)")
        cosine = m.loss in LOSSES and LOSSES[m.loss].head == "cosine"
        if m.etf and (m.task != "long_tailed" or m.pal or not cosine):
            raise ValueError(
                f"{where}: etf=True needs a long-tailed method without +PAL whose loss takes "
                f"cosine logits"
            )
        taken.add((m.task, m.label))
        if m.loss not in LOSSES:
            raise ValueError(f"{where}: loss must be one of {tuple(LOSSES)}, got {m.loss!r}")
        for kw in [m.loss_kw, *m.kw_by_family.values()]:
            extra = sorted(set(kw) - set(LOSSES[m.loss].arguments))
            if extra:
                raise ValueError(
                    f"{where} passes {extra}, which {LOSSES[m.loss].class_name} does not take"
                )


check_table(TABLE_METHODS)


@dataclass(frozen=True)
class Method:
    """A table method: its ``label``, the registered ``base`` method and the ``variant``
    (``""``, ``"+PAL"``, ``"+FNPAL"`` or ``"+FNPN"``)."""

    label: str
    base: TableMethod
    variant: str

    @property
    def task(self) -> str:
        return self.base.task

    @property
    def loss(self) -> str:
        return self.base.loss

    @property
    def drw(self) -> bool:
        return self.base.drw

    @property
    def head_family(self) -> str:
        return LOSSES[self.base.loss].head

    def head(self, scale: float | None = None, orientation: str = "random") -> tuple[str, dict]:
        """``(head, head_kw)`` of the model; ``scale`` is s of ``+FNPAL`` / ``+FNPN``,
        ``orientation`` the simplex's placement (``+PAL`` only; one of :data:`ORIENTATIONS`,
        checked where it enters: a notebook's parameters, the spec it reaches)."""
        if orientation != "random" and self.variant != "+PAL":
            raise ValueError(
                f"orientation {orientation!r} needs a +PAL method (anchored prototypes), "
                f"got {self.label!r}"
            )
        if self.variant == "+PAL":
            kw: dict = {"normalize": self.head_family == "cosine", "scale": 1.0}
            if orientation != "random":
                kw["orientation"] = orientation
            return "anchored", kw
        if self.variant in ("+FNPAL", "+FNPN"):
            if scale is None:
                raise ValueError(f"method {self.label!r} needs its scale s")
            if self.variant == "+FNPAL":
                return "anchored", {"normalize": True, "scale": float(scale)}
            return "cosine", {"scale": float(scale)}
        if self.task == "noisy":
            return "linear", {}
        if self.base.etf:  # the fixed ETF classifier on normalised features
            return "anchored", {"normalize": True, "scale": 1.0}
        return self.head_family, {}

    def describe_head(self) -> str:
        """The head in words, for the method tables."""
        if self.variant == "+PAL":
            normalize = self.head_family == "cosine"
            return f"`AnchoredHead(normalize={normalize}{', scale=1' if normalize else ''})`"
        if self.variant == "+FNPAL":
            return "`AnchoredHead(normalize=True, scale=s)`"
        if self.variant == "+FNPN":
            return "`CosineHead(scale=s)`"
        if self.base.etf:
            return "`AnchoredHead(normalize=True, scale=1)` (fixed ETF)"
        if self.task == "long_tailed" and self.head_family == "cosine":
            return "`CosineHead(scale=1)`"
        return "linear"


def dataset_family(dataset: str) -> str:
    """The family whose loss arguments a dataset uses: MNIST's row serves MNIST-1D and digits,
    which have the same ten digit classes."""
    return "mnist" if dataset in ("mnist", "mnist1d", "digits") else dataset


def _all() -> dict[str, dict[str, Method]]:
    out: dict[str, dict[str, Method]] = {task: {} for task in TASKS}
    for task in TASKS:
        bases = [m for m in TABLE_METHODS if m.task == task]
        for variant in _VARIANTS[task]:
            for base in bases:
                if variant in ("+PAL", "+FNPAL") and not base.pal:
                    continue
                if variant == "+FNPN" and not base.fnpn:
                    continue
                out[task][base.label + variant] = Method(base.label + variant, base, variant)
    return out


def methods_of(task: str) -> dict[str, Method]:
    """Every method of ``task`` (``"long_tailed"`` or ``"noisy"``) by label, in table order:
    the methods of :data:`TABLE_METHODS`, then their variants."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    return _all()[task]


def long_tailed_methods() -> tuple[str, ...]:
    """The long-tailed base methods (without ``+PAL``), in table order."""
    return tuple(label for label, m in methods_of("long_tailed").items() if not m.variant)


def noisy_methods() -> tuple[str, ...]:
    """Every noisy-label method, variants included."""
    return tuple(methods_of("noisy"))


def method(task: str, label: Any, name: str = "method") -> Method:
    """The method ``label`` of ``task``; a label that is not one is refused by
    :func:`palviz.checks.check_choice`, naming ``name`` and listing the labels there are (the
    one place a method's name is checked, wherever it entered)."""
    table = methods_of(task)
    return table[check_choice(name, label, tuple(table))]


def _kwargs_text(m: Method) -> str:
    base = m.base
    parts = [f"{k}={v!r}" for k, v in base.loss_kw.items()]
    if base.mixup_alpha:
        parts.append(f"mixup alpha={base.mixup_alpha:g}")
    if base.kw_by_family:
        fam = "; ".join(
            f"{f}: " + ", ".join(f"{k}={v!r}" for k, v in kw.items())
            for f, kw in base.kw_by_family.items()
        )
        parts.append(fam)
    return ", ".join(parts) or "-"


def method_table(task: str, labels: Any = None) -> str:
    """The markdown table of ``task``'s methods (or of ``labels`` only): label, loss (class and
    registry name), its arguments, the head, DRW (long-tailed) and the source."""
    table = methods_of(task)
    chosen = list(table) if labels is None else [method(task, label).label for label in labels]
    if task == "long_tailed":
        lines = ["| method | loss | arguments | head | DRW | source |", "|---|---|---|---|---|---|"]
    else:
        lines = ["| method | loss | arguments | head | s | source |", "|---|---|---|---|---|---|"]
    for label in chosen:
        m = table[label]
        entry = LOSSES[m.loss]
        cells = [label, f"`{entry.class_name}` (`{m.loss}`)", _kwargs_text(m), m.describe_head()]
        if task == "long_tailed":
            cells.append("yes" if m.drw else "no")
        elif m.variant:
            s = m.base.fnpal_scale
            cells.append("0.25 / (0.05 + eta)" if s == "noise_aware" else f"{s:g}")
        else:
            cells.append("-")
        cells.append(entry.source)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)

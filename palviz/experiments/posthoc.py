r"""Post-hoc re-balancing of trained long-tailed runs, without retraining: the baselines
notebook 06 sets beside the losses.

For a run with a learnable linear head (CE), its checkpoint is read back and evaluated, as the
trainer evaluates, on two splits:

- a **held-out** split (:func:`held_out_split`): training samples of the dataset that the
  run set aside before its long-tailed cut, the same number of every class, the head class
  included (``RunSpec.held_out``), where :math:`\tau` is chosen
  (:func:`palviz.calibration.choose_tau`, mean per-class accuracy);
- the run's **test** split, where the chosen :math:`\tau` is reported, per shot group.

Two re-balancings (:mod:`palviz.calibration`): logit adjustment (Menon et al., ICLR 2021),
:math:`\arg\max_j z_j - \tau \log \pi_j` with the training priors :math:`\pi_j`, and
:math:`\tau`-normalisation (Kang et al., ICLR 2020), :math:`\tilde w_j = w_j/\|w_j\|^\tau`
with the trained bias kept. No run changes: both read what the run learnt. The test split is
never used to choose :math:`\tau`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from palviz import calibration
from palviz import data as pdata
from palviz import metrics as pmetrics
from palviz.diagnosis_posthoc import tau_norm_logits
from palviz.evaluation import evaluate
from palviz.experiments.runcache import RunResult, prepare_data
from palviz.experiments.runspec import RunSpec
from palviz.models import make_model

#: The post-hoc methods and the table label each gets, ``"CE"`` standing for the run's label.
POST_HOC = {
    "logit adjustment": "{label} + logit adjustment (post hoc)",
    "tau-normalisation": "{label} + tau-normalisation (post hoc)",
}


def held_out_split(
    spec: RunSpec, prepared: dict | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The balanced split that ``spec``'s run set aside before its long-tailed cut
    (``RunSpec.held_out`` samples of every class, the head class included; clean labels),
    where post-hoc parameters are chosen. A run that set none aside is a ``ValueError``.
    ``prepared``: :func:`prepare_data`'s output."""
    if spec.held_out == 0:
        raise ValueError(
            f"run {spec.label or spec.key()} set no training sample aside (RunSpec.held_out "
            "= 0), so it has no held-out split; the long-tailed recipes set one "
            "(palviz.experiments.recipes.lt_spec, the profile's held_out)"
        )
    prepared = prepare_data(spec) if prepared is None else prepared
    return prepared["held_out"]


def _load_model(result: RunResult, num_classes: int) -> torch.nn.Module:
    spec = result.spec
    shape = pdata.dataset_info(spec.dataset).shape
    model = make_model(spec.arch, num_classes, spec.head, shape=shape, **spec.head_kw)
    state = torch.load(result.path / "checkpoint.pt", map_location="cpu", weights_only=True)
    model.load_state_dict(state["model"])
    return model.eval()


def _rebalanced(method: str, out: dict, tau: float, model: Any, counts: Any) -> np.ndarray:
    """The logits of an evaluation pass ``out`` re-balanced by ``method`` at ``tau``."""
    if method == "logit adjustment":  # z_j - tau log pi_j
        return calibration.logit_adjust(out["logits"].double().numpy(), counts, tau)
    # w_j / ||w_j||^tau, the bias kept
    return tau_norm_logits(model.head, out["features"].double().numpy(), tau)


def _run_rows(result: RunResult, taus: Sequence[float]) -> list[dict]:
    """:func:`post_hoc_frame`'s rows of one run."""
    spec = result.spec
    prepared = prepare_data(spec)
    k, counts = prepared["info"].num_classes, prepared["train_counts"]
    model = _load_model(result, k)
    norm = {"mean": spec.train.mean, "std": spec.train.std, "device": "cpu"}
    val = evaluate(model, *held_out_split(spec, prepared), **norm)
    test = evaluate(model, *prepared["test"], **norm)
    rows = []
    for method in POST_HOC:
        tau, _ = calibration.choose_tau(
            lambda t, m=method: _rebalanced(m, val, t, model, counts), val["targets"], taus
        )
        z, y = _rebalanced(method, test, tau, model, counts), test["targets"].numpy()
        groups = {"all": float(np.mean(z.argmax(1) == y))}
        groups |= pmetrics.shot_group_accuracy(pmetrics.per_class_accuracy(z, y, k), counts)
        for group, acc in groups.items():
            rows.append(
                {
                    "dataset": spec.dataset,
                    "imbalance_ratio": spec.imbalance_ratio,
                    "seed": spec.seed,
                    "label": POST_HOC[method].format(label=result.label),
                    "tau": tau,
                    "held_out": len(val["targets"]),
                    "group": group,
                    "accuracy": acc,
                }
            )
    return rows


def post_hoc_frame(
    results: Sequence[RunResult], taus: Sequence[float] = calibration.TAU_GRID
) -> pd.DataFrame:
    """Logit adjustment and tau-normalisation of every run of ``results`` with a linear head,
    tau chosen on its :func:`held_out_split`: one row per run, method and group (``"all"``,
    then the shot groups of the run's training counts) with ``dataset``, ``imbalance_ratio``,
    ``seed``, ``label`` (as :data:`POST_HOC` names it), ``tau``, ``held_out`` (samples) and
    ``accuracy`` on the test split. A run without its ``checkpoint.pt`` (packed without
    checkpoints) cannot be re-read: it is listed in ``frame.attrs["without_checkpoint"]``."""
    rows, without = [], []
    for result in results:
        if result.spec.head != "linear":  # a cosine or anchored head: tau-norm changes nothing
            continue
        if (result.path / "checkpoint.pt").exists():
            rows += _run_rows(result, taus)
        else:
            without.append(f"{result.label} (seed {result.spec.seed}, {result.path.name})")
    frame = pd.DataFrame(rows)
    frame.attrs["without_checkpoint"] = without
    return frame


def _cell(values: pd.Series) -> str:
    """Mean (and, with several seeds, std) of accuracies, in %; ``-`` for an empty group."""
    values = values.dropna()
    if values.empty:
        return "-"
    mean = 100 * values.mean()
    return f"{mean:.1f}" if len(values) < 2 else f"{mean:.1f} ± {100 * values.std():.1f}"


def post_hoc_table_markdown(results: Sequence[RunResult], frame: pd.DataFrame) -> str:
    """Per dataset and imbalance ratio, a markdown table of test accuracy (%, last epoch; mean
    ± std over seeds): every method of ``results`` (the losses) and the post-hoc rows of
    ``frame`` (:func:`post_hoc_frame`, with the median chosen tau), by shot group."""
    from palviz.experiments.tables import results_frame

    runs = results_frame(results)
    blocks = []
    for (dataset, rho), part in runs.groupby(["dataset", "imbalance_ratio"], sort=False):
        lines = [
            f"**{dataset}, rho = {rho:g}** (test accuracy %, last epoch)",
            "",
            "| method | tau | overall | many | medium | few |",
            "|---|---|---|---|---|---|",
        ]
        for label, runs_of in part.groupby("label", sort=False):
            groups = [runs_of["last_acc"]] + [runs_of[g] for g in pmetrics.SHOT_GROUPS]
            lines.append(f"| {label} | - | " + " | ".join(_cell(v) for v in groups) + " |")
        here = (
            frame
            if frame.empty
            else frame[(frame["dataset"] == dataset) & (frame["imbalance_ratio"] == rho)]
        )
        for label, rows in here.groupby("label", sort=False) if not here.empty else ():
            groups = ("all", *pmetrics.SHOT_GROUPS)  # a group the run lacks: empty, "-"
            cells = [_cell(rows.loc[rows["group"] == g, "accuracy"]) for g in groups]
            tau = rows["tau"].median()
            lines.append(f"| {label} | {tau:g} | " + " | ".join(cells) + " |")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"

"""The experiment layer: everything that runs the notebooks' experiments, under one name.

A notebook imports this package once (``from palviz import experiments as ex``) beside the
subject modules it teaches. Its modules:

- :mod:`~palviz.experiments.runcache` a run as plain data (:class:`RunSpec`, checked when
  made), the run cache, :func:`run` (train one spec in this process, or read it);
  :mod:`~palviz.experiments.cachedir` its folders' upkeep (broken entries, list, clear, check)
- :mod:`~palviz.experiments.locks` a lock per run key, shared by every worker of one ``runs/``
- :mod:`~palviz.experiments.cluster` :func:`run_many` / :func:`run_grouped`: many runs through
  local process pools (GPU slots) or submitit (Slurm job arrays);
  :mod:`~palviz.experiments.workers` what a local worker does first (ignore Ctrl-C, die with
  its parent, take a GPU)
- :mod:`~palviz.experiments.methods` the methods of the experiment tables
- :mod:`~palviz.experiments.recipes` named methods, what each profile trains, spec grids, the
  papers' facts; the profiles as data in :mod:`~palviz.experiments.profiles` (each dataset's
  network is its registration's, :func:`palviz.data.register_dataset`), the departures from the reference code in
  :mod:`~palviz.experiments.departures`
- :mod:`~palviz.experiments.published` the papers' and anchors' published numbers, as records
  with their sources
- :mod:`~palviz.experiments.budget` training budgets in SGD steps beside the papers'
- :mod:`~palviz.experiments.plan` what each notebook trains, declared once (:func:`experiment`)
- :mod:`~palviz.experiments.params` each notebook's parameters, checked once
  (:func:`check_parameters`; the schemas in :mod:`~palviz.experiments.schemas`)
- :mod:`~palviz.experiments.tables` :func:`results_frame` and the tables made from it;
  :mod:`~palviz.experiments.posthoc` post-hoc re-balancing of cached runs (logit adjustment,
  tau-normalisation, tau chosen on held-out training samples)
- :mod:`~palviz.experiments.claims` each paper claim, quoted, and the runs it reads;
  :mod:`~palviz.experiments.claims_table` the claims read against paired seeds, as a table
- :mod:`~palviz.experiments.pack` cached runs as one checked archive;
  :mod:`~palviz.experiments.unpack` its format, and reading one back
- :mod:`~palviz.experiments.report` the result files committed in ``docs/results/``, and a
  fresh run compared with them run by run
"""

from __future__ import annotations

import importlib
from typing import Any

#: Where each public name of the layer lives. A name's module is imported the first time the
#: name is read (PEP 562), so that importing the package, or a light module under it (the
#: parameter checks a notebook runs first, what a worker process does first), imports no torch.
HOMES: dict[str, tuple[str, ...]] = {
    "budget": (
        "PAPER_LR_WD_INTEGRAL",
        "PAPER_STEPS",
        "paper_steps_for",
        "plot_budget",
        "steps_per_run",
        "training_size",
        "weight_decay_integral",
    ),
    "cachedir": (
        "clear_runs",
        "list_runs",
    ),
    "claims_table": (
        "claims_markdown",
        "claims_summary",
        "evaluate_claims",
    ),
    "claims": (
        "claim_runs",
        "long_tailed_claims",
        "noisy_claims",
        "write_claims",
    ),
    "cluster": (
        "run_grouped",
        "run_many",
    ),
    "methods": (
        "ORIENTATIONS",
        "method_table",
    ),
    "params": ("check_parameters",),
    "plan": (
        "experiment",
        "experiment_specs",
        "train_overrides",
    ),
    "posthoc": (
        "held_out_split",
        "post_hoc_frame",
        "post_hoc_table_markdown",
    ),
    "published": (
        "PUBLISHED",
        "PUBLISHED_LT_ACCURACY",
        "SOURCES",
        "Published",
        "Source",
        "published_for",
        "published_lt_accuracy",
        "published_text",
        "sources_markdown",
    ),
    "recipes": (
        "DATASET_NAMES",
        "LT_METHODS",
        "NOISE_METHODS",
        "expand_schedule",
        "long_tailed_setup",
        "lt_grid",
        "lt_label_spec",
        "lt_method",
        "lt_spec",
        "noise_method",
        "noisy_grid",
        "noisy_setup",
        "noisy_spec",
        "scale_sweep",
        "select_noise_rates",
    ),
    "runcache": (
        "CACHE_SCHEMA",
        "RunResult",
        "RunSpec",
        "build_loss",
        "cpu_seconds",
        "initial_prototypes",
        "is_cached",
        "prepare_data",
        "recorded_split_counts",
        "run",
    ),
    "tables": (
        "PER_CLASS_COLUMNS",
        "class_mean_features",
        "feature_geometry",
        "format_noisy_table",
        "history_series",
        "lt_caption",
        "lt_table",
        "lt_table_markdown",
        "noisy_accuracy_table",
        "per_class_frame",
        "published_lt_markdown",
        "published_noisy_markdown",
        "results_frame",
        "select_runs",
        "style_lt_tables",
        "style_noisy_table",
        "transition_rule_error",
    ),
}
_MODULE_OF = {name: module for module, names in HOMES.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # read once: later reads find it here
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

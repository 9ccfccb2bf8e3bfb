"""The experiment layer: everything that runs the notebooks' experiments, under one name.

A notebook imports this package once (``from palviz import experiments as ex``) beside the
subject modules it teaches, after checking its parameters with
:func:`palviz.parameters.check_parameters` (outside this package, which imports torch, so
that a bad parameter stops a notebook before torch loads). Its modules:

- :mod:`~palviz.experiments.runspec` a run as plain data (:class:`RunSpec`, checked when
  made); :mod:`~palviz.experiments.runcache` the run cache, :func:`run` (train one spec in
  this process, or read it);
  :mod:`~palviz.experiments.cachedir` its folders' upkeep (broken entries, list, clear, check)
- :mod:`~palviz.experiments.locks` a lock per run key, shared by every worker of one ``runs/``
- :mod:`~palviz.experiments.cluster` :func:`run_many` / :func:`run_grouped`: many runs through
  local process pools (GPU slots) or submitit (Slurm job arrays);
  :mod:`~palviz.experiments.workers` what a local worker does first (ignore Ctrl-C, die with
  its parent, take a GPU)
- :mod:`~palviz.experiments.methods` the methods of the experiment tables
- :mod:`~palviz.experiments.recipes` named methods, what each profile trains, spec grids, the
  papers' facts; the profiles as data in :mod:`~palviz.experiments.profiles` (each dataset's
  network is its registration's, :func:`palviz.data.register_dataset`), the departures from
  the reference code in :mod:`~palviz.experiments.departures`
- :mod:`~palviz.experiments.published` the papers' and anchors' published numbers, as records
  with their sources
- :mod:`~palviz.experiments.budget` training budgets in SGD steps beside the papers'
- :mod:`~palviz.experiments.plan` what each notebook trains, declared once (:func:`experiment`)
- :mod:`~palviz.experiments.tables` :func:`results_frame` and the tables made from it;
  :mod:`~palviz.experiments.inspection` one run's history, feature geometry and noise rule;
  :mod:`~palviz.experiments.posthoc` post-hoc re-balancing of cached runs (logit adjustment,
  tau-normalisation, tau chosen on held-out training samples)
- :mod:`~palviz.experiments.claims` each paper claim, quoted, and the runs it reads;
  :mod:`~palviz.experiments.claims_table` the claims read against paired seeds, as a table
- :mod:`~palviz.experiments.pack` cached runs as one .tar.gz, and unpacking one into the
  cache
- :mod:`~palviz.experiments.report` the result files committed in ``docs/results/``, and a
  fresh run compared with them run by run
"""

from __future__ import annotations

from palviz.experiments.budget import (
    PAPER_LR_WD_INTEGRAL,
    PAPER_STEPS,
    budget_frame,
    paper_steps_for,
    steps_per_run,
    training_size,
    weight_decay_integral,
)
from palviz.experiments.cachedir import clear_runs, list_runs
from palviz.experiments.claims import claim_runs, long_tailed_claims, noisy_claims, write_claims
from palviz.experiments.claims_table import claims_markdown, claims_summary, evaluate_claims
from palviz.experiments.cluster import run_grouped, run_many
from palviz.experiments.departures import DEPARTURES
from palviz.experiments.inspection import feature_geometry, history_series, transition_rule_error
from palviz.experiments.methods import method_table
from palviz.experiments.plan import experiment, experiment_specs, train_overrides
from palviz.experiments.posthoc import held_out_split, post_hoc_frame, post_hoc_table_markdown
from palviz.experiments.published import PUBLISHED, published_lt_accuracy, sources_markdown
from palviz.experiments.recipes import (
    DATASET_NAMES,
    LT_METHODS,
    NOISE_METHODS,
    long_tailed_setup,
    lt_grid,
    lt_method,
    lt_spec,
    noise_method,
    noisy_grid,
    noisy_setup,
    noisy_spec,
    scale_sweep,
    select_noise_kinds,
    select_noise_rates,
)
from palviz.experiments.runcache import (
    RunResult,
    cpu_seconds,
    initial_prototypes,
    is_cached,
    prepare_data,
    recorded_split_counts,
    run,
)
from palviz.experiments.runspec import CACHE_SCHEMA, RunSpec
from palviz.experiments.tables import (
    format_noisy_table,
    lt_caption,
    lt_table,
    lt_table_markdown,
    noisy_accuracy_table,
    per_class_frame,
    published_lt_markdown,
    published_noisy_markdown,
    results_frame,
    select_runs,
    style_lt_tables,
    style_noisy_table,
)

__all__ = [
    "CACHE_SCHEMA",
    "DATASET_NAMES",
    "DEPARTURES",
    "LT_METHODS",
    "NOISE_METHODS",
    "PAPER_LR_WD_INTEGRAL",
    "PAPER_STEPS",
    "PUBLISHED",
    "RunResult",
    "RunSpec",
    "budget_frame",
    "claim_runs",
    "claims_markdown",
    "claims_summary",
    "clear_runs",
    "cpu_seconds",
    "evaluate_claims",
    "experiment",
    "experiment_specs",
    "feature_geometry",
    "format_noisy_table",
    "held_out_split",
    "history_series",
    "initial_prototypes",
    "is_cached",
    "list_runs",
    "long_tailed_claims",
    "long_tailed_setup",
    "lt_caption",
    "lt_grid",
    "lt_method",
    "lt_spec",
    "lt_table",
    "lt_table_markdown",
    "method_table",
    "noise_method",
    "noisy_accuracy_table",
    "noisy_claims",
    "noisy_grid",
    "noisy_setup",
    "noisy_spec",
    "paper_steps_for",
    "per_class_frame",
    "post_hoc_frame",
    "post_hoc_table_markdown",
    "prepare_data",
    "published_lt_accuracy",
    "published_lt_markdown",
    "published_noisy_markdown",
    "recorded_split_counts",
    "results_frame",
    "run",
    "run_grouped",
    "run_many",
    "scale_sweep",
    "select_noise_kinds",
    "select_noise_rates",
    "select_runs",
    "sources_markdown",
    "steps_per_run",
    "style_lt_tables",
    "style_noisy_table",
    "train_overrides",
    "training_size",
    "transition_rule_error",
    "weight_decay_integral",
    "write_claims",
]

"""palviz: helpers for notebooks on prototype-anchored learning (PAL) and the
enlarged large margin loss (ELM).

Modules, one concern each. Imports point one way, with no cycle (lazy imports inside functions
included; ``tests/test_imports.py`` checks it from the source, and that no module uses another's
private names):

- cli -> experiments -> cluster -> runcache, workers; experiments -> tables -> recipes ->
  runcache; plan -> recipes, methods, runcache; budget -> runcache;
- runcache -> train, models, losses, data, metrics, locks, files (and viz for a run's UMAP);
  train -> data, losses, metrics; models -> heads -> metrics; data -> datasets;
- viz -> theory_plots, experiment_plots -> style; theory_plots -> theory -> layer_peeled,
  losses; tables and course -> viz;
- locks -> files; checks, files, threads, workers, style, plots_geometry and losses.registry
  import no palviz module.

- :mod:`palviz.losses`   every loss of the two papers, ``make_loss(name, **kw)``
- :mod:`palviz.heads`    linear, cosine (FNPN) and anchored (PAL / FNPAL) heads,
  ``simplex_prototypes``
- :mod:`palviz.models`   ResNet-32/34 for CIFAR, the CNNs of the noise tables, CPU-sized nets
- :mod:`palviz.data`     long-tailed subsets, label noise, a device-resident batch loader
- :mod:`palviz.datasets` loading the datasets (re-exported by ``palviz.data``)
- :mod:`palviz.train`    one training loop, ``fit``, driven by ``TrainConfig``
- :mod:`palviz.metrics`  per-class accuracy, shot groups, prototype angles, norms, margins
- :mod:`palviz.theory`   Lipschitz constants, margins, what ReLU features can reach
- :mod:`palviz.layer_peeled` the layer-peeled model (re-exported by ``palviz.theory``)
- :mod:`palviz.style`    the figure style and class colours the figure modules share
- :mod:`palviz.viz`      ``savefig``, ``setup_notebook``, ``sliders``, UMAP; every plot of the
  two plot modules, importable from here
- :mod:`palviz.theory_plots` the figures of the theory notebooks (01-05)
- :mod:`palviz.plots_geometry` what a ReLU feature can reach, per orientation (notebook 01)
- :mod:`palviz.experiment_plots` the experiment figures of 06-08 (seaborn on the results frame)
- :mod:`palviz.course`   the executed notebooks as offline pages and the course's front page
- :mod:`palviz.syllabus` the course's syllabus and the measured run times of the lessons
- :mod:`palviz.exercises` the lessons' self-checking exercises (``ex01`` ... ``ex08``)
- :mod:`palviz.report`   the README's measured blocks, written from ``docs/results/``
- :mod:`palviz.pack`     ``palviz runs pack`` / ``unpack``: cached runs as one checked archive
- :mod:`palviz.runcache` a run as plain data (``RunSpec``, checked when made), the run cache,
  ``run`` (train one spec in this process, or read it)
- :mod:`palviz.cluster`  ``run_many`` / ``run_grouped``: many runs through local process pools
  (GPU slots), submitit or Dask
- :mod:`palviz.locks`    a lock per run key, shared by every worker of one ``runs/`` folder
- :mod:`palviz.workers`  what a local worker process does first: ignore Ctrl-C, die with its
  parent, take a GPU (imports no torch)
- :mod:`palviz.methods`  the methods of the experiment tables, derived from the loss registry
- :mod:`palviz.recipes`  named methods, what each profile trains, spec grids
- :mod:`palviz.plan`     what each notebook trains, declared once (``experiment``)
- :mod:`palviz.tables`   ``results_frame`` (one pandas row per run) and the tables made from it
- :mod:`palviz.experiments` the public names of runcache, cluster, recipes and tables, in one
  place
- :mod:`palviz.files`    where data, runs and figures live; atomic writes
- :mod:`palviz.checks`   argument checks with one message form (``invalid``, ``check_*``)
- :mod:`palviz.threads`  one torch thread while a block runs
- :mod:`palviz.claims`   each paper claim read against a paired t interval of our runs;
  ``claims.csv``
- :mod:`palviz.budget`   training budgets in SGD steps, the papers' budgets, the budget figure
- :mod:`palviz.cli`      the ``palviz`` command (``python -m palviz``)
"""

__version__ = "0.1.0"

"""palviz: helpers for notebooks on prototype-anchored learning (PAL) and the
enlarged large margin loss (ELM).

Modules, one concern each (arrows point one way: experiments -> tables -> recipes ->
runcache -> train -> models, heads, losses, data, metrics; viz, its plots and theory depend
on nothing above them):

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
- :mod:`palviz.viz`      one figure style, ``savefig``, class colours, ``sliders``, UMAP
- :mod:`palviz.theory_plots` the figures of the theory notebooks (01-05)
- :mod:`palviz.plots_geometry` what a ReLU feature can reach, per orientation (notebook 01)
- :mod:`palviz.experiment_plots` the experiment figures of 06-08 (seaborn on the results frame)
- :mod:`palviz.course`   the executed notebooks as offline pages and the course's front page
- :mod:`palviz.runcache` a run as plain data (``RunSpec``), the run cache, ``run_many``
- :mod:`palviz.recipes`  named methods, what each profile trains, spec grids
- :mod:`palviz.tables`   ``results_frame`` (one pandas row per run) and the tables made from it
- :mod:`palviz.experiments` the public names of the three above, in one place
- :mod:`palviz.files`    where data, runs and figures live; atomic writes
- :mod:`palviz.claims`   each paper claim read against a paired t interval of our runs;
  ``claims.csv``
- :mod:`palviz.budget`   training budgets in SGD steps, the papers' budgets, the budget figure
"""

__version__ = "0.1.0"

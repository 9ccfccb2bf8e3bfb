"""palviz: helpers for notebooks on prototype-anchored learning (PAL) and the
enlarged large margin loss (ELM).

Modules, one concern each (arrows point one way: experiments -> tables -> recipes ->
runcache -> train -> models, heads, losses, data, metrics; viz, its plots and theory depend
on nothing above them):

- :mod:`palviz.losses`   every loss of the two papers, ``make_loss(name, **kw)``
- :mod:`palviz.heads`    linear, cosine (FNPN) and anchored (PAL / FNPAL) heads,
  ``simplex_prototypes``
- :mod:`palviz.models`   ResNet-32/34 for CIFAR, the CNNs of the noise tables, CPU-sized nets
- :mod:`palviz.data`     datasets, long-tailed subsets, label noise, a device-resident batch loader
- :mod:`palviz.train`    one training loop, ``fit``, driven by ``TrainConfig``
- :mod:`palviz.metrics`  per-class accuracy, shot groups, prototype angles, norms, margins
- :mod:`palviz.theory`   layer-peeled model, Lipschitz constants, margins
- :mod:`palviz.viz`      one figure style, ``savefig``, class colours, ``sliders``, UMAP
- :mod:`palviz.theory_plots` the figures of the theory notebooks (01-05)
- :mod:`palviz.experiment_plots` the experiment figures of 06-08 (seaborn on the results frame)
- :mod:`palviz.runcache` a run as plain data (``RunSpec``), the run cache, ``run_many``
- :mod:`palviz.recipes`  named methods, what each profile trains, spec grids
- :mod:`palviz.tables`   ``results_frame`` (one pandas row per run) and the tables made from it
- :mod:`palviz.experiments` the public names of the three above, in one place
- :mod:`palviz.files`    where data, runs and figures live; atomic writes
"""

__version__ = "0.1.0"

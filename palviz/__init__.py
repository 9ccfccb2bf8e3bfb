"""palviz: helpers for notebooks on prototype-anchored learning (PAL) and the
enlarged large margin loss (ELM).

Two layers. The **subject** is what the notebooks teach; it imports nothing from the layers
above it (``tests/test_imports.py`` checks it from the source):

- :mod:`palviz.losses`   every loss of the two papers, one module per family, ``make_loss``
- :mod:`palviz.heads`    linear, cosine (FNPN) and anchored (PAL / FNPAL) heads,
  ``simplex_prototypes`` (:mod:`palviz.prototype_optimizer`: PAL's optimised simplex)
- :mod:`palviz.models`   ResNet-32/34 for CIFAR, the CNNs of the noise tables, CPU-sized nets
- :mod:`palviz.data`     the datasets, long-tailed subsets, label noise, a device-resident
  batch loader
- :mod:`palviz.train`    one training loop, ``fit``, driven by ``TrainConfig``
  (:mod:`palviz.train_config`);
  :mod:`palviz.evaluation` the evaluation pass, the device it runs on
- :mod:`palviz.metrics`  per-class accuracy, shot groups, prototype angles, norms, margins
- :mod:`palviz.collapse`, :mod:`palviz.calibration`, :mod:`palviz.diagnosis`  neural collapse
  (NC1-NC4), ECE and post-hoc re-balancing, and ``diagnose``, which reads any classifier
  (its pass, measures and re-balancing in ``diagnosis_pass``, ``_stats``, ``_posthoc``)
- :mod:`palviz.theory`   Lipschitz constants, margins, what ReLU features can reach, the
  layer-peeled model
- :mod:`palviz.stats`    paired differences over seeds, Student-t intervals, paired t and
  sign-flip p-values, Holm's correction, the verdicts
- :mod:`palviz.plots`    ``savefig``, ``setup_notebook``, sliders, UMAP and every figure
- :mod:`palviz.files`, :mod:`palviz.checks`, :mod:`palviz.threads`, :mod:`palviz.cpu`  at the
  bottom: where data, runs and figures live, the profile names, atomic writes; argument checks
  with one message form; one torch thread while a block runs; the CPU kernels pinned to AVX2,
  so that a run gives the same numbers on every x86-64 machine

The **experiment layer**, :mod:`palviz.experiments` (and :mod:`palviz.parameters`, each
notebook's parameters checked before torch loads), runs the notebooks' experiments: run specs
and the run cache, the table methods, the profiles and the papers' facts, what each notebook
trains, claims, tables, executors (local pool, submitit) and pack. Above both sit
:mod:`palviz.exercises` (the lessons' self-checking exercises), :mod:`palviz.cli` (the
``palviz`` command) and the course book (:mod:`palviz.book`, :mod:`palviz.book_search`,
:mod:`palviz.book_syllabus`, :mod:`palviz.timings`).
"""

__version__ = "0.1.0"

# Before torch loads: its CPU kernels at AVX2 on every x86-64 machine (palviz.cpu).
from palviz.cpu import pin_environment  # noqa: E402

pin_environment()

from palviz.diagnosis import diagnose  # noqa: E402, F401

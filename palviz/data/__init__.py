"""Datasets, long-tailed subsets, synthetic label noise and a device-resident batch iterator.

Data policy
-----------
Two kinds of data, kept apart on purpose:

* **Offline, embedded** (``"mnist1d"``, ``"digits"``): produced by an installed package, so
  tests and the ``quick`` profile never touch the network. MNIST-1D is generated
  procedurally by ``mnist1d.data.make_dataset`` and cached as ``.npz`` under ``data/``;
  scikit-learn's digits ship with scikit-learn and are split here.
* **Real, downloaded** (``"mnist"``, ``"cifar10"``, ``"cifar100"``): fetched by torchvision
  into ``data/`` only when asked (``download=True`` or ``palviz download NAME``). torchvision
  downloads and verifies the MD5 checksums; palviz then reads the files in their on-disk
  format itself (CIFAR pickles, MNIST idx files), so tests can write small stand-in files in
  the same format. Missing files without permission to download are a
  :class:`FileNotFoundError` that names the command to fetch them; a file that is there but
  damaged (truncated, of the wrong format, or a CIFAR pickle holding anything but a CIFAR
  batch, which is refused unrun) is a :class:`DatasetFileError` that names the file, what is
  wrong and how to fetch it again. A damaged MNIST-1D cache is generated again, with a warning.

Every dataset is declared once, in the registry (:mod:`palviz.data.registry`:
:func:`register_dataset`, :func:`dataset_info`, :data:`DATASETS`), with the network each
table trains on it, the built-ins by
:mod:`palviz.data.datasets` (``load_dataset``; the CIFAR and MNIST file formats are read by
:mod:`palviz.data.formats`) and a dataset of one's own by a module that calls
:func:`register_dataset` (named by ``$PALVIZ_DATASET_MODULES`` or a notebook's
``DATASET_MODULES``). The batches live in :mod:`palviz.data.batches`, long-tailed subsets in
:mod:`palviz.data.longtail` and label noise in :mod:`palviz.data.noise`; every public name of
these modules (each one's ``__all__``) is re-exported here, so
``from palviz.data import load_dataset`` keeps working.

Images are returned as ``uint8`` tensors ``N x C x H x W``; normalisation and augmentation
belong to the batch pipeline (:class:`BatchIterator`, :func:`normalize_images`). Vectors are
``float32`` ``N x D``; labels are ``int64``.

Long-tailed subsets follow the LDAM-DRW convention (docs/reference.md 1) and label noise follows
docs/reference.md 4: exactly :func:`flip_count` ``(rate, n_class)`` flipped labels per class (the
nearest integer to ``rate * n_class``), so the realised rate is the nominal one.
"""

from __future__ import annotations

from palviz.data import batches, datasets, longtail, noise, registry

# Every public name of the modules (their __all__), importable from palviz.data.
_MODULES = (registry, datasets, batches, longtail, noise)
for _module in _MODULES:
    globals().update({name: getattr(_module, name) for name in _module.__all__})

__all__ = [name for _module in _MODULES for name in _module.__all__]
del _module

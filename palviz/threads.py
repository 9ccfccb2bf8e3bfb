"""One thread for torch while a block runs: :func:`single_thread`.

The small matrix loops of :mod:`palviz.heads` and :mod:`palviz.theory` (``k x d`` prototypes,
layer-peeled solutions) gain nothing from more threads: they only add synchronisation, and on
a busy machine oversubscription makes such a loop many times slower.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

__all__ = ["single_thread"]


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """Run the ``with`` block with ``torch.set_num_threads(1)``; restore the count after."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)

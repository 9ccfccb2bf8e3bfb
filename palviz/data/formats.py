"""The on-disk formats of the downloaded datasets, read and checked: CIFAR's python pickles
(https://www.cs.toronto.edu/~kriz/cifar.html) and MNIST's idx files
(http://yann.lecun.com/exdb/mnist/), plain or gzipped.

Damaged and hostile files: every reader checks what it reads and raises :class:`Damaged`,
saying what is wrong, for a file that is truncated or is not what its name
says (:func:`palviz.data.load_dataset` makes a :class:`~palviz.data.DatasetFileError` of it that
also says how to fetch the file again). CIFAR's pickles are read by an unpickler that admits
only what a CIFAR batch holds (dicts, lists, strings, bytes, numbers and numpy arrays), so a
planted pickle is refused, not run.
"""

from __future__ import annotations

import gzip
import math
import pickle
import zlib
from pathlib import Path

import numpy as np

__all__ = ["Damaged", "read_cifar_batch", "read_idx"]


class Damaged(Exception):
    """A dataset file that cannot be used: what is wrong with it (``problem``) and the file
    (``path``; ``None`` until the caller that knows it sets it)."""

    def __init__(self, problem: str, path: Path | None = None):
        self.problem = problem
        self.path = path
        super().__init__(problem)


class _Refused(Exception):
    """Raised while unpickling: a pickle asks for something a CIFAR batch never holds."""


# ---- CIFAR: the python pickles -----------------------------------------------------------


def _latin1_encode(text: object, encoding: object = "latin1") -> bytes:
    """``_codecs.encode`` as Python 3 pickles non-empty ``bytes`` under protocols 0-2, for
    that use only (a ``str`` and ``"latin1"``)."""
    if not isinstance(text, str) or encoding != "latin1":
        raise _Refused(
            "not a CIFAR batch: its pickle calls _codecs.encode other than to make bytes "
            "(refused, not run)"
        )
    return text.encode("latin1")


# Every global a pickled CIFAR batch may name, and what it resolves to. The official files
# (pickled by Python 2 and numpy 1.x) name numpy.core.multiarray._reconstruct, numpy.ndarray
# and numpy.dtype; numpy 2 pickles the same function under numpy._core, and protocol 5 pickles
# an array with numpy's _frombuffer instead. Python 3 pickles bytes under protocols 0-2 with
# _codecs.encode (latin-1) and the empty bytes with bytes(). Taking the functions from numpy's
# own pickling makes the table right for every numpy version palviz supports.
_NDARRAY_RECONSTRUCT = np.zeros(0).__reduce__()[0]
_NDARRAY_FROMBUFFER = np.zeros(1).__reduce_ex__(5)[0]
_CIFAR_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"): _NDARRAY_RECONSTRUCT,
    ("numpy._core.multiarray", "_reconstruct"): _NDARRAY_RECONSTRUCT,
    ("numpy.core.numeric", "_frombuffer"): _NDARRAY_FROMBUFFER,
    ("numpy._core.numeric", "_frombuffer"): _NDARRAY_FROMBUFFER,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("_codecs", "encode"): _latin1_encode,
    ("__builtin__", "bytes"): bytes,
    ("builtins", "bytes"): bytes,
}


class _CifarUnpickler(pickle.Unpickler):
    """Unpickles only what a CIFAR batch holds: dicts, lists, tuples, strings, bytes, numbers
    and numpy arrays. Any other global a pickle names (a function to call, a class to build)
    is refused before it is looked up, so nothing of a planted file is run."""

    def find_class(self, module: str, name: str) -> object:
        try:
            return _CIFAR_GLOBALS[(module, name)]
        except KeyError:
            raise _Refused(
                f"not a CIFAR batch: its pickle asks for {module}.{name}, which a CIFAR batch "
                "never holds (refused, not run)"
            ) from None


def _unpickle(path: Path) -> dict:
    """Read one CIFAR batch with :class:`_CifarUnpickler`; the keys come back as ``str``."""
    if path.stat().st_size == 0:
        raise Damaged("it is empty")
    with open(path, "rb") as handle:
        try:
            # latin1: the official files were pickled by Python 2, whose str (the keys, the
            # arrays' raw data) must come back byte for byte.
            batch = _CifarUnpickler(handle, encoding="latin1").load()
        except _Refused as err:
            raise Damaged(str(err)) from None
        except Exception as err:  # a damaged pickle fails in many ways (EOF, bad opcode, ...)
            what = (
                "it is truncated"
                if isinstance(err, EOFError) or "truncated" in str(err)
                else "it is not a readable pickle"
            )
            raise Damaged(f"{what} ({type(err).__name__}: {err})") from err
    if not isinstance(batch, dict):
        raise Damaged(f"not a CIFAR batch: it holds a {type(batch).__name__}, not a dict")
    # The official files load with str keys under latin1; files written by Python 3 keep bytes.
    return {(k.decode("latin1") if isinstance(k, bytes) else k): v for k, v in batch.items()}


def read_cifar_batch(
    path: Path, label_key: str, shape: tuple[int, ...], num_classes: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(data N x *shape uint8, labels N int64)`` of the CIFAR batch at ``path``, its labels
    under ``label_key`` (``"labels"``, CIFAR-100's ``"fine_labels"``), checked."""
    batch = _unpickle(path)
    absent = [k for k in ("data", label_key) if k not in batch]
    if absent:
        raise Damaged(f"not a CIFAR batch: no {absent} key (it has {sorted(map(str, batch))})")
    data, labels = batch["data"], batch[label_key]
    size = math.prod(shape)
    if not isinstance(data, np.ndarray):
        raise Damaged(f"its data is a {type(data).__name__}, a CIFAR batch holds a numpy array")
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != size:
        raise Damaged(
            f"its data is {data.dtype} of shape {data.shape}, a CIFAR batch holds uint8 N x {size}"
        )
    try:
        labels = np.asarray(labels)
    except Exception as err:  # a ragged list, say
        raise Damaged(f"its {label_key!r} are not a list of class numbers ({err})") from err
    if labels.shape != (len(data),) or (len(labels) and labels.dtype.kind not in "iu"):
        raise Damaged(
            f"its {label_key!r} are not {len(data)} class numbers (one per image); got "
            f"{labels.dtype} of shape {labels.shape}"
        )
    labels = labels.astype(np.int64)
    if len(labels) and (labels.min() < 0 or labels.max() >= num_classes):
        raise Damaged(
            f"its {label_key!r} run from {labels.min()} to {labels.max()}, outside 0.."
            f"{num_classes - 1}"
        )
    return data.reshape(len(data), *shape), labels


# ---- MNIST: the idx files ----------------------------------------------------------------


def read_idx(path: Path, item_shape: tuple[int, ...]) -> np.ndarray:
    """Read an idx file of unsigned bytes (magic ``0x0000 08 ndim``, big-endian int32 sizes),
    gzipped when its name ends in ``.gz``, whose items have ``item_shape``, checked."""
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        what = "truncated" if isinstance(err, EOFError) else "not a readable .gz file"
        raise Damaged(f"{what} ({type(err).__name__}: {err})") from err
    ndim = 1 + len(item_shape)
    magic = bytes([0, 0, 0x08, ndim])
    header = 4 + 4 * ndim
    if not raw:
        raise Damaged("it is empty")
    if len(raw) >= 4 and raw[:4] != magic:
        raise Damaged(
            f"wrong magic number 0x{raw[:4].hex()} (an idx file of {ndim}-d unsigned bytes "
            f"starts with 0x{magic.hex()})"
        )
    if len(raw) < header:
        raise Damaged(f"truncated: {len(raw)} bytes, shorter than its {header}-byte header")
    dims = tuple(int(d) for d in np.frombuffer(raw, dtype=">i4", count=ndim, offset=4))
    if dims[1:] != item_shape:
        raise Damaged(f"its header gives the shape {list(dims)}, expected N x {item_shape}")
    data = np.frombuffer(raw, dtype=np.uint8, offset=header)
    if data.size != math.prod(dims):
        what = "truncated" if data.size < math.prod(dims) else "wrong size"
        raise Damaged(
            f"{what}: {data.size} bytes of data, its header {list(dims)} says {math.prod(dims)}"
        )
    return data.reshape(dims).copy()

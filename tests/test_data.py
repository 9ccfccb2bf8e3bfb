"""Specification of palviz.data: datasets, long-tailed subsets, label noise, batches.

Nothing here touches the network: the real datasets are read from small stand-in files,
written by the tests in the real on-disk formats.
"""

from __future__ import annotations

import gzip
import pickle
import re
import struct
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pytest
import torch

from palviz import data
from palviz.data import (
    ASYMMETRIC_MAPS,
    DATASETS,
    BatchIterator,
    add_label_noise,
    asymmetric_map,
    dataset_info,
    flip_count,
    load_dataset,
    long_tail_counts,
    long_tail_indices,
    make_long_tailed,
    normalize_images,
)

# ---------------------------------------------------------------------------------------------
# Long-tailed counts and subsets (docs/reference.md 1)
# ---------------------------------------------------------------------------------------------


def test_long_tail_counts_match_cifar10_lt_rho100_check_values():
    assert long_tail_counts(5000, 10, 100) == [5000, 2997, 1796, 1077, 645, 387, 232, 139, 83, 50]


@pytest.mark.parametrize(
    ("n_max", "num_classes", "rho", "total"),
    [
        (5000, 10, 100, 12406),
        (5000, 10, 50, 13996),
        (5000, 10, 10, 20431),
        (500, 100, 100, 10847),
        (500, 100, 50, 12608),
        (500, 100, 10, 19573),
    ],
)
def test_long_tail_counts_totals_match_the_published_cifar_lt_sizes(n_max, num_classes, rho, total):
    counts = long_tail_counts(n_max, num_classes, rho)
    assert sum(counts) == total
    assert counts[0] == n_max
    assert counts[-1] == int(n_max / rho)
    assert all(a >= b for a, b in zip(counts, counts[1:], strict=False))


def test_long_tail_counts_with_ratio_one_is_balanced():
    assert long_tail_counts(7, 4, 1) == [7, 7, 7, 7]


def test_step_shape_keeps_the_first_half_and_cuts_the_rest():
    assert long_tail_counts(5000, 10, 100, shape="step") == [5000] * 5 + [50] * 5
    assert long_tail_counts(100, 5, 10, "step") == [100, 100, 10, 10, 10]


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((0, 10, 10), {}, "n_max must be >= 1, got 0"),
        ((10, 1, 10), {}, "num_classes must be >= 2, got 1"),
        ((10, 10, 0.5), {}, "imbalance_ratio must be >= 1, got 0.5"),
        ((10, 10, 10), {"shape": "linear"}, "shape must be one of ['exp', 'step'], got 'linear'"),
    ],
)
def test_long_tail_counts_rejects_bad_arguments_by_name(args, kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        long_tail_counts(*args, **kwargs)


def test_long_tail_counts_refuses_an_empty_tail_class():
    with pytest.raises(ValueError, match="0"):
        long_tail_counts(50, 10, 100)


def _balanced_labels(per_class: int, num_classes: int, seed: int = 0) -> np.ndarray:
    y = np.repeat(np.arange(num_classes), per_class)
    return np.random.default_rng(seed).permutation(y)


def test_long_tail_indices_are_sorted_exact_per_class_and_reproducible():
    y = _balanced_labels(60, 5)
    counts = [60, 30, 15, 7, 3]
    idx = long_tail_indices(y, counts, seed=3)
    assert idx.dtype == np.int64
    assert np.all(np.diff(idx) > 0)
    assert np.bincount(y[idx], minlength=5).tolist() == counts
    assert np.array_equal(idx, long_tail_indices(torch.from_numpy(y), counts, seed=3))
    assert not np.array_equal(idx, long_tail_indices(y, counts, seed=4))


def test_long_tail_subsets_with_one_seed_are_nested():
    y = _balanced_labels(60, 5)
    rare = set(long_tail_indices(y, [60, 20, 5, 2, 1]).tolist())
    common = set(long_tail_indices(y, [60, 40, 30, 20, 10]).tolist())
    assert rare <= common


def test_long_tail_indices_refuses_a_class_with_too_few_samples():
    y = _balanced_labels(10, 3)
    with pytest.raises(ValueError, match="class 1"):
        long_tail_indices(y, [10, 11, 1])


def test_make_long_tailed_keeps_the_per_class_counts_and_pairs():
    y = np.concatenate([_balanced_labels(40, 4), np.zeros(5, dtype=np.int64)])
    x = torch.arange(len(y) * 2, dtype=torch.float32).reshape(-1, 2)
    y_t = torch.from_numpy(y)
    x_lt, y_lt, counts = make_long_tailed(x, y_t, imbalance_ratio=10, seed=1)
    # n_max defaults to the smallest per-class count (40, not 45).
    assert counts == long_tail_counts(40, 4, 10) == [40, 18, 8, 4]
    assert isinstance(x_lt, torch.Tensor) and isinstance(y_lt, torch.Tensor)
    assert np.bincount(y_lt.numpy(), minlength=4).tolist() == counts
    rows = (x_lt[:, 0] / 2).long()  # each kept sample still sits next to its own label
    assert torch.equal(y_t[rows], y_lt)
    _, _, counts_step = make_long_tailed(x.numpy(), y, 4, shape="step", n_max=20)
    assert counts_step == [20, 20, 5, 5]


# ---------------------------------------------------------------------------------------------
# Label noise (docs/reference.md 4)
# ---------------------------------------------------------------------------------------------


def _nearest_count(rate: float, n: int) -> int:
    """round(rate * n), halves up, in decimal arithmetic: the rule of docs/reference.md 4
    computed independently of palviz.data.flip_count."""
    exact = Decimal(str(rate)) * n
    return int(exact.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def test_flip_count_at_0_7_of_90_is_63_where_floating_point_truncation_gives_62():
    assert int(0.7 * 90) == 62  # 0.7 * 90 is 62.999... in floating point (APL's count)
    assert flip_count(0.7, 90) == 63
    clean = np.zeros(90, dtype=np.int64)
    noisy = add_label_noise(clean, 0.7, "symmetric", seed=0, num_classes=10)
    assert int((noisy != clean).sum()) == 63
    y = np.repeat(np.arange(10), 90)
    noisy = add_label_noise(y, 0.7, "asymmetric", dataset="mnist", seed=0)
    assert int((noisy[y == 7] == 1).sum()) == 63


@pytest.mark.parametrize(
    ("rate", "n"),
    [
        (0.7, 90),
        (0.29, 100),
        (0.57, 100),
        (0.3, 33),
        (0.4, 399),
        (0.45, 19),
        (0.5, 5),
        (0.5, 7),
        (0.2, 408),
        (0.8, 1000),
        (0.0, 13),
        (1.0, 13),
        (0.1, 3),
        (0.35, 10),
    ],
)
def test_flip_count_is_the_nearest_integer_halves_up(rate, n):
    assert flip_count(rate, n) == _nearest_count(rate, n)


def test_flip_count_by_hand():
    # 0.29 * 100 = 28.999... and 0.57 * 100 = 56.999... in floating point; 0.5 * 5 = 2.5 up
    assert [flip_count(0.29, 100), flip_count(0.57, 100), flip_count(0.5, 5)] == [29, 57, 3]
    assert [flip_count(0.3, 33), flip_count(0.3, 57), flip_count(0.4, 37)] == [10, 17, 15]


@pytest.mark.parametrize(
    ("args", "argument"), [((1.5, 10), "rate"), ((0.5, -1), "n"), ((0.5, 2.0), "n")]
)
def test_flip_count_rejects_bad_arguments_by_name(args, argument):
    with pytest.raises((ValueError, TypeError), match=argument):
        flip_count(*args)


def test_only_a_noisy_runs_cache_key_holds_the_noise_revision(monkeypatch):
    from palviz.experiments.runspec import RunSpec

    noisy = RunSpec(dataset="mnist1d", arch="cnn1d", loss="ce", noise_rate=0.4)
    clean = noisy.replace(noise_rate=0.0)
    before = noisy.key(), clean.key()
    monkeypatch.setattr(data, "NOISE_REVISION", data.NOISE_REVISION + 1)
    assert noisy.key() != before[0]
    assert clean.key() == before[1]


def test_symmetric_noise_flips_exactly_round_rate_n_per_class_to_other_classes():
    y = np.concatenate([np.full(n, c) for c, n in enumerate([100, 57, 33, 10])])
    y = np.random.default_rng(0).permutation(y)
    before = y.copy()
    noisy = add_label_noise(y, 0.3, "symmetric", seed=5)
    assert np.array_equal(y, before)  # input untouched
    assert noisy.dtype == np.int64 and noisy is not y
    for c, flips in enumerate([30, 17, 10, 3]):  # round(0.3 n) for n = 100, 57, 33, 10
        members = y == c
        assert int((noisy[members] != c).sum()) == flips
    assert set(np.unique(noisy)) <= {0, 1, 2, 3}


def test_symmetric_noise_reaches_every_other_class_and_is_seeded():
    y = np.repeat(np.arange(5), 400)
    noisy = add_label_noise(torch.from_numpy(y), 0.5, seed=1)
    flipped = noisy != y
    # A flipped label of class 0 lands on each of the 4 other classes, never on 0.
    assert set(np.unique(noisy[flipped & (y == 0)])) == {1, 2, 3, 4}
    assert np.array_equal(noisy, add_label_noise(y, 0.5, seed=1))
    assert not np.array_equal(noisy, add_label_noise(y, 0.5, seed=2))


def test_torch_input_is_left_unchanged():
    y = torch.repeat_interleave(torch.arange(10), 20)
    before = y.clone()
    add_label_noise(y, 0.8, "asymmetric", dataset="mnist")
    assert torch.equal(y, before)


def test_rate_zero_is_the_identity():
    y = np.repeat(np.arange(10), 30)
    assert np.array_equal(add_label_noise(y, 0.0), y)
    assert np.array_equal(add_label_noise(y, 0.0, "asymmetric", dataset="cifar10"), y)


@pytest.mark.parametrize("dataset", ["mnist", "mnist1d", "digits", "cifar10"])
def test_asymmetric_noise_follows_the_map_with_exact_counts(dataset):
    y = np.random.default_rng(0).permutation(np.repeat(np.arange(10), 37))
    noisy = add_label_noise(y, 0.4, "asymmetric", dataset=dataset, seed=2)
    mapping = ASYMMETRIC_MAPS[dataset]
    for c in range(10):
        moved = noisy[y == c] != c
        if c in mapping:
            assert int(moved.sum()) == 15  # round(0.4 * 37) = round(14.8)
            assert set(noisy[y == c][moved]) == {mapping[c]}
        else:
            assert not moved.any()


def test_asymmetric_maps_are_the_published_ones():
    assert asymmetric_map("mnist") == {7: 1, 2: 7, 5: 6, 6: 5, 3: 8}
    assert asymmetric_map("digits") == asymmetric_map("mnist1d") == asymmetric_map("mnist")
    assert asymmetric_map("cifar10") == {9: 1, 2: 0, 3: 5, 5: 3, 4: 7}


def test_cifar100_asymmetric_noise_moves_to_the_next_class_of_its_block_of_five():
    m = asymmetric_map("cifar100", num_classes=100)
    assert m[0] == 1 and m[3] == 4 and m[4] == 0 and m[97] == 98 and m[99] == 95
    assert all(v // 5 == k // 5 and v != k for k, v in m.items())
    y = np.repeat(np.arange(100), 10)
    noisy = add_label_noise(y, 0.2, "asymmetric", dataset="cifar100", seed=0)
    for c in range(100):
        moved = noisy[y == c] != c
        assert int(moved.sum()) == 2
        assert set(noisy[y == c][moved]) == {m[c]}


def test_swapped_classes_draw_from_clean_labels():
    # cat <-> dog at rate 1 swaps the two classes completely.
    y = np.repeat(np.arange(10), 5)
    noisy = add_label_noise(y, 1.0, "asymmetric", dataset="cifar10")
    assert (noisy[y == 3] == 5).all() and (noisy[y == 5] == 3).all()


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"rate": 1.5}, "rate"),
        ({"rate": -0.1}, "rate"),
        ({"rate": 0.2, "kind": "pairflip"}, "kind"),
        ({"rate": 0.2, "kind": "asymmetric"}, "dataset"),
        ({"rate": 0.2, "dataset": "imagenet"}, "dataset"),
        ({"rate": 0.2, "num_classes": 3}, "targets"),
    ],
)
def test_add_label_noise_rejects_bad_arguments_by_name(kwargs, argument):
    y = np.repeat(np.arange(5), 4)
    with pytest.raises(ValueError, match=argument):
        add_label_noise(y, **kwargs)


# ---------------------------------------------------------------------------------------------
# Embedded datasets
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mnist1d_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    load_dataset("mnist1d", "train", root=root)  # generates (~3 s) and caches
    return root


def test_mnist1d_is_generated_offline_and_cached(mnist1d_root, monkeypatch):
    cache = mnist1d_root / "mnist1d" / "mnist1d_n12000_seed42.npz"
    assert cache.is_file()
    import mnist1d.data

    def no_generation(*args, **kwargs):
        raise AssertionError("the cached arrays should have been read")

    monkeypatch.setattr(mnist1d.data, "make_dataset", no_generation)
    x, y = load_dataset("mnist1d", "train", root=mnist1d_root)
    x_test, y_test = load_dataset("mnist1d", "test", root=mnist1d_root)
    assert x.shape == (9600, 40) and x.dtype == torch.float32
    assert y.shape == (9600,) and y.dtype == torch.int64
    assert x_test.shape == (2400, 40) and y_test.dtype == torch.int64
    assert sorted(torch.unique(y).tolist()) == list(range(10))
    assert np.bincount(y.numpy()).min() > 900  # ~960 per class
    with np.load(cache) as arrays:
        assert np.array_equal(arrays["x"], x.numpy())
        assert np.array_equal(arrays["y_test"], y_test.numpy())
    x2, y2 = load_dataset("mnist1d", "train", root=mnist1d_root)
    assert torch.equal(x, x2) and torch.equal(y, y2)


def test_digits_are_uint8_images_split_80_20_stratified():
    x, y = load_dataset("digits", "train")
    x_test, y_test = load_dataset("digits", "test")
    assert x.dtype == torch.uint8 and x.shape[1:] == (1, 8, 8)
    assert y.dtype == torch.int64
    assert len(x) + len(x_test) == 1797 and len(x_test) == 360
    assert int(x.max()) == 255 and int(x.min()) == 0
    train_share = np.bincount(y.numpy(), minlength=10) / len(y)
    test_share = np.bincount(y_test.numpy(), minlength=10) / len(y_test)
    assert np.abs(train_share - test_share).max() < 0.01
    assert torch.equal(load_dataset("digits")[1], y)


def test_dataset_info_describes_every_dataset():
    for name in DATASETS:
        info = dataset_info(name)
        assert info.name == name
        assert (info.mean is None) == (info.kind == "vector")
    assert dataset_info("cifar10").mean == (0.4914, 0.4822, 0.4465)
    assert dataset_info("cifar10").std == (0.2023, 0.1994, 0.2010)
    assert dataset_info("cifar100").num_classes == 100 and dataset_info("cifar100").augment
    assert dataset_info("mnist").mean == (0.1307,) and dataset_info("mnist").std == (0.3081,)
    assert dataset_info("mnist1d").shape == (40,)
    x, _ = load_dataset("digits")
    v = x.double() / 255
    assert dataset_info("digits").mean[0] == pytest.approx(float(v.mean()), abs=1e-4)
    assert dataset_info("digits").std[0] == pytest.approx(float(v.std()), abs=1e-4)


def test_load_dataset_rejects_unknown_name_and_split():
    with pytest.raises(ValueError, match="name") as err:
        load_dataset("svhn")
    assert "cifar10" in str(err.value)
    with pytest.raises(ValueError, match="split"):
        load_dataset("digits", "val")


# ---------------------------------------------------------------------------------------------
# Real datasets, read from stand-in files in the real on-disk formats
# ---------------------------------------------------------------------------------------------


def _write_cifar_batch(path, n, label_key, num_classes, seed, bytes_keys=True):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)
    labels = rng.integers(0, num_classes, size=n).tolist()
    batch = {"data": images, label_key: labels, "batch_label": "stand-in"}
    if bytes_keys:
        batch = {k.encode(): v for k, v in batch.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        pickle.dump(batch, handle)
    return images, labels


def test_cifar10_reads_the_python_batches(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    written = [
        _write_cifar_batch(folder / f"data_batch_{i}", 20, "labels", 10, i) for i in range(1, 6)
    ]
    test_images, test_labels = _write_cifar_batch(folder / "test_batch", 20, "labels", 10, 9)
    x, y = load_dataset("cifar10", "train", root=tmp_path)
    assert x.shape == (100, 3, 32, 32) and x.dtype == torch.uint8 and y.dtype == torch.int64
    expected = np.concatenate([w[0] for w in written]).reshape(100, 3, 32, 32)
    assert np.array_equal(x.numpy(), expected)
    assert y.tolist() == sum((w[1] for w in written), [])
    x_test, y_test = load_dataset("cifar10", "test", root=tmp_path)
    # Row-major CHW: the first 1024 bytes are the red plane.
    assert np.array_equal(x_test[3, 0].numpy().ravel(), test_images[3, :1024])
    assert y_test.tolist() == test_labels


def test_cifar100_reads_fine_labels(tmp_path):
    folder = tmp_path / "cifar-100-python"
    _, train_labels = _write_cifar_batch(folder / "train", 20, "fine_labels", 100, 0)
    # The official files load with str keys; accept both.
    test_images, _ = _write_cifar_batch(folder / "test", 20, "fine_labels", 100, 1, False)
    x, y = load_dataset("cifar100", "train", root=tmp_path)
    assert x.shape == (20, 3, 32, 32) and y.tolist() == train_labels
    x_test, _ = load_dataset("cifar100", "test", root=tmp_path)
    assert np.array_equal(x_test.numpy().reshape(20, -1), test_images)


def _write_idx(path, array, compress=False):
    array = np.asarray(array, dtype=np.uint8)
    header = bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}i", *array.shape)
    payload = header + array.tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    if compress:
        with gzip.open(str(path) + ".gz", "wb") as handle:
            handle.write(payload)
    else:
        path.write_bytes(payload)


def test_mnist_reads_idx_files_plain_and_gzipped(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(20, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, size=20, dtype=np.uint8)
    _write_idx(raw / "train-images-idx3-ubyte", images)
    _write_idx(raw / "train-labels-idx1-ubyte", labels)
    _write_idx(raw / "t10k-images-idx3-ubyte", images[:7], compress=True)
    _write_idx(raw / "t10k-labels-idx1-ubyte", labels[:7], compress=True)
    x, y = load_dataset("mnist", "train", root=tmp_path)
    assert x.shape == (20, 1, 28, 28) and x.dtype == torch.uint8 and y.dtype == torch.int64
    assert np.array_equal(x[:, 0].numpy(), images) and np.array_equal(y.numpy(), labels)
    x_test, y_test = load_dataset("mnist", "test", root=tmp_path)
    assert (
        np.array_equal(x_test[:, 0].numpy(), images[:7]) and y_test.tolist() == labels[:7].tolist()
    )


@pytest.mark.parametrize("name", ["mnist", "cifar10", "cifar100"])
def test_missing_real_data_says_how_to_download_it(tmp_path, name):
    with pytest.raises(FileNotFoundError, match=f"palviz download {name}") as err:
        load_dataset(name, "train", root=tmp_path)
    assert "download=True" in str(err.value)
    assert not any(tmp_path.iterdir())  # nothing was fetched or written


# ---------------------------------------------------------------------------------------------
# BatchIterator
# ---------------------------------------------------------------------------------------------


def _images(n=37, c=3, h=8, w=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (n, c, h, w), generator=g, dtype=torch.uint8)


def test_every_sample_appears_once_per_epoch():
    x, y = _images(), torch.arange(37)
    it = BatchIterator(x, y, 8, device="cpu")
    assert len(it) == 5
    for e in range(3):
        assert len(it.epoch(e)) == 5
        batches = list(it.epoch(e))
        assert [len(b[1]) for b in batches] == [8, 8, 8, 8, 5]
        assert sorted(torch.cat([b[1] for b in batches]).tolist()) == list(range(37))
        for xb, yb in batches:  # images still match their labels
            assert torch.equal((xb * 255).round().to(torch.uint8), x[yb])


def test_drop_last_and_no_shuffle():
    it = BatchIterator(_images(), torch.arange(37), 8, shuffle=False, drop_last=True, device="cpu")
    assert len(it) == 4
    assert torch.cat([yb for _, yb in it]).tolist() == list(range(32))


def test_same_seed_and_epoch_give_identical_batches():
    x, y = _images(), torch.arange(37)
    a = BatchIterator(x, y, 8, augment=True, seed=7, device="cpu")
    b = BatchIterator(x, y, 8, augment=True, seed=7, device="cpu")
    list(a.epoch(0))  # consuming other epochs first changes nothing (resume at epoch 3)
    for (xa, ya), (xb, yb) in zip(a.epoch(3), b.epoch(3), strict=True):
        assert torch.equal(xa, xb) and torch.equal(ya, yb)
    order = [torch.cat([yb for _, yb in a.epoch(e)]) for e in range(3)]
    assert not torch.equal(order[0], order[1]) and not torch.equal(order[1], order[2])
    assert torch.equal(torch.cat([yb for _, yb in a]), order[0])  # iter() is epoch 0
    other_seed = BatchIterator(x, y, 8, seed=8, device="cpu")
    assert not torch.equal(torch.cat([yb for _, yb in other_seed.epoch(0)]), order[0])


def test_augmented_pixels_come_from_a_crop_of_the_zero_padded_image():
    x, y, pad = _images(n=64), torch.arange(64), 2
    it = BatchIterator(x, y, 16, augment=True, pad=pad, device="cpu", seed=1)
    padded = torch.nn.functional.pad(x, (pad, pad, pad, pad))
    seen_offsets, seen_flips = set(), set()
    for xb, yb in it.epoch(0):
        assert xb.shape == (len(yb), 3, 8, 8) and xb.dtype == torch.float32
        pixels = (xb * 255).round().to(torch.uint8)
        for img, label in zip(pixels, yb.tolist(), strict=True):
            matches = [
                (dy, dx, flip)
                for dy in range(2 * pad + 1)
                for dx in range(2 * pad + 1)
                for flip in (False, True)
                if torch.equal(
                    img,
                    padded[label, :, dy : dy + 8, dx : dx + 8].flip(-1)
                    if flip
                    else padded[label, :, dy : dy + 8, dx : dx + 8],
                )
            ]
            assert matches, f"sample {label} is not a crop of its padded image"
            seen_offsets.add(matches[0][:2])
            seen_flips.add(matches[0][2])
    assert seen_flips == {False, True}
    assert len(seen_offsets) > 10
    assert (
        {dy for dy, _ in seen_offsets} == {dx for _, dx in seen_offsets} == set(range(2 * pad + 1))
    )


def test_zero_padding_flip_only_mirrors_and_padding_is_zero_before_normalisation():
    x = torch.full((40, 1, 4, 4), 200, dtype=torch.uint8)
    x[:, :, :, 0] = 10  # a marked left column
    it = BatchIterator(x, torch.arange(40), 40, augment=True, pad=0, device="cpu")
    ((xb, _),) = list(it.epoch(0))
    left = (xb[:, 0, :, 0] * 255).round()
    right = (xb[:, 0, :, -1] * 255).round()
    flipped = (right == 10).all(dim=1)
    assert ((left == 10).all(dim=1) ^ flipped).all() and 5 < int(flipped.sum()) < 35
    # With padding and normalisation, padded pixels are (0 - mean) / std.
    ones = torch.full((200, 1, 4, 4), 255, dtype=torch.uint8)
    it = BatchIterator(ones, torch.zeros(200), 200, augment=True, pad=3, mean=0.5, std=0.25)
    ((xb, _),) = list(it.epoch(0))
    assert set(torch.unique(xb.cpu()).tolist()) == {-2.0, 2.0}


def test_normalisation_matches_a_hand_computation():
    x, y = _images(n=10), torch.zeros(10, dtype=torch.long)
    mean, std = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)
    it = BatchIterator(x, y, 10, shuffle=False, mean=mean, std=std, device="cpu")
    ((xb, _),) = list(it)
    by_hand = torch.empty(10, 3, 8, 8)
    for c in range(3):
        by_hand[:, c] = (x[:, c].float() / 255 - mean[c]) / std[c]
    assert torch.allclose(xb, by_hand, atol=1e-6)
    assert torch.allclose(normalize_images(x, mean, std), by_hand, atol=1e-6)
    assert torch.allclose(normalize_images(x), x.float() / 255)


def test_vectors_stay_float_and_are_normalised_if_asked():
    x = torch.randn(12, 40, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    it = BatchIterator(x, torch.arange(12), 5, shuffle=False, mean=1.0, std=2.0, device="cpu")
    xb = torch.cat([b for b, _ in it])
    assert xb.dtype == torch.float32 and torch.allclose(xb, ((x - 1) / 2).float(), atol=1e-6)
    assert len(it) == 3


def test_uint8_images_stay_uint8_on_the_device():
    it = BatchIterator(_images(), torch.arange(37), 8)
    assert it.x.dtype == torch.uint8
    assert it.device.type == ("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.parametrize(
    ("args", "kwargs", "argument"),
    [
        ((_images(), torch.arange(37), 0), {}, "batch_size"),
        ((_images(), torch.arange(36), 4), {}, "len"),
        ((torch.randn(10, 40), torch.arange(10), 4), {"augment": True}, "augment"),
        ((_images(), torch.arange(37), 4), {"std": (0.1, 0.0, 0.1)}, "std"),
    ],
)
def test_batch_iterator_rejects_bad_arguments_by_name(args, kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        BatchIterator(*args, device="cpu", **kwargs)


def test_module_names_its_public_api():
    for name in data.__all__:
        assert getattr(data, name).__doc__ or name in ("DATASETS", "ASYMMETRIC_MAPS")

"""The ``paper`` profile as the reference code trains it: each model's classifier layer
initialised as its reference does (LDAM-DRW's ``kaiming_normal_``, APL's ``xavier_uniform_``),
APL's ``RandomRotation(20)`` on CIFAR-100, float32 training as both references train, and
every departure from the reference code declared once, and named in docs/departures.md.

Expected values are the reference definitions, computed here: Kaiming-normal (fan-in, gain
sqrt 2) has std sqrt(2 / fan_in); Xavier-uniform is U(-b, b) with b = sqrt(6 / (fan_in +
fan_out)), std b / sqrt 3; PyTorch's default ``nn.Linear`` is U(-1 / sqrt(fan_in), ...), std
1 / sqrt(3 fan_in); the rotation is torchvision's ``rotate`` with its defaults."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torchvision.transforms import InterpolationMode
from torchvision.transforms import functional as TF

import palviz
from palviz import data as pdata
from palviz.cpu import pin_label
from palviz.data import BatchIterator, rotate_images
from palviz.data.batches import _epoch_generator
from palviz.experiments import departures, recipes, runspec
from palviz.experiments.runspec import RunSpec
from palviz.heads import CosineHead
from palviz.losses import CrossEntropyLoss
from palviz.models import ARCHS, HEAD_INITS, make_model, resnet32
from palviz.threads import single_thread
from palviz.train import TrainConfig, evaluate, fit

ROOT = Path(__file__).resolve().parents[1]

# arch -> (reference initialisation of its classifier layer, feature width)
REFERENCE_HEADS = {
    "resnet32": ("kaiming_normal", 64),  # LDAM-DRW models/resnet_cifar.py, _weights_init
    "resnet34": ("xavier_uniform", 512),  # APL models.py, ResNet._reset_prams
    "cnn_mnist": ("xavier_uniform", 128),  # APL models.py, ToyModel._reset_prams
    "cnn_cifar10": ("xavier_uniform", 256),
}
CPU_NETS = ("mlp1d", "cnn1d", "cnn_digits")


@pytest.fixture(autouse=True)
def one_thread():
    """One thread: small tensors gain nothing from more, and the machine's cores are shared."""
    with single_thread():
        yield


def fresh(arch: str, num_classes: int, seed: int = 0, **kw) -> nn.Module:
    torch.manual_seed(seed)
    return make_model(arch, num_classes, **kw)


def default_linear_std(fan_in: int) -> float:
    return 1 / math.sqrt(3 * fan_in)  # U(-1/sqrt(fan_in), 1/sqrt(fan_in))


# --------------------------------------------------------------------------- initialisation


def test_the_archs_with_a_reference_head_init_are_the_published_backbones():
    assert {a for a in ARCHS if HEAD_INITS[a] is not None} == set(REFERENCE_HEADS)
    assert {a: HEAD_INITS[a] for a in REFERENCE_HEADS} == {
        a: init for a, (init, _) in REFERENCE_HEADS.items()
    }


@pytest.mark.parametrize("arch", ["resnet32"])
def test_resnet32_head_is_kaiming_normal_as_ldam_drw(arch):
    _, fan_in = REFERENCE_HEADS[arch]
    # 100 classes: 6,400 weights, so the sample std is within about 1 % of the true one
    head = fresh(arch, 100).head.fc
    w = head.weight.detach()
    expected = math.sqrt(2 / fan_in)  # kaiming_normal_: gain sqrt(2), fan-in
    assert float(w.std()) == pytest.approx(expected, rel=0.05)
    assert abs(float(w.mean())) < 0.05 * expected
    assert float(w.abs().max()) > 2.5 * expected  # a normal, not a uniform, has tails
    assert float(w.std()) > 2 * default_linear_std(fan_in)  # not PyTorch's default any more
    bound = 1 / math.sqrt(fan_in)  # the bias keeps nn.Linear's default, as in LDAM-DRW
    assert float(head.bias.detach().abs().max()) <= bound


@pytest.mark.parametrize("arch", ["resnet34", "cnn_mnist", "cnn_cifar10"])
def test_apl_heads_are_xavier_uniform_as_apl(arch):
    _, fan_in = REFERENCE_HEADS[arch]
    num_classes = 100 if arch == "resnet34" else 10
    head = fresh(arch, num_classes).head.fc
    w = head.weight.detach()
    bound = math.sqrt(6 / (fan_in + num_classes))
    assert float(w.abs().max()) <= bound
    assert float(w.abs().max()) > 0.97 * bound  # fills U(-b, b) out to its ends
    assert float(w.std()) == pytest.approx(bound / math.sqrt(3), rel=0.05)
    assert float(w.std()) > 1.8 * default_linear_std(fan_in)
    assert float(head.bias.detach().abs().max()) <= 1 / math.sqrt(fan_in)  # nn.Linear's default


@pytest.mark.parametrize(("arch", "fan_in", "fan_out"), [("cnn_mnist", 64 * 7 * 7, 128)])
def test_apl_fully_connected_layer_is_xavier_uniform(arch, fan_in, fan_out):
    fc1 = next(m for m in fresh(arch, 10).backbone.modules() if isinstance(m, nn.Linear))
    assert tuple(fc1.weight.shape) == (fan_out, fan_in)
    bound = math.sqrt(6 / (fan_in + fan_out))
    w = fc1.weight.detach()
    assert bound * 0.99 < float(w.abs().max()) <= bound
    assert float(w.std()) == pytest.approx(bound / math.sqrt(3), rel=0.02)


@pytest.mark.parametrize("arch", CPU_NETS)
def test_the_cpu_sized_nets_keep_pytorchs_default_head(arch):
    w = fresh(arch, 10).head.fc.weight.detach()
    fan_in = w.shape[1]
    assert float(w.abs().max()) <= 1 / math.sqrt(fan_in)
    assert float(w.std()) == pytest.approx(default_linear_std(fan_in), rel=0.15)


def test_a_cosine_head_on_resnet32_is_initialised_as_before():
    torch.manual_seed(3)
    resnet32()
    expected = CosineHead(64, 10).weight.detach()
    got = fresh("resnet32", 10, seed=3, head="cosine").head.weight.detach()
    assert torch.equal(got, expected)
    assert torch.allclose(got.norm(dim=1), torch.ones(10))  # NormedLinear's unit rows


# --------------------------------------------------------------------------- cache keys


def spec(arch: str = "cnn1d", dataset: str = "mnist1d", **train) -> RunSpec:
    config = TrainConfig(epochs=2, progress=False, **train)
    return RunSpec(dataset=dataset, arch=arch, loss="ce", train=config)


def test_the_key_hashes_the_spec_as_it_is():
    """No field is respelled: the spec without its label and ``train.progress``, palviz's
    version, the cache schema, the data's declared version and the CPU pin."""
    s = spec("cnn_mnist", "mnist")
    payload = s.to_dict()
    payload.pop("label")
    payload["train"].pop("progress")
    payload.update(_version=palviz.__version__, _schema=runspec.CACHE_SCHEMA)
    payload.update(_data=f"version {pdata.dataset_info('mnist').version}", _cpu=pin_label())
    text = json.dumps(payload, sort_keys=True)
    assert s.key() == hashlib.sha256(text.encode()).hexdigest()[:16]
    assert s.key() == s.replace(label="x", train={"progress": True}).key()


def test_rotation_changes_the_key_and_round_trips_through_json():
    keys = {spec("cnn_digits", "digits", rotation=r).key() for r in (0, 20)}
    assert len(keys) == 2
    s = spec("cnn_digits", "digits", rotation=20)
    back = RunSpec.from_dict(json.loads(json.dumps(s.to_dict())))
    assert back == s and back.train.rotation == 20 and back.key() == s.key()


def test_a_config_with_a_field_palviz_does_not_have_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"unknown TrainConfig fields \['amp'\]"):
        TrainConfig.from_dict({"amp": True})


@pytest.mark.parametrize("bad", [-1, 181, float("nan"), "20"])
def test_a_rotation_outside_0_to_180_degrees_is_refused(bad):
    with pytest.raises(ValueError, match="TrainConfig.rotation"):
        TrainConfig(rotation=bad)


# --------------------------------------------------------------------------- the rotation


def torchvision_rotate(x: torch.Tensor, angles) -> torch.Tensor:
    return torch.stack(
        [
            TF.rotate(img, float(a), interpolation=InterpolationMode.NEAREST, fill=0)
            for img, a in zip(x, angles, strict=True)
        ]
    )


@pytest.mark.parametrize(("h", "w"), [(32, 32), (28, 28), (20, 33)])
def test_rotate_images_equals_torchvision_rotate_pixel_for_pixel(h, w):
    g = torch.Generator().manual_seed(h * w)
    x = torch.randint(0, 256, (48, 3, h, w), dtype=torch.uint8, generator=g)
    angles = torch.cat(
        [
            torch.tensor([0.0, 90.0, -90.0, 20.0, -20.0, 45.0]),
            (torch.rand(42, generator=g) - 0.5) * 40,
        ]
    )
    got = rotate_images(x, angles)
    assert got.dtype == torch.uint8
    assert torch.equal(got, torchvision_rotate(x, angles))
    assert torch.equal(rotate_images(x[:1], [0.0]), x[:1])  # 0 degrees: the image itself
    floats = x[:6].float() / 255
    assert torch.equal(rotate_images(floats, angles[:6]), torchvision_rotate(floats, angles[:6]))


def test_rotate_images_turns_counter_clockwise_about_the_centre_filling_with_zeros():
    x = torch.zeros(1, 1, 5, 5, dtype=torch.uint8)
    x[0, 0, 0, 2] = 255  # the top-centre pixel
    turned = rotate_images(x, [90.0])[0, 0]
    assert turned[2, 0] == 255 and turned.sum() == 255  # top-centre -> left-centre
    corner = rotate_images(torch.full((1, 1, 8, 8), 7, dtype=torch.uint8), [45.0])[0, 0]
    assert corner[0, 0] == 0 and corner[4, 4] == 7  # corners come from outside: fill 0


def test_rotate_images_checks_its_arguments():
    with pytest.raises(ValueError, match="N x C x H x W"):
        rotate_images(torch.zeros(3, 8, 8), [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="one angle per image"):
        rotate_images(torch.zeros(2, 1, 8, 8), [0.0])


def test_the_batches_are_cropped_flipped_then_rotated_as_apl_transforms_them():
    """Each training image is ``RandomCrop(32, padding=4)``, ``RandomHorizontalFlip``,
    ``RandomRotation(20)`` in that order: rebuilt here with torchvision's functions from the
    epoch's draws (in palviz's order: permutation, offsets, flips, angles)."""
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 256, (20, 3, 32, 32), dtype=torch.uint8, generator=g)
    y = torch.arange(20) % 10
    it = BatchIterator(x, y, 8, augment=True, rotation=20, seed=5, device="cpu")
    batches = list(it.epoch(3))
    gen = _epoch_generator(5, 3)
    order = torch.randperm(20, generator=gen)
    offsets = torch.randint(0, 9, (20, 2), generator=gen)
    flips = torch.rand(20, generator=gen) < 0.5
    angles = (torch.rand(20, generator=gen) * 2 - 1) * 20
    assert float(angles.abs().max()) <= 20
    expected = []
    for i, j in enumerate(order.tolist()):
        img = TF.crop(F.pad(x[j], (4, 4, 4, 4)), int(offsets[i, 0]), int(offsets[i, 1]), 32, 32)
        img = TF.hflip(img) if flips[i] else img
        expected.append(torchvision_rotate(img[None], [angles[i]])[0])
    got = torch.cat([xb for xb, _ in batches])
    assert torch.equal(got, torch.stack(expected).float() / 255)
    assert torch.equal(torch.cat([yb for _, yb in batches]), y[order])


def test_rotation_zero_leaves_every_other_draw_as_it_was():
    x = torch.randint(0, 256, (16, 3, 32, 32), dtype=torch.uint8)
    y = torch.arange(16) % 4
    plain = BatchIterator(x, y, 16, augment=True, seed=2, device="cpu")
    rotated = BatchIterator(x, y, 16, augment=True, rotation=20, seed=2, device="cpu")
    (a, _), (b, _) = next(iter(plain.epoch(0))), next(iter(rotated.epoch(0)))
    assert not torch.equal(a, b)
    # the same crops and flips, then the rotation: rotating the plain batch with the angles
    # drawn after them gives the rotated batch
    gen = _epoch_generator(2, 0)
    torch.randperm(16, generator=gen), torch.randint(0, 9, (16, 2), generator=gen)
    torch.rand(16, generator=gen)
    angles = (torch.rand(16, generator=gen) * 2 - 1) * 20
    assert torch.equal(rotate_images((a * 255).round().to(torch.uint8), angles).float() / 255, b)


def test_the_paper_profile_rotates_cifar100_with_noisy_labels_only():
    def rotation(dataset: str) -> float:
        return recipes.noisy_spec("CE", 0.4, profile="paper", dataset=dataset).train.rotation

    assert rotation("cifar100") == 20.0
    assert rotation("cifar10") == 0.0 and rotation("mnist") == 0.0
    for dataset in ("cifar10", "cifar100"):
        assert recipes.lt_spec("CE", profile="paper", dataset=dataset).train.rotation == 0.0


def test_the_paper_noise_runs_normalise_cifar_with_apls_statistics():
    # Active-Passive-Losses dataset.py: CIFAR_MEAN / CIFAR_STD of its cifar10 and cifar100
    apl = {
        "cifar10": ((0.49139968, 0.48215827, 0.44653124), (0.24703233, 0.24348505, 0.26158768)),
        "cifar100": ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)),
        "mnist": ((0.1307,), (0.3081,)),
    }
    for dataset, (mean, std) in apl.items():
        config = recipes.noisy_spec("CE", 0.2, profile="paper", dataset=dataset).train
        assert config.mean == mean and config.std == std, dataset
    ldam = ((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010))  # LDAM-DRW, both CIFARs
    for dataset in ("cifar10", "cifar100"):
        config = recipes.lt_spec("CE", profile="paper", dataset=dataset).train
        assert (config.mean, config.std) == ldam


def test_fit_refuses_a_rotation_of_inputs_that_are_not_images():
    net = fresh("mlp1d", 4)
    with pytest.raises(ValueError, match="TrainConfig.rotation"):
        fit(net, CrossEntropyLoss(), (torch.randn(8, 40), torch.arange(8) % 4),
            config=TrainConfig(epochs=1, rotation=10, progress=False, device="cpu"))  # fmt: skip


# --------------------------------------------------------------------------- float32


def test_training_and_evaluation_run_in_float32_as_both_references_do():
    net = fresh("mlp1d", 4)
    seen = []
    first = next(m for m in net.modules() if isinstance(m, nn.Linear))
    first.register_forward_hook(lambda _m, _i, out: seen.append(out.dtype))
    g = torch.Generator().manual_seed(0)
    data = torch.randn(64, 40, generator=g), torch.arange(64) % 4
    config = TrainConfig(epochs=1, batch_size=16, lr=0.05, schedule="constant", device="cpu",
                         progress=False)  # fmt: skip
    record = fit(net, CrossEntropyLoss(), data, data, config)
    assert set(seen) == {torch.float32}  # training and evaluation alike
    assert math.isfinite(record.final["train_loss"]) and record.last_acc is not None
    assert evaluate(net, *data, device="cpu")["logits"].dtype == torch.float32
    assert not {"precision", "amp"} & {f.name for f in dataclasses.fields(TrainConfig)}


# --------------------------------------------------------------------------- departures


def test_the_departures_page_names_every_declared_departure_and_no_other():
    """docs/departures.md, written by hand, has one row per declared departure: its topic, and
    a link to the section of docs/reference.md the declaration names."""
    text = (ROOT / "docs" / "departures.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ")][1:]  # not the header
    cells = [[c.strip() for c in row.strip("|").split(" | ")] for row in rows]
    declared = {d.topic: d.section for d in departures.DEPARTURES}
    assert len(declared) == len(departures.DEPARTURES)  # one topic, one departure
    assert sorted(row[0] for row in cells) == sorted(declared)
    for topic, *_, details in cells:
        section = declared[topic]
        anchor = section.replace(".", "")
        assert details.startswith(f"[docs/reference.md {section}](reference.md#{anchor}-"), topic
    assert {"Model selection", "Label noise"} <= set(declared)

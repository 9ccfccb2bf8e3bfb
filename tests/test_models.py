"""Specification of palviz.models: every model exposes its penultimate features and takes
any head."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

from palviz import models as models_module
from palviz.models import ARCHS, Classifier, ZeroPadShortcut, make_model

HEADS = ("linear", "cosine", "anchored")

# arch -> (input shape of one sample with the default in_channels, feature dim)
INPUTS = {
    "resnet32": ((3, 32, 32), 64),
    "resnet34": ((3, 32, 32), 512),
    "cnn_mnist": ((1, 28, 28), 128),
    "cnn_cifar10": ((3, 32, 32), 256),
    "mlp1d": ((40,), 64),
    "cnn1d": ((40,), 64),
    "cnn_digits": ((1, 8, 8), 64),
}

# Parameters of each backbone alone (default in_channels), as stated in its docstring.
BACKBONE_PARAMETERS = {
    "resnet32": 463_504,
    "resnet34": 21_276_992,
    "cnn_mnist": 420_800,
    "cnn_cifar10": 1_637_224,
    "mlp1d": 92_736,
    "cnn1d": 16_896,
    "cnn_digits": 37_728,
}


def n_params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.fixture(scope="module")
def models() -> dict[tuple[str, str], Classifier]:
    torch.manual_seed(0)
    return {(a, h): make_model(a, 10, h) for a in ARCHS for h in HEADS}


def test_the_archs_are_the_published_backbones_and_the_cpu_sized_nets():
    assert set(ARCHS) == set(INPUTS)


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("arch", ARCHS)
def test_every_arch_maps_inputs_to_logits_and_features_with_every_head(models, arch, head):
    shape, feat_dim = INPUTS[arch]
    model = models[arch, head]
    x = torch.randn(3, *shape)
    logits, features = model.forward_features(x)
    assert model.feat_dim == feat_dim
    assert logits.shape == (3, 10)
    assert features.shape == (3, feat_dim)
    assert model.features(x).shape == (3, feat_dim)
    assert model.head.prototypes.shape == (10, feat_dim)
    assert torch.isfinite(logits).all()


@pytest.mark.parametrize("arch", ARCHS)
def test_forward_features_is_consistent_with_forward(models, arch):
    model = models[arch, "linear"].eval()
    x = torch.randn(4, *INPUTS[arch][0])
    with torch.no_grad():
        logits, features = model.forward_features(x)
        assert torch.equal(model(x), logits)
        assert torch.equal(model.features(x), features)
        assert torch.allclose(model.head(features), logits)


@pytest.mark.parametrize("arch", ARCHS)
def test_penultimate_features_are_non_negative_as_in_the_reference_backbones(models, arch):
    features = models[arch, "linear"].features(torch.randn(4, *INPUTS[arch][0]))
    assert (features >= 0).all()


@pytest.mark.parametrize("arch", ARCHS)
def test_backbone_parameter_counts_match_the_documented_ones(models, arch):
    assert n_params(models[arch, "linear"].backbone) == BACKBONE_PARAMETERS[arch]
    assert f"{BACKBONE_PARAMETERS[arch]:,}" in getattr(models_module, arch).__doc__


def test_resnet32_with_a_linear_head_has_about_0_46_million_parameters(models):
    assert 450_000 <= n_params(models["resnet32", "linear"]) <= 480_000


def test_resnet32_has_three_stages_of_five_basic_blocks_with_16_32_64_channels(models):
    backbone = models["resnet32", "linear"].backbone
    assert backbone.conv1.out_channels == 16
    assert [len(stage) for stage in backbone.stages] == [5, 5, 5]
    assert [stage[0].conv2.out_channels for stage in backbone.stages] == [16, 32, 64]
    assert [stage[0].conv1.stride for stage in backbone.stages] == [(1, 1), (2, 2), (2, 2)]


def test_resnet32_downsamples_through_parameter_free_zero_padding_shortcuts(models):
    backbone = models["resnet32", "linear"].backbone
    shortcuts = [m for m in backbone.modules() if isinstance(m, ZeroPadShortcut)]
    assert len(shortcuts) == 2  # entering stage 2 and stage 3
    assert all(n_params(s) == 0 for s in shortcuts)
    # the other blocks add their input unchanged
    assert sum(isinstance(m, nn.Identity) for m in backbone.modules()) == 13


def test_option_a_shortcut_subsamples_and_pads_channels_with_zeros():
    x = torch.randn(2, 16, 8, 8)
    out = ZeroPadShortcut(16, 32, stride=2)(x)
    assert out.shape == (2, 32, 4, 4)
    assert torch.equal(out[:, 8:24], x[:, :, ::2, ::2])
    assert (out[:, :8] == 0).all() and (out[:, 24:] == 0).all()


def test_resnet32_convs_are_kaiming_normal_initialised():
    torch.manual_seed(0)
    conv = make_model("resnet32", 10).backbone.stages[2][1].conv1  # 64 x 64 x 3 x 3
    fan_in = 64 * 9
    assert conv.weight.std().item() == pytest.approx((2 / fan_in) ** 0.5, rel=0.05)


def test_resnet34_projects_its_shortcuts_with_a_1x1_conv(models):
    backbone = models["resnet34", "linear"].backbone
    assert [len(stage) for stage in backbone.stages] == [3, 4, 6, 3]
    projections = [stage[0].shortcut for stage in backbone.stages[1:]]
    assert all(isinstance(p[0], nn.Conv2d) and p[0].kernel_size == (1, 1) for p in projections)
    assert not any(isinstance(m, nn.MaxPool2d) for m in backbone.modules())


def test_apl_cnns_have_the_published_layer_counts(models):
    def layers(arch: str) -> tuple[int, int]:
        modules = list(models[arch, "linear"].modules())
        convs = sum(isinstance(m, nn.Conv2d) for m in modules)
        fcs = sum(isinstance(m, nn.Linear) for m in modules)
        return convs, fcs

    # the classifier layer is the linear head
    assert layers("cnn_mnist") == (2, 2)  # 4-layer CNN
    assert layers("cnn_cifar10") == (6, 2)  # 8-layer CNN


def test_the_1d_nets_take_signals_with_or_without_a_channel_axis(models):
    x = torch.randn(5, 40)
    for arch in ("mlp1d", "cnn1d"):
        model = models[arch, "linear"].eval()
        with torch.no_grad():
            assert torch.equal(model(x), model(x[:, None, :]))


def test_in_channels_overrides_the_arch_default():
    model = make_model("resnet32", 10, in_channels=1)
    assert model(torch.randn(2, 1, 32, 32)).shape == (2, 10)
    assert model.backbone.conv1.in_channels == 1


def test_head_keywords_reach_the_head():
    model = make_model("mlp1d", 10, "anchored", normalize=True, scale=5.0)
    assert model.head.normalize and model.head.scale == 5.0
    logits = model(torch.randn(4, 40))
    # FNPAL logits are s * cos(w_j, z): bounded by s
    assert logits.abs().max() <= 5.0 + 1e-5


def test_anchored_prototypes_are_buffers_not_parameters():
    model = make_model("cnn_digits", 10, "anchored")
    names = {name for name, _ in model.named_parameters()}
    assert not any(name.startswith("head.") for name in names)
    assert "head.weight" in dict(model.named_buffers())


def test_unknown_arch_is_an_error_that_lists_the_allowed_ones():
    with pytest.raises(ValueError, match="resnet32") as err:
        make_model("resnet18", 10)
    assert "resnet18" in str(err.value)
    for arch in ARCHS:
        assert arch in str(err.value)


@pytest.mark.parametrize("bad", [1, 0, 2.5, True])
def test_num_classes_must_be_an_integer_of_at_least_two(bad):
    with pytest.raises(ValueError, match=rf"num_classes must be .*, got {re.escape(repr(bad))}$"):
        make_model("mlp1d", bad)


def test_in_channels_must_be_a_positive_integer():
    with pytest.raises(ValueError, match="in_channels must be >= 1, got 0"):
        make_model("mlp1d", 10, in_channels=0)


@pytest.mark.parametrize("width", [13, 40, 64])
def test_mlp1d_is_built_for_the_width_of_its_input(width):
    model = make_model("mlp1d", 3, shape=(width,))
    assert model(torch.randn(2, width)).shape == (2, 3)
    # D -> 256 -> 256 -> 64: 256 (D + 1) + 82,240 parameters, as its docstring says
    assert n_params(model.backbone) == 256 * (width + 1) + 82_240
    with pytest.raises(RuntimeError):
        model(torch.randn(2, width + 1))


def test_the_shape_of_the_other_nets_inputs_changes_nothing():
    torch.manual_seed(0)
    given = make_model("cnn_digits", 10, shape=(1, 8, 8)).state_dict()
    torch.manual_seed(0)
    default = make_model("cnn_digits", 10).state_dict()
    assert given.keys() == default.keys()
    assert all(torch.equal(given[k], default[k]) for k in given)


@pytest.mark.parametrize(
    ("arch", "shape", "message"),
    [
        (
            "cnn1d",
            (13,),
            r"^shape must be one cnn1d reads, \[N, 40\], got \(13,\)$",
        ),
        (
            "resnet32",
            (1, 32, 32),
            r"^shape must be one resnet32 reads, \[N, 3, H, W\]",
        ),
        (
            "mlp1d",
            (0,),
            r"^shape must be \(D,\) for vectors or \(C, H, W\) for images, sizes >= 1, "
            r"got \(0,\)$",
        ),
        ("mlp1d", (8, 8), r"^shape must be \(D,\) for vectors or \(C, H, W\)"),
        ("mlp1d", "13", r"^shape must be \(D,\) for vectors or \(C, H, W\)"),
    ],
)
def test_a_shape_the_arch_cannot_read_is_refused_naming_it(arch, shape, message):
    with pytest.raises(ValueError, match=message):
        make_model(arch, 3, shape=shape)

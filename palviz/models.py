"""Backbones of the published tables and CPU-sized nets, each behind any head.

Every model here is a :class:`Classifier`: a *backbone* that maps an input to its
penultimate features ``h`` (``[batch_size, feat_dim]``) and a *head* (from
:func:`palviz.heads.make_head`) that maps ``h`` to logits ``[batch_size, num_classes]``:

.. math::  z = \\text{head}(h), \\qquad h = \\text{backbone}(x)

so feature norms, UMAP embeddings and sample margins can be read off any model, and PAL's
anchored head can replace the linear one without touching the backbone.

==============  ===================  =====================================  ==========  ==========
arch            input                source                                 feat_dim    backbone
==============  ===================  =====================================  ==========  ==========
``resnet32``    ``[N, 3, 32, 32]``   He et al. 2016, CIFAR ResNet; LDAM-DRW  64          0.464 M
``resnet34``    ``[N, 3, 32, 32]``   CIFAR ResNet-34 of the APL code         512         21.28 M
``cnn_mnist``   ``[N, 1, 28, 28]``   APL ``ToyModel(type='MNIST')``          128         0.421 M
``cnn_cifar10`` ``[N, 3, 32, 32]``   APL ``ToyModel(type='CIFAR10')``        256         1.64 M
``mlp1d``       ``[N, D]``           CPU-sized, vectors of any width D       64          0.093 M
``cnn1d``       ``[N, 40]``          CPU-sized, MNIST-1D (its ConvBase)      64          0.017 M
``cnn_digits``  ``[N, 1, 8, 8]``     CPU-sized, scikit-learn digits          64          0.038 M
==============  ===================  =====================================  ==========  ==========

(Parameter counts are of the backbone alone, with the default input channels and, for
``mlp1d``, MNIST-1D's width D = 40; a linear head
adds ``(feat_dim + 1) * num_classes``.) Every backbone ends in a ReLU, as the reference
backbones do (the ResNets average-pool a ReLU output, APL's CNNs end in ``BN + ReLU``), so
penultimate features are non-negative throughout.

Initialisation follows the source of each arch, the classifier layer included: a linear head
on a published backbone gets the weights its reference code gives its last ``nn.Linear``
(:data:`HEAD_INITS`: LDAM-DRW's ``kaiming_normal_`` for ResNet-32, APL's ``xavier_uniform_``
for ResNet-34 and both CNNs; biases keep PyTorch's default, as in both codes). The cosine and
anchored heads keep their own (LDAM's ``NormedLinear`` init, fixed simplex prototypes), and so
do the CPU-sized nets (PyTorch's defaults).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from palviz.checks import check_choice, check_int, check_num_classes, check_sample_shape, invalid
from palviz.heads import HEAD_KINDS, HEADS, LinearHead

__all__ = [
    "ARCHS",
    "ARCH_INPUTS",
    "HEAD_INITS",
    "Classifier",
    "arch_input",
    "check_arch",
    "input_problem",
    "make_model",
]


class Classifier(nn.Module):
    """A backbone followed by a head.

    Args:
        backbone: maps the input to ``[batch_size, feat_dim]`` penultimate features.
        head: maps ``[batch_size, feat_dim]`` to logits ``[batch_size, num_classes]``.
        feat_dim: width of the backbone's output.
    """

    def __init__(self, backbone: nn.Module, head: nn.Module, feat_dim: int) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = head
        self.feat_dim = int(feat_dim)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate features ``h = backbone(x)``, ``[batch_size, feat_dim]``."""
        return self.backbone(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``[batch_size, num_classes]``."""
        return self.head(self.backbone(x))

    def forward_features(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logits, features)`` from one pass: ``[batch_size, num_classes]``,
        ``[batch_size, feat_dim]``."""
        h = self.backbone(x)
        return self.head(h), h


# --------------------------------------------------------------------------- ResNet-32


class ZeroPadShortcut(nn.Module):
    """Option-A shortcut of He et al. (2016), Sec. 4.2: the identity, subsampled by
    ``stride`` and zero-padded from ``in_planes`` to ``planes`` channels; no parameters.
    ``[N, in_planes, H, W] -> [N, planes, H / stride, W / stride]``."""

    def __init__(self, in_planes: int, planes: int, stride: int) -> None:
        super().__init__()
        self.stride = stride
        extra = planes - in_planes
        # The reference pads planes // 4 on each side (16 -> 32 -> 64): split the extra evenly.
        self.pad = (extra // 2, extra - extra // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x[:, :, :: self.stride, :: self.stride]
        return F.pad(x, (0, 0, 0, 0, *self.pad))


class BasicBlock(nn.Module):
    """Two 3x3 conv + BN layers and a residual: ``relu(bn2(conv2(relu(bn1(conv1 x)))) + s(x))``.

    The shortcut ``s`` is the identity when shapes match; otherwise ``option="A"`` pads with
    zeros (:class:`ZeroPadShortcut`, the CIFAR ResNets) and ``option="B"`` projects with a
    1x1 conv + BN (the CIFAR ResNet-34)."""

    def __init__(self, in_planes: int, planes: int, stride: int = 1, option: str = "A") -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_planes != planes:
            if option == "A":
                self.shortcut = ZeroPadShortcut(in_planes, planes, stride)
            else:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(in_planes, planes, 1, stride=stride, bias=False),
                    nn.BatchNorm2d(planes),
                )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    """3x3 stem (no max-pool) + stages of :class:`BasicBlock` + global average pooling.

    ``[N, C, H, W] -> [N, widths[-1]]``. The first stage keeps the resolution, every later
    stage halves it."""

    def __init__(
        self,
        blocks: tuple[int, ...],
        widths: tuple[int, ...],
        in_channels: int,
        option: str,
    ) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, widths[0], 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        stages, in_planes = [], widths[0]
        for i, (n, planes) in enumerate(zip(blocks, widths, strict=True)):
            strides = [1 if i == 0 else 2] + [1] * (n - 1)
            layers = []
            for s in strides:
                layers.append(BasicBlock(in_planes, planes, s, option))
                in_planes = planes
            stages.append(nn.Sequential(*layers))
        self.stages = nn.Sequential(*stages)
        self.feat_dim = widths[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.stages(out)
        return F.adaptive_avg_pool2d(out, 1).flatten(1)


def resnet32(in_channels: int = 3) -> CifarResNet:
    """ResNet-32 for CIFAR (He et al. 2016, Sec. 4.2; the LDAM-DRW ``resnet32``).

    Source: He, Zhang, Ren, Sun, *Deep Residual Learning for Image Recognition*, CVPR 2016,
    CIFAR-10 architecture with n = 5; as used by LDAM-DRW (Cao et al. 2019,
    ``models/resnet_cifar.py``) and ELM. 3x3 conv stem with 16 channels, three stages of
    five basic blocks with 16, 32, 64 channels (stride 1, 2, 2), option-A zero-padding
    shortcuts (no parameters), global average pooling; Kaiming-normal initialisation of every
    conv (fan-in), BN weights 1 and biases 0. The reference applies the same
    ``kaiming_normal_`` to its classifier layer: :func:`make_model` does so for a linear head
    (:data:`HEAD_INITS`).

    ``[N, in_channels, 32, 32] -> [N, 64]``. Parameters: 463,504 (backbone), 464,154 with a
    10-class linear head (the "0.46 M" of the paper).
    """
    net = CifarResNet((5, 5, 5), (16, 32, 64), in_channels, option="A")
    for m in net.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight)
    return net


def resnet34(in_channels: int = 3) -> CifarResNet:
    """ResNet-34 for CIFAR (the CIFAR-100 column of the APL noise table).

    Source: Ma et al., *Normalized Loss Functions for Deep Learning with Noisy Labels*, ICML
    2020 (APL), ``models.py``: ``ResNet(BasicBlock, [3, 4, 6, 3])`` in the layout of the
    common CIFAR ResNets: 3x3 conv stem with 64 channels and no max-pool, four stages of
    3, 4, 6, 3 basic blocks with 64, 128, 256, 512 channels (stride 1, 2, 2, 2), 1x1 conv + BN
    projection shortcuts, global average pooling; Kaiming-uniform initialisation of every conv
    (fan-in, ReLU gain) as in that code, whose classifier layer is Xavier-uniform (given to a
    linear head by :func:`make_model`, :data:`HEAD_INITS`).

    ``[N, in_channels, 32, 32] -> [N, 512]``. Parameters: 21,276,992 (backbone).
    """
    net = CifarResNet((3, 4, 6, 3), (64, 128, 256, 512), in_channels, option="B")
    for m in net.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_uniform_(m.weight, mode="fan_in", nonlinearity="relu")
    return net


# --------------------------------------------------------------------------- APL CNNs


def _conv_bn_relu(in_channels: int, out_channels: int) -> nn.Sequential:
    """APL's ``ConvBrunch``: 3x3 conv (with bias, "same" padding) + BN + ReLU."""
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, 3, padding=1),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(),
    )


def _apl_init(net: nn.Module) -> nn.Module:
    """APL's ``_reset_prams``: Kaiming-uniform convs (fan-in, ReLU gain), Xavier-uniform
    linear layers (here ``fc1``; its classifier ``fc2`` is the head, :data:`HEAD_INITS`);
    biases keep PyTorch's default."""
    for m in net.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_uniform_(m.weight, mode="fan_in", nonlinearity="relu")
        elif isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
    return net


def _apl_cnn(in_channels: int, stages: list[list[int]], side: int, hidden: int) -> nn.Sequential:
    """APL's toy CNNs as one flat ``nn.Sequential``: for each stage, a ``conv3x3 + BN + ReLU``
    block per width, then a 2x2 max-pool; then ``flatten -> fc(hidden) + BN + ReLU``. ``side``
    is the input's height and width (halved by each stage). Init as APL (:func:`_apl_init`)."""
    layers: list[nn.Module] = []
    channels = in_channels
    for widths in stages:
        for width in widths:
            layers.append(_conv_bn_relu(channels, width))
            channels = width
        layers.append(nn.MaxPool2d(2))
    flat = channels * (side // 2 ** len(stages)) ** 2
    layers += [nn.Flatten(), nn.Linear(flat, hidden), nn.BatchNorm1d(hidden), nn.ReLU()]
    return _apl_init(nn.Sequential(*layers))


def cnn_mnist(in_channels: int = 1) -> nn.Sequential:
    """The 4-layer CNN of the APL noisy-MNIST experiments (``ToyModel(type='MNIST')``).

    Source: Ma et al., ICML 2020, ``models.py`` of the Active-Passive-Losses code:
    ``[conv3x3(32) + BN + ReLU, maxpool 2] -> [conv3x3(64) + BN + ReLU, maxpool 2] ->
    flatten (64 * 7 * 7) -> fc(128) + BN + ReLU``, then the classifier layer (here: the head),
    so two conv and two fully connected layers. Init as APL (:func:`_apl_init`).

    ``[N, in_channels, 28, 28] -> [N, 128]``. Parameters: 420,800 (backbone), 422,090 with a
    10-class linear head.
    """
    return _apl_cnn(in_channels, [[32], [64]], side=28, hidden=128)


def cnn_cifar10(in_channels: int = 3) -> nn.Sequential:
    """The 8-layer CNN of the APL noisy CIFAR-10 experiments (``ToyModel(type='CIFAR10')``).

    Source: Ma et al., ICML 2020, ``models.py`` of the Active-Passive-Losses code (the network
    of Wang et al.'s SCE paper, ICCV 2019): three blocks of two ``conv3x3 + BN + ReLU`` layers
    (64, 128, 196 channels) each followed by a 2x2 max-pool, then
    ``flatten (196 * 4 * 4) -> fc(256) + BN + ReLU``, then the classifier layer (here: the
    head): six conv and two fully connected layers. Init as APL (:func:`_apl_init`).

    ``[N, in_channels, 32, 32] -> [N, 256]``. Parameters: 1,637,224 (backbone), 1,639,794
    with a 10-class linear head.
    """
    return _apl_cnn(in_channels, [[64, 64], [128, 128], [196, 196]], side=32, hidden=256)


# --------------------------------------------------------------------------- CPU-sized nets


def mlp1d(in_channels: int = 1, width: int = 40) -> nn.Sequential:
    """A CPU-sized MLP for vectors of any width ``D`` (MNIST-1D's 40-sample signals by default).

    ``D -> 256 -> 256 -> 64``, each linear layer followed by ReLU; PyTorch's default init.
    The MNIST-1D paper's MLP baseline (100 hidden units) reaches about 68 % test accuracy;
    this one is of that kind: 72 % on the default MNIST-1D split (4,000 training signals)
    after 30 epochs of SGD (lr 0.1, cosine, momentum 0.9, weight decay 5e-4, batch 128). It is
    the network of a vector dataset registered without one (:func:`palviz.data.register_dataset`),
    built for the dataset's width (:func:`make_model`'s ``shape``).

    ``[N, D]`` (or ``[N, in_channels, D]``, flattened) ``-> [N, 64]``, ``D = width``.
    Parameters: ``256 (in_channels D + 1) + 82,240`` (backbone), 92,736 for ``D = 40``.
    """
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(width * in_channels, 256),
        nn.ReLU(),
        nn.Linear(256, 256),
        nn.ReLU(),
        nn.Linear(256, 64),
        nn.ReLU(),
    )


class _Signal(nn.Module):
    """``[N, L] -> [N, 1, L]``; ``[N, C, L]`` passes through."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.unsqueeze(1) if x.dim() == 2 else x


def cnn1d(in_channels: int = 1) -> nn.Sequential:
    """A CPU-sized 1-D conv net for MNIST-1D.

    After the ``ConvBase`` of the MNIST-1D code (Greydanus 2020: three strided ``Conv1d``
    layers, then a linear layer), with BN after each conv and a 64-d ReLU feature layer:
    ``conv(k5, s2) 32 -> conv(k3, s2) 32 -> conv(k3, s2) 32`` (each + BN + ReLU; length
    40 -> 19 -> 10 -> 5), ``flatten (32 * 5) -> fc(64) + ReLU``. MNIST-1D's own benchmarks put
    such small conv nets above 90 % test accuracy; this one reaches 96 % with the recipe
    given for :func:`mlp1d`, and one epoch over 10,000 signals takes about 0.4 s on two CPU
    cores (``benchmarks/bench_fit.py``).

    ``[N, 40]`` (or ``[N, in_channels, 40]``) ``-> [N, 64]``.
    Parameters: 16,896 (backbone, ``in_channels=1``).
    """
    return nn.Sequential(
        _Signal(),
        nn.Conv1d(in_channels, 32, 5, stride=2, padding=1),
        nn.BatchNorm1d(32),
        nn.ReLU(),
        nn.Conv1d(32, 32, 3, stride=2, padding=1),
        nn.BatchNorm1d(32),
        nn.ReLU(),
        nn.Conv1d(32, 32, 3, stride=2, padding=1),
        nn.BatchNorm1d(32),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(32 * 5, 64),
        nn.ReLU(),
    )


def cnn_digits(in_channels: int = 1) -> nn.Sequential:
    """A CPU-sized CNN for scikit-learn's 8x8 digits.

    ``conv3x3 16 + BN + ReLU -> conv3x3 32 + BN + ReLU -> maxpool 2 -> flatten (32 * 4 * 4)
    -> fc(64) + ReLU``; PyTorch's default init.

    ``[N, in_channels, 8, 8] -> [N, 64]``. Parameters: 37,728 (backbone, ``in_channels=1``).
    """
    return nn.Sequential(
        nn.Conv2d(in_channels, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 4 * 4, 64),
        nn.ReLU(),
    )


# --------------------------------------------------------------------------- registry

# arch -> (backbone constructor, feat_dim, default in_channels)
_BACKBONES = {
    "resnet32": (resnet32, 64, 3),
    "resnet34": (resnet34, 512, 3),
    "cnn_mnist": (cnn_mnist, 128, 1),
    "cnn_cifar10": (cnn_cifar10, 256, 3),
    "mlp1d": (mlp1d, 64, 1),
    "cnn1d": (cnn1d, 64, 1),
    "cnn_digits": (cnn_digits, 64, 1),
}

ARCHS: tuple[str, ...] = tuple(_BACKBONES)
"""The architectures :func:`make_model` knows."""

ARCH_INPUTS: dict[str, tuple[int | None, ...]] = {
    "resnet32": (3, None, None),  # global average pooling: any height and width
    "resnet34": (3, None, None),
    "cnn_mnist": (1, 28, 28),
    "cnn_cifar10": (3, 32, 32),
    "mlp1d": (None,),  # built for the width of its input (make_model's shape)
    "cnn1d": (40,),
    "cnn_digits": (1, 8, 8),
}
"""What each arch reads, with its default ``in_channels``: the shape of one sample, ``None``
where any size will do (``(3, None, None)``: RGB images of any size; ``(None,)``: vectors of
any width). A run pairs an arch with a dataset only if it reads the dataset's samples
(:func:`input_problem`)."""


def arch_input(arch: str) -> str:
    """What ``arch`` reads, in words: ``"[N, 40]"``, ``"[N, 3, H, W]"``."""
    check_choice("arch", arch, ARCHS)
    names = iter("HW") if len(ARCH_INPUTS[arch]) == 3 else iter("D")
    dims = [str(d) if d is not None else next(names) for d in ARCH_INPUTS[arch]]
    return f"[N, {', '.join(dims)}]"


def input_problem(arch: str, shape: tuple[int, ...]) -> str | None:
    """Why ``arch`` cannot read samples of ``shape`` (one sample, e.g. a dataset's
    ``DatasetInfo.shape``), in words; ``None`` when it reads them."""
    wanted = ARCH_INPUTS[check_choice("arch", arch, ARCHS)]
    if len(wanted) == len(shape) and all(
        w in (None, d) for w, d in zip(wanted, shape, strict=True)
    ):
        return None
    given = f"[N, {', '.join(map(str, shape))}]"
    return f"{arch} reads inputs {arch_input(arch)}, not {given}"


def check_arch(name: str, arch: Any, reads: Any = None) -> str:
    """``arch`` if it is one of :data:`ARCHS` and, given ``reads`` (a dataset's
    :class:`~palviz.data.DatasetInfo`, or anything with its ``name`` and ``shape``), reads
    that dataset's samples; else ``ValueError`` naming ``name``, the arch, the dataset and
    what the arch reads."""
    check_choice(name, arch, ARCHS)
    problem = None if reads is None else input_problem(arch, tuple(reads.shape))
    if problem:
        raise ValueError(f"{name} {arch!r} cannot read dataset {reads.name!r}: {problem}")
    return arch


# The reference initialisations of a classifier layer's weight, by name, with PyTorch's
# defaults as the reference code calls them: ``kaiming_normal_(w)`` is fan-in, gain sqrt(2)
# (std sqrt(2 / fan_in)); ``xavier_uniform_(w)`` is U(-b, b), b = sqrt(6 / (fan_in + fan_out)).
_INITS = {"kaiming_normal": nn.init.kaiming_normal_, "xavier_uniform": nn.init.xavier_uniform_}

HEAD_INITS: dict[str, str | None] = {
    "resnet32": "kaiming_normal",  # LDAM-DRW models/resnet_cifar.py, _weights_init
    "resnet34": "xavier_uniform",  # APL models.py, ResNet._reset_prams
    "cnn_mnist": "xavier_uniform",  # APL models.py, ToyModel._reset_prams
    "cnn_cifar10": "xavier_uniform",  # APL models.py, ToyModel._reset_prams
    "mlp1d": None,
    "cnn1d": None,
    "cnn_digits": None,
}
"""How :func:`make_model` initialises the weight of a linear head on each arch, as the arch's
reference code initialises its classifier layer; ``None``: PyTorch's default
(``nn.Linear``'s Kaiming-uniform with ``a = sqrt(5)``, std ``1 / sqrt(3 fan_in)``). The bias
keeps PyTorch's default everywhere, as in the reference codes."""


def make_model(
    arch: str,
    num_classes: int,
    head: str = "linear",
    *,
    in_channels: int | None = None,
    shape: tuple[int, ...] | None = None,
    **head_kw,
) -> Classifier:
    """Build ``arch``'s backbone and put a ``head`` of ``num_classes`` on it.

    Args:
        arch: one of :data:`ARCHS`.
        num_classes: number of classes ``k``.
        head: a kind of :func:`palviz.heads.make_head`: ``"linear"`` (its weight initialised
            as ``arch``'s reference code does, :data:`HEAD_INITS`), ``"cosine"``,
            ``"anchored"``.
        in_channels: input channels (signal channels for the 1-D nets); ``None`` means the
            arch's own (3 for the CIFAR nets, 1 for MNIST, MNIST-1D and digits).
        shape: the shape of one sample the model is built for, e.g. a dataset's
            ``DatasetInfo.shape``: it must be one ``arch`` reads (:data:`ARCH_INPUTS`), and it
            sets the input width ``D`` of ``mlp1d``. ``None``: the arch's own (``D = 40``).
        **head_kw: passed to the head, e.g. ``normalize=True, scale=10.0`` for FNPAL.

    Returns:
        A :class:`Classifier` mapping inputs to ``[batch_size, num_classes]`` logits.
    """
    check_choice("arch", arch, ARCHS)
    num_classes = check_num_classes(num_classes)
    build, feat_dim, default_channels = _BACKBONES[arch]
    channels = default_channels if in_channels is None else check_int("in_channels", in_channels, 1)
    sized = {}
    if shape is not None:
        dims = check_sample_shape("shape", shape)
        if input_problem(arch, dims):
            raise invalid("shape", shape, f"one {arch} reads, {arch_input(arch)}")
        if arch == "mlp1d":  # the one backbone built for the size of its input
            sized["width"] = dims[0]
    backbone = build(channels, **sized)
    head_module = HEADS[check_choice("head", head, HEAD_KINDS)](feat_dim, num_classes, **head_kw)
    if HEAD_INITS[arch] is not None and isinstance(head_module, LinearHead):
        _INITS[HEAD_INITS[arch]](head_module.fc.weight)
    return Classifier(backbone, head_module, feat_dim)

"""Specifications of the comparisons added beside the papers' own losses: logit-adjusted cross
entropy (``palviz.losses.logit_adjusted``) and the influence-balanced focal loss
(``palviz.losses.influence_balanced``), docs/reference.md 2.

Every loss value is compared with an expected value computed here, independently of palviz,
from the formula: float64 numpy, one sample at a time, with an explicit log-sum-exp. Then: the
arguments' checks, the registry and profiles, the two hooks of ``palviz.train.fit`` the IB
loss uses (``set_epoch``, ``needs_features``), and one smoke-size run of each table method.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from test_losses import (  # the independent references, shared with test_losses
    C10,
    CIFAR10_LT_100,
    SHAPE_IDS,
    SHAPES,
    TOL,
    class_weights,
    counts_for,
    lse,
    value,
)
from torch import nn

from palviz.experiments import methods, plan, recipes, runcache
from palviz.losses import (
    LOSSES,
    ClassWeightedLoss,
    IBFocalLoss,
    LogitAdjustedLoss,
    class_balanced_weights,
    inverse_frequency_weights,
    log_class_prior,
    make_loss,
)
from palviz.models import make_model
from palviz.train import TrainConfig, fit

# ---------------------------------------------------------------------------------------------
# Independent references: float64, one sample at a time
# ---------------------------------------------------------------------------------------------


def weighted_mean(terms, y, w) -> float:
    """PyTorch's weighted mean: sum_i w_{y_i} t_i / sum_i w_{y_i}."""
    if w is None:
        return float(np.mean(terms))
    wy = np.array([w[t] for t in y])
    return float(np.sum(wy * np.asarray(terms)) / np.sum(wy))


def ref_la_ce(z, y, counts, tau=1.0, w=None) -> float:
    """-log e^{z_y + tau log pi_y} / sum_j e^{z_j + tau log pi_j}, pi_j = n_j / sum n."""
    total = float(sum(counts))
    log_pi = np.array([math.log(n / total) for n in counts])
    terms = []
    for i in range(len(y)):
        a = z[i] + tau * log_pi
        terms.append(lse(a) - a[y[i]])
    return weighted_mean(terms, y, w)


def ref_ib_focal(z, y, h, alpha=1000.0, gamma=1.0, w=None) -> float:
    """mean_i (1 - e^{-ce_i})^gamma ce_i alpha / (||p_i - e_{y_i}||_1 ||h_i||_1 + 1e-3)."""
    terms = []
    for i in range(len(y)):
        c = len(z[i])
        log_norm = lse(z[i])
        wy = 1.0 if w is None else w[y[i]]
        ce = wy * (log_norm - z[i, y[i]])
        p = [math.exp(z[i, j] - log_norm) for j in range(c)]
        grad_l1 = sum(abs(p[j] - (1.0 if j == y[i] else 0.0)) for j in range(c))
        h_l1 = sum(abs(v) for v in h[i])
        ib = alpha / (grad_l1 * h_l1 + 1e-3)
        terms.append((1.0 - math.exp(-ce)) ** gamma * ce * ib)
    return float(np.mean(terms))


def ref_inverse_frequency(counts) -> np.ndarray:
    w = np.array([1.0 / n for n in counts])
    return w * len(counts) / w.sum()


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------


def batch(n: int, c: int, seed: int, spread: float = 3.0):
    """Seeded float32 logits ``[n, c]`` and targets ``[n]``, with exact float64 copies."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, c, generator=g) * spread
    targets = torch.randint(0, c, (n,), generator=g)
    return logits, targets, logits.double().numpy(), targets.numpy()


def features_for(n: int, d: int, seed: int, relu: bool = True) -> torch.Tensor:
    """Seeded float32 penultimate features ``[n, d]`` (non-negative, as after a ReLU)."""
    h = torch.randn(n, d, generator=torch.Generator().manual_seed(seed))
    return h.relu() if relu else h


def ib_stage(loss: IBFocalLoss) -> IBFocalLoss:
    """``loss`` switched to its IB stage."""
    loss.ib_active = True
    return loss


# ---------------------------------------------------------------------------------------------
# The references themselves
# ---------------------------------------------------------------------------------------------


def test_references_reproduce_hand_computed_values():
    # two classes, counts 3:1, zero logits, target the rare class: -log(1/4 / (3/4 + 1/4))
    z, y = np.zeros((1, 2)), np.array([1])
    assert ref_la_ce(z, y, [3, 1]) == pytest.approx(math.log(4.0), abs=1e-12)
    # tau = 0 is plain CE: log 2
    assert ref_la_ce(z, y, [3, 1], tau=0.0) == pytest.approx(math.log(2.0), abs=1e-12)
    # IB, gamma = 0: CE log 2, ||p - e_y||_1 = 1, ||h||_1 = 2 -> log 2 * alpha / (2 + 1e-3)
    h = np.array([[1.0, -1.0]])
    expected = math.log(2.0) * 10.0 / (2.0 + 1e-3)
    assert ref_ib_focal(z, y, h, alpha=10.0, gamma=0.0) == pytest.approx(expected, abs=1e-12)
    np.testing.assert_allclose(ref_inverse_frequency([3, 1]), [0.5, 1.5])


# ---------------------------------------------------------------------------------------------
# Logit-adjusted cross entropy
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weighted"])
@pytest.mark.parametrize("tau", [0.0, 0.5, 1.0, 2.0])
@pytest.mark.parametrize(("n", "c"), SHAPES, ids=SHAPE_IDS)
def test_la_ce_is_ce_of_logits_shifted_by_tau_log_prior(n, c, tau, weighted):
    counts = counts_for(c)
    logits, targets, z, y = batch(n, c, seed=n + c)
    w = class_weights(c, seed=c) if weighted else None
    loss = LogitAdjustedLoss(counts, tau=tau, weight=w)
    assert value(loss(logits, targets)) == pytest.approx(ref_la_ce(z, y, counts, tau, w), abs=TOL)


def test_la_ce_with_tau_zero_or_uniform_counts_is_plain_ce():
    logits, targets, _, _ = batch(32, 10, seed=1)
    ce = value(nn.functional.cross_entropy(logits, targets))
    assert value(LogitAdjustedLoss(CIFAR10_LT_100, tau=0.0)(logits, targets)) == pytest.approx(
        ce, abs=1e-6
    )
    # a constant shift of every logit leaves the softmax unchanged
    assert value(LogitAdjustedLoss([7] * 10)(logits, targets)) == pytest.approx(ce, abs=1e-6)


def test_la_ce_gives_a_rare_target_a_margin_against_a_frequent_class():
    """With equal logits the rare class's target loses against the frequent one: the loss of a
    rare target exceeds CE, that of a frequent target falls below it."""
    loss = LogitAdjustedLoss([900, 100])
    z = torch.zeros(1, 2)
    rare, frequent = value(loss(z, torch.tensor([1]))), value(loss(z, torch.tensor([0])))
    assert rare > math.log(2) > frequent
    assert rare == pytest.approx(-math.log(0.1), abs=1e-6)


def test_la_ce_log_prior_is_a_float32_buffer_of_log_frequencies():
    loss = LogitAdjustedLoss(CIFAR10_LT_100)
    assert "log_prior" in dict(loss.named_buffers())
    assert loss.log_prior.dtype == torch.float32
    expected = np.log(np.array(CIFAR10_LT_100) / sum(CIFAR10_LT_100))
    np.testing.assert_allclose(loss.log_prior.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(log_class_prior(CIFAR10_LT_100).numpy(), expected, rtol=1e-6)


def test_la_ce_reassigning_weight_reweights_it_for_drw():
    loss = LogitAdjustedLoss(CIFAR10_LT_100)
    logits, targets, z, y = batch(64, 10, seed=2)
    plain = value(loss(logits, targets))
    w = class_balanced_weights(CIFAR10_LT_100)
    loss.weight = w
    reweighted = value(loss(logits, targets))
    assert plain == pytest.approx(ref_la_ce(z, y, CIFAR10_LT_100), abs=TOL)
    assert reweighted == pytest.approx(
        ref_la_ce(z, y, CIFAR10_LT_100, w=w.double().numpy()), abs=TOL
    )
    assert abs(reweighted - plain) > 1e-3
    loss.weight = None
    assert value(loss(logits, targets)) == pytest.approx(plain, abs=1e-7)


def test_la_ce_float64_logits_stay_float64_and_float16_are_upcast():
    logits, targets, z, y = batch(16, 10, seed=3)
    loss = LogitAdjustedLoss(CIFAR10_LT_100)
    out = loss(logits.double(), targets)
    assert out.dtype == torch.float64
    assert value(out) == pytest.approx(ref_la_ce(z, y, CIFAR10_LT_100), abs=1e-6)
    half = logits.half()
    out = loss(half, targets)
    assert out.dtype == torch.float32
    assert value(out) == pytest.approx(ref_la_ce(half.double().numpy(), y, CIFAR10_LT_100), abs=TOL)


def test_class_weighted_loss_is_a_public_base_with_a_checked_weight():
    loss = ClassWeightedLoss(weight=[1.0, 2.0], num_classes=2)
    assert loss.weight.dtype == torch.float32 and loss.weight.tolist() == [1.0, 2.0]
    loss.weight = None
    assert loss.weight is None
    with pytest.raises(ValueError, match=r"weight must have one entry per class \(2\), got 3"):
        loss.weight = [1.0, 1.0, 1.0]


# ---------------------------------------------------------------------------------------------
# Influence-balanced focal loss
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("reweight", [True, False], ids=["ib-weights", "unweighted"])
@pytest.mark.parametrize("gamma", [0.0, 1.0, 2.0])
@pytest.mark.parametrize(("n", "c"), SHAPES, ids=SHAPE_IDS)
def test_ib_focal_weights_each_sample_by_its_inverse_influence(n, c, gamma, reweight):
    counts = counts_for(c)
    logits, targets, z, y = batch(n, c, seed=n * c + 1)
    h = features_for(n, 16, seed=n + c)
    loss = ib_stage(IBFocalLoss(counts, alpha=1000.0, gamma=gamma, reweight=reweight))
    w = ref_inverse_frequency(counts) if reweight else None
    expected = ref_ib_focal(z, y, h.double().numpy(), 1000.0, gamma, w)
    got = value(loss(logits, targets, features=h))
    assert got == pytest.approx(expected, rel=TOL, abs=TOL)


def test_ib_focal_takes_the_l1_norm_of_signed_features_and_other_alphas():
    logits, targets, z, y = batch(20, 10, seed=4)
    h = features_for(20, 8, seed=5, relu=False)
    loss = ib_stage(IBFocalLoss(CIFAR10_LT_100, alpha=3.0, gamma=1.0))
    w = ref_inverse_frequency(CIFAR10_LT_100)
    expected = ref_ib_focal(z, y, h.double().numpy(), 3.0, 1.0, w)
    assert value(loss(logits, targets, features=h)) == pytest.approx(expected, abs=TOL)


def test_ib_first_stage_is_plain_unweighted_ce_and_ignores_the_features():
    logits, targets, _, _ = batch(32, 10, seed=6)
    loss = IBFocalLoss(CIFAR10_LT_100)
    assert loss.ib_active is False and loss.weight is not None
    ce = value(nn.functional.cross_entropy(logits, targets))
    assert value(loss(logits, targets)) == pytest.approx(ce, abs=1e-6)
    h = features_for(32, 16, seed=7)
    assert value(loss(logits, targets, features=h)) == pytest.approx(ce, abs=1e-6)


def test_ib_stage_starts_at_the_fraction_of_the_run():
    loss = IBFocalLoss(CIFAR10_LT_100, start_fraction=0.5)
    assert loss.start_epoch(200) == 100  # the reference's --start_ib_epoch 100 of 200
    loss.set_epoch(99, 200)
    assert not loss.ib_active
    loss.set_epoch(100, 200)
    assert loss.ib_active
    loss.set_epoch(0, 200)  # a pure function of the epoch: it switches back
    assert not loss.ib_active
    assert IBFocalLoss(CIFAR10_LT_100, start_fraction=0.8).start_epoch(90) == 72
    first = IBFocalLoss(CIFAR10_LT_100, start_fraction=0.0)
    first.set_epoch(0, 10)
    assert first.ib_active
    never = IBFocalLoss(CIFAR10_LT_100, start_fraction=1.0)
    never.set_epoch(9, 10)
    assert not never.ib_active


def test_the_table_method_starts_ib_where_the_profile_first_cuts_the_learning_rate():
    m = methods.method("long_tailed", "IB-Focal")
    assert m.loss == "ib_focal" and not m.drw
    kw = m.base.kwargs()
    assert kw == {"alpha": 1000.0, "gamma": 1.0, "start_fraction": 0.8}
    for profile in ("full", "paper"):
        train = recipes.long_tailed_setup(profile)["train"]
        loss = make_loss("ib_focal", cls_num_list=CIFAR10_LT_100, **kw)
        assert loss.start_epoch(train["epochs"]) == train["milestones"][0], profile


def test_ib_gradients_flow_through_the_influence_term_as_in_the_reference():
    """The gradient with respect to logits and features matches central differences of the
    float64 reference formula (so the influence term is not detached)."""
    logits, targets, z, y = batch(5, 4, seed=8, spread=1.0)
    h = features_for(5, 3, seed=9) + 0.1
    counts = [40, 20, 10, 5]
    w = ref_inverse_frequency(counts)
    loss = ib_stage(IBFocalLoss(counts, alpha=2.0, gamma=1.0))
    zt = logits.double().requires_grad_(True)
    ht = h.double().requires_grad_(True)
    loss(zt, targets, features=ht).backward()
    hd = h.double().numpy()
    eps = 1e-6
    for array, grad in ((z, zt.grad), (hd, ht.grad)):
        numeric = np.zeros_like(array)
        for idx in np.ndindex(array.shape):
            up, down = array.copy(), array.copy()
            up[idx] += eps
            down[idx] -= eps
            if array is z:
                f_up, f_down = (
                    ref_ib_focal(up, y, hd, 2.0, 1.0, w),
                    ref_ib_focal(down, y, hd, 2.0, 1.0, w),
                )
            else:
                f_up, f_down = (
                    ref_ib_focal(z, y, up, 2.0, 1.0, w),
                    ref_ib_focal(z, y, down, 2.0, 1.0, w),
                )
            numeric[idx] = (f_up - f_down) / (2 * eps)
        np.testing.assert_allclose(grad.numpy(), numeric, atol=1e-5, rtol=1e-4)
    assert float(ht.grad.abs().sum()) > 1e-3


def test_ib_weights_are_the_reference_inverse_frequencies_and_reassignable():
    np.testing.assert_allclose(
        inverse_frequency_weights(CIFAR10_LT_100).numpy(),
        ref_inverse_frequency(CIFAR10_LT_100),
        rtol=1e-6,
    )
    assert IBFocalLoss(CIFAR10_LT_100, reweight=False).weight is None
    loss = ib_stage(IBFocalLoss(CIFAR10_LT_100))
    logits, targets, z, y = batch(16, 10, seed=10)
    h = features_for(16, 8, seed=11)
    cb = class_balanced_weights(CIFAR10_LT_100)
    loss.weight = cb  # as DRW would
    expected = ref_ib_focal(z, y, h.double().numpy(), 1000.0, 1.0, cb.double().numpy())
    assert value(loss(logits, targets, features=h)) == pytest.approx(expected, rel=TOL, abs=TOL)


def test_ib_upcasts_low_precision_logits_and_features():
    logits, targets, _, y = batch(16, 10, seed=12)
    h = features_for(16, 8, seed=13)
    loss = ib_stage(IBFocalLoss(CIFAR10_LT_100))
    out = loss(logits.half(), targets, features=h.half())
    assert out.dtype == torch.float32
    expected = ref_ib_focal(
        logits.half().double().numpy(),
        y,
        h.half().double().numpy(),
        1000.0,
        1.0,
        ref_inverse_frequency(CIFAR10_LT_100),
    )
    assert value(out) == pytest.approx(expected, rel=TOL, abs=TOL)


# ---------------------------------------------------------------------------------------------
# Bad arguments: the message names the argument, the value and what is allowed
# ---------------------------------------------------------------------------------------------

INVALID_ARGUMENTS = [
    (lambda: LogitAdjustedLoss([]), ValueError, ["cls_num_list", "[]"]),
    (lambda: LogitAdjustedLoss([10, 0, 5]), ValueError, ["cls_num_list", "[10, 0, 5]", "> 0"]),
    (lambda: LogitAdjustedLoss(["a", "b"]), TypeError, ["cls_num_list", "'a'"]),
    (lambda: LogitAdjustedLoss(C10, tau=-1.0), ValueError, ["tau must be >= 0, got -1.0"]),
    (lambda: LogitAdjustedLoss(C10, tau="one"), TypeError, ["tau", "'one'"]),
    (lambda: LogitAdjustedLoss(C10, tau=float("nan")), ValueError, ["tau", "nan"]),
    (lambda: LogitAdjustedLoss(C10, weight=torch.ones(9)), ValueError, ["weight", "10", "9"]),
    (lambda: LogitAdjustedLoss(C10, weight=[1.0, -1.0] * 5), ValueError, ["weight", ">= 0"]),
    (lambda: IBFocalLoss([]), ValueError, ["cls_num_list", "[]"]),
    (lambda: IBFocalLoss([5, -1]), ValueError, ["cls_num_list", "[5, -1]"]),
    (lambda: IBFocalLoss(C10, alpha=0.0), ValueError, ["alpha must be > 0, got 0.0"]),
    (lambda: IBFocalLoss(C10, alpha=-5), ValueError, ["alpha", "-5"]),
    (lambda: IBFocalLoss(C10, gamma=-1.0), ValueError, ["gamma must be >= 0, got -1.0"]),
    (
        lambda: IBFocalLoss(C10, start_fraction=1.5),
        ValueError,
        ["start_fraction must be in [0, 1], got 1.5"],
    ),
    (lambda: IBFocalLoss(C10, start_fraction=-0.1), ValueError, ["start_fraction", "-0.1"]),
    (lambda: IBFocalLoss(C10, reweight="yes"), TypeError, ["reweight must be True or False"]),
    (lambda: IBFocalLoss(C10).set_epoch(-1, 10), ValueError, ["epoch must be >= 0, got -1"]),
    (lambda: IBFocalLoss(C10).set_epoch(0, 0), ValueError, ["epochs must be >= 1, got 0"]),
    (lambda: IBFocalLoss(C10).set_epoch(1.5, 10), TypeError, ["epoch must be an integer"]),
]


@pytest.mark.parametrize(
    ("build", "error", "fragments"),
    INVALID_ARGUMENTS,
    ids=[f"{i:02d}-{case[2][0][:24]}" for i, case in enumerate(INVALID_ARGUMENTS)],
)
def test_invalid_arguments_fail_naming_argument_value_and_allowed(build, error, fragments):
    with pytest.raises(error) as err:
        build()
    for fragment in fragments:
        assert fragment in str(err.value), (fragment, str(err.value))


def test_ib_stage_needs_features_of_the_batch():
    logits, targets, _, _ = batch(4, 10, seed=14)
    loss = ib_stage(IBFocalLoss(C10))
    with pytest.raises(ValueError, match="features must be given in the IB stage.*got None"):
        loss(logits, targets)
    with pytest.raises(ValueError, match=r"features must be a 2-D tensor.*got \(4,\)"):
        loss(logits, targets, features=torch.ones(4))
    with pytest.raises(ValueError, match=r"features must be \[N, D\] with N = 4.*got \(3, 8\)"):
        loss(logits, targets, features=torch.ones(3, 8))
    with pytest.raises(ValueError, match="features must be a floating-point tensor"):
        loss(logits, targets, features=torch.ones(4, 8, dtype=torch.long))
    with pytest.raises(ValueError, match="features must be a 2-D tensor.*'list'"):
        loss(logits, targets, features=[[1.0]] * 4)


@pytest.mark.parametrize(
    "loss", [LogitAdjustedLoss(C10), IBFocalLoss(C10)], ids=lambda x: type(x).__name__
)
def test_logits_with_the_wrong_number_of_classes_are_rejected(loss):
    with pytest.raises(ValueError, match=r"C=5.*num_classes=10"):
        loss(torch.zeros(4, 5), torch.tensor([0, 1, 2, 3]))


# ---------------------------------------------------------------------------------------------
# Registry, methods and profiles
# ---------------------------------------------------------------------------------------------


def test_both_losses_are_registered_with_their_facts_head_and_methods():
    assert LOSSES["la_ce"].factory is LogitAdjustedLoss
    assert LOSSES["ib_focal"].factory is IBFocalLoss
    for name in ("la_ce", "ib_focal"):
        assert LOSSES[name].needs == ("class_counts",) and LOSSES[name].head == "linear"
    assert make_loss("la_ce", cls_num_list=C10).tau == 1.0
    lt = methods.methods_of("long_tailed")
    for label in ("LA-CE", "LA-CE+PAL", "IB-Focal", "IB-Focal+PAL"):
        assert label in lt
    assert methods.method("long_tailed", "LA-CE").base.kwargs() == {"tau": 1.0}
    assert recipes.lt_method("LA-CE", pal=True)["head_kw"] == {"normalize": False, "scale": 1.0}
    table = methods.method_table("long_tailed")
    assert "| LA-CE | `LogitAdjustedLoss` (`la_ce`) | tau=1.0 | linear | no |" in table


def test_full_and_paper_profiles_train_them_and_quick_does_not():
    for profile in ("full", "paper"):
        setup = recipes.long_tailed_setup(profile)
        assert {"LA-CE", "IB-Focal"} <= set(setup["methods"]) & set(setup["pal_methods"])
    quick = recipes.long_tailed_setup("quick")
    assert not {"LA-CE", "IB-Focal"} & (set(quick["methods"]) | set(quick["pal_methods"]))
    labels = [s.label for s in plan.planned_specs("06", "full")]
    for label in ("LA-CE", "IB-Focal"):
        # with and without PAL, at 5 seeds and 3 imbalance ratios
        assert labels.count(label) == 15 and labels.count(label + "+PAL") == 15
    assert not {s.label for s in plan.planned_specs("06", "quick")} & {"LA-CE", "IB-Focal"}


# ---------------------------------------------------------------------------------------------
# palviz.train.fit: set_epoch and features
# ---------------------------------------------------------------------------------------------


def blobs(n: int, num_classes: int = 4, dim: int = 40, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(num_classes, dim, generator=torch.Generator().manual_seed(123))
    y = torch.arange(n) % num_classes
    return 0.6 * centres[y] + torch.randn(n, dim, generator=g), y


def quiet(**kw) -> TrainConfig:
    kw = {"schedule": "constant", "lr": 0.01, "batch_size": 32, "progress": False, **kw}
    return TrainConfig(**kw)


class RecordingIB(IBFocalLoss):
    """The IB loss, recording each epoch it is set to and the features of each call."""

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.epochs_set: list[tuple[int, int, bool]] = []
        self.feature_shapes: list[tuple[int, ...]] = []

    def set_epoch(self, epoch: int, epochs: int) -> None:
        super().set_epoch(epoch, epochs)
        self.epochs_set.append((epoch, epochs, self.ib_active))

    def forward(self, logits, targets, features=None):
        self.feature_shapes.append(tuple(features.shape))
        return super().forward(logits, targets, features=features)


def test_fit_sets_the_epoch_and_passes_the_penultimate_features():
    torch.manual_seed(0)
    net = make_model("mlp1d", 4)
    loss = RecordingIB([40, 40, 40, 40], alpha=1.0, start_fraction=0.5)
    record = fit(net, loss, blobs(64), blobs(32, seed=1), quiet(epochs=4))
    assert loss.epochs_set == [(0, 4, False), (1, 4, False), (2, 4, True), (3, 4, True)]
    assert set(loss.feature_shapes) == {(32, net.feat_dim)} and len(loss.feature_shapes) == 8
    assert all(math.isfinite(row["train_loss"]) for row in record.history)


def test_fit_passes_the_features_the_head_maps_to_the_logits():
    checks = []

    class Probe(nn.Module):
        needs_features = True

        def forward(self, logits, targets, features=None):
            # the penultimate features: the head's input, from the same pass as the logits
            checks.append(torch.equal(net.head(features), logits))
            return nn.functional.cross_entropy(logits, targets)

    torch.manual_seed(0)
    net = make_model("mlp1d", 4)
    fit(net, Probe(), blobs(64), None, quiet(epochs=2))
    assert checks == [True] * 4


def test_resuming_an_ib_run_switches_the_stage_where_an_uninterrupted_run_does(tmp_path):
    train, test = blobs(96), blobs(32, seed=1)
    cfg = quiet(epochs=4, seed=2)

    def new_model(seed):
        torch.manual_seed(seed)
        return make_model("mlp1d", 4)

    straight = new_model(1)
    expected = fit(straight, IBFocalLoss([24] * 4, alpha=1.0), train, test, cfg)

    class Interrupting(IBFocalLoss):
        calls = 0

        def forward(self, logits, targets, features=None):
            Interrupting.calls += 1
            if Interrupting.calls == 2 * 3 + 1:  # the first batch of epoch 2
                raise KeyboardInterrupt
            return super().forward(logits, targets, features=features)

    path = tmp_path / "run.pt"
    with pytest.raises(KeyboardInterrupt):
        fit(new_model(1), Interrupting([24] * 4, alpha=1.0), train, test, cfg, checkpoint_path=path)
    resumed = new_model(5)
    loss = IBFocalLoss([24] * 4, alpha=1.0)
    record = fit(resumed, loss, train, test, cfg, checkpoint_path=path, resume=True)
    assert loss.ib_active  # set by fit, not carried over
    for (name, a), b in zip(
        straight.state_dict().items(), resumed.state_dict().values(), strict=True
    ):
        assert torch.equal(a, b), name
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in expected.history]
    assert strip == [{k: v for k, v in r.items() if k != "seconds"} for r in record.history]


# ---------------------------------------------------------------------------------------------
# Smoke-size runs of the table methods, through the run cache
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pal", [False, True], ids=["plain", "PAL"])
@pytest.mark.parametrize("method", ["LA-CE", "IB-Focal"])
def test_each_method_trains_end_to_end_at_smoke_size(method, pal, tmp_path, monkeypatch):
    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "runs"))
    monkeypatch.delenv("PALVIZ_TOY", raising=False)
    # 5 epochs, so that IB-Focal's stage (from 80 %, epoch 4) is reached
    spec = recipes.lt_spec(method, pal=pal, profile="smoke", epochs=5)
    result = runcache.run(spec)
    assert tmp_path in result.path.parents
    assert 0.0 <= result.metrics["last_acc"] <= 1.0
    history = result.metrics["history"]
    assert len(history) == 5 and all(math.isfinite(r["train_loss"]) for r in history)
    assert result.metrics["last_acc"] > 0.15  # above chance (0.1) on MNIST-1D-LT

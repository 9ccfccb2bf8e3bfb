"""Specification of palviz.train: the schedule, the loop, DRW, clipping, checkpoints, resume."""

from __future__ import annotations

import dataclasses
import json
import math
import re

import numpy as np
import pytest
import torch
from torch import nn

from palviz.evaluation import COLLAPSE_KEYS
from palviz.losses import CrossEntropyLoss, MAELoss, class_balanced_weights
from palviz.models import make_model
from palviz.train import (
    CHECKPOINT_FORMAT,
    FitRecord,
    TrainConfig,
    evaluate,
    evaluated_epochs,
    fit,
    learning_rate,
    reading_epochs,
    resolve_device,
)

CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2023, 0.1994, 0.2010)


def blobs(n: int, num_classes: int = 4, dim: int = 40, seed: int = 0):
    """MNIST-1D-shaped vectors: ``num_classes`` Gaussian blobs in ``dim`` dimensions."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(num_classes, dim, generator=torch.Generator().manual_seed(123))
    y = torch.arange(n) % num_classes
    x = 0.6 * centres[y] + torch.randn(n, dim, generator=g)
    return x, y


def cifar_like(n: int, num_classes: int = 10, seed: int = 0, size: int = 32):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 256, (n, 3, size, size), dtype=torch.uint8, generator=g)
    return x, torch.arange(n) % num_classes


def quiet(**kw) -> TrainConfig:
    kw = {"schedule": "constant", "lr": 0.05, "batch_size": 32, "progress": False, **kw}
    return TrainConfig(**kw)


def model(arch: str = "mlp1d", num_classes: int = 4, seed: int = 0, **kw) -> nn.Module:
    torch.manual_seed(seed)
    return make_model(arch, num_classes, **kw)


def params(m: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in m.state_dict().items()}


def without_seconds(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "seconds"} for row in history]


class Recording(CrossEntropyLoss):
    """Cross entropy that records the class weights it sees at each call."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[torch.Tensor | None] = []

    def forward(self, logits, targets):
        self.seen.append(None if self.weight is None else self.weight.clone())
        return super().forward(logits, targets)


class Interrupting(CrossEntropyLoss):
    """Cross entropy that raises at its ``at``-th call, as a killed run would stop."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.calls, self.at = 0, at

    def forward(self, logits, targets):
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        return super().forward(logits, targets)


# ---------------------------------------------------------------------------------------------
# The learning-rate schedule
# ---------------------------------------------------------------------------------------------

LDAM_DRW = TrainConfig(
    epochs=200, lr=0.1, warmup_epochs=5, milestones=(160, 180), lr_factors=(0.01, 1e-4)
)


def test_warm_up_is_linear_from_lr_over_w_to_lr_as_in_ldam_drw():
    lrs = [learning_rate(LDAM_DRW, e) for e in range(6)]
    assert lrs == pytest.approx([0.02, 0.04, 0.06, 0.08, 0.1, 0.1])


def test_ldam_drw_schedule_is_x0_01_from_epoch_160_and_x0_0001_from_epoch_180():
    assert learning_rate(LDAM_DRW, 159) == 0.1
    assert learning_rate(LDAM_DRW, 160) == pytest.approx(0.1 * 0.01, rel=1e-12)
    assert learning_rate(LDAM_DRW, 179) == pytest.approx(0.1 * 0.01, rel=1e-12)
    assert learning_rate(LDAM_DRW, 180) == pytest.approx(0.1 * 1e-4, rel=1e-12)
    assert learning_rate(LDAM_DRW, 199) == pytest.approx(0.1 * 1e-4, rel=1e-12)


def test_gamma_multiplies_the_rate_once_per_milestone_passed():
    cfg = TrainConfig(epochs=10, lr=1.0, milestones=(3, 6), gamma=0.5)
    assert [learning_rate(cfg, e) for e in range(8)] == [1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25]


def test_cosine_runs_from_lr_to_eta_min_like_torch_cosine_annealing_stepped_per_epoch():
    cfg = TrainConfig(epochs=50, lr=0.01, schedule="cosine", eta_min=1e-3)
    opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=50, eta_min=1e-3)
    expected = []
    for _ in range(50):
        expected.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert [learning_rate(cfg, e) for e in range(50)] == pytest.approx(expected, rel=1e-9)
    assert learning_rate(cfg, 0) == 0.01
    assert learning_rate(cfg, 25) == pytest.approx((0.01 + 1e-3) / 2)
    assert learning_rate(cfg, 50) == pytest.approx(1e-3)  # the end point, one past the last


def test_cosine_after_warm_up_starts_at_lr_when_warm_up_ends():
    cfg = TrainConfig(epochs=20, lr=0.1, schedule="cosine", warmup_epochs=4)
    assert learning_rate(cfg, 3) == pytest.approx(0.1)
    assert learning_rate(cfg, 4) == pytest.approx(0.1)
    assert learning_rate(cfg, 12) == pytest.approx(0.05)
    assert learning_rate(cfg, 19) < learning_rate(cfg, 18)


def test_constant_schedule_keeps_lr_after_warm_up():
    cfg = TrainConfig(epochs=10, lr=0.3, schedule="constant", warmup_epochs=2)
    assert [learning_rate(cfg, e) for e in range(4)] == pytest.approx([0.15, 0.3, 0.3, 0.3])


# ---------------------------------------------------------------------------------------------
# The config
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("epochs", 0, ">= 1"),
        ("batch_size", 2.5, "integer"),
        ("lr", 0.0, "> 0"),
        ("momentum", 1.0, "[0, 1)"),
        ("weight_decay", -1e-4, ">= 0"),
        ("schedule", "step", "'multistep', 'cosine', 'constant'"),
        ("milestones", (180, 160), "strictly increasing"),
        ("milestones", (0, 10), ">= 1"),
        ("lr_factors", (0.01,), "one factor per milestone"),
        ("gamma", 0, "> 0"),
        ("warmup_epochs", -1, ">= 0"),
        ("eta_min", 1.0, "<= lr"),
        ("drw_epoch", -1, ">= 0"),
        ("cb_beta", 1.0, "[0, 1)"),
        ("grad_clip", 0.0, "> 0"),
        ("augment", "yes", "True or False"),
        ("mean", (0.5, 0.5), "given together with mean"),
        ("std", (0.2, 0.0, 0.2), "all > 0"),
        ("device", "gpu", "torch device"),
        ("eval_every", -1, ">= 0"),
        ("readings", -1, ">= 0"),
        ("readings", 2.0, "integer"),
        ("seed", -3, ">= 0"),
        ("lr", float("nan"), "finite"),
    ],
)
def test_a_bad_config_field_fails_at_construction_naming_field_value_and_allowed(
    field, value, allowed
):
    kw = {field: value}
    if field == "std":
        kw["mean"] = CIFAR_MEAN
    with pytest.raises(ValueError) as err:
        TrainConfig(**kw)
    message = str(err.value)
    assert f"TrainConfig.{field}" in message or field == "mean"
    assert allowed in message
    assert repr(value) in message or field == "mean"


def test_numpy_numbers_become_plain_python_numbers():
    cfg = TrainConfig(
        epochs=np.int64(3),
        lr=np.float32(0.5),
        mean=np.array([0.5, 0.25]),
        std=(np.float32(0.2), 0.3),
        milestones=[np.int64(2)],
    )
    assert cfg == TrainConfig(
        epochs=3, lr=0.5, mean=(0.5, 0.25), std=(float(np.float32(0.2)), 0.3), milestones=(2,)
    )
    assert type(cfg.epochs) is int and type(cfg.lr) is float and type(cfg.mean[0]) is float
    json.dumps(cfg.to_dict())


def test_nesterov_needs_momentum():
    with pytest.raises(ValueError, match="momentum"):
        TrainConfig(nesterov=True, momentum=0.0)


def test_the_config_is_plain_data_that_round_trips_through_json():
    cfg = TrainConfig(
        epochs=7,
        milestones=(3, 5),
        lr_factors=(0.1, 0.01),
        mean=CIFAR_MEAN,
        std=CIFAR_STD,
        grad_clip=5.0,
        drw_epoch=4,
    )
    text = json.dumps(cfg.to_dict())
    assert TrainConfig.from_dict(json.loads(text)) == cfg
    with pytest.raises(ValueError, match="unknown TrainConfig fields"):
        TrainConfig.from_dict({**cfg.to_dict(), "learning_rate": 0.1})


def test_resolve_device_picks_cuda_only_when_available():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    assert resolve_device() == resolve_device("auto")
    assert resolve_device("cpu") == torch.device("cpu")


# ---------------------------------------------------------------------------------------------
# The loop
# ---------------------------------------------------------------------------------------------


def test_fit_learns_a_small_mnist1d_shaped_problem_well_above_chance():
    train, test = blobs(512), blobs(256, seed=1)
    record = fit(model(), CrossEntropyLoss(), train, test, quiet(epochs=6, device="cpu"))
    assert isinstance(record, FitRecord)
    assert record.last_acc > 0.7  # chance: 0.25
    assert record.history[-1]["train_loss"] < record.history[0]["train_loss"]
    assert record.history[-1]["train_acc"] > record.history[0]["train_acc"]


def test_history_holds_one_row_per_epoch_and_the_record_is_json_ready():
    train, test = blobs(128), blobs(64, seed=1)
    record = fit(model(), CrossEntropyLoss(), train, test, quiet(epochs=3))
    assert [row["epoch"] for row in record.history] == [0, 1, 2]
    for row in record.history:
        assert {"epoch", "lr", "train_loss", "train_acc", "seconds", "test_acc"} <= set(row)
        assert len(row["per_class_acc"]) == 4
        assert row["test_acc"] == pytest.approx(np.mean(row["per_class_acc"]))  # balanced test
    assert record.final["test_acc"] == record.last_acc == record.history[-1]["test_acc"]
    best = max(record.history, key=lambda r: r["test_acc"])
    assert (record.best_acc, record.best_epoch) == (best["test_acc"], best["epoch"])
    assert record.config == quiet(epochs=3).to_dict()
    assert record.seconds > 0
    json.dumps(record.to_dict())


def test_evaluated_epochs_record_the_minimum_angle_between_the_head_prototypes():
    train, test = blobs(64), blobs(32, seed=1)
    anchored = fit(model(head="anchored"), CrossEntropyLoss(), train, test, quiet(epochs=2))
    simplex = math.degrees(math.acos(-1 / 3))  # k = 4: w_i . w_j = -1/(k-1)
    assert [r["min_prototype_angle"] for r in anchored.history] == pytest.approx([simplex] * 2)
    learned = fit(model(), CrossEntropyLoss(), train, test, quiet(epochs=2, eval_every=2))
    assert "min_prototype_angle" not in learned.history[0]
    assert 0 < learned.history[1]["min_prototype_angle"] <= 180


def test_eval_every_sets_the_evaluated_epochs_and_the_last_epoch_is_always_evaluated():
    train, test = blobs(64), blobs(32, seed=1)

    def evaluated(eval_every: int) -> list[int]:
        cfg = quiet(epochs=5, eval_every=eval_every)
        record = fit(model(), CrossEntropyLoss(), train, test, cfg)
        return [row["epoch"] for row in record.history if "test_acc" in row]

    assert evaluated(1) == [0, 1, 2, 3, 4]
    assert evaluated(2) == [1, 3, 4]
    assert evaluated(0) == [4]


def test_without_a_test_split_there_is_no_test_accuracy():
    record = fit(model(), CrossEntropyLoss(), blobs(64), None, quiet(epochs=2))
    assert record.last_acc is None and record.best_acc is None and record.best_epoch is None
    assert "test_acc" not in record.final


def test_the_history_records_the_scheduled_learning_rate():
    cfg = quiet(epochs=4, schedule="multistep", milestones=(2,), gamma=0.1, warmup_epochs=1)
    record = fit(model(), CrossEntropyLoss(), blobs(64), None, cfg)
    assert [row["lr"] for row in record.history] == [learning_rate(cfg, e) for e in range(4)]


def test_two_runs_with_the_same_seed_are_identical():
    train, test = blobs(160), blobs(64, seed=1)
    cfg = quiet(epochs=3, seed=7, schedule="cosine")
    a, b = model("cnn1d"), model("cnn1d")
    ra = fit(a, CrossEntropyLoss(), train, test, cfg)
    rb = fit(b, CrossEntropyLoss(), train, test, cfg)
    assert without_seconds(ra.history) == without_seconds(rb.history)
    for (name, pa), pb in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.equal(pa, pb), name


def test_the_seed_sets_the_batch_order():
    train = blobs(160)
    a, b = model(), model()
    fit(a, CrossEntropyLoss(), train, None, quiet(epochs=1, seed=0))
    fit(b, CrossEntropyLoss(), train, None, quiet(epochs=1, seed=1))
    assert not torch.equal(a.backbone[1].weight, b.backbone[1].weight)


def test_drw_switches_the_loss_to_class_balanced_weights_at_drw_epoch():
    counts = [100, 40, 15, 5]
    x, y = blobs(160)
    loss = Recording()
    cfg = quiet(epochs=4, batch_size=160, drw_epoch=2, cb_beta=0.999)  # one batch per epoch
    fit(model(), loss, (x, y), None, cfg, cls_num_list=counts)
    expected = class_balanced_weights(counts, 0.999)
    assert loss.seen[0] is None and loss.seen[1] is None
    assert torch.allclose(loss.seen[2], expected) and torch.allclose(loss.seen[3], expected)


def test_drw_without_cls_num_list_fails_before_any_training(tmp_path):
    net = model()
    before = params(net)
    loss = Recording()
    with pytest.raises(ValueError, match="cls_num_list"):
        fit(
            net,
            loss,
            blobs(64),
            None,
            quiet(epochs=2, drw_epoch=1),
            checkpoint_path=tmp_path / "run.pt",
        )
    assert loss.seen == []
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    assert list(tmp_path.iterdir()) == []


def test_drw_needs_a_loss_with_class_weights():
    with pytest.raises(ValueError, match="weight"):
        fit(
            model(),
            MAELoss(num_classes=4),
            blobs(64),
            None,
            quiet(epochs=2, drw_epoch=1),
            cls_num_list=[16, 16, 16, 16],
        )


def test_drw_class_counts_must_match_the_model():
    with pytest.raises(ValueError, match="cls_num_list has 3 classes"):
        fit(
            model(),
            CrossEntropyLoss(),
            blobs(64),
            None,
            quiet(epochs=2, drw_epoch=1),
            cls_num_list=[30, 20, 14],
        )


def sgd_step_norm(grad_clip: float | None) -> float:
    """Size of one plain SGD step (lr 1, no momentum, no weight decay, one batch)."""
    net = model()
    before = torch.cat([p.detach().flatten().clone() for p in net.parameters()])
    cfg = quiet(
        epochs=1, batch_size=64, lr=1.0, momentum=0.0, weight_decay=0.0, grad_clip=grad_clip
    )
    fit(net, CrossEntropyLoss(), blobs(64), None, cfg)
    after = torch.cat([p.detach().flatten() for p in net.parameters()])
    return (after - before).norm().item()


def test_grad_clip_bounds_the_gradient_norm_of_every_step():
    assert sgd_step_norm(None) > 0.05
    assert sgd_step_norm(0.01) == pytest.approx(0.01, rel=1e-3)


def test_a_resnet32_trains_on_cifar_shaped_uint8_images_with_augmentation_channels_last():
    train, test = cifar_like(64), cifar_like(32, seed=1)
    cfg = quiet(
        epochs=2,
        batch_size=32,
        lr=0.1,
        augment=True,
        mean=CIFAR_MEAN,
        std=CIFAR_STD,
        device="cpu",
    )
    net = model("resnet32", 10)
    record = fit(net, CrossEntropyLoss(), train, test, cfg)
    assert len(record.history) == 2
    assert all(math.isfinite(row["train_loss"]) for row in record.history)
    assert len(record.final["per_class_acc"]) == 10
    assert net.backbone.conv1.weight.is_contiguous(memory_format=torch.channels_last)


def test_a_progress_bar_over_epochs_is_shown_unless_switched_off(capsys):
    fit(model(), CrossEntropyLoss(), blobs(64), None, quiet(epochs=2, progress=True))
    assert "2/2" in capsys.readouterr().err
    fit(model(), CrossEntropyLoss(), blobs(64), None, quiet(epochs=2, progress=False))
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------------------------------------
# Checkpoints and resume
# ---------------------------------------------------------------------------------------------


def test_the_checkpoint_loads_with_weights_only_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "run.pt"
    net = model()
    cfg = quiet(epochs=2)
    fit(net, CrossEntropyLoss(), blobs(64), blobs(32, seed=1), cfg, checkpoint_path=path)
    assert list(tmp_path.iterdir()) == [path]
    state = torch.load(path, weights_only=True)
    assert {"model", "optimizer", "epoch", "history", "config"} <= set(state)
    assert state["epoch"] == 1 and len(state["history"]) == 2
    assert state["config"] == cfg.to_dict()
    for name, value in net.state_dict().items():
        assert torch.equal(state["model"][name], value)


def interrupted_then_resumed(arch, k, train, test, cfg, tmp_path, batches_per_epoch, **kw):
    """Stop a run at the first batch of epoch 2 (after epochs 0 and 1 are checkpointed), then
    resume it on a freshly initialised model."""
    path = tmp_path / "run.pt"
    with pytest.raises(KeyboardInterrupt):
        fit(
            model(arch, k, seed=1),
            Interrupting(at=2 * batches_per_epoch + 1),
            train,
            test,
            cfg,
            checkpoint_path=path,
            **kw,
        )
    assert torch.load(path, weights_only=True)["epoch"] == 1
    resumed = model(arch, k, seed=2)  # a different init: everything must come from the file
    record = fit(
        resumed, CrossEntropyLoss(), train, test, cfg, checkpoint_path=path, resume=True, **kw
    )
    return resumed, record


def assert_same_run(a: nn.Module, b: nn.Module, ra: FitRecord, rb: FitRecord) -> None:
    for (name, pa), pb in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.equal(pa, pb), name
    assert without_seconds(ra.history) == without_seconds(rb.history)


def test_resuming_after_2_of_4_epochs_equals_an_uninterrupted_run_bit_for_bit(tmp_path):
    train, test = blobs(160), blobs(64, seed=1)
    counts = [40, 40, 40, 40]
    cfg = quiet(
        epochs=4,
        schedule="cosine",
        warmup_epochs=1,
        weight_decay=5e-4,
        drw_epoch=2,
        grad_clip=5.0,
        seed=3,
    )
    straight = model("cnn1d", seed=1)
    expected = fit(straight, CrossEntropyLoss(), train, test, cfg, cls_num_list=counts)
    resumed, record = interrupted_then_resumed(
        "cnn1d", 4, train, test, cfg, tmp_path, 5, cls_num_list=counts
    )
    assert_same_run(straight, resumed, expected, record)


def test_resuming_reproduces_augmented_channels_last_image_batches_bit_for_bit(tmp_path):
    x = torch.randint(
        0, 256, (96, 1, 8, 8), dtype=torch.uint8, generator=torch.Generator().manual_seed(0)
    )
    train = (x, torch.arange(96) % 10)
    cfg = quiet(
        epochs=4,
        augment=True,
        mean=(0.5,),
        std=(0.25,),
        schedule="multistep",
        milestones=(3,),
        eval_every=0,
    )
    straight = model("cnn_digits", 10, seed=1)
    expected = fit(straight, CrossEntropyLoss(), train, None, cfg)
    resumed, record = interrupted_then_resumed("cnn_digits", 10, train, None, cfg, tmp_path, 3)
    assert_same_run(straight, resumed, expected, record)


def test_resume_without_a_checkpoint_file_starts_afresh(tmp_path):
    train = blobs(64)
    a, b = model(), model()
    ra = fit(a, CrossEntropyLoss(), train, None, quiet(epochs=2))
    rb = fit(
        b,
        CrossEntropyLoss(),
        train,
        None,
        quiet(epochs=2),
        checkpoint_path=tmp_path / "new.pt",
        resume=True,
    )
    assert_same_run(a, b, ra, rb)


def test_resuming_a_finished_run_trains_no_further(tmp_path):
    path = tmp_path / "run.pt"
    net = model()
    fit(net, CrossEntropyLoss(), blobs(64), None, quiet(epochs=2), checkpoint_path=path)
    again = model(seed=5)
    record = fit(
        again,
        CrossEntropyLoss(),
        blobs(64),
        None,
        quiet(epochs=2),
        checkpoint_path=path,
        resume=True,
    )
    assert len(record.history) == 2
    for p, q in zip(net.parameters(), again.parameters(), strict=True):
        assert torch.equal(p, q)


def test_resuming_with_another_config_is_an_error_naming_the_change(tmp_path):
    path = tmp_path / "run.pt"
    fit(model(), CrossEntropyLoss(), blobs(64), None, quiet(epochs=2), checkpoint_path=path)
    with pytest.raises(ValueError, match=r"lr: 0\.05 -> 0\.1"):
        fit(
            model(),
            CrossEntropyLoss(),
            blobs(64),
            None,
            quiet(epochs=2, lr=0.1),
            checkpoint_path=path,
            resume=True,
        )
    # how a run is shown may change
    fit(
        model(),
        CrossEntropyLoss(),
        blobs(64),
        None,
        quiet(epochs=2, progress=False, eval_every=0, readings=0),
        checkpoint_path=path,
        resume=True,
    )


def test_resuming_from_a_checkpoint_of_another_format_is_an_error_naming_both(tmp_path):
    path = tmp_path / "run.pt"
    fit(model(), CrossEntropyLoss(), blobs(64), None, quiet(epochs=2), checkpoint_path=path)
    state = torch.load(path, weights_only=True)
    for found in (CHECKPOINT_FORMAT + 1, None):
        if found is None:
            del state["format"]
        else:
            state["format"] = found
        torch.save(state, path)
        expected = (
            rf"{re.escape(str(path))}: it is a checkpoint of format {found!r}, "
            rf".*format {CHECKPOINT_FORMAT}"
        )
        with pytest.raises(ValueError, match=expected):
            fit(
                model(),
                CrossEntropyLoss(),
                blobs(64),
                None,
                quiet(epochs=3),
                checkpoint_path=path,
                resume=True,
            )


def test_resume_needs_a_checkpoint_path():
    with pytest.raises(ValueError, match="checkpoint_path"):
        fit(model(), CrossEntropyLoss(), blobs(64), None, quiet(epochs=1), resume=True)


# ---------------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------------


def test_evaluate_returns_logits_features_and_per_class_accuracy_on_the_cpu():
    net = model("cnn1d")
    net.train()
    x, y = blobs(70)
    y[y == 3] = 2  # class 3 absent
    out = evaluate(net, x, y, batch_size=32)
    assert out["logits"].shape == (70, 4) and out["features"].shape == (70, 64)
    assert out["logits"].device.type == out["features"].device.type == "cpu"
    assert torch.equal(out["targets"], y)
    predicted = out["logits"].argmax(1)
    assert out["acc"] == pytest.approx((predicted == y).float().mean().item())
    per_class = out["per_class_acc"]
    assert isinstance(per_class, np.ndarray) and per_class.shape == (4,)
    assert np.isnan(per_class[3])
    assert per_class[0] == pytest.approx((predicted[y == 0] == 0).float().mean().item())
    assert net.training  # the mode is restored


def test_evaluate_uses_eval_mode_so_results_do_not_depend_on_the_batch_size():
    net = model("cnn1d")
    fit(net, CrossEntropyLoss(), blobs(64), None, quiet(epochs=1))
    x, y = blobs(50, seed=3)
    a, b = evaluate(net, x, y, batch_size=7), evaluate(net, x, y, batch_size=50)
    assert torch.allclose(a["logits"], b["logits"], atol=1e-5)
    assert torch.allclose(a["features"], net.eval().features(x), atol=1e-5)


def test_evaluate_normalises_images_like_training():
    x, y = cifar_like(8, size=8)
    x = x[:, :1]
    net = model("cnn_digits", 10)
    out = evaluate(net, x, y, mean=(0.5,), std=(0.25,))
    manual = net.eval()((x.float() / 255 - 0.5) / 0.25)
    assert torch.allclose(out["logits"], manual, atol=1e-5)


def test_the_record_is_a_dataclass_whose_dict_has_every_field():
    names = {f.name for f in dataclasses.fields(FitRecord)}
    assert names == {
        "config",
        "history",
        "final",
        "last_acc",
        "best_acc",
        "best_epoch",
        "seconds",
        "resumed_from",
    }


def _nc1_and_ece_by_hand(h, z, y, k, bins=15):
    """NC1 = Tr(Sigma_W Sigma_B^+)/K (global mean: the mean of the class means) and the
    15-bin ECE, written out here from their formulas."""
    mu = np.stack([h[y == c].mean(0) for c in range(k)])
    centred = mu - mu.mean(0)
    sigma_w = sum(np.outer(v, v) for v in h - mu[y]) / len(y)
    sigma_b = sum(np.outer(m, m) for m in centred) / k
    nc1 = np.trace(sigma_w @ np.linalg.pinv(sigma_b)) / k
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    conf, hit = p.max(1), p.argmax(1) == y
    ece = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inside = (conf > lo) & (conf <= hi)
        if inside.any():
            ece += inside.mean() * abs(hit[inside].mean() - conf[inside].mean())
    return nc1, ece


def test_evaluated_epochs_record_nc1_and_the_ece_of_the_logits_the_loss_scales():
    from palviz.losses import LDAMLoss

    x, y = blobs(96)
    net = model(head="cosine")
    counts = np.bincount(y.numpy(), minlength=4).tolist()
    record = fit(net, LDAMLoss(counts, s=30.0), (x, y), (x, y), quiet(epochs=2))
    last = record.history[-1]
    assert set(last) >= {"nc1", "nc2_norms_means", "nc2_angles_classifier", "nc3", "nc4", "ece"}
    ev = evaluate(net, x, y)
    h, z = ev["features"].double().numpy(), ev["logits"].double().numpy()
    nc1, ece = _nc1_and_ece_by_hand(h, 30.0 * z, y.numpy(), 4)
    assert last["nc1"] == pytest.approx(nc1, rel=1e-5)
    assert last["ece"] == pytest.approx(ece, abs=1e-6)  # at s = 30: the logits LDAM sees
    _, ece_unscaled = _nc1_and_ece_by_hand(h, z, y.numpy(), 4)
    assert abs(ece - ece_unscaled) > 1e-3
    assert 0.0 <= last["nc4"] <= 1.0


# ---------------------------------------------------------------------------------------------
# The readings: at a few evaluated epochs
# ---------------------------------------------------------------------------------------------


def test_reading_epochs_are_the_first_the_last_and_evenly_spaced_evaluated_epochs():
    # 5 evaluated epochs, 3 readings: evaluated epoch numbers round(i * (5 - 1) / (3 - 1)) = 0, 2, 4
    assert reading_epochs(TrainConfig(epochs=5, readings=3)) == (0, 2, 4)
    assert reading_epochs(TrainConfig(epochs=5, readings=1)) == (4,)
    assert reading_epochs(TrainConfig(epochs=5, readings=0)) == ()
    assert reading_epochs(TrainConfig(epochs=5, readings=9)) == (0, 1, 2, 3, 4)
    # eval_every=2 over 7 epochs evaluates after epochs 1, 3, 5, 6: readings among those only
    assert evaluated_epochs(TrainConfig(epochs=7, eval_every=2)) == (1, 3, 5, 6)
    assert reading_epochs(TrainConfig(epochs=7, eval_every=2, readings=2)) == (1, 6)
    assert reading_epochs(TrainConfig(epochs=7, eval_every=0, readings=4)) == (6,)


@pytest.mark.parametrize("epochs", [10, 90, 200])
def test_the_readings_spread_over_training_with_gaps_that_differ_by_at_most_one(epochs):
    config = TrainConfig(epochs=epochs, readings=10)
    read = reading_epochs(config)
    assert len(read) == 10 and read[0] == 0 and read[-1] == epochs - 1
    gaps = np.diff(read)
    assert gaps.min() >= 1 and gaps.max() - gaps.min() <= 1


def test_collapse_readings_are_recorded_at_the_reading_epochs_only():
    x, y = blobs(96)
    cfg = quiet(epochs=5, readings=3)
    record = fit(model(head="cosine"), CrossEntropyLoss(), (x, y), (x, y), cfg)
    with_readings = [r["epoch"] for r in record.history if "nc1" in r]
    assert with_readings == list(reading_epochs(cfg)) == [0, 2, 4]
    for row in record.history:
        assert {"test_acc", "per_class_acc", "min_prototype_angle"} <= set(row)  # every epoch
        assert (set(COLLAPSE_KEYS) <= set(row)) == (row["epoch"] in with_readings)


def test_the_readings_do_not_change_the_training():
    train, test = blobs(96), blobs(48, seed=1)
    runs = []
    for readings in (0, 4):
        net = model(head="cosine", seed=2)
        record = fit(net, CrossEntropyLoss(), train, test, quiet(epochs=4, readings=readings))
        runs.append((params(net), [r["test_acc"] for r in record.history]))
    (p0, acc0), (p1, acc1) = runs
    assert acc0 == acc1
    assert all(torch.equal(p0[k], p1[k]) for k in p0)

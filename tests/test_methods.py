"""The table methods are data of the experiment layer (``methods.TABLE_METHODS``) over the
loss registry: one registered loss and one row reach ``make_loss``, the method tables, the
spec builders and, once a profile names it, the plan; neither changes a profile's grid by
itself. docs/reference.md's tables, written by hand, name exactly these methods."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from palviz.experiments import methods, plan, recipes
from palviz.losses import LOSSES, make_loss, registry

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ("smoke", "quick", "full", "paper")


def _method_tables(text: str) -> list[list[str]]:
    """The first column of each table of ``text`` whose header starts ``| method | loss |``."""
    tables, rows = [], None
    for line in text.splitlines():
        if line.startswith("| method | loss |"):
            rows = []
            tables.append(rows)
        elif rows is not None and line.startswith("| ") and not line.startswith("|---"):
            rows.append(line.split("|")[1].strip())
        elif not line.startswith("|"):
            rows = None
    return tables


def test_docs_reference_tables_name_every_table_method_and_no_other():
    """docs/reference.md 6.1 and 6.2, written by hand, list each task's methods once."""
    tables = _method_tables((ROOT / "docs" / "reference.md").read_text())
    assert len(tables) == len(methods.TASKS)
    for task, labels in zip(methods.TASKS, tables, strict=True):
        assert sorted(labels) == sorted(methods.methods_of(task)), task


def test_every_method_has_its_loss_and_variants():
    lt = methods.methods_of("long_tailed")
    for label, m in lt.items():
        assert m.loss in LOSSES
        assert label == m.base.label + m.variant
        if m.base.pal:
            assert m.base.label + "+PAL" in lt
    noisy = methods.methods_of("noisy")
    assert {"CE+FNPAL", "CE+FNPN", "NCE+RCE+FNPAL"} <= set(noisy)
    assert recipes.LT_METHODS == methods.long_tailed_methods()


@pytest.mark.parametrize("profile", PROFILES)
def test_profiles_name_only_registered_methods(profile):
    lt, noisy = recipes.long_tailed_setup(profile), recipes.noisy_setup(profile)
    assert set(lt["methods"]) | set(lt["pal_methods"]) <= set(recipes.LT_METHODS)
    assert set(noisy["methods"]) | set(noisy["headline"]["methods"]) <= set(recipes.NOISE_METHODS)


@pytest.fixture
def extra_loss(monkeypatch):
    """A loss registered, with a row of the method table, for the duration of a test (and
    removed after it)."""

    @registry.register_loss("test_shifted_ce", source="a test")
    class ShiftedCE(nn.Module):
        """CE of logits shifted by ``shift`` times log class frequency (a test loss)."""

        def __init__(self, cls_num_list, shift: float = 1.0):
            super().__init__()
            counts = torch.as_tensor(cls_num_list, dtype=torch.float32)
            self.register_buffer("prior", torch.log(counts / counts.sum()))
            self.shift = shift

        def forward(self, logits, targets):
            return nn.functional.cross_entropy(logits + self.shift * self.prior, targets)

    row = methods.long_tailed("Shifted-CE", "test_shifted_ce", shift=0.5)
    monkeypatch.setattr(methods, "TABLE_METHODS", (*methods.TABLE_METHODS, row))
    yield ShiftedCE
    del registry.LOSSES["test_shifted_ce"]


def test_one_registration_reaches_make_loss_tables_and_specs(extra_loss):
    loss = make_loss("test_shifted_ce", cls_num_list=[5, 3, 1])
    assert isinstance(loss, extra_loss) and loss.shift == 1.0
    table = methods.method_table("long_tailed")
    assert "| Shifted-CE | `ShiftedCE` (`test_shifted_ce`) | shift=0.5 |" in table
    assert "Shifted-CE+PAL" in methods.methods_of("long_tailed")
    # the spec builders take it (recipes' LT_METHODS is read at import; the plan checks labels
    # against the registry when it is called)
    m = methods.method("long_tailed", "Shifted-CE+PAL")
    assert m.head() == ("anchored", {"normalize": False, "scale": 1.0})


@pytest.mark.parametrize("profile", PROFILES)
def test_registering_a_loss_never_changes_a_profiles_grid(extra_loss, profile):
    before = {nb: [s.key() for s in plan.planned_specs(nb, profile)] for nb in plan.EXPERIMENTS}
    del registry.LOSSES["test_shifted_ce"]
    try:
        without = {
            nb: [s.key() for s in plan.planned_specs(nb, profile)] for nb in plan.EXPERIMENTS
        }
    finally:
        registry.LOSSES["test_shifted_ce"] = registry.LossEntry(
            name="test_shifted_ce",
            factory=extra_loss,
            needs=("class_counts",),
            head="linear",
            source="a test",
            arguments=("cls_num_list", "shift"),
            defaults={"shift": 1.0},
            summary="",
        )
    assert before == without


def test_a_bad_row_of_the_method_table_is_refused_naming_it():
    cases = [
        (methods.long_tailed("Fresh", "ce", qq=1.0), r"'Fresh' passes \['qq'\]"),
        (methods.long_tailed("CE", "ce"), "'CE' is declared twice"),
        (methods.noisy("Fresh", "cee"), "loss must be one of"),
        (methods.TableMethod("Fresh", "balanced", "ce"), "task must be one of"),
    ]
    for row, message in cases:
        with pytest.raises(ValueError, match=message):
            methods.check_table((*methods.TABLE_METHODS, row))
    methods.check_table(methods.TABLE_METHODS)


def test_palviz_methods_prints_both_tables(capsys):
    from palviz import cli

    assert cli.main(["methods"]) == 0
    out = capsys.readouterr().out
    assert methods.method_table("long_tailed") in out and methods.method_table("noisy") in out

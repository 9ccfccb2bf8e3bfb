"""A value is checked where it enters and trusted below: a misspelt method fails with one
message form, from one function, wherever it enters (a notebook's parameters, ``palviz plan
--methods``, a spec made by hand, the experiment declared in Python); a spec builds nothing to
check itself; and a CE+PAL spec reaches its head's simplex through few frames."""

from __future__ import annotations

import inspect
import traceback

import pytest
import torch

import palviz.heads
from palviz import cli
from palviz.checks import check_choice
from palviz.cli import sweep
from palviz.experiments import methods, recipes, runcache
from palviz.experiments.plan import experiment
from palviz.experiments.runspec import RunSpec
from palviz.losses import LOSSES
from palviz.parameters import TABLES, check_parameters

MISSPELT = "LDAM-DRX"


def raised(call) -> tuple[str, str]:
    """The message of the ``ValueError`` ``call()`` raises and the function that raised it."""
    with pytest.raises(ValueError) as error:
        call()
    return str(error.value), traceback.extract_tb(error.tb)[-1].name


def test_a_misspelt_method_fails_alike_wherever_it_enters():
    labels = list(recipes.LT_METHODS)
    notebook = {name: p.default for name, p in TABLES["06"].items()}
    notebook["METHODS"] = ("CE", MISSPELT)
    entries = {
        "METHODS[1]": (lambda: check_parameters("06", notebook), labels),
        "--methods": (lambda: sweep.checked_methods(["06"], [MISSPELT]), labels),
        "method": (
            lambda: experiment("06", "smoke", methods=(MISSPELT,)),
            list(methods.methods_of("long_tailed")),
        ),
        "RunSpec.loss": (
            lambda: RunSpec(dataset="digits", arch="cnn_digits", loss=MISSPELT),
            list(LOSSES),
        ),
    }
    for name, (call, allowed) in entries.items():
        message, function = raised(call)
        assert message == f"{name} must be one of {allowed}, got {MISSPELT!r}"
        assert function == check_choice.__name__, name


def test_palviz_plan_refuses_a_misspelt_method_before_planning(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["plan", "--profile", "smoke", "--only", "06", "--methods", "CE", MISSPELT])
    assert done.value.code == 2
    labels = list(recipes.LT_METHODS)
    expected = f"palviz plan: --methods must be one of {labels}, got {MISSPELT!r}\n"
    assert capsys.readouterr().err == expected


def test_palviz_plan_trains_the_methods_it_is_given(capsys):
    assert cli.main(["plan", "--profile", "smoke", "--only", "06", "--methods", "CE"]) == 0
    specs = experiment("06", "smoke", methods=("CE",))
    labels = {s.label for group in specs.values() for s in group}
    assert labels <= {"CE", "CE+PAL", "CE+PAL (axis)", "CE+PAL (block)"}
    printed = capsys.readouterr().out
    assert "LDAM" not in printed and "CE+PAL" in printed


def test_a_spec_builds_no_loss_and_no_head_to_check_itself(monkeypatch):
    def built(*_args, **_kwargs):
        raise AssertionError("a module was built while a spec was made")

    monkeypatch.setattr(torch.nn.Module, "__init__", built)
    spec = RunSpec(
        dataset="mnist1d",
        arch="cnn1d",
        loss="ldam",
        loss_kw={"max_m": 0.5, "s": 30.0},
        head="anchored",
        head_kw={"normalize": True, "scale": 1.0},
    )
    assert spec.key()


def _frames_between(stack: list[inspect.FrameInfo], outer: str) -> int:
    """How many frames of ``stack`` (innermost first) lie from the innermost to ``outer``'s,
    both counted."""
    return [f.function for f in stack].index(outer) + 1


def test_a_ce_pal_spec_reaches_its_simplex_through_at_most_10_frames(monkeypatch):
    """From :func:`experiment` to the spec, then from the model the run builds
    (:func:`~palviz.experiments.runcache.initial_prototypes`, as ``run`` builds it) to
    :func:`~palviz.heads.simplex_prototypes`."""
    depths: dict[str, int] = {}
    post_init, simplex = RunSpec.__post_init__, palviz.heads.simplex_prototypes

    def made(self):
        depths.setdefault("spec", _frames_between(inspect.stack()[1:], "experiment"))
        post_init(self)

    def anchored(*args, **kwargs):
        depths["head"] = _frames_between(inspect.stack(), "initial_prototypes")
        return simplex(*args, **kwargs)

    monkeypatch.setattr(RunSpec, "__post_init__", made)
    monkeypatch.setattr(palviz.heads, "simplex_prototypes", anchored)
    groups = experiment("06", "smoke", methods=("CE",), pal_methods=("CE",), orientations=())
    (spec,) = [s for s in groups["grid"] if s.label == "CE+PAL"][:1]
    prototypes = runcache.initial_prototypes(spec)
    assert prototypes.shape[0] == 10
    # experiment, long_tailed_groups, lt_grid, lt_spec, RunSpec.__init__; initial_prototypes,
    # make_model, AnchoredHead.__init__, simplex_prototypes
    assert depths["spec"] + depths["head"] <= 10, depths

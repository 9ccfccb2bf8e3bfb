"""Each notebook's parameters cell is a contract (palviz.parameters): the cell sets the
parameters of its table, in order, to their declared defaults, and its comments state their
rules; check_parameters refuses what the table refuses; and every notebook, executed through
papermill at smoke size, runs to the end with all its parameters at the low edges of their
ranges and with all at the high edges, and stops in its first cells, naming the parameter, when
one of them has a value of the wrong type.

The notebook runs share one run cache (``$PALVIZ_RUNS`` when set, e.g. ``build/test-runs`` in
``make test``, else a folder of the session), so a run trains once. They are started together,
``$PALVIZ_TEST_WORKERS`` (default 2) at a time, as soon as the first of them is asked for, and
their kernels import the palviz of this checkout (``PYTHONPATH``), whichever copy is installed.
"""

from __future__ import annotations

import ast
import inspect
import json
import math
import os
import re
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from palviz.checks import ArgumentTypeError
from palviz.experiments import plan, recipes
from palviz.parameters import TABLES, check_parameters, edges, rule

papermill = pytest.importorskip("papermill")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
PATHS = {number: next(NOTEBOOKS.glob(f"{number}_*.ipynb")) for number in TABLES}


def code_cells(number: str) -> list[tuple[int, str]]:
    """``(index, source)`` of every code cell of notebook ``number``."""
    cells = json.loads(PATHS[number].read_text(encoding="utf-8"))["cells"]
    return [(i, "".join(c["source"])) for i, c in enumerate(cells) if c["cell_type"] == "code"]


def parameters_cell(number: str) -> tuple[int, str]:
    cells = json.loads(PATHS[number].read_text(encoding="utf-8"))["cells"]
    for i, cell in enumerate(cells):
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            return i, "".join(cell["source"])
    raise AssertionError(f"{PATHS[number].name} has no cell tagged 'parameters'")


def assignments(source: str) -> dict[str, tuple[object, str]]:
    """Each parameter of a parameters cell: its value and its comment (the comment lines
    directly above the assignment and the one at its end, joined, spacing collapsed)."""
    lines = source.splitlines()
    out = {}
    for node in ast.parse(source).body:
        assert isinstance(node, ast.Assign) and len(node.targets) == 1, ast.unparse(node)
        name = node.targets[0].id
        above = []
        row = node.lineno - 2
        while row >= 0 and lines[row].lstrip().startswith("#"):
            above.insert(0, lines[row].lstrip()[1:])
            row -= 1
        rest = lines[node.end_lineno - 1][node.end_col_offset :]
        trailing = rest.split("#", 1)[1] if "#" in rest else ""
        comment = " ".join(" ".join(above + [trailing]).split())
        out[name] = (ast.literal_eval(node.value), comment)
    return out


def defaults(number: str) -> dict:
    return {name: value for name, (value, _) in assignments(parameters_cell(number)[1]).items()}


def check_call(number: str) -> tuple[int, ast.Call]:
    """The index of the code cell that calls check_parameters, and the call."""
    for index, source in code_cells(number):
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "check_parameters":
                return index, node
    raise AssertionError(f"{PATHS[number].name} never calls check_parameters")


CASES = [(number, name) for number, table in TABLES.items() for name in table]


def wrong(entry) -> object:
    """A value of the wrong type for ``entry``: a string stands for a number, a flag or a
    tuple, a number for a profile's name."""
    return 1 if entry.kind == "profile" else "1"


def rule_alternatives(text: str) -> list[str]:
    """The alternatives of a rule, the parts between ``" or "``: what a parameter's comment
    must state word for word."""
    return [part.strip() for part in text.split(" or ")]


# --------------------------------------------------------------------------------------
# The tables and the parameters cells agree
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("number", sorted(TABLES))
def test_the_parameters_cell_sets_the_tables_parameters_in_order_to_their_defaults(number):
    assert list(assignments(parameters_cell(number)[1])) == list(TABLES[number])
    assert defaults(number) == {name: p.default for name, p in TABLES[number].items()}


@pytest.mark.parametrize(("number", "name"), CASES)
def test_the_comment_of_each_parameter_states_its_rule(number, name):
    _, comment = assignments(parameters_cell(number)[1])[name]
    missing = [
        part
        for part in rule_alternatives(rule(TABLES[number][name]))
        if " ".join(part.split()) not in comment
    ]
    assert not missing, f"{PATHS[number].name}: the comment of {name} ({comment!r}) lacks {missing}"


@pytest.mark.parametrize("number", sorted(TABLES))
def test_the_defaults_of_the_cell_pass_the_check(number):
    check_parameters(number, defaults(number))


@pytest.mark.parametrize("number", sorted(TABLES))
def test_the_check_comes_first_and_reads_the_notebooks_globals(number):
    cell, call = check_call(number)
    first = parameters_cell(number)[0]
    code_after = [i for i, _ in code_cells(number) if i > first]
    assert cell in code_after[:2], "check_parameters must be called in the first cells"
    assert isinstance(call.args[0], ast.Constant) and call.args[0].value == number
    assert ast.unparse(call.args[1]) == "globals()" and not call.keywords


# --------------------------------------------------------------------------------------
# check_parameters, in-process
# --------------------------------------------------------------------------------------


def _with(number: str, name: str, value) -> dict:
    return {**defaults(number), name: value}


@pytest.mark.parametrize(("number", "name"), CASES)
def test_every_edge_passes_and_the_wrong_type_is_refused_naming_the_parameter(number, name):
    entry = TABLES[number][name]
    assert len(edges(entry)) == 2
    for value in (*edges(entry), entry.default):
        check_parameters(number, _with(number, name, value))
    with pytest.raises(ArgumentTypeError) as error:
        check_parameters(number, _with(number, name, wrong(entry)))
    assert str(error.value) == f"{name} must be {rule(entry)}, got {wrong(entry)!r}"
    if entry.none:
        check_parameters(number, _with(number, name, None))
    else:
        with pytest.raises(ArgumentTypeError, match=rf"^{name} must be "):
            check_parameters(number, _with(number, name, None))


def _outside(entry) -> list:
    """Values of the right type just outside the entry's range."""
    out = []
    integer = entry.kind in ("int", "ints")
    for bound, side in ((entry.min, -1), (entry.max, +1)):
        if bound is None:
            continue
        if integer:
            out.append(bound + side)
        elif entry.min_open and side < 0:
            out.append(float(bound))
        else:
            out.append(bound + side * 1e-9 * max(1.0, abs(bound)))
    if entry.kind in ("int", "real"):
        return out + ([math.nan] if entry.kind == "real" else [])
    item = edges(entry)[-1][0]
    bad = [(v,) * max(1, entry.min_len) for v in out]
    if entry.kind == "labels":
        bad.append(("no such method",))
    if entry.min_len > 0:
        bad.append(tuple(edges(entry)[0][: entry.min_len - 1]))
    if entry.distinct:
        bad.append((item,) * max(2, entry.min_len))
    return bad


@pytest.mark.parametrize(
    ("number", "name"),
    [(n, p) for n, p in CASES if TABLES[n][p].kind not in ("profile", "bool", "noise_pairs")],
)
def test_the_examples_reach_the_edges_and_just_beyond_is_refused(number, name):
    entry = TABLES[number][name]
    low, high = edges(entry)
    if entry.kind in ("int", "real"):
        if entry.min is not None:
            assert low == entry.min or (entry.min_open and entry.min < low <= entry.min + 1e-3)
        if entry.max is not None:
            assert high == entry.max
    else:
        assert len(low) == entry.min_len
        assert len(high) > len(low) or len(high) == entry.length  # a fixed length: both at it
        numbers = [v for v in (*low, *high) if not isinstance(v, str)]
        if entry.min is not None and numbers:
            assert min(numbers) == entry.min
        if entry.max is not None and numbers:
            assert max(numbers) == entry.max
    for value in _outside(entry):
        if value == ("no such method",):  # a name is checked where every name is: check_choice
            expected = rf"^{name}\[0\] must be one of \[.*\], got 'no such method'$"
        else:
            expected = rf"^{name} must be {re.escape(rule(entry))}"
        with pytest.raises(ValueError, match=expected) as error:
            check_parameters(number, _with(number, name, value))
        assert not isinstance(error.value, ArgumentTypeError), value


def test_profile_dependent_and_unknown_values_are_refused_with_the_allowed_ones():
    values = _with("07", "TRANSITION_SHOWN", (("symmetric", 0.4), ("asymmetric", 0.3)))
    smoke = r"the pairs of profile 'smoke' are \('symmetric', 0\.4\), \('asymmetric', 0\.4\)"
    with pytest.raises(ValueError, match=smoke + r"; \('asymmetric', 0\.3\) is not one of them"):
        check_parameters("07", {**values, "PROFILE": "smoke"})
    check_parameters("07", {**values, "PROFILE": "full"})  # 0.3 is one of full's rates
    kept = r"profile 'full' kept by RATES \(0\.2, 0\.4\) are \('symmetric', 0\.2\), "
    with pytest.raises(ValueError, match=kept + r".*\('asymmetric', 0\.3\) is not one of them"):
        check_parameters("07", {**values, "PROFILE": "full", "RATES": (0.2, 0.4)})
    rates = _with("07", "RATES", (0.2,))  # quick's asymmetric table has 0.4 only
    with pytest.raises(ValueError, match=r"^RATES must be .*no asymmetric rate of the profile"):
        check_parameters("07", {**rates, "PROFILE": "quick"})
    check_parameters("07", {**rates, "PROFILE": "full"})
    with pytest.raises(ValueError, match=r"TRANSITION_SHOWN must be .*1 pairs given"):
        check_parameters("07", _with("07", "TRANSITION_SHOWN", [["symmetric", 0.4]]))
    with pytest.raises(
        ValueError, match=r"^METHODS\[1\] must be one of \['CE', .*got 'CE\+FNPAL'$"
    ):
        check_parameters("00", _with("00", "METHODS", ["CE", "CE+FNPAL"]))
    with pytest.raises(ValueError, match=r"^PROFILE must be None or \"smoke\""):
        check_parameters("02", _with("02", "PROFILE", "tiny"))
    with pytest.raises(ValueError, match=r"^K_MAJOR must be an integer in \[2, 10\], got 1$"):
        check_parameters("02", _with("02", "K_MAJOR", 1))


def test_noise_kinds_narrow_07s_tables_and_what_its_other_parameters_may_name():
    from palviz.experiments.plan import experiment

    values = {**defaults("07"), "PROFILE": "smoke", "NOISE_KINDS": ("asymmetric",)}
    shown = (("symmetric", 0.4), ("asymmetric", 0.4))
    of = r"the pairs of profile 'smoke' of NOISE_KINDS \('asymmetric',\) are \('asymmetric', 0\.4\)"
    with pytest.raises(ValueError, match=of + r"; \('symmetric', 0\.4\) is not one of them"):
        check_parameters("07", {**values, "TRANSITION_SHOWN": shown})
    check_parameters("07", {**values, "TRANSITION_SHOWN": (shown[1],) * 2})
    # quick's symmetric rates hold 0.2, its asymmetric ones (0.4) do not
    check_parameters("07", {**values, "PROFILE": "quick", "NOISE_KINDS": ("symmetric",),
                            "RATES": (0.2,)})  # fmt: skip
    with pytest.raises(ValueError, match=r"^RATES must be .*no asymmetric rate of the profile"):
        check_parameters("07", {**values, "PROFILE": "quick", "RATES": (0.2,)})
    groups = experiment("07", "smoke", kinds=("symmetric",))
    assert groups["mnist1d", "asymmetric"] == [] and groups["mnist1d", "symmetric"]
    assert {s.noise_kind for s in groups["mnist1d", "symmetric"]} == {"symmetric"}
    assert groups["mnist1d", "headline"] == experiment("07", "smoke")["mnist1d", "headline"]


def test_a_ratio_below_1_a_string_or_a_repeat_is_refused_naming_ratios():
    rule = "None or a tuple of distinct numbers >= 1"
    for value, detail in (((0.5,), "; 0.5 is out of range"), ((10, 10.0), "; repeats found")):
        with pytest.raises(ValueError) as error:
            check_parameters("06", _with("06", "RATIOS", value))
        assert str(error.value) == f"RATIOS must be {rule}{detail}, got {value!r}"
        assert not isinstance(error.value, ArgumentTypeError)
    for value in (0.5, "10", ("10",), (True,)):
        with pytest.raises(ArgumentTypeError) as error:
            check_parameters("06", _with("06", "RATIOS", value))
        assert str(error.value) == f"RATIOS must be {rule}, got {value!r}"
    checked = check_parameters("06", _with("06", "RATIOS", [10, 2.5]))
    assert checked["RATIOS"] == (10, 2.5)


def test_lists_are_taken_for_tuples_and_returned_as_tuples():
    checked = check_parameters("03", _with("03", "WEIGHT_DECAYS", [0.0, 1e-3]))
    assert checked["WEIGHT_DECAYS"] == (0.0, 1e-3)
    checked = check_parameters("07", _with("07", "TRANSITION_SHOWN", [["symmetric", 0.4]] * 2))
    assert checked["TRANSITION_SHOWN"] == (("symmetric", 0.4), ("symmetric", 0.4))


def test_missing_names_and_unknown_notebooks_are_errors():
    values = defaults("08")
    values.pop("UMAP_POINTS")
    with pytest.raises(ValueError, match=r"notebook 08: parameters \['UMAP_POINTS'\] are not set"):
        check_parameters("08_feature_geometry", values)
    with pytest.raises(ValueError, match=r"notebook must be one of"):
        check_parameters("99", {"PROFILE": None})


def test_a_wrong_type_is_reported_before_torch_is_imported():
    import subprocess
    import sys

    code = (
        "import sys\nfrom palviz.parameters import check_parameters\n"
        "try:\n    check_parameters('00', dict(PROFILE=None, IMBALANCE_RATIO=100, SEED=0,"
        " METHODS=('CE',), EPOCHS='3', LR=None, WEIGHT_DECAY=None, BATCH_SIZE=None))\n"
        "except TypeError as e:\n    print(e)\nprint('torch' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.split("\n")[:2] == [
        "EPOCHS must be None or an integer >= 1, got '3'",
        "False",
    ]


# --------------------------------------------------------------------------------------
# The notebooks, executed through papermill at smoke size
# --------------------------------------------------------------------------------------


def _for_papermill(value):
    """Papermill writes lists (not tuples) as Python literals into the injected cell."""
    if isinstance(value, tuple | list):
        return [_for_papermill(v) for v in value]
    return value


def _parameters(number: str, case: str) -> dict:
    table = TABLES[number]
    if case in ("low", "high"):
        return {name: edges(p)[case == "high"] for name, p in table.items()}
    return {case: wrong(table[case])}


#: Each notebook runs at its low and at its high edges, and once with a value of the wrong type
#: (its last parameter's) to show that the check stops a real kernel in its first cells. That
#: every other parameter reaches the same check is shown without a kernel: each is refused by
#: check_parameters (test_every_example_passes_...), and the notebook's check cell passes every
#: parameter by its name (test_the_check_comes_first_...).
RUN_CASES = [(number, case) for number in sorted(TABLES) for case in ("low", "high")] + [
    (number, list(TABLES[number])[-1]) for number in sorted(TABLES)
]


class _Runs:
    """Every notebook run the session asks for, started together on a few threads."""

    def __init__(self, folder: Path, workers: int):
        self.folder = folder
        self.pool = ThreadPoolExecutor(max_workers=workers)
        self.futures: dict[tuple[str, str], Future] = {}
        self.lock = threading.Lock()

    def submit(self, key: tuple[str, str]) -> Future:
        with self.lock:
            if key not in self.futures:
                self.futures[key] = self.pool.submit(self._execute, *key)
            return self.futures[key]

    def _execute(self, number: str, case: str):
        out = self.folder / f"{number}_{case}.ipynb"
        parameters = {k: _for_papermill(v) for k, v in _parameters(number, case).items()}
        try:
            papermill.execute_notebook(
                str(PATHS[number]),
                str(out),
                parameters=parameters,
                kernel_name="python3",
                cwd=str(NOTEBOOKS),
                progress_bar=False,
                execution_timeout=900,
            )
        except papermill.PapermillExecutionError as error:
            return out, error
        return out, None


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("notebook-params")
    env = {
        "PALVIZ_PROFILE": "smoke",
        "PALVIZ_RUNS": os.environ.get("PALVIZ_RUNS") or str(folder / "runs"),
        "PALVIZ_FIGURES": str(folder / "figures"),
        "PALVIZ_ROOT": str(ROOT),
        "MPLBACKEND": "Agg",
        # the kernels import this checkout's palviz, whatever copy is installed
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    saved = {k: os.environ.get(k) for k in [*env, "PALVIZ_TOY"]}
    os.environ.update(env)
    os.environ.pop("PALVIZ_TOY", None)
    pool = _Runs(folder, int(os.environ.get("PALVIZ_TEST_WORKERS", "2")))
    # start every run this session selected, in the order the tests ask for them
    for item in request.session.items:
        mine = getattr(item, "module", None) is request.module  # nbmake's items have no module
        if mine and "runs" in getattr(item, "fixturenames", ()):
            params = item.callspec.params
            pool.submit((params["number"], params["case"]))
    yield pool
    pool.pool.shutdown(wait=True, cancel_futures=True)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.mark.parametrize(
    ("number", "case"), [pytest.param(n, c, id=f"{n}-{c}") for n, c in RUN_CASES]
)
def test_notebook_runs_at_the_edges_and_stops_early_on_a_wrong_type(number, case, runs):
    out, error = runs.submit((number, case)).result()
    if case in ("low", "high"):
        assert error is None, f"{PATHS[number].name} with the {case} edges: {error}"
        return
    assert error is not None, f"{PATHS[number].name} ran to the end with a wrong {case}"
    entry = TABLES[number][case]
    assert (error.ename, error.evalue) == (
        "ArgumentTypeError",
        f"{case} must be {rule(entry)}, got {wrong(entry)!r}",
    )
    # the cell that calls check_parameters, one further down for papermill's injected cell
    assert error.cell_index == check_call(number)[0] + 1 <= 5  # the first cells, before any work


@pytest.mark.parametrize(("number", "case"), [("06", "high"), ("07", "high")])
def test_the_training_fields_of_the_parameters_cell_reach_every_run_it_trains(number, case, runs):
    """The high-edge run of 06 (3 epochs, lr 0.5, weight decay 0.05, batch 4096) and of 07
    (lr 0.05, ...): every run the notebook asks for with those parameters was trained under
    new cache keys and carries the new values on disk."""
    _, error = runs.submit((number, case)).result()
    assert error is None, error
    # the parameters cell's names in lower case are the grid's (07's NOISE_KINDS: kinds)
    given = {
        {"NOISE_KINDS": "kinds"}.get(name, name.lower()): value
        for name, value in _parameters(number, case).items()
    }
    accepted = set(inspect.signature(plan.EXPERIMENTS[number]).parameters) - {"profile", "train"}
    changed = {k: given[k] for k in recipes.TRAIN_OVERRIDES}
    specs = plan.experiment_specs(
        number, "smoke", **{k: v for k, v in given.items() if k in accepted}, **changed
    )
    default = {s.key() for s in plan.experiment_specs(number, "smoke")}
    assert specs and not {s.key() for s in specs} & default  # the change made new keys
    for spec in specs:
        folder = Path(os.environ["PALVIZ_RUNS"]) / spec.key()
        assert (folder / "metrics.json").exists(), f"{spec.label} was not trained into {folder}"
        train = json.loads((folder / "spec.json").read_text())["train"]
        assert {k: train[k] for k in changed} == changed, spec.label
    if number == "06":  # LDAM-DRW's schedule is re-scaled with the epochs: DRW at 80 % of 3
        ldam = [s for s in specs if s.label == "LDAM-DRW"]
        assert ldam and all(s.train.drw_epoch == 2 and s.train.milestones == (2, 3) for s in ldam)

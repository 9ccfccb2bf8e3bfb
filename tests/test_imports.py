"""The import graph of the palviz package, read from its source with ``ast``: arrows point
one way (no cycle, lazy imports inside functions included), no module reaches into another's
private names, no module-level ``__getattr__`` and no module that nothing uses."""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "palviz"

#: Modules started from outside: ``python -m palviz``, the ``palviz`` command, the
#: notebooks' one name for the experiments and their parameters check, and the book's Sphinx
#: extension (named in ``docs/conf.py``).
ENTRY_POINTS = {
    "palviz",
    "palviz.__main__",
    "palviz.cli",
    "palviz.experiments",
    "palviz.parameters",
    "palviz.book_search",
}


def module_files() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = module_files()
TREES = {name: ast.parse(path.read_text(), filename=str(path)) for name, path in MODULES.items()}


def is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def package_of(name: str) -> str:
    return name if is_package(name) else name.rpartition(".")[0]


def owning_module(dotted: str) -> str | None:
    """The longest prefix of ``dotted`` that is a palviz module."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in MODULES:
            return prefix
    return None


def resolve_from(module: str, node: ast.ImportFrom) -> str:
    """The absolute module name of ``from <node.module> import ...`` inside ``module``."""
    if not node.level:
        return node.module or ""
    base = package_of(module).split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_module_outside(module: str, target: str) -> bool:
    """Whether ``target`` is a private module (``palviz.losses._inputs``) of a package that
    ``module`` is not part of."""
    parent, _, last = target.rpartition(".")
    return is_private(last) and not (module == parent or module.startswith(parent + "."))


def imports_importlib_dynamically(tree: ast.Module) -> bool:
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "import_module"
        for n in ast.walk(tree)
    )


def scan(module: str, tree: ast.Module) -> tuple[set[str], list[str]]:
    """The palviz modules ``module`` imports (anywhere in its source) and its uses of another
    module's private names."""
    edges: set[str] = set()
    private: list[str] = []
    bound: dict[str, str] = {}  # local name -> the palviz module it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = owning_module(alias.name)
                if target is None:
                    continue
                edges.add(target)
                if private_module_outside(module, target):
                    private.append(f"{module}: import {alias.name}")
                if alias.asname:
                    bound[alias.asname] = target
                else:
                    top = alias.name.split(".")[0]
                    bound.setdefault(top, owning_module(top) or top)
        elif isinstance(node, ast.ImportFrom):
            base = resolve_from(module, node)
            if owning_module(base) is None:
                continue
            if private_module_outside(module, owning_module(base)):
                private.append(f"{module}: from {base} import ...")
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in MODULES:
                    edges.add(sub)
                    bound[alias.asname or alias.name] = sub
                    hidden = is_private(alias.name) and package_of(module) != base
                else:
                    target = owning_module(base)
                    edges.add(target)
                    hidden = is_private(alias.name) and target != module
                if hidden:
                    private.append(f"{module}: from {base} import {alias.name}")
    if is_package(module) and imports_importlib_dynamically(tree):
        edges |= {m for m in MODULES if m.rpartition(".")[0] == module}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            target = dotted_module(node.value, bound)
            if target is not None and target != module:
                private.append(f"{module}: {ast.unparse(node)} (line {node.lineno})")
    edges.discard(module)
    return edges, private


def dotted_module(node: ast.expr, bound: dict[str, str]) -> str | None:
    """The palviz module an expression such as ``pdata`` or ``palviz.data`` names, if any."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in bound:
        return None
    dotted = ".".join([bound[node.id], *reversed(parts)])
    return dotted if dotted in MODULES else None


SCANS = {name: scan(name, tree) for name, tree in TREES.items()}
GRAPH = {name: edges for name, (edges, _) in SCANS.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as its modules in order (the first repeated at the end)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def notebook_cells() -> list[tuple[str, ast.Module]]:
    """Every code cell of the notebooks, parsed (IPython's ``%`` and ``!`` lines left out),
    with its notebook's file name."""
    cells = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code":
                source = "".join(cell["source"]).splitlines()
                lines = [ln for ln in source if not ln.lstrip().startswith(("%", "!"))]
                cells.append((path.name, ast.parse("\n".join(lines))))
    return cells


def notebook_imports() -> set[str]:
    """The palviz modules the notebooks' code cells import."""
    found: set[str] = set()
    for _, tree in notebook_cells():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found |= {owning_module(a.name) for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    found.add(sub if sub in MODULES else owning_module(node.module))
    found.discard(None)
    return found


def test_the_scan_sees_what_it_should():
    assert "palviz.losses.registry" in MODULES and "palviz.losses" in MODULES
    assert "palviz.losses.imbalance" in GRAPH["palviz.losses"]  # its explicit list of modules
    assert "palviz.experiments.runcache" in GRAPH["palviz.experiments"]
    assert GRAPH["palviz.losses.registry"] == set()
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    edges, private = scan(
        "palviz.experiments.tables",
        ast.parse(
            "from palviz import data as d\nimport palviz.files\n"
            "def f():\n    from . import runcache\n    return d._x, palviz.files._y, runcache.ok"
        ),
    )
    assert edges == {"palviz.data", "palviz.files", "palviz.experiments.runcache"}
    assert private == [
        "palviz.experiments.tables: d._x (line 5)",
        "palviz.experiments.tables: palviz.files._y (line 5)",
    ]
    assert layer_of("palviz.losses.noise") == layer_of("palviz.plots") == "subject"
    assert layer_of("palviz.experiments.runcache") == "experiments"
    assert layer_of("palviz.cli") == "command line" and layer_of("palviz.book") == "course"


#: The layers above the subject, by the folder or file that holds them. Every other module of
#: the package, a new one included, is the subject: losses, heads, models, data, train,
#: metrics, theory, stats, plots and the paths at the bottom.
UPPER_LAYERS = {
    "palviz.experiments": "experiments",
    # the notebooks' parameters check: outside the package, whose imports load torch
    "palviz.parameters": "experiments",
    "palviz.exercises": "exercises",
    "palviz.cli": "command line",
    "palviz.__main__": "command line",
    "palviz.book": "course",
    "palviz.book_syllabus": "course",
    "palviz.timings": "course",
}
#: The modules the size limit leaves aside: none.
SIZE_EXEMPT: set[str] = set()
MAX_MODULE_LINES = 500


def layer_of(module: str) -> str:
    for prefix, layer in UPPER_LAYERS.items():
        if module == prefix or module.startswith(prefix + "."):
            return layer
    return "subject"


def test_the_subject_imports_nothing_from_the_layers_above_it():
    upward = sorted(
        f"{module} -> {target} ({layer_of(target)})"
        for module, targets in GRAPH.items()
        if module != "palviz" and layer_of(module) == "subject"
        for target in targets
        if layer_of(target) != "subject"
    )
    assert upward == []


def test_the_experiment_layer_imports_neither_the_command_line_nor_the_exercises():
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        if layer_of(module) == "experiments"
        for target in targets
        if layer_of(target) in ("command line", "exercises")
    )
    assert upward == []


def test_no_module_is_longer_than_the_limit():
    long = {
        name: n
        for name, path in MODULES.items()
        if name not in SIZE_EXEMPT and (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_the_imports_have_no_cycle():
    cycle = find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_module_uses_another_modules_private_names():
    private = [p for _, found in SCANS.values() for p in found]
    assert private == []


def test_no_module_defines_a_module_level_getattr():
    lazy = sorted(
        name
        for name, tree in TREES.items()
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name in ("__getattr__", "__dir__")
    )
    assert lazy == []


def test_every_public_name_of_the_experiment_layer_is_imported_by_its_package():
    import palviz.experiments as ex

    assert ex.__all__ and [n for n in ex.__all__ if not hasattr(ex, n)] == []
    assert ex.run_many is importlib.import_module("palviz.experiments.cluster").run_many


def test_the_parameter_check_and_the_workers_first_steps_import_no_torch():
    """The parameters check runs before torch loads (a bad value stops a notebook at once);
    the workers' module imports nothing of palviz's (a worker starts with SIGINT blocked,
    :func:`palviz.experiments.workers.starting_workers`, so the package's imports it runs on
    unpickling are safe from Ctrl-C)."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom palviz.parameters import check_parameters\nprint('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "False", out.stderr
    assert GRAPH["palviz.experiments.workers"] == set()


def test_every_module_is_imported_by_something_or_is_an_entry_point():
    used = set().union(*GRAPH.values()) | ENTRY_POINTS | notebook_imports()
    assert sorted(set(MODULES) - used) == []


def test_every_name_the_notebooks_import_from_plots_is_there():
    import palviz.plots

    wanted = {
        (notebook, alias.name)
        for notebook, tree in notebook_cells()
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "palviz.plots"
        for alias in node.names
    }
    assert wanted
    assert sorted((nb, name) for nb, name in wanted if name not in palviz.plots.__all__) == []


def test_a_notebook_imports_at_most_one_machinery_namespace():
    """A notebook imports the subject modules it teaches, ``palviz.exercises`` and, of the
    experiment layer, the package itself and, first, the parameters check."""
    by_notebook: dict[str, set[str]] = {}
    for notebook, tree in notebook_cells():
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [owning_module(a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [
                    f"{node.module}.{a.name}"
                    if f"{node.module}.{a.name}" in MODULES
                    else owning_module(node.module)
                    for a in node.names
                ]
            for name in names:
                if name and layer_of(name) in ("experiments", "command line", "course"):
                    by_notebook.setdefault(notebook, set()).add(name)
    assert by_notebook, "no notebook imports the experiment layer: the scan is broken"
    allowed = {"palviz.experiments", "palviz.parameters"}
    assert {nb: found for nb, found in by_notebook.items() if not found <= allowed} == {}

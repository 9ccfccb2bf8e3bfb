"""``palviz figures``'s notebook runner cannot hang: a slider cell in a kernel it runs shows
the note, not a widget; a cell that runs past the profile's limit fails its notebook, naming
the notebook and the cell, with the last good page kept; a reply the kernel never sends is
noticed within the grace period and the notebook runs again once."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from palviz import book, plots
from palviz.cli import kernel as cli_kernel
from palviz.files import project_root

LESSON = "# 07 · A lesson\n\n**What you will learn.** how a runner stops"


def write_lesson(tmp_path: Path, *codes: str) -> Path:
    path = tmp_path / "notebooks" / "07_lesson.ipynb"
    path.parent.mkdir(exist_ok=True)
    cells = [new_markdown_cell(LESSON), *(new_code_cell(code) for code in codes)]
    nbformat.write(new_notebook(cells=cells), path)
    return path


def code_cells(stem_glob: str = "[0-9][0-9]_*.ipynb"):
    for path in sorted((project_root() / "notebooks").glob(stem_glob)):
        nb = nbformat.read(path, as_version=4)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                yield path.stem, index, cell.source


@pytest.fixture
def figures_env(tmp_path, monkeypatch):
    monkeypatch.setenv("PALVIZ_FIGURES", str(tmp_path / "figures"))
    return tmp_path / "build" / "quick"


def test_no_lesson_shows_a_widget_of_its_own():
    offenders = [
        f"{stem} cell {i}"
        for stem, i, source in code_cells()
        if re.search(r"^\s*(import|from) ipywidgets|display\(widgets", source, re.MULTILINE)
    ]
    assert not offenders, f"a lesson shows widgets past palviz.plots.sliders: {offenders}"
    users = {stem for stem, _, source in code_cells() if "sliders(" in source}
    assert {"01_simplex_prototypes", "02_minority_collapse", "07_noisy_labels"} <= users


def test_widgets_are_shown_only_in_a_kernel_a_person_drives(monkeypatch):
    for name in ("PALVIZ_WIDGETS", "JPY_SESSION_NAME", "VSCODE_PID"):
        monkeypatch.delenv(name, raising=False)
    assert not plots.widgets_shown()  # papermill, nbmake, a script
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/me/notebooks/02_minority_collapse.ipynb")
    assert plots.widgets_shown()  # JupyterLab
    monkeypatch.setenv("PALVIZ_WIDGETS", "0")
    assert not plots.widgets_shown()
    monkeypatch.delenv("JPY_SESSION_NAME")
    monkeypatch.setenv("PALVIZ_WIDGETS", "1")
    assert plots.widgets_shown()


def test_lesson_02s_slider_cell_runs_to_the_end_in_palviz_figures_at_quick(figures_env, tmp_path):
    (slider_cell,) = [
        s for stem, _, s in code_cells("02_*.ipynb") if "sliders(" in s and "import" in s
    ]
    setup = (
        "import matplotlib.pyplot as plt\n"
        "INTERACTIVE, profile, ENERGY = True, 'quick', 5.0\n"
        "def draw(energy):\n"
        "    fig, ax = plt.subplots()\n"
        "    ax.set_title(f'E = {energy}')\n"
        "    return fig"
    )
    path = write_lesson(tmp_path, setup, slider_cell)
    start = time.perf_counter()
    cli_kernel.execute_notebook(path, "quick", figures_env, timeout=120)
    assert time.perf_counter() - start < 120
    executed = nbformat.read(figures_env / "07_lesson.ipynb", as_version=4)
    (output,) = executed.cells[2].outputs
    assert output["data"]["text/html"] == plots.WIDGET_NOTE
    assert book.WIDGET_MIME not in json.dumps(executed)


def test_a_cell_past_the_profile_limit_fails_naming_the_notebook_and_the_cell(
    figures_env, tmp_path, monkeypatch
):
    good = new_notebook(cells=[new_markdown_cell(LESSON), new_code_cell("1")])
    book.write_copy(good, figures_env, "07_lesson", "quick")
    kept = (figures_env / "07_lesson.ipynb").read_bytes()
    monkeypatch.setenv("PALVIZ_CELL_TIMEOUT", "5")
    assert cli_kernel.cell_timeout("quick") == 5
    path = write_lesson(tmp_path, "x = 1", "import time\ntime.sleep(600)")
    start = time.perf_counter()
    with pytest.raises(book.NotebookFailed) as caught:
        cli_kernel.execute_notebook(path, "quick", figures_env)
    assert time.perf_counter() - start < 90
    message = str(caught.value)
    assert "notebook 07_lesson failed: cell 3: CellTimeoutError" in message
    assert "run it again with: palviz figures --profile quick --only 07" in message
    assert (figures_env / "07_lesson.ipynb").read_bytes() == kept


# A cell that makes its kernel drop every execute reply from then on (the reply is built, as
# ipykernel builds it, but never sent): the kernel goes idle and its client waits. With
# ``once``, only in the first kernel (a marker file says it happened).
DROP_REPLIES = """
from pathlib import Path
marker = Path({marker!r})
if not ({once} and marker.exists()):
    marker.touch()
    kernel = get_ipython().kernel
    send = kernel.session.send
    def dropping(stream, msg_or_type, content=None, parent=None, *args, **kwargs):
        if msg_or_type == "execute_reply":
            return kernel.session.msg("execute_reply", content, parent, kwargs.get("metadata"))
        return send(stream, msg_or_type, content, parent, *args, **kwargs)
    kernel.session.send = dropping
"""


def test_a_lost_reply_is_noticed_and_the_notebook_runs_again(
    figures_env, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("PALVIZ_REPLY_GRACE", "3")
    marker = tmp_path / "dropped"
    path = write_lesson(tmp_path, DROP_REPLIES.format(marker=str(marker), once=True), "print(2)")
    start = time.perf_counter()
    cli_kernel.execute_notebook(path, "quick", figures_env, timeout=300)
    assert time.perf_counter() - start < 60
    assert marker.exists()
    assert "reply did not come within 3 s; running it again" in capsys.readouterr().err
    executed = nbformat.read(figures_env / "07_lesson.ipynb", as_version=4)
    assert executed.cells[2].outputs[0]["text"] == "2\n"


def test_a_reply_lost_twice_fails_the_notebook(figures_env, tmp_path, monkeypatch):
    monkeypatch.setenv("PALVIZ_REPLY_GRACE", "3")
    drop = DROP_REPLIES.format(marker=str(tmp_path / "dropped"), once=False)
    path = write_lesson(tmp_path, drop, "print(2)")
    with pytest.raises(book.NotebookFailed) as caught:
        cli_kernel.execute_notebook(path, "quick", figures_env, timeout=300)
    assert "07_lesson failed: cell 2: ReplyLost: the kernel went idle" in str(caught.value)
    assert not (figures_env / "07_lesson.ipynb").exists()

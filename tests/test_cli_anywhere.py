"""Every ``palviz`` command behaves the same from any folder: outside a checkout the project is
``$PALVIZ_ROOT``, else the checkout the installed package lives in, else one line naming
``PALVIZ_ROOT``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from palviz.files import FOLDERS, ProjectNotFound, project_root

ROOT = Path(__file__).resolve().parents[1]


def palviz(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    # the root and the folders found from it, as a user who set none of them has them
    unset = {"PALVIZ_ROOT", *FOLDERS}
    environ = {k: v for k, v in os.environ.items() if k not in unset}
    environ.update({"PYTHONPATH": str(ROOT), **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "palviz", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def outside(tmp_path) -> Path:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    return folder


COMMANDS = [
    ("plan", "--profile", "smoke"),
    ("runs",),
    ("methods",),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_a_command_run_outside_the_checkout_does_what_it_does_inside(command, outside):
    inside = palviz(ROOT, *command)
    there = palviz(outside, *command)
    assert inside.returncode == 0, inside.stderr
    assert (there.returncode, there.stdout, there.stderr) == (0, inside.stdout, inside.stderr)


def test_runs_pack_outside_the_checkout_packs_the_checkouts_cache(outside, tmp_path):
    """The run cache of the checkout (``$PALVIZ_RUNS`` unset) is the one packed from anywhere."""
    where = [sys.executable, "-c", "from palviz.files import runs_dir; print(runs_dir())"]
    env = {k: v for k, v in os.environ.items() if k not in {"PALVIZ_ROOT", *FOLDERS}}
    env["PYTHONPATH"] = str(ROOT)
    for cwd in (ROOT, outside):
        found = subprocess.run(where, cwd=cwd, env=env, capture_output=True, text=True)
        assert found.stdout.strip() == str(ROOT / "runs"), found.stderr
    inside = palviz(ROOT, "runs", "pack", "--profile", "smoke", "-o", str(tmp_path / "in.tar"))
    there = palviz(outside, "runs", "pack", "--profile", "smoke", "-o", str(tmp_path / "out.tar"))
    assert inside.returncode == there.returncode
    assert there.stdout.replace("out.tar", "in.tar") == inside.stdout


def test_the_root_is_palviz_root_else_the_checkout_else_the_installed_package(outside, monkeypatch):
    monkeypatch.delenv("PALVIZ_ROOT", raising=False)
    assert project_root(ROOT / "notebooks") == ROOT
    assert project_root(outside) == ROOT  # this package is installed from the checkout
    monkeypatch.setenv("PALVIZ_ROOT", str(outside))
    assert project_root(ROOT) == outside


def test_a_package_outside_any_checkout_needs_palviz_root(outside, tmp_path):
    """A copy of the package that lives in no checkout, run from a folder that is in none."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "palviz", site / "palviz", ignore=shutil.ignore_patterns("__pycache__"))
    env = {"PYTHONPATH": str(site)}
    refused = palviz(outside, "plan", "--profile", "smoke", env=env)
    assert refused.returncode == 2
    assert refused.stdout == ""
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "set PALVIZ_ROOT" in lines[0], refused.stderr
    allowed = palviz(outside, "plan", "--profile", "smoke", env={**env, "PALVIZ_ROOT": str(ROOT)})
    assert allowed.returncode == 0, allowed.stderr


def test_project_not_found_names_the_variable(tmp_path, monkeypatch):
    import palviz.files as files

    monkeypatch.delenv("PALVIZ_ROOT", raising=False)
    monkeypatch.setattr(files, "__file__", str(tmp_path / "site" / "palviz" / "files.py"))
    with pytest.raises(ProjectNotFound, match="PALVIZ_ROOT"):
        files.project_root(tmp_path)

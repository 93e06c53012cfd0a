"""Install paths: the lab extra brings the lab, and building without Node.js says what
happened (an editable install goes on without the extension, a wheel build stops)."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # extension/hatch_build.py, as hatch-jupyter-builder loads it
from extension import hatch_build  # noqa: E402


def test_the_lab_extra_brings_everything_the_tutorials_import():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {req.split(">")[0].split("=")[0].split("[")[0].strip().lower()
             for req in project["optional-dependencies"]["lab"]}
    assert {"ipython", "ipywidgets", "jupyterlab", "matplotlib", "pygments"} <= names


@pytest.fixture
def no_node(monkeypatch):
    pytest.importorskip("hatch_jupyter_builder")
    monkeypatch.delenv("KERNLAB_SKIP_JS", raising=False)
    monkeypatch.setattr(hatch_build, "stale", lambda: True)
    monkeypatch.setattr(hatch_build.shutil, "which", lambda name: None)
    built = []
    import hatch_jupyter_builder
    monkeypatch.setattr(hatch_jupyter_builder, "npm_builder", lambda *a, **k: built.append(a))
    return built


def test_an_editable_install_without_node_says_the_extension_was_skipped(no_node, capsys):
    hatch_build.build("wheel", "editable")
    assert no_node == []
    err = capsys.readouterr().err
    assert "Node.js was not found" in err and "SKIPPED the JupyterLab extension" in err


def test_a_wheel_build_without_node_stops_with_one_message(no_node):
    with pytest.raises(SystemExit, match="needs Node.js >= 20 .* KERNLAB_SKIP_JS=1"):
        hatch_build.build("wheel", "standard")
    assert no_node == []

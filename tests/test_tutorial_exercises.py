"""The tutorials' exercises: every notebook has one, each exercise cell is followed by a hidden
self-check, the shipped start makes the check say "✗ Not yet", and the worked solutions in
notebooks/solutions/ make it say "✓ Right" when pasted into the exercise cells and the
notebook is run (slow: it runs every notebook once more)."""
import json
import os
import re
from importlib import util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SOLUTION = re.compile(r"^## (exercise-[\w-]+)[^\n]*\n.*?```python\n(.*?)\n```", re.S | re.M)


def load(path):
    return json.loads(path.read_text())


def source(cell):
    return "".join(cell["source"])


def tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def solutions(path):
    return dict(SOLUTION.findall((path.parent / "solutions" / f"{path.stem}.md").read_text()))


def printed(cell):
    texts = [out.get("text", "") for out in cell.get("outputs", [])
             if out.get("output_type") == "stream"]
    return "".join("".join(t) if isinstance(t, list) else t for t in texts).strip()


def exercises(nb):
    """(exercise cell, its check cell) pairs, in order."""
    cells = nb["cells"]
    return [(c, cells[i + 1]) for i, c in enumerate(cells) if "exercise" in tags(c)]


def test_the_tutorials_are_numbered_in_order_and_the_readme_lists_them():
    assert len(NOTEBOOKS) >= 9
    assert [p.name[:2] for p in NOTEBOOKS] == [f"{k:02}" for k in range(1, len(NOTEBOOKS) + 1)]
    readme = (ROOT / "notebooks" / "README.md").read_text()
    for path in NOTEBOOKS:
        assert f"]({path.name})" in readme, f"notebooks/README.md does not link {path.name}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_each_exercise_has_a_hidden_check_that_says_not_yet_as_shipped(path):
    pairs = exercises(load(path))
    assert pairs, f"{path.name} has no cell tagged 'exercise'"
    for exercise, check in pairs:
        assert "exercise-check" in tags(check), f"{exercise['id']}: no check cell follows it"
        assert check["metadata"].get("jupyter", {}).get("source_hidden") is True
        assert "raises-exception" not in tags(exercise) + tags(check)
        assert printed(check).startswith("✗ Not yet: "), (exercise["id"], printed(check))
    assert set(solutions(path)) == {e["id"] for e, _ in pairs}, \
        f"notebooks/solutions/{path.stem}.md must solve exactly the notebook's exercises"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_the_solutions_make_every_check_say_right(path, tmp_path, monkeypatch):
    for name in ("nbclient", "nbval", "ipykernel"):
        if util.find_spec(name) is None:
            pytest.skip(f"{name} is not installed (the dev extra brings it)")
    if path.stem == "09_torch_interop" and util.find_spec("torch") is None:
        pytest.skip("notebook 9 needs PyTorch")
    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient
    from nbval.kernel import CURRENT_ENV_KERNEL_NAME, NbvalKernelspecManager

    nb = nbformat.read(path, as_version=4)
    answers = solutions(path)
    for cell in nb.cells:
        if cell.get("id") in answers:
            cell.source = answers[cell.id]
    # the kernel (this Python, as nbval --nbval-current-env runs it) imports this checkout
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    monkeypatch.setenv("MPLBACKEND", "agg")
    kernel = KernelManager(kernel_name=CURRENT_ENV_KERNEL_NAME,
                           kernel_spec_manager=NbvalKernelspecManager())
    NotebookClient(nb, km=kernel, timeout=300, store_widget_state=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    checks = [c for c in nb.cells if "exercise-check" in c.metadata.get("tags", [])]
    assert checks
    for check in checks:
        assert printed(check).startswith("✓ Right: "), (check.id, printed(check))

"""The documentation: it builds with warnings as errors, its generated pages cover every
builtin, setting and Warp difference, every public name has a docstring, and the list of
what Warp has and kernlab lacks stays true both ways."""
import fnmatch
import importlib.util
import os
import pydoc
import subprocess
import sys
import types
from pathlib import Path

import pytest

import kernlab as kl
from kernlab.builtins.expand import EXPANSIONS
from kernlab.builtins.registry import REGISTRY
from kernlab.lang import FUNCTIONS, SpecialForm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import warp_gaps  # noqa: E402


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """docs/ built as CI builds it: HTML, every warning an error."""
    pytest.importorskip("sphinx", reason="sphinx is not installed (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("docs") / "html"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q",
                           "-b", "html", str(ROOT / "docs"), str(out)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def _builtin_names() -> set[str]:
    """Every builtin, straight from the registry, the expansions and kernlab's exports."""
    exported_forms = {n for n in kl.__all__ if isinstance(getattr(kl, n), SpecialForm)}
    return set(REGISTRY) | set(EXPANSIONS) | set(FUNCTIONS) | exported_forms | {"adjoint"}


def test_docs_build_with_warnings_as_errors(site):
    for page in ("index", "language", "types", "builtins", "arrays", "launch", "tape",
                 "autodiff", "lab", "cuda", "interop", "configuration", "warp", "api"):
        assert (site / f"{page}.html").is_file(), page


def test_every_builtin_has_an_entry_in_the_reference(site):
    page = (site / "builtins.html").read_text()
    missing = [n for n in sorted(_builtin_names())
               if f'id="kl-{n.replace("_", "-")}"' not in page]
    assert not missing


def test_reference_shows_registry_signatures_and_differentiability(site):
    from kernlab.builtins.reference import describe
    for name in ("sin", "floor", "dot"):
        sig = REGISTRY[name].candidates().split(" | ")[0]
        entry = describe(name)
        assert entry.differentiable == ("yes" if REGISTRY[name].differentiable else "no")
        assert any(sig.split("(")[0] in s for s in entry.signatures)
    assert "sin(float32) -> float32" in describe("sin").signatures
    assert "sin(bfloat16) -> bfloat16" in describe("sin").signatures
    assert describe("floor").differentiable == "no"


def test_every_exported_builtin_has_a_summary_and_its_own_docstring():
    for name in FUNCTIONS:
        doc = getattr(kl, name).__doc__ if hasattr(kl, name) else FUNCTIONS[name].__doc__
        assert doc.startswith(f"{name}: ") and "Signatures:" in doc, name
        assert f"{name}: ." not in doc, f"{name} has no summary line"


def test_every_public_name_has_a_docstring():
    undocumented = []
    for name in kl.__all__:
        obj = getattr(kl, name)
        if isinstance(obj, (bool, int, float)):  # kl.pi and friends: numbers, listed in docs
            continue
        doc = getattr(obj, "__doc__", None)
        own = isinstance(obj, (type, types.FunctionType, types.ModuleType)) \
            or doc != type(obj).__doc__
        if not (isinstance(doc, str) and doc.strip() and own):
            undocumented.append(name)
    assert not undocumented


def test_help_lists_launch_array_tape_and_the_builtins():
    text = pydoc.render_doc(kl, renderer=pydoc.plaintext)
    for name in ("launch", "array", "Tape", "zeros", "sin", "quat_rotate", "vec3"):
        assert f"\n    {name}" in text or f"{name} = " in text or f"class {name}" in text, name
    assert {"launch", "array", "Tape", "sin", "config"} <= set(kl.__all__)
    assert "types" not in kl.__all__  # star imports must not shadow the standard library


def test_configuration_page_lists_every_setting(site):
    page = (site / "configuration.html").read_text()
    settings = [n for n, v in vars(kl.config).items() if not n.startswith("_")
                and isinstance(v, (bool, int, str, type(None)))]
    assert {"bounds_check", "cache_dir", "traceback"} <= set(settings)
    assert [n for n in settings if f"kl.config.{n}" not in page] == []


def test_warp_page_lists_every_conformance_difference_and_exclusion(site):
    sel = _load(ROOT / "tests" / "warp_conformance" / "selection.py", "selection_for_docs")
    page = (site / "warp.html").read_text()
    for test_id in list(sel.DIFFERS_ON_PURPOSE) + list(sel.EXCLUDED):
        assert test_id in page, test_id
    assert "Tile programming" in page and "launch_tiled" in page


def test_no_missing_warp_name_is_in_kernlab():
    present = set(dir(kl))
    wrong = [(p, fam) for pats, fam, _ in warp_gaps.MISSING for p in pats
             for name in present if fnmatch.fnmatchcase(name, p)]
    assert not wrong, "implemented now: move these out of docs/_ext/warp_gaps.py"


def test_missing_list_covers_everything_warp_has():
    wp = pytest.importorskip("warp", reason="warp-lang is not installed")
    from warp._src.context import builtin_functions
    warp_names = {n for n in dir(wp) if not n.startswith("_")} | set(builtin_functions)
    unlisted = sorted(n for n in warp_names
                      if not hasattr(kl, n) and warp_gaps.family_of(n) is None)
    assert not unlisted, "add these to docs/_ext/warp_gaps.py (or implement them)"


def test_each_exported_builtin_has_that_name_in_warp():
    wp = pytest.importorskip("warp", reason="warp-lang is not installed")
    from warp._src.context import builtin_functions
    exported = set(FUNCTIONS) | {n for n in kl.__all__ if isinstance(getattr(kl, n),
                                                                     SpecialForm)}
    # wp.adjoint[x] is read by Warp's code generator by its spelling, not an attribute
    absent = [n for n in sorted(exported) if n not in builtin_functions
              and not hasattr(wp, n) and n != "adjoint"]
    assert not absent

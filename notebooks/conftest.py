"""The tutorial notebooks are tests: nbval runs every cell and compares its output with the
output saved in the notebook (``--nbval``, set in pyproject.toml's pytest table).

What may differ from run to run is either masked here or marked in the notebook itself:
compile times and cache state in the ``%%kernel`` summary are masked by the patterns in
nbval_sanitize.cfg; timings, machine details, listings of the CUDA backend and
``kl.lab.inspect`` views (which hold the LLVM, CUDA C and PTX listings) are in cells tagged
``nbval-ignore-output`` (cell metadata); images are never compared (nbval's default).
A cell that must fail, to show an error message, is tagged ``raises-exception``. The
exercises' check cells (tagged ``exercise-check``) never fail: as shipped they print
"✗ Not yet" for the exercise's start, and that output is compared like any other (README.md).

To refresh the saved outputs after changing a notebook or kernlab, from the repository root
(``PYTHONPATH=$PWD`` in front makes the notebooks' kernel import this checkout; a relative
path would be read from notebooks/, where the kernel runs):

    jupyter nbconvert --to notebook --execute --inplace \
        --ExecutePreprocessor.store_widget_state=False \
        --ExecutePreprocessor.record_timing=False notebooks/*.ipynb
"""
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def pytest_addoption(parser):
    """pyproject.toml's ``addopts`` name the test suite's options; a run of the notebooks alone
    (``python -m pytest notebooks/01_first_kernel.ipynb``) never loads tests/conftest.py, so
    accept them here too. They change nothing for the notebooks."""
    for name in ("--cuda-emulated", "--long-fuzz"):
        try:
            parser.addoption(name, action="store_true", default=False,
                             help="see tests/conftest.py")
        except ValueError:  # tests/conftest.py registered it already
            pass


def pytest_configure(config):
    option = config.option
    if getattr(option, "nbval_sanitize_with", "") is None:  # nbval present, no file given
        option.nbval_sanitize_with = str(HERE / "nbval_sanitize.cfg")
    # The notebooks' kernel is a separate Python process: let it import kernlab from this
    # checkout, installed or not, as the tests do.
    paths = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))


def pytest_collection_modifyitems(config, items):
    """The tutorials run in the full suite, not in the fast tier (``-m "not slow"``). (Under
    pytest-xdist, ``--dist loadfile`` in pyproject.toml keeps a notebook's cells on one
    worker, in order, in one kernel.)"""
    import pytest
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.slow)


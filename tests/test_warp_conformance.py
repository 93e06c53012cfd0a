"""NVIDIA Warp's own tests on kernlab: the quick subset of the conformance run.

Each file in ``selection.CI_FILES`` runs through tests/warp_conformance/run.py (Warp's test
file from the installed warp-lang, ``import warp`` bound to kernlab); every test Warp itself
passes on the CPU (baseline.txt) must pass here too, less the listed exclusions. The whole
run is ``python tests/warp_conformance/run.py`` (README.md). Skipped without warp-lang.
"""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "warp_conformance"))
import run as conformance  # noqa: E402
from selection import CI_FILES, excluded_reason  # noqa: E402

pytestmark = pytest.mark.skipif(conformance.warp_tests_dir() is None,
                                reason="warp-lang is not installed (pip install -e '.[conformance]')")


@pytest.mark.parametrize("name", CI_FILES)
def test_warp_test_file_passes_on_kernlab(name):
    baseline = conformance.load_baseline()
    prefix = name.replace("/", ".") + "."
    expected = {k for k in baseline if k.startswith(prefix) and excluded_reason(k) is None}
    assert expected, f"no baseline tests for {name}"
    records = conformance.run_child(name, False, per_test_s=120, file_s=600)
    failing = {k: v for k, v in records.items()
               if (k in expected or ":" in k) and v[0] != "pass"}
    missing = expected - set(records)
    assert not failing and not missing, (failing, sorted(missing))

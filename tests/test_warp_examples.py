"""NVIDIA Warp's own examples on kernlab: each quick one gives Warp's numbers.

Each example of ``EXAMPLES`` marked quick runs through tests/warp_conformance/examples.py:
the example file from the installed warp-lang is run once with Warp (the reference) and once
with ``import warp`` bound to kernlab, both on the CPU, headless, for a few steps; their
state arrays must agree within the example's tolerance. The whole run, with timings and
the list of examples left out and why, is ``python tests/warp_conformance/examples.py``
(README.md). Skipped without warp-lang.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "warp_conformance"))
import examples as runner  # noqa: E402

pytestmark = pytest.mark.skipif(runner.warp_examples_dir() is None,
                                reason="warp-lang is not installed (pip install -e '.[conformance]')")

QUICK = [name for name, spec in runner.EXAMPLES.items() if spec.quick]


@pytest.mark.parametrize("name", QUICK)
def test_warp_example_matches_warp(name):
    row = runner.check_example(name, timeout_s=300)
    assert row["status"] == "match", row["first_error"]


def test_every_example_file_is_run_or_left_out_with_a_reason():
    on_disk = {f"{p.parent.name}/{p.stem}" for sub in ("core", "optim")
               for p in (runner.warp_examples_dir() / sub).glob("example_*.py")}
    assert on_disk == set(runner.EXAMPLES) | set(runner.EXCLUDED)
    assert not set(runner.EXAMPLES) & set(runner.EXCLUDED)
    assert all(reason.strip() for reason in runner.EXCLUDED.values())


def test_the_comparison_sees_a_difference_beyond_the_tolerance():
    ref = {"x": np.array([1.0, 100.0]), "t": np.array(0.5)}
    assert runner.compare(ref, {"x": np.array([1.0, 100.0]), "t": np.array(0.5)}, 1e-4) \
        == (0.0, "")
    diff, first = runner.compare(ref, {"x": np.array([1.0, 100.1]), "t": np.array(0.5)},
                                 1e-4)
    assert diff == pytest.approx(0.1) and first.startswith("x[1]")
    assert runner.compare(ref, {"x": np.array([1.0]), "t": np.array(0.5)}, 1e-4)[1] \
        .startswith("x: shape")

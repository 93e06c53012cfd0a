"""Which of Warp's test files the conformance runner runs, and what it leaves out and why.

One place for every exclusion: a test id (``file.Class.test_name``, or a prefix of one
ending in ``*``) and the reason. Tests are left out only when they exercise Warp's
internals (``warp._src``, its code generator, module system or C++ build) or features that
need a GPU; everything about the kernel language, arrays, launches, the tape and autodiff
counts.
"""
from __future__ import annotations

# Warp 1.19 file names; Warp keeps transforms' tests in test_spatial.
FILES = [
    "test_grad", "test_tape", "test_grad_customs", "test_grad_debug", "test_copy",
    "test_func", "test_conditional", "test_launch", "test_lerp", "test_smoothstep",
    "test_rounding", "test_iter", "test_scalar_ops", "test_unpack", "test_vec_lite",
    "matrix/test_mat_lite", "test_vec_assign_copy", "test_lvalue", "test_atomic",
    "test_overwrite", "test_composite_component_adjoint", "test_math", "test_print",
    "test_array", "test_vec", "test_arithmetic", "test_special_values", "test_struct",
    "test_quat", "test_spatial",
]

# The quick subset CI runs (the whole run is a documented command: see README.md).
CI_FILES: list[str] = []  # filled with files kernlab passes completely

EXCLUDED: dict[str, str] = {
}


def excluded_reason(test_id: str) -> str | None:
    """The reason a test is left out, or None when it counts."""
    if test_id in EXCLUDED:
        return EXCLUDED[test_id]
    for key, reason in EXCLUDED.items():
        if key.endswith("*") and test_id.startswith(key[:-1]):
            return reason
    return None

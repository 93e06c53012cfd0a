"""Small helpers shared by the test modules."""
import inspect
import pathlib
import shutil

import numpy as np

import kernlab as kl


def f32(data):
    return kl.array(np.asarray(data, np.float32), dtype=kl.float32)


def i32(data):
    return kl.array(np.asarray(data, np.int32), dtype=kl.int32)


def run(kernel, dim, *args):
    kl.launch(kernel, dim, inputs=list(args))


def line_of(obj, needle: str) -> int:
    """The file line of the one line of ``obj``'s source that contains ``needle``."""
    pyfunc = getattr(obj, "pyfunc", obj)
    lines, first = inspect.getsourcelines(pyfunc)
    hits = [first + k for k, text in enumerate(lines) if needle in text]
    assert len(hits) == 1, f"{needle!r} should occur once in {pyfunc.__name__}"
    return hits[0]


@kl.kernel  # row sums: a kernel with a loop, used by several test files
def sum_2d_rows(a: kl.array(dtype=float, ndim=2), out: kl.array(dtype=float)):
    i = kl.tid()
    s = float(0.0)
    for j in range(a.shape[1]):
        s += a[i, j]
    out[i] = s


def find_ptxas() -> str | None:
    """The CUDA toolkit's ptxas (PATH, /usr/local/cuda, or the pip-installed NVIDIA tools)."""
    found = shutil.which("ptxas")
    if found is None and pathlib.Path("/usr/local/cuda/bin/ptxas").exists():
        found = "/usr/local/cuda/bin/ptxas"
    if found is None:
        try:
            from cuda.pathfinder import find_nvidia_binary_utility
            found = find_nvidia_binary_utility("ptxas")
        except Exception:
            found = None
    return found

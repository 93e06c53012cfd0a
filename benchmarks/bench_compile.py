"""Compile and load times, each measured in fresh processes running compile_probe.py.

cold: an empty cache folder; the first forward and adjoint launch compile both variants.
warm: a second process on the same, now filled, cache folder.
import: `import LIB` alone (Warp: plus wp.init()), the best of a few fresh processes.
Every time starts after the import, so none includes Python's own start-up.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile

from common import HERE, Row, optional, warp

LIBS = ("kernlab", "warp", "numba")


def _probe(lib: str, phase: str, cache: str, backend: str) -> dict:
    env = dict(os.environ, KERNLAB_CACHE_DIR=os.path.join(cache, "kernlab"),
               NUMBA_CACHE_DIR=os.path.join(cache, "numba"),
               BENCH_WARP_CACHE=os.path.join(cache, "warp"),
               PYTHONPATH=os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
    # Python's bytecode cache on, as in any installed package: a process that must compile
    # kernlab's (or a peer's) modules from source first would time the Python compiler.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run([sys.executable, str(HERE / "compile_probe.py"), lib, phase, backend],
                          env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise RuntimeError(f"{lib} probe failed: {tail[0]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _available(lib: str) -> bool:
    return warp() is not None if lib == "warp" else optional(lib) is not None


def _best(results: list[dict]) -> dict:
    """The run with the shortest "first" time (its breakdown stays consistent)."""
    return min(results, key=lambda r: r["first"])


def run(settings) -> list[Row]:
    cold, warm, imports, failures, medians = {}, {}, {}, [], {}
    for lib in LIBS:
        if not _available(lib):
            continue
        firsts, seconds = [], []
        try:
            _probe(lib, "import", tempfile.gettempdir(), settings.backend)  # writes bytecode
            for _ in range(settings.compile_runs):
                with tempfile.TemporaryDirectory(prefix="kernlab-bench-") as cache:
                    firsts.append(_probe(lib, "first", cache, settings.backend))
                    seconds.append(_probe(lib, "first", cache, settings.backend))
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as err:
            failures.append(str(err))
            continue
        cold[lib], warm[lib] = _best(firsts), _best(seconds)
        medians[lib] = statistics.median(r["first"] for r in firsts)
    with tempfile.TemporaryDirectory(prefix="kernlab-bench-") as cache:
        for lib in ("kernlab", "numpy") + LIBS[1:]:
            if _available(lib):
                imports[lib] = min(_probe(lib, "import", cache, settings.backend)["import"]
                                   for _ in range(3))

    def breakdown(result):
        if "frontend" not in result:
            return ""
        text = (f"kl: front end {result['frontend'] * 1e3:.1f} ms + first fwd launch "
                f"{result['forward'] * 1e3:.1f} ms + first adj launch "
                f"{result['adjoint'] * 1e3:.1f} ms, thread CPU time "
                f"{result['first_cpu'] * 1e3:.1f} ms, llvmlite "
                f"{'loaded' if result.get('llvmlite') else 'not loaded'}")
        if result.get("quick"):
            text += (f" (quick code; O2 code in use after {result['optimised'] * 1e3:.0f} ms, "
                     "compiled on a helper thread)")
        return text + "; "
    runs = f"best of {settings.compile_runs} fresh process(es)"
    if "kernlab" in medians and settings.compile_runs > 1:
        runs += f" (kl median {medians['kernlab'] * 1e3:.0f} ms)"
    failed = ("; FAILED: " + "; ".join(failures)) if failures else ""
    return [
        Row("cold compile, first fwd+adj launch", "1 kernel",
            {lib: r["first"] for lib, r in cold.items()},
            breakdown(cold.get("kernlab", {})) + f"Numba: forward only; {runs}" + failed),
        Row("warm load, first fwd+adj launch", "1 kernel",
            {lib: r["first"] for lib, r in warm.items()},
            breakdown(warm.get("kernlab", {})) + "2nd process, same cache folder, "
            "results checked against NumPy"),
        Row("warm load itself", "1 kernel",
            {lib: r["codegen"] for lib, r in warm.items() if "codegen" in r},
            "kl: the first fwd and adj launches (the objects compiled, or loaded from the "
            "cache by kernlab's own loader), IR built; Warp: wp.load_module"),
        Row("import", "", imports, "fresh process, best of 3; Warp: import warp + wp.init()"),
    ]

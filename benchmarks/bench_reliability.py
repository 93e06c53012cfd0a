"""What kernlab's safety nets cost (issue 17), printed as one table:

    python benchmarks/bench_reliability.py [--quick] [--only tape|compile|memory] [--repeats N]

- tape: a 10M-element saxpy ``z = a*x + y`` recorded on a tape and run backwards. Inputs
  made by kernlab (never handed out as NumPy views) need no checksum; inputs that share a
  NumPy array (``kl.from_numpy``) are checksummed at record time and again in backward().
  The row gives both, and the checksum of one input alone.
- compile: a kernel of n straight-line statements and its adjoint, compiled cold in a fresh
  process (no disk cache), n = 500 ... 4,000.
- memory: resident memory kept per re-run of an edited kernel (the same function body with a
  new constant each time, as a notebook cell re-run with an edit), in a fresh process that
  compiles each version, then in another that loads each from the disk cache.

Nothing here asserts a timing: this is a report.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this checkout's kernlab

import numpy as np  # noqa: E402

import kernlab as kl  # noqa: E402
from common import fmt_time, race  # noqa: E402
from kernlab.runtime import exports  # noqa: E402


@kl.kernel
def saxpy_out(x: kl.array(dtype=float), y: kl.array(dtype=float), a: float,
              z: kl.array(dtype=float)):
    i = kl.tid()
    z[i] = a * x[i] + y[i]


def tape_rows(n: int, repeats: int) -> list:
    rng = np.random.default_rng(0)
    host_x = rng.standard_normal(n).astype(np.float32)
    host_y = rng.standard_normal(n).astype(np.float32)

    def taped(shared: bool):
        make = (lambda h: kl.from_numpy(h.copy(), requires_grad=True)) if shared else \
            (lambda h: kl.array(h, dtype=float, requires_grad=True))
        x, y = make(host_x), make(host_y)
        z = kl.zeros(n, dtype=float, requires_grad=True)
        seed = kl.ones(n, dtype=float)

        def run():
            with kl.Tape() as tape:
                kl.launch(saxpy_out, n, inputs=[x, y, 0.5], outputs=[z])
            tape.backward(grads={z: seed})
            kl.synchronize()
        return run

    data = host_x.copy()
    times = race({"kernlab arrays": taped(False), "from_numpy arrays": taped(True),
                  "one checksum": lambda: exports.checksum(data)}, repeats)
    base = times["kernlab arrays"]
    extra = times["from_numpy arrays"] - base
    return [
        ("saxpy tape, record + backward (kernlab arrays: no checksum)", f"{n:,}", base, ""),
        ("saxpy tape, record + backward (from_numpy: x, y checksummed)", f"{n:,}",
         times["from_numpy arrays"], f"+{extra / base:.0%} over kernlab arrays"),
        ("CRC-32 of one input", f"{4 * n / 1e6:.0f} MB", times["one checksum"],
         f"{4 * n / times['one checksum'] / 1e9:.2f} GB/s"),
    ]


COMPILE_CHILD = r"""
import sys, time
import kernlab as kl
n = int(sys.argv[1])
lines = ["def long_kernel(x: kl.array(dtype=float), y: kl.array(dtype=float)):",
         "    i = kl.tid()", "    v = x[i]"]
for k in range(n):
    op = ("v = v * 1.0001 + 0.5", "v = kl.sin(v) + v", "v = v - 0.25 * v * v")[k % 3]
    lines.append("    " + op)
lines.append("    y[i] = v")
path = sys.argv[2]
open(path, "w").write("import kernlab as kl\n" + "\n".join(lines) + "\n")
ns = {}
exec(compile(open(path).read(), path, "exec"), ns)
k = kl.kernel(ns["long_kernel"])
start, cpu0 = time.perf_counter(), time.process_time()
k.compiled(kl.config.cpu_backend, False, frozenset())
mid = time.perf_counter()
k.compiled(kl.config.cpu_backend, True, frozenset())
end = time.perf_counter()
print(mid - start, end - mid, time.process_time() - cpu0)
"""


def compile_rows(sizes) -> list:
    rows = []
    with tempfile.TemporaryDirectory(prefix="kl_bench_rel_") as tmp:
        script = Path(tmp) / "child.py"
        script.write_text(COMPILE_CHILD)
        env = dict(os.environ, KERNLAB_CACHE_DIR=str(Path(tmp) / "cache"),
                   PYTHONPATH=str(HERE.parent))
        for n in sizes:
            out = subprocess.run([sys.executable, str(script), str(n),
                                  str(Path(tmp) / f"k{n}.py")], capture_output=True,
                                 text=True, env=env, timeout=1200)
            if out.returncode != 0:
                rows.append((f"compile, {n} lines", f"{n}", None, out.stderr[-200:]))
                continue
            fwd, adj, cpu = map(float, out.stdout.split())
            rows.append((f"kernel + adjoint compile, {n} lines", f"{n}", fwd + adj,
                         f"forward {fmt_time(fwd)}, adjoint {fmt_time(adj)}; CPU time "
                         f"{fmt_time(cpu)} (the wall time grows with the load)"))
    return rows


MEMORY_CHILD = r"""
import ctypes, gc, sys
import kernlab as kl

def rss():  # resident bytes, after handing free heap pages back to the system
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

runs, path = int(sys.argv[1]), sys.argv[2]
x = kl.zeros(16, dtype=float)
template = (
    "import kernlab as kl\n"
    "@kl.kernel\n"
    "def cell(x: kl.array(dtype=float)):\n"
    "    i = kl.tid()\n"
    "    x[i] = x[i] * 0.5 + {c}\n")

def rerun(k):  # a notebook cell re-run with an edit: the same kernel, a new constant
    src = template.format(c=float(k))
    with open(path, "w") as f:
        f.write(src)
    ns = {}
    exec(compile(src, path, "exec"), ns)
    kl.launch(ns["cell"], 16, inputs=[x])

for k in range(20):  # warm up: allocator pools, caches of the frontend
    rerun(k)
before = rss()
for k in range(20, 20 + runs):
    rerun(k)
print((rss() - before) / runs)
"""


def memory_rows(runs: int) -> list:
    """The same edited re-runs twice, in two fresh processes sharing a disk cache: the first
    compiles every version, the second loads each from the cache."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="kl_bench_rel_") as tmp:
        script = Path(tmp) / "child.py"
        script.write_text(MEMORY_CHILD)
        env = dict(os.environ, KERNLAB_CACHE_DIR=str(Path(tmp) / "cache"),
                   PYTHONPATH=str(HERE.parent))
        for what in ("compiled", "loaded from the disk cache"):
            out = subprocess.run([sys.executable, str(script), str(runs),
                                  str(Path(tmp) / "cell.py")],
                                 capture_output=True, text=True, env=env, timeout=1800)
            name = f"memory kept per edited re-run ({what})"
            if out.returncode != 0:
                rows.append((name, f"{runs} runs", None, out.stderr[-200:]))
                continue
            per_run = float(out.stdout.split()[-1])
            rows.append((name, f"{runs} runs", None, f"{per_run / 1024:.1f} KB per re-run"))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=["tape", "compile", "memory"], action="append")
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args(argv)
    groups = args.only or ["tape", "compile", "memory"]
    rows = []
    if "tape" in groups:
        rows += tape_rows(1_000_000 if args.quick else 10_000_000, args.repeats)
    if "compile" in groups:
        rows += compile_rows([500, 1000] if args.quick else [500, 1000, 2000, 4000])
    if "memory" in groups:
        rows += memory_rows(100 if args.quick else 500)
    print(f"kernlab {kl.__version__}, {os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.2f}, num_threads {kl.config.num_threads}")
    width = max(len(r[0]) for r in rows)
    for name, size, seconds, note in rows:
        when = fmt_time(seconds) if seconds is not None else ""
        print(f"{name:<{width}}  {size:>12}  {when:>10}  {note}")


if __name__ == "__main__":
    main()

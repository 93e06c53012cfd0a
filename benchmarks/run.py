"""kernlab next to NumPy, Numba and Warp (CPU), all measured in one run; prints one table.

    python benchmarks/run.py [--quick] [--only NAME] [--repeats N]

The GPU group (--only cuda: kernlab's CUDA backend next to Warp's) runs by default only
where kernlab sees a GPU; asked for without one, its GPU rows show n/a with the reason and
its compile rows use NVRTC alone.

Times are best-of-N after warm-up, except small launches (a mean over many launches) and
compile/import times (single fresh processes); the streaming rows (saxpy, adjoint,
atomics) also give the median and spread of their N timings. A peer that is not installed
shows n/a. Nothing here asserts a timing: this is a report.
"""
from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's kernlab

import kernlab as kl  # noqa: E402

import bench_atomics  # noqa: E402
import bench_compile  # noqa: E402
import bench_compute  # noqa: E402
import bench_cuda  # noqa: E402
import bench_launch  # noqa: E402
import bench_saxpy  # noqa: E402
import bench_tangent  # noqa: E402
from common import (Row, Settings, cores, fmt_time, kernlab_revision, machine_line,  # noqa: E402
                    summary)

BENCHMARKS = {"saxpy": bench_saxpy, "atomics": bench_atomics, "compute": bench_compute,
              "compile": bench_compile, "launch": bench_launch, "tangent": bench_tangent,
              "cuda": bench_cuda}
GPU_ONLY = ("cuda",)  # run by default only when kernlab sees a GPU
COLUMNS = [("kernlab", "kernlab"), ("kernlab_1t", "kernlab 1T"), ("numpy", "NumPy"),
           ("numba", "Numba"), ("numba_1t", "Numba 1T"), ("warp", "Warp"), ("bound", "bound"),
           ("bound_1t", "bound 1 core")]
RATIOS = [("kernlab", "numpy"), ("kernlab", "numba"), ("kernlab_1t", "numba_1t"),
          ("kernlab", "warp"), ("kernlab_1t", "warp"), ("kernlab", "bound"),
          ("kernlab_1t", "bound_1t")]
TITLES = dict(COLUMNS)
SHORT = {"kernlab": "kl", "kernlab_1t": "kl1T", "numpy": "NumPy", "numba": "Numba",
         "numba_1t": "Numba1T", "warp": "Warp", "bound": "bound", "bound_1t": "bound1T"}


def fmt_ratio(row: Row, peer: str, ours: str = "kernlab") -> str:
    mine, theirs = row.times.get(ours), row.times.get(peer)
    return "n/a" if mine is None or not theirs else f"{mine / theirs:.2f}"


def fmt_cell(row: Row, key: str) -> str:
    """The minimum; with every timing kept, also the median and the spread (half the
    interquartile range, relative to the median)."""
    if key in row.samples:
        low, med, spread = summary(row.samples[key])
        return f"{fmt_time(low)} ({fmt_time(med)} ±{spread * 100:.0f}%)"
    return fmt_time(row.times.get(key))


def table(rows: list[Row]) -> str:
    """A Markdown table: times (minimum, then median ±spread where every timing was kept),
    then ratios of minima (below 1 means kernlab is faster)."""
    head = (["benchmark", "size"] + [title for _, title in COLUMNS]
            + [f"{SHORT[a]}/{SHORT[b]}" for a, b in RATIOS] + ["notes"])
    body = [[r.name, r.size] + [fmt_cell(r, key) for key, _ in COLUMNS]
            + [fmt_ratio(r, b, a) for a, b in RATIOS] + [r.note] for r in rows]
    widths = [max(len(line[c]) for line in [head] + body) for c in range(len(head))]

    def line(cells):
        return "| " + " | ".join(cell.ljust(w) for cell, w in zip(cells, widths)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(head), rule] + [line(cells) for cells in body])


def _find(rows, name, size=None):
    return next((r for r in rows if r.name == name and (size is None or r.size == size)), None)


def goals(rows: list[Row]) -> list[str]:
    """Issue 20's goals, each met or NOT met with the figure from this run (ratios of
    minima; a goal whose row did not run is left out)."""
    out = []
    big = max((r.size for r in rows if r.name == "saxpy adjoint"),
              key=lambda s: int(s.split("=")[1].replace(",", "")), default=None)

    def ratio(row, a, b):
        x, y = row.times.get(a), row.times.get(b)
        return None if x is None or not y else x / y

    def say(what, value, limit, fmt="{:.2f}x"):
        if value is not None:
            ok = value <= limit
            out.append(f"{'met    ' if ok else 'NOT met'}  {what}: {fmt.format(value)} "
                       f"(goal <= {fmt.format(limit)})")
    adj = _find(rows, "saxpy adjoint", big)
    if adj is not None:
        say(f"saxpy adjoint / forward, {big}", ratio(adj, "kernlab", "kernlab_fwd"), 1.5)
        say(f"saxpy adjoint / hand-written Numba adjoint, {big}",
            ratio(adj, "kernlab", "numba"), 1.1)
        say(f"  the same, one thread each, {big}", ratio(adj, "kernlab_1t", "numba_1t"), 1.1)
    for r in rows:
        if r.name == "atomic sum into one value" and r.size == big:
            say(f"atomic sum / np.sum, {big}", ratio(r, "kernlab", "numpy"), 1.2)
        if r.name == "histogram, 256 bins" and r.size == big:
            say(f"histogram / np.bincount, {big}", ratio(r, "kernlab", "numpy"), 1.0)
        if r.name in ("atomic sum into one value", "histogram, 256 bins") and r.size == big:
            say(f"{r.name}, all threads / one thread, {r.size} (never slower; 5% for noise)",
                ratio(r, "kernlab", "kernlab_1t"), 1.05)
    for name in ("small launch: kl.launch", "small launch: Launch.launch()"):
        tiny = _find(rows, name, "n=1")
        if tiny is not None and tiny.times.get("kernlab"):
            say(f"{name}, n=1", tiny.times["kernlab"] * 1e6, 2.0, "{:.1f} µs")
    tiny = _find(rows, "small launch: kl.launch, thread CPU time", "n=1")
    if tiny is not None and tiny.times.get("kernlab"):
        say("small launch: kl.launch, n=1, thread CPU time", tiny.times["kernlab"] * 1e6, 2.0,
            "{:.1f} µs")
    for name in ("small launch: kl.launch", "small launch: kl.launch, thread CPU time"):
        small = _find(rows, name, "n=10,000")
        if small is not None:
            say(f"{name[len('small launch: '):]}, n=1e4 / Numba @njit",
                ratio(small, "kernlab", "numba"), 1.5)
    small = _find(rows, "saxpy", "n=10,000")
    if small is not None:
        say("saxpy n=1e4 / Numba (one thread each)", ratio(small, "kernlab_1t", "numba_1t"), 1.5)
    warm = _find(rows, "warm load, first fwd+adj launch")
    if warm is not None and warm.times.get("kernlab"):
        say("warm start, first fwd+adj launch", warm.times["kernlab"] * 1e3, 3.0, "{:.1f} ms")
    cold = _find(rows, "cold compile, first fwd+adj launch")
    if cold is not None and cold.times.get("kernlab"):
        say("cold compile, first fwd+adj launch", cold.times["kernlab"] * 1e3, 40.0,
            "{:.1f} ms")
    return out


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="smaller sizes (saxpy 1M, n-body 2048, cuda 10M)")
    p.add_argument("--only", action="append", choices=sorted(BENCHMARKS),
                   help="run only this benchmark group (repeatable)")
    p.add_argument("--repeats", type=int, default=30, help="best-of-N for array benchmarks")
    p.add_argument("--launches", type=int, default=2000, help="launches per overhead row")
    p.add_argument("--backend", choices=["llvm", "interp"], default="llvm",
                   help="kernlab's CPU backend (interp: the reference interpreter)")
    p.add_argument("--tiny", action="store_true",
                   help="plumbing check: tiny sizes, fast enough for --backend interp")
    p.add_argument("--sizes", type=lambda t: tuple(int(float(v)) for v in t.split(",")),
                   default=(), help="n of the streaming rows, e.g. 1e4,1e6,1e7 (the default)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    settings = Settings(quick=args.quick, tiny=args.tiny, sizes=args.sizes,
                        repeats=max(1, args.repeats),
                        launches=max(1, args.launches), backend=args.backend,
                        compile_runs=1 if args.quick or args.tiny else 3)
    kl.config.cpu_backend = args.backend
    mode = "tiny" if args.tiny else "quick" if args.quick else "full"
    print(f"machine: {machine_line()}")
    print(f"kernlab {kl.__version__} ({kernlab_revision()}; backend {args.backend}, "
          f"{kl.config.num_threads} threads), "
          f"{mode} sizes, best of {settings.repeats}; ratios are kernlab / peer "
          f"(below 1: kernlab faster); 1T: held to one thread; all threads: {cores()}\n",
          flush=True)
    start = time.perf_counter()
    rows = []
    groups = args.only or [name for name in BENCHMARKS
                           if name not in GPU_ONLY or kl.is_cuda_available()]
    for name in groups:
        try:
            rows += BENCHMARKS[name].run(settings)
        except Exception as err:  # noqa: BLE001 — one broken group must not hide the others
            traceback.print_exc()
            rows.append(Row(name, "", {}, f"FAILED: {type(err).__name__}: {err}"))
    print(table(rows))
    met = goals(rows)
    if met:
        print("\nGoals (issue 20), from this run:\n" + "\n".join(met))
    print(f"\n({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

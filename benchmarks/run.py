"""kernlab next to NumPy, Numba and Warp (CPU), all measured in one run; prints one table.

    python benchmarks/run.py [--quick] [--only NAME] [--repeats N]

The GPU group (--only cuda: kernlab's CUDA backend next to Warp's) runs by default only
where kernlab sees a GPU; asked for without one, its GPU rows show n/a with the reason and
its compile rows use NVRTC alone.

Times are best-of-N after warm-up, except launch overhead (a mean over many launches) and
compile/import times (single fresh processes). A peer that is not installed shows n/a.
Nothing here asserts a timing: this is a report.
"""
from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's kernlab

import kernlab as kl  # noqa: E402

import bench_compile  # noqa: E402
import bench_compute  # noqa: E402
import bench_cuda  # noqa: E402
import bench_launch  # noqa: E402
import bench_saxpy  # noqa: E402
import bench_tangent  # noqa: E402
from common import Row, Settings, fmt_time, kernlab_revision, machine_line  # noqa: E402

BENCHMARKS = {"saxpy": bench_saxpy, "compute": bench_compute, "compile": bench_compile,
              "launch": bench_launch, "tangent": bench_tangent, "cuda": bench_cuda}
GPU_ONLY = ("cuda",)  # run by default only when kernlab sees a GPU
COLUMNS = [("kernlab", "kernlab"), ("numpy", "NumPy"), ("numba", "Numba"), ("warp", "Warp"),
           ("bound", "bound")]


def fmt_ratio(row: Row, peer: str) -> str:
    ours, theirs = row.times.get("kernlab"), row.times.get(peer)
    return "n/a" if ours is None or not theirs else f"{ours / theirs:.2f}"


def table(rows: list[Row]) -> str:
    """A Markdown table: times, then kernlab / peer ratios (below 1 means kernlab is faster)."""
    head = (["benchmark", "size"] + [title for _, title in COLUMNS]
            + [f"kl/{title}" for _, title in COLUMNS[1:]] + ["notes"])
    body = [[r.name, r.size] + [fmt_time(r.times.get(key)) for key, _ in COLUMNS]
            + [fmt_ratio(r, key) for key, _ in COLUMNS[1:]] + [r.note] for r in rows]
    widths = [max(len(line[c]) for line in [head] + body) for c in range(len(head))]

    def line(cells):
        return "| " + " | ".join(cell.ljust(w) for cell, w in zip(cells, widths)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(head), rule] + [line(cells) for cells in body])


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
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    settings = Settings(quick=args.quick, tiny=args.tiny, repeats=max(1, args.repeats),
                        launches=max(1, args.launches), backend=args.backend,
                        compile_runs=1 if args.quick or args.tiny else 3)
    kl.config.cpu_backend = args.backend
    mode = "tiny" if args.tiny else "quick" if args.quick else "full"
    print(f"machine: {machine_line()}")
    print(f"kernlab {kl.__version__} ({kernlab_revision()}; backend {args.backend}, "
          f"{kl.config.num_threads} threads), "
          f"{mode} sizes, best of {settings.repeats}; ratios are kernlab / peer "
          f"(below 1: kernlab faster)\n", flush=True)
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
    print(f"\n({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

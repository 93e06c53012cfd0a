"""The CUDA backend on a GPU, next to Warp's: bandwidth, adjoint cost, compile and reload.

Streaming rows (need a GPU; n/a with the reason without one), on "cuda:0":
  DtoD copy     kl.copy of n float32 between two cuda arrays (cuMemcpyDtoD); Warp: wp.copy.
                Its bandwidth, (bytes read + written) / time = 2 * 4n / t, is the reference.
  saxpy         y[i] = a * x[i] + y[i] moves 12n bytes; the bound column is the time the copy's
                bandwidth needs for 12n bytes. Goal: >= 85% of the copy's bandwidth.
  saxpy adjoint the adjoint launch of z[i] = a * x[i] + y[i]. Goal: <= 2x its forward.

Compile rows, in fresh processes (this file run with --probe), with an empty cache folder
(KERNLAB_CACHE_DIR) and then a second process on the filled one. With a GPU: the first
forward plus adjoint launch of a small kernel (NVRTC cubins, cuModuleLoadData, launches).
Without one (NVRTC needs no driver): kl.source(kernel, "ptx") of the forward and the adjoint.
Goals: cold <= 300 ms, cached reload <= 5 ms.

kernlab's CUDA launch synchronises (and reads its status word) before it returns; every
timed call here ends with kl.synchronize() or wp.synchronize_device(). Nothing asserts a
timing.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import kernlab as kl

from common import HERE, Row, fmt_time, kernels, kl_launch, race, warp

DEVICE = "cuda:0"
A = np.float32(0.001)  # small, so repeated in-place updates stay far from overflow
PROBE_N = 1024  # threads of the compile probe's launches

GOAL_BANDWIDTH = 0.85  # saxpy's bandwidth / the DtoD copy's
GOAL_ADJOINT = 2.0  # adjoint launch / forward launch
GOAL_COLD = 0.300  # seconds: compile of a small kernel plus its adjoint, fresh process
GOAL_RELOAD = 0.005  # seconds: the same from a filled cache

STREAM_ROWS = ("cuda DtoD copy", "cuda saxpy", "cuda saxpy adjoint")
COMPILE_ROWS = ("cuda cold compile, fwd+adj", "cuda cached reload, fwd+adj",
                "cuda cached reload itself")


def goal(ok: bool, text: str) -> str:
    return f"goal {text}: {'met' if ok else 'NOT met'}"


def no_gpu_reason() -> str | None:
    """None when kernlab can use a GPU, else why not (the driver's words)."""
    if kl.is_cuda_available():
        return None
    from kernlab.backends.cuda import driver
    return f"no CUDA GPU ({driver.why_unavailable()})"


def warp_cuda():
    """Warp when it imports and sees a GPU, else None."""
    wp = warp()
    try:
        return wp if wp is not None and wp.is_cuda_available() else None
    except Exception:  # noqa: BLE001 — a broken peer is a missing peer
        return None


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 0.01 else f"{seconds * 1e3:.0f} ms"


def _rel_diff(got, want) -> float:
    return float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))


# --- Streaming rows ------------------------------------------------------------------------

def _warp_launch(wp, kernel, dim, **kwargs):
    """A callable that launches a Warp kernel on cuda:0 and returns when it has finished."""
    def go():
        wp.launch(kernel, dim, device=DEVICE, **kwargs)
        wp.synchronize_device(DEVICE)
    return go


def _kl_copy(dst, src):
    def go():
        kl.copy(dst, src)  # cuMemcpyDtoD (and a synchronise) for two contiguous cuda arrays
        kl.synchronize()
    return go


def _candidates(x_np) -> dict:
    """Every timed call, each on device arrays of its own."""
    n = len(x_np)
    kk = kernels("kernlab")

    def on_gpu(values):
        return kl.from_numpy(values, device=DEVICE)

    def saxpy_out_args():
        return [on_gpu(x_np), kl.ones(n, device=DEVICE), kl.zeros(n, device=DEVICE), A]
    adj = [kl.zeros(n, device=DEVICE), kl.zeros(n, device=DEVICE), kl.ones(n, device=DEVICE),
           0.0]
    runs = {
        "kl_copy": _kl_copy(kl.zeros(n, device=DEVICE), on_gpu(x_np)),
        "kl_saxpy": kl_launch(kk.saxpy, n, inputs=[on_gpu(x_np), kl.ones(n, device=DEVICE), A],
                              device=DEVICE),
        "kl_adj": kl_launch(kk.saxpy_out, n, inputs=saxpy_out_args(), adj_inputs=adj,
                            adj_outputs=[], adjoint=True, device=DEVICE),
        "kl_fwd": kl_launch(kk.saxpy_out, n, inputs=saxpy_out_args(), device=DEVICE),
    }
    wp = warp_cuda()
    kw = kernels("warp") if wp is not None else None
    if kw is not None:
        def arr(values):
            return wp.array(values, dtype=float, device=DEVICE)

        def ones():
            return wp.ones(n, dtype=float, device=DEVICE)

        def zeros():
            return wp.zeros(n, dtype=float, device=DEVICE)
        wsrc, wdst = arr(x_np), zeros()

        def warp_copy():
            wp.copy(wdst, wsrc)
            wp.synchronize_device(DEVICE)
        runs["wp_copy"] = warp_copy
        runs["wp_saxpy"] = _warp_launch(wp, kw.saxpy, n, inputs=[arr(x_np), ones(), A])
        runs["wp_adj"] = _warp_launch(wp, kw.saxpy_out, n, inputs=[arr(x_np), ones(), zeros(), A],
                                      adj_inputs=[zeros(), zeros(), ones(), 0.0],
                                      adj_outputs=[], adjoint=True)
        runs["wp_fwd"] = _warp_launch(wp, kw.saxpy_out, n, inputs=[arr(x_np), ones(), zeros(), A])
    return runs


def saxpy_on_gpu(x_np, y_np, a=A) -> np.ndarray:
    """y after one launch of the benchmark's saxpy on cuda:0, back on the host."""
    y = kl.from_numpy(y_np, device=DEVICE)
    kl.launch(kernels("kernlab").saxpy, len(x_np), inputs=[kl.from_numpy(x_np, device=DEVICE),
                                                           y, a], device=DEVICE)
    return y.numpy()


def saxpy_adjoint_on_gpu(x_np, y_np, adj_z_np, a=A) -> tuple:
    """(adj_x, adj_y) after one adjoint launch of saxpy_out on cuda:0 (from zeros)."""
    n = len(x_np)
    adj_x, adj_y = kl.zeros(n, device=DEVICE), kl.zeros(n, device=DEVICE)
    inputs = [kl.from_numpy(x_np, device=DEVICE), kl.from_numpy(y_np, device=DEVICE),
              kl.zeros(n, device=DEVICE), a]
    kl.launch(kernels("kernlab").saxpy_out, n, inputs=inputs,
              adj_inputs=[adj_x, adj_y, kl.from_numpy(adj_z_np, device=DEVICE), 0.0],
              adj_outputs=[], adjoint=True, device=DEVICE)
    return adj_x.numpy(), adj_y.numpy()


def stream_rows(settings, n: int | None = None) -> list[Row]:
    """DtoD copy, saxpy and its adjoint on cuda:0 (n/a rows without a GPU)."""
    n = n or settings.size(100_000_000, 10_000_000, tiny=1_000_000)
    size = f"n={n:,}"
    why = no_gpu_reason()
    if why is not None:
        return [Row(name, size, {}, f"n/a: {why}") for name in STREAM_ROWS]
    rng = np.random.default_rng(0)
    x_np = rng.random(n, dtype=np.float32)
    t = race(_candidates(x_np), settings.repeats, settings.warmup)  # arrays freed after

    # one more launch of each on fresh arrays, checked against NumPy
    y_np = rng.random(n, dtype=np.float32)
    want = A * x_np + y_np  # before the launch (on the CPU from_numpy would share y_np)
    saxpy_diff = _rel_diff(saxpy_on_gpu(x_np, y_np), want)
    adj_z = rng.random(n, dtype=np.float32)
    adj_x, adj_y = saxpy_adjoint_on_gpu(x_np, y_np, adj_z)
    adj_diff = max(_rel_diff(adj_x, A * adj_z), _rel_diff(adj_y, adj_z))

    copy_bytes, saxpy_bytes, adj_bytes = 8 * n, 12 * n, 20 * n
    copy_bw = copy_bytes / t["kl_copy"]

    def gbs(nbytes, seconds):
        return f"{nbytes / seconds / 1e9:.0f} GB/s"

    copy_note = f"kl.copy (cuMemcpyDtoD) {gbs(copy_bytes, t['kl_copy'])}"
    if "wp_copy" in t:
        copy_note += f"; wp.copy {gbs(copy_bytes, t['wp_copy'])}"
    copy_note += "; bandwidth = 2 x 4n bytes / time: the reference of the rows below"

    share = saxpy_bytes / t["kl_saxpy"] / copy_bw
    saxpy_note = (f"kl {gbs(saxpy_bytes, t['kl_saxpy'])} = {share:.0%} of kl's DtoD copy: "
                  + goal(share >= GOAL_BANDWIDTH, f">= {GOAL_BANDWIDTH:.0%}"))
    if "wp_saxpy" in t:
        saxpy_note += f"; Warp {saxpy_bytes / t['wp_saxpy'] / copy_bw:.0%}"
    saxpy_note += f"; bound: 3 streams at the copy's bandwidth; max rel. diff to NumPy " \
                  f"{saxpy_diff:.1e}"

    ratio = t["kl_adj"] / t["kl_fwd"]
    adj_note = (f"kl adj/fwd {ratio:.2f} (fwd z=a*x+y {fmt_time(t['kl_fwd'])}): "
                + goal(ratio <= GOAL_ADJOINT, f"<= {GOAL_ADJOINT:g}x"))
    if "wp_adj" in t:
        adj_note += f"; Warp adj/fwd {t['wp_adj'] / t['wp_fwd']:.2f}"
    adj_note += f"; bound: 5 streams; max rel. diff to NumPy {adj_diff:.1e}"

    def times(key, bound_bytes=None):
        out = {"kernlab": t[f"kl_{key}"], "warp": t.get(f"wp_{key}")}
        if bound_bytes:
            out["bound"] = bound_bytes / copy_bw
        return {k: v for k, v in out.items() if v is not None}
    return [Row(STREAM_ROWS[0], size, times("copy"), copy_note),
            Row(STREAM_ROWS[1], size, times("saxpy", saxpy_bytes), saxpy_note),
            Row(STREAM_ROWS[2], size, times("adj", adj_bytes), adj_note)]


# --- Compile rows: fresh processes ---------------------------------------------------------

def first_kernlab(kernel, gpu: bool, n: int = PROBE_N) -> dict:
    """Seconds for a kernel's first compile (or reload) of its forward and adjoint, in parts.

    Without a GPU: the front end, the compiler's identity for the cache key (a stat of the
    NVRTC wheel's library; NVRTC itself loads only on a cache miss, inside the compile),
    the target architecture (the driver is asked), then kl.source(kernel, "ptx") of both
    variants (render, then NVRTC or the disk cache). With a GPU: the same up to the
    architecture, then NVRTC's cubins (or the cache), CudaKernel._load (the cached cubin and
    cuModuleLoadData) and the first launch of each. The CUDA context is made before the
    clock starts ("context", not counted in "first")."""
    from kernlab.backends.cuda import nvrtc
    out = {}
    if gpu:
        c0 = time.perf_counter()
        args = [kl.ones(n, device=DEVICE), kl.ones(n, device=DEVICE),
                kl.zeros(n, device=DEVICE), 2.0]
        adj = [kl.zeros(n, device=DEVICE), kl.zeros(n, device=DEVICE),
               kl.ones(n, device=DEVICE), 0.0]
        kl.synchronize()
        out["context"] = time.perf_counter() - c0
    t0 = time.perf_counter()
    kernel.ir, kernel.adjoint_ir  # noqa: B018
    t1 = time.perf_counter()
    nvrtc.compiler_identity()
    t2 = time.perf_counter()
    arch = nvrtc.default_arch()
    t3 = time.perf_counter()
    out.update(frontend=t1 - t0, compiler_id=t2 - t1, arch=t3 - t2)
    if not gpu:
        fwd, bwd = kl.source(kernel, "ptx"), kl.source(kernel, "ptx", adjoint=True)
        t4 = time.perf_counter()
        assert ".entry" in fwd and ".entry" in bwd, "NVRTC returned no kernel"
        out.update(first=t4 - t0, compile=t4 - t3, reload=t4 - t3)
        return out
    runners = [kernel.compiled("cuda"), kernel.compiled("cuda", adjoint=True)]
    for runner in runners:  # what CudaKernel._load asks NVRTC for
        try:
            nvrtc.compile_cubin(runner.source, runner.func.name, arch, runner.func.loc)
        except nvrtc.CudaCompileError:
            nvrtc.compile_ptx(runner.source, runner.func.name, nvrtc.DEFAULT_ARCH,
                              runner.func.loc)
    t4 = time.perf_counter()
    ordinal = kl.get_device(DEVICE).ordinal
    for runner in runners:
        runner._load(ordinal)
    t5 = time.perf_counter()
    kl.launch(kernel, n, inputs=args, device=DEVICE)
    kl.launch(kernel, n, inputs=args, adj_inputs=adj, adjoint=True, device=DEVICE)
    kl.synchronize()
    t6 = time.perf_counter()
    out.update(first=t6 - t0, compile=t4 - t3, module_load=t5 - t4, launches=t6 - t5,
               reload=t6 - t3)
    return out


def first_warp(wp, module) -> dict:
    """Warp builds (or loads from its cache) forward and backward as one module."""
    n = PROBE_N
    c0 = time.perf_counter()
    args = [wp.ones(n, dtype=float, device=DEVICE), wp.ones(n, dtype=float, device=DEVICE),
            wp.zeros(n, dtype=float, device=DEVICE), 2.0]
    adj = [wp.zeros(n, dtype=float, device=DEVICE), wp.zeros(n, dtype=float, device=DEVICE),
           wp.ones(n, dtype=float, device=DEVICE), 0.0]
    wp.synchronize_device(DEVICE)
    t0 = time.perf_counter()
    wp.load_module(module, device=DEVICE)
    t1 = time.perf_counter()
    kernel = module.probe
    wp.launch(kernel, n, inputs=args, device=DEVICE)
    wp.launch(kernel, n, inputs=args, adj_inputs=adj, adj_outputs=[], adjoint=True,
              device=DEVICE)
    wp.synchronize_device(DEVICE)
    t2 = time.perf_counter()
    return {"first": t2 - t0, "reload": t1 - t0, "context": t0 - c0}


def _probe(lib: str, mode: str, cache: str) -> dict:
    """Run this file with --probe in a fresh process on the cache folder ``cache``."""
    env = dict(os.environ, KERNLAB_CACHE_DIR=os.path.join(cache, "kernlab"),
               BENCH_WARP_CACHE=os.path.join(cache, "warp"),
               PYTHONPATH=os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed package: bytecode cached
    if lib == "warp":
        env["KERNLAB_PRELOAD"] = "0"  # this file imports kernlab: keep its helper thread out
    done = subprocess.run([sys.executable, str(HERE / "bench_cuda.py"), "--probe", lib, mode],
                          env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise RuntimeError(f"{lib} probe failed: {tail[0]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _breakdown(r: dict) -> str:
    parts = [f"front end {_ms(r['frontend'])}", f"compiler id {_ms(r['compiler_id'])}",
             f"arch {_ms(r['arch'])}"]
    if "module_load" in r:
        parts += [f"NVRTC cubins {_ms(r['compile'])}", f"module load {_ms(r['module_load'])}",
                  f"launches {_ms(r['launches'])}"]
    else:
        parts.append(f"kl.source('ptx') x2 {_ms(r['compile'])}")
    return "kl: " + " + ".join(parts)


def compile_rows(settings, gpu: bool | None = None) -> list[Row]:
    """Cold compile and cached reload of a small kernel plus its adjoint, fresh processes.
    ``gpu`` (default: whether kernlab sees one) picks the launch or the kl.source path."""
    gpu = kl.is_cuda_available() if gpu is None else gpu
    mode = "gpu" if gpu else "ptx"
    libs = ["kernlab"] + (["warp"] if gpu and warp_cuda() is not None else [])
    cold, warm, failures = {}, {}, []
    for lib in libs:
        firsts, seconds = [], []
        try:
            with tempfile.TemporaryDirectory(prefix="kernlab-bench-") as cache:
                _probe(lib, mode, cache)  # untimed: Python's bytecode, the OS's file cache
            for _ in range(settings.compile_runs):
                with tempfile.TemporaryDirectory(prefix="kernlab-bench-") as cache:
                    firsts.append(_probe(lib, mode, cache))
                    seconds.append(_probe(lib, mode, cache))
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as err:
            failures.append(str(err))
            continue
        cold[lib] = min(firsts, key=lambda r: r["first"])
        warm[lib] = min(seconds, key=lambda r: r["first"])
    failed = ("; FAILED: " + "; ".join(failures)) if failures else ""
    runs = f"best of {settings.compile_runs} fresh cache folder(s)"
    what = ("GPU: first fwd+adj launch" if gpu else
            "no GPU: kl.source(k, 'ptx') fwd+adj (compute_80), no module load")
    kc, kw = cold.get("kernlab"), warm.get("kernlab")
    cold_note = f"{what}; " + (
        f"{_breakdown(kc)}; " + goal(kc["first"] <= GOAL_COLD, f"<= {_ms(GOAL_COLD)}")
        if kc else "kl: n/a") + f"; {runs}" + failed
    warm_note = ("2nd process, same cache folder; " + (
        f"{_breakdown(kw)}; " + goal(kw["first"] <= GOAL_RELOAD, f"<= {_ms(GOAL_RELOAD)}")
        if kw else "kl: n/a"))
    itself = ("kl: NVRTC's disk cache (cubins), module load and first launches"
              if gpu else "kl: kl.source(k, 'ptx') x2 from the disk cache: the cache hit only "
              "(module load needs a GPU)")
    if kw:
        itself += "; " + goal(kw["reload"] <= GOAL_RELOAD, f"<= {_ms(GOAL_RELOAD)}")
    if "warp" in warm:
        itself += "; Warp: wp.load_module"
    return [
        Row(COMPILE_ROWS[0], "1 kernel", {lib: r["first"] for lib, r in cold.items()},
            cold_note),
        Row(COMPILE_ROWS[1], "1 kernel", {lib: r["first"] for lib, r in warm.items()},
            warm_note),
        Row(COMPILE_ROWS[2], "1 kernel",
            {lib: r["reload"] for lib, r in warm.items()}, itself),
    ]


def run(settings) -> list[Row]:
    """Never raises: a part that fails shows FAILED in its rows' notes."""
    rows = []
    for part, names in ((stream_rows, STREAM_ROWS),
                        (compile_rows, COMPILE_ROWS)):
        try:
            rows += part(settings)
        except Exception as err:  # noqa: BLE001 — report, do not hide the other part
            rows += [Row(name, "", {}, f"FAILED: {type(err).__name__}: {err}")
                     for name in names]
    return rows


if __name__ == "__main__":  # python bench_cuda.py --probe LIB MODE: one fresh process
    if sys.argv[1:2] != ["--probe"] or len(sys.argv) != 4:
        sys.exit("usage: bench_cuda.py --probe kernlab|warp gpu|ptx "
                 "(benchmarks/run.py --only cuda runs the benchmark)")
    LIB, MODE = sys.argv[2:4]
    if LIB == "warp":
        import warp as wp
        wp.config.quiet = True  # Warp before 1.19
        wp.config.log_level = getattr(wp, "LOG_ERROR", 40)  # 1.19: no greeting
        wp.config.kernel_cache_dir = os.environ["BENCH_WARP_CACHE"]
        wp.init()
    else:
        wp = kl

    @wp.kernel
    def probe(x: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float),
              a: float):
        i = wp.tid()
        z[i] = a * wp.sin(x[i]) + y[i]

    if LIB == "warp":
        result = first_warp(wp, sys.modules[__name__])
    else:
        result = first_kernlab(probe, MODE == "gpu")
    print(json.dumps(result))

"""Run in a fresh process by bench_compile.py: ``python compile_probe.py LIB PHASE BACKEND``.

LIB is kernlab, warp, numba or numpy; PHASE is "import" (time the import and stop) or
"first" (also compile or load a small kernel and its adjoint and run both once). The cache
folder comes from the environment (KERNLAB_CACHE_DIR, NUMBA_CACHE_DIR, BENCH_WARP_CACHE),
set by the parent. Prints one JSON object of seconds.
"""
import json
import os
import sys
import time

LIB, PHASE, BACKEND = sys.argv[1:4]
N = 1024

start = time.perf_counter()
if LIB == "kernlab":
    import kernlab as wp
elif LIB == "warp":
    import warp as wp
    wp.config.quiet = True  # Warp before 1.19
    wp.config.log_level = getattr(wp, "LOG_ERROR", 40)  # 1.19: no greeting
    wp.config.kernel_cache_dir = os.environ["BENCH_WARP_CACHE"]
    wp.init()  # loads Warp's native library; counted as part of the import
elif LIB == "numba":
    import numba
elif LIB == "numpy":
    import numpy  # noqa: F401
result = {"import": time.perf_counter() - start}
if PHASE == "import":
    print(json.dumps(result))
    sys.exit(0)

import numpy as np  # noqa: E402 — already loaded by every library above

if LIB in ("kernlab", "warp"):
    @wp.kernel
    def probe(x: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float),
              a: float):
        i = wp.tid()
        z[i] = a * wp.sin(x[i]) + y[i]


def first_kernlab():
    """Front end (IR and adjoint IR: from the cache when warm, else parsed, checked and
    differentiated while llvmlite loads on a helper thread), then the first forward launch
    and the first adjoint launch, each compiling (cold) or loading (warm, with kernlab's own
    loader: no llvmlite) the variant it runs, with the arrays made between them. Cold,
    small loop-free kernels first run quick code while the optimised code compiles on a
    helper thread (backends/llvm/tiers.py): "optimised" is when that is done, measured
    after the launches (the time until every launch runs the O2 code)."""
    wp.config.cpu_backend = BACKEND
    t0, c0 = time.perf_counter(), time.thread_time()
    probe.ir, probe.adjoint_ir  # noqa: B018
    t1 = t2 = time.perf_counter()
    args = [wp.ones(N), wp.ones(N), wp.zeros(N), 2.0]
    adj = [wp.zeros(N), wp.zeros(N), wp.ones(N), 0.0]
    wp.launch(probe, N, inputs=args)
    t3 = time.perf_counter()
    wp.launch(probe, N, inputs=args, adj_inputs=adj, adjoint=True)
    wp.synchronize()
    t4 = time.perf_counter()
    out = {"first": t4 - t0, "first_cpu": time.thread_time() - c0, "frontend": t1 - t0,
           "codegen": t4 - t2, "forward": t3 - t2, "adjoint": t4 - t3,
           "llvmlite": "llvmlite" in sys.modules}
    tiers = sys.modules.get("kernlab.backends.llvm.tiers")  # loaded by a compile only
    if BACKEND == "llvm" and tiers is not None:
        tiers.wait()
        out["optimised"] = time.perf_counter() - t0
        out["quick"] = tiers.stats["quick"]
    # checked against NumPy: z = 2 sin(1) + 1; the adjoint seeded with 1 in z's slot
    if not np.allclose(args[2].numpy(), 2.0 * np.sin(1.0) + 1.0) \
            or not np.allclose(adj[0].numpy(), 2.0 * np.cos(1.0)) \
            or not np.allclose(adj[1].numpy(), 1.0):
        raise SystemExit("kernlab probe: wrong result")
    return out


def first_warp():
    """Warp builds (or loads from its cache) forward and backward together, as one module."""
    t0 = time.perf_counter()
    wp.load_module(sys.modules[__name__], device="cpu")
    t1 = time.perf_counter()
    args = [wp.ones(N, dtype=float, device="cpu"), wp.ones(N, dtype=float, device="cpu"),
            wp.zeros(N, dtype=float, device="cpu"), 2.0]
    adj = [wp.zeros(N, dtype=float, device="cpu"), wp.zeros(N, dtype=float, device="cpu"),
           wp.ones(N, dtype=float, device="cpu"), 0.0]
    wp.launch(probe, N, inputs=args, device="cpu")
    wp.launch(probe, N, inputs=args, adj_inputs=adj, adj_outputs=[], adjoint=True, device="cpu")
    wp.synchronize_device("cpu")
    t2 = time.perf_counter()
    return {"first": t2 - t0, "codegen": t1 - t0}


def first_numba():
    """Numba has no adjoint: the first call of a parallel forward kernel (cache=True)."""
    t0 = time.perf_counter()

    @numba.njit(parallel=True, fastmath=False, cache=True)
    def probe(x, y, z, a):
        for i in numba.prange(x.shape[0]):
            z[i] = a * np.sin(x[i]) + y[i]
    probe(np.ones(N, np.float32), np.ones(N, np.float32), np.zeros(N, np.float32),
          np.float32(2.0))
    return {"first": time.perf_counter() - t0}


result.update({"kernlab": first_kernlab, "warp": first_warp, "numba": first_numba}[LIB]())
print(json.dumps(result))

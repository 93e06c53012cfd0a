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
    differentiated while llvmlite loads on a helper thread), then compile or load both
    variants (a cold start loads llvmlite and compiles; a warm one loads the cached object
    code with kernlab's own loader, without llvmlite), then create the arrays and launch
    both, with the adjoint variant the launch picks (its gradients retained or not)."""
    wp.config.cpu_backend = BACKEND
    t0, c0 = time.perf_counter(), time.process_time()
    probe.ir, probe.adjoint_ir  # noqa: B018
    t1 = time.perf_counter()
    probe.compiled(BACKEND)
    probe.compiled(BACKEND, adjoint=True)
    t2 = time.perf_counter()
    args = [wp.ones(N), wp.ones(N), wp.zeros(N), 2.0]
    adj = [wp.zeros(N), wp.zeros(N), wp.ones(N), 0.0]
    wp.launch(probe, N, inputs=args)
    wp.launch(probe, N, inputs=args, adj_inputs=adj, adjoint=True)
    wp.synchronize()
    t3, c3 = time.perf_counter(), time.process_time()
    # checked against NumPy: z = 2 sin(1) + 1; the adjoint seeded with 1 in z's slot
    expect = np.full(N, 2 * np.sin(np.float32(1)) + 1, np.float32)
    grad_x = np.full(N, 2 * np.cos(np.float32(1)), np.float32)
    ok = (np.allclose(args[2].numpy(), expect, rtol=1e-6)
          and np.allclose(adj[0].numpy(), grad_x, rtol=1e-6)
          and np.allclose(adj[1].numpy(), 1.0))
    if not ok:
        raise SystemExit("kernlab probe: wrong results")
    return {"first": t3 - t0, "frontend": t1 - t0, "codegen": t2 - t1, "launches": t3 - t2,
            "cpu": c3 - c0,  # CPU time of the process (all threads): the work, less waiting
            "llvmlite": "llvmlite" in sys.modules}


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

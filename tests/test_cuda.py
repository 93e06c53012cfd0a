"""The CUDA backend: rendering, NVRTC, ptxas and (with a GPU) agreement with the interpreter.

Without a GPU (as in CI) every kernel the test suite defines at module level, a corpus
below and one kernel calling every builtin overload are rendered to CUDA C++, compiled by
NVRTC to PTX for sm_80 and sm_90, forward and adjoint, and assembled by ptxas. Parts whose
tools are missing skip: cuda.bindings (NVRTC), ptxas, a GPU.
"""
import ctypes
import importlib
import itertools
import os
import pathlib
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import kernlab as kl
from kernlab.backends import cuda
from kernlab.backends.cuda import driver, nvrtc
from kernlab.backends.cuda.render import _printf, literal, render_cuda, scalar_literal
from kernlab.backends.interp import Interpreter
from kernlab.autodiff import reverse_mode
from kernlab.builtins import REGISTRY
from kernlab.errors import KernelError, KernelIndexError, SourceLoc
from kernlab.ir.builder import Builder
from kernlab.ir.nodes import Block, Function, Op, Param, Site, Value
from fake_cuda import CXX, HostEmulated, emulation_folder
from helpers import find_ptxas
from kernlab.types import (ArrayType, bool_, float16, float32, float64, int32, int64, mat22, mat33,
                           mat33d, mat44, matrix, uint32, vec2, vec3, vec3d, vec4, vector)

HAVE_NVRTC = nvrtc.is_available()
HAVE_GPU = kl.is_cuda_available()
needs_nvrtc = pytest.mark.skipif(not HAVE_NVRTC, reason="NVRTC (pip install cuda-python "
                                 "nvidia-cuda-nvrtc) is not installed")
needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU")
ARCHS = [80, 90]


PTXAS = find_ptxas()


def assemble(ptx: str, arch: int, path: pathlib.Path) -> str | None:
    """Run ptxas on the PTX; the error text when it fails, None when it passes."""
    path.write_text(ptx)
    run = subprocess.run([PTXAS, f"-arch=sm_{arch}", str(path), "-o",
                          str(path.with_suffix(".cubin"))], capture_output=True, text=True)
    if "Unsupported .version" in run.stderr:
        pytest.skip(f"ptxas is older than NVRTC {nvrtc.version()}: {run.stderr.strip()}")
    return run.stderr if run.returncode else None


def compile_everywhere(funcs, tmp_path, variants=False, archs=ARCHS):
    """NVRTC to PTX for each arch, then ptxas (when found), for every function; with
    ``variants`` also without bounds checks and with verify_fp's NaN/Inf checks. The jobs
    run in parallel (NVRTC releases the GIL)."""
    jobs = [(f, arch, True, False) for f in funcs for arch in archs]
    jobs += [(f, 80, c, not c) for f in funcs for c in (False, True)] if variants else []

    def job(k):
        func, arch, checks, verify_fp = jobs[k]
        ptx = nvrtc.compile_ptx(render_cuda(func, checks, verify_fp), func.name, arch)
        assert f".entry {cuda.entry_name(func)}(" in ptx
        assert f".target sm_{arch}" in ptx
        if PTXAS is not None:
            failure = assemble(ptx, arch, tmp_path / f"job{k}.ptx")
            assert failure is None, f"ptxas failed on {func.name} for sm_{arch}:\n{failure}"

    with ThreadPoolExecutor(max(2, os.cpu_count() or 1)) as pool:
        list(pool.map(job, range(len(jobs))))


# ---- a corpus of kernels: what the other test modules may not cover ------------------------

@kl.func
def cube(x: float):
    return x * x * x


@kl.func_grad(cube)
def adj_cube(x: float, adj_ret: float):
    kl.adjoint[x] += 3.0 * x * x * adj_ret


@kl.func
def first_above(v: kl.vec4, t: float):
    for k in range(4):
        if v[k] > t:
            return k
    return -1


@kl.kernel
def corpus_arith(a: kl.array(dtype=float), n: kl.array(dtype=int), b: kl.array(dtype=kl.int64),
                 u: kl.array(dtype=kl.uint32), out: kl.array(dtype=float),
                 iout: kl.array(dtype=int)):
    i = kl.tid()
    x = a[i]
    k = n[i]
    q = k // 3 + k % 3 - k / 2 + int(x) + int(b[i] // kl.int64(2))
    w = u[i] / kl.uint32(2) + u[i] % kl.uint32(3)
    y = x ** 2.0 - x / 3.0 + float(k) * 0.5 + float(w) + x % 1.5 + x // 0.25
    if 0.0 < x < 1.0 and not k == 3 or x >= 5.0:
        y = -y
    iout[i] = q + int(kl.float64(x) * 2.0)
    out[i] = y if k > 1 else kl.sign(y) * kl.abs(y) + kl.float32(kl.float64(y))


@kl.kernel
def corpus_vectors(v: kl.array(dtype=kl.vec3), m: kl.array(dtype=kl.mat33),
                   vd: kl.array(dtype=kl.vec3d), out: kl.array(dtype=kl.vec3),
                   mout: kl.array(dtype=kl.mat33), s: kl.array(dtype=float)):
    i = kl.tid()
    p = v[i]
    q = p
    q[1] = 2.0
    r = kl.cross(p, q) + kl.normalize(q) * kl.length(p) - kl.mul(m[i], p)
    t = kl.transpose(m[i]) * 2.0 + kl.outer(p, q) - kl.mat33(1.0, 0.0, 0.0, 0.0, 1.0, 0.0,
                                                                0.0, 0.0, 1.0)
    t2 = kl.mul(t, m[i])
    d = kl.determinant(t2) + kl.dot(p, q) + kl.length_sq(r) + p.x + m[i][1, 2]
    e = kl.vec3d(vd[i][0], 1.0, kl.float64(d))
    out[i] = r + kl.vec3(float(e[2]))
    mout[i] = t2
    s[i] = d + float(kl.length(e)) + kl.lerp(p, q, 0.5)[2]


VEC5 = kl.types.vector(5, float)
MAT23 = kl.types.matrix((2, 3), float)


@kl.kernel
def corpus_generic_shapes(a: kl.array(dtype=VEC5), m: kl.array(dtype=MAT23),
                          out: kl.array(dtype=kl.types.vector(2, float))):
    i = kl.tid()
    v = a[i]
    w = kl.vec3(v[0], v[1], v[4])
    out[i] = kl.mul(m[i], w) * kl.dot(v, v)


@kl.kernel
def corpus_loops(x: kl.array(dtype=float), n: int, step: int, y: kl.array(dtype=float)):
    i = kl.tid()
    acc = x[i]
    for k in range(n, 0, step):
        if k == 2:
            continue
        acc = acc * 0.5 + kl.sin(acc)
        if acc > 100.0:
            break
    j = int(0)
    while j < n:
        acc = acc + cube(kl.sin(acc)) * 0.01
        j += 1
        for r in range(3):
            acc = acc - 0.001 * float(r)
    if acc < -1000.0:
        return
    y[i] = acc + float(first_above(kl.vec4(acc), 0.5))


@kl.kernel
def corpus_atomics(x: kl.array(dtype=float), xd: kl.array(dtype=kl.float64),
                   k: kl.array(dtype=int), v: kl.array(dtype=kl.vec3), total: kl.array(dtype=float),
                   totald: kl.array(dtype=kl.float64), ks: kl.array(dtype=int),
                   vs: kl.array(dtype=kl.vec3), u: kl.array(dtype=kl.uint32),
                   big: kl.array(dtype=kl.int64)):
    i = kl.tid()
    kl.atomic_add(total, 0, x[i])
    kl.atomic_sub(total, 1, x[i])
    kl.atomic_min(total, 2, x[i])
    kl.atomic_max(total, 3, x[i])
    kl.atomic_min(totald, 0, xd[i])
    kl.atomic_max(totald, 1, xd[i])
    kl.atomic_add(totald, 2, xd[i])
    kl.atomic_add(ks, 0, k[i])
    kl.atomic_min(ks, 1, k[i])
    kl.atomic_max(ks, 2, k[i])
    kl.atomic_sub(ks, 3, k[i])
    kl.atomic_add(u, 0, kl.uint32(1))
    kl.atomic_max(u, 1, kl.uint32(i))
    kl.atomic_add(big, 0, kl.int64(i))
    kl.atomic_min(big, 1, kl.int64(i))
    kl.atomic_add(vs, 0, v[i])
    kl.atomic_sub(vs, 1, v[i])
    vs[2] += v[i]


@kl.kernel
def corpus_grids(a: kl.array(dtype=float, ndim=2), b: kl.array(dtype=float, ndim=3),
                 c: kl.array(dtype=float, ndim=4), out: kl.array(dtype=float, ndim=3)):
    i, j, k = kl.tid()
    s = a[i, j] + b[i, j, k] + c[i, j, k, 0] + float(c.shape[3]) + float(a.shape[1])
    out[i, j, k] = s


@kl.kernel
def corpus_print(x: kl.array(dtype=float), n: kl.array(dtype=kl.int64), flag: kl.bool,
                 v: kl.vec3):
    i = kl.tid()
    kl.printf("i=%d x=%f n=%d %s%%\n", i, x[i], n[i], flag)
    print("x is", x[i], v)


@kl.kernel
def corpus_reserved_names(dims: kl.array(dtype=float), status: float, flat: int,
                          stack: kl.array(dtype=float), length: float, min: float):
    i = kl.tid()
    for k in range(flat):
        stack[i] = dims[i] * status + length * min + float(k)


@kl.kernel
def corpus_custom_grad(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = cube(x[i]) + kl.smoothstep(0.0, 1.0, x[i]) + kl.atan2(x[i], 2.0)


# ---- collecting kernels --------------------------------------------------------------------

def _collect_kernels():
    """(id, kernel) for every @kl.kernel at module level in the test modules."""
    here = pathlib.Path(__file__).parent
    if str(here) not in sys.path:
        sys.path.insert(0, str(here))
    found = [(f"test_cuda::{n}", k) for n, k in globals().items() if isinstance(k, kl.Kernel)]
    for path in sorted(here.glob("test_*.py")):
        if path.stem == "test_cuda":
            continue
        try:
            module = sys.modules.get(path.stem) or importlib.import_module(path.stem)
        except (Exception, pytest.skip.Exception):  # a broken or skipped neighbour is its
            continue                                    # own test's business, not ours
        # a module whose kernels are large (noise, mesh queries: thousands of statements,
        # minutes of NVRTC and ptxas each) names the few the corpus compiles in
        # NVRTC_CORPUS; the emulated-CUDA variants of its tests compile all of them as C++
        chosen = getattr(module, "NVRTC_CORPUS", None)
        found += [(f"{path.stem}::{n}", k) for n, k in vars(module).items()
                  if isinstance(k, kl.Kernel) and (chosen is None or n in chosen)]
    return found


KERNELS = _collect_kernels()


@needs_nvrtc
@pytest.mark.parametrize("kernel", [k for _, k in KERNELS], ids=[i for i, _ in KERNELS])
def test_kernel_compiles_to_ptx_forward_and_adjoint(kernel, tmp_path):
    try:
        forward = kernel.ir
    except KernelError:
        pytest.skip("the kernel is rejected by the frontend (an error-reporting test)")
    funcs = [forward]
    try:
        funcs.append(kernel.adjoint_ir)
    except KernelError:
        pass  # not differentiable on purpose (checked by the autodiff tests)
    # This file's corpus: every arch, also unchecked and with verify_fp. The other test
    # files' kernels (thousands of statements for noise and mesh queries) once, for sm_80:
    # the arch-specific paths are the corpus's business.
    variants = kernel.__module__ == __name__
    compile_everywhere(funcs, tmp_path, variants, ARCHS if variants else ARCHS[:1])


# ---- one kernel calling every builtin overload ---------------------------------------------

TYPES = [float32, float64, int32, int64, uint32, bool_, vec2, vec3, vec4, vec3d, vector(5),
         vector(3, int32), mat22, mat33, mat44, mat33d, matrix((2, 3)), matrix((3, 2)),
         float16, vector(3, float16), matrix((2, 2), float16)]


def every_builtin_function(names=None, runnable=False) -> tuple[Function, dict]:
    """IR that loads one value of each type and calls every builtin (or those named) with
    all the argument types its signatures accept, storing each result into out_<type>[k].
    Returns the Function and {type: number of results stored}. runnable leaves out what the
    interpreter cannot run yet (vector and matrix casts: _np_cast uses target.np)."""
    loc = SourceLoc(__file__, every_builtin_function.__code__.co_firstlineno)
    func = Function("every_" + ("builtin" if names is None else "_".join(names)), [],
                    Block(), loc)
    ins, outs = {}, {}
    for prefix, table in (("in", ins), ("out", outs)):
        for k, t in enumerate(TYPES):
            at = ArrayType(t, 1)
            p = Param(f"{prefix}_{k}", at, Value(at, f"{prefix}_{k}"))
            func.params.append(p)
            func.sites.append(Site(loc, p.name))
            table[t] = (p.value, len(func.sites) - 1)
    b = Builder(func, loc)
    zero = b.const(0, int32)
    vals = {t: b.emit(Op.LOAD, [arr, zero], t, t.__class__.__name__.lower(), site=site)
            for t, (arr, site) in ins.items()}
    counts = dict.fromkeys(TYPES, 0)

    def call(name, args, target=None):
        r = b.call(name, list(args), target)
        if r.type in outs:
            arr, site = outs[r.type]
            b.emit(Op.STORE, [arr, b.const(counts[r.type], int32), r], site=site)
            counts[r.type] += 1

    one32, one64 = b.const(1, int32), b.const(1, int64)
    composite = [t for t in TYPES if not t.is_scalar]
    for name in names if names is not None else SCALAR_BUILTINS:
        bi = REGISTRY[name]
        if name == "index":
            for t in composite:
                call(name, [vals[t], one32])
                if t.is_matrix:
                    call(name, [vals[t], one64, one32])
        elif name == "insert":
            for t in composite:
                part = t.dtype if t.is_vector else vector(t.cols, t.dtype)
                if part in vals:
                    call(name, [vals[t], one32, vals[part]])
                if t.is_matrix:
                    call(name, [vals[t], one32, one64, vals[t.dtype]])
        elif name == "sum":
            for t in composite:
                call(name, [vals[t]])
        elif name == "reshape":
            for t, target in itertools.product(composite, composite):
                if bi.resolve([t], target) is not None:
                    call(name, [vals[t]], target)
        elif name == "construct":
            for t in composite:
                s = vals[t.dtype]
                call(name, [], t)
                call(name, [s], t)
                call(name, [vals[int32]] * t.length, t)
                call(name, [s] * t.length, t)
                if t.is_matrix and vector(t.cols, t.dtype) in vals:
                    call(name, [vals[vector(t.cols, t.dtype)]] * t.rows, t)
        else:
            for arity in sorted({len(s.params) for s in bi.sigs}):
                for combo in itertools.product(TYPES, repeat=arity):
                    for target in (TYPES if bi.targeted else [None]):
                        if name == "cast" and runnable and not target.is_scalar:
                            continue
                        if bi.resolve(list(combo), target) is not None:
                            call(name, [vals[t] for t in combo], target)
    return func, counts


# Tile builtins take tiles and arrays, which this corpus does not load (and six of them
# would mean 21**6 signature probes): tests/test_tiles.py's kernels call each of them, and
# test_kernel_compiles_to_ptx_forward_and_adjoint compiles those.
SCALAR_BUILTINS = [n for n in REGISTRY if not n.startswith("tile")]


@needs_nvrtc
@pytest.mark.parametrize("name", SCALAR_BUILTINS)
def test_every_overload_of_a_builtin_compiles_forward_and_adjoint(name, tmp_path):
    func, counts = every_builtin_function([name])
    assert sum(counts.values()) > 0
    adjoint = [reverse_mode(func)] if REGISTRY[name].differentiable else []
    compile_everywhere([func] + adjoint, tmp_path)


def test_the_builtin_corpus_calls_hundreds_of_overloads():
    assert sum(every_builtin_function()[1].values()) > 400


def test_every_builtin_has_a_cuda_spelling():
    missing = [name for name, bi in REGISTRY.items() if not bi.cuda]
    assert missing == []


# ---- what the source looks like ------------------------------------------------------------

@kl.kernel
def listing_example(x: kl.array(dtype=float), n: int, y: kl.array(dtype=float)):
    i = kl.tid()
    acc = x[i]
    for k in range(n):
        acc = acc * kl.cos(acc)
    y[i] = acc


def test_source_echoes_user_lines_and_labels_adjoint_sections():
    text = kl.source(listing_example, "cuda", adjoint=True)
    assert "// test_cuda.py:" in text
    assert ": acc = acc * kl.cos(acc)" in text
    assert "// adj: test_cuda.py:" in text
    forward, reverse = text.index("// ---- forward replay ----"), text.index("// ---- reverse ----")
    assert forward < reverse
    assert 'extern "C" __global__ void listing_example_adj(' in text
    assert "kl_stack stack(status);" in text  # the loop saves its state


def test_forward_source_names_locals_after_the_user_variables():
    text = kl.source(listing_example, "cuda")
    assert re.search(r"\bfloat32 acc_\d+ = ", text)
    assert re.search(r"\bint32 k_\d+ = ", text)
    assert "---- reverse ----" not in text
    assert 'extern "C" __global__ void listing_example_fwd(array_t<float32> x, int32 n,' in text


def test_consecutive_statements_of_one_line_share_one_comment():
    text = kl.source(listing_example, "cuda")
    comments = [line.strip() for line in text.splitlines() if line.strip().startswith("// ")]
    line = next(c for c in comments if c.endswith("y[i] = acc"))
    assert comments.count(line) == 1


def test_bounds_checks_can_be_left_out():
    func = listing_example.ir
    assert "kl_check(" in render_cuda(func, bounds_check=True)
    assert "kl_check(" not in render_cuda(func, bounds_check=False)


def test_parameters_that_clash_with_generated_names_are_renamed():
    text = " ".join(kl.source(corpus_reserved_names, "cuda").split())
    assert "(array_t<float32> dims_, float32 status_, int32 flat_, array_t<float32> stack_, " \
        "float32 length_, float32 min_, kl_status* status, kl_dims dims)" in text


def test_literals_keep_their_exact_values():
    assert scalar_literal(np.float32(0.1), float32) == "0.1f"
    assert scalar_literal(0.1, float64) == "0.1"
    assert scalar_literal(-2**31, int32) == "(-2147483647 - 1)"
    assert scalar_literal(7, uint32) == "7u"
    assert scalar_literal(float("inf"), float32) == "kl_inf<float32>()"
    assert scalar_literal(float("-inf"), float64) == "-kl_inf<float64>()"
    assert scalar_literal(True, bool_) == "true"
    assert literal(np.zeros(3, np.float32), vec3) == "vec3()"
    assert literal(np.full(2, 0.5), vector(2, float64)) == "vec2d(0.5)"
    assert literal(np.eye(2), matrix((2, 2), float64)) == "mat22d(1.0, 0.0, 0.0, 1.0)"


def test_printf_conversions_follow_the_argument_types():
    fmt, args = _printf("%d %5.2f %s %x %%", [(int64, "a"), (float32, "b"), (bool_, "c"),
                                              (uint32, "d")])
    assert fmt == '%lld %5.2f %s %llx %%'
    assert args == ["(long long)a", "(double)b", '(c ? "True" : "False")',
                    "(unsigned long long)d"]


# ---- NVRTC and the cache ---------------------------------------------------------------------

@needs_nvrtc
def test_ptx_target_works_without_a_gpu():
    ptx = kl.source(listing_example, "ptx")
    assert ".entry listing_example_fwd(" in ptx
    arch = driver.compute_capability(0) if driver.is_available() else 80
    assert f".target sm_{arch}" in ptx


@needs_nvrtc
def test_ptx_for_a_chosen_architecture(monkeypatch):
    ptx = kl.source(listing_example, "ptx", adjoint=True, arch=90)
    assert ".entry listing_example_adj(" in ptx and ".target sm_90" in ptx
    monkeypatch.setattr(kl.config, "ptx_target_arch", 86)
    assert ".target sm_86" in kl.source(listing_example, "ptx")


def test_the_cuda_listing_shows_the_verify_fp_checks(monkeypatch):
    assert "kl_all_finite" not in kl.source(listing_example, "cuda")
    monkeypatch.setattr(kl.config, "verify_fp", True)
    assert "kl_all_finite" in kl.source(listing_example, "cuda")


@needs_nvrtc
def test_nvrtc_errors_name_the_kernel_and_carry_the_log():
    with pytest.raises(nvrtc.CudaCompileError) as info:
        nvrtc.compile_ptx("this is not C++;", "broken", 80)
    text = str(info.value)
    assert "kernel 'broken'" in text
    assert "while compiling kernel 'broken' for cuda:" in text
    assert "error" in text


@needs_nvrtc
def test_ptx_is_cached_on_disk(monkeypatch):
    source = render_cuda(listing_example.ir, True)
    first = nvrtc.compile_ptx(source, "listing_example", 80)

    def no_compiler(*args, **kwargs):
        raise AssertionError("NVRTC ran although the PTX was cached")

    monkeypatch.setattr(nvrtc, "_run_nvrtc", no_compiler)
    assert nvrtc.compile_ptx(source, "listing_example", 80) == first


@needs_nvrtc
def test_parameter_block_matches_the_kernel_parameters_in_the_ptx():
    func = corpus_vectors.adjoint_ir
    ptx = nvrtc.compile_ptx(render_cuda(func, True), func.name, 80)
    entry = ptx[ptx.index(".entry"):ptx.index(")", ptx.index(".entry"))]
    sizes = {"u8": 1, "s8": 1, "u32": 4, "s32": 4, "f32": 4, "b32": 4,
             "u64": 8, "s64": 8, "f64": 8, "b64": 8}
    declared = []
    for m in re.finditer(r"\.param (?:\.align (\d+) )?\.(\w+) \w+?(?:\[(\d+)\])?[,\n]", entry):
        align, kind, count = m.groups()
        declared.append((int(count), int(align)) if count else (sizes[kind], sizes[kind]))
    block = driver.parameter_block(func)
    fields = [(ctypes.sizeof(t), ctypes.alignment(t)) for _, t in block._fields_]
    assert declared == fields


# ---- the driver without a GPU ------------------------------------------------------------------

def test_driver_reports_availability_without_raising():
    assert driver.is_available() in (True, False)
    assert driver.is_available() == HAVE_GPU


def test_cuda_kernel_object_is_built_without_a_gpu():
    runner = cuda.compile_kernel(listing_example.ir)
    assert runner.name == "listing_example_fwd"
    assert runner.written == {2}


# ---- running the generated code: on a GPU, and emulated on the CPU -----------------------------
# Without a GPU the generated CUDA C++ still runs: g++ compiles it with __device__ and
# __global__ defined away and CUDA's intrinsics emulated for one thread at a time, and a
# wrapper takes the driver's packed parameter block. That checks the renderer, the header's
# semantics and the block layout against the interpreter; only NVRTC's code generation and
# the driver calls themselves are left to the GPU runs.

class OnGpu:
    """The kernel compiled by NVRTC and run on the GPU, with the interpreter's contract:
    host arrays in, results in them afterwards (copied to the GPU and back around the
    launch, as the driver takes GPU arrays only)."""

    def __init__(self, func):
        self.kernel = cuda.compile_kernel(func)

    def launch(self, dims, args):
        moved = [a.to("cuda") if isinstance(a, kl.array) else a for a in args]
        try:
            self.kernel.launch(dims, moved)
        finally:
            for a, m in zip(args, moved):
                if isinstance(a, kl.array):
                    a.assign(m)


@pytest.fixture(params=["emulated", pytest.param("gpu", marks=pytest.mark.cuda)])
def cuda_runner(request, tmp_path_factory):
    """Makes the runner of a kernel's CUDA code: on the GPU, or emulated on the CPU."""
    if request.param == "gpu":
        if not HAVE_GPU:
            pytest.skip("no CUDA GPU")
        return OnGpu
    if CXX is None:
        pytest.skip("no C++ compiler to emulate CUDA code on the CPU")
    folder = emulation_folder(tmp_path_factory)
    return lambda func: HostEmulated(func, folder)


def _random_array(t, n, rng):
    shape = (n,) + t.shape
    s = t.scalar
    if s.kind == "f":
        data = rng.uniform(0.2, 0.8, shape)
    elif s.kind == "b":
        data = rng.integers(0, 2, shape).astype(bool)
    else:
        data = rng.integers(1, 6, shape)
    return kl.array(np.asarray(data, s.np), dtype=t)


def run_both(runner, func, dims, make_args):
    """Run func on the interpreter and on the CUDA runner with equal fresh arguments."""
    ref_args, cuda_args = make_args(), make_args()
    Interpreter(func).launch(dims, ref_args)
    runner(func).launch(dims, cuda_args)
    return ref_args, cuda_args


def assert_agree(ref, got, tol64=1e-12):
    """Equal integers; floats to rounding (NumPy's float32 matmul may use FMA or another
    summation order; values cast up from float32 carry its rounding: pass tol64)."""
    for k, (r, g) in enumerate(zip(ref, got)):
        if isinstance(r, kl.array):
            a, b = r.numpy(), g.numpy()
            if a.dtype.kind == "f":  # float16: a half ulp (libm's float results rounded)
                tol = {2: 1e-3, 4: 2e-5}.get(a.dtype.itemsize, tol64)
                np.testing.assert_allclose(b, a, rtol=tol, atol=tol, equal_nan=True,
                                           err_msg=f"argument {k}")
            else:
                np.testing.assert_array_equal(b, a, err_msg=f"argument {k}")


def test_every_builtin_agrees_with_the_interpreter(cuda_runner):
    func, counts = every_builtin_function(runnable=True)

    def make_args():
        rng = np.random.default_rng(7)
        ins = [_random_array(t, 1, rng) for t in TYPES]
        return ins + [kl.zeros(max(1, counts[t]), dtype=t) for t in TYPES]

    assert_agree(*run_both(cuda_runner, func, (1,), make_args))


def test_every_builtin_adjoint_agrees_with_the_interpreter(cuda_runner):
    func, counts = every_builtin_function(runnable=True)
    adjoint = reverse_mode(func)

    def make_args():
        rng = np.random.default_rng(11)
        ins = [_random_array(t, 1, rng) for t in TYPES]
        outs = [kl.zeros(max(1, counts[t]), dtype=t) for t in TYPES]
        adj_ins = [kl.zeros(1, dtype=t) for t in TYPES]
        adj_outs = [kl.ones(max(1, counts[t]), dtype=t) for t in TYPES]
        return ins + outs + adj_ins + adj_outs

    assert_agree(*run_both(cuda_runner, adjoint, (1,), make_args))


@kl.kernel
def int_and_float_edges(a: kl.array(dtype=int), b: kl.array(dtype=int),
                        f: kl.array(dtype=float), g: kl.array(dtype=float),
                        iout: kl.array(dtype=int, ndim=2), fout: kl.array(dtype=float, ndim=2)):
    i = kl.tid()
    iout[i, 0] = a[i] / b[i]
    iout[i, 1] = a[i] % b[i]
    iout[i, 2] = a[i] // b[i]
    iout[i, 3] = int(f[i])
    iout[i, 4] = int(kl.uint32(kl.abs(f[i]))) + int(kl.int64(f[i]) // kl.int64(7))
    fout[i, 0] = f[i] // g[i]
    fout[i, 1] = f[i] % g[i]
    fout[i, 2] = kl.min(f[i], g[i]) + kl.max(g[i], f[i])
    fout[i, 3] = kl.round(f[i]) + kl.sign(f[i]) + kl.clamp(f[i], -1.0, g[i])


def test_integer_division_and_casts_at_the_edges_agree(cuda_runner):
    a = np.array([7, -7, 7, -7, 0, 5, 9, -9, 3], np.int32)
    b = np.array([2, 2, -2, -2, 3, 0, -1, -1, 0], np.int32)
    f = np.array([2.5, -2.5, np.nan, np.inf, -np.inf, 3e9, -3e9, -0.5, 1e12], np.float32)
    g = np.array([0.5, 0.0, -0.75, 2.0, 0.0, -3.0, 7.0, np.nan, -1.0], np.float32)

    def make_args():
        return [kl.array(a), kl.array(b), kl.array(f), kl.array(g),
                kl.zeros((9, 5), dtype=int32), kl.zeros((9, 4))]

    assert_agree(*run_both(cuda_runner, int_and_float_edges.ir, (9,), make_args))


def test_loop_adjoint_agrees_and_the_stack_spills_to_the_heap(cuda_runner):
    def make_args():  # 40 trips save more than the stack's local words
        x = kl.array(np.linspace(-0.5, 0.9, 50, dtype=np.float32))
        return [x, np.int32(40), np.int32(-1), kl.zeros(50), kl.zeros(50), np.int32(0),
                np.int32(0), kl.ones(50)]

    ref, got = run_both(cuda_runner, corpus_loops.adjoint_ir, (50,), make_args)
    assert_agree(ref, got)
    assert np.abs(got[4].numpy()).sum() > 0


def test_vectors_matrices_and_generic_shapes_agree(cuda_runner):
    def vec_args():
        r = np.random.default_rng(3)
        return [_random_array(vec3, 16, r), _random_array(mat33, 16, r),
                _random_array(vec3d, 16, r), kl.zeros(16, dtype=vec3),
                kl.zeros(16, dtype=mat33), kl.zeros(16)]

    assert_agree(*run_both(cuda_runner, corpus_vectors.ir, (16,), vec_args))

    def generic_args():
        r = np.random.default_rng(4)
        return [_random_array(VEC5, 8, r), _random_array(MAT23, 8, r),
                kl.zeros(8, dtype=vector(2))]

    assert_agree(*run_both(cuda_runner, corpus_generic_shapes.ir, (8,), generic_args))


def test_vector_adjoint_agrees(cuda_runner):
    def make_args():
        r = np.random.default_rng(9)
        primal = [_random_array(vec3, 16, r), _random_array(mat33, 16, r),
                  _random_array(vec3d, 16, r), kl.zeros(16, dtype=vec3),
                  kl.zeros(16, dtype=mat33), kl.zeros(16)]
        adj = [kl.zeros(16, dtype=vec3), kl.zeros(16, dtype=mat33), kl.zeros(16, dtype=vec3d),
               kl.ones(16, dtype=vec3), kl.ones(16, dtype=mat33), kl.ones(16)]
        return primal + adj

    assert_agree(*run_both(cuda_runner, corpus_vectors.adjoint_ir, (16,), make_args), 2e-5)


def test_multi_dimensional_grids_and_arrays_agree(cuda_runner):
    rng = np.random.default_rng(3)
    a, b, c = rng.random((3, 4)), rng.random((3, 4, 5)), rng.random((3, 4, 5, 2))

    def make_args():
        return [kl.array(a, dtype=float32), kl.array(b, dtype=float32),
                kl.array(c, dtype=float32), kl.zeros((3, 4, 5))]

    assert_agree(*run_both(cuda_runner, corpus_grids.ir, (3, 4, 5), make_args))


def test_atomics_agree(cuda_runner):
    def make_args():
        r = np.random.default_rng(5)
        n = 64
        return [_random_array(float32, n, r), _random_array(float64, n, r),
                _random_array(int32, n, r), _random_array(vec3, n, r), kl.zeros(4),
                kl.zeros(3, dtype=float64), kl.zeros(4, dtype=int32), kl.zeros(3, dtype=vec3),
                kl.zeros(2, dtype=uint32), kl.zeros(2, dtype=int64)]

    assert_agree(*run_both(cuda_runner, corpus_atomics.ir, (64,), make_args))


def test_custom_gradient_adjoint_agrees(cuda_runner):
    def make_args():
        x = kl.array(np.linspace(-1, 2, 20, dtype=np.float32))
        return [x, kl.zeros(20), kl.zeros(20), kl.ones(20)]

    assert_agree(*run_both(cuda_runner, corpus_custom_grad.adjoint_ir, (20,), make_args))


def test_out_of_bounds_raises_the_interpreters_error(cuda_runner):
    def make_args():
        return [kl.zeros(4), np.int32(2), kl.zeros(8)]

    messages = []
    for runner in (Interpreter(listing_example.ir), cuda_runner(listing_example.ir)):
        args = make_args()
        with pytest.raises(KernelIndexError) as info:
            runner.launch((8,), args)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "index 4 is out of bounds for axis 0 of array 'x' with shape (4,)" in messages[1]


def test_null_adjoint_arrays_are_skipped(cuda_runner):
    def make_args():
        return [kl.array(np.arange(5, dtype=np.float32)), np.int32(2), kl.zeros(5),
                None, np.int32(0), kl.ones(5)]

    assert_agree(*run_both(cuda_runner, listing_example.adjoint_ir, (5,), make_args))

"""Warm starts without LLVM (issue 20, item 5): a process whose kernels all come from the
disk cache loads their object code with kernlab's own loader (backends/llvm/objload.py)
and never imports llvmlite; what it computes is what a cold compile computes. And the
loader itself: every code model and relocation form LLVM emits for x86-64, malformed and
foreign objects refused, the MCJIT fallback."""
from __future__ import annotations

import ctypes
import json
import math
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kernlab as kl
from kernlab.backends.llvm import objload, variants
from kernlab.runtime import cache

pytestmark = pytest.mark.cpu_only("LLVM machine code")

own_loader = pytest.mark.skipif(not objload.supported(),
                                reason="kernlab's object loader is for Linux x86-64")

# One kernel and its adjoint, run in fresh processes: z = a sin(x) + y, its adjoint seeded
# with the gradient g in z's slot gives dx = a cos(x) g, dy = g (float32 arrays).
CHILD = textwrap.dedent('''
    import json, sys
    import numpy as np
    import kernlab as kl

    @kl.kernel
    def wave(x: kl.array(dtype=float), y: kl.array(dtype=float), z: kl.array(dtype=float),
             a: float):
        i = kl.tid()
        z[i] = a * kl.sin(x[i]) + y[i]

    n = 1000
    xs = np.linspace(-3.0, 3.0, n).astype(np.float32)
    ys = np.arange(n, dtype=np.float32) / 7
    gs = np.linspace(0.5, 2.0, n).astype(np.float32)
    x, y, z = kl.array(xs), kl.array(ys), kl.zeros(n)
    dx, dy = kl.zeros(n), kl.zeros(n)
    kl.launch(wave, n, inputs=[x, y, z, 1.5])
    kl.launch(wave, n, inputs=[x, y, z, 1.5], adj_inputs=[dx, dy, kl.array(gs), 0.0],
              adjoint=True)
    from kernlab.backends.llvm import objload, variants
    print(json.dumps({"z": z.numpy().tolist(), "dx": dx.numpy().tolist(),
                      "dy": dy.numpy().tolist(),
                      "llvmlite": sorted(m for m in sys.modules if m.startswith("llvmlite")),
                      "compiled": variants.stats["compiled"],
                      "loaded": variants.stats["loaded"],
                      "llvm_loads": variants.stats["llvm_loads"],
                      "mapped": objload.stats["mapped"]}))
''')


def _child(tmp_path, cache_dir, **env):
    script = tmp_path / "wave.py"
    script.write_text(CHILD)
    full = {k: v for k, v in os.environ.items() if k != "KERNLAB_OBJECT_LOADER"}
    full.update(KERNLAB_CACHE_DIR=str(cache_dir), **env)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=full, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _expected():
    n = 1000
    xs = np.linspace(-3.0, 3.0, n).astype(np.float32).astype(np.float64)
    ys = (np.arange(n, dtype=np.float32) / 7).astype(np.float64)
    gs = np.linspace(0.5, 2.0, n).astype(np.float32).astype(np.float64)
    return 1.5 * np.sin(xs) + ys, 1.5 * np.cos(xs) * gs, gs


def _check(result):
    z, dx, dy = _expected()
    np.testing.assert_allclose(result["z"], z, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(result["dx"], dx, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(result["dy"], dy, rtol=1e-7)


@own_loader
def test_a_warm_start_loads_without_llvmlite_and_computes_what_a_cold_one_does(tmp_path):
    folder = tmp_path / "cache"
    cold = _child(tmp_path, folder)
    assert cold["llvmlite"]  # compiled: LLVM was needed
    assert cold["compiled"] >= 2 and cold["loaded"] == 0
    _check(cold)
    warm = _child(tmp_path, folder)
    assert warm["llvmlite"] == []  # not even llvmlite.ir
    assert warm["compiled"] == 0 and warm["loaded"] == cold["compiled"]
    assert warm["llvm_loads"] == 0 and warm["mapped"] == warm["loaded"]
    _check(warm)
    assert (warm["z"], warm["dx"], warm["dy"]) == (cold["z"], cold["dx"], cold["dy"])


@own_loader
def test_damaged_object_entries_are_compiled_again(tmp_path):
    """An entry whose payload is not a loadable object (forged with the user's own secret,
    so that the cache's authentication passes and the loaders must refuse it) is compiled
    anew, with the same results."""
    folder = tmp_path / "cache"
    _child(tmp_path, folder)
    secret = (folder / cache.SECRET_NAME).read_bytes()
    damaged = 0
    for path in folder.glob("*" + cache.SUFFIX):
        blob = path.read_bytes()
        at = len(cache.MAGIC)
        (n,) = struct.unpack_from("<H", blob, at)
        key = blob[at + 2:at + 2 + n].decode()
        payload = blob[at + 2 + n + 8 + 32:]
        if payload.startswith(b"\x7fELF"):
            bad = bytearray(payload)
            bad[18] ^= 0xFF  # e_machine: another processor
            import hashlib
            import hmac
            mac = hmac.new(secret, digestmod=hashlib.sha256)
            mac.update(struct.pack("<H", len(key)) + key.encode())
            mac.update(bytes(bad))
            path.write_bytes(blob[:at + 2 + n] + struct.pack("<Q", len(bad)) + mac.digest()
                             + bytes(bad))
            damaged += 1
    assert damaged >= 2
    again = _child(tmp_path, folder)
    assert again["compiled"] == damaged and again["loaded"] == 0
    _check(again)


def test_the_llvm_loader_fallback_gives_the_same_results(tmp_path):
    """KERNLAB_OBJECT_LOADER=llvm: every object goes through LLVM's MCJIT, the path an
    object kernlab's loader refuses takes (and every load on a platform it does not
    handle)."""
    folder = tmp_path / "cache"
    cold = _child(tmp_path, folder, KERNLAB_OBJECT_LOADER="llvm")
    warm = _child(tmp_path, folder, KERNLAB_OBJECT_LOADER="llvm")
    assert warm["compiled"] == 0 and warm["llvm_loads"] == warm["loaded"] > 0
    assert warm["mapped"] == 0
    _check(cold)
    _check(warm)


@own_loader
def test_an_object_the_loader_refuses_goes_to_llvm(monkeypatch):
    """In process: objload raising ObjectError for every object sends each to MCJIT, and
    the kernel still runs right."""
    monkeypatch.setattr(kl.config, "cpu_backend", "llvm")

    def refuse(data, resolve):
        raise objload.ObjectError("refused by the test")
    monkeypatch.setattr(objload, "load", refuse)
    monkeypatch.setattr(variants, "_memo", __import__("weakref").WeakValueDictionary())
    before = variants.stats["llvm_loads"]

    @kl.kernel
    def cube(x: kl.array(dtype=kl.float64), y: kl.array(dtype=kl.float64)):
        i = kl.tid()
        y[i] = x[i] * x[i] * x[i] + kl.exp(x[i])

    xs = np.linspace(-1, 1, 17)
    y = kl.zeros(17, dtype=kl.float64)
    kl.launch(cube, 17, inputs=[kl.array(xs), y])
    np.testing.assert_allclose(y.numpy(), xs ** 3 + np.exp(xs), rtol=1e-15)
    assert variants.stats["llvm_loads"] > before


@own_loader
def test_a_stale_host_record_costs_a_miss_not_wrong_code(tmp_path, monkeypatch):
    """The host record names another CPU and LLVM: a process without llvmlite computes keys
    that find nothing, compiles (loading LLVM, which rewrites the record) and stores nothing
    under those keys; the next process loads warm again."""
    folder = tmp_path / "cache"
    _child(tmp_path, folder)
    monkeypatch.setattr(kl.config, "cache_dir", str(folder))
    key = variants._host_record_key()
    if key is None:
        pytest.skip("no host identity here")
    real = variants._read_host_record(key)
    assert real is not None  # written by the cold child
    stale = ("llvmlite 0", "llvm 0", "some-cpu", "+x")
    cache.store(key, __import__("marshal").dumps(list(stale)))
    entries = set(folder.glob("*" + cache.SUFFIX))
    again = _child(tmp_path, folder)
    assert again["compiled"] > 0 and again["llvmlite"]  # a miss: compiled with LLVM
    _check(again)
    assert variants._read_host_record(key) == real  # the record is right again
    assert set(folder.glob("*" + cache.SUFFIX)) == entries  # nothing stored under stale keys
    warm = _child(tmp_path, folder)
    assert warm["compiled"] == 0 and warm["llvmlite"] == []
    _check(warm)


# ---- the loader itself ----------------------------------------------------------------------

IR = r'''
@table = internal constant [4 x double] [double 1.0, double 2.0, double 3.0, double 4.0]
@counter = internal global i64 0
@ext = external global i32
declare double @sin(double)
define double @f(double %x, i64 %i) {
  %p = getelementptr [4 x double], ptr @table, i64 0, i64 %i
  %t = load double, ptr %p
  %s = call double @sin(double %x)
  %c0 = load i64, ptr @counter
  %c1 = add i64 %c0, 1
  store i64 %c1, ptr @counter
  %r = fmul double %s, %t
  %r2 = fadd double %r, 0.125
  ret double %r2
}
define i64 @count() {
  %c = load i64, ptr @counter
  ret i64 %c
}
define i32 @readext() {
  %v = load i32, ptr @ext
  ret i32 %v
}
'''


def _object(reloc="default", model="jitdefault") -> bytes:
    import llvmlite.binding as llvm
    from kernlab.backends.llvm import jit
    jit._host()  # LLVM initialised
    tm = llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
        opt=2, reloc=reloc, codemodel=model, jit=model == "jitdefault")
    module = llvm.parse_assembly(IR)
    module.triple, module.data_layout = tm.triple, str(tm.target_data)
    return tm.emit_object(module)


_ext = ctypes.c_int32(77)


def _resolve(name):
    return ctypes.addressof(_ext) if name == "ext" else None


@own_loader
@pytest.mark.parametrize("reloc", ["static", "pic"])
@pytest.mark.parametrize("model", ["small", "medium", "large", "jitdefault"])
def test_every_code_model_loads_and_runs(reloc, model):
    """Small (PC32, PLT32 through a stub, 32S in the low 2 GB, GOTPCREL), medium and large
    (64-bit absolutes, GOTOFF64 and GOTPC64 against _GLOBAL_OFFSET_TABLE_) code, static and
    PIC: a constant table, a writable global, an external function and an external
    variable, each checked by calling the code."""
    code = objload.load(_object(reloc, model), _resolve)
    try:
        f = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double, ctypes.c_int64)(code.symbols["f"])
        count = ctypes.CFUNCTYPE(ctypes.c_int64)(code.symbols["count"])
        readext = ctypes.CFUNCTYPE(ctypes.c_int32)(code.symbols["readext"])
        assert f(0.5, 2) == math.sin(0.5) * 3.0 + 0.125
        assert f(-1.25, 3) == math.sin(-1.25) * 4.0 + 0.125
        assert count() == 2
        assert readext() == 77
    finally:
        code.free()
    code.free()  # a second free is harmless


@own_loader
def test_code_is_never_writable_and_executable():
    """W^X: the code pages are read+execute, the writable global's page read+write only."""
    code = objload.load(_object("static", "large"), _resolve)
    try:
        lo, hi = code.address, code.address + code.size
        with open("/proc/self/maps") as maps:
            spans = []
            for line in maps:
                where, perms = line.split()[:2]
                a, b = (int(v, 16) for v in where.split("-"))
                if a < hi and lo < b:
                    spans.append(perms)
        assert any("x" in p for p in spans) and any("w" in p for p in spans)
        assert not any("w" in p and "x" in p for p in spans)
    finally:
        code.free()


def _malformed():
    good = _object("static", "large")
    shoff = struct.unpack_from("<Q", good, 0x28)[0]
    cases = {"not ELF": b"\x00" + good[1:], "truncated": good[:len(good) // 2],
             "empty": b"", "32-bit": good[:4] + b"\x01" + good[5:],
             "big-endian": good[:5] + b"\x02" + good[6:],
             "a shared library": good[:16] + struct.pack("<H", 3) + good[18:],
             "another machine": good[:18] + struct.pack("<H", 183) + good[20:],
             "headers past the end": good[:0x28] + struct.pack("<Q", len(good)) + good[0x30:]}
    # a relocation naming a symbol past the table, and one of an unknown type
    n = struct.unpack_from("<H", good, 0x3C)[0]
    for k in range(n):
        sh_type = struct.unpack_from("<I", good, shoff + 64 * k + 4)[0]
        if sh_type == 4:  # SHT_RELA: change its first entry
            at = struct.unpack_from("<Q", good, shoff + 64 * k + 24)[0]
            offset, info, addend = struct.unpack_from("<QQq", good, at)
            for name, new in (("symbol past the table", (info & 0xFFFFFFFF) | (9999 << 32)),
                              ("unknown relocation", (info & ~0xFFFFFFFF) | 37)):
                bad = bytearray(good)
                struct.pack_into("<QQq", bad, at, offset, new, addend)
                cases[name] = bytes(bad)
            bad = bytearray(good)
            struct.pack_into("<QQq", bad, at, 1 << 40, info, addend)
            cases["relocation outside its section"] = bytes(bad)
            break
    return cases


@own_loader
def test_malformed_and_foreign_objects_are_refused():
    cases = _malformed()
    assert len(cases) == 11
    before = objload.stats["mapped"] - objload.stats["unmapped"]
    for name, data in cases.items():
        with pytest.raises(objload.ObjectError):
            objload.load(data, _resolve)
    assert objload.stats["mapped"] - objload.stats["unmapped"] == before  # nothing kept


@own_loader
def test_an_unresolvable_symbol_is_refused():
    with pytest.raises(objload.ObjectError, match="undefined symbol ext"):
        objload.load(_object(), lambda name: None)


def test_the_argument_block_is_laid_out_as_the_c_struct_ctypes_makes():
    """runner.ArgLayout computes the offsets itself (a ctypes Structure class costs a warm
    start 0.1 ms per variant): they must be those of the C struct of the same fields."""
    from kernlab.backends.llvm.runner import ArgLayout

    @kl.kernel
    def mixed(a: kl.array(dtype=kl.float16), flag: bool, b: kl.array2d(dtype=kl.float64),
              small: kl.int8, v: kl.vec3, h: kl.float16, m: kl.mat33d,
              c: kl.array3d(dtype=kl.uint8), n: kl.int64, w: kl.vec2h):
        i = kl.tid()
        if flag and i < 1:
            a[0] = h + kl.float16(float(small) + v[0] + float(n) + float(m[0, 0]) +
                                  float(w[1]) + float(b[0, 0]) + float(c[0, 0, 0]))

    for func in (mixed.ir, mixed.adjoint_ir):
        layout = ArgLayout(func)
        ref = type("Ref", (ctypes.Structure,), {"_fields_": layout.fields})
        assert layout.size == ctypes.sizeof(ref)
        assert layout.offsets == {name: getattr(ref, name).offset for name, _ in layout.fields}



def test_shared_layouts_and_blocks_fit_the_c_struct_of_each_function():
    """runner.layout_of shares one ArgLayout between functions whose parameters have equal
    types (an adjoint and its retained-gradient variant), and runner._block_type one block
    type between sizes: each must still be the C struct ctypes makes for that function,
    and the block at least that large (and zeroed)."""
    from kernlab.backends.llvm.runner import ArgLayout, _block_type, layout_of

    @kl.kernel
    def pair(x: kl.array(dtype=float), y: kl.array(dtype=kl.float64), s: kl.int32):
        i = kl.tid()
        y[i] = kl.float64(x[i]) * kl.float64(s)

    @kl.kernel
    def other(x: kl.array(dtype=kl.float64), y: kl.array(dtype=float), s: kl.int32):
        i = kl.tid()
        y[i] = float(x[i]) * float(s)

    retained = pair.adjoint_variant(frozenset({1}))
    assert retained is not pair.adjoint_ir
    assert layout_of(retained) is layout_of(pair.adjoint_ir)
    assert layout_of(other.ir) is not layout_of(pair.ir)  # other element types
    for func in (pair.ir, pair.adjoint_ir, retained, other.ir, other.adjoint_ir):
        layout = layout_of(func)
        own = ArgLayout(func).fields  # this function's own fields, not the shared layout's
        ref = type("Ref", (ctypes.Structure,), {"_fields_": own})
        assert [name for name, _ in layout.fields] == [name for name, _ in own]
        assert layout.size == ctypes.sizeof(ref)
        assert layout.offsets == {name: getattr(ref, name).offset for name, _ in layout.fields}
        block = _block_type(layout.size)()
        assert ctypes.sizeof(block) >= layout.size
        assert bytes(block) == bytes(ctypes.sizeof(block))


PRELOAD_CHILD = textwrap.dedent('''
    import json, sys
    import kernlab as kl
    from kernlab import backends
    after_import = ("llvmlite" in sys.modules, backends._preload is not None)

    @kl.kernel
    def twice(x: kl.array(dtype=float)):
        i = kl.tid()
        x[i] = 2.0 * x[i]

    twice.ir  # the front end: runs on a cold cache, read from it on a warm one
    started = backends._preload is not None
    x = kl.ones(3)
    kl.launch(twice, 3, inputs=[x])
    print(json.dumps({"after_import": after_import, "preload": started,
                      "x": x.numpy().tolist()}))
''')


def test_llvm_loads_on_a_front_end_miss_only(tmp_path):
    """``import kernlab`` loads no LLVM; a kernel whose IR is not cached starts loading it
    while its front end runs (for the compile that follows); a warm process never does."""
    script = tmp_path / "preload.py"
    script.write_text(PRELOAD_CHILD)
    env = dict(os.environ, KERNLAB_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("KERNLAB_PRELOAD", None)
    out = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    cold, warm = out
    assert cold["after_import"] == [False, False] and warm["after_import"] == [False, False]
    assert cold["preload"] is True and warm["preload"] is False
    assert cold["x"] == warm["x"] == [2.0, 2.0, 2.0]


MAPPED_CHILD = textwrap.dedent('''
    import ctypes, json, sys, time
    from kernlab import backends
    from kernlab.backends.llvm import jit  # maps llvmlite's library, then imports llvmlite
    import llvmlite.binding as llvm
    llvm.ffi.lib._load_lib()  # llvmlite's own CDLL of its library
    print(json.dumps({"ours": backends._llvmlite_handle or 0,
                      "llvmlite": llvm.ffi.lib._lib_handle._handle,
                      "version": list(llvm.llvm_version_info)}))
''')


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="dlopen through libc: Linux")
def test_llvmlites_library_is_the_one_mapped_ahead(tmp_path):
    """jit.py maps llvmlite's library through libc's dlopen before importing llvmlite (a
    ctypes call, without the GIL): llvmlite's own load must then find that same library
    (dlopen gives the handle of the one loaded), not a second copy, and work."""
    script = tmp_path / "mapped.py"
    script.write_text(MAPPED_CHILD)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["ours"] != 0 and out["ours"] == out["llvmlite"]
    import llvmlite.binding as llvm
    assert out["version"] == list(llvm.llvm_version_info)


def test_a_plan_entry_of_the_wrong_shape_is_not_used():
    """A plan read from the cache (authenticated, but maybe of another kernlab) is used only
    if it has the expected fields, parts and parameter indices in range."""
    import marshal
    good = {"parts": ["fast", "general"], "optional": [1], "private": [[2, 1024]],
            "eager": [2], "interruptible": False}
    assert variants._checked_plan(marshal.dumps(good), 3) == good
    bad = [dict(good, parts=["general", "fast"]), dict(good, optional=[3]),
           dict(good, private=[[0, 0]]), dict(good, eager=[-1]),
           dict(good, interruptible=1), {k: v for k, v in good.items() if k != "eager"},
           dict(good, extra=True)]
    for plan in bad:
        assert variants._checked_plan(marshal.dumps(plan), 3) is None
    for payload in (b"", b"\x00garbage", marshal.dumps([1, 2]), marshal.dumps("plan")):
        assert variants._checked_plan(payload, 3) is None

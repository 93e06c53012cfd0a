"""Compiled code is released: a kernel's machine code is freed once the kernel, its runners
and launches are gone (a notebook cell that redefines it included). Resident memory is
measured in fresh child processes."""
import gc
import subprocess
import sys
import weakref

import pytest

import kernlab as kl
from kernlab.backends.llvm import jit, objload, variants
from test_reliability import child_env

TEMPLATE = ("import kernlab as kl\n"
            "@kl.kernel\n"
            "def cell(x: kl.array(dtype=float)):\n"
            "    i = kl.tid()\n"
            "    x[i] = x[i] * 0.5 + {c}\n")


def define(tmp_path, k: int):
    path = tmp_path / f"cell_{k}.py"
    path.write_text(TEMPLATE.format(c=float(k) + 0.25))
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace["cell"]


@pytest.mark.cpu_only("LLVM machine code")
@pytest.mark.parametrize("loader", ["kernlab", "llvm"])
def test_the_machine_code_of_dropped_kernels_is_freed(tmp_path, monkeypatch, loader):
    """Both loaders: kernlab's own (objload: each object its own mapping, unmapped with
    the last entry using it) and LLVM's MCJIT (arenas of ARENA_SIZE objects, an engine
    disposed with the last entry of a full arena)."""
    monkeypatch.setattr(kl.config, "cpu_backend", "llvm")
    monkeypatch.setattr(variants, "OWN_LOADER", loader == "kernlab")
    monkeypatch.setattr(variants, "_memo", weakref.WeakValueDictionary())  # loaded anew
    x = kl.zeros(4, dtype=float)
    freed, unmapped = jit.stats["arenas_freed"], objload.stats["unmapped"]
    entries = []
    runs = 3 * jit.ARENA_SIZE + variants._recent.maxlen
    for k in range(runs):
        kernel = define(tmp_path, k)
        kl.launch(kernel, 4, inputs=[x])
        entries.append(weakref.ref(kernel.compiled("llvm").entry))
        del kernel  # the cell is redefined: nothing holds the old kernel
    gc.collect()
    recent = len(variants._recent)  # the latest few are kept a while (a runner made and dropped)
    assert all(e() is None for e in entries[:-recent])
    if loader == "llvm":  # every arena but the one still taking entries has been disposed
        assert jit.stats["arenas_freed"] - freed >= 2
    else:  # every object but the recent ones unmapped
        assert objload.stats["unmapped"] - unmapped >= runs - recent
    # and the kernel of a cell still defined keeps running
    kernel = define(tmp_path, 1000)
    x = kl.ones(4, dtype=float)
    kl.launch(kernel, 4, inputs=[x])
    assert x.numpy().tolist() == [1000.75] * 4


MEMORY_CHILD = r"""
import ctypes, gc, sys
import kernlab as kl

def rss():
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

runs, path = int(sys.argv[1]), sys.argv[2]
x = kl.zeros(16, dtype=float)
template = %r

def rerun(k):
    src = template.format(c=float(k))
    with open(path, "w") as f:
        f.write(src)
    ns = {}
    exec(compile(src, path, "exec"), ns)
    kl.launch(ns["cell"], 16, inputs=[x])

for k in range(20):
    rerun(k)
before = rss()
for k in range(20, 20 + runs):
    rerun(k)
print((rss() - before) / runs)
""" % TEMPLATE


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and glibc")
def test_edited_re_runs_keep_no_code(tmp_path):
    """A cell re-run with edits. Compiled: each compile kept its optimisation pipeline
    (llvmlite never frees a ModulePassManager; 88 KB per re-run measured before, about
    5 KB now). Loaded from the disk cache: every load added machine code, which was never
    freed (17 KB per re-run before, about 1 KB now)."""
    script = tmp_path / "child_memory.py"
    script.write_text(MEMORY_CHILD)
    cache = tmp_path / "cache"
    runs = 120
    per_run = []
    for _ in range(2):  # the first run fills the cache, the second loads from it
        proc = subprocess.run([sys.executable, str(script), str(runs), str(tmp_path / "c.py")],
                              capture_output=True, text=True, timeout=600,
                              env=child_env(cache))
        assert proc.returncode == 0, proc.stderr[-3000:]
        per_run.append(float(proc.stdout.split()[-1]))
    print(f"\nkept per edited re-run: compiled {per_run[0] / 1024:.1f} KB, "
          f"loaded {per_run[1] / 1024:.1f} KB")
    assert per_run[0] < 30 * 1024  # generous: about 5 KB here, 88 KB before
    assert per_run[1] < 8 * 1024  # generous: about 1 KB here, 17 KB before

"""The short path of a small forward launch on the CPU (issue 20, "cheap small launches").

Below ``runner.PARALLEL_THRESHOLD`` threads a launch runs in one call on the calling thread,
so what it costs is Python's: kl.launch's general path (argument checkers, a Launch, the
tape and capture tests, packing, the ctypes call) takes microseconds for a kernel that runs
in a fraction of one. After a kernel's first launch, ``ShortPath.make`` writes a function
for the kernel's parameters, ``run(total, args)``, that does what such a launch needs and
nothing more:

* per array one attribute read: its key (``array._described``: dtype, ndim, device,
  address, shape and strides, made once per array object: none of them changes); per
  scalar a type and range test; written arrays still writable;
* the settings the compiled code depends on unchanged (``config.changes``, which also
  counts changes to ``kernel.options``: the kernel's ``bounds_check`` option);
* a launch plan per argument signature: made for keys that fit the parameters, it holds
  the packed argument block and what calls the entry, so a repeated launch compares the
  keys' identities, patches a scalar that changed and packs nothing else. The latest plan
  waits in a list, the others in a dict by the keys' ids; a launch takes its plan out (no
  two threads share a block) and puts it back after a clean run;
* the call: a ctypes call at first; after NATIVE_AFTER of them in the process, a builtin
  function generated once with llvmlite that calls the entry with the plan's block and
  thread count (a third of ctypes' cost). Below HOLD_GIL_BELOW threads the GIL is kept for
  the call, above it released, as the pool does;
* the bookkeeping of the general path: version counts of written arrays, the in-place
  snapshot marks, the error of a bounds check or of the general entry (``Runner.settle``).

Once the native calls are made, ``run`` is a builtin in front of that Python function
(launch_short_native.py): for a launch with a plan made already and numbers for the
scalars, it does the same checks and the call in native code (about 0.3 µs less per
launch; 1.6 µs less where arrays alternate between plans) and hands everything else to
the Python function.

Whatever it does not accept (a NumPy array to wrap, a value to convert, a null array, a
read-only array, a tape or capture open, settings changed since) it declines by returning
False, and kl.launch takes its general path, which checks, converts and reports errors as it
always did: the short path has no error messages of its own.

Adjoint launches have a short path of their own (launch_short_adjoint.py, made after a
kernel's first adjoint launch): kl.launch(..., adjoint=True) and launch._run (recorded adjoint
launches, a tape's backward) go through it; the same rules, with a plan per arrays, thread
count and retained gradients (which picks the adjoint variant and its entry once).
"""
from __future__ import annotations

import ctypes
import functools
import struct
import threading
import weakref

import numpy as np

from .. import config
from . import launch_short_native as native_front
from .array import array
from .device import _CPU, _default

_ZERO = ctypes.c_int64(0)

# Below this many threads the short path calls the entry without releasing the GIL (about
# 0.3 µs less per launch through ctypes). A loop-free kernel (the only kind the short path
# runs) spends nanoseconds per thread, so other Python threads wait tens of microseconds
# at most.
HOLD_GIL_BELOW = 16384
PLANS_KEPT = 16  # launch plans kept per kernel besides the latest (one per signature)
# After this many short launches through ctypes (in the process), the native call is made
# (about 20 ms of code generation, once): a ctypes call costs 0.3 µs or more, the native
# call about 0.1 µs. Until then, and where it cannot be made, ctypes calls the entry.
NATIVE_AFTER = 256

_INTS = frozenset([int, *native_front._NUMPY_INTS])
# (half floats only through the native front: the Python path's range test would warn of an
# overflow converting the float32 bound to half; the general path takes them)
_FLOATS = frozenset([float, *(t for t in native_front._NUMPY_FLOATS
                             if np.dtype(t) != np.float16)])
_CLEAN = object()  # what a native call returns when the kernel left its status unset


# ---- the native call ----------------------------------------------------------------------
# A ctypes call converts its arguments and prepares a libffi call every time. The native
# call is a builtin function (METH_NOARGS) whose C code, generated once per process with
# llvmlite, reads the entry's address, the argument block's address, the thread count and
# the status offset from its bound tuple, calls the entry (releasing the GIL around it in
# the "released" variant) and returns _CLEAN, or True when the kernel set its status.

_native: dict = {"state": "unmade", "calls": 0}  # unmade, making, made or failed
_native_lock = threading.Lock()
_waiting: weakref.WeakSet = weakref.WeakSet()  # short paths to get a native front once made
_forever: list = []  # every engine made, with its method definitions: never freed


def _native_source() -> str:
    """The LLVM IR of the two variants: the GIL kept ("held") and released around the
    call. The bound tuple is (entry, block, thread count, status offset, _CLEAN, True,
    the version lists of the arrays the kernel writes): after the call (the GIL held
    again) each list's item 0 is counted up, as ``array._bump_version`` does."""
    def variant(name, release):
        save = "  %ts = call ptr @PyEval_SaveThread()\n" if release else ""
        restore = "  call void @PyEval_RestoreThread(ptr %ts)\n" if release else ""
        fields = "".join(f"  %o{k} = call ptr @PyTuple_GetItem(ptr %self, i64 {k})\n"
                         f"  %v{k} = call ptr @PyLong_AsVoidPtr(ptr %o{k})\n"
                         for k in range(4))
        return (f"define ptr @{name}(ptr %self, ptr %unused) {{\nentry:\n{fields}"
                "  %end = ptrtoint ptr %v2 to i64\n  %at = ptrtoint ptr %v3 to i64\n"
                f"{save}  call void %v0(ptr %v1, i64 0, i64 %end)\n{restore}"
                "  %boxes = call ptr @PyTuple_GetItem(ptr %self, i64 6)\n"
                "  %count = call i64 @PyTuple_Size(ptr %boxes)\n"
                "  br label %head\n"
                "head:\n  %i = phi i64 [0, %entry], [%next, %body], [%next, %skip]\n"
                "  %more = icmp slt i64 %i, %count\n  br i1 %more, label %body0, label %tail\n"
                "body0:\n  %box = call ptr @PyTuple_GetItem(ptr %boxes, i64 %i)\n"
                "  %old = call ptr @PyList_GetItem(ptr %box, i64 0)\n"
                "  %val = call i64 @PyLong_AsLongLong(ptr %old)\n"
                "  %inc = add i64 %val, 1\n"
                "  %new = call ptr @PyLong_FromLongLong(i64 %inc)\n"
                "  %none = icmp eq ptr %new, null\n  %next = add i64 %i, 1\n"
                "  br i1 %none, label %skip, label %body\n"
                "skip:\n  call void @PyErr_Clear()\n  br label %head\n"
                "body:\n  %r = call i32 @PyList_SetItem(ptr %box, i64 0, ptr %new)\n"
                "  br label %head\n"
                "tail:\n"
                "  %flag = getelementptr i8, ptr %v1, i64 %at\n"
                "  %low = load i8, ptr %flag\n  %set = icmp ne i8 %low, 0\n"
                "  %slot = select i1 %set, i64 5, i64 4\n"
                "  %out = call ptr @PyTuple_GetItem(ptr %self, i64 %slot)\n"
                "  call void @Py_IncRef(ptr %out)\n  ret ptr %out\n}\n")
    return ("declare ptr @PyTuple_GetItem(ptr, i64)\ndeclare ptr @PyLong_AsVoidPtr(ptr)\n"
            "declare void @Py_IncRef(ptr)\ndeclare ptr @PyEval_SaveThread()\n"
            "declare void @PyEval_RestoreThread(ptr)\ndeclare i64 @PyTuple_Size(ptr)\n"
            "declare ptr @PyList_GetItem(ptr, i64)\ndeclare i64 @PyLong_AsLongLong(ptr)\n"
            "declare ptr @PyLong_FromLongLong(i64)\ndeclare i32 @PyList_SetItem(ptr, i64, ptr)\n"
            "declare void @PyErr_Clear()\n"
            + variant("kl_short_held", False) + variant("kl_short_released", True))


class _MethodDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("meth", ctypes.c_void_p), ("flags", ctypes.c_int),
                ("doc", ctypes.c_char_p)]


def _make_native() -> None:
    """Generate the two native call variants (once per process); on any failure (not
    CPython, no llvmlite) the short path keeps calling through ctypes. Made at most once:
    the native calls made hold the addresses of its code and definitions."""
    with _native_lock:  # two threads past NATIVE_AFTER at once: one makes it
        if _native["state"] == "unmade":
            _native["state"] = "making"  # meanwhile launches keep counting through ctypes
            _make_native_now()
            if _native["state"] != "made":
                _native["state"] = "failed"


def _make_native_now() -> None:
    """The code generation of _make_native; _native's state "made" when it worked."""
    try:
        import llvmlite.binding as llvm
        api = ctypes.pythonapi
        found = native_front.layout()  # (None: no native front, the calls still made)
        for name in {"PyTuple_GetItem", "PyLong_AsVoidPtr", "Py_IncRef", "PyEval_SaveThread",
                     "PyEval_RestoreThread", "PyTuple_Size", "PyList_GetItem",
                     "PyLong_AsLongLong", "PyLong_FromLongLong", "PyList_SetItem",
                     "PyErr_Clear", *(native_front.SYMBOLS if found else ())}:
            llvm.add_symbol(name, ctypes.cast(getattr(api, name), ctypes.c_void_p).value)
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        module = llvm.parse_assembly(_native_source() + (
            native_front.DECLARATIONS + native_front.source(*found) if found else ""))
        module.verify()
        machine = llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
            opt=1)
        engine = llvm.create_mcjit_compiler(module, machine)
        engine.finalize_object()
        new = api.PyCFunction_NewEx
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.py_object,
                                                      ctypes.py_object]
        defs = {held: _MethodDef(b"kernlab_short_launch", engine.get_function_address(name),
                                 0x0004, None)  # METH_NOARGS
                for held, name in ((True, "kl_short_held"), (False, "kl_short_released"))}
        front = _MethodDef(b"kernlab_short_launch", engine.get_function_address(
            "kl_short_fast"), 0x0080, None) if found else None  # METH_FASTCALL
    except Exception:  # noqa: BLE001 - any failure: ctypes stays
        return
    # the engine (its code) and the method definitions live as long as the process (also
    # where _native is replaced, as tests do: builtins made from them may outlive it)
    _forever.append((engine, defs, front))
    _native.update(state="made", engine=engine, defs=defs, new=new, front=front)
    for q in list(_waiting):  # the short paths written meanwhile get their native front
        q.front()
    _waiting.clear()


def _call(entry: int, released, buf, total: int, plan: list, boxes: tuple = ()):
    """What calls the entry for a plan: the native call once it is made, which also counts
    up the version lists ``boxes`` (of the arrays the kernel writes) and returns _CLEAN or
    True; else a ctypes call (returning None: the caller counts the versions) that counts
    itself and puts the native call in ``plan[0]`` once it is made."""
    held = total < HOLD_GIL_BELOW
    if _native["state"] == "made":
        return _native["new"](ctypes.byref(_native["defs"][held]),
                              (entry, ctypes.addressof(buf), total, plan[3], _CLEAN, True,
                               boxes), None)
    fn = ctypes.PYFUNCTYPE(None)(entry) if held else released
    end = ctypes.c_int64(total)
    if _native["state"] == "failed":
        return functools.partial(fn, buf, _ZERO, end)

    def counting():
        fn(buf, _ZERO, end)
        _native["calls"] += 1
        if _native["calls"] >= NATIVE_AFTER:
            if _native["state"] == "unmade":
                _make_native()
            plan[0] = _call(entry, released, buf, total, plan, boxes)
    return counting


def param_kinds(params) -> list | None:
    """What the generated checks test of each parameter: (0, dtype, ndim) for an array,
    (1, -max, max) for a float and (2, min, max) for an integer (the values struct packs
    without an error); None when one is of a kind the short paths do not take."""
    kinds = []
    for p in params:
        t = p.type
        if t.is_array:
            kinds.append((0, t.dtype, t.ndim))
        elif t.is_scalar and t.scalar.kind == "f" and t.name != "bfloat16":
            limit = float(np.finfo(t.np).max)
            kinds.append((1, -limit, limit))
        elif t.is_scalar and t.scalar.kind in "iu":
            info = np.iinfo(t.np)
            kinds.append((2, int(info.min), int(info.max)))
        else:
            return None
    return kinds


class ShortPath:
    """A kernel's short launch path: ``run(total, args)`` for kl.launch's inputs and outputs,
    ``run_converted(total, params)`` for a kl.Launch's (converted when set: NumPy scalars).
    Either returns True when it ran the launch (or raised the kernel's own error), False to
    take the general path."""

    __slots__ = ("kernel", "runner", "state", "changes", "run", "run_converted", "python",
                 "python_converted", "spec", "__weakref__")

    @classmethod
    def make(cls, kernel):
        """The short path of ``kernel``; None under another backend (asked again at the
        next launch); False where it has none (a kernel with vector, bool or struct
        parameters, hash grids or meshes, loops or atomics that need the general launch)."""
        if config.cpu_backend != "llvm":
            return None
        from ..autodiff.inplace import plan as inplace_plan
        from ..backends.llvm import runner as jit  # (no LLVM: runner.py)
        from .launch import written_params
        func = kernel.ir
        if getattr(func, "handle_hidden", None) \
                or getattr(func, "struct_signature", None) is not None:
            return False
        kinds = param_kinds(func.params)
        if kinds is None:
            return False
        runner = kernel.compiled("llvm")
        released = runner.inline_entry() if hasattr(runner, "inline_entry") else None
        if released is None:
            return False
        q = cls()
        q.kernel, q.runner = kernel, runner
        q.state, q.changes = ShortPath.settings(kernel), config.changes
        layout = runner.layout
        status = layout.status_offset
        plans, last = {}, []
        types = [(a, b) for kind, a, b in kinds if kind == 0]  # the arrays' dtype and ndim

        def find(old, keys, total, boxes, arrays):
            """The plan for these arrays' keys and thread count (None when an array does
            not fit its parameter), after ``old``, the latest one, went back to PLANS;
            ``boxes``: the version lists of the arrays the kernel writes (the native call
            counts them up); ``arrays``: the arrays, for the native front's extras."""
            if old[0] is not None:
                if len(plans) >= PLANS_KEPT:
                    plans.clear()
                plans[(*map(id, old[4:4 + len(types)]), old[2])] = old
            plan = plans.pop((*map(id, keys), total), None)
            if plan is not None:
                return plan
            if not all(key[0] is dtype and key[1] == ndim and key[2] is _CPU
                       for key, (dtype, ndim) in zip(keys, types)):
                return None
            buf, values, each = runner._block(), [], iter(keys)
            for kind, _, _ in kinds:  # the address, shape and strides; scalars: patched
                values += next(each)[3:] if kind == 0 else (0,)
            layout.packer.pack_into(buf, 0, *values, total, 1, 1, 1)
            # the plan holds the keys: their ids in PLANS stay theirs while it lives
            plan = [None, buf, total, status, *keys, *([None] * (len(kinds) - len(types)))]
            plan[0] = _call(runner.entry.address, released, buf, total, plan, boxes)
            for a in arrays:  # what the native front reads instead of the keys
                plan += native_front.extras(a)
            return plan

        def tail(plan, total, args):
            """After a launch by the native front whose kernel set its status (its plan
            not put back): the runner settles it, as on the Python path."""
            runner.settle(plan[1], [0, total], list(args))
            return True
        names = {"CPU": _CPU, "DEFAULT": _default, "describe": describe,
                 "generic": np.generic, "Q": q, "config": config,
                 "LAST": last, "NOPLAN": [None, None, -1, None, *([None] * len(kinds))],
                 "CLEAN": _CLEAN, "FIND": find, "RUNNER": runner, "KEY": kernel.key,
                 "INTS": _INTS, "NUMBERS": _INTS | _FLOATS}
        for k, (kind, a, b) in enumerate(kinds):
            if kind:
                names[f"L{k}"], names[f"H{k}"] = a, b
                fmt = "<" + jit._scalar_format(func.params[k].type.scalar)
                names[f"S{k}"] = struct.Struct(fmt).pack_into
                names[f"O{k}"] = layout.offsets[f"p{k}"]
        parts = (kinds, written_params(func), inplace_plan(func).snapshot,
                 jit.PARALLEL_THRESHOLD, runner.layout.status_offset)
        q.python = q.python_converted = None  # the Python run and run_converted, once written
        q.spec = (kinds, {k: jit._scalar_format(p.type.scalar) for k, p in enumerate(func.params)
                          if not p.type.is_array},
                  {k: names[f"O{k}"] for k in range(len(kinds)) if kinds[k][0]}, *parts[1:4],
                  runner.entry.address, status, last, tail, plans)
        for which in ("run", "run_converted"):  # each written on its first call
            setattr(q, which, _deferred(q, which, names, parts))
        return q

    @staticmethod
    def settings(kernel):
        return (config.cpu_backend, config.bounds_check, config.verify_fp,
                kernel.options.get("bounds_check", ShortPath))

    def front(self) -> None:
        """Put the native front (launch_short_native.py) before the Python ``run`` and
        ``run_converted`` written so far, where it can be made; until the native calls are
        made, wait in _waiting. (A converted launch's NumPy scalars are taken by the front
        as they are: the values ``.item()`` gives.)"""
        if _native["state"] in ("unmade", "making"):
            _waiting.add(self)
            return
        if _native["state"] != "made" or _native.get("front") is None:
            return
        (kinds, formats, offsets, written, snapshot, most, entry, status, last, tail,
         plans) = self.spec
        for which, python in (("run", self.python), ("run_converted", self.python_converted)):
            if python is None:  # not written yet: its first call comes back here
                continue
            try:
                desc = native_front.descriptor(kinds, formats, offsets, written, snapshot,
                                               entry, status, min(most, HOLD_GIL_BELOW))
                if desc is not None:
                    new, front = _native["new"], ctypes.byref(_native["front"])
                    setattr(self, which, native_front.bind(
                        lambda bound: new(front, bound, None), python, last, desc, config,
                        self, self.kernel.key, tail, plans))
            except Exception:  # noqa: BLE001 - (none expected) the Python function stays
                setattr(self, which, python)

    def still(self) -> bool:
        """After a setting was assigned: whether those the compiled code depends on are
        as they were (else this path is dropped and made again by the next launch)."""
        if ShortPath.settings(self.kernel) != self.state:
            self.kernel._quick = None
            return False
        self.changes = config.changes
        return True


def _deferred(q, which, names, parts):
    """A stand-in for ``q.run`` or ``q.run_converted`` that writes the function on its first
    call and puts it in its place: compiling the source costs about half a millisecond,
    which a process's first launch of a kernel (a warm start's) does not pay, and most
    kernels never need ``run_converted`` (kl.Launch objects) at all."""
    def first(total, args):
        text = source(*parts, which == "run_converted")
        scope = dict(names)  # (the shared objects, LAST and the rest, stay shared)
        exec(compile(text, f"<kernlab short launch of {q.kernel.key}>", "exec"), scope)
        fn = scope.pop("run")
        setattr(q, which, fn)
        # the native front calls it for what it does not take
        setattr(q, "python" if which == "run" else "python_converted", fn)
        q.front()
        return fn(total, args)
    return first


def source(kinds, written, snapshot, most, status, converted) -> str:
    """The Python source of a ShortPath's ``run(total, args)`` for parameters ``kinds``
    ((0, dtype, ndim) an array, (1, low, high) a float, (2, low, high) an int): True when
    it ran the launch (or raised the kernel's own error), False to take the general path.
    ``converted``: the arguments are a kl.Launch's, converted when set (NumPy scalars).

    An array's key (``array._described``, see describe) is made once per array object; a
    plan (see ShortPath.make's find) is ``[the entry's call, block, thread count, status offset, the
    arrays' keys..., the scalars last packed...]`` and made for keys that fit the
    parameters, so a launch whose keys are a plan's is checked by their identity. The
    latest plan used waits in LAST, the others in PLANS."""
    n = len(kinds)
    names = "".join(f"a{k}, " for k in range(n))
    descs = [k for k, (kind, _, _) in enumerate(kinds) if kind == 0]
    out = ["def run(total, args):",
           f"    if not 0 < total < {most}:",
           "        return False",
           "    try:",
           f"        {names}= args" if n else "        if args: return False"]
    out += [f"        d{k} = a{k}._described" for k in descs]
    out += ["    except Exception:  # not n arguments, not arrays, an attribute that fails oddly",
            "        return False"]
    for k in descs:
        out += [f"    if d{k} is None:",
                f"        d{k} = describe(a{k})",
                f"        if d{k} is None:",
                "            return False"]
    for k, (kind, _, _) in enumerate(kinds):
        if kind == 0:
            continue
        if converted:  # a NumPy scalar of the parameter's type, in range already
            out += [f"    if not isinstance(a{k}, generic):", "        return False",
                    f"    a{k} = a{k}.item()"]
        else:  # Python and NumPy numbers; a float parameter takes an int, as on the
            # general path (which converts them the same way: struct packs their value)
            accept = "INTS" if kind == 2 else "NUMBERS"
            out += [f"    if not (type(a{k}) in {accept} and L{k} <= a{k} <= H{k}):",
                    "        return False"]
    if not descs:  # the launch is on the default device
        out += ["    if DEFAULT[-1] is not CPU:", "        return False"]
    out += ["    if config.changes != Q.changes and not Q.still():", "        return False"]
    for k in written:  # the general path refuses it, with its message
        out += [f"    if not a{k}._data.flags.writeable:", "        return False"]
    same = " or ".join([f"plan[{4 + j}] is not d{k}" for j, k in enumerate(descs)]
                       + ["plan[2] != total"])
    out += ["    try:",
            "        plan = LAST.pop()  # taken out: no other launch uses it meanwhile",
            "    except IndexError:",
            "        plan = NOPLAN",
            f"    if {same}:",
            f"        plan = FIND(plan, ({''.join(f'd{k}, ' for k in descs)}), total, "
            f"({''.join(f'a{k}._vbox, ' for k in written)}), "
            f"({''.join(f'a{k}, ' for k in descs)}))",
            "        if plan is None:  # an array of another dtype, ndim or device",
            "            return False",
            "    buf = plan[1]"]
    scalars = [k for k, (kind, _, _) in enumerate(kinds) if kind != 0]
    for j, k in enumerate(scalars):  # a zero is packed every time: 0.0 == -0.0
        at = 4 + len(descs) + j
        out += [f"    if a{k} != plan[{at}] or not a{k}:",
                f"        S{k}(buf, O{k}, a{k})",
                f"        plan[{at}] = a{k}"]
    # the native call counts up the written arrays' versions and returns CLEAN when the
    # status is unset (else True); the ctypes call returns None and the versions are
    # counted here. Either way before the general path's error: as in launch._run
    out += ["    done = plan[0]()", "    if done is None:"]
    out += [f"        a{k}._vbox[0] += 1" for k in written]
    out += ["        pass"]
    out += [f"    a{k}._overwritten_by = (KEY, a{k}._vbox[0])" for k in snapshot]
    out += [f"    if done is not CLEAN and buf[{status}] != b'\\0':",
            "        # an index out of bounds, or the fast entry declined: the general one",
            "        RUNNER.settle(buf, [0, total], list(args))",
            "    else:  # untouched: the kernel writes only the status",
            "        LAST.append(plan)",
            "    return True"]
    return "\n".join(out) + "\n"


def describe(a):
    """The key of a CPU array with storage, made once per array object and kept on it as
    ``array._described``: (dtype, ndim, device, data address, shape..., byte strides...).
    None for anything else (the general path takes those). An array's dtype, ndim, device
    and storage never change after it is made."""
    if type(a) is not array or a.device is not _CPU or a._data is None:
        return None
    from ..backends.llvm.runner import _describe
    key = a._described = (a.dtype, a.ndim, a.device, *_describe(a._data, a.ndim))
    return key


_Quick = ShortPath  # the name launch.py and its tests used

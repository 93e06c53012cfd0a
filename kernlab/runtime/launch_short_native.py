"""The native front of a kernel's short launch path (issue 20, "cheap small launches").

launch_short.py writes, per kernel, a Python function ``run(total, args)`` that checks a small
launch's arguments by identity and calls the entry. Its checks cost about 0.35 µs of Python.
This module's function, ``kl_short_fast``, does the same checks in native code for the
common case and calls the entry itself; anything it is not sure of it hands, untouched, to
that Python function (its *fallback*), which takes it as before: every error message stays
the general path's.

It is one builtin (METH_FASTCALL) generated once per process with llvmlite, beside
launch_short.py's native calls, and bound per kernel to a tuple (see ``bind``) that holds
the kernel's Python ``run``, its plans (the latest in the list LAST, the others in the
dict PLANS) and a descriptor (bytes) of its parameters. A call ``fast(total, args)`` with
``args`` a list or tuple does:

1. ``total`` an ``int`` with 0 < total < HOLD_GIL_BELOW (and below the parallel threshold),
   ``config.changes`` the ShortPath's;
2. a plan is found (``kl_matches``: the one waiting in LAST first, then the others kept
   in the dict PLANS) with the same thread count and, per array parameter, the same array
   object (a weak reference the plan holds: see ``extras``; the same object has the same
   key, so this is the Python path's test by the keys' identity, without reading an
   attribute); a written array's NumPy data is writeable; a float parameter gets a
   ``float``, an ``int`` of at most 2**53 in magnitude or a NumPy integer or float, within
   its type's range; an integer parameter an ``int`` or a NumPy integer within its range
   (what the Python path takes, converted as ``struct`` converts them: ``float()`` and
   ``__index__``);
3. the plan is taken out (of LAST or PLANS), the scalars are stored into its argument
   block (and into the plan, as the Python path does), the entry is called with the GIL
   held and the plan put back where it was unless the kernel set its status; the written
   arrays' versions are counted up and the in-place marks set as launch_short.py's
   generated code does;
4. True; or, when the kernel set its status (an index out of bounds, or the fast entry
   declined), ``tail(plan, total, args)`` (ShortPath.make): the runner settles the launch
   as on the Python path.

A failure in steps 1–2 (any exception, any mismatch) clears the error and returns
``run(total, args)``. Nothing in it raises by itself; a type or layout this file assumes
(CPython's object header, NumPy's array flags, ctypes' buffer pointer) is checked once by
``layout()`` before it is used.
"""
from __future__ import annotations

import ctypes
import struct
import sys
import weakref

import numpy as np

from ..types import INTS, _value_class, float16, float32, float64

# The C API functions the code calls (resolved in this process by launch_short.py).
SYMBOLS = ("PyTuple_GetItem", "PyTuple_Size", "PyList_GetItem", "PyList_Size", "PyList_SetItem",
           "PyList_SetSlice", "PyList_Append",
           "PyBytes_AsString", "PyObject_GetAttr", "PyObject_SetAttr", "PyObject_Vectorcall",
           "PyObject_CallFunctionObjArgs", "PyLong_AsLongLong", "PyLong_FromLongLong",
           "PyFloat_AsDouble", "PyTuple_Pack", "Py_IncRef", "Py_DecRef", "PyErr_Clear",
           "PyErr_Occurred", "PyWeakref_GetObject", "PyDict_Next", "PyDict_DelItem",
           "PyDict_SetItem")

TYPE_AT = 8  # the offset of ob_type in a PyObject (a release build of CPython)
WRITEABLE = 0x0400  # NPY_ARRAY_WRITEABLE
TYPES = 32  # room for NumPy's scalar types and kernlab's (see descriptor)
HEADER = 10 + 2 * TYPES  # i64 fields before the parameters' (see descriptor)
FIELDS = 5  # per parameter: kind, block offset, low, high, plan slot
# kinds: arrays 1 | 2 (written) | 4 (marked for the in-place check); scalars by how they
# are stored, each with bit 16 (which tells them from arrays)
_SCALARS = {"f": 16, "d": 17, "b": 49, "B": 49, "h": 50, "H": 50, "i": 52, "I": 52, "q": 56,
            "Q": 56}
_BIG = 2 ** 63 - 1
# NumPy's scalars and Warp-style values (``kl.float32(x)``, subclasses of NumPy's) that both
# short paths take (launch_short.py's _INTS and _FLOATS are made of these): an integer for
# an integer or float parameter (flags 1 | 2), a float for a float parameter (flags 2)
_NUMPY_INTS = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
               np.uint64, *map(_value_class, INTS))
_NUMPY_FLOATS = (np.float16, np.float32, np.float64,
                 *map(_value_class, (float16, float32, float64)))


def layout() -> tuple[int, int] | None:
    """(the offset of an ndarray's flags, of a ctypes buffer's data pointer) in this
    process, found and checked against what Python says; None where they are not where
    the code expects them (another Python or NumPy build: the fast front is not made)."""
    try:
        if ctypes.c_void_p.from_address(id(1.5) + TYPE_AT).value != id(float):
            return None
        a, b = np.zeros(1), np.zeros(1)
        b.flags.writeable = False
        flags = None
        for at in range(16, 128, 4):  # the int holding the flags: differs exactly there
            x = ctypes.c_int32.from_address(id(a) + at).value
            y = ctypes.c_int32.from_address(id(b) + at).value
            if x & WRITEABLE and not y & WRITEABLE and x & ~WRITEABLE == y & ~WRITEABLE:
                flags = at
                break
        buf = ctypes.create_string_buffer(8)
        data = 16  # ctypes' CDataObject: the header, then b_ptr
        if flags is None or ctypes.c_void_p.from_address(id(buf) + data).value \
                != ctypes.addressof(buf):
            return None
        return flags, data
    except Exception:  # noqa: BLE001 - anything unexpected: no fast front
        return None


def descriptor(kinds, formats, offsets, written, snapshot, entry, status, most) -> bytes | None:
    """The bytes the code reads of a kernel: a header (parameter count, entry address,
    status offset, the thread limit, the addresses of int, float, list, tuple and ndarray,
    then a table of NumPy's scalar types: their count, then TYPES pairs of address and
    flags) and per parameter (kind, block offset, low, high, plan slot); None for
    parameters it does not take (a half-precision scalar)."""
    numpy = [(t, 3) for t in _NUMPY_INTS] + [(t, 2) for t in _NUMPY_FLOATS]
    fields = [len(kinds), entry, status, most, id(int), id(float), id(list), id(tuple),
              id(np.ndarray), len(numpy)]
    for t, flags in numpy + [(None, 0)] * (TYPES - len(numpy)):
        fields += [id(t) if t is not None else 0, flags]
    arrays = sum(1 for kind, _, _ in kinds if kind == 0)
    j = s = 0
    for k, (kind, low, high) in enumerate(kinds):
        if kind == 0:
            code = 1 | (2 if k in written else 0) | (4 if k in snapshot else 0)
            fields += [code, 0, 4 + len(kinds) + 3 * j, 0, 4 + j]  # low: its plan extras
            j += 1
            continue
        code = _SCALARS.get(formats[k])
        if code is None:
            return None
        if kind == 1:  # the range as the double's bits
            low, high = (struct.unpack("=q", struct.pack("=d", v))[0] for v in (low, high))
        else:  # (an integer beyond int64 takes the Python path)
            low, high = max(low, -_BIG - 1), min(high, _BIG)
        fields += [code, offsets[k], low, high, 4 + arrays + s]
        s += 1
    if not arrays:  # such a launch's device is the default one: the Python path asks
        return None
    return struct.pack(f"={len(fields)}q", *fields)  # (the machine's byte order)


def extras(a) -> list:
    """What a plan holds of array ``a`` for the native front (after the keys and scalars):
    weak references to it and to its NumPy data (a plan must not keep an array alive), and
    its version list. The front compares the argument with the first (the same object has
    the same key) and reads the writeable flag through the second."""
    try:
        return [weakref.ref(a), weakref.ref(a._data), a._vbox]
    except TypeError:  # (not to be referred to weakly: the front declines this plan)
        return [None, None, None]


def bind(make, run, last, desc, config, short, key, tail, plans):
    """The fast front of one kernel: the builtin bound to what it reads (the order is the
    code's). ``make`` is PyCFunction_NewEx over the process's method definition."""
    names = [sys.intern(s) for s in ("changes", "_overwritten_by")]
    return make((run, last, desc, config, short, key, tail, True, *names, plans))


def source(flags: int, data: int) -> str:
    """The LLVM IR of kl_short_fast for an ndarray's flags at ``flags`` and a ctypes
    buffer's data pointer at ``data`` (see layout)."""
    def loop(name, count, body, after):
        """A counted loop over %k.a from 0 to ``count``: ``body`` (blocks, entered at
        {name}.body with %{name}.k, ending by a branch to {name}.next), then ``after``."""
        return (f"  store i64 0, ptr %k.a\n  br label %{name}.head\n"
                f"{name}.head:\n  %{name}.k = load i64, ptr %k.a\n"
                f"  %{name}.more = icmp slt i64 %{name}.k, {count}\n"
                f"  br i1 %{name}.more, label %{name}.body, label %{after}\n"
                f"{body}"
                f"{name}.next:\n  %{name}.k1 = add i64 %{name}.k, 1\n"
                f"  store i64 %{name}.k1, ptr %k.a\n  br label %{name}.head\n")

    def field(name, k, at):
        """%{name}: field ``at`` of parameter %k's descriptor entry."""
        return (f"  %{name}.i0 = mul i64 {k}, {FIELDS}\n"
                f"  %{name}.i1 = add i64 %{name}.i0, {HEADER + at}\n"
                f"  %{name}.p = getelementptr i64, ptr %d, i64 %{name}.i1\n"
                f"  %{name} = load i64, ptr %{name}.p\n")

    def slot(name, k):
        """%{name}: the argument for parameter %k (a reference the code holds)."""
        return (f"  %{name}.p = getelementptr ptr, ptr %slots, i64 {k}\n"
                f"  %{name} = load ptr, ptr %{name}.p\n")

    def planned(name, at, plus):
        """%{name}: the plan's item ``at`` + ``plus`` (one of an array's three: its weak
        reference, its data's, its version list)."""
        return (f"  %{name}.i = add i64 {at}, {plus}\n"
                f"  %{name} = call ptr @PyList_GetItem(ptr %plan, i64 %{name}.i)\n")

    def type_of(name, obj):
        return (f"  %{name}.p = getelementptr i8, ptr {obj}, i64 {TYPE_AT}\n"
                f"  %{name}.t = load ptr, ptr %{name}.p\n"
                f"  %{name} = ptrtoint ptr %{name}.t to i64\n")

    def bit(name, kind, mask):
        """%{name}: whether the kind is an array's with the bit(s) ``mask`` (1: an array, 2:
        written, 4: marked); a scalar's kind has bit 16, which no array's has."""
        return (f"  %{name}.b = and i64 {kind}, {mask | 16}\n"
                f"  %{name} = icmp eq i64 %{name}.b, {mask}\n")

    stage_one = (  # take each argument (a reference: the marks may run a finalizer)
        "one.body:\n  br i1 %islist, label %one.litem, label %one.titem\n"
        "one.litem:\n  %one.li = call ptr @PyList_GetItem(ptr %seq, i64 %one.k)\n"
        "  br label %one.got\n"
        "one.titem:\n  %one.ti = call ptr @PyTuple_GetItem(ptr %seq, i64 %one.k)\n"
        "  br label %one.got\n"
        "one.got:\n  %one.item = phi ptr [%one.li, %one.litem], [%one.ti, %one.titem]\n"
        "  %one.none = icmp eq ptr %one.item, null\n"
        "  br i1 %one.none, label %bail, label %one.keep\n"
        "one.keep:\n  call void @Py_IncRef(ptr %one.item)\n"
        "  %one.sp = getelementptr ptr, ptr %slots, i64 %one.k\n"
        "  store ptr %one.item, ptr %one.sp\n  br label %one.next\n")

    stage_two = (  # compare with the plan; check and convert the scalars
        "two.body:\n" + field("two.kind", "%two.k", 0) + field("two.lo", "%two.k", 2)
        + field("two.hi", "%two.k", 3) + field("two.slot", "%two.k", 4)
        + slot("two.item", "%two.k") + type_of("two.type", "%two.item")
        + "  %two.val = getelementptr i64, ptr %vals, i64 %two.k\n"
        + bit("two.arr", "%two.kind", 1)
        + "  br i1 %two.arr, label %two.key, label %two.scalar\n"
        "two.key:\n  br label %two.w\n"  # (the array matched with the plan: kl_matches)
        "two.w:\n" + bit("two.isw", "%two.kind", 2)
        + "  br i1 %two.isw, label %two.flags, label %two.next\n"
        "two.flags:\n" + planned("two.dref", "%two.lo", 1)
        + "  %two.da = call ptr @PyWeakref_GetObject(ptr %two.dref)\n"
        "  %two.dnull = icmp eq ptr %two.da, null\n"
        "  br i1 %two.dnull, label %bail, label %two.dtype\n"
        "two.dtype:\n" + type_of("two.dt", "%two.da")
        + "  %two.nd = icmp eq i64 %two.dt, %ndarray\n"
        "  br i1 %two.nd, label %two.writeable, label %bail\n"
        f"two.writeable:\n  %two.fp = getelementptr i8, ptr %two.da, i64 {flags}\n"
        "  %two.fl = load i32, ptr %two.fp\n"
        f"  %two.wb = and i32 %two.fl, {WRITEABLE}\n  %two.wok = icmp ne i32 %two.wb, 0\n"
        "  br i1 %two.wok, label %two.next, label %bail\n"
        "two.scalar:\n  %two.isf = icmp ult i64 %two.kind, 32\n"
        "  br i1 %two.isf, label %two.float, label %two.int\n"
        "two.float:\n  %two.isfl = icmp eq i64 %two.type, %floatT\n"
        "  br i1 %two.isfl, label %two.fromfloat, label %two.fint\n"
        "two.fromfloat:\n  %two.fv = call double @PyFloat_AsDouble(ptr %two.item)\n"
        "  br label %two.frange\n"
        "two.fint:\n  %two.fisint = icmp eq i64 %two.type, %longT\n"
        "  br i1 %two.fisint, label %two.fint1, label %two.fnumpy\n"
        "two.fnumpy:\n  %two.ff = call i64 @kl_type_flags(ptr %d, i64 %two.type)\n"
        "  %two.ffb = and i64 %two.ff, 2\n  %two.isnf = icmp ne i64 %two.ffb, 0\n"
        "  br i1 %two.isnf, label %two.fromnumpy, label %bail\n"
        "two.fromnumpy:\n  %two.nv = call double @PyFloat_AsDouble(ptr %two.item)\n"
        "  %two.e3 = call ptr @PyErr_Occurred()\n  %two.noe3 = icmp eq ptr %two.e3, null\n"
        "  br i1 %two.noe3, label %two.frange, label %bail\n"
        "two.fint1:\n  %two.iv = call i64 @PyLong_AsLongLong(ptr %two.item)\n"
        "  %two.e1 = call ptr @PyErr_Occurred()\n  %two.noe1 = icmp eq ptr %two.e1, null\n"
        "  %two.ivlo = icmp sge i64 %two.iv, -9007199254740992\n"
        "  %two.ivhi = icmp sle i64 %two.iv, 9007199254740992\n"
        "  %two.ivin = and i1 %two.ivlo, %two.ivhi\n  %two.ivok = and i1 %two.ivin, %two.noe1\n"
        "  br i1 %two.ivok, label %two.fint2, label %bail\n"
        "two.fint2:\n  %two.ivd = sitofp i64 %two.iv to double\n  br label %two.frange\n"
        "two.frange:\n  %two.v = phi double [%two.fv, %two.fromfloat], [%two.ivd, %two.fint2],"
        " [%two.nv, %two.fromnumpy]\n"
        "  %two.lod = bitcast i64 %two.lo to double\n"
        "  %two.hid = bitcast i64 %two.hi to double\n"
        "  %two.ge = fcmp oge double %two.v, %two.lod\n"
        "  %two.le = fcmp ole double %two.v, %two.hid\n  %two.in = and i1 %two.ge, %two.le\n"
        "  br i1 %two.in, label %two.fstore, label %bail\n"
        "two.fstore:\n  %two.vbits = bitcast double %two.v to i64\n"
        "  store i64 %two.vbits, ptr %two.val\n  br label %two.next\n"
        "two.int:\n  %two.isint = icmp eq i64 %two.type, %longT\n"
        "  br i1 %two.isint, label %two.int1, label %two.inumpy\n"
        "two.inumpy:\n  %two.if = call i64 @kl_type_flags(ptr %d, i64 %two.type)\n"
        "  %two.ifb = and i64 %two.if, 1\n  %two.isni = icmp ne i64 %two.ifb, 0\n"
        "  br i1 %two.isni, label %two.int1, label %bail\n"
        "two.int1:\n  %two.jv = call i64 @PyLong_AsLongLong(ptr %two.item)\n"
        "  %two.e2 = call ptr @PyErr_Occurred()\n  %two.noe2 = icmp eq ptr %two.e2, null\n"
        "  %two.jge = icmp sge i64 %two.jv, %two.lo\n"
        "  %two.jle = icmp sle i64 %two.jv, %two.hi\n"
        "  %two.jin = and i1 %two.jge, %two.jle\n  %two.jok = and i1 %two.jin, %two.noe2\n"
        "  br i1 %two.jok, label %two.istore, label %bail\n"
        "two.istore:\n  store i64 %two.jv, ptr %two.val\n  br label %two.next\n")

    def store(width, name, ty):
        return (f"three.{name}:\n  %three.{name}.v = trunc i64 %three.val to {ty}\n"
                f"  store {ty} %three.{name}.v, ptr %three.at, align 1\n"
                "  br label %three.plan\n") if width < 8 else ""
    stage_three = (  # store the scalars into the block and the plan
        "three.body:\n" + field("three.kind", "%three.k", 0) + bit("three.arr", "%three.kind", 1)
        + "  br i1 %three.arr, label %three.next, label %three.scalar\n"
        "three.scalar:\n" + field("three.off", "%three.k", 1) + field("three.slot", "%three.k", 4)
        + "  %three.at = getelementptr i8, ptr %buf, i64 %three.off\n"
        "  %three.vp = getelementptr i64, ptr %vals, i64 %three.k\n"
        "  %three.val = load i64, ptr %three.vp\n"
        "  switch i64 %three.kind, label %three.plan [i64 16, label %three.f32\n"
        "    i64 17, label %three.q i64 49, label %three.b i64 50, label %three.h\n"
        "    i64 52, label %three.i i64 56, label %three.q]\n"
        "three.f32:\n  %three.d = bitcast i64 %three.val to double\n"
        "  %three.f = fptrunc double %three.d to float\n"
        "  store float %three.f, ptr %three.at, align 1\n  br label %three.plan\n"
        "three.q:\n  store i64 %three.val, ptr %three.at, align 1\n  br label %three.plan\n"
        + store(1, "b", "i8") + store(2, "h", "i16") + store(4, "i", "i32")
        + "three.plan:\n" + slot("three.item", "%three.k")
        + "  call void @Py_IncRef(ptr %three.item)\n"
        "  %three.set = call i32 @PyList_SetItem(ptr %plan, i64 %three.slot, ptr %three.item)\n"
        "  br label %three.next\n")

    stage_four = (  # count up the versions of the written arrays
        "four.body:\n" + field("four.kind", "%four.k", 0) + bit("four.w", "%four.kind", 2)
        + "  br i1 %four.w, label %four.bump, label %four.next\n"
        "four.bump:\n" + field("four.lo", "%four.k", 2) + planned("four.vb", "%four.lo", 2)
        + "  %four.old = call ptr @PyList_GetItem(ptr %four.vb, i64 0)\n"
        "  %four.none = icmp eq ptr %four.old, null\n"
        "  br i1 %four.none, label %four.clear, label %four.count\n"
        "four.count:\n  %four.v = call i64 @PyLong_AsLongLong(ptr %four.old)\n"
        "  %four.inc = add i64 %four.v, 1\n"
        "  %four.new = call ptr @PyLong_FromLongLong(i64 %four.inc)\n"
        "  %four.nonew = icmp eq ptr %four.new, null\n"
        "  br i1 %four.nonew, label %four.clear, label %four.set\n"
        "four.set:\n  %four.r = call i32 @PyList_SetItem(ptr %four.vb, i64 0, ptr %four.new)\n"
        "  br label %four.next\n"
        "four.clear:\n  call void @PyErr_Clear()\n  br label %four.next\n")

    stage_five = (  # the in-place marks: a._overwritten_by = (kernel key, a._vbox[0])
        "five.body:\n" + field("five.kind", "%five.k", 0) + bit("five.s", "%five.kind", 4)
        + "  br i1 %five.s, label %five.mark, label %five.next\n"
        "five.mark:\n" + field("five.lo", "%five.k", 2) + planned("five.vb", "%five.lo", 2)
        + slot("five.item", "%five.k")
        + "  %five.v = call ptr @PyList_GetItem(ptr %five.vb, i64 0)\n"
        "  %five.none = icmp eq ptr %five.v, null\n"
        "  br i1 %five.none, label %five.clear, label %five.pack\n"
        "five.pack:\n  %five.key = call ptr @PyTuple_GetItem(ptr %self, i64 5)\n"
        "  %five.t = call ptr (i64, ...) @PyTuple_Pack(i64 2, ptr %five.key, ptr %five.v)\n"
        "  %five.not = icmp eq ptr %five.t, null\n"
        "  br i1 %five.not, label %five.clear, label %five.set\n"
        "five.set:\n  %five.n = call ptr @PyTuple_GetItem(ptr %self, i64 9)\n"
        "  %five.r = call i32 @PyObject_SetAttr(ptr %five.item, ptr %five.n, ptr %five.t)\n"
        "  call void @Py_DecRef(ptr %five.t)\n  %five.bad = icmp slt i32 %five.r, 0\n"
        "  br i1 %five.bad, label %five.clear, label %five.next\n"
        "five.clear:\n  call void @PyErr_Clear()\n  br label %five.next\n")

    release = (  # let go of the references taken; then %ok.a says where to
        "clean.body:\n  %clean.p = getelementptr ptr, ptr %slots, i64 %clean.k\n"
        "  %clean.o = load ptr, ptr %clean.p\n  call void @Py_DecRef(ptr %clean.o)\n"
        "  br label %clean.next\n")

    return TYPE_FLAGS + MATCHES.replace("HEADER", str(HEADER)) + (
        "define ptr @kl_short_fast(ptr %self, ptr %argv, i64 %nargs) {\n"
        "entry:\n  %k.a = alloca i64\n  %flag.a = alloca i8\n  %ok.a = alloca i1\n"
        "  %plan.a = alloca ptr\n  %key.a = alloca ptr\n  %pos.a = alloca i64\n"
        "  %dkey.a = alloca ptr\n  %dval.a = alloca ptr\n  store ptr null, ptr %key.a\n"
        "  store ptr null, ptr %plan.a\n"
        "  %fallback = call ptr @PyTuple_GetItem(ptr %self, i64 0)\n"
        "  %two = icmp eq i64 %nargs, 2\n  br i1 %two, label %args, label %late\n"
        "args:\n  %dob = call ptr @PyTuple_GetItem(ptr %self, i64 2)\n"
        "  %d = call ptr @PyBytes_AsString(ptr %dob)\n  %n = load i64, ptr %d\n"
        "  %totalo = load ptr, ptr %argv\n  %seqp = getelementptr ptr, ptr %argv, i64 1\n"
        "  %seq = load ptr, ptr %seqp\n"
        + "".join(f"  %{name}.p = getelementptr i64, ptr %d, i64 {at}\n"
                  f"  %{name} = load i64, ptr %{name}.p\n"
                  for at, name in ((1, "entryi"), (2, "status"), (3, "most"), (4, "longT"),
                                   (5, "floatT"), (6, "listT"), (7, "tupleT"), (8, "ndarray")))
        + type_of("totaltype", "%totalo")
        + "  %tint = icmp eq i64 %totaltype, %longT\n  br i1 %tint, label %total, label %late\n"
        "total:\n  %t = call i64 @PyLong_AsLongLong(ptr %totalo)\n"
        "  %tpos = icmp sgt i64 %t, 0\n  %tlow = icmp slt i64 %t, %most\n"
        "  %tok = and i1 %tpos, %tlow\n  br i1 %tok, label %seqtype, label %late_clear\n"
        "seqtype:\n" + type_of("seqt", "%seq")
        + "  %islist = icmp eq i64 %seqt, %listT\n  %istuple = icmp eq i64 %seqt, %tupleT\n"
        "  %seqok = or i1 %islist, %istuple\n  br i1 %seqok, label %sizing, label %late\n"
        "sizing:\n  br i1 %islist, label %lsize, label %tsize\n"
        "lsize:\n  %ls = call i64 @PyList_Size(ptr %seq)\n  br label %sized\n"
        "tsize:\n  %ts = call i64 @PyTuple_Size(ptr %seq)\n  br label %sized\n"
        "sized:\n  %size = phi i64 [%ls, %lsize], [%ts, %tsize]\n"
        "  %sizeok = icmp eq i64 %size, %n\n  br i1 %sizeok, label %prep, label %late\n"
        "prep:\n  %slots = alloca ptr, i64 %n\n"
        "  %vals = alloca i64, i64 %n\n"
        "  store i1 false, ptr %ok.a\n  store i64 0, ptr %k.a\n  br label %zero.head\n"
        "zero.head:\n  %zero.k = load i64, ptr %k.a\n  %zero.more = icmp slt i64 %zero.k, %n\n"
        "  br i1 %zero.more, label %zero.body, label %one.start\n"
        "zero.body:\n  %zero.p = getelementptr ptr, ptr %slots, i64 %zero.k\n"
        "  store ptr null, ptr %zero.p\n  %zero.k1 = add i64 %zero.k, 1\n"
        "  store i64 %zero.k1, ptr %k.a\n  br label %zero.head\n"
        "one.start:\n" + loop("one", "%n", stage_one, "changes")
        + "changes:\n  %cfg = call ptr @PyTuple_GetItem(ptr %self, i64 3)\n"
        "  %short = call ptr @PyTuple_GetItem(ptr %self, i64 4)\n"
        "  %nch = call ptr @PyTuple_GetItem(ptr %self, i64 8)\n"
        "  %c1 = call ptr @PyObject_GetAttr(ptr %cfg, ptr %nch)\n"
        "  %c2 = call ptr @PyObject_GetAttr(ptr %short, ptr %nch)\n"
        "  call void @Py_DecRef(ptr %c1)\n  call void @Py_DecRef(ptr %c2)\n"
        "  %csame = icmp eq ptr %c1, %c2\n  %cthere = icmp ne ptr %c1, null\n"
        "  %cok = and i1 %csame, %cthere\n  br i1 %cok, label %last, label %bail\n"
        "last:\n  %lastl = call ptr @PyTuple_GetItem(ptr %self, i64 1)\n"
        "  %ln = call i64 @PyList_Size(ptr %lastl)\n  %haslast = icmp sgt i64 %ln, 0\n"
        "  br i1 %haslast, label %trylast, label %scan\n"
        "trylast:\n  %ln1 = sub i64 %ln, 1\n"
        "  %cand = call ptr @PyList_GetItem(ptr %lastl, i64 %ln1)\n"
        "  %mlast = call i1 @kl_matches(ptr %cand, ptr %d, ptr %slots, i64 %t)\n"
        "  br i1 %mlast, label %fromlast, label %scan\n"
        "fromlast:\n  call void @Py_IncRef(ptr %cand)\n  store ptr %cand, ptr %plan.a\n"
        "  store i64 %ln1, ptr %pos.a\n  br label %chosen\n"
        "scan:\n  %plans = call ptr @PyTuple_GetItem(ptr %self, i64 10)\n"
        "  store i64 0, ptr %pos.a\n  br label %scan.head\n"
        "scan.head:\n"
        "  %got = call i32 @PyDict_Next(ptr %plans, ptr %pos.a, ptr %dkey.a, ptr %dval.a)\n"
        "  %any = icmp ne i32 %got, 0\n  br i1 %any, label %scan.body, label %bail\n"
        "scan.body:\n  %dval = load ptr, ptr %dval.a\n"
        "  %mdict = call i1 @kl_matches(ptr %dval, ptr %d, ptr %slots, i64 %t)\n"
        "  br i1 %mdict, label %fromdict, label %scan.head\n"
        "fromdict:\n  %dkey = load ptr, ptr %dkey.a\n  call void @Py_IncRef(ptr %dkey)\n"
        "  store ptr %dkey, ptr %key.a\n  call void @Py_IncRef(ptr %dval)\n"
        "  store ptr %dval, ptr %plan.a\n  br label %chosen\n"
        "chosen:\n  %plan = load ptr, ptr %plan.a\n"
        + loop("two", "%n", stage_two, "block")
        + "block:\n  %keyt = load ptr, ptr %key.a\n  %fromd = icmp ne ptr %keyt, null\n"
        "  br i1 %fromd, label %takedict, label %takelist\n"  # the plan taken out
        "takelist:\n  %at = load i64, ptr %pos.a\n  %at1 = add i64 %at, 1\n"
        "  %taken = call i32 @PyList_SetSlice(ptr %lastl, i64 %at, i64 %at1, ptr null)\n"
        "  br label %holding\n"
        "takedict:\n  %plans1 = call ptr @PyTuple_GetItem(ptr %self, i64 10)\n"
        "  %deleted = call i32 @PyDict_DelItem(ptr %plans1, ptr %keyt)\n  br label %holding\n"
        "holding:\n"
        "  %bufo = call ptr @PyList_GetItem(ptr %plan, i64 1)\n"
        f"  %bufp = getelementptr i8, ptr %bufo, i64 {data}\n  %buf = load ptr, ptr %bufp\n"
        + loop("three", "%n", stage_three, "call")
        + "call:\n  %entryf = inttoptr i64 %entryi to ptr\n"
        "  call void %entryf(ptr %buf, i64 0, i64 %t)\n"
        "  %flag = getelementptr i8, ptr %buf, i64 %status\n  %flagv = load i8, ptr %flag\n"
        "  store i8 %flagv, ptr %flag.a\n  %unset = icmp eq i8 %flagv, 0\n"
        "  br i1 %unset, label %putback, label %counts\n"
        "putback:\n  %keyv = load ptr, ptr %key.a\n  %indict = icmp ne ptr %keyv, null\n"
        "  br i1 %indict, label %putdict, label %putlist\n"
        "putlist:\n  %put = call i32 @PyList_Append(ptr %lastl, ptr %plan)\n"
        "  br label %counts\n"
        "putdict:\n  %plans2 = call ptr @PyTuple_GetItem(ptr %self, i64 10)\n"
        "  %put2 = call i32 @PyDict_SetItem(ptr %plans2, ptr %keyv, ptr %plan)\n"
        "  br label %counts\n"
        "counts:\n" + loop("four", "%n", stage_four, "marks")
        + "marks:\n" + loop("five", "%n", stage_five, "done")
        + "done:\n  store i1 true, ptr %ok.a\n  br label %clean.start\n"
        "bail:\n  br label %clean.start\n"
        "clean.start:\n" + loop("clean", "%n", release, "cleaned")
        + "cleaned:\n  %okv = load i1, ptr %ok.a\n  %key3 = load ptr, ptr %key.a\n"
        "  call void @Py_DecRef(ptr %key3)\n"
        "  br i1 %okv, label %finish, label %bailed\n"
        "finish:\n  %plan2 = load ptr, ptr %plan.a\n  %flagw = load i8, ptr %flag.a\n"
        "  %clear = icmp eq i8 %flagw, 0\n"
        "  br i1 %clear, label %clean_true, label %settle\n"
        "clean_true:\n  call void @Py_DecRef(ptr %plan2)\n"
        "  %truev = call ptr @PyTuple_GetItem(ptr %self, i64 7)\n"
        "  call void @Py_IncRef(ptr %truev)\n  ret ptr %truev\n"
        "settle:\n  %tail = call ptr @PyTuple_GetItem(ptr %self, i64 6)\n"
        "  %r = call ptr (ptr, ...) @PyObject_CallFunctionObjArgs(ptr %tail, ptr %plan2,"
        " ptr %totalo, ptr %seq, ptr null)\n"
        "  call void @Py_DecRef(ptr %plan2)\n  ret ptr %r\n"
        "bailed:\n  %plan3 = load ptr, ptr %plan.a\n  call void @Py_DecRef(ptr %plan3)\n"
        "  call void @PyErr_Clear()\n  br label %late\n"
        "late_clear:\n  call void @PyErr_Clear()\n  br label %late\n"
        "late:\n"
        "  %back = call ptr @PyObject_Vectorcall(ptr %fallback, ptr %argv, i64 %nargs, ptr null)\n"
        "  ret ptr %back\n}\n")


TYPE_FLAGS = """define internal i64 @kl_type_flags(ptr %d, i64 %type) {
entry:
  %mp = getelementptr i64, ptr %d, i64 9
  %m = load i64, ptr %mp
  br label %head
head:
  %i = phi i64 [0, %entry], [%i1, %next]
  %more = icmp slt i64 %i, %m
  br i1 %more, label %body, label %none
body:
  %at0 = mul i64 %i, 2
  %at = add i64 %at0, 10
  %ap = getelementptr i64, ptr %d, i64 %at
  %a = load i64, ptr %ap
  %eq = icmp eq i64 %a, %type
  br i1 %eq, label %found, label %next
next:
  %i1 = add i64 %i, 1
  br label %head
found:
  %fp = getelementptr i64, ptr %ap, i64 1
  %f = load i64, ptr %fp
  ret i64 %f
none:
  ret i64 0
}
"""  # the flags of a NumPy scalar type in the descriptor's table (0: not there)

MATCHES = """define internal i1 @kl_matches(ptr %plan, ptr %d, ptr %slots, i64 %t) {
entry:
  %n = load i64, ptr %d
  %ptot = call ptr @PyList_GetItem(ptr %plan, i64 2)
  %pt = call i64 @PyLong_AsLongLong(ptr %ptot)
  %same = icmp eq i64 %pt, %t
  br i1 %same, label %head, label %no
head:
  %k = phi i64 [0, %entry], [%k1, %next]
  %more = icmp slt i64 %k, %n
  br i1 %more, label %body, label %yes
body:
  %f0 = mul i64 %k, 5
  %f1 = add i64 %f0, HEADER
  %kp = getelementptr i64, ptr %d, i64 %f1
  %kind = load i64, ptr %kp
  %ab = and i64 %kind, 17
  %arr = icmp eq i64 %ab, 1
  br i1 %arr, label %array, label %next
array:
  %lop = getelementptr i64, ptr %kp, i64 2
  %lo = load i64, ptr %lop
  %ref = call ptr @PyList_GetItem(ptr %plan, i64 %lo)
  %obj = call ptr @PyWeakref_GetObject(ptr %ref)
  %sp = getelementptr ptr, ptr %slots, i64 %k
  %item = load ptr, ptr %sp
  %eq = icmp eq ptr %obj, %item
  br i1 %eq, label %next, label %no
next:
  %k1 = add i64 %k, 1
  br label %head
yes:
  ret i1 true
no:
  call void @PyErr_Clear()
  ret i1 false
}
"""  # whether a plan is for thread count %t and the array objects in %slots

DECLARATIONS = (
    "declare i64 @PyList_Size(ptr)\n"
    "declare i32 @PyList_SetSlice(ptr, i64, i64, ptr)\ndeclare i32 @PyList_Append(ptr, ptr)\n"
    "declare ptr @PyBytes_AsString(ptr)\ndeclare ptr @PyObject_GetAttr(ptr, ptr)\n"
    "declare i32 @PyObject_SetAttr(ptr, ptr, ptr)\n"
    "declare ptr @PyObject_Vectorcall(ptr, ptr, i64, ptr)\n"
    "declare ptr @PyObject_CallFunctionObjArgs(ptr, ...)\n"
    "declare double @PyFloat_AsDouble(ptr)\ndeclare ptr @PyTuple_Pack(i64, ...)\n"
    "declare void @Py_DecRef(ptr)\ndeclare ptr @PyErr_Occurred()\n"
    "declare ptr @PyWeakref_GetObject(ptr)\n"
    "declare i32 @PyDict_Next(ptr, ptr, ptr, ptr)\ndeclare i32 @PyDict_DelItem(ptr, ptr)\n"
    "declare i32 @PyDict_SetItem(ptr, ptr, ptr)\n")

"""Tile builtins (Warp's tile programming model), one record each: type rule, NumPy
reference, LLVM lowering (backends/llvm/tiles.py) and derivative. This module holds the
helpers shared by all tile builtins and those that make, read and write tiles (load,
store, atomic add, views, construction, element access); tile_ops.py holds those that
compute on tiles (reductions, FFT, scans, broadcasting, reshaping, matrix products).

A tile (``types.Tile``) is a fixed-shape block of scalars or vectors. kernlab runs each
block of a tiled launch as one thread, as Warp does on the CPU (block_dim 1): the thread
owns its whole tile, so a "cooperative" tile operation is an ordinary operation of that
thread. The frontend (frontend/tiles.py) reads the compile-time arguments (shapes, dtypes)
into the result type, which the records below receive as ``target``; offsets and indices
are run-time ints.

Element-wise arithmetic on tiles (``+``, ``-``, unary ``-``, ``*`` and ``/`` by a scalar)
is the ``add``/``sub``/``neg``/``mul``/``div`` builtins' tile signatures (core.py): a tile
is one register of all its scalars, so they lower as vectors do.

Derivatives follow Warp 1.19: a load's adjoint is added atomically into the array's
gradient; a store's adjoint reads the gradient where it wrote and zeroes it there; an
atomic add's adjoint reads it; the FFT's adjoint is the unnormalised inverse FFT of the
incoming gradient (and the other way round); a transpose's is the transpose.
"""
from __future__ import annotations

import numpy as np
from .llvm_ir import ir

from .registry import VOID, builtin, sig

MAX_DIMS = 4


# ---- CUDA spellings: the kernlab_cuda.h tile templates, given the operand types ----------------

def _c(t) -> str:
    from ..backends.cuda.render import ctype  # the C++ name of a type (CUDA backend)
    return ctype(t)


def _parts(t) -> int:
    return t.dtype.length if t.dtype.is_vector or t.dtype.is_matrix else 1


def _dims(t) -> str:
    shape = tuple(t.tile_shape) + (1,) * (4 - len(t.tile_shape))
    return ", ".join(map(str, shape))


def _cuda_tile(t) -> str:
    """The template arguments that describe tile t: K, D0..D3, L, S."""
    return f"{_parts(t)}, {_dims(t)}, {t.length}, {_c(t.scalar)}"


def _cuda_load(types, ret, args):
    return f"kl_tile_load<{_cuda_tile(ret)}>({args[0]}, {types[0].ndim}, {', '.join(args[1:])})"


def _cuda_write(add):
    def spell(types, ret, args):
        return (f"kl_tile_write<{'true' if add else 'false'}, {_cuda_tile(types[1])}>("
                f"{args[0]}, {args[1]}, {types[0].ndim}, {', '.join(args[2:])})")
    return spell


def _offsets(n):
    return ("i",) * n


def _target(b):
    return b["target"]


def _np_storage(t):
    return np.zeros(t.shape, t.scalar.np)


def _region(arr, offs, t):
    """(tile slices, array slices) of the part of a tile placed at offs that lies inside
    the array (Warp's bounds check: what lies outside reads as zero, and is not written)."""
    tile_sl, arr_sl = [], []
    for o, n, extent in zip((int(o) for o in offs), t.tile_shape, arr.shape):
        lo, hi = max(o, 0), min(o + n, extent)
        if hi <= lo:
            return None
        tile_sl.append(slice(lo - o, hi - o))
        arr_sl.append(slice(lo, hi))
    return tuple(tile_sl), tuple(arr_sl)


def broadcast_ok(src, dst) -> bool:
    """Whether a tile of shape src broadcasts to shape dst (NumPy's rules; tile_broadcast
    in tile_ops.py, and the frontend's check)."""
    if len(src) > len(dst):
        return False
    return all(s in (1, d) for s, d in zip(reversed(src), reversed(dst)))


# ---- memory ------------------------------------------------------------------------------

def _np_load(arr, *offs, target):
    out = _np_storage(target)
    if arr is not None:
        where = _region(arr, offs, target)
        if where is not None:
            out[where[0]] = arr[where[1]]
    return out


def _load_grad(g, arr, *rest, arrays):
    *offs, ret, adj = rest
    if adj is not None and arrays[0] is not None:
        g.call("tile_atomic_add", [arrays[0], adj, *offs])
    return (None,) * (1 + len(offs))


builtin("tile_load", [sig("A", *_offsets(n), ret=_target) for n in range(1, MAX_DIMS + 1)],
        _np_load, llvm=lambda cx, arr, *offs: cx.tile_load(arr, offs, cx.ret), cuda=_cuda_load,
        grad=_load_grad, array_grad=True, targeted=True,
        doc="tile_load(a, shape, offset=0): the tile of the given shape read from array a "
            "at offset; elements outside the array read as zero")


def _np_store(arr, tile, *offs, types, ret):
    if arr is not None:
        where = _region(arr, offs, types[1])
        if where is not None:
            arr[where[1]] = tile[where[0]]


def _store_grad(g, arr, tile, *rest, arrays):
    *offs, ret, adj = rest
    if arrays[0] is None:
        return (None,) * (2 + len(offs))
    adj_tile = g.call("tile_load", [arrays[0], *offs], target=tile.type)
    g.call("tile_store", [arrays[0], g.zeros(tile.type), *offs])  # what it overwrote
    return (None, adj_tile) + (None,) * len(offs)


def _store_ret(b):
    a, t = b["A"], b["L"]
    return VOID if a.dtype == t.dtype and a.ndim == len(t.tile_shape) else None


builtin("tile_store", [sig("A", "L", *_offsets(n), ret=_store_ret)
                       for n in range(1, MAX_DIMS + 1)],
        _np_store, llvm=lambda cx, arr, tile, *offs: cx.tile_store(arr, tile, cx.types[1], offs),
        grad=_store_grad, array_grad=True, effects=True, extra={"typed": True},
        cuda=_cuda_write(False),
        doc="tile_store(a, t, offset=0): writes tile t into array a at offset; elements "
            "outside the array are left out")


def _np_atomic_add(arr, tile, *offs, types, ret):
    old = np.zeros_like(tile)
    if arr is not None:
        where = _region(arr, offs, types[1])
        if where is not None:
            old[where[0]] = arr[where[1]]
            arr[where[1]] = arr[where[1]] + tile[where[0]]
    return old


def _atomic_add_grad(g, arr, tile, *rest, arrays):
    *offs, ret, adj = rest
    if arrays[0] is None:
        return (None,) * (2 + len(offs))
    return (None, g.call("tile_load", [arrays[0], *offs], target=tile.type)) \
        + (None,) * len(offs)


def _atomic_ret(b):
    a, t = b["A"], b["L"]
    return t if a.dtype == t.dtype and a.ndim == len(t.tile_shape) else None


builtin("tile_atomic_add", [sig("A", "L", *_offsets(n), ret=_atomic_ret)
                            for n in range(1, MAX_DIMS + 1)],
        _np_atomic_add,
        llvm=lambda cx, arr, tile, *offs: cx.tile_store(arr, tile, cx.types[1], offs,
                                                        atomic=True),
        grad=_atomic_add_grad, array_grad=True, effects=True, extra={"typed": True},
        cuda=_cuda_write(True),
        doc="tile_atomic_add(a, t, offset=0): adds tile t into array a at offset, "
            "element by element atomically; returns the tile of the values before")


# ---- the same through an array view (a[i], a[::2], a[i, 1:5]) ----------------------------
# A view is the frontend's compile-time description of part of an array (frontend/views.py);
# a tile op on one gets, after the array itself, five ints per axis of the array: where the
# tile's first element sits, the step, the range [low, high) of tile coordinates inside the
# view, and the tile's extent along that axis (1 where the view fixes the index). So the
# view's bounds are Warp's bounds (what lies outside reads as zero and is not written), and
# the gradient goes to the array's own adjoint through the same description.

def _view_desc(n):
    return ("i",) * (5 * n)


def _view_cells(arr, desc, t):
    """(flat tile element, array index) of each element of tile t inside the view."""
    n = arr.ndim
    first, step, low, high, ext = (list(map(int, desc[k * n:(k + 1) * n])) for k in range(5))
    for e, c in enumerate(np.ndindex(*ext)):
        if all(lo <= x < hi for x, lo, hi in zip(c, low, high)):
            idx = tuple(f + x * s for f, x, s in zip(first, c, step))
            if all(0 <= i < m for i, m in zip(idx, arr.shape)):
                yield e, idx


def _flat_elems(tile, t):
    return tile.reshape((t.size,) + tuple(t.dtype.shape))


def _np_view_load(arr, *desc, target):
    out = _np_storage(target)
    if arr is not None:
        flat = _flat_elems(out, target)
        for e, idx in _view_cells(arr, desc, target):
            flat[e] = arr[idx]
    return out


def _np_view_write(add):
    def run(arr, tile, *desc, types, ret):
        t = types[1]
        old = np.zeros_like(tile)
        if arr is not None:
            src, before = _flat_elems(tile, t), _flat_elems(old, t)
            for e, idx in _view_cells(arr, desc, t):
                before[e] = arr[idx]
                arr[idx] = arr[idx] + src[e] if add else src[e]
        return old if add else None
    return run


def _view_load_grad(g, arr, *rest, arrays):
    *desc, ret, adj = rest
    if adj is not None and arrays[0] is not None:
        g.call("tile_atomic_add_view", [arrays[0], adj, *desc])
    return (None,) * (1 + len(desc))


def _view_store_grad(g, arr, tile, *rest, arrays):
    *desc, ret, adj = rest
    if arrays[0] is None:
        return (None,) * (2 + len(desc))
    adj_tile = g.call("tile_load_view", [arrays[0], *desc], target=tile.type)
    g.call("tile_store_view", [arrays[0], g.zeros(tile.type), *desc])
    return (None, adj_tile) + (None,) * len(desc)


def _view_atomic_grad(g, arr, tile, *rest, arrays):
    *desc, ret, adj = rest
    if arrays[0] is None:
        return (None,) * (2 + len(desc))
    return (None, g.call("tile_load_view", [arrays[0], *desc], target=tile.type)) \
        + (None,) * len(desc)


def _view_store_ret(b):
    a, t = b["A"], b["L"]
    return VOID if a.dtype == t.dtype and a.ndim >= len(t.tile_shape) else None


def _view_atomic_ret(b):
    a, t = b["A"], b["L"]
    return t if a.dtype == t.dtype and a.ndim >= len(t.tile_shape) else None


def _view_load_ret(b):
    t, a = b["target"], b["A"]
    return t if t is not None and a.dtype == t.dtype and a.ndim >= len(t.tile_shape) else None


def no_cuda(name):
    """The CUDA spelling of a tile builtin the CUDA backend does not have yet: a clear
    error naming it (the CPU backends run it)."""
    def spell(types, ret, args):
        from ..errors import KernelError
        raise KernelError(f"{name} is not available on the CUDA backend yet (it runs on "
                          "the CPU: device='cpu')", stage="rendering CUDA C")
    return spell


builtin("tile_load_view", [sig("A", *_view_desc(n), ret=_view_load_ret)
                           for n in range(1, MAX_DIMS + 1)],
        _np_view_load,
        llvm=lambda cx, arr, *desc: cx.tile_load(arr, None, cx.ret, desc=desc),
        cuda=no_cuda("tile_load of an array view"), grad=_view_load_grad,
        array_grad=True, targeted=True,
        doc="(internal) tile_load(view, shape, offset) of a view of an array")

builtin("tile_store_view", [sig("A", "L", *_view_desc(n), ret=_view_store_ret)
                            for n in range(1, MAX_DIMS + 1)],
        _np_view_write(False),
        llvm=lambda cx, arr, tile, *desc: cx.tile_store(arr, tile, cx.types[1], None,
                                                        desc=desc),
        cuda=no_cuda("tile_store into an array view"), grad=_view_store_grad,
        array_grad=True, effects=True, extra={"typed": True},
        doc="(internal) tile_store(view, t, offset) into a view of an array")

builtin("tile_atomic_add_view", [sig("A", "L", *_view_desc(n), ret=_view_atomic_ret)
                                 for n in range(1, MAX_DIMS + 1)],
        _np_view_write(True),
        llvm=lambda cx, arr, tile, *desc: cx.tile_store(arr, tile, cx.types[1], None,
                                                        atomic=True, desc=desc),
        cuda=no_cuda("tile_atomic_add into an array view"), grad=_view_atomic_grad,
        array_grad=True, effects=True, extra={"typed": True},
        doc="(internal) tile_atomic_add(view, t, offset) into a view of an array")


# ---- construction and access ---------------------------------------------------------------

def _full_ret(b):
    t = b["target"]
    return t if t is not None and t.is_tile and t.dtype == b["_x"] else None


class _AnyValue:
    """A signature taking one scalar or vector (bound to ``_x``)."""

    params = ("X|V",)

    def __init__(self, ret):
        self.ret = ret

    def match(self, types):
        if len(types) == 1 and (types[0].is_scalar or types[0].is_vector or types[0].is_matrix) \
                and types[0].scalar.kind != "b":
            return {"_x": types[0]}
        return None

    def result(self, bind):
        return self.ret(bind)

    def __str__(self):
        return "(scalar or vector) -> tile"


def _np_from_value(x, target):
    return np.asarray(x).reshape(target.shape)


def _tile_ret(b):
    """tile(x): one element x, or (a vector without preserve_type) its components as a
    column of shape (n, 1)."""
    t, x = b["target"], b["_x"]
    if t is None or not t.is_tile:
        return None
    if t.dtype == x and tuple(t.tile_shape) == (1,):
        return t
    if x.is_vector and t.dtype == x.scalar and tuple(t.tile_shape) == (x.length, 1):
        return t
    return None


def _untile_ret(b):
    from ..types import Vector
    t = b["L"]
    if tuple(t.tile_shape) == (1,):
        return t.dtype
    if len(t.tile_shape) == 2 and t.tile_shape[1] == 1 and t.dtype.is_scalar:
        return Vector(t.tile_shape[0], t.dtype)
    return None


def _untile_llvm(cx, t):
    tt = cx.types[0]
    if tuple(tt.tile_shape) == (1,):
        return cx._get_element(t, tt, ir.Constant(ir.IntType(64), 0))
    n = tt.tile_shape[0]
    return cx.b.load(cx._chunk(t, tt, ir.Constant(ir.IntType(64), 0), n),
                     align=tt.scalar.nbytes)


builtin("tile_untile", [sig("L", ret=_untile_ret)],
        lambda t, types, ret: np.asarray(t).reshape(ret.shape) if ret.shape else
        np.asarray(t).reshape(-1)[0], extra={"typed": True},
        llvm=_untile_llvm, linear_in="all",
        cuda=lambda types, ret, a: f"{a[0]}.c[0]" if ret.is_scalar else a[0],  # same layout
        grad=lambda g, t, r, adj: (g.call("tile", [adj], target=t.type),),
        doc="untile(t): the thread's value back from a tile of one element (or a vector "
            "from a column tile, as tile(v) makes)")


builtin("tile", [_AnyValue(_tile_ret)], _np_from_value,
        llvm=lambda cx, x: cx.tile_from_value(x, cx.ret), targeted=True,
        cuda=lambda types, ret, a: f"kl_tile_from<{ret.length}, {_c(ret.scalar)}>({a[0]})",
        grad=lambda g, x, r, adj: (g.call("tile_untile", [adj]),),  # the inverse
        linear_in="all",
        doc="tile(x): the one-element tile holding this thread's value x (each block is "
            "one thread)")


def _np_full(x, target):
    return np.broadcast_to(np.asarray(x), target.shape).copy()


def _full_grad(g, x, r, adj):
    return (g.call("tile_extract", [g.call("tile_sum", [adj]), g.const(0)]),)


builtin("tile_full", [_AnyValue(_full_ret)], _np_full,
        llvm=lambda cx, x: cx.tile_full(x, cx.ret), targeted=True, grad=_full_grad,
        cuda=lambda types, ret, a: f"kl_tile_full<{ret.length}, {_c(ret.scalar)}>({a[0]})",
        linear_in="all",
        doc="tile_full(x, shape): the tile of the given shape with every element x")


def _flat_index(t, idx) -> str:
    expr = f"int64({idx[0]})"
    for i, n in zip(idx[1:], t.tile_shape[1:]):
        expr = f"({expr} * {n} + {i})"
    return expr


def _extract_ret(b):
    t = b["L"]
    return t.dtype


def _np_extract(t, *idx):
    return t[tuple(int(i) for i in idx)]


def _extract_grad(g, t, *rest):
    *idx, ret, adj = rest
    return (g.call("tile_put", [g.zeros(t.type), adj, *idx]),) + (None,) * len(idx)


builtin("tile_extract", [sig("L", *_offsets(n), ret=_extract_ret)
                         for n in range(1, MAX_DIMS + 1)],
        _np_extract,
        llvm=lambda cx, t, *idx: cx.tile_extract(t, cx.types[0], idx),
        cuda=lambda types, ret, a: f"kl_tile_elem<{_c(ret)}, {_parts(types[0])}, "
                                   f"{types[0].length}, {_c(types[0].scalar)}>::get({a[0]}, "
                                   f"{_flat_index(types[0], a[1:])})",
        grad=_extract_grad,
        doc="t[i, ...]: one element of a tile")


def _np_put(t, x, *idx):
    out = np.array(t, copy=True)
    out[tuple(int(i) for i in idx)] = x
    return out


def _put_ret(b):
    t, x = b["L"], b["_x"]
    return t if x == t.dtype else None


class _TileValueIndex:
    """(tile, element, int indices...) signatures: the element must be the tile's dtype."""

    def __init__(self, n):
        self.params = ("L", "X|V") + ("i",) * n

    def match(self, types):
        if len(types) != len(self.params) or not types[0].is_tile:
            return None
        if not all(t.is_scalar and t.is_int for t in types[2:]):
            return None
        if len(types) - 2 != len(types[0].tile_shape):
            return None
        return {"L": types[0], "_x": types[1]}

    def result(self, bind):
        return _put_ret(bind)

    def __str__(self):
        return f"(tile, element, {', '.join(['int'] * (len(self.params) - 2))}) -> tile"


builtin("tile_put", [_TileValueIndex(n) for n in range(1, MAX_DIMS + 1)], _np_put,
        llvm=lambda cx, t, x, *idx: cx.tile_put(t, x, cx.types[0], idx),
        cuda=lambda types, ret, a: f"kl_tile_put<{_parts(types[0])}>({a[0]}, {a[1]}, "
                                   f"{_flat_index(types[0], a[2:])})",
        grad=lambda g, t, x, *rest: (
            g.call("tile_put", [rest[-1], g.zeros(x.type), *rest[:-2]]),
            g.call("tile_extract", [rest[-1], *rest[:-2]])) + (None,) * (len(rest) - 2),
        doc="(internal) tile t with element [i, ...] replaced by x: the adjoint of t[i, ...]")

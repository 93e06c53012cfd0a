"""Tile builtins that compute on tiles: reductions, transpose, FFT, arg-reductions and scans,
tile_map's packing, broadcasting, reshaping, reductions along an axis and matrix products;
one record each: type rule, NumPy reference, LLVM lowering (backends/llvm/tiles.py) and
derivative.

tiles.py holds the tile model's description, the helpers shared here (CUDA spellings,
shape rules) and the builtins that make, read and write tiles (load, store, atomic add,
views, construction and element access).
"""
from __future__ import annotations

import numpy as np
from .llvm_ir import ir

from ..errors import GradientError
from .registry import builtin, sig
from .tiles import _c, _flat_elems, _np_storage, _parts, broadcast_ok, no_cuda


# ---- reductions and rearrangements -----------------------------------------------------------

def _sum_ret(b):
    from ..types import Tile
    t = b["L"]
    return Tile(t.dtype, (1,))


def _np_sum(t, types, ret):
    elem = types[0].dtype.shape
    return t.reshape((-1,) + tuple(elem)).sum(axis=0, dtype=t.dtype)[None]


builtin("tile_sum", [sig("L", ret=_sum_ret)], _np_sum, extra={"typed": True},
        llvm=lambda cx, t: cx.tile_sum(t, cx.types[0], cx.ret),
        cuda=lambda types, ret, a: f"{_c(ret)}(kl_tile_sum<{_c(types[0].dtype)}, "
                                   f"{_parts(types[0])}>({a[0]}))",
        grad=lambda g, t, r, adj: (g.call("tile_full", [g.call("tile_extract",
                                                                [adj, g.const(0)])],
                                          target=t.type),),
        linear_in="all",
        doc="tile_sum(t): the one-element tile holding the sum of t's elements")


def _transpose_ret(b):
    from ..types import Tile
    t = b["L"]
    if len(t.tile_shape) != 2:
        return None
    return Tile(t.dtype, tuple(reversed(t.tile_shape)))


def _np_transpose(t):
    return np.swapaxes(t, 0, 1).copy()


builtin("tile_transpose", [sig("L", ret=_transpose_ret)], _np_transpose,
        llvm=lambda cx, t: cx.tile_transpose(t, cx.types[0]),
        cuda=lambda types, ret, a: f"kl_tile_transpose<{_parts(types[0])}, "
                                   f"{types[0].tile_shape[0]}, {types[0].tile_shape[1]}>({a[0]})",
        grad=lambda g, t, r, adj: (g.call("tile_transpose", [adj]),),
        linear_in="all",
        doc="tile_transpose(t): the transpose of a 2-D tile")


# ---- FFT ---------------------------------------------------------------------------------

def _fft_ret(b):
    t = b["L"]
    ok = t.dtype.is_vector and t.dtype.length == 2 and t.is_float \
        and len(t.tile_shape) >= 2 and (t.tile_shape[-1] & (t.tile_shape[-1] - 1) == 0
                                        or t.tile_shape[-1] <= MAX_DFT)
    return t if ok else None


MAX_DFT = 4096  # the largest transform that is not a power of two (Warp's CPU limit)


def _np_fft(sign):
    def run(t):
        z = t[..., 0].astype(np.float64) + 1j * t[..., 1].astype(np.float64)
        z = np.fft.fft(z, axis=-1) if sign < 0 else np.fft.ifft(z, axis=-1) * z.shape[-1]
        return np.stack([z.real, z.imag], axis=-1).astype(t.dtype)
    return run


builtin("tile_fft", [sig("L", ret=_fft_ret)], _np_fft(-1),
        llvm=lambda cx, t: cx.tile_fft(t, cx.types[0], -1),
        cuda=lambda types, ret, a: f"kl_tile_fft<-1, {types[0].tile_shape[-1]}>({a[0]})",
        grad=lambda g, t, r, adj: (g.call("tile_ifft", [adj]),), linear_in="all",
        doc="tile_fft(t): in place, the unnormalised DFT along the last dimension of a "
            "tile of vec2 (complex) values, as numpy.fft.fft")

builtin("tile_ifft", [sig("L", ret=_fft_ret)], _np_fft(+1),
        llvm=lambda cx, t: cx.tile_fft(t, cx.types[0], +1),
        cuda=lambda types, ret, a: f"kl_tile_fft<1, {types[0].tile_shape[-1]}>({a[0]})",
        grad=lambda g, t, r, adj: (g.call("tile_fft", [adj]),), linear_in="all",
        doc="tile_ifft(t): in place, the unnormalised inverse DFT along the last dimension "
            "(N * numpy.fft.ifft)")


# ---- reductions, arg-reductions and scans (scalar elements, over the flattened tile) --------
# max and min treat NaN as the scalar max/min do (the other operand wins, as Warp's fmax);
# the first of equal elements wins. Warp 1.19 leaves the adjoints of these out (its native
# adjoints are empty); kernlab gives the exact (sub)gradients: a max/min's adjoint goes to the
# element it picked, a product's to each element as the product of the others, a scan's as
# the reverse scan of the incoming adjoint.

def _scalar_tile(b):
    t = b["L"]
    return t if t.dtype.is_scalar else None


def _one_ret(b):
    from ..types import Tile
    t = b["L"]
    return Tile(t.dtype, (1,)) if t.dtype.is_scalar else None


def _int_one_ret(b):
    from ..types import Tile, int32
    return Tile(int32, (1,)) if b["L"].dtype.is_scalar else None


def _np_op(op):
    from .registry import REGISTRY
    return REGISTRY[op].numpy


def _np_fold(op):
    def run(t, types, ret):
        f = _np_op(op)
        flat = t.reshape(-1)
        acc = flat[0]
        for x in flat[1:]:
            acc = f(acc, x)
        return np.asarray([acc], t.dtype)
    return run


def _first_best(flat, less):
    best = 0
    for i in range(1, len(flat)):
        x, y = flat[i], flat[best]
        if (x < y if less else x > y) or (y != y and x == x):
            best = i
    return best


def _np_arg(less):
    return lambda t: np.asarray([_first_best(t.reshape(-1), less)], np.int32)


def _best_grad(less):
    def grad(g, t, r, adj):
        at = g.call("tile_extract", [g.call("tile_argmin" if less else "tile_argmax", [t]),
                                     g.const(0)])
        return (g.call("tile_onehot", [g.call("tile_extract", [adj, g.const(0)]), at],
                       target=t.type),)
    return grad


def _prod_grad(g, t, r, adj):
    before = g.call("tile_scan_mul_exclusive", [t])
    after = g.call("tile_rscan_mul_exclusive", [t])
    return (g.mul(g.mul(before, after), g.call("tile_extract", [adj, g.const(0)])),)


for _name, _op, _grad in (("tile_max", "max", _best_grad(False)),
                          ("tile_min", "min", _best_grad(True)),
                          ("tile_prod", "mul", _prod_grad)):
    builtin(_name, [sig("L", ret=_one_ret)], _np_fold(_op), extra={"typed": True},
            llvm=lambda cx, t, _op=_op: cx.tile_fold(t, cx.types[0], _op, cx.ret),
            cuda=no_cuda(_name), grad=_grad,
            doc=f"{_name}(t): the one-element tile of the {_op} over t's elements")

for _name, _less in (("tile_argmax", False), ("tile_argmin", True)):
    builtin(_name, [sig("L", ret=_int_one_ret)], _np_arg(_less),
            llvm=lambda cx, t, _less=_less: cx.tile_argbest(t, cx.types[0], _less, cx.ret),
            cuda=no_cuda(_name), differentiable=False,
            doc=f"{_name}(t): the one-element int32 tile of the flat index of the "
                f"{'smallest' if _less else 'largest'} element (the first among equals)")


def _np_onehot(x, at, target):
    out = _np_storage(target)
    _flat_elems(out, target)[int(at)] = x
    return out


def _onehot_ret(b):
    t, x = b["target"], b["_x"]
    return t if t is not None and t.is_tile and t.dtype == x else None


class _ValueIndex:
    params = ("X|V", "i")

    def __init__(self, ret):
        self.ret = ret

    def match(self, types):
        if len(types) == 2 and (types[0].is_scalar or types[0].is_vector or types[0].is_matrix) \
                and types[1].is_scalar and types[1].is_int:
            return {"_x": types[0]}
        return None

    def result(self, bind):
        return self.ret(bind)

    def __str__(self):
        return "(element, int) -> tile"


builtin("tile_onehot", [_ValueIndex(_onehot_ret)], _np_onehot,
        llvm=lambda cx, x, at: cx.tile_onehot(x, at, cx.ret), targeted=True,
        cuda=no_cuda("tile_onehot"),
        grad=lambda g, x, at, r, adj: (g.call("tile_extract_flat", [adj, at]), None),
        linear_in=(0,),
        doc="(internal) the tile that is zero except x at flat element i: the adjoint of "
            "a max or min")


def _np_extract_flat(t, at, types, ret):
    return _flat_elems(t, types[0])[int(at)]


builtin("tile_extract_flat", [sig("L", "i", ret=lambda b: b["L"].dtype)], _np_extract_flat,
        extra={"typed": True},
        llvm=lambda cx, t, at: cx._get_element(
            t, cx.types[0], cx.b.sext(at, ir.IntType(64)) if at.type.width < 64 else at),
        cuda=no_cuda("tile_extract_flat"),
        grad=lambda g, t, at, r, adj: (g.call("tile_onehot", [adj, at], target=t.type), None),
        linear_in=(0,),
        doc="(internal) element i of a tile in row-major order")


def _np_scan(op, exclusive, reverse):
    def run(t):
        f = _np_op(op)
        flat = t.reshape(-1)
        order = range(len(flat) - 1, -1, -1) if reverse else range(len(flat))
        out = np.zeros_like(flat)
        acc = None
        for e in order:
            if exclusive:
                out[e] = flat.dtype.type(1 if op == "mul" else 0) if acc is None else acc
                acc = flat[e] if acc is None else f(acc, flat[e])
            else:
                acc = flat[e] if acc is None else f(acc, flat[e])
                out[e] = acc
        return out.reshape(t.shape)
    return run


def _np_scan_route(less):
    def run(t, adj):
        flat, a = t.reshape(-1), adj.reshape(-1)
        out = np.zeros_like(a)
        at = 0
        for e in range(len(flat)):
            x, y = flat[e], flat[at]
            if e and ((x < y if less else x > y) or (y != y and x == x)):
                at = e
            out[at] += a[e]
        return out.reshape(t.shape)
    return run


_SCANS = {  # name: (op, exclusive, reverse, gradient)
    "tile_scan_inclusive": ("add", False, False,
                            lambda g, t, r, adj: (g.call("tile_rscan_inclusive", [adj]),)),
    "tile_scan_exclusive": ("add", True, False,
                            lambda g, t, r, adj: (g.call("tile_rscan_exclusive", [adj]),)),
    "tile_rscan_inclusive": ("add", False, True,
                             lambda g, t, r, adj: (g.call("tile_scan_inclusive", [adj]),)),
    "tile_rscan_exclusive": ("add", True, True,
                             lambda g, t, r, adj: (g.call("tile_scan_exclusive", [adj]),)),
    "tile_scan_max_inclusive": ("max", False, False, lambda g, t, r, adj: (
        g.call("tile_scan_route_max", [t, adj]),)),
    "tile_scan_min_inclusive": ("min", False, False, lambda g, t, r, adj: (
        g.call("tile_scan_route_min", [t, adj]),)),
    "tile_scan_mul_exclusive": ("mul", True, False, None),
    "tile_rscan_mul_exclusive": ("mul", True, True, None),
}
for _name, (_op, _excl, _rev, _grad) in _SCANS.items():
    builtin(_name, [sig("L", ret=_scalar_tile)], _np_scan(_op, _excl, _rev),
            llvm=lambda cx, t, _op=_op, _excl=_excl, _rev=_rev: cx.tile_scan(
                t, cx.types[0], _op, _excl, _rev),
            cuda=no_cuda(_name), grad=_grad, differentiable=_grad is not None,
            linear_in="all" if _op == "add" else (),
            doc=f"{_name}(t): the {'exclusive' if _excl else 'inclusive'} "
                f"{'suffix' if _rev else 'prefix'} {_op} scan of t's elements in row-major "
                "order" + (" (internal: an adjoint)" if _rev or _op == "mul" else ""))

for _name, _less in (("tile_scan_route_max", False), ("tile_scan_route_min", True)):
    builtin(_name, [sig("L", "L", ret=_scalar_tile)], _np_scan_route(_less),
            llvm=lambda cx, t, adj, _less=_less: cx.tile_scan_route(t, adj, cx.types[0],
                                                                    _less),
            cuda=no_cuda(_name), differentiable=False,
            doc="(internal) the adjoint of an inclusive max/min scan")


# ---- tile_map's result: a tile made of its elements ---------------------------------------

class _PackSig:
    """(x0, x1, ...) of one scalar or vector type -> the tile given as target."""

    params = ("X|V", "...")

    def match(self, types):
        if types and all(t == types[0] for t in types) \
                and (types[0].is_scalar or types[0].is_vector or types[0].is_matrix) and types[0].scalar.kind != "b":
            return {"_x": types[0], "_n": len(types)}
        return None

    def result(self, bind):
        t = bind["target"]
        return t if t is not None and t.is_tile and t.dtype == bind["_x"] \
            and t.size == bind["_n"] else None

    def __str__(self):
        return "(element, ...) -> tile"


def _np_pack(*xs, target):
    out = _np_storage(target)
    flat = _flat_elems(out, target)
    for e, x in enumerate(xs):
        flat[e] = x
    return out


def _pack_llvm(cx, *xs):
    t = cx.ret
    out = cx.tile_buffer(t)
    for e, x in enumerate(xs):
        cx._put_element(out, t, ir.Constant(ir.IntType(64), e), x)
    return out


builtin("tile_pack", [_PackSig()], _np_pack, llvm=_pack_llvm, targeted=True,
        cuda=no_cuda("tile_map"),
        grad=lambda g, *rest: tuple(g.call("tile_extract_flat", [rest[-1], g.const(e)])
                                    for e in range(len(rest) - 2)),
        linear_in="all",
        doc="(internal) the tile of these elements in row-major order: tile_map's result")


# ---- broadcasting ---------------------------------------------------------------------------
# tile_broadcast(t, shape): NumPy's rules (t's dimensions line up from the right; a 1 repeats).
# Its adjoint sums the incoming gradient over the repeated axes (tile_unbroadcast).

def _bcast_ret(b):
    t, src = b["target"], b["L"]
    return t if t is not None and t.dtype == src.dtype \
        and broadcast_ok(src.tile_shape, t.tile_shape) else None


def _unbcast_ret(b):
    t, src = b["target"], b["L"]
    return t if t is not None and t.dtype == src.dtype \
        and broadcast_ok(t.tile_shape, src.tile_shape) else None


def _np_broadcast(t, target, types, ret):
    return np.broadcast_to(t, target.shape).copy()


def _np_unbroadcast(t, target, types, ret):
    src, dst = types[0].tile_shape, target.tile_shape
    lead = len(src) - len(dst)
    out = t.sum(axis=tuple(range(lead))) if lead else t
    axes = tuple(d for d, n in enumerate(dst) if n == 1 and out.shape[d] != 1)
    return (out.sum(axis=axes, keepdims=True) if axes else out).astype(t.dtype)


builtin("tile_broadcast", [sig("L", ret=_bcast_ret)], _np_broadcast, targeted=True,
        extra={"typed": True},
        llvm=lambda cx, t: cx.tile_broadcast(t, cx.types[0], cx.ret, add=False),
        cuda=no_cuda("tile_broadcast"),
        grad=lambda g, t, r, adj: (g.call("tile_unbroadcast", [adj], target=t.type),),
        linear_in="all",
        doc="tile_broadcast(t, shape): t repeated to shape by NumPy's broadcasting rules")

builtin("tile_unbroadcast", [sig("L", ret=_unbcast_ret)], _np_unbroadcast, targeted=True,
        extra={"typed": True},
        llvm=lambda cx, t: cx.tile_broadcast(t, cx.ret, cx.types[0], add=True),
        cuda=no_cuda("tile_broadcast"),
        grad=lambda g, t, r, adj: (g.call("tile_broadcast", [adj], target=t.type),),
        linear_in="all",
        doc="(internal) the adjoint of tile_broadcast: sums over the repeated axes")


# ---- reshaping: the same scalars in the same order, another shape ---------------------------

def _reshape_ret(b):
    t, src = b["target"], b["L"]
    return t if t is not None and t.is_tile and t.dtype == src.dtype and t.size == src.size \
        else None


builtin("tile_reshape", [sig("L", ret=_reshape_ret)],
        lambda t, target: np.array(t).reshape(target.shape), targeted=True,
        llvm=lambda cx, t: t,  # a tile's buffer is row-major: only its type changes
        cuda="{0}", linear_in="all",
        grad=lambda g, t, r, adj: (g.call("tile_reshape", [adj], target=t.type),),
        doc="tile_reshape(t, shape): t's elements in row-major order with another shape "
            "(one dimension may be -1); tile_squeeze drops dimensions of size 1")


# ---- tile_reduce(op, t, axis) for mul, max and min -----------------------------------------
# (add along an axis is tile_unbroadcast.) The result keeps the axis with size 1; the frontend
# drops it with tile_reshape.

def _np_fold_axis(op):
    def run(t, target, types, ret):
        f = _np_op(op)
        axes = [d for d, (n, m) in enumerate(zip(types[0].tile_shape, target.tile_shape))
                if m == 1 and n != 1]
        if not axes:
            return np.array(t).reshape(target.shape)
        moved = np.moveaxis(t, axes[0], 0)
        acc = moved[0]
        for x in moved[1:]:
            acc = f(acc, x)
        return np.expand_dims(acc, axes[0]).astype(t.dtype)
    return run


def _no_axis_grad(op):
    def grad(g, t, r, adj):
        raise GradientError(f"tile_reduce({op}, t, axis=...) has no derivative in kernlab yet "
                            "(the whole-tile tile_reduce and tile_sum(t, axis) have one); "
                            "reduce with a loop over tile_extract to differentiate it", g.loc)
    return grad


def _fold_axis_ret(b):
    t, src = b["target"], b["L"]
    return t if t is not None and t.dtype == src.dtype and src.dtype.is_scalar \
        and len(t.tile_shape) == len(src.tile_shape) \
        and sum(m == 1 and n != 1 for n, m in zip(src.tile_shape, t.tile_shape)) <= 1 \
        and all(m in (1, n) for n, m in zip(src.tile_shape, t.tile_shape)) else None


for _op in ("mul", "max", "min"):
    builtin(f"tile_reduce_axis_{_op}", [sig("L", ret=_fold_axis_ret)], _np_fold_axis(_op),
            targeted=True, extra={"typed": True},
            llvm=lambda cx, t, _op=_op: cx.tile_fold_axis(t, cx.types[0], cx.ret, _op),
            cuda=no_cuda("tile_reduce along an axis"), grad=_no_axis_grad(_op),
            doc=f"(internal) tile_reduce({_op}, t, axis): the {_op} along one axis, kept "
                "with size 1")


# ---- matrix products ------------------------------------------------------------------------

class _MatmulSig:
    """(a, b): 2-D tiles of one float type with a's columns as many as b's rows."""

    params = ("FL", "FL")

    def match(self, types):
        if len(types) != 2 or not all(t.is_tile and t.dtype.is_scalar and t.is_float
                                      for t in types):
            return None
        a, b = types
        if a.dtype != b.dtype or len(a.tile_shape) != 2 or len(b.tile_shape) != 2 \
                or a.tile_shape[1] != b.tile_shape[0]:
            return None
        from ..types import Tile
        return {"R": Tile(a.dtype, (a.tile_shape[0], b.tile_shape[1]))}

    def result(self, bind):
        return bind["R"]

    def __str__(self):
        return "(tile[M, K], tile[K, N]) -> tile[M, N]"


def _np_matmul(a, b):
    out = np.zeros((a.shape[0], b.shape[1]), a.dtype)
    for k in range(a.shape[1]):  # the sum over k in order, in the tiles' precision
        out = (out + a[:, k:k + 1] * b[k:k + 1, :]).astype(a.dtype)
    return out


builtin("tile_matmul", [_MatmulSig()], _np_matmul,
        llvm=lambda cx, a, b: cx.tile_matmul(a, cx.types[0], b, cx.types[1], cx.ret),
        cuda=no_cuda("tile_matmul"),
        grad=lambda g, a, b, r, adj: (
            g.call("tile_matmul", [adj, g.call("tile_transpose", [b])]),
            g.call("tile_matmul", [g.call("tile_transpose", [a]), adj])),
        doc="tile_matmul(a, b): the matrix product of 2-D tiles of floats; "
            "tile_matmul(a, b, out, alpha=1.0, beta=1.0) sets out = alpha a @ b + beta out")


def _np_scaled(t, s):
    return np.zeros_like(t) if s == 0 else np.asarray(t * s, t.dtype)


def _scaled_llvm(cx, t, s):
    tt = cx.types[0]
    b = cx.b
    out = cx.tile_buffer(tt)
    zero = ir.Constant(s.type, 0.0)
    keep = b.fcmp_ordered("!=", s, zero)

    def body(off, w):
        vty = ir.VectorType(s.type, w)
        x = b.load(cx._chunk(t, tt, off, w), align=tt.scalar.nbytes)
        splat = b.insert_element(ir.Constant(vty, None), s, ir.Constant(ir.IntType(32), 0))
        splat = b.shuffle_vector(splat, ir.Constant(vty, None),
                                 ir.Constant(ir.VectorType(ir.IntType(32), w), [0] * w))
        y = b.select(keep, b.fmul(x, splat), ir.Constant(vty, None))
        b.store(y, cx._chunk(out, tt, off, w), align=tt.scalar.nbytes)

    cx.tile_chunks(tt, body)
    return out


builtin("tile_scaled", [sig("FL", "F", ret=lambda b: b["L"] if b["L"].dtype.is_scalar
                            else None)], _np_scaled,
        llvm=_scaled_llvm, cuda=no_cuda("tile_matmul with out"),
        grad=lambda g, t, s, r, adj: (g.call("tile_scaled", [adj, s]), g.inner(adj, t)),
        doc="(internal) s * t, or zeros where s is 0 (t is not read: tile_matmul's beta)")

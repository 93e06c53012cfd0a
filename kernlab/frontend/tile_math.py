"""Tile calls that compute on tiles (mixed into the Lowerer through frontend/tiles.py's
TileMixin): reductions (``tile_sum``, ``tile_reduce``, ``tile_max`` ...), shape and type
changes (``tile_reshape``, ``tile_squeeze``, ``tile_broadcast``, ``tile_transpose``,
``tile_astype``, ``untile``), ``tile_matmul``, ``tile_fft``/``tile_ifft`` (in place, as in
Warp: the local ``t`` names is given the transformed tile), ``tile_map`` and ``*``/``/``
between tiles of different element types.
"""
from __future__ import annotations

import ast
import math

from .. import lang
from ..errors import KernelTypeError, KernelValueError
from ..ir.nodes import Value
from ..types import Tile, int32
from .exprs import Lit, PyObj
from .tile_args import _Default


class TileMathMixin:
    # ---- reductions ----------------------------------------------------------------------

    def _tile_tile_sum(self, args, node):
        t = self._tile_value(args["a"], "tile_sum")
        return self._tile_fold_axis("tile_sum", t, args["axis"], "tile_sum", "tile_unbroadcast")

    def _tile_fold_axis(self, what, t, axis_node, whole, op):
        """``what(t, axis)``: ``t`` reduced over the compile-time ``axis`` by the IR op
        ``op`` (which keeps the axis, of size 1), then reshaped without it; with no axis,
        the builtin ``whole`` over every element."""
        x = self._tile_const(axis_node)
        if x is None:
            return self.b.call(whole, [t])
        if isinstance(x, Value):
            known = self._known_constant(x)
            x = Lit(known) if known is not None else x
        if not isinstance(x, Lit) or not isinstance(x.value, int):
            raise KernelTypeError(f"{what}(): axis must be a compile-time integer constant",
                                  self.b.loc)
        shape = t.type.tile_shape
        axis = x.value
        if not 0 <= axis < len(shape):
            raise KernelValueError(f"{what}() axis {axis} is out of bounds for tile with "
                                   f"{len(shape)} dimensions", self.b.loc)
        kept = Tile(t.type.dtype, shape[:axis] + (1,) + shape[axis + 1:])
        folded = self.b.call(op, [t], target=kept)
        out = shape[:axis] + shape[axis + 1:] or (1,)
        return self.b.call("tile_reshape", [folded], target=Tile(t.type.dtype, out))

    def _tile_one(self, name, args):
        t = self._tile_value(args["a"], name)
        if not t.type.dtype.is_scalar:
            raise KernelTypeError(f"{name} needs a tile of scalars, got {t.type}", self.b.loc)
        return self.b.call(name, [t])

    def _tile_tile_reduce(self, args, node):
        """tile_reduce(op, t) with op one of Warp's add, mul, max, min builtins."""
        op = self._tile_const(args["op"])
        obj = op.obj if isinstance(op, PyObj) else None
        name = getattr(obj, "builtin", None) if isinstance(obj, lang.BuiltinFunction) else None
        t = self._tile_value(args["a"], "tile_reduce")
        which = {"add": "tile_sum", "mul": "tile_prod", "max": "tile_max", "min": "tile_min"}
        if name not in which:
            raise KernelTypeError("tile_reduce(op, t): kernlab reduces with wp.add, wp.mul, "
                                  "wp.max or wp.min; for another op use a loop over the "
                                  "tile's elements", self.b.loc)
        if name != "add" and not t.type.dtype.is_scalar:
            raise KernelTypeError(f"tile_reduce({name}, t) needs a tile of scalars, got "
                                  f"{t.type}", self.b.loc)
        op = "tile_unbroadcast" if name == "add" else f"tile_reduce_axis_{name}"
        return self._tile_fold_axis("tile_reduce", t, args["axis"], which[name], op)

    # ---- shapes and element types --------------------------------------------------------

    def _tile_untile(self, args, node):
        t = self._tile_value(args["a"], "untile")
        shape = t.type.tile_shape
        if tuple(shape) != (1,) and not (len(shape) == 2 and shape[1] == 1
                                         and t.type.dtype.is_scalar):
            raise KernelTypeError(f"untile: each block is one thread, so it takes a tile of "
                                  f"one element (or a column (n, 1) of scalars, from tile(v)); "
                                  f"got shape {shape}", self.b.loc)
        return self.b.call("tile_untile", [t])

    def _tile_tile_reshape(self, args, node):
        t = self._tile_value(args["a"], "tile_reshape")
        self._tile_flag(args["storage"], "storage", ("register", "shared"))
        x = self._tile_const(args["shape"])
        items = list(x) if isinstance(x, tuple) else [x]
        dims = []
        for d in items:
            if isinstance(d, Value):
                known = self._known_constant(d)
                d = Lit(known) if known is not None else d
            if not isinstance(d, Lit) or not isinstance(d.value, int) or d.value == 0 \
                    or d.value < -1:
                raise KernelTypeError("tile_reshape: shape must be positive integer constants "
                                      "(one of them may be -1)", self.b.loc)
            dims.append(d.value)
        n = t.type.size
        if dims.count(-1) > 1:
            raise KernelTypeError("tile_reshape: at most one dimension may be -1", self.b.loc)
        known = math.prod(d for d in dims if d != -1)
        if -1 in dims:
            if n % known:
                raise KernelTypeError(f"tile_reshape: {n} elements do not fill shape "
                                      f"{tuple(dims)}", self.b.loc)
            dims[dims.index(-1)] = n // known
        if math.prod(dims) != n:
            raise KernelTypeError(f"tile_reshape: a tile of {n} elements cannot take shape "
                                  f"{tuple(dims)}", self.b.loc)
        return self.b.call("tile_reshape", [t], target=Tile(t.type.dtype, tuple(dims)))

    def _tile_tile_squeeze(self, args, node):
        t = self._tile_value(args["a"], "tile_squeeze")
        shape = t.type.tile_shape
        x = self._tile_const(args["axis"])
        if x is None:
            drop = {d for d, n in enumerate(shape) if n == 1}
        else:
            items = list(x) if isinstance(x, tuple) else [x]
            drop = set()
            for a in items:
                if not isinstance(a, Lit) or not isinstance(a.value, int):
                    raise KernelTypeError("tile_squeeze: axis must be integer constants",
                                          self.b.loc)
                if not -len(shape) <= a.value < len(shape):
                    raise KernelValueError(f"tile_squeeze() axis {a.value} is out of bounds "
                                           f"for tile with {len(shape)} dimensions", self.b.loc)
                d = a.value % len(shape)
                if shape[d] != 1:
                    raise KernelValueError(f"tile_squeeze: axis {a.value} has size {shape[d]}, "
                                           "not 1", self.b.loc)
                drop.add(d)
        out = tuple(n for d, n in enumerate(shape) if d not in drop) or (1,)
        return self.b.call("tile_reshape", [t], target=Tile(t.type.dtype, out))

    def _tile_tile_astype(self, args, node):
        t = self._tile_value(args["a"], "tile_astype")
        dtype = self._tile_dtype(args["dtype"], "tile_astype")
        if not dtype.is_scalar or dtype.kind == "b" or not t.type.dtype.is_scalar:
            raise KernelTypeError(f"tile_astype: casts tiles of scalars to a numeric scalar "
                                  f"type, not {t.type.dtype} to {dtype}", self.b.loc)
        return self.b.cast(t, Tile(dtype, t.type.tile_shape))

    def _tile_tile_broadcast(self, args, node):
        from ..builtins.tiles import broadcast_ok
        t = self._tile_value(args["a"], "tile_broadcast")
        self._tile_flag(args["storage"], "storage", ("register", "shared"))
        x = self._tile_const(args["shape"])
        n = len(x) if isinstance(x, tuple) else 1
        if not 1 <= n <= 4:
            raise KernelValueError(f"tile_broadcast() output must have between one and four "
                                   f"dimensions, got {n}", self.b.loc)
        shape = self._tile_shape(args["shape"], "tile_broadcast")
        if not broadcast_ok(t.type.tile_shape, shape):
            raise KernelTypeError(f"tile_broadcast: a tile of shape {t.type.tile_shape} does "
                                  f"not broadcast to {shape} (NumPy's rules)", self.b.loc)
        return self.b.call("tile_broadcast", [t], target=self._tile_type(
            t.type.dtype, shape, "tile_broadcast"))

    def _tile_tile_transpose(self, args, node):
        t = self._tile_value(args["a"], "tile_transpose")
        if len(t.type.tile_shape) != 2:
            raise KernelTypeError(f"tile_transpose needs a 2-D tile, got shape "
                                  f"{t.type.tile_shape}", self.b.loc)
        return self.b.call("tile_transpose", [t])

    # ---- matmul and fft ------------------------------------------------------------------

    def _tile_tile_matmul(self, args, node):
        a = self._tile_value(args["a"], "tile_matmul")
        b = self._tile_value(args["b"], "tile_matmul")
        for t in (a, b):
            if t.type.dtype.is_vector and t.type.dtype.length == 2:
                raise KernelTypeError("tile_matmul on the CPU does not support complex tiles "
                                      f"(vec2 elements): got {t.type}", self.b.loc)
        prec = args["precision"]
        p = prec.value if isinstance(prec, _Default) else self.expr(prec)
        if isinstance(p, (Lit, PyObj)):
            p = p.value if isinstance(p, Lit) else p.obj
        if not isinstance(p, str) or not (isinstance(prec, _Default)
                                          or isinstance(prec, ast.Constant)):
            raise KernelValueError("tile_matmul: precision got a non-literal argument; it must "
                                   "be the string literal 'default' or 'tf32'", self.b.loc)
        if p not in ("default", "tf32"):
            raise KernelValueError(f"tile_matmul: precision must be the string literal "
                                   f"'default' or 'tf32', not {p!r}", self.b.loc)
        if p == "tf32" and a.type.scalar.bits != 32:
            raise KernelTypeError(f"tile_matmul: precision='tf32' requires float32 tiles, got "
                                  f"{a.type.dtype} (on the CPU it computes in float32)",
                                  self.b.loc)
        for t in (a, b):
            if len(t.type.tile_shape) != 2 or not (t.type.dtype.is_scalar and t.type.is_float):
                raise KernelTypeError(f"tile_matmul takes 2-D tiles of floats, got {t.type}",
                                      self.b.loc)
        if a.type.dtype != b.type.dtype:
            raise KernelTypeError(f"tile_matmul: tiles of {a.type.dtype} and {b.type.dtype} "
                                  "(kernlab multiplies tiles of one float type)", self.b.loc)
        if a.type.tile_shape[1] != b.type.tile_shape[0]:
            raise KernelTypeError(f"tile_matmul: shapes {a.type.tile_shape} and "
                                  f"{b.type.tile_shape} do not chain (a's columns must be "
                                  "b's rows)", self.b.loc)
        prod = self.b.call("tile_matmul", [a, b])

        def number(x):  # a constant's value (a literal, or a value the kernel fixes)
            if isinstance(x, Lit):
                return x.value
            if isinstance(x, Value):
                known = self._known_constant(x)
                return known if known is not None else x
            return x

        alpha = number(self._tile_const(args["alpha"]))
        if not (isinstance(alpha, (float, int)) and alpha == 1.0):
            prod = self.call_builtin("mul", [prod, alpha if not isinstance(alpha, (int, float))
                                             else Lit(float(alpha))])
        if isinstance(args["out"], _Default):
            return prod
        node_out = args["out"]
        out = self._tile_value(node_out, "tile_matmul")
        if out.type != prod.type:
            raise KernelTypeError(f"tile_matmul: out is {out.type}, the product "
                                  f"{prod.type}", self.b.loc)
        if not isinstance(node_out, ast.Name):
            raise KernelTypeError("tile_matmul(a, b, out) updates a tile local in place: "
                                  "pass the local's name", self.b.loc)
        beta = number(self._tile_const(args["beta"]))
        if isinstance(beta, (float, int)) and beta == 0.0:
            new = prod
        else:
            kept = out if isinstance(beta, (float, int)) and beta == 1.0 else \
                self.b.call("tile_scaled", [out, self.value(
                    beta if not isinstance(beta, (int, float)) else Lit(float(beta)),
                    out.type.scalar)])  # out is not read where beta is 0
            new = self.b.call("add", [kept, prod])
        self.assign(node_out, new)
        return Lit(None)

    def _tile_fft_call(self, name, args):
        node = args["inout"]
        t = self._tile_value(node, name)
        tt = t.type
        if not (tt.dtype.is_vector and tt.dtype.length == 2 and tt.is_float):
            raise KernelTypeError(f"{name} needs a tile of vec2f or vec2d (complex) values, "
                                  f"got {tt}", self.b.loc)
        if len(tt.tile_shape) < 2:
            raise KernelTypeError(f"{name} needs a tile of at least 2 dimensions (batches, "
                                  f"size), got shape {tt.tile_shape}", self.b.loc)
        n = tt.tile_shape[-1]
        if n & (n - 1) and n > 4096:
            raise KernelTypeError(f"{name}: a size that is not a power of two goes through a "
                                  f"direct DFT of at most 4096 points (as in Warp); the last "
                                  f"dimension is {n}", self.b.loc)
        if not isinstance(node, ast.Name):
            raise KernelTypeError(f"{name}(t) transforms a tile local in place: pass the "
                                  "local's name", self.b.loc)
        out = self.b.call(name, [t])
        self.assign(node, out)
        return Lit(None)

    def _tile_tile_fft(self, args, node):
        return self._tile_fft_call("tile_fft", args)

    def _tile_tile_ifft(self, args, node):
        return self._tile_fft_call("tile_ifft", args)

    # ---- element by element --------------------------------------------------------------

    def tile_mixed(self, name, vals):
        """``*`` and ``/`` between a tile and another tile or value whose element types
        differ (a tile of vectors times a tile of scalars, a tile of scalars times a matrix):
        element by element, as Warp does, where one side's elements are scalars. None where
        the builtin's own tile signatures take the operands."""
        from ..builtins.registry import REGISTRY
        if name not in ("mul", "div") or len(vals) != 2:
            return None
        if REGISTRY[name].resolve([v.type for v in vals]) is not None:
            return None
        elem = [v.type.dtype if v.type.is_tile else v.type for v in vals]
        if not any(e.is_scalar for e in elem):
            verb = "multiply" if name == "mul" else "divide"
            both = all(v.type.is_tile for v in vals)
            why = "the element type must be scalar on one side" if both else \
                "at least one operand must be a scalar type"
            shown = [f"tile<{v.type.dtype}, {v.type.tile_shape}>" if v.type.is_tile
                     else str(v.type) for v in vals]
            raise KernelTypeError(f"Cannot {verb} {shown[0]} by {shown[1]}: {why} "
                                  "(element type must be scalar)", self.b.loc)
        tiles = [v for v in vals if v.type.is_tile]
        shape = tiles[0].type.tile_shape
        if any(t.type.tile_shape != shape for t in tiles):
            raise KernelTypeError(f"{name}: tiles of shapes {tiles[0].type.tile_shape} and "
                                  f"{tiles[-1].type.tile_shape}", self.b.loc)
        if REGISTRY[name].resolve(elem) is None:
            return None  # the builtin's own error names the operands
        return self._tile_elementwise(name, vals, shape)

    def _tile_elementwise(self, name, vals, shape):
        n = math.prod(shape)
        if n > self.MAP_LIMIT:
            raise KernelTypeError(f"{name} of tiles of {n} elements with different element "
                                  f"types: kernlab does these one element at a time, at most "
                                  f"{self.MAP_LIMIT}", self.b.loc)
        outs = []
        for e in range(n):
            at = self.b.const(e, int32)
            elems = [self.b.call("tile_extract_flat", [v, at]) if v.type.is_tile else v
                     for v in vals]
            outs.append(self.b.call(name, elems))
        return self.b.call("tile_pack", outs, target=self._tile_type(outs[0].type, shape,
                                                                     name))

    MAP_LIMIT = 1024  # elements tile_map applies a func to one call each (unrolled)

    def tile_map(self, node):
        """tile_map(op, a, b, ...): op applied element by element to tiles of one shape
        (other arguments are passed to every call as they are). An operator kernlab lifts
        to tiles (add, sub, mul, div, neg) runs as one element-wise op; any other builtin
        or func is called once per element and the results make the tile, so its gradient
        is the op's own."""
        if node.keywords or len(node.args) < 2:
            raise KernelTypeError("tile_map(op, a, ...) takes an op and one or more tiles",
                                  self.b.loc)
        op = self.expr(node.args[0])
        obj = op.obj if isinstance(op, PyObj) else None
        from ..kernel import Func
        if not isinstance(obj, (lang.BuiltinFunction, Func)):
            raise KernelTypeError("tile_map: the op must be a builtin (wp.sin, wp.add, ...) "
                                  "or a @func", self.b.loc)
        args = [self.expr(a) for a in node.args[1:]]
        tiles = [a for a in args if isinstance(a, Value) and a.type.is_tile]
        if not tiles:
            raise KernelTypeError("tile_map: at least one argument after the op must be a "
                                  "tile", self.b.loc)
        shape = tiles[0].type.tile_shape
        for t in tiles[1:]:
            if t.type.tile_shape != shape:
                raise KernelTypeError(f"tile_map: the tiles' shapes differ ({shape} and "
                                      f"{t.type.tile_shape})", self.b.loc)
        if isinstance(obj, lang.BuiltinFunction) and len(tiles) == len(args) \
                and obj.builtin in ("add", "sub", "mul", "div", "neg") \
                and all(t.type == tiles[0].type for t in tiles) \
                and tiles[0].type.dtype.is_scalar:
            return self.call_builtin(obj.builtin, args)
        n = tiles[0].type.size
        if n > self.MAP_LIMIT:
            raise KernelTypeError(f"tile_map over a tile of {n} elements: kernlab calls the "
                                  f"op once per element and takes at most {self.MAP_LIMIT}; "
                                  "use the element-wise operators or a smaller tile",
                                  self.b.loc)
        outs = []
        for e in range(n):
            at = self.b.const(e, int32)
            elems = [self.b.call("tile_extract_flat", [a, at])
                     if isinstance(a, Value) and a.type.is_tile else a for a in args]
            if isinstance(obj, Func):
                r = self.call_func(obj, elems, {})
            else:
                r = self.call_builtin(obj.builtin, elems)
            r = self.value(r)
            if outs and r.type != outs[0].type:
                r = self.b.cast(r, outs[0].type)
            outs.append(r)
        t = self._tile_type(outs[0].type, shape, "tile_map")
        return self.b.call("tile_pack", outs, target=t)

"""Tile calls that make tiles (mixed into the Lowerer through frontend/tiles.py's
TileMixin): ``tile_load`` from an array or a view of one, ``tile_store`` and
``tile_atomic_add`` back to it, and the tiles a kernel makes itself: ``tile(x)``,
``tile_zeros``/``tile_ones``/``tile_full`` and ``tile_arange`` (a compile-time constant,
computed as Warp does). The compile-time arguments are read by frontend/tile_args.py.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import KernelTypeError, KernelValueError
from ..ir.nodes import Value
from ..types import float32, int32
from .exprs import Lit, PyObj
from .tile_args import _Default
from .views import ArrayRef, Axis


class TileMakeMixin:
    # ---- loads and stores ----------------------------------------------------------------

    def _tile_tile_load(self, args, node):
        what = "tile_load"
        a = self._tile_array(args["a"], what)
        shape = self._tile_shape(args["shape"], what)
        if len(shape) != a.type.ndim:
            raise KernelTypeError(f"tile_load: shape {shape} has {len(shape)} dimension(s) "
                                  f"but the array has {a.type.ndim}", self.b.loc)
        self._tile_flag(args["storage"], "storage", ("register", "shared"))
        self._tile_flag(args["bounds_check"], "bounds_check", (True, False))
        t = self._tile_type(a.type.dtype, shape, what)
        offs = self._tile_offsets(args["offset"], a.type.ndim, what)
        if isinstance(a, ArrayRef):
            return self.b.call("tile_load_view", [a.base, *self._tile_view(a, offs, shape)],
                               target=t)
        return self.b.call("tile_load", [a, *offs], target=t)

    def _tile_write(self, name, args):
        a = self._tile_array(args["a"], name)
        t = self._tile_value(args["t"], name)
        if len(t.type.tile_shape) != a.type.ndim:
            raise KernelTypeError(f"{name}: a tile of {len(t.type.tile_shape)} dimension(s) "
                                  f"{t.type.tile_shape} into an array of {a.type.ndim}",
                                  self.b.loc)
        if t.type.dtype != a.type.dtype:
            raise KernelTypeError(f"{name}: a tile of {t.type.dtype} into an array of "
                                  f"{a.type.dtype} (the element types must be the same)",
                                  self.b.loc)
        self._tile_flag(args["bounds_check"], "bounds_check", (True, False))
        offs = self._tile_offsets(args["offset"], a.type.ndim, name)
        if isinstance(a, ArrayRef):
            desc = self._tile_view(a, offs, t.type.tile_shape)
            return self.b.call(name + "_view", [a.base, t, *desc])
        return self.b.call(name, [a, t, *offs])

    def _tile_view(self, ref, offs, shape) -> list:
        """The five ints per axis of the viewed array that place a tile of this shape at
        offs in the view (builtins/tiles.py, tile_load_view): first index, step, the range
        of tile coordinates inside the view, and the tile's extent along the axis."""
        first, step, low, high, ext = [], [], [], [], []
        dims = iter(zip(offs, shape))
        for axis in ref.axes:
            if isinstance(axis, Axis):
                off, n = next(dims)
                first.append(self.add(axis.start, self.mul(off, axis.step)))
                step.append(axis.step)
                low.append(self.sub(Lit(0), off))
                high.append(self.sub(axis.length, off))
                ext.append(Lit(n))
            else:
                first.append(axis)
                step.append(Lit(0))
                low.append(Lit(0))
                high.append(Lit(1))
                ext.append(Lit(1))
        return [self.value(x, int32) for x in first + step + low + high + ext]

    def _tile_tile_store(self, args, node):
        self._tile_write("tile_store", args)
        return Lit(None)

    def _tile_tile_atomic_add(self, args, node):
        return self._tile_write("tile_atomic_add", args)

    # ---- tiles made in the kernel --------------------------------------------------------

    def _tile_tile(self, args, node):
        x = self.value(self.expr(args["x"]), float32)
        keep = self._tile_flag(args["preserve_type"], "preserve_type", (True, False))
        if x.type.is_vector and not keep:  # Warp: the components along the first axis
            t = self._tile_type(x.type.scalar, (x.type.length, 1), "tile")
        else:
            t = self._tile_type(x.type, (1,), "tile")
        return self.b.call("tile", [x], target=t)

    def _tile_filled(self, args, value, what):
        shape = self._tile_shape(args["shape"], what)
        dtype = self._tile_dtype(args["dtype"], what)
        self._tile_flag(args["storage"], "storage", ("register", "shared"))
        return self.b.const(value, self._tile_type(dtype, shape, what))

    def _tile_tile_zeros(self, args, node):
        return self._tile_filled(args, 0, "tile_zeros")

    def _tile_tile_ones(self, args, node):
        return self._tile_filled(args, 1, "tile_ones")

    def _tile_tile_full(self, args, node):
        shape = self._tile_shape(args["shape"], "tile_full")
        x = self.expr(args["value"])
        dtype = None if isinstance(args["dtype"], _Default) else \
            self._tile_dtype(args["dtype"], "tile_full")
        x = self.value(x, dtype.scalar if dtype is not None else None)
        if dtype is not None and x.type != dtype:
            x = self.b.cast(x, dtype)
        t = self._tile_type(x.type, shape, "tile_full")
        return self.b.call("tile_full", [x], target=t)

    def tile_arange(self, node):
        """tile_arange([start,] stop[, step], dtype=float): the 1-D tile start + i * step
        for i in [0, n), n the count of [start, stop) by step, computed in dtype as Warp
        does (the bounds are first rounded to dtype). A compile-time constant."""
        what = "tile_arange()"
        args = node.args
        if not args:
            raise KernelTypeError(f"{what} needs a range: tile_arange(stop), (start, stop) or "
                                  "(start, stop, step)", self.b.loc)
        if len(args) > 3:
            raise KernelTypeError(f"{what} accepts at most 3 positional arguments, got "
                                  f"{len(args)}", self.b.loc)
        kw = {k.arg: k.value for k in node.keywords}
        for k in kw:
            if k not in ("dtype", "storage"):
                raise KernelTypeError(f"{what} has no parameter '{k}' (it takes [start,] "
                                      "stop[, step], dtype, storage)", self.b.loc)
        names = {1: ("stop",), 2: ("start", "stop"), 3: ("start", "stop", "step")}[len(args)]
        given = {}
        for name, a in zip(names, args):
            x = self.expr(a)
            value = x.value if isinstance(x, Lit) else x.obj if isinstance(x, PyObj) else \
                self._known_constant(x) if isinstance(x, Value) else None
            if hasattr(value, "value") and not isinstance(value, (int, float)):
                value = value.value  # a wp.constant of a kernlab scalar
            if isinstance(value, (np.integer, np.floating)):
                value = value.item()
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise KernelTypeError(f"{what} arguments must be compile time constants, but "
                                      f"{name} is not", self.b.loc)
            given[name] = value
        dtype = self._tile_dtype(kw["dtype"], what) if "dtype" in kw else float32
        if not dtype.is_scalar or dtype.kind == "b":
            raise KernelTypeError(f"{what} requires a numeric scalar dtype, not {dtype}",
                                  self.b.loc)
        if "storage" in kw:
            self._tile_flag(kw["storage"], "storage", ("register", "shared"))
        start, stop, step = (self._arange_bound(n, given.get(n, d), dtype)
                             for n, d in (("start", 0), ("stop", 0), ("step", 1)))
        if step == 0:
            raise KernelValueError(f"{what} step cannot be zero", self.b.loc)
        if (step > 0 and start >= stop) or (step < 0 and start <= stop):
            raise KernelValueError(f"{what}: start={start}, stop={stop}, step={step} is an "
                                   "empty range; a tile needs a non-empty range (no "
                                   "zero-length dimensions)", self.b.loc)
        if dtype.is_int:
            n = -((stop - start) // -step)
        else:
            q = float(dtype.np.type((stop - start) / step))
            if not math.isfinite(q):
                raise KernelValueError(f"{what} start={start}, stop={stop}, step={step} "
                                       "spans more elements than can be counted (the step is "
                                       "too small for the range)", self.b.loc)
            n = max(1, math.ceil(q))
        t = self._tile_type(dtype, (n,), what)
        sdt = dtype.np.type
        with np.errstate(over="ignore"):
            if dtype.is_int:
                bits = dtype.np.itemsize * 8
                span = 1 << bits
                low = (1 << (bits - 1)) if dtype.kind == "i" else 0
                vals = [((start + i * step + low) % span) - low for i in range(n)]
                values = np.array(vals, dtype.np)
            else:
                values = sdt(start) + np.arange(n).astype(dtype.np) * sdt(step)
        return self.b.const(values.astype(dtype.np), t)

    def _arange_bound(self, name, value, dtype):
        """A tile_arange bound as dtype holds it (Warp's rules): an integer dtype takes
        whole numbers in its range; a float dtype rounds, and must stay finite."""
        what = "tile_arange()"
        if dtype.is_int:
            if isinstance(value, float):
                if not value.is_integer():
                    raise KernelValueError(f"{what} {name}={value} has a fractional part, "
                                           f"which the integer type {dtype} cannot hold",
                                           self.b.loc)
                value = int(value)
            info = np.iinfo(dtype.np)
            if not info.min <= value <= info.max:
                raise KernelValueError(f"{what} {name}={value} is out of range for the "
                                       f"output type {dtype}", self.b.loc)
            return value
        if isinstance(value, int):
            if not -(1 << 63) <= value < (1 << 64):
                raise KernelValueError(f"{what} {name}={value} is too wide to use as an "
                                       f"integer bound; write it as a float literal for a "
                                       f"{dtype} range", self.b.loc)
            wide = np.int64(value) if value < 0 else np.uint64(value)
            value = float(np.float64(wide)) if dtype.np.itemsize == 8 else \
                float(np.float32(wide))
        with np.errstate(over="ignore"):
            held = float(dtype.np.type(value))
        if math.isfinite(value) and not math.isfinite(held):
            raise KernelValueError(f"{what} {name}={value} is out of range for the output "
                                   f"type {dtype}", self.b.loc)
        return held

"""Calls (mixed into the Lowerer): builtins, constructors, funcs and their overloads.

Arguments may be given by keyword and ``*``-unpacked from a vector (its components), a
matrix (its rows), a constant slice of either, or of an array (its elements). A func call
picks the overload its arguments fit: an exact fit first (an int literal fits an int
parameter, a float literal a float one), else one that converts a literal (``f(1)`` for a
float parameter); a concrete overload before a generic (``Any``) one. Parameters left out
take the defaults of the Python definition.
"""
from __future__ import annotations

import ast
import builtins

import numpy as np

from .. import lang, types
from ..errors import KernelSyntaxError, KernelTypeError
from ..generics import annotated_types, matches
from ..ir.nodes import Op, Value
from ..types import ANY, Matrix, ScalarSet, Type, Vector, bool_, float32, int32, to_type
from .spatial import NOT_SPATIAL
from . import structs, tuples
from .hashgrid import NOT_HASHGRID
from .tiles import NOT_TILE
from .mesh import NOT_MESH
from .volume import NOT_VOLUME
from .exprs import PY_BUILTINS, Lit, PyObj, _hashable, _Tid
from .grads import GradOf
from .source import parse_function
from .views import ArrayRef


class StarSource:
    """Values a ``*`` expands into, computed when the call is lowered (an array slice)."""

    not_a_value = ("slices of arrays are only supported *-unpacked into a call, as in "
                   "vec3(*a[0:3])")

    def __init__(self, items):
        self.items = list(items)


class CallMixin:
    def expr_Call(self, node):
        fn = self.expr(node.func)
        if not isinstance(fn, PyObj):
            raise KernelTypeError(f"'{ast.unparse(node.func)}' is not callable", self.b.loc)
        obj = fn.obj
        if obj is lang.tid:
            return self.tid(len(node.args))
        if obj is getattr(lang, "static", None):
            return self.static_value(node)
        if obj is builtins.type:
            return self.type_of(node)
        if obj is lang.grad:
            target = self.expr(node.args[0]) if len(node.args) == 1 else None
            if not isinstance(target, PyObj) or node.keywords:
                raise KernelTypeError("grad() takes one func or builtin", self.b.loc)
            return PyObj(GradOf(target.obj))
        grid = self.hash_grid_call(obj, node)  # frontend/hashgrid.py
        if grid is not NOT_HASHGRID:
            return grid
        tile = self.tile_call(obj, node)  # frontend/tiles.py
        if tile is not NOT_TILE:
            return tile
        mesh = self.mesh_call(obj, node)  # frontend/mesh.py
        if mesh is not NOT_MESH:
            return mesh
        volume = self.volume_call(obj, node)  # frontend/volume.py
        if volume is not NOT_VOLUME:
            return volume
        args = self.call_args(node.args)
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise KernelSyntaxError("**-unpacking is not supported in kernel calls",
                                        self.b.loc)
            kwargs[kw.arg] = self.expr(kw.value)
        if structs.is_struct(obj):  # S(...) makes a struct local
            return structs.construct(self, obj, args, kwargs)
        from ..kernel import Func  # the decorator module sits above the frontend
        if isinstance(obj, GradOf):
            return self.grad_call(obj.target, args, kwargs)
        if isinstance(obj, Func):
            return self.call_func(obj, args, kwargs)
        if isinstance(obj, type) and obj.__name__ == "array" and _is_array_class(obj):
            return self.reshaped(args, kwargs)
        if isinstance(obj, lang.MatrixForm):
            return self.matrix_form(obj, args, kwargs)
        spatial = self.spatial_call(obj, args, kwargs, node)  # frontend/spatial.py
        if spatial is not NOT_SPATIAL:
            return spatial
        if obj is types.vector or obj is types.matrix:
            return self.construct_generic(obj is types.vector, args, kwargs)
        if isinstance(obj, lang.BuiltinFunction):
            dtype = self.dtype_kwarg(obj, kwargs)
            return self.call_builtin(obj.builtin, self.builtin_args(obj, args, kwargs), dtype)
        target = lang.python_type(obj) if isinstance(obj, (type, Type)) else None
        if target is not None:
            self.check_shape_kwargs(target, kwargs)
            return self.construct(target, args)
        if _hashable(obj) and obj in lang.EXPECTS and set(kwargs) <= {"tolerance"}:
            return self.expect(lang.EXPECTS[obj], args + list(kwargs.values()))
        if kwargs:
            raise KernelTypeError(f"'{ast.unparse(node.func)}' takes no keyword arguments "
                                  "in a kernel", self.b.loc)
        if _hashable(obj) and obj in PY_BUILTINS:
            return self.call_builtin(PY_BUILTINS[obj], args)
        if _hashable(obj) and obj in lang.ATOMICS:
            return self.atomic(lang.ATOMICS[obj], args)
        if obj is lang.kprint or obj is builtins.print or obj is lang.printf:
            return self.kprint(args, obj is lang.printf)
        if _hashable(obj) and obj in lang.EXPECTS:
            return self.expect(lang.EXPECTS[obj], args)
        if obj is builtins.len:
            return self.length_of(args)
        raise KernelTypeError(f"'{ast.unparse(node.func)}' ({obj!r}) cannot be called in a "
                              "kernel", self.b.loc)

    def type_of(self, node):
        """``type(x)``: the kernel type of x as a Python-level object, which can then be
        called (a cast or constructor, ``type(a)(b)``), read (``type(a).dtype``) or given
        as a dtype (as in Warp's generic code). A literal is int32, float32 or bool."""
        if len(node.args) != 1 or node.keywords:
            raise KernelTypeError("type() takes one argument in a kernel", self.b.loc)
        x = self.expr(node.args[0])
        if isinstance(x, Lit) and isinstance(x.value, (bool, int, float)):
            return PyObj(bool_ if isinstance(x.value, bool)
                         else int32 if isinstance(x.value, int) else float32)
        if isinstance(x, (Value, ArrayRef)) or structs.is_structish(x):
            return PyObj(x.type)
        raise KernelTypeError(f"type() of '{ast.unparse(node.args[0])}' ({self.describe_arg(x)})"
                              " is not a kernel type", self.b.loc)

    # ---- arguments -------------------------------------------------------------------------

    def call_args(self, nodes) -> list:
        out = []
        for n in nodes:
            if isinstance(n, ast.Starred):
                out.extend(self.unpack(self.expr(n.value)))
            else:
                out.append(self.expr(n))
        return out

    def unpack(self, x) -> list:
        """The values ``*x`` expands into."""
        if isinstance(x, StarSource):
            return x.items
        if isinstance(x, ArrayRef):
            return self.view_elements(x)
        if isinstance(x, tuple):
            return list(x)
        if isinstance(x, Value) and (x.type.is_vector or x.type.is_matrix):
            n = x.type.length if x.type.is_vector else x.type.rows
            return [self.b.call("index", [x, self.b.const(k, int32)]) for k in range(n)]
        what = x.type if isinstance(x, Value) else type(getattr(x, "value", x)).__name__
        raise KernelTypeError("Starred expressions are only supported for vectors, matrices, "
                              f"quaternions and constant slices of these or of arrays, not "
                              f"{what}", self.b.loc)

    def builtin_args(self, fn, args, kwargs) -> list:
        """Keyword arguments of a builtin, put in place by the names its record lists."""
        if not kwargs:
            return args
        from ..builtins import REGISTRY
        names = REGISTRY[fn.builtin].extra.get("params") if fn.builtin in REGISTRY else None
        if not names:
            raise KernelTypeError(f"{fn.__name__}() takes no keyword arguments", self.b.loc)
        out = list(args) + [None] * (len(names) - len(args))
        for k, v in kwargs.items():
            if k not in names or out[names.index(k)] is not None:
                raise KernelTypeError(f"{fn.__name__}() got an unexpected keyword argument "
                                      f"'{k}'", self.b.loc)
            out[names.index(k)] = v
        while out and out[-1] is None:
            out.pop()
        if any(v is None for v in out):
            raise KernelTypeError(f"{fn.__name__}() is missing an argument", self.b.loc)
        return out

    def dtype_kwarg(self, fn, kwargs):
        """The ``dtype=`` of ``quat_identity(dtype=float64)``: a builtin with no argument to
        take its scalar type from takes it as a keyword (removed from ``kwargs``)."""
        if "dtype" not in kwargs:
            return None
        from ..builtins import REGISTRY
        names = REGISTRY[fn.builtin].extra.get("params") if fn.builtin in REGISTRY else None
        if names and "dtype" in names:
            return None
        t = kwargs.pop("dtype")
        t = lang.python_type(t.obj) if isinstance(t, PyObj) else None
        if t is None:
            raise KernelTypeError(f"{fn.__name__}(dtype=...) takes a type", self.b.loc)
        return t

    def static_value(self, node):
        """``kl.static(expr)``: expr evaluated in Python when the kernel is compiled."""
        if len(node.args) != 1 or node.keywords:
            raise KernelTypeError("static() takes one expression", self.b.loc)
        env = dict(self.pyfunc.__globals__)
        if self.extra_globals:
            env.update(self.extra_globals)
        if self.pyfunc.__closure__:
            for name, cell in zip(self.pyfunc.__code__.co_freevars, self.pyfunc.__closure__):
                try:
                    env[name] = cell.cell_contents
                except ValueError:
                    pass
        for name, var in self.scope.names.items():  # len(v) of a vector local works
            t = getattr(var, "type", None)
            if isinstance(t, Type) and (t.is_vector or t.is_matrix):
                env[name] = np.zeros(t.shape, t.scalar.np)
        for name, var in self.scope.names.items():  # len(t) of a tuple local works
            if isinstance(var, tuples.TupleLocal):
                env[name] = (None,) * len(var)
        # the variables of loops unrolled for static() (control.py static_unrolled)
        env.update(getattr(self.scope, "static_consts", {}))
        try:
            value = eval(compile(ast.Expression(node.args[0]), self.b.loc.file, "eval"), env)
        except Exception as exc:  # noqa: BLE001 — the user's expression failed
            raise KernelTypeError(f"static() expression failed: {type(exc).__name__}: {exc}",
                                  self.b.loc) from None
        return self.from_python(value, "static")

    def length_of(self, args):
        if len(args) == 1 and isinstance(args[0], tuple):
            return Lit(len(args[0]))
        if len(args) == 1 and isinstance(args[0], ArrayRef):
            return args[0].kept[0].length
        x = self.value(args[0]) if len(args) == 1 else None
        if x is not None and x.type.is_array:
            return self.b.emit(Op.SHAPE, [x], int32, dim=0)
        if x is not None and (x.type.is_vector or x.type.is_matrix):
            return Lit(x.type.length if x.type.is_vector else x.type.rows)
        raise KernelTypeError("len() takes one array, vector or matrix", self.b.loc)

    # ---- constructors ------------------------------------------------------------------------

    def check_shape_kwargs(self, target: Type, kwargs):
        for k, v in kwargs.items():
            want = {"shape": getattr(target, "shape", None), "length": getattr(
                target, "length", None), "dtype": getattr(target, "scalar", None)}.get(k)
            got = self.const_arg(k, v)
            if k == "dtype" and want is not None:
                got = to_type(got)
            elif k == "shape" and isinstance(got, list):
                got = tuple(got)
            if want is None or got != want:
                raise KernelTypeError(f"{target}() got {k}={got}, which does not fit",
                                      self.b.loc)

    def const_arg(self, name, x):
        if isinstance(x, Lit):
            return x.value
        if isinstance(x, PyObj):
            return x.obj
        if isinstance(x, tuple) and all(isinstance(e, Lit) for e in x):
            return tuple(e.value for e in x)
        raise KernelTypeError(f"'{name}' must be a constant", self.b.loc)

    def matrix_form(self, form, args, kwargs):
        """identity(n, dtype=...), matrix_from_rows(*rows), matrix_from_cols(*cols)."""
        if form is lang.identity:
            given = dict(zip(("n", "dtype"), args))
            given.update(kwargs)
            if set(given) - {"n", "dtype"} or "n" not in given:
                raise KernelTypeError("identity() takes n and dtype", self.b.loc)
            n = self.const_arg("n", given["n"])
            el = to_type(self.const_arg("dtype", given.get("dtype", PyObj(float))))
            if not isinstance(n, int) or n < 1:
                raise KernelTypeError("identity(n): n must be a positive constant", self.b.loc)
            return self.b.const(np.eye(n), Matrix(n, n, el))
        if kwargs:
            raise KernelTypeError(f"{form.__name__}() takes no keyword arguments", self.b.loc)
        vals = self.values(args)
        if not vals or any(not v.type.is_vector or v.type != vals[0].type for v in vals):
            raise KernelTypeError(f"{form.__name__}() takes vectors of one type", self.b.loc)
        t = vals[0].type
        m = self.b.call("construct", vals, Matrix(len(vals), t.length, t.dtype))
        return m if form is lang.matrix_from_rows else self.b.call("transpose", [m])

    def construct_generic(self, is_vector: bool, args, kwargs):
        """``vector(..., length=n, dtype=t)`` and ``matrix(..., shape=(r, c), dtype=t)``."""
        allowed = {"length", "dtype"} if is_vector else {"shape", "dtype"}
        extra = set(kwargs) - allowed
        if extra:
            raise KernelTypeError(f"{'vector' if is_vector else 'matrix'}() got an unexpected "
                                  f"keyword argument '{sorted(extra)[0]}'", self.b.loc)
        dtype = kwargs.get("dtype")
        dtype = to_type(self.const_arg("dtype", dtype)) if dtype is not None else None
        typed = [a.type for a in args if isinstance(a, Value)]
        if dtype is None:
            bools = args and all(isinstance(a, Lit) and isinstance(a.value, bool) for a in args)
            dtype = typed[0].scalar if typed else bool_ if bools else float32
        if is_vector:
            n = kwargs.get("length")
            if n is not None:
                n = int(self.const_arg("length", n))
            elif len(args) == 1 and typed and typed[0].is_vector:
                n = typed[0].length
            elif not args:
                raise KernelTypeError("vector() with no values needs length=: the `length` "
                                      "argument must be specified when zero-initializing a "
                                      "vector", self.b.loc)
            else:
                n = len(args)
            target = Vector(n, dtype)
        else:
            shape = kwargs.get("shape")
            if shape is not None:
                shape = tuple(self.const_arg("shape", shape))
            elif len(args) == 1 and typed and typed[0].is_matrix:
                shape = typed[0].shape
            else:
                raise KernelTypeError("matrix() needs shape=(rows, cols): the `shape` argument "
                                      "must be specified when initializing a matrix by value",
                                      self.b.loc)
            target = Matrix(int(shape[0]), int(shape[1]), dtype)
            if len(args) == 1 and typed and typed[0].is_matrix and typed[0].shape != target.shape:
                # in Warp's words (as for vectors): the requested shape first
                raise KernelTypeError(
                    f"matrix(shape={target.shape}) cannot copy a {typed[0]}: incompatible matrix "
                    f"of shape {target.shape} given when copy constructing a matrix of shape "
                    f"{typed[0].shape}", self.b.loc)
        if len(args) == 1 and typed and not typed[0].is_scalar and typed[0].scalar != dtype:
            return self.b.cast(self.value(args[0]), target)
        return self.construct(target, args)

    # ---- funcs --------------------------------------------------------------------------------

    def call_func(self, func, args, kwargs):
        args = [self.value(a) if isinstance(a, _Tid) else a for a in args]  # f(kl.tid())
        chosen = self.resolve_overload(func, args, kwargs)
        if chosen is None:
            shown = ", ".join([self.describe_arg(a) for a in args]
                              + [f"{k}={self.describe_arg(v)}" for k, v in kwargs.items()])
            raise KernelTypeError(f"no overload of func '{func.key}' accepts ({shown})",
                                  self.b.loc)
        pyfunc, raw = chosen
        return self.inline_call(func, pyfunc, raw)

    def describe_arg(self, x) -> str:
        if isinstance(x, Value) or structs.is_structish(x):
            return str(x.type)
        if isinstance(x, Lit):
            return type(x.value).__name__ + " literal"
        return type(x).__name__

    def resolve_overload(self, func, args, kwargs):
        for strict in (True, False):
            found = []
            for pyfunc in func.overloads:
                raw = self.bind_call(pyfunc, args, kwargs)
                if raw is None:
                    continue
                patterns = annotated_types(pyfunc)
                if all(self.arg_fits(t, x, strict) for t, x in zip(patterns, raw)):
                    found.append((any(_has_any(t) for t in patterns), pyfunc, raw))
            if found:
                found.sort(key=lambda f: f[0])  # concrete before generic, else in order
                return found[0][1], found[0][2]
        return None

    def bind_call(self, pyfunc, args, kwargs):
        """The argument list of a call of ``pyfunc``, defaults filled in, or None."""
        spec = parse_function(pyfunc).tree.args
        if spec.vararg or spec.kwarg or spec.kwonlyargs:
            raise KernelSyntaxError(f"func '{pyfunc.__name__}' must have plain parameters",
                                    self.b.loc)
        names = [a.arg for a in spec.args]
        if len(args) > len(names):
            return None
        out = list(args) + [None] * (len(names) - len(args))
        for k, v in kwargs.items():
            if k not in names or out[names.index(k)] is not None:
                return None
            out[names.index(k)] = v
        defaults = pyfunc.__defaults__ or ()
        first_default = len(names) - len(defaults)
        for k, v in enumerate(out):
            if v is None:
                if k < first_default:
                    return None
                out[k] = self.from_python(defaults[k - first_default], names[k])
        return out

    def arg_fits(self, t: Type, x, strict: bool) -> bool:
        if isinstance(x, tuple) or isinstance(t, tuples.TuplePattern):
            if not isinstance(x, tuple):
                return False
            return t is ANY or isinstance(t, tuples.TuplePattern) and t.fits(
                x, lambda et, item: self.arg_fits(et, item, strict))
        if structs.is_structish(x):
            return t is ANY or x.type == t
        if isinstance(x, Lit):
            if t is ANY:
                return True
            if isinstance(t, ScalarSet):  # Int, Float, Scalar: the literal's own type
                return not isinstance(x.value, bool) and t.accepts(
                    int32 if isinstance(x.value, int) else float32)
            if not t.is_scalar:
                return False
            if isinstance(x.value, bool):
                return t == bool_
            if isinstance(x.value, int):
                return t.is_int or (not strict and t.is_float)
            return t.is_float
        if isinstance(x, (Value, ArrayRef)) or structs.is_structish(x):  # a struct: its own
            return t is ANY or matches(t, x.type)
            return t is ANY or matches(t, x.type)
        return False


def _has_any(t) -> bool:
    from ..types import is_generic
    return is_generic(t)


def _is_array_class(obj) -> bool:
    from ..runtime.array import array  # runtime arrays double as annotations
    return obj is array

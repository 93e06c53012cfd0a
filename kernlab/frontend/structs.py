"""Structs in kernels, flattened (see runtime/structs.py for the type and its instances).

The IR has no struct type: the frontend keeps a struct as a compile-time record of its
fields and lowers every use to the fields themselves.

- ``StructVal``: a struct value (a parameter, a local, a func's argument or result). Its
  scalar, vector and matrix fields are Vars named ``s.field`` (so the listing reads
  ``$s.dt``), array fields are array Values, nested structs are StructVals.
- ``StructArray``: an array of structs parameter, as one strided array per leaf field
  (``a.x``, ``a.inner.y``), views of the records' fields.
- ``StructElem``: ``a[i]`` of a StructArray: reading a field loads it from the field's
  array at the indices, writing one stores it there.

A struct parameter becomes one IR parameter per leaf field; the launch flattens the
instance the same way (runtime/struct_launch.py). Structs are values: ``t = s``
and passing s to a func copy the fields (arrays are shared, as arrays are).
"""
from __future__ import annotations

from ..errors import KernelAttributeError, KernelTypeError
from ..ir.nodes import Op, Param, Value, Var
from ..runtime.structs import StructType, is_struct, is_struct_array
from ..types import IndexedArrayType, is_generic


class StructVal:
    def __init__(self, type: StructType, name: str, fields: dict, depth: int):
        self.type, self.name, self.fields, self.depth = type, name, fields, depth

    def __repr__(self):
        return f"<struct {self.type.key} {self.name}>"


class StructArray:
    def __init__(self, type, name: str, fields: dict):
        self.type, self.name, self.fields = type, name, fields  # type: ArrayType of a struct

    @property
    def struct(self) -> StructType:
        return self.type.dtype


class ReshapedStructArray(StructArray):
    """``array(ptr=a.ptr, shape=s, dtype=S)`` of an array of structs a in a kernel: a's
    elements in row-major order seen with shape s; an index becomes an index of a (and so
    a bounds-checked access of each field's array), as for other arrays (views.Reshaped)."""

    def __init__(self, arr: StructArray, shape: list):
        super().__init__(arr.type, arr.name, arr.fields)
        self.orig, self.shape = arr, shape


class StructElem:
    def __init__(self, arr: StructArray, indices: list):
        self.arr, self.indices = arr, indices

    @property
    def type(self) -> StructType:
        return self.arr.struct

    @property
    def name(self) -> str:
        return self.arr.name + "[]"


STRUCTISH = (StructVal, StructArray, StructElem)


def is_structish(x) -> bool:
    return isinstance(x, STRUCTISH)


def is_struct_type(t) -> bool:
    return is_struct(t) or is_struct_array(t)


# ---- parameters ---------------------------------------------------------------------------

def bind_struct_param(lo, name: str, t, params: list):
    """Flatten kernel parameter ``name: t`` into IR parameters; returns what the name binds."""
    if is_struct_array(t):
        return _array_param(lo, name, t, params)
    fields = {}
    for fname, ft in t.fields.items():
        path = f"{name}.{fname}"
        if ft is None:
            fields[fname] = _Unknown(t, fname)
        elif is_struct_type(ft):  # a nested struct, or an array of structs
            fields[fname] = bind_struct_param(lo, path, ft, params)
        elif isinstance(ft, IndexedArrayType):  # its data and index arrays (views.py)
            fields[fname] = lo.indexed_param(path, ft, params)
        else:
            value = Value(ft, path)
            params.append(Param(path, ft, value))
            if ft.is_array:
                fields[fname] = value
            else:
                var = lo.b.new_var(ft, path)
                lo.b.store(var, value)
                fields[fname] = var
    return StructVal(t, name, fields, len(lo.b._blocks))


def _array_param(lo, name, t, params):
    from ..types import ArrayType
    fields = {}
    for fname, ft in t.dtype.fields.items():
        path = f"{name}.{fname}"
        if is_struct(ft):
            fields[fname] = _array_param(lo, path, ArrayType(ft, t.ndim), params)
        elif ft is None or ft.is_array:
            fields[fname] = _Unknown(t.dtype, fname, in_array=ft is not None)
        else:
            at = ArrayType(ft, t.ndim)
            value = Value(at, path)
            params.append(Param(path, at, value))
            fields[fname] = value
    return StructArray(t, name, fields)


class _Unknown:
    """A field a kernel cannot use: its annotation is no kernlab type, or it is an array
    inside an array of structs."""

    def __init__(self, st, fname, in_array=False):
        self.st, self.fname, self.in_array = st, fname, in_array

    def fail(self, loc):
        if self.in_array:
            raise KernelTypeError(f"field '{self.fname}' of {self.st.key} is an array; "
                                  "arrays of structs with array fields cannot be read in "
                                  "kernels", loc)
        raise KernelTypeError(f"field '{self.fname}' of struct {self.st.key} has annotation "
                              f"{self.st.annotations[self.fname]!r}, which is not a kernlab "
                              "type", loc)


def finish_signature(lo, user_params: list, n_flat: int) -> None:
    """Record the user-level signature where a launch must flatten struct arguments
    (n_flat: the IR parameters they give; hidden ones for unset array fields follow)."""
    func = lo.func
    if any(is_struct_type(t) or isinstance(t, IndexedArrayType) for _, t in user_params) \
            or len(func.params) > n_flat:
        func.struct_signature = list(user_params)
        func.struct_flat_count = n_flat


def unset_array(lo, sv: StructVal, fname: str, t) -> Value:
    """An array field a kernel-made struct never got: a hidden parameter the launch fills
    with an empty array (shape 0, like Warp's null array)."""
    path = f"{sv.name}.{fname}"
    value = Value(t, f"{path}_unset")
    lo.func.params.append(Param(value.name, t, value))
    sv.fields[fname] = value
    return value


# ---- construction and copies -------------------------------------------------------------

def new_struct(lo, t: StructType, name: str) -> StructVal:
    """A struct local with every field zero (arrays unset)."""
    fields = {}
    for fname, ft in t.fields.items():
        path = f"{name}.{fname}"
        if ft is None:
            fields[fname] = _Unknown(t, fname)
        elif is_struct(ft):
            fields[fname] = new_struct(lo, ft, path)
        elif ft.is_array:
            fields[fname] = None
        else:
            var = lo.b.new_var(ft, path)
            lo.b.store(var, lo.b.zeros(ft))
            fields[fname] = var
    return StructVal(t, name, fields, len(lo.b._blocks))


def construct(lo, t: StructType, args: list, kwargs: dict | None = None) -> StructVal:
    """``S()``, ``S(a, b, ...)`` (fields in declaration order) or ``S(x=a)`` in a kernel."""
    if len(args) > len(t.fields):
        raise KernelTypeError(f"{t.key}() takes at most {len(t.fields)} field value(s), got "
                              f"{len(args)}", lo.b.loc)
    sv = new_struct(lo, t, t.key)
    for fname, a in zip(t.fields, args):
        set_field(lo, sv, fname, a)
    for fname, a in (kwargs or {}).items():
        if fname not in t.fields or fname in list(t.fields)[:len(args)]:
            raise KernelTypeError(f"{t.key}() got an unexpected or repeated field '{fname}'",
                                  lo.b.loc)
        set_field(lo, sv, fname, a)
    return sv


def copy_struct(lo, src, name: str) -> StructVal:
    """A new local holding src's field values (src: a StructVal or an array element)."""
    if isinstance(src, StructArray):
        raise KernelTypeError(f"'{src.name}' is an array of {src.struct.key}; index it "
                              "first", lo.b.loc)
    dst = new_struct(lo, src.type, name)
    store_struct(lo, dst, src)
    return dst


def store_struct(lo, dst, src) -> None:
    """Every field of src written into dst (both StructVals or array elements)."""
    if not is_structish(src) or isinstance(src, StructArray) or src.type is not dst.type:
        what = src.type if is_structish(src) else _kind(src)
        raise KernelTypeError(f"cannot assign {what} to a struct of type {dst.type.key}",
                              lo.b.loc)
    for fname, ft in dst.type.fields.items():
        if ft is None:
            continue
        if isinstance(dst, StructElem) and ft.is_array:
            continue
        if isinstance(src, StructElem) and ft.is_array:
            continue
        if isinstance(src, StructVal) and ft.is_array and src.fields[fname] is None:
            continue
        set_field(lo, dst, fname, get_field(lo, src, fname))


def _kind(x) -> str:
    t = getattr(x, "type", None)
    return f"a {t}" if t is not None else "this value"


# ---- fields -----------------------------------------------------------------------------

def _lookup(lo, base, fname):
    st = base.struct if isinstance(base, StructArray) else base.type
    fields = base.arr.fields if isinstance(base, StructElem) else base.fields
    if fname not in fields:
        raise KernelAttributeError(f"`{fname}` is not an attribute of '{base.name}' "
                                   f"({st.__module__}.{st.key})", lo.b.loc)
    found = fields[fname]
    if isinstance(found, _Unknown):
        found.fail(lo.b.loc)
    return found, st.fields[fname]


def get_field(lo, base, fname: str):
    """``base.fname``: a Value, an array Value, or a nested struct."""
    if isinstance(base, ReshapedStructArray) and fname == "shape":
        return tuple(base.shape)
    if isinstance(base, StructArray):
        if fname == "shape":
            from .exprs import ShapeOf
            leaf = _first_leaf(base)
            if leaf is None:
                raise KernelTypeError(f"array '{base.name}' of an empty struct has no shape",
                                      lo.b.loc)
            return ShapeOf(leaf)
        raise KernelTypeError(f"'{base.name}' is an array of {base.struct.key}; index it "
                              f"before reading '.{fname}'", lo.b.loc)
    found, ft = _lookup(lo, base, fname)
    if isinstance(base, StructElem):
        if isinstance(found, StructArray):
            return StructElem(found, base.indices)
        return lo.b.emit(Op.LOAD, [found, *base.indices], ft, site=lo.site(found))
    if isinstance(found, Var):
        return lo.b.load(found, found.name)
    if found is None:  # an array field a kernel-made struct never got
        return unset_array(lo, base, fname, ft)
    return found


def _first_leaf(arr: StructArray):
    for f in arr.fields.values():
        if isinstance(f, StructArray):
            f = _first_leaf(f)
        if isinstance(f, Value):
            return f
    return None


def set_field(lo, base, fname: str, value) -> None:
    """``base.fname = value``."""
    if isinstance(base, StructArray):
        raise KernelTypeError(f"'{base.name}' is an array of {base.struct.key}; index it "
                              f"before writing '.{fname}'", lo.b.loc)
    found, ft = _lookup(lo, base, fname)
    if is_struct(ft):
        target = StructElem(found, base.indices) if isinstance(base, StructElem) else found
        return store_struct(lo, target, value)
    if ft.is_array:
        if isinstance(base, StructElem):
            raise KernelTypeError(f"array field '{fname}' of an array element cannot be set",
                                  lo.b.loc)
        if not isinstance(value, Value) or value.type != ft:
            raise KernelTypeError(f"field '{fname}' of {base.type.key} is an {ft}; cannot "
                                  f"assign {_kind(value)}", lo.b.loc)
        if len(lo.b._blocks) != base.depth:
            raise KernelTypeError(f"array field '{fname}' of '{base.name}' can only be set "
                                  "where the struct was made, not inside an if or a loop",
                                  lo.b.loc)
        base.fields[fname] = value
        return
    if is_structish(value):
        raise KernelTypeError(f"field '{fname}' of {base.type.key} is a {ft}; cannot "
                              f"assign a struct {value.type.key}", lo.b.loc)
    v = lo.value(value, ft.scalar)
    if v.type != ft and v.type.is_scalar and ft.is_scalar and v.type.is_float == ft.is_float:
        v = lo.b.cast(v, ft)
    if v.type != ft:
        raise KernelTypeError(f"cannot assign a {v.type} to field '{fname}' of "
                              f"{base.type.key}, which is a {ft}", lo.b.loc)
    if isinstance(base, StructElem):
        lo.b.emit(Op.STORE, [found, *base.indices, v], site=lo.site(found))
    else:
        lo.b.store(found, v)


def index(lo, arr: StructArray, indices: list) -> StructElem:
    if isinstance(arr, ReshapedStructArray):
        from .views import Reshaped
        leaf = _first_leaf(arr.orig)
        if leaf is None:
            raise KernelTypeError(f"array '{arr.name}' of an empty struct has no elements",
                                  lo.b.loc)
        return StructElem(arr.orig, lo.unflatten(Reshaped(leaf, arr.shape), indices))
    if len(indices) != arr.type.ndim:
        raise KernelTypeError(f"Incorrect number of indices specified for array indexing: "
                              f"array '{arr.name}' has {arr.type.ndim} dimension(s) but "
                              f"{len(indices)} index(es) were given", lo.b.loc)
    return StructElem(arr, indices)


# ---- names, funcs ------------------------------------------------------------------------

def assign_name(lo, name: str, value) -> None:
    """``name = <struct>``: a copy (a new local, or the fields of the existing one)."""
    current = lo.scope.names.get(name)
    if isinstance(value, StructArray):
        if current is not None:
            raise KernelTypeError(f"'{name}' already names a value; it cannot become an "
                                  "array", lo.b.loc)
        lo.scope.names[name] = value
        return
    if current is None:
        lo.scope.names[name] = copy_struct(lo, value, name)
        return
    if not isinstance(current, StructVal):
        raise KernelTypeError(f"cannot assign a struct {value.type.key} to '{name}', which "
                              f"is a {getattr(current, 'type', '?')}", lo.b.loc)
    store_struct(lo, current, value)


def bind_func_arg(lo, name: str, value):
    """A func's struct parameter: its own copy (arrays of structs are shared)."""
    if isinstance(value, StructArray):
        return value
    return copy_struct(lo, value, name)


def check_func_arg(lo, func, pname: str, t, value):
    if is_generic(t) and is_structish(value):  # an Any parameter takes the struct
        return value
    if not is_structish(value) or value.type != t and not (
            isinstance(value, StructArray) and value.type == t):
        raise KernelTypeError(f"argument '{pname}' of func '{func.__name__}' must be a {t}, "
                              f"not {_kind(value)}", lo.b.loc)
    return value


def store_return(lo, scope, value) -> None:
    """``return <struct>`` in a func: the result is a struct local shared by all returns."""
    if isinstance(value, StructArray):
        raise KernelTypeError("a func cannot return an array of structs", lo.b.loc)
    if scope.ret_var is None:
        scope.ret_var = new_struct(lo, value.type, f"{scope.src.name}_ret")
        scope.ret_var.depth = None  # array fields follow the returned value
    elif not isinstance(scope.ret_var, StructVal) or scope.ret_var.type is not value.type:
        raise KernelTypeError(f"this return gives a {value.type.key}, an earlier one "
                              f"something else", lo.b.loc)
    ret = scope.ret_var
    for fname, ft in value.type.fields.items():
        if ft is not None and ft.is_array and isinstance(value, StructVal):
            old, new = ret.fields[fname], value.fields[fname]
            if old is not None and new is not old:
                raise KernelTypeError(f"returns of '{scope.src.name}' give different arrays "
                                      f"for field '{fname}'", lo.b.loc)
            ret.fields[fname] = new
    depth, ret.depth = ret.depth, len(lo.b._blocks)
    try:
        store_struct(lo, ret, value)
    finally:
        ret.depth = depth

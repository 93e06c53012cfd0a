"""@kl.struct: user-defined record types of scalars, vectors, matrices, arrays and structs.

``@kl.struct class Model: dt: float; m: kl.array[float]`` turns the class into a
StructType, a kernel type like vec3: ``Model()`` makes a Python-side instance (an object
of ``Model.cls``) whose fields start at zero (arrays at None); a kernel may take it as a
parameter, construct one (``Model(0.1, m)``), read and write its fields and pass it to
funcs; ``kl.array(dtype=Model)`` holds a structured NumPy record per element.

Kernels see a struct flattened: the frontend (frontend/structs.py) turns a struct
parameter into one parameter per leaf field (``model.dt``, ``model.m``), a struct local
into one local per field, and an array of structs into one strided array per leaf field
(views of the records' fields, sharing memory). runtime/struct_launch.py does the same to
the values a launch is given, so backends, the tape and autodiff only ever meet scalars,
vectors, matrices and arrays.
"""
from __future__ import annotations

import math
import weakref

import numpy as np

from ..types import ArrayType, IndexedArrayType, Type, numpy_kind, to_type

_ARRAY_RECORD = np.dtype({"names": ["data", "grad", "shape", "strides", "ndim"],
                          "formats": ["u8", "u8", ("i4", 4), ("i4", 4), "i4"]}, align=True)


class StructType(Type):
    """The type @kl.struct makes of a class. Calling it makes an instance."""

    is_struct = True

    def __init__(self, cls, *class_statement):
        if class_statement:  # ``class Child(SomeStruct):`` calls StructType(name, bases, ns)
            raise RuntimeError(f"struct '{cls}' derives from a struct; Warp structs must be "
                               "defined as base classes")
        if any(isinstance(b, StructType) for b in cls.__bases__):
            raise RuntimeError(f"struct '{cls.__name__}' derives from a struct; Warp structs "
                               "must be defined as base classes")
        self.key = cls.__name__
        self.__qualname__ = cls.__qualname__
        self.__module__, self.__doc__ = cls.__module__, cls.__doc__
        self.fields: dict[str, Type | None] = {}
        self.annotations: dict = {}
        for name, ann in getattr(cls, "__annotations__", {}).items():
            ann = _evaluated(cls, ann)
            self.annotations[name] = ann
            self.fields[name] = field_type(ann)
        self.cls = type(cls.__name__, (StructInstance,),
                        {"_type": self, "_kl_type": self, "__qualname__": cls.__qualname__,
                         "__module__": cls.__module__, "__doc__": cls.__doc__})
        self._np = None

    # ---- a Type -------------------------------------------------------------------------

    @property
    def scalar(self) -> "StructType":
        """A struct is its own storage element (arrays store one record per element)."""
        return self

    @property
    def shape(self) -> tuple:
        return ()

    @property
    def np(self) -> np.dtype:
        """The NumPy record dtype, with C alignment (array fields as Warp-sized records)."""
        if self._np is None:
            names, formats = [], []
            for name, t in self.fields.items():
                names.append(name)
                formats.append(_field_np(self, name, t))
            self._np = np.dtype({"names": names, "formats": formats}, align=True)
        return self._np

    @property
    def nbytes(self) -> int:
        return self.np.itemsize

    def numpy_dtype(self) -> dict:
        dt = self.np
        return {"names": list(dt.names), "formats": [dt.fields[n][0] for n in dt.names],
                "offsets": [dt.fields[n][1] for n in dt.names], "itemsize": dt.itemsize}

    def __call__(self, *args, **kwargs):
        return self.cls(*args, **kwargs)

    def __eq__(self, other):
        return self is other

    __hash__ = object.__hash__

    def __repr__(self):
        return self.key

    __str__ = __repr__


def struct(cls) -> StructType:
    """Decorator: a class with annotated fields becomes a struct type (see the module)."""
    return StructType(cls)


def is_struct(t) -> bool:
    return isinstance(t, StructType)


def is_struct_array(t) -> bool:
    return isinstance(t, ArrayType) and isinstance(t.dtype, StructType)


def _evaluated(cls, ann):
    """A string annotation (``from __future__ import annotations``) as the object it names
    in the class's module; left as the string when it names nothing there."""
    if not isinstance(ann, str):
        return ann
    import sys
    module = sys.modules.get(cls.__module__)
    try:
        return eval(ann, dict(vars(module)) if module else {}, dict(vars(cls)))  # noqa: S307
    except Exception:  # the field is reported when a kernel uses it
        return ann


def field_type(ann):
    """The kernlab type of a field annotation; None for one kernlab does not know (the
    struct still defines; a kernel using the field reports it)."""
    from .array import array
    if isinstance(ann, StructType):
        return ann
    if isinstance(ann, array):
        return ann.type
    try:
        return to_type(ann)
    except (TypeError, ValueError):
        return None


def _field_np(st, name, t):
    if t is None:
        raise TypeError(f"field '{name}' of struct {st.key} has annotation "
                        f"{st.annotations[name]!r}, which is not a kernlab type")
    if isinstance(t, ArrayType):
        return _ARRAY_RECORD
    if isinstance(t, StructType):
        return t.np
    return (t.scalar.np, t.shape) if t.shape else t.np


# ---- Python-side instances ---------------------------------------------------------------

class StructInstance:
    """Base of every struct's instance class (``S.cls``): fields are attributes, checked
    and converted as they are set."""

    _type: StructType

    def __init__(self, *args, **kwargs):
        fields = self._type.fields
        if len(args) > len(fields):
            raise TypeError(f"{self._type.key}() takes at most {len(fields)} field value(s), "
                            f"got {len(args)}")
        for name in fields:
            object.__setattr__(self, name, _default(fields[name]))
        for name, value in zip(fields, args):
            setattr(self, name, value)
        for name, value in kwargs.items():
            if name not in fields:
                raise TypeError(f"{self._type.key} has no field '{name}'")
            setattr(self, name, value)

    def __setattr__(self, name, value):
        fields = self._type.fields
        if name not in fields:
            if name.startswith("_"):
                return object.__setattr__(self, name, value)
            raise AttributeError(f"struct {self._type.key} has no field '{name}' "
                                 f"(fields: {', '.join(fields) or 'none'})")
        t = fields[name]
        if isinstance(t, ArrayType):
            object.__setattr__(self, f"_{name}_grad",
                               getattr(value, "grad", None) if value is not None else None)
        object.__setattr__(self, name, convert_field(self._type, name, t, value))

    def __getattr__(self, name):
        if name == "grad":  # tape.gradients[s]: the struct of its arrays' gradients
            return grad_struct(self)
        raise AttributeError(f"struct {self._type.key} has no field '{name}'")

    def assign(self, other) -> None:
        """Copy every field of other (an instance of the same struct) into this one."""
        if not isinstance(other, self._type.cls):
            raise TypeError(f"cannot assign a {type(other).__name__} to a {self._type.key}")
        for name, t in self._type.fields.items():
            value = getattr(other, name)
            if isinstance(t, StructType):
                getattr(self, name).assign(value)
            else:
                setattr(self, name, value.copy() if isinstance(value, np.ndarray) else value)

    def to(self, device) -> "StructInstance":
        """A copy whose arrays (nested ones too) are on device."""
        out = self._type.cls()
        for name, t in self._type.fields.items():
            value = getattr(self, name)
            if isinstance(t, StructType) or (isinstance(t, ArrayType) and value is not None):
                value = value.to(device)
            setattr(out, name, value)
        return out

    def __ctype__(self) -> "StructInstance":
        """The value a launch takes for this struct (Warp hands out its C struct): a copy,
        so later changes to this instance do not reach a launch it was given to."""
        out = self._type.cls()
        out.assign(self)
        return out

    def numpy_value(self) -> np.void:
        """This instance as one record of ``S.np`` (arrays as pointer, shape and strides)."""
        rec = np.zeros((), self._type.np)
        for name, t in self._type.fields.items():
            value = getattr(self, name)
            if isinstance(t, StructType):
                rec[name] = value.numpy_value()
            elif isinstance(t, ArrayType):
                rec[name] = _array_record(value)
            elif t is not None:
                rec[name] = value
        return rec[()]

    def same_values(self, other) -> bool:
        """Whether other is an instance of the same struct with equal field values (the
        same arrays). Instances compare and hash by identity, as Warp's do."""
        return type(other) is type(self) and all(
            _same(getattr(self, n), getattr(other, n)) for n in self._type.fields)

    def __repr__(self):
        parts = []
        for name in self._type.fields:
            value = getattr(self, name)
            shown = value.tolist() if isinstance(value, (np.ndarray, np.generic)) else value
            parts.append(f"{name}={shown!r}")
        return f"{self._type.key}({', '.join(parts)})"


def grad_struct(inst: StructInstance) -> StructInstance:
    """An instance of the same struct holding the gradients of inst's arrays (None where an
    array has none); other fields zero."""
    out = inst._type.cls()
    for name, t in inst._type.fields.items():
        value = getattr(inst, name)
        if isinstance(t, StructType):
            object.__setattr__(out, name, grad_struct(value))
        elif isinstance(t, ArrayType) and value is not None:
            object.__setattr__(out, name, value.grad)
    return out


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, StructInstance):
        return a.same_values(b)
    if isinstance(a, (int, float, np.generic)):
        return a == b
    return a is b  # arrays: the same array


def _default(t):
    if t is None or isinstance(t, ArrayType):
        return None
    if isinstance(t, StructType):
        return t.cls()
    return t(0) if t.is_scalar else t()


def _vm_name(t) -> str:
    """A vector or matrix type's name with Warp's scalar suffix (vec3 -> vec3f)."""
    name = repr(t)
    if t.scalar.name == "float32" and not name.endswith(("f", "d", "h", ")")):
        return name + "f"
    return name


def convert_field(st: StructType, name: str, t, value):
    """value as field ``name`` of struct st stores it, or a TypeError naming the field."""
    if t is None or isinstance(t, IndexedArrayType):
        return _check_indexed(name, st.annotations.get(name), value)
    if isinstance(t, StructType):
        if value is None:
            return t.cls()
        if not isinstance(value, t.cls):
            raise TypeError(f"Struct field '{name}' expects a {t.key} instance, got "
                            f"{type(value).__name__}")
        return value
    if isinstance(t, ArrayType):
        return _check_array(name, t, value)
    if t.is_scalar:
        if value is None:
            return t(0)
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        if not isinstance(value, (bool, int, float, np.generic)):
            raise TypeError(f"Struct field '{name}' expects {t}, got {type(value).__name__}")
        return value
    if value is None:
        return t()
    if isinstance(value, (bool, int, float, np.generic)):
        raise TypeError(f"Struct field '{name}' expects {_vm_name(t)} but got a single value "
                        f"({type(value).__name__}); give all {math.prod(t.shape)} components")
    values = np.asarray(value)
    if numpy_kind(values.dtype) not in "biuf" or values.size != math.prod(t.shape):
        raise TypeError(f"Struct field '{name}' expects {_vm_name(t)}, got "
                        f"{type(value).__name__} of {values.size} value(s)")
    return t(values.astype(t.scalar.np).reshape(t.shape))  # as vec3(...) makes it


def _check_indexed(name, ann, value):
    """An indexedarray field (a kernel takes its data and index arrays)."""
    try:
        from .indexed import indexedarray
    except ImportError:  # pragma: no cover - the arrays lane's module
        return value
    if not isinstance(ann, indexedarray) or value is None:
        return value
    if not isinstance(value, indexedarray):
        raise TypeError(f"Struct field '{name}' expects a Warp indexed array, got "
                        f"{type(value).__name__}")
    if value.dtype != ann.dtype:
        raise TypeError(f"Struct field '{name}' expects dtype {ann.dtype}, got {value.dtype}")
    if value.ndim != ann.ndim:
        raise TypeError(f"Struct field '{name}' expects an array with {ann.ndim} dimension(s), "
                        f"got {value.ndim} dimension(s)")
    return value


def _check_array(name, t: ArrayType, value):
    from .array import array
    if value is None:
        return None
    if not isinstance(value, array) or value.is_annotation:
        raise TypeError(f"Struct field '{name}' expects a Warp array, got "
                        f"{type(value).__name__}")
    if value.dtype != t.dtype:
        raise TypeError(f"Struct field '{name}' expects dtype {t.dtype}, got {value.dtype}")
    if value.ndim != t.ndim:
        raise TypeError(f"Struct field '{name}' expects an array with {t.ndim} dimension(s), "
                        f"got {value.ndim} dimension(s)")
    return value


_RECORDED = weakref.WeakValueDictionary()  # data address -> array, for records read back


def _array_record(a) -> np.ndarray:
    rec = np.zeros((), _ARRAY_RECORD)
    if a is not None:
        if a.ptr:
            _RECORDED[a.ptr] = a
        rec["data"] = a.ptr
        rec["grad"] = a.grad.ptr if a.grad is not None else 0
        rec["shape"][: a.ndim] = a.shape
        rec["strides"][: a.ndim] = a.strides
        rec["ndim"] = a.ndim
    return rec


# ---- arrays of structs ------------------------------------------------------------------

def struct_storage(data, st: StructType, shape) -> np.ndarray:
    """Records for kl.array(data, dtype=st): data is a NumPy record array, a struct
    instance, or a (nested) list of instances or tuples."""
    if isinstance(data, np.ndarray) and data.dtype.names is not None:
        values = np.array(data, dtype=st.np, copy=True)
    else:
        values = _records(data, st)
    if shape is not None:
        from .array_convert import as_shape
        values = values.reshape(as_shape(shape))
    if values.ndim == 0:
        values = values.reshape(1)
    return values


def _records(data, st: StructType) -> np.ndarray:
    if isinstance(data, StructInstance):
        if not isinstance(data, st.cls):
            raise TypeError(f"an array of {st.key} cannot hold a {type(data).__name__}")
        return np.array(data.numpy_value(), dtype=st.np)
    if isinstance(data, (list, tuple)) and data and not isinstance(data[0], (int, float)):
        parts = [_records(x, st) for x in data]
        return np.stack(parts) if parts else np.zeros(0, st.np)
    if isinstance(data, (list, tuple)) and not data:
        return np.zeros(0, st.np)
    return np.array(tuple(data), dtype=st.np)


def record_to_instance(st: StructType, rec) -> StructInstance:
    """A Python instance holding a copy of one record's values (array fields left None)."""
    out = st.cls()
    for name, t in st.fields.items():
        if isinstance(t, StructType):
            object.__setattr__(out, name, record_to_instance(t, rec[name]))
        elif t is not None and not isinstance(t, ArrayType):
            value = rec[name]
            object.__setattr__(out, name, t(np.array(value)) if t.shape else t(value))
        elif isinstance(t, ArrayType) and int(rec[name]["data"]):
            object.__setattr__(out, name, _RECORDED.get(int(rec[name]["data"])))
    return out


def field_views(a, prefix: str):
    """(name, array) for every leaf field of an array of structs: strided views of the
    records' fields that share a's memory, version counter and gradient."""
    from .array import array
    st = a.dtype
    out = []
    for name, t in st.fields.items():
        label = f"{prefix}.{name}"
        data = _field_of(a._storage(), name)
        grad = _field_of(a.grad._storage(), name) if a.grad is not None else None
        vbox = _field_version(a._vbox, name)
        if isinstance(t, StructType):
            sub = array._wrap(data, t, a.device, None, vbox)
            if grad is not None:
                sub._grad = array._wrap(grad, t, a.device)
            out += field_views(sub, label)
        elif isinstance(t, ArrayType) or t is None:
            out.append((label, None))
        else:
            g = array._wrap(grad, t, a.device) if grad is not None else None
            out.append((label, array._wrap(data, t, a.device, g, vbox)))
    return out


class _FieldVersion(list):
    """The version counter of one field of an array of structs (an array's ``_vbox``):
    the field's own writes plus those counted for the whole array, so that a kernel
    writing one field does not make a read of another look stale to the tape."""

    def __init__(self, parent: list):
        super().__init__([0])
        self.parent = parent

    def __getitem__(self, k):
        own = list.__getitem__(self, k)
        return own + self.parent[0] if k == 0 else own

    def __setitem__(self, k, value):
        list.__setitem__(self, k, value - self.parent[0] if k == 0 else value)


def _field_version(vbox: list, name: str) -> _FieldVersion:
    """The persistent counter of field ``name``, kept beside the array's own (views of
    the array share both)."""
    if len(vbox) < 2:
        vbox.append({})
    boxes = vbox[1]
    if name not in boxes:
        boxes[name] = _FieldVersion(vbox)
    return boxes[name]


def _field_of(data, name: str):
    """The view of one field of every record: NumPy's, or the same on GPU memory."""
    if isinstance(data, np.ndarray):
        return data[name]
    from .storage import DeviceArray
    ftype, offset = data.dtype.fields[name][:2]
    inner, step = [], ftype.base.itemsize
    for n in reversed(ftype.shape):
        inner.append(step)
        step *= n
    return DeviceArray(data.buffer, data.offset + offset, data.shape + ftype.shape,
                       data.strides + tuple(reversed(inner)), ftype.base)


def struct_leaves(st: StructType, prefix: str):
    """(path, type) of every leaf field of struct st, depth first, in declaration order."""
    out = []
    for name, t in st.fields.items():
        label = f"{prefix}.{name}"
        if isinstance(t, StructType):
            out += struct_leaves(t, label)
        else:
            out.append((label, t))
    return out


def array_leaves(t: ArrayType, prefix: str):
    """(path, array type) of every leaf of an array of structs (see field_views)."""
    out = []
    for path, ft in struct_leaves(t.dtype, prefix):
        out.append((path, None if ft is None or isinstance(ft, ArrayType)
                    else ArrayType(ft, t.ndim)))
    return out


def element_record(value, st: StructType) -> np.ndarray:
    """value (an instance of st, or a record of st's dtype) as one record to fill with."""
    if isinstance(value, StructInstance):
        if not isinstance(value, st.cls):
            raise TypeError(f"an array of {st.key} cannot hold a {type(value).__name__}")
        return np.asarray(value.numpy_value(), dtype=st.np)
    return np.asarray(value, dtype=st.np)


def add_elements(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a + b, field by field where they are struct records (accumulating gradients of
    arrays of structs)."""
    if a.dtype.names is None:
        return a + b
    out = np.empty_like(a)
    for name in a.dtype.names:
        out[name] = add_elements(a[name], b[name])
    return out


def content_key(t) -> str:
    """A type as text that names a struct by its fields, recursively (not its identity)."""
    if isinstance(t, StructType):
        fields = ", ".join(f"{n}: {content_key(ft) if ft is not None else '?'}"
                           for n, ft in t.fields.items())
        return f"{t.key}{{{fields}}}"
    if isinstance(t, ArrayType):
        return f"array({content_key(t.dtype)}, ndim={t.ndim})"
    return repr(t)

"""Launching kernels that take structs: a struct argument becomes the values of its leaf
fields, in the order of the kernel's IR parameters (frontend/structs.py makes those), and
an array of structs becomes one strided view per leaf field (structs.field_views)."""
from __future__ import annotations

from ..types import ArrayType, IndexedArrayType
from .structs import (StructInstance, StructType, array_leaves, field_views, grad_struct,
                      is_struct_array)


def flatten_launch_args(kernel, inputs, outputs, device=None, adjoint=False):
    """The launch's inputs and outputs with every struct argument replaced by its leaf
    fields' values, in the order of the kernel's IR parameters (see frontend/structs.py);
    hidden parameters (array fields a kernel-made struct never got) get empty arrays."""
    from ..errors import LaunchError
    func = kernel.ir
    sig = func.struct_signature
    given = list(inputs) + list(outputs)
    if len(given) != len(sig):
        raise LaunchError(f"kernel '{kernel.key}' takes {len(sig)} argument(s) "
                          f"({', '.join(n for n, _ in sig)}), but {len(given)} were given in "
                          "inputs and outputs")
    dev = device if device is not None else _first_device(given)
    flat, n_in = [], 0
    for k, ((name, t), value) in enumerate(zip(sig, given)):
        flat += _leaf_values(kernel.key, name, t, value, dev, adjoint)
        if k < len(inputs):
            n_in = len(flat)
    handles = getattr(func, "handle_hidden", {})
    for p in func.params[func.struct_flat_count: len(func.params)]:
        if adjoint:
            flat.append(None)
        elif p.name in handles:  # a grid's or mesh's arrays, from the id its parameter got
            from ..handles import handle_arrays
            index, pname, part, kind = handles[p.name]
            flat.append(handle_arrays(kind, kernel.key, pname, flat[index])[part])
        else:
            flat.append(_empty(p.type, dev))
    return flat[:n_in], flat[n_in:]


def _first_device(values):
    from .array import array
    for v in values:
        if isinstance(v, array) and not v.is_annotation:
            return v.device
        if isinstance(v, StructInstance):
            for leaf in _instance_leaves(v):
                if isinstance(leaf, array):
                    return leaf.device
    return None


def _instance_leaves(inst):
    for name, t in inst._type.fields.items():
        value = getattr(inst, name)
        if isinstance(t, StructType):
            yield from _instance_leaves(value)
        else:
            yield value


def _empty(t: ArrayType, device):
    from .array import zeros
    return zeros((0,) * t.ndim, dtype=t.dtype, device=device)


def _indexed_values(kname, name, t, value, adjoint):
    """An indexedarray argument as the kernel's IR parameters take it: its data array,
    then one index array per axis (frontend/views.py Indexed). Its gradient (adjoint) is
    the data's gradient, at the same indices."""
    from ..errors import LaunchError
    from .indexed import indexedarray
    if adjoint:
        data = value.data if isinstance(value, indexedarray) else value
        return [data] + [None] * t.ndim
    if not isinstance(value, indexedarray) or value.is_annotation \
            or value.dtype != t.dtype or value.ndim != t.ndim:
        got = f"an indexedarray of {value.dtype} with {value.ndim} dimension(s)" \
            if isinstance(value, indexedarray) else type(value).__name__
        raise LaunchError(f"kernel '{kname}': parameter '{name}' ({t}) got {got}")
    return [value.data, *value.kernel_indices()]


def _leaf_values(kname, name, t, value, device, adjoint):
    from ..errors import LaunchError
    if isinstance(t, IndexedArrayType):
        return _indexed_values(kname, name, t, value, adjoint)
    if isinstance(t, StructType):
        if value is None and adjoint:
            return [None] * leaf_count(t)
        if not isinstance(value, t.cls):
            got = "None" if value is None else type(value).__name__
            raise LaunchError(f"kernel '{kname}': argument '{name}' expects {t.key} but got "
                              f"{got} (pass a {t.key}() instance)")
        out = []
        for fname, ft in t.fields.items():
            if ft is None:
                continue
            fvalue = getattr(value, fname)
            path = f"{name}.{fname}"
            if isinstance(ft, (StructType, IndexedArrayType)) or (
                    isinstance(ft, ArrayType) and isinstance(ft.dtype, StructType)):
                out += _leaf_values(kname, path, ft, fvalue, device, adjoint)
            elif isinstance(ft, ArrayType) and fvalue is None:
                out.append(None if adjoint else _empty(ft, device))
            else:
                out.append(fvalue)
        return out
    if isinstance(t, ArrayType) and isinstance(t.dtype, StructType):
        from .array import array
        n = sum(1 for _, at in array_leaves(t, name) if at is not None)
        if value is None and adjoint:
            return [None] * n
        if value is None:  # an unset array field: an empty array of the struct
            return [_empty(at, device) for _, at in array_leaves(t, name) if at is not None]
        if not isinstance(value, array) or value.dtype is not t.dtype or \
                value.ndim != t.ndim:
            got = f"an array of {value.dtype} with {value.ndim} dimension(s)" \
                if isinstance(value, array) else type(value).__name__
            raise LaunchError(f"kernel '{kname}': parameter '{name}' ({t.ndim}-d array of "
                              f"{t.dtype.key}) got {got}")
        return [v for _, v in field_views(value, name) if v is not None]
    return [value]


def flatten_launch(kernel, inputs, outputs, adj_inputs, adj_outputs, device, adjoint):
    """For kl.launch: (StructArgs, the flat arguments, how many are inputs, the flat
    adj_inputs and adj_outputs)."""
    from .device import get_device
    n_in, n = len(inputs), len(kernel.ir.struct_signature)
    user = list(inputs) + list(outputs)
    dev = get_device(device) if device is not None else _first_device(user)
    flat_in, flat_out = flatten_launch_args(kernel, inputs, outputs, dev)
    if adjoint and (adj_inputs is not None or adj_outputs is not None):
        adj_inputs, adj_outputs = flatten_launch_args(
            kernel, list(adj_inputs or [None] * n_in),
            list(adj_outputs or [None] * (n - n_in)), dev, True)
    return (StructArgs(kernel, user, dev or get_device(None)), flat_in + flat_out,
            len(flat_in), adj_inputs, adj_outputs)


def leaf_count(t) -> int:
    """How many IR parameters a user parameter of type t becomes."""
    if isinstance(t, StructType):
        return sum(leaf_count(ft) for ft in t.fields.values() if ft is not None)
    if is_struct_array(t):
        return sum(1 for _, at in array_leaves(t, "") if at is not None)
    if isinstance(t, IndexedArrayType):  # its data and one index array per axis
        return 1 + t.ndim
    return 1


class StructArgs:
    """The arguments of a launch as the user gave them, where some are structs: a Launch
    keeps them so that set_param_* take the user's indices and names, and each run
    flattens the structs again (a field changed after kl.launch(..., record_cmd=True) is
    seen by the next cmd.launch(), as in Warp)."""

    def __init__(self, kernel, values, device):
        self.kernel, self.values, self.device = kernel, list(values), device

    def _slots(self):
        """(flat start, flat count) of each user argument."""
        func, out, start = self.kernel.ir, [], 0
        for _, t in func.struct_signature:
            n = leaf_count(t)
            out.append((start, n))
            start += n
        return out

    def refresh(self, cmd) -> None:
        """Re-flatten every struct argument into cmd.params."""
        from .launch import convert_arg
        func = self.kernel.ir
        for (start, n), (name, t), v in zip(self._slots(), func.struct_signature,
                                            self.values):
            if isinstance(t, (StructType, IndexedArrayType)) or is_struct_array(t):
                leaves = _leaf_values(self.kernel.key, name, t, v, self.device, False)
                for k, leaf in enumerate(leaves):
                    cmd.params[start + k] = convert_arg(self.kernel.key, func.params[start + k],
                                                        leaf, self.device)

    def set(self, cmd, index: int, value) -> None:
        """cmd.set_param_at_index(index, value) with the user's index."""
        from ..errors import LaunchError
        from .launch import convert_arg
        sig = self.kernel.ir.struct_signature
        if not 0 <= index < len(sig):
            raise LaunchError(f"kernel '{self.kernel.key}' has no parameter at index {index}")
        name, t = sig[index]
        if isinstance(t, (StructType, IndexedArrayType)) or is_struct_array(t):
            _leaf_values(self.kernel.key, name, t, value, self.device, False)  # checks it
            self.values[index] = value
            self.refresh(cmd)
            return
        start = self._slots()[index][0]
        param = self.kernel.ir.params[start]
        cmd.params[start] = convert_arg(self.kernel.key, param, value, self.device,
                                        allow_none=param.type.is_array)
        self.values[index] = value

    def index_of(self, name: str):
        for k, (pname, _) in enumerate(self.kernel.ir.struct_signature):
            if pname == name:
                return k
        return None

    def record_gradients(self, tape) -> None:
        """tape.gradients[s] for each struct argument s: the struct of its gradients."""
        for v in self.values:
            if isinstance(v, StructInstance):
                tape.gradients[v] = grad_struct(v)

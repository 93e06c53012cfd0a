"""Launch arguments: each checked against the kernel's parameter and converted to what the
backend wants (kl.launch, kl.Launch's set_param_*, struct and tangent launches). A value
that does not fit is a LaunchError naming the kernel and the parameter, never a crash or a
silent conversion that loses data. The checks of the common cases are made once per kernel
(_plan); the short path of small launches (launch_short.py) has its own, narrower ones and
leaves everything else to these."""
from __future__ import annotations

import math

import numpy as np

from ..errors import LaunchError, LaunchValueError
from ..kernel import Kernel
from ..types import BoolValue, numpy_kind
from .array import array
from .device import get_device


_F32_MAX = float(np.finfo(np.float32).max)


def convert_arg(kernel_name: str, param, value, device, allow_none=False):
    """The value as the backend wants it for this parameter, or a LaunchError."""
    t, name = param.type, param.name

    def fail(what):
        return LaunchError(f"kernel '{kernel_name}': parameter '{name}' ({t}) {what}")

    if t.is_array:
        if value is None:  # a null array, as in Warp: `if a:` is False, and any access to
            return None    # it is out of bounds (its shape is all zeros)
        if isinstance(value, np.ndarray) and device.is_cpu \
                and value.dtype == t.dtype.scalar.np:  # Warp passes NumPy memory as it is
            value = array(value, dtype=t.dtype, copy=False)
        if not isinstance(value, array) or getattr(value, "is_annotation", False):
            hint = " — wrap it with kl.from_numpy(...)" if isinstance(value, np.ndarray) else ""
            raise fail(f"needs a kernlab array, got {type(value).__name__}{hint}")
        if value.dtype != t.dtype:
            raise fail(f"got an array of {value.dtype}")
        if value.ndim != t.ndim:
            raise fail(f"got an array with {value.ndim} dimension(s)")
        if value.device != device:
            raise fail(f"got an array on {value.device}, but the launch is on {device}")
        return value
    if isinstance(value, array):
        raise fail("got an array; this parameter takes a value")
    if t.is_scalar:
        if value is None and allow_none:
            return t.np.type(0)
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        return _scalar(t, value, fail)
    # vectors and matrices
    if value is None and allow_none:
        return np.zeros(t.shape, t.scalar.np)
    if isinstance(value, (int, float)) and value == 0 and allow_none:
        return np.zeros(t.shape, t.scalar.np)
    tname = getattr(t, "__name__", str(t))
    if value is None:
        raise LaunchValueError(f"kernel '{kernel_name}': parameter '{name}' ({t}) got None: "
                               f"Failed to convert argument for param {name} to {tname}")
    if isinstance(value, (bool, int, float, np.generic)) or \
            (isinstance(value, np.ndarray) and value.ndim == 0):
        raise LaunchError(f"kernel '{kernel_name}': parameter '{name}' ({t}): argument "
                          f"'{name}' expects {tname} but got a single value ({value!r}); pass "
                          f"all {math.prod(t.shape)} components")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise fail(f"got {type(value).__name__}") from None
    if numpy_kind(arr.dtype) not in "biuf":  # strings, complex numbers, objects
        raise fail(f"got {type(value).__name__}")
    if arr.size != math.prod(t.shape):  # a ValueError, as Warp's failed conversion
        raise LaunchValueError(f"kernel '{kernel_name}': parameter '{name}' ({t}) got a "
                               f"value with {arr.size} component(s)")
    return _exact(t.scalar, arr.reshape(t.shape), fail)


def _scalar(s, value, fail):
    """A Python or NumPy bool, int or float as scalar type s, or a LaunchError when that
    would lose more than rounding: a fraction or an out-of-range number for an integer, a
    finite number that overflows a float, anything but 0/1 for a bool."""
    if isinstance(value, (bool, np.bool_, BoolValue)):
        value = bool(value)
    elif isinstance(value, (int, np.integer)):
        value = int(value)
    elif isinstance(value, (float, np.floating)) or (
            isinstance(value, np.generic) and value.dtype.name == "bfloat16"):
        value = float(value)
    else:
        raise fail(f"got {type(value).__name__}")
    if s.kind == "f":
        try:
            value = float(value)
        except OverflowError:
            raise fail(f"got a number out of range for {s}") from None
        if s.bits == 32 and _F32_MAX < abs(value) < math.inf:
            _exact(s, np.asarray(value), fail)  # raises unless it rounds down to the max
        return s.np.type(value)
    if isinstance(value, float):
        if not value.is_integer():
            raise fail(f"got {value!r}, which is not an integer")
        value = int(value)
    if s.kind == "b":
        if value not in (0, 1):
            raise fail(f"got {value!r}; a bool takes True or False")
        return np.bool_(value)
    info = np.iinfo(s.np)
    if not info.min <= value <= info.max:
        raise fail(f"got {value!r}, out of range for {s}")
    return s.np.type(value)


def _exact(s, values: np.ndarray, fail) -> np.ndarray:
    """values (bool, int or float) as scalar type s, or a LaunchError when that would lose
    more than rounding: a fraction or an out-of-range number for an integer, a finite number
    that overflows a float, anything but 0/1 for a bool."""
    if s.kind == "f":
        wide = values.astype(np.float64)
        if s.bits == 32 and wide.size and np.max(np.abs(wide)) > _F32_MAX:
            with np.errstate(over="ignore"):
                out = wide.astype(s.np)
            if np.any(np.isinf(out) & np.isfinite(wide)):
                raise fail(f"got {_show(values)}, out of range for {s}")
        return wide.astype(s.np)
    if values.dtype.kind == "f":
        if not np.all(np.isfinite(values)) or np.any(values != np.trunc(values)):
            raise fail(f"got {_show(values)}, which is not an integer")
    if s.kind == "b":
        if np.any((values != 0) & (values != 1)):
            raise fail(f"got {_show(values)}; a bool takes True or False")
        return values.astype(s.np)
    info = np.iinfo(s.np)
    as_int = [int(v) for v in values.reshape(-1).tolist()]
    if any(not info.min <= v <= info.max for v in as_int):
        raise fail(f"got {_show(values)}, out of range for {s}")
    return values.astype(s.np)


def _show(values: np.ndarray) -> str:
    return repr(values[()].item()) if values.ndim == 0 else repr(values.tolist())


def _plan(kernel: Kernel) -> list:
    """One checker per parameter, made once per kernel: ``check(value, device)`` gives the
    value as the backend wants it. The common case (an array of the right type and device,
    a Python number for a scalar) is one test; anything else goes through convert_arg, which
    converts what it may and names the parameter in the error otherwise."""
    plan = kernel._launch_plan
    if plan is None:
        plan = kernel._launch_plan = [_checker(kernel.key, p) for p in kernel.params]
    return plan


def _checker(kernel_name, param):
    t = param.type

    def slow(value, device):
        return convert_arg(kernel_name, param, value, device)
    if t.is_array:
        dtype, ndim = t.dtype, t.ndim

        def check_array(value, device):
            if type(value) is array and value.dtype is dtype and value.ndim == ndim \
                    and value.device is device and value._data is not None:
                return value
            return slow(value, device)
        return check_array
    if t.is_scalar and t.scalar.kind == "f":
        make, limit = t.np.type, (_F32_MAX if t.bits == 32 else math.inf)

        def check_float(value, device):
            if type(value) is float and -limit <= value <= limit:
                return make(value)
            return slow(value, device)
        return check_float
    if t.is_scalar and t.scalar.kind in "iu":
        make, info = t.np.type, np.iinfo(t.np)
        low, high = int(info.min), int(info.max)

        def check_int(value, device):
            if type(value) is int and low <= value <= high:
                return make(value)
            return slow(value, device)
        return check_int
    return slow


def _launch_device(device, args):
    """The named device, else that of the first array argument, else the default one."""
    if device is not None:
        try:
            return get_device(device)
        except (TypeError, ValueError) as exc:
            raise LaunchValueError(f"kl.launch(device={device!r}): {exc}") from None
    for a in args:
        if isinstance(a, array) and not a.is_annotation:
            return a.device
    return get_device(None)


def _adjoint_args(kernel, params, args, adj_inputs, adj_outputs, n_in):
    adj = list(adj_inputs or [None] * n_in) + list(adj_outputs or [None] * (len(params) - n_in))
    if len(adj) != len(params):
        raise LaunchError(f"kernel '{kernel.key}': adj_inputs and adj_outputs must together "
                          f"have {len(params)} entries (one per parameter), got {len(adj)}")
    for p, a, g in zip(params, args, adj):
        if p.type.is_array and isinstance(g, array) and g.shape != a.shape:
            raise LaunchError(f"kernel '{kernel.key}': the adjoint of '{p.name}' has shape "
                              f"{g.shape}, but '{p.name}' has shape {a.shape}")
        if p.type.is_array and g is not None and not isinstance(g, array):
            if not (np.isscalar(g) and g == 0):
                raise LaunchError(f"kernel '{kernel.key}': the adjoint of array '{p.name}' "
                                  "must be an array or None")
    # an array's adjoint given as None (or 0) is its own gradient, as in Warp
    return [(a.grad if isinstance(a, array) else None)
            if (p.type.is_array and not isinstance(g, array)) else g
            for p, a, g in zip(params, args, adj)]

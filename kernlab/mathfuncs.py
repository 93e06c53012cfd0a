"""Warp's helper functions that are written in the kernel language itself: a sorted-array
search, Euler angles, swing-twist and frame changes of spatial vectors. Each is a generic
@kl.func, so every backend compiles it and reverse mode differentiates it through its body
like a user's function."""
from typing import Any

from .constants import HALF_PI
from .kernel import func
from .lang import FUNCTIONS
from .types import quat as _quat, spatial_vector as _spatial_vector, vec3 as _vec3, vec4 as _vec4

(_abs, _asin, _atan2, _clamp, _cross, _dot, _normalize, _quat_from_axis_angle, _quat_rotate,
 _sqrt) = (FUNCTIONS[n] for n in ("abs", "asin", "atan2", "clamp", "cross", "dot",
                                  "normalize", "quat_from_axis_angle", "quat_rotate",
                                  "sqrt"))
_get_p, _get_q, _top, _bottom = (FUNCTIONS[n] for n in (
    "transform_get_translation", "transform_get_rotation", "spatial_top", "spatial_bottom"))


@func
def lower_bound(arr: Any, arr_begin: int, arr_end: int, value: Any):
    """The first index in [arr_begin, arr_end) of the sorted 1-d ``arr`` whose element is
    >= value; arr_end - 1 when every element is smaller (as Warp's lower_bound)."""
    lo = arr_begin
    hi = arr_end - 1
    while lo < hi:
        mid = lo + (hi - lo) // 2
        if arr[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@func
def lower_bound(arr: Any, value: Any):  # noqa: F811 (an overload: the whole array)
    return lower_bound(arr, 0, arr.shape[0], value)


@func
def _axis_quat(axis: int, angle: float):
    a = _vec3(0.0, 0.0, 0.0)
    a[axis] = 1.0
    return _quat_from_axis_angle(a, angle)


@func
def quat_from_euler(e: Any, i: int, j: int, k: int):
    """The rotation by e[i] about the fixed axis i, then e[j] about j, then e[k] about k
    (extrinsic; e is indexed by axis). quat_from_euler(e, 0, 1, 2) is quat_rpy(*e)."""
    return _axis_quat(k, e[k]) * (_axis_quat(j, e[j]) * _axis_quat(i, e[i]))


@func
def quat_to_euler(q: Any, i: int, j: int, k: int):
    """Euler angles of q for the extrinsic axis sequence i, j, k, indexed by axis as
    quat_from_euler takes them. For a proper sequence (i == k) the third angle, also about
    axis i, is stored at e[3 - i - j]. Half-angle sums and differences from atan2s (the
    direct method of Bernardes and Viollet, 2022) keep it exact at and near gimbal lock."""
    m = 3 - i - j  # the axis that is neither i nor j
    wq = _vec4(q[3], q[0], q[1], q[2])  # scalar first, so axis n is component n + 1
    sign = float((i - j) * (j - m) * (m - i) / 2)  # +1 for a cyclic order, -1 otherwise
    a = wq[0]
    b = wq[i + 1]
    c = wq[j + 1]
    d = wq[m + 1] * sign
    if i != k:  # Tait-Bryan: rotate the problem into the proper form
        a = wq[0] - wq[j + 1]
        b = wq[i + 1] + wq[m + 1] * sign
        c = wq[j + 1] + wq[0]
        d = wq[m + 1] * sign - wq[i + 1]
    second = 2.0 * _atan2(_sqrt(c * c + d * d), _sqrt(a * a + b * b))
    plus = _atan2(b, a)
    minus = _atan2(d, c)
    third = plus + minus
    if i != k:
        third = third * sign
        second = second - HALF_PI
    e = _vec3(0.0, 0.0, 0.0)
    e[i] = plus - minus
    e[j] = second
    e[m] = third
    return e


@func
def quat_to_rpy(q: Any):
    """(roll, pitch, yaw) of q, the inverse of quat_rpy (extrinsic x, y, z), by the
    classic formulas: roll and yaw are inaccurate near pitch = +-pi/2 (quat_to_euler(q, 0,
    1, 2) is not)."""
    x = q[0]
    y = q[1]
    z = q[2]
    w = q[3]
    roll = _atan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y))
    pitch = _asin(_clamp(2.0 * (w * y - z * x), -1.0, 1.0))
    yaw = _atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    return _vec3(roll, pitch, yaw)


@func
def quat_twist(axis: Any, q: Any):
    """The twist of q about the unit ``axis`` (swing-twist decomposition): q's vector part
    projected on the axis, with q's scalar part, normalised."""
    p = _dot(_vec3(q[0], q[1], q[2]), axis) * axis
    return _normalize(_quat(p[0], p[1], p[2], q[3]))


@func
def quat_twist_angle_signed(axis: Any, q: Any):
    """The signed twist angle of q about the unit ``axis`` (right-hand rule): in [-pi, pi]
    when q[3] >= 0, so q and -q may differ by 2 pi."""
    return 2.0 * _atan2(_dot(axis, _vec3(q[0], q[1], q[2])), q[3])


@func
def quat_twist_angle(axis: Any, q: Any):
    """The unsigned twist angle of q about the unit ``axis``: in [0, pi] when q[3] >= 0."""
    return 2.0 * _atan2(_abs(_dot(axis, _vec3(q[0], q[1], q[2]))), q[3])


@func
def velocity_at_point(qd: Any, r: Any):
    """The linear velocity of the point at offset r of a body moving with the twist
    qd = (angular w, linear v): v + w x r."""
    return _bottom(qd) + _cross(_top(qd), r)


@func
def transform_twist(t: Any, x: Any):
    """The twist x = (w, v) seen from the frame t = (p, R): (R w, R v + p x R w)."""
    q = _get_q(t)
    w = _quat_rotate(q, _top(x))
    return _spatial_vector(w, _quat_rotate(q, _bottom(x)) + _cross(_get_p(t), w))


@func
def transform_wrench(t: Any, x: Any):
    """The wrench x = (torque, force) seen from the frame t = (p, R): (R tau + p x R f,
    R f)."""
    q = _get_q(t)
    f = _quat_rotate(q, _bottom(x))
    return _spatial_vector(_quat_rotate(q, _top(x)) + _cross(_get_p(t), f), f)

"""Every builtin in the registry: adjoints against float64 central differences, and kernel
values against the builtin's own NumPy reference.

The gradient test is parametrised over the registry itself, so a new differentiable builtin
fails here until it has a case in GRAD_CASES. Each case is a tiny kernel calling the builtin
(through a Python operator, kl.<name>, a constructor or component access), the domains of
its inputs, and a plain-NumPy formula of what the kernel computes, differentiated by
central differences.
"""
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import kernlab as kl
from kernlab.builtins import REGISTRY
from kernlab.lang import FUNCTIONS, PUBLIC_BUILTINS, BuiltinFunction

S, V, M = kl.float64, kl.vec3d, kl.mat33d
M2, M4 = kl.mat22d, kl.mat44d
V2, M23 = kl.types.vector(2, kl.float64), kl.types.matrix((2, 3), kl.float64)
N_THREADS = 3
EPS, RTOL, ATOL = 1e-6, 1e-5, 1e-7

# Internal helpers that no public name reaches; a kernel can still call them by record name.
inner = BuiltinFunction("inner")
vsum = BuiltinFunction("sum")
route_eq, route_min, route_max = (BuiltinFunction(n) for n in ("route_eq", "route_min",
                                                               "route_max"))


# --- kernel factories -------------------------------------------------------------------------

def _named(pyfunc, name):
    pyfunc.__name__ = pyfunc.__qualname__ = name
    return kl.kernel(pyfunc)


def call1(fn, ta, tout):
    def k(a: kl.array(dtype=ta), out: kl.array(dtype=tout)):
        i = kl.tid()
        out[i] = fn(a[i])
    return _named(k, f"call_{fn.__name__}")


def call2(fn, ta, tb, tout):
    def k(a: kl.array(dtype=ta), b: kl.array(dtype=tb), out: kl.array(dtype=tout)):
        i = kl.tid()
        out[i] = fn(a[i], b[i])
    return _named(k, f"call_{fn.__name__}")


def call3(fn, ta, tb, tc, tout):
    def k(a: kl.array(dtype=ta), b: kl.array(dtype=tb), c: kl.array(dtype=tc),
          out: kl.array(dtype=tout)):
        i = kl.tid()
        out[i] = fn(a[i], b[i], c[i])
    return _named(k, f"call_{fn.__name__}")


def binop(op, ta, tb, tout):
    """out[i] = a[i] <op> b[i] through the Python operator."""
    def add(a: kl.array(dtype=ta), b: kl.array(dtype=tb), out: kl.array(dtype=tout)):
        i = kl.tid()
        out[i] = a[i] + b[i]

    def sub(a: kl.array(dtype=ta), b: kl.array(dtype=tb), out: kl.array(dtype=tout)):
        i = kl.tid()
        out[i] = a[i] - b[i]

    def mul(a: kl.array(dtype=ta), b: kl.array(dtype=tb), out: kl.array(dtype=tout)):
        i = kl.tid()
        out[i] = a[i] * b[i]

    def matmul(a: kl.array(dtype=ta), b: kl.array(dtype=tb), out: kl.array(dtype=tout)):
        i = kl.tid()
        out[i] = a[i] @ b[i]

    def div(a: kl.array(dtype=ta), b: kl.array(dtype=tb), out: kl.array(dtype=tout)):
        i = kl.tid()
        out[i] = a[i] / b[i]

    def mod(a: kl.array(dtype=ta), b: kl.array(dtype=tb), out: kl.array(dtype=tout)):
        i = kl.tid()
        out[i] = a[i] % b[i]

    def power(a: kl.array(dtype=ta), b: kl.array(dtype=tb), out: kl.array(dtype=tout)):
        i = kl.tid()
        out[i] = a[i] ** b[i]

    pyfunc = {"+": add, "-": sub, "*": mul, "@": matmul, "/": div, "%": mod, "**": power}[op]
    return _named(pyfunc, f"op_{pyfunc.__name__}")


def negate(t):
    def neg(a: kl.array(dtype=t), out: kl.array(dtype=t)):
        i = kl.tid()
        out[i] = -a[i]
    return _named(neg, "op_neg")


def cast_to(t_in, t_out):
    def cast(a: kl.array(dtype=t_in), out: kl.array(dtype=t_out)):
        i = kl.tid()
        out[i] = t_out(a[i])
    return _named(cast, "cast")


@kl.kernel
def select_scalar(c: kl.array(dtype=S), a: kl.array(dtype=S), b: kl.array(dtype=S),
                  out: kl.array(dtype=S)):
    i = kl.tid()
    out[i] = kl.select(c[i] > 0.0, a[i], b[i])


@kl.kernel
def where_scalar(c: kl.array(dtype=S), a: kl.array(dtype=S), b: kl.array(dtype=S),
                 out: kl.array(dtype=S)):
    i = kl.tid()
    out[i] = kl.where(c[i] > 0.0, a[i], b[i])


@kl.kernel
def where_vector(c: kl.array(dtype=S), a: kl.array(dtype=V), b: kl.array(dtype=V),
                 out: kl.array(dtype=V)):
    i = kl.tid()
    out[i] = kl.where(c[i] > 0.0, a[i], b[i])


@kl.kernel
def construct_vec3d(a: kl.array(dtype=S), b: kl.array(dtype=S), c: kl.array(dtype=S),
                    out: kl.array(dtype=V)):
    i = kl.tid()
    out[i] = kl.vec3d(a[i], b[i], c[i])


@kl.kernel
def construct_splat(a: kl.array(dtype=S), out: kl.array(dtype=V)):
    i = kl.tid()
    out[i] = kl.vec3d(a[i])


@kl.kernel
def construct_mat22d(a: kl.array(dtype=S), b: kl.array(dtype=S), c: kl.array(dtype=S),
                     d: kl.array(dtype=S), out: kl.array(dtype=M2)):
    i = kl.tid()
    out[i] = kl.mat22d(a[i], b[i], c[i], d[i])


@kl.kernel
def construct_rows(a: kl.array(dtype=V), b: kl.array(dtype=V), c: kl.array(dtype=V),
                   out: kl.array(dtype=M)):
    i = kl.tid()
    out[i] = kl.mat33d(a[i], b[i], c[i])


@kl.kernel
def index_vector(v: kl.array(dtype=V), out: kl.array(dtype=S)):
    i = kl.tid()
    out[i] = v[i][1]


@kl.kernel
def index_attribute(v: kl.array(dtype=V), out: kl.array(dtype=S)):
    i = kl.tid()
    out[i] = v[i].z


@kl.kernel
def index_matrix_element(m: kl.array(dtype=M), out: kl.array(dtype=S)):
    i = kl.tid()
    out[i] = m[i][1, 2]


@kl.kernel
def index_matrix_row(m: kl.array(dtype=M), out: kl.array(dtype=V)):
    i = kl.tid()
    out[i] = m[i][1]


@kl.kernel
def insert_vector(v: kl.array(dtype=V), s: kl.array(dtype=S), out: kl.array(dtype=V)):
    i = kl.tid()
    q = v[i]
    q[1] = s[i] * 2.0
    out[i] = q


@kl.kernel
def insert_matrix_element(m: kl.array(dtype=M), s: kl.array(dtype=S), out: kl.array(dtype=M)):
    i = kl.tid()
    q = m[i]
    q[0, 2] = s[i] * 2.0
    out[i] = q


@kl.kernel
def insert_matrix_row(m: kl.array(dtype=M), r: kl.array(dtype=V), out: kl.array(dtype=M)):
    i = kl.tid()
    q = m[i]
    q[1] = r[i] * 2.0
    out[i] = q


# --- reference helpers ------------------------------------------------------------------------

@kl.kernel
def route_eq_same(a: kl.array(dtype=S), c: kl.array(dtype=S), out: kl.array(dtype=S)):
    i = kl.tid()
    out[i] = route_eq(a[i], a[i], c[i])


def _smoothstep(e0, e1, x):
    t = np.clip((x - e0) / (e1 - e0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def _erfinv(x):
    """erf(r) = x by Newton's method from 0 (erf is increasing and convex on either side)."""
    r = 0.0
    for _ in range(60):
        r -= (math.erf(r) - x) / (2.0 / math.sqrt(math.pi) * math.exp(-r * r))
    return r


def _insert(v, idx, s):
    out = np.array(v, dtype=np.float64)
    out[idx] = s
    return out


def _where(c, a, b):
    return a if c > 0 else b


def _select(c, a, b):  # Warp's order: (cond, value_if_false, value_if_true)
    return b if c > 0 else a


# --- the gradient cases -----------------------------------------------------------------------

U = (-1.0, 1.0)
POS = (0.2, 2.0)
AWAY_FROM_0 = "away_from_0"  # +-(0.2, 2.0)


@dataclass
class GradCase:
    variant: str
    kernel: object
    inputs: list          # (dtype, domain) per input array
    out: object           # the output array's dtype
    ref: Callable         # plain NumPy: one thread's input values -> its output value


def G(variant, kernel, inputs, out, ref):
    return GradCase(variant, kernel, inputs, out, ref)


def _unary_cases():
    domains = {"sin": U, "cos": U, "tan": (-1.2, 1.2), "asin": (-0.9, 0.9),
               "acos": (-0.9, 0.9), "atan": (-2.0, 2.0), "sinh": U, "cosh": U, "tanh": U,
               "exp": U, "log": (0.1, 3.0), "log2": (0.1, 3.0), "log10": (0.1, 3.0),
               "sqrt": (0.1, 3.0)}
    refs = {"sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin,
            "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
            "tanh": np.tanh, "exp": np.exp, "log": np.log, "log2": np.log2,
            "log10": np.log10, "sqrt": np.sqrt}
    return {name: [G("float64", call1(FUNCTIONS[name], S, S), [(S, dom)], S, refs[name])]
            for name, dom in domains.items()}


GRAD_CASES = {
    **_unary_cases(),
    "add": [G("scalar+scalar", binop("+", S, S, S), [(S, U), (S, U)], S, lambda a, b: a + b),
            G("vector+vector", binop("+", V, V, V), [(V, U), (V, U)], V, lambda a, b: a + b),
            G("matrix+matrix", binop("+", M, M, M), [(M, U), (M, U)], M, lambda a, b: a + b)],
    "sub": [G("scalar-scalar", binop("-", S, S, S), [(S, U), (S, U)], S, lambda a, b: a - b),
            G("vector-vector", binop("-", V, V, V), [(V, U), (V, U)], V, lambda a, b: a - b)],
    "neg": [G("scalar", negate(S), [(S, U)], S, lambda a: -a),
            G("vector", negate(V), [(V, U)], V, lambda a: -a)],
    "mul": [G("scalar*scalar", binop("*", S, S, S), [(S, U), (S, U)], S, lambda a, b: a * b),
            G("scalar*vector", binop("*", S, V, V), [(S, U), (V, U)], V, lambda a, b: a * b),
            G("vector*scalar", binop("*", V, S, V), [(V, U), (S, U)], V, lambda a, b: a * b),
            G("scalar*matrix", binop("*", S, M, M), [(S, U), (M, U)], M, lambda a, b: a * b),
            G("matrix*vector", binop("*", M, V, V), [(M, U), (V, U)], V, lambda a, b: a @ b),
            G("matrix@matrix", binop("@", M, M, M), [(M, U), (M, U)], M, lambda a, b: a @ b),
            G("mul(matrix, vector)", call2(kl.mul, M, V, V), [(M, U), (V, U)], V,
              lambda a, b: a @ b),
            G("mul(matrix2x3, vector)", call2(kl.mul, M23, V, V2), [(M23, U), (V, U)], V2,
              lambda a, b: a @ b)],
    "cw_mul": [G("vec3d", call2(kl.cw_mul, V, V, V), [(V, U), (V, U)], V, np.multiply),
               G("mat33d", call2(kl.cw_mul, M, M, M), [(M, U), (M, U)], M, np.multiply)],
    "cw_div": [G("vec3d", call2(kl.cw_div, V, V, V), [(V, U), (V, POS)], V, np.divide)],
    "div": [G("scalar/scalar", binop("/", S, S, S), [(S, U), (S, POS)], S, lambda a, b: a / b),
            G("scalar/vector", binop("/", S, V, V), [(S, U), (V, POS)], V, lambda a, b: a / b),
            G("vector/scalar", binop("/", V, S, V), [(V, U), (S, POS)], V, lambda a, b: a / b),
            G("matrix/scalar", binop("/", M, S, M), [(M, U), (S, POS)], M, lambda a, b: a / b)],
    "mod": [G("scalar%scalar", binop("%", S, S, S), [(S, (-3.0, 3.0)), (S, (0.6, 1.4))], S,
              np.fmod),
            G("vector%vector", binop("%", V, V, V), [(V, (-3.0, 3.0)), (V, (0.6, 1.4))], V,
              np.fmod)],
    "pow": [G("pow(x, y)", call2(kl.pow, S, S, S), [(S, POS), (S, (-2.0, 2.0))], S, np.power),
            G("x ** y", binop("**", S, S, S), [(S, POS), (S, (-2.0, 2.0))], S, np.power)],
    "atan2": [G("right half plane", call2(kl.atan2, S, S, S), [(S, U), (S, (0.2, 1.5))], S,
                np.arctan2),
              G("left half plane", call2(kl.atan2, S, S, S), [(S, POS), (S, (-1.5, -0.2))],
                S, np.arctan2)],
    "abs": [G("float64", call1(kl.abs, S, S), [(S, AWAY_FROM_0)], S, np.abs),
            G("vec3d", call1(kl.abs, V, V), [(V, AWAY_FROM_0)], V, np.abs)],
    "min": [G("float64", call2(kl.min, S, S, S), [(S, U), (S, U)], S, np.minimum),
            G("vec3d element-wise", call2(kl.min, V, V, V), [(V, U), (V, U)], V, np.minimum),
            G("min(vec3d)", call1(kl.min, V, S), [(V, U)], S, np.min)],
    "max": [G("float64", call2(kl.max, S, S, S), [(S, U), (S, U)], S, np.maximum),
            G("vec3d element-wise", call2(kl.max, V, V, V), [(V, U), (V, U)], V, np.maximum),
            G("max(vec3d)", call1(kl.max, V, S), [(V, U)], S, np.max)],
    "frac": [G("positive", call1(kl.frac, S, S), [(S, (1.1, 1.9))], S, lambda x: x - 1.0),
             G("negative", call1(kl.frac, S, S), [(S, (-2.9, -2.1))], S, lambda x: x + 2.0)],
    "erf": [G("float64", call1(kl.erf, S, S), [(S, (-2.0, 2.0))], S,
              np.vectorize(math.erf))],
    "erfc": [G("float64", call1(kl.erfc, S, S), [(S, (-2.0, 2.0))], S,
               np.vectorize(math.erfc))],
    "erfinv": [G("float64", call1(kl.erfinv, S, S), [(S, (-0.95, 0.95))], S,
                 np.vectorize(_erfinv))],
    "erfcinv": [G("float64", call1(kl.erfcinv, S, S), [(S, (0.05, 1.95))], S,
                  np.vectorize(lambda y: _erfinv(1.0 - y)))],
    "trace": [G(f"{t}", call1(kl.trace, t, S), [(t, U)], S, np.trace) for t in (M2, M)],
    "cbrt": [G("positive", call1(kl.cbrt, S, S), [(S, POS)], S, np.cbrt),
             G("negative", call1(kl.cbrt, S, S), [(S, (-2.0, -0.2))], S, np.cbrt)],
    "degrees": [G("float64", call1(kl.degrees, S, S), [(S, U)], S, lambda x: x * 180 / np.pi)],
    "radians": [G("float64", call1(kl.radians, S, S), [(S, U)], S, lambda x: x * np.pi / 180)],
    "copysign": [G("float64", call2(kl.copysign, S, S, S), [(S, AWAY_FROM_0),
                                                            (S, AWAY_FROM_0)], S,
                   lambda x, y: abs(x) * (1.0 if y > 0 else -1.0))],
    "clamp": [G("float64", call3(kl.clamp, S, S, S, S),
                [(S, (-1.5, 1.5)), (S, (-1.0, -0.2)), (S, (0.2, 1.0))], S, np.clip)],
    "lerp": [G("scalar", call3(kl.lerp, S, S, S, S), [(S, U), (S, U), (S, U)], S,
               lambda a, b, t: a * (1 - t) + b * t),
             G("matrix", call3(kl.lerp, M, M, S, M), [(M, U), (M, U), (S, U)], M,
               lambda a, b, t: a * (1 - t) + b * t),
             G("vector", call3(kl.lerp, V, V, S, V), [(V, U), (V, U), (S, U)], V,
               lambda a, b, t: a * (1 - t) + b * t),
             G("matrix", call3(kl.lerp, M, M, S, M), [(M, U), (M, U), (S, U)], M,
               lambda a, b, t: a * (1 - t) + b * t)],
    "smoothstep": [G("float64", call3(kl.smoothstep, S, S, S, S),
                     [(S, (-1.0, -0.5)), (S, (0.5, 1.0)), (S, (-1.2, 1.2))], S, _smoothstep)],
    "select": [G("scalar", select_scalar, [(S, U), (S, U), (S, U)], S, _select)],
    "where": [G("scalar", where_scalar, [(S, U), (S, U), (S, U)], S, _where),
              G("vector", where_vector, [(S, U), (V, U), (V, U)], V, _where)],
    "cast": [G("float32 -> float64", cast_to(kl.float32, S), [(kl.float32, U)], S,
               lambda a: a),
             G("float64 -> float32", cast_to(S, kl.float32), [(S, U)], kl.float32,
               lambda a: a)],
    "construct": [G("vec3d(a, b, c)", construct_vec3d, [(S, U)] * 3, V,
                    lambda a, b, c: np.array([a, b, c])),
                  G("vec3d(s)", construct_splat, [(S, U)], V, lambda a: np.full(3, a)),
                  G("mat33d(rows)", construct_rows, [(V, U)] * 3, M,
                    lambda a, b, c: np.stack([a, b, c]))],
    # reshape takes a target type, so no kernel can call it by name; the matrix constructor
    # from scalars is what uses it (its gradient reshapes the matrix adjoint to a vector).
    "reshape": [G("mat22d(a, b, c, d)", construct_mat22d, [(S, U)] * 4, M2,
                  lambda a, b, c, d: np.array([[a, b], [c, d]]))],
    "index": [G("v[1]", index_vector, [(V, U)], S, lambda v: v[1]),
              G("v.z", index_attribute, [(V, U)], S, lambda v: v[2]),
              G("m[1, 2]", index_matrix_element, [(M, U)], S, lambda m: m[1, 2]),
              G("m[1]", index_matrix_row, [(M, U)], V, lambda m: m[1])],
    "insert": [G("q[1] = s", insert_vector, [(V, U), (S, U)], V,
                 lambda v, s: _insert(v, 1, 2 * s)),
               G("q[0, 2] = s", insert_matrix_element, [(M, U), (S, U)], M,
                 lambda m, s: _insert(m, (0, 2), 2 * s)),
               G("q[1] = row", insert_matrix_row, [(M, U), (V, U)], M,
                 lambda m, r: _insert(m, 1, 2 * r))],
    "inner": [G("scalars", call2(inner, S, S, S), [(S, U), (S, U)], S, lambda a, b: a * b),
              G("vectors", call2(inner, V, V, S), [(V, U), (V, U)], S, np.dot),
              G("matrices", call2(inner, M, M, S), [(M, U), (M, U)], S,
                lambda a, b: np.sum(a * b))],
    "sum": [G("vector", call1(vsum, V, S), [(V, U)], S, np.sum),
            G("matrix", call1(vsum, M, S), [(M, U)], S, np.sum)],
    "dot": [G("vec3d", call2(kl.dot, V, V, S), [(V, U), (V, U)], S, np.dot)],
    "cross": [G("vec3d", call2(kl.cross, V, V, V), [(V, U), (V, U)], V, np.cross)],
    "length_sq": [G("vec3d", call1(kl.length_sq, V, S), [(V, U)], S, lambda v: v @ v)],
    "length": [G("vec3d", call1(kl.length, V, S), [(V, U)], S, np.linalg.norm)],
    "normalize": [G("vec3d", call1(kl.normalize, V, V), [(V, U)], V,
                    lambda v: v / np.linalg.norm(v))],
    "outer": [G("vec3d", call2(kl.outer, V, V, M), [(V, U), (V, U)], M, np.outer),
              G("vec2 x vec3", call2(kl.outer, V2, V, M23), [(V2, U), (V, U)], M23,
                np.outer)],
    "transpose": [G("mat33d", call1(kl.transpose, M, M), [(M, U)], M, np.transpose),
                  G("mat23", call1(kl.transpose, M23, kl.types.matrix((3, 2), S)),
                    [(M23, U)], kl.types.matrix((3, 2), S), np.transpose)],
    "determinant": [G(f"{t}", call1(kl.determinant, t, S), [(t, U)], S, np.linalg.det)
                    for t in (M2, M, M4)],
    # the adjoint's routers (atomic_min/max, min/max): linear in what they route, which the
    # tangent of an adjoint (Hessian-vector products) differentiates
    "route_eq": [G("equal", route_eq_same, [(S, U), (S, U)], S, lambda a, c: c)],
    "route_min": [G("scalar", call3(route_min, S, S, S, S), [(S, U), (S, U), (S, U)], S,
                    lambda a, b, c: c if a < b else 0.0)],
    "route_max": [G("scalar", call3(route_max, S, S, S, S), [(S, U), (S, U), (S, U)], S,
                    lambda a, b, c: c if a > b else 0.0)],
}

# Tile builtins act on tiles a block loads from arrays, not on one thread's values: their
# adjoints are checked against float64 finite differences in tests/test_tiles.py.
DIFFERENTIABLE = [name for name, b in REGISTRY.items() if b.differentiable and b.grad
                  and not name.startswith("tile")]
GRAD_PARAMS = [pytest.param(name, k, id=f"{name}-{case.variant}")
               for name in DIFFERENTIABLE for k, case in enumerate(GRAD_CASES.get(name, []))]
GRAD_PARAMS += [pytest.param(name, None, id=f"{name}-missing")
                for name in DIFFERENTIABLE if name not in GRAD_CASES]


# --- helpers ----------------------------------------------------------------------------------

def _shape(t):
    return tuple(getattr(t, "shape", ()) or ())


def _sample(rng, t, domain):
    shape = (N_THREADS, *_shape(t))
    if domain == AWAY_FROM_0:
        return rng.uniform(*POS, shape) * rng.choice([-1.0, 1.0], shape)
    return rng.uniform(*domain, shape)


def _apply(ref, values, out_t):
    """The reference over all threads, flattened, in float64."""
    rows = [np.asarray(ref(*(v[i] for v in values)), np.float64) for i in range(N_THREADS)]
    return np.stack(rows).reshape(N_THREADS, *_shape(out_t)).reshape(-1)


def _fd_jacobian(case, values):
    """{input index: d(flat output) / d(flat input)} by float64 central differences."""
    result = {}
    for k, v in enumerate(values):
        flat = v.reshape(-1)
        cols = []
        for j in range(flat.size):
            plus, minus = [x.copy() for x in values], [x.copy() for x in values]
            plus[k].reshape(-1)[j] += EPS
            minus[k].reshape(-1)[j] -= EPS
            cols.append((_apply(case.ref, plus, case.out) - _apply(case.ref, minus, case.out))
                        / (2 * EPS))
        result[k] = np.stack(cols, axis=1)
    return result


# --- gradients --------------------------------------------------------------------------------

@pytest.mark.parametrize("name, k", GRAD_PARAMS)
def test_builtin_adjoint_matches_finite_differences(backend, rng, name, k):
    if k is None:
        pytest.fail(f"differentiable builtin '{name}' has no case in GRAD_CASES")
    case = GRAD_CASES[name][k]
    inputs = [kl.array(_sample(rng, t, dom), dtype=t) for t, dom in case.inputs]
    values = [a.numpy().astype(np.float64) for a in inputs]  # as the kernel sees them
    out = kl.zeros(N_THREADS, dtype=case.out)
    ad = kl.autograd.jacobian(case.kernel, N_THREADS, inputs=inputs, outputs=[out])
    fd = _fd_jacobian(case, values)
    for j in range(len(inputs)):
        # Warp's layout: (output scalars, input elements) of the input's dtype
        assert ad[(j, 0)].dtype == case.inputs[j][0] and ad[(j, 0)].shape[1] == N_THREADS
        np.testing.assert_allclose(ad[(j, 0)].numpy().reshape(len(fd[j]), -1), fd[j],
                                   rtol=RTOL, atol=ATOL,
                                   err_msg=f"d out / d input {j} of {name} ({case.variant})")


def test_every_case_names_a_differentiable_builtin():
    assert set(GRAD_CASES) <= set(DIFFERENTIABLE)


# --- values against the NumPy reference -------------------------------------------------------

VALUE_CASES = {  # builtin -> (argument kinds, domains); s scalar, v vec3, m mat33, b bool
    "sin": ("s", [U]), "cos": ("s", [U]), "tan": ("s", [(-1.2, 1.2)]),
    "asin": ("s", [(-0.9, 0.9)]), "acos": ("s", [(-0.9, 0.9)]), "atan": ("s", [(-2, 2)]),
    "atan2": ("ss", [U, U]), "sinh": ("s", [U]), "cosh": ("s", [U]), "tanh": ("s", [U]),
    "exp": ("s", [U]), "log": ("s", [POS]), "log2": ("s", [POS]), "log10": ("s", [POS]),
    "sqrt": ("s", [POS]), "pow": ("ss", [POS, (-2, 2)]), "abs": ("s", [(-2, 2)]),
    "sign": ("s", [(-2, 2)]), "floor": ("s", [(-3, 3)]), "ceil": ("s", [(-3, 3)]),
    "round": ("s", [(-3, 3)]), "trunc": ("s", [(-3, 3)]), "min": ("ss", [U, U]),
    "max": ("ss", [U, U]), "clamp": ("sss", [(-1.5, 1.5), (-1, -0.2), (0.2, 1)]),
    "lerp": ("sss", [U, U, U]), "smoothstep": ("sss", [(-1, -0.5), (0.5, 1), (-1.2, 1.2)]),
    "where": ("bss", [None, U, U]), "select": ("bss", [None, U, U]), "dot": ("vv", [U, U]), "cross": ("vv", [U, U]),
    "length": ("v", [U]), "length_sq": ("v", [U]), "normalize": ("v", [U]),
    "outer": ("vv", [U, U]), "transpose": ("m", [U]), "determinant": ("m", [U]),
    "mul": ("mv", [U, U]),
    "rint": ("s", [(-3, 3)]), "frac": ("s", [(-3, 3)]), "cbrt": ("s", [(-3, 3)]),
    "degrees": ("s", [U]), "radians": ("s", [U]), "copysign": ("ss", [U, U]),
    "step": ("s", [U]), "nonzero": ("s", [U]), "isfinite": ("s", [U]), "isnan": ("s", [U]),
    "isinf": ("s", [U]), "argmin": ("v", [U]), "argmax": ("v", [U]), "add": ("ss", [U, U]),
    "sub": ("ss", [U, U]), "div": ("ss", [U, POS]), "mod": ("ss", [U, POS]),
    "floordiv": ("ss", [U, POS]), "neg": ("s", [U]),
    # integer-only builtins run on int32 (the float32 row) and int64 (the float64 row)
    "bit_and": ("ii", [(-50, 50)] * 2), "bit_or": ("ii", [(-50, 50)] * 2),
    "bit_xor": ("ii", [(-50, 50)] * 2), "lshift": ("ii", [(-50, 50), (0, 40)]),
    "rshift": ("ii", [(-50, 50), (0, 40)]), "invert": ("i", [(-50, 50)]),
    "cw_mul": ("vv", [U, U]), "cw_div": ("vv", [U, POS]),
    "erf": ("s", [(-2, 2)]), "erfc": ("s", [(-2, 2)]), "erfinv": ("s", [(-0.99, 0.99)]),
    "erfcinv": ("s", [(0.01, 1.99)]), "trace": ("m", [U]),
}
KIND_TYPES = {"float32": {"s": kl.float32, "v": kl.vec3, "m": kl.mat33, "b": kl.bool,
                          "i": kl.int32},
              "float64": {"s": kl.float64, "v": kl.vec3d, "m": kl.mat33d, "b": kl.bool,
                          "i": kl.int64}}
VALUE_RTOL = {"float32": 2e-6, "float64": 1e-13}


def _kernel_for(name, types, out_t):
    fn = FUNCTIONS[name]
    make = {1: call1, 2: call2, 3: call3}[len(types)]
    return make(fn, *types, out_t)


def _out_type(name, types):
    return REGISTRY[FUNCTIONS[name].builtin].resolve(types)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", PUBLIC_BUILTINS)
def test_builtin_value_matches_numpy_reference(backend, rng, name, dtype):
    if name not in VALUE_CASES:
        pytest.fail(f"public builtin '{name}' has no case in VALUE_CASES")
    kinds, domains = VALUE_CASES[name]
    types = [KIND_TYPES[dtype][kind] for kind in kinds]
    out_t = _out_type(name, types)
    arrays = []
    for kind, t, dom in zip(kinds, types, domains):
        data = rng.uniform(-1, 1, N_THREADS) > 0 if kind == "b" else \
            rng.integers(*dom, N_THREADS).astype(t.np) if kind == "i" else _sample(rng, t, dom)
        arrays.append(kl.array(data, dtype=t))
    out = kl.zeros(N_THREADS, dtype=out_t)
    kl.launch(_kernel_for(name, types, out_t), N_THREADS, inputs=arrays, outputs=[out])
    host = [a.numpy() for a in arrays]
    expected = np.stack([REGISTRY[name].numpy(*(h[i] for h in host)) for i in range(N_THREADS)])
    assert out.numpy().dtype == expected.dtype
    np.testing.assert_allclose(out.numpy(), expected, rtol=VALUE_RTOL[dtype], atol=1e-15)

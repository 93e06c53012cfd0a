"""The benchmark kernels, written once against the Warp API.

common.load_kernels(lib) executes this file as a fresh module whose global ``wp`` is either
kernlab or warp, so both compile exactly this source.
"""
wp = globals()["wp"]  # injected by common.load_kernels before this file runs


@wp.kernel
def saxpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def saxpy_out(x: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float),
              a: float):
    i = wp.tid()  # out of place: kernlab refuses the adjoint of an in-place update
    z[i] = a * x[i] + y[i]


@wp.kernel
def normalize_trig(p: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    v = wp.normalize(p[i])
    out[i] = wp.sin(v[0]) * wp.exp(v[1]) + wp.sqrt(wp.abs(v[2]) + 1.0)


@wp.kernel
def nbody(pos: wp.array(dtype=wp.vec3), mass: wp.array(dtype=float),
          acc: wp.array(dtype=wp.vec3), eps2: float):
    i = wp.tid()
    p = pos[i]
    a = wp.vec3(0.0, 0.0, 0.0)
    for j in range(pos.shape[0]):
        d = pos[j] - p
        r2 = wp.dot(d, d) + eps2
        inv_r = 1.0 / wp.sqrt(r2)
        a = a + (mass[j] * inv_r * inv_r * inv_r) * d
    acc[i] = a


@wp.kernel
def sum_into(x: wp.array(dtype=float), total: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(total, 0, x[i])


@wp.kernel
def histogram(bin_of: wp.array(dtype=wp.int32), bins: wp.array(dtype=wp.int32)):
    i = wp.tid()
    wp.atomic_add(bins, bin_of[i], 1)


@wp.kernel
def add_one(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] + 1.0

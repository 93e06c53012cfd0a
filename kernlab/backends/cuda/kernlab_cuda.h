// kernlab_cuda.h: device support for kernlab's generated CUDA kernels.
#pragma once

namespace kl {

// ---- scalar types, named as in kernlab ------------------------------------------------
typedef float float32;
typedef double float64;
typedef int int32;
typedef long long int64;
typedef unsigned int uint32;
typedef unsigned long long uint64;
typedef signed char int8;
typedef unsigned char uint8;
typedef short int16;
typedef unsigned short uint16;

// ---- float16: IEEE half storage, float32 arithmetic -------------------------------------
// Every rule of kernlab's half type lives here. A float16 holds the 16 bits of an IEEE half.
// Each operation converts its operands to float32 (exactly), computes there and rounds the
// result to the nearest half, ties to even: one rounding per operation, as in Warp and on
// kernlab's CPU backends. float32 and float64 convert to half rounded once (a double is not
// rounded to float first); integers and bool go through float32, which is exact for every
// integer a half can hold. A half converts to float32 (and so to anything) exactly.
// The three conversions are PTX instructions, so no CUDA header is needed; a build of this
// header for the host (tests/fake_cuda.py) defines kl_cvt_* itself before including it.
#if defined(__CUDA_ARCH__)
__device__ inline float kl_cvt_f32_f16(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ inline unsigned short kl_cvt_f16_f32(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
__device__ inline unsigned short kl_cvt_f16_f64(double d) {
    unsigned short h;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(d));
    return h;
}
#endif

// The operators float16 and bfloat16 share: the operands widened to float32 (exactly), the
// result rounded back by the type's float32 constructor; negation flips the sign bit.
#define KL_16BIT_ASSIGN_OPS(T)                                                           \
    __device__ T& operator+=(T o) { return *this = float32(*this) + float32(o); }        \
    __device__ T& operator-=(T o) { return *this = float32(*this) - float32(o); }        \
    __device__ T& operator*=(T o) { return *this = float32(*this) * float32(o); }        \
    __device__ T& operator/=(T o) { return *this = float32(*this) / float32(o); }
#define KL_16BIT_OPS(T)                                                                  \
    __device__ inline T operator+(T a, T b) { return float32(a) + float32(b); }          \
    __device__ inline T operator-(T a, T b) { return float32(a) - float32(b); }          \
    __device__ inline T operator*(T a, T b) { return float32(a) * float32(b); }          \
    __device__ inline T operator/(T a, T b) { return float32(a) / float32(b); }          \
    __device__ inline T operator-(T a) { return T::from_bits(a.bits ^ 0x8000u); }        \
    __device__ inline bool operator==(T a, T b) { return float32(a) == float32(b); }     \
    __device__ inline bool operator!=(T a, T b) { return float32(a) != float32(b); }     \
    __device__ inline bool operator<(T a, T b) { return float32(a) < float32(b); }       \
    __device__ inline bool operator<=(T a, T b) { return float32(a) <= float32(b); }     \
    __device__ inline bool operator>(T a, T b) { return float32(a) > float32(b); }       \
    __device__ inline bool operator>=(T a, T b) { return float32(a) >= float32(b); }

struct float16 {
    uint16 bits;

    float16() = default;   // trivial, so vec<N, float16> stays a plain value; float16() is 0
    __device__ float16(float32 x) : bits(kl_cvt_f16_f32(x)) {}
    __device__ float16(float64 x) : bits(kl_cvt_f16_f64(x)) {}
#define KL_HALF_FROM(U) __device__ float16(U x) : bits(kl_cvt_f16_f32(float32(x))) {}
    KL_HALF_FROM(bool) KL_HALF_FROM(int8) KL_HALF_FROM(uint8) KL_HALF_FROM(int16)
    KL_HALF_FROM(uint16) KL_HALF_FROM(int32) KL_HALF_FROM(uint32) KL_HALF_FROM(int64)
    KL_HALF_FROM(uint64)
#undef KL_HALF_FROM
    __device__ operator float32() const { return kl_cvt_f32_f16(bits); }
    __device__ static float16 from_bits(uint16 b) { float16 h; h.bits = b; return h; }

    KL_16BIT_ASSIGN_OPS(float16)
};
KL_16BIT_OPS(float16)

// ---- bfloat16: the upper 16 bits of a float32, float32 arithmetic ------------------------
// Every rule of kernlab's bfloat16 lives here, as float16's above: each operation converts
// its operands to float32 (exactly: a shift), computes there and rounds the result to the
// nearest bfloat16, ties to even (a NaN stays a quiet NaN), as Warp does. Other types
// convert through float32. The conversions are integer operations: no CUDA header or PTX
// instruction (cvt.bf16 needs sm_80) is needed.
__device__ inline float kl_bf16_widen(unsigned short b) {
    return __int_as_float((int)((unsigned int)b << 16));
}
__device__ inline unsigned short kl_bf16_narrow(float f) {
    unsigned int u = (unsigned int)__float_as_int(f);
    if (f != f) return (unsigned short)((u | 0x00400000u) >> 16);
    return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

struct bfloat16 {
    uint16 bits;

    bfloat16() = default;   // trivial, so vec<N, bfloat16> stays a plain value
    __device__ bfloat16(float32 x) : bits(kl_bf16_narrow(x)) {}
#define KL_BF16_FROM(U) __device__ bfloat16(U x) : bits(kl_bf16_narrow(float32(x))) {}
    KL_BF16_FROM(float64) KL_BF16_FROM(float16)
    KL_BF16_FROM(bool) KL_BF16_FROM(int8) KL_BF16_FROM(uint8) KL_BF16_FROM(int16)
    KL_BF16_FROM(uint16) KL_BF16_FROM(int32) KL_BF16_FROM(uint32) KL_BF16_FROM(int64)
    KL_BF16_FROM(uint64)
#undef KL_BF16_FROM
    __device__ operator float32() const { return kl_bf16_widen(bits); }
    __device__ static bfloat16 from_bits(uint16 b) { bfloat16 h; h.bits = b; return h; }

    KL_16BIT_ASSIGN_OPS(bfloat16)
};
KL_16BIT_OPS(bfloat16)
#undef KL_16BIT_ASSIGN_OPS
#undef KL_16BIT_OPS

template <bool B, typename T = void> struct enable_if_t_ {};
template <typename T> struct enable_if_t_<true, T> { typedef T type; };
template <bool B> using when = typename enable_if_t_<B, int>::type;

// Infinity and NaN for constants that hold them.
template <typename T> __device__ inline T kl_inf();
template <> __device__ inline float kl_inf<float>() { return __int_as_float(0x7f800000); }
template <> __device__ inline double kl_inf<double>() {
    return __longlong_as_double(0x7ff0000000000000LL);
}
template <> __device__ inline float16 kl_inf<float16>() { return float16::from_bits(0x7c00); }
template <> __device__ inline bfloat16 kl_inf<bfloat16>() { return bfloat16::from_bits(0x7f80); }
template <typename T> __device__ inline T kl_nan();
template <> __device__ inline float16 kl_nan<float16>() { return float16::from_bits(0x7e00); }
template <> __device__ inline bfloat16 kl_nan<bfloat16>() { return bfloat16::from_bits(0x7fc0); }
template <> __device__ inline float kl_nan<float>() { return __int_as_float(0x7fc00000); }
template <> __device__ inline double kl_nan<double>() {
    return __longlong_as_double(0x7ff8000000000000LL);
}

// ---- scalar math: half, float and double overloads -----------------------------------------
// (half: the float function of the exact float value, rounded to half)
#define KL_FLOAT_UNARY(name, f32)                                           \
    __device__ inline float16 name(float16 x) { return ::f32(float32(x)); } \
    __device__ inline bfloat16 name(bfloat16 x) { return ::f32(float32(x)); } \
    __device__ inline float32 name(float32 x) { return ::f32(x); }         \
    __device__ inline float64 name(float64 x) { return ::name(x); }
KL_FLOAT_UNARY(sin, sinf)
KL_FLOAT_UNARY(cos, cosf)
KL_FLOAT_UNARY(tan, tanf)
KL_FLOAT_UNARY(asin, asinf)
KL_FLOAT_UNARY(acos, acosf)
KL_FLOAT_UNARY(atan, atanf)
KL_FLOAT_UNARY(sinh, sinhf)
KL_FLOAT_UNARY(cosh, coshf)
KL_FLOAT_UNARY(tanh, tanhf)
KL_FLOAT_UNARY(exp, expf)
KL_FLOAT_UNARY(log, logf)
KL_FLOAT_UNARY(log2, log2f)
KL_FLOAT_UNARY(log10, log10f)
KL_FLOAT_UNARY(sqrt, sqrtf)
KL_FLOAT_UNARY(floor, floorf)
KL_FLOAT_UNARY(ceil, ceilf)
KL_FLOAT_UNARY(round, roundf)   // half away from zero
KL_FLOAT_UNARY(trunc, truncf)
KL_FLOAT_UNARY(erf, erff)
KL_FLOAT_UNARY(erfc, erfcf)
#undef KL_FLOAT_UNARY

__device__ inline float16 atan2(float16 y, float16 x) { return ::atan2f(float32(y), float32(x)); }
__device__ inline float16 pow(float16 x, float16 y) { return ::powf(float32(x), float32(y)); }
__device__ inline float16 copysign(float16 x, float16 y) {
    return float16::from_bits((x.bits & 0x7fffu) | (y.bits & 0x8000u));
}
__device__ inline bool isfinite(float16 x) { return (x.bits & 0x7c00u) != 0x7c00u; }
__device__ inline float16 abs(float16 x) { return float16::from_bits(x.bits & 0x7fffu); }
__device__ inline bfloat16 atan2(bfloat16 y, bfloat16 x) {
    return ::atan2f(float32(y), float32(x));
}
__device__ inline bfloat16 pow(bfloat16 x, bfloat16 y) { return ::powf(float32(x), float32(y)); }
__device__ inline bfloat16 copysign(bfloat16 x, bfloat16 y) {
    return bfloat16::from_bits((x.bits & 0x7fffu) | (y.bits & 0x8000u));
}
__device__ inline bool isfinite(bfloat16 x) { return (x.bits & 0x7f80u) != 0x7f80u; }
__device__ inline bfloat16 abs(bfloat16 x) { return bfloat16::from_bits(x.bits & 0x7fffu); }

__device__ inline float32 atan2(float32 y, float32 x) { return ::atan2f(y, x); }
__device__ inline float64 atan2(float64 y, float64 x) { return ::atan2(y, x); }
__device__ inline float32 pow(float32 x, float32 y) { return ::powf(x, y); }
__device__ inline float64 pow(float64 x, float64 y) { return ::pow(x, y); }
__device__ inline float32 copysign(float32 x, float32 y) { return ::copysignf(x, y); }
__device__ inline float64 copysign(float64 x, float64 y) { return ::copysign(x, y); }
__device__ inline bool isfinite(float32 x) { return ::isfinite(x); }
__device__ inline bool isfinite(float64 x) { return ::isfinite(x); }

__device__ inline float32 abs(float32 x) { return ::fabsf(x); }
__device__ inline float64 abs(float64 x) { return ::fabs(x); }
__device__ inline int32 abs(int32 x) { return x < 0 ? int32(0u - uint32(x)) : x; }
__device__ inline int64 abs(int64 x) { return x < 0 ? int64(0ull - uint64(x)) : x; }
__device__ inline uint32 abs(uint32 x) { return x; }

// ---- launch plumbing: grid size and the status word --------------------------------------
struct kl_dims {
    int64 size;       // threads in the launch: the product of shape[0..ndim)
    int64 shape[4];   // the launch grid, row-major
    int32 ndim;
    int32 pad;
};

// Coordinate d of the flat thread index in the row-major launch grid.
__device__ inline int64 kl_coord(const kl_dims& dims, int64 flat, int d) {
    int64 stride = 1;
    for (int k = dims.ndim - 1; k > d; --k) stride *= dims.shape[k];
    return d < dims.ndim ? (flat / stride) % dims.shape[d] : 0;
}

struct kl_status {
    int32 flag;    // 0: fine; 1: an index out of bounds; 2: the adjoint stack ran out of heap;
                   // 3: verify_fp: a NaN or Inf stored (index: the flat element)
    int32 site;    // which access (Function.sites)
    int32 axis;
    int32 param;   // which kernel parameter the array is
    int64 index;
};

// The first failure of a launch wins; later ones leave the record alone.
__device__ inline void kl_report(kl_status* s, int32 code, int32 site, int32 axis,
                                 int32 param, int64 index) {
    if (atomicCAS(&s->flag, 0, code) == 0) {
        s->site = site;
        s->axis = axis;
        s->param = param;
        s->index = index;
    }
}

// ---- arrays: base pointer, shape and byte strides ------------------------------------------
template <typename T> struct array_t {
    T* data;
    int64 shape[4];
    int64 strides[4];   // in bytes

    __device__ T& at(int64 i) const {
        return *(T*)((char*)data + i * strides[0]);
    }
    __device__ T& at(int64 i, int64 j) const {
        return *(T*)((char*)data + i * strides[0] + j * strides[1]);
    }
    __device__ T& at(int64 i, int64 j, int64 k) const {
        return *(T*)((char*)data + i * strides[0] + j * strides[1] + k * strides[2]);
    }
    __device__ T& at(int64 i, int64 j, int64 k, int64 l) const {
        return *(T*)((char*)data + i * strides[0] + j * strides[1] + k * strides[2]
                     + l * strides[3]);
    }
};

// Bounds checks: true when every index is inside its axis; otherwise the first bad axis is
// reported (site, axis, param, index) and the caller ends the thread.
__device__ inline bool kl_index_ok(kl_status* s, int32 site, int32 param, int32 axis, int64 i,
                                   int64 n) {
    if (i >= 0 && i < n) return true;
    kl_report(s, 1, site, axis, param, i);
    return false;
}
template <typename T> __device__ inline bool kl_axis_ok(kl_status* s, int32 site, int32 param,
                                                        const array_t<T>& a, int32 axis,
                                                        int64 i) {
    return kl_index_ok(s, site, param, axis, i, a.shape[axis]);
}
template <typename T> __device__ inline bool kl_check(kl_status* s, int32 site, int32 param,
                                                      const array_t<T>& a, int64 i) {
    return kl_axis_ok(s, site, param, a, 0, i);
}
template <typename T> __device__ inline bool kl_check(kl_status* s, int32 site, int32 param,
                                                      const array_t<T>& a, int64 i, int64 j) {
    return kl_axis_ok(s, site, param, a, 0, i) && kl_axis_ok(s, site, param, a, 1, j);
}
template <typename T> __device__ inline bool kl_check(kl_status* s, int32 site, int32 param,
                                                      const array_t<T>& a, int64 i, int64 j,
                                                      int64 k) {
    return kl_axis_ok(s, site, param, a, 0, i) && kl_axis_ok(s, site, param, a, 1, j)
        && kl_axis_ok(s, site, param, a, 2, k);
}
template <typename T> __device__ inline bool kl_check(kl_status* s, int32 site, int32 param,
                                                      const array_t<T>& a, int64 i, int64 j,
                                                      int64 k, int64 l) {
    return kl_axis_ok(s, site, param, a, 0, i) && kl_axis_ok(s, site, param, a, 1, j)
        && kl_axis_ok(s, site, param, a, 2, k) && kl_axis_ok(s, site, param, a, 3, l);
}

// A vector or matrix component at a runtime index (no array: param -1), against the
// extents of the vector (n) or matrix (n, m).
__device__ inline bool kl_components_ok(kl_status* s, int32 site, int64 i, int64 n) {
    return kl_index_ok(s, site, -1, 0, i, n);
}
__device__ inline bool kl_components_ok(kl_status* s, int32 site, int64 i, int64 n, int64 j,
                                        int64 m) {
    return kl_index_ok(s, site, -1, 0, i, n) && kl_index_ok(s, site, -1, 1, j, m);
}

// ---- vectors and matrices: small value types ---------------------------------------------
// Functions over every vec<N, T> / mat<R, C, T>:
#define KL_VEC_FN template <int N, typename T> __device__ inline
#define KL_MAT_FN template <int R, int C, typename T> __device__ inline
template <int N, typename T> struct vec {
    T c[N];

    __device__ vec() : c{} {}
    __device__ explicit vec(T s) { for (int i = 0; i < N; ++i) c[i] = s; }
    template <typename... A, when<(sizeof...(A) == N && N > 1)> = 0>
    __device__ vec(A... a) : c{T(a)...} {}
    template <typename U> __device__ explicit vec(const vec<N, U>& o) {
        for (int i = 0; i < N; ++i) c[i] = T(o.c[i]);
    }
    // A negative component index counts from the end, as in NumPy.
    __device__ T& operator[](int i) { return c[i < 0 ? i + N : i]; }
    __device__ const T& operator[](int i) const { return c[i < 0 ? i + N : i]; }
};

template <int R, int C, typename T> struct mat {
    vec<C, T> r[R];   // rows, so the layout is row-major like NumPy's

    __device__ mat() : r{} {}
    __device__ explicit mat(T s) { for (int i = 0; i < R; ++i) r[i] = vec<C, T>(s); }
    template <typename... A, when<(sizeof...(A) == R * C && R * C > 1)> = 0>
    __device__ mat(A... a) {
        T v[R * C] = {T(a)...};
        for (int i = 0; i < R; ++i)
            for (int j = 0; j < C; ++j) r[i].c[j] = v[i * C + j];
    }
    template <typename... A, when<(sizeof...(A) + 1 == R && R > 1)> = 0>
    __device__ mat(const vec<C, T>& row0, const A&... rows) : r{row0, rows...} {}
    template <typename U> __device__ explicit mat(const mat<R, C, U>& o) {
        for (int i = 0; i < R; ++i) r[i] = vec<C, T>(o.r[i]);
    }
    __device__ vec<C, T>& operator[](int i) { return r[i < 0 ? i + R : i]; }
    __device__ const vec<C, T>& operator[](int i) const { return r[i < 0 ? i + R : i]; }
};

typedef vec<2, float32> vec2;   typedef vec<2, float64> vec2d;
typedef vec<3, float32> vec3;   typedef vec<3, float64> vec3d;
typedef vec<4, float32> vec4;   typedef vec<4, float64> vec4d;
typedef mat<2, 2, float32> mat22;   typedef mat<2, 2, float64> mat22d;
typedef mat<3, 3, float32> mat33;   typedef mat<3, 3, float64> mat33d;
typedef mat<4, 4, float32> mat44;   typedef mat<4, 4, float64> mat44d;

// ---- integer-safe arithmetic ---------------------------------------------------------------
// Division and remainder truncate toward zero (C); a zero divisor gives 0 instead of trapping.
template <typename T> __device__ inline T kl_div(T a, T b) { return a / b; }
template <typename T> __device__ inline T kl_int_div(T a, T b) {
    if (b == 0) return 0;
    if (b == T(-1)) return T(uint64(0) - uint64(a));   // wraps for the most negative a
    return a / b;
}
__device__ inline int32 kl_div(int32 a, int32 b) { return kl_int_div(a, b); }
__device__ inline int64 kl_div(int64 a, int64 b) { return kl_int_div(a, b); }
__device__ inline uint32 kl_div(uint32 a, uint32 b) { return b == 0 ? 0u : a / b; }

__device__ inline float16 kl_mod(float16 a, float16 b) { return fmodf(float32(a), float32(b)); }
__device__ inline bfloat16 kl_mod(bfloat16 a, bfloat16 b) {
    return fmodf(float32(a), float32(b));
}
__device__ inline float32 kl_mod(float32 a, float32 b) { return fmodf(a, b); }
__device__ inline float64 kl_mod(float64 a, float64 b) { return ::fmod(a, b); }
template <typename T> __device__ inline T kl_int_mod(T a, T b) {
    return (b == 0 || b == T(-1)) ? T(0) : a % b;
}
__device__ inline int32 kl_mod(int32 a, int32 b) { return kl_int_mod(a, b); }
__device__ inline int64 kl_mod(int64 a, int64 b) { return kl_int_mod(a, b); }
__device__ inline uint32 kl_mod(uint32 a, uint32 b) { return b == 0 ? 0u : a % b; }

// // floors (Warp 1.19, like Python): floor(a / b) for floats; signed integers round the
// truncated quotient down when it is inexact and the signs differ.
__device__ inline float16 kl_floordiv(float16 a, float16 b) { return floor(a / b); }
__device__ inline bfloat16 kl_floordiv(bfloat16 a, bfloat16 b) { return floor(a / b); }
__device__ inline float32 kl_floordiv(float32 a, float32 b) { return floor(a / b); }
__device__ inline float64 kl_floordiv(float64 a, float64 b) { return floor(a / b); }
template <typename T> __device__ inline T kl_int_floordiv(T a, T b) {
    T q = kl_int_div(a, b), r = kl_int_mod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? T(q - 1) : q;
}
__device__ inline int32 kl_floordiv(int32 a, int32 b) { return kl_int_floordiv(a, b); }
__device__ inline int64 kl_floordiv(int64 a, int64 b) { return kl_int_floordiv(a, b); }
__device__ inline uint32 kl_floordiv(uint32 a, uint32 b) { return kl_div(a, b); }
// the other integer widths: the same rules (without these, / of int8 would be C's, which
// traps on a zero divisor, and uint64 would match no overload)
#define KL_SIGNED_DIVISION(T)                                                      \
    __device__ inline T kl_div(T a, T b) { return kl_int_div(a, b); }              \
    __device__ inline T kl_mod(T a, T b) { return kl_int_mod(a, b); }              \
    __device__ inline T kl_floordiv(T a, T b) { return kl_int_floordiv(a, b); }
#define KL_UNSIGNED_DIVISION(T)                                                    \
    __device__ inline T kl_div(T a, T b) { return b == 0 ? T(0) : T(a / b); }      \
    __device__ inline T kl_mod(T a, T b) { return b == 0 ? T(0) : T(a % b); }      \
    __device__ inline T kl_floordiv(T a, T b) { return kl_div(a, b); }
KL_SIGNED_DIVISION(int8) KL_SIGNED_DIVISION(int16)
KL_UNSIGNED_DIVISION(uint8) KL_UNSIGNED_DIVISION(uint16) KL_UNSIGNED_DIVISION(uint64)
#undef KL_SIGNED_DIVISION
#undef KL_UNSIGNED_DIVISION

// ---- casts ------------------------------------------------------------------------------
// Float to integer saturates (infinities too) and NaN gives 0, like LLVM's fptosi.sat; a
// half goes through its exact float32 value.
template <typename To, typename From> struct kl_caster {
    __device__ static To run(From x) { return To(x); }
};
template <typename To, typename From>
__device__ inline To kl_float_to_int(From x, To lo, To hi) {
    if (x != x) return 0;  // NaN
    From t = trunc(x);
    if (t <= From(lo)) return lo;
    if (t >= From(hi)) return hi;
    return To(t);
}
#define KL_FLOAT_TO_INT(To, From, lo, hi)                                       \
    template <> struct kl_caster<To, From> {                                    \
        __device__ static To run(From x) { return kl_float_to_int<To>(x, lo, hi); } \
    };
KL_FLOAT_TO_INT(int32, float32, -2147483647 - 1, 2147483647)
KL_FLOAT_TO_INT(int32, float64, -2147483647 - 1, 2147483647)
KL_FLOAT_TO_INT(uint32, float32, 0u, 4294967295u)
KL_FLOAT_TO_INT(uint32, float64, 0u, 4294967295u)
KL_FLOAT_TO_INT(int64, float32, -9223372036854775807LL - 1, 9223372036854775807LL)
KL_FLOAT_TO_INT(int64, float64, -9223372036854775807LL - 1, 9223372036854775807LL)
KL_FLOAT_TO_INT(uint64, float32, 0ull, 18446744073709551615ull)
KL_FLOAT_TO_INT(uint64, float64, 0ull, 18446744073709551615ull)
KL_FLOAT_TO_INT(int8, float32, int8(-128), int8(127))
KL_FLOAT_TO_INT(int8, float64, int8(-128), int8(127))
KL_FLOAT_TO_INT(uint8, float32, uint8(0), uint8(255))
KL_FLOAT_TO_INT(uint8, float64, uint8(0), uint8(255))
KL_FLOAT_TO_INT(int16, float32, int16(-32768), int16(32767))
KL_FLOAT_TO_INT(int16, float64, int16(-32768), int16(32767))
KL_FLOAT_TO_INT(uint16, float32, uint16(0), uint16(65535))
KL_FLOAT_TO_INT(uint16, float64, uint16(0), uint16(65535))
#undef KL_FLOAT_TO_INT
template <typename To> struct kl_caster<To, float16> {
    __device__ static To run(float16 x) { return kl_caster<To, float32>::run(float32(x)); }
};
template <typename To> struct kl_caster<To, bfloat16> {
    __device__ static To run(bfloat16 x) { return kl_caster<To, float32>::run(float32(x)); }
};
template <int N, typename U, typename V> struct kl_caster<vec<N, U>, vec<N, V>> {
    __device__ static vec<N, U> run(const vec<N, V>& x) {
        vec<N, U> out;
        for (int i = 0; i < N; ++i) out.c[i] = kl_caster<U, V>::run(x.c[i]);
        return out;
    }
};
template <int R, int C, typename U, typename V> struct kl_caster<mat<R, C, U>, mat<R, C, V>> {
    __device__ static mat<R, C, U> run(const mat<R, C, V>& x) {
        mat<R, C, U> out;
        for (int i = 0; i < R; ++i) out.r[i] = kl_caster<vec<C, U>, vec<C, V>>::run(x.r[i]);
        return out;
    }
};
template <typename To, typename From> __device__ inline To kl_cast(const From& x) {
    return kl_caster<To, From>::run(x);
}

// ---- vector and matrix operators ---------------------------------------------------------
KL_VEC_FN vec<N, T> operator+(const vec<N, T>& a, const vec<N, T>& b) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = a.c[i] + b.c[i]; return out;
}
KL_VEC_FN vec<N, T> operator-(const vec<N, T>& a, const vec<N, T>& b) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = a.c[i] - b.c[i]; return out;
}
KL_VEC_FN vec<N, T> operator-(const vec<N, T>& a) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = -a.c[i]; return out;
}
KL_VEC_FN vec<N, T> operator*(const vec<N, T>& a, T s) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = a.c[i] * s; return out;
}
KL_VEC_FN vec<N, T> operator*(T s, const vec<N, T>& a) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = s * a.c[i]; return out;
}
KL_VEC_FN vec<N, T> operator/(const vec<N, T>& a, T s) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = kl_div(a.c[i], s); return out;
}

KL_MAT_FN mat<R, C, T> operator+(const mat<R, C, T>& a, const mat<R, C, T>& b) {
    mat<R, C, T> out; for (int i = 0; i < R; ++i) out.r[i] = a.r[i] + b.r[i]; return out;
}
KL_MAT_FN mat<R, C, T> operator-(const mat<R, C, T>& a, const mat<R, C, T>& b) {
    mat<R, C, T> out; for (int i = 0; i < R; ++i) out.r[i] = a.r[i] - b.r[i]; return out;
}
KL_MAT_FN mat<R, C, T> operator-(const mat<R, C, T>& a) {
    mat<R, C, T> out; for (int i = 0; i < R; ++i) out.r[i] = -a.r[i]; return out;
}
KL_MAT_FN mat<R, C, T> operator*(const mat<R, C, T>& a, T s) {
    mat<R, C, T> out; for (int i = 0; i < R; ++i) out.r[i] = a.r[i] * s; return out;
}
KL_MAT_FN mat<R, C, T> operator*(T s, const mat<R, C, T>& a) {
    mat<R, C, T> out; for (int i = 0; i < R; ++i) out.r[i] = s * a.r[i]; return out;
}
KL_MAT_FN mat<R, C, T> operator/(const mat<R, C, T>& a, T s) {
    mat<R, C, T> out; for (int i = 0; i < R; ++i) out.r[i] = a.r[i] / s; return out;
}
// Matrix-vector and matrix-matrix products (kernlab's mul and the * operator).
KL_MAT_FN vec<R, T> operator*(const mat<R, C, T>& m, const vec<C, T>& v) {
    vec<R, T> out;
    for (int i = 0; i < R; ++i) {
        T acc = m.r[i].c[0] * v.c[0];
        for (int k = 1; k < C; ++k) acc += m.r[i].c[k] * v.c[k];
        out.c[i] = acc;
    }
    return out;
}
// v * M: the row vector v^T M, as Warp
KL_MAT_FN vec<C, T> operator*(const vec<R, T>& v, const mat<R, C, T>& m) {
    vec<C, T> out;
    for (int j = 0; j < C; ++j) {
        T acc = v.c[0] * m.r[0].c[j];
        for (int k = 1; k < R; ++k) acc += v.c[k] * m.r[k].c[j];
        out.c[j] = acc;
    }
    return out;
}
template <int R, int K, int C, typename T>
__device__ inline mat<R, C, T> operator*(const mat<R, K, T>& a, const mat<K, C, T>& b) {
    mat<R, C, T> out;
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) {
            T acc = a.r[i].c[0] * b.r[0].c[j];
            for (int k = 1; k < K; ++k) acc += a.r[i].c[k] * b.r[k].c[j];
            out.r[i].c[j] = acc;
        }
    return out;
}

// sign(0) is 1, as in Warp.
template <typename T> __device__ inline T kl_sign(T x) { return x < T(0) ? T(-1) : T(1); }

// min / max follow C's fmin / fmax (a NaN operand is missing), as Warp; clamp(x, lo, hi) is
// min(max(lo, x), hi). Element-wise on vectors; min(v) / max(v) reduce one.
template <typename T> __device__ inline T kl_min(T a, T b) { return a <= b ? a : (b == b ? b : a); }
template <typename T> __device__ inline T kl_max(T a, T b) { return a >= b ? a : (b == b ? b : a); }
template <typename T> __device__ inline T kl_clamp(T x, T lo, T hi) {
    return kl_min(kl_max(lo, x), hi);
}
// asin / acos take their argument through this first, as Warp (a NaN becomes -1)
template <typename T> __device__ inline T kl_unit_clamp(T x) { return kl_clamp(x, T(-1), T(1)); }
template <typename T> __device__ inline T kl_route_min(T a, T b, T adj) {
    return (a == a && (b != b || a < b)) ? adj : T(0);
}
template <typename T> __device__ inline T kl_route_max(T a, T b, T adj) {
    return (a == a && (b != b || a > b)) ? adj : T(0);
}
template <typename T> __device__ inline T kl_route_eq(T a, T b, T adj) {
    return (a == b || (a != a && b != b)) ? adj : T(0);
}
// erfinv: Giles' polynomial, then two Newton steps on erf, in double (see builtins/special.py)
__device__ inline double kl_erfinv_d(double x) {
    double ax = x < 0 ? -x : x;
    if (!(ax < 1.0)) return ax == 1.0 ? (x < 0 ? -kl_inf<double>() : kl_inf<double>())
                                      : kl_nan<double>();
    double w = -log((1.0 - x) * (1.0 + x)), p;
    if (w < 5.0) {
        w -= 2.5;
        p = 2.81022636e-08; p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w; p = 0.00021858087 + p * w; p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w; p = 0.246640727 + p * w; p = 1.50140941 + p * w;
    } else {
        w = sqrt(w) - 3.0;
        p = -0.000200214257; p = 0.000100950558 + p * w; p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w; p = 0.00573950773 + p * w; p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w; p = 1.00167406 + p * w; p = 2.83297682 + p * w;
    }
    double r = p * x;
    for (int k = 0; k < 2; ++k)
        r -= (erf(r) - x) / (1.1283791670955126 * exp(-r * r));
    return r;
}
template <typename T> __device__ inline T kl_erfinv(T x) { return T(kl_erfinv_d(double(x))); }
template <typename T> __device__ inline T kl_erfcinv(T y) {
    return T(kl_erfinv_d(1.0 - double(y)));
}
template <typename T> __device__ inline T kl_step(T x) { return x < T(0) ? T(1) : T(0); }
template <typename T> __device__ inline T kl_nonzero(T x) { return x == T(0) ? T(0) : T(1); }
template <typename T> __device__ inline T kl_frac(T x) { return x - trunc(x); }
template <typename T> __device__ inline T kl_degrees(T x) { return x * T(57.29577951308232); }
template <typename T> __device__ inline T kl_radians(T x) { return x * T(0.017453292519943295); }
template <typename T> __device__ inline bool kl_isnan(T x) { return x != x; }
template <typename T> __device__ inline bool kl_isinf(T x) {
    return x == kl_inf<T>() || x == -kl_inf<T>();
}
template <typename T> __device__ inline bool kl_isfinite(T x) { return x == x && !kl_isinf(x); }
#define KL_INT_TESTS(T) \
    __device__ inline bool kl_isfinite(T) { return true; } \
    __device__ inline bool kl_isnan(T) { return false; } \
    __device__ inline bool kl_isinf(T) { return false; }
KL_INT_TESTS(int8) KL_INT_TESTS(uint8) KL_INT_TESTS(int16) KL_INT_TESTS(uint16)
KL_INT_TESTS(int32) KL_INT_TESTS(uint32) KL_INT_TESTS(int64) KL_INT_TESTS(uint64)
// shifts: the count is masked to the promoted width, as on the CPU
template <typename T> __device__ inline T kl_lshift(T a, T b) {
    return T(a << (b & (sizeof(T) < 4 ? 31 : 8 * sizeof(T) - 1)));
}
template <typename T> __device__ inline T kl_rshift(T a, T b) {
    return T(a >> (b & (sizeof(T) < 4 ? 31 : 8 * sizeof(T) - 1)));
}

// bit operations on integer vectors, component by component
KL_VEC_FN vec<N, T> kl_lshift(const vec<N, T>& a, const vec<N, T>& b) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = kl_lshift(a.c[i], b.c[i]); return out;
}
KL_VEC_FN vec<N, T> kl_rshift(const vec<N, T>& a, const vec<N, T>& b) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = kl_rshift(a.c[i], b.c[i]); return out;
}
KL_VEC_FN vec<N, T> operator&(const vec<N, T>& a, const vec<N, T>& b) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = T(a.c[i] & b.c[i]); return out;
}
KL_VEC_FN vec<N, T> operator|(const vec<N, T>& a, const vec<N, T>& b) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = T(a.c[i] | b.c[i]); return out;
}
KL_VEC_FN vec<N, T> operator^(const vec<N, T>& a, const vec<N, T>& b) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = T(a.c[i] ^ b.c[i]); return out;
}
KL_VEC_FN vec<N, T> operator~(const vec<N, T>& a) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = T(~a.c[i]); return out;
}

template <typename V, typename T> __device__ inline V lerp(const V& a, const V& b, T t) {
    return a * (T(1) - t) + b * t;
}
template <typename T> __device__ inline T smoothstep(T e0, T e1, T x) {
    T t = (x - e0) / (e1 - e0);
    t = kl_clamp(t, T(0), T(1));  // a NaN t becomes 0, as Warp's fmin / fmax clamp
    return t * t * (T(3) - T(2) * t);
}

// ---- vector and matrix functions ---------------------------------------------------------
KL_VEC_FN vec<N, T> kl_min(const vec<N, T>& a, const vec<N, T>& b) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = kl_min(a.c[i], b.c[i]); return out;
}
KL_VEC_FN vec<N, T> kl_max(const vec<N, T>& a, const vec<N, T>& b) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = kl_max(a.c[i], b.c[i]); return out;
}
KL_VEC_FN vec<N, T> kl_route_min(const vec<N, T>& a, const vec<N, T>& b, const vec<N, T>& g) {
    vec<N, T> out;
    for (int i = 0; i < N; ++i) out.c[i] = kl_route_min(a.c[i], b.c[i], g.c[i]);
    return out;
}
KL_VEC_FN vec<N, T> kl_route_max(const vec<N, T>& a, const vec<N, T>& b, const vec<N, T>& g) {
    vec<N, T> out;
    for (int i = 0; i < N; ++i) out.c[i] = kl_route_max(a.c[i], b.c[i], g.c[i]);
    return out;
}
KL_VEC_FN vec<N, T> kl_route_eq(const vec<N, T>& a, const vec<N, T>& b, const vec<N, T>& g) {
    vec<N, T> out;
    for (int i = 0; i < N; ++i) out.c[i] = kl_route_eq(a.c[i], b.c[i], g.c[i]);
    return out;
}
KL_MAT_FN mat<R, C, T> kl_route_eq(const mat<R, C, T>& a, const mat<R, C, T>& b,
                                   const mat<R, C, T>& g) {
    mat<R, C, T> out;
    for (int i = 0; i < R; ++i) out.r[i] = kl_route_eq(a.r[i], b.r[i], g.r[i]);
    return out;
}
template <typename T> __device__ inline bool kl_eq(const T& a, const T& b) { return a == b; }
template <typename T> __device__ inline bool kl_ne(const T& a, const T& b) { return a != b; }
KL_VEC_FN bool kl_eq(const vec<N, T>& a, const vec<N, T>& b) {
    for (int i = 0; i < N; ++i) if (!(a.c[i] == b.c[i])) return false;
    return true;
}
KL_VEC_FN bool kl_ne(const vec<N, T>& a, const vec<N, T>& b) { return !kl_eq(a, b); }
KL_MAT_FN bool kl_eq(const mat<R, C, T>& a, const mat<R, C, T>& b) {
    for (int i = 0; i < R; ++i) if (!kl_eq(a.r[i], b.r[i])) return false;
    return true;
}
KL_MAT_FN bool kl_ne(const mat<R, C, T>& a, const mat<R, C, T>& b) { return !kl_eq(a, b); }
KL_VEC_FN vec<N, T> kl_mod(const vec<N, T>& a, const vec<N, T>& b) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = kl_mod(a.c[i], b.c[i]); return out;
}
KL_VEC_FN vec<N, T> kl_cw_mul(const vec<N, T>& a, const vec<N, T>& b) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = a.c[i] * b.c[i]; return out;
}
KL_VEC_FN vec<N, T> kl_cw_div(const vec<N, T>& a, const vec<N, T>& b) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = kl_div(a.c[i], b.c[i]); return out;
}
KL_MAT_FN mat<R, C, T> kl_cw_mul(const mat<R, C, T>& a, const mat<R, C, T>& b) {
    mat<R, C, T> out; for (int i = 0; i < R; ++i) out.r[i] = kl_cw_mul(a.r[i], b.r[i]);
    return out;
}
KL_MAT_FN mat<R, C, T> kl_cw_div(const mat<R, C, T>& a, const mat<R, C, T>& b) {
    mat<R, C, T> out; for (int i = 0; i < R; ++i) out.r[i] = kl_cw_div(a.r[i], b.r[i]);
    return out;
}
KL_VEC_FN vec<N, T> operator/(T s, const vec<N, T>& v) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = kl_div(s, v.c[i]); return out;
}
KL_MAT_FN mat<R, C, T> operator/(T s, const mat<R, C, T>& m) {
    mat<R, C, T> out; for (int i = 0; i < R; ++i) out.r[i] = s / m.r[i]; return out;
}
template <int N, typename T> __device__ inline T kl_trace(const mat<N, N, T>& m) {
    T acc = m.r[0].c[0];
    for (int i = 1; i < N; ++i) acc = acc + m.r[i].c[i];
    return acc;
}
KL_VEC_FN bool kl_isfinite(const vec<N, T>& v) {
    for (int i = 0; i < N; ++i) if (!kl_isfinite(v.c[i])) return false;
    return true;
}
KL_VEC_FN bool kl_isnan(const vec<N, T>& v) {
    for (int i = 0; i < N; ++i) if (kl_isnan(v.c[i])) return true;
    return false;
}
KL_VEC_FN bool kl_isinf(const vec<N, T>& v) {
    for (int i = 0; i < N; ++i) if (kl_isinf(v.c[i])) return true;
    return false;
}
KL_MAT_FN bool kl_isfinite(const mat<R, C, T>& m) {
    for (int i = 0; i < R; ++i) if (!kl_isfinite(m.r[i])) return false;
    return true;
}
KL_MAT_FN bool kl_isnan(const mat<R, C, T>& m) {
    for (int i = 0; i < R; ++i) if (kl_isnan(m.r[i])) return true;
    return false;
}
KL_MAT_FN bool kl_isinf(const mat<R, C, T>& m) {
    for (int i = 0; i < R; ++i) if (kl_isinf(m.r[i])) return true;
    return false;
}
// the first smallest (largest) component; NaN components lose, as in an fmin reduction
KL_VEC_FN uint32 kl_argmin(const vec<N, T>& v) {
    uint32 k = 0;
    for (int i = 1; i < N; ++i)
        if (v.c[i] < v.c[k] || (v.c[k] != v.c[k] && v.c[i] == v.c[i])) k = i;
    return k;
}
KL_VEC_FN uint32 kl_argmax(const vec<N, T>& v) {
    uint32 k = 0;
    for (int i = 1; i < N; ++i)
        if (v.c[i] > v.c[k] || (v.c[k] != v.c[k] && v.c[i] == v.c[i])) k = i;
    return k;
}
KL_VEC_FN T kl_min(const vec<N, T>& v) { return v.c[kl_argmin(v)]; }
KL_VEC_FN T kl_max(const vec<N, T>& v) { return v.c[kl_argmax(v)]; }
KL_VEC_FN vec<N, T> abs(const vec<N, T>& v) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = abs(v.c[i]); return out;
}
KL_VEC_FN vec<N, T> kl_sign(const vec<N, T>& v) {
    vec<N, T> out; for (int i = 0; i < N; ++i) out.c[i] = kl_sign(v.c[i]); return out;
}
KL_VEC_FN T dot(const vec<N, T>& a, const vec<N, T>& b) {
    T acc = a.c[0] * b.c[0];
    for (int i = 1; i < N; ++i) acc += a.c[i] * b.c[i];
    return acc;
}
KL_VEC_FN T length_sq(const vec<N, T>& v) { return dot(v, v); }
KL_VEC_FN T length(const vec<N, T>& v) { return sqrt(dot(v, v)); }
KL_VEC_FN vec<N, T> normalize(const vec<N, T>& v) {
    T n = length(v);
    return n > T(0) ? v / n : vec<N, T>();
}
template <typename T> __device__ inline vec<3, T> cross(const vec<3, T>& a, const vec<3, T>& b) {
    return vec<3, T>(a.c[1] * b.c[2] - a.c[2] * b.c[1], a.c[2] * b.c[0] - a.c[0] * b.c[2],
                     a.c[0] * b.c[1] - a.c[1] * b.c[0]);
}
KL_MAT_FN mat<R, C, T> outer(const vec<R, T>& a, const vec<C, T>& b) {
    mat<R, C, T> out;
    for (int i = 0; i < R; ++i) out.r[i] = a.c[i] * b;
    return out;
}
KL_MAT_FN mat<C, R, T> transpose(const mat<R, C, T>& m) {
    mat<C, R, T> out;
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) out.r[j].c[i] = m.r[i].c[j];
    return out;
}

// Determinant of the sub-matrix on rows[0..N) and cols[0..N), by Laplace expansion along
// its first row, terms combined in the same order as the interpreter's det_expand.
template <int N, int D, typename T>
__device__ inline T kl_det_sub(const mat<D, D, T>& m, const int* rows, const int* cols) {
    if constexpr (N == 1) {
        return m.r[rows[0]].c[cols[0]];
    } else {
        T total = T(0);
        for (int j = 0; j < N; ++j) {
            int sub[N - 1];
            for (int k = 0, n = 0; k < N; ++k)
                if (k != j) sub[n++] = cols[k];
            T term = m.r[rows[0]].c[cols[j]] * kl_det_sub<N - 1>(m, rows + 1, sub);
            total = j == 0 ? term : (j % 2 ? total - term : total + term);
        }
        return total;
    }
}
KL_VEC_FN T determinant(const mat<N, N, T>& m) {
    int idx[N];
    for (int k = 0; k < N; ++k) idx[k] = k;
    return kl_det_sub<N>(m, idx, idx);
}
// Cofactors C(i, j) = (-1)^(i+j) det(minor(i, j)); the 1x1 case is [1].
KL_VEC_FN mat<N, N, T> kl_cofactor(const mat<N, N, T>& m) {
    mat<N, N, T> out;
    if constexpr (N == 1) {
        out.r[0].c[0] = T(1);
    } else {
        for (int i = 0; i < N; ++i)
            for (int j = 0; j < N; ++j) {
                int rows[N - 1], cols[N - 1];
                for (int k = 0, n = 0; k < N; ++k) if (k != i) rows[n++] = k;
                for (int k = 0, n = 0; k < N; ++k) if (k != j) cols[n++] = k;
                T d = kl_det_sub<N - 1>(m, rows, cols);
                out.r[i].c[j] = (i + j) % 2 ? -d : d;
            }
    }
    return out;
}

// ---- helpers the derivative rules use ------------------------------------------------------
template <typename T> __device__ inline T kl_inner(T a, T b) { return a * b; }
KL_VEC_FN T kl_inner(const vec<N, T>& a, const vec<N, T>& b) {
    return dot(a, b);
}
KL_MAT_FN T kl_inner(const mat<R, C, T>& a, const mat<R, C, T>& b) {
    T acc = a.r[0].c[0] * b.r[0].c[0];
    for (int k = 1; k < R * C; ++k) acc += a.r[k / C].c[k % C] * b.r[k / C].c[k % C];
    return acc;
}
KL_VEC_FN T kl_sum(const vec<N, T>& v) {
    T acc = v.c[0];
    for (int i = 1; i < N; ++i) acc += v.c[i];
    return acc;
}
KL_MAT_FN T kl_sum(const mat<R, C, T>& m) {
    T acc = m.r[0].c[0];
    for (int k = 1; k < R * C; ++k) acc += m.r[k / C].c[k % C];
    return acc;
}

// Element k of a vector or matrix in row-major order, and its reshape to another shape.
KL_VEC_FN T& kl_flat(vec<N, T>& v, int k) { return v.c[k]; }
KL_MAT_FN T& kl_flat(mat<R, C, T>& m, int k) {
    return m.r[k / C].c[k % C];
}
template <typename X> struct kl_size;
template <int N, typename T> struct kl_size<vec<N, T>> { static const int value = N; };
template <int R, int C, typename T> struct kl_size<mat<R, C, T>> {
    static const int value = R * C;
};
template <typename To, typename From> __device__ inline To kl_reshape(From x) {
    To out;
    for (int k = 0; k < kl_size<From>::value; ++k) kl_flat(out, k) = kl_flat(x, k);
    return out;
}

// verify_fp: whether a stored value is finite in every component, and the flat (row-major)
// element index of the store that is reported when it is not.
__device__ inline bool kl_all_finite(float16 x) { return isfinite(x); }
__device__ inline bool kl_all_finite(bfloat16 x) { return isfinite(x); }
__device__ inline bool kl_all_finite(float32 x) { return isfinite(x); }
__device__ inline bool kl_all_finite(float64 x) { return isfinite(x); }
template <typename X> __device__ inline bool kl_all_finite(X x) {
    for (int k = 0; k < kl_size<X>::value; ++k)
        if (!isfinite(kl_flat(x, k))) return false;
    return true;
}
template <typename T> __device__ inline int64 kl_flat_index(const array_t<T>&, int64 i) {
    return i;
}
template <typename T> __device__ inline int64 kl_flat_index(const array_t<T>& a, int64 i,
                                                            int64 j) {
    return i * a.shape[1] + j;
}
template <typename T> __device__ inline int64 kl_flat_index(const array_t<T>& a, int64 i,
                                                            int64 j, int64 k) {
    return (i * a.shape[1] + j) * a.shape[2] + k;
}
template <typename T> __device__ inline int64 kl_flat_index(const array_t<T>& a, int64 i,
                                                            int64 j, int64 k, int64 l) {
    return ((i * a.shape[1] + j) * a.shape[2] + k) * a.shape[3] + l;
}

// Copies with one component (or row) replaced: v[i] = x, m[i] = row, m[i, j] = x.
KL_VEC_FN vec<N, T> kl_insert(vec<N, T> v, int64 i, T x) {
    v[int(i)] = x;
    return v;
}
KL_MAT_FN mat<R, C, T> kl_insert(mat<R, C, T> m, int64 i, const vec<C, T>& row) {
    m[int(i)] = row;
    return m;
}
KL_MAT_FN mat<R, C, T> kl_insert(mat<R, C, T> m, int64 i, int64 j, T x) {
    m[int(i)][int(j)] = x;
    return m;
}

// ---- atomics: each returns the value the element held before ------------------------------
__device__ inline float32 kl_atomic_add(float32* p, float32 v) { return atomicAdd(p, v); }
__device__ inline float64 kl_atomic_add(float64* p, float64 v) { return atomicAdd(p, v); }
__device__ inline int32 kl_atomic_add(int32* p, int32 v) { return atomicAdd(p, v); }
__device__ inline uint32 kl_atomic_add(uint32* p, uint32 v) { return atomicAdd(p, v); }
__device__ inline uint64 kl_atomic_add(uint64* p, uint64 v) { return atomicAdd(p, v); }
__device__ inline int64 kl_atomic_add(int64* p, int64 v) {
    return int64(atomicAdd((uint64*)p, uint64(v)));
}
template <typename T> __device__ inline T kl_atomic_sub(T* p, T v) {
    return kl_atomic_add(p, T(0) - v);
}

// min / max: the element becomes v when v < old (min) or v > old (max).
__device__ inline int32 kl_atomic_min(int32* p, int32 v) { return atomicMin(p, v); }
__device__ inline uint32 kl_atomic_min(uint32* p, uint32 v) { return atomicMin(p, v); }
__device__ inline int64 kl_atomic_min(int64* p, int64 v) { return atomicMin(p, v); }
__device__ inline int32 kl_atomic_max(int32* p, int32 v) { return atomicMax(p, v); }
__device__ inline uint32 kl_atomic_max(uint32* p, uint32 v) { return atomicMax(p, v); }
__device__ inline int64 kl_atomic_max(int64* p, int64 v) { return atomicMax(p, v); }
__device__ inline uint64 kl_atomic_min(uint64* p, uint64 v) { return atomicMin(p, v); }
__device__ inline uint64 kl_atomic_max(uint64* p, uint64 v) { return atomicMax(p, v); }

template <typename T, typename Bits, typename Pick>
__device__ inline T kl_atomic_cas_loop(T* p, T v, Pick pick) {
    Bits* bits = (Bits*)p;
    Bits old = *bits, seen;
    do {
        seen = old;
        T cur = *(T*)&seen;
        T next = pick(cur, v);
        if (*(Bits*)&next == seen) break;
        old = atomicCAS(bits, seen, *(Bits*)&next);
    } while (old != seen);
    return *(T*)&old;
}
struct kl_pick_min {
    template <typename T> __device__ T operator()(T cur, T v) const { return v < cur ? v : cur; }
};
struct kl_pick_max {
    template <typename T> __device__ T operator()(T cur, T v) const { return v > cur ? v : cur; }
};
struct kl_pick_sum {
    template <typename T> __device__ T operator()(T cur, T v) const { return cur + v; }
};
// float16: a compare-and-swap loop on the element's 16 bits (sm_70 and later), so the sum is
// rounded to half as every other float16 addition is.
__device__ inline float16 kl_atomic_add(float16* p, float16 v) {
    return kl_atomic_cas_loop<float16, uint16>(p, v, kl_pick_sum());
}
// bfloat16: the same on its 16 bits (add, sub, min and max, as Warp allows)
__device__ inline bfloat16 kl_atomic_add(bfloat16* p, bfloat16 v) {
    return kl_atomic_cas_loop<bfloat16, uint16>(p, v, kl_pick_sum());
}
__device__ inline bfloat16 kl_atomic_min(bfloat16* p, bfloat16 v) {
    return kl_atomic_cas_loop<bfloat16, uint16>(p, v, kl_pick_min());
}
__device__ inline bfloat16 kl_atomic_max(bfloat16* p, bfloat16 v) {
    return kl_atomic_cas_loop<bfloat16, uint16>(p, v, kl_pick_max());
}
__device__ inline float32 kl_atomic_min(float32* p, float32 v) {
    return kl_atomic_cas_loop<float32, uint32>(p, v, kl_pick_min());
}
__device__ inline float64 kl_atomic_min(float64* p, float64 v) {
    return kl_atomic_cas_loop<float64, uint64>(p, v, kl_pick_min());
}
__device__ inline float32 kl_atomic_max(float32* p, float32 v) {
    return kl_atomic_cas_loop<float32, uint32>(p, v, kl_pick_max());
}
__device__ inline float64 kl_atomic_max(float64* p, float64 v) {
    return kl_atomic_cas_loop<float64, uint64>(p, v, kl_pick_max());
}

// and / or / xor on 32- and 64-bit integers; exch on those and on floats
#define KL_BIT_ATOMICS(T, U) \
    __device__ inline T kl_atomic_and(T* p, T v) { return T(atomicAnd((U*)p, U(v))); } \
    __device__ inline T kl_atomic_or(T* p, T v) { return T(atomicOr((U*)p, U(v))); } \
    __device__ inline T kl_atomic_xor(T* p, T v) { return T(atomicXor((U*)p, U(v))); } \
    __device__ inline T kl_atomic_exch(T* p, T v) { return T(atomicExch((U*)p, U(v))); }
KL_BIT_ATOMICS(int32, int32) KL_BIT_ATOMICS(uint32, uint32)
KL_BIT_ATOMICS(int64, uint64) KL_BIT_ATOMICS(uint64, uint64)
__device__ inline float32 kl_atomic_exch(float32* p, float32 v) { return atomicExch(p, v); }
// compare and swap; floats compare their bits, as atomicCAS does
__device__ inline int32 kl_atomic_cas(int32* p, int32 c, int32 v) { return atomicCAS(p, c, v); }
__device__ inline uint32 kl_atomic_cas(uint32* p, uint32 c, uint32 v) {
    return atomicCAS(p, c, v);
}
__device__ inline uint64 kl_atomic_cas(uint64* p, uint64 c, uint64 v) {
    return atomicCAS(p, c, v);
}
__device__ inline int64 kl_atomic_cas(int64* p, int64 c, int64 v) {
    return int64(atomicCAS((uint64*)p, uint64(c), uint64(v)));
}
__device__ inline float32 kl_atomic_cas(float32* p, float32 c, float32 v) {
    uint32 old = atomicCAS((uint32*)p, *(uint32*)&c, *(uint32*)&v);
    return *(float32*)&old;
}
__device__ inline float64 kl_atomic_cas(float64* p, float64 c, float64 v) {
    uint64 old = atomicCAS((uint64*)p, *(uint64*)&c, *(uint64*)&v);
    return *(float64*)&old;
}
__device__ inline float64 kl_atomic_exch(float64* p, float64 v) {
    uint64 old = atomicExch((uint64*)p, *(uint64*)&v);
    return *(float64*)&old;
}
KL_VEC_FN vec<N, T> kl_atomic_exch(vec<N, T>* p, const vec<N, T>& v) {
    vec<N, T> old;
    for (int i = 0; i < N; ++i) old.c[i] = kl_atomic_exch(&p->c[i], v.c[i]);
    return old;
}

// Vectors and matrices: component by component.
KL_VEC_FN vec<N, T> kl_atomic_add(vec<N, T>* p, const vec<N, T>& v) {
    vec<N, T> old;
    for (int i = 0; i < N; ++i) old.c[i] = kl_atomic_add(&p->c[i], v.c[i]);
    return old;
}
KL_MAT_FN mat<R, C, T> kl_atomic_add(mat<R, C, T>* p, const mat<R, C, T>& v) {
    mat<R, C, T> old;
    for (int i = 0; i < R; ++i) old.r[i] = kl_atomic_add(&p->r[i], v.r[i]);
    return old;
}
KL_VEC_FN vec<N, T> kl_atomic_min(vec<N, T>* p, const vec<N, T>& v) {
    vec<N, T> old;
    for (int i = 0; i < N; ++i) old.c[i] = kl_atomic_min(&p->c[i], v.c[i]);
    return old;
}
KL_VEC_FN vec<N, T> kl_atomic_max(vec<N, T>* p, const vec<N, T>& v) {
    vec<N, T> old;
    for (int i = 0; i < N; ++i) old.c[i] = kl_atomic_max(&p->c[i], v.c[i]);
    return old;
}
KL_VEC_FN vec<N, T> kl_atomic_sub(vec<N, T>* p, const vec<N, T>& v) {
    return kl_atomic_add(p, -v);
}
#define KL_VEC_BIT_ATOMIC(NAME) \
    KL_VEC_FN vec<N, T> NAME(vec<N, T>* p, const vec<N, T>& v) { \
        vec<N, T> old; \
        for (int i = 0; i < N; ++i) old.c[i] = NAME(&p->c[i], v.c[i]); \
        return old; \
    }
KL_VEC_BIT_ATOMIC(kl_atomic_and) KL_VEC_BIT_ATOMIC(kl_atomic_or) KL_VEC_BIT_ATOMIC(kl_atomic_xor)
KL_MAT_FN mat<R, C, T> kl_atomic_sub(mat<R, C, T>* p, const mat<R, C, T>& v) {
    return kl_atomic_add(p, -v);
}

// ---- the per-thread stack of adjoint kernels -----------------------------------------------
// Forward replay pushes the locals a loop iteration or branch will need; the reverse sweep
// pops them. Each value takes whole 8-byte words. The first KL_STACK_LOCAL_WORDS words live
// in the thread's local memory; past that the stack moves to the device heap (malloc),
// doubling as it grows, and is freed when the thread's work item ends. If the heap runs out,
// status code 2 is reported and every later pop yields zero (so loops run no trips).
#ifndef KL_STACK_LOCAL_WORDS
#define KL_STACK_LOCAL_WORDS @STACK_LOCAL_WORDS@
#endif
struct kl_stack {
    uint64* words;
    int64 top;
    int64 cap;
    bool failed;
    kl_status* status;
    uint64 local[KL_STACK_LOCAL_WORDS];

    __device__ explicit kl_stack(kl_status* s)
        : words(local), top(0), cap(KL_STACK_LOCAL_WORDS), failed(false), status(s) {}
    __device__ ~kl_stack() { if (words != local) free(words); }

    __device__ bool grow(int64 need) {
        int64 bigger = cap * 2;
        while (bigger < need) bigger *= 2;
        uint64* moved = (uint64*)malloc(bigger * sizeof(uint64));
        if (moved == nullptr) {
            failed = true;
            kl_report(status, 2, -1, -1, -1, need * int64(sizeof(uint64)));
            return false;
        }
        for (int64 k = 0; k < top; ++k) moved[k] = words[k];
        if (words != local) free(words);
        words = moved;
        cap = bigger;
        return true;
    }
    template <typename T> __device__ void push(const T& value) {
        const int64 n = (sizeof(T) + 7) / 8;
        if (failed || (top + n > cap && !grow(top + n))) return;
        memcpy(words + top, &value, sizeof(T));
        top += n;
    }
    template <typename T> __device__ T pop() {
        const int64 n = (sizeof(T) + 7) / 8;
        T value = T();
        if (failed || top < n) return value;
        top -= n;
        memcpy(&value, words + top, sizeof(T));
        return value;
    }
};

// ---- tiles (builtins/tiles.py) -------------------------------------------------------------
// Each block of a tiled launch is one thread, as Warp runs blocks on the CPU, so a tile is a
// value of that thread: vec<L, S> holding all L scalars, row-major, each element's K
// components together (the LLVM backend's register layout). D0..D3 is the tile's shape
// padded with 1s; an array of fewer dimensions reads the first ones.
template <int D0, int D1, int D2, int D3> struct kl_tile_dims {
    static constexpr int64 size = int64(D0) * D1 * D2 * D3;
    __device__ static int64 extent(int d) {
        return d == 0 ? D0 : d == 1 ? D1 : d == 2 ? D2 : D3;
    }
};
// The byte offset in a of tile element e placed at o, and whether it lies inside a.
template <typename Dims, typename E>
__device__ inline bool kl_tile_at(const array_t<E>& a, int ndim, int64 e, const int64* o,
                                  int64* at) {
    bool ok = a.data != nullptr;
    int64 rest = e, off = 0;
    for (int d = 3; d >= 0; --d) {
        int64 n = Dims::extent(d), c = rest % n;
        rest /= n;
        if (d < ndim) {
            int64 s = c + o[d];
            ok = ok && s >= 0 && s < a.shape[d];
            off += s * a.strides[d];
        }
    }
    *at = off;
    return ok;
}
template <int K, int D0, int D1, int D2, int D3, int L, typename S, typename E>
__device__ inline vec<L, S> kl_tile_load(const array_t<E>& a, int ndim, int64 o0, int64 o1 = 0,
                                         int64 o2 = 0, int64 o3 = 0) {
    typedef kl_tile_dims<D0, D1, D2, D3> Dims;
    const int64 o[4] = {o0, o1, o2, o3};
    vec<L, S> out;
    for (int64 e = 0; e < Dims::size; ++e) {
        int64 at;
        if (!kl_tile_at<Dims>(a, ndim, e, o, &at)) continue;
        const S* src = (const S*)((const char*)a.data + at);
        for (int c = 0; c < K; ++c) out.c[e * K + c] = src[c];
    }
    return out;
}
// Writes t into a (Add: atomically adds it); returns the values before an add.
template <bool Add, int K, int D0, int D1, int D2, int D3, int L, typename S, typename E>
__device__ inline vec<L, S> kl_tile_write(const array_t<E>& a, const vec<L, S>& t, int ndim,
                                          int64 o0, int64 o1 = 0, int64 o2 = 0, int64 o3 = 0) {
    typedef kl_tile_dims<D0, D1, D2, D3> Dims;
    const int64 o[4] = {o0, o1, o2, o3};
    vec<L, S> old;
    for (int64 e = 0; e < Dims::size; ++e) {
        int64 at;
        if (!kl_tile_at<Dims>(a, ndim, e, o, &at)) continue;
        S* dst = (S*)((char*)a.data + at);
        for (int c = 0; c < K; ++c) {
            if (Add) old.c[e * K + c] = kl_atomic_add(dst + c, t.c[e * K + c]);
            else dst[c] = t.c[e * K + c];
        }
    }
    return old;
}
template <int L, typename S> __device__ inline vec<L, S> kl_tile_from(S x) {
    vec<L, S> out;
    out.c[0] = x;
    return out;
}
template <int L, typename S, int K> __device__ inline vec<L, S> kl_tile_from(const vec<K, S>& x) {
    vec<L, S> out;
    for (int c = 0; c < K; ++c) out.c[c] = x.c[c];
    return out;
}
template <int L, typename S> __device__ inline vec<L, S> kl_tile_full(S x) { return vec<L, S>(x); }
template <int L, typename S, int K> __device__ inline vec<L, S> kl_tile_full(const vec<K, S>& x) {
    vec<L, S> out;
    for (int e = 0; e < L / K; ++e)
        for (int c = 0; c < K; ++c) out.c[e * K + c] = x.c[c];
    return out;
}
// Element i of a tile whose elements are K scalars (K == 1: the scalar itself).
template <typename R, int K, int L, typename S> struct kl_tile_elem {
    __device__ static R get(const vec<L, S>& t, int64 i) {
        R r;
        for (int c = 0; c < K; ++c) r.c[c] = t.c[i * K + c];
        return r;
    }
};
template <int L, typename S> struct kl_tile_elem<S, 1, L, S> {
    __device__ static S get(const vec<L, S>& t, int64 i) { return t.c[i]; }
};
template <int K, int L, typename S>
__device__ inline vec<L, S> kl_tile_put(vec<L, S> t, S x, int64 i) {
    t.c[i] = x;
    return t;
}
template <int K, int L, typename S>
__device__ inline vec<L, S> kl_tile_put(vec<L, S> t, const vec<K, S>& x, int64 i) {
    for (int c = 0; c < K; ++c) t.c[i * K + c] = x.c[c];
    return t;
}
template <typename R, int K, int L, typename S>
__device__ inline R kl_tile_sum(const vec<L, S>& t) {
    R acc = R();
    for (int64 e = 0; e < L / K; ++e) acc = acc + kl_tile_elem<R, K, L, S>::get(t, e);
    return acc;
}
template <int K, int Rows, int Cols, int L, typename S>
__device__ inline vec<L, S> kl_tile_transpose(const vec<L, S>& t) {
    vec<L, S> out;
    for (int i = 0; i < Rows; ++i)
        for (int j = 0; j < Cols; ++j)
            for (int c = 0; c < K; ++c) out.c[(j * Rows + i) * K + c] = t.c[(i * Cols + j) * K + c];
    return out;
}
// The unnormalised DFT (Sign -1) or inverse (+1) along the last dimension (N, a power of
// two) of a tile of complex values: radix-2 Cooley-Tukey in place, each stage's twiddle
// advanced by one complex multiply per butterfly (Warp's CPU algorithm).
template <int Sign, int N, int L, typename S>
__device__ inline vec<L, S> kl_tile_fft(vec<L, S> t) {
    if (N & (N - 1)) {  // not a power of two: the direct O(N^2) DFT (Warp's CPU fallback)
        const S base = S(Sign) * S(6.28318530717958647692528676655900576839433879875021) / S(N);
        for (int b = 0; b < L / (2 * N); ++b) {
            S* x = t.c + 2 * N * b;
            S out[2 * N];
            for (int k = 0; k < N; ++k) {
                S acc_re = S(0), acc_im = S(0);
                for (int j = 0; j < N; ++j) {
                    const S theta = base * S(k) * S(j);
                    const S c = cos(theta), s = sin(theta);
                    acc_re += c * x[2 * j] - s * x[2 * j + 1];
                    acc_im += c * x[2 * j + 1] + s * x[2 * j];
                }
                out[2 * k] = acc_re;
                out[2 * k + 1] = acc_im;
            }
            for (int e = 0; e < 2 * N; ++e) x[e] = out[e];
        }
        return t;
    }
    int log_n = 0;
    while ((1 << log_n) < N) ++log_n;
    for (int b = 0; b < L / (2 * N); ++b) {
        S* x = t.c + 2 * N * b;
        for (int i = 0; i < N; ++i) {
            int j = 0;
            for (int k = 0; k < log_n; ++k) j |= ((i >> k) & 1) << (log_n - 1 - k);
            if (i < j)
                for (int c = 0; c < 2; ++c) { S tmp = x[2 * i + c]; x[2 * i + c] = x[2 * j + c]; x[2 * j + c] = tmp; }
        }
        for (int len = 2; len <= N; len <<= 1) {
            const int half = len >> 1;
            const S theta = S(Sign) * S(6.28318530717958647692528676655900576839433879875021) / S(len);
            const S wm_re = cos(theta), wm_im = sin(theta);
            for (int k = 0; k < N; k += len) {
                S w_re = S(1), w_im = S(0);
                for (int j = 0; j < half; ++j) {
                    S* lo = x + 2 * (k + j);
                    S* hi = x + 2 * (k + j + half);
                    const S t_re = w_re * hi[0] - w_im * hi[1];
                    const S t_im = w_re * hi[1] + w_im * hi[0];
                    const S u_re = lo[0], u_im = lo[1];
                    lo[0] = u_re + t_re; lo[1] = u_im + t_im;
                    hi[0] = u_re - t_re; hi[1] = u_im - t_im;
                    const S nw_re = w_re * wm_re - w_im * wm_im;
                    w_im = w_re * wm_im + w_im * wm_re;
                    w_re = nw_re;
                }
            }
        }
    }
    return t;
}

}  // namespace kl

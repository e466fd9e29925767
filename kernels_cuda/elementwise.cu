// CUDA elementwise kernels: fill, copy (with dtype conversion), binary and unary ops.
// Strided and broadcast operands are indexed through the coalesced geometry in Iter<N>
// (int64 indexing throughout); when every operand is dense the index is used directly.
// Reduced floats (f16, bf16) are stored as __half / __nv_bfloat16 and computed in f32,
// as on the CPU. Conversions follow kernels_cpu/elementwise.cpp (float -> int saturates,
// NaN -> 0; anything -> bool is `!= 0`; f64 -> f16/bf16 rounds through f32).

#include "launch.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace ember::cuda {
namespace {

constexpr int kThreads = 256;

template <class T> struct is_reduced : std::false_type {};
template <> struct is_reduced<__half> : std::true_type {};
template <> struct is_reduced<__nv_bfloat16> : std::true_type {};
template <class T> inline constexpr bool is_reduced_v = is_reduced<T>::value;

/// The type arithmetic on T is done in.
template <class T> struct Acc { using type = T; };
template <> struct Acc<__half> { using type = float; };
template <> struct Acc<__nv_bfloat16> { using type = float; };
template <class T> using acc_t = typename Acc<T>::type;

template <class T>
__device__ __forceinline__ acc_t<T> widen(T v) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v);
  else return v;
}

/// Converts a widened value (bool, integer, float or double) to storage type To.
template <class To, class W>
__device__ __forceinline__ To convert_wide(W v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != W(0);
  } else if constexpr (std::is_same_v<To, __half>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<W>) {
    if (!(v == v)) return To(0);
    if (v >= static_cast<W>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    if (v <= static_cast<W>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

template <class To, class From>
__device__ __forceinline__ To convert(From v) {
  if constexpr (std::is_same_v<To, From>) return v;
  else return convert_wide<To>(widen(v));
}

/// Element offsets (in elements) of linear index i for each of the N operands.
template <int N>
__device__ __forceinline__ void offsets(const Iter<N>& it, int64_t i, int64_t (&off)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = it.ndim - 1; d >= 0; --d) {
    int64_t size = it.sizes[d];
    int64_t idx = i % size;
    i /= size;
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += idx * it.strides[k][d];
  }
}

/// Calls f(offsets) for every element, grid-stride.
template <int N, class F>
__device__ __forceinline__ void for_each(const Iter<N>& it, F&& f) {
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < it.numel; i += stride) {
    int64_t off[N];
    if (it.contiguous) {
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] = i;
    } else {
      offsets(it, i, off);
    }
    f(off);
  }
}

template <int N>
cudaError_t grid_for(const Iter<N>& it, unsigned& blocks) {
  int64_t b = (it.numel + kThreads - 1) / kThreads;
  if (b > (int64_t{1} << 20)) b = int64_t{1} << 20;  // grid-stride covers the rest
  blocks = static_cast<unsigned>(b < 1 ? 1 : b);
  return cudaSuccess;
}

// ---- fill ----------------------------------------------------------------------------------
template <class U>
__global__ void fill_kernel(Iter<1> it, U value) {
  U* p = reinterpret_cast<U*>(it.data[0]);
  for_each(it, [&](const int64_t(&off)[1]) { p[off[0]] = value; });
}

template <class U>
cudaError_t fill_as(const Iter<1>& it, uint64_t bits) {
  U v;
  std::memcpy(&v, &bits, sizeof(U));
  unsigned blocks;
  grid_for(it, blocks);
  fill_kernel<U><<<blocks, kThreads>>>(it, v);
  return cudaGetLastError();
}

// ---- copy ----------------------------------------------------------------------------------
template <class To, class From>
__global__ void copy_kernel(Iter<2> it) {
  To* o = reinterpret_cast<To*>(it.data[0]);
  const From* s = reinterpret_cast<const From*>(it.data[1]);
  for_each(it, [&](const int64_t(&off)[2]) { o[off[0]] = convert<To, From>(s[off[1]]); });
}

/// Calls f.template operator()<T>() with the CUDA storage type of dtype code `t`.
template <class F>
cudaError_t visit(int t, F&& f) {
  switch (t) {
    case kBool: return f.template operator()<bool>();
    case kU8: return f.template operator()<uint8_t>();
    case kI8: return f.template operator()<int8_t>();
    case kI32: return f.template operator()<int32_t>();
    case kI64: return f.template operator()<int64_t>();
    case kF16: return f.template operator()<__half>();
    case kBF16: return f.template operator()<__nv_bfloat16>();
    case kF32: return f.template operator()<float>();
    case kF64: return f.template operator()<double>();
    default: return cudaErrorInvalidValue;
  }
}

// ---- binary --------------------------------------------------------------------------------
template <BinOp op, class C>
__device__ __forceinline__ C bin(C a, C b) {
  if constexpr (std::is_same_v<C, bool>) {
    if constexpr (op == BinOp::Add) return a || b;
    else return a && b;  // Mul
  } else if constexpr (std::is_integral_v<C> && (op == BinOp::Add || op == BinOp::Sub || op == BinOp::Mul)) {
    // Integer arithmetic wraps, computed unsigned (no signed-overflow UB), as the CPU's.
    using U = std::make_unsigned_t<C>;
    const U ua = static_cast<U>(a), ub = static_cast<U>(b);
    if constexpr (op == BinOp::Add) return static_cast<C>(static_cast<U>(ua + ub));
    else if constexpr (op == BinOp::Sub) return static_cast<C>(static_cast<U>(ua - ub));
    else return static_cast<C>(static_cast<U>(ua * ub));
  } else if constexpr (op == BinOp::Add) {
    return a + b;
  } else if constexpr (op == BinOp::Sub) {
    return a - b;
  } else if constexpr (op == BinOp::Mul) {
    return a * b;
  } else if constexpr (op == BinOp::Div) {
    return a / b;
  } else if constexpr (op == BinOp::Maximum) {  // NaN propagates, as torch.maximum
    if constexpr (std::is_floating_point_v<C>) {
      if (a != a) return a;
      if (b != b) return b;
    }
    return a < b ? b : a;  // std::max's choice between +0 and -0, as the CPU (and PyTorch)
  } else {  // Minimum
    if constexpr (std::is_floating_point_v<C>) {
      if (a != a) return a;
      if (b != b) return b;
    }
    return b < a ? b : a;  // std::min's choice between +0 and -0
  }
}

template <BinOp op, class T>
__global__ void binary_kernel(Iter<3> it) {
  T* o = reinterpret_cast<T*>(it.data[0]);
  const T* a = reinterpret_cast<const T*>(it.data[1]);
  const T* b = reinterpret_cast<const T*>(it.data[2]);
  for_each(it, [&](const int64_t(&off)[3]) {
    o[off[0]] = convert_wide<T>(bin<op, acc_t<T>>(widen(a[off[1]]), widen(b[off[2]])));
  });
}

template <class T>
constexpr bool binary_supported(BinOp op) {
  if constexpr (std::is_same_v<T, bool>) return op == BinOp::Add || op == BinOp::Mul;
  else if constexpr (std::is_integral_v<T>) return op != BinOp::Div;  // true division never sees ints
  else return true;
}

template <BinOp op, class T>
cudaError_t binary_as(const Iter<3>& it) {
  if constexpr (!binary_supported<T>(op)) {
    return cudaErrorNotSupported;
  } else {
    unsigned blocks;
    grid_for(it, blocks);
    binary_kernel<op, T><<<blocks, kThreads>>>(it);
    return cudaGetLastError();
  }
}

template <class T>
cudaError_t binary_typed(BinOp op, const Iter<3>& it) {
  switch (op) {
    case BinOp::Add: return binary_as<BinOp::Add, T>(it);
    case BinOp::Sub: return binary_as<BinOp::Sub, T>(it);
    case BinOp::Mul: return binary_as<BinOp::Mul, T>(it);
    case BinOp::Div: return binary_as<BinOp::Div, T>(it);
    case BinOp::Maximum: return binary_as<BinOp::Maximum, T>(it);
    case BinOp::Minimum: return binary_as<BinOp::Minimum, T>(it);
  }
  return cudaErrorNotSupported;
}

// ---- unary ---------------------------------------------------------------------------------
template <class C>
__device__ __forceinline__ C dexp(C x) {
  if constexpr (std::is_same_v<C, float>) return expf(x);
  else return exp(x);
}

template <UnOp op, class C>
__device__ __forceinline__ C un(C x) {
  constexpr bool f32 = std::is_same_v<C, float>;
  if constexpr (op == UnOp::Neg) {
    if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>)  // wraps (-INT_MIN is INT_MIN), unsigned
      return static_cast<C>(static_cast<std::make_unsigned_t<C>>(0 - static_cast<std::make_unsigned_t<C>>(x)));
    else return -x;  // neg(0.0) is -0.0
  } else if constexpr (op == UnOp::Abs) {
    if constexpr (std::is_unsigned_v<C>) return x;
    else if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>)
      return x < C(0) ? static_cast<C>(static_cast<std::make_unsigned_t<C>>(0 - static_cast<std::make_unsigned_t<C>>(x)))
                      : x;
    else return fabs(x);  // abs(-0.0) is +0.0
  } else if constexpr (op == UnOp::Square) {
    if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
      using U = std::make_unsigned_t<C>;
      return static_cast<C>(static_cast<U>(static_cast<U>(x) * static_cast<U>(x)));
    } else {
      return x * x;
    }
  } else if constexpr (op == UnOp::Relu) {
    if constexpr (std::is_floating_point_v<C>) return x > C(0) ? x : (x != x ? x : C(0));
    else return x > C(0) ? x : C(0);
  } else if constexpr (op == UnOp::Exp) {
    return dexp(x);
  } else if constexpr (op == UnOp::Log) {
    if constexpr (f32) return logf(x);
    else return log(x);
  } else if constexpr (op == UnOp::Sqrt) {
    if constexpr (f32) return sqrtf(x);
    else return sqrt(x);
  } else if constexpr (op == UnOp::Rsqrt) {
    if constexpr (f32) return 1.0f / sqrtf(x);
    else return 1.0 / sqrt(x);
  } else if constexpr (op == UnOp::Reciprocal) {
    return C(1) / x;
  } else if constexpr (op == UnOp::Sin) {
    if constexpr (f32) return sinf(x);
    else return sin(x);
  } else if constexpr (op == UnOp::Cos) {
    if constexpr (f32) return cosf(x);
    else return cos(x);
  } else if constexpr (op == UnOp::Tanh) {
    if constexpr (f32) return tanhf(x);
    else return tanh(x);
  } else if constexpr (op == UnOp::Sigmoid) {
    return C(1) / (C(1) + dexp(-x));
  } else {  // Silu
    return x / (C(1) + dexp(-x));
  }
}

template <UnOp op, class T>
__global__ void unary_kernel(Iter<2> it) {
  T* o = reinterpret_cast<T*>(it.data[0]);
  const T* x = reinterpret_cast<const T*>(it.data[1]);
  for_each(it, [&](const int64_t(&off)[2]) { o[off[0]] = convert_wide<T>(un<op, acc_t<T>>(widen(x[off[1]]))); });
}

template <class T>
constexpr bool unary_supported(UnOp op) {
  constexpr bool is_float = std::is_floating_point_v<T> || is_reduced_v<T>;
  if constexpr (std::is_same_v<T, bool>) return false;
  else if constexpr (is_float) return true;
  else return op == UnOp::Neg || op == UnOp::Abs || op == UnOp::Square || op == UnOp::Relu;
}

template <UnOp op, class T>
cudaError_t unary_as(const Iter<2>& it) {
  if constexpr (!unary_supported<T>(op)) {
    return cudaErrorNotSupported;
  } else {
    unsigned blocks;
    grid_for(it, blocks);
    unary_kernel<op, T><<<blocks, kThreads>>>(it);
    return cudaGetLastError();
  }
}

template <class T>
cudaError_t unary_typed(UnOp op, const Iter<2>& it) {
  switch (op) {
#define EMBER_CUDA_UN(E) \
  case UnOp::E: return unary_as<UnOp::E, T>(it);
    EMBER_CUDA_UN(Neg) EMBER_CUDA_UN(Abs) EMBER_CUDA_UN(Square) EMBER_CUDA_UN(Relu) EMBER_CUDA_UN(Exp)
    EMBER_CUDA_UN(Log) EMBER_CUDA_UN(Sqrt) EMBER_CUDA_UN(Rsqrt) EMBER_CUDA_UN(Reciprocal) EMBER_CUDA_UN(Sin)
    EMBER_CUDA_UN(Cos) EMBER_CUDA_UN(Tanh) EMBER_CUDA_UN(Sigmoid) EMBER_CUDA_UN(Silu)
#undef EMBER_CUDA_UN
  }
  return cudaErrorNotSupported;
}

}  // namespace

cudaError_t launch_fill(const Iter<1>& it, int itemsize, uint64_t bits) {
  if (it.numel == 0) return cudaSuccess;
  switch (itemsize) {
    case 1: return fill_as<uint8_t>(it, bits);
    case 2: return fill_as<uint16_t>(it, bits);
    case 4: return fill_as<uint32_t>(it, bits);
    case 8: return fill_as<uint64_t>(it, bits);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launch_copy(const Iter<2>& it, int dst_dtype, int src_dtype) {
  if (it.numel == 0) return cudaSuccess;
  return visit(dst_dtype, [&]<class To>() {
    return visit(src_dtype, [&]<class From>() {
      unsigned blocks;
      grid_for(it, blocks);
      copy_kernel<To, From><<<blocks, kThreads>>>(it);
      return cudaGetLastError();
    });
  });
}

bool has_binary(BinOp op, int dtype) {
  return visit(dtype, [&]<class T>() {
           switch (op) {
#define EMBER_CUDA_BIN(E) \
  case BinOp::E: return binary_supported<T>(BinOp::E) ? cudaSuccess : cudaErrorNotSupported;
             EMBER_CUDA_BIN(Add) EMBER_CUDA_BIN(Sub) EMBER_CUDA_BIN(Mul) EMBER_CUDA_BIN(Div)
             EMBER_CUDA_BIN(Maximum) EMBER_CUDA_BIN(Minimum)
#undef EMBER_CUDA_BIN
           }
           return cudaErrorNotSupported;
         }) == cudaSuccess;
}

bool has_unary(UnOp op, int dtype) {
  return visit(dtype, [&]<class T>() { return unary_supported<T>(op) ? cudaSuccess : cudaErrorNotSupported; }) ==
         cudaSuccess;
}

cudaError_t launch_binary(BinOp op, int dtype, const Iter<3>& it) {
  if (it.numel == 0) return cudaSuccess;
  return visit(dtype, [&]<class T>() { return binary_typed<T>(op, it); });
}

cudaError_t launch_unary(UnOp op, int dtype, const Iter<2>& it) {
  if (it.numel == 0) return cudaSuccess;
  return visit(dtype, [&]<class T>() { return unary_typed<T>(op, it); });
}

}  // namespace ember::cuda

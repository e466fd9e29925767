#pragma once
// The plain interface between the host glue (dispatch.cpp, compiled by the C++ compiler with
// Ember's headers) and the CUDA kernels (*.cu, compiled by nvcc without Ember's headers, so
// nvcc never has to parse fmt or the C++20 core). Only POD types cross this line.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ember::cuda {

/// Most dims a kernel indexes after coalescing (Ember keeps 8 inline; more is refused).
inline constexpr int kMaxDims = 8;

/// Dtype codes, in the order of ember::DType (checked by a static_assert in dispatch.cpp).
enum DTypeCode : int { kBool, kU8, kI8, kI32, kI64, kF16, kBF16, kF32, kF64 };

/// Geometry of an elementwise launch over `numel` elements of a (coalesced) shape;
/// operand i lives at data[i] with strides[i] in *elements* of its own dtype.
template <int N>
struct Iter {
  int ndim = 0;
  bool contiguous = false;  ///< every operand is dense row-major: index i is element i
  int64_t numel = 0;
  int64_t sizes[kMaxDims] = {};
  char* data[N] = {};
  int64_t strides[N][kMaxDims] = {};
};

/// Binary ops with a CUDA kernel (subset of ember::ops::BinaryOp, mapped in dispatch.cpp).
enum class BinOp : int { Add, Sub, Mul, Div, Maximum, Minimum };
/// Unary ops with a CUDA kernel (subset of ember::ops::UnaryOp, mapped in dispatch.cpp).
enum class UnOp : int { Neg, Abs, Square, Relu, Exp, Log, Sqrt, Rsqrt, Reciprocal, Sin, Cos, Tanh, Sigmoid, Silu };

// Launchers (elementwise.cu). They enqueue on the current device's default stream and return
// the launch status (cudaGetLastError); the caller turns failures into ember::Error.

/// dst[i] = value, where `value` holds the element's bytes (itemsize 1, 2, 4 or 8).
cudaError_t launch_fill(const Iter<1>& it, int itemsize, uint64_t value_bits);
/// dst[i] = convert(src[i]); data[0] = dst (dtype dst_dtype), data[1] = src.
cudaError_t launch_copy(const Iter<2>& it, int dst_dtype, int src_dtype);
/// out = a op b, all of `dtype`. Returns cudaErrorNotSupported for a (op, dtype) without kernel.
cudaError_t launch_binary(BinOp op, int dtype, const Iter<3>& it);
/// out = op(x), both of `dtype`. Returns cudaErrorNotSupported for a (op, dtype) without kernel.
cudaError_t launch_unary(UnOp op, int dtype, const Iter<2>& it);
/// Whether launch_binary / launch_unary have a kernel for (op, dtype).
bool has_binary(BinOp op, int dtype);
bool has_unary(UnOp op, int dtype);

}  // namespace ember::cuda

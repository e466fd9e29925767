#pragma once
/// The kernel entry points each backend provides. Kernels see only TensorImpl geometry
/// (data, sizes, strides, dtype): no autograd, no allocation of outputs, no checks beyond
/// what the op layer already did. Outputs are preallocated by the op (src/ops/).
/// A backend lacking a kernel defines it as a clear error (kernels_cuda/dispatch.cpp, and
/// src/no_cuda.cpp when CUDA is not built),
/// the pattern MLX uses for its no-GPU build.

#include <ember/core/scalar.hpp>
#include <ember/core/tensor_impl.hpp>
#include <ember/dispatch/policy.hpp>
#include <ember/ops/attention_heads.hpp>
#include <ember/ops/op_kinds.hpp>
#include <ember/ops/direct_conv_geometry.hpp>
#include <ember/ops/winograd_tiles.hpp>

namespace ember::ops {
struct ConvGeometry;  // ops/conv_ops.hpp
}  // namespace ember::ops

namespace ember::detail {

enum class CumOp : uint8_t { Sum, Prod, Max, Min, Logsumexp };
enum class ArgReduceOp : uint8_t { Max, Min };

template <class Backend>
struct Kernels;

#define EMBER_DECLARE_KERNELS                                                                          \
  /* out = op(x); out and x have the same shape; x already has the compute dtype */                    \
  static void unary(ops::UnaryOp op, const ops::UnaryParams& p, TensorImpl& out, const TensorImpl& x); \
  /* out = op(a, b); a and b are broadcast views of out's shape with the compute dtype */              \
  static void binary(ops::BinaryOp op, TensorImpl& out, const TensorImpl& a, const TensorImpl& b);     \
  /* out = cond ? a : b, all broadcast views of out's shape */                                         \
  static void where(TensorImpl& out, const TensorImpl& cond, const TensorImpl& a, const TensorImpl& b); \
  /* dst = src (same shape; any strides; converts dtype; either may be on host for copies across) */   \
  static void copy(TensorImpl& dst, const TensorImpl& src);                                            \
  static void fill(TensorImpl& dst, Scalar value);                                                     \
  /* out has x's shape with reduced dims set to 1 (keepdim layout); reduce_mask bit d = reduce dim d */ \
  static void reduce(ops::ReduceOp op, TensorImpl& out, const TensorImpl& x, uint64_t reduce_mask);    \
  /* values and indices along one dim (keepdim layout) */                                              \
  static void arg_reduce(ArgReduceOp op, TensorImpl* values, TensorImpl& indices, const TensorImpl& x, \
                         int64_t dim);                                                                 \
  static void softmax(TensorImpl& out, const TensorImpl& x, int64_t dim, bool log);                   \
  static void cumulative(CumOp op, TensorImpl& out, TensorImpl* indices, const TensorImpl& x,         \
                         int64_t dim);                                                                 \
  /* out[b] = alpha * a[b] @ b[b] + beta * out[b] for 3-d (batch, m, k) x (batch, k, n) views */       \
  static void gemm(TensorImpl& out, const TensorImpl& a, const TensorImpl& b, double alpha, double beta);

template <>
struct Kernels<Cpu> {
  EMBER_DECLARE_KERNELS
  /// gemm for 2-d f32/f64 matrices with out's prior value taken to be `row` (its columns) in
  /// every row when given, and out not read: a Linear's bias, added in the product's stores
  /// rather than copied into out first (ops::GemmPlan::bias_row); with `relu`, out is ReLU's
  /// of the result, also in the stores (ops::Matmul::relu).
  static void gemm_bias(TensorImpl& out, const TensorImpl& a, const TensorImpl& b, const TensorImpl* row,
                        double alpha, double beta, bool relu = false);
  /// dx = softmax / log_softmax derivative along `dim` from the upstream gradient g and the
  /// forward's output y (all contiguous, one f32/f64 dtype; dx may be g, as each element of g
  /// is read before its dx is written); see ops/softmax_backward_op.hpp.
  static void softmax_backward(TensorImpl& dx, const TensorImpl& g, const TensorImpl& y, int64_t dim, bool log);
  /// Layer normalisation over rows of `cols` (ops/norm_ops.hpp): y, and each row's mean and
  /// 1/std; weight/bias optional. Inputs contiguous, one f32/f64 dtype; mean and rstd f64.
  static void layer_norm(TensorImpl& y, TensorImpl& mean, TensorImpl& rstd, const TensorImpl& x,
                         const TensorImpl* weight, const TensorImpl* bias, int64_t cols, double eps);
  /// Its derivative: each of dx, dweight, dbias is computed when not null.
  static void layer_norm_backward(TensorImpl* dx, TensorImpl* dweight, TensorImpl* dbias, const TensorImpl& dy,
                                  const TensorImpl& x, const TensorImpl& mean, const TensorImpl& rstd,
                                  const TensorImpl* weight, int64_t cols);
  /// Depthwise 2-D convolution of contiguous (N, C, H, W) (ops/depthwise_conv_ops.hpp), bias
  /// optional; and its gradients, each computed when not null.
  static void depthwise_conv(const ops::ConvGeometry& g, const TensorImpl& x, const TensorImpl& w,
                             const TensorImpl* b, TensorImpl& y);
  static void depthwise_conv_backward(const ops::ConvGeometry& g, const TensorImpl& dy, const TensorImpl& x,
                                      const TensorImpl& w, TensorImpl* dx, TensorImpl* dw, TensorImpl* db);
  /// Batch normalisation of contiguous (N, C, inner) (ops/norm_ops.hpp): y and, when `var`
  /// is given (training), each channel's batch mean, biased variance and 1/std; otherwise
  /// `mean` and `rstd` are inputs (running statistics). weight/bias optional. Inputs
  /// contiguous, one f32/f64 dtype; mean, var and rstd f64.
  static void batch_norm(TensorImpl& y, TensorImpl& mean, TensorImpl* var, TensorImpl& rstd, const TensorImpl& x,
                         const TensorImpl* weight, const TensorImpl* bias, double eps);
  /// Its derivative: each of dx, dweight, dbias is computed when not null.
  static void batch_norm_backward(TensorImpl* dx, TensorImpl* dweight, TensorImpl* dbias, const TensorImpl& dy,
                                  const TensorImpl& x, const TensorImpl& mean, const TensorImpl& rstd,
                                  const TensorImpl* weight, bool training);
  /// Fused scaled dot-product attention of f32 heads (ops/attention_heads.hpp), each head's
  /// products, softmax and products in one task: returns false, doing nothing, when this CPU's
  /// kernel build has none for the shape (then src/ops/attention.cpp runs the general one).
  static bool attention_heads(const ops::AttentionHeads& a);
  /// Its derivative: the gradients whose output is given.
  static bool attention_heads_backward(const ops::AttentionHeads& a);
  /// Philox-based uniform [lo, hi) or normal(mean, std) fill at counter `offset`.
  static void fill_random(TensorImpl& dst, bool normal, double p0, double p1, uint64_t seed, uint64_t offset);
  /// A Winograd transform (ops/winograd_ops.hpp) between contiguous images (N, C, *) and the
  /// tiles of samples [n0, n1), (P, C, (n1 - n0) * tiles per sample) with P = t.positions()
  /// (contiguous rows; positions and channels may be further apart), for the channels
  /// [c0, c1) only; one f32/f64 dtype.
  static void winograd_transform(ops::WinogradTransform kind, const ops::WinogradTiles& t, int64_t n0, int64_t n1,
                                 int64_t c0, int64_t c1, const TensorImpl& src, TensorImpl& dst);
  /// Direct convolution (ops/direct_conv_ops.hpp) of the samples [n0, n1): their outputs of y,
  /// bias included when b is not null. All contiguous, one f32/f64 dtype; scratch holds at
  /// least g.padded_sample() + g.kw elements.
  static void direct_conv(const ops::DirectConvGeometry& g, int64_t n0, int64_t n1, const TensorImpl& x,
                          const TensorImpl& w, const TensorImpl* b, TensorImpl& y, TensorImpl& scratch);
  /// Its gradients for the samples [n0, n1): their part of dx (when not null) written, their
  /// contributions to dw (O, taps) and db (O) added (when not null). scratch: twice the above.
  static void direct_conv_backward(const ops::DirectConvGeometry& g, int64_t n0, int64_t n1, const TensorImpl& dy,
                                   const TensorImpl& x, const TensorImpl& w, TensorImpl* dx, TensorImpl* dw,
                                   TensorImpl* db, TensorImpl& scratch);
};

template <>
struct Kernels<Cuda> {
  EMBER_DECLARE_KERNELS
};

/// Installs the CUDA device hooks (allocator, copies) once; the Cuda backend calls this.
void cuda_ensure_initialized();

}  // namespace ember::detail

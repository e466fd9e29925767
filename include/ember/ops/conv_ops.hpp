#pragma once
/// im2col and col2im: the data movement behind convolution, average pooling and transposed
/// convolution, for 1 to 3 spatial dims, plus the window argmax behind max pooling.
/// Convolution is im2col followed by a matrix product (GEMM does the arithmetic), and each op
/// is the other's derivative, so every layer built on them is differentiable to any order.
/// Kernels: src/ops/conv.cpp (CPU, f32/f64, parallel over batch x channels).

#include <ember/ops/descriptors.hpp>
#include <ember/ops/index_ops.hpp>

#include <array>
#include <utility>

namespace ember::ops {

/// Window geometry per spatial dim (only the first `nd` entries are used).
struct ConvGeometry {
  int nd = 2;
  std::array<int64_t, 3> kernel{1, 1, 1}, stride{1, 1, 1}, dilation{1, 1, 1};
  std::array<int64_t, 3> pad_before{0, 0, 0}, pad_after{0, 0, 0};
  /// The value padding reads as (0 for convolution, -inf for max pooling).
  double pad_value = 0.0;
  /// im2col/col2im columns laid out (C * taps, N, L) instead of (N, C * taps, L): each row
  /// holds the windows of the whole batch side by side, so a convolution over the batch is
  /// one GEMM (O, K) @ (K, N * L) rather than N products of (O, K) @ (K, L).
  bool batch_in_columns = false;

  /// Output length along dim d for an input length `in`.
  int64_t out_size(int d, int64_t in) const {
    int64_t span = dilation[d] * (kernel[d] - 1) + 1;
    int64_t padded = in + pad_before[d] + pad_after[d];
    return padded < span ? 0 : (padded - span) / stride[d] + 1;
  }
  int64_t kernel_numel() const {
    int64_t k = 1;
    for (int d = 0; d < nd; ++d) k *= kernel[d];
    return k;
  }
};

/// (N, C, *in) -> (N, C * prod(kernel), L) with L = prod(out sizes): column (c, k...) of
/// window l holds the input element the window's tap k reads (or pad_value). With
/// g.batch_in_columns the result is (C * prod(kernel), N, L).
struct Im2Col {
  ConvGeometry g;
  const char* name() const { return "im2col"; }
  template <class BL>
  TensorRef run(const TensorImpl& x) const;
};

/// (N, C * prod(kernel), L) -> (N, C, *out): the adjoint of im2col (taps that read the same
/// input element are summed; taps on padding are dropped). `spatial` is the image size.
/// With g.batch_in_columns the columns are (C * prod(kernel), N, L).
struct Col2Im {
  ConvGeometry g;
  std::array<int64_t, 3> spatial{1, 1, 1};
  const char* name() const { return "col2im"; }
  template <class BL>
  TensorRef run(const TensorImpl& cols) const;
};

/// Max pooling: (N, C, *in) -> (values, int64 indices), both (N, C, *out). The index is the
/// flat position in its input plane of the window's largest element (the first one on ties;
/// NaN wins, as PyTorch's max_pool). Padding never wins.
struct MaxPool {
  ConvGeometry g;
  const char* name() const { return "max_pool"; }
  template <class BL>
  std::pair<TensorRef, TensorRef> run(const TensorImpl& x) const;
};

/// Max pooling's derivative: (N, C, *out) gradient and indices -> (N, C, *spatial), each
/// gradient added to the input element its window chose. Its own derivative is a gather.
struct MaxPoolBackward {
  int nd = 2;
  std::array<int64_t, 3> spatial{1, 1, 1};
  const char* name() const { return "max_pool_backward"; }
  template <class BL>
  TensorRef run(const TensorImpl& grad, const TensorImpl& indices) const;
};

// src/ops/conv.cpp
TensorRef im2col_cpu(const ConvGeometry& g, const TensorImpl& x);
std::pair<TensorRef, TensorRef> max_pool_cpu(const ConvGeometry& g, const TensorImpl& x);
TensorRef max_pool_backward_cpu(int nd, const std::array<int64_t, 3>& spatial, const TensorImpl& grad,
                                const TensorImpl& indices);
TensorRef col2im_cpu(const ConvGeometry& g, const std::array<int64_t, 3>& spatial, const TensorImpl& cols);
void check_geometry(const ConvGeometry& g, const char* op);

template <class BL>
TensorRef Im2Col::run(const TensorImpl& x) const {
  check_geometry(g, name());
  return index_backend<BL>(x.device(), name(), [&] { return im2col_cpu(g, x); });
}

template <class BL>
TensorRef Col2Im::run(const TensorImpl& cols) const {
  check_geometry(g, name());
  return index_backend<BL>(cols.device(), name(), [&] { return col2im_cpu(g, spatial, cols); });
}

template <class BL>
std::pair<TensorRef, TensorRef> MaxPool::run(const TensorImpl& x) const {
  check_geometry(g, name());
  return index_backend<BL>(x.device(), name(), [&] { return max_pool_cpu(g, x); });
}

template <class BL>
TensorRef MaxPoolBackward::run(const TensorImpl& grad, const TensorImpl& indices) const {
  return index_backend<BL>(grad.device(), name(), [&] { return max_pool_backward_cpu(nd, spatial, grad, indices); });
}

}  // namespace ember::ops

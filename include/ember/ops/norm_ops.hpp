#pragma once
/// Layer and batch normalisation as one op each. Layer normalisation: the composite form (var_mean, sub, add, rsqrt, two muls and
/// an add, and about twice that many ops backward) makes ~5 passes over the activations each
/// way; this makes two forward (row statistics, then the normalised output) and two backward.
/// Kernels: src/ops/norm.cpp (CPU, f32/f64). The derivative (autograd/derivatives_norm.hpp)
/// uses the fused backward for a plain backward and the composite formula, written with
/// differentiable ops, when the graph of the backward is recorded (create_graph).

#include <ember/ops/descriptors.hpp>
#include <ember/ops/index_ops.hpp>

namespace ember::ops {

/// Rows of `cols` elements (the normalised trailing dims of x, contiguous): y = (x - mean) *
/// rstd [* weight] [+ bias], with rstd = 1 / sqrt(biased var + eps). mean and rstd (one per
/// row: 1-d of x.numel / cols, f64 for an f32 x too: the statistics are summed in f64) are
/// kept for the derivative, which an f32 x gets in f64 arithmetic (kernels_cpu/layer_norm.cpp).
struct LayerNormResult {
  TensorRef y, mean, rstd;
};
struct LayerNorm {
  int64_t cols = 1;
  double eps = 1e-5;
  const char* name() const { return "layer_norm"; }
  template <class BL>
  LayerNormResult run(const TensorImpl& x, const TensorImpl* weight, const TensorImpl* bias) const;
};

/// The fused derivative: dx, dweight, dbias (each computed only when asked for) from the output
/// gradient and what the forward kept. Runs only inside a plain backward (never recorded).
struct LayerNormGrads {
  TensorRef dx, dweight, dbias;
};
struct LayerNormBackward {
  int64_t cols = 1;
  bool need_x = true, need_weight = false, need_bias = false;
  const char* name() const { return "layer_norm_backward"; }
  template <class BL>
  LayerNormGrads run(const TensorImpl& dy, const TensorImpl& x, const TensorImpl& mean, const TensorImpl& rstd,
                     const TensorImpl* weight) const;
};

/// Batch normalisation of (N, C, *) as one op, per channel over N and the trailing dims:
/// y = (x - mean) * rstd [* weight] [+ bias]. Training uses the batch's mean and biased
/// variance (returned for the running statistics; rstd = 1 / sqrt(var + eps)); evaluation the
/// given running statistics. The composite form made ~6 passes over the activations forward
/// and ~14 backward; this makes three forward (mean, variance, output) and two backward.
/// mean, var and rstd are (C) f64 tensors, also for an f32 input (its sums are shifted and
/// added up in f64, see kernels_cpu/batch_norm.cpp); var is only computed when training.
struct BatchNormResult {
  TensorRef y, mean, var, rstd;
};
struct BatchNorm {
  double eps = 1e-5;
  bool training = true;
  const char* name() const { return "batch_norm"; }
  /// running_mean/var: read in evaluation only (the caller updates them when training).
  template <class BL>
  BatchNormResult run(const TensorImpl& x, const TensorImpl* weight, const TensorImpl* bias,
                      const TensorImpl* running_mean, const TensorImpl* running_var) const;
};
/// Its derivative from what the forward kept (mean, rstd): with batch statistics (training)
/// the input gradient includes their dependence on x; with running ones it is dy * weight *
/// rstd. Runs only inside a plain backward (never recorded).
struct BatchNormGrads {
  TensorRef dx, dweight, dbias;
};
struct BatchNormBackward {
  bool training = true;
  bool need_x = true, need_weight = false, need_bias = false;
  const char* name() const { return "batch_norm_backward"; }
  template <class BL>
  BatchNormGrads run(const TensorImpl& dy, const TensorImpl& x, const TensorImpl& mean, const TensorImpl& rstd,
                     const TensorImpl* weight) const;
};

LayerNormResult layer_norm_cpu(const LayerNorm& op, const TensorImpl& x, const TensorImpl* weight,
                               const TensorImpl* bias);
BatchNormResult batch_norm_cpu(const BatchNorm& op, const TensorImpl& x, const TensorImpl* weight,
                               const TensorImpl* bias, const TensorImpl* running_mean, const TensorImpl* running_var);
BatchNormGrads batch_norm_backward_cpu(const BatchNormBackward& op, const TensorImpl& dy, const TensorImpl& x,
                                       const TensorImpl& mean, const TensorImpl& rstd, const TensorImpl* weight);
LayerNormGrads layer_norm_backward_cpu(const LayerNormBackward& op, const TensorImpl& dy, const TensorImpl& x,
                                       const TensorImpl& mean, const TensorImpl& rstd, const TensorImpl* weight);

template <class BL>
LayerNormResult LayerNorm::run(const TensorImpl& x, const TensorImpl* weight, const TensorImpl* bias) const {
  return index_backend<BL>(x.device(), name(), [&] { return layer_norm_cpu(*this, x, weight, bias); });
}
template <class BL>
LayerNormGrads LayerNormBackward::run(const TensorImpl& dy, const TensorImpl& x, const TensorImpl& mean,
                                      const TensorImpl& rstd, const TensorImpl* weight) const {
  return index_backend<BL>(x.device(), name(), [&] { return layer_norm_backward_cpu(*this, dy, x, mean, rstd, weight); });
}

template <class BL>
BatchNormResult BatchNorm::run(const TensorImpl& x, const TensorImpl* weight, const TensorImpl* bias,
                               const TensorImpl* running_mean, const TensorImpl* running_var) const {
  return index_backend<BL>(x.device(), name(),
                           [&] { return batch_norm_cpu(*this, x, weight, bias, running_mean, running_var); });
}
template <class BL>
BatchNormGrads BatchNormBackward::run(const TensorImpl& dy, const TensorImpl& x, const TensorImpl& mean,
                                      const TensorImpl& rstd, const TensorImpl* weight) const {
  return index_backend<BL>(x.device(), name(), [&] { return batch_norm_backward_cpu(*this, dy, x, mean, rstd, weight); });
}

}  // namespace ember::ops

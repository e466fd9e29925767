#pragma once
/// The derivative of softmax and log_softmax as one op. Written with elementwise ops it is
/// four passes over the activations (g * y, its sum along the dim, the subtraction and the
/// product; for log_softmax exp, sum, product and subtraction), each a round trip through
/// memory; this is one read of g and y per row for the sum and one for the result.
///   softmax:     dx = y * (g - sum(g * y))
///   log_softmax: dx = g - exp(y) * sum(g)
/// Kernels: kernels_cpu/reduce.cpp (CPU, f32/f64, per ISA; checks in src/ops/softmax_backward.cpp).
/// Like layer_norm_backward it runs only
/// inside a plain backward (autograd/derivatives_reduce.hpp); under create_graph the
/// derivative uses the composite formula, so higher derivatives stay right.

#include <ember/ops/descriptors.hpp>
#include <ember/ops/index_ops.hpp>

namespace ember::ops {

struct SoftmaxBackward {
  int64_t dim;  ///< already wrapped into [0, ndim)
  bool log = false;
  const char* name() const { return log ? "log_softmax_backward" : "softmax_backward"; }
  template <class BL>
  TensorRef run(const TensorImpl& grad, const TensorImpl& out) const;
};

TensorRef softmax_backward_cpu(const SoftmaxBackward& op, const TensorImpl& grad, const TensorImpl& out);

template <class BL>
TensorRef SoftmaxBackward::run(const TensorImpl& grad, const TensorImpl& out) const {
  return index_backend<BL>(out.device(), name(), [&] { return softmax_backward_cpu(*this, grad, out); });
}

}  // namespace ember::ops

#pragma once
/// F::gumbel_softmax, as torch.nn.functional's: a differentiable sample from the categorical
/// distribution that softmax(logits) describes. Gumbel noise -log(E), E ~ Exponential(1), is
/// added to the logits, which are divided by tau and softmaxed over dim; with `hard` the
/// result is the one-hot of that sample's largest entry in the forward pass, with the soft
/// sample's gradient (straight-through: y_hard - y.detach() + y).
///
///   Tensor choice = F::gumbel_softmax(logits, 0.5, /*hard=*/true);   // one-hot rows

#include <ember/nn/functional.hpp>
#include <ember/ops/shape_ops.hpp>

#include <cmath>
#include <limits>

namespace ember::nn::functional {

template <class P>
BasicTensor<P> gumbel_softmax(const BasicTensor<P>& logits, double tau = 1.0, bool hard = false, int64_t dim = -1) {
  EMBER_CHECK(logits.is_floating_point(), "[gumbel_softmax] expects floating-point logits, got {}", logits.dtype());
  EMBER_CHECK(tau > 0 && std::isfinite(tau), "[gumbel_softmax] tau must be finite and > 0, got {}", tau);
  EMBER_CHECK(logits.dim() > 0, "[gumbel_softmax] expects at least 1 dim, got a 0-d tensor");
  const int64_t d = wrap_dim(dim, logits.dim(), "gumbel_softmax");
  // E = -log(1 - u) for u uniform on [0, 1), kept above 0 so that the noise stays finite.
  const BasicTensor<P> u = rand<P>(logits.sizes(), TensorOptions(DType::F64).device(logits.device()));
  const BasicTensor<P> e = u.neg().log1p().neg().clamp_min(std::numeric_limits<double>::min());
  const BasicTensor<P> gumbels = e.log().neg().to(logits.dtype());
  const BasicTensor<P> y = logits.add(gumbels).div(tau).softmax(d);
  if (!hard) return y;
  const BasicTensor<P> y_hard = zeros_like(y).scatter(d, y.argmax(d, true), 1.0);
  return y_hard.sub(y.detach()).add(y);
}

}  // namespace ember::nn::functional

#pragma once
/// Softmax for attention scores, where a row can be masked out entirely.

#include <ember/autograd/grad_mode.hpp>
#include <ember/ops/functions.hpp>

#include <limits>

namespace ember::detail {

/// softmax over the last dim, except that a row whose every score is -inf (a query that may
/// attend to nothing, e.g. a padding-only sequence) gives zeros instead of NaN, as PyTorch's
/// scaled_dot_product_attention (its _safe_softmax, since 2.5). The NaN would also reach every
/// gradient through the softmax's backward, even of outputs that do not use that row. The
/// fused attention kernel (src/ops/attention.cpp) does the same.
/// The common case (no such row) costs one max over the rows and a look at the result.
template <class P>
BasicTensor<P> softmax_masked_rows_zero(const BasicTensor<P>& scores) {
  if (scores.dim() == 0 || scores.size(-1) == 0) return scores.softmax(-1);
  BasicTensor<P> dead;
  {
    ember::detail::NoGradGuardFor<P> ng;  // the test is not part of the function
    dead = scores.amax({-1}, true).eq(-std::numeric_limits<double>::infinity());
    if (!dead.any().template item<bool>()) dead = BasicTensor<P>();
  }
  if (!dead.defined()) return scores.softmax(-1);
  // The dead rows' scores are replaced before the softmax too, so that its backward sees
  // finite probabilities (0 * NaN would be NaN).
  return scores.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0);
}

}  // namespace ember::detail

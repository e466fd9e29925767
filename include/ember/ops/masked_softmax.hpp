#pragma once
/// Softmax for attention scores, where a row can be masked out entirely.

#include <ember/ops/functions.hpp>

#include <limits>

namespace ember::detail {

/// softmax over the last dim, except that a row whose every score is -inf (a query that may
/// attend to nothing, e.g. a padding-only sequence) gives zeros instead of NaN, as PyTorch's
/// scaled_dot_product_attention (its _safe_softmax, since 2.5). The NaN would also reach every
/// gradient through the softmax's backward, even of outputs that do not use that row. The
/// fused attention kernel (src/ops/attention.cpp) does the same.
template <class P>
BasicTensor<P> softmax_masked_rows_zero(const BasicTensor<P>& scores) {
  const BasicTensor<P> dead = scores.eq(-std::numeric_limits<double>::infinity()).all({-1}, true);
  if (!dead.any().template item<bool>()) return scores.softmax(-1);
  return scores.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0);
}

}  // namespace ember::detail

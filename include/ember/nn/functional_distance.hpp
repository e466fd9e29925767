#pragma once
/// Distances between all pairs of rows, as torch::cdist and torch::pdist:
///
///   Tensor d = ember::cdist(queries, keys);        // (..., P, M) x (..., R, M) -> (..., P, R)
///   Tensor nn = d.argmin(-1);                      // nearest key of each query
///   Tensor u = ember::pdist(points, 1.0);          // the N (N - 1) / 2 pairs i < j of one set
///
/// The p-norm of each difference of rows: p = 0 counts differing elements, p = inf takes the
/// largest. Euclidean distances (p = 2) between sets with more than 25 rows go through a
/// matrix product, ||a||^2 - 2 a.b + ||b||^2 clamped at 0 (PyTorch's default
/// compute_mode, "use_mm_for_euclid_dist_if_necessary"): much faster, slightly less accurate
/// for nearly equal rows. The other distances are taken row block by row block, so that the
/// differences never take more than a few MiB at once without grad. Gradients are PyTorch's,
/// 0 at a zero distance; both are twice differentiable.

#include <ember/autograd/function.hpp>
#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/descriptors.hpp>
#include <ember/ops/functions.hpp>
#include <ember/ops/norm_ops.hpp>
#include <ember/ops/shape_ops.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

namespace ember::nn::functional {

namespace detail {

/// PyTorch's _euclidean_dist: sqrt(max(0, ||a||^2 - 2 a.b + ||b||^2)) by one matrix product of
/// padded operands, with its backward (0 where the distance is 0, written with differentiable
/// ops, so that it can be differentiated again).
template <class P>
struct EuclideanDist : autograd::Function<EuclideanDist<P>, P> {
  using TensorT = BasicTensor<P>;
  static constexpr const char* name = "EuclideanDist";
  static TensorT forward(autograd::BasicAutogradContext<P>* ctx, const TensorT& x1, const TensorT& x2) {
    TensorT x1_norm = x1.pow(2.0).sum({-1}, true), x2_norm = x2.pow(2.0).sum({-1}, true);
    TensorT a = cat(std::vector<TensorT>{x1 * -2.0, x1_norm, ones_like(x1_norm)}, -1);
    TensorT b = cat(std::vector<TensorT>{x2, ones_like(x2_norm), x2_norm}, -1);
    TensorT res = a.matmul(b.transpose(-2, -1)).clamp_min(0.0).sqrt();
    ctx->save_for_backward({x1, x2, res});
    return res;
  }
  static std::vector<TensorT> backward(autograd::BasicAutogradContext<P>* ctx, std::vector<TensorT> grads) {
    auto saved = ctx->get_saved_variables();
    const TensorT &x1 = saved[0], &x2 = saved[1], &res = saved[2];
    TensorT ratio = (grads[0] / res).masked_fill(res.eq(0.0), 0.0);
    TensorT g1, g2;
    if (ctx->needs_input_grad(0)) g1 = x1 * ratio.sum({-1}, true) - ratio.matmul(x2);
    if (ctx->needs_input_grad(1)) g2 = x2 * ratio.sum({-2}).unsqueeze(-1) - ratio.transpose(-2, -1).matmul(x1);
    return {g1, g2};
  }
};

/// The p-norm over the last dim of a - b: rows of `a` (..., n, M) against rows of `b`
/// (..., 1 or n, M) broadcast as the caller arranged them; M > 0.
template <class P>
BasicTensor<P> pnorm_last(const BasicTensor<P>& diff, double p) {
  // inf: max |d|. amax shares the gradient among tied elements, where PyTorch's cdist gives
  // each of them all of it (they differ only at ties).
  if (std::isinf(p)) return diff.abs().amax({-1});
  return diff.norm(p, {-1});
}

/// Rows per block so that a block's differences hold about 2^21 elements.
inline int64_t block_rows(int64_t per_row) { return std::max<int64_t>(1, (int64_t{1} << 21) / std::max<int64_t>(1, per_row)); }

inline void check_p(const char* op, double p) {
  EMBER_CHECK(p >= 0, "[{}] only supports non-negative p values, got {}", op, p);  // refuses NaN too
}

}  // namespace detail

/// The p-norm distance of every row of x1 (..., P, M) to every row of x2 (..., R, M): a tensor
/// (..., P, R), batch dims broadcast. compute_mode as libtorch's: nullopt or 0 uses the matrix
/// product for p = 2 when P or R exceeds 25, 1 always for p = 2, 2 never.
template <class P>
BasicTensor<P> cdist(const BasicTensor<P>& x1, const BasicTensor<P>& x2, double p = 2.0,
                     std::optional<int64_t> compute_mode = std::nullopt) {
  constexpr const char* op = "cdist";
  detail::check_p(op, p);
  EMBER_CHECK(x1.is_floating_point() && x2.is_floating_point() && x1.dtype() == x2.dtype(),
              "[{}] expects two floating-point tensors of one dtype, got {} and {}", op, x1.dtype(), x2.dtype());
  EMBER_CHECK(x1.dim() >= 2 && x2.dim() >= 2, "[{}] expects tensors of at least 2 dims, got shapes {} and {}", op,
              x1.sizes(), x2.sizes());
  EMBER_CHECK(x1.size(-1) == x2.size(-1), "[{}] x1 and x2 must have the same number of columns, got shapes {} and {}",
              op, x1.sizes(), x2.sizes());
  EMBER_CHECK(x1.device() == x2.device(), "[{}] expects tensors on one device, got {} and {}", op, x1.device(),
              x2.device());
  const int64_t mode = compute_mode.value_or(0);
  EMBER_CHECK(mode >= 0 && mode <= 2,
              "[{}] compute_mode must be 0 (matrix product if necessary), 1 (always) or 2 (never), got {}", op, mode);
  const int64_t rows1 = x1.size(-2), rows2 = x2.size(-2), cols = x1.size(-1);
  Shape b1, b2;
  for (int64_t d = 0; d < x1.dim() - 2; ++d) b1.push_back(x1.size(d));
  for (int64_t d = 0; d < x2.dim() - 2; ++d) b2.push_back(x2.size(d));
  Shape batch = ops::broadcast_shapes(b1, b2, op);
  Shape s1 = batch, s2 = batch, out_shape = batch;
  s1.push_back(rows1), s1.push_back(cols);
  s2.push_back(rows2), s2.push_back(cols);
  out_shape.push_back(rows1), out_shape.push_back(rows2);
  BasicTensor<P> a = x1.expand(s1), b = x2.expand(s2);
  if (rows1 == 0 || rows2 == 0) return empty<P>(out_shape, TensorOptions(x1.dtype()).device(x1.device()));
  // No columns: every distance is 0 (an empty sum; inf: PyTorch's 0 too).
  if (cols == 0) return (a.sum({-1}).unsqueeze(-1) + b.sum({-1}).unsqueeze(-2)) * 0.0;
  if (p == 2 && (mode == 1 || (mode == 0 && (rows1 > 25 || rows2 > 25))))
    return detail::EuclideanDist<P>::apply(a, b);
  // Row blocks of x1 against all of x2: (..., n, 1, M) - (..., 1, R, M).
  int64_t batch_n = 1;
  for (int64_t d : batch) batch_n *= d;
  const int64_t step = detail::block_rows(batch_n * rows2 * cols);
  std::vector<BasicTensor<P>> parts;
  for (int64_t r = 0; r < rows1; r += step) {
    BasicTensor<P> rows = a.narrow(-2, r, std::min(step, rows1 - r));
    parts.push_back(detail::pnorm_last(rows.unsqueeze(-2) - b.unsqueeze(-3), p));
  }
  return parts.size() == 1 ? parts[0] : cat(parts, -2);
}

/// The p-norm distance of every pair of rows i < j of x (N, M), in the order (0, 1), (0, 2),
/// ..., (0, N-1), (1, 2), ...: a 1-d tensor of N (N - 1) / 2 values.
template <class P>
BasicTensor<P> pdist(const BasicTensor<P>& x, double p = 2.0) {
  constexpr const char* op = "pdist";
  detail::check_p(op, p);
  EMBER_CHECK(x.dim() == 2, "[{}] expects a 2-d tensor (N, M), got shape {}", op, x.sizes());
  EMBER_CHECK(x.is_floating_point(), "[{}] expects a floating-point tensor, got {}", op, x.dtype());
  const int64_t n = x.size(0), cols = x.size(1);
  const int64_t pairs = n * (n - 1) / 2;
  if (pairs == 0) return empty<P>({0}, TensorOptions(x.dtype()).device(x.device()));
  if (cols == 0) return zeros<P>({pairs}, TensorOptions(x.dtype()).device(x.device())) + x.sum() * 0.0;
  // Blocks of pairs: their row indices on the host (one block at a time, so that a large N
  // never holds all N^2 / 2 of them), then one gather of both rows.
  const int64_t step = detail::block_rows(cols);
  std::vector<int64_t> idx;
  std::vector<BasicTensor<P>> parts;
  int64_t i = 0, j = 1;
  for (int64_t k = 0; k < pairs; k += step) {
    const int64_t len = std::min(step, pairs - k);
    idx.resize(static_cast<size_t>(2 * len));
    for (int64_t q = 0; q < len; ++q) {
      idx[static_cast<size_t>(q)] = i, idx[static_cast<size_t>(len + q)] = j;
      if (++j == n) ++i, j = i + 1;
    }
    // A copy: index_select's backward keeps the indices, and idx is reused.
    BasicTensor<P> both = from_blob<P>(idx.data(), {2, len}, TensorOptions(DType::I64)).clone().to(x.device());
    BasicTensor<P> d = x.index_select(0, both[0]) - x.index_select(0, both[1]);
    parts.push_back(detail::pnorm_last(d, p));
  }
  return parts.size() == 1 ? parts[0] : cat(parts, 0);
}

}  // namespace ember::nn::functional

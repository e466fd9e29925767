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
/// compute_mode, "use_mm_for_euclid_dist_if_necessary"): much faster, less accurate for nearly
/// equal rows. The other distances are taken in blocks of rows of both sets, forward and
/// backward, so that about 2^21 differences exist at once (the batch times one row of each at
/// the least), not all P x R x M. Gradients are PyTorch's (0 at a zero distance; at p = inf
/// every tied element gets the whole gradient); both forms can be differentiated again.

#include <ember/autograd/function.hpp>
#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/descriptors.hpp>
#include <ember/ops/functions.hpp>
#include <ember/ops/norm_ops.hpp>
#include <ember/ops/shape_ops.hpp>

#include <algorithm>
#include <any>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>
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
    const TensorT zero = res.eq(0.0);
    // Divided by a safe value under the mask: a second derivative stays finite at zero distances.
    TensorT ratio = (grads[0] / res.masked_fill(zero, 1.0)).masked_fill(zero, 0.0);
    TensorT g1, g2;
    if (ctx->needs_input_grad(0)) g1 = x1 * ratio.sum({-1}, true) - ratio.matmul(x2);
    if (ctx->needs_input_grad(1)) g2 = x2 * ratio.sum({-2}).unsqueeze(-1) - ratio.transpose(-2, -1).matmul(x1);
    return {g1, g2};
  }
};

/// ||diff||_p over the last dim (p = inf: max |diff|).
template <class P>
BasicTensor<P> pnorm_last(const BasicTensor<P>& diff, double p) {
  if (std::isinf(p)) return diff.abs().amax({-1});
  return diff.norm(p, {-1});
}

/// Block sizes (rows of x1, rows of x2) so that one block of differences, batch x n1 x n2 x M,
/// holds about 2^21 elements (at least one row of each).
inline std::pair<int64_t, int64_t> cdist_blocks(int64_t batch, int64_t rows1, int64_t rows2, int64_t cols) {
  constexpr int64_t budget = int64_t{1} << 21;
  const int64_t per_pair = std::max<int64_t>(1, batch * cols);
  const int64_t n2 = std::clamp<int64_t>(budget / per_pair, 1, std::max<int64_t>(1, rows2));
  const int64_t n1 = std::clamp<int64_t>(budget / (per_pair * n2), 1, std::max<int64_t>(1, rows1));
  return {n1, n2};
}

/// The gradient of ||diff||_p (dist) for each element of diff, times g: PyTorch's
/// _cdist_backward terms, 0 at a zero distance (and, for p < 1, at a zero difference). The
/// masked places go through safe values, so that a second derivative stays finite too.
template <class P>
BasicTensor<P> cdist_grad_term(const BasicTensor<P>& diff, const BasicTensor<P>& dist, const BasicTensor<P>& g,
                               double p) {
  if (p == 1) return diff.sign() * g;
  if (std::isinf(p)) return diff.sign() * diff.abs().eq(dist).to(diff.dtype()) * g;
  const BasicTensor<P> zero_dist = dist.eq(0.0);
  const BasicTensor<P> d = dist.masked_fill(zero_dist, 1.0);
  if (p == 2) return (diff * (g / d)).masked_fill(zero_dist, 0.0);
  // |diff| with 1 at zero differences: |diff|^(p - 1) and |diff|^(p - 2) have infinite
  // derivatives there (p < 3), which a second derivative would multiply by 0.
  const BasicTensor<P> zero_diff = diff.eq(0.0);
  const BasicTensor<P> a = diff.abs().masked_fill(zero_diff, 1.0);
  BasicTensor<P> term;
  if (p < 2) term = diff.sign() * a.pow(p - 1) * (g / d.pow(p - 1));
  else term = diff * a.pow(p - 2) * (g / d.pow(p - 1));
  return term.masked_fill(zero_diff.logical_or(zero_dist), 0.0);
}

/// cdist's direct form (every p; p = 2 without the matrix product) over blocks of rows of
/// both operands, forward and backward (PyTorch's _cdist_forward and _cdist_backward): no
/// more than a block of differences exists at once, with or without grad. a (..., P, M) and
/// b (..., R, M) have the same batch dims, P, R, M > 0. The backward is written with
/// differentiable ops, so it can be differentiated again.
template <class P>
struct CdistDirect : autograd::Function<CdistDirect<P>, P> {
  using TensorT = BasicTensor<P>;
  static constexpr const char* name = "Cdist";
  static std::pair<int64_t, int64_t> blocks(const TensorT& a, const TensorT& b) {
    int64_t batch = 1;
    for (int64_t d = 0; d < a.dim() - 2; ++d) batch *= a.size(d);
    return cdist_blocks(batch, a.size(-2), b.size(-2), a.size(-1));
  }
  static TensorT forward(autograd::BasicAutogradContext<P>* ctx, const TensorT& a, const TensorT& b, double p) {
    const int64_t rows1 = a.size(-2), rows2 = b.size(-2);
    const auto [n1, n2] = blocks(a, b);
    std::vector<TensorT> rows;
    for (int64_t r = 0; r < rows1; r += n1) {
      const TensorT ar = a.narrow(-2, r, std::min(n1, rows1 - r)).unsqueeze(-2);
      std::vector<TensorT> cols;
      for (int64_t c = 0; c < rows2; c += n2)
        cols.push_back(pnorm_last(ar - b.narrow(-2, c, std::min(n2, rows2 - c)).unsqueeze(-3), p));
      rows.push_back(cols.size() == 1 ? cols[0] : cat(cols, -1));
    }
    TensorT res = rows.size() == 1 ? rows[0] : cat(rows, -2);
    ctx->save_for_backward({a, b, res});
    ctx->saved_data["p"] = p;
    return res;
  }
  static std::vector<TensorT> backward(autograd::BasicAutogradContext<P>* ctx, std::vector<TensorT> grads) {
    auto saved = ctx->get_saved_variables();
    const TensorT &a = saved[0], &b = saved[1], &res = saved[2], &grad = grads[0];
    const double p = std::any_cast<double>(ctx->saved_data["p"]);
    const bool need1 = ctx->needs_input_grad(0), need2 = ctx->needs_input_grad(1);
    if (p == 0)  // a count: its gradient is 0
      return {need1 ? zeros_like(a) : TensorT(), need2 ? zeros_like(b) : TensorT(), TensorT()};
    const int64_t rows1 = a.size(-2), rows2 = b.size(-2);
    const auto [n1, n2] = blocks(a, b);
    std::vector<TensorT> g1_rows, g2_cols;
    for (int64_t r = 0; r < rows1; r += n1) {
      const int64_t len1 = std::min(n1, rows1 - r);
      const TensorT ar = a.narrow(-2, r, len1).unsqueeze(-2);
      TensorT g1;
      for (int64_t c = 0, k = 0; c < rows2; c += n2, ++k) {
        const int64_t len2 = std::min(n2, rows2 - c);
        const TensorT diff = ar - b.narrow(-2, c, len2).unsqueeze(-3);  // (..., len1, len2, M)
        const TensorT term = cdist_grad_term(diff, res.narrow(-2, r, len1).narrow(-1, c, len2).unsqueeze(-1),
                                             grad.narrow(-2, r, len1).narrow(-1, c, len2).unsqueeze(-1), p);
        if (need1) {
          const TensorT t1 = term.sum({-2});
          g1 = g1.defined() ? g1 + t1 : t1;
        }
        if (need2) {
          const TensorT t2 = term.sum({-3}).neg();
          if (static_cast<size_t>(k) < g2_cols.size()) g2_cols[static_cast<size_t>(k)] = g2_cols[static_cast<size_t>(k)] + t2;
          else g2_cols.push_back(t2);
        }
      }
      if (need1) g1_rows.push_back(g1);
    }
    auto joined = [](const std::vector<TensorT>& parts) {
      return parts.empty() ? TensorT() : parts.size() == 1 ? parts[0] : cat(parts, -2);
    };
    return {joined(g1_rows), joined(g2_cols), TensorT()};  // none for p
  }
};

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
  // No rows or no columns: zeros (an empty sum; inf too, as PyTorch's), still connected to
  // the inputs, so that a backward through them works.
  if (rows1 == 0 || rows2 == 0 || cols == 0) return (a.sum({-1}).unsqueeze(-1) + b.sum({-1}).unsqueeze(-2)) * 0.0;
  if (p == 2 && (mode == 1 || (mode == 0 && (rows1 > 25 || rows2 > 25))))
    return detail::EuclideanDist<P>::apply(a, b);
  return detail::CdistDirect<P>::apply(a, b, p);
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
  if (pairs == 0 || cols == 0) return zeros<P>({pairs}, TensorOptions(x.dtype()).device(x.device())) + x.sum() * 0.0;
  // Blocks of rows i against the rows after the block's first (cdist's direct form, forward
  // and backward), keeping the pairs j > i of each row: about N^2 / 2 distances in all, no
  // more than ~2^22 of them (and their mask) at once.
  const int64_t rows_per_block = std::max<int64_t>(1, (int64_t{1} << 22) / n);
  std::vector<BasicTensor<P>> parts;
  for (int64_t r = 0; r + 1 < n; r += rows_per_block) {
    const int64_t len = std::min(rows_per_block, n - 1 - r);  // the last row has no pair
    const BasicTensor<P> block = detail::CdistDirect<P>::apply(x.narrow(0, r, len), x.narrow(0, r + 1, n - r - 1), p);
    // Row i = r + k keeps columns j - (r + 1) >= k: the upper triangle from the diagonal.
    const BasicTensor<P> keep =
        ones<P>({len, n - r - 1}, TensorOptions(DType::Bool).device(x.device())).triu(0);
    parts.push_back(block.masked_select(keep));
  }
  return parts.size() == 1 ? parts[0] : cat(parts, 0);
}

}  // namespace ember::nn::functional

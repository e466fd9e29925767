#pragma once
/// nn::functional for the table and product layers: embedding, embedding_bag, bilinear, plus
/// pad and one_hot under the names torch::nn::functional users look for. The Embedding,
/// EmbeddingBag and Bilinear modules forward to these.

#include <ember/autograd/function.hpp>
#include <ember/autograd/grad_mode.hpp>
#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/functions.hpp>
#include <ember/ops/shape_ops.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <string_view>
#include <vector>

namespace ember::nn::functional {

using ember::one_hot;
using ember::pad;

namespace detail {
/// padding_idx in [-rows, rows), made non-negative.
inline std::optional<int64_t> resolve_padding_idx(std::optional<int64_t> padding_idx, int64_t rows, const char* op) {
  if (!padding_idx) return padding_idx;
  const int64_t p = *padding_idx;
  EMBER_CHECK(p >= -rows && p < rows, "[{}] padding_idx {} is out of range for {} embeddings", op, p, rows);
  return p < 0 ? p + rows : p;
}
template <class P>
void check_embedding_args(const BasicTensor<P>& idx, const BasicTensor<P>& weight, const char* op) {
  EMBER_CHECK(weight.defined() && weight.dim() == 2, "[{}] weight must be 2-d (num_embeddings, embedding_dim), got {}",
              op, weight.defined() ? weight.sizes() : Shape{});
  EMBER_CHECK(idx.dtype() == DType::I64 || idx.dtype() == DType::I32, "[{}] indices must be integers (i64 or i32), got {}",
              op, idx.dtype());
}

/// The indices as a host vector (for the checks and counts done once per call).
template <class P>
std::vector<int64_t> host_indices(const BasicTensor<P>& flat) {
  BasicTensor<P> host = flat.to(Device::cpu()).contiguous();
  const int64_t* p = host.template data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + host.numel());
}

/// PyTorch's embedding_renorm_: every row of `weight` that `index` reads and whose
/// norm_type-norm exceeds max_norm is scaled in place by max_norm / (norm + 1e-7), outside
/// autograd (the forward then reads the renormalised rows; the gradient does not see the
/// scaling). Each row once, as PyTorch.
template <class P>
void embedding_renorm_(const BasicTensor<P>& weight, std::vector<int64_t> index, double max_norm, double norm_type,
                       const char* op) {
  EMBER_CHECK(max_norm >= 0, "[{}] max_norm must be non-negative, got {}", op, max_norm);
  EMBER_CHECK(norm_type > 0, "[{}] norm_type must be positive, got {}", op, norm_type);
  std::sort(index.begin(), index.end());
  index.erase(std::unique(index.begin(), index.end()), index.end());
  const int64_t rows = weight.size(0);
  for (int64_t i : {index.empty() ? 0 : index.front(), index.empty() ? 0 : index.back()})
    EMBER_CHECK(index.empty() || (i >= 0 && i < rows), "[{}] index {} is out of range for {} embeddings", op, i, rows);
  ember::detail::NoGradGuardFor<P> ng;
  for (int64_t i : index) {
    BasicTensor<P> row = weight.select(0, i);
    const double norm = row.norm(norm_type).template item<double>();
    if (norm > max_norm) row.mul_(max_norm / (norm + 1e-7));
  }
}

/// Identity forward; backward multiplies the gradient by `scale` (broadcast). With it,
/// scale_grad_by_freq divides each looked-up row's gradient by how often the batch reads
/// that row, as PyTorch's embedding backward.
template <class P>
struct ScaleGradient : autograd::Function<ScaleGradient<P>, P> {
  using T = BasicTensor<P>;
  static constexpr const char* name = "EmbeddingScaleGrad";
  static T forward(autograd::BasicAutogradContext<P>* ctx, const T& x, const T& scale) {
    ctx->save_for_backward({scale});
    return x.clone();
  }
  static std::vector<T> backward(autograd::BasicAutogradContext<P>* ctx, std::vector<T> grads) {
    return {grads[0] * ctx->get_saved_variables()[0], T()};
  }
};

/// rows (one per entry of `index`) with their gradients divided by each index's count in
/// `index`; unchanged when nothing records a gradient.
template <class P>
BasicTensor<P> scale_grad_by_freq(const BasicTensor<P>& rows, const std::vector<int64_t>& index) {
  if constexpr (autograd::detail::has_autograd<P>()) {
    if (!ember::detail::grad_enabled<P>() || !rows.requires_grad()) return rows;
    std::unordered_map<int64_t, int64_t> count;
    for (int64_t i : index) ++count[i];
    std::vector<double> inv(index.size());
    for (size_t k = 0; k < index.size(); ++k) inv[k] = 1.0 / static_cast<double>(count[index[k]]);
    BasicTensor<P> scale = from_blob<P>(inv.data(), {static_cast<int64_t>(inv.size()), 1}, TensorOptions(DType::F64))
                               .clone()
                               .to(rows.dtype())
                               .to(rows.device());
    return ScaleGradient<P>::apply(rows, scale);
  } else {
    (void)index;
    return rows;
  }
}
}  // namespace detail

/// Rows of weight (num_embeddings, embedding_dim) by index: the result has idx's shape plus
/// embedding_dim. No gradient reaches the row padding_idx (its values are still read).
/// max_norm renormalises the rows read whose norm_type-norm exceeds it, in place, first;
/// scale_grad_by_freq divides each row's gradient by the row's count in idx (PyTorch's
/// options of the same names).
template <class P>
BasicTensor<P> embedding(const BasicTensor<P>& idx, const BasicTensor<P>& weight,
                         std::optional<int64_t> padding_idx = std::nullopt, std::optional<double> max_norm = std::nullopt,
                         double norm_type = 2.0, bool scale_grad_by_freq = false) {
  detail::check_embedding_args(idx, weight, "embedding");
  padding_idx = detail::resolve_padding_idx(padding_idx, weight.size(0), "embedding");
  Shape out = idx.sizes();
  out.push_back(weight.size(1));
  BasicTensor<P> flat = idx.to(DType::I64).reshape({-1});
  std::vector<int64_t> host;
  if (max_norm || scale_grad_by_freq) host = detail::host_indices(flat);
  if (max_norm) detail::embedding_renorm_(weight, host, *max_norm, norm_type, "embedding");
  BasicTensor<P> rows = index_select(weight, 0, flat);
  if (scale_grad_by_freq) rows = detail::scale_grad_by_freq(rows, host);
  if (padding_idx) rows = where(flat.ne(*padding_idx).unsqueeze(1), rows, rows.detach());
  return rows.reshape(out);
}

/// Sums, averages or maxes (mode "sum", "mean", "max") the embeddings of each bag: a (B, L)
/// input holds one bag per row; a 1-d input needs 1-d offsets (bag b is
/// input[offsets[b] : offsets[b + 1]], offsets[0] = 0; with include_last_offset the last
/// offset ends the last bag instead of starting one). per_sample_weights (input's shape,
/// mode "sum") scale each embedding. Entries equal to padding_idx are left out of their bag;
/// an empty bag, or one of padding only, is zero. max_norm, norm_type and scale_grad_by_freq
/// (not with mode "max") as for embedding.
template <class P>
BasicTensor<P> embedding_bag(const BasicTensor<P>& input, const BasicTensor<P>& weight,
                             const BasicTensor<P>& offsets = {}, std::string_view mode = "mean",
                             const BasicTensor<P>& per_sample_weights = {},
                             std::optional<int64_t> padding_idx = std::nullopt,
                             std::optional<double> max_norm = std::nullopt, double norm_type = 2.0,
                             bool scale_grad_by_freq = false, bool include_last_offset = false) {
  detail::check_embedding_args(input, weight, "embedding_bag");
  EMBER_CHECK(mode == "sum" || mode == "mean" || mode == "max", "[embedding_bag] mode must be sum, mean or max, got '{}'",
              mode);
  EMBER_CHECK(!per_sample_weights.defined() || mode == "sum",
              "[embedding_bag] per_sample_weights need mode 'sum', got '{}'", mode);
  EMBER_CHECK(!scale_grad_by_freq || mode != "max",
              "[embedding_bag] mode 'max' does not scale the gradient by the frequency (scale_grad_by_freq)");
  padding_idx = detail::resolve_padding_idx(padding_idx, weight.size(0), "embedding_bag");
  BasicTensor<P> flat = input.to(DType::I64).reshape({-1});
  std::vector<int64_t> starts;
  if (input.dim() == 2) {
    EMBER_CHECK(!offsets.defined(), "[embedding_bag] offsets are only for 1-d input, got input of shape {}",
                input.sizes());
    for (int64_t b = 0; b < input.size(0); ++b) starts.push_back(b * input.size(1));
  } else {
    EMBER_CHECK(input.dim() == 1 && offsets.defined() && offsets.dim() == 1,
                "[embedding_bag] 1-d input needs 1-d offsets (got input {}, offsets {})", input.sizes(),
                offsets.defined() ? offsets.sizes() : Shape{});
    EMBER_CHECK(offsets.dtype() == DType::I64 || offsets.dtype() == DType::I32,
                "[embedding_bag] offsets must be integers (i64 or i32), got {}", offsets.dtype());
    BasicTensor<P> off = offsets.to(DType::I64).to(Device::cpu()).contiguous();
    for (int64_t b = 0; b < off.numel(); ++b) starts.push_back(off.template data_ptr<int64_t>()[b]);
    EMBER_CHECK(starts.empty() || starts[0] == 0, "[embedding_bag] offsets[0] must be 0 (PyTorch's rule), got {}",
                starts.empty() ? 0 : starts[0]);
    if (include_last_offset) {
      EMBER_CHECK(!starts.empty(), "[embedding_bag] include_last_offset needs at least one offset, got none");
      // PyTorch's forward leaves indices after a smaller last offset out of every bag (and its
      // 1.13 backward then corrupts memory); such indices are almost surely a mistake.
      EMBER_CHECK(starts.back() == input.numel(),
                  "[embedding_bag] with include_last_offset the last offset must be the number of indices {}, got {}",
                  input.numel(), starts.back());
    } else {
      EMBER_CHECK(!starts.empty() || input.numel() == 0,
                  "[embedding_bag] empty offsets for {} indices: every index must belong to a bag", input.numel());
    }
  }
  EMBER_CHECK(!include_last_offset || input.dim() == 1,
              "[embedding_bag] include_last_offset is for 1-d input with offsets, got input of shape {}", input.sizes());
  const int64_t total = flat.numel();
  if (include_last_offset) starts.pop_back();  // it ends the last bag
  // Every check before max_norm renormalises weight in place: a refused call changes nothing.
  for (size_t b = 0; b < starts.size(); ++b) {
    const int64_t s = starts[b], e = b + 1 < starts.size() ? starts[b + 1] : total;
    EMBER_CHECK(s >= 0 && s <= e && e <= total, "[embedding_bag] offsets {} .. {} are out of range for {} indices", s,
                e, total);
  }
  EMBER_CHECK(!per_sample_weights.defined() || per_sample_weights.sizes() == input.sizes(),
              "[embedding_bag] per_sample_weights must have the input's shape {}, got {}", input.sizes(),
              per_sample_weights.sizes());
  EMBER_CHECK(!per_sample_weights.defined() || per_sample_weights.device() == weight.device(),
              "[embedding_bag] per_sample_weights are on {}, weight on {}", per_sample_weights.device(), weight.device());
  std::vector<int64_t> host;
  if (max_norm || scale_grad_by_freq) host = detail::host_indices(flat);
  if (max_norm) detail::embedding_renorm_(weight, host, *max_norm, norm_type, "embedding_bag");
  BasicTensor<P> rows = index_select(weight, 0, flat);
  if (scale_grad_by_freq) rows = detail::scale_grad_by_freq(rows, host);
  if (per_sample_weights.defined()) rows = rows * per_sample_weights.reshape({total, 1});
  BasicTensor<P> keep = padding_idx ? flat.ne(*padding_idx) : BasicTensor<P>();
  // Padding entries per bag (mean divides by the others; a max bag of padding only is 0),
  // counted on the host once, not with a tensor op and a sync per bag.
  std::vector<int64_t> pad_prefix;  // pad_prefix[i] = padding entries among the first i
  if (keep.defined()) {
    BasicTensor<P> host = flat.to(Device::cpu()).contiguous();
    const int64_t* ip = host.template data_ptr<int64_t>();
    pad_prefix.assign(static_cast<size_t>(total) + 1, 0);
    for (int64_t i = 0; i < total; ++i) pad_prefix[i + 1] = pad_prefix[i] + (ip[i] == *padding_idx);
  }
  std::vector<BasicTensor<P>> bags;
  for (size_t b = 0; b < starts.size(); ++b) {
    const int64_t s = starts[b], e = b + 1 < starts.size() ? starts[b + 1] : total;
    BasicTensor<P> r = rows.narrow(0, s, e - s);
    if (keep.defined()) {
      BasicTensor<P> k = keep.narrow(0, s, e - s).unsqueeze(1);
      r = mode == "max" ? where(k, r, -INFINITY) : where(k, r, 0.0);
    }
    const int64_t n = e - s, pads = pad_prefix.empty() ? 0 : pad_prefix[e] - pad_prefix[s];
    if (mode == "sum") {
      bags.push_back(r.sum({0}));
    } else if (mode == "mean") {
      bags.push_back(n == 0 ? zeros_like(weight.select(0, 0))
                            : r.sum({0}) / static_cast<double>(std::max<int64_t>(n - pads, 1)));
    } else if (n == 0 || pads == n) {
      bags.push_back(zeros_like(weight.select(0, 0)));  // an empty bag, or padding only: 0, as PyTorch
    } else {
      // The maximum with its index: the gradient goes to the first maximal row of each
      // feature, as PyTorch's (amax would share it between ties).
      bags.push_back(r.max(0).first);
    }
  }
  if (bags.empty()) return empty<P>({0, weight.size(1)}, TensorOptions(weight.dtype()).device(weight.device()));
  return stack(bags, 0);
}

/// y_k = x1^T W_k x2 + b_k for weight (out, in1, in2) and bias (out); x1 (..., in1) and
/// x2 (..., in2) share their batch dims.
template <class P>
BasicTensor<P> bilinear(const BasicTensor<P>& x1, const BasicTensor<P>& x2, const BasicTensor<P>& weight,
                        const BasicTensor<P>& bias = {}) {
  EMBER_CHECK(weight.defined() && weight.dim() == 3, "[bilinear] weight must be 3-d (out, in1, in2), got {}",
              weight.defined() ? weight.sizes() : Shape{});
  const int64_t out = weight.size(0), in1 = weight.size(1), in2 = weight.size(2);
  EMBER_CHECK(x1.dim() >= 1 && x1.size(-1) == in1 && x2.dim() >= 1 && x2.size(-1) == in2,
              "[bilinear] expects inputs with {} and {} features, got shapes {} and {}", in1, in2, x1.sizes(),
              x2.sizes());
  bool same_batch = x1.dim() == x2.dim();
  for (int64_t d = 0; same_batch && d + 1 < x1.dim(); ++d) same_batch = x1.size(d) == x2.size(d);
  EMBER_CHECK(same_batch, "[bilinear] inputs of shapes {} and {} have different batch shapes", x1.sizes(), x2.sizes());
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == out),
              "[bilinear] bias must have shape [{}], got {}", out, bias.defined() ? bias.sizes() : Shape{});
  BasicTensor<P> a = x1.reshape({-1, in1}), b = x2.reshape({-1, in2});
  // (B, in1) @ (in1, out * in2) -> (B, out, in2), then contract in2 with x2.
  BasicTensor<P> t = a.matmul(weight.permute({1, 0, 2}).reshape({in1, out * in2})).reshape({-1, out, in2});
  BasicTensor<P> y = (t * b.unsqueeze(1)).sum({-1});
  if (bias.defined()) y = y + bias;
  Shape s = x1.sizes();
  s[s.size() - 1] = out;
  return y.reshape(s);
}

}  // namespace ember::nn::functional

#pragma once
/// nn::functional for the table and product layers: embedding, embedding_bag, bilinear, plus
/// pad and one_hot under the names torch::nn::functional users look for. The Embedding,
/// EmbeddingBag and Bilinear modules forward to these.

#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/functions.hpp>
#include <ember/ops/shape_ops.hpp>

#include <cmath>
#include <optional>
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
}  // namespace detail

/// Rows of weight (num_embeddings, embedding_dim) by index: the result has idx's shape plus
/// embedding_dim. No gradient reaches the row padding_idx (its values are still read).
template <class P>
BasicTensor<P> embedding(const BasicTensor<P>& idx, const BasicTensor<P>& weight,
                         std::optional<int64_t> padding_idx = std::nullopt) {
  detail::check_embedding_args(idx, weight, "embedding");
  padding_idx = detail::resolve_padding_idx(padding_idx, weight.size(0), "embedding");
  Shape out = idx.sizes();
  out.push_back(weight.size(1));
  BasicTensor<P> flat = idx.to(DType::I64).reshape({-1});
  BasicTensor<P> rows = index_select(weight, 0, flat);
  if (padding_idx) rows = where(flat.ne(*padding_idx).unsqueeze(1), rows, rows.detach());
  return rows.reshape(out);
}

/// Sums, averages or maxes (mode "sum", "mean", "max") the embeddings of each bag: a (B, L)
/// input holds one bag per row; a 1-d input needs 1-d offsets (bag b is
/// input[offsets[b] : offsets[b + 1]], offsets[0] = 0). per_sample_weights (input's shape,
/// mode "sum") scale each embedding. Entries equal to padding_idx are left out of their bag;
/// an empty bag, or one of padding only, is zero.
template <class P>
BasicTensor<P> embedding_bag(const BasicTensor<P>& input, const BasicTensor<P>& weight,
                             const BasicTensor<P>& offsets = {}, std::string_view mode = "mean",
                             const BasicTensor<P>& per_sample_weights = {},
                             std::optional<int64_t> padding_idx = std::nullopt) {
  detail::check_embedding_args(input, weight, "embedding_bag");
  EMBER_CHECK(mode == "sum" || mode == "mean" || mode == "max", "[embedding_bag] mode must be sum, mean or max, got '{}'",
              mode);
  EMBER_CHECK(!per_sample_weights.defined() || mode == "sum",
              "[embedding_bag] per_sample_weights need mode 'sum', got '{}'", mode);
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
    EMBER_CHECK(!starts.empty() || input.numel() == 0,
                "[embedding_bag] empty offsets for {} indices: every index must belong to a bag", input.numel());
  }
  const int64_t total = flat.numel();
  BasicTensor<P> rows = index_select(weight, 0, flat);
  if (per_sample_weights.defined()) {
    EMBER_CHECK(per_sample_weights.sizes() == input.sizes(),
                "[embedding_bag] per_sample_weights must have the input's shape {}, got {}", input.sizes(),
                per_sample_weights.sizes());
    rows = rows * per_sample_weights.reshape({total, 1});
  }
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
    EMBER_CHECK(s >= 0 && s <= e && e <= total, "[embedding_bag] offsets {} .. {} are out of range for {} indices", s,
                e, total);
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

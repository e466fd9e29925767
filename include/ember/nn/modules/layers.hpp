#pragma once
/// Dropout, Dropout2d, Embedding, LayerNorm, RMSNorm.

#include <ember/nn/functional.hpp>
#include <ember/nn/init.hpp>
#include <ember/nn/module.hpp>
#include <ember/nn/options.hpp>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace ember::nn {

template <class P = DefaultPolicy>
class BasicDropoutImpl : public Cloneable<BasicDropoutImpl<P>, P> {
 public:
  explicit BasicDropoutImpl(double p = 0.5) : Cloneable<BasicDropoutImpl<P>, P>("Dropout"), p(p) {
    EMBER_CHECK(p >= 0 && p <= 1, "[Dropout] p must be in [0, 1], got {}", p);
  }
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::dropout(x, p, this->is_training()); }
  std::string extra_repr() const override { return fmt::format("p={}, inplace=False", p); }
  double p;
};
using DropoutImpl = BasicDropoutImpl<>;
EMBER_MODULE(Dropout);

template <class P = DefaultPolicy>
class BasicDropout2dImpl : public Cloneable<BasicDropout2dImpl<P>, P> {
 public:
  explicit BasicDropout2dImpl(double p = 0.5) : Cloneable<BasicDropout2dImpl<P>, P>("Dropout2d"), p(p) {
    EMBER_CHECK(p >= 0 && p <= 1, "[Dropout2d] p must be in [0, 1], got {}", p);
  }
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::dropout2d(x, p, this->is_training()); }
  std::string extra_repr() const override { return fmt::format("p={}, inplace=False", p); }
  double p;
};
using Dropout2dImpl = BasicDropout2dImpl<>;
EMBER_MODULE(Dropout2d);

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  EMBER_ARG(int64_t, num_embeddings);
  EMBER_ARG(int64_t, embedding_dim);
  EMBER_ARG(std::optional<int64_t>, padding_idx);
};

/// Rows of a (num_embeddings, embedding_dim) table by index; N(0, 1) init, the padding row
/// zero and never updated (its gradient is zero), as in PyTorch.
template <class P = DefaultPolicy>
class BasicEmbeddingImpl : public Cloneable<BasicEmbeddingImpl<P>, P> {
 public:
  using TensorT = BasicTensor<P>;
  BasicEmbeddingImpl(int64_t num, int64_t dim) : BasicEmbeddingImpl(EmbeddingOptions(num, dim)) {}
  explicit BasicEmbeddingImpl(const EmbeddingOptions& o) : Cloneable<BasicEmbeddingImpl<P>, P>("Embedding"), options(o) {
    reset();
  }
  void reset() override {
    int64_t n = options.num_embeddings();
    if (options.padding_idx()) {
      int64_t& p = *options.padding_idx();
      EMBER_CHECK(p >= -n && p < n, "[Embedding] padding_idx {} is out of range for {} embeddings", p, n);
      if (p < 0) p += n;
    }
    weight = this->register_parameter("weight", empty<P>({n, options.embedding_dim()}));
    init::normal_(weight);
    if (options.padding_idx()) {
      autograd::NoGradGuard ng;
      weight.select(0, *options.padding_idx()).fill_(0.0);
    }
  }
  TensorT forward(const TensorT& idx) {
    EMBER_CHECK(idx.dtype() == DType::I64 || idx.dtype() == DType::I32,
                "[Embedding] indices must be integers (i64), got {}", idx.dtype());
    Shape out = idx.sizes();
    out.push_back(options.embedding_dim());
    TensorT flat = idx.to(DType::I64).reshape({-1});
    TensorT rows = index_select(weight, 0, flat);
    if (options.padding_idx()) {
      // Same values, but no gradient reaches the padding row.
      TensorT keep = flat.ne(*options.padding_idx()).unsqueeze(1);
      rows = where(keep, rows, rows.detach());
    }
    return rows.reshape(out);
  }
  std::string extra_repr() const override {
    std::string s = fmt::format("{}, {}", options.num_embeddings(), options.embedding_dim());
    if (options.padding_idx()) s += fmt::format(", padding_idx={}", *options.padding_idx());
    return s;
  }
  EmbeddingOptions options;
  TensorT weight;
};
using EmbeddingImpl = BasicEmbeddingImpl<>;
EMBER_MODULE(Embedding);

struct EmbeddingBagOptions {
  EmbeddingBagOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  EMBER_ARG(int64_t, num_embeddings);
  EMBER_ARG(int64_t, embedding_dim);
  EMBER_ARG(std::string, mode) = "mean";  ///< sum, mean or max
  EMBER_ARG(std::optional<int64_t>, padding_idx);
};

/// Sums, averages or maxes the embeddings of each bag: input (B, L) (one bag per row) or 1-d
/// input with `offsets` (bag b = input[offsets[b] : offsets[b + 1]]); per_sample_weights
/// scale each embedding (sum mode). Entries equal to padding_idx are left out of their bag.
template <class P = DefaultPolicy>
class BasicEmbeddingBagImpl : public Cloneable<BasicEmbeddingBagImpl<P>, P> {
 public:
  using TensorT = BasicTensor<P>;
  BasicEmbeddingBagImpl(int64_t num, int64_t dim) : BasicEmbeddingBagImpl(EmbeddingBagOptions(num, dim)) {}
  explicit BasicEmbeddingBagImpl(const EmbeddingBagOptions& o)
      : Cloneable<BasicEmbeddingBagImpl<P>, P>("EmbeddingBag"), options(o) {
    reset();
  }
  void reset() override {
    const std::string& m = options.mode();
    EMBER_CHECK(m == "sum" || m == "mean" || m == "max", "[EmbeddingBag] mode must be sum, mean or max, got '{}'", m);
    int64_t n = options.num_embeddings();
    if (options.padding_idx()) {
      int64_t& p = *options.padding_idx();
      EMBER_CHECK(p >= -n && p < n, "[EmbeddingBag] padding_idx {} is out of range for {} embeddings", p, n);
      if (p < 0) p += n;
    }
    weight = this->register_parameter("weight", empty<P>({n, options.embedding_dim()}));
    init::normal_(weight);
    if (options.padding_idx()) {
      autograd::NoGradGuard ng;
      weight.select(0, *options.padding_idx()).fill_(0.0);
    }
  }
  TensorT forward(const TensorT& input, const TensorT& offsets = {}, const TensorT& per_sample_weights = {}) {
    EMBER_CHECK(input.dtype() == DType::I64 || input.dtype() == DType::I32,
                "[EmbeddingBag] indices must be integers, got {}", input.dtype());
    EMBER_CHECK(!per_sample_weights.defined() || options.mode() == "sum",
                "[EmbeddingBag] per_sample_weights need mode 'sum', got '{}'", options.mode());
    TensorT flat = input.to(DType::I64).reshape({-1});
    std::vector<int64_t> starts;
    if (input.dim() == 2) {
      EMBER_CHECK(!offsets.defined(), "[EmbeddingBag] offsets are only for 1-d input, got input of shape {}",
                  input.sizes());
      for (int64_t b = 0; b < input.size(0); ++b) starts.push_back(b * input.size(1));
    } else {
      EMBER_CHECK(input.dim() == 1 && offsets.defined() && offsets.dim() == 1,
                  "[EmbeddingBag] 1-d input needs 1-d offsets (got input {}, offsets {})", input.sizes(),
                  offsets.defined() ? offsets.sizes() : Shape{});
      TensorT off = offsets.to(DType::I64).contiguous();
      for (int64_t b = 0; b < off.numel(); ++b) starts.push_back(off.template data_ptr<int64_t>()[b]);
      EMBER_CHECK(starts.empty() || starts[0] == 0, "[EmbeddingBag] offsets[0] must be 0 (PyTorch's rule), got {}",
                  starts.empty() ? 0 : starts[0]);
    }
    int64_t total = flat.numel();
    TensorT rows = index_select(weight, 0, flat);
    if (per_sample_weights.defined()) {
      EMBER_CHECK(per_sample_weights.sizes() == input.sizes(),
                  "[EmbeddingBag] per_sample_weights must have the input's shape {}, got {}", input.sizes(),
                  per_sample_weights.sizes());
      rows = rows * per_sample_weights.reshape({total, 1});
    }
    TensorT keep = options.padding_idx() ? flat.ne(*options.padding_idx()) : TensorT();
    // Padding entries per bag (mean divides by the others; a max bag of padding only is 0),
    // counted on the host once, not with a tensor op and a sync per bag.
    std::vector<int64_t> pad_prefix;  // pad_prefix[i] = padding entries among the first i
    if (keep.defined()) {
      TensorT host = flat.to(Device::cpu()).contiguous();
      const int64_t* ip = host.template data_ptr<int64_t>();
      pad_prefix.assign(static_cast<size_t>(total) + 1, 0);
      for (int64_t i = 0; i < total; ++i) pad_prefix[i + 1] = pad_prefix[i] + (ip[i] == *options.padding_idx());
    }
    std::vector<TensorT> bags;
    for (size_t b = 0; b < starts.size(); ++b) {
      int64_t s = starts[b], e = b + 1 < starts.size() ? starts[b + 1] : total;
      EMBER_CHECK(s >= 0 && s <= e && e <= total, "[EmbeddingBag] offsets {} .. {} are out of range for {} indices", s,
                  e, total);
      TensorT r = rows.narrow(0, s, e - s);
      if (keep.defined()) {
        TensorT k = keep.narrow(0, s, e - s).unsqueeze(1);
        r = options.mode() == "max" ? where(k, r, -INFINITY) : where(k, r, 0.0);
      }
      const int64_t n = e - s, pads = pad_prefix.empty() ? 0 : pad_prefix[e] - pad_prefix[s];
      if (options.mode() == "sum") {
        bags.push_back(r.sum({0}));
      } else if (options.mode() == "mean") {
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
    return stack(bags, 0);
  }
  std::string extra_repr() const override {
    return fmt::format("{}, {}, mode='{}'", options.num_embeddings(), options.embedding_dim(), options.mode());
  }
  EmbeddingBagOptions options;
  TensorT weight;
};
using EmbeddingBagImpl = BasicEmbeddingBagImpl<>;
EMBER_MODULE(EmbeddingBag);

struct LayerNormOptions {
  LayerNormOptions(Shape normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  EMBER_ARG(Shape, normalized_shape);
  EMBER_ARG(double, eps) = 1e-5;
  EMBER_ARG(bool, elementwise_affine) = true;
  EMBER_ARG(bool, bias) = true;
};

template <class P = DefaultPolicy>
class BasicLayerNormImpl : public Cloneable<BasicLayerNormImpl<P>, P> {
 public:
  using TensorT = BasicTensor<P>;
  explicit BasicLayerNormImpl(const LayerNormOptions& o) : Cloneable<BasicLayerNormImpl<P>, P>("LayerNorm"), options(o) {
    reset();
  }
  void reset() override {
    bool affine = options.elementwise_affine();
    weight = this->register_parameter("weight", affine ? ones<P>(options.normalized_shape()) : TensorT());
    bias = this->register_parameter("bias", affine && options.bias() ? zeros<P>(options.normalized_shape()) : TensorT());
  }
  TensorT forward(const TensorT& x) { return F::layer_norm(x, options.normalized_shape(), weight, bias, options.eps()); }
  std::string extra_repr() const override {
    return fmt::format("{}, eps={}, elementwise_affine={}", options.normalized_shape(), options.eps(),
                       options.elementwise_affine() ? "True" : "False");
  }
  LayerNormOptions options;
  TensorT weight, bias;
};
using LayerNormImpl = BasicLayerNormImpl<>;
EMBER_MODULE(LayerNorm);

struct RMSNormOptions {
  RMSNormOptions(Shape normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  EMBER_ARG(Shape, normalized_shape);
  EMBER_ARG(std::optional<double>, eps);
  EMBER_ARG(bool, elementwise_affine) = true;
};

template <class P = DefaultPolicy>
class BasicRMSNormImpl : public Cloneable<BasicRMSNormImpl<P>, P> {
 public:
  using TensorT = BasicTensor<P>;
  explicit BasicRMSNormImpl(const RMSNormOptions& o) : Cloneable<BasicRMSNormImpl<P>, P>("RMSNorm"), options(o) {
    reset();
  }
  void reset() override {
    weight = this->register_parameter("weight", options.elementwise_affine() ? ones<P>(options.normalized_shape())
                                                                              : TensorT());
  }
  TensorT forward(const TensorT& x) { return F::rms_norm(x, options.normalized_shape(), weight, options.eps()); }
  std::string extra_repr() const override {
    return fmt::format("{}, eps={}, elementwise_affine={}", options.normalized_shape(),
                       options.eps() ? fmt::format("{}", *options.eps()) : "None",
                       options.elementwise_affine() ? "True" : "False");
  }
  RMSNormOptions options;
  TensorT weight;
};
using RMSNormImpl = BasicRMSNormImpl<>;
EMBER_MODULE(RMSNorm);

}  // namespace ember::nn

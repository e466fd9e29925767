#pragma once
/// Dropout, Dropout1d/2d/3d, AlphaDropout, FeatureAlphaDropout, Embedding, LayerNorm, RMSNorm.

#include <ember/nn/functional.hpp>
#include <ember/nn/functional_dropout.hpp>
#include <ember/nn/functional_layers.hpp>
#include <ember/nn/init.hpp>
#include <ember/nn/module.hpp>
#include <ember/nn/options.hpp>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace ember::nn {

/// libtorch's options of Dropout and Dropout2d: Dropout(DropoutOptions(0.2).inplace(true)).
struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}  // NOLINT: implicit, as in libtorch
  EMBER_ARG(double, p);
  EMBER_ARG(bool, inplace) = false;
};
using Dropout2dOptions = DropoutOptions;

template <class P = DefaultPolicy>
class BasicDropoutImpl : public Cloneable<BasicDropoutImpl<P>, P> {
 public:
  explicit BasicDropoutImpl(double p = 0.5) : Cloneable<BasicDropoutImpl<P>, P>("Dropout"), p(p) {
    EMBER_CHECK(p >= 0 && p <= 1, "[Dropout] p must be in [0, 1], got {}", p);
  }
  explicit BasicDropoutImpl(const DropoutOptions& o) : BasicDropoutImpl(o.p()) { inplace = o.inplace(); }
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::dropout(x, p, this->is_training(), inplace); }
  std::string extra_repr() const override { return EMBER_FORMAT("p={}, inplace={}", p, inplace ? "True" : "False"); }
  double p;
  bool inplace = false;
};
using DropoutImpl = BasicDropoutImpl<>;
EMBER_MODULE(Dropout);
template <class P = DefaultPolicy>
using BasicDropout = detail::PolicyHolder<P, Dropout, BasicDropoutImpl<P>>;

template <class P = DefaultPolicy>
class BasicDropout2dImpl : public Cloneable<BasicDropout2dImpl<P>, P> {
 public:
  explicit BasicDropout2dImpl(double p = 0.5) : Cloneable<BasicDropout2dImpl<P>, P>("Dropout2d"), p(p) {
    EMBER_CHECK(p >= 0 && p <= 1, "[Dropout2d] p must be in [0, 1], got {}", p);
  }
  explicit BasicDropout2dImpl(const DropoutOptions& o) : BasicDropout2dImpl(o.p()) { inplace = o.inplace(); }
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::dropout2d(x, p, this->is_training(), inplace); }
  std::string extra_repr() const override { return EMBER_FORMAT("p={}, inplace={}", p, inplace ? "True" : "False"); }
  double p;
  bool inplace = false;
};
using Dropout2dImpl = BasicDropout2dImpl<>;
EMBER_MODULE(Dropout2d);
template <class P = DefaultPolicy>
using BasicDropout2d = detail::PolicyHolder<P, Dropout2d, BasicDropout2dImpl<P>>;

// libtorch's names for the other dropout layers' options.
using Dropout1dOptions = DropoutOptions;
using Dropout3dOptions = DropoutOptions;
using AlphaDropoutOptions = DropoutOptions;
using FeatureAlphaDropoutOptions = DropoutOptions;

/// Which of the dropout layers below.
enum class DropoutKind { Channels1d, Channels3d, Alpha, FeatureAlpha };

/// Dropout1d, Dropout3d (whole channels), AlphaDropout and FeatureAlphaDropout (for SELU
/// networks); active only in training mode.
template <DropoutKind K, class P = DefaultPolicy>
class BasicDropoutVariantImpl : public Cloneable<BasicDropoutVariantImpl<K, P>, P> {
 public:
  explicit BasicDropoutVariantImpl(double p = 0.5) : BasicDropoutVariantImpl(DropoutOptions(p)) {}
  explicit BasicDropoutVariantImpl(const DropoutOptions& o)
      : Cloneable<BasicDropoutVariantImpl<K, P>, P>(kind_name()), p(o.p()), inplace(o.inplace()) {
    EMBER_CHECK(p >= 0 && p <= 1, "[{}] p must be in [0, 1], got {}", this->name(), p);
  }
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) {
    const bool training = this->is_training();
    switch (K) {
      case DropoutKind::Channels1d: return F::dropout1d(x, p, training, inplace);
      case DropoutKind::Channels3d: return F::dropout3d(x, p, training, inplace);
      case DropoutKind::Alpha: return F::alpha_dropout(x, p, training, inplace);
      default: return F::feature_alpha_dropout(x, p, training, inplace);
    }
  }
  std::string extra_repr() const override { return EMBER_FORMAT("p={}, inplace={}", p, inplace ? "True" : "False"); }
  double p;
  bool inplace = false;

 private:
  static const char* kind_name() {
    switch (K) {
      case DropoutKind::Channels1d: return "Dropout1d";
      case DropoutKind::Channels3d: return "Dropout3d";
      case DropoutKind::Alpha: return "AlphaDropout";
      default: return "FeatureAlphaDropout";
    }
  }
};
using Dropout1dImpl = BasicDropoutVariantImpl<DropoutKind::Channels1d>;
using Dropout3dImpl = BasicDropoutVariantImpl<DropoutKind::Channels3d>;
using AlphaDropoutImpl = BasicDropoutVariantImpl<DropoutKind::Alpha>;
using FeatureAlphaDropoutImpl = BasicDropoutVariantImpl<DropoutKind::FeatureAlpha>;
EMBER_MODULE(Dropout1d);
template <class P = DefaultPolicy>
using BasicDropout1d = detail::PolicyHolder<P, Dropout1d, BasicDropoutVariantImpl<DropoutKind::Channels1d, P>>;
EMBER_MODULE(Dropout3d);
template <class P = DefaultPolicy>
using BasicDropout3d = detail::PolicyHolder<P, Dropout3d, BasicDropoutVariantImpl<DropoutKind::Channels3d, P>>;
EMBER_MODULE(AlphaDropout);
template <class P = DefaultPolicy>
using BasicAlphaDropout = detail::PolicyHolder<P, AlphaDropout, BasicDropoutVariantImpl<DropoutKind::Alpha, P>>;
EMBER_MODULE(FeatureAlphaDropout);
template <class P = DefaultPolicy>
using BasicFeatureAlphaDropout = detail::PolicyHolder<P, FeatureAlphaDropout, BasicDropoutVariantImpl<DropoutKind::FeatureAlpha, P>>;

struct EmbeddingFromPretrainedOptions {
  EMBER_ARG(bool, freeze) = true;  ///< the weight does not require grad
  EMBER_ARG(std::optional<int64_t>, padding_idx);
  EMBER_ARG(std::optional<double>, max_norm);
  EMBER_ARG(double, norm_type) = 2.0;
  EMBER_ARG(bool, scale_grad_by_freq) = false;
  EMBER_ARG(std::string, mode) = "mean";          ///< EmbeddingBag only
  EMBER_ARG(bool, include_last_offset) = false;  ///< EmbeddingBag only
};

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  EMBER_ARG(int64_t, num_embeddings);
  EMBER_ARG(int64_t, embedding_dim);
  EMBER_ARG(std::optional<int64_t>, padding_idx);
  EMBER_ARG(std::optional<double>, max_norm);  ///< renormalise rows read whose norm exceeds it
  EMBER_ARG(double, norm_type) = 2.0;          ///< the p of that norm
  EMBER_ARG(bool, scale_grad_by_freq) = false;  ///< divide row gradients by their count in the batch
  EMBER_ARG(bool, sparse) = false;  ///< sparse gradients are not offered: true is refused
};

namespace detail {
/// Refuses sparse gradients, and checks max_norm and norm_type up front (at construction).
template <class O>
void check_embedding_options(const O& o, const char* op) {
  EMBER_CHECK(!o.sparse(), "[{}] sparse gradients are not offered (sparse=true)", op);
  EMBER_CHECK(!o.max_norm() || *o.max_norm() >= 0, "[{}] max_norm must be non-negative, got {}", op,
              o.max_norm().value_or(0.0));
  EMBER_CHECK(o.norm_type() > 0, "[{}] norm_type must be positive, got {}", op, o.norm_type());
}
/// PyTorch's repr of those options, after the sizes and padding_idx.
template <class O>
std::string embedding_options_repr(const O& o) {
  std::string s;
  if (o.max_norm()) s += EMBER_FORMAT(", max_norm={}", *o.max_norm());
  if (o.norm_type() != 2.0) s += EMBER_FORMAT(", norm_type={}", o.norm_type());
  if (o.scale_grad_by_freq()) s += ", scale_grad_by_freq=True";
  return s;
}
}  // namespace detail

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
    detail::check_embedding_options(options, "Embedding");
    int64_t n = options.num_embeddings();
    options.padding_idx(F::detail::resolve_padding_idx(options.padding_idx(), n, "Embedding"));
    weight = this->register_parameter("weight", empty<P>({n, options.embedding_dim()}));
    init::normal_(weight);
    if (options.padding_idx()) {
      ember::detail::NoGradGuardFor<P> ng;
      weight.select(0, *options.padding_idx()).fill_(0.0);
    }
  }
  TensorT forward(const TensorT& idx) {
    return F::embedding(idx, weight, options.padding_idx(), options.max_norm(), options.norm_type(),
                        options.scale_grad_by_freq());
  }
  std::string extra_repr() const override {
    std::string s = EMBER_FORMAT("{}, {}", options.num_embeddings(), options.embedding_dim());
    if (options.padding_idx()) s += EMBER_FORMAT(", padding_idx={}", *options.padding_idx());
    return s + detail::embedding_options_repr(options);
  }
  EmbeddingOptions options;
  TensorT weight;
};
using EmbeddingImpl = BasicEmbeddingImpl<>;

/// Embedding, with libtorch's Embedding::from_pretrained.
class Embedding : public ModuleHolder<EmbeddingImpl> {
 public:
  using ModuleHolder<EmbeddingImpl>::ModuleHolder;
  Embedding(std::nullptr_t) : ModuleHolder<EmbeddingImpl>(nullptr) {}  // NOLINT
  /// A table holding a copy of `embeddings` (2-d, floating); frozen unless freeze(false).
  /// Out of line (src/nn/layers.cpp), so that a program that never calls it does not compile
  /// the whole of EmbeddingImpl.
  static Embedding from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& o = {});
};
template <class P = DefaultPolicy>
using BasicEmbedding = detail::PolicyHolder<P, Embedding, BasicEmbeddingImpl<P>>;

struct EmbeddingBagOptions {
  EmbeddingBagOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  EMBER_ARG(int64_t, num_embeddings);
  EMBER_ARG(int64_t, embedding_dim);
  EMBER_ARG(std::string, mode) = "mean";  ///< sum, mean or max
  EMBER_ARG(std::optional<int64_t>, padding_idx);
  EMBER_ARG(std::optional<double>, max_norm);
  EMBER_ARG(double, norm_type) = 2.0;
  EMBER_ARG(bool, scale_grad_by_freq) = false;  ///< sum and mean modes
  EMBER_ARG(bool, sparse) = false;              ///< not offered: true is refused
  EMBER_ARG(bool, include_last_offset) = false;  ///< the last offset ends the last bag
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
    detail::check_embedding_options(options, "EmbeddingBag");
    EMBER_CHECK(!options.scale_grad_by_freq() || m != "max",
                "[EmbeddingBag] mode 'max' does not scale the gradient by the frequency (scale_grad_by_freq)");
    int64_t n = options.num_embeddings();
    options.padding_idx(F::detail::resolve_padding_idx(options.padding_idx(), n, "EmbeddingBag"));
    weight = this->register_parameter("weight", empty<P>({n, options.embedding_dim()}));
    init::normal_(weight);
    if (options.padding_idx()) {
      ember::detail::NoGradGuardFor<P> ng;
      weight.select(0, *options.padding_idx()).fill_(0.0);
    }
  }
  TensorT forward(const TensorT& input, const TensorT& offsets = {}, const TensorT& per_sample_weights = {}) {
    return F::embedding_bag(input, weight, offsets, options.mode(), per_sample_weights, options.padding_idx(),
                            options.max_norm(), options.norm_type(), options.scale_grad_by_freq(),
                            options.include_last_offset());
  }
  std::string extra_repr() const override {
    std::string s = EMBER_FORMAT("{}, {}", options.num_embeddings(), options.embedding_dim()) +
                    detail::embedding_options_repr(options) + EMBER_FORMAT(", mode='{}'", options.mode());
    if (options.include_last_offset()) s += ", include_last_offset=True";
    if (options.padding_idx()) s += EMBER_FORMAT(", padding_idx={}", *options.padding_idx());
    return s;
  }
  EmbeddingBagOptions options;
  TensorT weight;
};
using EmbeddingBagImpl = BasicEmbeddingBagImpl<>;

/// EmbeddingBag, with libtorch's EmbeddingBag::from_pretrained.
class EmbeddingBag : public ModuleHolder<EmbeddingBagImpl> {
 public:
  using ModuleHolder<EmbeddingBagImpl>::ModuleHolder;
  EmbeddingBag(std::nullptr_t) : ModuleHolder<EmbeddingBagImpl>(nullptr) {}  // NOLINT
  /// A table holding a copy of `embeddings` (2-d, floating); frozen unless freeze(false).
  static EmbeddingBag from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& o = {});
};
template <class P = DefaultPolicy>
using BasicEmbeddingBag = detail::PolicyHolder<P, EmbeddingBag, BasicEmbeddingBagImpl<P>>;

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
    return EMBER_FORMAT("{}, eps={}, elementwise_affine={}", options.normalized_shape(), options.eps(),
                       options.elementwise_affine() ? "True" : "False");
  }
  LayerNormOptions options;
  TensorT weight, bias;
};
using LayerNormImpl = BasicLayerNormImpl<>;
EMBER_MODULE(LayerNorm);
template <class P = DefaultPolicy>
using BasicLayerNorm = detail::PolicyHolder<P, LayerNorm, BasicLayerNormImpl<P>>;

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
    return EMBER_FORMAT("{}, eps={}, elementwise_affine={}", options.normalized_shape(),
                       options.eps() ? EMBER_FORMAT("{}", *options.eps()) : "None",
                       options.elementwise_affine() ? "True" : "False");
  }
  RMSNormOptions options;
  TensorT weight;
};
using RMSNormImpl = BasicRMSNormImpl<>;
EMBER_MODULE(RMSNorm);
template <class P = DefaultPolicy>
using BasicRMSNorm = detail::PolicyHolder<P, RMSNorm, BasicRMSNormImpl<P>>;

}  // namespace ember::nn

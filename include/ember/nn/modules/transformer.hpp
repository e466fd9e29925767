#pragma once
/// MultiheadAttention, TransformerEncoderLayer/DecoderLayer,
/// TransformerEncoder/Decoder and Transformer, with PyTorch's submodule names
/// (self_attn.in_proj_weight, linear1, norm1, ...) so that PyTorch weights load by name.

#include <ember/nn/functional.hpp>
#include <ember/nn/functional_attention.hpp>
#include <ember/nn/init.hpp>
#include <ember/nn/module.hpp>
#include <ember/nn/modules/container.hpp>
#include <ember/nn/modules/layers.hpp>
#include <ember/nn/modules/linear.hpp>
#include <ember/nn/options.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

namespace ember::nn {

struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads) : embed_dim_(embed_dim), num_heads_(num_heads) {}
  EMBER_ARG(int64_t, embed_dim);
  EMBER_ARG(int64_t, num_heads);
  EMBER_ARG(double, dropout) = 0.0;
  EMBER_ARG(bool, bias) = true;
  EMBER_ARG(bool, batch_first) = false;
  /// Features of key and value when they differ from embed_dim (cross-attention to another
  /// model's states); unset: embed_dim.
  EMBER_ARG(std::optional<int64_t>, kdim);
  EMBER_ARG(std::optional<int64_t>, vdim);
  /// Learned bias_k and bias_v (1, 1, embed_dim) appended to the projected keys and values:
  /// one more key every query can attend to.
  EMBER_ARG(bool, add_bias_kv) = false;
  /// A key and value of zeros appended (after bias_k/bias_v) to every head's projected keys
  /// and values: a query can always put weight on "nothing".
  EMBER_ARG(bool, add_zero_attn) = false;
};

/// Multi-head attention with packed in_proj_weight (3E, E) / in_proj_bias and out_proj, as
/// PyTorch (xavier_uniform in_proj, zero biases); with kdim or vdim other than embed_dim,
/// separate q_proj_weight (E, E), k_proj_weight (E, kdim), v_proj_weight (E, vdim) instead
/// of in_proj_weight, as PyTorch names them; bias_k and bias_v (xavier_normal) with
/// add_bias_kv. forward returns (output, averaged weights or undefined when need_weights is
/// false); with add_bias_kv or add_zero_attn the weights have a column per appended key too.
template <class P = DefaultPolicy>
class BasicMultiheadAttentionImpl : public Cloneable<BasicMultiheadAttentionImpl<P>, P> {
 public:
  using TensorT = BasicTensor<P>;
  BasicMultiheadAttentionImpl(int64_t e, int64_t h) : BasicMultiheadAttentionImpl(MultiheadAttentionOptions(e, h)) {}
  explicit BasicMultiheadAttentionImpl(const MultiheadAttentionOptions& o)
      : Cloneable<BasicMultiheadAttentionImpl<P>, P>("MultiheadAttention"), options(o) {
    reset();
  }
  void reset() override {
    int64_t e = options.embed_dim();
    EMBER_CHECK(options.num_heads() > 0 && e % options.num_heads() == 0,
                "[MultiheadAttention] embed_dim {} must be divisible by num_heads {}", e, options.num_heads());
    const int64_t kdim = options.kdim().value_or(e), vdim = options.vdim().value_or(e);
    EMBER_CHECK(kdim > 0 && vdim > 0, "[MultiheadAttention] kdim {} and vdim {} must be positive", kdim, vdim);
    if (kdim == e && vdim == e) {
      in_proj_weight = this->register_parameter("in_proj_weight", empty<P>({3 * e, e}));
      init::xavier_uniform_(in_proj_weight);
    } else {
      q_proj_weight = this->register_parameter("q_proj_weight", empty<P>({e, e}));
      k_proj_weight = this->register_parameter("k_proj_weight", empty<P>({e, kdim}));
      v_proj_weight = this->register_parameter("v_proj_weight", empty<P>({e, vdim}));
      for (TensorT* w : {&q_proj_weight, &k_proj_weight, &v_proj_weight}) init::xavier_uniform_(*w);
    }
    in_proj_bias = this->register_parameter("in_proj_bias", options.bias() ? zeros<P>({3 * e}) : TensorT());
    out_proj = this->register_module("out_proj", BasicLinear<P>(LinearOptions(e, e).bias(options.bias())));
    if (out_proj->bias.defined()) init::zeros_(out_proj->bias);
    bias_k = bias_v = TensorT();
    if (options.add_bias_kv()) {
      bias_k = this->register_parameter("bias_k", empty<P>({1, 1, e}));
      bias_v = this->register_parameter("bias_v", empty<P>({1, 1, e}));
      init::xavier_normal_(bias_k);
      init::xavier_normal_(bias_v);
    }
  }
  /// query (L, N, E) [batch_first: (N, L, E)] or unbatched (L, E); key/value (S, N, E).
  /// key_padding_mask (N, S): true = ignore that key. attn_mask (L, S) or (N * heads, L, S):
  /// bool (true = not allowed, PyTorch's convention here) or additive float. A query with
  /// every key masked gets zero weights and output (PyTorch >= 2.5 does so with need_weights
  /// false, and gives NaN with need_weights true). The returned weights are those the output
  /// used: after dropout in training, as PyTorch's.
  std::pair<TensorT, TensorT> forward(const TensorT& query, const TensorT& key, const TensorT& value,
                                      const TensorT& key_padding_mask = {}, bool need_weights = true,
                                      const TensorT& attn_mask = {}, bool average_attn_weights = true,
                                      bool is_causal = false) {
    detail::MhaCall<P> c;
    c.op = "MultiheadAttention";
    c.embed_dim = options.embed_dim(), c.num_heads = options.num_heads();
    c.in_proj_weight = in_proj_weight, c.in_proj_bias = in_proj_bias;
    c.q_proj_weight = q_proj_weight, c.k_proj_weight = k_proj_weight, c.v_proj_weight = v_proj_weight;
    c.bias_k = bias_k, c.bias_v = bias_v, c.add_zero_attn = options.add_zero_attn();
    c.out_proj_weight = out_proj->weight, c.out_proj_bias = out_proj->bias;
    c.key_padding_mask = key_padding_mask, c.attn_mask = attn_mask;
    c.dropout_p = options.dropout(), c.training = this->is_training();
    c.need_weights = need_weights, c.average_attn_weights = average_attn_weights, c.is_causal = is_causal;
    c.batch_first = options.batch_first();
    return detail::mha_forward(query, key, value, c);
  }
  MultiheadAttentionOptions options;
  TensorT in_proj_weight, in_proj_bias;
  TensorT q_proj_weight, k_proj_weight, v_proj_weight;  ///< with kdim or vdim != embed_dim
  TensorT bias_k, bias_v;                               ///< with add_bias_kv
  BasicLinear<P> out_proj{nullptr};

 protected:
  // forward() calls its submodules through members: removing one would leave it running.
  void child_unregistering(const std::string& child) override { nn::detail::refuse_member_child(this->name(), child); }
};
using MultiheadAttentionImpl = BasicMultiheadAttentionImpl<>;
EMBER_MODULE(MultiheadAttention);
template <class P = DefaultPolicy>
using BasicMultiheadAttention = detail::PolicyHolder<P, MultiheadAttention, BasicMultiheadAttentionImpl<P>>;

namespace detail {
/// The feed-forward activation of the transformer options, as libtorch's activation_t: a
/// name ("relu", "gelu", kReLU, kGELU) or any function of a tensor (PyTorch's callable);
/// the last call wins. A function applies to the default policy's layers. As with libtorch's
/// activation_t, a function that holds a module (a PReLU) is neither registered nor cloned:
/// every layer shares it, and its parameters are not the layers'. activation() reads
/// "<function>" then; it has no mutable form (it could disagree with the function).
template <class Derived>
class TransformerActivationArg {
 public:
  using Function = std::function<Tensor(const Tensor&)>;
  Derived& activation(const std::string& name) & {
    activation_ = name, function_ = nullptr;
    return static_cast<Derived&>(*this);
  }
  Derived&& activation(const std::string& name) && { return std::move(activation(name)); }
  Derived& activation(Function f) & {
    EMBER_CHECK(static_cast<bool>(f), "[Transformer] the activation function is empty");
    activation_ = "<function>", function_ = std::move(f);
    return static_cast<Derived&>(*this);
  }
  Derived&& activation(Function f) && { return std::move(activation(std::move(f))); }
  /// The name, or "<function>" when a function was given.
  const std::string& activation() const noexcept { return activation_; }
  const Function& activation_function() const noexcept { return function_; }
  /// Copies another options struct's activation (name or function).
  template <class Other>
  Derived& activation_of(const TransformerActivationArg<Other>& o) & {
    activation_ = o.activation(), function_ = o.activation_function();
    return static_cast<Derived&>(*this);
  }

 private:
  std::string activation_ = "relu";
  Function function_;
};
}  // namespace detail

struct TransformerLayerOptions : detail::TransformerActivationArg<TransformerLayerOptions> {
  TransformerLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  EMBER_ARG(int64_t, d_model);
  EMBER_ARG(int64_t, nhead);
  EMBER_ARG(int64_t, dim_feedforward) = 2048;
  EMBER_ARG(double, dropout) = 0.1;
  EMBER_ARG(double, layer_norm_eps) = 1e-5;
  EMBER_ARG(bool, batch_first) = false;
  EMBER_ARG(bool, norm_first) = false;
  EMBER_ARG(bool, bias) = true;
};
using TransformerEncoderLayerOptions = TransformerLayerOptions;
using TransformerDecoderLayerOptions = TransformerLayerOptions;

namespace detail {
/// activation(linear(x)): relu through linear_relu (the ReLU in the product's stores), gelu,
/// or the options' function.
template <class L, class P>
BasicTensor<P> linear_activate(const TransformerLayerOptions& o, L& linear, const BasicTensor<P>& x) {
  if (const auto& f = o.activation_function()) {
    if constexpr (std::is_same_v<BasicTensor<P>, Tensor>) return f(linear(x));
    else EMBER_FAIL("[Transformer] an activation function applies to the default policy's layers only");  // (reset() refused it)
  }
  return o.activation() == "gelu" ? linear(x).gelu() : linear->forward_relu(x);
}
/// The activation of a layer of policy P's: a known name, or a function (default policy only).
template <class P, class O>
void check_activation(const O& o) {
  const std::string& a = o.activation();
  EMBER_CHECK(a == "relu" || a == "gelu" || o.activation_function(),
              "[Transformer] activation must be 'relu', 'gelu' or a function, got '{}'", a);
  if constexpr (!std::is_same_v<BasicTensor<P>, Tensor>)
    EMBER_CHECK(!o.activation_function(), "[Transformer] an activation function applies to the default policy's layers only");
}
}  // namespace detail

template <class P = DefaultPolicy>
class BasicTransformerEncoderLayerImpl : public Cloneable<BasicTransformerEncoderLayerImpl<P>, P> {
 public:
  using TensorT = BasicTensor<P>;
  explicit BasicTransformerEncoderLayerImpl(const TransformerLayerOptions& o)
      : Cloneable<BasicTransformerEncoderLayerImpl<P>, P>("TransformerEncoderLayer"), options(o) {
    reset();
  }
  void reset() override {
    detail::check_activation<P>(options);
    int64_t d = options.d_model();
    self_attn = this->register_module("self_attn", BasicMultiheadAttention<P>(MultiheadAttentionOptions(d, options.nhead())
                                                                           .dropout(options.dropout())
                                                                           .bias(options.bias())
                                                                           .batch_first(options.batch_first())));
    linear1 = this->register_module("linear1", BasicLinear<P>(LinearOptions(d, options.dim_feedforward()).bias(options.bias())));
    dropout = this->register_module("dropout", BasicDropout<P>(options.dropout()));
    linear2 = this->register_module("linear2", BasicLinear<P>(LinearOptions(options.dim_feedforward(), d).bias(options.bias())));
    norm1 = this->register_module("norm1", BasicLayerNorm<P>(LayerNormOptions({d}).eps(options.layer_norm_eps()).bias(options.bias())));
    norm2 = this->register_module("norm2", BasicLayerNorm<P>(LayerNormOptions({d}).eps(options.layer_norm_eps()).bias(options.bias())));
    dropout1 = this->register_module("dropout1", BasicDropout<P>(options.dropout()));
    dropout2 = this->register_module("dropout2", BasicDropout<P>(options.dropout()));
  }
  TensorT forward(const TensorT& src, const TensorT& src_mask = {}, const TensorT& src_key_padding_mask = {},
                  bool is_causal = false) {
    auto sa = [&](const TensorT& x) {
      return dropout1(self_attn(x, x, x, src_key_padding_mask, false, src_mask, true, is_causal).first);
    };
    auto ff = [&](const TensorT& x) {
      return dropout2(linear2(dropout(detail::linear_activate(options, linear1, x))));
    };
    TensorT x = src;
    if (options.norm_first()) {
      x = x + sa(norm1(x));
      x = x + ff(norm2(x));
    } else {
      x = norm1(x + sa(x));
      x = norm2(x + ff(x));
    }
    return x;
  }
  TransformerLayerOptions options;
  BasicMultiheadAttention<P> self_attn{nullptr};
  BasicLinear<P> linear1{nullptr}, linear2{nullptr};
  BasicDropout<P> dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr};
  BasicLayerNorm<P> norm1{nullptr}, norm2{nullptr};
 protected:
  // forward() calls its submodules through members: removing one would leave it running.
  void child_unregistering(const std::string& child) override { nn::detail::refuse_member_child(this->name(), child); }
};
using TransformerEncoderLayerImpl = BasicTransformerEncoderLayerImpl<>;
EMBER_MODULE(TransformerEncoderLayer);
template <class P = DefaultPolicy>
using BasicTransformerEncoderLayer = detail::PolicyHolder<P, TransformerEncoderLayer, BasicTransformerEncoderLayerImpl<P>>;

template <class P = DefaultPolicy>
class BasicTransformerDecoderLayerImpl : public Cloneable<BasicTransformerDecoderLayerImpl<P>, P> {
 public:
  using TensorT = BasicTensor<P>;
  explicit BasicTransformerDecoderLayerImpl(const TransformerLayerOptions& o)
      : Cloneable<BasicTransformerDecoderLayerImpl<P>, P>("TransformerDecoderLayer"), options(o) {
    reset();
  }
  void reset() override {
    detail::check_activation<P>(options);
    int64_t d = options.d_model();
    auto mha = [&] {
      return BasicMultiheadAttention<P>(MultiheadAttentionOptions(d, options.nhead())
                                    .dropout(options.dropout())
                                    .bias(options.bias())
                                    .batch_first(options.batch_first()));
    };
    auto ln = [&] { return BasicLayerNorm<P>(LayerNormOptions({d}).eps(options.layer_norm_eps()).bias(options.bias())); };
    self_attn = this->register_module("self_attn", mha());
    multihead_attn = this->register_module("multihead_attn", mha());
    linear1 = this->register_module("linear1", BasicLinear<P>(LinearOptions(d, options.dim_feedforward()).bias(options.bias())));
    dropout = this->register_module("dropout", BasicDropout<P>(options.dropout()));
    linear2 = this->register_module("linear2", BasicLinear<P>(LinearOptions(options.dim_feedforward(), d).bias(options.bias())));
    norm1 = this->register_module("norm1", ln());
    norm2 = this->register_module("norm2", ln());
    norm3 = this->register_module("norm3", ln());
    dropout1 = this->register_module("dropout1", BasicDropout<P>(options.dropout()));
    dropout2 = this->register_module("dropout2", BasicDropout<P>(options.dropout()));
    dropout3 = this->register_module("dropout3", BasicDropout<P>(options.dropout()));
  }
  /// tgt_is_causal / memory_is_causal without the matching mask: a causal mask (query i sees
  /// keys 0..i), as MultiheadAttention's is_causal.
  TensorT forward(const TensorT& tgt, const TensorT& memory, const TensorT& tgt_mask = {},
                  const TensorT& memory_mask = {}, const TensorT& tgt_key_padding_mask = {},
                  const TensorT& memory_key_padding_mask = {}, bool tgt_is_causal = false,
                  bool memory_is_causal = false) {
    auto sa = [&](const TensorT& x) {
      return dropout1(self_attn(x, x, x, tgt_key_padding_mask, false, tgt_mask, true, tgt_is_causal).first);
    };
    auto ca = [&](const TensorT& x) {
      return dropout2(
          multihead_attn(x, memory, memory, memory_key_padding_mask, false, memory_mask, true, memory_is_causal).first);
    };
    auto ff = [&](const TensorT& x) {
      return dropout3(linear2(dropout(detail::linear_activate(options, linear1, x))));
    };
    TensorT x = tgt;
    if (options.norm_first()) {
      x = x + sa(norm1(x));
      x = x + ca(norm2(x));
      x = x + ff(norm3(x));
    } else {
      x = norm1(x + sa(x));
      x = norm2(x + ca(x));
      x = norm3(x + ff(x));
    }
    return x;
  }
  TransformerLayerOptions options;
  BasicMultiheadAttention<P> self_attn{nullptr}, multihead_attn{nullptr};
  BasicLinear<P> linear1{nullptr}, linear2{nullptr};
  BasicDropout<P> dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr}, dropout3{nullptr};
  BasicLayerNorm<P> norm1{nullptr}, norm2{nullptr}, norm3{nullptr};
 protected:
  // forward() calls its submodules through members: removing one would leave it running.
  void child_unregistering(const std::string& child) override { nn::detail::refuse_member_child(this->name(), child); }
};
using TransformerDecoderLayerImpl = BasicTransformerDecoderLayerImpl<>;
EMBER_MODULE(TransformerDecoderLayer);
template <class P = DefaultPolicy>
using BasicTransformerDecoderLayer = detail::PolicyHolder<P, TransformerDecoderLayer, BasicTransformerDecoderLayerImpl<P>>;

/// libtorch's TransformerEncoderOptions: the layer to copy (or its options), how many
/// copies, and an optional final norm.
struct TransformerEncoderOptions {
  TransformerEncoderOptions(TransformerEncoderLayer encoder_layer, int64_t num_layers)
      : encoder_layer_(std::move(encoder_layer)), num_layers_(num_layers) {}
  /// A fresh layer made from `layer_options` (out of line, src/nn/layers.cpp: building one
  /// here would compile the whole layer in every program that includes this header).
  TransformerEncoderOptions(const TransformerEncoderLayerOptions& layer_options, int64_t num_layers);
  EMBER_ARG(TransformerEncoderLayer, encoder_layer);
  EMBER_ARG(int64_t, num_layers);
  EMBER_ARG(LayerNorm, norm) = nullptr;
};
struct TransformerDecoderOptions {
  TransformerDecoderOptions(TransformerDecoderLayer decoder_layer, int64_t num_layers)
      : decoder_layer_(std::move(decoder_layer)), num_layers_(num_layers) {}
  TransformerDecoderOptions(const TransformerDecoderLayerOptions& layer_options, int64_t num_layers);
  EMBER_ARG(TransformerDecoderLayer, decoder_layer);
  EMBER_ARG(int64_t, num_layers);
  EMBER_ARG(LayerNorm, norm) = nullptr;
};

/// `num_layers` deep copies of a layer (named layers.0, layers.1, ...) and an optional final norm.
template <class P = DefaultPolicy>
class BasicTransformerEncoderImpl : public BasicModule<P> {
 public:
  using TensorT = BasicTensor<P>;
  /// The options hold DefaultPolicy's modules; another policy passes its own layer and norm.
  explicit BasicTransformerEncoderImpl(const TransformerEncoderOptions& o)
    requires std::is_same_v<P, DefaultPolicy>
      : BasicTransformerEncoderImpl(o.encoder_layer(), o.num_layers(), o.norm()) {}
  BasicTransformerEncoderImpl(const BasicTransformerEncoderLayer<P>& layer, int64_t num_layers,
                            BasicLayerNorm<P> norm = nullptr)
      : BasicModule<P>("TransformerEncoder") {
    EMBER_CHECK(num_layers >= 1, "[TransformerEncoder] num_layers must be positive, got {}", num_layers);
    for (int64_t i = 0; i < num_layers; ++i)
      layers->push_back(std::dynamic_pointer_cast<BasicTransformerEncoderLayerImpl<P>>(layer->clone()));
    this->register_module("layers", layers);
    if (!norm.is_empty()) this->norm = this->register_module("norm", norm);
  }
  TensorT forward(const TensorT& src, const TensorT& mask = {}, const TensorT& src_key_padding_mask = {},
                  bool is_causal = false) {
    TensorT x = src;
    for (size_t i = 0; i < layers->size(); ++i)
      x = layers->template ptr<BasicTransformerEncoderLayerImpl<P>>(i)->forward(x, mask, src_key_padding_mask, is_causal);
    return norm.is_empty() ? x : norm(x);
  }
  BasicModuleList<P> layers;
  BasicLayerNorm<P> norm{nullptr};
 protected:
  // forward() calls its submodules through members: removing one would leave it running.
  void child_unregistering(const std::string& child) override { nn::detail::refuse_member_child(this->name(), child); }
};
using TransformerEncoderImpl = BasicTransformerEncoderImpl<>;
EMBER_MODULE(TransformerEncoder);
template <class P = DefaultPolicy>
using BasicTransformerEncoder = detail::PolicyHolder<P, TransformerEncoder, BasicTransformerEncoderImpl<P>>;

template <class P = DefaultPolicy>
class BasicTransformerDecoderImpl : public BasicModule<P> {
 public:
  using TensorT = BasicTensor<P>;
  /// The options hold DefaultPolicy's modules; another policy passes its own layer and norm.
  explicit BasicTransformerDecoderImpl(const TransformerDecoderOptions& o)
    requires std::is_same_v<P, DefaultPolicy>
      : BasicTransformerDecoderImpl(o.decoder_layer(), o.num_layers(), o.norm()) {}
  BasicTransformerDecoderImpl(const BasicTransformerDecoderLayer<P>& layer, int64_t num_layers,
                            BasicLayerNorm<P> norm = nullptr)
      : BasicModule<P>("TransformerDecoder") {
    EMBER_CHECK(num_layers >= 1, "[TransformerDecoder] num_layers must be positive, got {}", num_layers);
    for (int64_t i = 0; i < num_layers; ++i)
      layers->push_back(std::dynamic_pointer_cast<BasicTransformerDecoderLayerImpl<P>>(layer->clone()));
    this->register_module("layers", layers);
    if (!norm.is_empty()) this->norm = this->register_module("norm", norm);
  }
  TensorT forward(const TensorT& tgt, const TensorT& memory, const TensorT& tgt_mask = {},
                  const TensorT& memory_mask = {}, const TensorT& tgt_key_padding_mask = {},
                  const TensorT& memory_key_padding_mask = {}, bool tgt_is_causal = false,
                  bool memory_is_causal = false) {
    TensorT x = tgt;
    for (size_t i = 0; i < layers->size(); ++i)
      x = layers->template ptr<BasicTransformerDecoderLayerImpl<P>>(i)->forward(x, memory, tgt_mask, memory_mask,
                                                                        tgt_key_padding_mask, memory_key_padding_mask,
                                                                        tgt_is_causal, memory_is_causal);
    return norm.is_empty() ? x : norm(x);
  }
  BasicModuleList<P> layers;
  BasicLayerNorm<P> norm{nullptr};
 protected:
  // forward() calls its submodules through members: removing one would leave it running.
  void child_unregistering(const std::string& child) override { nn::detail::refuse_member_child(this->name(), child); }
};
using TransformerDecoderImpl = BasicTransformerDecoderImpl<>;
EMBER_MODULE(TransformerDecoder);
template <class P = DefaultPolicy>
using BasicTransformerDecoder = detail::PolicyHolder<P, TransformerDecoder, BasicTransformerDecoderImpl<P>>;

struct TransformerOptions : detail::TransformerActivationArg<TransformerOptions> {
  EMBER_ARG(int64_t, d_model) = 512;
  EMBER_ARG(int64_t, nhead) = 8;
  EMBER_ARG(int64_t, num_encoder_layers) = 6;
  EMBER_ARG(int64_t, num_decoder_layers) = 6;
  EMBER_ARG(int64_t, dim_feedforward) = 2048;
  EMBER_ARG(double, dropout) = 0.1;
  EMBER_ARG(double, layer_norm_eps) = 1e-5;
  EMBER_ARG(bool, batch_first) = false;
  EMBER_ARG(bool, norm_first) = false;
  EMBER_ARG(bool, bias) = true;
};

template <class P = DefaultPolicy>
class BasicTransformerImpl : public BasicModule<P> {
 public:
  using TensorT = BasicTensor<P>;
  explicit BasicTransformerImpl(const TransformerOptions& o = {}) : BasicModule<P>("Transformer"), options(o) {
    auto lo = TransformerLayerOptions(o.d_model(), o.nhead())
                  .dim_feedforward(o.dim_feedforward())
                  .dropout(o.dropout())
                  .layer_norm_eps(o.layer_norm_eps())
                  .batch_first(o.batch_first())
                  .norm_first(o.norm_first())
                  .bias(o.bias());
    lo.activation_of(o);
    auto ln = [&] { return BasicLayerNorm<P>(LayerNormOptions({o.d_model()}).eps(o.layer_norm_eps()).bias(o.bias())); };
    encoder = this->register_module(
        "encoder", BasicTransformerEncoder<P>(BasicTransformerEncoderLayer<P>(lo), o.num_encoder_layers(), ln()));
    decoder = this->register_module(
        "decoder", BasicTransformerDecoder<P>(BasicTransformerDecoderLayer<P>(lo), o.num_decoder_layers(), ln()));
    // PyTorch re-initialises every matrix parameter with xavier_uniform_.
    for (TensorT p : this->parameters())
      if (p.dim() > 1) init::xavier_uniform_(p);
  }
  /// The *_is_causal flags as the layers': a causal mask where the matching mask is absent
  /// (tgt_is_causal: each target position sees only the ones before it).
  TensorT forward(const TensorT& src, const TensorT& tgt, const TensorT& src_mask = {}, const TensorT& tgt_mask = {},
                  const TensorT& memory_mask = {}, const TensorT& src_key_padding_mask = {},
                  const TensorT& tgt_key_padding_mask = {}, const TensorT& memory_key_padding_mask = {},
                  bool src_is_causal = false, bool tgt_is_causal = false, bool memory_is_causal = false) {
    TensorT memory = encoder(src, src_mask, src_key_padding_mask, src_is_causal);
    return decoder(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask, tgt_is_causal,
                   memory_is_causal);
  }
  /// (n, n) additive mask: 0 on and below the diagonal, -inf above.
  static TensorT generate_square_subsequent_mask(int64_t n) {
    TensorT m = full<P>({n, n}, -std::numeric_limits<double>::infinity());
    return triu(m, 1);
  }
  TransformerOptions options;
  BasicTransformerEncoder<P> encoder{nullptr};
  BasicTransformerDecoder<P> decoder{nullptr};
 protected:
  // forward() calls its submodules through members: removing one would leave it running.
  void child_unregistering(const std::string& child) override { nn::detail::refuse_member_child(this->name(), child); }
};
using TransformerImpl = BasicTransformerImpl<>;
EMBER_MODULE(Transformer);
template <class P = DefaultPolicy>
using BasicTransformer = detail::PolicyHolder<P, Transformer, BasicTransformerImpl<P>>;

}  // namespace ember::nn

#pragma once
/// scaled_dot_product_attention, MultiheadAttention, TransformerEncoderLayer/DecoderLayer,
/// TransformerEncoder/Decoder and Transformer, with PyTorch's submodule names
/// (self_attn.in_proj_weight, linear1, norm1, ...) so that PyTorch weights load by name.

#include <ember/nn/functional.hpp>
#include <ember/nn/init.hpp>
#include <ember/nn/module.hpp>
#include <ember/nn/modules/container.hpp>
#include <ember/nn/modules/layers.hpp>
#include <ember/nn/modules/linear.hpp>
#include <ember/nn/options.hpp>
#include <ember/ops/attention_op.hpp>
#include <ember/ops/masked_softmax.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

namespace ember::nn {

namespace detail {
/// Whether attention can run as the fused CPU op (ops/attention_op.hpp): CPU float32/float64
/// inputs of one dtype with equal leading dims, no dropout, and a mask (if any) that is not
/// differentiated, is boolean or of q's dtype (another float dtype would promote the result),
/// and broadcasts to the scores' shape without enlarging it. Anything else takes the
/// composite form.
template <class P>
bool fused_attention_ok(const BasicTensor<P>& q, const BasicTensor<P>& k, const BasicTensor<P>& v,
                        const BasicTensor<P>& mask, bool dropout) {
  if (dropout || !q.device().is_cpu() || !k.device().is_cpu() || !v.device().is_cpu()) return false;
  if ((q.dtype() != DType::F32 && q.dtype() != DType::F64) || k.dtype() != q.dtype() || v.dtype() != q.dtype())
    return false;
  for (int64_t d = 0; d + 2 < q.dim(); ++d)
    if (k.size(d) != q.size(d) || v.size(d) != q.size(d)) return false;
  if (!mask.defined()) return true;
  if (mask.requires_grad() || !mask.device().is_cpu() || mask.dim() > q.dim()) return false;
  if (mask.dtype() != DType::Bool && mask.dtype() != q.dtype()) return false;
  for (int64_t i = 1; i <= mask.dim(); ++i) {  // aligned from the right with (..., L, S)
    const int64_t want = i == 1 ? k.size(-2) : q.size(-i);
    if (mask.size(-i) != 1 && mask.size(-i) != want) return false;
  }
  return true;
}
}  // namespace detail

namespace functional {

/// softmax(q k^T * scale + mask) v over the last two dims. attn_mask: boolean (true = may
/// attend) or additive float, broadcast to (..., L, S); is_causal masks j > i. A query whose
/// every key is masked gets zeros (PyTorch >= 2.5; older versions gave NaN). enable_gqa:
/// grouped-query attention, as PyTorch's: k (..., Hk, S, E) and v (..., Hv, S, Ev) with fewer
/// heads than q (..., Hq, L, E), each count dividing Hq; query head h reads key head
/// h / (Hq / Hk) and value head h / (Hq / Hv).
template <class P>
BasicTensor<P> scaled_dot_product_attention(const BasicTensor<P>& q, const BasicTensor<P>& k, const BasicTensor<P>& v,
                                            const BasicTensor<P>& attn_mask = {}, double dropout_p = 0.0,
                                            bool is_causal = false, std::optional<double> scale = {},
                                            bool training = true, bool enable_gqa = false) {
  EMBER_CHECK(q.dim() >= 2 && k.dim() == q.dim() && v.dim() == q.dim() && q.size(-1) == k.size(-1) &&
                  k.size(-2) == v.size(-2),
              "[scaled_dot_product_attention] shapes q {}, k {}, v {} do not fit (..., L, E), (..., S, E), (..., S, Ev)",
              q.sizes(), k.sizes(), v.sizes());
  if (enable_gqa && q.dim() >= 3 && (k.size(-3) != q.size(-3) || v.size(-3) != q.size(-3))) {
    const int64_t hq = q.size(-3), hk = k.size(-3), hv = v.size(-3);
    EMBER_CHECK(hk > 0 && hv > 0 && hq % hk == 0 && hq % hv == 0,
                "[scaled_dot_product_attention] enable_gqa: the key and value heads must divide the query's {}; got "
                "shapes q {}, k {}, v {}",
                hq, q.sizes(), k.sizes(), v.sizes());
    bool same_lead = hk == hv;
    for (int64_t d = 0; d + 3 < q.dim(); ++d) same_lead = same_lead && k.size(d) == q.size(d) && v.size(d) == q.size(d);
    if (same_lead && !attn_mask.defined() && !is_causal) {
      // Without a mask, each key/value head's query heads are one longer sequence of
      // queries (..., Hk, group * L, E): no copy of k and v.
      Shape grouped = q.sizes(), out_shape = q.sizes();
      grouped[grouped.size() - 3] = hk;
      grouped[grouped.size() - 2] = hq / hk * q.size(-2);
      out_shape[out_shape.size() - 1] = v.size(-1);
      return scaled_dot_product_attention(q.reshape(grouped), k, v, {}, dropout_p, false, scale, training)
          .reshape(out_shape);
    }
    return scaled_dot_product_attention(q, k.repeat_interleave(hq / hk, -3), v.repeat_interleave(hq / hv, -3),
                                        attn_mask, dropout_p, is_causal, scale, training);
  }
  EMBER_CHECK(!(is_causal && attn_mask.defined()),
              "[scaled_dot_product_attention] pass either attn_mask or is_causal, not both");
  // Under autocast a bf16 query (from a Linear) may meet an f32 (or f16/bf16) additive mask:
  // it is added to the scores, which promotes. Not f64: the probabilities would be f64, which
  // autocast does not cast for the product with v.
  EMBER_CHECK(!attn_mask.defined() || attn_mask.dtype() == DType::Bool || attn_mask.dtype() == q.dtype() ||
                  (autocast::is_enabled() && attn_mask.is_floating_point() && attn_mask.dtype() != DType::F64),
              "[scaled_dot_product_attention] attn_mask must be bool or the query's dtype {}, got {}", q.dtype(),
              attn_mask.dtype());
  int64_t l = q.size(-2), s = k.size(-2);
  double sc = scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  if (nn::detail::fused_attention_ok(q, k, v, attn_mask, dropout_p > 0 && training)) {
    // One fused op over (B, H, L, E) (ops/attention_op.hpp): other leading dims fold into B.
    Shape lead;
    int64_t batch = 1;  // the leading dims folded (explicitly: -1 cannot be inferred for empty inputs)
    for (int64_t d = 0; d + 2 < q.dim(); ++d) lead.push_back(q.size(d)), batch *= q.size(d);
    const bool four = q.dim() == 4;
    auto as4 = [&](const BasicTensor<P>& t) { return four ? t : t.reshape({batch, 1, t.size(-2), t.size(-1)}); };
    BasicTensor<P> mask4;
    if (attn_mask.defined()) {
      BasicTensor<P> m = attn_mask.dtype() == DType::Bool
                             ? where(attn_mask, 0.0, full<P>({}, -std::numeric_limits<double>::infinity(),
                                                             TensorOptions(q.dtype()).device(q.device())))
                             : attn_mask.to(q.dtype());
      Shape full_shape = lead;
      full_shape.push_back(l);
      full_shape.push_back(s);
      m = m.expand(full_shape);
      mask4 = four ? m : m.reshape({batch, 1, l, s});
    }
    BasicTensor<P> q4 = as4(q), k4 = as4(k), v4 = as4(v);
    auto r = dispatch<P>(ops::Attention{sc, is_causal, 0}, q4.impl(), &k4.impl(), &v4.impl(),
                         mask4.defined() ? &mask4.impl() : nullptr);
    BasicTensor<P> out = BasicTensor<P>::wrap(std::move(r.out));
    if (four) return out;
    Shape out_shape = lead;
    out_shape.push_back(l);
    out_shape.push_back(v.size(-1));
    return out.reshape(out_shape);
  }
  BasicTensor<P> scores = q.matmul(k.mT()) * sc;
  const double neg_inf = -std::numeric_limits<double>::infinity();
  if (is_causal) {
    BasicTensor<P> allowed = tril(ones<P>({l, s}, TensorOptions(DType::Bool).device(q.device())));
    scores = where(allowed, scores, neg_inf);
  } else if (attn_mask.defined()) {
    scores = attn_mask.dtype() == DType::Bool ? where(attn_mask, scores, neg_inf) : scores + attn_mask;
  }
  BasicTensor<P> w = attn_mask.defined() ? ember::detail::softmax_masked_rows_zero(scores) : scores.softmax(-1);
  if (dropout_p > 0) w = dropout(w, dropout_p, training);
  return w.matmul(v);
}

}  // namespace functional

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
    out_proj = this->register_module("out_proj", Linear(LinearOptions(e, e).bias(options.bias())));
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
    int64_t e = options.embed_dim(), heads = options.num_heads(), hd = e / heads;
    bool unbatched = query.dim() == 2;
    auto to_lne = [&](const TensorT& t) {
      if (unbatched) return t.unsqueeze(1);
      return options.batch_first() ? t.transpose(0, 1) : t;
    };
    TensorT q = to_lne(query), k = to_lne(key), v = to_lne(value);
    const int64_t kdim = options.kdim().value_or(e), vdim = options.vdim().value_or(e);
    EMBER_CHECK(q.dim() == 3 && k.dim() == 3 && v.dim() == 3 && q.size(2) == e && k.size(2) == kdim &&
                    v.size(2) == vdim && k.size(0) == v.size(0) && q.size(1) == k.size(1) && q.size(1) == v.size(1),
                "[MultiheadAttention] expects query (L, N, {}), key (S, N, {}) and value (S, N, {}), got {}, {}, {}",
                e, kdim, vdim, query.sizes(), key.sizes(), value.sizes());
    int64_t l = q.size(0), s = k.size(0), n = q.size(1);
    // Self-attention (query, key and value one tensor) as one packed projection and the fused
    // op: no per-head copies either way, one gradient for in_proj_weight (PyTorch packs it
    // the same way). Needs the fused op's conditions, and no weights to differentiate.
    const bool self_attention = in_proj_weight.defined() && &query.impl() == &key.impl() &&
                                &key.impl() == &value.impl() && !bias_k.defined() && !options.add_zero_attn();
    const bool weights_need_grad =
        need_weights && autograd::GradMode::is_enabled() &&
        (query.requires_grad() || (in_proj_weight.defined() && in_proj_weight.requires_grad()) ||
         (in_proj_bias.defined() && in_proj_bias.requires_grad()));
    if (self_attention && !weights_need_grad &&
        nn::detail::fused_attention_ok(q, q, q, attn_mask, options.dropout() > 0 && this->is_training()) &&
        !(key_padding_mask.defined() && key_padding_mask.requires_grad())) {
      TensorT qkv = linear(q, in_proj_weight, in_proj_bias);  // (L, N, 3E)
      const bool causal_only = is_causal && !attn_mask.defined() && !key_padding_mask.defined();
      TensorT mask = causal_only ? TensorT() : additive_mask(attn_mask, key_padding_mask, is_causal, q, n, l, s, unbatched);
      if (mask.defined()) mask = mask.to(q.dtype()).expand({n, heads, l, s});
      auto r = dispatch<P>(ops::Attention{1.0 / std::sqrt(static_cast<double>(hd)), causal_only, heads}, qkv.impl(),
                           nullptr, nullptr, mask.defined() ? &mask.impl() : nullptr);
      // Unaveraged weights are a copy: the probabilities are also what the op's backward reads.
      TensorT w = TensorT::wrap(std::move(r.probs));
      return finish(TensorT::wrap(std::move(r.out)), need_weights && !average_attn_weights ? w.clone() : w,
                    need_weights, average_attn_weights, unbatched);
    }
    auto proj = [&](const TensorT& x, int64_t i) {
      TensorT w = in_proj_weight.defined() ? in_proj_weight.narrow(0, i * e, e)
                                           : (i == 0 ? q_proj_weight : i == 1 ? k_proj_weight : v_proj_weight);
      TensorT b = in_proj_bias.defined() ? in_proj_bias.narrow(0, i * e, e) : TensorT();
      // (T, N, E) -> (N, heads, T, hd)
      return linear(x, w, b).reshape({x.size(0), n, heads, hd}).permute({1, 2, 0, 3});
    };
    TensorT qh = proj(q, 0), kh = proj(k, 1), vh = proj(v, 2);
    TensorT mask = additive_mask(attn_mask, key_padding_mask, is_causal, q, n, l, s, unbatched);
    // Appended keys (bias_k, then a zero key), which every query may attend to: the masks get
    // a 0 column for each.
    int64_t appended = 0;
    auto append = [&](const TensorT& key_part, const TensorT& value_part) {
      kh = cat({kh, key_part}, 2), vh = cat({vh, value_part}, 2);
      ++appended;
    };
    if (bias_k.defined()) {
      // (1, 1, E) -> (N, heads, 1, hd): head h reads features h * hd .. (h + 1) * hd.
      auto per_head = [&](const TensorT& b) { return b.reshape({1, heads, 1, hd}).expand({n, heads, 1, hd}); };
      append(per_head(bias_k), per_head(bias_v));
    }
    if (options.add_zero_attn()) {
      TensorT z = zeros<P>({n, heads, 1, hd}, TensorOptions(kh.dtype()).device(kh.device()));
      append(z, z);
    }
    if (mask.defined() && appended > 0) mask = ember::pad(mask, {0, appended});
    TensorT scores = qh.matmul(kh.mT()) * (1.0 / std::sqrt(static_cast<double>(hd)));
    if (mask.defined()) scores = scores + mask;
    TensorT w = mask.defined() ? ember::detail::softmax_masked_rows_zero(scores) : scores.softmax(-1);
    if (options.dropout() > 0) w = F::dropout(w, options.dropout(), this->is_training());
    TensorT ctx = w.matmul(vh).permute({2, 0, 1, 3}).reshape({l, n, e});  // (L, N, E)
    return finish(ctx, w, need_weights, average_attn_weights, unbatched);
  }
  MultiheadAttentionOptions options;
  TensorT in_proj_weight, in_proj_bias;
  TensorT q_proj_weight, k_proj_weight, v_proj_weight;  ///< with kdim or vdim != embed_dim
  TensorT bias_k, bias_v;                               ///< with add_bias_kv
  Linear out_proj{nullptr};

 private:
  /// The output projection of the (L, N, E) context in the caller's layout, and the
  /// (N, heads, L, S) attention weights w averaged over heads or as they are, when wanted.
  std::pair<TensorT, TensorT> finish(const TensorT& ctx, const TensorT& w, bool need_weights, bool average,
                                     bool unbatched) {
    TensorT out = out_proj(ctx);
    if (unbatched) out = out.squeeze(1);
    else if (options.batch_first()) out = out.transpose(0, 1);
    TensorT weights;
    if (need_weights) {
      weights = average ? w.mean({1}) : w;
      if (unbatched) weights = weights.squeeze(0);
    }
    return {out, weights};
  }

  /// Additive mask, broadcastable to (N, heads, L, S), combining attn_mask, key_padding_mask
  /// and is_causal; undefined when there is none.
  TensorT additive_mask(const TensorT& attn_mask, const TensorT& key_padding_mask, bool is_causal, const TensorT& q,
                        int64_t n, int64_t l, int64_t s, bool unbatched) const {
    const int64_t heads = options.num_heads();
    const double neg_inf = -std::numeric_limits<double>::infinity();
    TensorT mask;
    auto add_mask = [&](const TensorT& m) { mask = mask.defined() ? mask + m : m; };
    if (attn_mask.defined()) {
      // PyTorch's shapes: (L, S), or one mask per batch entry and head (N * heads, L, S);
      // unbatched, (heads, L, S).
      EMBER_CHECK((attn_mask.dim() == 2 && attn_mask.sizes() == Shape({l, s})) ||
                      (attn_mask.dim() == 3 && attn_mask.sizes() == Shape({n * heads, l, s})),
                  "[MultiheadAttention] attn_mask of shape {} is neither ({}, {}) nor ({}, {}, {})", attn_mask.sizes(),
                  l, s, n * heads, l, s);
      EMBER_CHECK(attn_mask.dtype() == DType::Bool || attn_mask.is_floating_point(),
                  "[MultiheadAttention] attn_mask must be bool or floating, got {}", attn_mask.dtype());
      TensorT am = attn_mask.dtype() == DType::Bool ? where(attn_mask, neg_inf, zeros_like(attn_mask, TensorOptions(q.dtype())))
                                                     : attn_mask.to(q.dtype());
      if (am.dim() == 3) am = am.reshape({n, heads, l, s});
      add_mask(am);
    }
    if (is_causal && !attn_mask.defined()) {
      TensorT allowed = tril(ones<P>({l, s}, TensorOptions(DType::Bool).device(q.device())));
      add_mask(where(allowed, 0.0, full<P>({l, s}, neg_inf, TensorOptions(q.dtype()).device(q.device()))));
    }
    if (key_padding_mask.defined()) {
      TensorT kpm = unbatched ? key_padding_mask.unsqueeze(0) : key_padding_mask;
      EMBER_CHECK(kpm.sizes() == Shape({n, s}), "[MultiheadAttention] key_padding_mask must be ({}, {}), got {}", n, s,
                  key_padding_mask.sizes());
      EMBER_CHECK(kpm.dtype() == DType::Bool || kpm.is_floating_point(),
                  "[MultiheadAttention] key_padding_mask must be bool or floating, got {}", kpm.dtype());
      TensorT kp = kpm.dtype() == DType::Bool
                       ? where(kpm, neg_inf, zeros_like(kpm, TensorOptions(q.dtype())))
                       : kpm.to(q.dtype());
      add_mask(kp.reshape({n, 1, 1, s}));
    }
    return mask;
  }
 protected:
  // forward() calls its submodules through members: removing one would leave it running.
  void child_unregistering(const std::string& child) override { nn::detail::refuse_member_child(this->name(), child); }
};
using MultiheadAttentionImpl = BasicMultiheadAttentionImpl<>;
EMBER_MODULE(MultiheadAttention);

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
    self_attn = this->register_module("self_attn", MultiheadAttention(MultiheadAttentionOptions(d, options.nhead())
                                                                           .dropout(options.dropout())
                                                                           .bias(options.bias())
                                                                           .batch_first(options.batch_first())));
    linear1 = this->register_module("linear1", Linear(LinearOptions(d, options.dim_feedforward()).bias(options.bias())));
    dropout = this->register_module("dropout", Dropout(options.dropout()));
    linear2 = this->register_module("linear2", Linear(LinearOptions(options.dim_feedforward(), d).bias(options.bias())));
    norm1 = this->register_module("norm1", LayerNorm(LayerNormOptions({d}).eps(options.layer_norm_eps()).bias(options.bias())));
    norm2 = this->register_module("norm2", LayerNorm(LayerNormOptions({d}).eps(options.layer_norm_eps()).bias(options.bias())));
    dropout1 = this->register_module("dropout1", Dropout(options.dropout()));
    dropout2 = this->register_module("dropout2", Dropout(options.dropout()));
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
  MultiheadAttention self_attn{nullptr};
  Linear linear1{nullptr}, linear2{nullptr};
  Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr};
  LayerNorm norm1{nullptr}, norm2{nullptr};
 protected:
  // forward() calls its submodules through members: removing one would leave it running.
  void child_unregistering(const std::string& child) override { nn::detail::refuse_member_child(this->name(), child); }
};
using TransformerEncoderLayerImpl = BasicTransformerEncoderLayerImpl<>;
EMBER_MODULE(TransformerEncoderLayer);

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
      return MultiheadAttention(MultiheadAttentionOptions(d, options.nhead())
                                    .dropout(options.dropout())
                                    .bias(options.bias())
                                    .batch_first(options.batch_first()));
    };
    auto ln = [&] { return LayerNorm(LayerNormOptions({d}).eps(options.layer_norm_eps()).bias(options.bias())); };
    self_attn = this->register_module("self_attn", mha());
    multihead_attn = this->register_module("multihead_attn", mha());
    linear1 = this->register_module("linear1", Linear(LinearOptions(d, options.dim_feedforward()).bias(options.bias())));
    dropout = this->register_module("dropout", Dropout(options.dropout()));
    linear2 = this->register_module("linear2", Linear(LinearOptions(options.dim_feedforward(), d).bias(options.bias())));
    norm1 = this->register_module("norm1", ln());
    norm2 = this->register_module("norm2", ln());
    norm3 = this->register_module("norm3", ln());
    dropout1 = this->register_module("dropout1", Dropout(options.dropout()));
    dropout2 = this->register_module("dropout2", Dropout(options.dropout()));
    dropout3 = this->register_module("dropout3", Dropout(options.dropout()));
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
  MultiheadAttention self_attn{nullptr}, multihead_attn{nullptr};
  Linear linear1{nullptr}, linear2{nullptr};
  Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr}, dropout3{nullptr};
  LayerNorm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};
 protected:
  // forward() calls its submodules through members: removing one would leave it running.
  void child_unregistering(const std::string& child) override { nn::detail::refuse_member_child(this->name(), child); }
};
using TransformerDecoderLayerImpl = BasicTransformerDecoderLayerImpl<>;
EMBER_MODULE(TransformerDecoderLayer);

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
  explicit BasicTransformerEncoderImpl(const TransformerEncoderOptions& o)
      : BasicTransformerEncoderImpl(o.encoder_layer(), o.num_layers(), o.norm()) {}
  BasicTransformerEncoderImpl(const TransformerEncoderLayer& layer, int64_t num_layers, LayerNorm norm = nullptr)
      : BasicModule<P>("TransformerEncoder") {
    EMBER_CHECK(num_layers >= 1, "[TransformerEncoder] num_layers must be positive, got {}", num_layers);
    for (int64_t i = 0; i < num_layers; ++i)
      layers->push_back(std::dynamic_pointer_cast<TransformerEncoderLayerImpl>(layer->clone()));
    this->register_module("layers", layers);
    if (!norm.is_empty()) this->norm = this->register_module("norm", norm);
  }
  TensorT forward(const TensorT& src, const TensorT& mask = {}, const TensorT& src_key_padding_mask = {},
                  bool is_causal = false) {
    TensorT x = src;
    for (size_t i = 0; i < layers->size(); ++i)
      x = layers->template ptr<TransformerEncoderLayerImpl>(i)->forward(x, mask, src_key_padding_mask, is_causal);
    return norm.is_empty() ? x : norm(x);
  }
  ModuleList layers;
  LayerNorm norm{nullptr};
 protected:
  // forward() calls its submodules through members: removing one would leave it running.
  void child_unregistering(const std::string& child) override { nn::detail::refuse_member_child(this->name(), child); }
};
using TransformerEncoderImpl = BasicTransformerEncoderImpl<>;
EMBER_MODULE(TransformerEncoder);

template <class P = DefaultPolicy>
class BasicTransformerDecoderImpl : public BasicModule<P> {
 public:
  using TensorT = BasicTensor<P>;
  explicit BasicTransformerDecoderImpl(const TransformerDecoderOptions& o)
      : BasicTransformerDecoderImpl(o.decoder_layer(), o.num_layers(), o.norm()) {}
  BasicTransformerDecoderImpl(const TransformerDecoderLayer& layer, int64_t num_layers, LayerNorm norm = nullptr)
      : BasicModule<P>("TransformerDecoder") {
    EMBER_CHECK(num_layers >= 1, "[TransformerDecoder] num_layers must be positive, got {}", num_layers);
    for (int64_t i = 0; i < num_layers; ++i)
      layers->push_back(std::dynamic_pointer_cast<TransformerDecoderLayerImpl>(layer->clone()));
    this->register_module("layers", layers);
    if (!norm.is_empty()) this->norm = this->register_module("norm", norm);
  }
  TensorT forward(const TensorT& tgt, const TensorT& memory, const TensorT& tgt_mask = {},
                  const TensorT& memory_mask = {}, const TensorT& tgt_key_padding_mask = {},
                  const TensorT& memory_key_padding_mask = {}, bool tgt_is_causal = false,
                  bool memory_is_causal = false) {
    TensorT x = tgt;
    for (size_t i = 0; i < layers->size(); ++i)
      x = layers->template ptr<TransformerDecoderLayerImpl>(i)->forward(x, memory, tgt_mask, memory_mask,
                                                                        tgt_key_padding_mask, memory_key_padding_mask,
                                                                        tgt_is_causal, memory_is_causal);
    return norm.is_empty() ? x : norm(x);
  }
  ModuleList layers;
  LayerNorm norm{nullptr};
 protected:
  // forward() calls its submodules through members: removing one would leave it running.
  void child_unregistering(const std::string& child) override { nn::detail::refuse_member_child(this->name(), child); }
};
using TransformerDecoderImpl = BasicTransformerDecoderImpl<>;
EMBER_MODULE(TransformerDecoder);

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
    auto ln = [&] { return LayerNorm(LayerNormOptions({o.d_model()}).eps(o.layer_norm_eps()).bias(o.bias())); };
    encoder = this->register_module("encoder", TransformerEncoder(TransformerEncoderLayer(lo), o.num_encoder_layers(), ln()));
    decoder = this->register_module("decoder", TransformerDecoder(TransformerDecoderLayer(lo), o.num_decoder_layers(), ln()));
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
  TransformerEncoder encoder{nullptr};
  TransformerDecoder decoder{nullptr};
 protected:
  // forward() calls its submodules through members: removing one would leave it running.
  void child_unregistering(const std::string& child) override { nn::detail::refuse_member_child(this->name(), child); }
};
using TransformerImpl = BasicTransformerImpl<>;
EMBER_MODULE(Transformer);

}  // namespace ember::nn

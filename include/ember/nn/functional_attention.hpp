#pragma once
/// Attention as functions: scaled_dot_product_attention, and multi_head_attention_forward,
/// the whole of nn::MultiheadAttention's computation with the projections passed in (as
/// torch::nn::functional's, for weights that live elsewhere: a checkpoint, another module).
///
///   auto [out, weights] = F::multi_head_attention_forward(
///       q, k, v, F::MultiheadAttentionForwardFuncOptions(E, heads, in_w, in_b, {}, {}, false, 0.0, out_w, out_b)
///                    .training(false));

#include <ember/autocast/autocast_mode.hpp>
#include <ember/autograd/grad_mode.hpp>
#include <ember/nn/functional.hpp>
#include <ember/nn/options.hpp>
#include <ember/ops/attention_op.hpp>
#include <ember/ops/masked_softmax.hpp>

#include <cmath>
#include <concepts>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>

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

/// torch::nn::functional::MultiheadAttentionForwardFuncOptions: the projections and settings
/// of multi_head_attention_forward, in libtorch's order and names.
struct MultiheadAttentionForwardFuncOptions {
  MultiheadAttentionForwardFuncOptions(int64_t embed_dim_to_check, int64_t num_heads, Tensor in_proj_weight,
                                       Tensor in_proj_bias, Tensor bias_k, Tensor bias_v, bool add_zero_attn,
                                       double dropout_p, Tensor out_proj_weight, Tensor out_proj_bias)
      : embed_dim_to_check_(embed_dim_to_check), num_heads_(num_heads), in_proj_weight_(std::move(in_proj_weight)),
        in_proj_bias_(std::move(in_proj_bias)), bias_k_(std::move(bias_k)), bias_v_(std::move(bias_v)),
        add_zero_attn_(add_zero_attn), dropout_p_(dropout_p), out_proj_weight_(std::move(out_proj_weight)),
        out_proj_bias_(std::move(out_proj_bias)) {}
  EMBER_ARG(int64_t, embed_dim_to_check);
  EMBER_ARG(int64_t, num_heads);
  /// (3E, E): the query, key and value projections stacked; ignored with use_separate_proj_weight.
  EMBER_ARG(Tensor, in_proj_weight);
  EMBER_ARG(Tensor, in_proj_bias);  ///< (3E) or undefined
  EMBER_ARG(Tensor, bias_k);        ///< (1, 1, E), with bias_v: one more key for every query
  EMBER_ARG(Tensor, bias_v);
  EMBER_ARG(bool, add_zero_attn);
  EMBER_ARG(double, dropout_p);
  EMBER_ARG(Tensor, out_proj_weight);  ///< (E, E)
  EMBER_ARG(Tensor, out_proj_bias);    ///< (E) or undefined
  EMBER_ARG(bool, training) = true;    ///< dropout applies only in training
  EMBER_ARG(Tensor, key_padding_mask) = {};
  EMBER_ARG(bool, need_weights) = true;
  EMBER_ARG(Tensor, attn_mask) = {};
  /// q_proj_weight (E, E), k_proj_weight (E, kdim), v_proj_weight (E, vdim) instead of
  /// in_proj_weight: keys and values of other widths.
  EMBER_ARG(bool, use_separate_proj_weight) = false;
  EMBER_ARG(Tensor, q_proj_weight) = {};
  EMBER_ARG(Tensor, k_proj_weight) = {};
  EMBER_ARG(Tensor, v_proj_weight) = {};
  /// Keys / values already projected and split into heads, (N * heads, S, E / heads), used
  /// instead of projecting key / value (a decoder's cached memory).
  EMBER_ARG(Tensor, static_k) = {};
  EMBER_ARG(Tensor, static_v) = {};
  EMBER_ARG(bool, average_attn_weights) = true;
  /// Ember's: without attn_mask, key j > query i is masked (PyTorch 2's is only a hint that
  /// the attn_mask given is causal).
  EMBER_ARG(bool, is_causal) = false;
};

}  // namespace functional

namespace detail {

/// One multi-head attention call: the projections, masks and settings of
/// multi_head_attention_forward, as tensors of the caller's policy; `op` names the caller in
/// errors (MultiheadAttention or multi_head_attention_forward).
template <class P>
struct MhaCall {
  using TensorT = BasicTensor<P>;
  const char* op = "multi_head_attention_forward";
  int64_t embed_dim = 0, num_heads = 0;
  TensorT in_proj_weight, in_proj_bias, q_proj_weight, k_proj_weight, v_proj_weight;  ///< packed, or the three
  TensorT bias_k, bias_v, out_proj_weight, out_proj_bias, static_k, static_v;
  TensorT key_padding_mask, attn_mask;
  bool add_zero_attn = false, training = true, need_weights = true, average_attn_weights = true, is_causal = false;
  bool batch_first = false;  ///< query (N, L, E), key (N, S, kdim), value (N, S, vdim), output (N, L, E)
  double dropout_p = 0.0;
};

/// Additive mask, broadcastable to (N, heads, L, S), combining attn_mask, key_padding_mask
/// and is_causal; undefined when there is none. `q` is (L, N, E).
template <class P>
BasicTensor<P> mha_additive_mask(const MhaCall<P>& c, const BasicTensor<P>& q, int64_t s, bool unbatched) {
  using TensorT = BasicTensor<P>;
  const char* op = c.op;
  const int64_t heads = c.num_heads, l = q.size(0), n = q.size(1);
  const double neg_inf = -std::numeric_limits<double>::infinity();
  TensorT mask;
  auto add_mask = [&](const TensorT& m) { mask = mask.defined() ? mask + m : m; };
  if (const TensorT& attn_mask = c.attn_mask; attn_mask.defined()) {
    // PyTorch's shapes: (L, S), or one mask per batch entry and head (N * heads, L, S);
    // unbatched, (heads, L, S).
    EMBER_CHECK((attn_mask.dim() == 2 && attn_mask.sizes() == Shape({l, s})) ||
                    (attn_mask.dim() == 3 && attn_mask.sizes() == Shape({n * heads, l, s})),
                "[{}] attn_mask of shape {} is neither ({}, {}) nor ({}, {}, {})", op, attn_mask.sizes(), l, s,
                n * heads, l, s);
    EMBER_CHECK(attn_mask.dtype() == DType::Bool || attn_mask.is_floating_point(),
                "[{}] attn_mask must be bool or floating, got {}", op, attn_mask.dtype());
    TensorT am = attn_mask.dtype() == DType::Bool ? where(attn_mask, neg_inf, zeros_like(attn_mask, TensorOptions(q.dtype())))
                                                   : attn_mask.to(q.dtype());
    if (am.dim() == 3) am = am.reshape({n, heads, l, s});
    add_mask(am);
  }
  if (c.is_causal && !c.attn_mask.defined()) {
    TensorT allowed = tril(ones<P>({l, s}, TensorOptions(DType::Bool).device(q.device())));
    add_mask(where(allowed, 0.0, full<P>({l, s}, neg_inf, TensorOptions(q.dtype()).device(q.device()))));
  }
  if (const TensorT& kpm_in = c.key_padding_mask; kpm_in.defined()) {
    TensorT kpm = unbatched ? kpm_in.unsqueeze(0) : kpm_in;
    EMBER_CHECK(kpm.sizes() == Shape({n, s}), "[{}] key_padding_mask must be ({}, {}), got {}", op, n, s,
                kpm_in.sizes());
    EMBER_CHECK(kpm.dtype() == DType::Bool || kpm.is_floating_point(),
                "[{}] key_padding_mask must be bool or floating, got {}", op, kpm.dtype());
    TensorT kp = kpm.dtype() == DType::Bool ? where(kpm, neg_inf, zeros_like(kpm, TensorOptions(q.dtype())))
                                            : kpm.to(q.dtype());
    add_mask(kp.reshape({n, 1, 1, s}));
  }
  return mask;
}

/// Checks the projections of `c` against the (L, N, E) query and (S, N, kdim/vdim) key and
/// value; undefined optional ones pass.
template <class P>
void check_mha_weights(const MhaCall<P>& c, const BasicTensor<P>& q, const BasicTensor<P>& k, const BasicTensor<P>& v,
                       const BasicTensor<P>& query, const BasicTensor<P>& key, const BasicTensor<P>& value) {
  const char* op = c.op;
  const int64_t e = c.embed_dim;
  auto check = [&](const BasicTensor<P>& w, const Shape& want, const char* name) {
    EMBER_CHECK(w.defined(), "[{}] {} is undefined", op, name);
    EMBER_CHECK(w.sizes() == want, "[{}] {} of shape {} must have shape {}", op, name, w.sizes(), want);
  };
  const bool packed = c.in_proj_weight.defined();
  int64_t kdim = e, vdim = e;
  if (!packed) {
    EMBER_CHECK(c.q_proj_weight.defined() && c.k_proj_weight.defined() && c.v_proj_weight.defined(),
                "[{}] needs in_proj_weight, or q_proj_weight, k_proj_weight and v_proj_weight", op);
    EMBER_CHECK(c.k_proj_weight.dim() == 2 && c.v_proj_weight.dim() == 2,
                "[{}] k_proj_weight {} and v_proj_weight {} must be (E, kdim) and (E, vdim) matrices", op,
                c.k_proj_weight.sizes(), c.v_proj_weight.sizes());
    kdim = c.k_proj_weight.size(1), vdim = c.v_proj_weight.size(1);
  }
  EMBER_CHECK(q.dim() == 3 && k.dim() == 3 && v.dim() == 3 && q.size(2) == e && k.size(2) == kdim &&
                  v.size(2) == vdim && k.size(0) == v.size(0) && q.size(1) == k.size(1) && q.size(1) == v.size(1),
              "[{}] expects query {}{}), key {}{}) and value {}{}), got {}, {}, {}", op,
              c.batch_first ? "(N, L, " : "(L, N, ", e, c.batch_first ? "(N, S, " : "(S, N, ", kdim,
              c.batch_first ? "(N, S, " : "(S, N, ", vdim, query.sizes(), key.sizes(), value.sizes());
  // The tensors used beside the projections: on the query's device, and (but under autocast,
  // whose projections come out in its dtype) of its dtype.
  auto check_beside = [&](const BasicTensor<P>& t, const char* name, bool same_dtype) {
    if (!t.defined()) return;
    EMBER_CHECK(t.device() == q.device(), "[{}] {} is on {} but the query is on {}", op, name, t.device(), q.device());
    EMBER_CHECK(!same_dtype || autocast::is_enabled() || t.dtype() == q.dtype(), "[{}] {} is {} but the query is {}",
                op, name, t.dtype(), q.dtype());
  };
  check_beside(c.bias_k, "bias_k", true), check_beside(c.bias_v, "bias_v", true);
  check_beside(c.static_k, "static_k", true), check_beside(c.static_v, "static_v", true);
  check_beside(c.attn_mask, "attn_mask", false), check_beside(c.key_padding_mask, "key_padding_mask", false);
  if (packed) check(c.in_proj_weight, {3 * e, e}, "in_proj_weight");
  else check(c.q_proj_weight, {e, e}, "q_proj_weight"), check(c.k_proj_weight, {e, kdim}, "k_proj_weight"),
      check(c.v_proj_weight, {e, vdim}, "v_proj_weight");
  if (c.in_proj_bias.defined()) check(c.in_proj_bias, {3 * e}, "in_proj_bias");
  check(c.out_proj_weight, {e, e}, "out_proj_weight");
  if (c.out_proj_bias.defined()) check(c.out_proj_bias, {e}, "out_proj_bias");
  EMBER_CHECK(c.bias_k.defined() == c.bias_v.defined(), "[{}] bias_k and bias_v come together: one is undefined", op);
  if (c.bias_k.defined()) check(c.bias_k, {1, 1, e}, "bias_k"), check(c.bias_v, {1, 1, e}, "bias_v");
  EMBER_CHECK(!c.bias_k.defined() || (!c.static_k.defined() && !c.static_v.defined()),
              "[{}] bias_k and bias_v cannot be appended to static_k / static_v", op);
  const int64_t nh = q.size(1) * c.num_heads, hd = e / c.num_heads;
  for (const auto* st : {&c.static_k, &c.static_v})
    EMBER_CHECK(!st->defined() || (st->dim() == 3 && st->size(0) == nh && st->size(2) == hd),
                "[{}] {} of shape {} must be (N * heads, S, E / heads) = ({}, S, {})", op,
                st == &c.static_k ? "static_k" : "static_v", st->sizes(), nh, hd);
  const int64_t sk = c.static_k.defined() ? c.static_k.size(1) : k.size(0);
  const int64_t sv = c.static_v.defined() ? c.static_v.size(1) : v.size(0);
  EMBER_CHECK(sk == sv, "[{}] keys ({}) and values ({}) differ in length (static_k {}, static_v {})", op, sk, sv,
              c.static_k.sizes(), c.static_v.sizes());
}

/// Multi-head attention over query (L, N, E) or unbatched (L, E), key (S, N, kdim) and value
/// (S, N, vdim): (output (L, N, E), weights (N, L, S') averaged over heads or (N, heads, L,
/// S') as they are, undefined unless need_weights), S' counting appended keys.
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> mha_forward(const BasicTensor<P>& query, const BasicTensor<P>& key,
                                                      const BasicTensor<P>& value, const MhaCall<P>& c) {
  using TensorT = BasicTensor<P>;
  const char* op = c.op;
  EMBER_CHECK(query.defined() && key.defined() && value.defined(), "[{}] query, key and value must be defined", op);
  const int64_t e = c.embed_dim, heads = c.num_heads;
  EMBER_CHECK(heads > 0 && e % heads == 0, "[{}] embed_dim {} must be divisible by num_heads {}", op, e, heads);
  EMBER_CHECK(c.dropout_p >= 0 && c.dropout_p <= 1, "[{}] dropout probability must be in [0, 1], got {}", op,
              c.dropout_p);
  const int64_t hd = e / heads;
  const bool unbatched = query.dim() == 2;
  auto to_lne = [&](const TensorT& t) {
    if (unbatched) return t.unsqueeze(1);
    return c.batch_first && t.dim() == 3 ? t.transpose(0, 1) : t;
  };
  // One tensor passed as two or three stays one (self-attention's packed projection below).
  const TensorT q = to_lne(query);
  const TensorT k = &key.impl() == &query.impl() ? q : to_lne(key);
  const TensorT v = &value.impl() == &query.impl() ? q : &value.impl() == &key.impl() ? k : to_lne(value);
  check_mha_weights(c, q, k, v, query, key, value);
  const int64_t l = q.size(0), n = q.size(1);
  const bool dropout_on = c.dropout_p > 0 && c.training;
  // Self-attention (query, key and value one tensor) as one packed projection and the fused
  // op: no per-head copies either way, one gradient for in_proj_weight (PyTorch packs it
  // the same way). Needs the fused op's conditions, and no weights to differentiate.
  const bool self_attention = c.in_proj_weight.defined() && &query.impl() == &key.impl() &&
                              &key.impl() == &value.impl() && !c.bias_k.defined() && !c.add_zero_attn &&
                              !c.static_k.defined() && !c.static_v.defined();
  const bool weights_need_grad =
      c.need_weights && ember::detail::grad_enabled<P>() &&
      (query.requires_grad() || (c.in_proj_weight.defined() && c.in_proj_weight.requires_grad()) ||
       (c.in_proj_bias.defined() && c.in_proj_bias.requires_grad()));
  auto finish = [&](const TensorT& ctx, const TensorT& w) -> std::pair<TensorT, TensorT> {
    TensorT out = linear(ctx, c.out_proj_weight, c.out_proj_bias);
    if (unbatched) out = out.squeeze(1);
    else if (c.batch_first) out = out.transpose(0, 1);
    TensorT weights;
    if (c.need_weights) {
      weights = c.average_attn_weights ? w.mean({1}) : w;
      if (unbatched) weights = weights.squeeze(0);
    }
    return {out, weights};
  };
  // The masks' shapes are checked (and they are made additive in q's dtype) by
  // mha_additive_mask; fused_attention_ok would read them against q's (L, N, E) layout.
  auto plain = [](const TensorT& m) { return !m.defined() || (!m.requires_grad() && m.device().is_cpu()); };
  if (self_attention && !weights_need_grad && fused_attention_ok(q, q, q, TensorT(), dropout_on) &&
      plain(c.attn_mask) && plain(c.key_padding_mask)) {
    TensorT qkv = linear(q, c.in_proj_weight, c.in_proj_bias);  // (L, N, 3E)
    const bool causal_only = c.is_causal && !c.attn_mask.defined() && !c.key_padding_mask.defined();
    TensorT mask = causal_only ? TensorT() : mha_additive_mask(c, q, l, unbatched);
    if (mask.defined()) mask = mask.to(q.dtype()).expand({n, heads, l, l});
    auto r = dispatch<P>(ops::Attention{1.0 / std::sqrt(static_cast<double>(hd)), causal_only, heads}, qkv.impl(),
                         nullptr, nullptr, mask.defined() ? &mask.impl() : nullptr);
    // Unaveraged weights are a copy: the probabilities are also what the op's backward reads.
    TensorT w = TensorT::wrap(std::move(r.probs));
    return finish(TensorT::wrap(std::move(r.out)), c.need_weights && !c.average_attn_weights ? w.clone() : w);
  }
  auto proj = [&](const TensorT& x, int64_t i) {
    const bool packed = c.in_proj_weight.defined();
    TensorT w = packed ? c.in_proj_weight.narrow(0, i * e, e)
                       : (i == 0 ? c.q_proj_weight : i == 1 ? c.k_proj_weight : c.v_proj_weight);
    TensorT b = c.in_proj_bias.defined() ? c.in_proj_bias.narrow(0, i * e, e) : TensorT();
    // (T, N, E) -> (N, heads, T, hd)
    return linear(x, w, b).reshape({x.size(0), n, heads, hd}).permute({1, 2, 0, 3});
  };
  // Static keys and values (N * heads, S, hd) are already projected and split into heads.
  auto heads_of = [&](const TensorT& st) { return st.reshape({n, heads, st.size(1), hd}); };
  TensorT qh = proj(q, 0);
  TensorT kh = c.static_k.defined() ? heads_of(c.static_k) : proj(k, 1);
  TensorT vh = c.static_v.defined() ? heads_of(c.static_v) : proj(v, 2);
  const int64_t s = kh.size(2);
  TensorT mask = mha_additive_mask(c, q, s, unbatched);
  // Appended keys (bias_k, then a zero key), which every query may attend to: the masks get
  // a 0 column for each.
  int64_t appended = 0;
  auto append = [&](const TensorT& key_part, const TensorT& value_part) {
    kh = cat({kh, key_part}, 2), vh = cat({vh, value_part}, 2);
    ++appended;
  };
  if (c.bias_k.defined()) {
    // (1, 1, E) -> (N, heads, 1, hd): head h reads features h * hd .. (h + 1) * hd.
    auto per_head = [&](const TensorT& b) { return b.reshape({1, heads, 1, hd}).expand({n, heads, 1, hd}); };
    append(per_head(c.bias_k), per_head(c.bias_v));
  }
  if (c.add_zero_attn) {
    TensorT z = zeros<P>({n, heads, 1, hd}, TensorOptions(kh.dtype()).device(kh.device()));
    append(z, z);
  }
  if (mask.defined() && appended > 0) mask = ember::pad(mask, {0, appended});
  TensorT scores = qh.matmul(kh.mT()) * (1.0 / std::sqrt(static_cast<double>(hd)));
  if (mask.defined()) scores = scores + mask;
  TensorT w = mask.defined() ? ember::detail::softmax_masked_rows_zero(scores) : scores.softmax(-1);
  if (dropout_on) w = functional::dropout(w, c.dropout_p, true);
  TensorT ctx = w.matmul(vh).permute({2, 0, 1, 3}).reshape({l, n, e});  // (L, N, E)
  return finish(ctx, w);
}

}  // namespace detail

namespace functional {

/// torch::nn::functional::multi_head_attention_forward: nn::MultiheadAttention's computation
/// with the projections of `o`. query (L, N, E) or unbatched (L, E), key (S, N, kdim), value
/// (S, N, vdim) (sequence first, as libtorch's; no batch_first). Returns (output (L, N, E),
/// weights averaged over heads (N, L, S) or per head (N, heads, L, S), undefined unless
/// need_weights). Masks as MultiheadAttention's: a bool attn_mask masks where true (PyTorch's
/// Python convention; libtorch 1.13's C++ form adds a bool mask as 0/1 instead). With static
/// keys, the masks' key dim is the static keys' count (as libtorch 1.13's).
template <class P, std::same_as<MultiheadAttentionForwardFuncOptions> O>
std::tuple<BasicTensor<P>, BasicTensor<P>> multi_head_attention_forward(const BasicTensor<P>& query,
                                                                        const BasicTensor<P>& key,
                                                                        const BasicTensor<P>& value, const O& o) {
  nn::detail::MhaCall<P> c;
  EMBER_CHECK(query.defined() && query.dim() >= 2 && query.size(-1) == o.embed_dim_to_check(),
              "[multi_head_attention_forward] query of shape {} must end in embed_dim_to_check = {}",
              query.defined() ? query.sizes() : Shape(), o.embed_dim_to_check());
  c.embed_dim = o.embed_dim_to_check(), c.num_heads = o.num_heads();
  auto t = [](const Tensor& x) { return detail::option_tensor<P>(x); };
  if (o.use_separate_proj_weight()) {
    EMBER_CHECK(o.q_proj_weight().defined() && o.k_proj_weight().defined() && o.v_proj_weight().defined(),
                "[multi_head_attention_forward] use_separate_proj_weight needs q_proj_weight, k_proj_weight and "
                "v_proj_weight");
    c.q_proj_weight = t(o.q_proj_weight()), c.k_proj_weight = t(o.k_proj_weight());
    c.v_proj_weight = t(o.v_proj_weight());
  } else {
    EMBER_CHECK(o.in_proj_weight().defined(),
                "[multi_head_attention_forward] in_proj_weight is undefined (use_separate_proj_weight is false)");
    c.in_proj_weight = t(o.in_proj_weight());
  }
  c.in_proj_bias = t(o.in_proj_bias()), c.bias_k = t(o.bias_k()), c.bias_v = t(o.bias_v());
  c.out_proj_weight = t(o.out_proj_weight()), c.out_proj_bias = t(o.out_proj_bias());
  c.static_k = t(o.static_k()), c.static_v = t(o.static_v());
  c.key_padding_mask = t(o.key_padding_mask()), c.attn_mask = t(o.attn_mask());
  c.add_zero_attn = o.add_zero_attn(), c.dropout_p = o.dropout_p(), c.training = o.training();
  c.need_weights = o.need_weights(), c.average_attn_weights = o.average_attn_weights(), c.is_causal = o.is_causal();
  auto [out, weights] = nn::detail::mha_forward(query, key, value, c);
  return {out, weights};
}

}  // namespace functional

}  // namespace ember::nn

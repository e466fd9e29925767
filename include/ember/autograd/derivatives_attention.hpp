#pragma once
/// Derivative of the fused scaled dot-product attention (ops/attention_op.hpp), a part of
/// autograd/derivatives.hpp.

#include <ember/autograd/derivatives.hpp>
#include <ember/ops/attention_op.hpp>
#include <ember/ops/masked_softmax.hpp>

#include <array>
#include <limits>

namespace ember::autograd {

namespace detail {

/// The op's q, k, v as (B, H, ., .) tensors: the packed (L, N, 3E) projection split into
/// heads, or the separate inputs as they are.
template <class P>
std::array<T<P>, 3> attention_operands(const T<P>& q, const T<P>& k, const T<P>& v, int64_t heads) {
  if (heads == 0) return {q, k, v};
  const int64_t l = q.size(0), n = q.size(1), e = q.size(2) / 3;
  auto part = [&](int64_t i) { return q.narrow(2, i * e, e).reshape({l, n, heads, e / heads}).permute({1, 2, 0, 3}); };
  return {part(0), part(1), part(2)};
}

}  // namespace detail

template <class P>
void Recorder<P>::record(const ops::Attention& op, const ops::AttentionResult& out, const TensorImpl& qi,
                         const TensorImpl* ki, const TensorImpl* vi, const TensorImpl* mi) {
  using TP = detail::T<P>;
  EMBER_CHECK(!mi || !requires_grad(*mi), "[{}] does not differentiate its mask; the mask requires grad",
              op.name());
  const double scale = op.scale;
  const bool causal = op.causal;
  const int64_t heads = op.heads;
  detail::Saved<P> q(qi), k, v;
  if (ki) k = detail::Saved<P>(*ki);
  if (vi) v = detail::Saved<P>(*vi);
  const bool separate = ki != nullptr;
  TensorRef mask = mi ? TensorRef::share(const_cast<TensorImpl*>(mi)) : TensorRef();
  TensorRef probs = out.probs;  // the forward's softmax, private to this node
  auto f = [=](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP& dy = gs[0];
    const bool nq = n.needs_input_grad(0), nk = n.needs_input_grad(1), nv = n.needs_input_grad(2);
    TP qv = q.get(n), kv = separate ? k.get(n) : TP(), vv = separate ? v.get(n) : TP();
    if (!GradMode::is_enabled() && !dy.requires_grad()) {
      // A plain backward: the fused kernel, from the probabilities the forward kept.
      ops::AttentionBackward back{scale, heads, nq, nk, nv};
      ops::AttentionGrads g = dispatch<P>(back, dy.impl(), qv.impl(), separate ? &kv.impl() : nullptr,
                                          separate ? &vv.impl() : nullptr, *probs);
      auto wrap = [](TensorRef& t) { return t ? TP::wrap(std::move(t)) : TP(); };
      return {wrap(g.dq), wrap(g.dk), wrap(g.dv)};
    }
    // Recorded (create_graph): the formulas with differentiable ops, the probabilities
    // recomputed from q and k so that second derivatives see their dependence on them.
    auto [Q, K, V] = detail::attention_operands<P>(qv, kv, vv, heads);
    TP s = Q.matmul(K.mT()) * scale;
    if (mask) s = s + TP(mask);
    if (causal) {
      TP allowed = tril(ones<P>({s.size(2), s.size(3)}, TensorOptions(DType::Bool).device(s.device())));
      s = where(allowed, s, -std::numeric_limits<double>::infinity());
    }
    TP p = mask ? ember::detail::softmax_masked_rows_zero(s) : s.softmax(-1);  // as the kernel
    TP d_o = heads ? dy.reshape({dy.size(0), dy.size(1), heads, dy.size(2) / heads}).permute({1, 2, 0, 3}) : dy;
    TP dv = p.mT().matmul(d_o), dp = d_o.matmul(V.mT());
    TP ds = p * (dp - (dp * p).sum(Shape{3}, true));
    TP dq = ds.matmul(K) * scale, dk = ds.mT().matmul(Q) * scale;
    if (heads) {
      auto merge = [&](const TP& t) { return t.permute({2, 0, 1, 3}).reshape({qv.size(0), qv.size(1), qv.size(2) / 3}); };
      return {cat<P>({merge(dq), merge(dk), merge(dv)}, 2), TP(), TP()};
    }
    return {nq ? dq : TP(), nk ? dk : TP(), nv ? dv : TP()};
  };
  set_history(*out.out, detail::make_node<P>(op.name(), {&qi, ki, vi}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::AttentionBackward& op, const ops::AttentionGrads&, const TensorImpl&,
                         const TensorImpl&, const TensorImpl*, const TensorImpl*, const TensorImpl&) {
  // Only the plain backward above calls it, with grad mode off.
  EMBER_FAIL("[{}] is not differentiable: differentiate scaled_dot_product_attention instead", op.name());
}

}  // namespace ember::autograd

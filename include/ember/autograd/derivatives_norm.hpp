#pragma once
/// Derivatives of the fused layer and batch normalisations (ops/norm_ops.hpp), a part of
/// autograd/derivatives.hpp.

#include <ember/autograd/derivatives.hpp>
#include <ember/ops/norm_ops.hpp>

namespace ember::autograd {

template <class P>
void Recorder<P>::record(const ops::LayerNorm& op, const ops::LayerNormResult& out, const TensorImpl& xi,
                         const TensorImpl* wi, const TensorImpl* bi) {
  using TP = detail::T<P>;
  const int64_t cols = op.cols, rows = xi.numel / std::max<int64_t>(cols, 1);
  const double eps = op.eps;
  detail::Saved<P> x(xi), w;
  if (wi) w = detail::Saved<P>(*wi);
  const bool has_w = wi != nullptr;
  Shape xs = xi.sizes, ws = wi ? wi->sizes : Shape{}, bs = bi ? bi->sizes : Shape{};
  TensorRef mean = out.mean, rstd = out.rstd;  // the forward's statistics, private to this node
  auto f = [=](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP& dy = gs[0];
    const bool nx = n.needs_input_grad(0), nw = n.needs_input_grad(1), nb = n.needs_input_grad(2);
    if (!GradMode::is_enabled() && !dy.requires_grad()) {
      // A plain backward: the fused kernel, from the statistics the forward kept.
      TP wv = has_w ? w.get(n) : TP();
      ops::LayerNormBackward back{cols, nx, nw && has_w, nb};
      ops::LayerNormGrads g = dispatch<P>(back, dy.impl(), x.get(n).impl(), *mean, *rstd,
                                          has_w ? &wv.impl() : static_cast<const TensorImpl*>(nullptr));
      TP dx = g.dx ? TP::wrap(std::move(g.dx)) : TP();
      TP dw = g.dweight ? TP::wrap(std::move(g.dweight)).reshape(ws) : TP();
      TP db = g.dbias ? TP::wrap(std::move(g.dbias)).reshape(bs) : TP();
      return {dx, dw, db};
    }
    // Recorded (create_graph): the same formulas written with differentiable ops, the
    // statistics recomputed from x so that second derivatives see their dependence on x.
    TP x2 = x.get(n).reshape({rows, cols}), dy2 = dy.reshape({rows, cols});
    auto [var, mu] = x2.var_mean(Shape{1}, 0, true);
    TP rs = (var + eps).rsqrt();
    TP xhat = (x2 - mu) * rs;
    TP g = has_w ? dy2 * w.get(n).reshape({cols}) : dy2;
    TP dx, dw, db;
    if (nx) dx = (rs * (g - g.mean(Shape{1}, true) - xhat * (g * xhat).mean(Shape{1}, true))).reshape(xs);
    if (nw && has_w) dw = (dy2 * xhat).sum(Shape{0}).reshape(ws);
    if (nb) db = dy2.sum(Shape{0}).reshape(bs);
    return {dx, dw, db};
  };
  set_history(*out.y, detail::make_node<P>(op.name(), {&xi, wi, bi}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::LayerNormBackward& op, const ops::LayerNormGrads&, const TensorImpl&,
                         const TensorImpl&, const TensorImpl&, const TensorImpl&, const TensorImpl*) {
  // Only the plain backward above calls it, with grad mode off; anything else would silently
  // treat the gradient as a constant.
  EMBER_FAIL("[{}] is not differentiable: differentiate layer_norm instead", op.name());
}

template <class P>
void Recorder<P>::record(const ops::BatchNorm& op, const ops::BatchNormResult& out, const TensorImpl& xi,
                         const TensorImpl* wi, const TensorImpl* bi, const TensorImpl*, const TensorImpl*) {
  using TP = detail::T<P>;
  const double eps = op.eps;
  const bool training = op.training;
  detail::Saved<P> x(xi), w;
  if (wi) w = detail::Saved<P>(*wi);
  const bool has_w = wi != nullptr;
  const int64_t nd = xi.ndim(), c = xi.sizes[1];
  Shape ws = wi ? wi->sizes : Shape{}, bs = bi ? bi->sizes : Shape{};
  TensorRef mean = out.mean, rstd = out.rstd;  // the statistics the output used, private to this node
  auto f = [=](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP& dy = gs[0];
    const bool nx = n.needs_input_grad(0), nw = n.needs_input_grad(1), nb = n.needs_input_grad(2);
    if (!GradMode::is_enabled() && !dy.requires_grad()) {
      // A plain backward: the fused kernel, from the statistics the forward used.
      TP wv = has_w ? w.get(n) : TP();
      ops::BatchNormBackward back{training, nx, nw && has_w, nb};
      ops::BatchNormGrads g = dispatch<P>(back, dy.impl(), x.get(n).impl(), *mean, *rstd,
                                          has_w ? &wv.impl() : static_cast<const TensorImpl*>(nullptr));
      TP dx = g.dx ? TP::wrap(std::move(g.dx)) : TP();
      TP dw = g.dweight ? TP::wrap(std::move(g.dweight)).reshape(ws) : TP();
      TP db = g.dbias ? TP::wrap(std::move(g.dbias)).reshape(bs) : TP();
      return {dx, dw, db};
    }
    // Recorded (create_graph): the same formulas with differentiable ops. In training the
    // statistics are recomputed from x, so that second derivatives see their dependence on x;
    // running statistics are constants.
    Shape dims{0}, sh(static_cast<size_t>(nd), 1);
    for (int64_t d = 2; d < nd; ++d) dims.push_back(d);
    sh[1] = c;
    TP xv = x.get(n), mu, rs;
    if (training) {
      auto [var, m] = xv.var_mean(dims, 0, true);
      mu = m, rs = (var + eps).rsqrt();
    } else {
      // The kept statistics are f64 (ops/norm_ops.hpp): in x's dtype, so the gradient has it.
      mu = TP::wrap(mean).to(xv.dtype()).reshape(sh), rs = TP::wrap(rstd).to(xv.dtype()).reshape(sh);
    }
    TP xhat = (xv - mu) * rs;
    TP g = has_w ? dy * w.get(n).reshape(sh) : dy;
    TP dx, dw, db;
    if (nx) {
      dx = training ? rs * (g - g.mean(dims, true) - xhat * (g * xhat).mean(dims, true)) : g * rs;
    }
    if (nw && has_w) dw = (dy * xhat).sum(dims).reshape(ws);
    if (nb) db = dy.sum(dims).reshape(bs);
    return {dx, dw, db};
  };
  set_history(*out.y, detail::make_node<P>(op.name(), {&xi, wi, bi}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::BatchNormBackward& op, const ops::BatchNormGrads&, const TensorImpl&,
                         const TensorImpl&, const TensorImpl&, const TensorImpl&, const TensorImpl*) {
  EMBER_FAIL("[{}] is not differentiable: differentiate batch_norm instead", op.name());
}

}  // namespace ember::autograd

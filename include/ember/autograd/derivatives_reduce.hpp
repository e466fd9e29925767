#pragma once
/// Derivatives of reductions, arg-reductions, softmax, scans and matrix products.
/// Included by autograd/derivatives.hpp.

// derivatives.hpp first (it includes this file at its end): its detail::ops_of is used here.
#include <ember/autograd/derivatives.hpp>
#include <ember/autograd/function_node.hpp>
#include <ember/autograd/layer.hpp>
#include <ember/ops/functions.hpp>
#include <ember/ops/shape_ops.hpp>

namespace ember::autograd {

template <class P>
void Recorder<P>::record(const ops::Reduce& op, const TensorRef& out, const TensorImpl& xi) {
  using R = ops::ReduceOp;
  using TP = detail::T<P>;
  if (!is_floating(out->dtype) || !is_floating(xi.dtype)) return;
  const R r = op.op;
  detail::Saved<P> x, y;
  if (r != R::Sum && r != R::Mean) x = detail::Saved<P>(xi);
  if (r == R::Prod || r == R::Amax || r == R::Amin || r == R::Norm2 || r == R::NormInf) y = detail::Saved<P>(*out, true);
  Shape in = xi.sizes, dims = op.dims;
  bool keepdim = op.keepdim;
  int64_t count = 1;
  if (dims.empty()) {
    count = xi.numel;
  } else {
    for (int64_t d : dims) count *= xi.sizes[wrap_dim(d, xi.ndim(), op.name())];
  }
  auto f = [r, x, y, in, dims, keepdim, count](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    auto expand = [&](const TP& t) { return detail::expand_reduced<P>(t, in, dims, keepdim); };
    auto restore = [&](const TP& t) {  // reduced dims back as size 1, not expanded
      if (keepdim) return t;
      Shape k = in;
      if (dims.empty()) {
        for (size_t i = 0; i < k.size(); ++i) k[i] = 1;
      } else {
        for (int64_t d : dims) k[wrap_dim(d, static_cast<int64_t>(in.size()), "backward")] = 1;
      }
      return t.reshape(k);
    };
    const TP& g = gs[0];
    switch (r) {
      case R::Sum: return {expand(g)};
      case R::Nansum: {
        TP xv = x.get(n);
        return {where(xv.isnan(), 0.0, expand(g))};
      }
      case R::Mean: return {expand(g) / static_cast<double>(count)};
      case R::Prod: {
        // d prod / d x_i = the product of the others.
        TP xv = x.get(n);
        if (xv.dim() == 0) return {g};  // the product of one element is that element
        bool has_zero;
        {
          NoGradGuard ng;
          has_zero = xv.eq(0.0).any().template item<bool>();
        }
        if (!has_zero) return {expand(g) * restore(y.get(n)) / xv};
        // With zeros, directly (exact to every order): move the reduced dims last and flatten
        // them to one of length m, then for each i take the product of a copy of its slice
        // with x_i replaced by 1 (O(m^2) per slice, only when a zero is present).
        int64_t nd = xv.dim();
        Shape perm, kept_sizes, rd_sizes;
        std::vector<bool> reduced(static_cast<size_t>(nd), dims.empty());
        for (int64_t d : dims) reduced[static_cast<size_t>(wrap_dim(d, nd, "prod"))] = true;
        int64_t m = 1;
        for (int64_t d = 0; d < nd; ++d)
          if (!reduced[d]) perm.push_back(d), kept_sizes.push_back(xv.size(d));
        for (int64_t d = 0; d < nd; ++d)
          if (reduced[d]) perm.push_back(d), rd_sizes.push_back(xv.size(d)), m *= xv.size(d);
        Shape inverse(static_cast<size_t>(nd));
        for (int64_t i = 0; i < nd; ++i) inverse[perm[i]] = i;
        Shape flat = kept_sizes, one = kept_sizes, back = kept_sizes;
        flat.push_back(m), one.push_back(1);
        for (int64_t s : rd_sizes) back.push_back(s);
        TP xf = xv.permute(perm).reshape(flat).unsqueeze(-2);          // [..., 1, m]
        TP diag = eye<P>(m, m, TensorOptions(DType::F64).device(xv.device())).ne(0.0);
        TP others = where(diag, 1.0, xf).prod({-1});                    // [..., m]
        TP gk = restore(g).permute(perm).reshape(one);                 // [..., 1]
        return {(others * gk).reshape(back).permute(inverse)};
      }
      case R::Amax: case R::Amin: case R::NormInf: {
        TP xv = x.get(n);
        TP src = r == R::NormInf ? xv.abs() : xv;
        // Split evenly between the entries equal to the result; a NaN result between the NaN
        // entries (PyTorch's max()/min(); its amax gives NaN everywhere then).
        TP yv = restore(y.get(n));
        TP mask = where(yv.isnan(), src.isnan(), src.eq(yv)).to(xv.dtype());
        Shape rd = dims;
        if (rd.empty())
          for (int64_t d = 0; d < xv.dim(); ++d) rd.push_back(d);
        TP share = mask / mask.sum(rd, true);
        TP gx = expand(g) * share;
        return {r == R::NormInf ? gx * xv.sign() : gx};
      }
      case R::Norm1: return {expand(g) * x.get(n).sign()};
      case R::Norm2: {
        TP yv = restore(y.get(n));
        return {where(yv.eq(0.0), 0.0, expand(g) * x.get(n) / yv)};
      }
      default:
        EMBER_FAIL("[{}] has no derivative", ops::name(r));
    }
  };
  set_history(*out, detail::make_node<P>(op.name(), {&xi}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::ArgReduce& op, const RefPair& out, const TensorImpl& xi) {
  using TP = detail::T<P>;
  if (!out.first || !is_floating(out.first->dtype)) return;  // argmax/argmin: indices only
  detail::Saved<P> idx(*out.second);
  Shape in = xi.sizes;
  int64_t dim = xi.ndim() == 0 ? 0 : wrap_dim(op.dim, xi.ndim(), op.name());
  bool keepdim = op.keepdim;
  auto f = [idx, in, dim, keepdim](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    TP g = gs[0], i = idx.get(n);
    if (in.empty()) return {g};
    if (!keepdim) g = g.unsqueeze(dim), i = i.unsqueeze(dim);
    TP z = zeros<P>(in, TensorOptions(g.dtype()).device(g.device()));
    return {scatter(z, dim, i, g)};
  };
  set_history(*out.first, detail::make_node<P>(op.name(), {&xi}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::Softmax& op, const TensorRef& out, const TensorImpl& xi) {
  using TP = detail::T<P>;
  detail::Saved<P> y(*out, true);
  int64_t dim = wrap_dim(op.dim, xi.ndim(), op.name());
  bool log = op.log;
  auto f = [y, dim, log](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP& g = gs[0];
    TP yv = y.get(n);
    // A plain backward on the CPU: the fused op (one read of g and y per pass instead of four
    // elementwise ops). Recorded backwards (create_graph) use the composite formula below.
    if (!GradMode::is_enabled() && !g.requires_grad() && yv.dim() > 0 && yv.device().is_cpu() &&
        g.dtype() == yv.dtype() && (yv.dtype() == DType::F32 || yv.dtype() == DType::F64))
      return {TP::wrap(dispatch<P>(ops::SoftmaxBackward{dim, log}, g.impl(), yv.impl()))};
    Shape d;
    if (yv.dim() > 0) d.push_back(dim);
    if (log) return {g - yv.exp() * (d.empty() ? g : g.sum(d, true))};
    TP gy = g * yv;
    return {gy - yv * (d.empty() ? gy : gy.sum(d, true))};
  };
  set_history(*out, detail::make_node<P>(op.name(), {&xi}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::SoftmaxBackward& op, const TensorRef&, const TensorImpl&, const TensorImpl&) {
  // Only the plain backward above calls it, with grad mode off; anything else would silently
  // treat the gradient as a constant.
  EMBER_FAIL("[{}] is not differentiable: differentiate softmax / log_softmax instead", op.name());
}

template <class P>
void Recorder<P>::record(const ops::Cumulative& op, const RefPair& out, const TensorImpl& xi) {
  using TP = detail::T<P>;
  using C = ember::detail::CumOp;
  if (!is_floating(out.first->dtype) || !is_floating(xi.dtype)) return;
  const C c = op.op;
  int64_t dim = xi.ndim() == 0 ? 0 : wrap_dim(op.dim, xi.ndim(), op.name());
  detail::Saved<P> x, y, idx;
  if (c == C::Prod || c == C::Logsumexp) x = detail::Saved<P>(xi), y = detail::Saved<P>(*out.first, true);
  if (c == C::Max || c == C::Min) idx = detail::Saved<P>(*out.second);
  Shape in = xi.sizes;
  auto f = [c, dim, x, y, idx, in](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP& g = gs[0];
    if (in.empty()) return {g};  // a scan of a 0-d tensor is the identity
    // Sum over positions j >= i along dim, as a scan of the reversed slice (not total minus
    // prefix: that cancels catastrophically, and gives inf - inf = NaN).
    auto rev_cumsum = [&](const TP& t) { return flip(flip(t, {dim}).cumsum(dim), {dim}); };
    switch (c) {
      case C::Sum: return {rev_cumsum(g)};
      case C::Prod: {
        TP xv = x.get(n);
        bool has_zero;
        {
          NoGradGuard ng;
          has_zero = xv.eq(0.0).any().template item<bool>();
        }
        // Without zeros: d y_j / d x_i = y_j / x_i for j >= i.
        if (!has_zero) return {rev_cumsum(g * y.get(n)) / xv};
        // With zeros, directly: grad_i = sum_{j >= i} g_j prod_{k <= j, k != i} x_k, from the
        // scans of n copies of the slice, copy i with x_i replaced by 1 (O(n^2) per slice).
        int64_t len = xv.size(dim);
        TP xt = xv.transpose(dim, -1).unsqueeze(-2);                     // [..., 1, n]
        TP diag = eye<P>(len, len, TensorOptions(DType::F64).device(xv.device())).ne(0.0);
        TP others = where(diag, 1.0, xt);                                 // [..., n(i), n(k)]
        TP scans = others.cumprod(-1);                                     // [..., i, j]
        TP upper = triu(ones<P>({len, len}, TensorOptions(xv.dtype()).device(xv.device())));
        TP gt = g.transpose(dim, -1).unsqueeze(-2);                        // [..., 1, j]
        return {(scans * gt * upper).sum({-1}).transpose(dim, -1)};
      }
      case C::Max: case C::Min: {
        TP z = zeros<P>(in, TensorOptions(g.dtype()).device(g.device()));
        return {scatter_add(z, dim, idx.get(n), g)};
      }
      case C::Logsumexp: {
        // d y_j / d x_i = exp(x_i - y_j) for j >= i: sum_{j >= i} g_j exp(x_i - y_j), in log
        // space (exp(-y) and exp(x) overflow apart), the positive and negative parts of g
        // separately, as PyTorch's.
        // Masked so that the formula stays finite and twice differentiable: log(gp) is -inf
        // where gp is 0 without an infinite derivative, and a -inf y (only -inf inputs so far,
        // no gradient to give) counts as 0.
        constexpr double kNegInf = -std::numeric_limits<double>::infinity();
        TP xv = x.get(n), yv = y.get(n);
        TP ys = where(yv.eq(kNegInf), 0.0, yv);
        auto part = [&](const TP& gp) {  // gp >= 0
          TP pos = gp.gt(0.0);
          TP lg = where(pos, where(pos, gp, 1.0).log(), kNegInf);
          return flip(flip(lg - ys, {dim}).logcumsumexp(dim), {dim}).add(xv).exp();
        };
        return {part(g.clamp(0.0, std::nullopt)) - part(g.neg().clamp(0.0, std::nullopt))};
      }
    }
    return {};
  };
  set_history(*out.first, detail::make_node<P>(op.name(), {&xi}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::Matmul& op, const TensorRef& out, const TensorImpl& ai, const TensorImpl& bi,
                         const TensorImpl* ci) {
  using TP = detail::T<P>;
  using K = ops::MatmulKind;
  const K k = op.kind;
  const double alpha = op.alpha, beta = op.beta;
  const bool need_a = requires_grad(ai), need_b = requires_grad(bi);
  detail::Saved<P> a, b, y;
  if (need_b) a = detail::Saved<P>(ai);
  if (need_a) b = detail::Saved<P>(bi);
  // linear_relu: the gradient passes where the output is positive (or NaN), as ReLU's.
  const bool relu = op.relu;
  if (relu) y = detail::Saved<P>(*out, true);
  Shape sa = ai.sizes, sb = bi.sizes, sc = ci ? ci->sizes : Shape{};
  // A 2-d operand that is a transposed contiguous matrix (Linear's w.t()) gets its gradient
  // in the same layout, computed as a transposed product; the transpose's own backward then
  // hands the weight a contiguous gradient that .grad() keeps without a copy.
  auto col_major = [](const TensorImpl& t) {
    return t.ndim() == 2 && t.sizes[0] > 1 && t.sizes[1] > 1 && t.strides[0] == 1 && t.strides[1] == t.sizes[0];
  };
  const bool a_cm = col_major(ai), b_cm = col_major(bi);
  auto f = [k, alpha, beta, a, b, y, relu, sa, sb, sc, a_cm, b_cm](const Node& n,
                                                                    detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP g = relu ? gs[0].relu_backward(y.get(n)) : gs[0];
    TP ga, gb, gc;
    const bool na = n.needs_input_grad(0), nb = n.needs_input_grad(1), nc = n.needs_input_grad(2);
    switch (k) {
      case K::Dot:
        if (na) ga = g * b.get(n);
        if (nb) gb = g * a.get(n);
        break;
      case K::Outer:
        if (na) ga = g.matmul(b.get(n));
        if (nb) gb = g.t().matmul(a.get(n));
        break;
      case K::Linear:  // y = a b^T + c with b (n, k): both gradients in their operands' layouts
        if (na) ga = g.mm(b.get(n));
        if (nb) gb = g.t().mm(a.get(n));
        break;
      case K::Mm: case K::Addmm:
        if (na) ga = a_cm ? b.get(n).mm(g.t()).t() : g.mm(b.get(n).t());
        if (nb) gb = b_cm ? g.t().mm(a.get(n)).t() : a.get(n).t().mm(g);
        break;
      case K::Bmm: case K::Baddbmm:
        if (na) ga = g.bmm(b.get(n).mT());
        if (nb) gb = a.get(n).mT().bmm(g);
        break;
      case K::Matmul: {
        // Promote 1-d operands as matmul did, then reduce broadcast batch dims.
        TP g1 = g;
        bool a1 = sa.size() == 1, b1 = sb.size() == 1;
        if (a1 && b1) {
          if (na) ga = g * b.get(n);
          if (nb) gb = g * a.get(n);
          break;
        }
        if (a1) g1 = g1.unsqueeze(-2);
        if (b1) g1 = g1.unsqueeze(-1);
        if (na) {
          TP bv = b.get(n);
          if (b1) bv = bv.unsqueeze(-1);
          TP r = g1.matmul(bv.mT());
          Shape sa2 = sa;
          if (a1) sa2 = Shape{1, sa[0]};
          ga = detail::sum_to<P>(r, sa2).reshape(sa);
        }
        if (nb) {
          TP av = a.get(n);
          if (a1) av = av.unsqueeze(0);
          TP r = av.mT().matmul(g1);
          Shape sb2 = sb;
          if (b1) sb2 = Shape{sb[0], 1};
          gb = detail::sum_to<P>(r, sb2).reshape(sb);
        }
        break;
      }
    }
    if (alpha != 1.0) {
      if (ga.defined()) ga = ga * alpha;
      if (gb.defined()) gb = gb * alpha;
    }
    if (nc) gc = detail::sum_to<P>(beta == 1.0 ? g : g * beta, sc);
    return {ga, gb, gc};
  };
  set_history(*out, detail::make_node<P>(op.name(), {&ai, &bi, ci}, std::move(f), detail::ops_of<P>()), 0);
}

}  // namespace ember::autograd

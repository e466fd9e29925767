#pragma once
/// The derivative of every differentiable op, as members of Recorder<P> (autograd/layer.hpp).
/// Each formula is written with Ember ops, so it is itself differentiable. Conventions at
/// kinks follow PyTorch: abs'(0) = 0, relu'(0) = 0, clamp passes the gradient at its bounds,
/// max/min/amax split the gradient evenly between ties, maximum/minimum halve it on ties.
///
/// Compiled once for DefaultPolicy in src/autograd/derivatives*.cpp; see layer.hpp for other
/// policies.

#include <ember/autograd/function_node.hpp>
#include <ember/autograd/layer.hpp>
#include <ember/autograd/special_derivatives.hpp>
#include <ember/ops/functions.hpp>
#include <ember/ops/shape_ops.hpp>

#include <cmath>
#include <numbers>

namespace ember::autograd {

namespace detail {

template <class P>
std::shared_ptr<Node> rebuilt_view_history(const TensorImpl& view);

/// Binds a policy's ops for the engine.
template <class P>
struct PolicyOpsOf {
  static TensorRef add(const TensorRef& a, const TensorRef& b) { return (T<P>(a) + T<P>(b)).impl_ref(); }
  static void add_inplace(const TensorRef& a, const TensorRef& b) {
    T<P> t(a);
    t.add_(T<P>(b));
  }
  static TensorRef zeros(const OutputInfo& i) {
    return ember::zeros<P>(i.sizes, TensorOptions(i.dtype).device(i.device)).impl_ref();
  }
  static TensorRef ones(const OutputInfo& i) {
    return ember::ones<P>(i.sizes, TensorOptions(i.dtype).device(i.device)).impl_ref();
  }
  static TensorRef clone(const TensorRef& t) { return T<P>(t).clone().impl_ref(); }
  static TensorRef to_dtype(const TensorRef& t, DType d) { return T<P>(t).to(d).impl_ref(); }
  static TensorRef sum_to_shape(const TensorRef& t, IntArrayRef s) { return sum_to<P>(T<P>(t), Shape(s)).impl_ref(); }
  static bool all_finite(const TensorRef& t) {
    NoGradGuard ng;
    return T<P>(t).isfinite().all().template item<bool>();
  }
  static constexpr PolicyOps table{&add,          &add_inplace, &zeros,      &ones, &clone, &to_dtype, &sum_to_shape,
                                   &all_finite, &rebuilt_view_history<P>};
};

/// The storage offset of every element of a tensor of geometry (sizes, strides, offset),
/// in row-major order.
inline std::vector<int64_t> element_offsets(const Shape& sizes, const Shape& strides, int64_t offset) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<int64_t> out(static_cast<size_t>(n));
  size_t nd = sizes.size();
  std::vector<int64_t> idx(nd, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t o = offset;
    for (size_t d = 0; d < nd; ++d) o += idx[d] * strides[d];
    out[static_cast<size_t>(i)] = o;
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

/// For a view `v` of `base` (same storage): the row-major index in `base` of each element of
/// `v`, as an i64 tensor of v's shape on base's device. Fails when v reaches storage that is
/// not part of base.
template <class P>
T<P> view_positions(const TensorImpl& base, const TensorImpl& v, const char* op) {
  std::vector<int64_t> bo = element_offsets(base.sizes, base.strides, base.offset);
  int64_t lo = 0, hi = -1;
  if (!bo.empty()) {
    lo = *std::min_element(bo.begin(), bo.end());
    hi = *std::max_element(bo.begin(), bo.end());
  }
  std::vector<int64_t> inverse(static_cast<size_t>(hi - lo + 1), -1);
  for (size_t i = 0; i < bo.size(); ++i) inverse[static_cast<size_t>(bo[i] - lo)] = static_cast<int64_t>(i);
  std::vector<int64_t> vo = element_offsets(v.sizes, v.strides, v.offset);
  T<P> pos = empty<P>(v.sizes, TensorOptions(DType::I64));
  int64_t* p = pos.template data_ptr<int64_t>();
  for (size_t i = 0; i < vo.size(); ++i) {
    int64_t o = vo[i];
    int64_t b = o >= lo && o <= hi ? inverse[static_cast<size_t>(o - lo)] : -1;
    EMBER_CHECK(b >= 0, "[{}] backward: the view (shape {}, strides {}, offset {}) reaches storage outside its input "
                "(shape {}, strides {}, offset {})", op, v.sizes, v.strides, v.offset, base.sizes, base.strides,
                base.offset);
    p[i] = b;
  }
  return base.device().is_cpu() ? pos : pos.to(base.device());
}

/// Gradient of a view from the gradient of its elements: zeros of base's shape with g added
/// at the positions (sums where view elements alias, as for expand).
template <class P>
T<P> scatter_view_grad(const T<P>& g, const T<P>& positions, const Shape& base_sizes) {
  int64_t n = 1;
  for (int64_t s : base_sizes) n *= s;
  T<P> flat = zeros<P>({n}, TensorOptions(g.dtype()).device(g.device()));
  return index_add(flat, 0, positions.reshape({-1}), g.reshape({-1})).view(base_sizes);
}

template <class P>
const PolicyOps* ops_of() {
  return &PolicyOpsOf<P>::table;
}

/// A node that takes a view's gradient into its root (`root`, whose history it follows): the
/// gradient scattered to the view's positions in the root.
template <class P>
std::shared_ptr<Node> view_node(const TensorImpl& root, const TensorImpl& view) {
  T<P> pos = view_positions<P>(root, view, "as_strided");
  Shape root_sizes = root.sizes;
  auto as_view = [pos, root_sizes](const Node&, Grads<P>& gs) -> Grads<P> {
    return {scatter_view_grad<P>(gs[0], pos, root_sizes)};
  };
  std::shared_ptr<Node> n = make_node<P>("as_strided", {&root}, std::move(as_view), ops_of<P>());
  n->saved_tensors = true;  // pos (numel of the view) is freed after backward, as saved tensors
  return n;
}

/// For a view whose root's history changed after the view's was made (AutogradMeta::root_fn):
/// the node through which its gradient now flows into the root's current history, or null when
/// the root no longer requires grad.
template <class P>
std::shared_ptr<Node> rebuilt_view_history(const TensorImpl& view) {
  const TensorImpl& root = *view.view_of;
  if (!requires_grad(root)) return nullptr;
  std::shared_ptr<Node> n = view_node<P>(root, view);
  n->outputs.push_back({view.sizes, view.dtype, view.device()});
  return n;
}

inline double pi() { return std::numbers::pi; }

}  // namespace detail

template <class P>
const PolicyOps& Recorder<P>::policy_ops() {
  return detail::PolicyOpsOf<P>::table;
}

// ---- elementwise ---------------------------------------------------------------------------

template <class P>
void Recorder<P>::record(const ops::Unary& op, const TensorRef& out, const TensorImpl& xi) {
  using U = ops::UnaryOp;
  using detail::Saved;
  using TP = detail::T<P>;
  if (!is_floating(out->dtype)) return;
  const U u = op.op;
  const ops::UnaryParams p = op.p;
  bool uses_y = false, uses_x = true;
  switch (u) {
    case U::Exp: case U::Exp2: case U::Expm1: case U::Sqrt: case U::Rsqrt: case U::Reciprocal: case U::Tan:
    case U::Tanh: case U::Sigmoid: case U::Relu:
      uses_y = true, uses_x = false;
      break;
    case U::Neg: case U::Frac: case U::Sign: case U::Floor: case U::Ceil: case U::Round: case U::Trunc:
      uses_x = false;
      break;
    default: break;
  }
  Saved<P> x = uses_x ? Saved<P>(xi) : Saved<P>(), y = uses_y ? Saved<P>(*out, true) : Saved<P>();
  Shape shape = xi.sizes;
  auto f = [u, p, x, y, shape](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP& g = gs[0];
    auto X = [&] { return x.get(n); };
    auto Y = [&] { return y.get(n); };
    const double inv_sqrt_pi = 1.0 / std::sqrt(detail::pi());
    switch (u) {
      case U::Neg: return {g.neg()};
      case U::Abs: return {g * X().sign()};
      // Exact zeros, as PyTorch's (g * 0 would give -0 for a negative g and NaN for inf).
      case U::Sign: case U::Floor: case U::Ceil: case U::Round: case U::Trunc: return {detail::zeros_like_t<P>(g)};
      case U::Frac: return {g};
      case U::Exp: return {g * Y()};
      case U::Exp2: return {g * Y() * std::log(2.0)};
      case U::Expm1: return {g * (Y() + 1.0)};
      case U::Log: return {g / X()};
      case U::Log2: return {g / (X() * std::log(2.0))};
      case U::Log10: return {g / (X() * std::log(10.0))};
      case U::Log1p: return {g / (X() + 1.0)};
      case U::Sqrt: return {g / (Y() * 2.0)};
      case U::Rsqrt: return {g * Y().pow(3.0) * -0.5};
      case U::Reciprocal: return {g * Y().square() * -1.0};
      case U::Square: return {g * X() * 2.0};
      case U::Sin: return {g * X().cos()};
      case U::Cos: return {g * X().sin().neg()};
      case U::Tan: return {g * (Y().square() + 1.0)};
      case U::Asin: return {g / (X().square().neg() + 1.0).sqrt()};
      case U::Acos: return {g.neg() / (X().square().neg() + 1.0).sqrt()};
      case U::Atan: return {g / (X().square() + 1.0)};
      case U::Sinh: return {g * X().cosh()};
      case U::Cosh: return {g * X().sinh()};
      case U::Tanh: return {g * (Y().square().neg() + 1.0)};
      case U::Asinh: return {g * (X().square() + 1.0).rsqrt()};
      case U::Acosh: return {g * (X().square() - 1.0).rsqrt()};
      case U::Atanh: return {g / (X().square().neg() + 1.0)};
      case U::Sigmoid: {
        TP s = Y();
        return {g * s * (s.neg() + 1.0)};
      }
      case U::Logit: {  // PyTorch: 0 outside [eps, 1 - eps] with an eps, NaN outside [0, 1] without
        TP xv = X();
        TP d = g / (xv * (xv.neg() + 1.0));
        if (p.has_a && p.a >= 0) return {where(xv.lt(p.a).logical_or(xv.gt(1.0 - p.a)), 0.0, d)};
        return {where(xv.lt(0.0).logical_or(xv.gt(1.0)), std::numeric_limits<double>::quiet_NaN(), d)};
      }
      case U::Relu: return {g.relu_backward(Y())};  // one pass, no boolean mask tensor
      case U::Relu6: {  // hardtanh(0, 6)'s: NaN passes the gradient, as PyTorch's
        TP xv = X();
        return {where(xv.le(0.0).logical_or(xv.ge(6.0)), 0.0, g)};
      }
      case U::LeakyRelu: return {where(X().gt(0.0), g, g * p.a)};
      // The negative branch where x <= 0, so that NaN takes the positive one (PyTorch's). A
      // recorded backward (create_graph: grad mode on) exponentiates min(x, 0) through a where:
      // it sends the discarded branch a zero gradient, and exp(x) = inf there would make it
      // 0 * inf = NaN. A plain backward skips that pass.
      case U::Elu: {
        TP xv = X();
        TP neg = xv.le(0.0);
        TP xn = GradMode::is_enabled() ? where(neg, xv, 0.0) : xv;
        return {where(neg, g * xn.exp() * p.a, g)};
      }
      case U::Selu: {
        constexpr double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
        TP xv = X();
        TP neg = xv.le(0.0);
        TP xn = GradMode::is_enabled() ? where(neg, xv, 0.0) : xv;
        return {where(neg, g * xn.exp() * (alpha * scale), g * scale)};
      }
      case U::Celu: {
        TP xv = X();
        TP neg = xv.le(0.0);
        TP xn = GradMode::is_enabled() ? where(neg, xv, 0.0) : xv;
        return {where(neg, g * (xn / p.a).exp(), g)};
      }
      case U::Gelu: return {g.gelu_backward(X())};
      case U::GeluTanh: {
        const double k = std::sqrt(2.0 / detail::pi()), c = 0.044715;
        TP xv = X();
        TP t = ((xv + xv.pow(3.0) * c) * k).tanh();
        TP d = (t + 1.0) * 0.5 + xv * 0.5 * (t.square().neg() + 1.0) * ((xv.square() * (3.0 * c) + 1.0) * k);
        return {g * d};
      }
      case U::Silu: return {g.silu_backward(X())};
      case U::Mish: {
        TP xv = X();
        TP t = xv.softplus(1.0, 20.0).tanh();
        return {g * (t + xv * xv.sigmoid() * (t.square().neg() + 1.0))};
      }
      case U::Softplus: {
        TP z = X() * p.a;
        return {where(z.gt(p.b), g, g * z.sigmoid())};
      }
      case U::Softsign: return {g / (X().abs() + 1.0).square()};
      case U::Hardtanh: {
        TP xv = X();
        return {where(xv.le(p.a).logical_or(xv.ge(p.b)), 0.0, g)};  // NaN passes it, as PyTorch's
      }
      case U::Hardsigmoid: {
        TP xv = X();
        return {where(xv.gt(-3.0).logical_and(xv.lt(3.0)), g / 6.0, 0.0)};
      }
      case U::Hardswish: {
        TP xv = X();
        // The kinks take their outer side, as PyTorch 2: 0 at -3 and g at 3 (libtorch 1.13's
        // scalar kernel gave -g/2 and 3g/2); NaN passes g.
        return {where(xv.le(-3.0), 0.0, where(xv.lt(3.0), g * (xv / 3.0 + 0.5), g))};
      }
      case U::Erf: return {g * (X().square().neg().exp() * (2.0 * inv_sqrt_pi))};
      case U::Erfc: return {g * (X().square().neg().exp() * (-2.0 * inv_sqrt_pi))};
      // From the input, recomputing erfinv (as PyTorch): the output may be written in place.
      case U::Erfinv: return {g * (X().erfinv().square().exp() * (std::sqrt(detail::pi()) / 2.0))};
      case U::Lgamma: return {g * X().digamma()};
      case U::Digamma: return {g * X().polygamma(static_cast<int64_t>(p.a) + 1)};  // psi^(n)' = psi^(n+1)
      // The special functions' derivatives that need two forms: autograd/special_derivatives.hpp.
      case U::Sinc: return {g * detail::sinc_derivative(X())};
      case U::I0: return {g * X().i1()};
      case U::I0e: {  // i1e(x) - sign(x) i0e(x)
        TP xv = X();
        return {g * (xv.i1e() - xv.sign() * xv.i0e())};
      }
      case U::I1: return {g * detail::bessel_i1_derivative(X())};
      case U::I1e: return {g * detail::bessel_i1e_derivative(X())};
      case U::Erfcx: return {g * detail::erfcx_derivative(X())};
      case U::Entr: return {g * (X().log() + 1.0).neg()};
      case U::Ndtr: return {g * ((X().square() * -0.5).exp() * (inv_sqrt_pi / std::sqrt(2.0)))};
      // 1 / phi(ndtri(p)) = sqrt(2 pi) e^(y^2 / 2), from the input (the output may be written in place).
      case U::Ndtri: return {g * ((X().ndtri().square() * 0.5).exp() * std::sqrt(2.0 * detail::pi()))};
      case U::LogNdtr: return {g * detail::log_ndtr_derivative(X())};
      case U::Clamp: {
        TP xv = X();
        // Strictly inside the bounds, as PyTorch 2 (and hardtanh): 0 at a bound and at NaN
        // (libtorch 1.13 passed g at the bounds).
        TP keep = xv.isnan().logical_not();
        if (p.has_a) keep = keep.logical_and(xv.gt(p.a));
        if (p.has_b) keep = keep.logical_and(xv.lt(p.b));
        return {where(keep, g, 0.0)};
      }
      case U::NanToNum: return {where(X().isfinite(), g, 0.0)};
      default:
        EMBER_FAIL("[{}] has no derivative", ops::name(u));
    }
  };
  set_history(*out, detail::make_node<P>(op.name(), {&xi}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::Binary& op, const TensorRef& out, const TensorImpl& ai, const TensorImpl& bi) {
  using B = ops::BinaryOp;
  using detail::Saved;
  using TP = detail::T<P>;
  if (!is_floating(out->dtype)) return;
  const B o = op.op;
  const bool need_a = requires_grad(ai), need_b = requires_grad(bi);
  Saved<P> a, b, y;
  switch (o) {
    case B::Add: case B::Sub: case B::DivTrunc: case B::DivFloor: break;
    case B::Mul:
      if (need_b) a = Saved<P>(ai);
      if (need_a) b = Saved<P>(bi);
      break;
    case B::Div:
      b = Saved<P>(bi);
      if (need_b) a = Saved<P>(ai);
      break;
    case B::Pow: case B::Hypot: case B::Copysign:
      a = Saved<P>(ai), b = Saved<P>(bi), y = Saved<P>(*out, true);
      break;
    case B::ReluBackward:
      if (need_a) b = Saved<P>(bi);
      break;
    default:
      a = Saved<P>(ai), b = Saved<P>(bi);
      break;
  }
  Shape sa = ai.sizes, sb = bi.sizes;
  auto f = [o, a, b, y, sa, sb](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP& g = gs[0];
    auto A = [&] { return a.get(n); };
    auto Bv = [&] { return b.get(n); };
    auto to_a = [&](const TP& t) { return detail::sum_to<P>(t, sa); };
    auto to_b = [&](const TP& t) { return detail::sum_to<P>(t, sb); };
    const bool na = n.needs_input_grad(0), nb = n.needs_input_grad(1);
    TP ga, gb;
    switch (o) {
      case B::Add:
        if (na) ga = to_a(g);
        if (nb) gb = to_b(g);
        break;
      case B::Sub:
        if (na) ga = to_a(g);
        if (nb) gb = to_b(g.neg());
        break;
      case B::Mul:
        if (na) ga = to_a(g * Bv());
        if (nb) gb = to_b(g * A());
        break;
      case B::Div: {
        TP bv = Bv();
        if (na) ga = to_a(g / bv);
        // -g (a / b) / b, as PyTorch: b^2 overflows where a / b / b does not (a = inf or
        // huge, b = 1e30 in f32: NaN instead of -inf).
        if (nb) gb = to_b(g.neg() * (A() / bv / bv));
        break;
      }
      case B::DivTrunc: case B::DivFloor:  // exact zeros, as PyTorch's (as the unary rounding ops)
        if (na) ga = to_a(detail::zeros_like_t<P>(g));
        if (nb) gb = to_b(detail::zeros_like_t<P>(g));
        break;
      case B::Remainder:
        if (na) ga = to_a(g);
        if (nb) gb = to_b(g.neg() * A().div_floor(Bv()));
        break;
      case B::Fmod:
        if (na) ga = to_a(g);
        if (nb) gb = to_b(g.neg() * A().div_trunc(Bv()));
        break;
      case B::Pow: {
        TP av = A(), bv = Bv();
        // g (b a^(b-1)), as PyTorch groups it: for a huge b where a^(b-1) underflows, b a^(b-1)
        // is 0 and stays 0 when differentiated again ((g b) a^(b-1) would be inf * 0).
        if (na) ga = to_a(where(bv.eq(0.0), 0.0, g * (bv * av.pow(bv - 1.0))));
        // log(a) in the result's dtype (as PyTorch): an f32 base with an f64 exponent would
        // otherwise give the f64 gradient an f32 logarithm's error.
        if (nb) {
          TP la = (av.dtype() == g.dtype() ? av : av.to(g.dtype())).log();
          gb = to_b(where(av.eq(0.0).logical_and(bv.ge(0.0)), 0.0, g * y.get(n) * la));
        }
        break;
      }
      case B::Atan2: {
        TP av = A(), bv = Bv();
        // As PyTorch 2: the reciprocal of a^2 + b^2, 0 where that is 0 (so atan2(0, 0) has
        // gradient 0, not NaN; libtorch 1.13 gave NaN).
        TP r = av.square() + bv.square();
        TP recip = where(r.eq(0.0), 0.0, r.reciprocal());
        if (na) ga = to_a(g * bv * recip);
        if (nb) gb = to_b(g * av.neg() * recip);
        break;
      }
      case B::Maximum: case B::Minimum: {
        TP av = A(), bv = Bv();
        TP half = g * 0.5;
        // Each side gets g unless it loses (PyTorch's masks): with a NaN both do.
        TP a_loses = o == B::Maximum ? av.lt(bv) : av.gt(bv);
        TP b_loses = o == B::Maximum ? av.gt(bv) : av.lt(bv);
        TP tie = av.eq(bv);
        if (na) ga = to_a(where(tie, half, where(a_loses, 0.0, g)));
        if (nb) gb = to_b(where(tie, half, where(b_loses, 0.0, g)));
        break;
      }
      case B::Fmax: case B::Fmin: {
        TP av = A(), bv = Bv();
        // The side that is taken gets g, a NaN side loses to a number; ties share g equally,
        // as maximum/minimum's (PyTorch 2; libtorch 1.13 gave all of it to a).
        TP a_taken = (o == B::Fmax ? av.gt(bv) : av.lt(bv)).logical_or(bv.isnan());
        TP tie = av.eq(bv), half = g * 0.5;
        if (na) ga = to_a(where(tie, half, where(a_taken, g, 0.0)));
        if (nb) gb = to_b(where(tie, half, where(a_taken, 0.0, g)));
        break;
      }
      case B::Hypot: {
        TP yv = y.get(n);
        if (na) ga = to_a(g * A() / yv);
        if (nb) gb = to_b(g * Bv() / yv);
        break;
      }
      case B::Copysign: {
        TP av = A();
        if (na) ga = to_a(where(av.eq(0.0), 0.0, g * (y.get(n) / av)));
        if (nb) gb = to_b(detail::zeros_like_t<P>(g));
        break;
      }
      case B::Xlogy: case B::Xlog1py: {
        // d/da = log(b) (log1p(b)), but 0 where a = 0 and the logarithm is -inf or NaN (b <= 0,
        // b <= -1), where the function is 0 (PyTorch's); d/db = a / b (a / (1 + b)).
        TP av = A(), bv = Bv();
        const bool plain = o == B::Xlogy;
        if (na) {
          TP flat = av.eq(0.0).logical_and(bv.le(plain ? 0.0 : -1.0));
          ga = to_a(where(flat, 0.0, plain ? g.xlogy(bv) : g.xlog1py(bv)));
        }
        if (nb) gb = to_b(g * av / (plain ? bv : bv + 1.0));
        break;
      }
      case B::LogAddExp: case B::LogAddExp2: {  // each side's share: 1 / (1 + base^(other - self))
        TP av = A(), bv = Bv();
        const double scale = o == B::LogAddExp ? 1.0 : std::log(2.0);
        if (na) ga = to_a(g * ((av - bv) * scale).sigmoid());
        if (nb) gb = to_b(g * ((bv - av) * scale).sigmoid());
        break;
      }
      case B::Heaviside:  // a step: flat in x; the values pass where x is 0
        if (na) ga = to_a(detail::zeros_like_t<P>(g));
        if (nb) gb = to_b(where(A().eq(0.0), g, 0.0));
        break;
      case B::ReluBackward:  // linear in the gradient, piecewise constant in the mask
        if (na) ga = to_a(g.relu_backward(Bv()));
        if (nb) gb = to_b(detail::zeros_like_t<P>(g));
        break;
      case B::GeluBackward: {  // gelu''(x) = phi(x) (2 - x^2)
        TP xv = Bv();
        if (na) ga = to_a(g.gelu_backward(xv));
        constexpr double kInvSqrt2Pi = 0.39894228040143267794;
        if (nb) gb = to_b(g * A() * ((xv.square() * -0.5).exp() * kInvSqrt2Pi) * (xv.square().neg() + 2.0));
        break;
      }
      case B::SiluBackward: {  // silu''(x) = s (1 - s) (2 + x (1 - 2 s))
        TP xv = Bv();
        if (na) ga = to_a(g.silu_backward(xv));
        if (nb) {
          TP s = xv.sigmoid();
          gb = to_b(g * A() * (s * (s.neg() + 1.0)) * (xv * (s * -2.0 + 1.0) + 2.0));
        }
        break;
      }
      default:
        EMBER_FAIL("[{}] has no derivative", ops::name(o));
    }
    return {ga, gb};
  };
  set_history(*out, detail::make_node<P>(op.name(), {&ai, &bi}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::Where&, const TensorRef& out, const TensorImpl& ci, const TensorImpl& ai,
                         const TensorImpl& bi) {
  using TP = detail::T<P>;
  if (!is_floating(out->dtype)) return;
  detail::Saved<P> c(ci);
  Shape sa = ai.sizes, sb = bi.sizes;
  auto f = [c, sa, sb](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP& g = gs[0];
    TP cv = c.get(n);
    TP ga, gb;
    if (n.needs_input_grad(1)) ga = detail::sum_to<P>(where(cv, g, 0.0), sa);
    if (n.needs_input_grad(2)) gb = detail::sum_to<P>(where(cv, 0.0, g), sb);
    return {TP(), ga, gb};
  };
  set_history(*out, detail::make_node<P>("where", {nullptr, &ai, &bi}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::ClampTensors&, const TensorRef& out, const TensorImpl& xi, const TensorImpl& loi,
                         const TensorImpl& hii) {
  using TP = detail::T<P>;
  if (!is_floating(out->dtype)) return;
  detail::Saved<P> x(xi), lo(loi), hi(hii);
  Shape sx = xi.sizes, sl = loi.sizes, sh = hii.sizes;
  // PyTorch 2's subgradient (libtorch 2.15, all 64 cases of x, lo, hi in {0, 1, 2, NaN} in
  // tests/test_pytorch_edges.cpp): the side that gives the value gets g; where x ties a bound
  // of an ordered pair (lo < hi), x and that bound share it; lo > hi gives hi all of it; a
  // NaN x keeps g (libtorch 1.13: 0), a NaN bound takes none.
  auto f = [x, lo, hi, sx, sl, sh](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP& g = gs[0];
    TP xv = x.get(n), lv = lo.get(n), hv = hi.get(n);
    TP ordered = lv.lt(hv), half = g * 0.5;
    TP gx, gl, gh;
    if (n.needs_input_grad(0)) {
      TP tie = ordered.logical_and(xv.eq(lv).logical_or(xv.eq(hv)));
      gx = detail::sum_to<P>(where(xv.lt(lv).logical_or(xv.gt(hv)), 0.0, where(tie, half, g)), sx);
    }
    if (n.needs_input_grad(1))
      gl = detail::sum_to<P>(
          where(xv.lt(lv).logical_and(lv.le(hv)), g, where(ordered.logical_and(xv.eq(lv)), half, 0.0)), sl);
    if (n.needs_input_grad(2))
      gh = detail::sum_to<P>(where(lv.gt(hv).logical_or(xv.gt(hv).logical_and(lv.le(hv))), g,
                                   where(ordered.logical_and(xv.eq(hv)), half, 0.0)),
                             sh);
    return {gx, gl, gh};
  };
  set_history(*out, detail::make_node<P>("clamp", {&xi, &loi, &hii}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::Lerp&, const TensorRef& out, const TensorImpl& si, const TensorImpl& ei,
                         const TensorImpl& wi) {
  using TP = detail::T<P>;
  if (!is_floating(out->dtype)) return;
  detail::Saved<P> start(si), end(ei), weight(wi);
  Shape ss = si.sizes, se = ei.sizes, sw = wi.sizes;
  // PyTorch's: g (1 - weight), g weight, g (end - start).
  auto f = [start, end, weight, ss, se, sw](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP& g = gs[0];
    TP wv = weight.get(n);
    TP gs_, ge, gw;
    if (n.needs_input_grad(0)) gs_ = detail::sum_to<P>(g * (wv.neg() + 1.0), ss);
    if (n.needs_input_grad(1)) ge = detail::sum_to<P>(g * wv, se);
    if (n.needs_input_grad(2)) gw = detail::sum_to<P>(g * (end.get(n) - start.get(n)), sw);
    return {gs_, ge, gw};
  };
  set_history(*out, detail::make_node<P>("lerp", {&si, &ei, &wi}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::To&, const TensorRef& out, const TensorImpl& xi) {
  using TP = detail::T<P>;
  if (!is_floating(out->dtype)) return;
  DType dt = xi.dtype;
  Device dev = xi.device();
  auto f = [dt, dev](const Node&, detail::Grads<P>& gs) -> detail::Grads<P> {
    TP g = gs[0];
    if (g.device() != dev) g = g.to(dev);
    return {g.to(dt)};
  };
  set_history(*out, detail::make_node<P>("to", {&xi}, std::move(f), detail::ops_of<P>()), 0);
}

}  // namespace ember::autograd

#include <ember/autograd/derivatives_reduce.hpp>
#include <ember/autograd/derivatives_shape.hpp>
#include <ember/autograd/derivatives_norm.hpp>
#include <ember/autograd/derivatives_attention.hpp>
#include <ember/autograd/inplace.hpp>

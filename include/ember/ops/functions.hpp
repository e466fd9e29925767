#pragma once
/// Free-function forms of the ops (ember::exp(t), ember::add(a, b)) and the C++ operators.

#include <ember/autocast/autocast_mode.hpp>
#include <ember/core/format_text.hpp>
#include <ember/core/tensor_instances.hpp>
#include <ember/core/tensor_methods.hpp>

#include <fmt/core.h>

#include <limits>
#include <ostream>
#include <utility>
#include <vector>

namespace ember {

#define EMBER_UNARY_OP(E, n, r)                         \
  template <class P>                                    \
  BasicTensor<P> n(const BasicTensor<P>& x) {           \
    return x.n();                                       \
  }
#include <ember/ops/unary_list.def>
#undef EMBER_UNARY_OP

// A scalar first operand becomes a tensor of the other's kind, except for mul, which swaps
// its operands (s * t is t * s, as libtorch).
#define EMBER_BINARY_OP(E, n, r)                                        \
  template <class P>                                                    \
  BasicTensor<P> n(const BasicTensor<P>& a, const BasicTensor<P>& b) {  \
    return a.n(b);                                                      \
  }                                                                     \
  template <class P>                                                    \
  BasicTensor<P> n(const BasicTensor<P>& a, Scalar b) {                 \
    return a.n(b);                                                      \
  }                                                                     \
  template <class P>                                                    \
  BasicTensor<P> n(Scalar a, const BasicTensor<P>& b) {                 \
    if constexpr (ops::BinaryOp::E == ops::BinaryOp::Mul) return b.n(a); \
    else return b.scalar_like(a).n(b);                                  \
  }
#include <ember/ops/binary_list.def>
#undef EMBER_BINARY_OP

#define EMBER_OPERATOR(sym, fn)                                              \
  template <class P>                                                         \
  BasicTensor<P> operator sym(const BasicTensor<P>& a, const BasicTensor<P>& b) { \
    return a.fn(b);                                                          \
  }                                                                          \
  template <class P>                                                         \
  BasicTensor<P> operator sym(const BasicTensor<P>& a, Scalar b) {           \
    return a.fn(b);                                                          \
  }                                                                          \
  template <class P>                                                         \
  BasicTensor<P> operator sym(Scalar a, const BasicTensor<P>& b) {           \
    return fn(a, b); /* the free form above (mul swaps: s * t is t * s) */   \
  }
EMBER_OPERATOR(+, add)
EMBER_OPERATOR(-, sub)
EMBER_OPERATOR(*, mul)
EMBER_OPERATOR(/, div)
EMBER_OPERATOR(%, remainder)
EMBER_OPERATOR(==, eq)
EMBER_OPERATOR(!=, ne)
EMBER_OPERATOR(<, lt)
EMBER_OPERATOR(<=, le)
EMBER_OPERATOR(>, gt)
EMBER_OPERATOR(>=, ge)
EMBER_OPERATOR(&, bitwise_and)
EMBER_OPERATOR(|, bitwise_or)
EMBER_OPERATOR(^, bitwise_xor)
EMBER_OPERATOR(<<, bitwise_left_shift)
EMBER_OPERATOR(>>, bitwise_right_shift)
#undef EMBER_OPERATOR

/// div with rounding_mode "trunc" or "floor" (empty: true division).
template <class P>
BasicTensor<P> div(const BasicTensor<P>& a, const BasicTensor<P>& b, const std::string& rounding_mode) {
  return a.div(b, rounding_mode);
}

// libtorch's alias spellings (ops/alias_list.def): ember::arccos(x) is ember::acos(x).
#define EMBER_UNARY_ALIAS(alias, target)        \
  template <class P>                            \
  BasicTensor<P> alias(const BasicTensor<P>& x) { \
    return target(x);                           \
  }
#define EMBER_BINARY_ALIAS(alias, target)                                  \
  template <class P>                                                       \
  BasicTensor<P> alias(const BasicTensor<P>& a, const BasicTensor<P>& b) { \
    return target(a, b);                                                   \
  }                                                                        \
  template <class P>                                                       \
  BasicTensor<P> alias(const BasicTensor<P>& a, Scalar b) {                \
    return target(a, b);                                                   \
  }                                                                        \
  template <class P>                                                       \
  BasicTensor<P> alias(Scalar a, const BasicTensor<P>& b) {                \
    return target(a, b);                                                   \
  }
#include <ember/ops/alias_list.def>
#undef EMBER_BINARY_ALIAS
#undef EMBER_UNARY_ALIAS
template <class P>
BasicTensor<P> subtract(const BasicTensor<P>& a, const BasicTensor<P>& b, Scalar alpha) {
  return a.sub(b, alpha);
}
template <class P>
BasicTensor<P> divide(const BasicTensor<P>& a, const BasicTensor<P>& b, const std::string& rounding_mode) {
  return a.div(b, rounding_mode);
}
template <class P>
BasicTensor<P> divide(const BasicTensor<P>& a, Scalar b, const std::string& rounding_mode) {
  return a.div(b, rounding_mode);
}
template <class P>
BasicTensor<P> subtract(const BasicTensor<P>& a, Scalar b, Scalar alpha) {
  return a.subtract(b, alpha);
}
template <class P>
BasicTensor<P> where(const BasicTensor<P>& cond, const BasicTensor<P>& a, const BasicTensor<P>& b) {
  return a.where(cond, b);
}
template <class P>
BasicTensor<P> where(const BasicTensor<P>& cond, const BasicTensor<P>& a, Scalar b) {
  return a.where(cond, a.scalar_like(b));
}
template <class P>
BasicTensor<P> where(const BasicTensor<P>& cond, Scalar a, const BasicTensor<P>& b) {
  return b.scalar_like(a).where(cond, b);
}
template <class P>
BasicTensor<P> lerp(const BasicTensor<P>& a, const BasicTensor<P>& b, const BasicTensor<P>& w) {
  return a.lerp(b, w);
}
template <class P>
BasicTensor<P> lerp(const BasicTensor<P>& a, const BasicTensor<P>& b, Scalar w) {
  return a.lerp(b, w);
}
template <class P>
BasicTensor<P> addcmul(const BasicTensor<P>& x, const BasicTensor<P>& t1, const BasicTensor<P>& t2, Scalar v = 1) {
  return x.addcmul(t1, t2, v);
}
template <class P>
BasicTensor<P> addcdiv(const BasicTensor<P>& x, const BasicTensor<P>& t1, const BasicTensor<P>& t2, Scalar v = 1) {
  return x.addcdiv(t1, t2, v);
}
template <class P>
BasicTensor<P> clamp(const BasicTensor<P>& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  return x.clamp(lo, hi);
}
template <class P>
BasicTensor<P> softmax(const BasicTensor<P>& x, int64_t dim) {
  return x.softmax(dim);
}
template <class P>
BasicTensor<P> log_softmax(const BasicTensor<P>& x, int64_t dim) {
  return x.log_softmax(dim);
}
template <class P>
BasicTensor<P> matmul(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  return a.matmul(b);
}
template <class P>
BasicTensor<P> mm(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  return a.mm(b);
}
template <class P>
BasicTensor<P> bmm(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  return a.bmm(b);
}
template <class P>
BasicTensor<P> dot(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  return a.dot(b);
}
template <class P>
BasicTensor<P> outer(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  return a.outer(b);
}
template <class P>
BasicTensor<P> ger(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  return a.outer(b);
}
/// x == +inf (isposinf) or -inf (isneginf); all false for integer and bool tensors.
template <class P>
BasicTensor<P> isposinf(const BasicTensor<P>& x) {
  if (!is_floating(x.dtype())) return x.ne(x);  // all false, in x's shape and on its device
  return x.eq(std::numeric_limits<double>::infinity());
}
template <class P>
BasicTensor<P> isneginf(const BasicTensor<P>& x) {
  if (!is_floating(x.dtype())) return x.ne(x);
  return x.eq(-std::numeric_limits<double>::infinity());
}
/// a / b rounded down (torch::floor_divide, the same as div with rounding mode "floor").
template <class P>
BasicTensor<P> floor_divide(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  return a.div(b, "floor");
}
template <class P>
BasicTensor<P> floor_divide(const BasicTensor<P>& a, Scalar b) {
  return a.div(b, "floor");
}
/// The values of x sorted along dim 0 (torch::msort; a 0-d x is returned as a copy).
template <class P>
BasicTensor<P> msort(const BasicTensor<P>& x) {
  if (x.dim() == 0) return x.clone();
  return x.sort(0).first;
}
template <class P>
BasicTensor<P> BasicTensor<P>::msort() const {
  return ember::msort(*this);
}
/// {var, mean} and {std, mean} over dims (all without), as torch::var_mean / std_mean.
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> var_mean(const BasicTensor<P>& x, const Shape& dims = {},
                                                   double correction = 1, bool keepdim = false) {
  return x.var_mean(dims, correction, keepdim);
}
/// (The std from one var_mean, square-rooted as std does: its gradient is 0 where the std is,
/// not sqrt's inf times 0.)
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> std_mean(const BasicTensor<P>& x, const Shape& dims = {},
                                                   double correction = 1, bool keepdim = false) {
  auto [v, m] = x.var_mean(dims, correction, keepdim);
  return {detail::masked_at_zero(v, [](const BasicTensor<P>& u) { return u.sqrt(); }), m};
}
template <class P>
BasicTensor<P> addmm(const BasicTensor<P>& c, const BasicTensor<P>& a, const BasicTensor<P>& b, Scalar beta = 1,
                     Scalar alpha = 1) {
  return c.addmm(a, b, beta, alpha);
}
template <class P>
BasicTensor<P> baddbmm(const BasicTensor<P>& c, const BasicTensor<P>& a, const BasicTensor<P>& b, Scalar beta = 1,
                       Scalar alpha = 1) {
  return c.baddbmm(a, b, beta, alpha);
}
namespace detail {
/// linear's one product over the rows of an input of 2 or more dims (ops::MatmulKind::Linear:
/// the weight is read in place, and its gradient is computed in its own layout), with ReLU in
/// its stores when `relu`; undefined when the operands need the general form.
template <class P>
BasicTensor<P> linear_rows(const BasicTensor<P>& x, const BasicTensor<P>& w, const BasicTensor<P>& b, bool relu) {
  // The fused product takes a bias of one row only; any other bias broadcasts against the
  // whole [..., out] result afterwards (folding the rows first would broadcast it wrongly).
  if (!(x.dim() >= 2 && w.dim() == 2 && (!b.defined() || b.dim() == 1))) return {};
  ops::Matmul op{ops::MatmulKind::Linear};
  op.relu = relu;
  const auto* bias = b.defined() ? &b.impl() : nullptr;
  if (x.dim() == 2) return BasicTensor<P>::wrap(dispatch<P>(op, x.impl(), w.impl(), bias));
  ops::check_linear_features(x.impl(), w.impl());
  Shape s = x.sizes();
  int64_t rows = 1;  // not -1: an inner dim of 0 leaves nothing to infer it from
  for (size_t d = 0; d + 1 < s.size(); ++d) rows *= s[d];
  BasicTensor<P> y = BasicTensor<P>::wrap(dispatch<P>(op, x.reshape({rows, s.back()}).impl(), w.impl(), bias));
  s[s.size() - 1] = w.size(0);
  return y.reshape(s);
}
}  // namespace detail

/// x @ w^T + b, as torch.nn.functional.linear (w: [out, in]).
template <class P>
BasicTensor<P> linear(const BasicTensor<P>& x, const BasicTensor<P>& w, const BasicTensor<P>& b = {}) {
  if (BasicTensor<P> y = detail::linear_rows(x, w, b, false); y.defined()) return y;
  BasicTensor<P> y = x.matmul(w.t());
  if (!b.defined()) return y;
  // Under autocast the operands' dtypes may differ (a bf16 activation, f32 parameters): the
  // product is bf16/f16 and the bias goes with it, as in the fused form.
  EMBER_CHECK(b.dtype() == x.dtype() || autocast::is_enabled(), "[linear] bias dtype {} differs from the input's {}",
              b.dtype(), x.dtype());
  BasicTensor<P> r = y.add(b.to(y.dtype()));  // to() is b itself when the dtypes agree
  EMBER_CHECK(r.sizes() == y.sizes(), "[linear] a bias of shape {} does not broadcast to the output's shape {}",
              b.sizes(), y.sizes());
  return r;
}

/// relu(linear(x, w, b)), the same values and gradients, with the ReLU applied as the CPU
/// product stores its output: one pass over the output instead of two, and one tensor instead
/// of two. nn::Sequential runs Linear followed by ReLU this way, and so do the Transformer
/// layers' feed-forward blocks. Other devices, and operands linear takes the general form for,
/// run the two ops.
template <class P>
BasicTensor<P> linear_relu(const BasicTensor<P>& x, const BasicTensor<P>& w, const BasicTensor<P>& b = {}) {
  if (x.defined() && x.is_cpu())
    if (BasicTensor<P> y = detail::linear_rows(x, w, b, true); y.defined()) return y;
  return linear(x, w, b).relu();
}

/// PyTorch-style text: tensor([[1., 2.], [3., 4.]]), with dtype/device when not default, and
/// as PyTorch ", requires_grad=True" for a leaf that requires grad, ", grad_fn=<MulBackward>"
/// for a result in the graph (PyTorch's node names end in an overload number: MulBackward0).
template <class P>
std::string to_string(const BasicTensor<P>& t) {
  if (!t.defined()) return "tensor(undefined)";
  std::string extra;
  if constexpr (detail::has_layer<autograd::Autograd, typename P::layers>::value) {
    if (t.requires_grad()) {
      const auto fn = t.grad_fn();
      extra = fn ? ", grad_fn=<" + fn->name() + ">" : std::string(", requires_grad=True");
    }
  }
  return detail::format_tensor(t.is_cpu() ? t.impl() : t.cpu().impl(), t.device(), extra);
}
template <class P>
std::ostream& operator<<(std::ostream& os, const BasicTensor<P>& t) {
  return os << to_string(t);
}

// linear's DefaultPolicy instances are compiled into the library.
EMBER_TENSOR_FUNCTION_INSTANCES(extern template)

}  // namespace ember

template <class P>
struct fmt::formatter<ember::BasicTensor<P>> {
  constexpr auto parse(fmt::format_parse_context& ctx) { return ctx.begin(); }
  template <class Ctx>
  auto format(const ember::BasicTensor<P>& t, Ctx& ctx) const {
    return ember::detail::format_text(ember::to_string(t), ctx);
  }
};

// Ember's half of the differential check: each call through Ember's public Tensor methods
// (the X-macro methods of include/ember/ops/*_list.def, and the parameterised forms).

#include "bridge.hpp"

#include <ember/ember.hpp>
#include <ember/nn.hpp>

#include <cstring>
#include <exception>
#include <stdexcept>
#include <vector>

namespace ediff {
namespace {

ember::Tensor to_ember(const Buf& b) {
  ember::Shape shape(ember::IntArrayRef(b.shape));
  auto* data = const_cast<unsigned char*>(b.bytes.data());
  return ember::from_blob(data, shape, ember::TensorOptions(static_cast<ember::DType>(b.dt))).clone();
}

Buf from_ember(const ember::Tensor& t) {
  Buf b;
  b.dt = static_cast<DT>(t.dtype());
  ember::Tensor c = t.contiguous();
  b.shape.assign(c.sizes().begin(), c.sizes().end());
  b.bytes.resize(static_cast<size_t>(c.nbytes()));
  if (c.nbytes() > 0) std::memcpy(b.bytes.data(), c.data_ptr(), b.bytes.size());
  return b;
}

ember::Scalar to_scalar(const ScalarArg& s) {
  switch (s.kind) {
    case ScalarArg::Bool: return ember::Scalar(s.i != 0);
    case ScalarArg::Int: return ember::Scalar(s.i);
    case ScalarArg::Float: break;
  }
  return ember::Scalar(s.f);
}

ember::Tensor unary(const Call& c, const ember::Tensor& x) {
  const std::string& op = c.op;
  if (c.has_params) {
    if (op == "leaky_relu") return x.leaky_relu(c.p[0]);
    if (op == "elu") return x.elu(c.p[0]);
    if (op == "celu") return x.celu(c.p[0]);
    if (op == "logit") return x.logit(c.p[0]);
    if (op == "softplus") return x.softplus(c.p[0], c.p[1]);
    if (op == "hardtanh") return x.hardtanh(c.p[0], c.p[1]);
    if (op == "clamp") return x.clamp(ember::Scalar(c.p[0]), ember::Scalar(c.p[1]));
    if (op == "nan_to_num") return x.nan_to_num(c.p[0], c.p[1], c.p[2]);
  }
#define EMBER_UNARY_OP(E, n, r) \
  if (op == #n) return x.n();
#include <ember/ops/unary_list.def>
#undef EMBER_UNARY_OP
  throw std::runtime_error("ember_side: no unary op " + op);
}

template <class O>
ember::Tensor binary(const std::string& op, const ember::Tensor& a, const O& b) {
#define EMBER_BINARY_OP(E, n, r) \
  if (op == #n) return a.n(b);
#include <ember/ops/binary_list.def>
#undef EMBER_BINARY_OP
  throw std::runtime_error("ember_side: no binary op " + op);
}

ember::Tensor reduce(const Call& c, const ember::Tensor& x) {
  ember::Shape dims(ember::IntArrayRef(c.dims));
#define EMBER_REDUCE_OP(E, n, r) \
  if (c.op == #n) return dims.empty() && !c.keepdim ? x.n() : x.n(dims, c.keepdim);
#include <ember/ops/reduce_list.def>
#undef EMBER_REDUCE_OP
  throw std::runtime_error("ember_side: no reduction " + c.op);
}

Result named(const Call& c) {
  std::vector<ember::Tensor> in;
  for (const Buf& b : c.ins) in.push_back(to_ember(b));
  const std::string& op = c.op;
  if (c.grad)
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i].is_floating_point() && differentiable_input(op, i)) in[i].requires_grad_();
  auto arg = [&](size_t i) { return static_cast<int64_t>(c.args.at(i)); };
  Result r;
  r.ok = true;
  // With c.grad: the gradients of sum(y * [1, 2, ...]) for the first output y, one per input
  // (an empty buffer for those that take none).
  auto grads = [&](const ember::Tensor& y) {
    ember::Tensor w = ember::arange(1, y.numel() + 1).to(y.dtype()).view(y.sizes());
    (y * w).sum().backward();
    for (size_t i = 0; i < in.size(); ++i) {
      Buf g;
      g.shape = {0};  // no gradient: an empty buffer
      if (in[i].requires_grad()) g = from_ember(in[i].grad().defined() ? in[i].grad() : ember::zeros_like(in[i]));
      (i == 0 ? r.out : r.more.emplace_back()) = g;
    }
    return r;
  };
  auto two = [&](const std::pair<ember::Tensor, ember::Tensor>& p) {
    if (c.grad) return grads(p.first);
    r.out = from_ember(p.first);
    r.more.push_back(from_ember(p.second));
    return r;
  };
  auto one = [&](const ember::Tensor& t) {
    if (c.grad) return grads(t);
    r.out = from_ember(t);
    return r;
  };
  auto scalar = [&](size_t i) {
    return c.args.at(3) != 0 ? ember::Scalar(static_cast<int64_t>(c.args.at(i))) : ember::Scalar(c.args.at(i));
  };
  auto options = [&](size_t i) {
    return c.args.at(i) < 0 ? ember::TensorOptions() : ember::TensorOptions(static_cast<ember::DType>(arg(i)));
  };
  // nn::functional: the argument lists are in bridge.hpp.
  namespace F = ember::nn::functional;
  auto ints = [&](size_t i, size_t n) {
    F::IntArgs v;
    for (size_t k = 0; k < n; ++k) v.push_back(arg(i + k));
    return v;
  };
  auto bias = [&](size_t i) { return in.size() > i ? in[i] : ember::Tensor(); };
  if (op == "conv2d") return one(F::conv2d(in.at(0), in.at(1), bias(2), ints(0, 2), ints(2, 2), ints(4, 2), arg(6)));
  if (op == "conv_transpose2d")
    return one(F::conv_transpose2d(in.at(0), in.at(1), bias(2), ints(0, 2), ints(2, 2), ints(4, 2), arg(6), ints(7, 2)));
  if (op == "max_pool2d")
    return two(F::max_pool2d_with_indices(in.at(0), ints(0, 2), ints(2, 2), ints(4, 2), ints(6, 2), arg(8) != 0));
  if (op == "avg_pool2d")
    return one(F::avg_pool2d(in.at(0), ints(0, 2), ints(2, 2), ints(4, 2), arg(6) != 0, arg(7) != 0,
                             arg(8) != 0 ? std::optional<int64_t>(arg(8)) : std::nullopt));
  if (op == "adaptive_avg_pool2d") return one(F::adaptive_avg_pool2d(in.at(0), ints(0, 2)));
  if (op == "adaptive_max_pool2d") return two(F::adaptive_max_pool2d_with_indices(in.at(0), ints(0, 2)));
  if (op == "interpolate") {
    static const char* const modes[] = {"nearest", "bilinear", "bicubic", "nearest-exact", "area"};
    std::vector<double> scales;
    if (c.args.at(4) != 0) scales = {c.args.at(4), c.args.at(5)};
    return one(F::interpolate(in.at(0), ints(0, 2), modes[arg(2)], arg(3) != 0, scales));
  }
  if (op == "pad") {
    static const char* const modes[] = {"constant", "reflect", "replicate", "circular"};
    return one(ember::pad(in.at(0), {arg(1), arg(2), arg(3), arg(4)}, modes[arg(0)], arg(0) == 0 ? 1.5 : 0.0));
  }
  static const char* const reductions[] = {"none", "mean", "sum"};
  auto opt = [&](size_t i) { return in.size() > i && in[i].numel() > 0 ? in[i] : ember::Tensor(); };
  if (op == "cross_entropy")
    return one(F::cross_entropy(in.at(0), in.at(1), opt(2), arg(0), reductions[arg(1)], c.args.at(2)));
  if (op == "nll_loss") return one(F::nll_loss(in.at(0), in.at(1), opt(2), arg(0), reductions[arg(1)]));
  if (op == "smooth_l1_loss") return one(F::smooth_l1_loss(in.at(0), in.at(1), reductions[arg(0)], c.args.at(1)));
  if (op == "huber_loss") return one(F::huber_loss(in.at(0), in.at(1), reductions[arg(0)], c.args.at(1)));
  if (op == "bce_with_logits")
    return one(F::binary_cross_entropy_with_logits(in.at(0), in.at(1), opt(2), reductions[arg(0)], opt(3)));
  if (op == "kl_div") return one(F::kl_div(in.at(0), in.at(1), reductions[arg(0)], arg(1) != 0));
  if (op == "layer_norm") {
    ember::Shape shape;
    for (int64_t d = in.at(0).dim() - arg(0); d < in.at(0).dim(); ++d) shape.push_back(in.at(0).size(d));
    return one(F::layer_norm(in.at(0), shape, opt(1), opt(2), c.args.at(1)));
  }
  if (op == "group_norm") return one(F::group_norm(in.at(0), arg(0), opt(1), opt(2), c.args.at(1)));
  if (op == "batch_norm") {
    ember::Tensor rm = in.at(1).clone(), rv = in.at(2).clone();
    if (c.grad) return grads(F::batch_norm(in.at(0), rm, rv, opt(3), opt(4), arg(0) != 0, c.args.at(1), c.args.at(2)));
    r.out = from_ember(F::batch_norm(in.at(0), rm, rv, opt(3), opt(4), arg(0) != 0, c.args.at(1), c.args.at(2)));
    r.more.push_back(from_ember(rm));
    r.more.push_back(from_ember(rv));
    return r;
  }
  if (op == "grid_sample") {
    static const char* const modes[] = {"bilinear", "nearest", "bicubic"};
    static const char* const pads[] = {"zeros", "border", "reflection"};
    return one(F::grid_sample(in.at(0), in.at(1), modes[arg(0)], pads[arg(1)], arg(2) != 0));
  }
  if (op == "einsum") return one(ember::einsum(c.text, in));
  if (op == "unfold") return one(F::unfold(in.at(0), ints(0, 2), ints(2, 2), ints(4, 2), ints(6, 2)));
  if (op == "fold") return one(F::fold(in.at(0), ints(0, 2), ints(2, 2), ints(4, 2), ints(6, 2), ints(8, 2)));
  if (op == "embedding_bag") {
    static const char* const modes[] = {"sum", "mean", "max"};
    return one(F::embedding_bag(in.at(0), in.at(1), in.at(2), modes[arg(0)], {}, std::nullopt, std::nullopt, 2.0, false,
                                arg(1) != 0));
  }
  if (op == "arange") return one(ember::arange(scalar(0), scalar(1), scalar(2), options(4)));
  if (op == "linspace") return one(ember::linspace(c.args.at(0), c.args.at(1), arg(2), options(3)));
  if (op == "cat") return one(ember::cat(in, arg(0)));
  if (op == "stack") return one(ember::stack(in, arg(0)));
  const ember::Tensor& x = in.at(0);
  if (op == "unique") {
    auto [values, inverse, counts] = ember::unique(x, false, true);
    return two({values, counts});
  }
  if (op == "nonzero") return one(x.nonzero());
  if (op == "index_select") return one(x.index_select(arg(0), in.at(1)));
  if (op == "gather") return one(x.gather(arg(0), in.at(1)));
  if (op == "scatter_add") return one(x.scatter_add(arg(0), in.at(1), in.at(2)));
  if (op == "masked_select") return one(x.masked_select(in.at(1)));
  if (op == "cumsum") return one(x.cumsum(arg(0)));
  if (op == "cumprod") return one(x.cumprod(arg(0)));
  if (op == "logcumsumexp") return one(x.logcumsumexp(arg(0)));
  if (op == "softmax") return one(x.softmax(arg(0)));
  if (op == "log_softmax") return one(x.log_softmax(arg(0)));
  if (op == "cummax") return two(x.cummax(arg(0)));
  if (op == "cummin") return two(x.cummin(arg(0)));
  if (op == "argmax") return one(x.argmax(arg(0), arg(1) != 0));
  if (op == "argmin") return one(x.argmin(arg(0), arg(1) != 0));
  if (op == "max_dim") return two(x.max(arg(0), arg(1) != 0));
  if (op == "min_dim") return two(x.min(arg(0), arg(1) != 0));
  if (op == "var") return one(x.var(arg(0), c.args.at(1), arg(2) != 0));
  if (op == "std") return one(x.std(arg(0), c.args.at(1), arg(2) != 0));
  if (op == "logsumexp") return one(x.logsumexp(arg(0), arg(1) != 0));
  if (op == "sort") return two(x.sort(arg(0), arg(1) != 0));
  if (op == "topk") return one(x.topk(arg(0), arg(1), arg(2) != 0).first);
  if (op == "kthvalue") return one(x.kthvalue(arg(0), arg(1)).first);
  if (op == "where") return one(ember::where(in.at(0), in.at(1), in.at(2)));
  if (op == "lerp") return one(ember::lerp(in.at(0), in.at(1), in.at(2)));
  if (op == "addcmul") return one(ember::addcmul(in.at(0), in.at(1), in.at(2), c.args.at(0)));
  if (op == "addcdiv") return one(ember::addcdiv(in.at(0), in.at(1), in.at(2), c.args.at(0)));
  if (op == "clamp_tensors") return one(x.clamp(in.at(1), in.at(2)));
  if (op == "round_decimals") return one(x.round(arg(0)));
  if (op == "to") return one(x.to(static_cast<ember::DType>(arg(0))));
  if (op == "matmul") return one(ember::matmul(in.at(0), in.at(1)));
  throw std::runtime_error("ember_side: no named op " + op);
}

/// The gradients of sum(op(a[, b]) * [1, 2, ...]).
Result gradients(const Call& c) {
  ember::Tensor a = to_ember(c.a).requires_grad_();
  ember::Tensor b = c.kind == Kind::Binary ? to_ember(c.b).requires_grad_() : ember::Tensor();
  ember::Tensor y = c.kind == Kind::Unary ? unary(c, a) : c.kind == Kind::Binary ? binary(c.op, a, b) : binary(c.op, a, to_scalar(c.s));
  ember::Tensor w = ember::arange(1, y.numel() + 1).to(y.dtype()).view(y.sizes());
  (y * w).sum().backward();
  Result r;
  r.ok = true;
  r.out = from_ember(a.grad().defined() ? a.grad() : ember::zeros_like(a));
  if (b.defined()) r.more.push_back(from_ember(b.grad().defined() ? b.grad() : ember::zeros_like(b)));
  return r;
}

}  // namespace

Result run_ember(const Call& c) {
  Result r;
  try {
    if (c.grad && c.kind != Kind::Named) return gradients(c);
    ember::Tensor a = c.kind == Kind::Named ? ember::Tensor() : to_ember(c.a);
    ember::Tensor out;
    switch (c.kind) {
      case Kind::Unary: out = unary(c, a); break;
      case Kind::Binary: out = binary(c.op, a, to_ember(c.b)); break;
      case Kind::TensorScalar: out = binary(c.op, a, to_scalar(c.s)); break;
      case Kind::Reduce: out = reduce(c, a); break;
      case Kind::Named: return named(c);
    }
    r.out = from_ember(out);
    r.ok = true;
  } catch (const ember::Error& e) {
    r.error = e.what();
  }
  return r;
}

}  // namespace ediff

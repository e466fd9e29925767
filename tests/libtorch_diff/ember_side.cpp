// Ember's half of the differential check: each call through Ember's public Tensor methods
// (the X-macro methods of include/ember/ops/*_list.def, and the parameterised forms).

#include "bridge.hpp"
#include "module_layout.hpp"

#include <ember/ember.hpp>
#include <ember/linalg.hpp>
#include <ember/nn.hpp>
#include <ember/optim.hpp>

#include <cstring>
#include <memory>
#include <exception>
#include <stdexcept>
#include <span>
#include <vector>

namespace ediff {
namespace {

ember::Tensor to_ember(const Buf& b) {
  ember::Shape shape(ember::IntArrayRef(b.shape));
  auto* data = const_cast<unsigned char*>(b.bytes.data());
  return ember::from_blob(data, shape, ember::TensorOptions(static_cast<ember::DType>(b.dt))).clone();
}

/// The same values in a non-contiguous layout (Call::strided): the last two dims transposed in
/// memory, or every other element of a buffer twice as long for a 1-d tensor.
ember::Tensor strided_copy(const ember::Tensor& t) {
  if (t.dim() >= 2) return t.transpose(-1, -2).contiguous().transpose(-1, -2);
  if (t.dim() == 1) {
    ember::Tensor wide = ember::zeros({t.size(0), 2}, ember::TensorOptions(t.dtype()));
    ember::Tensor col = wide.select(1, 0);
    col.copy_(t);
    return col;
  }
  return t;
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

/// The gradients of sum(y * [1, 2, ...]) with respect to xs, or with order 2 the second-order
/// gradients that Call::order describes; undefined for an input that takes none (it does not
/// require grad), zeros for one that the graph does not reach.
std::vector<ember::Tensor> input_gradients(const ember::Tensor& y, const std::vector<ember::Tensor>& xs, int order) {
  ember::Tensor w = ember::arange(1, y.numel() + 1).to(y.dtype()).view(y.sizes());
  std::vector<ember::Tensor> live, out(xs.size());
  for (const ember::Tensor& x : xs)
    if (x.defined() && x.requires_grad()) live.push_back(x);
  std::vector<ember::Tensor> g;
  if (order == 1) {
    (y * w).sum().backward();
    for (const ember::Tensor& x : live) g.push_back(x.grad());
  } else {
    std::vector<ember::Tensor> g1 = ember::autograd::grad({(y * w).sum()}, live, {}, true, true, true);
    ember::Tensor s;
    for (const ember::Tensor& gi : g1) {
      if (!gi.defined() || !gi.requires_grad()) continue;
      ember::Tensor term = (gi * to_ember(second_order_weights(static_cast<DT>(gi.dtype()), gi.sizes().vec()))).sum();
      s = s.defined() ? s + term : term;
    }
    g = s.defined() ? ember::autograd::grad({s}, live, {}, false, false, true) : std::vector<ember::Tensor>(live.size());
  }
  for (size_t i = 0, k = 0; i < xs.size(); ++i)
    if (xs[i].defined() && xs[i].requires_grad()) {
      out[i] = g[k].defined() ? g[k] : ember::zeros_like(xs[i]);
      ++k;
    }
  return out;
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
    if (op == "digamma") return x.polygamma(static_cast<int64_t>(c.p[0]));
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

/// A Named call's gradients as its Result (bridge.hpp).
Result gradient_result(const std::vector<ember::Tensor>& gs) { return gradient_result(gs, from_ember); }

Result named(const Call& c) {
  std::vector<ember::Tensor> in;
  for (const Buf& b : c.ins) in.push_back(c.strided ? strided_copy(to_ember(b)) : to_ember(b));
  const std::string& op = c.op;
  if (c.grad)
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i].is_floating_point() && differentiable_input(c, i) && !(c.skip_first && i == 0)) in[i].requires_grad_();
  auto arg = [&](size_t i) { return static_cast<int64_t>(c.args.at(i)); };
  Result r;
  r.ok = true;
  // With c.grad: the gradients of sum(y * [1, 2, ...]) for the first output y, one per input
  // (an empty buffer for those that take none).
  auto grads = [&](const ember::Tensor& y) {
    return gradient_result(input_gradients(y, in, c.order));
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
  if (op == "interpolate1d" || op == "interpolate3d" || op == "interpolate_aa") {
    // 1-d and 3-d resampling (mode 1 is linear or trilinear), and 2-d with antialias.
    const size_t nd = op == "interpolate1d" ? 1 : op == "interpolate3d" ? 3 : 2;
    const bool aa = op == "interpolate_aa";
    const char* linear = nd == 1 ? "linear" : nd == 3 ? "trilinear" : "bilinear";
    const char* const modes[] = {"nearest", linear, "bicubic", "nearest-exact", "area"};
    std::vector<double> scales;
    if (!aa && c.args.at(nd + 2) != 0) scales.assign(c.args.begin() + static_cast<std::ptrdiff_t>(nd + 2), c.args.end());
    return one(F::interpolate(in.at(0), ints(0, nd), modes[arg(nd)], arg(nd + 1) != 0, scales, aa));
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
  // calls_more.cpp's families.
  auto dim_or_all = [&](size_t i) { return arg(i) == -9 ? std::optional<int64_t>() : std::optional<int64_t>(arg(i)); };
  if (op == "scatter") return one(x.scatter(arg(0), in.at(1), in.at(2)));
  if (op == "scatter_value") return one(x.scatter(arg(0), in.at(1), ember::Scalar(c.args.at(1))));
  if (op == "scatter_reduce") {
    static const char* const reduce[] = {"sum", "prod", "mean", "amax", "amin"};
    return one(ember::scatter_reduce(x, arg(0), in.at(1), in.at(2), reduce[arg(1)], arg(2) != 0));
  }
  if (op == "index_add") return one(x.index_add(arg(0), in.at(1), in.at(2), ember::Scalar(c.args.at(1))));
  if (op == "index_copy") return one(x.index_copy(arg(0), in.at(1), in.at(2)));
  if (op == "index_put") {
    std::vector<ember::Tensor> idx(in.begin() + 1, in.end() - 1);
    return one(ember::index_put(x, idx, in.back(), arg(0) != 0));
  }
  if (op == "masked_fill") return one(x.masked_fill(in.at(1), ember::Scalar(c.args.at(0))));
  if (op == "flip") {
    ember::Shape dims;
    for (int64_t k = 0; k < x.dim(); ++k)
      if (arg(0) >> k & 1) dims.push_back(k);
    return one(x.flip(dims));
  }
  if (op == "roll") return one(x.roll(arg(0), dim_or_all(1)));
  if (op == "repeat_interleave") return one(x.repeat_interleave(arg(0), dim_or_all(1)));
  if (op == "repeat") return one(x.repeat(ember::Shape(ember::IntArrayRef(ints(0, c.args.size())))));
  if (op == "tril") return one(x.tril(arg(0)));
  if (op == "triu") return one(x.triu(arg(0)));
  if (op == "diag") return one(x.diag(arg(0)));
  if (op == "diagonal") return one(x.diagonal(arg(0), arg(1), arg(2)));
  if (op == "pixel_shuffle") return one(F::pixel_shuffle(x, arg(0)));
  if (op == "pixel_unshuffle") return one(F::pixel_unshuffle(x, arg(0)));
  if (op == "channel_shuffle") return one(F::channel_shuffle(x, arg(0)));
  if (op == "norm")
    return one(arg(1) == -9 ? x.norm(c.args.at(0), ember::Shape{}, arg(2) != 0) : x.norm(c.args.at(0), arg(1), arg(2) != 0));
  if (op == "var_mean") return two(x.var_mean({arg(0)}, c.args.at(1), false));
  if (op == "one_hot") return one(ember::one_hot(x, arg(0)));
  if (op == "mse_loss") return one(F::mse_loss(x, in.at(1), reductions[arg(0)]));
  if (op == "l1_loss") return one(F::l1_loss(x, in.at(1), reductions[arg(0)]));
  if (op == "soft_margin_loss") return one(F::soft_margin_loss(x, in.at(1), reductions[arg(0)]));
  if (op == "hinge_embedding_loss") return one(F::hinge_embedding_loss(x, in.at(1), c.args.at(0), reductions[arg(1)]));
  if (op == "binary_cross_entropy") return one(F::binary_cross_entropy(x, in.at(1), opt(2), reductions[arg(0)]));
  if (op == "margin_ranking_loss")
    return one(F::margin_ranking_loss(x, in.at(1), in.at(2), c.args.at(0), reductions[arg(1)]));
  if (op == "cosine_embedding_loss")
    return one(F::cosine_embedding_loss(x, in.at(1), in.at(2), c.args.at(0), reductions[arg(1)]));
  if (op == "triplet_margin_loss")
    return one(F::triplet_margin_loss(x, in.at(1), in.at(2), c.args.at(0), c.args.at(1), c.args.at(2), arg(3) != 0,
                                      reductions[arg(4)]));
  if (op == "multi_margin_loss")
    return one(F::multi_margin_loss(x, in.at(1), arg(0), c.args.at(1), opt(2), reductions[arg(2)]));
  if (op == "multilabel_margin_loss") return one(F::multilabel_margin_loss(x, in.at(1), reductions[arg(0)]));
  if (op == "poisson_nll_loss")
    return one(F::poisson_nll_loss(x, in.at(1), arg(0) != 0, arg(1) != 0, c.args.at(2), reductions[arg(3)]));
  if (op == "ctc_loss") {
    auto lengths = [&](size_t i) {
      const ember::Tensor t = in.at(i).contiguous();  // a strided call's lengths are a view
      return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
    };
    return one(F::ctc_loss(x.log_softmax(2), in.at(1), lengths(2), lengths(3), arg(0), reductions[arg(1)], arg(2) != 0));
  }
  if (op == "conv1d") return one(F::conv1d(x, in.at(1), bias(2), ints(0, 1), ints(1, 1), ints(2, 1), arg(3)));
  if (op == "conv_transpose1d")
    return one(F::conv_transpose1d(x, in.at(1), bias(2), ints(0, 1), ints(1, 1), ints(2, 1), arg(3), ints(4, 1)));
  if (op == "max_pool1d") return two(F::max_pool1d_with_indices(x, ints(0, 1), ints(1, 1), ints(2, 1), ints(3, 1), arg(4) != 0));
  if (op == "avg_pool1d") return one(F::avg_pool1d(x, ints(0, 1), ints(1, 1), ints(2, 1), arg(3) != 0, arg(4) != 0));
  if (op == "adaptive_avg_pool1d") return one(F::adaptive_avg_pool1d(x, arg(0)));
  if (op == "adaptive_max_pool1d") return two(F::adaptive_max_pool1d_with_indices(x, arg(0)));
  if (op == "conv3d") return one(F::conv3d(x, in.at(1), bias(2), ints(0, 3), ints(3, 3), ints(6, 3), arg(9)));
  if (op == "max_pool3d")
    return two(F::max_pool3d_with_indices(x, ints(0, 3), ints(3, 3), ints(6, 3), ints(9, 3), arg(12) != 0));
  if (op == "avg_pool3d")
    return one(F::avg_pool3d(x, ints(0, 3), ints(3, 3), ints(6, 3), arg(9) != 0, arg(10) != 0,
                             arg(11) != 0 ? std::optional<int64_t>(arg(11)) : std::nullopt));
  if (op == "max_unpool2d") {
    // A kernel that makes (oh, ow) the default output size at stride 1 (libtorch's ATen op
    // takes the size alone).
    const F::IntArgs kernel = {arg(0) - x.size(-2) + 1, arg(1) - x.size(-1) + 1};
    return one(F::max_unpool2d(x, in.at(1), kernel, {1, 1}, {0}, ints(0, 2)));
  }
  if (op == "instance_norm") return one(F::instance_norm(x, opt(1), opt(2), c.args.at(0)));
  if (op == "embedding") {
    const std::optional<int64_t> padding = arg(0) == -1 ? std::nullopt : std::optional<int64_t>(arg(0));
    const double max_norm = c.args.size() > 2 ? c.args[2] : 0;
    const std::optional<double> renorm = max_norm > 0 ? std::optional<double>(max_norm) : std::nullopt;
    ember::Tensor y = F::embedding(in.at(1), x, padding, renorm, c.args.size() > 3 ? c.args[3] : 2.0, arg(1) != 0);
    if (renorm && !c.grad) return two({y, x});  // and the table, renormalised in place
    return one(y);
  }
  if (op == "cosine_similarity") return one(F::cosine_similarity(x, in.at(1), arg(0), c.args.at(1)));
  if (op == "pairwise_distance") return one(F::pairwise_distance(x, in.at(1), c.args.at(0), c.args.at(1), arg(2) != 0));
  if (op == "glu") return one(F::glu(x, arg(0)));
  if (op == "prelu") return one(F::prelu(x, in.at(1)));
  if (op == "sdpa")
    return one(F::scaled_dot_product_attention(x, in.at(1), in.at(2), opt(3), 0.0, arg(0) != 0,
                                               c.args.at(1) != 0 ? std::optional<double>(c.args.at(1)) : std::nullopt));
  if (op == "index_expr" || op == "index_put_expr") {
    // The index expression coded in args (bridge.hpp), its tensors from ins[1...].
    std::vector<ember::TensorIndex> spec;
    size_t next = 1;
    for (double a : c.args) {
      switch (static_cast<int>(a)) {
        case 0: spec.emplace_back(ember::Slice()); break;
        case 1: spec.emplace_back(ember::Slice(1, ember::None, 2)); break;
        case 2: spec.emplace_back(ember::None); break;
        case 3: spec.emplace_back(ember::Ellipsis); break;
        case 4: spec.emplace_back(int64_t{1}); break;
        case 5: spec.emplace_back(int64_t{-1}); break;
        case 6: spec.emplace_back(ember::Slice(-3, -1)); break;
        default: spec.emplace_back(in.at(next++)); break;
      }
    }
    if (op == "index_expr") return one(x.index(std::span<const ember::TensorIndex>(spec)));
    ember::Tensor y = x * 1.0;  // a non-leaf written in place; the values are the last input
    y.index_put_(std::span<const ember::TensorIndex>(spec), in.back());
    return one(y);
  }
  if (op == "conv_padded") {
    // Padding by name or numbers with a padding mode, as the Conv modules take it.
    static const char* const names[] = {"", "same", "valid"};
    static const char* const modes[] = {"zeros", "reflect", "replicate", "circular"};
    const int nd = static_cast<int>(arg(0));
    return one(F::detail::conv_padded(x, in.at(1), bias(2), nd, ints(4, static_cast<size_t>(nd)), ints(4 + nd, static_cast<size_t>(nd)),
                                      names[arg(1)], modes[arg(2)], ints(4 + 2 * nd, static_cast<size_t>(nd)), arg(3), "conv"));
  }
  // The transformer modules: the parameters come after the first `data` inputs, in
  // module_layout.hpp's order; the masks follow them.
  auto transformer_module = [&](auto& m, const std::vector<std::string>& names, size_t data) {
    m->to(x.dtype());
    auto params = m->named_parameters();
    {
      ember::NoGradGuard no_grad;
      for (size_t k = 0; k < names.size(); ++k) params[names[k]].copy_(in.at(data + k));
    }
    std::vector<ember::Tensor> xs(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(data));
    for (const std::string& n : names) xs.push_back(params[n]);
    return xs;
  };
  if (op == "encoder_layer") {
    // nn::TransformerEncoderLayer (post-norm, sequence first) with the given parameters.
    const std::vector<std::string> names = encoder_layer_parameter_names();
    ember::nn::TransformerEncoderLayerOptions o(x.size(-1), arg(0));
    o.dim_feedforward(arg(1)).dropout(0.0).activation(arg(2) ? "gelu" : "relu");
    ember::nn::TransformerEncoderLayer m(o);
    const std::vector<ember::Tensor> xs = transformer_module(m, names, 1);
    const size_t masks = 1 + names.size();
    ember::Tensor y = m->forward(x, opt(masks), opt(masks + 1));
    if (!c.grad) return one(y);
    return gradient_result(input_gradients(y, xs, c.order));
  }
  if (op == "decoder_layer") {
    // nn::TransformerDecoderLayer (post-norm, sequence first).
    const std::vector<std::string> names = decoder_layer_parameter_names();
    ember::nn::TransformerDecoderLayerOptions o(x.size(-1), arg(0));
    o.dim_feedforward(arg(1)).dropout(0.0).activation(arg(2) ? "gelu" : "relu");
    ember::nn::TransformerDecoderLayer m(o);
    const std::vector<ember::Tensor> xs = transformer_module(m, names, 2);
    const size_t masks = 2 + names.size();
    ember::Tensor y = m->forward(x, in.at(1), opt(masks), opt(masks + 1), opt(masks + 2), opt(masks + 3));
    if (!c.grad) return one(y);
    return gradient_result(input_gradients(y, xs, c.order));
  }
  if (op == "transformer") {
    // nn::Transformer with arg(3) encoder and arg(4) decoder layers.
    const std::vector<std::string> names = transformer_parameter_names(static_cast<int>(arg(3)), static_cast<int>(arg(4)));
    ember::nn::TransformerOptions o;
    o.d_model(x.size(-1)).nhead(arg(0)).num_encoder_layers(arg(3)).num_decoder_layers(arg(4));
    o.dim_feedforward(arg(1)).dropout(0.0).activation(arg(2) ? "gelu" : "relu");
    ember::nn::Transformer m(o);
    const std::vector<ember::Tensor> xs = transformer_module(m, names, 2);
    const size_t masks = 2 + names.size();
    ember::Tensor y = m->forward(x, in.at(1), opt(masks), opt(masks + 1), opt(masks + 2), opt(masks + 3),
                                 opt(masks + 4), opt(masks + 5));
    if (!c.grad) return one(y);
    return gradient_result(input_gradients(y, xs, c.order));
  }
  if (op == "mha") {
    // nn::MultiheadAttention with the given projections copied in (as torch_side.cpp's).
    const int64_t e = x.size(-1), kd = in.at(1).size(-1), vd = in.at(2).size(-1);
    const bool has_bias = in.at(6).numel() > 0, bias_kv = in.size() > 11 && in.at(11).numel() > 0,
               zero_attn = c.args.size() > 3 && c.args.at(3) != 0;
    ember::nn::MultiheadAttentionOptions o(e, arg(0));
    o.bias(has_bias).add_bias_kv(bias_kv).add_zero_attn(zero_attn);
    if (kd != e || vd != e) o.kdim(kd).vdim(vd);
    ember::nn::MultiheadAttention m(o);
    m->to(x.dtype());
    const bool packed = kd == e && vd == e;
    auto params = m->named_parameters();
    {
      ember::NoGradGuard no_grad;
      if (packed) params["in_proj_weight"].copy_(ember::cat({in.at(3), in.at(4), in.at(5)}, 0));
      else params["q_proj_weight"].copy_(in.at(3)), params["k_proj_weight"].copy_(in.at(4)), params["v_proj_weight"].copy_(in.at(5));
      if (has_bias) params["in_proj_bias"].copy_(in.at(6)), params["out_proj.bias"].copy_(in.at(8));
      params["out_proj.weight"].copy_(in.at(7));
      if (bias_kv) params["bias_k"].copy_(in.at(11)), params["bias_v"].copy_(in.at(12));
    }
    auto [out, weights] = m->forward(x, in.at(1), in.at(2), opt(9), arg(1) != 0, opt(10), arg(2) != 0);
    if (!c.grad) {
      r.out = from_ember(out);
      r.more.push_back(weights.defined() ? from_ember(weights) : Buf{DT::F32, {0}, {}});
      return r;
    }
    std::vector<ember::Tensor> xs = {in.at(0), in.at(1), in.at(2)};
    for (const std::string& n : mha_parameter_names(packed, has_bias, bias_kv)) xs.push_back(params[n]);
    if (c.skip_first) xs[0] = ember::Tensor();  // q as plain data
    const std::vector<ember::Tensor> gs = input_gradients(out, xs, c.order);
    return gradient_result(mha_gradients_by_input(gs, packed, has_bias, bias_kv, e));
  }
  if (op == "lstm_cell" || op == "gru_cell" || op == "rnn_tanh_cell" || op == "rnn_relu_cell") {
    // x, h, c (lstm) or empty, w_ih, w_hh, b_ih and b_hh or empty -> h (and c)
    ember::Tensor h, c2;
    if (op == "lstm_cell") std::tie(h, c2) = ember::lstm_cell(x, {in.at(1), in.at(2)}, in.at(3), in.at(4), opt(5), opt(6));
    else if (op == "gru_cell") h = ember::gru_cell(x, in.at(1), in.at(3), in.at(4), opt(5), opt(6));
    else if (op == "rnn_tanh_cell") h = ember::rnn_tanh_cell(x, in.at(1), in.at(3), in.at(4), opt(5), opt(6));
    else h = ember::rnn_relu_cell(x, in.at(1), in.at(3), in.at(4), opt(5), opt(6));
    if (!c.grad) {
      r.out = from_ember(h);
      if (c2.defined()) r.more.push_back(from_ember(c2));
      return r;
    }
    return gradient_result(input_gradients(c2.defined() ? h + c2 * 0.5 : h, in, c.order));
  }
  if (op == "mha_f") {
    // F::multi_head_attention_forward with the given projections, packed or separate.
    const bool separate = arg(4) != 0, self = arg(5) != 0;
    const ember::Tensor k = self ? x : in.at(1), v = self ? x : in.at(2);
    ember::nn::F::MultiheadAttentionForwardFuncOptions o(
        x.size(-1), arg(0), separate ? ember::Tensor() : ember::cat({in.at(3), in.at(4), in.at(5)}, 0), opt(6),
        opt(11), opt(12), arg(3) != 0, 0.0, in.at(7), opt(8));
    o.training(false).key_padding_mask(opt(9)).need_weights(arg(1) != 0).attn_mask(opt(10));
    o.average_attn_weights(arg(2) != 0).static_k(opt(13)).static_v(opt(14));
    if (separate) o.use_separate_proj_weight(true).q_proj_weight(in.at(3)).k_proj_weight(in.at(4)).v_proj_weight(in.at(5));
    auto [out, weights] = ember::nn::F::multi_head_attention_forward(x, k, v, o);
    if (!c.grad) {
      r.out = from_ember(out);
      r.more.push_back(weights.defined() ? from_ember(weights) : Buf{DT::F32, {0}, {}});
      return r;
    }
    return gradient_result(input_gradients(out, in, c.order));
  }
  if (op == "lstm" || op == "gru" || op == "rnn_tanh" || op == "rnn_relu") {
    // The module with the given weights copied in; its parameters' gradients are reported
    // in the inputs' order (after x, h0[, c0]).
    const bool lstm = op == "lstm";
    const size_t first = lstm ? 3 : 2;
    // An LSTM's hidden size is c0's; an h0 narrower than that is its projection's.
    const int64_t hidden = in.at(first - 1).size(-1), h_size = in.at(1).size(-1);
    ember::nn::RNNOptions o(x.size(-1), hidden);
    o.num_layers(arg(0)).bidirectional(arg(1) != 0).batch_first(arg(2) != 0).bias(arg(3) != 0);
    if (h_size != hidden) o.proj_size(h_size);
    if (op == "rnn_relu") o.nonlinearity("relu");
    auto run = [&](auto module, auto forward) {
      module->to(x.dtype());
      std::vector<ember::Tensor> params = module->parameters();
      if (params.size() != in.size() - first) throw std::logic_error("ember_side: " + op + ": weight count");
      {
        ember::NoGradGuard no_grad;
        for (size_t k = 0; k < params.size(); ++k) params[k].copy_(in[first + k]);
      }
      std::vector<ember::Tensor> outs = forward(module);
      if (!c.grad) {
        r.out = from_ember(outs[0]);
        for (size_t k = 1; k < outs.size(); ++k) r.more.push_back(from_ember(outs[k]));
        return r;
      }
      std::vector<ember::Tensor> xs(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(first));
      xs.insert(xs.end(), params.begin(), params.end());
      return gradient_result(input_gradients(outs[0], xs, c.order));
    };
    // With lengths (args 4...): the padded batch packed (unsorted), run, and padded again.
    namespace R = ember::nn::utils::rnn;
    const std::vector<int64_t> lengths(c.args.begin() + std::min<std::ptrdiff_t>(4, static_cast<std::ptrdiff_t>(c.args.size())),
                                       c.args.end());
    const bool batch_first = arg(2) != 0;
    auto padded = [&](const R::BasicPackedSequence<ember::DefaultPolicy>& p) {
      return R::pad_packed_sequence(p, batch_first, 0.0, x.size(batch_first ? 1 : 0)).first;
    };
    if (lstm)
      return run(ember::nn::LSTM(o), [&](auto& m) {
        const auto state = std::make_pair(in.at(1), in.at(2));
        if (!lengths.empty()) {
          auto [p, st] = m->forward_with_packed_input(R::pack_padded_sequence(x, lengths, batch_first, false), state);
          return std::vector<ember::Tensor>{padded(p), st.first, st.second};
        }
        auto [y, st] = m->forward(x, state);
        return std::vector<ember::Tensor>{y, st.first, st.second};
      });
    auto one_state = [&](auto& m) {
      if (!lengths.empty()) {
        auto [p, h] = m->forward_with_packed_input(R::pack_padded_sequence(x, lengths, batch_first, false), in.at(1));
        return std::vector<ember::Tensor>{padded(p), h};
      }
      auto [y, h] = m->forward(x, in.at(1));
      return std::vector<ember::Tensor>{y, h};
    };
    if (op == "gru") return run(ember::nn::GRU(o), one_state);
    return run(ember::nn::RNN(o), one_state);
  }
  if (op == "normalize") return one(F::normalize(x, c.args.at(0), arg(1), c.args.at(2)));
  if (op == "local_response_norm") return one(F::local_response_norm(x, arg(0), c.args.at(1), c.args.at(2), c.args.at(3)));
  if (op == "gaussian_nll_loss")
    return one(F::gaussian_nll_loss(x, in.at(1), in.at(2), arg(0) != 0, c.args.at(1), reductions[arg(2)]));
  if (op == "multilabel_soft_margin_loss") return one(F::multilabel_soft_margin_loss(x, in.at(1), opt(2), reductions[arg(0)]));
  if (op == "rms_norm") {
    ember::Shape shape;
    for (int64_t k = x.dim() - arg(0); k < x.dim(); ++k) shape.push_back(x.size(k));
    return one(F::rms_norm(x, shape, opt(1), c.args.at(1) < 0 ? std::nullopt : std::optional<double>(c.args.at(1))));
  }
  if (op == "sgd" || op == "adam" || op == "adamw" || op == "rmsprop" || op == "adagrad") {
    namespace O = ember::optim;
    ember::Tensor p = x.clone().requires_grad_();
    std::vector<ember::Tensor> params = {p};
    const std::vector<double>& a = c.args;
    std::unique_ptr<O::Optimizer> opt;
    if (op == "sgd")
      opt = std::make_unique<O::SGD>(
          params, O::SGDOptions(a[0]).momentum(a[1]).dampening(a[2]).weight_decay(a[3]).nesterov(a[4] != 0));
    else if (op == "adam")
      opt = std::make_unique<O::Adam>(
          params, O::AdamOptions(a[0]).betas({a[1], a[2]}).eps(a[3]).weight_decay(a[4]).amsgrad(a[5] != 0));
    else if (op == "adamw")
      opt = std::make_unique<O::AdamW>(
          params, O::AdamWOptions(a[0]).betas({a[1], a[2]}).eps(a[3]).weight_decay(a[4]).amsgrad(a[5] != 0));
    else if (op == "rmsprop")
      opt = std::make_unique<O::RMSprop>(
          params, O::RMSpropOptions(a[0]).alpha(a[1]).eps(a[2]).weight_decay(a[3]).momentum(a[4]).centered(a[5] != 0));
    else
      opt = std::make_unique<O::Adagrad>(
          params, O::AdagradOptions(a[0]).lr_decay(a[1]).weight_decay(a[2]).initial_accumulator_value(a[3]).eps(a[4]));
    for (int64_t k = 0; k < in.at(1).size(0); ++k) {
      p.set_grad(in.at(1).select(0, k).clone());
      opt->step();
    }
    return one(p.detach());
  }
  // calls_linalg.cpp's: matrix products, the remaining activations, pools and grids.
  // calls_decompositions.cpp's: torch::linalg. Matrix-norm ord codes: 3 "fro", 4 "nuc", +-10 +-inf.
  namespace L = ember::linalg;
  auto norm_ord = [](double o) { return o == 10 ? INFINITY : o == -10 ? -INFINITY : o; };
  if (op == "linalg_det") return one(L::det(x));
  if (op == "linalg_slogdet") {  // log|det| first: the gradients are of the first output
    auto [sign, logabs] = L::slogdet(x);
    return two({logabs, sign});
  }
  if (op == "logdet") return one(ember::logdet(x));
  if (op == "linalg_inv") return one(L::inv(x));
  if (op == "linalg_solve") return one(L::solve(x, in.at(1), arg(0) != 0));
  if (op == "linalg_solve_triangular") return one(L::solve_triangular(x, in.at(1), arg(0) != 0, arg(1) != 0, arg(2) != 0));
  if (op == "linalg_matrix_power") return one(L::matrix_power(x, arg(0)));
  if (op == "linalg_cholesky") return one(L::cholesky(x, arg(0) != 0));
  if (op == "linalg_eigvalsh") return one(L::eigvalsh(x, arg(0) != 0 ? "U" : "L"));
  if (op == "cholesky_solve") return one(ember::cholesky_solve(x, in.at(1), arg(0) != 0));
  if (op == "cholesky_inverse") return one(ember::cholesky_inverse(x, arg(0) != 0));
  if (op == "linalg_pinv") return one(L::pinv(x, std::nullopt, std::nullopt, arg(0) != 0));
  if (op == "linalg_matrix_norm") {
    const double o = c.args.at(0);
    if (o == 3 || o == 4) return one(L::matrix_norm(x, o == 3 ? "fro" : "nuc"));
    return one(L::matrix_norm(x, norm_ord(o)));
  }
  if (op == "linalg_cond") return one(L::cond(x));
  if (op == "linalg_matrix_rank") return one(L::matrix_rank(x));
  if (op == "linalg_svdvals") return one(L::svdvals(x));
  if (op == "linalg_qr") {
    auto [q, r] = L::qr(x);
    return two({q, r});
  }
  if (op == "geqrf") {
    auto [qr, tau] = ember::geqrf(x);
    return two({qr, tau});
  }
  if (op == "householder_product") return one(L::householder_product(x, in.at(1)));
  if (op == "ormqr") return one(ember::ormqr(x, in.at(1), in.at(2), arg(0) != 0, arg(1) != 0));
  if (op == "linalg_lstsq") {
    static const char* const drivers[] = {"gelsy", "gelsd", "gels", "gelss"};
    auto [sol, res, rank, sv] = L::lstsq(x, in.at(1), std::nullopt, drivers[arg(0)]);
    return two({sol, res});
  }
  if (op == "linalg_matrix_exp") return one(L::matrix_exp(x));
  if (op == "linalg_lu_factor") {
    auto [lu, piv] = L::lu_factor(x);
    return two({lu, piv});
  }
  if (op == "linalg_lu") {
    auto [pm, lm, um] = L::lu(x);
    return two({lm, um});
  }
  if (op == "linalg_lu_U") return one(std::get<2>(L::lu(x)));
  if (op == "linalg_lu_solve") {
    auto [lu, piv] = L::lu_factor(x);
    return one(L::lu_solve(lu, piv, in.at(1), arg(0) != 0, arg(1) != 0));
  }
  if (op == "linalg_cross") return one(L::cross(x, in.at(1), arg(0)));
  if (op == "linalg_vector_norm") return one(L::vector_norm(x, norm_ord(c.args.at(0)), ember::Shape{arg(1)}));
  // calls_arrange.cpp's: rearranging and building tensors.
  auto shape_args = [&](size_t from, size_t n) {
    ember::Shape v;
    for (size_t k = 0; k < n; ++k) v.push_back(arg(from + k));
    return v;
  };
  auto optional_in = [&](bool has, size_t& next) { return has ? in.at(next++) : ember::Tensor(); };
  if (op == "movedim") return one(x.movedim(shape_args(1, arg(0)), shape_args(1 + arg(0), arg(0))));
  if (op == "rot90") return one(x.rot90(arg(0), {arg(1), arg(2)}));
  if (op == "roll_dims") return one(x.roll(shape_args(0, 2), shape_args(2, 2)));
  if (op == "take_along_dim") return one(x.take_along_dim(in.at(1), dim_or_all(0)));
  if (op == "repeat_interleave_tensor") return one(x.repeat_interleave(in.at(1), dim_or_all(0)));
  if (op == "tensor_unfold") return one(x.unfold(arg(0), arg(1), arg(2)));
  if (op == "kron") return one(ember::kron(x, in.at(1)));
  if (op == "tensordot") {
    if (c.args.size() == 1) return one(ember::tensordot(x, in.at(1), arg(0)));
    return one(ember::tensordot(x, in.at(1), shape_args(1, arg(0)), shape_args(1 + arg(0), arg(0))));
  }
  if (op == "trace") return one(x.trace());
  if (op == "block_diag") return one(ember::block_diag(in));
  if (op == "cartesian_prod") return one(ember::cartesian_prod(in));
  if (op == "isin") return one(ember::isin(x, in.at(1), false, arg(0) != 0));
  if (op == "unique_consecutive") {
    auto [values, inverse, counts] =
        ember::unique_consecutive(x, true, true, arg(0) == -9 ? std::nullopt : std::optional<int64_t>(arg(0)));
    r.out = from_ember(values);
    r.more = {from_ember(inverse), from_ember(counts)};
    return r;
  }
  if (op == "unique_dim") {
    auto [values, inverse, counts] = ember::unique_dim(x, arg(0), true, true, true);
    r.out = from_ember(values);
    r.more = {from_ember(inverse), from_ember(counts)};
    return r;
  }
  if (op == "combinations") return one(ember::combinations(x, arg(0), arg(1) != 0));
  if (op == "diag_embed") return one(x.diag_embed(arg(0), arg(1), arg(2)));
  if (op == "diagflat") return one(x.diagflat(arg(0)));
  if (op == "vander") return one(ember::vander(x, arg(0) == -9 ? std::nullopt : std::optional<int64_t>(arg(0)), arg(1) != 0));
  if (op == "diff") {
    size_t next = 1;
    const ember::Tensor prepend = optional_in(arg(2) != 0, next), append = optional_in(arg(3) != 0, next);
    return one(x.diff(arg(0), arg(1), prepend, append));
  }
  if (op == "cov") {
    size_t next = 1;
    const ember::Tensor fw = optional_in(arg(1) != 0, next), aw = optional_in(arg(2) != 0, next);
    return one(x.cov(arg(0), fw, aw));
  }
  if (op == "corrcoef") return one(x.corrcoef());
  if (op == "index_fill") return one(x.index_fill(arg(0), in.at(1), ember::Scalar(c.args.at(1))));
  if (op == "index_fill_tensor") return one(x.index_fill(arg(0), in.at(1), in.at(2)));
  if (op == "masked_scatter") return one(x.masked_scatter(in.at(1), in.at(2)));
  if (op == "masked_fill_tensor") return one(x.masked_fill(in.at(1), in.at(2)));
  // The in-place forms, on a differentiable copy (x itself may be a leaf).
  ember::Tensor y = x.clone();
  if (op == "index_fill_inplace") return one(y.index_fill_(arg(0), in.at(1), ember::Scalar(c.args.at(1))));
  if (op == "masked_scatter_inplace") return one(y.masked_scatter_(in.at(1), in.at(2)));
  if (op == "index_add_inplace") return one(y.index_add_(arg(0), in.at(1), in.at(2), ember::Scalar(c.args.at(1))));
  if (op == "index_copy_inplace") return one(y.index_copy_(arg(0), in.at(1), in.at(2)));
  if (op == "scatter_inplace") return one(y.scatter_(arg(0), in.at(1), in.at(2)));
  if (op == "mm") return one(ember::mm(x, in.at(1)));
  if (op == "bmm") return one(ember::bmm(x, in.at(1)));
  if (op == "dot") return one(ember::dot(x, in.at(1)));
  if (op == "outer") return one(ember::outer(x, in.at(1)));
  if (op == "addmm") return one(ember::addmm(x, in.at(1), in.at(2), c.args.at(0), c.args.at(1)));
  if (op == "baddbmm") return one(ember::baddbmm(x, in.at(1), in.at(2), c.args.at(0), c.args.at(1)));
  if (op == "linear") return one(F::linear(x, in.at(1), bias(2)));
  if (op == "bilinear") return one(F::bilinear(x, in.at(1), in.at(2), bias(3)));
  if (op == "tile") return one(x.tile(ember::Shape(ember::IntArrayRef(std::vector<int64_t>(c.args.begin(), c.args.end())))));
  if (op == "argsort") return one(x.argsort(arg(0), arg(1) != 0));
  if (op == "hardshrink") return one(F::hardshrink(x, c.args.at(0)));
  if (op == "softshrink") return one(F::softshrink(x, c.args.at(0)));
  if (op == "tanhshrink") return one(F::tanhshrink(x));
  if (op == "threshold") return one(F::threshold(x, c.args.at(0), c.args.at(1)));
  if (op == "logsigmoid") return one(F::logsigmoid(x));
  if (op == "softmin") return one(F::softmin(x, arg(0)));
  if (op == "lp_pool1d") return one(F::lp_pool1d(x, c.args.at(0), ints(1, 1), ints(2, 1), arg(3) != 0));
  if (op == "lp_pool2d") return one(F::lp_pool2d(x, c.args.at(0), ints(1, 2), ints(3, 2), arg(5) != 0));
  if (op == "adaptive_avg_pool3d") return one(F::adaptive_avg_pool3d(x, ints(0, 3)));
  if (op == "adaptive_max_pool3d") return two(F::adaptive_max_pool3d_with_indices(x, ints(0, 3)));
  if (op == "fractional_max_pool2d") {
    const std::vector<int64_t> a = ints(0, 4);
    auto [v, i] = F::fractional_max_pool2d_with_indices(
        x, F::FractionalMaxPool2dFuncOptions({a[0], a[1]}).output_size(F::IntArgs{a[2], a[3]})._random_samples(in.at(1)));
    return two({v, i});
  }
  if (op == "conv_transpose3d")
    return one(F::conv_transpose3d(x, in.at(1), bias(2), ints(0, 3), ints(3, 3), ints(6, 3), arg(9), ints(10, 3)));
  if (op == "max_unpool1d") {  // the kernel that makes `out` the default size at stride 1, as max_unpool2d's
    const F::IntArgs kernel = {arg(0) - x.size(-1) + 1};
    return one(F::max_unpool1d(x, in.at(1), kernel, {1}, {0}, ints(0, 1)));
  }
  if (op == "affine_grid") {
    std::vector<int64_t> size(c.args.begin(), c.args.end() - 1);
    return one(F::affine_grid(x, ember::Shape(ember::IntArrayRef(size)), c.args.back() != 0));
  }
  // calls_statistics.cpp's: counting, order statistics and distances.
  {
    static const char* const interpolations[] = {"linear", "lower", "higher", "midpoint", "nearest"};
    auto side = [&](size_t i) {
      return arg(i) == 0 ? std::optional<std::string_view>() : std::optional<std::string_view>(arg(i) == 1 ? "left" : "right");
    };
    if (op == "searchsorted")
      return one(ember::searchsorted(x, in.at(1), arg(0) != 0, arg(1) != 0, side(2), in.size() > 2 ? in.at(2) : ember::Tensor()));
    if (op == "bucketize") return one(ember::bucketize(x, in.at(1), false, arg(0) != 0));
    if (op == "bincount") return one(ember::bincount(x, in.size() > 1 ? in.at(1) : ember::Tensor(), arg(0)));
    if (op == "histc") return one(ember::histc(x, arg(0), c.args.at(1), c.args.at(2)));
    if (op == "histogram") {
      std::optional<std::pair<double, double>> range;
      if (arg(1) != 0) range = std::pair{c.args.at(2), c.args.at(3)};
      return two(ember::histogram(x, arg(0), range, in.size() > 1 ? in.at(1) : ember::Tensor(), arg(4) != 0));
    }
    if (op == "histogramdd") {
      std::optional<std::vector<double>> range;
      if (arg(1) != 0) {
        range.emplace();
        for (int64_t j = 0; j < x.size(-1); ++j) range->insert(range->end(), {c.args.at(2), c.args.at(3)});
      }
      auto [h, edges] = ember::histogramdd(x, arg(0), range, in.size() > 1 ? in.at(1) : ember::Tensor(), arg(4) != 0);
      return two({h, edges.empty() ? ember::Tensor() : edges[0]});
    }
    if (op == "median" || op == "nanmedian") {
      const bool nan = op == "nanmedian";
      if (arg(0) == -9) return one(nan ? ember::nanmedian(x) : ember::median(x));
      return two(nan ? ember::nanmedian(x, arg(0), arg(1) != 0) : ember::median(x, arg(0), arg(1) != 0));
    }
    if (op == "quantile" || op == "nanquantile") {
      const bool nan = op == "nanquantile";
      const std::optional<int64_t> dim = dim_or_all(1);
      const bool keep = arg(2) != 0;
      const std::string_view interp = interpolations[arg(3)];
      if (c.args.at(0) == -9)
        return one(nan ? ember::nanquantile(x, in.at(1), dim, keep, interp) : ember::quantile(x, in.at(1), dim, keep, interp));
      return one(nan ? ember::nanquantile(x, c.args.at(0), dim, keep, interp)
                     : ember::quantile(x, c.args.at(0), dim, keep, interp));
    }
    if (op == "cdist") return one(F::cdist(x, in.at(1), c.args.at(0), dim_or_all(1)));
    if (op == "pdist") return one(F::pdist(x, c.args.at(0)));
  }
  throw std::runtime_error("ember_side: no named op " + op);
}

/// The part of y that Call::inplace's mode writes.
ember::Tensor inplace_view(const ember::Tensor& y, int mode) {
  const int64_t n = y.size(0);
  if (mode == 2) return y.narrow(0, 1, n - 2);
  if (mode == 3) return y.as_strided({(n + 1) / 2}, {2}, y.storage_offset());
  return y;
}

/// Call::inplace: the op in place on a view of y = a * 1.
ember::Tensor inplace_result(const Call& c, const ember::Tensor& a, const ember::Tensor& b) {
  ember::Tensor y = a * 1.0;
  ember::Tensor v = inplace_view(y, c.inplace);
  const std::string& op = c.op;
  if (c.kind == Kind::Unary) {
    if (c.has_params) {
      if (op == "leaky_relu") v.leaky_relu_(c.p[0]);
      else if (op == "elu") v.elu_(c.p[0]);
      else if (op == "celu") v.celu_(c.p[0]);
      else if (op == "hardtanh") v.hardtanh_(c.p[0], c.p[1]);
      else if (op == "clamp") v.clamp_(ember::Scalar(c.p[0]), ember::Scalar(c.p[1]));
      else throw std::logic_error("ember_side: no in-place form of " + op + " with parameters");
      return y;
    }
#define EMBER_UNARY_OP(E, n, r) \
  if (op == #n) return v.n##_(), y;
#include <ember/ops/unary_list.def>
#undef EMBER_UNARY_OP
  } else {
    ember::Tensor bv = c.kind == Kind::Binary ? inplace_view(b, c.inplace) : ember::Tensor();
#define EMBER_BINARY_OP(E, n, r)                                  \
  if (op == #n) {                                                 \
    if (c.kind == Kind::Binary) v.n##_(bv);                       \
    else v.n##_(to_scalar(c.s));                                  \
    return y;                                                     \
  }
#include <ember/ops/binary_list.def>
#undef EMBER_BINARY_OP
  }
  throw std::logic_error("ember_side: no in-place op " + op);
}

/// The gradients of sum(op(a[, b]) * [1, 2, ...]).
Result gradients(const Call& c) {
  ember::Tensor a = to_ember(c.a).requires_grad_();
  ember::Tensor b = c.kind == Kind::Binary ? to_ember(c.b).requires_grad_() : ember::Tensor();
  ember::Tensor y = c.inplace                ? inplace_result(c, a, b)
                    : c.kind == Kind::Unary  ? unary(c, a)
                    : c.kind == Kind::Reduce ? reduce(c, a)
                    : c.kind == Kind::Binary ? binary(c.op, a, b)
                                             : binary(c.op, a, to_scalar(c.s));
  const std::vector<ember::Tensor> g = input_gradients(y, {a, b}, c.order);
  Result r;
  r.ok = true;
  r.out = from_ember(g[0]);
  if (b.defined()) r.more.push_back(from_ember(g[1]));
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

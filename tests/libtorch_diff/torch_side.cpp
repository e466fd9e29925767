// libtorch's half of the differential check (C++17, as libtorch's headers want): the same
// call through ATen. A Python scalar operand becomes a wrapped-number tensor, as PyTorch's
// argument parser makes it, so type promotion treats it as Python would.

#include "bridge.hpp"
#include "module_layout.hpp"

#include <ATen/ATen.h>
#include <ATen/ScalarOps.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/transformer.h>
#include <torch/nn/modules/transformerlayer.h>
#include <torch/nn/utils/rnn.h>
#include <torch/optim.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace ediff {
namespace {

c10::ScalarType torch_type(DT t) {
  switch (t) {
    case DT::Bool: return at::kBool;
    case DT::U8: return at::kByte;
    case DT::I8: return at::kChar;
    case DT::I32: return at::kInt;
    case DT::I64: return at::kLong;
    case DT::F16: return at::kHalf;
    case DT::BF16: return at::kBFloat16;
    case DT::F32: return at::kFloat;
    case DT::F64: return at::kDouble;
  }
  throw std::logic_error("torch_type");
}

DT from_torch_type(c10::ScalarType t) {
  for (DT d : kAllDT)
    if (torch_type(d) == t) return d;
  throw std::runtime_error(std::string("torch_side: result dtype ") + c10::toString(t) + " has no Ember counterpart");
}

/// Set while a call is run again in f32 because libtorch 1.13 has no f16 CPU kernel for it
/// (PyTorch 2 has them; they convert the operands to the common dtype f16, compute in f32 and
/// round, as Ember does). Operands whose common dtype is f16 are rounded to f16 and computed
/// in f32 (half_in_float), and f32 results rounded to f16 (from_torch).
bool g_half_in_float = false;

at::Tensor half_in_float(const at::Tensor& t) {
  return g_half_in_float && t.scalar_type() == at::kHalf ? t.to(at::kFloat) : t;
}
/// a and b, when their common dtype is f16, rounded to f16 and then taken to f32.
void common_half_in_float(at::Tensor& a, at::Tensor& b) {
  if (!g_half_in_float || at::result_type(a, b) != at::kHalf) return;
  a = a.to(at::kHalf).to(at::kFloat);
  b = b.to(at::kHalf).to(at::kFloat);  // a scalar operand is now a 0-d f32 tensor: the common dtype stays f32
}

at::Tensor to_torch(const Buf& b) {
  auto* data = const_cast<unsigned char*>(b.bytes.data());
  return at::from_blob(data, b.shape, at::TensorOptions().dtype(torch_type(b.dt))).clone();
}

Buf from_torch(const at::Tensor& r) {
  const at::Tensor t = g_half_in_float && r.scalar_type() == at::kFloat ? r.to(at::kHalf) : r;
  Buf b;
  b.dt = from_torch_type(t.scalar_type());
  // A ZeroTensor (some second-order formulas return one) has no data to copy.
  at::Tensor c = t._is_zerotensor() ? at::zeros(t.sizes(), t.scalar_type()) : t.contiguous();
  b.shape.assign(c.sizes().begin(), c.sizes().end());
  b.bytes.resize(c.nbytes());
  if (c.nbytes() > 0) std::memcpy(b.bytes.data(), c.data_ptr(), b.bytes.size());
  return b;
}

at::Tensor wrapped(const ScalarArg& s) {
  at::Scalar v = s.kind == ScalarArg::Bool ? at::Scalar(s.i != 0)
                 : s.kind == ScalarArg::Int ? at::Scalar(s.i)
                                            : at::Scalar(s.f);
  at::Tensor t = c10::scalar_to_tensor(v);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

at::Tensor unary(const Call& c, const at::Tensor& x0) {
  const at::Tensor x = half_in_float(x0);
  const std::string& op = c.op;
  const double* p = c.p;
  const bool hp = c.has_params;
  if (op == "neg") return at::neg(x);
  if (op == "abs") return at::abs(x);
  if (op == "sign") return at::sign(x);
  if (op == "exp") return at::exp(x);
  if (op == "exp2") return at::exp2(x);
  if (op == "expm1") return at::expm1(x);
  if (op == "log") return at::log(x);
  if (op == "log2") return at::log2(x);
  if (op == "log10") return at::log10(x);
  if (op == "log1p") return at::log1p(x);
  if (op == "sqrt") return at::sqrt(x);
  if (op == "rsqrt") return at::rsqrt(x);
  if (op == "reciprocal") return at::reciprocal(x);
  if (op == "square") return at::square(x);
  if (op == "sin") return at::sin(x);
  if (op == "cos") return at::cos(x);
  if (op == "tan") return at::tan(x);
  if (op == "asin") return at::asin(x);
  if (op == "acos") return at::acos(x);
  if (op == "atan") return at::atan(x);
  if (op == "sinh") return at::sinh(x);
  if (op == "cosh") return at::cosh(x);
  if (op == "tanh") return at::tanh(x);
  if (op == "asinh") return at::asinh(x);
  if (op == "acosh") return at::acosh(x);
  if (op == "atanh") return at::atanh(x);
  if (op == "sigmoid") return at::sigmoid(x);
  if (op == "logit") return hp ? at::logit(x, p[0]) : at::logit(x);
  if (op == "relu") return at::relu(x);
  if (op == "relu6") return at::relu6(x);
  if (op == "leaky_relu") return at::leaky_relu(x, hp ? p[0] : 0.01);
  if (op == "elu") return at::elu(x, hp ? p[0] : 1.0);
  if (op == "selu") return at::selu(x);
  if (op == "celu") return at::celu(x, hp ? p[0] : 1.0);
  if (op == "gelu") return at::gelu(x);
  if (op == "gelu_tanh") return at::gelu(x, "tanh");
  if (op == "silu") return at::silu(x);
  if (op == "mish") return at::mish(x);
  if (op == "softplus") return hp ? at::softplus(x, p[0], p[1]) : at::softplus(x);
  if (op == "softsign") return x / (x.abs() + 1);  // torch.nn.functional.softsign
  if (op == "hardtanh") return hp ? at::hardtanh(x, p[0], p[1]) : at::hardtanh(x);
  if (op == "hardsigmoid") return at::hardsigmoid(x);
  if (op == "hardswish") return at::hardswish(x);
  if (op == "erf") return at::erf(x);
  if (op == "erfc") return at::erfc(x);
  if (op == "erfinv") return at::erfinv(x);
  if (op == "lgamma") return at::lgamma(x);
  if (op == "digamma") return hp ? at::polygamma(static_cast<int64_t>(p[0]), x) : at::digamma(x);
  if (op == "sinc") return at::sinc(x);
  if (op == "i0") return at::i0(x);
  if (op == "i0e") return at::special_i0e(x);
  if (op == "i1") return at::special_i1(x);
  if (op == "i1e") return at::special_i1e(x);
  if (op == "erfcx") return at::special_erfcx(x);
  if (op == "entr") return at::special_entr(x);
  if (op == "ndtr") return at::special_ndtr(x);
  if (op == "ndtri") return at::special_ndtri(x);
  if (op == "log_ndtr") return at::special_log_ndtr(x);
  if (op == "floor") return at::floor(x);
  if (op == "ceil") return at::ceil(x);
  if (op == "round") return at::round(x);
  if (op == "trunc") return at::trunc(x);
  if (op == "frac") return at::frac(x);
  if (op == "clamp")
    return hp ? at::clamp(x, at::Scalar(p[0]), at::Scalar(p[1])) : at::clamp(x, c10::optional<at::Scalar>(), c10::optional<at::Scalar>());
  if (op == "nan_to_num") return hp ? at::nan_to_num(x, p[0], p[1], p[2]) : at::nan_to_num(x);
  if (op == "isnan") return at::isnan(x);
  if (op == "isinf") return at::isinf(x);
  if (op == "isfinite") return at::isfinite(x);
  if (op == "signbit") return at::signbit(x);
  if (op == "logical_not") return at::logical_not(x);
  if (op == "bitwise_not") return at::bitwise_not(x);
  throw std::logic_error("torch_side: no unary op " + op);
}

at::Tensor binary(const std::string& op, at::Tensor a, at::Tensor b) {
  common_half_in_float(a, b);
  if (op == "add") return at::add(a, b);
  if (op == "sub") return at::sub(a, b);
  if (op == "mul") return at::mul(a, b);
  if (op == "div") return at::div(a, b);
  if (op == "div_trunc") return at::div(a, b, "trunc");
  if (op == "div_floor") return at::div(a, b, "floor");
  if (op == "remainder") return at::remainder(a, b);
  if (op == "fmod") return at::fmod(a, b);
  if (op == "pow") return at::pow(a, b);
  if (op == "atan2") return at::atan2(a, b);
  if (op == "maximum") return at::maximum(a, b);
  if (op == "minimum") return at::minimum(a, b);
  if (op == "fmax") return at::fmax(a, b);
  if (op == "fmin") return at::fmin(a, b);
  if (op == "hypot") return at::hypot(a, b);
  if (op == "copysign") return at::copysign(a, b);
  if (op == "xlogy") return at::xlogy(a, b);
  if (op == "xlog1py") return at::special_xlog1py(a, b);
  if (op == "logaddexp") return at::logaddexp(a, b);
  if (op == "logaddexp2") return at::logaddexp2(a, b);
  if (op == "heaviside") return at::heaviside(a, b);
  if (op == "relu_backward") return at::threshold_backward(a, b, 0);
  if (op == "gelu_backward") return at::gelu_backward(a, b);
  if (op == "silu_backward") return at::silu_backward(a, b);
  if (op == "eq") return at::eq(a, b);
  if (op == "ne") return at::ne(a, b);
  if (op == "lt") return at::lt(a, b);
  if (op == "le") return at::le(a, b);
  if (op == "gt") return at::gt(a, b);
  if (op == "ge") return at::ge(a, b);
  if (op == "logical_and") return at::logical_and(a, b);
  if (op == "logical_or") return at::logical_or(a, b);
  if (op == "logical_xor") return at::logical_xor(a, b);
  if (op == "bitwise_and") return at::bitwise_and(a, b);
  if (op == "bitwise_or") return at::bitwise_or(a, b);
  if (op == "bitwise_xor") return at::bitwise_xor(a, b);
  if (op == "bitwise_left_shift") return at::bitwise_left_shift(a, b);
  if (op == "bitwise_right_shift") return at::bitwise_right_shift(a, b);
  throw std::logic_error("torch_side: no binary op " + op);
}

at::Tensor reduce(const Call& c, const at::Tensor& x0) {
  const at::Tensor x = half_in_float(x0);
  const std::string& op = c.op;
  const bool all = c.dims.empty() && !c.keepdim;
  const at::IntArrayRef dims(c.dims);
  auto one_dim = [&]() {
    if (c.dims.size() != 1) throw std::logic_error("torch_side: " + op + " takes one dim");
    return c.dims[0];
  };
  if (op == "sum") return all ? at::sum(x) : at::sum(x, dims, c.keepdim);
  if (op == "nansum") return all ? at::nansum(x) : at::nansum(x, dims, c.keepdim);
  if (op == "prod") return all ? at::prod(x) : at::prod(x, one_dim(), c.keepdim);
  if (op == "mean") return all ? at::mean(x) : at::mean(x, dims, c.keepdim);
  if (op == "amax") return at::amax(x, dims, c.keepdim);
  if (op == "amin") return at::amin(x, dims, c.keepdim);
  if (op == "all") return all ? at::all(x) : at::all(x, one_dim(), c.keepdim);
  if (op == "any") return all ? at::any(x) : at::any(x, one_dim(), c.keepdim);
  if (op == "count_nonzero") {
    if (c.keepdim) throw std::logic_error("torch_side: count_nonzero has no keepdim");
    return at::count_nonzero(x, dims);
  }
  if (op == "norm1") return at::linalg_vector_norm(x, 1, dims, c.keepdim);
  if (op == "norm2") return at::linalg_vector_norm(x, 2, dims, c.keepdim);
  if (op == "norm_inf") return at::linalg_vector_norm(x, INFINITY, dims, c.keepdim);
  throw std::logic_error("torch_side: no reduction " + op);
}

/// The gradients of sum(y * [1, 2, ...]) with respect to xs, or with order 2 the second-order
/// gradients, as ember_side.cpp's input_gradients.
std::vector<at::Tensor> input_gradients(const at::Tensor& y, const std::vector<at::Tensor>& xs, int order) {
  at::Tensor w = at::arange(1, y.numel() + 1).to(y.scalar_type()).view(y.sizes());
  std::vector<at::Tensor> live, out(xs.size());
  for (const at::Tensor& x : xs)
    if (x.defined() && x.requires_grad()) live.push_back(x);
  std::vector<at::Tensor> g;
  if (order == 1) {
    (y * w).sum().backward();
    for (const at::Tensor& x : live) g.push_back(x.grad());
  } else {
    std::vector<at::Tensor> g1 = torch::autograd::grad({(y * w).sum()}, live, {}, true, true, true);
    at::Tensor s;
    for (const at::Tensor& gi : g1) {
      if (!gi.defined() || !gi.requires_grad()) continue;
      const DT t = from_torch_type(gi.scalar_type());
      at::Tensor term = (gi * to_torch(second_order_weights(t, gi.sizes().vec()))).sum();
      s = s.defined() ? s + term : term;
    }
    g = s.defined() ? torch::autograd::grad({s}, live, {}, false, false, true) : std::vector<at::Tensor>(live.size());
  }
  for (size_t i = 0, k = 0; i < xs.size(); ++i)
    if (xs[i].defined() && xs[i].requires_grad()) {
      out[i] = g[k].defined() ? g[k] : at::zeros_like(xs[i]);
      ++k;
    }
  return out;
}

/// A Named call's gradients as its Result (bridge.hpp).
Result gradient_result(const std::vector<at::Tensor>& gs) { return gradient_result(gs, from_torch); }

Result named(const Call& c) {
  std::vector<at::Tensor> in;
  bool all_half = true;
  for (const Buf& b : c.ins) in.push_back(to_torch(b)), all_half = all_half && b.dt == DT::F16;
  if (all_half)  // mixed operands keep their dtypes (a mixed matmul is refused either way)
    for (at::Tensor& t : in) t = half_in_float(t);
  const std::string& op = c.op;
  if (c.grad)
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i].is_floating_point() && differentiable_input(c, i) && !(c.skip_first && i == 0)) in[i].requires_grad_();
  auto arg = [&](size_t i) { return static_cast<int64_t>(c.args.at(i)); };
  Result r;
  r.ok = true;
  // With c.grad: the gradients of sum(y * [1, 2, ...]) for the first output y, one per input
  // (an empty buffer for those that take none), as ember_side.cpp.
  auto grads = [&](const at::Tensor& y) {
    return gradient_result(input_gradients(y, in, c.order));
  };
  auto two = [&](const std::tuple<at::Tensor, at::Tensor>& p) {
    if (c.grad) return grads(std::get<0>(p));
    r.out = from_torch(std::get<0>(p));
    r.more.push_back(from_torch(std::get<1>(p)));
    return r;
  };
  auto one = [&](const at::Tensor& t) {
    if (c.grad) return grads(t);
    r.out = from_torch(t);
    return r;
  };
  auto scalar = [&](size_t i) {
    return c.args.at(3) != 0 ? at::Scalar(static_cast<int64_t>(c.args.at(i))) : at::Scalar(c.args.at(i));
  };
  auto options = [&](size_t i) {
    return c.args.at(i) < 0 ? at::TensorOptions() : at::TensorOptions().dtype(torch_type(static_cast<DT>(arg(i))));
  };
  auto ints = [&](size_t i, size_t n) {
    std::vector<int64_t> v;
    for (size_t k = 0; k < n; ++k) v.push_back(arg(i + k));
    return v;
  };
  auto bias = [&](size_t i) { return in.size() > i ? c10::optional<at::Tensor>(in[i]) : c10::optional<at::Tensor>(); };
  if (op == "conv2d") return one(at::conv2d(in.at(0), in.at(1), bias(2), ints(0, 2), ints(2, 2), ints(4, 2), arg(6)));
  if (op == "conv_transpose2d")
    return one(at::conv_transpose2d(in.at(0), in.at(1), bias(2), ints(0, 2), ints(2, 2), ints(4, 2), arg(6), ints(7, 2)));
  if (op == "max_pool2d")
    return two(at::max_pool2d_with_indices(in.at(0), ints(0, 2), ints(2, 2), ints(4, 2), ints(6, 2), arg(8) != 0));
  if (op == "avg_pool2d")
    return one(at::avg_pool2d(in.at(0), ints(0, 2), ints(2, 2), ints(4, 2), arg(6) != 0, arg(7) != 0,
                              arg(8) != 0 ? c10::optional<int64_t>(arg(8)) : c10::nullopt));
  if (op == "adaptive_avg_pool2d") return one(at::adaptive_avg_pool2d(in.at(0), ints(0, 2)));
  if (op == "adaptive_max_pool2d") return two(at::adaptive_max_pool2d(in.at(0), ints(0, 2)));
  if (op == "interpolate") {
    const auto size = ints(0, 2);
    const bool scaled = c.args.at(4) != 0;
    const c10::optional<double> sh = scaled ? c10::optional<double>(c.args.at(4)) : c10::nullopt;
    const c10::optional<double> sw = scaled ? c10::optional<double>(c.args.at(5)) : c10::nullopt;
    const bool corners = arg(3) != 0;
    switch (arg(2)) {
      case 0: return one(at::upsample_nearest2d(in.at(0), size, sh, sw));
      case 1: return one(at::upsample_bilinear2d(in.at(0), size, corners, sh, sw));
      case 2: return one(at::upsample_bicubic2d(in.at(0), size, corners, sh, sw));
      case 3: return one(at::_upsample_nearest_exact2d(in.at(0), size, sh, sw));
      default: return one(at::adaptive_avg_pool2d(in.at(0), size));  // mode 'area'
    }
  }
  if (op == "interpolate1d" || op == "interpolate3d") {
    const size_t nd = op == "interpolate1d" ? 1 : 3;
    const auto size = ints(0, nd);
    const bool corners = arg(nd + 1) != 0, scaled = c.args.at(nd + 2) != 0;
    auto scale = [&](size_t d) { return scaled ? c10::optional<double>(c.args.at(nd + 2 + d)) : c10::nullopt; };
    const at::Tensor& x0 = in.at(0);
    if (nd == 1) {
      switch (arg(1)) {
        case 0: return one(at::upsample_nearest1d(x0, size, scale(0)));
        case 1: return one(at::upsample_linear1d(x0, size, corners, scale(0)));
        case 3: return one(at::_upsample_nearest_exact1d(x0, size, scale(0)));
        default: return one(at::adaptive_avg_pool1d(x0, size));
      }
    }
    switch (arg(3)) {
      case 0: return one(at::upsample_nearest3d(x0, size, scale(0), scale(1), scale(2)));
      case 1: return one(at::upsample_trilinear3d(x0, size, corners, scale(0), scale(1), scale(2)));
      case 3: return one(at::_upsample_nearest_exact3d(x0, size, scale(0), scale(1), scale(2)));
      default: return one(at::adaptive_avg_pool3d(x0, size));
    }
  }
  if (op == "interpolate_aa") {
    const bool corners = arg(3) != 0;
    if (arg(2) == 1) return one(at::_upsample_bilinear2d_aa(in.at(0), ints(0, 2), corners, c10::nullopt, c10::nullopt));
    return one(at::_upsample_bicubic2d_aa(in.at(0), ints(0, 2), corners, c10::nullopt, c10::nullopt));
  }
  if (op == "pad") {
    static const char* const modes[] = {"constant", "reflect", "replicate", "circular"};
    return one(at::pad(in.at(0), ints(1, 4), modes[arg(0)], arg(0) == 0 ? c10::optional<double>(1.5) : c10::nullopt));
  }
  auto opt = [&](size_t i) {
    return in.size() > i && in[i].numel() > 0 ? c10::optional<at::Tensor>(in[i]) : c10::optional<at::Tensor>();
  };
  if (op == "cross_entropy")
    return one(at::cross_entropy_loss(in.at(0), in.at(1), opt(2), arg(1), arg(0), c.args.at(2)));
  if (op == "nll_loss") return one(at::nll_loss_nd(in.at(0), in.at(1), opt(2), arg(1), arg(0)));
  if (op == "smooth_l1_loss") return one(at::smooth_l1_loss(in.at(0), in.at(1), arg(0), c.args.at(1)));
  if (op == "huber_loss") return one(at::huber_loss(in.at(0), in.at(1), arg(0), c.args.at(1)));
  if (op == "bce_with_logits")
    return one(at::binary_cross_entropy_with_logits(in.at(0), in.at(1), opt(2), opt(3), arg(0)));
  if (op == "kl_div") return one(at::kl_div(in.at(0), in.at(1), arg(0), arg(1) != 0));
  if (op == "layer_norm") {
    std::vector<int64_t> shape;
    for (int64_t d = in.at(0).dim() - arg(0); d < in.at(0).dim(); ++d) shape.push_back(in.at(0).size(d));
    return one(at::layer_norm(in.at(0), shape, opt(1), opt(2), c.args.at(1)));
  }
  if (op == "group_norm") return one(at::group_norm(in.at(0), arg(0), opt(1), opt(2), c.args.at(1)));
  if (op == "batch_norm") {
    at::Tensor rm = in.at(1).clone(), rv = in.at(2).clone();
    if (c.grad) return grads(at::batch_norm(in.at(0), opt(3), opt(4), rm, rv, arg(0) != 0, c.args.at(1), c.args.at(2), false));
    r.out = from_torch(at::batch_norm(in.at(0), opt(3), opt(4), rm, rv, arg(0) != 0, c.args.at(1), c.args.at(2), false));
    r.more.push_back(from_torch(rm));
    r.more.push_back(from_torch(rv));
    return r;
  }
  if (op == "grid_sample") return one(at::grid_sampler(in.at(0), in.at(1), arg(0), arg(1), arg(2) != 0));
  if (op == "einsum") return one(at::einsum(c.text, in));
  if (op == "unfold") return one(at::im2col(in.at(0), ints(0, 2), ints(2, 2), ints(4, 2), ints(6, 2)));
  if (op == "fold") return one(at::col2im(in.at(0), ints(0, 2), ints(2, 2), ints(4, 2), ints(6, 2), ints(8, 2)));
  if (op == "embedding_bag")
    return one(std::get<0>(at::embedding_bag(in.at(1), in.at(0), in.at(2), false, arg(0), false, c10::nullopt,
                                             arg(1) != 0)));
  if (op == "arange") {
    if (c.args.at(4) < 0)  // dtype inferred from the scalars, as torch.arange
      return one(at::arange(scalar(0), scalar(1), scalar(2)));
    return one(at::arange(scalar(0), scalar(1), scalar(2), options(4)));
  }
  if (op == "linspace") return one(at::linspace(c.args.at(0), c.args.at(1), arg(2), options(3)));
  if (op == "cat") return one(at::cat(in, arg(0)));
  if (op == "stack") return one(at::stack(in, arg(0)));
  const at::Tensor& x = in.at(0);
  if (op == "unique") {
    auto r3 = at::_unique2(x, /*sorted=*/true, /*return_inverse=*/false, /*return_counts=*/true);
    return two({std::get<0>(r3), std::get<2>(r3)});
  }
  if (op == "nonzero") return one(at::nonzero(x));
  if (op == "index_select") return one(at::index_select(x, arg(0), in.at(1)));
  if (op == "gather") return one(at::gather(x, arg(0), in.at(1)));
  if (op == "scatter_add") return one(at::scatter_add(x, arg(0), in.at(1), in.at(2)));
  if (op == "masked_select") return one(at::masked_select(x, in.at(1)));
  if (op == "cumsum") return one(at::cumsum(x, arg(0)));
  if (op == "cumprod") return one(at::cumprod(x, arg(0)));
  if (op == "logcumsumexp") return one(at::logcumsumexp(x, arg(0)));
  if (op == "softmax") return one(at::softmax(x, arg(0)));
  if (op == "log_softmax") return one(at::log_softmax(x, arg(0)));
  if (op == "cummax") return two(at::cummax(x, arg(0)));
  if (op == "cummin") return two(at::cummin(x, arg(0)));
  if (op == "argmax") return one(at::argmax(x, arg(0), arg(1) != 0));
  if (op == "argmin") return one(at::argmin(x, arg(0), arg(1) != 0));
  if (op == "max_dim") return two(at::max(x, arg(0), arg(1) != 0));
  if (op == "min_dim") return two(at::min(x, arg(0), arg(1) != 0));
  if (op == "var") return one(at::var(x, at::OptionalIntArrayRef({arg(0)}), c10::optional<int64_t>(arg(1)), arg(2) != 0));
  if (op == "std") return one(at::std(x, at::OptionalIntArrayRef({arg(0)}), c10::optional<int64_t>(arg(1)), arg(2) != 0));
  if (op == "logsumexp") return one(at::logsumexp(x, {arg(0)}, arg(1) != 0));
  if (op == "sort") return two(at::sort(x, /*stable=*/true, arg(0), arg(1) != 0));
  if (op == "topk") return one(std::get<0>(at::topk(x, arg(0), arg(1), arg(2) != 0)));
  if (op == "kthvalue") return one(std::get<0>(at::kthvalue(x, arg(0), arg(1))));
  if (op == "where") return one(at::where(in.at(0), in.at(1), in.at(2)));
  if (op == "lerp") return one(at::lerp(in.at(0), in.at(1), in.at(2)));
  if (op == "addcmul") return one(at::addcmul(in.at(0), in.at(1), in.at(2), c.args.at(0)));
  if (op == "addcdiv") return one(at::addcdiv(in.at(0), in.at(1), in.at(2), c.args.at(0)));
  if (op == "clamp_tensors") return one(at::clamp(x, in.at(1), in.at(2)));
  if (op == "round_decimals") return one(at::round(x, arg(0)));
  if (op == "to") return one(x.to(torch_type(static_cast<DT>(arg(0)))));
  if (op == "matmul") return one(at::matmul(in.at(0), in.at(1)));
  // calls_more.cpp's families.
  auto dim_or_all = [&](size_t i) { return arg(i) == -9 ? c10::optional<int64_t>() : c10::optional<int64_t>(arg(i)); };
  if (op == "scatter") return one(at::scatter(x, arg(0), in.at(1), in.at(2)));
  if (op == "scatter_value") return one(at::scatter(x, arg(0), in.at(1), at::Scalar(c.args.at(1))));
  if (op == "scatter_reduce") {
    static const char* const reduce[] = {"sum", "prod", "mean", "amax", "amin"};
    return one(at::scatter_reduce(x, arg(0), in.at(1), in.at(2), reduce[arg(1)], arg(2) != 0));
  }
  if (op == "index_add") return one(at::index_add(x, arg(0), in.at(1), in.at(2), at::Scalar(c.args.at(1))));
  if (op == "index_copy") return one(at::index_copy(x, arg(0), in.at(1), in.at(2)));
  if (op == "index_put") {
    c10::List<c10::optional<at::Tensor>> idx;
    for (size_t i = 1; i + 1 < in.size(); ++i) idx.push_back(in[i]);
    return one(at::index_put(x, idx, in.back(), arg(0) != 0));
  }
  if (op == "masked_fill") return one(at::masked_fill(x, in.at(1), at::Scalar(c.args.at(0))));
  if (op == "flip") {
    std::vector<int64_t> dims;
    for (int64_t k = 0; k < x.dim(); ++k)
      if (arg(0) >> k & 1) dims.push_back(k);
    return one(at::flip(x, dims));
  }
  if (op == "roll") {
    if (arg(1) == -9) return one(at::roll(x, {arg(0)}));
    return one(at::roll(x, {arg(0)}, {arg(1)}));
  }
  if (op == "repeat_interleave") return one(at::repeat_interleave(x, arg(0), dim_or_all(1)));
  if (op == "repeat") return one(x.repeat(ints(0, c.args.size())));
  if (op == "tril") return one(at::tril(x, arg(0)));
  if (op == "triu") return one(at::triu(x, arg(0)));
  if (op == "diag") return one(at::diag(x, arg(0)));
  if (op == "diagonal") return one(at::diagonal(x, arg(0), arg(1), arg(2)));
  if (op == "pixel_shuffle") return one(at::pixel_shuffle(x, arg(0)));
  if (op == "pixel_unshuffle") return one(at::pixel_unshuffle(x, arg(0)));
  if (op == "channel_shuffle") return one(at::channel_shuffle(x, arg(0)));
  if (op == "norm") {  // Tensor.norm(p, dim, keepdim)
    if (arg(1) == -9) return one(arg(2) != 0 ? at::norm(x, at::Scalar(c.args.at(0)), at::IntArrayRef{0, 1}, true)
                                             : at::norm(x, at::Scalar(c.args.at(0))));
    return one(at::norm(x, at::Scalar(c.args.at(0)), at::IntArrayRef{arg(1)}, arg(2) != 0));
  }
  if (op == "var_mean")
    return two(at::var_mean(x, at::OptionalIntArrayRef({arg(0)}), c10::optional<int64_t>(arg(1)), false));
  if (op == "one_hot") return one(at::one_hot(x, arg(0)));
  if (op == "mse_loss") return one(at::mse_loss(x, in.at(1), arg(0)));
  if (op == "l1_loss") return one(at::l1_loss(x, in.at(1), arg(0)));
  if (op == "soft_margin_loss") return one(at::soft_margin_loss(x, in.at(1), arg(0)));
  if (op == "hinge_embedding_loss") return one(at::hinge_embedding_loss(x, in.at(1), c.args.at(0), arg(1)));
  if (op == "binary_cross_entropy") return one(at::binary_cross_entropy(x, in.at(1), opt(2), arg(0)));
  if (op == "margin_ranking_loss") return one(at::margin_ranking_loss(x, in.at(1), in.at(2), c.args.at(0), arg(1)));
  if (op == "cosine_embedding_loss") return one(at::cosine_embedding_loss(x, in.at(1), in.at(2), c.args.at(0), arg(1)));
  if (op == "triplet_margin_loss")
    return one(at::triplet_margin_loss(x, in.at(1), in.at(2), c.args.at(0), c.args.at(1), c.args.at(2), arg(3) != 0, arg(4)));
  if (op == "multi_margin_loss") return one(at::multi_margin_loss(x, in.at(1), arg(0), c.args.at(1), opt(2), arg(2)));
  if (op == "multilabel_margin_loss") return one(at::multilabel_margin_loss(x, in.at(1), arg(0)));
  if (op == "poisson_nll_loss") return one(at::poisson_nll_loss(x, in.at(1), arg(0) != 0, arg(1) != 0, c.args.at(2), arg(3)));
  if (op == "ctc_loss") {
    auto lengths = [&](size_t i) {
      const at::Tensor t = in.at(i).contiguous();
      return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
    };
    return one(at::ctc_loss(at::log_softmax(x, 2), in.at(1), lengths(2), lengths(3), arg(0), arg(1), arg(2) != 0));
  }
  if (op == "conv1d") return one(at::conv1d(x, in.at(1), bias(2), ints(0, 1), ints(1, 1), ints(2, 1), arg(3)));
  if (op == "conv_transpose1d")
    return one(at::conv_transpose1d(x, in.at(1), bias(2), ints(0, 1), ints(1, 1), ints(2, 1), arg(3), ints(4, 1)));
  if (op == "max_pool1d") return two(at::max_pool1d_with_indices(x, ints(0, 1), ints(1, 1), ints(2, 1), ints(3, 1), arg(4) != 0));
  if (op == "avg_pool1d") return one(at::avg_pool1d(x, ints(0, 1), ints(1, 1), ints(2, 1), arg(3) != 0, arg(4) != 0));
  if (op == "adaptive_avg_pool1d") return one(at::adaptive_avg_pool1d(x, {arg(0)}));
  if (op == "adaptive_max_pool1d") return two(at::adaptive_max_pool1d(x, {arg(0)}));
  if (op == "conv3d") return one(at::conv3d(x, in.at(1), bias(2), ints(0, 3), ints(3, 3), ints(6, 3), arg(9)));
  if (op == "max_pool3d")
    return two(at::max_pool3d_with_indices(x, ints(0, 3), ints(3, 3), ints(6, 3), ints(9, 3), arg(12) != 0));
  if (op == "avg_pool3d")
    return one(at::avg_pool3d(x, ints(0, 3), ints(3, 3), ints(6, 3), arg(9) != 0, arg(10) != 0,
                              arg(11) != 0 ? c10::optional<int64_t>(arg(11)) : c10::nullopt));
  if (op == "max_unpool2d") return one(at::max_unpool2d(x, in.at(1), ints(0, 2)));
  if (op == "instance_norm") {
    // torch.nn.functional.instance_norm's own check, which ATen's op leaves to it.
    if (x.dim() >= 2 && x.numel() / std::max<int64_t>(1, x.size(0) * x.size(1)) == 1)
      throw std::runtime_error("Expected more than 1 spatial element when training (torch.nn.functional)");
    return one(at::instance_norm(x, opt(1), opt(2), {}, {}, true, 0.1, c.args.at(0), false));
  }
  if (op == "embedding") {  // torch.nn.functional.embedding: a negative padding_idx counts from the end
    const int64_t padding = arg(0) < -1 ? arg(0) + x.size(0) : arg(0);
    const double max_norm = c.args.size() > 2 ? c.args[2] : 0;
    if (max_norm > 0) {  // and with max_norm, the rows it reads renormalised in place first, without grad
      c10::AutoGradMode no_grad(false);
      at::Tensor table = x;  // shares x's storage
      at::embedding_renorm_(table, in.at(1).contiguous(), max_norm, c.args.size() > 3 ? c.args[3] : 2.0);
    }
    at::Tensor y = at::embedding(x, in.at(1), padding, arg(1) != 0);
    if (max_norm > 0 && !c.grad) return two(std::make_tuple(y, x));
    return one(y);
  }
  if (op == "cosine_similarity") return one(at::cosine_similarity(x, in.at(1), arg(0), c.args.at(1)));
  if (op == "pairwise_distance") return one(at::pairwise_distance(x, in.at(1), c.args.at(0), c.args.at(1), arg(2) != 0));
  if (op == "glu") return one(at::glu(x, arg(0)));
  if (op == "prelu") return one(at::prelu(x, in.at(1)));
  if (op == "sdpa") {
#if TORCH_VERSION_MAJOR >= 2
    return one(at::scaled_dot_product_attention(x, in.at(1), in.at(2), opt(3), 0.0, arg(0) != 0,
                                                c.args.at(1) != 0 ? c10::optional<double>(c.args.at(1)) : c10::nullopt));
#else
    // 1.13's op has no scale: an explicit one scales q by scale * sqrt(E) against its 1/sqrt(E).
    at::Tensor q = c.args.at(1) != 0 ? x * (c.args.at(1) * std::sqrt(static_cast<double>(x.size(-1)))) : x;
    return one(std::get<0>(at::_scaled_dot_product_attention(q, in.at(1), in.at(2), opt(3), 0.0, false, arg(0) != 0)));
#endif
  }
  if (op == "index_expr" || op == "index_put_expr") {
    namespace I = at::indexing;
    std::vector<I::TensorIndex> spec;
    size_t next = 1;
    for (double a : c.args) {
      switch (static_cast<int>(a)) {
        case 0: spec.emplace_back(I::Slice()); break;
        case 1: spec.emplace_back(I::Slice(1, c10::nullopt, 2)); break;
        case 2: spec.emplace_back(I::None); break;
        case 3: spec.emplace_back(I::Ellipsis); break;
        case 4: spec.emplace_back(1); break;
        case 5: spec.emplace_back(-1); break;
        case 6: spec.emplace_back(I::Slice(-3, -1)); break;
        default: spec.emplace_back(in.at(next++)); break;
      }
    }
    if (op == "index_expr") return one(x.index(spec));
    at::Tensor y = x * 1.0;
    y.index_put_(spec, in.back());
    return one(y);
  }
  if (op == "conv_padded") {
    // As torch.nn.ConvNd.forward: a padding mode other than zeros pads first (by name: d (k - 1)
    // in total per dim, the extra element after) and convolves without padding.
    const int64_t nd = arg(0), name = arg(1), mode = arg(2), groups = arg(3);
    const auto stride = ints(4, nd), numbers = ints(4 + nd, nd), dilation = ints(4 + 2 * nd, nd);
    const at::Tensor& w = in.at(1);
    auto conv = [&](const at::Tensor& input, c10::string_view pad_name, at::IntArrayRef pad) {
      const auto b = bias(2);
      if (!pad_name.empty()) {
        if (nd == 1) return at::conv1d(input, w, b, stride, pad_name, dilation, groups);
        if (nd == 2) return at::conv2d(input, w, b, stride, pad_name, dilation, groups);
        return at::conv3d(input, w, b, stride, pad_name, dilation, groups);
      }
      if (nd == 1) return at::conv1d(input, w, b, stride, pad, dilation, groups);
      if (nd == 2) return at::conv2d(input, w, b, stride, pad, dilation, groups);
      return at::conv3d(input, w, b, stride, pad, dilation, groups);
    };
    static const char* const modes[] = {"zeros", "reflect", "replicate", "circular"};
    if (mode == 0) return one(name == 0 ? conv(x, "", numbers) : conv(x, name == 1 ? "same" : "valid", {}));
    std::vector<int64_t> pad;  // F.pad's order: the last dim first, (before, after) each
    for (int64_t d = nd - 1; d >= 0; --d) {
      int64_t before = numbers[static_cast<size_t>(d)], after = before;
      if (name == 2) before = after = 0;
      if (name == 1) {
        const int64_t total = dilation[static_cast<size_t>(d)] * (w.size(2 + d) - 1);
        before = total / 2, after = total - total / 2;
      }
      pad.push_back(before), pad.push_back(after);
    }
    return one(conv(at::pad(x, pad, modes[mode]), "", std::vector<int64_t>(static_cast<size_t>(nd), 0)));
  }
  // The transformer modules, as ember_side.cpp's.
  auto transformer_module = [&](auto& m, const std::vector<std::string>& names, size_t data) {
    m->to(x.scalar_type());
    m->eval();  // no dropout
    auto params = m->named_parameters();
    {
      c10::AutoGradMode no_grad(false);
      for (size_t k = 0; k < names.size(); ++k) params[names[k]].copy_(in.at(data + k));
    }
    std::vector<at::Tensor> xs(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(data));
    for (const std::string& n : names) xs.push_back(params[n]);
    return xs;
  };
  auto opt_mask = [&](size_t i) { return in.at(i).numel() > 0 ? in.at(i) : at::Tensor(); };
  if (op == "encoder_layer") {
    const std::vector<std::string> names = encoder_layer_parameter_names();
    torch::nn::TransformerEncoderLayerOptions o(x.size(-1), arg(0));
    o.dim_feedforward(arg(1)).dropout(0.0);
    if (arg(2)) o.activation(torch::kGELU);
    torch::nn::TransformerEncoderLayer m(o);
    const std::vector<at::Tensor> xs = transformer_module(m, names, 1);
    const size_t masks = 1 + names.size();
    at::Tensor y = m->forward(x, opt_mask(masks), opt_mask(masks + 1));
    if (!c.grad) return one(y);
    return gradient_result(input_gradients(y, xs, c.order));
  }
  if (op == "decoder_layer") {
    const std::vector<std::string> names = decoder_layer_parameter_names();
    torch::nn::TransformerDecoderLayerOptions o(x.size(-1), arg(0));
    o.dim_feedforward(arg(1)).dropout(0.0);
    if (arg(2)) o.activation(torch::kGELU);
    torch::nn::TransformerDecoderLayer m(o);
    const std::vector<at::Tensor> xs = transformer_module(m, names, 2);
    const size_t masks = 2 + names.size();
    at::Tensor y = m->forward(x, in.at(1), opt_mask(masks), opt_mask(masks + 1), opt_mask(masks + 2), opt_mask(masks + 3));
    if (!c.grad) return one(y);
    return gradient_result(input_gradients(y, xs, c.order));
  }
  if (op == "transformer") {
    const std::vector<std::string> names = transformer_parameter_names(static_cast<int>(arg(3)), static_cast<int>(arg(4)));
    torch::nn::TransformerOptions o(x.size(-1), arg(0), arg(3), arg(4));
    o.dim_feedforward(arg(1)).dropout(0.0);
    if (arg(2)) o.activation(torch::kGELU);
    torch::nn::Transformer m(o);
    const std::vector<at::Tensor> xs = transformer_module(m, names, 2);
    const size_t masks = 2 + names.size();
    at::Tensor y = m->forward(x, in.at(1), opt_mask(masks), opt_mask(masks + 1), opt_mask(masks + 2), opt_mask(masks + 3),
                              opt_mask(masks + 4), opt_mask(masks + 5));
    if (!c.grad) return one(y);
    return gradient_result(input_gradients(y, xs, c.order));
  }
  if (op == "mha") {
    // torch::nn::MultiheadAttention with the given projections copied in; the gradients are
    // reported for q, k, v and then the projections in the inputs' order.
    const int64_t e = x.size(-1), kd = in.at(1).size(-1), vd = in.at(2).size(-1);
    const bool has_bias = in.at(6).numel() > 0, bias_kv = in.size() > 11 && in.at(11).numel() > 0,
               zero_attn = c.args.size() > 3 && c.args.at(3) != 0;
    torch::nn::MultiheadAttention m(torch::nn::MultiheadAttentionOptions(e, arg(0))
                                        .bias(has_bias)
                                        .kdim(kd)
                                        .vdim(vd)
                                        .add_bias_kv(bias_kv)
                                        .add_zero_attn(zero_attn));
    m->to(x.scalar_type());
    const bool packed = kd == e && vd == e;
    auto params = m->named_parameters();
    {
      c10::AutoGradMode no_grad(false);
      if (packed) params["in_proj_weight"].copy_(at::cat({in.at(3), in.at(4), in.at(5)}, 0));
      else params["q_proj_weight"].copy_(in.at(3)), params["k_proj_weight"].copy_(in.at(4)), params["v_proj_weight"].copy_(in.at(5));
      if (has_bias) params["in_proj_bias"].copy_(in.at(6)), params["out_proj.bias"].copy_(in.at(8));
      params["out_proj.weight"].copy_(in.at(7));
      if (bias_kv) params["bias_k"].copy_(in.at(11)), params["bias_v"].copy_(in.at(12));
    }
    // A boolean attn_mask as torch.nn.MultiheadAttention takes it (true: -inf): the C++
    // frontend's functional form adds it as 0/1 instead (1.13).
    at::Tensor attn = opt_mask(10);
    if (attn.defined() && attn.scalar_type() == at::kBool)
      attn = at::zeros(attn.sizes(), x.options()).masked_fill(attn, -std::numeric_limits<double>::infinity());
    auto outs = m->forward(x, in.at(1), in.at(2), opt_mask(9), arg(1) != 0, attn, arg(2) != 0);
    if (!c.grad) {
      r.out = from_torch(std::get<0>(outs));
      r.more.push_back(std::get<1>(outs).defined() ? from_torch(std::get<1>(outs)) : Buf{DT::F32, {0}, {}});
      return r;
    }
    std::vector<at::Tensor> xs = {in.at(0), in.at(1), in.at(2)};
    for (const std::string& n : mha_parameter_names(packed, has_bias, bias_kv)) xs.push_back(params[n]);
    if (c.skip_first) xs[0] = at::Tensor();  // q as plain data
    const std::vector<at::Tensor> gs = input_gradients(std::get<0>(outs), xs, c.order);
    return gradient_result(mha_gradients_by_input(gs, packed, has_bias, bias_kv, e));
  }
  if (op == "lstm_cell" || op == "gru_cell" || op == "rnn_tanh_cell" || op == "rnn_relu_cell") {
    at::Tensor h, c2;
    if (op == "lstm_cell") std::tie(h, c2) = at::lstm_cell(x, {in.at(1), in.at(2)}, in.at(3), in.at(4), opt_mask(5), opt_mask(6));
    else if (op == "gru_cell") h = at::gru_cell(x, in.at(1), in.at(3), in.at(4), opt_mask(5), opt_mask(6));
    else if (op == "rnn_tanh_cell") h = at::rnn_tanh_cell(x, in.at(1), in.at(3), in.at(4), opt_mask(5), opt_mask(6));
    else h = at::rnn_relu_cell(x, in.at(1), in.at(3), in.at(4), opt_mask(5), opt_mask(6));
    if (!c.grad) {
      r.out = from_torch(h);
      if (c2.defined()) r.more.push_back(from_torch(c2));
      return r;
    }
    return gradient_result(input_gradients(c2.defined() ? h + c2 * 0.5 : h, in, c.order));
  }
  if (op == "mha_f") {
    namespace F = torch::nn::functional;
    const bool separate = arg(4) != 0, self = arg(5) != 0;
    const at::Tensor k = self ? x : in.at(1), v = self ? x : in.at(2);
    F::MultiheadAttentionForwardFuncOptions o(x.size(-1), arg(0),
                                              separate ? at::Tensor() : at::cat({in.at(3), in.at(4), in.at(5)}, 0),
                                              opt_mask(6), opt_mask(11), opt_mask(12), arg(3) != 0, 0.0, in.at(7),
                                              opt_mask(8));
    // A boolean attn_mask as PyTorch's Python form takes it (true: -inf); libtorch 1.13's C++
    // form adds it as 0/1.
    at::Tensor attn = opt_mask(10);
    if (attn.defined() && attn.scalar_type() == at::kBool)
      attn = at::zeros(attn.sizes(), x.options()).masked_fill(attn, -std::numeric_limits<double>::infinity());
    o.training(false).key_padding_mask(opt_mask(9)).need_weights(arg(1) != 0).attn_mask(attn);
    o.average_attn_weights(arg(2) != 0).static_k(opt_mask(13)).static_v(opt_mask(14));
    if (separate) o.use_separate_proj_weight(true).q_proj_weight(in.at(3)).k_proj_weight(in.at(4)).v_proj_weight(in.at(5));
    auto outs = F::multi_head_attention_forward(x, k, v, o);
    if (!c.grad) {
      r.out = from_torch(std::get<0>(outs));
      r.more.push_back(std::get<1>(outs).defined() ? from_torch(std::get<1>(outs)) : Buf{DT::F32, {0}, {}});
      return r;
    }
    return gradient_result(input_gradients(std::get<0>(outs), in, c.order));
  }
  if (op == "lstm" || op == "gru" || op == "rnn_tanh" || op == "rnn_relu") {
    const bool lstm = op == "lstm";
    const std::vector<at::Tensor> params(in.begin() + (lstm ? 3 : 2), in.end());
    const bool bias = arg(3) != 0, bidirectional = arg(1) != 0, batch_first = arg(2) != 0;
    std::vector<at::Tensor> outs;
    if (c.args.size() > 4) {
      // With lengths: packed as torch.nn.utils.rnn.pack_padded_sequence(enforce_sorted=False),
      // the states permuted to the sorted batch and back as the modules do, padded again.
      const std::vector<int64_t> lengths(c.args.begin() + 4, c.args.end());
      auto p = torch::nn::utils::rnn::pack_padded_sequence(x, at::tensor(lengths), batch_first, false);
      const at::Tensor sorted = p.sorted_indices(), unsorted = p.unsorted_indices();
      auto pad = [&](const at::Tensor& data) {
        torch::nn::utils::rnn::PackedSequence q(data, p.batch_sizes(), sorted, unsorted);
        return std::get<0>(torch::nn::utils::rnn::pad_packed_sequence(q, batch_first, 0.0, x.size(batch_first ? 1 : 0)));
      };
      const at::Tensor h0 = in.at(1).index_select(1, sorted);
      if (lstm) {
        auto o = at::lstm(p.data(), p.batch_sizes(), {h0, in.at(2).index_select(1, sorted)}, params, bias, arg(0), 0.0, true,
                          bidirectional);
        outs = {pad(std::get<0>(o)), std::get<1>(o).index_select(1, unsorted), std::get<2>(o).index_select(1, unsorted)};
      } else {
        auto o = op == "gru"        ? at::gru(p.data(), p.batch_sizes(), h0, params, bias, arg(0), 0.0, true, bidirectional)
                 : op == "rnn_tanh" ? at::rnn_tanh(p.data(), p.batch_sizes(), h0, params, bias, arg(0), 0.0, true, bidirectional)
                                    : at::rnn_relu(p.data(), p.batch_sizes(), h0, params, bias, arg(0), 0.0, true, bidirectional);
        outs = {pad(std::get<0>(o)), std::get<1>(o).index_select(1, unsorted)};
      }
    } else if (lstm) {
      auto o = at::lstm(x, {in.at(1), in.at(2)}, params, bias, arg(0), 0.0, true, bidirectional, batch_first);
      outs = {std::get<0>(o), std::get<1>(o), std::get<2>(o)};
    } else {
      auto o = op == "gru"        ? at::gru(x, in.at(1), params, bias, arg(0), 0.0, true, bidirectional, batch_first)
               : op == "rnn_tanh" ? at::rnn_tanh(x, in.at(1), params, bias, arg(0), 0.0, true, bidirectional, batch_first)
                                  : at::rnn_relu(x, in.at(1), params, bias, arg(0), 0.0, true, bidirectional, batch_first);
      outs = {std::get<0>(o), std::get<1>(o)};
    }
    if (c.grad) return grads(outs[0]);
    r.out = from_torch(outs[0]);
    for (size_t k = 1; k < outs.size(); ++k) r.more.push_back(from_torch(outs[k]));
    return r;
  }
  // torch.nn.functional's Python code, op for op.
  if (op == "normalize") {
    at::Tensor denom = at::norm(x, at::Scalar(c.args.at(0)), {arg(1)}, true).clamp_min(c.args.at(2)).expand_as(x);
    return one(x / denom);
  }
  if (op == "local_response_norm") {
    const int64_t size = arg(0);
    at::Tensor div = x.mul(x);
    if (x.dim() == 3) {
      div = at::constant_pad_nd(div.unsqueeze(1), {0, 0, size / 2, (size - 1) / 2});
      div = at::avg_pool2d(div, {size, 1}, {1, 1}).squeeze(1);
    } else {
      const auto sizes = x.sizes();
      div = div.view({sizes[0], 1, sizes[1], sizes[2], -1});
      div = at::constant_pad_nd(div, {0, 0, 0, 0, size / 2, (size - 1) / 2});
      div = at::avg_pool3d(div, {size, 1, 1}, {1, 1, 1}).squeeze(1).view(sizes);
    }
    div = div.mul(c.args.at(1)).add(c.args.at(3)).pow(c.args.at(2));
    return one(x / div);
  }
  if (op == "gaussian_nll_loss") {
    at::Tensor var = in.at(2);
    if (var.sizes() != x.sizes()) {
      if (var.dim() == x.dim() - 1 && var.sizes() == x.sizes().slice(0, x.dim() - 1)) var = var.unsqueeze(-1);
      else if (!(var.dim() == x.dim() && var.size(-1) == 1)) throw std::runtime_error("var is of incorrect size");
    }
    var = var.clone();
    {
      c10::AutoGradMode no_grad(false);
      var.clamp_(c.args.at(1));
    }
    at::Tensor loss = 0.5 * (at::log(var) + (x - in.at(1)).pow(2) / var);
    if (arg(0) != 0) loss = loss + 0.5 * std::log(2 * M_PI);
    return one(arg(2) == 0 ? loss : arg(2) == 1 ? loss.mean() : loss.sum());
  }
  if (op == "multilabel_soft_margin_loss") {
    at::Tensor loss = -(in.at(1) * at::log_sigmoid(x) + (1 - in.at(1)) * at::log_sigmoid(-x));
    if (in.size() > 2) loss = loss * in.at(2);
    loss = loss.sum(x.dim() - 1) / x.size(x.dim() - 1);
    return one(arg(0) == 0 ? loss : arg(0) == 1 ? loss.mean() : loss.sum());
  }
  if (op == "rms_norm") {
    std::vector<int64_t> dims, shape;
    for (int64_t k = x.dim() - arg(0); k < x.dim(); ++k) dims.push_back(k), shape.push_back(x.size(k));
#if TORCH_VERSION_MAJOR >= 2
    const c10::optional<double> eps = c.args.at(1) < 0 ? c10::nullopt : c10::optional<double>(c.args.at(1));
    return one(at::rms_norm(x, shape, opt(1), eps));
#else
    const double eps = c.args.at(1) >= 0 ? c.args.at(1)
                       : x.scalar_type() == at::kDouble ? std::numeric_limits<double>::epsilon()
                                                         : std::numeric_limits<float>::epsilon();
    at::Tensor y = x * at::rsqrt(x.pow(2).mean(dims, true) + eps);
    return one(in.size() > 1 ? y * in.at(1) : y);
#endif
  }
  if (op == "sgd" || op == "adam" || op == "adamw" || op == "rmsprop" || op == "adagrad") {
    namespace O = torch::optim;
    at::Tensor p = x.clone().detach().requires_grad_(true);
    std::vector<at::Tensor> params = {p};
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
      p.mutable_grad() = in.at(1).select(0, k).clone();
      opt->step();
    }
    return one(p.detach());
  }
  // calls_linalg.cpp's (the Python-written ones as torch/nn/functional.py composes them).
  // calls_decompositions.cpp's: torch::linalg (ord codes as ember_side.cpp).
  auto norm_ord = [](double o) { return o == 10 ? INFINITY : o == -10 ? -INFINITY : o; };
  if (op == "linalg_det") return one(at::linalg_det(x));
  if (op == "linalg_slogdet") {
    auto sl = at::linalg_slogdet(x);
    return two(std::make_tuple(std::get<1>(sl), std::get<0>(sl)));
  }
  if (op == "logdet") return one(at::logdet(x));
  if (op == "linalg_inv") return one(at::linalg_inv(x));
  if (op == "linalg_solve") return one(at::linalg_solve(x, in.at(1), arg(0) != 0));
  if (op == "linalg_solve_triangular") return one(at::linalg_solve_triangular(x, in.at(1), arg(0) != 0, arg(1) != 0, arg(2) != 0));
  if (op == "linalg_matrix_power") return one(at::linalg_matrix_power(x, arg(0)));
  if (op == "linalg_cholesky") return one(at::linalg_cholesky(x, arg(0) != 0));
  if (op == "linalg_eigvalsh") return one(at::linalg_eigvalsh(x, arg(0) != 0 ? "U" : "L"));
  if (op == "cholesky_solve") return one(at::cholesky_solve(x, in.at(1), arg(0) != 0));
  if (op == "cholesky_inverse") return one(at::cholesky_inverse(x, arg(0) != 0));
  if (op == "linalg_pinv") return one(at::linalg_pinv(x, c10::optional<double>(), c10::optional<double>(), arg(0) != 0));
  if (op == "linalg_matrix_norm") {
    const double o = c.args.at(0);
    if (o == 3 || o == 4) return one(at::linalg_matrix_norm(x, o == 3 ? "fro" : "nuc"));
    return one(at::linalg_matrix_norm(x, at::Scalar(norm_ord(o))));
  }
  if (op == "linalg_cond") return one(at::linalg_cond(x));
  if (op == "linalg_matrix_rank") return one(at::linalg_matrix_rank(x, c10::optional<double>(), c10::optional<double>(), false));
  if (op == "linalg_svdvals") return one(at::linalg_svdvals(x));
  if (op == "linalg_qr") return two(at::linalg_qr(x));
  if (op == "geqrf") return two(at::geqrf(x));
  if (op == "householder_product") return one(at::linalg_householder_product(x, in.at(1)));
  if (op == "ormqr") return one(at::ormqr(x, in.at(1), in.at(2), arg(0) != 0, arg(1) != 0));
  if (op == "linalg_lstsq") {
    static const char* const drivers[] = {"gelsy", "gelsd", "gels", "gelss"};
    auto r = at::linalg_lstsq(x, in.at(1), c10::nullopt, c10::string_view(drivers[arg(0)]));
    return two(std::make_tuple(std::get<0>(r), std::get<1>(r)));
  }
  if (op == "linalg_matrix_exp") return one(at::linalg_matrix_exp(x));
  if (op == "linalg_lu_factor") return two(at::linalg_lu_factor(x));
  if (op == "linalg_lu") {
    auto plu = at::linalg_lu(x);
    return two(std::make_tuple(std::get<1>(plu), std::get<2>(plu)));
  }
  if (op == "linalg_lu_U") return one(std::get<2>(at::linalg_lu(x)));
  if (op == "linalg_lu_solve") {
    auto f = at::linalg_lu_factor(x);
    return one(at::linalg_lu_solve(std::get<0>(f), std::get<1>(f), in.at(1), arg(0) != 0, arg(1) != 0));
  }
  if (op == "linalg_cross") return one(at::linalg_cross(x, in.at(1), arg(0)));
  if (op == "linalg_vector_norm") return one(at::linalg_vector_norm(x, norm_ord(c.args.at(0)), std::vector<int64_t>{arg(1)}));
  // calls_arrange.cpp's: rearranging and building tensors.
  auto optional_in = [&](bool has, size_t& next) {
    return has ? c10::optional<at::Tensor>(in.at(next++)) : c10::optional<at::Tensor>();
  };
  if (op == "movedim") return one(at::movedim(x, ints(1, arg(0)), ints(1 + arg(0), arg(0))));
  if (op == "rot90") return one(at::rot90(x, arg(0), {arg(1), arg(2)}));
  if (op == "roll_dims") return one(at::roll(x, ints(0, 2), ints(2, 2)));
  if (op == "take_along_dim") return one(at::take_along_dim(x, in.at(1), dim_or_all(0)));
  if (op == "repeat_interleave_tensor") return one(at::repeat_interleave(x, in.at(1), dim_or_all(0)));
  if (op == "tensor_unfold") return one(x.unfold(arg(0), arg(1), arg(2)));
  if (op == "kron") return one(at::kron(x, in.at(1)));
  if (op == "tensordot") {
    if (c.args.size() == 1) {
      const int64_t n = arg(0);
      if (n < 0) throw std::runtime_error("tensordot expects dims >= 0");
      std::vector<int64_t> da, db;
      for (int64_t i = 0; i < n; ++i) da.push_back(x.dim() - n + i), db.push_back(i);
      return one(at::tensordot(x, in.at(1), da, db));
    }
    return one(at::tensordot(x, in.at(1), ints(1, arg(0)), ints(1 + arg(0), arg(0))));
  }
  if (op == "trace") return one(at::trace(x));
  if (op == "block_diag") return one(at::block_diag(in));
  if (op == "cartesian_prod") return one(at::cartesian_prod(in));
  if (op == "isin") return one(at::isin(x, in.at(1), false, arg(0) != 0));
  if (op == "unique_consecutive") {
    auto [values, inverse, counts] =
        at::unique_consecutive(x, true, true, arg(0) == -9 ? c10::optional<int64_t>() : c10::optional<int64_t>(arg(0)));
    r.out = from_torch(values);
    r.more = {from_torch(inverse), from_torch(counts)};
    return r;
  }
  if (op == "unique_dim") {
    auto [values, inverse, counts] = at::unique_dim(x, arg(0), true, true, true);
    r.out = from_torch(values);
    r.more = {from_torch(inverse), from_torch(counts)};
    return r;
  }
  if (op == "combinations") return one(at::combinations(x, arg(0), arg(1) != 0));
  if (op == "diag_embed") return one(at::diag_embed(x, arg(0), arg(1), arg(2)));
  if (op == "diagflat") return one(at::diagflat(x, arg(0)));
  if (op == "vander") return one(at::vander(x, arg(0) == -9 ? c10::optional<int64_t>() : c10::optional<int64_t>(arg(0)), arg(1) != 0));
  if (op == "diff") {
    size_t next = 1;
    const auto prepend = optional_in(arg(2) != 0, next);
    const auto append = optional_in(arg(3) != 0, next);
    return one(at::diff(x, arg(0), arg(1), prepend, append));
  }
  if (op == "cov") {
    size_t next = 1;
    const auto fw = optional_in(arg(1) != 0, next);
    const auto aw = optional_in(arg(2) != 0, next);
    return one(at::cov(x, arg(0), fw, aw));
  }
  if (op == "corrcoef") return one(at::corrcoef(x));
  if (op == "index_fill") return one(at::index_fill(x, arg(0), in.at(1), at::Scalar(c.args.at(1))));
  if (op == "index_fill_tensor") return one(at::index_fill(x, arg(0), in.at(1), in.at(2)));
  if (op == "masked_scatter") return one(at::masked_scatter(x, in.at(1), in.at(2)));
  if (op == "masked_fill_tensor") return one(at::masked_fill(x, in.at(1), in.at(2)));
  at::Tensor y = x.clone();
  if (op == "index_fill_inplace") return one(y.index_fill_(arg(0), in.at(1), at::Scalar(c.args.at(1))));
  if (op == "masked_scatter_inplace") return one(y.masked_scatter_(in.at(1), in.at(2)));
  if (op == "index_add_inplace") return one(y.index_add_(arg(0), in.at(1), in.at(2), at::Scalar(c.args.at(1))));
  if (op == "index_copy_inplace") return one(y.index_copy_(arg(0), in.at(1), in.at(2)));
  if (op == "scatter_inplace") return one(y.scatter_(arg(0), in.at(1), in.at(2)));
  if (op == "mm") return one(at::mm(x, in.at(1)));
  if (op == "bmm") return one(at::bmm(x, in.at(1)));
  if (op == "dot") return one(at::dot(x, in.at(1)));
  if (op == "outer") return one(at::outer(x, in.at(1)));
  if (op == "addmm") return one(at::addmm(x, in.at(1), in.at(2), c.args.at(0), c.args.at(1)));
  if (op == "baddbmm") return one(at::baddbmm(x, in.at(1), in.at(2), c.args.at(0), c.args.at(1)));
  if (op == "linear") return one(at::linear(x, in.at(1), bias(2)));
  if (op == "bilinear") return one(at::bilinear(x, in.at(1), in.at(2), bias(3)));
  if (op == "tile") return one(at::tile(x, std::vector<int64_t>(c.args.begin(), c.args.end())));
  if (op == "argsort") return one(std::get<1>(at::sort(x, true, arg(0), arg(1) != 0)));
  if (op == "hardshrink") return one(at::hardshrink(x, c.args.at(0)));
  if (op == "softshrink") return one(at::softshrink(x, c.args.at(0)));
  if (op == "tanhshrink") return one(x - at::tanh(x));
  if (op == "threshold") return one(at::threshold(x, c.args.at(0), c.args.at(1)));
  if (op == "logsigmoid") return one(at::log_sigmoid(x));
  if (op == "softmin") return one(at::softmax(-x, arg(0)));
  if (op == "lp_pool1d" || op == "lp_pool2d") {
    const bool two_d = op == "lp_pool2d";
    const double p = c.args.at(0);
    const at::Tensor powed = x.pow(p);
    const at::Tensor avg = two_d ? at::avg_pool2d(powed, ints(1, 2), ints(3, 2), 0, arg(5) != 0)
                                 : at::avg_pool1d(powed, ints(1, 1), ints(2, 1), 0, arg(3) != 0);
    const double window = two_d ? c.args.at(1) * c.args.at(2) : c.args.at(1);
    return one((at::sign(avg) * at::relu(at::abs(avg))).mul(window).pow(1.0 / p));
  }
  if (op == "adaptive_avg_pool3d") return one(at::adaptive_avg_pool3d(x, ints(0, 3)));
  if (op == "adaptive_max_pool3d") return two(at::adaptive_max_pool3d(x, ints(0, 3)));
  if (op == "fractional_max_pool2d") {
    const std::vector<int64_t> a = ints(0, 4);
    return two(at::fractional_max_pool2d(x, {a[0], a[1]}, {a[2], a[3]}, in.at(1)));
  }
  if (op == "conv_transpose3d")
    return one(at::conv_transpose3d(x, in.at(1), bias(2), ints(0, 3), ints(3, 3), ints(6, 3), arg(9), ints(10, 3)));
  if (op == "max_unpool1d")
    return one(at::max_unpool2d(x.unsqueeze(-1), in.at(1).unsqueeze(-1), {arg(0), 1}).squeeze(-1));
  if (op == "affine_grid")
    return one(at::affine_grid_generator(x, std::vector<int64_t>(c.args.begin(), c.args.end() - 1), c.args.back() != 0));
  // calls_statistics.cpp's: counting, order statistics and distances.
  {
    static const char* const interpolations[] = {"linear", "lower", "higher", "midpoint", "nearest"};
    auto side = [&](size_t i) {
      return arg(i) == 0 ? c10::optional<c10::string_view>() : c10::optional<c10::string_view>(arg(i) == 1 ? "left" : "right");
    };
    if (op == "searchsorted")
      return one(at::searchsorted(x, in.at(1), arg(0) != 0, arg(1) != 0, side(2), in.size() > 2 ? in.at(2) : at::Tensor()));
    if (op == "bucketize") return one(at::bucketize(x, in.at(1), false, arg(0) != 0));
    if (op == "bincount")
      return one(at::bincount(x, in.size() > 1 ? c10::optional<at::Tensor>(in.at(1)) : c10::optional<at::Tensor>(), arg(0)));
    if (op == "histc") return one(at::histc(x, arg(0), c.args.at(1), c.args.at(2)));
    if (op == "histogram" || op == "histogramdd") {
      std::vector<double> range;
      const int64_t dims = op == "histogram" ? 1 : x.size(-1);
      for (int64_t j = 0; j < dims && arg(1) != 0; ++j) range.insert(range.end(), {c.args.at(2), c.args.at(3)});
      const c10::optional<at::ArrayRef<double>> r = arg(1) != 0 ? c10::optional<at::ArrayRef<double>>(range) : c10::nullopt;
      const c10::optional<at::Tensor> w = in.size() > 1 ? c10::optional<at::Tensor>(in.at(1)) : c10::nullopt;
      if (op == "histogram") return two(at::histogram(x, arg(0), r, w, arg(4) != 0));
      auto [h, edges] = at::histogramdd(x, arg(0), r, w, arg(4) != 0);
      return two(std::make_tuple(h, edges.empty() ? at::Tensor() : edges[0]));
    }
    if (op == "median" || op == "nanmedian") {
      const bool nan = op == "nanmedian";
      if (arg(0) == -9) return one(nan ? at::nanmedian(x) : at::median(x));
      return two(nan ? at::nanmedian(x, arg(0), arg(1) != 0) : at::median(x, arg(0), arg(1) != 0));
    }
    if (op == "quantile" || op == "nanquantile") {
      const bool nan = op == "nanquantile";
      const c10::optional<int64_t> dim = arg(1) == -9 ? c10::optional<int64_t>() : c10::optional<int64_t>(arg(1));
      const bool keep = arg(2) != 0;
      const c10::string_view interp = interpolations[arg(3)];
      if (c.args.at(0) == -9)
        return one(nan ? at::nanquantile(x, in.at(1), dim, keep, interp) : at::quantile(x, in.at(1), dim, keep, interp));
      return one(nan ? at::nanquantile(x, c.args.at(0), dim, keep, interp) : at::quantile(x, c.args.at(0), dim, keep, interp));
    }
    if (op == "cdist")
      return one(at::cdist(x, in.at(1), c.args.at(0), arg(1) == -9 ? c10::optional<int64_t>() : c10::optional<int64_t>(arg(1))));
    if (op == "pdist") return one(at::pdist(x, c.args.at(0)));
  }
  throw std::logic_error("torch_side: no named op " + op);
}

/// The part of y that Call::inplace's mode writes (as ember_side.cpp's).
at::Tensor inplace_view(const at::Tensor& y, int mode) {
  const int64_t n = y.size(0);
  if (mode == 2) return y.narrow(0, 1, n - 2);
  if (mode == 3) return y.as_strided({(n + 1) / 2}, {2}, y.storage_offset());
  return y;
}

/// Call::inplace: op(view) written into the view of y = a * 1 with copy_, what the in-place op
/// means (computed from a clone: unary() and binary() serve both forms; libtorch's own in-place
/// ops would keep a -0 gradient through a view where this and Ember give +0).
at::Tensor inplace_result(const Call& c, const at::Tensor& a, const at::Tensor& b) {
  at::Tensor y = a * 1.0;
  at::Tensor v = inplace_view(y, c.inplace);
  const at::Tensor old = v.clone();  // the values before the write, which the op's backward reads
  at::Tensor r = c.kind == Kind::Unary    ? unary(c, old)
                 : c.kind == Kind::Binary ? binary(c.op, old, inplace_view(b, c.inplace))
                                          : binary(c.op, old, wrapped(c.s));
  if (r.scalar_type() != v.scalar_type())  // an in-place op keeps its tensor's dtype: refused
    throw std::runtime_error("torch_side: result type " + std::string(c10::toString(r.scalar_type())) +
                             " can't be cast to the desired output type " + c10::toString(v.scalar_type()));
  v.copy_(r);
  return y;
}

/// The gradients of sum(op(a[, b]) * [1, 2, ...]).
Result gradients(const Call& c) {
  at::Tensor a = to_torch(c.a).requires_grad_();
  at::Tensor b = c.kind == Kind::Binary ? to_torch(c.b).requires_grad_() : at::Tensor();
  at::Tensor y = c.inplace                ? inplace_result(c, a, b)
                 : c.kind == Kind::Unary  ? unary(c, a)
                 : c.kind == Kind::Reduce ? reduce(c, a)
                 : c.kind == Kind::Binary ? binary(c.op, a, b)
                                          : binary(c.op, a, wrapped(c.s));
  const std::vector<at::Tensor> g = input_gradients(y, {a, b}, c.order);
  Result r;
  r.ok = true;
  r.out = from_torch(g[0]);
  if (b.defined()) r.more.push_back(from_torch(g[1]));
  return r;
}

}  // namespace

Result run_torch_once(const Call& c) {
  Result r;
  try {
    if (c.grad && c.kind != Kind::Named) return gradients(c);
    at::Tensor a = c.kind == Kind::Named ? at::Tensor() : to_torch(c.a);
    at::Tensor out;
    switch (c.kind) {
      case Kind::Unary: out = unary(c, a); break;
      case Kind::Binary: out = binary(c.op, a, to_torch(c.b)); break;
      case Kind::TensorScalar: out = binary(c.op, a, wrapped(c.s)); break;
      case Kind::Reduce: out = reduce(c, a); break;
      case Kind::Named: return named(c);
    }
    r.out = from_torch(out);
    r.ok = true;
  } catch (const c10::Error& e) {
    r.error = e.what_without_backtrace();
  } catch (const std::runtime_error& e) {  // a result dtype Ember lacks
    r.error = e.what();
  } catch (const std::exception& e) {  // e.g. oneDNN's dnnl::error escaping PyTorch 2.x
    r.error = std::string("libtorch failed inside: ") + e.what();
  }
  return r;
}

Result run_torch(const Call& c) {
  Result r = run_torch_once(c);
  if (!r.ok && r.error.find("not implemented for 'Half'") != std::string::npos) {
    g_half_in_float = true;
    Result again = run_torch_once(c);
    g_half_in_float = false;
    if (again.ok) return again;
  }
  return r;
}

const char* torch_version() { return TORCH_VERSION; }
int torch_major() { return TORCH_VERSION_MAJOR; }
int torch_minor() { return TORCH_VERSION_MINOR; }

}  // namespace ediff

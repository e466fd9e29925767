#pragma once
/// Deliberate or understood differences between Ember and libtorch (Debian's 1.13, or a
/// PyTorch 2.x wheel through -Dlibtorch_dir) that ember-vs-libtorch lists as "known" (with
/// --verbose) instead of failing, each with its reason. A rule names the op and the exact
/// inputs it covers, so that any other difference still fails. Where PyTorch 2 changed a
/// result, Ember follows PyTorch 2 and the rule excuses libtorch 1.13 only (v1()); PyTorch
/// 2.x's own slips are excused for 2.x only (v2()).

#include "bridge.hpp"

#include <ember/core/half.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace ediff {

/// One differing output element and the inputs behind it (b: the second tensor's element or
/// the scalar; has_b false for unary ops).
struct Element {
  double a = 0, b = 0;
  bool has_b = false;
  double ember = 0, torch = 0;
  /// For f32 normalisations: the same call's f64 result (which both libraries agree on), to
  /// tell rounding from error. NaN when not computed.
  double ref64 = std::numeric_limits<double>::quiet_NaN();
  int64_t index = 0;  ///< the element's position in its output (row-major)
  int output = 0;     ///< which output: 0 the first (for gradients: the first input's), 1 the next, ...
};

/// Named calls over an (R, C) first input reduced along dim (0 or 1), as var_mean: whether
/// the slice behind the output element holds a value meeting pred (for a gradient, whose
/// shape is the input's, the slice through the element).
inline bool slice_has(const Call& c, const Element& e, int dim, bool (*pred)(double)) {
  const Buf& x = c.ins.at(0);
  if (x.shape.size() != 2) return false;
  const int64_t rows = x.shape[0], cols = x.shape[1];
  const int64_t line = c.grad ? (dim == 0 ? e.index % cols : e.index / cols) : e.index;
  for (int64_t k = 0; k < (dim == 0 ? rows : cols); ++k)
    if (pred(x.at(dim == 0 ? k * cols + line : line * cols + k))) return true;
  return false;
}

/// Reductions of an (R, C) input (Kind::Reduce): whether the slice reduced into the output
/// element behind gradient element e (the whole input, its column or its row) holds a value
/// meeting pred.
inline bool reduced_slice_has(const Call& c, const Element& e, bool (*pred)(double)) {
  const Buf& x = c.a;
  if (x.shape.size() != 2) return false;
  const int64_t rows = x.shape[0], cols = x.shape[1];
  const bool all = c.dims.empty() || c.dims.size() == 2;
  const bool down = !all && (c.dims[0] + 2) % 2 == 0;  // dim 0 or -2: a column
  for (int64_t i = 0; i < rows * cols; ++i)
    if ((all || (down ? i % cols == e.index % cols : i / cols == e.index / cols)) && pred(x.at(i))) return true;
  return false;
}

/// The normalisations, whose f32 results lose digits to cancellation when the variance is
/// small next to eps: there the two libraries' rounding is compared with the f64 result.
inline bool is_normalisation(const std::string& op) {
  return op == "layer_norm" || op == "group_norm" || op == "batch_norm" || op == "instance_norm";
}

/// The ops that pick elements by sorting or comparing: between tied values (+0 and -0 among
/// them), which one is picked, and takes the gradient, is unspecified in both libraries
/// (PyTorch 2's quantile sorts unstably; Ember's sorts are stable).
inline bool selects_among_ties(const std::string& op) {
  return op == "topk" || op == "kthvalue" || op == "sort" || op == "max_dim" || op == "min_dim" || op == "cummax" ||
         op == "cummin" || op == "quantile" || op == "nanquantile";
}

/// quantile/nanquantile of an f32 input holding no NaN, with an interpolation that picks an
/// element (lower 1, higher 2, nearest 4): whether the q behind output element e (the number
/// argument, or that element's q of the tensor operand; any q of it for a gradient) gives
/// another element when its rank q (n - 1) is computed in f32 (libtorch 1.13 and 2.x before
/// the change to f64 ranks) instead of f64 (libtorch 2.15, Ember).
inline bool quantile_rank_in_f32_differs(const Call& c, const Element& e) {
  if (c.ins.at(0).dt != DT::F32 || c.args.size() < 4) return false;
  const int mode = static_cast<int>(c.args.at(3));
  if (mode != 1 && mode != 2 && mode != 4) return false;
  const Buf& x = c.ins.at(0);
  for (int64_t i = 0; i < x.numel(); ++i)
    if (std::isnan(x.at(i))) return false;
  const int dim = static_cast<int>(c.args.at(1));
  int64_t n = x.numel();
  if (dim != -9 && !x.shape.empty()) n = x.shape.at(static_cast<size_t>(dim < 0 ? dim + static_cast<int>(x.shape.size()) : dim));
  std::vector<double> qs;
  if (c.args.at(0) != -9) {
    qs.push_back(c.args.at(0));
  } else if (!c.grad && c.ins.at(1).numel() > 0) {
    // The result's first dim is q's (of length Q), each q's part numel(x) / n elements.
    const int64_t part = n > 0 ? x.numel() / n : 1;
    if (c.ins.at(1).shape.empty()) qs.push_back(c.ins.at(1).at(0));
    else qs.push_back(c.ins.at(1).at(std::min(e.index / std::max<int64_t>(part, 1), c.ins.at(1).numel() - 1)));
  } else {
    for (int64_t i = 0; i < c.ins.at(1).numel(); ++i) qs.push_back(c.ins.at(1).at(i));
  }
  auto pick = [mode](double rank) {
    return mode == 1 ? std::floor(rank) : mode == 2 ? std::ceil(rank) : std::nearbyint(rank);
  };
  for (double q : qs) {
    const float qf = static_cast<float>(q);
    const float rank32 = qf * static_cast<float>(n - 1);
    if (pick(rank32) != pick(static_cast<double>(qf) * static_cast<double>(n - 1))) return true;
  }
  return false;
}

/// The number of NaN elements of b.
inline int64_t nan_count(const Buf& b) {
  int64_t n = 0;
  for (int64_t i = 0; i < b.numel(); ++i) n += std::isnan(b.at(i));
  return n;
}

/// Whether the element's first-input value occurs elsewhere in that input (a tie).
inline bool tied(const Call& c, const Element& e) {
  if (c.ins.empty() || std::isnan(e.a)) return false;
  int n = 0;
  for (int64_t i = 0; i < c.ins[0].numel(); ++i) n += c.ins[0].at(i) == e.a;
  return n > 1;
}

inline bool all_finite(const Buf& b) {
  for (int64_t i = 0; i < b.numel(); ++i)
    if (!std::isfinite(b.at(i))) return false;
  return true;
}

/// The calls of whole transformer modules (calls_linalg.cpp's transformer_calls).
inline bool is_transformer_module(const std::string& op) {
  return op == "encoder_layer" || op == "decoder_layer" || op == "transformer";
}

inline bool v1() { return torch_major() == 1; }
/// The integer dtypes narrower than i64.
inline bool is_small_integer(DT t) { return t == DT::U8 || t == DT::I8 || t == DT::I32; }
inline bool v2() { return torch_major() >= 2; }

/// mul and the divisions, which PyTorch 2 computes in f32 for an f16/bf16 tensor and a 0-d
/// second operand of another dtype (with the operand's own value; libtorch 1.13 rounded it to
/// f16 first): only where that rounding changes the operand.
inline bool scales_by_0d(const Call& c, DT result) {
  if (c.op != "mul" && c.op != "div" && c.op != "div_trunc" && c.op != "div_floor") return false;
  if (result != DT::F16 && result != DT::BF16) return false;
  double v = 0;
  if (c.kind == Kind::TensorScalar) v = c.s.kind == ScalarArg::Float ? c.s.f : static_cast<double>(c.s.i);
  else if (c.kind == Kind::Binary && c.b.shape.empty() && c.b.dt != result) v = c.b.at(0);
  else return false;
  const float f = static_cast<float>(v);
  const double rounded = result == DT::F16 ? static_cast<float>(ember::Half(f)) : static_cast<float>(ember::BFloat16(f));
  return rounded != v && v == v;
}

inline bool is_shift(const std::string& op) { return op == "bitwise_left_shift" || op == "bitwise_right_shift"; }

inline double max_finite(DT t) {
  switch (t) {
    case DT::F16: return 65504.0;
    case DT::BF16:
    case DT::F32: return std::numeric_limits<float>::max();
    default: return std::numeric_limits<double>::max();
  }
}

inline double int_min(DT t) {
  return t == DT::U8 ? 0.0 : t == DT::I8 ? -128.0 : t == DT::I32 ? -2147483648.0 : -9223372036854775808.0;
}
inline double int_max(DT t) {
  return t == DT::U8 ? 255.0 : t == DT::I8 ? 127.0 : t == DT::I32 ? 2147483647.0 : 9223372036854775807.0;
}

inline int bits(DT t) { return t == DT::I64 ? 64 : t == DT::I32 ? 32 : 8; }

/// Whether a result holds both +0 and -0 (as separate elements).
inline bool t_has_both_zeros(const Result& r) {
  bool pos = false, neg = false;
  for (int64_t i = 0; i < r.out.numel(); ++i)
    if (r.out.at(i) == 0) (std::signbit(r.out.at(i)) ? neg : pos) = true;
  return pos && neg;
}

/// Whether interpolate's output (1-, 2- or 3-d: the op's first args) is once or twice its
/// input along a spatial dim.
inline bool shortcut_size(const Call& c) {
  const size_t nd = c.ins.at(0).shape.size() - 2;
  for (size_t d = 0; d < nd; ++d) {
    const double in = static_cast<double>(c.ins.at(0).shape.at(2 + d)), out = c.args.at(d);
    if (out == in || out == 2 * in) return true;
  }
  return false;
}

/// index_expr / index_put_expr: whether a 2-d bool index is followed by a slice, an integer or
/// None (codes 1, 2, 4, 5, 6 after it; bridge.hpp).
inline bool mask_2d_then_entry(const Call& c) {
  size_t next = 1;
  for (size_t k = 0; k < c.args.size(); ++k) {
    const int code = static_cast<int>(c.args[k]);
    if (code < 7) continue;
    const Buf& idx = c.ins.at(next++);
    if (idx.dt != DT::Bool || idx.shape.size() != 2) continue;
    for (size_t j = k + 1; j < c.args.size(); ++j) {
      const int after = static_cast<int>(c.args[j]);
      if (after == 1 || after == 2 || after == 4 || after == 5 || after == 6) return true;
    }
  }
  return false;
}

/// Why a call that one library accepts and the other refuses, or whose result dtype differs,
/// is expected; nullptr when it is not.
inline const char* known_call(const Call& c, const std::string& category, const Result& ember, const Result& torch) {
  if (category == "accept" && ember.ok) {
    const std::string& why = torch.error;
    if (why.find("not implemented for '") != std::string::npos ||
        why.find("Expected a floating point or complex tensor") != std::string::npos ||
        why.find("itensor_view_from_dense expects float/bfloat16") != std::string::npos)
      return "libtorch has no CPU kernel for this dtype (1.13 lacks many, 2.x fewer); Ember computes integer inputs in f32 and "
             "f16/bf16 in f32, as it does for every op";
    if (why.find("has no Ember counterpart") != std::string::npos && why.find("Short") != std::string::npos)
      return "Ember has no int16: u8 with i8 promotes to i32 (PyTorch: int16)";
    if (c.op == "isin" && why.find("Unsupported input type encountered for isin()") != std::string::npos)
      return "isin of bool or bf16 tensors: libtorch 1.13 has no kernel for them; Ember compares every dtype";
    if (c.op == "heaviside" && c.kind == Kind::TensorScalar && why.find("different dtypes") != std::string::npos)
      return "heaviside with a number the tensor's dtype holds (x.heaviside(0.5)): Ember takes it; libtorch has no "
             "form with a number (its wrapped number has another dtype)";
    if (c.op == "hardtanh" && why.find("unsigned type with negative limits") != std::string::npos)
      return "Ember clamps an unsigned tensor to any limits (the negative one has no effect)";
  }
  if (category == "accept" && ember.ok && c.order == 2 &&
      (torch.error.find("derivative for aten::") != std::string::npos ||
       torch.error.find("derivative for '_cdist_backward'") != std::string::npos ||
       torch.error.find("derivative for '_pdist_backward'") != std::string::npos) &&
      torch.error.find("is not implemented") != std::string::npos)
    return "libtorch has no double backward for this op (its backward is one kernel without a derivative); Ember's "
           "is checked by gradgradcheck in its tests";
  if (category == "accept" && ember.ok && v2()) {
    const std::string& why = torch.error;
    if ((c.op == "argmax" || c.op == "argmin" || c.op == "topk") && c.ins.at(0).dt == DT::Bool &&
        (why.find("does not support bool") != std::string::npos))
      return "Ember takes bool tensors here (as libtorch 1.13); PyTorch 2 refuses them";
    if (c.op == "gelu_backward" && c.a.dt != c.b.dt && why.find("libtorch failed inside") != std::string::npos)
      return "an autograd-internal op on mixed dtypes (Ember never calls it so): libtorch 2.x fails inside oneDNN";
  }
  if (category == "accept" && ember.ok && v1() && c.op == "linalg_solve" && c.grad && c.ins.at(1).shape.size() == 1 &&
      torch.error.find("LinalgSolveExBackward0 returned an invalid gradient") != std::string::npos)
    return "linalg.solve with a 1-d B broadcast over a batch of A: libtorch 1.13's backward returns B's gradient "
           "without summing it over the batch (fixed in PyTorch 2); Ember sums it";
  if (category == "accept" && ember.ok && c.op == "vander" && c.grad &&
      torch.error.find("modified by an inplace operation") != std::string::npos)
    return "vander's gradient: libtorch's implementation (1.13 and 2.15) writes in place into a tensor its own "
           "backward needs, so torch.vander(x).sum().backward() always fails; Ember's is cumprod's (gradcheck "
           "and gradgradcheck in tests/test_matrix_builders.cpp)";
  if (category == "accept" && ember.ok && v1() && c.op == "tensordot" && is_small_integer(c.ins.at(0).dt) &&
      torch.error.find("expected scalar type Long") != std::string::npos)
    return "tensordot of i8/u8/i32 tensors: libtorch 1.13's CPU matrix product has no kernel for integers other "
           "than i64; Ember's integer GEMM takes them";
  if (category == "accept" && ember.ok && v1() && c.op == "arange" && c.args.at(3) == 0 &&
      torch.error.find("step must be nonzero") != std::string::npos)
    return "an integer arange with non-integer arguments: libtorch 1.13 truncates all three first (step 0.1 -> 0: "
           "refused); PyTorch 2 and Ember count ceil((end - start) / step) from the arguments as given";
  if (category == "accept" && !ember.ok && torch.ok &&
      (c.op == "conv_transpose1d" || c.op == "conv_transpose2d" || c.op == "conv_transpose3d") &&
      torch.out.numel() == 0 &&
      ember.error.find("output size 0 ") != std::string::npos)
    return "an output size of 0: libtorch 2.x returns an empty tensor on some paths (oneDNN) and refuses on others, "
           "libtorch 1.13 refuses; Ember refuses";
  if (category == "dtype" && (c.op == "relu_backward" || c.op == "gelu_backward" || c.op == "silu_backward"))
    return "an autograd-internal op: Ember only calls it on floating gradients, and computes others in f32";
  if (category == "accept" && !ember.ok && (c.op == "batch_norm" || c.op == "group_norm") &&
      (ember.error.find("more than one value per channel") != std::string::npos ||
       ember.error.find("more than 1 value per group") != std::string::npos))
    return "one value per channel (group) while training: Ember refuses, as PyTorch's torch.nn.functional does; the "
           "ATen op called here does not check";
  if (category == "accept" && !ember.ok && (c.op == "max_pool1d" || c.op == "max_pool2d" || c.op == "max_pool3d") &&
      ember.error.find("a window reads only padding") != std::string::npos)
    return "a max-pooling window that reads only padding: libtorch returns -inf there, Ember refuses the geometry";
  if (category == "accept" && ember.ok && v1() && c.op == "diag" && c.ins.at(0).shape.size() == 2 &&
      torch.error.find("integer multiplication overflow") != std::string::npos)
    return "the diagonal of a matrix beyond its corner: libtorch 1.13 fails computing a negative size; PyTorch 2 and "
           "Ember return an empty tensor";
  if (category == "accept" && !ember.ok && torch.ok && c.op == "hardshrink" && c.args.at(0) < 0)
    return "hardshrink with a negative lambda: libtorch returns x unchanged; Ember refuses it, as both refuse it for "
           "softshrink";
  if (category == "accept" && ember.ok && v1() && (c.op == "index_expr" || c.op == "index_put_expr") &&
      torch.error.find("The shape of the mask") != std::string::npos && mask_2d_then_entry(c))
    return "a 2-d bool mask followed by a slice, integer or None: libtorch 1.13's C++ indexing moves on by one dim "
           "after the mask, so the next entry lands on the mask's second dim and the mask no longer fits; PyTorch 2 "
           "(and NumPy) index x[mask, None] to (count, 1, ...), as Ember";
  if (category == "accept" && ember.ok && c.op == "one_hot" && c.ins.at(0).dt == DT::I32) {
    // Only labels valid for int64 (libtorch checks the dtype before the values).
    bool valid = true;
    for (int64_t i = 0; i < c.ins[0].numel(); ++i)
      valid = valid && c.ins[0].at_int(i) >= 0 && (c.args.at(0) < 0 || c.ins[0].at_int(i) < c.args.at(0));
    if (valid) return "one_hot of i32 labels: Ember takes them (C++ code often holds labels in int); PyTorch wants int64";
  }
  if (category == "accept" && !ember.ok && torch.ok && (c.op == "index_add" || c.op == "index_add_inplace") &&
      ember.error.find("is not a value of the tensor's dtype") != std::string::npos)
    return "index_add with an alpha the integer or bool tensor cannot hold (0.5, or 2 for bool): libtorch converts "
           "it silently (0.5 -> 0); Ember refuses, as its add does";
  if (category == "accept" && !ember.ok && torch.ok && (c.op == "histogram" || c.op == "histogramdd") &&
      (c.ins.at(0).dt == DT::F16 || c.ins.at(0).dt == DT::BF16))
    return "histogram/histogramdd of f16 or bf16: Ember refuses (edges in so few bits collapse; PyTorch 1.13's own "
           "CPU kernels refuse Half); libtorch's C++ op computes them here";
  if (category == "shape" && v1() && c.op == "unique" && c.ins.at(0).dt == DT::BF16 && t_has_both_zeros(torch))
    return "libtorch 1.13's bf16 unique keeps -0 and +0 apart (its f32 unique merges them, as Ember does for every "
           "dtype)";
  return nullptr;
}

/// libtorch's trigamma (polygamma(1), the derivative of digamma) stops its series early: good
/// to about 1e-9 relative (trigamma(1) = pi^2/6 is off by 5e-10); Ember's is good to rounding.
inline constexpr const char* kTrigammaAccuracy =
    "libtorch's trigamma (polygamma(1, x), digamma's derivative) is accurate to about 1e-9 relative (its "
    "asymptotic series stops early: trigamma(1) = pi^2/6 comes out 5e-10 high); Ember's to rounding (the closed "
    "forms are checked in tests/test_gamma_ops.cpp)";
inline bool trigamma_rounding(const Element& e) {
  return std::isfinite(e.torch) && std::fabs(e.ember - e.torch) <= 1e-8 * std::fabs(e.torch);
}
/// lgamma and digamma/polygamma values and gradients (first or second order).
inline const char* known_gamma(const Call& c, const std::string& category, const Element& e) {
  if ((c.op != "lgamma" && c.op != "digamma") || category != "value") return nullptr;
  const bool derivative = c.grad || c.order == 2, higher = c.has_params && c.p[0] >= 1;
  // Only where libtorch computes a trigamma: digamma's gradient, lgamma's second derivative.
  const bool trigamma = (c.op == "digamma" && !c.has_params && c.grad && c.order == 1) ||
                        (c.op == "lgamma" && c.order == 2);
  if (trigamma && trigamma_rounding(e)) return kTrigammaAccuracy;
  if (derivative && e.a < 0 && e.a == std::floor(e.a) && std::isinf(e.ember) && std::isfinite(e.torch))
    return "trigamma at a pole (a negative integer): libtorch's reflection pi^2 / sin^2(pi x) divides by the rounding "
           "error of sin(pi x) and gives a huge finite number; Ember gives +inf, as at the pole 0";
  if ((higher || derivative) && e.a == INFINITY && e.ember == 0 && std::isnan(e.torch))
    return "polygamma(n >= 2, +inf) (and its gradients): libtorch returns NaN; the function tends to 0 there, and "
           "Ember returns the zero (with the sign of the approach), as libtorch itself does for trigamma";
  if ((higher || derivative) && e.a == -INFINITY && std::isnan(e.ember) && std::isinf(e.torch))
    return "polygamma(n >= 2, -inf): libtorch returns an infinity; the poles at the negative integers accumulate "
           "there and the function has no limit, so Ember returns NaN (as both do for digamma and trigamma)";
  return nullptr;
}

/// torch::special's functions (ops/special_ops.hpp): values and gradients (first or second
/// order) where libtorch's formulas overflow, cancel or special-case differently.
inline const char* known_special(const Call& c, DT result, const std::string& category, const Element& e) {
  const std::string& op = c.op;
  const bool bessel = op == "i0" || op == "i0e" || op == "i1" || op == "i1e";
  const bool derivative = c.grad || c.order == 2;
  const double eps = result == DT::F64 ? 2.2e-16 : 1.2e-7;
  // The limits at +-inf are 0 or +-inf; near the top of the range I0 and I1 are above 1e30;
  // log_ndtr's gradient in the lower tail is above |x|.
  const bool limit = std::isinf(e.a) && (e.ember == 0 || std::isinf(e.ember));
  const bool huge = bessel && std::fabs(e.a) > 80 && std::fabs(e.ember) > 1e30;
  const bool tail = op == "log_ndtr" && e.a < 0 && std::isfinite(e.ember) && std::fabs(e.ember) >= std::fabs(e.a);
  if (category == "value" && (bessel || op == "erfcx" || op == "log_ndtr") && !std::isfinite(e.torch) &&
      e.ember != e.torch && (limit || huge || tail))
    return "i0, i1 (and the gradients of i0e, i1e, erfcx, log_ndtr) at +-inf or near the top of the range: "
           "libtorch's formulas take e^x first (inf from 88.7 in f32, 709.8 in f64) and meet inf * 0 or inf / inf; "
           "Ember returns the limits (i0(inf) = inf, erfcx'(inf) = 0, log_ndtr'(-inf) = inf) and overflows only "
           "where the value does";
  if (category == "value" && bessel && derivative && std::isnan(e.a) && std::isnan(e.ember))
    return "the derivatives of the Bessel functions at NaN: libtorch's i1/i1e backward tests |x| > eps, which NaN "
           "fails, and returns the value at 0 (1/2); Ember's is NaN";
  // The cancelling form's error: eps / x^2 relative (above 1 in the first case).
  const bool cancels = std::isfinite(e.ember) &&
                       (std::isnan(e.torch) || std::fabs(e.a) <= eps ||
                        std::fabs(e.ember - e.torch) <= 8 * eps / (e.a * e.a) * std::fabs(e.ember));
  if (category == "value" && (op == "i1" || op == "i1e") && c.order == 2 && std::fabs(e.a) < 0.01 && cancels)
    return "i1 and i1e's second derivative near 0: libtorch differentiates I0 - I1/x, whose terms I1'/x and I1/x^2 "
           "cancel (and within eps of 0 its first derivative is the constant 1/2, so the second is 0); Ember's first "
           "derivative is the series 1/2 + 3x^2/16 + ... below |x| = 0.01 (for i1e times e^-|x|)";
  if (category == "zero-sign" && bessel && e.a == 0 && std::signbit(e.a))
    return "i1 and i1e are odd: Ember gives -0 at -0 (as sin, tanh and erf do), and so do the gradients of i0 and "
           "i0e there; libtorch's Cephes code returns +0";
  if (op == "sinc" && category == "zero-sign" && !derivative && e.a == std::floor(e.a))
    return "sinc at a nonzero integer: Ember's is an exact +0 (sin(pi x) is taken at x's distance from the nearest "
           "integer); libtorch's f32 sin(pi x) leaves a rounding-sized value of either sign (+-0 once rounded to f16)";
  if (op == "sinc" && category == "value" && derivative && std::fabs(e.a) < 0.1 && cancels)
    return "sinc's derivative near 0: libtorch's (cos(pi x) - sinc(x)) / x cancels (0.4% off at 6e-8 in f64, 0 "
           "at 1e-7 in f32; NaN for the second derivative at 0); Ember's is the Taylor series below |x| = 0.1";
  // erfcx' loses eps x^2 of itself, and erfcx'' (2 erfcx + 2x erfcx') loses another x^2.
  const double erfcx_error = eps * e.a * e.a * (c.order == 2 ? e.a * e.a : 1.0) * 8;
  const bool erfcx_series = e.a > (result == DT::F64 ? 50 : 10);
  if (op == "erfcx" && derivative && e.a > 20 && std::isfinite(e.ember) &&
      (category == "zero-sign" ? erfcx_series
                               : erfcx_series || std::fabs(e.ember - e.torch) <= erfcx_error * std::fabs(e.ember)))
    return "erfcx's derivatives for large x: 2x erfcx(x) - 2/sqrt(pi) cancels (relative error 2e-16 x^2: all "
           "digits by 1e8, and +0 where the value underflows), and the second derivative cancels again; Ember "
           "uses the asymptotic series above x = 50 in f64 and 10 in f32 (below, both cancel, differently)";
  const double tail_error = eps * e.a * e.a * (c.order == 2 ? e.a * e.a : 1.0) * 8;
  if (op == "log_ndtr" && derivative && e.a < -1 && category == "value" && std::isfinite(e.ember) &&
      std::fabs(e.ember - e.torch) <= tail_error * std::fabs(e.ember))
    return "log_ndtr's derivatives in the lower tail: libtorch's lose about eps x^2 (the second eps x^4): in f64 "
           "1.7e-11 at -710 (8.5e-6 for the second), in f32 2e-5 at -17 and 2e-4 at -100; "
           "Ember's special functions compute in f64 and round once";
  if (op == "log_ndtr" && c.order == 2 && category == "value" && std::isnan(e.torch) && std::isfinite(e.ember))
    return "log_ndtr's second derivative in the tails: libtorch's formula divides infinities (NaN); Ember's two "
           "forms (erfcx below 0, phi / Phi above) stay finite (down to -1.3e154), tending to -1 and 0";
  if ((op == "logaddexp" || op == "logaddexp2") && c.order == 2 && category == "value" && e.has_b &&
      !(std::fabs(e.a - e.b) < 700) && std::isnan(e.torch) && e.ember == 0)
    return "logaddexp's second derivative where the operands are far apart or infinite: libtorch's "
           "1 / (1 + exp(b - a)) overflows or meets exp(inf - inf) (NaN); Ember's sigmoid form gives the limit, 0";
  if ((op == "logaddexp" || op == "logaddexp2") && c.order == 2 && category == "value" && std::fabs(e.torch) < 1e-11 &&
      std::fabs(e.ember) < 1e-11)
    return "logaddexp's weighted second derivative where the two sides' terms cancel to 0: both libraries give "
           "rounding noise below 1e-11, differently (libtorch 2.x's formula)";
  if (op == "logaddexp2" && !derivative && category == "zero-sign" && e.has_b && e.a == e.b && e.ember == 0)
    return "logaddexp2(-1, -1) = -1 + 1 is exactly 0: Ember divides log1p(1) by ln 2 (exactly 1) and gives +0; "
           "libtorch 2.x's f16 path rounds to -0";
  return nullptr;
}

/// Second-order gradients (Call::order 2, f64): why one differing element is expected. The
/// first-order rules do not apply to them.
inline const char* known_second_order(const Call& c, const std::string& category, const Element& e) {
  const std::string& op = c.op;
  if (const char* why = known_gamma(c, category, e)) return why;
  if (const char* why = known_special(c, DT::F64, category, e)) return why;
  if (category == "zero-sign")
    return "the sign of an exact-zero second derivative, which follows how each library's formula reaches zero: "
           "libtorch's double-backward formulas multiply by 0/1 masks (g * 0 = -0 for a negative g), Ember's "
           "recorded backwards select through where (+0) and its sums start from their first product (0 * -w = -0)";
  if (category != "value") return nullptr;
  if ((op == "elu" || op == "selu" || op == "celu") && e.a == 0 && e.torch == 0 && std::isfinite(e.ember) &&
      e.ember != 0)
    return "elu, selu and celu at x = 0: their first derivative takes the negative branch there (x <= 0) in both "
           "libraries, but libtorch's elu_double_backward masks with x < 0 (0); Ember differentiates the branch the "
           "first derivative took";
  if (op == "softplus" && c.has_params && e.a * c.p[0] == c.p[1] && e.torch == 0 && std::isfinite(e.ember))
    return "softplus at beta x = threshold: the first derivative is sigmoid(beta x) there in both libraries, but "
           "libtorch's softplus_double_backward masks with beta x < threshold (0); Ember differentiates the sigmoid";
  if (op == "mish" && e.a >= 700 && std::isnan(e.torch) && e.ember == 0)
    return "mish at x >= 700: libtorch's second derivative overflows exp(x) (NaN); the limit, Ember's, is 0";
  if (op == "binary_cross_entropy" && (e.a == 0 || e.a == 1) && !std::isfinite(e.torch) && std::isfinite(e.ember))
    return "binary_cross_entropy's second derivative at p = 0 or 1: libtorch's (p^2 - 2py + y) / ((p + eps)^2 (1 - p + "
           "eps)^2) is inf or NaN there; Ember differentiates its first derivative (p - y) / max(p (1 - p), 1e-12)";
  if ((op == "elu" || op == "selu" || op == "celu") && std::isnan(e.a) && e.ember == 0 && std::isnan(e.torch))
    return "elu, selu and celu at a NaN input: Ember's first derivative takes the positive branch (a constant, "
           "second derivative 0); libtorch's is NaN";
  if (op == "celu" && std::fabs(e.ember - e.torch) <= 1e-7 * std::fabs(e.torch))
    return "libtorch's f64 celu derivatives use the f32 constant 1/alpha; Ember's are exact";
  auto nonfinite = [](double v) { return !std::isfinite(v); };
  if ((op == "cumprod" || op == "var" || op == "std") && slice_has(c, e, static_cast<int>(c.args.at(0)), nonfinite))
    return "a second derivative through a slice holding inf or NaN: libtorch's closed forms and Ember's give NaN or "
           "inf at different places";
  if (op == "prod" && c.kind == Kind::Reduce && c.dims.empty() && e.torch == 0 && std::isnan(e.ember)) {
    int zeros = 0;
    for (int64_t i = 0; i < c.a.numel(); ++i) zeros += c.a.at(i) == 0;
    if (zeros >= 3 && !all_finite(c.a))
      return "prod's second derivative over a slice with three or more zeros and an inf or NaN: libtorch's shortcut "
             "gives 0; Ember's products of the other elements follow IEEE (0 * inf = NaN)";
  }
  if (op == "prod" && c.kind == Kind::Reduce && !std::isfinite(e.a) && std::isnan(e.torch) && std::isfinite(e.ember))
    return "prod's second derivative for the inf or NaN element of a slice: the products that leave it out are "
           "finite (Ember's); libtorch's formula divides by the element (NaN)";
  if (op == "pow" && e.output == 1 && e.a == 0 && std::isnan(e.torch) && std::isfinite(e.ember))
    return "pow's mixed second derivative at a = 0, where both libraries mask the exponent gradient g y log(a) to 0: "
           "libtorch differentiates log(0) inside it (NaN); Ember's masked branch has gradient 0";
  if (op == "norm" && c.args.at(0) > 0 && c.args.at(0) < 1 && std::isnan(e.torch) && !std::isnan(e.ember)) {
    bool zero = false;
    for (int64_t i = 0; i < c.ins.at(0).numel(); ++i) zero = zero || c.ins[0].at(i) == 0;
    if (zero)
      return "the second derivative of a p < 1 norm with a zero element (|x|^(p-1) is inf there; both mask the "
             "first derivative at zeros to 0): libtorch's is NaN, Ember's inf or 0";
  }
  if (op == "scatter_reduce" && c.args.at(1) == 1 && std::fabs(e.ember) < 1e-12 &&
      (std::isnan(e.torch) || std::fabs(e.torch) > 1e20 || std::fabs(e.torch * e.a) < 1e-12))
    return "scatter_reduce prod's second derivative: libtorch differentiates its g * y / x again (y / x^2 for a tiny "
           "x: huge, NaN, or a residue of cancelling terms of that size); Ember's gradient, the product of the other "
           "elements, does not divide";
  if (op == "binary_cross_entropy" && e.a > 0 && e.a < 1 && std::fabs(e.ember - e.torch) <= 1e-8 * std::fabs(e.torch))
    return "binary_cross_entropy's second derivative: libtorch's formula adds eps = 1e-12 to p and 1 - p (its first "
           "derivative clamps p (1 - p) at eps instead), ~1e-12 / p relative, and the weighted terms cancel (measured: "
           "up to 2e-9); Ember differentiates its first derivative";
  if (op == "hypot" && std::min(std::fabs(e.a), std::fabs(e.b)) < 1e-6 * std::max(std::fabs(e.a), std::fabs(e.b)) &&
      std::fabs(e.ember - e.torch) <= 2e-8 * std::fabs(e.torch))
    return "hypot's second derivative where one operand is below 1e-6 of the other: 1/r - x^2/r^3 cancels to y^2/r^3, "
           "and the two libraries' recorded formulas round in different orders (measured: up to 7e-9 relative)";
  if (op == "normalize" && e.a != 0 &&
      std::fabs(e.ember - e.torch) <= 1e-14 * 3.5 * static_cast<double>(c.ins.at(0).numel()) / (e.a * e.a))
    return "normalize's second derivative: terms of size w v / x^2 (w, v: the weights of the two passes) cancel, "
           "exactly where a slice holds one element (x / |x| is constant); the residues differ in rounding";
  return nullptr;
}

/// Why one differing element is expected; nullptr when it is not.
inline const char* known_element(const Call& c, DT result, const std::string& category, const Element& e) {
  const std::string& op = c.op;
  if (c.order == 2) return known_second_order(c, category, e);
  if (category == "zero-sign" && c.inplace == 1 && e.torch == 0 && !std::signbit(e.torch) && std::signbit(e.ember))
    return "an in-place op's zero gradient over the whole tensor: the libtorch side writes op(clone) with copy_, "
           "whose backward adds a +0 for the overwritten values to the clone's -0 (+0); Ember's in-place op on the "
           "whole tensor has one path";
  if (category == "zero-sign" && c.inplace == 3 && e.output == 1 && e.ember == 0 && !std::signbit(e.ember) &&
      std::signbit(e.torch))
    return "a -0 gradient through an as_strided view of the second operand: Ember's as_strided backward adds the "
           "view's gradient into zeros (+0 + -0 = +0); libtorch's keeps the -0";
  if (const char* why = known_gamma(c, category, e)) return why;
  if (const char* why = known_special(c, result, category, e)) return why;
  if (op == "trace" && c.grad && v1() && category == "value" && e.output == 0 && c.ins.at(0).shape.size() == 2) {
    const int64_t rows = c.ins[0].shape[0], cols = c.ins[0].shape[1];
    if (rows > cols && e.torch == 1 && e.ember == 0 && e.index % (cols + 1) == 0 && e.index / (cols + 1) >= cols)
      return "trace of a tall matrix: libtorch 1.13's backward puts ones every cols + 1 elements to the end of the "
             "flattened matrix, past the diagonal's last element (fixed in PyTorch 2); Ember's gradient is the "
             "diagonal's";
  }
  if (op == "gelu_backward" && c.kind == Kind::Binary && c.a.dt != c.b.dt)
    return "an autograd-internal op on mixed dtypes (Ember never calls it so): libtorch's path for f32 with "
           "bf16 gives 0 for NaN inputs";
  if (category == "zero-sign" && v2() && op == "softshrink" && !c.grad && std::signbit(e.a) && std::signbit(e.torch))
    return "softshrink between the bounds: +0 (Ember, libtorch 1.13, libtorch 2.x's vector loop); libtorch 2.x's "
           "scalar loop for the tail of a row gives x * 0 (-0 for a negative x)";
  if (category == "zero-sign" && v1() && (op == "elu" || op == "selu" || op == "celu") && e.a == 0 && std::signbit(e.a))
    return "elu, selu and celu at -0: libtorch 1.13 gives a zero of alpha's sign; PyTorch 2 and Ember keep -0";
  if (category == "zero-sign" && v2() && op == "unique" && e.ember == 0 && e.torch == 0)
    return "+0 and -0 are one value to unique: which of them represents it is unspecified (libtorch 2.x sorts "
           "unstably; Ember keeps the first in input order)";
  if (category == "zero-sign") {
    if (c.grad && c.kind == Kind::Named && op == "grid_sample")
      return "grid_sample's gradient: sums of products with zero weights, whose zero's sign depends on the order";
    if ((op == "maximum" || op == "minimum" || op == "fmax" || op == "fmin") && e.a == 0 && e.b == 0)
      return "+0 against -0 is a tie: Ember returns the first operand; libtorch's answer depends on its code path";
    if (selects_among_ties(op) && e.ember == 0 && e.torch == 0)
      return "+0 and -0 compare equal: which of the tied zeros is picked is unspecified (in both libraries)";
    // Values only: median's gradient among ties agrees (no rule excuses it).
    if ((op == "median" || op == "nanmedian") && !c.grad && e.ember == 0 && e.torch == 0)
      return "a median that is a zero of an input holding both +0 and -0: they compare equal, and which one the "
             "selection returns is unspecified (libtorch selects with nth_element; Ember takes the first in input "
             "order)";
    if (op == "grid_sample" && c.args.at(1) == 0)
      return "samples reading the zeros padding: Ember's weighted sum can give -0 (a negative weight or pixel times "
             "the padding's 0), libtorch +0";
    if ((op == "conv1d" || op == "conv2d" || op == "conv3d" || op == "conv_transpose1d" || op == "conv_transpose2d" ||
         op == "conv_transpose3d" ||
         op == "sdpa" || (c.grad && (op == "rnn_relu" || op == "rnn_relu_cell" || op == "mha" || op == "mha_f" || is_transformer_module(op)))) &&
        (c.ins.size() == 2 || c.grad))
      return "an exact zero output without bias (a window over padding), or an exact zero gradient: Ember's sum "
             "starts from the first product (0 * -w = -0), libtorch's from +0";
    if (v2() && c.grad && op == "binary_cross_entropy" && e.has_b && e.a == 0.5 && e.ember == 0 && e.torch == 0)
      return "binary_cross_entropy's target gradient at p = 0.5: libtorch 2.x's -logit(p) is -0; Ember's "
             "log(1 - p) - log(p) is +0";
    if (c.grad && op == "norm" && e.a == 0 && e.ember == 0 && e.torch == 0)
      return "the sign of a zero gradient of a norm (at a -0 element): x |x|^(p-2) in libtorch, masked in Ember";
    if ((op == "gelu" || op == "gelu_tanh") && std::signbit(e.ember) && e.a <= 0)
      return "gelu(x) = x * Phi(x) keeps the sign of a non-positive x (-0), as IEEE multiplication; libtorch gives +0";
    return nullptr;
  }
  if (category != "value") return nullptr;
  if (c.grad && c.kind == Kind::Named && e.output == 0 && tied(c, e) && selects_among_ties(op))
    return "a gradient through a selection among tied values: which of the equal elements is picked (and takes the "
           "gradient) is unspecified, in both libraries";
  if ((v1() || (torch_major() == 2 && torch_minor() < 15)) && (op == "quantile" || op == "nanquantile") &&
      quantile_rank_in_f32_differs(c, e))
    return "quantile of an f32 tensor: libtorch before 2.15 computes the rank q (n - 1) in f32, 2.15 and Ember in f64; "
           "where the f32 product rounds onto a half (nearest) or a whole number (lower, higher), another element is "
           "picked";
  if (v1() && op == "histc" && e.index == 0 && e.torch - e.ember == nan_count(c.ins.at(0)))
    return "histc of an input holding NaN: libtorch 1.13 counts each NaN in the first bin (PyTorch 2 and Ember, "
           "as documented, ignore NaN)";
  if (c.grad && c.kind == Kind::Named && (op == "var" || op == "std" || op == "cumprod") && !all_finite(c.ins.at(0)))
    return "a gradient through a slice holding inf or NaN (var/std: NaN themselves; cumprod: inf * 0 terms): "
           "libtorch's closed forms and Ember's give NaN or inf at different places";
  if (v1() && op == "norm" && !c.grad && result == DT::F16 && std::isinf(e.torch) && std::isfinite(e.ember))
    return "an f16 norm whose sum of |x|^p overflows f16: libtorch 1.13 sums in f16; PyTorch 2 and Ember in f32";
  auto nonfinite = [](double v) { return !std::isfinite(v); };
  auto is_inf = [](double v) { return std::isinf(v); };
  auto is_nan = [](double v) { return std::isnan(v); };
  if (c.grad && op == "var_mean" && slice_has(c, e, static_cast<int>(c.args.at(0)), nonfinite))
    return "a gradient through a slice holding inf or NaN: libtorch's closed form and Ember's give NaN or inf at "
           "different places";
  if (op == "var_mean" && !c.grad && e.output == 1 && std::isinf(e.ember) && std::isnan(e.torch) &&
      slice_has(c, e, static_cast<int>(c.args.at(0)), is_inf) && !slice_has(c, e, static_cast<int>(c.args.at(0)), is_nan))
    return "the mean of a slice holding an infinity: libtorch's var_mean updates a running mean (Welford), where "
           "inf - inf gives NaN; Ember's mean is the infinity, as torch.mean's";
  if (c.grad && op == "scatter_reduce" && std::isnan(e.torch) && !std::isnan(e.ember)) {
    const double reduce = c.args.at(1);
    if (reduce == 1 && e.output == 0 && !std::isfinite(e.a))
      return "scatter_reduce prod's gradient for an inf or NaN element: libtorch's y / x gives NaN also where the "
             "element is not scattered to (y = x); Ember passes the gradient there";
    if (reduce == 3 || reduce == 4)
      return "scatter_reduce amax/amin's gradient where a group's result is NaN: libtorch shares it among the elements "
             "equal to NaN (none: 0 / 0); Ember gives it to the NaN elements, as max over a dim does";
  }
  if (c.grad && op == "scatter_reduce" && (c.args.at(1) == 3 || c.args.at(1) == 4) && c.args.at(2) == 0 &&
      e.output == 2 && std::isfinite(e.ember) && std::isfinite(e.torch) && e.torch != 0) {
    // The share g / n of an element tied with n - 1 others for the group's extreme: libtorch
    // also counts the excluded input element where it equals the result (g / (n + 1)).
    for (int n = 1; n <= 8; ++n)
      if (std::fabs(e.torch * (n + 1) - e.ember * n) <= 1e-6 * std::fabs(e.ember * n))
        return "scatter_reduce amax/amin without the input's values: libtorch still counts the excluded input "
               "element among the ties for the result when it splits the gradient; Ember counts the sources only";
  }
  if (c.grad && op == "binary_cross_entropy" && e.has_b && (e.a == 0 || e.a == 1) && std::isinf(e.torch) &&
      std::isfinite(e.ember))
    return "binary_cross_entropy's gradient for the target at p = 0 or 1: libtorch's is -logit(p) = inf; Ember "
           "differentiates the loss it computes, whose logs PyTorch and Ember clamp at -100";
  if (c.grad && op == "binary_cross_entropy" && result == DT::F64 && (e.a == 0 || e.a == 1) &&
      std::fabs(e.ember - e.torch) <= 1e-8 * std::fabs(e.torch))
    return "binary_cross_entropy's gradient for p at 0 or 1, (p - y) / 1e-12: libtorch's 1e-12 is a float "
           "(9.99999996e-13) also in f64";
  if (c.grad && op == "ctc_loss" && std::isnan(e.torch) && e.ember == 0 && c.args.at(2) == 0)
    return "the gradient of an infinite CTC loss (a target its input is too short for) without zero_infinity: "
           "libtorch's is NaN; Ember's is 0, the gradient of log(0)'s logsumexp (the loss itself is inf in both)";
  if (c.grad && op == "norm" && e.a == 0 && c.args.at(0) > 0 && c.args.at(0) < 1 && std::isnan(e.torch) &&
      e.ember == 0 && !all_finite(c.ins.at(0)))
    return "the gradient of a p < 1 norm at a zero element of a slice holding inf or NaN: libtorch's mask for "
           "zeros misses there (inf * 0); Ember's 0 is the gradient it gives at zeros elsewhere, as PyTorch";
  // Winograd F(4x4, 3x3) for f32 (ops/conv_algorithm.hpp): its transforms scale a 3x3
  // stride-1 convolution's rounding error by ~10x over a direct sum's. Bounded here by 1e-6 of
  // the largest possible sum of |terms| (9 C max|x| max|w|; measured: up to 3e-7 of it).
  // Other f32 2-d convolutions sum in another order than libtorch: within 2e-7 (a few ulp)
  // of that sum.
  if (op == "conv2d" && !c.grad && result == DT::F32) {
    auto max_abs = [](const Buf& b) {
      double m = 0;
      for (int64_t i = 0; i < b.numel(); ++i)
        if (std::isfinite(b.at(i))) m = std::max(m, std::fabs(b.at(i)));
      return m;
    };
    const std::vector<int64_t>& w = c.ins.at(1).shape;
    const double terms = static_cast<double>(w.at(1) * w.at(2) * w.at(3)) * max_abs(c.ins.at(0)) * max_abs(c.ins.at(1));
    const bool winograd = c.ins.at(0).shape.at(1) >= 8 && w.at(0) >= 8 && w.at(2) == 3 && w.at(3) == 3 &&
                          c.args.at(0) == 1 && c.args.at(1) == 1 && c.args.at(4) == 1 && c.args.at(5) == 1 &&
                          c.args.at(6) == 1;
    if (winograd && std::fabs(e.ember - e.torch) <= 1e-6 * terms)
      return "an f32 3x3 convolution by Winograd F(4x4, 3x3): its transforms scale the rounding error ~10x over a "
             "direct sum's (ops/conv_algorithm.hpp)";
    if (std::fabs(e.ember - e.torch) <= 2e-7 * terms)
      return "an f32 convolution's sum in another order than libtorch's: a few ulp of the sum of |terms|";
  }
  if (c.grad && c.kind == Kind::Reduce && (op == "amax" || op == "amin") && std::isnan(e.torch) &&
      (std::isnan(e.a) ? std::isfinite(e.ember) : e.ember == 0) &&
      reduced_slice_has(c, e, [](double v) { return std::isnan(v); }))
    return "amax/amin's gradient where the slice holds NaN (the result): libtorch shares it among the elements equal "
           "to the result (none: 0 / 0 = NaN for all); Ember gives it to the NaN elements, as max over a dim does";
  if (c.grad && c.kind == Kind::Reduce && op == "prod" && c.dims.empty() && e.torch == 0 && std::isnan(e.ember)) {
    int zeros = 0;
    for (int64_t i = 0; i < c.a.numel(); ++i) zeros += c.a.at(i) == 0;
    if (zeros >= 2 && !all_finite(c.a))
      return "prod's gradient over a slice with two or more zeros and an inf or NaN: libtorch's shortcut for two "
             "zeros gives 0; Ember's products of the other elements follow IEEE (0 * inf = NaN)";
  }
  if (v1() && c.grad && op == "pow" && c.kind == Kind::Binary && c.a.dt == DT::F32 && c.b.dt == DT::F64 &&
      e.output == 1 && std::fabs(e.ember - e.torch) <= 1e-6 * std::fabs(e.torch))
    return "pow's exponent gradient for an f32 base and an f64 exponent: libtorch 1.13 takes log(a) in f32; PyTorch "
           "2 and Ember in the result's dtype, f64";
  if (v1() && c.grad && op == "clamp_tensors" && std::isnan(e.a))
    return "clamp's gradient at a NaN x with tensor bounds: libtorch 1.13 gives 0; PyTorch 2 and Ember keep g";
  if (v1() && scales_by_0d(c, result))
    return "f16/bf16 times or over a 0-d operand: libtorch 1.13 rounds the operand to f16/bf16 first (1e10 -> inf); "
           "PyTorch 2 and Ember compute in f32 with its own value";
  if (v1() && c.grad && op == "clamp" && c.has_params && (e.a == c.p[0] || e.a == c.p[1]))
    return "clamp's gradient at a bound: libtorch 1.13 passes it; PyTorch 2 and Ember give 0 (strictly inside only)";
  if (v1() && c.grad && op == "atan2" && !std::isfinite(e.torch) && e.ember == 0 &&
      (result == DT::F32 ? static_cast<float>(e.a) * static_cast<float>(e.a) + static_cast<float>(e.b) * static_cast<float>(e.b)
                         : e.a * e.a + e.b * e.b) == 0)
    return "atan2's gradient where a^2 + b^2 is 0: libtorch 1.13 multiplies by its reciprocal, inf (NaN or "
           "inf); PyTorch 2 and Ember take that reciprocal as 0";
  if (v1() && c.grad && (op == "fmax" || op == "fmin") && e.has_b && e.a == e.b)
    return "fmax/fmin's gradient at a tie: libtorch 1.13 gives all of it to the first operand; PyTorch 2 and Ember "
           "share it equally, as maximum/minimum";
  if (v2() && op == "interpolate_aa" && c.args.at(1) == 1 && c.args.at(0) != static_cast<double>(c.ins.at(0).shape.at(2)) &&
      e.index % static_cast<int64_t>(c.args.at(0)) != 0)
    return "antialiased bilinear or bicubic to an output width of 1 with the height resized: libtorch 2.x repeats the "
           "first output row in every row (a loop over PyTorch's own weight formula gives 1.13's and Ember's values; "
           "measured over 1-6 x 1-6 inputs to 1-9 x 1-9 outputs)";
  if (c.grad && is_transformer_module(op) && result == DT::F32 && c.ins.at(0).shape.back() == 1 && e.ember == 0 &&
      std::fabs(e.torch) < 1e-3)
    return "layer normalisation over a single feature (d_model 1): the normalised value is exactly 0, so every "
           "gradient that flows through a norm is 0; libtorch's f32 kernels (x * rstd - mean * rstd, rstd = "
           "1/sqrt(eps)) leave a rounding residue of rstd's size";
  if (v2() && (op == "gelu") && e.a == std::numeric_limits<double>::infinity() && std::isnan(e.torch) &&
      std::isinf(e.ember))
    return "gelu(+inf): libtorch 2.x gives NaN; the limit, which Ember, libtorch 1.13 and PyTorch's tanh gelu give, "
           "is inf";
  if ((op == "sinh" || op == "cosh") && std::isinf(e.torch) && std::isfinite(e.ember) &&
      std::fabs(op == "sinh" ? std::sinh(e.a) : std::cosh(e.a)) <= max_finite(result))
    return "libtorch overflows (exp(x) / 2) where the result is still finite; Ember's value is the finite one";
  if (op == "to" && !c.ins.empty() && dt_floating(c.ins[0].dt) && !dt_floating(result) && result != DT::Bool &&
      (std::isnan(e.a) || e.a <= int_min(result) - 1 || e.a >= int_max(result) + 1))
    return "a float outside the integer type's range (or NaN): C++ leaves the conversion undefined; libtorch wraps "
           "through int32 (NaN -> INT_MIN), Ember saturates (NaN -> 0)";
  if (v1() && op == "linspace" && !dt_floating(result))
    return "an integer linspace: both step between the ends as converted (-2 and 7), but libtorch 1.13's int64 "
           "kernel gives [-2, -1, 0, 0, 1, 1, 2, 3, 5, 6, 7] in 11 steps where the f64 steps truncate to [-2, -1, 0, "
           "0, 1, 2, 3, 4, 5, 6, 7] (Ember; in 4 steps both give [-2, 1, 4, 7])";
  if (c.grad && op == "interpolate1d" && c.args.at(1) == 0 && c.args.at(3) != 0 && shortcut_size(c))
    return "1-d nearest with a scale factor where the output is once or twice the input: libtorch's forward takes "
           "floor(i / factor), as Ember's, but its backward takes i (or i / 2), so its gradient is not its own "
           "forward's (torch 2.15: x of 6 by 2.1 reads x[0] three times, its gradient counts it twice); Ember's is";
  if (v1() && op == "interpolate" && c.args.at(2) == 0 && c.args.at(4) != 0 && shortcut_size(c))
    return "nearest with a scale factor where the output is twice (or once) the input: libtorch 1.13 takes i / 2 "
           "(or i) for a single image plane and floor(i / factor) for several; Ember always takes i / 2";
  if (c.grad && std::isnan(e.a) && (op == "hardshrink" || op == "softshrink") && e.torch == 0 &&
      e.ember == static_cast<double>(e.index + 1))
    return "the shrinks' gradient at a NaN input: Ember passes it, as libtorch's scalar loop (a row's tail) does; "
           "libtorch's vector loop gives 0";
  if (c.grad && std::isnan(e.a) &&
      (op == "hardtanh" || op == "relu6" || op == "elu" || op == "selu" || op == "celu" || op == "hardswish"))
    return "the gradient at a NaN input: Ember passes it as the branch for x > bounds does (PyTorch's scalar kernels "
           "do too); libtorch's vectorized kernels give 0 (hardtanh, relu6) or NaN (elu, selu, celu, hardswish)";
  if (v1() && c.grad && op == "hardswish" && std::fabs(e.a) == 3)
    return "hardswish's gradient at the kinks x = +-3: PyTorch 2 and Ember take the outer side (0 at -3, 1 at 3), "
           "libtorch 1.13's scalar kernel the inner one (-0.5, 1.5) and its vectorized kernel 1 at 3";
  if (v1() && op == "baddbmm" && c.args.at(0) == 0 && std::isnan(e.torch) && !std::isnan(e.ember) &&
      !all_finite(c.ins.at(0)))
    return "baddbmm with beta = 0 ignores the added tensor (NaN included): libtorch 1.13's CPU kernel lets its NaN "
           "through in about 1 call in 5000 (nondeterministically; measured with random shapes), PyTorch 2 never";
  if (v1() && op == "softshrink" && !c.grad && std::isnan(e.a) && std::isnan(e.ember) && e.torch == 0)
    return "softshrink(NaN): libtorch 1.13 gives 0; PyTorch 2 and Ember keep NaN";
  if (c.grad && op == "logit" && std::isnan(e.a) && c.has_params)
    return "logit's gradient at NaN with an eps: Ember's is NaN (x * (1 - x) is), libtorch's 0";
  if (c.grad && op == "softsign" && std::isinf(e.a) && e.ember == 0)
    return "softsign's gradient at +-inf: Ember's 1 / (1 + |x|)^2 is 0; libtorch differentiates x / (1 + |x|) "
           "through its parts (inf / inf: NaN)";
  if (c.grad && (op == "hardsigmoid" || op == "celu") && result == DT::F64 &&
      std::fabs(e.ember - e.torch) <= 1e-7 * (1 + std::fabs(e.torch)))
    return "libtorch's f64 hardsigmoid and celu gradients use f32 constants (1/6, 1/alpha: 1.000000017 at 0); "
           "Ember's are exact";
  // Layer normalisation keeps f64 statistics and computes its gradients in f64 (Note
  // [Normalisation in f64]): its f32 results must be at least as close to the f64 ones as
  // libtorch's, or within ~1 rounding.
  if (op == "layer_norm" && !std::isnan(e.ref64) &&
      std::fabs(e.ember - e.ref64) <= std::max(std::fabs(e.torch - e.ref64), 1.2e-7 * (1 + std::fabs(e.ref64))))
    return "libtorch's f32 arithmetic cancels where a row's spread is small next to its mean or its gradients are "
           "large next to their spread; Ember's f64 statistics and gradients are at least as close to the f64 result";
  // Batch normalisation keeps f32 arithmetic with shifted sums (Note [Shifted sums in batch
  // normalisation]): its parameter gradients are f32 sums like libtorch's.
  if (op == "batch_norm" && !std::isnan(e.ref64) &&
      std::fabs(e.ember - e.ref64) <= std::max(4 * std::fabs(e.torch - e.ref64), 1e-6 * (1 + std::fabs(e.ref64))))
    return "f32 sums over a channel (the weight and bias gradients): Ember's within 4x libtorch's error from the f64 "
           "result, or within 1e-6 relative of it; its shifted sums avoid the cancellation libtorch's suffer";
  // Instance normalisation is batch normalisation of the (1, N * C, spatial) view (as in
  // PyTorch): the same f32 shifted sums.
  if (op == "instance_norm" && !std::isnan(e.ref64) &&
      std::fabs(e.ember - e.ref64) <= std::max(4 * std::fabs(e.torch - e.ref64), 1e-6 * (1 + std::fabs(e.ref64))))
    return "f32 instance normalisation (batch normalisation's kernel over N * C channels): Ember's error from the "
           "f64 result within 4x libtorch's, or 1e-6 relative (f32 sums)";
  if (op == "group_norm" && !std::isnan(e.ref64) &&
      std::fabs(e.ember - e.ref64) <= 8 * std::max(std::fabs(e.torch - e.ref64), 1e-6 * (1 + std::fabs(e.ref64))))
    return "f32 cancellation in the per-channel weight and bias gradients (the affine part is composite here, its "
           "sums in f32): both libraries' errors from the f64 result are of that order, Ember's within 8x libtorch's";
  if (op == "softsign" && !dt_floating(c.a.dt))
    return "the libtorch side is torch.nn.functional.softsign's x / (1 + |x|), which wraps in integer arithmetic "
           "(|-128| + 1 in i8); Ember computes in f32";
  if (op == "div_trunc" && (result == DT::F16 || result == DT::BF16) && std::fabs(e.ember - e.torch) == 1)
    return "PyTorch rounds a / b to f16/bf16 before truncating (a tensor divisor); Ember truncates the f32 quotient "
           "and then rounds";
  if ((op == "div_floor" || op == "remainder" || op == "fmod") && std::isnan(e.torch) && !std::isnan(e.ember) &&
      std::isfinite(e.a) && e.b != 0 && std::fabs(e.a) / std::fabs(e.b) > max_finite(result))
    return "a / b overflows: libtorch's a - b * trunc(a / b) gives NaN; Ember's fmod is exact (and floor division inf)";
  if (v1() && is_shift(op) && (e.b < 0 || e.b >= bits(result)))
    return "a shift count < 0 or >= the width: libtorch 1.13 shifts by the count modulo the register width (C++ UB); "
           "Ember gives 0 for << and the sign fill for >>, as PyTorch 2.x";
  if (op == "gelu_backward" && e.b <= -2.5)
    return "the tail of gelu's derivative: libtorch's Phi is 0.5 (1 + erf), which cancels for x << 0; Ember's is "
           "erfc-based";
  return nullptr;
}

}  // namespace ediff

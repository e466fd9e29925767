#pragma once
/// Deliberate or understood differences between Ember and libtorch 1.13 that
/// ember-vs-libtorch lists as "known" (with --verbose) instead of failing, each with its
/// reason. A rule names the op and the exact inputs it covers, so that any other difference
/// still fails.

#include "bridge.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

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
};

/// The normalisations, whose f32 results lose digits to cancellation when the variance is
/// small next to eps: there the two libraries' rounding is compared with the f64 result.
inline bool is_normalisation(const std::string& op) {
  return op == "layer_norm" || op == "group_norm" || op == "batch_norm";
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

/// Whether interpolate's output is once or twice its input along a spatial dim.
inline bool shortcut_size(const Call& c) {
  for (int d = 0; d < 2; ++d) {
    const double in = static_cast<double>(c.ins.at(0).shape.at(2 + static_cast<size_t>(d))), out = c.args.at(static_cast<size_t>(d));
    if (out == in || out == 2 * in) return true;
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
      return "libtorch 1.13 has no CPU kernel for this dtype; Ember computes integer inputs in f32 and "
             "f16/bf16 in f32, as it does for every op";
    if (why.find("has no Ember counterpart") != std::string::npos && why.find("Short") != std::string::npos)
      return "Ember has no int16: u8 with i8 promotes to i32 (PyTorch: int16)";
    if (c.op == "hardtanh" && why.find("unsigned type with negative limits") != std::string::npos)
      return "Ember clamps an unsigned tensor to any limits (the negative one has no effect)";
  }
  if (category == "dtype" && (c.op == "relu_backward" || c.op == "gelu_backward" || c.op == "silu_backward"))
    return "an autograd-internal op: Ember only calls it on floating gradients, and computes others in f32";
  if (category == "accept" && !ember.ok && (c.op == "batch_norm" || c.op == "group_norm") &&
      (ember.error.find("more than one value per channel") != std::string::npos ||
       ember.error.find("more than 1 value per group") != std::string::npos))
    return "one value per channel (group) while training: Ember refuses, as PyTorch's torch.nn.functional does; the "
           "ATen op called here does not check";
  if (category == "accept" && !ember.ok && c.op == "max_pool2d" &&
      ember.error.find("a window reads only padding") != std::string::npos)
    return "a max-pooling window that reads only padding: libtorch returns -inf there, Ember refuses the geometry";
  if (category == "shape" && c.op == "unique" && c.ins.at(0).dt == DT::BF16 && t_has_both_zeros(torch))
    return "libtorch 1.13's bf16 unique keeps -0 and +0 apart (its f32 unique merges them, as Ember does for every "
           "dtype)";
  return nullptr;
}

/// Why one differing element is expected; nullptr when it is not.
inline const char* known_element(const Call& c, DT result, const std::string& category, const Element& e) {
  const std::string& op = c.op;
  if (op == "gelu_backward" && c.kind == Kind::Binary && c.a.dt != c.b.dt)
    return "an autograd-internal op on mixed dtypes (Ember never calls it so): libtorch 1.13's path for f32 with "
           "bf16 gives 0 for NaN inputs";
  if (category == "zero-sign") {
    if ((op == "maximum" || op == "minimum" || op == "fmax" || op == "fmin") && e.a == 0 && e.b == 0)
      return "+0 against -0 is a tie: Ember returns the first operand; libtorch's answer depends on its code path";
    if ((op == "topk" || op == "kthvalue" || op == "sort" || op == "max_dim" || op == "min_dim" || op == "cummax" ||
         op == "cummin") &&
        e.ember == 0 && e.torch == 0)
      return "+0 and -0 compare equal: which of the tied zeros is picked is unspecified (in both libraries)";
    if (op == "grid_sample" && c.args.at(1) == 0)
      return "samples reading the zeros padding: Ember's weighted sum can give -0 (a negative weight or pixel times "
             "the padding's 0), libtorch +0";
    if ((op == "conv2d" || op == "conv_transpose2d") && c.ins.size() == 2)
      return "an exact zero output without bias (a window over padding): Ember's sum starts from the first product "
             "(0 * -w = -0), libtorch's from +0";
    if ((op == "gelu" || op == "gelu_tanh") && std::signbit(e.ember) && e.a <= 0)
      return "gelu(x) = x * Phi(x) keeps the sign of a non-positive x (-0), as IEEE multiplication; libtorch gives +0";
    return nullptr;
  }
  if (category != "value") return nullptr;
  if ((op == "sinh" || op == "cosh") && std::isinf(e.torch) && std::isfinite(e.ember) &&
      std::fabs(op == "sinh" ? std::sinh(e.a) : std::cosh(e.a)) <= max_finite(result))
    return "libtorch overflows (exp(x) / 2) where the result is still finite; Ember's value is the finite one";
  if (op == "to" && !c.ins.empty() && dt_floating(c.ins[0].dt) && !dt_floating(result) && result != DT::Bool &&
      (std::isnan(e.a) || e.a <= int_min(result) - 1 || e.a >= int_max(result) + 1))
    return "a float outside the integer type's range (or NaN): C++ leaves the conversion undefined; libtorch wraps "
           "through int32 (NaN -> INT_MIN), Ember saturates (NaN -> 0)";
  if (op == "linspace" && !dt_floating(result))
    return "an integer linspace: both step between the ends as converted (-2 and 7), but libtorch 1.13's int64 "
           "kernel gives [-2, -1, 0, 0, 1, 1, 2, 3, 5, 6, 7] in 11 steps where the f64 steps truncate to [-2, -1, 0, "
           "0, 1, 2, 3, 4, 5, 6, 7] (Ember; in 4 steps both give [-2, 1, 4, 7])";
  if (op == "interpolate" && c.args.at(2) == 0 && c.args.at(4) != 0 && shortcut_size(c))
    return "nearest with a scale factor where the output is twice (or once) the input: libtorch 1.13 takes i / 2 "
           "(or i) for a single image plane and floor(i / factor) for several; Ember always takes i / 2";
  if (c.grad && std::isnan(e.a) &&
      (op == "hardtanh" || op == "relu6" || op == "elu" || op == "selu" || op == "celu" || op == "hardswish"))
    return "the gradient at a NaN input: Ember passes it as the branch for x > bounds does (PyTorch's scalar kernels "
           "do too); libtorch 1.13's vectorized kernels give 0 (hardtanh, relu6) or NaN (elu, selu, celu, hardswish)";
  if (c.grad && op == "hardswish" && e.a == 3)
    return "hardswish's gradient at the kink x = 3: libtorch 1.13's scalar kernel gives 1.5 (Ember), its vectorized "
           "kernel 1";
  if (c.grad && op == "logit" && std::isnan(e.a) && c.has_params)
    return "logit's gradient at NaN with an eps: Ember's is NaN (x * (1 - x) is), libtorch 1.13's 0";
  if (c.grad && op == "softsign" && std::isinf(e.a) && e.ember == 0)
    return "softsign's gradient at +-inf: Ember's 1 / (1 + |x|)^2 is 0; libtorch differentiates x / (1 + |x|) "
           "through its parts (inf / inf: NaN)";
  if (c.grad && (op == "hardsigmoid" || op == "celu") && result == DT::F64 &&
      std::fabs(e.ember - e.torch) <= 1e-7 * (1 + std::fabs(e.torch)))
    return "libtorch 1.13's f64 hardsigmoid and celu gradients use f32 constants (1/6, 1/alpha: 1.000000017 at 0); "
           "Ember's are exact";
  if (is_normalisation(op) && !std::isnan(e.ref64) &&
      std::fabs(e.ember - e.ref64) <= 8 * std::max(std::fabs(e.torch - e.ref64), 1e-6 * (1 + std::fabs(e.ref64))))
    return "f32 cancellation where a row's spread is small next to its mean (x - mean loses the digits the f32 mean "
           "lacks): both libraries' errors from the f64 result are of that order, Ember's within 8x libtorch's";
  if (op == "softsign" && !dt_floating(c.a.dt))
    return "the libtorch side is torch.nn.functional.softsign's x / (1 + |x|), which wraps in integer arithmetic "
           "(|-128| + 1 in i8); Ember computes in f32";
  if (op == "div_trunc" && (result == DT::F16 || result == DT::BF16) && std::fabs(e.ember - e.torch) == 1)
    return "PyTorch rounds a / b to f16/bf16 before truncating (a tensor divisor); Ember truncates the f32 quotient "
           "and then rounds";
  if ((op == "div_floor" || op == "remainder" || op == "fmod") && std::isnan(e.torch) && !std::isnan(e.ember) &&
      std::isfinite(e.a) && e.b != 0 && std::fabs(e.a) / std::fabs(e.b) > max_finite(result))
    return "a / b overflows: libtorch's a - b * trunc(a / b) gives NaN; Ember's fmod is exact (and floor division inf)";
  if (is_shift(op) && (e.b < 0 || e.b >= bits(result)))
    return "a shift count < 0 or >= the width: libtorch 1.13 shifts by the count modulo the register width (C++ UB); "
           "Ember gives 0 for << and the sign fill for >>, as PyTorch 2.x";
  if (op == "gelu_backward" && e.b <= -2.5)
    return "the tail of gelu's derivative: libtorch's Phi is 0.5 (1 + erf), which cancels for x << 0; Ember's is "
           "erfc-based";
  return nullptr;
}

}  // namespace ediff

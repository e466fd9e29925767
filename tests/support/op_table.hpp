#pragma once
/// The op table of the table-driven op tests (tests/test_ops_table.cpp): one row per op of
/// include/ember/ops/*_list.def with its input domain, parameters and tolerances. The
/// coverage test (tests/test_op_coverage.cpp) fails when a .def row has no row here.
///
/// Tolerance: |got - ref| <= tol * (1 + |ref|), ref computed in double from the inputs as
/// rounded to the tested dtype and then rounded to the result dtype. Defaults: f32 1e-6
/// (1e-5 for transcendental ops), f64 1e-12, f16/bf16 1e-2; integer and bool results are
/// compared exactly.

#include <ember/core/dtype.hpp>
#include <ember/ops/op_kinds.hpp>

#include <array>
#include <cmath>
#include <vector>

namespace ember::test {

struct Domain {
  double lo = -3, hi = 3;
};

inline constexpr double kDefaultTolF32 = 1e-6;
inline constexpr double kTranscendentalTolF32 = 1e-5;
inline constexpr double kTolF64 = 1e-12;
inline constexpr double kTolHalf = 1e-2;

struct UnaryRow {
  ops::UnaryOp op;
  Domain dom;                ///< floating inputs are uniform in (lo, hi); integers in [ceil lo, floor hi]
  ops::UnaryParams params;   ///< passed to the op and to the reference
  double tol_f32 = kDefaultTolF32;
  double tol_f64 = kTolF64;
  bool specials = true;      ///< also run with NaN, +-inf, +-0 among the inputs
};

struct BinaryRow {
  ops::BinaryOp op;
  Domain a, b;               ///< floating domains
  Domain ia{-5, 5}, ib{-5, 5};  ///< integer domains (clipped to the dtype's range)
  bool nonzero_b = false;    ///< b is drawn away from zero (|b| >= max(0.5, lo))
  bool shift = false;        ///< b is a shift count in [0, bits + 1]
  double tol_f32 = kDefaultTolF32;
  bool specials = true;
};

struct ReduceRow {
  ops::ReduceOp op;
  Domain dom;
  Domain idom{-3, 3};
  double tol_f32 = 1e-5;     ///< relative to the same reduction of |x| (sums) or |ref|
};

constexpr ops::UnaryParams P(double a = 0, double b = 0, double c = 0, bool has_a = true, bool has_b = true) {
  ops::UnaryParams p;
  p.a = a, p.b = b, p.c = c, p.has_a = has_a, p.has_b = has_b;
  // The integer bounds clamp reads (Tensor::clamp sets both forms from one Scalar).
  auto exact = [](double v) { return v > -9e18 && v < 9e18 ? static_cast<int64_t>(v) : int64_t{0}; };
  p.ia = exact(a), p.ib = exact(b);
  return p;
}

using U = ops::UnaryOp;
using B = ops::BinaryOp;
using R = ops::ReduceOp;
inline constexpr double T5 = kTranscendentalTolF32;

// clang-format off
inline constexpr UnaryRow kUnaryRows[] = {
  {U::Neg,         {-10, 10}},
  {U::Abs,         {-10, 10}},
  {U::Sign,        {-3, 3}},
  {U::Exp,         {-10, 10}, {}, T5},
  {U::Exp2,        {-10, 10}, {}, T5},
  {U::Expm1,       {-5, 5}, {}, T5},
  {U::Log,         {0.1, 10}, {}, T5},
  {U::Log2,        {0.1, 10}, {}, T5},
  {U::Log10,       {0.1, 10}, {}, T5},
  {U::Log1p,       {-0.9, 10}, {}, T5},
  {U::Sqrt,        {0, 10}, {}, T5},
  {U::Rsqrt,       {0.1, 10}, {}, T5},
  {U::Reciprocal,  {0.1, 10}},
  {U::Square,      {-10, 10}},
  {U::Sin,         {-6, 6}, {}, T5},
  {U::Cos,         {-6, 6}, {}, T5},
  {U::Tan,         {-1.4, 1.4}, {}, T5},
  {U::Asin,        {-0.99, 0.99}, {}, T5},
  {U::Acos,        {-0.99, 0.99}, {}, T5},
  {U::Atan,        {-10, 10}, {}, T5},
  {U::Sinh,        {-5, 5}, {}, T5},
  {U::Cosh,        {-5, 5}, {}, T5},
  {U::Tanh,        {-5, 5}, {}, T5},
  {U::Asinh,       {-20, 20}, {}, T5},
  {U::Acosh,       {1, 20}, {}, T5},
  {U::Atanh,       {-0.99, 0.99}, {}, T5},
  {U::Sigmoid,     {-10, 10}, {}, T5},
  {U::Logit,       {0.01, 0.99}, P(0.05), T5},
  {U::Relu,        {-5, 5}},
  {U::Relu6,       {-3, 9}},
  {U::LeakyRelu,   {-5, 5}, P(0.2)},
  {U::Elu,         {-5, 5}, P(1.5), T5},
  {U::Selu,        {-5, 5}, {}, T5},
  {U::Celu,        {-5, 5}, P(0.7), T5},
  {U::Gelu,        {-5, 5}, {}, T5},
  {U::GeluTanh,    {-5, 5}, {}, T5},
  {U::Silu,        {-10, 10}, {}, T5},
  {U::Mish,        {-10, 10}, {}, T5},
  {U::Softplus,    {-5, 5}, P(2.0, 4.0), T5},
  {U::Softsign,    {-10, 10}},
  {U::Hardtanh,    {-3, 3}, P(-1.5, 2.0)},
  {U::Hardsigmoid, {-5, 5}},
  {U::Hardswish,   {-5, 5}},
  {U::Erf,         {-3, 3}, {}, T5},
  {U::Erfc,        {-3, 3}, {}, T5},
  {U::Erfinv,      {-0.99, 0.99}, {}, T5, 1e-10},
  {U::Lgamma,      {-6, 12}, {}, T5, 1e-11},
  {U::Digamma,     {-6, 12}, P(2.0), T5, 1e-11},  // polygamma(2, x); digamma itself in test_gamma_ops.cpp
  {U::Sinc,        {-6, 6}, {}, T5},
  {U::I0,          {-40, 40}, {}, T5, 1e-13},  // both sides of the series / asymptotic switch at 30
  {U::I0e,         {-40, 40}, {}, T5, 1e-13},
  {U::I1,          {-40, 40}, {}, T5, 1e-13},
  {U::I1e,         {-40, 40}, {}, T5, 1e-13},
  {U::Erfcx,       {-6, 40}, {}, T5, 1e-13},
  {U::Entr,        {-1, 5}, {}, T5},
  {U::Ndtr,        {-10, 10}, {}, T5, 1e-13},
  {U::Ndtri,       {0, 1}, {}, T5, 1e-13},
  {U::LogNdtr,     {-40, 10}, {}, T5, 1e-13},
  {U::Floor,       {-10, 10}},
  {U::Ceil,        {-10, 10}},
  {U::Round,       {-10, 10}},
  {U::Trunc,       {-10, 10}},
  {U::Frac,        {-10, 10}},
  {U::Clamp,       {-2, 5}, P(1.0, 3.0)},
  {U::NanToNum,    {-5, 5}, P(7.0, 100.0, -50.0)},
  {U::Isnan,       {-5, 5}},
  {U::Isinf,       {-5, 5}},
  {U::Isfinite,    {-5, 5}},
  {U::Signbit,     {-5, 5}},
  {U::LogicalNot,  {-2, 2}},
  {U::BitwiseNot,  {-50, 50}},
};

inline constexpr BinaryRow kBinaryRows[] = {
  {B::Add,        {-10, 10}, {-10, 10}},
  {B::Sub,        {-10, 10}, {-10, 10}},
  {B::Mul,        {-10, 10}, {-10, 10}},
  {B::Div,        {-10, 10}, {0.5, 10}, {-20, 20}, {1, 7}, true},
  {B::DivTrunc,   {-10, 10}, {0.5, 5}, {-20, 20}, {1, 7}, true},
  {B::DivFloor,   {-10, 10}, {0.5, 5}, {-20, 20}, {1, 7}, true},
  {B::Remainder,  {-10, 10}, {0.5, 5}, {-20, 20}, {1, 7}, true},
  {B::Fmod,       {-10, 10}, {0.5, 5}, {-20, 20}, {1, 7}, true},
  {B::Pow,        {0.5, 2}, {-2, 2}, {-3, 3}, {0, 4}, false, false, T5},
  {B::Atan2,      {-5, 5}, {-5, 5}, {-5, 5}, {-5, 5}, false, false, T5},
  {B::Maximum,    {-5, 5}, {-5, 5}},
  {B::Minimum,    {-5, 5}, {-5, 5}},
  {B::Fmax,       {-5, 5}, {-5, 5}},
  {B::Fmin,       {-5, 5}, {-5, 5}},
  {B::Hypot,      {-5, 5}, {-5, 5}, {-5, 5}, {-5, 5}, false, false, T5},
  {B::Copysign,   {-5, 5}, {-5, 5}},
  {B::Xlogy,      {-5, 5}, {0, 5}, {-5, 5}, {0, 5}, false, false, T5},
  {B::Xlog1py,    {-5, 5}, {-0.9, 5}, {-5, 5}, {0, 5}, false, false, T5},
  {B::LogAddExp,  {-10, 10}, {-10, 10}, {-5, 5}, {-5, 5}, false, false, T5},
  {B::LogAddExp2, {-10, 10}, {-10, 10}, {-5, 5}, {-5, 5}, false, false, T5},
  {B::Heaviside,  {-2, 2}, {-2, 2}, {-2, 2}, {-2, 2}},
  {B::ReluBackward, {-5, 5}, {-5, 5}},
  {B::GeluBackward, {-5, 5}, {-6, 6}},
  {B::SiluBackward, {-5, 5}, {-8, 8}},
  {B::Eq,         {-2, 2}, {-2, 2}, {-2, 2}, {-2, 2}},
  {B::Ne,         {-2, 2}, {-2, 2}, {-2, 2}, {-2, 2}},
  {B::Lt,         {-2, 2}, {-2, 2}, {-2, 2}, {-2, 2}},
  {B::Le,         {-2, 2}, {-2, 2}, {-2, 2}, {-2, 2}},
  {B::Gt,         {-2, 2}, {-2, 2}, {-2, 2}, {-2, 2}},
  {B::Ge,         {-2, 2}, {-2, 2}, {-2, 2}, {-2, 2}},
  {B::LogicalAnd, {-2, 2}, {-2, 2}, {-2, 2}, {-2, 2}},
  {B::LogicalOr,  {-2, 2}, {-2, 2}, {-2, 2}, {-2, 2}},
  {B::LogicalXor, {-2, 2}, {-2, 2}, {-2, 2}, {-2, 2}},
  {B::BitwiseAnd, {}, {}, {-100, 100}, {-100, 100}},
  {B::BitwiseOr,  {}, {}, {-100, 100}, {-100, 100}},
  {B::BitwiseXor, {}, {}, {-100, 100}, {-100, 100}},
  {B::ShiftLeft,  {}, {}, {-100, 100}, {0, 0}, false, true},
  {B::ShiftRight, {}, {}, {-100, 100}, {0, 0}, false, true},
};

inline constexpr ReduceRow kReduceRows[] = {
  {R::Sum,          {-5, 5}},
  {R::Nansum,       {-5, 5}},
  {R::Prod,         {0.9, 1.1}, {-1, 1}},
  {R::Mean,         {-5, 5}},
  {R::Amax,         {-5, 5}},
  {R::Amin,         {-5, 5}},
  {R::All,          {-1, 1}, {-1, 1}},
  {R::Any,          {-1, 1}, {-1, 1}},
  {R::CountNonzero, {-1, 1}, {-1, 1}},
  {R::Norm1,        {-5, 5}},
  {R::Norm2,        {-5, 5}},
  {R::NormInf,      {-5, 5}},
};
// clang-format on

// ---- lookup and coverage ----------------------------------------------------------------------------
template <class Row, size_t N, class Op>
constexpr const Row* find_row(const Row (&rows)[N], Op op) {
  for (const Row& r : rows)
    if (r.op == op) return &r;
  return nullptr;
}
template <class Row, size_t N, class Op>
constexpr int count_rows(const Row (&rows)[N], Op op) {
  int c = 0;
  for (const Row& r : rows) c += r.op == op;
  return c;
}

/// Every op of the .def tables has exactly one row (checked at compile time in
/// test_op_coverage.cpp, and op by op at run time for a readable failure).
constexpr bool unary_table_complete() {
  bool ok = true;
#define EMBER_UNARY_OP(E, n, r) ok = ok && count_rows(kUnaryRows, ops::UnaryOp::E) == 1;
#include <ember/ops/unary_list.def>
#undef EMBER_UNARY_OP
  return ok;
}
constexpr bool binary_table_complete() {
  bool ok = true;
#define EMBER_BINARY_OP(E, n, r) ok = ok && count_rows(kBinaryRows, ops::BinaryOp::E) == 1;
#include <ember/ops/binary_list.def>
#undef EMBER_BINARY_OP
  return ok;
}
constexpr bool reduce_table_complete() {
  bool ok = true;
#define EMBER_REDUCE_OP(E, n, r) ok = ok && count_rows(kReduceRows, ops::ReduceOp::E) == 1;
#include <ember/ops/reduce_list.def>
#undef EMBER_REDUCE_OP
  return ok;
}

// ---- dtypes each op accepts (from the rules in src/ops/*.cpp) ------------------------------------------
inline constexpr DType kAllDTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::U8,
                                       DType::I8,  DType::I32, DType::I64, DType::Bool};

inline bool accepts(ops::UnaryOp op, DType t) {
  switch (ops::rule(op)) {
    case ops::UnaryRule::Float:
    case ops::UnaryRule::Pred:
    case ops::UnaryRule::Logical: return true;
    case ops::UnaryRule::Same: return t != DType::Bool || op == U::Abs || op == U::Clamp || op == U::NanToNum;
    case ops::UnaryRule::Int: return is_integral(t, true);
  }
  return false;
}
inline bool accepts(ops::BinaryOp op, DType t) {
  switch (ops::rule(op)) {
    case ops::BinaryRule::Arith:
      return t != DType::Bool || op == B::Add || op == B::Mul || op == B::Maximum || op == B::Minimum || op == B::Fmax ||
             op == B::Fmin || op == B::Heaviside;
    case ops::BinaryRule::TrueDiv:
    case ops::BinaryRule::Float:
    case ops::BinaryRule::Compare:
    case ops::BinaryRule::Logical: return true;
    case ops::BinaryRule::Bitwise:
      return is_integral(t, true) && !(t == DType::Bool && (op == B::ShiftLeft || op == B::ShiftRight));
  }
  return false;
}
inline bool accepts(ops::ReduceOp op, DType t) {
  if (op == R::Mean) return is_floating(t);
  return true;
}

/// Result dtypes, as the rules of src/ops/*.cpp state them.
inline DType result_dtype(ops::UnaryOp op, DType t) {
  switch (ops::rule(op)) {
    case ops::UnaryRule::Float: return is_floating(t) ? t : kDefaultFloat;
    case ops::UnaryRule::Pred:
    case ops::UnaryRule::Logical: return DType::Bool;
    default: return t;
  }
}
inline DType result_dtype(ops::BinaryOp op, DType t) {
  switch (ops::rule(op)) {
    case ops::BinaryRule::TrueDiv:
    case ops::BinaryRule::Float: return is_floating(t) ? t : kDefaultFloat;
    case ops::BinaryRule::Compare:
    case ops::BinaryRule::Logical: return DType::Bool;
    default: return t;
  }
}
inline DType result_dtype(ops::ReduceOp op, DType t) {
  switch (ops::rule(op)) {
    case ops::ReduceRule::Sum: return is_floating(t) ? t : DType::I64;
    case ops::ReduceRule::Float: return is_floating(t) ? t : kDefaultFloat;
    case ops::ReduceRule::Same: return t;
    case ops::ReduceRule::Bool: return DType::Bool;
    case ops::ReduceRule::Count: return DType::I64;
  }
  return t;
}

inline double tolerance(DType t, double tol_f32, double tol_f64 = kTolF64) {
  switch (t) {
    case DType::F32: return tol_f32;
    case DType::F64: return tol_f64;
    case DType::F16:
    case DType::BF16: return kTolHalf;
    default: return 0;
  }
}

}  // namespace ember::test

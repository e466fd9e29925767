#pragma once
/// Gradcheck rows for the ops of the .def tables: one row per differentiable op (unary rules
/// Float/Same, binary Arith/TrueDiv/Float, reduce Sum/Float/Same), none for the others. The
/// coverage test (tests/test_op_coverage.cpp) fails when a differentiable op has no row.
/// Domains keep inputs where the op is smooth enough for central differences in f64.

#include "op_table.hpp"

namespace ember::test {

struct UnaryGradRow {
  ops::UnaryOp op;
  Domain dom;
  ops::UnaryParams params;
  bool gradgrad = true;  ///< also check second derivatives
};
struct BinaryGradRow {
  ops::BinaryOp op;
  Domain a, b;
  bool gradgrad = true;
};
struct ReduceGradRow {
  ops::ReduceOp op;
  Domain dom;
  bool gradgrad = true;
};

constexpr bool differentiable(ops::UnaryOp op) {
  return ops::rule(op) == ops::UnaryRule::Float || ops::rule(op) == ops::UnaryRule::Same;
}
constexpr bool differentiable(ops::BinaryOp op) {
  auto r = ops::rule(op);
  return r == ops::BinaryRule::Arith || r == ops::BinaryRule::TrueDiv || r == ops::BinaryRule::Float;
}
constexpr bool differentiable(ops::ReduceOp op) {
  auto r = ops::rule(op);
  return r == ops::ReduceRule::Sum || r == ops::ReduceRule::Float || r == ops::ReduceRule::Same;
}

// clang-format off
inline constexpr UnaryGradRow kUnaryGradRows[] = {
  {U::Neg, {-3, 3}},          {U::Abs, {-3, 3}},          {U::Sign, {-3, 3}},
  {U::Exp, {-3, 3}},          {U::Exp2, {-3, 3}},         {U::Expm1, {-3, 3}},
  {U::Log, {0.2, 5}},         {U::Log2, {0.2, 5}},        {U::Log10, {0.2, 5}},
  {U::Log1p, {-0.8, 5}},      {U::Sqrt, {0.2, 5}},        {U::Rsqrt, {0.2, 5}},
  {U::Reciprocal, {0.3, 5}},  {U::Square, {-3, 3}},       {U::Sin, {-4, 4}},
  {U::Cos, {-4, 4}},          {U::Tan, {-1.2, 1.2}},      {U::Asin, {-0.9, 0.9}},
  {U::Acos, {-0.9, 0.9}},     {U::Atan, {-4, 4}},         {U::Sinh, {-3, 3}},
  {U::Cosh, {-3, 3}},         {U::Tanh, {-3, 3}},         {U::Sigmoid, {-5, 5}},
  {U::Asinh, {-4, 4}},        {U::Acosh, {1.2, 5}},       {U::Atanh, {-0.9, 0.9}},
  {U::Logit, {0.01, 0.99}, P(0.05)},                      {U::Relu, {-3, 3}},
  {U::Relu6, {-3, 9}},        {U::LeakyRelu, {-3, 3}, P(0.2)},
  {U::Elu, {-3, 3}, P(1.5)},  {U::Selu, {-3, 3}},         {U::Celu, {-3, 3}, P(0.7)},
  {U::Gelu, {-3, 3}},         {U::GeluTanh, {-3, 3}},     {U::Silu, {-4, 4}},
  {U::Mish, {-4, 4}},         {U::Softplus, {-3, 3}, P(2.0, 4.0)},
  {U::Softsign, {-4, 4}},     {U::Hardtanh, {-3, 3}, P(-1.5, 2.0)},
  {U::Hardsigmoid, {-5, 5}},  {U::Hardswish, {-5, 5}},   {U::Erf, {-2, 2}},
  {U::Erfc, {-2, 2}},         {U::Erfinv, {-0.9, 0.9}}, {U::Lgamma, {0.5, 5}}, {U::Digamma, {0.5, 5}, P(1.0)},
  {U::Sinc, {-3, 3}},         {U::I0, {-3, 3}},           {U::I0e, {-3, 3}},
  {U::I1, {-3, 3}},           {U::I1e, {-3, 3}},          {U::Erfcx, {-2, 3}},
  {U::Entr, {0.2, 3}},        {U::Ndtr, {-3, 3}},         {U::Ndtri, {0.05, 0.95}},
  {U::LogNdtr, {-5, 3}},      {U::Floor, {-4, 4}},
  {U::Ceil, {-4, 4}},         {U::Round, {-4, 4}},        {U::Trunc, {-4, 4}},
  {U::Frac, {-4, 4}},         {U::Clamp, {-2, 5}, P(1.0, 3.0)},
  {U::NanToNum, {-5, 5}, P(7.0, 100.0, -50.0)},
};

inline constexpr BinaryGradRow kBinaryGradRows[] = {
  {B::Add, {-3, 3}, {-3, 3}},       {B::Sub, {-3, 3}, {-3, 3}},       {B::Mul, {-3, 3}, {-3, 3}},
  {B::Div, {-3, 3}, {0.5, 3}},      {B::DivTrunc, {-3, 3}, {0.5, 3}}, {B::DivFloor, {-3, 3}, {0.5, 3}},
  {B::Remainder, {-3, 3}, {0.5, 3}}, {B::Fmod, {-3, 3}, {0.5, 3}},    {B::Pow, {0.5, 2}, {-2, 2}},
  {B::Atan2, {-3, 3}, {-3, 3}},     {B::Maximum, {-3, 3}, {-3, 3}},   {B::Minimum, {-3, 3}, {-3, 3}},
  {B::Fmax, {-3, 3}, {-3, 3}},      {B::Fmin, {-3, 3}, {-3, 3}},      {B::Hypot, {-3, 3}, {-3, 3}},
  {B::Copysign, {-3, 3}, {-3, 3}},  {B::ReluBackward, {-3, 3}, {-3, 3}}, {B::GeluBackward, {-3, 3}, {-3, 3}},
  {B::SiluBackward, {-3, 3}, {-3, 3}}, {B::Xlogy, {-3, 3}, {0.5, 3}}, {B::Xlog1py, {-3, 3}, {-0.5, 3}},
  {B::LogAddExp, {-3, 3}, {-3, 3}}, {B::LogAddExp2, {-3, 3}, {-3, 3}}, {B::Heaviside, {-3, 3}, {-3, 3}},
};

inline constexpr ReduceGradRow kReduceGradRows[] = {
  {R::Sum, {-3, 3}},   {R::Nansum, {-3, 3}}, {R::Prod, {0.5, 1.5}}, {R::Mean, {-3, 3}},
  {R::Amax, {-3, 3}},  {R::Amin, {-3, 3}},   {R::Norm1, {-3, 3}},   {R::Norm2, {-3, 3}},
  {R::NormInf, {-3, 3}},
};
// clang-format on

/// One row per differentiable op, none for the others.
constexpr bool grad_tables_complete() {
  bool ok = true;
#define EMBER_UNARY_OP(E, n, r) \
  ok = ok && count_rows(kUnaryGradRows, ops::UnaryOp::E) == (differentiable(ops::UnaryOp::E) ? 1 : 0);
#include <ember/ops/unary_list.def>
#undef EMBER_UNARY_OP
#define EMBER_BINARY_OP(E, n, r) \
  ok = ok && count_rows(kBinaryGradRows, ops::BinaryOp::E) == (differentiable(ops::BinaryOp::E) ? 1 : 0);
#include <ember/ops/binary_list.def>
#undef EMBER_BINARY_OP
#define EMBER_REDUCE_OP(E, n, r) \
  ok = ok && count_rows(kReduceGradRows, ops::ReduceOp::E) == (differentiable(ops::ReduceOp::E) ? 1 : 0);
#include <ember/ops/reduce_list.def>
#undef EMBER_REDUCE_OP
  return ok;
}

}  // namespace ember::test

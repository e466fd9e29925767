#pragma once
// The AVX-512 build's f32 forms of the compute-bound elementwise ops (transcendental_wide.cpp),
// for contiguous operands of n elements. Each returns false, doing nothing, for an op it does
// not have; the caller then runs the AVX2 build's kernel.

#include <ember/dispatch/kernels.hpp>

#include <cstdint>

namespace ember::cpu::avx512 {
bool unary_f32(ops::UnaryOp op, const ops::UnaryParams& p, float* out, const float* x, int64_t n);
bool binary_f32(ops::BinaryOp op, float* out, const float* a, const float* b, int64_t n);
/// softmax (log: log_softmax) of each of `rows` contiguous lines of `len` floats; out may be x.
/// Attention's 64-key rows took ~80 ns each in the AVX2 build's line loop.
void softmax_rows_f32(float* out, const float* x, int64_t rows, int64_t len, bool log);

/// Whether unary_f32 / binary_f32 have `op`: tested first, inline, so that every other op (an
/// add of four floats) pays one comparison rather than the operand checks and a call.
constexpr bool has_unary_f32(ops::UnaryOp op) {
  using U = ops::UnaryOp;
  switch (op) {
    case U::Exp: case U::Expm1: case U::Log: case U::Log1p: case U::Sin: case U::Cos: case U::Tanh:
    case U::Sigmoid: case U::Elu: case U::Selu: case U::Celu: case U::Gelu: case U::GeluTanh: case U::Silu:
    case U::Mish: case U::Softplus: case U::Erf: case U::Erfc:
      return true;
    default:
      return false;
  }
}
constexpr bool has_binary_f32(ops::BinaryOp op) {
  return op == ops::BinaryOp::GeluBackward || op == ops::BinaryOp::SiluBackward;
}
}  // namespace ember::cpu::avx512

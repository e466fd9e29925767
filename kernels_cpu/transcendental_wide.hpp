#pragma once
// The AVX-512 build's f32 forms of the compute-bound elementwise ops (transcendental_wide.cpp),
// for contiguous operands of n elements. Each returns false, doing nothing, for an op it does
// not have; the caller then runs the AVX2 build's kernel.

#include <ember/dispatch/kernels.hpp>

#include <cstdint>

namespace ember::cpu::avx512 {
bool unary_f32(ops::UnaryOp op, const ops::UnaryParams& p, float* out, const float* x, int64_t n);
bool binary_f32(ops::BinaryOp op, float* out, const float* a, const float* b, int64_t n);
}  // namespace ember::cpu::avx512

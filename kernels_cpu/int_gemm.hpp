#pragma once

#include <ember/core/tensor_impl.hpp>

namespace ember::cpu {

/// out = beta * out + alpha * (a @ b) for i8, u8, i32 and i64 matrices: (rows, cols) views or
/// (batch, rows, cols) views with any strides, as the GEMM plan hands them. alpha and beta
/// must be integers.
void int_gemm(detail::TensorImpl& out, const detail::TensorImpl& a, const detail::TensorImpl& b, double alpha,
              double beta);

}  // namespace ember::cpu

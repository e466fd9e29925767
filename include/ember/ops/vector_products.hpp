#pragma once
/// libtorch's other BLAS-style products: mv (matrix times vector), addmv, addr (a scaled outer
/// product added), addbmm (a batch of products summed into one matrix) and vdot.
///
///   Tensor y = mv(A, x);                          // (n, m) x (m) -> (n)
///   Tensor P2 = addr(P, k, k, 1.0, -0.5);         // P - 0.5 k k^T
///   Tensor S = addbmm(bias, A, B);                // bias + sum_i A[i] B[i]
///
/// Each checks its operands' ranks and sizes under its own name, then runs through addmm
/// (addmv, addr, addbmm: one GEMM each), matmul (mv) or dot (vdot), whose names the input's
/// broadcast and dtype errors carry. Differentiable, with PyTorch's beta = 0 rule (the input
/// is then ignored, NaN included).

#include <ember/ops/functions.hpp>

#include <cstdint>

namespace ember {

namespace detail {
/// mv's and addmv's operands: an (n, m) matrix and an (m) vector.
template <class P>
void check_matrix_vector(const BasicTensor<P>& mat, const BasicTensor<P>& vec, const char* op) {
  EMBER_CHECK(mat.dim() == 2 && vec.dim() == 1 && mat.size(1) == vec.size(0),
              "[{}] expects an (n, m) matrix and an (m) vector, got shapes {} and {}", op, mat.sizes(), vec.sizes());
}
}  // namespace detail

/// (n, m) times (m): (n).
template <class P>
BasicTensor<P> mv(const BasicTensor<P>& mat, const BasicTensor<P>& vec) {
  detail::check_matrix_vector(mat, vec, "mv");
  return mat.matmul(vec);
}

/// beta input + alpha (mat vec); input broadcasts to (n).
template <class P>
BasicTensor<P> addmv(const BasicTensor<P>& input, const BasicTensor<P>& mat, const BasicTensor<P>& vec, Scalar beta = 1,
                     Scalar alpha = 1) {
  detail::check_matrix_vector(mat, vec, "addmv");
  EMBER_CHECK(input.dim() <= 1 && (input.dim() == 0 || input.size(0) == 1 || input.size(0) == mat.size(0)),
              "[addmv] input of shape {} does not broadcast to the product's shape [{}]", input.sizes(), mat.size(0));
  // As a column: (n) -> (n, 1), (1) -> (1, 1), 0-d as it is; addmm broadcasts it to (n, 1).
  const BasicTensor<P> column = input.dim() == 1 ? input.unsqueeze(1) : input;
  return addmm(column, mat, vec.unsqueeze(1), beta, alpha).squeeze(1);
}

/// beta input + alpha outer(vec1, vec2); input broadcasts to (n, m).
template <class P>
BasicTensor<P> addr(const BasicTensor<P>& input, const BasicTensor<P>& vec1, const BasicTensor<P>& vec2,
                    Scalar beta = 1, Scalar alpha = 1) {
  EMBER_CHECK(vec1.dim() == 1 && vec2.dim() == 1, "[addr] expects two vectors, got shapes {} and {}", vec1.sizes(),
              vec2.sizes());
  return addmm(input, vec1.unsqueeze(1), vec2.unsqueeze(0), beta, alpha);
}

/// beta input + alpha sum_i batch1[i] batch2[i], with batch1 (b, n, m) and batch2 (b, m, p):
/// one (n, b m) x (b m, p) product, the sum over the batch being part of its inner dim.
template <class P>
BasicTensor<P> addbmm(const BasicTensor<P>& input, const BasicTensor<P>& batch1, const BasicTensor<P>& batch2,
                      Scalar beta = 1, Scalar alpha = 1) {
  EMBER_CHECK(batch1.dim() == 3 && batch2.dim() == 3 && batch1.size(0) == batch2.size(0) &&
                  batch1.size(2) == batch2.size(1),
              "[addbmm] expects batches (b, n, m) and (b, m, p), got shapes {} and {}", batch1.sizes(), batch2.sizes());
  const int64_t b = batch1.size(0), n = batch1.size(1), m = batch1.size(2), p = batch2.size(2);
  return addmm(input, batch1.permute({1, 0, 2}).reshape({n, b * m}), batch2.reshape({b * m, p}), beta, alpha);
}

/// The dot product of two vectors (the same as dot for real tensors; Ember has no complex).
template <class P>
BasicTensor<P> vdot(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  EMBER_CHECK(a.dim() == 1 && b.dim() == 1 && a.size(0) == b.size(0),
              "[vdot] expects two vectors of one length, got shapes {} and {}", a.sizes(), b.sizes());
  return a.dot(b);
}

template <class P>
BasicTensor<P> BasicTensor<P>::mv(const BasicTensor& vec) const {
  return ember::mv(*this, vec);
}
template <class P>
BasicTensor<P> BasicTensor<P>::addmv(const BasicTensor& mat, const BasicTensor& vec, Scalar beta, Scalar alpha) const {
  return ember::addmv(*this, mat, vec, beta, alpha);
}
template <class P>
BasicTensor<P> BasicTensor<P>::addr(const BasicTensor& vec1, const BasicTensor& vec2, Scalar beta, Scalar alpha) const {
  return ember::addr(*this, vec1, vec2, beta, alpha);
}
template <class P>
BasicTensor<P> BasicTensor<P>::addbmm(const BasicTensor& batch1, const BasicTensor& batch2, Scalar beta,
                                      Scalar alpha) const {
  return ember::addbmm(*this, batch1, batch2, beta, alpha);
}
template <class P>
BasicTensor<P> BasicTensor<P>::vdot(const BasicTensor& o) const {
  return ember::vdot(*this, o);
}

}  // namespace ember

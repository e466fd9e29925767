#pragma once
/// The factorisations behind ember::linalg, compiled once in kernels_cpu/linalg*.cpp (Eigen's
/// blocked LU, Cholesky, Householder QR, self-adjoint eigensolver and divide-and-conquer SVD)
/// for f32 and f64. Every array is a batch of row-major matrices stored one after another;
/// batches run in parallel on Ember's thread pool. These take raw host pointers and check
/// nothing: ember::linalg checks shapes, dtypes and values first.

#include <cstdint>

namespace ember::detail::linalg_kernels {

/// sign and log|det| of each n x n matrix of a, and det itself (the product of LU's pivots,
/// not exp(log), so that it rounds as LAPACK's). A singular matrix: sign 0, logabs -inf, det 0.
template <class T>
void lu_det(const T* a, int64_t batch, int64_t n, T* sign, T* logabs, T* det);

/// x = A^-1 B for each batch (B n x k; b == nullptr: B = I, x = A^-1). Returns the first
/// matrix whose LU has a zero pivot (x is then not written for it), or -1.
template <class T>
int64_t lu_solve(const T* a, const T* b, T* x, int64_t batch, int64_t n, int64_t k);

/// LU with partial pivoting of m x n matrices, LAPACK's getrf: lu gets L (unit diagonal, not
/// stored) below the diagonal and U on and above it; pivots[i] (1-based) is the row swapped
/// with row i at step i, k = min(m, n) of them. A zero pivot does not stop it (getrf's
/// info > 0): returns the first matrix that has one, or -1.
template <class T>
int64_t lu_factor(const T* a, T* lu, int32_t* pivots, int64_t batch, int64_t m, int64_t n);

/// The Cholesky factor of each matrix from its lower (upper: upper) triangle, written lower
/// (upper: as the transpose, upper). Returns -1, or batch index * (n + 1) + order - 1 of the
/// first leading minor that is not positive-definite (order counts from 1).
template <class T>
int64_t cholesky(const T* a, T* l, int64_t batch, int64_t n, bool upper);

/// Householder QR of m x n matrices, k = min(m, n): q m x k (complete: m x m; nullptr: not
/// computed), r k x n (complete: m x n), upper triangular.
template <class T>
void qr(const T* a, T* q, T* r, int64_t batch, int64_t m, int64_t n, bool complete);

/// LAPACK's geqrf: qr gets R on and above the diagonal and the Householder vectors'
/// essential parts below it (each v has v(0) = 1, not stored), tau the k = min(m, n) scalars
/// of H_i = I - tau_i v_i v_i^T, A = H_0 ... H_{k-1} R.
template <class T>
void geqrf(const T* a, T* qr, T* tau, int64_t batch, int64_t m, int64_t n);

/// Eigenvalues (ascending) and, unless v == nullptr, orthonormal eigenvectors (columns) of
/// symmetric matrices given by their lower (upper: upper) triangle. Returns the first matrix
/// on which the iteration did not converge, or -1.
template <class T>
int64_t eigh(const T* a, T* w, T* v, int64_t batch, int64_t n, bool upper);

/// A = U diag(s) Vh with s descending, k = min(m, n): u m x k (full: m x m), vh k x n (full:
/// n x n); u == nullptr: singular values only.
template <class T>
void svd(const T* a, T* u, T* s, T* vh, int64_t batch, int64_t m, int64_t n, bool full);

/// x = A^-1 B for triangular n x n A (upper or lower; unit: a diagonal of ones, not read) and
/// B n x k. A zero on the diagonal gives infinities, as LAPACK's trtrs without its check.
template <class T>
void solve_triangular(const T* a, const T* b, T* x, int64_t batch, int64_t n, int64_t k, bool upper, bool unit);

}  // namespace ember::detail::linalg_kernels

#pragma once
/// Linear algebra, as libtorch's torch::linalg (and torch::inverse, det, logdet, slogdet,
/// pinverse, cholesky_solve, cholesky_inverse, triangular_solve):
///
///   Tensor x = linalg::solve(A, b);                       // A x = b, batched, broadcast
///   auto [w, V] = linalg::eigh(K);                        // K = V diag(w) V^T, w ascending
///   auto [U, S, Vh] = linalg::svd(J, false);              // reduced SVD, S descending
///   Tensor L = linalg::cholesky(Sigma);                   // Sigma = L L^T
///   Tensor Jp = linalg::pinv(J);                          // Moore-Penrose pseudo-inverse
///   auto [LU, piv] = linalg::lu_factor(A);                // factorise once, then
///   Tensor y = linalg::lu_solve(LU, piv, b);              // solve for many right-hand sides
///
/// f32 and f64, any batch dims in front of the matrix dims. Every function is differentiable
/// (PyTorch's formulas, twice differentiable where PyTorch's are); the factorisations are
/// Eigen's (kernels_cpu/linalg*.cpp), on the host for CUDA tensors too. Inputs are checked:
/// shapes, dtypes, singular and non-positive-definite matrices and, for the iterative
/// eigensolver and SVD, NaN and infinity, each with an ember::Error naming the matrix.
/// Complex dtypes do not exist in Ember, so eig/eigvals (real matrices have complex
/// eigenvalues) are absent.

#include <ember/linalg/functions.hpp>
#include <ember/linalg/lu.hpp>
#include <ember/linalg/matrix_exp.hpp>
#include <ember/ops/descriptors.hpp>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <limits>
#include <optional>
#include <string_view>
#include <tuple>
#include <variant>
#include <vector>

namespace ember::linalg {

namespace detail {

/// f32/f64, at least 2 dims, square when asked.
template <class P>
void check_matrices(const BasicTensor<P>& a, const char* op, bool square) {
  EMBER_CHECK(a.defined(), "[{}] got an undefined tensor", op);
  EMBER_CHECK(a.dim() >= 2, "[{}] expects a matrix or a batch of matrices (at least 2 dims), got shape {}", op,
              a.sizes());
  EMBER_CHECK(a.dtype() == DType::F32 || a.dtype() == DType::F64, "[{}] expects an f32 or f64 tensor, got {}", op,
              a.dtype());
  if (square)
    EMBER_CHECK(a.size(-1) == a.size(-2), "[{}] expects square matrices, got shape {}", op, a.sizes());
}

enum class Triangle { Both, Lower, Upper };

/// The iterative eigensolver and SVD do not take NaN or infinity (LAPACK's fail to converge);
/// only the triangle the factorisation reads is checked.
template <class P>
void check_finite(const BasicTensor<P>& a, const char* op, Triangle part = Triangle::Both) {
  const BasicTensor<P> h = on_host(a.detach());
  const int64_t cols = a.size(-1), per = cols * a.size(-2);
  with_float_type(a.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* v = h.template data_ptr<T>();
    for (int64_t i = 0; i < h.numel(); ++i) {
      const int64_t r = (i % per) / cols, c = i % cols;
      if ((part == Triangle::Lower && c > r) || (part == Triangle::Upper && c < r)) continue;
      EMBER_CHECK(std::isfinite(v[i]), "[{}] matrix {} of the batch (shape {}) holds {}", op, i / per, a.sizes(),
                  v[i]);
    }
  });
}

/// Whether an op on `a` records a node: then it needs the factors its backward uses.
template <class P>
bool recording(const BasicTensor<P>& a) {
  return ember::detail::grad_enabled<P>() && a.requires_grad();
}

/// a and b expanded to their common batch dims (all but the last `keep_a` / `keep_b` dims).
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> broadcast_batch(const BasicTensor<P>& a, size_t keep_a,
                                                           const BasicTensor<P>& b, size_t keep_b, const char* op) {
  const Shape ba = replace_tail(a.sizes(), keep_a, {}), bb = replace_tail(b.sizes(), keep_b, {});
  const Shape batch = ops::broadcast_shapes(ba, bb, op);
  auto expanded = [&](const BasicTensor<P>& t, size_t keep) {
    Shape full(batch.size() + keep);
    for (size_t i = 0; i < batch.size(); ++i) full[i] = batch[i];
    for (size_t i = 0; i < keep; ++i) full[batch.size() + i] = t.size(static_cast<int64_t>(t.dim() - keep + i));
    return t.sizes() == full ? t : t.expand(full);
  };
  return {expanded(a, keep_a), expanded(b, keep_b)};
}

/// Whether B is a batch of vectors for A, PyTorch's rule: 1-d, or A's shape without its
/// last dim.
template <class P>
bool is_vector_rhs(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  return b.dim() == 1 || (b.dim() == a.dim() - 1 && b.sizes() == replace_tail(a.sizes(), 1, {}));
}

template <class P>
void check_same(const BasicTensor<P>& a, const BasicTensor<P>& b, const char* op) {
  EMBER_CHECK(b.defined(), "[{}] got an undefined tensor", op);
  EMBER_CHECK(a.dtype() == b.dtype(), "[{}] expects operands of one dtype, got {} and {}", op, a.dtype(), b.dtype());
  EMBER_CHECK(a.device() == b.device(), "[{}] expects operands on one device, got {} and {}", op, a.device(),
              b.device());
}

/// The two dims of a matrix norm, wrapped, moved last.
template <class P>
BasicTensor<P> matrices_last(const BasicTensor<P>& a, IntArrayRef dims, const char* op) {
  EMBER_CHECK(dims.size() == 2, "[{}] expects 2 dims, got {}", op, dims.size());
  EMBER_CHECK(a.dim() >= 2, "[{}] expects at least 2 dims, got shape {}", op, a.sizes());
  const int64_t d0 = ember::wrap_dim(dims[0], a.dim(), op), d1 = ember::wrap_dim(dims[1], a.dim(), op);
  EMBER_CHECK(d0 != d1, "[{}] expects two different dims, got {} and {}", op, dims[0], dims[1]);
  std::vector<int64_t> order;
  for (int64_t d = 0; d < a.dim(); ++d)
    if (d != d0 && d != d1) order.push_back(d);
  order.push_back(d0), order.push_back(d1);
  return a.permute(Shape(IntArrayRef(order.data(), order.size())));
}

/// A result over the last two dims put back where dims (d0, d1) were, for keepdim.
template <class P>
BasicTensor<P> keep_matrix_dims(BasicTensor<P> r, int64_t rank, IntArrayRef dims, const char* op) {
  int64_t d0 = ember::wrap_dim(dims[0], rank, op), d1 = ember::wrap_dim(dims[1], rank, op);
  if (d0 > d1) std::swap(d0, d1);
  return r.unsqueeze(d0).unsqueeze(d1);
}

}  // namespace detail

/// det(A) of square matrices (LU with partial pivoting).
template <class P>
BasicTensor<P> det(const BasicTensor<P>& a) {
  detail::check_matrices(a, "linalg.det", true);
  return detail::Det<P>::apply(a);
}

/// (sign, log|det|): a determinant that does not overflow. sign is 0 and log|det| -inf for a
/// singular matrix; only log|det| is differentiable.
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>> slogdet(const BasicTensor<P>& a) {
  detail::check_matrices(a, "linalg.slogdet", true);
  auto r = detail::Slogdet<P>::apply(a);
  return {r[0], r[1]};
}

/// A^-1; a singular matrix is an error.
template <class P>
BasicTensor<P> inv(const BasicTensor<P>& a) {
  detail::check_matrices(a, "linalg.inv", true);
  return detail::Inverse<P>::apply(a, "linalg.inv");
}

/// The solution of A X = B (left) or X A = B (left = false). B: (*, n, k), or a batch of
/// vectors (*, n) (PyTorch's rule: 1-d, or A's shape without its last dim); batch dims
/// broadcast.
template <class P>
BasicTensor<P> solve(const BasicTensor<P>& a, const BasicTensor<P>& b, bool left = true) {
  constexpr const char* op = "linalg.solve";
  detail::check_matrices(a, op, true);
  detail::check_same(a, b, op);
  const bool vector = detail::is_vector_rhs(a, b);
  EMBER_CHECK(left || !vector, "[{}] a batch of vectors B (shape {}) takes left=true only, as PyTorch's", op,
              b.sizes());
  const BasicTensor<P> a_eq = left ? a : a.mT();  // X A = B  <=>  A^T X^T = B^T
  BasicTensor<P> rhs = vector ? b.unsqueeze(-1) : (left ? b : b.mT());
  EMBER_CHECK(rhs.dim() >= 2 && rhs.size(-2) == a.size(-1),
              "[{}] A of shape {} and B of shape {} do not fit: B needs {} {} ({})", op, a.sizes(), b.sizes(),
              a.size(-1), left ? "rows" : "columns", left ? "A X = B" : "X A = B");
  auto [ae, be] = detail::broadcast_batch(a_eq, 2, rhs, 2, op);
  BasicTensor<P> x = detail::Solve<P>::apply(ae, be, op);
  if (vector) return x.squeeze(-1);
  return left ? x : x.mT();
}

/// The solution of A X = B (left) or X A = B for triangular A: only its upper (lower)
/// triangle is read, and with unitriangular, not its diagonal (taken as ones).
template <class P>
BasicTensor<P> solve_triangular(const BasicTensor<P>& a, const BasicTensor<P>& b, bool upper, bool left = true,
                                bool unitriangular = false) {
  constexpr const char* op = "linalg.solve_triangular";
  detail::check_matrices(a, op, true);
  detail::check_same(a, b, op);
  EMBER_CHECK(b.dim() >= 2, "[{}] expects B with at least 2 dims, got shape {}", op, b.sizes());
  EMBER_CHECK(b.size(left ? -2 : -1) == a.size(-1), "[{}] A of shape {} and B of shape {} do not fit ({})", op,
              a.sizes(), b.sizes(), left ? "A X = B" : "X A = B");
  if (!left) {  // X A = B  <=>  A^T X^T = B^T, and A^T's triangle is the other one
    auto [ae, be] = detail::broadcast_batch(a.mT(), 2, b.mT(), 2, op);
    return detail::SolveTriangular<P>::apply(ae, be, !upper, unitriangular).mT();
  }
  auto [ae, be] = detail::broadcast_batch(a, 2, b, 2, op);
  return detail::SolveTriangular<P>::apply(ae, be, upper, unitriangular);
}

/// A = P L U with partial pivoting, any m x n (k = min(m, n)): P m x m, L m x k (unit lower),
/// U k x n. A singular matrix factorises too. Differentiable in L and U; pivot = false (no
/// pivoting) exists in PyTorch for CUDA only and is refused here as by PyTorch on the CPU.
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>, BasicTensor<P>> lu(const BasicTensor<P>& a, bool pivot = true) {
  constexpr const char* op = "linalg.lu";
  detail::check_matrices(a, op, false);
  EMBER_CHECK(pivot, "[{}] LU without pivoting is not implemented (PyTorch has it on CUDA only)", op);
  auto r = detail::Lu<P>::apply(a, false, op);
  return {r[0], r[1], r[2]};
}

/// LAPACK's packed LU: {LU (L below the diagonal, U on and above it), pivots (i32, 1-based,
/// (*, k))}. A zero pivot (singular U) is an error here, as PyTorch's (lu keeps going).
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>> lu_factor(const BasicTensor<P>& a, bool pivot = true) {
  constexpr const char* op = "linalg.lu_factor";
  detail::check_matrices(a, op, false);
  EMBER_CHECK(pivot, "[{}] LU without pivoting is not implemented (PyTorch has it on CUDA only)", op);
  auto r = detail::Lu<P>::apply(a, true, op);
  const BasicTensor<P> &l = r[1], &u = r[2];
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  // L's strict lower part and U, each padded to m x n (differentiable in both).
  const TensorOptions o = TensorOptions(a.dtype()).device(a.device());
  BasicTensor<P> lower = l.tril(-1), upper = u;
  if (n > k) lower = cat(std::vector<BasicTensor<P>>{lower, zeros<P>(detail::replace_tail(a.sizes(), 2, {m, n - k}), o)}, -1);
  if (m > k) upper = cat(std::vector<BasicTensor<P>>{upper, zeros<P>(detail::replace_tail(a.sizes(), 2, {m - k, n}), o)}, -2);
  return {lower + upper, r[3]};
}

namespace detail {
/// The pivots' checks shared by lu_solve and lu_unpack.
template <class P>
void check_pivots(const BasicTensor<P>& lu, const BasicTensor<P>& pivots, const char* op) {
  EMBER_CHECK(pivots.defined(), "[{}] got undefined pivots", op);
  EMBER_CHECK(pivots.dtype() == DType::I32, "[{}] pivots must be an i32 tensor (lu_factor's), got {}", op,
              pivots.dtype());
  EMBER_CHECK(pivots.dim() == lu.dim() - 1 && pivots.size(-1) == std::min(lu.size(-2), lu.size(-1)) &&
                  replace_tail(pivots.sizes(), 1, {}) == replace_tail(lu.sizes(), 2, {}),
              "[{}] pivots of shape {} do not belong to LU of shape {} (expected (*, min(m, n)))", op,
              pivots.sizes(), lu.sizes());
  EMBER_CHECK(pivots.device() == lu.device(), "[{}] LU and pivots are on {} and {}", op, lu.device(),
              pivots.device());
}
}  // namespace detail

/// {P, L, U} from lu_factor's packed form (torch::lu_unpack); without unpack_data, L and U
/// are empty; without unpack_pivots, P is.
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>, BasicTensor<P>> lu_unpack(const BasicTensor<P>& lu,
                                                                     const BasicTensor<P>& pivots,
                                                                     bool unpack_data = true,
                                                                     bool unpack_pivots = true) {
  constexpr const char* op = "lu_unpack";
  detail::check_matrices(lu, op, false);
  detail::check_pivots(lu, pivots, op);
  const int64_t m = lu.size(-2), n = lu.size(-1), k = std::min(m, n);
  const TensorOptions o = TensorOptions(lu.dtype()).device(lu.device());
  BasicTensor<P> pm = empty<P>(Shape{0}, o), l = empty<P>(Shape{0}, o), u = empty<P>(Shape{0}, o);
  if (unpack_data) {
    l = lu.narrow(-1, 0, k).tril(-1) + eye<P>(m, k, o);
    u = lu.narrow(-2, 0, k).triu();
  }
  if (unpack_pivots) pm = detail::permutation_of(pivots, m, lu.dtype(), op);
  return {pm, l, u};
}

/// The solution of A X = B from A's lu_factor (left = false: X A = B; adjoint: with A^T in
/// place of A). Batch dims broadcast; differentiable in LU and B.
template <class P>
BasicTensor<P> lu_solve(const BasicTensor<P>& lu, const BasicTensor<P>& pivots, const BasicTensor<P>& b,
                        bool left = true, bool adjoint = false) {
  constexpr const char* op = "linalg.lu_solve";
  detail::check_matrices(lu, op, true);
  detail::check_same(lu, b, op);
  detail::check_pivots(lu, pivots, op);
  EMBER_CHECK(b.dim() >= 2 && b.size(left ? -2 : -1) == lu.size(-1),
              "[{}] LU of shape {} and B of shape {} do not fit ({})", op, lu.sizes(), b.sizes(),
              left ? "A X = B" : "X A = B");
  auto [pm, l, u] = linalg::lu_unpack(lu, pivots, true, false);
  // X A = B is A^T X^T = B^T: the adjoint flips, B and X transpose.
  const bool transposed = adjoint != !left;
  const int64_t n = lu.size(-1);
  const BasicTensor<P> rhs = left ? b : b.mT();
  // P^T B and P Y as row gathers (LAPACK's getrs swaps rows: an infinity stays in its row).
  const BasicTensor<P> order = detail::row_order(pivots, n, transposed, op).unsqueeze(-1);  // (*, n, 1)
  auto [oe, be] = detail::broadcast_batch(order, 2, rhs, 2, op);
  const BasicTensor<P> rows = oe.expand(be.sizes());
  auto [le, b1] = detail::broadcast_batch(l, 2, be, 2, op);
  auto [ue, b2] = detail::broadcast_batch(u, 2, be, 2, op);
  BasicTensor<P> x;
  if (!transposed) {  // U^-1 L^-1 (P^T B)
    x = detail::SolveTriangular<P>::apply(le, be.gather(-2, rows), false, true);
    x = detail::SolveTriangular<P>::apply(ue, x, true, false);
  } else {  // P (L^-T U^-T B)
    x = detail::SolveTriangular<P>::apply(ue.mT(), be, false, false);
    x = detail::SolveTriangular<P>::apply(le.mT(), x, true, true).gather(-2, rows);
  }
  return left ? x : x.mT();
}

/// The Cholesky factor L (A = L L^T, lower; upper: U with A = U^T U) of symmetric
/// positive-definite matrices, read from their lower (upper) triangle.
template <class P>
BasicTensor<P> cholesky(const BasicTensor<P>& a, bool upper = false) {
  detail::check_matrices(a, "linalg.cholesky", true);
  return detail::Cholesky<P>::apply(a, upper, "linalg.cholesky");
}

/// QR: mode "reduced" (Q m x k, R k x n, k = min(m, n)), "complete" (Q m x m, R m x n) or "r"
/// (R only; Q is an empty tensor, as PyTorch's).
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>> qr(const BasicTensor<P>& a, std::string_view mode = "reduced") {
  constexpr const char* op = "linalg.qr";
  detail::check_matrices(a, op, false);
  EMBER_CHECK(mode == "reduced" || mode == "complete" || mode == "r",
              "[{}] mode must be \"reduced\", \"complete\" or \"r\", got \"{}\"", op, mode);
  auto r = detail::Qr<P>::apply(a, mode == "complete", mode != "r");
  if (mode == "r") return {empty<P>(Shape{0}, TensorOptions(a.dtype()).device(a.device())), r[1]};
  return {r[0], r[1]};
}

namespace detail {
inline bool upper_from(std::string_view uplo, const char* op) {
  EMBER_CHECK(uplo == "L" || uplo == "U" || uplo == "l" || uplo == "u", "[{}] UPLO must be \"L\" or \"U\", got \"{}\"",
              op, uplo);
  return uplo == "U" || uplo == "u";
}
}  // namespace detail

/// Eigenvalues (ascending) and orthonormal eigenvectors (columns) of symmetric matrices,
/// read from their lower (uplo "U": upper) triangle. Eigenvectors are unique up to sign (and
/// rotation within repeated eigenvalues), so they may differ from PyTorch's by a sign.
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>> eigh(const BasicTensor<P>& a, std::string_view uplo = "L") {
  constexpr const char* op = "linalg.eigh";
  detail::check_matrices(a, op, true);
  const bool upper = detail::upper_from(uplo, op);
  detail::check_finite(a, op, upper ? detail::Triangle::Upper : detail::Triangle::Lower);
  auto r = detail::Eigh<P>::apply(a, upper, true, op);
  return {r[0], r[1]};
}

/// The eigenvalues of symmetric matrices, ascending.
template <class P>
BasicTensor<P> eigvalsh(const BasicTensor<P>& a, std::string_view uplo = "L") {
  constexpr const char* op = "linalg.eigvalsh";
  detail::check_matrices(a, op, true);
  const bool upper = detail::upper_from(uplo, op);
  detail::check_finite(a, op, upper ? detail::Triangle::Upper : detail::Triangle::Lower);
  return detail::Eigh<P>::apply(a, upper, detail::recording(a), op)[0];
}

/// A = U diag(S) Vh, S descending. full_matrices: U m x m and Vh n x n; otherwise k = min(m,
/// n) columns of U and rows of Vh. Singular vectors are unique up to sign; U and Vh are
/// differentiable where the singular values are distinct (and nonzero, for non-square A).
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>, BasicTensor<P>> svd(const BasicTensor<P>& a, bool full_matrices = true) {
  constexpr const char* op = "linalg.svd";
  detail::check_matrices(a, op, false);
  detail::check_finite(a, op);
  auto r = detail::Svd<P>::apply(a, full_matrices, true);
  return {r[0], r[1], r[2]};
}

/// The singular values, descending (differentiable everywhere but at repeated ones).
template <class P>
BasicTensor<P> svdvals(const BasicTensor<P>& a) {
  constexpr const char* op = "linalg.svdvals";
  detail::check_matrices(a, op, false);
  detail::check_finite(a, op);
  return detail::Svd<P>::apply(a, false, detail::recording(a))[1];
}

namespace detail {
/// The tolerances of pinv and matrix_rank, PyTorch's defaults: without atol (or atol 0),
/// rtol = eps * max(m, n).
template <class P>
std::pair<double, double> tolerances(const BasicTensor<P>& a, std::optional<double> atol, std::optional<double> rtol,
                                     const char* op) {
  const double at = atol.value_or(0.0);
  const double eps = a.dtype() == DType::F64 ? std::numeric_limits<double>::epsilon()
                                             : static_cast<double>(std::numeric_limits<float>::epsilon());
  const double rt = rtol ? *rtol : (at > 0 ? 0.0 : eps * static_cast<double>(std::max(a.size(-1), a.size(-2))));
  EMBER_CHECK(at >= 0 && rt >= 0, "[{}] tolerances must be >= 0, got atol {} and rtol {}", op, at, rt);
  return {at, rt};
}
}  // namespace detail

/// The Moore-Penrose pseudo-inverse: singular values at most max(atol, rtol * largest) count
/// as zero (hermitian: from the symmetric eigendecomposition, for symmetric A). Its gradient
/// assumes the rank stays the same under small changes, as PyTorch's.
template <class P>
BasicTensor<P> pinv(const BasicTensor<P>& a, std::optional<double> atol, std::optional<double> rtol,
                    bool hermitian = false) {
  constexpr const char* op = "linalg.pinv";
  detail::check_matrices(a, op, hermitian);
  detail::check_finite(a, op);
  const auto [at, rt] = detail::tolerances(a, atol, rtol, op);
  return detail::Pinv<P>::apply(a, at, rt, hermitian);
}

/// libtorch's form: singular values at most rcond * largest count as zero. (hermitian must be
/// a bool: pinv(A, atol, rtol) is the other overload, not rcond with a double as the flag.)
template <class P, std::same_as<bool> Flag = bool>
BasicTensor<P> pinv(const BasicTensor<P>& a, double rcond = 1e-15, Flag hermitian = false) {
  return pinv(a, 0.0, rcond, hermitian);
}

/// The number of singular values (hermitian: |eigenvalues|) above max(atol, rtol * largest),
/// as an i64 tensor of the batch shape.
template <class P>
BasicTensor<P> matrix_rank(const BasicTensor<P>& a, std::optional<double> atol, std::optional<double> rtol,
                           bool hermitian = false) {
  constexpr const char* op = "linalg.matrix_rank";
  detail::check_matrices(a, op, hermitian);
  detail::check_finite(a, op);
  const auto [at, rt] = detail::tolerances(a, atol, rtol, op);
  ember::detail::NoGradGuardFor<P> no_grad;
  const BasicTensor<P> s = hermitian ? eigvalsh(a).abs() : svdvals(a);
  const BasicTensor<P> smax = s.numel() == 0 ? s : s.amax({-1}, true);
  return s.gt(smax * rt).logical_and(s.gt(at)).sum({-1}, false, DType::I64);
}

/// libtorch's form: tol is an absolute tolerance (hermitian must be a bool, as for pinv).
template <class P, std::same_as<bool> Flag = bool>
BasicTensor<P> matrix_rank(const BasicTensor<P>& a, double tol, Flag hermitian = false) {
  return matrix_rank(a, tol, 0.0, hermitian);
}

/// The rank with PyTorch's default tolerance (eps * max(m, n) * largest singular value).
template <class P>
BasicTensor<P> matrix_rank(const BasicTensor<P>& a) {
  return matrix_rank(a, std::nullopt, std::nullopt, false);
}

/// The least-squares solution of A X = B (the minimum-norm one where A is rank-deficient), as
/// torch::linalg::lstsq: {solution (*, n, k), residuals (*, k): the squared residual of each
/// column, only for m > n when every matrix has full rank and the driver is not "gelsy" (else
/// empty), rank (*) (empty for
/// driver "gels"), singular values (*, min(m, n)) (drivers "gelsd" and "gelss"; else empty)}.
/// Singular values at most rcond * the largest count as zero (default eps * max(m, n)). Ember
/// solves through the SVD whatever the driver (LAPACK's gelsd), so that a rank-deficient A
/// gives the same minimum-norm solution on every driver; the solution is differentiable
/// (through the pseudo-inverse). B may be a batch of vectors (*, m).
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>, BasicTensor<P>, BasicTensor<P>> lstsq(
    const BasicTensor<P>& a, const BasicTensor<P>& b, std::optional<double> rcond = std::nullopt,
    std::optional<std::string_view> driver = std::nullopt) {
  constexpr const char* op = "linalg.lstsq";
  detail::check_matrices(a, op, false);
  detail::check_same(a, b, op);
  const std::string_view drv = driver.value_or("gelsy");
  EMBER_CHECK(drv == "gels" || drv == "gelsy" || drv == "gelsd" || drv == "gelss",
              "[{}] driver must be gels, gelsy, gelsd or gelss, got '{}'", op, drv);
  // PyTorch's rules for lstsq (not solve's): B has A's rank or one dim less (a batch of
  // vectors).
  EMBER_CHECK(b.dim() <= a.dim() && a.dim() - b.dim() <= 1,
              "[{}] B of shape {} must have as many dims as A (shape {}) or one less", op, b.sizes(), a.sizes());
  const bool vector = b.dim() == a.dim() - 1;
  const BasicTensor<P> rhs = vector ? b.unsqueeze(-1) : b;
  EMBER_CHECK(rhs.dim() >= 2 && rhs.size(-2) == a.size(-2),
              "[{}] A of shape {} and B of shape {} do not fit: B needs {} rows", op, a.sizes(), b.sizes(), a.size(-2));
  detail::check_finite(a, op);
  const auto [at, rt] = detail::tolerances(a, std::nullopt, rcond, op);
  auto [ae, be] = detail::broadcast_batch(a, 2, rhs, 2, op);
  const int64_t m = a.size(-2), n = a.size(-1);
  BasicTensor<P> x = detail::Pinv<P>::apply(ae, at, rt, false).matmul(be);
  const TensorOptions none = TensorOptions(a.dtype()).device(a.device());
  BasicTensor<P> rank, values, residuals;
  {
    ember::detail::NoGradGuardFor<P> no_grad;
    const BasicTensor<P> s = detail::Svd<P>::apply(ae, false, false)[1];
    const BasicTensor<P> smax = s.numel() == 0 ? s : s.amax({-1}, true);
    const BasicTensor<P> kept = s.gt(smax * rt).sum({-1}, false, DType::I64);  // the numerical rank
    rank = drv == "gels" ? empty<P>(Shape{0}, TensorOptions(DType::I64).device(a.device())) : kept;
    values = drv == "gelsd" || drv == "gelss" ? s : empty<P>(Shape{0}, none);
    // As PyTorch's: not for gelsy, whose LAPACK routine leaves them out.
    const bool full_rank = m > n && (s.numel() == 0 || kept.eq(n).all().template item<bool>());
    if (!full_rank || drv == "gelsy") residuals = empty<P>(Shape{0}, none);
  }
  if (!residuals.defined()) residuals = (ae.matmul(x) - be).pow(2.0).sum({-2});
  if (vector) x = x.squeeze(-1);  // residuals keep their column dim (of 1), as PyTorch's
  return {x, residuals, rank, values};
}

/// A^n by repeated squaring; n < 0: (A^-1)^|n|; n = 0: the identity.
template <class P>
BasicTensor<P> matrix_power(const BasicTensor<P>& a, int64_t n) {
  constexpr const char* op = "linalg.matrix_power";
  EMBER_CHECK(a.defined() && a.dim() >= 2 && a.size(-1) == a.size(-2),
              "[{}] expects square matrices (at least 2 dims), got shape {}", op,
              a.defined() ? a.sizes() : Shape{});
  if (n == 0) {
    const int64_t m = a.size(-1);
    const BasicTensor<P> identity = eye<P>(m, m, TensorOptions(a.dtype()).device(a.device())).expand(a.sizes());
    if (!a.requires_grad()) return identity.contiguous();
    // In the graph with a zero gradient, as PyTorch's (a backward through it must not fail).
    return where(zeros_like(a, TensorOptions(DType::Bool)), a, identity);
  }
  if (n == 1) return a.clone();  // a new tensor, as PyTorch's
  BasicTensor<P> base = n < 0 ? inv(a) : a;
  uint64_t e = n < 0 ? static_cast<uint64_t>(-(n + 1)) + 1 : static_cast<uint64_t>(n);
  BasicTensor<P> result;
  while (true) {
    if (e & 1) result = result.defined() ? result.matmul(base) : base;
    e >>= 1;
    if (e == 0) break;
    base = base.matmul(base);
  }
  return result;
}

/// exp(A) of square matrices: scaling and squaring with the [13/13] Pade approximant (f32 in
/// f64), differentiable any number of times.
template <class P>
BasicTensor<P> matrix_exp(const BasicTensor<P>& a) {
  detail::check_matrices(a, "linalg.matrix_exp", true);
  detail::check_finite(a, "linalg.matrix_exp");
  return detail::MatrixExp<P>::apply(a);
}

/// A vector norm over dims (all dims without): ord inf, -inf (largest, smallest |x|), 0 (the
/// count of nonzeros) or any other p, (sum |x|^p)^(1/p).
template <class P>
BasicTensor<P> vector_norm(const BasicTensor<P>& x, double ord = 2, std::optional<Shape> dims = std::nullopt,
                           bool keepdim = false) {
  constexpr const char* op = "linalg.vector_norm";
  EMBER_CHECK(x.defined(), "[{}] got an undefined tensor", op);
  EMBER_CHECK(x.is_floating_point(), "[{}] expects a floating-point tensor, got {}", op, x.dtype());
  return x.norm(ord, dims.value_or(Shape{}), keepdim);  // 0, +-inf and p with PyTorch's gradients
}

namespace detail {
template <class P>
BasicTensor<P> matrix_norm_impl(const BasicTensor<P>& a, std::variant<std::string_view, double> ord, const Shape& dims,
                                bool keepdim) {
  constexpr const char* op = "linalg.matrix_norm";
  check_matrices(a, op, false);
  const BasicTensor<P> m = matrices_last(a, dims, op);
  BasicTensor<P> r;
  if (const auto* name = std::get_if<std::string_view>(&ord)) {
    EMBER_CHECK(*name == "fro" || *name == "nuc", "[{}] ord must be \"fro\", \"nuc\" or a number, got \"{}\"", op,
                *name);
    if (*name == "fro") {
      r = m.norm(2.0, {-2, -1});
    } else {
      check_finite(m, op);
      r = Svd<P>::apply(m, false, recording(m))[1].sum({-1});
    }
  } else {
    const double p = std::get<double>(ord);
    if (p == 2 || p == -2) {
      check_finite(m, op);
      const BasicTensor<P> s = Svd<P>::apply(m, false, recording(m))[1];
      r = p > 0 ? s.amax({-1}) : s.amin({-1});
    } else if (p == 1 || p == -1) {
      const BasicTensor<P> cols = m.abs().sum({-2});
      r = p > 0 ? cols.amax({-1}) : cols.amin({-1});
    } else if (std::isinf(p)) {
      const BasicTensor<P> rows = m.abs().sum({-1});
      r = p > 0 ? rows.amax({-1}) : rows.amin({-1});
    } else {
      EMBER_CHECK(false, "[{}] ord must be 2, -2, 1, -1, inf, -inf, \"fro\" or \"nuc\", got {}", op, p);
    }
  }
  return keepdim ? keep_matrix_dims(r, a.dim(), dims, op) : r;
}

template <class P>
BasicTensor<P> cond_impl(const BasicTensor<P>& a, std::optional<std::variant<std::string_view, double>> p) {
  constexpr const char* op = "linalg.cond";
  check_matrices(a, op, false);
  const double* num = p ? std::get_if<double>(&*p) : nullptr;
  // Empty matrices: zeros of the batch shape, as PyTorch's.
  if (a.numel() == 0)
    return zeros<P>(replace_tail(a.sizes(), 2, {}), TensorOptions(a.dtype()).device(a.device()));
  if (!p || (num && (*num == 2 || *num == -2))) {
    check_finite(a, op);
    const BasicTensor<P> s = Svd<P>::apply(a, false, recording(a))[1];
    const int64_t k = s.size(-1);
    const BasicTensor<P> big = s.narrow(-1, 0, 1).squeeze(-1), small = s.narrow(-1, k - 1, 1).squeeze(-1);
    return (num && *num == -2) ? small / big : big / small;
  }
  check_matrices(a, op, true);
  // A singular matrix has condition number inf (PyTorch's too), not an error: its inverse is
  // taken of the identity in its place, and the result replaced.
  BasicTensor<P> sign, logabs, det;
  lu_determinants(a.detach(), sign, logabs, det);
  const BasicTensor<P> singular = sign.eq(0.0).to(a.device());
  const int64_t n = a.size(-1);
  const BasicTensor<P> safe = where(singular.unsqueeze(-1).unsqueeze(-1),
                                    eye<P>(n, n, TensorOptions(a.dtype()).device(a.device())), a);
  const BasicTensor<P> c =
      matrix_norm_impl(a, *p, {-2, -1}, false) * matrix_norm_impl(linalg::inv(safe), *p, {-2, -1}, false);
  return where(singular, std::numeric_limits<double>::infinity(), c);
}
}  // namespace detail

/// A matrix norm over dims (the last two by default): "fro" or "nuc" (the sum of singular
/// values).
template <class P>
BasicTensor<P> matrix_norm(const BasicTensor<P>& a, std::string_view ord = "fro", const Shape& dims = {-2, -1},
                           bool keepdim = false) {
  return detail::matrix_norm_impl(a, ord, dims, keepdim);
}

/// A matrix norm over dims: ord 2 / -2 (largest / smallest singular value), 1 / -1 (largest /
/// smallest column sum of |a|), inf / -inf (largest / smallest row sum).
template <class P>
BasicTensor<P> matrix_norm(const BasicTensor<P>& a, double ord, const Shape& dims = {-2, -1}, bool keepdim = false) {
  return detail::matrix_norm_impl(a, ord, dims, keepdim);
}

/// torch::linalg::norm: a vector norm over one dim, a matrix norm over two; without dims, the
/// 2-norm of every element when ord is unset, otherwise a vector norm of a 1-d input or a
/// matrix norm of a 2-d one.
template <class P>
BasicTensor<P> norm(const BasicTensor<P>& x, std::optional<double> ord = std::nullopt,
                    std::optional<Shape> dims = std::nullopt, bool keepdim = false) {
  if (dims) {
    EMBER_CHECK(dims->size() == 1 || dims->size() == 2, "[linalg.norm] dim must name 1 or 2 dims, got {}", *dims);
    if (dims->size() == 2) return ord ? matrix_norm(x, *ord, *dims, keepdim) : matrix_norm(x, "fro", *dims, keepdim);
    return vector_norm(x, ord.value_or(2), dims, keepdim);
  }
  if (!ord) return vector_norm(x, 2, std::nullopt, keepdim);
  EMBER_CHECK(x.dim() == 1 || x.dim() == 2, "[linalg.norm] an ord without dims needs a 1-d or 2-d input, got shape {}",
              x.sizes());
  return x.dim() == 1 ? vector_norm(x, *ord, std::nullopt, keepdim) : matrix_norm(x, *ord, {-2, -1}, keepdim);
}
/// torch::linalg::norm with ord "fro" or "nuc": a matrix norm over dims (a 2-d input's two
/// without).
template <class P>
BasicTensor<P> norm(const BasicTensor<P>& x, std::string_view ord, std::optional<Shape> dims = std::nullopt,
                    bool keepdim = false) {
  EMBER_CHECK(dims ? dims->size() == 2 : x.dim() == 2,
              "[linalg.norm] ord \"{}\" is a matrix norm: it needs 2 dims or a 2-d input, got shape {}", ord, x.sizes());
  return matrix_norm(x, ord, dims.value_or(Shape{-2, -1}), keepdim);
}

/// The same with the dims as a braced list, as libtorch's linalg::norm(x, 2, {0}).
template <class P>
BasicTensor<P> norm(const BasicTensor<P>& x, std::optional<double> ord, const Shape& dims, bool keepdim = false) {
  return norm(x, ord, std::optional<Shape>(dims), keepdim);
}
template <class P>
BasicTensor<P> norm(const BasicTensor<P>& x, std::string_view ord, const Shape& dims, bool keepdim = false) {
  return norm(x, ord, std::optional<Shape>(dims), keepdim);
}

/// The condition number in the 2-norm: the largest singular value over the smallest.
template <class P>
BasicTensor<P> cond(const BasicTensor<P>& a) {
  return detail::cond_impl(a, std::nullopt);
}

/// The condition number in norm p: 2 / -2 from the singular values, otherwise
/// matrix_norm(A, p) * matrix_norm(A^-1, p) (square A).
template <class P>
BasicTensor<P> cond(const BasicTensor<P>& a, double p) {
  return detail::cond_impl(a, std::variant<std::string_view, double>(p));
}

/// The condition number in norm "fro" or "nuc": matrix_norm(A, p) * matrix_norm(A^-1, p).
template <class P>
BasicTensor<P> cond(const BasicTensor<P>& a, std::string_view p) {
  return detail::cond_impl(a, std::variant<std::string_view, double>(p));
}

/// The cross product of 3-vectors along dim (broadcast).
template <class P>
BasicTensor<P> cross(const BasicTensor<P>& a, const BasicTensor<P>& b, int64_t dim = -1) {
  constexpr const char* op = "linalg.cross";
  detail::check_same(a, b, op);
  EMBER_CHECK(a.dim() == b.dim(), "[{}] expects operands of one rank, got shapes {} and {}", op, a.sizes(),
              b.sizes());
  const int64_t d = ember::wrap_dim(dim, a.dim(), op);
  EMBER_CHECK(a.size(d) == 3 && b.size(d) == 3, "[{}] dim {} must have size 3, got shapes {} and {}", op, dim,
              a.sizes(), b.sizes());
  auto at = [&](const BasicTensor<P>& t, int64_t i) { return t.narrow(d, i, 1); };
  return cat(std::vector<BasicTensor<P>>{at(a, 1) * at(b, 2) - at(a, 2) * at(b, 1),
                                         at(a, 2) * at(b, 0) - at(a, 0) * at(b, 2),
                                         at(a, 0) * at(b, 1) - at(a, 1) * at(b, 0)},
             d);
}

/// The product of a chain of matrices in the cheapest order (dynamic programming over the
/// chain, as PyTorch's); the first may be a row vector and the last a column vector (1-d).
template <class P>
BasicTensor<P> multi_dot(const std::vector<BasicTensor<P>>& ts) {
  constexpr const char* op = "linalg.multi_dot";
  EMBER_CHECK(ts.size() >= 2, "[{}] expects at least 2 tensors, got {}", op, ts.size());
  const size_t n = ts.size();
  std::vector<BasicTensor<P>> m(n);
  for (size_t i = 0; i < n; ++i) {
    const BasicTensor<P>& t = ts[i];
    EMBER_CHECK(t.defined(), "[{}] tensor {} is undefined", op, i);
    const bool end = i == 0 || i + 1 == n;
    EMBER_CHECK(t.dim() == 2 || (end && t.dim() == 1), "[{}] tensor {} must be {}, got shape {}", op, i,
                end ? "1-d or 2-d" : "2-d", t.sizes());
    m[i] = t.dim() == 2 ? t : (i == 0 ? t.unsqueeze(0) : t.unsqueeze(1));
    if (i > 0)
      EMBER_CHECK(m[i - 1].size(1) == m[i].size(0), "[{}] tensors {} and {} do not fit: shapes {} and {}", op, i - 1, i,
                  ts[i - 1].sizes(), t.sizes());
  }
  // cost[i][j]: the fewest multiply-adds for m[i..j]; split[i][j]: where to split it.
  std::vector<int64_t> dims(n + 1);
  for (size_t i = 0; i < n; ++i) dims[i] = m[i].size(0);
  dims[n] = m[n - 1].size(1);
  std::vector<std::vector<int64_t>> cost(n, std::vector<int64_t>(n, 0));
  std::vector<std::vector<size_t>> split(n, std::vector<size_t>(n, 0));
  for (size_t len = 1; len < n; ++len) {
    for (size_t i = 0; i + len < n; ++i) {
      const size_t j = i + len;
      cost[i][j] = std::numeric_limits<int64_t>::max();
      for (size_t k = i; k < j; ++k) {
        const int64_t c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1];
        if (c < cost[i][j]) cost[i][j] = c, split[i][j] = k;
      }
    }
  }
  auto product = [&](auto&& self, size_t i, size_t j) -> BasicTensor<P> {
    if (i == j) return m[i];
    return self(self, i, split[i][j]).matmul(self(self, split[i][j] + 1, j));
  };
  BasicTensor<P> r = product(product, 0, n - 1);
  if (ts.front().dim() == 1) r = r.squeeze(0);
  if (ts.back().dim() == 1) r = r.squeeze(-1);
  return r;
}

}  // namespace ember::linalg

namespace ember {

/// torch::inverse: linalg::inv.
template <class P>
BasicTensor<P> inverse(const BasicTensor<P>& a) {
  return linalg::inv(a);
}

/// torch::det: linalg::det.
template <class P>
BasicTensor<P> det(const BasicTensor<P>& a) {
  return linalg::det(a);
}

/// torch::slogdet: linalg::slogdet.
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>> slogdet(const BasicTensor<P>& a) {
  return linalg::slogdet(a);
}

/// log(det(A)): NaN for a negative determinant, -inf for a singular matrix.
template <class P>
BasicTensor<P> logdet(const BasicTensor<P>& a) {
  linalg::detail::check_matrices(a, "logdet", true);
  auto [sign, logabs] = linalg::slogdet(a);
  return logabs.masked_fill(sign.lt(0.0), std::numeric_limits<double>::quiet_NaN());
}

/// torch::pinverse: linalg::pinv with rcond the relative tolerance.
template <class P>
BasicTensor<P> pinverse(const BasicTensor<P>& a, double rcond = 1e-15) {
  return linalg::pinv(a, 0.0, rcond, false);
}

/// A^-1 B for A = L L^T (upper: A = U^T U) given its Cholesky factor; batch dims broadcast.
template <class P>
BasicTensor<P> cholesky_solve(const BasicTensor<P>& b, const BasicTensor<P>& l, bool upper = false) {
  constexpr const char* op = "cholesky_solve";
  linalg::detail::check_matrices(l, op, true);
  linalg::detail::check_same(l, b, op);
  EMBER_CHECK(b.dim() >= 2 && b.size(-2) == l.size(-1), "[{}] B of shape {} does not fit a factor of shape {}", op,
              b.sizes(), l.sizes());
  auto [le, be] = linalg::detail::broadcast_batch(l, 2, b, 2, op);
  const BasicTensor<P> lower = upper ? le.mT() : le;
  const BasicTensor<P> y = linalg::detail::SolveTriangular<P>::apply(lower, be, false, false);
  return linalg::detail::SolveTriangular<P>::apply(lower.mT(), y, true, false);
}

/// A^-1 for A = L L^T (upper: A = U^T U) given its Cholesky factor.
template <class P>
BasicTensor<P> cholesky_inverse(const BasicTensor<P>& l, bool upper = false) {
  linalg::detail::check_matrices(l, "cholesky_inverse", true);
  const int64_t n = l.size(-1);
  return cholesky_solve(eye<P>(n, n, TensorOptions(l.dtype()).device(l.device())), l, upper);
}

/// torch::lu_unpack: linalg::lu_unpack.
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>, BasicTensor<P>> lu_unpack(const BasicTensor<P>& lu,
                                                                     const BasicTensor<P>& pivots,
                                                                     bool unpack_data = true,
                                                                     bool unpack_pivots = true) {
  return linalg::lu_unpack(lu, pivots, unpack_data, unpack_pivots);
}

/// torch::cholesky: linalg::cholesky.
template <class P>
BasicTensor<P> cholesky(const BasicTensor<P>& a, bool upper = false) {
  return linalg::cholesky(a, upper);
}

/// torch::matrix_exp: linalg::matrix_exp.
template <class P>
BasicTensor<P> matrix_exp(const BasicTensor<P>& a) {
  return linalg::matrix_exp(a);
}

/// torch::matrix_power: linalg::matrix_power.
template <class P>
BasicTensor<P> matrix_power(const BasicTensor<P>& a, int64_t n) {
  return linalg::matrix_power(a, n);
}

/// torch::chain_matmul (the older form of linalg::multi_dot): 2-d matrices only; one is
/// returned as a copy.
template <class P>
BasicTensor<P> chain_matmul(const std::vector<BasicTensor<P>>& ms) {
  constexpr const char* op = "chain_matmul";
  EMBER_CHECK(!ms.empty(), "[{}] expects one or more matrices", op);
  for (size_t i = 0; i < ms.size(); ++i)
    EMBER_CHECK(ms[i].defined() && ms[i].dim() == 2, "[{}] matrix {} must be 2-d, got {}", op, i,
                ms[i].defined() ? EMBER_FORMAT("shape {}", ms[i].sizes()) : std::string("an undefined tensor"));
  return ms.size() == 1 ? ms[0].clone() : linalg::multi_dot(ms);
}

/// torch::frobenius_norm (the older form): the 2-norm over one dim or two (a matrix's
/// Frobenius norm).
template <class P>
BasicTensor<P> frobenius_norm(const BasicTensor<P>& x, const Shape& dims, bool keepdim = false) {
  EMBER_CHECK(dims.size() <= 2, "[frobenius_norm] expects at most 2 dims, got {}", dims.size());
  if (dims.empty()) return linalg::vector_norm(x, 2, std::nullopt, keepdim);  // every element, as PyTorch's dim=[]
  return linalg::vector_norm(x, 2, dims, keepdim);
}
/// Over every element.
template <class P>
BasicTensor<P> frobenius_norm(const BasicTensor<P>& x) {
  return linalg::vector_norm(x, 2);
}

/// torch::nuclear_norm (the older form): the sum of singular values of a 2-d input, or over
/// two dims of any input.
template <class P>
BasicTensor<P> nuclear_norm(const BasicTensor<P>& x, bool keepdim = false) {
  EMBER_CHECK(x.defined() && x.dim() == 2, "[nuclear_norm] expects a 2-d tensor (or two dims), got {}",
              x.defined() ? EMBER_FORMAT("shape {}", x.sizes()) : std::string("an undefined tensor"));
  return linalg::matrix_norm(x, "nuc", {-2, -1}, keepdim);
}
template <class P>
BasicTensor<P> nuclear_norm(const BasicTensor<P>& x, const Shape& dims, bool keepdim = false) {
  return linalg::matrix_norm(x, "nuc", dims, keepdim);
}

/// torch::qr (the older form): some = true is mode "reduced", false "complete".
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>> qr(const BasicTensor<P>& a, bool some = true) {
  return linalg::qr(a, some ? "reduced" : "complete");
}

/// torch::svd (the older form): {U, S, V} with V, not Vh; some = true: the reduced factors.
/// Without compute_uv, U and V are zero-filled (m x m and n x n), as PyTorch's, and only S is
/// computed (and differentiable).
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>, BasicTensor<P>> svd(const BasicTensor<P>& a, bool some = true,
                                                               bool compute_uv = true) {
  if (!compute_uv) {
    linalg::detail::check_matrices(a, "svd", false);
    const TensorOptions o = TensorOptions(a.dtype()).device(a.device());
    const int64_t m = a.size(-2), n = a.size(-1);
    return {zeros<P>(linalg::detail::replace_tail(a.sizes(), 2, {m, m}), o), linalg::svdvals(a),
            zeros<P>(linalg::detail::replace_tail(a.sizes(), 2, {n, n}), o)};
  }
  auto [u, s, vh] = linalg::svd(a, !some);
  return {u, s, vh.mT()};
}

/// torch::triangular_solve(b, A, upper, transpose, unitriangular): (A^-1 B, a copy of A),
/// with A^T in place of A under transpose.
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>> triangular_solve(const BasicTensor<P>& b, const BasicTensor<P>& a,
                                                            bool upper = true, bool transpose = false,
                                                            bool unitriangular = false) {
  const BasicTensor<P> x = transpose ? linalg::solve_triangular(a.mT(), b, !upper, true, unitriangular)
                                     : linalg::solve_triangular(a, b, upper, true, unitriangular);
  return {x, a.clone()};
}

// ---- the Tensor methods declared in core/tensor.hpp -------------------------------------------

template <class P>
BasicTensor<P> BasicTensor<P>::inverse() const {
  return linalg::inv(*this);
}
template <class P>
BasicTensor<P> BasicTensor<P>::det() const {
  return linalg::det(*this);
}
template <class P>
BasicTensor<P> BasicTensor<P>::logdet() const {
  return ember::logdet(*this);
}
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>> BasicTensor<P>::slogdet() const {
  return linalg::slogdet(*this);
}
template <class P>
BasicTensor<P> BasicTensor<P>::cholesky(bool upper) const {
  return linalg::cholesky(*this, upper);
}
template <class P>
BasicTensor<P> BasicTensor<P>::cholesky_solve(const BasicTensor& factor, bool upper) const {
  return ember::cholesky_solve(*this, factor, upper);
}
template <class P>
BasicTensor<P> BasicTensor<P>::cholesky_inverse(bool upper) const {
  return ember::cholesky_inverse(*this, upper);
}
template <class P>
BasicTensor<P> BasicTensor<P>::pinverse(double rcond) const {
  return ember::pinverse(*this, rcond);
}
template <class P>
BasicTensor<P> BasicTensor<P>::matrix_exp() const {
  return linalg::matrix_exp(*this);
}
template <class P>
BasicTensor<P> BasicTensor<P>::matrix_power(int64_t n) const {
  return linalg::matrix_power(*this, n);
}
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>> BasicTensor<P>::triangular_solve(const BasicTensor& a, bool upper,
                                                                             bool transpose,
                                                                             bool unitriangular) const {
  return ember::triangular_solve(*this, a, upper, transpose, unitriangular);
}
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>> BasicTensor<P>::qr(bool some) const {
  return ember::qr(*this, some);
}
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>, BasicTensor<P>> BasicTensor<P>::svd(bool some, bool compute_uv) const {
  return ember::svd(*this, some, compute_uv);
}

}  // namespace ember

// geqrf, householder_product, ormqr, and the Tensor methods they define (they build on the above).
#include <ember/linalg/householder.hpp>

#pragma once
/// LU with partial pivoting, as torch::linalg::lu, lu_factor, lu_solve and torch::lu_unpack:
///
///   auto [P, L, U] = linalg::lu(A);                 // A = P L U, any m x n
///   auto [LU, pivots] = linalg::lu_factor(A);       // LAPACK's packed form, pivots 1-based i32
///   Tensor X = linalg::lu_solve(LU, pivots, B);     // A X = B, factorised once, solved often
///
/// The factorisation is kernels_cpu/linalg.cpp's getrf (right-looking, LAPACK's pivot choice,
/// so that pivots and factors match PyTorch's). lu is differentiable in L and U with
/// PyTorch's backward (linalg_lu_backward: square, wide and tall forms); lu_factor and
/// lu_unpack are written over it, lu_solve over triangular solves, so all are differentiable
/// in LU and B.

#include <ember/linalg/functions.hpp>

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

namespace ember::linalg::detail {

/// The row order of each matrix's LAPACK pivots (host i32, (*, k)): after the swaps
/// j <-> pivots[j] - 1 in order, row j of L U is row perm[j] of A. All batches, one after
/// another (m entries each).
template <class P>
std::vector<int64_t> pivot_orders(const BasicTensor<P>& pivots, int64_t m, const char* op) {
  const BasicTensor<P> h = on_host(pivots);
  const int64_t k = h.size(-1);
  int64_t count = 1;  // matrices: the product of the batch dims
  for (int64_t d = 0; d + 1 < h.dim(); ++d) count *= h.size(d);
  const int32_t* piv = h.template data_ptr<int32_t>();
  std::vector<int64_t> perm(static_cast<size_t>(count * m));
  for (int64_t b = 0; b < count; ++b) {
    int64_t* order = perm.data() + b * m;
    for (int64_t j = 0; j < m; ++j) order[j] = j;
    for (int64_t j = 0; j < k; ++j) {
      // Any row is a legal swap (getrf's are never above j, but a user's may be).
      const int64_t r = piv[b * k + j] - 1;
      EMBER_CHECK(r >= 0 && r < m, "[{}] pivot {} of matrix {} is {}: it must be in [1, {}]", op, j, b, r + 1, m);
      std::swap(order[j], order[r]);
    }
  }
  return perm;
}

/// The permutation matrices P (m x m, dtype t) of the pivots, A = P L U: P[perm[j], j] = 1.
template <class P>
BasicTensor<P> permutation_of(const BasicTensor<P>& pivots, int64_t m, DType t, const char* op) {
  const std::vector<int64_t> perm = pivot_orders(pivots, m, op);
  BasicTensor<P> p = zeros<P>(replace_tail(pivots.sizes(), 1, {m, m}), TensorOptions(DType::F64));
  double* out = p.template data_ptr<double>();
  for (size_t b = 0; m > 0 && b < perm.size() / static_cast<size_t>(m); ++b)
    for (int64_t j = 0; j < m; ++j) out[static_cast<int64_t>(b) * m * m + perm[b * m + j] * m + j] = 1;
  return p.to(pivots.device(), t);
}

/// The row order as an i64 index tensor (*, m) on the pivots' device: perm (rows of P^T B are
/// B[perm]), or its inverse (rows of P Y are Y[inverse]).
template <class P>
BasicTensor<P> row_order(const BasicTensor<P>& pivots, int64_t m, bool inverse, const char* op) {
  std::vector<int64_t> perm = pivot_orders(pivots, m, op);
  if (inverse) {
    std::vector<int64_t> inv(perm.size());
    for (size_t b = 0; m > 0 && b < perm.size() / static_cast<size_t>(m); ++b)
      for (int64_t j = 0; j < m; ++j) inv[b * m + perm[b * m + j]] = j;
    perm.swap(inv);
  }
  return tensor<int64_t, P>(perm).reshape(replace_tail(pivots.sizes(), 1, {m})).to(pivots.device());
}

/// A = P L U: {P, L (m x k, unit lower), U (k x n, upper), pivots}. P and the pivots are not
/// differentiable.
template <class P>
struct Lu : autograd::Function<Lu<P>, P> {
  using TensorT = BasicTensor<P>;
  static constexpr const char* name = "LinalgLu";
  static std::vector<TensorT> forward(autograd::BasicAutogradContext<P>* ctx, const TensorT& a, bool refuse_singular,
                                      const char* op) {
    const TensorT ha = on_host(a);
    const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
    TensorT packed = host_empty(a, a.sizes());
    TensorT pivots = empty<P>(replace_tail(a.sizes(), 2, {k}), TensorOptions(DType::I32));
    int64_t singular = -1;
    with_float_type(a.dtype(), [&](auto t) {
      using T = decltype(t);
      singular = kernels::lu_factor<T>(ha.template data_ptr<T>(), packed.template data_ptr<T>(),
                                       pivots.template data_ptr<int32_t>(), batch_count(a.sizes()), m, n);
    });
    EMBER_CHECK(!refuse_singular || singular < 0,
                "[{}] matrix {} of the batch (shape {}) has a zero pivot: U is singular and lu_solve would divide by "
                "zero (linalg::lu factorises it anyway)",
                op, singular, a.sizes());
    const TensorT p = permutation_of(pivots, m, a.dtype(), op).to(a.device());  // from the host pivots
    packed = packed.to(a.device());
    pivots = pivots.to(a.device());
    const TensorOptions o = TensorOptions(a.dtype()).device(a.device());
    const TensorT l = packed.narrow(-1, 0, k).tril(-1) + eye<P>(m, k, o);
    const TensorT u = packed.narrow(-2, 0, k).triu();
    ctx->set_materialize_grads(false);
    ctx->mark_non_differentiable({p, pivots});
    ctx->save_for_backward({p, l, u});
    return {p, l, u, pivots};
  }
  static std::vector<TensorT> backward(autograd::BasicAutogradContext<P>* ctx, std::vector<TensorT> grads) {
    const auto saved = ctx->get_saved_variables();
    const TensorT &p = saved[0], &l = saved[1], &u = saved[2];
    const TensorT &gl = grads[1], &gu = grads[2];
    const std::vector<TensorT> none(3);
    if (!gl.defined() && !gu.defined()) return none;
    const int64_t m = l.size(-2), n = u.size(-1), k = std::min(m, n);
    TensorT ga;
    if (m == n) {
      // P L^-T [tril(L^T gL, -1) + triu(gU U^T)] U^-T
      if (gl.defined()) ga = l.mT().matmul(gl).tril(-1);
      if (gu.defined()) ga = ga.defined() ? ga + gu.matmul(u.mT()).triu() : gu.matmul(u.mT()).triu();
      ga = SolveTriangular<P>::apply(u, ga.mT(), true, false).mT();  // X U^T = ga
      ga = SolveTriangular<P>::apply(l.mT(), ga, true, true);
    } else if (m < n) {
      // Wide, U = [U1 | U2]: A1 gets P L^-T [gU1 + tril(L^T gL - gU U^T, -1) U1^-T], A2 P L^-T gU2.
      const TensorT u1 = u.narrow(-1, 0, k);
      if (gl.defined()) ga = l.mT().matmul(gl);
      if (gu.defined()) ga = ga.defined() ? ga - gu.triu().matmul(u.mT()) : -gu.triu().matmul(u.mT());
      ga = SolveTriangular<P>::apply(u1, ga.tril(-1).mT(), true, false).mT();  // X U1^T = tril(.)
      if (gu.defined()) ga = cat(std::vector<TensorT>{ga + gu.narrow(-1, 0, k).triu(), gu.narrow(-1, k, n - k)}, -1);
      else ga = cat(std::vector<TensorT>{ga, zeros_like(u.narrow(-1, k, n - k))}, -1);
      ga = SolveTriangular<P>::apply(l.mT(), ga, true, true);
    } else {
      // Tall, L = [L1; L2]: A1 gets P [gL1 + L1^-T triu(gU U^T - L^T gL)] U^-T, A2 P gL2 U^-T.
      const TensorT l1 = l.narrow(-2, 0, k);
      if (gu.defined()) ga = gu.matmul(u.mT());
      if (gl.defined()) ga = ga.defined() ? ga - l.mT().matmul(gl.tril(-1)) : -l.mT().matmul(gl.tril(-1));
      ga = SolveTriangular<P>::apply(l1.mT(), ga.triu(), true, true);
      if (gl.defined()) ga = cat(std::vector<TensorT>{ga + gl.narrow(-2, 0, k).tril(-1), gl.narrow(-2, k, m - k)}, -2);
      else ga = cat(std::vector<TensorT>{ga, zeros_like(l.narrow(-2, k, m - k))}, -2);
      ga = SolveTriangular<P>::apply(u, ga.mT(), true, false).mT();  // X U^T = ga
    }
    return {p.matmul(ga), TensorT(), TensorT()};
  }
};

}  // namespace ember::linalg::detail

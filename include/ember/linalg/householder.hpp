#pragma once
/// LAPACK's Householder form of QR, as libtorch's torch::geqrf, torch::linalg::householder_product
/// (torch::orgqr) and torch::ormqr:
///
///   auto [qr, tau] = geqrf(A);                             // A = H_0 ... H_{k-1} R, k = min(m, n)
///   Tensor Q = linalg::householder_product(qr, tau);      // Q's first n columns (m >= n)
///   Tensor QtB = ormqr(qr, tau, B, true, true);           // Q^T B without forming Q
///
/// H_i = I - tau_i v_i v_i^T, v_i zero above row i, 1 at row i, and column i of `qr` below.
/// geqrf is not differentiable (as PyTorch's: use linalg::qr); householder_product and ormqr
/// are, in every argument, to any order: they apply the reflectors one by one with Ember's
/// differentiable ops (k rank-one updates, LAPACK's unblocked order), so their cost is k small
/// products rather than one blocked kernel.

#include <ember/linalg.hpp>

#include <cstdint>
#include <tuple>
#include <vector>

namespace ember {

namespace linalg::detail {

/// geqrf's packed factors {qr, tau}; a backward through them is an error.
template <class P>
struct Geqrf : autograd::Function<Geqrf<P>, P> {
  using TensorT = BasicTensor<P>;
  static constexpr const char* name = "Geqrf";
  static std::vector<TensorT> forward(autograd::BasicAutogradContext<P>*, const TensorT& a) {
    const TensorT ha = on_host(a);
    const int64_t m = a.size(-2), n = a.size(-1);
    TensorT qr = host_empty(a, a.sizes());
    TensorT tau = host_empty(a, replace_tail(a.sizes(), 2, {std::min(m, n)}));
    with_float_type(a.dtype(), [&](auto t) {
      using T = decltype(t);
      kernels::geqrf<T>(ha.template data_ptr<T>(), qr.template data_ptr<T>(), tau.template data_ptr<T>(),
                        batch_count(a.sizes()), m, n);
    });
    return {qr.to(a.device()), tau.to(a.device())};
  }
  static std::vector<TensorT> backward(autograd::BasicAutogradContext<P>*, std::vector<TensorT>) {
    EMBER_FAIL("[geqrf] is not differentiable (as PyTorch's); linalg::qr is");
  }
};

/// The Householder vectors v_i (i < k) of `qr` (*, m, n), each (*, m): 1 at row i, qr's
/// column i below it, 0 above. Selected, not masked by multiplying: what lies on and above
/// the diagonal (R) is never read, an infinity there included, and gets no gradient.
template <class P>
BasicTensor<P> reflector(const BasicTensor<P>& qr, int64_t i) {
  const int64_t m = qr.size(-2);
  const TensorOptions o = TensorOptions(qr.dtype()).device(qr.device());
  const BasicTensor<P> rows = arange<P>(m, o);
  return where(rows.gt(static_cast<double>(i)), qr.select(-1, i), rows.eq(static_cast<double>(i)).to(qr.dtype()));
}

/// c := H c (left) or c H (right), H = I - tau v v^T; v (*, m), tau (*).
template <class P>
BasicTensor<P> apply_reflector(const BasicTensor<P>& c, const BasicTensor<P>& v, const BasicTensor<P>& tau,
                               bool left) {
  const BasicTensor<P> t = tau.unsqueeze(-1).unsqueeze(-1);
  if (left) return c - (v.unsqueeze(-1) * t) * v.unsqueeze(-2).matmul(c);   // v (tau v^T c)
  return c - (c.matmul(v.unsqueeze(-1)) * t) * v.unsqueeze(-2);             // (c v tau) v^T
}

/// The checks householder_product and ormqr share: dtypes, devices, tau (*, k) with the input's
/// batch dims, k <= n.
template <class P>
void check_reflectors(const BasicTensor<P>& a, const BasicTensor<P>& tau, const char* op) {
  check_matrices(a, op, false);
  check_same(a, tau, op);
  EMBER_CHECK(tau.dim() == a.dim() - 1 && replace_tail(tau.sizes(), 1, {}) == replace_tail(a.sizes(), 2, {}),
              "[{}] tau of shape {} does not fit input of shape {} (expected the input's batch dims and one more)", op,
              tau.sizes(), a.sizes());
  EMBER_CHECK(tau.size(-1) <= a.size(-1),
              "[{}] tau holds {} scalars, more than input's {} columns (input shape {})", op, tau.size(-1),
              a.size(-1), a.sizes());
}

}  // namespace linalg::detail

/// LAPACK's geqrf of f32/f64 matrices (*, m, n): {qr (*, m, n), tau (*, min(m, n))}, R on and
/// above qr's diagonal, the reflectors below (see the top of this file). Not differentiable.
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>> geqrf(const BasicTensor<P>& a) {
  linalg::detail::check_matrices(a, "geqrf", false);
  auto r = linalg::detail::Geqrf<P>::apply(a);
  return {r[0], r[1]};
}

namespace linalg {
/// Q's first n columns (*, m, n) from k reflectors: H_0 ... H_{k-1} applied to the identity's
/// first n columns. Needs m >= n >= k.
template <class P>
BasicTensor<P> householder_product(const BasicTensor<P>& a, const BasicTensor<P>& tau) {
  constexpr const char* op = "linalg.householder_product";
  detail::check_reflectors(a, tau, op);
  const int64_t m = a.size(-2), n = a.size(-1), k = tau.size(-1);
  EMBER_CHECK(m >= n, "[{}] input must have at least as many rows as columns, got shape {}", op, a.sizes());
  BasicTensor<P> q = eye<P>(m, n, TensorOptions(a.dtype()).device(a.device())).expand(a.sizes()).contiguous();
  for (int64_t i = k - 1; i >= 0; --i)
    q = detail::apply_reflector(q, detail::reflector(a, i), tau.select(-1, i), true);
  return q;
}
}  // namespace linalg

/// torch::orgqr: linalg::householder_product.
template <class P>
BasicTensor<P> orgqr(const BasicTensor<P>& a, const BasicTensor<P>& tau) {
  return linalg::householder_product(a, tau);
}

/// Q C, Q^T C (transpose), C Q or C Q^T (left = false) for the m x m Q = H_0 ... H_{k-1} of
/// geqrf's (a, tau), without forming Q; `other` (*, m, p) (right: (*, p, m)) has a's batch dims.
template <class P>
BasicTensor<P> ormqr(const BasicTensor<P>& a, const BasicTensor<P>& tau, const BasicTensor<P>& other,
                     bool left = true, bool transpose = false) {
  constexpr const char* op = "ormqr";
  linalg::detail::check_reflectors(a, tau, op);
  linalg::detail::check_matrices(other, op, false);
  linalg::detail::check_same(a, other, op);
  const int64_t m = a.size(-2), k = tau.size(-1);
  EMBER_CHECK(other.dim() == a.dim() && linalg::detail::replace_tail(other.sizes(), 2, {}) ==
                                            linalg::detail::replace_tail(a.sizes(), 2, {}),
              "[{}] other of shape {} must have input's batch dims (input shape {})", op, other.sizes(), a.sizes());
  EMBER_CHECK(other.size(left ? -2 : -1) == m, "[{}] other of shape {} does not fit Q ({} x {}) on the {}", op,
              other.sizes(), m, m, left ? "left" : "right");
  EMBER_CHECK(k <= m, "[{}] tau holds {} scalars, more than input's {} rows (input shape {})", op, k, m, a.sizes());
  // Q = H_0 ... H_{k-1}, each H symmetric: Q C and C Q^T apply H_{k-1} first, Q^T C and C Q H_0.
  const bool last_first = left != transpose;
  BasicTensor<P> c = other;
  for (int64_t j = 0; j < k; ++j) {
    const int64_t i = last_first ? k - 1 - j : j;
    c = linalg::detail::apply_reflector(c, linalg::detail::reflector(a, i), tau.select(-1, i), left);
  }
  return k == 0 ? other.clone() : c;
}

template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>> BasicTensor<P>::geqrf() const {
  return ember::geqrf(*this);
}
template <class P>
BasicTensor<P> BasicTensor<P>::orgqr(const BasicTensor& tau) const {
  return ember::orgqr(*this, tau);
}
template <class P>
BasicTensor<P> BasicTensor<P>::ormqr(const BasicTensor& tau, const BasicTensor& other, bool left,
                                     bool transpose) const {
  return ember::ormqr(*this, tau, other, left, transpose);
}

}  // namespace ember

#pragma once
/// The differentiable factorisations behind ember::linalg: one autograd Function each, whose
/// forward runs a kernel of kernels_cpu/linalg*.cpp on the host and whose backward is PyTorch's
/// (FunctionsManual.cpp's formulas), written with differentiable Ember ops and these
/// functions themselves, so that each can be differentiated again. Inputs reach them checked
/// (linalg.hpp) and with their batch dims broadcast already.
///
/// CUDA tensors are factorised on the host: copied over, factorised, copied back (MLX does the
/// same). Fine for the small matrices of robotics and graphics; a cuSOLVER path is future work.

#include <ember/autograd/function.hpp>
#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/linalg/kernels.hpp>
#include <ember/ops/functions.hpp>
#include <ember/ops/matrix_builders.hpp>
#include <ember/ops/shape_ops.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace ember::linalg::detail {

namespace kernels = ember::detail::linalg_kernels;

/// The number of matrices in a batch of shape (*, m, n).
inline int64_t batch_count(const Shape& s) {
  int64_t b = 1;
  for (size_t d = 0; d + 2 < s.size(); ++d) b *= s[d];
  return b;
}

/// s with its last `drop` dims replaced by `tail`.
inline Shape replace_tail(const Shape& s, size_t drop, std::initializer_list<int64_t> tail) {
  Shape r(s.size() - drop + tail.size());
  size_t i = 0;
  for (; i + drop < s.size(); ++i) r[i] = s[i];
  for (int64_t t : tail) r[i++] = t;
  return r;
}

/// A contiguous host copy (or the tensor itself when it is one already).
template <class P>
BasicTensor<P> on_host(const BasicTensor<P>& a) {
  return a.to(kCPU).contiguous();
}

/// An uninitialised host tensor of `a`'s dtype.
template <class P>
BasicTensor<P> host_empty(const BasicTensor<P>& a, const Shape& s) {
  return empty<P>(s, TensorOptions(a.dtype()));
}

/// Calls f(T{}) with T the C++ type of an f32 or f64 tensor.
template <class F>
void with_float_type(DType t, F&& f) {
  if (t == DType::F64) f(double{});
  else f(float{});
}

/// Lower triangle with the diagonal counted once: tril(x) + tril(x, -1)^T.
template <class P>
BasicTensor<P> copy_lower_to_upper(const BasicTensor<P>& x) {
  return x.tril() + x.tril(-1).mT();
}

/// x = A^-1 B for triangular A (left only; the right-hand form is its transpose).
template <class P>
struct SolveTriangular : autograd::Function<SolveTriangular<P>, P> {
  using TensorT = BasicTensor<P>;
  static constexpr const char* name = "LinalgSolveTriangular";
  static TensorT forward(autograd::BasicAutogradContext<P>* ctx, const TensorT& a, const TensorT& b, bool upper,
                         bool unit) {
    const TensorT ha = on_host(a), hb = on_host(b);
    TensorT x = host_empty(b, b.sizes());
    const int64_t n = a.size(-1), k = b.size(-1);
    with_float_type(a.dtype(), [&](auto t) {
      using T = decltype(t);
      kernels::solve_triangular<T>(ha.template data_ptr<T>(), hb.template data_ptr<T>(), x.template data_ptr<T>(),
                                   batch_count(a.sizes()), n, k, upper, unit);
    });
    x = x.to(b.device());
    ctx->save_for_backward({a, x});
    ctx->saved_data["upper"] = upper;
    ctx->saved_data["unit"] = unit;
    return x;
  }
  static std::vector<TensorT> backward(autograd::BasicAutogradContext<P>* ctx, std::vector<TensorT> grads) {
    const auto saved = ctx->get_saved_variables();
    const TensorT &a = saved[0], &x = saved[1];
    const bool upper = std::any_cast<bool>(ctx->saved_data["upper"]);
    const bool unit = std::any_cast<bool>(ctx->saved_data["unit"]);
    // A^T gB = gX; gA = -gB X^T on A's triangle (without the diagonal when it is not read).
    const TensorT gb = SolveTriangular::apply(a.mT(), grads[0], !upper, unit);
    TensorT ga;
    if (ctx->needs_input_grad(0)) {
      const TensorT full = -gb.matmul(x.mT());
      ga = upper ? full.triu(unit ? 1 : 0) : full.tril(unit ? -1 : 0);
    }
    return {ga, ctx->needs_input_grad(1) ? gb : TensorT(), TensorT(), TensorT()};
  }
};

/// x = A^-1 B through LU with partial pivoting (B already a batch of n x k matrices with A's
/// batch dims).
template <class P>
struct Solve : autograd::Function<Solve<P>, P> {
  using TensorT = BasicTensor<P>;
  static constexpr const char* name = "LinalgSolve";
  static TensorT forward(autograd::BasicAutogradContext<P>* ctx, const TensorT& a, const TensorT& b, const char* op) {
    const TensorT ha = on_host(a), hb = on_host(b);
    TensorT x = host_empty(b, b.sizes());
    int64_t singular = -1;
    with_float_type(a.dtype(), [&](auto t) {
      using T = decltype(t);
      singular = kernels::lu_solve<T>(ha.template data_ptr<T>(), hb.template data_ptr<T>(), x.template data_ptr<T>(),
                                      batch_count(a.sizes()), a.size(-1), b.size(-1));
    });
    EMBER_CHECK(singular < 0, "[{}] matrix {} of the batch (shape {}) is singular: the system has no unique solution",
                op, singular, a.sizes());
    x = x.to(b.device());
    ctx->save_for_backward({a, x});
    return x;
  }
  static std::vector<TensorT> backward(autograd::BasicAutogradContext<P>* ctx, std::vector<TensorT> grads) {
    const auto saved = ctx->get_saved_variables();
    const TensorT &a = saved[0], &x = saved[1];
    // A^T gB = gX; gA = -gB X^T.
    const TensorT gb = Solve::apply(a.mT(), grads[0], "linalg.solve backward");
    TensorT ga;
    if (ctx->needs_input_grad(0)) ga = -gb.matmul(x.mT());
    return {ga, ctx->needs_input_grad(1) ? gb : TensorT(), TensorT()};
  }
};

/// A^-1 through LU with partial pivoting.
template <class P>
struct Inverse : autograd::Function<Inverse<P>, P> {
  using TensorT = BasicTensor<P>;
  static constexpr const char* name = "LinalgInv";
  static TensorT forward(autograd::BasicAutogradContext<P>* ctx, const TensorT& a, const char* op) {
    const TensorT ha = on_host(a);
    TensorT y = host_empty(a, a.sizes());
    int64_t singular = -1;
    with_float_type(a.dtype(), [&](auto t) {
      using T = decltype(t);
      singular = kernels::lu_solve<T>(ha.template data_ptr<T>(), nullptr, y.template data_ptr<T>(),
                                      batch_count(a.sizes()), a.size(-1), a.size(-1));
    });
    EMBER_CHECK(singular < 0, "[{}] matrix {} of the batch (shape {}) is singular: it has no inverse", op, singular,
                a.sizes());
    y = y.to(a.device());
    ctx->save_for_backward({y});
    return y;
  }
  static std::vector<TensorT> backward(autograd::BasicAutogradContext<P>* ctx, std::vector<TensorT> grads) {
    const TensorT y = ctx->get_saved_variables()[0];
    const TensorT yt = y.mT();
    return {-yt.matmul(grads[0]).matmul(yt), TensorT()};
  }
};

/// sign, log|det| and det from one LU factorisation (host results).
template <class P>
void lu_determinants(const BasicTensor<P>& a, BasicTensor<P>& sign, BasicTensor<P>& logabs, BasicTensor<P>& det) {
  const BasicTensor<P> ha = on_host(a);
  const Shape batch = replace_tail(a.sizes(), 2, {});
  sign = host_empty(a, batch), logabs = host_empty(a, batch), det = host_empty(a, batch);
  with_float_type(a.dtype(), [&](auto t) {
    using T = decltype(t);
    kernels::lu_det<T>(ha.template data_ptr<T>(), batch_count(a.sizes()), a.size(-1), sign.template data_ptr<T>(),
                       logabs.template data_ptr<T>(), det.template data_ptr<T>());
  });
}

template <class P>
struct Svd;

/// det(A) from LU. Its gradient det(A) A^-T; where some matrix of the batch is singular
/// (|det| < 100 eps), PyTorch's form through the SVD instead: U diag(prod_{j != i} s_j) Vh det(U) det(Vh), the
/// cofactor matrix, which is defined there too.
template <class P>
struct Det : autograd::Function<Det<P>, P> {
  using TensorT = BasicTensor<P>;
  static constexpr const char* name = "LinalgDet";
  static TensorT forward(autograd::BasicAutogradContext<P>* ctx, const TensorT& a) {
    TensorT sign, logabs, det;
    lu_determinants(a, sign, logabs, det);
    det = det.to(a.device());
    ctx->save_for_backward({a, det});
    return det;
  }
  static std::vector<TensorT> backward(autograd::BasicAutogradContext<P>* ctx, std::vector<TensorT> grads) {
    const auto saved = ctx->get_saved_variables();
    const TensorT &a = saved[0], &det = saved[1];
    const TensorT g = grads[0].unsqueeze(-1).unsqueeze(-1);
    // PyTorch's test for the SVD form: |det| < 100 eps, where an inverse is mostly rounding.
    const double eps = a.dtype() == DType::F64 ? std::numeric_limits<double>::epsilon()
                                               : static_cast<double>(std::numeric_limits<float>::epsilon());
    if (det.numel() == 0 || !det.abs().lt(100 * eps).any().template item<bool>()) {
      return {(g * det.unsqueeze(-1).unsqueeze(-1)) * Inverse<P>::apply(a, "linalg.det backward").mT()};
    }
    const int64_t n = a.size(-1);
    auto usv = Svd<P>::apply(a, false, true);
    const TensorT &u = usv[0], &s = usv[1], &vh = usv[2];
    // prod_{j != i} s_j: the product of each row of s with its diagonal entry replaced by 1.
    const TensorT off = eye<P>(n, n, TensorOptions(DType::Bool).device(a.device()));
    const TensorT others = where(off, 1.0, s.unsqueeze(-2).expand(replace_tail(s.sizes(), 1, {n, n}))).prod(-1);
    TensorT su, lu, du, sv, lv, dv;  // det(U) det(Vh): +-1, constants
    lu_determinants(u.detach(), su, lu, du);
    lu_determinants(vh.detach(), sv, lv, dv);
    const TensorT orient = (du * dv).to(a.device()).unsqueeze(-1).unsqueeze(-1);
    return {g * orient * (u * others.unsqueeze(-2)).matmul(vh)};
  }
};

/// (sign, log|det|) from LU; sign is not differentiable, log|det|'s gradient is A^-T.
template <class P>
struct Slogdet : autograd::Function<Slogdet<P>, P> {
  using TensorT = BasicTensor<P>;
  static constexpr const char* name = "LinalgSlogdet";
  static std::vector<TensorT> forward(autograd::BasicAutogradContext<P>* ctx, const TensorT& a) {
    TensorT sign, logabs, det;
    lu_determinants(a, sign, logabs, det);
    sign = sign.to(a.device()), logabs = logabs.to(a.device());
    ctx->save_for_backward({a, sign});
    ctx->mark_non_differentiable({sign});
    return {sign, logabs};
  }
  static std::vector<TensorT> backward(autograd::BasicAutogradContext<P>* ctx, std::vector<TensorT> grads) {
    const auto saved = ctx->get_saved_variables();
    const TensorT &a = saved[0], &sign = saved[1];
    const TensorT g = grads[1].unsqueeze(-1).unsqueeze(-1);
    const TensorT singular = sign.eq(0.0).unsqueeze(-1).unsqueeze(-1);
    if (!singular.any().template item<bool>()) return {g * Inverse<P>::apply(a, "linalg.slogdet backward").mT()};
    // log|det| is -inf there and its gradient infinite: g * inf (NaN where g is 0), as PyTorch's
    // solve with the singular LU gives, instead of an error for the whole batch.
    const int64_t n = a.size(-1);
    const TensorT ident = eye<P>(n, n, TensorOptions(a.dtype()).device(a.device()));
    const TensorT inv = Inverse<P>::apply(where(singular, ident, a), "linalg.slogdet backward").mT();
    return {where(singular, g * std::numeric_limits<double>::infinity(), g * inv)};
  }
};

/// The Cholesky factor (lower, or upper = its transpose). Backward: Iain Murray's form
/// (arXiv:1602.07527), as PyTorch's: L^-T Phi(L^T gL) L^-1 with Phi the lower triangle, its
/// diagonal halved, made symmetric.
template <class P>
struct Cholesky : autograd::Function<Cholesky<P>, P> {
  using TensorT = BasicTensor<P>;
  static constexpr const char* name = "LinalgCholesky";
  static TensorT forward(autograd::BasicAutogradContext<P>* ctx, const TensorT& a, bool upper, const char* op) {
    const TensorT ha = on_host(a);
    TensorT l = host_empty(a, a.sizes());
    const int64_t n = a.size(-1);
    int64_t failed = -1;
    with_float_type(a.dtype(), [&](auto t) {
      using T = decltype(t);
      failed = kernels::cholesky<T>(ha.template data_ptr<T>(), l.template data_ptr<T>(), batch_count(a.sizes()), n,
                                    upper);
    });
    EMBER_CHECK(failed < 0,
                "[{}] matrix {} of the batch (shape {}) is not positive-definite: its leading minor of order {} is "
                "not positive",
                op, failed / (n + 1), a.sizes(), failed % (n + 1) + 1);
    l = l.to(a.device());
    ctx->save_for_backward({l});
    ctx->saved_data["upper"] = upper;
    return l;
  }
  static std::vector<TensorT> backward(autograd::BasicAutogradContext<P>* ctx, std::vector<TensorT> grads) {
    TensorT l = ctx->get_saved_variables()[0], gl = grads[0];
    if (std::any_cast<bool>(ctx->saved_data["upper"])) l = l.mT(), gl = gl.mT();
    TensorT phi = l.mT().matmul(gl).tril();
    phi = (phi + phi.tril(-1).mT()) * 0.5;  // symmetric, diagonal halved
    TensorT ga = SolveTriangular<P>::apply(l.mT(), phi, true, false);       // L^-T Phi
    ga = SolveTriangular<P>::apply(l.mT(), ga.mT(), true, false).mT();      // (L^-T Phi) L^-1
    return {ga, TensorT(), TensorT()};
  }
};

/// Householder QR: {Q, R} (Q undefined for mode "r"). Backward (reduced, or complete with
/// m <= n, where both agree): Liao, Liu, Wang, Xiang (arXiv:1903.09650) for square and tall
/// A, gA = [gQ + Q copyltu(M)] R^-T with M = R gR^T - gQ^T Q; wide A = [X | Y] splits into
/// the square case for X and gY = Q gR_Y.
template <class P>
struct Qr : autograd::Function<Qr<P>, P> {
  using TensorT = BasicTensor<P>;
  static constexpr const char* name = "LinalgQr";
  static std::vector<TensorT> forward(autograd::BasicAutogradContext<P>* ctx, const TensorT& a, bool complete,
                                      bool compute_q) {
    const TensorT ha = on_host(a);
    const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
    TensorT q, r = host_empty(a, replace_tail(a.sizes(), 2, {complete ? m : k, n}));
    if (compute_q) q = host_empty(a, replace_tail(a.sizes(), 2, {m, complete ? m : k}));
    with_float_type(a.dtype(), [&](auto t) {
      using T = decltype(t);
      kernels::qr<T>(ha.template data_ptr<T>(), compute_q ? q.template data_ptr<T>() : nullptr,
                     r.template data_ptr<T>(), batch_count(a.sizes()), m, n, complete);
    });
    r = r.to(a.device());
    if (compute_q) q = q.to(a.device());
    ctx->set_materialize_grads(false);
    if (compute_q) ctx->save_for_backward({q, r});  // mode "r": not differentiable (backward says so)
    ctx->saved_data["complete"] = complete;
    return {q, r};
  }
  /// The square case: A = Q R with R k x k (gQ or gR may be undefined).
  static TensorT square_backward(const TensorT& q, const TensorT& r, const TensorT& gq, const TensorT& gr) {
    TensorT m;
    if (gr.defined()) m = r.matmul(gr.mT());
    if (gq.defined()) m = m.defined() ? m - gq.mT().matmul(q) : -gq.mT().matmul(q);
    TensorT b = q.matmul(copy_lower_to_upper(m));
    if (gq.defined()) b = b + gq;
    // b R^-T: solve R X^T = b^T.
    return SolveTriangular<P>::apply(r, b.mT(), true, false).mT();
  }
  static std::vector<TensorT> backward(autograd::BasicAutogradContext<P>* ctx, std::vector<TensorT> grads) {
    const auto saved = ctx->get_saved_variables();
    EMBER_CHECK(saved.size() == 2,
                "[linalg.qr] the derivative of qr depends on Q, which mode \"r\" does not compute; use mode "
                "\"reduced\"");
    const TensorT &q = saved[0], &r = saved[1];
    const TensorT &gq = grads[0], &gr = grads[1];
    const int64_t m = q.size(-2), n = r.size(-1);
    EMBER_CHECK(!std::any_cast<bool>(ctx->saved_data["complete"]) || m <= n,
                "[linalg.qr] qr with mode \"complete\" is not differentiable for matrices with more rows than columns "
                "(got {} x {}); use mode \"reduced\"",
                m, n);
    if (!gq.defined() && !gr.defined()) return {TensorT(), TensorT(), TensorT()};
    if (m >= n) return {square_backward(q, r, gq, gr), TensorT(), TensorT()};
    // Wide: A = [X | Y], R = [U | V] with X = Q U, Y = Q V.
    const TensorT u = r.narrow(-1, 0, m);
    TensorT gx_q = gq, gu, gy;
    if (gr.defined()) {
      gu = gr.narrow(-1, 0, m);
      const TensorT gv = gr.narrow(-1, m, n - m);
      const TensorT y = q.matmul(r.narrow(-1, m, n - m));  // the columns of A past the square
      gy = q.matmul(gv);
      gx_q = gq.defined() ? gq + y.matmul(gv.mT()) : y.matmul(gv.mT());
    }
    const TensorT gx = square_backward(q, u, gx_q, gu);
    if (!gy.defined()) gy = zeros_like(r.narrow(-1, m, n - m));
    return {cat(std::vector<TensorT>{gx, gy}, -1), TensorT(), TensorT()};
  }
};

/// The symmetric eigendecomposition {w ascending, V} (V undefined when it is not wanted and
/// A needs no gradient). Backward, PyTorch's: V (diag(gw) + skew(V^T gV) / (2 E)) V^T with
/// E_ij = w_j - w_i.
template <class P>
struct Eigh : autograd::Function<Eigh<P>, P> {
  using TensorT = BasicTensor<P>;
  static constexpr const char* name = "LinalgEigh";
  static std::vector<TensorT> forward(autograd::BasicAutogradContext<P>* ctx, const TensorT& a, bool upper,
                                      bool vectors, const char* op) {
    const TensorT ha = on_host(a);
    const int64_t n = a.size(-1);
    TensorT w = host_empty(a, replace_tail(a.sizes(), 2, {n})), v;
    const bool compute_v = vectors;  // the caller asks for them when recording, too
    if (compute_v) v = host_empty(a, a.sizes());
    int64_t failed = -1;
    with_float_type(a.dtype(), [&](auto t) {
      using T = decltype(t);
      failed = kernels::eigh<T>(ha.template data_ptr<T>(), w.template data_ptr<T>(),
                                compute_v ? v.template data_ptr<T>() : nullptr, batch_count(a.sizes()), n, upper);
    });
    EMBER_CHECK(failed < 0, "[{}] the eigenvalue iteration did not converge on matrix {} of the batch (shape {})", op,
                failed, a.sizes());
    w = w.to(a.device());
    if (compute_v) v = v.to(a.device());
    ctx->set_materialize_grads(false);
    ctx->save_for_backward({w, v});
    return {w, v};
  }
  static std::vector<TensorT> backward(autograd::BasicAutogradContext<P>* ctx, std::vector<TensorT> grads) {
    const auto saved = ctx->get_saved_variables();
    const TensorT &w = saved[0], &v = saved[1];
    const TensorT &gw = grads[0], &gv = grads[1];
    if (!gw.defined() && !gv.defined()) return {TensorT(), TensorT(), TensorT(), TensorT()};
    const int64_t n = w.size(-1);
    TensorT inner;
    if (gv.defined()) {
      const TensorT vtgv = v.mT().matmul(gv);
      const TensorT e = (w.unsqueeze(-2) - w.unsqueeze(-1))  // e_ij = w_j - w_i, 1 on the diagonal
                            .masked_fill(eye<P>(n, n, TensorOptions(DType::Bool).device(w.device())), 1.0);
      inner = ((vtgv - vtgv.mT()) * 0.5 / e).masked_fill(eye<P>(n, n, TensorOptions(DType::Bool).device(w.device())),
                                                          0.0);
    }
    if (gw.defined()) inner = inner.defined() ? inner + ember::diag_embed(gw) : ember::diag_embed(gw);
    return {v.matmul(inner).matmul(v.mT()), TensorT(), TensorT(), TensorT()};
  }
};

/// The SVD {U, S descending, Vh} (U and Vh undefined for singular values only, unless A
/// needs a gradient). Backward, PyTorch's:
///   gA = U [(skew(U^T gU) / E) S + S (skew(V^T gV) / E) + diag(gS)] Vh
///        + (I - U U^T) gU S^-1 Vh + U S^-1 gVh (I - V Vh),   E_jk = s_k^2 - s_j^2
/// defined for distinct nonzero singular values when U or Vh get gradients. full_matrices with
/// m != n: the gradients of the columns of U and rows of Vh past k are ignored (as PyTorch).
template <class P>
struct Svd : autograd::Function<Svd<P>, P> {
  using TensorT = BasicTensor<P>;
  static constexpr const char* name = "LinalgSvd";
  static std::vector<TensorT> forward(autograd::BasicAutogradContext<P>* ctx, const TensorT& a, bool full,
                                      bool vectors) {
    const TensorT ha = on_host(a);
    const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
    const bool compute_uv = vectors;  // the caller asks for them when recording, too
    TensorT u, s = host_empty(a, replace_tail(a.sizes(), 2, {k})), vh;
    if (compute_uv) {
      u = host_empty(a, replace_tail(a.sizes(), 2, {m, full ? m : k}));
      vh = host_empty(a, replace_tail(a.sizes(), 2, {full ? n : k, n}));
    }
    with_float_type(a.dtype(), [&](auto t) {
      using T = decltype(t);
      kernels::svd<T>(ha.template data_ptr<T>(), compute_uv ? u.template data_ptr<T>() : nullptr,
                      s.template data_ptr<T>(), compute_uv ? vh.template data_ptr<T>() : nullptr,
                      batch_count(a.sizes()), m, n, full);
    });
    s = s.to(a.device());
    if (compute_uv) u = u.to(a.device()), vh = vh.to(a.device());
    ctx->set_materialize_grads(false);
    ctx->save_for_backward({u, s, vh});
    ctx->saved_data["full"] = full;
    return {u, s, vh};
  }
  static std::vector<TensorT> backward(autograd::BasicAutogradContext<P>* ctx, std::vector<TensorT> grads) {
    const auto saved = ctx->get_saved_variables();
    TensorT u = saved[0], s = saved[1], vh = saved[2];
    TensorT gu = grads[0], gs = grads[1], gvh = grads[2];
    const std::vector<TensorT> none(3);
    if (!gu.defined() && !gs.defined() && !gvh.defined()) return none;
    const int64_t m = u.size(-2), n = vh.size(-1), k = s.size(-1);
    if (std::any_cast<bool>(ctx->saved_data["full"]) && m != n) {
      // The columns of U and rows of Vh past k are arbitrary: their gradients are ignored, as
      // PyTorch's.
      u = u.narrow(-1, 0, k), vh = vh.narrow(-2, 0, k);
      if (gu.defined()) gu = gu.narrow(-1, 0, k);
      if (gvh.defined()) gvh = gvh.narrow(-2, 0, k);
    }
    std::vector<TensorT> out(3);
    if (!gu.defined() && !gvh.defined()) {
      out[0] = (u * gs.unsqueeze(-2)).matmul(vh);
      return out;
    }
    const TensorT diag_mask = eye<P>(k, k, TensorOptions(DType::Bool).device(s.device()));
    const TensorT s2 = s * s;
    const TensorT e = (s2.unsqueeze(-2) - s2.unsqueeze(-1)).masked_fill(diag_mask, 1.0);  // e_jk = s_k^2 - s_j^2
    const TensorT v = vh.mT();
    TensorT inner;
    if (gu.defined()) {
      const TensorT utgu = u.mT().matmul(gu);
      inner = ((utgu - utgu.mT()) / e) * s.unsqueeze(-2);
    }
    if (gvh.defined()) {
      const TensorT vtgv = v.mT().matmul(gvh.mT());
      const TensorT term = s.unsqueeze(-1) * ((vtgv - vtgv.mT()) / e);
      inner = inner.defined() ? inner + term : term;
    }
    inner = inner.masked_fill(diag_mask, 0.0);
    if (gs.defined()) inner = inner + ember::diag_embed(gs);
    TensorT ga = u.matmul(inner).matmul(vh);
    if (m > k && gu.defined()) {
      const TensorT gu_sinv = gu / s.unsqueeze(-2);
      ga = ga + (gu_sinv - u.matmul(u.mT().matmul(gu_sinv))).matmul(vh);
    }
    if (n > k && gvh.defined()) {
      const TensorT sinv_gvh = gvh / s.unsqueeze(-1);
      ga = ga + u.matmul(sinv_gvh - sinv_gvh.matmul(v).matmul(vh));
    }
    out[0] = ga;
    return out;
  }
};

/// The pseudo-inverse from the SVD (or, hermitian, the symmetric eigendecomposition) keeping
/// the singular values above `threshold(smax)`. Backward: the derivative of the
/// pseudo-inverse at constant rank (Golub and Pereyra), PyTorch's pinv_backward:
///   -X^T G X^T + (I - A X) G^T X X^T + X^T X G^T (I - X A),   X = A^+.
template <class P>
struct Pinv : autograd::Function<Pinv<P>, P> {
  using TensorT = BasicTensor<P>;
  static constexpr const char* name = "LinalgPinv";
  static TensorT forward(autograd::BasicAutogradContext<P>* ctx, const TensorT& a, double atol, double rtol,
                         bool hermitian) {
    TensorT x;
    if (a.numel() == 0) {
      x = zeros<P>(replace_tail(a.sizes(), 2, {a.size(-1), a.size(-2)}), TensorOptions(a.dtype()).device(a.device()));
    } else if (hermitian) {
      auto wv = Eigh<P>::apply(a, false, true, "linalg.pinv");
      const TensorT &w = wv[0], &v = wv[1];
      const TensorT smax = w.abs().amax({-1}, true);
      const TensorT keep = w.abs().gt(smax * rtol).logical_and(w.abs().gt(atol));
      const TensorT winv = where(keep, w.reciprocal(), 0.0);  // masked after: 1/0 never kept
      x = (v * winv.unsqueeze(-2)).matmul(v.mT());
    } else {
      auto usv = Svd<P>::apply(a, false, true);
      const TensorT &u = usv[0], &s = usv[1], &vh = usv[2];
      const TensorT smax = s.narrow(-1, 0, std::min<int64_t>(1, s.size(-1)));  // descending
      const TensorT keep = s.gt(smax * rtol).logical_and(s.gt(atol));
      const TensorT sinv = where(keep, s.reciprocal(), 0.0);
      x = (vh.mT() * sinv.unsqueeze(-2)).matmul(u.mT());
    }
    ctx->save_for_backward({a, x});
    return x;
  }
  static std::vector<TensorT> backward(autograd::BasicAutogradContext<P>* ctx, std::vector<TensorT> grads) {
    const auto saved = ctx->get_saved_variables();
    const TensorT &a = saved[0], &x = saved[1];
    const TensorT &g = grads[0], gt = grads[0].mT(), xt = x.mT();
    // Written with the smallest intermediate products, as PyTorch's.
    TensorT ga = -xt.matmul(g).matmul(xt);
    ga = ga + (gt - a.matmul(x.matmul(gt))).matmul(x.matmul(xt));
    ga = ga + xt.matmul(x).matmul(gt - gt.matmul(x).matmul(a));
    return {ga, TensorT(), TensorT(), TensorT()};
  }
};

}  // namespace ember::linalg::detail

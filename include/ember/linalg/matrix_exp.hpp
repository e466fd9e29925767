#pragma once
/// The matrix exponential (torch::linalg::matrix_exp) by scaling and squaring with the
/// [13/13] Pade approximant (Higham, "The scaling and squaring method for the matrix
/// exponential revisited", 2005): each matrix is scaled by 2^-s so that its 1-norm is at most
/// theta_13 = 5.37, its approximant taken, then squared s times (s per matrix of a batch).
/// f32 is computed in f64 and rounded once. The gradient is the upper right block of
/// exp([[A^T, G], [0, A^T]]) (Najfeld and Havel; PyTorch's backward), itself a matrix_exp, so
/// that the function can be differentiated again.

#include <ember/linalg/functions.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace ember::linalg::detail {

/// exp(A) for f64 A without recording (forward's arithmetic).
template <class P>
BasicTensor<P> pade13_exp(const BasicTensor<P>& a) {
  static constexpr double b[] = {64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
                                 129060195264000.0,   10559470521600.0,    670442572800.0,     33522128640.0,
                                 1323241920.0,        40840800.0,          960960.0,           16380.0,
                                 182.0,               1.0};
  constexpr double theta13 = 5.371920351148152;
  const int64_t n = a.size(-1);
  // Per matrix: the number of squarings s, so that ||A / 2^s||_1 <= theta_13.
  const BasicTensor<P> norm1 = a.abs().sum({-2}).amax({-1});  // the largest column sum
  const BasicTensor<P> norms = on_host(norm1.to(DType::F64));
  std::vector<int64_t> squarings(static_cast<size_t>(norms.numel()));
  std::vector<double> scales(squarings.size());
  int64_t most = 0;
  for (size_t i = 0; i < squarings.size(); ++i) {
    const double v = norms.template data_ptr<double>()[i];
    const int64_t s = v > theta13 ? static_cast<int64_t>(std::ceil(std::log2(v / theta13))) : 0;
    squarings[i] = s, scales[i] = std::ldexp(1.0, static_cast<int>(-s));
    most = std::max(most, s);
  }
  const BasicTensor<P> s_per = tensor<int64_t, P>(squarings).reshape(norm1.sizes()).to(a.device());
  const BasicTensor<P> scale = tensor<double, P>(scales).reshape(norm1.sizes()).to(a.device()).unsqueeze(-1).unsqueeze(-1);
  const BasicTensor<P> x = a * scale;
  const BasicTensor<P> ident = eye<P>(n, n, TensorOptions(DType::F64).device(a.device())).expand(a.sizes());
  const BasicTensor<P> x2 = x.matmul(x), x4 = x2.matmul(x2), x6 = x4.matmul(x2);
  const BasicTensor<P> u =
      x.matmul(x6.matmul(x6 * b[13] + x4 * b[11] + x2 * b[9]) + x6 * b[7] + x4 * b[5] + x2 * b[3] + ident * b[1]);
  const BasicTensor<P> v = x6.matmul(x6 * b[12] + x4 * b[10] + x2 * b[8]) + x6 * b[6] + x4 * b[4] + x2 * b[2] +
                           ident * b[0];
  BasicTensor<P> r = Solve<P>::apply(v - u, v + u, "linalg.matrix_exp");
  for (int64_t k = 0; k < most; ++k) {
    const BasicTensor<P> more = s_per.gt(k).unsqueeze(-1).unsqueeze(-1);  // matrices still to square
    r = where(more, r.matmul(r), r);
  }
  return r;
}

template <class P>
struct MatrixExp : autograd::Function<MatrixExp<P>, P> {
  using TensorT = BasicTensor<P>;
  static constexpr const char* name = "LinalgMatrixExp";
  static TensorT forward(autograd::BasicAutogradContext<P>* ctx, const TensorT& a) {
    ctx->save_for_backward({a});
    if (a.numel() == 0) return a.clone();
    return pade13_exp(a.to(DType::F64)).to(a.dtype());
  }
  static std::vector<TensorT> backward(autograd::BasicAutogradContext<P>* ctx, std::vector<TensorT> grads) {
    const TensorT a = ctx->get_saved_variables()[0];
    const int64_t n = a.size(-1);
    if (a.numel() == 0) return {zeros_like(a)};
    // exp([[A^T, G], [0, A^T]]) = [[exp(A^T), D], [0, exp(A^T)]] with D the gradient.
    const TensorT at = a.mT(), g = grads[0];
    const TensorT top = cat(std::vector<TensorT>{at, g}, -1);
    const TensorT bottom = cat(std::vector<TensorT>{zeros_like(at), at}, -1);
    const TensorT block = MatrixExp::apply(cat(std::vector<TensorT>{top, bottom}, -2));
    return {block.narrow(-2, 0, n).narrow(-1, n, n)};
  }
};

}  // namespace ember::linalg::detail

#pragma once
/// The gamma family, as libtorch's: lgamma, digamma and polygamma (elementwise ops:
/// ops/unary_list.def), mvlgamma, and torch::special's names for them.
///
///   Tensor log_beta = lgamma(a) + lgamma(b) - lgamma(a + b);
///   Tensor trigamma = polygamma(1, x);              // psi'(x), the Fisher information of Gamma
///   Tensor lmg = mvlgamma(x, 3);                    // the multivariate log-gamma, for Wishart
///
/// Differentiable to any order: lgamma' = digamma, and psi^(n)' = psi^(n+1). Computed in
/// double on the CPU; not implemented for CUDA yet (refused by name).

#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/functions.hpp>

#include <cmath>
#include <cstdint>

namespace ember {

/// psi^(n)(x): the n-th derivative of digamma (n >= 0; 0 is digamma itself).
template <class P>
BasicTensor<P> polygamma(int64_t n, const BasicTensor<P>& x) {
  return x.polygamma(n);
}

/// log Gamma_p(x) = p (p - 1) / 4 log(pi) + sum_{j < p} lgamma(x - j / 2), for x > (p - 1) / 2
/// everywhere (PyTorch refuses other elements, as Ember).
template <class P>
BasicTensor<P> mvlgamma(const BasicTensor<P>& x, int64_t p) {
  EMBER_CHECK(p >= 1, "[mvlgamma] p must be at least 1, got {}", p);
  const double least = static_cast<double>(p - 1) / 2;
  EMBER_CHECK(x.numel() == 0 || x.detach().gt(least).all().template item<bool>(),
              "[mvlgamma] every element must be greater than (p - 1) / 2 = {}", least);
  // Integers compute in the default float dtype, as lgamma.
  const DType t = x.is_floating_point() ? x.dtype() : kDefaultFloat;
  const BasicTensor<P> halves = arange<P>(p, TensorOptions(t).device(x.device())) * -0.5;  // 0, -1/2, -1, ...
  const double pi = 3.14159265358979323846;
  const double constant = static_cast<double>(p) * static_cast<double>(p - 1) / 4 * std::log(pi);
  return (x.unsqueeze(-1) + halves).lgamma().sum({-1}) + constant;
}

template <class P>
BasicTensor<P> BasicTensor<P>::mvlgamma(int64_t p) const {
  return ember::mvlgamma(*this, p);
}
template <class P>
BasicTensor<P>& BasicTensor<P>::mvlgamma_(int64_t p) {
  return assign_result(ember::mvlgamma(*this, p), "mvlgamma_");
}

/// torch::special's names.
namespace special {
template <class P>
BasicTensor<P> gammaln(const BasicTensor<P>& x) {
  return x.lgamma();
}
template <class P>
BasicTensor<P> digamma(const BasicTensor<P>& x) {
  return x.digamma();
}
template <class P>
BasicTensor<P> psi(const BasicTensor<P>& x) {
  return x.digamma();
}
template <class P>
BasicTensor<P> polygamma(int64_t n, const BasicTensor<P>& x) {
  return x.polygamma(n);
}
template <class P>
BasicTensor<P> multigammaln(const BasicTensor<P>& x, int64_t p) {
  return ember::mvlgamma(x, p);
}
}  // namespace special

}  // namespace ember

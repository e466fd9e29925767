#pragma once
// What the op tests share to read results and check gradients: a tensor's values as doubles or
// int64s, the largest difference of two tensors, an f64 leaf that requires grad, and gradcheck + gradgradcheck under one name.

#include <doctest/doctest.h>
#include <ember/autograd/gradcheck.hpp>
#include <ember/ember.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace ember::test {

using F = std::vector<double>;
using I = std::vector<int64_t>;
using TensorList = std::vector<Tensor>;

inline F vals(const Tensor& t) {
  const Tensor c = t.to(DType::F64).contiguous();
  return F(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}
inline I ints(const Tensor& t) {
  const Tensor c = t.to(DType::I64).contiguous();
  return I(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}
/// |got - want| <= tol |want| elementwise (relative: tiny values count); infinities and NaN
/// must match exactly, and a NaN never passes for a number.
inline bool close_relative(const Tensor& got, const F& want, double tol) {
  const F g = vals(got);
  if (g.size() != want.size()) return false;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want[i]) || std::isinf(want[i])) {
      if (std::isnan(want[i]) ? !std::isnan(g[i]) : g[i] != want[i]) return false;
    } else if (!(std::abs(g[i] - want[i]) <= tol * std::abs(want[i]))) {
      return false;
    }
  }
  return true;
}
/// The largest |a - b| over same-shaped tensors, in f64.
inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  return (a.to(DType::F64) - b.to(DType::F64)).abs().max().item<double>();
}
/// t in f64, detached, requiring grad: a gradcheck input.
inline Tensor leaf(const Tensor& t) { return t.to(DType::F64).detach().requires_grad_(); }
/// First and second derivatives of f at `in` against finite differences.
inline void check_grads(const std::function<Tensor(const TensorList&)>& f, const TensorList& in,
                        const std::string& what) {
  CAPTURE(what);
  std::string why;
  CHECK_MESSAGE(autograd::gradcheck(f, in, {}, &why), why);
  CHECK_MESSAGE(autograd::gradgradcheck(f, in, {}, &why), why);
}

}  // namespace ember::test

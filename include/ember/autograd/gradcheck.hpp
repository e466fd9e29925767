#pragma once
/// Finite-difference checks of analytic gradients, as torch.autograd.gradcheck does.
///
///   auto f = [](const std::vector<Tensor>& x) { return x[0].tanh() * x[1]; };
///   std::string why;
///   bool ok = ember::autograd::gradcheck(f, {a, b}, {}, &why);   // a, b: f64, requires_grad
///
/// The function's outputs are weighted by fixed pseudo-random values (so the cotangent is not
/// uniform) and summed; central differences in f64 over every element of every input that
/// requires grad are compared with the gradients autograd computes. gradgradcheck does the
/// same for the gradient function itself (second derivatives through create_graph).
/// CPU tensors; inputs that require grad must be f64.

#include <ember/autograd/tensor_autograd.hpp>
#include <ember/core/factories.hpp>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

namespace ember::autograd {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  uint64_t seed = 0x5eed;
};

namespace detail {

template <class P, class F>
std::vector<BasicTensor<P>> call_outputs(F& fn, const std::vector<BasicTensor<P>>& xs) {
  if constexpr (std::is_same_v<std::decay_t<std::invoke_result_t<F&, const std::vector<BasicTensor<P>>&>>,
                               BasicTensor<P>>) {
    return {fn(xs)};
  } else {
    return fn(xs);
  }
}

/// Deterministic weights in [-1, 1) (a splitmix64 stream: no global RNG state is touched).
template <class P>
BasicTensor<P> weights_like(const BasicTensor<P>& t, uint64_t& state) {
  BasicTensor<P> w = empty<P>(t.sizes(), TensorOptions(DType::F64));
  double* p = w.template data_ptr<double>();
  for (int64_t i = 0; i < w.numel(); ++i) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    p[i] = static_cast<double>(z >> 11) * 0x1.0p-53 * 2.0 - 1.0;
  }
  return w;
}

/// sum_k sum(w_k * out_k) as a double, and the weights (made on first use).
template <class P, class F>
BasicTensor<P> weighted_sum(F& fn, const std::vector<BasicTensor<P>>& xs, std::vector<BasicTensor<P>>& w, uint64_t seed) {
  std::vector<BasicTensor<P>> outs = call_outputs<P>(fn, xs);
  if (w.empty()) {
    uint64_t state = seed;
    for (const auto& o : outs) w.push_back(o.defined() ? weights_like<P>(o, state) : BasicTensor<P>());
  }
  BasicTensor<P> total;
  for (size_t k = 0; k < outs.size(); ++k) {
    if (!outs[k].defined() || !outs[k].is_floating_point()) continue;
    BasicTensor<P> term = (outs[k].to(DType::F64) * w[k]).sum();
    total = total.defined() ? total + term : term;
  }
  EMBER_CHECK(total.defined(), "[gradcheck] the function has no floating-point output");
  return total;
}

}  // namespace detail

/// True when analytic and numeric gradients agree; otherwise false, with the first
/// disagreement described in *why.
template <class P, class F>
bool gradcheck(F fn, const std::vector<BasicTensor<P>>& inputs, GradcheckOptions o = {}, std::string* why = nullptr) {
  std::vector<BasicTensor<P>> w;
  std::vector<BasicTensor<P>> diff;
  std::vector<size_t> diff_index;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined() && inputs[i].requires_grad()) {
      EMBER_CHECK(inputs[i].dtype() == DType::F64 && inputs[i].is_cpu(),
                  "[gradcheck] input {} must be a CPU f64 tensor, got {} on {}", i, inputs[i].dtype(),
                  inputs[i].device());
      diff.push_back(inputs[i]);
      diff_index.push_back(i);
    }
  }
  EMBER_CHECK(!diff.empty(), "[gradcheck] no input requires grad");
  BasicTensor<P> loss = detail::weighted_sum<P>(fn, inputs, w, o.seed);
  std::vector<BasicTensor<P>> analytic;
  if (loss.requires_grad()) analytic = grad<P>({loss}, diff, {}, false, false, true);
  analytic.resize(diff.size());

  for (size_t d = 0; d < diff.size(); ++d) {
    const size_t i = diff_index[d];
    BasicTensor<P> base = inputs[i].detach().contiguous().clone();
    BasicTensor<P> a = analytic[d].defined() ? analytic[d].detach().contiguous() : zeros_like(base);
    const double* ap = a.template data_ptr<double>();
    for (int64_t j = 0; j < base.numel(); ++j) {
      auto eval = [&](double delta) {
        std::vector<BasicTensor<P>> xs = inputs;
        BasicTensor<P> x = base.clone();
        x.template data_ptr<double>()[j] += delta;
        xs[i] = x.requires_grad_(true);
        return detail::weighted_sum<P>(fn, xs, w, o.seed).template item<double>();
      };
      double numeric = (eval(o.eps) - eval(-o.eps)) / (2 * o.eps);
      double analytic_j = ap[j];
      bool ok = std::abs(numeric - analytic_j) <= o.atol + o.rtol * std::abs(numeric) ||
                (std::isnan(numeric) && std::isnan(analytic_j));
      if (!ok) {
        if (why) {
          *why = EMBER_FORMAT("gradient of input {} (shape {}) differs at element {}: analytic {}, numeric {}", i,
                             inputs[i].sizes(), j, analytic_j, numeric);
        }
        return false;
      }
    }
  }
  return true;
}

/// gradcheck of the gradient itself: checks second derivatives (through create_graph).
template <class P, class F>
bool gradgradcheck(F fn, const std::vector<BasicTensor<P>>& inputs, GradcheckOptions o = {},
                   std::string* why = nullptr) {
  // The first-order gradient function, with a fixed cotangent.
  auto shared_w = std::make_shared<std::vector<BasicTensor<P>>>();
  uint64_t seed = o.seed ^ 0xabcdefull;
  auto grad_fn = [fn, shared_w, seed](const std::vector<BasicTensor<P>>& xs) mutable {
    F f = fn;
    BasicTensor<P> loss = detail::weighted_sum<P>(f, xs, *shared_w, seed);
    std::vector<BasicTensor<P>> diff;
    for (const auto& x : xs)
      if (x.defined() && x.requires_grad()) diff.push_back(x);
    if (!loss.requires_grad()) return std::vector<BasicTensor<P>>(diff.size());
    return grad<P>({loss}, diff, {}, true, true, true);
  };
  return gradcheck<P>(grad_fn, inputs, o, why);
}

/// The same checks with the inputs in a braced list: `gradcheck(f, {a, b}, {}, &why)`.
template <class P, class F>
bool gradcheck(F fn, std::initializer_list<BasicTensor<P>> inputs, GradcheckOptions o = {}, std::string* why = nullptr) {
  return gradcheck<P>(std::move(fn), std::vector<BasicTensor<P>>(inputs), o, why);
}
template <class P, class F>
bool gradgradcheck(F fn, std::initializer_list<BasicTensor<P>> inputs, GradcheckOptions o = {},
                   std::string* why = nullptr) {
  return gradgradcheck<P>(std::move(fn), std::vector<BasicTensor<P>>(inputs), o, why);
}

}  // namespace ember::autograd

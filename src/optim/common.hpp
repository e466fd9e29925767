#pragma once
// Helpers shared by the optimisers in src/optim/: option checks with PyTorch's rules and
// messages that name the option and its value, and per-thread scratch arrays for the fused
// kernels' arguments (so that a step allocates nothing once warm).

#include <ember/optim/optimizer.hpp>

#include <vector>

namespace ember::optim::detail {

inline void check_non_negative(const char* opt, const char* option, double v) {
  EMBER_CHECK(v >= 0, "[{}] {} must be >= 0, got {}", opt, option, v);  // also refuses NaN
}

/// betas[i] in [0, 1), or [0, 1] when `closed`.
inline void check_beta(const char* opt, const Betas& betas, bool closed = false) {
  double b[2] = {std::get<0>(betas), std::get<1>(betas)};
  for (int i = 0; i < 2; ++i) {
    EMBER_CHECK(b[i] >= 0 && (closed ? b[i] <= 1 : b[i] < 1), "[{}] betas[{}] (beta{}) must be in [0, 1{}, got {}", opt,
                i, i + 1, closed ? "]" : ")", b[i]);
  }
}

/// A per-thread array of n default values, reused from step to step.
template <class T>
T* scratch(size_t n) {
  thread_local std::vector<T> v;
  v.assign(n, T{});
  return v.data();
}

/// The views of `items` for a fused kernel.
inline fused::Param* views(const std::vector<Optimizer::Item>& items) {
  fused::Param* p = scratch<fused::Param>(items.size());
  for (size_t i = 0; i < items.size(); ++i) p[i] = Optimizer::view(items[i]);
  return p;
}

inline std::vector<ParamGroup> one_group(std::vector<Tensor> params) {
  std::vector<ParamGroup> g;
  g.emplace_back(std::move(params));
  return g;
}

}  // namespace ember::optim::detail

#pragma once
/// Per-thread switches of the Autograd layer: grad mode (NoGradGuard, EnableGradGuard),
/// inference mode (InferenceModeGuard) and anomaly detection (DetectAnomalyGuard).
/// Each thread starts with grad mode on, inference mode and anomaly detection off.

#include <ember/core/storage.hpp>
#include <ember/dispatch/policy.hpp>

#include <type_traits>

namespace ember::autograd {

struct Autograd;  // the layer (autograd/layer.hpp)

namespace detail {
struct ThreadModes {
  bool grad_enabled = true;
  bool anomaly = false;
};
inline thread_local ThreadModes t_modes;
}  // namespace detail

/// Whether ops record the tape on this thread.
struct GradMode {
  static bool is_enabled() { return detail::t_modes.grad_enabled; }
  static void set_enabled(bool on) { detail::t_modes.grad_enabled = on; }
};

/// Scoped: ops run without recording (evaluation, optimiser updates).
class NoGradGuard {
 public:
  NoGradGuard() : prev_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

/// Scoped: recording back on inside a NoGradGuard.
class EnableGradGuard {
 public:
  EnableGradGuard() : prev_(GradMode::is_enabled()) { GradMode::set_enabled(true); }
  ~EnableGradGuard() { GradMode::set_enabled(prev_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool prev_;
};

/// Scoped: no recording and no autograd bookkeeping at all. Unlike NoGradGuard, in-place
/// writes skip the storage version counter too (nothing saved for backward can observe them),
/// so inference code pays nothing for autograd.
class InferenceModeGuard {
 public:
  InferenceModeGuard() : prev_grad_(GradMode::is_enabled()), prev_inference_(ember::detail::t_inference_mode) {
    GradMode::set_enabled(false);
    ember::detail::t_inference_mode = true;
  }
  ~InferenceModeGuard() {
    GradMode::set_enabled(prev_grad_);
    ember::detail::t_inference_mode = prev_inference_;
  }
  InferenceModeGuard(const InferenceModeGuard&) = delete;
  InferenceModeGuard& operator=(const InferenceModeGuard&) = delete;
  static bool is_enabled() { return ember::detail::t_inference_mode; }

 private:
  bool prev_grad_, prev_inference_;
};

/// Scoped: backward checks every gradient a node produces for NaN/Inf and throws naming the
/// node and the forward op that created it. Costs a reduction per gradient; for debugging.
class DetectAnomalyGuard {
 public:
  DetectAnomalyGuard() : prev_(detail::t_modes.anomaly) { detail::t_modes.anomaly = true; }
  ~DetectAnomalyGuard() { detail::t_modes.anomaly = prev_; }
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;
  static bool is_enabled() { return detail::t_modes.anomaly; }

 private:
  bool prev_;
};

namespace detail {
template <class P>
constexpr bool has_autograd() {
  return ember::detail::has_layer<Autograd, typename P::layers>::value;
}
}  // namespace detail

}  // namespace ember::autograd

namespace ember::detail {
// In ember::detail, not autograd's namespace: unoptimised builds keep these as functions, and
// an inference program's symbols must not name autograd (tests/footprint's nm check).
/// Grad mode as the ops of policy P see it: off, known at compile time, for a policy without
/// the Autograd layer (nothing can record; generic code then reads no thread-local state and
/// an inference program links no autograd symbol).
template <class P>
bool grad_enabled() {
  if constexpr (autograd::detail::has_autograd<P>()) return autograd::GradMode::is_enabled();
  else return false;
}
struct NoGuard {
  NoGuard() noexcept {}  // user-provided: a guard variable is not "unused" (-Wunused-variable)
};
/// NoGradGuard in code generic over the policy: nothing at all where P records nothing.
template <class P>
using NoGradGuardFor = std::conditional_t<autograd::detail::has_autograd<P>(), autograd::NoGradGuard, NoGuard>;
}  // namespace ember::detail

namespace ember {
// Also under ember::, as libtorch has torch::NoGradGuard.
using autograd::EnableGradGuard;
using autograd::GradMode;
using autograd::InferenceModeGuard;
using autograd::NoGradGuard;
}  // namespace ember

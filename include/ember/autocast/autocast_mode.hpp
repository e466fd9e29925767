#pragma once
/// Automatic mixed precision on the CPU (the state; the layer is autocast/layer.hpp): inside an
/// `AutocastGuard` the matrix products (matmul, mm, bmm, addmm, baddbmm, linear, and the
/// im2col and 1x1 convolutions' GEMMs) run in bf16 (or f16), while softmax, log_softmax,
/// layer_norm, the fused attention and the Winograd, direct and pooling kernels run in f32
/// (the lists: autocast/layer.hpp),
/// in the manner of torch.autocast("cpu"). Autograd records the casts, so gradients reach f32
/// parameters as f32.
///
///   {
///     ember::AutocastGuard autocast;          // bf16
///     ember::Tensor loss = criterion(model(x), y);
///   }
///   loss.backward();                          // backward runs in the dtypes forward recorded
///
/// The state is per thread: other threads (and DataLoader workers) are unaffected, and
/// backward() never casts. With grad mode off (inference), the bf16 copy of each parameter is
/// made once per outermost guard and reused while the parameter is unchanged (its version
/// counter), so a model is not re-cast on every call; the copies go when that guard ends.
/// On CPUs with AVX512_BF16 bf16 products run twice as fast as f32 ones; elsewhere, and for
/// f16, they are computed in f32 and rounded, so autocast saves no time there.

#include <ember/core/dtype.hpp>
#include <ember/core/error.hpp>

namespace ember::autocast {

namespace detail {
struct State {
  bool enabled = false;
  DType dtype = DType::BF16;
  int depth = 0;  ///< open guards that enabled autocast (the cache lives while > 0)
};
inline thread_local State t_state;
/// Drops this thread's cached casts of parameters (src/autocast.cpp).
void clear_cache();
}  // namespace detail

/// Whether ops on this thread autocast.
inline bool is_enabled() { return detail::t_state.enabled; }
/// The dtype the matrix products run in while enabled (bf16 unless a guard chose f16).
inline DType dtype() { return detail::t_state.dtype; }
/// Whether autocast is on and `t` is a CPU f16/bf16 tensor: what the functions that run in
/// f32 under autocast (layer_norm, grid_sample, affine_grid, Winograd's weight transform) cast
/// up themselves, where their dtype checks come before the layer would see the op.
template <class T>
bool reduced_on_cpu(const T& t) {
  return is_enabled() && t.defined() && t.is_cpu() && is_reduced_float(t.dtype());
}

/// Scoped: autocast on (or, with enabled = false, off) for this thread; restores the previous
/// state when it ends. dtype must be bf16 or f16.
class AutocastGuard {
 public:
  explicit AutocastGuard(DType dtype = DType::BF16, bool enabled = true) : prev_(detail::t_state) {
    EMBER_CHECK(dtype == DType::BF16 || dtype == DType::F16,
                "[autocast] runs products in bf16 or f16 on the CPU, got {}", dtype);
    detail::t_state.enabled = enabled;
    detail::t_state.dtype = dtype;
    if (enabled) ++detail::t_state.depth;
    counted_ = enabled;
  }
  explicit AutocastGuard(bool enabled) : AutocastGuard(DType::BF16, enabled) {}
  ~AutocastGuard() {
    const int depth = detail::t_state.depth - (counted_ ? 1 : 0);
    detail::t_state = prev_;
    detail::t_state.depth = depth;
    if (counted_ && depth == 0) detail::clear_cache();
  }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  detail::State prev_;
  bool counted_ = false;
};

}  // namespace ember::autocast

namespace ember {
using autocast::AutocastGuard;
}  // namespace ember

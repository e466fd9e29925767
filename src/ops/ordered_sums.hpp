#pragma once
// The fused convolutions' gradient sums (src/ops/winograd.cpp, direct_conv.cpp): each chunk of
// samples adds into its own partial sums, and the partials are then added in chunk order, so
// the result does not depend on which thread ran which chunk.

#include <ember/core/device_hooks.hpp>

#include <algorithm>

namespace ember::ops {

/// A new tensor of `shape` (f32/f64, like `partial`) whose element i is the sum over
/// k in [0, parts) of partial[k * stride + at + i], added in order of k.
inline TensorRef sum_in_order(const TensorImpl& partial, int64_t parts, int64_t stride, int64_t at, const Shape& shape,
                              const char* op) {
  TensorRef out = detail::make_tensor(shape, partial.dtype, partial.device(), op);
  auto run = [&]<class T>(T*) {
    T* o = static_cast<T*>(out->data());
    const T* p = static_cast<const T*>(partial.data()) + at;
    std::fill(o, o + out->numel, T(0));
    for (int64_t k = 0; k < parts; ++k)
      for (int64_t i = 0; i < out->numel; ++i) o[i] += p[k * stride + i];
  };
  if (partial.dtype == DType::F32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
  return out;
}

}  // namespace ember::ops

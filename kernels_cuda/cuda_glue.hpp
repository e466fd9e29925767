#pragma once
// Host-side helpers shared by the CUDA glue files (compiled by the C++ compiler): error
// checks, the current-device guard, the device count and the per-device cuBLAS handle.

#include <ember/core/error.hpp>
#include <ember/core/tensor_impl.hpp>

#include <cuda_runtime_api.h>

namespace ember::cuda {

/// Turns a CUDA runtime failure into ember::Error naming the call: "[op] cudaMemcpy failed: ...".
void check(cudaError_t e, const char* op, const char* call);

#define EMBER_CUDA_CHECK(op, expr) ::ember::cuda::check((expr), (op), #expr)

/// Makes `index` the current device for its lifetime and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int index);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = -1;
  int index_ = 0;
};

/// Fails unless `t` is a CUDA tensor; `what` names it in the message.
void check_on_cuda(const detail::TensorImpl& t, const char* op, const char* what);

}  // namespace ember::cuda

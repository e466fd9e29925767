// softmax / log_softmax derivative on the CPU (see include/ember/ops/softmax_backward_op.hpp):
// checks and the output here; the kernel is per instruction set (kernels_cpu/reduce.cpp).

#include <ember/core/device_hooks.hpp>
#include <ember/ops/softmax_backward_op.hpp>

namespace ember::ops {

TensorRef softmax_backward_cpu(const SoftmaxBackward& op, const TensorImpl& grad, const TensorImpl& out) {
  const char* name = op.name();
  EMBER_CHECK(grad.sizes == out.sizes, "[{}] gradient of shape {} does not match the output's shape {}", name,
              grad.sizes, out.sizes);
  EMBER_CHECK(grad.dtype == out.dtype && (out.dtype == DType::F32 || out.dtype == DType::F64),
              "[{}] supports f32 and f64 gradient and output of one dtype, got {} and {}", name, grad.dtype,
              out.dtype);
  EMBER_CHECK(op.dim >= 0 && op.dim < static_cast<int64_t>(out.ndim()), "[{}] dim {} is out of range for shape {}",
              name, op.dim, out.sizes);
  TensorRef g = detail::contiguous_on_device(grad, name), y = detail::contiguous_on_device(out, name);
  TensorRef dx = detail::make_tensor(out.sizes, out.dtype, out.device(), name);
  detail::Kernels<Cpu>::softmax_backward(*dx, *g, *y, op.dim, op.log);
  return dx;
}

}  // namespace ember::ops

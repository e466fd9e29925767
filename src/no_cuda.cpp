// Built only when Ember is configured without CUDA (-Dcuda=disabled, or no nvcc found).
// A policy that names the Cuda backend still links (the core references no CUDA symbol);
// using a CUDA device then fails with a clear message instead of a link error. The kernels
// below are unreachable in practice: no CUDA tensor can exist without the device hooks that
// cuda_ensure_initialized() would install.

#include <ember/dispatch/kernels.hpp>

namespace ember::detail {
namespace {

[[noreturn]] void no_cuda(const char* op) {
  EMBER_FAIL("[{}] this build of Ember has no CUDA backend (configured without CUDA: rebuild with -Dcuda=enabled "
             "and nvcc available)",
             op);
}

}  // namespace

void cuda_ensure_initialized() { no_cuda("cuda"); }

void Kernels<Cuda>::unary(ops::UnaryOp op, const ops::UnaryParams&, TensorImpl&, const TensorImpl&) {
  no_cuda(ops::name(op));
}
void Kernels<Cuda>::binary(ops::BinaryOp op, TensorImpl&, const TensorImpl&, const TensorImpl&) {
  no_cuda(ops::name(op));
}
void Kernels<Cuda>::where(TensorImpl&, const TensorImpl&, const TensorImpl&, const TensorImpl&) { no_cuda("where"); }
void Kernels<Cuda>::copy(TensorImpl&, const TensorImpl&) { no_cuda("copy_"); }
void Kernels<Cuda>::fill(TensorImpl&, Scalar) { no_cuda("fill_"); }
void Kernels<Cuda>::reduce(ops::ReduceOp op, TensorImpl&, const TensorImpl&, uint64_t) { no_cuda(ops::name(op)); }
void Kernels<Cuda>::arg_reduce(ArgReduceOp, TensorImpl*, TensorImpl&, const TensorImpl&, int64_t) {
  no_cuda("arg_reduce");
}
void Kernels<Cuda>::softmax(TensorImpl&, const TensorImpl&, int64_t, bool) { no_cuda("softmax"); }
void Kernels<Cuda>::cumulative(CumOp, TensorImpl&, TensorImpl*, const TensorImpl&, int64_t) { no_cuda("cumulative"); }
void Kernels<Cuda>::gemm(TensorImpl&, const TensorImpl&, const TensorImpl&, double, double) { no_cuda("matmul"); }

}  // namespace ember::detail

namespace ember::cuda {
int device_count() { return 0; }
bool is_available() { return false; }
}  // namespace ember::cuda

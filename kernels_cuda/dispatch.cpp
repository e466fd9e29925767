// Kernels<Cuda>: checks what the CUDA kernels need, builds their launch geometry (dims
// coalesced, strides in elements, int64 throughout) and launches them (elementwise.cu,
// gemm.cpp). Ops without a CUDA kernel yet fail with a clear message naming the op, never a
// silent wrong result (MLX's pattern for its no-GPU build).

#include "cuda_glue.hpp"
#include "launch.hpp"

#include <ember/core/device_hooks.hpp>
#include <ember/dispatch/kernels.hpp>

#include <cstring>

namespace ember::detail {
namespace {

namespace cu = ember::cuda;

static_assert(static_cast<int>(DType::Bool) == cu::kBool && static_cast<int>(DType::U8) == cu::kU8 &&
                  static_cast<int>(DType::I8) == cu::kI8 && static_cast<int>(DType::I32) == cu::kI32 &&
                  static_cast<int>(DType::I64) == cu::kI64 && static_cast<int>(DType::F16) == cu::kF16 &&
                  static_cast<int>(DType::BF16) == cu::kBF16 && static_cast<int>(DType::F32) == cu::kF32 &&
                  static_cast<int>(DType::F64) == cu::kF64,
              "kernels_cuda/launch.hpp DTypeCode must follow ember::DType");

int code(DType t) { return static_cast<int>(t); }

[[noreturn]] void not_implemented(const char* op, const TensorImpl& x) {
  EMBER_FAIL(
      "[{}] is not implemented for CUDA tensors yet (got a {} tensor of shape {} on {}); move the tensor to the "
      "CPU with .cpu() for this op",
      op, x.dtype, x.sizes, x.device());
}

/// The launch geometry of N same-shaped operands: size-1 dims dropped, adjacent dims merged
/// where every operand allows it, strides in elements.
template <int N>
cu::Iter<N> make_iter(const char* op, const TensorImpl* const (&t)[N]) {
  cu::Iter<N> it;
  const TensorImpl& ref = *t[0];
  it.numel = ref.numel;
  for (int k = 0; k < N; ++k) it.data[k] = static_cast<char*>(t[k]->data());
  // Innermost first, merged greedily.
  int64_t sizes[cu::kMaxDims];
  int64_t strides[N][cu::kMaxDims];
  int nd = 0;
  for (int64_t d = ref.ndim() - 1; d >= 0; --d) {
    int64_t s = ref.sizes[d];
    if (s == 1) continue;
    if (nd > 0) {
      bool merge = true;
      for (int k = 0; k < N; ++k)
        if (t[k]->strides[d] != strides[k][nd - 1] * sizes[nd - 1]) merge = false;
      if (merge) {
        sizes[nd - 1] *= s;
        continue;
      }
    }
    EMBER_CHECK(nd < cu::kMaxDims,
                "[{}] the CUDA kernels index at most {} non-mergeable dims; got shape {} (make the tensor "
                "contiguous first)",
                op, cu::kMaxDims, ref.sizes);
    sizes[nd] = s;
    for (int k = 0; k < N; ++k) strides[k][nd] = t[k]->strides[d];
    ++nd;
  }
  it.ndim = nd;
  for (int i = 0; i < nd; ++i) {  // back to outermost-first
    it.sizes[i] = sizes[nd - 1 - i];
    for (int k = 0; k < N; ++k) it.strides[k][i] = strides[k][nd - 1 - i];
  }
  bool dense = nd <= 1;
  for (int k = 0; k < N && dense; ++k)
    if (nd == 1 && it.strides[k][0] != 1) dense = false;
  it.contiguous = dense;
  return it;
}

Ref<TensorImpl> empty_like_contiguous(const TensorImpl& x, DType dtype, Device device, const char* op) {
  return make_tensor(x.sizes, dtype, device, op);
}

/// Copy between two tensors on one CUDA device (any strides, any dtypes).
void device_copy(TensorImpl& dst, const TensorImpl& src) {
  if (dst.numel == 0) return;
  cu::DeviceGuard guard(dst.device().index());
  if (dst.dtype == src.dtype && dst.contiguous && src.contiguous) {
    EMBER_CUDA_CHECK("copy_", cudaMemcpyAsync(dst.data(), src.data(), static_cast<size_t>(dst.numel * itemsize(dst.dtype)),
                                              cudaMemcpyDeviceToDevice, cudaStream_t{}));
    return;
  }
  const TensorImpl* operands[2] = {&dst, &src};
  EMBER_CUDA_CHECK("copy_", cu::launch_copy(make_iter<2>("copy_", operands), code(dst.dtype), code(src.dtype)));
}

/// An operand that is not on `device`: a broadcast scalar (all strides 0, as a wrapped number
/// on the host) is moved there; anything else is refused.
Ref<TensorImpl> on_device(const TensorImpl& x, Device device, const char* op) {
  if (x.device() == device) return Ref<TensorImpl>::share(const_cast<TensorImpl*>(&x));
  bool scalar = true;
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (x.strides[d] != 0 && x.sizes[d] != 1) scalar = false;
  EMBER_CHECK(scalar, "[{}] expected tensors on one device, got {} and {}", op, device, x.device());
  Ref<TensorImpl> one = make_tensor(Shape{}, x.dtype, device, op);
  device_hooks(DeviceType::Cuda).memcpy(one->data(), device, x.data(), x.device(), static_cast<size_t>(itemsize(x.dtype)));
  Shape zeros(static_cast<size_t>(x.ndim()));
  for (int64_t d = 0; d < x.ndim(); ++d) zeros[d] = 0;
  return make_view(one->storage, x.dtype, x.sizes, zeros, 0);
}

bool map_binary(ops::BinaryOp op, cu::BinOp& out) {
  switch (op) {
    case ops::BinaryOp::Add: out = cu::BinOp::Add; return true;
    case ops::BinaryOp::Sub: out = cu::BinOp::Sub; return true;
    case ops::BinaryOp::Mul: out = cu::BinOp::Mul; return true;
    case ops::BinaryOp::Div: out = cu::BinOp::Div; return true;
    case ops::BinaryOp::Maximum: out = cu::BinOp::Maximum; return true;
    case ops::BinaryOp::Minimum: out = cu::BinOp::Minimum; return true;
    default: return false;
  }
}

bool map_unary(ops::UnaryOp op, cu::UnOp& out) {
  switch (op) {
#define EMBER_CUDA_MAP(E)  \
  case ops::UnaryOp::E:    \
    out = cu::UnOp::E;     \
    return true;
    EMBER_CUDA_MAP(Neg) EMBER_CUDA_MAP(Abs) EMBER_CUDA_MAP(Square) EMBER_CUDA_MAP(Relu) EMBER_CUDA_MAP(Exp)
    EMBER_CUDA_MAP(Log) EMBER_CUDA_MAP(Sqrt) EMBER_CUDA_MAP(Rsqrt) EMBER_CUDA_MAP(Reciprocal) EMBER_CUDA_MAP(Sin)
    EMBER_CUDA_MAP(Cos) EMBER_CUDA_MAP(Tanh) EMBER_CUDA_MAP(Sigmoid) EMBER_CUDA_MAP(Silu)
#undef EMBER_CUDA_MAP
    default: return false;
  }
}

}  // namespace

void Kernels<Cuda>::fill(TensorImpl& dst, Scalar value) {
  cu::check_on_cuda(dst, "fill_", "the destination");
  if (dst.numel == 0) return;
  uint64_t bits = 0;
  visit_dtype(dst.dtype, [&]<class T>() {
    T v = value.to<T>();
    static_assert(sizeof(T) <= sizeof(bits));
    std::memcpy(&bits, &v, sizeof(T));
  });
  cu::DeviceGuard guard(dst.device().index());
  const TensorImpl* operands[1] = {&dst};
  EMBER_CUDA_CHECK("fill_", cu::launch_fill(make_iter<1>("fill_", operands), static_cast<int>(itemsize(dst.dtype)), bits));
}

void Kernels<Cuda>::copy(TensorImpl& dst, const TensorImpl& src) {
  EMBER_CHECK(dst.sizes == src.sizes, "[copy_] shapes {} and {} differ", dst.sizes, src.sizes);
  if (dst.numel == 0) return;
  Device dd = dst.device(), sd = src.device();
  if (dd.is_cpu() && sd.is_cpu()) return Kernels<Cpu>::copy(dst, src);
  if (dd == sd) return device_copy(dst, src);
  DeviceHooks& h = device_hooks(DeviceType::Cuda);
  if (dd.is_cuda() && sd.is_cuda()) {
    // Across CUDA devices: convert on the source device, copy bytes peer to peer, scatter on the
    // destination device when it is strided.
    Ref<TensorImpl> tmp = src.contiguous && src.dtype == dst.dtype
                              ? Ref<TensorImpl>::share(const_cast<TensorImpl*>(&src))
                              : empty_like_contiguous(src, dst.dtype, sd, "copy_");
    if (tmp.get() != &src) device_copy(*tmp, src);
    size_t nbytes = static_cast<size_t>(dst.numel * itemsize(dst.dtype));
    if (dst.contiguous) return h.memcpy(dst.data(), dd, tmp->data(), sd, nbytes);
    Ref<TensorImpl> landing = empty_like_contiguous(dst, dst.dtype, dd, "copy_");
    h.memcpy(landing->data(), dd, tmp->data(), sd, nbytes);
    return device_copy(dst, *landing);
  }
  if (dd.is_cuda()) {
    // Host -> device: make the host side one dense block of the source dtype (a CPU strided
    // copy), send it, then convert/scatter on the device unless it already is dst's layout.
    Ref<TensorImpl> host = src.contiguous ? Ref<TensorImpl>::share(const_cast<TensorImpl*>(&src))
                                          : empty_like_contiguous(src, src.dtype, kCPU, "copy_");
    if (host.get() != &src) Kernels<Cpu>::copy(*host, src);
    size_t nbytes = static_cast<size_t>(src.numel * itemsize(src.dtype));
    if (dst.contiguous && dst.dtype == src.dtype) return h.memcpy(dst.data(), dd, host->data(), kCPU, nbytes);
    Ref<TensorImpl> staged = empty_like_contiguous(src, src.dtype, dd, "copy_");
    h.memcpy(staged->data(), dd, host->data(), kCPU, nbytes);
    return device_copy(dst, *staged);
  }
  // Device -> host: convert/gather on the device into one dense block of dst's dtype, fetch it,
  // then scatter on the host when dst is strided.
  Ref<TensorImpl> dense = src.contiguous && src.dtype == dst.dtype
                              ? Ref<TensorImpl>::share(const_cast<TensorImpl*>(&src))
                              : empty_like_contiguous(src, dst.dtype, sd, "copy_");
  if (dense.get() != &src) device_copy(*dense, src);
  size_t nbytes = static_cast<size_t>(dst.numel * itemsize(dst.dtype));
  if (dst.contiguous) return h.memcpy(dst.data(), kCPU, dense->data(), sd, nbytes);
  Ref<TensorImpl> host = empty_like_contiguous(dst, dst.dtype, kCPU, "copy_");
  h.memcpy(host->data(), kCPU, dense->data(), sd, nbytes);
  Kernels<Cpu>::copy(dst, *host);
}

void Kernels<Cuda>::binary(ops::BinaryOp op, TensorImpl& out, const TensorImpl& a, const TensorImpl& b) {
  const char* name = ops::name(op);
  cu::check_on_cuda(out, name, "the output");
  cu::BinOp cop;
  if (!map_binary(op, cop) || !cu::has_binary(cop, code(out.dtype))) not_implemented(name, out);
  EMBER_CHECK(a.dtype == out.dtype && b.dtype == out.dtype,
              "[{}] the CUDA kernel expects one dtype, got {} and {} for a {} output", name, a.dtype, b.dtype,
              out.dtype);
  if (out.numel == 0) return;
  Ref<TensorImpl> da = on_device(a, out.device(), name), db = on_device(b, out.device(), name);
  cu::DeviceGuard guard(out.device().index());
  const TensorImpl* operands[3] = {&out, da.get(), db.get()};
  EMBER_CUDA_CHECK(name, cu::launch_binary(cop, code(out.dtype), make_iter<3>(name, operands)));
}

void Kernels<Cuda>::unary(ops::UnaryOp op, const ops::UnaryParams&, TensorImpl& out, const TensorImpl& x) {
  const char* name = ops::name(op);
  cu::check_on_cuda(out, name, "the output");
  cu::UnOp cop;
  if (!map_unary(op, cop) || !cu::has_unary(cop, code(out.dtype))) not_implemented(name, x);
  EMBER_CHECK(x.dtype == out.dtype, "[{}] the CUDA kernel expects one dtype, got {} for a {} output", name, x.dtype,
              out.dtype);
  if (out.numel == 0) return;
  Ref<TensorImpl> dx = on_device(x, out.device(), name);
  cu::DeviceGuard guard(out.device().index());
  const TensorImpl* operands[2] = {&out, dx.get()};
  EMBER_CUDA_CHECK(name, cu::launch_unary(cop, code(out.dtype), make_iter<2>(name, operands)));
}

void Kernels<Cuda>::where(TensorImpl& out, const TensorImpl&, const TensorImpl&, const TensorImpl&) {
  not_implemented("where", out);
}

void Kernels<Cuda>::reduce(ops::ReduceOp op, TensorImpl&, const TensorImpl& x, uint64_t) {
  not_implemented(ops::name(op), x);
}

void Kernels<Cuda>::arg_reduce(ArgReduceOp op, TensorImpl*, TensorImpl&, const TensorImpl& x, int64_t) {
  not_implemented(op == ArgReduceOp::Max ? "argmax" : "argmin", x);
}

void Kernels<Cuda>::softmax(TensorImpl&, const TensorImpl& x, int64_t, bool log) {
  not_implemented(log ? "log_softmax" : "softmax", x);
}

void Kernels<Cuda>::cumulative(CumOp op, TensorImpl&, TensorImpl*, const TensorImpl& x, int64_t) {
  constexpr const char* names[] = {"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"};
  not_implemented(names[static_cast<int>(op)], x);
}

}  // namespace ember::detail

// The CUDA backend against the CPU: round trips, fills, strided and converting copies,
// broadcasting binary ops, unary ops and GEMM. Built only with CUDA; every case that needs a
// GPU skips with a message when cudaGetDeviceCount reports none (or fails, e.g. no driver).

#include <doctest/doctest.h>
#include <ember/ember.hpp>

#include <cuda_runtime_api.h>

#include <cmath>
#include <string>
#include <vector>

using namespace ember;

namespace {

/// Why CUDA tests cannot run here, or empty when a GPU is present.
const std::string& no_gpu_reason() {
  static const std::string reason = [] {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      cudaGetLastError();
      return std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(e);
    }
    if (n == 0) return std::string("cudaGetDeviceCount reports 0 devices");
    return std::string();
  }();
  return reason;
}

#define EMBER_REQUIRE_GPU()                                                     \
  do {                                                                          \
    if (!no_gpu_reason().empty()) {                                             \
      MESSAGE("skipped: no CUDA GPU available (" << no_gpu_reason() << ")"); \
      return;                                                                   \
    }                                                                           \
  } while (0)

const Device kGpu = Device::cuda(0);

/// The values of t (any device, dtype, strides) as doubles in row-major order.
std::vector<double> values(const Tensor& t) {
  Tensor h = t.cpu().to(DType::F64).contiguous();
  const double* p = h.data_ptr<double>();
  return std::vector<double>(p, p + h.numel());
}

/// Checks that a (on the GPU) matches b (on the CPU) within tol (relative + absolute).
void check_close(const Tensor& gpu, const Tensor& cpu, double tol = 0.0) {
  CHECK(gpu.device() == kGpu);
  CHECK(cpu.is_cpu());
  REQUIRE(gpu.sizes() == cpu.sizes());
  CHECK(gpu.dtype() == cpu.dtype());
  std::vector<double> g = values(gpu), c = values(cpu);
  int bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    bool ok = (std::isnan(g[i]) && std::isnan(c[i])) || g[i] == c[i] ||
              std::abs(g[i] - c[i]) <= tol * (1.0 + std::abs(c[i]));
    if (!ok && bad++ < 5) FAIL_CHECK("element " << i << ": gpu " << g[i] << " vs cpu " << c[i]);
  }
  CHECK(bad == 0);
}

Tensor sample(const Shape& shape, DType t) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  // Mixed signs, distinct values, exactly representable in every dtype tested.
  return (arange(n).to(DType::F64) - static_cast<double>(n / 2)).mul(0.5).reshape(shape).to(t);
}

}  // namespace

TEST_CASE("cuda: without a GPU, moving a tensor there fails with a clear message") {
  // ember::cuda::is_available says the same as the runtime, before and after a failed use.
  CHECK(cuda::is_available() == no_gpu_reason().empty());
  if (!no_gpu_reason().empty()) {
    Tensor a = ones({2, 3});
    CHECK_THROWS_WITH_AS(a.to(kGpu), doctest::Contains("CUDA"), Error);
    CHECK(!cuda::is_available());
    CHECK(cuda::device_count() == 0);
    MESSAGE("no GPU (" << no_gpu_reason() << "): only this error-path test runs");
    return;
  }
  CHECK(ones({2}).to(kGpu).is_cuda());
}

TEST_CASE("cuda: round trips .to(cuda) / .cpu() keep values, dtype and shape") {
  EMBER_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64, DType::F16, DType::BF16, DType::U8, DType::Bool}) {
    CAPTURE(t);
    Tensor a = t == DType::U8 ? arange(24).reshape({2, 3, 4}).to(t) : sample({2, 3, 4}, t);
    Tensor g = a.to(kGpu);
    CHECK(g.is_cuda());
    CHECK(g.dtype() == t);
    CHECK(g.sizes() == a.sizes());
    Tensor back = g.cpu();
    CHECK(back.is_cpu());
    CHECK(values(back) == values(a));
  }
  // 0-d and empty tensors.
  CHECK(values(tensor({3.5f}).reshape({}).to(kGpu)) == std::vector<double>{3.5});
  CHECK(zeros({0, 3}).to(kGpu).cpu().numel() == 0);
  // Printing copies to the host and names the device, as PyTorch's text.
  CHECK(to_string(ones({2}).to(kGpu)) == "tensor([1., 1.], device='cuda:0')");
  CHECK(to_string(ones({2}, DType::F64).to(kGpu)) == "tensor([1., 1.], device='cuda:0', dtype=f64)");
  // Allocator statistics count device memory.
  CHECK(allocator_stats(kGpu).allocation_count > 0);
}

TEST_CASE("cuda: fill, zeros, ones and fill_ on strided views") {
  EMBER_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64, DType::F16, DType::BF16, DType::I8, DType::Bool}) {
    CAPTURE(t);
    Tensor g = full({3, 5}, 1, TensorOptions(t).device(kGpu));
    check_close(g, full({3, 5}, 1, TensorOptions(t)));
  }
  check_close(full({4, 4}, 2.5, TensorOptions(kGpu)), full({4, 4}, 2.5));
  check_close(zeros({7}, TensorOptions(kGpu)), zeros({7}));
  check_close(ones({2, 2}, TensorOptions(DType::F64).device(kGpu)), ones({2, 2}, TensorOptions(DType::F64)));
  // fill_ through a strided view writes only the view's elements.
  Tensor g = zeros({4, 6}, TensorOptions(kGpu));
  Tensor c = zeros({4, 6});
  g.slice(1, 1, 6, 2).fill_(7);
  c.slice(1, 1, 6, 2).fill_(7);
  check_close(g, c);
  g.transpose(0, 1).slice(0, 0, 2).fill_(-1);
  c.transpose(0, 1).slice(0, 0, 2).fill_(-1);
  check_close(g, c);
}

TEST_CASE("cuda: strided copies on the device and across host/device, with dtype conversion") {
  EMBER_REQUIRE_GPU();
  Tensor a = sample({3, 4, 5}, DType::F32);
  Tensor g = a.to(kGpu);
  // Device -> device: permuted, sliced and broadcast sources.
  check_close(g.permute({2, 0, 1}).contiguous(), a.permute({2, 0, 1}).contiguous());
  check_close(g.slice(2, 1, 5, 2).contiguous(), a.slice(2, 1, 5, 2).contiguous());
  Tensor gd = zeros({2, 3, 4, 5}, TensorOptions(kGpu));
  Tensor cd = zeros({2, 3, 4, 5});
  gd.copy_(g);  // broadcast over the leading dim
  cd.copy_(a);
  check_close(gd, cd);
  // Conversions on the device: float -> int truncates, -> bool is != 0, f32 -> f16.
  for (DType t : {DType::I32, DType::I64, DType::F64, DType::F16, DType::BF16, DType::Bool, DType::U8}) {
    CAPTURE(t);
    check_close(g.to(t), a.to(t));
    check_close(g.transpose(0, 2).to(t), a.transpose(0, 2).to(t));
  }
  check_close(g.to(DType::I32).to(DType::F64), a.to(DType::I32).to(DType::F64));
  // Host strided -> device strided, converting.
  Tensor gdst = zeros({5, 4}, TensorOptions(DType::F64).device(kGpu));
  Tensor cdst = zeros({5, 4}, TensorOptions(DType::F64));
  gdst.slice(0, 0, 5, 2).copy_(a.select(0, 1).transpose(0, 1).slice(0, 0, 5, 2));
  cdst.slice(0, 0, 5, 2).copy_(a.select(0, 1).transpose(0, 1).slice(0, 0, 5, 2));
  check_close(gdst, cdst);
  // Device strided -> host strided, converting.
  Tensor hdst = zeros({4, 3}, TensorOptions(DType::I64));
  Tensor hexp = zeros({4, 3}, TensorOptions(DType::I64));
  hdst.transpose(0, 1).copy_(g.select(2, 3));
  hexp.transpose(0, 1).copy_(a.select(2, 3));
  CHECK(values(hdst) == values(hexp));
}

TEST_CASE("cuda: binary ops with broadcasting match the CPU") {
  EMBER_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64}) {
    CAPTURE(t);
    Tensor a = sample({4, 1, 3}, t), b = sample({5, 1}, t) + 1;
    Tensor ga = a.to(kGpu), gb = b.to(kGpu);
    check_close(ga + gb, a + b);
    check_close(ga - gb, a - b);
    check_close(ga * gb, a * b);
    check_close(gb * ga.transpose(0, 2), b * a.transpose(0, 2));
    check_close(ga.maximum(gb), a.maximum(b));
    // Division by a nonzero divisor (true division: integers become f32).
    Tensor d = sample({5, 1}, t) * 2 + 1;
    check_close(ga / d.to(kGpu), a / d, 1e-6);
    // Scalars promote like Python numbers.
    check_close(ga + 2, a + 2);
    check_close(ga * 2.5, a * 2.5, 1e-6);
  }
  // Large strided operands (exercise the grid-stride loop and int64 indexing).
  Tensor x = sample({300, 700}, DType::F32);
  Tensor y = sample({700, 1}, DType::F32);
  check_close(x.to(kGpu).t() * y.to(kGpu), x.t() * y);
  // In place.
  Tensor gi = sample({3, 4}, DType::F32).to(kGpu);
  Tensor ci = sample({3, 4}, DType::F32);
  gi.add_(ones({4}).to(kGpu));
  ci.add_(ones({4}));
  check_close(gi, ci);
}

TEST_CASE("cuda: unary ops match the CPU") {
  EMBER_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::F64}) {
    CAPTURE(t);
    Tensor a = sample({6, 7}, t).mul(0.25);
    Tensor g = a.to(kGpu);
    double tol = t == DType::F32 ? 1e-6 : 1e-12;
    check_close(-g, -a);
    check_close(g.neg(), a.neg());
    check_close(g.exp(), a.exp(), tol);
    check_close(g.relu(), a.relu());
    check_close(g.t().exp(), a.t().exp(), tol);
    check_close(g.tanh(), a.tanh(), tol);
    check_close(g.sigmoid(), a.sigmoid(), tol);
  }
  check_close(sample({5}, DType::I32).to(kGpu).neg(), sample({5}, DType::I32).neg());
  check_close(sample({5}, DType::I64).to(kGpu).relu(), sample({5}, DType::I64).relu());
}

TEST_CASE("cuda: matmul through cuBLAS matches the CPU") {
  EMBER_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::F64}) {
    CAPTURE(t);
    double tol = t == DType::F32 ? 1e-5 : 1e-12;
    Tensor a = sample({5, 7}, t).mul(0.1), b = sample({7, 3}, t).mul(0.1);
    Tensor ga = a.to(kGpu), gb = b.to(kGpu);
    check_close(ga.mm(gb), a.mm(b), tol);
    check_close(gb.t().mm(ga.t()), b.t().mm(a.t()), tol);  // column-major operands
    Tensor ba = sample({4, 5, 7}, t).mul(0.1), bb = sample({4, 7, 3}, t).mul(0.1);
    check_close(ba.to(kGpu).bmm(bb.to(kGpu)), ba.bmm(bb), tol);
    check_close(ba.to(kGpu).matmul(gb), ba.matmul(b), tol);  // broadcast batch
  }
}

TEST_CASE("cuda: addmm, baddbmm and matmul of operands GEMM cannot take as they are stay on the device") {
  EMBER_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::F64}) {
    CAPTURE(t);
    double tol = t == DType::F32 ? 1e-5 : 1e-12;
    Tensor c = sample({5, 3}, t).mul(0.1), a = sample({5, 7}, t).mul(0.1), b = sample({7, 3}, t).mul(0.1);
    check_close(addmm(c.to(kGpu), a.to(kGpu), b.to(kGpu), 0.5, 2.0), addmm(c, a, b, 0.5, 2.0), tol);
    Tensor bias = sample({3}, t);  // broadcast input of addmm
    check_close(addmm(bias.to(kGpu), a.to(kGpu), b.to(kGpu)), addmm(bias, a, b), tol);
    Tensor ba = sample({2, 5, 7}, t).mul(0.1), bb = sample({2, 7, 3}, t).mul(0.1), bc = sample({2, 5, 3}, t);
    check_close(baddbmm(bc.to(kGpu), ba.to(kGpu), bb.to(kGpu), 1.0, 0.25), baddbmm(bc, ba, bb, 1.0, 0.25), tol);
    // Both strides > 1 (every other row and column): staged through a contiguous copy.
    Tensor big = sample({10, 14}, t).mul(0.1);
    Tensor gs = big.to(kGpu).slice(0, 0, 10, 2).slice(1, 0, 14, 2);
    Tensor cs = big.slice(0, 0, 10, 2).slice(1, 0, 14, 2);
    check_close(gs.matmul(b.to(kGpu)), cs.matmul(b), tol);
  }
}

TEST_CASE("cuda: autograd through elementwise ops and matmul matches the CPU") {
  EMBER_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::F64}) {
    CAPTURE(t);
    double tol = t == DType::F32 ? 1e-5 : 1e-12;
    Tensor a = sample({3, 4}, t).mul(0.1), b = sample({3, 4}, t).mul(0.05), w = sample({4, 2}, t).mul(0.1);
    Tensor g = sample({3, 2}, t);
    std::vector<Tensor> cpu_grads, gpu_grads;
    for (bool on_gpu : {false, true}) {
      Tensor la = (on_gpu ? a.to(kGpu) : a.clone()).requires_grad_();
      Tensor lb = (on_gpu ? b.to(kGpu) : b.clone()).requires_grad_();
      Tensor lw = (on_gpu ? w.to(kGpu) : w.clone()).requires_grad_();
      Tensor y = (la * lb + la - lb * 0.5).matmul(lw);
      y.backward(on_gpu ? g.to(kGpu) : g);
      auto& out = on_gpu ? gpu_grads : cpu_grads;
      out = {la.grad(), lb.grad(), lw.grad()};
    }
    for (size_t i = 0; i < 3; ++i) check_close(gpu_grads[i], cpu_grads[i], tol);
  }
}

TEST_CASE("cuda: ops without a CUDA kernel fail clearly instead of computing garbage") {
  EMBER_REQUIRE_GPU();
  Tensor g = ones({3, 3}).to(kGpu);
  CHECK_THROWS_WITH_AS(g.sum(), doctest::Contains("not implemented for CUDA"), Error);
  CHECK_THROWS_WITH_AS(g.erfinv(), doctest::Contains("not implemented for CUDA"), Error);
  CHECK_THROWS_AS(g + ones({3, 3}), Error);  // mixed devices
}

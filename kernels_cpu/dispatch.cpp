// Kernels<Cpu>: picks, once, the widest instruction-set build of the kernels that this CPU
// runs (AVX2+FMA, else the baseline), then forwards every call to it with a switch. The f32
// GEMM and the compute-bound f32 elementwise ops also have an AVX-512 build, taken when the CPU
// has AVX-512 F/DQ/VL/BW.

#include "arch_kernels.hpp"
#include "transcendental_wide.hpp"

#include <ember/dispatch/kernels.hpp>
#include <ember/runtime/log.hpp>

#include <cstdlib>
#include <string_view>
#if defined(EMBER_HAVE_AVX2_BUILD)
#include <cpuid.h>
#endif
#if defined(EMBER_HAVE_AVX512_BUILD) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ember::detail {
namespace {

enum class Isa : uint8_t { Base, Avx2 };

/// EMBER_MAX_CPU_ISA=base|avx2|avx512|amx caps the build chosen (like oneDNN's
/// ONEDNN_MAX_CPU_ISA): it lets one machine run the tests through every build, and lets a user
/// rule out a build. Read once, at the first kernel call.
int max_isa_level() {
  const char* v = std::getenv("EMBER_MAX_CPU_ISA");
  if (!v) return 3;
  const std::string_view s(v);
  return s == "base" ? 0 : s == "avx2" ? 1 : s == "avx512" ? 2 : 3;
}

#if defined(EMBER_HAVE_AVX2_BUILD)
/// F16C from CPUID leaf 1 (ECX bit 29): clang before 15 does not know "f16c" in
/// __builtin_cpu_supports, and Ember must build with Debian 12's clang 14. Asked after the
/// AVX2 test, which already requires that the OS saves the AVX state.
bool cpu_has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
}
#endif

Isa detect() {
#if defined(EMBER_HAVE_AVX2_BUILD)
  __builtin_cpu_init();
  if (max_isa_level() >= 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c()) {
    log(LogLevel::Info, "CPU kernels: AVX2+FMA+F16C build");
    return Isa::Avx2;
  }
#endif
  log(LogLevel::Info, "CPU kernels: baseline build");
  return Isa::Base;
}

inline Isa isa() {
  static const Isa value = detect();
  return value;
}

#if defined(EMBER_HAVE_AVX512_BUILD)
bool detect_avx512() {
  __builtin_cpu_init();
  bool yes = isa() == Isa::Avx2 && max_isa_level() >= 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
  if (yes) log(LogLevel::Info, "CPU kernels: AVX-512 GEMM and f32 transcendental ops");
  return yes;
}
inline bool avx512() {
  static const bool value = detect_avx512();
  return value;
}
/// AVX512_BF16 from CPUID leaf 7, sub-leaf 1 (EAX bit 5); clang 14 has no name for it in
/// __builtin_cpu_supports. Asked only where the AVX-512 build runs (the OS saves zmm state).
bool detect_bf16_gemm() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  const bool yes = avx512() && __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a & (1u << 5)) != 0;
  if (yes) log(LogLevel::Info, "CPU kernels: AVX512_BF16 GEMM for bf16 products");
  return yes;
}
inline bool bf16_gemm() {
  static const bool value = detect_bf16_gemm();
  return value;
}
/// AMX-TILE and AMX-BF16 (CPUID leaf 7, EDX bits 24 and 22), the tile state enabled by the OS
/// (XCR0 bits 17 and 18), and on Linux the permission to use it: since 5.16 a process must ask
/// for the 8 KB of tile data (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA) before
/// its first AMX instruction, which otherwise faults. Other systems: not used.
bool detect_amx() {
#if defined(__linux__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!bf16_gemm() || max_isa_level() < 3 || __get_cpuid_count(7, 0, &a, &b, &c, &d) == 0 ||
      (d & (1u << 24)) == 0 || (d & (1u << 22)) == 0)
    return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & (3u << 17)) != (3u << 17)) return false;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
  log(LogLevel::Info, "CPU kernels: AMX tiles for bf16 products");
  return true;
#else
  return false;
#endif
}
inline bool amx() {
  static const bool value = detect_amx();
  return value;
}
#endif

/// The four arithmetic ops on tiny contiguous f32/f64 operands of one dtype (a controller's
/// 3- to 16-vectors, a loss's scalars): one plain loop here instead of the instruction-set
/// build's op switch, dtype visit and run set-up, ~130 of the ~980 instructions of a 4-element
/// a + b. IEEE arithmetic rounds the same in any build, so results are bit for bit those of
/// the SIMD loops (tests/test_dispatch.cpp compares both sides of kTinyElements).
constexpr int64_t kTinyElements = 16;

template <class T>
bool tiny_arithmetic(ops::BinaryOp op, TensorImpl& out, const TensorImpl& a, const TensorImpl& b) {
  T* o = static_cast<T*>(out.data());
  const T* x = static_cast<const T*>(a.data());
  const T* y = static_cast<const T*>(b.data());
  const int64_t n = out.numel;
  // Elementwise in order, so an in-place target that is one of the operands reads each
  // element before it writes it (other overlaps were copied by finalize_inputs).
  switch (op) {
    case ops::BinaryOp::Add:
      for (int64_t k = 0; k < n; ++k) o[k] = x[k] + y[k];
      return true;
    case ops::BinaryOp::Sub:
      for (int64_t k = 0; k < n; ++k) o[k] = x[k] - y[k];
      return true;
    case ops::BinaryOp::Mul:
      for (int64_t k = 0; k < n; ++k) o[k] = x[k] * y[k];
      return true;
    case ops::BinaryOp::Div:
      for (int64_t k = 0; k < n; ++k) o[k] = x[k] / y[k];
      return true;
    default:
      return false;
  }
}

}  // namespace

#if defined(EMBER_HAVE_AVX512_BUILD)
bool cpu_uses_avx512_build() { return avx512(); }
bool cpu_uses_bf16_gemm() { return bf16_gemm(); }
bool cpu_uses_amx() { return amx(); }
#endif
#if defined(EMBER_HAVE_AVX2_BUILD)
bool cpu_uses_avx2_build() { return isa() == Isa::Avx2; }
#define EMBER_CPU_FORWARD(fn, ...) \
  return isa() == Isa::Avx2 ? cpu::avx2::fn(__VA_ARGS__) : cpu::base::fn(__VA_ARGS__)
#else
#define EMBER_CPU_FORWARD(fn, ...) return cpu::base::fn(__VA_ARGS__)
#endif

void Kernels<Cpu>::unary(ops::UnaryOp op, const ops::UnaryParams& p, TensorImpl& out, const TensorImpl& x) {
#if defined(EMBER_HAVE_AVX512_BUILD)
  if (cpu::avx512::has_unary_f32(op) && out.dtype == DType::F32 && x.dtype == DType::F32 && out.contiguous &&
      x.contiguous && x.numel == out.numel && avx512() &&
      cpu::avx512::unary_f32(op, p, static_cast<float*>(out.data()), static_cast<const float*>(x.data()), out.numel))
    return;
#endif
  EMBER_CPU_FORWARD(unary, op, p, out, x);
}
void Kernels<Cpu>::binary(ops::BinaryOp op, TensorImpl& out, const TensorImpl& a, const TensorImpl& b) {
  if (out.numel <= kTinyElements && a.numel == out.numel && b.numel == out.numel && out.dtype == a.dtype &&
      a.dtype == b.dtype && out.contiguous && a.contiguous && b.contiguous) {
    if (out.dtype == DType::F32 && tiny_arithmetic<float>(op, out, a, b)) return;
    if (out.dtype == DType::F64 && tiny_arithmetic<double>(op, out, a, b)) return;
  }
#if defined(EMBER_HAVE_AVX512_BUILD)
  if (cpu::avx512::has_binary_f32(op) && out.dtype == DType::F32 && a.dtype == DType::F32 &&
      b.dtype == DType::F32 && out.contiguous && a.contiguous && b.contiguous && a.numel == out.numel &&
      b.numel == out.numel && avx512() &&
      cpu::avx512::binary_f32(op, static_cast<float*>(out.data()), static_cast<const float*>(a.data()),
                              static_cast<const float*>(b.data()), out.numel))
    return;
#endif
  EMBER_CPU_FORWARD(binary, op, out, a, b);
}
void Kernels<Cpu>::where(TensorImpl& out, const TensorImpl& c, const TensorImpl& a, const TensorImpl& b) {
  EMBER_CPU_FORWARD(where, out, c, a, b);
}
void Kernels<Cpu>::copy(TensorImpl& dst, const TensorImpl& src) {
  if (!src.device().is_cpu() || !dst.device().is_cpu()) {
    // Only reached for non-CPU tensors when their backend is absent from the policy.
    EMBER_FAIL("[copy_] the CPU backend cannot copy {} -> {}", src.device(), dst.device());
  }
  EMBER_CPU_FORWARD(copy, dst, src);
}
void Kernels<Cpu>::fill(TensorImpl& dst, Scalar v) { EMBER_CPU_FORWARD(fill, dst, v); }
void Kernels<Cpu>::reduce(ops::ReduceOp op, TensorImpl& out, const TensorImpl& x, uint64_t mask) {
  EMBER_CPU_FORWARD(reduce, op, out, x, mask);
}
void Kernels<Cpu>::arg_reduce(ArgReduceOp op, TensorImpl* values, TensorImpl& indices, const TensorImpl& x,
                              int64_t dim) {
  EMBER_CPU_FORWARD(arg_reduce, op, values, indices, x, dim);
}
void Kernels<Cpu>::softmax(TensorImpl& out, const TensorImpl& x, int64_t dim, bool log) {
#if defined(EMBER_HAVE_AVX512_BUILD)
  if (x.dtype == DType::F32 && out.dtype == DType::F32 && x.contiguous && out.contiguous && x.ndim() > 0 &&
      dim == x.ndim() - 1 && x.numel > 0 && x.numel == out.numel && avx512()) {
    const int64_t len = x.sizes[static_cast<size_t>(dim)];
    return cpu::avx512::softmax_rows_f32(static_cast<float*>(out.data()), static_cast<const float*>(x.data()),
                                         x.numel / len, len, log);
  }
#endif
  EMBER_CPU_FORWARD(softmax, out, x, dim, log);
}
void Kernels<Cpu>::softmax_backward(TensorImpl& dx, const TensorImpl& g, const TensorImpl& y, int64_t dim, bool log) {
  EMBER_CPU_FORWARD(softmax_backward, dx, g, y, dim, log);
}
void Kernels<Cpu>::layer_norm(TensorImpl& y, TensorImpl& mean, TensorImpl& rstd, const TensorImpl& x,
                              const TensorImpl* weight, const TensorImpl* bias, int64_t cols, double eps) {
  EMBER_CPU_FORWARD(layer_norm, y, mean, rstd, x, weight, bias, cols, eps);
}
void Kernels<Cpu>::layer_norm_backward(TensorImpl* dx, TensorImpl* dweight, TensorImpl* dbias, const TensorImpl& dy,
                                       const TensorImpl& x, const TensorImpl& mean, const TensorImpl& rstd,
                                       const TensorImpl* weight, int64_t cols) {
  EMBER_CPU_FORWARD(layer_norm_backward, dx, dweight, dbias, dy, x, mean, rstd, weight, cols);
}
void Kernels<Cpu>::cumulative(CumOp op, TensorImpl& out, TensorImpl* indices, const TensorImpl& x, int64_t dim) {
  EMBER_CPU_FORWARD(cumulative, op, out, indices, x, dim);
}

void Kernels<Cpu>::gemm(TensorImpl& out, const TensorImpl& a, const TensorImpl& b, double alpha, double beta) {
  if (is_integral(out.dtype)) EMBER_CPU_FORWARD(int_gemm, out, a, b, alpha, beta);
#if defined(EMBER_HAVE_AVX512_BUILD)
  if (out.dtype == DType::BF16 && a.dtype == DType::BF16 && b.dtype == DType::BF16 && bf16_gemm() &&
      cpu::avx512bf16::gemm(out, a, b, alpha, beta, amx()))
    return;
#endif
  if (is_reduced_float(out.dtype)) {
    // f16/bf16: compute in f32 (as storage types, see docs/design.md), then round once.
    auto up = [](const TensorImpl& t) {
      Ref<TensorImpl> f = make_tensor(t.sizes, DType::F32, t.device(), "matmul");
      Kernels<Cpu>::copy(*f, t);
      return f;
    };
    Ref<TensorImpl> fa = up(a), fb = up(b), fo = up(out);
    gemm(*fo, *fa, *fb, alpha, beta);
    copy(out, *fo);
    return;
  }
#if defined(EMBER_HAVE_AVX512_BUILD)
  if (out.dtype == DType::F32 && avx512()) return cpu::avx512::gemm(out, a, b, alpha, beta);
#endif
  EMBER_CPU_FORWARD(gemm, out, a, b, alpha, beta);
}

void Kernels<Cpu>::gemm_bias(TensorImpl& out, const TensorImpl& a, const TensorImpl& b, const TensorImpl* row,
                             double alpha, double beta, bool relu) {
  // The plan passes a row, and linear_relu a ReLU, only for f32 and f64 matrices
  // (ops/matmul.cpp's plan_matrices).
  EMBER_CHECK(out.dtype == DType::F32 || out.dtype == DType::F64, "[addmm] internal: a bias row for a {} product",
              out.dtype);
#if defined(EMBER_HAVE_AVX512_BUILD)
  if (out.dtype == DType::F32 && avx512()) return cpu::avx512::gemm(out, a, b, alpha, beta, row, relu);
#endif
  EMBER_CPU_FORWARD(gemm, out, a, b, alpha, beta, row, relu);
}

}  // namespace ember::detail

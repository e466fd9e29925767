// Kernels<Cpu>'s fused attention entry points, in their own file so that a program without
// attention links none of their code (dispatch.cpp is in every program). Only the AVX2 and
// AVX-512 builds have the kernel (it runs on the packed GEMM's micro-kernels); elsewhere the
// general path in src/ops/attention.cpp runs.

#include "arch_kernels.hpp"

namespace ember::detail {

bool Kernels<Cpu>::attention_heads(const ops::AttentionHeads& a) {
#if defined(EMBER_HAVE_AVX512_BUILD)
  if (cpu_uses_avx512_build()) return cpu::avx512::attention_heads(a);
#endif
#if defined(EMBER_HAVE_AVX2_BUILD)
  if (cpu_uses_avx2_build()) return cpu::avx2::attention_heads(a);
#endif
  (void)a;
  return false;
}

bool Kernels<Cpu>::attention_heads_backward(const ops::AttentionHeads& a) {
#if defined(EMBER_HAVE_AVX512_BUILD)
  if (cpu_uses_avx512_build()) return cpu::avx512::attention_heads_backward(a);
#endif
#if defined(EMBER_HAVE_AVX2_BUILD)
  if (cpu_uses_avx2_build()) return cpu::avx2::attention_heads_backward(a);
#endif
  (void)a;
  return false;
}

}  // namespace ember::detail

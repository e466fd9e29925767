#pragma once
// Declarations of the kernels each instruction-set build of kernels_cpu/ provides, in its
// namespace (ember::cpu::base, ember::cpu::avx2, ...).

#include <ember/core/scalar.hpp>
#include <ember/core/tensor_impl.hpp>
#include <ember/dispatch/kernels.hpp>

#define EMBER_DECLARE_ARCH_KERNELS(ns)                                                                          \
  namespace ember::cpu::ns {                                                                                    \
  void unary(ops::UnaryOp, const ops::UnaryParams&, detail::TensorImpl&, const detail::TensorImpl&);            \
  void binary(ops::BinaryOp, detail::TensorImpl&, const detail::TensorImpl&, const detail::TensorImpl&);        \
  void where(detail::TensorImpl&, const detail::TensorImpl&, const detail::TensorImpl&, const detail::TensorImpl&); \
  void copy(detail::TensorImpl&, const detail::TensorImpl&);                                                    \
  void fill(detail::TensorImpl&, Scalar);                                                                       \
  void reduce(ops::ReduceOp, detail::TensorImpl&, const detail::TensorImpl&, uint64_t);                        \
  void arg_reduce(detail::ArgReduceOp, detail::TensorImpl*, detail::TensorImpl&, const detail::TensorImpl&, int64_t); \
  void softmax(detail::TensorImpl&, const detail::TensorImpl&, int64_t, bool);                                  \
  void cumulative(detail::CumOp, detail::TensorImpl&, detail::TensorImpl*, const detail::TensorImpl&, int64_t); \
  /* i8, u8, i32, i64 products (int_gemm.cpp): (rows, cols) or (batch, rows, cols) views, any strides */      \
  void int_gemm(detail::TensorImpl&, const detail::TensorImpl&, const detail::TensorImpl&, double, double);    \
  void gemm(detail::TensorImpl&, const detail::TensorImpl&, const detail::TensorImpl&, double, double,         \
            const detail::TensorImpl* row = nullptr, bool relu = false);                                        \
  void softmax_backward(detail::TensorImpl&, const detail::TensorImpl&, const detail::TensorImpl&, int64_t, bool); \
  void layer_norm(detail::TensorImpl&, detail::TensorImpl&, detail::TensorImpl&, const detail::TensorImpl&,        \
                  const detail::TensorImpl*, const detail::TensorImpl*, int64_t, double);                        \
  void layer_norm_backward(detail::TensorImpl*, detail::TensorImpl*, detail::TensorImpl*, const detail::TensorImpl&, \
                           const detail::TensorImpl&, const detail::TensorImpl&, const detail::TensorImpl&,       \
                           const detail::TensorImpl*, int64_t);                                                  \
  void depthwise_conv(const ops::ConvGeometry&, const detail::TensorImpl&, const detail::TensorImpl&,             \
                      const detail::TensorImpl*, detail::TensorImpl&);                                           \
  void depthwise_conv_backward(const ops::ConvGeometry&, const detail::TensorImpl&, const detail::TensorImpl&,     \
                               const detail::TensorImpl&, detail::TensorImpl*, detail::TensorImpl*,               \
                               detail::TensorImpl*);                                                             \
  void batch_norm(detail::TensorImpl&, detail::TensorImpl&, detail::TensorImpl*, detail::TensorImpl&,              \
                  const detail::TensorImpl&, const detail::TensorImpl*, const detail::TensorImpl*, double);      \
  void batch_norm_backward(detail::TensorImpl*, detail::TensorImpl*, detail::TensorImpl*, const detail::TensorImpl&, \
                           const detail::TensorImpl&, const detail::TensorImpl&, const detail::TensorImpl&,       \
                           const detail::TensorImpl*, bool);                                                     \
  void winograd_transform(ops::WinogradTransform, const ops::WinogradTiles&, int64_t, int64_t, int64_t, int64_t,    \
                          const detail::TensorImpl&, detail::TensorImpl&);                                       \
  void direct_conv(const ops::DirectConvGeometry&, int64_t, int64_t, const detail::TensorImpl&,                  \
                   const detail::TensorImpl&, const detail::TensorImpl*, detail::TensorImpl&, detail::TensorImpl&); \
  void direct_conv_backward(const ops::DirectConvGeometry&, int64_t, int64_t, const detail::TensorImpl&,         \
                            const detail::TensorImpl&, const detail::TensorImpl&, detail::TensorImpl*,             \
                            detail::TensorImpl*, detail::TensorImpl*, detail::TensorImpl&);                        \
  }

EMBER_DECLARE_ARCH_KERNELS(base)
#if defined(__x86_64__)
EMBER_DECLARE_ARCH_KERNELS(avx2)
#define EMBER_HAVE_AVX2_BUILD 1
namespace ember::detail {
/// Whether Kernels<Cpu> forwards to the AVX2 build (dispatch.cpp's choice, which honours
/// EMBER_MAX_CPU_ISA), for kernels dispatched from their own files.
bool cpu_uses_avx2_build();
/// Whether the f32 GEMM runs the AVX-512 build (the AVX2 build is in use and the CPU has
/// AVX-512 F/DQ/VL/BW, unless EMBER_MAX_CPU_ISA caps it).
bool cpu_uses_avx512_build();
}  // namespace ember::detail
// The fused f32 attention (kernels_cpu/attention_heads.cpp), in the AVX2 and AVX-512 builds.
namespace ember::cpu::avx2 {
bool attention_heads(const ops::AttentionHeads&);
bool attention_heads_backward(const ops::AttentionHeads&);
}  // namespace ember::cpu::avx2
// Only the f32 GEMM and the compute-bound f32 elementwise ops (transcendental_wide.hpp) have
// an AVX-512 build (kernels_cpu/meson.build says why).
namespace ember::cpu::avx512 {
void gemm(detail::TensorImpl&, const detail::TensorImpl&, const detail::TensorImpl&, double, double,
          const detail::TensorImpl* row = nullptr, bool relu = false);
bool attention_heads(const ops::AttentionHeads&);
bool attention_heads_backward(const ops::AttentionHeads&);
}
#define EMBER_HAVE_AVX512_BUILD 1
// The bf16 GEMM on CPUs with AVX512_BF16 (kernels_cpu/gemm_bf16.cpp), with AMX tiles where
// `amx` (the CPU has AMX-BF16 and the OS granted the tile state). False: a layout it does not
// take (an empty inner dimension, C with strided columns), for the general path.
namespace ember::cpu::avx512bf16 {
bool gemm(detail::TensorImpl& out, const detail::TensorImpl& a, const detail::TensorImpl& b, double alpha,
          double beta, bool amx);
}
namespace ember::detail {
/// Whether bf16 products run the AVX512_BF16 GEMM (the AVX-512 build is in use and the CPU has
/// AVX512_BF16).
bool cpu_uses_bf16_gemm();
/// Whether that GEMM uses AMX tiles (AMX-BF16, the tile state granted, EMBER_MAX_CPU_ISA not
/// below amx).
bool cpu_uses_amx();
}  // namespace ember::detail
#endif

// Kernels<Cpu>'s convolution entry points (Winograd transforms, direct convolution), in their
// own file so that a program without convolutions links none of their code (dispatch.cpp is
// in every program; tests/footprint keeps the inference program under 2 MiB).

#include "arch_kernels.hpp"

namespace ember::detail {

#if defined(EMBER_HAVE_AVX2_BUILD)
#define EMBER_CONV_FORWARD(fn, ...) \
  return cpu_uses_avx2_build() ? cpu::avx2::fn(__VA_ARGS__) : cpu::base::fn(__VA_ARGS__)
#else
#define EMBER_CONV_FORWARD(fn, ...) return cpu::base::fn(__VA_ARGS__)
#endif

void Kernels<Cpu>::winograd_transform(ops::WinogradTransform kind, const ops::WinogradTiles& t, int64_t n0,
                                      int64_t n1, int64_t c0, int64_t c1, const TensorImpl& src, TensorImpl& dst) {
  EMBER_CONV_FORWARD(winograd_transform, kind, t, n0, n1, c0, c1, src, dst);
}
void Kernels<Cpu>::depthwise_conv(const ops::ConvGeometry& g, const TensorImpl& x, const TensorImpl& w,
                                  const TensorImpl* b, TensorImpl& y) {
  EMBER_CONV_FORWARD(depthwise_conv, g, x, w, b, y);
}
void Kernels<Cpu>::depthwise_conv_backward(const ops::ConvGeometry& g, const TensorImpl& dy, const TensorImpl& x,
                                           const TensorImpl& w, TensorImpl* dx, TensorImpl* dw, TensorImpl* db) {
  EMBER_CONV_FORWARD(depthwise_conv_backward, g, dy, x, w, dx, dw, db);
}
void Kernels<Cpu>::direct_conv(const ops::DirectConvGeometry& g, int64_t n0, int64_t n1, const TensorImpl& x,
                               const TensorImpl& w, const TensorImpl* b, TensorImpl& y, TensorImpl& scratch) {
  EMBER_CONV_FORWARD(direct_conv, g, n0, n1, x, w, b, y, scratch);
}
void Kernels<Cpu>::direct_conv_backward(const ops::DirectConvGeometry& g, int64_t n0, int64_t n1, const TensorImpl& dy,
                                        const TensorImpl& x, const TensorImpl& w, TensorImpl* dx, TensorImpl* dw,
                                        TensorImpl* db, TensorImpl& scratch) {
  EMBER_CONV_FORWARD(direct_conv_backward, g, n0, n1, dy, x, w, dx, dw, db, scratch);
}

}  // namespace ember::detail

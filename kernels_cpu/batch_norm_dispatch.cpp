// Kernels<Cpu>'s batch normalisation entry points, in their own file so that a program without
// batch normalisation links none of its code (dispatch.cpp is in every program; tests/footprint
// keeps the inference program under 2 MiB).

#include "arch_kernels.hpp"

namespace ember::detail {

#if defined(EMBER_HAVE_AVX2_BUILD)
#define EMBER_BN_FORWARD(fn, ...) \
  return cpu_uses_avx2_build() ? cpu::avx2::fn(__VA_ARGS__) : cpu::base::fn(__VA_ARGS__)
#else
#define EMBER_BN_FORWARD(fn, ...) return cpu::base::fn(__VA_ARGS__)
#endif

void Kernels<Cpu>::batch_norm(TensorImpl& y, TensorImpl& mean, TensorImpl* var, TensorImpl& rstd, const TensorImpl& x,
                              const TensorImpl* weight, const TensorImpl* bias, double eps) {
  EMBER_BN_FORWARD(batch_norm, y, mean, var, rstd, x, weight, bias, eps);
}
void Kernels<Cpu>::batch_norm_backward(TensorImpl* dx, TensorImpl* dweight, TensorImpl* dbias, const TensorImpl& dy,
                                       const TensorImpl& x, const TensorImpl& mean, const TensorImpl& rstd,
                                       const TensorImpl* weight, bool training) {
  EMBER_BN_FORWARD(batch_norm_backward, dx, dweight, dbias, dy, x, mean, rstd, weight, training);
}

}  // namespace ember::detail

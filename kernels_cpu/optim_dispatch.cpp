// ember::optim::fused::*: forwards each fused optimiser update to the instruction-set build
// of kernels_cpu/optim.cpp that the other kernels use (dispatch.cpp's choice, which honours
// EMBER_MAX_CPU_ISA, so the test suite's baseline run covers these builds too).

#include "optim_arch.hpp"

#if defined(EMBER_HAVE_AVX2_OPTIM_BUILD)
namespace ember::detail {
bool cpu_uses_avx2_build();  // kernels_cpu/dispatch.cpp
}  // namespace ember::detail
#endif

namespace ember::optim::fused {
namespace {

bool use_avx2() {
#if defined(EMBER_HAVE_AVX2_OPTIM_BUILD)
  return detail::cpu_uses_avx2_build();
#else
  return false;
#endif
}

}  // namespace

#if defined(EMBER_HAVE_AVX2_OPTIM_BUILD)
#define EMBER_OPTIM_FORWARD(fn, ...) \
  return use_avx2() ? cpu::avx2::optim::fn(__VA_ARGS__) : cpu::base::optim::fn(__VA_ARGS__)
#else
#define EMBER_OPTIM_FORWARD(fn, ...) return cpu::base::optim::fn(__VA_ARGS__)
#endif

void sgd(const SgdArgs& a, const Param* p, const SgdCoef* c, int64_t n) { EMBER_OPTIM_FORWARD(sgd, a, p, c, n); }
void adam(const AdamArgs& a, const Param* p, const AdamCoef* c, int64_t n) { EMBER_OPTIM_FORWARD(adam, a, p, c, n); }
void adamax(const AdamaxArgs& a, const Param* p, const AdamaxCoef* c, int64_t n) {
  EMBER_OPTIM_FORWARD(adamax, a, p, c, n);
}
void nadam(const NAdamArgs& a, const Param* p, const NAdamCoef* c, int64_t n) {
  EMBER_OPTIM_FORWARD(nadam, a, p, c, n);
}
void radam(const RAdamArgs& a, const Param* p, const RAdamCoef* c, int64_t n) {
  EMBER_OPTIM_FORWARD(radam, a, p, c, n);
}
void rmsprop(const RMSpropArgs& a, const Param* p, int64_t n) { EMBER_OPTIM_FORWARD(rmsprop, a, p, n); }
void adagrad(const AdagradArgs& a, const Param* p, const AdagradCoef* c, int64_t n) {
  EMBER_OPTIM_FORWARD(adagrad, a, p, c, n);
}
void adadelta(const AdadeltaArgs& a, const Param* p, int64_t n) { EMBER_OPTIM_FORWARD(adadelta, a, p, n); }
void lion(const LionArgs& a, const Param* p, int64_t n) { EMBER_OPTIM_FORWARD(lion, a, p, n); }
void rprop(const RpropArgs& a, const Param* p, int64_t n) { EMBER_OPTIM_FORWARD(rprop, a, p, n); }
void asgd(const AsgdArgs& a, const Param* p, const AsgdCoef* c, int64_t n) { EMBER_OPTIM_FORWARD(asgd, a, p, c, n); }

}  // namespace ember::optim::fused

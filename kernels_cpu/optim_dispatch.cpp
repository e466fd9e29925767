// ember::optim::fused::*: forwards each fused optimiser update to the widest instruction-set
// build of kernels_cpu/optim.cpp that this CPU runs, by the same rule as dispatch.cpp
// (AVX2+FMA, else the baseline).

#include "optim_arch.hpp"

namespace ember::optim::fused {
namespace {

bool use_avx2() {
#if defined(EMBER_HAVE_AVX2_OPTIM_BUILD)
  static const bool value = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return value;
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

}  // namespace ember::optim::fused

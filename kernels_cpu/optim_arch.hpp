#pragma once
// The fused optimiser updates each instruction-set build of kernels_cpu/optim.cpp provides, in
// its namespace (ember::cpu::base::optim, ember::cpu::avx2::optim). optim_dispatch.cpp
// forwards ember::optim::fused::* to one of them.

#include <ember/optim/fused.hpp>

#define EMBER_DECLARE_OPTIM_KERNELS(ns)                                                        \
  namespace ember::cpu::ns::optim {                                                           \
  using namespace ember::optim::fused;                                                        \
  void sgd(const SgdArgs& a, const Param* p, const SgdCoef* c, int64_t n);                   \
  void adam(const AdamArgs& a, const Param* p, const AdamCoef* c, int64_t n);                 \
  void adamax(const AdamaxArgs& a, const Param* p, const AdamaxCoef* c, int64_t n);           \
  void nadam(const NAdamArgs& a, const Param* p, const NAdamCoef* c, int64_t n);              \
  void radam(const RAdamArgs& a, const Param* p, const RAdamCoef* c, int64_t n);              \
  void rmsprop(const RMSpropArgs& a, const Param* p, int64_t n);                              \
  void adagrad(const AdagradArgs& a, const Param* p, const AdagradCoef* c, int64_t n);        \
  void adadelta(const AdadeltaArgs& a, const Param* p, int64_t n);                            \
  void lion(const LionArgs& a, const Param* p, int64_t n);                                    \
  void rprop(const RpropArgs& a, const Param* p, int64_t n);                                  \
  void asgd(const AsgdArgs& a, const Param* p, const AsgdCoef* c, int64_t n);                 \
  }

EMBER_DECLARE_OPTIM_KERNELS(base)
#if defined(__x86_64__)
EMBER_DECLARE_OPTIM_KERNELS(avx2)
#define EMBER_HAVE_AVX2_OPTIM_BUILD 1
#endif

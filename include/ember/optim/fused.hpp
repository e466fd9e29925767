#pragma once
/// The fused optimiser updates: the interface between src/optim/ (state, coefficients) and
/// kernels_cpu/optim.cpp (the element loops); internal, not an API for users.
///
/// Each function updates every parameter of one group in one call, one pass over each
/// parameter's elements: it reads the gradient and the state buffers once and writes the
/// parameter and the buffers in place, with no allocation. The operations and their order
/// follow PyTorch's single-tensor implementations, so f64 results agree with PyTorch to a few
/// ulps. Per-parameter scalars that depend on the parameter's step count (bias corrections)
/// are computed by the caller in double and passed in a coefficient array parallel to the
/// parameters. No autograd, no version counters (the caller bumps them), no checks: the
/// caller guarantees contiguous CPU tensors of dtype f32 or f64, gradient and buffers with the
/// parameter's dtype and element count.

#include <ember/core/dtype.hpp>

#include <cstdint>

namespace ember::optim::fused {

/// One parameter's memory. buf[i] are the optimiser's state buffers (see each function).
struct Param {
  void* param = nullptr;
  const void* grad = nullptr;
  void* buf[3] = {nullptr, nullptr, nullptr};
  int64_t numel = 0;
  DType dtype = DType::F32;
};

/// buf[0] = momentum_buffer (when momentum != 0).
struct SgdArgs {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
};
struct SgdCoef {
  bool fresh;  ///< the buffer was just created: it takes the gradient, as PyTorch's first step clones it
};
void sgd(const SgdArgs& a, const Param* p, const SgdCoef* c, int64_t n);

/// Adam and AdamW (decoupled weight decay). buf = exp_avg, exp_avg_sq, max_exp_avg_sq (amsgrad).
struct AdamArgs {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, maximize, decoupled;
};
struct AdamCoef {
  double step_size;  ///< lr / (1 - beta1^step)
  double bias2_sqrt;  ///< sqrt(1 - beta2^step)
};
void adam(const AdamArgs& a, const Param* p, const AdamCoef* c, int64_t n);

/// buf = exp_avg, exp_inf.
struct AdamaxArgs {
  double beta1, beta2, eps, weight_decay;
  bool maximize;
};
struct AdamaxCoef {
  double clr;  ///< lr / (1 - beta1^step)
};
void adamax(const AdamaxArgs& a, const Param* p, const AdamaxCoef* c, int64_t n);

/// buf = exp_avg, exp_avg_sq.
struct NAdamArgs {
  double lr, beta1, beta2, eps, weight_decay;
  bool maximize, decoupled;
};
struct NAdamCoef {
  double bias2;      ///< 1 - beta2^step
  double grad_coef;  ///< -lr (1 - mu) / (1 - mu_product)
  double avg_coef;   ///< -lr mu_next / (1 - mu_product mu_next)
};
void nadam(const NAdamArgs& a, const Param* p, const NAdamCoef* c, int64_t n);

/// buf = exp_avg, exp_avg_sq.
struct RAdamArgs {
  double lr, beta1, beta2, eps, weight_decay;
  bool maximize, decoupled;
};
struct RAdamCoef {
  double bias1;       ///< 1 - beta1^step
  double bias2_sqrt;  ///< sqrt(1 - beta2^step)
  double rect;        ///< the variance rectification term
  bool rectified;     ///< rho_t > 5: use the adaptive step, else the momentum-only step
};
void radam(const RAdamArgs& a, const Param* p, const RAdamCoef* c, int64_t n);

/// buf = square_avg, momentum_buffer (momentum > 0), grad_avg (centered).
struct RMSpropArgs {
  double lr, alpha, eps, weight_decay, momentum;
  bool centered, maximize;
};
void rmsprop(const RMSpropArgs& a, const Param* p, int64_t n);

/// buf = sum.
struct AdagradArgs {
  double eps, weight_decay;
  bool maximize;
};
struct AdagradCoef {
  double clr;  ///< lr / (1 + (step - 1) lr_decay)
};
void adagrad(const AdagradArgs& a, const Param* p, const AdagradCoef* c, int64_t n);

/// buf = square_avg, acc_delta.
struct AdadeltaArgs {
  double lr, rho, eps, weight_decay;
  bool maximize;
};
void adadelta(const AdadeltaArgs& a, const Param* p, int64_t n);

/// buf = exp_avg.
struct LionArgs {
  double lr, beta1, beta2, weight_decay;
  bool maximize;
};
void lion(const LionArgs& a, const Param* p, int64_t n);

/// buf = prev (the last gradient applied, 0 where the sign flipped), step_size.
struct RpropArgs {
  double etaminus, etaplus, step_size_min, step_size_max;
  bool maximize;
};
void rprop(const RpropArgs& a, const Param* p, int64_t n);

/// buf = ax (the average).
struct AsgdArgs {
  double lambd, weight_decay;
  bool maximize;
};
struct AsgdCoef {
  double eta;  ///< this step's step size
  double mu;   ///< the average's weight for this step; 1 = ax copies the parameter
};
void asgd(const AsgdArgs& a, const Param* p, const AsgdCoef* c, int64_t n);

}  // namespace ember::optim::fused

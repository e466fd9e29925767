// Batch normalisation on the CPU (see include/ember/ops/norm_ops.hpp): checks and outputs;
// the kernels are per instruction set (kernels_cpu/batch_norm.cpp). Its own file, so that
// programs without batch normalisation link none of it.

#include <ember/core/device_hooks.hpp>
#include <ember/ops/norm_ops.hpp>

#include <cmath>

namespace ember::ops {
namespace {

void check_channels(const TensorImpl* p, const TensorImpl& x, const char* op, const char* what) {
  if (!p) return;
  EMBER_CHECK(p->numel == x.sizes[1] && p->dtype == x.dtype && p->device() == x.device(),
              "[{}] {} must hold one value per channel ({}) as {} on {}, got shape {} ({} on {})", op, what,
              x.sizes[1], x.dtype, x.device(), p->sizes, p->dtype, p->device());
}

void check_input(const TensorImpl& x, const char* op) {
  EMBER_CHECK(x.dtype == DType::F32 || x.dtype == DType::F64, "[{}] the fused kernel takes f32 or f64, got {}", op,
              x.dtype);
  EMBER_CHECK(x.ndim() >= 2, "[{}] expects (N, C, ...) input, got shape {}", op, x.sizes);
}

}  // namespace

BatchNormResult batch_norm_cpu(const BatchNorm& op, const TensorImpl& x, const TensorImpl* weight,
                               const TensorImpl* bias, const TensorImpl* running_mean, const TensorImpl* running_var) {
  const char* name = "batch_norm";
  check_input(x, name);
  EMBER_CHECK(op.eps >= 0 && std::isfinite(op.eps), "[batch_norm] eps must be finite and >= 0, got {}", op.eps);
  check_channels(weight, x, name, "weight");
  check_channels(bias, x, name, "bias");
  const int64_t c = x.sizes[1], count = c ? x.numel / c : 0;
  if (op.training) {
    EMBER_CHECK(count > 1, "[batch_norm] needs more than one value per channel when training, got input shape {}",
                x.sizes);
  } else {
    EMBER_CHECK(running_mean && running_var, "[batch_norm] evaluation needs running statistics (track_running_stats)");
    check_channels(running_mean, x, name, "running_mean");
    check_channels(running_var, x, name, "running_var");
  }
  TensorRef xc = detail::contiguous_on_device(x, name);
  TensorRef wc = weight ? detail::contiguous_on_device(*weight, name) : TensorRef();
  TensorRef bc = bias ? detail::contiguous_on_device(*bias, name) : TensorRef();
  BatchNormResult r;
  r.y = detail::make_tensor(x.sizes, x.dtype, x.device(), name);
  const int64_t stat_sizes[1] = {c};
  // f64 statistics for an f32 input too (Note [Shifted sums in batch normalisation] in
  // kernels_cpu/batch_norm.cpp).
  r.mean = detail::make_tensor(stat_sizes, DType::F64, x.device(), name);
  r.rstd = detail::make_tensor(stat_sizes, DType::F64, x.device(), name);
  if (op.training) {
    r.var = detail::make_tensor(stat_sizes, DType::F64, x.device(), name);
  } else {
    // The running statistics as the kernel's mean and 1/std.
    TensorRef rm = detail::contiguous_on_device(*running_mean, name), rv = detail::contiguous_on_device(*running_var, name);
    auto fill = [&]<class T>(T*) {
      const T* m = static_cast<const T*>(rm->data());
      const T* v = static_cast<const T*>(rv->data());
      double* mo = static_cast<double*>(r.mean->data());
      double* ro = static_cast<double*>(r.rstd->data());
      for (int64_t k = 0; k < c; ++k) mo[k] = m[k], ro[k] = 1.0 / std::sqrt(static_cast<double>(v[k]) + op.eps);
    };
    if (x.dtype == DType::F32) fill(static_cast<float*>(nullptr));
    else fill(static_cast<double*>(nullptr));
  }
  if (x.numel > 0)
    detail::Kernels<Cpu>::batch_norm(*r.y, *r.mean, r.var.get(), *r.rstd, *xc, wc.get(), bc.get(), op.eps);
  return r;
}

BatchNormGrads batch_norm_backward_cpu(const BatchNormBackward& op, const TensorImpl& dy, const TensorImpl& x,
                                       const TensorImpl& mean, const TensorImpl& rstd, const TensorImpl* weight) {
  const char* name = "batch_norm_backward";
  check_input(x, name);
  EMBER_CHECK(dy.sizes == x.sizes && dy.dtype == x.dtype && mean.numel == x.sizes[1] && rstd.numel == x.sizes[1] &&
                  mean.dtype == DType::F64 && rstd.dtype == DType::F64,
              "[batch_norm_backward] gradient {} ({}) does not match the input {} ({}) and its {} channels of f64 "
              "statistics (got {} and {})",
              dy.sizes, dy.dtype, x.sizes, x.dtype, x.sizes[1], mean.dtype, rstd.dtype);
  check_channels(weight, x, name, "weight");
  TensorRef dyc = detail::contiguous_on_device(dy, name);
  TensorRef xc = detail::contiguous_on_device(x, name);
  TensorRef wc = weight ? detail::contiguous_on_device(*weight, name) : TensorRef();
  BatchNormGrads g;
  const int64_t param_sizes[1] = {x.sizes[1]};
  if (op.need_x) g.dx = detail::make_tensor(x.sizes, x.dtype, x.device(), name);
  if (op.need_weight) g.dweight = detail::make_tensor(param_sizes, x.dtype, x.device(), name);
  if (op.need_bias) g.dbias = detail::make_tensor(param_sizes, x.dtype, x.device(), name);
  if (x.numel > 0) {
    detail::Kernels<Cpu>::batch_norm_backward(g.dx.get(), g.dweight.get(), g.dbias.get(), *dyc, *xc, mean, rstd,
                                              wc.get(), op.training);
  } else {  // nothing to sum over: zero parameter gradients
    if (g.dweight) detail::Kernels<Cpu>::fill(*g.dweight, Scalar(0.0));
    if (g.dbias) detail::Kernels<Cpu>::fill(*g.dbias, Scalar(0.0));
  }
  return g;
}

}  // namespace ember::ops

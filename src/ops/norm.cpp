// Layer normalisation on the CPU (see include/ember/ops/norm_ops.hpp): checks and outputs;
// the kernels are per instruction set (kernels_cpu/layer_norm.cpp).

#include <ember/core/device_hooks.hpp>
#include <ember/ops/norm_ops.hpp>

#include <cmath>

namespace ember::ops {
namespace {

void check_param(const TensorImpl* p, const TensorImpl& x, int64_t cols, const char* what) {
  if (!p) return;
  EMBER_CHECK(p->numel == cols && p->dtype == x.dtype && p->device() == x.device(),
              "[layer_norm] {} must hold the {} normalised elements as {} on {}, got shape {} ({} on {})", what, cols,
              x.dtype, x.device(), p->sizes, p->dtype, p->device());
}

}  // namespace

LayerNormResult layer_norm_cpu(const LayerNorm& op, const TensorImpl& x, const TensorImpl* weight,
                               const TensorImpl* bias) {
  const int64_t cols = op.cols;
  EMBER_CHECK(x.dtype == DType::F32 || x.dtype == DType::F64, "[layer_norm] the fused kernel takes f32 or f64, got {}",
              x.dtype);
  EMBER_CHECK(cols >= 1 && x.numel % cols == 0, "[layer_norm] rows of {} do not tile an input of shape {}", cols,
              x.sizes);
  EMBER_CHECK(op.eps >= 0 && std::isfinite(op.eps), "[layer_norm] eps must be finite and >= 0, got {}", op.eps);
  check_param(weight, x, cols, "weight");
  check_param(bias, x, cols, "bias");
  const int64_t rows = x.numel / cols;
  TensorRef xc = detail::contiguous_on_device(x, "layer_norm");
  TensorRef wc = weight ? detail::contiguous_on_device(*weight, "layer_norm") : TensorRef();
  TensorRef bc = bias ? detail::contiguous_on_device(*bias, "layer_norm") : TensorRef();
  LayerNormResult r;
  r.y = detail::make_tensor(x.sizes, x.dtype, x.device(), "layer_norm");
  const int64_t stat_sizes[1] = {rows};
  // f64 statistics for an f32 input too (Note [Normalisation in f64] in kernels_cpu/layer_norm.cpp).
  r.mean = detail::make_tensor(stat_sizes, DType::F64, x.device(), "layer_norm");
  r.rstd = detail::make_tensor(stat_sizes, DType::F64, x.device(), "layer_norm");
  detail::Kernels<Cpu>::layer_norm(*r.y, *r.mean, *r.rstd, *xc, wc.get(), bc.get(), cols, op.eps);
  return r;
}

LayerNormGrads layer_norm_backward_cpu(const LayerNormBackward& op, const TensorImpl& dy, const TensorImpl& x,
                                       const TensorImpl& mean, const TensorImpl& rstd, const TensorImpl* weight) {
  const int64_t cols = op.cols, rows = cols ? x.numel / cols : 0;
  EMBER_CHECK(dy.sizes == x.sizes && dy.dtype == x.dtype && mean.numel == rows && rstd.numel == rows &&
                  mean.dtype == DType::F64 && rstd.dtype == DType::F64,
              "[layer_norm_backward] gradient {} ({}) does not match the input {} ({}) and its {} rows of f64 "
              "statistics (got {} and {})",
              dy.sizes, dy.dtype, x.sizes, x.dtype, rows, mean.dtype, rstd.dtype);
  check_param(weight, x, cols, "weight");
  TensorRef dyc = detail::contiguous_on_device(dy, "layer_norm_backward");
  TensorRef xc = detail::contiguous_on_device(x, "layer_norm_backward");
  TensorRef wc = weight ? detail::contiguous_on_device(*weight, "layer_norm_backward") : TensorRef();
  LayerNormGrads g;
  const int64_t param_sizes[1] = {cols};
  if (op.need_x) g.dx = detail::make_tensor(x.sizes, x.dtype, x.device(), "layer_norm_backward");
  if (op.need_weight) g.dweight = detail::make_tensor(param_sizes, x.dtype, x.device(), "layer_norm_backward");
  if (op.need_bias) g.dbias = detail::make_tensor(param_sizes, x.dtype, x.device(), "layer_norm_backward");
  detail::Kernels<Cpu>::layer_norm_backward(g.dx.get(), g.dweight.get(), g.dbias.get(), *dyc, *xc, mean, rstd,
                                            wc.get(), cols);
  return g;
}

}  // namespace ember::ops

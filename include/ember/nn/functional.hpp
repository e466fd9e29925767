#pragma once
/// nn::functional: the functional form of layers and losses, composed of differentiable ops.
/// Activations are in functional_activation.hpp, embedding/bilinear in functional_layers.hpp,
/// convolution, pooling and normalisation over channels in functional_conv.hpp.
/// Reductions are "mean" (default), "sum" or "none", as in PyTorch.

#include <ember/autograd/function.hpp>
#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/nn/functional_activation.hpp>
#include <ember/nn/functional_layers.hpp>
#include <ember/nn/reduction.hpp>
#include <ember/ops/functions.hpp>
#include <ember/ops/norm_ops.hpp>
#include <ember/ops/shape_ops.hpp>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>
#include <string_view>

namespace ember::nn::functional {

namespace detail {
/// The number of normalised dims; fails unless x ends with normalized_shape (layer/rms norm).
template <class P>
int64_t check_normalized_shape(const BasicTensor<P>& x, const Shape& normalized_shape, const char* op) {
  const auto k = static_cast<int64_t>(normalized_shape.size());
  EMBER_CHECK(k >= 1 && x.dim() >= k, "[{}] input of shape {} cannot be normalised over shape {}", op, x.sizes(),
              normalized_shape);
  for (int64_t i = 0; i < k; ++i)
    EMBER_CHECK(x.size(x.dim() - k + i) == normalized_shape[i],
                "[{}] input of shape {} does not end with the normalized shape {}", op, x.sizes(), normalized_shape);
  return k;
}
/// f16 and bf16: normalisation layers compute in f32 and round the result once.
inline bool reduced_float(DType t) { return t == DType::F16 || t == DType::BF16; }
template <class P>
BasicTensor<P> to_f32(const BasicTensor<P>& t) {
  return t.defined() ? t.to(DType::F32) : t;
}
/// Under autocast, a bf16/f16 CPU tensor in f32 (what PyTorch's f32 list casts); others as they are.
template <class P>
BasicTensor<P> f32_if_reduced(const BasicTensor<P>& t) {
  return autocast::reduced_on_cpu(t) ? t.to(DType::F32) : t;
}
template <class P>
BasicTensor<P> reduce(const BasicTensor<P>& l, LossReduction reduction, const char* op) {
  if (reduction == "mean") return l.mean();
  if (reduction == "sum") return l.sum();
  EMBER_CHECK(reduction == "none", "[{}] reduction must be 'mean', 'sum' or 'none', got '{}'", op, reduction);
  return l;
}
template <class P>
void check_same_shape(const BasicTensor<P>& a, const BasicTensor<P>& b, const char* op) {
  EMBER_CHECK(a.sizes() == b.sizes(), "[{}] input of shape {} and target of shape {} differ", op, a.sizes(),
              b.sizes());
}
/// x with dim 1 (classes) moved last: (N, C, d...) -> (N, d..., C).
template <class P>
BasicTensor<P> classes_last(const BasicTensor<P>& x) {
  Shape perm{0};
  for (int64_t d = 2; d < x.dim(); ++d) perm.push_back(d);
  perm.push_back(1);
  return x.permute(perm);
}
inline Shape last_dims(int64_t n) {
  Shape d;
  for (int64_t i = 0; i < n; ++i) d.push_back(-1 - i);
  return d;
}
}  // namespace detail

using ember::linear;
using ember::linear_relu;

namespace detail {
/// x * keep * scale, where keep (of shape `mask_shape`, broadcast over x) is 1 with
/// probability 1 - p, and scale is 1 / (1 - p) (0 when p is 1); in x itself when `inplace`.
template <class P>
BasicTensor<P> apply_dropout(const BasicTensor<P>& x, const Shape& mask_shape, double p, bool inplace) {
  BasicTensor<P> keep = rand<P>(mask_shape, TensorOptions(DType::F32).device(x.device())).ge(p).to(x.dtype());
  const double scale = p == 1 ? 0.0 : 1.0 / (1.0 - p);
  if (inplace) return BasicTensor<P>(x).mul_(keep).mul_(scale);
  return x * keep * scale;
}
}  // namespace detail

/// Zeroes elements with probability p and scales the rest by 1 / (1 - p) when training. With
/// `inplace`, x is overwritten and returned (as PyTorch's dropout_).
template <class P>
BasicTensor<P> dropout(const BasicTensor<P>& x, double p = 0.5, bool training = true, bool inplace = false) {
  EMBER_CHECK(p >= 0 && p <= 1, "[dropout] p must be in [0, 1], got {}", p);
  // As PyTorch: p = 0 and p = 1 are defined for any dtype; scaling by 1 / (1 - p) is not.
  EMBER_CHECK(!training || p == 0 || p == 1 || x.is_floating_point(),
              "[dropout] with p = {} needs a floating-point input, got {}", p, x.dtype());
  if (!training || p == 0) return x;
  if (p == 1) {
    const Scalar zero = x.is_floating_point() ? Scalar(0.0) : Scalar(int64_t{0});  // keeps x's dtype
    return inplace ? BasicTensor<P>(x).mul_(zero) : x * zero;
  }
  return detail::apply_dropout(x, x.sizes(), p, inplace);
}
/// Zeroes whole channels (dim 1) of an (N, C, ...) input.
template <class P>
BasicTensor<P> dropout2d(const BasicTensor<P>& x, double p = 0.5, bool training = true, bool inplace = false) {
  EMBER_CHECK(p >= 0 && p <= 1, "[dropout2d] p must be in [0, 1], got {}", p);
  EMBER_CHECK(x.dim() == 3 || x.dim() == 4, "[dropout2d] expects (C, H, W) or (N, C, H, W), got shape {}", x.sizes());
  if (!training || p == 0) return x;
  Shape s = x.sizes();
  for (size_t i = x.dim() == 4 ? 2 : 1; i < s.size(); ++i) s[i] = 1;
  return detail::apply_dropout(x, s, p, inplace);
}

/// Normalises over the last `normalized_ndim` dims, then scales and shifts (weight/bias optional).
template <class P>
BasicTensor<P> layer_norm(const BasicTensor<P>& x, const Shape& normalized_shape, const BasicTensor<P>& weight = {},
                          const BasicTensor<P>& bias = {}, double eps = 1e-5) {
  const int64_t k = detail::check_normalized_shape(x, normalized_shape, "layer_norm");
  if (autocast::reduced_on_cpu(x))
    // Autocast runs layer_norm in f32 (PyTorch's list), so a bf16 activation may meet f32
    // parameters: all of them in f32, through the fused kernel, and an f32 result.
    return layer_norm(x.to(DType::F32), normalized_shape, detail::to_f32(weight), detail::to_f32(bias), eps);
  for (const BasicTensor<P>* p : {&weight, &bias}) {
    if (!p->defined()) continue;
    const char* what = p == &weight ? "weight" : "bias";
    EMBER_CHECK(p->sizes() == normalized_shape, "[layer_norm] {} of shape {} must have the normalized shape {}", what,
                p->sizes(), normalized_shape);
    EMBER_CHECK(p->dtype() == x.dtype() && p->device() == x.device(), "[layer_norm] {} is {} on {}, the input {} on {}",
                what, p->dtype(), p->device(), x.dtype(), x.device());
  }
  if (x.device().is_cpu() && (x.dtype() == DType::F32 || x.dtype() == DType::F64)) {
    // One fused op (ops/norm_ops.hpp); other dtypes and devices take the composite below.
    int64_t cols = 1;
    for (int64_t d : normalized_shape) cols *= d;
    auto r = dispatch<P>(ops::LayerNorm{cols, eps}, x.impl(), weight.defined() ? &weight.impl() : nullptr,
                         bias.defined() ? &bias.impl() : nullptr);
    return BasicTensor<P>::wrap(std::move(r.y));
  }
  if (detail::reduced_float(x.dtype()))  // statistics in f32, as PyTorch (f16 squares overflow at 256)
    return layer_norm(x.to(DType::F32), normalized_shape, detail::to_f32(weight), detail::to_f32(bias), eps)
        .to(x.dtype());
  Shape dims = detail::last_dims(k);
  auto [var, mean] = x.var_mean(dims, 0, true);
  BasicTensor<P> y = (x - mean) * (var + eps).rsqrt();
  if (weight.defined()) y = y * weight;
  if (bias.defined()) y = y + bias;
  return y;
}
/// x / sqrt(mean(x^2) + eps) * weight over the last dims; eps defaults to the dtype's epsilon.
template <class P>
BasicTensor<P> rms_norm(const BasicTensor<P>& x, const Shape& normalized_shape, const BasicTensor<P>& weight = {},
                        std::optional<double> eps = {}) {
  const int64_t k = detail::check_normalized_shape(x, normalized_shape, "rms_norm");
  EMBER_CHECK(!weight.defined() || weight.sizes() == normalized_shape,
              "[rms_norm] weight of shape {} must have the normalized shape {}", weight.sizes(), normalized_shape);
  if (detail::reduced_float(x.dtype())) {  // as PyTorch: in f32, with the input dtype's epsilon
    const double e16 = x.dtype() == DType::F16 ? 0.0009765625 : 0.0078125;
    return rms_norm(x.to(DType::F32), normalized_shape, detail::to_f32(weight), eps.value_or(e16)).to(x.dtype());
  }
  double e = eps.value_or(x.dtype() == DType::F64 ? 2.220446049250313e-16 : 1.1920928955078125e-07);
  BasicTensor<P> y = x * (x.square().mean(detail::last_dims(k), true) + e).rsqrt();
  return weight.defined() ? y * weight : y;
}

// ---- losses ---------------------------------------------------------------------------------
template <class P>
BasicTensor<P> mse_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, LossReduction reduction = "mean") {
  detail::check_same_shape(input, target, "mse_loss");
  return detail::reduce((input - target).square(), reduction, "mse_loss");
}
template <class P>
BasicTensor<P> l1_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, LossReduction reduction = "mean") {
  detail::check_same_shape(input, target, "l1_loss");
  return detail::reduce((input - target).abs(), reduction, "l1_loss");
}
template <class P>
BasicTensor<P> smooth_l1_loss(const BasicTensor<P>& input, const BasicTensor<P>& target,
                              LossReduction reduction = "mean", double beta = 1.0) {
  detail::check_same_shape(input, target, "smooth_l1_loss");
  EMBER_CHECK(beta >= 0, "[smooth_l1_loss] beta must be non-negative, got {}", beta);
  BasicTensor<P> d = (input - target).abs();
  if (beta == 0) return detail::reduce(d, reduction, "smooth_l1_loss");
  return detail::reduce(where(d.lt(beta), d.square() * (0.5 / beta), d - 0.5 * beta), reduction, "smooth_l1_loss");
}
template <class P>
BasicTensor<P> huber_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, LossReduction reduction = "mean",
                          double delta = 1.0) {
  detail::check_same_shape(input, target, "huber_loss");
  EMBER_CHECK(delta > 0, "[huber_loss] delta must be positive, got {}", delta);
  BasicTensor<P> d = (input - target).abs();
  return detail::reduce(where(d.lt(delta), d.square() * 0.5, (d - 0.5 * delta) * delta), reduction, "huber_loss");
}

namespace detail {
/// The checks of a class-weight tensor: one weight per class, on the input's device, and (for
/// class-index targets, which PyTorch refuses otherwise too) in the input's dtype.
template <class P>
void check_class_weight(const BasicTensor<P>& weight, const BasicTensor<P>& input, int64_t classes, bool same_dtype,
                        const char* op) {
  if (!weight.defined()) return;
  EMBER_CHECK(weight.dim() == 1 && weight.size(0) == classes, "[{}] weight of shape {} must have {} elements", op,
              weight.sizes(), classes);
  EMBER_CHECK((!same_dtype || weight.dtype() == input.dtype()) && weight.device() == input.device(),
              "[{}] weight is {} on {} but the input is {} on {}", op, weight.dtype(), weight.device(), input.dtype(),
              input.device());
}

/// The checks nll_loss and cross_entropy share: a floating input of rank >= 1 (classes along
/// dim 1, or dim 0 unbatched) and a target on its device.
template <class P>
void check_class_loss_input(const BasicTensor<P>& input, const BasicTensor<P>& target, const char* op) {
  EMBER_CHECK(input.dim() >= 1, "[{}] input must have at least 1 dim, got a 0-d tensor", op);
  EMBER_CHECK(input.is_floating_point(), "[{}] input must be floating point, got {}", op, input.dtype());
  EMBER_CHECK(target.device() == input.device(), "[{}] target is on {} but the input is on {}", op, target.device(),
              input.device());
}

/// nll_loss, its errors naming `op` (cross_entropy's own name when it calls this).
template <class P>
BasicTensor<P> nll_loss_named(const BasicTensor<P>& input, const BasicTensor<P>& target, const BasicTensor<P>& weight,
                              int64_t ignore_index, LossReduction reduction, const char* op) {
  if (autocast::reduced_on_cpu(input) || autocast::reduced_on_cpu(weight))
    // Autocast runs nll_loss in f32 (PyTorch's list): the bf16/f16 operands go to f32 there.
    return nll_loss_named(f32_if_reduced(input), target, f32_if_reduced(weight), ignore_index, reduction, op);
  check_class_loss_input(input, target, op);
  EMBER_CHECK(target.dtype() == DType::I64 || target.dtype() == DType::I32,
              "[{}] target must hold class indices (i64), got {}", op, target.dtype());
  bool batched = input.dim() >= 2;
  int64_t c = batched ? input.size(1) : input.size(0);
  Shape expect;
  if (batched) {
    expect.push_back(input.size(0));
    for (int64_t d = 2; d < input.dim(); ++d) expect.push_back(input.size(d));
  }
  EMBER_CHECK(target.sizes() == expect, "[{}] target of shape {} does not match input of shape {} (expected {})", op,
              target.sizes(), input.sizes(), expect);
  check_class_weight(weight, input, c, true, op);
  BasicTensor<P> t = target.to(DType::I64);
  if (!weight.defined() && input.dim() == 2 && t.is_cpu() && (reduction == "mean" || reduction == "sum")) {
    // The common case: every target a class (checked here on the host), so the loss is minus
    // the mean or sum of the picked log-probabilities: one gather and one reduction instead
    // of the ~15 small ops of the general path (which a batch of 32 pays in microseconds).
    BasicTensor<P> tc = t.contiguous();
    const int64_t* tp = tc.template data_ptr<int64_t>();
    bool ignored = false;
    for (int64_t i = 0; i < tc.numel() && !ignored; ++i) {
      ignored = tp[i] == ignore_index;
      EMBER_CHECK(ignored || (tp[i] >= 0 && tp[i] < c),
                  "[{}] target index {} is outside [0, {}) (and is not ignore_index {})", op, tp[i], c, ignore_index);
    }
    if (!ignored) {
      BasicTensor<P> picked = gather(input, 1, tc.unsqueeze(1));
      return reduction == "mean" ? picked.mean().neg() : picked.sum().neg();
    }
  }
  BasicTensor<P> valid = t.ne(ignore_index);
  {
    BasicTensor<P> tv = where(valid, t, int64_t{0});
    bool ok = tv.numel() == 0 || (tv.ge(int64_t{0}).logical_and(tv.lt(c))).all().template item<bool>();
    EMBER_CHECK(ok, "[{}] a target index is outside [0, {}) (and is not ignore_index {})", op, c, ignore_index);
  }
  BasicTensor<P> safe = where(valid, t, int64_t{0});
  // Move classes last, gather the target's log-probability.
  BasicTensor<P> lp = batched ? detail::classes_last(input) : input;
  BasicTensor<P> picked = gather(lp, -1, safe.unsqueeze(-1)).squeeze(-1);
  BasicTensor<P> w = weight.defined() ? index_select(weight, 0, safe.reshape({-1})).reshape(safe.sizes())
                                      : ones_like(picked);
  w = where(valid, w, 0.0).to(input.dtype());
  // Ignored targets count as exactly 0, also where the class-0 log-probability they picked
  // (a placeholder) is -inf: -(-inf) * 0 would be NaN.
  BasicTensor<P> losses = where(valid, picked.neg() * w, 0.0);
  if (reduction == "mean") return losses.sum() / w.sum();
  return reduce(losses, reduction, op);
}
}  // namespace detail

/// Negative log-likelihood of log-probabilities `input` (N, C[, d...]) or (C) at class
/// indices `target` (N[, d...]) or (); weight per class; ignore_index targets count nowhere.
template <class P>
BasicTensor<P> nll_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, const BasicTensor<P>& weight = {},
                        int64_t ignore_index = -100, LossReduction reduction = "mean") {
  return detail::nll_loss_named(input, target, weight, ignore_index, reduction, "nll_loss");
}

/// Cross entropy of logits `input` (N, C[, d...]) or (C) against class indices or class
/// probabilities (same shape as input); weight per class, ignore_index, label_smoothing.
template <class P>
BasicTensor<P> cross_entropy(const BasicTensor<P>& input, const BasicTensor<P>& target,
                             const BasicTensor<P>& weight = {}, int64_t ignore_index = -100,
                             LossReduction reduction = "mean", double label_smoothing = 0.0) {
  EMBER_CHECK(label_smoothing >= 0 && label_smoothing <= 1, "[cross_entropy] label_smoothing must be in [0, 1], got {}",
              label_smoothing);
  if (autocast::reduced_on_cpu(input) || autocast::reduced_on_cpu(weight) || autocast::reduced_on_cpu(target))
    // Autocast runs cross_entropy in f32 (PyTorch's list), its smoothing and mean included.
    return cross_entropy(detail::f32_if_reduced(input), detail::f32_if_reduced(target), detail::f32_if_reduced(weight),
                         ignore_index, reduction, label_smoothing);
  detail::check_class_loss_input(input, target, "cross_entropy");
  int64_t cdim = input.dim() >= 2 ? 1 : 0;
  int64_t c = input.size(cdim);
  // Class indices: nll_loss checks the weight's dtype too. Probabilities promote with the
  // input and weight, as PyTorch's.
  detail::check_class_weight(weight, input, c, false, "cross_entropy");
  BasicTensor<P> lp = input.log_softmax(cdim);
  BasicTensor<P> wc;  // weight broadcast along the class dim
  if (weight.defined()) {
    Shape ws(static_cast<size_t>(input.dim()), 1);
    ws[cdim] = c;
    wc = weight.reshape(ws);
  }
  if (target.is_floating_point()) {  // class probabilities
    EMBER_CHECK(target.sizes() == input.sizes(), "[cross_entropy] probability target of shape {} must match input {}",
                target.sizes(), input.sizes());
    EMBER_CHECK(ignore_index < 0, "[cross_entropy] ignore_index ({}) is not supported for probability targets",
                ignore_index);
    BasicTensor<P> tgt = label_smoothing > 0 ? target * (1 - label_smoothing) + label_smoothing / c : target;
    BasicTensor<P> per = wc.defined() ? lp * tgt * wc : lp * tgt;
    BasicTensor<P> losses = per.sum({cdim}).neg();
    if (reduction == "mean") return input.dim() >= 2 ? losses.sum() / static_cast<double>(losses.numel()) : losses;
    return detail::reduce(losses, reduction, "cross_entropy");
  }
  BasicTensor<P> nll =
      detail::nll_loss_named(lp, target, weight, ignore_index, label_smoothing > 0 ? "none" : reduction, "cross_entropy");
  if (label_smoothing == 0) return nll;
  // Smoothing: (1 - eps) * nll + eps * mean over classes of -log p (weighted as PyTorch does).
  BasicTensor<P> t = target.to(DType::I64);
  BasicTensor<P> valid = t.ne(ignore_index);
  BasicTensor<P> smooth = (wc.defined() ? lp * wc : lp).sum({cdim}).neg();
  smooth = where(valid, smooth, 0.0);
  BasicTensor<P> losses = nll * (1 - label_smoothing) + smooth * (label_smoothing / c);
  if (reduction == "mean") {
    BasicTensor<P> denom;
    if (weight.defined()) {
      BasicTensor<P> safe = where(valid, t, int64_t{0});
      denom = where(valid, index_select(weight, 0, safe.reshape({-1})).reshape(safe.sizes()), 0.0).sum();
    } else {
      denom = valid.to(input.dtype()).sum();
    }
    // nll (reduction none) is already weighted; the smoothing term is divided by the same total.
    return losses.sum() / denom;
  }
  return detail::reduce(losses, reduction, "cross_entropy");
}

namespace detail {
/// -(t log x + (1 - t) log(1 - x)) with the logs clamped at -100, as PyTorch, so that x = 0
/// and 1 give finite losses.
template <class P>
BasicTensor<P> bce_terms(const BasicTensor<P>& x, const BasicTensor<P>& t) {
  return (t * x.log().clamp_min(-100.0) + (1.0 - t) * (1.0 - x).log().clamp_min(-100.0)).neg();
}

/// Binary cross-entropy per element with PyTorch's derivative for the input,
/// (x - t) / max(x (1 - x), 1e-12): finite at x = 0 and 1, where a sigmoid saturates in
/// float. Differentiating the clamped logs would give 0 * inf = NaN there.
template <class P>
struct BinaryCrossEntropy : autograd::Function<BinaryCrossEntropy<P>, P> {
  using T = BasicTensor<P>;
  static constexpr const char* name = "BinaryCrossEntropy";
  static T forward(autograd::BasicAutogradContext<P>* ctx, const T& x, const T& t) {
    ctx->save_for_backward({x, t});
    return bce_terms(x, t);
  }
  static std::vector<T> backward(autograd::BasicAutogradContext<P>* ctx, std::vector<T> grads) {
    std::vector<T> saved = ctx->get_saved_variables();
    const T &x = saved[0], &t = saved[1];
    T gx, gt;
    if (ctx->needs_input_grad(0)) gx = grads[0] * (x - t) / (x * (1.0 - x)).clamp_min(1e-12);
    if (ctx->needs_input_grad(1)) gt = grads[0] * (clamped_log(1.0 - x) - clamped_log(x));
    return {gx, gt};
  }
  /// log(v) clamped at -100, as bce_terms; at v = 0 the log reads 1 through a where, so that a
  /// recorded backward (create_graph) divides its zero gradient by 1, not 0 / 0 = NaN.
  static T clamped_log(const T& v) {
    T pos = v.gt(0.0);
    return where(pos, where(pos, v, 1.0).log().clamp_min(-100.0), -100.0);
  }
};
}  // namespace detail

template <class P>
BasicTensor<P> binary_cross_entropy(const BasicTensor<P>& input, const BasicTensor<P>& target,
                                    const BasicTensor<P>& weight = {}, LossReduction reduction = "mean") {
  detail::check_same_shape(input, target, "binary_cross_entropy");
  {
    ember::detail::NoGradGuardFor<P> ng;
    bool ok = input.numel() == 0 || input.ge(0.0).logical_and(input.le(1.0)).all().template item<bool>();
    EMBER_CHECK(ok, "[binary_cross_entropy] input values must be probabilities in [0, 1]");
  }
  BasicTensor<P> l;
  if constexpr (autograd::detail::has_autograd<P>()) {
    if (ember::detail::grad_enabled<P>() && (input.requires_grad() || target.requires_grad()))
      l = detail::BinaryCrossEntropy<P>::apply(input, target);
  }
  if (!l.defined()) l = detail::bce_terms(input, target);
  if (weight.defined()) l = l * weight;
  return detail::reduce(l, reduction, "binary_cross_entropy");
}

template <class P>
BasicTensor<P> binary_cross_entropy_with_logits(const BasicTensor<P>& input, const BasicTensor<P>& target,
                                                const BasicTensor<P>& weight = {}, LossReduction reduction = "mean",
                                                const BasicTensor<P>& pos_weight = {}) {
  detail::check_same_shape(input, target, "binary_cross_entropy_with_logits");
  // log(1 + exp(-x)) computed stably as softplus(-x).
  BasicTensor<P> log_sig_neg = input.neg().softplus(1.0, 20.0);  // -log sigmoid(x)
  BasicTensor<P> l;
  if (pos_weight.defined()) {
    BasicTensor<P> lw = (pos_weight - 1.0) * target + 1.0;
    l = (1.0 - target) * input + lw * log_sig_neg;
  } else {
    l = (1.0 - target) * input + log_sig_neg;
  }
  if (weight.defined()) l = l * weight;
  return detail::reduce(l, reduction, "binary_cross_entropy_with_logits");
}

/// KL divergence with `input` as log-probabilities; target as probabilities (or log-probs).
template <class P>
BasicTensor<P> kl_div(const BasicTensor<P>& input, const BasicTensor<P>& target, LossReduction reduction = "mean",
                      bool log_target = false) {
  BasicTensor<P> l = log_target ? target.exp() * (target - input)
                                : where(target.gt(0.0), target * (target.log() - input), 0.0);
  if (reduction == "batchmean") return l.sum() / static_cast<double>(input.dim() > 0 ? input.size(0) : 1);
  return detail::reduce(l, reduction, "kl_div");
}

/// The cosine of a and b along dim, after broadcasting them together (as PyTorch: (N, D) and
/// (D) give N cosines).
template <class P>
BasicTensor<P> cosine_similarity(const BasicTensor<P>& a, const BasicTensor<P>& b, int64_t dim = 1, double eps = 1e-8) {
  const Shape shape = ops::broadcast_shapes(a.sizes(), b.sizes(), "cosine_similarity");
  const BasicTensor<P> ea = a.expand(shape), eb = b.expand(shape);
  BasicTensor<P> na = ea.square().sum({dim}).clamp_min(eps * eps).sqrt();
  BasicTensor<P> nb = eb.square().sum({dim}).clamp_min(eps * eps).sqrt();
  return (ea * eb).sum({dim}) / (na * nb);
}

/// 1 - cos(a, b) where y is 1, max(0, cos - margin) where y is -1, 0 for other labels (as
/// PyTorch). a, b: (N, D) with y (N), or (D) with a 0-d y. The cosine is PyTorch's:
/// a.b / sqrt((|a|^2 + 1e-12) (|b|^2 + 1e-12)).
template <class P>
BasicTensor<P> cosine_embedding_loss(const BasicTensor<P>& a, const BasicTensor<P>& b, const BasicTensor<P>& y,
                                     double margin = 0.0, LossReduction reduction = "mean") {
  EMBER_CHECK(a.sizes() == b.sizes() && (a.dim() == 1 || a.dim() == 2) && y.dim() == a.dim() - 1 &&
                  (y.dim() == 0 || y.size(0) == a.size(0)),
              "[cosine_embedding_loss] expects inputs (N, D) with a target (N), or (D) with a 0-d target; got {}, {} "
              "and target {}",
              a.sizes(), b.sizes(), y.sizes());
  const int64_t d = a.dim() - 1;
  constexpr double kEps = 1e-12;
  BasicTensor<P> cos = (a * b).sum({d}) / ((a.square().sum({d}) + kEps) * (b.square().sum({d}) + kEps)).sqrt();
  BasicTensor<P> l = where(y.eq(1.0), 1.0 - cos, 0.0) + where(y.eq(-1.0), (cos - margin).clamp_min(0.0), 0.0);
  return detail::reduce(l, reduction, "cosine_embedding_loss");
}

template <class P>
BasicTensor<P> margin_ranking_loss(const BasicTensor<P>& a, const BasicTensor<P>& b, const BasicTensor<P>& y,
                                   double margin = 0.0, LossReduction reduction = "mean") {
  EMBER_CHECK(a.dim() == b.dim() && a.dim() == y.dim(),
              "[margin_ranking_loss] inputs and target must have the same number of dims, got {}, {} and {}",
              a.sizes(), b.sizes(), y.sizes());
  return detail::reduce((y.neg() * (a - b) + margin).clamp_min(0.0), reduction, "margin_ranking_loss");
}

template <class P>
BasicTensor<P> triplet_margin_loss(const BasicTensor<P>& anchor, const BasicTensor<P>& pos, const BasicTensor<P>& neg,
                                   double margin = 1.0, double p = 2.0, double eps = 1e-6, bool swap = false,
                                   LossReduction reduction = "mean") {
  EMBER_CHECK(anchor.dim() == pos.dim() && anchor.dim() == neg.dim() && anchor.dim() >= 1,
              "[triplet_margin_loss] anchor, positive and negative must have the same number of dims (>= 1), got {}, "
              "{} and {}",
              anchor.sizes(), pos.sizes(), neg.sizes());
  BasicTensor<P> dp = pairwise_distance(anchor, pos, p, eps), dn = pairwise_distance(anchor, neg, p, eps);
  if (swap) dn = dn.minimum(pairwise_distance(pos, neg, p, eps));
  return detail::reduce((dp - dn + margin).clamp_min(0.0), reduction, "triplet_margin_loss");
}

namespace detail {
/// logsumexp over dim 0 that is -inf with a zero gradient where every term is -inf (an
/// unreachable CTC state). The plain form's gradient there is NaN: exp(-inf - -inf), or
/// 0 * inf through the log, and the NaN would spread to every logit through the recursion.
template <class P>
BasicTensor<P> logsumexp0(const BasicTensor<P>& s) {
  const double neg_inf = -std::numeric_limits<double>::infinity();
  BasicTensor<P> dead = s.detach().amax({0}).eq(neg_inf);
  BasicTensor<P> safe = where(dead.unsqueeze(0), 0.0, s);
  return where(dead, neg_inf, safe.logsumexp({0}));
}

/// An option's tensor (held as the default policy's Tensor, as libtorch's options hold
/// torch::Tensor) as a tensor of the caller's policy; undefined stays undefined. For the
/// FuncOptions forms (functional_options*.hpp).
template <class P>
BasicTensor<P> option_tensor(const Tensor& t) {
  return BasicTensor<P>(t.impl_ref());
}

/// The values of a 0-d or 1-d integer tensor of lengths (ctc_loss's, given as tensors).
template <class P>
std::vector<int64_t> lengths_of(const BasicTensor<P>& t, const char* what) {
  EMBER_CHECK(t.defined() && t.dim() <= 1 && !t.is_floating_point() && t.dtype() != DType::Bool,
              "[ctc_loss] {} must be a 0-d or 1-d integer tensor, got {}", what,
              t.defined() ? EMBER_FORMAT("{} of shape {}", t.dtype(), t.sizes()) : std::string("an undefined tensor"));
  return host_indices(t.to(DType::I64));
}
}  // namespace detail

/// Connectionist temporal classification loss. log_probs (T, N, C) (log-softmax over C), or
/// (T, C) for one unbatched sequence; targets (N, S) padded or 1-d concatenated (their
/// lengths summing to its size), input_lengths (N), target_lengths (N).
/// Computed by the forward (alpha) recursion in log space with differentiable ops, so the
/// gradient is autograd's: the exact gradient with respect to log_probs. (PyTorch's kernel
/// returns a gradient that assumes log_probs came from log_softmax; the two agree after one.)
/// reduction "mean" divides each loss by its target length first.
template <class P>
BasicTensor<P> ctc_loss(const BasicTensor<P>& log_probs, const BasicTensor<P>& targets,
                        const std::vector<int64_t>& input_lengths, const std::vector<int64_t>& target_lengths,
                        int64_t blank = 0, LossReduction reduction = "mean", bool zero_infinity = false) {
  if (log_probs.dim() == 2) {  // one sequence: PyTorch's unbatched form, a 0-d loss
    EMBER_CHECK(targets.dim() == 1, "[ctc_loss] unbatched log_probs {} need 1-d targets, got shape {}",
                log_probs.sizes(), targets.sizes());
    BasicTensor<P> l = ctc_loss(log_probs.unsqueeze(1), targets, input_lengths, target_lengths, blank, reduction,
                                zero_infinity);
    return reduction == "none" ? l.squeeze(0) : l;
  }
  EMBER_CHECK(log_probs.dim() == 3, "[ctc_loss] log_probs must be (T, N, C) or (T, C), got shape {}",
              log_probs.sizes());
  int64_t t_max = log_probs.size(0), n = log_probs.size(1), c = log_probs.size(2);
  EMBER_CHECK(static_cast<int64_t>(input_lengths.size()) == n && static_cast<int64_t>(target_lengths.size()) == n,
              "[ctc_loss] need {} input and target lengths, got {} and {}", n, input_lengths.size(),
              target_lengths.size());
  EMBER_CHECK(blank >= 0 && blank < c, "[ctc_loss] blank {} is not a class of {}", blank, c);
  EMBER_CHECK(!targets.is_floating_point() && targets.dtype() != DType::Bool,
              "[ctc_loss] targets must hold class indices (an integer dtype), got {}", targets.dtype());
  // The targets' shape against the lengths, before any label is read.
  int64_t total = 0, longest = 0;
  for (int64_t b = 0; b < n; ++b) {
    EMBER_CHECK(target_lengths[b] >= 0, "[ctc_loss] target length {} of sample {} is negative", target_lengths[b], b);
    total = ember::detail::checked_add(total, target_lengths[b], "ctc_loss");
    longest = std::max(longest, target_lengths[b]);
  }
  EMBER_CHECK((targets.dim() == 1 && targets.size(0) == total) ||
                  (targets.dim() == 2 && targets.size(0) == n && targets.size(1) >= longest),
              "[ctc_loss] targets of shape {} fit neither the concatenated form ({} labels: the sum of the target "
              "lengths) nor the padded one ({} rows of at least {})",
              targets.sizes(), total, n, longest);
  const std::vector<int64_t> labels = detail::host_indices(targets.to(DType::I64));  // row-major
  const double neg_inf = -std::numeric_limits<double>::infinity();
  std::vector<BasicTensor<P>> losses;
  int64_t offset = 0;
  for (int64_t b = 0; b < n; ++b) {
    int64_t len = input_lengths[b], s = target_lengths[b];
    EMBER_CHECK(len >= 0 && len <= t_max, "[ctc_loss] input length {} of sample {} is outside [0, {}]", len, b, t_max);
    std::vector<int64_t> ext(static_cast<size_t>(2 * s + 1), blank);  // blank, l1, blank, l2, ..., blank
    for (int64_t i = 0; i < s; ++i) {
      const int64_t at = targets.dim() == 2 ? b * targets.size(1) + i : offset + i;
      const int64_t lab = labels[static_cast<size_t>(at)];
      EMBER_CHECK(lab >= 0 && lab < c && lab != blank, "[ctc_loss] target {} of sample {} is not a valid label", lab, b);
      ext[2 * i + 1] = lab;
    }
    offset += s;
    int64_t m = 2 * s + 1;
    // Where the skip transition s-2 -> s is allowed (a label differing from the one two back).
    std::vector<uint8_t> skip(static_cast<size_t>(m), 0);
    for (int64_t i = 2; i < m; ++i) skip[i] = ext[i] != blank && ext[i] != ext[i - 2];
    BasicTensor<P> ext_t = ember::detail::index_tensor_1d<P>(ext, log_probs.device());
    BasicTensor<P> skip_t = ember::detail::index_tensor_1d<P>(std::vector<int64_t>(skip.begin(), skip.end()),
                                                       log_probs.device()).ne(int64_t{0});
    BasicTensor<P> lp = log_probs.select(1, b);  // (T, C)
    if (len == 0) {  // no frames: 0 for an empty target, else impossible (log_probs not read)
      // The sum of no frames keeps the loss on log_probs' graph, with a zero gradient.
      BasicTensor<P> none = lp.narrow(0, 0, 0).sum();
      const bool impossible = s > 0 && !zero_infinity;
      losses.push_back(impossible ? none + std::numeric_limits<double>::infinity() : none);
      continue;
    }
    BasicTensor<P> emit0 = index_select(lp.select(0, 0), 0, ext_t);  // (m)
    BasicTensor<P> init = full<P>({m}, neg_inf, TensorOptions(lp.dtype()).device(lp.device()));
    const BasicTensor<P> first_two = arange<P>(m, TensorOptions(DType::I64).device(lp.device())).lt(int64_t{2});
    BasicTensor<P> alpha = where(first_two, emit0, init);
    for (int64_t t = 1; t < len; ++t) {
      BasicTensor<P> a1 = pad(alpha, {1, 0}, "constant", neg_inf).narrow(0, 0, m);
      BasicTensor<P> a2 = where(skip_t, pad(alpha, {2, 0}, "constant", neg_inf).narrow(0, 0, m), neg_inf);
      BasicTensor<P> stacked = stack(std::vector<BasicTensor<P>>{alpha, a1, a2}, 0);
      alpha = detail::logsumexp0(stacked) + index_select(lp.select(0, t), 0, ext_t);
    }
    BasicTensor<P> tail = m >= 2 ? alpha.narrow(0, m - 2, 2) : alpha;
    BasicTensor<P> l = detail::logsumexp0(tail).neg();
    if (zero_infinity) l = where(l.isinf(), 0.0, l);
    losses.push_back(l);
  }
  if (losses.empty()) {  // an empty batch: sum 0, mean NaN (0 / 0), none empty, as PyTorch
    return detail::reduce(empty<P>({0}, TensorOptions(log_probs.dtype()).device(log_probs.device())), reduction,
                          "ctc_loss");
  }
  BasicTensor<P> all = stack(losses, 0);
  if (reduction == "mean") {
    std::vector<double> tl;
    for (int64_t v : target_lengths) tl.push_back(static_cast<double>(std::max<int64_t>(v, 1)));
    BasicTensor<P> div = from_blob<P>(tl.data(), {n}, TensorOptions(DType::F64)).clone().to(all.dtype());
    return (all / div.to(all.device())).mean();
  }
  return detail::reduce(all, reduction, "ctc_loss");
}

}  // namespace ember::nn::functional

namespace ember::nn {
namespace F = functional;
}  // namespace ember::nn

#pragma once
/// nn::functional's margin and multi-label losses, as torch.nn.functional's:
/// soft_margin_loss, hinge_embedding_loss, multi_margin_loss, multilabel_margin_loss,
/// multilabel_soft_margin_loss, triplet_margin_with_distance_loss. Each is composed of
/// differentiable ops, so its gradient is autograd's.

#include <ember/nn/functional.hpp>
#include <ember/nn/functional_activation.hpp>
#include <ember/nn/functional_layers.hpp>

#include <algorithm>
#include <functional>
#include <vector>

namespace ember::nn::functional {

namespace detail {
/// (N, C) input, or (C): the class-score losses' input (their targets are checked by the
/// callers' shape checks and host_labels).
template <class P>
void check_class_scores(const BasicTensor<P>& input, const char* op) {
  EMBER_CHECK(input.dim() == 1 || input.dim() == 2, "[{}] expects (N, C) or (C) input, got shape {}", op,
              input.sizes());
  EMBER_CHECK(input.is_floating_point(), "[{}] needs a floating-point input, got {}", op, input.dtype());
  EMBER_CHECK(input.size(-1) > 0, "[{}] input of shape {} has no classes", op, input.sizes());
}

/// The class indices of `target` as a host vector, each checked against [lo, classes).
template <class P>
std::vector<int64_t> host_labels(const BasicTensor<P>& target, int64_t lo, int64_t classes, const char* op) {
  EMBER_CHECK(target.dtype() == DType::I64 || target.dtype() == DType::I32,
              "[{}] target must hold class indices (i64 or i32), got {}", op, target.dtype());
  std::vector<int64_t> v = host_indices(target.to(DType::I64));
  for (int64_t c : v)
    EMBER_CHECK(c >= lo && c < classes, "[{}] target {} is out of range for {} classes", op, c, classes);
  return v;
}

/// A host vector of doubles as a tensor of `like`'s dtype and device, of `shape`.
template <class P>
BasicTensor<P> host_tensor(std::vector<double> v, const Shape& shape, const BasicTensor<P>& like) {
  return from_blob<P>(v.data(), shape, TensorOptions(DType::F64)).clone().to(like.dtype()).to(like.device());
}
}  // namespace detail

/// log(1 + exp(-y x)) per element (y = +1 or -1), as softplus(-y x) so that it stays finite.
template <class P>
BasicTensor<P> soft_margin_loss(const BasicTensor<P>& input, const BasicTensor<P>& target,
                                LossReduction reduction = "mean") {
  detail::check_same_shape(input, target, "soft_margin_loss");
  return detail::reduce((input.neg() * target).softplus(1.0, 20.0), reduction, "soft_margin_loss");
}

/// x where y is 1, max(0, margin - x) where y is -1 (and their sum for any other label, as
/// PyTorch's): a loss on distances x, small for similar pairs (1) and above margin otherwise.
template <class P>
BasicTensor<P> hinge_embedding_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, double margin = 1.0,
                                    LossReduction reduction = "mean") {
  detail::check_same_shape(input, target, "hinge_embedding_loss");
  BasicTensor<P> l = where(target.ne(1.0), (margin - input).clamp_min(0.0), 0.0) + where(target.ne(-1.0), input, 0.0);
  return detail::reduce(l, reduction, "hinge_embedding_loss");
}

/// Multi-class hinge loss: per sample, sum over the classes i other than the target y of
/// max(0, margin - x[y] + x[i])^p (p = 1 or 2), times weight[y] if given, over C.
template <class P>
BasicTensor<P> multi_margin_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, int64_t p = 1,
                                 double margin = 1.0, const BasicTensor<P>& weight = {},
                                 LossReduction reduction = "mean") {
  constexpr const char* op = "multi_margin_loss";
  detail::check_class_scores(input, op);
  EMBER_CHECK(p == 1 || p == 2, "[{}] p must be 1 or 2, got {}", op, p);
  const int64_t c = input.size(-1);
  const bool single = input.dim() == 1;
  EMBER_CHECK(single ? target.numel() == 1 && target.dim() <= 1 : target.dim() == 1 && target.size(0) == input.size(0),
              "[{}] input of shape {} needs {} targets, got shape {}", op, input.sizes(),
              single ? "one (0-d or [1])" : EMBER_FORMAT("[{}]", input.size(0)), target.sizes());
  EMBER_CHECK(!weight.defined() || (weight.dim() == 1 && weight.size(0) == c),
              "[{}] weight must have shape [{}], got {}", op, c, weight.defined() ? weight.sizes() : Shape{});
  (void)detail::host_labels(target, 0, c, op);
  BasicTensor<P> x = single ? input.unsqueeze(0) : input;
  BasicTensor<P> t = target.to(DType::I64).reshape({-1, 1});
  BasicTensor<P> z = (margin - x.gather(1, t) + x).clamp_min(0.0);
  if (p == 2) z = z.square();
  z = where(one_hot(t.squeeze(1), c).to(DType::Bool), 0.0, z);  // the target's own term is left out
  if (weight.defined()) z = z * weight.index_select(0, t.squeeze(1)).unsqueeze(1);
  BasicTensor<P> l = z.sum({1}) / static_cast<double>(c);
  return detail::reduce(single ? l.squeeze(0) : l, reduction, op);
}

/// Multi-label hinge loss. target (input's shape) lists each sample's classes, ended by the
/// first -1 (or by the row's end); per sample, the sum over listed classes j and unlisted
/// classes i of max(0, 1 - (x[j] - x[i])), over C.
template <class P>
BasicTensor<P> multilabel_margin_loss(const BasicTensor<P>& input, const BasicTensor<P>& target,
                                      LossReduction reduction = "mean") {
  constexpr const char* op = "multilabel_margin_loss";
  detail::check_class_scores(input, op);
  EMBER_CHECK(target.sizes() == input.sizes(), "[{}] target must have the input's shape {}, got {}", op,
              input.sizes(), target.sizes());
  const bool single = input.dim() == 1;
  BasicTensor<P> x = single ? input.unsqueeze(0) : input;
  const int64_t n = x.size(0), c = x.size(1);
  const std::vector<int64_t> labels = detail::host_labels(target, -1, c, op);
  // Per sample: its listed classes (before the first -1; a repeated label counts again, as
  // PyTorch's loop) and which classes are not listed.
  std::vector<int64_t> listed(static_cast<size_t>(n), 0);
  std::vector<double> unlisted(static_cast<size_t>(n * c), 1.0);
  int64_t most = 0;
  for (int64_t s = 0; s < n; ++s) {
    int64_t& k = listed[static_cast<size_t>(s)];
    while (k < c && labels[static_cast<size_t>(s * c + k)] >= 0) {
      unlisted[static_cast<size_t>(s * c + labels[static_cast<size_t>(s * c + k)])] = 0.0;
      ++k;
    }
    most = std::max(most, k);
  }
  BasicTensor<P> other = detail::host_tensor(std::move(unlisted), {n, c}, x);
  // Slot k: each sample's k-th listed class j against every unlisted class i, max(0, 1 - x_j
  // + x_i); N x C at a time (not N x C x C), one slot per listed label.
  BasicTensor<P> l = x.narrow(1, 0, 0).sum({1});  // zeros, connected to x
  for (int64_t k = 0; k < most; ++k) {
    std::vector<int64_t> cls(static_cast<size_t>(n));
    std::vector<double> valid(static_cast<size_t>(n));
    for (int64_t s = 0; s < n; ++s) {
      const bool in = k < listed[static_cast<size_t>(s)];
      cls[static_cast<size_t>(s)] = in ? labels[static_cast<size_t>(s * c + k)] : 0;
      valid[static_cast<size_t>(s)] = in ? 1.0 : 0.0;
    }
    BasicTensor<P> j = ember::detail::index_tensor_1d<P>(std::move(cls), x.device()).unsqueeze(1);
    BasicTensor<P> hinge = (1.0 - x.gather(1, j) + x).clamp_min(0.0) * other;
    l = l + hinge.sum({1}) * detail::host_tensor(std::move(valid), {n}, x);
  }
  l = l / static_cast<double>(c);
  return detail::reduce(single ? l.squeeze(0) : l, reduction, op);
}

/// Multi-label one-versus-all loss: per sample, the mean over classes (the last dim) of
/// -(y log sigmoid(x) + (1 - y) log sigmoid(-x)), each class times weight[c] if given.
template <class P>
BasicTensor<P> multilabel_soft_margin_loss(const BasicTensor<P>& input, const BasicTensor<P>& target,
                                           const BasicTensor<P>& weight = {}, LossReduction reduction = "mean") {
  constexpr const char* op = "multilabel_soft_margin_loss";
  detail::check_same_shape(input, target, op);
  EMBER_CHECK(input.dim() >= 1 && input.size(-1) > 0, "[{}] expects input with classes in its last dim, got shape {}",
              op, input.sizes());
  const int64_t c = input.size(-1);
  EMBER_CHECK(!weight.defined() || (weight.dim() == 1 && weight.size(0) == c),
              "[{}] weight must have shape [{}], got {}", op, c, weight.defined() ? weight.sizes() : Shape{});
  BasicTensor<P> l = (target * logsigmoid(input) + (1.0 - target) * logsigmoid(input.neg())).neg();
  if (weight.defined()) l = l * weight;
  return detail::reduce(l.sum({-1}) / static_cast<double>(c), reduction, op);
}

/// A distance between two batches of vectors, for triplet_margin_with_distance_loss.
template <class P>
using DistanceFunction = std::function<BasicTensor<P>(const BasicTensor<P>&, const BasicTensor<P>&)>;

/// max(0, margin + d(anchor, positive) - d(anchor, negative)) with any distance d (default:
/// pairwise_distance); with swap, d(anchor, negative) is replaced by d(positive, negative)
/// where that is smaller.
template <class P>
BasicTensor<P> triplet_margin_with_distance_loss(const BasicTensor<P>& anchor, const BasicTensor<P>& positive,
                                                 const BasicTensor<P>& negative,
                                                 const DistanceFunction<P>& distance_function = {},
                                                 double margin = 1.0, bool swap = false,
                                                 LossReduction reduction = "mean") {
  constexpr const char* op = "triplet_margin_with_distance_loss";
  EMBER_CHECK(margin > 0, "[{}] margin must be positive, got {}", op, margin);
  EMBER_CHECK(anchor.dim() == positive.dim() && anchor.dim() == negative.dim(),
              "[{}] anchor, positive and negative must have the same number of dims, got {}, {} and {}", op,
              anchor.sizes(), positive.sizes(), negative.sizes());
  auto distance = [&](const BasicTensor<P>& a, const BasicTensor<P>& b) {
    return distance_function ? distance_function(a, b) : pairwise_distance(a, b);
  };
  BasicTensor<P> dp = distance(anchor, positive), dn = distance(anchor, negative);
  if (swap) dn = dn.minimum(distance(positive, negative));
  return detail::reduce((dp - dn + margin).clamp_min(0.0), reduction, op);
}

}  // namespace ember::nn::functional

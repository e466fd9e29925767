#pragma once
/// AdaptiveLogSoftmaxWithLoss (Grave et al., "Efficient softmax approximation for GPUs"), as
/// PyTorch's and libtorch's: for large vocabularies, the frequent classes (below cutoffs[0])
/// and one entry per cluster of rarer classes form the head; each cluster's classes get a
/// smaller projection (in_features / div_value^(i+1)) and a softmax of their own, reached only
/// by the rows whose target lies in the cluster.
///
///   nn::AdaptiveLogSoftmaxWithLoss asm_(nn::AdaptiveLogSoftmaxWithLossOptions(512, 50000, {2000, 10000}));
///   auto [log_probs_of_targets, loss] = asm_(hidden, targets);
///
/// Parameters are named as PyTorch's (head.weight, tail.0.0.weight, tail.0.1.weight, ...).

#include <ember/nn/functional.hpp>
#include <ember/nn/module.hpp>
#include <ember/nn/modules/container.hpp>
#include <ember/nn/modules/linear.hpp>
#include <ember/nn/options.hpp>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace ember::nn {

struct AdaptiveLogSoftmaxWithLossOptions {
  AdaptiveLogSoftmaxWithLossOptions(int64_t in_features, int64_t n_classes, std::vector<int64_t> cutoffs)
      : in_features_(in_features), n_classes_(n_classes), cutoffs_(std::move(cutoffs)) {}
  EMBER_ARG(int64_t, in_features);
  EMBER_ARG(int64_t, n_classes);
  /// Increasing class indices in [1, n_classes - 1] where the clusters start.
  EMBER_ARG(std::vector<int64_t>, cutoffs);
  EMBER_ARG(double, div_value) = 4.0;
  EMBER_ARG(bool, head_bias) = false;
};

/// forward's result: each row's log-probability of its target, and the mean negative of
/// them (libtorch's name).
template <class P = DefaultPolicy>
struct BasicASMoutput {
  BasicTensor<P> output, loss;
};
using ASMoutput = BasicASMoutput<>;

template <class P = DefaultPolicy>
class BasicAdaptiveLogSoftmaxWithLossImpl : public Cloneable<BasicAdaptiveLogSoftmaxWithLossImpl<P>, P> {
 public:
  using TensorT = BasicTensor<P>;
  explicit BasicAdaptiveLogSoftmaxWithLossImpl(const AdaptiveLogSoftmaxWithLossOptions& o)
      : Cloneable<BasicAdaptiveLogSoftmaxWithLossImpl<P>, P>("AdaptiveLogSoftmaxWithLoss"), options(o) {
    reset();
  }
  void reset() override {
    const std::vector<int64_t>& c = options.cutoffs();
    const int64_t n = options.n_classes(), in = options.in_features();
    EMBER_CHECK(in > 0 && n > 0, "[AdaptiveLogSoftmaxWithLoss] in_features and n_classes must be positive, got {} and {}",
                in, n);
    bool ok = !c.empty();
    std::string listed;
    for (size_t i = 0; i < c.size(); ++i) {
      ok = ok && c[i] >= 1 && c[i] <= n - 1 && (i == 0 || c[i] > c[i - 1]);
      listed += EMBER_FORMAT("{}{}", i ? ", " : "", c[i]);
    }
    EMBER_CHECK(ok,
                "[AdaptiveLogSoftmaxWithLoss] cutoffs must be unique, increasing integers in [1, n_classes - 1 = {}], "
                "got [{}]",
                n - 1, listed);
    EMBER_CHECK(options.div_value() > 0 && std::isfinite(options.div_value()),
                "[AdaptiveLogSoftmaxWithLoss] div_value must be positive, got {}", options.div_value());
    bounds = c;
    bounds.push_back(n);
    shortlist_size = bounds[0];
    n_clusters = static_cast<int64_t>(bounds.size()) - 1;
    head = this->register_module(
        "head", BasicLinear<P>(LinearOptions(in, shortlist_size + n_clusters).bias(options.head_bias())));
    tail = this->register_module("tail", BasicModuleList<P>());
    projections.clear();
    for (int64_t i = 0; i < n_clusters; ++i) {
      // PyTorch's int(in_features // div_value ** (i + 1)).
      const auto hidden = static_cast<int64_t>(std::floor(static_cast<double>(in) / std::pow(options.div_value(), i + 1)));
      const int64_t out = bounds[static_cast<size_t>(i + 1)] - bounds[static_cast<size_t>(i)];
      BasicLinear<P> down(LinearOptions(in, hidden).bias(false)), up(LinearOptions(hidden, out).bias(false));
      tail->push_back(BasicSequential<P>(down, up));
      projections.emplace_back(down, up);
    }
  }

  /// input (N, in_features) with target (N), or (in_features) with a 0-d target.
  BasicASMoutput<P> forward(const TensorT& input, const TensorT& target) {
    constexpr const char* op = "AdaptiveLogSoftmaxWithLoss";
    EMBER_CHECK(target.dim() <= 1, "[{}] expects a 0-d or 1-d target, got shape {}", op, target.sizes());
    EMBER_CHECK(target.dtype() == DType::I64 || target.dtype() == DType::I32,
                "[{}] target must hold class indices (i64 or i32), got {}", op, target.dtype());
    const bool batched = target.dim() == 1;
    EMBER_CHECK(input.dim() == (batched ? 2 : 1) && input.size(-1) == options.in_features() &&
                    (!batched || input.size(0) == target.size(0)),
                "[{}] expects input (N, {}) with target (N), or ({}) with a 0-d target; got input {} and target {}", op,
                options.in_features(), options.in_features(), input.sizes(), target.sizes());
    const TensorT x = batched ? input : input.unsqueeze(0);
    const TensorT t = (batched ? target : target.unsqueeze(0)).to(DType::I64).to(Device::cpu()).contiguous();
    const int64_t rows = t.numel();
    const int64_t* tv = t.template data_ptr<int64_t>();
    // Each row's head column (its class, or its cluster's entry) and its rows per cluster.
    std::vector<int64_t> head_column(static_cast<size_t>(rows));
    std::vector<std::vector<int64_t>> cluster_rows(static_cast<size_t>(n_clusters)), cluster_targets = cluster_rows;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t cls = tv[r];
      EMBER_CHECK(cls >= 0 && cls < options.n_classes(), "[{}] target {} is out of range for {} classes", op, cls,
                  options.n_classes());
      if (cls < shortlist_size) {
        head_column[static_cast<size_t>(r)] = cls;
        continue;
      }
      size_t i = 0;
      while (cls >= bounds[i + 1]) ++i;
      head_column[static_cast<size_t>(r)] = shortlist_size + static_cast<int64_t>(i);
      cluster_rows[i].push_back(r);
      cluster_targets[i].push_back(cls - bounds[i]);
    }
    TensorT head_lp = head(x).log_softmax(1);
    TensorT output = head_lp.gather(1, ember::detail::index_tensor_1d<P>(head_column, x.device()).unsqueeze(1)).squeeze(1);
    for (size_t i = 0; i < cluster_rows.size(); ++i) {
      if (cluster_rows[i].empty()) continue;
      const TensorT rows_i = ember::detail::index_tensor_1d<P>(cluster_rows[i], x.device());
      TensorT lp = cluster_logits(static_cast<int64_t>(i), x.index_select(0, rows_i)).log_softmax(1);
      TensorT local = lp.gather(1, ember::detail::index_tensor_1d<P>(cluster_targets[i], x.device()).unsqueeze(1)).squeeze(1);
      output = output.index_add(0, rows_i, local);
    }
    TensorT loss = output.neg().mean();
    return {batched ? output : output.squeeze(0), loss};
  }

  /// Every class's log-probability: (N, n_classes) for input (N, in_features).
  TensorT log_prob(const TensorT& input) {
    EMBER_CHECK(input.dim() == 2 && input.size(1) == options.in_features(),
                "[AdaptiveLogSoftmaxWithLoss] log_prob expects input (N, {}), got shape {}", options.in_features(),
                input.sizes());
    TensorT head_lp = head(input).log_softmax(1);
    std::vector<TensorT> parts{head_lp.narrow(1, 0, shortlist_size)};
    for (int64_t i = 0; i < n_clusters; ++i)
      parts.push_back(cluster_logits(i, input).log_softmax(1) + head_lp.narrow(1, shortlist_size + i, 1));
    return cat(parts, 1);
  }
  /// The most likely class of each row: (N) i64.
  TensorT predict(const TensorT& input) { return log_prob(input).argmax(1); }

  std::string extra_repr() const override { return ""; }

  AdaptiveLogSoftmaxWithLossOptions options;
  BasicLinear<P> head{nullptr};
  BasicModuleList<P> tail{nullptr};
  std::vector<int64_t> bounds;  ///< cutoffs, then n_classes
  int64_t shortlist_size = 0, n_clusters = 0;

 private:
  TensorT cluster_logits(int64_t i, const TensorT& x) {
    auto& [down, up] = projections[static_cast<size_t>(i)];
    return up(down(x));
  }
  std::vector<std::pair<BasicLinear<P>, BasicLinear<P>>> projections;  ///< the tail's, for direct calls
 protected:
  // forward() calls its submodules through members: removing one would leave it running.
  void child_unregistering(const std::string& child) override { nn::detail::refuse_member_child(this->name(), child); }
};
using AdaptiveLogSoftmaxWithLossImpl = BasicAdaptiveLogSoftmaxWithLossImpl<>;
EMBER_MODULE(AdaptiveLogSoftmaxWithLoss);
template <class P = DefaultPolicy>
using BasicAdaptiveLogSoftmaxWithLoss = detail::PolicyHolder<P, AdaptiveLogSoftmaxWithLoss, BasicAdaptiveLogSoftmaxWithLossImpl<P>>;

}  // namespace ember::nn

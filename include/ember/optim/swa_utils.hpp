#pragma once
/// Weight averaging, as torch.optim.swa_utils: AveragedModel keeps a running average of a
/// model's weights (stochastic weight averaging, or an exponential moving average), SWALR
/// anneals the learning rate to a constant for SWA, update_bn recomputes batch-norm
/// statistics for averaged weights.
///
///   #include <ember/optim/swa_utils.hpp>
///   optim::AveragedModel ema(net, optim::get_ema_multi_avg_fn(0.999));   // an EMA of net
///   for (...) { opt.zero_grad(); loss(net).backward(); opt.step(); ema->update_parameters(net); }
///   Tensor y = ema(x);                       // the averaged weights' forward
///
///   optim::AveragedModel swa(net);           // SWA: the equal-weight mean of the updates
///   optim::SWALR swa_sched(opt, /*swa_lr=*/0.05);
///   ... swa->update_parameters(net); swa_sched.step(); ...
///   optim::update_bn(batches, swa);          // then the BatchNorm statistics for its weights
///
/// Not part of <ember/optim.hpp> (it pulls in the nn modules), as torch.optim.swa_utils is
/// imported on its own.

#include <ember/nn/module.hpp>
#include <ember/nn/modules/conv.hpp>
#include <ember/optim/schedulers.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace ember::optim {

// ---- averaging functions --------------------------------------------------------------------

/// How AveragedModel folds a model's tensor into its average: writes the new average into
/// `averaged` in place (copy_, mul_, ...), given `current` (the model's tensor, already on the
/// average's device and in its dtype) and `num_averaged` (>= 1, models the average holds).
/// PyTorch's avg_fn returns the new value instead; multi_avg_fn works in place, as this does.
template <class P = DefaultPolicy>
using BasicAvgFn =
    std::function<void(BasicTensor<P>& averaged, const BasicTensor<P>& current, int64_t num_averaged)>;
using AvgFn = BasicAvgFn<>;

namespace detail {
inline void check_decay(double decay) {
  EMBER_CHECK(decay >= 0 && decay <= 1, "[get_ema_avg_fn] decay must be in [0, 1], got {}", decay);
}
}  // namespace detail

/// The equal-weight mean (SWA): averaged + (current - averaged) / (n + 1), PyTorch's
/// get_swa_avg_fn (what AveragedModel uses on the CPU when given no function).
template <class P = DefaultPolicy>
BasicAvgFn<P> get_swa_avg_fn() {
  return [](BasicTensor<P>& avg, const BasicTensor<P>& cur, int64_t n) {
    avg.copy_(avg + (cur - avg) / static_cast<double>(n + 1));
  };
}

/// An exponential moving average as PyTorch's get_ema_multi_avg_fn (the form its docs
/// recommend): lerp(averaged, current, 1 - decay) for floating-point tensors, else
/// averaged * decay + current * (1 - decay) (truncated back to the integer dtype).
template <class P = DefaultPolicy>
BasicAvgFn<P> get_ema_multi_avg_fn(double decay = 0.999) {
  detail::check_decay(decay);
  return [decay](BasicTensor<P>& avg, const BasicTensor<P>& cur, int64_t) {
    if (avg.is_floating_point()) avg.copy_(avg.lerp(cur, 1 - decay));
    else avg.copy_(avg * decay + cur * (1 - decay));
  };
}

/// An exponential moving average as PyTorch's get_ema_avg_fn: decay * averaged + (1 - decay)
/// * current (equal to get_ema_multi_avg_fn's but for rounding).
template <class P = DefaultPolicy>
BasicAvgFn<P> get_ema_avg_fn(double decay = 0.999) {
  detail::check_decay(decay);
  return [decay](BasicTensor<P>& avg, const BasicTensor<P>& cur, int64_t) {
    avg.copy_(avg * decay + cur * (1 - decay));
  };
}

// ---- AveragedModel ----------------------------------------------------------------------------

struct AveragedModelOptions {
  /// Where the average lives (e.g. the CPU while the model trains on a GPU); default: where
  /// the model is.
  EMBER_ARG(std::optional<Device>, device) = std::nullopt;
  /// Average the buffers too (BatchNorm's running statistics, ...). Otherwise the average's
  /// buffers are copied from the model at each update, and update_bn recomputes them.
  EMBER_ARG(bool, use_buffers) = false;
};

namespace detail {
/// The module a holder (nn::Linear), a shared_ptr or a reference designates.
template <class Model>
auto& module_ref(Model& m) {
  if constexpr (requires { m.ptr(); }) return *m.ptr();
  else if constexpr (requires { m.get(); *m; }) return *m;
  else return m;
}
}  // namespace detail

/// A deep copy of a model (of Impl type M) whose weights are the running average of the
/// weights update_parameters() is given. Its parameters are "module.<name>" and a buffer
/// "n_averaged" (how many models the average holds), as PyTorch's, so state dicts carry over.
template <class M, class P = DefaultPolicy>
class AveragedModelImpl : public nn::BasicModule<P> {
 public:
  using TensorT = BasicTensor<P>;

  /// `model` must be cloneable (nn::Cloneable, or a container); `avg_fn` null: SWA's mean.
  AveragedModelImpl(const std::shared_ptr<M>& model, BasicAvgFn<P> avg_fn = nullptr,
                    const AveragedModelOptions& options = {})
      : nn::BasicModule<P>("AveragedModel"), options(options), avg_fn_(std::move(avg_fn)) {
    EMBER_CHECK(model != nullptr, "[AveragedModel] the model is an empty handle");
    module = std::dynamic_pointer_cast<M>(model->clone());
    EMBER_CHECK(module != nullptr, "[AveragedModel] clone() of the {} did not make the model's type", model->name());
    if (options.device()) module->to(*options.device());
    this->register_module("module", module);
    n_averaged = this->register_buffer(
        "n_averaged", zeros<P>({}, TensorOptions(DType::I64).device(options.device().value_or(Device::cpu()))));
    if (!avg_fn_) avg_fn_ = get_swa_avg_fn<P>();
  }
  /// From a module handle (nn::Sequential, a user's EMBER_MODULE type).
  template <class H>
    requires requires(const H& h) {
      { h.ptr() } -> std::convertible_to<std::shared_ptr<M>>;
    }
  explicit AveragedModelImpl(const H& model, BasicAvgFn<P> avg_fn = nullptr, const AveragedModelOptions& options = {})
      : AveragedModelImpl(std::shared_ptr<M>(model.ptr()), std::move(avg_fn), options) {}

  /// The averaged weights' forward.
  template <class... A>
  decltype(auto) forward(A&&... a) {
    return module->forward(std::forward<A>(a)...);
  }

  /// Folds `model`'s current weights into the average (the first call copies them). The
  /// model must have the averaged copy's structure: its parameters (and buffers) in the same
  /// order and shapes; nothing changes when one does not match.
  void update_parameters(const nn::BasicModule<P>& model) {
    autograd::NoGradGuard no_grad;
    auto mine = averaged(*module, options.use_buffers()), theirs = averaged(model, options.use_buffers());
    check_match(mine, theirs, options.use_buffers() ? "parameters and buffers" : "parameters");
    std::vector<std::pair<TensorT, TensorT>> synced_buffers;
    if (!options.use_buffers()) {
      auto mb = module->named_buffers(), tb = model.named_buffers();
      check_match(mb, tb, "buffers");
      for (size_t i = 0; i < mb.size(); ++i) synced_buffers.emplace_back(mb[i].second, tb[i].second);
    }
    const int64_t n = n_averaged.template item<int64_t>();
    for (size_t i = 0; i < mine.size(); ++i) {
      TensorT avg = mine[i].second;  // a handle: writes reach the module's tensor
      TensorT cur = theirs[i].second.detach().to(avg.device(), avg.dtype());
      if (n == 0) avg.copy_(cur);
      else avg_fn_(avg, cur, n);
    }
    // PyTorch 2's rule: without use_buffers the buffers follow the model.
    for (auto& [b_avg, b_model] : synced_buffers) b_avg.copy_(b_model.detach().to(b_avg.device(), b_avg.dtype()));
    n_averaged.add_(int64_t{1});
  }
  template <class H>
    requires requires(const H& h) { *h.ptr(); }
  void update_parameters(const H& model) {
    update_parameters(*model.ptr());
  }
  void update_parameters(const std::shared_ptr<M>& model) {
    EMBER_CHECK(model != nullptr, "[AveragedModel] update_parameters: the model is an empty handle");
    update_parameters(*model);
  }

  std::string extra_repr() const override { return options.use_buffers() ? "use_buffers=True" : ""; }

  AveragedModelOptions options;
  std::shared_ptr<M> module;
  TensorT n_averaged;

 private:
  using Named = nn::BasicTensorList<P>;
  static Named averaged(const nn::BasicModule<P>& m, bool with_buffers) {
    Named out = m.named_parameters();
    if (with_buffers)
      for (auto& [name, b] : m.named_buffers()) out.insert(name, b);
    return out;
  }
  /// Same count and, pairwise, the same shape; the error names the first mismatch.
  static void check_match(const Named& mine, const Named& theirs, const char* what) {
    EMBER_CHECK(mine.size() == theirs.size(),
                "[AveragedModel] update_parameters: the model has {} {}, the averaged copy {}: it must have the "
                "structure of the model the average was made from",
                theirs.size(), what, mine.size());
    for (size_t i = 0; i < mine.size(); ++i) {
      const TensorT &a = mine[i].second, &b = theirs[i].second;
      EMBER_CHECK(a.defined() == b.defined() && (!a.defined() || a.sizes() == b.sizes()),
                  "[AveragedModel] update_parameters: '{}' has shape {} in the model and {} in the average",
                  theirs[i].first, b.defined() ? fmt::format("{}", b.sizes()) : std::string("(none)"),
                  a.defined() ? fmt::format("{}", a.sizes()) : std::string("(none)"));
    }
  }
  BasicAvgFn<P> avg_fn_;
};

/// The shared handle: `optim::AveragedModel ema(net, optim::get_ema_multi_avg_fn(0.99))`.
template <class M, class P = DefaultPolicy>
class AveragedModel : public nn::ModuleHolder<AveragedModelImpl<M, P>> {
 public:
  using nn::ModuleHolder<AveragedModelImpl<M, P>>::ModuleHolder;
};
template <class H, class... A>
  requires requires { typename H::element_type; }
AveragedModel(const H&, A&&...) -> AveragedModel<typename H::element_type>;
template <class M, class... A>
AveragedModel(const std::shared_ptr<M>&, A&&...) -> AveragedModel<M>;

// ---- SWALR ------------------------------------------------------------------------------------

/// Anneals each group's learning rate from its current value to swa_lr over anneal_epochs
/// steps (cosine or linear), then holds it, as PyTorch's SWALR (its recursive form: it starts
/// from whatever rate the groups have when it is made, e.g. after another scheduler).
class SWALR : public LRScheduler {
 public:
  SWALR(Optimizer& optimizer, PerGroup swa_lr, int64_t anneal_epochs = 10,
        AnnealStrategy anneal_strategy = AnnealStrategy::Cos, int64_t last_epoch = -1);
  const std::vector<double>& swa_lrs() const { return swa_lrs_; }

 protected:
  std::vector<double> get_lr() override;

 private:
  std::vector<double> swa_lrs_;
  int64_t anneal_epochs_;
  AnnealStrategy strategy_;
};

// ---- update_bn ----------------------------------------------------------------------------------

namespace detail {
/// The input of one batch: a tensor, the first element of a tuple or pair, or an example's data.
template <class B>
decltype(auto) batch_input(const B& b) {
  if constexpr (requires { b.sizes(); }) return (b);
  else if constexpr (requires { std::get<0>(b); }) return (std::get<0>(b));
  else return (b.data);
}
}  // namespace detail

/// Recomputes the running statistics of every BatchNorm1d/2d/3d in `model` from one pass over
/// `batches` (anything iterable: a DataLoader, a vector of tensors; each batch a tensor, a tuple
/// whose first element is the input, or an example with .data), as PyTorch's update_bn: the
/// statistics are reset, then averaged over all batches with equal weight (momentum None).
/// Runs in training mode under NoGradGuard (PyTorch records the graph; the statistics are the
/// same); the model's mode and each layer's momentum are restored afterwards, also when a
/// forward fails. `device`: where to move each input first.
template <class Batches, class Model>
void update_bn(Batches&& batches, Model& model, std::optional<Device> device = std::nullopt) {
  auto& root = detail::module_ref(model);
  using Base = nn::Module;
  struct Saved {
    std::optional<double>* momentum;
    std::optional<double> value;
  };
  std::vector<Saved> saved;
  auto visit = [&](Base& m) {
    auto keep = [&](auto* bn) {
      if (!bn) return false;
      bn->reset_running_stats();
      saved.push_back({&bn->options.momentum(), bn->options.momentum()});
      return true;
    };
    keep(m.template as<nn::BatchNorm1dImpl>()) || keep(m.template as<nn::BatchNorm2dImpl>()) ||
        keep(m.template as<nn::BatchNorm3dImpl>());
  };
  root.apply(visit);
  if (saved.empty()) return;
  // Restores the layers and the mode however the loop ends.
  struct Restore {
    std::vector<Saved>& saved;
    Base& root;
    bool was_training;
    Restore(std::vector<Saved>& s, Base& r, bool t) : saved(s), root(r), was_training(t) {}
    Restore(const Restore&) = delete;
    Restore& operator=(const Restore&) = delete;
    ~Restore() {
      for (Saved& s : saved) *s.momentum = s.value;
      root.train(was_training);
    }
  } restore(saved, root, root.is_training());
  for (Saved& s : saved) *s.momentum = std::nullopt;
  root.train();
  autograd::NoGradGuard no_grad;
  for (auto&& batch : batches) {
    const auto& input = detail::batch_input(batch);
    if (device) root.forward(input.to(*device));
    else root.forward(input);
  }
}

}  // namespace ember::optim

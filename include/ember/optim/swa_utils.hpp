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
#include <exception>
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
inline void check_decay(const char* fn, double decay) {
  EMBER_CHECK(decay >= 0 && decay <= 1, "[{}] decay must be in [0, 1], got {}", fn, decay);
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
  detail::check_decay("get_ema_multi_avg_fn", decay);
  return [decay](BasicTensor<P>& avg, const BasicTensor<P>& cur, int64_t) {
    if (avg.is_floating_point()) avg.copy_(avg.lerp(cur, 1 - decay));
    else avg.copy_(avg * decay + cur * (1 - decay));
  };
}

/// An exponential moving average as PyTorch's get_ema_avg_fn: decay * averaged + (1 - decay)
/// * current (equal to get_ema_multi_avg_fn's but for rounding).
template <class P = DefaultPolicy>
BasicAvgFn<P> get_ema_avg_fn(double decay = 0.999) {
  detail::check_decay("get_ema_avg_fn", decay);
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
/// The module a holder (nn::Linear), a shared_ptr or a reference designates; an empty handle
/// fails, naming `op`.
template <class Model>
auto& module_ref(Model& m, const char* op) {
  if constexpr (requires { m.ptr(); } || requires { m.get(); *m; }) {
    EMBER_CHECK(m.get() != nullptr, "[{}] the model is an empty handle", op);
    return *m.get();
  } else {
    return m;
  }
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
    // A tensor shared by two submodules is listed once; a clone that unshares it lists it
    // twice, and no update could pair the two lists.
    EMBER_CHECK(module->named_parameters().size() == model->named_parameters().size() &&
                    module->named_buffers().size() == model->named_buffers().size(),
                "[AveragedModel] the {} shares parameters or buffers between submodules ({} parameters, {} "
                "buffers), which its clone() does not keep shared ({} and {}): average a model without shared "
                "tensors",
                model->name(), model->named_parameters().size(), model->named_buffers().size(),
                module->named_parameters().size(), module->named_buffers().size());
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
  auto forward(A&&... a) -> decltype(std::declval<M&>().forward(std::forward<A>(a)...)) {  // SFINAE-friendly:
    return module->forward(std::forward<A>(a)...);  // AnyModule and Sequential ask which calls it takes
  }

  /// Folds `model`'s current weights into the average (the first call copies them). The
  /// model must have the averaged copy's structure: its parameters (and buffers) in the same
  /// order and shapes; nothing changes when one does not match. The model's tensors are
  /// brought to the average's device and dtype first (PyTorch moves only the device). A user
  /// function that throws midway leaves the tensors before it updated.
  void update_parameters(const nn::BasicModule<P>& model) {
    ember::detail::NoGradGuardFor<P> no_grad;
    auto mine = averaged(*module, options.use_buffers()), theirs = averaged(model, options.use_buffers());
    check_match(mine, theirs, options.use_buffers() ? "parameters and buffers" : "parameters");
    nn::BasicTensorList<P> mine_buffers, their_buffers;
    if (!options.use_buffers()) {
      mine_buffers = module->named_buffers(), their_buffers = model.named_buffers();
      check_match(mine_buffers, their_buffers, "buffers");
    }
    // Every conversion before the first write.
    std::vector<TensorT> current, current_buffers;
    for (size_t i = 0; i < mine.size(); ++i)
      current.push_back(theirs[i].second.detach().to(mine[i].second.device(), mine[i].second.dtype()));
    for (size_t i = 0; i < mine_buffers.size(); ++i)
      current_buffers.push_back(
          their_buffers[i].second.detach().to(mine_buffers[i].second.device(), mine_buffers[i].second.dtype()));
    const int64_t n = n_averaged.template item<int64_t>();
    for (size_t i = 0; i < mine.size(); ++i) {
      TensorT avg = mine[i].second;  // a handle: writes reach the module's tensor
      if (n == 0) avg.copy_(current[i]);
      else avg_fn_(avg, current[i], n);
    }
    // PyTorch 2's rule: without use_buffers the buffers follow the model.
    for (size_t i = 0; i < mine_buffers.size(); ++i) mine_buffers[i].second.copy_(current_buffers[i]);
    n_averaged.add_(int64_t{1});
  }
  /// From a handle (nn::Sequential, std::shared_ptr); an empty one fails.
  template <class H>
    requires requires(const H& h) { h.get(); }
  void update_parameters(const H& model) {
    update_parameters(detail::module_ref(model, "AveragedModel"));
  }

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
  /// Same count and, pairwise, the same shape; the error names the first mismatch. (Absent
  /// parameters, such as bias=false, are not listed: they show as a count mismatch.)
  static void check_match(const Named& mine, const Named& theirs, const char* what) {
    EMBER_CHECK(mine.size() == theirs.size(),
                "[AveragedModel] update_parameters: the model has {} {}, the averaged copy {}: it must have the "
                "structure of the model the average was made from",
                theirs.size(), what, mine.size());
    for (size_t i = 0; i < mine.size(); ++i)
      EMBER_CHECK(mine[i].second.sizes() == theirs[i].second.sizes(),
                  "[AveragedModel] update_parameters: '{}' has shape {} in the model and {} in the average",
                  theirs[i].first, theirs[i].second.sizes(), mine[i].second.sizes());
  }
  BasicAvgFn<P> avg_fn_;
 protected:
  // forward() calls its submodules through members: removing one would leave it running.
  void child_unregistering(const std::string& child) override { nn::detail::refuse_member_child(this->name(), child); }
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
/// T, as a type that depends on Dep (delays instantiation to the caller's types).
template <class Dep, class T>
struct Dependent {
  using type = T;
};

/// The input of one batch: a tensor, the first element of a tuple, pair or vector of tensors
/// (PyTorch's input[0]), or an example's data.
template <class B>
decltype(auto) batch_input(const B& b) {
  if constexpr (requires { b.sizes(); }) {
    return (b);
  } else if constexpr (requires { std::get<0>(b); }) {
    return (std::get<0>(b));
  } else if constexpr (requires { b.size(); b[0].sizes(); }) {
    EMBER_CHECK(b.size() > 0, "[update_bn] a batch is an empty list of tensors");
    return (b[0]);
  } else {
    return (b.data);
  }
}
}  // namespace detail

/// Recomputes the running statistics of every BatchNorm1d/2d/3d in `model` from one pass over
/// `batches` (anything iterable: a DataLoader, a vector of tensors; each batch a tensor, a tuple
/// whose first element is the input, or an example with .data), as PyTorch's update_bn: the
/// statistics are reset, then averaged over all batches with equal weight (momentum None).
/// Runs in training mode under NoGradGuard (as PyTorch's, under no_grad); the model's mode and
/// each layer's momentum are restored afterwards. When a forward fails, the error reaches the
/// caller with the statistics as they were before the call. `device`: where to move each
/// input first.
template <class Batches, class Model>
void update_bn(Batches&& batches, Model& model, std::optional<Device> device = std::nullopt) {
  auto& root = detail::module_ref(model, "update_bn");
  // Types that depend on Model, so that nothing here (the dynamic_casts of as<>()) is
  // instantiated before update_bn is called: the library itself builds without RTTI.
  using Base = typename detail::Dependent<Model, nn::Module>::type;
  using BN1 = typename detail::Dependent<Model, nn::BatchNorm1dImpl>::type;
  using BN2 = typename detail::Dependent<Model, nn::BatchNorm2dImpl>::type;
  using BN3 = typename detail::Dependent<Model, nn::BatchNorm3dImpl>::type;
  struct Saved {
    std::optional<double>* momentum;
    std::optional<double> value;
    std::vector<Tensor> stats, copies;  ///< the running statistics, and their values before
  };
  std::vector<Saved> saved;
  auto visit = [&](Base& m) {
    auto keep = [&](auto* bn) {
      if (!bn) return false;
      Saved s{&bn->options.momentum(), bn->options.momentum(), {}, {}};
      if (bn->options.track_running_stats()) {
        s.stats = {bn->running_mean, bn->running_var, bn->num_batches_tracked};
        for (const Tensor& t : s.stats) s.copies.push_back(t.detach().clone());
      }
      saved.push_back(std::move(s));
      bn->reset_running_stats();
      return true;
    };
    keep(m.template as<BN1>()) || keep(m.template as<BN2>()) || keep(m.template as<BN3>());
  };
  root.apply(visit);
  if (saved.empty()) return;
  // Restores the layers and the mode however the loop ends; the statistics too when it ends
  // by an exception.
  struct Restore {
    std::vector<Saved>& saved;
    Base& root;
    bool was_training;
    int exceptions = std::uncaught_exceptions();
    Restore(std::vector<Saved>& s, Base& r, bool t) : saved(s), root(r), was_training(t) {}
    Restore(const Restore&) = delete;
    Restore& operator=(const Restore&) = delete;
    ~Restore() {
      const bool failed = std::uncaught_exceptions() > exceptions;
      autograd::NoGradGuard ng;
      for (Saved& s : saved) {
        *s.momentum = s.value;
        if (failed)
          for (size_t i = 0; i < s.stats.size(); ++i) s.stats[i].copy_(s.copies[i]);
      }
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

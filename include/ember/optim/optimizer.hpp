#pragma once
/// The optimiser base, libtorch style: parameters are tensors (leaves that require grad),
/// organised in parameter groups that each carry their own options.
///
///   optim::AdamW opt(params, optim::AdamWOptions(1e-3).weight_decay(0.01));
///   for (...) { opt.zero_grad(); loss(...).backward(); opt.step(); }
///
///   optim::SGD sgd({optim::ParamGroup({w}), optim::ParamGroup({b}, optim::SGDOptions(0.1))},
///                  optim::SGDOptions(0.01).momentum(0.9));  // b's group: lr 0.1, momentum 0
///
/// step() updates each group with one fused kernel call that walks all of the group's
/// parameters (see optim/fused.hpp), under no-grad, and bumps each updated tensor's version
/// counter. Parameters whose grad() is undefined are skipped, as in PyTorch. Parameters must
/// be contiguous f32 or f64 CPU tensors; CUDA parameters fail with a clear error for now.
///
/// Per-parameter state (step counts, moment buffers) and the group options round-trip through
/// state_dict() / load_state_dict(): a plain structure of named tensors and numbers.

#include <ember/ember.hpp>
#include <ember/nn/options.hpp>
#include <ember/optim/fused.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace ember::optim {

// ---- options --------------------------------------------------------------------------------

/// (beta1, beta2) of the Adam family and Lion.
using Betas = std::tuple<double, double>;

/// A pointer to one option of an options struct, for generic access by name (state dicts,
/// schedulers that cycle momentum). Flags read and write as 0 or 1.
struct OptionField {
  OptionField(const char* n, double* v) : name(n), number(v) {}
  OptionField(const char* n, bool* v) : name(n), flag(v) {}
  /// A flag added after state dicts were first saved: loading one that lacks it sets the flag
  /// to `before` (the behaviour it had then) instead of failing.
  static OptionField added_later(const char* n, bool* v, bool before) {
    OptionField f(n, v);
    f.optional = true, f.value_before = before;
    return f;
  }
  const char* name;
  double* number = nullptr;
  bool* flag = nullptr;
  bool optional = false;
  bool value_before = false;
};

/// The base of every optimiser's options struct (SGDOptions, AdamOptions, ...).
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  /// The optimiser these options belong to ("Adam"): messages and state dicts use it, and a
  /// group's options must match its optimiser.
  virtual const char* optimizer_name() const = 0;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
  /// Every option, in a fixed order; betas appear as beta1 and beta2.
  virtual std::vector<OptionField> fields() = 0;
  /// Fails naming the option and its value when one is out of range.
  virtual void validate() const = 0;

  /// The options as named numbers.
  std::map<std::string, double> values() const;
  bool has(std::string_view name) const;
  /// The option's value; fails for an unknown name.
  double get(std::string_view name) const;
  /// Sets an option by name (flags from 0 or 1); fails for an unknown name.
  void set(std::string_view name, double value);
};

// ---- parameter groups -----------------------------------------------------------------------

/// Parameters that share options. A group made without options takes the optimiser's
/// defaults when it is added.
class ParamGroup {
 public:
  explicit ParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}
  ParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}
  template <class Options, class = std::enable_if_t<std::is_base_of_v<OptimizerOptions, Options>>>
  ParamGroup(std::vector<Tensor> params, const Options& options)
      : params_(std::move(params)), options_(options.clone()) {}
  ParamGroup(const ParamGroup& o);
  ParamGroup& operator=(const ParamGroup& o);
  ParamGroup(ParamGroup&&) noexcept = default;
  ParamGroup& operator=(ParamGroup&&) noexcept = default;

  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }
  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }

  /// The learning rate LR schedulers start from (PyTorch's group['initial_lr']): set by the
  /// first scheduler made for this optimiser, shared by the ones after it.
  std::optional<double> initial_lr;

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
};
/// libtorch's name for it.
using OptimizerParamGroup = ParamGroup;

// ---- state ----------------------------------------------------------------------------------

/// One parameter's optimiser state. Which buffers are used, and their names in state dicts,
/// depends on the optimiser (Optimizer::state_names()).
struct ParamState {
  int64_t step = 0;  ///< updates applied to this parameter
  /// Per-parameter numbers besides the step count, named by Optimizer::state_names().numbers:
  /// NAdam's mu_product (the product of its momentum schedule so far); ASGD's eta and mu.
  double numbers[2] = {1.0, 1.0};
  Tensor buffers[3];  ///< undefined until the optimiser needs them
};

/// An optimiser's state as named tensors and numbers, to be written to a file by whatever
/// format code saves it. Parameters are numbered in group order (PyTorch's scheme); the
/// tensors are copies, so the dict does not change when training continues.
struct StateDict {
  struct Group {
    std::map<std::string, double> options;  ///< every option, plus "initial_lr" when set
    std::vector<int64_t> params;            ///< indices of this group's parameters
  };
  struct Param {
    std::map<std::string, double> numbers;  ///< "step", and state_names().numbers ("mu_product", ...)
    std::map<std::string, Tensor> tensors;  ///< buffers by name, e.g. "exp_avg"
  };
  std::string optimizer;  ///< "Adam", ...
  std::vector<Group> param_groups;
  std::map<int64_t, Param> state;  ///< only parameters that have state
};

/// The overrides every options struct shares; fields() and validate() are written per struct.
#define EMBER_OPTIM_OPTIONS(Type, name_str)                                                                   \
 public:                                                                                                      \
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<Type>(*this); }          \
  const char* optimizer_name() const override { return name_str; }                                            \
  double get_lr() const override { return lr_; }                                                              \
  void set_lr(double v) override { lr_ = v; }                                                                 \
  std::vector<OptionField> fields() override;                                                                 \
  void validate() const override;

// ---- the optimiser --------------------------------------------------------------------------

class Optimizer {
 public:
  using LossClosure = std::function<Tensor()>;

  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// One update of every parameter that has a gradient. With a closure, calls it first (grad
  /// mode on) and returns its loss. (Virtual for LBFGS, which calls the closure many times.)
  virtual Tensor step(const LossClosure& closure = nullptr);
  /// Drops (set_to_none) or zeroes every parameter's gradient. The default is PyTorch 2's
  /// (libtorch 1.13 zeroed): a dropped gradient makes the next step skip the parameter,
  /// where a zero one would still apply momentum and weight decay.
  void zero_grad(bool set_to_none = true);
  /// Adds a group; without options it takes a copy of the defaults. Its parameters must be
  /// leaves that require grad and appear in no other group.
  void add_param_group(ParamGroup group);

  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  OptimizerOptions& defaults() { return *defaults_; }
  const OptimizerOptions& defaults() const { return *defaults_; }
  /// "SGD", "Adam", ...
  const char* name() const { return defaults_->optimizer_name(); }
  /// The state of parameter p, or null before its first update.
  const ParamState* state(const Tensor& p) const;
  /// Number of parameters over all groups.
  int64_t size() const;

  virtual StateDict state_dict() const;
  /// Restores state and group options saved by state_dict() of the same kind of optimiser
  /// with the same group sizes. Buffers are copied and cast to their parameter's dtype.
  virtual void load_state_dict(const StateDict& dict);

  /// The names of the buffers ParamState::buffers holds for this optimiser (null = unused).
  struct StateNames {
    const char* buffers[3] = {nullptr, nullptr, nullptr};
    bool step = true;  ///< the step count is part of the state
    /// The names of ParamState::numbers in use (null = unused): each must be in a loaded
    /// state, finite and >= 0.
    const char* numbers[2] = {nullptr, nullptr};
  };
  virtual StateNames state_names() const = 0;
  /// Which of state_names()'s buffers a loaded state must hold (bit i: buffers[i]): the ones
  /// every update keeps (Adam's moments), whose loss would restart the averages silently. A
  /// buffer that an option switches on (amsgrad's maximum, RMSprop's momentum) starts from
  /// zeros when missing, in a step as after a load: options may change during training.
  /// Default: every named buffer.
  virtual unsigned required_buffers(const OptimizerOptions& options) const;

  // ---- for optimiser implementations ----------------------------------------------------------
  /// One parameter of the group being updated, with its (contiguous) gradient and its state.
  struct Item {
    Tensor param;
    Tensor grad;
    ParamState* state;
  };
  /// Creates the item's buffer i, filled with `fill`, when it is undefined; returns whether
  /// it did.
  static bool ensure_buffer(Item& item, int i, double fill = 0.0);
  /// The kernel's view of an item: raw pointers to the parameter, gradient and buffers.
  static fused::Param view(const Item& item);

 protected:
  Optimizer(std::vector<ParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults);
  /// Applies one update to `items`, the parameters of one group that have a gradient, with
  /// that group's options (of this optimiser's options type).
  virtual void update(const OptimizerOptions& options, std::vector<Item>& items) = 0;

 private:
  std::unique_ptr<OptimizerOptions> defaults_;
  std::vector<ParamGroup> groups_;
  /// A parameter's state, with a reference to the parameter: its address is the key, and
  /// holding it keeps the address from being reused by a new tensor while the state exists (a
  /// parameter replaced in a group would otherwise pass its state to whatever tensor the
  /// allocator put there next). Entries of parameters no group holds any more are dropped by
  /// the next step().
  struct Entry {
    Tensor param;
    ParamState state;
  };
  std::unordered_map<const detail::TensorImpl*, Entry> state_;
  /// Buffers of `it` that no longer match its parameter: cast after the parameter's dtype or
  /// device changed (Module::to), refused when its shape did.
  void conform_buffers(Item& it, size_t group, size_t index) const;
  void drop_stale_state();
  std::vector<Item> items_;  // reused by every step
};

}  // namespace ember::optim

#pragma once
/// Learning-rate schedulers with PyTorch's semantics (torch.optim.lr_scheduler): the same
/// learning-rate sequences, computed by the same formulas in the same order (PyTorch's
/// recursive "chainable" form where it uses one, its closed form elsewhere), so they agree
/// with PyTorch to the last bit or nearly.
///
///   optim::SGD opt(params, optim::SGDOptions(0.1).momentum(0.9));
///   optim::CosineAnnealingLR sched(opt, /*T_max=*/100);
///   for (int epoch = 0; epoch < 100; ++epoch) { train(opt); sched.step(); }
///
/// A scheduler holds a reference to its optimiser, which must outlive it. Making one sets
/// each group's learning rate for step 0 (as PyTorch's constructors do) and records each
/// group's initial_lr if no earlier scheduler did. step() advances by one; get_last_lr() is
/// what the last step set. state_dict() / load_state_dict() carry the position in the
/// schedule, for a scheduler made with the same arguments.

#include <ember/nn/options.hpp>
#include <ember/optim/optimizer.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ember::optim {

/// A scheduler's position as named numbers and lists, to be written out by format code.
struct SchedulerState {
  std::string scheduler;                               ///< "StepLR", ...
  std::map<std::string, double> values;                ///< e.g. "last_epoch"
  std::map<std::string, std::vector<double>> lists;    ///< e.g. "base_lrs", "last_lr"
  std::vector<SchedulerState> children;                ///< SequentialLR's schedulers
};

/// One value for all parameter groups, or one per group: `0.1` or `{0.1, 0.01}`. As in
/// PyTorch, a list must have one value per group, even a list of one (`{0.1}`).
struct PerGroup {
  PerGroup(double v) : values{v}, scalar(true) {}  // NOLINT: implicit, like a Python scalar-or-list
  PerGroup(std::initializer_list<double> v) : values(v) {}
  PerGroup(std::vector<double> v) : values(std::move(v)) {}  // NOLINT
  std::vector<double> values;
  bool scalar = false;  ///< made from one number, not a list
  /// One value per group; fails naming `scheduler` and `what` when a list has not `groups` values.
  std::vector<double> expand(size_t groups, const char* scheduler, const char* what) const;
};

/// The base of the epoch-driven schedulers (all but ReduceLROnPlateau).
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  /// Advances the schedule by one and sets the groups' learning rates.
  void step();
  /// The learning rates the last step set, one per group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  Optimizer& optimizer() const { return *optimizer_; }
  const char* name() const { return name_; }

  virtual SchedulerState state_dict() const;
  /// Fails unless `s` comes from the same kind of scheduler over as many groups.
  virtual void load_state_dict(const SchedulerState& s);

 protected:
  /// last_epoch = -1 starts a schedule; another value resumes one, which needs every group's
  /// initial_lr (set by the scheduler that started it).
  LRScheduler(Optimizer& optimizer, int64_t last_epoch, const char* name);
  /// PyTorch's constructors take their first step; here each most-derived constructor calls
  /// this last (a base constructor cannot reach the derived get_lr()).
  void initial_step();
  /// The learning rates for last_epoch_, in PyTorch's chainable form where it has one (it
  /// may read the groups' current learning rates).
  virtual std::vector<double> get_lr() = 0;
  /// PyTorch's closed form, used when a step names its epoch (SequentialLR's milestones);
  /// false when the scheduler has none.
  virtual bool closed_form_lr(std::vector<double>& /*lrs*/) const { return false; }
  /// One step, to `epoch` when given (else last_epoch_ + 1).
  virtual void step_to(std::optional<int64_t> epoch);
  /// Takes back the step a constructor took, when a SequentialLR starts over the schedulers
  /// made for it: the last epoch goes back by one (SequentialLR: in its children instead, as
  /// PyTorch's recursive_undo).
  virtual void undo_initial_step() { last_epoch_ -= 1; }
  /// Sets the groups' learning rates and last_lr_.
  void apply(const std::vector<double>& lrs);
  double group_lr(size_t i) const;
  size_t num_groups() const;
  /// Every value of `s` this scheduler needs: checks and reads it.
  double state_value(const SchedulerState& s, const char* key) const;
  std::vector<double> state_list(const SchedulerState& s, const char* key) const;

  Optimizer* optimizer_;
  const char* name_;
  std::vector<double> base_lrs_, last_lr_;
  int64_t last_epoch_;
  int64_t step_count_ = 0;  ///< steps since the last initial step (CosineAnnealingLR reads it)

  friend class CompositeScheduler;
  friend class SequentialLR;
  friend class ChainedScheduler;
};

/// lr = base_lr * gamma^(epoch // step_size), recursively: lr *= gamma every step_size epochs.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  bool closed_form_lr(std::vector<double>& lrs) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

/// lr *= gamma at each milestone (a milestone listed twice multiplies by gamma^2).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  bool closed_form_lr(std::vector<double>& lrs) const override;

 private:
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

/// lr = base_lr * factor until epoch total_iters, then base_lr.
class ConstantLR : public LRScheduler {
 public:
  ConstantLR(Optimizer& optimizer, double factor = 1.0 / 3, int64_t total_iters = 5, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  bool closed_form_lr(std::vector<double>& lrs) const override;

 private:
  double factor_;
  int64_t total_iters_;
};

/// The factor on base_lr goes linearly from start_factor to end_factor over total_iters epochs.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5,
           int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  bool closed_form_lr(std::vector<double>& lrs) const override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

/// lr *= gamma every epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  bool closed_form_lr(std::vector<double>& lrs) const override;

 private:
  double gamma_;
};

/// Cosine annealing from base_lr to eta_min over T_max epochs (SGDR without restarts), in
/// PyTorch's recursive form (which keeps going past T_max, rising again).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  bool closed_form_lr(std::vector<double>& lrs) const override;

 private:
  int64_t T_max_;
  double eta_min_;
};

/// SGDR: cosine annealing restarted every T_i epochs, T_0 first, each period T_mult times
/// longer than the last.
class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult = 1, double eta_min = 0,
                              int64_t last_epoch = -1);
  using LRScheduler::step;
  /// Moves to a point of the schedule that may lie inside an epoch, as PyTorch's
  /// step(epoch): `sched.step(epoch + i / double(iters))` after batch i of `iters` anneals
  /// within each epoch. Any epoch >= 0 (going back too); last_epoch() becomes its floor.
  void step(double epoch);
  SchedulerState state_dict() const override;
  void load_state_dict(const SchedulerState& s) override;

 protected:
  std::vector<double> get_lr() override;
  void step_to(std::optional<int64_t> epoch) override;

 private:
  int64_t T_0_, T_mult_;
  double eta_min_;
  double T_i_, T_cur_;  // doubles, as PyTorch's may become (an epoch inside a longer period)
  /// Sets T_i and T_cur for `epoch` from scratch (PyTorch's step(epoch) branch).
  void seek(double epoch);
};

/// lr = base_lr * (1 - min(epoch, total_iters) / total_iters)^power.
class PolynomialLR : public LRScheduler {
 public:
  PolynomialLR(Optimizer& optimizer, int64_t total_iters = 5, double power = 1.0, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  bool closed_form_lr(std::vector<double>& lrs) const override;

 private:
  int64_t total_iters_;
  double power_;
};

/// lr = base_lr * lambda(epoch), one function for all groups or one per group.
class LambdaLR : public LRScheduler {
 public:
  using Lambda = std::function<double(int64_t epoch)>;
  LambdaLR(Optimizer& optimizer, Lambda lr_lambda, int64_t last_epoch = -1);
  LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas, int64_t last_epoch = -1);

 protected:
  /// Checks the functions (one per group) and takes no step: for MultiplicativeLR.
  LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas, int64_t last_epoch, const char* name);
  std::vector<double> get_lr() override;

  std::vector<Lambda> lambdas_;
};

/// lr *= lambda(epoch) at every step after the first (epoch > 0), one function for all groups
/// or one per group: PyTorch's MultiplicativeLR, a factor per step where LambdaLR takes the
/// product.
class MultiplicativeLR : public LambdaLR {
 public:
  MultiplicativeLR(Optimizer& optimizer, Lambda lr_lambda, int64_t last_epoch = -1);
  MultiplicativeLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
};

/// The base of the schedulers that drive others (SequentialLR, ChainedScheduler): all must
/// drive `optimizer`, and they are shared with the caller, who must not step them directly.
/// The learning rates are what the children leave; the state holds each child's.
class CompositeScheduler : public LRScheduler {
 public:
  SchedulerState state_dict() const override;
  void load_state_dict(const SchedulerState& s) override;

 protected:
  CompositeScheduler(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers, int64_t last_epoch,
                     const char* name);
  /// The groups' learning rates as the children left them.
  std::vector<double> get_lr() override;
  void undo_initial_step() override;

  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
};

/// Runs schedulers one after another: schedulers[i] from milestones[i - 1] on, restarted at
/// its milestone (stepped to epoch 0).
class SequentialLR : public CompositeScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones, int64_t last_epoch = -1);

 protected:
  void step_to(std::optional<int64_t> epoch) override;

 private:
  std::vector<int64_t> milestones_;
};

/// Steps every one of its schedulers at each step, in order, so that their factors compose
/// (a warm-up times a decay), as PyTorch's ChainedScheduler; the learning rates are what the
/// last one leaves.
class ChainedScheduler : public CompositeScheduler {
 public:
  ChainedScheduler(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers);

 protected:
  void step_to(std::optional<int64_t> epoch) override;
  void undo_initial_step() override;
};

// ---- cyclical schedules -----------------------------------------------------------------------

enum class CyclicMode { Triangular, Triangular2, ExpRange };
/// Whether a custom scale function gets the cycle number or the iteration.
enum class ScaleMode { Cycle, Iterations };

struct CyclicLROptions {
  CyclicLROptions(PerGroup base_lr, PerGroup max_lr) : base_lr_(std::move(base_lr)), max_lr_(std::move(max_lr)) {}
  EMBER_ARG(PerGroup, base_lr);
  EMBER_ARG(PerGroup, max_lr);
  EMBER_ARG(double, step_size_up) = 2000;
  /// Defaults to step_size_up.
  EMBER_ARG(std::optional<double>, step_size_down);
  EMBER_ARG(CyclicMode, mode) = CyclicMode::Triangular;
  EMBER_ARG(double, gamma) = 1.0;
  /// Replaces the mode's scale function when set.
  EMBER_ARG(std::function<double(double)>, scale_fn);
  EMBER_ARG(ScaleMode, scale_mode) = ScaleMode::Cycle;
  /// Cycles the optimiser's momentum (or beta1, for the Adam family) inversely to the lr.
  EMBER_ARG(bool, cycle_momentum) = true;
  EMBER_ARG(PerGroup, base_momentum) = 0.8;
  EMBER_ARG(PerGroup, max_momentum) = 0.9;
};

/// Cyclical learning rates (Smith 2017) between base_lr and max_lr, with momentum cycled
/// inversely; base_lr replaces each group's learning rate when the schedule starts.
class CyclicLR : public LRScheduler {
 public:
  CyclicLR(Optimizer& optimizer, CyclicLROptions options, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;

 private:
  double scale(double x) const;
  CyclicLROptions o_;
  std::vector<double> max_lrs_, base_momentums_, max_momentums_;
  double total_size_, step_ratio_;
  const char* momentum_name_ = nullptr;  // "momentum" or "beta1" when cycling
};

enum class AnnealStrategy { Cos, Linear };

struct OneCycleLROptions {
  /// total_steps: the number of steps in the cycle.
  OneCycleLROptions(PerGroup max_lr, int64_t total_steps) : max_lr_(std::move(max_lr)), total_steps_(total_steps) {}
  /// PyTorch's other form: epochs * steps_per_epoch steps (both must be positive).
  OneCycleLROptions(PerGroup max_lr, int64_t epochs, int64_t steps_per_epoch)
      : max_lr_(std::move(max_lr)), total_steps_(steps_of(epochs, steps_per_epoch)) {}
  EMBER_ARG(PerGroup, max_lr);
  EMBER_ARG(int64_t, total_steps);
  EMBER_ARG(double, pct_start) = 0.3;
  EMBER_ARG(AnnealStrategy, anneal_strategy) = AnnealStrategy::Cos;
  EMBER_ARG(bool, cycle_momentum) = true;
  EMBER_ARG(PerGroup, base_momentum) = 0.85;
  EMBER_ARG(PerGroup, max_momentum) = 0.95;
  EMBER_ARG(double, div_factor) = 25.;
  EMBER_ARG(double, final_div_factor) = 1e4;
  EMBER_ARG(bool, three_phase) = false;

 private:
  static int64_t steps_of(int64_t epochs, int64_t steps_per_epoch) {
    EMBER_CHECK(epochs > 0 && steps_per_epoch > 0,
                "[OneCycleLR] epochs and steps_per_epoch must be positive, got {} and {}", epochs, steps_per_epoch);
    return ember::detail::checked_mul(epochs, steps_per_epoch, "OneCycleLR");
  }
};

/// The 1cycle policy (Smith & Topin): warm up from max_lr / div_factor to max_lr over
/// pct_start of the steps, then anneal to initial_lr / final_div_factor (with three_phase,
/// back to initial_lr first); momentum (or beta1) moves the opposite way. Stepping past
/// total_steps is an error.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, OneCycleLROptions options, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;

 private:
  enum Anchor : uint8_t { Initial, Max, Min, BaseMomentum, MaxMomentum };
  struct Phase {
    double end_step;
    Anchor start_lr, end_lr, start_momentum, end_momentum;
  };
  double anchor(size_t group, Anchor a) const;
  double anneal(double start, double end, double pct) const;
  OneCycleLROptions o_;
  std::vector<Phase> phases_;
  std::vector<double> max_lrs_, min_lrs_, base_momentums_, max_momentums_;
  const char* momentum_name_ = nullptr;
};

// ---- ReduceLROnPlateau ------------------------------------------------------------------------

enum class PlateauMode { Min, Max };
enum class ThresholdMode { Rel, Abs };

struct ReduceLROnPlateauOptions {
  EMBER_ARG(PlateauMode, mode) = PlateauMode::Min;
  /// new_lr = lr * factor; must be < 1.
  EMBER_ARG(double, factor) = 0.1;
  /// Epochs without improvement tolerated before the lr is reduced.
  EMBER_ARG(int64_t, patience) = 10;
  EMBER_ARG(double, threshold) = 1e-4;
  EMBER_ARG(ThresholdMode, threshold_mode) = ThresholdMode::Rel;
  /// Epochs to wait after a reduction before counting bad epochs again.
  EMBER_ARG(int64_t, cooldown) = 0;
  EMBER_ARG(PerGroup, min_lr) = 0.0;
  /// Reductions smaller than eps are skipped.
  EMBER_ARG(double, eps) = 1e-8;
};

/// Reduces the learning rate by `factor` when a metric has stopped improving for `patience`
/// epochs: step(metric) once per epoch.
class ReduceLROnPlateau {
 public:
  explicit ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions options = {});
  ReduceLROnPlateau(const ReduceLROnPlateau&) = delete;
  ReduceLROnPlateau& operator=(const ReduceLROnPlateau&) = delete;

  void step(double metric);
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  double best() const { return best_; }

  SchedulerState state_dict() const;
  void load_state_dict(const SchedulerState& s);

 private:
  bool is_better(double a, double best) const;
  Optimizer* optimizer_;
  ReduceLROnPlateauOptions o_;
  std::vector<double> min_lrs_, last_lr_;
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0, last_epoch_ = 0;
};
/// libtorch's name for it.
using ReduceLROnPlateauScheduler = ReduceLROnPlateau;

}  // namespace ember::optim

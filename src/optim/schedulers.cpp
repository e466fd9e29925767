// LR schedulers. Each formula is PyTorch's (torch/optim/lr_scheduler.py), transcribed with
// the same operations in the same order: Python's a * b / c is (a * b) / c, `x ** y` is
// std::pow, integer epochs become doubles where Python divides them. That makes the
// sequences agree with PyTorch's bit for bit in practice (the golden tests allow 1e-12).

#include <ember/optim/schedulers.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string_view>

namespace ember::optim {

namespace {
constexpr double kPi = std::numbers::pi;  // == Python's math.pi
}  // namespace

std::vector<double> PerGroup::expand(size_t groups, const char* scheduler, const char* what) const {
  if (scalar) return std::vector<double>(groups, values[0]);
  EMBER_CHECK(values.size() == groups, "[{}] expected one number or a list of {} values for {} (one per parameter "
              "group), got a list of {}", scheduler, groups, what, values.size());
  return values;
}

// ---- the base -------------------------------------------------------------------------------------

LRScheduler::LRScheduler(Optimizer& optimizer, int64_t last_epoch, const char* name)
    : optimizer_(&optimizer), name_(name), last_epoch_(last_epoch) {
  EMBER_CHECK(last_epoch >= -1, "[{}] last_epoch must be >= -1, got {}", name, last_epoch);
  std::vector<ParamGroup>& groups = optimizer.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    if (last_epoch == -1) {
      if (!groups[i].initial_lr) groups[i].initial_lr = groups[i].options().get_lr();
    } else {
      EMBER_CHECK(groups[i].initial_lr,
                  "[{}] parameter group {} has no initial_lr: resuming a schedule (last_epoch = {}) needs the "
                  "optimiser of the schedule that started it",
                  name, i, last_epoch);
    }
    base_lrs_.push_back(*groups[i].initial_lr);
  }
}

size_t LRScheduler::num_groups() const { return optimizer_->param_groups().size(); }
double LRScheduler::group_lr(size_t i) const { return optimizer_->param_groups()[i].options().get_lr(); }

void LRScheduler::initial_step() {
  step_count_ = 0;
  step();
}

void LRScheduler::step() { step_to(std::nullopt); }

void LRScheduler::step_to(std::optional<int64_t> epoch) {
  EMBER_CHECK(num_groups() == base_lrs_.size(),
              "[{}] the optimiser has {} parameter groups; the scheduler was made for {}", name_, num_groups(),
              base_lrs_.size());
  ++step_count_;
  std::vector<double> lrs;
  if (epoch) {
    last_epoch_ = *epoch;
    if (!closed_form_lr(lrs)) lrs = get_lr();
  } else {
    ++last_epoch_;
    lrs = get_lr();
  }
  apply(lrs);
}

void LRScheduler::apply(const std::vector<double>& lrs) {
  std::vector<ParamGroup>& groups = optimizer_->param_groups();
  last_lr_.resize(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    groups[i].options().set_lr(lrs[i]);
    last_lr_[i] = lrs[i];
  }
}

SchedulerState LRScheduler::state_dict() const {
  SchedulerState s;
  s.scheduler = name_;
  s.values["last_epoch"] = static_cast<double>(last_epoch_);
  s.values["step_count"] = static_cast<double>(step_count_);
  s.lists["base_lrs"] = base_lrs_;
  s.lists["last_lr"] = last_lr_;
  return s;
}

double LRScheduler::state_value(const SchedulerState& s, const char* key) const {
  EMBER_CHECK(s.scheduler == name_, "[{}] load_state_dict: the state was saved by {}", name_, s.scheduler);
  auto it = s.values.find(key);
  EMBER_CHECK(it != s.values.end(), "[{}] load_state_dict: the state lacks \"{}\"", name_, key);
  return it->second;
}

std::vector<double> LRScheduler::state_list(const SchedulerState& s, const char* key) const {
  EMBER_CHECK(s.scheduler == name_, "[{}] load_state_dict: the state was saved by {}", name_, s.scheduler);
  auto it = s.lists.find(key);
  EMBER_CHECK(it != s.lists.end(), "[{}] load_state_dict: the state lacks \"{}\"", name_, key);
  EMBER_CHECK(it->second.size() == num_groups(),
              "[{}] load_state_dict: \"{}\" has {} values; the optimiser has {} parameter groups", name_, key,
              it->second.size(), num_groups());
  return it->second;
}

namespace {
/// A count read from a state: a whole number >= lo (and small enough to be one).
int64_t as_count(const char* scheduler, const char* key, double v, double lo = 0) {
  EMBER_CHECK(v >= lo && v < 9.0e15 && v == std::floor(v),
              "[{}] load_state_dict: \"{}\" must be a whole number >= {}, got {}", scheduler, key, lo, v);
  return static_cast<int64_t>(v);
}
}  // namespace

void LRScheduler::load_state_dict(const SchedulerState& s) {
  // Read everything before changing anything, so that a failed load changes nothing.
  const int64_t last_epoch = as_count(name_, "last_epoch", state_value(s, "last_epoch"), -1);
  const int64_t step_count = as_count(name_, "step_count", state_value(s, "step_count"));
  std::vector<double> base = state_list(s, "base_lrs"), last = state_list(s, "last_lr");
  last_epoch_ = last_epoch;
  step_count_ = step_count;
  base_lrs_ = std::move(base);
  last_lr_ = std::move(last);
}

// ---- StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR --------------------------------------

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch, "StepLR"), step_size_(step_size), gamma_(gamma) {
  EMBER_CHECK(step_size >= 1, "[StepLR] step_size must be >= 1, got {}", step_size);
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  std::vector<double> lrs(num_groups());
  const bool decay = last_epoch_ != 0 && last_epoch_ % step_size_ == 0;
  for (size_t i = 0; i < lrs.size(); ++i) lrs[i] = decay ? group_lr(i) * gamma_ : group_lr(i);
  return lrs;
}

bool StepLR::closed_form_lr(std::vector<double>& lrs) const {
  lrs.clear();
  for (double b : base_lrs_) lrs.push_back(b * std::pow(gamma_, static_cast<double>(last_epoch_ / step_size_)));
  return true;
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch, "MultiStepLR"), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initial_step();
}

std::vector<double> MultiStepLR::get_lr() {
  const auto count = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  std::vector<double> lrs(num_groups());
  for (size_t i = 0; i < lrs.size(); ++i)
    lrs[i] = count == 0 ? group_lr(i) : group_lr(i) * std::pow(gamma_, static_cast<double>(count));
  return lrs;
}

bool MultiStepLR::closed_form_lr(std::vector<double>& lrs) const {
  const auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  lrs.clear();
  for (double b : base_lrs_) lrs.push_back(b * std::pow(gamma_, static_cast<double>(passed)));
  return true;
}

ConstantLR::ConstantLR(Optimizer& optimizer, double factor, int64_t total_iters, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch, "ConstantLR"), factor_(factor), total_iters_(total_iters) {
  // factor > 0: the step at total_iters divides by it.
  EMBER_CHECK(factor > 0 && factor <= 1, "[ConstantLR] factor must be in (0, 1], got {}", factor);
  initial_step();
}

std::vector<double> ConstantLR::get_lr() {
  std::vector<double> lrs(num_groups());
  for (size_t i = 0; i < lrs.size(); ++i) {
    if (last_epoch_ == 0) lrs[i] = group_lr(i) * factor_;
    else if (last_epoch_ != total_iters_) lrs[i] = group_lr(i);
    else lrs[i] = group_lr(i) * (1.0 / factor_);
  }
  return lrs;
}

bool ConstantLR::closed_form_lr(std::vector<double>& lrs) const {
  lrs.clear();
  for (double b : base_lrs_) lrs.push_back(b * (factor_ + (last_epoch_ >= total_iters_ ? 1 - factor_ : 0.0)));
  return true;
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters,
                   int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch, "LinearLR"),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  // start_factor > 0 (PyTorch 2.x's rule): the first recursive step divides by it.
  EMBER_CHECK(start_factor > 0 && start_factor <= 1, "[LinearLR] start_factor must be in (0, 1], got {}", start_factor);
  EMBER_CHECK(end_factor >= 0 && end_factor <= 1, "[LinearLR] end_factor must be in [0, 1], got {}", end_factor);
  EMBER_CHECK(total_iters >= 1, "[LinearLR] total_iters must be >= 1, got {}", total_iters);
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  std::vector<double> lrs(num_groups());
  const double d = end_factor_ - start_factor_;
  for (size_t i = 0; i < lrs.size(); ++i) {
    if (last_epoch_ == 0) lrs[i] = group_lr(i) * start_factor_;
    else if (last_epoch_ > total_iters_) lrs[i] = group_lr(i);
    else
      lrs[i] = group_lr(i) * (1. + d / (static_cast<double>(total_iters_) * start_factor_ +
                                        static_cast<double>(last_epoch_ - 1) * d));
  }
  return lrs;
}

bool LinearLR::closed_form_lr(std::vector<double>& lrs) const {
  lrs.clear();
  const double done = static_cast<double>(std::min(total_iters_, last_epoch_));
  for (double b : base_lrs_)
    lrs.push_back(b * (start_factor_ + (end_factor_ - start_factor_) * done / static_cast<double>(total_iters_)));
  return true;
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch, "ExponentialLR"), gamma_(gamma) {
  initial_step();
}

std::vector<double> ExponentialLR::get_lr() {
  std::vector<double> lrs(num_groups());
  for (size_t i = 0; i < lrs.size(); ++i) lrs[i] = last_epoch_ == 0 ? group_lr(i) : group_lr(i) * gamma_;
  return lrs;
}

bool ExponentialLR::closed_form_lr(std::vector<double>& lrs) const {
  lrs.clear();
  for (double b : base_lrs_) lrs.push_back(b * std::pow(gamma_, static_cast<double>(last_epoch_)));
  return true;
}

// ---- cosine annealing, polynomial, lambda ----------------------------------------------------------

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch, "CosineAnnealingLR"), T_max_(T_max), eta_min_(eta_min) {
  EMBER_CHECK(T_max >= 1, "[CosineAnnealingLR] T_max must be >= 1, got {}", T_max);
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  std::vector<double> lrs(num_groups());
  const double e = static_cast<double>(last_epoch_), T = static_cast<double>(T_max_);
  for (size_t i = 0; i < lrs.size(); ++i) {
    const double lr = group_lr(i), base = base_lrs_[i];
    if (last_epoch_ == 0) {
      lrs[i] = lr;
    } else if (step_count_ == 1 && last_epoch_ > 0) {  // resumed at a later epoch
      lrs[i] = eta_min_ + (base - eta_min_) * (1 + std::cos(e * kPi / T)) / 2;
    } else if ((last_epoch_ - 1 - T_max_) % (2 * T_max_) == 0) {  // the minimum: the recursion would divide by 0
      lrs[i] = lr + (base - eta_min_) * (1 - std::cos(kPi / T)) / 2;
    } else {
      lrs[i] = (1 + std::cos(kPi * e / T)) / (1 + std::cos(kPi * (e - 1) / T)) * (lr - eta_min_) + eta_min_;
    }
  }
  return lrs;
}

bool CosineAnnealingLR::closed_form_lr(std::vector<double>& lrs) const {
  lrs.clear();
  const double e = static_cast<double>(last_epoch_), T = static_cast<double>(T_max_);
  for (double b : base_lrs_) lrs.push_back(eta_min_ + (b - eta_min_) * (1 + std::cos(kPi * e / T)) / 2);
  return true;
}

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult,
                                                         double eta_min, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch, "CosineAnnealingWarmRestarts"),
      T_0_(T_0),
      T_mult_(T_mult),
      eta_min_(eta_min),
      T_i_(static_cast<double>(T_0)),
      T_cur_(static_cast<double>(last_epoch)) {
  EMBER_CHECK(T_0 >= 1, "[CosineAnnealingWarmRestarts] T_0 must be >= 1, got {}", T_0);
  EMBER_CHECK(T_mult >= 1, "[CosineAnnealingWarmRestarts] T_mult must be >= 1, got {}", T_mult);
  initial_step();
}

std::vector<double> CosineAnnealingWarmRestarts::get_lr() {
  std::vector<double> lrs;
  for (double b : base_lrs_) lrs.push_back(eta_min_ + (b - eta_min_) * (1 + std::cos(kPi * T_cur_ / T_i_)) / 2);
  return lrs;
}

void CosineAnnealingWarmRestarts::step_to(std::optional<int64_t> epoch) {
  EMBER_CHECK(num_groups() == base_lrs_.size(),
              "[{}] the optimiser has {} parameter groups; the scheduler was made for {}", name_, num_groups(),
              base_lrs_.size());
  if (!epoch && last_epoch_ < 0) epoch = 0;
  int64_t e;
  if (!epoch) {
    e = last_epoch_ + 1;
    T_cur_ = T_cur_ + 1;
    if (T_cur_ >= T_i_) {
      // A remainder, not a subtraction: a schedule resumed at last_epoch >= 2 T_0 - 1 starts
      // with T_cur beyond a whole period (PyTorch's T_cur % T_i).
      T_cur_ = std::fmod(T_cur_, T_i_);
      T_i_ = T_i_ * static_cast<double>(T_mult_);
    }
  } else {
    e = *epoch;
    EMBER_CHECK(e >= 0, "[CosineAnnealingWarmRestarts] expected a non-negative epoch, got {}", e);
    seek(static_cast<double>(e));
  }
  last_epoch_ = e;
  apply(get_lr());
}

void CosineAnnealingWarmRestarts::step(double epoch) {
  EMBER_CHECK(num_groups() == base_lrs_.size(),
              "[{}] the optimiser has {} parameter groups; the scheduler was made for {}", name_, num_groups(),
              base_lrs_.size());
  EMBER_CHECK(epoch >= 0 && epoch < 9.0e15, "[CosineAnnealingWarmRestarts] expected a non-negative epoch, got {}",
              epoch);
  seek(epoch);
  last_epoch_ = static_cast<int64_t>(std::floor(epoch));
  apply(get_lr());
}

void CosineAnnealingWarmRestarts::seek(double epoch) {
  const double T0 = static_cast<double>(T_0_), Tm = static_cast<double>(T_mult_);
  if (epoch >= T0) {
    if (T_mult_ == 1) {
      T_cur_ = std::fmod(epoch, T0);  // Python's % for non-negative operands
    } else {
      // Which period the epoch falls in: Python's int(math.log(x, base)) = int(log(x) / log(base)).
      const auto n = static_cast<int64_t>(std::log(epoch / T0 * (Tm - 1) + 1) / std::log(Tm));
      const double Tm_n = std::pow(Tm, static_cast<double>(n));
      T_cur_ = epoch - T0 * (Tm_n - 1) / (Tm - 1);
      T_i_ = T0 * Tm_n;
    }
  } else {
    T_i_ = T0;
    T_cur_ = epoch;
  }
}

SchedulerState CosineAnnealingWarmRestarts::state_dict() const {
  SchedulerState s = LRScheduler::state_dict();
  s.values["T_i"] = T_i_;
  s.values["T_cur"] = T_cur_;
  return s;
}

void CosineAnnealingWarmRestarts::load_state_dict(const SchedulerState& s) {
  double T_i = state_value(s, "T_i"), T_cur = state_value(s, "T_cur");
  LRScheduler::load_state_dict(s);
  T_i_ = T_i;
  T_cur_ = T_cur;
}

PolynomialLR::PolynomialLR(Optimizer& optimizer, int64_t total_iters, double power, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch, "PolynomialLR"), total_iters_(total_iters), power_(power) {
  EMBER_CHECK(total_iters >= 1, "[PolynomialLR] total_iters must be >= 1, got {}", total_iters);
  initial_step();
}

std::vector<double> PolynomialLR::get_lr() {
  std::vector<double> lrs(num_groups());
  const double e = static_cast<double>(last_epoch_), T = static_cast<double>(total_iters_);
  for (size_t i = 0; i < lrs.size(); ++i) {
    if (last_epoch_ == 0 || last_epoch_ > total_iters_) {
      lrs[i] = group_lr(i);
    } else {
      const double decay = std::pow((1.0 - e / T) / (1.0 - (e - 1) / T), power_);
      lrs[i] = group_lr(i) * decay;
    }
  }
  return lrs;
}

bool PolynomialLR::closed_form_lr(std::vector<double>& lrs) const {
  lrs.clear();
  const double done = static_cast<double>(std::min(total_iters_, last_epoch_)), T = static_cast<double>(total_iters_);
  for (double b : base_lrs_) lrs.push_back(b * std::pow(1.0 - done / T, power_));
  return true;
}

LambdaLR::LambdaLR(Optimizer& optimizer, Lambda lr_lambda, int64_t last_epoch)
    : LambdaLR(optimizer, std::vector<Lambda>(optimizer.param_groups().size(), lr_lambda), last_epoch) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas, int64_t last_epoch)
    : LambdaLR(optimizer, std::move(lr_lambdas), last_epoch, "LambdaLR") {
  initial_step();
}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas, int64_t last_epoch, const char* name)
    : LRScheduler(optimizer, last_epoch, name), lambdas_(std::move(lr_lambdas)) {
  EMBER_CHECK(lambdas_.size() == num_groups(), "[{}] expected {} lr_lambdas (one per parameter group), got {}", name,
              num_groups(), lambdas_.size());
  for (size_t i = 0; i < lambdas_.size(); ++i)
    EMBER_CHECK(static_cast<bool>(lambdas_[i]), "[{}] lr_lambda {} is empty", name, i);
}

std::vector<double> LambdaLR::get_lr() {
  std::vector<double> lrs;
  for (size_t i = 0; i < base_lrs_.size(); ++i) lrs.push_back(base_lrs_[i] * lambdas_[i](last_epoch_));
  return lrs;
}

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, Lambda lr_lambda, int64_t last_epoch)
    : MultiplicativeLR(optimizer, std::vector<Lambda>(optimizer.param_groups().size(), lr_lambda), last_epoch) {}

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas, int64_t last_epoch)
    : LambdaLR(optimizer, std::move(lr_lambdas), last_epoch, "MultiplicativeLR") {
  initial_step();
}

std::vector<double> MultiplicativeLR::get_lr() {
  std::vector<double> lrs;
  for (size_t i = 0; i < num_groups(); ++i)
    lrs.push_back(last_epoch_ > 0 ? group_lr(i) * lambdas_[i](last_epoch_) : group_lr(i));
  return lrs;
}

// ---- CompositeScheduler, SequentialLR, ChainedScheduler -------------------------------------------------

CompositeScheduler::CompositeScheduler(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                                       int64_t last_epoch, const char* name)
    : LRScheduler(optimizer, last_epoch, name), schedulers_(std::move(schedulers)) {
  EMBER_CHECK(!schedulers_.empty(), "[{}] needs at least one scheduler", name);
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    EMBER_CHECK(schedulers_[i] && &schedulers_[i]->optimizer() == &optimizer,
                "[{}] scheduler {} does not drive the optimiser passed in", name, i);
  }
}

std::vector<double> CompositeScheduler::get_lr() {
  std::vector<double> lrs(num_groups());
  for (size_t i = 0; i < lrs.size(); ++i) lrs[i] = group_lr(i);
  return lrs;
}

void CompositeScheduler::undo_initial_step() {
  // PyTorch's recursive_undo: the leaves' epochs go back, not a nested SequentialLR's own.
  for (auto& s : schedulers_) s->undo_initial_step();
}

SchedulerState CompositeScheduler::state_dict() const {
  SchedulerState s;
  s.scheduler = name_;
  s.values["last_epoch"] = static_cast<double>(last_epoch_);
  s.lists["last_lr"] = last_lr_;
  for (const auto& c : schedulers_) s.children.push_back(c->state_dict());
  return s;
}

void CompositeScheduler::load_state_dict(const SchedulerState& s) {
  const int64_t last_epoch = as_count(name_, "last_epoch", state_value(s, "last_epoch"));
  std::vector<double> last = state_list(s, "last_lr");
  EMBER_CHECK(s.children.size() == schedulers_.size(), "[{}] load_state_dict: the state has {} schedulers, this {} {}",
              name_, s.children.size(), name_, schedulers_.size());
  // The children's kinds first, so that the commonest mismatch changes none of them (a
  // child's own checks still run as it loads).
  for (size_t i = 0; i < schedulers_.size(); ++i)
    EMBER_CHECK(s.children[i].scheduler == schedulers_[i]->name(),
                "[{}] load_state_dict: scheduler {} is {}, the state's is {}", name_, i, schedulers_[i]->name(),
                s.children[i].scheduler);
  for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->load_state_dict(s.children[i]);
  last_epoch_ = last_epoch;
  last_lr_ = std::move(last);
}

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones, int64_t last_epoch)
    : CompositeScheduler(optimizer, std::move(schedulers), last_epoch, "SequentialLR"),
      milestones_(std::move(milestones)) {
  EMBER_CHECK(milestones_.size() + 1 == schedulers_.size(),
              "[SequentialLR] expects one milestone fewer than schedulers, got {} schedulers and {} milestones",
              schedulers_.size(), milestones_.size());
  // A later scheduler restarts at its milestone by a step to epoch 0, which a scheduler of
  // schedulers cannot take (a ChainedScheduler's children's closed forms would not compose; a
  // SequentialLR would restart its first child from the current rate). PyTorch's step() of
  // both takes no epoch, so they fail there too.
  for (size_t i = 1; i < schedulers_.size(); ++i) {
    const std::string_view kind = schedulers_[i]->name();  // by name: no RTTI needed
    EMBER_CHECK(kind != "ChainedScheduler" && kind != "SequentialLR",
                "[SequentialLR] scheduler {} is a {}, which cannot restart at a milestone (only the first may be one)",
                i, kind);
  }
  // As PyTorch: back to the initial learning rates, undo the children's first steps, and
  // start the first child again.
  last_epoch_ = last_epoch + 1;
  for (size_t i = 0; i < optimizer.param_groups().size(); ++i) {
    ParamGroup& g = optimizer.param_groups()[i];
    EMBER_CHECK(g.initial_lr, "[SequentialLR] parameter group {} has no initial_lr; make the schedulers after loading "
                              "the optimiser's state", i);
    g.options().set_lr(*g.initial_lr);
  }
  for (auto& s : schedulers_) s->undo_initial_step();
  schedulers_[0]->initial_step();
  last_lr_ = schedulers_[0]->get_last_lr();
}

void SequentialLR::step_to(std::optional<int64_t> epoch) {
  last_epoch_ = epoch ? *epoch : last_epoch_ + 1;
  const size_t idx = std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  LRScheduler& s = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_) s.step_to(0);
  else s.step_to(std::nullopt);
  last_lr_ = s.get_last_lr();
}

ChainedScheduler::ChainedScheduler(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers)
    : CompositeScheduler(optimizer, std::move(schedulers), -1, "ChainedScheduler") {
  // No step of its own: each scheduler took its first step when it was made, and counts it.
  last_epoch_ = 0;
  last_lr_ = get_lr();
}

void ChainedScheduler::undo_initial_step() {
  // Its count follows its children's, which all go back by one.
  last_epoch_ -= 1;
  CompositeScheduler::undo_initial_step();
}

void ChainedScheduler::step_to(std::optional<int64_t> epoch) {
  EMBER_CHECK(!epoch, "[ChainedScheduler] steps one epoch at a time; it cannot step to epoch {} (its schedulers' "
              "closed forms would not compose)", epoch.value_or(0));
  ++last_epoch_;
  for (auto& s : schedulers_) s->step();
  last_lr_ = get_lr();
}

// ---- cyclical schedules ------------------------------------------------------------------------------

namespace {
/// The option cycled with the learning rate: momentum, else the Adam family's beta1.
const char* momentum_option(const Optimizer& opt, const char* scheduler) {
  if (opt.defaults().has("momentum")) return "momentum";
  if (opt.defaults().has("beta1")) return "beta1";
  EMBER_FAIL("[{}] cycle_momentum needs an optimiser with a momentum or beta1 option; {} has neither (turn "
             "cycle_momentum off)",
             scheduler, opt.name());
}

/// PyTorch sets each group's learning rate to base_lr before its base constructor records
/// initial_lr; this runs first in CyclicLR's initialiser list to keep that order.
Optimizer& start_at_base_lr(Optimizer& optimizer, const CyclicLROptions& o, int64_t last_epoch) {
  std::vector<double> base_lrs = o.base_lr().expand(optimizer.param_groups().size(), "CyclicLR", "base_lr");
  if (last_epoch == -1)
    for (size_t i = 0; i < base_lrs.size(); ++i) optimizer.param_groups()[i].options().set_lr(base_lrs[i]);
  return optimizer;
}
}  // namespace

CyclicLR::CyclicLR(Optimizer& optimizer, CyclicLROptions options, int64_t last_epoch)
    : LRScheduler(start_at_base_lr(optimizer, options, last_epoch), last_epoch, "CyclicLR"), o_(std::move(options)) {
  const size_t n = num_groups();
  max_lrs_ = o_.max_lr().expand(n, name_, "max_lr");
  EMBER_CHECK(o_.step_size_up() > 0, "[CyclicLR] step_size_up must be > 0, got {}", o_.step_size_up());
  const double down = o_.step_size_down().value_or(o_.step_size_up());
  EMBER_CHECK(down >= 0, "[CyclicLR] step_size_down must be >= 0, got {}", down);
  total_size_ = o_.step_size_up() + down;
  step_ratio_ = o_.step_size_up() / total_size_;
  if (o_.cycle_momentum()) {
    momentum_name_ = momentum_option(optimizer, name_);
    base_momentums_ = o_.base_momentum().expand(n, name_, "base_momentum");
    max_momentums_ = o_.max_momentum().expand(n, name_, "max_momentum");
  }
  // As PyTorch: the first step runs from the recorded initial_lr (base_lr unless an earlier
  // scheduler recorded one), every later one from base_lr.
  initial_step();
  base_lrs_ = o_.base_lr().expand(n, name_, "base_lr");
}

double CyclicLR::scale(double x) const {
  if (o_.scale_fn()) return o_.scale_fn()(x);
  switch (o_.mode()) {
    case CyclicMode::Triangular: return 1.;
    case CyclicMode::Triangular2: return 1 / std::pow(2., x - 1);
    case CyclicMode::ExpRange: return std::pow(o_.gamma(), x);
  }
  return 1.;
}

std::vector<double> CyclicLR::get_lr() {
  const double e = static_cast<double>(last_epoch_);
  const double cycle = std::floor(1 + e / total_size_);
  const double x = 1. + e / total_size_ - cycle;
  const double scale_factor = x <= step_ratio_ ? x / step_ratio_ : (x - 1) / (step_ratio_ - 1);
  // The triangular modes scale by cycle; exp_range, and custom functions in Iterations mode,
  // by iteration.
  const bool by_cycle = o_.scale_fn() ? o_.scale_mode() == ScaleMode::Cycle : o_.mode() != CyclicMode::ExpRange;
  const double s = scale(by_cycle ? cycle : e);
  std::vector<double> lrs;
  for (size_t i = 0; i < base_lrs_.size(); ++i) {
    const double base_height = (max_lrs_[i] - base_lrs_[i]) * scale_factor;
    lrs.push_back(base_lrs_[i] + base_height * s);
  }
  if (momentum_name_) {
    auto& groups = optimizer_->param_groups();
    for (size_t i = 0; i < groups.size(); ++i) {
      const double base_height = (max_momentums_[i] - base_momentums_[i]) * scale_factor;
      groups[i].options().set(momentum_name_, max_momentums_[i] - base_height * s);
    }
  }
  return lrs;
}

OneCycleLR::OneCycleLR(Optimizer& optimizer, OneCycleLROptions options, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch, "OneCycleLR"), o_(std::move(options)) {
  const int64_t total = o_.total_steps();
  EMBER_CHECK(total >= 1, "[OneCycleLR] total_steps must be >= 1, got {}", total);
  const double pct = o_.pct_start();
  EMBER_CHECK(pct >= 0 && pct <= 1, "[OneCycleLR] pct_start must be in [0, 1], got {}", pct);
  const double T = static_cast<double>(total);
  if (o_.three_phase()) {
    phases_ = {{pct * T - 1, Initial, Max, MaxMomentum, BaseMomentum},
               {2 * pct * T - 2, Max, Initial, BaseMomentum, MaxMomentum},
               {T - 1, Initial, Min, MaxMomentum, MaxMomentum}};
  } else {
    phases_ = {{pct * T - 1, Initial, Max, MaxMomentum, BaseMomentum}, {T - 1, Max, Min, BaseMomentum, MaxMomentum}};
  }
  const size_t n = num_groups();
  max_lrs_ = o_.max_lr().expand(n, name_, "max_lr");
  auto& groups = optimizer.param_groups();
  for (size_t i = 0; i < n; ++i) {
    // PyTorch overwrites initial_lr when a schedule starts (and reads it back when resuming).
    if (last_epoch == -1) groups[i].initial_lr = max_lrs_[i] / o_.div_factor();
    EMBER_CHECK(groups[i].initial_lr, "[OneCycleLR] parameter group {} has no initial_lr to resume from", i);
    min_lrs_.push_back(*groups[i].initial_lr / o_.final_div_factor());
    base_lrs_[i] = *groups[i].initial_lr;
  }
  if (o_.cycle_momentum()) {
    momentum_name_ = momentum_option(optimizer, name_);
    max_momentums_ = o_.max_momentum().expand(n, name_, "max_momentum");
    base_momentums_ = o_.base_momentum().expand(n, name_, "base_momentum");
    if (last_epoch == -1)
      for (size_t i = 0; i < n; ++i) groups[i].options().set(momentum_name_, max_momentums_[i]);
  }
  initial_step();
}

double OneCycleLR::anchor(size_t group, Anchor a) const {
  switch (a) {
    case Initial: {
      // Cleared by an optimiser state loaded without one (PyTorch: KeyError 'initial_lr').
      const std::optional<double>& lr = optimizer_->param_groups()[group].initial_lr;
      EMBER_CHECK(lr, "[OneCycleLR] parameter group {} has no initial_lr (an optimiser state loaded since the "
                      "schedule started did not carry one); load the state dict saved with the schedule running",
                  group);
      return *lr;
    }
    case Max: return max_lrs_[group];
    case Min: return min_lrs_[group];
    case BaseMomentum: return base_momentums_[group];
    case MaxMomentum: return max_momentums_[group];
  }
  return 0;
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (o_.anneal_strategy() == AnnealStrategy::Cos) {
    const double cos_out = std::cos(kPi * pct) + 1;
    return end + (start - end) / 2.0 * cos_out;
  }
  return (end - start) * pct + start;
}

std::vector<double> OneCycleLR::get_lr() {
  const int64_t step_num = last_epoch_;
  EMBER_CHECK(step_num <= o_.total_steps(), "[OneCycleLR] tried to step {} times; total_steps is {}", step_num + 1,
              o_.total_steps());
  const double s = static_cast<double>(step_num);
  std::vector<double> lrs;
  auto& groups = optimizer_->param_groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    double start_step = 0, lr = 0, momentum = 0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& ph = phases_[i];
      if (s <= ph.end_step || i + 1 == phases_.size()) {
        // PyTorch divides by zero here (ZeroDivisionError) rather than set a NaN rate.
        EMBER_CHECK(ph.end_step != start_step,
                    "[OneCycleLR] step {} falls in phase {} of zero length (total_steps {}, pct_start {}): "
                    "choose a pct_start that gives every phase at least one step",
                    step_num, i + 1, o_.total_steps(), o_.pct_start());
        const double pct = (s - start_step) / (ph.end_step - start_step);
        lr = anneal(anchor(g, ph.start_lr), anchor(g, ph.end_lr), pct);
        if (momentum_name_) momentum = anneal(anchor(g, ph.start_momentum), anchor(g, ph.end_momentum), pct);
        break;
      }
      start_step = ph.end_step;
    }
    lrs.push_back(lr);
    if (momentum_name_) groups[g].options().set(momentum_name_, momentum);
  }
  return lrs;
}

// ---- ReduceLROnPlateau -------------------------------------------------------------------------------

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions options)
    : optimizer_(&optimizer), o_(std::move(options)) {
  EMBER_CHECK(o_.factor() < 1.0, "[ReduceLROnPlateau] factor must be < 1, got {}", o_.factor());
  EMBER_CHECK(o_.patience() >= 0, "[ReduceLROnPlateau] patience must be >= 0, got {}", o_.patience());
  EMBER_CHECK(o_.cooldown() >= 0, "[ReduceLROnPlateau] cooldown must be >= 0, got {}", o_.cooldown());
  min_lrs_ = o_.min_lr().expand(optimizer.param_groups().size(), "ReduceLROnPlateau", "min_lr");
  best_ = o_.mode() == PlateauMode::Min ? std::numeric_limits<double>::infinity()
                                        : -std::numeric_limits<double>::infinity();
  for (const ParamGroup& g : optimizer.param_groups()) last_lr_.push_back(g.options().get_lr());
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
  const bool rel = o_.threshold_mode() == ThresholdMode::Rel;
  if (o_.mode() == PlateauMode::Min) return rel ? a < best * (1. - o_.threshold()) : a < best - o_.threshold();
  return rel ? a > best * (o_.threshold() + 1.) : a > best + o_.threshold();
}

void ReduceLROnPlateau::step(double metric) {
  auto& groups = optimizer_->param_groups();
  last_epoch_ += 1;
  if (is_better(metric, best_)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    num_bad_epochs_ += 1;
  }
  if (cooldown_counter_ > 0) {
    cooldown_counter_ -= 1;
    num_bad_epochs_ = 0;  // bad epochs in cooldown do not count
  }
  if (num_bad_epochs_ > o_.patience()) {
    // Groups added since construction (add_param_group) share a single min_lr; a list of
    // them no longer fits (PyTorch checks this only when it reduces, too).
    if (groups.size() != min_lrs_.size()) {
      EMBER_CHECK(o_.min_lr().scalar,
                  "[ReduceLROnPlateau] the optimiser has {} parameter groups; min_lr lists {}: give one min_lr per "
                  "group, or one number for all",
                  groups.size(), min_lrs_.size());
      min_lrs_.assign(groups.size(), o_.min_lr().values[0]);
    }
    for (size_t i = 0; i < groups.size(); ++i) {
      const double old_lr = groups[i].options().get_lr();
      const double new_lr = std::max(old_lr * o_.factor(), min_lrs_[i]);
      if (old_lr - new_lr > o_.eps()) groups[i].options().set_lr(new_lr);
    }
    cooldown_counter_ = o_.cooldown();
    num_bad_epochs_ = 0;
  }
  last_lr_.resize(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) last_lr_[i] = groups[i].options().get_lr();
}

SchedulerState ReduceLROnPlateau::state_dict() const {
  SchedulerState s;
  s.scheduler = "ReduceLROnPlateau";
  s.values["best"] = best_;
  s.values["num_bad_epochs"] = static_cast<double>(num_bad_epochs_);
  s.values["cooldown_counter"] = static_cast<double>(cooldown_counter_);
  s.values["last_epoch"] = static_cast<double>(last_epoch_);
  s.lists["last_lr"] = last_lr_;
  return s;
}

void ReduceLROnPlateau::load_state_dict(const SchedulerState& s) {
  EMBER_CHECK(s.scheduler == "ReduceLROnPlateau", "[ReduceLROnPlateau] load_state_dict: the state was saved by {}",
              s.scheduler);
  auto value = [&](const char* key) {
    auto it = s.values.find(key);
    EMBER_CHECK(it != s.values.end(), "[ReduceLROnPlateau] load_state_dict: the state lacks \"{}\"", key);
    return it->second;
  };
  const char* me = "ReduceLROnPlateau";
  const double best = value("best");
  const int64_t bad = as_count(me, "num_bad_epochs", value("num_bad_epochs")),
                cooldown = as_count(me, "cooldown_counter", value("cooldown_counter")),
                epoch = as_count(me, "last_epoch", value("last_epoch"));
  auto it = s.lists.find("last_lr");
  EMBER_CHECK(it != s.lists.end() && it->second.size() == last_lr_.size(),
              "[ReduceLROnPlateau] load_state_dict: the state needs \"last_lr\" with {} values", last_lr_.size());
  best_ = best;
  num_bad_epochs_ = bad;
  cooldown_counter_ = cooldown;
  last_epoch_ = epoch;
  last_lr_ = it->second;
}

}  // namespace ember::optim

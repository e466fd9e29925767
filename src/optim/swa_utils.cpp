// SWALR (see optim/swa_utils.hpp), PyTorch's formulas in its order of operations.

#include <ember/optim/swa_utils.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ember::optim {

namespace {
/// The arguments' checks, before the base constructor records initial_lr in the groups: a
/// refused scheduler leaves the optimiser as it was.
Optimizer& checked(Optimizer& optimizer, const PerGroup& swa_lr, int64_t anneal_epochs) {
  const std::vector<double> lrs = swa_lr.expand(optimizer.param_groups().size(), "SWALR", "swa_lr");
  for (size_t i = 0; i < lrs.size(); ++i)
    EMBER_CHECK(lrs[i] >= 0, "[SWALR] swa_lr must be >= 0, got {} for parameter group {}", lrs[i], i);
  EMBER_CHECK(anneal_epochs >= 0, "[SWALR] anneal_epochs must be >= 0, got {}", anneal_epochs);
  return optimizer;
}
}  // namespace

SWALR::SWALR(Optimizer& optimizer, PerGroup swa_lr, int64_t anneal_epochs, AnnealStrategy anneal_strategy,
             int64_t last_epoch)
    : LRScheduler(checked(optimizer, swa_lr, anneal_epochs), last_epoch, "SWALR"),
      swa_lrs_(swa_lr.expand(optimizer.param_groups().size(), "SWALR", "swa_lr")),
      anneal_epochs_(anneal_epochs),
      strategy_(anneal_strategy) {
  initial_step();
}

std::vector<double> SWALR::get_lr() {
  auto anneal = [this](double t) {
    return strategy_ == AnnealStrategy::Linear ? t : (1 - std::cos(std::numbers::pi * t)) / 2;
  };
  // PyTorch counts from its _step_count, which the constructor's step sets to 1.
  int64_t step = step_count_ - 1;
  if (anneal_epochs_ == 0) step = std::max<int64_t>(1, step);
  const double span = static_cast<double>(std::max<int64_t>(1, anneal_epochs_));
  const double prev_alpha = anneal(std::max(0.0, std::min(1.0, static_cast<double>(step - 1) / span)));
  const double alpha = anneal(std::max(0.0, std::min(1.0, static_cast<double>(step) / span)));
  std::vector<double> lrs(num_groups());
  for (size_t i = 0; i < lrs.size(); ++i) {
    // The rate the annealing started from, recovered from the current one (PyTorch's
    // _get_initial_lr), so that another scheduler or the user may have changed it.
    const double prev_lr =
        prev_alpha == 1 ? swa_lrs_[i] : (group_lr(i) - prev_alpha * swa_lrs_[i]) / (1 - prev_alpha);
    lrs[i] = swa_lrs_[i] * alpha + prev_lr * (1 - alpha);
  }
  return lrs;
}

}  // namespace ember::optim

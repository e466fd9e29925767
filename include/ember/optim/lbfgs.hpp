#pragma once
/// L-BFGS, as torch.optim.LBFGS and libtorch's torch::optim::LBFGS: a quasi-Newton method
/// for full-batch problems (physics-informed networks, style transfer, small regressions).
/// step(closure) runs up to max_iter iterations, calling the closure (which must zero the
/// gradients, compute the loss and call backward) as often as the search needs:
///
///   optim::LBFGS opt(params, optim::LBFGSOptions(1).line_search_fn("strong_wolfe"));
///   for (int i = 0; i < 10; ++i)
///     opt.step([&] { opt.zero_grad(); Tensor l = loss(); l.backward(); return l; });
///
/// As PyTorch's: one parameter group; the directions come from the last history_size
/// updates (two-loop recursion); the step is lr (the first iteration's scaled by
/// min(1, 1 / |g|_1)), or with line_search_fn "strong_wolfe" a step meeting the strong Wolfe
/// conditions (cubic interpolation and zoom). The parameters are handled as one flat vector;
/// its arithmetic is done in double whatever the parameters' dtype (for f64 parameters this
/// matches PyTorch to rounding; the history costs 2 x history_size doubles per parameter
/// element). State (directions, history, counters) round-trips through state_dict().

#include <ember/optim/optimizer.hpp>

#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace ember::optim {

struct LBFGSOptions : OptimizerOptions {
  explicit LBFGSOptions(double lr = 1) : lr_(lr) {}
  EMBER_ARG(double, lr);
  /// Iterations per step() (an integer, held as a number for state dicts).
  EMBER_ARG(double, max_iter) = 20;
  /// Closure calls per step(); negative: max_iter * 5 / 4, as PyTorch's None.
  EMBER_ARG(double, max_eval) = -1;
  EMBER_ARG(double, tolerance_grad) = 1e-7;
  EMBER_ARG(double, tolerance_change) = 1e-9;
  EMBER_ARG(double, history_size) = 100;

 public:
  /// "strong_wolfe", or none (a fixed step of lr).
  LBFGSOptions& line_search_fn(const std::optional<std::string>& name) &;
  LBFGSOptions&& line_search_fn(const std::optional<std::string>& name) && {
    return std::move(line_search_fn(name));
  }
  std::optional<std::string> line_search_fn() const {
    return strong_wolfe_ ? std::optional<std::string>("strong_wolfe") : std::nullopt;
  }
  /// max_eval with its default resolved.
  int64_t effective_max_eval() const;
  EMBER_OPTIM_OPTIONS(LBFGSOptions, "LBFGS")

 private:
  bool strong_wolfe_ = false;
};

class LBFGS : public Optimizer {
 public:
  explicit LBFGS(std::vector<Tensor> params, const LBFGSOptions& defaults = LBFGSOptions());
  LBFGS(std::vector<ParamGroup> groups, const LBFGSOptions& defaults = LBFGSOptions());
  /// Needs the closure; returns the loss of its first call (before this step's updates).
  Tensor step(const LossClosure& closure = nullptr) override;
  StateNames state_names() const override;
  /// The state under parameter 0, as PyTorch's: numbers func_evals, n_iter, t, H_diag,
  /// prev_loss; tensors d, prev_flat_grad, old_dirs and old_stps (history x elements), ro.
  StateDict state_dict() const override;
  void load_state_dict(const StateDict& dict) override;

  /// The search state between steps (flat vectors over all parameters, in group order).
  struct SearchState {
    int64_t func_evals = 0, n_iter = 0;
    std::vector<double> d, prev_flat_grad;
    double t = 0, h_diag = 1, prev_loss = 0;
    bool has_prev = false;  ///< prev_flat_grad and prev_loss are set
    std::deque<std::vector<double>> old_dirs, old_stps;
    std::deque<double> ro;
  };
  const SearchState& search_state() const { return search_; }

 protected:
  void update(const OptimizerOptions& options, std::vector<Item>& items) override;

 private:
  std::vector<double> flat_grad() const;
  /// params += t * d.
  void add_to_params(double t, const std::vector<double>& d);
  std::vector<double> flat_params() const;
  void set_params(const std::vector<double>& x);
  int64_t numel() const;
  SearchState search_;
};

}  // namespace ember::optim

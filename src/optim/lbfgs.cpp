// L-BFGS with an optional strong Wolfe line search (torch.optim.LBFGS semantics, see lbfgs.hpp).
// The parameters are one flat vector of doubles here: gathered from the parameters' gradients,
// written back with p += t d.

#include <ember/optim/lbfgs.hpp>

#include "common.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ember::optim {

// ---- options ------------------------------------------------------------------------------------

LBFGSOptions& LBFGSOptions::line_search_fn(const std::optional<std::string>& name) & {
  EMBER_CHECK(!name || *name == "strong_wolfe", "[LBFGS] line_search_fn must be \"strong_wolfe\" or none, got \"{}\"",
              name.value_or(""));
  strong_wolfe_ = name.has_value();
  return *this;
}

int64_t LBFGSOptions::effective_max_eval() const {
  return max_eval_ < 0 ? static_cast<int64_t>(max_iter_) * 5 / 4 : static_cast<int64_t>(max_eval_);
}

std::vector<OptionField> LBFGSOptions::fields() {
  return {{"lr", &lr_},
          {"max_iter", &max_iter_},
          {"max_eval", &max_eval_},
          {"tolerance_grad", &tolerance_grad_},
          {"tolerance_change", &tolerance_change_},
          {"history_size", &history_size_},
          {"strong_wolfe", &strong_wolfe_}};
}

void LBFGSOptions::validate() const {
  detail::check_non_negative("LBFGS", "lr", lr_);
  detail::check_non_negative("LBFGS", "tolerance_grad", tolerance_grad_);
  detail::check_non_negative("LBFGS", "tolerance_change", tolerance_change_);
  auto whole = [](double v) { return std::isfinite(v) && v == std::floor(v); };
  EMBER_CHECK(whole(max_iter_) && max_iter_ >= 1 && max_iter_ < 1e15, "[LBFGS] max_iter must be a positive integer, got {}",
              max_iter_);
  EMBER_CHECK(whole(history_size_) && history_size_ >= 1 && history_size_ < 1e15,
              "[LBFGS] history_size must be a positive integer, got {}", history_size_);
  EMBER_CHECK(max_eval_ < 0 || (whole(max_eval_) && max_eval_ >= 1 && max_eval_ < 1e15),
              "[LBFGS] max_eval must be a positive integer (or negative for max_iter * 5 / 4), got {}", max_eval_);
}

// ---- vector helpers -----------------------------------------------------------------------------

namespace {
using Vec = std::vector<double>;

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}
/// The largest |a_i|, or NaN when an element is NaN (as PyTorch's abs().max(): a NaN gradient
/// is not "converged").
double max_abs(const Vec& a) {
  double m = 0;
  for (double v : a) {
    if (std::isnan(v)) return v;
    m = std::max(m, std::abs(v));
  }
  return m;
}
/// a += alpha * b
void axpy(Vec& a, double alpha, const Vec& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += alpha * b[i];
}

/// The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, clamped to
/// `bounds` (default: between x1 and x2); their middle when the cubic has none.
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         std::optional<std::pair<double, double>> bounds = std::nullopt) {
  const auto [lo, hi] = bounds.value_or(x1 <= x2 ? std::pair{x1, x2} : std::pair{x2, x1});
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (d2_square < 0) return (lo + hi) / 2;
  const double d2 = std::sqrt(d2_square);
  const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                                  : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
  return std::min(std::max(min_pos, lo), hi);
}

struct Point {
  double t, f, gtd;
  Vec g;
};
struct Search {
  double f, t;
  Vec g;
  int64_t evals;
};

/// A step along d from x meeting the strong Wolfe conditions (sufficient decrease c1, slope
/// c2), by bracketing and zoom with cubic interpolation, at most max_ls evaluations, as
/// PyTorch's _strong_wolfe. `eval(t)` returns the loss and gradient at x + t d.
template <class Eval>
Search strong_wolfe(Eval eval, double t, const Vec& d, double f, const Vec& g, double gtd, double tolerance_change,
                    double c1 = 1e-4, double c2 = 0.9, int64_t max_ls = 25) {
  const double d_norm = max_abs(d);
  auto [f_new, g_new] = eval(t);
  int64_t evals = 1, ls_iter = 0;
  double gtd_new = dot(g_new, d);
  Point prev{0, f, gtd, g};
  Point bracket[2];
  bool done = false, bracketed = false;
  while (ls_iter < max_ls) {
    // In this order, as PyTorch's: no sufficient decrease, a point that meets the
    // conditions, a point past the minimum.
    const bool too_high = f_new > f + c1 * t * gtd || (ls_iter > 1 && f_new >= prev.f);
    if (!too_high && std::abs(gtd_new) <= -c2 * gtd) {
      bracket[0] = bracket[1] = Point{t, f_new, gtd_new, g_new};
      bracketed = done = true;
      break;
    }
    if (too_high || gtd_new >= 0) {
      bracket[0] = prev;
      bracket[1] = Point{t, f_new, gtd_new, g_new};
      bracketed = true;
      break;
    }
    // Extrapolate between 1.01 t - 0.01 t_prev and 10 t.
    const double min_step = t + 0.01 * (t - prev.t), max_step = t * 10;
    const double next = cubic_interpolate(prev.t, prev.f, prev.gtd, t, f_new, gtd_new, std::pair{min_step, max_step});
    prev = Point{t, f_new, gtd_new, g_new};
    t = next;
    std::tie(f_new, g_new) = eval(t);
    ++evals;
    gtd_new = dot(g_new, d);
    ++ls_iter;
  }
  if (!bracketed) {  // max_ls reached: between the start and the last step
    bracket[0] = Point{0, f, gtd, g};
    bracket[1] = Point{t, f_new, gtd_new, g_new};
  }
  // Zoom: shrink the bracket until a point meets the conditions.
  bool insufficient_progress = false;
  int low = bracket[0].f <= bracket[1].f ? 0 : 1;
  while (!done && ls_iter < max_ls) {
    if (std::abs(bracket[1].t - bracket[0].t) * d_norm < tolerance_change) break;
    t = cubic_interpolate(bracket[0].t, bracket[0].f, bracket[0].gtd, bracket[1].t, bracket[1].f, bracket[1].gtd);
    const double hi_t = std::max(bracket[0].t, bracket[1].t), lo_t = std::min(bracket[0].t, bracket[1].t);
    const double eps = 0.1 * (hi_t - lo_t);
    // Too close to an end: move eps inside, unless the last step made progress.
    if (std::min(hi_t - t, t - lo_t) < eps) {
      if (insufficient_progress || t >= hi_t || t <= lo_t) {
        t = std::abs(t - hi_t) < std::abs(t - lo_t) ? hi_t - eps : lo_t + eps;
        insufficient_progress = false;
      } else {
        insufficient_progress = true;
      }
    } else {
      insufficient_progress = false;
    }
    std::tie(f_new, g_new) = eval(t);
    ++evals;
    gtd_new = dot(g_new, d);
    ++ls_iter;
    const int high = 1 - low;
    if (f_new > f + c1 * t * gtd || f_new >= bracket[low].f) {
      bracket[high] = Point{t, f_new, gtd_new, g_new};
      low = bracket[0].f <= bracket[1].f ? 0 : 1;
    } else {
      if (std::abs(gtd_new) <= -c2 * gtd)
        done = true;
      else if (gtd_new * (bracket[high].t - bracket[low].t) >= 0)
        bracket[high] = bracket[low];
      bracket[low] = Point{t, f_new, gtd_new, g_new};
    }
  }
  return Search{bracket[low].f, bracket[low].t, std::move(bracket[low].g), evals};
}

double loss_value(const Tensor& loss) {
  EMBER_CHECK(loss.defined() && loss.numel() == 1, "[LBFGS] the closure must return the loss (one element), got {}",
              loss.defined() ? fmt::format("a tensor of shape {}", loss.sizes()) : std::string("an undefined tensor"));
  return loss.to(DType::F64).to(Device::cpu()).item<double>();
}
}  // namespace

// ---- the optimiser ------------------------------------------------------------------------------

LBFGS::LBFGS(std::vector<Tensor> params, const LBFGSOptions& defaults)
    : LBFGS(detail::one_group(std::move(params)), defaults) {}
LBFGS::LBFGS(std::vector<ParamGroup> groups, const LBFGSOptions& defaults)
    : Optimizer(std::move(groups), defaults.clone()) {
  EMBER_CHECK(param_groups().size() == 1, "[LBFGS] supports one parameter group (as PyTorch's), got {}",
              param_groups().size());
  // As PyTorch: max_eval's default is fixed now (and saved in state dicts), not per step.
  auto& o = static_cast<LBFGSOptions&>(param_groups()[0].options());
  if (o.max_eval() < 0) o.max_eval(static_cast<double>(o.effective_max_eval()));
}

Optimizer::StateNames LBFGS::state_names() const {
  StateNames n;
  n.step = false;
  return n;
}

void LBFGS::update(const OptimizerOptions&, std::vector<Item>&) {
  EMBER_CHECK(false, "[LBFGS] updates only through LBFGS::step(closure), which evaluates the loss many times");
}

int64_t LBFGS::numel() const {
  int64_t n = 0;
  for (const Tensor& p : param_groups()[0].params()) n += p.numel();
  return n;
}

Vec LBFGS::flat_grad() const {
  Vec g;
  g.reserve(static_cast<size_t>(numel()));
  for (const Tensor& p : param_groups()[0].params()) {
    Tensor grad = p.grad();
    if (!grad.defined()) {  // a parameter the loss does not use: zero gradient, as PyTorch
      g.insert(g.end(), static_cast<size_t>(p.numel()), 0.0);
      continue;
    }
    EMBER_CHECK(grad.sizes() == p.sizes(), "[LBFGS] a gradient of shape {} for a parameter of shape {}", grad.sizes(),
                p.sizes());
    Tensor g64 = grad.to(DType::F64).to(Device::cpu()).contiguous();
    const double* v = g64.data_ptr<double>();
    g.insert(g.end(), v, v + g64.numel());
  }
  return g;
}

Vec LBFGS::flat_params() const {
  Vec x;
  x.reserve(static_cast<size_t>(numel()));
  for (const Tensor& p : param_groups()[0].params()) {
    Tensor p64 = p.to(DType::F64).contiguous();
    const double* v = p64.data_ptr<double>();
    x.insert(x.end(), v, v + p64.numel());
  }
  return x;
}

namespace {
/// Writes f(i, old value) into each element of the parameters, which step() has checked to be
/// contiguous CPU f32 or f64 tensors.
template <class F>
void write_params(const std::vector<Tensor>& params, F f) {
  size_t at = 0;
  for (const Tensor& p : params) {
    if (p.dtype() == DType::F64) {
      double* v = const_cast<Tensor&>(p).data_ptr<double>();
      for (int64_t i = 0; i < p.numel(); ++i, ++at) v[i] = f(at, v[i]);
    } else {
      float* v = const_cast<Tensor&>(p).data_ptr<float>();
      for (int64_t i = 0; i < p.numel(); ++i, ++at) v[i] = static_cast<float>(f(at, static_cast<double>(v[i])));
    }
    ember::detail::bump_version(*p.impl().storage);  // written in place: autograd must know
  }
}
}  // namespace

void LBFGS::add_to_params(double t, const Vec& d) {
  write_params(param_groups()[0].params(), [&](size_t i, double v) { return v + t * d[i]; });
}
void LBFGS::set_params(const Vec& x) {
  write_params(param_groups()[0].params(), [&](size_t i, double) { return x[i]; });
}

Tensor LBFGS::step(const LossClosure& closure) {
  EMBER_CHECK(closure != nullptr,
              "[LBFGS] step needs a closure that zeroes the gradients, computes the loss, calls backward and returns "
              "the loss");
  EMBER_CHECK(param_groups().size() == 1, "[LBFGS] supports one parameter group (as PyTorch's), got {}",
              param_groups().size());
  const auto& o = static_cast<const LBFGSOptions&>(param_groups()[0].options());
  o.validate();  // options may have changed since construction
  const double lr = o.lr(), tolerance_grad = o.tolerance_grad(), tolerance_change = o.tolerance_change();
  const auto max_iter = static_cast<int64_t>(o.max_iter()), max_eval = o.effective_max_eval();
  const auto history_size = static_cast<size_t>(o.history_size());
  const bool wolfe = o.line_search_fn().has_value();
  // Every parameter is checked before any is read or written (Module::to may have moved one);
  // write_params relies on it.
  for (const Tensor& p : param_groups()[0].params())
    EMBER_CHECK(p.device().is_cpu() && (p.dtype() == DType::F32 || p.dtype() == DType::F64) && p.is_contiguous(),
                "[LBFGS] parameters must be contiguous f32 or f64 CPU tensors, got {} {} on {}", p.dtype(), p.sizes(),
                p.device());

  auto evaluate = [&]() -> std::pair<Tensor, double> {
    Tensor l;
    {
      autograd::EnableGradGuard grad_on;
      l = closure();
    }
    return {l, loss_value(l)};
  };
  auto [orig_loss, loss] = evaluate();
  autograd::NoGradGuard no_grad;
  int64_t current_evals = 1;
  SearchState& s = search_;
  s.func_evals += 1;
  Vec g = flat_grad();
  EMBER_CHECK(!s.has_prev || s.prev_flat_grad.size() == g.size(),
              "[LBFGS] the parameters hold {} elements, the search state was built for {}", g.size(),
              s.prev_flat_grad.size());
  if (max_abs(g) <= tolerance_grad) return orig_loss;  // already optimal

  for (int64_t n_iter = 1; n_iter <= max_iter; ++n_iter) {
    ++s.n_iter;
    // The direction: steepest descent first, then the two-loop recursion over the history.
    if (s.n_iter == 1) {
      s.d = g;
      for (double& v : s.d) v = -v;
      s.old_dirs.clear(), s.old_stps.clear(), s.ro.clear();
      s.h_diag = 1;
    } else {
      Vec y = g;
      axpy(y, -1.0, s.prev_flat_grad);
      Vec step = s.d;
      for (double& v : step) v *= s.t;
      const double ys = dot(y, step);
      if (ys > 1e-10) {  // curvature condition: keep the pair
        // (a while: history_size may have been lowered, or a longer history loaded)
        while (s.old_dirs.size() >= history_size) s.old_dirs.pop_front(), s.old_stps.pop_front(), s.ro.pop_front();
        s.h_diag = ys / dot(y, y);
        s.old_dirs.push_back(std::move(y));
        s.old_stps.push_back(std::move(step));
        s.ro.push_back(1.0 / ys);
      }
      const size_t num_old = s.old_dirs.size();
      Vec al(num_old);
      Vec q = g;
      for (double& v : q) v = -v;
      for (size_t i = num_old; i-- > 0;) {
        al[i] = dot(s.old_stps[i], q) * s.ro[i];
        axpy(q, -al[i], s.old_dirs[i]);
      }
      for (double& v : q) v *= s.h_diag;
      for (size_t i = 0; i < num_old; ++i) {
        const double be_i = dot(s.old_dirs[i], q) * s.ro[i];
        axpy(q, al[i] - be_i, s.old_stps[i]);
      }
      s.d = std::move(q);
    }
    s.prev_flat_grad = g;
    s.prev_loss = loss;
    s.has_prev = true;
    // The step length: the first scaled down by the gradient's size, then lr.
    double g_l1 = 0;
    for (double v : g) g_l1 += std::abs(v);
    s.t = s.n_iter == 1 ? std::min(1.0, 1.0 / g_l1) * lr : lr;
    const double gtd = dot(g, s.d);
    if (gtd > -tolerance_change) break;  // not a descent direction any more

    int64_t ls_evals = 0;
    bool opt_cond = false;
    if (wolfe) {
      const Vec x0 = flat_params();
      auto at = [&](double t) {
        add_to_params(t, s.d);
        const double f = evaluate().second;
        Vec gt = flat_grad();
        set_params(x0);
        return std::pair<double, Vec>{f, std::move(gt)};
      };
      // PyTorch's LBFGS calls its _strong_wolfe without tolerance_change, so the zoom stops at
      // the line search's own default, 1e-9, whatever the option says: as PyTorch.
      Search r = strong_wolfe(at, s.t, s.d, loss, g, gtd, 1e-9);
      loss = r.f, g = std::move(r.g), s.t = r.t, ls_evals = r.evals;
      add_to_params(s.t, s.d);
      opt_cond = max_abs(g) <= tolerance_grad;
    } else {
      add_to_params(s.t, s.d);
      if (n_iter != max_iter) {  // the last iteration's loss is the next step's first call
        loss = evaluate().second;
        g = flat_grad();
        opt_cond = max_abs(g) <= tolerance_grad;
        ls_evals = 1;
      }
    }
    current_evals += ls_evals;
    s.func_evals += ls_evals;
    if (n_iter == max_iter || current_evals >= max_eval || opt_cond) break;
    if (max_abs(s.d) * std::abs(s.t) <= tolerance_change) break;  // the step no longer moves
    if (std::abs(loss - s.prev_loss) < tolerance_change) break;   // nor the loss
  }
  return orig_loss;
}

// ---- state --------------------------------------------------------------------------------------

namespace {
Tensor vector_tensor(const Vec& v) {
  Tensor t = empty({static_cast<int64_t>(v.size())}, TensorOptions(DType::F64));
  if (!v.empty()) std::memcpy(t.data_ptr<double>(), v.data(), v.size() * sizeof(double));
  return t;
}
Tensor rows_tensor(const std::deque<Vec>& rows, int64_t n) {
  Tensor t = empty({static_cast<int64_t>(rows.size()), n}, TensorOptions(DType::F64));
  for (size_t i = 0; i < rows.size(); ++i)
    std::memcpy(t.data_ptr<double>() + static_cast<int64_t>(i) * n, rows[i].data(), static_cast<size_t>(n) * sizeof(double));
  return t;
}
Vec tensor_vector(const Tensor& t) {
  Tensor c = t.to(DType::F64).to(Device::cpu()).contiguous();
  return Vec(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}
}  // namespace

StateDict LBFGS::state_dict() const {
  StateDict d = Optimizer::state_dict();
  const SearchState& s = search_;
  if (s.func_evals == 0) return d;  // never stepped: no state, as PyTorch
  const int64_t n = numel();
  StateDict::Param p;
  p.numbers = {{"func_evals", static_cast<double>(s.func_evals)},
               {"n_iter", static_cast<double>(s.n_iter)},
               {"t", s.t},
               {"H_diag", s.h_diag}};
  if (s.has_prev) {
    p.numbers["prev_loss"] = s.prev_loss;
    p.tensors["prev_flat_grad"] = vector_tensor(s.prev_flat_grad);
    p.tensors["d"] = vector_tensor(s.d);
    p.tensors["old_dirs"] = rows_tensor(s.old_dirs, n);
    p.tensors["old_stps"] = rows_tensor(s.old_stps, n);
    p.tensors["ro"] = vector_tensor(Vec(s.ro.begin(), s.ro.end()));
  }
  d.state[0] = std::move(p);
  return d;
}

void LBFGS::load_state_dict(const StateDict& dict) {
  // The search state is read and checked before anything changes; the groups and options go
  // through the base (which also checks before changing), with the state entry set aside.
  SearchState s;
  StateDict rest = dict;
  rest.state.clear();
  const int64_t n = numel();
  if (auto it = dict.state.find(0); it != dict.state.end()) {
    const StateDict::Param& p = it->second;
    EMBER_CHECK(dict.state.size() == 1, "[LBFGS] load_state_dict: state for {} parameters, LBFGS keeps it under parameter 0",
                dict.state.size());
    auto number = [&](const char* name) {
      auto f = p.numbers.find(name);
      EMBER_CHECK(f != p.numbers.end(), "[LBFGS] load_state_dict: the state lacks \"{}\"", name);
      return f->second;
    };
    auto count = [&](const char* name) {
      const double v = number(name);
      EMBER_CHECK(v >= 0 && v < 1e15 && v == std::floor(v), "[LBFGS] load_state_dict: \"{}\" must be a count, got {}",
                  name, v);
      return static_cast<int64_t>(v);
    };
    s.func_evals = count("func_evals");
    s.n_iter = count("n_iter");
    s.t = number("t");
    s.h_diag = number("H_diag");
    s.has_prev = p.tensors.count("prev_flat_grad") != 0;
    if (s.has_prev) {
      auto tensor = [&](const char* name) {
        auto f = p.tensors.find(name);
        EMBER_CHECK(f != p.tensors.end() && f->second.defined(), "[LBFGS] load_state_dict: the state lacks \"{}\"", name);
        return f->second;
      };
      s.prev_loss = number("prev_loss");
      s.prev_flat_grad = tensor_vector(tensor("prev_flat_grad"));
      s.d = tensor_vector(tensor("d"));
      Tensor dirs = tensor("old_dirs"), stps = tensor("old_stps"), ro = tensor("ro");
      const int64_t h = ro.numel();
      EMBER_CHECK(static_cast<int64_t>(s.prev_flat_grad.size()) == n && static_cast<int64_t>(s.d.size()) == n &&
                      dirs.sizes() == Shape({h, n}) && stps.sizes() == Shape({h, n}),
                  "[LBFGS] load_state_dict: the state is for {} parameter elements ({} history pairs of shape {} and "
                  "{}), the parameters hold {}",
                  s.prev_flat_grad.size(), h, dirs.sizes(), stps.sizes(), n);
      const Vec all_dirs = tensor_vector(dirs), all_stps = tensor_vector(stps), all_ro = tensor_vector(ro);
      for (int64_t i = 0; i < h; ++i) {
        s.old_dirs.emplace_back(all_dirs.begin() + i * n, all_dirs.begin() + (i + 1) * n);
        s.old_stps.emplace_back(all_stps.begin() + i * n, all_stps.begin() + (i + 1) * n);
        s.ro.push_back(all_ro[static_cast<size_t>(i)]);
      }
    }
  } else {
    EMBER_CHECK(dict.state.empty(), "[LBFGS] load_state_dict: state for parameter {}, LBFGS keeps it under parameter 0",
                dict.state.begin()->first);
  }
  Optimizer::load_state_dict(rest);
  search_ = std::move(s);
}

}  // namespace ember::optim

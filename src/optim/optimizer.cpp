// The optimiser base: options by name, parameter groups, step() (gathering each group's
// parameters that have gradients for one fused update), and state dicts.

#include <ember/optim/optimizer.hpp>

#include <cmath>
#include <cstring>
#include <unordered_set>

namespace ember::optim {

// ---- options by name ----------------------------------------------------------------------------

namespace {
// fields() hands out pointers for reading and writing; the const accessors below only read.
std::vector<OptionField> fields_of(const OptimizerOptions& o) { return const_cast<OptimizerOptions&>(o).fields(); }

std::string field_names(const std::vector<OptionField>& fs) {
  std::string s;
  for (const OptionField& f : fs) s += (s.empty() ? "" : ", ") + std::string(f.name);
  return s;
}
}  // namespace

std::map<std::string, double> OptimizerOptions::values() const {
  std::map<std::string, double> out;
  for (const OptionField& f : fields_of(*this)) out[f.name] = f.number ? *f.number : (*f.flag ? 1.0 : 0.0);
  return out;
}

bool OptimizerOptions::has(std::string_view name) const {
  for (const OptionField& f : fields_of(*this))
    if (name == f.name) return true;
  return false;
}

double OptimizerOptions::get(std::string_view name) const {
  std::vector<OptionField> fs = fields_of(*this);
  for (const OptionField& f : fs)
    if (name == f.name) return f.number ? *f.number : (*f.flag ? 1.0 : 0.0);
  EMBER_FAIL("[{}] no option named \"{}\" (options: {})", optimizer_name(), name, field_names(fs));
}

void OptimizerOptions::set(std::string_view name, double value) {
  std::vector<OptionField> fs = fields();
  for (const OptionField& f : fs) {
    if (name != f.name) continue;
    if (f.number) {
      *f.number = value;
    } else {
      EMBER_CHECK(value == 0 || value == 1, "[{}] option {} is a flag: it must be 0 or 1, got {}", optimizer_name(),
                  name, value);
      *f.flag = value != 0;
    }
    return;
  }
  EMBER_FAIL("[{}] no option named \"{}\" (options: {})", optimizer_name(), name, field_names(fs));
}

// ---- parameter groups -----------------------------------------------------------------------------

ParamGroup::ParamGroup(const ParamGroup& o)
    : initial_lr(o.initial_lr), params_(o.params_), options_(o.options_ ? o.options_->clone() : nullptr) {}

ParamGroup& ParamGroup::operator=(const ParamGroup& o) {
  if (this != &o) {
    initial_lr = o.initial_lr;
    params_ = o.params_;
    options_ = o.options_ ? o.options_->clone() : nullptr;
  }
  return *this;
}

OptimizerOptions& ParamGroup::options() {
  EMBER_CHECK(options_, "[ParamGroup] this group has no options yet: an optimiser gives it its defaults when added");
  return *options_;
}
const OptimizerOptions& ParamGroup::options() const { return const_cast<ParamGroup&>(*this).options(); }

// ---- the optimiser --------------------------------------------------------------------------------

Optimizer::Optimizer(std::vector<ParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults)
    : defaults_(std::move(defaults)) {
  defaults_->validate();
  for (ParamGroup& g : groups) add_param_group(std::move(g));
  EMBER_CHECK(size() > 0, "[{}] got an empty parameter list", name());
}

namespace {
// The checks a parameter must pass when added and again at each step (cheap, and a tensor's
// geometry may have been changed through another handle).
void check_param(const char* opt, const Tensor& p, size_t group, size_t index) {
  EMBER_CHECK(p.device().is_cpu(),
              "[{}] parameter {} of group {} is on {}: optimisers update CPU parameters only for now", opt, index,
              group, p.device());
  EMBER_CHECK(p.dtype() == DType::F32 || p.dtype() == DType::F64,
              "[{}] parameter {} of group {} has dtype {}: optimisers update f32 and f64 parameters", opt, index, group,
              p.dtype());
  EMBER_CHECK(p.is_contiguous(), "[{}] parameter {} of group {} (shape {}, strides {}) is not contiguous", opt, index,
              group, p.sizes(), p.strides());
}
}  // namespace

void Optimizer::add_param_group(ParamGroup group) {
  const size_t gi = groups_.size();
  if (!group.has_options()) {
    group.set_options(defaults_->clone());
  } else {
    EMBER_CHECK(std::strcmp(group.options().optimizer_name(), name()) == 0,
                "[{}] parameter group {} has {} options, not {} options", name(), gi,
                group.options().optimizer_name(), name());
  }
  group.options().validate();
  std::unordered_set<const detail::TensorImpl*> seen;
  for (const ParamGroup& g : groups_)
    for (const Tensor& p : g.params()) seen.insert(&p.impl());
  for (size_t pi = 0; pi < group.params().size(); ++pi) {
    const Tensor& p = group.params()[pi];
    EMBER_CHECK(p.defined(), "[{}] parameter {} of group {} is an undefined tensor", name(), pi, gi);
    EMBER_CHECK(p.is_leaf(), "[{}] parameter {} of group {} (shape {}) is not a leaf: it was produced by {}", name(),
                pi, gi, p.sizes(), p.grad_fn()->name());
    // A parameter that does not require grad (a frozen layer) is accepted, as PyTorch: it is
    // skipped while it has no gradient, so model->parameters() can be passed whole.
    check_param(name(), p, gi, pi);
    EMBER_CHECK(seen.insert(&p.impl()).second,
                "[{}] parameter {} of group {} (shape {}) appears more than once in the optimiser's parameter groups",
                name(), pi, gi, p.sizes());
  }
  groups_.push_back(std::move(group));
}

int64_t Optimizer::size() const {
  int64_t n = 0;
  for (const ParamGroup& g : groups_) n += static_cast<int64_t>(g.params().size());
  return n;
}

const ParamState* Optimizer::state(const Tensor& p) const {
  auto it = state_.find(&p.impl());
  return it == state_.end() ? nullptr : &it->second.state;
}

Tensor Optimizer::step(const LossClosure& closure) {
  Tensor loss;
  if (closure) {
    autograd::EnableGradGuard grad_on;
    loss = closure();
  }
  autograd::NoGradGuard no_grad;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    ParamGroup& g = groups_[gi];
    items_.clear();
    for (size_t pi = 0; pi < g.params().size(); ++pi) {
      const Tensor& p = g.params()[pi];
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      check_param(name(), p, gi, pi);
      EMBER_CHECK(grad.sizes() == p.sizes() && grad.dtype() == p.dtype() && grad.device() == p.device(),
                  "[{}] the gradient of parameter {} of group {} ({} {} on {}) does not match it ({} {} on {})", name(),
                  pi, gi, grad.sizes(), grad.dtype(), grad.device(), p.sizes(), p.dtype(), p.device());
      if (!grad.is_contiguous()) grad = grad.contiguous();
      Entry& e = state_[&p.impl()];
      if (!e.param.defined()) e.param = p;
      items_.push_back(Item{p, std::move(grad), &e.state});
      conform_buffers(items_.back(), gi, pi);
    }
    if (items_.empty()) continue;
    update(g.options(), items_);
    // The update wrote the parameters and buffers in place: autograd must see it
    // (see Note [Version counter] in docs/design.md).
    for (Item& it : items_) {
      detail::bump_version(*it.param.impl().storage);
      for (Tensor& b : it.state->buffers)
        if (b.defined()) detail::bump_version(*b.impl().storage);
    }
  }
  items_.clear();  // holds no gradient beyond the step
  drop_stale_state();
  return loss;
}

void Optimizer::conform_buffers(Item& it, size_t group, size_t index) const {
  const StateNames names = state_names();
  for (int i = 0; i < 3; ++i) {
    Tensor& b = it.state->buffers[i];
    if (!b.defined()) continue;
    EMBER_CHECK(b.sizes() == it.param.sizes(),
                "[{}] parameter {} of group {} has shape {}, but its state \"{}\" has shape {}: the parameter was "
                "replaced or resized after the optimiser updated it; make a new optimiser (or load a state dict) for "
                "the new parameters",
                name(), index, group, it.param.sizes(), names.buffers[i] ? names.buffers[i] : "buffer", b.sizes());
    // Module::to(dtype/device) changes a parameter in place: its state follows, as PyTorch's
    // update (whose ops promote and cast) keeps going.
    if (b.dtype() != it.param.dtype() || b.device() != it.param.device())
      b = b.to(it.param.device(), it.param.dtype()).contiguous();
  }
}

void Optimizer::drop_stale_state() {
  // Usually nothing to drop: count the groups' parameters that have state first (lookups, no
  // allocation), and rebuild only when some entry belongs to no group.
  size_t with_state = 0;
  for (const ParamGroup& g : groups_)
    for (const Tensor& p : g.params()) with_state += p.defined() && state_.count(&p.impl());
  if (with_state == state_.size()) return;
  std::unordered_set<const detail::TensorImpl*> held;
  for (const ParamGroup& g : groups_)
    for (const Tensor& p : g.params())
      if (p.defined()) held.insert(&p.impl());
  std::erase_if(state_, [&](const auto& kv) { return !held.count(kv.first); });
}

unsigned Optimizer::required_buffers(const OptimizerOptions&) const {
  const StateNames names = state_names();
  unsigned mask = 0;
  for (int i = 0; i < 3; ++i)
    if (names.buffers[i]) mask |= 1u << i;
  return mask;
}

void Optimizer::zero_grad(bool set_to_none) {
  for (ParamGroup& g : groups_)
    for (Tensor& p : g.params()) p.zero_grad(set_to_none);
}

bool Optimizer::ensure_buffer(Item& item, int i, double fill) {
  Tensor& b = item.state->buffers[i];
  if (b.defined()) return false;
  b = full(item.param.sizes(), fill, TensorOptions(item.param.dtype()));
  return true;
}

fused::Param Optimizer::view(const Item& item) {
  fused::Param p;
  p.param = item.param.raw_data();
  p.grad = item.grad.raw_data();
  for (int i = 0; i < 3; ++i) p.buf[i] = item.state->buffers[i].defined() ? item.state->buffers[i].raw_data() : nullptr;
  p.numel = item.param.numel();
  p.dtype = item.param.dtype();
  return p;
}

// ---- state dicts ----------------------------------------------------------------------------------

StateDict Optimizer::state_dict() const {
  autograd::NoGradGuard no_grad;
  StateNames names = state_names();
  StateDict d;
  d.optimizer = name();
  int64_t index = 0;
  for (const ParamGroup& g : groups_) {
    StateDict::Group gd;
    gd.options = g.options().values();
    if (g.initial_lr) gd.options["initial_lr"] = *g.initial_lr;
    for (const Tensor& p : g.params()) {
      gd.params.push_back(index);
      auto it = state_.find(&p.impl());
      if (it != state_.end()) {
        const ParamState& st = it->second.state;
        StateDict::Param pd;
        if (names.step) pd.numbers["step"] = static_cast<double>(st.step);
        for (int i = 0; i < 2; ++i)
          if (names.numbers[i]) pd.numbers[names.numbers[i]] = st.numbers[i];
        for (int i = 0; i < 3; ++i)
          if (names.buffers[i] && st.buffers[i].defined()) pd.tensors[names.buffers[i]] = st.buffers[i].clone();
        // Nothing to save (SGD without momentum, or a step that failed before the update
        // made any buffer): no entry, as PyTorch.
        const bool started = st.step > 0 || !pd.tensors.empty();
        if (started && (!pd.numbers.empty() || !pd.tensors.empty())) d.state[index] = std::move(pd);
      }
      ++index;
    }
    d.param_groups.push_back(std::move(gd));
  }
  return d;
}

void Optimizer::load_state_dict(const StateDict& d) {
  autograd::NoGradGuard no_grad;
  const char* opt = name();
  EMBER_CHECK(d.optimizer == opt, "[{}] load_state_dict: the state dict was saved by {}", opt, d.optimizer);
  EMBER_CHECK(d.param_groups.size() == groups_.size(),
              "[{}] load_state_dict: the state dict has {} parameter groups, the optimiser {}", opt,
              d.param_groups.size(), groups_.size());
  // Everything is checked and built first, so that a failed load leaves the optimiser as it was.
  // Saved index -> our parameter and its group, as PyTorch pairs them.
  struct Slot {
    const Tensor* param;
    size_t group;
  };
  std::map<int64_t, Slot> by_index;
  std::vector<std::unique_ptr<OptimizerOptions>> options;
  std::vector<std::optional<double>> initial_lrs;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const StateDict::Group& sg = d.param_groups[gi];
    const ParamGroup& g = groups_[gi];
    EMBER_CHECK(sg.params.size() == g.params().size(),
                "[{}] load_state_dict: group {} has {} parameters in the state dict and {} in the optimiser", opt, gi,
                sg.params.size(), g.params().size());
    for (size_t pi = 0; pi < sg.params.size(); ++pi) {
      EMBER_CHECK(by_index.emplace(sg.params[pi], Slot{&g.params()[pi], gi}).second,
                  "[{}] load_state_dict: parameter index {} appears twice in the state dict's groups", opt,
                  sg.params[pi]);
    }
    std::unique_ptr<OptimizerOptions> o = g.options().clone();
    std::optional<double> initial_lr;
    for (const OptionField& f : o->fields()) {
      if (f.optional && !sg.options.count(f.name)) {
        *f.flag = f.value_before;
        continue;
      }
      EMBER_CHECK(sg.options.count(f.name), "[{}] load_state_dict: group {} lacks option \"{}\"", opt, gi, f.name);
    }
    for (const auto& [key, value] : sg.options) {
      if (key == "initial_lr") {
        initial_lr = value;
      } else {
        EMBER_CHECK(o->has(key), "[{}] load_state_dict: group {} has an unknown option \"{}\" = {}", opt, gi, key,
                    value);
        o->set(key, value);
      }
    }
    o->validate();
    options.push_back(std::move(o));
    initial_lrs.push_back(initial_lr);
  }
  StateNames names = state_names();
  std::unordered_map<const detail::TensorImpl*, Entry> state;
  for (const auto& [index, sp] : d.state) {
    auto found = by_index.find(index);
    EMBER_CHECK(found != by_index.end(), "[{}] load_state_dict: state for parameter {}, which no group holds", opt,
                index);
    const Tensor& p = *found->second.param;
    // What the next update reads must all be there (PyTorch's step fails on a missing key):
    // a step count without its moments, or moments without their step count, would restart
    // the bias correction or the averages silently.
    EMBER_CHECK(!names.step || sp.numbers.count("step"),
                "[{}] load_state_dict: the state of parameter {} has no \"step\"", opt, index);
    for (const char* number : names.numbers) {
      if (!number) continue;
      auto v = sp.numbers.find(number);
      EMBER_CHECK(v != sp.numbers.end() && std::isfinite(v->second) && v->second >= 0,
                  "[{}] load_state_dict: the state of parameter {} needs a finite \"{}\" >= 0, got {}", opt, index,
                  number, v == sp.numbers.end() ? std::string("none") : fmt::format("{}", v->second));
    }
    const unsigned required = required_buffers(*options[found->second.group]);
    for (int i = 0; i < 3; ++i)
      EMBER_CHECK(!(required >> i & 1) || sp.tensors.count(names.buffers[i]),
                  "[{}] load_state_dict: the state of parameter {} has no buffer \"{}\", which its group's options "
                  "use",
                  opt, index, names.buffers[i]);
    ParamState st;
    for (const auto& [key, value] : sp.numbers) {
      if (key == "step" && names.step) {
        EMBER_CHECK(value >= 0 && value < 9.0e15 && value == std::floor(value),
                    "[{}] load_state_dict: step of parameter {} must be a whole number >= 0, got {}", opt, index,
                    value);
        st.step = static_cast<int64_t>(value);
      } else if (names.numbers[0] && key == names.numbers[0]) {
        st.numbers[0] = value;
      } else if (names.numbers[1] && key == names.numbers[1]) {
        st.numbers[1] = value;
      } else {
        EMBER_FAIL("[{}] load_state_dict: parameter {} has unknown state \"{}\" = {}", opt, index, key, value);
      }
    }
    for (const auto& [key, t] : sp.tensors) {
      int slot = -1;
      for (int i = 0; i < 3; ++i)
        if (names.buffers[i] && key == names.buffers[i]) slot = i;
      EMBER_CHECK(slot >= 0, "[{}] load_state_dict: parameter {} has an unknown buffer \"{}\"", opt, index, key);
      EMBER_CHECK(t.defined() && t.is_floating_point() && t.sizes() == p.sizes(),
                  "[{}] load_state_dict: buffer \"{}\" of parameter {} ({}) does not fit the parameter ({} {}): it "
                  "must be a floating-point tensor of the parameter's shape",
                  opt, key, index, t.defined() ? fmt::format("{} {}", t.dtype(), t.sizes()) : std::string("undefined"),
                  p.dtype(), p.sizes());
      // A private, contiguous copy in the parameter's dtype and on its device (as PyTorch
      // casts floating-point state to the parameter's dtype).
      Tensor b = t.to(p.device(), p.dtype());
      if (b.is_same(t)) b = t.clone();
      st.buffers[slot] = b.contiguous();
    }
    state.emplace(&p.impl(), Entry{p, std::move(st)});
  }
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    groups_[gi].set_options(std::move(options[gi]));
    groups_[gi].initial_lr = initial_lrs[gi];
  }
  state_ = std::move(state);
}

}  // namespace ember::optim

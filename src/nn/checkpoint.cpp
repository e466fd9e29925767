// Training checkpoints (include/ember/nn/checkpoint.hpp): one safetensors file whose tensors
// are the model's state and the optimiser's buffers, and whose "__metadata__" holds every
// number. One file because a rename is atomic and a set of files is not: a crash between two
// renames would leave a model from step k beside an optimiser from step j. The metadata is a
// flat string map (what safetensors offers) with dotted keys:
//
//   ember.checkpoint              format version, "1"
//   step                          the caller's step counter
//   rng.seed, rng.offset          the global Philox generator (decimal)
//   optim                         the optimiser's kind, "Adam"
//   optim.groups                  number of parameter groups
//   optim.group.<g>.params        indices of the group's parameters, "0,1,2"
//   optim.group.<g>.<option>      every option (and initial_lr when set)
//   optim.state                   indices of the parameters that have state
//   optim.state.<i>.buffers       names of parameter i's buffer tensors, "exp_avg,exp_avg_sq"
//   optim.state.<i>.<number>      step and the optimiser's numbers (NAdam: mu_product; ASGD: eta, mu)
//   sched                         the scheduler's kind (absent: none was saved)
//   sched.value.<k>, sched.list.<k>, sched.children, sched.child.<j>...   its SchedulerState
//   user.<key>                    the caller's metadata
//
// Numbers are written by std::to_chars in their shortest form that reads back to the same
// double (inf and nan included), so learning rates and moments resume bit for bit.

#include <ember/nn/checkpoint.hpp>

#include <charconv>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <vector>

namespace ember::nn {

const char* SchedulerRef::name() const { return lr_ ? lr_->name() : plateau_ ? "ReduceLROnPlateau" : ""; }

optim::SchedulerState SchedulerRef::state_dict() const {
  EMBER_CHECK(*this, "[SchedulerRef] no scheduler");
  return lr_ ? lr_->state_dict() : plateau_->state_dict();
}

void SchedulerRef::load_state_dict(const optim::SchedulerState& s) const {
  EMBER_CHECK(*this, "[SchedulerRef] no scheduler");
  if (lr_) lr_->load_state_dict(s);
  else plateau_->load_state_dict(s);
}

namespace {

constexpr const char* kVersionKey = "ember.checkpoint";
constexpr const char* kVersion = "1";
constexpr int kMaxSchedulerDepth = 8;  // SequentialLR inside SequentialLR inside ...

std::string number(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

template <class T, class F>
std::string join(const std::vector<T>& items, F&& str) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) s += ',';
    s += str(items[i]);
  }
  return s;
}

void put_scheduler(io::Metadata& m, const std::string& pre, const optim::SchedulerState& s) {
  m[pre] = s.scheduler;
  for (const auto& [k, v] : s.values) m[pre + ".value." + k] = number(v);
  for (const auto& [k, l] : s.lists) m[pre + ".list." + k] = join(l, number);
  m[pre + ".children"] = std::to_string(s.children.size());
  for (size_t i = 0; i < s.children.size(); ++i) put_scheduler(m, pre + ".child." + std::to_string(i), s.children[i]);
}

/// Reads the metadata of one checkpoint: every entry is parsed strictly, failures name the
/// file and the key, and the entries read are remembered so that unknown ones are errors.
class Reader {
 public:
  Reader(const char* op, const std::string& path, const io::Metadata& m) : op_(op), path_(path), m_(m) {}

  template <class... A>
  [[noreturn]] void fail(fmt::format_string<A...> f, A&&... a) const {
    EMBER_FAIL("[{}] '{}': {}", op_, path_, fmt::format(f, std::forward<A>(a)...));
  }

  /// Fails unless the file is a checkpoint of the version this code writes.
  void check_version() {
    auto it = m_.find(kVersionKey);
    if (it == m_.end())
      fail("not an Ember training checkpoint (its __metadata__ has no '{}'; a weights file is read with nn::load)",
           kVersionKey);
    if (it->second != kVersion)
      fail("metadata '{}' is \"{}\": this Ember reads checkpoint format {}", kVersionKey, it->second, kVersion);
    used_.insert(kVersionKey);
  }

  bool has(const std::string& key) const { return m_.count(key) != 0; }
  const std::string& text(const std::string& key) {
    auto it = m_.find(key);
    if (it == m_.end()) fail("the checkpoint lacks the metadata entry '{}'", key);
    used_.insert(key);
    return it->second;
  }
  double real(const std::string& key) { return parse_real(key, text(key)); }
  int64_t integer(const std::string& key, int64_t lo, int64_t hi) { return parse_int(key, text(key), lo, hi); }
  uint64_t u64(const std::string& key) {
    const std::string& s = text(key);
    uint64_t v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size())
      fail("metadata '{}' = \"{}\" is not an unsigned 64-bit integer", key, s);
    return v;
  }
  std::vector<double> reals(const std::string& key) {
    std::vector<double> out;
    for (std::string_view item : split(text(key))) out.push_back(parse_real(key, item));
    return out;
  }
  std::vector<int64_t> integers(const std::string& key, int64_t lo, int64_t hi) {
    std::vector<int64_t> out;
    for (std::string_view item : split(text(key))) out.push_back(parse_int(key, item, lo, hi));
    return out;
  }
  std::vector<std::string> words(const std::string& key) {
    std::vector<std::string> out;
    for (std::string_view item : split(text(key))) {
      if (item.empty()) fail("metadata '{}' = \"{}\" has an empty name", key, m_.at(key));
      out.emplace_back(item);
    }
    return out;
  }
  /// Keys that start with `prefix` (not marked as read).
  std::vector<std::string> keys_under(const std::string& prefix) const {
    std::vector<std::string> out;
    for (auto it = m_.lower_bound(prefix); it != m_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
      out.push_back(it->first);
    return out;
  }
  /// Fails naming the first entry nobody read (other than the caller's "user." ones).
  void check_all_read() const {
    for (const auto& [k, v] : m_)
      if (!used_.count(k) && k.compare(0, 5, "user.") != 0) fail("unknown metadata entry '{}' = \"{}\"", k, v);
  }
  io::Metadata user_metadata() const {
    io::Metadata out;
    for (const std::string& k : keys_under("user.")) out[k.substr(5)] = m_.at(k);
    return out;
  }

 private:
  static std::vector<std::string_view> split(std::string_view s) {
    std::vector<std::string_view> out;
    if (s.empty()) return out;
    for (size_t start = 0;;) {
      size_t comma = s.find(',', start);
      out.push_back(s.substr(start, comma - start));
      if (comma == std::string_view::npos) return out;
      start = comma + 1;
    }
  }
  double parse_real(const std::string& key, std::string_view s) const {
    double v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size())
      fail("metadata '{}' holds \"{}\", which is not a number", key, s);
    return v;
  }
  int64_t parse_int(const std::string& key, std::string_view s, int64_t lo, int64_t hi) const {
    int64_t v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size())
      fail("metadata '{}' holds \"{}\", which is not an integer", key, s);
    if (v < lo || v > hi) fail("metadata '{}' holds {}, outside [{}, {}]", key, v, lo, hi);
    return v;
  }

  const char* op_;
  const std::string& path_;
  const io::Metadata& m_;
  std::set<std::string> used_;
};

optim::SchedulerState read_scheduler(Reader& r, const std::string& pre, int depth) {
  if (depth > kMaxSchedulerDepth) r.fail("scheduler '{}' is nested more than {} deep", pre, kMaxSchedulerDepth);
  optim::SchedulerState s;
  s.scheduler = r.text(pre);
  for (const std::string& k : r.keys_under(pre + ".value.")) s.values[k.substr(pre.size() + 7)] = r.real(k);
  for (const std::string& k : r.keys_under(pre + ".list.")) s.lists[k.substr(pre.size() + 6)] = r.reals(k);
  const int64_t n = r.integer(pre + ".children", 0, 64);
  for (int64_t i = 0; i < n; ++i)
    s.children.push_back(read_scheduler(r, pre + ".child." + std::to_string(i), depth + 1));
  return s;
}

/// The optimiser's state dict as the file describes it; `tensors` are the file's
/// "optim.state.*" tensors, each of which must be claimed by some parameter's buffer list.
optim::StateDict read_optimizer(Reader& r, const optim::Optimizer& opt,
                                std::unordered_map<std::string, io::detail::TensorRef>& tensors) {
  optim::StateDict d;
  d.optimizer = r.text("optim");
  if (d.optimizer != opt.name())
    r.fail("metadata 'optim': the checkpoint holds {} optimiser state; this optimiser is {}", d.optimizer, opt.name());
  const int64_t groups = r.integer("optim.groups", 0, 1 << 20);
  if (static_cast<size_t>(groups) != opt.param_groups().size())
    r.fail("metadata 'optim.groups': the checkpoint's optimiser has {} parameter groups, this one {}", groups,
           opt.param_groups().size());
  const int64_t last = opt.size() - 1;
  for (int64_t g = 0; g < groups; ++g) {
    const std::string pre = "optim.group." + std::to_string(g) + ".";
    optim::StateDict::Group group;
    group.params = r.integers(pre + "params", 0, last);
    for (const std::string& k : r.keys_under(pre))
      if (k != pre + "params") group.options[k.substr(pre.size())] = r.real(k);
    d.param_groups.push_back(std::move(group));
  }
  std::set<std::string> claimed;
  for (int64_t i : r.integers("optim.state", 0, last)) {
    const std::string pre = "optim.state." + std::to_string(i) + ".";
    if (d.state.count(i)) r.fail("metadata 'optim.state' lists parameter {} twice", i);
    optim::StateDict::Param& p = d.state[i];
    for (const std::string& k : r.keys_under(pre))
      if (k != pre + "buffers") p.numbers[k.substr(pre.size())] = r.real(k);
    for (const std::string& b : r.words(pre + "buffers")) {
      auto it = tensors.find(pre + b);
      if (it == tensors.end()) r.fail("the checkpoint lacks the tensor '{}{}' (listed in '{}buffers')", pre, b, pre);
      p.tensors[b] = Tensor(it->second);
      claimed.insert(it->first);
    }
  }
  for (const auto& [name, t] : tensors)
    if (!claimed.count(name)) r.fail("tensor '{}' belongs to no parameter listed in 'optim.state'", name);
  return d;
}

/// Fails listing every model tensor that is missing, unexpected or of another shape or dtype.
void check_model(const Reader& r, const io::detail::NamedTensors& mine, const io::detail::NamedTensors& saved) {
  std::unordered_map<std::string, const io::detail::TensorRef*> in_file;
  for (const auto& [name, t] : saved) in_file.emplace(name, &t);
  std::vector<std::string> problems;
  std::set<std::string> seen;
  for (const auto& [name, ref] : mine) {
    seen.insert(name);
    auto it = in_file.find(name);
    if (it == in_file.end()) {
      problems.push_back(fmt::format("missing tensor 'model.{}'", name));
      continue;
    }
    Tensor want(ref), got(*it->second);
    if (got.sizes() != want.sizes() || got.dtype() != want.dtype())
      problems.push_back(fmt::format("tensor 'model.{}' is {} {} in the checkpoint, {} {} in the model", name,
                                     got.dtype(), got.sizes(), want.dtype(), want.sizes()));
  }
  for (const auto& [name, t] : saved)
    if (!seen.count(name)) problems.push_back(fmt::format("unexpected tensor 'model.{}'", name));
  if (problems.empty()) return;
  std::string msg;
  for (const std::string& p : problems) msg += "\n  " + p;
  r.fail("the checkpoint's model does not fit this model:{}", msg);
}

constexpr std::string_view kModelPrefix = "model.";

}  // namespace

namespace detail {

[[noreturn]] void fail_in_file(const char* op, const std::string& path, const char* message) {
  EMBER_FAIL("[{}] '{}': {}", op, path, message);
}

void save_checkpoint(const std::string& path, const io::detail::NamedTensors& model, const optim::Optimizer& optimizer,
                     SchedulerRef scheduler, int64_t step, const io::Metadata& metadata) {
  EMBER_CHECK(step >= 0, "[save_checkpoint] '{}': step must be >= 0, got {}", path, step);
  io::detail::NamedTensors tensors;
  for (const auto& [name, t] : model) tensors.emplace_back(std::string(kModelPrefix) + name, t);

  io::Metadata m;
  m[kVersionKey] = kVersion;
  m["step"] = std::to_string(step);
  const ember::detail::RandomState rng = get_rng_state();
  m["rng.seed"] = std::to_string(rng.seed);
  m["rng.offset"] = std::to_string(rng.offset);

  const optim::StateDict sd = optimizer.state_dict();
  m["optim"] = sd.optimizer;
  m["optim.groups"] = std::to_string(sd.param_groups.size());
  for (size_t g = 0; g < sd.param_groups.size(); ++g) {
    const std::string pre = "optim.group." + std::to_string(g) + ".";
    m[pre + "params"] = join(sd.param_groups[g].params, [](int64_t i) { return std::to_string(i); });
    for (const auto& [k, v] : sd.param_groups[g].options) m[pre + k] = number(v);
  }
  std::vector<int64_t> with_state;
  for (const auto& [i, p] : sd.state) {
    with_state.push_back(i);
    const std::string pre = "optim.state." + std::to_string(i) + ".";
    for (const auto& [k, v] : p.numbers) m[pre + k] = number(v);
    std::vector<std::string> names;
    for (const auto& [k, t] : p.tensors) {
      names.push_back(k);
      tensors.emplace_back(pre + k, t.impl_ref());
    }
    m[pre + "buffers"] = join(names, [](const std::string& s) { return s; });
  }
  m["optim.state"] = join(with_state, [](int64_t i) { return std::to_string(i); });

  if (scheduler) put_scheduler(m, "sched", scheduler.state_dict());
  for (const auto& [k, v] : metadata) m["user." + k] = v;
  io::detail::save_safetensors(path, tensors, m);
}

CheckpointInfo load_checkpoint(const std::string& path, const io::detail::NamedTensors& model,
                               optim::Optimizer& optimizer, SchedulerRef scheduler, bool restore_rng,
                               io::detail::NamedTensors& model_values) {
  // Everything is read and checked before anything changes.
  io::SafetensorsFile file(path);
  Reader r("load_checkpoint", path, file.metadata());
  r.check_version();
  CheckpointInfo info;
  info.step = r.integer("step", 0, INT64_MAX);
  const ember::detail::RandomState rng{r.u64("rng.seed"), r.u64("rng.offset")};

  io::detail::NamedTensors saved_model;
  std::unordered_map<std::string, io::detail::TensorRef> optim_tensors;
  for (const std::string& name : file.keys()) {
    if (name.compare(0, kModelPrefix.size(), kModelPrefix) == 0)
      saved_model.emplace_back(name.substr(kModelPrefix.size()), file.get(name).impl_ref());
    else if (name.compare(0, 12, "optim.state.") == 0)
      optim_tensors.emplace(name, file.get(name).impl_ref());
    else
      r.fail("unexpected tensor '{}' (a checkpoint's tensors start with 'model.' or 'optim.state.')", name);
  }
  const optim::StateDict optim_state = read_optimizer(r, optimizer, optim_tensors);

  std::optional<optim::SchedulerState> sched_state;
  if (r.has("sched")) sched_state = read_scheduler(r, "sched", 0);
  if (sched_state && !scheduler)
    r.fail("metadata 'sched': the checkpoint holds {} scheduler state; pass that scheduler to resume",
           sched_state->scheduler);
  if (!sched_state && scheduler)
    r.fail("metadata 'sched': the checkpoint holds no scheduler state, but a {} scheduler was given", scheduler.name());
  if (sched_state && sched_state->scheduler != scheduler.name())
    r.fail("metadata 'sched': the checkpoint holds {} scheduler state; this scheduler is {}", sched_state->scheduler,
           scheduler.name());
  info.metadata = r.user_metadata();
  r.check_all_read();
  check_model(r, model, saved_model);

  // The optimiser checks its state before changing anything; a scheduler may not (SequentialLR
  // loads its children one by one), so its old state is kept to undo a partial or a refused load.
  std::optional<optim::SchedulerState> old_sched;
  if (scheduler) old_sched = scheduler.state_dict();
#if EMBER_HAS_EXCEPTIONS
  const char* stage = "the scheduler state does not fit";
  try {
    if (scheduler) scheduler.load_state_dict(*sched_state);
    stage = "the optimiser state does not fit";
    optimizer.load_state_dict(optim_state);
  } catch (const Error& e) {
    if (old_sched) scheduler.load_state_dict(*old_sched);
    r.fail("{}: {}", stage, e.what());
  }
#else
  if (scheduler) scheduler.load_state_dict(*sched_state);
  optimizer.load_state_dict(optim_state);
#endif
  if (restore_rng) set_rng_state(rng);
  model_values = std::move(saved_model);
  return info;
}

io::detail::NamedTensors checkpoint_model(const std::string& path) {
  io::SafetensorsFile file(path);
  Reader r("load_checkpoint_model", path, file.metadata());
  r.check_version();
  io::detail::NamedTensors out;
  for (const std::string& name : file.keys())
    if (name.compare(0, kModelPrefix.size(), kModelPrefix) == 0)
      out.emplace_back(name.substr(kModelPrefix.size()), file.get(name).impl_ref());
  return out;
}

}  // namespace detail

CheckpointInfo checkpoint_info(const std::string& path) {
  io::Metadata m = io::load_safetensors_metadata(path);
  Reader r("checkpoint_info", path, m);
  r.check_version();
  CheckpointInfo info;
  info.step = r.integer("step", 0, INT64_MAX);
  info.metadata = r.user_metadata();
  return info;
}

}  // namespace ember::nn

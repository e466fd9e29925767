// Training checkpoints (nn/checkpoint.hpp): a run that saves at step k and a run resumed from
// that file in fresh objects, after the random state was changed, must end bit-identical to a
// run that never stopped (parameters, optimiser state, learning rates, random state); dropout
// makes the random state matter, and a control resumed without it must differ. Then every
// kind of malformed or mismatched checkpoint, and atomic saving.

#include "io_test_util.hpp"

#include <ember/nn.hpp>
#include <ember/nn/checkpoint.hpp>
#include <ember/nn/serialize.hpp>
#include <ember/optim.hpp>

#include "atomic_writer.hpp"

#include <bit>
#include <cerrno>
#include <functional>
#include <memory>

namespace test_checkpoint {  // this file's own names in a unity build (tests/meson.build)

using namespace io_test;
using ember::io::Metadata;
using ember::io::TensorDict;

namespace {

nn::Sequential make_mlp(int64_t hidden = 16) {
  return nn::Sequential(nn::Linear(6, hidden), nn::ReLU(), nn::Dropout(0.3), nn::Linear(hidden, hidden), nn::Tanh(),
                        nn::Dropout(0.2), nn::Linear(hidden, 3));
}

/// A model, its optimiser and scheduler, built the same way for every run.
struct Run {
  nn::Sequential model{nullptr};
  std::unique_ptr<optim::Optimizer> opt;
  std::shared_ptr<optim::LRScheduler> sched;
  std::unique_ptr<optim::ReduceLROnPlateau> plateau;
  nn::SchedulerRef sched_ref() const {
    if (plateau) return *plateau;
    return sched.get();
  }
  std::vector<double> lrs() const {
    std::vector<double> out;
    for (const auto& g : opt->param_groups()) out.push_back(g.options().get_lr());
    return out;
  }
};
using MakeRun = std::function<Run()>;

struct Data {
  Tensor x, y;
};
Data make_data() {
  manual_seed(7);
  return {randn({32, 6}), randn({32, 3})};
}

/// One training step on batch `step` (8 rows, in a fixed order), then the scheduler's step.
void train_step(Run& r, const Data& d, int64_t step) {
  const int64_t b = (step * 8) % 32;
  r.opt->zero_grad();
  Tensor loss = nn::F::mse_loss(r.model->forward(d.x.narrow(0, b, 8)), d.y.narrow(0, b, 8));
  loss.backward();
  r.opt->step();
  if (r.sched) r.sched->step();
  if (r.plateau) r.plateau->step(loss.item<double>());
}

bool same_bits(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }

/// Whether two runs are in bit-identical states; with `report`, CHECKs each part.
bool same_state(const Run& a, const Run& b, bool report) {
  bool same = true;
  auto check = [&](bool ok, const std::string& what) {
    if (report) CHECK_MESSAGE(ok, what);
    same = same && ok;
  };
  auto sa = a.model->state_dict(), sb = b.model->state_dict();
  check(sa.size() == sb.size(), "model state sizes");
  for (size_t i = 0; i < std::min(sa.size(), sb.size()); ++i)
    check(sa[i].first == sb[i].first && tensor_bytes(sa[i].second) == tensor_bytes(sb[i].second),
          "model tensor " + sa[i].first);
  optim::StateDict oa = a.opt->state_dict(), ob = b.opt->state_dict();
  check(oa.param_groups.size() == ob.param_groups.size(), "group count");
  for (size_t g = 0; g < std::min(oa.param_groups.size(), ob.param_groups.size()); ++g) {
    check(oa.param_groups[g].params == ob.param_groups[g].params, "group params");
    check(oa.param_groups[g].options.size() == ob.param_groups[g].options.size(), "group options");
    for (const auto& [k, v] : oa.param_groups[g].options)
      check(ob.param_groups[g].options.count(k) && same_bits(v, ob.param_groups[g].options.at(k)), "option " + k);
  }
  check(oa.state.size() == ob.state.size(), "optimiser state size");
  for (const auto& [i, pa] : oa.state) {
    auto it = ob.state.find(i);
    if (it == ob.state.end()) {
      check(false, "state of parameter " + std::to_string(i));
      continue;
    }
    check(pa.numbers.size() == it->second.numbers.size() && pa.tensors.size() == it->second.tensors.size(),
          "state entries");
    for (const auto& [k, v] : pa.numbers)
      check(it->second.numbers.count(k) && same_bits(v, it->second.numbers.at(k)), "state number " + k);
    for (const auto& [k, t] : pa.tensors)
      check(it->second.tensors.count(k) && tensor_bytes(t) == tensor_bytes(it->second.tensors.at(k)),
            "state tensor " + k);
  }
  std::vector<double> la = a.lrs(), lb = b.lrs();
  check(la.size() == lb.size(), "lr count");
  for (size_t i = 0; i < std::min(la.size(), lb.size()); ++i) check(same_bits(la[i], lb[i]), "group lr");
  const std::vector<double>& last_a = a.sched ? a.sched->get_last_lr() : a.plateau->get_last_lr();
  const std::vector<double>& last_b = b.sched ? b.sched->get_last_lr() : b.plateau->get_last_lr();
  check(last_a.size() == last_b.size(), "last_lr count");
  for (size_t i = 0; i < std::min(last_a.size(), last_b.size()); ++i) check(same_bits(last_a[i], last_b[i]), "last_lr");
  return same;
}

/// Trains N steps without stopping (saving a checkpoint at step k on the way), then resumes
/// from that checkpoint in fresh objects with a scrambled random state and trains to N.
void check_resume(const MakeRun& make, int64_t n, int64_t k) {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  const Data d = make_data();

  manual_seed(1);
  Run a = make();
  manual_seed(42);
  for (int64_t step = 0; step < n; ++step) {
    if (step == k) nn::save_checkpoint(path, *a.model, *a.opt, a.sched_ref(), step, {{"epoch", "0"}, {"note", "mid"}});
    train_step(a, d, step);
  }
  const auto rng_a = get_rng_state();

  manual_seed(2);  // other initial weights, and another random state at load time
  Run b = make();
  manual_seed(999);
  for (int64_t step = 0; step < 2; ++step) train_step(b, d, step);  // also other optimiser state
  REQUIRE_FALSE(same_state(a, b, false));
  nn::CheckpointInfo info = nn::load_checkpoint(path, *b.model, *b.opt, b.sched_ref());
  CHECK(info.step == k);
  CHECK(info.metadata == Metadata{{"epoch", "0"}, {"note", "mid"}});
  for (int64_t step = info.step; step < n; ++step) train_step(b, d, step);
  CHECK(same_state(a, b, true));
  const auto rng_b = get_rng_state();
  CHECK(rng_a.seed == rng_b.seed);
  CHECK(rng_a.offset == rng_b.offset);

  // Control: the same resume without the saved random state draws other dropout masks, so
  // the test above would notice a checkpoint that lost it.
  manual_seed(3);
  Run c = make();
  manual_seed(999);
  nn::load_checkpoint(path, *c.model, *c.opt, c.sched_ref(), /*restore_rng=*/false);
  for (int64_t step = k; step < n; ++step) train_step(c, d, step);
  CHECK_FALSE(same_state(a, c, false));
}

Run adam_sequential() {
  Run r;
  r.model = make_mlp();
  r.opt = std::make_unique<optim::Adam>(r.model->parameters(), optim::AdamOptions(1e-2).weight_decay(1e-4));
  auto warm = std::make_shared<optim::LinearLR>(*r.opt, 0.1, 1.0, 4);
  auto cosine = std::make_shared<optim::CosineAnnealingLR>(*r.opt, 20, 1e-4);
  std::vector<std::shared_ptr<optim::LRScheduler>> parts{warm, cosine};
  r.sched = std::make_shared<optim::SequentialLR>(*r.opt, parts, std::vector<int64_t>{4});
  return r;
}

Run sgd_two_groups_plateau() {
  Run r;
  r.model = make_mlp();
  std::vector<Tensor> first, rest;
  for (const auto& [name, p] : r.model->named_parameters()) (name.rfind("0.", 0) == 0 ? first : rest).push_back(p);
  std::vector<optim::ParamGroup> groups;
  groups.emplace_back(first, optim::SGDOptions(0.05).momentum(0.5));
  groups.emplace_back(rest);
  r.opt = std::make_unique<optim::SGD>(std::move(groups), optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
  r.plateau = std::make_unique<optim::ReduceLROnPlateau>(
      *r.opt, optim::ReduceLROnPlateauOptions().patience(1).factor(0.5).threshold(0.5));
  return r;
}

Run nadam_step() {
  Run r;
  r.model = make_mlp();
  r.opt = std::make_unique<optim::NAdam>(r.model->parameters(), optim::NAdamOptions(5e-3));
  r.sched = std::make_shared<optim::StepLR>(*r.opt, 3, 0.5);
  return r;
}

Run adam_no_scheduler(int64_t hidden) {
  Run r;
  r.model = make_mlp(hidden);
  r.opt = std::make_unique<optim::Adam>(r.model->parameters(), optim::AdamOptions(1e-2));
  return r;
}

/// Copies a checkpoint with its tensors and metadata changed by `edit`.
void rewrite(const std::string& from, const std::string& to,
             const std::function<void(std::vector<std::pair<std::string, Tensor>>&, Metadata&)>& edit) {
  std::vector<std::pair<std::string, Tensor>> items;
  for (const auto& [name, t] : io::load_safetensors(from)) items.emplace_back(name, t.clone());
  Metadata m = io::load_safetensors_metadata(from);
  edit(items, m);
  TensorDict d;
  for (const auto& [name, t] : items) d.insert(name, t);
  io::save_safetensors(to, d, m);
}

int g_fail_after = 0;
int fail_after(uint64_t offset, size_t n) { return offset + n > uint64_t(g_fail_after) ? ENOSPC : 0; }

}  // namespace

TEST_CASE("checkpoint: Adam + SequentialLR (warmup, cosine) + dropout resumes bit-identical") {
  check_resume(adam_sequential, 12, 5);
}

TEST_CASE("checkpoint: SGD with momentum, two parameter groups and ReduceLROnPlateau resumes bit-identical") {
  check_resume(sgd_two_groups_plateau, 12, 7);
  check_resume(sgd_two_groups_plateau, 4, 0);  // before the first plateau step: best is +inf
  // The learning rate did change on the way (else the plateau state would be untested).
  manual_seed(1);
  Run r = sgd_two_groups_plateau();
  const Data d = make_data();
  for (int64_t s = 0; s < 12; ++s) train_step(r, d, s);
  CHECK(r.lrs()[1] < 0.1);
}

TEST_CASE("checkpoint: NAdam (mu_product) + StepLR resumes bit-identical, also from step 0") {
  check_resume(nadam_step, 10, 4);
  check_resume(nadam_step, 5, 0);
}

TEST_CASE("checkpoint: the file is a safetensors file with the documented keys; info and model-only load") {
  TempDir dir;
  const std::string path = dir.file("c.safetensors");
  manual_seed(5);
  Run r = nadam_step();
  const Data d = make_data();
  for (int64_t s = 0; s < 2; ++s) train_step(r, d, s);
  nn::save_checkpoint(path, *r.model, *r.opt, r.sched_ref(), 2, {{"epoch", "1"}});

  io::SafetensorsFile f(path);
  CHECK(f.contains("model.0.weight"));
  CHECK(f.contains("model.6.bias"));
  CHECK(f.contains("optim.state.0.exp_avg"));
  CHECK(f.contains("optim.state.5.exp_avg_sq"));
  const Metadata& m = f.metadata();
  CHECK(m.at("ember.checkpoint") == "1");
  CHECK(m.at("optim") == "NAdam");
  CHECK(m.at("optim.groups") == "1");
  CHECK(m.at("optim.group.0.params") == "0,1,2,3,4,5");
  CHECK(m.at("optim.state.0.step") == "2");
  CHECK(m.at("sched") == "StepLR");
  CHECK(m.at("user.epoch") == "1");
  CHECK(std::stod(m.at("rng.offset")) > 0);

  nn::CheckpointInfo info = nn::checkpoint_info(path);
  CHECK(info.step == 2);
  CHECK(info.metadata == Metadata{{"epoch", "1"}});

  nn::Sequential eval_model = make_mlp();
  nn::load_checkpoint_model(path, *eval_model);
  auto sa = r.model->state_dict(), sb = eval_model->state_dict();
  REQUIRE(sa.size() == sb.size());
  for (size_t i = 0; i < sa.size(); ++i) check_same(sa[i].second, sb[i].second, sa[i].first);
  nn::Sequential wider = make_mlp(20);
  CHECK_ERROR(nn::load_checkpoint_model(path, *wider), "[load_checkpoint_model]", path.c_str(), "0.weight");
}

TEST_CASE("checkpoint: mismatched objects are refused, naming the file and the field, and change nothing") {
  TempDir dir;
  const std::string path = dir.file("adam.safetensors");
  manual_seed(5);
  Run a = adam_no_scheduler(16);
  const Data d = make_data();
  for (int64_t s = 0; s < 3; ++s) train_step(a, d, s);
  nn::save_checkpoint(path, *a.model, *a.opt, nullptr, 3);

  // Another optimiser.
  Run sgd;
  sgd.model = make_mlp();
  sgd.opt = std::make_unique<optim::SGD>(sgd.model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  CHECK_ERROR(nn::load_checkpoint(path, *sgd.model, *sgd.opt), "[load_checkpoint]", path.c_str(), "'optim'", "Adam",
              "SGD");

  // Another architecture: every bad tensor listed; nothing (model, optimiser, random state) changed.
  manual_seed(11);
  Run wide = adam_no_scheduler(20);
  const auto before = wide.model->state_dict();
  std::vector<std::string> before_bytes;
  for (const auto& [n, t] : before) before_bytes.push_back(tensor_bytes(t));
  const auto rng = get_rng_state();
  CHECK_ERROR(nn::load_checkpoint(path, *wide.model, *wide.opt), path.c_str(), "model.0.weight", "[16, 6]", "[20, 6]",
              "model.3.weight", "model.6.weight");
  const auto after = wide.model->state_dict();
  for (size_t i = 0; i < after.size(); ++i) CHECK(tensor_bytes(after[i].second) == before_bytes[i]);
  CHECK(wide.opt->state(wide.model->parameters()[0]) == nullptr);
  CHECK(get_rng_state().offset == rng.offset);

  // A scheduler where none was saved, and none where one was.
  Run with_sched = adam_no_scheduler(16);
  with_sched.sched = std::make_shared<optim::StepLR>(*with_sched.opt, 2);
  CHECK_ERROR(nn::load_checkpoint(path, *with_sched.model, *with_sched.opt, with_sched.sched_ref()), path.c_str(),
              "'sched'", "no scheduler state", "StepLR");
  const std::string sched_path = dir.file("sched.safetensors");
  nn::save_checkpoint(sched_path, *with_sched.model, *with_sched.opt, with_sched.sched_ref(), 0);
  Run plain = adam_no_scheduler(16);
  CHECK_ERROR(nn::load_checkpoint(sched_path, *plain.model, *plain.opt), sched_path.c_str(), "'sched'", "StepLR");
  Run other_sched = adam_no_scheduler(16);
  other_sched.sched = std::make_shared<optim::ExponentialLR>(*other_sched.opt, 0.9);
  CHECK_ERROR(nn::load_checkpoint(sched_path, *other_sched.model, *other_sched.opt, other_sched.sched_ref()),
              "'sched'", "StepLR", "ExponentialLR");

  // Other group counts, and the same count split otherwise (the optimiser's own check, which
  // must leave the scheduler it runs after as it was).
  auto params = a.model->parameters();
  Run two;
  two.model = make_mlp();
  auto p2 = two.model->parameters();
  std::vector<optim::ParamGroup> g2;
  g2.emplace_back(std::vector<Tensor>(p2.begin(), p2.begin() + 2));
  g2.emplace_back(std::vector<Tensor>(p2.begin() + 2, p2.end()));
  two.opt = std::make_unique<optim::Adam>(std::move(g2), optim::AdamOptions(1e-2));
  CHECK_ERROR(nn::load_checkpoint(path, *two.model, *two.opt), "'optim.groups'", "1 parameter groups", "this one 2");

  const std::string two_groups = dir.file("two.safetensors");
  two.sched = std::make_shared<optim::StepLR>(*two.opt, 2);
  for (int64_t s = 0; s < 3; ++s) train_step(two, d, s);
  nn::save_checkpoint(two_groups, *two.model, *two.opt, two.sched_ref(), 3);
  Run split;
  split.model = make_mlp();
  auto p3 = split.model->parameters();
  std::vector<optim::ParamGroup> g3;
  g3.emplace_back(std::vector<Tensor>(p3.begin(), p3.begin() + 4));
  g3.emplace_back(std::vector<Tensor>(p3.begin() + 4, p3.end()));
  split.opt = std::make_unique<optim::Adam>(std::move(g3), optim::AdamOptions(1e-2));
  split.sched = std::make_shared<optim::StepLR>(*split.opt, 2);
  split.sched->step();
  CHECK_ERROR(nn::load_checkpoint(two_groups, *split.model, *split.opt, split.sched_ref()), two_groups.c_str(),
              "the optimiser state does not fit", "group 0");
  CHECK(split.sched->last_epoch() == 1);
  (void)params;
}

TEST_CASE("checkpoint: malformed files are refused, naming the file and the field") {
  TempDir dir;
  const std::string good = dir.file("good.safetensors"), bad = dir.file("bad.safetensors");
  manual_seed(5);
  Run a = nadam_step();
  const Data d = make_data();
  for (int64_t s = 0; s < 2; ++s) train_step(a, d, s);
  nn::save_checkpoint(good, *a.model, *a.opt, a.sched_ref(), 2);
  auto load_into_fresh = [&](const std::string& p) {
    Run r = nadam_step();
    nn::load_checkpoint(p, *r.model, *r.opt, r.sched_ref());
  };
  load_into_fresh(good);  // the unedited file loads

  // A plain weights file is not a checkpoint.
  const std::string weights = dir.file("weights.safetensors");
  nn::save(*a.model, weights);
  CHECK_ERROR(load_into_fresh(weights), weights.c_str(), "not an Ember training checkpoint", "nn::load");
  CHECK_ERROR(nn::checkpoint_info(weights), "[checkpoint_info]", "not an Ember training checkpoint");

  struct Case {
    const char* what;
    std::function<void(std::vector<std::pair<std::string, Tensor>>&, Metadata&)> edit;
    std::vector<const char*> parts;
  };
  auto drop_tensor = [](const std::string& name) {
    return [name](std::vector<std::pair<std::string, Tensor>>& t, Metadata&) {
      std::erase_if(t, [&](const auto& e) { return e.first == name; });
    };
  };
  auto set_meta = [](const std::string& k, const std::string& v) {
    return [k, v](std::vector<std::pair<std::string, Tensor>>&, Metadata& m) { m[k] = v; };
  };
  auto drop_meta = [](const std::string& k) {
    return [k](std::vector<std::pair<std::string, Tensor>>&, Metadata& m) { m.erase(k); };
  };
  const std::vector<Case> cases = {
      {"version", set_meta("ember.checkpoint", "2"), {"'ember.checkpoint'", "format 1"}},
      {"no step", drop_meta("step"), {"lacks the metadata entry 'step'"}},
      {"bad step", set_meta("step", "12x"), {"'step'", "12x", "not an integer"}},
      {"negative step", set_meta("step", "-1"), {"'step'", "outside"}},
      {"bad rng", set_meta("rng.seed", "-5"), {"'rng.seed'", "unsigned"}},
      {"bad lr", set_meta("optim.group.0.lr", "fast"), {"'optim.group.0.lr'", "fast", "not a number"}},
      {"unknown option", set_meta("optim.group.0.speed", "1"), {"optimiser state does not fit", "speed"}},
      {"param index", set_meta("optim.group.0.params", "0,1,2,3,4,9"), {"'optim.group.0.params'", "9"}},
      {"state list", set_meta("optim.state", "0,0"), {"'optim.state'", "twice"}},
      {"unknown entry", set_meta("optim.extra", "1"), {"unknown metadata entry 'optim.extra'"}},
      {"no groups", drop_meta("optim.groups"), {"'optim.groups'"}},
      {"bad scheduler list", set_meta("sched.list.base_lrs", "0.1,,0.2"), {"'sched.list.base_lrs'", "not a number"}},
      {"scheduler value", drop_meta("sched.value.last_epoch"), {"scheduler state does not fit", "last_epoch"}},
      {"missing buffer", drop_tensor("optim.state.3.exp_avg"), {"lacks the tensor 'optim.state.3.exp_avg'"}},
      {"missing model tensor", drop_tensor("model.3.bias"), {"missing tensor 'model.3.bias'"}},
      {"unexpected tensor",
       [](auto& t, Metadata&) { t.emplace_back("extra", zeros({2})); },
       {"unexpected tensor 'extra'"}},
      {"unclaimed buffer",
       [](auto& t, Metadata&) { t.emplace_back("optim.state.1.junk", zeros({2})); },
       {"'optim.state.1.junk'", "belongs to no parameter"}},
      {"wrong buffer shape",
       [](auto& t, Metadata&) {
         for (auto& e : t)
           if (e.first == "optim.state.0.exp_avg") e.second = zeros({3, 3});
       },
       {"optimiser state does not fit", "exp_avg"}},
      {"wrong model dtype",
       [](auto& t, Metadata&) {
         for (auto& e : t)
           if (e.first == "model.0.bias") e.second = e.second.to(DType::F64);
       },
       {"'model.0.bias'", "f64"}},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    rewrite(good, bad, c.edit);
    std::string msg = error_of([&] { load_into_fresh(bad); });
    CHECK_MESSAGE(has(msg, "[load_checkpoint] '" + bad + "'"), msg);
    for (const char* part : c.parts) CHECK_MESSAGE(has(msg, part), msg << " lacks " << part);
  }
}

TEST_CASE("checkpoint: a SequentialLR whose second child refuses its state is left as it was") {
  TempDir dir;
  const std::string good = dir.file("good.safetensors"), bad = dir.file("bad.safetensors");
  manual_seed(5);
  Run a = adam_sequential();
  const Data d = make_data();
  for (int64_t s = 0; s < 6; ++s) train_step(a, d, s);
  nn::save_checkpoint(good, *a.model, *a.opt, a.sched_ref(), 6);
  rewrite(good, bad, [](auto&, Metadata& m) {
    REQUIRE(m.count("sched.child.1.value.last_epoch"));
    m.erase("sched.child.1.value.last_epoch");
  });
  Run b = adam_sequential();
  train_step(b, d, 0);
  auto flat = [](const optim::SchedulerState& st) {
    std::vector<double> v;
    std::function<void(const optim::SchedulerState&)> walk = [&](const optim::SchedulerState& x) {
      for (const auto& [k, n] : x.values) v.push_back(n);
      for (const auto& [k, l] : x.lists) v.insert(v.end(), l.begin(), l.end());
      for (const auto& c : x.children) walk(c);
    };
    walk(st);
    return v;
  };
  const std::vector<double> before = flat(b.sched->state_dict());
  REQUIRE(before != flat(a.sched->state_dict()));
  CHECK_ERROR(nn::load_checkpoint(bad, *b.model, *b.opt, b.sched_ref()), bad.c_str(), "scheduler state does not fit",
              "last_epoch");
  CHECK(flat(b.sched->state_dict()) == before);
}

TEST_CASE("checkpoint: a failing save leaves the previous checkpoint intact") {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  manual_seed(5);
  Run a = adam_no_scheduler(16);
  const Data d = make_data();
  train_step(a, d, 0);
  nn::save_checkpoint(path, *a.model, *a.opt, nullptr, 1);
  const std::string first = read_bytes(path);
  train_step(a, d, 1);
  g_fail_after = 3000;
  ember::io::detail::g_write_fault = &fail_after;
  std::string msg = error_of([&] { nn::save_checkpoint(path, *a.model, *a.opt, nullptr, 2); });
  ember::io::detail::g_write_fault = nullptr;
  CHECK(has(msg, path));
  CHECK(has(msg, "No space left on device"));
  CHECK(read_bytes(path) == first);
  CHECK(dir.entries() == std::vector<std::string>{"ckpt.safetensors"});
  CHECK(nn::checkpoint_info(path).step == 1);
  CHECK_ERROR(nn::save_checkpoint(path, *a.model, *a.opt, nullptr, -1), "[save_checkpoint]", "step must be >= 0");
}

}  // namespace test_checkpoint

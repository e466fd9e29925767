// DataLoader: batching, drop_last, per-epoch shuffles, bit-identical batches for any
// num_workers (random transforms included), shutdown mid-epoch, worker errors reaching the
// caller at their batch, the prefetch bound, and batch memory handed across threads.

#include "data_test_util.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

namespace test_dataloader {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using data_test::values;
using std::chrono::milliseconds;

namespace {

/// Example i is a [3] f32 tensor filled with i. Counts get() calls, can sleep in each, and
/// can throw at one index.
struct ProbeDataset {
  int64_t n = 0;
  std::shared_ptr<std::atomic<int64_t>> calls = std::make_shared<std::atomic<int64_t>>(0);
  int sleep_ms = 0;
  int64_t throw_at = -1;
  bool throw_std = false;

  int64_t size() const { return n; }
  Tensor get(int64_t i) const {
    calls->fetch_add(1);
    if (sleep_ms) std::this_thread::sleep_for(milliseconds(sleep_ms));
    if (i == throw_at) {
      if (throw_std) throw std::runtime_error("probe: index " + std::to_string(i) + " is cursed");
      EMBER_FAIL("[probe] cannot read example {} (disk on fire)", i);
    }
    return full({3}, static_cast<double>(i));
  }
};

/// Example i with noise from the sample's own generator (the context the loader passes).
struct NoisyDataset {
  int64_t size() const { return 23; }
  Tensor get(int64_t i) const {
    data::SampleContext ctx = data::SampleContext::make(0, 0, i);
    return get(i, ctx);
  }
  Tensor get(int64_t i, data::SampleContext& ctx) const {
    return full({2}, static_cast<double>(i) + ctx.rng.uniform(), TensorOptions(DType::F64));
  }
};

/// The first value of each example of each batch of one epoch.
template <class L>
std::vector<std::vector<double>> epoch_firsts(L& loader) {
  std::vector<std::vector<double>> out;
  for (auto& batch : loader) {
    std::vector<double> v = values(batch.select(1, 0));
    out.push_back(v);
  }
  return out;
}

/// Waits until pred() or the deadline; returns pred().
template <class F>
bool eventually(F pred, double seconds = 20) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!pred() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(milliseconds(2));
  return pred();
}

}  // namespace

TEST_CASE("dataloader: batches in order, the last one short unless drop_last") {
  Tensor x = arange(20).reshape({10, 2}).to(DType::F32), y = arange(10);
  data::TensorDataset ds({x, y});
  for (int64_t workers : {0, 2}) {
    data::DataLoader loader(ds, data::DataLoaderOptions().batch_size(4).num_workers(workers));
    CHECK(loader.size() == 3);
    std::vector<int64_t> sizes;
    std::vector<double> labels;
    for (auto& batch : loader) {
      REQUIRE(batch.size() == 2);
      CHECK(batch[0].sizes() == Shape{batch[1].size(0), 2});
      CHECK(batch[1].dtype() == DType::I64);
      sizes.push_back(batch[1].size(0));
      for (double v : values(batch[1])) labels.push_back(v);
      for (double v : values(batch[0].select(1, 1) - batch[1].to(DType::F32) * 2)) CHECK(v == 1.0);
    }
    CHECK(sizes == std::vector<int64_t>{4, 4, 2});
    CHECK(labels == std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});

    data::DataLoader dropping(ds, data::DataLoaderOptions(4).drop_last(true).num_workers(workers));
    CHECK(dropping.size() == 2);
    int64_t count = 0;
    for (auto& batch : dropping) {
      CHECK(batch[0].size(0) == 4);
      ++count;
    }
    CHECK(count == 2);
  }
}

TEST_CASE("dataloader: shuffle gives a new, reproducible order each epoch") {
  ProbeDataset ds{10};
  data::DataLoader a(ds, data::DataLoaderOptions(3).shuffle(true).seed(8));
  data::DataLoader b(ds, data::DataLoaderOptions(3).shuffle(true).seed(8));
  CHECK(a.epoch() == 0);
  auto a0 = epoch_firsts(a);
  CHECK(a.epoch() == 1);
  auto a1 = epoch_firsts(a);
  CHECK(a0 != a1);
  std::vector<double> flat;
  for (auto& v : a0) flat.insert(flat.end(), v.begin(), v.end());
  std::vector<int64_t> perm = data::RandomSampler(10, 8).indices(0);
  CHECK(flat == std::vector<double>(perm.begin(), perm.end()));
  CHECK(epoch_firsts(b) == a0);  // another loader, same seed: same epoch 0
  CHECK(epoch_firsts(b) == a1);
  a.set_epoch(0);
  CHECK(epoch_firsts(a) == a0);  // set_epoch replays an epoch
  data::DataLoader c(ds, data::DataLoaderOptions(3).shuffle(true).seed(9));
  CHECK(epoch_firsts(c) != a0);
  using data_test::error_of;
  CHECK_ERROR(a.set_epoch(-1), "[DataLoader]", "-1");
}

TEST_CASE("dataloader: bit-identical batches for num_workers 0, 1 and 3, random transforms included") {
  data_test::Watchdog dog(120, "determinism across num_workers");
  // 37 u8 images 8x8x3 and labels, augmented per sample (crop, flip) and per batch (flip).
  Tensor images = (arange(37 * 8 * 8 * 3).reshape({37, 8, 8, 3}) * 7).remainder(256).to(DType::U8);
  data::TensorDataset base({images, arange(37)});
  auto ds = data::map(base, data::field(0, data::Compose(data::ToTensor(), data::RandomCrop(6, 1),
                                                          data::RandomHorizontalFlip(),
                                                          data::Normalize({0.5, 0.5, 0.5}, {0.25, 0.25, 0.25}))));
  auto collate = data::collate_then(data::Stack(), data::field(0, data::RandomHorizontalFlip(0.5)));
  using Batch = std::vector<Tensor>;
  auto run = [&](int64_t workers, int64_t prefetch) {
    auto opts = data::DataLoaderOptions(5).shuffle(true).seed(2024).num_workers(workers).prefetch(prefetch);
    data::DataLoader loader(ds, opts, collate);
    std::vector<std::vector<Batch>> epochs;
    for (int e = 0; e < 2; ++e) {
      std::vector<Batch> batches;
      for (auto& b : loader) batches.push_back(b);
      epochs.push_back(batches);
    }
    return epochs;
  };
  auto ref = run(0, 0);
  REQUIRE(ref.size() == 2);
  REQUIRE(ref[0].size() == 8);  // 37 / 5 rounded up
  CHECK(ref[0][7][0].sizes() == Shape{2, 3, 6, 6});
  for (std::pair<int64_t, int64_t> wp : {std::pair<int64_t, int64_t>{1, 0}, {3, 0}, {3, 1}, {2, 7}}) {
    int64_t workers = wp.first, prefetch = wp.second;
    auto other = run(workers, prefetch);
    REQUIRE(other.size() == 2);
    for (size_t e = 0; e < 2; ++e) {
      REQUIRE(other[e].size() == ref[e].size());
      for (size_t b = 0; b < ref[e].size(); ++b)
        CHECK_MESSAGE(data_test::same_bits(other[e][b], ref[e][b]),
                      "workers " << workers << " prefetch " << prefetch << " epoch " << e << " batch " << b);
    }
  }
  // The augmentation is real: sample 0 looks different in epochs 0 and 1.
  auto find = [&](const std::vector<Batch>& batches) {
    for (const auto& b : batches)
      for (int64_t k = 0; k < b[1].size(0); ++k)
        if (b[1][k].item<int64_t>() == 0) return b[0][k];
    return Tensor();
  };
  Tensor s0 = find(ref[0]), s1 = find(ref[1]);
  REQUIRE(s0.defined());
  REQUIRE(s1.defined());
  CHECK_FALSE(data_test::same_bits(s0, s1));
}

TEST_CASE("dataloader: a dataset's get(i, ctx) receives the per-sample seed") {
  NoisyDataset ds;
  std::vector<std::vector<double>> ref;
  for (int64_t workers : {0, 3}) {
    data::DataLoader loader(ds, data::DataLoaderOptions(4).seed(77).num_workers(workers));
    loader.set_epoch(5);
    std::vector<std::vector<double>> got = epoch_firsts(loader);
    if (workers == 0) {
      ref = got;
      // Example i of epoch 5 is i + the first uniform of Generator(sample_seed(77, 5, i)).
      for (int64_t i = 0; i < 23; ++i) {
        data::Generator g(data::sample_seed(77, 5, static_cast<uint64_t>(i)));
        CHECK(got[static_cast<size_t>(i / 4)][static_cast<size_t>(i % 4)] == static_cast<double>(i) + g.uniform());
      }
    } else {
      CHECK(got == ref);
    }
  }
}

TEST_CASE("dataloader: destroying it mid-epoch stops the workers without hanging") {
  data_test::Watchdog dog(120, "dataloader shutdown mid-epoch");
  for (int rep = 0; rep < 40; ++rep) {
    ProbeDataset ds{200};
    ds.sleep_ms = 1;
    int64_t workers = 1 + rep % 3;
    {
      data::DataLoader loader(ds, data::DataLoaderOptions(4).num_workers(workers).shuffle(rep % 2 == 0));
      auto it = loader.begin();
      REQUIRE(it != loader.end());
      CHECK((*it).sizes() == Shape{4, 3});
    }  // destroyed after one batch, workers busy
    // Far fewer than the 200 examples were read: the workers stopped.
    CHECK(ds.calls->load() < 100);
  }
  // Destroyed before any batch was taken, and never started.
  for (int rep = 0; rep < 10; ++rep) {
    ProbeDataset ds{50};
    ds.sleep_ms = 1;
    data::DataLoader loader(ds, data::DataLoaderOptions(2).num_workers(3));
    auto b = loader.next();
    REQUIRE(b.has_value());
    data::DataLoader idle(ds, data::DataLoaderOptions(2).num_workers(3));
  }
  // Starting a new epoch mid-epoch restarts cleanly.
  ProbeDataset ds{40};
  data::DataLoader loader(ds, data::DataLoaderOptions(4).num_workers(2));
  auto it = loader.begin();
  ++it;
  int64_t n = 0;
  for (auto& batch : loader) {
    (void)batch;
    ++n;
  }
  CHECK(n == 10);
  CHECK(loader.epoch() == 2);
}

TEST_CASE("dataloader: an exception in a worker reaches the caller at its batch, intact") {
  data_test::Watchdog dog(120, "worker exception propagation");
  for (int64_t workers : {0, 1, 3}) {
    CAPTURE(workers);
    ProbeDataset ds{64};
    ds.throw_at = 37;  // batch 4 of 8-example batches
    data::DataLoader loader(ds, data::DataLoaderOptions(8).num_workers(workers));
    int64_t good = 0;
    std::string message;
    auto it = loader.begin();
    try {
      for (; it != loader.end(); ++it) {
        CHECK(values(it->select(1, 0))[0] == static_cast<double>(good * 8));
        ++good;
      }
    } catch (const Error& e) {
      message = e.what();
    }
    CHECK(good == 4);
    CHECK(message == "[probe] cannot read example 37 (disk on fire)");
    // The epoch goes on after the failed batch.
    ++it;
    REQUIRE(it != loader.end());
    CHECK(values(it->select(1, 0))[0] == 40.0);

    // Other exception types keep their type and message.
    ProbeDataset ds2{16};
    ds2.throw_at = 3;
    ds2.throw_std = true;
    data::DataLoader loader2(ds2, data::DataLoaderOptions(2).num_workers(workers));
    CHECK(loader2.next().has_value());
    CHECK_THROWS_WITH_AS(loader2.next(), "probe: index 3 is cursed", std::runtime_error);
    CHECK(values(loader2.next()->select(1, 0))[0] == 4.0);
  }
}

TEST_CASE("dataloader: workers run at most prefetch batches ahead of the caller") {
  data_test::Watchdog dog(120, "prefetch bound");
  ProbeDataset ds{40};
  data::DataLoader loader(ds, data::DataLoaderOptions(2).num_workers(2).prefetch(3));
  auto it = loader.begin();
  REQUIRE(it != loader.end());  // batch 0 taken: batches 1..3 may be made, not 4
  CHECK(eventually([&] { return ds.calls->load() == 8; }));
  std::this_thread::sleep_for(milliseconds(200));  // give the workers a chance to overrun
  CHECK(ds.calls->load() == 8);
  CHECK(loader.batches_started() == 4);
  ++it;  // batch 1 taken: batch 4 may start
  CHECK(eventually([&] { return ds.calls->load() == 10; }));
  std::this_thread::sleep_for(milliseconds(200));
  CHECK(ds.calls->load() == 10);
  CHECK(loader.batches_started() == 5);

  // The default bound is 2 x num_workers.
  ProbeDataset ds2{40};
  data::DataLoader loader2(ds2, data::DataLoaderOptions(1).num_workers(3));
  auto b = loader2.next();
  CHECK(eventually([&] { return ds2.calls->load() == 7; }));
  std::this_thread::sleep_for(milliseconds(200));
  CHECK(ds2.calls->load() == 7);

  // A prefetch beyond the epoch's batches means all of them (not a slot array of that size).
  ProbeDataset ds3{4};
  data::DataLoader loader3(ds3, data::DataLoaderOptions(2).num_workers(1).prefetch(int64_t{1} << 40));
  int64_t n = 0;
  for (auto& batch : loader3) n += batch.size(0);
  CHECK(n == 4);
}

TEST_CASE("dataloader: next() runs epoch after epoch") {
  ProbeDataset ds{5};
  data::DataLoader loader(ds, data::DataLoaderOptions(2).num_workers(1));
  for (int e = 0; e < 3; ++e) {
    int64_t batches = 0;
    while (auto b = loader.next()) ++batches;
    CHECK(batches == 3);
    CHECK(loader.epoch() == e + 1);
  }
  data::DataLoader empty(ProbeDataset{0}, data::DataLoaderOptions(2).num_workers(2));
  CHECK(empty.size() == 0);
  CHECK(empty.begin() == empty.end());
  CHECK_FALSE(empty.next().has_value());
}

TEST_CASE("dataloader: batches made on workers do not pile up in the caller's allocator cache") {
  // See Note [Batches cross threads]: without it each batch freed here would stay cached.
  Tensor x = randn({6400, 256});
  data::TensorDataset ds({x});
  // A custom collate that allocates through the cache (ember::stack) is covered too.
  auto cache_stack = [](std::vector<std::vector<Tensor>>&& ex) {
    std::vector<Tensor> rows;
    for (auto& e : ex) rows.push_back(e[0]);
    return stack(rows, 0);
  };
  data::DataLoader a(ds, data::DataLoaderOptions(64).num_workers(2));
  data::DataLoader b(ds, data::DataLoaderOptions(64).num_workers(2), cache_stack);
  for (int round = 0; round < 2; ++round) {
    int64_t before = allocator_stats().bytes_cached;
    double sum = 0;
    if (round == 0)
      for (auto& batch : a) sum += batch[0].size(0);
    else
      for (auto& batch : b) sum += batch.size(0);
    CHECK(sum == 6400);
    int64_t growth = allocator_stats().bytes_cached - before;
    // 100 batches of 64 KiB went through; a few may be cached, not all 6.4 MiB.
    CHECK_MESSAGE(growth < 1 * 1024 * 1024, "round " << round << ": cache grew by " << growth << " bytes");
  }
  // The default collate's batches own their memory even without workers.
  data::DataLoader c(ds, data::DataLoaderOptions(64));
  auto batch = c.next();
  CHECK(batch->at(0).impl().storage->capacity == 0);
}

TEST_CASE("dataloader: custom samplers, and errors") {
  ProbeDataset ds{10};
  auto s = std::make_shared<data::DistributedSampler>(10, 3, 1, false);
  data::DataLoader loader(ds, data::DataLoaderOptions(2).num_workers(2), s);
  CHECK(loader.size() == 2);
  CHECK(epoch_firsts(loader) == std::vector<std::vector<double>>{{1, 4}, {7, 0}});
  using data_test::error_of;
  CHECK_ERROR(data::DataLoader(ds, data::DataLoaderOptions(2).shuffle(true), s), "[DataLoader]", "shuffle", "sampler");
  CHECK_ERROR(data::DataLoader(ds, data::DataLoaderOptions(0)), "[DataLoader]", "batch_size", "0");
  CHECK_ERROR(data::DataLoader(ds, data::DataLoaderOptions(1).num_workers(-2)), "[DataLoader]", "num_workers", "-2");
  auto bad = std::make_shared<data::SubsetSampler>(std::vector<int64_t>{1, 12});
  for (int64_t workers : {0, 2}) {
    data::DataLoader l(ds, data::DataLoaderOptions(1).num_workers(workers), bad);
    CHECK(l.next().has_value());
    CHECK_ERROR(l.next(), "[DataLoader]", "index 12", "position 1", "10 examples");
  }
}

TEST_CASE("dataloader: loops over one loader nest, each an epoch of its own") {
  data_test::Watchdog dog(120, "nested loops");
  for (int64_t workers : {0, 2}) {
    CAPTURE(workers);
    ProbeDataset ds{6};
    data::DataLoader loader(ds, data::DataLoaderOptions(2).num_workers(workers));
    int64_t outer = 0, inner = 0;
    for (auto& b : loader) {
      const double first = values(b.select(1, 0))[0];
      for (auto& c : loader) inner += c.size(0);
      // The outer batch is intact after the inner epoch ran (it was freed before: ASan).
      CHECK(values(b.select(1, 0))[0] == first);
      CHECK(first == static_cast<double>(2 * outer));
      ++outer;
    }
    CHECK(outer == 3);
    CHECK(inner == 3 * 6);
    CHECK(loader.epoch() == 4);  // one epoch per begin()
    // An iterator left mid-epoch, then the loader destroyed, then the iterator dropped.
    auto* l2 = new data::DataLoader(ds, data::DataLoaderOptions(1).num_workers(workers));
    auto it = l2->begin();
    CHECK(it != l2->end());
    delete l2;
  }
}

TEST_CASE("dataloader: an exception from the first batch leaves the iterator's epoch going") {
  data_test::Watchdog dog(120, "first batch throws");
  for (int64_t workers : {0, 2}) {
    CAPTURE(workers);
    ProbeDataset ds{6};
    ds.throw_at = 0;
    data::DataLoader loader(ds, data::DataLoaderOptions(2).num_workers(workers));
    auto it = loader.begin();  // makes no batch yet: nothing to throw
    CHECK_THROWS_WITH_AS((void)(it != loader.end()), "[probe] cannot read example 0 (disk on fire)", Error);
    ++it;  // the next batch of the same epoch
    REQUIRE(it != loader.end());
    CHECK(values(it->select(1, 0))[0] == 2.0);
    CHECK(loader.epoch() == 1);
  }
}

TEST_CASE("dataloader: copies of a fresh iterator share its first batch") {
  ProbeDataset ds{6};
  data::DataLoader loader(ds, data::DataLoaderOptions(2));
  auto it = loader.begin();
  auto copy = it;
  REQUIRE(copy != loader.end());  // the copy makes batch 0 ...
  CHECK(values(it->select(1, 0))[0] == 0.0);  // ... and the original sees that one, not batch 1
}

}  // namespace test_dataloader

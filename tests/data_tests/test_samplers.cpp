// Samplers: determinism per (seed, epoch), coverage, distributions, distributed splits.

#include "data_test_util.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>

namespace test_samplers {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {
std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), int64_t{0});
  return v;
}
std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}
}  // namespace

TEST_CASE("samplers: sequential") {
  data::SequentialSampler s(5);
  CHECK(s.size() == 5);
  CHECK(s.indices(0) == iota(5));
  CHECK(s.indices(3) == iota(5));
  CHECK(data::SequentialSampler(0).indices(0).empty());
  using data_test::error_of;
  CHECK_ERROR(data::SequentialSampler(-1), "[SequentialSampler]", "-1");
}

TEST_CASE("samplers: random is a permutation, fixed per (seed, epoch), new per epoch") {
  data::RandomSampler s(100, 5);
  CHECK(s.size() == 100);
  std::vector<int64_t> e0 = s.indices(0), e1 = s.indices(1);
  CHECK(sorted(e0) == iota(100));  // coverage: every index once
  CHECK(sorted(e1) == iota(100));
  CHECK(e0 != iota(100));
  CHECK(e0 != e1);
  CHECK(s.indices(0) == e0);                            // asked again: the same
  CHECK(data::RandomSampler(100, 5).indices(1) == e1);  // another sampler, same seed: the same
  CHECK(data::RandomSampler(100, 6).indices(0) != e0);
  CHECK(e0 == data::random_permutation(100, 5, 0));
  // Uniformity: over 4000 epochs, index 0 lands in each of 4 quarters of a 4-element
  // permutation about equally often (chi-square, 3 dof, 99.99% quantile about 21.1).
  data::RandomSampler small(4, 1);
  std::vector<int> where(4, 0);
  for (int e = 0; e < 4000; ++e) {
    auto p = small.indices(e);
    ++where[static_cast<size_t>(std::find(p.begin(), p.end(), 0) - p.begin())];
  }
  double chi2 = 0;
  for (int w : where) chi2 += (w - 1000.0) * (w - 1000.0) / 1000.0;
  CHECK(chi2 < 21.1);
  CHECK(data::RandomSampler(0).indices(0).empty());
  CHECK(data::RandomSampler(1).indices(4) == std::vector<int64_t>{0});
}

TEST_CASE("samplers: subset, in order or shuffled") {
  std::vector<int64_t> sub{7, 3, 9, 1};
  data::SubsetSampler s(sub);
  CHECK(s.size() == 4);
  CHECK(s.indices(0) == sub);
  CHECK(s.indices(5) == sub);
  data::SubsetSampler sh(sub, true, 11);
  auto a = sh.indices(0), b = sh.indices(1);
  CHECK(sorted(a) == sorted(sub));
  CHECK(sorted(b) == sorted(sub));
  CHECK(sh.indices(0) == a);
  // Shuffled exactly as random_permutation over positions orders them.
  auto p = data::random_permutation(4, 11, 1);
  std::vector<int64_t> expect;
  for (int64_t i : p) expect.push_back(sub[static_cast<size_t>(i)]);
  CHECK(b == expect);
  using data_test::error_of;
  CHECK_ERROR(data::SubsetSampler({1, -2}), "[SubsetSampler]", "-2", "position 1");
}

TEST_CASE("samplers: weighted with replacement follows the weights") {
  std::vector<double> w{1, 0, 3, 6};
  data::WeightedRandomSampler s(w, 20000, true, 3);
  CHECK(s.size() == 20000);
  auto idx = s.indices(0);
  REQUIRE(idx.size() == 20000);
  std::vector<int> count(4, 0);
  for (int64_t i : idx) {
    REQUIRE(i >= 0);
    REQUIRE(i < 4);
    ++count[static_cast<size_t>(i)];
  }
  CHECK(count[1] == 0);  // zero weight: never drawn
  // Expected 2000, 0, 6000, 12000; allow 4 standard deviations (binomial).
  for (int i : {0, 2, 3}) {
    double p = w[static_cast<size_t>(i)] / 10.0, mean = 20000 * p, sd = std::sqrt(20000 * p * (1 - p));
    CHECK_MESSAGE(std::abs(count[static_cast<size_t>(i)] - mean) < 4 * sd, "index " << i << ": " << count[i]);
  }
  CHECK(s.indices(0) == idx);
  CHECK(s.indices(1) != idx);
  // With replacement, more samples than indices is fine.
  data::WeightedRandomSampler few({1, 1}, 10, true, 0);
  auto f = few.indices(0);
  CHECK(f.size() == 10);
  CHECK(std::set<int64_t>(f.begin(), f.end()) == std::set<int64_t>{0, 1});
}

TEST_CASE("samplers: weighted without replacement draws distinct indices, heavy ones first") {
  std::vector<double> w{1, 2, 0, 4, 8};
  data::WeightedRandomSampler all(w, 4, false, 9);
  auto idx = all.indices(0);
  CHECK(sorted(idx) == std::vector<int64_t>{0, 1, 3, 4});  // every positive weight, once; never 2
  // P(first = i) = w_i / sum: over 6000 epochs the first index follows 1:2:4:8 of 15.
  std::map<int64_t, int> first;
  data::WeightedRandomSampler one(w, 1, false, 2);
  for (int e = 0; e < 6000; ++e) ++first[one.indices(e)[0]];
  CHECK(first.count(2) == 0);
  for (int64_t i : {0, 1, 3, 4}) {
    double p = w[static_cast<size_t>(i)] / 15.0, mean = 6000 * p, sd = std::sqrt(6000 * p * (1 - p));
    CHECK_MESSAGE(std::abs(first[i] - mean) < 4 * sd, "index " << i << ": " << first[i]);
  }
  // The second draw is proportional to the weights left: given first = 4 (weight 8),
  // P(second = 3) = 4 / 7.
  int given = 0, second3 = 0;
  data::WeightedRandomSampler two(w, 2, false, 5);
  for (int e = 0; e < 8000; ++e) {
    auto p = two.indices(e);
    if (p[0] == 4) {
      ++given;
      second3 += p[1] == 3;
    }
  }
  double q = 4.0 / 7.0, sd = std::sqrt(given * q * (1 - q));
  CHECK(std::abs(second3 - given * q) < 4 * sd);
}

TEST_CASE("samplers: weighted errors") {
  using data_test::error_of;
  CHECK_ERROR(data::WeightedRandomSampler({1, -1}, 2), "[WeightedRandomSampler]", "weight 1", "-1");
  CHECK_ERROR(data::WeightedRandomSampler({1, NAN}, 2), "[WeightedRandomSampler]", "weight 1", "nan");
  CHECK_ERROR(data::WeightedRandomSampler({0, 0}, 2), "[WeightedRandomSampler]", "zero");
  CHECK_ERROR(data::WeightedRandomSampler({1, 0, 1}, 3, false), "[WeightedRandomSampler]", "3 samples", "2 indices");
  CHECK_ERROR(data::WeightedRandomSampler({1}, -1), "[WeightedRandomSampler]", "-1");
  CHECK_ERROR(data::WeightedRandomSampler({1}, 0), "[WeightedRandomSampler]", "num_samples must be positive", "0");
}

TEST_CASE("samplers: distributed split pads like PyTorch and partitions the epoch") {
  // n = 10 over 3 ranks: 4 each, the 12-long list padded with its first 2 entries.
  std::vector<int64_t> all;
  auto perm = data::random_permutation(10, 4, 2);
  for (int64_t r = 0; r < 3; ++r) {
    data::DistributedSampler s(10, 3, r, true, 4);
    CHECK(s.size() == 4);
    CHECK(s.total_size() == 12);
    auto mine = s.indices(2);
    REQUIRE(mine.size() == 4);
    // Rank r takes positions r, r+3, ... of the shared (padded) permutation.
    for (size_t k = 0; k < 4; ++k) {
      size_t pos = static_cast<size_t>(r) + 3 * k;
      CHECK(mine[k] == (pos < 10 ? perm[pos] : perm[pos - 10]));
    }
    all.insert(all.end(), mine.begin(), mine.end());
  }
  std::vector<int64_t> uniq = sorted(all);
  uniq.erase(std::unique(uniq.begin(), uniq.end()), uniq.end());
  CHECK(uniq == iota(10));  // every index is covered

  // Without shuffle: 0..9 then 0, 1.
  CHECK(data::DistributedSampler(10, 3, 0, false).indices(0) == std::vector<int64_t>{0, 3, 6, 9});
  CHECK(data::DistributedSampler(10, 3, 1, false).indices(0) == std::vector<int64_t>{1, 4, 7, 0});
  CHECK(data::DistributedSampler(10, 3, 2, false).indices(0) == std::vector<int64_t>{2, 5, 8, 1});
  // drop_last: the list is cut to 9; ranks are disjoint.
  std::vector<int64_t> cut;
  for (int64_t r = 0; r < 3; ++r) {
    data::DistributedSampler s(10, 3, r, true, 4, true);
    CHECK(s.size() == 3);
    auto mine = s.indices(0);
    cut.insert(cut.end(), mine.begin(), mine.end());
  }
  CHECK(std::set<int64_t>(cut.begin(), cut.end()).size() == 9);
  // Fewer examples than ranks: the list repeats (PyTorch pads by cycling).
  CHECK(data::DistributedSampler(2, 5, 0, false).indices(0) == std::vector<int64_t>{0});
  CHECK(data::DistributedSampler(2, 5, 3, false).indices(0) == std::vector<int64_t>{1});
  CHECK(data::DistributedSampler(2, 5, 4, false).indices(0) == std::vector<int64_t>{0});
  CHECK(data::DistributedSampler(2, 5, 4, false, 0, true).size() == 0);
  // Each epoch reshuffles, identically on every rank.
  data::DistributedSampler r0(10, 2, 0, true, 1);
  CHECK(r0.indices(0) != r0.indices(1));
  CHECK(r0.indices(1) == data::DistributedSampler(10, 2, 0, true, 1).indices(1));

  using data_test::error_of;
  CHECK_ERROR(data::DistributedSampler(10, 3, 3), "[DistributedSampler]", "rank 3", "[0, 3)");
  CHECK_ERROR(data::DistributedSampler(10, 0, 0), "[DistributedSampler]", "num_replicas", "0");
  // Sizes near int64's limit: the share is computed without overflow, or refused.
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  CHECK(data::DistributedSampler(3, kMax, kMax - 1, false).indices(0) == std::vector<int64_t>{(kMax - 1 - 3) % 3});
  CHECK(data::DistributedSampler(kMax, kMax, 0, false).size() == 1);
  CHECK_ERROR(data::DistributedSampler(kMax, 2, 0), "[DistributedSampler]", "overflow int64");
}

TEST_CASE("samplers: random with num_samples and replacement, as PyTorch's RandomSampler") {
  using data_test::error_of;
  // Without replacement: whole permutations, then the start of another; the first block is
  // the plain sampler's permutation.
  data::RandomSampler plain(5, 9), more(5, 9, false, 12), fewer(5, 9, false, 3);
  std::vector<int64_t> p = plain.indices(2), m = more.indices(2), f = fewer.indices(2);
  CHECK(more.size() == 12);
  REQUIRE(m.size() == 12);
  CHECK(std::vector<int64_t>(m.begin(), m.begin() + 5) == p);
  std::vector<int64_t> second(m.begin() + 5, m.begin() + 10);
  std::sort(second.begin(), second.end());
  CHECK(second == std::vector<int64_t>{0, 1, 2, 3, 4});  // another permutation
  CHECK(f == std::vector<int64_t>(p.begin(), p.begin() + 3));
  // With replacement: uniform draws in range, repeats allowed, every index seen in a long run.
  data::RandomSampler draws(4, 3, true, 400);
  std::vector<int64_t> d = draws.indices(0);
  REQUIRE(d.size() == 400);
  std::vector<int64_t> counts(4, 0);
  for (int64_t i : d) {
    REQUIRE((i >= 0 && i < 4));
    ++counts[static_cast<size_t>(i)];
  }
  for (int64_t c : counts) CHECK(c > 60);
  CHECK(draws.indices(0) == d);  // fixed per (seed, epoch)
  CHECK(draws.indices(1) != d);
  CHECK_ERROR(data::RandomSampler(4, 0, false, 0), "[RandomSampler]", "num_samples must be positive");
  CHECK_ERROR(data::RandomSampler(0, 0, true, 3), "[RandomSampler]", "empty dataset");
}

TEST_CASE("samplers: a size beyond memory is an Error, not std::length_error or std::bad_alloc") {
  const int64_t max = std::numeric_limits<int64_t>::max();
  CHECK_THROWS_AS(data::SequentialSampler(max).indices(0), Error);
  CHECK_THROWS_AS(data::RandomSampler(2, 0, true, max).indices(0), Error);
  CHECK_THROWS_AS(data::WeightedRandomSampler({1.0}, max).indices(0), Error);
  // ASan's operator new aborts on a failed allocation instead of throwing (GCC defines
  // __SANITIZE_ADDRESS__, clang answers __has_feature).
  bool under_asan = false;
#if defined(__SANITIZE_ADDRESS__)
  under_asan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  under_asan = true;
#endif
#endif
  if (!under_asan)
    CHECK_THROWS_AS(data::SequentialSampler(int64_t{1} << 50).indices(0), Error);  // fits max_size, not memory
}

}  // namespace test_samplers

// Random sampling and tolerance comparisons (core/random_ops.hpp): moments of large samples
// within a few standard errors (fixed seeds: the checks are deterministic), ranges, the
// seed/thread independence of every draw, multinomial's frequencies and its zero weights,
// gradients of normal(mean, std), and errors.

#include <doctest/doctest.h>

#include <ember/ember.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "error_text.hpp"

namespace test_random_ops {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

std::vector<double> values_of(const Tensor& t) {
  Tensor h = t.detach().to(DType::F64).contiguous();
  return std::vector<double>(h.data_ptr<double>(), h.data_ptr<double>() + h.numel());
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}
double var_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size() - 1);
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("poisson: counts with the distribution's probabilities, both methods, seeded, refusals") {
  manual_seed(41);
  const int64_t n = 40000;
  // Inversion (rate 3) and rejection (rate 15): each count's frequency against its probability.
  for (double lam : {3.0, 15.0}) {
    const std::vector<double> k = values_of(poisson(full({n}, lam, DType::F64)));
    double mass = std::exp(-lam);  // P(0)
    for (int64_t c = 0; c <= static_cast<int64_t>(2 * lam); ++c) {
      if (c > 0) mass *= lam / static_cast<double>(c);
      const double freq = static_cast<double>(std::count(k.begin(), k.end(), static_cast<double>(c))) / n;
      CHECK_MESSAGE(std::fabs(freq - mass) < 5 * std::sqrt(mass * (1 - mass) / n) + 1e-4,
                    "rate ", lam, " count ", c, ": frequency ", freq, " probability ", mass);
    }
  }
  // Moments over both methods' ranges; every draw a non-negative integer.
  for (double lam : {0.25, 9.99, 10.0, 40.0, 1e6}) {
    const std::vector<double> k = values_of(poisson(full({n}, lam, DType::F64)));
    CHECK(std::fabs(mean_of(k) - lam) < 5 * std::sqrt(lam / n));
    CHECK(var_of(k) == doctest::Approx(lam).epsilon(0.05));
    CHECK(std::all_of(k.begin(), k.end(), [](double x) { return x >= 0 && x == std::floor(x); }));
  }
  const Tensor rates = tensor<float>({0.f, 2.5f, 0.f, 50.f, 1e4f});
  manual_seed(7);
  const Tensor a = poisson(rates);
  manual_seed(7);
  CHECK(values_of(poisson(rates)) == values_of(a));
  CHECK(a.dtype() == DType::F32);
  CHECK(values_of(a)[0] == 0);
  CHECK(values_of(a)[2] == 0);
  Generator gen(11);
  const Tensor g1 = poisson(rates, gen);
  gen.manual_seed(11);
  CHECK(values_of(poisson(rates, gen)) == values_of(g1));
  CHECK_FALSE(poisson(rates.clone().requires_grad_()).requires_grad());  // a sample: no gradient, as normal()
  CHECK_THROWS_WITH_AS(poisson(tensor<double>({1, -1})), doctest::Contains("[poisson] rates must be finite and >= 0, got -1"), Error);
  CHECK_THROWS_WITH_AS(poisson(tensor<double>({kNaN})), doctest::Contains("[poisson] rates must be finite"), Error);
  CHECK_THROWS_WITH_AS(poisson(tensor<double>({kInf})), doctest::Contains("[poisson] rates must be finite"), Error);
  CHECK_THROWS_WITH_AS(poisson(tensor<int64_t>({1})), doctest::Contains("[poisson] expects floating rates, got i64"), Error);
}

TEST_CASE("binomial: counts with the distribution's probabilities, both methods, mirrored p, seeded, refusals") {
  manual_seed(43);
  const int64_t draws = 40000;
  // Each count's frequency against its probability: inversion (n 12, p 0.3: n p 3.6), rejection
  // (n 60, p 0.4: 24), and both mirrored (p 0.7 and 0.6 draw n - Binomial(n, 1 - p)).
  for (const std::pair<double, double>& np : {std::pair<double, double>{12, 0.3}, {60, 0.4}, {12, 0.7}, {60, 0.6}}) {
    const double n = np.first, p = np.second;
    const std::vector<double> k = values_of(binomial(full({draws}, n, DType::F64), full({draws}, p, DType::F64)));
    for (int64_t c = 0; c <= static_cast<int64_t>(n); ++c) {
      const double mass = std::exp(std::lgamma(n + 1) - std::lgamma(c + 1.0) - std::lgamma(n - c + 1) +
                                   c * std::log(p) + (n - c) * std::log1p(-p));
      const double freq = static_cast<double>(std::count(k.begin(), k.end(), static_cast<double>(c))) / draws;
      CHECK_MESSAGE(std::fabs(freq - mass) < 5 * std::sqrt(mass * (1 - mass) / draws) + 1e-4, "n ", n, " p ", p,
                    " count ", c, ": frequency ", freq, " probability ", mass);
    }
  }
  // Moments over both methods' ranges; every draw a whole number in [0, n].
  for (const std::pair<double, double>& np :
       {std::pair<double, double>{1, 0.5}, {1000, 0.00999}, {1000, 0.01}, {100, 0.905}, {100, 0.9}, {1e6, 0.3},
        {1e9, 0.999}, {1e13, 0.5}}) {
    const double n = np.first, p = np.second;
    const std::vector<double> k = values_of(binomial(full({draws}, n, DType::F64), full({}, p, DType::F64)));
    const double var = n * p * (1 - p);
    CHECK(std::fabs(mean_of(k) - n * p) < 5 * std::sqrt(var / draws));
    CHECK(var_of(k) == doctest::Approx(var).epsilon(0.05));
    CHECK(std::all_of(k.begin(), k.end(), [n](double x) { return x >= 0 && x <= n && x == std::floor(x); }));
  }
  // Edges: p 0 and 1, count 0; prob broadcasts; the result has count's dtype; seeded.
  const Tensor count = tensor<float>({0.f, 5.f, 5.f, 3e4f, 7.f});
  const Tensor prob = tensor<float>({0.5f, 0.f, 1.f, 0.5f, 0.25f});
  manual_seed(9);
  const Tensor a = binomial(count, prob);
  CHECK(a.dtype() == DType::F32);
  const std::vector<double> av = values_of(a);
  CHECK(av[0] == 0);
  CHECK(av[1] == 0);
  CHECK(av[2] == 5);
  manual_seed(9);
  CHECK(values_of(binomial(count, prob)) == av);
  Generator gen(12);
  const Tensor g1 = binomial(count, prob, gen);
  gen.manual_seed(12);
  CHECK(values_of(binomial(count, prob, gen)) == values_of(g1));
  CHECK(binomial(full({2, 3}, 4.0), tensor<float>({0.1f, 0.5f, 0.9f})).sizes() == Shape({2, 3}));
  CHECK_FALSE(binomial(count.clone().requires_grad_(), prob).requires_grad());
  CHECK_THROWS_WITH_AS(binomial(tensor<double>({1.5}), tensor<double>({0.5})),
                       doctest::Contains("[binomial] count must hold whole numbers >= 0, got 1.5"), Error);
  CHECK_THROWS_WITH_AS(binomial(tensor<double>({-1}), tensor<double>({0.5})),
                       doctest::Contains("count must hold whole numbers >= 0"), Error);
  CHECK_THROWS_WITH_AS(binomial(tensor<double>({kInf}), tensor<double>({0.5})),
                       doctest::Contains("count must hold whole numbers >= 0"), Error);
  CHECK_THROWS_WITH_AS(binomial(tensor<double>({2}), tensor<double>({kNaN})),
                       doctest::Contains("[binomial] prob must be in [0, 1], got nan"), Error);
  CHECK_THROWS_WITH_AS(binomial(tensor<double>({2}), tensor<double>({1.5})), doctest::Contains("prob must be in [0, 1]"),
                       Error);
  CHECK_THROWS_WITH_AS(binomial(tensor<int64_t>({2}), tensor<double>({0.5})),
                       doctest::Contains("expects floating count and prob, got i64 and f64"), Error);
  CHECK_THROWS_WITH_AS(binomial(full({3}, 2.0), full({2, 3}, 0.5)),
                       doctest::Contains("prob of shape [2, 3] does not broadcast to count's shape [3]"), Error);
}

TEST_CASE("random fills: uniform_, normal_, exponential_ have their moments and ranges") {
  manual_seed(100);
  const int64_t n = 200000;
  std::vector<double> u = values_of(empty({n}, DType::F64).uniform_(-2, 3));
  CHECK(*std::min_element(u.begin(), u.end()) >= -2);
  CHECK(*std::max_element(u.begin(), u.end()) < 3);
  CHECK(std::fabs(mean_of(u) - 0.5) < 5 * std::sqrt(25.0 / 12 / static_cast<double>(n)));
  CHECK(var_of(u) == doctest::Approx(25.0 / 12).epsilon(0.02));
  std::vector<double> z = values_of(empty({n}, DType::F64).normal_(1.5, 2.0));
  CHECK(std::fabs(mean_of(z) - 1.5) < 5 * 2.0 / std::sqrt(static_cast<double>(n)));
  CHECK(var_of(z) == doctest::Approx(4.0).epsilon(0.02));
  std::vector<double> e = values_of(empty({n}, DType::F64).exponential_(4.0));
  CHECK(*std::min_element(e.begin(), e.end()) >= 0);
  CHECK(std::fabs(mean_of(e) - 0.25) < 5 * 0.25 / std::sqrt(static_cast<double>(n)));
  CHECK(var_of(e) == doctest::Approx(1.0 / 16).epsilon(0.03));
  // Reduced precision keeps the open bound; from == to gives from.
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    std::vector<double> r = values_of(empty({20000}, dt).uniform_(0, 1));
    CHECK(*std::max_element(r.begin(), r.end()) < 1);
  }
  for (DType dt : {DType::F64, DType::F32, DType::F16, DType::BF16})
    CHECK(values_of(empty({3}, dt).uniform_(2, 2)) == std::vector<double>(3, 2.0));
  // Bounds beyond the dtype's finite range would clip silently: refused.
  CHECK_ERROR(empty({3}, DType::F16).uniform_(0, 1e5), "[uniform_]", "f16", "to=100000");
  CHECK_ERROR(empty({3}).uniform_(-1e39, 0), "[uniform_]", "f32");
  // In place through a view: only the view's elements change.
  Tensor base = zeros({4, 4});
  base.narrow(1, 1, 2).normal_();
  CHECK(values_of(base.narrow(1, 0, 1)) == std::vector<double>(4, 0.0));
  CHECK(values_of(base.narrow(1, 1, 2).abs().sum())[0] > 0);
}

TEST_CASE("random fills: log_normal_, cauchy_, geometric_ follow their distributions") {
  manual_seed(101);
  const int64_t n = 200000;
  // log of a log-normal draw is normal(mean, std).
  std::vector<double> ln = values_of(empty({n}, DType::F64).log_normal_(0.5, 0.75).log());
  CHECK(std::fabs(mean_of(ln) - 0.5) < 5 * 0.75 / std::sqrt(static_cast<double>(n)));
  CHECK(var_of(ln) == doctest::Approx(0.5625).epsilon(0.02));
  CHECK(values_of(empty({1000}).log_normal_().amin())[0] > 0);
  // Cauchy has no mean: its median and quartiles are median -/+ sigma.
  std::vector<double> c = values_of(empty({n}, DType::F64).cauchy_(2.0, 0.5));
  std::sort(c.begin(), c.end());
  auto quantile = [&](double q) { return c[static_cast<size_t>(q * static_cast<double>(n - 1))]; };
  CHECK(quantile(0.5) == doctest::Approx(2.0).epsilon(0.01));
  CHECK(quantile(0.25) == doctest::Approx(1.5).epsilon(0.01));
  CHECK(quantile(0.75) == doctest::Approx(2.5).epsilon(0.01));
  // Geometric: trials 1, 2, ... with mean 1/p and variance (1 - p)/p^2, in any numeric dtype.
  std::vector<double> g = values_of(empty({n}, DType::F64).geometric_(0.3));
  CHECK(*std::min_element(g.begin(), g.end()) == 1);
  CHECK(std::all_of(g.begin(), g.end(), [](double x) { return x == std::floor(x); }));
  CHECK(std::fabs(mean_of(g) - 1 / 0.3) < 5 * std::sqrt(0.7 / 0.09 / static_cast<double>(n)));
  CHECK(var_of(g) == doctest::Approx(0.7 / 0.09).epsilon(0.03));
  const double ones_share = static_cast<double>(std::count(g.begin(), g.end(), 1.0)) / static_cast<double>(n);
  CHECK(ones_share == doctest::Approx(0.3).epsilon(0.02));
  Tensor gi = empty({1000}, DType::I64).geometric_(0.5);
  CHECK(gi.amin().item<int64_t>() >= 1);
  CHECK(gi.to(DType::F64).mean().item<double>() == doctest::Approx(2.0).epsilon(0.15));
  // A tiny p saturates integer dtypes instead of overflowing them.
  CHECK(empty({100}, DType::U8).geometric_(1e-300).amin().item<int64_t>() == 255);
  CHECK(empty({100}, DType::I64).geometric_(1e-300).amin().item<int64_t>() > (int64_t{1} << 62));
  CHECK_ERROR(empty({3}).log_normal_(0, 0), "[log_normal_]", "std=0");
  CHECK_ERROR(empty({3}, DType::I64).log_normal_(), "[log_normal_]", "i64");
  CHECK_ERROR(empty({3}).cauchy_(0, -1), "[cauchy_]", "sigma=-1");
  CHECK_ERROR(empty({3}).cauchy_(0, 0), "[cauchy_]", "sigma=0");  // PyTorch 2's check
  CHECK_ERROR(empty({3}).geometric_(1.0), "[geometric_]", "(0, 1)");
  CHECK_ERROR(empty({3}).geometric_(0.0), "[geometric_]");
  CHECK_ERROR(empty({3}, DType::Bool).geometric_(0.5), "[geometric_]", "bool");
}

TEST_CASE("Generator: draws of one's own, by argument or by guard; the global generator untouched") {
  // The global sequence a program sees is the same with or without generators in between.
  manual_seed(5);
  const std::vector<double> global_a = values_of(rand({6}));
  const std::vector<double> global_b = values_of(randn({4}));
  manual_seed(5);
  Generator gen(77);
  const std::vector<double> from_gen = values_of(rand({6}, gen, DType::F64));
  CHECK(values_of(rand({6})) == global_a);
  {
    GeneratorGuard use(gen);
    (void)randn({100});  // from gen
    (void)empty({10}).normal_();
  }
  CHECK(values_of(randn({4})) == global_b);
  // Two generators with one seed give one sequence; draws advance the generator.
  Generator twin(77);
  CHECK(values_of(rand({6}, twin, DType::F64)) == from_gen);
  CHECK(values_of(rand({6}, twin, DType::F64)) != from_gen);
  // A guard routes everything: fills, sampling, factories (and nn init and dropout, which use them).
  Generator g1(9), g2(9);
  std::vector<double> guarded;
  {
    GeneratorGuard use(g1);
    guarded = values_of(empty({5}, DType::F64).uniform_(-1, 1));
  }
  {
    GeneratorGuard use(g2);
    CHECK(values_of(empty({5}, DType::F64).uniform_(-1, 1)) == guarded);
  }
  // Guards nest and restore the outer one.
  Generator outer(1), inner(2), outer_twin(1);
  std::vector<double> a, b;
  {
    GeneratorGuard o(outer);
    a = values_of(rand({3}, DType::F64));
    {
      GeneratorGuard i(inner);
      (void)rand({3});
    }
    b = values_of(rand({3}, DType::F64));
  }
  CHECK(values_of(rand({3}, outer_twin, DType::F64)) == a);
  CHECK(values_of(rand({3}, outer_twin, DType::F64)) == b);
  // Copies share the state; clone() does not; get/set_state replay.
  Generator shared = gen;
  const detail::RandomState saved = gen.get_state();
  const std::vector<double> next = values_of(randn({3}, shared, DType::F64));
  Generator copy = gen.clone();
  gen.set_state(saved);
  CHECK(values_of(randn({3}, gen, DType::F64)) == next);
  CHECK(values_of(randn({3}, copy, DType::F64)) == values_of(randn({3}, gen, DType::F64)));
  gen.manual_seed(77);
  CHECK(gen.current_seed() == 77);
  CHECK(values_of(rand({6}, gen, DType::F64)) == from_gen);
  // The other factories with a generator.
  Generator r1(3), r2(3);
  CHECK(values_of(randint(0, 100, {8}, r1)) == values_of(randint(0, 100, {8}, r2)));
  CHECK(values_of(randint(10, {4}, r1)) == values_of(randint(10, {4}, r2)));
  CHECK(values_of(randperm(20, r1)) == values_of(randperm(20, r2)));
  const Tensor w = tensor<double>({0.1, 0.2, 0.7});
  CHECK(values_of(multinomial(w, 5, true, r1)) == values_of(multinomial(w, 5, true, r2)));
  // One-number sizes with a generator, and braced options still meaning options (GCC once
  // took `{}` for a Generator there).
  Generator s1(4), s2(4);
  CHECK(values_of(rand(3, s1)) == values_of(rand({3}, s2)));
  CHECK(values_of(randn(2, s1)) == values_of(randn({2}, s2)));
  CHECK(randn({3}, {}).dtype() == DType::F32);
  CHECK(rand({3}, {}).numel() == 3);
  CHECK(randint(0, 10, {3}, {}).dtype() == DType::I64);
  CHECK(randperm(5, {}).numel() == 5);
  // A guard belongs to its thread: another thread's draws stay on the global generator.
  manual_seed(11);
  const std::vector<double> global_first = values_of(rand({4}, DType::F64));
  manual_seed(11);
  std::vector<double> other_thread;
  {
    GeneratorGuard use(gen);
    std::thread t([&] { other_thread = values_of(rand({4}, DType::F64)); });
    t.join();
  }
  CHECK(other_thread == global_first);
}

TEST_CASE("random fills: the same seed gives the same draws whatever the thread count") {
  auto draw = [](int threads) {
    set_num_threads(threads);
    manual_seed(7);
    std::vector<double> v = values_of(empty({100000}).normal_());
    auto w = values_of(empty({50000}, DType::F64).exponential_());
    v.insert(v.end(), w.begin(), w.end());
    auto m = values_of(multinomial(rand({4, 300}), 50, true));
    v.insert(v.end(), m.begin(), m.end());
    auto p = values_of(randperm(1000));
    v.insert(v.end(), p.begin(), p.end());
    return v;
  };
  const std::vector<double> one = draw(1), two = draw(2);
  set_num_threads(1);
  CHECK(one == two);
  manual_seed(8);
  CHECK(values_of(randperm(1000)) != std::vector<double>(one.end() - 1000, one.end()));
}

TEST_CASE("bernoulli: scalar and per-element probabilities, any dtype") {
  manual_seed(101);
  CHECK(values_of(empty({1000}).bernoulli_(0.0)) == std::vector<double>(1000, 0.0));
  CHECK(values_of(empty({1000}, DType::I32).bernoulli_(1.0)) == std::vector<double>(1000, 1.0));
  const int64_t n = 100000;
  CHECK(std::fabs(mean_of(values_of(empty({n}, DType::U8).bernoulli_(0.3))) - 0.3) <
        5 * std::sqrt(0.21 / static_cast<double>(n)));
  // Probabilities per column, broadcast over rows.
  Tensor p = tensor<double>({0.0, 0.25, 1.0});
  Tensor draws = empty({40000, 3}).bernoulli_(p);
  std::vector<double> col = values_of(draws.mean({0}));
  CHECK(col[0] == 0);
  CHECK(std::fabs(col[1] - 0.25) < 5 * std::sqrt(0.1875 / 40000));
  CHECK(col[2] == 1);
  Tensor b = bernoulli(full({10000}, 0.5, DType::F64));
  CHECK(b.dtype() == DType::F64);
  CHECK(std::fabs(mean_of(values_of(b)) - 0.5) < 0.025);
  CHECK(bernoulli(zeros({5}, DType::I64), 1.0).dtype() == DType::I64);
  CHECK_ERROR(empty({3}).bernoulli_(1.5), "[bernoulli_]", "[0, 1]", "1.5");
  CHECK_ERROR(empty({3}).bernoulli_(kNaN), "[bernoulli_]", "nan");
  CHECK_ERROR(empty({3}).bernoulli_(tensor<double>({0.5, 1.2, 0.0})), "[bernoulli_]", "[0, 1]");
  CHECK_ERROR(empty({3}).bernoulli_(full({2, 3}, 0.5)), "[bernoulli_]", "[2, 3]", "[3]");
  CHECK_ERROR(bernoulli(zeros({3}, DType::I64)), "[bernoulli]", "floating");
}

TEST_CASE("random_ and randint_like: integers in [from, to), in the tensor's dtype") {
  manual_seed(102);
  for (DType dt : {DType::F32, DType::I32, DType::U8, DType::I64}) {
    CAPTURE(dt);
    std::vector<double> v = values_of(empty({5000}, dt).random_(3, 9));
    CHECK(*std::min_element(v.begin(), v.end()) == 3);
    CHECK(*std::max_element(v.begin(), v.end()) == 8);
    for (double x : v) CHECK(x == std::floor(x));
  }
  std::vector<double> v = values_of(empty({2000}, DType::I8).random_(5));
  CHECK(std::set<double>(v.begin(), v.end()) == std::set<double>{0, 1, 2, 3, 4});
  Tensor like = randint_like(zeros({3, 4}, DType::I32), 10, 12);
  CHECK(like.dtype() == DType::I32);
  CHECK(like.sizes() == Shape{3, 4});
  for (double x : values_of(like)) CHECK((x == 10 || x == 11));
  CHECK_ERROR(empty({3}, DType::U8).random_(0, 300), "[random_]", "does not fit", "u8");
  CHECK_ERROR(empty({3}).random_(5, 5), "[random_]", "from < to");
  // Floating dtypes hold integers exactly only so far: beyond, values would round to `to` or inf.
  CHECK_ERROR(empty({3}, DType::F16).random_(0, 100000), "[random_]", "f16", "2048");
  CHECK_ERROR(empty({3}, DType::BF16).random_(0, 300), "[random_]", "bf16", "256");
  std::vector<double> b = values_of(empty({3000}, DType::BF16).random_(250, 257));
  CHECK(*std::max_element(b.begin(), b.end()) == 256);
  CHECK(*std::min_element(b.begin(), b.end()) == 250);
  CHECK_ERROR(empty({3}, DType::I64).uniform_(), "[uniform_]", "floating", "i64");
  CHECK_ERROR(empty({3}).uniform_(1, 0), "[uniform_]", "from=1 to=0");
  CHECK_ERROR(empty({3}).normal_(0, -1), "[normal_]", "std >= 0", "-1");
  CHECK_ERROR(empty({3}).exponential_(0), "[exponential_]", "lambd > 0", "0");
}

TEST_CASE("normal: tensor means and standard deviations, broadcast, in mean's dtype, a sample") {
  manual_seed(103);
  Tensor mean = tensor<float>({-1.0f, 0.0f, 10.0f}).requires_grad_();
  Tensor std = tensor<double>({{0.5}, {2.0}}).requires_grad_();
  Tensor y = normal(mean, std);
  CHECK(y.sizes() == Shape{2, 3});
  CHECK(y.dtype() == DType::F32);
  CHECK(!y.requires_grad());  // a sample: PyTorch's gradient for mean and std is zero
  // Each element is mean + std z for the generator's next standard normals z (the function's
  // one draw), broadcast: the same seed gives them again.
  manual_seed(103);
  Tensor z = randn({2, 3}, DType::F64);
  Tensor want = (mean.detach().to(DType::F64) + std.detach() * z).to(DType::F32);
  CHECK(values_of(y) == values_of(want));
  CHECK(values_of(normal(zeros({2, 3}), 1.0)).size() == 6);
  const int64_t n = 100000;
  std::vector<double> s = values_of(normal(full({n}, 3.0, DType::F64), 0.5));
  CHECK(std::fabs(mean_of(s) - 3) < 5 * 0.5 / std::sqrt(static_cast<double>(n)));
  CHECK(var_of(values_of(normal(0.0, full({n}, 2.0, DType::F64)))) == doctest::Approx(4.0).epsilon(0.03));
  Tensor f = normal(5.0, 0.0, {2, 2});
  CHECK(values_of(f) == std::vector<double>(4, 5.0));
  CHECK(normal(0.0, 1.0, {3}, TensorOptions(DType::F64)).dtype() == DType::F64);
  CHECK_ERROR(normal(zeros({2}), tensor<float>({1.0f, -1.0f})), "[normal]", "std >= 0");
  CHECK_ERROR(normal(zeros({2}), zeros({3})), "[normal]", "[2]", "[3]");
  CHECK_ERROR(normal(0.0, -2.0, {3}), "[normal]", "std >= 0", "-2");
}

TEST_CASE("randperm: a permutation of 0..n-1, in the dtype asked for") {
  manual_seed(104);
  for (int64_t n : {0, 1, 2, 17, 1000}) {
    CAPTURE(n);
    Tensor p = randperm(n);
    CHECK(p.dtype() == DType::I64);
    CHECK(values_of(p.sort().first) == values_of(arange(0, n, 1, TensorOptions(DType::I64))));
  }
  CHECK(values_of(randperm(50)) != values_of(arange(0, 50, 1, TensorOptions(DType::I64))));
  CHECK(randperm(10, TensorOptions(DType::I32)).dtype() == DType::I32);
  CHECK(values_of(randperm(256, TensorOptions(DType::U8)).sort().first) ==
        values_of(arange(0, 256, 1, TensorOptions(DType::I64))));
  CHECK_ERROR(randperm(2, TensorOptions(DType::Bool)), "[randperm]", "bool");
  CHECK_ERROR(randperm(257, TensorOptions(DType::U8)), "[randperm]", "257", "u8");
  CHECK_ERROR(randperm(-1), "[randperm]", "-1");
}

TEST_CASE("multinomial: frequencies follow the weights; zero weights never drawn; without replacement distinct") {
  manual_seed(105);
  // With replacement: 1-d and 2-d, frequencies within 5 standard errors; zero weights
  // (the first and the last category among them) never drawn.
  Tensor w = tensor<double>({0.0, 1.0, 3.0, 0.0, 6.0, 0.0});
  const int64_t n = 100000;
  Tensor d = multinomial(w, n, true);
  CHECK(d.sizes() == Shape{n});
  CHECK(d.dtype() == DType::I64);
  std::vector<double> counts(6, 0.0);
  for (double x : values_of(d)) counts[static_cast<size_t>(x)] += 1;
  const std::vector<double> p = {0.0, 0.1, 0.3, 0.0, 0.6, 0.0};
  for (size_t k = 0; k < 6; ++k) {
    CAPTURE(k);
    if (p[k] == 0) CHECK(counts[k] == 0);
    else CHECK(std::fabs(counts[k] / n - p[k]) < 5 * std::sqrt(p[k] * (1 - p[k]) / n));
  }
  Tensor rows = multinomial(tensor<float>({{1.0f, 0.0f}, {0.0f, 2.0f}}), 7, true);
  CHECK(rows.sizes() == Shape{2, 7});
  CHECK(values_of(rows) == std::vector<double>{0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1});

  // Without replacement: distinct indices, all of them when num_samples = n, no zero weight
  // while non-zero ones remain; the first draw follows the weights.
  Tensor many = multinomial(rand({50, 8}) + 0.01, 8);
  for (int64_t r = 0; r < 50; ++r) {
    std::vector<double> v = values_of(many[r]);
    CHECK(std::set<double>(v.begin(), v.end()).size() == 8);
  }
  std::vector<double> two = values_of(multinomial(w.expand({1000, 6}), 3));
  for (double x : two) CHECK((x == 1 || x == 2 || x == 4));
  Tensor first = multinomial(w.expand({n, 6}).contiguous(), 1);
  CHECK(first.sizes() == Shape{n, 1});
  std::fill(counts.begin(), counts.end(), 0.0);
  for (double x : values_of(first)) counts[static_cast<size_t>(x)] += 1;
  for (size_t k = 0; k < 6; ++k)
    if (p[k] > 0) CHECK(std::fabs(counts[k] / n - p[k]) < 5 * std::sqrt(p[k] * (1 - p[k]) / n));
  CHECK(multinomial(zeros({0, 3}), 2).sizes() == Shape{0, 2});

  CHECK_ERROR(multinomial(tensor<double>({1.0, -0.5}), 1), "[multinomial]", "negative");
  CHECK_ERROR(multinomial(tensor<double>({1.0, kNaN}), 1), "[multinomial]", "NaN");
  CHECK_ERROR(multinomial(tensor<double>({1.0, kInf}), 1), "[multinomial]", "inf");
  CHECK_ERROR(multinomial(tensor<double>({{1.0, 1.0}, {0.0, 0.0}}), 1), "[multinomial]", "sums to 0");
  CHECK_ERROR(multinomial(w, 7), "[multinomial]", "7 samples without replacement", "6 categories");
  CHECK_ERROR(multinomial(w, 4), "[multinomial]", "fewer than 4 non-zero");
  CHECK_ERROR(multinomial(w, 0), "[multinomial]", "0 samples");
  CHECK_ERROR(multinomial(zeros({2, 2, 2}), 1), "[multinomial]", "[2, 2, 2]");
  CHECK_ERROR(multinomial(ones({3}, DType::I64), 1), "[multinomial]", "floating");
}

TEST_CASE("isclose, allclose, equal") {
  Tensor a = tensor<double>({1.0, kInf, -kInf, kNaN, 1e-9, 100.0});
  Tensor b = tensor<double>({1.0 + 1e-6, kInf, kInf, kNaN, 0.0, 100.001});
  std::vector<double> want = {1, 1, 0, 0, 1, 1};
  CHECK(values_of(isclose(a, b)) == want);
  want[3] = 1;
  CHECK(values_of(isclose(a, b, 1e-5, 1e-8, true)) == want);
  CHECK(values_of(isclose(a, b, 0.0, 0.0)) == std::vector<double>{0, 1, 0, 0, 0, 0});
  // Broadcast; integers and bools.
  CHECK(isclose(tensor<float>({{1.0f}, {2.0f}}), tensor<float>({1.0f, 2.0f, 3.0f})).sizes() == Shape{2, 3});
  CHECK(values_of(isclose(tensor<int64_t>({100, 101}), tensor<int64_t>({100, 100}), 0.0, 0.5)) ==
        std::vector<double>{1, 0});
  CHECK(values_of(isclose(tensor<int64_t>({100, 101}), tensor<int64_t>({100, 100}), 0.01)) ==
        std::vector<double>{1, 1});
  CHECK(allclose(ones({3}), ones({3}) + 1e-7f));
  CHECK(!allclose(ones({3}), ones({3}) + 1e-3f));
  CHECK(!allclose(a, b));
  CHECK(allclose(a.narrow(0, 0, 2), b.narrow(0, 0, 2)));
  CHECK(equal(tensor<int64_t>({1, 2}), tensor<int64_t>({1, 2})));
  CHECK(!equal(tensor<int64_t>({1, 2}), tensor<int64_t>({1, 3})));
  CHECK(!equal(ones({2, 2}), ones({4})));
  CHECK(!equal(a, a));  // NaN equals nothing
  CHECK(equal(zeros({0, 3}), zeros({0, 3})));
  CHECK(equal(tensor<int64_t>({1, 2}), tensor<double>({1.0, 2.0})));  // values, as PyTorch 2
  CHECK(values_of(isclose(tensor<double>({kNaN, 1.0}), tensor<double>({kNaN, 1.0}), 0.0, 0.0, true)) ==
        std::vector<double>{1, 1});
  // Zero tolerances compare exactly, also integers beyond 2^53 (no detour through f64).
  const int64_t big = int64_t{1} << 53;
  CHECK(values_of(isclose(tensor<int64_t>({big + 1}), tensor<int64_t>({big}), 0.0, 0.0)) == std::vector<double>{0});
  CHECK_ERROR(isclose(ones({2}), ones({2}, DType::F64)), "[isclose]", "one dtype", "f32", "f64");
  CHECK_ERROR(isclose(ones({2}), ones({2}), -1.0), "[isclose]", "rtol=-1");
  CHECK_ERROR(isclose(ones({2}), ones({3})), "[2]", "[3]");
}

TEST_CASE("random fills refuse a leaf that requires grad before drawing; allowed under NoGradGuard") {
  Tensor w = zeros({4}).requires_grad_();
  manual_seed(9);
  CHECK_ERROR(w.uniform_(), "[uniform_]", "leaf tensor that requires grad");
  CHECK_ERROR(w.narrow(0, 0, 2).normal_(), "[normal_]", "view");
  CHECK_ERROR(w.bernoulli_(0.5), "[bernoulli_]", "leaf");
  CHECK_ERROR(w.exponential_(), "[exponential_]", "leaf");
  Tensor after_refusals = rand({4});
  manual_seed(9);
  CHECK(values_of(rand({4})) == values_of(after_refusals));  // nothing was drawn
  {
    autograd::NoGradGuard ng;
    w.uniform_(-1, 1);
  }
  CHECK(values_of(w.abs().amax())[0] > 0);
  CHECK(w.requires_grad());
}

}  // namespace test_random_ops

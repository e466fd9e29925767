// The compile-time policy: a user-defined layer composed into a policy, the Profile layer,
// and static checks on what each shipped policy contains.

#include <doctest/doctest.h>
#include <ember/ember.hpp>

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <type_traits>
#include <vector>

namespace test_dispatch {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

// A layer written in user code: counts the ops that pass through it, by name.
int g_ops_seen = 0;
int g_adds_seen = 0;
struct CountingLayer {
  template <class P, class Next>
  struct Impl {
    template <class Op, class... A>
    static decltype(auto) call(const Op& op, A&&... a) {
      ++g_ops_seen;
      if (std::string_view(op.name()) == "add") ++g_adds_seen;
      return Next::call(op, std::forward<A>(a)...);
    }
  };
};
using CountingPolicy = Policy<Backends<Cpu>, Layers<CountingLayer>>;
using CTensor = BasicTensor<CountingPolicy>;

}  // namespace

static_assert(detail::has_layer<profiler::ProfileLayer, DefaultPolicy::layers>::value);
static_assert(std::is_same_v<InferencePolicy::layers, Layers<>>);
static_assert(!InferencePolicy::backends::has(DeviceType::Cuda));
static_assert(std::is_same_v<detail::chain_t<InferencePolicy>, detail::BackendCall<Backends<Cpu>>>);

TEST_CASE("a user-defined layer sees every op of its policy") {
  g_ops_seen = g_adds_seen = 0;
  CTensor a = ones<CountingPolicy>({2, 2});  // fill_
  CTensor b = a + a;                          // add
  CTensor c = b.exp().sum();                  // exp, sum
  CHECK(c.item<float>() == doctest::Approx(4 * std::exp(2.0f)));
  CHECK(g_adds_seen == 1);
  CHECK(g_ops_seen >= 4);
  // The default policy is untouched by it.
  int before = g_ops_seen;
  Tensor d = ones({2}) + ones({2});
  CHECK(g_ops_seen == before);
}

TEST_CASE("InferencePolicy tensors work without layers") {
  BasicTensor<InferencePolicy> x = randn<InferencePolicy>({3, 4});
  auto y = x.matmul(x.t()).relu();
  CHECK(y.sizes() == Shape{3, 3});
}

TEST_CASE("Profile records ops, summarises them and writes a Chrome trace") {
  Tensor a = randn({64, 64});
  // One name per process: meson runs this binary three times at once (one per kernel build).
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("ember_test_trace_" + std::to_string(::getpid()) + ".json")).string();
  {
    profiler::Profile prof;
    Tensor b = a.matmul(a).relu().add(a);
    (void)b;
    auto events = prof.events();
    REQUIRE(events.size() >= 3);
    CHECK(std::string(events[0].name) == "matmul");
    CHECK(events[0].shapes == "[64, 64], [64, 64]");
    CHECK(events[0].duration_ns > 0);
    std::string summary = prof.summary();
    CHECK(summary.find("matmul") != std::string::npos);
    CHECK(summary.find("relu") != std::string::npos);
    prof.write_chrome_trace(path);
  }
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string json = ss.str();
  CHECK(json.find("\"traceEvents\"") != std::string::npos);
  CHECK(json.find("\"name\": \"matmul\"") != std::string::npos);
  CHECK(json.find("\"ph\": \"X\"") != std::string::npos);
  std::remove(path.c_str());
  // Outside the scope nothing is recorded.
  profiler::Profile later;
  CHECK(later.events().empty());
}

TEST_CASE("Profile: ops run inside ops have a depth and self time, counted once in the summary") {
  Tensor x = randn({128, 128}).requires_grad_();
  Tensor y = x * 2;
  profiler::Profile prof;
  y.add_(1.0);  // with a history: runs add out of place and copies (ops inside the op)
  auto events = prof.events();
  int64_t top = 0, self = 0;
  uint32_t deepest = 0;
  for (const auto& e : events) {
    CHECK(e.self_ns >= 0);
    CHECK(e.self_ns <= e.duration_ns);
    CHECK(!e.failed);
    if (e.depth == 0) top += e.duration_ns;
    self += e.self_ns;
    deepest = std::max(deepest, e.depth);
  }
  CHECK(deepest >= 1);
  // Self times add up to the top-level ops' time at most (no double counting).
  CHECK(self <= top);
  CHECK(self > 0);
  std::string summary = prof.summary();
  CHECK(summary.find("self ms") != std::string::npos);
}

TEST_CASE("Profile: failed ops are flagged; threads get distinct small ids") {
  profiler::Profile prof;
  Tensor a = ones({3});
  CHECK_THROWS_AS(a + ones({4}), Error);
  std::thread t([] { Tensor b = ones({2}) * 3; (void)b; });
  t.join();
  Tensor c = a * 2;
  (void)c;
  auto events = prof.events();
  REQUIRE(events.size() >= 3);
  bool failed_add = false;
  std::set<uint64_t> threads;
  for (const auto& e : events) {
    if (std::string(e.name) == "add" && e.failed) failed_add = true;
    threads.insert(e.thread);
    CHECK(e.thread < 100000);
  }
  CHECK(failed_add);
  CHECK(threads.size() == 2);
}

TEST_CASE("a failed trace write leaves no partial file and names the path") {
  profiler::Profile prof;
  Tensor x = ones({2}) + 1;
  (void)x;
  CHECK_THROWS_WITH_AS(prof.write_chrome_trace("/nonexistent-dir/trace.json"),
                       doctest::Contains("/nonexistent-dir/trace.json"), Error);
}

TEST_CASE("Profile: an op's optional operands are listed among its shapes") {
  // addmm passes c as an optional operand (a pointer), as the fused norms their weights.
  Tensor c = ones({3, 5}), a = ones({3, 4}), b = ones({4, 7}).narrow(1, 0, 5);
  profiler::Profile prof;
  Tensor y = addmm(c, a, b);
  bool found = false;
  for (const auto& e : prof.events()) {
    if (e.shapes.find("[3, 4]") == std::string::npos) continue;
    found = true;
    CAPTURE(e.shapes);
    CHECK(e.shapes.find("[3, 5]") != std::string::npos);
  }
  CHECK(found);
}

// Kernels<Cpu>::binary runs add/sub/mul/div of up to 16 contiguous f32/f64 elements itself
// (kernels_cpu/dispatch.cpp), other sizes and layouts through the instruction-set builds.
// Both must agree bit for bit with the scalar reference, on either side of the threshold, in
// place, with the target as an operand, and with special values.
template <class T>
void check_tiny_arithmetic(DType dtype) {
  constexpr T kInf = std::numeric_limits<T>::infinity();
  constexpr T kNaN = std::numeric_limits<T>::quiet_NaN();
  const T specials[] = {T(0), T(-0.0), kInf, -kInf, kNaN, std::numeric_limits<T>::denorm_min(),
                        std::numeric_limits<T>::max(), T(1) / T(3), T(-2.5), T(1e-30)};
  using Fn = T (*)(T, T);
  const std::pair<const char*, Fn> ops[] = {{"add", [](T a, T b) { return a + b; }},
                                            {"sub", [](T a, T b) { return a - b; }},
                                            {"mul", [](T a, T b) { return a * b; }},
                                            {"div", [](T a, T b) { return a / b; }}};
  auto same = [](T got, T want) {
    if (std::isnan(want)) return bool(std::isnan(got));
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    return std::bit_cast<U>(got) == std::bit_cast<U>(want);  // -0 vs 0 counts
  };
  auto apply = [](const char* op, const Tensor& a, const Tensor& b) {
    const std::string_view o(op);
    return o == "add" ? a + b : o == "sub" ? a - b : o == "mul" ? a * b : a / b;
  };
  auto apply_ = [](const char* op, Tensor& a, const Tensor& b) {
    const std::string_view o(op);
    if (o == "add") a.add_(b);
    else if (o == "sub") a.sub_(b);
    else if (o == "mul") a.mul_(b);
    else a.div_(b);
  };
  for (int64_t n : {1, 2, 3, 4, 7, 8, 15, 16, 17, 24, 33}) {
    std::vector<T> x(n), y(n);
    for (int64_t k = 0; k < n; ++k) {
      x[k] = specials[k % 10] + T(k % 3) * T(0.75);
      y[k] = specials[(k * 7 + 3) % 10] - T(k % 4) * T(1.25);
    }
    // Contiguous views at an offset into larger buffers (the kernel must start at data()).
    Tensor a = zeros({n + 3}, TensorOptions().dtype(dtype)).narrow(0, 3, n);
    Tensor b = zeros({n + 5}, TensorOptions().dtype(dtype)).narrow(0, 5, n);
    a.copy_(from_blob(x.data(), {n}, dtype));
    b.copy_(from_blob(y.data(), {n}, dtype));
    // The same values through strided views (every other element of a buffer twice as long):
    // not the tiny path, for n > 1.
    const Tensor a2 = zeros({n, 2}, TensorOptions().dtype(dtype)), b2 = zeros_like(a2);
    a2.select(1, 0).copy_(a);
    b2.select(1, 0).copy_(b);
    for (const auto& op : ops) {
      const char* name = op.first;
      const Fn fn = op.second;
      CAPTURE(name);
      CAPTURE(n);
      const Tensor r = apply(name, a, b);
      const Tensor strided = apply(name, a2.select(1, 0), b2.select(1, 0));
      Tensor in_place = zeros({n + 1}, TensorOptions().dtype(dtype)).narrow(0, 1, n);
      in_place.copy_(a);
      apply_(name, in_place, b);
      Tensor self_op = a.clone();  // the target is both operands
      apply_(name, self_op, self_op);
      REQUIRE(r.dtype() == dtype);
      const T* rp = r.template data_ptr<T>();
      const Tensor sc = strided.contiguous();
      for (int64_t k = 0; k < n; ++k) {
        CAPTURE(k);
        CHECK(same(rp[k], fn(x[k], y[k])));
        CHECK(same(sc.template data_ptr<T>()[k], fn(x[k], y[k])));
        CHECK(same(in_place.template data_ptr<T>()[k], fn(x[k], y[k])));
        CHECK(same(self_op.template data_ptr<T>()[k], fn(x[k], x[k])));
      }
    }
  }
}

TEST_CASE("tiny contiguous f32/f64 add, sub, mul, div agree with the SIMD loops bit for bit") {
  check_tiny_arithmetic<float>(DType::F32);
  check_tiny_arithmetic<double>(DType::F64);
  // Mixed dtypes and a broadcast operand take the general path, with the same answers.
  const Tensor h = ones({4}, TensorOptions().dtype(DType::F64)) * 0.5;
  const Tensor f = tensor<float>({1.f, 2.f, 3.f, 4.f});
  const Tensor mixed = f + h;
  CHECK(mixed.dtype() == DType::F64);
  CHECK(mixed.template data_ptr<double>()[3] == 4.5);
  const Tensor row = f.view({1, 4}) * tensor<float>({2.f}).view({1, 1});
  CHECK(row.template data_ptr<float>()[2] == 6.f);
}

}  // namespace test_dispatch

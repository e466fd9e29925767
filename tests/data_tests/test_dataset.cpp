// TensorDataset, map/field transforms, the Stack collate and the Generator.

#include "data_test_util.hpp"

#include <set>
#include <tuple>

namespace test_dataset {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using data_test::values;

TEST_CASE("data: TensorDataset gives the rows of every tensor") {
  Tensor x = arange(12).reshape({4, 3}).to(DType::F32);
  Tensor y = arange(4) * 10;
  data::TensorDataset ds({x, y});
  static_assert(data::Dataset<data::TensorDataset>);
  CHECK(ds.size() == 4);
  std::vector<Tensor> ex = ds.get(2);
  REQUIRE(ex.size() == 2);
  CHECK(values(ex[0]) == std::vector<double>{6, 7, 8});
  CHECK(ex[0].sizes() == Shape{3});
  CHECK(ex[1].dim() == 0);
  CHECK(ex[1].item<int64_t>() == 20);
  // Rows are views: no copy per example.
  CHECK(ex[0].raw_data() == static_cast<char*>(x.raw_data()) + 2 * 3 * sizeof(float));
}

TEST_CASE("data: TensorDataset errors name the tensor, sizes and index") {
  using data_test::error_of;
  CHECK_ERROR(data::TensorDataset({zeros({4, 2}), zeros({5})}), "[TensorDataset]", "tensor 1", "5 rows", "4");
  CHECK_ERROR(data::TensorDataset({zeros({4}), zeros({})}), "[TensorDataset]", "tensor 1", "0-d");
  CHECK_ERROR(data::TensorDataset(std::vector<Tensor>{}), "[TensorDataset]", "at least one");
  data::TensorDataset ds({zeros({3, 2})});
  CHECK_ERROR(ds.get(3), "[TensorDataset]", "index 3", "3 examples");
  CHECK_ERROR(ds.get(-1), "[TensorDataset]", "index -1");
}

TEST_CASE("data: map applies a transform to field k only, with the sample's generator") {
  Tensor x = ones({5, 2}), y = arange(5);
  data::TensorDataset ds({x, y});
  auto doubled = data::map(ds, data::field(0, [](const Tensor& t) { return t * 2; }));
  static_assert(data::Dataset<decltype(doubled)>);
  CHECK(doubled.size() == 5);
  auto ex = doubled.get(3);
  CHECK(values(ex[0]) == std::vector<double>{2, 2});
  CHECK(ex[1].item<int64_t>() == 3);  // untouched

  // A random transform draws from the context's generator: same context, same result;
  // another index or epoch, another stream.
  auto noisy = data::map(ds, data::field(0, [](const Tensor& t, data::Generator& g) { return t + g.uniform(); }));
  // Rows are [2] tensors; compare their first element.
  auto first = [&](int64_t epoch, int64_t index) {
    data::SampleContext ctx = data::SampleContext::make(7, epoch, index);
    return values(noisy.get(index, ctx)[0])[0];
  };
  CHECK(first(0, 1) == first(0, 1));
  CHECK(first(0, 1) != first(0, 2));
  CHECK(first(0, 1) != first(1, 1));
  // The value is 1 + the first uniform of Generator(sample_seed(7, 0, 1)).
  data::Generator g(data::sample_seed(7, 0, 1));
  CHECK(first(0, 1) == doctest::Approx(1.0 + static_cast<float>(g.uniform())).epsilon(1e-6));
  // get(i) outside a loader draws as epoch 0 under seed 0.
  data::SampleContext ctx0 = data::SampleContext::make(0, 0, 4);
  CHECK(values(noisy.get(4)[0]) == values(noisy.get(4, ctx0)[0]));
}

TEST_CASE("data: field on tuples and single tensors, and its errors") {
  data::Generator g;
  auto plus1 = data::field(1, [](const Tensor& t) { return t + 1; });
  std::tuple<int, Tensor> ex{5, zeros({2})};
  auto out = plus1(ex, g);
  CHECK(std::get<0>(out) == 5);
  CHECK(values(std::get<1>(out)) == std::vector<double>{1, 1});
  using data_test::error_of;
  CHECK_ERROR(plus1(Tensor(zeros({2})), g), "[field]", "single tensor", "field 1");
  CHECK_ERROR(plus1(std::vector<Tensor>{zeros({1})}, g), "[field]", "1 fields", "field 1");
  auto plus0 = data::field(0, [](const Tensor& t) { return t + 1; });
  CHECK_ERROR(plus0(ex, g), "[field]", "field 0", "not a Tensor");
}

TEST_CASE("data: Stack collates per field; numbers become i64/f64, bools bool") {
  data::Stack stack;
  std::vector<std::vector<Tensor>> exs;
  for (int i = 0; i < 3; ++i) exs.push_back({full({2}, i), full({}, i * 10, TensorOptions(DType::I64))});
  std::vector<Tensor> b = stack(std::move(exs));
  REQUIRE(b.size() == 2);
  CHECK(b[0].sizes() == Shape{3, 2});
  CHECK(values(b[0]) == std::vector<double>{0, 0, 1, 1, 2, 2});
  CHECK(b[1].dtype() == DType::I64);
  CHECK(values(b[1]) == std::vector<double>{0, 10, 20});

  std::vector<std::tuple<Tensor, int, double>> tex;
  tex.emplace_back(ones({2, 2}), 3, 0.5);
  tex.emplace_back(zeros({2, 2}), 4, 1.5);
  auto [imgs, ints, reals] = stack(std::move(tex));
  CHECK(imgs.sizes() == Shape{2, 2, 2});
  CHECK(ints.dtype() == DType::I64);
  CHECK(values(ints) == std::vector<double>{3, 4});
  CHECK(reals.dtype() == DType::F64);
  CHECK(values(reals) == std::vector<double>{0.5, 1.5});

  // bool fields stay bool (PyTorch's default_collate gives torch.bool).
  std::vector<std::tuple<Tensor, bool>> bex;
  bex.emplace_back(ones({1}), true);
  bex.emplace_back(zeros({1}), false);
  auto [xs, flags] = stack(std::move(bex));
  CHECK(flags.dtype() == DType::Bool);
  CHECK(values(flags) == std::vector<double>{1, 0});

  // Non-contiguous rows are copied correctly.
  Tensor m = arange(6).reshape({2, 3}).to(DType::F32);
  Tensor t = stack(std::vector<Tensor>{m.t(), m.t() * 2});
  CHECK(values(t) == std::vector<double>{0, 3, 1, 4, 2, 5, 0, 6, 2, 8, 4, 10});

  using data_test::error_of;
  CHECK_ERROR(stack(std::vector<Tensor>{zeros({2}), zeros({3})}), "[collate]", "example 1", "[3]", "[2]");
  CHECK_ERROR(stack(std::vector<std::vector<Tensor>>{{zeros({2})}, {zeros({2}), zeros({1})}}), "[collate]",
              "example 1", "2 fields");
  CHECK_ERROR(stack(std::vector<std::vector<Tensor>>{{zeros({2}), zeros({2})}, {zeros({2}), zeros({1})}}),
              "[collate]", "field 1", "example 1");
  CHECK_ERROR(stack(std::vector<Tensor>{zeros({2}), zeros({2}, TensorOptions(DType::F64))}), "[collate]", "f64",
              "f32");
  CHECK_ERROR(stack(std::vector<Tensor>{}), "[collate]", "empty");
}

TEST_CASE("data: Generator is deterministic, uniform and unbiased") {
  data::Generator a(42, 3), b(42, 3), c(42, 4), d(43, 3);
  std::vector<uint64_t> va, vb, vc, vd;
  for (int i = 0; i < 8; ++i) {
    va.push_back(a.next_u64());
    vb.push_back(b.next_u64());
    vc.push_back(c.next_u64());
    vd.push_back(d.next_u64());
  }
  CHECK(va == vb);
  CHECK(va != vc);
  CHECK(va != vd);
  CHECK(a.draws() == 8);

  // below(n) is in range and close to uniform (chi-square over 7 bins, 70000 draws: the
  // 99.99% quantile of chi2 with 6 degrees of freedom is about 27.9).
  data::Generator g(1);
  std::vector<int64_t> bins(7, 0);
  for (int i = 0; i < 70000; ++i) {
    uint64_t v = g.below(7);
    REQUIRE(v < 7);
    ++bins[v];
  }
  double chi2 = 0;
  for (int64_t n : bins) chi2 += (n - 10000.0) * (n - 10000.0) / 10000.0;
  CHECK(chi2 < 27.9);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    double u = g.uniform();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
  }
  CHECK(sum / 100000 == doctest::Approx(0.5).epsilon(0.01));
  for (int i = 0; i < 1000; ++i) {
    int64_t v = g.randint(-3, 2);
    REQUIRE(v >= -3);
    REQUIRE(v < 2);
  }
  using data_test::error_of;
  CHECK_ERROR(g.randint(2, 2), "[Generator::randint]", "2");
  CHECK_ERROR(g.below(0), "[Generator::below]");
  // Seeds of samples and batches differ in every coordinate.
  std::set<uint64_t> seeds{data::sample_seed(0, 0, 0), data::sample_seed(0, 0, 1), data::sample_seed(0, 1, 0),
                           data::sample_seed(1, 0, 0), data::batch_seed(0, 0, 0)};
  CHECK(seeds.size() == 5);
}

}  // namespace test_dataset

// Index and shape ops over every dtype and over non-contiguous inputs: each result is checked
// against the same op computed in f64 on a contiguous copy (values are small integers, so
// every dtype represents them exactly).

#include <doctest/doctest.h>
#include <ember/ember.hpp>

#include <vector>

namespace test_index_dtypes {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {
const DType kAll[] = {DType::Bool, DType::U8, DType::I8, DType::I32, DType::I64,
                      DType::F16,  DType::BF16, DType::F32, DType::F64};

/// Small non-negative integers (0..5), so bool/u8 stay meaningful; transposed (strided) view.
Tensor input(DType t) {
  manual_seed(11);
  Tensor x = randint(0, 6, {5, 4}).to(t == DType::Bool ? DType::I64 : t);
  if (t == DType::Bool) x = x.gt(2);
  return x.t();  // [4, 5], non-contiguous
}
bool same(const Tensor& got, const Tensor& want) {
  if (!(got.sizes() == want.sizes())) return false;
  return got.to(DType::F64).eq(want.to(DType::F64)).all().item<bool>();
}
}  // namespace

TEST_CASE("index ops agree with their f64 results for every dtype and strided input") {
  for (DType t : kAll) {
    CAPTURE(dtype_name(t));
    Tensor x = input(t);
    Tensor ref = x.to(DType::F64).contiguous();
    CHECK_FALSE(x.is_contiguous());
    Tensor idx = tensor({3, 0, 3});
    CHECK(same(index_select(x, 1, idx), index_select(ref, 1, idx)));
    CHECK(same(cat(std::vector<Tensor>{x, x}, 1), cat(std::vector<Tensor>{ref, ref}, 1)));
    CHECK(same(flip(x, {0}), flip(ref, {0})));
    CHECK(same(roll(x, 2, 1), roll(ref, 2, 1)));
    Tensor gidx = tensor({{0, 1}, {2, 3}, {4, 0}, {1, 1}});
    CHECK(same(gather(x, 1, gidx), gather(ref, 1, gidx)));
    CHECK(same(scatter(x, 1, gidx, x.narrow(1, 0, 2)), scatter(ref, 1, gidx, ref.narrow(1, 0, 2))));
    CHECK(same(masked_select(x, ref.gt(1)), masked_select(ref, ref.gt(1))));
    CHECK(same(nonzero(x), nonzero(ref)));
    CHECK(same(repeat(x, {2, 1}), repeat(ref, {2, 1})));
    CHECK(same(pad(x, {1, 2}, "replicate"), pad(ref, {1, 2}, "replicate")));
    CHECK(same(tril(x), tril(ref)));
    if (t != DType::Bool) {
      auto [v, i] = sort(x, 1);
      auto [rv, ri] = sort(ref, 1);
      CHECK(same(v, rv));
      CHECK(same(i, ri));
      auto [tv, ti] = topk(x, 2, 1);
      auto [rtv, rti] = topk(ref, 2, 1);
      CHECK(same(tv, rtv));
      CHECK(same(ti, rti));
      CHECK(same(index_add(x, 1, idx, x.narrow(1, 0, 3)), index_add(ref, 1, idx, ref.narrow(1, 0, 3))));
      CHECK(same(std::get<0>(unique(x)), std::get<0>(unique(ref))));
    }
  }
}

}  // namespace test_index_dtypes

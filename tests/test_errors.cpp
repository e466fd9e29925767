// Error paths: each failure throws ember::Error whose what() names the op in brackets and
// the offending shapes or values.

#include <doctest/doctest.h>
#include <ember/ember.hpp>

#include <cmath>
#include <limits>
#include <string>

#include "error_text.hpp"

namespace test_errors {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {
using ::ember_test::error_of;
using ::ember_test::has;

}  // namespace

TEST_CASE("errors: broadcasting shape mismatch names the op and both shapes") {
  Tensor a = zeros({2, 3}), b = zeros({4});
  CHECK_ERROR(a.add(b), "[add", "[2, 3]", "[4]");
  CHECK_ERROR(a.mul(zeros({3, 2})), "[mul", "[2, 3]", "[3, 2]");
  CHECK_ERROR(a.maximum(b), "[maximum", "[2, 3]", "[4]");
  CHECK_ERROR(a.eq(b), "[eq", "[2, 3]", "[4]");
  CHECK_ERROR(a.where(zeros({2, 3}, TensorOptions(DType::Bool)), zeros({5})), "[where");
  CHECK_THROWS_AS(a.copy_(zeros({5})), Error);
  CHECK_ERROR(a.copy_(zeros({5})), "[copy_", "[2, 3]", "[5]");
}

TEST_CASE("errors: in-place op that would broadcast its output") {
  Tensor a = zeros({3}), b = zeros({2, 3});
  CHECK_ERROR(a.add_(b), "[add_", "[3]", "[2, 3]");
  CHECK_ERROR(a.mul_(b), "[mul_", "[3]", "[2, 3]");
  // In-place result type that cannot be cast back.
  Tensor i = zeros({3}, TensorOptions(DType::I32));
  CHECK_ERROR(i.div_(zeros({3})), "[div_", "f32", "i32");
  CHECK_ERROR(i.exp_(), "[exp_", "f32", "i32");
}

TEST_CASE("errors: bad dims") {
  Tensor a = zeros({2, 3});
  CHECK_ERROR(a.sum({2}), "[sum", "dim 2", "rank 2");
  CHECK_ERROR(a.sum({-3}), "[sum", "-3");
  CHECK_ERROR(a.sum({0, 0}), "[sum", "more than once");
  CHECK_ERROR(a.amax({5}), "[amax", "5");
  CHECK_ERROR(a.softmax(2), "[softmax", "dim 2");
  CHECK_ERROR(a.cumsum(-3), "[cumsum", "-3");
  CHECK_ERROR(a.argmax(int64_t{2}), "[argmax", "dim 2");
  CHECK_ERROR(a.max(7), "[max", "dim 7");
  CHECK_ERROR(a.transpose(0, 2), "[transpose", "dim 2");
  CHECK_ERROR(a.permute({0, 0}), "[permute", "repeated");
  CHECK_ERROR(a.permute({0}), "[permute", "rank 2");
  CHECK_ERROR(a.unsqueeze(4), "[unsqueeze", "4");
  CHECK_ERROR(a.size(2), "[size", "dim 2");
}

TEST_CASE("errors: unsupported dtypes") {
  Tensor f = zeros({3}), i = zeros({3}, TensorOptions(DType::I32)), bl = zeros({3}, TensorOptions(DType::Bool));
  CHECK_ERROR(f.bitwise_and(f), "[bitwise_and", "f32");
  CHECK_ERROR(f.bitwise_not(), "[bitwise_not", "f32");
  CHECK_ERROR(f.bitwise_left_shift(f), "[bitwise_left_shift", "f32");
  CHECK_ERROR(bl.bitwise_left_shift(bl), "[bitwise_left_shift", "bool");
  CHECK_ERROR(bl.sub(bl), "[sub", "bool");
  CHECK_ERROR(bl.neg(), "[neg", "bool");
  CHECK_ERROR(bl.div_floor(bl), "[div_floor", "bool");
  CHECK_ERROR(i.mean(), "[mean", "i32");
  CHECK_ERROR(i.softmax(0), "[softmax", "i32");
  CHECK_ERROR(i.log_softmax(0), "[log_softmax", "i32");
  CHECK_ERROR(i.logcumsumexp(0), "[logcumsumexp", "i32");
  CHECK_ERROR(bl.matmul(bl), "[matmul", "bool");
  CHECK_ERROR(i.matmul(zeros({3}, TensorOptions(DType::I64))), "[matmul", "i32", "i64");
  CHECK_ERROR(f.matmul(zeros({3}, TensorOptions(DType::F64))), "[matmul", "f32", "f64");
  CHECK_ERROR(rand({3}, TensorOptions(DType::I64)), "[rand", "i64");
}

TEST_CASE("errors: integer division by zero and negative integer powers") {
  Tensor i = tensor({4, 5, 6}), z = tensor({1, 0, 2});
  CHECK_ERROR(i.div_trunc(z), "[div_trunc");
  CHECK_ERROR(i.div_floor(z), "[div_floor");
  CHECK_ERROR(i.remainder(z), "[remainder");
  CHECK_ERROR(i.fmod(z), "[fmod");
  // PyTorch: a negative integer scalar power is refused; a tensor of powers gives 0 there
  // (1 and +-1 for bases 1 and -1).
  CHECK_ERROR(i.pow(-1), "[pow", "negative");
  CHECK_ERROR(tensor<int64_t>({2}).to(DType::U8).pow(-1), "[pow", "negative", "u8");  // not -1 wrapped to 255
  Tensor pw = tensor({2, 1, -1, 0}).pow(tensor({-1, -1, -3, -1}));
  CHECK(pw.dtype() == DType::I64);
  const int64_t* pp = pw.data_ptr<int64_t>();
  CHECK((pp[0] == 0 && pp[1] == 1 && pp[2] == -1 && pp[3] == 0));
  // Large enough to run on several threads: the fault must still be reported.
  Tensor big = ones({1 << 20}, TensorOptions(DType::I64));
  Tensor zb = ones({1 << 20}, TensorOptions(DType::I64));
  zb.index_put_({(1 << 20) - 7}, 0);
  CHECK_ERROR(big.div_trunc(zb), "[div_trunc");
}

TEST_CASE("errors: device mismatch") {
  float buf[3] = {0, 0, 0};
  std::string msg = error_of([&] {
    Tensor c = from_blob(buf, {3}, TensorOptions(DType::F32).device(Device::cuda()));
    (void)zeros({3}).add(c);
  });
  // Either constructing a CUDA tensor in a CPU-only build or mixing devices fails, naming an op.
  CHECK_MESSAGE(has(msg, "["), msg);
  CHECK_MESSAGE(!has(msg, "<no error>"), msg);
}

TEST_CASE("errors: out-of-range indices") {
  Tensor a = zeros({2, 3});
  CHECK_ERROR(a.select(1, 3), "[select", "3", "size 3");
  CHECK_ERROR(a.select(0, -3), "[select", "-3");
  CHECK_ERROR(a.select(2, 0), "[select", "dim 2");
  CHECK_ERROR(a.narrow(1, 2, 2), "[narrow", "size 3");
  CHECK_ERROR(a.narrow(0, -3, 1), "[narrow");
  CHECK_ERROR(a.index({0, 5}), "[select", "5");
  CHECK_ERROR(a.index({0, 0, 0}), "[index", "rank 2");
  CHECK_ERROR(a.index({Ellipsis, 0, Ellipsis}), "[index", "Ellipsis");
  CHECK_ERROR(a[2], "[select", "2");
  CHECK_ERROR(zeros({}).select(0, 0), "[select", "0-d");
  CHECK_ERROR(a.slice(1, 0, 3, 0), "[slice", "step");
  CHECK_ERROR(a.diagonal(0, 0, 0), "[diagonal");
  CHECK_ERROR(zeros({4}).as_strided({4}, {2}), "[as_strided");
}

TEST_CASE("errors: overflowing and negative shapes") {
  CHECK_ERROR(empty({int64_t{1} << 40, int64_t{1} << 40}), "[empty", "1099511627776");
  CHECK_ERROR(zeros({int64_t{1} << 62, 4}), "[", "4611686018427387904");
  CHECK_ERROR(empty({3, -1}), "[empty", "-1");
  CHECK_ERROR(zeros({6}).view({int64_t{1} << 40, int64_t{1} << 40}), "[view");
  CHECK_ERROR(zeros({6}).reshape({4, -1}), "[reshape", "[4, -1]", "6");
  CHECK_ERROR(zeros({6}).view({-1, -1}), "[view", "one dimension");
  CHECK_ERROR(zeros({2, 3}).expand({3, 3}), "[expand", "[2, 3]", "[3, 3]");
}

TEST_CASE("errors: sizes computed from huge arguments overflow into an Error, never wrap or hang") {
  const int64_t big = int64_t{1} << 32, huge = int64_t{1} << 62, max = std::numeric_limits<int64_t>::max();
  // Stride-0 views: the element count must still fit in int64 (it wrapped to 0 and sum() read 0).
  CHECK_ERROR(ones({1, 1}).expand({big, big}), "[expand]", "more elements than int64");
  CHECK_ERROR(ones({1}).as_strided({big, big}, {0, 0}), "[as_strided]", "more elements than int64");
  CHECK(ones({1}).expand({big}).numel() == big);  // large but countable is fine (nothing is allocated)
  CHECK_ERROR(repeat(zeros({0, 4}), {huge, huge}), "[repeat]", "overflows int64");
  // Index lists built in a tensor: a size beyond memory is an allocation error, not a hang.
  CHECK_ERROR(repeat_interleave(ones({2}), huge), "[repeat_interleave]", "overflows int64");
  CHECK_THROWS_AS(repeat_interleave(ones({1}), int64_t{1} << 50), Error);
  CHECK_THROWS_AS(pad(ones({1, 2}), {int64_t{1} << 50, 0}, "replicate"), Error);
  CHECK_ERROR(pad(ones({1, 2}), {max, max}, "replicate"), "[pad]", "overflows int64");
  CHECK_ERROR(pad(ones({1, 2}), {huge, huge}), "[pad]", "overflows int64");
  CHECK_ERROR(one_hot(tensor<int64_t>({max})), "[one_hot]", "overflows int64");
  CHECK_ERROR(diag(ones({3}), max), "[diag]", "overflows int64");
  CHECK_ERROR(diag(ones({3}), std::numeric_limits<int64_t>::min()), "[diag]", "out of range");
  // An end outside an integer dtype's range (or NaN) is refused, as PyTorch's linspace.
  CHECK_ERROR(linspace(0, 1e10, 3, DType::I8), "[linspace]", "10000000000", "i8");
  CHECK_ERROR(linspace(-2.5, 7, 11, DType::U8), "[linspace]", "-2.5", "u8");
  CHECK_ERROR(linspace(std::nan(""), 10.0, 3, DType::I64), "[linspace]", "nan");
}

TEST_CASE("errors: view incompatible with strides") {
  Tensor a = zeros({4, 6}).t();  // [6, 4], strides [1, 6]
  CHECK_ERROR(a.view({24}), "[view", "[6, 4]", "[1, 6]");
  CHECK_ERROR(a.view({2, 12}), "[view", "[2, 12]");
  CHECK(a.reshape({24}).is_contiguous());  // reshape copies instead
  CHECK_ERROR(zeros({2, 3}).expand({4, 2, 3}).copy_(zeros({2, 3})), "[copy_", "overlaps");
}

TEST_CASE("errors: matmul shape mismatch") {
  CHECK_ERROR(zeros({2, 3}).matmul(zeros({4, 5})), "[matmul", "[2, 3]", "[4, 5]");
  CHECK_ERROR(zeros({2, 3}).mm(zeros({3})), "[mm", "[2, 3]", "[3]");
  CHECK_ERROR(zeros({2, 2, 3}).bmm(zeros({3, 3, 4})), "[bmm", "[2, 2, 3]", "[3, 3, 4]");
  CHECK_ERROR(zeros({3}).dot(zeros({4})), "[dot", "[3]", "[4]");
  CHECK_ERROR(zeros({2, 5, 3}).matmul(zeros({3, 3, 4})), "[matmul", "[2, 5, 3]", "[3, 3, 4]");
  CHECK_ERROR(zeros({}).matmul(zeros({3})), "[matmul");
  CHECK_ERROR(zeros({2}).addmm(zeros({2, 3}), zeros({4, 2})), "[addmm", "[2, 3]", "[4, 2]");
  CHECK_ERROR(linear(zeros({2, 3}), zeros({4, 5})), "[linear", "[2, 3]", "[4, 5]");
  CHECK_ERROR(linear(zeros({2, 3}), zeros({4, 3}), zeros({5})), "[linear", "[5]", "[2, 4]");
  CHECK_ERROR(linear(zeros({2, 3}), zeros({4, 3}), zeros({2, 1, 4})), "[linear", "[2, 1, 4]");
  CHECK_ERROR(linear(zeros({2, 3}), zeros({4, 3}, DType::F64)), "[linear", "f32", "f64");
  CHECK_ERROR(linear(zeros({2, 3}), zeros({4, 3}), zeros({4}, DType::F64)), "[linear", "f64");
  CHECK_ERROR(linear(zeros({2, 3}, DType::Bool), zeros({4, 3}, DType::Bool)), "[linear", "bool");
  CHECK_ERROR(linear(zeros({2, 2, 3}), zeros({4, 5})), "[linear", "[2, 2, 3]", "[4, 5]");
}

TEST_CASE("errors: reductions without an identity") {
  CHECK_ERROR(zeros({3, 0}).amax({1}), "[amax", "size 0", "[3, 0]");
  CHECK_ERROR(zeros({0}).amin(), "[amin", "size 0");
  CHECK_ERROR(zeros({3, 0}).argmax(int64_t{1}), "[argmax", "size 0");
  CHECK_ERROR(zeros({3, 0}).max(1), "[max", "size 0");
  CHECK_ERROR(zeros({0}).item<float>(), "[item", "[0]");
}

TEST_CASE("errors: a message formatted at run time, as in users' builds, reads as the checked one") {
  // Users' programs (no EMBER_CHECKED_FORMATS) reach raise_fmt, Ember's own build
  // raise_fmt_checked; both must say the same.
  const Shape s{2, 3};
  const std::string expected = fmt::format("[op] shapes {} and {} at dim {} of {}", s, Shape{4}, -1, DType::F16);
  CHECK(has(expected, "[2, 3]"));
  CHECK(error_of([&] { detail::raise_fmt("[op] shapes {} and {} at dim {} of {}", s, Shape{4}, -1, DType::F16); }) ==
        expected);
  CHECK(error_of([&] {
          detail::raise_fmt_checked("[op] shapes {} and {} at dim {} of {}", s, Shape{4}, -1, DType::F16);
        }) == expected);
  // A malformed message (only a run-time format string can be one) still raises an Error
  // that quotes it, never fmt's own exception.
  CHECK_ERROR(detail::raise_fmt("[op] unclosed {", 1), "malformed format string", "[op] unclosed {");
  CHECK_ERROR(detail::raise_fmt("[op] {} and {}", 1), "malformed format string", "[op] {} and {}");
  // EMBER_FORMAT's run-time path (module reprs in users' builds) says the same, as an Error.
  CHECK(detail::format_runtime("p={}, shape {}", 0.5, s) == "p=0.5, shape [2, 3]");
  CHECK_ERROR(detail::format_runtime("p={:q}", 0.5), "malformed format string", "p={:q}");
}

}  // namespace test_errors

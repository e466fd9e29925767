// Tensor core: factories, views, strides, indexing, conversions, printing, random numbers.

#include "error_text.hpp"
#include "helping_queue.hpp"

#include <doctest/doctest.h>
#include <ember/ember.hpp>
#include <ember/ops/view_ops.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace test_tensor {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {
std::vector<float> values(const Tensor& t) {
  Tensor c = t.to(DType::F32).contiguous();
  const float* p = c.data_ptr<float>();
  return std::vector<float>(p, p + c.numel());
}
}  // namespace

TEST_CASE("factories make the right shapes, dtypes and values") {
  CHECK(zeros({2, 3}).sizes() == Shape{2, 3});
  CHECK(zeros({2, 3}).dtype() == DType::F32);
  CHECK(ones({4}, DType::F64).dtype() == DType::F64);
  CHECK(values(full({2}, 7.5)) == std::vector<float>{7.5f, 7.5f});
  CHECK(arange(5).dtype() == DType::I64);
  CHECK(values(arange(5)) == std::vector<float>{0, 1, 2, 3, 4});
  CHECK(arange(0.0, 1.0, 0.25).numel() == 4);
  CHECK(values(linspace(0, 1, 5)) == std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1});
  CHECK(values(eye(2, 3)) == std::vector<float>{1, 0, 0, 0, 1, 0});
  Tensor t = tensor({{1.f, 2.f}, {3.f, 4.f}});
  CHECK(t.sizes() == Shape{2, 2});
  CHECK(values(t) == std::vector<float>{1, 2, 3, 4});
  CHECK(tensor({1, 2, 3}).dtype() == DType::I64);
  CHECK(zeros_like(t).sizes() == t.sizes());
  CHECK(full_like(t, 3).dtype() == DType::F32);
  CHECK_THROWS_AS(tensor({{1.f, 2.f}, {3.f}}), Error);
}

TEST_CASE("random numbers are reproducible and independent of the thread count") {
  manual_seed(42);
  Tensor a = rand({100000});
  manual_seed(42);
  set_num_threads(2);
  Tensor b = rand({100000});
  set_num_threads(1);
  CHECK(values(a) == values(b));
  float mn = a.min().item<float>(), mx = a.max().item<float>();
  CHECK(mn >= 0.0f);
  CHECK(mx < 1.0f);
  CHECK(std::abs(a.mean().item<float>() - 0.5f) < 0.01f);
  Tensor n = randn({200000});
  CHECK(std::abs(n.mean().item<float>()) < 0.01f);
  CHECK(std::abs(n.std().item<float>() - 1.0f) < 0.01f);
  Tensor i = randint(3, 7, {1000});
  CHECK(i.dtype() == DType::I64);
  CHECK(i.min().item<int64_t>() >= 3);
  CHECK(i.max().item<int64_t>() <= 6);
  CHECK_FALSE(values(rand({8})) == values(rand({8})));  // the counter advances
}

TEST_CASE("views share storage and have the expected strides") {
  Tensor x = arange(24).to(DType::F32).view({2, 3, 4});
  Tensor t = x.transpose(0, 2);
  CHECK(t.sizes() == Shape{4, 3, 2});
  CHECK(t.strides() == Shape{1, 4, 12});
  CHECK_FALSE(t.is_contiguous());
  CHECK(t.index({1, 2, 1}).item<float>() == x.index({1, 2, 1}).item<float>());
  Tensor p = x.permute({1, 0, 2});
  CHECK(p.sizes() == Shape{3, 2, 4});
  CHECK(x.narrow(2, 1, 2).sizes() == Shape{2, 3, 2});
  CHECK(x.select(1, 2).sizes() == Shape{2, 4});
  CHECK(x.unsqueeze(0).sizes() == Shape{1, 2, 3, 4});
  CHECK(x.unsqueeze(-1).sizes() == Shape{2, 3, 4, 1});
  CHECK(x.unsqueeze(0).squeeze(0).sizes() == x.sizes());
  CHECK(x.flatten().sizes() == Shape{24});
  CHECK(x.flatten(1).sizes() == Shape{2, 12});
  CHECK(x.unflatten(2, {2, 2}).sizes() == Shape{2, 3, 2, 2});
  CHECK(x.view({-1, 4}).sizes() == Shape{6, 4});
  CHECK_THROWS_AS(t.view({24}), Error);  // non-viewable: use reshape
  CHECK(values(t.reshape({24})) == values(t.contiguous().view({24})));
  Tensor e = tensor({1.f, 2.f, 3.f}).expand({2, 3});
  CHECK(e.strides() == Shape{0, 1});
  // writes through a view reach the base
  x.select(0, 1).fill_(-1);
  CHECK(x.index({1, 0, 0}).item<float>() == -1.0f);
  CHECK(x.index({0, 0, 0}).item<float>() == 0.0f);
  Tensor s = arange(10).as_strided({3, 2}, {3, 1}, 1);
  CHECK(values(s) == std::vector<float>{1, 2, 4, 5, 7, 8});
  CHECK_THROWS_AS(arange(10).as_strided({5, 5}, {5, 1}), Error);
  CHECK(values(x.diagonal(0, 1, 2).select(0, 0)) == std::vector<float>{0, 5, 10});
}

TEST_CASE("contiguous strides are written in place, inline or on the heap, over views and broadcasts") {
  // set_contiguous_strides sizes its target without a zero fill (Shape::resize_for_overwrite):
  // every stride must still be written, from a shape that held more, fewer or no dims before,
  // past the inline capacity too, and with empty dims (whose strides count them as 1).
  Shape st{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7};  // heap-held: more than EMBER_MAX_INLINE_DIMS
  set_contiguous_strides(st, Shape{2, 3, 4});
  CHECK(st == Shape{12, 4, 1});
  set_contiguous_strides(st, Shape{2, 1, 1, 1, 1, 1, 1, 1, 1, 3, 5});
  CHECK(st == Shape{15, 15, 15, 15, 15, 15, 15, 15, 15, 5, 1});
  Shape small{9};
  set_contiguous_strides(small, Shape{4, 0, 3});
  CHECK(small == Shape{3, 3, 1});
  set_contiguous_strides(small, Shape{});
  CHECK(small.empty());
  CHECK(contiguous_strides(Shape{5, 6}) == Shape{6, 1});
  Shape grown{1, 2};
  grown.resize_for_overwrite(12);
  CHECK(grown.size() == 12);
  CHECK((grown[0] == 1 && grown[1] == 2));  // the kept entries survive the move to the heap
  // The paths that use it, inline and at rank 10 (past the inline dims of the default 8-dim
  // build): a new tensor, a view of a contiguous or a transposed one, an expand, a broadcast.
  Tensor x = zeros({1, 2, 1, 3, 1, 2, 1, 2, 1, 2});
  CHECK(x.strides() == Shape{48, 24, 24, 8, 8, 4, 4, 2, 2, 1});
  CHECK(x.view({2, 3, 2, 2, 2, 1, 1, 1, 1, 1}).strides() == Shape{24, 8, 4, 2, 1, 1, 1, 1, 1, 1});
  Tensor y = arange(24).to(DType::F32).view({2, 3, 4}).permute({2, 0, 1});  // strides 1, 12, 4
  CHECK(y.view({4, 6}).strides() == Shape{1, 4});  // the two trailing dims merge
  CHECK_THROWS_AS(y.view({24}), Error);
  Shape refused{5, 5, 5};
  CHECK_FALSE(ops::view_strides(*y.impl_ref(), Shape{24}, refused));
  CHECK(refused.empty());  // emptied, not left half written
  Tensor z = arange(48).to(DType::F32).view({2, 3, 2, 2, 1, 1, 1, 1, 1, 2}).transpose(0, 1);
  Tensor zv = z.view({3, 2, 4, 1, 1, 1, 1, 1, 1, 2});  // dims 2..9 are one contiguous run
  CHECK(zv.strides() == Shape{8, 24, 2, 2, 2, 2, 2, 2, 2, 1});
  CHECK(zv.data_ptr() == z.data_ptr());
  CHECK(values(zv) == values(z.contiguous().view({3, 2, 4, 1, 1, 1, 1, 1, 1, 2})));
  CHECK(ones({3, 1}).expand({2, 1, 3, 4}).strides() == Shape{0, 0, 1, 0});
  Tensor e = ones({3, 1}).expand({1, 1, 1, 1, 1, 1, 1, 2, 3, 4});
  CHECK(e.strides() == Shape{0, 0, 0, 0, 0, 0, 0, 0, 1, 0});
  CHECK(values(e) == std::vector<float>(24, 1.f));
  Tensor b = ones({1, 4}) + ones({3, 1});
  CHECK(b.sizes() == Shape{3, 4});
  CHECK(values(b) == std::vector<float>(12, 2.f));
  Tensor b10 = arange(4).to(DType::F32).view({1, 1, 1, 1, 1, 1, 1, 1, 1, 4}) + ones({3, 1});
  CHECK(b10.sizes() == Shape{1, 1, 1, 1, 1, 1, 1, 1, 3, 4});
  CHECK(values(b10) == std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4});
}

TEST_CASE("index with slices, None and Ellipsis") {
  Tensor x = arange(60).view({3, 4, 5});
  CHECK(x.index({Slice(0, 3, 2)}).sizes() == Shape{2, 4, 5});
  CHECK(x.index({Slice(), 1}).sizes() == Shape{3, 5});
  CHECK(x.index({None, Ellipsis, 0}).sizes() == Shape{1, 3, 4});
  CHECK(x.index({Ellipsis, Slice(1, None)}).sizes() == Shape{3, 4, 4});
  CHECK(x.index({-1, -1, -1}).item<int64_t>() == 59);
  CHECK(x.index({Slice(-2)}).sizes() == Shape{2, 4, 5});
  CHECK_THROWS_AS(x.index({3}), Error);
  CHECK_THROWS_AS(x.index({0, 0, 0, 0}), Error);
  Tensor y = zeros({3, 3});
  y.index_put_({Slice(), 1}, 2.0);
  CHECK(y.sum().item<float>() == 6.0f);
}

// Tensor conversions between float and f16/bf16 run eight at a time where the CPU can (F16C,
// AVX2 integer ops) and one at a time elsewhere (the tails, the baseline build). Both must
// give Half/BFloat16's scalar results: every f16 and bf16 bit pattern widened, and float bit
// patterns narrowed (ties, the edge of overflow, subnormal halves, NaN kept a NaN).
TEST_CASE("f16 and bf16 conversions of whole tensors agree with the scalar conversions") {
  auto is_nan_bits = [](uint16_t b, bool half) {
    return half ? (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu) != 0 : (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0;
  };
  for (bool half : {true, false}) {
    const DType dt = half ? DType::F16 : DType::BF16;
    std::vector<uint16_t> all(65536 + 5);  // + 5: a scalar tail
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
    Tensor h = from_blob(all.data(), {static_cast<int64_t>(all.size())}, TensorOptions(dt));
    Tensor f = h.to(DType::F32);
    const float* fp = f.data_ptr<float>();
    int64_t bad = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      float want = half ? detail::half_bits_to_float(all[i]) : detail::bf16_bits_to_float(all[i]);
      bool ok = std::isnan(want) ? std::isnan(fp[i]) : detail::float_bits(want) == detail::float_bits(fp[i]);
      bad += !ok;
    }
    const std::string name = half ? "f16" : "bf16";
    CHECK_MESSAGE(bad == 0, name << " -> f32: " << bad << " bit patterns differ");
    // Narrowing: the widened values and the midpoints between neighbours (ties), plus
    // pseudo-random float bit patterns of every exponent.
    std::vector<float> src;
    for (size_t i = 0; i + 1 < 65536; ++i) {
      float a = fp[i], b = fp[i + 1];
      src.push_back(a);
      if (std::isfinite(a) && std::isfinite(b) && std::signbit(a) == std::signbit(b)) src.push_back(a + (b - a) / 2);
    }
    uint32_t state = 12345;
    for (int i = 0; i < 200003; ++i) {
      state = state * 1664525u + 1013904223u;
      src.push_back(detail::bits_float(state));
    }
    Tensor n = from_blob(src.data(), {static_cast<int64_t>(src.size())}, TensorOptions(DType::F32)).to(dt);
    std::vector<uint16_t> got(src.size());
    std::memcpy(got.data(), n.impl().data(), got.size() * 2);
    bad = 0;
    for (size_t i = 0; i < src.size(); ++i) {
      uint16_t want = half ? detail::float_to_half_bits(src[i]) : detail::float_to_bf16_bits(src[i]);
      bool ok = is_nan_bits(want, half) ? is_nan_bits(got[i], half) : got[i] == want;
      bad += !ok;
    }
    CHECK_MESSAGE(bad == 0, "f32 -> " << name << ": " << bad << " of " << src.size() << " values differ");
  }
}

// u8/i8/i32 -> f32 and f32 -> u8/i32 convert eight at a time in the AVX2 build; every value
// must match the scalar rule: round to nearest into float; truncate toward zero, saturate,
// NaN -> 0 out of float. Runs are long enough for the vector loop and its tail.
TEST_CASE("integer <-> f32 conversions agree with the scalar rule on every edge") {
  std::vector<float> f = {NAN, -NAN, INFINITY, -INFINITY, 0.f, -0.f, 0.5f, -0.5f, 0.99f, 1.f, 254.9f, 255.f, 255.5f,
                          256.f, -1.f, -255.f, 1e10f, -1e10f, 2147483520.f, 2147483648.f, -2147483648.f,
                          -2147483904.f, 123.7f, -123.7f, 1e-30f, 3e38f};
  for (int i = 0; f.size() < 83; ++i) f.push_back(static_cast<float>(i * 37 % 300) - 20.5f);
  Tensor t = from_blob(f.data(), {static_cast<int64_t>(f.size())}, TensorOptions(DType::F32)).clone();
  auto sat = [](float v, double lo, double hi) -> double {
    if (std::isnan(v)) return 0;
    if (v >= hi) return hi;
    if (v <= lo) return lo;
    return std::trunc(static_cast<double>(v));
  };
  Tensor u8 = t.to(DType::U8), i32 = t.to(DType::I32);
  const uint8_t* pu = u8.data_ptr<uint8_t>();
  const int32_t* pi = i32.data_ptr<int32_t>();
  for (size_t k = 0; k < f.size(); ++k) {
    CHECK_MESSAGE(pu[k] == sat(f[k], 0, 255), "u8 of ", f[k]);
    CHECK_MESSAGE(pi[k] == sat(f[k], -2147483648.0, 2147483647.0), "i32 of ", f[k]);
  }
  std::vector<uint8_t> bytes(259);
  for (size_t k = 0; k < bytes.size(); ++k) bytes[k] = static_cast<uint8_t>(k * 7 + 3);
  Tensor b = from_blob(bytes.data(), {259}, TensorOptions(DType::U8)).clone();
  Tensor bf = b.to(DType::F32), sf = b.to(DType::I8).to(DType::F32);
  std::vector<int32_t> ints(77);
  for (size_t k = 0; k < ints.size(); ++k) ints[k] = static_cast<int32_t>(k * 2654435761u);  // large, odd: rounding
  Tensor it = from_blob(ints.data(), {77}, TensorOptions(DType::I32)).clone().to(DType::F32);
  for (size_t k = 0; k < bytes.size(); ++k) {
    CHECK(bf.data_ptr<float>()[k] == static_cast<float>(bytes[k]));
    CHECK(sf.data_ptr<float>()[k] == static_cast<float>(static_cast<int8_t>(bytes[k])));
  }
  for (size_t k = 0; k < ints.size(); ++k) CHECK(it.data_ptr<float>()[k] == static_cast<float>(ints[k]));
}

TEST_CASE("copy_, to(dtype) and conversions") {
  Tensor a = tensor({1.5f, -2.5f, 3.7f});
  CHECK(a.to(DType::I32).dtype() == DType::I32);
  CHECK(values(a.to(DType::I32)) == std::vector<float>{1, -2, 3});
  CHECK(values(a.to(DType::F16)) == std::vector<float>{1.5f, -2.5f, static_cast<float>(Half(3.7f))});
  CHECK(static_cast<float>(Half(65520.f)) == INFINITY);  // rounds to inf like IEEE
  CHECK(static_cast<float>(BFloat16(1.00390625f)) == 1.0f);  // tie to even
  CHECK(static_cast<float>(BFloat16(1.01171875f)) == 1.015625f);
  Tensor b = zeros({2, 3});
  b.copy_(tensor({1.f, 2.f, 3.f}));  // broadcasts
  CHECK(b.sum().item<float>() == 12.0f);
  CHECK(a.to(DType::Bool).sum().item<int64_t>() == 3);
  Tensor c = a.clone();
  c.fill_(0);
  CHECK(a.sum().item<float>() != 0.0f);
  CHECK_THROWS_AS(tensor({1.f, 2.f}).expand({3, 2}).copy_(ones({3, 2})), Error);
}

TEST_CASE("from_blob views user memory and runs the deleter") {
  static int deleted = 0;
  std::vector<float> data{1, 2, 3, 4, 5, 6};
  {
    Tensor t = from_blob(data.data(), {2, 3}, {}, [](void*, void*) { ++deleted; });
    CHECK(t.index({1, 2}).item<float>() == 6.0f);
    t.mul_(2);
    CHECK(data[5] == 12.0f);
  }
  CHECK(deleted == 1);
  Tensor strided = from_blob(data.data(), {3}, {2});
  CHECK(values(strided) == std::vector<float>{2, 6, 10});
}

TEST_CASE("tensor() from lists: the byte types keep their dtype, as libtorch's torch::tensor") {
  Tensor bytes = tensor<uint8_t>({0, 200, 255});
  CHECK(bytes.dtype() == DType::U8);
  CHECK(bytes[1].item<int64_t>() == 200);
  Tensor signed_bytes = tensor<int8_t>({-128, 5});
  CHECK(signed_bytes.dtype() == DType::I8);
  CHECK(signed_bytes[0].item<int64_t>() == -128);
  CHECK(tensor<uint8_t>({{1, 2}, {3, 4}}).dtype() == DType::U8);
  CHECK(tensor<int32_t>({1}).dtype() == DType::I64);  // other integers are i64
  CHECK(tensor<uint8_t>({1}, TensorOptions(DType::F32)).dtype() == DType::F32);
}

TEST_CASE("printing follows PyTorch") {
  CHECK(to_string(tensor({1.f, 2.f})) == "tensor([1., 2.])");
  CHECK(to_string(tensor({1.5f, 2.f})) == "tensor([1.5000, 2.0000])");
  CHECK(to_string(tensor({{1, 2}, {3, 4}})) == "tensor([[1, 2],\n        [3, 4]])");
  CHECK(to_string(tensor({1.0, 2.0})) == "tensor([1., 2.], dtype=f64)");
  CHECK(to_string(full({}, 3.0)) == "tensor(3.)");
  CHECK(to_string(zeros({0})) == "tensor([])");
  CHECK(to_string(tensor({true, false})) == "tensor([ True, False])");  // padded, as PyTorch prints it
  // Summaries: " ..." is an element of its own in a row, as in PyTorch's text.
  CHECK(to_string(arange(2000)) == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  CHECK(to_string(arange(1001).to(DType::F64)) == "tensor([   0.,    1.,    2.,  ...,  998.,  999., 1000.], dtype=f64)");
  // Notation and width from the nonzero finite values only: whole numbers spanning more than
  // 1000x (or above 1e8) switch to scientific; nan, inf and zeros do not widen the column.
  CHECK(to_string(tensor<float>({1, 1199})) == "tensor([1.0000e+00, 1.1990e+03])");
  CHECK(to_string(tensor<float>({1e8})) == "tensor([100000000.])");
  CHECK(to_string(tensor<float>({1, NAN})) == "tensor([1., nan])");
  CHECK(to_string(tensor<float>({0.f, -0.f})) == "tensor([0., -0.])");
  CHECK(to_string(tensor<float>({0.f, 1e-5f})) == "tensor([0.0000e+00, 1.0000e-05])");
  CHECK(to_string(tensor<float>({INFINITY, 2.5f})) == "tensor([   inf, 2.5000])");
  // Rows wrap at 80 columns, continuing under the row's first element (PyTorch's text,
  // character for character).
  CHECK(to_string(arange(20.0)) ==
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
        "        14., 15., 16., 17., 18., 19.])");
  CHECK(to_string(full({2, 15}, 1.0 / 3).narrow(1, 0, 11)) ==
        "tensor([[0.3333, 0.3333, 0.3333, 0.3333, 0.3333, 0.3333, 0.3333, 0.3333, 0.3333,\n"
        "         0.3333, 0.3333],\n"
        "        [0.3333, 0.3333, 0.3333, 0.3333, 0.3333, 0.3333, 0.3333, 0.3333, 0.3333,\n"
        "         0.3333, 0.3333]])");
  CHECK(to_string(arange(2000.0).view({2, 1000}) / 7) ==
        "tensor([[0.0000e+00, 1.4286e-01, 2.8571e-01,  ..., 1.4243e+02, 1.4257e+02,\n"
        "         1.4271e+02],\n"
        "        [1.4286e+02, 1.4300e+02, 1.4314e+02,  ..., 2.8529e+02, 2.8543e+02,\n"
        "         2.8557e+02]])");
  // Autograd's note, as PyTorch's: a leaf that requires grad, a result in the graph.
  Tensor leaf = tensor<float>({1}).requires_grad_();
  CHECK(to_string(leaf) == "tensor([1.], requires_grad=True)");
  CHECK(to_string(leaf * 2) == "tensor([2.], grad_fn=<MulBackward>)");
  CHECK(to_string((leaf * 2).detach()) == "tensor([2.])");
  {
    NoGradGuard no_grad;
    CHECK(to_string(leaf * 2) == "tensor([2.])");
  }
  CHECK(fmt::format("{}", tensor({1.f})) == "tensor([1.])");
  // Streams print a tensor and its sizes, dtype and device (as libtorch's types do).
  std::ostringstream os;
  Tensor t = zeros({2, 3}, DType::I32);
  os << t << ' ' << t.sizes() << ' ' << t.dtype() << ' ' << t.device();
  CHECK(os.str() == to_string(t) + " [2, 3] i32 cpu");
}

TEST_CASE("reductions and elementwise ops give identical results with 1 and 2 threads") {
  manual_seed(7);
  Tensor x = randn({1 << 20});
  Tensor m = randn({512, 1024});
  set_num_threads(1);
  float s1 = x.sum().item<float>();
  Tensor e1 = x.exp().mul(x), r1 = m.sum(Shape{1}), sm1 = m.softmax(1);
  set_num_threads(2);
  float s2 = x.sum().item<float>();
  Tensor e2 = x.exp().mul(x), r2 = m.sum(Shape{1}), sm2 = m.softmax(1);
  set_num_threads(1);
  CHECK(s1 == s2);  // fixed chunking: bitwise equal
  CHECK(e1.eq(e2).all().item<bool>());
  CHECK(r1.eq(r2).all().item<bool>());
  CHECK(sm1.eq(sm2).all().item<bool>());
  CHECK(std::abs(s1 - x.to(DType::F64).sum().item<double>()) < 1e-2);
  // GEMM on the pool: one product split by columns, and a batch of products one per task.
  // (Blocks of another width may sum in another order inside Eigen, so: close, not equal.)
  Tensor a = randn({256, 300}), b = randn({300, 200}), bb = randn({8, 300, 64});
  set_num_threads(1);
  Tensor p1 = a.matmul(b), q1 = a.matmul(bb);
  set_num_threads(2);
  Tensor p2 = a.matmul(b), q2 = a.matmul(bb);
  set_num_threads(1);
  CHECK((p1 - p2).abs().amax().item<float>() < 1e-3);
  CHECK((q1 - q2).abs().amax().item<float>() < 1e-3);
}

TEST_CASE("integer division by zero is reported on large tensors with several threads") {
  set_num_threads(2);
  Tensor a = ones({1 << 17}, DType::I32);
  Tensor b = ones({1 << 17}, DType::I32);
  b.index_put_({(1 << 17) - 1}, 0);  // the last element: a worker's chunk when split
  CHECK_THROWS_WITH_AS(a.div_floor(b), doctest::Contains("[div_floor]"), Error);
  CHECK_THROWS_AS(a.remainder(b), Error);
  CHECK(a.div_floor(ones({1 << 17}, DType::I32)).sum().item<int64_t>() == (1 << 17));
  set_num_threads(1);
}

TEST_CASE("the pool gives the same results whatever its workers' spin time") {
  manual_seed(21);
  Tensor x = randn({1 << 18}), a = randn({200, 300}), b = randn({300, 100});
  const Tensor s1 = x.exp(), p1 = a.matmul(b);
  CHECK(get_worker_spin_us() == 50);
  set_num_threads(2);
  for (int64_t us : {0, 2000}) {
    set_worker_spin_us(us);
    CHECK(get_worker_spin_us() == us);
    for (int rep = 0; rep < 20; ++rep) {  // with 0, every region wakes a sleeping worker
      CHECK(x.exp().eq(s1).all().item<bool>());
      CHECK(a.matmul(b).sub(p1).abs().amax().item<float>() < 1e-3f);
    }
  }
  set_worker_spin_us(50);
  set_num_threads(1);
  CHECK_THROWS_WITH_AS(set_worker_spin_us(-1), doctest::Contains("[set_worker_spin_us]"), Error);
}

TEST_CASE("the pool measures its hand-off when it is made") {
  set_num_threads(1);
  CHECK(detail::region_overhead_ns() == 0);
  set_num_threads(2);
  // A worker joining a region takes some time, and not seconds (its wait gives up at 50 us).
  CHECK(detail::region_overhead_ns() > 0);
  CHECK(detail::region_overhead_ns() < 1'000'000);
  set_num_threads(1);
  CHECK(detail::region_overhead_ns() == 0);
}

namespace {

/// Runs one parallel region over the indices of `hits` in chunks of `grain`, each chunk
/// counting its indices; returns how many indices were not counted exactly once.
int64_t indices_not_run_once(std::vector<std::atomic<int>>& hits, int64_t grain) {
  for (auto& h : hits) h.store(0, std::memory_order_relaxed);
  detail::parallel_for(static_cast<int64_t>(hits.size()), grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed);
  });
  int64_t wrong = 0;
  for (auto& h : hits) wrong += h.load(std::memory_order_relaxed) != 1;
  return wrong;
}

/// A user executor that runs every task on the calling thread, adding their number to
/// `*tasks` when given.
Executor inline_executor(int concurrency, std::atomic<int64_t>* tasks = nullptr) {
  Executor e;
  e.ctx = tasks;
  e.run = [](void* ctx, void (*task)(void*, int64_t), void* task_ctx, int64_t n) {
    for (int64_t i = 0; i < n; ++i) task(task_ctx, i);
    if (ctx) static_cast<std::atomic<int64_t>*>(ctx)->fetch_add(n);
  };
  e.concurrency = concurrency;
  return e;
}

/// At exit, after every test: installs a user executor and runs a region on it. The list of
/// installed executors must still be alive then (static destructors of the library's own
/// translation units may already have run; under AddressSanitizer a list destroyed with them
/// is a use after free).
struct ExecutorAtExit {
  ~ExecutorAtExit() {
    set_executor(inline_executor(2));
    std::atomic<int64_t> covered{0};
    detail::parallel_for(8, 1, [&](int64_t b, int64_t e) { covered += e - b; });
    set_executor(Executor{});
    if (covered.load() != 8) std::abort();
  }
} executor_at_exit;

/// Another thread running 16-chunk regions back to back until stop(), counting chunks not run
/// exactly once.
struct RegionsOnAnotherThread {
  std::atomic<bool> stopping{false};
  std::atomic<int64_t> wrong{0}, regions{0};
  std::thread user{[this] {
    std::vector<std::atomic<int>> hits(16);
    while (!stopping.load()) {
      wrong += indices_not_run_once(hits, 1);
      regions.fetch_add(1);
    }
  }};
  void stop() {
    stopping = true;
    user.join();
  }
};

}  // namespace

TEST_CASE("the pool runs every chunk of back-to-back regions exactly once, from several callers") {
  // Regions come faster than workers notice them, so workers join regions that are already
  // finished (and must not touch them), sleep and wake (spin 0), or stay polling (spin 1000);
  // three user threads compete for the pool, the losers running their regions serially.
  for (int threads : {2, 3, 5}) {
    set_num_threads(threads);
    for (int64_t us : {0, 1000}) {
      set_worker_spin_us(us);
      std::atomic<int64_t> wrong{0};
      auto caller = [&](int64_t n) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        for (int rep = 0; rep < 300; ++rep) wrong += indices_not_run_once(hits, 1 + rep % 3);
      };
      std::vector<std::thread> users;
      for (int64_t n : {7, 64, 2, 1000}) users.emplace_back(caller, n);  // 1000: many chunks per claim
      caller(33);
      for (auto& t : users) t.join();
      CHECK(wrong == 0);
    }
  }
  set_worker_spin_us(50);
  set_num_threads(1);
  // A pool shut down before its workers have started must still stop them (this hung once).
  for (int rep = 0; rep < 200; ++rep) {
    set_num_threads(2 + rep % 3);
    set_num_threads(1);
  }
}

TEST_CASE("the pool calls the body once per chunk of the grain") {
  // Threads claim many small chunks at a time, but each chunk is still its own call. (One
  // thread runs the body once over everything.)
  for (int threads : {2, 3}) {
    set_num_threads(threads);
    for (int64_t grain : {1, 7}) {
      const int64_t n = 2000;
      std::vector<std::atomic<int>> calls_at(static_cast<size_t>(n));
      std::atomic<int64_t> bad{0};
      detail::parallel_for(n, grain, [&](int64_t b, int64_t e) {
        bad += b % grain != 0 || e != std::min(n, b + grain);
        calls_at[static_cast<size_t>(b)].fetch_add(1);
      });
      CHECK(bad == 0);
      for (int64_t b = 0; b < n; ++b) CHECK(calls_at[static_cast<size_t>(b)].load() == (b % grain == 0 ? 1 : 0));
    }
  }
  set_num_threads(1);
}

TEST_CASE("the pool can be resized while another thread runs regions on it") {
  RegionsOnAnotherThread other;
  for (int rep = 0; rep < 100; ++rep) set_num_threads(1 + rep % 4);
  while (other.regions.load() < 100) std::this_thread::yield();
  other.stop();
  CHECK(other.wrong == 0);
  // Not from inside a region: the caller's chunk would wait for its own region to end.
  set_num_threads(2);
  const auto caller = std::this_thread::get_id();
  std::atomic<int> refused{0};
  std::atomic<bool> tried{false};
  // The caller usually runs a chunk of the region itself; a fast worker can take them all
  // (this happened under ThreadSanitizer), so regions repeat until the caller has tried.
  for (int attempt = 0; attempt < 1000 && !tried.load(); ++attempt)
    detail::parallel_for(8, 1, [&](int64_t, int64_t) {
      if (std::this_thread::get_id() != caller || tried.exchange(true)) return;
      try {
        set_num_threads(3);
      } catch (const Error& e) {
        refused += std::string(e.what()).find("[set_num_threads]") != std::string::npos;
      }
    });
  REQUIRE(tried.load());
  CHECK(refused == 1);
  CHECK(get_num_threads() == 2);
  set_num_threads(1);
}

TEST_CASE("the pool and a user's executor can be swapped while another thread runs regions") {
  // set_executor used to overwrite the executor that running regions read without a lock (a
  // data race ThreadSanitizer reports); each region now keeps the executor it started with.
  std::atomic<int64_t> tasks{0};
  const Executor counting = inline_executor(3, &tasks);
  set_num_threads(2);
  RegionsOnAnotherThread other;
  // Until the other thread has run 200 regions and some ran on the counting executor: with
  // both cores busy (meson runs two test binaries at once), this thread can be descheduled
  // with the pool's executor installed for all of the other thread's time slice. A broken
  // swap never reaches the executor, and the deadline fails the check below.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int rep = 0; rep < 200 || other.regions.load() < 200 || (tasks.load() == 0 && std::chrono::steady_clock::now() < deadline);
       ++rep) {
    set_executor(rep % 2 ? Executor{} : counting);
    std::this_thread::yield();
  }
  other.stop();
  CHECK(other.wrong == 0);
  CHECK(tasks.load() > 0);  // some regions ran on the executor
  set_executor(Executor{});
  CHECK(get_num_threads() == 2);
  set_num_threads(1);
}

TEST_CASE("a chunk that throws on the calling thread leaves the pool usable, and in parallel") {
  set_num_threads(2);
  const auto caller = std::this_thread::get_id();
  std::atomic<int> ran{0};
  auto throwing = [&](int64_t, int64_t) {
    ran.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    if (std::this_thread::get_id() == caller) throw std::runtime_error("chunk failed");
  };
  // The caller claims chunks from the start, so one of its 64 throws; the workers' chunks
  // finish before the region's frame is gone (the pool waits for them while unwinding).
  CHECK_THROWS_AS(detail::parallel_for(64, 1, throwing), std::runtime_error);
  CHECK(ran.load() >= 1);
  // Afterwards regions still run on two threads: each of two chunks waits (up to a second) to
  // see the other one start, which a serial run never does.
  std::atomic<int> started{0}, met{0};
  detail::parallel_for(2, 1, [&](int64_t, int64_t) {
    started.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (started.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    if (started.load() == 2) met.fetch_add(1);
  });
  CHECK(met.load() == 2);
  set_num_threads(1);
}

namespace {
std::vector<double> values_of(const Tensor& t) {
  Tensor h = t.to(DType::F64).contiguous();
  return std::vector<double>(h.data_ptr<double>(), h.data_ptr<double>() + h.numel());
}
}  // namespace

TEST_CASE("libtorch spellings: one int as a dim list, method forms of the shape ops, dtype names") {
  Tensor x = tensor<float>({{1, -2, 3}, {-4, 5, 6}});
  // One integer where a list of dims (or a shape) is expected, as IntArrayRef allows; a braced
  // list still names dims, and {} still means all of them.
  CHECK(values_of(x.sum(1)) == std::vector<double>{2, 7});
  CHECK(x.mean(-1, true).sizes() == Shape{2, 1});
  CHECK(values_of(x.amax(0)) == std::vector<double>{1, 5, 6});
  CHECK(x.sum({}).item<float>() == 9);
  CHECK(values_of(x.sum({0})) == std::vector<double>{-3, 3, 9});
  CHECK(values_of(x.prod(1)) == std::vector<double>{-6, -120});
  CHECK(values_of(x.gt(0).any(1)) == std::vector<double>{1, 1});
  CHECK(x.sum(1, true, kFloat64).dtype() == DType::F64);
  CHECK(values_of(x.var(1, false)) == values_of(x.var({1}, 0)));
  CHECK(values_of(x.std(1)) == values_of(x.std({1})));
  CHECK(values_of(x.logsumexp(1)) == values_of(x.logsumexp({1})));
  CHECK(values_of(x.norm(1, 1)) == std::vector<double>{6, 15});
  CHECK(x.view(-1).sizes() == Shape{6});
  CHECK(x.t().reshape(-1).sizes() == Shape{6});
  // Sizes as one integer: libtorch's torch::zeros(5), x.repeat(2), x.new_zeros(4).
  CHECK(zeros(3).sizes() == Shape{3});
  CHECK(values_of(zeros(int64_t{2}, kFloat64)) == std::vector<double>{0, 0});
  CHECK(zeros(2, kFloat64).dtype() == DType::F64);
  CHECK(values_of(ones(size_t{2})) == std::vector<double>{1, 1});
  CHECK(values_of(full(3, 2)) == std::vector<double>{2, 2, 2});
  CHECK(empty(4).sizes() == Shape{4});
  CHECK(empty(0).numel() == 0);
  CHECK_ERROR(zeros(-2), "negative dimension -2");
  manual_seed(3);
  Tensor r1 = randn(5);
  manual_seed(3);
  CHECK(values_of(r1) == values_of(randn({5})));
  CHECK(rand(6, kFloat64).sizes() == Shape{6});
  CHECK(rand(6, kFloat64).dtype() == DType::F64);
  manual_seed(4);
  Tensor i1 = randint(2, 9, 50);
  manual_seed(4);
  CHECK(values_of(i1) == values_of(randint(2, 9, {50})));
  CHECK(i1.min().item<int64_t>() >= 2);
  CHECK(randint(7, 4).max().item<int64_t>() < 7);  // randint(high, size)
  CHECK(randint(7, 4).sizes() == Shape{4});
  CHECK(randint(7, 4, kInt32).dtype() == DType::I32);
  // {} as the size is a 0-d draw from [low, high), as libtorch's, with int or int64_t bounds.
  for (int i = 0; i < 20; ++i) {
    const Tensor s = randint(5, 10, {});
    CHECK(s.dim() == 0);
    CHECK(s.item<int64_t>() >= 5);
  }
  CHECK(randint(int64_t{5}, int64_t{10}, {}).dim() == 0);
  const Tensor v = tensor({1.0f, 2.0f});
  CHECK(values_of(v.repeat(2)) == std::vector<double>{1, 2, 1, 2});
  CHECK(values_of(v.tile(2)) == std::vector<double>{1, 2, 1, 2});
  CHECK(values_of(v.index({Slice(0, 1)}).expand(3)) == std::vector<double>{1, 1, 1});
  CHECK(v.new_zeros(4).sizes() == Shape{4});
  CHECK(v.new_ones(2).dtype() == DType::F32);
  CHECK(v.new_empty(3).sizes() == Shape{3});
  CHECK(values_of(v.new_full(2, 7)) == std::vector<double>{7, 7});
  // dtype and device names, options().
  CHECK(zeros({2}, kFloat64).dtype() == DType::F64);
  CHECK(x.to(kLong).dtype() == DType::I64);
  CHECK((kInt == DType::I32 && kByte == DType::U8 && kHalf == DType::F16 && kBFloat16 == DType::BF16));
  CHECK(kCUDA == Device::cuda(0));
  Tensor d = ones({3}, kFloat64);
  CHECK(zeros({4}, d.options()).dtype() == DType::F64);
  CHECK(d.new_zeros({2, 2}).dtype() == DType::F64);
  CHECK(values_of(d.new_full({2}, 7)) == std::vector<double>{7, 7});
  CHECK(x.type_as(d).dtype() == DType::F64);
  CHECK(x.view_as(x.t().contiguous()).sizes() == Shape{3, 2});
  // Method forms, each against its free function.
  const Tensor idx = tensor<int64_t>({2, 0});
  CHECK(values_of(x.index_select(1, idx)) == values_of(index_select(x, 1, idx)));
  CHECK(values_of(x.gather(1, idx.view({1, 2}).expand({2, 2}))) == std::vector<double>{3, 1, 6, -4});
  CHECK(values_of(x.masked_select(x.gt(0))) == std::vector<double>{1, 3, 5, 6});
  CHECK(values_of(x.index({x.gt(0)})) == std::vector<double>{1, 3, 5, 6});
  CHECK(values_of(x.index({tensor<int64_t>({1, 0})})) == std::vector<double>{-4, 5, 6, 1, -2, 3});
  CHECK(x.chunk(2, 1).size() == 2);
  CHECK(x.split(2, 1)[1].sizes() == Shape{2, 1});
  CHECK(x.unbind(0).size() == 2);
  auto [sorted, order] = x.sort(1, true);
  CHECK(values_of(sorted) == std::vector<double>{3, 1, -2, 6, 5, -4});
  CHECK(values_of(order) == std::vector<double>{2, 0, 1, 2, 1, 0});
  CHECK(values_of(x.argsort(1)) == values_of(argsort(x, 1)));
  CHECK(values_of(x.topk(1).first) == std::vector<double>{3, 6});
  CHECK(values_of(x.kthvalue(1, 1).first) == std::vector<double>{-2, -4});
  CHECK(values_of(x.flip(0)) == std::vector<double>{-4, 5, 6, 1, -2, 3});
  CHECK(values_of(x.flip({1})) == std::vector<double>{3, -2, 1, 6, 5, -4});
  CHECK(values_of(x.roll(1, 1)) == std::vector<double>{3, 1, -2, 6, -4, 5});
  CHECK(x.repeat({2, 1}).sizes() == Shape{4, 3});
  CHECK(x.tile({2}).sizes() == Shape{2, 6});
  CHECK(x.repeat_interleave(2, 0).sizes() == Shape{4, 3});
  CHECK(values_of(x.tril()) == std::vector<double>{1, 0, 0, -4, 5, 0});
  CHECK(values_of(x.triu(1)) == std::vector<double>{0, -2, 3, 0, 0, 6});
  CHECK(values_of(x.diag()) == std::vector<double>{1, 5});
  CHECK(x.nonzero().sizes() == Shape{6, 2});
  CHECK(values_of(zeros({3}).scatter(0, tensor<int64_t>({2}), 1.0)) == std::vector<double>{0, 0, 1});
  CHECK(values_of(zeros({3}).scatter_add(0, tensor<int64_t>({1, 1}), tensor<float>({2, 3}))) ==
        std::vector<double>{0, 5, 0});
  CHECK(values_of(zeros({3}).index_add(0, tensor<int64_t>({0}), tensor<float>({4}), 2)) == std::vector<double>{8, 0, 0});
  CHECK(values_of(zeros({3}).index_copy(0, tensor<int64_t>({2}), tensor<float>({4}))) == std::vector<double>{0, 0, 4});
  // In-place forms and optional arguments libtorch has.
  Tensor y = x.clone();
  y.masked_fill_(y.lt(0), 0.0);
  CHECK(values_of(y) == std::vector<double>{1, 0, 3, 0, 5, 6});
  y.add_(x, 2);
  CHECK(values_of(y) == std::vector<double>{3, -4, 9, -8, 15, 18});
  y.sub_(x, 2);
  CHECK(values_of(y) == std::vector<double>{1, 0, 3, 0, 5, 6});
  CHECK(values_of(x.clamp(0)) == std::vector<double>{1, 0, 3, 0, 5, 6});
  CHECK(values_of(tensor<int64_t>({-7, 7}).div(2, "floor")) == std::vector<double>{-4, 3});
  {
    NoGradGuard ng;  // also under ember::, as torch::NoGradGuard
    CHECK(!GradMode::is_enabled());
  }
}

TEST_CASE("tensor() from a std::vector keeps the element type's dtype, as from a braced list") {
  const std::vector<float> f = {1.5f, -2.f};
  const std::vector<int> i = {3, 4, 5};
  CHECK(tensor(f).dtype() == DType::F32);
  CHECK(values_of(tensor(f)) == std::vector<double>{1.5, -2});
  CHECK(tensor(i).dtype() == DType::I64);
  CHECK(tensor(i, kInt32).dtype() == DType::I32);
  CHECK(tensor(std::vector<double>{}).sizes() == Shape{0});
}

TEST_CASE("tensor() of one value is 0-d, with a list's dtype rules") {
  const Tensor d = tensor(2.5);
  CHECK(d.dim() == 0);
  CHECK(d.dtype() == DType::F64);
  CHECK(d.item<double>() == 2.5);
  CHECK(tensor(7).dtype() == DType::I64);
  CHECK(tensor(true).dtype() == DType::Bool);
  CHECK(tensor(uint8_t{200}).item<int64_t>() == 200);
  CHECK(tensor(1.5f, kFloat64).dtype() == DType::F64);
  CHECK(tensor<double>({1}).sizes() == Shape{1});  // a braced list stays a list
  CHECK(tensor(2.f, TensorOptions().requires_grad(true)).requires_grad());
  CHECK_THROWS_AS(tensor(std::numeric_limits<uint64_t>::max()), Error);
}

TEST_CASE("cuda::device_count and cuda::is_available answer without throwing, and agree") {
  const int n = cuda::device_count();
  CHECK(n >= 0);
  CHECK(cuda::is_available() == (n > 0));
#if !(defined(EMBER_WITH_CUDA) && EMBER_WITH_CUDA)
  CHECK(n == 0);  // a build without the CUDA backend has no device to offer
#endif
}

TEST_CASE("factories as libtorch spells them: arange(start, end, options), randint(high, shape)") {
  const Tensor a = arange(2, 5, kFloat64);
  CHECK(a.dtype() == DType::F64);
  CHECK(values_of(a) == std::vector<double>{2, 3, 4});
  CHECK(values_of(arange(0, 6, 2)) == std::vector<double>{0, 2, 4});  // still the step
  manual_seed(7);
  const Tensor r = randint(3, {200});
  CHECK(r.dtype() == DType::I64);
  CHECK(r.min().item<int64_t>() == 0);
  CHECK(r.max().item<int64_t>() == 2);
  CHECK(randint(3, {2}, kInt32).dtype() == DType::I32);
}

TEST_CASE("libtorch spellings: item() as a Scalar, untyped data_ptr(), to(other), to(options), sizes().vec()") {
  const Tensor f = full({}, 2.5, kFloat64);
  const Scalar s = f.item();
  CHECK(s.isFloatingPoint());
  CHECK(s.toDouble() == 2.5);
  CHECK(s.toFloat() == 2.5f);
  CHECK(s.toLong() == 2);
  CHECK(f.item().to<double>() == 2.5);
  const Scalar i = tensor({7}).item();
  CHECK(i.isIntegral(false));
  CHECK(i.toInt() == 7);
  const Scalar b = tensor({true}).item();
  CHECK(!b.isIntegral(false));
  CHECK(b.isIntegral(true));
  CHECK(b.isBoolean());
  CHECK(b.toBool());
  CHECK_THROWS_WITH_AS(zeros({2}).item(), doctest::Contains("[item]"), Error);

  const Tensor x = arange(6, kFloat32).reshape({2, 3});
  CHECK(x.data_ptr() == static_cast<void*>(x.data_ptr<float>()));
  CHECK(x.narrow(1, 1, 2).data_ptr() == static_cast<void*>(x.data_ptr<float>() + 1));

  const Tensor d = x.to(zeros({1}, kFloat64));
  CHECK(d.dtype() == DType::F64);
  CHECK(values_of(d) == std::vector<double>{0, 1, 2, 3, 4, 5});
  CHECK(x.to(TensorOptions().dtype(kInt64)).dtype() == DType::I64);
  CHECK(d.to(TensorOptions(kCPU)).dtype() == DType::F64);  // unset dtype: kept
  CHECK_THROWS_WITH_AS(x.to(TensorOptions().requires_grad(true)), doctest::Contains("requires_grad"), Error);
  CHECK(x.to(x.options()).data_ptr() == x.data_ptr());      // nothing to change: the same tensor

  const std::vector<int64_t> dims = x.sizes().vec();
  CHECK(dims == std::vector<int64_t>{2, 3});
  CHECK(x.strides().vec() == std::vector<int64_t>{3, 1});
}

// A long contiguous sum splits into chunks whose partial sums are kept per thread. Under an
// executor that runs queued tasks while it waits, a second long sum can start on the thread
// whose sum is waiting for its chunks: it must not overwrite the first one's partials.
TEST_CASE("long sums interleaved under a work-stealing executor keep their own partials") {
  manual_seed(30);
  const Tensor a = randn({300000}), b = randn({500000}) + 3.0;
  const double want_a = a.sum().item<float>(), want_b = b.sum().item<float>();
  float got[2] = {0, 0};
  test::HelpingQueue helper;
  set_executor(Executor{&helper, &test::HelpingQueue::run, 2});
  detail::parallel_for(2, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) got[i] = (i == 0 ? a : b).sum().item<float>();
  });
  set_executor(Executor{});
  CHECK(got[0] == want_a);
  CHECK(got[1] == want_b);
}

}  // namespace test_tensor

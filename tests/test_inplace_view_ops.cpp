// Shape changes in place (ops/inplace_view_ops.hpp): squeeze_, unsqueeze_, t_, transpose_,
// as_strided_, resize_. Gradients are PyTorch 1.13's for the same programs.

#include <doctest/doctest.h>
#include <ember/ember.hpp>
#include <ember/io/safetensors.hpp>

#include "error_text.hpp"
#include "support/tensor_values.hpp"

#include <vector>

namespace test_inplace_view_ops {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using namespace ember::test;
using ember_test::error_of;
using ember_test::has;

Tensor values(std::vector<double> v, const Shape& shape) {
  return tensor(v).to(DType::F32).view(shape);
}

TEST_CASE("in-place view ops change the tensor's shape, not its values, for every handle") {
  Tensor x = values({1, 2, 3}, {1, 3, 1});
  Tensor same = x;  // shares the tensor, as a copied libtorch Tensor does
  x.squeeze_();
  CHECK(x.sizes() == Shape{3});
  CHECK(same.sizes() == Shape{3});
  CHECK(vals(x) == F{1, 2, 3});
  x.unsqueeze_(-1);
  CHECK(x.sizes() == Shape{3, 1});
  x.squeeze_(0);  // not of size 1: unchanged, as PyTorch
  CHECK(x.sizes() == Shape{3, 1});
  x.t_();
  CHECK(x.sizes() == Shape{1, 3});
  CHECK(x.strides() == Shape{1, 1});
  CHECK(vals(x.contiguous()) == F{1, 2, 3});

  Tensor m = values({1, 2, 3, 4, 5, 6}, {2, 3});
  m.transpose_(0, 1);
  CHECK(m.sizes() == Shape{3, 2});
  CHECK(vals(m.contiguous()) == F{1, 4, 2, 5, 3, 6});
  m.swapdims_(0, 1);
  CHECK(vals(m.contiguous()) == F{1, 2, 3, 4, 5, 6});
  m.as_strided_({2, 2}, {1, 2}, 1);
  CHECK(vals(m.contiguous()) == F{2, 4, 3, 5});

  Tensor v = arange(6).to(DType::F32).t_();  // 1-d: t_ leaves it as it is
  CHECK(v.sizes() == Shape{6});
}

TEST_CASE("in-place view ops refuse bad dims, naming the in-place op") {
  Tensor x = zeros({2, 3, 4});
  CHECK(has(error_of([&] { x.t_(); }), "[t_]"));
  CHECK(has(error_of([&] { x.as_strided_({2, 2}, {1}); }), "[as_strided_] sizes [2, 2] and strides [1] must have one length"));
  CHECK(has(error_of([&] { x.as_strided_({5, 5}, {5, 1}); }), "[as_strided_] sizes [5, 5], strides [5, 1] at offset 0 reach element 24 of a storage of 24"));
  CHECK(has(error_of([&] { x.as_strided_({2}, {-1}); }), "[as_strided_] sizes [2] and strides [-1] must be >= 0"));
  CHECK(has(error_of([&] { x.as_strided_({2}, {1}, -3); }), "[as_strided_] the storage offset must be >= 0, got -3"));
  CHECK(has(error_of([&] { x.squeeze_(3); }), "[squeeze_]"));
  CHECK(has(error_of([&] { x.unsqueeze_(5); }), "[unsqueeze_]"));
  CHECK(has(error_of([&] { x.transpose_(0, -4); }), "[transpose_]"));
  CHECK(x.sizes() == Shape{2, 3, 4});  // a refused call leaves the tensor as it was
}

TEST_CASE("in-place view ops under autograd: the tensor's gradient goes through the view's backward") {
  SUBCASE("squeeze_ of a non-leaf, with retain_grad following the tensor") {
    Tensor x = values({1, 3}, {2, 1}).requires_grad_();
    Tensor a = x * 2;
    a.retain_grad();
    a.squeeze_();
    CHECK(a.sizes() == Shape{2});
    REQUIRE(a.grad_fn());
    (a * a).sum().backward();
    CHECK(vals(x.grad()) == F{8, 24});
    // PyTorch 1.13 keeps the retained gradient in the old shape ([2, 1]); Ember's is the
    // tensor's shape now.
    CHECK(a.grad().sizes() == Shape{2});
    CHECK(vals(a.grad()) == F{4, 12});
  }
  SUBCASE("t_ of a non-leaf before a matmul") {
    Tensor m = values({1, 2, 3, 4}, {2, 2}).requires_grad_();
    Tensor b = m * 1;
    b.t_();
    b.matmul(values({1, 0, 2, 1}, {2, 2})).pow(2).sum().backward();
    CHECK(vals(m.grad()) == F{14, 20, 34, 48});
  }
  SUBCASE("a view squeezed in place stays a view of its root") {
    Tensor x = values({1, 2, 3, 4, 5, 6}, {2, 3}).requires_grad_();
    Tensor r = x * 1;
    Tensor v = r.narrow(0, 0, 1);
    v.squeeze_(0);
    v.mul_(2);  // through the view: r's first row
    CHECK(vals(r) == F{2, 4, 6, 4, 5, 6});
    r.sum().backward();
    CHECK(vals(x.grad()) == F{2, 2, 2, 1, 1, 1});
  }
  SUBCASE("views made before the root changed shape keep their gradient") {
    Tensor x = values({1, 2, 3, 4}, {4, 1}).requires_grad_();
    Tensor r = x * 3;
    Tensor first = r.select(0, 1);
    r.squeeze_(1);
    r.unsqueeze_(0);  // twice: the view's history still stands
    (first * 5 + r.sum()).sum().backward();
    CHECK(vals(x.grad()) == F{3, 18, 3, 3});
  }
  SUBCASE("a view of a reshaped root follows the root's later writes (PyTorch 1.13's gradients)") {
    Tensor x = values({1, 2, 3}, {1, 3}).requires_grad_();
    Tensor y = values({4, 5, 6}, {3}).requires_grad_();
    Tensor r = x * 1;
    Tensor v = r.select(0, 0);
    r.squeeze_();
    Tensor used = v * 1;  // v's history, checked against the reshaped root: it stands
    r.copy_(y * 1);       // a new history for r, then one more node
    r.mul_(2);
    CHECK(vals(v) == F{8, 10, 12});
    v.sum().backward();
    CHECK(vals(y.grad()) == F{2, 2, 2});
    CHECK((!x.grad().defined() || vals(x.grad()) == F{0, 0, 0}));
  }
  SUBCASE("a root's as_strided_ to fewer elements leaves the views made before usable") {
    Tensor x = values({1, 2, 3, 4}, {4}).requires_grad_();
    Tensor r = x * 1;
    Tensor head = r.narrow(0, 0, 2);
    r.as_strided_({2}, {1}, 2);  // r is now x's last two elements
    CHECK(vals(r) == F{3, 4});
    (head * 2 + r).sum().backward();
    CHECK(vals(x.grad()) == F{2, 2, 1, 1});
  }
  SUBCASE("a gradient retained in the old shape is dropped") {
    Tensor x = values({1, 3}, {2, 1}).requires_grad_();
    Tensor a = x * 2;
    a.retain_grad();
    (a * 1).sum().backward(Tensor(), true);
    CHECK(a.grad().sizes() == Shape{2, 1});
    a.squeeze_();
    CHECK_FALSE(a.grad().defined());
    Tensor b = x.view({1, 2}) * 2;  // a squeeze_ that changes nothing keeps it
    b.retain_grad();
    b.sum().backward();
    b.squeeze_(1);
    CHECK(b.grad().defined());
  }
}

TEST_CASE("in-place view ops refuse what autograd could not follow") {
  Tensor x = zeros({2, 1}).requires_grad_();
  const std::string leaf = error_of([&] { x.squeeze_(); });
  CHECK(has(leaf, "[squeeze_]"));
  CHECK(has(leaf, "leaf tensor that requires grad (shape [2, 1])"));
  CHECK(x.sizes() == Shape{2, 1});
  {
    NoGradGuard ng;
    Tensor p = zeros({2, 1}).requires_grad_();
    p.squeeze_();  // a leaf under no-grad: allowed, as PyTorch (optimisers change leaves there)
    CHECK(p.sizes() == Shape{2});
  }
  Tensor a = x * 2;
  {
    NoGradGuard ng;
    CHECK(has(error_of([&] { a.t_(); }), "under no-grad mode a tensor with a history"));
  }
  // A tensor saved for backward no longer describes what it saved: as PyTorch, the version
  // moves and backward refuses.
  Tensor y = x * 2;
  Tensor c = y * y;
  y.t_();
  CHECK(has(error_of([&] { c.sum().backward(); }), "modified by an in-place operation"));
}

TEST_CASE("resize_ grows the storage in place, keeping its values, and shrinks without copying") {
  Tensor x = arange(6).to(DType::F32);
  Tensor rows = x.view({2, 3});  // shares x's storage
  const void* first = x.data_ptr();
  x.resize_({2, 5});  // 40 bytes: still inside the allocator's block
  CHECK(x.data_ptr() == first);
  CHECK(x.sizes() == Shape{2, 5});
  CHECK(x.is_contiguous());
  CHECK(vals(x.reshape({-1}).narrow(0, 0, 6)) == F{0, 1, 2, 3, 4, 5});
  const int64_t in_use = allocator_stats().bytes_in_use;
  x.resize_({100, 100});  // a new block: the values move, the old block goes back
  CHECK(x.data_ptr() != first);
  CHECK(rows.data_ptr() == x.data_ptr());  // the grown storage is the views' too
  CHECK(allocator_stats().bytes_in_use > in_use);
  CHECK(vals(x.reshape({-1}).narrow(0, 0, 6)) == F{0, 1, 2, 3, 4, 5});
  CHECK(vals(rows) == F{0, 1, 2, 3, 4, 5});
  x.fill_(7);
  CHECK(vals(rows) == F{7, 7, 7, 7, 7, 7});
  const void* before = x.data_ptr();
  x.resize_({3});
  CHECK(x.data_ptr() == before);
  CHECK(vals(x) == F{7, 7, 7});
  x.resize_as_(zeros({1, 2}));
  CHECK(x.sizes() == Shape{1, 2});
  x.resize_({0});
  CHECK(x.numel() == 0);

  Tensor tr = zeros({2, 3}).t();
  tr.resize_({3, 2});  // the same shape: strides kept, as PyTorch's
  CHECK(tr.strides() == Shape{1, 3});
  tr.resize_({2, 3});
  CHECK(tr.strides() == Shape{3, 1});

  Tensor view = arange(10).to(DType::F32).narrow(0, 4, 2);  // offset 4
  view.resize_({800});  // reaches 4 + 800 elements: the storage grows past 10
  CHECK(vals(view.narrow(0, 0, 6)) == F{4, 5, 6, 7, 8, 9});

  // A loaded file's tensors are Ember's memory, not the user's: they may grow.
  const std::vector<uint8_t> bytes = io::save_safetensors_bytes(io::TensorDict{{"w", arange(3).to(DType::F32)}});
  Tensor w = io::load_safetensors_bytes(bytes.data(), bytes.size())["w"];
  w.resize_({1000});
  CHECK(vals(w.narrow(0, 0, 3)) == F{0, 1, 2});
}

TEST_CASE("resize_ refuses what it cannot do") {
  CHECK(has(error_of([] { zeros({2}).requires_grad_().resize_({3}); }), "[resize_] cannot resize a tensor that requires grad"));
  CHECK(has(error_of([] { zeros({2}).resize_({2, -1}); }), "[resize_] negative dimension -1"));
  float buf[4] = {1, 2, 3, 4};
  Tensor user = from_blob(buf, {4});
  user.resize_({2});  // within the user's memory: allowed
  CHECK(vals(user) == F{1, 2});
  CHECK(has(error_of([&] { user.resize_({5}); }), "the tensor's memory is the user's (from_blob), 16 bytes; it cannot grow to 20 bytes"));
  CHECK(user.sizes() == Shape{2});
  Tensor root = zeros({4}).requires_grad_() * 1;
  Tensor part = root.detach().narrow(0, 0, 2);
  Tensor through = root.narrow(0, 0, 2);
  part.resize_({3});  // a view of a tensor without history: allowed
  CHECK(has(error_of([&] { through.resize_({3}); }), "[resize_] cannot resize a tensor that requires grad"));
  Tensor quiet;
  {
    NoGradGuard ng;
    quiet = root.narrow(0, 0, 2);  // no history, but a view of one that requires grad
  }
  CHECK(has(error_of([&] { quiet.resize_({3}); }), "[resize_] cannot resize a view (shape [2]) of a tensor that requires grad (shape [4])"));
  CHECK(quiet.sizes() == Shape{2});
}

TEST_CASE("set_data: other elements, the same autograd identity") {
  Tensor w = zeros({2, 2}).requires_grad_();
  Tensor alias = w;
  (w * 3).sum().backward();
  CHECK(vals(w.grad()) == F{3, 3, 3, 3});
  const Tensor fresh = arange(3).to(DType::F64);
  w.set_data(fresh);
  CHECK(alias.sizes() == Shape{3});  // the same tensor
  CHECK(w.dtype() == DType::F64);
  CHECK(w.data_ptr() == fresh.data_ptr());
  CHECK(w.requires_grad());
  CHECK(w.is_leaf());
  CHECK(vals(w.grad()) == F{3, 3, 3, 3});  // kept, as PyTorch's
  w.zero_grad(true);
  (w * w).sum().backward();
  CHECK(vals(w.grad()) == F{0, 2, 4});
  Tensor v = zeros({4}).narrow(0, 0, 2);
  v.set_data(ones({3}));
  CHECK_FALSE(v.is_view());  // no longer its old root's elements
  // A graph made before (holding the old leaf's accumulator) does not capture the new data's
  // gradients: those take the new shape and dtype.
  Tensor p = zeros({2, 2}).requires_grad_();
  Tensor kept = p * 3;
  p.set_data(arange(3).to(DType::F64));
  (p * p).sum().backward();
  CHECK(p.grad().dtype() == DType::F64);
  CHECK(vals(p.grad()) == F{0, 2, 4});
  CHECK(has(error_of([&] { w.set_data(tensor<int64_t>({1})); }), "[set_data] a tensor that requires grad cannot take i64 data"));
  Tensor h = w * 2;
  CHECK(has(error_of([&] { h.set_data(ones({3})); }), "[set_data] a tensor with a history"));
  CHECK(has(error_of([&] { w.set_data(Tensor()); }), "[set_data] the new data is an undefined tensor"));
}

}  // namespace test_inplace_view_ops

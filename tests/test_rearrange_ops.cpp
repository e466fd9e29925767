// movedim, rot90, roll over several dims, atleast_nd, take_along_dim, repeat_interleave with
// a tensor of repeats, Tensor::unfold, and the in-place index ops (scatter_, index_add_,
// index_fill_, masked_scatter_, ...): values written down from PyTorch 1.13 (tools/gen_golden
// style, by hand), identities, gradchecks in f64, errors.

#include <doctest/doctest.h>
#include <ember/autograd/gradcheck.hpp>
#include <ember/ember.hpp>

#include "error_text.hpp"
#include "support/tensor_values.hpp"

#include <functional>
#include <string>
#include <vector>

namespace test_rearrange_ops {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using namespace ember::test;
using V = TensorList;

namespace {
Tensor idx(const I& v) { return tensor<int64_t>(v); }
}  // namespace


TEST_CASE("movedim, swapaxes, rot90, roll, atleast_nd") {
  const Tensor x = arange(24.0).view({2, 3, 4});
  const Tensor m = movedim(x, {0, 2}, {2, 0});
  CHECK(m.sizes() == Shape{4, 3, 2});
  CHECK(vals(m) == F{0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21, 2, 14, 6, 18, 10, 22, 3, 15, 7, 19, 11, 23});
  CHECK(m.data_ptr() == x.data_ptr());  // a view
  CHECK(vals(x.movedim(-1, 0)) == vals(x.permute({2, 0, 1})));
  CHECK(vals(moveaxis(x, 1, 2)) == vals(x.transpose(1, 2)));
  CHECK(vals(x.swapaxes(0, 2)) == vals(x.transpose(0, 2)));
  CHECK(vals(swapdims(x, 1, -1)) == vals(x.transpose(1, 2)));
  CHECK(movedim(tensor<double>({1.0}).reshape({}), 0, -1).dim() == 0);
  CHECK_ERROR(movedim(x, {0, 0}, {1, 2}), "[movedim]", "more than once");
  CHECK_ERROR(movedim(x, {0, 1}, {1}), "[movedim]", "as many");
  CHECK_ERROR(movedim(x, 3, 0), "[movedim]", "out of range");

  const Tensor mat = arange(6.0).view({2, 3});
  CHECK(vals(rot90(mat)) == F{2, 5, 1, 4, 0, 3});
  CHECK(rot90(mat).sizes() == Shape{3, 2});
  CHECK(vals(mat.rot90(2)) == F{5, 4, 3, 2, 1, 0});
  CHECK(vals(rot90(mat, 3)) == F{3, 0, 4, 1, 5, 2});
  CHECK(vals(rot90(mat, -1)) == vals(rot90(mat, 3)));
  CHECK(vals(rot90(mat, 4)) == vals(mat));
  CHECK(rot90(mat, 0).data_ptr() != mat.data_ptr());  // a copy, as PyTorch
  CHECK(vals(rot90(x, 1, {2, 0})) == F{12, 0, 16, 4, 20, 8, 13, 1, 17, 5, 21, 9, 14, 2, 18, 6, 22, 10, 15, 3, 19, 7, 23, 11});
  CHECK_ERROR(rot90(mat, 1, {0, 0}), "[rot90]", "more than once");
  CHECK_ERROR(rot90(mat, 1, {0, -2}), "[rot90]", "more than once");
  CHECK_ERROR(rot90(arange(3.0)), "[rot90]", "at least 2 dims");
  CHECK_ERROR(rot90(mat, 1, {0}), "[rot90]", "two rotation dims");

  CHECK(vals(roll(mat, {1, -1}, {0, 1})) == F{4, 5, 3, 1, 2, 0});
  CHECK(vals(mat.roll(Shape{2}, Shape{})) == vals(mat.roll(2)));
  CHECK_ERROR(roll(mat, {1, -1}, {0}), "[roll]", "one entry each");
  CHECK_ERROR(roll(mat, {1, 2}, {}), "[roll]", "one shift");

  const Tensor s = full({}, 2.0);
  CHECK(atleast_1d(s).sizes() == Shape{1});
  CHECK(atleast_2d(s).sizes() == Shape{1, 1});
  CHECK(atleast_3d(s).sizes() == Shape{1, 1, 1});
  CHECK(atleast_2d(arange(3.0)).sizes() == Shape{1, 3});
  CHECK(atleast_3d(arange(3.0)).sizes() == Shape{1, 3, 1});
  CHECK(atleast_3d(mat).sizes() == Shape{2, 3, 1});
  CHECK(atleast_1d(mat).sizes() == mat.sizes());
  CHECK(atleast_3d(x).data_ptr() == x.data_ptr());

  check_grads([](const V& v) { return movedim(v[0], {0, 2}, {1, 0}) * arange(24.0).view({4, 2, 3}); },
              {leaf(arange(24.0).view({2, 3, 4}))}, "movedim");
  check_grads([](const V& v) { return rot90(v[0], 1) * arange(6.0).view({3, 2}); }, {leaf(mat)}, "rot90");
  check_grads([](const V& v) { return roll(v[0], {1, 2}, {0, 1}).square(); }, {leaf(mat)}, "roll");
}

TEST_CASE("take_along_dim and repeat_interleave with a tensor of repeats") {
  const Tensor m = arange(6.0).view({2, 3});
  CHECK(vals(take_along_dim(m, idx({2, 0, 1, 1}).view({2, 2}), 1)) == F{2, 0, 4, 4});
  const Tensor x = arange(24.0).view({2, 3, 4});
  const Tensor b = take_along_dim(x, idx({3, 0, 1}).view({1, 3, 1}), 2);  // dim 0 broadcast
  CHECK(b.sizes() == Shape{2, 3, 1});
  CHECK(vals(b) == F{3, 4, 9, 15, 16, 21});
  CHECK(vals(m.take_along_dim(idx({5, 0, 3}))) == F{5, 0, 3});  // flat positions
  // The order statistics users build from argsort: each row's two smallest.
  const Tensor r = tensor<double>({3, 1, 2, 9, 7, 8}).view({2, 3});
  CHECK(vals(take_along_dim(r, r.argsort(1).narrow(1, 0, 2), 1)) == F{1, 2, 7, 8});
  CHECK_ERROR(take_along_dim(m, idx({0, 1}).to(DType::I32).view({2, 1}), 1), "[take_along_dim]", "i64");
  CHECK_ERROR(take_along_dim(m, idx({0, 1}), 1), "[take_along_dim]", "same rank");
  CHECK(vals(take_along_dim(m, idx({0, 1, 0}).view({1, 3}), 0)) == F{0, 4, 2});
  CHECK_ERROR(take_along_dim(m, idx({0, 1, 0}).view({3, 1}), 1), "[take_along_dim]");  // rows: 2 vs 3
  CHECK_ERROR(take_along_dim(m, idx({0, 3}).view({2, 1}), 1), "index 3");  // out of range: gather's error
  CHECK_ERROR(take_along_dim(full({}, 1.0), idx({0}).view({}), 5), "[take_along_dim]", "out of range");
  check_grads([](const V& v) { return take_along_dim(v[0], tensor<int64_t>({2, 0, 1, 1}).view({2, 2}), 1); },
              {leaf(m)}, "take_along_dim");

  CHECK(vals(repeat_interleave(m, idx({2, 0, 1}), 1)) == F{0, 0, 2, 3, 3, 5});
  CHECK(ints(repeat_interleave(idx({1, 0, 3}))) == I{0, 2, 2, 2});
  CHECK(repeat_interleave(idx({1, 2}).to(DType::I32)).dtype() == DType::I32);  // repeats' dtype, as PyTorch
  CHECK_ERROR(repeat_interleave(m, idx({1, 1, 1}).to(DType::U8), 1), "[repeat_interleave]", "i64 or i32");
  CHECK(vals(m.repeat_interleave(idx({2}))) == F{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5});  // flattened, one count
  CHECK(vals(m.repeat_interleave(idx({1, 2}).to(DType::I32), 0, 3)) == F{0, 1, 2, 3, 4, 5, 3, 4, 5});
  CHECK_ERROR(repeat_interleave(m, idx({1, 2}), 1), "[repeat_interleave]", "2 repeats", "size 3");
  CHECK_ERROR(repeat_interleave(m, idx({1, -1, 2}), 1), "[repeat_interleave]", "negative");
  CHECK_ERROR(repeat_interleave(m, idx({1, 1, 2}), 1, 5), "[repeat_interleave]", "output_size 5");
  CHECK_ERROR(repeat_interleave(m, tensor<double>({1.0}), 1), "[repeat_interleave]", "i64 or i32");
  check_grads([](const V& v) { return repeat_interleave(v[0], tensor<int64_t>({2, 0, 3}), 1); }, {leaf(m)},
              "repeat_interleave");
}

TEST_CASE("Tensor::unfold: sliding windows as a view") {
  const Tensor s = arange(10.0);
  const Tensor w = s.unfold(0, 4, 3);
  CHECK(w.sizes() == Shape{3, 4});
  CHECK(vals(w) == F{0, 1, 2, 3, 3, 4, 5, 6, 6, 7, 8, 9});
  CHECK(w.data_ptr() == s.data_ptr());
  const Tensor m = arange(6.0).view({2, 3});
  CHECK(vals(m.unfold(1, 2, 1)) == F{0, 1, 1, 2, 3, 4, 4, 5});
  CHECK(vals(m.t().unfold(0, 2, 1)) == vals(m.unfold(1, 2, 1).transpose(0, 1)));  // strided input
  CHECK(s.unfold(0, 0, 2).sizes() == Shape{6, 0});
  CHECK(full({}, 5.0).unfold(0, 1, 1).sizes() == Shape{1});
  CHECK_ERROR(s.unfold(0, 11, 1), "[unfold]", "size 11", "size 10");
  CHECK_ERROR(s.unfold(0, 3, 0), "[unfold]", "step");
  CHECK_ERROR(s.unfold(1, 3, 1), "[unfold]", "out of range");
  // Overlapping windows share elements: their gradients add up.
  check_grads([](const V& v) { return v[0].unfold(0, 4, 2) * arange(12.0).view({3, 4}); }, {leaf(arange(8.0))},
              "unfold");
  const Tensor x = leaf(arange(8.0));
  x.unfold(0, 3, 1).sum().backward();
  CHECK(vals(x.grad()) == F{1, 2, 3, 3, 3, 3, 2, 1});
}

TEST_CASE("index_fill, masked_scatter, masked_fill with a tensor, and the in-place index ops") {
  const Tensor z = zeros({3, 4});
  CHECK(vals(z.index_fill(1, idx({2, 0, 2}), -1.5)) == F{-1.5, 0, -1.5, 0, -1.5, 0, -1.5, 0, -1.5, 0, -1.5, 0});
  CHECK(vals(z) == F(12, 0.0));  // out of place
  Tensor y = zeros({3, 4});
  y.index_fill_(0, idx({1}).view({}), 2.0);
  CHECK(vals(y.sum(1)) == F{0, 8, 0});
  CHECK(vals(z.index_fill(1, idx({-1, -4}), 1.0).sum(0)) == F{3, 0, 0, 3});  // from the end, as PyTorch
  CHECK_ERROR(z.index_fill(1, idx({0, 4}), 1.0), "[index_fill]", "index 4", "size 4");
  CHECK_ERROR(z.index_fill(1, idx({-5}), 1.0), "[index_fill]", "index -5");
  CHECK_ERROR(z.index_fill(1, idx({0}).view({1, 1}), 1.0), "[index_fill]", "0-d or 1-d");
  CHECK_ERROR(z.index_fill(1, idx({0}), zeros({1})), "[index_fill]", "0-d tensor");
  CHECK_ERROR(z.index_fill(1, idx({0}).to(DType::I32), 1.0), "[index_fill]", "i64");
  // The value's gradient counts a repeated slice once (PyTorch 1.13: 36).
  {
    const Tensor v = full({}, 2.0).requires_grad_(), xx = arange(12.0).view({3, 4}).requires_grad_();
    (xx.index_fill(1, idx({1, 1, 3}), v) * arange(12.0).view({3, 4})).sum().backward();
    CHECK(vals(v.grad()) == F{36});
    CHECK(vals(xx.grad()) == F{0, 0, 2, 0, 4, 0, 6, 0, 8, 0, 10, 0});
  }

  const Tensor mask = tensor<bool>({true, false, true, true});
  CHECK(vals(z.masked_scatter(mask, arange(20.0).to(DType::F32))) == F{0, 0, 1, 2, 3, 0, 4, 5, 6, 0, 7, 8});
  CHECK(zeros({3}).masked_scatter(tensor<bool>({true, false, true}).view({1, 3}), ones({2})).sizes() == Shape{1, 3});
  CHECK_ERROR(z.masked_scatter(mask, arange(3.0).to(DType::F32)), "[masked_scatter]", "3 elements", "9 true");
  CHECK_ERROR(z.masked_scatter(mask, arange(20)), "[masked_scatter]", "one dtype");
  CHECK_ERROR(z.masked_scatter(mask.to(DType::U8), arange(20.0).to(DType::F32)), "[masked_scatter]", "bool");
  Tensor ms = zeros({3});
  CHECK_ERROR(ms.masked_scatter_(tensor<bool>({true, false, true}).view({1, 3}), ones({2})), "[masked_scatter_]");
  CHECK(vals(ms) == F{0, 0, 0});  // refused before writing
  CHECK_ERROR(ms.masked_scatter_(tensor<bool>({true, false, true}).view({1, 3}), ones({2})), "does not broadcast",
              "[1, 3]", "[3]");
  CHECK_ERROR(ms.masked_fill_(tensor<bool>({true, false}).view({2, 1}), tensor({1.0f}).view({})), "[masked_fill_]",
              "does not broadcast", "[2, 1]");
  check_grads(
      [](const V& v) { return v[0].masked_scatter(tensor<bool>({true, false, true, true}), v[1]) * arange(12.0).view({3, 4}); },
      {leaf(arange(12.0).view({3, 4})), leaf(arange(10.0))}, "masked_scatter");

  check_grads([](const V& v) { return v[0].masked_fill(tensor<bool>({true, false, true}), v[1]).square(); },
              {leaf(arange(6.0).view({2, 3})), leaf(full({}, 0.5))}, "masked_fill with a tensor");
  Tensor mf = arange(3.0);
  mf.masked_fill_(tensor<bool>({false, true, false}), full({}, 7.0));
  CHECK(vals(mf) == F{0, 7, 2});
  CHECK_ERROR(mf.masked_fill(tensor<bool>({false, true, false}), ones({1})), "[masked_fill]", "0-d");
  CHECK_ERROR(arange(3, DType::I8).masked_fill(tensor<bool>({false, true, false}), full({}, 300.0)), "[masked_fill]",
              "300");
  CHECK_ERROR(arange(3, DType::I8).index_fill(0, idx({1}), full({}, NAN)), "[index_fill]");
  CHECK_ERROR(mf.masked_fill(tensor<int64_t>({0, 1, 0}), full({}, 1.0)), "[masked_fill]", "bool");

  const Tensor s = tensor<float>({1, 2, 3, 4, 5, 6}).view({3, 2});
  const Tensor sc_idx = idx({2, 0, 1, 2, 0, 1}).view({3, 2});
  CHECK(vals(zeros({3, 3}).scatter_(1, sc_idx, s)) == F{2, 0, 1, 0, 3, 4, 5, 6, 0});
  CHECK(vals(zeros({3, 3}).scatter_(1, sc_idx, 9.0)) == F{9, 0, 9, 0, 9, 9, 9, 9, 0});
  const Tensor rep_idx = idx({2, 2, 1, 1, 0, 1}).view({3, 2});
  CHECK(vals(ones({3, 3}).scatter_add_(1, rep_idx, s)) == F{1, 1, 4, 1, 8, 1, 6, 7, 1});
  CHECK(vals(ones({3, 3}).scatter_reduce_(1, rep_idx, s, "amax", false)) == F{1, 1, 2, 1, 4, 1, 5, 6, 1});
  CHECK(vals(ones({3, 3}).scatter_reduce(1, rep_idx, s, "sum")) == vals(ones({3, 3}).scatter_add(1, rep_idx, s)));
  CHECK(vals(ones({3, 2}).index_add_(0, idx({2, 0, 2}), s, 2)) == F{7, 9, 1, 1, 13, 17});
  CHECK(vals(ones({3, 2}).index_copy_(0, idx({2, 0, 1}), s)) == F{3, 4, 5, 6, 1, 2});
  // In place on a view writes through to its base.
  Tensor base = zeros({2, 3});
  base.select(0, 1).index_fill_(0, idx({0, 2}), 4.0);
  CHECK(vals(base) == F{0, 0, 0, 4, 0, 4});
  // A leaf that needs a gradient is refused, as PyTorch, by the op's name; under NoGradGuard
  // it is written (as optimisers and embedding updates do).
  Tensor lf = zeros({3}).requires_grad_();
  CHECK_ERROR(lf.index_fill_(0, idx({0}), 1.0), "[index_fill_]", "leaf");
  CHECK_ERROR(lf.scatter_add_(0, idx({0}), ones({1})), "[scatter_add_]", "leaf");
  {
    NoGradGuard no_grad;
    lf.index_add_(0, idx({2, 2}), ones({2}));
  }
  CHECK(vals(lf.detach()) == F{0, 0, 2});
  // scatter_reduce_'s amax/prod/mean save their input for backward: the in-place form must not
  // overwrite what they saved (PyTorch Geometric's max aggregation).
  {
    const Tensor src = tensor<double>({1, 5, 2, 4, 3, 0}).requires_grad_();
    Tensor out = zeros({3}, DType::F64) * 1.0;
    out.scatter_reduce_(0, idx({0, 1, 2, 0, 1, 2}), src, "amax", false);
    CHECK(vals(out) == F{4, 5, 2});
    (out * tensor<double>({1, 2, 3})).sum().backward();
    CHECK(vals(src.grad()) == F{0, 2, 3, 1, 0, 0});
  }
  for (const char* reduce : {"amax", "amin", "prod", "mean", "sum"}) {
    CAPTURE(reduce);
    check_grads([reduce](const V& v) {
      Tensor t = v[0] * 1.0;
      t.scatter_reduce_(0, tensor<int64_t>({0, 1, 2, 0, 1, 2}), v[1], reduce, true);
      return t;
    }, {leaf(tensor<double>({0.5, -1, 2})), leaf(tensor<double>({1, 5, 2.5, 4, 3, -0.5}))}, "scatter_reduce_");
  }
  // Recorded in-place: gradients as the out-of-place op's.
  check_grads([](const V& v) {
    Tensor t = v[0] * 1.0;
    t.index_add_(0, tensor<int64_t>({2, 0, 2}), v[1], 0.5);
    return t;
  }, {leaf(ones({3, 2})), leaf(arange(6.0).view({3, 2}))}, "index_add_");
  check_grads([](const V& v) {
    Tensor t = v[0] * 1.0;
    t.scatter_(1, tensor<int64_t>({2, 0, 1, 2, 0, 1}).view({3, 2}), v[1]);
    return t;
  }, {leaf(ones({3, 3})), leaf(arange(6.0).view({3, 2}))}, "scatter_");
}

}  // namespace test_rearrange_ops

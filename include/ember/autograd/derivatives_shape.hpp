#pragma once
/// Derivatives of views and of the ops that move data by index (cat, gather, scatter,
/// index_select/add/copy/put, advanced indexing, masked_select, sort, topk).
/// Included by autograd/derivatives.hpp.

// derivatives.hpp first (it includes this file at its end): its detail::ops_of is used here.
#include <ember/autograd/derivatives.hpp>
#include <ember/autograd/function_node.hpp>
#include <ember/autograd/layer.hpp>
#include <ember/ops/functions.hpp>
#include <ember/ops/shape_ops.hpp>

namespace ember::autograd {

namespace detail {

/// Indices start, start + step, ... (count of them) as an i64 tensor on `device`.
template <class P>
T<P> strided_range(int64_t start, int64_t count, int64_t step, Device device) {
  T<P> r = arange<P>(start, start + count * step, step, TensorOptions(DType::I64));
  return device.is_cpu() ? r : r.to(device);
}

template <class P>
std::vector<T<P>> saved_list(const std::vector<Saved<P>>& s, const Node& n) {
  std::vector<T<P>> out;
  out.reserve(s.size());
  for (const Saved<P>& x : s) out.push_back(x.get(n));
  return out;
}

}  // namespace detail

template <class P>
void Recorder<P>::record(const ops::ViewOp& op, const TensorRef& out, const TensorImpl& xi) {
  using TP = detail::T<P>;
  using K = ops::ViewKind;
  if (!is_floating(out->dtype)) return;
  Shape in = xi.sizes;
  std::shared_ptr<Node> node;
  auto ops = detail::ops_of<P>();
  switch (op.kind) {
    case K::View: case K::Squeeze: case K::Unsqueeze: case K::Alias:
      node = detail::make_node<P>(op.name(), {&xi}, [in](const Node&, detail::Grads<P>& g) -> detail::Grads<P> {
        return {g[0].reshape(in)};
      }, ops);
      break;
    case K::Permute: {
      int64_t n = xi.ndim();
      Shape inv(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) inv[wrap_dim(op.shape[i], n, "permute")] = i;
      node = detail::make_node<P>(op.name(), {&xi}, [inv](const Node&, detail::Grads<P>& g) -> detail::Grads<P> {
        return {g[0].permute(inv)};
      }, ops);
      break;
    }
    case K::Expand:
      node = detail::make_node<P>(op.name(), {&xi}, [in](const Node&, detail::Grads<P>& g) -> detail::Grads<P> {
        return {detail::sum_to<P>(g[0], in)};
      }, ops);
      break;
    case K::Narrow: case K::Select: case K::Slice: {
      int64_t n = xi.ndim();
      int64_t d = wrap_dim(op.dim, n, op.name());
      int64_t size = xi.sizes[d];
      int64_t start = op.start, count = 1, step = 1;
      if (op.kind == K::Select) {
        start = start < 0 ? start + size : start;
      } else if (op.kind == K::Narrow) {
        start = start < 0 ? start + size : start;
        count = op.length;
      } else {
        start = start == Slice::kNone ? 0 : start < 0 ? std::max<int64_t>(start + size, 0) : std::min(start, size);
        count = out->sizes[d];
        step = op.step;
      }
      bool select = op.kind == K::Select;
      const int64_t stop = start + (count - 1) * step + 1;
      node = detail::make_node<P>(op.name(), {&xi}, [in, d, select, start, stop, step, count](const Node&, detail::Grads<P>& g) -> detail::Grads<P> {
        if (!GradMode::is_enabled() && !g[0].requires_grad()) {
          // A plain backward: copy the gradient into its window of zeros (a strided copy,
          // far cheaper than the index_add the recorded form below needs for double backward).
          TP z = zeros<P>(in, TensorOptions(g[0].dtype()).device(g[0].device()));
          if (count > 0) (select ? z.select(d, start) : z.slice(d, start, stop, step)).copy_(g[0]);
          return {z};
        }
        // Recorded (create_graph): index_add is differentiable in the gradient; its index
        // tensor is only built here, not for every recorded view.
        TP gv = select ? g[0].unsqueeze(d) : g[0];
        TP idx = detail::strided_range<P>(start, count, step, gv.device());
        return {index_add(zeros<P>(in, TensorOptions(gv.dtype()).device(gv.device())), d, idx, gv)};
      }, ops);
      break;
    }
    case K::Diagonal: case K::AsStrided: {
      TP pos = detail::view_positions<P>(xi, *out, op.name());
      node = detail::make_node<P>(op.name(), {&xi}, [in, pos](const Node&, detail::Grads<P>& g) -> detail::Grads<P> {
        return {detail::scatter_view_grad<P>(g[0], pos, in)};
      }, ops);
      node->saved_tensors = true;  // pos (numel of the view) is freed after backward, as saved tensors
      break;
    }
  }
  set_history(*out, node, 0);
}

template <class P>
void Recorder<P>::record(const ops::Cat& op, const TensorRef& out, ImplSpan xs) {
  if (!is_floating(out->dtype)) return;
  int64_t d = wrap_dim(op.dim, out->ndim(), "cat");
  std::vector<Shape> shapes;
  for (const TensorImpl* x : xs) shapes.push_back(x->sizes);
  int64_t rank = out->ndim();
  auto f = [shapes, d, rank](const Node&, detail::Grads<P>& g) -> detail::Grads<P> {
    detail::Grads<P> r;
    int64_t off = 0;
    for (const Shape& s : shapes) {
      if (static_cast<int64_t>(s.size()) != rank) {  // a legacy empty 1-d input that cat skipped
        r.push_back(zeros<P>(s, TensorOptions(g[0].dtype()).device(g[0].device())));
        continue;
      }
      r.push_back(g[0].narrow(d, off, s[d]));
      off += s[d];
    }
    return r;
  };
  set_history(*out, detail::make_node<P>("cat", xs, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::IndexSelect& op, const TensorRef& out, const TensorImpl& xi,
                         const TensorImpl& index) {
  using TP = detail::T<P>;
  if (!is_floating(out->dtype)) return;
  detail::Saved<P> idx(index);
  Shape in = xi.sizes;
  int64_t d = xi.ndim() == 0 ? 0 : wrap_dim(op.dim, xi.ndim(), op.name());
  auto f = [idx, in, d](const Node& n, detail::Grads<P>& g) -> detail::Grads<P> {
    // An expanded zero: index_add's copy of its input is then the only pass that zeroes.
    TP z = zeros<P>({}, TensorOptions(g[0].dtype()).device(g[0].device())).expand(in);
    return {index_add(z, d, idx.get(n), g[0]), TP()};
  };
  set_history(*out, detail::make_node<P>(op.name(), {&xi, nullptr}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::Gather& op, const TensorRef& out, const TensorImpl& xi, const TensorImpl& index) {
  using TP = detail::T<P>;
  if (!is_floating(out->dtype)) return;
  detail::Saved<P> idx(index);
  Shape in = xi.sizes;
  int64_t d = xi.ndim() == 0 ? 0 : wrap_dim(op.dim, xi.ndim(), op.name());
  auto f = [idx, in, d](const Node& n, detail::Grads<P>& g) -> detail::Grads<P> {
    // An expanded zero: scatter_add's copy of its input is then the only pass that zeroes.
    TP z = zeros<P>({}, TensorOptions(g[0].dtype()).device(g[0].device())).expand(in);
    return {scatter_add(z, d, idx.get(n), g[0]), TP()};
  };
  set_history(*out, detail::make_node<P>(op.name(), {&xi, nullptr}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::Scatter& op, const TensorRef& out, const TensorImpl& xi, const TensorImpl& index,
                         const TensorImpl& srci) {
  using TP = detail::T<P>;
  using SR = ember::detail::ScatterReduce;
  if (!is_floating(out->dtype)) return;
  detail::Saved<P> idx(index), x, src, y;
  const SR r = op.reduce;
  if (r == SR::Mean || r == SR::Amax || r == SR::Amin || r == SR::Prod) {
    x = detail::Saved<P>(xi), src = detail::Saved<P>(srci), y = detail::Saved<P>(*out, true);
  }
  int64_t d = xi.ndim() == 0 ? 0 : wrap_dim(op.dim, xi.ndim(), op.name());
  bool self = op.include_self;
  auto f = [idx, x, src, y, r, d, self](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP& g = gs[0];
    TP i = idx.get(n);
    switch (r) {
      case SR::None: return {scatter(g, d, i, 0.0), TP(), gather(g, d, i)};
      // Without the input's own values (include_self false), the scattered-to elements are
      // replaced: they take no gradient.
      case SR::Sum: return {self ? g : scatter(g, d, i, 0.0), TP(), gather(g, d, i)};
      case SR::Mean: {
        TP sv = src.get(n);
        TP hits = scatter_add(detail::zeros_like_t<P>(g), d, i, full_like(sv, 1.0));
        TP count = self ? hits + 1.0 : hits.clamp_min(1.0);
        TP gx = where(hits.gt(0.0), self ? g / count : detail::zeros_like_t<P>(g), g);
        return {gx, TP(), gather(g / count, d, i)};
      }
      case SR::Amax: case SR::Amin: {
        // The gradient is shared among the elements equal to the result; a NaN result is
        // the NaN elements' (as max over a dim gives it to the NaN).
        TP xv = x.get(n), sv = src.get(n), yv = y.get(n);
        TP hits = scatter_add(detail::zeros_like_t<P>(g), d, i, full_like(sv, 1.0));
        TP y_at_src = gather(yv, d, i);
        auto is = [](const TP& v, const TP& result) {
          return v.eq(result).logical_or(v.isnan().logical_and(result.isnan())).to(v.dtype());
        };
        TP src_is = is(sv, y_at_src);
        TP self_is = self ? is(xv, yv) : detail::zeros_like_t<P>(g);
        TP ties = scatter_add(self_is, d, i, src_is);
        TP share = g / ties.clamp_min(1.0);
        TP gx = where(hits.gt(0.0), share * self_is, g);
        return {gx, TP(), gather(share, d, i) * src_is};
      }
      case SR::Prod: {
        // d y / d v is the product of the others in v's group: y / v where v is not zero;
        // for a zero v, the group's product with v taken as 1 (0 where another zero remains),
        // as PyTorch's.
        TP xv = x.get(n), sv = src.get(n), yv = y.get(n);
        TP hits = scatter_add(detail::zeros_like_t<P>(g), d, i, full_like(sv, 1.0));
        TP gx = detail::zeros_like_t<P>(g);
        if (self) {
          TP x_zero = xv.eq(0.0), x1 = xv.masked_fill(x_zero, 1.0);
          TP others = scatter_reduce(x1, d, i, sv, "prod", true);  // the product without x's own zero
          gx = where(x_zero, g * others, g * yv / x1);
        }
        gx = where(hits.gt(0.0), gx, g);
        TP s_zero = sv.eq(0.0), s1 = sv.masked_fill(s_zero, 1.0);
        TP zeros_in_group = scatter_add(detail::zeros_like_t<P>(g), d, i, s_zero.to(g.dtype()));
        TP without_zeros = scatter_reduce(xv, d, i, s1, "prod", self);
        // With another zero in the group the product of the others is 0, or NaN where the
        // rest holds an infinity (inf * 0).
        TP gw = gather(g * without_zeros, d, i);
        TP g_zero = where(gather(zeros_in_group, d, i).gt(1.0), where(gw.isfinite(), 0.0, gw * 0.0), gw);
        return {gx, TP(), where(s_zero, g_zero, gather(g * yv, d, i) / s1)};
      }
    }
    return {};
  };
  set_history(*out, detail::make_node<P>(op.name(), {&xi, nullptr, &srci}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::IndexAdd& op, const TensorRef& out, const TensorImpl& xi, const TensorImpl& index,
                         const TensorImpl& srci) {
  using TP = detail::T<P>;
  if (!is_floating(out->dtype)) return;
  detail::Saved<P> idx(index);
  int64_t d = xi.ndim() == 0 ? 0 : wrap_dim(op.dim, xi.ndim(), op.name());
  double alpha = op.alpha;
  bool copy = op.copy;
  Shape ss = srci.sizes;
  auto f = [idx, d, alpha, copy, ss](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP& g = gs[0];
    TP i = idx.get(n);
    TP gsrc = index_select(g, d, i);
    if (ss.empty() && gsrc.dim() > 0) gsrc = gsrc.reshape(ss);
    if (copy) {
      TP z = zeros<P>(ss, TensorOptions(g.dtype()).device(g.device()));
      return {index_copy(g, d, i, z), TP(), gsrc};
    }
    return {g, TP(), alpha == 1.0 ? gsrc : gsrc * alpha};
  };
  set_history(*out, detail::make_node<P>(op.name(), {&xi, nullptr, &srci}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::MaskedSelect&, const TensorRef& out, const TensorImpl& xi, const TensorImpl& mask) {
  using TP = detail::T<P>;
  if (!is_floating(out->dtype)) return;
  detail::Saved<P> m(mask);
  Shape in = xi.sizes, full = ops::broadcast_shapes(xi.sizes, mask.sizes, "masked_select");
  auto f = [m, in, full](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP& g = gs[0];
    TP z = zeros<P>(full, TensorOptions(g.dtype()).device(g.device()));
    TP put = index_put(z, std::vector<TP>{m.get(n).expand(full)}, g, false);
    return {detail::sum_to<P>(put, in), TP()};
  };
  set_history(*out, detail::make_node<P>("masked_select", {&xi, nullptr}, std::move(f), detail::ops_of<P>()), 0);
}

namespace detail {
/// Sort and topk: the values' gradient goes back to where each value came from.
template <class P>
void record_selection(const char* name, const RefPair& out, const TensorImpl& xi, int64_t dim) {
  using TP = T<P>;
  if (!is_floating(out.first->dtype)) return;
  Saved<P> idx(*out.second);
  Shape in = xi.sizes;
  int64_t d = xi.ndim() == 0 ? 0 : wrap_dim(dim, xi.ndim(), name);
  auto f = [idx, in, d](const Node& n, Grads<P>& gs) -> Grads<P> {
    const TP& g = gs[0];
    if (in.empty()) return {g};
    TP z = zeros<P>(in, TensorOptions(g.dtype()).device(g.device()));
    return {scatter(z, d, idx.get(n), g)};
  };
  set_history(*out.first, make_node<P>(name, {&xi}, std::move(f), ops_of<P>()), 0);
}
}  // namespace detail

template <class P>
void Recorder<P>::record(const ops::Sort& op, const RefPair& out, const TensorImpl& xi) {
  detail::record_selection<P>("sort", out, xi, op.dim);
}

template <class P>
void Recorder<P>::record(const ops::Topk& op, const RefPair& out, const TensorImpl& xi) {
  detail::record_selection<P>("topk", out, xi, op.dim);
}

template <class P>
void Recorder<P>::record(const ops::IndexTensor&, const TensorRef& out, const TensorImpl& xi, ImplSpan indices) {
  using TP = detail::T<P>;
  if (!is_floating(out->dtype)) return;
  std::vector<detail::Saved<P>> idx;
  for (const TensorImpl* t : indices) idx.emplace_back(*t);
  Shape in = xi.sizes;
  auto f = [idx, in](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP& g = gs[0];
    TP z = zeros<P>(in, TensorOptions(g.dtype()).device(g.device()));
    return {index_put(z, detail::saved_list<P>(idx, n), g, true)};
  };
  set_history(*out, detail::make_node<P>("index", {&xi}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::IndexPut& op, const TensorRef& out, const TensorImpl& xi, ImplSpan indices,
                         const TensorImpl& values) {
  using TP = detail::T<P>;
  if (!is_floating(out->dtype)) return;
  std::vector<detail::Saved<P>> idx;
  for (const TensorImpl* t : indices) idx.emplace_back(*t);
  Shape vs = values.sizes;
  bool acc = op.accumulate;
  auto f = [idx, vs, acc](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP& g = gs[0];
    std::vector<TP> ix = detail::saved_list<P>(idx, n);
    TP gx;
    if (n.needs_input_grad(0)) {
      gx = acc ? g : index_put(g, ix, zeros<P>({}, TensorOptions(g.dtype()).device(g.device())), false);
    }
    TP gv;
    if (n.needs_input_grad(1)) gv = detail::sum_to<P>(index(g, ix), vs);
    return {gx, gv};
  };
  set_history(*out, detail::make_node<P>("index_put", {&xi, &values}, std::move(f), detail::ops_of<P>()), 0);
}

// im2col and col2im are each other's adjoint.
template <class P>
void Recorder<P>::record(const ops::Im2Col& op, const TensorRef& out, const TensorImpl& xi) {
  using TP = detail::T<P>;
  if (!is_floating(out->dtype)) return;
  ops::ConvGeometry g = op.g;
  g.pad_value = 0.0;  // the gradient never flows into padding
  std::array<int64_t, 3> spatial{1, 1, 1};
  for (int d = 0; d < g.nd; ++d) spatial[d] = xi.sizes[2 + d];
  auto f = [g, spatial](const Node&, detail::Grads<P>& gs) -> detail::Grads<P> {
    return {TP::wrap(dispatch<P>(ops::Col2Im{g, spatial}, gs[0].impl()))};
  };
  set_history(*out, detail::make_node<P>("im2col", {&xi}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::Col2Im& op, const TensorRef& out, const TensorImpl& ci) {
  using TP = detail::T<P>;
  if (!is_floating(out->dtype)) return;
  ops::ConvGeometry g = op.g;
  g.pad_value = 0.0;
  auto f = [g](const Node&, detail::Grads<P>& gs) -> detail::Grads<P> {
    return {TP::wrap(dispatch<P>(ops::Im2Col{g}, gs[0].impl()))};
  };
  set_history(*out, detail::make_node<P>("col2im", {&ci}, std::move(f), detail::ops_of<P>()), 0);
}

// Winograd's input and output transforms are linear: each one's derivative is its adjoint,
// and the adjoint's derivative the transform again.
namespace detail {
template <class P, class Adjoint>
void record_linear(const char* name, const Adjoint& adjoint, const TensorRef& out, const TensorImpl& in) {
  using TP = T<P>;
  if (!is_floating(out->dtype)) return;
  auto f = [adjoint](const Node&, Grads<P>& gs) -> Grads<P> {
    return {TP::wrap(dispatch<P>(adjoint, gs[0].impl()))};
  };
  set_history(*out, make_node<P>(name, {&in}, std::move(f), ops_of<P>()), 0);
}
}  // namespace detail

template <class P>
void Recorder<P>::record(const ops::WinogradInput& op, const TensorRef& out, const TensorImpl& x) {
  detail::record_linear<P>(op.name(), ops::WinogradInputAdjoint{op.t}, out, x);
}
template <class P>
void Recorder<P>::record(const ops::WinogradInputAdjoint& op, const TensorRef& out, const TensorImpl& v) {
  detail::record_linear<P>(op.name(), ops::WinogradInput{op.t}, out, v);
}
template <class P>
void Recorder<P>::record(const ops::WinogradOutput& op, const TensorRef& out, const TensorImpl& m) {
  detail::record_linear<P>(op.name(), ops::WinogradOutputAdjoint{op.t}, out, m);
}
template <class P>
void Recorder<P>::record(const ops::WinogradOutputAdjoint& op, const TensorRef& out, const TensorImpl& y) {
  detail::record_linear<P>(op.name(), ops::WinogradOutput{op.t}, out, y);
}

// The fused Winograd convolution: a plain backward runs the fused backward kernel; a recorded
// one (create_graph) the same products through the transforms above, which are differentiable.
template <class P>
void Recorder<P>::record(const ops::WinogradConv& op, const TensorRef& out, const TensorImpl& xi,
                         const TensorImpl& ui) {
  using TP = detail::T<P>;
  if (!is_floating(out->dtype)) return;
  detail::Saved<P> x(xi), u(ui);
  const ops::WinogradTiles t = op.t;
  auto f = [=](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP& dy = gs[0];
    const bool nx = n.needs_input_grad(0), nu = n.needs_input_grad(1);
    TP xv = x.get(n), uv = u.get(n);
    if (!GradMode::is_enabled() && !dy.requires_grad()) {
      ops::WinogradConvGrads g = dispatch<P>(ops::WinogradConvBackward{t, nx, nu}, dy.impl(), xv.impl(), uv.impl());
      return {g.dx ? TP::wrap(std::move(g.dx)) : TP(), g.du ? TP::wrap(std::move(g.du)) : TP()};
    }
    TP dm = TP::wrap(dispatch<P>(ops::WinogradOutputAdjoint{t}, dy.impl()));
    TP dx, du;
    if (nx) dx = TP::wrap(dispatch<P>(ops::WinogradInputAdjoint{t}, uv.mT().matmul(dm).impl()));
    if (nu) du = dm.matmul(TP::wrap(dispatch<P>(ops::WinogradInput{t}, xv.impl())).mT());
    return {dx, du};
  };
  set_history(*out, detail::make_node<P>(op.name(), {&xi, &ui}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::WinogradConvBackward& op, const ops::WinogradConvGrads&, const TensorImpl&,
                         const TensorImpl&, const TensorImpl&) {
  // Only the plain backward above calls it, with grad mode off.
  EMBER_FAIL("[{}] is not differentiable: differentiate winograd_conv instead", op.name());
}

// Direct convolution: a plain backward runs the fused kernel; a recorded one (create_graph)
// the same gradients through im2col/col2im and matrix products, which are differentiable.
template <class P>
void Recorder<P>::record(const ops::DirectConv& op, const TensorRef& out, const TensorImpl& xi, const TensorImpl& wi,
                         const TensorImpl* bi) {
  using TP = detail::T<P>;
  if (!is_floating(out->dtype)) return;
  detail::Saved<P> x(xi), w(wi);
  const ops::DirectConvGeometry g = op.g;
  const bool has_b = bi != nullptr;
  auto f = [=](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP& dy = gs[0];
    const bool nx = n.needs_input_grad(0), nw = n.needs_input_grad(1), nb = has_b && n.needs_input_grad(2);
    TP xv = x.get(n), wv = w.get(n);
    if (!GradMode::is_enabled() && !dy.requires_grad()) {
      ops::DirectConvGrads r = dispatch<P>(ops::DirectConvBackward{g, nx, nw, nb}, dy.impl(), xv.impl(), wv.impl());
      auto wrap = [](TensorRef& t) { return t ? TP::wrap(std::move(t)) : TP(); };
      return {wrap(r.dx), wrap(r.dw), wrap(r.db)};
    }
    ops::ConvGeometry cg;
    cg.kernel = {g.kh, g.kw, 1}, cg.pad_before = {g.pad_top, g.pad_left, 0};
    cg.pad_after = {g.padded_h() - g.h - g.pad_top, g.padded_w() - g.w - g.pad_left, 0};
    cg.batch_in_columns = true;  // columns (C * taps, N, L)
    const int64_t k = g.taps(), l = g.oh * g.ow;
    TP dy2 = dy.permute({1, 0, 2, 3}).reshape({g.o, g.n * l});
    TP dx, dw, db;
    if (nw) {
      TP cols = TP::wrap(dispatch<P>(ops::Im2Col{cg}, xv.impl())).reshape({k, g.n * l});
      dw = dy2.matmul(cols.t()).reshape({g.o, g.c, g.kh, g.kw});
    }
    if (nx) {
      TP dcols = wv.reshape({g.o, k}).t().matmul(dy2).reshape({k, g.n, l});
      dx = TP::wrap(dispatch<P>(ops::Col2Im{cg, {g.h, g.w, 1}}, dcols.impl()));
    }
    if (nb) db = dy.sum(Shape{0, 2, 3});
    return {dx, dw, db};
  };
  set_history(*out, detail::make_node<P>(op.name(), {&xi, &wi, bi}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::DirectConvBackward& op, const ops::DirectConvGrads&, const TensorImpl&,
                         const TensorImpl&, const TensorImpl&) {
  EMBER_FAIL("[{}] is not differentiable: differentiate direct_conv instead", op.name());
}

// Depthwise convolution: a plain backward runs the fused kernel; a recorded one (create_graph)
// the same gradients through im2col/col2im, a batched product and a broadcast product, which
// are differentiable.
template <class P>
void Recorder<P>::record(const ops::DepthwiseConv& op, const TensorRef& out, const TensorImpl& xi,
                         const TensorImpl& wi, const TensorImpl* bi) {
  using TP = detail::T<P>;
  if (!is_floating(out->dtype)) return;
  detail::Saved<P> x(xi), w(wi);
  ops::ConvGeometry g = op.g;
  g.batch_in_columns = false;  // columns (N, C * taps, L)
  const bool has_b = bi != nullptr;
  const Shape xs = xi.sizes;
  auto f = [=](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP& dy = gs[0];
    const bool nx = n.needs_input_grad(0), nw = n.needs_input_grad(1), nb = has_b && n.needs_input_grad(2);
    TP xv = x.get(n), wv = w.get(n);
    if (!GradMode::is_enabled() && !dy.requires_grad()) {
      ops::DepthwiseConvGrads r =
          dispatch<P>(ops::DepthwiseConvBackward{g, nx, nw, nb}, dy.impl(), xv.impl(), wv.impl());
      auto wrap = [](TensorRef& t) { return t ? TP::wrap(std::move(t)) : TP(); };
      return {wrap(r.dx), wrap(r.dw), wrap(r.db)};
    }
    const int64_t batch = xs[0], c = xs[1], taps = g.kernel[0] * g.kernel[1], l = dy.size(2) * dy.size(3);
    TP dy4 = dy.reshape({batch, c, 1, l});
    TP dx, dw, db;
    if (nw) {
      TP cols = TP::wrap(dispatch<P>(ops::Im2Col{g}, xv.impl())).reshape({batch, c, taps, l});
      dw = dy4.matmul(cols.transpose(2, 3)).sum(Shape{0}).reshape({c, 1, g.kernel[0], g.kernel[1]});
    }
    if (nx) {
      TP dcols = (wv.reshape({1, c, taps, 1}) * dy4).reshape({batch, c * taps, l});
      dx = TP::wrap(dispatch<P>(ops::Col2Im{g, {xs[2], xs[3], 1}}, dcols.impl()));
    }
    if (nb) db = dy.sum(Shape{0, 2, 3});
    return {dx, dw, db};
  };
  set_history(*out, detail::make_node<P>(op.name(), {&xi, &wi, bi}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::DepthwiseConvBackward& op, const ops::DepthwiseConvGrads&, const TensorImpl&,
                         const TensorImpl&, const TensorImpl&) {
  EMBER_FAIL("[{}] is not differentiable: differentiate depthwise_conv instead", op.name());
}

// Max pooling routes each gradient to the element its window chose (a scatter-add through the
// indices, done by its own kernel); that routing is linear in the gradient, and its
// derivative gathers through the same indices.
template <class P>
void Recorder<P>::record(const ops::MaxPool& op, const RefPair& out, const TensorImpl& xi) {
  using TP = detail::T<P>;
  if (!is_floating(out.first->dtype)) return;
  detail::Saved<P> idx(*out.second);
  ops::MaxPoolBackward back{op.g.nd, {1, 1, 1}};
  for (int d = 0; d < op.g.nd; ++d) back.spatial[d] = xi.sizes[2 + d];
  auto f = [idx, back](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    return {TP::wrap(dispatch<P>(back, gs[0].impl(), idx.get(n).impl()))};
  };
  set_history(*out.first, detail::make_node<P>("max_pool", {&xi}, std::move(f), detail::ops_of<P>()), 0);
}

template <class P>
void Recorder<P>::record(const ops::MaxPoolBackward&, const TensorRef& out, const TensorImpl& gi,
                         const TensorImpl& indices) {
  using TP = detail::T<P>;
  if (!is_floating(out->dtype)) return;
  detail::Saved<P> idx(indices);
  Shape gs_shape = gi.sizes;
  auto f = [idx, gs_shape](const Node& n, detail::Grads<P>& gs) -> detail::Grads<P> {
    const TP& i = idx.get(n);
    return {gather(gs[0].flatten(2), 2, i.flatten(2)).reshape(gs_shape), TP()};
  };
  set_history(*out, detail::make_node<P>("max_pool_backward", {&gi, nullptr}, std::move(f), detail::ops_of<P>()), 0);
}

}  // namespace ember::autograd

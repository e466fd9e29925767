#pragma once
/// Op descriptors: the value that travels down a policy's layer chain. Each names its op,
/// carries its parameters, and `run<Backends>(inputs...)` checks the inputs, allocates the
/// output (src/ops/, compiled once) and calls the backend kernel through the backend switch.
/// Layers see the descriptor and the input TensorImpls; see docs/design.md.

#include <ember/core/tensor_impl.hpp>
#include <ember/dispatch/kernels.hpp>
#include <ember/dispatch/policy.hpp>
#include <ember/ops/op_kinds.hpp>

#include <initializer_list>
#include <limits>
#include <span>
#include <utility>

namespace ember::ops {

using detail::Ref;
using detail::TensorImpl;
using TensorRef = Ref<TensorImpl>;

/// Inputs cast to the compute dtype and an allocated output (or the in-place target).
/// Inputs are borrowed (the caller holds them for the whole call); only casts and broadcast
/// views made on the way are owned here. No reference-count traffic on the common path.
struct Prepared {
  /// Where the kernel writes: an in-place target itself (borrowed, as the inputs: taking a
  /// reference was two of the five atomic read-modify-writes of a 4-element a.add_(b)), or a
  /// new tensor held by out_owned.
  TensorImpl* out = nullptr;
  TensorRef out_owned;
  const TensorImpl* in[3] = {};    ///< the inputs as the kernel sees them
  TensorRef owned[3];              ///< keeps casts and broadcast views of in[i] alive
  int n_in = 0;
  DType want[3] = {DType::F32, DType::F32, DType::F32};  ///< input i is cast to want[i] first
  TensorImpl* target = nullptr;    ///< in-place target (null: out is the result)
  bool cast_back = false;          ///< out is a temporary to copy into target afterwards
  bool same_shape = false;         ///< every input already has out's shape (skip broadcasting)
  TensorRef result_holder;         ///< a new result that target points to (out: a temporary)

  /// What the op returns: the new tensor, or the in-place target.
  TensorRef take_result() {
    if (result_holder) return std::move(result_holder);
    return target ? Ref<TensorImpl>::share(target) : std::move(out_owned);
  }
};

/// Broadcasts the (already cast) inputs to out's shape.
void broadcast_inputs(Prepared& p, const char* op);
/// The checks of a three-operand op composed of others (clamp, lerp), so that an error names
/// it, not the step that would fail: one device (wrapped numbers aside), shapes that broadcast.
void check_operands(const char* op, const TensorImpl& a, const TensorImpl& b, const TensorImpl& c);
/// PyTorch's result_type over any number of operands (dimensioned tensors outrank 0-d
/// tensors, which outrank wrapped numbers; a lower rank only raises the category).
DType result_type(std::span<const TensorImpl* const> operands);
inline DType result_type(std::initializer_list<const TensorImpl*> operands) {
  return result_type(std::span<const TensorImpl* const>(operands.begin(), operands.size()));
}
/// Whether input x (before broadcasting) runs across out's rows: its innermost dim, out's
/// innermost too, steps by neither 0 nor 1 while another dim of 8+ elements is contiguous
/// (x.t() + y), and it is large enough that reading it one element per cache line costs more
/// than a tiled copy of it.
bool reads_transposed(const TensorImpl& x, const TensorImpl& out);
/// Whether input x overlaps out's memory without being out itself (x.add_(x.t()),
/// x[1:].add_(x[:-1])): an in-place loop would read elements it has already written.
bool aliases_output(const TensorImpl& x, const TensorImpl& out);

/// Casts inputs to p.want with backend B's copy kernel, then broadcasts them. A transposed
/// input is copied first (the copy kernel walks it in tiles; the elementwise loop would read
/// it one element per line): x.t() + y at 1024^2 took 5 ms, a copy and a contiguous add ~1.5.
/// So is an input that overlaps an in-place target other than as the target itself, so that
/// every read sees the old values (PyTorch refuses such calls; here they are well defined).
template <class B>
void finalize_inputs(Prepared& p, const char* op) {
  // Before broadcasting: a copy has the input's own size, not the output's. A cast's copy is
  // a fresh contiguous tensor, so it serves the other two reasons as well.
  for (int i = 0; i < p.n_in; ++i) {
    if (p.in[i]->dtype != p.want[i] || (!p.in[i]->contiguous && reads_transposed(*p.in[i], *p.out)) ||
        (p.target && aliases_output(*p.in[i], *p.out))) {
      TensorRef c = detail::make_tensor(p.in[i]->sizes, p.want[i], p.in[i]->device(), op);
      detail::Kernels<B>::copy(*c, *p.in[i]);
      p.in[i] = c.get();
      p.owned[i] = std::move(c);
    }
  }
  broadcast_inputs(p, op);
}

// ---- prepare functions (src/ops/*.cpp): checks, shape and dtype rules, allocation ------------
struct Unary;
struct Binary;
Prepared prepare_unary(const Unary& op, const TensorImpl& x, TensorImpl* out);
Prepared prepare_binary(const Binary& op, const TensorImpl& a, const TensorImpl& b, TensorImpl* out);
Prepared prepare_where(const TensorImpl& c, const TensorImpl& a, const TensorImpl& b);
/// Finishes an op whose output had to be computed in another dtype than its target.
void finish_cast_back(Prepared& p, void (*copy)(TensorImpl&, const TensorImpl&));

/// Runs f.template operator()<B>() on the backend of `device` among BL.
template <class BL, class F>
inline void on_backend(Device device, const char* op, F&& f) {
  detail::visit_backend<BL>(device, op, std::forward<F>(f));
}

// ---- elementwise --------------------------------------------------------------------------
struct Unary {
  UnaryOp op;
  UnaryParams p{};
  const char* name() const { return ops::name(op); }

  template <class BL>
  TensorRef run(const TensorImpl& x, TensorImpl* out = nullptr) const {
    Prepared pr = prepare_unary(*this, x, out);
    on_backend<BL>(x.device(), name(), [&]<class B>() {
      finalize_inputs<B>(pr, name());
      detail::Kernels<B>::unary(op, p, *pr.out, *pr.in[0]);
      if (pr.cast_back) finish_cast_back(pr, &detail::Kernels<B>::copy);
    });
    return pr.take_result();
  }
};

struct Binary {
  BinaryOp op;
  const char* name() const { return ops::name(op); }

  template <class BL>
  TensorRef run(const TensorImpl& a, const TensorImpl& b, TensorImpl* out = nullptr) const {
    Prepared pr = prepare_binary(*this, a, b, out);
    on_backend<BL>(a.device(), name(), [&]<class B>() {
      finalize_inputs<B>(pr, name());
      detail::Kernels<B>::binary(op, *pr.out, *pr.in[0], *pr.in[1]);
      if (pr.cast_back) finish_cast_back(pr, &detail::Kernels<B>::copy);
    });
    return pr.take_result();
  }
};

struct Where {
  const char* name() const { return "where"; }
  template <class BL>
  TensorRef run(const TensorImpl& c, const TensorImpl& a, const TensorImpl& b) const {
    Prepared pr = prepare_where(c, a, b);
    on_backend<BL>(a.device(), name(), [&]<class B>() {
      finalize_inputs<B>(pr, name());
      detail::Kernels<B>::where(*pr.out, *pr.in[0], *pr.in[1], *pr.in[2]);
    });
    return pr.take_result();
  }
};


// ---- copies, conversions, fills ---------------------------------------------------------------
/// dst.copy_(src): broadcasts src to dst's shape, converts dtype, crosses devices.
struct CopyInto {
  const char* name() const { return "copy_"; }
  template <class BL>
  void run(TensorImpl& dst, const TensorImpl& src) const;
};
/// A new tensor on `device` with `dtype` holding x's values (contiguous).
struct To {
  DType dtype;
  Device device;
  const char* name() const { return "to"; }
  template <class BL>
  TensorRef run(const TensorImpl& x) const {
    TensorRef out = detail::make_tensor(x.sizes, dtype, device, "to");
    CopyInto{}.run<BL>(*out, x);
    return out;
  }
};

/// A 0-d tensor of dtype t on `device` holding v (the constants of the composed ops below).
template <class BL>
TensorRef filled_scalar(double v, DType t, Device device, const char* op) {
  TensorRef k = detail::make_tensor({}, t, device, op);
  on_backend<BL>(device, op, [&]<class B>() { detail::Kernels<B>::fill(*k, Scalar(v)); });
  return k;
}

/// lerp(start, end, weight) with a tensor weight: start + weight (end - start) where |weight|
/// < 0.5, else end - (end - start)(1 - weight), as PyTorch (exact at both ends). One op to
/// autograd, with PyTorch's gradients (g (1 - weight), g weight, g (end - start)); through the
/// where of its two forms, the unselected one's inf * 0 gave NaN gradients.
struct Lerp {
  const char* name() const { return "lerp"; }
  template <class BL>
  TensorRef run(const TensorImpl& start, const TensorImpl& end, const TensorImpl& weight) const {
    check_operands(name(), start, end, weight);
    auto constant = [&](double v) { return filled_scalar<BL>(v, weight.dtype, weight.device(), name()); };
    TensorRef diff = Binary{BinaryOp::Sub}.run<BL>(end, start);
    TensorRef low = Binary{BinaryOp::Add}.run<BL>(start, *Binary{BinaryOp::Mul}.run<BL>(weight, *diff));
    TensorRef rest = Binary{BinaryOp::Sub}.run<BL>(*constant(1.0), weight);
    TensorRef high = Binary{BinaryOp::Sub}.run<BL>(end, *Binary{BinaryOp::Mul}.run<BL>(*diff, *rest));
    TensorRef near = Binary{BinaryOp::Lt}.run<BL>(*Unary{UnaryOp::Abs}.run<BL>(weight), *constant(0.5));
    return Where{}.run<BL>(*near, *low, *high);
  }
};

/// clamp(x, lo, hi) with tensor bounds: min(max(x, lo), hi), NaN where any of the three is
/// NaN. It runs the compare, where and isnan kernels, but is one op to autograd, whose
/// gradient is PyTorch 2's (autograd/derivatives.hpp), not the composition's.
struct ClampTensors {
  const char* name() const { return "clamp"; }
  template <class BL>
  TensorRef run(const TensorImpl& x_in, const TensorImpl& lo_in, const TensorImpl& hi_in) const {
    check_operands(name(), x_in, lo_in, hi_in);
    // One result type over all three (pairwise, a 0-d bound's rank was lost after the first).
    const DType t = result_type({&x_in, &lo_in, &hi_in});
    TensorRef cast[3];
    auto as_t = [&](const TensorImpl& v, int i) -> const TensorImpl& {
      if (v.dtype == t) return v;
      cast[i] = To{t, x_in.device()}.run<BL>(v);
      return *cast[i];
    };
    const TensorImpl &x = as_t(x_in, 0), &lo = as_t(lo_in, 1), &hi = as_t(hi_in, 2);
    TensorRef r = Where{}.run<BL>(*Binary{BinaryOp::Lt}.run<BL>(x, lo), lo, x);
    r = Where{}.run<BL>(*Binary{BinaryOp::Gt}.run<BL>(*r, hi), hi, *r);
    if (!is_floating(r->dtype)) return r;
    TensorRef nan = Unary{UnaryOp::Isnan}.run<BL>(x);
    nan = Binary{BinaryOp::LogicalOr}.run<BL>(*nan, *Unary{UnaryOp::Isnan}.run<BL>(lo));
    nan = Binary{BinaryOp::LogicalOr}.run<BL>(*nan, *Unary{UnaryOp::Isnan}.run<BL>(hi));
    const TensorRef q = filled_scalar<BL>(std::numeric_limits<double>::quiet_NaN(), r->dtype, r->device(), name());
    return Where{}.run<BL>(*nan, *q, *r);
  }
};
struct Fill {
  Scalar value;
  const char* name() const { return "fill_"; }
  template <class BL>
  void run(TensorImpl& dst) const {
    detail::check_scalar_fits(value, dst.dtype, name());
    detail::bump_version(*dst.storage);
    on_backend<BL>(dst.device(), name(), [&]<class B>() { detail::Kernels<B>::fill(dst, value); });
  }
};

void check_copy(const TensorImpl& dst, const TensorImpl& src);
/// Fails naming `op` when dst has a stride-0 dim of size > 1 (an expanded view overlaps itself).
void check_writable(const TensorImpl& dst, const char* op);
TensorRef broadcast_to(const TensorImpl& x, IntArrayRef shape, const char* op);
/// The shape two shapes broadcast to (NumPy rules); fails naming `op` and both shapes.
Shape broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op);

template <class BL>
void CopyInto::run(TensorImpl& dst, const TensorImpl& src) const {
  check_copy(dst, src);
  detail::bump_version(*dst.storage);
  // A copy across devices runs on the non-CPU side (it owns the transfer).
  Device d = dst.device().is_cpu() ? src.device() : dst.device();
  on_backend<BL>(d, name(), [&]<class B>() {
    // A source overlapping the destination in another layout (x.copy_(x.t())) is read whole
    // first: the copy kernel's threads would otherwise read elements already overwritten.
    TensorRef staged;
    if (aliases_output(src, dst)) {
      staged = detail::make_tensor(src.sizes, src.dtype, src.device(), "copy_");
      detail::Kernels<B>::copy(*staged, src);
    }
    TensorRef s = broadcast_to(staged ? *staged : src, dst.sizes, "copy_");
    detail::Kernels<B>::copy(dst, *s);
  });
}

}  // namespace ember::ops

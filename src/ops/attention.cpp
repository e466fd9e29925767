// Scaled dot-product attention on the CPU (see include/ember/ops/attention_op.hpp).
//
// Every operand is seen as (B, H, R, C) through strides, with C contiguous, so the packed
// (L, N, 3E) projection of self-attention and its (L, N, E) result are read and written in
// place. Work is one batch entry per task: its H heads' scores (H x L x S) are produced,
// masked, normalised and consumed while they are in cache, by the per-ISA GEMM (batched over
// the heads) and softmax kernels. Tasks write disjoint parts of every output, and the kernels
// run serially inside a task, so results do not depend on the thread count.
// f32 without a mask first asks Kernels<Cpu>::attention_heads (kernels_cpu/attention_heads.cpp,
// one task per head, the same arithmetic without a GEMM call per product), and runs the
// general path below where that build or shape has no fused kernel.

#include <ember/core/error.hpp>
#include <ember/ops/attention_op.hpp>
#include <ember/runtime/threading.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace ember::ops {
namespace {

using detail::Kernels;

/// One operand as (B, H, R, C): element (b, h, r, c) at offset + b * sb + h * sh + r * sr + c.
struct Heads {
  const TensorImpl* t = nullptr;
  int64_t H = 0, R = 0, C = 0;
  int64_t offset = 0, sb = 0, sh = 0, sr = 0;

  /// Batch entry b as an (H, R, C) view, or transposed as (H, C, R).
  TensorRef entry(int64_t b, bool transposed = false) const {
    const int64_t sizes[3] = {H, transposed ? C : R, transposed ? R : C};
    const int64_t strides[3] = {sh, transposed ? 1 : sr, transposed ? sr : 1};
    return detail::make_view(t->storage, t->dtype, sizes, strides, offset + b * sb);
  }
};

/// A (B, H, R, C) tensor whose last dim is contiguous.
Heads heads_of(const TensorImpl& t) {
  return {&t, t.sizes[1], t.sizes[2], t.sizes[3], t.offset, t.strides[0], t.strides[1], t.strides[2]};
}

/// Part `part` (0 = q, 1 = k, 2 = v) of a packed (L, N, parts * E) tensor as (N, heads, L, E / heads).
Heads packed_part(const TensorImpl& t, int64_t heads, int64_t part, int64_t parts) {
  const int64_t e = t.sizes[2] / parts, d = e / heads;
  return {&t, heads, t.sizes[0], d, t.offset + part * e * t.strides[2], t.strides[1], d, t.strides[0]};
}

/// t itself when it is contiguous or the layout this op reads in place (the packed
/// projection's view: unit last stride, no dim of size > 1 with stride 0, rows at least a row
/// apart), else a contiguous copy kept in `holder`. The GEMM's Eigen path (f64, the baseline
/// build) reads a matrix as rows `stride >= columns` apart, so an expanded gradient (stride 0
/// along L, from a sum's backward) must not reach it as it is.
const TensorImpl& gemm_readable(const TensorImpl& t, TensorRef& holder, const char* op) {
  bool ok = t.contiguous;
  if (!ok && t.ndim() >= 1 && (t.strides[t.ndim() - 1] == 1 || t.sizes[t.ndim() - 1] == 1)) {
    ok = true;
    const int64_t row = t.sizes[t.ndim() - 1];
    for (int64_t d = 0; d + 1 < t.ndim(); ++d)
      if (t.sizes[d] > 1 && t.strides[d] < row) ok = false;
  }
  if (ok) return t;
  holder = detail::make_tensor(t.sizes, t.dtype, t.device(), op);
  Kernels<Cpu>::copy(*holder, t);
  return *holder;
}

/// A (B, H, R, C) f32 operand or output as the fused kernel reads it.
ops::HeadOperand head_operand(const Heads& x) {
  return {static_cast<const float*>(x.t->storage->data) + x.offset, x.sb, x.sh, x.sr};
}
ops::HeadOutput head_output(const Heads& x) {
  if (!x.t) return {};
  return {static_cast<float*>(x.t->storage->data) + x.offset, x.sb, x.sh, x.sr};
}

void check_floating(const TensorImpl& t, const char* what, const char* op) {
  EMBER_CHECK(t.dtype == DType::F32 || t.dtype == DType::F64, "[{}] {} must be float32 or float64, got {}", op, what,
              t.dtype);
  EMBER_CHECK(t.device().is_cpu(), "[{}] {} is on {}; this kernel runs on the CPU", op, what, t.device());
}

/// Runs f(b) for every batch entry: as parallel tasks when there are enough entries,
/// otherwise one after another with the kernels free to use the threads themselves.
template <class F>
void for_each_entry(int64_t batch, F&& f) {
  if (batch >= get_num_threads()) {
    detail::parallel_for(batch, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) f(b);
    });
  } else {
    for (int64_t b = 0; b < batch; ++b) f(b);
  }
}

/// Marks the rows of the contiguous (H, L, S) scores whose every entry is -inf (a query the
/// mask lets attend to nothing) in dead[0, H * L); returns whether there is one. Their
/// softmax is 0/0.
bool mark_dead_rows(const TensorImpl& scores, uint8_t* dead) {
  const int64_t rows = scores.sizes[0] * scores.sizes[1], s = scores.sizes[2];
  std::fill(dead, dead + rows, uint8_t{0});
  bool any = false;
  visit_dtype(scores.dtype, [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      const T* p = static_cast<const T*>(scores.data());
      for (int64_t r = 0; r < rows; ++r) {
        const T* row = p + r * s;
        int64_t j = 0;
        while (j < s && row[j] == -std::numeric_limits<T>::infinity()) ++j;  // stops at once on a live row
        if (j == s) dead[r] = 1, any = true;
      }
    }
  });
  return any;
}

/// Probabilities of the marked rows set to 0 (PyTorch's _safe_softmax): their output is 0 and
/// their backward sees P = 0, so no NaN reaches any gradient.
void zero_dead_rows(TensorImpl& probs, const uint8_t* dead) {
  const int64_t rows = probs.sizes[0] * probs.sizes[1], s = probs.sizes[2];
  visit_dtype(probs.dtype, [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      T* p = static_cast<T*>(probs.data());
      for (int64_t r = 0; r < rows; ++r)
        if (dead[r]) std::fill(p + r * s, p + (r + 1) * s, T(0));
    }
  });
}

/// Sets the scores of keys after their query (j > i) to -inf.
void mask_causal(TensorImpl& scores) {
  const int64_t h = scores.sizes[0], l = scores.sizes[1], s = scores.sizes[2];
  visit_dtype(scores.dtype, [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      T* p = static_cast<T*>(scores.data());
      for (int64_t i = 0; i < h * l; ++i)
        for (int64_t j = i % l + 1; j < s; ++j) p[i * s + j] = -std::numeric_limits<T>::infinity();
    }
  });
}

}  // namespace

AttentionResult attention_cpu(const Attention& op, const TensorImpl& q_in, const TensorImpl* k_in,
                              const TensorImpl* v_in, const TensorImpl* mask_in) {
  const char* name = op.name();
  check_floating(q_in, "query", name);
  TensorRef hq, hk, hv;
  const TensorImpl& q = gemm_readable(q_in, hq, name);
  Heads Q, K, V;
  int64_t batch = 0;
  AttentionResult r;
  if (op.heads > 0) {
    EMBER_CHECK(k_in == nullptr && v_in == nullptr, "[{}] the packed layout takes one (L, N, 3E) input", name);
    EMBER_CHECK(q.ndim() == 3 && q.sizes[2] % 3 == 0 && (q.sizes[2] / 3) % op.heads == 0,
                "[{}] packed projection of shape {} is not (L, N, 3 * E) with E divisible by {} heads", name,
                q.sizes, op.heads);
    batch = q.sizes[1];
    Q = packed_part(q, op.heads, 0, 3), K = packed_part(q, op.heads, 1, 3), V = packed_part(q, op.heads, 2, 3);
    const int64_t out_sizes[3] = {q.sizes[0], q.sizes[1], q.sizes[2] / 3};
    r.out = detail::make_tensor(out_sizes, q.dtype, q.device(), name);
  } else {
    EMBER_CHECK(k_in && v_in, "[{}] needs key and value", name);
    check_floating(*k_in, "key", name);
    check_floating(*v_in, "value", name);
    const TensorImpl& k = gemm_readable(*k_in, hk, name);
    const TensorImpl& v = gemm_readable(*v_in, hv, name);
    EMBER_CHECK(q.ndim() == 4 && k.ndim() == 4 && v.ndim() == 4 && k.dtype == q.dtype && v.dtype == q.dtype &&
                    k.sizes[0] == q.sizes[0] && v.sizes[0] == q.sizes[0] && k.sizes[1] == q.sizes[1] &&
                    v.sizes[1] == q.sizes[1] && k.sizes[3] == q.sizes[3] && v.sizes[2] == k.sizes[2],
                "[{}] q {} ({}), k {} ({}), v {} ({}) are not (B, H, L, D), (B, H, S, D), (B, H, S, Dv) of one "
                "dtype",
                name, q.sizes, q.dtype, k.sizes, k.dtype, v.sizes, v.dtype);
    batch = q.sizes[0];
    Q = heads_of(q), K = heads_of(k), V = heads_of(v);
    const int64_t out_sizes[4] = {q.sizes[0], q.sizes[1], q.sizes[2], v.sizes[3]};
    r.out = detail::make_tensor(out_sizes, q.dtype, q.device(), name);
  }
  const int64_t h = Q.H, l = Q.R, s = K.R;
  const int64_t p_sizes[4] = {batch, h, l, s};
  r.probs = detail::make_tensor(p_sizes, q.dtype, q.device(), name);
  Heads O = op.heads > 0 ? packed_part(*r.out, op.heads, 0, 1) : heads_of(*r.out);
  if (mask_in) {
    EMBER_CHECK(!op.causal, "[{}] takes a mask or causal, not both", name);
    EMBER_CHECK(mask_in->dtype == q.dtype && mask_in->ndim() == 4 && mask_in->sizes == Shape(p_sizes),
                "[{}] additive mask must be {} of shape {}, got {} of shape {}", name, q.dtype, Shape(p_sizes),
                mask_in->dtype, mask_in->sizes);
  }
  if (batch == 0 || h == 0 || l == 0) return r;
  if (op.fused && q.dtype == DType::F32 && !mask_in && s > 0) {
    ops::AttentionHeads a;
    a.batch = batch, a.heads = h, a.l = l, a.s = s, a.d = Q.C, a.dv = V.C;
    a.scale = static_cast<float>(op.scale), a.causal = op.causal, a.probs = r.probs.get();
    a.q = head_operand(Q), a.k = head_operand(K), a.v = head_operand(V), a.out = head_output(O);
    if (Kernels<Cpu>::attention_heads(a)) return r;
  }
  const Heads P = heads_of(*r.probs);
  // One flag per query row, each entry its own slice: a task may run on any thread, and the
  // kernels inside it may hand work to an executor that runs other tasks meanwhile.
  std::vector<uint8_t> dead(mask_in ? static_cast<size_t>(batch * h * l) : 0);
  for_each_entry(batch, [&](int64_t b) {
    TensorRef p = P.entry(b), o = O.entry(b);
    if (s == 0) {  // no keys: an empty softmax, as the composite form gives (zeros)
      Kernels<Cpu>::fill(*o, Scalar(0.0));
      return;
    }
    Kernels<Cpu>::gemm(*p, *Q.entry(b), *K.entry(b, true), op.scale, 0.0);
    if (mask_in) {  // the add reads the mask through its own strides (broadcast views stay views)
      const int64_t m_sizes[3] = {h, l, s};
      const int64_t m_strides[3] = {mask_in->strides[1], mask_in->strides[2], mask_in->strides[3]};
      TensorRef m = detail::make_view(mask_in->storage, mask_in->dtype, m_sizes, m_strides,
                                      mask_in->offset + b * mask_in->strides[0]);
      Kernels<Cpu>::binary(BinaryOp::Add, *p, *p, *m);
    }
    if (op.causal) mask_causal(*p);
    // Only a mask can take a whole row (the causal one leaves key 0 to every query).
    uint8_t* dead_b = mask_in ? dead.data() + b * h * l : nullptr;
    const bool some_dead = mask_in && mark_dead_rows(*p, dead_b);
    Kernels<Cpu>::softmax(*p, *p, 2, false);
    if (some_dead) zero_dead_rows(*p, dead_b);
    Kernels<Cpu>::gemm(*o, *p, *V.entry(b), 1.0, 0.0);
  });
  return r;
}

AttentionGrads attention_backward_cpu(const AttentionBackward& op, const TensorImpl& dout_in, const TensorImpl& q,
                                      const TensorImpl* k, const TensorImpl* v, const TensorImpl& probs) {
  const char* name = op.name();
  TensorRef hd, hq, hk, hv;
  const TensorImpl& dout = gemm_readable(dout_in, hd, name);
  const TensorImpl& qc = gemm_readable(q, hq, name);
  EMBER_CHECK(dout.dtype == q.dtype && probs.dtype == q.dtype && probs.ndim() == 4 && probs.contiguous,
              "[{}] gradient {} ({}) and probabilities {} ({}) do not fit the forward's {}", name, dout.sizes,
              dout.dtype, probs.sizes, probs.dtype, q.dtype);
  AttentionGrads g;
  Heads Q, K, V, dO, dQ, dK, dV;
  if (op.heads > 0) {
    EMBER_CHECK(dout.ndim() == 3 && dout.sizes[0] == q.sizes[0] && dout.sizes[1] == q.sizes[1] &&
                    dout.sizes[2] * 3 == q.sizes[2],
                "[{}] gradient of shape {} does not fit the packed projection {}", name, dout.sizes, q.sizes);
    Q = packed_part(qc, op.heads, 0, 3), K = packed_part(qc, op.heads, 1, 3), V = packed_part(qc, op.heads, 2, 3);
    dO = packed_part(dout, op.heads, 0, 1);
    g.dq = detail::make_tensor(q.sizes, q.dtype, q.device(), name);
    dQ = packed_part(*g.dq, op.heads, 0, 3), dK = packed_part(*g.dq, op.heads, 1, 3),
    dV = packed_part(*g.dq, op.heads, 2, 3);
  } else {
    const TensorImpl& kc = gemm_readable(*k, hk, name);
    const TensorImpl& vc = gemm_readable(*v, hv, name);
    Q = heads_of(qc), K = heads_of(kc), V = heads_of(vc);
    EMBER_CHECK(dout.ndim() == 4 && dout.sizes[0] == q.sizes[0] && dout.sizes[1] == q.sizes[1] &&
                    dout.sizes[2] == q.sizes[2] && dout.sizes[3] == v->sizes[3],
                "[{}] gradient of shape {} does not fit q {} and v {}", name, dout.sizes, q.sizes, v->sizes);
    dO = heads_of(dout);
    auto grad_like = [&](bool need, const TensorImpl& x, TensorRef& dst, Heads& view) {
      if (!need) return;
      dst = detail::make_tensor(x.sizes, x.dtype, x.device(), name);
      view = heads_of(*dst);
    };
    grad_like(op.need_q, q, g.dq, dQ);
    grad_like(op.need_k, *k, g.dk, dK);
    grad_like(op.need_v, *v, g.dv, dV);
  }
  const int64_t batch = probs.sizes[0], h = probs.sizes[1], l = probs.sizes[2], s = probs.sizes[3];
  const bool need_q = dQ.t != nullptr, need_k = dK.t != nullptr, need_v = dV.t != nullptr;
  if (batch == 0 || h == 0) return g;
  if (l == 0 || s == 0) {  // nothing flows: the gradients are zero
    for (const TensorRef* t : {&g.dq, &g.dk, &g.dv})
      if (*t) Kernels<Cpu>::fill(**t, Scalar(0.0));
    return g;
  }
  if (op.fused && q.dtype == DType::F32) {
    ops::AttentionHeads a;
    a.batch = batch, a.heads = h, a.l = l, a.s = s, a.d = Q.C, a.dv = V.C;
    a.scale = static_cast<float>(op.scale), a.probs = &probs;
    a.q = head_operand(Q), a.k = head_operand(K), a.v = head_operand(V), a.dout = head_operand(dO);
    a.dq = head_output(dQ), a.dk = head_output(dK), a.dv_out = head_output(dV);
    if (Kernels<Cpu>::attention_heads_backward(a)) return g;
  }
  const Heads P = heads_of(probs);
  for_each_entry(batch, [&](int64_t b) {
    TensorRef o_grad = dO.entry(b);
    if (need_v) Kernels<Cpu>::gemm(*dV.entry(b), *P.entry(b, true), *o_grad, 1.0, 0.0);
    if (!need_q && !need_k) return;
    // dS = P * (dP - rowsum(dP * P)), dP = dO V^T: the softmax derivative of the scores,
    // written over dP (the kernel reads each element of g before writing it in dx).
    const int64_t hls[3] = {h, l, s};
    TensorRef ds = detail::make_tensor(hls, q.dtype, q.device(), name);
    Kernels<Cpu>::gemm(*ds, *o_grad, *V.entry(b, true), 1.0, 0.0);
    Kernels<Cpu>::softmax_backward(*ds, *ds, *P.entry(b), 2, false);
    const Heads DS{ds.get(), h, l, s, ds->offset, 0, l * s, s};
    if (need_q) Kernels<Cpu>::gemm(*dQ.entry(b), *ds, *K.entry(b), op.scale, 0.0);
    if (need_k) Kernels<Cpu>::gemm(*dK.entry(b), *DS.entry(0, true), *Q.entry(b), op.scale, 0.0);
  });
  return g;
}

}  // namespace ember::ops

#pragma once
/// Scaled dot-product attention as one op: softmax(q k^T * scale + mask) v.
///
/// Written with separate ops it makes the (batch, heads, L, S) score tensor cross memory
/// about eight times per training step (the product, the scale, the mask, softmax, and as
/// many again backward), and the heads' permuted q/k/v views are copied before each batched
/// product. This op works one batch entry at a time: that entry's scores stay in cache
/// between the product, softmax and the second product, and q, k, v and the result are read
/// and written in place through strides. Backward likewise per batch entry, from the softmax
/// probabilities the forward kept.
///
/// Two layouts of the inputs:
///  - separate: q (B, H, L, D), k (B, H, S, D), v (B, H, S, Dv); last dims contiguous.
///    out is (B, H, L, Dv).
///  - packed (heads > 0): q is multi-head attention's packed projection (L, N, 3E) of
///    self-attention ([q | k | v] along the last dim, E = heads * D), k and v are null.
///    out is (L, N, E), ready for the output projection, and the gradient is one (L, N, 3E)
///    tensor, so nothing is split, permuted or copied either way.
/// mask: additive, the inputs' dtype, (B, H, L, S) (broadcast views welcome); or causal. A query
/// whose every score the mask makes -inf gets zero probabilities and output (PyTorch's safe
/// softmax), not NaN.
///
/// Kernels: src/ops/attention.cpp (CPU, f32/f64; its products and softmax are the per-ISA
/// GEMM and softmax kernels; f32 heads without a mask run kernels_cpu/attention_heads.cpp). The derivative (autograd/derivatives_attention.hpp) runs the
/// fused backward in a plain backward and the composite formula under create_graph.

#include <ember/ops/descriptors.hpp>
#include <ember/ops/index_ops.hpp>

namespace ember::ops {

struct AttentionResult {
  TensorRef out;    ///< the attention output (layouts above)
  TensorRef probs;  ///< softmax probabilities, (B, H, L, S) contiguous
};
struct Attention {
  double scale = 1.0;
  bool causal = false;  ///< key j > query i masked (L == S expected of callers)
  int64_t heads = 0;    ///< > 0: packed layout with that many heads
  /// f32 without a mask: each head in one task of the per-ISA fused kernel where there is one
  /// (Kernels<Cpu>::attention_heads); bit-identical to the general path, which tests select
  /// with false to compare the two.
  bool fused = true;
  const char* name() const { return "scaled_dot_product_attention"; }
  template <class BL>
  AttentionResult run(const TensorImpl& q, const TensorImpl* k, const TensorImpl* v, const TensorImpl* mask) const;
};

/// The fused derivative. Packed layout: dq is the (L, N, 3E) gradient of the projection and
/// dk, dv stay null. Runs only inside a plain backward (never recorded).
struct AttentionGrads {
  TensorRef dq, dk, dv;
};
struct AttentionBackward {
  double scale = 1.0;
  int64_t heads = 0;
  bool need_q = true, need_k = true, need_v = true;
  bool fused = true;  ///< as Attention::fused
  const char* name() const { return "scaled_dot_product_attention_backward"; }
  template <class BL>
  AttentionGrads run(const TensorImpl& dout, const TensorImpl& q, const TensorImpl* k, const TensorImpl* v,
                     const TensorImpl& probs) const;
};

AttentionResult attention_cpu(const Attention& op, const TensorImpl& q, const TensorImpl* k, const TensorImpl* v,
                              const TensorImpl* mask);
AttentionGrads attention_backward_cpu(const AttentionBackward& op, const TensorImpl& dout, const TensorImpl& q,
                                      const TensorImpl* k, const TensorImpl* v, const TensorImpl& probs);

template <class BL>
AttentionResult Attention::run(const TensorImpl& q, const TensorImpl* k, const TensorImpl* v,
                               const TensorImpl* mask) const {
  return index_backend<BL>(q.device(), name(), [&] { return attention_cpu(*this, q, k, v, mask); });
}
template <class BL>
AttentionGrads AttentionBackward::run(const TensorImpl& dout, const TensorImpl& q, const TensorImpl* k,
                                      const TensorImpl* v, const TensorImpl& probs) const {
  return index_backend<BL>(q.device(), name(), [&] { return attention_backward_cpu(*this, dout, q, k, v, probs); });
}

}  // namespace ember::ops

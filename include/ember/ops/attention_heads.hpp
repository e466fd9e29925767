#pragma once
/// What the fused f32 attention kernels (kernels_cpu/attention_heads.cpp) see: every operand as
/// (B, H, rows, cols) through strides with unit column stride, as src/ops/attention.cpp lays
/// out the separate and the packed (L, N, 3E) inputs. One (batch entry, head) pair is one task.

#include <cstdint>

namespace ember::detail {
struct TensorImpl;
}  // namespace ember::detail

namespace ember::ops {

/// Element (b, h, r, c) of an input at p + b * sb + h * sh + r * sr + c.
struct HeadOperand {
  const float* p = nullptr;
  int64_t sb = 0, sh = 0, sr = 0;
  const float* at(int64_t b, int64_t h) const { return p + b * sb + h * sh; }
};
/// The same for an output; p == nullptr: not wanted.
struct HeadOutput {
  float* p = nullptr;
  int64_t sb = 0, sh = 0, sr = 0;
  float* at(int64_t b, int64_t h) const { return p + b * sb + h * sh; }
};

/// softmax(q k^T * scale, causal mask) v over `batch` x `heads` pairs of q (L x D), k (S x D),
/// v (S x Dv), and its gradients. probs is the (B, H, L, S) contiguous f32 tensor of softmax
/// probabilities: written by the forward, read by the backward.
struct AttentionHeads {
  int64_t batch = 0, heads = 0, l = 0, s = 0, d = 0, dv = 0;
  float scale = 1.f;
  bool causal = false;  ///< forward only: key j > query i masked
  const detail::TensorImpl* probs = nullptr;
  HeadOperand q, k, v;
  HeadOutput out;            ///< forward
  HeadOperand dout;          ///< backward: the output's gradient
  HeadOutput dq, dk, dv_out;  ///< backward: the gradients wanted
};

}  // namespace ember::ops

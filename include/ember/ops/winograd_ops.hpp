#pragma once
/// Winograd F(m x m, 3x3), m = 2 or 4: 2-D convolution with a 3x3 kernel and stride 1 in 2.25x
/// (m = 2) or 4x (m = 4) fewer multiplications than im2col + GEMM (Lavin & Gray, "Fast
/// Algorithms for Convolutional Neural Networks", 2015). The output is cut into m x m tiles;
/// each reads an (m + 2) x (m + 2) input patch d. With the fixed matrices B, G, A of the
/// algorithm, a tile of output channel o is
///   Y = A^T [ sum_c (G g_oc G^T) * (B^T d_c B) ] A        (* elementwise, (m + 2)^2 positions)
/// so, per position xi of the transform, the channel sum is one matrix product:
///   M[xi] (O, T) = U[xi] (O, C) @ V[xi] (C, T)   with T = the number of tiles.
/// Convolution is then four linear steps, each differentiable by existing means (P = the
/// t.positions() of the tiling: 16 or 36):
///   V = WinogradInput(x)      (N, C, H, W) -> (P, C, T)
///   U = weight @ kron(G, G)^T  (a plain matmul, see functional_conv.hpp)
///   M = U @ V                 (batched GEMM over the P positions)
///   y = WinogradOutput(M)     (P, O, T) -> (N, O, OH, OW)
/// The input and output steps are linear maps whose adjoints are the ops below; each op's
/// derivative is its adjoint, so convolution stays differentiable to any order, and the
/// backward pass is Winograd too (the weight's gradient is P GEMMs over the tiles, the
/// input's the adjoint of the input transform after P GEMMs).
/// Kernels: kernels_cpu/winograd.cpp and winograd4.cpp (the transforms, per instruction set);
/// src/ops/winograd.cpp (checks, chunks of samples for the fused op, parallel over channels
/// for the others).

#include <ember/ops/index_ops.hpp>
#include <ember/ops/winograd_tiles.hpp>

#include <cstdint>

namespace ember::ops {

/// (N, C, H, W) -> (P, C, T): B^T d B of every tile's input patch (padding reads 0).
struct WinogradInput {
  WinogradTiles t;
  const char* name() const { return "winograd_input"; }
  template <class BL>
  TensorRef run(const TensorImpl& x) const;
};

/// (P, C, T) -> (N, C, H, W): the adjoint of WinogradInput (B v B^T of every tile, added
/// where patches overlap; what lands on padding is dropped).
struct WinogradInputAdjoint {
  WinogradTiles t;
  const char* name() const { return "winograd_input_adjoint"; }
  template <class BL>
  TensorRef run(const TensorImpl& v) const;
};

/// (P, O, T) -> (N, O, OH, OW): A^T m A of every tile (the part of a tile past the output's
/// edge is dropped).
struct WinogradOutput {
  WinogradTiles t;
  const char* name() const { return "winograd_output"; }
  template <class BL>
  TensorRef run(const TensorImpl& m) const;
};

/// (N, O, OH, OW) -> (P, O, T): the adjoint of WinogradOutput (A y A^T of every tile).
struct WinogradOutputAdjoint {
  WinogradTiles t;
  const char* name() const { return "winograd_output_adjoint"; }
  template <class BL>
  TensorRef run(const TensorImpl& y) const;
};

/// The whole convolution in one pass: x (N, C, H, W) and transformed weights u (P, O, C) ->
/// y (N, O, OH, OW) = WinogradOutput(u @ WinogradInput(x)). It works on a few samples at a
/// time, so that their transformed tiles (P x (C + O) values per tile) stay in cache between
/// the transforms and the GEMMs instead of going through memory as whole tensors.
struct WinogradConv {
  WinogradTiles t;
  const char* name() const { return "winograd_conv"; }
  template <class BL>
  TensorRef run(const TensorImpl& x, const TensorImpl& u) const;
};

/// Gradients of WinogradConv: dx = WinogradInputAdjoint(u^T @ dm) and du = dm @ V^T, with
/// dm = WinogradOutputAdjoint(dy) and V = WinogradInput(x), chunked the same way (du summed
/// over the chunks in a fixed order, so it does not depend on the thread count). Only the
/// plain backward of WinogradConv calls it; a recorded backward (create_graph) uses the
/// transforms above, which are differentiable.
struct WinogradConvGrads {
  TensorRef dx, du;
};
struct WinogradConvBackward {
  WinogradTiles t;
  bool need_x = true, need_u = true;
  const char* name() const { return "winograd_conv_backward"; }
  template <class BL>
  WinogradConvGrads run(const TensorImpl& dy, const TensorImpl& x, const TensorImpl& u) const;
};

// src/ops/winograd.cpp
TensorRef winograd_conv_cpu(const WinogradTiles& t, const TensorImpl& x, const TensorImpl& u);
WinogradConvGrads winograd_conv_backward_cpu(const WinogradConvBackward& op, const TensorImpl& dy, const TensorImpl& x,
                                             const TensorImpl& u);
TensorRef winograd_input_cpu(const WinogradTiles& t, const TensorImpl& x);
TensorRef winograd_input_adjoint_cpu(const WinogradTiles& t, const TensorImpl& v);
TensorRef winograd_output_cpu(const WinogradTiles& t, const TensorImpl& m);
TensorRef winograd_output_adjoint_cpu(const WinogradTiles& t, const TensorImpl& y);

template <class BL>
TensorRef WinogradInput::run(const TensorImpl& x) const {
  return index_backend<BL>(x.device(), name(), [&] { return winograd_input_cpu(t, x); });
}
template <class BL>
TensorRef WinogradInputAdjoint::run(const TensorImpl& v) const {
  return index_backend<BL>(v.device(), name(), [&] { return winograd_input_adjoint_cpu(t, v); });
}
template <class BL>
TensorRef WinogradOutput::run(const TensorImpl& m) const {
  return index_backend<BL>(m.device(), name(), [&] { return winograd_output_cpu(t, m); });
}
template <class BL>
TensorRef WinogradOutputAdjoint::run(const TensorImpl& y) const {
  return index_backend<BL>(y.device(), name(), [&] { return winograd_output_adjoint_cpu(t, y); });
}

template <class BL>
TensorRef WinogradConv::run(const TensorImpl& x, const TensorImpl& u) const {
  return index_backend<BL>(x.device(), name(), [&] { return winograd_conv_cpu(t, x, u); });
}
template <class BL>
WinogradConvGrads WinogradConvBackward::run(const TensorImpl& dy, const TensorImpl& x, const TensorImpl& u) const {
  return index_backend<BL>(x.device(), name(), [&] { return winograd_conv_backward_cpu(*this, dy, x, u); });
}

}  // namespace ember::ops

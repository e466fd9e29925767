#pragma once
/// Which algorithm 2-D convolutions run with on the CPU: a user setting, read by
/// nn::functional's convolution (functional_conv.hpp).

namespace ember {

/// How 2-D convolutions with stride 1, dilation 1 and one group run on the CPU (the like of
/// torch.backends.mkldnn's algorithm choice). `Auto` (the default) takes Winograd for 3x3
/// kernels with at least 8 channels each way (except >= 512 x 512 channels on images of fewer
/// than 32 tiles of 2 x 2 outputs), the direct kernels (ops/direct_conv_ops.hpp) for kernels
/// larger than 1x1 whose outputs read at most 32 inputs (channels x kernel elements: a first
/// layer over 1 or 3 channels), and im2col + GEMM otherwise: each where it is measured faster
/// (bench: cnn_small_step). `Winograd` and `Direct` take that algorithm wherever it applies,
/// `Im2col` always im2col. Convolutions with other strides, dilations or groups always use
/// im2col + GEMM.
///
/// Winograd cuts the output into 2x2 tiles (F(2x2, 3x3): 2.25x fewer multiplications than
/// im2col) or 4x4 tiles (F(4x4, 3x3): 4x fewer), the latter where it multiplies less (outputs
/// of at least 7x7) on layers of at most 128 x 128 channels (see winograd_tile_size in
/// nn/functional_conv.hpp); `Winograd2x2` and `Winograd4x4` force one. The algorithms round
/// differently: F(2x2) by a few ulp more than im2col, F(4x4) by ~10x more (its transforms
/// scale inputs by up to 8 before the products; in f32 ~1e-5 relative to the output's
/// magnitude instead of ~1e-6), as in other libraries that use it.
enum class ConvAlgorithm { Auto, Im2col, Winograd, Direct, Winograd2x2, Winograd4x4 };
void set_conv_algorithm(ConvAlgorithm algorithm);
ConvAlgorithm conv_algorithm();

}  // namespace ember

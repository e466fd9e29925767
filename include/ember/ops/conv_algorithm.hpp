#pragma once
/// Which algorithm 2-D convolutions run with on the CPU: a user setting, read by
/// nn::functional's convolution (functional_conv.hpp).

namespace ember {

/// How 2-D convolutions with stride 1, dilation 1 and one group run on the CPU (the like of
/// torch.backends.mkldnn's algorithm choice). `Auto` (the default) takes Winograd F(2x2, 3x3)
/// for 3x3 kernels with at least 8 channels each way (except >= 512 x 512 channels on images
/// of fewer than 32 tiles of 2 x 2 outputs), the direct kernels
/// (ops/direct_conv_ops.hpp) for kernels larger than 1x1 whose outputs read at most 32 inputs
/// (channels x kernel elements: a first layer over 1 or 3 channels), and im2col + GEMM
/// otherwise: each where it is measured faster (bench: cnn_small_step). `Winograd` and `Direct` take that algorithm wherever
/// it applies, `Im2col` always im2col. The algorithms round differently, by a few ulp
/// (Winograd's transforms add and subtract up to nine inputs before the products).
/// Convolutions with other strides, dilations or groups always use im2col + GEMM.
enum class ConvAlgorithm { Auto, Im2col, Winograd, Direct };
void set_conv_algorithm(ConvAlgorithm algorithm);
ConvAlgorithm conv_algorithm();

}  // namespace ember

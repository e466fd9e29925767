#pragma once
/// nn::functional's ops across the channels (dim 1) of an (N, C, ...) input, as
/// torch.nn.functional's: local_response_norm and channel_shuffle.

#include <ember/nn/functional.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace ember::nn::functional {

/// x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta, the window centred on
/// each channel (size / 2 before, (size - 1) / 2 after) and zero beyond the first and last
/// channel, as AlexNet's normalisation and PyTorch's (which averages over all `size`).
template <class P>
BasicTensor<P> local_response_norm(const BasicTensor<P>& x, int64_t size, double alpha = 1e-4, double beta = 0.75,
                                   double k = 1.0) {
  EMBER_CHECK(x.dim() >= 3, "[local_response_norm] expects (N, C, ...) input of 3 or more dims, got shape {}",
              x.sizes());
  EMBER_CHECK(size >= 1 && size < (int64_t{1} << 31), "[local_response_norm] size must be positive, got {}", size);
  EMBER_CHECK(x.is_floating_point(), "[local_response_norm] needs a floating-point input, got {}", x.dtype());
  if (x.numel() == 0) return x;
  const int64_t c = x.size(1);
  // The window reaches size / 2 channels back and (size - 1) / 2 ahead; beyond c - 1 either way
  // it reads only padding, so a huge size costs no more than 2c - 1 terms.
  const int64_t back = std::min(size / 2, c - 1), ahead = std::min((size - 1) / 2, c - 1);
  std::vector<int64_t> pad(static_cast<size_t>(2 * (x.dim() - 1)), 0);  // only dim 1: the last pair
  pad[pad.size() - 2] = back;
  pad[pad.size() - 1] = ahead;
  BasicTensor<P> squares = ember::pad(x.square(), pad);
  BasicTensor<P> window = squares.narrow(1, 0, c);
  for (int64_t j = 1; j <= back + ahead; ++j) window = window + squares.narrow(1, j, c);
  return x / (window * (alpha / static_cast<double>(size)) + k).pow(beta);
}

/// (N, C, ...) with C = g * m: the channels regrouped so that each of the g groups of the
/// output takes one channel from every input group (ShuffleNet's shuffle).
template <class P>
BasicTensor<P> channel_shuffle(const BasicTensor<P>& x, int64_t groups) {
  EMBER_CHECK(x.dim() >= 3, "[channel_shuffle] expects (N, C, ...) input of 3 or more dims, got shape {}", x.sizes());
  EMBER_CHECK(groups > 0 && x.size(1) % groups == 0,
              "[channel_shuffle] groups must be positive and divide the {} channels, got {}", x.size(1), groups);
  Shape grouped = x.sizes();
  grouped[1] = x.size(1) / groups;
  grouped.insert(1, groups);
  return x.reshape(grouped).transpose(1, 2).reshape(x.sizes());
}

}  // namespace ember::nn::functional

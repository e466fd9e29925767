// Footprint test: the smallest kind of Ember program — inference on the CPU only, through
// InferencePolicy (no layers, so no autograd; Backends<Cpu>, so no CUDA). It is linked
// statically against Ember's compiled parts; check.sh then asserts that the binary carries
// no autograd and no CUDA symbols and that it stays small.
#include <ember/ember.hpp>

#include <cstdio>

using P = ember::InferencePolicy;
using T = ember::BasicTensor<P>;

int main() {
  ember::manual_seed(0);
  // A two-layer MLP forward pass: x[8, 16] -> 32 -> 4, softmax over classes.
  T x = ember::randn<P>({8, 16});
  T w1 = ember::randn<P>({32, 16}).mul(0.25);
  T b1 = ember::zeros<P>({32});
  T w2 = ember::randn<P>({4, 32}).mul(0.25);
  T b2 = ember::zeros<P>({4});
  T h = ember::linear(x, w1, b1).relu();
  T y = ember::linear(h, w2, b2).softmax(-1);
  float total = y.sum().item<float>();  // each row sums to 1
  std::printf("%s\nrow sums total %.4f (expect 8)\n", ember::to_string(y.narrow(0, 0, 2)).c_str(), total);
  return (total > 7.99f && total < 8.01f) ? 0 : 1;
}

// A user's translation unit that uses the common tensor ops, compiled as users compile theirs
// (without EMBER_CHECKED_FORMATS). check.sh reads its symbols: the DefaultPolicy chain
// (autocast, profiler, autograd, the backend switch) must not be instantiated here, since the
// library holds those instances (include/ember/core/tensor_instances.hpp). When it is, every
// user's compile pays for it again (a third of bench/compile_time.sh's program).

#include <ember/ember.hpp>

#include <cstdio>

int main() {
  using namespace ember;
  manual_seed(0);
  Tensor x = randn({8, 4}), w = rand({4, 3}), b = zeros({3});
  Tensor h = (mm(x, w) + b).relu();
  Tensor y = softmax(h, 1).log_softmax(0) * 2.0 - ones({8, 3});
  y.add_(full({8, 3}, 0.5)).mul_(h.exp());
  Tensor v = y.t().reshape({-1}).narrow(0, 2, 6).unsqueeze(0).flatten().clone();
  Tensor c = x.clamp(-1.0, 1.0).where(x.gt(0), zeros({8, 4})).to(DType::F64).sum({0}, true).mean();
  Tensor idx = arange(0, 4, 1, TensorOptions(DType::I64));
  Tensor e = eye(4).index({Slice(0, 2)}).copy_(linspace(0, 1, 4).expand({2, 4}));
  e.fill_(1.0);
  Tensor p = randn({3, 4}).requires_grad_();
  linear(x, p, b).relu().sum().backward();
  Tensor m = x.amax({1}) + x.argmax(1).to(DType::F32) + x.cumsum(0).select(0, 7);
  std::printf("%f %f %lld %f %d %f\n", v.sum().item<float>(), c.item<double>(),
              static_cast<long long>(idx.sum().item<int64_t>()), m.sum().item<float>(), e.all().item<bool>(),
              p.grad().sum().item<float>());
  return 0;
}

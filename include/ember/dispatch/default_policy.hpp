#pragma once
/// The policies Ember ships. DefaultPolicy serves every compiled-in backend and records the
/// autograd tape; InferencePolicy is the smallest build: CPU only, no layers, so no tape code
/// is compiled at all.

#include <ember/autocast/layer.hpp>
#include <ember/autograd/layer.hpp>
#include <ember/dispatch/policy.hpp>
#include <ember/profiler/profile.hpp>

namespace ember {

#if defined(EMBER_WITH_CUDA) && EMBER_WITH_CUDA
using DefaultBackends = Backends<Cpu, Cuda>;
#else
using DefaultBackends = Backends<Cpu>;
#endif

/// Autocast costs one thread-local load on the ops it casts (matrix products, softmax,
/// convolution kernels) and nothing on the others; it comes first so that the profiler and
/// the tape see its casts as ops of their own. The Profile layer costs one relaxed load and a
/// predictable branch outside a Profile scope; Autograd one thread-local load and a look at
/// each input when grad mode is on.
using DefaultPolicy = Policy<DefaultBackends, Layers<autocast::Autocast, profiler::ProfileLayer, autograd::Autograd>>;
using InferencePolicy = Policy<Backends<Cpu>, Layers<>>;

// The derivative formulas of the default policy are compiled once, in the library.
namespace autograd {
extern template struct Recorder<DefaultPolicy>;
}  // namespace autograd

template <class P>
class BasicTensor;
/// The tensor most code uses.
using Tensor = BasicTensor<DefaultPolicy>;

}  // namespace ember

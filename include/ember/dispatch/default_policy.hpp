#pragma once
/// The policies Ember ships. DefaultPolicy serves every compiled-in backend; layers are
/// added here as they land (Autograd, Autocast). InferencePolicy is the smallest build:
/// CPU only, no layers, so no tape code is compiled at all.

#include <ember/dispatch/policy.hpp>
#include <ember/profiler/profile.hpp>

namespace ember {

#if defined(EMBER_WITH_CUDA) && EMBER_WITH_CUDA
using DefaultBackends = Backends<Cpu, Cuda>;
#else
using DefaultBackends = Backends<Cpu>;
#endif

/// The Profile layer costs one relaxed load and a predictable branch outside a Profile scope.
using DefaultPolicy = Policy<DefaultBackends, Layers<profiler::ProfileLayer>>;
using InferencePolicy = Policy<Backends<Cpu>, Layers<>>;

template <class P>
class BasicTensor;
/// The tensor most code uses.
using Tensor = BasicTensor<DefaultPolicy>;

}  // namespace ember

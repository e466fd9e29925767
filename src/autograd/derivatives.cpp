// The derivative formulas of DefaultPolicy, instantiated once here (declared extern template
// in default_policy.hpp) so that user translation units never compile them.

#include <ember/ember.hpp>
#include <ember/autograd/derivatives.hpp>

namespace ember::autograd {
template struct Recorder<DefaultPolicy>;
}  // namespace ember::autograd

// The DefaultPolicy instances of the tensor API's entries into the layer chain, of the common
// factories and of backward, compiled once here; users' programs declare them `extern template`
// (include/ember/core/tensor_instances.hpp holds the one list).

#include <ember/ember.hpp>

namespace ember {

EMBER_TENSOR_MEMBER_INSTANCES(template)
EMBER_TENSOR_FACTORY_INSTANCES(template)
EMBER_TENSOR_FUNCTION_INSTANCES(template)
EMBER_TENSOR_AUTOGRAD_INSTANCES(template)

}  // namespace ember

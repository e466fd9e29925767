// nn::Module and the layers with parameters, instantiated once for DefaultPolicy (declared
// extern template in their headers) so that user builds do not compile them again.

#include <ember/nn.hpp>

namespace ember::nn {
template class BasicModule<DefaultPolicy>;
template class BasicLinearImpl<DefaultPolicy>;
template class BasicBilinearImpl<DefaultPolicy>;
}  // namespace ember::nn

#pragma once
/// ember::to_policy<Q>(x): the same elements seen through another policy's tensor type, as a
/// program that trains under DefaultPolicy and serves under InferencePolicy needs in memory:
///   auto served = std::make_shared<nn::BasicSequentialImpl<InferencePolicy>>(...);
///   served->load_state_dict(ember::to_policy<InferencePolicy>(trained->state_dict()));
/// No copy: the result shares storage with x (writes through either are seen by both), and it
/// carries no autograd history or requires_grad (like x.detach()); a 0-d tensor made from a
/// C++ number keeps promoting like one.

#include <ember/core/error.hpp>
#include <ember/core/ordered_dict.hpp>
#include <ember/core/tensor.hpp>

#include <string>

namespace ember {

template <class Q, class P>
BasicTensor<Q> to_policy(const BasicTensor<P>& x) {
  if (!x.defined()) return {};
  EMBER_CHECK(Q::backends::has(x.device().type()),
              "[to_policy] the tensor (shape {}) is on {}, a device the target policy has no backend for; move it "
              "first (.to(Device::cpu()))",
              x.sizes(), x.device());
  BasicTensor<Q> out(x.detach().impl_ref());  // detach's fresh alias: no autograd metadata
  out.impl().wrapped_number = x.impl().wrapped_number;
  return out;
}

/// Every tensor of a state dict (or any named list), names and order kept.
template <class Q, class P>
OrderedDict<std::string, BasicTensor<Q>> to_policy(const OrderedDict<std::string, BasicTensor<P>>& dict) {
  OrderedDict<std::string, BasicTensor<Q>> out(dict.key_description());
  for (const auto& item : dict) out.insert(item.first, to_policy<Q>(item.second));
  return out;
}

}  // namespace ember

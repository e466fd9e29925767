#pragma once
/// How the module calls (mha, the transformer layers) lay out their parameters and gradients, shared by
/// ember_side.cpp and torch_side.cpp: templates over either library's tensor type, so that
/// each side instantiates them with its own (the two halves compile against different
/// headers and C++ standards; see bridge.hpp).

#include <cstdint>
#include <string>
#include <vector>

namespace ediff {

/// A MultiheadAttention module's parameters in its named_parameters() order: the packed
/// in_proj_weight (when keys and values have embed_dim features) or the three separate ones,
/// in_proj_bias, bias_k and bias_v (add_bias_kv), then the output projection.
inline std::vector<std::string> mha_parameter_names(bool packed, bool bias, bool bias_kv) {
  std::vector<std::string> names = packed ? std::vector<std::string>{"in_proj_weight"}
                                          : std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight"};
  if (bias) names.push_back("in_proj_bias");
  if (bias_kv) names.insert(names.end(), {"bias_k", "bias_v"});
  names.push_back("out_proj.weight");
  if (bias) names.push_back("out_proj.bias");
  return names;
}

/// The gradients of [q, k, v, the parameters in mha_parameter_names' order], laid out as the
/// mha call's inputs: q, k, v, w_q, w_k, w_v (rows of a packed gradient), in_proj_bias,
/// out_proj weight, out_proj bias, the two masks (none), bias_k, bias_v; an undefined tensor
/// where an input takes none.
template <class T>
std::vector<T> mha_gradients_by_input(const std::vector<T>& gs, bool packed, bool bias, bool bias_kv,
                                      int64_t embed_dim) {
  std::vector<T> out(gs.begin(), gs.begin() + 3);
  size_t k = 3;
  if (packed) {
    const T g = gs.at(k++);
    for (int64_t j = 0; j < 3; ++j) out.push_back(g.defined() ? g.narrow(0, j * embed_dim, embed_dim) : g);
  } else {
    for (int j = 0; j < 3; ++j) out.push_back(gs.at(k++));
  }
  out.push_back(bias ? gs.at(k++) : T());
  const T bias_k = bias_kv ? gs.at(k++) : T(), bias_v = bias_kv ? gs.at(k++) : T();
  out.push_back(gs.at(k++));
  out.push_back(bias ? gs.at(k++) : T());
  out.insert(out.end(), {T(), T(), bias_k, bias_v});
  return out;
}

/// A TransformerEncoderLayer's parameters (post-norm, biases), in the order of the
/// encoder_layer call's inputs after src.
inline std::vector<std::string> encoder_layer_parameter_names() {
  return {"self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight", "self_attn.out_proj.bias",
          "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
          "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"};
}

/// A TransformerDecoderLayer's parameters, in the order of the decoder_layer call's inputs
/// after tgt and memory: self attention, cross attention (multihead_attn), the feed-forward
/// block and the three norms.
inline std::vector<std::string> decoder_layer_parameter_names() {
  return {"self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight", "self_attn.out_proj.bias",
          "multihead_attn.in_proj_weight", "multihead_attn.in_proj_bias", "multihead_attn.out_proj.weight",
          "multihead_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
          "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias", "norm3.weight", "norm3.bias"};
}

/// A Transformer's parameters with this many encoder and decoder layers, in the order of the
/// transformer call's inputs after src and tgt (as both libraries' named_parameters() list
/// them): encoder.layers.i.*, encoder.norm, decoder.layers.i.*, decoder.norm.
inline std::vector<std::string> transformer_parameter_names(int encoder_layers, int decoder_layers) {
  std::vector<std::string> names;
  auto stack = [&](const std::string& prefix, int layers, const std::vector<std::string>& layer_names) {
    for (int i = 0; i < layers; ++i)
      for (const std::string& n : layer_names) names.push_back(prefix + ".layers." + std::to_string(i) + "." + n);
    names.push_back(prefix + ".norm.weight");
    names.push_back(prefix + ".norm.bias");
  };
  stack("encoder", encoder_layers, encoder_layer_parameter_names());
  stack("decoder", decoder_layers, decoder_layer_parameter_names());
  return names;
}

/// The shape of a transformer parameter named as above, for model width e and feed-forward
/// width ff.
inline std::vector<int64_t> transformer_parameter_shape(const std::string& name, int64_t e, int64_t ff) {
  auto ends_with = [&](const std::string& tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (ends_with("in_proj_weight")) return {3 * e, e};
  if (ends_with("in_proj_bias")) return {3 * e};
  if (ends_with("out_proj.weight")) return {e, e};
  if (ends_with("linear1.weight")) return {ff, e};
  if (ends_with("linear1.bias")) return {ff};
  if (ends_with("linear2.weight")) return {e, ff};
  return {e};  // out_proj.bias, linear2.bias and the norms
}

}  // namespace ediff

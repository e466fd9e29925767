#pragma once
/// Saving and loading a module's state (parameters and buffers by dotted name) as
/// safetensors, on top of state_dict() / load_state_dict():
///
///   nn::save(*model, "model.safetensors");
///   nn::load(*model, "model.safetensors");              // strict: every mismatch in one error
///   auto r = nn::load(*model, "partial.safetensors", false);   // r.missing_keys, r.unexpected_keys
///
/// The file is written atomically (a failed save leaves the previous file intact); loading
/// maps the file and copies the values into the module's own tensors. A load error names the
/// file. Training checkpoints (optimiser, scheduler, step, random state) are nn/checkpoint.hpp.

#include <ember/io/safetensors.hpp>
#include <ember/nn/module.hpp>

#include <string>

namespace ember::nn {

template <class P>
void save(const BasicModule<P>& module, const std::string& path, const io::Metadata& metadata = {}) {
  io::BasicTensorDict<P> dict;
  for (auto& [name, t] : module.state_dict()) dict.insert(name, t);
  io::save_safetensors<P>(path, dict, metadata);
}

template <class P>
LoadResult load(BasicModule<P>& module, const std::string& path, bool strict = true) {
  const io::BasicTensorDict<P> values = io::load_safetensors<P>(path);
#if EMBER_HAS_EXCEPTIONS
  try {
    return module.load_state_dict(values, strict);
  } catch (const Error& e) {
    EMBER_FAIL("[nn::load] '{}': {}", path, e.what());
  }
#else
  return module.load_state_dict(values, strict);
#endif
}

/// The same through a module handle: nn::save(model, path), as libtorch's torch::save(model, ...).
template <class Impl>
void save(const ModuleHolder<Impl>& module, const std::string& path, const io::Metadata& metadata = {}) {
  save(*module, path, metadata);
}
template <class Impl>
LoadResult load(const ModuleHolder<Impl>& module, const std::string& path, bool strict = true) {
  return load(*module, path, strict);
}

}  // namespace ember::nn

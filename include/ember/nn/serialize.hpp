#pragma once
/// Saving and loading a module's state (parameters and buffers by dotted name) as
/// safetensors, on top of state_dict() / load_state_dict():
///
///   nn::save(*model, "model.safetensors");
///   nn::load(*model, "model.safetensors");              // strict: every mismatch in one error
///   auto r = nn::load(*model, "partial.safetensors", false);   // r.missing_keys, r.unexpected_keys
///   std::stringstream buf; nn::save(model, buf); nn::load(other, buf);   // through streams
///
/// The file is written atomically (a failed save leaves the previous file intact); loading
/// maps the file and copies the values into the module's own tensors. A load error names the
/// file. Training checkpoints (optimiser, scheduler, step, random state) are nn/checkpoint.hpp.

#include <ember/io/safetensors.hpp>
#include <ember/nn/module.hpp>

#include <iosfwd>
#include <string>
#include <string_view>

namespace ember::nn {

namespace detail {
template <class P>
io::BasicTensorDict<P> state_as_dict(const BasicModule<P>& module) {
  io::BasicTensorDict<P> dict;
  for (auto& [name, t] : module.state_dict()) dict.insert(name, t);
  return dict;
}
/// load_state_dict, its error naming where the values came from.
template <class P>
LoadResult load_values(BasicModule<P>& module, const io::BasicTensorDict<P>& values, bool strict,
                       std::string_view source) {
#if EMBER_HAS_EXCEPTIONS
  try {
    return module.load_state_dict(values, strict);
  } catch (const Error& e) {
    EMBER_FAIL("[nn::load] {}: {}", source, e.what());
  }
#else
  (void)source;
  return module.load_state_dict(values, strict);
#endif
}
}  // namespace detail

template <class P>
void save(const BasicModule<P>& module, const std::string& path, const io::Metadata& metadata = {}) {
  io::save_safetensors<P>(path, detail::state_as_dict(module), metadata);
}

template <class P>
LoadResult load(BasicModule<P>& module, const std::string& path, bool strict = true) {
  return detail::load_values(module, io::load_safetensors<P>(path), strict, "'" + path + "'");
}

/// The same through streams, as libtorch's torch::save(model, std::ostream&) /
/// torch::load(model, std::istream&): the bytes are a safetensors file's; loading reads the
/// stream to its end.
template <class P>
void save(const BasicModule<P>& module, std::ostream& out, const io::Metadata& metadata = {}) {
  io::save_safetensors<P>(out, detail::state_as_dict(module), metadata);
}
template <class P>
LoadResult load(BasicModule<P>& module, std::istream& in, bool strict = true) {
  return detail::load_values(module, io::load_safetensors<P>(in), strict, "<stream>");
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
template <class Impl>
void save(const ModuleHolder<Impl>& module, std::ostream& out, const io::Metadata& metadata = {}) {
  save(*module, out, metadata);
}
template <class Impl>
LoadResult load(const ModuleHolder<Impl>& module, std::istream& in, bool strict = true) {
  return load(*module, in, strict);
}

}  // namespace ember::nn

#pragma once
/// safetensors files (Hugging Face's format for model weights): read without copying,
/// written atomically.
///
///   auto sd = ember::io::load_safetensors("model.safetensors");      // TensorDict, file order
///   auto half = ember::io::load_safetensors("model.safetensors", ember::DType::F16);
///   ember::io::save_safetensors("out.safetensors", {{"w", w}, {"b", b}}, {{"format", "pt"}});
///
///   auto from_memory = ember::io::load_safetensors_bytes(data, size);  // a copy of the bytes
///   std::vector<uint8_t> bytes = ember::io::save_safetensors_bytes(sd);
///
///   ember::io::SafetensorsFile f("model.safetensors");               // reads only the header
///   for (const auto& name : f.keys()) ember::Tensor t = f.get(name);
///
/// Loading maps the file (private, copy-on-write: the file itself is never written) and the
/// tensors view the mapping: nothing is copied until a page is touched, and the mapping is
/// released when the last tensor using it goes away. A tensor whose offset in the file is not
/// a multiple of its element size is copied instead (the reference writer always aligns
/// them). The header is validated completely first (offsets inside the data region, tiling
/// it without gaps or overlaps, sizes that match shape x dtype, unique UTF-8 names), and
/// bool data is checked to hold only 0 and 1; any violation is an ember::Error naming the
/// file and the field.
///
/// Saving writes a temporary file next to the target, fsyncs it and renames it over the
/// target, so a failed save leaves the previous file unchanged. The header lists the tensors
/// in the dict's order; their data is laid out by decreasing element size (stable), so that
/// every tensor is aligned for a zero-copy load. For a dict already in the reference
/// writer's order (dtype, then name) and at most one metadata entry (it orders several by
/// hash) the file is byte-identical to what the reference `safetensors` package writes.
/// Strided or CUDA tensors are staged through a CPU copy.

#include <ember/io/tensor_dict.hpp>

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ember::io {

/// The header's "__metadata__": free-form string pairs (e.g. {"format", "pt"}).
using Metadata = std::map<std::string, std::string>;

namespace detail {
struct SafetensorsState;
detail::NamedTensors load_safetensors(const std::string& path, std::optional<DType> to);
void save_safetensors(const std::string& path, const detail::NamedTensors& tensors, const Metadata& metadata);
detail::TensorRef safetensors_get(const SafetensorsState& s, std::string_view name, std::optional<DType> to);
detail::NamedTensors load_safetensors_bytes(const void* data, size_t size, std::optional<DType> to);
detail::NamedTensors load_safetensors_stream(std::istream& in, std::optional<DType> to);
std::vector<uint8_t> save_safetensors_bytes(const detail::NamedTensors& tensors, const Metadata& metadata);
void save_safetensors_stream(std::ostream& out, const detail::NamedTensors& tensors, const Metadata& metadata);
}  // namespace detail

/// Every tensor of the file, in header order; converted to `to` when given (a converted
/// tensor is a copy, no longer a view of the file).
template <class P = DefaultPolicy>
BasicTensorDict<P> load_safetensors(const std::string& path, std::optional<DType> to = {}) {
  return BasicTensorDict<P>(detail::load_safetensors(path, to));
}

/// The header's "__metadata__" (empty when it has none). Validates the whole header.
Metadata load_safetensors_metadata(const std::string& path);

/// Writes `tensors` (and `metadata`, when not empty) to `path`, atomically.
template <class P = DefaultPolicy>
void save_safetensors(const std::string& path, const BasicTensorDict<P>& tensors, const Metadata& metadata = {}) {
  detail::save_safetensors(path, tensors.refs(), metadata);
}

/// The same from bytes in memory (weights built into the program, received over a network,
/// read from an archive): copied once into an aligned buffer that the tensors view, so
/// `data` need not outlive the call. Errors name the source "<memory>".
template <class P = DefaultPolicy>
BasicTensorDict<P> load_safetensors_bytes(const void* data, size_t size, std::optional<DType> to = {}) {
  return BasicTensorDict<P>(detail::load_safetensors_bytes(data, size, to));
}
/// The same from a stream, read from its position to its end, as libtorch's
/// torch::load(…, std::istream&): a seekable stream (a file, a stringstream) straight into
/// the aligned buffer the tensors view, others into a growing buffer copied once at the end.
template <class P = DefaultPolicy>
BasicTensorDict<P> load_safetensors(std::istream& in, std::optional<DType> to = {}) {
  return BasicTensorDict<P>(detail::load_safetensors_stream(in, to));
}
/// The bytes save_safetensors would write to a file.
template <class P = DefaultPolicy>
std::vector<uint8_t> save_safetensors_bytes(const BasicTensorDict<P>& tensors, const Metadata& metadata = {}) {
  return detail::save_safetensors_bytes(tensors.refs(), metadata);
}
/// Writes those bytes to a stream (not atomic: a stream has no file to rename over); a
/// stream that fails while written is an ember::Error.
template <class P = DefaultPolicy>
void save_safetensors(std::ostream& out, const BasicTensorDict<P>& tensors, const Metadata& metadata = {}) {
  detail::save_safetensors_stream(out, tensors.refs(), metadata);
}

/// An open safetensors file: the header is read and validated on construction; tensors are
/// made on demand by get() and stay valid after the SafetensorsFile is gone.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  /// Bytes from memory, copied once (path() is "<memory>").
  static SafetensorsFile from_bytes(const void* data, size_t size);

  const std::string& path() const;
  /// Tensor names in header order.
  const std::vector<std::string>& keys() const;
  bool contains(std::string_view name) const;
  /// Dtype and shape of a tensor, without making it.
  DType dtype(std::string_view name) const;
  Shape shape(std::string_view name) const;
  const Metadata& metadata() const;

  /// The tensor `name`, viewing the file (or converted to `to`); fails naming a missing one.
  template <class P = DefaultPolicy>
  BasicTensor<P> get(std::string_view name, std::optional<DType> to = {}) const {
    return BasicTensor<P>(detail::safetensors_get(*state_, name, to));
  }

 private:
  explicit SafetensorsFile(std::shared_ptr<const detail::SafetensorsState> state) : state_(std::move(state)) {}
  std::shared_ptr<const detail::SafetensorsState> state_;
};

}  // namespace ember::io

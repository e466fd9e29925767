// Loading and saving safetensors files: the format itself is in safetensors_format.cpp.

#include <ember/io/safetensors.hpp>

#include "atomic_writer.hpp"
#include "safetensors_format.hpp"
#include "tensor_bytes.hpp"
#include "text.hpp"

#include <algorithm>
#include <numeric>

namespace ember::io {
namespace detail {

struct SafetensorsState {
  std::string path;
  BlobRef file;
  SafetensorsLayout layout;
  std::vector<std::string> keys;
  Metadata metadata;
  std::map<std::string, size_t, std::less<>> index;
};

namespace {

std::shared_ptr<SafetensorsState> open_safetensors(const std::string& path, const char* op) {
  auto s = std::make_shared<SafetensorsState>();
  s->path = path;
  s->file = map_file(path, op);
  s->layout = parse_safetensors(s->file->bytes(), Source{op, path});
  s->keys.reserve(s->layout.tensors.size());
  for (size_t i = 0; i < s->layout.tensors.size(); ++i) {
    s->keys.push_back(s->layout.tensors[i].name);
    s->index.emplace(s->layout.tensors[i].name, i);
  }
  for (const auto& [k, v] : s->layout.metadata) s->metadata.emplace(k, v);
  return s;
}

const SafetensorsEntry& entry(const SafetensorsState& s, std::string_view name, const char* op) {
  auto it = s.index.find(name);
  if (it == s.index.end()) {
    std::string some;
    for (size_t i = 0; i < s.keys.size() && i < 8; ++i) some += (i ? ", " : "") + quoted(s.keys[i]);
    if (s.keys.size() > 8) some += ", ...";
    EMBER_FAIL("{}no tensor named {} (the file has {} tensors: {})", Source{op, s.path}.prefix(), quoted(name),
               s.keys.size(), some);
  }
  return s.layout.tensors[it->second];
}

TensorRef make(const SafetensorsState& s, const SafetensorsEntry& e, std::optional<DType> to, const char* op) {
  const uint8_t* data = s.file->data + s.layout.data_start + e.begin;
  return tensor_from_bytes(s.file, data, e.dtype, e.shape, false, to, Source{op, s.path}, "tensor " + quoted(e.name));
}

}  // namespace

TensorRef safetensors_get(const SafetensorsState& s, std::string_view name, std::optional<DType> to) {
  return make(s, entry(s, name, "SafetensorsFile::get"), to, "SafetensorsFile::get");
}

NamedTensors load_safetensors(const std::string& path, std::optional<DType> to) {
  auto s = open_safetensors(path, "load_safetensors");
  NamedTensors out;
  out.reserve(s->layout.tensors.size());
  for (const SafetensorsEntry& e : s->layout.tensors) out.emplace_back(e.name, make(*s, e, to, "load_safetensors"));
  return out;
}

void save_safetensors(const std::string& path, const NamedTensors& tensors, const Metadata& metadata) {
  constexpr const char* op = "save_safetensors";
  const std::string pre = Source{op, path}.prefix();
  std::vector<SafetensorsEntry> entries(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    EMBER_CHECK(is_utf8(name), "{}tensor name {} is not UTF-8, which JSON requires", pre, quoted(name));
    EMBER_CHECK(name != "__metadata__", "{}'__metadata__' is reserved for the metadata; rename that tensor", pre);
    entries[i].name = name;
    entries[i].dtype = t->dtype;
    entries[i].shape = t->sizes;
  }
  std::vector<std::pair<std::string, std::string>> meta;
  for (const auto& [k, v] : metadata) {
    EMBER_CHECK(is_utf8(k) && is_utf8(v), "{}metadata key {} or its value is not UTF-8, which JSON requires", pre,
                quoted(k));
    meta.emplace_back(k, v);
  }
  // Data by decreasing element size (stable): every offset is then a multiple of its
  // element size, as the reference writer's dtype order also guarantees.
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return itemsize(entries[a].dtype) > itemsize(entries[b].dtype); });
  uint64_t offset = 0;
  for (size_t i : order) {
    const auto& t = *tensors[i].second;
    entries[i].begin = offset;
    offset += static_cast<uint64_t>(t.numel * itemsize(t.dtype));
    entries[i].end = offset;
  }
  const std::string header = safetensors_header(entries, meta);
  EMBER_CHECK(header.size() - 8 <= kMaxSafetensorsHeader,
              "{}the header would be {} bytes, over the format's limit of {}", pre, header.size() - 8,
              kMaxSafetensorsHeader);

  AtomicWriter out(path, op);
  out.write(header.data(), header.size());
  for (size_t i : order)
    for_tensor_bytes(*tensors[i].second, false, [&](const void* p, size_t n) { out.write(p, n); });
  out.commit();
}

}  // namespace detail

Metadata load_safetensors_metadata(const std::string& path) {
  return detail::open_safetensors(path, "load_safetensors_metadata")->metadata;
}

SafetensorsFile::SafetensorsFile(const std::string& path)
    : state_(detail::open_safetensors(path, "SafetensorsFile")) {}

const std::string& SafetensorsFile::path() const { return state_->path; }
const std::vector<std::string>& SafetensorsFile::keys() const { return state_->keys; }
bool SafetensorsFile::contains(std::string_view name) const { return state_->index.count(name) != 0; }
DType SafetensorsFile::dtype(std::string_view name) const {
  return detail::entry(*state_, name, "SafetensorsFile::dtype").dtype;
}
Shape SafetensorsFile::shape(std::string_view name) const {
  return detail::entry(*state_, name, "SafetensorsFile::shape").shape;
}
const Metadata& SafetensorsFile::metadata() const { return state_->metadata; }

}  // namespace ember::io

// Loading and saving safetensors files: the format itself is in safetensors_format.cpp.

#include <ember/io/safetensors.hpp>

#include "atomic_writer.hpp"
#include "safetensors_format.hpp"
#include "tensor_bytes.hpp"
#include "text.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <istream>
#include <numeric>
#include <optional>
#include <ostream>

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

/// What a load reads: a file's mapping, or a copy of bytes from memory ("<memory>").
std::shared_ptr<SafetensorsState> open_safetensors(std::string path, BlobRef blob, const char* op) {
  auto s = std::make_shared<SafetensorsState>();
  s->path = std::move(path);
  s->file = std::move(blob);
  s->layout = parse_safetensors(s->file->bytes(), Source{op, s->path});
  s->keys.reserve(s->layout.tensors.size());
  for (size_t i = 0; i < s->layout.tensors.size(); ++i) {
    s->keys.push_back(s->layout.tensors[i].name);
    s->index.emplace(s->layout.tensors[i].name, i);
  }
  for (const auto& [k, v] : s->layout.metadata) s->metadata.emplace(k, v);
  return s;
}

std::shared_ptr<SafetensorsState> open_safetensors(const std::string& path, const char* op) {
  return open_safetensors(path, map_file(path, op), op);
}

constexpr const char* kMemory = "<memory>";

/// read_stream's general case: grow a buffer until the stream ends, then copy it once into
/// an aligned one.
template <class Read, class AtEnd, class MarkEnd>
BlobRef read_rest(std::vector<uint8_t> bytes, Read& read_into, AtEnd& at_end, MarkEnd& mark_end, const Source& src) {
  constexpr size_t kChunk = size_t{1} << 20;
  size_t used = bytes.size();
  while (!at_end()) {
    bytes.resize(used + std::max(kChunk, used / 2));
    const size_t got = read_into(bytes.data() + used, bytes.size() - used);
    used += got;
    if (got == 0) break;
  }
  mark_end();
  BlobRef blob = alloc_blob(used, src);
  if (used != 0) std::memcpy(blob->data, bytes.data(), used);
  return blob;
}

/// Everything left in the stream (loads read it to its end), in an aligned buffer tensors can
/// view. Read through the stream's buffer, not istream::read, so that a stream with
/// exceptions switched on does not throw at its end; a seekable stream is read straight into
/// a buffer of its remaining size, others grow a buffer that is copied once at the end.
BlobRef read_stream(std::istream& in, const Source& src) {
  using traits = std::istream::traits_type;
  EMBER_CHECK(in.good(), "{}the stream cannot be read (its state is not good before the load)", src.prefix());
  const std::istream::sentry ready(in, /*noskipws=*/true);
  std::streambuf* buf = in.rdbuf();
  EMBER_CHECK(ready && buf != nullptr, "{}the stream cannot be read", src.prefix());
  auto read_into = [&](uint8_t* p, size_t n) {
    size_t got = 0;
    while (got < n) {
      const std::streamsize k = buf->sgetn(reinterpret_cast<char*>(p + got), static_cast<std::streamsize>(n - got));
      if (k <= 0) break;
      got += static_cast<size_t>(k);
    }
    return got;
  };
  auto at_end = [&] { return traits::eq_int_type(buf->sgetc(), traits::eof()); };
  auto mark_end = [&] {
    if (!(in.exceptions() & std::ios::eofbit)) in.setstate(std::ios::eofbit);
  };
  // A seekable stream: its remaining size, read in one go when nothing more follows.
  const auto here = buf->pubseekoff(0, std::ios::cur, std::ios::in);
  const auto end = here == std::streampos(-1) ? here : buf->pubseekoff(0, std::ios::end, std::ios::in);
  if (end != std::streampos(-1) && buf->pubseekpos(here, std::ios::in) == here && end >= here) {
    const auto size = static_cast<uint64_t>(end - here);
    BlobRef blob = alloc_blob(size, src);
    const size_t got = read_into(blob->data, static_cast<size_t>(size));
    if (got < size) blob->size = got;  // shorter than it said: the parser reports a truncation
    if (got < size || at_end()) {
      mark_end();
      return blob;
    }
    // More than it said: read on as an unseekable stream, after what is in hand.
    std::vector<uint8_t> head(blob->data, blob->data + got);
    return read_rest(std::move(head), read_into, at_end, mark_end, src);
  }
  return read_rest({}, read_into, at_end, mark_end, src);
}

/// Bytes from memory, copied into an aligned buffer the tensors can view (the caller's
/// bytes need not outlive the load).
std::shared_ptr<SafetensorsState> open_safetensors_bytes(const void* data, size_t size, const char* op,
                                                         const char* source = kMemory) {
  EMBER_CHECK(data != nullptr || size == 0, "[{}] null data for {} bytes", op, size);
  BlobRef blob = alloc_blob(size, Source{op, source});
  if (size != 0) std::memcpy(blob->data, data, size);
  return open_safetensors(source, std::move(blob), op);
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

namespace {
NamedTensors all_tensors(const SafetensorsState& s, std::optional<DType> to, const char* op) {
  NamedTensors out;
  out.reserve(s.layout.tensors.size());
  for (const SafetensorsEntry& e : s.layout.tensors) out.emplace_back(e.name, make(s, e, to, op));
  return out;
}

/// The file's bytes in order, to `sink`: the header, then each tensor's data.
void write_safetensors(const NamedTensors& tensors, const Metadata& metadata, const Source& src,
                       const std::function<void(const void*, size_t)>& sink) {
  const std::string pre = src.prefix();
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

  sink(header.data(), header.size());
  for (size_t i : order) for_tensor_bytes(*tensors[i].second, false, sink);
}
}  // namespace

NamedTensors load_safetensors(const std::string& path, std::optional<DType> to) {
  return all_tensors(*open_safetensors(path, "load_safetensors"), to, "load_safetensors");
}

NamedTensors load_safetensors_bytes(const void* data, size_t size, std::optional<DType> to) {
  constexpr const char* op = "load_safetensors_bytes";
  return all_tensors(*open_safetensors_bytes(data, size, op), to, op);
}

NamedTensors load_safetensors_stream(std::istream& in, std::optional<DType> to) {
  constexpr const char* op = "load_safetensors";
  constexpr const char* kStream = "<stream>";
  return all_tensors(*open_safetensors(kStream, read_stream(in, Source{op, kStream}), op), to, op);
}

void save_safetensors(const std::string& path, const NamedTensors& tensors, const Metadata& metadata) {
  constexpr const char* op = "save_safetensors";
  // The writer (its temporary file) is made at the first bytes: after every check.
  std::optional<AtomicWriter> out;
  write_safetensors(tensors, metadata, Source{op, path}, [&](const void* p, size_t n) {
    if (!out) out.emplace(path, op);
    out->write(p, n);
  });
  out->commit();
}

std::vector<uint8_t> save_safetensors_bytes(const NamedTensors& tensors, const Metadata& metadata) {
  std::vector<uint8_t> bytes;
  uint64_t data_bytes = 0;
  for (const auto& [name, t] : tensors) data_bytes += static_cast<uint64_t>(t->numel * itemsize(t->dtype));
  bytes.reserve(static_cast<size_t>(data_bytes) + 4096);  // the data and a typical header
  write_safetensors(tensors, metadata, Source{"save_safetensors_bytes", kMemory}, [&](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
  });
  return bytes;
}

void save_safetensors_stream(std::ostream& out, const NamedTensors& tensors, const Metadata& metadata) {
  // Through the stream's buffer, not ostream::write, so that a failure is an ember::Error
  // even on a stream with exceptions switched on; the stream is marked bad as write would.
  const Source src{"save_safetensors", "<stream>"};
  auto fail = [&](const char* what, size_t n) {
    if (!(out.exceptions() & std::ios::badbit)) out.setstate(std::ios::badbit);
    EMBER_FAIL("{}{} {} bytes failed", src.prefix(), what, n);
  };
  EMBER_CHECK(out.good(), "{}the stream cannot be written (its state is not good before the save)", src.prefix());
  const std::ostream::sentry ready(out);
  std::streambuf* buf = out.rdbuf();
  EMBER_CHECK(ready && buf != nullptr, "{}the stream cannot be written", src.prefix());
  size_t total = 0;
  write_safetensors(tensors, metadata, src, [&](const void* p, size_t n) {
    if (buf->sputn(static_cast<const char*>(p), static_cast<std::streamsize>(n)) != static_cast<std::streamsize>(n))
      fail("writing", n);
    total += n;
  });
  if (buf->pubsync() != 0) fail("flushing", total);
}

}  // namespace detail

SafetensorsFile SafetensorsFile::from_bytes(const void* data, size_t size) {
  return SafetensorsFile(detail::open_safetensors_bytes(data, size, "SafetensorsFile::from_bytes"));
}

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

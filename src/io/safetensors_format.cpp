#include "safetensors_format.hpp"

#include "json_reader.hpp"
#include "text.hpp"

#include <ember/core/error.hpp>

#include <algorithm>
#include <limits>
#include <numeric>

namespace ember::io::detail {
namespace {

// Indexed by DType (Bool, U8, I8, I32, I64, F16, BF16, F32, F64).
constexpr std::string_view kNames[] = {"BOOL", "U8", "I8", "I32", "I64", "F16", "BF16", "F32", "F64"};
// Dtypes of the format that Ember has no type for: named apart from typos in errors.
constexpr std::string_view kForeign[] = {"I16", "U16", "U32", "U64", "F8_E4M3", "F8_E5M2", "F8_E8M0",
                                         "F4", "F6_E2M3", "F6_E3M2", "C64"};

std::string tensor_what(const std::string& name) { return "tensor " + quoted(name); }

SafetensorsEntry parse_entry(JsonReader& r, std::string name, const std::string& pre) {
  SafetensorsEntry e;
  e.name = std::move(name);
  std::string what = tensor_what(e.name);
  EMBER_CHECK(r.peek() == '{', "{}{}: expected an object with dtype, shape and data_offsets", pre, what);
  bool has_dtype = false, has_shape = false, has_offsets = false;
  auto once = [&](bool& seen, const char* field) {
    EMBER_CHECK(!seen, "{}{}: field '{}' appears twice", pre, what, field);
    seen = true;
  };
  r.object([&](const std::string& key) {
    if (key == "dtype") {
      once(has_dtype, "dtype");
      EMBER_CHECK(r.peek() == '"', "{}{}: dtype must be a string", pre, what);
      std::string d = r.string();
      auto t = dtype_from_safetensors(d);
      if (!t) {
        bool foreign = std::find(std::begin(kForeign), std::end(kForeign), d) != std::end(kForeign);
        EMBER_FAIL("{}{}: {} dtype {} (Ember reads F64 F32 F16 BF16 I64 I32 I8 U8 BOOL)", pre, what,
                   foreign ? "Ember has no type for the" : "unknown", quoted(d));
      }
      e.dtype = *t;
    } else if (key == "shape") {
      once(has_shape, "shape");
      EMBER_CHECK(r.peek() == '[', "{}{}: shape must be an array of integers", pre, what);
      r.array([&](size_t i) {
        EMBER_CHECK(i < kMaxRank, "{}{}: shape has more than {} dims", pre, what, kMaxRank);
        uint64_t d = r.u64();
        EMBER_CHECK(d <= uint64_t(std::numeric_limits<int64_t>::max()), "{}{}: shape dim {} is {}, over int64's range",
                    pre, what, i, d);
        e.shape.push_back(static_cast<int64_t>(d));
      });
    } else if (key == "data_offsets") {
      once(has_offsets, "data_offsets");
      EMBER_CHECK(r.peek() == '[', "{}{}: data_offsets must be an array [begin, end]", pre, what);
      size_t n = 0;
      r.array([&](size_t i) {
        EMBER_CHECK(i < 2, "{}{}: data_offsets must hold 2 integers, it holds more", pre, what);
        (i == 0 ? e.begin : e.end) = r.u64();
        n = i + 1;
      });
      EMBER_CHECK(n == 2, "{}{}: data_offsets must hold 2 integers, it holds {}", pre, what, n);
    } else {
      EMBER_FAIL("{}{}: unknown field {} (expected dtype, shape, data_offsets)", pre, what, quoted(key));
    }
  });
  EMBER_CHECK(has_dtype, "{}{}: missing field 'dtype'", pre, what);
  EMBER_CHECK(has_shape, "{}{}: missing field 'shape'", pre, what);
  EMBER_CHECK(has_offsets, "{}{}: missing field 'data_offsets'", pre, what);
  return e;
}

// Sorted positions of the names; fails on the first name that appears twice.
template <class V, class Name>
void check_unique(const V& items, Name name, const std::string& pre, const char* what) {
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return name(items[a]) < name(items[b]); });
  for (size_t i = 1; i < order.size(); ++i)
    EMBER_CHECK(name(items[order[i]]) != name(items[order[i - 1]]), "{}duplicate {} {}", pre, what,
                quoted(name(items[order[i]])));
}

}  // namespace

std::string_view safetensors_dtype_name(DType t) { return kNames[static_cast<int>(t)]; }

std::optional<DType> dtype_from_safetensors(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (kNames[i] == name) return static_cast<DType>(i);
  return std::nullopt;
}

SafetensorsLayout parse_safetensors(Bytes file, const Source& src) {
  const std::string pre = src.prefix();
  EMBER_CHECK(file.size() >= 8, "{}file is {} bytes, too short for the 8-byte header length (truncated?)", pre,
              file.size());
  const uint64_t n = le64(file.data());
  EMBER_CHECK(n <= kMaxSafetensorsHeader, "{}header length {} exceeds the limit of {} bytes", pre, n,
              kMaxSafetensorsHeader);
  EMBER_CHECK(n <= file.size() - 8, "{}header length {} runs past the end of the file, which has {} bytes after the "
              "length field (truncated?)", pre, n, file.size() - 8);
  const uint64_t region = file.size() - 8 - n;

  SafetensorsLayout out;
  out.data_start = 8 + n;
  JsonReader r(std::string_view(reinterpret_cast<const char*>(file.data() + 8), n), pre + "header: ");
  bool has_metadata = false;
  r.object([&](std::string key) {
    if (key != "__metadata__") {
      out.tensors.push_back(parse_entry(r, std::move(key), pre));
      return;
    }
    EMBER_CHECK(!has_metadata, "{}header: duplicate key '__metadata__'", pre);
    has_metadata = true;
    EMBER_CHECK(r.peek() == '{', "{}header: __metadata__ must be an object of strings", pre);
    r.object([&](std::string k) {
      EMBER_CHECK(r.peek() == '"', "{}header: __metadata__ value of {} must be a string", pre, quoted(k));
      out.metadata.emplace_back(std::move(k), r.string());
    });
  });
  r.end();
  check_unique(out.tensors, [](const SafetensorsEntry& e) -> const std::string& { return e.name; }, pre,
               "tensor name");
  check_unique(out.metadata, [](const auto& kv) -> const std::string& { return kv.first; }, pre,
               "__metadata__ key");

  for (const SafetensorsEntry& e : out.tensors) {
    std::string what = tensor_what(e.name);
    const std::optional<int64_t> numel = product_of_dims(e.shape);  // a zero anywhere: empty
    EMBER_CHECK(numel.has_value(), "{}{}: shape {} has more elements than int64 can count", pre, what, e.shape);
    int64_t nbytes = 0;
    EMBER_CHECK(!__builtin_mul_overflow(*numel, itemsize(e.dtype), &nbytes),
                "{}{}: shape {} of {} has more bytes than int64 can count", pre, what, e.shape,
                safetensors_dtype_name(e.dtype));
    EMBER_CHECK(e.begin <= e.end, "{}{}: data_offsets [{}, {}] end before they begin", pre, what, e.begin, e.end);
    EMBER_CHECK(e.end <= region, "{}{}: data_offsets [{}, {}] run past the end of the data region ({} bytes; "
                "truncated?)", pre, what, e.begin, e.end, region);
    EMBER_CHECK(e.end - e.begin == uint64_t(nbytes), "{}{}: data_offsets [{}, {}] hold {} bytes, but shape {} of {} "
                "needs {}", pre, what, e.begin, e.end, e.end - e.begin, e.shape, safetensors_dtype_name(e.dtype),
                nbytes);
  }
  // The format requires the tensors to tile the data region: sorted by offset, each begins
  // where the previous one ended, and the last ends at the region's end.
  std::vector<size_t> order(out.tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  auto& ts = out.tensors;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ts[a].begin != ts[b].begin ? ts[a].begin < ts[b].begin : ts[a].end < ts[b].end;
  });
  uint64_t covered = 0;
  const SafetensorsEntry* prev = nullptr;
  for (size_t i : order) {
    const SafetensorsEntry& e = ts[i];
    if (e.begin < covered)
      EMBER_FAIL("{}{} (data_offsets [{}, {}]) overlaps {} (data_offsets [{}, {}])", pre, tensor_what(e.name), e.begin,
                 e.end, tensor_what(prev->name), prev->begin, prev->end);
    EMBER_CHECK(e.begin == covered, "{}{} (data_offsets [{}, {}]) leaves a gap of {} bytes at offset {}: the tensors "
                "must cover the data region without holes", pre, tensor_what(e.name), e.begin, e.end,
                e.begin - covered, covered);
    covered = e.end;
    prev = &e;
  }
  EMBER_CHECK(covered == region, "{}the tensors cover {} of the {} bytes of the data region; the {} bytes after them "
              "belong to no tensor", pre, covered, region, region - covered);
  return out;
}

std::string safetensors_header(const std::vector<SafetensorsEntry>& entries,
                               const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::string json = "{";
  if (!metadata.empty()) {
    json += "\"__metadata__\":{";
    for (size_t i = 0; i < metadata.size(); ++i) {
      if (i) json += ',';
      append_json_string(json, metadata[i].first);
      json += ':';
      append_json_string(json, metadata[i].second);
    }
    json += '}';
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const SafetensorsEntry& e = entries[i];
    if (i || !metadata.empty()) json += ',';
    append_json_string(json, e.name);
    json += fmt::format(":{{\"dtype\":\"{}\",\"shape\":[", safetensors_dtype_name(e.dtype));
    for (size_t d = 0; d < e.shape.size(); ++d) json += fmt::format("{}{}", d ? "," : "", e.shape[d]);
    json += fmt::format("],\"data_offsets\":[{},{}]}}", e.begin, e.end);
  }
  json += '}';
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + json.size());
  put_le64(out, json.size());
  return out + json;
}

}  // namespace ember::io::detail

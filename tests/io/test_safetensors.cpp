// safetensors: round trips of every dtype and shape, the layout of written files, zero-copy
// loading from the mapping, the lazy reader, conversion on load, atomic writes, and the
// reference package's files (read exactly, and written back byte for byte).

#include "io_test_util.hpp"

#include <ember/io/safetensors.hpp>

#include "atomic_writer.hpp"
#include "safetensors_format.hpp"

#include <array>
#include <cerrno>
#include <sstream>

namespace test_safetensors {  // this file's own names in a unity build (tests/meson.build)

using namespace io_test;
using ember::io::Metadata;
using ember::io::SafetensorsFile;
using ember::io::TensorDict;

namespace {
TensorDict dict_of(const std::vector<std::pair<std::string, Tensor>>& items) {
  TensorDict d;
  for (const auto& [n, t] : items) d.insert(n, t);
  return d;
}
ember::io::detail::SafetensorsLayout layout_of(const std::string& path) {
  std::string bytes = read_bytes(path);
  return ember::io::detail::parse_safetensors(
      {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, {"test", path});
}
}  // namespace

TEST_CASE("safetensors: round trip of every dtype, 0-d and zero-size shapes, in order") {
  TempDir dir;
  auto items = every_dtype_and_shape();
  std::string path = dir.file("all.safetensors");
  io::save_safetensors(path, dict_of(items));
  TensorDict back = io::load_safetensors(path);
  REQUIRE(back.size() == items.size());
  size_t i = 0;
  for (const auto& [name, t] : back) {
    CHECK(name == items[i].first);
    check_same(t, items[i].second, name);
    ++i;
  }
  CHECK(io::load_safetensors_metadata(path).empty());
  CHECK(!has(read_bytes(path), "__metadata__"));
}

TEST_CASE("safetensors: metadata, unicode names and escapes round trip") {
  TempDir dir;
  std::string path = dir.file("m.safetensors");
  Metadata meta{{"format", "pt"},
                {"note", "quote \" backslash \\ newline \n tab \t bell \x07 é 漢字"},
                {"", "empty"}};
  TensorDict d{{"poids.é", ones({2})}, {"with \"quote\"", zeros({1}, TensorOptions(DType::I8))}, {"", ones({})}};
  io::save_safetensors(path, d, meta);
  CHECK(io::load_safetensors_metadata(path) == meta);
  TensorDict back = io::load_safetensors(path);
  CHECK(back.keys() == d.keys());
  for (const auto& [name, t] : d) check_same(back.at(name), t, name);
  // serde_json's escaping: control bytes as \u00xx, non-ASCII as is.
  std::string raw = read_bytes(path);
  CHECK(has(raw, "bell \\u0007 é"));
  CHECK(has(raw, "\"with \\\"quote\\\"\""));
}

TEST_CASE("safetensors: written layout: padded header, header order kept, data aligned and tiling the region") {
  TempDir dir;
  std::string path = dir.file("l.safetensors");
  // Sizes 1, 8, 2, 4 bytes in this order: the data is laid out by decreasing element size.
  TensorDict d{{"flag", ones({3}, TensorOptions(DType::Bool))}, {"big", ones({3}, TensorOptions(DType::F64))},
               {"half", ones({5}, TensorOptions(DType::F16))}, {"word", ones({1}, TensorOptions(DType::I32))}};
  io::save_safetensors(path, d, {{"k", "v"}});
  std::string raw = read_bytes(path);
  uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);
  CHECK(n % 8 == 0);
  CHECK(raw[8] == '{');
  CHECK(raw.substr(8, 17) == "{\"__metadata__\":{");
  size_t close = raw.rfind('}', 8 + n);
  CHECK(raw.substr(close + 1, 8 + n - close - 1).find_first_not_of(' ') == std::string::npos);
  auto l = layout_of(path);
  REQUIRE(l.tensors.size() == 4);
  CHECK(l.tensors[0].name == "flag");
  CHECK(l.tensors[3].name == "word");
  CHECK(l.tensors[1].begin == 0);   // big (8-byte) first
  CHECK(l.tensors[3].begin == 24);  // then word
  CHECK(l.tensors[2].begin == 28);  // then half
  CHECK(l.tensors[0].begin == 38);  // then flag
  CHECK(l.tensors[0].end == raw.size() - 8 - n);
  for (const auto& e : l.tensors) CHECK((l.data_start + e.begin) % uint64_t(itemsize(e.dtype)) == 0);
}

TEST_CASE("safetensors: loading views the mapping without a copy; the mapping lives as long as a tensor") {
  TempDir dir;
  std::string path = dir.file("z.safetensors");
  Tensor w = randn({64, 64});
  io::save_safetensors(path, {{"w", w}, {"b", arange(10)}});
  const void* data = nullptr;
  {
    TensorDict d = io::load_safetensors(path);
    data = d.at("w").raw_data();
    CHECK(inside_mapping_of(path, data, 64 * 64 * 4));
    CHECK(inside_mapping_of(path, d.at("b").raw_data(), 80));
    check_same(d.at("w"), w);
  }
  CHECK(!is_mapped(path));  // released with the last tensor

  Tensor kept;
  {
    SafetensorsFile f(path);
    kept = f.get("w");
    CHECK(is_mapped(path));
  }
  CHECK(is_mapped(path));  // the reader is gone, the tensor still holds the mapping
  check_same(kept, w);
  // Writes go to private copies of the pages, never to the file.
  std::string before = read_bytes(path);
  kept.mul_(2);
  check_same(kept, w * 2);
  CHECK(read_bytes(path) == before);
  kept = Tensor();
  CHECK(!is_mapped(path));
}

TEST_CASE("safetensors: saving over a file that loaded tensors still view leaves them intact") {
  // The writer renames a new file into place; the mapping keeps the old one alive (no SIGBUS).
  TempDir dir;
  std::string path = dir.file("m.safetensors");
  Tensor a = fixture_tensor(DType::F32, {256});
  io::save_safetensors(path, {{"x", a}});
  Tensor old = io::load_safetensors(path).at("x");
  io::save_safetensors(path, {{"x", zeros({256})}});
  check_same(old, a);
  check_same(io::load_safetensors(path).at("x"), zeros({256}));
}

TEST_CASE("safetensors: a misaligned tensor in someone else's file is copied, with the right values") {
  TempDir dir;
  std::string path = dir.file("mis.safetensors");
  // Header length 59 (not a multiple of 8): the f32 data starts at byte 67.
  std::string json = "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
  json.append(59 - json.size(), ' ');
  std::string file(8, '\0');
  file[0] = static_cast<char>(json.size());
  float v[2] = {1.5f, -2.0f};
  file += json + std::string(reinterpret_cast<const char*>(v), 8);
  write_bytes(path, file);
  Tensor x = io::load_safetensors(path).at("x");
  CHECK(reinterpret_cast<uintptr_t>(x.raw_data()) % 4 == 0);
  CHECK(!inside_mapping_of(path, x.raw_data()));
  CHECK(x.data_ptr<float>()[0] == 1.5f);
  CHECK(x.data_ptr<float>()[1] == -2.0f);
}

TEST_CASE("safetensors: SafetensorsFile reads the header, then single tensors on demand") {
  TempDir dir;
  std::string path = dir.file("lazy.safetensors");
  TensorDict d{{"b", arange(6).reshape({2, 3})}, {"a", ones({4}, TensorOptions(DType::BF16))}};
  io::save_safetensors(path, d, {{"who", "test"}});
  SafetensorsFile f(path);
  CHECK(f.path() == path);
  CHECK(f.keys() == std::vector<std::string>{"b", "a"});
  CHECK(f.contains("a"));
  CHECK(!f.contains("c"));
  CHECK(f.dtype("b") == DType::I64);
  CHECK(f.shape("b") == Shape{2, 3});
  CHECK(f.metadata().at("who") == "test");
  check_same(f.get("a"), d.at("a"));
  check_same(f.get("b", DType::F32), d.at("b").to(DType::F32));
  CHECK_ERROR(f.get("c"), "[SafetensorsFile::get]", "lazy.safetensors", "no tensor named 'c'", "'b', 'a'");
  CHECK_ERROR(f.shape("zz"), "[SafetensorsFile::shape]", "'zz'");
}

TEST_CASE("safetensors: to(dtype) converts on load") {
  TempDir dir;
  std::string path = dir.file("c.safetensors");
  Tensor x = fixture_tensor(DType::F32, {3, 4});
  io::save_safetensors(path, {{"x", x}, {"i", arange(5)}});
  TensorDict h = io::load_safetensors(path, DType::F16);
  check_same(h.at("x"), x.to(DType::F16));
  check_same(h.at("i"), arange(5).to(DType::F16));
  CHECK(!inside_mapping_of(path, h.at("x").raw_data()));
  TensorDict same = io::load_safetensors(path, DType::F32);  // no conversion needed: still a view
  CHECK(inside_mapping_of(path, same.at("x").raw_data()));
}

TEST_CASE("safetensors: strided, expanded and sliced tensors are written as their values") {
  TempDir dir;
  std::string path = dir.file("s.safetensors");
  Tensor base = fixture_tensor(DType::F32, {4, 6});
  TensorDict d{{"t", base.t()}, {"e", ones({3}).expand({2, 3})}, {"s", base.slice(1, 1, 6, 2)},
               {"n", base.narrow(0, 1, 2)}};
  io::save_safetensors(path, d);
  TensorDict back = io::load_safetensors(path);
  for (const auto& [name, t] : d) check_same(back.at(name), t.contiguous(), name);
  CHECK(back.at("t").is_contiguous());
}

TEST_CASE("safetensors: names the writer refuses") {
  TempDir dir;
  std::string path = dir.file("bad.safetensors");
  CHECK_ERROR(io::save_safetensors(path, {{"__metadata__", ones({1})}}), "[save_safetensors]", "'__metadata__'",
              "reserved");
  CHECK_ERROR(io::save_safetensors(path, {{std::string("bad\xff", 4), ones({1})}}), "[save_safetensors]",
              "not UTF-8");
  CHECK_ERROR(io::save_safetensors(path, {{"a", ones({1})}}, {{"k", "\xc3"}}), "[save_safetensors]", "not UTF-8");
  CHECK_ERROR((TensorDict{{"a", ones({1})}, {"a", ones({2})}}), "[OrderedDict]", "'a'", "already present");
  CHECK_ERROR(TensorDict().at("x"), "[OrderedDict]", "'x'");
  TensorDict emptied{{"w", ones({1})}};
  emptied["w"] = Tensor();  // insert refuses this; the writer checks again
  CHECK_ERROR(io::save_safetensors(path, emptied), "[TensorDict]", "'w'", "undefined");
  CHECK(!fs::exists(path));
  CHECK(dir.entries().empty());
}

namespace {
int g_fail_after = 0;
int fail_after(uint64_t offset, size_t n) { return offset + n > uint64_t(g_fail_after) ? ENOSPC : 0; }
struct FaultGuard {
  explicit FaultGuard(int after) {
    g_fail_after = after;
    ember::io::detail::g_write_fault = &fail_after;
  }
  ~FaultGuard() { ember::io::detail::g_write_fault = nullptr; }
};
}  // namespace

TEST_CASE("safetensors: a failing write leaves the previous file unchanged and says why") {
  TempDir dir;
  std::string path = dir.file("model.safetensors");
  io::save_safetensors(path, {{"w", ones({4})}});
  const std::string before = read_bytes(path);
  {
    FaultGuard fault(100);  // the disk fills up after 100 bytes
    CHECK_ERROR(io::save_safetensors(path, {{"w", randn({1000})}}), "[save_safetensors]", "model.safetensors",
                "No space left on device", "previous file is unchanged");
  }
  CHECK(read_bytes(path) == before);
  CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});  // no temporary file left behind
  CHECK_ERROR(io::save_safetensors(dir.file("no/such/dir/m.safetensors"), {{"w", ones({1})}}), "[save_safetensors]",
              "cannot create a temporary file", "No such file or directory");
  CHECK_ERROR(io::load_safetensors(dir.file("absent.safetensors")), "[load_safetensors]", "absent.safetensors",
              "cannot open", "No such file");
  CHECK_ERROR(io::load_safetensors(dir.path.string()), "[load_safetensors]", "not a regular file");
  // And a successful save replaces it.
  io::save_safetensors(path, {{"w", zeros({2})}});
  check_same(io::load_safetensors(path).at("w"), zeros({2}));
}

TEST_CASE("safetensors: bytes in memory and streams give the file's bytes and values") {
  TempDir dir;
  const std::string path = dir.file("all.safetensors");
  const TensorDict d = dict_of(every_dtype_and_shape());
  const Metadata meta{{"format", "pt"}};
  io::save_safetensors(path, d, meta);
  const std::string file = read_bytes(path);
  const std::vector<uint8_t> bytes = io::save_safetensors_bytes(d, meta);
  CHECK(std::string(bytes.begin(), bytes.end()) == file);
  std::ostringstream out;
  io::save_safetensors(out, d, meta);
  CHECK(out.str() == file);
  auto same_as_saved = [&](const TensorDict& back) {
    REQUIRE(back.size() == d.size());
    auto it = d.begin();
    for (const auto& [name, t] : back) {
      CHECK(name == it->first);
      check_same(t, it->second, name);
      ++it;
    }
  };
  {
    // The loaded tensors hold their own copy: the caller's buffer may go at once.
    std::vector<uint8_t> buffer = bytes;
    TensorDict back = io::load_safetensors_bytes(buffer.data(), buffer.size());
    std::fill(buffer.begin(), buffer.end(), uint8_t{0xAB});
    buffer.clear();
    buffer.shrink_to_fit();
    same_as_saved(back);
  }
  std::istringstream in(file);
  same_as_saved(io::load_safetensors(in));
  // Converted on load, and read lazily from memory.
  std::istringstream in2(file);
  for (const auto& [name, t] : io::load_safetensors(in2, DType::F64)) CHECK(t.dtype() == DType::F64);
  std::vector<uint8_t> scratch = bytes;
  SafetensorsFile f = SafetensorsFile::from_bytes(scratch.data(), scratch.size());
  std::fill(scratch.begin(), scratch.end(), uint8_t{0xCD});  // a copy was taken: this changes nothing
  scratch = {};
  CHECK(f.path() == "<memory>");
  CHECK(f.metadata() == meta);
  CHECK(f.keys().size() == d.size());
  check_same(f.get(f.keys()[0]), d.begin()->second, f.keys()[0]);
}

TEST_CASE("safetensors: streams read from their position, seekable or not, with exceptions on or off") {
  const TensorDict d{{"w", arange(6, DType::F32).view({2, 3})}, {"b", full({2}, 7, DType::I64)}};
  const std::vector<uint8_t> bytes = io::save_safetensors_bytes(d);
  const std::string file(bytes.begin(), bytes.end());
  auto same = [&](const TensorDict& back) {
    REQUIRE(back.size() == 2);
    check_same(back.at("w"), d.at("w"), "w");
    check_same(back.at("b"), d.at("b"), "b");
  };
  // Positioned past a prefix of other data.
  std::istringstream prefixed("junk" + file);
  prefixed.seekg(4);
  same(io::load_safetensors(prefixed));
  CHECK(prefixed.eof());
  // Exceptions switched on for every state: a valid stream still loads, a failing save is an
  // ember::Error (not std::ios_base::failure).
  std::istringstream strict(file);
  strict.exceptions(std::ios::failbit | std::ios::badbit | std::ios::eofbit);
  same(io::load_safetensors(strict));
  // A stream that cannot seek (a pipe, a socket) is read in chunks.
  struct NoSeekBuf : std::streambuf {
    explicit NoSeekBuf(std::string s) : text(std::move(s)) { setg(text.data(), text.data(), text.data() + text.size()); }
    std::string text;
  } unseekable(file);
  std::istream pipe(&unseekable);
  same(io::load_safetensors(pipe));
  std::ostringstream strict_out;
  strict_out.exceptions(std::ios::failbit | std::ios::badbit);
  io::save_safetensors(strict_out, d);
  CHECK(strict_out.str() == file);
}

TEST_CASE("safetensors: malformed bytes and failing streams are errors that name them") {
  std::vector<uint8_t> bytes = io::save_safetensors_bytes(TensorDict{{"w", ones({2, 3})}});
  CHECK_ERROR(io::load_safetensors_bytes(bytes.data(), bytes.size() - 1), "<memory>");
  CHECK_ERROR(io::load_safetensors_bytes(bytes.data(), 4), "<memory>");
  CHECK_ERROR(io::load_safetensors_bytes(nullptr, 8), "[load_safetensors_bytes]", "null");
  CHECK_ERROR(SafetensorsFile::from_bytes(bytes.data(), 3), "<memory>");
  std::istringstream truncated(std::string(bytes.begin(), bytes.end() - 5));
  CHECK_ERROR(io::load_safetensors(truncated), "<stream>");
  std::istringstream failed("x");
  failed.setstate(std::ios::failbit);
  CHECK_ERROR(io::load_safetensors(failed), "<stream>", "cannot be read");
  std::ostringstream bad;
  bad.setstate(std::ios::badbit);
  CHECK_ERROR(io::save_safetensors(bad, TensorDict{{"w", ones({2})}}), "[save_safetensors]", "<stream>");
  // A stream that fails partway: a buffer with room for the header only.
  struct SmallBuf : std::streambuf {
    std::array<char, 100> room{};
    SmallBuf() { setp(room.data(), room.data() + room.size()); }
  } small;
  std::ostream capped(&small);
  CHECK_ERROR(io::save_safetensors(capped, TensorDict{{"w", ones({1000})}}), "[save_safetensors]", "<stream>", "failed");
  CHECK(capped.bad());
  SmallBuf small2;
  std::ostream capped_strict(&small2);
  capped_strict.exceptions(std::ios::badbit);
  CHECK_ERROR(io::save_safetensors(capped_strict, TensorDict{{"w", ones({1000})}}), "[save_safetensors]", "failed");
}

TEST_CASE("safetensors: the reference package's file reads exactly and is written back byte for byte") {
  const std::string path = fixture("reference.safetensors");
  TensorDict d = io::load_safetensors(path);
  struct Want {
    const char* name;
    DType dtype;
    Shape shape;
  };
  const Want want[] = {{"i64", DType::I64, {2, 2}}, {"f64", DType::F64, {2, 3}}, {"empty", DType::F32, {0, 3}},
                       {"f32", DType::F32, {4}},    {"f32_scalar", DType::F32, {}}, {"i32", DType::I32, {5}},
                       {"bf16", DType::BF16, {3}},  {"f16", DType::F16, {2, 2}}, {"i8", DType::I8, {6}},
                       {"u8", DType::U8, {2, 3}},   {"bool", DType::Bool, {7}}};
  REQUIRE(d.size() == std::size(want));
  size_t i = 0;
  for (const auto& [name, t] : d) {
    CHECK(name == want[i].name);  // the header's order (the reference writer's: dtype, then name)
    check_same(t, fixture_tensor(want[i].dtype, want[i].shape), name);
    ++i;
  }
  Metadata meta = io::load_safetensors_metadata(path);
  CHECK(meta == Metadata{{"format", "np"}});
  TempDir dir;
  io::save_safetensors(dir.file("again.safetensors"), d, meta);
  CHECK(read_bytes(dir.file("again.safetensors")) == read_bytes(path));
}

}  // namespace test_safetensors

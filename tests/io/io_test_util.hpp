#pragma once
// Shared by the model-file tests: scratch directories, raw file access, error checks, the
// fixture values (as tools/make_io_fixtures.py computes them) and tensor comparison.

#include <doctest/doctest.h>
#include <ember/ember.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

#include "../error_text.hpp"

namespace io_test {

using namespace ember;
namespace fs = std::filesystem;

inline std::string data_dir() { return std::string(EMBER_TEST_DATA_DIR); }
inline std::string fixture(const std::string& name) { return data_dir() + "/io/" + name; }

/// A fresh directory, removed with everything in it at scope exit. In /dev/shm when there is
/// one: the malformed-file tests write thousands of small files, 50x faster on tmpfs.
struct TempDir {
  fs::path path;
  TempDir() {
    std::error_code ec;
    fs::path base = fs::is_directory("/dev/shm", ec) && access("/dev/shm", W_OK) == 0 ? fs::path("/dev/shm")
                                                                                       : fs::temp_directory_path();
    std::string tmpl = (base / "ember-io-test-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
  /// Names of the entries in the directory (to see that no temporary file was left).
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    return out;
  }
};

inline std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE_MESSAGE(f.good(), "cannot read " << path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
}

using ::ember_test::error_of;
using ::ember_test::has;

inline constexpr DType kAllDTypes[] = {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64,
                                       DType::I32, DType::I8,  DType::U8,  DType::Bool};

/// Element i of every fixture array of `dtype` (tools/make_io_fixtures.py: values()).
inline double fixture_value(DType dtype, int64_t i) {
  switch (dtype) {
    case DType::I64: return double(i * 1000003 - 7);
    case DType::I32: return double(i * 7919 - 50);
    case DType::I8: return double((i * 37) % 256 - 128);
    case DType::U8: return double((i * 37) % 256);
    case DType::Bool: return i % 3 == 0 ? 1.0 : 0.0;
    default: return double(i - 3) * 0.25;
  }
}

/// A row-major tensor of `shape` holding fixture_value(dtype, i).
inline Tensor fixture_tensor(DType dtype, const Shape& shape) {
  int64_t n = checked_numel(shape, "fixture_tensor");
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = fixture_value(dtype, i);
  Tensor t = n ? from_blob(v.data(), {n}, TensorOptions(DType::F64)).clone() : zeros({0}, TensorOptions(DType::F64));
  return t.to(dtype).reshape(shape);
}

/// Bytes of t in row-major order.
inline std::string tensor_bytes(const Tensor& t) {
  Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.raw_data()), static_cast<size_t>(c.nbytes()));
}

/// Same dtype, shape and element bytes.
inline void check_same(const Tensor& a, const Tensor& b, const std::string& what = "") {
  INFO(what);
  REQUIRE(a.defined());
  REQUIRE(b.defined());
  CHECK(a.dtype() == b.dtype());
  CHECK(a.sizes() == b.sizes());
  if (a.dtype() == b.dtype() && a.sizes() == b.sizes()) CHECK(tensor_bytes(a) == tensor_bytes(b));
}

/// True when [p, p + n) lies inside a mapping of `path` in this process (/proc/self/maps).
inline bool inside_mapping_of(const std::string& path, const void* p, size_t n = 1) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  std::string canon = fs::canonical(path).string();
  auto a = reinterpret_cast<uintptr_t>(p);
  while (std::getline(maps, line)) {
    if (line.size() < canon.size() || line.compare(line.size() - canon.size(), canon.size(), canon) != 0) continue;
    uintptr_t lo = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
    uintptr_t hi = std::stoull(line.substr(line.find('-') + 1), nullptr, 16);
    if (a >= lo && a + n <= hi) return true;
  }
  return false;
}
/// True when any mapping of `path` exists in this process.
inline bool is_mapped(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  std::string line, canon = fs::canonical(path).string();
  while (std::getline(maps, line))
    if (line.size() >= canon.size() && line.compare(line.size() - canon.size(), canon.size(), canon) == 0) return true;
  return false;
}

/// Tensors of every dtype over shapes that include 0-d and zero-size ones.
inline std::vector<std::pair<std::string, Tensor>> every_dtype_and_shape(bool with_bf16 = true) {
  std::vector<std::pair<std::string, Tensor>> out;
  const Shape shapes[] = {{}, {0}, {3}, {2, 3}, {2, 0, 4}, {1, 1, 5}};
  for (DType t : kAllDTypes) {
    if (t == DType::BF16 && !with_bf16) continue;
    for (size_t s = 0; s < std::size(shapes); ++s)
      out.emplace_back(fmt::format("{}_{}", dtype_name(t), s), fixture_tensor(t, shapes[s]));
  }
  return out;
}

}  // namespace io_test

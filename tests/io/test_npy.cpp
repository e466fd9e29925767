// .npy: round trips, numpy's own files (read exactly, written back byte for byte), fortran
// order, versions 2.0 and 3.0, bf16 refused, conversion on load, atomic writes.

#include "io_test_util.hpp"

#include <ember/io/numpy.hpp>

#include "atomic_writer.hpp"

#include <cerrno>

namespace test_npy {  // this file's own names in a unity build (tests/meson.build)

using namespace io_test;

TEST_CASE("npy: round trip of every dtype numpy has, 0-d and zero-size shapes") {
  TempDir dir;
  for (const auto& [name, t] : every_dtype_and_shape(/*with_bf16=*/false)) {
    std::string path = dir.file(name + ".npy");
    io::save_npy(path, t);
    check_same(io::load_npy(path), t, name);
  }
}

TEST_CASE("npy: numpy's files read exactly and are written back byte for byte") {
  struct Want {
    const char* file;
    DType dtype;
    Shape shape;
  };
  const Want want[] = {{"f64", DType::F64, {2, 3}}, {"f32", DType::F32, {4}},     {"f16", DType::F16, {2, 2}},
                       {"i64", DType::I64, {3}},    {"i32", DType::I32, {2, 2, 2}}, {"i8", DType::I8, {5}},
                       {"u8", DType::U8, {2, 3}},   {"bool", DType::Bool, {7}},  {"scalar_f32", DType::F32, {}},
                       {"empty_f32", DType::F32, {0, 3}}};
  TempDir dir;
  for (const Want& w : want) {
    std::string path = fixture(std::string(w.file) + ".npy");
    Tensor t = io::load_npy(path);
    check_same(t, fixture_tensor(w.dtype, w.shape), w.file);
    io::save_npy(dir.file("again.npy"), t);
    CHECK_MESSAGE(read_bytes(dir.file("again.npy")) == read_bytes(path), w.file);
  }
}

TEST_CASE("npy: fortran_order loads as a column-major view and saves back as fortran_order") {
  std::string path = fixture("fortran_f32.npy");
  Tensor t = io::load_npy(path);
  CHECK(t.sizes() == Shape{3, 4});
  CHECK(t.strides() == Shape{1, 3});  // column-major: no copy
  CHECK(inside_mapping_of(path, t.raw_data(), 48));
  check_same(t.contiguous(), fixture_tensor(DType::F32, {3, 4}));
  TempDir dir;
  io::save_npy(dir.file("f.npy"), t);
  CHECK(read_bytes(dir.file("f.npy")) == read_bytes(path));
  // A transposed Ember tensor is written the same way np.save writes a transposed array.
  Tensor x = fixture_tensor(DType::F64, {4, 3}).t();
  io::save_npy(dir.file("t.npy"), x);
  CHECK(has(read_bytes(dir.file("t.npy")), "'fortran_order': True, 'shape': (3, 4), }"));
  check_same(io::load_npy(dir.file("t.npy")).contiguous(), x.contiguous());
  // Neither order (a slice with a step): written row-major from a copy.
  Tensor s = fixture_tensor(DType::I32, {4, 6}).slice(1, 0, 6, 2);
  io::save_npy(dir.file("s.npy"), s);
  CHECK(has(read_bytes(dir.file("s.npy")), "'fortran_order': False"));
  check_same(io::load_npy(dir.file("s.npy")), s.contiguous());
}

TEST_CASE("npy: versions 2.0 and 3.0") {
  for (const char* f : {"v2_f32.npy", "v3_f32.npy"}) {
    std::string bytes = read_bytes(fixture(f));
    CHECK(bytes[6] == (f[1] == '2' ? 2 : 3));
    check_same(io::load_npy(fixture(f)), fixture_tensor(DType::F32, {2, 3}), f);
  }
}

TEST_CASE("npy: bf16 has no numpy dtype, so saving it fails clearly") {
  TempDir dir;
  CHECK_ERROR(io::save_npy(dir.file("b.npy"), ones({2}, TensorOptions(DType::BF16))), "[save_npy]", "b.npy", "bf16",
              "no .npy dtype");
  CHECK(dir.entries().empty());
}

TEST_CASE("npy: to(dtype) on load, and the loaded tensor views the file") {
  std::string path = fixture("i64.npy");
  Tensor t = io::load_npy(path);
  CHECK(inside_mapping_of(path, t.raw_data(), 24));
  check_same(io::load_npy(path, DType::F64), fixture_tensor(DType::I64, {3}).to(DType::F64));
}

namespace {
int g_fail_after = 0;
int fail_after(uint64_t offset, size_t n) { return offset + n > uint64_t(g_fail_after) ? EIO : 0; }
}  // namespace

TEST_CASE("npy: a failing write leaves the previous file unchanged") {
  TempDir dir;
  std::string path = dir.file("x.npy");
  io::save_npy(path, arange(3));
  const std::string before = read_bytes(path);
  g_fail_after = 130;
  ember::io::detail::g_write_fault = &fail_after;
  std::string msg = error_of([&] { io::save_npy(path, arange(1000)); });
  ember::io::detail::g_write_fault = nullptr;
  CHECK(has(msg, "[save_npy]"));
  CHECK(has(msg, "Input/output error"));
  CHECK(has(msg, "previous file is unchanged"));
  CHECK(read_bytes(path) == before);
  CHECK(dir.entries() == std::vector<std::string>{"x.npy"});
}

}  // namespace test_npy

// .npz: round trips stored and deflated, numpy's archives (zip64 local headers included),
// the zip structure Ember writes, the 4 GiB limit, atomic writes; and the export of
// Ember-written files for tools/make_io_fixtures.py --check.

#include "io_test_util.hpp"

#include <ember/io/numpy.hpp>
#include <ember/io/safetensors.hpp>

#include "atomic_writer.hpp"
#include "zip.hpp"

#include <cerrno>

namespace test_npz {  // this file's own names in a unity build (tests/meson.build)

using namespace io_test;
using ember::io::TensorDict;

namespace {
TensorDict every_npy_dtype() {
  TensorDict d;
  for (const auto& [n, t] : every_dtype_and_shape(/*with_bf16=*/false)) d.insert(n, t);
  d.insert("dir/sub name é", fixture_tensor(DType::F32, {2, 2}));
  d.insert("transposed", fixture_tensor(DType::F64, {3, 5}).t());
  return d;
}
std::vector<ember::io::detail::ZipMember> members_of(const std::string& bytes, const std::string& path) {
  return ember::io::detail::read_zip({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, {"test", path});
}
}  // namespace

TEST_CASE("npz: round trip, stored and deflated, order and names kept") {
  TempDir dir;
  TensorDict d = every_npy_dtype();
  for (bool compress : {false, true}) {
    std::string path = dir.file(compress ? "c.npz" : "s.npz");
    io::save_npz(path, d, compress);
    TensorDict back = io::load_npz(path);
    CHECK(back.keys() == d.keys());
    for (const auto& [name, t] : d) check_same(back.at(name).contiguous(), t.contiguous(), name);
    std::string bytes = read_bytes(path);
    for (const auto& m : members_of(bytes, path)) CHECK(m.method == (compress ? 8 : 0));
  }
  CHECK(read_bytes(dir.file("c.npz")).size() < read_bytes(dir.file("s.npz")).size());
  CHECK(dir.entries().size() == 2);
}

TEST_CASE("npz: numpy's savez and savez_compressed archives read exactly") {
  for (const char* f : {"savez.npz", "savez_compressed.npz"}) {
    TensorDict d = io::load_npz(fixture(f));
    CHECK(d.keys() == std::vector<std::string>{"a", "b", "c/d"});
    check_same(d.at("a"), fixture_tensor(DType::F32, {2, 3}), f);
    check_same(d.at("b"), fixture_tensor(DType::I64, {5}), f);
    check_same(d.at("c/d"), fixture_tensor(DType::Bool, {3}), f);
  }
  check_same(io::load_npz(fixture("savez.npz"), DType::F64).at("b"), fixture_tensor(DType::I64, {5}).to(DType::F64));
}

TEST_CASE("npz: members are the .npy bytes np.save writes; output is deterministic") {
  TempDir dir;
  Tensor a = io::load_npy(fixture("f64.npy")), b = io::load_npy(fixture("bool.npy"));
  std::string path = dir.file("m.npz");
  io::save_npz(path, {{"f64", a}, {"bool", b}});
  std::string bytes = read_bytes(path);
  auto members = members_of(bytes, path);
  REQUIRE(members.size() == 2);
  CHECK(members[0].name == "f64.npy");
  CHECK(members[1].name == "bool.npy");
  for (const auto& m : members) {
    std::string npy = bytes.substr(m.data_offset, m.size);
    CHECK_MESSAGE(npy == read_bytes(fixture(m.name)), m.name);
  }
  io::save_npz(dir.file("m2.npz"), {{"f64", a}, {"bool", b}});
  CHECK(read_bytes(dir.file("m2.npz")) == bytes);
}

TEST_CASE("npz: members or archives of 4 GiB need zip64, which Ember refuses before writing") {
  TempDir dir;
  // 2^30 + 1 f32 elements from one stored value: 4 GiB of logical data, 4 bytes of memory.
  Tensor huge = ones({1}).expand({(int64_t(1) << 30) + 1});
  CHECK_ERROR(io::save_npz(dir.file("h.npz"), {{"huge", huge}}), "[save_npz]", "member 'huge.npy'", "4 GiB",
              "zip64");
  CHECK(dir.entries().empty());
  CHECK_ERROR(io::save_npz(dir.file("b.npz"), {{"x", ones({1})}, {"y", ones({1}, TensorOptions(DType::BF16))}}),
              "[save_npz]", "tensor 'y'", "bf16");
}

namespace {
int fail_all(uint64_t, size_t) { return ENOSPC; }
}  // namespace

TEST_CASE("npz: a failing write leaves the previous file unchanged") {
  TempDir dir;
  std::string path = dir.file("d.npz");
  io::save_npz(path, {{"x", arange(4)}});
  const std::string before = read_bytes(path);
  ember::io::detail::g_write_fault = &fail_all;
  std::string msg = error_of([&] { io::save_npz(path, {{"x", arange(400)}}, true); });
  ember::io::detail::g_write_fault = nullptr;
  CHECK(has(msg, "[save_npz]"));
  CHECK(has(msg, "No space left on device"));
  CHECK(read_bytes(path) == before);
  CHECK(dir.entries() == std::vector<std::string>{"d.npz"});
}

// Writes one file of each kind for tools/make_io_fixtures.py --check (the reference readers).
// Without EMBER_IO_EXPORT_DIR they go to a scratch directory and are read back by Ember.
TEST_CASE("io: export of Ember-written files for the reference readers") {
  TempDir scratch;
  const char* env = std::getenv("EMBER_IO_EXPORT_DIR");
  std::string out = env ? env : scratch.path.string();
  fs::create_directories(out);
  TensorDict all;
  for (const auto& [n, t] : every_dtype_and_shape()) all.insert(n, t);
  io::save_safetensors(out + "/ember_all.safetensors", all, {{"format", "pt"}, {"writer", "ember"}});
  io::save_npy(out + "/ember_f32.npy", fixture_tensor(DType::F32, {2, 3}));
  io::save_npy(out + "/ember_fortran.npy", fixture_tensor(DType::F64, {4, 3}).t());
  io::save_npy(out + "/ember_scalar_bool.npy", ones({}, TensorOptions(DType::Bool)));
  io::save_npz(out + "/ember_stored.npz", every_npy_dtype());
  io::save_npz(out + "/ember_deflated.npz", every_npy_dtype(), true);
  CHECK(io::load_safetensors(out + "/ember_all.safetensors").size() == all.size());
  CHECK(io::load_npz(out + "/ember_deflated.npz").size() == every_npy_dtype().size());
}

}  // namespace test_npz

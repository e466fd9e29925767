// Edges of writing and reading files found by comparing Ember with numpy, cnpy and
// torch.save: long file names, symbolic links and permissions of the file replaced, the
// byte-order marks numpy accepts, and empty arrays whose other dims are huge.

#include "io_test_util.hpp"

#include <ember/io/numpy.hpp>
#include <ember/io/safetensors.hpp>

#include <sys/stat.h>

namespace test_file_edges {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using namespace io_test;

namespace {
/// A version 1.0 .npy file with header dict `dict` (padded as numpy pads it) and `data`.
std::string npy_file(const std::string& dict, const std::string& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}
std::vector<double> vals(const Tensor& t) {
  Tensor h = t.to(DType::F64).contiguous();
  return std::vector<double>(h.data_ptr<double>(), h.data_ptr<double>() + h.numel());
}
mode_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}
}  // namespace

TEST_CASE("file edges: a target name near NAME_MAX still saves, leaving no temporary file") {
  TempDir dir;
  std::string path = dir.file(std::string(240, 'a') + ".safetensors");  // 252 bytes: a valid name
  io::save_safetensors(path, io::TensorDict{{"x", arange(3)}});
  CHECK(vals(io::load_safetensors(path).at("x")) == std::vector<double>{0, 1, 2});
  io::save_npy(dir.file(std::string(250, 'b') + ".npy"), arange(2));
  CHECK(dir.entries().size() == 2);
}

TEST_CASE("file edges: saving through a symbolic link updates the file it names") {
  TempDir dir;
  std::string target = dir.file("ckpt_1000.safetensors"), link = dir.file("last.safetensors");
  io::save_safetensors(target, io::TensorDict{{"x", zeros({2})}});
  std::filesystem::create_symlink("ckpt_1000.safetensors", link);
  io::save_safetensors(link, io::TensorDict{{"x", ones({2})}});
  CHECK(std::filesystem::is_symlink(link));
  CHECK(vals(io::load_safetensors(target).at("x")) == std::vector<double>{1, 1});
  CHECK(dir.entries().size() == 2);
}

TEST_CASE("file edges: a replaced file keeps its permissions; a read-only one is refused") {
  TempDir dir;
  std::string path = dir.file("private.npy");
  io::save_npy(path, arange(3));
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  io::save_npy(path, arange(4));
  CHECK(mode_of(path) == 0600);
  CHECK(vals(io::load_npy(path)).size() == 4);
  REQUIRE(::chmod(path.c_str(), 0444) == 0);
  if (::geteuid() != 0) {  // root may write anything, as open() would let it
    CHECK_ERROR(io::save_npy(path, arange(5)), "[save_npy]", "not writable");
    CHECK(vals(io::load_npy(path)).size() == 4);
  }
}

TEST_CASE("file edges: a target that is not a regular file is refused, not replaced") {
  TempDir dir;
  std::string fifo = dir.file("pipe"), sub = dir.file("sub");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  CHECK_ERROR(io::save_npy(fifo, arange(3)), "[save_npy]", "pipe", "not a regular file (a FIFO)");
  struct stat st {};
  REQUIRE(::stat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  REQUIRE(std::filesystem::create_directory(sub));
  CHECK_ERROR(io::save_safetensors(sub, io::TensorDict{{"x", zeros({2})}}), "[save_safetensors]",
              "not a regular file (a directory)");
  CHECK(std::filesystem::is_directory(sub));
  // A path that cannot be looked up (a symbolic link loop) is refused, not replaced.
  std::string loop = dir.file("loop");
  std::filesystem::create_symlink("loop", loop);
  CHECK_ERROR(io::save_npy(loop, arange(3)), "[save_npy]", "cannot look it up");
  CHECK(std::filesystem::is_symlink(loop));
  CHECK(dir.entries().size() == 3);  // no temporary file left behind
}

TEST_CASE("file edges: npy byte-order marks numpy accepts") {
  TempDir dir;
  std::string path = dir.file("x.npy");
  // cnpy writes '<u1' / '<b1'; '=' is the native (little-endian) order.
  write_bytes(path, npy_file("{'descr': '<u1', 'fortran_order': False, 'shape': (3,), }", "\x01\x02\xff"));
  Tensor u = io::load_npy(path);
  CHECK(u.dtype() == DType::U8);
  CHECK(vals(u) == std::vector<double>{1, 2, 255});
  write_bytes(path, npy_file("{'descr': '>i1', 'fortran_order': False, 'shape': (2,), }", "\x01\xff"));
  CHECK(vals(io::load_npy(path)) == std::vector<double>{1, -1});
  write_bytes(path, npy_file("{'descr': '<b1', 'fortran_order': False, 'shape': (2,), }", std::string("\x01\x00", 2)));
  CHECK(io::load_npy(path).dtype() == DType::Bool);
  float f[2] = {1.5f, -2.0f};
  write_bytes(path, npy_file("{'descr': '=f4', 'fortran_order': False, 'shape': (2,), }",
                             std::string(reinterpret_cast<const char*>(f), 8)));
  CHECK(vals(io::load_npy(path)) == std::vector<double>{1.5, -2.0});
  write_bytes(path, npy_file("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", std::string(8, '\0')));
  CHECK_ERROR(io::load_npy(path), "[load_npy]", "big-endian");
  write_bytes(path, npy_file("{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", std::string(4, '\0')));
  CHECK_ERROR(io::load_npy(path), "[load_npy]", "no Ember dtype");
}

TEST_CASE("file edges: an empty array whose other dims are huge loads in any dim order") {
  TempDir dir;
  std::string path = dir.file("e.npy");
  for (const char* shape : {"(0, 4611686018427387904, 4611686018427387904)",
                            "(4611686018427387904, 4611686018427387904, 0)"}) {
    CAPTURE(shape);
    write_bytes(path, npy_file(std::string("{'descr': '<f4', 'fortran_order': False, 'shape': ") + shape + ", }", ""));
    Tensor t = io::load_npy(path);
    CHECK(t.numel() == 0);
    CHECK(t.dim() == 3);
    io::save_npy(dir.file("t.npy"), t.transpose(0, 2));
    CHECK(io::load_npy(dir.file("t.npy")).numel() == 0);
  }
  // The strides of such a tensor saturate instead of overflowing (UBSan checks this in CI).
  Tensor big = empty({0, int64_t{1} << 62, int64_t{1} << 62});
  CHECK(big.numel() == 0);
  CHECK(big.stride(0) == std::numeric_limits<int64_t>::max());
  CHECK(empty({int64_t{1} << 62, int64_t{1} << 62, 0}).numel() == 0);
  CHECK_THROWS_AS(empty({int64_t{1} << 62, int64_t{1} << 62}), Error);
}

TEST_CASE("file edges: a link to a file not written yet, and a chain of links") {
  TempDir dir;
  std::filesystem::create_symlink("missing.npy", dir.file("dangling.npy"));
  io::save_npy(dir.file("dangling.npy"), arange(2));
  CHECK(std::filesystem::is_symlink(dir.file("dangling.npy")));
  CHECK(vals(io::load_npy(dir.file("missing.npy"))) == std::vector<double>{0, 1});
  std::filesystem::create_symlink("link2.npy", dir.file("link1.npy"));
  std::filesystem::create_symlink("end.npy", dir.file("link2.npy"));
  io::save_npy(dir.file("link1.npy"), arange(3));
  CHECK(std::filesystem::is_symlink(dir.file("link1.npy")));
  CHECK(std::filesystem::is_symlink(dir.file("link2.npy")));
  CHECK(vals(io::load_npy(dir.file("end.npy"))) == std::vector<double>{0, 1, 2});
}

}  // namespace test_file_edges

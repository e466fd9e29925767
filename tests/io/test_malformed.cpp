// Hostile input: every file in tests/data/malformed (tools/make_malformed.py) must fail with
// an ember::Error that names the op and the file and holds the fragments expected.txt lists.

#include "io_test_util.hpp"

#include <ember/io/numpy.hpp>
#include <ember/io/safetensors.hpp>

#include <set>
#include <sstream>

namespace test_malformed {  // this file's own names in a unity build (tests/meson.build)

using namespace io_test;

namespace {

struct Case {
  std::string file, loader;
  std::vector<std::string> fragments;
};

std::vector<Case> read_manifest(const std::string& path) {
  std::vector<Case> cases;
  std::istringstream in(read_bytes(path));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cols;
    std::istringstream ls(line);
    for (std::string c; std::getline(ls, c, '\t');) cols.push_back(c);
    REQUIRE_MESSAGE(cols.size() >= 3, "bad manifest line: " << line);
    cases.push_back({cols[0], cols[1], {cols.begin() + 2, cols.end()}});
  }
  return cases;
}

// Loads `path` with the named loader; returns the op name its errors must carry.
std::string load_with(const std::string& loader, const std::string& path) {
  if (loader == "safetensors") {
    (void)io::load_safetensors(path);
    return "[load_safetensors]";
  }
  if (loader == "safetensors_metadata") {
    (void)io::load_safetensors_metadata(path);
    return "[load_safetensors_metadata]";
  }
  if (loader == "safetensors_file") {
    io::SafetensorsFile f(path);
    return "[SafetensorsFile]";
  }
  if (loader == "npy") {
    (void)io::load_npy(path);
    return "[load_npy]";
  }
  if (loader == "npz") {
    (void)io::load_npz(path);
    return "[load_npz]";
  }
  FAIL("unknown loader " << loader);
  return "";
}

const char* op_of(const std::string& loader) {
  if (loader == "safetensors") return "[load_safetensors]";
  if (loader == "safetensors_metadata") return "[load_safetensors_metadata]";
  if (loader == "safetensors_file") return "[SafetensorsFile]";
  if (loader == "npy") return "[load_npy]";
  return "[load_npz]";
}

}  // namespace

TEST_CASE("malformed files: each fails with an ember::Error naming the op, the file and the field") {
  const std::string dir = data_dir() + "/malformed";
  std::vector<Case> cases = read_manifest(dir + "/expected.txt");
  CHECK(cases.size() >= 100);
  std::set<std::string> listed;
  for (const Case& c : cases) {
    listed.insert(c.file);
    const std::string path = dir + "/" + c.file;
    std::string msg = error_of([&] { load_with(c.loader, path); });
    INFO(c.file << " -> " << msg);
    CHECK(has(msg, op_of(c.loader)));
    CHECK(has(msg, c.file));
    for (const std::string& f : c.fragments) CHECK_MESSAGE(has(msg, f), "lacks '" << f << "'");
  }
  // Every file in the directory is checked.
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name != "expected.txt") CHECK_MESSAGE(listed.count(name) == 1, name << " is not in expected.txt");
  }
}

TEST_CASE("malformed files: truncating a valid file anywhere fails cleanly") {
  TempDir tmp;
  for (const char* f : {"reference.safetensors", "f64.npy", "savez.npz", "savez_compressed.npz"}) {
    const std::string bytes = read_bytes(fixture(f));
    const std::string name = std::string(f);
    const std::string ext = name.substr(name.rfind('.'));
    for (size_t n = 0; n < bytes.size(); ++n) {
      std::string path = tmp.file("cut" + ext);
      write_bytes(path, bytes.substr(0, n));
      std::string msg = error_of([&] {
        if (ext == ".safetensors") (void)io::load_safetensors(path);
        else if (ext == ".npy") (void)io::load_npy(path);
        else (void)io::load_npz(path);
      });
      CHECK_MESSAGE(has(msg, "cut" + ext), f << " cut to " << n << " bytes -> " << msg);
    }
  }
}

TEST_CASE("malformed files: flipping any byte of a valid file either fails with an Error or loads") {
  // Not every flipped byte is detectable (tensor data has no checksum in these formats), but
  // none may crash or escape as anything but ember::Error; npz members carry a CRC, so there
  // a flipped data byte must fail too.
  TempDir tmp;
  for (const char* f : {"reference.safetensors", "fortran_f32.npy", "savez.npz", "savez_compressed.npz"}) {
    const std::string bytes = read_bytes(fixture(f));
    const std::string name = std::string(f);
    const std::string ext = name.substr(name.rfind('.'));
    int failed = 0;
    for (size_t i = 0; i < bytes.size(); ++i) {
      std::string b = bytes;
      b[i] = static_cast<char>(b[i] ^ 0x5a);
      std::string path = tmp.file("flip" + ext);
      write_bytes(path, b);
      std::string msg = error_of([&] {
        if (ext == ".safetensors") (void)io::load_safetensors(path);
        else if (ext == ".npy") (void)io::load_npy(path);
        else (void)io::load_npz(path);
      });
      if (msg == "<no error>") continue;
      ++failed;
      CHECK_MESSAGE(has(msg, "flip" + ext), f << " byte " << i << " -> " << msg);
    }
    CHECK(failed > 0);
  }
}

}  // namespace test_malformed

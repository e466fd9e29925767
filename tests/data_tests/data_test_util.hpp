#pragma once
// Helpers shared by the data tests: error capture, temporary directories, a watchdog for
// tests that could hang, and exact tensor comparison.

#include <doctest/doctest.h>
#include <ember/data.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../error_text.hpp"

namespace data_test {

using ::ember_test::error_of;
using ::ember_test::has;

/// A fresh directory under the system's temporary directory, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ember-data-XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    REQUIRE(mkdtemp(buf.data()) != nullptr);
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Aborts the test binary with a message if not disarmed within `seconds`: a hang becomes a
/// failure naming what hung, sooner than meson's timeout.
class Watchdog {
 public:
  Watchdog(double seconds, std::string what) : what_(std::move(what)) {
    thread_ = std::thread([this, seconds] {
      std::unique_lock<std::mutex> l(m_);
      if (!cv_.wait_for(l, std::chrono::duration<double>(seconds), [&] { return done_; })) {
        std::fprintf(stderr, "watchdog: '%s' did not finish within %.0f s (hang)\n", what_.c_str(), seconds);
        std::fflush(stderr);
        std::abort();
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> l(m_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::string what_;
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

/// Same shape, dtype and bytes (bit-identical, NaNs included).
inline bool same_bits(const ember::Tensor& a, const ember::Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  ember::Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), static_cast<size_t>(ca.nbytes())) == 0;
}
inline bool same_bits(const std::vector<ember::Tensor>& a, const std::vector<ember::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_bits(a[i], b[i])) return false;
  return true;
}

/// The elements of a tensor as doubles, row-major.
inline std::vector<double> values(const ember::Tensor& t) {
  ember::Tensor c = t.to(ember::DType::F64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

}  // namespace data_test

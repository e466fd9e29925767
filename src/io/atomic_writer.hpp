#pragma once
// Streaming atomic file writes (model files, traces): the bytes go to a hidden temporary file
// in the target's directory, which is fsync'ed and renamed over the target only by
// commit(). Any failure before that (or an exception unwinding past the writer) removes the
// temporary file, so the previous file at the path is never touched. It streams, so a 10 GB
// model is never assembled in memory, and it can patch bytes it wrote earlier (zip local
// headers). Like a plain write, it follows a symbolic link to the file it names, keeps an
// existing file's permissions and refuses a read-only one.

#include "format_common.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace ember::io::detail {

class AtomicWriter {
 public:
  /// Creates the temporary file; fails with "[op] 'path': ..." and the system's reason.
  AtomicWriter(std::string path, const char* op);
  ~AtomicWriter();
  AtomicWriter(const AtomicWriter&) = delete;
  AtomicWriter& operator=(const AtomicWriter&) = delete;

  void write(const void* data, size_t n);
  /// Overwrites bytes written earlier (offset + n <= offset()).
  void write_at(uint64_t offset, const void* data, size_t n);
  /// Bytes written so far.
  uint64_t offset() const { return flushed_ + buf_.size(); }
  /// Flushes, fsyncs and renames the temporary file over the path.
  void commit();

 private:
  void flush();
  void write_fd(const void* data, size_t n, uint64_t at);
  /// `at`: the byte being written, or kNoByte for steps that write none (fsync, rename).
  [[noreturn]] void fail_errno(const char* what, int err, uint64_t at);
  static constexpr uint64_t kNoByte = ~uint64_t(0);

  std::string path_;    // as the caller named it (messages)
  std::string target_;  // the file written: path_ through symbolic links
  std::string tmp_;
  const char* op_;
  int fd_ = -1;
  uint64_t flushed_ = 0;
  std::vector<char> buf_;  // small writes (headers) are gathered; tensor data goes straight through
};

/// For tests only: when set, called before every write to a temporary file with the offset
/// and size of the write; a nonzero return fails that write with that errno value (ENOSPC
/// to simulate a full disk).
extern int (*g_write_fault)(uint64_t offset, size_t n);

}  // namespace ember::io::detail

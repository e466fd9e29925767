#include "atomic_writer.hpp"

#include <ember/core/error.hpp>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ember::io::detail {

int (*g_write_fault)(uint64_t offset, size_t n) = nullptr;

namespace {
constexpr size_t kBufferSize = size_t{1} << 20;
std::atomic<uint64_t> g_tmp_counter{0};

/// Where the bytes for `path` really go: through symbolic links (a chain of them, and one to
/// a file that does not exist yet) to the file they name, as open() would write, so
/// `last.safetensors -> ckpt_1000.safetensors` updates the checkpoint and keeps the link;
/// `path` itself otherwise.
std::string resolve_target(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p = path;
  std::error_code ec;
  for (int depth = 0; depth < 40 && fs::is_symlink(fs::symlink_status(p, ec)); ++depth) {
    fs::path link = fs::read_symlink(p, ec);
    if (ec) return path;
    p = link.is_absolute() ? link : p.parent_path() / link;
  }
  return p.string();
}
}  // namespace

AtomicWriter::AtomicWriter(std::string path, const char* op) : path_(std::move(path)), op_(op) {
  target_ = resolve_target(path_);
  // An existing file keeps its permissions, and one the user made read-only is refused, as
  // open() for writing would refuse it (the rename alone would replace it).
  struct stat st {};
  const bool exists = ::stat(target_.c_str(), &st) == 0;
  // What open() would refuse is refused: a path that cannot be looked up for another reason
  // than its absence (a symbolic link loop, a file used as a directory, no search permission).
  EMBER_CHECK(exists || errno == ENOENT, "{}cannot look it up: {}", Source{op_, path_}.prefix(), std::strerror(errno));
  // Only a regular file may be replaced: the rename would put a plain file in the place of a
  // device (/dev/null), a FIFO or a socket, and fail on a directory after writing it all.
  EMBER_CHECK(!exists || S_ISREG(st.st_mode),
              "{}it exists and is not a regular file (a {}); saving writes a temporary file and renames it to "
              "that name, which only a regular file can take",
              Source{op_, path_}.prefix(),
              S_ISDIR(st.st_mode)    ? "directory"
              : S_ISFIFO(st.st_mode) ? "FIFO"
              : S_ISSOCK(st.st_mode) ? "socket"
                                     : "device");
  EMBER_CHECK(!exists || ::access(target_.c_str(), W_OK) == 0,
              "{}the file is not writable: {}", Source{op_, path_}.prefix(), std::strerror(errno));
  // The temporary file: hidden, in the target's directory (rename cannot cross file
  // systems), and short whatever the target's name (a 250-byte name plus a suffix would pass
  // NAME_MAX). Not mkstemp: its files are created 0600, and a saved model should get the
  // permissions (umask) of any other file the user writes. O_EXCL plus a per-process counter
  // gives the uniqueness mkstemp would.
  const size_t slash = target_.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : target_.substr(0, slash + 1);
  const std::string base = target_.substr(slash == std::string::npos ? 0 : slash + 1).substr(0, 64);
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    tmp_ = fmt::format("{}.{}.{}.{}.tmp", dir, base, ::getpid(), g_tmp_counter.fetch_add(1));
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) {
    int err = errno;
    tmp_.clear();
    EMBER_FAIL("{}cannot create a temporary file next to it: {}", Source{op_, path_}.prefix(),
               std::strerror(err));
  }
  if (exists) (void)::fchmod(fd_, st.st_mode & 07777);
  buf_.reserve(kBufferSize);
}

AtomicWriter::~AtomicWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicWriter::fail_errno(const char* what, int err, uint64_t at) {
  // Remove the temporary file now: without exceptions the error handler may not return.
  ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
  tmp_.clear();
  EMBER_FAIL("{}{} failed{}: {}; the previous file is unchanged", Source{op_, path_}.prefix(), what,
             at == kNoByte ? std::string() : fmt::format(" at byte {}", at), std::strerror(err ? err : EIO));
}

void AtomicWriter::write_fd(const void* data, size_t n, uint64_t at) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    if (g_write_fault) {
      if (int err = g_write_fault(at, n)) fail_errno("writing", err, at);
    }
    ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(at));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail_errno("writing", w < 0 ? errno : ENOSPC, at);
    p += w;
    at += static_cast<uint64_t>(w);
    n -= static_cast<size_t>(w);
  }
}

void AtomicWriter::flush() {
  if (buf_.empty()) return;
  write_fd(buf_.data(), buf_.size(), flushed_);
  flushed_ += buf_.size();
  buf_.clear();
}

void AtomicWriter::write(const void* data, size_t n) {
  if (buf_.size() + n <= kBufferSize) {
    const char* p = static_cast<const char*>(data);
    buf_.insert(buf_.end(), p, p + n);
    return;
  }
  flush();
  write_fd(data, n, flushed_);
  flushed_ += n;
}

void AtomicWriter::write_at(uint64_t offset, const void* data, size_t n) {
  flush();
  write_fd(data, n, offset);
}

void AtomicWriter::commit() {
  flush();
  if (::fsync(fd_) != 0) fail_errno("flushing to disk", errno, kNoByte);
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) fail_errno("closing", errno, kNoByte);
  if (::rename(tmp_.c_str(), target_.c_str()) != 0) fail_errno("renaming the temporary file over it", errno, kNoByte);
  tmp_.clear();
  // The rename is durable only once the directory entry is.
  std::string dir = ".";
  if (auto slash = target_.rfind('/'); slash != std::string::npos) dir = slash == 0 ? "/" : target_.substr(0, slash);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace ember::io::detail

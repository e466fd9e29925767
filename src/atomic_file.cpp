#include "atomic_file.hpp"

#include <ember/core/error.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace ember::detail {

void write_file_atomic(const std::string& path, const void* data, size_t size, const char* op) {
  std::string dir = ".";
  if (auto slash = path.rfind('/'); slash != std::string::npos) dir = slash == 0 ? "/" : path.substr(0, slash);
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = mkstemp(tmp.data());
  EMBER_CHECK(fd >= 0, "[{}] cannot create a temporary file next to '{}': {}", op, path, std::strerror(errno));
  const char* p = static_cast<const char*>(data);
  size_t left = size;
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      EMBER_FAIL("[{}] writing '{}' failed after {} of {} bytes: {}; the previous file is intact", op, path,
                 size - left, size, std::strerror(err ? err : EIO));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    EMBER_FAIL("[{}] flushing '{}' failed: {}; the previous file is intact", op, path, std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    EMBER_FAIL("[{}] renaming the temporary file onto '{}' failed: {}", op, path, std::strerror(err));
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace ember::detail

#pragma once
// Atomic file writes: write a temporary file in the same directory, fsync it, rename it over
// the target, fsync the directory. A crash or a full disk leaves the previous file intact.

#include <cstddef>
#include <string>

namespace ember::detail {

/// Writes `size` bytes to `path` atomically; fails with ember::Error naming `op`, the path
/// and the system error.
void write_file_atomic(const std::string& path, const void* data, size_t size, const char* op);

}  // namespace ember::detail

#pragma once
// Atomic file writes of a buffer in memory (the profiler's trace): io::detail::AtomicWriter
// (src/io/atomic_writer.hpp) underneath. A crash or a full disk leaves the previous file intact.

#include <cstddef>
#include <string>

namespace ember::detail {

/// Writes `size` bytes to `path` atomically; fails with ember::Error naming `op`, the path
/// and the system error.
void write_file_atomic(const std::string& path, const void* data, size_t size, const char* op);

}  // namespace ember::detail

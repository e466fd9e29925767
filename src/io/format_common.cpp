#include "format_common.hpp"

#include "text.hpp"

#include <ember/core/error.hpp>

namespace ember::io::detail {

std::string Source::prefix() const { return fmt::format("[{}] {}: ", op, quoted(path, path.size())); }

void check_bool_bytes(const uint8_t* data, size_t n, const Source& src, std::string_view what) {
  // One OR over the bytes first: the common (valid) case never branches per element.
  uint8_t any = 0;
  for (size_t i = 0; i < n; ++i) any |= data[i];
  if (any <= 1) return;
  for (size_t i = 0; i < n; ++i)
    EMBER_CHECK(data[i] <= 1, "{}{}: bool element {} holds the byte {}, but bools must be 0 or 1", src.prefix(), what,
                i, data[i]);
}

}  // namespace ember::io::detail

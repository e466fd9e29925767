// Type names and error messages of AnyValue, AnyModule's and Sequential's calls through ModuleCalls (nn/detail/module_calls.hpp).
#include <ember/dispatch/default_policy.hpp>
#include <ember/nn/detail/module_calls.hpp>

#include <fmt/format.h>

namespace ember::nn::detail {

std::string describe_arities(uint32_t arities) {
  std::string out;
  for (uint32_t k = 0; k < 32; ++k) {
    if (((arities >> k) & 1u) == 0) continue;
    uint32_t last = k;
    while (last + 1 < 32 && ((arities >> (last + 1)) & 1u) != 0) ++last;
    if (!out.empty()) out += " or ";
    out += last == k ? fmt::format("{}", k) : last == k + 1 ? fmt::format("{} or {}", k, last) : fmt::format("{} to {}", k, last);
    k = last;
  }
  return out;
}

std::string readable_type_name(std::string_view name) {
  constexpr std::string_view tensor = type_name<ember::Tensor>();
  std::string out(name);
  for (size_t at = out.find(tensor); at != std::string::npos; at = out.find(tensor, at + 6)) {
    out.replace(at, tensor.size(), "Tensor");
    if (out.compare(at + 6, 2, " >") == 0) out.erase(at + 6, 1);  // GCC's "> >" closes its own template
  }
  return out;
}

namespace {
std::string caller(const char* owner, int64_t position, const std::string& module) {
  return position < 0 ? fmt::format("[{}] {}'s forward()", owner, module)
                      : fmt::format("[{}] module {} ({}): its forward()", owner, position, module);
}
}  // namespace

void fail_argument(const char* owner, int64_t position, const std::string& module, size_t index,
                   std::string_view want, std::string_view got) {
  EMBER_FAIL("{} takes argument {} as {}, got a value of type {}", caller(owner, position, module), index,
             readable_type_name(want), readable_type_name(got));
}

void fail_arity(const char* owner, int64_t position, const std::string& module, uint32_t arities, size_t got) {
  EMBER_FAIL("{} takes {} argument(s), got {}", caller(owner, position, module), describe_arities(arities), got);
}

}  // namespace ember::nn::detail

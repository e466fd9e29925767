#include <ember/core/error.hpp>
#include <ember/ops/einsum.hpp>

#include <algorithm>
#include <cctype>

namespace ember::detail {

namespace {

/// Letters no subscript of `s` uses, for the dims an ellipsis stands for.
std::string unused_letters(const std::string& s) {
  std::string free;
  for (char c = 'A'; c <= 'Z'; ++c)
    if (s.find(c) == std::string::npos) free += c;
  for (char c = 'a'; c <= 'z'; ++c)
    if (s.find(c) == std::string::npos) free += c;
  return free;
}

}  // namespace

EinsumPlan parse_einsum(std::string_view eq, int n_inputs, const int64_t* ranks) {
  EinsumPlan plan;
  std::string s;
  for (char c : eq)
    if (c != ' ') s += c;
  auto arrow = s.find("->");
  std::string lhs = s.substr(0, arrow);
  auto comma = lhs.find(',');
  plan.inputs[0] = lhs.substr(0, comma);
  plan.n_inputs = comma == std::string::npos ? 1 : 2;
  if (plan.n_inputs == 2) plan.inputs[1] = lhs.substr(comma + 1);
  EMBER_CHECK(plan.inputs[1].find(',') == std::string::npos, "[einsum] at most 2 operands are supported: '{}'", eq);
  EMBER_CHECK(plan.n_inputs == n_inputs, "[einsum] equation '{}' names {} operands but {} were given", eq,
              plan.n_inputs, n_inputs);
  if (arrow != std::string::npos) plan.output = s.substr(arrow + 2);
  // An ellipsis stands for the dims no letter names, as fresh letters, aligned from the right
  // across operands (they broadcast); the output's is the longest.
  const std::string free = unused_letters(s);
  int64_t n_ell[2] = {-1, -1}, ellipsis_dims = 0;
  for (int k = 0; k < plan.n_inputs; ++k) {
    const std::string& in = plan.inputs[k];
    const auto dots = in.find("...");
    const int64_t letters = static_cast<int64_t>(in.size()) - (dots == std::string::npos ? 0 : 3);
    if (dots == std::string::npos) {
      EMBER_CHECK(letters == ranks[k], "[einsum] operand {} has rank {} but '{}' has {} subscripts", k, ranks[k], in,
                  letters);
      continue;
    }
    EMBER_CHECK(in.find('.', dots + 3) == std::string::npos, "[einsum] more than one ellipsis in '{}'", in);
    EMBER_CHECK(letters <= ranks[k], "[einsum] operand {} has rank {} but '{}' names {} dims besides the ellipsis", k,
                ranks[k], in, letters);
    n_ell[k] = ranks[k] - letters;
    ellipsis_dims = std::max(ellipsis_dims, n_ell[k]);
  }
  EMBER_CHECK(static_cast<size_t>(ellipsis_dims) <= free.size(), "[einsum] too many dims in '{}'", eq);
  const std::string ell = free.substr(0, static_cast<size_t>(ellipsis_dims));
  for (int k = 0; k < plan.n_inputs; ++k)
    if (n_ell[k] >= 0)
      plan.inputs[k].replace(plan.inputs[k].find("..."), 3, ell.substr(ell.size() - static_cast<size_t>(n_ell[k])));
  for (int k = 0; k < plan.n_inputs; ++k)
    for (char c : plan.inputs[k])
      EMBER_CHECK(std::isalpha(static_cast<unsigned char>(c)), "[einsum] invalid subscript '{}' in '{}'", c, eq);
  if (arrow != std::string::npos) {
    const auto dots = plan.output.find("...");
    // Without one in the output, the ellipsis dims are summed (contracted), as PyTorch.
    if (dots != std::string::npos) plan.output.replace(dots, 3, ell);
    for (size_t i = 0; i < plan.output.size(); ++i) {
      char c = plan.output[i];
      EMBER_CHECK(std::isalpha(static_cast<unsigned char>(c)), "[einsum] invalid output subscript '{}' in '{}'", c, eq);
      EMBER_CHECK(plan.inputs[0].find(c) != std::string::npos || plan.inputs[1].find(c) != std::string::npos,
                  "[einsum] output subscript '{}' appears in no operand of '{}'", c, eq);
      EMBER_CHECK(plan.output.find(c, i + 1) == std::string::npos, "[einsum] repeated output subscript '{}'", c);
    }
  } else {
    // Implicit output, as PyTorch: the ellipsis dims, then the subscripts that appear exactly
    // once, in alphabetical order.
    std::string all = plan.inputs[0] + plan.inputs[1], once;
    for (char c : all)
      if (ell.find(c) == std::string::npos && std::count(all.begin(), all.end(), c) == 1) once += c;
    std::sort(once.begin(), once.end());
    plan.output = ell + once;
  }
  return plan;
}

}  // namespace ember::detail

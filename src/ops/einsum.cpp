#include <ember/core/error.hpp>
#include <ember/ops/einsum.hpp>

#include <algorithm>

namespace ember::detail {

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
  for (int k = 0; k < plan.n_inputs; ++k) {
    const std::string& in = plan.inputs[k];
    EMBER_CHECK(static_cast<int64_t>(in.size()) == ranks[k],
                "[einsum] operand {} has rank {} but '{}' has {} subscripts", k, ranks[k], in, in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      EMBER_CHECK(std::isalpha(static_cast<unsigned char>(in[i])), "[einsum] invalid subscript '{}' in '{}'", in[i],
                  eq);
      EMBER_CHECK(in.find(in[i], i + 1) == std::string::npos,
                  "[einsum] repeated subscript '{}' within one operand ('{}') is not supported", in[i], in);
    }
  }
  if (arrow != std::string::npos) {
    plan.output = s.substr(arrow + 2);
    for (size_t i = 0; i < plan.output.size(); ++i) {
      char c = plan.output[i];
      EMBER_CHECK(plan.inputs[0].find(c) != std::string::npos || plan.inputs[1].find(c) != std::string::npos,
                  "[einsum] output subscript '{}' appears in no operand of '{}'", c, eq);
      EMBER_CHECK(plan.output.find(c, i + 1) == std::string::npos, "[einsum] repeated output subscript '{}'", c);
    }
  } else {
    // Implicit output: subscripts that appear exactly once, in alphabetical order.
    std::string all = plan.inputs[0] + plan.inputs[1];
    for (char c : all)
      if (std::count(all.begin(), all.end(), c) == 1) plan.output += c;
    std::sort(plan.output.begin(), plan.output.end());
  }
  return plan;
}

}  // namespace ember::detail

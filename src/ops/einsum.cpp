#include <ember/core/error.hpp>
#include <ember/ops/einsum.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace ember::detail {

namespace {

/// A letter as the user knows it: their subscript, or one of the dims of "...".
std::string describe(const EinsumEquation& eq, char c) {
  return eq.ellipsis.find(c) != std::string::npos ? std::string("a dim of '...'") : fmt::format("subscript '{}'", c);
}

/// Letters no subscript of `s` uses, for the dims an ellipsis stands for.
std::string unused_letters(const std::string& s) {
  std::string free;
  for (char c = 'A'; c <= 'Z'; ++c)
    if (s.find(c) == std::string::npos) free += c;
  for (char c = 'a'; c <= 'z'; ++c)
    if (s.find(c) == std::string::npos) free += c;
  return free;
}

/// The permutation that puts the subscripts `in` in the order `order` (every letter of order occurs in in).
Shape positions_of(const std::string& in, const std::string& order) {
  Shape perm;
  for (char c : order) perm.push_back(static_cast<int64_t>(in.find(c)));
  return perm;
}

}  // namespace

EinsumEquation parse_einsum(std::string_view eq, const std::vector<int64_t>& ranks) {
  EinsumEquation plan;
  std::string s;
  for (char c : eq)
    if (c != ' ') s += c;
  const auto arrow = s.find("->");
  const std::string lhs = s.substr(0, arrow);
  for (size_t start = 0;;) {
    const auto comma = lhs.find(',', start);
    plan.inputs.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  plan.written = plan.inputs;
  EMBER_CHECK(plan.inputs.size() == ranks.size(), "[einsum] equation '{}' names {} operands but {} were given", eq,
              plan.inputs.size(), ranks.size());
  if (arrow != std::string::npos) plan.output = s.substr(arrow + 2);
  // An ellipsis stands for the dims no letter names, as fresh letters, aligned from the right
  // across operands (they broadcast); the output's is the longest.
  const std::string free = unused_letters(s);
  std::vector<int64_t> n_ell(ranks.size(), -1);
  int64_t ellipsis_dims = 0;
  for (size_t k = 0; k < plan.inputs.size(); ++k) {
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
  plan.ellipsis = ell;
  for (size_t k = 0; k < plan.inputs.size(); ++k)
    if (n_ell[k] >= 0)
      plan.inputs[k].replace(plan.inputs[k].find("..."), 3, ell.substr(ell.size() - static_cast<size_t>(n_ell[k])));
  std::string all;
  for (const std::string& in : plan.inputs) {
    for (char c : in)
      EMBER_CHECK(std::isalpha(static_cast<unsigned char>(c)), "[einsum] invalid subscript '{}' in '{}'", c, eq);
    all += in;
  }
  if (arrow != std::string::npos) {
    const auto dots = plan.output.find("...");
    // Without one in the output, the ellipsis dims are summed (contracted), as PyTorch.
    if (dots != std::string::npos) plan.output.replace(dots, 3, ell);
    for (size_t i = 0; i < plan.output.size(); ++i) {
      char c = plan.output[i];
      EMBER_CHECK(std::isalpha(static_cast<unsigned char>(c)), "[einsum] invalid output subscript '{}' in '{}'", c, eq);
      EMBER_CHECK(all.find(c) != std::string::npos, "[einsum] output subscript '{}' appears in no operand of '{}'", c,
                  eq);
      EMBER_CHECK(plan.output.find(c, i + 1) == std::string::npos, "[einsum] repeated output subscript '{}'", c);
    }
  } else {
    // Implicit output, as PyTorch: the ellipsis dims, then the subscripts that appear exactly
    // once, in alphabetical order.
    std::string once;
    for (char c : all)
      if (ell.find(c) == std::string::npos && std::count(all.begin(), all.end(), c) == 1) once += c;
    std::sort(once.begin(), once.end());
    plan.output = ell + once;
  }
  return plan;
}

EinsumDiagonals plan_einsum_diagonals(const EinsumEquation& eq, size_t operand, const Shape& sizes) {
  EinsumDiagonals r;
  r.subs = eq.inputs[operand];
  Shape cur = sizes;
  for (size_t i = 0; i < r.subs.size(); ++i) {
    const size_t j = r.subs.find(r.subs[i], i + 1);
    if (j == std::string::npos) continue;
    const char c = r.subs[i];
    EMBER_CHECK(cur[i] == cur[j],
                "[einsum] subscript '{}' is repeated in operand {} ('{}', shape {}) over dims of sizes {} and {}", c,
                operand, eq.written[operand], sizes, cur[i], cur[j]);
    // diagonal(0, i, j) drops both dims and appends the shared one last.
    r.dims.emplace_back(static_cast<int64_t>(i), static_cast<int64_t>(j));
    const int64_t n = cur[i];
    cur.erase(j);
    cur.erase(i);
    cur.push_back(n);
    r.subs.erase(j, 1);
    r.subs.erase(i, 1);
    r.subs += c;
    i = static_cast<size_t>(-1);  // rescan: the letter may come a third time
  }
  return r;
}

void check_einsum_sizes(const EinsumEquation& eq, const std::vector<std::string>& subs,
                        const std::vector<Shape>& sizes, const std::vector<Shape>& shapes) {
  // Per letter: the first size other than 1 and the operand that has it.
  std::array<int64_t, 128> size{}, owner{};
  size.fill(1);
  for (size_t k = 0; k < subs.size(); ++k)
    for (size_t i = 0; i < subs[k].size(); ++i) {
      const auto c = static_cast<unsigned char>(subs[k][i]);
      const int64_t n = sizes[k][i];
      if (n == 1) continue;
      if (size[c] == 1) {
        size[c] = n;
        owner[c] = static_cast<int64_t>(k);
        continue;
      }
      const auto first = static_cast<size_t>(owner[c]);
      EMBER_CHECK(size[c] == n, "[einsum] {} has size {} in operand {} ('{}', shape {}) but {} in operand {} ('{}', shape {})",
                  describe(eq, subs[k][i]), size[c], first, eq.written[first], shapes[first], n, k, eq.written[k],
                  shapes[k]);
    }
}

EinsumPair plan_einsum_pair(const std::string& sa, const Shape& a_sizes, const std::string& sb, const Shape& b_sizes,
                            const std::string& needed) {
  EinsumPair p;
  // Sum the subscripts of one side that neither the other side nor anything later needs.
  auto keep = [&](const std::string& s, const Shape& sz, const std::string& other, Shape& sum, std::string& kept,
                  Shape& kept_sizes) {
    for (size_t i = 0; i < s.size(); ++i) {
      if (other.find(s[i]) == std::string::npos && needed.find(s[i]) == std::string::npos) {
        sum.push_back(static_cast<int64_t>(i));
      } else {
        kept += s[i];
        kept_sizes.push_back(sz[i]);
      }
    }
  };
  std::string ka, kb;
  Shape za, zb;
  keep(sa, a_sizes, sb, p.sum_a, ka, za);
  keep(sb, b_sizes, sa, p.sum_b, kb, zb);
  std::string batch, contract, a_only, b_only;
  for (char c : ka) {
    const bool in_b = kb.find(c) != std::string::npos;
    if (in_b && needed.find(c) != std::string::npos) batch += c;
    else if (in_b) contract += c;
    else a_only += c;
  }
  for (char c : kb)
    if (ka.find(c) == std::string::npos) b_only += c;
  // A shared subscript of size 1 on one side broadcasts to the other's size.
  bool expand_a = false, expand_b = false;
  for (char c : batch + contract) {
    int64_t& na = za[ka.find(c)];
    int64_t& nb = zb[kb.find(c)];
    if (na == nb) continue;
    if (na == 1) {
      na = nb;
      expand_a = true;
    } else {
      nb = na;
      expand_b = true;
    }
  }
  if (expand_a) p.expand_a = za;
  if (expand_b) p.expand_b = zb;
  auto size_of = [&](char c) {
    const auto i = ka.find(c);
    return i != std::string::npos ? za[i] : zb[kb.find(c)];
  };
  auto prod = [&](const std::string& s) {
    int64_t n = 1;
    for (char c : s) n *= size_of(c);
    return n;
  };
  p.perm_a = positions_of(ka, batch + a_only + contract);
  p.perm_b = positions_of(kb, batch + contract + b_only);
  p.mat_a = {prod(batch), prod(a_only), prod(contract)};
  p.mat_b = {prod(batch), prod(contract), prod(b_only)};
  p.out_subs = batch + a_only + b_only;
  for (char c : p.out_subs) p.out_sizes.push_back(size_of(c));
  return p;
}

EinsumFinish plan_einsum_finish(const std::string& subs, const std::string& output) {
  EinsumFinish f;
  std::string kept;
  for (size_t i = 0; i < subs.size(); ++i) {
    if (output.find(subs[i]) == std::string::npos) f.sum.push_back(static_cast<int64_t>(i));
    else kept += subs[i];
  }
  f.perm = positions_of(kept, output);
  return f;
}

}  // namespace ember::detail

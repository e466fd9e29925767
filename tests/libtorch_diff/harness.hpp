#pragma once
/// What the call families of ember-vs-libtorch share (main.cpp defines it): the inputs'
/// generators, and the comparison of one call with its report. main.cpp holds the families
/// of elementwise ops, reductions and the first nn ops; calls_more.cpp the indexing, shape,
/// loss and layer ops added after them.

#include "bridge.hpp"

#include "../support/op_table.hpp"

#include <map>
#include <random>
#include <string>
#include <vector>

namespace ediff {

/// A value of an input: integers exactly, floating values as doubles.
struct Val {
  double f = 0;
  int64_t i = 0;
};

struct Report {
  int calls = 0, mismatched_calls = 0, known = 0;
  std::map<std::string, int> by_category;
  bool verbose = false;
};

Buf make_buf(DT t, const std::vector<Val>& vals, std::vector<int64_t> shape);
/// The edge values of dtype t (NaN, infinities, signed zeros, subnormals, limits).
std::vector<Val> specials(DT t);
/// The input generator, restarted from `what` (an op or a family of calls) by reseed, so that
/// a call's inputs do not depend on which other calls ran: --filter reproduces a full run's call.
std::mt19937_64& rng();
void reseed(const std::string& what);
/// Random values in dom, with a few edge values among them (floating dtypes) when edges.
Buf random_buf(DT t, std::vector<int64_t> shape, ember::test::Domain dom, bool edges = true);
/// Values with ties in rows 0-3 and edge values in rows 4-7: an 8 x 6 matrix.
Buf tie_matrix(DT t);
bool wanted(const std::string& filter, const std::string& op);
/// An int in [lo, hi] from the input generator.
int pick(int lo, int hi);
/// Values in [-2, 2]; with `nonfinite`, a NaN and both infinities at random places (no huge
/// finite values, whose sums depend on the order of additions; addmm with beta = 0 must not
/// read them).
Buf random_operand(DT t, std::vector<int64_t> shape, bool nonfinite = false);

/// An i64 (or t) buffer of exact integers.
inline Buf ints_buf(const std::vector<int64_t>& v, std::vector<int64_t> shape, DT t = DT::I64) {
  std::vector<Val> vals;
  for (int64_t i : v) vals.push_back({static_cast<double>(i), i});
  return make_buf(t, vals, std::move(shape));
}

/// Runs the call through both libraries and reports any difference; returns whether both
/// accepted it.
bool compare(Report& rep, const Call& c, bool transcendental);
/// A Named call; with `gradients`, also the gradients of its first output where both accept
/// it and its operands are f32/f64.
void named_call(Report& rep, const std::string& filter, const std::string& op, std::vector<Buf> ins,
                std::vector<double> args, bool transcendental, bool gradients);

/// calls_more.cpp.
void index_calls(Report& rep, const std::string& filter);
void shape_calls(Report& rep, const std::string& filter);
void loss_more_calls(Report& rep, const std::string& filter);
void layer_calls(Report& rep, const std::string& filter);
void rnn_calls(Report& rep, const std::string& filter);
void python_composite_calls(Report& rep, const std::string& filter);
void optimizer_calls(Report& rep, const std::string& filter);
void late_op_calls(Report& rep, const std::string& filter);
/// calls_linalg.cpp.
void linalg_calls(Report& rep, const std::string& filter);
void more_nn_calls(Report& rep, const std::string& filter);
void attention_calls(Report& rep, const std::string& filter);
void index_expr_calls(Report& rep, const std::string& filter);
void transformer_calls(Report& rep, const std::string& filter);
/// calls_decompositions.cpp.
void decomposition_calls(Report& rep, const std::string& filter);
/// calls_arrange.cpp.
void arrange_calls(Report& rep, const std::string& filter);
/// calls_statistics.cpp.
void statistics_calls(Report& rep, const std::string& filter);

}  // namespace ediff

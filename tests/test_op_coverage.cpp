// Every op of the .def tables has a row in tests/support/op_table.hpp (and so a reference
// and table-driven tests). Adding an op to a .def table without a row fails to compile.

#include <doctest/doctest.h>

#include "support/grad_table.hpp"
#include "support/op_table.hpp"

#include <string>

namespace test_op_coverage {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using namespace ember::test;

static_assert(unary_table_complete(), "an op of unary_list.def has no row (or two) in tests/support/op_table.hpp");
static_assert(binary_table_complete(), "an op of binary_list.def has no row (or two) in tests/support/op_table.hpp");
static_assert(reduce_table_complete(), "an op of reduce_list.def has no row (or two) in tests/support/op_table.hpp");
static_assert(grad_tables_complete(),
              "a differentiable .def op has no gradcheck row (or a non-differentiable one has one) in "
              "tests/support/grad_table.hpp");
static_assert(std::size(kUnaryRows) == ops::kNumUnaryOps);
static_assert(std::size(kBinaryRows) == ops::kNumBinaryOps);
static_assert(std::size(kReduceRows) == ops::kNumReduceOps);

TEST_CASE("op coverage: every .def op has exactly one op-table row") {
#define EMBER_UNARY_OP(E, n, r) CHECK_MESSAGE(count_rows(kUnaryRows, ops::UnaryOp::E) == 1, "unary op " #n);
#include <ember/ops/unary_list.def>
#undef EMBER_UNARY_OP
#define EMBER_BINARY_OP(E, n, r) CHECK_MESSAGE(count_rows(kBinaryRows, ops::BinaryOp::E) == 1, "binary op " #n);
#include <ember/ops/binary_list.def>
#undef EMBER_BINARY_OP
#define EMBER_REDUCE_OP(E, n, r) CHECK_MESSAGE(count_rows(kReduceRows, ops::ReduceOp::E) == 1, "reduce op " #n);
#include <ember/ops/reduce_list.def>
#undef EMBER_REDUCE_OP
}

TEST_CASE("op coverage: every differentiable .def op has exactly one gradcheck row") {
#define EMBER_UNARY_OP(E, n, r) \
  CHECK_MESSAGE(count_rows(kUnaryGradRows, ops::UnaryOp::E) == (differentiable(ops::UnaryOp::E) ? 1 : 0), "unary op " #n);
#include <ember/ops/unary_list.def>
#undef EMBER_UNARY_OP
#define EMBER_BINARY_OP(E, n, r) \
  CHECK_MESSAGE(count_rows(kBinaryGradRows, ops::BinaryOp::E) == (differentiable(ops::BinaryOp::E) ? 1 : 0), "binary op " #n);
#include <ember/ops/binary_list.def>
#undef EMBER_BINARY_OP
#define EMBER_REDUCE_OP(E, n, r) \
  CHECK_MESSAGE(count_rows(kReduceGradRows, ops::ReduceOp::E) == (differentiable(ops::ReduceOp::E) ? 1 : 0), "reduce op " #n);
#include <ember/ops/reduce_list.def>
#undef EMBER_REDUCE_OP
}

TEST_CASE("op coverage: every op accepts at least one dtype and its domain is sane") {
  for (const UnaryRow& r : kUnaryRows) {
    bool any = false;
    for (DType t : kAllDTypes) any |= accepts(r.op, t);
    CHECK_MESSAGE(any, ops::name(r.op));
    CHECK_MESSAGE(r.dom.lo < r.dom.hi, ops::name(r.op));
  }
  for (const BinaryRow& r : kBinaryRows) CHECK_MESSAGE(r.a.lo <= r.a.hi, ops::name(r.op));
  for (const ReduceRow& r : kReduceRows) CHECK_MESSAGE(r.dom.lo < r.dom.hi, ops::name(r.op));
}

}  // namespace test_op_coverage

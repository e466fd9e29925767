#pragma once
/// The closed lists of elementwise and reduction ops (from the *_list.def tables), their
/// names and dtype rules. One enum per family keeps each kernel switch small.

#include <cstdint>

namespace ember::ops {

enum class UnaryRule : uint8_t { Float, Same, Pred, Int, Logical };
enum class BinaryRule : uint8_t { Arith, TrueDiv, Float, Compare, Logical, Bitwise };
enum class ReduceRule : uint8_t { Sum, Float, Same, Bool, Count };

enum class UnaryOp : uint8_t {
#define EMBER_UNARY_OP(E, n, r) E,
#include <ember/ops/unary_list.def>
#undef EMBER_UNARY_OP
};
enum class BinaryOp : uint8_t {
#define EMBER_BINARY_OP(E, n, r) E,
#include <ember/ops/binary_list.def>
#undef EMBER_BINARY_OP
};
enum class ReduceOp : uint8_t {
#define EMBER_REDUCE_OP(E, n, r) E,
#include <ember/ops/reduce_list.def>
#undef EMBER_REDUCE_OP
};

inline constexpr int kNumUnaryOps = 0
#define EMBER_UNARY_OP(E, n, r) +1
#include <ember/ops/unary_list.def>
#undef EMBER_UNARY_OP
    ;
inline constexpr int kNumBinaryOps = 0
#define EMBER_BINARY_OP(E, n, r) +1
#include <ember/ops/binary_list.def>
#undef EMBER_BINARY_OP
    ;
inline constexpr int kNumReduceOps = 0
#define EMBER_REDUCE_OP(E, n, r) +1
#include <ember/ops/reduce_list.def>
#undef EMBER_REDUCE_OP
    ;

namespace tables {
inline constexpr const char* kUnaryNames[] = {
#define EMBER_UNARY_OP(E, n, r) #n,
#include <ember/ops/unary_list.def>
#undef EMBER_UNARY_OP
};
}  // namespace tables
constexpr const char* name(UnaryOp op) { return tables::kUnaryNames[static_cast<int>(op)]; }
namespace tables {
inline constexpr const char* kBinaryNames[] = {
#define EMBER_BINARY_OP(E, n, r) #n,
#include <ember/ops/binary_list.def>
#undef EMBER_BINARY_OP
};
}  // namespace tables
constexpr const char* name(BinaryOp op) { return tables::kBinaryNames[static_cast<int>(op)]; }
namespace tables {
inline constexpr const char* kReduceNames[] = {
#define EMBER_REDUCE_OP(E, n, r) #n,
#include <ember/ops/reduce_list.def>
#undef EMBER_REDUCE_OP
};
}  // namespace tables
constexpr const char* name(ReduceOp op) { return tables::kReduceNames[static_cast<int>(op)]; }
namespace tables {
inline constexpr UnaryRule kUnaryRules[] = {
#define EMBER_UNARY_OP(E, n, r) UnaryRule::r,
#include <ember/ops/unary_list.def>
#undef EMBER_UNARY_OP
};
}  // namespace tables
constexpr UnaryRule rule(UnaryOp op) { return tables::kUnaryRules[static_cast<int>(op)]; }
namespace tables {
inline constexpr BinaryRule kBinaryRules[] = {
#define EMBER_BINARY_OP(E, n, r) BinaryRule::r,
#include <ember/ops/binary_list.def>
#undef EMBER_BINARY_OP
};
}  // namespace tables
constexpr BinaryRule rule(BinaryOp op) { return tables::kBinaryRules[static_cast<int>(op)]; }
namespace tables {
inline constexpr ReduceRule kReduceRules[] = {
#define EMBER_REDUCE_OP(E, n, r) ReduceRule::r,
#include <ember/ops/reduce_list.def>
#undef EMBER_REDUCE_OP
};
}  // namespace tables
constexpr ReduceRule rule(ReduceOp op) { return tables::kReduceRules[static_cast<int>(op)]; }

/// The Same-rule unary and Arith-rule binary ops that take bool tensors (as PyTorch); the
/// others of those rules refuse them. The op checks (src/ops/elementwise.cpp) and the kernel
/// dispatch (kernels_cpu/elementwise.cpp) both read this.
constexpr bool takes_bool(UnaryOp op) {
  return op == UnaryOp::Abs || op == UnaryOp::Clamp || op == UnaryOp::NanToNum;
}
constexpr bool takes_bool(BinaryOp op) {
  return op == BinaryOp::Add || op == BinaryOp::Mul || op == BinaryOp::Maximum || op == BinaryOp::Minimum ||
         op == BinaryOp::Fmax || op == BinaryOp::Fmin || op == BinaryOp::Heaviside;
}

/// Extra parameters of parametric unary ops (leaky_relu slope, clamp bounds, ...).
/// Which field means what is stated next to each op's functor.
struct UnaryParams {
  double a = 0, b = 0, c = 0;
  bool has_a = true, has_b = true;  ///< clamp: whether min / max were given
  /// clamp of an integer tensor: a and b exactly (doubles round above 2^53).
  int64_t ia = 0, ib = 0;
};

/// The parameters of an op called without any (x.leaky_relu(), x.hardtanh()): PyTorch's
/// defaults. Ops without parameters ignore them.
constexpr UnaryParams default_params(UnaryOp op) {
  UnaryParams p;
  switch (op) {
    case UnaryOp::LeakyRelu: p.a = 0.01; break;
    case UnaryOp::Elu:
    case UnaryOp::Celu: p.a = 1.0; break;
    case UnaryOp::Softplus: p.a = 1.0, p.b = 20.0; break;
    case UnaryOp::Hardtanh: p.a = -1.0, p.b = 1.0; break;
    case UnaryOp::Logit: p.has_a = false; break;  // no eps: no clamp
    case UnaryOp::Clamp: p.has_a = p.has_b = false; break;  // refused: neither bound given
    case UnaryOp::NanToNum: p.has_a = p.has_b = false; break;  // nan -> 0, +-inf -> dtype limits
    default: break;
  }
  return p;
}

}  // namespace ember::ops

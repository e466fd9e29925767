#pragma once
/// The umbrella header: everything a user of Ember's tensor core needs.
///   #include <ember/ember.hpp>
///   ember::Tensor x = ember::randn({2, 3});

#include <ember/core/allocator.hpp>
#include <ember/core/error.hpp>
#include <ember/dispatch/default_policy.hpp>
#include <ember/core/tensor.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/core/factories.hpp>
#include <ember/core/random_ops.hpp>
#include <ember/ops/functions.hpp>
#include <ember/ops/shape_ops.hpp>
#include <ember/ops/free_forms.hpp>
#include <ember/ops/view_scatter_ops.hpp>
#include <ember/ops/einsum.hpp>
#include <ember/ops/rearrange_ops.hpp>
#include <ember/ops/matrix_builders.hpp>
#include <ember/ops/differences.hpp>
#include <ember/ops/split_stack_ops.hpp>
#include <ember/ops/vector_products.hpp>
#include <ember/ops/inplace_index_ops.hpp>
#include <ember/ops/inplace_view_ops.hpp>
#include <ember/ops/gamma_ops.hpp>
#include <ember/ops/special_ops.hpp>
#include <ember/ops/integer_math.hpp>
#include <ember/ops/windows.hpp>
#include <ember/ops/incomplete_gamma.hpp>
#include <ember/ops/set_ops.hpp>
#include <ember/ops/order_statistics.hpp>
#include <ember/ops/counting.hpp>
#include <ember/linalg.hpp>
#include <ember/autograd/tensor_autograd.hpp>
#include <ember/core/to_policy.hpp>
#include <ember/runtime/log.hpp>
#include <ember/runtime/threading.hpp>

namespace ember {
/// Ember's version, as major * 10000 + minor * 100 + patch.
inline constexpr int kVersion = 100;  // 0.1.0
}  // namespace ember

#pragma once
/// The check every in-place op makes under autograd before it writes: its target must not be
/// a leaf that requires grad, nor a view of one. On its own so that the in-place ops' headers
/// (random fills, index writes, in-place views) need not include autograd/inplace.hpp, which
/// brings every derivative formula (autograd/derivatives.hpp) with it: those are compiled into
/// the library for DefaultPolicy, and parsing them cost every user's translation unit ~8% of
/// its compile time.

#include <ember/autograd/node.hpp>
#include <ember/core/error.hpp>
#include <ember/core/tensor_impl.hpp>

namespace ember::autograd::detail {

/// `op` names the operation in errors with `suffix` appended: built-in ops are named without
/// their in-place underscore, an autograd::Function marking a tensor dirty by its own name.
inline void check_inplace_target(const TensorImpl& t, const char* op, const char* suffix = "_") {
  const AutogradMeta* m = t.autograd;
  EMBER_CHECK(!(m && m->requires_grad && !m->grad_fn),
              "[{}{}] a leaf tensor that requires grad (shape {}) is used in an in-place operation; update it "
              "under NoGradGuard (as optimisers do), or work on a clone",
              op, suffix, t.sizes);
  if (t.view_of) {
    const AutogradMeta* bm = t.view_of->autograd;
    EMBER_CHECK(!(bm && bm->requires_grad && !bm->grad_fn),
                "[{}{}] a view (shape {}) of a leaf tensor that requires grad (shape {}) is used in an in-place "
                "operation; update the leaf under NoGradGuard, or work on a clone",
                op, suffix, t.sizes, t.view_of->sizes);
  }
}

}  // namespace ember::autograd::detail

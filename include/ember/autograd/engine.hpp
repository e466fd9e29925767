#pragma once
/// The backward engine (src/autograd/engine.cpp). It is not templated: nodes carry the
/// policy's formulas and a PolicyOps table for the few ops the engine itself needs.
///
/// One pass: find the nodes reachable from the outputs and count the edges into each, then
/// run nodes whose gradients are complete, newest first, until none is left. Gradients that
/// reach a node along several paths are summed; each one is checked against the shape,
/// dtype and device of the tensor it is for, and broadcast gradients are reduced with sum_to.

#include <ember/autograd/node.hpp>

#include <vector>

namespace ember::autograd::detail {

struct BackwardRequest {
  std::vector<TensorRef> outputs;       ///< tensors to differentiate
  std::vector<TensorRef> grad_outputs;  ///< one per output; undefined = ones for a one-element output
  std::vector<TensorRef> inputs;        ///< autograd::grad: return gradients for these instead of accumulating
  bool retain_graph = false;
  bool create_graph = false;
  bool allow_unused = false;
  /// backward(inputs=): the pass runs as for autograd::grad, but the inputs' own nodes run too
  /// (leaves' accumulators, non-leaves' grad_fns; a non-leaf's .grad comes from retain_grad)
  /// and nothing is returned.
  bool accumulate_inputs = false;
  const PolicyOps* ops = nullptr;
  const char* api = "backward";  ///< named in errors
};

/// Runs backward. Without `inputs` it accumulates into leaves' .grad() and returns nothing;
/// with `inputs` it returns one gradient per input (undefined where unused and allowed).
std::vector<TensorRef> run_backward(BackwardRequest& request);

}  // namespace ember::autograd::detail

#pragma once
// The PyTorch golden fixture for nn modules and losses (tests/data/nn_golden/modules.txt,
// written by tools/gen_nn_golden.py): one case per module configuration, and the builders that
// make the same module with Ember (golden_builders.cpp). The format is described in the tool.

#include <ember/nn.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ember::nn_golden {

/// A tensor of the fixture: name (or output index), dtype, shape and row-major values.
struct Named {
  std::string name;
  DType dtype = DType::F64;
  Shape shape;
  std::vector<double> values;
  Tensor tensor() const;  ///< the values as a tensor of `dtype`
};

struct Case {
  std::string name, type, dtype;
  int line = 0;  ///< where the case starts in the fixture
  bool train = true;
  std::map<std::string, std::string> options;
  std::vector<std::string> state_keys;
  std::vector<Named> params, buffers, inputs, outputs, cotangents, grad_inputs, grad_params, buffers_after;
};

/// A case's options, read by the builder with PyTorch's defaults; remembers which it read so
/// that the test can fail on an option no builder looked at.
class Opts {
 public:
  explicit Opts(const Case& c) : c_(c) {}
  int64_t i(const std::string& k, std::optional<int64_t> dflt = {});
  double d(const std::string& k, std::optional<double> dflt = {});
  bool b(const std::string& k, bool dflt);
  std::string s(const std::string& k, std::optional<std::string> dflt = {});
  std::vector<int64_t> ints(const std::string& k, std::optional<std::vector<int64_t>> dflt = {});
  std::vector<double> doubles(const std::string& k, std::optional<std::vector<double>> dflt = {});
  /// Whether option k is present and not a number (Conv's padding="same").
  bool is_word(const std::string& k) const;
  /// The case's initial buffer `name` (a loss weight), or undefined.
  Tensor buffer(const std::string& name) const;
  std::vector<std::string> unused() const;

 private:
  const std::string* raw(const std::string& k);
  const Case& c_;
  std::set<std::string> used_;
};

/// The forward arguments by name; remembers which were taken (an input no builder passed on
/// would make a meaningless comparison, so the test fails on it).
class Inputs {
 public:
  explicit Inputs(std::map<std::string, Tensor> t) : t_(std::move(t)) {}
  Tensor operator[](const std::string& name);   ///< required
  Tensor opt(const std::string& name);           ///< undefined when absent
  std::vector<int64_t> ints(const std::string& name);  ///< a required 1-d integer input, as a vector
  std::vector<std::string> unused() const;

 private:
  std::map<std::string, Tensor> t_;
  std::set<std::string> used_;
};

/// An Ember module and how to call it: its outputs in PyTorch's order (nested tuples flattened).
struct Built {
  std::shared_ptr<nn::Module> module;
  std::function<std::vector<Tensor>(Inputs&)> forward;
};
using Builder = std::function<Built(Opts&)>;

/// Every builder, by the module type the fixture names.
const std::map<std::string, Builder>& builders();

}  // namespace ember::nn_golden

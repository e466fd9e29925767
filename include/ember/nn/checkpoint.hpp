#pragma once
/// Training checkpoints: everything a training loop needs to stop and later continue exactly
/// where it was (the counterpart of PyTorch's `torch.save({"model": ..., "optimizer": ...,
/// "scheduler": ..., "step": ..., "rng": ...})`):
///
///   nn::save_checkpoint("run/ckpt.safetensors", *model, opt, &sched, step, {{"epoch", "3"}});
///   ...
///   // A fresh process: the same architecture, optimiser and scheduler, made as before.
///   nn::CheckpointInfo c = nn::load_checkpoint("run/ckpt.safetensors", *model, opt, &sched);
///   for (int64_t step = c.step; step < total; ++step) train_step(...);
///
/// A checkpoint holds the model's state_dict, the optimiser's state (per-parameter buffers and
/// step counts, each group's options), the LR scheduler's position (an LRScheduler of any kind,
/// SequentialLR included, or a ReduceLROnPlateau), the step counter, the global random
/// generator's state (so dropout draws continue as they would have) and free-form string
/// metadata of the caller's. Resuming from it continues bit for bit like a run that never
/// stopped. The data pipeline needs no state of its own: its random draws are a function of
/// (seed, epoch, index), see Note [Per-sample seeds] in data/generator.hpp; keep the epoch in
/// the metadata.
///
/// The format is one safetensors file, written atomically (temporary file, fsync, rename):
/// either the whole new checkpoint is there or the previous one is untouched, with no set of
/// files that could be left half old, half new. Tensors are named `model.<state_dict key>`
/// and `optim.state.<parameter index>.<buffer>` (e.g. `optim.state.3.exp_avg`); every number
/// is a "__metadata__" string written in its shortest exact form, so doubles round-trip to the
/// bit (see docs/model_files.md for the keys). Any safetensors reader can inspect it.
///
/// load_checkpoint checks the whole file against the objects before it changes anything, and
/// fails with an ember::Error naming the file and the field: a file that is not a checkpoint,
/// an unknown format version, a missing or unparsable entry, an unknown key, a model key that
/// is missing, unexpected or of the wrong shape or dtype, another kind of optimiser or
/// scheduler, other group sizes. A failed load leaves model, optimiser, scheduler and random
/// state as they were.

#include <ember/io/safetensors.hpp>
#include <ember/nn/module.hpp>
#include <ember/optim/optimizer.hpp>
#include <ember/optim/schedulers.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace ember::nn {

/// The LR scheduler a checkpoint saves or restores: any LRScheduler, a ReduceLROnPlateau, or
/// none (nullptr). Pass a reference or a pointer.
class SchedulerRef {
 public:
  SchedulerRef() = default;
  SchedulerRef(std::nullptr_t) {}                                   // NOLINT: implicit, like a pointer
  SchedulerRef(optim::LRScheduler& s) : lr_(&s) {}                  // NOLINT
  SchedulerRef(optim::LRScheduler* s) : lr_(s) {}                   // NOLINT
  SchedulerRef(optim::ReduceLROnPlateau& s) : plateau_(&s) {}       // NOLINT
  SchedulerRef(optim::ReduceLROnPlateau* s) : plateau_(s) {}        // NOLINT

  explicit operator bool() const { return lr_ || plateau_; }
  /// "StepLR", ..., "ReduceLROnPlateau"; "" for none.
  const char* name() const;
  optim::SchedulerState state_dict() const;
  void load_state_dict(const optim::SchedulerState& s) const;

 private:
  optim::LRScheduler* lr_ = nullptr;
  optim::ReduceLROnPlateau* plateau_ = nullptr;
};

/// What load_checkpoint (or checkpoint_info) read besides the objects' state.
struct CheckpointInfo {
  int64_t step = 0;       ///< the step counter given to save_checkpoint
  io::Metadata metadata;  ///< the caller's metadata given to save_checkpoint
};

namespace detail {
void save_checkpoint(const std::string& path, const io::detail::NamedTensors& model, const optim::Optimizer& optimizer,
                     SchedulerRef scheduler, int64_t step, const io::Metadata& metadata);
/// Checks the file against `model` (the module's state_dict) and the objects, restores the
/// optimiser, scheduler and (when asked) the random state, and returns the model's values
/// for the caller to copy in (by then they are known to fit).
CheckpointInfo load_checkpoint(const std::string& path, const io::detail::NamedTensors& model,
                               optim::Optimizer& optimizer, SchedulerRef scheduler, bool restore_rng,
                               io::detail::NamedTensors& model_values);
/// The model's tensors of a checkpoint, without the "model." prefix.
io::detail::NamedTensors checkpoint_model(const std::string& path);
/// Fails with "[op] 'path': message": a module's own load error, told which file it was.
[[noreturn]] void fail_in_file(const char* op, const std::string& path, const char* message);

template <class P>
io::detail::NamedTensors named_state(const BasicModule<P>& module) {
  io::detail::NamedTensors out;
  for (auto& [name, t] : module.state_dict()) out.emplace_back(name, t.impl_ref());
  return out;
}
template <class P>
BasicTensorList<P> tensor_list(io::detail::NamedTensors items) {
  BasicTensorList<P> out;
  out.reserve(items.size());
  for (auto& [name, t] : items) out.insert(std::move(name), BasicTensor<P>(std::move(t)));
  return out;
}
}  // namespace detail

/// Writes model, optimiser, scheduler (may be nullptr), `step` (>= 0), the global random
/// state and `metadata` to `path` as one safetensors file, atomically.
template <class P>
void save_checkpoint(const std::string& path, const BasicModule<P>& model, const optim::Optimizer& optimizer,
                     SchedulerRef scheduler, int64_t step, const io::Metadata& metadata = {}) {
  detail::save_checkpoint(path, detail::named_state(model), optimizer, scheduler, step, metadata);
}

/// Restores what save_checkpoint wrote into objects built as they were when it was saved
/// (same architecture, same kind of optimiser with the same group sizes, same kind of
/// scheduler or none), and the global random state unless `restore_rng` is false. Returns
/// the step and the caller's metadata.
template <class P>
CheckpointInfo load_checkpoint(const std::string& path, BasicModule<P>& model, optim::Optimizer& optimizer,
                               SchedulerRef scheduler = {}, bool restore_rng = true) {
  io::detail::NamedTensors values;
  CheckpointInfo info =
      detail::load_checkpoint(path, detail::named_state(model), optimizer, scheduler, restore_rng, values);
  model.load_state_dict(detail::tensor_list<P>(std::move(values)), true);
  return info;
}

/// Loads only the model of a training checkpoint (for evaluation or export), as nn::load does
/// for a plain weights file: strict reports every mismatch in one error.
template <class P>
LoadResult load_checkpoint_model(const std::string& path, BasicModule<P>& model, bool strict = true) {
  BasicTensorList<P> values = detail::tensor_list<P>(detail::checkpoint_model(path));
#if EMBER_HAS_EXCEPTIONS
  try {
    return model.load_state_dict(values, strict);
  } catch (const Error& e) {
    detail::fail_in_file("load_checkpoint_model", path, e.what());
  }
#else
  return model.load_state_dict(values, strict);
#endif
}

/// The step and the caller's metadata of a checkpoint, from its header alone.
CheckpointInfo checkpoint_info(const std::string& path);

}  // namespace ember::nn

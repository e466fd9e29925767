#pragma once
/// Random generators of one's own, beside the global one that manual_seed seeds: each is a
/// (seed, counter) pair of the same counter-based Philox generator, so draws depend only on the
/// seed and the order of the draws, never on the thread count.
///
///   ember::Generator gen(42);
///   Tensor noise = ember::randn({3}, gen);              // libtorch's randn(shape, generator)
///   {
///     ember::GeneratorGuard use(gen);                   // every draw on this thread, until
///     Tensor w = nn::Linear(4, 4)->weight;              // the guard goes, comes from gen:
///     Tensor d = F::dropout(x, 0.5);                    // init, dropout, fills, sampling
///   }
///
/// A Generator is a handle, as libtorch's: copies share one state; clone() makes an
/// independent copy. One generator may serve several threads (its counter is atomic; reseed it
/// only while no other thread draws from it); a guard affects only the thread that holds it (a
/// DataLoader's workers keep their own seeding). Guards are scoped objects: destroy them in the
/// reverse order of their making (a guard outliving a later one would restore a stale state).
/// nn::save_checkpoint saves the global generator's state only: a training loop that draws
/// under a guard saves and restores its Generator's get_state() / set_state() itself.
/// (ember::data::Generator is the data pipeline's own, unrelated, generator: with both
/// namespaces used, name them qualified.)

#include <atomic>
#include <cstdint>
#include <memory>

namespace ember {

namespace detail {
/// Counter-based random state: results depend only on (seed, offset), not on threads.
struct RandomState {
  uint64_t seed;
  uint64_t offset;
};
struct GeneratorState {
  std::atomic<uint64_t> seed;
  std::atomic<uint64_t> offset{0};
  explicit GeneratorState(uint64_t s) : seed(s) {}
};
/// Makes `g` (null: the global generator) this thread's source of draws; returns the previous
/// one (src/tensor_api.cpp).
GeneratorState* exchange_thread_generator(GeneratorState* g);
}  // namespace detail

class Generator {
 public:
  explicit Generator(uint64_t seed = 0x853c49e6748fea9bULL)
      : state_(std::make_shared<detail::GeneratorState>(seed)) {}

  /// Seeds it and resets its counter.
  void manual_seed(uint64_t seed) {
    state_->seed = seed;
    state_->offset = 0;
  }
  uint64_t current_seed() const { return state_->seed; }
  /// Its (seed, counter), to save and restore.
  detail::RandomState get_state() const { return {state_->seed.load(), state_->offset.load()}; }
  void set_state(detail::RandomState s) {
    state_->seed = s.seed;
    state_->offset = s.offset;
  }
  /// An independent generator in the same state.
  Generator clone() const {
    Generator g(state_->seed);
    g.state_->offset = state_->offset.load();
    return g;
  }
  detail::GeneratorState* state() const { return state_.get(); }

 private:
  std::shared_ptr<detail::GeneratorState> state_;
};

/// While alive, every random draw on this thread comes from `gen` (guards nest).
class GeneratorGuard {
 public:
  explicit GeneratorGuard(const Generator& gen)
      : gen_(gen), previous_(detail::exchange_thread_generator(gen.state())) {}
  ~GeneratorGuard() { detail::exchange_thread_generator(previous_); }
  GeneratorGuard(const GeneratorGuard&) = delete;
  GeneratorGuard& operator=(const GeneratorGuard&) = delete;

 private:
  Generator gen_;  // keeps the state alive while it is in use
  detail::GeneratorState* previous_;
};

}  // namespace ember

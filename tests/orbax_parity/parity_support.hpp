// Helpers of the Orbax and CLU parity tests: a small distributed field to save, a fake clock,
// and the steps a series of saves leaves.
#pragma once

#include <cairn/manager.hpp>

#include <chrono>
#include <filesystem>
#include <memory>
#include <vector>

namespace cairn::parity {

using Steps = std::vector<std::int64_t>;

/// Rank r owns element r of a field of comm.size() doubles, all equal to `value`.
struct Field {
  Field(const Comm& comm, double value) : comm(comm), values(1, value) {}
  ArrayTree tree() {
    ArrayTree t;
    t.add_array("x", ArrayShard::host(values.data(), {comm.size()}, Box{{comm.rank()}, {1}}));
    return t;
  }
  const Comm& comm;
  std::vector<double> values;
};

/// A manual clock: a fixed start, moved forward by the test (Orbax's tests mock datetime).
struct FakeClock {
  std::shared_ptr<std::chrono::system_clock::time_point> now =
      std::make_shared<std::chrono::system_clock::time_point>(std::chrono::hours(480000));
  /// The clock to give a manager.
  [[nodiscard]] std::function<std::chrono::system_clock::time_point()> fn() const {
    return [now = now] { return *now; };
  }
  void advance(std::chrono::seconds by) const { *now += by; }
};

/// Saves `step` with value `step`; returns what save() returned.
inline bool save(CheckpointManager& manager, const Comm& comm, std::int64_t step,
                 ManagerSaveOptions options = {}) {
  Field field(comm, static_cast<double>(step));
  return manager.save(step, ArrayTreeSave(field.tree()), options);
}

/// The value restored from `step` (default: the latest).
inline double restore(CheckpointManager& manager, const Comm& comm,
                      std::optional<std::int64_t> step = std::nullopt) {
  Field field(comm, -1.0);
  const ArrayTreeRestore args(field.tree());
  (void)manager.restore(step, &args);
  return field.values[0];
}

}  // namespace cairn::parity

// The state saved by the jobs of the crash-consistency suite: three array leaves whose values
// are derived from the step and the global index, so a restart can tell exactly which step it
// got back.
#pragma once

#include <cairn/tree.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace cairn::fault_test {

constexpr std::int64_t kDoubles = 3000;  // per rank, leaf "field/u"
constexpr std::int64_t kInts = 1000;     // per rank, leaf "field/id"
constexpr std::int64_t kTail = 200;      // per rank, leaf "tracer"

// One rank's part of the state: three leaves, so a save writes several shards per rank.
struct State {
  std::vector<double> u = std::vector<double>(kDoubles);
  std::vector<std::int32_t> id = std::vector<std::int32_t>(kInts);
  std::vector<double> tracer = std::vector<double>(kTail);
  int rank = 0;
  int size = 1;

  // The values of `step` at this rank's global indices.
  void compute(std::int64_t step) {
    for (std::int64_t i = 0; i < kDoubles; ++i) {
      u[i] = static_cast<double>(step) * 1e7 + static_cast<double>(rank * kDoubles + i);
    }
    for (std::int64_t i = 0; i < kInts; ++i) {
      id[i] = static_cast<std::int32_t>(step * 100000 + rank * kInts + i);
    }
    for (std::int64_t i = 0; i < kTail; ++i) {
      tracer[i] = -static_cast<double>(step) - 1e-3 * static_cast<double>(rank * kTail + i);
    }
  }

  void scramble() {
    std::fill(u.begin(), u.end(), std::numeric_limits<double>::quiet_NaN());
    std::fill(id.begin(), id.end(), -1);
    std::fill(tracer.begin(), tracer.end(), std::numeric_limits<double>::quiet_NaN());
  }

  [[nodiscard]] bool equals(std::int64_t step) const {
    State expected{.rank = rank, .size = size};
    expected.compute(step);
    return u == expected.u && id == expected.id && tracer == expected.tracer;
  }

  [[nodiscard]] cairn::ArrayTree tree() {
    cairn::ArrayTree t;
    t.add_array("field/u", cairn::ArrayShard::host(u.data(), {size * kDoubles},
                                                   cairn::Box{{rank * kDoubles}, {kDoubles}}));
    t.add_array("field/id", cairn::ArrayShard::host(id.data(), {size * kInts},
                                                    cairn::Box{{rank * kInts}, {kInts}}));
    t.add_array("tracer", cairn::ArrayShard::host(tracer.data(), {size * kTail},
                                                  cairn::Box{{rank * kTail}, {kTail}}));
    return t;
  }
};

}  // namespace cairn::fault_test

// cairn — the node-local level's files beside its step records (internal): the count of local
// saves that the drain cadence (LocalLevelOptions::persistent_every) goes by, kept so that a
// restarted job counts on, and what a node's records say about steps of other layouts.
//
// A node's cairn-level/ folder:
//   drain-cadence.json    {"format": "cairn-level-cadence", "version": 1, "local_saves": n,
//                          "step": the step of the n-th save}
#pragma once

#include <cairn/checkpoint_root.hpp>
#include <cairn/comm.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

#include "manager/levels/node_layout.hpp"

namespace cairn::levels {

/// Name of the file in a node's cairn-level/ folder that counts the level's local saves.
inline constexpr const char* kCadenceFile = "drain-cadence.json";

/// The local saves counted so far by the level whose node directory is `directory` on this
/// rank: the largest count any node leader finds in its drain-cadence.json (0 when none
/// has one, or none can be read: a wiped node is counted by the others). Collective over
/// `world`; never throws beyond what an allgather throws (TimeoutError).
[[nodiscard]] std::int64_t counted_local_saves(const Comm& world, const NodeLayout& layout,
                                               const std::filesystem::path& directory);

/// On a node leader: records durably that the level made `local_saves` local saves, the
/// newest of them `step`. A file that cannot be written is logged (level.cadence_unwritten,
/// naming it) and the save counts as made: the cadence then restarts from another node's
/// count, or from zero. Not collective; never throws beyond std::bad_alloc.
void count_local_saves(const NodeLayout& layout, const std::filesystem::path& directory,
                       std::int64_t local_saves, std::int64_t step) noexcept;

/// The newest step that any node's records hold for a layout other than this job's (another
/// world size or other node sizes), described for a person ("step 30, saved by 4 ranks as 2
/// nodes of 2, 2 ranks"), or an empty string when no node holds one newer than `newer_than`.
/// Collective over `world` (the leaders read their records); never throws beyond what an
/// allgather throws.
[[nodiscard]] std::string newest_step_of_another_layout(const Comm& world, const NodeLayout& layout,
                                                        const std::filesystem::path& directory,
                                                        const StepNameFormat& naming,
                                                        std::int64_t newer_than);

}  // namespace cairn::levels

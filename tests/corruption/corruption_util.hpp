// Helpers of the corruption tests: a root with two committed steps holding every file kind
// cairn writes, ways to damage one file, and a restore that reports what happened.
#pragma once

#include <cairn/comm.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cairn::testing {

/// A file of a step, relative to the step directory, and the leaf it stores (if any).
struct StepFile {
  std::string path;
  std::string leaf = {};
};

/// Every file of a step saved by save_two_steps() at `ranks` ranks.
std::vector<StepFile> step_files(int ranks);

/// Saves steps 1 and 2 under `root` with a CheckpointManager (sync): item "state" (array
/// tree: "fields/u" in posix format, "fields/v" in HDF5 when built with it, scalar "time"),
/// item "info" (JSON) and item "blob" (per-rank bytes). Every value depends on the step.
/// Collective over `comm`.
void save_two_steps(const Comm& comm, const std::filesystem::path& root);

/// What restoring one step gave.
struct Outcome {
  bool threw = false;
  std::string message;      ///< what() of the cairn::Error
  bool cairn_error = true;  ///< false when something else than a cairn::Error was thrown
  bool data_equal = false;  ///< restore returned exactly what save_two_steps() saved
};

/// Opens `root` read-only with a CheckpointManager and restores `step` (every item).
/// Collective.
Outcome restore_with_manager(const Comm& comm, const std::filesystem::path& root,
                             std::int64_t step);

/// Restores item "state" of `step` with restore_tree() alone. Collective.
Outcome restore_state_tree(const Comm& comm, const std::filesystem::path& root, std::int64_t step);

/// Damage applied by the primary rank of `comm`, followed by a barrier. Collective.
/// Flips `count` bytes at seeded random positions in [begin, end) (end 0: file size).
void flip_bytes(const Comm& comm, const std::filesystem::path& file, std::uint64_t seed,
                int count = 1, std::uint64_t begin = 0, std::uint64_t end = 0);
void truncate_file(const Comm& comm, const std::filesystem::path& file, std::uint64_t size);
void delete_file(const Comm& comm, const std::filesystem::path& file);
void swap_files(const Comm& comm, const std::filesystem::path& a, const std::filesystem::path& b);
/// Replaces `to` with a fresh recursive copy of `from`.
void copy_tree(const Comm& comm, const std::filesystem::path& from,
               const std::filesystem::path& to);

/// Byte range of the first occurrence of `pattern` in `file` (every rank reads it).
/// Collective.
std::optional<std::pair<std::uint64_t, std::uint64_t>> find_bytes(
    const Comm& comm, const std::filesystem::path& file, const std::vector<std::byte>& pattern);

/// The bytes rank `rank` saved for leaf "fields/v" at `step` (used to find them in data.h5).
std::vector<std::byte> v_row_bytes(std::int64_t step, int rank);

}  // namespace cairn::testing

// cairn — the steps of the commit protocol shared by Checkpointer and AsyncCheckpointer
// (internal). See include/cairn/checkpointer.hpp for the protocol.
#pragma once

#include <cairn/checkpointer.hpp>
#include <cairn/comm.hpp>
#include <cairn/handler.hpp>

#include <boost/json/object.hpp>
#include <chrono>
#include <filesystem>
#include <string_view>

namespace cairn::checkpoint {

/// Agrees on the save and has the primary create a fresh `<dir>.cairn-tmp`. Throws
/// InvalidArgument on every rank when `dir` exists and `force` is false, or when it exists and
/// is not a checkpoint directory (is_checkpoint_directory(), the strict judgement). Collective.
/// Returns the temporary directory.
std::filesystem::path begin_save(const Comm& comm, const std::filesystem::path& dir, bool force,
                                 std::string_view handler_type);

/// What the primary records in cairn-step.json.
struct StepRecord {
  std::string handler_type = {};
  boost::json::object item_metadata = {};  ///< merged in (e.g. "items" of a composite)
  boost::json::value custom = nullptr;
  std::uint64_t bytes = 0;  ///< summed over ranks
  std::chrono::system_clock::time_point started = {};
  boost::json::object timings = {};  ///< seconds per phase
};

/// Writes cairn-step.json and the COMMITTED marker into `tmp`, fsyncs them, gives every file
/// under `tmp` the mode and group of `files`, renames `tmp` to `dir` (replacing an existing
/// `dir` when `force`: the old one is moved to `<dir>.cairn-old`, and back when the rename
/// fails) and fsyncs the parent; the primary does the work, every rank gets the
/// verdict. Collective. Throws IoError on every rank.
void commit(const Comm& comm, const std::filesystem::path& tmp, const std::filesystem::path& dir,
            StepRecord record, bool force, const FileOptions& files = {});

/// Removes `tmp` after a failed save (primary only, best effort). Not collective; never
/// throws.
void discard(const Comm& comm, const std::filesystem::path& tmp) noexcept;

/// Checks that `dir` is a committed checkpoint whose metadata files match the checksums in
/// its COMMITTED marker (only those `args` will read: with composite arguments, the files of
/// the named items) and returns its step metadata (read by the primary, broadcast).
/// Collective. Throws NotFound, or FormatError naming the file of an incomplete or damaged
/// checkpoint.
StepMetadata open_committed(const Comm& comm, const std::filesystem::path& dir,
                            const CheckpointArgs* args = nullptr);

/// Seconds since `start`.
double seconds_since(std::chrono::steady_clock::time_point start);

}  // namespace cairn::checkpoint

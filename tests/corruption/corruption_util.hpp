// Helpers of the corruption tests: a root with two committed steps holding every file kind
// cairn writes, ways to damage one file, a restore that reports what happened, and runs of
// the cairn command-line tool (`cairn verify`) on the damaged checkpoints.
#pragma once

#include <cairn/comm.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
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
/// Writes a well-formed COMMITTED marker into the checkpoint `dir` that lists `files`
/// (relative to `dir`) with their current checksums: a marker resealed after damage, as a
/// buggy tool or a hostile user would leave it. Primary writes; collective (barrier).
void write_marker(const Comm& comm, const std::filesystem::path& dir,
                  const std::vector<std::string>& files);
/// The files the COMMITTED marker of `dir` lists, in its order.
std::vector<std::string> marker_files(const std::filesystem::path& dir);
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

/// The cairn command-line tool named by the environment variable CAIRN_TOOL (set by
/// tests/corruption/CMakeLists.txt when the tool is built), or an empty path.
std::filesystem::path cairn_tool();

/// What one run of a program printed, and how it ended.
struct ToolRun {
  int exit_code = -1;  ///< exit status; 128 + signal number when a signal ended it
  std::string out;     ///< standard output
  std::string err;     ///< standard error
};

/// Runs `program args...` on the primary rank of `comm` as a process of its own and waits for
/// it; every rank gets the result. The child's environment lacks the variables by which an
/// MPI launcher tells a process that it belongs to this job (OMPI_*, PMIX_*, PMI_*, ...), so
/// an MPI program starts as a singleton job of one process. Its output goes through files in
/// `scratch` (a directory). Collective.
ToolRun run_program(const Comm& comm, const std::filesystem::path& program,
                    const std::vector<std::string>& args, const std::filesystem::path& scratch);

/// What `cairn verify --quiet` printed about one checkpoint.
struct VerifyVerdict {
  bool damaged = false;
  /// The "  - " lines after "<path>: DAMAGED", without the dash (lines of a message that
  /// spans several are joined with '\n').
  std::vector<std::string> problems;
};

/// The verdict on each checkpoint in the output of `cairn verify --quiet`, by the path the
/// tool printed.
std::map<std::string, VerifyVerdict> parse_verify_output(const std::string& out);

}  // namespace cairn::testing

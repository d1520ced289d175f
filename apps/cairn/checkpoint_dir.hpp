// cairn (the command-line tool) — reading a checkpoint directory as the on-disk format
// describes it, tolerating damage: every reader here reports problems instead of throwing.
#pragma once

#include <boost/json/value.hpp>
#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cairn_tool {

/// A JSON file read without throwing: the value, or why there is none.
struct JsonFile {
  std::optional<boost::json::value> value;
  std::string error;  ///< set when value is empty: missing, unreadable, too large, bad JSON
};

/// Reads and parses `path` (at most 64 MiB). Never throws beyond std::bad_alloc.
[[nodiscard]] JsonFile read_json_file(const std::filesystem::path& path);

/// Handler type names of the items cairn ships.
inline constexpr std::string_view kArrayTree = cairn::ArrayTreeHandler::kTypeName;
inline constexpr std::string_view kJson = cairn::JsonHandler::kTypeName;
inline constexpr std::string_view kBytes = cairn::BytesHandler::kTypeName;
inline constexpr std::string_view kComposite = cairn::CompositeHandler::kTypeName;

/// One item of a checkpoint.
struct Item {
  std::string name;           ///< item name; empty for a single-item checkpoint
  std::filesystem::path dir;  ///< its directory
  std::string type;           ///< handler type, from the step metadata or guessed from files
  [[nodiscard]] std::string label() const { return name.empty() ? "(item)" : name; }
};

/// What a checkpoint directory holds, read from its files.
struct Checkpoint {
  std::filesystem::path path;
  bool committed = false;  ///< COMMITTED marker present
  /// cairn-step.json, validated (empty when it is missing or damaged).
  std::optional<cairn::StepMetadata> step;
  std::vector<Item> items;  ///< sorted by name
  /// Problems with the metadata (damaged step file, items listed but missing, ...).
  std::vector<std::string> problems;

  /// The metrics saved with the step (custom.metrics), or an empty object.
  [[nodiscard]] boost::json::object metrics() const;
};

/// What a save cost, from its step metadata: the bytes of data and the seconds from the start
/// of its writes to its commit (the sum of the recorded timings: write, stage, finish,
/// finalize, commit).
struct SaveCost {
  std::uint64_t bytes = 0;
  double seconds = 0.0;
  /// Bytes per second; 0 when no time was recorded.
  [[nodiscard]] double bandwidth() const { return seconds > 0 ? bytes / seconds : 0.0; }
};

/// The cost of the save of `ckpt`, or std::nullopt when its step metadata records no
/// timings (a damaged file, or a save by a build that did not record them). Never throws
/// beyond std::bad_alloc.
[[nodiscard]] std::optional<SaveCost> save_cost(const Checkpoint& ckpt);

/// "1.5 MiB in 0.012 s (125 MiB/s)". Never throws beyond std::bad_alloc.
[[nodiscard]] std::string save_cost_text(const SaveCost& cost);

/// Reads the metadata of the checkpoint at `path`. Not collective (every rank may call it;
/// it reads small files only). Never throws beyond std::bad_alloc.
[[nodiscard]] Checkpoint read_checkpoint(const std::filesystem::path& path);

/// What `cairn inspect` prints about a checkpoint before its items: status, handler, data
/// size, metrics and the problems found, one line each. Never throws beyond std::bad_alloc.
[[nodiscard]] std::string step_summary(const Checkpoint& ckpt);

/// Whether `path` looks like one checkpoint (rather than a root of several), for reading it:
/// it holds cairn-step.json or COMMITTED (cairn::looks_like_checkpoint_directory()), or its
/// name ends in .cairn-tmp. Never throws.
[[nodiscard]] bool is_checkpoint_dir(const std::filesystem::path& path);

/// "'P': permission denied ..." when this user may not read `path` (a directory it may not
/// list, or a directory above it that it may not search), else an empty string. Not
/// collective; never throws beyond std::bad_alloc.
[[nodiscard]] std::string permission_problem(const std::filesystem::path& path);

/// Why `path` cannot be read as one checkpoint, with a hint ("permission denied", "does not
/// exist", "is a file", "is a checkpoint root: see `cairn ls`"), or an empty string when it
/// is a checkpoint (or an item directory of one). Not collective; never throws beyond
/// std::bad_alloc.
[[nodiscard]] std::string not_a_checkpoint(const std::filesystem::path& path);

/// Why `path` is not a checkpoint root (cairn::is_checkpoint_root() is false), with a hint:
/// "permission denied", "does not exist", "is one checkpoint", "is an item", "holds no
/// cairn-root.json and no step directory". Not collective; never throws beyond std::bad_alloc.
[[nodiscard]] std::string not_a_root(const std::filesystem::path& path);

/// Where `path` lies when it is inside one of cairn's directories, as words for a message:
/// "the checkpoint 'P'", "the checkpoint root 'P'" or "'P', a checkpoint being saved or
/// deleted" (cairn::enclosing_cairn_directory()); an empty string when it lies in none, or when
/// `root_allowed` and the directory is a root, or when `self_allowed` and the directory is the
/// checkpoint or root at `path` itself. Not collective; never throws beyond std::bad_alloc.
[[nodiscard]] std::string cairn_directory_holding(const std::filesystem::path& path,
                                                  bool root_allowed, bool self_allowed);

/// Bytes of the files under `path` (0 for what cannot be read). Never throws.
[[nodiscard]] std::uint64_t disk_bytes(const std::filesystem::path& path);

/// "1.5 MiB", "312 B".
[[nodiscard]] std::string human_bytes(std::uint64_t bytes);

/// `value` as indented JSON text (two spaces per level), without a trailing newline.
[[nodiscard]] std::string pretty_json(const boost::json::value& value, int indent = 0);

/// "energy=1.5, residual=0.002" for an object of metrics (numbers in %g form).
[[nodiscard]] std::string metrics_text(const boost::json::object& metrics);

}  // namespace cairn_tool

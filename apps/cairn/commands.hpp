// cairn (the command-line tool) — the subcommands. Each returns the process exit code: 0
// success, 1 "found something" (damage, differences), 2 the command itself failed (or throws
// CommandError or cairn::Error for that). With --json, each prints its one document through
// the JsonStream it is given, which is enabled on the primary rank of a --json run only.
#pragma once

#include <cairn/comm.hpp>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "json_stream.hpp"

namespace cairn_tool {

/// The primary rank's answer of `check` (a problem in words, or an empty string), given to
/// every rank, so that all ranks take the same branch before a collective call even where
/// they see the file system differently. Collective. `check` must not throw.
inline std::string on_primary(const cairn::Comm& comm, const std::function<std::string()>& check) {
  return comm.broadcast(comm.is_primary() ? check() : std::string());
}

/// Exit codes shared by every subcommand.
inline constexpr int kOk = 0;
inline constexpr int kFound = 1;
inline constexpr int kFailed = 2;

/// The command cannot do what it was asked (a path that is not a checkpoint, a leaf that does
/// not exist, ...): main prints "cairn <command>: <message>" on stderr, ends the `--json`
/// document with it as its "error" member, and exits with kFailed. Thrown on every rank, or
/// on the primary alone by the commands that only the primary runs.
class CommandError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LsOptions {
  std::string root;
  /// -l: each step's data bytes, save time and bandwidth, and its array leaves' recorded
  /// statistics
  bool long_listing = false;
  bool json = false;
};
/// Lists the steps of a root with status, time, size, items and metrics. The primary rank
/// reads and prints; the others return at once.
int run_ls(const cairn::Comm& comm, const LsOptions& options, JsonStream& json);

struct InspectOptions {
  std::string checkpoint;
  /// An item, or leaves as `cairn dump` chooses them (a path or a glob pattern); empty: all
  std::string item;
  bool decomposition = false;  ///< -D: each array leaf's blocks, one per writer
  bool json = false;
};
/// Describes a checkpoint: its step metadata and each item's leaves (or JSON value), with -D
/// each array leaf's blocks as the index records them. Collective.
int run_inspect(const cairn::Comm& comm, const InspectOptions& options, JsonStream& json);

struct VerifyOptions {
  std::string target;  ///< a checkpoint or a root
  bool quiet = false;
  bool json = false;
};
/// Re-reads every shard of a checkpoint (or of every committed step of a root) and checks
/// checksums and metadata; exit 1 when anything is damaged. Collective.
int run_verify(const cairn::Comm& comm, const VerifyOptions& options, JsonStream& json);

struct DiffOptions {
  std::string a;
  std::string b;
  bool brief = false;  ///< only print differences
  bool quiet = false;  ///< no progress bar
  bool json = false;
};
/// Compares two checkpoints leaf by leaf; exit 1 when they differ. Collective.
int run_diff(const cairn::Comm& comm, const DiffOptions& options, JsonStream& json);

struct ConvertOptions {
  std::string source;
  std::string destination;
  std::string format;
  /// Compression of the array leaves ("none", "zstd", "zstd=<level>", "zfp=<absolute
  /// error>"; zfp applies to float32 and float64 leaves, the others are stored as they are);
  /// empty: none
  std::string compression;
  bool force = false;  ///< replace an existing destination
  bool quiet = false;  ///< no progress bar
  bool json = false;
};
/// Rewrites a checkpoint with its array leaves in another format and compression, keeping
/// its items and step metadata. Collective; each rank handles a slab of every array.
int run_convert(const cairn::Comm& comm, const ConvertOptions& options, JsonStream& json);

struct GcOptions {
  std::string root;
  bool dry_run = false;
  bool force = false;  ///< even when the root is locked
  bool json = false;
};
/// Removes what unfinished saves and deletes left under a root. The primary rank works; the
/// others return at once.
int run_gc(const cairn::Comm& comm, const GcOptions& options, JsonStream& json);

struct DrainOptions {
  std::string root;
  std::string local_dir;  ///< the job's local directory, `{node}` in it as the job gave it
  std::string redundancy = "none";  ///< the level's redundancy, as the job gave it
  int ranks_per_node = 0;           ///< simulated nodes; 0: MPI's nodes or CAIRN_RANKS_PER_NODE
  bool json = false;
};
/// Writes the newest step of a job's node-local level to its root when it is newer than the
/// root's newest (cairn::drain_local_level()): exit 0 when drained or when nothing needed it,
/// 1 when a newer local step could not be drained (the reason is printed). Collective; must
/// run with the job's ranks and ranks per node. The primary rank prints.
int run_drain(const cairn::Comm& comm, const DrainOptions& options, JsonStream& json);

struct DumpOptions {
  std::string checkpoint;
  /// Leaf paths ("item/leaf"), items, groups or glob patterns ("field/*"); empty: all
  std::vector<std::string> leaves;
  std::string slice;   ///< "0:10,5" (Python-like, per dimension); empty: all
  bool stats = false;  ///< min/max/mean instead of the values
  std::string npy;     ///< write the one chosen array (or its slice) to this .npy file
  std::string raw;     ///< ... or as raw little-endian C-order bytes to this file
  bool force = false;  ///< replace an existing --npy/--raw file
  bool quiet = false;  ///< no progress bar
  bool json = false;
};
/// Prints the values (or statistics) of leaves of a checkpoint, an array read through the
/// library's restore with this rank's part of the slice as target box; or writes one array
/// to a .npy or raw file, which the primary rank alone writes, in pieces. Collective; the
/// primary rank prints.
int run_dump(const cairn::Comm& comm, const DumpOptions& options, JsonStream& json);

}  // namespace cairn_tool

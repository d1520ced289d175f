// cairn — storage of array trees: the two on-disk formats (one shared parallel HDF5 file, or
// one file per process plus an index) and N->M restore.
//
// An item directory written by save_tree() holds cairn-tree.json (the tree structure, dtypes,
// global shapes, shard index and an XXH3-64 checksum per chunk of each shard) and the data: data.h5
// (format hdf5, one dataset per array leaf at its leaf path, readable with h5dump or h5py) and/or
// shards/p<rank>.bin (format posix, each rank's shards 4 KiB-aligned). Restore works with any
// number of ranks and any decomposition.
//
// Every function here is collective over the Comm passed to it.
#pragma once

#include <cairn/comm.hpp>
#include <cairn/tree.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace cairn {

/// On-disk format of array leaves.
enum class StorageFormat : std::uint8_t {
  hdf5,   ///< one shared HDF5 file per item, a dataset per array leaf
  posix,  ///< one file per writing process plus the index
};

/// Stable name of a format ("hdf5", "posix"). Never throws.
[[nodiscard]] std::string_view storage_format_name(StorageFormat format) noexcept;
/// The format named `name`, or std::nullopt. Never throws.
[[nodiscard]] std::optional<StorageFormat> storage_format_from_name(std::string_view name) noexcept;
/// Whether this build can write and read `format` (hdf5 needs CAIRN_HAVE_HDF5). Never throws.
[[nodiscard]] bool storage_format_available(StorageFormat format) noexcept;
/// Why this build cannot write and read `format` ("format hdf5 is not available in this build
/// of cairn (configure cairn with -DCAIRN_USE_HDF5=ON)"), or an empty string when it can: the
/// message for a tool's option check or an Unsupported error. Never throws beyond
/// std::bad_alloc.
[[nodiscard]] std::string storage_format_unavailable(StorageFormat format);
/// The version of cairn-tree.json (the on-disk format of array trees) this build writes, the
/// newest it reads. Not collective; never throws.
[[nodiscard]] std::int64_t tree_format_version() noexcept;

/// How save_tree() writes. Aggregate: use designated initializers.
struct TreeSaveOptions {
  /// Format of every array leaf not listed in leaf_formats.
  StorageFormat format = StorageFormat::posix;
  /// Per-leaf format overrides (leaf path -> format).
  std::map<std::string, StorageFormat> leaf_formats = {};
  /// Leaves whose shards may leave parts of the global array unwritten: restore_tree() leaves
  /// those elements of a target as they were, restore_tree_as_saved() returns zeros there.
  /// An empty set plus allow_sparse = true allows it for every leaf.
  bool allow_sparse = false;
  /// The leaves that may be sparse (see allow_sparse).
  std::set<std::string> sparse_leaves = {};
  /// fsync every file written (turn off only for scratch data).
  bool fsync = true;
  /// Staging for shards that are not contiguous host memory: strided views and device
  /// memory are written in runs of at most half of this many bytes (at least 4 KiB), never
  /// copied whole. Device memory goes through two pinned halves, the device-to-host copy of
  /// one run overlapping the write of the previous one. In hdf5 each run is one collective
  /// write of the dataset, every rank making as many as the rank with the most runs.
  std::size_t io_buffer_bytes = std::size_t{16} << 20;
  /// Also treat leaves declared MemoryKind::host as device memory when
  /// cudaPointerGetAttributes says their pointer is device (or managed) memory. Off: only
  /// declared MemoryKind::cuda_device leaves are, and host leaves cost no CUDA call.
  bool detect_device_memory = false;
  /// Size of a checksum chunk: every shard's row-major bytes are cut into chunks of this many
  /// bytes (rounded down to a whole number of elements, at least one element; the last chunk
  /// may be shorter), each with its own XXH3-64 in the index, so that a restore reading part
  /// of a shard reads and verifies only the chunks that cover it. Must be at least 1.
  std::size_t checksum_chunk_bytes = std::size_t{1} << 20;
};

/// A rule of TreeRestoreOptions::renames: target leaves whose whole path matches `target`
/// (an ECMAScript regular expression) are read from the saved leaf `saved`, in which `$1`,
/// `$2`, ... stand for the groups of the match (Orbax's restore transforms with
/// `original_key`). Example: {"blocks/(\\d+)/weight", "params/layer$1/w"}.
struct LeafRename {
  std::string target;  ///< pattern matched against the whole target leaf path
  std::string saved;   ///< the saved leaf's path, with $1, $2, ... for the pattern's groups
};

/// How restore_tree() reads. Aggregate: use designated initializers.
struct TreeRestoreOptions {
  /// Verify the XXH3-64 checksums of what is read. A rank reads the checksum chunks that
  /// cover the intersection of its box with each saved shard (whole shards for checkpoints of
  /// format version 1, which have one checksum per shard) and verifies each one; without
  /// verification it reads only the bytes of the intersection.
  bool verify_checksums = true;
  /// Bytes of the read buffer: a rank reads at most this many bytes at a time (rounded up to
  /// one checksum chunk when a chunk is larger), and a restore never allocates more than this
  /// plus a small constant beyond the caller's buffers, also into device memory and strided
  /// views. At least 4 KiB is used.
  std::size_t io_buffer_bytes = std::size_t{16} << 20;
  /// Allow a target dtype that differs from the saved one (value-checked, see convert()).
  bool allow_cast = false;
  /// Target leaves that may be missing on disk: they are left untouched instead of raising
  /// NotFound.
  std::set<std::string> optional_leaves = {};
  /// Array leaves whose target global shape may differ from the saved one (Orbax's
  /// ArrayRestoreArgs with another global_shape): leaf path -> fill value. The shapes must have
  /// the same number of dimensions. The target receives the saved elements that lie inside
  /// both shapes (a smaller target truncates the array); its elements outside the saved shape
  /// are set to the fill value, converted to the target's dtype with the checks of convert()
  /// (a larger target pads it). Host targets only: a device target that needs padding is
  /// Unsupported.
  std::map<std::string, Scalar> resize_leaves = {};
  /// Where each target leaf comes from when the saved tree has another layout (a checkpoint
  /// of an older version of the program): the first rule whose pattern matches the target
  /// path names the saved leaf; a target leaf that no rule matches is read from the saved leaf
  /// of the same path when default_to_original, and is NotFound otherwise (unless optional).
  /// optional_leaves and resize_leaves name target paths. A pattern that is not a valid
  /// regular expression, or a saved path that is not a valid leaf path, is InvalidArgument.
  std::vector<LeafRename> renames = {};
  /// See renames.
  bool default_to_original = true;
  /// As TreeSaveOptions::detect_device_memory, for restore targets.
  bool detect_device_memory = false;
  /// Replicated target leaves (every rank wants the whole array) are read by the primary rank
  /// only and broadcast: with NCCL when every rank's buffer is device memory and the build has
  /// NCCL, with MPI otherwise. Other leaves are read by each rank as usual.
  bool load_and_broadcast = false;
};

/// How restore_tree_as_saved() lays out what it returns. Aggregate.
struct AsSavedOptions {
  /// Every rank gets every array leaf whole (otherwise: the boxes it wrote, by rank number).
  bool whole_arrays = false;
  /// Only these leaves (and the leaves under these groups); empty: every leaf.
  std::vector<std::string> select = {};
  /// Verify the checksum of every shard read.
  bool verify_checksums = true;
};

/// A description of one saved leaf (from cairn-tree.json).
struct SavedLeafInfo {
  std::string path;                             ///< the leaf's path in the tree, e.g. "fluid/u"
  LeafKind kind = LeafKind::array;              ///< array, scalar, string or group
  StorageFormat format = StorageFormat::posix;  ///< array leaves
  DType dtype = DType::float64;                 ///< array and scalar leaves
  std::vector<std::int64_t> shape;              ///< array leaves
  bool replicated = false;                      ///< array leaves
  /// Array leaves: saved from Fortran, dims reversed (ArrayShard::fortran_order).
  bool fortran_order = false;
  std::size_t shard_count = 0;  ///< array leaves
  std::uint64_t bytes = 0;      ///< array leaves: bytes of all shards
};

/// A description of one saved tree.
struct SavedTreeInfo {
  int world_size = 0;                 ///< ranks of the save
  std::vector<SavedLeafInfo> leaves;  ///< sorted by path
};

/// Writes `tree` into the item directory `dir` (created by the primary rank; existing files of
/// the same names are replaced). Collective over `comm`.
///
/// Before any byte is written every rank checks, identically: the tree structure agrees
/// across ranks (CollectiveMismatch naming the first differing rank); for every array leaf
/// the dtype and global shape agree, boxes lie inside the shape, boxes of non-replicated
/// leaves do not overlap, and (unless sparse is allowed) they cover the array
/// (CollectiveMismatch or InvalidArgument naming the leaf and ranks). Then each rank writes
/// its shards and fsyncs them, and the primary writes cairn-tree.json. Any failure on any rank
/// is thrown on every rank (IoError with the path, ...). A sync save copies no array: shards
/// are written from the caller's memory (strided views are packed through one I/O buffer).
void save_tree(const Comm& comm, const std::filesystem::path& dir, const ArrayTree& tree,
               const TreeSaveOptions& options = {});

/// Reads the description of the tree saved in `dir`. Collective (the primary reads, every
/// rank parses). Throws NotFound when there is no cairn-tree.json, FormatError naming the
/// file and field when it is damaged.
[[nodiscard]] SavedTreeInfo read_tree_info(const Comm& comm, const std::filesystem::path& dir);

/// Restores into `target`: for every leaf of `target` (the same set on every rank) reads the
/// saved leaf of the same path. Array leaves are written into the target's buffers (its box
/// and dtype; any number of ranks and any decomposition); scalar, string and JSON leaves are
/// replaced by the saved values in `target`. Each rank reads only saved shards that intersect
/// its box. Collective. Throws NotFound naming a missing leaf (unless optional),
/// InvalidArgument for a kind, shape or (without allow_cast) dtype that differs from the
/// saved one, FormatError naming the file and leaf for a checksum mismatch, truncated file or
/// damaged index. On failure on any rank every rank throws.
void restore_tree(const Comm& comm, const std::filesystem::path& dir, ArrayTree& target,
                  const TreeRestoreOptions& options = {});

/// Restores the tree as it was saved into tree-owned buffers: each rank gets the boxes that
/// the rank of the same number wrote (nothing when the save had fewer ranks), or every array
/// whole (options.whole_arrays). Replicated leaves come back whole on every rank.
/// Collective. Throws as restore_tree(), and InvalidArgument on every rank, naming the leaf
/// and its size, when a rank cannot allocate a buffer (out of memory).
[[nodiscard]] ArrayTree restore_tree_as_saved(const Comm& comm, const std::filesystem::path& dir,
                                              const AsSavedOptions& options = {});

/// What verify_tree() found in one item directory.
struct TreeVerifyReport {
  std::size_t leaves = 0;             ///< leaves in the index (0 when the index is unreadable)
  std::size_t shards = 0;             ///< array shards re-read, over all ranks
  std::uint64_t bytes = 0;            ///< bytes re-read, over all ranks
  std::vector<std::string> problems;  ///< one message per damaged thing, sorted; empty: intact
};

/// Progress of verify_tree() on the calling rank: shards this rank checked so far, out of the
/// shards assigned to it.
using VerifyProgress = std::function<void(std::size_t done, std::size_t total)>;

/// Checks the tree saved in `dir` without restoring it: parses and validates cairn-tree.json
/// (as every read does), then re-reads every shard of every array leaf in full and compares
/// the XXH3-64 checksum of each of its chunks with the index. The shards are divided among
/// the ranks of `comm` (round-robin in index order), so the check runs in parallel and each
/// rank holds one 16 MiB window (or one checksum chunk, when larger) at a time. Damage does not
/// throw: a missing or unparsable index, a missing, truncated or unreadable data file, a missing
/// HDF5 dataset or a checksum mismatch becomes a line of the report naming the file and the leaf
/// (and the shard's rank and box), and every rank returns the same report. `progress`, when given,
/// is called on each rank after each of its shards. Collective over `comm`. Throws TimeoutError
/// when ranks do not arrive.
[[nodiscard]] TreeVerifyReport verify_tree(const Comm& comm, const std::filesystem::path& dir,
                                           const VerifyProgress& progress = {});

}  // namespace cairn

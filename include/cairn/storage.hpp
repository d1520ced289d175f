// cairn — storage of array trees: the two on-disk formats (one shared parallel HDF5 file, or
// one file per process plus an index) and N->M restore.
//
// An item directory written by save_tree() holds the index, cairn-tree.json (the tree structure,
// dtypes, global shapes) and cairn-tree.bin (the shard records and an XXH3-64 checksum per chunk
// of each shard), and the data: data.h5 (format hdf5, one dataset per array leaf at its leaf
// path, readable with h5dump or h5py) and/or shards/p<rank>.bin (format posix, each rank's
// shards 4 KiB-aligned; shards/a<k>.bin, shared by a group of ranks, with
// TreeSaveOptions::posix.aggregation). Restore works with any number of ranks and any
// decomposition. docs/architecture.md specifies the files.
//
// Every function here is collective over the Comm passed to it.
#pragma once

#include <cairn/comm.hpp>
#include <cairn/tree.hpp>

#include <boost/json/object.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cairn {

/// On-disk format of array leaves.
enum class StorageFormat : std::uint8_t {
  hdf5,   ///< one shared HDF5 file per item, a dataset per array leaf
  posix,  ///< one file per writing process plus the index
};

/// One storage format as this build knows it.
struct StorageFormatInfo {
  StorageFormat format = StorageFormat::posix;  ///< its value
  std::string_view name;                        ///< its stable name ("posix", "hdf5")
  std::string_view summary;                     ///< one line: how it lays out an item's data
  bool available = false;                       ///< this build writes and reads it
};

/// Every storage format cairn knows, in StorageFormat order, with whether this build has it:
/// what a tool lists or offers as a choice. Not collective; never throws beyond
/// std::bad_alloc.
[[nodiscard]] std::vector<StorageFormatInfo> storage_formats();
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
/// The version of cairn-tree.json (the on-disk format of array trees) this build writes: 6. A
/// tree with a posix leaf whose zstd chunks are shuffled (Compression::shuffle) is written as
/// version 7, the newest this build reads, so that an older cairn refuses it. Not collective;
/// never throws.
[[nodiscard]] std::int64_t tree_format_version() noexcept;
/// Whether `file_name` (a name without directories) is a file of a saved tree's index:
/// cairn-tree.json, or cairn-tree.bin (index version 4 and later), which holds the shard
/// records and data checksums in sections whose checksums cairn-tree.json records. A
/// checkpoint's commit marker lists cairn-tree.json, not cairn-tree.bin. Not collective;
/// never throws.
[[nodiscard]] bool is_tree_index_file(std::string_view file_name) noexcept;

/// What a save belongs to, for people handed its files without cairn: formats that describe
/// themselves record it next to the data (hdf5: the root attributes "cairn_step" and
/// "cairn_metrics" of data.h5, see docs/architecture.md). CheckpointManager fills it for each
/// step and hands it down through CheckpointSaveOptions and AsyncContext to the handlers.
/// Aggregate: use designated initializers.
struct SaveProvenance {
  /// The step the save is, when it is one of a series (CheckpointManager's step); std::nullopt
  /// otherwise.
  std::optional<std::int64_t> step = {};
  /// The metrics given to the save (ManagerSaveOptions::metrics); empty when none.
  boost::json::object metrics = {};
};

/// How the stored bytes of an array leaf are compressed. Aggregate: use designated
/// initializers, or the named constructors.
struct Compression {
  /// The compressors.
  enum class Kind {
    none,  ///< stored as they are
    zstd,  ///< lossless (Zstandard)
    zfp,   ///< lossy with an error bound (ZFP, fixed accuracy): float32 and float64 leaves only
  };
  /// The compressor.
  Kind kind = Kind::none;
  /// The zstd level that a level of 0 stands for. Level 1, zstd's fastest positive level:
  /// on the smooth float64 field of the benchmark, with shuffle, it keeps 0.59 of the bytes
  /// against level 3's 0.56, at about twice the speed (BENCHMARKS.md, "Compression").
  static constexpr int kDefaultZstdLevel = 1;
  /// zstd: the compression level, 1 (fastest) to 19; 0: kDefaultZstdLevel.
  int level = 0;
  /// zstd: regroup the bytes of the elements before compressing, byte k of every element
  /// together (HDF5's shuffle filter, in data.h5; the same transform per checksum chunk in
  /// posix), so that zstd finds the runs of alike high-order bytes of smooth numeric data. On
  /// by default: on a smooth float64 field it keeps fewer bytes and compresses faster than
  /// zstd alone (BENCHMARKS.md, "Compression"). Ignored by none and zfp.
  bool shuffle = true;
  /// zfp: every restored element differs from the saved one by at most this much. Used when
  /// positive.
  double absolute_error = 0;
  /// zfp: every restored element differs from the saved one by at most this fraction of the
  /// largest finite magnitude of the whole leaf (all ranks' shards), in every format. (posix
  /// compresses each checksum chunk with its own largest magnitude, which bounds the error
  /// tighter still; hdf5 gives the dataset one tolerance.) Used when positive and
  /// absolute_error is not.
  double relative_error = 0;

  /// Stored as they are. Never throws.
  [[nodiscard]] static Compression none() { return {}; }
  /// Lossless zstd at `level` (0: kDefaultZstdLevel), the bytes shuffled first unless `shuffle`
  /// is false. Never throws; a bad level fails the save.
  [[nodiscard]] static Compression zstd(int level = 0, bool shuffle = true) {
    return {.kind = Kind::zstd, .level = level, .shuffle = shuffle};
  }
  /// ZFP with an absolute error bound. Never throws; a bound <= 0 fails the save.
  [[nodiscard]] static Compression zfp_absolute(double bound) {
    return {.kind = Kind::zfp, .absolute_error = bound};
  }
  /// ZFP with an error bound relative to the largest finite magnitude of the leaf (see
  /// relative_error). Never throws; a bound <= 0 fails the save.
  [[nodiscard]] static Compression zfp_relative(double bound) {
    return {.kind = Kind::zfp, .relative_error = bound};
  }
  /// Equal when every field is.
  friend bool operator==(const Compression&, const Compression&) = default;
};

/// How one array leaf is saved (Orbax's SaveArgs). Aggregate: use designated initializers.
struct LeafSaveArgs {
  /// The dtype stored on disk, when it differs from the leaf's own: the shard is cast while
  /// it is written (float64 state saved as float32 or bfloat16), with the rules of convert()
  /// (rounding allowed; a finite value that overflows the stored dtype, or a value an integer
  /// dtype cannot hold, fails the save naming the leaf). The index, data.h5 and the checksums
  /// hold the stored dtype and its bytes; restoring into the leaf's original dtype is a
  /// restore-time cast (TreeRestoreOptions::allow_cast). std::nullopt: stored as it is.
  std::optional<DType> dtype = std::nullopt;
  /// Bytes of this leaf's checksum chunks (rounded down to whole stored elements, at least
  /// one); 0: TreeSaveOptions::checksum_chunk_bytes.
  std::size_t chunk_bytes = 0;
  /// Compression of this leaf's stored bytes; std::nullopt: TreeSaveOptions::compression.
  std::optional<Compression> compression = std::nullopt;
  /// Shape of the stored chunks of this leaf's hdf5 dataset (one extent per dimension, each
  /// at least 1); empty: a contiguous dataset when not compressed, otherwise chunks chosen by
  /// cairn. The posix format ignores it.
  std::vector<std::int64_t> chunk_shape = {};
};

/// How the posix format groups ranks into shard files (as ADIOS2 BP5's aggregators): each
/// group has one file, `shards/a<k>.bin`, in which the shards of every rank of the group lie in
/// that rank's own 4 KiB-aligned region (sized from the shards' bytes, or their compressed
/// bound, before anything is written), so the files of a save grow with the groups, not the
/// ranks. per_rank keeps one file per writing rank, `shards/p<rank>.bin`. Who writes a group's
/// file is `writers`: the files and the index are byte for byte the same either way. Every
/// rank must pass the same (CollectiveMismatch otherwise). Aggregate: use designated
/// initializers.
struct PosixAggregation {
  /// How the groups are formed.
  enum class Kind {
    per_rank,  ///< no aggregation: one file per writing rank
    per_node,  ///< one group per node (ranks with the same MPI processor name)
    count,     ///< `count` groups of consecutive ranks (at most one per rank)
  };
  /// How the groups are formed.
  Kind kind = Kind::per_rank;
  /// Kind::count: the number of groups (files), at least 1; more than the ranks is one per
  /// rank. Ignored by the other kinds.
  int count = 0;
  /// Who writes the file of a group.
  enum class Writers {
    /// Every rank writes its own shards into its region of the file (pwrite); no shard byte
    /// moves between ranks.
    every_rank,
    /// The group's aggregator (its first rank) alone opens and writes the file: the other
    /// ranks copy their shards into a shared-memory ring of the node (POSIX shm,
    /// PosixOptions::ring_bytes per group, at least 68 KiB per shipping rank) from
    /// which the aggregator writes them, as ADIOS2 BP5's two-level aggregation does. The ranks
    /// of every group must then share a node (always so for per_node; a `count` group that
    /// spans nodes is InvalidArgument on every rank). Ignored by per_rank.
    aggregator,
  };
  /// Who writes the file of a group (see Writers).
  Writers writers = Writers::every_rank;
  /// Equal when every field is.
  friend bool operator==(const PosixAggregation&, const PosixAggregation&) = default;
};

/// The posix format's own options (TreeSaveOptions::posix). Aggregate: use designated
/// initializers.
struct PosixOptions {
  /// Grouping of the shard files (see PosixAggregation). A count below 1 is InvalidArgument
  /// on every rank.
  PosixAggregation aggregation = {};
  /// Bytes of the shared-memory ring of each group whose ranks ship their shards to the
  /// aggregator (PosixAggregation::Writers::aggregator); at least 68 KiB per shipping rank is
  /// used whatever this says.
  std::size_t ring_bytes = std::size_t{16} << 20;
};

/// The hdf5 format's own options (TreeSaveOptions::hdf5). Aggregate: use designated
/// initializers.
struct Hdf5Options {
  /// MPI-IO hints (MPI_Info key -> value, e.g. "striping_factor", "striping_unit",
  /// "cb_nodes", "romio_cb_write") for data.h5's MPI-IO file access (H5Pset_fapl_mpio: the
  /// collective writes of compressed datasets); the MPI library ignores keys it does not know.
  /// Ranks must agree (CollectiveMismatch); an empty key or value is InvalidArgument.
  std::map<std::string, std::string> mpi_info_hints = {};
};

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
  /// one run overlapping the write of the previous one. It bounds nothing else (the posix
  /// shipping ring is PosixOptions::ring_bytes).
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
  /// The step and metrics the tree is saved with, recorded by formats that describe
  /// themselves (hdf5). A handler given an AsyncContext whose provenance has a step or metrics
  /// replaces this with it.
  SaveProvenance provenance = {};
  /// Per-leaf save arguments (array leaf path -> arguments): a stored dtype, a checksum chunk
  /// size. A path that is not an array leaf of the tree, or a cast convert() does not allow
  /// (complex to real), is InvalidArgument on every rank. Leaves not listed are written as
  /// they are, with no extra copy.
  std::map<std::string, LeafSaveArgs> save_args = {};
  /// Compression of every array leaf without its own in save_args. Saving with a compression
  /// this build lacks (libzstd, libzfp) is Unsupported on every rank; zfp on a leaf that is
  /// not float32 or float64, or a bound that is not positive, is InvalidArgument naming the
  /// leaf.
  Compression compression = {};
  /// Deprecated (removed in the next release): the alias of posix.aggregation, used when
  /// posix.aggregation is left at its default; both set and different is InvalidArgument on
  /// every rank.
  PosixAggregation posix_aggregation = {};
  /// Deprecated (removed in the next release): the alias of hdf5.mpi_info_hints, on the same
  /// terms as posix_aggregation.
  std::map<std::string, std::string> mpi_info_hints = {};
  /// An incremental save: the item directory of an earlier committed save of the same tree
  /// (e.g. `<root>/<previous step>/<item>`). A checksum chunk of a posix leaf whose stored
  /// bytes have the XXH3-64 and size of the same chunk of that save (same leaf path, global
  /// shape, stored dtype, chunk size, compression, and a saved shard of the same box) is not
  /// written again: the index refers to the bytes where they already lie, and the data files
  /// holding them are hard-linked into this item's `shards/` (`shards/r<k>.bin`; copied where
  /// the file system cannot link), so deleting the earlier save never removes a chunk a later
  /// one still refers to. hdf5 leaves are written whole. Empty: every chunk is written. A base
  /// that is missing, unreadable or of an index version before 4 is no error: the save writes
  /// every chunk and logs a warning naming it. Ranks must agree (CollectiveMismatch).
  std::filesystem::path incremental_base = {};
  /// Pace of the data writes on each rank, in bytes per second (posix; an hdf5 leaf is
  /// written at the file system's pace); 0: as fast as the file system takes them. A
  /// background save (CheckpointManager's drain) paces itself so that the job's own I/O is
  /// not starved.
  std::uint64_t write_bytes_per_second = 0;
  /// The posix format's own options: the grouping of its files, the shipping ring.
  PosixOptions posix = {};
  /// The hdf5 format's own options: MPI-IO hints.
  Hdf5Options hdf5 = {};
};

/// A rule of TreeRestoreOptions::renames: target leaves whose whole path matches `target`
/// (an ECMAScript regular expression) are read from the saved leaf `saved`, in which `$1`,
/// `$2`, ... stand for the groups of the match (Orbax's restore transforms with
/// `original_key`). Example: {"blocks/(\\d+)/weight", "params/layer$1/w"}.
struct LeafRename {
  std::string target;  ///< pattern matched against the whole target leaf path
  std::string saved;   ///< the saved leaf's path, with $1, $2, ... for the pattern's groups
};

/// A target array leaf computed from several saved leaves (Orbax's restore transforms with a
/// value function of several saved leaves): converting a checkpoint of an older layout, e.g.
/// a velocity saved as two components into their magnitude. Aggregate.
struct DerivedLeaf {
  /// The saved array leaves the target is computed from (saved paths; renames do not apply).
  /// Each must have the target's global shape.
  std::vector<std::string> sources = {};
  /// Fills this rank's box of `target` (the target leaf's shard, host memory, maybe strided)
  /// from `sources`: the saved leaves in the order of `sources`, each restored (any N->M,
  /// verified as any read) into a contiguous host buffer of the same box, in its saved dtype.
  /// Called on every rank, also one whose box is empty; an exception thrown on any rank is
  /// thrown by restore_tree() on every rank.
  std::function<void(std::span<const ArrayShard> sources, const ArrayShard& target)> fill = {};
};

/// How restore_tree() reads. Aggregate: use designated initializers.
struct TreeRestoreOptions {
  /// Verify the XXH3-64 checksums of what is read. A rank reads the checksum chunks that
  /// cover the intersection of its box with each saved shard (whole shards for checkpoints of
  /// format version 1, which have one checksum per shard) and verifies each one; without
  /// verification it reads only the bytes of the intersection.
  bool verify_checksums = true;
  /// The bytes a restore holds in flight on each rank (Orbax's restore_concurrent_gb, in
  /// bytes): a rank reads at most half of this at a time into its read window (rounded up to
  /// one checksum chunk when a chunk is larger), the other half stages device and strided
  /// targets run by run, and a cast goes through a 64 KiB block. A restore never allocates
  /// more than this beyond the caller's buffers, whatever the size of the tree, the N->M
  /// decomposition or the cast, plus two checksum chunks at the edges of a direct read, a small
  /// constant and its plan (about 100 bytes per row of the intersection of a target box with
  /// a saved shard). At least 8 KiB is used.
  std::size_t restore_concurrent_bytes = std::size_t{16} << 20;
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
  /// Target array leaves computed from several saved leaves (target path -> rule). A derived
  /// leaf is not read itself (renames and default_to_original do not apply to it); its sources
  /// are. A source missing on disk is NotFound naming it and the target, unless the target is
  /// in optional_leaves (then it is left untouched). A target path that is not an array leaf
  /// of the target, a rule without sources or fill, a source that is not an array or has
  /// another global shape is InvalidArgument; a device target is Unsupported. The sources of
  /// one derived leaf (this rank's box of each) are held together while `fill` runs, beyond
  /// restore_concurrent_bytes.
  std::map<std::string, DerivedLeaf> derived_leaves = {};
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

/// A value of LeafStats: exact for integer dtypes (std::int64_t for signed ones, std::uint64_t
/// for unsigned ones), a double for floating ones.
using LeafStatValue = std::variant<std::int64_t, std::uint64_t, double>;

/// Statistics of an array leaf's values, recorded by save_tree() from the bytes it stores while
/// it checksums them, so that a listing shows them without reading the data ("stats" of the
/// leaf in cairn-tree.json). Kept for integer and floating dtypes, of the values as stored:
/// after a save-time cast (LeafSaveArgs::dtype), before a lossy compression (zfp).
struct LeafStats {
  /// The smallest value that is neither NaN nor infinite; absent when there is none (no
  /// elements, or every one NaN or infinite).
  std::optional<LeafStatValue> min = {};
  /// The largest value that is neither NaN nor infinite; absent exactly when `min` is.
  std::optional<LeafStatValue> max = {};
  std::uint64_t nan_count = 0;  ///< floating dtypes: the values that are NaN
  std::uint64_t inf_count = 0;  ///< floating dtypes: the values that are infinite (either sign)
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
  /// Array leaves: the compression of the stored bytes.
  Compression compression = {};
  /// Array leaves: bytes all shards take on disk: the compressed size of a leaf stored in
  /// compressed chunks (posix), otherwise `bytes`.
  std::uint64_t stored_bytes = 0;
  /// Array leaves of an incremental save (TreeSaveOptions::incremental_base): the checksum
  /// chunks that lie in an earlier save's files (not written by this save); 0 for a leaf
  /// written whole.
  std::uint64_t referenced_chunks = 0;
  /// Array leaves: the stored bytes of those chunks (0 for a leaf written whole).
  std::uint64_t referenced_bytes = 0;
  /// Array leaves of an integer or floating dtype: their values' statistics as saved; absent
  /// for other dtypes and for leaves saved before cairn recorded them.
  std::optional<LeafStats> stats = {};
};

/// A description of one saved tree.
struct SavedTreeInfo {
  int world_size = 0;                 ///< ranks of the save
  std::vector<SavedLeafInfo> leaves;  ///< sorted by path
  /// The empty groups and lists of the saved tree (ArrayTree::add_empty), by path.
  std::map<std::string, EmptyNode, std::less<>> empty_nodes = {};
};

/// Writes `tree` into the item directory `dir` (created by the primary rank; existing files of
/// the same names are replaced). Collective over `comm`.
///
/// Before any byte is written every rank checks, identically: the tree structure agrees
/// across ranks (CollectiveMismatch naming the first differing rank); for every array leaf
/// the dtype and global shape agree, boxes lie inside the shape, boxes of non-replicated
/// leaves do not overlap, and (unless sparse is allowed) they cover the array
/// (CollectiveMismatch or InvalidArgument naming the leaf and ranks). Then each rank writes
/// its shards and fsyncs them; then each array leaf's section of cairn-tree.bin is written by
/// one rank, and the primary writes its header and cairn-tree.json. Any failure on any rank
/// is thrown on every rank (IoError with the path, ...). A sync save copies no array: shards
/// are written from the caller's memory (strided views are packed through one I/O buffer).
void save_tree(const Comm& comm, const std::filesystem::path& dir, const ArrayTree& tree,
               const TreeSaveOptions& options = {});

/// Reads the description of the tree saved in `dir`. Collective (the primary reads, every
/// rank parses). Throws NotFound when there is no cairn-tree.json, FormatError naming the
/// file and field when it is damaged.
[[nodiscard]] SavedTreeInfo read_tree_info(const Comm& comm, const std::filesystem::path& dir);

/// The whole index of the tree saved in `dir` as JSON: cairn-tree.json and, for an index of
/// version 4 or later, every shard record of cairn-tree.bin ("shards" of each array leaf: rank,
/// box, file, byte offset, checksums as hex), as `cairn inspect --json` shows it. Not collective
/// (reads both files on the calling rank). Throws NotFound, IoError, FormatError naming the
/// file.
[[nodiscard]] boost::json::object read_tree_index_json(const std::filesystem::path& dir);

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
/// whole (options.whole_arrays). Replicated leaves come back whole on every rank, and so do
/// the tree's empty groups and lists (those under options.select).
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

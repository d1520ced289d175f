// cairn_bench: what every benchmark case shares — the data set (a tree of float64 arrays in
// 2-D blocks, plus a metadata-heavy tree of many small leaves), timing across ranks, page
// cache dropping, peak-memory counters and the record of results.
#pragma once

#include <mpi.h>

#include <cairn/comm.hpp>
#include <cairn/storage.hpp>
#include <cairn/tree.hpp>

#include <boost/json/object.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "proc_memory.hpp"

namespace bench {

using cairn_app::measure_peak_rss;
using cairn_app::PeakRss;
using cairn_app::status_bytes;

/// This process's rank in MPI_COMM_WORLD, and its size.
int world_rank();
int world_size();
/// The maximum of `value` over MPI_COMM_WORLD. Collective.
std::int64_t world_max(std::int64_t value);

/// The arrays every contender writes: `leaves` arrays of rows x cols float64, and
/// `meta_leaves` arrays of `meta_elems` float64 (the metadata-heavy case).
struct Shape {
  int leaves = 8;
  std::int64_t rows = 8192;
  std::int64_t cols = 4096;
  int meta_leaves = 10000;
  std::int64_t meta_elems = 512;

  /// Bytes of the large tree.
  [[nodiscard]] std::int64_t total_bytes() const { return leaves * rows * cols * 8; }
  /// Bytes of the metadata-heavy tree.
  [[nodiscard]] std::int64_t meta_bytes() const { return meta_leaves * meta_elems * 8; }
};

/// The near-square grid of `size` ranks: {grid rows, grid columns}, rows <= columns.
std::pair<int, int> grid_of(int size);
/// Rank `rank`'s block of a rows x cols array on the grid_of(size) grid of ranks.
cairn::Box block_of(const Shape& shape, int rank, int size);
/// Rank `rank`'s slab of whole rows of a rows x cols array split over `size` ranks (the
/// decomposition of resharded restores).
cairn::Box slab_of(const Shape& shape, int rank, int size);
/// Rank `rank`'s slab of whole columns of a rows x cols array split over `size` ranks (the
/// transposed decomposition of resharded restores).
cairn::Box column_slab_of(const Shape& shape, int rank, int size);
/// Rank `rank`'s part of a 1-D array of n elements split over `size` ranks.
cairn::Box range_of(std::int64_t n, int rank, int size);

/// The value of element (i, j) of large leaf `leaf`: exact in float64, different everywhere.
double value_at(const Shape& shape, int leaf, std::int64_t i, std::int64_t j);
/// A buffer holding `box` of large leaf `leaf`, row-major.
std::vector<double> fill_box(const Shape& shape, int leaf, const cairn::Box& box);
/// Number of box elements whose value in `data` differs from value_at().
std::int64_t count_mismatches(const Shape& shape, int leaf, const cairn::Box& box,
                              const std::vector<double>& data);

/// This rank's blocks of every large leaf (block_of on MPI_COMM_WORLD), filled with value_at().
std::vector<std::vector<double>> local_blocks(const Shape& shape);
/// Buffers of the same sizes as local_blocks(), every page touched, contents undefined.
std::vector<std::vector<double>> empty_like(const std::vector<std::vector<double>>& blocks);

/// Path of large leaf `leaf` and of small leaf `leaf` in the trees.
std::string leaf_path(int leaf);
std::string meta_path(int leaf);

/// The storage format `name` ("posix", "hdf5"). Throws std::runtime_error when this build
/// lacks it.
cairn::StorageFormat format_named(const std::string& name);

/// The many-leaves tree of the metadata cases: shape.meta_leaves float64 leaves of
/// shape.meta_elems elements, this rank holding range_of() of each; `tree` views `data`
/// (distinct values per leaf), `target` views `back` (filled with -1) in the same boxes.
struct MetaTrees {
  std::vector<double> data;
  std::vector<double> back;
  cairn::ArrayTree tree;
  cairn::ArrayTree target;
};
/// Builds the MetaTrees of this rank (MPI_COMM_WORLD's rank and size).
MetaTrees make_meta_trees(const Shape& shape);

/// Seconds between two barriers on MPI_COMM_WORLD around `body` (so: the slowest rank).
double timed(const std::function<void()>& body);

/// Writes back dirty pages and drops the page cache (rank 0; needs root), then barrier.
/// Returns "dropped", "disabled" or "not permitted: <reason>" (the same on every rank).
std::string drop_caches(bool enabled);

/// Removes `path` on rank 0, then barrier.
void remove_tree(const std::filesystem::path& path);

/// Collects one JSON object per measurement; rank 0 writes them as JSON lines.
class Recorder {
 public:
  explicit Recorder(std::filesystem::path out) : out_(std::move(out)) {}
  /// Records `name` (e.g. "cairn.posix.save_sync"), repetition `rep`, the seconds and the
  /// bytes moved, plus any extra fields. Rank 0's values are kept.
  void add(const std::string& name, int rep, double seconds, std::int64_t bytes,
           boost::json::object extra = {});
  /// Appends everything recorded to the output file (rank 0).
  void flush();

 private:
  std::filesystem::path out_;
  std::vector<boost::json::object> records_;
};

/// Which part of the run: what to write, where, how often, and whether to drop caches.
struct Run {
  Shape shape;
  std::filesystem::path dir;
  int reps = 3;
  bool drop = true;
  std::size_t io_buffer_bytes = std::size_t{16} << 20;
  /// Grouping and writers of cairn's posix shard files (--posix-files, --posix-writers), and
  /// their names for the records ("per-rank", "per-node/aggregator", ...).
  cairn::PosixAggregation posix_aggregation = {};
  std::string posix_files = "per-rank";
  Recorder* recorder = nullptr;
};

/// What a metadata case `name` ("meta", "scaling") of format `format_name` starts from: the
/// format, the prefix of its records ("cairn.<format>."), MPI_COMM_WORLD as a cairn::Comm, this
/// rank's MetaTrees, and its directory run.dir / "cairn-<name>-<format>", removed. Collective
/// over MPI_COMM_WORLD.
struct MetaCase {
  MetaCase(const Run& run, const std::string& name, const std::string& format_name);

  cairn::StorageFormat format;
  std::string prefix;
  cairn::Comm world;
  MetaTrees trees;
  std::filesystem::path dir;
};

/// Physical limit for async copies: memcpy bandwidth of every rank copying its share at once.
void run_memcpy(const Run& run);
/// Hand-written baselines: one file per process with write+fsync, and MPI_File_write_at_all
/// into one shared file with MPI_File_sync; each read back after dropping caches.
void run_posix_baseline(const Run& run);
void run_mpiio_baseline(const Run& run);
/// cairn in `format` ("posix" or "hdf5"): sync save (with peak RSS), restores (with peak RSS)
/// on the same decomposition and resharded (to fewer ranks, to column slabs, and from a save
/// on fewer ranks to more), async saves (copy and zero-copy), and the metadata-heavy tree.
void run_cairn(const Run& run, const std::string& format);
/// The async saves of run_cairn() alone (copy and zero-copy), on the same tree.
void run_cairn_async_only(const Run& run, const std::string& format);
void run_cairn_meta(const Run& run, const std::string& format);
/// cairn in `format` with each compression (none, zstd, zfp within 1e-6) on a smooth field and
/// on random data: sync save time, bytes on disk, restore time after dropping the page cache,
/// the restored values checked ("cairn.<format>.compress.<compression>.<data>.save" and
/// ".restore" records; "...<compression>.unavailable" where the build or format cannot store it).
/// Throws std::runtime_error when restored values are off by more than the bound.
void run_cairn_compress(const Run& run, const std::string& format);
/// cairn's incremental saves: a field of rows x cols float64 saved for 6 steps through a
/// CheckpointManager (posix, sync saves) with CheckpointManagerOptions::incremental off and on,
/// a tenth of its rows changing before each step: per step the save time, the bytes the save
/// wrote and the bytes allocated to its own shard files; the restore time of the last step,
/// its values checked exactly ("cairn.posix.incremental.<off|on>.save" and ".restore"
/// records). Throws std::runtime_error when a restored value differs.
void run_cairn_incremental(const Run& run);
/// cairn's multi-level checkpointing, every rank a node of its own (ranks_per_node = 1) with
/// its local directory under /dev/shm and the persistent level in run.dir: per repetition the
/// synchronous save of the main tree to the persistent level, a memcpy of its bytes, the
/// blocking time of a local save with redundancy none, partner and xor (and the bytes of the
/// redundancy files each stores), the restore of the partner save after the last node lost its
/// local files (rebuilt from its partner's copy) and of the same step from the persistent
/// level, each checked exactly, and a partner save's blocking time during a drain and without
/// one ("cairn.levels.*" records; "cairn.levels.unavailable" on 1 rank). Throws
/// std::runtime_error when a restored value differs or the local level did not serve.
void run_cairn_levels(const Run& run);
/// cairn in `format` on the metadata-heavy tree, each save and restore an MPI_Pcontrol phase
/// ("save", "restore") for the PMPI counting layer; records time, rank 0's peak memory and the
/// step directory's files, metadata and index bytes (apps/bench/scaling.py).
void run_cairn_scaling(const Run& run, const std::string& format);

/// The soak case: how many async saves, how many steps retention keeps, and the tree.
struct Soak {
  int saves = 2000;
  int keep = 3;
  int samples = 41;  ///< samples of the counters, the first after the first save
  int leaves = 4;
  std::int64_t leaf_elems = 512;   ///< float64 elements of each leaf, over all ranks
  bool background_delete = false;  ///< the manager's enable_background_delete
};
/// The soak case: `soak.saves` async saves through a CheckpointManager with max_to_keep =
/// `soak.keep`, sampling (with no save in flight) the resident memory and open descriptors
/// (maxima over ranks) and the files and bytes under the root, as "cairn.soak.sample"
/// records. The checks of growth are check_results.py's.
void run_soak(const Run& run, const Soak& soak);

}  // namespace bench

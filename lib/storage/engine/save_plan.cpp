// TreeWriter, planning a save: the checks every rank makes alike, the layouts agreed, the
// formats' writers opened.
#include "storage/engine/tree_writer.hpp"

#include <boost/json.hpp>
#include <cairn/config.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "base/durable_file.hpp"
#include "base/fault.hpp"
#include "base/fnv1a.hpp"
#include "base/log.hpp"
#include "base/posix_file.hpp"
#include "cuda/device_leaf.hpp"
#include "cuda/device_memory.hpp"
#include "cuda/staged_copy.hpp"
#include "storage/engine/save_exchange.hpp"
#include "storage/format/format_table.hpp"
#include "storage/index/collective_writer.hpp"
#include "storage/stream/checksum.hpp"
#include "storage/stream/compress.hpp"

namespace cairn::storage {
namespace json = boost::json;

namespace {

StorageFormat format_of(const TreeSaveOptions& options, const std::string& path) {
  auto it = options.leaf_formats.find(path);
  return it == options.leaf_formats.end() ? options.format : it->second;
}

// The leaf's save arguments, or the defaults.
LeafSaveArgs save_args_of(const TreeSaveOptions& options, const std::string& path) {
  auto it = options.save_args.find(path);
  return it == options.save_args.end() ? LeafSaveArgs{} : it->second;
}

// Throws Unsupported when this build lacks `compression`, InvalidArgument when it cannot
// store leaf `path` saved as `stored`.
void check_compression_of(const Compression& compression, const std::string& path, DType stored) {
  using Kind = Compression::Kind;
  switch (compression.kind) {
    case Kind::none: return;
    case Kind::zstd:
      if (!CAIRN_HAVE_ZSTD) {
        throw Unsupported(
            fmt::format("leaf '{}': this build of cairn has no zstd (libzstd-dev)", path));
      }
      if (compression.level < 0 || compression.level > 19) {
        throw InvalidArgument(
            fmt::format("leaf '{}': zstd level {} is outside 0 to 19", path, compression.level));
      }
      return;
    case Kind::zfp:
      if (!CAIRN_HAVE_ZFP) {
        throw Unsupported(
            fmt::format("leaf '{}': this build of cairn has no ZFP (libzfp-dev)", path));
      }
      if (stored != DType::float32 && stored != DType::float64) {
        throw InvalidArgument(fmt::format("leaf '{}': zfp compresses float32 and float64, not {}",
                                          path, dtype_name(stored)));
      }
      if (!(compression.absolute_error > 0) && !(compression.relative_error > 0)) {
        throw InvalidArgument(
            fmt::format("leaf '{}': zfp needs a positive absolute_error or relative_error", path));
      }
      return;
  }
  throw InvalidArgument(
      fmt::format("leaf '{}': unknown compression {}", path, static_cast<int>(compression.kind)));
}

// Takes the deprecated aliases of the formats' options (posix_aggregation, mpi_info_hints)
// where the format's own member is left at its default. Returns why they conflict (both set,
// to different values), or an empty string.
std::string take_deprecated_aliases(TreeSaveOptions& options) {
  std::string conflict;
  const auto take = [&](auto& alias, auto& member, std::string_view name) {
    using Value = std::remove_reference_t<decltype(member)>;
    if (alias == Value{}) return;
    if (member == Value{}) {
      member = alias;
    } else if (!(member == alias)) {
      conflict = fmt::format(
          "TreeSaveOptions::{} (deprecated) and its replacement differ; set "
          "only the replacement",
          name);
    }
  };
  take(options.posix_aggregation, options.posix.aggregation, "posix_aggregation");
  take(options.mpi_info_hints, options.hdf5.mpi_info_hints, "mpi_info_hints");
  return conflict;
}

// The compression and chunk shape of every array leaf are ones this build can store.
void check_compression(const ArrayTree& tree, const TreeSaveOptions& options) {
  for (const Leaf* leaf : tree.leaves_under("")) {
    if (leaf->kind() != LeafKind::array) continue;
    const ArrayShard& shard = leaf->as_array();
    const LeafSaveArgs args = save_args_of(options, leaf->path());
    check_compression_of(args.compression.value_or(options.compression), leaf->path(),
                         args.dtype.value_or(shard.dtype));
    const auto& chunk = args.chunk_shape;
    if (!chunk.empty() &&
        (chunk.size() != shard.global_shape.size() ||
         std::any_of(chunk.begin(), chunk.end(), [](std::int64_t e) { return e < 1; }))) {
      throw InvalidArgument(fmt::format(
          "save_args of leaf '{}': chunk_shape needs one extent of at least 1 for each of its {} "
          "dimensions",
          leaf->path(), shard.global_shape.size()));
    }
  }
}

// Every save_args entry names an array leaf and a cast convert() allows.
void check_save_args(const ArrayTree& tree, const TreeSaveOptions& options) {
  for (const auto& [path, args] : options.save_args) {
    const Leaf* leaf = tree.find(path);
    if (leaf == nullptr || leaf->kind() != LeafKind::array) {
      throw InvalidArgument(
          fmt::format("save_args names '{}', which is not an array leaf of the tree", path));
    }
    const DType dtype = leaf->as_array().dtype;
    if (args.dtype && !cast_allowed(dtype, *args.dtype)) {
      throw InvalidArgument(fmt::format("save_args of leaf '{}': {} cannot be stored as {}", path,
                                        dtype_name(dtype), dtype_name(*args.dtype)));
    }
  }
}

// The local checks of a save, which can differ between ranks: every rank learns of any
// failure. Returns the memory kind of each array leaf, in order. Collective.
std::vector<MemoryKind> check_leaves(const Comm& comm, const std::filesystem::path& dir,
                                     const ArrayTree& tree, const std::vector<const Leaf*>& leaves,
                                     const TreeSaveOptions& options,
                                     const std::string& alias_conflict) {
  std::vector<MemoryKind> memory;
  comm.run_all(fmt::format("save_tree '{}':", dir.string()), [&] {
    if (!alias_conflict.empty()) throw InvalidArgument(alias_conflict);
    if (options.checksum_chunk_bytes == 0) {
      throw InvalidArgument("checksum_chunk_bytes is 0; give the size of a checksum chunk");
    }
    for (const auto& [path, format] : options.leaf_formats) {
      if (!tree.contains(path)) {
        throw InvalidArgument(fmt::format("leaf_formats names '{}', which is not a leaf", path));
      }
    }
    check_save_args(tree, options);
    check_compression(tree, options);
    for (const FormatRow* row : format_rows()) row->check_options(options);
    for (const Leaf* leaf : leaves) {
      if (leaf->kind() != LeafKind::array) continue;
      const StorageFormat format = format_of(options, leaf->path());
      if (const std::string why = storage_format_unavailable(format); !why.empty()) {
        throw Unsupported(fmt::format("leaf '{}': {}", leaf->path(), why));
      }
      const ArrayShard& shard = leaf->as_array();
      memory.push_back(cuda::resolve_memory(shard, options.detect_device_memory, leaf->path()));
    }
    // The caller's device work queued before the save (kernels writing the leaves) finishes
    // before any copy of them: on the calling thread, before save() can return.
    if (std::find(memory.begin(), memory.end(), MemoryKind::cuda_device) != memory.end()) {
      cuda::synchronize_device(fmt::format("save_tree '{}': waiting for the device", dir.string()));
    }
  });
  return memory;
}

// Settles what this rank writes of `job` (`writers`: the ranks validate_layout() chose) and
// appends the array to `of_format`, the arrays of its format's writer.
void plan_write(const Comm& comm, const std::vector<int>& writers,
                const std::vector<LeafLayout>& per_rank, ArrayJob& job,
                std::vector<ArrayToWrite>& of_format) {
  job.writes = std::binary_search(writers.begin(), writers.end(), comm.rank());
  const ArrayShard& shard = job.leaf->as_array();
  job.bytes = job.writes ? static_cast<std::uint64_t>(shard.local_bytes()) : 0;
  job.stored_bytes = job.bytes / dtype_size(shard.dtype) * dtype_size(job.dtype);
  job.format_index = of_format.size();
  std::optional<Box> box;
  if (job.writes) {
    box = shard.box.offset.empty() && shard.box.extent.empty() ? whole_box(shard.global_shape)
                                                               : shard.box;
  }
  // The decomposition, for formats that record it: the primary writes their metadata.
  std::vector<RankBox> shards;
  if (comm.is_primary()) {
    shards.reserve(writers.size());
    for (const int r : writers) shards.push_back({r, *per_rank[static_cast<std::size_t>(r)].box});
  }
  ArrayToWrite& array = of_format.emplace_back();
  static_cast<StoredArray&>(array) = job;
  array.box = std::move(box);
  array.shards = std::move(shards);
}

}  // namespace

TreeWriter::TreeWriter(const Comm& comm, std::filesystem::path dir, const ArrayTree& tree,
                       TreeSaveOptions options)
    : dir_(std::move(dir)),
      tree_(tree),
      options_(std::move(options)),
      run_bytes_(std::max<std::size_t>(options_.io_buffer_bytes / 2, 4096)),
      rank_(comm.rank()) {
  comm.agree(
      {.operation = "save_tree " + dir_.filename().string(), .structure = tree.structure_hash()});
  const std::vector<const Leaf*> leaves = tree.leaves_under("");

  const std::string alias_conflict = take_deprecated_aliases(options_);
  const std::vector<MemoryKind> memory =
      check_leaves(comm, dir_, tree, leaves, options_, alias_conflict);

  // Every rank's layout of every array leaf, validated identically on every rank.
  for (const Leaf* leaf : leaves) {
    if (leaf->kind() != LeafKind::array) continue;
    arrays_.push_back(plan_job(leaf, memory.at(arrays_.size())));
  }
  // The formats decide which collective steps follow (a writer's open and close): ranks that
  // chose differently (leaf_formats, format or save_args differing between ranks) fail here,
  // together.
  base::Fnv1a formats;
  for (const ArrayJob& job : arrays_) {
    formats.i64(static_cast<std::int64_t>(job.format))
        .i64(static_cast<std::int64_t>(job.dtype))
        .i64(static_cast<std::int64_t>(job.chunk_bytes))
        .i64(static_cast<std::int64_t>(job.compression.kind))
        .i64(static_cast<std::int64_t>(job.compression.level))
        .i64(static_cast<std::int64_t>(job.chunk_shape.size()));
    for (const std::int64_t extent : job.chunk_shape) formats.i64(extent);
  }
  for (const FormatRow* row : format_rows()) row->hash_options(options_, formats);
  formats.str(options_.incremental_base.string());
  comm.agree({.operation = "save_tree leaf formats " + dir_.filename().string(),
              .structure = formats.value()});
  const ExchangedLayouts layouts(comm.allgather_json(layouts_to_exchange(leaves)), arrays_.size());
  std::map<StorageFormat, std::vector<ArrayToWrite>> by_format;
  for (std::size_t i = 0; i < arrays_.size(); ++i) {
    const std::vector<LeafLayout> per_rank = layouts.of_leaf(i);
    ArrayJob& job = arrays_[i];
    const std::string& path = job.leaf->path();
    const bool sparse = options_.allow_sparse &&
                        (options_.sparse_leaves.empty() || options_.sparse_leaves.contains(path));
    const auto writers = validate_layout(path, per_rank, sparse).writers;
    plan_write(comm, writers, per_rank, job, by_format[job.format]);
    if (job.memory == MemoryKind::cuda_device && device_ < 0) device_ = cuda::current_device();
  }

  if (!options_.incremental_base.empty()) {
    base_ = IncrementalBase::open(comm, options_.incremental_base, dir_, arrays_);
  }

  // The primary creates the directories; the verdict doubles as the barrier.
  comm.run_all(fmt::format("save_tree: creating '{}':", dir_.string()), [&] {
    if (comm.is_primary()) base::create_directories(dir_);
  });

  // The formats' writers, in StorageFormat order on every rank. Values go to a format that
  // stores them for external readers only when it is the item's default format.
  std::vector<ValueToWrite> values;
  for (const Leaf* leaf : leaves) {
    if (leaf->kind() != LeafKind::array) values.push_back({leaf->path(), leaf});
  }
  for (const auto& [format, arrays] : by_format) {
    const std::span<const ValueToWrite> stored = format == options_.format
                                                     ? std::span<const ValueToWrite>(values)
                                                     : std::span<const ValueToWrite>();
    writers_.emplace_back(
        format, format_row(format).open_writer(
                    {.comm = comm,
                     .dir = dir_,
                     .arrays = arrays,
                     .values = stored,
                     .provenance = options_.provenance,
                     .options = options_,
                     .write_behind_bytes = options_.fsync ? base::kWriteBehindBytes : 0}));
  }
  phases_.lap("plan");
}

TreeWriter::~TreeWriter() = default;

ArrayJob TreeWriter::plan_job(const Leaf* leaf, MemoryKind memory) const {
  const DType dtype = leaf->as_array().dtype;
  const LeafSaveArgs args = save_args_of(options_, leaf->path());
  const DType stored = args.dtype.value_or(dtype);
  const std::uint64_t chunk =
      args.chunk_bytes > 0 ? args.chunk_bytes : options_.checksum_chunk_bytes;
  const ArrayShard& shard = leaf->as_array();
  ArrayJob job;
  static_cast<StoredArray&>(job) = {.path = leaf->path(),
                                    .format = format_of(options_, leaf->path()),
                                    .dtype = stored,
                                    .shape = shard.global_shape,
                                    .replicated = shard.replicated,
                                    .fortran_order = shard.fortran_order,
                                    .chunk_bytes = chunk_bytes_for(stored, chunk),
                                    .compression = args.compression.value_or(options_.compression),
                                    .chunk_shape = args.chunk_shape};
  job.leaf = leaf;
  job.cast = stored != dtype;
  job.memory = memory;
  return job;
}

}  // namespace cairn::storage

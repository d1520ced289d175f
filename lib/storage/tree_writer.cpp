#include "storage/tree_writer.hpp"

#include <boost/json.hpp>
#include <cairn/config.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "base/durable_file.hpp"
#include "base/fault.hpp"
#include "base/log.hpp"
#include "cuda/device_leaf.hpp"
#include "cuda/device_memory.hpp"
#include "cuda/staged_copy.hpp"
#include "storage/checksum.hpp"
#include "storage/compress.hpp"
#include "storage/index_writer.hpp"
#include "storage/posix/aggregation.hpp"
#include "storage/save_exchange.hpp"

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

// Throws InvalidArgument naming TreeSaveOptions::mpi_info_hints for an empty key or value.
void check_mpi_info_hints(const std::map<std::string, std::string>& hints) {
  for (const auto& [key, value] : hints) {
    if (key.empty() || value.empty()) {
      throw InvalidArgument(fmt::format(
          "TreeSaveOptions::mpi_info_hints: the hint '{}' = '{}' needs a key and a value", key,
          value));
    }
  }
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
                                     const TreeSaveOptions& options) {
  std::vector<MemoryKind> memory;
  comm.run_all(fmt::format("save_tree '{}':", dir.string()), [&] {
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
    check_posix_aggregation(options.posix_aggregation);
    check_mpi_info_hints(options.mpi_info_hints);
    for (const Leaf* leaf : leaves) {
      if (leaf->kind() != LeafKind::array) continue;
      const StorageFormat format = format_of(options, leaf->path());
      if (const std::string why = storage_format_unavailable(format); !why.empty()) {
        throw Unsupported(fmt::format("leaf '{}': {}", leaf->path(), why));
      }
      const ArrayShard& shard = leaf->as_array();
      memory.push_back(cuda::resolve_memory(shard, options.detect_device_memory, leaf->path()));
    }
  });
  return memory;
}

// Settles what this rank writes of `job` (`writers`: the ranks validate_layout() chose) and
// appends the array to `of_format`, the arrays of its format's writer.
void plan_write(const Comm& comm, const std::vector<int>& writers,
                const std::vector<LeafLayout>& per_rank, ArrayJob& job,
                std::vector<ArrayToWrite>& of_format) {
  const std::string& path = job.leaf->path();
  job.writes = std::binary_search(writers.begin(), writers.end(), comm.rank());
  const ArrayShard& shard = job.leaf->as_array();
  job.bytes = job.writes ? static_cast<std::uint64_t>(shard.local_bytes()) : 0;
  job.stored_bytes = job.bytes / dtype_size(shard.dtype) * dtype_size(job.stored_dtype);
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
  of_format.push_back({.path = path,
                       .dtype = job.stored_dtype,
                       .shape = shard.global_shape,
                       .fortran_order = shard.fortran_order,
                       .box = std::move(box),
                       .shards = std::move(shards),
                       .compression = job.compression,
                       .chunk_shape = job.chunk_shape,
                       .chunk_bytes = job.chunk_bytes});
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

  const std::vector<MemoryKind> memory = check_leaves(comm, dir_, tree, leaves, options_);

  // Every rank's layout of every array leaf, validated identically on every rank.
  for (const Leaf* leaf : leaves) {
    if (leaf->kind() != LeafKind::array) continue;
    arrays_.push_back(plan_job(leaf, memory.at(arrays_.size())));
  }
  // The formats decide which collective steps follow (a writer's open and close): ranks that
  // chose differently (leaf_formats, format or save_args differing between ranks) fail here,
  // together.
  StructureHash formats;
  for (const ArrayJob& job : arrays_) {
    formats.add(static_cast<std::int64_t>(job.format))
        .add(static_cast<std::int64_t>(job.stored_dtype))
        .add(static_cast<std::int64_t>(job.chunk_bytes))
        .add(static_cast<std::int64_t>(job.compression.kind))
        .add(static_cast<std::int64_t>(job.compression.level))
        .add(static_cast<std::int64_t>(job.chunk_shape.size()));
    for (const std::int64_t extent : job.chunk_shape) formats.add(extent);
  }
  formats.add(static_cast<std::int64_t>(options_.posix_aggregation.kind))
      .add(static_cast<std::int64_t>(options_.posix_aggregation.count))
      .add(static_cast<std::int64_t>(options_.posix_aggregation.writers));
  for (const auto& [key, value] : options_.mpi_info_hints) formats.add(key).add(value);
  formats.add(options_.incremental_base.string());
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
    writers_.emplace_back(format, open_shard_writer(format, comm, dir_, arrays, stored,
                                                    options_.provenance, options_));
  }
}

TreeWriter::~TreeWriter() = default;

ArrayJob TreeWriter::plan_job(const Leaf* leaf, MemoryKind memory) const {
  const DType dtype = leaf->as_array().dtype;
  const LeafSaveArgs args = save_args_of(options_, leaf->path());
  const DType stored = args.dtype.value_or(dtype);
  const std::uint64_t chunk =
      args.chunk_bytes > 0 ? args.chunk_bytes : options_.checksum_chunk_bytes;
  return {.leaf = leaf,
          .format = format_of(options_, leaf->path()),
          .stored_dtype = stored,
          .cast = stored != dtype,
          .memory = memory,
          .chunk_bytes = chunk_bytes_for(stored, chunk),
          .compression = args.compression.value_or(options_.compression),
          .chunk_shape = args.chunk_shape};
}

void TreeWriter::cast_piece(const ArrayJob& job, std::span<const std::byte> piece,
                            std::vector<std::byte>& buffer, const RunSink& store) const {
  const DType from = job.leaf->as_array().dtype;
  const std::size_t from_size = dtype_size(from);
  const std::size_t to_size = dtype_size(job.stored_dtype);
  const std::size_t block = std::max<std::size_t>(run_bytes_ / std::max(from_size, to_size), 1);
  const std::size_t count = piece.size() / from_size;
  buffer.resize(std::min(block, count) * to_size);
  const std::string what =
      fmt::format("leaf '{}' (saved as {})", job.leaf->path(), dtype_name(job.stored_dtype));
  for (std::size_t first = 0; first < count; first += block) {
    const std::size_t n = std::min(block, count - first);
    convert(from, piece.data() + first * from_size, job.stored_dtype, buffer.data(), n, what);
    store(std::span<const std::byte>(buffer).first(n * to_size));
  }
}

void TreeWriter::fail(const std::exception& error) noexcept { error_.record(error); }

void TreeWriter::copy_to_host(std::size_t index, const void* device, void* dst) {
  const ArrayJob& job = arrays_.at(index);
  const std::string what = fmt::format("leaf '{}'", job.leaf->path());
  std::lock_guard lock(copier_mutex_);
  copier(what).to_host(device, static_cast<std::size_t>(job.bytes), dst, what);
}

cuda::StagedCopier& TreeWriter::copier(std::string_view what) {
  cuda::use_device(device_, what);  // this may be the background thread
  if (!copier_) {
    copier_ = std::make_unique<cuda::StagedCopier>(run_bytes_, what);
  }
  return *copier_;
}

void TreeWriter::stream_runs(std::size_t index, const void* data, const RunSink& sink) {
  const ArrayJob& job = arrays_.at(index);
  const ArrayShard& shard = job.leaf->as_array();
  const std::size_t elem_size = dtype_size(shard.dtype);
  const std::vector<Box> runs =
      split_into_runs(shard.box, static_cast<std::int64_t>(run_bytes_ / elem_size));
  if (data != nullptr) {  // device memory, through the pinned buffers
    std::vector<std::size_t> lengths;
    lengths.reserve(runs.size());
    for (const Box& run : runs) {
      lengths.push_back(static_cast<std::size_t>(volume(run)) * elem_size);
    }
    const std::string what = fmt::format("leaf '{}'", job.leaf->path());
    std::lock_guard lock(copier_mutex_);
    copier(what).to_host(data, lengths, sink, what);
    return;
  }
  std::vector<std::byte> packed(std::min<std::size_t>(run_bytes_, job.bytes));
  for (const Box& run : runs) {
    copy_region(elem_size, shard.data, shard.box, shard.strides, packed.data(), run, run);
    sink(std::span(packed).first(static_cast<std::size_t>(volume(run)) * elem_size));
  }
}

void TreeWriter::write_stream(std::size_t index,
                              const std::function<void(const RunSink&)>& produce) {
  const ArrayJob& job = arrays_.at(index);
  if (!job.writes || failed()) return;
  try {
    ShardWriter& writer = *std::find_if(writers_.begin(), writers_.end(), [&](const auto& w) {
                             return w.first == job.format;
                           })->second;
    const ShardPlacement placement = writer.place(job.format_index, job.stored_bytes);
    ChunkedChecksum checksum(job.chunk_bytes);
    // An incremental save checksums each whole chunk before it is written, and writes only
    // those that differ from the base's.
    const BaseShard* base = base_ ? base_->shard_of(index) : nullptr;
    std::optional<ChunkMatcher> matcher;
    if (base != nullptr) matcher.emplace(*base);
    // A format that stores compressed chunks gets them as they are made, one chunk in memory.
    std::optional<ChunkCompressor> compressor;
    if (writer.stores_compressed_chunks(job.format_index)) {
      ChunkCompressor::Skip skip;
      if (matcher) {
        skip = [&](std::size_t c, std::uint64_t sum, std::uint64_t size) {
          return matcher->refer(c, sum, size);
        };
      }
      compressor.emplace(
          job.compression, job.stored_dtype, job.chunk_bytes,
          fmt::format("leaf '{}'", job.leaf->path()),
          [&](std::span<const std::byte> stored) {
            writer.write(job.format_index, compressor->stored_bytes(), stored);
          },
          std::move(skip));
    }
    std::optional<ChunkCutter> cutter;
    std::vector<std::uint64_t> cut_sums;
    if (matcher && !compressor) {
      cutter.emplace(job.chunk_bytes,
                     [&](std::size_t c, std::uint64_t first, std::span<const std::byte> chunk) {
                       cut_sums.push_back(checksum_of(chunk));
                       if (!matcher->refer(c, cut_sums.back(), chunk.size())) {
                         writer.write(job.format_index, first, chunk);
                       }
                     });
    }
    const RunSink store = [&](std::span<const std::byte> stored) {
      if (compressor) {
        compressor->update(stored);
        return;
      }
      if (cutter) {
        cutter->update(stored);
        return;
      }
      writer.write(job.format_index, checksum.bytes(), stored);
      checksum.update(stored);
    };
    std::uint64_t delivered = 0;
    std::vector<std::byte> cast_buffer;  // used only by a leaf with a save-time cast
    produce([&](std::span<const std::byte> piece) {
      if (delivered + piece.size() > job.bytes) {
        throw InvalidArgument(fmt::format("leaf '{}': pieces exceed this rank's shard of {} bytes",
                                          job.leaf->path(), job.bytes));
      }
      delivered += piece.size();
      if (job.cast) {
        cast_piece(job, piece, cast_buffer, store);
      } else {
        store(piece);
      }
    });
    if (delivered != job.bytes) {
      throw InvalidArgument(fmt::format("leaf '{}': {} of this rank's {} bytes were delivered",
                                        job.leaf->path(), delivered, job.bytes));
    }
    if (compressor) compressor->finish();
    if (cutter) cutter->finish();
    ShardRecord record{
        .rank = rank_,
        .box = job.leaf->as_array().box,
        .file = placement.file,
        .byte_offset = placement.byte_offset,
        .bytes = job.stored_bytes,
        .checksums = compressor ? compressor->checksums()
                                : (cutter ? std::move(cut_sums) : checksum.digests()),
        .chunk_sizes = compressor ? compressor->chunk_sizes() : std::vector<std::uint64_t>{}};
    if (matcher) matcher->fill(record, record.checksums.size());
    std::lock_guard lock(mutex_);
    records_.emplace_back(index, std::move(record));
    bytes_written_ += (compressor ? compressor->stored_bytes() : job.stored_bytes) -
                      (matcher ? matcher->referred_bytes() : 0);
  } catch (const std::exception& e) {
    fail(e);
  }
}

void TreeWriter::write_leaf(std::size_t index) {
  const ArrayJob& job = arrays_.at(index);
  const ArrayShard& shard = job.leaf->as_array();
  if (job.writes && job.bytes > 0 && job.memory == MemoryKind::host && !shard.contiguous()) {
    write_stream(index, [&](const RunSink& sink) { stream_runs(index, nullptr, sink); });
  } else {
    write(index, job.writes ? shard.data : nullptr, job.memory);
  }
}

void TreeWriter::write(std::size_t index, const void* data, MemoryKind memory) {
  const ArrayJob& job = arrays_.at(index);
  if (memory == MemoryKind::cuda_device && data != nullptr && job.writes && job.bytes > 0) {
    write_stream(index, [&](const RunSink& sink) { stream_runs(index, data, sink); });
    return;
  }
  write_stream(index, [&](const RunSink& sink) {
    sink({static_cast<const std::byte*>(data), static_cast<std::size_t>(job.bytes)});
  });
}

void TreeWriter::flush() {
  for (auto& [format, writer] : writers_) {
    try {
      writer->flush(options_.fsync);
    } catch (const std::exception& e) {
      fail(e);
    }
  }
}

bool TreeWriter::failed() const { return error_.failed(); }

void TreeWriter::finish(const Comm& comm) {
  // Every rank closes every writer, in the same order, even after a local failure.
  for (auto& [format, writer] : writers_) {
    try {
      writer->close(comm, options_.fsync);
    } catch (const std::exception& e) {
      fail(e);
    }
  }
  std::sort(records_.begin(), records_.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  // A lossy format gives back other values than those written: the index holds the checksums
  // of what a read returns, so that restores and verify check what they get.
  for (auto& [index, record] : records_) {
    const ArrayJob& job = arrays_.at(index);
    for (const auto& [format, writer] : writers_) {
      if (format != job.format) continue;
      if (auto sums = writer->checksums_as_read(job.format_index)) record.checksums = *sums;
    }
  }
  error_.report(comm, fmt::format("save_tree '{}': ", dir_.string()));

  // The index: every rank knows the tree's leaves; the records go to their sections' owners.
  TreeIndex index;
  index.world_size = comm.size();
  index.empty_nodes = tree_.empty_nodes();
  std::size_t arrays = 0;
  for (const Leaf* leaf : tree_.leaves_under("")) {
    LeafRecord record;
    record.path = leaf->path();
    record.kind = leaf->kind();
    switch (leaf->kind()) {
      case LeafKind::array: {
        const ArrayShard& shard = leaf->as_array();
        const ArrayJob& job = arrays_.at(arrays++);
        record.format = job.format;
        record.dtype = job.stored_dtype;
        record.shape = shard.global_shape;
        record.replicated = shard.replicated;
        record.fortran_order = shard.fortran_order;
        record.chunk_bytes = job.chunk_bytes;
        record.compression = job.compression;
        break;
      }
      case LeafKind::scalar: record.value = leaf->as_scalar().to_json(); break;
      case LeafKind::string: record.value = json::string(leaf->as_string()); break;
      case LeafKind::json: record.value = leaf->as_json(); break;
    }
    index.leaves.push_back(std::move(record));
  }
  const std::size_t leaf_count = index.leaves.size();
  // An incremental save: the base's files it refers to, linked into shards/.
  const LinkReferencedFiles link = [&](const std::set<std::string>& files) {
    if (!base_) return;
    base_->link_files(dir_, files);
    if (options_.fsync && !files.empty()) base::sync_directory(dir_ / "shards");
  };
  const std::uint64_t bytes = write_index_collectively(comm, dir_, std::move(index),
                                                       std::move(records_), options_.fsync, link);
  records_.clear();
  if (comm.is_primary()) {
    base::log::info("storage.save", "dir=\"{}\" leaves={} index_bytes={}", dir_.string(),
                    leaf_count, bytes);
  }
}

}  // namespace cairn::storage

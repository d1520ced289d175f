#include "storage/tree_writer.hpp"

#include <boost/json.hpp>
#include <cairn/config.hpp>
#include <fmt/format.h>

#include "comm/fault.hpp"
#include "comm/log.hpp"
#include "cuda/device_leaf.hpp"
#include "cuda/device_memory.hpp"
#include "cuda/staged_copy.hpp"
#include "storage/checksum.hpp"
#include "storage/posix/format.hpp"
#if CAIRN_HAVE_HDF5
#include "storage/hdf5/writer.hpp"
#endif

namespace cairn::storage {
namespace json = boost::json;

#if !CAIRN_HAVE_HDF5
// Never instantiated in a build without HDF5; complete so that TreeWriter can own a pointer.
class Hdf5Writer {};
#endif

namespace {

StorageFormat format_of(const TreeSaveOptions& options, const std::string& path) {
  auto it = options.leaf_formats.find(path);
  return it == options.leaf_formats.end() ? options.format : it->second;
}

json::value record_to_json(std::size_t array_index, const ShardRecord& s) {
  json::object o;
  o["array"] = array_index;
  o["rank"] = s.rank;
  o["offset"] = json::value_from(s.box.offset);
  o["extent"] = json::value_from(s.box.extent);
  o["file"] = s.file;
  o["byte_offset"] = s.byte_offset;
  o["bytes"] = s.bytes;
  std::string sums;
  for (std::uint64_t c : s.checksums) sums += checksum_to_hex(c);
  o["xxh3"] = std::move(sums);
  return o;
}

ShardRecord record_from_json(const json::object& o) {
  ShardRecord s;
  s.rank = static_cast<int>(o.at("rank").as_int64());
  s.box.offset = json::value_to<std::vector<std::int64_t>>(o.at("offset"));
  s.box.extent = json::value_to<std::vector<std::int64_t>>(o.at("extent"));
  s.file = json::value_to<std::string>(o.at("file"));
  s.byte_offset = json::value_to<std::uint64_t>(o.at("byte_offset"));
  s.bytes = json::value_to<std::uint64_t>(o.at("bytes"));
  const std::string_view sums = o.at("xxh3").as_string();
  for (std::size_t c = 0; c + 16 <= sums.size(); c += 16) {
    s.checksums.push_back(*checksum_from_hex(sums.substr(c, 16)));
  }
  return s;
}

}  // namespace

std::size_t TreeWriter::count_runs(const ArrayShard& shard) const {
  if (shard.local_bytes() == 0) return 1;
  const auto elements = static_cast<std::int64_t>(run_bytes_ / dtype_size(shard.dtype));
  return std::max<std::size_t>(split_into_runs(shard.box, elements).size(), 1);
}

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

  // Local checks that can differ between ranks: every rank learns of any failure.
  std::vector<MemoryKind> memory;  // of each array leaf, in order
  json::array runs;                // how many runs this rank streams each array leaf in
  comm.run_all(fmt::format("save_tree '{}':", dir_.string()), [&] {
    if (options_.checksum_chunk_bytes == 0) {
      throw InvalidArgument("checksum_chunk_bytes is 0; give the size of a checksum chunk");
    }
    for (const auto& [path, format] : options_.leaf_formats) {
      if (!tree.contains(path)) {
        throw InvalidArgument(fmt::format("leaf_formats names '{}', which is not a leaf", path));
      }
    }
    for (const Leaf* leaf : leaves) {
      if (leaf->kind() != LeafKind::array) continue;
      const StorageFormat format = format_of(options_, leaf->path());
      if (!storage_format_available(format)) {
        throw Unsupported(
            fmt::format("leaf '{}': format {} is not available in this build (configure with "
                        "CAIRN_USE_HDF5=ON)",
                        leaf->path(), storage_format_name(format)));
      }
      const ArrayShard& shard = leaf->as_array();
      memory.push_back(cuda::resolve_memory(shard, options_.detect_device_memory, leaf->path()));
      const bool streamed = memory.back() == MemoryKind::cuda_device || !shard.contiguous();
      runs.push_back(streamed && format == StorageFormat::hdf5 ? count_runs(shard) : 1);
    }
  });

  // Every rank's layout of every array leaf, validated identically on every rank, and its
  // run counts, of which hdf5 writes take the largest.
  json::array layouts;
  for (const Leaf* leaf : leaves) {
    if (leaf->kind() != LeafKind::array) continue;
    arrays_.push_back(
        {.leaf = leaf,
         .format = format_of(options_, leaf->path()),
         .memory = memory.at(arrays_.size()),
         .chunk_bytes = chunk_bytes_for(leaf->as_array().dtype, options_.checksum_chunk_bytes)});
    layouts.push_back(leaf->as_array().layout().to_json());
  }
  const std::vector<json::value> all =
      comm.allgather_json(json::object{{"layouts", std::move(layouts)}, {"runs", std::move(runs)}});
  std::size_t hdf5_count = 0;
  for (std::size_t i = 0; i < arrays_.size(); ++i) {
    std::vector<LeafLayout> per_rank;
    per_rank.reserve(all.size());
    std::size_t pieces = 1;
    for (std::size_t r = 0; r < all.size(); ++r) {
      const json::object& from_rank = all[r].as_object();
      per_rank.push_back(LeafLayout::from_json(from_rank.at("layouts").as_array().at(i), {},
                                               fmt::format("rank {} leaf {}", r, i)));
      pieces = std::max(pieces, json::value_to<std::size_t>(from_rank.at("runs").as_array().at(i)));
    }
    const std::string& path = arrays_[i].leaf->path();
    const bool sparse = options_.allow_sparse &&
                        (options_.sparse_leaves.empty() || options_.sparse_leaves.contains(path));
    const auto writers = validate_layout(path, per_rank, sparse).writers;
    ArrayJob& job = arrays_[i];
    job.writes = std::binary_search(writers.begin(), writers.end(), comm.rank());
    job.bytes = job.writes ? static_cast<std::uint64_t>(job.leaf->as_array().local_bytes()) : 0;
    (job.format == StorageFormat::posix ? uses_posix_ : uses_hdf5_) = true;
    if (job.format == StorageFormat::hdf5) {
      job.hdf5_index = hdf5_count++;
      job.hdf5_pieces = pieces;
    }
    if (job.memory == MemoryKind::cuda_device && device_ < 0) device_ = cuda::current_device();
  }

  // The primary creates the directories; the verdict doubles as the barrier.
  comm.run_all(fmt::format("save_tree: creating '{}':", dir_.string()), [&] {
    if (comm.is_primary()) storage::create_directories(uses_posix_ ? dir_ / "shards" : dir_);
  });
}

TreeWriter::~TreeWriter() = default;

void TreeWriter::fail(const std::exception& error) noexcept {
  std::lock_guard lock(mutex_);
  if (error_) return;
  try {
    error_.emplace(error_code_of(error), error.what());
  } catch (...) {
    // Out of memory while recording: finish() still reports a failure below.
  }
}

void TreeWriter::open_posix() {
  if (uses_posix_) posix_ = std::make_unique<PosixShardWriter>(dir_, rank_);
}

void TreeWriter::open_hdf5([[maybe_unused]] const Comm& comm) {
#if CAIRN_HAVE_HDF5
  if (!uses_hdf5_) return;
  std::vector<Hdf5ArrayToWrite> h5_arrays;
  for (const ArrayJob& job : arrays_) {
    if (job.format != StorageFormat::hdf5) continue;
    const ArrayShard& shard = job.leaf->as_array();
    h5_arrays.push_back({job.leaf->path(), shard.dtype, shard.global_shape,
                         job.writes ? &shard : nullptr, shard.fortran_order, job.hdf5_pieces,
                         job.chunk_bytes});
  }
  std::vector<Hdf5ValueToWrite> h5_values;
  if (options_.format == StorageFormat::hdf5) {
    for (const Leaf* leaf : tree_.leaves_under("")) {
      if (leaf->kind() != LeafKind::array) h5_values.push_back({leaf->path(), leaf});
    }
  }
  // Creating data.h5 is collective and its errors reach every rank alike, so after a failure
  // every rank skips the hdf5 writes.
  try {
    hdf5_ = std::make_unique<Hdf5Writer>(comm, dir_ / kHdf5File, h5_arrays, h5_values);
  } catch (const std::exception& e) {
    fail(e);
  }
#endif
}

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
    std::size_t next = 0;
    std::lock_guard lock(copier_mutex_);
    copier(what).to_host(
        data, lengths, [&](std::span<const std::byte> bytes) { sink(runs.at(next++), bytes); },
        what);
    return;
  }
  std::vector<std::byte> packed(std::min<std::size_t>(run_bytes_, job.bytes));
  for (const Box& run : runs) {
    copy_region(elem_size, shard.data, shard.box, shard.strides, packed.data(), run, run);
    sink(run, std::span(packed).first(static_cast<std::size_t>(volume(run)) * elem_size));
  }
}

void TreeWriter::write_runs(std::size_t index, const void* device_data) {
  const ArrayJob& job = arrays_.at(index);
  if (job.format == StorageFormat::posix) {
    if (!job.writes || failed()) return;
    try {
      ShardRecord record = posix_->write_pieces(
          job.leaf->as_array().box, job.bytes, job.chunk_bytes,
          [&](const PosixShardWriter::Sink& sink) {
            stream_runs(index, device_data,
                        [&](const Box&, std::span<const std::byte> bytes) { sink(bytes); });
          });
      std::lock_guard lock(mutex_);
      records_.emplace_back(index, std::move(record));
      bytes_written_ += job.bytes;
    } catch (const std::exception& e) {
      fail(e);
    }
    return;
  }
#if CAIRN_HAVE_HDF5
  if (!hdf5_) return;  // data.h5 could not be created, on every rank
  // Every rank makes job.hdf5_pieces collective writes, even after a local failure (then
  // with nothing to write), so that no rank waits for another forever.
  std::size_t calls = 0;
  try {
    fault::point("storage.hdf5_write");
    if (!failed()) {
      stream_runs(index, device_data, [&](const Box& run, std::span<const std::byte> bytes) {
        ++calls;
        auto record = hdf5_->write_piece(job.hdf5_index, &run, bytes.data());
        if (record) {
          std::lock_guard lock(mutex_);
          records_.emplace_back(index, std::move(*record));
          bytes_written_ += job.bytes;
        }
      });
    }
  } catch (const std::exception& e) {
    fail(e);
  }
  try {
    for (; calls < job.hdf5_pieces; ++calls) {
      (void)hdf5_->write_piece(job.hdf5_index, nullptr, nullptr);
    }
  } catch (const std::exception& e) {
    fail(e);
  }
#endif
}

void TreeWriter::write_leaf(std::size_t index) {
  const ArrayJob& job = arrays_.at(index);
  const ArrayShard& shard = job.leaf->as_array();
  if (job.writes && job.bytes > 0 && job.memory == MemoryKind::host && !shard.contiguous()) {
    write_runs(index, nullptr);
  } else {
    write(index, job.writes ? shard.data : nullptr, job.memory);
  }
}

void TreeWriter::write(std::size_t index, const void* data, MemoryKind memory) {
  const ArrayJob& job = arrays_.at(index);
  if (memory == MemoryKind::cuda_device && data != nullptr && job.writes && job.bytes > 0) {
    write_runs(index, data);
    return;
  }
  if (job.format == StorageFormat::posix) {
    if (!job.writes || failed()) return;
    try {
      ShardRecord record =
          posix_->write(job.leaf->as_array().box, data, job.bytes, job.chunk_bytes);
      std::lock_guard lock(mutex_);
      records_.emplace_back(index, std::move(record));
      bytes_written_ += job.bytes;
    } catch (const std::exception& e) {
      fail(e);
    }
    return;
  }
#if CAIRN_HAVE_HDF5
  if (!hdf5_) return;  // data.h5 could not be created, on every rank
  // Every rank takes part in the collective writes, even after a local failure (then with
  // nothing to write), so that no rank waits for another forever.
  try {
    fault::point("storage.hdf5_write");
  } catch (const std::exception& e) {
    fail(e);
  }
  try {
    if (failed()) {
      hdf5_->skip(job.hdf5_index);
      return;
    }
    auto record = hdf5_->write(job.hdf5_index, data);
    if (record) {
      std::lock_guard lock(mutex_);
      records_.emplace_back(index, std::move(*record));
      bytes_written_ += job.bytes;
    }
  } catch (const std::exception& e) {
    fail(e);
  }
#endif
}

void TreeWriter::close_posix() {
  try {
    if (posix_) posix_->close(options_.fsync);
  } catch (const std::exception& e) {
    fail(e);
  }
}

void TreeWriter::close_hdf5() {
#if CAIRN_HAVE_HDF5
  if (hdf5_) {
    try {
      hdf5_->finish(options_.fsync);
    } catch (const std::exception& e) {
      fail(e);
    }
  }
#endif
}

bool TreeWriter::failed() const {
  std::lock_guard lock(mutex_);
  return error_.has_value();
}

void TreeWriter::finish(const Comm& comm) {
  std::sort(records_.begin(), records_.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  comm.all_ok(
      !error_,
      error_ ? fmt::format("save_tree '{}': {}", dir_.string(), error_->second) : std::string(),
      error_ ? error_->first : ErrorCode::internal);

  // The index: the primary gathers every rank's shard records and writes cairn-tree.json.
  json::array my_records;
  for (const auto& [index, record] : records_) my_records.push_back(record_to_json(index, record));
  const std::vector<json::value> gathered = comm.gather_json(my_records);
  comm.run_all(fmt::format("save_tree '{}': writing the index:", dir_.string()), [&] {
    if (!comm.is_primary()) return;
    TreeIndex index;
    index.world_size = comm.size();
    std::vector<std::size_t> slot_of_array;
    for (const Leaf* leaf : tree_.leaves_under("")) {
      LeafRecord record;
      record.path = leaf->path();
      record.kind = leaf->kind();
      switch (leaf->kind()) {
        case LeafKind::array: {
          const ArrayShard& shard = leaf->as_array();
          record.format = format_of(options_, leaf->path());
          record.dtype = shard.dtype;
          record.shape = shard.global_shape;
          record.replicated = shard.replicated;
          record.fortran_order = shard.fortran_order;
          record.chunk_bytes = chunk_bytes_for(shard.dtype, options_.checksum_chunk_bytes);
          slot_of_array.push_back(index.leaves.size());
          break;
        }
        case LeafKind::scalar: record.value = leaf->as_scalar().to_json(); break;
        case LeafKind::string: record.value = json::string(leaf->as_string()); break;
        case LeafKind::json: record.value = leaf->as_json(); break;
      }
      index.leaves.push_back(std::move(record));
    }
    // Ranks are gathered in order, so each leaf's shards come out in ascending rank.
    for (const json::value& from_rank : gathered) {
      for (const json::value& v : from_rank.as_array()) {
        const auto array = json::value_to<std::size_t>(v.at("array"));
        index.leaves.at(slot_of_array.at(array)).shards.push_back(record_from_json(v.as_object()));
      }
    }
    const std::string text = json::serialize(to_json(index));
    write_file_durably(dir_ / kTreeIndexFile, text);
    if (options_.fsync) {
      if (uses_posix_) sync_directory(dir_ / "shards");
      sync_directory(dir_);
    }
    log::info("storage.save", "dir=\"{}\" leaves={} index_bytes={}", dir_.string(),
              index.leaves.size(), text.size());
  });
}

}  // namespace cairn::storage

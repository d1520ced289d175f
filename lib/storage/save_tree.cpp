// save_tree(): validation across ranks, then the shard writes of both formats, then the index.
#include <boost/json.hpp>
#include <cairn/config.hpp>
#include <cairn/storage.hpp>
#include <fmt/format.h>

#include "comm/log.hpp"
#include "storage/checksum.hpp"
#include "storage/index.hpp"
#include "storage/posix_format.hpp"
#if CAIRN_HAVE_HDF5
#include "storage/hdf5_format.hpp"
#endif

namespace cairn {
namespace json = boost::json;
using storage::LeafRecord;
using storage::ShardRecord;

std::string_view storage_format_name(StorageFormat format) noexcept {
  switch (format) {
    case StorageFormat::hdf5: return "hdf5";
    case StorageFormat::posix: return "posix";
  }
  return "invalid";
}

std::optional<StorageFormat> storage_format_from_name(std::string_view name) noexcept {
  if (name == "hdf5") return StorageFormat::hdf5;
  if (name == "posix") return StorageFormat::posix;
  return std::nullopt;
}

bool storage_format_available(StorageFormat format) noexcept {
  return format == StorageFormat::posix || (format == StorageFormat::hdf5 && CAIRN_HAVE_HDF5);
}

namespace {

StorageFormat format_of(const TreeSaveOptions& options, const std::string& path) {
  auto it = options.leaf_formats.find(path);
  return it == options.leaf_formats.end() ? options.format : it->second;
}

json::value shard_to_json(const ShardRecord& s, std::size_t leaf_index) {
  json::object o;
  o["leaf"] = leaf_index;
  o["rank"] = s.rank;
  o["offset"] = json::value_from(s.box.offset);
  o["extent"] = json::value_from(s.box.extent);
  o["file"] = s.file;
  o["byte_offset"] = s.byte_offset;
  o["bytes"] = s.bytes;
  o["xxh3"] = storage::checksum_to_hex(s.checksum);
  return o;
}

}  // namespace

void save_tree(const Comm& comm, const std::filesystem::path& dir, const ArrayTree& tree,
               const TreeSaveOptions& options) {
  comm.agree(
      {.operation = "save_tree " + dir.filename().string(), .structure = tree.structure_hash()});
  const std::vector<const Leaf*> leaves = tree.leaves_under("");

  // Local checks that can differ between ranks: every rank learns of any failure.
  comm.run_all(fmt::format("save_tree '{}':", dir.string()), [&] {
    for (const auto& [path, format] : options.leaf_formats) {
      if (!tree.contains(path)) {
        throw InvalidArgument(fmt::format("leaf_formats names '{}', which is not a leaf", path));
      }
    }
    for (const Leaf* leaf : leaves) {
      if (leaf->kind() != LeafKind::array) continue;
      const StorageFormat format = format_of(options, leaf->path());
      if (!storage_format_available(format)) {
        throw Unsupported(
            fmt::format("leaf '{}': format {} is not available in this build "
                        "(configure with CAIRN_USE_HDF5=ON)",
                        leaf->path(), storage_format_name(format)));
      }
      if (leaf->as_array().memory != MemoryKind::host) {
        throw Unsupported(
            fmt::format("leaf '{}': arrays in {} memory are not supported by "
                        "this build; copy them to the host first",
                        leaf->path(), memory_kind_name(leaf->as_array().memory)));
      }
    }
  });

  // Every rank's layout of every array leaf, validated identically on every rank.
  json::array mine;
  std::vector<const Leaf*> arrays;
  for (const Leaf* leaf : leaves) {
    if (leaf->kind() != LeafKind::array) continue;
    arrays.push_back(leaf);
    mine.push_back(leaf->as_array().layout().to_json());
  }
  const std::vector<json::value> all = comm.allgather_json(mine);
  std::vector<std::vector<int>> writers(arrays.size());
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    std::vector<LeafLayout> per_rank;
    per_rank.reserve(all.size());
    for (std::size_t r = 0; r < all.size(); ++r) {
      per_rank.push_back(
          LeafLayout::from_json(all[r].as_array().at(i), {}, fmt::format("rank {} leaf {}", r, i)));
    }
    const std::string& path = arrays[i]->path();
    const bool sparse = options.allow_sparse &&
                        (options.sparse_leaves.empty() || options.sparse_leaves.contains(path));
    writers[i] = validate_layout(path, per_rank, sparse).writers;
  }

  // The primary creates the directories; the verdict doubles as the barrier.
  bool any_posix = false;
  bool any_hdf5 = false;
  for (const Leaf* leaf : arrays) {
    (format_of(options, leaf->path()) == StorageFormat::posix ? any_posix : any_hdf5) = true;
  }
  comm.run_all(fmt::format("save_tree: creating '{}':", dir.string()), [&] {
    if (!comm.is_primary()) return;
    storage::create_directories(any_posix ? dir / "shards" : dir);
  });

  // Shards of the posix leaves: each rank its own file, in parallel.
  std::vector<ShardRecord> records;
  std::vector<std::size_t> record_leaf;
  std::vector<storage::PosixShardToWrite> posix_shards;
  std::vector<std::size_t> posix_leaf;
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    if (format_of(options, arrays[i]->path()) != StorageFormat::posix) continue;
    if (!std::binary_search(writers[i].begin(), writers[i].end(), comm.rank())) continue;
    posix_shards.push_back({&arrays[i]->path(), &arrays[i]->as_array()});
    posix_leaf.push_back(i);
  }
  comm.run_all(fmt::format("save_tree '{}': writing shards:", dir.string()), [&] {
    auto written = storage::write_posix_shards(dir, comm.rank(), posix_shards, options.fsync);
    for (std::size_t k = 0; k < written.size(); ++k) {
      records.push_back(std::move(written[k]));
      record_leaf.push_back(posix_leaf[k]);
    }
  });

#if CAIRN_HAVE_HDF5
  if (any_hdf5) {
    std::vector<storage::Hdf5ArrayToWrite> h5_arrays;
    std::vector<std::size_t> h5_leaf;
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      if (format_of(options, arrays[i]->path()) != StorageFormat::hdf5) continue;
      const ArrayShard& shard = arrays[i]->as_array();
      const bool writes = std::binary_search(writers[i].begin(), writers[i].end(), comm.rank());
      h5_arrays.push_back(
          {arrays[i]->path(), shard.dtype, shard.global_shape, writes ? &shard : nullptr});
      if (writes) h5_leaf.push_back(i);
    }
    std::vector<storage::Hdf5ValueToWrite> h5_values;
    if (options.format == StorageFormat::hdf5) {
      for (const Leaf* leaf : leaves) {
        if (leaf->kind() != LeafKind::array) h5_values.push_back({leaf->path(), leaf});
      }
    }
    comm.run_all(fmt::format("save_tree '{}': writing {}:", dir.string(), storage::kHdf5File), [&] {
      auto written = storage::write_hdf5(comm, dir / storage::kHdf5File, h5_arrays, h5_values,
                                         options.io_buffer_bytes, options.fsync);
      for (std::size_t k = 0; k < written.size(); ++k) {
        records.push_back(std::move(written[k]));
        record_leaf.push_back(h5_leaf.at(k));
      }
    });
  }
#endif

  // The index: the primary gathers every rank's shard records and writes cairn-tree.json.
  json::array my_records;
  for (std::size_t k = 0; k < records.size(); ++k) {
    my_records.push_back(shard_to_json(records[k], record_leaf[k]));
  }
  const std::vector<json::value> gathered = comm.gather_json(my_records);
  comm.run_all(fmt::format("save_tree '{}': writing the index:", dir.string()), [&] {
    if (!comm.is_primary()) return;
    storage::TreeIndex index;
    index.world_size = comm.size();
    for (const Leaf* leaf : leaves) {
      LeafRecord record;
      record.path = leaf->path();
      record.kind = leaf->kind();
      switch (leaf->kind()) {
        case LeafKind::array: {
          const ArrayShard& shard = leaf->as_array();
          record.format = format_of(options, leaf->path());
          record.dtype = shard.dtype;
          record.shape = shard.global_shape;
          record.replicated = shard.replicated;
          break;
        }
        case LeafKind::scalar: record.value = leaf->as_scalar().to_json(); break;
        case LeafKind::string: record.value = json::string(leaf->as_string()); break;
        case LeafKind::json: record.value = leaf->as_json(); break;
      }
      index.leaves.push_back(std::move(record));
    }
    // arrays[i] is the i-th array leaf in sorted order; map it to its slot in index.leaves.
    std::vector<std::size_t> slot_of_array;
    for (std::size_t j = 0; j < index.leaves.size(); ++j) {
      if (index.leaves[j].kind == LeafKind::array) slot_of_array.push_back(j);
    }
    for (const json::value& from_rank : gathered) {
      for (const json::value& v : from_rank.as_array()) {
        const json::object& o = v.as_object();
        ShardRecord s;
        s.rank = static_cast<int>(o.at("rank").as_int64());
        s.box.offset = json::value_to<std::vector<std::int64_t>>(o.at("offset"));
        s.box.extent = json::value_to<std::vector<std::int64_t>>(o.at("extent"));
        s.file = json::value_to<std::string>(o.at("file"));
        s.byte_offset = json::value_to<std::uint64_t>(o.at("byte_offset"));
        s.bytes = json::value_to<std::uint64_t>(o.at("bytes"));
        s.checksum = *storage::checksum_from_hex(o.at("xxh3").as_string());
        const auto leaf = json::value_to<std::size_t>(o.at("leaf"));
        index.leaves.at(slot_of_array.at(leaf)).shards.push_back(std::move(s));
      }
    }
    const std::string text = json::serialize(storage::to_json(index));
    storage::write_file_durably(dir / storage::kTreeIndexFile, text);
    if (options.fsync) {
      if (any_posix) storage::sync_directory(dir / "shards");
      storage::sync_directory(dir);
    }
    log::info("storage.save", "dir=\"{}\" leaves={} shards_index_bytes={}", dir.string(),
              leaves.size(), text.size());
  });
}

}  // namespace cairn

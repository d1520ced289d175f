// save_tree() and the names of the storage formats.
#include <boost/json.hpp>
#include <cairn/config.hpp>
#include <cairn/storage.hpp>
#include <fmt/format.h>

#include "comm/log.hpp"
#include "storage/checksum.hpp"
#include "storage/index.hpp"
#include "storage/tree_writer.hpp"

namespace cairn {
namespace json = boost::json;

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

void save_tree(const Comm& comm, const std::filesystem::path& dir, const ArrayTree& tree,
               const TreeSaveOptions& options) {
  storage::TreeWriter writer(comm, dir, tree, options);
  writer.open_posix();
  writer.open_hdf5(comm);
  // Contiguous host shards are written from the caller's memory; strided views are packed into
  // one buffer of the shard's size; device shards are staged through pinned host buffers.
  std::vector<std::byte> packed;
  for (std::size_t i = 0; i < writer.arrays().size(); ++i) {
    const storage::ArrayJob& job = writer.arrays()[i];
    const void* data = nullptr;
    if (job.writes) {
      const ArrayShard& shard = job.leaf->as_array();
      data = shard.data;
      if (job.memory == MemoryKind::host && !shard.contiguous()) {
        try {
          packed.resize(static_cast<std::size_t>(job.bytes));
          pack_strided(dtype_size(shard.dtype), shard.data, shard.box.extent, shard.strides,
                       packed.data());
          data = packed.data();
        } catch (const std::exception& e) {
          writer.fail(e);
        }
      }
    }
    writer.write(i, data, job.memory);
  }
  writer.close_posix();
  writer.close_hdf5();
  writer.finish(comm);
}

}  // namespace cairn

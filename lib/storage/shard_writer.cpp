#include "storage/shard_writer.hpp"

namespace cairn::storage {

std::unique_ptr<ShardWriter> open_shard_writer(StorageFormat format, const Comm& comm,
                                               const std::filesystem::path& dir,
                                               std::span<const ArrayToWrite> arrays,
                                               std::span<const ValueToWrite> values,
                                               const SaveProvenance& provenance) {
  switch (format) {
    case StorageFormat::posix: return open_posix_writer(comm, dir, arrays);
    case StorageFormat::hdf5: return open_hdf5_writer(comm, dir, arrays, values, provenance);
  }
  throw InvalidArgument("open_shard_writer: unknown storage format");
}

}  // namespace cairn::storage

#include "storage/shard_reader.hpp"

namespace cairn::storage {

std::unique_ptr<ShardReader> open_shard_reader(StorageFormat format, const Comm& comm,
                                               const std::filesystem::path& dir) {
  switch (format) {
    case StorageFormat::posix: return open_posix_reader(dir);
    case StorageFormat::hdf5: return open_hdf5_reader(comm, dir);
  }
  throw InvalidArgument("open_shard_reader: unknown storage format");
}

}  // namespace cairn::storage

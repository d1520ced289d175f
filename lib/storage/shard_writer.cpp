#include "storage/shard_writer.hpp"

namespace cairn::storage {

std::unique_ptr<ShardWriter> open_shard_writer(StorageFormat format, const Comm& comm,
                                               const std::filesystem::path& dir,
                                               std::span<const ArrayToWrite> arrays,
                                               std::span<const ValueToWrite> values,
                                               const SaveProvenance& provenance,
                                               const TreeSaveOptions& options) {
  switch (format) {
    case StorageFormat::posix:
      return open_posix_writer(comm, dir, arrays, options.posix_aggregation,
                               options.io_buffer_bytes);
    case StorageFormat::hdf5:
      return open_hdf5_writer(comm, dir, arrays, values, provenance, options.mpi_info_hints);
  }
  throw InvalidArgument("open_shard_writer: unknown storage format");
}

}  // namespace cairn::storage

// The hdf5 format in a build without HDF5: every use says how to get it.
#include <cairn/error.hpp>
#include <fmt/format.h>

#include "storage/format/hdf5/open.hpp"

namespace cairn::storage {

std::unique_ptr<ShardReader> open_hdf5_reader(const Comm&, const std::filesystem::path& dir) {
  throw Unsupported(
      fmt::format("'{}' holds leaves stored in HDF5, which this build of cairn cannot read "
                  "(configure with CAIRN_USE_HDF5=ON)",
                  dir.string()));
}

std::unique_ptr<ShardWriter> open_hdf5_writer(const Comm&, const std::filesystem::path& dir,
                                              std::span<const ArrayToWrite>,
                                              std::span<const ValueToWrite>, const SaveProvenance&,
                                              const MpiInfoHints&, std::uint64_t) {
  throw Unsupported(
      fmt::format("cannot save '{}' in HDF5: this build of cairn has no HDF5 (configure with "
                  "CAIRN_USE_HDF5=ON)",
                  dir.string()));
}

}  // namespace cairn::storage

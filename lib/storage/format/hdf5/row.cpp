// The hdf5 format's row of the format table: one shared parallel HDF5 file per item, data.h5,
// with a dataset per array leaf at its leaf path. In a build without HDF5 the row is there
// (its data file is still recognised) and opening it throws Unsupported (unavailable.cpp).
#include <cairn/config.hpp>
#include <cairn/error.hpp>
#include <fmt/format.h>

#include "storage/format/format_table.hpp"
#include "storage/format/hdf5/open.hpp"

namespace cairn::storage {

namespace {

bool owns_data_file(std::string_view file) noexcept { return file == kHdf5File; }

void check_options(const TreeSaveOptions& options) {
  for (const auto& [key, value] : options.hdf5.mpi_info_hints) {
    if (key.empty() || value.empty()) {
      throw InvalidArgument(fmt::format(
          "TreeSaveOptions::hdf5.mpi_info_hints: the hint '{}' = '{}' needs a key and a value", key,
          value));
    }
  }
}

void hash_options(const TreeSaveOptions& options, base::Fnv1a& hash) noexcept {
  for (const auto& [key, value] : options.hdf5.mpi_info_hints) hash.str(key).str(value);
}

std::unique_ptr<ShardWriter> open_writer(const WriterArgs& args) {
  return open_hdf5_writer(args.comm, args.dir, args.arrays, args.values, args.provenance,
                          args.options.hdf5.mpi_info_hints, args.write_behind_bytes);
}

}  // namespace

const FormatRow& hdf5_format_row() {
  static const FormatRow row{
      .format = StorageFormat::hdf5,
      .name = "hdf5",
      .summary = "one shared parallel HDF5 file per item (data.h5), a dataset per array leaf",
      .built = CAIRN_HAVE_HDF5 != 0,
      .how_to_build = "-DCAIRN_USE_HDF5=ON",
      .owns_data_file = owns_data_file,
      .check_options = check_options,
      .hash_options = hash_options,
      .open_writer = open_writer,
      .open_reader = open_hdf5_reader,
  };
  return row;
}

}  // namespace cairn::storage

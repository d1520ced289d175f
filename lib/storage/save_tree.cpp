// save_tree() and the names of the storage formats.
#include <boost/json.hpp>
#include <cairn/config.hpp>
#include <cairn/storage.hpp>
#include <fmt/format.h>

#include "base/log.hpp"
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

std::int64_t tree_format_version() noexcept { return storage::kTreeFormatVersionSections; }

bool is_tree_index_file(std::string_view file_name) noexcept {
  return file_name == storage::kTreeIndexFile || file_name == storage::kTreeIndexBinaryFile;
}

std::optional<StorageFormat> storage_format_from_name(std::string_view name) noexcept {
  if (name == "hdf5") return StorageFormat::hdf5;
  if (name == "posix") return StorageFormat::posix;
  return std::nullopt;
}

bool storage_format_available(StorageFormat format) noexcept {
  return format == StorageFormat::posix || (format == StorageFormat::hdf5 && CAIRN_HAVE_HDF5);
}

std::string storage_format_unavailable(StorageFormat format) {
  if (storage_format_available(format)) return {};
  return fmt::format(
      "format {} is not available in this build of cairn (configure cairn with "
      "-DCAIRN_USE_HDF5=ON)",
      storage_format_name(format));
}

void save_tree(const Comm& comm, const std::filesystem::path& dir, const ArrayTree& tree,
               const TreeSaveOptions& options) {
  storage::TreeWriter writer(comm, dir, tree, options);
  for (std::size_t i = 0; i < writer.arrays().size(); ++i) writer.write_leaf(i);
  writer.flush();
  writer.finish(comm);
}

}  // namespace cairn

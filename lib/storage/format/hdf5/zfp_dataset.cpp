#include "storage/format/hdf5/zfp_dataset.hpp"
#include "base/durable_file.hpp"

#include <hdf5.h>

#include <cairn/error.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>

#include "base/durable_file.hpp"
#include "storage/format/hdf5/compression.hpp"
#include "storage/format/hdf5/handle.hpp"
#include "storage/format/hdf5/settings.hpp"

namespace cairn::storage::h5 {
namespace {

// The largest finite magnitude among the values of `shard` (0 when none).
template <typename T>
double largest_finite(std::span<const std::byte> shard) {
  double largest = 0;
  const std::size_t count = shard.size() / sizeof(T);
  const auto* values = reinterpret_cast<const T*>(shard.data());
  for (std::size_t i = 0; i < count; ++i) {
    const double v = std::fabs(static_cast<double>(values[i]));
    if (std::isfinite(v)) largest = std::max(largest, v);
  }
  return largest;
}

}  // namespace

bool created_at_close(const Compression& compression) noexcept {
  return compression.kind == Compression::Kind::zfp && !(compression.absolute_error > 0);
}

bool is_lossy(const Compression& compression) noexcept {
  return compression.kind == Compression::Kind::zfp;
}

std::vector<double> relative_tolerances(const Comm& comm, std::span<const RelativeBound> leaves) {
  // Non-negative doubles order as their bit patterns do, read as signed 64-bit integers: the
  // maximum over the ranks is one integer reduction.
  std::vector<std::int64_t> local;
  local.reserve(leaves.size());
  for (const RelativeBound& leaf : leaves) {
    const double largest = leaf.dtype == DType::float32 ? largest_finite<float>(leaf.shard)
                                                        : largest_finite<double>(leaf.shard);
    local.push_back(std::bit_cast<std::int64_t>(largest));
  }
  const std::vector<std::int64_t> global = comm.max(local);
  std::vector<double> tolerances;
  tolerances.reserve(leaves.size());
  for (std::size_t k = 0; k < leaves.size(); ++k) {
    const double tolerance = leaves[k].relative_error * std::bit_cast<double>(global[k]);
    tolerances.push_back(std::isfinite(tolerance) ? tolerance : std::numeric_limits<double>::max());
  }
  return tolerances;
}

void read_back(const std::filesystem::path& file, std::span<const ShardToRead> shards) {
  if (shards.empty()) return;
  const std::string name = file.string();
  const Where file_where{name, {}};
  const std::lock_guard lock(hdf5_mutex());
  const QuietErrors quiet;
  register_filters(file_where);
  const PropertyList fapl = read_access(file_where);
  base::require_regular_file(file);  // H5Fopen would wait on a FIFO
  File handle(check(H5Fopen(name.c_str(), H5F_ACC_RDONLY, fapl.get()), file_where,
                    "opening the file to read the zfp datasets back"));
  for (const ShardToRead& s : shards) {
    const std::string path(s.path);
    const Where where{name, path};
    if (s.buffer.size() != static_cast<std::uint64_t>(volume(s.box)) * dtype_size(s.dtype)) {
      throw InvalidArgument(fmt::format("leaf '{}' in '{}': a buffer of {} bytes for the box {}",
                                        path, name, s.buffer.size(), to_string(s.box)));
    }
    Dataset dataset(
        check(H5Dopen2(handle.get(), path.c_str(), H5P_DEFAULT), where, "opening the dataset"));
    const Datatype type = make_type(s.dtype, where);
    const Dataspace file_space(check(H5Dget_space(dataset.get()), where, "reading the dataspace"));
    const std::vector<hsize_t> start = to_hsize(s.box.offset);
    const std::vector<hsize_t> count = to_hsize(s.box.extent);
    check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                              nullptr),
          where, "selecting this rank's shard");
    const Dataspace memory_space = make_space(s.box.extent, where);
    check(H5Dread(dataset.get(), type.get(), memory_space.get(), file_space.get(), H5P_DEFAULT,
                  s.buffer.data()),
          where, "reading this rank's shard back through the zfp filter");
    dataset.close(where);
  }
  handle.close(file_where);
}

}  // namespace cairn::storage::h5

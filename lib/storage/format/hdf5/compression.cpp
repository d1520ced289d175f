#include "storage/format/hdf5/compression.hpp"

#include <cairn/config.hpp>
#include <cairn/error.hpp>

#include <algorithm>
#include <fmt/format.h>
#include <mutex>

#include "base/first_error.hpp"
#include "storage/format/hdf5/settings.hpp"
#include "storage/format/hdf5/zfp_filter.hpp"
#include "storage/format/hdf5/zstd_filter.hpp"

namespace cairn::storage::h5 {
namespace {

// HDF5 keeps a chunk's size in 32 bits.
constexpr std::uint64_t kMaxChunkBytes = (std::uint64_t{1} << 32) - 1;
// The size default_chunk() aims at: large enough that zstd compresses well and the chunk index
// stays small, small enough that reading a box decompresses little beyond it.
constexpr std::uint64_t kTargetChunkBytes = std::uint64_t{1} << 20;

std::uint64_t chunk_bytes(std::span<const std::int64_t> chunk, std::size_t element_bytes) {
  std::uint64_t bytes = element_bytes;
  for (std::int64_t n : chunk) bytes *= static_cast<std::uint64_t>(n);
  return bytes;
}

std::int64_t smallest_factor(std::int64_t n) {
  for (std::int64_t p = 2; p * p <= n; ++p) {
    if (n % p == 0) return p;
  }
  return n;
}

}  // namespace

bool is_filtered(const ArrayToWrite& array) noexcept {
  if (array.shape.empty()) return false;
  if (std::find(array.shape.begin(), array.shape.end(), 0) != array.shape.end()) return false;
  return array.compression.kind != Compression::Kind::none || !array.chunk_shape.empty();
}

void register_filters(const Where& where) {
#if CAIRN_HAVE_ZFP
  // Always cairn's own, registered again on each call (HDF5 replaces a class of the same id),
  // before any lookup could load H5Z-ZFP's plugin from HDF5_PLUGIN_PATH: that plugin's
  // set_local callback would take cairn's cd_values, already in their stored form (zfp's
  // header), for its own input form, and refuse them.
  check(H5Zregister(&kZfpFilterClass), where, "registering the zfp filter");
#endif
#if CAIRN_HAVE_ZSTD
  if (H5Zfilter_avail(kZstdFilterId) > 0) {
    // Ours, or a zstd plugin HDF5 loaded: both store one zstd frame per chunk.
    return;
  }
  check(H5Zregister(&kZstdFilterClass), where, "registering the zstd filter");
#else
  (void)where;  // HDF5 may still find a zstd plugin on HDF5_PLUGIN_PATH
#endif
}

// The rule: chunks are cut from the largest shard of any rank, so that with a regular
// decomposition every chunk lies inside one rank's shard and is compressed by that rank alone
// (no chunk is assembled from several ranks' pieces). While the chunk is larger than 1 MiB, its
// outermost dimension with an extent above 1 is divided by that extent's smallest prime factor
// (halved, rounded up, when the extent is prime): the chunk stays a whole fraction of the shard
// and a set of whole rows of it. An array that no rank holds is cut from its whole shape.
std::vector<std::int64_t> default_chunk(std::span<const std::int64_t> shape,
                                        std::span<const std::int64_t> largest,
                                        std::size_t element_bytes) {
  std::vector<std::int64_t> chunk(shape.begin(), shape.end());
  const bool held = std::any_of(largest.begin(), largest.end(), [](auto n) { return n > 0; });
  if (held) {
    for (std::size_t d = 0; d < chunk.size(); ++d) chunk[d] = std::max<std::int64_t>(largest[d], 1);
  }
  while (chunk_bytes(chunk, element_bytes) > kTargetChunkBytes) {
    const auto d = static_cast<std::size_t>(
        std::find_if(chunk.begin(), chunk.end(), [](auto n) { return n > 1; }) - chunk.begin());
    if (d == chunk.size()) break;
    const std::int64_t p = smallest_factor(chunk[d]);
    chunk[d] = p == chunk[d] ? (chunk[d] + 1) / 2 : chunk[d] / p;
  }
  return chunk;
}

std::vector<std::vector<std::int64_t>> plan_filtered_chunks(const Comm& comm,
                                                            std::span<const ArrayToWrite> arrays) {
  std::vector<std::vector<std::int64_t>> chunks(arrays.size());
  std::vector<std::int64_t> proposal;  // per filtered array: this rank's shard extents
  for (const ArrayToWrite& a : arrays) {
    if (!is_filtered(a)) continue;
    const bool has = a.box && volume(*a.box) > 0;
    for (std::size_t d = 0; d < a.shape.size(); ++d) proposal.push_back(has ? a.box->extent[d] : 0);
  }
  if (proposal.empty()) return chunks;  // the same on every rank: the arrays are
  const std::vector<std::int64_t> largest = comm.max(proposal);
  std::size_t at = 0;
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const ArrayToWrite& a = arrays[i];
    if (!is_filtered(a)) continue;
    const std::span<const std::int64_t> shard(largest.data() + at, a.shape.size());
    at += a.shape.size();
    std::vector<std::int64_t> chunk = a.chunk_shape;
    if (chunk.empty()) {
      chunk = default_chunk(a.shape, shard, dtype_size(a.dtype));
    } else {
      for (std::size_t d = 0; d < chunk.size() && d < a.shape.size(); ++d) {
        chunk[d] = std::min(chunk[d], a.shape[d]);  // HDF5 wants chunks inside fixed shapes
      }
    }
    if (chunk.size() != a.shape.size() ||
        chunk_bytes(chunk, dtype_size(a.dtype)) > kMaxChunkBytes) {
      throw InvalidArgument(fmt::format(
          "leaf '{}': chunk shape {} does not fit an hdf5 dataset of shape {} (one extent per "
          "dimension, less than 4 GiB per chunk)",
          a.path, shape_to_string(chunk), shape_to_string(a.shape)));
    }
    chunks[i] = std::move(chunk);
  }
  return chunks;
}

PropertyList filtered_creation(const Where& where, std::span<const std::int64_t> chunk,
                               const Compression& compression, DType dtype, double zfp_tolerance) {
  PropertyList dcpl(
      check(H5Pcreate(H5P_DATASET_CREATE), where, "creating a dataset-creation property list"));
  const std::vector<hsize_t> dims = to_hsize(chunk);
  check(H5Pset_chunk(dcpl.get(), static_cast<int>(dims.size()), dims.data()), where,
        "setting the chunk shape");
  if (compression.kind == Compression::Kind::zstd) {
    register_filters(where);
    // HDF5's own shuffle filter, before zstd: every HDF5 reader has it.
    if (compression.shuffle && dtype_size(dtype) > 1) {
      check(H5Pset_shuffle(dcpl.get()), where, "adding the shuffle filter");
    }
    const unsigned level = static_cast<unsigned>(
        compression.level > 0 ? compression.level : Compression::kDefaultZstdLevel);
    check(H5Pset_filter(dcpl.get(), kZstdFilterId, H5Z_FLAG_MANDATORY, 1, &level), where,
          "adding the zstd filter");
  }
  if (compression.kind == Compression::Kind::zfp) {
#if CAIRN_HAVE_ZFP
    register_filters(where);
    const std::vector<unsigned> values = zfp_cd_values(chunk, dtype_size(dtype), zfp_tolerance);
    if (values.empty()) {
      throw InvalidArgument(
          fmt::format("leaf '{}': zfp compresses chunks of at most 4 "
                      "dimensions above 1, not {}",
                      where.leaf, shape_to_string(chunk)));
    }
    check(H5Pset_filter(dcpl.get(), kZfpFilterId, H5Z_FLAG_MANDATORY, values.size(), values.data()),
          where, "adding the zfp filter");
#else
    (void)dtype;
    (void)zfp_tolerance;
#endif
  }
  check(H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY), where, "setting allocation");
  const bool filtered = compression.kind != Compression::Kind::none;
  check(H5Pset_fill_time(dcpl.get(), filtered ? H5D_FILL_TIME_ALLOC : H5D_FILL_TIME_NEVER), where,
        "setting the fill time");
  return dcpl;
}

std::string compression_text(const Compression& compression, double zfp_tolerance) {
  switch (compression.kind) {
    case Compression::Kind::none: return "none";
    case Compression::Kind::zstd: {
      const std::string zstd =
          compression.level > 0 ? fmt::format("zstd level {}", compression.level) : "zstd";
      return compression.shuffle ? "shuffle + " + zstd : zstd;
    }
    case Compression::Kind::zfp:
      return compression.absolute_error > 0
                 ? fmt::format("zfp absolute error {}", compression.absolute_error)
                 : fmt::format("zfp relative error {} (absolute error {} in this dataset)",
                               compression.relative_error, zfp_tolerance);
  }
  return "unknown";
}

PropertyList mpio_access(const Comm& comm, const std::map<std::string, std::string>& hints,
                         const Where& where) {
  PropertyList fapl(
      check(H5Pcreate(H5P_FILE_ACCESS), where, "creating a file-access property list"));
  MPI_Info info = MPI_INFO_NULL;
  if (!hints.empty()) {
    if (MPI_Info_create(&info) != MPI_SUCCESS) {
      throw IoError(std::string(where.file),
                    "creating the MPI_Info of TreeSaveOptions::hdf5.mpi_info_hints");
    }
    for (const auto& [key, value] : hints) {
      if (MPI_Info_set(info, key.c_str(), value.c_str()) != MPI_SUCCESS) {
        MPI_Info_free(&info);
        throw IoError(std::string(where.file),
                      fmt::format("setting the MPI-IO hint '{}' = '{}'", key, value));
      }
    }
  }
  const herr_t status = H5Pset_fapl_mpio(fapl.get(), comm.get(), info);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);  // HDF5 keeps its own copy
  check(status, where, "selecting the MPI-IO driver");
  return fapl;
}

void write_filtered(const Comm& comm, const std::filesystem::path& file,
                    std::span<const StagedShard> shards,
                    const std::map<std::string, std::string>& hints) {
  const std::string name = file.string();
  // Every rank decodes and encodes with the filter (a chunk is compressed by the rank that
  // collects it): registered everywhere before any collective call, with one verdict, so that
  // no rank enters the collective calls alone.
  comm.run_all(fmt::format("writing the compressed datasets of '{}'", name), [&] {
    const std::lock_guard lock(hdf5_mutex());
    const QuietErrors quiet;
    register_filters({name, {}});
  });
  base::FirstError failure;
  {
    const std::lock_guard lock(hdf5_mutex());
    const QuietErrors quiet;
    try {
      const Where file_where{name, {}};
      const PropertyList fapl = mpio_access(comm, hints, file_where);
      File handle(check(H5Fopen(name.c_str(), H5F_ACC_RDWR, fapl.get()), file_where,
                        "opening the file for the compressed datasets"));
      const PropertyList dxpl(
          check(H5Pcreate(H5P_DATASET_XFER), file_where, "creating a transfer property list"));
      // Filters need collective transfers in parallel HDF5.
      check(H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE), file_where,
            "selecting collective transfers");
      for (const StagedShard& s : shards) {
        const Where where{name, s.path};
        Dataset dataset(check(H5Dopen2(handle.get(), s.path.c_str(), H5P_DEFAULT), where,
                              "opening the dataset"));
        const Datatype type = make_type(s.dtype, where);
        const Dataspace file_space(
            check(H5Dget_space(dataset.get()), where, "reading the dataspace"));
        const bool has = s.box && volume(*s.box) > 0;
        std::optional<Dataspace> memory_space;
        if (has) {
          const std::vector<hsize_t> start = to_hsize(s.box->offset);
          const std::vector<hsize_t> count = to_hsize(s.box->extent);
          check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr,
                                    count.data(), nullptr),
                where, "selecting this rank's shard");
          memory_space.emplace(make_space(s.box->extent, where));
        } else {
          check(H5Sselect_none(file_space.get()), where, "selecting nothing");
          memory_space.emplace(check(H5Scopy(file_space.get()), where, "copying a dataspace"));
        }
        check(H5Dwrite(dataset.get(), type.get(), memory_space->get(), file_space.get(), dxpl.get(),
                       has ? s.bytes.data() : nullptr),
              where, "writing the compressed dataset",
              "Check that the file system has space and supports MPI-IO");
        dataset.close(where);
      }
      handle.close(file_where);
    } catch (const std::exception& e) {
      failure.record(e);
    }
  }
  failure.report(comm);
}

}  // namespace cairn::storage::h5

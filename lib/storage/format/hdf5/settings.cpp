#include "storage/format/hdf5/settings.hpp"

#include <cairn/box.hpp>
#include <cairn/error.hpp>

#include <algorithm>
#include <cstdint>
#include <fmt/format.h>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/format/hdf5/zfp_filter.hpp"
#include "storage/format/hdf5/zstd_filter.hpp"

namespace cairn::storage::h5 {

// ------------------------------------------------------------------ types

namespace {

Datatype copy_type(hid_t base, const Where& where) {
  return Datatype(check(H5Tcopy(base), where, "copying a datatype"));
}

/// A 16-bit float with the given exponent and mantissa widths (float16: 5/10, bfloat16: 8/7).
Datatype half_type(std::size_t exponent_bits, std::size_t mantissa_bits, std::size_t bias,
                   const Where& where) {
  Datatype type = copy_type(H5T_IEEE_F32LE, where);
  // Fields first, then the size: HDF5 refuses to shrink a type whose fields do not fit.
  check(H5Tset_fields(type.get(), 15, mantissa_bits, exponent_bits, 0, mantissa_bits), where,
        "defining a 16-bit float type");
  check(H5Tset_size(type.get(), 2), where, "defining a 16-bit float type");
  check(H5Tset_ebias(type.get(), bias), where, "defining a 16-bit float type");
  return type;
}

Datatype complex_type(hid_t part, std::size_t part_size, const Where& where) {
  // h5py's convention: a compound {r, i}, which it reads as numpy complex.
  Datatype type(check(H5Tcreate(H5T_COMPOUND, 2 * part_size), where, "defining a complex type"));
  check(H5Tinsert(type.get(), "r", 0, part), where, "defining a complex type");
  check(H5Tinsert(type.get(), "i", part_size, part), where, "defining a complex type");
  return type;
}

}  // namespace

Datatype make_type(DType dtype, const Where& where) {
  switch (dtype) {
    case DType::boolean: {
      // h5py's convention for numpy bool: an enum of int8 {FALSE = 0, TRUE = 1}.
      Datatype type(check(H5Tenum_create(H5T_STD_I8LE), where, "defining the bool type"));
      const std::int8_t no = 0;
      const std::int8_t yes = 1;
      check(H5Tenum_insert(type.get(), "FALSE", &no), where, "defining the bool type");
      check(H5Tenum_insert(type.get(), "TRUE", &yes), where, "defining the bool type");
      return type;
    }
    case DType::int8: return copy_type(H5T_STD_I8LE, where);
    case DType::int16: return copy_type(H5T_STD_I16LE, where);
    case DType::int32: return copy_type(H5T_STD_I32LE, where);
    case DType::int64: return copy_type(H5T_STD_I64LE, where);
    case DType::uint8: return copy_type(H5T_STD_U8LE, where);
    case DType::uint16: return copy_type(H5T_STD_U16LE, where);
    case DType::uint32: return copy_type(H5T_STD_U32LE, where);
    case DType::uint64: return copy_type(H5T_STD_U64LE, where);
    case DType::float16: return half_type(5, 10, 15, where);
    case DType::bfloat16: return half_type(8, 7, 127, where);
    case DType::float32: return copy_type(H5T_IEEE_F32LE, where);
    case DType::float64: return copy_type(H5T_IEEE_F64LE, where);
    case DType::complex64: return complex_type(H5T_IEEE_F32LE, 4, where);
    case DType::complex128: return complex_type(H5T_IEEE_F64LE, 8, where);
  }
  throw InvalidArgument(
      fmt::format("leaf '{}': invalid dtype value {}", where.leaf, static_cast<int>(dtype)));
}

Datatype string_type(std::size_t size, const Where& where) {
  Datatype type = copy_type(H5T_C_S1, where);
  check(H5Tset_size(type.get(), std::max<std::size_t>(size, 1)), where, "defining a string");
  check(H5Tset_cset(type.get(), H5T_CSET_UTF8), where, "defining a string type");
  check(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), where, "defining a string type");
  return type;
}

Datatype text_type(std::string_view text, const Where& where) {
  // A variable-length string ends at its first NUL: a text holding one keeps every byte in a
  // fixed-length string.
  if (text.find('\0') != std::string_view::npos) return string_type(text.size(), where);
  Datatype type = copy_type(H5T_C_S1, where);
  check(H5Tset_size(type.get(), H5T_VARIABLE), where, "defining a string type");
  check(H5Tset_cset(type.get(), H5T_CSET_UTF8), where, "defining a string type");
  return type;
}

namespace {

/// What H5Dwrite or H5Awrite takes for `text` in `type`: a pointer to a NUL-terminated copy
/// for a variable-length string, the bytes themselves (at least one) for a fixed-length one.
class TextData {
 public:
  TextData(std::string_view text, hid_t type)
      : copy_(text), pointer_(copy_.c_str()), variable_(H5Tis_variable_str(type) > 0) {}
  TextData(const TextData&) = delete;
  TextData& operator=(const TextData&) = delete;
  [[nodiscard]] const void* get() const {
    return variable_ ? static_cast<const void*>(&pointer_) : static_cast<const void*>(pointer_);
  }

 private:
  std::string copy_;
  const char* pointer_;
  bool variable_;
};

}  // namespace

void write_text(hid_t dataset, hid_t type, std::string_view text, const Where& where,
                std::string_view what) {
  const TextData data(text, type);
  check(H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.get()), where, what);
}

// ------------------------------------------------------------------ dataspaces, attributes

Dataspace make_space(std::span<const std::int64_t> shape, const Where& where) {
  if (shape.empty()) return Dataspace(check(H5Screate(H5S_SCALAR), where, "creating a dataspace"));
  const std::vector<hsize_t> dims = to_hsize(shape);
  return Dataspace(check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                         where, "creating a dataspace"));
}

std::vector<hsize_t> to_hsize(std::span<const std::int64_t> values) {
  return std::vector<hsize_t>(values.begin(), values.end());
}

void write_string_attribute(hid_t object, const char* name, std::string_view value,
                            const Where& where) {
  const std::string what = fmt::format("writing the attribute '{}'", name);
  const Datatype type = text_type(value, where);
  const Dataspace space(check(H5Screate(H5S_SCALAR), where, what));
  Attribute attribute(check(
      H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), where, what));
  const TextData data(value, type.get());
  check(H5Awrite(attribute.get(), type.get(), data.get()), where, what);
  attribute.close(where);
}

void write_int_attribute(hid_t object, const char* name, std::int64_t value, const Where& where) {
  const std::string what = fmt::format("writing the attribute '{}'", name);
  const Dataspace space(check(H5Screate(H5S_SCALAR), where, what));
  Attribute attribute(check(
      H5Acreate2(object, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), where, what));
  check(H5Awrite(attribute.get(), H5T_NATIVE_INT64, &value), where, what);
  attribute.close(where);
}

std::string describe_type(hid_t type) {
  const std::size_t size = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      return fmt::format("a {}-byte {} integer", size,
                         H5Tget_sign(type) == H5T_SGN_NONE ? "unsigned" : "signed");
    case H5T_FLOAT: return fmt::format("a {}-byte float", size);
    case H5T_STRING: return fmt::format("a {}-byte string", size);
    case H5T_ENUM: return fmt::format("a {}-byte enum", size);
    case H5T_COMPOUND:
      return fmt::format("a {}-member compound of {} bytes", H5Tget_nmembers(type), size);
    default:
      return fmt::format("an HDF5 type of class {} and {} bytes",
                         static_cast<int>(H5Tget_class(type)), size);
  }
}

bool type_holds(hid_t type, DType dtype) {
  const H5T_class_t cls = H5Tget_class(type);
  if (H5Tget_size(type) != dtype_size(dtype)) return false;
  if (dtype == DType::boolean) return cls == H5T_ENUM;
  if (is_signed_integer(dtype) || is_unsigned_integer(dtype)) {
    return cls == H5T_INTEGER && (H5Tget_sign(type) == H5T_SGN_NONE) == is_unsigned_integer(dtype);
  }
  if (is_floating(dtype)) {
    if (cls != H5T_FLOAT) return false;
    std::size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
    if (H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) < 0) return false;
    const std::size_t want_esize = dtype == DType::float16    ? 5
                                   : dtype == DType::bfloat16 ? 8
                                   : dtype == DType::float32  ? 8
                                                              : 11;
    return esize == want_esize && msize == 8 * dtype_size(dtype) - 1 - want_esize;
  }
  if (cls != H5T_COMPOUND || H5Tget_nmembers(type) != 2) return false;
  for (unsigned k = 0; k < 2; ++k) {
    char* name = H5Tget_member_name(type, k);
    const bool name_ok = name != nullptr && std::string_view(name) == (k == 0 ? "r" : "i");
    if (name != nullptr) H5free_memory(name);
    const Datatype part(H5Tget_member_type(type, k));
    if (!name_ok || !part.valid() || H5Tget_class(part.get()) != H5T_FLOAT ||
        H5Tget_size(part.get()) != dtype_size(dtype) / 2) {
      return false;
    }
  }
  return true;
}

// ------------------------------------------------------------------ datasets cairn reads

std::optional<std::string> dataset_problem(hid_t dataset, DType dtype,
                                           std::span<const std::int64_t> shape,
                                           const Where& where) {
  // Raw data must be in the file itself, stored as in memory: no external files, no filters.
  const PropertyList dcpl(H5Dget_create_plist(dataset));
  const H5D_layout_t layout = dcpl.valid() ? H5Pget_layout(dcpl.get()) : H5D_LAYOUT_ERROR;
  if ((layout != H5D_CONTIGUOUS && layout != H5D_COMPACT && layout != H5D_CHUNKED) ||
      H5Pget_external_count(dcpl.get()) != 0) {
    return "its layout is virtual or external (cairn reads contiguous, compact and chunked "
           "datasets stored in the file)";
  }
  const int filters = layout == H5D_CHUNKED ? H5Pget_nfilters(dcpl.get()) : 0;
  for (int k = 0; k < filters; ++k) {
    unsigned flags = 0;
    std::size_t count = 0;
    const H5Z_filter_t id = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(k), &flags, &count,
                                           nullptr, 0, nullptr, nullptr);
    if (id != kZstdFilterId && id != kZfpFilterId && id != H5Z_FILTER_SHUFFLE) {
      return fmt::format(
          "its chunks are compressed or filtered with HDF5 filter {} (cairn reads "
          "unfiltered datasets, zstd ones (filter {}, after HDF5's shuffle or alone) and zfp "
          "ones ({}))",
          static_cast<int>(id), static_cast<int>(kZstdFilterId), static_cast<int>(kZfpFilterId));
    }
    if (H5Zfilter_avail(id) <= 0) {
      return fmt::format(
          "its chunks are compressed with HDF5 filter {}, which this build of "
          "cairn cannot decode (configure with CAIRN_USE_ZSTD=ON or "
          "CAIRN_USE_ZFP=ON, or set HDF5_PLUGIN_PATH to a plugin)",
          static_cast<int>(id));
    }
  }

  const Datatype type(H5Dget_type(dataset));
  if (!type.valid()) return failure_message(where, "reading the datatype");
  if (!type_holds(type.get(), dtype)) {
    return fmt::format("the dataset is {}, which does not hold {} values",
                       describe_type(type.get()), dtype_name(dtype));
  }

  const Dataspace space(H5Dget_space(dataset));
  if (!space.valid()) return failure_message(where, "reading the dataspace");
  std::vector<std::int64_t> found;
  const H5S_class_t cls = H5Sget_simple_extent_type(space.get());
  if (cls == H5S_SIMPLE) {
    const int rank = H5Sget_simple_extent_ndims(space.get());
    std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
    if (rank < 0 || H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0) {
      return failure_message(where, "reading the dataspace");
    }
    for (hsize_t d : dims) found.push_back(static_cast<std::int64_t>(d));
    if (found.empty()) found.push_back(-1);  // never equals a shape
  } else if (cls != H5S_SCALAR) {
    return "the dataset has a null dataspace (no elements)";
  }
  if (!std::equal(found.begin(), found.end(), shape.begin(), shape.end())) {
    return fmt::format("the dataset has shape {} but the index records {}", shape_to_string(found),
                       shape_to_string(shape));
  }
  return std::nullopt;
}

std::vector<std::int64_t> chunk_shape(hid_t dataset, const Where& where) {
  const PropertyList dcpl(check(H5Dget_create_plist(dataset), where, "reading the layout"));
  if (H5Pget_layout(dcpl.get()) != H5D_CHUNKED) return {};
  const int rank = check(H5Pget_chunk(dcpl.get(), 0, nullptr), where, "reading the chunk shape");
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  check(H5Pget_chunk(dcpl.get(), rank, dims.data()), where, "reading the chunk shape");
  return {dims.begin(), dims.end()};
}

std::uint64_t chunk_count(std::span<const std::int64_t> shape,
                          std::span<const std::int64_t> chunk) noexcept {
  std::uint64_t count = 1;
  for (std::size_t d = 0; d < shape.size() && d < chunk.size(); ++d) {
    if (chunk[d] <= 0) return 0;
    count *= static_cast<std::uint64_t>((shape[d] + chunk[d] - 1) / chunk[d]);
  }
  return count;
}

std::vector<std::optional<std::uint64_t>> chunk_addresses(hid_t dataset,
                                                          std::span<const std::int64_t> shape,
                                                          std::span<const std::int64_t> chunk,
                                                          const Where& where) {
  std::vector<std::optional<std::uint64_t>> out;
  const std::uint64_t count = chunk_count(shape, chunk);
  out.reserve(count);
  // The chunk's first element, counted up in row-major order of the grid.
  std::vector<hsize_t> origin(shape.size(), 0);
  for (std::uint64_t k = 0; k < count; ++k) {
    unsigned filter_mask = 0;
    haddr_t address = HADDR_UNDEF;
    hsize_t size = 0;
    check(H5Dget_chunk_info_by_coord(dataset, origin.data(), &filter_mask, &address, &size), where,
          "looking up a chunk's storage");
    out.push_back(address == HADDR_UNDEF ? std::nullopt
                                         : std::optional(static_cast<std::uint64_t>(address)));
    for (std::size_t d = shape.size(); d-- > 0;) {
      origin[d] += static_cast<hsize_t>(chunk[d]);
      if (origin[d] < static_cast<hsize_t>(shape[d])) break;
      origin[d] = 0;
    }
  }
  return out;
}

std::optional<RawRegion> chunk_region(std::span<const std::int64_t> shape,
                                      std::span<const std::int64_t> chunk,
                                      std::span<const std::optional<std::uint64_t>> addresses,
                                      const Box& box) {
  if (chunk.size() != shape.size() || box.rank() != shape.size() || shape.empty()) {
    return std::nullopt;
  }
  std::uint64_t index = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const std::int64_t offset = box.offset[d];
    if (chunk[d] <= 0 || offset % chunk[d] != 0 ||
        box.extent[d] != std::min(chunk[d], shape[d] - offset)) {
      return std::nullopt;
    }
    const auto across = static_cast<std::uint64_t>((shape[d] + chunk[d] - 1) / chunk[d]);
    index = index * across + static_cast<std::uint64_t>(offset / chunk[d]);
  }
  if (index >= addresses.size() || !addresses[index]) return std::nullopt;
  return RawRegion{.address = *addresses[index],
                   .frame = {chunk.begin(), chunk.end()},
                   .box = Box{std::vector<std::int64_t>(shape.size(), 0), box.extent}};
}

// ------------------------------------------------------------------ property lists

namespace {

// Datasets of at least 1 MiB start on a 1 MiB boundary: a multiple of Lustre's default stripe
// size and of common GPFS/RAID block sizes, so the ranks' writes cover whole file-system
// blocks and no two large datasets share a stripe (no lock ping-pong). Smaller
// datasets stay packed: aligning them would waste up to 1 MiB each. The gaps are holes.
constexpr hsize_t kAlignThreshold = hsize_t{1} << 20;
constexpr hsize_t kAlignment = hsize_t{1} << 20;
// Metadata is allocated in 64 KiB blocks (HDF5's default is 2 KiB) so the headers of many
// leaves are written as a few larger contiguous pieces instead of scattered small ones.
constexpr hsize_t kMetaBlockSize = hsize_t{64} << 10;

}  // namespace

PropertyList read_access(const Where& where) {
  PropertyList fapl(
      check(H5Pcreate(H5P_FILE_ACCESS), where, "creating a file-access property list"));
  check(H5Pset_fapl_sec2(fapl.get()), where, "selecting the POSIX driver");
#if H5_VERSION_GE(1, 10, 7)
  check(H5Pset_file_locking(fapl.get(), false, true), where, "turning file locking off");
#endif
  return fapl;
}

PropertyList create_access(const Where& where) {
  PropertyList fapl = read_access(where);
  check(H5Pset_alignment(fapl.get(), kAlignThreshold, kAlignment), where, "setting alignment");
  // Objects in the HDF5 1.8 format and nothing newer: indexed link storage (fast groups
  // with many leaves) and checksummed object headers (damage is detected, not misread),
  // while every HDF5 >= 1.8 reader (h5dump, h5py, MATLAB, ...) can open the file.
  check(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V18), where,
        "setting the file format version");
  check(H5Pset_meta_block_size(fapl.get(), kMetaBlockSize), where, "setting the metadata block");
  return fapl;
}

PropertyList dataset_creation(const Where& where, std::span<const std::int64_t> chunk) {
  PropertyList dcpl(
      check(H5Pcreate(H5P_DATASET_CREATE), where, "creating a dataset-creation property list"));
  if (chunk.empty()) {
    // Contiguous: a shard that is a run of the array is one range of the file; no chunk index.
    check(H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS), where, "setting the layout");
  } else {
    // Chunked, one chunk per shard (see hdf5/writer.hpp): each shard is one range of the file.
    const std::vector<hsize_t> dims = to_hsize(chunk);
    check(H5Pset_chunk(dcpl.get(), static_cast<int>(dims.size()), dims.data()), where,
          "setting the chunk shape");
  }
  // Space is allocated when the dataset is created, so its address is known at once.
  check(H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY), where, "setting allocation");
  // No fill values: the writers cover the array, so filling would write every byte twice
  // (unwritten parts of sparse leaves are file holes and read as zero).
  check(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), where, "setting the fill time");
  return dcpl;
}

PropertyList link_creation(const Where& where) {
  PropertyList lcpl(
      check(H5Pcreate(H5P_LINK_CREATE), where, "creating a link-creation property list"));
  // "fields/u" creates the group "fields" on the way.
  check(H5Pset_create_intermediate_group(lcpl.get(), 1), where, "enabling intermediate groups");
  return lcpl;
}

}  // namespace cairn::storage::h5

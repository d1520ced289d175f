// cairn — the HDF5 conventions of the hdf5 format (internal): how dtypes are stored as HDF5
// types, shapes as dataspaces and names as string attributes, and the property lists cairn opens,
// creates and writes files with. The reasons for each setting are next to it in settings.cpp.
//
// Types (h5py reads each one as the matching numpy dtype; h5dump shows all of them):
//   bool            enum of int8 {FALSE = 0, TRUE = 1}                       (h5py: bool)
//   int8..uint64    H5T_STD_{I,U}{8,16,32,64}LE
//   float16         IEEE binary16: sign bit 15, exponent 10..14, mantissa 0..9, bias 15
//   bfloat16        sign bit 15, exponent 7..14, mantissa 0..6, bias 127    (h5py: a float)
//   float32/64      H5T_IEEE_F32LE / H5T_IEEE_F64LE
//   complex64/128   compound {"r": f32, "i": f32} / {"r": f64, "i": f64}     (h5py: complex)
//   strings         variable-length UTF-8 (h5py: str for an attribute, .asstr() for a
//                   dataset); a text holding a NUL byte: fixed-length, null-padded UTF-8
//                   (cairn's readers take values from the index and never read strings from
//                   data.h5, so files of fixed-length strings read the same)
// Writes use the same type in memory and in the file, so HDF5 converts nothing (cairn casts
// itself); reads accept either byte order and let HDF5 swap.
//
// Nothing here is collective (using the property lists may be).
#pragma once

#include <hdf5.h>

#include <cairn/box.hpp>
#include <cairn/dtype.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/format/hdf5/handle.hpp"

namespace cairn::storage::h5 {

/// A new HDF5 type (owned) in which cairn stores `dtype`. Throws IoError naming `where`
/// when HDF5 fails, InvalidArgument for an out-of-range enumerator.
[[nodiscard]] Datatype make_type(DType dtype, const Where& where);

/// A new fixed-length UTF-8 string type of `size` bytes (at least 1), null-padded. Throws
/// IoError naming `where`.
[[nodiscard]] Datatype string_type(std::size_t size, const Where& where);

/// The type cairn stores `text` in: variable-length UTF-8 (h5py reads such an attribute as
/// str), or string_type(text.size()) when `text` holds a NUL byte, where a variable-length
/// string would end. Throws IoError naming `where`.
[[nodiscard]] Datatype text_type(std::string_view text, const Where& where);

/// Writes `text` into the open scalar dataset `dataset` of the type `type` that
/// text_type(text) made. Not collective. Throws IoError naming `where`, saying `what` failed.
void write_text(hid_t dataset, hid_t type, std::string_view text, const Where& where,
                std::string_view what);

/// The dataspace of an array of `shape`: scalar for 0-d, else simple (zero extents
/// allowed). Throws IoError naming `where`.
[[nodiscard]] Dataspace make_space(std::span<const std::int64_t> shape, const Where& where);

/// `values` (validated non-negative: extents, offsets) as HDF5 sizes. Never throws beyond
/// std::bad_alloc.
[[nodiscard]] std::vector<hsize_t> to_hsize(std::span<const std::int64_t> values);

/// Attaches the string attribute `name` = `value` (text_type(), scalar) to `object`. Not
/// collective. Throws IoError naming `where`.
void write_string_attribute(hid_t object, const char* name, std::string_view value,
                            const Where& where);

/// Attaches the 64-bit integer attribute `name` = `value` (scalar) to `object`. Not
/// collective. Throws IoError naming `where`.
void write_int_attribute(hid_t object, const char* name, std::int64_t value, const Where& where);

/// Whether the file type `type` holds values of `dtype`: same class and size, same sign for
/// integers, same exponent and mantissa widths for floats, exactly the members "r" and "i"
/// (floats of half the size) for complex, an enum of one byte for bool. Byte order may
/// differ. Never throws beyond std::bad_alloc; an HDF5 failure counts as "no".
[[nodiscard]] bool type_holds(hid_t type, DType dtype);

/// Why the open dataset `dataset` is not one cairn reads as `dtype` values of `shape`
/// ("the dataset has shape (4, 6) but the index records (4, 5)"), or std::nullopt when it
/// is: contiguous, compact or chunked layout (unfiltered, or zstd when it can be decoded)
/// without external storage, a type that holds
/// `dtype` (type_holds()), exactly `shape` (a scalar dataspace for 0-d). An HDF5 failure is a
/// problem too, described with `where`. Not collective; never throws beyond std::bad_alloc.
[[nodiscard]] std::optional<std::string> dataset_problem(hid_t dataset, DType dtype,
                                                         std::span<const std::int64_t> shape,
                                                         const Where& where);

/// The chunk shape of the open dataset `dataset`, or an empty vector when it is not chunked.
/// Not collective. Throws IoError naming `where`.
[[nodiscard]] std::vector<std::int64_t> chunk_shape(hid_t dataset, const Where& where);

/// Number of chunks of `chunk` that cover an array of `shape` (each extent rounded up). Not
/// collective; never throws.
[[nodiscard]] std::uint64_t chunk_count(std::span<const std::int64_t> shape,
                                        std::span<const std::int64_t> chunk) noexcept;

/// The file address of every chunk of the open chunked dataset `dataset` (of `shape`, chunks
/// of `chunk`), in row-major order of the chunk grid; std::nullopt for a chunk without
/// storage. The lookups read the file's metadata, on the process that has the file open (the
/// primary, in the hdf5 writer and reader). Not collective. Throws IoError naming `where`.
[[nodiscard]] std::vector<std::optional<std::uint64_t>> chunk_addresses(
    hid_t dataset, std::span<const std::int64_t> shape, std::span<const std::int64_t> chunk,
    const Where& where);

/// Where the elements of a box lie in the file: as `box` inside a row-major array of shape
/// `frame` whose first element is at byte `address`. For a contiguous dataset the frame is
/// the dataset; for a box that is one chunk, it is the chunk.
struct RawRegion {
  std::uint64_t address = 0;
  std::vector<std::int64_t> frame;
  Box box;
};

/// The RawRegion of `box` in a chunked dataset of `shape` (chunks of `chunk`, their
/// `addresses` as chunk_addresses() gives them) when `box` is exactly one chunk with storage:
/// it starts on a chunk boundary and spans the chunk, or up to the end of the array where the
/// last chunk sticks out. std::nullopt otherwise. Not collective; never throws beyond
/// std::bad_alloc.
[[nodiscard]] std::optional<RawRegion> chunk_region(
    std::span<const std::int64_t> shape, std::span<const std::int64_t> chunk,
    std::span<const std::optional<std::uint64_t>> addresses, const Box& box);

/// "a 4-byte float", "a 2-member compound of 16 bytes", ... for error messages. Never throws
/// beyond std::bad_alloc.
[[nodiscard]] std::string describe_type(hid_t type);

/// The file-access property list with which the primary creates a data.h5 alone: the POSIX
/// (sec2) driver without HDF5's file locks, 1 MiB alignment of datasets of 1 MiB or more, HDF5
/// 1.8 object formats, 64 KiB metadata blocks. Throws IoError naming `where`.
[[nodiscard]] PropertyList create_access(const Where& where);

/// The file-access property list of a data.h5 read by one process on its own: the POSIX
/// (sec2) driver, without HDF5's file locks (a committed checkpoint is never written again,
/// and many ranks read it at once, on file systems where locks may be missing). Throws
/// IoError naming `where`.
[[nodiscard]] PropertyList read_access(const Where& where);

/// The dataset-creation property list: allocated at creation, never filled; contiguous, or
/// chunked in chunks of `chunk` (one extent per dimension, no filters) when it is given.
/// Throws IoError naming `where`.
[[nodiscard]] PropertyList dataset_creation(const Where& where,
                                            std::span<const std::int64_t> chunk = {});

/// The link-creation property list: intermediate groups are created. Throws IoError naming
/// `where`.
[[nodiscard]] PropertyList link_creation(const Where& where);

}  // namespace cairn::storage::h5

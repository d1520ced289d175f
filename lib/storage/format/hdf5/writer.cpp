// The hdf5 storage format, write side: the primary creates the file, every rank writes its
// shards with pwrite, the primary closes the file.
//
// Steps, each a fixed number of collective calls whatever the number of leaves:
//  1. agree on the list of arrays and values (CollectiveMismatch on misuse);
//  2. check every local input (boxes) and agree on the verdict; agree on the chunk shapes;
//  3. the primary creates the file, each dataset and each value (HDF5's POSIX driver, no
//     MPI-IO) and broadcasts where each dataset's data lies, or its error, which every rank
//     then throws alike;
//  4. each rank writes its shards with pwrite, alone (no HDF5, no MPI);
//  5. agree that every rank reached close(), the primary closes the file (HDF5 writes its
//     metadata) and broadcasts the outcome, every rank fsyncs.
// Every HDF5 call is made with hdf5_mutex() held; agreements and raw writes are not.
#include "storage/format/hdf5/writer.hpp"

#include <hdf5.h>

#include <boost/json/serialize.hpp>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <optional>
#include <string_view>

#include "base/fault.hpp"
#include "base/first_error.hpp"
#include "base/fnv1a.hpp"
#include "base/log.hpp"
#include "base/posix_file.hpp"
#include "storage/format/hdf5/chunk_plan.hpp"
#include "storage/format/hdf5/compression.hpp"
#include "storage/format/hdf5/context.hpp"
#include "storage/format/hdf5/handle.hpp"
#include "storage/format/hdf5/open.hpp"
#include "storage/format/hdf5/settings.hpp"
#include "storage/format/hdf5/verdict.hpp"
#include "storage/format/hdf5/zfp_dataset.hpp"
#include "storage/index/tree_index.hpp"
#include "storage/stream/checksum.hpp"
#include "storage/stream/shard_stream.hpp"

namespace cairn::storage {
namespace {

using h5::check;
using h5::create_access;
using h5::dataset_creation;
using h5::link_creation;
using h5::make_space;
using h5::make_type;
using h5::text_type;
using h5::Where;
using h5::write_string_attribute;
using h5::write_text;

constexpr std::string_view kHintStorage =
    "Check that the directory exists and is writable and that the file system has space";
// A chunk without storage, as the primary sends chunk addresses.
constexpr std::uint64_t kNoAddress = ~std::uint64_t{0};

constexpr std::string_view kHintCreate =
    "Check that the leaf paths are distinct, that no path is both a leaf and a group, and "
    "that the file system has space";

/// Throws InvalidArgument naming the leaf when this rank's box of `a` is not inside its shape.
void check_box(const ArrayToWrite& a) {
  if (!a.box) return;
  check_box_in_shape(*a.box, a.shape, fmt::format("leaf '{}' on this rank", a.path));
  (void)volume(*a.box);
}

/// Throws IoError when the file system of `file` has less free space than the datasets of
/// `arrays` need (plus alignment and metadata): a disk already too full for the step fails
/// before the file exists, on every rank, instead of in the ranks' writes. An unknown amount
/// of space passes.
void check_free_space(const std::filesystem::path& file, std::span<const ArrayToWrite> arrays) {
  constexpr std::uint64_t kMetadataBytes = std::uint64_t{64} << 10;
  constexpr std::uint64_t kAlignmentBytes = std::uint64_t{1} << 20;  // see create_access()
  std::uint64_t needed = kMetadataBytes;
  for (const ArrayToWrite& a : arrays) {
    const std::uint64_t bytes = static_cast<std::uint64_t>(volume(a.shape)) * dtype_size(a.dtype);
    needed += bytes + (bytes >= kAlignmentBytes ? kAlignmentBytes : 0);
  }
  std::error_code ec;
  const auto space = std::filesystem::space(file.parent_path(), ec);
  if (ec || space.free >= needed) return;
  throw IoError(file.string(),
                fmt::format("not enough space for '{}': its datasets need about {} bytes, the "
                            "file system has {} bytes free (No space left on device). Free "
                            "space or save elsewhere",
                            file.string(), needed, space.free));
}

/// Creates the dataset of the value `leaf` (a scalar, string or JSON leaf; `text` is the
/// string or JSON text) at `where.leaf` in `file` and writes it, with the attribute
/// cairn_kind (and cairn_dtype for a scalar). Throws IoError naming `where`.
void create_value(hid_t file, const Where& where, const Leaf& leaf, const std::string& text,
                  hid_t lcpl, hid_t dcpl) {
  const bool scalar = leaf.kind() == LeafKind::scalar;
  const h5::Datatype type =
      scalar ? make_type(leaf.as_scalar().dtype(), where) : text_type(text, where);
  const h5::Dataspace space(check(H5Screate(H5S_SCALAR), where, "creating a dataspace"));
  const std::string path(where.leaf);
  // HDF5 stores a variable-length string only in a dataset with a fill value: the default
  // creation properties.
  h5::Dataset dataset(check(H5Dcreate2(file, path.c_str(), type.get(), space.get(), lcpl,
                                       scalar ? dcpl : H5P_DEFAULT, H5P_DEFAULT),
                            where, "creating the dataset", kHintCreate));
  write_string_attribute(dataset.get(), "cairn_kind", leaf_kind_name(leaf.kind()), where);
  if (scalar) {
    write_string_attribute(dataset.get(), "cairn_dtype", dtype_name(leaf.as_scalar().dtype()),
                           where);
    check(
        H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, leaf.as_scalar().data()),
        where, "writing the data", kHintStorage);
  } else {
    write_text(dataset.get(), type.get(), text, where, "writing the data");
  }
  dataset.close(where);
}

std::uint64_t structure_hash(std::span<const ArrayToWrite> arrays,
                             std::span<const ValueToWrite> values) {
  base::Fnv1a hash;
  for (const ArrayToWrite& a : arrays) {
    hash.str(a.path).i64(static_cast<std::int64_t>(a.dtype));
    for (std::int64_t n : a.shape) hash.i64(n);
    hash.i64(a.fortran_order ? std::int64_t{-2} : std::int64_t{-1});
  }
  for (const ValueToWrite& v : values) {
    const bool scalar = v.leaf && v.leaf->kind() == LeafKind::scalar;
    hash.str(v.path)
        .i64(v.leaf ? static_cast<std::int64_t>(v.leaf->kind()) : -1)
        .i64(scalar ? static_cast<std::int64_t>(v.leaf->as_scalar().dtype()) : -1);
  }
  return hash.value();
}

}  // namespace

// ------------------------------------------------------------------ Hdf5Writer

struct Hdf5Writer::Impl {
  struct Array {
    std::string path;
    DType dtype = DType::float64;
    std::vector<std::int64_t> shape;
    bool fortran_order = false;
    std::optional<Box> box;              // this rank's, when it has a shard
    std::vector<std::int64_t> chunk;     // the chunk shape; empty: contiguous
    std::optional<h5::RawRegion> where;  // of this rank's shard in the file, when it has data
    bool placed = false;                 // place() was called for this rank's shard
    Compression compression = {};
    bool filtered = false;          // written by close() with HDF5 (hdf5/compression.hpp)
    std::vector<std::byte> staged;  // a filtered array's shard, until close()
    std::uint64_t checksum_chunk_bytes = 1;
    double zfp_tolerance = 0;  // zfp: the dataset's absolute tolerance
    // The primary's cairn_decomposition of a dataset created by close() (hdf5/zfp_dataset.hpp).
    std::string decomposition;
    // zfp: the checksums of this rank's shard as read back by close().
    std::optional<std::vector<std::uint64_t>> checksums_as_read;
  };

  MpiInfoHints hints;  // for the MPI-IO access of the filtered datasets
  std::filesystem::path file;
  std::string file_name;  // file.string(), for messages
  h5::File handle;        // the primary's, from the constructor to close()
  std::vector<Array> arrays;
  std::optional<base::PosixFile> raw;    // this rank's descriptor for its writes, opened by place()
  std::uint64_t write_behind_bytes = 0;  // given to raw
  bool closed = false;                   // close() got past its agreement

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  // Also runs when the constructor throws, after its lock is released: take it again.
  ~Impl() {
    raw.reset();
    const std::lock_guard lock(hdf5_mutex());
    const h5::QuietErrors quiet;
    handle.reset();  // a failure is logged
  }

  Array& shard_of(std::size_t index) {
    if (index >= arrays.size()) {
      throw InvalidArgument(fmt::format("Hdf5Writer for '{}': no array {} (it has {})", file_name,
                                        index, arrays.size()));
    }
    Array& a = arrays[index];
    if (!a.box) {
      throw InvalidArgument(
          fmt::format("leaf '{}' in '{}': this rank has no shard of it", a.path, file_name));
    }
    return a;
  }

  // Step 2 of the constructor, local: checks the input and records the arrays; the primary
  // also renders the text of the values into `texts`.
  void check_input(const Comm& comm, std::span<const ArrayToWrite> arrays_in,
                   std::span<const ValueToWrite> values, std::vector<std::string>& texts);
  // Step 3, on the primary: creates the dataset of array `i` (with the attribute
  // cairn_decomposition `decomposition`) in the file and packs where its data lies into `out`.
  void create_array(std::size_t i, const std::string& decomposition, hid_t lcpl, hid_t dcpl,
                    base::Packed& out) const;
  // In close(), collective: the tolerance of each zfp array with a relative bound, from every
  // rank's staged values (hdf5/zfp_dataset.hpp). Throws as Comm::max().
  void plan_created_at_close(const Comm& comm);
  // In close(), on the primary with the file open: creates the datasets of those arrays.
  // Throws IoError naming the file and the leaf.
  void create_at_close();
  // In close(), after the collective writes: this rank reads its zfp shards back and
  // checksums what a restore will get. Local. Throws IoError naming the file and the leaf.
  void checksum_lossy_shards();
  // Step 4, collective: each rank finds its shards in what the primary sent.
  void find_shards(const Comm& comm, const std::vector<std::byte>& found);
};

void Hdf5Writer::Impl::check_input(const Comm& comm, std::span<const ArrayToWrite> arrays_in,
                                   std::span<const ValueToWrite> values,
                                   std::vector<std::string>& texts) {
  for (const ArrayToWrite& a : arrays_in) {
    validate_leaf_path(a.path);  // a valid path is also a valid HDF5 path
    (void)volume(a.shape);
    check_box(a);
    arrays.push_back({.path = a.path,
                      .dtype = a.dtype,
                      .shape = a.shape,
                      .fortran_order = a.fortran_order,
                      .box = a.box,
                      .chunk = {},
                      .where = std::nullopt,
                      .placed = false,
                      .compression = a.compression,
                      .filtered = h5::is_filtered(a),
                      .staged = {},
                      .checksum_chunk_bytes = std::max<std::uint64_t>(a.chunk_bytes, 1),
                      .zfp_tolerance = a.compression.absolute_error,
                      .decomposition = {},
                      .checksums_as_read = std::nullopt});
  }
  for (std::size_t k = 0; k < values.size(); ++k) {
    const ValueToWrite& v = values[k];
    validate_leaf_path(v.path);
    if (v.leaf == nullptr || v.leaf->kind() == LeafKind::array) {
      throw InvalidArgument(fmt::format("value leaf '{}' is null or an array", v.path));
    }
    if (!comm.is_primary()) continue;
    if (v.leaf->kind() == LeafKind::string) texts[k] = v.leaf->as_string();
    if (v.leaf->kind() == LeafKind::json) texts[k] = boost::json::serialize(v.leaf->as_json());
  }
  if (comm.is_primary()) check_free_space(file, arrays_in);
}

void Hdf5Writer::Impl::create_array(std::size_t i, const std::string& decomposition, hid_t lcpl,
                                    hid_t dcpl, base::Packed& out) const {
  const Array& a = arrays[i];
  const Where where{file_name, a.path};
  const h5::Datatype type = make_type(a.dtype, where);
  const h5::Dataspace space = make_space(a.shape, where);
  std::optional<h5::PropertyList> chunked_dcpl;
  if (a.filtered) {
    chunked_dcpl.emplace(
        h5::filtered_creation(where, a.chunk, a.compression, a.dtype, a.zfp_tolerance));
  } else if (!a.chunk.empty()) {
    chunked_dcpl.emplace(dataset_creation(where, a.chunk));
  }
  h5::Dataset dataset(check(H5Dcreate2(handle.get(), a.path.c_str(), type.get(), space.get(), lcpl,
                                       a.chunk.empty() ? dcpl : chunked_dcpl->get(), H5P_DEFAULT),
                            where, "creating the dataset", kHintCreate));
  // Names the dtype for readers that cannot tell it from the HDF5 type (bfloat16).
  write_string_attribute(dataset.get(), "cairn_dtype", dtype_name(a.dtype), where);
  // Whether the writer saw the array with its dimensions reversed (Fortran); h5py shows
  // the C-order shape either way.
  write_string_attribute(dataset.get(), "cairn_order", a.fortran_order ? "F" : "C", where);
  // Which rank wrote which part: the primary was given every writer's box.
  write_string_attribute(dataset.get(), "cairn_decomposition", decomposition, where);
  // A filtered dataset is written by close(); a dataset without elements has no storage; every
  // other one has its address now (it was allocated at creation).
  if (a.filtered) {
    write_string_attribute(dataset.get(), "cairn_compression",
                           h5::compression_text(a.compression, a.zfp_tolerance), where);
    out.put_byte(0);
  } else if (volume(a.shape) == 0) {
    out.put_byte(0);
  } else if (a.chunk.empty()) {
    const haddr_t address = H5Dget_offset(dataset.get());
    if (address == HADDR_UNDEF) h5::throw_failure(where, "finding the dataset's storage");
    out.put_byte(1);
    out.put(static_cast<std::uint64_t>(address));
  } else {
    const auto addresses = h5::chunk_addresses(dataset.get(), a.shape, a.chunk, where);
    out.put_byte(2);
    out.put(static_cast<std::uint64_t>(addresses.size()));
    for (const auto& address : addresses) out.put(address.value_or(kNoAddress));
  }
  dataset.close(where);
}

void Hdf5Writer::Impl::plan_created_at_close(const Comm& comm) {
  std::vector<h5::RelativeBound> leaves;
  std::vector<Array*> of;
  for (Array& a : arrays) {
    if (!a.filtered || !h5::created_at_close(a.compression)) continue;
    leaves.push_back(
        {.relative_error = a.compression.relative_error, .dtype = a.dtype, .shard = a.staged});
    of.push_back(&a);
  }
  if (leaves.empty()) return;  // on every rank alike: the arrays are the same
  const std::vector<double> tolerances = h5::relative_tolerances(comm, leaves);
  for (std::size_t k = 0; k < of.size(); ++k) of[k]->zfp_tolerance = tolerances[k];
}

void Hdf5Writer::Impl::create_at_close() {
  const Where where{file_name, {}};
  const h5::PropertyList dcpl = dataset_creation(where);
  const h5::PropertyList lcpl = link_creation(where);
  base::Packed unused;  // every rank knows where these datasets lie: nowhere yet
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const Array& a = arrays[i];
    if (a.filtered && h5::created_at_close(a.compression)) {
      create_array(i, a.decomposition, lcpl.get(), dcpl.get(), unused);
    }
  }
}

void Hdf5Writer::Impl::checksum_lossy_shards() {
  std::vector<h5::ShardToRead> shards;
  std::vector<Array*> of;
  for (Array& a : arrays) {
    if (!a.filtered || !h5::is_lossy(a.compression) || !a.placed || volume(*a.box) == 0) continue;
    // Read into the staged shard itself: no memory beyond what the write held.
    shards.push_back({.path = a.path, .dtype = a.dtype, .box = *a.box, .buffer = a.staged});
    of.push_back(&a);
  }
  h5::read_back(file, shards);
  for (Array* a : of) a->checksums_as_read = chunk_checksums_of(a->staged, a->checksum_chunk_bytes);
}

void Hdf5Writer::Impl::find_shards(const Comm& comm, const std::vector<std::byte>& found) {
  base::Unpacked in(found);
  base::FirstError failure;
  for (Array& a : arrays) {
    const std::uint8_t kind = in.take_byte();
    std::optional<std::uint64_t> address;
    std::vector<std::optional<std::uint64_t>> addresses;
    if (kind == 1) address = in.take();
    if (kind == 2) {
      const std::uint64_t count = in.take();
      addresses.reserve(static_cast<std::size_t>(count));
      for (std::uint64_t k = 0; k < count; ++k) {
        const std::uint64_t at = in.take();
        addresses.push_back(at == kNoAddress ? std::nullopt : std::optional(at));
      }
    }
    if (!a.box || volume(*a.box) == 0 || kind == 0) continue;
    if (address) {
      a.where = h5::RawRegion{.address = *address, .frame = a.shape, .box = *a.box};
      continue;
    }
    a.where = h5::chunk_region(a.shape, a.chunk, addresses, *a.box);
    if (!a.where) {
      failure.record(
          IoError(file_name, fmt::format("leaf '{}' in HDF5 file '{}': the chunk of this rank's "
                                         "shard {} has no storage",
                                         a.path, file_name, to_string(*a.box))));
    }
  }
  failure.report(comm);
}

Hdf5Writer::Hdf5Writer(const Comm& comm, const std::filesystem::path& file,
                       std::span<const ArrayToWrite> arrays, std::span<const ValueToWrite> values,
                       const SaveProvenance& provenance, MpiInfoHints hints,
                       std::uint64_t write_behind_bytes)
    : impl_(std::make_unique<Impl>()) {
  Impl& w = *impl_;
  w.hints = std::move(hints);
  w.write_behind_bytes = write_behind_bytes;
  w.file = file;
  w.file_name = file.string();
  comm.agree({.operation = "Hdf5Writer " + file.filename().string(),
              .step = -1,
              .structure = structure_hash(arrays, values)});

  // Step 2: local checks, then one verdict. The primary also renders the values' text.
  std::vector<std::string> texts(values.size());
  comm.run_all(fmt::format("Hdf5Writer '{}': checking the input", w.file_name),
               [&] { w.check_input(comm, arrays, values, texts); });
  const std::vector<std::vector<std::int64_t>> chunks = h5::plan_chunks(comm, arrays);
  const std::vector<std::vector<std::int64_t>> filtered = h5::plan_filtered_chunks(comm, arrays);
  for (std::size_t i = 0; i < w.arrays.size(); ++i) {
    w.arrays[i].chunk = w.arrays[i].filtered ? filtered[i] : chunks[i];
  }

  // Step 3: the primary creates the file, every dataset and every value; one broadcast tells
  // every rank where each dataset's data lies (for a chunked one, every chunk's address).
  const std::vector<std::byte> found = h5::primary_verdict(comm, [&](base::Packed& out) {
    const std::lock_guard lock(hdf5_mutex());
    const h5::QuietErrors quiet;
    const Where file_where{w.file_name, {}};
    const h5::PropertyList fapl = create_access(file_where);
    w.handle =
        h5::File(check(H5Fcreate(w.file_name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                       file_where, "creating the file", kHintStorage));
    h5::write_save_attributes(w.handle.get(), provenance, comm.size(), file_where);
    const h5::PropertyList dcpl = dataset_creation(file_where);
    const h5::PropertyList lcpl = link_creation(file_where);
    for (std::size_t i = 0; i < w.arrays.size(); ++i) {
      Impl::Array& a = w.arrays[i];
      std::string decomposition = h5::decomposition_text(a.shape, arrays[i].shards);
      if (a.filtered && h5::created_at_close(a.compression)) {
        // Created by close(); a chunk that zfp cannot compress fails here, with the file.
        (void)h5::filtered_creation({w.file_name, a.path}, a.chunk, a.compression, a.dtype, 1.0);
        a.decomposition = std::move(decomposition);
        out.put_byte(0);
        continue;
      }
      w.create_array(i, decomposition, lcpl.get(), dcpl.get(), out);
    }
    // Values: small datasets, written at once.
    for (std::size_t k = 0; k < values.size(); ++k) {
      create_value(w.handle.get(), {w.file_name, values[k].path}, *values[k].leaf, texts[k],
                   lcpl.get(), dcpl.get());
    }
  });

  // Step 4: each rank finds its shards in what the primary sent.
  w.find_shards(comm, found);
  base::log::debug("hdf5.create", "file=\"{}\" arrays={} values={}", w.file_name, arrays.size(),
                   values.size());
}

Hdf5Writer::~Hdf5Writer() {
  if (!impl_) return;
  if (!impl_->closed) {
    base::log::warn("hdf5.unfinished", "file=\"{}\" arrays={}", impl_->file_name,
                    impl_->arrays.size());
  }
  impl_.reset();  // ~Impl closes what is open, holding the lock
}

ShardPlacement Hdf5Writer::place(std::size_t index, std::uint64_t bytes) {
  Impl& w = *impl_;
  if (w.closed) {
    throw InvalidArgument(fmt::format("Hdf5Writer for '{}': place() after close()", w.file_name));
  }
  Impl::Array& a = w.shard_of(index);
  const auto box_bytes = static_cast<std::uint64_t>(volume(*a.box)) * dtype_size(a.dtype);
  if (a.placed || bytes != box_bytes) {
    throw InvalidArgument(fmt::format(
        "leaf '{}' in '{}': shard placed twice, or {} bytes where this rank's box {} holds {}",
        a.path, w.file_name, bytes, to_string(*a.box), box_bytes));
  }
  a.placed = true;
  if (a.filtered) a.staged.resize(static_cast<std::size_t>(bytes));
  return {.file = w.file.filename().string(), .byte_offset = 0};
}

void Hdf5Writer::write(std::size_t index, std::uint64_t first, std::span<const std::byte> data) {
  Impl& w = *impl_;
  Impl::Array& a = w.shard_of(index);
  const std::size_t elem = dtype_size(a.dtype);
  if (!a.placed || w.closed || first % elem != 0 || data.size() % elem != 0) {
    throw InvalidArgument(fmt::format(
        "leaf '{}' in '{}': bytes [{}, {}) of a shard not placed, after close(), or not whole {} "
        "elements",
        a.path, w.file_name, first, first + data.size(), dtype_name(a.dtype)));
  }
  if (data.empty()) return;
  base::fault::point("storage.hdf5_write");
  if (a.filtered) {
    if (first > a.staged.size() || data.size() > a.staged.size() - first) {
      throw InvalidArgument(fmt::format("leaf '{}' in '{}': bytes [{}, {}) outside its shard of {}",
                                        a.path, w.file_name, first, first + data.size(),
                                        a.staged.size()));
    }
    std::memcpy(a.staged.data() + first, data.data(), data.size());
    return;
  }
  if (!w.raw) {
    w.raw.emplace(w.file, base::PosixFile::Mode::write_existing);
    w.raw->write_behind(w.write_behind_bytes);
  }
  const auto first_elem = static_cast<std::int64_t>(first / elem);
  const h5::RawRegion& region = *a.where;  // a shard with data has one
  for_each_global_piece(
      region.frame, region.box, first_elem, static_cast<std::int64_t>(data.size() / elem),
      [&](std::int64_t global, std::int64_t stream, std::int64_t count) {
        const auto at = static_cast<std::size_t>(stream - first_elem) * elem;
        w.raw->write_at(region.address + static_cast<std::uint64_t>(global) * elem,
                        data.subspan(at, static_cast<std::size_t>(count) * elem));
      });
}

void Hdf5Writer::flush(bool /*fsync*/) {
  // No fsync here: the file is shared, and an fsync writes back every rank's dirty pages of
  // it, so one rank done early would flush the others' pages while they still write (the
  // writes then wait on writeback). close() fsyncs once every rank is done.
  Impl& w = *impl_;
  if (!w.raw) return;
  w.raw->close();
  w.raw.reset();
}

void Hdf5Writer::close(const Comm& comm, bool fsync) {
  Impl& w = *impl_;
  if (w.closed) {
    throw InvalidArgument(fmt::format("Hdf5Writer for '{}': close() called twice", w.file_name));
  }
  // Step 5. The primary closes the file (HDF5 writes its metadata) only when no rank still
  // writes raw data: agree first.
  comm.agree({.operation = "Hdf5Writer::close " + w.file.filename().string(), .step = -1});
  w.closed = true;
  base::FirstError failure;
  try {
    flush(false);
  } catch (const std::exception& e) {
    failure.record(e);
  }
  // The tolerances of relative zfp bounds, from every rank's values.
  w.plan_created_at_close(comm);
  // Every rank learns whether the metadata was written before it fsyncs.
  (void)h5::primary_verdict(comm, [&](base::Packed&) {
    const std::lock_guard lock(hdf5_mutex());
    const h5::QuietErrors quiet;
    const Where where{w.file_name, {}};
    if (w.handle.valid()) {
      w.create_at_close();
      h5::write_time_attribute(w.handle.get(), where);
    }
    w.handle.close(where);
  });
  // The filtered datasets, collectively, once the primary's handle is closed.
  std::vector<h5::StagedShard> staged;
  for (const Impl::Array& a : w.arrays) {
    if (!a.filtered) continue;
    staged.push_back({.path = a.path, .dtype = a.dtype, .box = a.box, .bytes = a.staged});
  }
  if (!staged.empty()) {
    try {
      h5::write_filtered(comm, w.file, staged, w.hints);
    } catch (const std::exception& e) {
      failure.record(e);
    }
    // write_filtered() agreed on its outcome: every rank reads back, or none.
    if (!failure.failed()) {
      try {
        w.checksum_lossy_shards();
      } catch (const std::exception& e) {
        failure.record(e);
      }
    }
    for (Impl::Array& a : w.arrays) std::vector<std::byte>().swap(a.staged);
  }
  // Every rank fsyncs: an fsync flushes only the calling node's cached pages of the file, and
  // each rank wrote its shards from its own node.
  if (fsync && !failure.failed()) {
    try {
      base::PosixFile synced(w.file, base::PosixFile::Mode::read);
      synced.sync();
      synced.close();
    } catch (const std::exception& e) {
      failure.record(e);
    }
  }
  failure.throw_if_failed();
  base::log::debug("hdf5.write", "file=\"{}\" arrays={}", w.file_name, w.arrays.size());
}

std::optional<std::vector<std::uint64_t>> Hdf5Writer::checksums_as_read(std::size_t index) const {
  if (index >= impl_->arrays.size()) return std::nullopt;
  return impl_->arrays[index].checksums_as_read;
}

std::unique_ptr<ShardWriter> open_hdf5_writer(const Comm& comm, const std::filesystem::path& dir,
                                              std::span<const ArrayToWrite> arrays,
                                              std::span<const ValueToWrite> values,
                                              const SaveProvenance& provenance,
                                              const MpiInfoHints& hints,
                                              std::uint64_t write_behind_bytes) {
  return std::make_unique<Hdf5Writer>(comm, dir / kHdf5File, arrays, values, provenance, hints,
                                      write_behind_bytes);
}

}  // namespace cairn::storage

// The hdf5 storage format, write side: collective creation, local raw writes, collective close.
//
// Collective discipline. Parallel HDF5 hangs when one rank leaves a collective call that the
// others entered, so every collective step sees identical input on every rank:
//  1. agree on the list of arrays and values (CollectiveMismatch on misuse);
//  2. check every local input (boxes) and agree on the verdict;
//  3. create the file, each dataset and each value collectively (identical input: these
//     calls succeed or fail together and throw directly);
//  4. each rank writes its shards with pwrite, alone (no HDF5, no MPI);
//  5. agree that every rank reached close(), then close (and fsync).
// Every HDF5 call is made with hdf5_mutex() held; agreements and raw writes are not.
#include "storage/hdf5/writer.hpp"

#include <hdf5.h>

#include <boost/json/serialize.hpp>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <optional>
#include <string_view>

#include "comm/fault.hpp"
#include "comm/first_error.hpp"
#include "comm/log.hpp"
#include "storage/checksum.hpp"
#include "storage/hdf5/handle.hpp"
#include "storage/hdf5/settings.hpp"
#include "storage/index.hpp"
#include "storage/posix_file.hpp"
#include "storage/shard_stream.hpp"

namespace cairn::storage {
namespace {

using h5::check;
using h5::dataset_creation;
using h5::file_access;
using h5::link_creation;
using h5::make_space;
using h5::make_type;
using h5::string_type;
using h5::transfer;
using h5::Where;
using h5::write_string_attribute;

constexpr std::string_view kHintStorage =
    "Check that the directory exists and is writable, that the file system has space and "
    "supports MPI-IO";
constexpr std::string_view kHintCreate =
    "Check that the leaf paths are distinct, that no path is both a leaf and a group, and "
    "that the file system has space";

/// The collective H5Dwrite of a value's scalar dataset: the primary (`writes`) writes `data`,
/// the other ranks select nothing. Local failures go to `failure`; the rank still takes part.
void write_value(hid_t dataset, hid_t type, hid_t file_space, bool writes, const void* data,
                 hid_t dxpl, const Where& where, detail::FirstError& failure) {
  static const std::byte no_data{};
  h5::Dataspace memory_space;
  bool selected = false;
  if (writes) {
    try {
      check(H5Sselect_all(file_space), where, "selecting the dataset");
      memory_space = h5::Dataspace(check(H5Screate(H5S_SCALAR), where, "selecting the data"));
      selected = true;
    } catch (const std::exception& e) {
      failure.record(e);
    }
  }
  if (!selected) {
    memory_space = h5::Dataspace(H5Scopy(file_space));
    H5Sselect_none(file_space);
    if (memory_space.valid()) H5Sselect_none(memory_space.get());
    data = &no_data;
  }
  if (H5Dwrite(dataset, type, memory_space.get(), file_space, dxpl, data) < 0) {
    try {
      h5::throw_failure(where, "writing the data", kHintStorage);
    } catch (const std::exception& e) {
      failure.record(e);
    }
  }
}

/// Throws InvalidArgument naming the leaf when this rank's box of `a` is not inside its shape.
void check_box(const ArrayToWrite& a) {
  if (!a.box) return;
  check_box_in_shape(*a.box, a.shape, fmt::format("leaf '{}' on this rank", a.path));
  (void)volume(*a.box);
}

/// Throws IoError when the file system of `file` has less free space than the datasets of
/// `arrays` need (plus alignment and metadata). HDF5 1.10 hangs in H5Fclose when a metadata
/// write fails on one rank and not on the others (they leave its flush at different
/// collective calls), which is what a disk that fills up during the save causes; checking
/// before the file exists turns the common case, a disk already too full for the step, into
/// an error on every rank. A disk filled by another writer while the file is written is not
/// covered. An unknown amount of space passes.
void check_free_space(const std::filesystem::path& file, std::span<const ArrayToWrite> arrays) {
  constexpr std::uint64_t kMetadataBytes = std::uint64_t{64} << 10;
  constexpr std::uint64_t kAlignmentBytes = std::uint64_t{1} << 20;  // see file_access()
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

/// Whether `box` is one run of the row-major array it is in: every dimension after the first
/// one with an extent other than 1 is whole.
bool is_run(const Box& box, std::span<const std::int64_t> shape) {
  std::size_t d = 0;
  while (d < shape.size() && box.extent[d] == 1) ++d;
  for (std::size_t k = d + 1; k < shape.size(); ++k) {
    if (box.extent[k] != shape[k]) return false;
  }
  return true;
}

/// The chunk shape of each array of `arrays` (every rank's the same): empty for a contiguous
/// dataset. An array is chunked with one chunk per shard when some rank's shard is not a run
/// of the array (2-D blocks, column slabs: in a contiguous dataset such a shard is one piece
/// per row, written and read in small strided requests) and every shard is one chunk of a
/// regular grid (the largest shard's shape; shards start on chunk boundaries and span a chunk,
/// or reach the end of the array). A decomposition that is not a regular grid, a chunk of
/// 4 GiB or more (HDF5's limit) or more chunks than ranks keeps the dataset contiguous.
/// Collective: at most two element-wise reductions over `comm`, whatever the number of arrays.
std::vector<std::vector<std::int64_t>> plan_chunks(const Comm& comm,
                                                   std::span<const ArrayToWrite> arrays) {
  constexpr std::uint64_t kMaxChunkBytes = (std::uint64_t{1} << 32) - 1;
  std::vector<std::vector<std::int64_t>> chunks(arrays.size());
  // Candidates: arrays of two or more dimensions with elements (the same on every rank).
  std::vector<std::size_t> candidates;
  std::vector<std::int64_t> proposal;  // per candidate: [not a run, extents...]
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const ArrayToWrite& a = arrays[i];
    if (a.shape.size() < 2 || volume(a.shape) == 0) continue;
    candidates.push_back(i);
    const bool has = a.box && volume(*a.box) > 0;
    proposal.push_back(has && !is_run(*a.box, a.shape) ? 1 : 0);
    for (std::size_t d = 0; d < a.shape.size(); ++d) proposal.push_back(has ? a.box->extent[d] : 0);
  }
  if (candidates.empty()) return chunks;
  const std::vector<std::int64_t> largest = comm.max(proposal);
  std::vector<std::size_t> chunked;
  std::vector<std::int64_t> misfit;  // per chunked candidate: this rank's shard is not a chunk
  std::size_t at = 0;
  for (std::size_t i : candidates) {
    const ArrayToWrite& a = arrays[i];
    const bool strided = largest[at] == 1;
    const std::vector<std::int64_t> chunk(
        largest.begin() + static_cast<std::ptrdiff_t>(at + 1),
        largest.begin() + static_cast<std::ptrdiff_t>(at + 1 + a.shape.size()));
    at += 1 + a.shape.size();
    if (!strided) continue;
    const std::uint64_t chunk_bytes =
        static_cast<std::uint64_t>(volume(chunk)) * dtype_size(a.dtype);
    if (chunk_bytes == 0 || chunk_bytes > kMaxChunkBytes ||
        h5::chunk_count(a.shape, chunk) > static_cast<std::uint64_t>(comm.size())) {
      continue;
    }
    bool fits = true;
    if (a.box && volume(*a.box) > 0) {
      for (std::size_t d = 0; d < a.shape.size(); ++d) {
        const std::int64_t offset = a.box->offset[d];
        fits = fits && offset % chunk[d] == 0 &&
               a.box->extent[d] == std::min(chunk[d], a.shape[d] - offset);
      }
    }
    chunked.push_back(i);
    misfit.push_back(fits ? 0 : 1);
    chunks[i] = chunk;
  }
  if (chunked.empty()) return chunks;
  const std::vector<std::int64_t> any_misfit = comm.max(misfit);
  for (std::size_t k = 0; k < chunked.size(); ++k) {
    if (any_misfit[k] != 0) chunks[chunked[k]].clear();
  }
  return chunks;
}

std::uint64_t structure_hash(std::span<const ArrayToWrite> arrays,
                             std::span<const ValueToWrite> values) {
  StructureHash hash;
  for (const ArrayToWrite& a : arrays) {
    hash.add(a.path).add(static_cast<std::int64_t>(a.dtype));
    for (std::int64_t n : a.shape) hash.add(n);
    hash.add(a.fortran_order ? std::int64_t{-2} : std::int64_t{-1});
  }
  for (const ValueToWrite& v : values) {
    const bool scalar = v.leaf && v.leaf->kind() == LeafKind::scalar;
    hash.add(v.path)
        .add(v.leaf ? static_cast<std::int64_t>(v.leaf->kind()) : -1)
        .add(scalar ? static_cast<std::int64_t>(v.leaf->as_scalar().dtype()) : -1);
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
  };

  std::filesystem::path file;
  std::string file_name;  // file.string(), for messages
  h5::File handle;
  std::vector<h5::Dataset> datasets;  // of `arrays`, closed before `handle`
  std::vector<Array> arrays;
  std::optional<PosixFile> raw;  // this rank's descriptor for its writes, opened by place()
  bool closed = false;           // close() got past its agreement

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  // Also runs when the constructor throws, after its lock is released: take it again.
  ~Impl() {
    raw.reset();
    const std::lock_guard lock(hdf5_mutex());
    const h5::QuietErrors quiet;
    datasets.clear();
    handle.reset();  // collective when still open; a failure is logged
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
};

Hdf5Writer::Hdf5Writer(const Comm& comm, const std::filesystem::path& file,
                       std::span<const ArrayToWrite> arrays, std::span<const ValueToWrite> values)
    : impl_(std::make_unique<Impl>()) {
  Impl& w = *impl_;
  w.file = file;
  w.file_name = file.string();
  comm.agree({.operation = "Hdf5Writer " + file.filename().string(),
              .step = -1,
              .structure = structure_hash(arrays, values)});

  // Step 2: local checks, then one verdict. The primary also renders the values' text,
  // whose lengths every rank needs to create the string datasets identically.
  std::vector<std::string> texts(values.size());
  comm.run_all(fmt::format("Hdf5Writer '{}': checking the input", w.file_name), [&] {
    for (const ArrayToWrite& a : arrays) {
      validate_leaf_path(a.path);  // a valid path is also a valid HDF5 path
      (void)volume(a.shape);
      check_box(a);
      w.arrays.push_back({.path = a.path,
                          .dtype = a.dtype,
                          .shape = a.shape,
                          .fortran_order = a.fortran_order,
                          .box = a.box,
                          .chunk = {},
                          .where = std::nullopt,
                          .placed = false});
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
    if (comm.is_primary()) check_free_space(w.file, arrays);
  });
  const std::vector<std::vector<std::int64_t>> chunks = plan_chunks(comm, arrays);
  for (std::size_t i = 0; i < w.arrays.size(); ++i) w.arrays[i].chunk = chunks[i];
  std::vector<std::uint64_t> text_sizes(values.size());
  if (!values.empty()) {
    for (std::size_t k = 0; k < values.size(); ++k) text_sizes[k] = texts[k].size();
    const auto bytes = comm.broadcast_bytes(std::as_bytes(std::span(text_sizes)));
    if (bytes.size() != text_sizes.size() * sizeof(std::uint64_t)) {
      throw Error(ErrorCode::internal, "Hdf5Writer: broadcast of the value sizes was cut");
    }
    std::memcpy(text_sizes.data(), bytes.data(), bytes.size());
  }

  detail::FirstError failure;
  {
    const std::lock_guard lock(hdf5_mutex());
    const h5::QuietErrors quiet;
    // Step 3: the file and the datasets, created collectively.
    const Where file_where{w.file_name, {}};
    const h5::PropertyList fapl = file_access(comm, file_where);
    w.handle =
        h5::File(check(H5Fcreate(w.file_name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                       file_where, "creating the file", kHintStorage));
    const h5::PropertyList dcpl = dataset_creation(file_where);
    const h5::PropertyList lcpl = link_creation(file_where);
    std::optional<h5::PropertyList> chunked_dcpl;

    // The array datasets stay open until close(); their space is allocated now (dcpl).
    for (Impl::Array& a : w.arrays) {
      const Where where{w.file_name, a.path};
      const h5::Datatype type = make_type(a.dtype, where);
      const h5::Dataspace space = make_space(a.shape, where);
      if (!a.chunk.empty()) chunked_dcpl.emplace(dataset_creation(where, a.chunk));
      h5::Dataset& dataset = w.datasets.emplace_back(
          check(H5Dcreate2(w.handle.get(), a.path.c_str(), type.get(), space.get(), lcpl.get(),
                           a.chunk.empty() ? dcpl.get() : chunked_dcpl->get(), H5P_DEFAULT),
                where, "creating the dataset", kHintCreate));
      // Names the dtype for readers that cannot tell it from the HDF5 type (bfloat16).
      write_string_attribute(dataset.get(), "cairn_dtype", dtype_name(a.dtype), where);
      // Whether the writer saw the array with its dimensions reversed (Fortran); h5py shows
      // the C-order shape either way.
      write_string_attribute(dataset.get(), "cairn_order", a.fortran_order ? "F" : "C", where);
      // A dataset without elements has no storage; every other one has its address now (a
      // chunked one, an address per chunk: every rank looks up all, see chunk_addresses()).
      if (volume(a.shape) == 0) continue;
      const bool has_data = a.box && volume(*a.box) > 0;
      if (a.chunk.empty()) {
        const haddr_t address = H5Dget_offset(dataset.get());
        if (address == HADDR_UNDEF) h5::throw_failure(where, "finding the dataset's storage");
        if (has_data) {
          a.where = h5::RawRegion{
              .address = static_cast<std::uint64_t>(address), .frame = a.shape, .box = *a.box};
        }
        continue;
      }
      const auto addresses = h5::chunk_addresses(dataset.get(), a.shape, a.chunk, where);
      if (has_data) {
        a.where = h5::chunk_region(a.shape, a.chunk, addresses, *a.box);
        if (!a.where) {  // recorded: the other ranks still create the remaining datasets
          failure.record(IoError(w.file_name, h5::failure_message(where,
                                                                  "finding the storage "
                                                                  "of this rank's chunk")));
        }
      }
    }

    // Values: small datasets, created by all, data written by the primary in one collective
    // H5Dwrite each.
    const h5::PropertyList dxpl = transfer(H5FD_MPIO_COLLECTIVE, file_where);
    for (std::size_t k = 0; k < values.size(); ++k) {
      const ValueToWrite& v = values[k];
      const Where where{w.file_name, v.path};
      const bool scalar = v.leaf->kind() == LeafKind::scalar;
      const h5::Datatype type = scalar ? make_type(v.leaf->as_scalar().dtype(), where)
                                       : string_type(text_sizes[k], where);
      const h5::Dataspace space(check(H5Screate(H5S_SCALAR), where, "creating a dataspace"));
      h5::Dataset dataset(check(H5Dcreate2(w.handle.get(), v.path.c_str(), type.get(), space.get(),
                                           lcpl.get(), dcpl.get(), H5P_DEFAULT),
                                where, "creating the dataset", kHintCreate));
      write_string_attribute(dataset.get(), "cairn_kind", leaf_kind_name(v.leaf->kind()), where);
      if (scalar) {
        write_string_attribute(dataset.get(), "cairn_dtype",
                               dtype_name(v.leaf->as_scalar().dtype()), where);
      }
      static const char empty_text[1] = {'\0'};
      const void* data = scalar             ? v.leaf->as_scalar().data()
                         : texts[k].empty() ? static_cast<const void*>(empty_text)
                                            : static_cast<const void*>(texts[k].data());
      write_value(dataset.get(), type.get(), space.get(), comm.is_primary(), data, dxpl.get(),
                  where, failure);
      dataset.close(where);
    }
  }
  // A failed value write is reported now: nothing is worth writing into a file that already
  // failed. (On throw, ~Impl closes the file on every rank.)
  failure.report(comm);
  log::debug("hdf5.create", "file=\"{}\" arrays={} values={}", w.file_name, arrays.size(),
             values.size());
}

Hdf5Writer::~Hdf5Writer() {
  if (!impl_) return;
  if (!impl_->closed) {
    log::warn("hdf5.unfinished", "file=\"{}\" arrays={}", impl_->file_name, impl_->arrays.size());
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
  fault::point("storage.hdf5_write");
  if (!w.raw) w.raw.emplace(w.file, PosixFile::Mode::write_existing);
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
  // Step 5. No rank may meet H5Fclose while another still writes raw data (HDF5 may read and
  // rewrite a range around its metadata), nor meet it alone: agree first.
  comm.agree({.operation = "Hdf5Writer::close " + w.file.filename().string(), .step = -1});
  w.closed = true;
  detail::FirstError failure;
  try {
    flush(false);
  } catch (const std::exception& e) {
    failure.record(e);
  }
  const Where file_where{w.file_name, {}};
  {
    const std::lock_guard lock(hdf5_mutex());
    const h5::QuietErrors quiet;
    for (std::size_t i = 0; i < w.datasets.size(); ++i) {
      try {
        w.datasets[i].close({w.file_name, w.arrays[i].path});
      } catch (const std::exception& e) {
        failure.record(e);
      }
    }
    // H5Fclose is collective and writes the metadata; its failure is remembered so that
    // every rank still gets here.
    try {
      w.handle.close(file_where);
    } catch (const std::exception& e) {
      failure.record(e);
    }
  }
  // Every rank fsyncs: metadata may have been written by any rank (HDF5's distributed
  // metadata writes), and an fsync flushes only the calling node's cached pages of the file.
  if (fsync && !failure.failed()) {
    try {
      PosixFile synced(w.file, PosixFile::Mode::read);
      synced.sync();
      synced.close();
    } catch (const std::exception& e) {
      failure.record(e);
    }
  }
  failure.throw_if_failed();
  log::debug("hdf5.write", "file=\"{}\" arrays={}", w.file_name, w.arrays.size());
}

std::unique_ptr<ShardWriter> open_hdf5_writer(const Comm& comm, const std::filesystem::path& dir,
                                              std::span<const ArrayToWrite> arrays,
                                              std::span<const ValueToWrite> values) {
  return std::make_unique<Hdf5Writer>(comm, dir / kHdf5File, arrays, values);
}

}  // namespace cairn::storage

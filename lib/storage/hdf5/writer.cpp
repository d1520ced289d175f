// The hdf5 storage format: one shared file, one dataset per array leaf, collective writes.
//
// Collective discipline. Parallel HDF5 hangs when one rank leaves a collective call that the
// others entered, so Hdf5Writer is built to make every rank take the same path:
//  1. agree on the list of arrays and values (CollectiveMismatch on misuse, rule 2);
//  2. check every local input (boxes, dtypes) and agree on the verdict;
//  3. create the file and each dataset collectively (these calls see identical input on
//     every rank, so they succeed or fail together and throw directly);
//  4. write each dataset with the same number of collective H5Dwrite calls on every rank (its
//     agreed piece count; the calls fall on the datasets in order, whatever index a rank
//     passes), selecting nothing when a rank has nothing (more) to write or when preparing
//     its data failed; a local failure is remembered, not thrown, so the rank keeps taking
//     part;
//  5. close (and fsync), then turn the remembered failures into one error on every rank.
// Every HDF5 call is made with hdf5_mutex() held; agreements and checksums are not.
#include "storage/hdf5/writer.hpp"

#include <hdf5.h>

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>

#include "comm/log.hpp"
#include "storage/checksum.hpp"
#include "storage/hdf5/handle.hpp"
#include "storage/hdf5/settings.hpp"
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
using h5::to_hsize;
using h5::transfer;
using h5::Where;
using h5::write_string_attribute;

constexpr std::string_view kHintStorage =
    "Check that the directory exists and is writable, that the file system has space and "
    "supports MPI-IO";
constexpr std::string_view kHintCreate =
    "Check that the leaf paths are distinct, that no path is both a leaf and a group, and "
    "that the file system has space";
constexpr std::string_view kHintDamaged =
    "The file may be truncated or damaged; restore from another checkpoint";

/// A local failure remembered until every rank can be told about it (step 4 above).
struct FirstFailure {
  bool ok = true;
  ErrorCode code = ErrorCode::internal;
  std::string message;
  void record(const std::exception& e) {
    if (!ok) return;
    ok = false;
    code = error_code_of(e);
    message = e.what();
  }
};

std::uint64_t fnv1a(std::uint64_t hash, std::string_view bytes) {
  for (char c : bytes) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return hash;
}
std::uint64_t fnv1a(std::uint64_t hash, std::int64_t value) {
  return fnv1a(hash, std::string_view(reinterpret_cast<const char*>(&value), sizeof value));
}
constexpr std::uint64_t kFnvOffset = 14695981039346656037ULL;

// ------------------------------------------------------------------ writing

/// The collective H5Dwrite every rank makes for every dataset: `box` (nullptr: nothing, or
/// the whole of a 0-d dataset when `whole_scalar`) from `data`. Local failures go to
/// `failure`; the rank still takes part, with an empty selection.
void write_collectively(hid_t dataset, hid_t type, hid_t file_space, const Box* box,
                        bool whole_scalar, const void* data, hid_t dxpl, const Where& where,
                        FirstFailure& failure) {
  static const std::byte no_data{};
  h5::Dataspace memory_space;
  bool selected = false;
  try {
    if (whole_scalar) {
      check(H5Sselect_all(file_space), where, "selecting the dataset");
      memory_space = h5::Dataspace(check(H5Screate(H5S_SCALAR), where, "selecting the data"));
      selected = true;
    } else if (box != nullptr) {
      const std::vector<hsize_t> start = to_hsize(box->offset);
      const std::vector<hsize_t> count = to_hsize(box->extent);
      check(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start.data(), nullptr, count.data(),
                                nullptr),
            where, "selecting this rank's box");
      memory_space = make_space(box->extent, where);
      selected = true;
    }
  } catch (const std::exception& e) {
    failure.record(e);
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

/// This rank's box of `a` after checking the shard against the declared leaf. Throws
/// InvalidArgument naming the leaf.
Box checked_box(const Hdf5ArrayToWrite& a) {
  const ArrayShard& s = *a.shard;
  const std::string what = fmt::format("leaf '{}' on this rank", a.path);
  if (s.dtype != a.dtype || s.global_shape != a.shape) {
    throw InvalidArgument(fmt::format("{}: the shard is {} {} but the leaf is {} {}", what,
                                      dtype_name(s.dtype), shape_to_string(s.global_shape),
                                      dtype_name(a.dtype), shape_to_string(a.shape)));
  }
  Box box = s.box.offset.empty() && s.box.extent.empty() ? whole_box(a.shape) : s.box;
  check_box_in_shape(box, a.shape, what);
  (void)s.local_bytes();  // throws when the byte count overflows
  return box;
}

/// Throws IoError when the file system of `file` has less free space than the datasets of
/// `arrays` need (plus alignment and metadata). HDF5 1.10 hangs in H5Fclose when a metadata
/// write fails on one rank and not on the others (they leave its flush at different
/// collective calls), which is what a disk that fills up during the save causes; checking
/// before the file exists turns the common case, a disk already too full for the step, into
/// an error on every rank. A disk filled by another writer while the file is written is not
/// covered. An unknown amount of space passes.
void check_free_space(const std::filesystem::path& file, std::span<const Hdf5ArrayToWrite> arrays) {
  constexpr std::uint64_t kMetadataBytes = std::uint64_t{64} << 10;
  constexpr std::uint64_t kAlignmentBytes = std::uint64_t{1} << 20;  // see file_access()
  std::uint64_t needed = kMetadataBytes;
  for (const Hdf5ArrayToWrite& a : arrays) {
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

/// Where `run` starts in the row-major buffer of `box` (in elements) when it is a contiguous
/// run of that buffer inside the box: extents of 1 before some dimension, whole extents of the
/// box after it. std::nullopt otherwise.
std::optional<std::int64_t> run_position(const Box& box, const Box& run) {
  if (run.rank() != box.rank() || run.extent.size() != box.rank() || !contains(box, run)) {
    return std::nullopt;
  }
  std::size_t d = 0;
  while (d + 1 < run.rank() && run.extent[d] == 1) ++d;
  for (std::size_t i = d + 1; i < run.rank(); ++i) {
    if (run.offset[i] != box.offset[i] || run.extent[i] != box.extent[i]) return std::nullopt;
  }
  const std::vector<std::int64_t> strides = row_major_strides(box.extent);
  std::int64_t position = 0;
  for (std::size_t i = 0; i < run.rank(); ++i) {
    position += (run.offset[i] - box.offset[i]) * strides[i];
  }
  return position;
}

std::uint64_t structure_hash(std::span<const Hdf5ArrayToWrite> arrays,
                             std::span<const Hdf5ValueToWrite> values) {
  std::uint64_t hash = kFnvOffset;
  for (const auto& a : arrays) {
    hash = fnv1a(fnv1a(hash, a.path), static_cast<std::int64_t>(a.dtype));
    for (std::int64_t n : a.shape) hash = fnv1a(hash, n);
    hash = fnv1a(hash, a.fortran_order ? std::int64_t{-2} : std::int64_t{-1});
    hash = fnv1a(hash, static_cast<std::int64_t>(a.pieces));
    hash = fnv1a(hash, static_cast<std::int64_t>(a.chunk_bytes));
  }
  for (const auto& v : values) {
    hash = fnv1a(hash, v.path);
    const std::int64_t kind = v.leaf ? static_cast<std::int64_t>(v.leaf->kind()) : -1;
    const bool scalar = v.leaf && v.leaf->kind() == LeafKind::scalar;
    hash = fnv1a(fnv1a(hash, kind),
                 scalar ? static_cast<std::int64_t>(v.leaf->as_scalar().dtype()) : -1);
  }
  return hash;
}

}  // namespace

// ------------------------------------------------------------------ Hdf5Writer

struct Hdf5Writer::Impl {
  struct Array {
    std::string path;
    DType dtype = DType::float64;
    std::vector<std::int64_t> shape;
    bool fortran_order = false;
    std::size_t pieces = 1;  // collective write calls per rank
    std::uint64_t chunk_bytes = 1;
    std::optional<Box> box;  // this rank's, when it has a shard
    h5::Dataset dataset;     // open from the constructor to finish()
  };
  /// What this rank wrote of the array being written, piece by piece.
  struct Progress {
    std::size_t calls = 0;                    // collective calls made for the array
    std::int64_t covered = 0;                 // elements of the box written, in row-major order
    bool started = false;                     // a run was passed
    bool complete = false;                    // the box is written
    std::unique_ptr<ChunkedChecksum> digest;  // of the runs written so far
  };

  const Comm* comm = nullptr;
  std::filesystem::path file;
  std::string file_name;    // file.string(), for messages
  std::string record_file;  // file.filename(), for ShardRecord::file
  h5::File handle;
  h5::PropertyList dxpl;
  std::vector<Array> arrays;  // closed before `handle`
  std::size_t next = 0;       // index of the array being written (the same on every rank)
  Progress progress;          // of arrays[next]
  FirstFailure failure;
  bool closed = false;  // finish() got past its agreement

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  // Also runs when the constructor throws, after its lock is released: take it again.
  ~Impl() {
    const std::lock_guard lock(hdf5_mutex());
    const h5::QuietErrors quiet;
    arrays.clear();
    dxpl.reset();
    handle.reset();  // collective when still open; a failure is logged
  }
};

Hdf5Writer::Hdf5Writer(const Comm& comm, const std::filesystem::path& file,
                       std::span<const Hdf5ArrayToWrite> arrays,
                       std::span<const Hdf5ValueToWrite> values)
    : impl_(std::make_unique<Impl>()) {
  Impl& w = *impl_;
  w.comm = &comm;
  w.file = file;
  w.file_name = file.string();
  w.record_file = file.filename().string();
  comm.agree({.operation = "Hdf5Writer " + w.record_file,
              .step = -1,
              .structure = structure_hash(arrays, values)});

  // Step 2: local checks, then one verdict. The primary also renders the values' text,
  // whose lengths every rank needs to create the string datasets identically.
  w.arrays.resize(arrays.size());
  std::vector<std::string> texts(values.size());
  comm.run_all(fmt::format("Hdf5Writer '{}': checking the input", w.file_name), [&] {
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      const Hdf5ArrayToWrite& a = arrays[i];
      validate_leaf_path(a.path);  // a valid path is also a valid HDF5 path
      (void)volume(a.shape);
      w.arrays[i].path = a.path;
      w.arrays[i].dtype = a.dtype;
      w.arrays[i].shape = a.shape;
      w.arrays[i].fortran_order = a.fortran_order;
      if (a.pieces == 0) {
        throw InvalidArgument(
            fmt::format("leaf '{}': 0 pieces; write every array in at least one", a.path));
      }
      w.arrays[i].pieces = a.pieces;
      if (a.chunk_bytes == 0 || a.chunk_bytes % dtype_size(a.dtype) != 0) {
        throw InvalidArgument(
            fmt::format("leaf '{}': checksum chunks of {} bytes are not whole {} elements", a.path,
                        a.chunk_bytes, dtype_name(a.dtype)));
      }
      w.arrays[i].chunk_bytes = a.chunk_bytes;
      if (a.shard != nullptr) w.arrays[i].box = checked_box(a);
    }
    for (std::size_t k = 0; k < values.size(); ++k) {
      const Hdf5ValueToWrite& v = values[k];
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
  std::vector<std::uint64_t> text_sizes(values.size());
  if (!values.empty()) {
    for (std::size_t k = 0; k < values.size(); ++k) text_sizes[k] = texts[k].size();
    const auto bytes = comm.broadcast_bytes(std::as_bytes(std::span(text_sizes)));
    if (bytes.size() != text_sizes.size() * sizeof(std::uint64_t)) {
      throw Error(ErrorCode::internal, "Hdf5Writer: broadcast of the value sizes was cut");
    }
    std::memcpy(text_sizes.data(), bytes.data(), bytes.size());
  }

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
    // Collective transfer: MPI-IO aggregates the ranks' hyperslabs into large writes.
    w.dxpl = transfer(H5FD_MPIO_COLLECTIVE, file_where);

    // The array datasets stay open until finish(): write() then makes no metadata calls.
    for (Impl::Array& a : w.arrays) {
      const Where where{w.file_name, a.path};
      const h5::Datatype type = make_type(a.dtype, where);
      const h5::Dataspace space = make_space(a.shape, where);
      a.dataset = h5::Dataset(check(H5Dcreate2(w.handle.get(), a.path.c_str(), type.get(),
                                               space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT),
                                    where, "creating the dataset", kHintCreate));
      // Names the dtype for readers that cannot tell it from the HDF5 type (bfloat16).
      write_string_attribute(a.dataset.get(), "cairn_dtype", dtype_name(a.dtype), where);
      // Whether the writer saw the array with its dimensions reversed (Fortran); h5py shows
      // the C-order shape either way.
      write_string_attribute(a.dataset.get(), "cairn_order", a.fortran_order ? "F" : "C", where);
    }

    // Values: small datasets, created by all, data written by the primary.
    for (std::size_t k = 0; k < values.size(); ++k) {
      const Hdf5ValueToWrite& v = values[k];
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
      write_collectively(dataset.get(), type.get(), space.get(), nullptr, comm.is_primary(), data,
                         w.dxpl.get(), where, w.failure);
      dataset.close(where);
    }
  }
  // A failed value write is reported now rather than in finish(): nothing is worth writing
  // into a file that already failed. (On throw, ~Impl closes the file on every rank.)
  comm.all_ok(w.failure.ok, w.failure.message, w.failure.code);
  log::debug("hdf5.create", "file=\"{}\" arrays={} values={}", w.file_name, arrays.size(),
             values.size());
}

Hdf5Writer::~Hdf5Writer() {
  if (!impl_) return;
  if (!impl_->closed) {
    log::warn("hdf5.unfinished", "file=\"{}\" arrays_written={} arrays={}", impl_->file_name,
              impl_->next, impl_->arrays.size());
  }
  impl_.reset();  // ~Impl closes what is open, holding the lock
}

std::size_t Hdf5Writer::array_count() const noexcept { return impl_->arrays.size(); }

std::size_t Hdf5Writer::current_array() const {
  const Impl& w = *impl_;
  if (w.closed || w.next == w.arrays.size()) {
    throw InvalidArgument(fmt::format("Hdf5Writer for '{}': a write after {}", w.file_name,
                                      w.closed ? "finish()" : "every array was written"));
  }
  return w.next;
}

std::optional<ShardRecord> Hdf5Writer::write(std::size_t index, const void* data) {
  const Impl::Array& a = impl_->arrays[current_array()];
  std::optional<ShardRecord> record = write_piece(index, a.box ? &*a.box : nullptr, data);
  while (impl_->progress.calls != 0) (void)write_piece(index, nullptr, nullptr);
  if (!impl_->failure.ok) return std::nullopt;
  return record;
}

void Hdf5Writer::skip(std::size_t index) {
  do {
    (void)write_piece(index, nullptr, nullptr);
  } while (impl_->progress.calls != 0);
}

std::optional<ShardRecord> Hdf5Writer::write_piece(std::size_t index, const Box* run,
                                                   const void* data) {
  Impl& w = *impl_;
  // The call's position, not `index`, picks the dataset: ranks that pass different indices
  // still meet in the same collective H5Dwrite (or all skip it), so misuse cannot hang. The
  // ranks do not agree on `index`: one agreement round costs more than writing a small leaf
  // (see the header), and the constructor agreed on the whole list.
  const std::size_t k = current_array();
  const Impl::Array& a = w.arrays[k];
  Impl::Progress& p = w.progress;
  const Where where{w.file_name, a.path};
  const std::string what = fmt::format("leaf '{}' on this rank", a.path);
  if (index != k) {
    w.failure.record(InvalidArgument(fmt::format(
        "Hdf5Writer for '{}': write of array {} fell on array {} (leaf '{}'); write every "
        "array, in increasing index order, on every rank",
        w.file_name, index, k, a.path)));
  }

  // This rank's run, checksummed from the bytes written; not after a failure.
  std::optional<ShardRecord> record;
  const Box* selected = nullptr;
  if (w.failure.ok && (run != nullptr || data != nullptr)) {
    try {
      if (!a.box) {
        throw InvalidArgument(
            fmt::format("{}: data passed, but this rank has no shard of the leaf", what));
      }
      if (run == nullptr) {
        throw InvalidArgument(fmt::format("{}: data passed without the box it holds", what));
      }
      const std::optional<std::int64_t> position = run_position(*a.box, *run);
      if (p.complete || position != p.covered) {
        throw InvalidArgument(
            fmt::format("{}: the piece {} does not continue the box {} at its element {}; pass "
                        "consecutive runs of the box in row-major order",
                        what, to_string(*run), to_string(*a.box), p.covered));
      }
      const std::int64_t count = volume(*run);
      if (data == nullptr && count > 0) {
        throw InvalidArgument(fmt::format("{}: no data passed for {}", what, to_string(*run)));
      }
      const auto bytes = static_cast<std::size_t>(count) * dtype_size(a.dtype);
      if (!p.digest) p.digest = std::make_unique<ChunkedChecksum>(a.chunk_bytes);
      p.digest->update({static_cast<const std::byte*>(data), bytes});
      p.covered += count;
      p.started = true;
      if (count > 0) selected = run;
      if (p.covered == volume(*a.box)) {
        p.complete = true;
        record = ShardRecord{.rank = w.comm->rank(),
                             .box = *a.box,
                             .file = w.record_file,
                             .byte_offset = 0,
                             .bytes = static_cast<std::uint64_t>(p.covered) * dtype_size(a.dtype),
                             .checksums = p.digest->digests()};
      }
    } catch (const std::exception& e) {
      w.failure.record(e);
      record.reset();
      selected = nullptr;
    }
  }
  if (++p.calls == a.pieces) {
    if (p.started && !p.complete) {
      w.failure.record(
          InvalidArgument(fmt::format("{}: its pieces cover {} of the {} elements of the box {}",
                                      what, p.covered, volume(*a.box), to_string(*a.box))));
    }
    ++w.next;
    p = Impl::Progress{};
  }

  // A dataset without elements has no storage (its address is undefined) and HDF5 fails
  // even an empty write to it; the shape is the same on every rank, so all skip it.
  if (volume(a.shape) > 0) {
    const std::lock_guard lock(hdf5_mutex());
    const h5::QuietErrors quiet;
    // Same input on every rank: these fail on every rank together (step 3).
    const h5::Datatype type = make_type(a.dtype, where);
    const h5::Dataspace space = make_space(a.shape, where);
    write_collectively(a.dataset.get(), type.get(), space.get(),
                       a.shape.empty() ? nullptr : selected, selected && a.shape.empty(), data,
                       w.dxpl.get(), where, w.failure);
  }
  if (!w.failure.ok) return std::nullopt;
  return record;
}

void Hdf5Writer::finish(bool fsync) {
  Impl& w = *impl_;
  if (w.closed) {
    throw InvalidArgument(fmt::format("Hdf5Writer for '{}': finish() called twice", w.file_name));
  }
  // Ranks that made different numbers of write calls must not meet in H5Fclose: agree on
  // the count. (They get here only when the calls in between skipped arrays without
  // elements; otherwise the ranks still writing wait in H5Dwrite, see write().)
  w.comm->agree({.operation = "Hdf5Writer::finish",
                 .step = static_cast<std::int64_t>(w.next),
                 .structure = w.progress.calls});
  w.closed = true;
  if (w.next != w.arrays.size()) {
    w.failure.record(InvalidArgument(
        fmt::format("Hdf5Writer for '{}': finish() after {} of {} arrays were written", w.file_name,
                    w.next, w.arrays.size())));
  }
  const Where file_where{w.file_name, {}};
  {
    const std::lock_guard lock(hdf5_mutex());
    const h5::QuietErrors quiet;
    for (Impl::Array& a : w.arrays) {
      try {
        a.dataset.close({w.file_name, a.path});
      } catch (const std::exception& e) {
        w.failure.record(e);
      }
    }
    w.dxpl.reset();
    // Step 5. H5Fclose is collective and writes the last metadata; its failure is remembered
    // like a write failure so every rank still reaches the verdict below.
    try {
      w.handle.close(file_where);
    } catch (const std::exception& e) {
      w.failure.record(e);
    }
  }
  // Every rank fsyncs: raw data was written by the MPI-IO aggregators and metadata by any
  // rank (HDF5's distributed metadata writes), and an fsync flushes only the calling node's
  // cached pages of the file.
  if (fsync && w.failure.ok) {
    try {
      PosixFile synced(w.file, PosixFile::Mode::read);
      synced.sync();
      synced.close();
    } catch (const std::exception& e) {
      w.failure.record(e);
    }
  }
  w.comm->all_ok(w.failure.ok, w.failure.message, w.failure.code);
  log::debug("hdf5.write", "file=\"{}\" arrays={}", w.file_name, w.arrays.size());
}

}  // namespace cairn::storage

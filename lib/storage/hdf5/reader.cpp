// The hdf5 storage format, read side: datasets opened collectively, shards read with pread at
// the addresses HDF5 allocated (H5Dread for anything else).
#include "storage/hdf5/reader.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <optional>
#include <set>
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
using h5::file_access;
using h5::make_space;
using h5::make_type;
using h5::to_hsize;
using h5::transfer;
using h5::Where;

constexpr std::string_view kHintDamaged =
    "The file may be truncated or damaged; restore from another checkpoint";

// Pieces of a shard this close in the file are prefetched as one range, gaps included: one
// large request costs less than many small ones.
constexpr std::uint64_t kMergeGapBytes = std::uint64_t{64} << 10;

// A chunked dataset with more chunks is not opened: looking up every chunk's address at
// open() would cost more than reading it (cairn writes one chunk per shard).
constexpr std::uint64_t kMaxChunks = std::uint64_t{1} << 20;

}  // namespace

// ------------------------------------------------------------------ reading

struct Hdf5Reader::Impl {
  struct OpenDataset {
    h5::Dataset dataset;
    h5::Datatype memory_type;
    DType dtype = DType::float64;
    std::vector<std::int64_t> shape;
    /// Address of the raw data in the file when it is contiguous and can be read with pread
    /// (see the class).
    std::optional<std::uint64_t> raw_offset;
    /// The chunk shape of a chunked dataset (empty otherwise) and the address of each chunk,
    /// in row-major order of the chunk grid. Chunked datasets are always read with pread.
    std::vector<std::int64_t> chunk;
    std::vector<std::optional<std::uint64_t>> chunk_addresses;

    /// Where `box` lies in the file as one region, when it does: anywhere in a contiguous
    /// dataset read with pread, a box that is exactly one chunk of a chunked one.
    [[nodiscard]] std::optional<h5::RawRegion> region_of(const Box& box) const {
      if (raw_offset) return h5::RawRegion{.address = *raw_offset, .frame = shape, .box = box};
      if (!chunk.empty()) return h5::chunk_region(shape, chunk, chunk_addresses, box);
      return std::nullopt;
    }
  };

  const Comm* comm = nullptr;
  std::string file;
  std::optional<PosixFile> raw;  // the file for pread, opened on the first raw read
  h5::File handle;
  h5::PropertyList independent;
  std::map<std::string, OpenDataset, std::less<>> datasets;  // closed before `handle`
  std::set<std::string, std::less<>> hard_groups;  // prefixes of opened leaves: hard links

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  // Also runs when the constructor throws, after its lock is released: take it again.
  ~Impl() {
    const std::lock_guard lock(hdf5_mutex());
    const h5::QuietErrors quiet;
    datasets.clear();
    independent.reset();
    handle.reset();  // collective, like close(); a failure is logged
  }

  [[noreturn]] void mismatch(std::string_view leaf, std::string_view problem) const {
    throw FormatError(file, std::string(leaf),
                      fmt::format("leaf '{}' in HDF5 file '{}': {}; the file does not match "
                                  "its cairn-tree.json (damaged or replaced). Restore from "
                                  "another checkpoint",
                                  leaf, file, problem));
  }

  OpenDataset open_dataset(const LeafRecord& record);
  // The opened dataset of `path`. Throws InvalidArgument when it was not opened.
  const OpenDataset& opened(std::string_view path) const;
  // Checks that bytes [first, first + bytes) are whole elements of `shard` of the opened
  // `leaf`, and returns where the shard lies in the file (opening `raw`), if it is one region
  // read with pread.
  std::optional<h5::RawRegion> shard_region(const LeafRecord& leaf, const ShardRecord& shard,
                                            std::uint64_t first, std::uint64_t bytes);
  // Reads `box` of the chunked dataset `open` into `dst` (row-major, volume(box) elements)
  // with pread, chunk by chunk.
  void read_chunks(const OpenDataset& open, const Box& box, std::byte* dst);
};

Hdf5Reader::Impl::OpenDataset Hdf5Reader::Impl::open_dataset(const LeafRecord& record) {
  const std::string& path = record.path;
  const Where where{file, path};
  if (const auto problem = leaf_path_problem(path)) mismatch(path, *problem);
  // Walk the links so that a missing group reads as a missing dataset, not an HDF5 error,
  // and only hard links are followed: a soft or external link in a hostile file could make
  // every rank open another file. Groups walked for an earlier leaf are not looked up again.
  for (std::size_t end = path.find('/');; end = path.find('/', end + 1)) {
    const std::string prefix = path.substr(0, end);
    if (end != std::string::npos && hard_groups.contains(prefix)) continue;
    const htri_t exists = H5Lexists(handle.get(), prefix.c_str(), H5P_DEFAULT);
    if (exists < 0) mismatch(path, h5::failure_message(where, "looking up '" + prefix + "'"));
    if (exists == 0) mismatch(path, fmt::format("there is no dataset (no link '{}')", prefix));
    H5L_info_t link{};
    if (H5Lget_info(handle.get(), prefix.c_str(), &link, H5P_DEFAULT) < 0) {
      mismatch(path, h5::failure_message(where, "looking up '" + prefix + "'"));
    }
    if (link.type != H5L_TYPE_HARD) {
      mismatch(path,
               fmt::format("'{}' is a soft or external link, which cairn never writes", prefix));
    }
    if (end == std::string::npos) break;
    hard_groups.insert(prefix);
  }
  const hid_t object = H5Oopen(handle.get(), path.c_str(), H5P_DEFAULT);
  if (object < 0) mismatch(path, h5::failure_message(where, "opening the object"));
  if (H5Iget_type(object) != H5I_DATASET) {
    const H5I_type_t kind = H5Iget_type(object);
    H5Oclose(object);
    mismatch(path, kind == H5I_GROUP ? "it is a group, not a dataset" : "it is not a dataset");
  }
  OpenDataset open{.dataset = h5::Dataset(object),
                   .memory_type = make_type(record.dtype, where),
                   .dtype = record.dtype,
                   .shape = record.shape,
                   .raw_offset = std::nullopt,
                   .chunk = {},
                   .chunk_addresses = {}};

  // Raw data must be readable without metadata I/O: read() is independent while metadata
  // reads are collective.
  if (auto problem = h5::dataset_problem(open.dataset.get(), record.dtype, record.shape, where)) {
    mismatch(path, *problem);
  }
  // Raw reads need the data at one address and stored exactly as in memory.
  const h5::Datatype file_type(H5Dget_type(open.dataset.get()));
  const h5::PropertyList dcpl(H5Dget_create_plist(open.dataset.get()));
  const bool same_type = file_type.valid() && H5Tequal(file_type.get(), open.memory_type.get()) > 0;
  open.chunk = h5::chunk_shape(open.dataset.get(), where);
  if (open.chunk.empty()) {
    const haddr_t address = H5Dget_offset(open.dataset.get());
    if (dcpl.valid() && H5Pget_layout(dcpl.get()) == H5D_CONTIGUOUS && address != HADDR_UNDEF &&
        same_type) {
      open.raw_offset = static_cast<std::uint64_t>(address);
    }
    return open;
  }
  // Chunked: every chunk's address now (collective metadata reads, like open() itself), so
  // that reads need no HDF5 call.
  if (!same_type) {
    mismatch(path, "it is chunked and stored in another byte order than cairn writes");
  }
  const std::uint64_t chunks = h5::chunk_count(record.shape, open.chunk);
  if (chunks > kMaxChunks) {
    mismatch(path, fmt::format("it has {} chunks of shape {}, more than cairn reads ({})", chunks,
                               shape_to_string(open.chunk), kMaxChunks));
  }
  open.chunk_addresses = h5::chunk_addresses(open.dataset.get(), record.shape, open.chunk, where);
  const auto missing =
      std::find(open.chunk_addresses.begin(), open.chunk_addresses.end(), std::nullopt);
  if (missing != open.chunk_addresses.end()) {
    mismatch(path, fmt::format("chunk {} of {} has no storage (never written)",
                               missing - open.chunk_addresses.begin(), chunks));
  }
  return open;
}

Hdf5Reader::Hdf5Reader(const Comm& comm, const std::filesystem::path& file)
    : impl_(std::make_unique<Impl>()) {
  const std::lock_guard lock(hdf5_mutex());
  const h5::QuietErrors quiet;
  impl_->comm = &comm;
  impl_->file = file.string();
  const Where where{impl_->file, {}};
  const h5::PropertyList fapl = file_access(comm, where);
  const hid_t id = H5Fopen(impl_->file.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (id < 0) {
    const std::string reason = h5::failure_message(where, "opening the file for reading");
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) {
      throw NotFound(impl_->file, fmt::format("HDF5 file '{}' does not exist: the checkpoint "
                                              "is incomplete or was moved",
                                              impl_->file));
    }
    const htri_t is_hdf5 = H5Fis_hdf5(impl_->file.c_str());
    if (is_hdf5 == 0) {
      throw FormatError(impl_->file, "signature",
                        fmt::format("'{}' is not an HDF5 file (no HDF5 signature found): it "
                                    "was damaged or replaced; restore from another checkpoint",
                                    impl_->file));
    }
    if (is_hdf5 > 0 && reason.find("truncated") != std::string::npos) {
      throw FormatError(impl_->file, "size", fmt::format("{}. {}", reason, kHintDamaged));
    }
    throw IoError(impl_->file, fmt::format("{}. Check that the file is readable and that the "
                                           "file system supports MPI-IO; otherwise: {}",
                                           reason, kHintDamaged));
  }
  impl_->handle = h5::File(id);
  impl_->independent = transfer(H5FD_MPIO_INDEPENDENT, where);
}

Hdf5Reader::~Hdf5Reader() { impl_.reset(); }  // ~Impl closes what is open, holding the lock

void Hdf5Reader::open(std::span<const LeafRecord* const> records) {
  if (!impl_->handle.valid()) {
    throw InvalidArgument(fmt::format("Hdf5Reader for '{}' is closed", impl_->file));
  }
  StructureHash hash;
  for (const LeafRecord* record : records) {
    if (record == nullptr) throw InvalidArgument("Hdf5Reader::open: null record");
    hash.add(record->path).add(static_cast<std::int64_t>(record->dtype));
    for (std::int64_t n : record->shape) hash.add(n);
  }
  impl_->comm->agree({.operation = "Hdf5Reader::open", .step = -1, .structure = hash.value()});
  const std::lock_guard lock(hdf5_mutex());
  const h5::QuietErrors quiet;
  for (const LeafRecord* record : records) {
    if (impl_->datasets.contains(record->path)) continue;
    if (record->kind != LeafKind::array) {
      throw InvalidArgument(fmt::format("leaf '{}' is a {}, not an array stored in '{}'",
                                        record->path, leaf_kind_name(record->kind), impl_->file));
    }
    impl_->datasets.emplace(record->path, impl_->open_dataset(*record));
  }
}

const Hdf5Reader::Impl::OpenDataset& Hdf5Reader::Impl::opened(std::string_view path) const {
  const std::lock_guard lock(hdf5_mutex());
  const auto it = datasets.find(path);
  if (it == datasets.end()) {
    throw InvalidArgument(
        fmt::format("leaf '{}' of '{}' was not opened: pass its record to "
                    "Hdf5Reader::open() first",
                    path, file));
  }
  return it->second;  // datasets is not changed while reads run
}

void Hdf5Reader::Impl::read_chunks(const OpenDataset& open, const Box& box, std::byte* dst) {
  if (!raw) raw.emplace(file, PosixFile::Mode::read);
  const std::size_t elem = dtype_size(open.dtype);
  const std::size_t rank = open.shape.size();
  // Visit the chunks that meet `box`, in row-major order of the grid.
  std::vector<std::int64_t> first(rank);
  std::vector<std::int64_t> last(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    first[d] = box.offset[d] / open.chunk[d];
    last[d] = (box.offset[d] + box.extent[d] - 1) / open.chunk[d];
  }
  std::vector<std::int64_t> at = first;
  for (;;) {
    Box chunk_box{std::vector<std::int64_t>(rank), std::vector<std::int64_t>(rank)};
    for (std::size_t d = 0; d < rank; ++d) {
      chunk_box.offset[d] = at[d] * open.chunk[d];
      chunk_box.extent[d] = std::min(open.chunk[d], open.shape[d] - chunk_box.offset[d]);
    }
    const Box part = *intersect(box, chunk_box);
    const h5::RawRegion region =
        *h5::chunk_region(open.shape, open.chunk, open.chunk_addresses, chunk_box);
    Box in_chunk = part;  // `part` in the chunk's frame, and in the destination's
    Box in_box = part;
    for (std::size_t d = 0; d < rank; ++d) {
      in_chunk.offset[d] -= chunk_box.offset[d];
      in_box.offset[d] -= box.offset[d];
    }
    // Runs contiguous in the chunk, then cut where they are not contiguous in `dst`.
    for_each_global_piece(
        region.frame, in_chunk, 0, volume(part),
        [&](std::int64_t in_file, std::int64_t stream, std::int64_t count) {
          for_each_global_piece(
              box.extent, in_box, stream, count,
              [&](std::int64_t in_dst, std::int64_t sub, std::int64_t n) {
                raw->read_at(
                    region.address + static_cast<std::uint64_t>(in_file + (sub - stream)) * elem,
                    {dst + static_cast<std::size_t>(in_dst) * elem,
                     static_cast<std::size_t>(n) * elem});
              });
        });
    std::size_t d = rank;
    while (d-- > 0) {
      if (++at[d] <= last[d]) break;
      at[d] = first[d];
    }
    if (d == static_cast<std::size_t>(-1)) return;
  }
}

void Hdf5Reader::read(const std::string& path, const Box& box, void* dst) {
  const Impl::OpenDataset& open = impl_->opened(path);
  check_box_in_shape(box, open.shape, fmt::format("leaf '{}' of '{}'", path, impl_->file));
  if (volume(box) == 0) return;
  if (dst == nullptr) {
    throw InvalidArgument(fmt::format("leaf '{}': null destination buffer", path));
  }
  if (!open.chunk.empty()) {
    impl_->read_chunks(open, box, static_cast<std::byte*>(dst));
    return;
  }
  const std::lock_guard lock(hdf5_mutex());
  const h5::QuietErrors quiet;
  const Where where{impl_->file, path};
  herr_t status = 0;
  if (open.shape.empty()) {
    status = H5Dread(open.dataset.get(), open.memory_type.get(), H5S_ALL, H5S_ALL,
                     impl_->independent.get(), dst);
  } else {
    const h5::Dataspace file_space(
        check(H5Dget_space(open.dataset.get()), where, "reading the dataspace"));
    const std::vector<hsize_t> start = to_hsize(box.offset);
    const std::vector<hsize_t> count = to_hsize(box.extent);
    check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                              nullptr),
          where, "selecting the box " + to_string(box));
    const h5::Dataspace memory_space = make_space(box.extent, where);
    status = H5Dread(open.dataset.get(), open.memory_type.get(), memory_space.get(),
                     file_space.get(), impl_->independent.get(), dst);
  }
  check(status, where, "reading the box " + to_string(box), kHintDamaged);
}

std::optional<h5::RawRegion> Hdf5Reader::Impl::shard_region(const LeafRecord& leaf,
                                                            const ShardRecord& shard,
                                                            std::uint64_t first,
                                                            std::uint64_t bytes) {
  const std::size_t elem = dtype_size(leaf.dtype);
  if (first % elem != 0 || bytes % elem != 0 || first > shard.bytes ||
      bytes > shard.bytes - first) {
    throw InvalidArgument(
        fmt::format("leaf '{}': bytes [{}, {}) are not whole elements inside its "
                    "shard of {} bytes",
                    leaf.path, first, first + bytes, shard.bytes));
  }
  std::optional<h5::RawRegion> region = opened(leaf.path).region_of(shard.box);
  if (region && !raw) raw.emplace(file, PosixFile::Mode::read);
  return region;
}

void Hdf5Reader::read(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
                      std::uint64_t bytes, std::byte* dst) {
  const std::optional<h5::RawRegion> region = impl_->shard_region(leaf, shard, first, bytes);
  const std::size_t elem = dtype_size(leaf.dtype);
  const auto first_element = static_cast<std::int64_t>(first / elem);
  const auto count = static_cast<std::int64_t>(bytes / elem);
  if (!region) {
    for (const Box& box : split_stream_range(shard.box, first_element, count)) {
      read(leaf.path, box, dst);
      dst += static_cast<std::size_t>(volume(box)) * elem;
    }
    return;
  }
  for_each_global_piece(region->frame, region->box, first_element, count,
                        [&](std::int64_t global, std::int64_t stream, std::int64_t n) {
                          impl_->raw->read_at(
                              region->address + static_cast<std::uint64_t>(global) * elem,
                              {dst + static_cast<std::size_t>(stream - first_element) * elem,
                               static_cast<std::size_t>(n) * elem});
                        });
}

void Hdf5Reader::read_scattered(const LeafRecord& leaf, const ShardRecord& shard,
                                std::uint64_t first, ScatterList pieces) {
  const std::uint64_t bytes = scatter_bytes(pieces);
  const std::optional<h5::RawRegion> region = impl_->shard_region(leaf, shard, first, bytes);
  if (!region) {
    ShardReader::read_scattered(leaf, shard, first, pieces);
    return;
  }
  const std::size_t elem = dtype_size(leaf.dtype);
  const auto first_element = static_cast<std::int64_t>(first / elem);
  for_each_global_piece(
      region->frame, region->box, first_element, static_cast<std::int64_t>(bytes / elem),
      [&](std::int64_t global, std::int64_t stream, std::int64_t n) {
        const auto part =
            scatter_slice(pieces, static_cast<std::uint64_t>(stream - first_element) * elem,
                          static_cast<std::uint64_t>(n) * elem);
        impl_->raw->read_at(region->address + static_cast<std::uint64_t>(global) * elem, part);
      });
}

void Hdf5Reader::prefetch(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
                          std::uint64_t bytes) {
  const std::optional<h5::RawRegion> region = impl_->shard_region(leaf, shard, first, bytes);
  if (!region || bytes == 0) return;  // H5Dread reads through MPI-IO, which has no hint
  // A shard that is not whole rows of the array lies in the file as pieces (its rows) between
  // the pieces of other shards. Advised one by one, each piece would be a small request that
  // the kernel does not read ahead of; pieces closer than kMergeGapBytes are advised as one
  // range with the gaps between them, which other ranks or shards usually read next.
  const std::size_t elem = dtype_size(leaf.dtype);
  // A range that is one piece of the file (any range of a shard stored as a chunk) is read
  // ahead by the kernel itself, as a posix shard is: advice would only compete with it.
  std::int64_t pieces = 0;
  for_each_global_piece(region->frame, region->box, static_cast<std::int64_t>(first / elem),
                        static_cast<std::int64_t>(bytes / elem),
                        [&](std::int64_t, std::int64_t, std::int64_t) { ++pieces; });
  if (pieces <= 1) return;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  for_each_global_piece(region->frame, region->box, static_cast<std::int64_t>(first / elem),
                        static_cast<std::int64_t>(bytes / elem),
                        [&](std::int64_t global, std::int64_t, std::int64_t n) {
                          const std::uint64_t at =
                              region->address + static_cast<std::uint64_t>(global) * elem;
                          if (end > begin && at <= end + kMergeGapBytes) {
                            end = at + static_cast<std::uint64_t>(n) * elem;
                            return;
                          }
                          if (end > begin) impl_->raw->advise_will_need(begin, end - begin);
                          begin = at;
                          end = at + static_cast<std::uint64_t>(n) * elem;
                        });
  impl_->raw->advise_will_need(begin, end - begin);
}

std::unique_ptr<ShardReader> open_hdf5_reader(const Comm& comm, const std::filesystem::path& dir) {
  return std::make_unique<Hdf5Reader>(comm, dir / kHdf5File);
}

void Hdf5Reader::close() {
  impl_->raw.reset();
  const std::lock_guard lock(hdf5_mutex());
  const h5::QuietErrors quiet;
  std::optional<IoError> first;
  for (auto& [path, open] : impl_->datasets) {
    try {
      open.dataset.close({impl_->file, path});
    } catch (const IoError& e) {
      if (!first) first = e;
    }
  }
  impl_->datasets.clear();
  impl_->independent.reset();
  impl_->handle.close({impl_->file, {}});  // collective
  if (first) throw *first;
}

}  // namespace cairn::storage

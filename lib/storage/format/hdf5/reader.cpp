// The hdf5 storage format, read side: the primary opens data.h5 and checks every dataset, every
// rank learns where each dataset's data lies from one broadcast, and shards are read with pread
// at those addresses (H5Dread, through a rank's own handle, for anything else).
#include "storage/format/hdf5/reader.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>

#include "base/durable_file.hpp"
#include "base/first_error.hpp"
#include "base/fnv1a.hpp"
#include "base/log.hpp"
#include "base/posix_file.hpp"
#include "storage/format/hdf5/compression.hpp"
#include "storage/format/hdf5/handle.hpp"
#include "storage/format/hdf5/open.hpp"
#include "storage/format/hdf5/settings.hpp"
#include "storage/format/hdf5/verdict.hpp"
#include "storage/stream/checksum.hpp"
#include "storage/stream/shard_stream.hpp"

namespace cairn::storage {
namespace {

using h5::check;
using h5::make_space;
using h5::make_type;
using h5::read_access;
using h5::to_hsize;
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
  /// Where the data of a dataset lies: learned by the primary in open() and the same on every
  /// rank.
  struct Placement {
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
  /// A dataset opened through this rank's own handle, for H5Dread.
  struct OpenDataset {
    h5::Dataset dataset;
    h5::Datatype memory_type;
  };

  const Comm* comm = nullptr;
  std::string file;
  std::optional<base::PosixFile> raw;  // the file for pread, opened on the first raw read
  // This rank's read-only handle: the primary's is opened by the constructor, another rank's
  // by its first H5Dread.
  h5::File handle;
  std::map<std::string, Placement, std::less<>> placements;
  std::map<std::string, OpenDataset, std::less<>> datasets;  // closed before `handle`
  std::set<std::string, std::less<>> hard_groups;  // prefixes of checked leaves: hard links

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  // Also runs when the constructor throws, after its lock is released: take it again.
  ~Impl() {
    const std::lock_guard lock(hdf5_mutex());
    const h5::QuietErrors quiet;
    datasets.clear();
    handle.reset();  // a failure is logged
  }

  [[noreturn]] void mismatch(std::string_view leaf, std::string_view problem) const {
    throw FormatError(file, std::string(leaf),
                      fmt::format("leaf '{}' in HDF5 file '{}': {}; the file does not match "
                                  "its cairn-tree.json (damaged or replaced). Restore from "
                                  "another checkpoint",
                                  leaf, file, problem));
  }

  // Opens `file` read-only into `handle` (hdf5_mutex held). Throws NotFound, FormatError
  // (not HDF5, truncated) or IoError, naming the file.
  void open_file();
  // Opens the dataset of `record` through `handle`, checks it against the record and says
  // where its data lies (the primary, hdf5_mutex held). Throws FormatError naming the leaf.
  Placement inspect(const LeafRecord& record);
  // The placement of `path`. Throws InvalidArgument when it was not opened.
  const Placement& placed(std::string_view path) const;
  // The dataset of `path` opened through this rank's handle (opening both on first use;
  // hdf5_mutex held). Throws as open_file(), IoError when HDF5 fails.
  const OpenDataset& opened(std::string_view path, const Placement& placement);
  // Checks that bytes [first, first + bytes) are whole elements of `shard` of the opened
  // `leaf`, and returns where the shard lies in the file (opening `raw`), if it is one region
  // read with pread.
  std::optional<h5::RawRegion> shard_region(const LeafRecord& leaf, const ShardRecord& shard,
                                            std::uint64_t first, std::uint64_t bytes);
  // Reads `box` of the chunked dataset `placement` into `dst` (row-major, volume(box)
  // elements) with pread, chunk by chunk.
  void read_chunks(const Placement& placement, const Box& box, std::byte* dst);
};

namespace {

// How a placement travels: a kind byte, then the raw offset (contiguous) or the chunk shape and
// every chunk's address (chunked; all have storage, open() checked it).
enum class PlacementKind : std::uint8_t { hdf5_read = 0, contiguous = 1, chunked = 2 };

}  // namespace

Hdf5Reader::Impl::Placement Hdf5Reader::Impl::inspect(const LeafRecord& record) {
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
  const h5::Dataset dataset(object);
  const h5::Datatype memory_type = make_type(record.dtype, where);
  Placement open{.dtype = record.dtype,
                 .shape = record.shape,
                 .raw_offset = std::nullopt,
                 .chunk = {},
                 .chunk_addresses = {}};

  if (auto problem = h5::dataset_problem(dataset.get(), record.dtype, record.shape, where)) {
    mismatch(path, *problem);
  }
  // Raw reads need the data at one address and stored exactly as in memory.
  const h5::Datatype file_type(H5Dget_type(dataset.get()));
  const h5::PropertyList dcpl(H5Dget_create_plist(dataset.get()));
  const bool same_type = file_type.valid() && H5Tequal(file_type.get(), memory_type.get()) > 0;
  // A filtered (compressed) dataset is read with H5Dread, through its filters.
  if (dcpl.valid() && H5Pget_nfilters(dcpl.get()) > 0) return open;
  open.chunk = h5::chunk_shape(dataset.get(), where);
  if (open.chunk.empty()) {
    const haddr_t address = H5Dget_offset(dataset.get());
    if (dcpl.valid() && H5Pget_layout(dcpl.get()) == H5D_CONTIGUOUS && address != HADDR_UNDEF &&
        same_type) {
      open.raw_offset = static_cast<std::uint64_t>(address);
    }
    return open;
  }
  // Chunked: every chunk's address now, so that reads need no HDF5 call.
  if (!same_type) {
    mismatch(path, "it is chunked and stored in another byte order than cairn writes");
  }
  const std::uint64_t chunks = h5::chunk_count(record.shape, open.chunk);
  if (chunks > kMaxChunks) {
    mismatch(path, fmt::format("it has {} chunks of shape {}, more than cairn reads ({})", chunks,
                               shape_to_string(open.chunk), kMaxChunks));
  }
  open.chunk_addresses = h5::chunk_addresses(dataset.get(), record.shape, open.chunk, where);
  const auto missing =
      std::find(open.chunk_addresses.begin(), open.chunk_addresses.end(), std::nullopt);
  if (missing != open.chunk_addresses.end()) {
    mismatch(path, fmt::format("chunk {} of {} has no storage (never written)",
                               missing - open.chunk_addresses.begin(), chunks));
  }
  return open;
}

void Hdf5Reader::Impl::open_file() {
  const Where where{file, {}};
  const h5::PropertyList fapl = read_access(where);
  h5::register_filters(where);  // compressed datasets are read through it
  // H5Fopen would wait forever on a FIFO in the file's place; a missing file is reported
  // below.
  if (std::error_code ec; std::filesystem::exists(file, ec)) base::require_regular_file(file);
  const hid_t id = H5Fopen(file.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (id >= 0) {
    handle = h5::File(id);
    return;
  }
  const std::string reason = h5::failure_message(where, "opening the file for reading");
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    throw NotFound(file, fmt::format("HDF5 file '{}' does not exist: the checkpoint "
                                     "is incomplete or was moved",
                                     file));
  }
  const htri_t is_hdf5 = H5Fis_hdf5(file.c_str());
  if (is_hdf5 == 0) {
    throw FormatError(file, "signature",
                      fmt::format("'{}' is not an HDF5 file (no HDF5 signature found): it "
                                  "was damaged or replaced; restore from another checkpoint",
                                  file));
  }
  if (is_hdf5 > 0 && reason.find("truncated") != std::string::npos) {
    throw FormatError(file, "size", fmt::format("{}. {}", reason, kHintDamaged));
  }
  throw IoError(file, fmt::format("{}. Check that the file is readable; otherwise: {}", reason,
                                  kHintDamaged));
}

Hdf5Reader::Hdf5Reader(const Comm& comm, const std::filesystem::path& file)
    : impl_(std::make_unique<Impl>()) {
  impl_->comm = &comm;
  impl_->file = file.string();
  // The primary opens the file; the others learn its verdict.
  (void)h5::primary_verdict(comm, [&](base::Packed&) {
    const std::lock_guard lock(hdf5_mutex());
    const h5::QuietErrors quiet;
    impl_->open_file();
  });
}

Hdf5Reader::~Hdf5Reader() { impl_.reset(); }  // ~Impl closes what is open, holding the lock

void Hdf5Reader::open(std::span<const LeafRecord* const> records) {
  if (impl_->comm == nullptr) {
    throw InvalidArgument(fmt::format("Hdf5Reader for '{}' is closed", impl_->file));
  }
  base::Fnv1a hash;
  std::vector<const LeafRecord*> fresh;  // not opened before, in order: the same on every rank
  for (const LeafRecord* record : records) {
    if (record == nullptr) throw InvalidArgument("Hdf5Reader::open: null record");
    hash.str(record->path).i64(static_cast<std::int64_t>(record->dtype));
    for (std::int64_t n : record->shape) hash.i64(n);
  }
  impl_->comm->agree({.operation = "Hdf5Reader::open", .step = -1, .structure = hash.value()});
  for (const LeafRecord* record : records) {
    if (record->kind != LeafKind::array) {
      throw InvalidArgument(fmt::format("leaf '{}' is a {}, not an array stored in '{}'",
                                        record->path, leaf_kind_name(record->kind), impl_->file));
    }
    if (!impl_->placements.contains(record->path)) fresh.push_back(record);
  }
  // The primary checks every dataset and says where its data lies; one broadcast tells every
  // rank, whatever the number of leaves.
  const std::vector<std::byte> found = h5::primary_verdict(*impl_->comm, [&](base::Packed& out) {
    const std::lock_guard lock(hdf5_mutex());
    const h5::QuietErrors quiet;
    for (const LeafRecord* record : fresh) {
      const Impl::Placement placement = impl_->inspect(*record);
      if (placement.raw_offset) {
        out.put_byte(static_cast<std::uint8_t>(PlacementKind::contiguous));
        out.put(*placement.raw_offset);
      } else if (!placement.chunk.empty()) {
        out.put_byte(static_cast<std::uint8_t>(PlacementKind::chunked));
        for (std::int64_t n : placement.chunk) out.put(static_cast<std::uint64_t>(n));
        out.put(static_cast<std::uint64_t>(placement.chunk_addresses.size()));
        for (const auto& address : placement.chunk_addresses) out.put(*address);
      } else {
        out.put_byte(static_cast<std::uint8_t>(PlacementKind::hdf5_read));
      }
    }
  });
  base::Unpacked in(found);
  for (const LeafRecord* record : fresh) {
    Impl::Placement placement{.dtype = record->dtype,
                              .shape = record->shape,
                              .raw_offset = std::nullopt,
                              .chunk = {},
                              .chunk_addresses = {}};
    const auto kind = static_cast<PlacementKind>(in.take_byte());
    if (kind == PlacementKind::contiguous) {
      placement.raw_offset = in.take();
    } else if (kind == PlacementKind::chunked) {
      for (std::size_t d = 0; d < record->shape.size(); ++d) {
        placement.chunk.push_back(static_cast<std::int64_t>(in.take()));
      }
      const std::uint64_t count = in.take();
      placement.chunk_addresses.reserve(static_cast<std::size_t>(count));
      for (std::uint64_t k = 0; k < count; ++k) placement.chunk_addresses.emplace_back(in.take());
    }
    impl_->placements.emplace(record->path, std::move(placement));
  }
}

const Hdf5Reader::Impl::Placement& Hdf5Reader::Impl::placed(std::string_view path) const {
  const auto it = placements.find(path);
  if (it == placements.end()) {
    throw InvalidArgument(
        fmt::format("leaf '{}' of '{}' was not opened: pass its record to "
                    "Hdf5Reader::open() first",
                    path, file));
  }
  return it->second;  // placements is not changed while reads run
}

const Hdf5Reader::Impl::OpenDataset& Hdf5Reader::Impl::opened(std::string_view path,
                                                              const Placement& placement) {
  if (const auto it = datasets.find(path); it != datasets.end()) return it->second;
  if (!handle.valid()) open_file();
  const std::string name(path);
  const Where where{file, name};
  // open() checked the links and the dataset on the primary.
  h5::Dataset dataset(
      check(H5Dopen2(handle.get(), name.c_str(), H5P_DEFAULT), where, "opening the dataset"));
  OpenDataset open{.dataset = std::move(dataset), .memory_type = make_type(placement.dtype, where)};
  return datasets.emplace(name, std::move(open)).first->second;
}

void Hdf5Reader::Impl::read_chunks(const Placement& open, const Box& box, std::byte* dst) {
  if (!raw) raw.emplace(file, base::PosixFile::Mode::read);
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
  const Impl::Placement& placement = impl_->placed(path);
  check_box_in_shape(box, placement.shape, fmt::format("leaf '{}' of '{}'", path, impl_->file));
  if (volume(box) == 0) return;
  if (dst == nullptr) {
    throw InvalidArgument(fmt::format("leaf '{}': null destination buffer", path));
  }
  if (!placement.chunk.empty()) {
    impl_->read_chunks(placement, box, static_cast<std::byte*>(dst));
    return;
  }
  const std::lock_guard lock(hdf5_mutex());
  const h5::QuietErrors quiet;
  const Impl::OpenDataset& open = impl_->opened(path, placement);
  const Where where{impl_->file, path};
  herr_t status = 0;
  if (placement.shape.empty()) {
    status =
        H5Dread(open.dataset.get(), open.memory_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, dst);
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
                     file_space.get(), H5P_DEFAULT, dst);
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
  std::optional<h5::RawRegion> region = placed(leaf.path).region_of(shard.box);
  if (region && !raw) raw.emplace(file, base::PosixFile::Mode::read);
  return region;
}

void Hdf5Reader::read(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
                      std::uint64_t bytes, std::byte* dst) {
  if (shard.file != kHdf5File || shard.has_refs()) {
    const std::filesystem::path index =
        std::filesystem::path(impl_->file).parent_path() / kTreeIndexBinaryFile;
    throw FormatError(index.string(), leaf.path,
                      fmt::format("'{}' (leaf '{}'): a shard of an hdf5 leaf names '{}'{}; the "
                                  "index is damaged",
                                  index.string(), leaf.path, shard.file,
                                  shard.has_refs() ? " and chunks in other files" : ""));
  }
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
  if (!region || bytes == 0) return;  // datasets read with H5Dread get no hint
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
  impl_->placements.clear();
  impl_->comm = nullptr;
  const std::lock_guard lock(hdf5_mutex());
  const h5::QuietErrors quiet;
  base::FirstError failure;
  for (auto& [path, open] : impl_->datasets) {
    try {
      open.dataset.close({impl_->file, path});
    } catch (const std::exception& e) {
      failure.record(e);
    }
  }
  impl_->datasets.clear();
  if (impl_->handle.valid()) impl_->handle.close({impl_->file, {}});
  failure.throw_if_failed();
}

}  // namespace cairn::storage

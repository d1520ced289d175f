// IndexSections: the shard records of the shards that meet a region, read from cairn-tree.bin
// with pread: for a block grid, the blocks that meet the region and their checksums are found
// by arithmetic; for a list of shards, from the leaf's records.
#include <cairn/error.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <iterator>
#include <optional>
#include <utility>

#include "base/posix_file.hpp"
#include "storage/index/binary.hpp"
#include "storage/stream/checksum.hpp"

namespace cairn::storage {
using namespace index_detail;

namespace {

std::atomic<std::uint64_t> g_bytes_read{0};
std::atomic<std::uint64_t> g_bytes_checked{0};

// Bytes of a section read at a time when it is checked whole.
constexpr std::uint64_t kCheckPieceBytes = std::uint64_t{1} << 20;

// Bytes of a shard record in a section: rank, file, byte offset and, without a grid, the box.
std::uint64_t record_bytes(const LeafRecord& leaf) {
  return 16 + (leaf.section->blocks.empty() ? 16 * leaf.shape.size() : 0);
}

template <class T>
T get(const std::byte* at) {
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

// Where the parts of a leaf's section start, and its shards' first checksum indices.
struct Layout {
  std::vector<std::vector<std::int64_t>> cuts;  // a grid's
  std::uint64_t records = 0;                    // offset of the first record
  std::uint64_t checksums = 0;                  // offset of the first checksum
  std::uint64_t sizes = 0;                      // offset of the first chunk size
  std::uint64_t places = 0;                     // offset of the first chunk place
};

}  // namespace

std::uint64_t index_bytes_read() noexcept { return g_bytes_read.load(); }

std::uint64_t index_bytes_checked() noexcept { return g_bytes_checked.load(); }

IndexSections::IndexSections(const std::filesystem::path& dir, const TreeIndex& index)
    : file_(dir / kTreeIndexBinaryFile), index_(index) {}

IndexSections::~IndexSections() = default;

void IndexSections::read(std::uint64_t offset, std::span<std::byte> out) {
  if (!bin_) {
    auto bin = std::make_unique<base::PosixFile>(file_, base::PosixFile::Mode::read);
    std::array<std::byte, kTreeIndexBinaryHeaderBytes> header{};
    bin->read_at(0, header);
    g_bytes_read += header.size();
    const auto version = get<std::uint64_t>(header.data() + kTreeIndexBinaryMagic.size());
    if (std::memcmp(header.data(), kTreeIndexBinaryMagic.data(), kTreeIndexBinaryMagic.size()) !=
            0 ||
        version != static_cast<std::uint64_t>(index_.version)) {
      damaged(file_, "", "it does not start with the header of a cairn index of its version");
    }
    // The sections are read in part, so their checksum is not recomputed here; the one in the
    // header tells a cairn-tree.bin of another save (a swapped file) from the right one.
    const auto recorded = get<std::uint64_t>(header.data() + kTreeIndexBinaryMagic.size() + 8);
    if (recorded != index_.binary_checksum) {
      damaged(file_, "",
              fmt::format("its header records the sections' checksum {}, not the {} that {} "
                          "records: it belongs to another save",
                          checksum_to_hex(recorded), checksum_to_hex(index_.binary_checksum),
                          kTreeIndexFile));
    }
    bin_ = std::move(bin);
  }
  if (out.empty()) return;
  bin_->read_at(offset, out);
  g_bytes_read += out.size();
}

namespace {

// Reads `count` numbers of type T at `offset` through `read`.
template <class T, class Read>
std::vector<T> read_numbers(Read&& read, std::uint64_t offset, std::uint64_t count) {
  std::vector<T> out(count);
  read(offset, std::as_writable_bytes(std::span(out)));
  return out;
}

// Decodes one shard record at `at` (of `leaf`, box already set for a grid) and checks it.
ShardRecord decode_record(const std::filesystem::path& file, const TreeIndex& index,
                          const LeafRecord& leaf, const std::byte* at, Box box) {
  ShardRecord s;
  s.rank = static_cast<int>(get<std::uint32_t>(at));
  s.box = std::move(box);
  const auto file_id = get<std::uint32_t>(at + 4);
  s.byte_offset = get<std::uint64_t>(at + 8);
  if (leaf.section->blocks.empty()) {
    const std::size_t nd = leaf.shape.size();
    s.box.offset.resize(nd);
    s.box.extent.resize(nd);
    for (std::size_t d = 0; d < nd; ++d) {
      s.box.offset[d] = get<std::int64_t>(at + 16 + 8 * d);
      s.box.extent[d] = get<std::int64_t>(at + 16 + 8 * (nd + d));
    }
  }
  check_record(file, index, leaf, file_id, s);
  return s;
}

// Checks that the parts of `layout` fill the leaf's section exactly.
void check_length(const std::filesystem::path& file, const LeafRecord& leaf, Layout& layout) {
  const BinarySection& s = *leaf.section;
  layout.checksums = layout.records + s.shard_count * record_bytes(leaf);
  layout.sizes = layout.checksums + 8 * s.chunk_count;
  layout.places = layout.sizes + (s.chunk_sizes ? 8 * s.chunk_count : 0);
  const std::uint64_t end = layout.places + (s.referenced_chunks > 0 ? 16 * s.chunk_count : 0);
  if (end != s.offset + s.length) {
    damaged(file, leaf.path,
            fmt::format("its section is {} bytes long, not the {} its records "
                        "take",
                        s.length, end - s.offset));
  }
}

// The chunks [a, b) of `shard` (of `leaf`) that hold the elements of `region` in its stream,
// or std::nullopt when it holds none.
std::optional<std::pair<std::uint64_t, std::uint64_t>> chunks_holding(const LeafRecord& leaf,
                                                                      const ShardRecord& shard,
                                                                      const Box& region) {
  const auto part = intersect(shard.box, region);
  if (!part || volume(*part) == 0) return std::nullopt;
  // The row-major positions of the part's first and last elements in the shard's box.
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  for (std::size_t d = 0; d < shard.box.offset.size(); ++d) {
    const auto extent = static_cast<std::uint64_t>(shard.box.extent[d]);
    const auto from = static_cast<std::uint64_t>(part->offset[d] - shard.box.offset[d]);
    lo = lo * extent + from;
    hi = hi * extent + from + static_cast<std::uint64_t>(part->extent[d]) - 1;
  }
  const std::uint64_t element = dtype_size(leaf.dtype);
  const std::uint64_t chunk = leaf.chunk_bytes_of(shard);
  const std::uint64_t chunks = chunks_of(leaf, shard.bytes);
  const std::uint64_t a = lo * element / chunk;
  const std::uint64_t b = std::min(chunks, ((hi + 1) * element + chunk - 1) / chunk);
  if (a >= b) return std::nullopt;
  return std::pair{a, b};
}

// Reads the checksums (chunk sizes, chunk places) of `shards`, whose first checksums are
// `first`. With a `region`, and a section of raw chunks all in this save, only the checksums
// of the chunks that hold the region's elements are read, one range per shard; the others are
// left 0, and a read of them would fail its check.
template <class Read>
void read_checksums(Read&& read, const std::filesystem::path& file, const TreeIndex& index,
                    const LeafRecord& leaf, const Layout& layout, std::uint64_t first,
                    std::vector<ShardRecord>& shards, const Box* region) {
  if (region != nullptr && !leaf.section->chunk_sizes && leaf.section->referenced_chunks == 0) {
    for (ShardRecord& s : shards) {
      const std::uint64_t n = chunks_of(leaf, s.bytes);
      s.checksums.assign(n, 0);
      if (const auto range = chunks_holding(leaf, s, *region)) {
        const auto sums = read_numbers<std::uint64_t>(
            read, layout.checksums + 8 * (first + range->first), range->second - range->first);
        std::ranges::copy(sums, s.checksums.begin() + static_cast<std::ptrdiff_t>(range->first));
      }
      first += n;
    }
    return;
  }
  std::uint64_t count = 0;
  for (const ShardRecord& s : shards) count += chunks_of(leaf, s.bytes);
  const auto sums = read_numbers<std::uint64_t>(read, layout.checksums + 8 * first, count);
  std::vector<std::uint64_t> sizes;
  if (leaf.section->chunk_sizes)
    sizes = read_numbers<std::uint64_t>(read, layout.sizes + 8 * first, count);
  std::vector<ChunkPlace> places;
  if (leaf.section->referenced_chunks > 0) {
    const auto raw = read_numbers<std::byte>(read, layout.places + 16 * first, 16 * count);
    places.resize(count);
    for (std::size_t c = 0; c < count; ++c) {
      places[c] = {.file = get<std::uint32_t>(raw.data() + 16 * c),
                   .reserved = get<std::uint32_t>(raw.data() + 16 * c + 4),
                   .byte_offset = get<std::uint64_t>(raw.data() + 16 * c + 8)};
    }
  }
  std::size_t at = 0;
  for (ShardRecord& s : shards) {
    const std::uint64_t n = chunks_of(leaf, s.bytes);
    s.checksums.assign(sums.begin() + static_cast<std::ptrdiff_t>(at),
                       sums.begin() + static_cast<std::ptrdiff_t>(at + n));
    if (!sizes.empty()) {
      s.chunk_sizes.assign(sizes.begin() + static_cast<std::ptrdiff_t>(at),
                           sizes.begin() + static_cast<std::ptrdiff_t>(at + n));
      for (const std::uint64_t size : s.chunk_sizes) {
        if (size == 0 || size > (std::uint64_t{1} << 56)) {
          damaged(file, leaf.path, "a chunk's stored size is out of range");
        }
      }
    }
    if (!places.empty()) {
      attach_chunk_refs(file, index, leaf, std::span(places).subspan(at, n), s);
    }
    at += n;
  }
}

// The first checksum of each block of a grid leaf (row-major), and the total at the end.
std::vector<std::uint64_t> first_checksums(const LeafRecord& leaf, const Layout& layout) {
  const std::size_t nd = leaf.shape.size();
  std::vector<std::uint64_t> first = {0};
  std::vector<std::size_t> at(nd, 0);  // the block's index per dimension
  for (std::uint64_t k = 0; k < leaf.section->shard_count; ++k) {
    std::uint64_t elements = 1;
    for (std::size_t d = 0; d < nd; ++d) {
      elements *= static_cast<std::uint64_t>(layout.cuts[d][at[d] + 1] - layout.cuts[d][at[d]]);
    }
    first.push_back(first.back() + chunks_of(leaf, elements * dtype_size(leaf.dtype)));
    for (std::size_t d = nd; d-- > 0;) {
      if (++at[d] + 1 < layout.cuts[d].size()) break;
      at[d] = 0;
    }
  }
  return first;
}

// The shards of a grid leaf that meet `region`, read run by run along the last dimension;
// their checksums as read_checksums() reads them for `checksums_of` (nullptr: whole shards).
template <class Read>
std::vector<ShardRecord> grid_shards(Read&& read, const std::filesystem::path& file,
                                     const TreeIndex& index, const LeafRecord& leaf,
                                     const Box& region, const Layout& layout,
                                     const Box* checksums_of) {
  const std::size_t nd = leaf.shape.size();
  std::vector<std::size_t> lo(nd), hi(nd);  // blocks [lo, hi) meet the region per dimension
  for (std::size_t d = 0; d < nd; ++d) {
    const auto& c = layout.cuts[d];
    const std::int64_t begin = region.offset[d], end = begin + region.extent[d];
    if (end <= begin) return {};
    lo[d] = static_cast<std::size_t>(std::upper_bound(c.begin(), c.end(), begin) - c.begin());
    hi[d] = static_cast<std::size_t>(std::lower_bound(c.begin(), c.end(), end) - c.begin());
    lo[d] = lo[d] == 0 ? 0 : lo[d] - 1;
    hi[d] = std::min(hi[d], c.size() - 1);  // a region may reach beyond the saved shape
    if (lo[d] >= hi[d]) return {};
  }
  const std::vector<std::uint64_t> first = first_checksums(leaf, layout);
  if (first.back() != leaf.section->chunk_count) {
    damaged(file, leaf.path, "its chunk count does not add up");
  }
  std::vector<ShardRecord> out;
  std::vector<std::size_t> at = lo;
  while (true) {
    std::uint64_t k0 = 0;  // flat index of the run's first block
    for (std::size_t d = 0; d < nd; ++d) k0 = k0 * (layout.cuts[d].size() - 1) + at[d];
    const std::uint64_t count = hi[nd - 1] - lo[nd - 1];
    const auto records = read_numbers<std::byte>(read, layout.records + 16 * k0, 16 * count);
    std::vector<ShardRecord> run;
    for (std::uint64_t j = 0; j < count; ++j) {
      Box box;
      for (std::size_t d = 0; d < nd; ++d) {
        const std::size_t i = d + 1 == nd ? at[d] + j : at[d];
        box.offset.push_back(layout.cuts[d][i]);
        box.extent.push_back(layout.cuts[d][i + 1] - layout.cuts[d][i]);
      }
      run.push_back(decode_record(file, index, leaf, records.data() + 16 * j, std::move(box)));
    }
    read_checksums(read, file, index, leaf, layout, first[k0], run, checksums_of);
    std::ranges::move(run, std::back_inserter(out));
    std::size_t d = nd - 1;  // the next run: count up the dimensions before the last
    while (d-- > 0) {
      if (++at[d] < hi[d]) break;
      at[d] = lo[d];
    }
    if (d == static_cast<std::size_t>(-1)) break;
  }
  std::ranges::stable_sort(out, [](const auto& a, const auto& b) { return a.rank < b.rank; });
  return out;
}

}  // namespace

std::vector<ShardRecord> IndexSections::shards_meeting(const LeafRecord& leaf, const Box& region,
                                                       ChecksumsRead checksums) {
  const Box* checksums_of = checksums == ChecksumsRead::region ? &region : nullptr;
  const BinarySection& section = *leaf.section;
  const auto reader = [this](std::uint64_t offset, std::span<std::byte> out) { read(offset, out); };
  const std::size_t nd = leaf.shape.size();
  const std::uint64_t rec = record_bytes(leaf);
  Layout layout;
  layout.records = section.offset;
  std::vector<ShardRecord> out;
  if (section.blocks.empty()) {
    check_length(file_, leaf, layout);
    const auto records = read_numbers<std::byte>(reader, layout.records, section.shard_count * rec);
    std::uint64_t first = 0;  // checksum index of the shard
    for (std::uint64_t k = 0; k < section.shard_count; ++k) {
      std::vector<ShardRecord> one = {
          decode_record(file_, index_, leaf, records.data() + k * rec, Box{})};
      const std::uint64_t chunks = chunks_of(leaf, one[0].bytes);
      if (first + chunks > section.chunk_count)
        damaged(file_, leaf.path, "its chunk count does not add up");
      if (region.rank() == nd && intersect(one[0].box, region)) {
        read_checksums(reader, file_, index_, leaf, layout, first, one, checksums_of);
        out.push_back(std::move(one[0]));
      }
      first += chunks;
    }
    return out;
  }
  // A grid: its cuts, then the blocks that meet the region, run by run along the last axis.
  layout.cuts.resize(nd);
  for (std::size_t d = 0; d < nd; ++d) {
    if (!section.block.empty()) {
      layout.cuts[d] = equal_cuts(leaf.shape[d], section.block[d]);
      continue;
    }
    const auto n = static_cast<std::uint64_t>(section.blocks[d]) + 1;
    layout.cuts[d] = read_numbers<std::int64_t>(reader, layout.records, n);
    layout.records += 8 * n;
    const auto& c = layout.cuts[d];
    if (c.front() != 0 || c.back() != leaf.shape[d] || !std::ranges::is_sorted(c) ||
        std::ranges::adjacent_find(c) != c.end()) {
      damaged(file_, leaf.path, fmt::format("its cuts of dimension {} do not cut the shape", d));
    }
  }
  check_length(file_, leaf, layout);
  if (region.rank() != nd) return out;
  return grid_shards(reader, file_, index_, leaf, region, layout, checksums_of);
}

const LeafRecord& IndexSections::part_of(const LeafRecord& leaf, const Box& region) {
  if (!leaf.section || leaf.shards.size() == leaf.section->shard_count) return leaf;
  LeafRecord& part = parts_.emplace_back(leaf);
  part.shards = shards_meeting(leaf, region, ChecksumsRead::region);
  return part;
}

void IndexSections::check_bytes(const LeafRecord& leaf, std::uint64_t from, std::uint64_t length,
                                std::uint64_t expected, std::string_view what) {
  const BinarySection& section = *leaf.section;
  read(0, {});  // the header, checked against the index
  Checksum sum;
  std::vector<std::byte> piece(static_cast<std::size_t>(std::min(length, kCheckPieceBytes)));
  for (std::uint64_t at = 0; at < length; at += piece.size()) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(piece.size(), length - at));
    bin_->read_at(section.offset + from + at, std::span(piece).first(n));
    g_bytes_checked += n;
    sum.update(std::span(piece).first(n));
  }
  if (sum.digest() != expected) {
    damaged(file_, leaf.path,
            fmt::format("the checksum of {} is {}, not the {} that {} records", what,
                        checksum_to_hex(sum.digest()), checksum_to_hex(expected), kTreeIndexFile));
  }
}

void IndexSections::check_section(const LeafRecord& leaf) {
  check_bytes(leaf, 0, leaf.section->length, leaf.section->checksum, "its section");
}

void IndexSections::check_page(const LeafRecord& leaf, std::size_t page) {
  const BinarySection& section = *leaf.section;
  const std::uint64_t from = page * kSectionPageBytes;
  check_bytes(leaf, from, std::min(kSectionPageBytes, section.length - from),
              section.page_checksums.at(page),
              fmt::format("page {} of {} of its section", page + 1, section.page_checksums.size()));
}

void IndexSections::check_share(std::span<const LeafRecord* const> leaves, int rank, int size) {
  std::size_t unit = 0;  // a section of one page, or a page of a longer one
  for (const LeafRecord* leaf : leaves) {
    if (!leaf->section) continue;
    const std::size_t pages = leaf->section->page_checksums.size();
    if (pages == 0) {
      if (section_owner(unit++, size) == rank) check_section(*leaf);
      continue;
    }
    for (std::size_t page = 0; page < pages; ++page) {
      if (section_owner(unit++, size) == rank) check_page(*leaf, page);
    }
  }
}

}  // namespace cairn::storage

// cairn — the two-file index of a saved tree (internal, version 6; 4 and 5 are still read):
// cairn-tree.json holds what grows with the leaves (each array leaf with its "section"),
// cairn-tree.bin the shard records and checksums, one section per array leaf, so that a
// restoring rank reads only the records of the shards that meet its boxes.
//
// cairn-tree.bin: "CAIRNTRB", the version (u64) and "binary_checksum" of cairn-tree.json (u64:
// in version 6 the XXH3-64 of the sections' checksums, sections_checksum(); in versions 4 and 5
// of the sections' bytes), then the sections back to back, in the order of the leaves. All
// numbers little-endian. A section of an array leaf holds
//   a block grid without equal blocks: per dimension its blocks + 1 cuts (i64);
//   per shard a record: rank (u32), file (u32, an entry of the index's "files"),
//     byte offset (u64) and, when not a grid, the box's offsets then extents (i64 each);
//     a grid lists its blocks in row-major order, each with the box of its cell;
//   the checksums of every shard's chunks (u64), shard after shard in record order;
//   when the leaf's section says "chunk_sizes", the stored size of each chunk (u64), likewise;
//   when it has "referenced_chunks" (an incremental save), the place of each chunk, likewise:
//     file (u32, an entry of "files", or 0xffffffff for the shard's own bytes), 0 (u32),
//     byte offset in that file (u64).
// A save builds each section on one rank (collective_writer.hpp); write_index() writes a
// whole index from one process.
#pragma once

#include <cairn/box.hpp>

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/index/tree_index.hpp"

namespace cairn::base {
class PosixFile;
}  // namespace cairn::base

namespace cairn::storage {

/// First bytes of cairn-tree.bin.
inline constexpr std::string_view kTreeIndexBinaryMagic = "CAIRNTRB";
/// Bytes of the header of cairn-tree.bin: the magic, the version and
/// TreeIndex::binary_checksum.
inline constexpr std::uint64_t kTreeIndexBinaryHeaderBytes = 24;

/// The rank that writes the section of array leaf `array` (its position among the leaves with
/// a section) in a save on `size` ranks: (array + 1) mod size. IndexSections::check_share()
/// spreads the units it checks over the ranks by the same rule. Never throws.
[[nodiscard]] int section_owner(std::size_t array, int size) noexcept;

/// The number of each data file name in an index: its position in TreeIndex::files.
using FileNumbers = std::map<std::string, std::uint32_t, std::less<>>;

/// The numbers of `files` (sorted, distinct: TreeIndex::files). Never throws beyond
/// std::bad_alloc.
[[nodiscard]] FileNumbers file_numbers(const std::vector<std::string>& files);

/// The section of array leaf `leaf`, which holds all its shards in ascending rank, as
/// cairn-tree.bin stores it, with data files numbered by `numbers`. Sets leaf.section (offset
/// 0: the writer places the section). Not collective. Throws Error(internal) when a shard's
/// chunk sizes or chunk places do not match its checksums, std::out_of_range for a file that
/// `numbers` lacks.
[[nodiscard]] std::string encode_section(LeafRecord& leaf, const FileNumbers& numbers);

/// The header of cairn-tree.bin for `index`: the magic, its version and binary_checksum.
/// Never throws beyond std::bad_alloc.
[[nodiscard]] std::string index_header(const TreeIndex& index);

/// Writes `index` (with every shard of every array leaf) into `dir` as a version-6 index from
/// this process alone: cairn-tree.bin, then cairn-tree.json, each written and fsynced. Not
/// collective. Returns the bytes of the two files. Throws IoError naming the file, and as
/// encode_section().
std::uint64_t write_index(const std::filesystem::path& dir, TreeIndex index);

/// Fills every array leaf of a version-4, -5 or -6 `index` (parsed from cairn-tree.json of
/// `dir`) with all its shards, decoded from `binary`, the bytes of cairn-tree.bin; checks each
/// section's checksum, binary_checksum and (version 6) that the sections cover the file. Does
/// nothing for older versions. Not collective. Throws FormatError naming cairn-tree.bin and the
/// leaf.
void attach_shards(TreeIndex& index, std::string_view binary, const std::filesystem::path& dir);

/// Reads the whole index of `dir` (any version; see attach_shards()). Not collective.
/// Throws NotFound, IoError, FormatError naming the file.
[[nodiscard]] TreeIndex read_full_index(const std::filesystem::path& dir);

/// Bytes that IndexSections has read from cairn-tree.bin in this process to find shard
/// records (shards_meeting()), for tests and benchmarks. Thread-safe; never throws.
[[nodiscard]] std::uint64_t index_bytes_read() noexcept;

/// Bytes of sections that IndexSections has read whole in this process to check them
/// (check_section()), for tests and benchmarks. Thread-safe; never throws.
[[nodiscard]] std::uint64_t index_bytes_checked() noexcept;

/// Reads the shard records of array leaves of a two-file index (version 4 or later) from
/// cairn-tree.bin with pread, only those of the shards that meet a given region (for a block
/// grid, found by arithmetic; otherwise among the leaf's records). Not collective; not
/// thread-safe.
class IndexSections {
 public:
  /// Opens nothing yet. Never throws beyond std::bad_alloc.
  IndexSections(const std::filesystem::path& dir, const TreeIndex& index);
  ~IndexSections();
  IndexSections(const IndexSections&) = delete;
  IndexSections& operator=(const IndexSections&) = delete;

  /// Which checksums of a shard shards_meeting() reads.
  enum class ChecksumsRead {
    whole_shard,  ///< every chunk's (an incremental save compares them all)
    /// Only those of the chunks that hold the region's elements, when the leaf's chunks are
    /// raw and all in this save (else every chunk's); the others are left 0, so that a read
    /// of them would fail its check. A restore that reads part of a shard then reads part of
    /// its checksums.
    region,
  };
  /// The shards of `leaf` (a leaf of the index, with a section) that meet `region` (a box of
  /// its shape's rank), in ascending rank for a grid, in saved order otherwise, with their
  /// checksums as `checksums` says. Throws FormatError naming cairn-tree.bin (truncated,
  /// damaged, not an index), NotFound, IoError.
  [[nodiscard]] std::vector<ShardRecord> shards_meeting(
      const LeafRecord& leaf, const Box& region,
      ChecksumsRead checksums = ChecksumsRead::whole_shard);
  /// `leaf` itself when it holds all its shards; otherwise a copy of it, kept by this object,
  /// with the shards that meet `region` and the checksums of the chunks that hold it
  /// (ChecksumsRead::region). Throws as shards_meeting().
  [[nodiscard]] const LeafRecord& part_of(const LeafRecord& leaf, const Box& region);
  /// Reads the whole section of `leaf` (a leaf of the index, with a section) and checks it
  /// against the checksum that cairn-tree.json records for it, so that damage anywhere in
  /// the section is found, also where shards_meeting() reads only a part of it. Throws as
  /// shards_meeting().
  void check_section(const LeafRecord& leaf);
  /// Reads page `page` (of kSectionPageBytes) of the section of `leaf`, which has page
  /// checksums, and checks it against its "page_xxh3". Throws as shards_meeting(),
  /// std::out_of_range for a page the section lacks.
  void check_page(const LeafRecord& leaf, std::size_t page);
  /// Checks this rank's share of the sections of `leaves`, counted in units: a section
  /// without page checksums (check_section()) or a page of one with them (check_page()).
  /// Numbering the units of the leaves that have a section u = 0, 1, ... in order, unit u when
  /// section_owner(u, `size`) is `rank`, so that `size` ranks holding the same list check
  /// every byte of the sections once and a rank reads about 1/size of them (and at most one
  /// page or section more). Not collective: the caller agrees on the verdict. Throws as
  /// check_section().
  void check_share(std::span<const LeafRecord* const> leaves, int rank, int size);

 private:
  void read(std::uint64_t offset, std::span<std::byte> out);
  void check_bytes(const LeafRecord& leaf, std::uint64_t from, std::uint64_t length,
                   std::uint64_t expected, std::string_view what);
  std::filesystem::path file_;
  const TreeIndex& index_;
  std::unique_ptr<base::PosixFile> bin_;
  std::deque<LeafRecord> parts_;
};

namespace index_detail {

/// The cuts of the block grid whose cells are exactly the boxes of `shards` (each cell once,
/// none empty), or an empty list when they are not one. Never throws beyond std::bad_alloc.
[[nodiscard]] std::vector<std::vector<std::int64_t>> grid_cuts(
    std::span<const std::int64_t> shape, const std::vector<ShardRecord>& shards);

/// The cuts of a dimension of `extent` cut into blocks of `block` (the last possibly shorter).
[[nodiscard]] std::vector<std::int64_t> equal_cuts(std::int64_t extent, std::int64_t block);

/// Checksum chunks of a shard of `bytes` bytes of `leaf`. Never throws.
[[nodiscard]] std::uint64_t chunks_of(const LeafRecord& leaf, std::uint64_t bytes) noexcept;

/// Throws the FormatError of a damaged cairn-tree.bin `file`, naming `leaf` (may be empty).
[[noreturn]] void damaged(const std::filesystem::path& file, std::string_view leaf,
                          std::string_view problem);

/// The place of one chunk as cairn-tree.bin stores it.
struct ChunkPlace {
  std::uint32_t file = 0;
  std::uint32_t reserved = 0;
  std::uint64_t byte_offset = 0;
};

/// Sets shard.chunk_refs and shard.ref_files from the decoded places of its chunks, checking
/// each against `index` (a known file, an offset in range); throws as damaged().
void attach_chunk_refs(const std::filesystem::path& file, const TreeIndex& index,
                       const LeafRecord& leaf, std::span<const ChunkPlace> places,
                       ShardRecord& shard);

/// Checks one decoded shard record of `leaf` (rank, file, box, offset) against `index`;
/// throws as damaged(). Sets shard.file and shard.bytes.
void check_record(const std::filesystem::path& file, const TreeIndex& index, const LeafRecord& leaf,
                  std::uint32_t file_id, ShardRecord& shard);

}  // namespace index_detail

}  // namespace cairn::storage

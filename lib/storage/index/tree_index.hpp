// cairn — the shard index of one saved tree (internal): the content of cairn-tree.json, its
// JSON form, and the validation of everything read back from disk.
#pragma once

#include <cairn/box.hpp>
#include <cairn/dtype.hpp>
#include <cairn/storage.hpp>

#include <algorithm>
#include <boost/json/value.hpp>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cairn::storage {

/// Index version 2: cairn-tree.json alone, with checksums per chunk of a shard. Read, as is
/// version 1 (one checksum per shard); this build writes kTreeFormatVersionSections.
inline constexpr std::int64_t kTreeFormatVersion = 2;
/// Version of an index with a compressed leaf (its "compression", its shards' "chunk_sizes"):
/// 3, so that a cairn that cannot decompress refuses it.
inline constexpr std::int64_t kTreeFormatVersionCompressed = 3;
/// Index version 4, the two-file index (read): cairn-tree.json holds what grows with the
/// leaves, cairn-tree.bin the shard records and checksums, one section per array leaf.
inline constexpr std::int64_t kTreeFormatVersionBinary = 4;
/// Version of a two-file index whose sections give the place of every chunk of some leaf
/// (an incremental save, whose shard files have holes where chunks lie in an earlier save's
/// files): 5, so that a cairn that would read those holes refuses it.
inline constexpr std::int64_t kTreeFormatVersionIncremental = 5;
/// Version of the two-file index written by this build, the newest it reads: 6. Each
/// section of cairn-tree.bin is written by its own rank, so "binary_checksum" is the XXH3-64
/// of the sections' checksums (sections_checksum()), not of their bytes, and the sections
/// lie end to end from the header to the end of the file. Sections may give chunk places.
inline constexpr std::int64_t kTreeFormatVersionSections = 6;
/// Version of a two-file index with a posix leaf whose zstd chunks are shuffled
/// (Compression::shuffle, "shuffle": true in its "compression"): 7, so that a cairn that would
/// not unshuffle them refuses it. Otherwise as version 6; this build writes 6 when no leaf
/// needs 7 (index_version_of()), and reads both.
inline constexpr std::int64_t kTreeFormatVersionShuffled = 7;
/// Name of the index file inside an item directory.
inline constexpr const char* kTreeIndexFile = "cairn-tree.json";
/// Name of the binary part of a two-file index (version 4 and later) inside an item directory.
inline constexpr const char* kTreeIndexBinaryFile = "cairn-tree.bin";

/// Where one checksum chunk of a shard lies when it is not in the shard's own stored bytes (an
/// incremental save, which refers to an earlier save's bytes instead of writing them again).
struct ChunkRef {
  /// ChunkRef::file of a chunk stored in the shard's own bytes (byte_offset unused).
  static constexpr std::uint32_t kOwn = 0xffffffffU;
  /// Position in ShardRecord::ref_files, or kOwn.
  std::uint32_t file = kOwn;
  /// Offset of the chunk's stored bytes in that file.
  std::uint64_t byte_offset = 0;
  /// Whether the chunk lies in another file. Never throws.
  [[nodiscard]] bool referenced() const noexcept { return file != kOwn; }
  friend bool operator==(const ChunkRef&, const ChunkRef&) = default;
};

/// Where one rank's box of an array leaf is stored.
struct ShardRecord {
  int rank = 0;                   ///< rank that wrote it
  Box box;                        ///< its region of the global array
  std::string file;               ///< relative to the item directory ("shards/p3.bin", "data.h5")
  std::uint64_t byte_offset = 0;  ///< posix: offset in `file`; hdf5: 0
  std::uint64_t bytes = 0;        ///< volume(box) * dtype_size
  /// XXH3-64 of each LeafRecord::chunk_bytes-byte chunk of the shard's row-major bytes, the
  /// last one possibly shorter (version 2); for version 1, the one checksum of the whole shard.
  /// A lossy hdf5 leaf (zfp filter) records those of the decompressed values a read returns.
  std::vector<std::uint64_t> checksums;
  /// A shard stored compressed chunk by chunk (posix): the stored size of each checksum chunk,
  /// stored back to back from byte_offset; `checksums` are then of the stored bytes. Empty
  /// when the shard is stored as it is.
  std::vector<std::uint64_t> chunk_sizes = {};
  /// An incremental save: one entry per checksum chunk, saying where the chunk's stored bytes
  /// lie (its own place in the shard's stored bytes, or a place in one of `ref_files`, hard
  /// links to an earlier save's data files). Empty when every chunk is in the shard's own
  /// bytes. The shard's own file then has holes where referenced chunks would be.
  std::vector<ChunkRef> chunk_refs = {};
  /// The data files (relative to the item directory, "shards/r<k>.bin") that chunk_refs name.
  std::vector<std::string> ref_files = {};
  /// A save: the statistics of the shard's stored values (ValueStats), for its leaf's "stats";
  /// not in cairn-tree.bin. None for a dtype without, and for a shard read back.
  std::optional<LeafStats> stats = {};

  /// Whether the shard is stored as compressed chunks. Never throws.
  [[nodiscard]] bool compressed() const noexcept { return !chunk_sizes.empty(); }
  /// Whether some chunk lies in another file. Never throws.
  [[nodiscard]] bool has_refs() const noexcept { return !chunk_refs.empty(); }
  /// Offset of chunk `c`'s stored bytes in the shard's stored stream (its chunks back to
  /// back). `chunk_bytes`: the leaf's raw chunk size. Never throws.
  [[nodiscard]] std::uint64_t chunk_stored_offset(std::size_t c,
                                                  std::uint64_t chunk_bytes) const noexcept {
    if (!compressed()) return std::min<std::uint64_t>(c * chunk_bytes, bytes);
    std::uint64_t at = 0;
    for (std::size_t i = 0; i < c && i < chunk_sizes.size(); ++i) at += chunk_sizes[i];
    return at;
  }
  /// Stored size of chunk `c` (see chunk_stored_offset()). Never throws.
  [[nodiscard]] std::uint64_t chunk_stored_size(std::size_t c,
                                                std::uint64_t chunk_bytes) const noexcept {
    if (compressed()) return c < chunk_sizes.size() ? chunk_sizes[c] : 0;
    return std::min(chunk_bytes, bytes - chunk_stored_offset(c, chunk_bytes));
  }
  /// Stored bytes of the chunks that lie in other files (0 without chunk_refs). Never throws.
  [[nodiscard]] std::uint64_t referenced_bytes(std::uint64_t chunk_bytes) const noexcept {
    std::uint64_t total = 0;
    for (std::size_t c = 0; c < chunk_refs.size(); ++c) {
      if (chunk_refs[c].referenced()) total += chunk_stored_size(c, chunk_bytes);
    }
    return total;
  }
  /// Bytes the shard takes in its file: the sum of chunk_sizes, or `bytes`. Never throws.
  [[nodiscard]] std::uint64_t stored_bytes() const noexcept {
    std::uint64_t total = 0;
    for (const std::uint64_t size : chunk_sizes) total += size;
    return compressed() ? total : bytes;
  }
};

/// Bytes of a page of a section of cairn-tree.bin (version 6): a section longer than this has
/// a checksum per page, so that the ranks of a restore check its pages apart.
inline constexpr std::uint64_t kSectionPageBytes = 16384;

/// Where an array leaf's shards lie in cairn-tree.bin (version 4), with the totals that
/// read_tree_info() reports without reading them.
struct BinarySection {
  std::uint64_t offset = 0;        ///< of the section in cairn-tree.bin
  std::uint64_t length = 0;        ///< bytes of the section
  std::uint64_t checksum = 0;      ///< XXH3-64 of the section
  std::uint64_t shard_count = 0;   ///< shards of the leaf
  std::uint64_t chunk_count = 0;   ///< checksums of all its shards
  std::uint64_t bytes = 0;         ///< sum of the shards' bytes
  std::uint64_t stored_bytes = 0;  ///< sum of the shards' stored bytes
  /// A block grid: blocks per dimension (their product is shard_count); empty for a list of
  /// shards with their boxes.
  std::vector<std::int64_t> blocks = {};
  /// A grid of equal blocks (the last of a dimension possibly shorter): the block's extent
  /// per dimension, so that the section holds no cuts. Empty otherwise.
  std::vector<std::int64_t> block = {};
  /// Whether the section holds the stored size of each chunk (compressed posix shards).
  bool chunk_sizes = false;
  /// Chunks of the leaf that lie in an earlier save's files (an incremental save), and their
  /// stored bytes. When not 0 the section holds the place of every chunk (chunk_refs).
  std::uint64_t referenced_chunks = 0;
  std::uint64_t referenced_bytes = 0;
  /// Version 6, a section longer than kSectionPageBytes: the XXH3-64 of each of its pages of
  /// kSectionPageBytes (the last possibly shorter), "page_xxh3". Empty otherwise.
  std::vector<std::uint64_t> page_checksums = {};
};

/// One leaf of a saved tree.
/// One array leaf as it is stored: the one description of a leaf that planning (ArrayJob),
/// the formats (ArrayToWrite) and the index (LeafRecord) share, so that a new attribute of a
/// stored leaf is one field here (and, when the index keeps it, its spelling in
/// cairn-tree.json). SavedLeafInfo, the public description, is made from it (leaf_info()).
struct StoredArray {
  std::string path;                             ///< the leaf's path
  StorageFormat format = StorageFormat::posix;  ///< its storage format
  DType dtype = DType::float64;                 ///< the dtype stored (scalars: theirs)
  std::vector<std::int64_t> shape;              ///< the global shape
  bool replicated = false;                      ///< every rank holds the whole array
  /// Saved from Fortran: "order" is "F", not "C" (stored for external readers too, e.g.
  /// hdf5's cairn_order attribute).
  bool fortran_order = false;
  /// Bytes of a checksum chunk of a shard's stream, a whole number of stored elements (0 in
  /// an index of version 1, where one checksum covers a whole shard). A shard stored
  /// compressed is compressed chunk by chunk, and a format that supplies the checksums of a
  /// lossy leaf (ShardWriter::checksums_as_read()) cuts by it.
  std::uint64_t chunk_bytes = 0;
  /// The compression of the stored bytes ("compression", index version 3; none when absent):
  /// validated when saving (available in this build, zfp only on float32 and float64 with a
  /// positive bound).
  Compression compression = {};
  /// The shape of the stored chunks asked for (LeafSaveArgs::chunk_shape, validated: one
  /// extent >= 1 per dimension, or empty). Used by the formats that chunk (hdf5); not in the
  /// index.
  std::vector<std::int64_t> chunk_shape = {};
};

struct LeafRecord : StoredArray {
  LeafKind kind = LeafKind::array;
  std::vector<ShardRecord> shards;  ///< arrays only, ascending rank
  boost::json::value value;         ///< scalars, strings, JSON values
  /// Arrays of a version-4 index: where their shards are in cairn-tree.bin. `shards` holds
  /// only those read from it (all of them in a full read, see read_full_index()).
  std::optional<BinarySection> section;
  /// Arrays: the statistics of their values as saved ("stats", leaf_stats.hpp); none for a
  /// dtype without and in an index written before they were recorded.
  std::optional<LeafStats> stats;

  /// Bytes of the checksum chunks of `shard`: chunk_bytes, or for version 1 the shard's
  /// bytes (at least 1). Never throws.
  [[nodiscard]] std::uint64_t chunk_bytes_of(const ShardRecord& shard) const noexcept {
    return chunk_bytes > 0 ? chunk_bytes : std::max<std::uint64_t>(shard.bytes, 1);
  }
};

/// Bytes of the checksum chunks of leaves of `dtype` when `requested` bytes are asked for: a
/// whole number of elements, at least one. Never throws.
[[nodiscard]] std::uint64_t chunk_bytes_for(DType dtype, std::uint64_t requested) noexcept;

/// The whole index of a saved tree.
struct TreeIndex {
  std::int64_t version = kTreeFormatVersion;
  int world_size = 0;
  std::vector<LeafRecord> leaves;  ///< sorted by path
  /// Empty groups and lists ("empty_nodes", written only when there are some), by path.
  std::map<std::string, EmptyNode, std::less<>> empty_nodes;
  /// Version 4: the data files that shard records name by number ("files").
  std::vector<std::string> files;
  /// Versions 4 and 5: XXH3-64 of the sections of cairn-tree.bin; version 6: XXH3-64 of the
  /// sections' checksums (sections_checksum()). "binary_checksum", also in the header of that
  /// file, so that a cairn-tree.bin of another save is refused.
  std::uint64_t binary_checksum = 0;

  /// The leaf at `path`, or nullptr.
  [[nodiscard]] const LeafRecord* find(std::string_view path) const;
};

/// The public description of `leaf` (read_tree_info()). Never throws beyond std::bad_alloc.
[[nodiscard]] SavedLeafInfo leaf_info(const LeafRecord& leaf);

/// The version a two-file index of `index`'s leaves is written with: 7 when a posix leaf's
/// zstd chunks are shuffled, else 6. Never throws.
[[nodiscard]] std::int64_t index_version_of(const TreeIndex& index) noexcept;

/// JSON form of a leaf's compression: {"kind": "zstd", "level": n, "shuffle": true (when on)}
/// or {"kind": "zfp", "absolute_error" or "relative_error": x}. Never throws beyond
/// std::bad_alloc.
[[nodiscard]] boost::json::value compression_to_json(const Compression& compression);

/// JSON form of a shard's chunk_refs: per chunk null (its own bytes) or [file, byte offset].
/// Never throws beyond std::bad_alloc.
[[nodiscard]] boost::json::value chunk_refs_to_json(const ShardRecord& shard);

/// JSON form of a leaf's "section" (version 4). Never throws beyond std::bad_alloc.
[[nodiscard]] boost::json::value section_to_json(const BinarySection& section);

/// The binary_checksum of a version-6 index: XXH3-64 of the checksums of its array leaves'
/// sections (8 bytes each, little-endian, in the order of the leaves). Never throws beyond
/// std::bad_alloc.
[[nodiscard]] std::uint64_t sections_checksum(const TreeIndex& index);

/// JSON form of the index: what cairn-tree.json holds (leaves with a section and no shards
/// list only their section), or a full view (leaves with both list both).
[[nodiscard]] boost::json::value to_json(const TreeIndex& index);

/// Parses and validates an index read from `source`: every field's type and range, leaf
/// paths, dtype names, shapes (at most kMaxDims dimensions, no overflow), shard boxes inside
/// their shape, byte counts equal to the box volume times the element size, file names of
/// the expected form (no "..", no absolute paths), checksums of 16 hex digits (version 2: one
/// per chunk, chunk_bytes a positive multiple of the element size), an array's
/// "order" "C" or "F" (missing: "C", as in files written before it existed). Throws
/// FormatError naming `source` and the first bad field; never crashes on hostile input.
[[nodiscard]] TreeIndex index_from_json(const boost::json::value& json,
                                        const std::filesystem::path& source);

/// Parses the text of cairn-tree.json (FormatError on bad JSON) and validates it.
[[nodiscard]] TreeIndex parse_index(std::string_view text, const std::filesystem::path& source);

/// Whether `file` can name a data file of an item: a relative path inside the item directory
/// of at most two parts (e.g. "shards/p3.bin", "data.h5") made of letters, digits, '.', '_'
/// and '-', none of them "." or "..", and not an index file. Which names are a format's own
/// is the format's to say (format_table.hpp); its reader refuses the others. Never throws.
[[nodiscard]] bool is_data_file_name(std::string_view file) noexcept;

}  // namespace cairn::storage

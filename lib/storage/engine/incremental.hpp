// cairn — incremental saves (internal): the chunks of an earlier save of the same tree (its
// "base", TreeSaveOptions::incremental_base), so that a save writes only the checksum chunks
// of its posix shards that changed and refers to the others where they already lie.
//
// A referred chunk is found by its shard's box: the base must hold a shard of the same leaf
// (path, global shape, stored dtype, chunk size, compression, format posix) with exactly the
// writing rank's box, and the chunk's stored bytes must have the same XXH3-64 and size. Every
// reference names the file that holds the bytes (never a chain through a third save), and the
// primary hard-links each such file of the base into the new item directory as
// shards/r<k>.bin, k being the file's number in the base's "files"; the new index refers to
// those links, so that a save stands alone once committed and retention may delete its base.
#pragma once

#include <cairn/comm.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "storage/engine/array_job.hpp"
#include "storage/index/tree_index.hpp"

namespace cairn::storage {

/// The chunks of one shard of the base: what each holds and where its stored bytes lie.
struct BaseShard {
  std::vector<std::uint64_t> checksums;  ///< XXH3-64 of each chunk's stored bytes
  std::vector<std::uint64_t> sizes;      ///< stored size of each chunk
  std::vector<std::uint32_t> files;      ///< per chunk: its file's number in the base's "files"
  std::vector<std::uint64_t> offsets;    ///< per chunk: offset of its bytes in that file
};

/// The base of an incremental save, as this rank needs it: the base's shard of each array
/// leaf this rank writes, when there is one to refer to.
class IncrementalBase {
 public:
  /// Reads the index of `base` (the primary reads cairn-tree.json and broadcasts it; each rank
  /// reads the records of its own boxes from cairn-tree.bin and checks its share of the
  /// sections of the leaves that may refer to the base, IndexSections::check_share()) and
  /// finds, for each array of `jobs` that this rank writes in format posix, the base's shard
  /// with its box. Collective over `comm`. A base that any rank cannot read (missing, damaged,
  /// an index version before 4) gives nullptr on every rank and logs a warning naming it. A
  /// tree without posix leaves gives nullptr without reading anything or warning. Throws
  /// InvalidArgument on every rank when `base` is `dir`, the item being written.
  [[nodiscard]] static std::unique_ptr<IncrementalBase> open(const Comm& comm,
                                                             const std::filesystem::path& base,
                                                             const std::filesystem::path& dir,
                                                             const std::vector<ArrayJob>& jobs);

  /// The base's shard for array `index` of the jobs, or nullptr. Never throws.
  [[nodiscard]] const BaseShard* shard_of(std::size_t index) const noexcept;

  /// Name, in the new item directory, of the link to the base's data file number `file`:
  /// "shards/r<file>.bin". Never throws beyond std::bad_alloc.
  [[nodiscard]] static std::string link_name(std::uint32_t file);

  /// Hard-links each base file that `links` (link_name()s) names into `dir` under that name,
  /// replacing a file of that name; copies it where the file system refuses the link (another
  /// device, no hard links). The primary's part of the save's index step. Not collective.
  /// Throws IoError naming both paths, InvalidArgument for a name that is no link_name().
  void link_files(const std::filesystem::path& dir, const std::set<std::string>& links) const;

 private:
  std::filesystem::path dir_;                // the base's item directory
  std::vector<std::string> files_;           // the base's "files"
  std::map<std::size_t, BaseShard> shards_;  // by array index
};

/// Decides, chunk by chunk, which chunks of one shard an incremental save refers to instead
/// of writing, and records the references.
class ChunkMatcher {
 public:
  /// `base`: the base's shard with the same box (see IncrementalBase). Never throws.
  explicit ChunkMatcher(const BaseShard& base) noexcept : base_(base) {}
  /// Whether chunk `chunk`, whose stored bytes have XXH3-64 `checksum` and `size` bytes, is
  /// the base's same chunk: then it is recorded as referred and must not be written. Never
  /// throws beyond std::bad_alloc.
  bool refer(std::size_t chunk, std::uint64_t checksum, std::uint64_t size);
  /// Sets `record`'s chunk_refs and ref_files (link_name()s) for its `chunks` chunks; leaves
  /// them empty when no chunk was referred. Never throws beyond std::bad_alloc.
  void fill(ShardRecord& record, std::size_t chunks) const;
  /// Stored bytes of the chunks referred so far. Never throws.
  [[nodiscard]] std::uint64_t referred_bytes() const noexcept { return referred_bytes_; }

 private:
  const BaseShard& base_;
  std::vector<bool> referred_;  // by chunk
  std::uint64_t referred_bytes_ = 0;
};

}  // namespace cairn::storage

#include "storage/index/binary.hpp"

#include <cairn/error.hpp>
#include <cairn/storage.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <boost/json.hpp>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "base/durable_file.hpp"
#include "storage/index/leaf_stats.hpp"
#include "storage/stream/checksum.hpp"

namespace cairn::storage {
static_assert(std::endian::native == std::endian::little, "cairn-tree.bin is little-endian");

namespace index_detail {

std::vector<std::int64_t> equal_cuts(std::int64_t extent, std::int64_t block) {
  std::vector<std::int64_t> cuts;
  for (std::int64_t at = 0; at < extent; at += block) cuts.push_back(at);
  cuts.push_back(extent);
  return cuts;
}

std::vector<std::vector<std::int64_t>> grid_cuts(std::span<const std::int64_t> shape,
                                                 const std::vector<ShardRecord>& shards) {
  const std::size_t nd = shape.size();
  if (nd == 0 || shards.empty()) return {};
  std::vector<std::vector<std::int64_t>> cuts(nd);
  std::uint64_t cells = 1;
  for (std::size_t d = 0; d < nd; ++d) {
    std::set<std::int64_t> at = {shape[d]};
    for (const ShardRecord& s : shards) {
      if (s.box.rank() != nd || s.box.extent[d] <= 0) return {};
      at.insert(s.box.offset[d]);
    }
    if (*at.begin() != 0) return {};
    cuts[d].assign(at.begin(), at.end());
    cells *= cuts[d].size() - 1;
    if (cells > shards.size()) return {};
  }
  if (cells != shards.size()) return {};
  std::set<std::uint64_t> seen;
  for (const ShardRecord& s : shards) {
    std::uint64_t cell = 0;
    for (std::size_t d = 0; d < nd; ++d) {
      const auto i = static_cast<std::size_t>(
          std::lower_bound(cuts[d].begin(), cuts[d].end(), s.box.offset[d]) - cuts[d].begin());
      if (i + 1 >= cuts[d].size() || cuts[d][i + 1] - cuts[d][i] != s.box.extent[d]) return {};
      cell = cell * (cuts[d].size() - 1) + i;
    }
    if (!seen.insert(cell).second) return {};
  }
  return cuts;
}

std::uint64_t chunks_of(const LeafRecord& leaf, std::uint64_t bytes) noexcept {
  ShardRecord shard;
  shard.bytes = bytes;
  const std::uint64_t chunk = leaf.chunk_bytes_of(shard);
  return bytes == 0 ? 0 : (bytes + chunk - 1) / chunk;
}

void damaged(const std::filesystem::path& file, std::string_view leaf, std::string_view problem) {
  throw FormatError(
      file.string(), std::string(leaf),
      fmt::format("'{}'{}: {}; the file is damaged or was not written by this "
                  "version of cairn",
                  file.string(), leaf.empty() ? std::string() : fmt::format(" (leaf '{}')", leaf),
                  problem));
}

void check_record(const std::filesystem::path& file, const TreeIndex& index, const LeafRecord& leaf,
                  std::uint32_t file_id, ShardRecord& shard) {
  if (shard.rank < 0 || shard.rank >= index.world_size) {
    damaged(file, leaf.path,
            fmt::format("a shard's rank {} is outside the {} ranks", shard.rank, index.world_size));
  }
  if (file_id >= index.files.size()) {
    damaged(file, leaf.path,
            fmt::format("a shard names data file {} of {}", file_id, index.files.size()));
  }
  shard.file = index.files[file_id];
  if (auto problem = box_problem(shard.box, leaf.shape)) {
    damaged(file, leaf.path, fmt::format("a shard's box: {}", *problem));
  }
  constexpr auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max() / 4);
  const auto elements = static_cast<std::uint64_t>(volume(shard.box));
  if (shard.byte_offset > max || elements > max / dtype_size(leaf.dtype)) {
    damaged(file, leaf.path, "a shard's byte offset or size is out of range");
  }
  shard.bytes = elements * dtype_size(leaf.dtype);
}

void attach_chunk_refs(const std::filesystem::path& file, const TreeIndex& index,
                       const LeafRecord& leaf, std::span<const ChunkPlace> places,
                       ShardRecord& shard) {
  constexpr auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max() / 4);
  shard.chunk_refs.assign(places.size(), ChunkRef{});
  shard.ref_files.clear();
  for (std::size_t c = 0; c < places.size(); ++c) {
    const ChunkPlace& p = places[c];
    if (p.reserved != 0) damaged(file, leaf.path, "a chunk's place has a reserved field set");
    if (p.file == ChunkRef::kOwn) continue;
    if (p.file >= index.files.size()) {
      damaged(file, leaf.path,
              fmt::format("a chunk names data file {} of {}", p.file, index.files.size()));
    }
    if (p.byte_offset > max) damaged(file, leaf.path, "a chunk's byte offset is out of range");
    const std::string& name = index.files[p.file];
    auto at = std::ranges::find(shard.ref_files, name);
    if (at == shard.ref_files.end()) at = shard.ref_files.insert(at, name);
    shard.chunk_refs[c] = {.file = static_cast<std::uint32_t>(at - shard.ref_files.begin()),
                           .byte_offset = p.byte_offset};
  }
}

}  // namespace index_detail

namespace {
using namespace index_detail;

template <class T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

// Whether every dimension's cuts are those of equal blocks; sets `block` when so.
bool equal_blocks(const std::vector<std::vector<std::int64_t>>& cuts,
                  std::span<const std::int64_t> shape, std::vector<std::int64_t>& block) {
  block.clear();
  for (std::size_t d = 0; d < cuts.size(); ++d) {
    const std::int64_t b = cuts[d][1] - cuts[d][0];
    if (equal_cuts(shape[d], b) != cuts[d]) {
      block.clear();
      return false;
    }
    block.push_back(b);
  }
  return true;
}

// Appends the place of every chunk of `shard` (a leaf with referenced chunks): file (u32, an
// entry of "files", or ChunkRef::kOwn), 0 (u32), byte offset (u64).
void encode_chunk_refs(const LeafRecord& leaf, const ShardRecord& shard,
                       const FileNumbers& file_ids, std::string& out) {
  if (shard.has_refs() && shard.chunk_refs.size() != shard.checksums.size()) {
    throw Error(
        ErrorCode::internal,
        fmt::format("leaf '{}': a shard of rank {} has {} chunk places for {} chunks", leaf.path,
                    shard.rank, shard.chunk_refs.size(), shard.checksums.size()));
  }
  for (std::size_t c = 0; c < shard.checksums.size(); ++c) {
    const ChunkRef ref = shard.has_refs() ? shard.chunk_refs[c] : ChunkRef{};
    put(out, ref.referenced() ? file_ids.at(shard.ref_files.at(ref.file)) : ChunkRef::kOwn);
    put(out, std::uint32_t{0});
    put(out, ref.referenced() ? ref.byte_offset : std::uint64_t{0});
  }
}

// Appends the section of array leaf `leaf` to `out` and sets leaf.section.
void encode_leaf(LeafRecord& leaf, const FileNumbers& file_ids, std::string& out) {
  BinarySection section{.offset = out.size(), .shard_count = leaf.shards.size()};
  const auto cuts = grid_cuts(leaf.shape, leaf.shards);
  std::vector<const ShardRecord*> order;  // in record order
  for (const ShardRecord& s : leaf.shards) order.push_back(&s);
  if (!cuts.empty()) {
    for (const auto& c : cuts) section.blocks.push_back(static_cast<std::int64_t>(c.size() - 1));
    if (!equal_blocks(cuts, leaf.shape, section.block)) {
      for (const auto& c : cuts) {
        for (std::int64_t at : c) put(out, at);
      }
    }
    std::ranges::sort(order, [](const ShardRecord* a, const ShardRecord* b) {
      return a->box.offset < b->box.offset;  // row-major order of the cells
    });
  }
  for (const ShardRecord* s : order) {
    put(out, static_cast<std::uint32_t>(s->rank));
    put(out, file_ids.at(s->file));
    put(out, s->byte_offset);
    if (!cuts.empty()) continue;
    for (std::int64_t n : s->box.offset) put(out, n);
    for (std::int64_t n : s->box.extent) put(out, n);
  }
  for (const ShardRecord* s : order) {
    for (std::uint64_t c : s->checksums) put(out, c);
    section.chunk_count += s->checksums.size();
    section.bytes += s->bytes;
    section.stored_bytes += s->stored_bytes();
    section.chunk_sizes = section.chunk_sizes || s->compressed();
  }
  if (section.chunk_sizes) {
    for (const ShardRecord* s : order) {
      if (s->chunk_sizes.size() != s->checksums.size()) {
        throw Error(ErrorCode::internal,
                    fmt::format("leaf '{}': a shard of rank {} has {} chunk sizes for {} chunks",
                                leaf.path, s->rank, s->chunk_sizes.size(), s->checksums.size()));
      }
      for (std::uint64_t size : s->chunk_sizes) put(out, size);
    }
  }
  for (const ShardRecord* s : order) {
    section.referenced_chunks += static_cast<std::uint64_t>(
        std::ranges::count_if(s->chunk_refs, [](const ChunkRef& r) { return r.referenced(); }));
    section.referenced_bytes += s->referenced_bytes(leaf.chunk_bytes_of(*s));
  }
  if (section.referenced_chunks > 0) {
    for (const ShardRecord* s : order) encode_chunk_refs(leaf, *s, file_ids, out);
  }
  section.length = out.size() - section.offset;
  const auto bytes = std::as_bytes(
      std::span(out.data() + section.offset, static_cast<std::size_t>(section.length)));
  section.checksum = checksum_of(bytes);
  if (section.length > kSectionPageBytes) {
    for (std::size_t at = 0; at < bytes.size(); at += kSectionPageBytes) {
      section.page_checksums.push_back(checksum_of(
          bytes.subspan(at, std::min<std::size_t>(kSectionPageBytes, bytes.size() - at))));
    }
  }
  leaf.section = std::move(section);
}

// Reads little-endian numbers from a section, failing as damaged() past its end.
class SectionBytes {
 public:
  SectionBytes(std::string_view bytes, const std::filesystem::path& file, std::string_view leaf)
      : bytes_(bytes), file_(file), leaf_(leaf) {}
  template <class T>
  T get() {
    if (bytes_.size() - at_ < sizeof(T)) damaged(file_, leaf_, "its section ends early");
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  [[nodiscard]] bool done() const noexcept { return at_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  const std::filesystem::path& file_;
  std::string_view leaf_;
  std::size_t at_ = 0;
};

// The shards of `leaf` decoded from its whole section `bytes`, in ascending rank.
std::vector<ShardRecord> decode_leaf(const TreeIndex& index, const LeafRecord& leaf,
                                     std::string_view bytes, const std::filesystem::path& file) {
  const BinarySection& section = *leaf.section;
  if (checksum_of(std::as_bytes(std::span(bytes))) != section.checksum) {
    damaged(file, leaf.path, "its section does not match its checksum");
  }
  SectionBytes in(bytes, file, leaf.path);
  const std::size_t nd = leaf.shape.size();
  std::vector<std::vector<std::int64_t>> cuts(section.blocks.size());
  for (std::size_t d = 0; d < cuts.size(); ++d) {
    if (!section.block.empty()) {
      cuts[d] = equal_cuts(leaf.shape[d], section.block[d]);
      continue;
    }
    for (std::int64_t i = 0; i <= section.blocks[d]; ++i) cuts[d].push_back(in.get<std::int64_t>());
  }
  std::vector<ShardRecord> shards(section.shard_count);
  for (std::uint64_t k = 0; k < section.shard_count; ++k) {
    ShardRecord& s = shards[k];
    s.rank = static_cast<int>(in.get<std::uint32_t>());
    const auto file_id = in.get<std::uint32_t>();
    s.byte_offset = in.get<std::uint64_t>();
    s.box.offset.resize(nd);
    s.box.extent.resize(nd);
    if (cuts.empty()) {
      for (auto& n : s.box.offset) n = in.get<std::int64_t>();
      for (auto& n : s.box.extent) n = in.get<std::int64_t>();
    } else {
      for (std::size_t d = nd, rest = k; d-- > 0;) {
        const auto blocks = static_cast<std::size_t>(section.blocks[d]);
        const std::size_t i = rest % blocks;
        rest /= blocks;
        s.box.offset[d] = cuts[d][i];
        s.box.extent[d] = cuts[d][i + 1] - cuts[d][i];
        if (s.box.extent[d] <= 0) damaged(file, leaf.path, "its grid cuts do not increase");
      }
    }
    check_record(file, index, leaf, file_id, s);
  }
  std::uint64_t chunks = 0;
  for (ShardRecord& s : shards) chunks += chunks_of(leaf, s.bytes);
  if (chunks != section.chunk_count) damaged(file, leaf.path, "its chunk count does not add up");
  for (ShardRecord& s : shards) {
    for (std::uint64_t c = chunks_of(leaf, s.bytes); c > 0; --c) {
      s.checksums.push_back(in.get<std::uint64_t>());
    }
  }
  for (ShardRecord& s : shards) {
    for (std::size_t c = 0; section.chunk_sizes && c < s.checksums.size(); ++c) {
      s.chunk_sizes.push_back(in.get<std::uint64_t>());
      if (s.chunk_sizes.back() == 0 || s.chunk_sizes.back() > (std::uint64_t{1} << 56)) {
        damaged(file, leaf.path, "a chunk's stored size is out of range");
      }
    }
  }
  if (section.referenced_chunks > 0) {
    for (ShardRecord& s : shards) {
      std::vector<ChunkPlace> places(s.checksums.size());
      for (ChunkPlace& p : places) {
        p.file = in.get<std::uint32_t>();
        p.reserved = in.get<std::uint32_t>();
        p.byte_offset = in.get<std::uint64_t>();
      }
      attach_chunk_refs(file, index, leaf, places, s);
    }
  }
  if (!in.done()) damaged(file, leaf.path, "its section is longer than its records");
  std::ranges::stable_sort(shards, [](const auto& a, const auto& b) { return a.rank < b.rank; });
  return shards;
}

}  // namespace

int section_owner(std::size_t array, int size) noexcept {
  return static_cast<int>((array + 1) % static_cast<std::size_t>(size));
}

FileNumbers file_numbers(const std::vector<std::string>& files) {
  FileNumbers numbers;
  for (const std::string& name : files) {
    numbers.emplace(name, static_cast<std::uint32_t>(numbers.size()));
  }
  return numbers;
}

std::string encode_section(LeafRecord& leaf, const FileNumbers& numbers) {
  std::string out;
  encode_leaf(leaf, numbers, out);
  return out;
}

std::string index_header(const TreeIndex& index) {
  std::string header(kTreeIndexBinaryMagic);
  put(header, static_cast<std::uint64_t>(index.version));
  put(header, index.binary_checksum);
  return header;
}

std::uint64_t write_index(const std::filesystem::path& dir, TreeIndex index) {
  index.version = index_version_of(index);
  std::set<std::string> names;
  for (const LeafRecord& leaf : index.leaves) {
    for (const ShardRecord& s : leaf.shards) {
      names.insert(s.file);
      names.insert(s.ref_files.begin(), s.ref_files.end());
    }
  }
  index.files.assign(names.begin(), names.end());
  const FileNumbers numbers = file_numbers(index.files);
  std::string sections;
  for (LeafRecord& leaf : index.leaves) {
    if (leaf.kind != LeafKind::array) continue;
    const std::uint64_t at = kTreeIndexBinaryHeaderBytes + sections.size();
    sections += encode_section(leaf, numbers);
    leaf.section->offset = at;
    // Shards read back from an index have no statistics: the leaf keeps the index's.
    if (auto stats = leaf_stats_of(leaf.shards)) leaf.stats = stats;
    leaf.shards.clear();
  }
  index.binary_checksum = sections_checksum(index);
  const std::string binary = index_header(index) + sections;
  const std::string text = boost::json::serialize(to_json(index));
  base::write_file_durably(dir / kTreeIndexBinaryFile, binary);
  base::write_file_durably(dir / kTreeIndexFile, text);
  return binary.size() + text.size();
}

void attach_shards(TreeIndex& index, std::string_view binary, const std::filesystem::path& dir) {
  if (index.version < kTreeFormatVersionBinary) return;
  const auto file = dir / kTreeIndexBinaryFile;
  if (binary.size() < kTreeIndexBinaryHeaderBytes ||
      binary.substr(0, kTreeIndexBinaryMagic.size()) != kTreeIndexBinaryMagic) {
    damaged(file, "", "it does not start with the header of a cairn index");
  }
  std::uint64_t version = 0;
  std::memcpy(&version, binary.data() + kTreeIndexBinaryMagic.size(), sizeof version);
  if (version != static_cast<std::uint64_t>(index.version)) {
    damaged(file, "", fmt::format("its version {} is not the index's {}", version, index.version));
  }
  std::uint64_t recorded = 0;
  std::memcpy(&recorded, binary.data() + kTreeIndexBinaryMagic.size() + 8, sizeof recorded);
  // Version 6 sums the sections' checksums, which parse_index() checked against
  // binary_checksum; each section is checked below, and the sections must cover the file, so
  // every byte after the header is checked.
  const bool summed = index.version >= kTreeFormatVersionSections;
  const std::uint64_t actual =
      summed ? index.binary_checksum
             : checksum_of(std::as_bytes(std::span(binary).subspan(kTreeIndexBinaryHeaderBytes)));
  std::uint64_t end = kTreeIndexBinaryHeaderBytes;
  if (recorded != index.binary_checksum || actual != index.binary_checksum) {
    damaged(file, "",
            fmt::format("its sections' checksum {} (header: {}) is not the {} that {} records",
                        checksum_to_hex(actual), checksum_to_hex(recorded),
                        checksum_to_hex(index.binary_checksum), kTreeIndexFile));
  }
  for (LeafRecord& leaf : index.leaves) {
    if (!leaf.section) continue;
    const BinarySection& s = *leaf.section;
    if (s.offset < kTreeIndexBinaryHeaderBytes || s.offset > binary.size() ||
        s.length > binary.size() - s.offset) {
      damaged(file, leaf.path,
              fmt::format("it is {} bytes long, too short for the section of "
                          "{} bytes at {}",
                          binary.size(), s.length, s.offset));
    }
    if (summed && s.offset != end) {
      damaged(file, leaf.path,
              fmt::format("its section starts at byte {}, not at {} where the one before ends",
                          s.offset, end));
    }
    end = s.offset + s.length;
    leaf.shards = decode_leaf(index, leaf, binary.substr(s.offset, s.length), file);
  }
  if (summed && end != binary.size()) {
    damaged(file, "",
            fmt::format("it is {} bytes long, not the {} bytes of its header and sections",
                        binary.size(), end));
  }
}

TreeIndex read_full_index(const std::filesystem::path& dir) {
  TreeIndex index = parse_index(base::read_small_file(dir / kTreeIndexFile), dir / kTreeIndexFile);
  if (index.version >= kTreeFormatVersionBinary) {
    attach_shards(index, base::read_small_file(dir / kTreeIndexBinaryFile, std::uint64_t{1} << 40),
                  dir);
  }
  return index;
}

}  // namespace cairn::storage

namespace cairn {

boost::json::object read_tree_index_json(const std::filesystem::path& dir) {
  return storage::to_json(storage::read_full_index(dir)).as_object();
}

}  // namespace cairn

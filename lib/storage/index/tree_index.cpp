#include "storage/index/tree_index.hpp"

#include <boost/json.hpp>
#include <cairn/error.hpp>
#include <cairn/tree.hpp>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "base/json_read.hpp"
#include "storage/index/field_reader.hpp"
#include "storage/index/leaf_stats.hpp"
#include "storage/stream/checksum.hpp"
#include "storage/stream/compress.hpp"

namespace cairn::storage {
namespace json = boost::json;

namespace {

json::array to_json_array(std::span<const std::int64_t> values) {
  json::array out;
  for (auto v : values) out.emplace_back(v);
  return out;
}

using Reader = FieldReader;

std::optional<LeafKind> kind_from_name(std::string_view name) {
  for (auto kind : {LeafKind::array, LeafKind::scalar, LeafKind::string, LeafKind::json}) {
    if (leaf_kind_name(kind) == name) return kind;
  }
  return std::nullopt;
}

// The optional "empty_nodes" of the index (files without it have none): each a valid path
// that is neither a leaf nor above one, listed once, of kind "group" or "list".
void read_empty_nodes(const Reader& top, const json::object& root, TreeIndex& index) {
  const json::value* nodes = root.if_contains("empty_nodes");
  if (nodes == nullptr) return;
  if (!nodes->is_array()) top.fail("empty_nodes", "is not an array");
  std::size_t i = 0;
  for (const auto& nv : nodes->get_array()) {
    const Reader r = top.at("empty_nodes", i++);
    const auto& o = r.object(nv);
    std::string path(r.string(o, "path"));
    if (auto problem = leaf_path_problem(path)) r.fail("path", *problem);
    const std::string_view kind = r.string(o, "kind");
    if (kind != "group" && kind != "list") r.fail("kind", "is not \"group\" or \"list\"");
    const std::string below = path + "/";
    const auto after =
        std::lower_bound(index.leaves.begin(), index.leaves.end(), below,
                         [](const LeafRecord& l, const std::string& p) { return l.path < p; });
    if (index.find(path) != nullptr ||
        (after != index.leaves.end() && after->path.starts_with(below))) {
      r.fail("path", "is a leaf or holds leaves, so it is not empty");
    }
    const EmptyNode node = kind == "list" ? EmptyNode::list : EmptyNode::group;
    if (!index.empty_nodes.emplace(std::move(path), node).second) {
      r.fail("path", "is listed twice");
    }
  }
}

}  // namespace

SavedLeafInfo leaf_info(const LeafRecord& leaf) {
  SavedLeafInfo out;
  out.path = leaf.path;
  out.kind = leaf.kind;
  out.format = leaf.format;
  out.dtype = leaf.dtype;
  out.shape = leaf.shape;
  out.replicated = leaf.replicated;
  out.fortran_order = leaf.fortran_order;
  out.shard_count = leaf.shards.size();
  out.compression = leaf.compression;
  out.stats = leaf.stats;
  if (leaf.section) {
    out.shard_count = leaf.section->shard_count;
    out.bytes = leaf.section->bytes;
    out.stored_bytes = leaf.section->stored_bytes;
    out.referenced_chunks = leaf.section->referenced_chunks;
    out.referenced_bytes = leaf.section->referenced_bytes;
    return out;
  }
  for (const auto& s : leaf.shards) {
    out.bytes += s.bytes;
    out.stored_bytes += s.stored_bytes();
  }
  return out;
}

std::int64_t index_version_of(const TreeIndex& index) noexcept {
  for (const LeafRecord& leaf : index.leaves) {
    if (leaf.format == StorageFormat::posix && leaf.compression.kind == Compression::Kind::zstd &&
        leaf.compression.shuffle) {
      return kTreeFormatVersionShuffled;
    }
  }
  return kTreeFormatVersionSections;
}

json::value compression_to_json(const Compression& c) {
  json::object o;
  o["kind"] = compression_kind_name(c.kind);
  switch (c.kind) {
    case Compression::Kind::none: break;
    case Compression::Kind::zstd:
      o["level"] = c.level;
      if (c.shuffle) o["shuffle"] = true;
      break;
    case Compression::Kind::zfp:
      if (c.absolute_error > 0) {
        o["absolute_error"] = c.absolute_error;
      } else {
        o["relative_error"] = c.relative_error;
      }
      break;
  }
  return o;
}

const LeafRecord* TreeIndex::find(std::string_view path) const {
  auto it = std::lower_bound(leaves.begin(), leaves.end(), path,
                             [](const LeafRecord& l, std::string_view p) { return l.path < p; });
  return it != leaves.end() && it->path == path ? &*it : nullptr;
}

std::uint64_t chunk_bytes_for(DType dtype, std::uint64_t requested) noexcept {
  const std::uint64_t elem = dtype_size(dtype);
  return std::max<std::uint64_t>(requested / elem, 1) * elem;
}

json::value chunk_refs_to_json(const ShardRecord& shard) {
  json::array refs;
  for (const ChunkRef& ref : shard.chunk_refs) {
    if (ref.referenced()) {
      refs.push_back(json::array{json::value(shard.ref_files.at(ref.file)), ref.byte_offset});
    } else {
      refs.push_back(nullptr);
    }
  }
  return refs;
}

bool is_data_file_name(std::string_view file) noexcept {
  if (file.empty() || file.size() > 255 || file == kTreeIndexFile || file == kTreeIndexBinaryFile) {
    return false;
  }
  int parts = 0;
  std::size_t begin = 0;
  while (begin <= file.size()) {
    const std::size_t end = std::min(file.find('/', begin), file.size());
    const std::string_view part = file.substr(begin, end - begin);
    if (part.empty() || part == "." || part == ".." || ++parts > 2) return false;
    for (const char c : part) {
      const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
      if (!plain) return false;
    }
    begin = end + 1;
  }
  return true;
}

std::uint64_t sections_checksum(const TreeIndex& index) {
  std::vector<std::byte> sums;
  for (const LeafRecord& leaf : index.leaves) {
    if (!leaf.section) continue;
    for (int k = 0; k < 8; ++k) {
      sums.push_back(static_cast<std::byte>((leaf.section->checksum >> (8 * k)) & 0xffu));
    }
  }
  return checksum_of(sums);
}

json::value section_to_json(const BinarySection& section) {
  json::object o;
  o["offset"] = section.offset;
  o["length"] = section.length;
  o["xxh3"] = checksum_to_hex(section.checksum);
  o["shard_count"] = section.shard_count;
  o["chunk_count"] = section.chunk_count;
  o["bytes"] = section.bytes;
  o["stored_bytes"] = section.stored_bytes;
  if (!section.blocks.empty()) o["blocks"] = to_json_array(section.blocks);
  if (!section.block.empty()) o["block"] = to_json_array(section.block);
  if (section.chunk_sizes) o["chunk_sizes"] = true;
  if (section.referenced_chunks > 0) {
    o["referenced_chunks"] = section.referenced_chunks;
    o["referenced_bytes"] = section.referenced_bytes;
  }
  if (!section.page_checksums.empty()) {
    json::array pages;
    for (const std::uint64_t sum : section.page_checksums) pages.emplace_back(checksum_to_hex(sum));
    o["page_xxh3"] = std::move(pages);
  }
  return o;
}

json::value to_json(const TreeIndex& index) {
  json::array leaves;
  for (const auto& leaf : index.leaves) {
    json::object o;
    o["path"] = leaf.path;
    o["kind"] = leaf_kind_name(leaf.kind);
    switch (leaf.kind) {
      case LeafKind::array: {
        o["format"] = storage_format_name(leaf.format);
        o["dtype"] = dtype_name(leaf.dtype);
        o["shape"] = to_json_array(leaf.shape);
        o["replicated"] = leaf.replicated;
        o["order"] = leaf.fortran_order ? "F" : "C";
        if (index.version >= 2) o["chunk_bytes"] = leaf.chunk_bytes;
        if (leaf.compression.kind != Compression::Kind::none) {
          o["compression"] = compression_to_json(leaf.compression);
        }
        if (leaf.stats) o["stats"] = stats_to_json(*leaf.stats, leaf.dtype);
        if (leaf.section) o["section"] = section_to_json(*leaf.section);
        if (leaf.section && leaf.shards.empty()) break;
        json::array shards;
        for (const auto& s : leaf.shards) {
          json::object so;
          so["rank"] = s.rank;
          so["offset"] = to_json_array(s.box.offset);
          so["extent"] = to_json_array(s.box.extent);
          so["file"] = s.file;
          so["byte_offset"] = s.byte_offset;
          so["bytes"] = s.bytes;
          std::string sums;
          sums.reserve(16 * s.checksums.size());
          for (std::uint64_t c : s.checksums) sums += checksum_to_hex(c);
          so["xxh3"] = std::move(sums);
          if (s.compressed()) so["chunk_sizes"] = json::value_from(s.chunk_sizes);
          if (s.has_refs()) so["chunk_refs"] = chunk_refs_to_json(s);
          shards.emplace_back(std::move(so));
        }
        o["shards"] = std::move(shards);
        break;
      }
      case LeafKind::scalar:
      case LeafKind::string:
      case LeafKind::json: o["value"] = leaf.value; break;
    }
    leaves.emplace_back(std::move(o));
  }
  json::object root;
  root["format"] = "cairn-tree";
  root["version"] = index.version;
  root["world_size"] = index.world_size;
  root["leaves"] = std::move(leaves);
  if (index.version >= kTreeFormatVersionBinary) {
    root["files"] = json::value_from(index.files);
    root["binary_checksum"] = checksum_to_hex(index.binary_checksum);
  }
  if (!index.empty_nodes.empty()) {
    json::array empty;
    for (const auto& [path, kind] : index.empty_nodes) {
      empty.push_back(json::object{{"path", path}, {"kind", empty_node_name(kind)}});
    }
    root["empty_nodes"] = std::move(empty);
  }
  return root;
}

namespace {

// Reads a positive finite number of `o`.
double positive_number(const Reader& r, const json::object& o, std::string_view name) {
  const json::value& v = r.member(o, name);
  const double x = v.is_double()   ? v.get_double()
                   : v.is_int64()  ? static_cast<double>(v.get_int64())
                   : v.is_uint64() ? static_cast<double>(v.get_uint64())
                                   : -1.0;
  if (!(x > 0) || !std::isfinite(x)) r.fail(name, "is not a positive number");
  return x;
}

// Reads a leaf's optional "compression" (version 3).
Compression read_compression(const Reader& r, const json::object& o, const TreeIndex& index,
                             const LeafRecord& leaf) {
  const json::value* v = o.if_contains("compression");
  if (v == nullptr) return {};
  if (index.version < kTreeFormatVersionCompressed) {
    r.fail("compression", fmt::format("appears in an index of version {}", index.version));
  }
  const Reader cr = r.at("compression");
  const json::object& co = cr.object(*v);
  const std::string_view kind = cr.string(co, "kind");
  Compression c;
  if (kind == "zstd") {
    c.kind = Compression::Kind::zstd;
    c.level = static_cast<int>(cr.integer(co, "level", 0, 22));
    // Absent before index version 7: the bytes were compressed as they are.
    const json::value* shuffle = co.if_contains("shuffle");
    c.shuffle = false;
    if (shuffle != nullptr) {
      if (!shuffle->is_bool()) cr.fail("shuffle", "is not true or false");
      c.shuffle = shuffle->get_bool();
    }
    if (c.shuffle && leaf.format == StorageFormat::posix &&
        index.version < kTreeFormatVersionShuffled) {
      cr.fail("shuffle",
              fmt::format("is true on a posix leaf in an index of version {}", index.version));
    }
  } else if (kind == "zfp") {
    c.kind = Compression::Kind::zfp;
    if (leaf.dtype != DType::float32 && leaf.dtype != DType::float64) {
      cr.fail("kind", fmt::format("is zfp on a leaf of {}", dtype_name(leaf.dtype)));
    }
    if (co.contains("absolute_error")) {
      c.absolute_error = positive_number(cr, co, "absolute_error");
    } else {
      c.relative_error = positive_number(cr, co, "relative_error");
    }
  } else {
    cr.fail("kind", "is not \"zstd\" or \"zfp\"");
  }
  return c;
}

// Reads a shard's optional "chunk_sizes": one stored size per checksum, only on a compressed
// leaf.
void read_chunk_sizes(const Reader& sr, const json::object& so, const LeafRecord& leaf,
                      ShardRecord& shard) {
  const json::value* v = so.if_contains("chunk_sizes");
  if (v == nullptr) {
    if (leaf.compression.kind != Compression::Kind::none && leaf.format == StorageFormat::posix &&
        shard.bytes > 0) {
      sr.fail("chunk_sizes", "is missing on a compressed leaf");
    }
    return;
  }
  if (leaf.compression.kind == Compression::Kind::none) {
    sr.fail("chunk_sizes", "appears on a leaf without compression");
  }
  if (!v->is_array() || v->get_array().size() != shard.checksums.size()) {
    sr.fail("chunk_sizes", fmt::format("is not an array of {} sizes", shard.checksums.size()));
  }
  const auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max() / 4);
  std::uint64_t total = 0;
  for (const json::value& e : v->get_array()) {
    if (!e.is_int64() || e.get_int64() <= 0 || static_cast<std::uint64_t>(e.get_int64()) > max) {
      sr.fail("chunk_sizes", "holds a value that is not a positive integer in range");
    }
    total += static_cast<std::uint64_t>(e.get_int64());
    if (total > max) sr.fail("chunk_sizes", "adds up to more bytes than a file can hold");
    shard.chunk_sizes.push_back(static_cast<std::uint64_t>(e.get_int64()));
  }
}

// Reads one entry of an array leaf's "shards" (reader `sr`, object `so`) of the index `index`.
ShardRecord read_shard(const Reader& sr, const json::object& so, const LeafRecord& leaf,
                       const TreeIndex& index) {
  ShardRecord shard;
  shard.rank = static_cast<int>(sr.integer(so, "rank", 0, index.world_size - 1));
  shard.box.offset = sr.dims(so, "offset");
  shard.box.extent = sr.dims(so, "extent");
  if (auto problem = box_problem(shard.box, leaf.shape)) sr.fail("extent", *problem);
  shard.file = std::string(sr.string(so, "file"));
  if (!is_data_file_name(shard.file)) sr.fail("file", "is not a data file name");
  const auto max_offset = std::numeric_limits<std::int64_t>::max() / 2;
  shard.byte_offset = static_cast<std::uint64_t>(sr.integer(so, "byte_offset", 0, max_offset));
  shard.bytes = static_cast<std::uint64_t>(sr.integer(so, "bytes", 0, max_offset));
  const auto elements = static_cast<std::uint64_t>(volume(shard.box));
  if (elements > static_cast<std::uint64_t>(max_offset) / dtype_size(leaf.dtype) ||
      elements * dtype_size(leaf.dtype) != shard.bytes) {
    sr.fail("bytes", fmt::format("is {}, but the box holds {} elements of {}", shard.bytes,
                                 elements, dtype_name(leaf.dtype)));
  }
  const std::string_view sums = sr.string(so, "xxh3");
  const std::uint64_t chunks =
      index.version >= 2 ? (shard.bytes + leaf.chunk_bytes - 1) / leaf.chunk_bytes : 1;
  if (sums.size() / 16 != chunks || sums.size() % 16 != 0) {
    sr.fail("xxh3", fmt::format("does not hold {} checksum{} of 16 hex digits", chunks,
                                chunks == 1 ? "" : "s"));
  }
  for (std::size_t c = 0; c < sums.size(); c += 16) {
    const auto checksum = checksum_from_hex(sums.substr(c, 16));
    if (!checksum) sr.fail("xxh3", "is not made of 16 lower-case hex digits per checksum");
    shard.checksums.push_back(*checksum);
  }
  read_chunk_sizes(sr, so, leaf, shard);
  return shard;
}

// Reads the "files" of a version-4 index: data file names.
void read_files(const Reader& top, const json::object& root, TreeIndex& index) {
  const json::value& files = top.member(root, "files");
  if (!files.is_array()) top.fail("files", "is not an array");
  for (const json::value& f : files.get_array()) {
    if (!f.is_string() || !is_data_file_name(f.get_string())) {
      top.fail("files", "holds a name that is not a data file name");
    }
    index.files.emplace_back(f.get_string());
  }
  const auto sum = checksum_from_hex(top.string(root, "binary_checksum"));
  if (!sum) top.fail("binary_checksum", "is not 16 hex digits");
  index.binary_checksum = *sum;
}

// Reads the "section" of an array leaf of a version-4 index: counts in range, a grid's
// blocks (and equal block extents) fitting the shape.
BinarySection read_section(const Reader& r, const json::object& o, const LeafRecord& leaf) {
  constexpr auto max = std::numeric_limits<std::int64_t>::max() / 4;
  const auto u = [&](std::string_view name) {
    return static_cast<std::uint64_t>(r.integer(o, name, 0, max));
  };
  BinarySection s{.offset = u("offset"),
                  .length = u("length"),
                  .checksum = 0,
                  .shard_count = u("shard_count"),
                  .chunk_count = u("chunk_count"),
                  .bytes = u("bytes"),
                  .stored_bytes = u("stored_bytes")};
  const auto sum = checksum_from_hex(r.string(o, "xxh3"));
  if (!sum) r.fail("xxh3", "is not 16 lower-case hex digits");
  s.checksum = *sum;
  if (o.contains("blocks")) {
    s.blocks = r.dims(o, "blocks");
    std::uint64_t cells = 1;
    if (s.blocks.size() != leaf.shape.size() || s.blocks.empty())
      r.fail("blocks", "is not one per dimension");
    for (std::size_t d = 0; d < s.blocks.size(); ++d) {
      if (s.blocks[d] < 1 || s.blocks[d] > std::max<std::int64_t>(leaf.shape[d], 1)) {
        r.fail("blocks", "holds a count outside [1, the extent of its dimension]");
      }
      cells *= static_cast<std::uint64_t>(s.blocks[d]);
    }
    if (cells != s.shard_count) r.fail("blocks", "do not multiply to shard_count");
  }
  if (o.contains("chunk_sizes")) s.chunk_sizes = r.boolean(o, "chunk_sizes");
  if (o.contains("referenced_chunks")) {
    s.referenced_chunks = u("referenced_chunks");
    s.referenced_bytes = u("referenced_bytes");
    if (s.referenced_chunks > s.chunk_count) {
      r.fail("referenced_chunks", "is larger than chunk_count");
    }
  }
  if (o.contains("page_xxh3")) {
    const json::value& pages = r.member(o, "page_xxh3");
    if (!pages.is_array()) r.fail("page_xxh3", "is not an array");
    for (const json::value& page : pages.get_array()) {
      const auto sum = page.is_string() ? checksum_from_hex(page.get_string()) : std::nullopt;
      if (!sum) r.fail("page_xxh3", "holds a value that is not 16 hex digits");
      s.page_checksums.push_back(*sum);
    }
    if (s.length <= kSectionPageBytes ||
        s.page_checksums.size() != (s.length + kSectionPageBytes - 1) / kSectionPageBytes) {
      r.fail("page_xxh3", "does not hold one checksum per page of a section of several pages");
    }
  }
  if (o.contains("block")) {
    s.block = r.dims(o, "block");
    if (s.block.size() != s.blocks.size()) r.fail("block", "is not one extent per dimension");
    for (std::size_t d = 0; d < s.block.size(); ++d) {
      if (s.block[d] < 1 || (leaf.shape[d] + s.block[d] - 1) / s.block[d] != s.blocks[d]) {
        r.fail("block", "does not cut its dimension into the given blocks");
      }
    }
  }
  return s;
}

// Reads the fields of an array leaf (format, dtype, shape, order, chunks, shards) into `leaf`.
void read_array_leaf(const Reader& r, const json::object& o, const TreeIndex& index,
                     LeafRecord& leaf) {
  const auto format = storage_format_from_name(r.string(o, "format"));
  if (!format) r.fail("format", "is not the name of a storage format cairn knows");
  leaf.format = *format;
  const auto dtype = dtype_from_name(r.string(o, "dtype"));
  if (!dtype) r.fail("dtype", "is not a dtype name cairn knows");
  leaf.dtype = *dtype;
  leaf.shape = r.dims(o, "shape");
  try {
    (void)volume(leaf.shape);
  } catch (const Error&) {
    r.fail("shape", "has a number of elements that overflows 64 bits");
  }
  leaf.replicated = r.boolean(o, "replicated");
  // Files written before "order" existed hold C-order arrays only.
  if (o.contains("order")) {
    const std::string_view order = r.string(o, "order");
    if (order != "C" && order != "F") r.fail("order", "is not \"C\" or \"F\"");
    leaf.fortran_order = order == "F";
  }
  if (index.version >= 2) {
    leaf.chunk_bytes = static_cast<std::uint64_t>(
        r.integer(o, "chunk_bytes", 1, std::numeric_limits<std::int64_t>::max() / 2));
    if (leaf.chunk_bytes % dtype_size(leaf.dtype) != 0) {
      r.fail("chunk_bytes", fmt::format("is {}, not a multiple of the {}-byte element",
                                        leaf.chunk_bytes, dtype_size(leaf.dtype)));
    }
  }
  leaf.compression = read_compression(r, o, index, leaf);
  // Indexes written before the statistics were recorded have none.
  if (o.contains("stats")) {
    leaf.stats = stats_from_json(r.at("stats"), r.object(r.member(o, "stats")), leaf.dtype);
  }
  if (index.version >= kTreeFormatVersionBinary) {
    leaf.section = read_section(r.at("section"), r.object(r.member(o, "section")), leaf);
    return;
  }
  const json::value& shards = r.member(o, "shards");
  if (!shards.is_array()) r.fail("shards", "is not an array");
  std::size_t j = 0;
  for (const auto& sv : shards.get_array()) {
    const Reader sr = r.at("shards", j++);
    leaf.shards.push_back(read_shard(sr, sr.object(sv), leaf, index));
  }
}

// Reads the "value" of a scalar, string or JSON leaf into `leaf`.
void read_value_leaf(const Reader& r, const json::object& o, const std::filesystem::path& source,
                     LeafRecord& leaf) {
  leaf.value = r.member(o, "value");
  if (leaf.kind == LeafKind::scalar) {
    try {
      leaf.dtype = Scalar::from_json(leaf.value, source.string(), r.field() + ".value").dtype();
    } catch (const FormatError&) {
      throw;
    } catch (const Error& e) {
      r.fail("value", e.what());
    }
  } else if (leaf.kind == LeafKind::string && !leaf.value.is_string()) {
    r.fail("value", "is not a string");
  }
}

}  // namespace

TreeIndex index_from_json(const json::value& value, const std::filesystem::path& source) {
  const Reader top(source, "tree");
  const auto& root = top.object(value);
  if (top.string(root, "format") != "cairn-tree") top.fail("format", "is not \"cairn-tree\"");
  TreeIndex index;
  index.version = top.integer(root, "version", 1, std::numeric_limits<std::int64_t>::max());
  if (index.version > kTreeFormatVersionShuffled) {
    top.fail("version", fmt::format("is {}, newer than the version {} this cairn reads; "
                                    "upgrade cairn",
                                    index.version, kTreeFormatVersionShuffled));
  }
  index.world_size = static_cast<int>(top.integer(root, "world_size", 1, 1 << 24));
  if (index.version >= kTreeFormatVersionBinary) read_files(top, root, index);
  const json::value& leaves = top.member(root, "leaves");
  if (!leaves.is_array()) top.fail("leaves", "is not an array");

  std::size_t i = 0;
  for (const auto& lv : leaves.get_array()) {
    const Reader r = top.at("leaves", i++);
    const auto& o = r.object(lv);
    LeafRecord leaf;
    leaf.path = std::string(r.string(o, "path"));
    if (auto problem = leaf_path_problem(leaf.path)) r.fail("path", *problem);
    const auto kind = kind_from_name(r.string(o, "kind"));
    if (!kind) r.fail("kind", "is not one of array, scalar, string, json");
    leaf.kind = *kind;
    if (!index.leaves.empty() && !(index.leaves.back().path < leaf.path)) {
      r.fail("path", "is out of order or repeated (leaves must be sorted by path)");
    }
    if (leaf.kind == LeafKind::array) {
      read_array_leaf(r, o, index, leaf);
    } else {
      read_value_leaf(r, o, source, leaf);
    }
    index.leaves.push_back(std::move(leaf));
  }
  read_empty_nodes(top, root, index);
  // Version 6 sums the sections' checksums, so a section checked against its own checksum is
  // checked against the header of cairn-tree.bin too.
  if (index.version >= kTreeFormatVersionSections &&
      index.binary_checksum != sections_checksum(index)) {
    top.fail("binary_checksum", "is not the checksum of its sections' checksums");
  }
  return index;
}

TreeIndex parse_index(std::string_view text, const std::filesystem::path& source) {
  return index_from_json(base::parse_json(text, source), source);
}

}  // namespace cairn::storage

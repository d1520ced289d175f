// cairn (the command-line tool) — `cairn inspect -D`: how each array leaf was decomposed among
// the ranks that wrote it (one block per shard), read from the tree index alone.
#pragma once

#include <boost/json/object.hpp>

#include <filesystem>
#include <string>

namespace cairn_tool {

/// The blocks of each array leaf of the tree saved in `dir`, as its index records them:
/// {"<leaf path>": [{"rank", "offset", "extent", "file", "byte_offset", "bytes"}, ...]} in the
/// order of the index (by rank), or null for a leaf of an index older than version 4, which
/// records no blocks. Not collective (reads the index on the calling rank; no data). Throws
/// what cairn::read_tree_index_json throws (NotFound, IoError, FormatError naming the file).
[[nodiscard]] boost::json::object tree_decomposition(const std::filesystem::path& dir);

/// The blocks of `decomposition` (as tree_decomposition returns them) as text lines, each
/// indented: per leaf a line with its number of blocks, then one line per block
/// (rank, offset, shape, file). Never throws beyond std::bad_alloc.
[[nodiscard]] std::string decomposition_text(const boost::json::object& decomposition);

}  // namespace cairn_tool

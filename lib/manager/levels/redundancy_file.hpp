// cairn — the pieces of the node-local level's redundancy that involve no communication
// (internal): xor groups and chunks, and the self-describing redundancy file (its layout is
// in levels/redundancy.hpp). Used by levels/redundancy.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/packed.hpp"
#include "manager/levels/redundancy.hpp"

namespace cairn::levels {

/// Bytes held whole in memory.
using Bytes = std::vector<std::byte>;
/// Bytes shared with nonblocking MPI operations that may outlive their caller.
using SharedBytes = std::shared_ptr<Bytes>;

/// `n` as a size. Never throws.
[[nodiscard]] inline std::size_t to_size(std::uint64_t n) { return static_cast<std::size_t>(n); }

/// Appends `checksum` as 8 bytes (Packed::put_all). Never throws beyond std::bad_alloc.
void put_checksum(base::Packed& out, std::uint64_t checksum);

/// "node 3", "nodes 1 and 2", "nodes 1, 2 and 5". Never throws beyond std::bad_alloc.
[[nodiscard]] std::string name_nodes(std::span<const int> nodes);
/// "none", "partner (distance d)", "xor parity (groups of g)". Never throws beyond bad_alloc.
[[nodiscard]] std::string describe(const Redundancy& scheme);
/// Why `scheme` cannot protect `nodes` nodes, or std::nullopt. Never throws beyond bad_alloc.
[[nodiscard]] std::optional<std::string> scheme_problem(const Redundancy& scheme, int nodes);

/// An xor group: consecutive node ids.
struct Group {
  int index = 0;  ///< the group's number
  int first = 0;  ///< its first node
  int size = 0;   ///< its nodes
  /// "xor group i (nodes a-b)". Never throws beyond std::bad_alloc.
  [[nodiscard]] std::string name() const;
};

/// The group of `node`: consecutive ids in groups of `g`; a last group of one joins the one
/// before. Needs g >= 2 and nodes >= 2. Never throws.
[[nodiscard]] Group group_of(int node, int nodes, int g);
/// The chunk of member `i` that the parity of member `k` holds, in a group of `m`. Never
/// throws.
[[nodiscard]] int chunk_in_parity(int i, int k, int m);
/// Bytes of one chunk: the largest of `sizes` (one per member, at least 2) cut into
/// size - 1 chunks. Never throws.
[[nodiscard]] std::uint64_t chunk_bytes(std::span<const std::uint64_t> sizes);

/// A node's archive as a redundancy file records it.
struct Covered {
  int node = 0;                ///< the node
  std::uint64_t size = 0;      ///< bytes of its archive
  std::uint64_t checksum = 0;  ///< XXH3-64 of its archive
  bool operator==(const Covered&) const = default;
};

/// The header of a redundancy file.
struct FileHeader {
  Redundancy scheme;                   ///< the scheme it was made for
  int node = 0;                        ///< the node that stores it
  int nodes = 0;                       ///< how many nodes there were
  std::vector<Covered> covered;        ///< the archives it protects
  std::uint64_t payload_size = 0;      ///< bytes of the copy or parity after the header
  std::uint64_t payload_checksum = 0;  ///< XXH3-64 of them
  std::int64_t step = 0;               ///< the step it protects (Binding::step)
  std::uint64_t source = 0;            ///< the run it belongs to (Binding::source)
};

/// Bytes of a redundancy file of `header`: its header, then room for the payload, to be
/// filled, then sealed. Never throws beyond std::bad_alloc.
[[nodiscard]] std::size_t file_size(const FileHeader& header);
/// Writes the header of `file`, with the checksum of its payload, before the payload. Never
/// throws beyond std::bad_alloc.
void seal(std::span<std::byte> file, FileHeader header);
/// Writes `header`, whose payload checksum is already known, before the payload of `file`.
/// Never throws beyond std::bad_alloc.
void write_header(std::span<std::byte> file, const FileHeader& header);

/// A redundancy file read back.
struct ParsedFile {
  FileHeader header;                   ///< its header
  std::span<const std::byte> payload;  ///< its payload (a view of the file)
};

/// The header and payload of `file` when its magic, header checksum, payload size and payload
/// checksum hold; else why not. Never throws beyond std::bad_alloc.
[[nodiscard]] std::pair<std::optional<ParsedFile>, std::string> parse_file(
    std::span<const std::byte> file);
/// The nodes whose archives the redundancy file of `node` records, in order. Never throws
/// beyond std::bad_alloc.
[[nodiscard]] std::vector<int> covered_nodes(const Redundancy& scheme, int node, int nodes);
/// Why `header` is not the redundancy file of `node` under `scheme`, or std::nullopt. Never
/// throws beyond std::bad_alloc.
[[nodiscard]] std::optional<std::string> header_problem(const FileHeader& h,
                                                        const Redundancy& scheme, int node,
                                                        int nodes);
/// Why `header` was not made for `binding` (another step, another run, or from archives other
/// than those the level recorded), or std::nullopt. Never throws beyond std::bad_alloc.
[[nodiscard]] std::optional<std::string> binding_problem(const FileHeader& header,
                                                         const Binding& binding);
/// This node's redundancy file when it checks against the scheme and `binding`; a damaged,
/// stale or foreign one is logged and counts as missing. Not collective (reads only the size
/// and rank of `leaders`). Never throws beyond std::bad_alloc.
[[nodiscard]] std::optional<ParsedFile> valid_file(std::optional<std::span<const std::byte>> file,
                                                   const Redundancy& scheme, const Binding& binding,
                                                   const Comm& leaders);

}  // namespace cairn::levels

#include "manager/levels/redundancy_file.hpp"

#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cairn/error.hpp>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/log.hpp"
#include "base/packed.hpp"

namespace cairn::levels {
namespace {

constexpr std::string_view kMagic = "CAIRNRED";
// Version 2 binds the file to its step and run (FileHeader::step, FileHeader::source); a file
// of version 1 is not bound and counts as missing.
constexpr std::uint64_t kVersion = 2;

// The header, its own XXH3 last. Its size does not depend on payload_checksum.
Bytes header_bytes(const FileHeader& header) {
  base::Packed out;
  const auto magic = std::as_bytes(std::span(kMagic));
  out.bytes().assign(magic.begin(), magic.end());
  out.put(kVersion);
  out.put_byte(static_cast<std::uint8_t>(header.scheme.kind));
  out.put(static_cast<std::uint64_t>(header.scheme.partner_distance));
  out.put(static_cast<std::uint64_t>(header.scheme.xor_group));
  out.put(static_cast<std::uint64_t>(header.node));
  out.put(static_cast<std::uint64_t>(header.nodes));
  out.put(static_cast<std::uint64_t>(header.step));
  out.put(header.source);
  out.put(static_cast<std::uint64_t>(header.covered.size()));
  for (const auto& c : header.covered) {
    out.put(static_cast<std::uint64_t>(c.node));
    out.put(c.size);
    put_checksum(out, c.checksum);
  }
  out.put(header.payload_size);
  put_checksum(out, header.payload_checksum);
  put_checksum(out, XXH3_64bits(out.bytes().data(), out.bytes().size()));
  return std::move(out.bytes());
}

int take_int(base::Unpacked& in, std::uint64_t limit) {
  const std::uint64_t value = in.take();
  if (value > limit) throw Error(ErrorCode::format, "a number is out of range");
  return static_cast<int>(value);
}

FileHeader take_header(base::Unpacked& in) {
  if (in.take() != kVersion) throw Error(ErrorCode::format, "unknown version");
  FileHeader h;
  h.scheme.kind = static_cast<RedundancyKind>(in.take_byte());
  h.scheme.partner_distance = take_int(in, INT32_MAX);
  h.scheme.xor_group = take_int(in, INT32_MAX);
  h.node = take_int(in, INT32_MAX);
  h.nodes = take_int(in, INT32_MAX);
  h.step = static_cast<std::int64_t>(in.take());
  h.source = in.take();
  const std::uint64_t count = in.take();
  if (count > in.remaining()) throw Error(ErrorCode::format, "too many nodes");
  for (std::uint64_t k = 0; k < count; ++k) {
    Covered c;
    c.node = take_int(in, INT32_MAX);
    c.size = in.take();
    c.checksum = in.take_all(1).front();
    h.covered.push_back(c);
  }
  h.payload_size = in.take();
  h.payload_checksum = in.take_all(1).front();
  return h;
}

}  // namespace

void put_checksum(base::Packed& out, std::uint64_t checksum) {
  out.put_all(std::array<std::uint64_t, 1>{checksum});
}

// ---- Names in messages ---------------------------------------------------------------------

// "node 3", "nodes 1 and 2", "nodes 1, 2 and 5".
std::string name_nodes(std::span<const int> nodes) {
  if (nodes.size() == 1) return fmt::format("node {}", nodes[0]);
  return fmt::format("nodes {} and {}", fmt::join(nodes.first(nodes.size() - 1), ", "),
                     nodes.back());
}

std::string describe(const Redundancy& scheme) {
  switch (scheme.kind) {
    case RedundancyKind::none: return "none";
    case RedundancyKind::partner:
      return fmt::format("partner (distance {})", scheme.partner_distance);
    case RedundancyKind::xor_parity:
      return fmt::format("xor parity (groups of {})", scheme.xor_group);
  }
  return fmt::format("unknown kind {}", static_cast<int>(scheme.kind));
}

// Why `scheme` cannot protect `nodes` nodes, or nullopt.
std::optional<std::string> scheme_problem(const Redundancy& scheme, int nodes) {
  switch (scheme.kind) {
    case RedundancyKind::none: return std::nullopt;
    case RedundancyKind::partner:
      if (nodes < 2) return "partner needs at least 2 nodes";
      if (scheme.partner_distance < 1 || scheme.partner_distance >= nodes) {
        return fmt::format("partner_distance {} must be between 1 and {} (the nodes less one)",
                           scheme.partner_distance, nodes - 1);
      }
      return std::nullopt;
    case RedundancyKind::xor_parity:
      if (scheme.xor_group < 2) {
        return fmt::format("xor_group {} must be at least 2", scheme.xor_group);
      }
      if (nodes < 2) return "xor parity needs at least 2 nodes";
      return std::nullopt;
  }
  return fmt::format("redundancy kind {} is unknown", static_cast<int>(scheme.kind));
}

// ---- Groups of xor parity ------------------------------------------------------------------

// The group of `node`: consecutive ids in groups of `g`; a last group of one joins the one
// before. Needs g >= 2 and nodes >= 2.
std::string Group::name() const {
  return fmt::format("xor group {} (nodes {}-{})", index, first, first + size - 1);
}

Group group_of(int node, int nodes, int g) {
  const int count = std::max(1, nodes / g + (nodes % g >= 2 ? 1 : 0));
  const int index = std::min(node / g, count - 1);
  const int first = index * g;
  return {index, first, index == count - 1 ? nodes - first : g};
}

// The chunk of member `i` that the parity of member `k` holds, in a group of `m`.
int chunk_in_parity(int i, int k, int m) { return ((k - i - 1) % m + m) % m; }

// Bytes of one chunk: the largest of `sizes` (one per member) cut into size - 1 chunks.
std::uint64_t chunk_bytes(std::span<const std::uint64_t> sizes) {
  const std::uint64_t chunks = sizes.size() - 1;
  const std::uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
  return (largest + chunks - 1) / chunks;
}

// ---- The redundancy file -------------------------------------------------------------------

std::size_t file_size(const FileHeader& header) {
  return header_bytes(header).size() + to_size(header.payload_size);
}

// Writes the header, with the checksum of the payload now in place, before the payload.
void seal(std::span<std::byte> file, FileHeader header) {
  const std::size_t payload_at = file.size() - to_size(header.payload_size);
  header.payload_checksum = XXH3_64bits(file.data() + payload_at, to_size(header.payload_size));
  write_header(file, header);
}

void write_header(std::span<std::byte> file, const FileHeader& header) {
  const Bytes head = header_bytes(header);
  std::memcpy(file.data(), head.data(), head.size());
}

// The header and payload of `file` when its magic, header checksum, payload size and payload
// checksum hold; else why not.
std::pair<std::optional<ParsedFile>, std::string> parse_file(std::span<const std::byte> file) {
  const auto magic = std::as_bytes(std::span(kMagic));
  if (file.size() < magic.size() || !std::ranges::equal(file.first(magic.size()), magic)) {
    return {std::nullopt, "it does not start with CAIRNRED"};
  }
  try {
    base::Unpacked in(file.subspan(magic.size()));
    ParsedFile parsed{take_header(in), {}};
    const std::size_t header_end = file.size() - in.remaining();
    if (in.take_all(1).front() != XXH3_64bits(file.data(), header_end)) {
      return {std::nullopt, "its header does not match its checksum"};
    }
    parsed.payload = file.last(in.remaining());
    if (parsed.payload.size() != parsed.header.payload_size ||
        XXH3_64bits(parsed.payload.data(), parsed.payload.size()) !=
            parsed.header.payload_checksum) {
      return {std::nullopt, "its payload is cut or does not match its checksum"};
    }
    return {std::move(parsed), {}};
  } catch (const Error& e) {
    return {std::nullopt, fmt::format("its header is cut or damaged ({})", e.what())};
  }
}

// The nodes whose archives the redundancy file of `node` records, in order.
std::vector<int> covered_nodes(const Redundancy& scheme, int node, int nodes) {
  if (scheme.kind == RedundancyKind::partner) {
    return {(node - scheme.partner_distance + nodes) % nodes};
  }
  const Group group = group_of(node, nodes, scheme.xor_group);
  std::vector<int> members(static_cast<std::size_t>(group.size));
  for (int i = 0; i < group.size; ++i) members[static_cast<std::size_t>(i)] = group.first + i;
  return members;
}

// Why `header` is not the redundancy file of `node` under `scheme`, or nullopt.
std::optional<std::string> header_problem(const FileHeader& h, const Redundancy& scheme, int node,
                                          int nodes) {
  if (describe(h.scheme) != describe(scheme)) {
    return fmt::format("it was made for the scheme {}", describe(h.scheme));
  }
  if (h.node != node || h.nodes != nodes) {
    return fmt::format("it belongs to node {} of {}", h.node, h.nodes);
  }
  std::vector<int> ids;
  std::vector<std::uint64_t> sizes;
  for (const auto& c : h.covered) {
    ids.push_back(c.node);
    sizes.push_back(c.size);
  }
  if (ids != covered_nodes(scheme, node, nodes)) return "it protects other nodes";
  const std::uint64_t payload =
      scheme.kind == RedundancyKind::partner ? sizes[0] : chunk_bytes(sizes);
  if (payload != h.payload_size) return "its payload has the wrong size";
  return std::nullopt;
}

std::optional<std::string> binding_problem(const FileHeader& h, const Binding& binding) {
  if (h.step != binding.step) {
    return fmt::format("it was made for step {}, not step {}", h.step, binding.step);
  }
  if (h.source != binding.source) return "it was made by a run of another root";
  for (const Covered& c : h.covered) {
    const auto n = static_cast<std::size_t>(c.node);
    if (n < binding.archives.size() && binding.archives[n] && *binding.archives[n] != c.checksum) {
      return fmt::format(
          "it was made from an archive of node {} (XXH3 {:016x}) other than the one the level "
          "recorded for step {} ({:016x})",
          c.node, c.checksum, binding.step, *binding.archives[n]);
    }
  }
  return std::nullopt;
}

// This node's redundancy file when it checks against the scheme and the binding; a damaged,
// stale or foreign one is logged and counts as missing.
std::optional<ParsedFile> valid_file(std::optional<std::span<const std::byte>> file,
                                     const Redundancy& scheme, const Binding& binding,
                                     const Comm& leaders) {
  if (!file || scheme.kind == RedundancyKind::none || scheme_problem(scheme, leaders.size())) {
    return std::nullopt;
  }
  auto [parsed, why] = parse_file(*file);
  if (parsed) {
    auto problem = header_problem(parsed->header, scheme, leaders.rank(), leaders.size());
    if (!problem) problem = binding_problem(parsed->header, binding);
    if (problem) {
      parsed.reset();
      why = std::move(*problem);
    }
  }
  if (!parsed) {
    base::log::warn("levels.redundancy_invalid", "node={} reason=\"{}\"", leaders.rank(), why);
  }
  return parsed;
}

}  // namespace cairn::levels

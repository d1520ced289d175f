#include "storage/format/shard_reader.hpp"

#include <fmt/format.h>

namespace cairn::storage {

std::uint64_t scatter_bytes(ScatterList pieces) noexcept {
  std::uint64_t total = 0;
  for (const auto& piece : pieces) total += piece.size();
  return total;
}

std::vector<std::span<std::byte>> scatter_slice(ScatterList pieces, std::uint64_t offset,
                                                std::uint64_t bytes) {
  const std::uint64_t total = scatter_bytes(pieces);
  if (offset > total || bytes > total - offset) {
    throw InvalidArgument(fmt::format("bytes [{}, {}) are outside a scatter list of {} bytes",
                                      offset, offset + bytes, total));
  }
  std::vector<std::span<std::byte>> out;
  for (const auto& piece : pieces) {
    if (bytes == 0) break;
    if (offset >= piece.size()) {
      offset -= piece.size();
      continue;
    }
    const auto take =
        static_cast<std::size_t>(std::min<std::uint64_t>(piece.size() - offset, bytes));
    out.push_back(piece.subspan(static_cast<std::size_t>(offset), take));
    bytes -= take;
    offset = 0;
  }
  return out;
}

void ShardReader::read_scattered(const LeafRecord& leaf, const ShardRecord& shard,
                                 std::uint64_t first, ScatterList pieces) {
  for (const auto& piece : pieces) {
    read(leaf, shard, first, piece.size(), piece.data());
    first += piece.size();
  }
}

}  // namespace cairn::storage

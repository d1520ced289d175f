// cairn — the shard records a save sends to the owners of their index sections (internal),
// packed into bytes (base/packed.hpp: small numbers in a byte or two, 8 bytes per chunk
// checksum, file names once per message). The collective index writer sends them
// (collective_writer.hpp).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "storage/index/tree_index.hpp"

namespace cairn::storage {

/// This rank's shard records, each with its array index (its position among the tree's array
/// leaves), packed as the rank sends them to the owner of their sections. Never throws beyond
/// std::bad_alloc.
[[nodiscard]] std::vector<std::byte> pack_records(
    const std::vector<std::pair<std::size_t, ShardRecord>>& records);

/// Calls `add(array index, record)` for each record that pack_records() packed in `bytes`, in
/// the order packed. Throws Error(internal) on bytes that pack_records() did not write (the
/// ranks of one save send them), and what `add` throws.
void unpack_records(std::span<const std::byte> bytes,
                    const std::function<void(std::size_t, ShardRecord&&)>& add);

}  // namespace cairn::storage

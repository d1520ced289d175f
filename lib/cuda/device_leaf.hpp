// cairn — which array leaves are in device memory (internal), for storage and handlers.
#pragma once

#include <cairn/tree.hpp>

#include <string_view>

namespace cairn::cuda {

/// Where `shard`'s elements live: MemoryKind::cuda_device when declared so, or when `detect`
/// and cudaPointerGetAttributes says so; host otherwise (no CUDA call for host leaves unless
/// `detect`). For device memory, checks that a device is usable and that the view is
/// contiguous: throws Unsupported naming the leaf `path` when not.
[[nodiscard]] MemoryKind resolve_memory(const ArrayShard& shard, bool detect,
                                        std::string_view path);

}  // namespace cairn::cuda

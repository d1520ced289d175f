#include "cuda/device_leaf.hpp"

#include <fmt/format.h>

#include "cuda/device_memory.hpp"

namespace cairn::cuda {

MemoryKind resolve_memory(const ArrayShard& shard, bool detect, std::string_view path) {
  const bool device = shard.memory == MemoryKind::cuda_device ||
                      (detect && shard.data != nullptr && is_device_pointer(shard.data));
  if (!device) return MemoryKind::host;
  const std::string what = fmt::format("leaf '{}'", path);
  require_device(what);
  if (!shard.contiguous()) {
    throw Unsupported(fmt::format(
        "{} is a strided view of CUDA device memory, which is not supported; pass a contiguous "
        "device buffer",
        what));
  }
  return MemoryKind::cuda_device;
}

}  // namespace cairn::cuda

#include "storage/format/hdf5/chunk_plan.hpp"

#include <algorithm>

#include "storage/format/hdf5/compression.hpp"
#include "storage/format/hdf5/settings.hpp"

namespace cairn::storage::h5 {
namespace {

/// Whether `box` is one run of the row-major array it is in: every dimension after the first
/// one with an extent other than 1 is whole.
bool is_run(const Box& box, std::span<const std::int64_t> shape) {
  std::size_t d = 0;
  while (d < shape.size() && box.extent[d] == 1) ++d;
  for (std::size_t k = d + 1; k < shape.size(); ++k) {
    if (box.extent[k] != shape[k]) return false;
  }
  return true;
}

}  // namespace

std::vector<std::vector<std::int64_t>> plan_chunks(const Comm& comm,
                                                   std::span<const ArrayToWrite> arrays) {
  constexpr std::uint64_t kMaxChunkBytes = (std::uint64_t{1} << 32) - 1;
  std::vector<std::vector<std::int64_t>> chunks(arrays.size());
  // Candidates: arrays of two or more dimensions with elements (the same on every rank).
  std::vector<std::size_t> candidates;
  std::vector<std::int64_t> proposal;  // per candidate: [not a run, extents...]
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const ArrayToWrite& a = arrays[i];
    if (a.shape.size() < 2 || volume(a.shape) == 0 || is_filtered(a)) continue;
    candidates.push_back(i);
    const bool has = a.box && volume(*a.box) > 0;
    proposal.push_back(has && !is_run(*a.box, a.shape) ? 1 : 0);
    for (std::size_t d = 0; d < a.shape.size(); ++d) proposal.push_back(has ? a.box->extent[d] : 0);
  }
  if (candidates.empty()) return chunks;
  const std::vector<std::int64_t> largest = comm.max(proposal);
  std::vector<std::size_t> chunked;
  std::vector<std::int64_t> misfit;  // per chunked candidate: this rank's shard is not a chunk
  std::size_t at = 0;
  for (std::size_t i : candidates) {
    const ArrayToWrite& a = arrays[i];
    const bool strided = largest[at] == 1;
    const std::vector<std::int64_t> chunk(
        largest.begin() + static_cast<std::ptrdiff_t>(at + 1),
        largest.begin() + static_cast<std::ptrdiff_t>(at + 1 + a.shape.size()));
    at += 1 + a.shape.size();
    if (!strided) continue;
    const std::uint64_t chunk_bytes =
        static_cast<std::uint64_t>(volume(chunk)) * dtype_size(a.dtype);
    if (chunk_bytes == 0 || chunk_bytes > kMaxChunkBytes ||
        chunk_count(a.shape, chunk) > static_cast<std::uint64_t>(comm.size())) {
      continue;
    }
    bool fits = true;
    if (a.box && volume(*a.box) > 0) {
      for (std::size_t d = 0; d < a.shape.size(); ++d) {
        const std::int64_t offset = a.box->offset[d];
        fits = fits && offset % chunk[d] == 0 &&
               a.box->extent[d] == std::min(chunk[d], a.shape[d] - offset);
      }
    }
    chunked.push_back(i);
    misfit.push_back(fits ? 0 : 1);
    chunks[i] = chunk;
  }
  if (chunked.empty()) return chunks;
  const std::vector<std::int64_t> any_misfit = comm.max(misfit);
  for (std::size_t k = 0; k < chunked.size(); ++k) {
    if (any_misfit[k] != 0) chunks[chunked[k]].clear();
  }
  return chunks;
}

}  // namespace cairn::storage::h5
